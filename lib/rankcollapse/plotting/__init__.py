"""The book's figures: one style (:mod:`.style`: size, the smallest text, SVG output, colours)
and the drawings more than one chapter needs (:mod:`.drawings`). ``rc.plotting.X`` reaches both.
"""

from . import drawings, style
from .drawings import *  # noqa: F401,F403
from .drawings import __all__ as _drawings_all
from .style import *  # noqa: F401,F403
from .style import _svg_output  # noqa: F401  (rc.book.glue_figure)
from .style import __all__ as _style_all

__all__ = [*_style_all, *_drawings_all]
