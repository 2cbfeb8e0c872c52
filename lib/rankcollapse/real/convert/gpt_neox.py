"""GPT-NeoX (Black et al. 2022; the Pythia suite, Biderman et al. 2023) in the core's types:
pre-LN decoder layers whose attention and MLP read the same input in parallel (``x +
attn(LN_1(x)) + mlp(LN_2(x))``, ``use_parallel_residual``; sequential otherwise), rotary positions
on a fraction of each head's dimensions (``partial_rotary_factor``, a quarter in Pythia), a fused
``query_key_value`` map laid out head by head (``[q_h, k_h, v_h]`` per head), LayerNorm, biases,
a final LayerNorm and a causal mask.
"""

from __future__ import annotations

from ...san import SAN, SANConfig
from ..network import Embedding, Network
from .common import (
    activation_of,
    final_layernorm,
    linear,
    mlp_and_norms,
    parameter,
    rope,
    transformers_config,
    upcast,
)

__all__ = ["convert", "san_config"]


def san_config(c, dtype, *, as_transformers: bool = True) -> SANConfig:
    """The :class:`SANConfig` of a transformers ``GPTNeoXConfig`` ``c`` (``as_transformers``: the
    rotary sinusoids and the softmax in float32, as transformers computes them)."""
    if getattr(c, "model_type", None) != "gpt_neox":
        raise TypeError(f"c must be a transformers GPTNeoXConfig, got {type(c).__name__}")
    theta, partial = rope(c)
    head = c.hidden_size // c.num_attention_heads
    return SANConfig(
        n_layers=c.num_hidden_layers,
        n_heads=c.num_attention_heads,
        d_model=c.hidden_size,
        skip=True,
        mlp=c.intermediate_size,
        activation=activation_of(c.hidden_act),
        layernorm="pre",
        parallel=c.use_parallel_residual,
        ln_eps=c.layer_norm_eps,
        final_layernorm=True,
        causal=True,
        rotary=int(head * partial),
        rope_theta=theta,
        bias=True,
        bias_maps=None if c.attention_bias else ("mlp",),
        dtype=dtype,
        **upcast(as_transformers, rms=False),
    )


def convert(model, name: str, dtype, *, as_transformers: bool = True) -> Network:
    """The :class:`Network` of a transformers ``GPTNeoXModel``."""
    c = transformers_config(model, "gpt_neox")
    cfg = san_config(c, dtype, as_transformers=as_transformers)
    H, d = cfg.n_heads, cfg.d_model
    layers = []
    for layer in model.layers:
        att = layer.attention
        qkv = att.query_key_value.weight.T.reshape(d, H, 3, d // H)  # head-major [q_h, k_h, v_h]
        w = {
            key: parameter(qkv[:, :, i].permute(1, 0, 2), dtype)
            for i, key in enumerate(("W_Q", "W_K", "W_V"))
        }
        W_O, b_O = linear(att.dense, dtype)
        w["W_O"] = W_O.reshape(H, d // H, d)
        if att.query_key_value.bias is not None:
            bqkv = att.query_key_value.bias.reshape(H, 3, d // H)
            for i, key in enumerate(("b_Q", "b_K", "b_V")):
                w[key] = parameter(bqkv[:, i], dtype)
            w["b_O"] = b_O
        mlp, norms = layer.mlp, (layer.input_layernorm, layer.post_attention_layernorm)
        w.update(mlp_and_norms(mlp.dense_h_to_4h, mlp.dense_4h_to_h, *norms, dtype))
        layers.append(w)
    final = final_layernorm(model.final_layer_norm, dtype)
    emb = Embedding(parameter(model.embed_in.weight, dtype))
    return Network(name, emb, SAN.from_weights(cfg, layers, final))
