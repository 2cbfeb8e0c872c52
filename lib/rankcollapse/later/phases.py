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
import torch

from .._validate import (
    MAX_LAYERS,
    check_index,
    check_int,
    check_positive_float,
    check_probability_matrix,
    check_seed,
    derive_seed,
)
from ..residual import relative_residual
from ..san import SAN, SANConfig, check_san, check_size

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

RANK_LEVEL = 0.05  # relative residual after L layers below this: rank collapse
ENTROPY_LEVEL = 0.25  # mean attention entropy below this fraction of log n: entropy collapse
PHASES = ("rank collapse", "entropy collapse", "both", "neither")
MAX_ENTRIES = (
    10**8
)  # samples * strengths * n_tokens * max(n_tokens * n_heads, d_model): refused above


def attention_entropy(P) -> torch.Tensor:
    """The entropy of each row of the attention ``P`` (``(..., n, n)``, rows summing to 1), in
    nats: :math:`H_i = -\\sum_j P_{ij} \\log P_{ij}` with ``0 log 0 = 0``. Shape ``(..., n)``."""
    P = check_probability_matrix("P", P)
    return -torch.special.xlogy(P, P).sum(dim=-1)


@torch.no_grad()
def scaled_qk_san(config: SANConfig, qk_scale: float, *, seed: int) -> SAN:
    """``config``'s network (drawn from ``seed``, with post-LayerNorm) whose ``W_Q`` and ``W_K`` are
    multiplied by ``qk_scale`` (``>= 0``): the same network at every scale, only the logits scaled
    by ``qk_scale**2``. ``config`` must have no MLP, biases or masks; its ``skip`` is ignored
    (:func:`post_ln_states` sets the skip strength)."""
    if not isinstance(config, SANConfig):
        raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
    if config.mlp or config.bias or config.causal or config.attention != "dot":
        raise ValueError(
            "config must be attention only (mlp=0, bias=False, causal=False, attention='dot')"
        )
    qk_scale = check_positive_float("qk_scale", qk_scale, allow_zero=True)
    model = SAN(config.replace(layernorm="post", skip=True), seed=seed)
    for block in dict.fromkeys(model.layers):
        block.W_Q.mul_(qk_scale)
        block.W_K.mul_(qk_scale)
    return model


@torch.no_grad()
def post_ln_states(model, X, strength: float):
    """``(states, attentions)`` of ``X_{l+1} = LN(strength * X_l + SA_l(X_l))``, ``l = 0..L-1``:
    ``model``'s weights run with ``skip=True, skip_strength=strength``.

    ``model``: a :class:`~rankcollapse.san.SAN` with post-LayerNorm and no MLP (as
    :func:`scaled_qk_san` builds). ``X``: ``(..., n, d)``. ``states``: ``L + 1`` tensors
    ``(..., n, d)``; ``attentions``: ``L`` tensors ``(..., H, n, n)``.
    """
    cfg = check_san(model).config
    if cfg.layernorm != "post" or cfg.mlp:
        raise ValueError("model must have layernorm='post' and no MLP (as scaled_qk_san builds)")
    strength = check_positive_float("strength", strength, allow_zero=True)
    out = model.replace(skip=True, skip_strength=strength)(X)
    return out.hidden_states, out.attentions


