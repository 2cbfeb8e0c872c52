"""The cubic rate of pure attention's collapse, measured on random networks, as result objects.

- :func:`delta_scaling_study`: one layer's :math:`\\lVert\\Delta\\rVert` against
  :math:`\\lVert\\res(X)\\rVert^2`: the two powers the logits contribute to the cube;
- :func:`cubic_rate_study`: :math:`\\log(-\\log\\rho_L)` against depth: the cube per layer.

Each returns the raw results (what a figure draws) and :meth:`numbers` (floats and ints, no
words). Random inputs come from the ``generator`` passed; network ``s`` of a study is seeded
from ``seed`` and ``s`` (:func:`._validate.derive_seed`). Above the core. Book: chapter "Pure
attention collapses", sections 2 and 5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ._validate import check_generator, check_int, check_positive_float, check_seed, derive_seed
from .ops import check_runs
from .residual import composite_norm, res
from .san import SAN, SANConfig
from .stats import first_below, log_slope
from .theory import rank_one_distance, tracked_residual, unit_residual_tokens

__all__ = ["DeltaScaling", "delta_scaling_study", "CubicRate", "cubic_rate_study"]

# ||Delta|| below this is float64's rounding of the attention (its entries are near 1/n, with
# errors ~1e-16): 1000 times that, so that rounding moves a fitted point by 0.1 % at most
DELTA_FLOOR = 1000 * float(np.finfo(np.float64).eps)


@dataclass
class DeltaScaling:
    """One layer's :math:`\\lVert\\Delta\\rVert_{1,\\infty}`
    (:math:`\\Delta = P - \\mathbf 1\\bar p^\\top`, Step 2) against
    :math:`\\lVert\\res(X)\\rVert_{1,\\infty}^2` as the input's residual shrinks (section 2):
    ``residual_sq`` and ``delta`` are ``(samples, scales)``; ``slopes`` per network, the exponent
    ``k`` of the least-squares fit
    :math:`\\lVert\\Delta\\rVert \\propto (\\lVert\\res(X)\\rVert^2)^k` in log-log."""

    residual_sq: np.ndarray
    delta: np.ndarray
    slopes: np.ndarray

    def numbers(self) -> dict:
        """The fitted exponent (mean, extremes over the networks), the number of networks, and
        the range of :math:`\\lVert\\res(X)\\rVert^2` the fit spans."""
        return {
            "slope": float(self.slopes.mean()),
            "slope_min": float(self.slopes.min()),
            "slope_max": float(self.slopes.max()),
            "networks": int(self.slopes.size),
            "residual_sq_min": float(self.residual_sq.min()),
            "residual_sq_max": float(self.residual_sq.max()),
        }


def delta_scaling_study(
    *, scales, samples: int, d_model: int, n_tokens: int, seed: int, generator
) -> DeltaScaling:
    """``samples`` one-layer, one-head pure attention networks (``init_scale`` 1, seeds
    ``seed + s``), each on inputs :math:`X = \\mathbf 1 x^\\top + t R_0` for every ``t`` in
    ``scales``: a standard normal common token :math:`x` and standard normal tokens :math:`R_0`
    rescaled to
    :math:`\\lVert\\res(R_0)\\rVert_{1,\\infty} = 1`, so that :math:`\\lVert\\res(X)\\rVert = t`.
    Measures :math:`\\lVert\\Delta\\rVert_{1,\\infty}` of the head's attention
    (:func:`rankcollapse.theory.rank_one_distance`)."""
    samples, seed, generator = (
        check_int("samples", samples),
        check_seed("seed", seed),
        check_generator("generator", generator),
    )
    scales = np.asarray([check_positive_float("scales", float(t)) for t in scales])
    if scales.size < 2:
        raise ValueError(f"scales must hold at least two positive scales, got {scales.size}")
    if not (np.isfinite(scales**2) & (scales**2 >= np.finfo(np.float64).tiny)).all():
        raise ValueError(
            "scales must lie in about [1.5e-154, 1.3e154] (their squares are fitted in float64), "
            "got "
            f"{scales.min():g} to {scales.max():g}"
        )
    d_model, n_tokens = check_int("d_model", d_model), check_int("n_tokens", n_tokens, minimum=2)
    check_runs(
        SANConfig(n_layers=1, n_heads=1, d_model=d_model), (scales.size, n_tokens, d_model), samples
    )
    residual_sq, delta, slopes = [], [], []
    for s in range(samples):
        model = SAN(SANConfig(n_layers=1, n_heads=1, d_model=d_model), seed=derive_seed(seed, s))
        R0 = unit_residual_tokens(n_tokens, d_model, generator=generator)
        x = torch.randn(1, d_model, dtype=torch.float64, generator=generator)
        X = x + torch.as_tensor(scales, dtype=torch.float64)[:, None, None] * R0  # (scales, n, d)
        with torch.no_grad():
            P = model(X).attentions[0][:, 0]  # (scales, n, n)
        r2 = (composite_norm(res(X)) ** 2).numpy()
        dl = rank_one_distance(P, norm="l1inf").numpy()
        if dl.min() < DELTA_FLOOR:
            raise ValueError(
                f"scales: at scale {scales[dl.argmin()]:g} the attention's ||Delta|| is "
                f"{dl.min():.2g}, at float64's rounding (below {DELTA_FLOOR:g}): its exponent "
                "cannot be measured there; use larger scales (the book's: 0.01 to 1)"
            )
        residual_sq.append(r2)
        delta.append(dl)
        slopes.append(log_slope(r2, dl, log_x=True))
    return DeltaScaling(np.array(residual_sq), np.array(delta), np.array(slopes))


@dataclass
class CubicRate:
    """:math:`\\log(-\\log\\rho_L)` against depth ``L = 1..depth`` (section 5): ``loglog`` is
    ``(samples, depth)`` (NaN where :math:`\\rho_L` is not in ``(0, 1)``); per network, the
    fitted slope from layer 2 on (``slopes``; networks with fewer than two such layers have
    none) and the slope an exactly cubic recursion :math:`r_l = k r_{l-1}^3` gives over the same
    layers (``reference``: the slope of :math:`\\log(3^L - 1)`, whatever ``k``), the first
    layer's factor :math:`\\rho_1` and the layers needed to fall below ``1e-3`` (NaN: never)."""

    depths: np.ndarray
    loglog: np.ndarray
    slopes: list
    reference: list
    first_factor: np.ndarray
    n_cubic: np.ndarray

    @property
    def linear_factor(self) -> float:
        """The median first-layer factor: the rate of the linear collapse the figure compares."""
        return float(np.median(self.first_factor))

    def linear_curve(self) -> np.ndarray:
        """:math:`\\log(-\\log a^L)` for the linear rate ``a`` = :attr:`linear_factor`, at
        :attr:`depths`."""
        return np.log(-np.log(self.linear_factor) * self.depths)

    def numbers(self) -> dict:
        """The fitted slope (mean, std, extremes), the exactly cubic recursion's slope over the
        same layers (mean), the largest gap between a network's slope and its reference, the first
        factor, and the layers to fall three orders of magnitude (the networks' median; a linear
        rate with the same first step)."""
        if not self.slopes:
            raise ValueError(
                "no network has two layers from layer 2 on where rho_L is in (0, 1): no slope to "
                "fit (the residual vanished exactly, or grew); n_layers or the inputs"
            )
        a = self.linear_factor
        slopes, ref = np.array(self.slopes), np.array(self.reference)
        return {
            "slope": float(slopes.mean()),
            "slope_sd": float(slopes.std()),
            "slope_min": float(slopes.min()),
            "slope_max": float(slopes.max()),
            "reference": float(ref.mean()),
            "gap_max": float(np.abs(slopes - ref).max()),
            "log3": float(np.log(3)),
            "first_factor": a,
            "n_cubic": float(np.nanmedian(self.n_cubic)),
            "n_linear": int(np.ceil(3 / -np.log10(a))),
        }


