"""Drawings of the chapter "Which paths do trained networks use?" (each on an ``Axes`` it is given).

They compute nothing beyond averages over seeds: every value comes from
:func:`rankcollapse.toy.evaluate_paths`,
``rc.paths.length_profile``, :func:`rankcollapse.toy.rollout`, or (chapter "What the theorem
does not say") :func:`rankcollapse.toy.dynamics.dynamics_study` and
:func:`rankcollapse.toy.landscape.landscape_study`. They follow the book's page
rules (``book.plotting``): colours from ``PALETTE`` (Okabe-Ito) with mid-grey for reference
lines, integer ticks on path lengths and depths, titles fitted to the panel
(``book.plotting.fit_title``), no legend inside a panel (the chapter puts one key below the row
of panels).
"""

from __future__ import annotations

import numpy as np

from rankcollapse._validate import check_axes

from .drawings import fit_title
from .style import INK, PALETTE, integer_ticks

__all__ = [
    "accuracy_by_length",
    "single_paths",
    "profile",
    "per_path_residual",
    "trajectories",
    "merged_fraction",
    "training_dynamics",
    "loss_slices",
]


def _length_axis(ax, title: str, ylim=(0, 1.03)):
    """Path length on x with integer ticks, accuracy limits, a title fitted to the panel."""
    ax.set(xlabel="path length", ylim=ylim)
    integer_ticks(ax, "x")
    if title:
        fit_title(ax, title)
    return ax


def accuracy_by_length(
    ax,
    ev,
    baseline: float,
    baseline_label: str = "trivial predictor",
    *,
    others=(),
    official=None,
    title: str = "",
):
    """The paper's figure with the exact value beside it, for one network ``ev`` (a
    :class:`~rankcollapse.toy.PathEvaluation`), everything on its matched tokens: for each path
    length, the accuracy of ``k`` sampled paths (mean and standard deviation over the draws, for
    each ``k``) and of all paths of that length (exact); the full model's; a trivial
    predictor's. ``others``: evaluations of the same task from other seeds, their exact
    per-length accuracies drawn as thin lines. ``official``: per-length accuracies ``(L+1,)`` of
    a network trained with the official optimiser, dashed."""
    check_axes("ax", ax)
    C = PALETTE
    x = np.arange(ev.L + 1)
    for i, other in enumerate(others):
        ax.plot(
            x,
            other.matched["length"],
            "-",
            lw=0.8,
            color=C[0],
            alpha=0.45,
            label="other seeds (exact)" if i == 0 else None,
        )
    ks = sorted(ev.sampled)
    offsets = np.linspace(-0.15, 0.15, len(ks))
    for k, off, color in zip(ks, offsets, (C[1], C[2], C[4])):
        s = ev.sampled[k]
        ax.errorbar(
            x + off,
            s.mean(1),
            yerr=s.std(1),
            fmt="o",
            ms=3,
            capsize=2,
            color=color,
            lw=1,
            label=f"{k} sampled paths",
        )
    ax.plot(
        x, ev.matched["length"], "s-", ms=4, color=C[0], label="all paths of the length (exact)"
    )
    if official is not None:
        ax.plot(x, official, "^--", ms=3, lw=1, color=C[5], label="official optimiser (exact)")
    ax.axhline(ev.matched["full"], ls="--", lw=1, color=INK, label="full model")
    ax.axhline(baseline, ls=":", lw=1.4, color=C[3], label=baseline_label)
    return _length_axis(ax, title)


def single_paths(ax, ev, title: str = ""):
    """Every single path's accuracy, by length (mean, and the band from worst to best), and the
    accuracy of all paths up to each length and of the full model, all on the matched tokens of
    ``ev``."""
    check_axes("ax", ax)
    C = PALETTE
    st = ev.per_length()
    x = st["length"]
    ax.fill_between(
        x, st["worst"], st["best"], color=C[1], alpha=0.25, lw=0, label="one path: worst to best"
    )
    ax.plot(x, st["mean"], "o-", ms=3, color=C[1], label="one path: mean")
    ax.plot(x, ev.matched["cumulative"], "s-", ms=4, color=C[2], label="all paths up to the length")
    ax.axhline(ev.matched["full"], ls="--", lw=1, color=INK, label="full model")
    return _length_axis(ax, title)


def _by_length(values):
    """``values``: one ``(L+1, ...)`` array per seed -> per length, the mean over the other axes,
    then the mean, smallest and largest over seeds: three ``(L+1,)`` arrays."""
    v = np.array([np.asarray(a).reshape(np.shape(a)[0], -1).mean(1) for a in values])
    return v.mean(0), v.min(0), v.max(0)


def profile(ax, trained, initial, key: str = "residual_share", title: str = ""):
    """One quantity of ``rc.paths.length_profile`` against path length, for the trained networks
    and the same networks at initialisation: ``trained`` and ``initial`` are lists of profiles
    (one per seed); each is averaged over its sequences, then the mean over seeds is drawn with
    a band from the smallest to the largest seed."""
    check_axes("ax", ax)
    C = PALETTE
    for profs, label, color, style in (
        (trained, "trained", C[0], "o-"),
        (initial, "at initialisation", C[3], "s--"),
    ):
        mean, lo, hi = _by_length([p[key] for p in profs])
        x = np.arange(len(mean))
        ax.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)
        ax.plot(x, mean, style, ms=3, color=color, label=label)
    return _length_axis(ax, title, ylim=None)


