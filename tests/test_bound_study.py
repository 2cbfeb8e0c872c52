"""rankcollapse.bound_study: the collapse bound measured, as result objects (values, figure data, glue).

The glue is checked on hand-made results whose values are known; the studies on tiny networks
(shapes, determinism, the bound never beaten)."""

import math

import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse import bound_study as bs


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_depth_glue_on_hand_made_curves():
    def curves(c, tracked2, paper2, floor):
        tracked = np.array([[0.0, -1.0, tracked2, floor], [0.0, -1.0, tracked2 - 2, floor - 2]])
        return {"forward": np.array([[0.0, -1.0, -5.0, floor]] * 2), "tracked": tracked,
                "paper": np.array([[0.0, 0.0, paper2, -9.0]] * 2), "layerwise": tracked + 1.0, "c": np.array(c)}
    study = bs.DepthStudy({1: curves([0.5, 0.25], -4.0, -2.0, -15.0), 4: curves([2.0, 3.0], -6.0, -3.0, -16.0)}, 0.2, 2)
    g = study.glue()
    assert g["collapse-H"] == (4, "{}") and g["collapse-samples"] == (2, "{}")
    assert g["collapse-c-max-1"][0] == 0.5 and g["collapse-c-max-H"][0] == 3.0
    assert g["collapse-layer2-1"][0] == pytest.approx(1e-5)  # median of -4 and -6
    assert g["collapse-bound2-H"][0] == pytest.approx(1e-3)
    assert g["collapse-floor"][0] == pytest.approx(1e-15)  # the higher of the two medians
    assert g["collapse-depth-violations"] == (0, "{}")
    study.curves[4]["tracked"][0, 3] = 5.0  # one point above the layerwise bound
    assert study.glue()["collapse-depth-violations"][0] == 1


def test_regime_glue_on_hand_made_rows():
    rows = np.array([[0.1, 0.5, -320.0], [0.1, 0.8, -100.0], [1.0, 3.0, -50.0], [10.0, 40.0, -12.0],
                     [20.0, 80.0, -2.0], [30.0, 90.0, -0.5]])
    g = bs.RegimeStudy(rows, 6).glue()
    assert g["regime-holds-n"][0] == 2 and g["regime-fails-n"][0] == 4
    assert g["regime-holds-worst"][0] == "1.0 × 10⁻¹⁰⁰"
    assert g["regime-fails-collapsed"][0] == 2 and g["regime-fails-cmax"][0] == 40.0
    assert g["regime-kept-cmin"][0] == 80.0 and g["regime-kept-scale"][0] == 20.0
    assert bs.RegimeStudy(rows[:1], 6).glue()["regime-holds-worst"][0] == "below 10⁻³⁰⁰"
    assert math.isnan(bs.RegimeStudy(rows[:2], 6).glue()["regime-kept-cmin"][0])


def test_cubic_glue_and_linear_curve_on_hand_made_results():
    depths = np.arange(1, 5)
    cubic = bs.CubicRate(depths, np.zeros((2, 4)), [1.0, 1.2], np.array([0.1, 0.1]), np.array([2.0, np.nan]))
    g = cubic.glue()
    assert g["cubic-slope"][0] == pytest.approx(1.1) and g["cubic-slope-sd"][0] == pytest.approx(0.1)
    assert g["cubic-first-factor"][0] == pytest.approx(0.1) and g["cubic-n-linear"][0] == 3
    assert g["cubic-n-cubic"][0] == 2.0
    assert (g["cubic-paper-linear"][0], g["cubic-paper-cubic"][0]) == (10, 3)  # 2^-10 and 2^-27 below 1e-3
    np.testing.assert_allclose(cubic.linear_curve(), np.log(np.log(10) * depths))


def test_tightness_glue_and_bins_on_hand_made_gaps():
    gaps = {"paper": np.arange(0.0, 101.0), "layerwise": np.array([1.0, 2.0, 3.0]), "step": np.array([0.5, 4.5])}
    t = bs.Tightness(gaps, 1234, 0)
    g = t.glue()
    assert g["tight-instances"] == (1234, "{:,}")
    assert g["tight-step-min"][0] == pytest.approx(10**0.5) and g["tight-layerwise-median"][0] == 2.0
    assert g["tight-paper-p90"][0] == pytest.approx(90.0)
    assert t.bins(11)[-1] == pytest.approx(95.0) and len(t.bins(11)) == 11


