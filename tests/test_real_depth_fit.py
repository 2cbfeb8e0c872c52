"""rc.real.depth_fit: each form of a curve over depth is recovered from a curve that has it."""

import math

import numpy as np
import pytest

from rankcollapse.real.depth_fit import FLAT, fit_curve, fit_forms

L = np.arange(0, 49)


@pytest.mark.parametrize(
    "curve, form, rate",
    [
        (0.6 * 10 ** (-0.05 * L), "geometric", 0.05),
        (0.6 * np.maximum(L, 1) ** -0.5, "power law", -0.5),
        (10 ** (-0.3 * 3.0 ** L[:5]), "doubly exponential", 3.0),
        (10 ** (-0.5 * 1.5 ** L[:12]), "doubly exponential", 1.5),
    ],
)
def test_an_exact_curve_gives_its_form_and_rate(curve, form, rate):
    fit = fit_curve(curve)
    assert fit.form == form
    assert math.isclose(fit.rate, rate, rel_tol=1e-9)
    assert fit.rms < 1e-9
    assert all(e >= fit.rms for e in fit.errors.values())


def test_a_curve_that_moves_less_than_the_flat_threshold_is_flat():
    curve = 0.6 * 10 ** (-0.2 * FLAT * L / L[-1])  # 0.2 of the threshold over the depth
    fit = fit_curve(curve)
    assert fit.form == "flat" and abs(fit.change) < FLAT
    steeper = 0.6 * 10 ** (-2 * FLAT * L / L[-1])
    assert fit_curve(steeper).form == "geometric"


def test_the_floor_and_stopped_runs_end_the_fit():
    curve = np.r_[0.6, 10 ** (-0.3 * 3.0 ** np.arange(1, 4)), 1e-16, 3e-14, np.nan, np.nan]
    fit = fit_curve(curve, floor=1e-13)
    assert fit.layers == (1, 3)  # 1e-16 is below the floor: nothing after it counts
    assert fit.form == "doubly exponential"
    short = fit_curve(np.r_[0.6, 1e-3, 1e-10, 1e-16, np.nan])
    assert short.form == "collapsed" and short.rate == 2.0


def test_doubly_exponential_is_not_fitted_above_one():
    forms = fit_forms([1, 2, 3], [0.5, 1.5, 0.2])
    assert set(forms) == {"geometric", "power law"}


@pytest.mark.parametrize(
    "layers, values, match",
    [
        ([1, 2], [0.5], "same length"),
        ([0, 1, 2], [0.5, 0.4, 0.3], "at least 1"),
        ([1, 2, 3], [0.5, -0.1, 0.3], "positive"),
    ],
)
def test_bad_points_are_refused(layers, values, match):
    with pytest.raises(ValueError, match=match):
        fit_forms(layers, values)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="1-D"):
        fit_curve(np.ones((2, 3)))
    with pytest.raises(ValueError, match="floor"):
        fit_curve(np.ones(5), floor=-1)
