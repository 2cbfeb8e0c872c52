"""The whole book builds (fast mode) from a clean _build with no warning and no cell error."""

import pytest

from chapters_util import toc_files


@pytest.mark.build
def test_book_builds_and_every_page_exists(built_book):
    html = built_book / "html"
    assert (html / "index.html").exists()
    for f in toc_files():
        page = html / (f.removesuffix(".md") + ".html")
        assert page.exists(), f"{page} was not built"


@pytest.mark.build
def test_math_is_served_offline(built_book):
    """MathJax comes with the book (sphinx-mathjax-offline), not from a CDN."""
    page = (built_book / "html" / "chapters" / "paths.html").read_text()
    assert "cdn.jsdelivr" not in page and "mathjax" in page.lower()
    assert list((built_book / "html" / "_static").rglob("tex-chtml*.js"))


@pytest.mark.build
def test_glued_numbers_and_figures_are_in_the_pages(built_book):
    from chapters_util import ROOT, toc_notebooks

    for path in toc_notebooks():
        source = path.read_text()
        page = (built_book / "html" / path.relative_to(ROOT).with_suffix(".html")).read_text()
        # a glue key without a value fails the build (-W); here: no role is left as raw text,
        # and every glue:figure became an image
        assert "{glue}" not in page and "{glue:" not in page, path.name
        assert page.count("<img") >= source.count("{glue:figure}"), path.name
