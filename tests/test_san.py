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


# ----------------------------------------------- today's decoders: norms, rotary, GQA, gating


def decoder(**kw):
    base = dict(
        n_layers=1,
        n_heads=4,
        n_kv_heads=2,
        d_model=16,
        d_qk=6,
        d_v=5,
        mlp=12,
        gated=True,
        activation="silu",
        norm="rms",
        layernorm="pre",
        rotary=6,
        skip=True,
        causal=True,
        final_layernorm=True,
    )
    base.update(kw)
    return rc.san.SANConfig(**base)


def by_hand_rotary(x, rotary, theta=10000.0):
    """Rotary positions as complex multiplication: dimension k < r/2 and k + r/2 form the complex
    number x_k + i x_{k+r/2}, turned by the angle pos * theta^(-2k/r) (Su et al. 2021)."""
    n, half = x.shape[-2], rotary // 2
    w = theta ** (-2 * torch.arange(half, dtype=torch.float64) / rotary)
    z = torch.complex(x[..., :half], x[..., half:rotary]) * torch.exp(
        1j * torch.arange(n, dtype=torch.float64)[:, None] * w
    )
    return torch.cat([z.real, z.imag, x[..., rotary:]], dim=-1)


def by_hand_layer(blk, cfg, X):
    """One pre-RMSNorm decoder layer written out head by head (grouped heads, rotary, causal
    softmax, gated MLP), independent of the core's einsums."""
    rms = lambda Y, g: Y / torch.sqrt((Y**2).mean(-1, keepdim=True) + cfg.ln_eps) * g  # noqa: E731
    n, g = X.shape[0], cfg.n_heads // cfg.kv_heads
    Z = rms(X, blk.ln1_gain)
    A = torch.zeros_like(X)
    for h in range(cfg.n_heads):
        q = by_hand_rotary(Z @ blk.W_Q[h], cfg.rotary, cfg.rope_theta)
        k = by_hand_rotary(Z @ blk.W_K[h // g], cfg.rotary, cfg.rope_theta)
        s = (q @ k.T / math.sqrt(cfg.d_qk)).masked_fill(~torch.ones(n, n).tril().bool(), -math.inf)
        A += torch.softmax(s, -1) @ (Z @ blk.W_V[h // g]) @ blk.W_O[h]
    Y = X + A
    Z2 = rms(Y, blk.ln2_gain)
    return Y + (torch.nn.functional.silu(Z2 @ blk.W_gate) * (Z2 @ blk.W_1)) @ blk.W_2


def test_a_decoder_layer_is_the_formula_written_out(gen):
    cfg = decoder()
    m = rc.san.SAN(cfg, seed=2)
    blk = m.layers[0]
    with torch.no_grad():  # gains not all 1, so the norms' weights are tested
        blk.ln1_gain.uniform_(0.5, 1.5, generator=gen)
        blk.ln2_gain.uniform_(0.5, 1.5, generator=gen)
        m.lnf_gain.uniform_(0.5, 1.5, generator=gen)
    X = random_tokens(gen, 7, 16)
    with torch.no_grad():
        layer = by_hand_layer(blk, cfg, X)
        out = m(X)
    final = layer / torch.sqrt((layer**2).mean(-1, keepdim=True) + cfg.ln_eps) * m.lnf_gain
    assert torch.allclose(out.last_hidden_state, final, atol=1e-12)
    assert torch.allclose(m.layers[0](X)[0], layer, atol=1e-12)
    assert (out.attentions[0].triu(1) == 0).all()  # causal


def test_rotary_scores_depend_on_the_offset_alone_and_partial_rotary_passes_the_rest(gen):
    x = random_tokens(gen, 1, 8)
    cos, sin = rc.ops.rotary_tables(5, 4, 100.0)
    same = rc.ops.rotate(x.expand(5, 8), cos, sin)  # one vector at positions 0..4
    G = same[:, :4] @ same[:, :4].T  # the rotated part's scores: a Toeplitz matrix
    for off in range(1, 5):
        assert torch.allclose(G.diagonal(off), G[0, off].expand(5 - off), atol=1e-12)
    assert torch.equal(same[:, 4:], x.expand(5, 8)[:, 4:])  # partial: dimensions 4.. pass
    assert torch.allclose(same, by_hand_rotary(x.expand(5, 8), 4, 100.0), atol=1e-14)


def test_grouped_heads_equal_full_heads_with_repeated_keys_and_values(gen):
    cfg = decoder(n_layers=2, bias=True)
    m = rc.san.SAN(cfg, seed=0)
    wide = cfg.replace(n_kv_heads=None)
    layers = []
    for blk in m.layers:
        w = dict(blk.weights())
        for name in ("W_K", "W_V", "b_K", "b_V"):
            w[name] = w[name].repeat_interleave(2, 0)
        layers.append(w)
    full = rc.san.SAN.from_weights(wide, layers, m.final_norm_weights())
    X = random_tokens(gen, 3, 9, 16)
    assert torch.allclose(m(X).last_hidden_state, full(X).last_hidden_state, atol=1e-13)
    assert m.layers[0].W_K.shape == (2, 16, 6) and m.layers[0].head_weights()["W_K"].shape == (
        4,
        16,
        6,
    )
    assert rc.ops.weight_count(cfg) < rc.ops.weight_count(wide)


def test_parallel_layer_reads_the_input_twice_and_sums_once(gen):
    cfg = decoder(parallel=True, norm="layer", gated=False, activation="gelu", rotary=2)
    m = rc.san.SAN(cfg, seed=4)
    blk, X = m.layers[0], random_tokens(gen, 6, 16)
    with torch.no_grad():
        A = blk.attention(blk.norm(X, "ln1")[0])[0]
        M = blk.mlp(blk.norm(X, "ln2")[0])
        assert torch.allclose(blk(X)[0], X + A + M, atol=1e-13)
        bare = {k: v for k, v in blk.weights().items() if not k.startswith("ln")}
        lean = cfg.replace(skip=False, layernorm="none", final_layernorm=False)
        lean = rc.san.SAN.from_weights(lean, [bare]).layers[0]
        assert torch.allclose(lean(X)[0], lean.attention(X)[0] + lean.mlp(X), atol=1e-13)
        post = m.replace(layernorm="post").layers[0]
        want = rc.ops.layer_norm_sigma(
            X + post.attention(X)[0] + post.mlp(X), blk.ln1_gain, blk.ln1_shift, cfg.ln_eps
        )[0]
        assert torch.allclose(post(X)[0], want, atol=1e-13)


def test_both_branches_scale_and_biases_are_per_map(gen):
    cfg = decoder(gated=False, activation="relu", norm="layer", bias=True, bias_maps=("q", "v"))
    m = rc.san.SAN(cfg, seed=1)
    blk = m.layers[0]
    assert blk.b_Q is not None and blk.b_V is not None
    assert blk.b_K is None and blk.b_O is None and blk.b_1 is None and blk.b_2 is None
    assert rc.ops.weight_count(cfg) == sum(p.numel() for p in m.parameters())
    X = random_tokens(gen, 5, 16)
    s = 0.3
    scaled = m.replace(branch_scale=s, mlp_branch_scale=s).layers[0]
    with torch.no_grad():
        Y = X + s * blk.attention(blk.norm(X, "ln1")[0])[0]
        want = Y + s * blk.mlp(blk.norm(Y, "ln2")[0])
        assert torch.allclose(scaled(X)[0], want, atol=1e-13)


def test_rms_norm_and_its_float32_statistics(gen):
    Y, g = random_tokens(gen, 4, 6) * 3, random_tokens(gen, 6)
    out, sigma = rc.ops.rms_norm_sigma(Y, g, 1e-6)
    assert torch.allclose(sigma, torch.sqrt((Y**2).mean(-1) + 1e-6), atol=1e-14)
    assert torch.allclose(out, Y / sigma[:, None] * g, atol=1e-14)
    low = rc.ops.rms_norm_sigma(Y, g, 1e-6, torch.float32)[0]
    assert low.dtype == torch.float64 and 1e-10 < (low - out).abs().max() < 1e-5


@pytest.mark.parametrize(
    "changes",
    [
        dict(),
        dict(n_kv_heads=1, bias=True),
        dict(norm="layer", gated=False, parallel=True, bias=True, bias_maps=("mlp",)),
        dict(shared=True, n_layers=3),
        dict(layernorm="post", final_layernorm=False),
    ],
)
def test_decoder_weight_count_and_from_weights_round_trip(gen, changes):
    cfg = decoder(n_layers=2).replace(**changes)
    m = rc.san.SAN(cfg, seed=0)
    assert rc.ops.weight_count(cfg) == sum(p.numel() for p in m.parameters())
    X = random_tokens(gen, 5, 16)
    again = m.replace()
    assert torch.equal(again(X).last_hidden_state, m(X).last_hidden_state)


@pytest.mark.parametrize(
    "kw, err, name",
    [
        (dict(rotary=5), ValueError, "rotary"),
        (dict(rotary=8), ValueError, "rotary"),
        (dict(n_kv_heads=3), ValueError, "n_kv_heads"),
        (dict(norm="batch"), ValueError, "norm"),
        (dict(norm="layer", norm_dtype=torch.float32), ValueError, "norm_dtype"),
        (dict(bias_maps="q"), TypeError, "bias_maps"),
        (dict(bias_maps=("q", "w")), ValueError, r"bias_maps\[1\]"),
        (dict(gated=1), TypeError, "gated"),
        (dict(mlp_branch_scale=-1.0), ValueError, "mlp_branch_scale"),
        (dict(rope_theta=0.0), ValueError, "rope_theta"),
    ],
)
def test_decoder_config_validation(kw, err, name):
    with pytest.raises(err, match=name):
        decoder(**kw)
