"""The collapse bound measured on random pure-attention networks, as result objects.

Each function runs one measurement of the book's collapse bound (:mod:`rankcollapse.theory`)
and returns an object holding the raw results (what a figure draws) and the values the prose
states (:meth:`glue`: ``{name: (value, format)}`` for :func:`rankcollapse.book.glue`):

- :func:`depth_study`: the residual against depth, forward pass, tracked and bounded;
- :func:`regime_study`: the relative residual after ``L`` layers against the first layer's
  constant, over weight scales (where the condition holds and where it fails);
- :func:`cubic_rate_study`: :math:`\\log(-\\log\\rho_L)` against depth, the cubic rate;
- :func:`tightness_study`: how far the bound lies above the tracked residual on random instances;
- :func:`centre_study`: the mean-centred against the optimal residual, and the bound in each centre.

Random inputs come from the ``generator`` passed (a chapter's ``run.stream().generator``), in
the order the functions are called; network ``s`` of a study is seeded ``seed + s``. Above the
core: it imports the core, :mod:`.stats` and :mod:`.centering`. Book: chapter "Pure attention
collapses", sections 3 to 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ._validate import check_int, check_positive_float, check_seed
from .book import UNDERFLOW_LOG10, fmt_sci_log10
from .centering import optimal_center
from .residual import composite_norm, res
from .san import SAN, SANConfig
from .stats import first_below, log_slope
from .theory import (bound_gaps, collapse_bound, depth_profile, layer_constants, random_instances,
                     tracked_relative_residual, tracked_residual, unit_residual_tokens)

__all__ = ["DepthStudy", "depth_study", "RegimeStudy", "regime_study", "CubicRate", "cubic_rate_study",
           "Tightness", "tightness_study", "CentreStudy", "centre_study"]

UNDERFLOW = 10.0**UNDERFLOW_LOG10  # a tracked residual below this has underflowed


def _generator(generator) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (run.stream().generator), got {type(generator).__name__}")
    return generator


def _pure(n_layers, n_heads, d_model, init_scale) -> SANConfig:
    return SANConfig(n_layers=n_layers, n_heads=n_heads, d_model=d_model, init_scale=init_scale)


@dataclass
class DepthStudy:
    """Residual against depth (section 3): ``curves[H]`` maps ``"forward"``, ``"tracked"``,
    ``"paper"``, ``"layerwise"`` to ``(samples, L+1)`` arrays of :math:`\\log_{10}` and ``"c"``
    to the ``(samples,)`` largest layer constants (:func:`rankcollapse.theory.depth_profile`)."""

    curves: dict
    init_scale: float
    samples: int

    def glue(self) -> dict:
        """Largest constant, floor, residual and bound after two layers, violations (``-1``: one
        head, ``-H``: the most heads)."""
        one, many = min(self.curves), max(self.curves)
        floor = max(np.median(c["forward"][:, -1]) for c in self.curves.values())
        violations = sum(int(np.sum(c["tracked"] > c["layerwise"] + 1e-9)) for c in self.curves.values())
        out = {"collapse-small-scale": (self.init_scale, "{:g}"), "collapse-samples": (self.samples, "{}"),
               "collapse-H": (many, "{}"), "collapse-floor": (10**floor, "sci"),
               "collapse-depth-violations": (violations, "{}")}
        for suffix, H in (("1", one), ("H", many)):
            c = self.curves[H]
            out[f"collapse-c-max-{suffix}"] = (c["c"].max(), "{:.2f}")
            out[f"collapse-layer2-{suffix}"] = (10 ** np.median(c["tracked"][:, 2]), "sci")
            out[f"collapse-bound2-{suffix}"] = (10 ** np.median(c["paper"][:, 2]), "sci")
        return out


def depth_study(*, heads, n_layers: int, d_model: int, n_tokens: int, init_scale: float, samples: int,
                seed: int, generator) -> DepthStudy:
    """For each head count in ``heads``, ``samples`` pure attention networks (seeds ``seed + s``)
    on inputs of ``n_tokens`` tokens scaled to a unit residual
    (:func:`rankcollapse.theory.unit_residual_tokens`), profiled through depth."""
    heads = tuple(check_int("heads", H) for H in heads)
    if not heads:
        raise ValueError("heads must list at least one head count, got none")
    samples, seed, generator = check_int("samples", samples), check_seed("seed", seed), _generator(generator)
    init_scale = check_positive_float("init_scale", init_scale)
    curves = {}
    for H in heads:
        cfg = _pure(n_layers, H, d_model, init_scale)
        profiles = [depth_profile(SAN(cfg, seed=seed + s), unit_residual_tokens(n_tokens, d_model, generator=generator))
                    for s in range(samples)]
        curves[H] = {k: np.array([p[k].numpy() for p in profiles]) for k in profiles[0]}
    return DepthStudy(curves, init_scale, samples)


@dataclass
class RegimeStudy:
    """Relative residual against the first layer's constant (section 4): ``rows`` is
    ``(count, 3)``, each ``(init_scale, c_1, log10 relative residual after L layers)``, the last
    floored at ``10**-300`` (underflow)."""

    rows: np.ndarray
    n_layers: int

    def glue(self) -> dict:
        """How many networks meet the condition (``c_1 < 1``) and how far they fall; how many
        fail it and still collapse (below ``1e-10``), up to which ``c_1``; the smallest ``c_1``
        and weight scale that keep the relative residual above ``1e-3``."""
        r = self.rows
        holds, fails = r[r[:, 1] < 1], r[r[:, 1] >= 1]
        collapsed, kept = fails[fails[:, 2] < -10], r[r[:, 2] > -3]
        nan = float("nan")
        worst = holds[:, 2].max() if len(holds) else nan
        return {
            "regime-L": (self.n_layers, "{}"),
            "regime-holds-n": (len(holds), "{}"),
            "regime-holds-worst": (fmt_sci_log10(worst) if len(holds) else "none", "{}"),
            "regime-fails-n": (len(fails), "{}"),
            "regime-fails-collapsed": (len(collapsed), "{}"),
            "regime-fails-cmax": (collapsed[:, 1].max() if len(collapsed) else nan, "sci"),
            "regime-kept-cmin": (kept[:, 1].min() if len(kept) else nan, "sci"),
            "regime-kept-scale": (kept[:, 0].min() if len(kept) else nan, "{:g}"),
        }


def regime_study(*, scales, samples: int, n_layers: int, n_heads: int, d_model: int, n_tokens: int,
                 seed: int, generator) -> RegimeStudy:
    """For each weight scale, ``samples`` networks (seeds ``seed + s``) on unit-residual inputs:
    the first layer's constant and the tracked relative residual after ``n_layers`` layers."""
    scales = tuple(check_positive_float("scales", s) for s in scales)
    samples, seed, generator = check_int("samples", samples), check_seed("seed", seed), _generator(generator)
    rows = []
    for scale in scales:
        for s in range(samples):
            model = SAN(_pure(n_layers, n_heads, d_model, scale), seed=seed + s)
            X = unit_residual_tokens(n_tokens, d_model, generator=generator)
            c1 = layer_constants(model, X)[0].item()
            relative = tracked_relative_residual(model, X)[-1].item()
            rows.append((scale, c1, np.log10(max(relative, UNDERFLOW))))
    return RegimeStudy(np.array(rows), n_layers)


