"""What a chapter's start and prose need: its run (mode, seed, sizes), seeding, figure style, glued
numbers.

``run = book.start("<chapter>", mode, seed)``, in the cell right after the chapter's
``parameters`` cell, is a chapter's one entry point: it checks ``mode`` and ``seed``, applies the
``RANKCOLLAPSE_MODE`` override, seeds Python's, numpy's and torch's global generators from
``seed`` (the one place anything seeds them; library functions take their own seeds), sets
torch's thread count from ``RANKCOLLAPSE_THREADS`` and the book's figure style, and returns the
chapter's :class:`rankbook.presets.Run`. ``book.glue(name, value, fmt)`` inserts a computed number
into the prose with myst-nb's ``glue`` (written ``{glue}`name``` in the text), formatted here so
the prose never types a number by hand. Where myst-nb is not installed (a chapter run on Colab),
there is no prose to glue into: ``glue`` keeps quiet (or shows the value when asked to display
it) and ``glue_figure`` shows the figure, so the notebook still runs and shows what it computes.
"""

from __future__ import annotations

import math
import random

import numpy as np
import torch

from rankcollapse._env import set_torch_threads, threads_from_env
from rankcollapse._validate import check_figure as _check_fig
from rankcollapse._validate import check_int
from rankcollapse.residual import (
    UNDERFLOW_LOG10,  # the science library's threshold; the page writes it
)

from .evidence import GLUE_PREFIX, Claim, declare
from .presets import Run
from .tables import Table

__all__ = [
    "start",
    "ChapterRun",
    "glue",
    "glue_figure",
    "FigureSVG",
    "Formatted",
    "fmt_sci",
    "fmt_sci_log10",
    "UNDERFLOW_LOG10",
    "glue_table",
]


