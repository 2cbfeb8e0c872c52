"""The grading command (``booktools.grade``, ``python3 tasks.py grade SUBMISSIONS_DIR``).

The sample submissions in ``tests/data/submissions/`` are the paths chapter's student version
with its stubs replaced and, in two of them, an answer to the explain question
(``booktools.samples`` builds them; a test fails when they are stale, and
``python3 -m booktools.samples`` writes them anew). Grading them gives the example grade sheet of
the instructor's guide, ``_includes/example_grades.md`` (likewise checked, never rewritten here),
its Canvas and Gradescope exports (validated against the published formats' required fields and
types) and its hand-grading sheets (filled in and merged back). The tampering cases are small
notebooks made here: the chapter's own check cells around answers that cheat, crash, end the
kernel or copy the key. Every submission runs in fast mode with a short time limit, two at a time;
the unit tests at the end run nothing.
"""

from __future__ import annotations

import csv
import functools
import json
import re
import shutil
import subprocess
import sys

import jupytext
import pytest

from booktools import ROOT, grade
from booktools.grade_export import CANVAS_COLUMNS, gradescope_autograder, score, student_of
from booktools.grade_pack import pack_namespace, plain_value, unpack
from booktools.samples import (
    EXAMPLE,
    GOOD_ANSWER,
    PROOF_ANSWER,
    RIGHT,
    SAMPLES,
    STUB,
    WEAK_ANSWER,
    WEAK_PROOF,
    _student,
    example_sheet,
    grade_samples,
    stale,
    to_ipynb,
)

IDS = [
    "paths.count",
    "paths.two_layer",
    "paths.mean_length",
    "paths.predict_length",
    "paths.read_diagram",
]
POINTS = {
    "paths.count": 1,
    "paths.two_layer": 2,
    "paths.mean_length": 1,
    "paths.predict_length": 1,
    "paths.read_diagram": 1,
}
EXPLAIN, EXPLAIN_POINTS = "ex-paths-explain", 3  # its Rubric in rankbook/checks/paths.py
PROVE, PROVE_POINTS = "ex-paths-prove", 5  # a proof, graded by hand with its Rubric's points
# the build-it-yourself exercises, which the samples leave unanswered (not attempted)
UNANSWERED = {"paths.attention_layer": 2, "paths.by_length": 3}  # their difficulty
MAX = sum(POINTS.values()) + sum(UNANSWERED.values()) + EXPLAIN_POINTS + PROVE_POINTS


def test_the_samples_are_the_current_student_version():
    old = stale()
    assert not old, (
        f"stale sample submissions {old}: run python3 -m booktools.samples and commit them"
    )


@pytest.fixture(scope="module")
def samples_graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("graded")
    subs = grade_samples(out)
    return {s.rel: s for s in subs}, out


def test_the_samples_get_their_outcomes_and_points(samples_graded):
    subs, out = samples_graded
    got = {name: [s.outcomes[i][0] for i in IDS] for name, s in subs.items()}
    assert got == {
        "correct.md": ["correct"] * 5,
        "mistake.md": ["incorrect", "incorrect", "correct", "correct", "correct"],
        "untouched.md": ["not attempted"] * 5,
        "crashes.md": ["correct", "crashed", "crashed", "not attempted", "not attempted"],
    }
    assert all(s.chapter == "paths" and s.run == "ran" for s in subs.values())
    assert all(s.outcomes[i][0] == "not attempted" for s in subs.values() for i in UNANSWERED)
    # the known mistakes' hints reach the report
    mistake = subs["mistake.md"].outcomes
    assert "the skip is not one of them" in mistake["paths.count"][1]
    assert "not defined" in subs["crashes.md"].outcomes["paths.two_layer"][1]
    assert "ZeroDivisionError" in subs["crashes.md"].outcomes["paths.mean_length"][1]
    assert any("SyntaxError" in e for _, e in subs["crashes.md"].cell_errors)
    rows = list(csv.DictReader(open(out / "grades.csv")))
    assert [r["submission"] for r in rows] == sorted(subs)
    totals = {r["submission"]: (r["correct"], r["points"], r["max points"]) for r in rows}
    assert totals == {
        "correct.md": ("5", "6", str(MAX)),
        "crashes.md": ("1", "1", str(MAX)),
        "mistake.md": ("3", "3", str(MAX)),
        "untouched.md": ("0", "0", str(MAX)),
    }
    assert rows[0]["paths.two_layer points"] == "2" and rows[0][f"{EXPLAIN} points"] == ""
    assert all(
        r["out of"] == str(len(IDS) + len(UNANSWERED)) and (out / r["report"]).exists()
        for r in rows
    )
    report = (out / "mistake.md.md").read_text()
    assert "| `paths.count` | ✘ incorrect | 0 of 1 |" in report and f"points: 3 of {MAX}" in report
    # the hand-graded exercises are listed, each with its kind and its rubric's points, not left out
    assert f"| `{EXPLAIN}` | explain | not scored (of {EXPLAIN_POINTS}) |" in report
    assert f"| `{PROVE}` | prove | not scored (of {PROVE_POINTS}) |" in report
    assert rows[0][f"{PROVE} points"] == ""
    sheet = (out / "grades.md").read_text()
    assert f"graded by hand: to score (of {PROVE_POINTS})" in sheet


def test_the_example_grade_sheet_is_current(samples_graded):
    _, out = samples_graded
    assert EXAMPLE.exists() and EXAMPLE.read_text() == example_sheet(out), (
        f"{EXAMPLE.relative_to(ROOT)} is stale: run python3 -m booktools.samples and commit it"
    )


# --- the gradebooks' formats ------------------------------------------------------------------

# Gradescope's autograder results.json (gradescope-autograders.readthedocs.io, "Autograder
# Specifications"): an optional top-level score, and tests with name, score, max_score, output,
# visibility (one of four), an optional status
VISIBILITY = ["hidden", "after_due_date", "after_published", "visible"]
GRADESCOPE_SCHEMA = {
    "type": "object",
    "required": ["tests"],
    "properties": {
        "score": {"type": "number"},
        "output": {"type": "string"},
        "visibility": {"enum": VISIBILITY},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "score", "max_score", "output", "visibility"],
                "properties": {
                    "name": {"type": "string"},
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "output": {"type": "string"},
                    "visibility": {"enum": VISIBILITY},
                    "status": {"enum": ["passed", "failed"]},
                },
            },
        },
    },
}


