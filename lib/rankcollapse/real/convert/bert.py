"""BERT (Devlin et al. 2019) in the core's types: post-LN layers, word + position + token-type
embeddings and their LayerNorm. ALBERT's converter (:mod:`.albert`) reuses the layer map and the
embedding."""

from __future__ import annotations

from ...san import SAN, SANConfig
from ..network import Embedding, Network
from .common import (
    activation_of,
    attention_weights,
    mlp_and_norms,
    parameter,
    transformers_config,
)

__all__ = ["convert", "san_config", "embedding", "layer_weights"]


def san_config(c, dtype, *, shared: bool = False) -> SANConfig:
    """The :class:`SANConfig` of a BERT-shaped transformers config ``c`` (BERT's or ALBERT's)."""
    if getattr(c, "model_type", None) not in ("bert", "albert"):
        raise TypeError(f"c must be a transformers BERT or ALBERT config, got {type(c).__name__}")
    return SANConfig(
        n_layers=c.num_hidden_layers,
        n_heads=c.num_attention_heads,
        d_model=c.hidden_size,
        skip=True,
        mlp=c.intermediate_size,
        activation=activation_of(c.hidden_act),
        layernorm="post",
        bias=True,
        ln_eps=c.layer_norm_eps,
        dtype=dtype,
        shared=shared,
    )


def embedding(emb, dtype, proj=None) -> Embedding:
    """The :class:`Embedding` of a BERT-shaped ``embeddings`` module (``proj``: ALBERT's map)."""
    if not all(hasattr(emb, k) for k in ("word_embeddings", "position_embeddings", "LayerNorm")):
        raise TypeError(
            f"emb must be a transformers BERT or ALBERT embeddings module, got {type(emb).__name__}"
        )
    return Embedding(
        parameter(emb.word_embeddings.weight, dtype),
        position=parameter(emb.position_embeddings.weight, dtype),
        token_type=parameter(emb.token_type_embeddings.weight, dtype),
        ln=(
            parameter(emb.LayerNorm.weight, dtype),
            parameter(emb.LayerNorm.bias, dtype),
            emb.LayerNorm.eps,
        ),
        proj=proj,
    )


def layer_weights(att, out, ffn, ffn_out, ln1, ln2, H, dtype) -> dict:
    """One post-LN layer's weights by the core's names: ``att`` holds the ``query, key, value``
    linear maps, ``out`` the output map, ``ffn, ffn_out`` the MLP's two maps, ``ln1, ln2`` the
    LayerNorms after attention and after the MLP."""
    if not all(hasattr(att, k) for k in ("query", "key", "value")):
        raise TypeError(f"att must hold the query, key and value maps, got {type(att).__name__}")
    maps = (att.query, att.key, att.value, out)
    w = attention_weights(*(m.weight.T for m in maps), [m.bias for m in maps], H, dtype)
    return {**w, **mlp_and_norms(ffn, ffn_out, ln1, ln2, dtype)}


def convert(model, name: str, dtype) -> Network:
    """The :class:`Network` of a transformers ``BertModel``."""
    c = transformers_config(model, "bert")
    cfg = san_config(c, dtype)
    layers = [
        layer_weights(
            layer.attention.self,
            layer.attention.output.dense,
            layer.intermediate.dense,
            layer.output.dense,
            layer.attention.output.LayerNorm,
            layer.output.LayerNorm,
            c.num_attention_heads,
            dtype,
        )
        for layer in model.encoder.layer
    ]
    return Network(name, embedding(model.embeddings, dtype), SAN.from_weights(cfg, layers))