@dataclass
class CubicRate:
    """:math:`\\log(-\\log\\rho_L)` against depth ``L = 1..depth`` (section 5): ``loglog`` is
    ``(samples, depth)`` (NaN where :math:`\\rho_L` is not in ``(0, 1)``); per network, the
    fitted slope from layer 2 on (``slopes``; networks with fewer than two such layers have
    none), the first layer's factor :math:`\\rho_1` and the layers needed to fall below
    ``1e-3`` (NaN: never)."""

    depths: np.ndarray
    loglog: np.ndarray
    slopes: list
    first_factor: np.ndarray
    n_cubic: np.ndarray

    @property
    def linear_factor(self) -> float:
        """The median first-layer factor: the rate of the linear collapse the figure compares."""
        return np.median(self.first_factor)

    def linear_curve(self) -> np.ndarray:
        """:math:`\\log(-\\log a^L)` for the linear rate ``a`` = :attr:`linear_factor`, at :attr:`depths`."""
        return np.log(-np.log(self.linear_factor) * self.depths)

    def glue(self) -> dict:
        """The fitted slope (mean, std) against log 3, the first factor, the layers to fall three
        orders of magnitude (the networks; a linear rate with the same first step), and the
        paper's illustration at a rate of 1/2 (linear against cubic steps below ``1e-3``)."""
        a = self.linear_factor
        return {
            "cubic-slope": (np.mean(self.slopes), "{:.2f}"),
            "cubic-slope-sd": (np.std(self.slopes), "{:.2f}"),
            "cubic-log3": (np.log(3), "{:.2f}"),
            "cubic-first-factor": (a, "{:.2f}"),
            "cubic-n-cubic": (np.nanmedian(self.n_cubic), "{:.0f}"),
            "cubic-n-linear": (int(np.ceil(3 / -np.log10(a))), "{}"),
            "cubic-paper-linear": (int(np.ceil(3 / np.log10(2))), "{}"),
            "cubic-paper-cubic": (next(L for L in range(1, 10) if 2.0 ** -(3**L) < 1e-3), "{}"),
        }


def cubic_rate_study(*, samples: int, n_layers: int, n_heads: int, d_model: int, n_tokens: int,
                     seed: int, generator) -> CubicRate:
    """``samples`` networks at the usual initialisation (``init_scale`` 1, seeds ``seed + s``) on
    standard normal tokens: the tracked residual's ratio :math:`\\rho_L = r_L / r_0` through depth."""
    samples, seed, generator = check_int("samples", samples), check_seed("seed", seed), _generator(generator)
    depths = np.arange(1, check_int("n_layers", n_layers) + 1)
    loglog, slopes, first, n_cubic = [], [], [], []
    for s in range(samples):
        model = SAN(_pure(n_layers, n_heads, d_model, 1.0), seed=seed + s)
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
        first.append(ratio[0])
        below = first_below(ratio, 1e-3)  # 0: the first layer
        n_cubic.append(below + 1 if below is not None else np.nan)
    return CubicRate(depths, np.array(loglog), slopes, np.array(first), np.array(n_cubic))


