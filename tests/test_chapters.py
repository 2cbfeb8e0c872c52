"""Every chapter in _toc.yml executes in fast mode with papermill, and is deterministic.

A new chapter is covered by adding it to _toc.yml; nothing here needs to change.

Determinism is checked on runs the suite makes anyway: the papermill run of each chapter here
(seed 0, fast) against the student edition's run (seed 0, fast, another process: the same
chapter with its solutions taken out), compared on every glued value and every figure's pixels
(``booktools.outputs``; the printed lines differ where the exercises' checks report); and one more
run per chapter at seed 1, which must change at least one glued value. The runs are made once per
session, up front and in parallel (the ``runs`` fixture, tests/conftest.py), and the book build
takes its chapters from the seed-0 runs (``built_book``): no chapter is executed twice.
"""

import pytest

from booktools import ROOT
from booktools.outputs import differences, read_executed, results
from booktools.toc import toc_notebooks

CHAPTERS = toc_notebooks()

# Chapters whose results do not depend on the seed, each with the reason; every other chapter
# must change a glued value when the seed changes.
NO_RANDOM_DRAW: dict[str, str] = {}


def test_toc_lists_chapters():
    assert CHAPTERS, "no notebook chapters found in _toc.yml"
    for path in CHAPTERS:
        assert path.is_relative_to(ROOT / "chapters")


@pytest.mark.chapters
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_executes_in_fast_mode(path, runs):
    nb = runs(path)
    assert any(c["cell_type"] == "code" and c.get("outputs") for c in nb["cells"])


@pytest.mark.chapters
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_shows_the_same_results_as_the_book_build(path, built_book, runs):
    """The book shows this session's seed-0 run: the notebook the build wrote has its glued
    values, printed text and pixels (the run reached the page through jupyter-book's cache)."""
    theirs = read_executed(
        built_book / "jupyter_execute" / path.relative_to(ROOT).with_suffix(".ipynb")
    )
    ours = results(runs(path))
    assert ours["glue"], f"{path.name}: no glued value found"
    assert len(ours["figures"]) >= path.read_text().count("{glue:figure}"), (
        f"{path.name}: a figure is missing"
    )
    assert differences(ours, results(theirs), rtol=0) == []


@pytest.mark.chapters
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_same_seed_same_results(path, runs):
    """Two runs at seed 0 in separate processes (the chapter, and its student edition, which
    keeps every cell but the solutions) glue the same values and draw the same pixels."""
    ours, theirs = results(runs(path)), results(runs(path, student=True))
    assert ours["glue"] and set(ours["glue"]) == set(theirs["glue"]), (
        "the same glue names in both runs"
    )
    ours["text"] = theirs[
        "text"
    ] = []  # the exercises' checks print "correct" in one, "not attempted" in the other
    assert differences(ours, theirs, rtol=0) == []


@pytest.mark.chapters
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_another_seed_changes_the_random_quantities(path, runs):
    """Seed 1 against this session's seed-0 run: some glued value changes (the seed reaches the
    chapter's random draws), or the chapter is listed in NO_RANDOM_DRAW and none does."""
    seed0 = results(runs(path, 0))["glue"]
    seed1 = results(runs(path, 1))["glue"]
    assert set(seed0) == set(seed1), "the same glue names whatever the seed"
    changed = sorted(name for name in seed0 if seed0[name] != seed1[name])
    if path.stem in NO_RANDOM_DRAW:
        assert not changed, (
            f"{path.stem} is listed as drawing no random number, yet {changed} changed"
        )
    else:
        assert changed, f"{path.stem}: no glued value changed between seed 0 and seed 1"


CODE_WIDTH = (
    80  # what a code box shows on a 1280-pixel window (_static/book.css; tests/test_browser.py)
)
HIDDEN = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_visible_code_fits_the_page(path):
    """Code a reader sees on the page (cells not hidden by a tag) has no line wider than the box."""
    import jupytext

    long = [
        f"{len(line)}: {line}"
        for cell in jupytext.read(path).cells
        if cell.cell_type == "code" and not HIDDEN & set(cell.metadata.get("tags", []))
        for line in cell.source.splitlines()
        if len(line) > CODE_WIDTH
    ]
    assert not long, f"{path.name}: visible code lines over {CODE_WIDTH} characters:\n" + "\n".join(
        long
    )


