import math
import random

import pytest
import torch
from conftest import random_tokens

import rankcollapse as rc

# ------------------------------------------------------------------------------- counting


@pytest.mark.parametrize("L,H", [(0, 1), (1, 1), (3, 2), (6, 3), (12, 12), (24, 16), (96, 96)])
def test_counts_sum_to_total(L, H):
    counts = [rc.paths.path_count(L, H, l) for l in range(L + 1)]
    assert counts == [math.comb(L, l) * H**l for l in range(L + 1)]
    assert sum(counts) == (H + 1) ** L
    assert rc.paths.path_count(L, H, L + 1) == 0


def test_counts_without_skip():
    assert rc.paths.path_count(5, 3, 5, skip=False) == 3**5
    assert rc.paths.path_count(5, 3, 4, skip=False) == 0


@pytest.mark.parametrize("L,H", [(1, 1), (6, 3), (12, 12), (96, 96), (500, 64)])
def test_length_distribution(L, H):
    dist = rc.paths.length_distribution(L, H)
    assert dist.shape == (L + 1,) and dist.dtype == torch.float64
    assert torch.isfinite(dist).all()
    assert dist.sum().item() == pytest.approx(1.0, abs=1e-12)
    mean = (torch.arange(L + 1, dtype=torch.float64) * dist).sum().item()
    assert mean == pytest.approx(rc.paths.mean_path_length(L, H), rel=1e-10)


def test_all_paths_and_length():
    paths = rc.paths.all_paths(3, 2)
    assert len(paths) == 27 and len(set(paths)) == 27
    for l in range(4):
        assert sum(rc.paths.path_length(p) == l for p in paths) == rc.paths.path_count(3, 2, l)
    assert len(rc.paths.all_paths(3, 2, skip=False)) == 8


@pytest.mark.parametrize(
    "args, err",
    [
        ((-1, 2, 0), ValueError),
        ((3, 0, 1), ValueError),
        ((3, 2, -1), ValueError),
        ((3.0, 2, 1), TypeError),
    ],
)
def test_count_bad_input(args, err):
    with pytest.raises(err):
        rc.paths.path_count(*args)


# ------------------------------------------------------------------------------ identities


def random_config(rng: random.Random, dtype=torch.float64):
    return rc.san.SANConfig(
        n_layers=rng.randint(1, 4),
        n_heads=rng.randint(1, 3),
        d_model=rng.randint(2, 9),
        d_qk=rng.randint(1, 5),
        d_v=rng.randint(1, 5),
        skip=rng.random() < 0.5,
        layernorm=rng.choice(["none", "post", "pre"]),
        bias=rng.random() < 0.5,
        shared=rng.random() < 0.3,
        init_scale=rng.choice([0.5, 1.0, 3.0]),
        dtype=dtype,
    )


def perturb_layernorm(model, gen):
    """LayerNorm gain and shift away from (1, 0), so the identity is tested in general."""
    with torch.no_grad():
        for block in model.layers:
            if model.config.layernorm != "none":
                block.ln1_gain.add_(
                    0.5
                    * torch.randn(block.ln1_gain.shape, generator=gen, dtype=block.ln1_gain.dtype)
                )
                block.ln1_shift.add_(
                    0.5
                    * torch.randn(block.ln1_shift.shape, generator=gen, dtype=block.ln1_shift.dtype)
                )


@pytest.mark.parametrize("trial", range(40))
def test_decomposition_identities_on_random_networks(trial):
    rng = random.Random(trial)
    gen = torch.Generator().manual_seed(trial)
    cfg = random_config(rng)
    model = rc.san.SAN(cfg, seed=trial)
    perturb_layernorm(model, gen)
    batch = (rng.randint(1, 3),) if rng.random() < 0.5 else ()
    X = random_tokens(gen, *batch, rng.randint(1, 7), cfg.d_model)
    Y = model(X).last_hidden_state.detach()

    terms, c = rc.paths.decompose_by_length(model, X, with_constant=True)
    assert terms.shape == (cfg.n_layers + 1,) + X.shape
    scale = Y.norm()
    assert ((terms.sum(0) + c - Y).norm() / scale) < 1e-10

    paths, c2 = rc.paths.enumerate_paths(model, X, with_constant=True)
    assert len(paths) == (cfg.n_heads + cfg.skip) ** cfg.n_layers
    assert ((sum(paths.values()) + c2 - Y).norm() / scale) < 1e-10
    assert torch.allclose(c, c2, atol=1e-12)
    # enumeration grouped by length equals the dynamic programme, length by length
    for l in range(cfg.n_layers + 1):
        group = [t for p, t in paths.items() if rc.paths.path_length(p) == l]
        expected = sum(group) if group else torch.zeros_like(X)
        assert torch.allclose(terms[l], expected, atol=1e-10 * float(scale) + 1e-12)


