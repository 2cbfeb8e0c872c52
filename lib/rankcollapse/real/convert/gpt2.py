"""GPT-2 (Radford et al. 2019) in the core's types: pre-LN layers with a causal mask, fused
``c_attn`` projections split into heads, ``wte + wpe`` embeddings and the final LayerNorm."""

from __future__ import annotations

from ...san import SAN, SANConfig
from ..network import Embedding, Network
from .common import (
    activation_of,
    attention_weights,
    final_layernorm,
    mlp_and_norms,
    parameter,
    transformers_config,
)

__all__ = ["convert"]


def convert(model, name: str, dtype) -> Network:
    """The :class:`Network` of a transformers ``GPT2Model``."""
    c = transformers_config(model, "gpt2")
    if not c.scale_attn_weights or c.scale_attn_by_inverse_layer_idx or c.reorder_and_upcast_attn:
        raise ValueError(
            "GPT-2 is converted with its default attention scaling only "
            "(scale_attn_weights=True, no inverse-layer scaling, no reordering)"
        )
    H, d = c.n_head, c.n_embd
    cfg = SANConfig(
        n_layers=c.n_layer,
        n_heads=H,
        d_model=d,
        skip=True,
        mlp=c.n_inner or 4 * d,
        activation=activation_of(c.activation_function),
        layernorm="pre",
        bias=True,
        ln_eps=c.layer_norm_epsilon,
        final_layernorm=True,
        causal=True,
        dtype=dtype,
    )
    layers = []
    for block in model.h:
        qkv, bqkv = block.attn.c_attn.weight, block.attn.c_attn.bias  # Conv1D: x @ weight + bias
        w = attention_weights(
            qkv[:, :d],
            qkv[:, d : 2 * d],
            qkv[:, 2 * d :],
            block.attn.c_proj.weight,
            (bqkv[:d], bqkv[d : 2 * d], bqkv[2 * d :], block.attn.c_proj.bias),
            H,
            dtype,
        )
        w.update(mlp_and_norms(block.mlp.c_fc, block.mlp.c_proj, block.ln_1, block.ln_2, dtype))
        layers.append(w)
    final = final_layernorm(model.ln_f, dtype)
    emb = Embedding(parameter(model.wte.weight, dtype), position=parameter(model.wpe.weight, dtype))
    return Network(name, emb, SAN.from_weights(cfg, layers, final))
