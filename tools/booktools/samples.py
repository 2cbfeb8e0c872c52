"""The sample submissions of the grading command, and the example grade sheet made from them.

``tests/data/submissions/`` holds four submissions of the paths chapter's student version: its
stubs replaced by right answers, typical mistakes, nothing, or code that crashes, and in two of
them an answer to the explain question and a proof. Grading them gives the instructor's guide's
example grade sheet, ``_includes/example_grades.md``. Both are tracked files made from the
chapter, so they go stale when the chapter's prose changes; the tests compare them and fail, and

    python3 -m booktools.samples

writes them anew (grading the samples takes about a minute), to be committed with the change.
The answers here are the tests' reference too (``tests/test_grade.py`` imports them).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import jupytext

from . import ROOT
from .student import placeholder, strip_solutions

SAMPLES = ROOT / "tests" / "data" / "submissions"
EXAMPLE = ROOT / "_includes" / "example_grades.md"
EXAMPLE_HEADER = (
    "<!-- Written by tools/booktools/samples.py: the grade sheet of the sample submissions in "
    "tests/data/submissions/,\n     graded by `python3 tasks.py grade tests/data/submissions`. "
    "Do not edit. -->\n\n"
)

STUB = {
    "count": "def path_count(L, H, length):\n    raise NotImplementedError",
    "two": "def two_layer_paths(X, P1, P2, W1, W2):\n    raise NotImplementedError",
    "mean": "def mean_length(L, H):\n    raise NotImplementedError",
    "predict": "prediction = None  # one of 0, 6, 12",
    "read": "answer = None  # a number",
}
RIGHT = {
    "count": (
        "from math import comb\n\n"
        "def path_count(L, H, length):\n    return comb(L, length) * H**length"
    ),
    "two": (
        "def two_layer_paths(X, P1, P2, W1, W2):\n    return {\n        (None, None): X,\n"
        "        (0, None): P1 @ X @ W1,\n        (None, 0): P2 @ X @ W2,\n"
        "        (0, 0): P2 @ P1 @ X @ W1 @ W2,\n    }"
    ),
    "mean": "def mean_length(L, H):\n    return L * H / (H + 1)",
    "predict": "prediction = 6",
    "read": "answer = 6",
}
# typical mistakes: the skip counted as a head; the attention matrices in layer order
MISTAKE = {
    **RIGHT,
    "count": (
        "from math import comb\n\n"
        "def path_count(L, H, length):\n    return comb(L, length) * (H + 1)**length"
    ),
    "two": RIGHT["two"].replace("P2 @ P1 @ X", "P1 @ P2 @ X"),
}
# a syntax error in one answer, a division by zero in another, the rest left alone
CRASH = {
    **STUB,
    "count": RIGHT["count"],
    "two": RIGHT["two"].replace("    }", "    ]"),
    "mean": "def mean_length(L, H):\n    return L * H / (H + 1 - H - 1)",
}
# answers to the explain question: in its answer cell (correct.md), in a cell added below it
# (mistake.md)
GOOD_ANSWER = (
    "*My answer.* The norm of a sum is at most the sum of the norms, so shares above one say "
    "the terms are not aligned; only their inner products would show cancelling. The paths share "
    "the attention matrices of one forward pass: they are not independent members of an ensemble."
)
WEAK_ANSWER = "The paths are independent shallow networks, so their shares add up."
QUESTION_END = "shallow networks, one per\npath?\n\n````{exercise-end}\n````\n"
# the answer cells the student version puts after them (booktools.student.strip_solutions)
EXPLAIN_CELL = f'+++ {{"rankbook": {{"answer": "ex-paths-explain"}}}}\n\n{placeholder("explain")}\n'
PROVE_CELL = f'+++ {{"rankbook": {{"answer": "ex-paths-prove"}}}}\n\n{placeholder("prove")}\n'

# a proof, written below the prove question (correct.md)
PROOF_ANSWER = (
    "*My proof.* Induction on L: layer L is the sum over h = 0..H of P_h X_{L-1} W_h, the skip "
    "being head 0; substituting the sum for X_{L-1} and distributing gives every path once, "
    "the latest attention on the left. The bias stays 1 c^T because P 1 = 1."
)
PROVE_END = "Write the proof in a Markdown cell below.\n\n````{exercise-end}\n````\n"
# a proof at the notebook's end (mistake.md): it belongs to the last exercise, the proof
WEAK_PROOF = "By induction the paths add up, in layer order P(1) ... P(L)."


def _student() -> str:
    return strip_solutions((ROOT / "chapters" / "paths.md").read_text())


def to_ipynb(text: str) -> str:
    """The MyST notebook ``text`` as ipynb JSON, with cell ids that do not change from run to
    run."""
    nb = jupytext.reads(text, fmt="md:myst")
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return jupytext.writes(nb, fmt="ipynb")


def sample_texts() -> dict[str, str]:
    """The sample submissions: file name -> MyST text. They stay MyST in git (the source format;
    generated notebooks stay out of it); the grader's ``.ipynb`` path is exercised by the cases
    of ``test_tampering_crashes_and_loops_get_their_outcomes``, written as ipynb at test time."""
    base = _student()
    for anchor in (*STUB.values(), QUESTION_END, PROVE_END, EXPLAIN_CELL, PROVE_CELL):
        if (
            base.count(anchor) != 1
        ):  # the chapter's stubs and questions are where the samples expect
            raise RuntimeError(
                f"the paths chapter's student version holds {base.count(anchor)} copies of "
                f"{anchor!r}, not one: update booktools/samples.py to the chapter"
            )
    out = {}
    for name, answers in (
        ("correct.md", RIGHT),
        ("mistake.md", MISTAKE),
        ("untouched.md", STUB),
        ("crashes.md", CRASH),
    ):
        text = base
        for key, stub in STUB.items():
            text = text.replace(stub, answers[key])
        if name == "correct.md":  # written in the answer cells, in place of their placeholders
            text = text.replace(
                EXPLAIN_CELL, EXPLAIN_CELL.replace(placeholder("explain"), GOOD_ANSWER)
            )
            text = text.replace(PROVE_CELL, PROVE_CELL.replace(placeholder("prove"), PROOF_ANSWER))
        if name == "mistake.md":  # in a cell of its own after the answer cell, left as it was
            text = text.replace(EXPLAIN_CELL, EXPLAIN_CELL + f"\n+++\n\n{WEAK_ANSWER}\n")
            text = text.rstrip("\n") + f"\n\n+++\n\n{WEAK_PROOF}\n"
        out[name] = text
    return out


def example_sheet(graded: Path) -> str:
    """The text of ``_includes/example_grades.md`` from a grading of the samples into ``graded``."""
    return EXAMPLE_HEADER + (Path(graded) / "grades.md").read_text()


def grade_samples(out: Path, jobs: int = 2) -> list:
    """Grade the samples (fast mode, the formats the tests check) into ``out``."""
    from .grade import grade

    return grade(
        SAMPLES, out, timeout=180, jobs=jobs, echo=lambda *a: None, formats=["canvas,gradescope"]
    )


def stale(texts: dict[str, str] | None = None) -> list[str]:
    """The sample files that differ from :func:`sample_texts` (or are missing)."""
    texts = sample_texts() if texts is None else texts
    return [
        name
        for name, text in texts.items()
        if not (SAMPLES / name).exists() or (SAMPLES / name).read_text() != text
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--check",
        action="store_true",
        help="only say whether the files are current (exit 1 if not)",
    )
    args = ap.parse_args(argv)
    texts = sample_texts()
    old = stale(texts)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.check:
            for name in old:
                SAMPLES.mkdir(parents=True, exist_ok=True)
                (SAMPLES / name).write_text(texts[name])
        elif old:
            print(f"stale sample submissions: {old} (run python3 -m booktools.samples)")
            return 1
        grade_samples(Path(tmp) / "graded")
        sheet = example_sheet(Path(tmp) / "graded")
    current = EXAMPLE.exists() and EXAMPLE.read_text() == sheet
    if args.check:
        print(
            "the samples and the example grade sheet are current"
            if current
            else f"stale: {EXAMPLE.relative_to(ROOT)} (run python3 -m booktools.samples)"
        )
        return 0 if current else 1
    if not current:
        EXAMPLE.write_text(sheet)
    wrote = [f"tests/data/submissions/{n}" for n in old] + (
        [] if current else [str(EXAMPLE.relative_to(ROOT))]
    )
    print(
        f"wrote {', '.join(wrote)}: commit them"
        if wrote
        else "the samples and the example grade sheet were current"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
