"""rc.lower_bound and rc.lower_bound_search: the book's lower bound with skip connections.

Pins: the two lemmas (attention rows within 2 tanh(2 eps) of their mean; one layer keeps
b (1 - sum_h 2 omega_h tanh 2 eps_h)) on random layers, whatever Omega; the theorem's bound never
above the residual on 10,000 random networks in the regime, on every network the search
returns, and on a sample recomputed at 60 digits with mpmath (tests/mp_reference.py); the
batched networks are the core SAN; the construction is exact (the simplex stays a simplex, the
mean stays 0, the forward pass is the scalar recursion) and its exponent over depths 16 to 1024
is within 0.05 of -1/2; the search respects its weight bounds, never reports more than it
started from, and starts from the known networks (the construction's weights on two clusters,
one-hot tokens and the simplex); bad input is refused with its name.
"""

from __future__ import annotations

import math

import mp_reference as ref
import mpmath as mp
import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse import lower_bound as LB
from rankcollapse import lower_bound_search as LS
from rankcollapse.san import SAN, SANConfig

SETTING = dict(n=4, d=8, H=2, q=4.0, omega=0.15, b0=8.0)  # the chapter's


def _skip_san(L, H, d, scale, seed, value_scale=None):
    net = SAN(SANConfig(n_layers=L, n_heads=H, d_model=d, skip=True, init_scale=scale), seed=seed)
    if value_scale is not None:
        with torch.no_grad():
            for b in net.layers:
                b.W_V.mul_(value_scale)
    return net


# ---------------------------------------------------------------- the lemmas


def test_attention_rows_are_within_2_tanh_2eps_of_their_mean():
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for _ in range(300):
        n = int(torch.randint(2, 9, (1,), generator=gen))
        eps = float(torch.rand(1, generator=gen)) * 3
        E = (torch.rand(n, n, generator=gen, dtype=torch.float64) * 2 - 1) * eps
        a = torch.randn(n, generator=gen, dtype=torch.float64) * 5  # the mean's term: anything
        P = torch.softmax(a + E, dim=-1)
        gap = (P - P.mean(dim=0, keepdim=True)).abs().sum(-1).max().item()
        bound = 2 * math.tanh(2 * E.abs().max().item())
        assert gap <= bound * (1 + 1e-12)
        worst = max(worst, gap / bound)
    assert worst > 0.3  # the check compares numbers of the same size, not a bound far above


@pytest.mark.parametrize("value_scale", [0.05, 1.0, 5.0])
def test_one_layer_never_keeps_less_than_the_lemma_says(value_scale):
    """The a-posteriori lemma holds for every Omega, also far outside the theorem's regime."""
    for seed in range(8):
        net = _skip_san(5, 2, 6, 2.0, seed, value_scale)
        X = (
            torch.randn(7, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
            * 2
            + 1
        )
        measured = LB.residual_inf(torch.stack(net(X).hidden_states))
        assert torch.all(measured[1:] >= LB.one_layer_bound(net, X) - 1e-12 * measured[:-1])


# ---------------------------------------------------------------- the theorem


def test_depth_bound_formula_and_edge_cases():
    b0, k, om = 2.0, 0.3, 0.2
    cap = (1 - 2 * om) / math.sqrt(3 * k)
    bt = min(b0, cap)
    got = LB.depth_bound(b0, k, om, [0, 1, 10, 1000])
    want = [
        max((1 - 2 * om) ** L * b0, bt / math.sqrt(1 + 15 / 4 * k * bt**2 * L))
        for L in (0, 1, 10, 1000)
    ]
    assert got.tolist() == pytest.approx(want, rel=1e-14)
    # the geometric term is the larger at small depths when k b0^2 is large
    big = LB.depth_bound(8.0, 1.7, 0.3, [1, 2])
    assert big.tolist() == pytest.approx([0.4 * 8.0, 0.16 * 8.0], rel=1e-14)
    assert LB.depth_bound(b0, 0.0, om, [5, 500]).tolist() == [b0, b0]  # attention that does nothing
    assert LB.depth_bound(0.0, k, om, [3]).tolist() == [0.0]
    # at large depth, (15/4 k L)^(-1/2) whatever b0
    far = LB.depth_bound([0.1, 10.0], k, om, [10**9])[:, 0]
    assert far.tolist() == pytest.approx([1 / math.sqrt(15 / 4 * k * 1e9)] * 2, rel=1e-3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(b0=1.0, k=1.0, omega=0.5), "omega"),
        (dict(b0=1.0, k=1.0, omega=0.7), "omega"),
        (dict(b0=-1.0, k=1.0, omega=0.1), "non-negative"),
        (dict(b0=1.0, k=math.nan, omega=0.1), "finite"),
    ],
)
def test_depth_bound_refuses_outside_the_theorem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LB.depth_bound(depths=[1], **kwargs)
    with pytest.raises(ValueError, match="depths"):
        LB.depth_bound(1.0, 1.0, 0.1, [-1])


