import numpy as np
import pytest
import torch
from conftest import random_tokens

import rankcollapse as rc


def brute_norms(X):
    A = np.abs(X)
    return A.sum(0).max(), A.sum(1).max()


def test_composite_norm_matches_definition(gen):
    for _ in range(20):
        X = random_tokens(gen, 7, 5)
        n1, ninf = brute_norms(X.numpy())
        assert rc.residual.composite_norm(X).item() == pytest.approx(np.sqrt(n1 * ninf), rel=1e-14)


def test_composite_norm_batched_and_numpy(gen):
    X = random_tokens(gen, 3, 6, 4)
    batched = rc.residual.composite_norm(X)
    assert batched.shape == (3,)
    for i in range(3):
        assert batched[i] == rc.residual.composite_norm(X[i])
    assert rc.residual.composite_norm(X.numpy()).shape == (3,)


def test_composite_norm_is_a_norm(gen):
    for _ in range(20):
        A, B = random_tokens(gen, 5, 4), random_tokens(gen, 5, 4)
        f = rc.residual.composite_norm
        assert f(A + B) <= f(A) + f(B) + 1e-12  # triangle inequality
        assert f(-2.5 * A) == pytest.approx(2.5 * f(A).item())
    assert rc.residual.composite_norm(torch.zeros(3, 2)) == 0


def test_composite_norm_bounds_frobenius_like_quantities(gen):
    # ||X||_2 <= sqrt(||X||_1 ||X||_inf) (Hoelder): the composite norm bounds the spectral norm
    for _ in range(20):
        X = random_tokens(gen, 6, 9)
        assert torch.linalg.matrix_norm(X, ord=2) <= rc.residual.composite_norm(X) + 1e-12


def test_res_mean_centres_columns(gen):
    X = random_tokens(gen, 8, 3)
    R = rc.residual.res(X)
    assert torch.allclose(R.mean(0), torch.zeros(3, dtype=X.dtype), atol=1e-15)
    assert torch.allclose(X - R, X.mean(0).expand_as(X))


def test_relative_residual_zero_for_identical_tokens_and_invariant_to_shift(gen):
    x = random_tokens(gen, 5)
    X = x.expand(7, 5).clone()
    assert rc.residual.relative_residual(X) < 1e-15  # the mean is exact up to rounding
    Y = random_tokens(gen, 7, 5)
    shift = random_tokens(gen, 5)
    r1 = rc.residual.composite_norm(rc.residual.res(Y))
    r2 = rc.residual.composite_norm(rc.residual.res(Y + shift))
    assert r1 == pytest.approx(r2.item(), rel=1e-12)
    assert rc.residual.relative_residual(torch.zeros(3, 3)) == 0


def test_frobenius_minimiser_is_the_mean(gen):
    X = random_tokens(gen, 6, 4)
    base = torch.linalg.matrix_norm(rc.residual.res(X, norm="fro"))
    for _ in range(20):
        x = X.mean(dim=0) + 1e-3 * random_tokens(gen, 4)
        assert torch.linalg.matrix_norm(rc.residual.res(X, center=lambda X: x, norm="fro")) > base


def test_optimal_centre_is_asked_for_by_function(gen):
    """The core never imports the linear programme: "optimal" says how to ask for it."""
    X = random_tokens(gen, 6, 4)
    with pytest.raises(ValueError, match="center=rc.centering.optimal_center"):
        rc.residual.res(X, center="optimal")
    opt = rc.residual.res(X, center=rc.centering.optimal_center)
    assert torch.equal(opt, X - rc.centering.optimal_center(X))
    with pytest.raises(ValueError, match="center"):
        rc.residual.res(X, center=lambda X: X.mean(dim=0)[:2])


def test_mean_centred_relative_residual_can_exceed_one():
    # one large token among zeros: the mean shifts every row, inflating the composite norm
    X = torch.zeros(10, 1, dtype=torch.float64)
    X[0, 0] = 1.0
    assert rc.residual.relative_residual(X, center="mean") > 1
    assert rc.residual.relative_residual(X, center=rc.centering.optimal_center) <= 1 + 1e-12


