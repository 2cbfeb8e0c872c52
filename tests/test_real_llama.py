"""rc.real.convert.llama: a Llama-style decoder (RMSNorm, rotary positions, grouped-query
attention, SiLU-gated MLP, causal mask) converted into the core's SAN equals transformers'
LlamaModel at random initialisation, every layer, float64 within 1e-10; and the paper's variants
applied to it do what their names say (checked against the formulas written out)."""

import math

import pytest
import torch

import rankcollapse as rc

transformers = pytest.importorskip("transformers")

# width 64, 4 query heads sharing 2 key/value heads, 3 layers
SMALL = dict(
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_key_value_heads=2,
    num_hidden_layers=3,
    vocab_size=100,
)
TOL = 1e-10


@pytest.mark.parametrize(
    "changes",
    [
        dict(),
        dict(attention_bias=True, mlp_bias=True),
        dict(num_key_value_heads=1, head_dim=24),
        dict(rope_parameters={"rope_type": "default", "rope_theta": 500.0}),
    ],
    ids=["gqa", "biases", "mqa-head-dim", "theta"],
)
def test_every_layer_matches_transformers(changes):
    errors = rc.real.parity("llama", {**SMALL, **changes}, seed=0, n_tokens=11)
    assert len(errors) == 4 and max(errors) < TOL, errors


def test_a_padded_batch_and_twice_the_depth_match_transformers():
    assert max(rc.real.parity("llama", SMALL, seed=1, padded=True)) < TOL
    errors = rc.real.parity("llama", SMALL, seed=2, depth_factor=2)
    assert len(errors) == 7 and max(errors) < TOL, errors


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


def rotated(x, r, theta):
    """Rotary positions as complex multiplication (pairs k, k + r/2)."""
    n, half = x.shape[-2], r // 2
    w = theta ** (-2 * torch.arange(half, dtype=torch.float64) / r)
    z = torch.complex(x[..., :half], x[..., half:r]) * torch.exp(
        1j * torch.arange(n, dtype=torch.float64)[:, None] * w
    )
    return torch.cat([z.real, z.imag, x[..., r:]], dim=-1)


def attention_by_hand(blk, cfg, Z):
    """sum_h P_h Z W_V,g(h) W_O,h with grouped heads, rotary scores and the causal mask."""
    n, g = Z.shape[0], cfg.group
    out = torch.zeros_like(Z)
    for h in range(cfg.n_heads):
        q = rotated(Z @ blk.W_Q[h], cfg.rotary, cfg.rope_theta)
        k = rotated(Z @ blk.W_K[h // g], cfg.rotary, cfg.rope_theta)
        s = (q @ k.T / math.sqrt(cfg.d_qk)).masked_fill(~torch.ones(n, n).tril().bool(), -math.inf)
        out += torch.softmax(s, -1) @ (Z @ blk.W_V[h // g]) @ blk.W_O[h]
    return out


def mlp_by_hand(blk, Y):
    return (torch.nn.functional.silu(Y @ blk.W_gate) * (Y @ blk.W_1)) @ blk.W_2


@pytest.fixture(scope="module")
def one_layer():
    net = rc.real.build("llama", {**SMALL, "num_hidden_layers": 1}, seed=3)
    with torch.no_grad():  # gains off 1, so that the norms' weights matter
        gen = torch.Generator().manual_seed(5)
        for p in (net.san.layers[0].ln1_gain, net.san.layers[0].ln2_gain, net.san.lnf_gain):
            p.add_(0.2 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    X = net.embed(torch.randint(0, 100, (10,), generator=torch.Generator().manual_seed(4)))
    return net, X


@torch.no_grad()
def test_the_variants_are_the_formulas_written_out(one_layer):
    net, X = one_layer
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
def test_post_norm_on_the_same_weights_and_the_mask_switch(one_layer):
    net, X = one_layer
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