def test_without_skip_only_full_length_paths(gen):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=3, n_heads=2, d_model=5), seed=0)
    terms = rc.paths.decompose_by_length(model, random_tokens(gen, 4, 5))
    assert (terms[:-1] == 0).all() and terms[-1].abs().sum() > 0


def test_path_term_is_product_formula(gen):
    """A single path's term equals P_L...P_1 X W_1...W_L (later layers on the left)."""
    cfg = rc.san.SANConfig(n_layers=3, n_heads=2, d_model=4, skip=True)
    model = rc.san.SAN(cfg, seed=5)
    X = random_tokens(gen, 5, 4)
    out = model(X)
    paths = rc.paths.enumerate_paths(model, X)
    for path in [(0, 1, 0), (None, 1, None), (1, None, 0), (None, None, None)]:
        P = torch.eye(5, dtype=X.dtype)
        W = torch.eye(4, dtype=X.dtype)
        for l, h in enumerate(path):
            if h is None:
                continue
            blk = model.layers[l]
            P = out.attentions[l][h] @ P
            W = W @ (blk.W_V[h] @ blk.W_O[h]).detach()
        assert torch.allclose(paths[path], P @ X @ W, atol=1e-12)


def test_length_zero_term_is_input(gen):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=4, n_heads=2, d_model=6, skip=True), seed=0)
    X = random_tokens(gen, 5, 6)
    assert torch.equal(rc.paths.decompose_by_length(model, X)[0], X)


def test_constant_is_required_when_present(gen):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4, bias=True), seed=0)
    X = random_tokens(gen, 3, 4)
    with pytest.raises(ValueError, match="with_constant"):
        rc.paths.decompose_by_length(model, X)
    with pytest.raises(ValueError, match="with_constant"):
        rc.paths.enumerate_paths(model, X)


def test_constant_without_layernorm_is_rank_one(gen):
    # Theorem 2.1's 1 b^T: without LayerNorm the constant is the same row for every token
    model = rc.san.SAN(
        rc.san.SANConfig(n_layers=3, n_heads=2, d_model=4, bias=True, skip=True), seed=0
    )
    _, c = rc.paths.decompose_by_length(model, random_tokens(gen, 6, 4), with_constant=True)
    assert torch.allclose(c, c[:1].expand_as(c), atol=1e-14)


def test_refuses_mlp_and_bad_input(gen):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4, mlp=8), seed=0)
    with pytest.raises(ValueError, match="MLP"):
        rc.paths.decompose_by_length(model, random_tokens(gen, 3, 4))
    with pytest.raises(TypeError, match="model"):
        rc.paths.enumerate_paths("not a model", random_tokens(gen, 3, 4))
    ok = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4), seed=0)
    with pytest.raises(ValueError, match="features"):
        rc.paths.decompose_by_length(ok, random_tokens(gen, 3, 5))
    big = rc.san.SAN(rc.san.SANConfig(n_layers=12, n_heads=12, d_model=4, skip=True), seed=0)
    with pytest.raises(ValueError, match="max_paths"):
        rc.paths.enumerate_paths(big, random_tokens(gen, 3, 4))


def test_float32_identity(gen):
    cfg = rc.san.SANConfig(n_layers=3, n_heads=3, d_model=16, skip=True, dtype=torch.float32)
    model = rc.san.SAN(cfg, seed=0)
    err = rc.paths.decomposition_error(model, random_tokens(gen, 8, 16, dtype=torch.float32))
    assert max(err.values()) < 1e-5