@dataclass
class PhaseResult:
    """Both collapses on one grid (section 4). ``scales`` (query/key scale ``s``) by ``strengths``
    (``alpha``); ``entropy``: ``(len(scales), len(strengths))`` mean attention entropy over layers,
    heads, rows and samples, as a fraction of ``log n``; ``rho``: the median Frobenius relative
    residual after ``n_layers`` layers, same shape; sizes ``n_layers``, ``n_tokens``, ``samples``."""

    scales: np.ndarray
    strengths: np.ndarray
    entropy: np.ndarray
    rho: np.ndarray
    n_layers: int
    n_tokens: int
    samples: int

    def phases(self) -> np.ndarray:
        """``(len(scales), len(strengths))`` labels from :data:`PHASES` (thresholds :data:`RANK_LEVEL`, :data:`ENTROPY_LEVEL`)."""
        rank, ent = self.rho < RANK_LEVEL, self.entropy < ENTROPY_LEVEL
        out = np.full(self.rho.shape, "neither", dtype=object)
        out[rank & ~ent], out[ent & ~rank], out[rank & ent] = (
            "rank collapse",
            "entropy collapse",
            "both",
        )
        return out

    def critical_strength(self, scale_index: int = 0) -> float:
        """The smallest ``alpha`` of the grid that avoids rank collapse at ``scales[scale_index]`` (``nan`` if none)."""
        scale_index = check_index(
            "scale_index", scale_index, len(self.scales), what="scales", allow_negative=True
        )
        ok = self.rho[scale_index] >= RANK_LEVEL
        return float(self.strengths[np.argmax(ok)]) if ok.any() else float("nan")

    def entropy_large(self) -> float:
        """The largest entropy fraction at the largest scale among strengths > 0 (with a skip)."""
        skip = self.strengths > 0
        return float(self.entropy[-1, skip].max()) if skip.any() else float("nan")

    def figure(self):
        """Three panels over (scale, strength): entropy / log n, log10 relative residual, the phase."""
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap

        from ..plotting import PALETTE, WIDTH

        fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 2.8), constrained_layout=True, sharey=True)
        extent = dict(origin="lower", aspect="auto")
        xt, yt = range(len(self.scales)), range(len(self.strengths))
        panels = [
            (self.entropy.T, "entropy / log n", dict(vmin=0, vmax=1, cmap="viridis")),
            (
                np.log10(np.maximum(self.rho, 1e-16)).T,
                r"$\log_{10}\rho_L$",
                dict(vmin=-16, vmax=0, cmap="magma"),
            ),
        ]
        for ax, (data, label, kw) in zip(axes, panels):
            im = ax.imshow(data, **extent, **kw)
            fig.colorbar(im, ax=ax, shrink=0.8, label=label)
        codes = {p: i for i, p in enumerate(PHASES)}
        lab = np.vectorize(codes.get)(self.phases()).T
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
            ax.set_xticks(list(xt)[::2], [f"{s:g}" for s in self.scales[::2]])
            ax.set_xlabel("query/key scale $s$")
        axes[0].set_yticks(list(yt), [f"{a:g}" for a in self.strengths])
        axes[0].set_ylabel(r"skip strength $\alpha$")
        axes[2].set_title("R rank, E entropy", fontsize=9)
        return fig


def _grid(name, values) -> np.ndarray:
    """``values`` as an increasing array of numbers ``>= 0`` (a grid), or a clear error naming ``name``."""
    try:
        vals = [check_positive_float(name, v, allow_zero=True) for v in values]
    except TypeError:
        raise TypeError(
            f"{name} must be a sequence of numbers >= 0, got {type(values).__name__}"
        ) from None
    if not vals or any(b <= a for a, b in zip(vals, vals[1:])):
        raise ValueError(f"{name} must be a non-empty increasing sequence, got {vals}")
    return np.array(vals)


