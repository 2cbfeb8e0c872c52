"""rc.stats: the small statistics the chapters share, and that they equal the copies they
replace."""

import math

import numpy as np
import pytest
import torch

import rankbook as book
from rankcollapse.stats import first_below, geometric_mean, log_slope


def test_geometric_mean():
    v = np.array([[1e-2, 1.0], [1e-4, 4.0]])
    assert np.allclose(geometric_mean(v), [1e-3, 2.0])  # over samples (axis 0)
    assert np.allclose(geometric_mean(torch.tensor(v), axis=1), [0.1, 0.02])
    # exact zeros and values below the floor count as the floor
    assert np.isclose(
        geometric_mean([0.0, 1e-20, 1e-2], floor=1e-17), (1e-17 * 1e-17 * 1e-2) ** (1 / 3)
    )
    assert np.isclose(geometric_mean([0.0, 0.0]), 1e-300, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="values must be finite"):
        geometric_mean(np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match="values must be finite"):
        geometric_mean([1.0, np.inf])


def test_geometric_mean_equals_the_plotting_copy_it_replaces():
    rng = np.random.default_rng(0)
    v = 10 ** rng.uniform(-18, 0, size=(32, 7))
    v[3, 2] = 0.0
    old = np.exp(np.log(np.clip(np.asarray(v, dtype=float), 1e-17, None)).mean(0))
    assert np.array_equal(geometric_mean(v, floor=1e-17), old)
    assert np.array_equal(geometric_mean(torch.from_numpy(v), floor=1e-17), old)


def test_first_below_equals_the_chapters_copies():
    rng = np.random.default_rng(1)
    for _ in range(200):
        g = 10 ** np.sort(rng.uniform(-20, 1, size=rng.integers(1, 12)))[::-1]
        if rng.random() < 0.2:
            g[rng.integers(g.size)] = np.nan
        level = 10.0 ** -rng.integers(1, 16)
        # the collapse and layernorm chapters' copy, and the real-models chapter's
        hit = np.nonzero(g < level)[0]
        assert first_below(g, level) == (int(hit[0]) if hit.size else None)
        argmax = int(np.argmax(g < level)) if (g < level).any() else len(g) - 1
        assert first_below(g, level, default=len(g) - 1) == argmax
    assert first_below([1.0, 0.5, 1e-9, 1.0], 1e-8) == 2
    assert first_below([1.0, np.nan], 1e-8) is None


def test_log_slope_equals_the_chapters_copies():
    rng = np.random.default_rng(2)
    x = np.array([0.1, 0.3, 1.0, 3.0, 10.0])
    y = 2.0 * x**1.7 * np.exp(rng.normal(0, 0.01, size=5))
    assert log_slope(x, y, log_x=True) == np.polyfit(np.log(x), np.log(y), 1)[0]
    assert log_slope(list(x), y, log_x=True) == pytest.approx(1.7, abs=0.05)
    layers = np.arange(1, 7)
    g = 10.0 ** (-2.5 * layers) * np.exp(rng.normal(0, 0.01, size=6))
    assert log_slope(layers, g, base=10) == np.polyfit(layers, np.log10(g), 1)[0]
    assert log_slope(layers, g, base=10) == pytest.approx(-2.5, abs=0.05)
    assert log_slope(layers, g) == pytest.approx(-2.5 * math.log(10), abs=0.2)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: geometric_mean([]), ValueError, "values is empty"),
        (lambda: geometric_mean("abc"), TypeError, "values"),
        (lambda: geometric_mean([1.0], floor=0), ValueError, "floor"),
        (lambda: geometric_mean([[1.0]], axis=2), ValueError, "axis"),
        (lambda: first_below([[1.0]], 0.5), ValueError, "1-dimensional"),
        (lambda: first_below([1.0], float("nan")), ValueError, "level"),
        (lambda: first_below([1.0], "1e-3"), TypeError, "level"),
        (lambda: log_slope([1.0], [1.0]), ValueError, "at least 2"),
        (lambda: log_slope([1.0, 2.0], [1.0, -1.0]), ValueError, "y must be finite and positive"),
        (
            lambda: log_slope([0.0, 2.0], [1.0, 1.0], log_x=True),
            ValueError,
            "x must be finite and positive",
        ),
        (
            lambda: log_slope([1.0, 2.0], [1.0, 2.0], log_x="yes"),
            TypeError,
            "log_x must be True or False",
        ),
        (lambda: log_slope([1.0, 2.0], [1.0, 2.0], base=1), ValueError, "base"),
    ],
)
def test_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_stats_is_not_in_plotting():
    assert not hasattr(book.plotting, "geometric_mean")
