"""rankcollapse.layernorm: LayerNorm's factors, the paper's rewriting, rank and the
constructions."""

import pytest
import torch

import rankcollapse as rc
from rankcollapse import layernorm as ln


def low_rank(gen, n, d, r, scale=1.0):
    A = torch.randn(n, r, generator=gen, dtype=torch.float64)
    B = torch.randn(r, d, generator=gen, dtype=torch.float64)
    return scale * (A @ B) + torch.randn(d, generator=gen, dtype=torch.float64) * (
        torch.rand(1, generator=gen).item() > 0.5
    )


def test_layer_norm_matches_torch(gen):
    Y = torch.randn(4, 6, 10, generator=gen, dtype=torch.float64)
    g = torch.rand(10, generator=gen, dtype=torch.float64)
    b = torch.randn(10, generator=gen, dtype=torch.float64)
    ref = torch.nn.functional.layer_norm(Y, (10,), g, b, eps=rc.san.LN_EPS)
    torch.testing.assert_close(ln.layer_norm(Y, g, b), ref, rtol=1e-12, atol=1e-12)


def test_factorisation_is_exact(gen):
    for _ in range(20):
        Y = (
            torch.randn(7, 9, generator=gen, dtype=torch.float64)
            * 10 ** torch.randint(-3, 4, (1,), generator=gen).item()
        )
        g = torch.randn(9, generator=gen, dtype=torch.float64)
        b = torch.randn(9, generator=gen, dtype=torch.float64)
        f = ln.ln_factors(Y, g, b)
        torch.testing.assert_close(
            ln.ln_from_factors(Y, f), ln.layer_norm(Y, g, b), rtol=1e-12, atol=1e-12
        )
        C = f.C
        torch.testing.assert_close(C @ C, C)  # a projection
        torch.testing.assert_close(
            C @ torch.ones(9, dtype=torch.float64), torch.zeros(9, dtype=torch.float64)
        )


def test_rank_of_ln_never_exceeds_rank_of_input(gen):
    """The rank argument: LN(Y) = S^{-1} Y C G (shift 0) has rank <= rank(Y), on random inputs."""
    for _ in range(300):
        n, d = torch.randint(2, 12, (2,), generator=gen).tolist()
        r = torch.randint(1, min(n, d) + 1, (1,), generator=gen).item()
        Y = low_rank(gen, n, d, r, scale=10 ** torch.randint(-4, 5, (1,), generator=gen).item())
        g = torch.randn(d, generator=gen, dtype=torch.float64)
        before = ln.numerical_rank(Y, 1e-9)
        assert ln.numerical_rank(ln.layer_norm(Y, g), 1e-9) <= before
        # with a shift, one more dimension at most; the token-centred part never more
        b = torch.randn(d, generator=gen, dtype=torch.float64)
        out = ln.layer_norm(Y, g, b)
        assert ln.numerical_rank(out, 1e-9) <= before + 1
        assert ln.numerical_rank(out - out.mean(0), 1e-9) <= before


def test_numerical_rank(gen):
    Y = torch.randn(8, 3, generator=gen, dtype=torch.float64) @ torch.randn(
        3, 6, generator=gen, dtype=torch.float64
    )
    assert int(ln.numerical_rank(Y)) == 3
    assert ln.numerical_rank(torch.stack([Y, 1e-20 * Y])).tolist() == [3, 3]
    assert int(ln.numerical_rank(torch.zeros(3, 3, dtype=torch.float64))) == 0
    with pytest.raises(ValueError, match="rtol"):
        ln.numerical_rank(Y, -1.0)


def test_rank_one_deviation(gen):
    u = torch.randn(6, generator=gen, dtype=torch.float64)
    v = torch.randn(5, generator=gen, dtype=torch.float64)
    Y = torch.outer(u, v)
    assert float(ln.rank_one_deviation(Y)) < 1e-15  # rank one: rounding only
    E = torch.randn(6, 5, generator=gen, dtype=torch.float64)
    s = torch.linalg.svdvals(Y + 1e-3 * E)
    assert torch.isclose(ln.rank_one_deviation(Y + 1e-3 * E), s[1] / s[0])
    assert 1e-5 < float(ln.rank_one_deviation(Y + 1e-3 * E)) < 1e-1
    assert (
        ln.rank_one_deviation(torch.stack([Y, torch.eye(6, 5, dtype=torch.float64)])).tolist()[1]
        == 1.0
    )
    assert float(ln.rank_one_deviation(torch.zeros(3, 3, dtype=torch.float64))) == 0.0
    with pytest.raises(ValueError, match="2 rows"):
        ln.rank_one_deviation(torch.ones(1, 4, dtype=torch.float64))


@pytest.mark.parametrize("bias", [False, True])
def test_exact_rewriting_to_float64_precision(bias, gen):
    cfg = rc.san.SANConfig(n_layers=3, n_heads=2, d_model=12, layernorm="post", bias=bias)
    model = rc.san.SAN(cfg, seed=3)
    X = torch.randn(2, 9, 12, generator=gen, dtype=torch.float64)
    for layer in range(3):
        d = ln.rewriting_discrepancy(model, X, layer)
        assert torch.all(d["exact"] < 1e-13)
        assert torch.all(d["paper"] >= 0)


