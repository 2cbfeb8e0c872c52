"""What a chapter's start and prose need: its run (mode, seed, sizes), seeding, figure style, glued numbers.

``run = rc.book.start("<chapter>", mode, seed)``, in the cell right after the chapter's
``parameters`` cell, is a chapter's one entry point: it checks ``mode`` and ``seed``, applies the
``RANKCOLLAPSE_MODE`` override, seeds Python's, numpy's and torch's global generators from
``seed`` (the one place anything seeds them; library functions take their own seeds), sets
torch's thread count from ``RANKCOLLAPSE_THREADS`` and the book's figure style, and returns the
chapter's :class:`rankcollapse.presets.Run`. ``rc.book.glue(name, value, fmt)`` inserts a computed number
into the prose with myst-nb's ``glue`` (written ``{glue}`name``` in the text), formatted here so
the prose never types a number by hand. Where myst-nb is not installed (a chapter run on Colab),
there is no prose to glue into: ``glue`` keeps quiet (or shows the value when asked to display
it) and ``glue_figure`` shows the figure, so the notebook still runs and shows what it computes.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from ._env import threads_from_env
from ._validate import check_seed

__all__ = ["start", "glue", "glue_figure", "Formatted", "fmt_sci"]


def _seed_globally(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (only :func:`start` calls this)."""
    seed = check_seed("seed", seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def start(chapter: str, mode: str = "full", seed: int = 0):
    """A chapter's start: its :class:`~rankcollapse.presets.Run` in ``mode`` with ``seed``, every
    global generator seeded from ``seed``, torch's threads and the figure style set.

    Call it in the cell right after the ``parameters`` cell, with that cell's ``mode`` and
    ``seed`` (``run = rc.book.start("paths", mode, seed)``), so that the seed a reader passes
    (papermill's ``parameters={"seed": 1}``) is the one that seeds. ``chapter`` is a key of
    ``rc.presets.PRESETS``; ``mode`` is ``"fast"`` or ``"full"`` (``RANKCOLLAPSE_MODE`` overrides
    it, saying so); ``seed`` an integer with ``0 <= seed < 2**32``. Bad values raise before
    anything is seeded.
    """
    from .plotting import use_book_style
    from .presets import get

    run = get(chapter, mode, seed)
    threads = threads_from_env()
    _seed_globally(run.seed)
    if threads is not None:
        torch.set_num_threads(threads)
    use_book_style()
    return run


class Formatted:
    """A value shown as preformatted text (its ``repr`` is the formatted string, no quotes)."""

    def __init__(self, value, text: str):
        self.value, self.text = value, text

    def __repr__(self):
        return self.text

    def _repr_markdown_(self):
        return self.text


def fmt_sci(x: float, digits: int = 1) -> str:
    """``x`` in LaTeX-free scientific notation for prose: ``3.2e-15`` -> ``3.2 × 10⁻¹⁵``."""
    x = float(x)
    if x == 0 or not np.isfinite(x):
        return f"{x:g}"
    mant, exp = f"{x:.{digits}e}".split("e")
    exp = int(exp)
    if -3 <= exp <= 3:
        return f"{x:.{digits + 1}g}"
    sup = str(exp).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{mant} × 10{sup}"


def _myst_glue():
    """myst-nb's ``glue``, or ``None`` where myst-nb is not installed."""
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return None
    return _glue


def _show(obj) -> None:
    """Display ``obj`` as a cell output (IPython), or print it outside a notebook."""
    try:
        from IPython.display import display
    except ImportError:
        print(repr(obj))
    else:
        display(obj)


def glue(name: str, value, fmt: str | None = "{:.3g}", display: bool = False) -> None:
    """Glue ``value`` under ``name`` for the prose (``{glue}`name```).

    ``fmt`` is a format string (``"{:.2f}"``, ``"{:,}"``) or ``"sci"`` for
    :func:`fmt_sci`; ``None`` glues the value as it is (figures, tables).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"glue needs a non-empty name, got {name!r}")
    if fmt is None:
        shown = value
    elif fmt == "sci":
        shown = Formatted(value, fmt_sci(value))
    else:
        shown = Formatted(value, fmt.format(value))
    _glue = _myst_glue()
    if _glue is not None:
        _glue(name, shown, display=display)
    elif display:
        _show(shown)


def glue_figure(name: str, fig) -> None:
    """Glue a matplotlib figure for a ``{glue:figure}`` directive and close it.

    The figure is also shown as the cell's output (so a reader running the notebook sees it);
    tag the cell ``remove-output`` so the built page shows it once, where the directive puts it.
    """
    import matplotlib.pyplot as plt

    _glue = _myst_glue()
    if _glue is not None:
        _glue(name, fig, display=True)
    else:
        _show(fig)
    plt.close(fig)