def test_depth_bound_huge_k_and_shapes():
    """A huge finite k gives a tiny bound, not NaN; shapes that do not broadcast are refused."""
    got = LB.depth_bound(1.0, 1e308, 0.3, [1, 5, 10**6])
    assert torch.isfinite(got).all() and (got > 0).all() and got[0] == pytest.approx(0.4)
    wide = LB.wide_depth_bound(1e300, 1e308, 0.9, [1, 10**6])
    assert torch.isfinite(wide).all() and (wide > 0).all()
    with pytest.raises(ValueError, match="b0, k and omega must broadcast"):
        LB.depth_bound(torch.ones(2), torch.ones(3), 0.1, [1])


def test_wide_bound_formula_refinement_and_refusals():
    b0, k, om, n = 2.0, 0.3, 0.8, 4
    c = (n - 1) / n
    rho = (1 - om) / (1 + (2 * c - 1) * om)
    assert LB.contraction(om, n).item() == pytest.approx(rho, rel=1e-15)
    assert LB.contraction(om).item() == pytest.approx((1 - om) / (1 + om), rel=1e-15)
    assert LB.contraction(0.6, 2).item() == pytest.approx(0.4, rel=1e-15)  # 1 - Omega at n = 2
    bt = min(b0, rho / math.sqrt(3 * c * k))
    got = LB.wide_depth_bound(b0, k, om, [0, 1, 10, 1000], n=n)
    want = [
        max(rho**L * b0, bt / math.sqrt(1 + 15 / 4 * c * k * bt**2 * L)) for L in (0, 1, 10, 1000)
    ]
    assert got.tolist() == pytest.approx(want, rel=1e-14)
    # below 1/2 the theorem of section 7 is never weaker than that of section 3
    for om in (0.0, 0.1, 0.3, 0.49):
        old = LB.depth_bound(b0, k, om, range(200))
        assert (LB.wide_depth_bound(b0, k, om, range(200)) >= old * (1 - 1e-15)).all()
    for bad in (1.0, 1.5, -0.1, math.nan):
        with pytest.raises(ValueError, match="omega"):
            LB.wide_depth_bound(1.0, 1.0, bad, [1])
    with pytest.raises(ValueError, match="n"):
        LB.wide_depth_bound(1.0, 1.0, 0.5, [1], n=1)


def test_one_layer_keeps_the_contraction_whatever_the_attention():
    """The lemma of section 7: R + sum_h Delta_h R W_h keeps rho(Omega, n) of ||R||_inf for any
    row-stochastic P_h (hard ones included) and any value maps with sum_h ||W_h||_inf = Omega < 1;
    random layers come within 1% of it (the constant is nearly attained)."""
    gen = torch.Generator().manual_seed(5)
    worst = math.inf
    for t in range(3000):
        n, d, H = (
            int(torch.randint(lo, hi, (1,), generator=gen)) for lo, hi in ((2, 9), (1, 6), (1, 4))
        )
        om = 0.999 * float(torch.rand(1, generator=gen))
        R = torch.randn(n, d, generator=gen, dtype=torch.float64)
        R = R - R.mean(0)
        share = torch.rand(H, generator=gen, dtype=torch.float64)
        share = share / share.sum() * om
        out = R.clone()
        for h in range(H):
            W = torch.randn(d, d, generator=gen, dtype=torch.float64)
            W = -torch.eye(d, dtype=torch.float64) if t % 2 else W / W.abs().sum(-1).max()
            scale = 10 ** (3 * float(torch.rand(1, generator=gen)) - 1)
            P = torch.softmax(torch.randn(n, n, generator=gen, dtype=torch.float64) * scale, -1)
            out = out + (P - P.mean(0)) @ R @ (W * share[h])
        ratio = float(LB.residual_inf(out) / LB.residual_inf(R))
        worst = min(worst, ratio / LB.contraction(om, n).item())
    assert 1 - 1e-12 <= worst < 1.01


