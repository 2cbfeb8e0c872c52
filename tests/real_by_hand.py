"""What the tests of rc.real's families share: each family's small configuration (width 64, a
second or two per network) and one attention layer written out head by head, independent of the
core's einsums (grouped heads, rotary scores, the causal mask, biases where the layer has them).

Used by tests/test_real_families.py (every family's parity with transformers) and the
family-specific tests (test_real_llama.py, test_real_qwen2.py, test_real_gpt_neox.py), with a
one-layer network to write the variants out on."""

from __future__ import annotations

import math

import torch
from test_san import by_hand_rotary

import rankcollapse as rc

#: the parity tests' bound: every layer's relative error, float64
TOL = 1e-10

# width 64, 4 query heads (the decoders with grouped heads: 2 key/value heads), vocabulary of 100
SMALL = {
    "bert": dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, vocab_size=100),
    "albert": dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, vocab_size=100),
    "xlnet": dict(d_model=64, d_inner=96, n_head=4, vocab_size=100),
    "gpt2": dict(n_embd=64, n_head=4, vocab_size=100),
    "llama": dict(
        hidden_size=64,
        intermediate_size=96,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
    ),
    "gpt_neox": dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, vocab_size=100),
    "qwen2": dict(
        hidden_size=64,
        intermediate_size=96,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
    ),
}


def small(family: str, layers: int = 2) -> dict:
    """``family``'s small configuration with ``layers`` native layers."""
    return {**SMALL[family], rc.real.families.depth_key(family): layers}


def one_layer(family: str, init: str = "transformers"):
    """``(net, X)``: ``family``'s small network of one layer (seed 3) and the embedding of 10
    random ids, what the tests write the variants out on."""
    net = rc.real.build(family, small(family, 1), seed=3, init=init)
    X = net.embed(torch.randint(0, 100, (10,), generator=torch.Generator().manual_seed(4)))
    return net, X


def attention_by_hand(blk, cfg, Z, bias=True):
    """sum_h P_h (Z W_V,g(h) + b_V,g(h)) W_O,h + b_O with key/value head g(h) = h // group,
    rotary positions on the first ``cfg.rotary`` dimensions of each query and key, the causal
    mask, and the biases the layer has (none when ``bias`` is False)."""
    n, g = Z.shape[0], cfg.group

    def b(t, i):
        return t[i] if bias and t is not None else 0

    out = torch.zeros_like(Z) + (blk.b_O if bias and blk.b_O is not None else 0)
    for h in range(cfg.n_heads):
        q = by_hand_rotary(Z @ blk.W_Q[h] + b(blk.b_Q, h), cfg.rotary, cfg.rope_theta)
        k = by_hand_rotary(Z @ blk.W_K[h // g] + b(blk.b_K, h // g), cfg.rotary, cfg.rope_theta)
        s = (q @ k.T / math.sqrt(cfg.d_qk)).masked_fill(~torch.ones(n, n).tril().bool(), -math.inf)
        out += torch.softmax(s, -1) @ (Z @ blk.W_V[h // g] + b(blk.b_V, h // g)) @ blk.W_O[h]
    return out
