"""What every family's converter shares: parameters in the core's dtype, heads split out of fused
projections, the core's names for attention, LayerNorm and linear weights, and activations."""

from __future__ import annotations

import torch
from torch import nn

from ..._validate import check_dtype, check_int

__all__ = [
    "ACTIVATION_NAMES",
    "activation_of",
    "transformers_config",
    "parameter",
    "attention_weights",
    "layernorm_weights",
    "linear",
]

# transformers' activation names -> the core's
ACTIVATION_NAMES = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}


def activation_of(name: str) -> str:
    """The core's activation for transformers' ``name`` (a ``ValueError`` for one it has not)."""
    if name not in ACTIVATION_NAMES:
        raise ValueError(
            f"activation {name!r} has no counterpart in rankcollapse.san "
            f"(known: {sorted(ACTIVATION_NAMES)})"
        )
    return ACTIVATION_NAMES[name]


def transformers_config(model, family: str):
    """The configuration of ``model``, a transformers model of ``family`` (its ``model_type``); a
    ``TypeError`` naming what ``model`` is otherwise."""
    config = getattr(model, "config", None)
    if getattr(config, "model_type", None) != family:
        raise TypeError(
            f"model must be a transformers {family} model (config.model_type == {family!r}), "
            f"got {type(model).__name__}"
        )
    return config


def parameter(t: torch.Tensor, dtype) -> nn.Parameter:
    """A parameter holding ``t`` in ``dtype`` (no copy when it already has that dtype)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    return nn.Parameter(t.detach().to(check_dtype("dtype", dtype)), requires_grad=False)


def _heads_in(w_t: torch.Tensor, H: int) -> torch.Tensor:
    """``(d, H*dh)`` (input features by head-major outputs) to ``(H, d, dh)``."""
    d = w_t.shape[0]
    return w_t.reshape(d, H, -1).permute(1, 0, 2)


def attention_weights(q, k, v, o, biases, H, dtype) -> dict:
    """The core's names for one layer's attention: ``q, k, v`` ``(d, H*dh)``, ``o`` ``(H*dh, d)``,
    ``biases`` the four maps' ``(bq, bk, bv, bo)``."""
    H = check_int("H", H)
    if q.shape[-1] % H:
        raise ValueError(f"H must divide the projections' width {q.shape[-1]}, got {H}")
    w = {
        "W_Q": _heads_in(q, H),
        "W_K": _heads_in(k, H),
        "W_V": _heads_in(v, H),
        "W_O": o.reshape(H, -1, o.shape[-1]),
    }
    bq, bk, bv, bo = biases
    w.update(b_Q=bq.reshape(H, -1), b_K=bk.reshape(H, -1), b_V=bv.reshape(H, -1), b_O=bo)
    return {k: parameter(t, dtype) for k, t in w.items()}


def layernorm_weights(prefix: str, ln, dtype) -> dict:
    """``{prefix_gain, prefix_shift}`` of a ``torch.nn.LayerNorm`` ``ln``."""
    if not isinstance(ln, nn.LayerNorm):
        raise TypeError(f"ln must be a torch.nn.LayerNorm, got {type(ln).__name__}")
    return {
        f"{prefix}_gain": parameter(ln.weight, dtype),
        f"{prefix}_shift": parameter(ln.bias, dtype),
    }


def linear(lin, dtype) -> tuple[nn.Parameter, nn.Parameter]:
    """``(W, b)`` of a ``torch.nn.Linear`` ``lin`` as the core applies it, ``x W + b``."""
    if not isinstance(lin, nn.Linear):
        raise TypeError(f"lin must be a torch.nn.Linear, got {type(lin).__name__}")
    return parameter(lin.weight.T, dtype), parameter(lin.bias, dtype)
