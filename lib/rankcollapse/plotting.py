"""The book's figures: one style, and the drawings more than one chapter needs.

Functions draw on a matplotlib ``Axes`` they are given (or make a figure) and return it; they
compute nothing the core library does not already return. Figures are drawn on a transparent
background with mid-grey text so that they read in the theme's light and dark modes.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "use_book_style",
    "PALETTE",
    "path_diagram",
    "length_distributions",
    "curve_with_band",
]

# colour-blind safe (Okabe–Ito)
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
_INK = "#6b6b6b"  # readable on white and on the dark theme's background


def use_book_style() -> None:
    """Set matplotlib's defaults for the book (fonts, colours, transparent background, SVG-free PNG)."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(
        {
            "figure.figsize": (7.0, 3.6),
            "figure.dpi": 110,
            "savefig.dpi": 150,
            "savefig.transparent": True,
            "figure.facecolor": (1, 1, 1, 0),
            "axes.facecolor": (1, 1, 1, 0),
            "axes.edgecolor": _INK,
            "axes.labelcolor": _INK,
            "axes.titlecolor": _INK,
            "xtick.color": _INK,
            "ytick.color": _INK,
            "text.color": _INK,
            "legend.labelcolor": _INK,
            "legend.framealpha": 0.0,
            "axes.grid": True,
            "grid.color": _INK,
            "grid.alpha": 0.25,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": cycler(color=PALETTE),
            "font.size": 10,
            "axes.titlesize": 10,
            "lines.linewidth": 1.8,
        }
    )


def _axes(ax, figsize=None):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def path_diagram(L: int = 3, H: int = 2, highlight=((None, None, None), (0, None, None), (None, 0, 1), (1, 1, 0)), ax=None):
    """Draw the paths through ``L`` layers of ``H`` heads with skip connections (the paper's Figure 1).

    Each layer is a column of ``H`` head nodes and one skip node (drawn as a dashed bypass).
    ``highlight``: paths (tuples with a head index or ``None`` per layer) drawn in colour, with
    their length in the legend.
    """
    ax = _axes(ax, figsize=(7.0, 3.2))
    ys = {h: H - h for h in range(H)}  # head rows above the stream (y = 0), the skip below
    ys[None] = -1.0
    xs = np.arange(L + 1) * 2.0
    for l in range(L):  # every edge, faint: input -> head or skip -> output of the layer
        for c in [None] + list(range(H)):
            ax.plot([xs[l], xs[l] + 1.0, xs[l + 1]], [0, ys[c], 0], color=_INK, alpha=0.18,
                    lw=1.0, ls="--" if c is None else "-")
        for c in [None] + list(range(H)):
            label = "skip" if c is None else f"$P^{{({l + 1})}}_{{{c + 1}}}$"
            # an opaque light box above the paths, so the label stays legible where paths cross it
            ax.text(xs[l] + 1.0, ys[c], label, ha="center", va="center", color="#333333", fontsize=9.5,
                    bbox=dict(boxstyle="round,pad=0.3", fc="#e8f0f7", ec=_INK,
                              ls="--" if c is None else "-"), zorder=5)
    for x, label in zip(xs, ["$X$"] + [f"$X_{{{l + 1}}}$" for l in range(L)]):
        ax.plot([x], [0], "o", color=_INK, ms=6, zorder=3)
        ax.text(x, -0.45, label, ha="center", va="top", color=_INK)
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
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, fontsize=8, frameon=False)
    return ax


def length_distributions(rows, axes=None):
    """Two views of each architecture's path-length distribution (chapter "The path decomposition").

    ``rows``: iterable of ``(label, L, H, fractions)`` with ``fractions`` of shape ``(L+1,)``;
    rows with the same ``(L, H)`` are drawn once, their labels joined. Left: the distribution
    against relative length ``l / L`` as a density (share × ``L``), with a dotted line at the
    mean ``H/(H+1)``. Right: the same shares on a log axis, where the short paths' tiny shares
    are visible.
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(8.6, 3.6), layout="constrained")
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
    axes[0].set(xlabel="relative path length  $l / L$", ylabel="share of paths × $L$ (density)",
                title="(a) where the paths are")
    axes[1].set(xlabel="relative path length  $l / L$", ylabel="share of paths (log scale)",
                yscale="log", title="(b) how rare short paths are")
    axes[1].set_ylim(bottom=1e-30, top=3.0)  # shares are at most 1
    axes[0].legend(fontsize=7, loc="upper left")
    return axes


def curve_with_band(ax, x, values, label=None, color=None, log=True, marker="o", **kw):
    """Draw the mean over the first axis of ``values`` (``(samples, len(x))``) with a ±1 std band.

    With ``log=True`` the band is drawn in log space (geometric mean × / ÷ geometric std), the
    honest choice for quantities that fall over orders of magnitude.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[None]
    if log:
        lv = np.log10(np.clip(v, 1e-300, None))
        mid, sd = lv.mean(0), lv.std(0)
        lo, mean, hi = 10 ** (mid - sd), 10 ** mid, 10 ** (mid + sd)
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