def test_the_wide_bound_holds_on_random_networks_up_to_omega_1():
    total = None
    for stack, X in LB.random_networks(2_000, seed=3, omega_max=1.0):
        found = LB.bound_check(stack, X, wide=True)
        total = found if total is None else total + found
    assert total.networks == 2_000 and total.violations == 0
    assert 1.0 <= total.worst < 1.01


@pytest.mark.slow
def test_the_wide_bound_holds_on_10000_random_networks_to_depth_256():
    total = None
    for seed, max_L in ((10, 24), (11, 256)):
        for stack, X in LB.random_networks(5_000, seed=seed, omega_max=1.0, max_L=max_L):
            found = LB.bound_check(stack, X, wide=True)
            total = found if total is None else total + found
    assert total.networks == 10_000 and total.violations == 0


def test_a_collapsed_input_and_bound_check_merging():
    stack = LB.construction(3, 4, 1, 1.0, 0.2)
    X = torch.ones(1, 3, 4, dtype=torch.float64)  # every token equal: b0 = 0
    found = LB.bound_check(stack, X)
    assert found.violations == 0 and found.worst == 1.0
    other = LB.BoundCheck(1, 0, 0, math.nan)
    assert (found + other).worst == (other + found).worst == 1.0


def test_the_bound_holds_on_10000_random_networks():
    total = None
    for stack, X in LB.random_networks(10_000, seed=0):
        found = LB.bound_check(stack, X)
        total = found if total is None else total + found
    assert total.networks == 10_000
    assert total.pairs > 50_000
    assert total.violations == 0
    assert 1.0 <= total.worst < 1.01  # the bound is nearly attained where attention barely acts


def test_bound_check_counts_violations(monkeypatch):
    """The check can fail: a bound doubled is violated."""
    stack, X = next(LB.random_networks(20, seed=1))
    real = LB.depth_bound
    monkeypatch.setattr(LB, "depth_bound", lambda *a: 1e9 * real(*a))
    assert LB.bound_check(stack, X).violations > 0


def test_random_networks_are_in_the_regime_and_vary():
    shapes, omegas = set(), []
    for stack, X in LB.random_networks(2000, seed=3):
        k, om = stack.constants()
        assert torch.all(om < 0.5)
        omegas.append(om)
        shapes.add(tuple(stack.QK.shape[1:4]) + (X.shape[1],))
    om = torch.cat(omegas)
    assert len(shapes) >= 15 and om.max() > 0.49 and om.min() < 0.1


def _bound_mp(layers, dqk, b0, n=None):
    """The theorem's bound at every depth from the weights, at mpmath's precision (with ``n``:
    the theorem of section 7)."""
    ks, oms = [], []
    for heads in layers:
        q = [min(ref.norm_1(WQK), ref.norm_inf(WQK)) for WQK, _ in heads]
        w = [ref.norm_inf(W) for _, W in heads]
        ks.append(4 / mp.sqrt(dqk) * mp.fsum(a * b for a, b in zip(q, w)))
        oms.append(mp.fsum(w))
    out = [b0]
    c = mp.mpf(1) if n is None else mp.mpf(n - 1) / n
    for L in range(1, len(layers) + 1):
        k, om = c * max(ks[:L]), max(oms[:L])
        rho = 1 - 2 * om if n is None else (1 - om) / (1 + (2 * c - 1) * om)
        bt = min(b0, rho / mp.sqrt(3 * k)) if k > 0 else b0
        out.append(max(rho**L * b0, bt / mp.sqrt(1 + mp.mpf(15) / 4 * k * bt**2 * L)))
    return out


