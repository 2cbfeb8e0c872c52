"""Small statistics of the book's curves: a typical value, where a curve crosses a level, a rate.

Three questions the chapters ask of a curve that falls over orders of magnitude (a residual
against depth, a bound against a weight scale), each answered in one place:

- :func:`geometric_mean`: the typical value over samples, the line a log-scale figure draws;
- :func:`first_below`: the first index (layer) where a curve falls below a level;
- :func:`log_slope`: the rate of a least-squares line through ``log y`` against ``x`` (or
  against ``log x``: an exponent).

Numpy in, Python numbers out; above the core (it imports neither torch's models nor plotting).
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import check_bool, check_int, check_positive_float

__all__ = ["geometric_mean", "first_below", "log_slope"]


def _array(name: str, values, *, ndim: int | None = None, finite: bool = False) -> np.ndarray:
    """``values`` (numpy, torch or a sequence of real numbers) as a float64 array (finite, if
    ``finite``)."""
    if hasattr(values, "detach"):  # a torch tensor, without importing torch here
        values = values.detach().cpu().numpy()
    if isinstance(values, (str, bytes)) or isinstance(values, bool):
        raise TypeError(f"{name} must be an array of real numbers, got {type(values).__name__}")
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be an array of real numbers, got {type(values).__name__}"
        ) from None
    if v.size == 0:
        raise ValueError(f"{name} is empty")
    if ndim is not None and v.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {v.shape}")
    if finite and not np.isfinite(v).all():
        raise ValueError(
            f"{name} must be finite, got {int((~np.isfinite(v)).sum())} NaN or infinite entries"
        )
    return v


def geometric_mean(values, axis: int = 0, floor: float = 1e-300):
    """Geometric mean of positive ``values`` (numpy or torch) along ``axis`` (over samples).

    The typical value of a quantity that spreads over orders of magnitude, the line the book's
    log-scale figures draw. Values below ``floor`` (exact zeros; rounding noise under a chosen
    floor) count as ``floor``. Returns a numpy array (a numpy float for 1-D ``values``). NaN,
    infinite or negative ``values`` are refused with a ``ValueError`` (a geometric mean is of
    non-negative numbers).
    """
    v = _array("values", values, finite=True)
    if (v < 0).any():
        raise ValueError(
            f"values must be non-negative (a geometric mean), got {int((v < 0).sum())} negative "
            f"entries, the smallest {float(v.min()):.3g}"
        )
    floor = check_positive_float("floor", floor)
    axis = check_int("axis", axis, minimum=-v.ndim, maximum=v.ndim - 1)
    return np.exp(np.log(np.clip(v, floor, None)).mean(axis))


def first_below(values, level: float, default=None):
    """The first index ``i`` with ``values[i] < level`` in a 1-D curve, or ``default`` if there is
    none.

    "The first layer where the residual falls below 1e-8": pass the curve indexed by layer.
    NaN entries never count as below (a comparison with NaN is false).
    """
    v = _array("values", values, ndim=1)
    level = check_positive_float("level", level)
    hit = np.nonzero(v < level)[0]
    return int(hit[0]) if hit.size else default


def log_slope(x, y, *, log_x: bool = False, base: float = math.e) -> float:
    """Slope of the least-squares line through ``(x, log y)``, or ``(log x, log y)`` with
    ``log_x=True``.

    ``log_x=False``: a rate per unit of ``x``, e.g. decades lost per layer with ``base=10``.
    ``log_x=True``: an exponent ``k`` of ``y ~ x^k`` (then the base cancels). ``x`` and ``y``
    are 1-D, of the same length (at least 2), finite, and positive where their log is taken.
    """
    log_x = check_bool("log_x", log_x)
    base = check_positive_float("base", base)
    if base == 1:
        raise ValueError("base must not be 1")
    x, y = _array("x", x, ndim=1, finite=True), _array("y", y, ndim=1, finite=True)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(
            f"x and y must have the same length, at least 2, got {x.size} and {y.size}"
        )
    for name, v, logged in (("x", x, log_x), ("y", y, True)):
        if logged and (v <= 0).any():
            raise ValueError(f"{name} must be finite and positive (its log is taken)")

    if float(np.ptp(np.log(x) if log_x else x)) == 0:
        raise ValueError("x must not be all equal: no line through points with one x has a slope")

    def log(v):
        if base == 10:
            return np.log10(v)
        return np.log(v) if base == math.e else np.log(v) / np.log(base)

    u = log(x) if log_x else x
    top = float(np.max(np.abs(u)))  # > 0: x is not all equal
    if 1e-150 < top < 1e150:  # polyfit's sums of squares stay finite and normal: fit as given
        slope = float(np.polyfit(u, log(y), 1)[0])
    else:
        # fitted scale-free: the abscissae divided by their largest magnitude, centred and divided
        # by their spread, so that polyfit sees numbers near 1 (x near 1e300 or 1e-300), and the
        # slope scaled back at the end
        t = u / top
        t = t - t.mean()
        spread = float(np.max(np.abs(t)))
        slope = float(np.polyfit(t / spread, log(y), 1)[0]) / spread / top
    if not math.isfinite(slope):
        raise ValueError(
            f"x spans too small a range for the slope to be a float (it overflows): x from "
            f"{float(x.min()):.3g} to {float(x.max()):.3g}"
        )
    return slope