def mlp_tradeoff(lam, residual, sensitivity, grad_variance, axes=None, lam_label=r"MLP Lipschitz constant $\lambda$ (lower bound)",
                 residual_label=r"$\|\mathrm{res}(X_L)\| / \|X_L\|$"):
    """Both sides of the MLP trade-off against the MLP's Lipschitz constant, in three panels.

    ``lam``: ``(K,)`` one value per model. ``residual``: ``(samples, K)`` relative residual at some
    layer (the collapse side; ``residual_label`` names it). ``sensitivity``: ``(samples, K)`` relative perturbation gains (all
    directions pooled). ``grad_variance``: ``(K,)`` or dict ``label -> (K,)`` gradient variances.
    Log axes throughout; bands are ±1 std in log space. Returns the three axes.
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(9.6, 3.3), layout="constrained")
    lam = np.asarray(lam, dtype=float)
    curve_with_band(axes[0], lam, residual, color=PALETTE[0])
    axes[0].set(xscale="log", xlabel=lam_label, ylabel=residual_label,
                title="(a) collapse slows")
    s = np.asarray(sensitivity, dtype=float)
    q25, q50, q75 = np.percentile(s, [25, 50, 75], axis=0)
    axes[1].plot(lam, q50, "o-", ms=3, color=PALETTE[3], label="median")
    axes[1].fill_between(lam, q25, q75, color=PALETTE[3], alpha=0.2, lw=0, label="25–75%")
    axes[1].plot(lam, s.max(axis=0), "^:", ms=3, color=PALETTE[3], label="largest")
    axes[1].set(xscale="log", yscale="log", xlabel=lam_label, ylabel="relative output change / relative input change",
                title="(b) sensitivity grows")
    axes[1].legend(fontsize=8)
    gv = grad_variance if isinstance(grad_variance, dict) else {"gradient variance": grad_variance}
    for i, (label, v) in enumerate(gv.items()):
        axes[2].plot(lam, np.asarray(v, dtype=float), "o-", ms=3, color=PALETTE[(i + 1) % len(PALETTE)], label=label)
    axes[2].set(xscale="log", yscale="log", xlabel=lam_label, title="(c) gradient spread")
    axes[2].legend(fontsize=8)
    return axes


# --------------------------------------------------------- chapter "LayerNorm's rank argument"


def rank_before_after(before, after, ax=None):
    """Counts of (rank before, rank after) pairs as sized dots, with the diagonal ``after = before``.

    ``before``, ``after``: integer arrays of the same length (one pair per random input). Points on
    or below the diagonal are what the rank argument allows.
    """
    ax = _axes(ax, figsize=(4.2, 3.6))
    before, after = np.asarray(before, dtype=int), np.asarray(after, dtype=int)
    pairs, counts = np.unique(np.stack([before, after], axis=1), axis=0, return_counts=True)
    ax.scatter(pairs[:, 0], pairs[:, 1], s=20 + 300 * counts / counts.max(), color=PALETTE[0], alpha=0.7,
               zorder=3)
    for (b, a), c in zip(pairs, counts):
        ax.annotate(str(c), (b, a), textcoords="offset points", xytext=(6, 6), fontsize=7, color=_INK)
    lo, hi = min(before.min(), after.min()) - 0.5, max(before.max(), after.max()) + 0.5
    ax.plot([lo, hi], [lo, hi], ls="--", color=_INK, lw=1, label="rank after = rank before")
    ax.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="numerical rank of $Y$", ylabel=r"numerical rank of LN$(Y)$")
    ax.legend(fontsize=8, loc="upper left")
    return ax


__all__ += ["mlp_tradeoff", "rank_before_after"]


# ------------------------------------ chapters "Pure attention collapses" and "Skip connections"


def residual_vs_depth(ax, series, ylabel=r"$\Vert \mathrm{res}(X_l)\Vert_{1,\infty}$", log10=False):
    """Residual against layer for several curves, each with a ±1 std band over samples.

    ``series``: iterable of ``(label, values, style)`` with ``values`` of shape ``(samples, L+1)``
    (layer ``l = 0..L`` on the x axis) and ``style`` a dict of matplotlib line options (``ls``,
    ``color``, ``marker``). With ``log10=True`` the values are already base-10 logarithms (for
    quantities below float64's range) and are drawn on a linear axis labelled as such;
    otherwise the axis is logarithmic. Non-finite values are left out of a curve.
    """
    for i, (label, values, style) in enumerate(series):
        v = np.atleast_2d(np.asarray(values, dtype=float))
        x = np.arange(v.shape[1])
        style = dict(style or {})
        style.setdefault("color", PALETTE[i % len(PALETTE)])
        style.setdefault("marker", "o")
        if log10:
            finite = np.where(np.isfinite(v), v, np.nan)
            ok = np.isfinite(finite).any(axis=0)
            mid, sd = np.full(v.shape[1], np.nan), np.zeros(v.shape[1])
            mid[ok], sd[ok] = np.nanmean(finite[:, ok], 0), np.nanstd(finite[:, ok], 0)
            ax.plot(x[ok], mid[ok], ms=3, label=label, **style)
            if v.shape[0] > 1:
                ax.fill_between(x[ok], (mid - sd)[ok], (mid + sd)[ok], color=style["color"], alpha=0.2, lw=0)
        else:
            ok = np.all(np.isfinite(v) & (v > 0), axis=0)
            curve_with_band(ax, x[ok], v[:, ok], label=label, log=True, **style)
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("layer $l$")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers are whole numbers
    ax.set_ylabel(("$\\log_{10}$ " if log10 else "") + ylabel)
    ax.legend(fontsize=8)
    return ax


def cubic_rate(ax, L, loglog, slope_ref=np.log(3), label_ref=r"slope $\log 3$"):
    """``log(-log ratio)`` against depth for several samples, with a reference line of slope ``log 3``.

    ``L``: depths ``(k,)``; ``loglog``: array ``(samples, k)`` (non-finite entries skipped). The
    reference line passes through the mean of the last finite column, so that the slopes compare.
    """
    v = np.atleast_2d(np.asarray(loglog, dtype=float))
    L = np.asarray(L, dtype=float)
    for row in v:
        ok = np.isfinite(row)
        ax.plot(L[ok], row[ok], "o-", ms=3, color=PALETTE[0], alpha=0.5, lw=1)
    finite = np.where(np.isfinite(v), v, np.nan)
    ok = np.isfinite(finite).any(axis=0)
    mid = np.full(v.shape[1], np.nan)
    mid[ok] = np.nanmean(finite[:, ok], axis=0)
    if ok.any():
        x0, y0 = L[ok][-1], mid[ok][-1]
        ax.plot(L[ok], y0 + slope_ref * (L[ok] - x0), "--", color=PALETTE[3], label=label_ref)
    ax.set_xlabel("depth $L$")
    ax.set_ylabel(r"$\log(-\log \rho_L)$")
    ax.legend(fontsize=8)
    return ax


__all__ += ["residual_vs_depth", "cubic_rate"]


# ------------------------------------------------------------------ real transformers (models)

VARIANT_STYLE = {  # variant -> (colour, line style, legend label), as the paper's Figure 2
    "san": (PALETTE[3], ":", "SAN"),
    "san+mlp": (PALETTE[1], "--", "SAN + MLP"),
    "san+skip": (PALETTE[2], "-.", "SAN + skip"),
    "full": (PALETTE[0], "-", "transformer"),
}


def ablation_panel(ax, curves, title=None, floor=1e-17, legend=False):
    """One panel of the paper's Figure 2: relative residual against layer for each variant.

    ``curves``: ``{variant: array (samples, L + 1)}`` (from :func:`rankcollapse.models.residual_curves`).
    Each variant is drawn as its geometric mean with a ×/÷ one geometric std band on a log axis;
    values below ``floor`` (exact zeros of a fully collapsed float64 matrix) are drawn at ``floor``.
    """
    for variant in ("san", "san+mlp", "san+skip", "full"):
        if variant not in curves:
            continue
        color, ls, label = VARIANT_STYLE[variant]
        v = np.clip(np.asarray(curves[variant], dtype=float), floor, None)
        curve_with_band(ax, np.arange(v.shape[1]), v, label=label, color=color, log=True, marker=None, ls=ls)
    ax.set_ylim(floor / 3, 3.0)
    ax.set_xlabel("layer $l$")
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize=7, loc="lower left")
    return ax


__all__ += ["VARIANT_STYLE", "ablation_panel"]
