"""Theorems 2.2/2.3 as the book derives them (rankcollapse.theory): bounds never violated, and not
vacuous."""

import math

import pytest
import torch

import rankcollapse as rc
from rankcollapse import theory as th
from rankcollapse.residual import composite_norm, res


def _random_instances(count, seed=0, batch=10):
    """``count`` random instances where the theorem's hypotheses hold (see
    theory.random_instances)."""
    return th.random_instances(count, seed=seed, batch=batch)


def _measured(model, X):
    out = model(X)
    r = torch.stack([composite_norm(res(h)) for h in out.hidden_states])
    size = torch.stack([composite_norm(h) for h in out.hidden_states])
    return r, size


@pytest.mark.parametrize("form", th.BOUND_FORMS)
def test_bound_never_violated_on_1000_random_instances(form):
    checked = 0
    for model, X in _random_instances(1000, seed=1):
        r, size = _measured(model, X)
        bound = th.collapse_bound(model, X, form=form)
        # float64 cannot see a residual below ~1e-16 of the tokens' size: allow that much
        assert torch.all(r <= bound * (1 + 1e-9) + 1e-12 * size), (form, model.config, r, bound)
        checked += X.shape[0]
    assert checked >= 1000


def test_tracked_residual_never_exceeds_the_layerwise_bound():
    """The accurately tracked residual (no float64 floor) obeys the bound far below 1e-16 too."""
    for model, X in _random_instances(1000, seed=2):
        tr = th.tracked_residual(model, X)
        bound = th.collapse_bound(model, X, form="layerwise")
        ok = torch.isfinite(bound) & (bound > 1e-280)
        assert torch.all(tr[ok] <= bound[ok] * (1 + 1e-9)), (model.config, tr, bound)


def test_tracked_residual_matches_the_forward_pass_above_rounding():
    for model, X in _random_instances(200, seed=3):
        r, size = _measured(model, X)
        tr = th.tracked_residual(model, X)
        visible = r > 1e-8 * size
        assert torch.allclose(tr[visible], r[visible], rtol=1e-6), (model.config, tr, r)


@pytest.mark.parametrize("H", [1, 3])
def test_bound_is_not_vacuous_for_small_weights(H):
    """Small weights, a normalised input, depth >= 2: the bound is below the input residual."""
    g = torch.Generator().manual_seed(5)
    for seed in range(20):
        model = rc.san.SAN(
            rc.san.SANConfig(n_layers=4, n_heads=H, d_model=8, init_scale=0.3), seed=seed
        )
        X = torch.randn(8, 8, generator=g, dtype=torch.float64)
        X = X / composite_norm(res(X))  # ||res(X)|| = 1
        bound = th.collapse_bound(model, X, form="paper")
        r0 = composite_norm(res(X))
        assert torch.all(bound[2:] < r0), bound
        r, _ = _measured(model, X)
        assert torch.all(r <= bound * (1 + 1e-9) + 1e-15)


def test_beta_is_the_product_of_the_two_norms():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=2, d_model=6, d_qk=4, d_v=3), seed=0)
    b = th.beta(model)
    assert b.shape == (2, 2)
    blk = model.layers[1]
    Wqk = blk.W_Q[1] @ blk.W_K[1].T
    Wv = blk.W_V[1] @ blk.W_O[1]
    n1 = lambda A: A.abs().sum(0).max()  # noqa: E731
    ninf = lambda A: A.abs().sum(1).max()  # noqa: E731
    want = n1(Wqk) * torch.sqrt(n1(Wv) * ninf(Wv))
    assert torch.isclose(b[1, 1], want.detach())


