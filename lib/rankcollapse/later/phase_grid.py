"""The measurement behind :mod:`rankcollapse.later.phases`: attention entropy, the networks with
scaled queries and keys, their states at a skip strength, and one grid cell's numbers.

``X_{l+1} = LN(alpha X_l + SA_s(X_l))`` is a core :class:`~rankcollapse.san.SAN` with post-
LayerNorm, ``skip_strength=alpha`` and ``W_Q, W_K`` multiplied by ``s``. Re-exported by
:mod:`rankcollapse.later.phases`. Book: chapter "After the paper", section 4.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._validate import (
    check_generator,
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
    "RANK_LEVEL",
    "ENTROPY_LEVEL",
    "PHASES",
    "MAX_ENTRIES",
]

RANK_LEVEL = 0.05  # relative residual after L layers below this: rank collapse
ENTROPY_LEVEL = 0.25  # mean attention entropy below this fraction of log n: entropy collapse
PHASES = ("rank collapse", "entropy collapse", "both", "neither")
# samples * strengths * n_tokens * max(n_tokens * n_heads, d_model): refused above
MAX_ENTRIES = 10**8


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


def check_grid(name, values) -> np.ndarray:
    """``values`` as an increasing array of numbers ``>= 0`` (a grid), or a clear error naming
    ``name``."""
    try:
        vals = [check_positive_float(name, v, allow_zero=True) for v in values]
    except TypeError:
        raise TypeError(
            f"{name} must be a sequence of numbers >= 0, got {type(values).__name__}"
        ) from None
    if not vals or any(b <= a for a, b in zip(vals, vals[1:])):
        raise ValueError(f"{name} must be a non-empty increasing sequence, got {vals}")
    return np.array(vals)


def phase_setup(generator, n_layers, n_heads, d_model, n_tokens, samples, seed, batch):
    """Checked sizes, the config and the inputs ``(samples, n, d)`` drawn from ``generator``."""
    check_generator("generator", generator)
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
def measure_cell(cfg, scale, X, alphas, seed, depths):
    """Median ``rho`` after each of ``depths`` layers and the mean entropy fraction over those
    layers, ``(len(depths), len(alphas))`` each, for the networks ``seed + k`` (``k`` over ``X``'s
    samples, the first ``max(depths)`` layers) at query/key ``scale``; every strength at once, a
    batch of ``len(alphas)`` inputs (``skip_strength`` a tuple: one network per strength)."""
    n, d = X.shape[-2:]
    cfg = cfg.replace(n_layers=max(depths))
    strengths = tuple(float(a) for a in alphas)
    rhos, ents = [], []
    for k, x in enumerate(X):
        model = scaled_qk_san(cfg, scale, seed=derive_seed(seed, k))
        out = model.replace(skip_strength=strengths)(x.expand(len(strengths), n, d))
        per_layer = torch.stack(
            [attention_entropy(P).mean(dim=(-1, -2)) for P in out.attentions]
        )  # (L, len(alphas))
        rhos.append(
            torch.stack([relative_residual(out.hidden_states[L], norm="fro") for L in depths])
        )
        ents.append(torch.stack([per_layer[:L].mean(dim=0) for L in depths]))
    rho = np.median(torch.stack(rhos).numpy(), axis=0)
    return rho, torch.stack(ents).mean(dim=0).numpy() / math.log(n)
