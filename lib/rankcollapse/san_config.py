"""The configuration of a :class:`~rankcollapse.san.SAN`, every switch validated on the way in, and
what its forward pass returns (:class:`SANOutput`).

The skip strength: a layer's attention sub-layer computes
``skip_strength * X + branch_scale * SA(X)`` (with ``skip=True``; ``branch_scale * SA(X)``
without), before its LayerNorm if post-LN. The defaults (1, 1) are the usual skip connection.
Scaling the skip (``alpha X + SA(X)``) and scaling the branch (``X + lambda SA(X)``) are the two
ways the book varies a skip's weight (chapters "Skip connections" and "After the paper").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch

from ._validate import check_choice, check_dtype, check_int, check_positive_float
from .ops import ACTIVATIONS, LN_EPS

__all__ = ["SANConfig", "SANOutput", "LAYERNORMS", "NORMS", "ATTENTIONS", "BIAS_MAPS"]

LAYERNORMS = ("none", "post", "pre")
NORMS = ("layer", "rms")
ATTENTIONS = ("dot", "relative")
BIAS_MAPS = ("q", "k", "v", "o", "mlp")


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
    Today's decoders (each switch off by default; Llama and GPT-NeoX in ``rankcollapse.real``):
    norm: the kind of every normalisation, ``"layer"`` (LayerNorm, gain and shift) or ``"rms"``
    (RMSNorm, :func:`rankcollapse.ops.rms_norm_sigma`, a gain only); ``layernorm`` is where the
    norms sit whatever their kind (``"pre"``, ``"post"``, ``"none"``). norm_dtype: the dtype a
    norm's statistics are computed in (``None``: ``dtype``; RMSNorm only: transformers computes
    Llama's in float32). softmax_dtype: the same for the attention softmax (transformers' Llama and
    GPT-NeoX attention: float32). rotary: how many of each query and key head's ``d_qk``
    dimensions rotary position embeddings rotate (even; 0: none; ``d_qk``: all, Llama; a quarter,
    GPT-NeoX), in Llama's ``rotate_half`` convention (:func:`rankcollapse.ops.rotate`), with
    frequencies ``rope_theta^(-2k/rotary)``, the sinusoids computed in ``position_dtype``.
    n_kv_heads: key/value heads (``None``: ``n_heads``); fewer is grouped-query attention, key and
    value head ``g`` serving the query heads ``g * n_heads/n_kv_heads`` to ``(g + 1) *
    n_heads/n_kv_heads - 1`` (``W_K`` and ``W_V`` are ``(n_kv_heads, d, .)``). gated: the MLP is
    ``(act(X W_gate) * (X W_1)) W_2`` (Llama's SiLU-gated MLP: ``W_gate, W_1, W_2`` are its gate,
    up and down maps). parallel: the attention and the MLP both read the layer's input, ``X +
    SA(N_1(X)) + MLP(N_2(X))`` pre-LN (GPT-NeoX's parallel residual), ``N_1(X + SA(X) + MLP(X))``
    post-LN (``N_2`` unused), ``SA(X) + MLP(X)`` without skip (one skip: ``mlp_skip`` is not
    read). bias_maps: which maps carry biases when ``bias=True``, a tuple of ``"q", "k", "v",
    "o", "mlp"`` (``None``: all; Qwen2: ``("q", "k", "v")``). mlp_branch_scale: the MLP
    branch's weight, ``Y + mlp_branch_scale * MLP(Y)`` (with ``branch_scale = mlp_branch_scale
    = 1/sqrt(L)``: Noci et al.'s depth-scaled residual).
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
    norm: str = "layer"
    norm_dtype: torch.dtype | None = None
    softmax_dtype: torch.dtype | None = None
    rotary: int = 0
    rope_theta: float = 10000.0
    n_kv_heads: int | None = None
    gated: bool = False
    parallel: bool = False
    bias_maps: tuple[str, ...] | None = None
    mlp_branch_scale: float = 1.0

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        set_("n_layers", check_int("n_layers", self.n_layers, minimum=0))
        set_("n_heads", check_int("n_heads", self.n_heads))
        set_("d_model", check_int("d_model", self.d_model))
        default_width = max(1, self.d_model // self.n_heads)
        set_("d_qk", check_int("d_qk", default_width if self.d_qk is None else self.d_qk))
        set_("d_v", check_int("d_v", default_width if self.d_v is None else self.d_v))
        set_("mlp", check_int("mlp", self.mlp, minimum=0))
        for flag in ("skip", "bias", "shared", "final_layernorm", "causal", "gated", "parallel"):
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
        for name in ("position_dtype", "norm_dtype", "softmax_dtype"):
            if getattr(self, name) is not None:
                set_(name, check_dtype(name, getattr(self, name)))
        self._check_decoder()

    def _check_decoder(self):
        """The switches of today's decoders (norm kind, rotary, grouped heads, gated MLP,
        parallel layers, biases per map, the MLP branch's scale)."""
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        check_choice("norm", self.norm, NORMS)
        if self.norm_dtype is not None and self.norm != "rms":
            raise ValueError("norm_dtype is for RMSNorm (norm='rms'); LayerNorm runs in dtype")
        set_("rotary", check_int("rotary", self.rotary, minimum=0))
        if self.rotary % 2 or self.rotary > self.d_qk:
            raise ValueError(
                f"rotary must be even and at most d_qk={self.d_qk} (the dimensions of a query "
                f"head it rotates), got {self.rotary}"
            )
        set_("rope_theta", check_positive_float("rope_theta", self.rope_theta))
        if self.n_kv_heads is not None:  # kept as given: None follows n_heads through replace
            set_("n_kv_heads", check_int("n_kv_heads", self.n_kv_heads))
        if self.n_heads % self.kv_heads:
            raise ValueError(
                f"n_kv_heads must divide n_heads={self.n_heads} (each key/value head serves a "
                f"group of query heads), got {self.kv_heads}"
            )
        if self.attention == "relative" and (self.rotary or self.kv_heads != self.n_heads):
            raise ValueError("attention='relative' has no rotary positions or grouped heads")
        if self.bias_maps is not None:
            if isinstance(self.bias_maps, str) or not isinstance(self.bias_maps, (tuple, list)):
                raise TypeError(
                    f"bias_maps must be a tuple of {BIAS_MAPS} or None, got {self.bias_maps!r}"
                )
            for i, m in enumerate(self.bias_maps):
                check_choice(f"bias_maps[{i}]", m, BIAS_MAPS)
            set_("bias_maps", tuple(m for m in BIAS_MAPS if m in self.bias_maps))
        set_(
            "mlp_branch_scale",
            check_positive_float("mlp_branch_scale", self.mlp_branch_scale, allow_zero=True),
        )

    def has_bias(self, which: str) -> bool:
        """Whether the map ``which`` (``"q"``, ``"k"``, ``"v"``, ``"o"`` or ``"mlp"``) has a
        bias: ``bias`` and ``which`` in ``bias_maps`` (every map when it is ``None``)."""
        check_choice("which", which, BIAS_MAPS)
        return self.bias and (self.bias_maps is None or which in self.bias_maps)

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or ``n_heads`` when it is ``None``."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def group(self) -> int:
        """Query heads per key/value head, ``n_heads // kv_heads`` (1 without grouping)."""
        return self.n_heads // self.kv_heads

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

    def block_shapes(self) -> dict:
        """One layer's parameters in the order they are drawn: name -> ``(shape, kind, arg)``,
        ``kind`` ``"normal"`` (``arg`` its standard deviation, ``init_scale`` or ``mlp_scale``
        over ``sqrt(fan_in)``), ``"bias"`` (uniform in ``+-1/sqrt(arg)``, as
        ``torch.nn.Linear``) or ``"const"`` (``arg`` its value: a norm's gain 1, shift 0). The
        weights of today's decoders come last, so the others are drawn as before they existed."""
        H, d, dqk, dv, m = self.n_heads, self.d_model, self.d_qk, self.d_v, self.mlp
        kv, has, s, t = self.kv_heads, self.has_bias, self.init_scale, self.mlp_scale
        out = {
            "W_Q": ((H, d, dqk), "normal", s / math.sqrt(d)),
            "W_K": ((kv, d, dqk), "normal", s / math.sqrt(d)),
            "W_V": ((kv, d, dv), "normal", s / math.sqrt(d)),
            "W_O": ((H, dv, d), "normal", s / math.sqrt(H * dv)),
        }
        for name, shape, fan, which in (
            ("b_Q", (H, dqk), d, "q"),
            ("b_K", (kv, dqk), d, "k"),
            ("b_V", (kv, dv), d, "v"),
            ("b_O", (d,), H * dv, "o"),
        ):
            if has(which):
                out[name] = (shape, "bias", fan)
        if m:
            out.update(
                W_1=((d, m), "normal", t / math.sqrt(d)), W_2=((m, d), "normal", t / math.sqrt(m))
            )
            if has("mlp"):
                out.update(b_1=((m,), "bias", d), b_2=((d,), "bias", m))
        rms = self.norm == "rms"
        for ln in ("ln1", "ln2") if m else ("ln1",):
            if self.layernorm != "none":
                out[f"{ln}_gain"] = ((d,), "const", 1)
                if not rms:
                    out[f"{ln}_shift"] = ((d,), "const", 0)
        if self.attention == "relative":
            out["W_R"] = ((H, d, dqk), "normal", s / math.sqrt(d))
            for name in ("r_w_bias", "r_r_bias", "r_s_bias"):
                out[name] = ((H, dqk), "normal", s / math.sqrt(d))
            out["seg_embed"] = ((2, H, dqk), "normal", s / math.sqrt(d))
        if m and self.gated:
            out["W_gate"] = ((d, m), "normal", t / math.sqrt(d))
            if has("mlp"):
                out["b_gate"] = ((m,), "bias", d)
        return out

    def replace(self, **changes) -> SANConfig:
        """A copy with some fields changed (validated again, so a bad value names its field)."""
        return replace(self, **changes)


@dataclass
class SANOutput:
    """What a forward pass returns.

    hidden_states: ``L + 1`` tensors ``(..., n, d)``, the input and the output of every layer
    (with ``final_layernorm`` the last one is after the final LayerNorm, as transformers reports
    it). attentions: ``L`` tensors ``(..., H, n, n)``, every layer's attention matrices ``P_h``.
    ln_scales: ``L`` tensors ``(..., n)`` (or ``None`` without LayerNorm): the per-token
    standard deviation that the attention sub-layer's LayerNorm divided by. Holding these and
    the attentions fixed makes the network linear in its input (chapter "The path decomposition").
    """

    hidden_states: list[torch.Tensor]
    attentions: list[torch.Tensor]
    ln_scales: list[torch.Tensor | None]

    @property
    def last_hidden_state(self) -> torch.Tensor:
        return self.hidden_states[-1]