def _seed_globally(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (only :func:`start` calls this, with
    the seed ``book.presets.get`` has checked)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def start(chapter: str, mode: str = "full", seed: int = 0):
    """A chapter's start: its :class:`~rankbook.presets.Run` in ``mode`` with ``seed``, every
    global generator seeded from ``seed``, torch's threads and the figure style set.

    Call it in the cell right after the ``parameters`` cell, with that cell's ``mode`` and
    ``seed`` (``run = book.start("paths", mode, seed)``), so that the seed a reader passes
    (papermill's ``parameters={"seed": 1}``) is the one that seeds. ``chapter`` is a key of
    ``book.presets.PRESETS``; ``mode`` is ``"fast"`` or ``"full"`` (``RANKCOLLAPSE_MODE`` overrides
    it, saying so); ``seed`` an integer with ``0 <= seed < 2**32``. Bad values raise before
    anything is seeded.
    """
    from .plotting import use_book_style
    from .presets import get

    got = get(chapter, mode, seed)
    run = ChapterRun(got.chapter, got.mode, got.seed, got.as_dict())
    set_torch_threads(threads_from_env())  # checked before anything is seeded
    _seed_globally(run.seed)
    use_book_style()
    return run


class ChapterRun(Run):
    """A chapter's run (:class:`rankbook.presets.Run`: mode, seed, sizes) that also declares
    the chapter's claims (:meth:`claim`). :func:`start` returns one."""

    def __init__(self, chapter: str, mode: str, seed: int, sizes: dict):
        super().__init__(chapter, mode, seed, sizes)
        self.__dict__["_claims"] = {}

    @property
    def claims(self) -> list[Claim]:
        """The claims declared so far in this run, in order."""
        return list(self.__dict__["_claims"].values())

    def claim(
        self,
        name: str,
        *sentence,
        section,
        condition: str,
        holds,
        numbers: dict | None = None,
        evidence: str,
        scale: str = "any",
        rate: float | None = None,
    ) -> Claim:
        """Declare a claim of the chapter's prose (:func:`rankbook.evidence.declare`): ``name``
        is the claim the prose marks ``[sentence]{.claim #claim-NAME}`` (the sentence is written
        there only, once), in ``section``; ``condition`` in words and ``holds`` its value in this
        run; ``numbers`` what decided it; ``evidence`` the seeds, depths and inputs behind it;
        ``rate`` the share of draws the sentence says it holds in (say it in words too), where it
        does not hold in every draw: then a false claim is recorded, not raised, and the claims
        sweep checks the share (:func:`rankbook.evidence.declare`).

        A false claim that this run checks raises :class:`rankbook.evidence.ClaimFailed`, naming
        it. The record is glued as ``claim.<name>`` (the status page's table of claims). A claim
        declared ``scale="full"`` and run in fast mode is not checked: the cell shows a note saying
        so, and whether it held in this small run (tag the cell ``remove-input``, so that the note
        reaches the page).
        """
        if sentence:
            raise TypeError(
                f"run.claim({name!r}, ...) takes the claim's name only: its sentence is written "
                f"once, in the prose, as [the sentence]{{.claim #claim-{name}}}"
            )
        claims = self.__dict__["_claims"]
        c = declare(
            self.chapter,
            self.mode,
            self.seed,
            name,
            section=section,
            condition=condition,
            holds=holds,
            numbers=numbers,
            evidence=evidence,
            scale=scale,
            taken=claims,
            rate=rate,
        )
        claims[c.name] = c
        glue(GLUE_PREFIX + c.name, Formatted(c.record(), c.json()), None)
        if not c.checked:
            _show(_FastNote(c))
        return c


class _FastNote:
    """What a fast run shows in place of a claim checked at the paper's scale only."""

    def __init__(self, claim: Claim):
        self.claim = claim

    def text(self) -> str:
        c = self.claim
        state = "holds" if c.holds else "does not hold"
        what = f'"{c.sentence}"' if c.sentence else f"{c.name!r} (section {c.section})"
        return (
            f"Fast run: the claim {what} is checked at the paper's scale (full mode) only; "
            f"in this small run it {state}."
        )

    def __repr__(self):
        return self.text()

    def _repr_markdown_(self):
        return f"*{self.text()}*"


class Formatted:
    """A value shown as preformatted text (its ``repr`` is the formatted string, no quotes)."""

    def __init__(self, value, text: str):
        self.value, self.text = value, text

    def __repr__(self):
        return self.text

    def _repr_markdown_(self):
        return self.text


def fmt_sci(x: float, digits: int = 1) -> str:
    """``x`` in LaTeX-free scientific notation for prose: ``3.2e-15`` -> ``3.2 × 10⁻¹⁵``.

    ``digits``: digits after the mantissa's point, an integer in ``0 .. 16`` (others are refused).
    Values from ``10⁻³`` to below ``10⁴`` are written plainly (``0.85``) when ``digits + 1``
    significant digits show them so, and as ``mantissa × 10ⁿ`` otherwise: never in e-notation
    (``999.96`` -> ``1.0 × 10³``: the mantissa rounds up into the next decade)."""
    if isinstance(x, (str, bytes, bool)) or x is None:
        raise TypeError(f"x must be a number, got {type(x).__name__} {x!r:.40}")
    digits = check_int("digits", digits, minimum=0, maximum=16)
    x = float(x)
    if x == 0 or not np.isfinite(x):
        return f"{x:g}"
    mant, exp = f"{x:.{digits}e}".split("e")
    exp = int(exp)
    if -3 <= exp <= 3:
        plain = f"{x:.{digits + 1}g}"
        if "e" not in plain:
            return plain
    sup = str(exp).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{mant} × 10{sup}"


def fmt_sci_log10(log10_value: float) -> str:
    """``10 ** log10_value`` as :func:`fmt_sci` writes it, or "below 10⁻³⁰⁰" where the value has
    underflowed: at or below :data:`UNDERFLOW_LOG10`, ``-inf`` (the log of an exact 0) or NaN.
    ``log10_value``: a real number (a Python, numpy or 0-d torch number); a string is refused."""
    if isinstance(log10_value, (str, bytes, bool)) or log10_value is None:
        raise TypeError(
            f"log10_value must be a number, got {type(log10_value).__name__} {log10_value!r:.40}"
        )
    try:
        log10_value = float(log10_value)
    except (TypeError, ValueError):
        raise TypeError(
            f"log10_value must be a number, got {type(log10_value).__name__} {log10_value!r:.40}"
        ) from None
    if not log10_value > UNDERFLOW_LOG10:
        return "below 10⁻³⁰⁰"
    if log10_value == math.inf:
        return "inf"
    if log10_value < 300:
        return fmt_sci(10**log10_value)
    # beyond float range (the log form exists for these): mantissa and exponent from the log itself
    exp = math.floor(log10_value)
    mant = 10 ** (log10_value - exp)
    if round(mant, 1) >= 10:
        mant, exp = mant / 10, exp + 1
    sup = str(exp).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{mant:.1f} × 10{sup}"


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
    First the page's size rules are applied (:func:`rankbook.plotting.fit_to_page`: at
    most the column's width, so shown at 100%; no text below 9 pt), then the figure is checked
    (:func:`rankbook.plotting.check_figure`: no text below 9 pt at the size the page shows
    it, none clipped, none overlapping): a figure that fails raises ``ValueError``, so every
    figure the book makes is checked when the chapters run. Its alt text is read from what it
    draws (:func:`rankbook.plotting.alt_text`) and travels with it (:class:`FigureSVG`).
    """
    _check_fig("fig", fig)
    import matplotlib.pyplot as plt

    from .plotting import check_figure, fit_to_page, use_svg_output

    use_svg_output()  # SVG, deterministic, whatever the set-up cell did
    try:
        fit_to_page(fig)
        check_figure(fig)
        shown = FigureSVG.of(fig)
    except ValueError:
        plt.close(fig)
        raise
    _glue = _myst_glue()
    if _glue is not None:
        _glue(name, shown, display=True)
    else:
        _show(shown)
    plt.close(fig)


class FigureSVG:
    """A figure as the book shows it: its SVG (:func:`rankbook.plotting.svg_bytes`) with its
    alt text (:func:`rankbook.plotting.alt_text`) in the SVG's ``Description``, and the alt
    text as its plain text (what a text-only front end shows; ``tools/booktools/ext/a11y.py`` puts
    it in the page's ``<img alt>``)."""

    def __init__(self, svg: str, alt: str):
        if not alt.strip():
            raise ValueError("a figure needs alt text")
        self.svg, self.alt = svg, alt

    @classmethod
    def of(cls, fig) -> FigureSVG:
        from .plotting import alt_text, svg_bytes

        alt = alt_text(fig)
        return cls(svg_bytes(fig, description=alt).decode(), alt)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"image/svg+xml": self.svg, "text/plain": self.alt}

    def __repr__(self):
        return self.alt


def glue_table(name: str, header, rows, align=None, display: bool = True) -> Table:
    """Glue a table under ``name`` for a ``{glue:md}`` directive with ``:format: myst``, and show
    it.

    In the book the table is placed where the directive is (tag the cell ``remove-output`` or
    ``remove-cell`` so it is shown once); in a notebook the cell shows it (``display=True``).
    Cells are text: format the numbers before (``f"{x:.3g}"``). Returns the :class:`Table`.
    """
    table = Table(header, rows, align)
    _glue = _myst_glue()
    if _glue is not None:
        _glue(name, table, display=display)
    elif display:
        _show(table)
    return table
