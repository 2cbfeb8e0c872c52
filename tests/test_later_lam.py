"""rankcollapse.later.lam: lambda-skip networks X + lambda SA(X), the book's lower bound and
threshold."""

import numpy as np
import pytest
import torch

import rankbook as book
import rankcollapse as rc
from rankcollapse.later import lam as lm

CFG = rc.san.SANConfig(n_layers=5, n_heads=2, d_model=6)


def _x(seed=0, n=5, d=6):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_lambda_zero_is_the_identity():
    X = _x()
    out = lm.lambda_skip_san(CFG, 0.0, seed=3)(X)
    for H in out.hidden_states:
        assert torch.equal(H, X)


@pytest.mark.parametrize("lam", [0.3, 1.0, 2.5])
def test_a_layer_is_x_plus_lambda_times_attention(lam):
    """Parity with an independent computation: the pure-attention network of the same seed gives
    SA."""
    X = _x(1)
    pure = rc.san.SAN(CFG.replace(n_layers=1), seed=7)
    lam_net = lm.lambda_skip_san(CFG.replace(n_layers=1), lam, seed=7)
    with torch.no_grad():
        want = X + lam * pure(X).last_hidden_state
        got = lam_net(X).last_hidden_state
    assert torch.allclose(got, want, atol=1e-13)


def test_the_residual_recursion_and_the_bound_on_random_instances():
    """rho_l never falls below the book's bound; the constants are zero at lambda = 0."""
    for seed in range(6):
        X = _x(seed)
        for lam in (0.0, 0.05, 0.3, 1.0, 4.0):
            model = lm.lambda_skip_san(CFG, lam, seed=seed)
            with torch.no_grad():
                rho = rc.residual.through_depth(model(X).hidden_states, "relative", norm="fro")
            bound = lm.relative_residual_lower_bound(model, X)
            assert bound.shape == rho.shape == (CFG.n_layers + 1,)
            assert torch.all(rho >= bound * (1 - 1e-12))
            assert bound[0] == pytest.approx(rho[0].item())
            if lam == 0.0:
                k = lm.layer_constants(model, X)
                assert torch.all(k["g"] == 0) and torch.all(k["c"] == 0)


def test_one_layer_loses_at_most_the_factor_g():
    X = _x(2)
    model = lm.lambda_skip_san(CFG.replace(n_layers=1), 0.4, seed=2)
    with torch.no_grad():
        Y = model(X).last_hidden_state
    g = lm.layer_constants(model, X)["g"][0]
    fro = lambda A: torch.linalg.matrix_norm(rc.residual.res(A), ord="fro")  # noqa: E731
    assert fro(Y) >= (1 - g) * fro(X) - 1e-12
    assert g > 0


def test_constants_scale_with_lambda_for_fixed_attention():
    """P does not depend on lambda at the first layer, so g_0 and c_0 are exactly linear in
    lambda."""
    X = _x(4)
    k1 = lm.layer_constants(lm.lambda_skip_san(CFG, 1.0, seed=4), X)
    k3 = lm.layer_constants(lm.lambda_skip_san(CFG, 3.0, seed=4), X)
    assert k3["g"][0] == pytest.approx(3 * k1["g"][0].item())
    assert k3["c"][0] == pytest.approx(3 * k1["c"][0].item())


def _study(seed=0):
    return lm.lambda_study(
        lambdas=np.logspace(-2, 1, 7),
        n_layers=6,
        n_heads=2,
        d_model=8,
        n_tokens=6,
        samples=3,
        seed=seed,
        generator=torch.Generator().manual_seed(seed),
    )


def test_the_study_residual_falls_with_lambda_and_the_threshold_is_where_g_reaches_one():
    r = _study()
    assert (
        r.lambdas[0] == 0
        and r.rho.shape == (3, 8, 7)
        and r.g.shape == (3, 8, 6)
        and r.violations() == 0
    )
    last = r.median()[:, -1]
    assert last[0] == pytest.approx(r.median()[0, 0])  # lambda = 0: the input's relative residual
    assert r.falls() and last[-1] < 1e-2 * last[0]
    low, high = r.kept()
    assert r.bound[:, 1:, -1].min() <= low <= high <= 1
    stars = r.thresholds()
    for s in range(3):
        below = (r.lambdas > 0) & (r.lambdas < stars[s])
        above = r.lambdas > stars[s]
        assert np.all(r.gmax()[s, below] < 1) and np.all(r.gmax()[s, above] >= 1)
    assert np.isfinite(r.threshold) and 0.01 < r.threshold < 10 and r.threshold == np.median(stars)


