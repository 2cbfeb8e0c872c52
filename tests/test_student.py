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


def test_myst_reads_as_markdown():
    """booktools.readable on each construct, with the labels and glued values given."""
    from booktools import readable

    refs = {"thm-a": "Theorem 4.1", "fig-b": "Figure 2.3", "ex-c": "Exercise 1.6"}
    refs |= {"eq-d": "(1.2)", "chap-e": "Pure attention collapses", "doc:chapters/e": "E"}
    text = (
        "(sec-x)=\n% a comment\nBy {prf:ref}`thm-a` and {prf:ref}`its bound <thm-a>`, see "
        "{numref}`fig-b`, {numref}`Exercise %s <ex-c>`, {eq}`eq-d`, {ref}`chap-e`, {doc}`e`; "
        "[it holds]{.claim #claim-x}: {glue}`v` and {glue:text}`w:.2f` and {glue}`gone`.\n\n"
        "````{prf:theorem} A title\n:label: thm-a\n\nThe body.\n\n$$\nx\n$$ (eq-d)\n````\n"
        "```{prf:proof}\nIt is.\n```\n"
        "```{admonition} Key takeaways\n:class: important\n\n- one\n```\n"
        "````{exercise-start}\n:label: ex-c\n````\n\n**Predict** it.\n"
        "```{glue:figure} fig-b\n:name: fig-b\n\nA caption.\n```\n"
    )
    out = readable.markdown(text, {"v": "0.85", "w": "0.123"}, refs)
    g = readable.glued
    assert not readable.UNREAD.findall(out), out
    for shown in (
        "By Theorem 4.1 and its bound, see Figure 2.3, Exercise 1.6, (1.2), Pure attention",
        f"collapses, E; it holds: {g('v', '0.85')} and {g('w', '0.12')} and {g('gone', '⟨gone⟩')}.",
        "> **Theorem 4.1** (A title)\n>\n> The body.\n>\n> $$\n> x\n> \\tag{1.2}\n> $$",
        "*Proof.*\nIt is.",
        "> **Key takeaways**\n>\n> - one",
        "<!-- exercise-start: ex-c -->\n**Exercise 1.6**\n\n**Predict** it.",
        "*Figure 2.3.* A caption.",
        readable.NO_BUILD_NOTE,
    ):
        assert shown in out, (shown, out)
    assert "comment" not in out and "sec-x" not in out
    assert readable.cite("dong2021attention", parenthetical=True) == "(Dong et al., 2021)"


def test_the_handed_out_notebooks_read_in_jupyter(tmp_path):
    """``python -m booktools.student --ipynb``: no {glue}, {prf:ref}, {numref} or directive fence
    left in the notebooks; the glued numbers are the book build's (here a record of one value
    standing for the build's), marked as such; every exercise keeps its number."""
    import json

    import jupytext

    from booktools import readable

    paths = next(p for p in CHAPTERS if p.stem == "paths")
    executed = tmp_path / "executed"
    glue = executed / "chapters" / "paths.glue.json"
    glue.parent.mkdir(parents=True)
    record = {"mime_prefix": "application/papermill.record/", "name": "paths-enum-L"}
    glue.write_text(
        json.dumps(
            {"paths-enum-L": {"data": {"text/plain": "'17'"}, "metadata": {"scrapbook": record}}}
        )
    )
    assert "{glue}`paths-enum-L`" in paths.read_text()
    out = tmp_path / "out"
    written = student.write(out, ipynb=True)
    for path in CHAPTERS:
        nb = jupytext.read(out / "chapters" / (path.stem + ".ipynb"))
        prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert not readable.UNREAD.findall(prose), (path.stem, readable.UNREAD.findall(prose)[:5])
        for raw in ("{glue", "{prf:ref}", "{numref}", "{solution-start}", "````{", "```{"):
            assert raw not in prose, (path.stem, raw)
        number = CHAPTERS.index(path) + 1
        assert prose.count(f"**Exercise {number}.") == path.read_text().count("{exercise-start}")
    assert len(written) == len(CHAPTERS)
    nb = readable.readable(student.student_notebook(paths.read_text()), paths, executed)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert readable.glued("paths-enum-L", "17") in prose and readable.GLUE_NOTE in prose
    # what depends on the build goes in canonical form: the same text with or without one
    again = readable.readable(student.student_notebook(paths.read_text()), paths, tmp_path / "no")
    assert [readable.canonical(c.source) for c in again.cells] == [
        readable.canonical(c.source) for c in nb.cells
    ]
