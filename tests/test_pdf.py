"""The PDF edition (booktools.pdf), built from the test session's book build, read back with
pdftotext.

Both PDFs are built once for this module from the chapters the session's fast book build executed
(tests/conftest.py's ``built_book``: no chapter runs again), and checked:

- every chapter's title is in the PDF, and a sample of each chapter's glued values that the HTML
  page shows (up to 8 a chapter, spread over its values) is in the PDF's text too;
- no "??" and no unresolved reference or citation in LaTeX's log;
- the PDF has the HTML book's figures: the same figure numbers (1.1, 1.2, ...), and as many
  included graphics as the pages have figure images;
- theorem, proof, exercise and solution boxes; the bibliography; the version, build date and commit;
- the student PDF has no solution: no "Solution to Exercise" heading and none of the solutions'
  code, which the book's PDF does show.

The time both PDFs take is printed (pytest -rP), not asserted: on this 2-core machine 39 to 48 s
alone, 44 s in a whole test session (the two editions at once). The module skips, saying so, when
TeX is not installed (``python3 tasks.py pdf`` installs it from Debian's packages; ``.ci/run``
does not).
"""

from __future__ import annotations

import html
import io
import re
import subprocess
import time
import unicodedata
from pathlib import Path

import pytest

from booktools import ROOT
from booktools.pdf import PDF, TEX_PACKAGES, build, missing_tools
from booktools.toc import chapter_key, toc_files, toc_notebooks

pytestmark = pytest.mark.build
SAMPLE = 8  # glued values checked per chapter


@pytest.fixture(scope="module")
def pdfs(built_book):
    missing = missing_tools()
    if missing:
        pytest.skip(
            f"TeX is not installed ({', '.join(missing)} missing; Debian: apt-get install "
            f"--no-install-recommends {' '.join(TEX_PACKAGES)}, or python3 tasks.py pdf)"
        )
    report = io.StringIO()
    start = time.monotonic()
    code = build(out=report)
    seconds = time.monotonic() - start
    if code:
        pytest.fail("the PDF failed to build:\n" + report.getvalue())
    print(report.getvalue() + f"both PDFs in {seconds:.0f} s")
    return {"book": PDF / "book.pdf", "student": PDF / "book-student.pdf", "seconds": seconds}


def _squash(text: str) -> str:
    """Text compared without its layout: Unicode-normalised (ligatures, superscripts), no
    whitespace, no soft hyphens, case folded."""
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "")
    text = text.translate(str.maketrans("‘’“”", "''\"\""))  # LaTeX's quotes are curly
    return re.sub(r"\s+", "", text).casefold()


