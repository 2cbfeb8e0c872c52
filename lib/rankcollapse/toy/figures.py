"""Drawings of the chapter "Which paths do trained networks use?" (each on an ``Axes`` it is given).

They compute nothing: every value comes from :func:`rankcollapse.toy.evaluate_paths`,
``rc.paths.length_profile``, :func:`rankcollapse.toy.rollout`, or (chapter "What the theorem
does not say") :func:`rankcollapse.toy.dynamics.dynamics_study` and
:func:`rankcollapse.toy.landscape.landscape_study`. They follow the book's page
rules (``rc.plotting``): colours from ``PALETTE`` (Okabe-Ito) with mid-grey for reference
lines, integer ticks on path lengths and depths, titles fitted to the panel
(``rc.plotting.fit_title``), no legend inside a panel (the chapter puts one key below the row
of panels).
"""

from __future__ import annotations

import numpy as np

__all__ = ["accuracy_by_length", "single_paths", "profile", "trajectories", "relative_residual_by_depth",
           "training_dynamics", "loss_slices"]


def _plotting():
    from .. import plotting

    return plotting


def _length_axis(ax, title: str, ylim=(0, 1.03)):
    """Path length on x with integer ticks, accuracy limits, a title fitted to the panel."""
    P = _plotting()
    ax.set(xlabel="path length", ylim=ylim)
    P.integer_ticks(ax, "x")
    if title:
        P.fit_title(ax, title)
    return ax


def accuracy_by_length(ax, ev, full: float, baseline: float, baseline_label: str = "trivial predictor",
                       title: str = ""):
    """The paper's figure with the exact value beside it: for each path length, the accuracy of
    ``k`` sampled paths (mean and standard deviation over the draws, for each ``k``), of all
    paths of that length (exact), the full model's and a trivial predictor's."""
    P = _plotting()
    C = P.PALETTE
    x = np.arange(ev.L + 1)
    ks = sorted(ev.sampled)
    offsets = np.linspace(-0.15, 0.15, len(ks))
    for k, off, color in zip(ks, offsets, (C[1], C[2], C[4])):
        s = ev.sampled[k]
        ax.errorbar(x + off, s.mean(1), yerr=s.std(1), fmt="o", ms=3, capsize=2, color=color, lw=1,
                    label=f"{k} sampled paths")
    ax.plot(x, ev.length_accuracy, "s-", ms=4, color=C[0], label="all paths of the length (exact)")
    ax.axhline(full, ls="--", lw=1, color=P.INK, label="full model")
    ax.axhline(baseline, ls=":", lw=1.4, color=C[3], label=baseline_label)
    return _length_axis(ax, title)


def single_paths(ax, ev, full: float, title: str = ""):
    """Every single path's accuracy, by length (mean, and the band from worst to best), and the
    accuracy of all paths up to each length."""
    P = _plotting()
    C = P.PALETTE
    st = ev.per_length()
    x = st["length"]
    ax.fill_between(x, st["worst"], st["best"], color=C[1], alpha=0.25, lw=0, label="one path: worst to best")
    ax.plot(x, st["mean"], "o-", ms=3, color=C[1], label="one path: mean")
    ax.plot(x, ev.cumulative_accuracy, "s-", ms=4, color=C[2], label="all paths up to the length")
    ax.axhline(full, ls="--", lw=1, color=P.INK, label="full model")
    return _length_axis(ax, title)


def profile(ax, trained: dict, initial: dict, key: str = "residual_share", title: str = ""):
    """One quantity of ``rc.paths.length_profile`` (averaged over sequences and tokens' batch axis)
    against path length, for the trained network and the same network at initialisation."""
    C = _plotting().PALETTE
    for prof, label, color, style in ((trained, "trained", C[0], "o-"), (initial, "at initialisation", C[3], "s--")):
        v = np.asarray(prof[key])
        v = v.reshape(v.shape[0], -1).mean(1)
        ax.plot(np.arange(len(v)), v, style, ms=3, color=color, label=label)
    return _length_axis(ax, title, ylim=None)


