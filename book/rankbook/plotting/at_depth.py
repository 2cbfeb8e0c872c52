"""The figure of chapter "Skip connections at depth": relative residual against layer through 8
times each model's depth, one panel per model, the variants as lines, seeds and texts as bands."""

from __future__ import annotations

import numpy as np

from rankcollapse._validate import check_axes

from .depth import VARIANT_STYLE
from .drawings import fit_title
from .style import PALETTE

__all__ = ["DEPTH_STYLE", "depth_panel"]

#: variant -> (colour, line style, legend label): the paper's four as in its Figure 2, and the two
#: the chapter adds
DEPTH_STYLE = {
    **VARIANT_STYLE,
    "flipped": (PALETTE[4], "-", "other LayerNorm placement"),
    "scaled": (PALETTE[5], (0, (5, 1, 1, 1)), "depth-scaled branches"),
}


def depth_panel(ax, study, name, title=None, floor=1e-17):
    """One model's panel: each variant's typical curve (geometric mean over seeds and texts) with
    the band from the smallest to the largest run, on a log axis; the depth-scaled variant at the
    largest depth. ``study``: a :class:`rankcollapse.real.depth_study.DepthStudy`. Values below
    ``floor`` are drawn at ``floor``; a run stopped at rounding error ends its line there."""
    check_axes("ax", ax)
    L0 = study.n_layers(name)
    for variant, (color, ls, label) in DEPTH_STYLE.items():
        try:
            g = study.typical(name, variant)
        except KeyError:
            continue
        lo, hi = study.spread(name, variant)
        x = np.arange(g.size)
        keep = np.isfinite(g)
        clip = lambda v: np.clip(v, floor, None)  # noqa: E731
        ax.plot(x[keep], clip(g[keep]), color=color, ls=ls, lw=1.4, label=label)
        both = keep & np.isfinite(lo) & np.isfinite(hi)
        if len(study.runs[name]) * study.n_texts > 1:
            ax.fill_between(x[both], clip(lo[both]), clip(hi[both]), color=color, alpha=0.18, lw=0)
    ax.set_yscale("log")
    ax.set_ylim(floor / 3, 3.0)
    ticks = [L0 * f for f in (0,) + tuple(study.factors)]
    ax.set_xticks(ticks)
    ax.set_xlim(0, ticks[-1])
    for t in ticks[1:-1]:
        ax.axvline(t, color="0.85", lw=0.6, zorder=0)
    ax.set_xlabel("layer $l$")
    if title:
        fit_title(ax, title)
    return ax
