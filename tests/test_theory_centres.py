"""The book's collapse bound in one centre, checked against the optimal residual and against mpmath.

Issue 13: ``rc.theory`` takes the centre as an argument (the same default everywhere); the bound
with either centre is never beaten by the optimal-centre residual of the same networks; the
library's log-space bound agrees with a 60-digit recomputation (tests/mp_reference.py); the
"step" form applies the lemma to the tracked input; exact zeros are exact; and the upper bound
with skips holds and never falls.
"""

import inspect
import math

import mp_reference as ref
import mpmath as mp
import pytest
import torch

import rankcollapse as rc

OPT = rc.centering.optimal_center  # the paper's centre, a function above the core

SMALL = [  # (layers, heads, d, n, init_scale, seed): small enough for the LP and for mpmath
    (3, 1, 3, 4, 0.7, 0),
    (3, 2, 4, 5, 1.0, 1),
    (4, 2, 3, 4, 0.4, 2),
    (2, 3, 4, 6, 1.5, 3),
]


def _instance(L, H, d, n, s, seed, skip=False):
    model = rc.san.SAN(
        rc.san.SANConfig(n_layers=L, n_heads=H, d_model=d, init_scale=s, skip=skip), seed=seed
    )
    X = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(100 + seed))
    return model, X


def test_every_function_takes_the_same_centre_default():
    funcs = [
        rc.theory.gamma_details,
        rc.theory.gamma,
        rc.theory.layer_constants,
        rc.theory.collapse_bound,
        rc.theory.depth_profile,
        rc.theory.skip_bound,
    ]
    for f in funcs:
        p = inspect.signature(f).parameters
        assert "center" in p, f.__name__
        assert p["center"].default == rc.theory.DEFAULT_CENTER == "mean", f.__name__


def test_a_bad_centre_is_refused_by_name():
    model, X = _instance(*SMALL[0])
    with pytest.raises(ValueError, match="center"):
        rc.theory.collapse_bound(model, X, center="median")
    with pytest.raises(ValueError, match="center"):
        rc.theory.skip_bound(_instance(*SMALL[0], skip=True)[0], X, center="middle")


@pytest.mark.parametrize("center", ["mean", OPT], ids=["mean", "optimal"])
@pytest.mark.parametrize("form", ["paper", "layerwise", "step"])
def test_bound_in_each_centre_is_never_beaten_by_the_optimal_residual(center, form):
    checked = 0
    for spec in SMALL:
        model, X = _instance(*spec)
        bound = rc.theory.collapse_bound(model, X, form, log10=True, center=center)
        for l, h in enumerate(model(X).hidden_states):
            r_opt = rc.residual.composite_norm(rc.residual.res(h, center=OPT)).item()
            if r_opt < 1e-13 * rc.residual.composite_norm(h).item():
                continue  # below the forward pass's rounding floor: the mpmath test covers it
            assert math.log10(r_opt) <= bound[l].item() + 1e-9, (spec, center, form, l)
            checked += 1
    assert checked >= 8


def test_optimal_centre_bound_starts_from_the_optimal_residual():
    model, X = _instance(*SMALL[1])
    r_opt = rc.residual.composite_norm(rc.residual.res(X, center=OPT))
    r_mean = rc.residual.composite_norm(rc.residual.res(X))
    assert torch.isclose(rc.theory.collapse_bound(model, X, center=OPT)[0], r_opt)
    assert torch.isclose(rc.theory.collapse_bound(model, X)[0], r_mean)
    assert r_opt <= r_mean  # the optimal centre is the best one


@pytest.mark.parametrize("spec", SMALL)
def test_library_agrees_with_60_digit_recomputation(spec):
    model, X = _instance(*spec)
    hidden, _ = ref.forward(model, X)
    with mp.workdps(ref.DPS):
        true = ref.residuals(hidden)
        mp_bound = ref.layerwise_bound(model, X)
        mp_c = ref.layer_constants(model, X)
    # the library's constants, tracked residual and log-space bound, against the 60-digit ones
    c = rc.theory.layer_constants(model, X)
    for l, cl in enumerate(mp_c):
        assert abs(c[l].item() / float(cl) - 1) < 1e-9, (spec, l)
    tracked = rc.theory.tracked_residual(model, X)
    bound = rc.theory.collapse_bound(model, X, "layerwise", log10=True)
    compared = 0
    for l in range(len(true)):
        log_true = float(mp.log10(true[l]))
        if log_true > -290:  # float64 holds it: the tracked residual must match to 1e-9
            assert abs(tracked[l].item() / float(true[l]) - 1) < 1e-9, (spec, l)
            compared += 1
        assert abs(bound[l].item() - float(mp.log10(mp_bound[l]))) < 1e-9 * max(
            1.0, abs(bound[l].item())
        )
        # and the bound is never beaten by the exact residual, far below float64's floor too
        assert log_true <= bound[l].item() + 1e-9, (spec, l)
    assert compared >= 3