def test_length_profile_at_init(gen):
    """At initialisation the length-0 term keeps its residual and the longest has lost most of
    it."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=6, n_heads=4, d_model=32, skip=True), seed=0)
    prof = rc.paths.length_profile(model, random_tokens(gen, 2, 16, 32))
    rr = prof["relative_residual"]
    assert rr.shape == (7, 2)
    assert (rr[0] > 0.5).all() and (rr[-1] < rr[0] / 10).all()
    assert (rr[1:] < rr[:-1]).all()  # monotone at this scale


def test_sample_paths_are_uniform_paths_of_the_length():
    gen = torch.Generator().manual_seed(0)
    drawn = rc.paths.sample_paths(5, 3, 2, 600, generator=gen)
    assert all(len(p) == 5 and rc.paths.path_length(p) == 2 for p in drawn)
    assert set(drawn) <= set(rc.paths.all_paths(5, 3))
    # every one of the C(5,2) 3^2 = 90 paths of length 2 turns up, none far too often
    counts = {p: drawn.count(p) for p in set(drawn)}
    assert len(counts) == 90 and max(counts.values()) < 25
    assert rc.paths.sample_paths(4, 2, 0, 3, generator=gen) == [(None,) * 4] * 3
    again = rc.paths.sample_paths(5, 3, 2, 600, generator=torch.Generator().manual_seed(0))
    assert again == drawn
    with pytest.raises(ValueError, match="length"):
        rc.paths.sample_paths(3, 2, 4, 1, generator=gen)
    with pytest.raises(TypeError, match="generator"):
        rc.paths.sample_paths(3, 2, 1, 1, generator=0)


def test_sample_paths_draws_what_it_drew_before_its_cap():
    """The cap on count (rc.paths.counting.check_draws) is checked before drawing: the draws are
    unchanged."""
    drawn = rc.paths.sample_paths(5, 3, 2, 4, generator=torch.Generator().manual_seed(0))
    assert drawn == [
        (0, None, None, None, 1),
        (None, None, 2, None, 2),
        (None, 0, None, None, 0),
        (None, None, 2, None, 2),
    ]
    assert (
        len(rc.paths.sample_paths(2, 2, 1, rc.paths.MAX_PATHS, generator=torch.Generator()))
        == rc.paths.MAX_PATHS
    )
    with pytest.raises(ValueError, match="count"):
        rc.paths.sample_paths(2, 2, 1, rc.paths.MAX_PATHS + 1, generator=torch.Generator())


def test_path_norms_are_the_enumerated_terms_norms(gen):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=3, n_heads=2, d_model=8, skip=True), seed=1)
    X = random_tokens(gen, 2, 5, 8)
    terms = rc.paths.enumerate_paths(model, X)
    paths = [(None, 0, 1), (1, 1, 1), (None, None, None), (0, None, None)]
    norms = rc.paths.path_norms(model, X, paths)
    assert norms.shape == (4, 2)
    for p, n in zip(paths, norms):
        torch.testing.assert_close(n, torch.linalg.matrix_norm(terms[p]))
    l1inf = rc.paths.path_norms(model, X, paths[:1], norm="l1inf")[0]
    torch.testing.assert_close(l1inf, rc.residual.composite_norm(terms[paths[0]]))
    with pytest.raises(ValueError, match="one entry per layer"):
        rc.paths.path_norms(model, X, [(0, 1)])
    with pytest.raises(ValueError, match="head this model lacks"):
        rc.paths.path_norms(model, X, [(0, 2, None)])
    with pytest.raises(ValueError, match="at least one path"):
        rc.paths.path_norms(model, X, [])


def test_length_gram_adds_up_to_the_output(gen):
    """<T_l, T_m> summed over l and m is ||Y||_F^2; the diagonal is each length's own; the profile
    carries the same matrix."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=4, n_heads=3, d_model=16, skip=True), seed=2)
    X = random_tokens(gen, 3, 6, 16)
    G = rc.paths.length_gram(model, X)
    assert G.shape == (3, 5, 5)
    torch.testing.assert_close(G, G.transpose(-1, -2))
    Y = model(X).last_hidden_state.detach()
    torch.testing.assert_close(G.sum((-1, -2)), Y.pow(2).sum((-1, -2)))
    T = rc.paths.decompose_by_length(model, X)
    torch.testing.assert_close(torch.diagonal(G, dim1=-2, dim2=-1).T, T.pow(2).sum((-1, -2)))
    torch.testing.assert_close(rc.paths.length_profile(model, X)["gram"], G)


# ------------------------------------------------- guards and defined results (issue 11)


