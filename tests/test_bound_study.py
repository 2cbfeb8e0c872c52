"""rankcollapse.bound_study: the collapse bound measured, as result objects (values, figure data,
numbers).

The numbers are checked on hand-made results whose values are known; the studies on tiny
networks (shapes, determinism, the bound never beaten). The library returns numbers only: the
words that state them, and the claims they decide, are the chapter's."""

import math

import numpy as np
import pytest
import torch

import rankbook as book
from rankcollapse import bound_study as bs
from rankcollapse import cubic_rate as cr


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_depth_numbers_on_hand_made_curves():
    def curves(c, tracked2, paper2, floor):
        tracked = np.array([[0.0, -1.0, tracked2, floor], [0.0, -1.0, tracked2 - 2, floor - 2]])
        return {
            "size": np.array([[0.0, -1.0, -2.0, -3.0], [0.0, -1.5, -2.5, -3.5]]),
            "forward": np.array([[0.0, -1.0, -5.0, floor]] * 2),
            "tracked": tracked,
            "paper": np.array([[0.0, 0.0, paper2, -9.0]] * 2),
            "layerwise": tracked + 1.0,
            "c": np.array(c),
        }

    study = bs.DepthStudy(
        {1: curves([0.5, 0.25], -4.0, -2.0, -15.0), 4: curves([2.0, 3.0], -6.0, -3.0, -16.0)},
        0.2,
        2,
    )
    g = study.numbers()
    assert g["H"] == 4 and g["samples"] == 2 and g["init_scale"] == 0.2
    assert g["c_max_1"] == 0.5 and g["c_max_H"] == 3.0
    assert g["layer2_1"] == pytest.approx(1e-5)  # median of -4 and -6
    assert g["bound2_H"] == pytest.approx(1e-3)
    assert g["floor"] == pytest.approx(1e-15)  # the higher of the two medians
    assert g["violations"] == 0
    # relative = tracked - size: median of (-4 + 2) and (-6 + 2.5) at layer 2
    assert g["relative2_1"] == pytest.approx(10 ** np.median([-2.0, -3.5]))
    assert g["size_step_1"] == pytest.approx(-1.0)  # steps -1,-1,-1 and -1.5,-1,-1
    study.curves[4]["tracked"][0, 3] = 5.0  # one point above the layerwise bound
    assert study.numbers()["violations"] == 1
    assert all(isinstance(v, (int, float)) for v in g.values())  # numbers, no words


def test_regime_numbers_on_hand_made_rows():
    # (scale, log10 c_1, log10 max c, log10 relative, row max, targets)
    rows = np.array(
        [
            [0.1, -0.3, -0.2, -320.0, 0.1, 2.0],
            [0.1, -0.1, -0.1, -100.0, 0.1, 2.0],
            [1.0, 0.5, 0.6, -50.0, 0.2, 1.0],
            [10.0, 1.6, 9.0, -12.0, 0.4, 2.0],
            [20.0, 1.9, 30.0, -2.0, 0.8, 3.0],
            [30.0, 1.95, 40.0, -0.5, 0.9, 5.0],
        ]
    )
    g = bs.RegimeStudy(rows, 6, 12).numbers()
    assert (g["L"], g["n"]) == (6, 12)
    assert g["holds_n"] == 2 and g["fails_n"] == 4 and g["holds_c1_below_one"]
    assert g["holds_worst_log10"] == -100.0
    assert g["fails_collapsed"] == 2 and g["fails_cmax"] == pytest.approx(10**1.6)
    assert g["kept_n"] == 2 and g["kept_cmin"] == pytest.approx(10**1.9) and g["kept_scale"] == 20.0
    assert g["kept_row_max"] == pytest.approx(0.85) and g["kept_targets"] == pytest.approx(4.0)
    assert g["kept_targets_min"] == 3.0
    assert g["small_scale"] == 0.1 and g["small_row_max"] == pytest.approx(0.1)
    assert g["log10_cmax_max"] == 40.0
    # a network that meets the condition by its largest constant but not by c_1 is told apart
    odd = rows.copy()
    odd[1, 1] = 0.2
    assert not bs.RegimeStudy(odd, 6, 12).numbers()["holds_c1_below_one"]
    assert math.isnan(bs.RegimeStudy(rows[:2], 6, 12).numbers()["kept_cmin"])


def test_cubic_numbers_and_linear_curve_on_hand_made_results():
    depths = np.arange(1, 5)
    cubic = cr.CubicRate(
        depths,
        np.zeros((2, 4)),
        [1.0, 1.2],
        [1.1, 1.1],
        np.array([0.1, 0.1]),
        np.array([2.0, np.nan]),
    )
    g = cubic.numbers()
    assert g["slope"] == pytest.approx(1.1) and g["slope_sd"] == pytest.approx(0.1)
    assert (g["slope_min"], g["slope_max"]) == (1.0, 1.2)
    assert g["reference"] == pytest.approx(1.1) and g["gap_max"] == pytest.approx(0.1)
    assert g["first_factor"] == pytest.approx(0.1) and g["n_linear"] == 3
    assert g["n_cubic"] == 2.0 and g["log3"] == pytest.approx(math.log(3))
    np.testing.assert_allclose(cubic.linear_curve(), np.log(np.log(10) * depths))