def _setup(generator, n_layers, n_heads, d_model, n_tokens, samples, seed, batch):
    """Checked sizes, the config and the inputs ``(samples, n, d)`` drawn from ``generator``."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator (run.stream().generator), got {type(generator).__name__}"
        )
    L, H, d = (
        check_int("n_layers", n_layers),
        check_int("n_heads", n_heads),
        check_int("d_model", d_model),
    )
    n, samples, seed = (
        check_int("n_tokens", n_tokens, minimum=2),
        check_int("samples", samples),
        check_seed("seed", seed),
    )
    cfg = SANConfig(n_layers=L, n_heads=H, d_model=d)
    check_size(cfg)
    size = samples * batch * n * max(n * H, d)
    if size > MAX_ENTRIES:
        raise ValueError(
            f"samples * len(strengths) * n_tokens * max(n_tokens * n_heads, d_model) = {size:,} "
            f"exceeds {MAX_ENTRIES:,}: make the study smaller"
        )
    return cfg, seed, torch.randn(samples, n, d, generator=generator, dtype=torch.float64)


@torch.no_grad()
def _measure(cfg, scale, X, alphas, seed, depths):
    """Median ``rho`` after each of ``depths`` layers and the mean entropy fraction over those
    layers, ``(len(depths), len(alphas))`` each, for the networks ``seed + k`` (``k`` over ``X``'s
    samples, the first ``max(depths)`` layers) at query/key ``scale``, at every skip strength."""
    n = X.shape[-2]
    cfg = cfg.replace(n_layers=max(depths))
    rhos, ents = [], []
    for k, x in enumerate(X):
        model = scaled_qk_san(cfg, scale, seed=derive_seed(seed, k))
        rho_k, ent_k = [], []
        for a in alphas:
            out = model.replace(skip_strength=float(a))(x)
            per_layer = torch.stack(
                [attention_entropy(P).mean(dim=(-1, -2)) for P in out.attentions]
            )
            rho_k.append(
                torch.stack([relative_residual(out.hidden_states[L], norm="fro") for L in depths])
            )
            ent_k.append(torch.stack([per_layer[:L].mean() for L in depths]))
        rhos.append(torch.stack(rho_k, dim=1))  # (len(depths), len(alphas))
        ents.append(torch.stack(ent_k, dim=1))
    rho = np.median(torch.stack(rhos).numpy(), axis=0)
    return rho, torch.stack(ents).mean(dim=0).numpy() / math.log(n)


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
    scales, strengths = _grid("scales", scales), _grid("strengths", strengths)
    cfg, seed, X = _setup(
        generator, n_layers, n_heads, d_model, n_tokens, samples, seed, len(strengths)
    )
    entropy = np.zeros((len(scales), len(strengths)))
    rho = np.zeros_like(entropy)
    for i, s in enumerate(scales):
        (rho[i],), (entropy[i],) = _measure(cfg, s, X, strengths, seed, [cfg.n_layers])
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

    def figure(self):
        """Three panels: ``rho_L`` against ``alpha`` at the smallest scale, one curve per depth; the
        same against ``alpha / sqrt(L)``; and against ``alpha / sqrt(L)`` at the largest scale. The
        dotted line is :data:`RANK_LEVEL`."""
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter

        from ..plotting import PALETTE, WIDTH, sequential_colours

        fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 2.9), constrained_layout=True, sharey=True)
        panels = [
            (axes[0], 0, self.strengths, self.rho_fixed, r"skip strength $\alpha$"),
            (axes[1], 0, self.ratios, self.rho_scaled, r"$\alpha/\sqrt{L}$"),
            (axes[2], -1, self.ratios, self.rho_scaled, r"$\alpha/\sqrt{L}$"),
        ]
        colours = sequential_colours(len(self.depths))
        for ax, i, x, rho, label in panels:
            for colour, L, r in zip(colours, self.depths, rho[i]):
                ax.plot(x, np.maximum(r, 1e-17), "o-", ms=3, color=colour, label=f"$L={L}$")
            ax.axhline(RANK_LEVEL, color=PALETTE[7], lw=0.8, ls=":")
            ax.set(xscale="log", yscale="log", xlabel=label, title=f"$s={self.scales[i]:g}$")
            ticks = [t for t in (0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32) if x[0] <= t <= x[-1]]
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.xaxis.set_minor_formatter(NullFormatter())
        axes[0].set_ylabel(r"relative residual $\rho_L$")
        axes[0].set_ylim(1e-17, 2)
        axes[0].legend(fontsize=8, loc="lower right")
        return fig


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
    """The relative residual after each of ``depths`` layers at the query/key ``scales``, for a fixed
    skip strength ``alpha`` in ``strengths`` and for ``alpha = a sqrt(L)``, ``a`` in ``ratios``
    (section 4). The networks (seeds ``seed + k``, ``k < samples``) and the inputs (``n_tokens``
    standard normal tokens from ``generator``) are :func:`phase_study`'s with the same arguments:
    the network of depth ``L`` is the first ``L`` layers of the deepest one. ``depths``: increasing
    integers ``>= 1``; the grids: increasing numbers, ``scales >= 0``, ``strengths`` and ``ratios > 0``.
    """
    for L in list(depths):
        check_int("depths", L, maximum=MAX_LAYERS)
    depths = [check_int("depths", L) for L in depths]
    if not depths or any(b <= a for a, b in zip(depths, depths[1:])):
        raise ValueError(
            f"depths must be a non-empty increasing sequence of integers, got {depths}"
        )
    scales, strengths, ratios = (
        _grid("scales", scales),
        _grid("strengths", strengths),
        _grid("ratios", ratios),
    )
    for name, grid in (("strengths", strengths), ("ratios", ratios)):
        if grid[0] <= 0:
            raise ValueError(
                f"{name} must be > 0 (a boundary is read on a log scale), got {grid[0]}"
            )
    batch = max(len(strengths), len(ratios))
    cfg, seed, X = _setup(generator, depths[-1], n_heads, d_model, n_tokens, samples, seed, batch)
    shape = (len(scales), len(depths))
    rho_f, ent_f = np.zeros(shape + (len(strengths),)), np.zeros(shape + (len(strengths),))
    rho_s, ent_s = np.zeros(shape + (len(ratios),)), np.zeros(shape + (len(ratios),))
    for i, s in enumerate(scales):
        rho_f[i], ent_f[i] = _measure(cfg, s, X, strengths, seed, depths)
        for j, L in enumerate(depths):
            (rho_s[i, j],), (ent_s[i, j],) = _measure(cfg, s, X, ratios * math.sqrt(L), seed, [L])
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
