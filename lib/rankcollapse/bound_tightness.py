"""How close the book's collapse bound lies: its gap to the tracked residual on random instances
(:func:`tightness_study`), and the residual and the bound in the mean and the optimal centre
(:func:`centre_study`). Result objects as :mod:`rankcollapse.bound_study`'s, which re-exports
them. Book: chapter "Pure attention collapses".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ._validate import check_generator, check_int, check_seed, derive_seed
from .centering import optimal_center
from .ops import check_runs
from .residual import composite_norm, res
from .san import SAN, SANConfig
from .theory import bound_gaps, collapse_bound, random_instances

__all__ = ["Tightness", "tightness_study", "CentreStudy", "centre_study"]


def pure_config(n_layers, n_heads, d_model, init_scale) -> SANConfig:
    return SANConfig(n_layers=n_layers, n_heads=n_heads, d_model=d_model, init_scale=init_scale)


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
        return np.linspace(
            0, np.percentile(self.gaps["paper"], 95), check_int("count", count, minimum=2)
        )

    def numbers(self) -> dict:
        """Instances, violations, and per form (``<form>_...``) the closest factor (``min``: 10 to
        the smallest gap), the median and the 90th percentile gap (decades)."""
        out = {"instances": self.instances, "violations": self.violations}
        for form, g in self.gaps.items():
            out[f"{form}_min"] = float(10 ** g.min())
            out[f"{form}_median"] = float(np.median(g))
            out[f"{form}_p90"] = float(np.percentile(g, 90))
        return out


def tightness_study(count: int, *, seed: int) -> Tightness:
    """The bound's three forms against the tracked residual on ``count`` random instances
    (:func:`rankcollapse.theory.random_instances` with ``seed``)."""
    count = check_int("count", count)
    # random_instances' defaults: a model per 10 inputs, each at most 4 layers of 3 heads, 12 tokens
    # of width 12
    check_runs(
        SANConfig(n_layers=4, n_heads=3, d_model=12), (10, 12, 12), -(-count // 10), name="count"
    )
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

    def numbers(self) -> dict:
        """Counts and sizes, the ratio's range and median, the optimal residual's violations of
        either bound, and how the optimal-centre bound compares (layers after the input)."""
        r, ratio, later = self.rows, self.ratio, self.rows[:, 0] > 0
        return {
            "count": len(r),
            "n": self.n_tokens,
            "d": self.d_model,
            "ratio_min": float(ratio.min()),
            "ratio_max": float(ratio.max()),
            "ratio_median": float(np.median(ratio)),
            "violations": int(np.sum(r[:, 2] > r[:, 3] * (1 + 1e-9))),
            "violations_opt": int(np.sum(r[:, 2] > r[:, 4] * (1 + 1e-9))),
            "bound_ratio_median": float(np.median(r[later, 4] / r[later, 3])),
            "bound_smaller": float(np.mean(r[later, 4] < r[later, 3])),
        }


def centre_study(
    *, samples: int, n_layers: int, n_heads: int, d_model: int, n_tokens: int, seed: int, generator
) -> CentreStudy:
    """``samples`` small networks at the usual initialisation (seeds ``seed + s``) on standard
    normal tokens: every layer's residual in both centres and the layerwise bound in each
    (the optimal centre is a linear programme: keep ``n_tokens`` and ``d_model`` small)."""
    samples, seed, generator = (
        check_int("samples", samples),
        check_seed("seed", seed),
        check_generator("generator", generator),
    )
    n_tokens, d_model = check_int("n_tokens", n_tokens), check_int("d_model", d_model)
    # every layer solves linear programmes (the optimal centre, twice): about ten layer passes'
    # Python time
    check_runs(
        pure_config(n_layers, n_heads, d_model, 1.0), (n_tokens, d_model), samples, per_layer=10
    )
    rows = []
    for s in range(samples):
        model = SAN(pure_config(n_layers, n_heads, d_model, 1.0), seed=derive_seed(seed, s))
        X = torch.randn(n_tokens, d_model, dtype=torch.float64, generator=generator)
        bound = collapse_bound(model, X, "layerwise")
        bound_opt = collapse_bound(model, X, "layerwise", center=optimal_center)
        for l, h in enumerate(model(X).hidden_states):
            r_mean = composite_norm(res(h, center="mean")).item()
            r_opt = composite_norm(res(h, center=optimal_center)).item()
            rows.append((l, r_mean, r_opt, bound[l].item(), bound_opt[l].item()))
    return CentreStudy(np.array(rows), n_tokens, d_model)