def test_tightness_numbers_and_bins_on_hand_made_gaps():
    gaps = {
        "paper": np.arange(0.0, 101.0),
        "layerwise": np.array([1.0, 2.0, 3.0]),
        "step": np.array([0.5, 4.5]),
    }
    t = bs.Tightness(gaps, 1234, 0)
    g = t.numbers()
    assert g["instances"] == 1234 and g["violations"] == 0
    assert g["step_min"] == pytest.approx(10**0.5) and g["layerwise_median"] == 2.0
    assert g["paper_p90"] == pytest.approx(90.0)
    assert t.bins(11)[-1] == pytest.approx(95.0) and len(t.bins(11)) == 11


def test_centre_numbers_on_hand_made_rows():
    rows = np.array(
        [[0, 1.0, 0.5, 1.0, 0.5], [1, 0.1, 0.08, 0.2, 0.1], [2, 0.01, 0.01, 0.001, 0.004]]
    )
    c = bs.CentreStudy(rows, 6, 4)
    g = c.numbers()
    np.testing.assert_allclose(c.ratio, [0.5, 0.8, 1.0])
    assert g["count"] == 3 and g["ratio_median"] == pytest.approx(0.8)
    assert g["violations"] == 1 and g["violations_opt"] == 1  # the last row beats both
    assert g["bound_ratio_median"] == pytest.approx(np.median([0.5, 4.0]))
    assert g["bound_smaller"] == pytest.approx(0.5)


def test_the_library_builds_no_page_words():
    """The result objects return numbers: no glue(), verdict() or describe() (issue 26)."""
    for cls in (bs.DepthStudy, bs.RegimeStudy, cr.CubicRate, bs.Tightness, bs.CentreStudy):
        assert not any(hasattr(cls, name) for name in ("glue", "verdict", "describe")), cls


SMALL = dict(n_layers=3, d_model=6, n_tokens=5, seed=0)


def test_studies_on_tiny_networks_are_deterministic_and_never_beat_the_bound():
    depth = bs.depth_study(heads=(1, 2), init_scale=0.2, samples=2, generator=_gen(), **SMALL)
    again = bs.depth_study(heads=(1, 2), init_scale=0.2, samples=2, generator=_gen(), **SMALL)
    assert set(depth.curves) == {1, 2} and depth.curves[2]["tracked"].shape == (2, 4)
    assert depth.numbers() == again.numbers()
    assert depth.numbers()["violations"] == 0
    np.testing.assert_allclose(
        depth.curves[2]["relative"], depth.curves[2]["tracked"] - depth.curves[2]["size"]
    )

    regime = bs.regime_study(scales=(0.2, 30.0), samples=2, n_heads=2, generator=_gen(), **SMALL)
    assert regime.rows.shape == (4, 6) and set(regime.rows[:, 0]) == {0.2, 30.0}
    assert (
        regime.rows[:2, 2].max() < 0 < regime.rows[2:, 1].min()
    )  # the condition holds, then fails
    assert np.all(
        regime.rows[:, 2] >= regime.rows[:, 1]
    )  # the largest constant is at least the first
    assert regime.rows[:2, 3].max() < -10  # where it holds, the network collapses
    assert regime.rows[:, 3].min() >= -300  # underflow floored at 1e-300
    assert np.all((regime.rows[:, 4] > 0) & (regime.rows[:, 4] <= 1))  # a row maximum of P
    assert regime.rows[2:, 4].min() > regime.rows[:2, 4].max()  # large weights: harder attention

    cubic = cr.cubic_rate_study(samples=2, n_heads=2, generator=_gen(), **SMALL)
    assert cubic.loglog.shape == (2, 3) and cubic.first_factor.shape == (2,)
    inside = (cubic.first_factor > 0) & (cubic.first_factor < 1)  # the first layer may grow
    np.testing.assert_array_equal(np.isfinite(cubic.loglog[:, 0]), inside)
    np.testing.assert_allclose(cubic.loglog[inside, 0], np.log(-np.log(cubic.first_factor[inside])))
    assert np.isfinite(cubic.loglog[:, -1]).all() and len(cubic.slopes) == len(cubic.reference) == 2
    # over layers 2..3 an exactly cubic recursion gives the slope of log(3^L - 1)
    np.testing.assert_allclose(cubic.reference, np.log(26 / 8))

    tight = bs.tightness_study(30, seed=1)
    assert tight.instances == 30 and tight.violations == 0
    assert all(np.all(g > -1e-9) for g in tight.gaps.values())

    centres = bs.centre_study(samples=1, n_heads=2, generator=_gen(), **SMALL)
    assert centres.rows.shape == (4, 5)
    assert np.all((centres.ratio >= 0.5 - 1e-9) & (centres.ratio <= 1 + 1e-9))
    assert centres.numbers()["violations"] == 0 and centres.numbers()["violations_opt"] == 0