def test_gamma_of_uniform_attention_and_collapsed_input_is_one():
    """W_Q = 0 gives uniform attention (column sums 1); then gamma = kappa(eps) = 1 only if E = 0
    too."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=1, n_heads=1, d_model=4), seed=0)
    with torch.no_grad():
        model.layers[0].W_Q.zero_()
    det = th.gamma_details(model, torch.randn(5, 4, dtype=torch.float64))
    assert torch.allclose(det["column_sum"], torch.ones(1, dtype=torch.float64))
    assert torch.allclose(det["gamma"], torch.ones(1, dtype=torch.float64))
    assert torch.allclose(det["nu"], torch.ones(1, dtype=torch.float64))


def test_bound_shapes_batched_and_log10():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=3, n_heads=2, d_model=4), seed=0)
    X = torch.randn(2, 5, 6, 4, dtype=torch.float64)
    assert th.collapse_bound(model, X).shape == (4, 2, 5)
    assert th.gamma(model, X).shape == (3, 2, 5)
    assert th.tracked_residual(model, X).shape == (4, 2, 5)
    x1 = X[0, 0]
    assert th.collapse_bound(model, x1).shape == (4,)
    assert torch.allclose(
        th.collapse_bound(model, x1, log10=True), torch.log10(th.collapse_bound(model, x1))
    )
    assert torch.allclose(th.collapse_bound(model, x1)[0], composite_norm(res(x1)))


def test_paper_form_is_never_tighter_than_layerwise():
    for model, X in _random_instances(50, seed=4):
        p = th.collapse_bound(model, X, "paper", log10=True)
        lw = th.collapse_bound(model, X, "layerwise", log10=True)
        ok = torch.isfinite(p) & torch.isfinite(lw)
        assert torch.all(lw[ok] <= p[ok] + 1e-9)


@pytest.mark.parametrize(
    "change, word",
    [
        (dict(skip=True), "skip"),
        (dict(mlp=8), "MLP"),
        (dict(layernorm="post"), "LayerNorm"),
        (dict(bias=True), "bias"),
    ],
)
def test_models_outside_the_theorem_are_refused(change, word):
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, d_model=4, **change), seed=0)
    X = torch.randn(3, 4, dtype=torch.float64)
    for fn in (th.gamma, th.collapse_bound, th.tracked_residual):
        with pytest.raises(ValueError, match=word):
            fn(model, X)
    th.beta(model)  # beta is a property of the weights: defined for any SAN


def test_bad_input_is_refused():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=1, d_model=4), seed=0)
    with pytest.raises(TypeError, match="model"):
        th.beta("not a model")
    with pytest.raises(ValueError, match="features"):
        th.collapse_bound(model, torch.randn(3, 5))
    with pytest.raises(ValueError, match="form"):
        th.collapse_bound(model, torch.randn(3, 4), form="tight")
    with pytest.raises(ValueError, match="NaN"):
        th.gamma(model, torch.full((3, 4), float("nan")))


# ----------------------------------------------------------------- skip connections


@pytest.mark.parametrize("family", th.PRESERVING_FAMILIES)
@pytest.mark.parametrize("scale", [1e-3, 1.0])
def test_preserving_families_keep_the_residual_for_100_layers(family, scale):
    cfg = rc.san.SANConfig(n_layers=100, n_heads=2, d_model=8, skip=True)
    model = th.preserving_san(family, cfg, seed=0, scale=scale)
    X = th.preserving_input(
        torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    )
    out = model(X)
    r = torch.stack([composite_norm(res(h)) for h in out.hidden_states])
    size = torch.stack([composite_norm(h) for h in out.hidden_states])
    # exact in exact arithmetic; in float64 the residual is known to ~1e-16 of the tokens' size
    # (which grows with depth when the value maps move the common part of the tokens)
    assert torch.all(r >= r[0] * (1 - 1e-12) - 1e-13 * size), r
    b = th.beta(model)
    if family == "reserved_subspace":
        assert (b > 0).all() and torch.all(b <= b.max())
        # the tokens do move, and attention is not uniform
        assert not torch.allclose(out.last_hidden_state, X)
        assert not torch.allclose(out.attentions[0], torch.full_like(out.attentions[0], 1 / 6))
    else:
        assert (b == 0).all()
    if family == "zero_value":
        assert torch.equal(out.last_hidden_state, X)


def test_reserved_subspace_beta_scales_to_zero():
    cfg = rc.san.SANConfig(n_layers=3, n_heads=2, d_model=8, skip=True)
    b1 = th.beta(th.preserving_san("reserved_subspace", cfg, seed=0, scale=1.0)).max()
    b2 = th.beta(th.preserving_san("reserved_subspace", cfg, seed=0, scale=1e-4)).max()
    assert math.isclose(float(b2), float(b1) * 1e-4, rel_tol=1e-9)


def test_preserving_san_refuses_models_without_skip():
    with pytest.raises(ValueError, match="skip"):
        th.preserving_san("zero_value", rc.san.SANConfig(n_layers=2, d_model=4), seed=0)
    with pytest.raises(ValueError, match="family"):
        th.preserving_san("identity", rc.san.SANConfig(n_layers=2, d_model=4, skip=True), seed=0)


def test_search_smallest_ratio_keeps_weight_scale_and_never_reports_worse_than_start():
    cfg = rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4, skip=True, init_scale=0.5)
    X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    found = th.search_smallest_ratio(cfg, X, steps=5, restarts=2, seed=0)
    assert len(found["initial"]) == len(found["final"]) == 2
    assert all(f <= i * (1 + 1e-12) for i, f in zip(found["initial"], found["final"]))
    assert found["best"] == min(found["final"])
    with pytest.raises(ValueError, match="skip"):
        th.search_smallest_ratio(cfg.replace(skip=False), X, steps=1, restarts=1, seed=0)
    with pytest.raises(ValueError, match="residual"):
        th.search_smallest_ratio(
            cfg, torch.ones(5, 4, dtype=torch.float64), steps=1, restarts=1, seed=0
        )


def test_tracked_residual_reaches_below_1e_150():
    """The composite norm of a tiny residual is taken as sqrt * sqrt: no underflow of the
    product."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=5, n_heads=1, d_model=8, init_scale=0.3), seed=0)
    X = torch.randn(8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    X = X / composite_norm(res(X))
    tr = th.tracked_residual(model, X, log10=True)
    assert torch.isfinite(tr).sum() >= 4 and tr[torch.isfinite(tr)].min() < -150


def test_layer_constants_and_depth_profile():
    gen = torch.Generator().manual_seed(11)
    cfg = rc.san.SANConfig(n_layers=3, n_heads=2, d_model=8, init_scale=0.3)
    model = rc.san.SAN(cfg, seed=4)
    X = rc.theory.unit_residual_tokens(6, 8, generator=gen)
    assert rc.residual.composite_norm(rc.residual.res(X)).item() == pytest.approx(1.0)
    c = rc.theory.layer_constants(model, X)
    det = rc.theory.gamma_details(model, X)
    assert torch.allclose(c, 4 * det["gamma"] * det["beta"] * 2 / math.sqrt(cfg.d_qk))
    prof = rc.theory.depth_profile(model, X)
    assert set(prof) == {"size", "forward", "tracked", "paper", "layerwise", "c"}
    assert prof["forward"].shape == (4,) and prof["c"] == c.max()
    sizes = torch.stack([composite_norm(h) for h in model(X).hidden_states]).detach()
    torch.testing.assert_close(prof["size"], torch.log10(sizes))
    # log10 constants: the same numbers, and finite where the constants overflow float64
    torch.testing.assert_close(rc.theory.layer_constants(model, X, log10=True), torch.log10(c))
    big = rc.san.SAN(cfg.replace(init_scale=40.0, n_layers=6), seed=4)
    logc = rc.theory.layer_constants(big, X, log10=True)
    assert torch.isfinite(logc).all() and logc.max() > 400  # c itself would be inf
    assert torch.isinf(rc.theory.layer_constants(big, X)).any()
    # the bound is never below the exactly tracked residual, layer by layer
    assert (prof["tracked"] <= prof["layerwise"] + 1e-9).all()
    assert (prof["tracked"] <= prof["paper"] + 1e-9).all()
    with pytest.raises(ValueError, match="n"):
        rc.theory.unit_residual_tokens(1, 8, generator=gen)


# ------------------------------------------------- log space, counts, flags (issue 11)


def _old_log10_bound(model, X, form):
    """The bound as computed before: log of the product c_l, +inf where kappa overflows."""
    det = th.gamma_details(model, X)
    c = 4 * det["gamma"] * det["beta"].reshape((-1,) + (1,) * (det["gamma"].ndim - 1))
    c = c * model.config.n_heads / math.sqrt(model.config.d_qk)
    return torch.log(c), det


@pytest.mark.slow
def test_log_bound_is_finite_where_the_product_overflows():
    """Instances whose eps_l passes ~236 overflow kappa, c_l and so the bound's log form (it was
    +inf)."""
    overflowed = 0
    for model, X in _random_instances(400, seed=0):
        logc_old, det = _old_log10_bound(model, X, "paper")
        for form in th.BOUND_FORMS:
            b = th.collapse_bound(model, X, form, log10=True)
            assert not torch.isnan(b).any() and not (b == math.inf).any(), (form, model.config)
        b = th.collapse_bound(model, X, "layerwise", log10=True)
        tr = th.tracked_residual(model, X, log10=True)
        ok = torch.isfinite(tr)
        assert (tr[ok] <= b[ok] + 1e-9 * b[ok].abs().clamp_min(1)).all()
        if not torch.isfinite(logc_old).all():
            overflowed += 1
        else:  # where nothing overflowed, the log of the product as before, bit for bit
            from rankcollapse.theory.bound import _bound

            assert torch.equal(b, _bound(logc_old, det, "layerwise") / math.log(10))
    assert overflowed >= 3  # seed 0 has such instances: the test exercises the overflow


def test_log_kappa_matches_the_closed_form_for_large_eps():
    from rankcollapse.theory.bound import log_kappa

    eps = torch.tensor([0.0, 1e-8, 0.3, 9.99, 10.0, 300.0, 1e5], dtype=torch.float64)
    got = log_kappa(eps)
    for e, g in zip(eps.tolist(), got.tolist()):
        t = 2 * e
        want = (
            e
            if t == 0
            else (math.log(math.sinh(t) / t) + e if t < 700 else t - math.log(2) - math.log(t) + e)
        )
        assert g == pytest.approx(want, rel=1e-13, abs=1e-15)


def test_random_instances_yields_exactly_count_inputs():
    for count, batch in ((15, 10), (10, 10), (3, 10), (1000, 10), (7, 3)):
        sizes = [X.shape[0] for _, X in th.random_instances(count, seed=0, batch=batch)]
        assert sum(sizes) == count and all(s == batch for s in sizes[:-1])
    # a multiple of batch gives the same instances as before the change
    first = next(iter(th.random_instances(20, seed=3)))
    again = next(iter(th.random_instances(25, seed=3)))
    assert torch.equal(first[1], again[1])
    with pytest.raises(ValueError, match="count must be >= 1"):
        th.random_instances(0, seed=0)
    with pytest.raises(ValueError, match="max_n"):
        th.random_instances(10, seed=0, max_n=10**6)


def test_theory_flags_are_validated():
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=1, d_model=4), seed=0)
    X = torch.randn(3, 4, dtype=torch.float64)
    with pytest.raises(TypeError, match="log10 must be True or False"):
        th.collapse_bound(model, X, "paper", log10="no")
    with pytest.raises(TypeError, match="log10 must be True or False"):
        th.tracked_residual(model, X, log10=1)
    with pytest.raises(ValueError, match=r"form must be one of"):
        th.collapse_bound(model, X, "cubic")


