import math

import pytest
import torch
from conftest import random_tokens

import rankcollapse as rc


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
    ours, sigma = rc.ops.layer_norm_sigma(Y, g, s)
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


def test_skip_strength_and_branch_scale_weight_the_residual_sum(gen):
    X = random_tokens(gen, 5, 8)
    base = rc.san.SAN(small(n_layers=1), seed=1)
    A = base(X).last_hidden_state
    m = rc.san.SAN(small(n_layers=1, skip=True, skip_strength=0.5, branch_scale=0.25), seed=1)
    assert torch.allclose(m(X).last_hidden_state, 0.5 * X + 0.25 * A, atol=1e-14)
    pure = rc.san.SAN(small(n_layers=1, branch_scale=3.0), seed=1)
    assert torch.allclose(pure(X).last_hidden_state, 3.0 * A, atol=1e-14)
    # the defaults are the usual skip, exactly; replace() shares the weights under a new config
    usual = rc.san.SAN(small(n_layers=2, skip=True), seed=1)
    same = usual.replace(skip_strength=1.0, branch_scale=1.0)
    assert torch.equal(same(X).last_hidden_state, usual(X).last_hidden_state)
    assert same.layers[0].W_Q is usual.layers[0].W_Q
    assert torch.allclose(
        usual.replace(branch_scale=0.0)(X).last_hidden_state, X, atol=0
    )  # X + 0 * SA(X)
    with pytest.raises(ValueError, match="W_Q"):
        usual.replace(n_heads=4)
    # the path decomposition and the value maps follow the weights
    for ln in ("none", "pre", "post"):
        cfg = small(n_layers=2, skip=True, layernorm=ln, bias=True, skip_strength=0.6)
        net = rc.san.SAN(cfg.replace(branch_scale=0.3), seed=2)
        terms, const = rc.paths.decompose_by_length(net, X, with_constant=True)
        y = net(X).last_hidden_state
        assert torch.allclose(terms.sum(0) + const, y, atol=1e-12)
    # a tuple of strengths: one network per entry of the first batch dimension
    sweep = usual.replace(skip_strength=(0.0, 0.5, 2.0))
    batch = X.expand(3, 5, 8)
    swept = sweep(batch).last_hidden_state
    for i, a in enumerate((0.0, 0.5, 2.0)):
        alone = usual.replace(skip_strength=a)(batch).last_hidden_state[i]
        assert torch.equal(swept[i], alone)
    with pytest.raises(ValueError, match="skip strengths"):
        sweep(X)
    terms = rc.paths.decompose_by_length(sweep, batch)
    assert torch.allclose(terms.sum(0), swept, atol=1e-12)
    scaled = usual.replace(branch_scale=0.5)
    assert torch.allclose(
        rc.theory.value_matrices(scaled), 0.5 * rc.theory.value_matrices(usual), atol=0
    )


def test_shared_weights():
    m = rc.san.SAN(small(n_layers=4, shared=True), seed=0)
    assert all(layer is m.layers[0] for layer in m.layers)
    assert sum(p.numel() for p in m.parameters()) == sum(
        p.numel() for p in m.layers[0].parameters()
    )


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
        (dict(skip=True, skip_strength=-0.5), ValueError, "skip_strength"),
        (dict(skip=True, skip_strength=float("inf")), ValueError, "skip_strength"),
        (dict(skip_strength=0.5), ValueError, "skip_strength"),
        (dict(branch_scale=-1), ValueError, "branch_scale"),
        (dict(branch_scale="1"), TypeError, "branch_scale"),
        (dict(skip=True, skip_strength=()), ValueError, "skip_strength"),
        (dict(skip=True, skip_strength=(1.0, -1.0)), ValueError, r"skip_strength\[1\]"),
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


# ------------------------------------------------------- options real transformers need


def test_sublayers_compose_to_the_forward_pass(gen):
    for ln in rc.san.LAYERNORMS:
        m = rc.san.SAN(small(mlp=6, skip=True, layernorm=ln, bias=True), seed=2)
        X = random_tokens(gen, 5, 8)
        block = m.layers[0]
        Y, P, sigma = block.attention_sublayer(X)
        out, P2, _ = block(X)
        assert torch.equal(block.mlp_sublayer(Y), out) and torch.equal(P, P2)


def test_key_mask_hides_padding_and_matches_the_unpadded_sequence(gen):
    cfg = small(n_layers=2, mlp=6, skip=True, layernorm="post", bias=True)
    m = rc.san.SAN(cfg, seed=0)
    X = random_tokens(gen, 2, 7, 8)
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    out = m(X, key_mask=mask)
    alone = m(X[0, :5])
    assert torch.allclose(out.last_hidden_state[0, :5], alone.last_hidden_state, atol=1e-13)
    assert (out.attentions[0][0, :, :5, 5:] == 0).all()  # no real token attends to padding
    assert torch.allclose(out.last_hidden_state[1], m(X[1]).last_hidden_state, atol=1e-13)
    with pytest.raises(ValueError, match=r"all padding\) at index \(1,\)"):
        m(X, key_mask=torch.tensor([[1] * 7, [0] * 7]))
    with pytest.raises(ValueError, match="key_mask must have shape"):
        m(X, key_mask=mask[:, :5])
    with pytest.raises(ValueError, match="0 and 1"):
        m(X, key_mask=2 * mask.long())


