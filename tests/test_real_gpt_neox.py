"""rc.real.convert.gpt_neox: a GPT-NeoX decoder (Pythia's: attention and MLP in parallel, rotary
positions on a quarter of each head, LayerNorm, biases, causal mask) converted into the core's
SAN is configured as Pythia is, and the paper's variants applied to it do what their names say
(checked against the formulas written out). Its parity with transformers' GPTNeoXModel (every
layer, float64, 1e-10; parallel and sequential layers, full rotary, no attention bias) is
tests/test_real_families.py's, for every family."""

import pytest
import torch
from real_by_hand import attention_by_hand, one_layer, small

import rankcollapse as rc

transformers = pytest.importorskip("transformers")

SMALL = small("gpt_neox", 3)


def test_the_converted_config_is_pythias():
    cfg = rc.real.build("gpt_neox", SMALL, seed=0).config
    assert (cfg.parallel, cfg.rotary, cfg.d_qk, cfg.norm, cfg.layernorm, cfg.causal) == (
        True,
        4,
        16,
        "layer",
        "pre",
        True,
    )
    assert cfg.bias and cfg.bias_maps is None and cfg.activation == "gelu"
    lean = rc.real.build("gpt_neox", {**SMALL, "attention_bias": False}, seed=0).config
    assert lean.bias_maps == ("mlp",)


def ln(Y, g, b, eps):
    mu = Y.mean(-1, keepdim=True)
    return (Y - mu) / torch.sqrt(((Y - mu) ** 2).mean(-1, keepdim=True) + eps) * g + b


def mlp_by_hand(blk, Y, bias=True):
    gelu = torch.nn.functional.gelu
    if not bias:
        return gelu(Y @ blk.W_1) @ blk.W_2
    return gelu(Y @ blk.W_1 + blk.b_1) @ blk.W_2 + blk.b_2


@torch.no_grad()
def test_the_variants_are_the_formulas_written_out():
    net, X = one_layer("gpt_neox", init="library")
    blk, cfg, eps = net.san.layers[0], net.config, net.config.ln_eps
    last = lambda san: san(X).last_hidden_state  # noqa: E731
    A = attention_by_hand(blk, cfg, X)
    assert torch.allclose(last(net.ablate("san", "clean")), A, atol=1e-12)
    assert torch.allclose(last(net.ablate("san+skip", "clean")), X + A, atol=1e-12)
    # a parallel layer without its skip and norms: a(x) + m(x), both reading x
    both = last(net.ablate("san+mlp", "clean"))
    assert torch.allclose(both, A + mlp_by_hand(blk, X), atol=1e-12)
    bare = last(net.ablate("san", "clean", bias=False))
    assert torch.allclose(bare, attention_by_hand(blk, cfg, X, bias=False), atol=1e-12)
    g1, b1, g2, b2 = blk.ln1_gain, blk.ln1_shift, blk.ln2_gain, blk.ln2_shift
    full = (
        X + attention_by_hand(blk, cfg, ln(X, g1, b1, eps)) + mlp_by_hand(blk, ln(X, g2, b2, eps))
    )
    want = ln(full, net.san.lnf_gain, net.san.lnf_shift, eps)
    assert torch.allclose(last(net.ablate("full")), want, atol=1e-12)
    post = ln(X + A + mlp_by_hand(blk, X), g1, b1, eps)  # post-LN on the same weights
    want = ln(post, net.san.lnf_gain, net.san.lnf_shift, eps)
    assert torch.allclose(last(net.ablate("full", placement="post")), want, atol=1e-12)
