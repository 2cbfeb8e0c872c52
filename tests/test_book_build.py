"""The whole book builds (fast mode) from a clean _build with no warning and no cell error."""

import pytest

from booktools import ROOT
from booktools.toc import chapter_key, toc_files, toc_notebooks


@pytest.mark.build
def test_book_builds_and_every_page_exists(built_book):
    html = built_book / "html"
    assert (html / "index.html").exists()
    for f in toc_files():
        page = html / (f.removesuffix(".md") + ".html")
        assert page.exists(), f"{page} was not built"


@pytest.mark.build
def test_the_sites_address_sends_the_reader_to_the_first_page(built_book):
    """index.html: a redirect to the first page with a language, a title, a link and the book's
    icon (without one a browser asks for /favicon.ico, a 404 in its console: booktools.ext)."""
    import re

    html = built_book / "html"
    index = (html / "index.html").read_text()
    first = toc_files()[0].removesuffix(".md") + ".html"
    assert f'<meta http-equiv="Refresh" content="0; url={first}">' in index
    assert f'<a href="{first}">' in index and '<html lang="en">' in index
    assert re.search(r"<title>[^<]+</title>", index)
    icon = re.search(r'<link rel="icon" href="([^"]+)">', index)
    assert icon and (html / icon.group(1)).is_file(), index


@pytest.mark.build
def test_math_is_served_offline(built_book):
    """MathJax comes with the book (sphinx-mathjax-offline), not from a CDN."""
    page = (built_book / "html" / "chapters" / "paths.html").read_text()
    assert "cdn.jsdelivr" not in page and "mathjax" in page.lower()
    assert list((built_book / "html" / "_static").rglob("tex-chtml*.js"))


@pytest.mark.build
def test_glued_numbers_and_figures_are_in_the_pages(built_book):
    for path in toc_notebooks():
        source = path.read_text()
        page = (built_book / "html" / path.relative_to(ROOT).with_suffix(".html")).read_text()
        # a glue key without a value fails the build (-W); here: no role is left as raw text,
        # and every glue:figure became an image
        assert "{glue}" not in page and "{glue:" not in page, path.name
        assert page.count("<img") >= source.count("{glue:figure}"), path.name
        # a declared claim's cell shows nothing: no Claim object printed into the page
        assert "Claim(chapter=" not in page, path.name


@pytest.mark.build
def test_bibliography_labels_are_author_year(built_book):
    """The bibliography's labels read as the text cites ("Dong et al., 2021"), not [1], [2]."""
    import re

    page = (built_book / "html" / "bibliography.html").read_text()
    labels = re.findall(r'<span class="label"><span class="fn-bracket">\[</span>([^<]*)<', page)
    assert len(labels) >= 10 and "Dong et al., 2021" in labels
    pattern = re.compile(r"[^\W\d][\w'’ -]*( et al\.| and [^\W\d][\w'’ -]*)?, \d{4}[a-z]?")
    assert all(pattern.fullmatch(label) for label in labels), labels
    assert len(set(labels)) == len(labels)


def test_author_year_labels_disambiguate():
    """Two entries that would share a label get a and b; two authors are both named."""
    from pybtex.database import parse_string

    from booktools.ext import bookext

    bib = parse_string(
        "@article{a, author={Noci, L. and Li, C.}, year={2023}, title={x}}"
        "@article{b, author={Noci, L. and Li, C.}, year={2023}, title={y}}"
        "@article{c, author={Castin, Val{\\'e}rie}, year={2024}, title={z}}"
        "@article{d, author={Brown, T. and others}, year={2020}, title={w}}",
        "bibtex",
    )
    labels = list(bookext.AuthorYearLabels().format_labels(bib.entries.values()))
    assert labels == [
        "Noci and Li, 2023a",
        "Noci and Li, 2023b",
        "Castin, 2024",
        "Brown et al., 2020",
    ]


def test_landing_page_maps_every_chapter():
    """The landing page's chapter map has a row for every chapter in _toc.yml."""
    intro = (ROOT / "intro.md").read_text()
    chapter_map = intro.split("## Chapter map", 1)[1].split("\n## ", 1)[0]
    for path in toc_notebooks():
        name = chapter_key(path)
        assert f"| {{doc}}`{name}` |" in chapter_map, (
            f"intro.md's chapter map has no row for {name}"
        )


@pytest.mark.build
def test_cross_references_do_not_double_their_label(built_book):
    """A reference renders its own label ("Theorem 1.1", "Fig. 2.3"): the prose must not also
    write the word before it ("Theorem Theorem 1.1")."""
    import re

    doubled = re.compile(
        r"\b(Theorem|Proposition|Definition|Lemma|Corollary|Exercise|Fig\.|Figure|Section|Equation)"
        r"\s*(?:<[^>]+>\s*)+\1\b"
    )
    found = []
    for f in toc_files():
        page = (built_book / "html" / (f.removesuffix(".md") + ".html")).read_text()
        found += [f"{f}: {m.group(0)[:120]}" for m in doubled.finditer(page)]
    assert not found, "\n".join(found)


def test_each_inline_script_is_written_once():
    """Sphinx 7.4 registers some inline scripts twice (file name None, then ""): the page got
    sphinx-thebe's `const THEBE_JS_URL` twice and threw on the second. bookext keeps one."""
    from sphinx.builders.html._assets import _JavaScript

    from booktools.ext import bookext

    thebe = "const THEBE_JS_URL = 'x';"
    scripts = [
        _JavaScript("a.js"),
        _JavaScript(None, body=thebe),
        _JavaScript("", priority=501, body=thebe),
        _JavaScript("a.js"),
        _JavaScript(None, body="var y = 1;"),
    ]
    kept = bookext.dedupe_scripts(scripts)
    assert [(s.filename, s.attributes.get("body")) for s in kept] == [
        ("a.js", None),
        (None, thebe),
        (None, "var y = 1;"),
    ]


@pytest.mark.build
def test_pages_load_thebe_once_and_offer_the_student_notebook(built_book):
    import json

    for path in toc_notebooks():
        page = (built_book / "html" / "chapters" / (path.stem + ".html")).read_text()
        assert page.count("const THEBE_JS_URL") <= 1, path.name
        assert f"../student/chapters/{path.stem}.ipynb" in page, path.name
        student = json.loads(
            (built_book / "html" / "student" / "chapters" / (path.stem + ".ipynb")).read_text()
        )
        source = "".join("".join(c["source"]) for c in student["cells"])
        assert "solution-start" not in source and "exercise-start" in source, path.name


@pytest.mark.build
def test_checks_in_the_book_say_they_ran_the_reference_solution(built_book):
    """In the book every check runs on the solution printed above it: the page must say so,
    not show the reader a pass ("✔ paths.count: correct.") before any attempt."""
    import re

    for path in toc_notebooks():
        page = (built_book / "html" / "chapters" / (path.stem + ".html")).read_text()
        n_checks = path.read_text().count("book.checks.check(")
        assert page.count("checked against the reference solution") == n_checks, path.name
        assert not re.search(r"✔ [\w.]+: correct", page), path.name


@pytest.mark.build
def test_the_book_build_executes_no_chapter_twice(built_book):
    """The session's seed-0 runs reach the book through jupyter-book's cache: jupyter-book finds
    every chapter there and executes none itself (the log says so per chapter)."""
    from booktools.build import LOG

    log = LOG.read_text()
    assert "Executing notebook" not in log, (
        "jupyter-book executed a chapter: the cache did not match its run"
    )
    assert log.count("Using cached notebook") == len(toc_notebooks())