# What a chapter may import: the library, the book layer (rankbook), numpy and matplotlib (and two
# standard-library modules of pure arithmetic). An exercise may also import torch: its solutions
# are the reader's code, on the tensors the library returns.
CHAPTER_IMPORTS = {"rankcollapse", "rankbook", "numpy", "matplotlib", "math", "itertools"}
EXERCISE_IMPORTS = CHAPTER_IMPORTS | {"torch"}


def chapter_imports(path):
    """``(top-level module, in an exercise?, cell source's first line)`` per import: in the
    Exercises section, or inside an exercise or its solution elsewhere (a "build it yourself" in the
    text)."""
    import ast

    import jupytext

    found, in_section, in_block = [], False, False
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("## "):
                    in_section = line.strip() == "## Exercises"
                if "{exercise-start}" in line or "{solution-start}" in line:
                    in_block = True
                elif "{exercise-end}" in line or "{solution-end}" in line:
                    in_block = False
            continue
        in_exercises = in_section or in_block
        if cell.cell_type != "code":
            continue
        source = "\n".join(
            l for l in cell.source.splitlines() if not l.lstrip().startswith(("%", "!"))
        )
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found += [(a.name.split(".")[0], in_exercises, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                found.append(
                    (
                        (node.module or "").split(".")[0] if not node.level else ".",
                        in_exercises,
                        node.module or ".",
                    )
                )
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_imports_only_the_library_numpy_and_matplotlib(path):
    """Outside its exercises a chapter imports nothing but rankcollapse, the book's layer
    (rankbook), numpy and matplotlib (math, itertools); the exercises (and their solutions) may
    add torch."""
    imports = chapter_imports(path)
    assert any(top == "rankcollapse" for top, _, _ in imports), (
        f"{path.name} does not import the library"
    )
    bad = [
        f"{name}{' (in the exercises)' if ex else ''}"
        for top, ex, name in imports
        if top not in (EXERCISE_IMPORTS if ex else CHAPTER_IMPORTS)
    ]
    assert not bad, (
        f"{path.name} imports {', '.join(bad)}: use the library (rc.*) or the book layer (book.*) "
        "instead"
    )


def test_the_import_check_finds_a_forbidden_import(tmp_path):
    """The check above sees a body's torch and a nested import, and allows torch in the
    exercises."""
    chapter = tmp_path / "c.md"
    header = "---\n" + CHAPTERS[0].read_text().split("---\n", 2)[1] + "---\n"  # a real chapter's
    chapter.write_text(
        header + "# C\n\n```{code-cell} ipython3\nimport rankcollapse as rc\n```\n\n## 1. Body\n\n"
        "```{code-cell} ipython3\nif True:\n    import torch.nn\n```\n\n"
        "````{exercise-start}\n:label: ex-c\n````\n\n```{code-cell} ipython3\nimport torch.linalg\n"
        "```\n\n"
        "````{exercise-end}\n````\n\n```{code-cell} ipython3\nimport torch.fft\n```\n\n## "
        "Exercises\n\n"
        "```{code-cell} ipython3\nimport torch\nfrom scipy import linalg\n```\n"
    )
    assert chapter_imports(chapter) == [
        ("rankcollapse", False, "rankcollapse"),
        ("torch", False, "torch.nn"),
        ("torch", True, "torch.linalg"),
        ("torch", False, "torch.fft"),
        ("torch", True, "torch"),
        ("scipy", True, "scipy"),
    ]
    with pytest.raises(AssertionError, match="torch.nn, torch.fft, scipy \\(in the exercises\\)"):
        test_chapter_imports_only_the_library_numpy_and_matplotlib(chapter)
