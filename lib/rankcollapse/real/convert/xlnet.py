"""What only XLNet needs: its relative-position attention's weights, mapped onto the core's.

XLNet (Yang et al. 2019) keeps no position table: each layer's attention scores gain a term in
the relative position of the two tokens and, given segment ids, one in whether they share a
segment. The core runs that as ``SANConfig(attention="relative")`` (see
:func:`rankcollapse.ops.relative_scores`); this module maps a transformers ``XLNetModel``'s
parameters (``q, k, v, o, r`` of shape ``(d, H, d_head)``, the biases ``r_w_bias, r_r_bias,
r_s_bias`` and ``seg_embed``) onto it. Only the content stream (what ``XLNetModel`` returns
without a ``target_mapping``) and bidirectional attention without memory are converted.
"""

from __future__ import annotations

import torch

from ...san import SAN, SANConfig
from ..network import Embedding, Network
from .common import activation_of, mlp_and_norms, parameter, transformers_config

__all__ = ["convert"]


def convert(model, name: str, dtype, position_dtype=torch.float32) -> Network:
    """The :class:`Network` of a transformers ``XLNetModel`` in ``dtype`` (``position_dtype``:
    the dtype of its relative positions' sinusoids, float32 as transformers computes them)."""
    c = transformers_config(model, "xlnet")
    if c.attn_type != "bi" or c.bi_data or c.mem_len:
        raise ValueError("XLNet is converted with attn_type='bi', bi_data=False and no memory only")
    H, d = c.n_head, c.d_model
    cfg = SANConfig(
        n_layers=c.n_layer,
        n_heads=H,
        d_model=d,
        skip=True,
        mlp=c.d_inner,
        activation=activation_of(c.ff_activation),
        layernorm="post",
        bias=True,
        ln_eps=c.layer_norm_eps,
        attention="relative",
        clamp_len=max(c.clamp_len, 0),
        position_dtype=position_dtype,
        dtype=dtype,
    )

    def heads(t):  # (d, H, dh) -> (H, d, dh)
        return parameter(t.permute(1, 0, 2), dtype)

    def zero(*shape):  # XLNet's q, k, v, o have no bias
        return parameter(torch.zeros(*shape), dtype)

    layers = []
    for layer in model.layer:
        att, ff = layer.rel_attn, layer.ff
        w = {
            "W_Q": heads(att.q),
            "W_K": heads(att.k),
            "W_V": heads(att.v),
            "W_R": heads(att.r),
            "W_O": parameter(att.o.permute(1, 2, 0), dtype),  # (d, H, dh) -> (H, dh, d)
            "b_Q": zero(H, d // H),
            "b_K": zero(H, d // H),
            "b_V": zero(H, d // H),
            "b_O": zero(d),
            "r_w_bias": parameter(att.r_w_bias, dtype),
            "r_r_bias": parameter(att.r_r_bias, dtype),
            "r_s_bias": parameter(att.r_s_bias, dtype),
            "seg_embed": parameter(att.seg_embed, dtype),
        }
        w.update(mlp_and_norms(ff.layer_1, ff.layer_2, att.layer_norm, ff.layer_norm, dtype))
        layers.append(w)
    emb = Embedding(parameter(model.word_embedding.weight, dtype))
    return Network(name, emb, SAN.from_weights(cfg, layers))
