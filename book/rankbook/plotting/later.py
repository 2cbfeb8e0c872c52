"""Figures of the chapter "After the paper": the results of :mod:`rankcollapse.later` drawn.

Each function takes a result object of the library (``LambdaResult``, ``PhaseResult``,
``DepthResult``, ``ParticleResult``) and returns a new figure; the numbers all come from the
result, the page's style (width, colours) from :mod:`.style`.
"""

from __future__ import annotations

import numpy as np

from rankcollapse.later.phases import PHASES, RANK_LEVEL

from .style import PALETTE, WIDTH, sequential_colours, spread_indices

__all__ = [
    "lambda_figure",
    "phase_figure",
    "depth_figure",
    "particle_figure",
    "cluster_count_figure",
]


def lambda_figure(result, depths=None):
    """Left: the median relative residual after each of ``depths`` layers (default: four spread
    over ``1..L``) against ``lambda``, the book's bound at the largest of them dashed and each
    depth's threshold ``lambda*`` as a vertical line of its colour. Right: the median of
    ``max_l g_l`` over each depth's layers against ``lambda``, which crosses 1 at ``lambda*``."""
    import matplotlib.pyplot as plt

    if depths is None:
        depths = [l for l in spread_indices(result.n_layers + 1, 4) if l > 0]
    depths = [result._depth(l) for l in depths]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(WIDTH, 3.3), layout="constrained")
    lam, rho = result.lambdas[1:], result.median()[1:]
    for colour, l in zip(sequential_colours(len(depths)), depths):
        ax.plot(lam, rho[:, l], "o-", ms=3, color=colour, label=f"$L={l}$")
        bx.plot(
            lam, np.median(result.gmax(l), axis=0)[1:], "o-", ms=3, color=colour, label=f"$L={l}$"
        )
        for a in (ax, bx):
            a.axvline(result.threshold_at(l), color=colour, lw=1, ls=":")
    deep = max(depths)
    ax.plot(
        lam,
        np.maximum(result.median("bound")[1:, deep], 1e-300),
        "--",
        color=PALETTE[7],
        label=f"book's bound, $L={deep}$",
    )
    for a in (ax, bx):
        a.set_xscale("log")
        a.set_xlabel(r"branch weight $\lambda$")
    ax.set_yscale("log")
    ax.set_ylim(max(1e-6, 0.3 * np.nanmin(rho[:, deep])), 2)
    ax.set_ylabel(r"relative residual $\rho_L$")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=len(depths) + 1)
    bx.axhline(1, color=PALETTE[7], lw=0.8, ls=":")
    bx.set_yscale("log")
    bx.set_ylabel(r"largest $g_l$, $l < L$")
    return fig


