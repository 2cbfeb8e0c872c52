"""The student version: solutions stripped, and each chapter still executes to the end,
with every exercise check answering "not attempted" (the stubs are the only things left undone)."""

import pytest

from booktools import student
from booktools.toc import toc_notebooks

CHAPTERS = toc_notebooks()


def test_strip_removes_only_solutions():
    text = (
        "before\n````{exercise-start}\n:label: e\n````\nstub\n````{exercise-end}\n````\n\n"
        "````{solution-start} e\n:class: dropdown\n````\nsecret\n````{solution-end}\n````\nafter\n"
    )
    out = student.strip_solutions(text)
    assert "secret" not in out and "stub" in out and "before" in out and "after" in out
    with pytest.raises(ValueError, match="malformed"):
        student.strip_solutions("````{solution-start} e\n````\nno end\n")


@pytest.mark.chapters
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_student_chapter_executes_and_checks_say_not_attempted(path, runs):
    """The student version (the session's run: tests/conftest.py ``runs``) executes to its end,
    and every check in it says "not attempted"."""
    stripped = student.strip_solutions(path.read_text())
    assert "{solution-start}" not in stripped
    n_checks = stripped.count("book.checks.check(")
    nb = runs(path, student=True)
    verdicts = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "book.checks.check(" in cell["source"]:
            text = "".join(
                "".join(o.get("text", ""))
                for o in cell["outputs"]
                if o.get("output_type") == "stream"
            )
            verdicts.append(text)
    assert len(verdicts) == n_checks >= 2
    assert all("not attempted" in v for v in verdicts), verdicts
