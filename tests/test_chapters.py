"""Every chapter in _toc.yml executes in fast mode with papermill, and is deterministic.

A new chapter is covered by adding it to _toc.yml; nothing here needs to change.
"""

import os

import pytest

from chapters_util import ROOT, execute, text_outputs, toc_notebooks

CHAPTERS = toc_notebooks()


def test_toc_lists_chapters():
    assert CHAPTERS, "no notebook chapters found in _toc.yml"
    for path in CHAPTERS:
        assert path.is_relative_to(ROOT / "chapters")


@pytest.mark.chapters
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_executes_in_fast_mode(path):
    nb = execute(path, mode="fast")
    assert any(c["cell_type"] == "code" and c.get("outputs") for c in nb["cells"])


@pytest.mark.chapters
@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_prints_the_same_numbers_as_the_book_build(path, built_book):
    """Same seed, same mode: the papermill run and the book build's run print the same text."""
    import nbformat

    ours = ROOT / "_build" / "papermill" / (path.stem + ".ipynb")
    theirs = built_book / "jupyter_execute" / path.relative_to(ROOT).with_suffix(".ipynb")
    if not ours.exists():
        pytest.skip("the papermill run of this chapter did not happen in this session")
    ours_nb = nbformat.read(ours, as_version=4)
    # papermill adds a cell with the injected parameters: leave it out
    ours_nb["cells"] = [c for c in ours_nb["cells"] if "injected-parameters" not in c["metadata"].get("tags", [])]
    # the book build sets RANKCOLLAPSE_MODE=fast, which the presets announce in one printed line
    # and the checks say that they ran the reference solution (rc.checks.in_book_build)
    import re

    verdict = re.compile(r"^✔ (\S+): checked against the reference solution\.\n  It passes;.*$", re.M)

    def strip(cells):
        return [[verdict.sub(r"✔ \1: correct.", line) for line in c if "overrides mode" not in line] for c in cells]

    assert strip(text_outputs(ours_nb)) == strip(text_outputs(nbformat.read(theirs, as_version=4)))


CODE_WIDTH = 80  # what a code box shows on a 1280-pixel window (_static/book.css; tests/test_browser.py)
HIDDEN = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_visible_code_fits_the_page(path):
    """Code a reader sees on the page (cells not hidden by a tag) has no line wider than the box."""
    import jupytext

    long = [f"{len(line)}: {line}" for cell in jupytext.read(path).cells
            if cell.cell_type == "code" and not HIDDEN & set(cell.metadata.get("tags", []))
            for line in cell.source.splitlines() if len(line) > CODE_WIDTH]
    assert not long, f"{path.name}: visible code lines over {CODE_WIDTH} characters:\n" + "\n".join(long)