def validate_canvas(path, assignments: int) -> list[dict]:
    """Canvas's gradebook import: the five identity columns, then one column per assignment; a
    "Points Possible" row; every student row names a student and has a number or nothing per
    assignment. Returns the student rows."""
    rows = list(csv.reader(open(path, newline="")))
    assert rows[0][:5] == CANVAS_COLUMNS and len(rows[0]) == 5 + assignments
    assert rows[1][0] == "Points Possible" and rows[1][1:5] == ["", "", "", ""]
    assert all(float(x) > 0 for x in rows[1][5:])
    for row in rows[2:]:
        assert len(row) == len(rows[0]) and row[0] and any(row[1:4]), row
        assert all(x == "" or float(x) >= 0 for x in row[5:]), row
    return [dict(zip(rows[0], row)) for row in rows[2:]]


def test_the_exports_validate_against_the_gradebooks_formats(samples_graded):
    import jsonschema

    subs, out = samples_graded
    students = validate_canvas(out / "canvas.csv", 1)
    assert {r["SIS Login ID"]: r["The path decomposition"] for r in students} == {
        "correct": "6",
        "crashes": "1",
        "mistake": "3",
        "untouched": "0",
    }
    for name in subs:
        results = json.loads((out / "gradescope" / f"{name}.json").read_text())
        jsonschema.validate(results, GRADESCOPE_SCHEMA)
        assert results["score"] == sum(t["score"] for t in results["tests"])
        assert (
            sum(t["max_score"] for t in results["tests"]) == MAX - EXPLAIN_POINTS - PROVE_POINTS
        )  # not scored yet
        assert (
            f"Graded by hand, not here: {EXPLAIN} (explain, {EXPLAIN_POINTS} points), "
            f"{PROVE} (prove, {PROVE_POINTS} points)"
        ) in results["output"]
    with pytest.raises(jsonschema.ValidationError):  # the schema can fail
        jsonschema.validate({"tests": [{"name": "x", "score": "1"}]}, GRADESCOPE_SCHEMA)


def test_hand_sheets_collect_every_answer_with_the_model_answer_and_the_rubric(samples_graded):
    subs, out = samples_graded
    sheet = (out / "hand" / f"{EXPLAIN}.md").read_text()
    assert "A model answer, for the instructor." in sheet and "shared attention" in sheet
    assert "1 point**: Says why the shares can add up" in sheet
    rows = {r["submission"]: r for r in csv.DictReader(open(out / "hand" / f"{EXPLAIN}.csv"))}
    assert (
        rows["correct.md"]["answer"] == GOOD_ANSWER and rows["mistake.md"]["answer"] == WEAK_ANSWER
    )
    assert rows["untouched.md"]["answer"] == "" and rows["correct.md"]["max points"] == "3"
    proof = (out / "hand" / f"{PROVE}.md").read_text()
    assert f"({PROVE_POINTS} points)" in proof and "a prove question" in proof
    assert "A model proof, for the instructor." in proof and "Common wrong turns:" in proof
    assert "2 points**: Induction step" in proof
    proofs = {r["submission"]: r for r in csv.DictReader(open(out / "hand" / f"{PROVE}.csv"))}
    assert proofs["correct.md"]["answer"] == PROOF_ANSWER and proofs["untouched.md"]["answer"] == ""
    assert proofs["mistake.md"]["answer"] == WEAK_PROOF  # written at the notebook's end
    assert proofs["correct.md"]["max points"] == str(PROVE_POINTS)
    predictions = {
        r["submission"]: r["answer"]
        for r in csv.DictReader(open(out / "hand" / "ex-paths-predict-length.csv"))
    }
    assert predictions["correct.md"].startswith("prediction: 6 (the check: correct)")
    assert predictions["untouched.md"].startswith("prediction: None")


def test_hand_scores_round_trip_into_the_totals_and_the_exports(samples_graded, tmp_path):
    import jsonschema

    _, graded = samples_graded
    out = tmp_path / "graded"
    shutil.copytree(graded, out)
    rows = list(csv.DictReader(open(out / "hand" / f"{EXPLAIN}.csv")))
    for row in rows:
        row["score"] = {"correct.md": "2.5", "mistake.md": "0.5"}.get(row["submission"], "")
    sheet = tmp_path / "HAND_SCORES.csv"
    # saved as Excel's "CSV UTF-8" does: with a byte-order mark (issue 45)
    with open(sheet, "w", newline="", encoding="utf-8-sig") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        # a predict question scored by hand replaces the check's point
        w.writerow(
            {"question": "ex-paths-predict-length", "submission": "mistake.md", "score": "0"}
        )
    shutil.copy(
        sheet, out / "hand" / "filled.csv"
    )  # merged from where the sheets are: no folder named
    assert grade.main(["--merge", str(out / "hand" / "filled.csv")]) == 0
    totals = {r["submission"]: r["points"] for r in csv.DictReader(open(out / "grades.csv"))}
    assert totals == {
        "correct.md": "8.5",
        "crashes.md": "1",
        "mistake.md": "2.5",
        "untouched.md": "0",
    }
    canvas = {
        r["SIS Login ID"]: r["The path decomposition"]
        for r in validate_canvas(out / "canvas.csv", 1)
    }
    assert canvas == {"correct": "8.5", "crashes": "1", "mistake": "2.5", "untouched": "0"}
    results = json.loads((out / "gradescope" / "correct.md.json").read_text())
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == 8.5 and results["tests"][-1]["name"] == f"{EXPLAIN} (graded by hand)"
    assert "| `ex-paths-explain` | explain | 2.5 of 3 |" in (out / "correct.md.md").read_text()
    assert "ex-paths-explain` | paths | ran" not in (out / "grades.md").read_text()
    # the prediction scored 0 by hand reads as scored by hand, beside what its check said
    predicted = next(
        t
        for t in json.loads((out / "gradescope" / "mistake.md.json").read_text())["tests"]
        if t["name"] == "paths.predict_length"
    )
    assert predicted["score"] == 0 and predicted["status"] == "failed"
    assert predicted["output"].startswith("Scored by hand: 0 of 1. The check said: ")
    assert "scored by hand (0/1); the check: " in (out / "grades.md").read_text()


