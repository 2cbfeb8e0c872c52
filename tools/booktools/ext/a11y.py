"""The pages' accessibility: alt text for the book's figures, from the figures themselves (an image
without one fails the build), and the bibliography's list read as a list.

1. Alt text.
``book.glue_figure`` writes each figure's alt text (``book.plotting.alt_text``: its panels,
axes, curves and legends, read from what the code drew) into the SVG's metadata, as its
``<dc:description>``. myst-nb's ``{glue:figure}`` passes only the directive's own ``:alt:``
option to the page's ``<img>`` (an output's metadata gives width and height, nothing else), so
this extension reads the description out of every image file a notebook output wrote and sets it
as the image's ``alt``, when the directive did not give one. An image left with no alt text at
all is a warning, which fails the book's ``-W`` build: every figure says what it shows.

2. The bibliography (docutils' HTML writer) is a ``role="list"`` whose entries have the role
``doc-biblioentry``, which ARIA 1.2 deprecates and which is not a list item: screen readers and
axe-core ("aria-required-children", critical) find a list with no items. Each entry's role is
made ``listitem``.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

_DESCRIPTION = re.compile(r"<dc:description>(.*?)</dc:description>", re.S)


def svg_description(path: Path) -> str | None:
    """The ``<dc:description>`` of the SVG file at ``path`` (matplotlib's ``metadata``), or
    ``None``."""
    try:
        head = path.read_text(errors="replace")[:20000]  # the metadata comes first
    except OSError:
        return None
    m = _DESCRIPTION.search(head)
    return unescape(m.group(1)).strip() or None if m else None


def _image_file(app, docname: str, uri: str) -> Path | None:
    srcdir = Path(app.srcdir)
    for candidate in (Path(uri), srcdir / uri, (srcdir / docname).parent / uri):
        if candidate.is_file():
            return candidate
    return None


def add_alt_text(app, doctree) -> None:
    """Every image of the page gets its alt text (see the module); one without is a warning."""
    docname = app.env.docname
    for image in doctree.findall(nodes.image):
        if image.get("alt", "").strip():
            continue
        uri = image.get("uri", "")
        path = _image_file(app, docname, uri)
        alt = svg_description(path) if path is not None and path.suffix == ".svg" else None
        if alt:
            image["alt"] = alt
        else:
            logger.warning(
                "image %s has no alt text (glue figures with book.glue_figure, which writes it; "
                "give other images an alt text)",
                uri,
                location=image,
            )


BIBLIOENTRY = 'role="doc-biblioentry"'


def list_items(body: str) -> str:
    """``body`` (a page's HTML) with each bibliography entry a list item (see the module)."""
    return body.replace(BIBLIOENTRY, 'role="listitem"')


def _pages_lists(app, pagename, templatename, context, doctree) -> None:
    if BIBLIOENTRY in context.get("body", ""):
        context["body"] = list_items(context["body"])


def setup(app):
    app.connect("doctree-read", add_alt_text)
    app.connect("html-page-context", _pages_lists)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