def test_depth_profile_equals_its_parts():
    """depth_profile shares one forward pass; its entries equal the separate calls exactly."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=4, n_heads=2, d_model=8), seed=2)
    X = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    prof = th.depth_profile(model, X)
    assert torch.equal(prof["paper"], th.collapse_bound(model, X, "paper", log10=True))
    assert torch.equal(prof["layerwise"], th.collapse_bound(model, X, "layerwise", log10=True))
    assert torch.equal(prof["c"], th.layer_constants(model, X).max())
    hidden = model(X).hidden_states
    assert torch.equal(
        prof["forward"], torch.stack([torch.log10(composite_norm(res(h))) for h in hidden])
    )


@pytest.mark.parametrize(
    "option, words",
    [
        ({"causal": True}, "causal mask"),
        ({"window": 2}, "sliding-window"),
        ({"attention": "relative"}, "'relative'"),
        ({"final_layernorm": True}, "final LayerNorm"),
    ],
)
def test_the_bound_refuses_what_the_proof_does_not_cover(option, words):
    """The SAN options added for real transformers (a decoder's causal mask, XLNet's relative
    attention, GPT-2's final LayerNorm) take a network outside the theorems: refused by name."""
    model = rc.san.SAN(rc.san.SANConfig(n_layers=2, n_heads=1, d_model=8, **option), seed=0)
    with pytest.raises(ValueError, match=words):
        rc.theory.check_pure_attention(model)
