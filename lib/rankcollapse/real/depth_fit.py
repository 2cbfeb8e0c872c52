"""The form of a relative-residual curve over depth, fitted: flat, geometric, power law or doubly
exponential, with the quality of each fit.

Book: chapter "Skip connections at depth". A curve ``r_l`` (layer ``l = 0..L``, ``r_0`` the input)
is fitted on the layers ``l >= start`` still above ``floor`` (below it a float64 residual is
rounding error), in ``y_l = log10 r_l``, by least squares:

- geometric: ``y = a - s l`` (``s``: decades lost per layer, a linear contraction);
- power law: ``y = a + p log10 l`` (``p``: the exponent, negative when it falls);
- doubly exponential: ``log10(-y) = a + l log10 g`` (``-log10 r`` multiplied by ``g`` at every
  layer; the paper's cubic cascade has ``g = 3``), fitted where ``r < 1`` and scored in ``y``;
- flat: the geometric line changes by less than ``flat`` decades (default 0.1, a factor 1.26) over
  the fitted layers.

The quality of a fit is its root-mean-square error in decades (``y``). :func:`fit_curve` returns
the form whose error is smallest (flat first, when it applies), every form's error and rate;
"collapsed" when fewer than ``min_points`` layers are above ``floor`` (the curve reached rounding
error too soon for any form to be told apart). Numbers only; the sentences are the chapter's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_int, check_positive_float

__all__ = ["FORMS", "FLAT", "Fit", "fit_curve", "fit_forms"]

FORMS = ("flat", "geometric", "power law", "doubly exponential", "collapsed")
FLAT = 0.1  # decades over the fitted layers: less than a factor 1.26


@dataclass(frozen=True)
class Fit:
    """The fitted form of one curve.

    ``form``: one of :data:`FORMS`. ``rate``: decades lost per layer (geometric and flat), the
    exponent ``p`` of ``l^p`` (power law), the factor ``g`` (doubly exponential), the last layer
    above the floor (collapsed). ``rms``: the error of that form, in decades. ``errors`` and
    ``rates``: every fitted form's. ``layers``: the first and last layer fitted. ``change``: the
    geometric line's change over them, in decades (negative when it falls).
    """

    form: str
    rate: float
    rms: float
    layers: tuple
    change: float
    errors: dict = field(default_factory=dict)
    rates: dict = field(default_factory=dict)

    @property
    def decades_per_layer(self) -> float:
        """The geometric fit's decades lost per layer (whatever form won), NaN if not fitted."""
        return self.rates.get("geometric", math.nan)


def _line(x, y):
    """Least-squares ``y = a + b x``: ``(a, b, rms)``."""
    A = np.stack([np.ones_like(x), x], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    rms = float(np.sqrt(np.mean((A @ coef - y) ** 2)))
    return float(coef[0]), float(coef[1]), rms


def fit_forms(layers, values) -> dict:
    """Every form fitted to ``values`` ``r_l`` at ``layers`` ``l`` (1-D, positive, ``l >= 1``):
    ``{form: (rate, rms)}`` for geometric, power law and (where every ``r < 1``) doubly
    exponential. Rates as in :class:`Fit`."""
    x = np.asarray(layers, dtype=float)
    r = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.shape != r.shape or x.size < 2:
        raise ValueError("layers and values must be 1-D, of the same length, at least 2")
    if not (np.isfinite(r).all() and (r > 0).all()):
        raise ValueError("values must be finite and positive")
    if (x < 1).any():
        raise ValueError("layers must be at least 1 (the power law takes their log)")
    y = np.log10(r)
    out = {}
    _, b, rms = _line(x, y)
    out["geometric"] = (-b, rms)
    _, p, rms = _line(np.log10(x), y)
    out["power law"] = (p, rms)
    if (y < 0).all():
        a, s, _ = _line(x, np.log10(-y))
        pred = -(10 ** (a + s * x))
        out["doubly exponential"] = (float(10**s), float(np.sqrt(np.mean((pred - y) ** 2))))
    return out


def fit_curve(
    curve, *, start: int = 1, floor: float = 1e-13, flat: float = FLAT, min_points: int = 3
) -> Fit:
    """The form of ``curve`` (1-D, entry ``l`` the relative residual after layer ``l``; NaN
    entries, where a run stopped, are left out) over the layers from ``start`` to the last above
    ``floor``. See the module's docstring."""
    c = np.asarray(curve, dtype=float)
    if c.ndim != 1:
        raise ValueError(f"curve must be 1-D, got shape {c.shape}")
    start = check_int("start", start)
    floor = check_positive_float("floor", floor)
    flat = check_positive_float("flat", flat)
    min_points = check_int("min_points", min_points, minimum=2)
    layers = np.arange(c.size)
    ok = (layers >= start) & np.isfinite(c)
    below = np.nonzero(ok & (c < floor))[0]
    if below.size:
        ok &= layers < below[0]
    x, r = layers[ok], c[ok]
    if x.size < min_points:
        last = int(x[-1]) if x.size else start - 1
        return Fit("collapsed", float(last), math.nan, (start, last), math.nan)
    forms = fit_forms(x, r)
    rates = {k: v[0] for k, v in forms.items()}
    errors = {k: v[1] for k, v in forms.items()}
    change = -rates["geometric"] * float(x[-1] - x[0])
    span = (int(x[0]), int(x[-1]))
    if abs(change) < flat:
        return Fit("flat", rates["geometric"], errors["geometric"], span, change, errors, rates)
    best = min(errors, key=errors.get)
    return Fit(best, rates[best], errors[best], span, change, errors, rates)