def test_a_sample_recomputed_at_60_digits():
    """Forward pass, residual and bound at 60 digits: the bound is below the residual, and the
    library's float64 numbers agree with the 60-digit ones."""
    count = 0
    for stack, X in LB.random_networks(40, seed=11, batch=4, max_n=4, max_d=4, max_H=2, max_L=3):
        for i in range(stack.QK.shape[0]):
            model = stack.san(i)
            with mp.workdps(ref.DPS):
                hidden, _ = ref.forward(model, X[i], skip=True)
                true = [ref.norm_inf(ref.mean_centred(h)) for h in hidden]
                bound = _bound_mp(ref.weights(model)[0], model.config.d_qk, true[0])
                assert all(b <= t for b, t in zip(bound, true))
            lib = LB.lower_bound(model, X[i])
            assert lib.tolist() == pytest.approx([float(b) for b in bound], rel=1e-12)
            count += 1
    assert count == 40
    # the theorem of section 7 (Omega < 1, the number of tokens n), the same way
    for stack, X in LB.random_networks(
        40, seed=12, batch=4, max_n=4, max_d=4, max_H=2, max_L=3, omega_max=1.0
    ):
        for i in range(stack.QK.shape[0]):
            model = stack.san(i)
            n = X.shape[-2]
            with mp.workdps(ref.DPS):
                hidden, _ = ref.forward(model, X[i], skip=True)
                true = [ref.norm_inf(ref.mean_centred(h)) for h in hidden]
                bound = _bound_mp(ref.weights(model)[0], model.config.d_qk, true[0], n)
                assert all(b <= t for b, t in zip(bound, true))
            lib = LB.wide_lower_bound(model, X[i])
            assert lib.tolist() == pytest.approx([float(b) for b in bound], rel=1e-12)
            measured = stack.select(slice(i, i + 1)).residuals(X[i : i + 1])[0]
            assert measured.tolist() == pytest.approx([float(t) for t in true], rel=1e-9)
            count += 1
    assert count == 80


# ---------------------------------------------------------------- networks, SAN parity, refusals


def test_a_stack_is_the_core_san():
    stack, X = next(LB.random_networks(6, seed=5, max_L=4))
    for i in range(6):
        for skip in (True, False):
            got = stack.select(slice(i, i + 1)).hidden(X[i], skip)[-1][0]
            want = stack.san(i, skip)(X[i]).last_hidden_state
            assert torch.allclose(got, want, rtol=1e-12, atol=1e-12 * want.abs().max().item())
        k, om = LB.layer_constants(stack.san(i))
        K, OM = stack.constants()
        assert (k.max().item(), om.max().item()) == pytest.approx(
            (K[i].item(), OM[i].item()), rel=1e-12
        )


def test_layer_constants_of_a_san_read_its_heads_with_d_qk():
    net = _skip_san(3, 2, 6, 1.0, 0, value_scale=0.1)
    Q, W = rc.theory.qk_matrices(net), rc.theory.value_matrices(net)
    q = torch.minimum(Q.abs().sum(-2).amax(-1), Q.abs().sum(-1).amax(-1))
    w = W.abs().sum(-1).amax(-1)
    k, om = LB.layer_constants(net)
    assert torch.allclose(om, w.sum(-1)) and torch.allclose(k, 4 / math.sqrt(3) * (q * w).sum(-1))


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(skip=False), "skip=True"),
        (dict(mlp=8), "mlp=0"),
        (dict(layernorm="post"), "layernorm"),
        (dict(bias=True), "bias=False"),
        (dict(causal=True), "causal=False"),
    ],
)
def test_lower_bound_refuses_networks_outside_the_theorem(change, match):
    cfg = SANConfig(n_layers=2, n_heads=1, d_model=4, skip=True).replace(**change)
    with pytest.raises(ValueError, match=match):
        LB.lower_bound(SAN(cfg, seed=0), torch.randn(3, 4, dtype=torch.float64))


def test_lower_bound_refuses_large_value_maps_and_holds_below():
    X = torch.randn(5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="Omega"):
        LB.lower_bound(_skip_san(3, 2, 6, 1.0, 0), X)  # the default initialisation: Omega > 1/2
    net = _skip_san(6, 2, 6, 3.0, 0, value_scale=0.002)
    bound = LB.lower_bound(net, X)
    measured = LB.residual_inf(torch.stack(net(X).hidden_states))
    assert torch.all(measured >= bound) and bound[-1] > 0