def _pdf_text(path: Path) -> str:
    return subprocess.run(
        ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture(scope="module")
def texts(pdfs):
    return {name: _pdf_text(pdfs[name]) for name in ("book", "student")}


def _html_text(page: Path) -> str:
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


def _title(source: Path) -> str:
    m = re.search(r"^# (.+)$", source.read_text(), re.M)
    return m.group(1).strip()


def test_it_has_every_chapter_title(texts):
    text = _squash(texts["book"])
    for rel in toc_files()[1:]:  # the landing page's title is the book's (its title page)
        title = _title(ROOT / (rel.removesuffix(".md") + ".md"))
        assert _squash(title) in text, f"{rel}: title {title!r} not in the PDF"


def _glued_in_prose(built_book) -> dict[str, list[str]]:
    """Per chapter, the texts of the glued values its prose shows (``{glue}`name```), as the HTML
    page shows them (those the page does not show are left out)."""
    from booktools.outputs import glued_values, read_executed

    out = {}
    for source in toc_notebooks():
        key = chapter_key(source)
        names = re.findall(r"\{glue(?::text)?\}`([^`]+)`", source.read_text())
        values = glued_values(read_executed(built_book / "jupyter_execute" / f"{key}.ipynb"))
        page = _squash(_html_text(built_book / "html" / f"{key}.html"))
        shown = []
        for name in dict.fromkeys(names):
            text = (values.get(name) or {}).get("text/plain", "").strip().strip("'\"")
            if re.search(r"\d", text) and len(text) >= 3 and _squash(text) in page:
                shown.append(text)
        out[key] = shown
    return out


def _in_pdf_text(value: str, text: str, unhyphenated: str) -> bool:
    """Whether the PDF's squashed text shows ``value``. pdftotext joins a word broken at a line's
    end and drops the hyphen, also a hyphen of the word itself ("bert-base-cased" broken after
    "bert-" reads "bertbase-cased"); a value the text lacks as it is must then be there with its
    hyphens dropped (``unhyphenated``: the text without them)."""
    value = _squash(value)
    return value in text or ("-" in value and value.replace("-", "") in unhyphenated)


def test_it_shows_the_glued_values_of_the_html_book(built_book, texts):
    text = _squash(texts["book"])
    unhyphenated = text.replace("-", "")
    missing = []
    for key, shown in _glued_in_prose(built_book).items():
        assert len(shown) >= 3, f"{key}: only {len(shown)} glued values found on its HTML page"
        step = max(1, len(shown) // SAMPLE)
        sample = shown[::step][:SAMPLE]
        missing += [
            f"{key}: {value!r}" for value in sample if not _in_pdf_text(value, text, unhyphenated)
        ]
    assert not missing, "glued values the HTML page shows but the PDF does not:\n" + "\n".join(
        missing
    )


def test_no_unresolved_reference(pdfs, texts):
    for name in ("book", "student"):
        assert "??" not in texts[name], f"{name}: '??' (an unresolved reference) in the text"
    for source in ("source-book", "source-book-student"):
        log = (PDF / source / "_build" / "latex" / "book.log").read_text(errors="replace")
        undefined = re.findall(
            r"(?:Reference|Citation|Hyper reference) `[^']*' on page \d+ undefined", log
        )
        assert not undefined and "There were undefined references" not in log, (
            source,
            undefined[:5],
        )


def test_it_has_the_figures_of_the_html_book(built_book, texts):
    """The same numbered figures as the HTML pages, each with its graphic (a vector PDF converted
    from the figure's SVG)."""
    pages = [
        p
        for p in (built_book / "html").rglob("*.html")
        if p.relative_to(built_book / "html").parts[0] not in ("_static", "_sources")
    ]
    numbers, images = set(), 0
    for page in pages:
        text = page.read_text()
        for figure in re.findall(r"<figure\b.*?</figure>", text, re.S):
            m = re.search(r'class="caption-number">Fig\. ([\d.]+)', figure)
            if m:
                numbers.add(m.group(1).rstrip("."))
            images += len(re.findall(r"<img\b", figure))
    in_pdf = set(re.findall(r"^Fig\. (\d+\.\d+):", texts["book"], re.M))
    assert len(numbers) >= 20 and in_pdf == numbers, sorted(numbers ^ in_pdf)
    tex = (PDF / "source-book" / "_build" / "latex" / "book.tex").read_text()
    assert tex.count("\\sphinxincludegraphics") == images
    converted = list((PDF / "source-book" / "_build" / "latex").glob("*.pdf"))
    assert len([p for p in converted if p.name != "book.pdf"]) >= len(numbers), (
        "the SVG figures were not converted"
    )


def test_it_has_the_boxes_the_bibliography_and_the_links(texts):
    text = texts["book"]
    # the book's own theorems are numbered (the first is chapter 2's); the paper's are not
    for box in (
        "Theorem 2.1",
        "Theorem (The paper",
        "Definition 1.1",
        "Proof.",
        "Exercise 1.1",
        "Solution to Exercise 1.1",
    ):
        assert box in text, box
    assert "Attention is not all you need" in text and "Bibliography" in text
    tex = (PDF / "source-book" / "_build" / "latex" / "book.tex").read_text()
    assert (
        "\\begin{sphinxadmonition}" in tex
        and "\\sphinxhref{https://" in tex
        and "\\usepackage{hyperref}" in tex
    )


def test_it_says_its_version_build_date_and_commit(texts):
    from booktools.ext import release

    version = str(release.citation(ROOT)["version"])
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout
    for name, text in texts.items():
        first = " ".join(text.split("\f")[0].split())  # the title page
        assert f"Version {version}" in first, (name, first)
        assert re.search(rf"Built \d{{4}}-\d{{2}}-\d{{2}} from commit {head[:7]}", first), (
            name,
            first,
        )


def _solution_lines(built_book) -> list[str]:
    """Lines of the solutions' code (the cells booktools.student strips), long enough to be telling
    and not also in a cell the student keeps (a stub repeats its solution's ``def`` line)."""
    import nbformat

    from booktools.student import strip_notebook

    lines = []
    for source in toc_notebooks():
        nb = nbformat.read(
            built_book / "jupyter_execute" / f"{chapter_key(source)}.ipynb", as_version=4
        )
        kept = {c.source for c in strip_notebook(nb).cells if c.cell_type == "code"}
        kept_lines = {line.strip() for source in kept for line in source.splitlines()}
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.source not in kept:
                lines += [
                    line.strip()
                    for line in cell.source.splitlines()
                    if len(line.strip()) >= 30 and line.strip() not in kept_lines
                ]
    return lines


def test_the_student_pdf_has_no_solution(built_book, texts):
    book, student = _squash(texts["book"]), _squash(texts["student"])
    assert "Solution to Exercise" not in texts["student"] and "Exercise 1.1" in texts["student"]
    lines = _solution_lines(built_book)
    assert len(lines) >= 20
    shown = [line for line in lines if _squash(line) in book]
    assert len(shown) >= 0.9 * len(lines), (
        "the book's PDF should show the solutions' code (the check's control)"
    )
    leaked = [line for line in shown if _squash(line) in student]
    assert not leaked, "solution code in the student PDF:\n" + "\n".join(leaked[:10])


def test_a_value_broken_at_a_hyphen_is_still_found():
    """pdftotext's joining of a line-end hyphen is allowed for; a value that is not there is not."""
    text = _squash("the models bertbase-cased and gpt2 at 9.47e01")
    unhyphenated = text.replace("-", "")
    assert (
        _in_pdf_text("bert-base-cased, gpt2", text, unhyphenated) is False
    )  # the comma is not there
    assert _in_pdf_text("bertbase-cased and gpt2", text, unhyphenated)
    assert _in_pdf_text("bert-base-cased", text, unhyphenated)
    assert _in_pdf_text("9.47e-01", text, unhyphenated)
    assert not _in_pdf_text("9.48e-01", text, unhyphenated)
    assert not _in_pdf_text("robert-base", text, unhyphenated)
