"""The weights' side of the collapse bounds: which networks they cover, and ``beta``.

``W_QK,h = W_Q,h W_K,h^T`` and ``W_h = W_V,h W_O,h`` of every layer and head, and the product
of their norms that the theorems call ``beta`` (Dong et al. 2021, Section 2). Book: chapter
"Pure attention collapses", section 2.
"""

from __future__ import annotations

import torch

from ..san import SAN, check_san

__all__ = ["check_pure_attention", "qk_matrices", "value_matrices", "beta"]


def check_pure_attention(model) -> SAN:
    """Raise ``ValueError`` unless ``model`` is a pure self-attention network (the collapse bounds'
    hypothesis).

    The theorems cover ``skip=False, mlp=0, layernorm="none", bias=False`` (and dot-product
    attention with no mask and no final LayerNorm) only; the error names
    every switch that takes the model outside them, and why.
    """
    cfg = check_san(model).config
    why = []
    if cfg.skip:
        why.append(
            "it has skip connections (skip=True): the length-zero path carries the input "
            "through untouched and the bound does not hold (chapter 'Skip connections')"
        )
    if cfg.mlp:
        why.append(
            f"it has an MLP (mlp={cfg.mlp}): the bound then needs the MLP's Lipschitz constant"
        )
    if cfg.layernorm != "none":
        why.append(
            f"it has LayerNorm (layernorm={cfg.layernorm!r}): the proof assumes no normalisation"
        )
    if cfg.bias:
        why.append(
            "it has biases (bias=True): query/key biases change the attention logits the proof "
            "expands"
        )
    if cfg.final_layernorm:
        why.append(
            "it has a final LayerNorm (final_layernorm=True): the proof assumes no normalisation"
        )
    if cfg.causal:
        why.append(
            "it has a causal mask (causal=True): the proof expands full softmax attention "
            "(masked attention is a later paper's subject)"
        )
    if cfg.window:
        why.append(
            f"it has a sliding-window mask (window={cfg.window}): the proof expands full softmax "
            "attention (masked attention is a later paper's subject)"
        )
    if cfg.attention != "dot":
        why.append(
            f"its attention is {cfg.attention!r}: the proof covers dot-product attention only"
        )
    if why:
        raise ValueError(
            "model is not a pure self-attention network, which is all the theorem covers: "
            + "; ".join(why)
        )
    return model


@torch.no_grad()
def qk_matrices(model) -> torch.Tensor:
    """:math:`W_{QK,h} = W_{Q,h} W_{K,h}^\\top` of every layer and head, shape ``(L, H, d, d)``.

    The attention logits of head ``h`` are :math:`X W_{QK,h} X^\\top / \\sqrt{d_{qk}}`.
    """
    check_san(model)
    mats = [b.W_Q.detach() @ b.W_K.detach().transpose(-1, -2) for b in model.layers]
    cfg = model.config
    if not mats:
        return torch.zeros(0, cfg.n_heads, cfg.d_model, cfg.d_model, dtype=cfg.dtype)
    return torch.stack(mats)


@torch.no_grad()
def output_map(block) -> torch.Tensor:
    """``W_O`` of ``block`` times the config's ``branch_scale`` (as the forward pass applies it)."""
    scale = block.cfg.branch_scale
    return block.W_O.detach() if scale == 1 else scale * block.W_O.detach()


def value_matrices(model) -> torch.Tensor:
    """The value map :math:`W_h = W_{V,h} W_{O,h}` of every layer and head, shape ``(L, H, d, d)``.

    ``W_{V,h}`` is head ``h``'s ``(d, d_v)`` value projection and ``W_{O,h}`` its ``(d_v, d)`` slice
    of the output projection: the head contributes :math:`P_h X W_{V,h} W_{O,h}` to the layer.
    With a ``branch_scale`` other than 1 (:class:`~rankcollapse.san.SANConfig`) the map includes
    it: the head contributes ``branch_scale`` times that.
    """
    check_san(model)
    cfg = model.config
    mats = [b.W_V.detach() @ output_map(b) for b in model.layers]
    if not mats:
        return torch.zeros(0, cfg.n_heads, cfg.d_model, cfg.d_model, dtype=cfg.dtype)
    return torch.stack(mats)


@torch.no_grad()
def head_norms(model) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r""":math:`\lVert W_{QK,h}\rVert_1`, :math:`\lVert W_h\rVert_1` and :math:`\lVert
    W_h\rVert_\infty`, each ``(L, H)``.

    The norms ``beta`` and ``nu`` are made of (:func:`~.bound.gamma_details`), one layer's ``d x d``
    products at a time (:func:`qk_matrices` holds all ``L H d^2`` entries at once;
    shared layers are computed once). Kept for the model until one of its attention weights is
    replaced or changed in place (each tensor's address and version are checked), since the
    bound's functions ask for them at every call. ``beta = q * sqrt(w1 * winf)``, as :func:`beta`.
    """
    cfg = check_san(model).config
    if (
        cfg.n_layers == 0
    ):  # a network of depth 0: no layer, no constant; the bound is the input's residual
        z = torch.zeros(0, cfg.n_heads, dtype=cfg.dtype)
        return z, z, z
    key = tuple(
        (p.data_ptr(), p._version, p.dtype)
        for b in model.layers
        for p in (b.W_Q, b.W_K, b.W_V, b.W_O)
    )
    cached = model.__dict__.get(
        "_head_norms_cache"
    )  # (the weights' addresses and versions, their norms)
    if cached is not None and cached[0] == key:
        return cached[1]
    done = {}
    for b in model.layers:
        if id(b) not in done:
            Q = (b.W_Q.detach() @ b.W_K.detach().transpose(-1, -2)).abs()
            W = (b.W_V.detach() @ output_map(b)).abs()
            done[id(b)] = torch.stack([Q.sum(-2).amax(-1), W.sum(-2).amax(-1), W.sum(-1).amax(-1)])
    norms = torch.stack([done[id(b)] for b in model.layers]).unbind(1)
    model.__dict__["_head_norms_cache"] = (key, norms)
    return norms


def beta(model) -> torch.Tensor:
    """:math:`\\lVert W_{QK,h}\\rVert_1 \\lVert W_h\\rVert_{1,\\infty}` per layer and head, shape
    ``(L, H)``.

    ``W_QK,h = W_Q,h W_K,h^T`` (``d x d``, see :func:`qk_matrices`) and ``W_h = W_V,h W_O,h``
    (``d x d``, the head's value map including its slice of the output projection, see
    :func:`value_matrices`); :math:`\\lVert\\cdot\\rVert_1` is the largest absolute column sum and
    :math:`\\lVert\\cdot\\rVert_{1,\\infty}` the composite norm. The theorems' ``beta`` is any upper
    bound of these numbers: ``beta(model).max()``. Defined for any SAN (the skip-connection
    chapter uses it too); the bound itself needs a pure attention network.
    """
    q, w1, winf = head_norms(model)  # one layer's d x d products at a time
    return q * torch.sqrt(w1 * winf)
