"""The book's figures: one style (:mod:`.style`: size, the smallest text, SVG output, colours),
the drawings more than one chapter needs (:mod:`.drawings`) and a figure's alt text read from
what it draws (:mod:`.alt`). ``rc.plotting.X`` reaches all three.
"""

from . import alt, drawings, style
from .alt import *  # noqa: F401,F403
from .alt import __all__ as _alt_all
from .drawings import *  # noqa: F401,F403
from .drawings import __all__ as _drawings_all
from .style import *  # noqa: F401,F403
from .style import __all__ as _style_all
from .style import _svg_output  # noqa: F401  (rc.book.glue_figure)

__all__ = [*_style_all, *_drawings_all, *_alt_all]
