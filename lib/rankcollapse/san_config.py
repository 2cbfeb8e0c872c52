"""The configuration of a :class:`~rankcollapse.san.SAN`: every switch, validated on the way in.

The skip strength: a layer's attention sub-layer computes
``skip_strength * X + branch_scale * SA(X)`` (with ``skip=True``; ``branch_scale * SA(X)``
without), before its LayerNorm if post-LN. The defaults (1, 1) are the usual skip connection.
Scaling the skip (``alpha X + SA(X)``) and scaling the branch (``X + lambda SA(X)``) are the two
ways the book varies a skip's weight (chapters "Skip connections" and "After the paper").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from ._validate import check_choice, check_dtype, check_int, check_positive_float
from .ops import ACTIVATIONS, LN_EPS

__all__ = ["SANConfig", "LAYERNORMS", "ATTENTIONS"]

LAYERNORMS = ("none", "post", "pre")
ATTENTIONS = ("dot", "relative")


@dataclass(frozen=True)
class SANConfig:
    """Hyper-parameters of a :class:`~rankcollapse.san.SAN`.

    n_layers: depth ``L``. n_heads: heads per layer ``H``. d_model: token width ``d``.
    d_qk: query/key width per head (default ``d_model // n_heads``; the theorems' ``d_qk``).
    d_v: value width per head (default ``d_model // n_heads``).
    skip: skip connections around every sub-layer. skip_strength and branch_scale: the weights of
    the attention sub-layer's residual sum ``skip_strength * X + branch_scale * SA(X)`` (both
    ``>= 0``, default 1, the usual skip connection; ``skip_strength`` needs ``skip=True``, and
    may be a tuple of ``k`` strengths: ``k`` networks at once, the input's first dimension ``k``
    and entry ``i`` run with strength ``i``, :meth:`skip_weight`;
    ``branch_scale`` also scales a layer without skip; it is applied as every ``W_O`` and ``b_O``
    multiplied by it). mlp: hidden
    width of the MLP after each attention layer (0 = no MLP, the theorems' pure attention).
    mlp_skip: the skip connection around the MLP alone (``None``: as ``skip``; the official code's
    "SAN + MLP" kept it while removing the attention's). activation: ``"relu"``, ``"gelu"`` (exact,
    with the normal CDF) or ``"gelu_tanh"`` (its tanh approximation, transformers' ``"gelu_new"``,
    used by ALBERT and GPT-2). layernorm: ``"none"``, ``"post"`` (``LN(X + SA(X))``) or ``"pre"``
    (``X + SA(LN(X))``). ln_eps: the ``eps`` inside every LayerNorm's square root.
    final_layernorm: one more LayerNorm on the last layer's output (GPT-2's ``ln_f``).
    bias: biases in the query, key, value, output and MLP maps. shared: one set of weights for
    all layers. causal: token ``i`` attends to tokens ``j <= i`` only (a decoder). window: a
    sliding-window (local) mask, token ``i`` attends to tokens with ``|i - j| < window`` (with
    ``causal``: the ``window`` tokens ``i - window < j <= i``); 0 (default) is no window, and a
    window of ``n`` or more is full attention (:func:`rankcollapse.ops.allowed_keys`).
    attention: ``"dot"`` (the paper's) or ``"relative"`` (XLNet's content stream: the scores gain
    a term in the relative position ``i - j`` and one in whether ``i`` and ``j`` share a segment,
    see :meth:`Block.scores`). clamp_len: relative positions beyond it are clamped (0: none).
    position_dtype: the dtype the relative positions' sinusoids are computed in before the cast
    to ``dtype`` (``None``: ``dtype``; transformers computes XLNet's in float32).
    init_scale: multiplies the attention weights at initialisation (standard deviation
    ``init_scale / sqrt(fan_in)``); mlp_scale does the same for the MLP. dtype:
    ``torch.float64`` (default, to see the collapse's tail) or ``torch.float32``.
    """

    n_layers: int = 6
    n_heads: int = 1
    d_model: int = 32
    d_qk: int | None = None
    d_v: int | None = None
    skip: bool = False
    mlp: int = 0
    activation: str = "relu"
    layernorm: str = "none"
    bias: bool = False
    shared: bool = False
    init_scale: float = 1.0
    mlp_scale: float = 1.0
    dtype: torch.dtype = field(default=torch.float64)
    mlp_skip: bool | None = None
    ln_eps: float = LN_EPS
    final_layernorm: bool = False
    causal: bool = False
    attention: str = "dot"
    clamp_len: int = 0
    position_dtype: torch.dtype | None = None
    window: int = 0
    skip_strength: float | tuple[float, ...] = 1.0
    branch_scale: float = 1.0

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        set_("n_layers", check_int("n_layers", self.n_layers, minimum=0))
        set_("n_heads", check_int("n_heads", self.n_heads))
        set_("d_model", check_int("d_model", self.d_model))
        default_width = max(1, self.d_model // self.n_heads)
        set_("d_qk", check_int("d_qk", default_width if self.d_qk is None else self.d_qk))
        set_("d_v", check_int("d_v", default_width if self.d_v is None else self.d_v))
        set_("mlp", check_int("mlp", self.mlp, minimum=0))
        for flag in ("skip", "bias", "shared", "final_layernorm", "causal"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if self.mlp_skip is not None and not isinstance(self.mlp_skip, bool):
            raise TypeError(
                f"mlp_skip must be True, False or None (as skip), got {self.mlp_skip!r}"
            )
        check_choice("layernorm", self.layernorm, LAYERNORMS)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("attention", self.attention, ATTENTIONS)
        if self.attention == "relative" and self.d_qk != self.d_v:
            raise ValueError(
                f"attention='relative' needs d_qk == d_v, got {self.d_qk} and {self.d_v}"
            )
        set_("clamp_len", check_int("clamp_len", self.clamp_len, minimum=0))
        set_("window", check_int("window", self.window, minimum=0))
        set_("init_scale", check_positive_float("init_scale", self.init_scale, allow_zero=True))
        set_("mlp_scale", check_positive_float("mlp_scale", self.mlp_scale, allow_zero=True))
        set_("ln_eps", check_positive_float("ln_eps", self.ln_eps))
        set_(
            "branch_scale", check_positive_float("branch_scale", self.branch_scale, allow_zero=True)
        )
        if isinstance(self.skip_strength, (tuple, list)):
            if not self.skip_strength:
                raise ValueError("skip_strength must hold at least one strength, got ()")
            strengths = tuple(
                check_positive_float(f"skip_strength[{i}]", a, allow_zero=True)
                for i, a in enumerate(self.skip_strength)
            )
            set_("skip_strength", strengths)
        else:
            set_(
                "skip_strength",
                check_positive_float("skip_strength", self.skip_strength, allow_zero=True),
            )
        if self.skip_strength != 1 and not self.skip:
            raise ValueError(
                f"skip_strength={self.skip_strength} needs skip=True: without skip connections "
                "there is no skip branch to scale"
            )
        set_("dtype", check_dtype("dtype", self.dtype))
        if self.position_dtype is not None:
            set_("position_dtype", check_dtype("position_dtype", self.position_dtype))

    @property
    def skip_mlp(self) -> bool:
        """Whether the MLP has its skip connection (``mlp_skip``, or ``skip`` if it is ``None``)."""
        return self.skip if self.mlp_skip is None else self.mlp_skip

    def skip_weight(self, ndim: int) -> float | torch.Tensor:
        """``skip_strength`` as it multiplies a skip branch of ``ndim`` dimensions: the number, or
        for a tuple of ``k`` strengths a ``(k, 1, ..., 1)`` tensor of ``dtype`` (entry ``i`` of the
        first dimension scaled by strength ``i``)."""
        if not isinstance(self.skip_strength, tuple):
            return self.skip_strength
        shape = (len(self.skip_strength),) + (1,) * (ndim - 1)
        return torch.tensor(self.skip_strength, dtype=self.dtype).reshape(shape)

    def replace(self, **changes) -> SANConfig:
        """A copy with some fields changed (validated again, so a bad value names its field)."""
        return replace(self, **changes)
