"""Tests of :func:`rankcollapse.centering.optimal_center`, the exact centre of res(X).

The centre minimises ``sqrt(f(x) g(x))`` with ``f = ||X - 1 x^T||_1`` (largest absolute column
sum) and ``g = ||X - 1 x^T||_inf`` (largest absolute row sum). It is checked against references
that share no code with it: grid search and exact breakpoint enumeration for one or two
features, many-start Nelder-Mead and a textbook linear programme (one variable per entry of
the residual) for small random matrices, and the mean and median as upper bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rankcollapse.centering import optimal_center

scipy_optimize = pytest.importorskip("scipy.optimize")


# ----------------------------------------------------------------------------------------------
# independent helpers (numpy, float64)


def fg(X: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """``(||X - 1x^T||_1, ||X - 1x^T||_inf)`` computed directly."""
    R = np.abs(X - x)
    return float(R.sum(axis=0).max()), float(R.sum(axis=1).max())


def value(X: np.ndarray, x: np.ndarray) -> float:
    f, g = fg(X, x)
    return float(np.sqrt(f * g))


def values_on(X: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``sqrt(f g)`` at every row of ``P`` (``(m, d)``), vectorised."""
    R = np.abs(X[None, :, :] - P[:, None, :])  # (m, n, d)
    return np.sqrt(R.sum(axis=1).max(axis=1) * R.sum(axis=2).max(axis=1))


def center(X: np.ndarray) -> np.ndarray:
    out = optimal_center(torch.from_numpy(X))
    assert out.dtype == torch.float64 and out.shape == X.shape[-1:]
    return out.numpy()


def textbook_lp_optimum(X: np.ndarray) -> float:
    """min sqrt(f g) by plain Eisner-Severance on the textbook LP (variables x, u_ij, a, b).

    The LP ``min w1 a + w2 b`` s.t. ``u_ij >= +-(X_ij - x_j)``, ``sum_i u_ij <= a``,
    ``sum_j u_ij <= b``; lexicographic extremes, then every chord of the frontier, no pruning.
    """
    import scipy.sparse as sp

    med = np.median(X, axis=0)
    scale = np.abs(X - med).max()
    Y = (X - med) / scale
    n, d = Y.shape
    nd = n * d
    r = np.arange(nd)
    i, j = r // d, r % d
    N = d + nd + 2
    rows = np.concatenate(
        [
            r,
            r,
            nd + r,
            nd + r,
            2 * nd + j,
            2 * nd + np.arange(d),
            2 * nd + d + i,
            2 * nd + d + np.arange(n),
        ]
    )
    cols = np.concatenate([j, d + r, j, d + r, d + r, np.full(d, N - 2), d + r, np.full(n, N - 1)])
    vals = np.concatenate(
        [
            -np.ones(nd),
            -np.ones(nd),
            np.ones(nd),
            -np.ones(nd),
            np.ones(nd),
            -np.ones(d),
            np.ones(nd),
            -np.ones(n),
        ]
    )
    A = sp.csr_matrix((vals, (rows, cols)), shape=(2 * nd + d + n, N))
    b_ub = np.concatenate([-Y.ravel(), Y.ravel(), np.zeros(d + n)])

    def solve(w1, w2, a_max=None, b_max=None):
        c = np.zeros(N)
        c[-2:] = w1, w2
        bounds = [(None, None)] * d + [(0, None)] * nd + [(0, a_max), (0, b_max)]
        res = scipy_optimize.linprog(
            c,
            A_ub=A,
            b_ub=b_ub,
            bounds=bounds,
            method="highs",
            options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
        )
        assert res.status == 0, res.message
        return fg(Y, res.x[:d])

    f1 = solve(1, 0)[0]
    v1 = solve(0, 1, a_max=f1 * (1 + 1e-12))
    g2 = solve(0, 1)[1]
    v2 = solve(1, 0, b_max=g2 * (1 + 1e-12))
    vertices, chords = [v1, v2], [(v1, v2)]
    while chords:
        p, q = chords.pop()
        w1, w2 = p[1] - q[1], q[0] - p[0]
        if w1 <= 1e-12 or w2 <= 1e-12:
            continue
        new = solve(w1, w2)
        if w1 * new[0] + w2 * new[1] < (w1 * p[0] + w2 * p[1]) * (1 - 1e-10):
            vertices.append(new)
            chords += [(p, new), (new, q)]
    return float(np.sqrt(min(a * b for a, b in vertices))) * scale


# ----------------------------------------------------------------------------------------------
# brute force for one and two features


