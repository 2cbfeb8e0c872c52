"""Llama (Touvron et al. 2023) in the core's types: pre-norm decoder layers with RMSNorm, rotary
positions on every query and key dimension (``rotate_half`` layout), grouped-query attention, a
SiLU-gated MLP (``down(silu(gate(x)) * up(x))``), a final RMSNorm and a causal mask; biases on the
attention maps (``attention_bias``) and the MLP's (``mlp_bias``) only when the config asks.

Qwen2 shares this layer with biases on ``q, k, v`` alone (:mod:`.qwen2` reuses :func:`network`);
Mistral differs by its sliding window (the core's ``window``), its converter not written.
"""

from __future__ import annotations

from ...san import SAN, SANConfig
from ..network import Embedding, Network
from .common import (
    activation_of,
    attention_weights,
    linear,
    parameter,
    rope,
    transformers_config,
    upcast,
)

__all__ = ["convert", "san_config", "network"]


def san_config(c, dtype, *, as_transformers: bool = True, maps=None) -> SANConfig:
    """The :class:`SANConfig` of a transformers ``LlamaConfig`` ``c`` (``as_transformers``: the
    rotary sinusoids, RMSNorm and softmax in float32, as transformers computes them; ``maps``:
    the maps with biases, ``None`` for Llama's ``attention_bias`` and ``mlp_bias``)."""
    if getattr(c, "model_type", None) not in ("llama", "qwen2"):
        raise TypeError(f"c must be a transformers LlamaConfig, got {type(c).__name__}")
    theta, _ = rope(c)  # Llama rotates every dimension of a head
    head = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    if maps is None:
        maps = ("q", "k", "v", "o") if c.attention_bias else ()
        maps += ("mlp",) if c.mlp_bias else ()
    return SANConfig(
        n_layers=c.num_hidden_layers,
        n_heads=c.num_attention_heads,
        n_kv_heads=c.num_key_value_heads,
        d_model=c.hidden_size,
        d_qk=head,
        d_v=head,
        skip=True,
        mlp=c.intermediate_size,
        gated=True,
        activation=activation_of(c.hidden_act),
        norm="rms",
        layernorm="pre",
        ln_eps=c.rms_norm_eps,
        final_layernorm=True,
        causal=True,
        rotary=head,
        rope_theta=theta,
        bias=bool(maps),
        bias_maps=maps or None,
        dtype=dtype,
        **upcast(as_transformers, rms=True),
    )


def convert(model, name: str, dtype, *, as_transformers: bool = True) -> Network:
    """The :class:`Network` of a transformers ``LlamaModel``."""
    c = transformers_config(model, "llama")
    return network(model, name, san_config(c, dtype, as_transformers=as_transformers))


def network(model, name: str, cfg: SANConfig) -> Network:
    """The :class:`Network` of a Llama-shaped transformers model (Llama's, Qwen2's) under the
    core's ``cfg``: each layer's ``self_attn`` (``q/k/v/o_proj``), ``mlp`` (``gate/up/down_proj``)
    and two RMSNorms, the final ``norm`` and the ``embed_tokens`` table."""
    family = getattr(getattr(model, "config", None), "model_type", None)
    transformers_config(model, family if family in ("llama", "qwen2") else "llama")
    if not isinstance(cfg, SANConfig):
        raise TypeError(f"cfg must be a rankcollapse SANConfig, got {type(cfg).__name__}")
    dtype = cfg.dtype
    layers = []
    for layer in model.layers:
        att, mlp = layer.self_attn, layer.mlp
        maps = (att.q_proj, att.k_proj, att.v_proj, att.o_proj)
        w = attention_weights(
            *(m.weight.T for m in maps),
            [m.bias for m in maps],
            cfg.n_heads,
            dtype,
            kv=cfg.kv_heads,
        )
        for core, lin in (("gate", mlp.gate_proj), ("1", mlp.up_proj), ("2", mlp.down_proj)):
            W, b = linear(lin, dtype)
            w[f"W_{core}"] = W
            if b is not None:
                w[f"b_{core}"] = b
        w["ln1_gain"] = parameter(layer.input_layernorm.weight, dtype)
        w["ln2_gain"] = parameter(layer.post_attention_layernorm.weight, dtype)
        layers.append(w)
    final = {"gain": parameter(model.norm.weight, dtype)}
    emb = Embedding(parameter(model.embed_tokens.weight, dtype))
    return Network(name, emb, SAN.from_weights(cfg, layers, final))
