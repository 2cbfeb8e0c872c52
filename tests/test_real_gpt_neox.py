"""rc.real.convert.gpt_neox: a GPT-NeoX decoder (Pythia's: attention and MLP in parallel, rotary
positions on a quarter of each head, LayerNorm, biases, causal mask) converted into the core's
SAN equals transformers' GPTNeoXModel at random initialisation, every layer, float64 within
1e-10; and the paper's variants applied to it do what their names say."""

import math

import pytest
import torch

import rankcollapse as rc

transformers = pytest.importorskip("transformers")

SMALL = dict(
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_hidden_layers=3,
    vocab_size=100,
)
TOL = 1e-10


def rope(theta=10000.0, partial=0.25):
    return {"rope_type": "default", "rope_theta": theta, "partial_rotary_factor": partial}


@pytest.mark.parametrize(
    "changes",
    [
        dict(),
        dict(use_parallel_residual=False),
        dict(rope_parameters=rope(500.0, 1.0)),
        dict(attention_bias=False),
    ],
    ids=["parallel", "sequential", "full-rotary", "no-attention-bias"],
)
def test_every_layer_matches_transformers(changes):
    errors = rc.real.parity("gpt_neox", {**SMALL, **changes}, seed=0, n_tokens=11)
    assert len(errors) == 4 and max(errors) < TOL, errors


def test_a_padded_batch_and_twice_the_depth_match_transformers():
    assert max(rc.real.parity("gpt_neox", SMALL, seed=1, padded=True)) < TOL
    errors = rc.real.parity("gpt_neox", SMALL, seed=2, depth_factor=2)
    assert len(errors) == 7 and max(errors) < TOL, errors


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


def rotated(x, r, theta):
    n, half = x.shape[-2], r // 2
    w = theta ** (-2 * torch.arange(half, dtype=torch.float64) / r)
    z = torch.complex(x[..., :half], x[..., half:r]) * torch.exp(
        1j * torch.arange(n, dtype=torch.float64)[:, None] * w
    )
    return torch.cat([z.real, z.imag, x[..., r:]], dim=-1)


def attention_by_hand(blk, cfg, Z, bias=True):
    """sum_h P_h (Z W_V,h + b_V,h) W_O,h + b_O, partial rotary, causal."""
    n = Z.shape[0]
    out = torch.zeros_like(Z) + (blk.b_O if bias else 0)
    for h in range(cfg.n_heads):
        b = (lambda t: t[h]) if bias else (lambda t: 0)  # noqa: E731
        q = rotated(Z @ blk.W_Q[h] + b(blk.b_Q), cfg.rotary, cfg.rope_theta)
        k = rotated(Z @ blk.W_K[h] + b(blk.b_K), cfg.rotary, cfg.rope_theta)
        s = (q @ k.T / math.sqrt(cfg.d_qk)).masked_fill(~torch.ones(n, n).tril().bool(), -math.inf)
        out += torch.softmax(s, -1) @ (Z @ blk.W_V[h] + b(blk.b_V)) @ blk.W_O[h]
    return out


def mlp_by_hand(blk, Y, bias=True):
    gelu = torch.nn.functional.gelu
    if not bias:
        return gelu(Y @ blk.W_1) @ blk.W_2
    return gelu(Y @ blk.W_1 + blk.b_1) @ blk.W_2 + blk.b_2


@pytest.fixture(scope="module")
def one_layer():
    net = rc.real.build("gpt_neox", {**SMALL, "num_hidden_layers": 1}, seed=3, init="library")
    X = net.embed(torch.randint(0, 100, (10,), generator=torch.Generator().manual_seed(4)))
    return net, X


@torch.no_grad()
def test_the_variants_are_the_formulas_written_out(one_layer):
    net, X = one_layer
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