@dataclass
class Tightness:
    """How loose the bound is (section 6): ``gaps[form]`` holds :math:`\\log_{10}` (bound /
    tracked residual) over every layer ``l >= 1`` of ``instances`` random instances
    (:func:`rankcollapse.theory.bound_gaps`); ``violations`` counts gaps below ``-1e-9``."""

    gaps: dict
    instances: int
    violations: int

    def bins(self, count: int = 40) -> np.ndarray:
        """Histogram edges from 0 to the paper form's 95th percentile (the figure's range)."""
        return np.linspace(0, np.percentile(self.gaps["paper"], 95), check_int("count", count, minimum=2))

    def glue(self) -> dict:
        """Instances, violations, and per form the closest factor, the median and 90th percentile gap."""
        out = {"tight-instances": (self.instances, "{:,}"), "tight-violations": (self.violations, "{}")}
        for form, g in self.gaps.items():
            out[f"tight-{form}-min"] = (10 ** g.min(), "{:.1f}")
            out[f"tight-{form}-median"] = (np.median(g), "{:.1f}")
            out[f"tight-{form}-p90"] = (np.percentile(g, 90), "{:.0f}")
        return out


def tightness_study(count: int, *, seed: int) -> Tightness:
    """The bound's three forms against the tracked residual on ``count`` random instances
    (:func:`rankcollapse.theory.random_instances` with ``seed``)."""
    gaps = {"paper": [], "layerwise": [], "step": []}
    violations, instances = 0, 0
    for model, X in random_instances(count, seed=seed):
        instances += X.shape[0]
        for form, gap in bound_gaps(model, X, tuple(gaps)).items():
            violations += int((gap < -1e-9).sum())
            gaps[form] += gap.tolist()
    return Tightness({k: np.array(v) for k, v in gaps.items()}, instances, violations)


@dataclass
class CentreStudy:
    """Mean-centred against optimal residual (section 7): ``rows`` is ``(count, 5)``, each
    ``(layer, mean-centred residual, optimal residual, layerwise bound with the mean centre
    throughout, the same with the optimal centre throughout)``."""

    rows: np.ndarray
    n_tokens: int
    d_model: int

    @property
    def ratio(self) -> np.ndarray:
        """Optimal over mean-centred residual, per row (between 1/2 and 1)."""
        return self.rows[:, 2] / self.rows[:, 1]

    def glue(self) -> dict:
        """Counts and sizes, the ratio's range and median, the optimal residual's violations of
        either bound, and how the optimal-centre bound compares (layers after the input)."""
        r, ratio, later = self.rows, self.ratio, self.rows[:, 0] > 0
        return {
            "opt-count": (len(r), "{}"), "opt-n": (self.n_tokens, "{}"), "opt-d": (self.d_model, "{}"),
            "opt-ratio-min": (ratio.min(), "{:.2f}"), "opt-ratio-max": (ratio.max(), "{:.2f}"),
            "opt-ratio-median": (np.median(ratio), "{:.2f}"),
            "opt-violations": (int(np.sum(r[:, 2] > r[:, 3] * (1 + 1e-9))), "{}"),
            "opt-violations-opt": (int(np.sum(r[:, 2] > r[:, 4] * (1 + 1e-9))), "{}"),
            "opt-bound-ratio-median": (np.median(r[later, 4] / r[later, 3]), "{:.2g}"),
            "opt-bound-smaller": (np.mean(r[later, 4] < r[later, 3]), "{:.0%}"),
        }


def centre_study(*, samples: int, n_layers: int, n_heads: int, d_model: int, n_tokens: int,
                 seed: int, generator) -> CentreStudy:
    """``samples`` small networks at the usual initialisation (seeds ``seed + s``) on standard
    normal tokens: every layer's residual in both centres and the layerwise bound in each
    (the optimal centre is a linear programme: keep ``n_tokens`` and ``d_model`` small)."""
    samples, seed, generator = check_int("samples", samples), check_seed("seed", seed), _generator(generator)
    rows = []
    for s in range(samples):
        model = SAN(_pure(n_layers, n_heads, d_model, 1.0), seed=seed + s)
        X = torch.randn(n_tokens, d_model, dtype=torch.float64, generator=generator)
        bound = collapse_bound(model, X, "layerwise")
        bound_opt = collapse_bound(model, X, "layerwise", center=optimal_center)
        for l, h in enumerate(model(X).hidden_states):
            r_mean = composite_norm(res(h, center="mean")).item()
            r_opt = composite_norm(res(h, center=optimal_center)).item()
            rows.append((l, r_mean, r_opt, bound[l].item(), bound_opt[l].item()))
    return CentreStudy(np.array(rows), n_tokens, d_model)
