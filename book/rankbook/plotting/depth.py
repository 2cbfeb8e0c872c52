"""Drawings of collapse through depth: the residual against depth (pure attention, skips, real
transformers' ablations as the paper's Figure 2), the cubic rate, power laws and attention maps.
Each draws on an ``Axes`` it is given, in the book's style (:mod:`.style`).
"""

from __future__ import annotations

import math

import numpy as np

from rankcollapse._validate import check_axes

from .drawings import curve_with_band, fit_title
from .style import PALETTE, integer_ticks

__all__ = [
    "residual_vs_depth",
    "cubic_rate",
    "power_law",
    "attention_maps",
    "VARIANT_STYLE",
    "ablation_panel",
]


# ------------------------------------ chapters "Pure attention collapses" and "Skip connections"


def residual_vs_depth(ax, series, ylabel=r"$\Vert \mathrm{res}(X_l)\Vert_{1,\infty}$", log10=False):
    """Residual against layer for several curves, each with a ±1 std band over samples.

    ``series``: iterable of ``(label, values, style)`` with ``values`` of shape ``(samples, L+1)``
    (layer ``l = 0..L`` on the x axis) and ``style`` a dict of matplotlib line options (``ls``,
    ``color``, ``marker``). With ``log10=True`` the values are already base-10 logarithms (for
    quantities below float64's range) and are drawn on a linear axis labelled as such;
    otherwise the axis is logarithmic. Non-finite values are left out of a curve.
    """
    check_axes("ax", ax)
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
                ax.fill_between(
                    x[ok], (mid - sd)[ok], (mid + sd)[ok], color=style["color"], alpha=0.2, lw=0
                )
        else:
            ok = np.all(np.isfinite(v) & (v > 0), axis=0)
            curve_with_band(ax, x[ok], v[:, ok], label=label, log=True, **style)
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("layer $l$")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # layers are whole numbers
    ax.set_ylabel(("$\\log_{10}$ " if log10 else "") + ylabel)
    ax.legend()
    return ax


LOG3 = math.log(3)  # the cube's slope in log(-log ratio) against depth


def cubic_rate(ax, L, loglog, slope_ref=LOG3, label_ref=r"slope $\log 3$"):
    """``log(-log ratio)`` against depth for several samples, with a reference line of slope ``log
    3``.

    ``L``: depths ``(k,)``; ``loglog``: array ``(samples, k)`` (non-finite entries skipped). The
    reference line passes through the mean of the last finite column, so that the slopes compare.
    """
    check_axes("ax", ax)
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
    integer_ticks(ax, "x")
    ax.legend()
    return ax


def power_law(ax, x, y, slope_ref=1.0, label_ref="slope 1"):
    """``y`` against ``x`` on log-log axes, one line per sample, with a reference line of slope
    ``slope_ref``.

    ``x``, ``y``: arrays ``(samples, k)`` of positive values. The reference line passes through
    the geometric mean of the samples' last points, so that the slopes compare.
    """
    check_axes("ax", ax)
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    if x.shape != y.shape or not (
        np.isfinite(x).all() and np.isfinite(y).all() and (x > 0).all() and (y > 0).all()
    ):
        raise ValueError(
            f"power_law: x and y must be arrays of one shape of finite positive values, got shapes "
            f"{x.shape} and {y.shape}"
        )
    for xs, ys in zip(x, y):
        ax.plot(xs, ys, "o-", ms=3, color=PALETTE[0], alpha=0.6, lw=1)
    x0, y0 = np.exp(np.log(x[:, -1]).mean()), np.exp(np.log(y[:, -1]).mean())
    xr = np.array([x.min(), x.max()])
    ax.plot(xr, y0 * (xr / x0) ** slope_ref, "--", color=PALETTE[3], label=label_ref)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend()
    return ax


def attention_maps(axes, matrices, titles):
    """Attention matrices as colour maps, one per axes, on one colour scale from 0 to the largest
    entry; rows are queries, columns keys. Returns the last image (for a colour bar)."""
    axes = list(np.ravel(axes)) if isinstance(axes, np.ndarray) else list(axes)
    for i, ax in enumerate(axes):
        check_axes(f"axes[{i}]", ax)
    matrices = [np.asarray(P, dtype=float) for P in matrices]
    if not matrices or len(matrices) != len(axes) or len(titles) != len(axes):
        raise ValueError(
            f"attention_maps needs one matrix and one title per axes: {len(axes)} axes, "
            f"{len(matrices)} matrices, {len(titles)} titles"
        )
    top = max(float(P.max()) for P in matrices)
    image = None
    for ax, P, title in zip(axes, matrices, titles):
        image = ax.imshow(P, vmin=0.0, vmax=top, cmap="viridis")
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("key $j$")
    axes[0].set_ylabel("query $i$")
    return image


# ------------------------------------------------------------------ real transformers (models)

VARIANT_STYLE = {  # variant -> (colour, line style, legend label), as the paper's Figure 2
    "san": (PALETTE[3], ":", "SAN"),
    "san+mlp": (PALETTE[1], "--", "SAN + MLP"),
    "san+skip": (PALETTE[2], "-.", "SAN + skip"),
    "full": (PALETTE[0], "-", "transformer"),
}


def ablation_panel(ax, curves, title=None, floor=1e-17, legend=False):
    """One panel of the paper's Figure 2: relative residual against layer for each variant.

    ``curves``: ``{variant: array (samples, L + 1)}`` (from
    :func:`rankcollapse.real.measure.residual_curves`). Each variant is drawn as its geometric mean
    with a ×/÷ one geometric std band on a log axis; values below ``floor`` (exact zeros of a fully
    collapsed float64 matrix) are drawn at ``floor``.
    """
    check_axes("ax", ax)
    for variant in ("san", "san+mlp", "san+skip", "full"):
        if variant not in curves:
            continue
        color, ls, label = VARIANT_STYLE[variant]
        v = np.clip(np.asarray(curves[variant], dtype=float), floor, None)
        curve_with_band(
            ax, np.arange(v.shape[1]), v, label=label, color=color, log=True, marker=None, ls=ls
        )
    ax.set_ylim(floor / 3, 3.0)
    ax.set_xlabel("layer $l$")
    integer_ticks(ax, "x")
    if title:
        fit_title(ax, title)
    if legend:
        ax.legend(loc="lower left")
    return ax
