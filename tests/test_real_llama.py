"""rc.real.convert.llama: a Llama-style decoder (RMSNorm, rotary positions, grouped-query
attention, SiLU-gated MLP, causal mask) converted into the core's SAN is configured as Llama is
and differs from transformers' float64 forward by float32 rounding when computing exactly; the
paper's variants applied to it do what their names say (checked against the formulas written
out). Its parity with transformers' forward (every layer, float64, 1e-10) is
tests/test_real_families.py's, for every family."""

import math

import pytest
import torch
from real_by_hand import attention_by_hand, one_layer, small

import rankcollapse as rc

transformers = pytest.importorskip("transformers")

SMALL = small("llama", 3)  # width 64, 4 query heads sharing 2 key/value heads, 3 layers


def test_the_converted_config_is_llamas():
    hf = rc.real.transformers_model("llama", {**SMALL, "attention_bias": True}, seed=0)
    cfg = rc.real.from_transformers(hf, "llama", "t").config
    assert (cfg.n_heads, cfg.kv_heads, cfg.d_qk, cfg.rotary, cfg.rope_theta) == (
        4,
        2,
        16,
        16,
        100000.0,
    )
    assert (cfg.norm, cfg.layernorm, cfg.gated, cfg.activation, cfg.causal) == (
        "rms",
        "pre",
        True,
        "silu",
        True,
    )
    assert cfg.final_layernorm and cfg.bias_maps == ("q", "k", "v", "o")
    with pytest.raises(ValueError, match="rotary"):
        rope = {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0}
        bad = rc.real.transformers_model("llama", {**SMALL, "rope_parameters": rope}, seed=0)
        rc.real.from_transformers(bad, "llama", "t")


def test_the_exact_network_differs_from_transformers_by_float32_rounding_only():
    """as_transformers=False (build's default) computes RMSNorm, softmax and rotary positions in
    float64: within float32's rounding of transformers' float64 model, not bit-equal."""
    hf = rc.real.transformers_model("llama", SMALL, seed=0).double()
    ids = torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = torch.stack(hf(ids, output_hidden_states=True).hidden_states)
        net = rc.real.from_transformers(hf, "llama", "t", as_transformers=False)
        got = torch.stack(net.san(net.embed(ids)).hidden_states)
    err = max(rc.real.parity_errors(got, want))
    assert 1e-12 < err < 1e-5


def rms(Y, g, eps):
    return Y / torch.sqrt((Y**2).mean(-1, keepdim=True) + eps) * g


def mlp_by_hand(blk, Y):
    return (torch.nn.functional.silu(Y @ blk.W_gate) * (Y @ blk.W_1)) @ blk.W_2


@pytest.fixture(scope="module")
def layer_with_gains():
    net, X = one_layer("llama")
    with torch.no_grad():  # gains off 1, so that the norms' weights matter
        gen = torch.Generator().manual_seed(5)
        for p in (net.san.layers[0].ln1_gain, net.san.layers[0].ln2_gain, net.san.lnf_gain):
            p.add_(0.2 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return net, X


@torch.no_grad()
def test_the_variants_are_the_formulas_written_out(layer_with_gains):
    net, X = layer_with_gains
    blk, cfg, eps = net.san.layers[0], net.config, net.config.ln_eps
    A = attention_by_hand(blk, cfg, X)
    last = lambda san: san(X).last_hidden_state  # noqa: E731
    assert torch.allclose(last(net.ablate("san", "clean")), A, atol=1e-12)
    assert torch.allclose(last(net.ablate("san+skip", "clean")), X + A, atol=1e-12)
    assert torch.allclose(last(net.ablate("san+mlp", "clean")), mlp_by_hand(blk, A), atol=1e-12)
    Y = X + attention_by_hand(blk, cfg, rms(X, blk.ln1_gain, eps))
    full = Y + mlp_by_hand(blk, rms(Y, blk.ln2_gain, eps))
    assert torch.allclose(last(net.ablate("full")), rms(full, net.san.lnf_gain, eps), atol=1e-12)
    # the paper's surgery keeps the norms: a(N_1 x), then the final norm
    paper = rms(attention_by_hand(blk, cfg, rms(X, blk.ln1_gain, eps)), net.san.lnf_gain, eps)
    assert torch.allclose(last(net.ablate("san", "paper")), paper, atol=1e-12)


@torch.no_grad()
def test_post_norm_on_the_same_weights_and_the_mask_switch(layer_with_gains):
    net, X = layer_with_gains
    blk, cfg, eps = net.san.layers[0], net.config, net.config.ln_eps
    post = net.ablate("full", placement="post")
    assert post.layers[0].W_Q is blk.W_Q  # the same weights
    Y = rms(X + attention_by_hand(blk, cfg, X), blk.ln1_gain, eps)
    out = rms(Y + mlp_by_hand(blk, Y), blk.ln2_gain, eps)
    assert torch.allclose(post(X).last_hidden_state, rms(out, net.san.lnf_gain, eps), atol=1e-12)
    P = net.ablate("san", "clean", mask=False)(X).attentions[0]
    assert (P[..., torch.ones(10, 10).triu(1).bool()] > 0).all()  # no causal mask
    with pytest.raises(ValueError, match="placement"):
        net.ablate("san", "clean", placement="post")


@torch.no_grad()
def test_depth_scaled_branches():
    net = rc.real.build("llama", SMALL, seed=0)
    X = net.embed(torch.randint(0, 100, (8,), generator=torch.Generator().manual_seed(1)))
    scaled = net.ablate("full", branch_scale="depth")
    s = 1 / math.sqrt(3)
    assert scaled.config.branch_scale == scaled.config.mlp_branch_scale == pytest.approx(s)
    H = scaled(X).hidden_states
    for l, blk in enumerate(net.san.layers[:2]):  # before the final norm
        Y = H[l] + s * blk.attention(blk.norm(H[l], "ln1")[0])[0]
        assert torch.allclose(H[l + 1], Y + s * blk.mlp(blk.norm(Y, "ln2")[0]), atol=1e-12)
