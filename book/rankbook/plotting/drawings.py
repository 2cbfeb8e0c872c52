"""The drawings more than one chapter needs, in the book's style (:mod:`.style`).

Functions draw on a matplotlib ``Axes`` they are given (or make a figure) and return it; they
compute nothing the core library does not already return.
"""

from __future__ import annotations

import numpy as np

from rankcollapse._validate import check_axes, check_int, check_str

from .style import INK, PALETTE, WIDTH, integer_ticks

__all__ = ["path_diagram", "length_distributions", "curve_with_band"]


def _axes(ax, figsize=None):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def path_diagram(
    L: int = 3,
    H: int = 2,
    highlight=((None, None, None), (0, None, None), (None, 0, 1), (1, 1, 0)),
    ax=None,
):
    """Draw the paths through ``L`` layers of ``H`` heads with skip connections (the paper's Figure
    1).

    Each layer is a column of ``H`` head nodes and one skip node (drawn as a dashed bypass).
    ``highlight``: paths (tuples with a head index or ``None`` per layer) drawn in colour, with
    their length in the legend.
    """
    L, H = check_int("L", L), check_int("H", H)
    ax = _axes(ax, figsize=(7.0, 3.2))
    ys = {h: H - h for h in range(H)}  # head rows above the stream (y = 0), the skip below
    ys[None] = -1.0
    xs = np.arange(L + 1) * 2.0
    for l in range(L):  # every edge, faint: input -> head or skip -> output of the layer
        for c in [None] + list(range(H)):
            ax.plot(
                [xs[l], xs[l] + 1.0, xs[l + 1]],
                [0, ys[c], 0],
                color=INK,
                alpha=0.18,
                lw=1.0,
                ls="--" if c is None else "-",
            )
        for c in [None] + list(range(H)):
            label = "skip" if c is None else f"$P^{{({l + 1})}}_{{{c + 1}}}$"
            # an opaque light box above the paths, so the label stays legible where paths cross it
            ax.text(
                xs[l] + 1.0,
                ys[c],
                label,
                ha="center",
                va="center",
                color="#333333",
                fontsize=9.5,
                bbox=dict(
                    boxstyle="round,pad=0.3", fc="#e8f0f7", ec=INK, ls="--" if c is None else "-"
                ),
                zorder=5,
            )
    for x, label in zip(xs, ["$X$"] + [f"$X_{{{l + 1}}}$" for l in range(L)]):
        ax.plot([x], [0], "o", color=INK, ms=6, zorder=3)
        ax.text(x, -0.45, label, ha="center", va="top", color=INK)
    for i, path in enumerate(highlight):
        if len(path) != L:
            raise ValueError(f"highlight path {path!r} must have one entry per layer ({L})")
        color = PALETTE[i % len(PALETTE)]
        off = 0.07 * (i - (len(highlight) - 1) / 2)  # side by side where paths share an edge
        px, py = [xs[0]], [off]
        for l, c in enumerate(path):
            px += [xs[l] + 1.0, xs[l + 1]]
            py += [ys[c] + off, off]
        length = sum(c is not None for c in path)
        name = ", ".join("skip" if c is None else f"head {c + 1}" for c in path)
        ax.plot(px, py, color=color, lw=2.4, alpha=0.9, label=f"length {length}: {name}")
    ax.set_xlim(-0.5, xs[-1] + 0.5)
    ax.set_ylim(-1.5, H + 0.5)
    ax.axis("off")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, frameon=False)
    return ax


