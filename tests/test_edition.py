"""The student edition of the HTML book (booktools.edition) and the cell-by-cell stripping of
solutions it relies on (booktools.student.strip_notebook)."""

import json

import jupytext
import nbformat
import pytest

from booktools import ROOT, edition, student
from booktools.toc import chapter_key, toc_files, toc_notebooks

CHAPTERS = toc_notebooks()


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_stripping_cells_removes_what_stripping_the_source_removes(path):
    text = path.read_text()
    by_cells = student.strip_notebook(jupytext.read(path))
    by_source = student.student_notebook(text)
    code = lambda nb: [c.source for c in nb.cells if c.cell_type == "code"]  # noqa: E731
    prose = lambda nb: " ".join(
        " ".join(c.source for c in nb.cells if c.cell_type == "markdown").split()
    )  # noqa: E731
    assert code(by_cells) == code(by_source) and prose(by_cells) == prose(by_source)
    assert len(code(by_cells)) < len(code(jupytext.read(path)))
    assert "solution-start" not in prose(by_cells) and "exercise-start" in prose(by_cells)


def test_a_malformed_solution_in_a_notebook_is_refused():
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("````{solution-start} e\n````\nno end")]
    )
    with pytest.raises(ValueError, match="malformed"):
        student.strip_notebook(nb)