# ---------------------------------------------------------------- the construction


def test_simplex_tokens():
    X = LB.simplex_tokens(5, 6, 3.0)
    assert LB.residual_inf(X).item() == pytest.approx(3.0, rel=1e-14)
    assert X.sum(0).abs().max() < 1e-14
    G = X @ X.T
    off = G[~torch.eye(5, dtype=torch.bool)]
    assert torch.allclose(G.diagonal(), G[0, 0].expand(5)) and torch.allclose(
        off, -G[0, 0] / 4 * torch.ones(20, dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="n - 1"):
        LB.simplex_tokens(5, 3, 1.0)
    # the Helmert coordinates, the same on every machine, with exact zeros
    X = LB.simplex_tokens(4, 8, 2.0)
    assert X[3].tolist()[2:] == [X[3, 2].item()] + [0.0] * 5 and X[3, :2].tolist() == [0.0, 0.0]
    assert X[0].tolist() == pytest.approx(
        [1.007252946612242, 0.5815377598686217, 0.4112092935191365] + [0.0] * 5, rel=1e-15
    )
    with pytest.raises(ValueError, match="GiB"):
        LB.simplex_tokens(20000, 20000, 1.0)


def test_the_construction_keeps_a_centred_simplex_and_follows_the_recursion():
    s = SETTING
    net = LB.construction(64, s["d"], s["H"], s["q"], s["omega"])
    X = LB.simplex_tokens(s["n"], s["d"], s["b0"])
    hidden = net.hidden(X)
    for h in hidden:
        h = h[0]
        assert h.mean(0).abs().max() <= 1e-14 * h.abs().max()
        big = X.abs() > 1e-8 * X.abs().max()
        ratio = h[big] / X[big]
        assert torch.allclose(
            ratio, ratio[0].expand_as(ratio), rtol=1e-10
        )  # the same factor everywhere
        assert torch.all(h[~big].abs() <= 1e-12 * h.abs().max())
    P = torch.softmax(s["q"] * X @ X.T / math.sqrt(s["d"]), dim=-1)
    assert torch.allclose(P, P.T) and torch.allclose(
        P.sum(0), torch.ones(s["n"], dtype=torch.float64)
    )
    exact = 10 ** LB.simplex_log10_ratios([-1] * 64, **s)
    measured = net.residuals(X)[0].numpy() / s["b0"]
    assert measured == pytest.approx(exact, rel=1e-11)


def test_a_centred_gaussian_input_has_no_symmetric_attention():
    """Symmetric logits do not make a symmetric P: the rows' normalisers differ, the mean moves."""
    X = torch.randn(4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    X = X - X.mean(0)
    P = torch.softmax(4 * X @ X.T / math.sqrt(8), dim=-1)
    assert (P - P.T).abs().max() > 1e-3
    out = LB.construction(1, 8, 2, 4.0, 0.15).hidden(X)[-1][0]
    assert out.mean(0).abs().max() > 1e-6


def test_the_construction_reaches_the_rate():
    """Fitted exponent over depths 16..1024 within 0.05 of -1/2, and the proposition's upper
    bound."""
    s = SETTING
    log10 = LB.simplex_log10_ratios([-1] * 1024, **s)
    L = np.arange(16, 1025)
    slope = np.polyfit(np.log(L), log10[16:] * np.log(10), 1)[0]
    assert abs(slope + 0.5) <= 0.05
    # the proposition: rho_L / rho_0 <= (1 + 2 Omega kappa rho_0^2 L)^(-1/2)
    n, d, Om = s["n"], s["d"], s["H"] * s["omega"]
    rho0 = LB.simplex_tokens(n, d, s["b0"])[0].norm().item()
    g0 = s["q"] * n * rho0**2 / ((n - 1) * math.sqrt(d))
    kappa = s["q"] * n / ((n - 1) * math.sqrt(d) * (math.exp(g0) + n - 1))
    upper = 1 / np.sqrt(1 + 2 * Om * kappa * rho0**2 * np.arange(1025))
    assert np.all(10**log10 <= upper * (1 + 1e-12))
    # and the theorem's bound below it
    k = 4 * s["H"] * s["q"] * s["omega"] / math.sqrt(d)
    bound = LB.depth_bound(s["b0"], k, Om, range(1025)).numpy() / s["b0"]
    assert np.all(10**log10 >= bound)


def test_grow_then_cancel_matches_the_forward_pass_and_is_doubly_exponential():
    s = dict(SETTING, omega=0.5, b0=1.0)  # Omega = 1: outside the regime
    X = LB.simplex_tokens(s["n"], s["d"], 1.0)
    for L in (1, 2, 3, 4):
        signs = [1] * (L - 1) + [-1]
        exact = LB.simplex_log10_ratios(signs, **s)
        fwd = LB.construction(L, s["d"], s["H"], s["q"], s["omega"], signs).residuals(X)[0].numpy()
        assert np.log10(fwd) == pytest.approx(exact, abs=1e-9)
    deep = [LB.simplex_log10_ratios([1] * (L - 1) + [-1], **s)[-1] for L in range(4, 9)]
    assert all(b / a > 3 for a, b in zip(deep, deep[1:]))


@pytest.mark.parametrize(
    "signs, omega, match",
    [([-1, 0], 0.1, "signs"), ([-1], 0.6, "H \\* omega"), ([[1, -1]], 0.1, "signs")],
)
def test_simplex_recursion_refuses_bad_input(signs, omega, match):
    with pytest.raises(ValueError, match=match):
        LB.simplex_log10_ratios(signs, 4, 8, 2, 4.0, omega, 1.0)


def test_construction_refuses_bad_signs():
    with pytest.raises(ValueError, match="signs"):
        LB.construction(3, 4, 1, 1.0, 0.1, signs=[1, -1])


# ---------------------------------------------------------------- the search


def test_project_rows_is_the_l1_projection():
    gen = torch.Generator().manual_seed(0)
    M = torch.randn(200, 7, generator=gen, dtype=torch.float64) * 2
    Pm = LS.project_rows(M, 1.5)
    norms = Pm.abs().sum(-1)
    outside = M.abs().sum(-1) > 1.5
    assert torch.all(norms <= 1.5 + 1e-12) and torch.allclose(
        norms[outside], torch.full_like(norms[outside], 1.5)
    )
    assert torch.equal(Pm[~outside], M[~outside])
    # optimality: no feasible perturbation along random directions brings a row closer to M
    for _ in range(50):
        Z = LS.project_rows(
            Pm + 0.01 * torch.randn(200, 7, generator=gen, dtype=torch.float64), 1.5
        )
        assert torch.all((Z - M).norm(dim=-1) >= (Pm - M).norm(dim=-1) - 1e-12)


@pytest.fixture(scope="module")
def found():
    return LS.search(
        [1, 2, 4], n=4, d=6, H=2, q=3.0, omega=0.2, b0=4.0, restarts=6, steps=15, seed=3
    )


def test_the_search_stays_in_its_bounds_and_never_below_the_bound(found):
    assert found.depths.tolist() == [1.0, 2.0, 4.0]
    assert np.all(found.best <= found.initial + 1e-12) and np.all(found.best > 0)
    for (stack, X), L in zip(found.networks, (1, 2, 4)):
        assert stack.QK.shape == (6, L, 2, 6, 6)
        assert stack.QK.abs().sum(-1).max() <= 3.0 * (1 + 1e-12)
        assert stack.W.abs().sum(-1).max() <= 0.2 * (1 + 1e-12)
        assert torch.allclose(LB.residual_inf(X), torch.full((6,), 4.0, dtype=torch.float64))
        assert LB.bound_check(stack, X).violations == 0
    for i in range(3):
        stack, X = found.best_network(i)
        assert stack.residuals(X)[0, -1].item() / 4.0 == pytest.approx(found.best[i], rel=1e-10)


def test_the_search_is_seeded(found):
    again = LS.search(
        [1, 2, 4], n=4, d=6, H=2, q=3.0, omega=0.2, b0=4.0, restarts=6, steps=15, seed=3
    )
    assert again.best.tolist() == found.best.tolist()


def test_the_search_starts_from_the_known_networks(found):
    """The construction's weights on two clusters, one-hot tokens and the simplex are among the
    candidates: the search reports at most what they reach, at every depth."""
    for L, best in zip((1, 2, 4), found.best):
        net = LB.construction(L, 6, 2, 3.0, 0.2)
        for kind in ("clusters", "sparse", "simplex"):
            X = LS.start_inputs(kind, 1, 4, 6)[0]
            X = X * 4.0 / LB.residual_inf(X)
            assert best <= net.residuals(X)[0, -1].item() / 4.0 * (1 + 1e-12)
    C, S, X = (LS.start_inputs(k, 3, 4, 5) for k in ("clusters", "sparse", "simplex"))
    assert C.shape == S.shape == X.shape == (3, 4, 5)
    assert C[0, :, 0].tolist() == [1.0, -1.0, 1.0, -1.0] and C[0, :, 1:].abs().max() == 0
    assert torch.equal(S[1], torch.eye(4, 5, dtype=torch.float64))
    assert torch.equal(X[2], LB.simplex_tokens(4, 5, 1.0))
    assert LS.start_inputs("simplex", 2, 5, 2).shape == (2, 5, 2)  # d < n - 1: Gaussian
    with pytest.raises(ValueError, match="kind"):
        LS.start_inputs("ring", 1, 4, 5)


def test_random_networks_at_the_bounds():
    stack, X = LS.at_the_bounds(5, 3, n=4, d=6, H=2, q=3.0, omega=0.2, b0=4.0, seed=1)
    assert stack.QK.shape == stack.W.shape == (5, 3, 2, 6, 6) and X.shape == (5, 4, 6)
    assert torch.allclose(
        stack.QK.abs().sum(-1), torch.full((5, 3, 2, 6), 3.0, dtype=torch.float64)
    )
    assert torch.allclose(stack.W.abs().sum(-1), torch.full((5, 3, 2, 6), 0.2, dtype=torch.float64))
    assert torch.allclose(LB.residual_inf(X), torch.full((5,), 4.0, dtype=torch.float64))
    assert LB.bound_check(stack, X).violations == 0
    again = LS.at_the_bounds(5, 3, n=4, d=6, H=2, q=3.0, omega=0.2, b0=4.0, seed=1)
    assert torch.equal(again[0].QK, stack.QK) and torch.equal(again[1], X)


def test_without_skips_the_searched_networks_collapse(found):
    pure = found.without_skips()
    assert pure.shape == (3,) and pure[-1] < found.best[-1]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(depths=[2, 1]), "depths"),
        (dict(depths=[]), "depths"),
        (dict(q=-1.0), "q"),
        (dict(restarts=0), "restarts"),
        (dict(seed=-1), "seed"),
    ],
)
def test_search_refuses_bad_input(kwargs, match):
    args = dict(depths=[1], n=3, d=3, H=1, q=1.0, omega=0.1, b0=1.0, restarts=2, steps=1, seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        LS.search(**args)


def test_lower_bound_and_its_search_depend_on_the_core_only():
    """torch, numpy and the core modules (real models' attention with and without skips is
    rc.real.skips, tests/test_real_skips.py)."""
    import ast
    from pathlib import Path

    core = {"_validate", "ops", "residual", "san", "paths", "theory"}
    lib = Path(rc.__file__).parent
    for name, extra in (
        ("lower_bound_theorem", set()),
        ("lower_bound", {"lower_bound_theorem"}),
        ("lower_bound_search", {"lower_bound"}),
    ):
        for node in ast.walk(ast.parse((lib / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module.split(".")[0] in core | extra, (name, node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                assert mod.split(".")[0] in {
                    "torch",
                    "numpy",
                    "math",
                    "dataclasses",
                    "__future__",
                }, (name, mod)


def test_float32_tokens_are_cast_and_integer_tokens_refused():
    """Tokens in float32 give the float64 result (cast, issue 45); integer tokens are refused."""
    stack = LB.construction(4, 3, 1, 1.0, 0.1)
    X = LB.simplex_tokens(3, 3, 1.0)
    assert LB.bound_check(stack, X.float()).worst == pytest.approx(
        LB.bound_check(stack, X.float().double()).worst, rel=1e-12
    )
    with pytest.raises(TypeError, match="X must be a floating-point tensor"):
        LB.bound_check(stack, X.round().long())