def test_delay_numbers_on_hand_made_rows_and_a_tiny_study():
    rows = np.array(
        [[20.0, 24, 5.0, 6.0], [30.0, 12, 9.0, 11.0], [30.0, 24, float("nan"), float("nan")]]
    )
    g = bs.DelayStudy(rows, 6).numbers()
    assert (g["n"], g["collapsed"], g["regime_L"]) == (3, 2, 6)
    assert (g["first_layer_min"], g["first_layer_max"], g["depth_min"]) == (6.0, 11.0, 12.0)
    regime = bs.RegimeStudy(
        np.array([[0.2, -1, -1, -20.0, 0.3, 3], [30.0, 2, 3, -1.0, 0.9, 2]]), 3, 4
    )
    delay = bs.delay_study(
        regime, samples=2, n_heads=1, d_model=4, depth=6, seed=0, generator=_gen()
    )
    assert delay.rows.shape == (1, 4) and delay.rows[0, 0] == 30.0  # only the kept network
    assert 1 <= delay.rows[0, 1] <= 6
    with pytest.raises(TypeError, match="regime"):
        bs.delay_study(rows, samples=2, n_heads=1, d_model=4, depth=6, seed=0, generator=_gen())


def test_a_study_reads_the_generator_it_is_given():
    """The chapter's stream: two studies in a row continue it, so the second sees new inputs."""
    gen = _gen()
    first = bs.regime_study(scales=(1.0,), samples=1, n_heads=1, generator=gen, **SMALL)
    second = bs.regime_study(scales=(1.0,), samples=1, n_heads=1, generator=gen, **SMALL)
    assert first.rows[0, 1] != second.rows[0, 1]  # log10 c_1 differs


@pytest.mark.parametrize(
    "call, error",
    [
        (
            lambda: bs.depth_study(heads=(), init_scale=1.0, samples=1, generator=_gen(), **SMALL),
            ValueError,
        ),
        (
            lambda: bs.depth_study(
                heads=(1,), init_scale=-1.0, samples=1, generator=_gen(), **SMALL
            ),
            ValueError,
        ),
        (
            lambda: bs.regime_study(scales=(1.0,), samples=1, n_heads=1, generator=0, **SMALL),
            TypeError,
        ),
        (lambda: cr.cubic_rate_study(samples=0, n_heads=1, generator=_gen(), **SMALL), ValueError),
        (
            lambda: bs.centre_study(samples=1, n_heads=1, generator=book.presets.Draws(0), **SMALL),
            TypeError,
        ),
    ],
)
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call()


def test_delta_scaling_numbers_on_hand_made_results():
    r2 = np.array([[1e-4, 1e-2, 1.0], [1e-4, 1e-2, 1.0]])
    study = cr.DeltaScaling(r2, 0.5 * r2, np.array([1.0, 0.98]))
    g = study.numbers()
    assert g["slope"] == pytest.approx(0.99) and g["slope_min"] == 0.98 and g["slope_max"] == 1.0
    assert g["networks"] == 2 and g["residual_sq_min"] == 1e-4 and g["residual_sq_max"] == 1.0
    assert all(isinstance(v, (int, float)) for v in g.values())


def test_delta_scaling_study_measures_the_residual_it_sets_and_two_powers():
    study = cr.delta_scaling_study(
        scales=(0.01, 0.1, 0.5), samples=2, d_model=6, n_tokens=5, seed=0, generator=_gen()
    )
    assert study.residual_sq.shape == study.delta.shape == (2, 3)
    assert np.allclose(study.residual_sq, np.array([0.01, 0.1, 0.5]) ** 2)  # ||res X|| = t exactly
    assert np.all(np.abs(study.slopes - 1) < 0.1)  # Delta ~ ||res X||^2 at small residual
    again = cr.delta_scaling_study(
        scales=(0.01, 0.1, 0.5), samples=2, d_model=6, n_tokens=5, seed=0, generator=_gen()
    )
    assert np.array_equal(study.delta, again.delta)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(scales=(0.1,)), ValueError),
        (dict(scales=(0.1, -1.0)), ValueError),
        (dict(scales=(0.1, 1.0), generator=0), TypeError),
    ],
)
def test_delta_scaling_bad_arguments(kwargs, error):
    args = (
        dict(scales=(0.1, 1.0), samples=1, d_model=4, n_tokens=3, seed=0, generator=_gen()) | kwargs
    )
    with pytest.raises(error):
        cr.delta_scaling_study(**args)
