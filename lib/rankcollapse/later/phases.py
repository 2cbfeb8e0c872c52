"""Two collapses, one knob: rank collapse at small query/key scale, entropy collapse at large.

Giorlandino and Goldt (2025) describe two failure modes of self-attention at initialisation: with
small query/key variance attention is nearly uniform and the tokens collapse together (rank
collapse), unless the residual connection is strong enough; with large variance each token attends
to nearly one other token (entropy collapse). This module measures both on the *same* networks,
over a grid of the query/key scale ``s`` and the skip strength ``alpha``:

.. math::  X_{l+1} = \\operatorname{LN}\\big(\\alpha X_l + \\operatorname{SA}_s(X_l)\\big),

where ``SA_s`` is a core :class:`~rankcollapse.san.SAN` layer whose ``W_Q`` and ``W_K`` are
multiplied by ``s`` (the logits by ``s^2``) and ``LN`` its post-LayerNorm (gain 1, shift 0), which
keeps every token's scale fixed so that ``s`` alone sets the logits' scale. ``alpha = 0`` is pure
attention with LayerNorm. The attention entropy of row ``i`` of ``P`` is
:math:`H_i = -\\sum_j P_{ij}\\log P_{ij}` (nats, ``0 log 0 = 0``): ``log n`` for uniform attention,
0 for attention on one token.

:func:`phase_study` measures the grid at one depth; :func:`depth_study` follows the boundary of
rank collapse through depth, at fixed ``alpha`` and with ``alpha = a sqrt(L)``, on the same
networks continued deeper. The result objects return numbers; the sentences that state them are
the chapter's. Book: chapter "After the paper", section 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import (
    MAX_LAYERS,
    check_index,
    check_int,
    check_positive_float,
)
from .phase_grid import (  # noqa: F401  (re-exported)
    ENTROPY_LEVEL,
    MAX_ENTRIES,
    PHASES,
    RANK_LEVEL,
    attention_entropy,
    check_grid,
    measure_cell,
    phase_setup,
    post_ln_states,
    scaled_qk_san,
)

__all__ = [
    "attention_entropy",
    "scaled_qk_san",
    "post_ln_states",
    "PhaseResult",
    "phase_study",
    "crossing",
    "DepthResult",
    "depth_study",
    "RANK_LEVEL",
    "ENTROPY_LEVEL",
    "PHASES",
    "MAX_ENTRIES",
]


@dataclass
class PhaseResult:
    """Both collapses on one grid (section 4). ``scales`` (query/key scale ``s``) by ``strengths``
    (``alpha``); ``entropy``: ``(len(scales), len(strengths))`` mean attention entropy over layers,
    heads, rows and samples, as a fraction of ``log n``; ``rho``: the median Frobenius relative
    residual after ``n_layers`` layers, same shape; sizes ``n_layers``, ``n_tokens``,
    ``samples``."""

    scales: np.ndarray
    strengths: np.ndarray
    entropy: np.ndarray
    rho: np.ndarray
    n_layers: int
    n_tokens: int
    samples: int

    def phases(self) -> np.ndarray:
        """``(len(scales), len(strengths))`` labels from :data:`PHASES` (thresholds
        :data:`RANK_LEVEL`, :data:`ENTROPY_LEVEL`)."""
        rank, ent = self.rho < RANK_LEVEL, self.entropy < ENTROPY_LEVEL
        out = np.full(self.rho.shape, "neither", dtype=object)
        out[rank & ~ent], out[ent & ~rank], out[rank & ent] = (
            "rank collapse",
            "entropy collapse",
            "both",
        )
        return out

    def critical_strength(self, scale_index: int = 0) -> float:
        """The smallest ``alpha`` of the grid that avoids rank collapse at ``scales[scale_index]``
        (``nan`` if none)."""
        scale_index = check_index(
            "scale_index", scale_index, len(self.scales), what="scales", allow_negative=True
        )
        ok = self.rho[scale_index] >= RANK_LEVEL
        return float(self.strengths[np.argmax(ok)]) if ok.any() else float("nan")

    def entropy_large(self) -> float:
        """The largest entropy fraction at the largest scale among strengths > 0 (with a skip)."""
        skip = self.strengths > 0
        return float(self.entropy[-1, skip].max()) if skip.any() else float("nan")


def phase_study(
    *,
    scales,
    strengths,
    n_layers: int,
    n_heads: int,
    d_model: int,
    n_tokens: int,
    samples: int,
    seed: int,
    generator,
) -> PhaseResult:
    """Attention entropy and relative residual over query/key scales and skip strengths (section 4).

    ``samples`` networks (seeds ``seed + s``) read ``n_tokens`` standard normal tokens drawn from
    ``generator``; the same networks (only ``W_Q, W_K`` scaled) and inputs serve every cell.
    ``scales`` and ``strengths``: increasing numbers ``>= 0``.
    """
    scales, strengths = check_grid("scales", scales), check_grid("strengths", strengths)
    cfg, seed, X = phase_setup(
        generator, n_layers, n_heads, d_model, n_tokens, samples, seed, len(strengths)
    )
    entropy = np.zeros((len(scales), len(strengths)))
    rho = np.zeros_like(entropy)
    for i, s in enumerate(scales):
        (rho[i],), (entropy[i],) = measure_cell(cfg, s, X, strengths, seed, [cfg.n_layers])
    return PhaseResult(scales, strengths, entropy, rho, cfg.n_layers, X.shape[-2], X.shape[0])


def crossing(x, y, level: float) -> float:
    """The first ``x`` at which ``y`` (increasing along the grid ``x > 0``) reaches ``level``,
    interpolated linearly in ``log x`` and ``log y`` between the grid points around it; ``nan``
    when ``y`` is already at ``level`` at the first point or never reaches it (the boundary lies
    outside the grid). ``level`` must be positive (its log is taken); ``x`` and ``y`` finite."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2 or bool((x <= 0).any()):
        raise ValueError(
            f"x and y must be 1-d of one length >= 2, x > 0; got shapes {x.shape}, {y.shape}"
        )
    for name, v in (("x", x), ("y", y)):
        if not np.isfinite(v).all():
            raise ValueError(
                f"{name} must be finite, got {int((~np.isfinite(v)).sum())} NaN or infinite entries"
            )
    level = check_positive_float("level", level)  # interpolated in log y: a level <= 0 has no log
    above = np.nonzero(y >= level)[0]
    if not above.size or above[0] == 0:
        return float("nan")
    j = above[0]
    ly0, ly1 = np.log(max(y[j - 1], 1e-300)), np.log(y[j])
    t = (math.log(level) - ly0) / (ly1 - ly0)
    return float(np.exp(np.log(x[j - 1]) + t * (np.log(x[j]) - np.log(x[j - 1]))))


