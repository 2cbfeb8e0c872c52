"""The self-attention network (SAN) of the paper, in one readable file.

One layer of the paper's model (Dong et al. 2021, Section 2, "The path decomposition"):

.. math::
    \\mathrm{SA}(X) = \\sum_{h=1}^{H} P_h X W_{V,h} W_{O,h} + \\mathbf 1 b_O^\\top,
    \\qquad
    P_h = \\operatorname{softmax}\\!\\Big(\\frac{X W_{Q,h} (X W_{K,h})^\\top}{\\sqrt{d_{qk}}}\\Big),

with ``P_h`` row-stochastic (``n x n``) and the softmax taken along each row. The paper writes
:math:`W_h = W_{V,h} W_{O,h}`. A :class:`SANConfig` switches on what the theorems leave out:
skip connections (``X + SA(X)``), an MLP after each attention layer, LayerNorm (``"post"`` as in
BERT, ``"pre"`` as in GPT-2) and biases; ``shared=True`` reuses one layer's weights at every
depth, as ALBERT does.

Shapes: input ``X`` is ``(n, d_model)`` or batched ``(..., n, d_model)``; attention matrices
are ``(..., H, n, n)``. Book: chapter "The path decomposition" (the model) and every later
chapter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch
from torch import nn

from ._validate import as_tokens, check_choice, check_int, check_positive_float

__all__ = ["SANConfig", "SAN", "SANOutput", "LAYERNORMS", "ACTIVATIONS", "check_san"]

LAYERNORMS = ("none", "post", "pre")
ACTIVATIONS = ("relu", "gelu")
_DTYPES = {"float32": torch.float32, "float64": torch.float64}
LN_EPS = 1e-5


@dataclass(frozen=True)
class SANConfig:
    """Hyper-parameters of a :class:`SAN`.

    n_layers: depth ``L``. n_heads: heads per layer ``H``. d_model: token width ``d``.
    d_qk: query/key width per head (default ``d_model // n_heads``; the theorems' ``d_qk``).
    d_v: value width per head (default ``d_model // n_heads``).
    skip: skip connections around every sub-layer. mlp: hidden width of the MLP after each
    attention layer (0 = no MLP, the theorems' pure attention). activation: ``"relu"`` or
    ``"gelu"``. layernorm: ``"none"``, ``"post"`` (``LN(X + SA(X))``) or ``"pre"``
    (``X + SA(LN(X))``). bias: biases in the query, key, value, output and MLP maps.
    shared: one set of weights for all layers. init_scale: multiplies the attention weights at
    initialisation (standard deviation ``init_scale / sqrt(fan_in)``); mlp_scale does the same
    for the MLP. dtype: ``torch.float64`` (default, to see the collapse's tail) or
    ``torch.float32``.
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

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        set_("n_layers", check_int("n_layers", self.n_layers, minimum=0))
        set_("n_heads", check_int("n_heads", self.n_heads))
        set_("d_model", check_int("d_model", self.d_model))
        default_width = max(1, self.d_model // self.n_heads)
        set_("d_qk", check_int("d_qk", default_width if self.d_qk is None else self.d_qk))
        set_("d_v", check_int("d_v", default_width if self.d_v is None else self.d_v))
        set_("mlp", check_int("mlp", self.mlp, minimum=0))
        for flag in ("skip", "bias", "shared"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        check_choice("layernorm", self.layernorm, LAYERNORMS)
        check_choice("activation", self.activation, ACTIVATIONS)
        set_("init_scale", check_positive_float("init_scale", self.init_scale, allow_zero=True))
        set_("mlp_scale", check_positive_float("mlp_scale", self.mlp_scale, allow_zero=True))
        dtype = _DTYPES.get(self.dtype, self.dtype) if isinstance(self.dtype, str) else self.dtype
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, got {self.dtype!r}")
        set_("dtype", dtype)

    def replace(self, **changes) -> "SANConfig":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


@dataclass
class SANOutput:
    """What a forward pass returns.

    hidden_states: ``L + 1`` tensors ``(..., n, d)``, the input and the output of every layer.
    attentions: ``L`` tensors ``(..., H, n, n)``, every layer's attention matrices ``P_h``.
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


def layer_norm(Y: torch.Tensor, gain: torch.Tensor, shift: torch.Tensor):
    """LayerNorm over features, returning ``(LN(Y), sigma)`` with ``sigma`` of shape ``(..., n)``.

    ``LN(Y) = (Y - mean(Y) 1^T) / sigma * gain + shift`` row by row, ``sigma = sqrt(var + eps)``
    (biased variance, ``eps = 1e-5``, as ``torch.nn.LayerNorm``).
    """
    mu = Y.mean(dim=-1, keepdim=True)
    sigma = torch.sqrt(((Y - mu) ** 2).mean(dim=-1) + LN_EPS)
    return (Y - mu) / sigma.unsqueeze(-1) * gain + shift, sigma


class Block(nn.Module):
    """One layer: multi-head self-attention, then (optionally) an MLP; skips and LayerNorm per config."""

    def __init__(self, cfg: SANConfig, gen: torch.Generator):
        super().__init__()
        self.cfg = cfg
        H, d, dqk, dv, m = cfg.n_heads, cfg.d_model, cfg.d_qk, cfg.d_v, cfg.mlp
        s = cfg.init_scale

        def normal(*shape, std):
            return nn.Parameter(torch.randn(*shape, generator=gen, dtype=cfg.dtype) * std)

        def bias(*shape, fan_in):  # as torch.nn.Linear: uniform in +-1/sqrt(fan_in)
            if not cfg.bias:
                return None
            u = torch.rand(*shape, generator=gen, dtype=cfg.dtype) * 2 - 1
            return nn.Parameter(u / math.sqrt(fan_in))

        self.W_Q = normal(H, d, dqk, std=s / math.sqrt(d))
        self.W_K = normal(H, d, dqk, std=s / math.sqrt(d))
        self.W_V = normal(H, d, dv, std=s / math.sqrt(d))
        self.W_O = normal(H, dv, d, std=s / math.sqrt(H * dv))
        self.b_Q, self.b_K = bias(H, dqk, fan_in=d), bias(H, dqk, fan_in=d)
        self.b_V, self.b_O = bias(H, dv, fan_in=d), bias(d, fan_in=H * dv)
        if m:
            self.W_1 = normal(d, m, std=cfg.mlp_scale / math.sqrt(d))
            self.W_2 = normal(m, d, std=cfg.mlp_scale / math.sqrt(m))
            self.b_1, self.b_2 = bias(m, fan_in=d), bias(d, fan_in=m)
        if cfg.layernorm != "none":
            self.ln1_gain = nn.Parameter(torch.ones(d, dtype=cfg.dtype))
            self.ln1_shift = nn.Parameter(torch.zeros(d, dtype=cfg.dtype))
            if m:
                self.ln2_gain = nn.Parameter(torch.ones(d, dtype=cfg.dtype))
                self.ln2_shift = nn.Parameter(torch.zeros(d, dtype=cfg.dtype))

    def attention(self, X: torch.Tensor):
        """``SA(X)`` and the attention matrices ``P`` of shape ``(..., H, n, n)``."""
        q = torch.einsum("...nd,hde->...hne", X, self.W_Q)
        k = torch.einsum("...nd,hde->...hne", X, self.W_K)
        v = torch.einsum("...nd,hde->...hne", X, self.W_V)
        if self.cfg.bias:
            q, k, v = q + self.b_Q[:, None, :], k + self.b_K[:, None, :], v + self.b_V[:, None, :]
        P = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.cfg.d_qk), dim=-1)
        out = torch.einsum("...hne,hed->...nd", P @ v, self.W_O)
        if self.cfg.bias:
            out = out + self.b_O
        return out, P

    def mlp(self, X: torch.Tensor) -> torch.Tensor:
        act = torch.relu if self.cfg.activation == "relu" else torch.nn.functional.gelu
        h = X @ self.W_1 + (self.b_1 if self.cfg.bias else 0)
        return act(h) @ self.W_2 + (self.b_2 if self.cfg.bias else 0)

    def forward(self, X: torch.Tensor):
        cfg, ln = self.cfg, self.cfg.layernorm
        sigma = None
        # attention sub-layer
        Z, sigma = layer_norm(X, self.ln1_gain, self.ln1_shift) if ln == "pre" else (X, None)
        A, P = self.attention(Z)
        Y = X + A if cfg.skip else A
        if ln == "post":
            Y, sigma = layer_norm(Y, self.ln1_gain, self.ln1_shift)
        # MLP sub-layer
        if cfg.mlp:
            Z = layer_norm(Y, self.ln2_gain, self.ln2_shift)[0] if ln == "pre" else Y
            M = self.mlp(Z)
            Y = Y + M if cfg.skip else M
            if ln == "post":
                Y = layer_norm(Y, self.ln2_gain, self.ln2_shift)[0]
        return Y, P, sigma


class SAN(nn.Module):
    """A self-attention network built from a :class:`SANConfig`, initialised from ``seed``.

    ``SAN(cfg, seed=0)(X)`` returns a :class:`SANOutput`. The initialisation draws every weight
    from a ``torch.Generator`` seeded with ``seed``, so the same seed gives the same network.
    """

    def __init__(self, config: SANConfig, *, seed: int):
        super().__init__()
        if not isinstance(config, SANConfig):
            raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
        seed = check_int("seed", seed, minimum=0)
        self.config = config
        gen = torch.Generator().manual_seed(seed)
        if config.shared:
            block = Block(config, gen)
            self.layers = nn.ModuleList([block] * config.n_layers)
        else:
            self.layers = nn.ModuleList([Block(config, gen) for _ in range(config.n_layers)])

    def check_input(self, X) -> torch.Tensor:
        """``X`` as a tensor of the model's dtype, after checking its shape ``(..., n, d_model)``."""
        return as_tokens("X", X, d=self.config.d_model, dtype=self.config.dtype)

    def forward(self, X) -> SANOutput:
        X = self.check_input(X)
        hidden, attentions, scales = [X], [], []
        for block in self.layers:
            X, P, sigma = block(X)
            hidden.append(X)
            attentions.append(P)
            scales.append(sigma)
        return SANOutput(hidden_states=hidden, attentions=attentions, ln_scales=scales)

    @torch.no_grad()
    def scale_weights(self, factor: float, which: str = "attention") -> "SAN":
        """Multiply the attention (or ``which="mlp"``) weight matrices by ``factor`` in place; returns self."""
        factor = check_positive_float("factor", factor, allow_zero=True)
        check_choice("which", which, ("attention", "mlp", "value"))
        names = {"attention": ("W_Q", "W_K", "W_V", "W_O"), "mlp": ("W_1", "W_2"), "value": ("W_V",)}[which]
        if which == "mlp" and not self.config.mlp:
            raise ValueError("which='mlp' needs a model with an MLP (config.mlp > 0)")
        for block in dict.fromkeys(self.layers):  # each distinct block once (shared weights)
            for name in names:
                getattr(block, name).mul_(factor)
        return self


def check_san(model) -> SAN:
    """``model`` itself if it is a :class:`SAN`; a ``TypeError`` naming what it is otherwise."""
    if not isinstance(model, SAN):
        raise TypeError(f"model must be a rankcollapse.san.SAN, got {type(model).__name__}")
    return model
