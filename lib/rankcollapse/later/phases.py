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
0 for attention on one token. Book: chapter "After the paper", section 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import as_tokens, check_int, check_positive_float, check_seed
from ..residual import relative_residual
from ..san import SAN, SANConfig, check_san, check_size
from .verdicts import Verdict

__all__ = ["attention_entropy", "scaled_qk_san", "post_ln_states", "PhaseResult", "phase_study",
           "RANK_LEVEL", "ENTROPY_LEVEL", "PHASES", "MAX_ENTRIES"]

RANK_LEVEL = 0.05  # relative residual after L layers below this: rank collapse
ENTROPY_LEVEL = 0.25  # mean attention entropy below this fraction of log n: entropy collapse
PHASES = ("rank collapse", "entropy collapse", "both", "neither")
MAX_ENTRIES = 10**8  # samples * strengths * n_tokens * max(n_tokens * n_heads, d_model): refused above


def attention_entropy(P) -> torch.Tensor:
    """The entropy of each row of the attention ``P`` (``(..., n, n)``, rows summing to 1), in
    nats: :math:`H_i = -\\sum_j P_{ij} \\log P_{ij}` with ``0 log 0 = 0``. Shape ``(..., n)``."""
    P = as_tokens("P", P)
    if P.shape[-1] != P.shape[-2]:
        raise ValueError(f"P must be square in its last two dimensions, got {tuple(P.shape)}")
    if bool((P < 0).any()):
        raise ValueError("P must have non-negative entries (an attention matrix)")
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
        raise ValueError("config must be attention only (mlp=0, bias=False, causal=False, attention='dot')")
    qk_scale = check_positive_float("qk_scale", qk_scale, allow_zero=True)
    model = SAN(config.replace(layernorm="post", skip=True), seed=check_seed("seed", seed))
    for block in dict.fromkeys(model.layers):
        block.W_Q.mul_(qk_scale)
        block.W_K.mul_(qk_scale)
    return model


@torch.no_grad()
def post_ln_states(model, X, strength: float):
    """``(states, attentions)`` of ``X_{l+1} = LN(strength * X_l + SA_l(X_l))``, ``l = 0..L-1``.

    ``model``: a :class:`~rankcollapse.san.SAN` with post-LayerNorm and no MLP (as
    :func:`scaled_qk_san` builds). ``X``: ``(..., n, d)``. ``states``: ``L + 1`` tensors
    ``(..., n, d)``; ``attentions``: ``L`` tensors ``(..., H, n, n)``.
    """
    cfg = check_san(model).config
    if cfg.layernorm != "post" or cfg.mlp:
        raise ValueError("model must have layernorm='post' and no MLP (as scaled_qk_san builds)")
    strength = check_positive_float("strength", strength, allow_zero=True)
    return _states(model, model.check_input(X), strength)


@torch.no_grad()
def _states(model, X, strength):
    """:func:`post_ln_states` unchecked; ``strength`` a number or a tensor broadcasting with ``X``."""
    states, attentions = [X], []
    for block in model.layers:
        A, P = block.attention(X)
        X = block.ln1(strength * X + A)[0]
        states.append(X)
        attentions.append(P)
    return states, attentions


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
        out[rank & ~ent], out[ent & ~rank], out[rank & ent] = "rank collapse", "entropy collapse", "both"
        return out

    def critical_strength(self, scale_index: int = 0) -> float:
        """The smallest ``alpha`` of the grid that avoids rank collapse at ``scales[scale_index]`` (``nan`` if none)."""
        ok = self.rho[scale_index] >= RANK_LEVEL
        return float(self.strengths[np.argmax(ok)]) if ok.any() else float("nan")

    def _entropy_large(self) -> float:
        """The largest entropy fraction at the largest scale among strengths > 0 (with a skip)."""
        skip = self.strengths > 0
        return float(self.entropy[-1, skip].max()) if skip.any() else float("nan")

    def glue(self) -> dict:
        lab = self.phases()
        one = int(np.argmin(np.abs(self.strengths - 1.0)))
        return {
            "phase-L": (self.n_layers, "{}"), "phase-n": (self.n_tokens, "{}"), "phase-samples": (self.samples, "{}"),
            "phase-s-min": (float(self.scales[0]), "{:g}"), "phase-s-max": (float(self.scales[-1]), "{:g}"),
            "phase-entropy-min-scale": (float(self.entropy[0].min()), "{:.2f}"),
            "phase-entropy-max-scale": (self._entropy_large(), "{:.2g}"),
            "phase-rho-pure-small": (float(self.rho[0, 0]), "sci"),
            "phase-rho-pure-large": (float(self.rho[-1, 0]), "sci"),
            "phase-entropy-pure-large": (float(self.entropy[-1, 0]), "{:.2f}"),
            "phase-critical": (self.critical_strength(0), "{:g}"),
            "phase-rho-one-small": (float(self.rho[0, one]), "{:.2f}"),
            "phase-alpha-one": (float(self.strengths[one]), "{:g}"),
            "phase-rank-cells": (int(np.sum((lab == "rank collapse") | (lab == "both"))), "{}"),
            "phase-entropy-cells": (int(np.sum((lab == "entropy collapse") | (lab == "both"))), "{}"),
            "phase-cells": (int(lab.size), "{}"),
            "phase-rank-level": (RANK_LEVEL, "{:g}"), "phase-entropy-level": (ENTROPY_LEVEL, "{:g}"),
        }

    def figure(self):
        """Three panels over (scale, strength): entropy / log n, log10 relative residual, the phase."""
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap

        from ..plotting import PALETTE, WIDTH

        fig, axes = plt.subplots(1, 3, figsize=(WIDTH, 2.8), constrained_layout=True, sharey=True)
        extent = dict(origin="lower", aspect="auto")
        xt, yt = range(len(self.scales)), range(len(self.strengths))
        panels = [(self.entropy.T, "entropy / log n", dict(vmin=0, vmax=1, cmap="viridis")),
                  (np.log10(np.maximum(self.rho, 1e-16)).T, r"$\log_{10}\rho_L$", dict(vmin=-16, vmax=0, cmap="magma"))]
        for ax, (data, label, kw) in zip(axes, panels):
            im = ax.imshow(data, **extent, **kw)
            fig.colorbar(im, ax=ax, shrink=0.8, label=label)
        codes = {p: i for i, p in enumerate(PHASES)}
        lab = np.vectorize(codes.get)(self.phases()).T
        axes[2].imshow(lab, **extent, cmap=ListedColormap([PALETTE[3], PALETTE[0], PALETTE[4], "#DDDDDD"]),
                       vmin=-0.5, vmax=len(PHASES) - 0.5)
        for i, j in np.ndindex(lab.shape):
            axes[2].text(j, i, "RE"[lab[i, j]] if lab[i, j] < 2 else ("B" if lab[i, j] == 2 else ""),
                         ha="center", va="center", fontsize=9, color="white")
        for ax in axes:
            ax.set_xticks(list(xt)[::2], [f"{s:g}" for s in self.scales[::2]])
            ax.set_xlabel("query/key scale $s$")
        axes[0].set_yticks(list(yt), [f"{a:g}" for a in self.strengths])
        axes[0].set_ylabel(r"skip strength $\alpha$")
        axes[2].set_title("R rank, E entropy", fontsize=9)
        return fig

    def verdict(self) -> Verdict:
        g = self.glue()
        rank_small = bool(np.any(self.rho[0] < RANK_LEVEL))
        ent_large = bool(self._entropy_large() < ENTROPY_LEVEL)
        rescued = bool(np.any(self.rho[0] >= RANK_LEVEL))
        agreement = "agrees" if rank_small and ent_large and rescued else ("partly" if rank_small or ent_large else "disagrees")
        return Verdict(
            result="Small query/key variance gives rank collapse, large variance entropy collapse; "
                   "a strong enough residual avoids the first",
            cite="giorlandino2025two",
            assumes="initialisation; attention with post-LayerNorm and a skip of strength alpha, no MLP",
            measured=(f"over s = {g['phase-s-min'][0]:g}..{g['phase-s-max'][0]:g}: at the smallest s pure attention "
                      f"keeps rho = {self.rho[0, 0]:.1e} after {self.n_layers} layers, and alpha >= "
                      f"{g['phase-critical'][0]:g} avoids rank collapse; at the largest s, with a skip, the "
                      f"attention entropy is at most {g['phase-entropy-max-scale'][0]:.2g} of log n"),
            agreement=agreement,
            untested="the paper's exact critical strength and its MLP; training (its trainability diagrams)",
        )