def _fill(sheet, scores: dict) -> None:
    """Type ``scores`` (submission -> score) into a hand-grading sheet, as in a spreadsheet."""
    rows = list(csv.DictReader(open(sheet, newline="")))
    for row in rows:
        row["score"] = scores.get(row["submission"], row["score"])
    with open(sheet, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_merging_one_sheet_at_a_time_or_all_at_once_keeps_every_score(samples_graded, tmp_path):
    """The guide's recipe (issue 46, item 2): both sheets filled in hand/, then merged one at a
    time (the second still unmerged while the first is merged: its typed scores must survive)
    or both at once: the same totals, with both sheets' hand points summed; every merged sheet
    shows its scores; a later merge of a sheet with a row left blank keeps the earlier score."""
    _, graded = samples_graded
    scores = {
        EXPLAIN: {"correct.md": "3", "mistake.md": "1"},
        PROVE: {"correct.md": "4", "mistake.md": "0.5"},
    }
    totals = {}
    for how in ("one", "all"):
        out = tmp_path / how
        shutil.copytree(graded, out)
        sheets = [out / "hand" / f"{label}.csv" for label in scores]
        for sheet, label in zip(sheets, scores):
            _fill(sheet, scores[label])
        if how == "one":
            for sheet in sheets:
                assert grade.main(["--merge", str(sheet)]) == 0
        else:
            assert grade.main([a for sheet in sheets for a in ("--merge", str(sheet))]) == 0
        totals[how] = {
            r["submission"]: r["points"] for r in csv.DictReader(open(out / "grades.csv"))
        }
        for sheet, label in zip(sheets, scores):
            got = {r["submission"]: r["score"] for r in csv.DictReader(open(sheet))}
            assert got == {"crashes.md": "", "untouched.md": "", **scores[label]}, (how, label)
        assert "| 3 of 3 |" in (out / "hand" / f"{EXPLAIN}.md").read_text()
    assert (
        totals["one"]
        == totals["all"]
        == {
            "correct.md": "13",  # 6 from the checks, 3 + 4 by hand
            "crashes.md": "1",
            "mistake.md": "4.5",  # 3 from the checks, 1 + 0.5 by hand
            "untouched.md": "0",
        }
    )
    # the explain sheet merged again with correct.md's score erased: kept, not wiped
    _fill(out / "hand" / f"{EXPLAIN}.csv", {"correct.md": "", "mistake.md": "2"})
    assert grade.main(["--merge", str(out / "hand" / f"{EXPLAIN}.csv")]) == 0
    after = {r["submission"]: r["points"] for r in csv.DictReader(open(out / "grades.csv"))}
    assert after["correct.md"] == "13" and after["mistake.md"] == "5.5"


@pytest.mark.parametrize(
    "change, message",
    [
        ("answer", "not the graded submission's answer"),
        ("student", "is not the graded submission's"),
        ("twice", "scored twice"),
    ],
)
def test_a_sheet_whose_rows_do_not_match_the_grading_is_refused(
    samples_graded, tmp_path, change, message
):
    _, graded = samples_graded
    out = tmp_path / "graded"
    shutil.copytree(graded, out)
    sheet = out / "hand" / f"{EXPLAIN}.csv"
    rows = list(csv.DictReader(open(sheet, newline="")))
    row = next(r for r in rows if r["submission"] == "correct.md")
    row["score"] = "1"
    if change == "answer":  # a sheet of an earlier grading, where correct.md said otherwise
        row["answer"] = "Another answer."
    elif change == "student":
        row["student"] = "someone else"
    else:
        rows.append(dict(row))
    with open(sheet, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    before = (out / "grades.csv").read_text()
    with pytest.raises(ValueError, match=message):
        grade.merge(None, None, [sheet], echo=lambda *a: None)
    assert (out / "grades.csv").read_text() == before


@pytest.mark.parametrize(
    "row, message",
    [
        (
            {"question": "ex-paths-nothing", "submission": "correct.md", "score": "1"},
            "unknown question",
        ),
        (
            {"question": EXPLAIN, "submission": "nobody.md", "score": "1"},
            "no submission 'nobody.md'",
        ),
        ({"question": EXPLAIN, "submission": "correct.md", "score": "4"}, "not between 0 and 3"),
        ({"question": EXPLAIN, "submission": "correct.md", "score": "good"}, "is not a number"),
    ],
)
def test_bad_hand_scores_are_refused_naming_the_line(samples_graded, tmp_path, row, message):
    _, graded = samples_graded
    sheet = tmp_path / "scores.csv"
    with open(sheet, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["question", "submission", "score"])
        w.writeheader()
        w.writerow(row)
    with pytest.raises(ValueError, match=message) as err:
        grade.merge(SAMPLES, graded, [sheet], echo=lambda *a: None)
    assert "line 2" in str(err.value)


def test_the_gradescope_autograder_grades_one_upload(tmp_path):
    written = gradescope_autograder(tmp_path / "autograder", timeout=180)
    assert [p.name for p in written] == ["setup.sh", "run_autograder"]
    root = tmp_path / "ag"
    (root / "submission").mkdir(parents=True)
    shutil.copy(SAMPLES / "mistake.md", root / "submission" / "homework.md")
    env = {
        **__import__("os").environ,
        "AUTOGRADER_ROOT": str(root),
        "GRADE_OUT": str(tmp_path / "out"),
    }
    subprocess.run(
        [sys.executable, str(written[1])], env=env, check=True, capture_output=True, cwd=ROOT
    )
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 3 and len(results["tests"]) == len(IDS) + len(UNANSWERED)


# --- tampering, crashes, loops, copied keys: small notebooks around the chapter's check cells -----

HEADER = (
    "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
    "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
)


def _check_cells() -> dict[str, str]:
    nb = jupytext.reads(_student(), fmt="md:myst")
    cells = [c.source for c in nb.cells if c.cell_type == "code" and "checks.check(" in c.source]
    return {i: next(c for c in cells if f'"{i}"' in c) for i in IDS}


def notebook(answers: dict, extra: dict | None = None, checks: dict | None = None) -> str:
    """A MyST notebook: ``import rankcollapse`` and ``rankbook``, then per exercise its answer, its
    check cell (the chapter's, or ``checks[key]``; ``None`` drops it), ``extra[key]`` (code after
    the check)."""
    keys = dict(zip(STUB, IDS))
    cells = ["import rankcollapse as rc\nimport rankbook as book"]
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
import rankbook.checks as C
book.checks.check = lambda *a, **k: print("✔ correct")
C.tolerance.close = lambda *a, **k: True
C.EXERCISES["paths.count"].reference = lambda L, H, l: 0
C.EXERCISES["paths.mean_length"].reference = lambda L, H: L / 2
C.QUESTIONS["paths.predict_length"].answer = lambda: 0
torch.allclose = lambda *a, **k: True
"""
HIDDEN_TAMPER = """\
def path_count(L, H, length):
    mod = __import__("rankbook." + "che" + "cks", fromlist=["x"])
    getattr(mod, "EXER" + "CISES")["paths.count"].reference = lambda *a: 0
    return 0"""
KEY = "used the reference"

CASES = {
    # the check function, the references, the comparison, torch itself replaced in the kernel
    "monkeypatch.md": (
        notebook(
            {
                "count": PATCH_EVERYTHING + "def path_count(L, H, length):\n    return 0",
                "mean": "def mean_length(L, H):\n    return L / 2",
                "predict": "prediction = 0",
            }
        ),
        ["incorrect", "not attempted", "incorrect", "incorrect", "not attempted"],
        "ran",
    ),
    # check cells edited to pass: an alias import, a wrapper, one replaced by a print
    "edited.ipynb": (
        notebook(
            RIGHT,
            checks={
                "count": 'from rankbook import checks as c\nc.check("paths.count", path_count);',
                "two": 'book.checks.check("paths.two_layer", lambda *a: None) or True',
                "mean": 'print("✔ paths.mean_length: correct.")',
            },
        ),
        ["edited", "edited", "missing", "correct", "correct"],
        "ran",
    ),
    # an answer that changes the reference while it is checked; one that is the reference;
    # a value whose == is always true; sys.exit in a cell
    "cheat.md": (
        notebook(
            {
                "count": HIDDEN_TAMPER,
                "two": RIGHT["two"],
                "mean": 'mean_length = book.checks.EXERCISES["paths.mean_length"].reference',
                "predict": 'prediction = type("Any", (), {"__eq__": lambda s, o: True})()',
                "read": "answer = None\nimport sys\nsys.exit(0)\nanswer = 5",
            }
        ),
        ["tampered", "correct", KEY, "incorrect", "not attempted"],
        "ran",
    ),
    # the checks' own code, reached without naming it: called while the answer runs
    "checkscall.md": (
        notebook(
            {
                "count": "def path_count(L, H, length):\n"
                "    mod = __import__('rankbook.' + 'che' + 'cks.paths', fromlist=['x'])\n"
                "    getattr(mod, '_count_' + 'cases')()\n"
                "    return __import__('math').comb(L, length) * H**length",
                "read": "import rankbook.checks as c\n"
                "answer = getattr(c, 'QUEST' + 'IONS')['paths.read_diagram'].answer()",
            }
        ),
        [KEY, "not attempted", "not attempted", "not attempted", KEY],
        "ran",
    ),
    # answers that return what the library computes: the library is the answer key
    "copykey.md": (
        notebook(
            {
                "count": (
                    "def path_count(L, H, length):\n    return rc.paths.path_count(L, H, length)"
                ),
                "two": RIGHT["two"],
                "mean": "def mean_length(L, H):\n    return rc.paths.mean_path_length(L, H)",
                "predict": "prediction = int(rc.paths.length_distribution(12, 1).argmax())",
                "read": "answer = rc.paths.path_count(3, 2, 1)",
            }
        ),
        [KEY, "correct", KEY, KEY, KEY],
        "ran",
    ),
    # the same through an alias, functools.partial, a notebook helper and getattr
    "copyalias.ipynb": (
        notebook(
            {
                "count": "from rankcollapse.paths import path_count as count\n\n"
                "def path_count(L, H, length):\n"
                "    return count(L, H, length)",
                "mean": "import functools\n"
                "mean_length = functools.partial(rc.paths.mean_path_length)",
                "predict": "dist = getattr(rc.paths, 'length_' + 'distribution')(12, 1)\n"
                "prediction = int(dist.argmax())",
                "read": "def lookup():\n    return rc.paths.path_count(3, 2, 1)\n\n"
                "answer = lookup()",
            }
        ),
        [KEY, "not attempted", KEY, KEY, KEY],
        "ran",
    ),
    # turning the tracer off: in the function checked, and in the cell that computes a value
    "untrace.md": (
        notebook(
            {
                "count": "import sys\n\ndef path_count(L, H, length):\n    sys.setprofile(None)\n"
                "    return rc.paths.path_count(L, H, length)",
                "read": "import sys\nsys.setprofile(None)\nanswer = rc.paths.path_count(3, 2, 1)",
            }
        ),
        ["tampered", "not attempted", "not attempted", "not attempted", "tampered"],
        "ran",
    ),
    "same.md": (
        notebook({"count": RIGHT["count"]}, extra={"count": "import os\nos._exit(3)"}),
        ["correct"] + ["crashed"] * 4,
        "crashed in code cell 4",
    ),
    # a kernel that ends itself with status 0 has not run to its end either
    "exit0.md": (
        notebook(RIGHT, extra={"two": "import os\nos._exit(0)"}),
        ["correct", "correct"] + ["crashed"] * 3,
        "crashed in code cell 6",
    ),
    "same.ipynb": (notebook(RIGHT), ["correct"] * 5, "ran"),
}


# Room for a loaded machine: no case here reaches it. The cases that loop (a notebook's cell, an
# answer when its check calls it) are tests/test_grade_probes.py's, which do not depend on how
# fast the cells before the loop run.
TIMEOUT = 40


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
    subs = grade.grade(folder, timeout=TIMEOUT, jobs=2, echo=lambda *a: None)
    return {s.rel: s for s in subs}, folder / "graded"


@functools.lru_cache(maxsize=1)
def paths_spec():
    """The paths chapter's spec, read once for the tests that only score with it (0.6 s each)."""
    return grade.chapter_specs()["paths"]


@pytest.mark.parametrize("name", list(CASES))
def test_tampering_crashes_loops_and_copies_get_their_outcomes(tampered_graded, name):
    subs, _ = tampered_graded
    sub = subs[name]
    assert sub.chapter == "paths"
    assert [sub.outcomes[i][0] for i in IDS] == CASES[name][1], sub.outcomes
    assert sub.run == CASES[name][2]
    want = sum(POINTS[i] for i, o in zip(IDS, CASES[name][1]) if o == "correct")
    assert score(sub, paths_spec())["total"] == want


def test_what_the_reports_say(tampered_graded):
    subs, out = tampered_graded
    assert "the answer itself: correct" in subs["edited.ipynb"].outcomes["paths.count"][1]
    assert "uses the checks module" in subs["cheat.md"].outcomes["paths.mean_length"][1]
    assert "changed" in subs["cheat.md"].outcomes["paths.count"][1]
    copied = subs["copykey.md"].outcomes
    assert "`rankcollapse.paths.counting.path_count`" in copied["paths.count"][1]
    assert "the answer itself: correct" in copied["paths.count"][1]
    assert "length_distribution" in copied["paths.predict_length"][1]
    assert "tracing" in subs["untrace.md"].outcomes["paths.read_diagram"][1]
    assert (
        "the checks' own `rankbook.checks.paths._count_cases`"
        in subs["checkscall.md"].outcomes["paths.count"][1]
    )
    assert (
        "rankbook.checks.paths_questions.<lambda>"
        in subs["checkscall.md"].outcomes["paths.read_diagram"][1]
    )
    assert (
        subs["notes/unrelated.md"].run == "unknown chapter"
        and not subs["notes/unrelated.md"].outcomes
    )
    assert subs["broken.ipynb"].run.startswith("unreadable")
    # x.md and x.ipynb: two reports, neither overwriting the other
    rows = {r["submission"]: r for r in csv.DictReader(open(out / "grades.csv"))}
    assert rows["same.md"]["report"] != rows["same.ipynb"]["report"]
    assert "crashed in code cell 4" in (out / rows["same.md"]["report"]).read_text()
    assert f"points: 6 of {MAX}" in (out / rows["same.ipynb"]["report"]).read_text()
    # the chapter's order: the build-it-yourself exercises come first
    checks = list(UNANSWERED) + IDS
    assert list(rows["same.md"])[4 : 4 + 2 * len(checks) : 2] == checks


# --- a class with hostile submissions mixed in (issue 45) ---------------------------------------

# tiny notebooks: no import in the kernel (the check cells are the grader's, never run), three
# checks scored; honest number k answers read_diagram, predict_length and count right or not
FUNCTION = {True: RIGHT["count"], False: "def path_count(L, H, length):\n    return L * H"}


def tiny(k: int, extra: str = "", count: str | None = None, last: str = "") -> str:
    checks = _check_cells()
    cells = [
        extra,
        f"answer = {6 if k % 2 == 0 else 5}",
        checks["paths.read_diagram"],
        f"prediction = {6 if k % 3 else 0}",
        checks["paths.predict_length"],
        count or FUNCTION[k % 5 != 0],
        checks["paths.count"],
        last,
    ]
    return HEADER + "".join(f"```{{code-cell}} ipython3\n{c}\n```\n\n" for c in cells if c)


HONEST_POINTS = {k: (k % 2 == 0) + (k % 3 != 0) + (k % 5 != 0) for k in range(5)}
# appends a line to every file in its working folder and the one above it (where the grader
# kept its logs until issue 45), writes junk where the grader's files were, and to fd 1 and 2,
# and puts a folder where the grader writes grades.md
JUNK = """import os
os.makedirs(os.path.join({out!r}, 'grades.md'), exist_ok=True)
for d in ('.', '..'):
    for name in ['cells.jsonl', 'run.json', 'verdicts.jsonl', 'plan.json'] + os.listdir(d):
        p = os.path.join(d, name)
        if not os.path.isdir(p):
            try:
                with open(p, 'a') as f:
                    f.write('[1, {"cell": 99999}, not json\\n')
            except OSError:
                pass
os.write(1, b'\\xff\\xfe junk\\n' * 1000)
os.write(2, b'{"id": "paths.count", "status": "correct"}\\n')"""
# rewrites the reference answer of paths.read_diagram in the installed checks (the copy the
# grader imports in this test; it refuses to touch any other) to its own wrong answer, 5
REWRITE = """import importlib.util, os
path = importlib.util.find_spec('rankbook.checks.paths_questions').origin
assert path.startswith({copy!r}), path
with open(path, 'a') as f:
    f.write('\\nfrom .registry import QUESTIONS\\n')  # the module imports it under no name
    f.write('QUESTIONS["paths.read_diagram"].answer = lambda: 5\\n')"""
# an answer that kills the process above the one it is checked in (the server's, if it is one);
# os.open, since the grader does not carry the builtin open out of the notebook (an answer
# calling it crashes before it kills anything)
KILLER = """def path_count(L, H, length):
    import os, signal
    fd = os.open(f'/proc/{os.getppid()}/cmdline', os.O_RDONLY)
    parent = os.read(fd, 4096)
    os.close(fd)
    if b'grade_server' in parent:
        os.kill(os.getppid(), signal.SIGKILL)
    os._exit(1)"""
HOSTILE = {  # name: (first cell, count answer, last cell, k)
    "zz-junk.md": (JUNK, None, "", 4),
    "zz-\udce9l\udce8ve.md": ("import os\nos._exit(0)", None, "", 2),  # a Windows zip's name
    "zz-rewrite.md": ("", None, REWRITE, 1),  # answers 5; rewrites after its last check cell
    "zz-killer.md": ("", KILLER, "", 3),
    "zz-bytes.ipynb": None,  # not a notebook, not text
}


def test_hostile_submissions_do_not_change_the_honest_grades(tmp_path, monkeypatch):
    """30 submissions, 5 of them hostile: the 25 honest ones (5 notebooks, each handed in by 5
    students) get what the 5 get graded alone. The checks the grader imports are a copy, which
    one hostile submission rewrites on disk before its check runs."""
    import os
    import tempfile

    copy = tmp_path / "site"
    shutil.copytree(ROOT / "book" / "rankbook", copy / "rankbook")
    monkeypatch.setenv("PYTHONPATH", str(copy))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the grader's folders
    (tmp_path / "tmp").mkdir()
    alone, whole = tmp_path / "alone", tmp_path / "class"
    alone.mkdir()
    whole.mkdir()
    for k in range(5):
        (alone / f"honest{k}.md").write_text(tiny(k))
        for j in range(5):
            (whole / f"student{5 * k + j:02d}.md").write_text(tiny(k))
    for name, spec in HOSTILE.items():
        if spec is None:
            (whole / name).write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
            continue
        first, count, last, k = spec
        first = first.replace("{out!r}", repr(str(whole / "graded")))
        (whole / name).write_text(tiny(k, first, count, last.replace("{copy!r}", repr(str(copy)))))
    quiet = dict(timeout=60, jobs=2, echo=lambda *a: None)
    specs = paths_spec()
    points = {s.rel: score(s, specs)["total"] for s in grade.grade(alone, **quiet)}
    assert points == {f"honest{k}.md": HONEST_POINTS[k] for k in range(5)}
    subs = {s.rel: s for s in grade.grade(whole, **quiet)}
    assert len(subs) == 30
    for k in range(5):
        for j in range(5):
            assert (
                score(subs[f"student{5 * k + j:02d}.md"], specs)["total"] == points[f"honest{k}.md"]
            )
    # the hostile ones: each its own row
    assert "QUESTIONS" in (copy / "rankbook" / "checks" / "paths_questions.py").read_text()
    rewrite = subs["zz-rewrite.md"]  # 5, against the answer loaded before it ran
    assert rewrite.outcomes["paths.read_diagram"].outcome == "incorrect" and rewrite.run == "ran"
    killer = subs["zz-killer.md"].outcomes
    assert killer["paths.count"].outcome == "crashed"
    assert "killed the process" in killer["paths.count"].message  # not "could not carry"
    assert subs["zz-bytes.ipynb"].run.startswith("unreadable")
    assert subs["zz-\\xe9l\\xe8ve.md"].run.startswith("crashed")
    assert subs["zz-junk.md"].run == "ran"  # and its answers get what they earn:
    assert score(subs["zz-junk.md"], specs)["total"] == HONEST_POINTS[4]  # plan.json intact
    assert (whole / "graded" / "grades.md.in-the-way").is_dir()
    assert (whole / "graded" / "grades.md").read_text().count("student") == 25
    rows = list(csv.DictReader(open(whole / "graded" / "grades.csv", encoding="utf-8")))
    assert len(rows) == 30 and "zz-\\xe9l\\xe8ve.md" in {r["submission"] for r in rows}
    # the grader's folders are gone (what the junk notebook wrote there stays)
    assert not [p for p in os.listdir(tmp_path / "tmp") if p.startswith("grade-")]


# --- the bugs of issue 28 -----------------------------------------------------------------------


def test_grading_twice_from_a_relative_path_grades_the_same_submissions(tmp_path):
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    for where in ("a.md", "alice/b.md"):  # not a chapter: graded without running anything
        (subs / where).write_text(HEADER + "```{code-cell} ipython3\n1 + 1\n```\n")
    graded = []
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-m", "booktools.grade", "subs"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        graded.append(
            [r["submission"] for r in csv.DictReader(open(subs / "graded" / "grades.csv"))]
        )
    assert graded == [["a.md", "alice/b.md"]] * 2
    # nor are the outputs of an earlier grading with another --out
    assert (
        subprocess.run(
            [sys.executable, "-m", "booktools.grade", "subs", "--out", "subs/other"],
            cwd=tmp_path,
            capture_output=True,
        ).returncode
        == 0
    )
    from booktools.grade_plan import find_submissions

    assert [p.name for p in find_submissions(subs, subs / "graded")] == ["a.md", "b.md"]


def test_out_naming_a_file_fails_before_anything_is_graded(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.md").write_text(HEADER)
    (tmp_path / "taken.csv").write_text("mine")
    run = subprocess.run(
        [sys.executable, "-m", "booktools.grade", "subs", "--out", "taken.csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "--out 'taken.csv' is a file" in run.stderr and "graded" not in run.stdout
    assert (tmp_path / "taken.csv").read_text() == "mine" and not (
        tmp_path / "subs" / "graded"
    ).exists()


# --- the pieces, and bad arguments (nothing executed) ------------------------------------------


def test_partial_credit_is_the_share_of_cases_passed():
    import rankbook as book
    from booktools.grade_plan import CheckSpec
    from rankbook.checks import Exercise

    ex = book.checks.register(
        Exercise(
            id="demo.partial",
            reference=lambda n: n * n,
            cases=lambda: [(0,), (1,), (2,), (3,)],
            hint="square it",
            partial=True,
            points=4,
        )
    )
    try:
        r = book.checks.check("demo.partial", lambda n: n, quiet=True)  # right for 0 and 1
        assert r.status == "incorrect" and r.credit == 0.5 and "2 of 4 cases right" in r.message
        crashing = book.checks.check(
            "demo.partial", lambda n: 1 / n, quiet=True
        )  # raises on 0, right on 1
        assert crashing.status == "error" and crashing.credit == 0.25
        ex.partial = False
        assert book.checks.check("demo.partial", lambda n: n, quiet=True).credit == 0.0
        sub = grade.Submission(
            path=None,
            rel="x.md",
            chapter="demo",
            outcomes={"demo.partial": grade.Outcome("incorrect", "", 0.5)},
        )
        spec = grade.chapter_specs()["paths"]
        spec.checks = [CheckSpec("demo.partial", "f", "function", "", "ex-demo", 4.0)]
        spec.hand = []
        assert score(sub, spec)["total"] == 2.0 and score(sub, spec)["max"] == 4.0
    finally:
        book.checks.EXERCISES.pop("demo.partial")
    for bad in ({"points": 0}, {"points": True}, {"same_role": (1,)}, {"partial": "yes"}):
        with pytest.raises((ValueError, TypeError)):
            Exercise(id="demo.bad", reference=abs, cases=list, hint="", **bad)
    from rankbook.checks import Rubric

    for label, criteria in (("paths.explain", ((1, "x"),)), ("ex-x", ()), ("ex-x", ((0, "x"),))):
        with pytest.raises(ValueError, match="Rubric"):
            Rubric(label, criteria)
    for wrong_turns in ("one string", ("",), (3,)):
        with pytest.raises(ValueError, match="wrong_turns"):
            Rubric("ex-x", ((1, "x"),), wrong_turns)
    with pytest.raises(ValueError, match="registered twice"):
        book.checks.register(Rubric(EXPLAIN, ((1, "again"),)))


def test_the_reference_functions_are_found_by_tracing_the_reference():
    import rankbook as book
    import rankcollapse as rc
    from booktools.grade_verify import _verdict

    def packed(src, name):
        ns = {"__name__": "__main__", "rc": rc}
        exec(src, ns)
        return {"packed": pack_namespace(ns, name)}

    copy = packed("def f(L, H, l):\n    return rc.paths.path_count(L, H, l)", "f")
    assert _verdict(book, "paths.count", copy, {})["status"] == KEY
    # collapse.beta's reference calls norm_1 on a product it made: calling norm_1 is allowed
    beta = packed(
        "def f(Q, K, V, O):\n    from rankcollapse.residual import norm_1, norm_inf\n"
        "    W = V @ O\n    return norm_1(Q @ K.T) * (norm_1(W) * norm_inf(W)) ** 0.5",
        "f",
    )
    assert _verdict(book, "collapse.beta", beta, {})["status"] == "correct"
    # a value answer: the calls its cells made (recorded in the kernel) against answer()'s
    value = {"value": 6}
    assert (
        _verdict(
            book, "paths.read_diagram", value, {"calls": ["rankcollapse.paths.counting.path_count"]}
        )["status"]
        == KEY
    )
    assert _verdict(book, "paths.read_diagram", value, {"calls": []})["status"] == "correct"
    ex = book.checks.EXERCISES["paths.count"]
    ex.allow_reference = True
    try:
        allowed = _verdict(book, "paths.count", copy, {})
        assert allowed["status"] == "correct" and "which this check allows" in allowed["message"]
    finally:
        ex.allow_reference = False


def test_the_student_comes_from_the_file_name():
    canvas = student_of("doejane_late_123456_7890123_paths.ipynb")
    assert (canvas["Student"], canvas["ID"], canvas["SIS Login ID"]) == ("doejane", "123456", "")
    assert student_of("alice/paths.ipynb")["SIS Login ID"] == "alice"
    assert (
        student_of("bob_paths.md")["SIS Login ID"] == "bob"
        and student_of("carol.md")["Student"] == "carol"
    )
    mine = student_of("s1234567-paths.md", r"^s(?P<sis_user_id>\d+)-")
    assert mine["SIS User ID"] == "1234567" and mine["Student"] == "1234567"
    with pytest.raises(ValueError, match="groups"):
        student_of("x.md", r"(?P<who>.*)")


def test_pack_carries_code_helpers_closures_and_fresh_modules():
    import math

    import rankcollapse as rc

    ns = {"__name__": "__main__"}
    exec(
        "import math, types\nrc = types.ModuleType('rankcollapse')  # a fake, named as the real\n"
        "scale = 3\n"
        "def helper(n):\n    return 1 if n <= 1 else n * helper(n - 1)\n"
        "def make(k):\n    def inner(n, m=2):\n"
        "        return helper(n) * k * m + scale + math.floor(0.5)\n"
        "    return inner\nf = make(10)\n"
        "def g():\n    return rc.paths.path_count(3, 2, 1)\n",
        ns,
    )
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
    cells = [
        {"source": "# a comment\n" + original.rstrip(";") + "  ", "tags": []},
        {"source": original.replace("path_count", "path_count2"), "tags": []},
    ]
    _, status, _ = grade.plan(cells, specs, "fast")
    assert status["paths.count"] is None and status["paths.mean_length"] == "missing"
    _, status, _ = grade.plan(cells[1:], specs, "fast")
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
    for kwargs, word in (
        ({"timeout": 0}, "timeout"),
        ({"jobs": 0}, "jobs"),
        ({"mode": "slow"}, "mode"),
        ({"formats": ["moodle"]}, "--format 'moodle'"),
        ({"assignments": ["paths"]}, "CHAPTER=HEADER"),
        ({"assignments": ["nope=X"]}, "no chapter 'nope'"),
        ({"student_pattern": "(unclosed"}, "--student-pattern"),
    ):
        with pytest.raises(ValueError, match=word):
            grade.grade(tmp_path, **kwargs)
    with pytest.raises(ValueError, match="no earlier grading"):
        grade.merge(tmp_path, tmp_path / "graded", [tmp_path / "file.md"])
    run = subprocess.run(
        [sys.executable, "-m", "booktools.grade", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (
        run.returncode == 2 and "SUBMISSIONS_DIR" in run.stderr and "does not exist" in run.stderr
    )


def test_tasks_py_passes_grade_on(monkeypatch):
    sys.path.insert(0, str(ROOT))
    try:
        import tasks
    finally:
        sys.path.remove(str(ROOT))
    calls = []
    monkeypatch.setattr(tasks, "install", lambda always=False: calls.append(("install", always)))
    monkeypatch.setattr(tasks, "step", lambda title, *cmd: calls.append(cmd))
    tasks.main(["grade", "subs", "--out", "o", "--merge", "h.csv"])
    assert calls == [
        ("install", False),  # pip only if the environment lacks the install (tasks.installed)
        (tasks.PY, "-m", "booktools.grade", "subs", "--out", "o", "--merge", "h.csv"),
    ]


def test_answers_in_a_notebook_handed_out_in_jupyters_markdown_are_filed(tmp_path):
    """A notebook of ``booktools.student --ipynb`` (its MyST as Markdown, the book build's
    numbers in it: here one value standing for a build's) keeps each exercise's label for the
    grader: the untouched notebook has no answer anywhere, and an answer added after an
    exercise's cell is filed under that exercise, as in the MyST notebook. A written exercise has
    an answer cell of its own, so the explain answer lands on the explain sheet, not on the
    prove one's (issue 46, item 1)."""
    from booktools import readable, student
    from booktools.grade_hand import collect

    path = ROOT / "chapters" / "paths.md"
    glue = tmp_path / "chapters" / "paths.glue.json"
    glue.parent.mkdir(parents=True)
    record = {"mime_prefix": "application/papermill.record/", "name": "paths-enum-L"}
    glue.write_text(
        json.dumps(
            {"paths-enum-L": {"data": {"text/plain": "3"}, "metadata": {"scrapbook": record}}}
        )
    )
    myst = student.student_notebook(path.read_text())
    forms = {
        form: [
            {"type": c.cell_type, "source": c.source, "answer": student.answer_of(c.metadata)}
            for c in nb.cells
        ]
        for form, nb in (("myst", myst), ("readable", readable.readable(myst, path, tmp_path)))
    }
    spec = paths_spec()
    assert collect(forms["readable"], spec) == {}
    answer = "The short paths carry the output because their terms have not collapsed."
    filed = {}
    labels = ("ex-paths-build-by-length", "ex-paths-predict-length", "ex-paths-explain")
    for form, cells in forms.items():
        for label in (*labels, "ex-paths-prove"):
            mark = f":label: {label}" if form == "myst" else f"<!-- exercise-start: {label} -->"
            at = next(i for i, c in enumerate(cells) if mark in c["source"])
            added = [*cells[: at + 1], {"type": "markdown", "source": answer}, *cells[at + 1 :]]
            filed[form, label] = collect(added, spec)
    for label in labels:
        assert filed["readable", label] == {label: answer}, label
    for (form, label), found in filed.items():
        assert found == filed["myst", label], (form, label)


def _paths_student_cells():
    from booktools import student

    nb = student.student_notebook((ROOT / "chapters" / "paths.md").read_text())
    return [
        {"type": c.cell_type, "source": c.source, "answer": student.answer_of(c.metadata)}
        for c in nb.cells
    ]


def test_each_written_exercise_has_an_answer_cell_the_grader_reads_by_its_metadata(tmp_path):
    """The student version puts an answer cell after every explain or prove exercise of every
    chapter, owned by it through its metadata, with a placeholder saying what to write; in the
    .md and in the .ipynb alike. The grader files what is written in it under its exercise, and
    what a student writes in a cell added after it (before the next exercise) too."""
    import nbformat

    from booktools import student
    from booktools.grade_hand import collect_answers
    from booktools.grade_plan import read_cells

    specs = grade.chapter_specs()
    for name, spec in specs.items():
        written = [h.label for h in spec.hand if h.check is None]
        assert written and spec.answers == written, name
    cells = _paths_student_cells()
    owned = [i for i, c in enumerate(cells) if c["answer"]]
    assert [cells[i]["answer"] for i in owned] == ["ex-paths-explain", "ex-paths-prove"]
    assert "Your answer" in cells[owned[0]]["source"] and "Your proof" in cells[owned[1]]["source"]
    assert ":label: ex-paths-explain" in cells[owned[0] - 1]["source"]
    # the .md handed out and an .ipynb made from it keep the owner through a save
    text = student.strip_solutions((ROOT / "chapters" / "paths.md").read_text())
    (tmp_path / "a.md").write_text(text)
    nb = jupytext.reads(text, fmt="md:myst")
    nbformat.write(nb, tmp_path / "a.ipynb")
    for f in ("a.md", "a.ipynb"):
        assert [c["answer"] for c in read_cells(tmp_path / f) if c["answer"]] == [
            "ex-paths-explain",
            "ex-paths-prove",
        ]
    spec = specs["paths"]
    mine = [dict(c) for c in cells]
    mine[owned[0]]["source"] = "Because the norm of a sum is at most the sum of the norms."
    more = {"type": "markdown", "source": "And the paths share the attention.", "answer": None}
    mine.insert(owned[0] + 1, more)
    answers, warnings = collect_answers(mine, spec)
    assert answers["ex-paths-explain"] == (
        "Because the norm of a sum is at most the sum of the norms.\n\n"
        "And the paths share the attention."
    )
    assert warnings == [
        "ex-paths-prove: no answer (its answer cell is empty or still the placeholder)"
    ]


def test_answer_cells_moved_copied_deleted_or_empty_are_warned_about():
    """Filing goes by the cell's owner, not its place; the submission's warnings say what the
    instructor should look at."""
    from booktools.grade_hand import collect_answers

    spec = grade.chapter_specs()["paths"]
    cells = _paths_student_cells()
    explain, prove = [i for i, c in enumerate(cells) if c["answer"]]
    # the proof's cell dragged up before the explain exercise, written in
    moved = [dict(c) for c in cells]
    proof = {**moved.pop(prove), "source": "By induction on L."}
    at = next(i for i, c in enumerate(moved) if ":label: ex-paths-explain" in c["source"])
    moved.insert(at, proof)
    answers, warnings = collect_answers(moved, spec)
    assert answers == {"ex-paths-prove": "By induction on L."}
    assert any(w.startswith("ex-paths-prove: its answer cell was moved") for w in warnings)
    # the explain cell copied (Jupyter's copy keeps the metadata), both copies written in
    copied = [dict(c) for c in cells]
    copied[explain]["source"] = "First part."
    copied.insert(explain + 1, {**copied[explain], "source": "Second part."})
    answers, warnings = collect_answers(copied, spec)
    assert answers["ex-paths-explain"] == "First part.\n\nSecond part."
    assert "ex-paths-explain: its answer cell is there 2 times" in " ".join(warnings)
    # the explain cell deleted, the answer written in a new cell after the exercise
    deleted = [dict(c) for c in cells]
    deleted[explain] = {"type": "markdown", "source": "My answer.", "answer": None}
    answers, warnings = collect_answers(deleted, spec)
    assert answers == {"ex-paths-explain": "My answer."}
    assert any(w.startswith("ex-paths-explain: its answer cell is missing") for w in warnings)
    # untouched: each written exercise warned about, nothing filed
    answers, warnings = collect_answers(cells, spec)
    assert answers == {} and len(warnings) == 2 and all("no answer" in w for w in warnings)


def test_model_answers_on_the_sheets_show_no_myst_roles():
    """Issue 46, item 9: the instructor's sheets showed '{numref}`fig-length-distribution`' and
    '{glue}`prof-own-min`' in model answers; they show what the book prints."""
    from booktools.grade_hand import _model

    for spec in grade.chapter_specs().values():
        for h in spec.hand:
            shown = _model(h.model, spec.name)
            assert not re.search(r"\{(glue|numref|prf:ref|ref|eq|doc)[^}]*\}`", shown), h.label
    predict = next(h for h in paths_spec().hand if h.label == "ex-paths-predict-length")
    assert "(Figure 1.2)" in _model(predict.model, "paths")