def test_centre_glue_on_hand_made_rows():
    rows = np.array([[0, 1.0, 0.5, 1.0, 0.5], [1, 0.1, 0.08, 0.2, 0.1], [2, 0.01, 0.01, 0.001, 0.004]])
    c = bs.CentreStudy(rows, 6, 4)
    g = c.glue()
    np.testing.assert_allclose(c.ratio, [0.5, 0.8, 1.0])
    assert g["opt-count"][0] == 3 and g["opt-ratio-median"][0] == pytest.approx(0.8)
    assert g["opt-violations"][0] == 1 and g["opt-violations-opt"][0] == 1  # the last row beats both
    assert g["opt-bound-ratio-median"][0] == pytest.approx(np.median([0.5, 4.0]))
    assert g["opt-bound-smaller"][0] == pytest.approx(0.5)


SMALL = dict(n_layers=3, d_model=6, n_tokens=5, seed=0)


def test_studies_on_tiny_networks_are_deterministic_and_never_beat_the_bound():
    depth = bs.depth_study(heads=(1, 2), init_scale=0.2, samples=2, generator=_gen(), **SMALL)
    again = bs.depth_study(heads=(1, 2), init_scale=0.2, samples=2, generator=_gen(), **SMALL)
    assert set(depth.curves) == {1, 2} and depth.curves[2]["tracked"].shape == (2, 4)
    assert depth.glue() == again.glue()
    assert depth.glue()["collapse-depth-violations"][0] == 0

    regime = bs.regime_study(scales=(0.2, 30.0), samples=2, n_heads=2, generator=_gen(), **SMALL)
    assert regime.rows.shape == (4, 3) and set(regime.rows[:, 0]) == {0.2, 30.0}
    assert regime.rows[:2, 1].max() < 1 < regime.rows[2:, 1].min()  # the condition holds, then fails
    assert regime.rows[:2, 2].max() < -10  # where it holds, the network collapses
    assert regime.rows[:, 2].min() >= -300  # underflow floored at 1e-300

    cubic = bs.cubic_rate_study(samples=2, n_heads=2, generator=_gen(), **SMALL)
    assert cubic.loglog.shape == (2, 3) and cubic.first_factor.shape == (2,)
    inside = (cubic.first_factor > 0) & (cubic.first_factor < 1)  # the first layer may grow
    np.testing.assert_array_equal(np.isfinite(cubic.loglog[:, 0]), inside)
    np.testing.assert_allclose(cubic.loglog[inside, 0], np.log(-np.log(cubic.first_factor[inside])))
    assert np.isfinite(cubic.loglog[:, -1]).all() and len(cubic.slopes) == 2

    tight = bs.tightness_study(30, seed=1)
    assert tight.instances == 30 and tight.violations == 0
    assert all(np.all(g > -1e-9) for g in tight.gaps.values())

    centres = bs.centre_study(samples=1, n_heads=2, generator=_gen(), **SMALL)
    assert centres.rows.shape == (4, 5)
    assert np.all((centres.ratio >= 0.5 - 1e-9) & (centres.ratio <= 1 + 1e-9))
    assert centres.glue()["opt-violations"][0] == 0 and centres.glue()["opt-violations-opt"][0] == 0


def test_a_study_reads_the_generator_it_is_given():
    """The chapter's stream: two studies in a row continue it, so the second sees new inputs."""
    gen = _gen()
    first = bs.regime_study(scales=(1.0,), samples=1, n_heads=1, generator=gen, **SMALL)
    second = bs.regime_study(scales=(1.0,), samples=1, n_heads=1, generator=gen, **SMALL)
    assert first.rows[0, 1] != second.rows[0, 1]


@pytest.mark.parametrize("call, error", [
    (lambda: bs.depth_study(heads=(), init_scale=1.0, samples=1, generator=_gen(), **SMALL), ValueError),
    (lambda: bs.depth_study(heads=(1,), init_scale=-1.0, samples=1, generator=_gen(), **SMALL), ValueError),
    (lambda: bs.regime_study(scales=(1.0,), samples=1, n_heads=1, generator=0, **SMALL), TypeError),
    (lambda: bs.cubic_rate_study(samples=0, n_heads=1, generator=_gen(), **SMALL), ValueError),
    (lambda: bs.centre_study(samples=1, n_heads=1, generator=rc.presets.Draws(0), **SMALL), TypeError),
])
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call()