def test_the_threshold_of_a_shallower_network_is_read_from_its_first_layers():
    """The first l layers are the network of depth l: its threshold is that of a study of depth l,
    and a deeper network's can only be lower."""
    r = _study()
    short = lm.lambda_study(
        lambdas=np.logspace(-2, 1, 7),
        n_layers=3,
        n_heads=2,
        d_model=8,
        n_tokens=6,
        samples=3,
        seed=0,
        generator=torch.Generator().manual_seed(0),
    )
    assert np.allclose(r.rho[..., :4], short.rho) and np.allclose(r.g[..., :3], short.g)
    assert np.allclose(r.thresholds(3), short.thresholds())
    assert r.kept(3) == short.kept() and r.falls(3) == short.falls()
    stars = [r.threshold_at(l) for l in range(1, 7)]
    assert all(b <= a for a, b in zip(stars, stars[1:]))
    with pytest.raises(ValueError, match="depth"):
        r.thresholds(7)


def test_the_study_is_deterministic():
    a, b = _study(), _study()
    assert np.array_equal(a.rho, b.rho) and np.array_equal(a.g, b.g) and a.kept() == b.kept()


def test_the_trend_and_the_bound_gap_on_hand_made_curves():
    lams = np.array([0.0, 0.1, 1.0, 10.0])
    rho = np.zeros((1, 4, 2))
    rho[0, :, 0] = 0.9
    rho[0, :, 1] = [0.9, 0.95, 0.5, 0.01]
    bound = np.zeros_like(rho)
    bound[0, 1, 1] = 0.5
    g = np.array([[[0.0], [0.5], [5.0], [50.0]]])
    r = lm.LambdaResult(lams, rho, bound, g, 1, 1)
    assert r.threshold == pytest.approx(
        0.2
    )  # g crosses 1 between 0.1 and 1 (log-log: 0.1 * 10**log10(2))
    assert r.kept() == (0.95, 0.95) and r.falls()
    assert r.bound_gap() == (
        0.1,
        pytest.approx(0.5 / 0.95),
    )  # the largest lambda below the threshold
    r.rho[0, -1, 1] = 0.2  # the residual kept at the largest lambda: no collapse
    assert not r.falls()
    r.g[0, 1, 0] = 2.0  # every lambda above the threshold: nothing is kept, no gap to read
    assert np.isnan(r.threshold) and np.isnan(r.kept()[0]) and np.isnan(r.bound_gap()[1])
    r.rho[0, 1, 1] = 0.1  # a measured residual below the bound
    assert r.violations() == 1


def test_threshold_interpolation():
    assert lm._threshold([0, 0.1, 1.0], [0, 0.1, 10.0]) == pytest.approx(10**-0.5)
    assert lm._threshold([0, 0.1, 1.0], [0, 0.01, 0.1]) == float("inf")
    assert np.isnan(lm._threshold([0, 0.1, 1.0], [0, 2.0, 20.0]))


def test_figure_has_two_panels():
    fig = book.plotting.later.lambda_figure(_study(), [2, 6])
    assert len(fig.axes) == 2 and len(fig.axes[0].get_lines()) >= 2
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_bad_input():
    with pytest.raises(ValueError, match="pure attention"):
        lm.lambda_skip_san(CFG.replace(mlp=4), 1.0, seed=0)
    with pytest.raises(ValueError, match="lam"):
        lm.lambda_skip_san(CFG, -1.0, seed=0)
    with pytest.raises(ValueError, match="lambda-skip"):
        lm.layer_constants(rc.san.SAN(CFG, seed=0), _x())
    with pytest.raises(TypeError, match="generator"):
        lm.lambda_study(
            lambdas=[1.0],
            n_layers=2,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=0,
        )
    with pytest.raises(ValueError, match="lambdas"):
        lm.lambda_study(
            lambdas=[0.0],
            n_layers=2,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        )
