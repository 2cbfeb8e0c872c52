"""The book's figure style and the page's rules: size, the smallest text, SVG output, colours.

Every figure is drawn on a transparent background with mid-grey text so that it reads in the
theme's light and dark modes, 7 inches wide (shown at 100% in the text column), with no text
below 9 pt as shown; :func:`fit_to_page` and :func:`check_figure` apply and check these rules
(``book.glue_figure`` calls both).
"""

from __future__ import annotations

import numpy as np

from rankcollapse._validate import check_axes, check_choice, check_int, check_positive_float
from rankcollapse._validate import check_figure as _check_fig

__all__ = ["use_book_style", "use_svg_output", "PALETTE", "INK"]

# colour-blind safe (Okabe–Ito); at most five or six curves share a panel (more: label them
# directly)
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
INK = "#6b6b6b"  # text and reference lines: readable on white and on the dark theme's background

# The page's text column: measured in Chromium (tests/test_browser.py) at a 1280-pixel window,
# sphinx-book-theme 1.3, 96 CSS pixels per inch. A figure this wide or narrower is shown at
# 100%: one inch of figure is one inch of screen, so a 9 pt label reads as 9 pt.
COLUMN_INCHES = 7.0
WIDTH = 7.0  # every figure's width in inches (one, two or three panels)
MIN_POINTS = 9.0  # the smallest text a figure may show, at the size it is shown
SVG_SALT = "rankcollapse"  # fixed ids in the SVG, so the same figure gives the same bytes


def use_book_style() -> None:
    """Set matplotlib's defaults for the book, and make notebooks show figures as SVG.

    Fonts: 10 pt labels and titles, 9 pt ticks and legends (``MIN_POINTS``), at figures
    ``WIDTH`` inches wide that the page shows at 100%. Colours: the Okabe-Ito palette on a
    transparent background, mid-grey ink. Output: SVG (vector, sharp at any zoom), written
    without a date and with fixed ids, so two runs give identical bytes.
    """
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(
        {
            "figure.figsize": (WIDTH, 3.4),
            "figure.dpi": 96,  # as the browser: an inch of figure is 96 CSS pixels
            "savefig.dpi": 192,  # raster parts (bands are vector; this is for images only)
            "savefig.transparent": True,
            "figure.facecolor": (1, 1, 1, 0),
            "axes.facecolor": (1, 1, 1, 0),
            "axes.edgecolor": INK,
            "axes.labelcolor": INK,
            "axes.titlecolor": INK,
            "xtick.color": INK,
            "ytick.color": INK,
            "text.color": INK,
            "legend.labelcolor": INK,
            "legend.framealpha": 0.0,
            "axes.grid": True,
            "grid.color": INK,
            "grid.alpha": 0.25,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": cycler(color=PALETTE),
            "font.size": 10,
            "axes.titlesize": 10,
            "axes.labelsize": 10,
            "xtick.labelsize": MIN_POINTS,
            "ytick.labelsize": MIN_POINTS,
            "legend.fontsize": MIN_POINTS,
            "legend.title_fontsize": MIN_POINTS,
            "figure.titlesize": 10,
            "figure.labelsize": 10,
            "lines.linewidth": 1.8,
            "svg.fonttype": "path",  # glyphs as paths: the same on every machine
            "svg.hashsalt": SVG_SALT,
        }
    )
    use_svg_output()


def svg_options() -> dict:
    """What figures are saved with: no date in the SVG's metadata, the figure's own size."""
    return {"metadata": {"Date": None}, "bbox_inches": None}


