"""rankcollapse.later.phases: attention entropy and relative residual on one grid of query/key scale
and skip strength (post-LayerNorm)."""

import math

import numpy as np
import pytest
import torch

import rankbook as book
import rankcollapse as rc
from rankcollapse.later import phases as ph

CFG = rc.san.SANConfig(n_layers=4, n_heads=2, d_model=8)


def _x(seed=0, n=7, d=8):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_entropy_of_uniform_and_one_hot_rows():
    n = 6
    assert torch.allclose(
        ph.attention_entropy(torch.full((n, n), 1 / n, dtype=torch.float64)),
        torch.full((n,), math.log(n), dtype=torch.float64),
    )
    assert torch.equal(
        ph.attention_entropy(torch.eye(n, dtype=torch.float64)), torch.zeros(n, dtype=torch.float64)
    )
    P = torch.softmax(_x(1, 5, 5), dim=-1)
    assert torch.allclose(ph.attention_entropy(P), -(P * P.log()).sum(dim=-1))  # parity, no zeros


def test_entropy_is_log_n_at_zero_query_key_weights():
    X = _x()
    model = ph.scaled_qk_san(CFG, 0.0, seed=1)
    for strength in (0.0, 1.0):
        _, atts = ph.post_ln_states(model, X, strength)
        for P in atts:
            assert torch.allclose(
                ph.attention_entropy(P), torch.full((2, 7), math.log(7), dtype=torch.float64)
            )


def test_first_layer_entropy_falls_with_scale_to_zero():
    """The first layer's input does not depend on the scale; softmax(s^2 z) has entropy decreasing
    in s."""
    X = _x(2)
    ents = []
    for s in (0.5, 1.0, 2.0, 4.0, 8.0, 32.0):
        _, atts = ph.post_ln_states(ph.scaled_qk_san(CFG, s, seed=2), X, 1.0)
        ents.append(ph.attention_entropy(atts[0]))
    for a, b in zip(ents, ents[1:]):
        assert torch.all(b <= a + 1e-12)
    assert ents[-1].max() < 0.05 * math.log(7)


def test_strength_zero_and_one_are_the_core_networks():
    """Parity with the core SAN: alpha = 0 is post-LN without skips, alpha = 1 post-LN with
    skips."""
    X = _x(3)
    model = ph.scaled_qk_san(CFG, 1.5, seed=5)
    for strength, skip in ((0.0, False), (1.0, True)):
        core = rc.san.SAN(CFG.replace(layernorm="post", skip=skip), seed=5)
        with torch.no_grad():
            for block in core.layers:
                block.W_Q.mul_(1.5)
                block.W_K.mul_(1.5)
            want = core(X)
        states, atts = ph.post_ln_states(model, X, strength)
        for a, b in zip(states, want.hidden_states):
            assert torch.allclose(a, b, atol=1e-12)
        for a, b in zip(atts, want.attentions):
            assert torch.allclose(a, b, atol=1e-12)


def test_uniform_attention_without_skip_collapses_in_one_layer():
    states, _ = ph.post_ln_states(ph.scaled_qk_san(CFG, 0.0, seed=0), _x(), 0.0)
    assert rc.residual.relative_residual(states[1], norm="fro") < 1e-12


def _study():
    return ph.phase_study(
        scales=[0.0, 1.0, 16.0],
        strengths=[0.0, 1.0, 4.0],
        n_layers=8,
        n_heads=2,
        d_model=16,
        n_tokens=8,
        samples=3,
        seed=0,
        generator=torch.Generator().manual_seed(0),
    )


def test_the_phase_picture_has_both_collapses():
    r = _study()
    assert r.entropy.shape == r.rho.shape == (3, 3)
    assert np.allclose(r.entropy[0], 1.0)  # s = 0: uniform attention
    assert r.rho[0, 0] < 1e-10  # s = 0, no skip: rank collapse
    assert r.rho[0, -1] > ph.RANK_LEVEL  # a strong skip avoids it
    assert np.all(r.entropy[-1, 1:] < ph.ENTROPY_LEVEL)  # large s: entropy collapse
    lab = r.phases()
    assert lab[0, 0] == "rank collapse" and lab[-1, -1] == "entropy collapse"
    assert r.critical_strength(0) == 4.0 or r.critical_strength(0) == 1.0
    assert r.entropy_large() == r.entropy[-1, 1:].max() < ph.ENTROPY_LEVEL


def test_the_study_is_deterministic():
    a, b = _study(), _study()
    assert np.array_equal(a.rho, b.rho) and np.array_equal(a.entropy, b.entropy)
    assert a.phases().size == 9


def test_crossing():
    x = [0.5, 1.0, 2.0, 4.0]
    assert ph.crossing(x, [1e-4, 1e-2, 1e-1, 0.5], 1e-2) == pytest.approx(1.0)
    # halfway in log y between 1e-3 and 1e-1 is halfway in log x between 1 and 2
    assert ph.crossing(x, [1e-4, 1e-3, 1e-1, 0.5], 1e-2) == pytest.approx(math.sqrt(2))
    assert math.isnan(ph.crossing(x, [0.1, 0.2, 0.3, 0.4], 1e-2))  # above at the first point
    assert math.isnan(ph.crossing(x, [1e-4] * 4, 1e-2))  # never reached
    with pytest.raises(ValueError, match="x"):
        ph.crossing([0.0, 1.0], [0.1, 0.2], 0.1)


