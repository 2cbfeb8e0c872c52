"""rankcollapse.theory.compare: the bound's gap to the tracked residual, the tracked relative
residual, how hard the attention is."""

import math

import pytest
import torch

import rankcollapse as rc
from rankcollapse import theory as th
from rankcollapse.residual import relative_residual, through_depth
from rankcollapse.san import SAN, SANConfig


def _net(scale=1.0, L=3, H=2, d=8, seed=0, **kw):
    return SAN(SANConfig(n_layers=L, n_heads=H, d_model=d, init_scale=scale, **kw), seed=seed)


def _X(n=6, d=8, seed=0, batch=()):
    return torch.randn(
        *batch, n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )


def test_relative_residual_matches_the_forward_pass_above_the_rounding_floor():
    model, X = _net(scale=8.0), _X()  # large weights: the residual stays far above 1e-16
    tracked = th.tracked_relative_residual(model, X)
    forward = through_depth(model(X).hidden_states, "relative")
    assert tracked.shape == (4,)
    assert torch.all(forward > 1e-6)
    torch.testing.assert_close(tracked, forward, rtol=1e-9, atol=0)
    assert tracked[0] == pytest.approx(relative_residual(X).item(), rel=1e-12)


def test_relative_residual_follows_the_collapse_below_the_floor_and_is_batched():
    model, X = _net(scale=0.2, L=4), _X(batch=(3,))
    tracked = th.tracked_relative_residual(model, X)
    forward = through_depth(model(X).hidden_states, "relative")
    assert tracked.shape == (5, 3)
    assert torch.all(tracked[-1] < 1e-30)  # doubly exponential: far below what float64 sees
    assert torch.all(forward[-1] > 1e-18)
    # each layer's value is the tracked residual over the forward pass's size
    sizes = th.tracked_residual(model, X) / tracked
    assert torch.all(torch.isfinite(sizes) & (sizes > 0))


def test_relative_residual_refuses_skip_connections():
    with pytest.raises(ValueError):
        th.tracked_relative_residual(_net(skip=True), _X())


@pytest.mark.parametrize("form", th.BOUND_FORMS)
def test_gaps_are_never_negative_on_random_instances(form):
    seen = 0
    for model, X in th.random_instances(200, seed=3):
        gap = th.bound_gaps(model, X, form)[form]
        assert gap.ndim == 1
        assert torch.all(gap > -1e-9)
        seen += gap.numel()
    assert seen > 200  # most layers are representable


def test_gaps_are_bound_minus_tracked_where_both_are_representable():
    model, X = _net(scale=0.5, L=4, H=3), _X(batch=(4,))
    gaps = th.bound_gaps(model, X)
    assert set(gaps) == set(th.BOUND_FORMS)
    tracked = th.tracked_residual(model, X, log10=True)[1:]
    for form, gap in gaps.items():
        bound = th.collapse_bound(model, X, form, log10=True)[1:]
        ok = torch.isfinite(bound) & torch.isfinite(tracked) & (tracked > -290)
        assert gap.numel() == int(ok.sum())
        torch.testing.assert_close(gap, (bound - tracked)[ok], rtol=0, atol=0)
    # a floor above every tracked residual leaves nothing; the step form never exceeds the others
    assert th.bound_gaps(model, X, "paper", floor=10.0)["paper"].numel() == 0
    assert torch.all(gaps["step"] <= gaps["layerwise"] + 1e-9)
    assert torch.all(gaps["layerwise"] <= gaps["paper"] + 1e-9)


def test_gaps_drop_layers_below_the_floor():
    model, X = _net(scale=0.05, L=6), _X()  # collapses below 1e-290 within six layers
    tracked = th.tracked_residual(model, X, log10=True)[1:]
    kept = torch.isfinite(tracked) & (tracked > -290)
    assert 0 < int(kept.sum()) < 6
    gap = th.bound_gaps(model, X, "layerwise")["layerwise"]
    assert gap.numel() == int(kept.sum())


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(forms="tight"), ValueError),
        (dict(forms=()), ValueError),
        (dict(forms=(1,)), TypeError),
        (dict(floor=math.inf), ValueError),
        (dict(floor="low"), TypeError),
    ],
)
def test_gaps_bad_arguments(kwargs, error):
    with pytest.raises(error):
        th.bound_gaps(_net(), _X(), **kwargs)


