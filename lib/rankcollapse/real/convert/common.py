"""What every family's converter shares: parameters in the core's dtype, heads split out of fused
projections, the core's names for attention, LayerNorm and linear weights, and activations."""

from __future__ import annotations

import torch
from torch import nn

from ..._validate import check_bool, check_dtype, check_int

__all__ = [
    "ACTIVATION_NAMES",
    "activation_of",
    "transformers_config",
    "parameter",
    "attention_weights",
    "layernorm_weights",
    "linear",
    "mlp_and_norms",
    "final_layernorm",
    "rope",
    "upcast",
]

# transformers' activation names -> the core's
ACTIVATION_NAMES = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
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


def attention_weights(q, k, v, o, biases, H, dtype, kv=None) -> dict:
    """The core's names for one layer's attention: ``q`` ``(d, H*dh)``, ``k, v`` ``(d,
    kv*dh)`` (``kv`` key/value heads, ``None``: ``H``), ``o`` ``(H*dh, d)``, ``biases`` the four
    maps' ``(bq, bk, bv, bo)`` (``None`` for a map without one)."""
    H = check_int("H", H)
    kv = H if kv is None else check_int("kv", kv)
    if q.shape[-1] % H or k.shape[-1] % kv:
        raise ValueError(
            f"H and kv must divide the projections' widths {q.shape[-1]}, {k.shape[-1]}, got "
            f"{H} and {kv}"
        )
    w = {
        "W_Q": _heads_in(q, H),
        "W_K": _heads_in(k, kv),
        "W_V": _heads_in(v, kv),
        "W_O": o.reshape(H, -1, o.shape[-1]),
    }
    for name, b, heads in zip(("b_Q", "b_K", "b_V"), biases[:3], (H, kv, kv)):
        if b is not None:
            w[name] = b.reshape(heads, -1)
    if biases[3] is not None:
        w["b_O"] = biases[3]
    return {k: parameter(t, dtype) for k, t in w.items()}


def layernorm_weights(prefix: str, ln, dtype) -> dict:
    """``{prefix_gain, prefix_shift}`` of a ``torch.nn.LayerNorm`` ``ln``."""
    if not isinstance(ln, nn.LayerNorm):
        raise TypeError(f"ln must be a torch.nn.LayerNorm, got {type(ln).__name__}")
    return {
        f"{prefix}_gain": parameter(ln.weight, dtype),
        f"{prefix}_shift": parameter(ln.bias, dtype),
    }


def _is_conv1d(name: str, lin) -> bool:
    """Whether ``lin`` is transformers' ``Conv1D`` (else a ``torch.nn.Linear``; a ``TypeError``
    naming ``name`` for anything else)."""
    if type(lin).__name__ == "Conv1D" and isinstance(lin, nn.Module):
        return True
    if not isinstance(lin, nn.Linear):
        raise TypeError(
            f"{name} must be a torch.nn.Linear or transformers' Conv1D, got {type(lin).__name__}"
        )
    return False


def linear(lin, dtype) -> tuple[nn.Parameter, nn.Parameter | None]:
    """``(W, b)`` of a ``torch.nn.Linear`` ``lin`` as the core applies it, ``x W + b`` (``b``
    ``None`` for a map without a bias); also of transformers' ``Conv1D`` (GPT-2's maps), which
    stores ``W`` as the core does."""
    if _is_conv1d("lin", lin):
        return parameter(lin.weight, dtype), parameter(lin.bias, dtype)
    return parameter(lin.weight.T, dtype), None if lin.bias is None else parameter(lin.bias, dtype)


def mlp_and_norms(fc, proj, ln1, ln2, dtype) -> dict:
    """One layer's MLP and LayerNorms by the core's names: ``W_1, b_1`` of ``fc``, ``W_2, b_2`` of
    ``proj`` (:func:`linear`), then ``ln1_*`` and ``ln2_*`` of the LayerNorms ``ln1, ln2``."""
    for name, lin in (("fc", fc), ("proj", proj)):
        _is_conv1d(name, lin)
    for name, ln in (("ln1", ln1), ("ln2", ln2)):
        if not isinstance(ln, nn.LayerNorm):
            raise TypeError(f"{name} must be a torch.nn.LayerNorm, got {type(ln).__name__}")
    w = {}
    w["W_1"], w["b_1"] = linear(fc, dtype)
    w["W_2"], w["b_2"] = linear(proj, dtype)
    w.update(layernorm_weights("ln1", ln1, dtype))
    w.update(layernorm_weights("ln2", ln2, dtype))
    return w


def final_layernorm(ln, dtype) -> dict:
    """``{gain, shift}`` of the final ``torch.nn.LayerNorm`` ``ln`` (what
    :meth:`rankcollapse.san.SAN.from_weights` takes as its final norm)."""
    w = layernorm_weights("f", ln, dtype)
    return {"gain": w["f_gain"], "shift": w["f_shift"]}


def rope(c) -> tuple[float, float]:
    """``(theta, partial_rotary_factor)`` of a transformers config ``c`` with default rotary
    positions (a ``ValueError`` for scaled ones: YaRN, linear, dynamic)."""
    if not isinstance(getattr(c, "model_type", None), str):
        raise TypeError(f"c must be a transformers configuration, got {type(c).__name__}")
    p = dict(getattr(c, "rope_parameters", None) or {})
    if p.get("rope_type", "default") != "default":
        raise ValueError(f"only default rotary positions are converted, got {p['rope_type']!r}")
    return float(p.get("rope_theta", 10000.0)), float(p.get("partial_rotary_factor", 1.0))


def upcast(as_transformers: bool, *, rms: bool) -> dict:
    """The ``SANConfig`` dtypes of the steps transformers computes in float32 whatever the
    model's dtype (rotary sinusoids, the eager softmax, and RMSNorm when ``rms``): float32 when
    ``as_transformers`` (to match its forward to 1e-10 in float64), the model's otherwise."""
    rms = check_bool("rms", rms)
    up = torch.float32 if check_bool("as_transformers", as_transformers) else None
    return {"position_dtype": up, "norm_dtype": up if rms else None, "softmax_dtype": up}
