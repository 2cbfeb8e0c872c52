"""A figure's alt text, read from what its code drew: panels, titles, axes, curves and legends.

:func:`alt_text` describes a matplotlib figure for a reader who cannot see it (a screen reader
reads it out where the page shows the image): for each panel its title, what each axis shows
(label, linear or log scale, range), what is drawn (how many curves, bands, bars, points,
images) and the legend's entries; the figure's own title first. It is made from the figure's
artists, not written by hand, so it says what the figure shows and changes when the drawing
does. ``book.glue_figure`` writes it into the SVG (its ``Description``) and into the output's
plain text; the book's Sphinx extension ``tools/booktools/ext/a11y.py`` gives it to the page's
``<img alt>``.

Formulas in labels (matplotlib's ``$...$``) are read as plain text: ``$\\lambda$`` as λ,
``$\\Vert X\\Vert_{1,\\infty}$`` as ‖X‖_1,∞ (:func:`plain_text`).
"""

from __future__ import annotations

import re

import numpy as np

from rankcollapse._validate import check_figure, check_str

__all__ = ["alt_text", "plain_text"]

# TeX commands read as a character (Greek letters, relations, operators, delimiters)
_SYMBOLS = {
    **{
        name: chr(code)
        for name, code in (
            ("alpha", 0x3B1),
            ("beta", 0x3B2),
            ("gamma", 0x3B3),
            ("delta", 0x3B4),
            ("epsilon", 0x3B5),
            ("varepsilon", 0x3B5),
            ("zeta", 0x3B6),
            ("eta", 0x3B7),
            ("theta", 0x3B8),
            ("kappa", 0x3BA),
            ("lambda", 0x3BB),
            ("mu", 0x3BC),
            ("nu", 0x3BD),
            ("xi", 0x3BE),
            ("pi", 0x3C0),
            ("rho", 0x3C1),
            ("sigma", 0x3C3),
            ("tau", 0x3C4),
            ("phi", 0x3C6),
            ("varphi", 0x3C6),
            ("chi", 0x3C7),
            ("psi", 0x3C8),
            ("omega", 0x3C9),
            ("Gamma", 0x393),
            ("Delta", 0x394),
            ("Theta", 0x398),
            ("Lambda", 0x39B),
            ("Sigma", 0x3A3),
            ("Phi", 0x3A6),
            ("Psi", 0x3A8),
            ("Omega", 0x3A9),
        )
    },
    "Vert": "‖",
    "|": "‖",
    "lVert": "‖",
    "rVert": "‖",
    "vert": "|",
    "lvert": "|",
    "rvert": "|",
    "infty": "∞",
    "times": "×",
    "cdot": "·",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "approx": "≈",
    "sim": "~",
    "to": "→",
    "rightarrow": "→",
    "pm": "±",
    "propto": "∝",
    "ell": "l",
    "top": "ᵀ",
    "langle": "⟨",
    "rangle": "⟩",
    "ldots": "...",
    "cdots": "...",
    "dots": "...",
    "partial": "∂",
    "nabla": "∇",
    "sum": "∑",
    "prod": "∏",
    "in": "∈",
    "neq": "≠",
    "ne": "≠",
    "circ": "∘",
    "log": "log",
    "exp": "exp",
    "max": "max",
    "min": "min",
    "sqrt": "√",
}
_SPACES = {",", ";", ":", "!", " ", "quad", "qquad"}
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")


def _braced(text: str, i: int) -> tuple[str, int]:
    """The group starting at ``text[i]`` (``{...}`` or one character) and the index after it."""
    if text.startswith("\\", i):  # a command: \top
        m = _COMMAND.match(text, i)
        if m:
            return m.group(0), m.end()
    if i < len(text) and text[i] == "{":
        depth = 0
        for j in range(i, len(text)):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                return text[i + 1 : j], j + 1
        return text[i + 1 :], len(text)
    return text[i : i + 1], i + 1


