"""booktools.ext.a11y: every figure's alt text reaches the page from its SVG (an image without
one fails); the bibliography's entries are list items."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from docutils import nodes  # noqa: E402
from docutils.frontend import get_default_settings  # noqa: E402
from docutils.parsers.rst import Parser  # noqa: E402
from docutils.utils import new_document  # noqa: E402

import rankbook as book  # noqa: E402
from booktools.ext import a11y  # noqa: E402


class _App:
    """What add_alt_text reads of Sphinx's application: the sources' folder and the page's name."""

    def __init__(self, srcdir):
        self.srcdir = str(srcdir)
        self.env = type("Env", (), {"docname": "chapters/page"})()


def _doctree(*uris):
    doc = new_document("page", get_default_settings(Parser))
    for uri in uris:
        doc += nodes.image(uri=uri)
    return doc


def _figure_svg(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0], label="falls")
    ax.set(xlabel="layer", title="a title")
    ax.legend()
    shown = book.FigureSVG.of(fig)
    plt.close(fig)
    path = tmp_path / "figure.svg"
    path.write_text(shown.svg)
    return path, shown.alt


def test_the_alt_text_comes_from_the_figures_svg(tmp_path):
    path, alt = _figure_svg(tmp_path)
    assert a11y.svg_description(path) == alt and "“a title”" in alt
    doc = _doctree(str(path))
    a11y.add_alt_text(_App(tmp_path), doc)
    assert [img["alt"] for img in doc.findall(nodes.image)] == [alt]


def test_an_image_without_alt_text_is_a_warning(tmp_path, monkeypatch):
    """An image whose SVG has no description, or that is not an SVG, warns: the -W build fails."""
    bare = tmp_path / "bare.svg"
    bare.write_text('<svg xmlns="http://www.w3.org/2000/svg"></svg>')
    warned = []
    monkeypatch.setattr(a11y.logger, "warning", lambda msg, *args, **kw: warned.append(msg % args))
    a11y.add_alt_text(_App(tmp_path), _doctree(str(bare), "missing.png"))
    assert len(warned) == 2 and all("has no alt text" in w for w in warned), warned


def test_an_alt_text_given_by_the_page_is_kept(tmp_path):
    path, _ = _figure_svg(tmp_path)
    doc = _doctree(str(path))
    next(doc.findall(nodes.image))["alt"] = "the directive's own"
    a11y.add_alt_text(_App(tmp_path), doc)
    assert next(doc.findall(nodes.image))["alt"] == "the directive's own"


@pytest.mark.build
def test_every_figure_of_the_built_book_has_its_alt_text(built_book):
    """In the built HTML every <img> of a page has alt text; a figure's is its SVG's description."""
    import html.parser
    import urllib.parse

    class Images(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.found = []

        def handle_starttag(self, tag, attrs):
            if tag == "img":
                self.found.append(dict(attrs))

    html_dir = built_book / "html"
    checked = 0
    for page in html_dir.rglob("*.html"):
        if page.relative_to(html_dir).parts[0] in ("_static", "_sources"):
            continue
        parser = Images()
        parser.feed(page.read_text())
        for img in parser.found:
            src = urllib.parse.unquote(img.get("src", ""))
            assert (img.get("alt") or "").strip(), (
                f"{page.relative_to(html_dir)}: {src} has no alt text"
            )
            if "_images/" in src and src.endswith(
                ".svg"
            ):  # a figure (Sphinx copies them to _images)
                assert img["alt"] == a11y.svg_description(page.parent / src)
                checked += 1
    assert checked >= 20, checked


def test_bibliography_entries_are_list_items():
    body = (
        '<div role="list" class="citation-list">'
        '<div class="citation" role="doc-biblioentry">x</div></div>'
    )
    assert a11y.list_items(body) == (
        '<div role="list" class="citation-list"><div class="citation" role="listitem">x</div></div>'
    )
