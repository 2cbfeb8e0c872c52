"""rc.lower_bound: the book's evidence on the open problem (how small the residual gets with skips).

Pins: the search never reports more than it started from; the pure networks are the search's own
initial weights without skips, and collapse below them; the power law is the log-log slope of
the smallest ratios; the real models' clean ablations keep the residual with skips and lose it
without; bad depths are refused with their name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse import lower_bound as LB
from rankcollapse.san import SAN, SANConfig


@pytest.fixture(scope="module")
def search():
    return LB.skip_search([1, 2, 4], n=6, d=8, H=1, scale=1.0, steps=30, seed=3)


def test_the_search_reports_no_more_than_it_started_from(search):
    assert search.depths.tolist() == [1.0, 2.0, 4.0]
    assert np.all(search.best <= search.initial + 1e-12)
    assert np.all(search.best > 0)


def test_the_pure_networks_are_the_searched_weights_without_skips(search):
    """The pure ratio is that of SAN(seed) without skips: same weights, same input."""
    X = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    cfg = SANConfig(n_layers=4, n_heads=1, d_model=8, skip=True, init_scale=1.0)
    with_skip, without = SAN(cfg, seed=3), SAN(cfg.replace(skip=False), seed=3)
    for a, b in zip(with_skip.parameters(), without.parameters()):
        assert torch.equal(a, b)
    r = rc.theory.tracked_residual(without, X)
    assert search.pure[-1] == pytest.approx(float(r[-1] / r[0]), rel=1e-12)
    # without skips the residual shrinks with depth, and below what the skips keep
    assert np.all(np.diff(search.pure) < 0)
    assert np.all(search.pure < search.initial)


def test_the_exponent_is_the_log_log_slope_of_the_smallest_ratios(search):
    x, y = np.log(search.depths), np.log(search.best)
    slope = np.polyfit(x, y, 1)[0]
    assert search.exponent() == pytest.approx(slope, rel=1e-9, abs=1e-12)


def test_the_glue_names_the_search_and_its_last_depth(search):
    glue = search.glue()
    assert glue["lim-open-Lmax"][0] == 4
    assert glue["lim-open-steps"][0] == 30
    assert glue["lim-open-best-Lmax"][0] == pytest.approx(search.best[-1])
    assert glue["lim-open-exponent"][0] == pytest.approx(search.exponent())


def test_an_underflowed_pure_residual_is_glued_as_below_the_floor():
    s = LB.SkipSearch(np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.array([0.9, 0.8]),
                      np.array([1e-3, 0.0]), 1.0, 10)
    text = s.glue()["lim-open-pure-Lmax"][0]
    assert text == rc.book.fmt_sci_log10(-np.inf)
    assert text.startswith("below 10")


@pytest.mark.parametrize("depths, match", [([3], "at least two"), ([2, 1], "increasing"),
                                           ([1, 1], "increasing")])
def test_bad_depths_are_refused(depths, match):
    with pytest.raises(ValueError, match="depths"):
        LB.skip_search(depths, n=4, d=4, H=1, scale=1.0, steps=1)


def test_no_models_is_refused():
    with pytest.raises(ValueError, match="models"):
        LB.real_skip_residuals([], 1, 8)


def test_real_attention_keeps_the_residual_with_skips_and_loses_it_without():
    try:
        m = rc.real.load("all-MiniLM-L6-v2", True)
    except rc.real.ModelUnavailable as err:  # pragma: no cover - the book's environment has it
        pytest.skip(str(err))
    out = LB.real_skip_residuals([m], 2, 16)
    with_skip, without = out.last[m.label]
    assert with_skip > 0.1
    assert without < 1e-6 < with_skip
    glue = out.glue()
    assert glue["lim-skip-real-min"][0] == glue["lim-skip-real-max"][0] == with_skip
    assert glue["lim-noskip-real-max"][0] == without
    assert math.isfinite(with_skip)