def test_paper_rewriting_is_exact_when_scales_are_equal(gen):
    """Equal token scales: S^{-1} = I / sigma is also a right multiplication, and the paper's form
    is exact."""
    cfg = rc.san.SANConfig(n_layers=1, n_heads=2, d_model=8, layernorm="post")
    model = rc.san.SAN(cfg, seed=0)
    X = ln.balanced_tokens(6, 8, seed=1)  # SA keeps s w^T: every token has the same sigma
    d = ln.rewriting_discrepancy(model, X, 0)
    assert d["spread"] < 1e-12 and d["paper"] < 1e-13
    Xr = torch.randn(6, 8, generator=gen, dtype=torch.float64)
    assert ln.rewriting_discrepancy(model, Xr, 0)["paper"] > 1e-3


def test_best_common_scale_beats_the_mean(gen):
    Z = torch.randn(10, 5, generator=gen, dtype=torch.float64) * torch.rand(
        10, 1, generator=gen, dtype=torch.float64
    )
    inv = 1 / (0.5 + torch.rand(10, generator=gen, dtype=torch.float64))
    err = lambda c: torch.linalg.matrix_norm(inv[:, None] * Z - c * Z)  # noqa: E731
    best = ln.common_scale(Z, inv, "best")
    assert err(best) <= err(ln.common_scale(Z, inv, "mean")) + 1e-12
    assert err(best) <= err(best * 1.001) and err(best) <= err(best * 0.999)


def test_near_uniform_along_ones_regains_its_residual():
    Y = ln.near_uniform_along_ones(12, 16, 1e-7, seed=0)
    assert rc.residual.relative_residual(Y) < 1e-5
    assert rc.residual.relative_residual(ln.layer_norm(Y)) > 0.5
    assert ln.numerical_rank(ln.layer_norm(Y)) <= ln.numerical_rank(Y)


def test_balanced_tokens_keep_their_residual_with_post_ln():
    X = ln.balanced_tokens(8, 8, seed=0)
    assert int(ln.numerical_rank(X)) == 1 and torch.allclose(
        X.mean(0), torch.zeros(8, dtype=torch.float64)
    )
    cfg = rc.san.SANConfig(n_layers=6, n_heads=2, d_model=8, layernorm="post")
    with_ln = ln.residual_profile(rc.san.SAN(cfg, seed=0), X)
    without = ln.residual_profile(rc.san.SAN(cfg.replace(layernorm="none"), seed=0), X)
    assert torch.all(with_ln["absolute"][1:] > 0.5 * with_ln["absolute"][0])
    assert without["absolute"][-1] < 1e-6 * without["absolute"][0]
    assert torch.all(with_ln["rank"] <= 2)
    assert torch.all(with_ln["rank_one"] < 1e-8)  # the construction is kept: rounding only
    noisy = ln.residual_profile(
        rc.san.SAN(cfg, seed=0), ln.balanced_tokens(8, 8, seed=0, noise=1e-3)
    )
    assert noisy["rank_one"][0] > 1e-5  # the noise is what is not rank one
    with pytest.raises(ValueError, match="even"):
        ln.balanced_tokens(7, 8, seed=0)


def test_bad_input():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=1, d_model=4), seed=0)
    with pytest.raises(ValueError, match="post-LN"):
        ln.paper_rewriting(model, torch.zeros(3, 4))
    with pytest.raises(ValueError, match="gain"):
        ln.layer_norm(torch.zeros(3, 4), gain=torch.ones(3))
    with pytest.raises(ValueError, match="sigma"):
        ln.scale_spread(torch.tensor(1.0))


def test_scale_spread_is_scale_free_and_bit_identical_at_ordinary_scales():
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float64, torch.float32):
        for _ in range(5):  # the formula before the power-of-two rescaling, to the bit
            s = (
                torch.rand(4, 9, dtype=dtype, generator=g)
                * 10.0 ** torch.randint(-8, 8, (4, 1), generator=g).to(dtype)
                + 1e-30
            )
            assert torch.equal(ln.scale_spread(s), s.std(dim=-1, unbiased=False) / s.mean(dim=-1))
    s = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert ln.scale_spread(s).item() == pytest.approx(0.408248290463863, rel=1e-15)
    for scale in (
        1e306,
        1e-306,
        2.0**-1000,
    ):  # std / mean would overflow or underflow without the rescaling
        assert ln.scale_spread(s * scale).item() == pytest.approx(0.408248290463863, rel=1e-14)
    both = torch.stack(
        [s, s * 1e306]
    )  # each row rescaled on its own; the ordinary row is untouched
    assert both.shape == (2, 3) and ln.scale_spread(both)[0] == ln.scale_spread(s)