def test_attention_hardness_from_uniform_to_hard():
    """Zero query weights give uniform attention (row maximum 1/n); large weights give nearly hard
    attention; the distinct targets count the argmax tokens of the rows."""
    X = rc.theory.unit_residual_tokens(6, 8, generator=torch.Generator().manual_seed(0))
    cfg = rc.san.SANConfig(n_layers=2, n_heads=2, d_model=8)
    uniform = rc.theory.preserving_san("uniform_attention", cfg.replace(skip=True), seed=1)
    flat = rc.san.SAN(cfg, seed=1)
    flat.load_state_dict(uniform.state_dict())  # the same weights, without the skips
    h = th.attention_hardness(flat, X)
    assert h["row_max"].shape == (2, 2) and h["targets"].shape == (2, 2)
    torch.testing.assert_close(h["row_max"], torch.full((2, 2), 1 / 6, dtype=torch.float64))
    hard = th.attention_hardness(rc.san.SAN(cfg.replace(init_scale=40.0), seed=1), X)
    assert hard["row_max"].min() > 0.5
    P = torch.stack(rc.san.SAN(cfg.replace(init_scale=40.0), seed=1)(X).attentions).detach()
    expected = [[len(set(P[l, k].argmax(-1).tolist())) for k in range(2)] for l in range(2)]
    assert hard["targets"].tolist() == expected
    with pytest.raises(ValueError, match="one input"):
        th.attention_hardness(flat, X.expand(2, 6, 8))


def test_rank_one_distance_is_zero_exactly_for_equal_rows_and_the_nearest_one_s():
    g = torch.Generator().manual_seed(0)
    s = torch.softmax(torch.randn(5, dtype=torch.float64, generator=g), -1)
    assert th.rank_one_distance(s.expand(5, 5)) < 1e-15  # zero, up to the rounding of the mean
    P = torch.softmax(torch.randn(5, 5, dtype=torch.float64, generator=g), -1)
    d = th.rank_one_distance(P)
    pbar = P.mean(0)
    assert torch.isclose(d, torch.linalg.matrix_norm(P - pbar))
    for _ in range(20):  # no other 1 s^T is nearer in the Frobenius norm
        other = torch.softmax(torch.randn(5, dtype=torch.float64, generator=g), -1)
        assert torch.linalg.matrix_norm(P - other) >= d
    # l1inf: the composite norm of Delta = P - 1 pbar^T (Step 2)
    assert torch.isclose(
        th.rank_one_distance(P, norm="l1inf"), rc.residual.composite_norm(P - pbar)
    )
    assert (
        th.rank_one_distance(P).item() == torch.linalg.matrix_norm(rc.residual.res(P)).item()
    )  # as before the check
    for not_stochastic in (3 * torch.eye(3), torch.tensor([[1.5, -0.5], [0.5, 0.5]])):
        with pytest.raises(ValueError, match="P must"):
            th.rank_one_distance(not_stochastic)
    # float32 attention (rows off 1 by rounding) is accepted
    assert th.rank_one_distance(P.float()).dtype == torch.float32


def test_attention_through_depth_shapes_and_a_collapsing_network():
    model = SAN(SANConfig(n_layers=5, n_heads=2, d_model=8), seed=0)
    X = torch.randn(2, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    out = th.attention_through_depth(model, X)
    assert out["attention"].shape == (5, 2, 2, 6, 6) and out["distance"].shape == (5, 2, 2)
    assert torch.equal(out["distance"], th.rank_one_distance(out["attention"]))
    assert bool(
        (out["distance"][-1] < out["distance"][0]).all()
    )  # pure attention: towards rank one