def per_path_residual(ax, evs, title: str = ""):
    """The mean over the paths of each length of one path's share of the output's residual
    (``PathEvaluation.path_residual``), log scale: the mean over the evaluations ``evs`` (one per
    seed) with a band from the smallest to the largest."""
    check_axes("ax", ax)
    C = PALETTE
    mean, lo, hi = _by_length([ev.per_length("path_residual")["mean"] for ev in evs])
    x = np.arange(len(mean))
    ax.fill_between(x, lo, hi, color=C[0], alpha=0.2, lw=0)
    ax.semilogy(x, mean, "o-", ms=3, color=C[0], label="trained")
    return _length_axis(ax, title, ylim=None)


def trajectories(ax, traj, title: str = "", lim: float = 0.56):
    """The two points of a circle rollout ``(steps + 1, 2, 2)`` through depth, start marked."""
    check_axes("ax", ax)
    C = PALETTE
    t = np.asarray(traj)
    for i, color in ((0, C[0]), (1, C[3])):
        ax.plot(t[:, i, 0], t[:, i, 1], "-", lw=1, color=color, label=f"point {i + 1}")
        ax.plot(t[0, i, 0], t[0, i, 1], "o", ms=4, color=color)
        ax.plot(t[-1, i, 0], t[-1, i, 1], "x", ms=5, color=color)
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", xlabel="$x$", ylabel="$y$")
    if title:
        fit_title(ax, title)
    return ax


def merged_fraction(ax, rel: dict, labels: dict, threshold: float = 0.5, title: str = ""):
    """For each circle variant, the fraction of its rollouts (one per seed) whose relative
    residual has fallen below ``threshold`` by depth ``t``: ``rel[variant]`` is a list of
    ``(steps + 1,)`` relative residuals, labelled ``labels[variant]``."""
    check_axes("ax", ax)
    for i, (variant, runs) in enumerate(rel.items()):
        r = np.array([np.minimum.accumulate(np.asarray(x)) for x in runs])
        ax.step(
            np.arange(r.shape[1]),
            (r < threshold).mean(0),
            where="post",
            color=PALETTE[i],
            label=labels[variant],
        )
    ax.set(ylim=(-0.03, 1.03), xlabel="depth (applications)")
    integer_ticks(ax, "x")
    if title:
        fit_title(ax, title)
    return ax


def _variants():
    C = PALETTE
    return ((True, "with skips", C[0], "o-"), (False, "without skips", C[3], "s--"))


def training_dynamics(axes, study, floor: float = 1e-17):
    """Three panels on the kept epochs of one :class:`~rankcollapse.toy.dynamics.DynamicsStudy`:
    (a) the stable rank of the attention weight matrices (mean over matrices, band from the
    smallest to the largest), (b) the relative residual after the last layer (log scale, values
    below ``floor`` drawn at ``floor``), (c) the held-out token accuracy; both variants in each."""
    if not isinstance(axes, (list, tuple)) and not hasattr(axes, "__len__"):
        raise TypeError(f"axes must be a sequence of matplotlib Axes, got {type(axes).__name__}")
    for i, a in enumerate(axes):
        check_axes(f"axes[{i}]", a)
    a, b, c = axes
    x = study.epochs
    for skip, label, color, style in _variants():
        sr = study.stable_rank[skip]
        a.fill_between(x, sr.min(1), sr.max(1), color=color, alpha=0.15, lw=0)
        a.plot(x, sr.mean(1), style, ms=3, color=color, label=label)
        b.semilogy(
            x,
            np.clip(study.residual[skip][:, -1], floor, None),
            style,
            ms=3,
            color=color,
            label=label,
        )
        c.plot(x, study.accuracy[skip], style, ms=3, color=color, label=label)
    L = study.residual[True].shape[1] - 1
    a.set(xlabel="epoch", ylabel="stable rank of $W$")
    b.set(xlabel="epoch", ylabel=f"relative residual, layer {L}")
    c.set(xlabel="epoch", ylabel="held-out token accuracy", ylim=(0, 1.03))
    for ax, title in zip(axes, ("(a) weights", "(b) tokens", "(c) accuracy")):
        integer_ticks(ax, "x")
        fit_title(ax, title)
    return axes


def loss_slices(ax, landscape, title: str = ""):
    """Every filter-normalised loss slice of a :class:`~rankcollapse.toy.landscape.LandscapeStudy`
    (one thin line per direction), both variants, the trained weights at ``alpha = 0``."""
    check_axes("ax", ax)
    for skip, label, color, style in _variants():
        s = landscape.slices[skip]
        for i, row in enumerate(s.losses):
            ax.plot(s.alphas, row, style[1:], lw=1.2, color=color, label=label if i == 0 else None)
        ax.plot([0], [s.loss0], style[0], ms=4, color=color)
    ax.set(xlabel=r"step $\alpha$ along a filter-normalised direction", ylabel="training loss")
    if title:
        fit_title(ax, title)
    return ax