def length_distributions(rows, axes=None):
    """Two views of each architecture's path-length distribution (chapter "The path decomposition").

    ``rows``: iterable of ``(label, L, H, fractions)`` with ``fractions`` of shape ``(L+1,)``;
    rows with the same ``(L, H)`` are drawn once, their labels joined. Left: the distribution
    against relative length ``l / L`` as a density (share × ``L``), with a dotted line at the
    mean ``H/(H+1)``. Right: the same shares on a log axis, where the short paths' tiny shares
    are visible.
    """
    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one row to draw")
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(WIDTH, 3.6), layout="constrained")
    shapes: dict = {}
    for label, L, H, frac in rows:
        entry = shapes.setdefault((L, H), [[], np.asarray(frac, dtype=float)])
        entry[0].append(label)
    for i, ((L, H), (labels, frac)) in enumerate(shapes.items()):
        x = np.arange(L + 1) / L
        color = PALETTE[i % len(PALETTE)]
        name = f"{', '.join(labels)} ({L}×{H})"
        marker = "o" if L <= 24 else None
        axes[0].plot(x, frac * L, "-", color=color, marker=marker, ms=3, label=name)
        axes[0].axvline(H / (H + 1), color=color, lw=0.8, ls=":")
        nz = frac > 0
        axes[1].plot(x[nz], frac[nz], "-", color=color, marker=marker, ms=3)
    axes[0].set(
        xlabel="relative path length  $l / L$",
        ylabel="share of paths × $L$ (density)",
        title="(a) where the paths are",
    )
    axes[1].set(
        xlabel="relative path length  $l / L$",
        ylabel="share of paths (log scale)",
        yscale="log",
        title="(b) how rare short paths are",
    )
    axes[1].set_ylim(bottom=1e-30, top=3.0)  # shares are at most 1
    axes[0].legend(loc="upper left")
    return axes


def curve_with_band(ax, x, values, label=None, color=None, log=True, marker="o", **kw):
    """Draw the mean over the first axis of ``values`` (``(samples, len(x))``) with a ±1 std band.

    With ``log=True`` the band is drawn in log space (geometric mean × / ÷ geometric std), the
    honest choice for quantities that fall over orders of magnitude.
    """
    check_axes("ax", ax)
    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[None]
    if log:
        lv = np.log10(np.clip(v, 1e-300, None))
        mid, sd = lv.mean(0), lv.std(0)
        lo, mean, hi = 10 ** (mid - sd), 10**mid, 10 ** (mid + sd)
    else:
        mean, sd = v.mean(0), v.std(0)
        lo, hi = mean - sd, mean + sd
    (line,) = ax.plot(x, mean, marker=marker, ms=3, label=label, color=color, **kw)
    if v.shape[0] > 1:
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    if log:
        ax.set_yscale("log")
    return line


# ------------------------------------------------------------ chapter "The MLP trade-off"


def mlp_tradeoff(
    lam,
    residual,
    sensitivity,
    grad_variance,
    axes=None,
    lam_label=r"$\lambda$ (lower bound)",
    residual_label=r"$\|\mathrm{res}(X_L)\| / \|X_L\|$",
):
    """Both sides of the MLP trade-off against the MLP's Lipschitz constant, in three panels.

    ``lam``: ``(K,)`` one value per model. ``residual``: ``(samples, K)`` relative residual at some
    layer (the collapse side; ``residual_label`` names it). ``sensitivity``: ``(samples, K)``
    relative perturbation gains (all directions pooled). ``grad_variance``: ``(K,)`` or dict ``label
    -> (K,)`` gradient variances. Log axes throughout; bands are ±1 std in log space. The three
    panels share the x axis, named once below them (``lam_label``). Returns the three axes.
    """
    K = len(lam)
    variances = grad_variance.values() if isinstance(grad_variance, dict) else [grad_variance]
    widths = [
        np.shape(residual)[-1],
        np.shape(sensitivity)[-1],
        *(np.shape(v)[-1] for v in variances),
    ]
    if any(w != K for w in widths):
        raise ValueError(
            f"residual, sensitivity and grad_variance must have one column per lambda ({K}), got "
            f"{np.shape(residual)}, {np.shape(sensitivity)} and "
            f"{[np.shape(v) for v in variances]}"
        )
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(WIDTH, 3.0), layout="constrained")
    fig = axes[0].get_figure()
    lam = np.asarray(lam, dtype=float)
    curve_with_band(axes[0], lam, residual, color=PALETTE[0])
    axes[0].set(xscale="log", title="(a) collapse slows")
    axes[0].set_ylabel(residual_label, labelpad=2)
    s = np.asarray(sensitivity, dtype=float)
    q25, q50, q75 = np.percentile(s, [25, 50, 75], axis=0)
    axes[1].plot(lam, q50, "o-", ms=3, color=PALETTE[3], label="median")
    axes[1].fill_between(lam, q25, q75, color=PALETTE[3], alpha=0.2, lw=0, label="25–75%")
    axes[1].plot(lam, s.max(axis=0), "^:", ms=3, color=PALETTE[3], label="largest")
    axes[1].set(xscale="log", yscale="log", title="(b) sensitivity grows")
    axes[1].set_ylabel("relative gain", labelpad=2)
    axes[1].legend(loc="upper left")
    gv = grad_variance if isinstance(grad_variance, dict) else {"gradient variance": grad_variance}
    for i, (label, v) in enumerate(gv.items()):
        axes[2].plot(
            lam,
            np.asarray(v, dtype=float),
            "os"[i % 2] + "-",
            ms=3,
            color=PALETTE[(i + 1) % len(PALETTE)],
            label=label,
        )
    axes[2].set(xscale="log", yscale="log", title="(c) gradient spread")
    axes[2].legend(loc="upper left")
    fig.supxlabel(lam_label)
    return axes