def test_causal_mask_is_lower_triangular_and_prefixes_are_unchanged(gen):
    m = rc.san.SAN(small(causal=True, skip=True, layernorm="pre", mlp=4), seed=0)
    X = random_tokens(gen, 6, 8)
    out = m(X)
    for P in out.attentions:
        assert (P.triu(1) == 0).all() and torch.allclose(
            P.sum(-1), torch.ones(2, 6, dtype=torch.float64)
        )
    assert torch.allclose(m(X[:4]).last_hidden_state, out.last_hidden_state[:4], atol=1e-13)


def test_window_mask_is_banded_and_a_window_of_n_is_full_attention(gen):
    X = random_tokens(gen, 2, 7, 8)
    full = rc.san.SAN(small(skip=True, mlp=4), seed=3)(X)
    for window in (7, 9):  # a window of n (or more) hides nothing: the same network, bit for bit
        wide = rc.san.SAN(small(skip=True, mlp=4, window=window), seed=3)(X)
        assert torch.equal(wide.last_hidden_state, full.last_hidden_state)
    i = torch.arange(7)
    for causal in (False, True):
        out = rc.san.SAN(small(window=3, causal=causal), seed=3)(X)
        band = (i[:, None] - i[None, :]).abs() < 3
        if causal:
            band = band & (i[:, None] >= i[None, :])
        for P in out.attentions:
            assert (P[..., ~band] == 0).all() and (P[..., band] > 0).all()
            assert torch.allclose(P.sum(-1), torch.ones_like(P.sum(-1)))
    # a window of 1: every token attends to itself only, so P = I and SA(X) = X W_V W_O
    one = rc.san.SAN(small(n_layers=1, n_heads=1, window=1), seed=3)
    b = one.layers[0]
    assert torch.allclose(one(X).last_hidden_state, X @ b.W_V[0] @ b.W_O[0], atol=1e-13)
    with pytest.raises(ValueError, match="window"):
        small(window=-1)
    with pytest.raises(TypeError, match="window"):
        small(window=2.5)


def test_causal_first_token_never_depends_on_later_tokens(gen):
    m = rc.san.SAN(small(n_layers=4, causal=True, layernorm="post", mlp=4), seed=2)
    X = random_tokens(gen, 6, 8)
    Y = X.clone()
    Y[1:] = Y[1:] * 3 + 1  # change every later token
    a, b = m(X), m(Y)
    for ha, hb in zip(a.hidden_states, b.hidden_states):
        assert torch.equal(ha[0], hb[0])


def test_layernorm_eps_activations_and_final_layernorm(gen):
    Y = random_tokens(gen, 4, 6)
    ours = rc.ops.layer_norm_sigma(
        Y, torch.ones(6, dtype=torch.float64), torch.zeros(6, dtype=torch.float64), 1e-12
    )[0]
    assert torch.allclose(ours, torch.nn.functional.layer_norm(Y, (6,), eps=1e-12), atol=1e-13)
    x = torch.linspace(-4, 4, 101, dtype=torch.float64)
    tanh_gelu = rc.san.activation("gelu_tanh")(x)
    assert torch.allclose(tanh_gelu, torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-15)
    assert not torch.allclose(tanh_gelu, rc.san.activation("gelu")(x), atol=1e-5)
    X = random_tokens(gen, 5, 8)
    plain = rc.san.SAN(small(layernorm="pre", skip=True, ln_eps=1e-6), seed=4)
    final = rc.san.SAN(small(layernorm="pre", skip=True, ln_eps=1e-6, final_layernorm=True), seed=4)
    want = torch.nn.functional.layer_norm(plain(X).last_hidden_state, (8,), eps=1e-6)
    assert torch.allclose(final(X).last_hidden_state, want, atol=1e-13)
    assert torch.equal(final(X).hidden_states[1], plain(X).hidden_states[1])


def test_mlp_skip_alone(gen):
    X = random_tokens(gen, 5, 8)
    m = rc.san.SAN(small(n_layers=1, mlp=6, mlp_skip=True), seed=1)
    block = m.layers[0]
    A, _ = block.attention(X)
    assert torch.allclose(m(X).last_hidden_state, A + block.mlp(A), atol=1e-13)
    assert (
        small(mlp_skip=None, skip=True).skip_mlp and not small(mlp_skip=False, skip=True).skip_mlp
    )
    with pytest.raises(TypeError, match="mlp_skip"):
        small(mlp_skip="yes")