@dataclass
class DepthResult:
    """How the boundary of rank collapse moves with depth (section 4), on the networks of
    :func:`phase_study` continued deeper. ``depths``; ``scales`` (the query/key scales measured);
    ``strengths``: a fixed ``alpha`` at every depth; ``ratios``: ``a`` with ``alpha = a sqrt(L)``.
    ``rho_fixed``, ``entropy_fixed``: ``(len(scales), len(depths), len(strengths))``, the median
    relative residual after ``L`` layers and the mean attention entropy over them (a fraction of
    ``log n``); ``rho_scaled``, ``entropy_scaled``: the same with ``len(ratios)`` last; sizes
    ``n_tokens``, ``samples``."""

    depths: np.ndarray
    scales: np.ndarray
    strengths: np.ndarray
    ratios: np.ndarray
    rho_fixed: np.ndarray
    entropy_fixed: np.ndarray
    rho_scaled: np.ndarray
    entropy_scaled: np.ndarray
    n_tokens: int
    samples: int

    def critical(self, scale_index: int = 0, *, scaled: bool = False) -> np.ndarray:
        """Per depth, the skip strength at which ``rho_L`` reaches :data:`RANK_LEVEL` at
        ``scales[scale_index]`` (:func:`crossing`): ``alpha`` (``scaled=False``) or ``a = alpha /
        sqrt(L)`` (``scaled=True``). ``nan`` where the boundary lies outside the grid."""
        x, rho = (self.ratios, self.rho_scaled) if scaled else (self.strengths, self.rho_fixed)
        scale_index = check_index(
            "scale_index", scale_index, len(rho), what="scales", allow_negative=True
        )
        return np.array([crossing(x, r, RANK_LEVEL) for r in rho[scale_index]])


def depth_study(
    *,
    depths,
    scales,
    strengths,
    ratios,
    n_heads: int,
    d_model: int,
    n_tokens: int,
    samples: int,
    seed: int,
    generator,
) -> DepthResult:
    """The relative residual after each of ``depths`` layers at the query/key ``scales``, for a
    fixed skip strength ``alpha`` in ``strengths`` and for ``alpha = a sqrt(L)``, ``a`` in
    ``ratios`` (section 4). The networks (seeds ``seed + k``, ``k < samples``) and the inputs
    (``n_tokens`` standard normal tokens from ``generator``) are :func:`phase_study`'s with the same
    arguments: the network of depth ``L`` is the first ``L`` layers of the deepest one. ``depths``:
    increasing integers ``>= 1``; the grids: increasing numbers, ``scales >= 0``, ``strengths`` and
    ``ratios > 0``.
    """
    for L in list(depths):
        check_int("depths", L, maximum=MAX_LAYERS)
    depths = [check_int("depths", L) for L in depths]
    if not depths or any(b <= a for a, b in zip(depths, depths[1:])):
        raise ValueError(
            f"depths must be a non-empty increasing sequence of integers, got {depths}"
        )
    scales, strengths, ratios = (
        check_grid("scales", scales),
        check_grid("strengths", strengths),
        check_grid("ratios", ratios),
    )
    for name, grid in (("strengths", strengths), ("ratios", ratios)):
        if grid[0] <= 0:
            raise ValueError(
                f"{name} must be > 0 (a boundary is read on a log scale), got {grid[0]}"
            )
    batch = max(len(strengths), len(ratios))
    cfg, seed, X = phase_setup(
        generator, depths[-1], n_heads, d_model, n_tokens, samples, seed, batch
    )
    shape = (len(scales), len(depths))
    rho_f, ent_f = np.zeros(shape + (len(strengths),)), np.zeros(shape + (len(strengths),))
    rho_s, ent_s = np.zeros(shape + (len(ratios),)), np.zeros(shape + (len(ratios),))
    for i, s in enumerate(scales):
        rho_f[i], ent_f[i] = measure_cell(cfg, s, X, strengths, seed, depths)
        for j, L in enumerate(depths):
            (rho_s[i, j],), (ent_s[i, j],) = measure_cell(
                cfg, s, X, ratios * math.sqrt(L), seed, [L]
            )
    return DepthResult(
        np.array(depths),
        scales,
        strengths,
        ratios,
        rho_f,
        ent_f,
        rho_s,
        ent_s,
        X.shape[-2],
        X.shape[0],
    )