def test_step_form_uses_the_tracked_input_below_the_rounding_floor():
    # deep enough that the forward pass sits at float64's floor while the tracked residual falls on
    model = rc.san.SAN(rc.san.SANConfig(n_layers=5, n_heads=2, d_model=6, init_scale=0.5), seed=4)
    X = rc.theory.unit_residual_tokens(8, 6, generator=torch.Generator().manual_seed(4))
    det = rc.theory.gamma_details(model, X)
    # the floor is reached: the forward pass's residual is rounding noise there (here it is even
    # an exact 0, which a step form fed from the forward pass turned into a bound of 0: violated)
    f, t = det["forward_residual"][-2], det["residual"][-2]
    assert t > 0 and not torch.isclose(f, t, rtol=0.5, atol=0.0)
    step = rc.theory.collapse_bound(model, X, "step", log10=True)
    c = rc.theory.layer_constants(model, X)
    tracked = rc.theory.tracked_residual(model, X)
    for l in range(1, 6):
        if tracked[l].item() == 0 or tracked[l - 1].item() == 0:
            continue  # underflowed below 1e-308: nothing to compare in float64
        expected = math.log10(c[l - 1].item()) + 3 * math.log10(tracked[l - 1].item())
        assert abs(step[l].item() - expected) < 1e-9 * abs(expected), l
        assert math.isfinite(step[l].item())
        assert math.log10(tracked[l].item()) <= step[l].item() + 1e-9


def test_exact_zero_residual_gives_an_exact_zero_bound():
    model, _ = _instance(*SMALL[1])
    X = torch.ones(5, 4, dtype=torch.float64) * torch.tensor(
        [1.0, -2.0, 3.0, 0.5], dtype=torch.float64
    )
    for center in ("mean", OPT):
        for form in rc.theory.BOUND_FORMS:
            b = rc.theory.collapse_bound(model, X, form, log10=True, center=center)
            assert torch.all(torch.isneginf(b)), (center, form, b)
            assert torch.all(rc.theory.collapse_bound(model, X, form, center=center) == 0)
    assert torch.all(rc.theory.tracked_residual(model, X) == 0)


def test_zero_constant_and_huge_constant_give_no_nan():
    model, X = _instance(*SMALL[1])
    with torch.no_grad():
        for b in model.layers:
            b.W_V.zero_()  # beta = 0: every constant is 0
    for form in rc.theory.BOUND_FORMS:
        b = rc.theory.collapse_bound(model, X, form, log10=True)
        assert not torch.isnan(b).any(), form
        assert torch.isfinite(b[0]) and torch.all(torch.isneginf(b[1:])), (form, b)
    big, Xb = _instance(3, 2, 4, 5, 30.0, 5)
    for form in rc.theory.BOUND_FORMS:
        b = rc.theory.collapse_bound(big, Xb * 1e3, form, log10=True)
        assert not torch.isnan(b).any() and torch.all(b[1:] > b[0]), (form, b)


@pytest.mark.parametrize("center", ["mean", OPT], ids=["mean", "optimal"])
def test_skip_bound_holds_and_never_falls(center):
    for L, H, d, n, s, seed in SMALL:
        model, X = _instance(L, H, d, n, s, seed, skip=True)
        b = rc.theory.skip_bound(model, X, log10=True, center=center)
        assert torch.all(b[1:] >= b[:-1])  # every factor is at least one
        for l, h in enumerate(model(X).hidden_states):
            r = rc.residual.composite_norm(rc.residual.res(h, center=center)).item()
            assert math.log10(r) <= b[l].item() + 1e-9, (center, seed, l)


def test_skip_bound_is_exact_for_zero_values_and_refuses_other_models():
    cfg = rc.san.SANConfig(n_layers=4, n_heads=2, d_model=4, skip=True)
    model = rc.theory.preserving_san("zero_value", cfg, seed=0)
    X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    r0 = rc.residual.composite_norm(rc.residual.res(X))
    assert torch.allclose(rc.theory.skip_bound(model, X), r0.expand(5))
    with pytest.raises(ValueError, match="skip"):
        rc.theory.skip_bound(rc.san.SAN(cfg.replace(skip=False), seed=0), X)