def _depths(**kw):
    args = dict(
        depths=(2, 4, 8),
        scales=(0.0, 16.0),
        strengths=(0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0),
        ratios=(0.1, 0.3, 1.0, 3.0),
        n_heads=2,
        d_model=16,
        n_tokens=8,
        samples=3,
        seed=0,
        generator=torch.Generator().manual_seed(0),
    )
    return ph.depth_study(**(args | kw))


def test_depth_study_continues_the_grid_and_scales_alpha_with_depth():
    """Depth 2 at fixed alpha is phase_study's grid of depth 2 (the same networks and inputs); the
    scaled rows at depth L are the fixed strengths a sqrt(L)."""
    d = _depths()
    assert d.rho_fixed.shape == (2, 3, 7) and d.rho_scaled.shape == (2, 3, 4)
    grid = ph.phase_study(
        scales=[0.0, 16.0],
        strengths=d.strengths,
        n_layers=2,
        n_heads=2,
        d_model=16,
        n_tokens=8,
        samples=3,
        seed=0,
        generator=torch.Generator().manual_seed(0),
    )
    assert np.allclose(d.rho_fixed[:, 0], grid.rho) and np.allclose(
        d.entropy_fixed[:, 0], grid.entropy
    )
    # a = 1 at depth 4 is alpha = 2: the same networks and inputs
    assert d.rho_scaled[0, 1, 2] == pytest.approx(d.rho_fixed[0, 1, 4])
    # at s = 0 a fixed alpha loses residual with depth: the critical alpha grows
    crit = d.critical(0)
    assert np.all(d.rho_fixed[0, -1] < d.rho_fixed[0, 0])
    assert np.isfinite(crit).all() and np.all(np.diff(crit) > 0)
    assert np.array_equal(
        crit, [ph.crossing(d.strengths, r, ph.RANK_LEVEL) for r in d.rho_fixed[0]]
    )
    fig = book.plotting.later.depth_figure(d)
    assert len(fig.axes) == 3
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_depth_study_refuses_bad_grids():
    with pytest.raises(ValueError, match="depths"):
        _depths(depths=(4, 2))
    with pytest.raises(ValueError, match="strengths"):
        _depths(strengths=(0.0, 1.0))
    with pytest.raises(ValueError, match="ratios"):
        _depths(ratios=(1.0, 0.5))
    with pytest.raises(TypeError, match="generator"):
        _depths(generator=0)


def test_the_chapter_presets_continue_the_grid():
    """The later chapter's depth study runs phase's networks (sizes, first depth, end scales)."""
    for mode in ("fast", "full"):
        p = book.presets.PRESETS["later"][mode]
        grid, deep = p["phase"], p["phase_depth"]
        assert deep["depths"][0] == grid["n_layers"] and deep["depths"][-1] >= 4 * deep["depths"][0]
        assert deep["scales"] == (grid["scales"][0], grid["scales"][-1])
        assert all(deep[k] == grid[k] for k in ("n_heads", "d_model", "n_tokens", "samples"))
        assert max(p["grad_depths"]) >= 4 * min(p["grad_depths"])
        assert (
            p["lam_depths"][-1] == p["lam"]["n_layers"]
            and p["lam_depths"][-1] >= 4 * p["lam_depths"][0]
        )


def test_phase_labels_on_hand_made_grids():
    r = ph.PhaseResult(
        np.array([0.0, 1.0]),
        np.array([0.0, 1.0]),
        np.array([[1.0, 1.0], [0.1, 0.1]]),
        np.array([[1e-9, 0.5], [1e-9, 0.5]]),
        4,
        8,
        1,
    )
    assert r.phases().tolist() == [["rank collapse", "neither"], ["both", "entropy collapse"]]
    assert r.critical_strength(0) == 1.0
    r.rho[0, 1] = 0.0
    assert math.isnan(r.critical_strength(0))


def test_figure_has_three_panels_and_colourbars():
    import matplotlib.pyplot as plt

    fig = book.plotting.later.phase_figure(_study())
    assert len(fig.axes) == 5  # three panels, two colour bars
    plt.close(fig)


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        ph.attention_entropy(torch.ones(2, 3))
    with pytest.raises(ValueError, match="non-negative"):
        ph.attention_entropy(-torch.eye(2))
    with pytest.raises(ValueError, match="qk_scale"):
        ph.scaled_qk_san(CFG, -1.0, seed=0)
    with pytest.raises(ValueError, match="layernorm='post'"):
        ph.post_ln_states(rc.san.SAN(CFG, seed=0), _x(), 1.0)
    with pytest.raises(ValueError, match="strengths"):
        ph.phase_study(
            scales=[0.0],
            strengths=[1.0, 0.5],
            n_layers=2,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        )