def test_enumeration_is_refused_by_the_memory_it_would_hold(gen):
    """729 paths is few, but of (512, 768) float64 terms they would hold 2.1 GiB: refused at
    once."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=6, n_heads=3, d_model=768), seed=0)
    X = torch.zeros(512, 768, dtype=torch.float64)
    with pytest.raises(ValueError, match="decompose_by_length") as err:
        rc.paths.enumerate_paths(model, X)
    assert "max_bytes" in str(err.value) and "GiB" in str(err.value)
    small = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4), seed=0)
    X4 = random_tokens(gen, 3, 4)
    with pytest.raises(ValueError, match="max_bytes=100"):
        rc.paths.enumerate_paths(small, X4, max_bytes=100)  # 4 paths x 96 bytes
    assert len(rc.paths.enumerate_paths(small, X4, max_bytes=4 * 96)) == 4


def test_decomposition_error_uses_the_dynamic_programme_by_default(gen):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=6, n_heads=3, d_model=768, skip=True), seed=0)
    X = random_tokens(gen, 64, 768)  # 4096 paths of 384 KiB: 1.5 GiB to enumerate
    err = rc.paths.decomposition_error(model, X)
    assert set(err) == {"by_length"} and err["by_length"] < 1e-13
    with pytest.raises(ValueError, match="decompose_by_length"):
        rc.paths.decomposition_error(model, X, with_enumeration=True)
    small = rc.san.SAN(rc.san.SANConfig(n_layers=3, n_heads=2, d_model=4, skip=True), seed=0)
    both = rc.paths.decomposition_error(small, random_tokens(gen, 5, 4), with_enumeration=True)
    assert set(both) == {"by_length", "enumeration"} and max(both.values()) < 1e-13


def test_length_distribution_is_fast_and_exact(gen):
    import time

    for L, H in ((0, 1), (1, 3), (12, 12), (1000, 7)):
        exact = [math.comb(L, l) * H**l / (H + 1) ** L for l in range(L + 1)]
        assert rc.paths.length_distribution(L, H).tolist() == exact
    # past the exact range: the closed form agrees with the exact ratio to rounding
    L, H = 1001, 3
    got = rc.paths.length_distribution(L, H)
    for l in (0, 1, 500, 750, 900, 1001):
        want = math.comb(L, l) * H**l / (H + 1) ** L
        assert got[l].item() == pytest.approx(want, rel=1e-11, abs=1e-300)
    start = time.perf_counter()
    big = rc.paths.length_distribution(10**5, 2)
    assert time.perf_counter() - start < 2.0
    assert big.shape == (10**5 + 1,) and abs(big.sum().item() - 1) < 1e-9
    assert int(big.argmax()) == round(10**5 * 2 / 3)
    with pytest.raises(ValueError, match="L must be <="):
        rc.paths.length_distribution(10**9, 2)


def test_flags_and_degenerate_counts_are_refused():
    with pytest.raises(TypeError, match="skip must be True or False"):
        rc.paths.path_count(3, 2, 3, skip="no")
    with pytest.raises(TypeError, match="skip must be True or False"):
        rc.paths.all_paths(2, 2, skip="no")
    with pytest.raises(ValueError, match="H must be >= 1"):
        rc.paths.all_paths(2, 0)
    with pytest.raises(ValueError, match="max_paths"):
        rc.paths.all_paths(30, 12)
    assert rc.paths.all_paths(0, 3) == [()]
    with pytest.raises(TypeError, match="path"):
        rc.paths.path_length(3)


def test_zero_output_has_defined_shares_and_error(gen):
    """A network whose output is exactly zero: shares are 0 (0 / 0 = 0), the error absolute."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4, init_scale=0.0), seed=0)
    X = random_tokens(gen, 3, 4)
    prof = rc.paths.length_profile(model, X)
    for v in prof.values():
        assert torch.isfinite(v).all() and (v == 0).all()
    err = rc.paths.decomposition_error(model, X, with_enumeration=True)
    assert err == {"by_length": 0.0, "enumeration": 0.0}


def test_length_profile_names_bad_options_and_the_constant(gen):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4, skip=True), seed=0)
    X = random_tokens(gen, 3, 4)
    with pytest.raises(ValueError, match=r"norm must be one of \['fro', 'l1inf'\]"):
        rc.paths.length_profile(model, X, norm="l2")
    with pytest.raises(ValueError, match=r"center must be one of"):
        rc.paths.length_profile(model, X, center="median")
    biased = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4, bias=True), seed=0)
    with pytest.raises(ValueError, match="length_profile cannot share"):
        rc.paths.length_profile(biased, X)
