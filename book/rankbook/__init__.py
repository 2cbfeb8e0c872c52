"""rankbook: the book's own layer above the library ``rankcollapse``.

A chapter imports it beside the library (``import rankbook as book``) and writes
``run = book.start("<chapter>", mode, seed)``, ``book.glue(name, value, fmt)``,
``book.glue_figure(name, fig)`` and ``book.Table(header, rows)`` (the page helpers of
:mod:`.page` and :mod:`.tables`, re-exported here). Its modules, loaded on first use:

- :mod:`.page`: a chapter's start, glued numbers, figures and tables;
- :mod:`.tables`: tables rendered for the page, notebooks and plain text;
- :mod:`.evidence`: a chapter's qualitative claims with the condition that makes each true;
- :mod:`.spans`: where the prose states them (``[sentence]{.claim #claim-NAME}``);
- :mod:`.presets`: the sizes of every chapter in ``fast`` and ``full`` mode (``book.presets.get``);
- :mod:`.checks`: the exercises and their checks (``book.checks.check``);
- :mod:`.plotting`: the figures' style, drawings, alt text and each chapter's figures
  (loads matplotlib when a figure is drawn);
- :mod:`.explorer`: the interactive explorer of skip strength and depth.

``rankbook`` imports ``rankcollapse``; the library never imports ``rankbook``
(``tests/test_layering.py``).
"""

import importlib

from .page import *  # noqa: F403
from .page import __all__ as _page_all
from .tables import *  # noqa: F403
from .tables import __all__ as _tables_all

_MODULES = ("page", "tables", "evidence", "spans", "presets", "checks", "plotting", "explorer")

__all__ = [*_MODULES, *_page_all, *_tables_all]


def __getattr__(name):
    if name in _MODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'rankbook' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_MODULES))