def trajectories(ax, traj, title: str = "", lim: float = 0.56):
    """The two points of a circle rollout ``(steps + 1, 2, 2)`` through depth, start marked."""
    P = _plotting()
    C = P.PALETTE
    t = np.asarray(traj)
    for i, color in ((0, C[0]), (1, C[3])):
        ax.plot(t[:, i, 0], t[:, i, 1], "-", lw=1, color=color, label=f"point {i + 1}")
        ax.plot(t[0, i, 0], t[0, i, 1], "o", ms=4, color=color)
        ax.plot(t[-1, i, 0], t[-1, i, 1], "x", ms=5, color=color)
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", xlabel="$x$", ylabel="$y$")
    if title:
        P.fit_title(ax, title)
    return ax


def relative_residual_by_depth(ax, rel: dict, labels: dict, title: str = ""):
    """The relative residual ``(steps + 1,)`` of each circle rollout against depth (applications
    of the layer), one line per variant, labelled ``labels[variant]``."""
    P = _plotting()
    for i, (variant, r) in enumerate(rel.items()):
        ax.plot(np.arange(len(r)), r, color=P.PALETTE[i], label=labels[variant])
    ax.set(ylim=(0, 1.05), xlabel="depth (applications)")
    P.integer_ticks(ax, "x")
    if title:
        P.fit_title(ax, title)
    return ax


def _variants():
    C = _plotting().PALETTE
    return ((True, "with skips", C[0], "o-"), (False, "without skips", C[3], "s--"))


def training_dynamics(axes, study, floor: float = 1e-17):
    """Three panels on the kept epochs of one :class:`~rankcollapse.toy.dynamics.DynamicsStudy`:
    (a) the stable rank of the attention weight matrices (mean over matrices, band from the
    smallest to the largest), (b) the relative residual after the last layer (log scale, values
    below ``floor`` drawn at ``floor``), (c) the held-out token accuracy; both variants in each."""
    P = _plotting()
    a, b, c = axes
    x = study.epochs
    for skip, label, color, style in _variants():
        sr = study.stable_rank[skip]
        a.fill_between(x, sr.min(1), sr.max(1), color=color, alpha=0.15, lw=0)
        a.plot(x, sr.mean(1), style, ms=3, color=color, label=label)
        b.semilogy(x, np.clip(study.residual[skip][:, -1], floor, None), style, ms=3, color=color, label=label)
        c.plot(x, study.accuracy[skip], style, ms=3, color=color, label=label)
    L = study.residual[True].shape[1] - 1
    a.set(xlabel="epoch", ylabel="stable rank of $W$")
    b.set(xlabel="epoch", ylabel=f"relative residual, layer {L}")
    c.set(xlabel="epoch", ylabel="held-out token accuracy", ylim=(0, 1.03))
    for ax, title in zip(axes, ("(a) weights", "(b) tokens", "(c) accuracy")):
        P.integer_ticks(ax, "x")
        P.fit_title(ax, title)
    return axes


def loss_slices(ax, landscape, title: str = ""):
    """Every filter-normalised loss slice of a :class:`~rankcollapse.toy.landscape.LandscapeStudy`
    (one thin line per direction), both variants, the trained weights at ``alpha = 0``."""
    P = _plotting()
    for skip, label, color, style in _variants():
        s = landscape.slices[skip]
        for i, row in enumerate(s.losses):
            ax.plot(s.alphas, row, style[1:], lw=1.2, color=color, label=label if i == 0 else None)
        ax.plot([0], [s.loss0], style[0], ms=4, color=color)
    ax.set(xlabel=r"step $\alpha$ along a filter-normalised direction", ylabel="training loss")
    if title:
        P.fit_title(ax, title)
    return ax
