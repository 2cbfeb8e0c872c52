"""What every family's converter shares: parameters in the core's dtype, heads split out of fused
projections, the core's names for attention, LayerNorm and linear weights, and activations."""

from __future__ import annotations

import torch
from torch import nn

__all__ = [
    "ACTIVATION_NAMES",
    "activation_of",
    "parameter",
    "heads_in",
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


def parameter(t: torch.Tensor, dtype) -> nn.Parameter:
    """A parameter holding ``t`` in ``dtype`` (no copy when it already has that dtype)."""
    return nn.Parameter(t.detach().to(dtype), requires_grad=False)


def heads_in(w_t: torch.Tensor, H: int) -> torch.Tensor:
    """``(d, H*dh)`` (input features by head-major outputs) to ``(H, d, dh)``."""
    d = w_t.shape[0]
    return w_t.reshape(d, H, -1).permute(1, 0, 2)


def attention_weights(q, k, v, o, biases, H, dtype) -> dict:
    """The core's names for one layer's attention: ``q, k, v`` ``(d, H*dh)``, ``o`` ``(H*dh, d)``,
    ``biases`` the four maps' ``(bq, bk, bv, bo)``."""
    w = {
        "W_Q": heads_in(q, H),
        "W_K": heads_in(k, H),
        "W_V": heads_in(v, H),
        "W_O": o.reshape(H, -1, o.shape[-1]),
    }
    bq, bk, bv, bo = biases
    w.update(b_Q=bq.reshape(H, -1), b_K=bk.reshape(H, -1), b_V=bv.reshape(H, -1), b_O=bo)
    return {k: parameter(t, dtype) for k, t in w.items()}


def layernorm_weights(prefix: str, ln, dtype) -> dict:
    """``{prefix_gain, prefix_shift}`` of a ``torch.nn.LayerNorm`` ``ln``."""
    return {
        f"{prefix}_gain": parameter(ln.weight, dtype),
        f"{prefix}_shift": parameter(ln.bias, dtype),
    }


def linear(lin, dtype) -> tuple[nn.Parameter, nn.Parameter]:
    """``(W, b)`` of a ``torch.nn.Linear`` ``lin`` as the core applies it, ``x W + b``."""
    return parameter(lin.weight.T, dtype), parameter(lin.bias, dtype)