@pytest.mark.parametrize(
    "bad, err",
    [
        ([1.0, 2.0], TypeError),
        (torch.ones(3), ValueError),
        (torch.ones(0, 3), ValueError),
        (torch.tensor([[1.0, float("nan")]]), ValueError),
        (torch.tensor([[1.0, float("inf")]]), ValueError),
    ],
)
def test_bad_input(bad, err):
    with pytest.raises(err, match="X"):
        rc.residual.composite_norm(bad)


def test_bad_options(gen):
    X = random_tokens(gen, 3, 2)
    with pytest.raises(ValueError, match="center"):
        rc.residual.res(X, center="median")
    with pytest.raises(ValueError, match="norm"):
        rc.residual.relative_residual(X, norm="l2")
    with pytest.raises(TypeError, match="center"):
        rc.residual.res(X, center=None)


def test_optimal_residual_never_exceeds_mean_residual(gen):
    """The paper's residual (exact minimiser) is never larger than the official code's (mean)."""
    for trial in range(40):
        n, d = (
            int(torch.randint(1, 12, (1,), generator=gen)),
            int(torch.randint(1, 9, (1,), generator=gen)),
        )
        X = random_tokens(gen, n, d) * float(torch.rand(1, generator=gen) * 10) + float(
            torch.randn(1, generator=gen)
        )
        if trial % 4 == 0:
            X = X**3  # heavy tails: where mean and optimum differ most
        opt = rc.residual.composite_norm(rc.residual.res(X, center=rc.centering.optimal_center))
        mean = rc.residual.composite_norm(rc.residual.res(X, center="mean"))
        assert opt <= mean * (1 + 1e-12) + 1e-12
        assert rc.residual.relative_residual(X, center=rc.centering.optimal_center) <= 1 + 1e-12


def test_optimal_residual_batched(gen):
    X = random_tokens(gen, 3, 6, 4)
    R = rc.residual.res(X, center=rc.centering.optimal_center)
    for i in range(3):
        assert torch.allclose(R[i], rc.residual.res(X[i], center=rc.centering.optimal_center))


def test_operator_norms(gen):
    X = random_tokens(gen, 5, 3)
    n1, ninf = brute_norms(X.numpy())
    assert rc.residual.norm_1(X).item() == pytest.approx(n1) and rc.residual.norm_inf(
        X
    ).item() == pytest.approx(ninf)
    # the product ||X||_1 ||X||_inf would underflow to 0; the composite norm must not
    tiny = X * 1e-200
    assert rc.residual.composite_norm(tiny).item() == pytest.approx(
        1e-200 * np.sqrt(n1 * ninf), rel=1e-12
    )


def test_through_depth_stacks_each_quantity_of_the_hidden_states():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=3, n_heads=2, d_model=6), seed=0)
    X = torch.randn(2, 5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    hidden = model(X).hidden_states
    for quantity, f in [
        ("residual", lambda h: rc.residual.composite_norm(rc.residual.res(h))),
        ("relative", rc.residual.relative_residual),
        ("norm", rc.residual.composite_norm),
    ]:
        curve = rc.residual.through_depth(hidden, quantity)
        assert curve.shape == (4, 2) and not curve.requires_grad
        assert torch.equal(curve, torch.stack([f(h) for h in hidden]).detach())
    fro = rc.residual.through_depth(hidden, "relative", norm="fro")
    assert torch.equal(fro[1], rc.residual.relative_residual(hidden[1], norm="fro").detach())
    with pytest.raises(ValueError, match="quantity"):
        rc.residual.through_depth(hidden, "rank")
    with pytest.raises(TypeError, match="hidden_states must be a non-empty list"):
        rc.residual.through_depth(hidden[0])
    with pytest.raises(TypeError, match="hidden_states"):
        rc.residual.through_depth([])