def phase_figure(result):
    """Three panels over (scale, strength): entropy / log n, log10 relative residual, the phase."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 2.8), constrained_layout=True, sharey=True)
    extent = dict(origin="lower", aspect="auto")
    xt, yt = range(len(result.scales)), range(len(result.strengths))
    panels = [
        (result.entropy.T, "entropy / log n", dict(vmin=0, vmax=1, cmap="viridis")),
        (
            np.log10(np.maximum(result.rho, 1e-16)).T,
            r"$\log_{10}\rho_L$",
            dict(vmin=-16, vmax=0, cmap="magma"),
        ),
    ]
    for ax, (data, label, kw) in zip(axes, panels):
        im = ax.imshow(data, **extent, **kw)
        fig.colorbar(im, ax=ax, shrink=0.8, label=label)
    codes = {p: i for i, p in enumerate(PHASES)}
    lab = np.vectorize(codes.get)(result.phases()).T
    axes[2].imshow(
        lab,
        **extent,
        cmap=ListedColormap([PALETTE[3], PALETTE[0], PALETTE[4], "#DDDDDD"]),
        vmin=-0.5,
        vmax=len(PHASES) - 0.5,
    )
    for i, j in np.ndindex(lab.shape):
        axes[2].text(
            j,
            i,
            "RE"[lab[i, j]] if lab[i, j] < 2 else ("B" if lab[i, j] == 2 else ""),
            ha="center",
            va="center",
            fontsize=9,
            color="white",
        )
    for ax in axes:
        ax.set_xticks(list(xt)[::2], [f"{s:g}" for s in result.scales[::2]])
        ax.set_xlabel("query/key scale $s$")
    axes[0].set_yticks(list(yt), [f"{a:g}" for a in result.strengths])
    axes[0].set_ylabel(r"skip strength $\alpha$")
    axes[2].set_title("R rank, E entropy", fontsize=9)
    return fig


def depth_figure(result):
    """Three panels: ``rho_L`` against ``alpha`` at the smallest scale, one curve per depth; the
    same against ``alpha / sqrt(L)``; and against ``alpha / sqrt(L)`` at the largest scale. The
    dotted line is :data:`RANK_LEVEL`."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 2.9), constrained_layout=True, sharey=True)
    panels = [
        (axes[0], 0, result.strengths, result.rho_fixed, r"skip strength $\alpha$"),
        (axes[1], 0, result.ratios, result.rho_scaled, r"$\alpha/\sqrt{L}$"),
        (axes[2], -1, result.ratios, result.rho_scaled, r"$\alpha/\sqrt{L}$"),
    ]
    colours = sequential_colours(len(result.depths))
    for ax, i, x, rho, label in panels:
        for colour, L, r in zip(colours, result.depths, rho[i]):
            ax.plot(x, np.maximum(r, 1e-17), "o-", ms=3, color=colour, label=f"$L={L}$")
        ax.axhline(RANK_LEVEL, color=PALETTE[7], lw=0.8, ls=":")
        ax.set(xscale="log", yscale="log", xlabel=label, title=f"$s={result.scales[i]:g}$")
        ticks = [t for t in (0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32) if x[0] <= t <= x[-1]]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
    axes[0].set_ylabel(r"relative residual $\rho_L$")
    axes[0].set_ylim(1e-17, 2)
    axes[0].legend(fontsize=8, loc="lower right")
    return fig


def particle_figure(result):
    """Three panels, one per ``beta`` of :attr:`paths`: each token's path projected on the first
    two coordinates (the view from above the sphere), its end marked by a dot."""
    import matplotlib.pyplot as plt

    betas = sorted(result.paths)
    fig, axes = plt.subplots(
        1, len(betas), figsize=(WIDTH, WIDTH / len(betas) + 0.3), constrained_layout=True
    )
    theta = np.linspace(0, 2 * np.pi, 200)
    for ax, beta in zip(np.atleast_1d(axes), betas):
        path = result.paths[beta]
        ax.plot(np.cos(theta), np.sin(theta), color="#BBBBBB", lw=0.8)
        for i in range(path.shape[1]):
            front = path[-1, i, 2] >= 0 if result.d > 2 else True
            ax.plot(path[:, i, 0], path[:, i, 1], color=PALETTE[0], lw=0.6, alpha=0.6)
            ax.plot(path[0, i, 0], path[0, i, 1], ".", color="#999999", ms=3)
            ax.plot(
                path[-1, i, 0],
                path[-1, i, 1],
                "o",
                ms=4,
                color=PALETTE[3] if front else PALETTE[1],
            )
        b = list(result.betas).index(beta)
        ax.set_title(rf"$\beta={beta:g}$: {result.counts[b, -1]} cluster(s)", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_frame_on(False)
    return fig


def cluster_count_figure(result):
    """The number of clusters against depth ``t``, one curve per ``beta`` (log count axis)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(WIDTH, 2.8), constrained_layout=True)
    for colour, beta, c in zip(sequential_colours(len(result.betas)), result.betas, result.counts):
        ax.step(result.times, c, where="post", color=colour, label=rf"$\beta={beta:g}$")
    ax.set_yscale("log")
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100) if t <= result.n]
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("depth $t$")
    ax.set_ylabel("clusters")
    ax.legend(fontsize=8, ncol=2)
    return fig