def _math(text: str) -> str:
    """A TeX formula (without its ``$``) as plain text."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            m = _COMMAND.match(text, i)
            if m is None:  # a lone backslash at the end
                break
            name, i = m.group(1), m.end()
            if name == "frac":
                num, i = _braced(text, i)
                den, i = _braced(text, i)
                out.append(f"{_math(num)}/{_math(den)}")
            elif name in (
                "mathrm",
                "mathbf",
                "mathit",
                "mathcal",
                "text",
                "operatorname",
                "mathsf",
                "boldsymbol",
                "mathdefault",
            ):
                arg, i = _braced(text, i)
                out.append(_math(arg))
            elif name in _SPACES:
                out.append(" ")
            elif name in ("left", "right", "big", "Big", "bigl", "bigr", "Bigl", "Bigr"):
                continue
            else:
                word = _SYMBOLS.get(name, name)
                out.append(word + (" " if word.isalpha() and len(word) > 1 else ""))
        elif c == " ":  # spaces in TeX's math are not printed
            i += 1
        elif c in "^_":
            arg, i = _braced(text, i + 1)
            arg = _math(arg)
            out.append(arg if arg == "ᵀ" else c + arg)  # x^\top reads xᵀ
        elif c in "{}":
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def plain_text(label: str) -> str:
    """``label`` as a screen reader should read it: matplotlib's ``$...$`` formulas as plain
    text (``$\\lambda$`` -> λ), runs of spaces as one."""
    check_str("label", label)
    parts = str(label).split("$")
    text = "".join(_math(p) if k % 2 else p for k, p in enumerate(parts))
    return re.sub(r"\s+", " ", text).strip()


def _number(x: float) -> str:
    x = float(x)
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
        mant, exp = f"{x:.1e}".split("e")
        return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"
    return f"{x:.3g}"


def _quoted(items) -> str:
    items = [f"“{t}”" for t in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


# a tick label that is a number: 3, −0.5, 1,000, 2e-05, 10^-5, 2×10^3
_NUMERIC = re.compile(r"[−\-+]?[\d.,]+(?:e[−\-+]?\d+)?|(?:[\d.]+\s*×\s*)?10\^[−\-+]?\d+")


def _axis(ax, name: str) -> str | None:
    axis = getattr(ax, f"{name}axis")
    if not axis.get_visible():
        return None
    label = plain_text(axis.get_label_text())
    lo, hi = sorted(getattr(ax, f"get_{name}lim")())
    # the range a reader sees: from the first to the last tick shown, else the axis's ends
    shown = [t for t in axis.get_majorticklocs() if lo - 1e-9 * abs(lo) <= t <= hi + 1e-9 * abs(hi)]
    if len(shown) >= 2:
        lo, hi = min(shown), max(shown)
    scale = getattr(ax, f"get_{name}scale")()
    ticks = [
        plain_text(t.get_text())
        for t in getattr(ax, f"get_{name}ticklabels")()
        if t.get_text().strip()
    ]
    words = f"{name} axis" + (f" “{label}”" if label else "")
    if scale == "log":
        words += ", log scale"
    if ticks and not all(_NUMERIC.fullmatch(t) for t in ticks):
        words += f", categories {_quoted(ticks[:8])}" + (" and more" if len(ticks) > 8 else "")
    else:
        words += f", from {_number(lo)} to {_number(hi)}"
    return words


def _legend_entries(ax) -> list[str]:
    legend = ax.get_legend()
    if legend is None:
        return []
    return [t for t in (plain_text(x.get_text()) for x in legend.get_texts()) if t]


def _drawn(ax) -> list[str]:
    """What the panel draws, counted by kind."""
    from matplotlib.collections import PathCollection, PolyCollection
    from matplotlib.container import BarContainer, ErrorbarContainer

    lines = [
        ln for ln in ax.get_lines() if ln.get_visible() and len(np.atleast_1d(ln.get_xdata())) > 0
    ]
    flat = [
        ln
        for ln in lines
        if len(set(np.atleast_1d(ln.get_ydata()).tolist())) == 1
        and len(np.atleast_1d(ln.get_xdata())) == 2
    ]  # axhline and the like
    vertical = [
        ln
        for ln in lines
        if len(set(np.atleast_1d(ln.get_xdata()).tolist())) == 1
        and len(np.atleast_1d(ln.get_ydata())) == 2
        and ln not in flat
    ]
    curves = [ln for ln in lines if ln not in flat and ln not in vertical]
    markers_only = [ln for ln in curves if ln.get_linestyle() in ("None", "none", "", " ")]
    bars = sum(len(c) for c in ax.containers if isinstance(c, BarContainer))
    errorbars = sum(1 for c in ax.containers if isinstance(c, ErrorbarContainer))
    bands = sum(1 for c in ax.collections if isinstance(c, PolyCollection) and c.get_visible())
    points = sum(
        len(c.get_offsets())
        for c in ax.collections
        if isinstance(c, PathCollection) and c.get_visible()
    )
    out = []
    if len(curves) - len(markers_only):
        out.append(_count(len(curves) - len(markers_only), "curve"))
    if markers_only:
        out.append(
            _count(sum(len(np.atleast_1d(ln.get_xdata())) for ln in markers_only), "marked point")
        )
    if bars:
        out.append(_count(bars, "bar"))
    if errorbars:
        out.append(_count(errorbars, "series", "series") + " with error bars")
    if bands:
        out.append(_count(bands, "shaded band"))
    if points:
        out.append(_count(points, "scatter point"))
    for image in ax.get_images():
        rows, cols = np.shape(image.get_array())[:2]
        out.append(f"a colour map of {rows} by {cols} cells")
    if flat:
        out.append(_count(len(flat), "horizontal reference line"))
    if vertical:
        out.append(_count(len(vertical), "vertical reference line"))
    notes = list(
        dict.fromkeys(
            plain_text(t.get_text()) for t in ax.texts if t.get_visible() and t.get_text().strip()
        )
    )
    if notes:
        out.append("labels " + _quoted(notes[:12]) + (" and more" if len(notes) > 12 else ""))
    return out


def _panel(ax) -> str:
    if getattr(ax, "_colorbar", None) is not None:  # a colour bar: its scale only
        cbar = ax._colorbar
        label = plain_text(cbar.ax.get_ylabel() or cbar.ax.get_xlabel())
        lo, hi = cbar.norm.vmin, cbar.norm.vmax
        return f"colour scale{f' “{label}”' if label else ''} from {_number(lo)} to {_number(hi)}"
    title = " ".join(
        plain_text(ax.get_title(loc)) for loc in ("left", "center", "right") if ax.get_title(loc)
    )
    parts = [f"titled “{title}”"] if title else []
    if ax.axison:
        parts += [a for a in (_axis(ax, "x"), _axis(ax, "y")) if a]
        parts += _drawn(ax)
    else:  # no axes: a diagram, read by its labels
        parts += [d for d in _drawn(ax) if d.startswith("labels ")]
    legend = _legend_entries(ax)
    if legend:
        parts.append("legend " + _quoted(legend))
    return "; ".join(parts)


def alt_text(fig) -> str:
    """The alt text of ``fig``: what each panel shows (see the module). Raises ``ValueError``
    when the figure draws nothing that can be described (no panel)."""
    check_figure("fig", fig)
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    fig.canvas.draw()  # tick labels and limits as shown
    panels = [ax for ax in fig.axes if ax.get_visible()]
    if not panels:
        raise ValueError("fig has no visible axes: nothing to describe in its alt text")
    described = [_panel(ax) for ax in panels]
    main = [ax for ax in panels if getattr(ax, "_colorbar", None) is None]
    head = []
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text().strip():
        head.append(f"“{plain_text(suptitle.get_text())}”.")
    legends = [
        plain_text(t.get_text())
        for lg in fig.legends
        for t in lg.get_texts()
        if t.get_text().strip()
    ]
    kind = lambda ax: "a chart" if ax.axison else "a diagram"  # noqa: E731
    if len(main) == 1:
        head.append(kind(main[0]).capitalize() + ": " + "; ".join(d for d in described if d) + ".")
    else:
        head.append(f"A figure of {len(main)} panels.")
        n = 0
        for ax, d in zip(panels, described):
            if getattr(ax, "_colorbar", None) is None:
                n += 1
                head.append(f"Panel {n}, {kind(ax)}" + (f": {d}." if d else "."))
            else:
                head.append(f"A {d}.")
    if legends:
        head.append("Legend: " + _quoted(legends) + ".")
    return " ".join(head)
