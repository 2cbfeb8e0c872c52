"""One layer of a SAN with its attention (and LayerNorm scales) held at their forward-pass values.

Then the layer is an affine map of its input, which is what the path decomposition expands.
"""

from __future__ import annotations

import torch

from ..san import SAN, check_san


class FrozenLayer:
    """One layer of a SAN with its attention matrices (and LayerNorm scales) held fixed.

    The layer is then an affine map ``F(Y) = skip(Y) + sum_h head(Y, h) + offset``; each
    method below applies one of those pieces to a stack of terms of shape ``(K, ..., n, d)``
    (``K`` terms at once, e.g. one per path length). The config's ``skip_strength`` weights the
    skip branch and its ``branch_scale`` every head and the offset's attention part, as in
    :meth:`~rankcollapse.san.Block.residual` (``W_O`` here includes the branch scale).
    """

    def __init__(self, block, P: torch.Tensor, sigma: torch.Tensor | None):
        cfg = block.cfg
        self.block, self.P, self.skip_on, self.ln = block, P, cfg.skip, cfg.layernorm
        self.H, self.dv = cfg.n_heads, cfg.d_v
        # value and output maps of all heads side by side: (d, H*dv) and (H*dv, d)
        self.W_V = block.W_V.detach().permute(1, 0, 2).reshape(cfg.d_model, -1)
        self.W_O = block.W_O.detach().reshape(-1, cfg.d_model)
        if cfg.branch_scale != 1:
            self.W_O = cfg.branch_scale * self.W_O
        self.alpha = cfg.skip_strength  # a number, or a tuple: one per entry of the first batch dim
        self.cfg = cfg
        if self.ln != "none":
            self.gain, self.shift = block.ln1_gain.detach(), block.ln1_shift.detach()
            self.inv_sigma = (1.0 / sigma).unsqueeze(-1)  # (..., n, 1): the left scaling S^{-1}

    # LayerNorm's linear part with frozen scales: Y -> S^{-1} (Y C) G
    def _norm(self, Y):
        return (Y - Y.mean(dim=-1, keepdim=True)) * self.inv_sigma * self.gain

    def _pre(self, Y):
        return self._norm(Y) if self.ln == "pre" else Y

    def _post(self, Y):
        return self._norm(Y) if self.ln == "post" else Y

    def _mix(self, Y, heads: slice):
        """``sum_{h in heads} P_h Y W_{V,h} W_{O,h}`` for ``Y`` of shape ``(K, ..., n, d)``."""
        dv = self.dv
        cols = slice(heads.start * dv, heads.stop * dv)
        V = Y @ self.W_V[:, cols]  # (K, ..., n, h*dv)
        V = V.unflatten(-1, (-1, dv)).transpose(-2, -3)  # (K, ..., h, n, dv)
        V = self.P[..., heads, :, :] @ V  # attention mixes tokens, head by head
        return V.transpose(-2, -3).flatten(-2) @ self.W_O[cols, :]

    def skip(self, Y):
        """The skip branch (the identity times ``skip_strength``, or LayerNorm's linear part of
        that in a post-LN layer)."""
        if self.alpha == 1:
            return self._post(Y)
        # Y is (K, ..., n, d): the strengths line up with the first batch dimension after K
        weight = self.cfg.skip_weight(Y.ndim - 1)
        return self._post(weight * Y)

    def heads(self, Y):
        """All heads at once: ``sum_h head(Y, h)``."""
        return self._post(self._mix(self._pre(Y), slice(0, self.H)))

    def head(self, Y, h: int):
        """One head's branch: ``P_h Y W_{V,h} W_{O,h}`` (with LayerNorm's linear part around it)."""
        return self._post(self._mix(self._pre(Y), slice(h, h + 1)))

    def branch(self, Y, c: int | None):
        """One step of a path on one term ``Y`` (``(..., n, d)``, no stack): the skip branch
        (``c=None``) or head ``c``."""
        Y = Y.unsqueeze(0)
        return (self.skip(Y) if c is None else self.head(Y, c))[0]

    def offset(self, like: torch.Tensor):
        """``F(0)``: the constant the layer adds (biases and LayerNorm's shift), shaped like
        ``like``."""
        b = self.block
        zero = torch.zeros_like(like)
        if self.ln == "pre":  # LN(0) = 1 shift^T enters the attention
            Z = zero + self.shift
        else:
            Z = zero
        A = self._mix(Z.unsqueeze(0), slice(0, self.H))[0] if self.ln == "pre" else zero
        if b.cfg.bias:
            # value bias: P_h 1 b_V^T W_O = 1 b_V^T W_O since P_h is row-stochastic
            b_O = b.b_O.detach()
            if b.cfg.branch_scale != 1:
                b_O = b.cfg.branch_scale * b_O
            A = A + (b.b_V.detach().reshape(-1) @ self.W_O) + b_O
        if self.ln == "post":
            return self._norm(A) + self.shift
        return A

    def __call__(self, Y):
        """The whole affine map ``F(Y)`` with frozen attention: equals the layer's forward
        output."""
        out = self.heads(Y.unsqueeze(0))[0] + self.offset(Y)
        return out + self.branch(Y, None) if self.skip_on else out


def check_linear(model) -> None:
    check_san(model)
    if model.config.mlp:
        raise ValueError(
            "model has an MLP (config.mlp > 0): an MLP is not linear, so the network has no path "
            "decomposition; use a model with mlp=0"
        )
    if model.config.final_layernorm:
        raise ValueError(
            "model has a final LayerNorm (final_layernorm=True), which the frozen layers do not "
            "include; use a model with final_layernorm=False"
        )


def frozen_layers(model: SAN, X) -> tuple[torch.Tensor, list[FrozenLayer], torch.Tensor]:
    """Run ``model`` on ``X`` and return ``(X, layers, output)``: the checked input, each layer
    frozen at its forward-pass attention (and LayerNorm scales), and the model's output."""
    check_linear(model)
    X = model.check_input(X)
    with torch.no_grad():
        out = model(X)
    layers = [FrozenLayer(b, P, s) for b, P, s in zip(model.layers, out.attentions, out.ln_scales)]
    return X, layers, out.last_hidden_state


def _constant(layers, X):
    c = torch.zeros_like(X)
    for layer in layers:
        c = layer(c)
    return c


def maybe_constant(result, layers, X, with_constant):
    cfg = layers[0].block.cfg if layers else None
    no_constant = cfg is None or (
        not cfg.bias and all(layer.ln == "none" or not layer.shift.any() for layer in layers)
    )
    if no_constant and not with_constant:  # no bias and no LayerNorm shift: the constant is 0
        return result
    c = _constant(layers, X)
    if with_constant:
        return result, c
    if c.abs().max() > 0:
        raise ValueError(
            "this model adds a constant term (biases or a LayerNorm shift), which belongs to no "
            "path; call with with_constant=True to receive it as (terms, constant)"
        )
    return result
