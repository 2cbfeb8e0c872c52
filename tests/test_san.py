import math

import pytest
import torch

import rankcollapse as rc
from conftest import random_tokens


def small(**kw):
    base = dict(n_layers=3, n_heads=2, d_model=8)
    base.update(kw)
    return rc.san.SANConfig(**base)


def test_output_shapes(gen):
    cfg = small(n_layers=4, n_heads=3, d_model=12, mlp=16, skip=True, layernorm="post")
    out = rc.san.SAN(cfg, seed=0)(random_tokens(gen, 2, 5, 12))
    assert len(out.hidden_states) == 5 and len(out.attentions) == 4
    assert all(h.shape == (2, 5, 12) for h in out.hidden_states)
    assert all(P.shape == (2, 3, 5, 5) for P in out.attentions)


def test_attention_is_row_stochastic(gen):
    out = rc.san.SAN(small(), seed=0)(random_tokens(gen, 6, 8))
    for P in out.attentions:
        assert (P > 0).all()
        assert torch.allclose(P.sum(-1), torch.ones_like(P.sum(-1)))


def test_same_seed_same_network_and_batched_equals_single(gen):
    X = random_tokens(gen, 3, 5, 8)
    cfg = small(skip=True, layernorm="pre", bias=True, mlp=4)
    a, b = rc.san.SAN(cfg, seed=7), rc.san.SAN(cfg, seed=7)
    ya, yb = a(X).last_hidden_state, b(X).last_hidden_state
    assert torch.equal(ya, yb)
    assert not torch.equal(ya, rc.san.SAN(cfg, seed=8)(X).last_hidden_state)
    for i in range(3):
        assert torch.allclose(a(X[i]).last_hidden_state, ya[i], atol=1e-13)


def test_matches_plain_formula_single_layer(gen):
    """SA(X) = sum_h P_h X W_V,h W_O,h + 1 b^T, written out independently."""
    cfg = small(n_layers=1, n_heads=3, d_model=9, d_qk=4, bias=True)
    m = rc.san.SAN(cfg, seed=3)
    X = random_tokens(gen, 6, 9)
    blk = m.layers[0]
    total = torch.zeros(6, 9, dtype=torch.float64)
    for h in range(3):
        q = X @ blk.W_Q[h] + blk.b_Q[h]
        k = X @ blk.W_K[h] + blk.b_K[h]
        v = X @ blk.W_V[h] + blk.b_V[h]
        P = torch.softmax(q @ k.T / math.sqrt(4), dim=-1)
        total += P @ v @ blk.W_O[h]
    total += blk.b_O
    assert torch.allclose(m(X).last_hidden_state, total.detach(), atol=1e-13)


def test_layernorm_matches_torch(gen):
    Y = random_tokens(gen, 4, 6)
    g, s = random_tokens(gen, 6), random_tokens(gen, 6)
    ours, sigma = rc.san.layer_norm(Y, g, s)
    ref = torch.nn.functional.layer_norm(Y, (6,), g, s, eps=rc.san.LN_EPS)
    assert torch.allclose(ours, ref, atol=1e-12)
    assert sigma.shape == (4,)


def test_skip_and_layernorm_wiring(gen):
    X = random_tokens(gen, 5, 8)
    base = rc.san.SAN(small(n_layers=1), seed=1)
    skip = rc.san.SAN(small(n_layers=1, skip=True), seed=1)
    assert torch.allclose(skip(X).last_hidden_state, X + base(X).last_hidden_state)
    post = rc.san.SAN(small(n_layers=1, skip=True, layernorm="post"), seed=1)
    ln = torch.nn.functional.layer_norm(X + base(X).last_hidden_state, (8,), eps=rc.san.LN_EPS)
    assert torch.allclose(post(X).last_hidden_state, ln, atol=1e-12)


def test_shared_weights():
    m = rc.san.SAN(small(n_layers=4, shared=True), seed=0)
    assert all(layer is m.layers[0] for layer in m.layers)
    assert sum(p.numel() for p in m.parameters()) == sum(p.numel() for p in m.layers[0].parameters())


def test_float32(gen):
    m = rc.san.SAN(small(dtype=torch.float32), seed=0)
    assert m(random_tokens(gen, 4, 8)).last_hidden_state.dtype == torch.float32
    assert small(dtype="float64").dtype == torch.float64


def test_scale_weights(gen):
    m = rc.san.SAN(small(), seed=0)
    w = m.layers[0].W_V.detach().clone()
    m.scale_weights(0.5)
    assert torch.allclose(m.layers[0].W_V, 0.5 * w)
    with pytest.raises(ValueError, match="mlp"):
        m.scale_weights(2.0, which="mlp")


@pytest.mark.parametrize(
    "kw, err, name",
    [
        (dict(n_layers=-1), ValueError, "n_layers"),
        (dict(n_heads=0), ValueError, "n_heads"),
        (dict(d_model=0), ValueError, "d_model"),
        (dict(d_model=2.5), TypeError, "d_model"),
        (dict(d_qk=0), ValueError, "d_qk"),
        (dict(mlp=-3), ValueError, "mlp"),
        (dict(layernorm="both"), ValueError, "layernorm"),
        (dict(activation="tanh"), ValueError, "activation"),
        (dict(skip=1), TypeError, "skip"),
        (dict(init_scale=-1.0), ValueError, "init_scale"),
        (dict(init_scale=float("nan")), ValueError, "init_scale"),
        (dict(dtype=torch.float16), ValueError, "dtype"),
        (dict(n_heads=True), TypeError, "n_heads"),
    ],
)
def test_config_validation(kw, err, name):
    with pytest.raises(err, match=name):
        small(**kw)


def test_forward_input_validation(gen):
    m = rc.san.SAN(small(), seed=0)
    with pytest.raises(ValueError, match="8 features"):
        m(random_tokens(gen, 5, 7))
    with pytest.raises(ValueError, match="shape"):
        m(random_tokens(gen, 8))
    with pytest.raises(ValueError, match="NaN"):
        m(torch.full((3, 8), float("nan")))
    with pytest.raises(TypeError, match="X"):
        m("tokens")
    with pytest.raises(TypeError, match="config"):
        rc.san.SAN({"n_layers": 2}, seed=0)
    with pytest.raises(ValueError, match="seed"):
        rc.san.SAN(small(), seed=-1)