def cubic_rate_study(
    *, samples: int, n_layers: int, n_heads: int, d_model: int, n_tokens: int, seed: int, generator
) -> CubicRate:
    """``samples`` networks at the usual initialisation (``init_scale`` 1, seeds ``seed + s``) on
    standard normal tokens: the tracked residual's ratio :math:`\\rho_L = r_L / r_0` through
    depth."""
    samples, seed, generator = (
        check_int("samples", samples),
        check_seed("seed", seed),
        check_generator("generator", generator),
    )
    if check_int("n_layers", n_layers) < 3:
        raise ValueError(
            f"n_layers must be >= 3 (the slope is fitted from layer 2 on, over two layers at "
            f"least), got {n_layers}"
        )
    depths = np.arange(1, n_layers + 1)
    check_runs(
        SANConfig(n_layers=n_layers, n_heads=n_heads, d_model=d_model),
        (check_int("n_tokens", n_tokens), check_int("d_model", d_model)),
        samples,
    )
    loglog, slopes, reference, first, n_cubic = [], [], [], [], []
    for s in range(samples):
        model = SAN(
            SANConfig(n_layers=n_layers, n_heads=n_heads, d_model=d_model),
            seed=derive_seed(seed, s),
        )
        X = torch.randn(n_tokens, d_model, dtype=torch.float64, generator=generator)
        r = tracked_residual(model, X).numpy()
        ratio = r[1:] / r[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            decay = -np.log(ratio)
            ll = np.log(decay)
        ll[~((ratio > 0) & (ratio < 1))] = np.nan
        loglog.append(ll)
        ok = np.isfinite(ll) & (depths >= 2)
        if ok.sum() >= 2:
            slopes.append(log_slope(depths[ok], decay[ok]))
            reference.append(log_slope(depths[ok], 3.0 ** depths[ok] - 1))
        first.append(ratio[0])
        below = first_below(ratio, 1e-3)  # 0: the first layer
        n_cubic.append(below + 1 if below is not None else np.nan)
    return CubicRate(
        depths, np.array(loglog), slopes, reference, np.array(first), np.array(n_cubic)
    )