def phase_study(*, scales, strengths, n_layers: int, n_heads: int, d_model: int, n_tokens: int,
                samples: int, seed: int, generator) -> PhaseResult:
    """Attention entropy and relative residual over query/key scales and skip strengths (section 4).

    ``samples`` networks (seeds ``seed + s``) read ``n_tokens`` standard normal tokens drawn from
    ``generator``; the same networks (only ``W_Q, W_K`` scaled) and inputs serve every cell.
    ``scales`` and ``strengths``: increasing numbers ``>= 0``.
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (run.stream().generator), got {type(generator).__name__}")
    L, H, d = check_int("n_layers", n_layers), check_int("n_heads", n_heads), check_int("d_model", d_model)
    n, samples, seed = check_int("n_tokens", n_tokens, minimum=2), check_int("samples", samples), check_seed("seed", seed)
    grids = {}
    for name, values in (("scales", scales), ("strengths", strengths)):
        try:
            vals = [check_positive_float(name, v, allow_zero=True) for v in values]
        except TypeError:
            raise TypeError(f"{name} must be a sequence of numbers >= 0, got {type(values).__name__}") from None
        if not vals or any(b <= a for a, b in zip(vals, vals[1:])):
            raise ValueError(f"{name} must be a non-empty increasing sequence, got {vals}")
        grids[name] = np.array(vals)
    cfg = SANConfig(n_layers=L, n_heads=H, d_model=d)
    check_size(cfg)
    size = samples * len(grids["strengths"]) * n * max(n * H, d)
    if size > MAX_ENTRIES:
        raise ValueError(f"samples * len(strengths) * n_tokens * max(n_tokens * n_heads, d_model) = {size:,} "
                         f"exceeds {MAX_ENTRIES:,}: make the study smaller")
    X = torch.randn(samples, n, d, generator=generator, dtype=torch.float64)
    alphas = torch.tensor(grids["strengths"], dtype=torch.float64).reshape(-1, 1, 1)
    entropy = np.zeros((len(grids["scales"]), len(grids["strengths"])))
    rho = np.zeros_like(entropy)
    for i, s in enumerate(grids["scales"]):
        models = [scaled_qk_san(cfg, s, seed=seed + k) for k in range(samples)]
        ents, rhos = [], []
        for model, x in zip(models, X):  # every strength at once: a batch of len(strengths) inputs
            states, atts = _states(model, x.expand(len(alphas), n, d), alphas)
            ents.append(torch.stack([attention_entropy(P).mean(dim=(-1, -2)) for P in atts]).mean(dim=0))
            rhos.append(relative_residual(states[-1], norm="fro"))
        entropy[i] = torch.stack(ents).mean(dim=0).numpy() / math.log(n)
        rho[i] = np.median(torch.stack(rhos).numpy(), axis=0)
    return PhaseResult(grids["scales"], grids["strengths"], entropy, rho, L, n, samples)