def test_relative_attention_matches_the_formula_written_out(gen):
    """XLNet's scores: (q_i + u) k_j + (q_i + v) W_R r(i - j) + (q_i + s) e[seg_i != seg_j], over
    sqrt(d_qk)."""
    cfg = small(n_layers=1, n_heads=2, d_model=6, attention="relative")
    m = rc.san.SAN(cfg, seed=5)
    b = m.layers[0]
    X = random_tokens(gen, 4, 6)
    seg = torch.tensor([0, 0, 1, 1])
    n = 4
    r = rc.san.relative_positions(n, 6)
    for segments in (None, seg):
        P = m(X, segments=segments).attentions[0]
        for h in range(2):
            q, k = X @ b.W_Q[h], X @ b.W_K[h]
            S = torch.zeros(n, n, dtype=torch.float64)
            for i in range(n):
                for j in range(n):
                    rel = r[n - (i - j)] @ b.W_R[h]  # row p embeds the offset n - p = i - j
                    S[i, j] = (q[i] + b.r_w_bias[h]) @ k[j] + (q[i] + b.r_r_bias[h]) @ rel
                    if segments is not None:
                        S[i, j] += (q[i] + b.r_s_bias[h]) @ b.seg_embed[int(seg[i] != seg[j]), h]
            assert torch.allclose(
                P[h], torch.softmax(S / math.sqrt(3), dim=-1).detach(), atol=1e-13
            )
    pos = rc.san.relative_positions(3, 4)
    assert pos.shape == (6, 4) and torch.allclose(
        pos[3], torch.tensor([0.0, 0.0, 1.0, 1.0], dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="attention"):
        small(attention="xlnet")


def test_from_weights_round_trip_sharing_and_errors(gen):
    cfg = small(mlp=4, skip=True, layernorm="post", bias=True)
    a = rc.san.SAN(cfg, seed=3)
    layers = [blk.weights() for blk in a.layers]
    b = rc.san.SAN.from_weights(cfg, layers)
    X = random_tokens(gen, 5, 8)
    assert torch.equal(a(X).last_hidden_state, b(X).last_hidden_state)
    assert b.layers[1].W_Q is a.layers[1].W_Q  # parameters are shared, not copied
    copied = rc.san.SAN.from_weights(
        cfg, [{k: v.detach().clone() for k, v in w.items()} for w in layers]
    )
    assert copied.layers[0].W_Q is not a.layers[0].W_Q and torch.equal(
        copied(X).last_hidden_state, b(X).last_hidden_state
    )
    shared = rc.san.SAN.from_weights(cfg.replace(shared=True), layers[:1])
    assert all(layer is shared.layers[0] for layer in shared.layers)
    with pytest.raises(ValueError, match="3 mapping"):
        rc.san.SAN.from_weights(cfg, layers[:2])
    with pytest.raises(ValueError, match=r"missing \['W_Q'\]"):
        rc.san.SAN.from_weights(cfg, [{k: v for k, v in w.items() if k != "W_Q"} for w in layers])
    with pytest.raises(ValueError, match=r"layers\[0\]\['W_K'\] must have shape \(2, 8, 4\)"):
        rc.san.SAN.from_weights(cfg, [dict(w, W_K=torch.zeros(2, 8, 3)) for w in layers])
    with pytest.raises(ValueError, match="final"):
        rc.san.SAN.from_weights(cfg.replace(final_layernorm=True), layers)
    with pytest.raises(TypeError, match="config"):
        rc.san.SAN.from_weights({"n_layers": 3}, layers)


def test_path_decomposition_refuses_a_final_layernorm(gen):
    m = rc.san.SAN(small(skip=True, layernorm="pre", final_layernorm=True), seed=0)
    with pytest.raises(ValueError, match="final_layernorm"):
        rc.paths.decompose_by_length(m, random_tokens(gen, 4, 8))


def test_from_weights_takes_numpy_arrays_as_their_float64_values():
    """A chapter's hand-made weights may be NumPy arrays (the collapse chapter's worked case)."""
    import numpy as np

    cfg = rc.san.SANConfig(n_layers=1, n_heads=1, d_model=1, d_qk=1, d_v=1)
    one = np.ones((1, 1, 1))
    from_np = rc.san.SAN.from_weights(cfg, [dict(W_Q=one, W_K=2 * one, W_V=one, W_O=one)])
    t = torch.ones(1, 1, 1, dtype=torch.float64)
    from_t = rc.san.SAN.from_weights(cfg, [dict(W_Q=t, W_K=2 * t, W_V=t, W_O=t)])
    X = np.array([[0.1], [-0.1]])
    assert torch.equal(from_np(X).last_hidden_state, from_t(X).last_hidden_state)
    with pytest.raises(TypeError, match="must be a tensor"):
        rc.san.SAN.from_weights(cfg, [dict(W_Q=[[[1.0]]], W_K=t, W_V=t, W_O=t)])
