"""The book's figures: one style (:mod:`.style`: size, the smallest text, SVG output, colours),
the drawings more than one chapter needs (:mod:`.drawings`; collapse through depth:
:mod:`.depth`) and a figure's alt text read from what it draws (:mod:`.alt`).
``book.plotting.X`` reaches all four. The figures of one chapter
are its own module: :mod:`.toy` (the toy tasks, and the dynamics of "What the theorem does not
say") and :mod:`.later` (the results of ``rankcollapse.later``), reached as
``book.plotting.toy.X`` and ``book.plotting.later.X``.
"""

from . import alt, at_depth, depth, drawings, later, style, toy
from .alt import *  # noqa: F401,F403
from .alt import __all__ as _alt_all
from .depth import *  # noqa: F401,F403
from .depth import __all__ as _depth_all
from .drawings import *  # noqa: F401,F403
from .drawings import __all__ as _drawings_all
from .style import *  # noqa: F401,F403
from .style import __all__ as _style_all

__all__ = [*_style_all, *_drawings_all, *_depth_all, *_alt_all]