def use_svg_output() -> None:
    """Inside IPython: show figures (and glue them, myst-nb) as SVG with :func:`svg_options`."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("svg", **svg_options())


def figure_problems(
    fig, column_inches: float = COLUMN_INCHES, min_points: float = MIN_POINTS
) -> list[str]:
    """What makes ``fig`` hard to read on the page, as sentences (empty: nothing).

    The page scales a figure wider than ``column_inches`` down to the column; every text's font
    size is multiplied by that scale and must be at least ``min_points``. Text must lie inside
    the figure (it would be clipped) and no two texts may overlap. Draws the figure.
    """
    _check_fig("fig", fig)
    from matplotlib.text import Text

    fig.canvas.draw()
    width = fig.get_figwidth()
    scale = min(1.0, column_inches / width)
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts, problems = [], []
    # tick labels: only those of ticks inside the view (matplotlib keeps others, undrawn)
    tick_labels, drawn = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in list(axis.majorTicks) + list(axis.minorTicks):
                tick_labels.update((id(tick.label1), id(tick.label2)))
            if not axis.get_visible() or not ax.get_visible() or not ax.axison:
                continue
            for tick in axis._update_ticks():
                drawn += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
    candidates = [t for t in fig.findobj(Text) if id(t) not in tick_labels] + drawn
    for t in candidates:
        if not t.get_visible() or not t.get_text().strip() or not t.get_figure():
            continue
        ext = t.get_window_extent(renderer)
        if ext.width <= 0 or ext.height <= 0:
            continue
        shown = t.get_fontsize() * scale
        if shown < min_points - 1e-9:
            problems.append(
                f"text {t.get_text()!r} is {shown:.1f} pt as shown (at least {min_points:g})"
            )
        tol = 1.0  # pixels
        if (
            ext.x0 < box.x0 - tol
            or ext.y0 < box.y0 - tol
            or ext.x1 > box.x1 + tol
            or ext.y1 > box.y1 + tol
        ):
            problems.append(f"text {t.get_text()!r} runs outside the figure (clipped)")
        texts.append((t, ext))
    for i, (a, ea) in enumerate(texts):
        for b, eb in texts[i + 1 :]:
            ov_w = min(ea.x1, eb.x1) - max(ea.x0, eb.x0)
            ov_h = min(ea.y1, eb.y1) - max(ea.y0, eb.y0)
            if ov_w > 1.0 and ov_h > 1.0:
                problems.append(f"texts {a.get_text()!r} and {b.get_text()!r} overlap")
    return problems


def fit_to_page(
    fig, column_inches: float = COLUMN_INCHES, min_points: float = MIN_POINTS
) -> list[str]:
    """Apply the page's two size rules to ``fig`` in place, and say what was changed.

    A figure wider than the column is made ``WIDTH`` inches wide (its height kept; a
    constrained layout re-flows its panels), so the page shows it at 100%; a text smaller than
    ``min_points`` is set to ``min_points``. What neither rule can mend (text that overlaps or
    is clipped) is left to :func:`figure_problems`.
    """
    check_positive_float("column_inches", column_inches)
    check_positive_float("min_points", min_points)
    _check_fig("fig", fig)
    from matplotlib.text import Text

    changes = []
    width, height = fig.get_size_inches()
    if width > column_inches + 1e-9:
        fig.set_size_inches(WIDTH, height)
        changes.append(f"width {width:g} in -> {WIDTH:g} in")
    for t in fig.findobj(Text):
        if t.get_text().strip() and t.get_fontsize() < min_points - 1e-9:
            changes.append(f"{t.get_text()!r}: {t.get_fontsize():g} pt -> {min_points:g} pt")
            t.set_fontsize(min_points)
    for ax in fig.axes:  # tick labels made later from the axis's own size
        for axis in (ax.xaxis, ax.yaxis):
            for which in ("major", "minor"):
                sizes = [
                    t.label1.get_fontsize()
                    for t in (
                        axis.get_major_ticks() if which == "major" else axis.get_minor_ticks()
                    )
                ]
                if sizes and min(sizes) < min_points - 1e-9:
                    axis.set_tick_params(which=which, labelsize=min_points)
    return changes


def check_figure(fig, **kw) -> None:
    """Raise ``ValueError`` listing :func:`figure_problems` of ``fig``, if it has any."""
    problems = figure_problems(fig, **kw)
    if problems:
        raise ValueError("figure is not legible on the page:\n  " + "\n  ".join(problems))


def integer_ticks(ax, axis: str = "x"):
    """Whole-number ticks only on ``axis`` (``"x"``, ``"y"`` or ``"both"``): layers, depths,
    ranks."""
    check_axes("ax", ax)
    check_choice("axis", axis, ("x", "y", "both"))
    from matplotlib.ticker import MaxNLocator

    for name in ("x", "y") if axis == "both" else (axis,):
        getattr(ax, f"{name}axis").set_major_locator(MaxNLocator(integer=True))
    return ax


def svg_bytes(fig, description: str | None = None) -> bytes:
    """``fig`` as SVG bytes, saved as the book saves it (deterministic: see :func:`use_book_style`),
    with ``description`` (its alt text, :func:`rankbook.plotting.alt_text`) in its metadata."""
    _check_fig("fig", fig)
    import io

    options = svg_options()
    if description is not None:
        options["metadata"]["Description"] = description
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", **options)
    return buf.getvalue()


__all__ += [
    "COLUMN_INCHES",
    "WIDTH",
    "MIN_POINTS",
    "figure_problems",
    "fit_to_page",
    "check_figure",
    "integer_ticks",
    "svg_options",
    "svg_bytes",
]


def spread_indices(count: int, most: int = 5) -> list[int]:
    """At most ``most`` indices into ``count`` ordered items, evenly spread, first and last
    included: which curves of a sweep to draw so that a panel keeps five or six lines."""
    count, most = int(count), int(most)
    if count < 1 or most < 1:
        raise ValueError(f"count and most must be at least 1, got {count} and {most}")
    if count <= most:
        return list(range(count))
    return sorted({int(round(i)) for i in np.linspace(0, count - 1, most)})


def sequential_colours(count: int) -> list:
    """``count`` colours in order, for curves of a sweep (viridis without its faint yellow end:
    colour-blind safe, and dark to light as the swept quantity grows)."""
    count = check_int("count", count)
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"]
    return [cmap(x) for x in (np.linspace(0.0, 0.8, count) if count > 1 else [0.0])]


__all__ += ["spread_indices", "sequential_colours"]