@pytest.mark.parametrize("n", [3, 4, 5, 6])
@pytest.mark.parametrize("seed", range(3))
def test_one_feature_matches_grid_and_breakpoints(n, seed):
    rng = np.random.default_rng(100 * n + seed)
    X = rng.standard_normal((n, 1)) * rng.uniform(0.5, 3.0)
    x = center(X)
    opt, (f_o, g_o) = value(X, x), fg(X, x)

    lo, hi = X.min(), X.max()  # clamping x to the data range never increases f or g
    grid = np.linspace(lo, hi, 20001)[:, None]
    h = grid[1, 0] - grid[0, 0]
    vals = values_on(X, grid)
    k = int(np.argmin(vals))
    ref = scipy_optimize.minimize_scalar(
        lambda t: value(X, np.array([t])),
        bounds=(grid[max(k - 1, 0), 0], grid[min(k + 1, len(grid) - 1), 0]),
        method="bounded",
        options={"xatol": 1e-13},
    )
    grid_best = min(vals[k], ref.fun)
    assert opt <= grid_best + 1e-9
    # The nearest grid point to x is within h/2, where f grows by <= n h/2 and g by <= h/2.
    assert grid_best <= np.sqrt((f_o + n * h / 2) * (g_o + h / 2)) + 1e-12

    # Exact: with d = 1, f and g are linear between the entries and the midrange, and a
    # product of two linear functions has its minimum over an interval at an end.
    candidates = np.concatenate([X[:, 0], [(lo + hi) / 2]])[:, None]
    exact = values_on(X, candidates).min()
    assert opt == pytest.approx(exact, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("n", [3, 4, 5, 6])
@pytest.mark.parametrize("seed", range(2))
def test_two_features_matches_grid_search(n, seed):
    rng = np.random.default_rng(1000 + 10 * n + seed)
    X = rng.standard_normal((n, 2)) * rng.uniform(0.5, 2.0, size=2)
    x = center(X)
    opt, (f_o, g_o) = value(X, x), fg(X, x)
    assert np.all(x >= X.min(axis=0) - 1e-12) and np.all(x <= X.max(axis=0) + 1e-12)

    m = 401
    axes = [np.linspace(X[:, j].min(), X[:, j].max(), m) for j in range(2)]
    h = max(a[1] - a[0] for a in axes)
    P = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 2)
    vals = values_on(X, P)
    grid_best = float(vals.min())
    refined = min(
        scipy_optimize.minimize(
            lambda z: value(X, z),
            P[k],
            method="Nelder-Mead",
            options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 4000},
        ).fun
        for k in np.argsort(vals)[:5]
    )
    assert opt <= min(grid_best, refined) + 1e-9
    # Grid resolution: the nearest grid point to x is within h/2 in each coordinate.
    assert grid_best <= np.sqrt((f_o + n * h / 2) * (g_o + 2 * h / 2)) + 1e-12


# ----------------------------------------------------------------------------------------------
# small random matrices: independent references and simple upper bounds


def _instance(k: int) -> np.ndarray:
    rng = np.random.default_rng(20_000 + k)
    n, d = int(rng.integers(5, 11)), int(rng.integers(3, 7))
    kind = k % 3
    if kind == 0:
        return rng.standard_normal((n, d))
    if kind == 1:
        return rng.standard_t(2, size=(n, d)) * rng.uniform(0.2, 5.0, size=d)
    return rng.standard_normal((n, 2)) @ rng.standard_normal((2, d)) + rng.standard_normal((1, d))


def test_never_beaten_by_nelder_mead_mean_or_median():
    strictly_better_than_mean = 0
    for k in range(30):
        X = _instance(k)
        d = X.shape[1]
        rng = np.random.default_rng(k)
        opt = value(X, center(X))
        mean_value, median_value = value(X, X.mean(axis=0)), value(X, np.median(X, axis=0))
        assert opt <= mean_value * (1 + 1e-12)
        assert opt <= median_value * (1 + 1e-12)
        strictly_better_than_mean += opt < mean_value * (1 - 1e-6)

        starts = [X.mean(axis=0), np.median(X, axis=0)]
        starts += [rng.uniform(X.min(axis=0), X.max(axis=0)) for _ in range(4)]
        best_nm = min(
            scipy_optimize.minimize(
                lambda z: value(X, z),
                z0,
                method="Nelder-Mead",
                options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 3000 * d},
            ).fun
            for z0 in starts
        )
        assert opt <= best_nm * (1 + 1e-9), (k, opt, best_nm)
    # The column mean is not the minimiser (the paper's official code centres with it).
    assert strictly_better_than_mean >= 15


@pytest.mark.parametrize("k", range(8))
def test_matches_textbook_linear_programme(k):
    X = _instance(100 + k)
    assert value(X, center(X)) == pytest.approx(textbook_lp_optimum(X), rel=1e-9)


def test_no_perturbation_improves_a_larger_matrix():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((32, 64))
    x = center(X)
    opt = value(X, x)
    assert opt < value(X, X.mean(axis=0)) and opt < value(X, np.median(X, axis=0))
    for scale in (1e-1, 1e-2, 1e-3):
        P = x + scale * rng.standard_normal((200, 64))
        assert values_on(X, P).min() >= opt * (1 - 1e-12)
    # Moving one coordinate to any entry of its column (or by small steps) does not help.
    for j in range(64):
        ts = np.concatenate([X[:, j], x[j] + np.linspace(-0.05, 0.05, 11)])
        P = np.repeat(x[None, :], ts.size, axis=0)
        P[:, j] = ts
        assert values_on(X, P).min() >= opt * (1 - 1e-12)


