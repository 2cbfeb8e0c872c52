"""ALBERT (Lan et al. 2020) in the core's types: BERT's layer with shared weights (one group of
layers, or one per group) and a projection of the 128-wide embeddings to the model's width.

The official code removed ALBERT's MLP by setting its linear maps to the identity, so the
network's "paper" ablations use identity MLP weights (:mod:`rankcollapse.real.ablation`)."""

from __future__ import annotations

from ...san import SAN
from ..network import Network
from . import bert
from .common import linear, transformers_config

__all__ = ["convert"]


def convert(model, name: str, dtype) -> Network:
    """The :class:`Network` of a transformers ``AlbertModel``."""
    c = transformers_config(model, "albert")
    if c.inner_group_num != 1:
        raise ValueError(
            f"ALBERT with inner_group_num={c.inner_group_num} is not supported (only 1)"
        )
    cfg = bert.san_config(c, dtype, shared=c.num_hidden_groups == 1)
    groups = []
    for group in model.encoder.albert_layer_groups:
        layer = group.albert_layers[0]
        groups.append(
            bert.layer_weights(
                layer.attention,
                layer.attention.dense,
                layer.ffn,
                layer.ffn_output,
                layer.attention.LayerNorm,
                layer.full_layer_layer_norm,
                c.num_attention_heads,
                dtype,
            )
        )
    L, G = c.num_hidden_layers, c.num_hidden_groups
    layers = groups if cfg.shared else [groups[int(l / (L / G))] for l in range(L)]
    proj = linear(model.encoder.embedding_hidden_mapping_in, dtype)
    emb = bert.embedding(model.embeddings, dtype, proj=proj)
    return Network(name, emb, SAN.from_weights(cfg, layers), paper_identity_mlp=True)
