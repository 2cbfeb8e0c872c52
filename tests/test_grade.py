"""The grading command (``booktools.grade``, ``python3 tasks.py grade SUBMISSIONS_DIR``).

The sample submissions in ``tests/data/submissions/`` are the paths chapter's student version
with its stubs replaced (``sample_texts`` builds them; a test fails, and rewrites them, when
they are stale). Grading them gives the example grade sheet of the instructor's guide,
``_includes/example_grades.md`` (rewritten, and the test fails, when stale). The tampering
cases are small notebooks made here: the chapter's own check cells around answers that cheat.
Every submission runs in fast mode with a short time limit, two at a time.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import jupytext
import pytest

from booktools import ROOT, grade
from booktools.grade_pack import pack_namespace, plain_value, unpack
from booktools.student import strip_solutions

SAMPLES = ROOT / "tests" / "data" / "submissions"
EXAMPLE = ROOT / "_includes" / "example_grades.md"
IDS = ["paths.count", "paths.two_layer", "paths.mean_length", "paths.predict_length", "paths.read_diagram"]

STUB = {
    "count": "def path_count(L, H, length):\n    raise NotImplementedError",
    "two": "def two_layer_paths(X, P1, P2, W1, W2):\n    raise NotImplementedError",
    "mean": "def mean_length(L, H):\n    raise NotImplementedError",
    "predict": "prediction = None  # one of 0, 6, 12",
    "read": "answer = None  # a number",
}
RIGHT = {
    "count": "from math import comb\n\ndef path_count(L, H, length):\n    return comb(L, length) * H**length",
    "two": ("def two_layer_paths(X, P1, P2, W1, W2):\n    return {\n        (None, None): X,\n"
            "        (0, None): P1 @ X @ W1,\n        (None, 0): P2 @ X @ W2,\n"
            "        (0, 0): P2 @ P1 @ X @ W1 @ W2,\n    }"),
    "mean": "def mean_length(L, H):\n    return L * H / (H + 1)",
    "predict": "prediction = 6",
    "read": "answer = 6",
}
# typical mistakes: the skip counted as a head; the attention matrices in layer order
MISTAKE = {**RIGHT,
           "count": "from math import comb\n\ndef path_count(L, H, length):\n    return comb(L, length) * (H + 1)**length",
           "two": RIGHT["two"].replace("P2 @ P1 @ X", "P1 @ P2 @ X")}
# a syntax error in one answer, a division by zero in another, the rest left alone
CRASH = {**STUB, "count": RIGHT["count"],
         "two": RIGHT["two"].replace("    }", "    ]"),
         "mean": "def mean_length(L, H):\n    return L * H / (H + 1 - H - 1)"}


def _student() -> str:
    return strip_solutions((ROOT / "chapters" / "paths.md").read_text())


def to_ipynb(text: str) -> str:
    """The MyST notebook ``text`` as ipynb JSON, with cell ids that do not change from run to run."""
    nb = jupytext.reads(text, fmt="md:myst")
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return jupytext.writes(nb, fmt="ipynb")


def sample_texts() -> dict[str, str]:
    """The sample submissions: file name -> MyST text. They stay MyST in git (the source format;
    generated notebooks stay out of it); the grader's ``.ipynb`` path is exercised by the cases
    of ``test_tampering_crashes_and_loops_get_their_outcomes``, written as ipynb at test time."""
    base = _student()
    for stub in STUB.values():
        assert base.count(stub) == 1, stub  # the chapter's stubs are where the samples expect
    out = {}
    for name, answers in (("correct.md", RIGHT), ("mistake.md", MISTAKE),
                          ("untouched.md", STUB), ("crashes.md", CRASH)):
        text = base
        for key, stub in STUB.items():
            text = text.replace(stub, answers[key])
        out[name] = text
    return out


def test_the_samples_are_the_current_student_version():
    stale = []
    for name, text in sample_texts().items():
        path = SAMPLES / name
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            stale.append(name)
    assert not stale, f"rewrote stale sample submissions {stale}: commit them"


@pytest.fixture(scope="module")
def samples_graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("graded")
    subs = grade.grade(SAMPLES, out, timeout=180, jobs=2, echo=lambda *a: None)
    return {s.rel: s for s in subs}, out


def test_the_samples_get_their_outcomes(samples_graded):
    subs, out = samples_graded
    got = {name: [s.outcomes[i][0] for i in IDS] for name, s in subs.items()}
    assert got == {
        "correct.md": ["correct"] * 5,
        "mistake.md": ["incorrect", "incorrect", "correct", "correct", "correct"],
        "untouched.md": ["not attempted"] * 5,
        "crashes.md": ["correct", "crashed", "crashed", "not attempted", "not attempted"],
    }
    assert all(s.chapter == "paths" and s.run == "ran" for s in subs.values())
    # the known mistakes' hints reach the report
    mistake = subs["mistake.md"].outcomes
    assert "the skip is not one of them" in mistake["paths.count"][1]
    assert "not defined" in subs["crashes.md"].outcomes["paths.two_layer"][1]
    assert "ZeroDivisionError" in subs["crashes.md"].outcomes["paths.mean_length"][1]
    assert any("SyntaxError" in e for _, e in subs["crashes.md"].cell_errors)
    rows = list(csv.DictReader(open(out / "grades.csv")))
    assert [r["submission"] for r in rows] == sorted(subs)
    assert {r["submission"]: r["correct"] for r in rows} == {
        "correct.md": "5", "crashes.md": "1", "mistake.md": "3", "untouched.md": "0"}
    assert all(r["out of"] == "5" and (out / r["report"]).exists() for r in rows)
    assert "| `paths.count` | ✘ incorrect |" in (out / "mistake.md.md").read_text()


def test_the_example_grade_sheet_is_current(samples_graded):
    subs, out = samples_graded
    text = ("<!-- Written by tests/test_grade.py: the grade sheet of the sample submissions in "
            "tests/data/submissions/,\n     graded by `python3 tasks.py grade tests/data/submissions`. "
            "Do not edit. -->\n\n" + (out / "grades.md").read_text())
    if not EXAMPLE.exists() or EXAMPLE.read_text() != text:
        EXAMPLE.write_text(text)
        pytest.fail(f"rewrote the stale {EXAMPLE.relative_to(ROOT)}: commit it")


# --- tampering, crashes, loops: small notebooks around the chapter's own check cells ---------

HEADER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
          "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n")


def _check_cells() -> dict[str, str]:
    nb = jupytext.reads(_student(), fmt="md:myst")
    cells = [c.source for c in nb.cells if c.cell_type == "code" and "checks.check(" in c.source]
    return {i: next(c for c in cells if f'"{i}"' in c) for i in IDS}


def notebook(answers: dict, extra: dict | None = None, checks: dict | None = None) -> str:
    """A MyST notebook: ``import rankcollapse``, then per exercise its answer, its check cell (the
    chapter's, or ``checks[key]``; ``None`` drops it), ``extra[key]`` (code after the check)."""
    keys = dict(zip(STUB, IDS))
    cells = ["import rankcollapse as rc"]
    original = _check_cells()
    for key, ex_id in keys.items():
        cells.append(answers.get(key, STUB[key]))
        check = (checks or {}).get(key, original[ex_id])
        if check is not None:
            cells.append(check)
        if extra and key in extra:
            cells.append(extra[key])
    return HEADER + "".join(f"```{{code-cell}} ipython3\n{c}\n```\n\n" for c in cells)


PATCH_EVERYTHING = """\
import torch
import rankcollapse.checks as C
rc.checks.check = lambda *a, **k: print("✔ correct")
C._close = lambda *a, **k: True
C.EXERCISES["paths.count"].reference = lambda L, H, l: 0
C.EXERCISES["paths.mean_length"].reference = lambda L, H: L / 2
C.QUESTIONS["paths.predict_length"].answer = lambda: 0
torch.allclose = lambda *a, **k: True
"""
HIDDEN_TAMPER = """\
def path_count(L, H, length):
    mod = __import__("rankcollapse." + "che" + "cks", fromlist=["x"])
    getattr(mod, "EXER" + "CISES")["paths.count"].reference = lambda *a: 0
    return 0"""

CASES = {
    # the check function, the references, the comparison, torch itself replaced in the kernel
    "monkeypatch.md": (notebook({"count": PATCH_EVERYTHING + "def path_count(L, H, length):\n    return 0",
                                 "mean": "def mean_length(L, H):\n    return L / 2",
                                 "predict": "prediction = 0"}),
                       ["incorrect", "not attempted", "incorrect", "incorrect", "not attempted"], "ran"),
    # check cells edited to pass: an alias import, a wrapper, one replaced by a print
    "edited.ipynb": (notebook(RIGHT, checks={
        "count": 'from rankcollapse import checks as c\nc.check("paths.count", path_count);',
        "two": 'rc.checks.check("paths.two_layer", lambda *a: None) or True',
        "mean": 'print("✔ paths.mean_length: correct.")'}),
        ["edited", "edited", "missing", "correct", "correct"], "ran"),
    # an answer that changes the reference while it is checked; one that is the reference;
    # a value whose == is always true; sys.exit in a cell
    "cheat.md": (notebook({"count": HIDDEN_TAMPER, "two": RIGHT["two"],
                           "mean": 'mean_length = rc.checks.EXERCISES["paths.mean_length"].reference',
                           "predict": 'prediction = type("Any", (), {"__eq__": lambda s, o: True})()',
                           "read": "answer = None\nimport sys\nsys.exit(0)\nanswer = 5"}),
                 ["tampered", "correct", "tampered", "incorrect", "not attempted"], "ran"),
    "loop.md": (notebook({"count": RIGHT["count"]}, extra={"count": "while True:\n    pass"}),
                ["correct"] + ["timed out"] * 4, "timed out in code cell 4"),
    "same.md": (notebook({"count": RIGHT["count"]}, extra={"count": "import os\nos._exit(3)"}),
                ["correct"] + ["crashed"] * 4, "crashed in code cell 4"),
    "same.ipynb": (notebook(RIGHT), ["correct"] * 5, "ran"),
    # a function that loops or kills the process only when it is called (by the grader)
    "late.md": (notebook({"count": "def path_count(L, H, length):\n    while True:\n        pass",
                          "mean": "def mean_length(L, H):\n    import os\n    os._exit(1)",
                          "two": RIGHT["two"]}),
                ["timed out", "correct", "crashed", "not attempted", "not attempted"], "ran"),
}


@pytest.fixture(scope="module")
def tampered_graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    for name, (text, _, _) in CASES.items():
        if name.endswith(".ipynb"):
            text = to_ipynb(text)
        (folder / name).write_text(text)
    (folder / "notes").mkdir()
    (folder / "notes" / "unrelated.md").write_text(HEADER + "```{code-cell} ipython3\n1 + 1\n```\n")
    (folder / "broken.ipynb").write_text("{not json")
    subs = grade.grade(folder, timeout=25, jobs=2, echo=lambda *a: None)
    return {s.rel: s for s in subs}, folder / "graded"


@pytest.mark.parametrize("name", list(CASES))
def test_tampering_crashes_and_loops_get_their_outcomes(tampered_graded, name):
    subs, _ = tampered_graded
    sub = subs[name]
    assert sub.chapter == "paths"
    assert [sub.outcomes[i][0] for i in IDS] == CASES[name][1], sub.outcomes
    assert sub.run == CASES[name][2]


def test_what_the_reports_say(tampered_graded):
    subs, out = tampered_graded
    assert "the answer itself: correct" in subs["edited.ipynb"].outcomes["paths.count"][1]
    assert "uses the checks module" in subs["cheat.md"].outcomes["paths.mean_length"][1]
    assert "changed" in subs["cheat.md"].outcomes["paths.count"][1]
    assert subs["notes/unrelated.md"].run == "unknown chapter" and not subs["notes/unrelated.md"].outcomes
    assert subs["broken.ipynb"].run.startswith("unreadable")
    # x.md and x.ipynb: two reports, neither overwriting the other
    rows = {r["submission"]: r for r in csv.DictReader(open(out / "grades.csv"))}
    assert rows["same.md"]["report"] != rows["same.ipynb"]["report"]
    assert "crashed in code cell 4" in (out / rows["same.md"]["report"]).read_text()
    assert "5 of 5" in (out / rows["same.ipynb"]["report"]).read_text()
    assert list(rows["same.md"])[3:8] == IDS


# --- the pieces, and bad arguments ------------------------------------------------------------

def test_pack_carries_code_helpers_closures_and_fresh_modules():
    import math

    import rankcollapse as rc

    ns = {"__name__": "__main__"}
    exec("import math, types\nrc = types.ModuleType('rankcollapse')  # a fake, named as the real\n"
         "scale = 3\n"
         "def helper(n):\n    return 1 if n <= 1 else n * helper(n - 1)\n"
         "def make(k):\n    def inner(n, m=2):\n        return helper(n) * k * m + scale + math.floor(0.5)\n"
         "    return inner\nf = make(10)\n"
         "def g():\n    return rc.paths.path_count(3, 2, 1)\n", ns)
    fn, suspect = unpack(pack_namespace(ns, "f"))
    assert fn(4) == 24 * 10 * 2 + 3 and fn(4, m=1) == 243 and suspect == []
    assert fn.__globals__["math"] is math and fn.__globals__ is not ns
    g, _ = unpack(pack_namespace(ns, "g"))
    assert g.__globals__["rc"] is rc and g() == 6  # the real library, not the notebook's fake


def test_plain_values_only():
    import numpy as np

    assert plain_value(6) == 6 and plain_value("six") == "six" and plain_value(None) is None
    assert plain_value(np.int64(6)) == 6 and type(plain_value(np.float32(0.5))) is float
    sneaky = type("Any", (), {"__eq__": lambda s, o: True})()
    assert plain_value(sneaky)[0] == "unusable"


def test_edited_check_cells_are_found_by_syntax_not_spelling():
    specs = grade.chapter_specs()["paths"]
    original = _check_cells()["paths.count"]
    cells = [{"source": "# a comment\n" + original.rstrip(";") + "  ", "tags": []},
             {"source": original.replace("path_count", "path_count2"), "tags": []}]
    _, status = grade.plan(cells, specs, "fast")
    assert status["paths.count"] is None and status["paths.mean_length"] == "missing"
    _, status = grade.plan(cells[1:], specs, "fast")
    assert status["paths.count"] == "edited"
    assert grade.identify(cells, grade.chapter_specs()) == "paths"


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        grade.grade(tmp_path / "nowhere")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        grade.grade(tmp_path / "file.md")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no .ipynb or .md"):
        grade.grade(empty)
    for kwargs, word in (({"timeout": 0}, "timeout"), ({"jobs": 0}, "jobs"), ({"mode": "slow"}, "mode")):
        with pytest.raises(ValueError, match=word):
            grade.grade(tmp_path, **kwargs)
    run = subprocess.run([sys.executable, "-m", "booktools.grade", str(tmp_path / "nowhere")],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2 and "SUBMISSIONS_DIR" in run.stderr and "does not exist" in run.stderr


def test_tasks_py_passes_grade_on(monkeypatch):
    sys.path.insert(0, str(ROOT))
    try:
        import tasks
    finally:
        sys.path.remove(str(ROOT))
    calls = []
    monkeypatch.setattr(tasks, "install", lambda: calls.append("install"))
    monkeypatch.setattr(tasks, "step", lambda title, *cmd: calls.append(cmd))
    tasks.main(["grade", "subs", "--out", "o", "--timeout", "60"])
    assert calls == ["install", (tasks.PY, "-m", "booktools.grade", "subs", "--out", "o", "--timeout", "60")]