# ----------------------------------------------------------------------------------------------
# invariances


def test_translation_shifts_the_centre():
    rng = np.random.default_rng(3)
    # Dyadic data: every centring and scaling step is exact, so x itself must shift by c.
    X = rng.integers(-40, 41, size=(9, 5)) / 8.0
    c = rng.integers(-40, 41, size=5) / 4.0
    x, x_shift = center(X), center(X + c)
    np.testing.assert_allclose(x_shift, x + c, rtol=0, atol=1e-12)
    # Generic data: the minimiser need not be unique, the minimum value is invariant.
    for seed in range(4):
        rng = np.random.default_rng(30 + seed)
        X = rng.standard_normal((8, 6))
        c = rng.normal(scale=10.0, size=6)
        Xc = X + c
        assert value(Xc, center(Xc)) == pytest.approx(value(X, center(X)), rel=1e-9)
        assert value(Xc, center(X) + c) == pytest.approx(value(Xc, center(Xc)), rel=1e-9)


def test_scaling_scales_the_centre():
    rng = np.random.default_rng(4)
    X = rng.integers(-40, 41, size=(7, 6)) / 8.0
    x = center(X)
    for s in (2.0, 0.25, 1024.0):
        np.testing.assert_allclose(center(s * X), s * x, rtol=0, atol=1e-12 * s)
    X = rng.standard_normal((10, 4))
    x = center(X)
    for s in (3.7, 1e-3, 1e4):
        xs = center(s * X)
        assert value(s * X, xs) == pytest.approx(s * value(X, x), rel=1e-9)
        assert value(s * X, s * x) == pytest.approx(value(s * X, xs), rel=1e-9)


def test_row_permutation_keeps_the_value():
    for seed in range(4):
        rng = np.random.default_rng(40 + seed)
        X = rng.standard_normal((9, 5))
        perm = rng.permutation(9)
        assert value(X[perm], center(X[perm])) == pytest.approx(value(X, center(X)), rel=1e-9)


def test_batched_equals_loop_and_keeps_dtype_device():
    g = torch.Generator().manual_seed(5)
    X = torch.randn(2, 3, 6, 4, generator=g)
    out = optimal_center(X)
    assert out.shape == (2, 3, 4) and out.dtype == torch.float32 and out.device == X.device
    looped = torch.stack(
        [torch.stack([optimal_center(X[a, b]) for b in range(3)]) for a in range(2)]
    )
    assert torch.equal(out, looped)
    X64 = X.double()
    out64 = optimal_center(X64)
    assert out64.dtype == torch.float64
    torch.testing.assert_close(out64.float(), out, rtol=1e-5, atol=1e-5)


def test_integer_input_gives_floating_centre():
    X = torch.tensor([[0, 1], [2, 5], [4, 0]])
    out = optimal_center(X)
    assert out.is_floating_point() and out.shape == (2,)
    Xn = X.double().numpy()
    assert value(Xn, out.double().numpy()) <= value(Xn, Xn.mean(axis=0)) + 1e-12


# ----------------------------------------------------------------------------------------------
# degenerate input


def test_single_row_is_its_own_centre():
    X = torch.tensor([[1.5, -2.0, 3.0]], dtype=torch.float64)
    torch.testing.assert_close(optimal_center(X), X[0], rtol=0, atol=0)


def test_equal_rows_give_zero_residual():
    row = torch.tensor([0.5, -1.0, 2.0, 7.0], dtype=torch.float64)
    X = row.repeat(5, 1)
    x = optimal_center(X)
    torch.testing.assert_close(x, row, rtol=0, atol=0)
    assert torch.count_nonzero(X - x) == 0


def test_constant_columns_are_centred_on_their_value():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((6, 4))
    X[:, 1] = 3.25
    X[:, 3] = -1.0
    x = center(X)
    assert x[1] == 3.25 and x[3] == -1.0
    assert value(X, x) <= value(X, X.mean(axis=0)) + 1e-12


def test_two_rows():
    X = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    # f >= 3 for every x (last column) with equality between the rows, and g >= 6 / 2 = 3 with
    # equality when x splits the row distance evenly: the optimum is sqrt(3 * 3).
    assert value(X, center(X)) == pytest.approx(3.0, rel=1e-12)


# ----------------------------------------------------------------------------------------------
# bad input


def test_rejects_non_tensor():
    with pytest.raises(TypeError, match="X"):
        optimal_center([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="X"):
        optimal_center(np.ones((3, 2)))


@pytest.mark.parametrize("shape", [(), (3,)])
def test_rejects_fewer_than_two_dimensions(shape):
    with pytest.raises(ValueError, match=r"X.*\(n, d\)"):
        optimal_center(torch.ones(shape))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_rejects_non_finite(bad):
    X = torch.ones(3, 2)
    X[1, 0] = bad
    with pytest.raises(ValueError, match="X"):
        optimal_center(X)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 2, 3)])
def test_rejects_empty_dimensions(shape):
    with pytest.raises(ValueError, match="X"):
        optimal_center(torch.ones(shape))
