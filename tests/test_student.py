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


def _assigned_at_top(source: str) -> set[str]:
    """The names a cell binds in the notebook's namespace (assignments, loops, defs; imports
    left out: a module imported twice is the same module)."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(source))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    # the names bound inside functions are their own (a def's body is walked too): keep the
    # module level's only
    inner = {
        n.id
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.Lambda))
        for n in ast.walk(f)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    top = {
        n.id
        for stmt in tree.body
        if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef))
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    return (names - inner) | top


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_chapter_code_rebinds_a_name_a_student_defines(path):
    """Issue 46, item 6: a chapter cell outside the exercises that binds a name an exercise's
    stub defines (paths section 4 once set ``by_length`` to a dict) breaks the student's check
    after Run All. The exercises' own value names (``prediction``, ``answer``), which every
    predict or read-off exercise sets anew, are the students' in every exercise: none of the
    chapter's code may bind them either."""
    import jupytext

    nb = jupytext.reads(student.strip_solutions(path.read_text()), fmt="md:myst")
    inside, theirs, ours = False, set(), {}
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for line in cell.source.split("\n"):
                if "{exercise-start}" in line:
                    inside = True
                elif "{exercise-end}" in line:
                    inside = False
            continue
        if cell.cell_type != "code":
            continue
        names = _assigned_at_top(cell.source)
        if inside:
            theirs |= names
        else:
            for name in names:
                ours.setdefault(name, k)
    clash = {name: f"code cell {ours[name]}" for name in theirs & set(ours)}
    assert theirs and not clash, clash


def test_the_notebooks_check_says_what_the_grader_will_of_an_answer_calling_the_library():
    """Issue 46, item 3: an answer calling the library function its check compares against is
    'correct' but scores 0 when graded ('used the reference'); the notebook's check says so, and
    the rule is stated in the student version before the first exercise of every chapter."""
    import rankbook as book
    import rankcollapse as rc

    def mean_length(L, H):  # the chapter itself calls this function
        return rc.paths.mean_path_length(L, H)

    def own(L, H):
        return L * H / (H + 1)

    called = book.checks.check("paths.mean_length", mean_length, quiet=True)
    assert called.status == "correct" and called.credit == 0
    assert "but it calls the library's answer, rc.paths.mean_path_length: 0 points" in repr(called)
    alone = book.checks.check("paths.mean_length", own, quiet=True)
    assert alone.credit == 1 and "library" not in repr(alone)
    for path in CHAPTERS:
        text = student.strip_solutions(path.read_text())
        rules = text.index("**How your answers are graded.**")
        assert rules < text.index("{exercise-start}"), path.stem
        assert "0 points when graded" in text[rules : rules + 2000]


def test_points_follow_the_rule_and_every_exercise_shows_them():
    """Issue 46, item 4: a checked exercise is worth its difficulty, an explain or prove one its
    rubric's points (each criterion 1 or 2), every exercise graded by hand has a rubric, and the
    student version prints each exercise's points after its ratings."""
    import re

    import rankbook as book
    from booktools.grade_plan import chapter_specs

    ratings = re.compile(r":label: (ex-[\w-]+)\n`+\n\n\*\*([^*]+)\*\*\s*\(difficulty\s+(\d)/3")
    difficulty = {
        m[1]: (int(m[3]), m[2]) for path in CHAPTERS for m in ratings.finditer(path.read_text())
    }
    for spec in chapter_specs().values():
        for c in spec.checks:
            assert c.points == difficulty[c.label][0], (c.id, c.points)
        for h in spec.hand:
            if h.check is None:
                assert h.label in book.checks.RUBRICS, h.label
                assert {p for p, _ in book.checks.RUBRICS[h.label].criteria} <= {1, 2}
                # the label says what is asked: a body asking for a proof is labelled Prove
                title = difficulty[h.label][1]
                assert title.startswith(("Explain: ", "Prove: ")), title
    for path in CHAPTERS:
        text = student.strip_solutions(path.read_text())
        shown = re.findall(r"minutes, (\d+) points?\)", text)
        assert len(shown) == text.count("{exercise-start}") > 0, path.stem
    lb = student.strip_solutions((CHAPTERS[0].parent / "lower_bound.md").read_text())
    assert (
        "**Prove: from one layer to many** (difficulty 3/3, importance 3/3, 20 minutes, 4 points)"
        in lb
    )