def test_the_toc_loses_only_the_guide():
    import yaml

    toc = edition.without_guide(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    kept = [f for f in toc_files() if f != "instructors"]
    assert len(kept) == len(toc_files()) - 1
    assert "instructors" not in json.dumps(toc) and all(f in json.dumps(toc) for f in kept)


def test_a_link_to_the_guide_becomes_text():
    text = (
        "see {doc}`instructors`, {doc}`the guide </instructors>` and {ref}`instructors`; "
        "{doc}`notation`"
    )
    out = edition.GUIDE_LINK.sub(edition.GUIDE_TEXT, text)
    assert out.count(edition.GUIDE_TEXT) == 3 and "{doc}`notation`" in out


def test_glued_values_are_put_back_under_their_prefix():
    glue = {
        "a": {
            "output_type": "display_data",
            "metadata": {"scrapbook": {"name": "a", "mime_prefix": "x/"}},
            "data": {"text/plain": "1"},
        },
        "fig": {
            "output_type": "display_data",
            "metadata": {"scrapbook": {"name": "fig", "mime_prefix": ""}},
            "data": {"image/svg+xml": "<svg/>"},
        },
    }
    cell = edition.glue_cell(glue)
    assert [o["data"] for o in cell.outputs] == [{"x/text/plain": "1"}] and cell.metadata[
        "tags"
    ] == ["remove-cell"]


@pytest.mark.build
def test_the_student_edition_holds_no_solution_and_no_guide(student_book):
    assert not (student_book / "instructors.html").exists()
    for f in toc_files():
        if f != "instructors":
            assert (student_book / (f.removesuffix(".md") + ".html")).exists(), f
    # every solution's code, as the sources hold it, is nowhere in the edition's files
    solutions = []
    for path in CHAPTERS:
        nb = jupytext.read(path)
        kept = {c.source for c in student.strip_notebook(nb).cells if c.cell_type == "code"}
        solutions += [c.source for c in nb.cells if c.cell_type == "code" and c.source not in kept]
    kept_lines = {
        line.strip()
        for path in CHAPTERS
        for c in student.student_notebook(path.read_text()).cells
        for line in c.source.splitlines()
    }  # a stub's signature is the solution's too
    lines = {
        line.strip() for s in solutions for line in s.splitlines() if len(line.strip()) > 30
    } - kept_lines
    assert len(lines) > 20
    found = []
    for file in student_book.rglob("*"):
        if file.is_file() and file.suffix in (".html", ".ipynb", ".md", ".txt", ".js", ".json"):
            text = file.read_text(errors="replace")
            found += [
                f"{file.relative_to(student_book)}: {line}"
                for line in lines
                if line in text or json.dumps(line)[1:-1] in text
            ]
            assert "instructors.html" not in text, file
    assert not found, "\n".join(found[:20])


@pytest.mark.build
def test_the_student_edition_shows_the_book_builds_numbers(built_book, student_book):
    """Same glued numbers as the book: every glued value the book's page shows, the student page
    shows."""
    for path in CHAPTERS:
        rel = chapter_key(path) + ".html"
        page = (student_book / rel).read_text()
        assert "{glue" not in page and 'class="solution' not in page, rel
        book = (built_book / "html" / rel).read_text()
        glue = json.loads(
            (built_book / "jupyter_execute" / (chapter_key(path) + ".glue.json")).read_text()
        )
        shown = [
            d["data"].get("text/markdown") or d["data"].get("text/plain", "").strip("'")
            for d in glue.values()
            if d["metadata"]["scrapbook"]["mime_prefix"]
        ]
        shown = [v for v in shown if v and len(v) > 3 and v in book]
        assert len(shown) >= 5, rel
        missing = [v for v in shown if v not in page]
        assert not missing, (rel, missing)
        # the student notebook offered for download is the one handed out (tests/test_student.py
        # runs it)
        offered = jupytext.read(student_book / "student" / (chapter_key(path) + ".ipynb"))
        handed_out = student.student_notebook(path.read_text())
        assert [c.source for c in offered.cells] == [c.source for c in handed_out.cells], rel


REPO = "https://github.com/org/book"


def test_the_crawl_finds_every_link_to_a_solution(tmp_path):
    """booktools.edition.crawl on a small site: every kind of leak it is meant to find, found,
    and the files that leak nothing pass."""
    from booktools.ext import release

    assert edition.STUDENT_PDF_NAME == release.STUDENT_PDF
    pdf = release.release_url(REPO, "0.1.0", "book-student.pdf")
    files = {
        "index.html": '<a href="intro.html">x</a>',
        "intro.html": (
            f'<a href="chapters/a.html#s">a</a> <a href="{pdf}">PDF</a> '
            '<a href="https://arxiv.org/abs/2103.03404">paper</a> <a href="#top">top</a> '
            '<a href="mailto:x@y.z">mail</a> <script src="_static/x.js"></script>'
        ),
        "_static/x.js": "var ok = 1;",
        "chapters/a.html": (
            '<a href="../student/chapters/a.ipynb">nb</a> <a href="../_sources/a.ipynb">src</a> '
            '<a href="b.html">b</a> <a href="../book.pdf">pdf</a> <a href="gone.html">?</a> '
            f'<a href="{REPO}">repo</a> <a href="{REPO}/blob/main/chapters/a.md">md</a> '
            f'<a href="{release.release_url(REPO, "0.1.0", "book.pdf")}">full</a> '
            '<a href="https://mybinder.org/v2/gh/org/book/main">binder</a> '
            '<a href="https://colab.research.google.com/github/org/book/blob/nb/chapters/a.ipynb">'
            'c</a> <a href="https://colab.research.google.com/github/org/book/blob/nb/student/'
            'chapters/a.ipynb">c</a> <a href="../../outside.html">out</a>'
        ),
        "chapters/b.html": '<div class="solution dropdown">x</div> <a href="../instructors.html">',
        "student/chapters/a.ipynb": '{"cells": [{"source": "stub"}]}',
        "_sources/a.ipynb": '{"cells": [{"source": "````{solution-start} e"}]}',
        "book.pdf": "%PDF",
        "instructors.html": "<h1>For instructors</h1>",
        "unlinked.html": '<div class="solution">never reached</div>',
    }
    site = tmp_path / "site"
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    seen, problems = edition.crawl(site, REPO)
    reached = {str(p.relative_to(site)) for p in seen}
    assert reached == set(files) - {"unlinked.html"} | {"chapters/gone.html"}
    by_file = {}
    for p in problems:
        name, what = p.split(": ", 1)
        by_file.setdefault(name, []).append(what)
    assert set(by_file) == {
        "chapters/a.html",
        "chapters/b.html",
        "chapters/gone.html",
        "_sources/a.ipynb",
        "book.pdf",
        "instructors.html",
    }, problems
    # the repository twice, the full PDF of the release, Binder, Colab, a file outside the site
    assert len(by_file["chapters/a.html"]) == 6
    assert len(by_file["chapters/b.html"]) == 2 and len(by_file["instructors.html"]) == 1


def test_the_student_editions_footer_and_pdf_links_name_the_student_pdf():
    from booktools.ext import release

    info = {"version": "0.1.0", "date": "2026-12-07", "sha": "0123456789abcdef", "changed": False}
    full = release.footer_html(info, REPO, "intro.html#how-to-cite", student=False)
    student = release.footer_html(info, REPO, "intro.html#how-to-cite", student=True)
    assert "/book.pdf" in full and f"{REPO}/commit/" in full
    assert "/book-student.pdf" in student and "/book.pdf" not in student
    assert REPO + "/commit" not in student and "commit 0123456" in student
    subs = release.pdf_substitutions(REPO, "0.1.0", student=True)
    assert set(subs) == {"pdf_link", "student_pdf_link", "pdf_links"}
    assert all("book-student.pdf" in v and "/book.pdf" not in v for v in subs.values())
    subs = release.pdf_substitutions(REPO, "0.1.0", student=False)
    assert "/book.pdf" in subs["pdf_links"] and "/book-student.pdf" in subs["pdf_links"]
    assert "{{ pdf_links }}" in (ROOT / "intro.md").read_text()


@pytest.mark.build
def test_a_crawl_of_the_student_site_finds_no_solution(student_book):
    """Every link of the student site followed from its first page: no page, notebook or PDF
    reached holds a solution or the guide, and nothing outside it links one (the full PDF, the
    repository, Binder, a Colab notebook with solutions)."""
    repository = notebooks_config()["repository"]["url"]
    seen, problems = edition.crawl(student_book, repository)
    assert not problems, "\n".join(problems[:30])
    reached = {str(p.relative_to(student_book.resolve())) for p in seen}
    for path in CHAPTERS:
        name = chapter_key(path)
        assert f"{name}.html" in reached and f"student/{name}.ipynb" in reached, name


def notebooks_config():
    from booktools.config import book_config

    return book_config()


def test_the_student_edition_does_not_print_a_predictions_measurement():
    """Issue 46, item 5: in the student edition (built from the executed notebooks, stripped
    cell by cell) the measurement right after a predict question's check has no output, so the
    page does not give the answer under the question; the other cells keep theirs."""
    path = ROOT / "chapters" / "paths.md"
    nb = jupytext.read(path)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", text="out\n")]
    cells = [c for c in student.strip_notebook(nb).cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(cells) if '"paths.predict_length"' in c.source)
    assert "length_distribution(12, 1)" in cells[at + 1].source and cells[at + 1].outputs == []
    assert sum(bool(c.outputs) for c in cells) == len(cells) - 1
