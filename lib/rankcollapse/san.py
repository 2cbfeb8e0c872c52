"""The self-attention network (SAN) of the paper, in one readable file (its switches, validated,
in :mod:`rankcollapse.san_config`, re-exported here).

One layer of the paper's model (Dong et al. 2021, Section 2, "The path decomposition"):

.. math::
    \\mathrm{SA}(X) = \\sum_{h=1}^{H} P_h X W_{V,h} W_{O,h} + \\mathbf 1 b_O^\\top,
    \\qquad
    P_h = \\operatorname{softmax}\\!\\Big(\\frac{X W_{Q,h} (X W_{K,h})^\\top}{\\sqrt{d_{qk}}}\\Big),

with ``P_h`` row-stochastic (``n x n``) and the softmax taken along each row. The paper writes
:math:`W_h = W_{V,h} W_{O,h}`. A :class:`SANConfig` switches on what the theorems leave out:
skip connections (``X + SA(X)``, weighted by ``skip_strength`` and ``branch_scale``), an MLP
after each attention layer, LayerNorm (``"post"`` as in BERT, ``"pre"`` as in GPT-2) and biases;
``shared=True`` reuses one layer's weights at every depth, as ALBERT does. The same switches
describe real transformers (``rankcollapse.real`` converts BERT, ALBERT, XLNet and GPT-2 weights
into this network): a causal mask, a final LayerNorm, the LayerNorm's ``eps``, the activation, and
XLNet's relative-position attention (``attention="relative"``, :meth:`Block.scores`); and
today's decoders (Llama, GPT-NeoX): RMSNorm, rotary positions, grouped-query attention, a gated
MLP, parallel attention and MLP, biases per map. Whatever the
switches, every layer's attention matrices ``P_h`` are returned, so the path decomposition and the
theory read them as they are.

Shapes: input ``X`` is ``(n, d_model)`` or batched ``(..., n, d_model)``; attention matrices
are ``(..., H, n, n)``; a key mask or segment ids are ``(..., n)``. Book: chapter "The path
decomposition" (the model) and every later chapter.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import as_tokens, check_choice, check_positive_float, check_seed
from .ops import (  # noqa: F401  (re-exported)
    ACTIVATIONS,
    LN_EPS,
    MAX_BYTES,
    activation,
    allowed_keys,
    check_forward,
    check_key_mask,
    check_size,
    layer_norm_sigma,
    relative_positions,
    relative_scores,
    rms_norm_sigma,
    rotary_tables,
    rotate,
    weight_count,
)
from .ops import set_weights as _set_weights
from .san_config import ATTENTIONS, LAYERNORMS, NORMS, SANConfig, SANOutput

__all__ = [
    "SANConfig",
    "SAN",
    "SANOutput",
    "Block",
    "LAYERNORMS",
    "NORMS",
    "ACTIVATIONS",
    "ATTENTIONS",
    "check_san",
    "norm_sigma",
    "layer_norm_sigma",
    "activation",
    "relative_positions",
    "MAX_BYTES",
    "weight_count",
    "check_size",
]

_NO_INIT = object()  # SAN(config, seed=_NO_INIT): empty weights, for SAN.from_weights


class Block(nn.Module):
    """One layer: multi-head self-attention, then (optionally) an MLP; skips and LayerNorm per
    config.

    ``Block(cfg, gen)`` draws the weights from ``gen``; ``Block(cfg, None)`` leaves them empty for
    :meth:`SAN.from_weights` to set; :meth:`weights` lists them by name.
    """

    def __init__(self, cfg: SANConfig, gen: torch.Generator | None):
        super().__init__()
        self.cfg = cfg
        for name in ("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2", "b_gate"):
            setattr(self, name, None)  # a map without a bias
        for name, (shape, kind, arg) in cfg.block_shapes().items():
            if kind == "const":  # a norm's gain or shift
                t = torch.full(shape, float(arg), dtype=cfg.dtype)
            elif gen is None:  # empty: SAN.from_weights fills it
                t = torch.empty(*shape, dtype=cfg.dtype)
            elif kind == "normal":
                t = torch.randn(*shape, generator=gen, dtype=cfg.dtype) * arg
            else:  # a bias, as torch.nn.Linear: uniform in +-1/sqrt(fan_in)
                t = (torch.rand(*shape, generator=gen, dtype=cfg.dtype) * 2 - 1) / math.sqrt(arg)
            setattr(self, name, nn.Parameter(t))

    def weights(self) -> dict[str, nn.Parameter]:
        """Every parameter of the layer by name (the names :meth:`SAN.from_weights` expects)."""
        return dict(self.named_parameters())

    # --------------------------------------------------------------------- attention sub-layer

    def scores(self, q: torch.Tensor, k: torch.Tensor, segments=None) -> torch.Tensor:
        """Attention logits ``(..., H, n, n)`` before masking and softmax.

        ``"dot"``: :math:`q_i k_j^\\top / \\sqrt{d_{qk}}`. ``"relative"`` (XLNet's content stream,
        Yang et al. 2019, Section 2.5, after Transformer-XL): :math:`[(q_i + u) k_j^\\top +
        (q_i + v) r_{i-j}^\\top + (q_i + s) e_{ij}^\\top] / \\sqrt{d_{qk}}` with ``u, v, s`` the
        biases ``r_w_bias, r_r_bias, r_s_bias``, :math:`r_{i-j}` the head's map ``W_R`` of the
        sinusoidal embedding of ``i - j`` (:func:`rankcollapse.ops.relative_scores`) and
        :math:`e_{ij}` the segment embedding of "same segment" or "different segment" (only when
        ``segments`` are given).
        """
        cfg = self.cfg
        if cfg.attention == "dot":
            return q @ k.transpose(-1, -2) / math.sqrt(cfg.d_qk)
        return relative_scores(self, q, k, segments) / math.sqrt(cfg.d_qk)

    def attention(self, X: torch.Tensor, key_mask=None, segments=None):
        """``SA(X)`` (times the config's ``branch_scale``, folded into ``W_O`` and ``b_O`` as a
        scaled output projection would be) and the attention matrices ``P`` ``(..., H, n, n)``.

        ``key_mask`` ``(..., n)``: ``True`` on real tokens; padded keys get weight 0 (see
        :func:`allowed_keys`, which also applies the causal and window masks). ``segments`` ``(...,
        n)``: segment ids for the relative attention's segment term.
        """
        cfg, n = self.cfg, X.shape[-2]
        q, k, v = (
            torch.einsum("...nd,hde->...hne", X, W) + (0 if b is None else b[:, None, :])
            for W, b in ((self.W_Q, self.b_Q), (self.W_K, self.b_K), (self.W_V, self.b_V))
        )
        if cfg.rotary:  # rotary positions on the first `rotary` dimensions of q and k
            cos, sin = rotary_tables(n, cfg.rotary, cfg.rope_theta, cfg.position_dtype or cfg.dtype)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if cfg.group > 1:  # grouped-query attention: kv head g serves query heads g*group...
            k, v = k.repeat_interleave(cfg.group, -3), v.repeat_interleave(cfg.group, -3)
        scores = self.scores(q, k, segments)
        allowed = allowed_keys(n, key_mask, cfg.causal, cfg.window)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        P = torch.softmax(scores, dim=-1, dtype=cfg.softmax_dtype).to(cfg.dtype)
        lam = cfg.branch_scale  # folded into W_O (and b_O): the branch lam SA(X)
        W_O = self.W_O if lam == 1 else lam * self.W_O
        out = torch.einsum("...hne,hed->...nd", P @ v, W_O)
        if self.b_O is not None:
            out = out + (self.b_O if lam == 1 else lam * self.b_O)
        return out, P

    def attention_sublayer(self, X: torch.Tensor, key_mask=None, segments=None):
        """The attention half of the layer, ``(Y, P, sigma)``: ``Y`` the sub-layer's output
        (``SA(X)``, with its skip and LayerNorm per the config), ``P`` the attention matrices and
        ``sigma`` ``(..., n)`` the scale its LayerNorm divided by (``None`` without LayerNorm)."""
        ln = self.cfg.layernorm
        Z, sigma = self.norm(X, "ln1") if ln == "pre" else (X, None)
        A, P = self.attention(Z, key_mask, segments)
        Y = self.residual(X, A)
        if ln == "post":
            Y, sigma = self.norm(Y, "ln1")
        return Y, P, sigma

    def residual(self, X: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        """The attention sub-layer's residual sum ``skip_strength * X + A``, ``A`` the branch
        :meth:`attention` returns (``branch_scale`` already in it); ``A`` alone without skip. A
        strength of 1 is not multiplied (the usual skip exactly)."""
        cfg = self.cfg
        if not cfg.skip:
            return A
        return (X if cfg.skip_strength == 1 else cfg.skip_weight(X.ndim) * X) + A

    def norm(self, Y: torch.Tensor, which: str):
        """``(N(Y), sigma)``: the layer's norm ``which`` (``"ln1"``, ``"ln2"``) of the config's
        kind, LayerNorm or RMSNorm (:func:`norm_sigma`)."""
        return norm_sigma(
            self.cfg, Y, getattr(self, which + "_gain"), getattr(self, which + "_shift", None)
        )

    # --------------------------------------------------------------------------- MLP sub-layer

    def mlp(self, X: torch.Tensor) -> torch.Tensor:
        """The row-wise MLP ``act(X W_1 + b_1) W_2 + b_2``, or gated ``(act(X W_gate + b_gate) *
        (X W_1 + b_1)) W_2 + b_2`` (no skip, no norm; biases per ``bias_maps``)."""
        act, b1, b2 = activation(self.cfg.activation), self.b_1, self.b_2
        h = X @ self.W_1 + (0 if b1 is None else b1)
        if self.cfg.gated:
            h = act(X @ self.W_gate + (0 if self.b_gate is None else self.b_gate)) * h
        else:
            h = act(h)
        return h @ self.W_2 + (0 if b2 is None else b2)

    def mlp_input(self, Y: torch.Tensor) -> torch.Tensor:
        """What the MLP receives from the attention sub-layer's output ``Y`` (``N(Y)`` if
        pre-LN)."""
        return self.norm(Y, "ln2")[0] if self.cfg.layernorm == "pre" else Y

    def mlp_sublayer(self, Y: torch.Tensor) -> torch.Tensor:
        """The MLP half of the layer (the identity without an MLP), with its skip and norm."""
        cfg = self.cfg
        if not cfg.mlp:
            return Y
        M = self.mlp(self.mlp_input(Y))
        M = M if cfg.mlp_branch_scale == 1 else cfg.mlp_branch_scale * M
        out = Y + M if cfg.skip_mlp else M
        return self.norm(out, "ln2")[0] if cfg.layernorm == "post" else out

    def parallel(self, X: torch.Tensor, key_mask=None, segments=None):
        """A parallel layer (GPT-NeoX's, ``parallel=True``): ``X + SA(N_1(X)) + MLP(N_2(X))``
        pre-LN, ``N_1(X + SA(X) + MLP(X))`` post-LN, without ``skip`` the sum lacks ``X``."""
        cfg = self.cfg
        Z, sigma = self.norm(X, "ln1") if cfg.layernorm == "pre" else (X, None)
        A, P = self.attention(Z, key_mask, segments)
        if cfg.mlp:
            M = self.mlp(self.mlp_input(X))
            A = A + (M if cfg.mlp_branch_scale == 1 else cfg.mlp_branch_scale * M)
        Y = self.residual(X, A)
        if cfg.layernorm == "post":
            Y, sigma = self.norm(Y, "ln1")
        return Y, P, sigma

    def forward(self, X: torch.Tensor, key_mask=None, segments=None):
        if self.cfg.parallel:
            return self.parallel(X, key_mask, segments)
        Y, P, sigma = self.attention_sublayer(X, key_mask, segments)
        return self.mlp_sublayer(Y), P, sigma

    def head_weights(self) -> dict[str, torch.Tensor]:
        """``W_Q, W_K, W_V, W_O`` per query head, ``(H, ., .)``: grouped key and value heads
        repeated over their group (the maps each head applies; the parameters themselves are
        ``(n_kv_heads, ., .)``)."""
        g = self.cfg.group
        return {
            "W_Q": self.W_Q,
            "W_K": self.W_K.repeat_interleave(g, 0),
            "W_V": self.W_V.repeat_interleave(g, 0),
            "W_O": self.W_O,
        }


class SAN(nn.Module):
    """A self-attention network built from a :class:`SANConfig`, initialised from ``seed``.

    ``SAN(cfg, seed=0)(X)`` returns a :class:`SANOutput`. The initialisation draws every weight
    from a ``torch.Generator`` seeded with ``seed``, so the same seed gives the same network.
    :meth:`from_weights` builds one from given weights instead (a real model's, or another
    SAN's, shared).
    """

    def __init__(self, config: SANConfig, *, seed: int):
        super().__init__()
        if not isinstance(config, SANConfig):
            raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
        self.config = config
        gen = None if seed is _NO_INIT else torch.Generator().manual_seed(check_seed("seed", seed))
        check_size(config)
        if config.shared:
            block = Block(config, gen)
            self.layers = nn.ModuleList([block] * config.n_layers)
        else:
            self.layers = nn.ModuleList([Block(config, gen) for _ in range(config.n_layers)])
        if config.final_layernorm:
            self.lnf_gain = nn.Parameter(torch.ones(config.d_model, dtype=config.dtype))
            if config.norm == "layer":
                self.lnf_shift = nn.Parameter(torch.zeros(config.d_model, dtype=config.dtype))

    @classmethod
    def from_weights(cls, config: SANConfig, layers, final=None) -> SAN:
        """A SAN whose layer ``l`` holds the tensors ``layers[l]`` (a mapping name -> tensor).

        The names and shapes are those of :meth:`Block.weights` for ``config`` (an error names
        any missing, extra or misshapen one); with ``shared=True`` give one mapping. Tensors of
        ``config.dtype`` that are ``nn.Parameter`` are used as they are, so two networks built from
        the same parameters share them; other tensors are cast and wrapped. ``final``:
        ``{"gain": (d,), "shift": (d,)}`` of the final LayerNorm (required with
        ``final_layernorm``).
        """
        if not isinstance(config, SANConfig):
            raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
        model = cls(config, seed=_NO_INIT)
        layers = list(layers)
        distinct = list(dict.fromkeys(model.layers))
        if len(layers) != len(distinct):
            raise ValueError(
                f"layers must hold {len(distinct)} mapping(s) of weights "
                f"({'shared=True: one' if config.shared else 'one per layer'}), got {len(layers)}"
            )
        for l, (block, given) in enumerate(zip(distinct, layers)):
            _set_weights(block, dict(given), f"layers[{l}]")
        if config.final_layernorm:
            if final is None:
                raise ValueError(
                    "final must give the final LayerNorm's gain and shift (final_layernorm=True)"
                )
            _set_weights(
                model,
                {"lnf_" + k: v for k, v in dict(final).items()},
                "final",
                names=("lnf_gain", "lnf_shift") if config.norm == "layer" else ("lnf_gain",),
            )
        elif final is not None:
            raise ValueError("final was given but config.final_layernorm is False")
        return model

    def replace(self, **changes) -> SAN:
        """The same network (its parameters shared, not copied) under ``config.replace(**changes)``:
        e.g. ``model.replace(skip=True, skip_strength=0.5)``. Changes that alter a weight's shape
        are refused (by :meth:`from_weights`, naming the weight)."""
        config = self.config.replace(**changes)
        layers = [block.weights() for block in dict.fromkeys(self.layers)]
        final = None
        if config.final_layernorm and self.config.final_layernorm:
            final = self.final_norm_weights()
        return SAN.from_weights(config, layers, final)

    def final_norm_weights(self) -> dict | None:
        """``{"gain", "shift"}`` of the final norm (``"gain"`` alone for RMSNorm), or ``None``."""
        if not self.config.final_layernorm:
            return None
        if self.config.norm == "rms":
            return {"gain": self.lnf_gain}
        return {"gain": self.lnf_gain, "shift": self.lnf_shift}

    def check_input(self, X) -> torch.Tensor:
        """``X`` as a tensor of the model's dtype, after checking its shape ``(..., n,
        d_model)``."""
        return as_tokens("X", X, d=self.config.d_model, dtype=self.config.dtype)

    def check_key_mask(self, key_mask, X: torch.Tensor) -> torch.Tensor | None:
        """``key_mask`` as a boolean ``(..., n)`` matching ``X``
        (:func:`rankcollapse.ops.check_key_mask`)."""
        return check_key_mask(key_mask, X.shape[:-1])

    def forward(self, X, key_mask=None, segments=None) -> SANOutput:
        """Run every layer on ``X`` ``(..., n, d)``; ``key_mask`` ``(..., n)`` (``True`` on real
        tokens) hides padded keys, ``segments`` ``(..., n)`` feeds the relative attention's
        segment term. Returns a :class:`SANOutput`."""
        X = self.check_input(X)
        check_forward(self.config, X.shape)
        strengths = self.config.skip_strength
        if isinstance(strengths, tuple) and (X.ndim < 3 or X.shape[0] != len(strengths)):
            raise ValueError(
                f"X must have shape ({len(strengths)}, ..., n, d) for the {len(strengths)} skip "
                f"strengths of the config (one network each), got {tuple(X.shape)}"
            )
        key_mask = self.check_key_mask(key_mask, X)
        if segments is not None:
            segments = torch.as_tensor(segments)
            if segments.shape != X.shape[:-1]:
                raise ValueError(
                    f"segments must have shape {tuple(X.shape[:-1])}, got {tuple(segments.shape)}"
                )
        hidden, attentions, scales = [X], [], []
        for block in self.layers:
            X, P, sigma = block(X, key_mask, segments)
            hidden.append(X)
            attentions.append(P)
            scales.append(sigma)
        if self.config.final_layernorm:
            final = self.final_norm_weights()
            hidden[-1] = norm_sigma(self.config, hidden[-1], final["gain"], final.get("shift"))[0]
        return SANOutput(hidden_states=hidden, attentions=attentions, ln_scales=scales)

    @torch.no_grad()
    def scale_weights(self, factor: float, which: str = "attention") -> SAN:
        """Multiply the attention (or ``which="mlp"``) weight matrices by ``factor`` in place;
        returns self."""
        factor = check_positive_float("factor", factor, allow_zero=True)
        check_choice("which", which, ("attention", "mlp", "value"))
        names = {
            "attention": ("W_Q", "W_K", "W_V", "W_O"),
            "mlp": ("W_1", "W_2", "W_gate") if self.config.gated else ("W_1", "W_2"),
            "value": ("W_V",),
        }[which]
        if which == "mlp" and not self.config.mlp:
            raise ValueError("which='mlp' needs a model with an MLP (config.mlp > 0)")
        for block in dict.fromkeys(self.layers):  # each distinct block once (shared weights)
            for name in names:
                getattr(block, name).mul_(factor)
        return self


def norm_sigma(cfg: SANConfig, Y: torch.Tensor, gain, shift=None):
    """``(N(Y), sigma)``, the norm of ``cfg``'s kind: LayerNorm with ``gain, shift`` (``ln_eps``)
    or RMSNorm with ``gain`` (``ln_eps``, statistics in ``norm_dtype``)."""
    check_choice("cfg.norm (cfg a SANConfig)", getattr(cfg, "norm", None), NORMS)
    if cfg.norm == "rms":
        return rms_norm_sigma(Y, gain, cfg.ln_eps, cfg.norm_dtype)
    return layer_norm_sigma(Y, gain, shift, cfg.ln_eps)


def check_san(model) -> SAN:
    """``model`` itself if it is a :class:`SAN`; a ``TypeError`` naming what it is otherwise."""
    if not isinstance(model, SAN):
        raise TypeError(f"model must be a rankcollapse.san.SAN, got {type(model).__name__}")
    return model