# --------------------------------------------------------- chapter "LayerNorm's rank argument"


def rank_change_bars(before, after, ax=None):
    """How the rank of each input changed: one stacked bar per rank before, split into inputs whose
    rank after is the same, lower, or higher.

    ``before``, ``after``: integer arrays of the same length (one pair per random input). The
    bars' heights are counts read off the axis (no numbers written in the plot, so the figure
    stays legible at any number of ranks or inputs); a "higher" part, drawn in the palette's
    warning colour and stacked on top, is what a rank argument forbids; its legend entry says
    how many there are (often none). Integer ticks on both axes.
    """
    ax = _axes(ax, figsize=(4.2, 3.6))
    before, after = np.asarray(before, dtype=int), np.asarray(after, dtype=int)
    if before.shape != after.shape or before.ndim != 1:
        raise ValueError(
            f"before and after must be 1-D arrays of the same length, got shapes "
            f"{before.shape} and {after.shape}"
        )
    ranks = np.arange(before.min(), before.max() + 1)
    higher = after > before
    parts = (
        ("same rank", after == before, PALETTE[0]),
        ("lower rank", after < before, PALETTE[5]),
        (f"higher rank ({int(higher.sum())} inputs)", higher, PALETTE[3]),
    )
    bottom = np.zeros(len(ranks))
    for label, which, color in parts:
        height = np.bincount(
            before[which] - ranks[0], minlength=len(ranks)
        )  # inputs per rank before
        ax.bar(ranks, height, bottom=bottom, width=0.8, color=color, label=label, zorder=2)
        bottom += height
    ax.set(xlabel="numerical rank of $Y$", ylabel="number of inputs")
    ax.set_xlim(ranks[0] - 0.6, ranks[-1] + 0.6)
    ax.set_ylim(0, bottom.max() * 1.35)  # head room for the legend above the bars
    integer_ticks(ax, "both")
    ax.legend(loc="upper center", ncols=1)
    return ax


__all__ += ["mlp_tradeoff", "rank_change_bars"]


def fit_title(ax, title: str, **kw):
    """Set ``title`` on ``ax``, broken into lines at spaces so that each fits the axes' width
    (titles of neighbouring panels never run into each other)."""
    check_axes("ax", ax)
    check_str("title", title)
    import textwrap

    import matplotlib as mpl

    fig = ax.get_figure()
    width_pt = ax.get_position().width * fig.get_figwidth() * 72
    size = mpl.rcParams["axes.titlesize"]
    size = mpl.font_manager.FontProperties(size=size).get_size_in_points()
    chars = max(8, int(width_pt / (0.56 * size)))  # a typical sans-serif glyph is about 0.5 em
    return ax.set_title("\n".join(textwrap.wrap(title, chars)), **kw)


__all__ += ["fit_title"]
