"""The open problem, explored: how small can the residual get *with* skip connections?

Dong et al. (2021) prove that some parameterisations with skips keep
:math:`\\lVert\\operatorname{res}(X_L)\\rVert \\ge \\lVert\\operatorname{res}(X)\\rVert`, call their
upper bound with skips "vacuously large" and pose a tight lower bound as an open problem. This
module gathers the book's evidence about it, with no claim of proof:

- :func:`skip_search`: the skip chapter's local search (:func:`rankcollapse.theory.search_smallest_ratio`)
  for the smallest ratio :math:`\\lVert\\operatorname{res}(X_L)\\rVert/\\lVert\\operatorname{res}(X)\\rVert`
  at a fixed weight scale, over depths, with the power law through the smallest ratios found
  (:func:`rankcollapse.stats.log_slope`), next to the same networks without skips at
  initialisation (:func:`rankcollapse.theory.tracked_relative_residual` of the pure network);
- :func:`real_skip_residuals`: the relative residual of real models' attention with skips
  and with none (the clean ``san+skip`` and ``san`` ablations of :mod:`rankcollapse.real`).

Book: chapter "What the theorem does not say", section 5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from . import theory
from ._validate import check_int, check_positive_float, check_seed
from .book import fmt_sci_log10
from .san import SAN, SANConfig
from .stats import geometric_mean, log_slope

__all__ = ["SkipSearch", "skip_search", "RealSkip", "real_skip_residuals"]


@dataclass
class SkipSearch:
    """The smallest residual ratio found with skips, per depth, and the pure networks' ratio.

    ``depths`` ``(k,)``; ``initial``: the ratio with skips at initialisation (median over
    restarts); ``best``: the smallest found by the search; ``pure``: the ratio of the same
    initial weights without skips (tracked below float64's floor, 0 after underflow).
    """

    depths: np.ndarray
    initial: np.ndarray
    best: np.ndarray
    pure: np.ndarray
    scale: float
    steps: int

    def exponent(self) -> float:
        """``a`` of the power law ``best ~ L^a`` fitted through the smallest ratios (log-log)."""
        return log_slope(self.depths, self.best, log_x=True)

    def glue(self) -> dict:
        pure_last = float(self.pure[-1])  # 0 after underflow: 'below 10^-300'
        return {"lim-open-scale": (self.scale, "{:g}"), "lim-open-steps": (self.steps, "{}"),
                "lim-open-Lmax": (int(self.depths[-1]), "{}"),
                "lim-open-best-1": (float(self.best[0]), "{:.2f}"),
                "lim-open-best-Lmax": (float(self.best[-1]), "{:.2f}"),
                "lim-open-exponent": (self.exponent(), "{:.2f}"),
                "lim-open-pure-Lmax": (fmt_sci_log10(np.log10(pure_last) if pure_last > 0 else -np.inf), "{}")}


def skip_search(depths, *, n: int, d: int, H: int, scale: float, steps: int, restarts: int = 1,
                seed: int = 0) -> SkipSearch:
    """:func:`rankcollapse.theory.search_smallest_ratio` for each depth of ``depths`` on one input of
    ``n`` standard normal tokens of width ``d`` (seeded by ``seed``), ``H`` heads, weights held at
    the Frobenius norms of ``init_scale = scale``; and the pure networks (same seeds, no skips) at
    initialisation. A :class:`SkipSearch`."""
    depths = [check_int("depths", L) for L in depths]
    if len(depths) < 2 or sorted(set(depths)) != depths:
        raise ValueError(f"depths must be at least two increasing depths, got {depths}")
    n, d, H = check_int("n", n, minimum=2), check_int("d", d), check_int("H", H)
    scale = check_positive_float("scale", scale)
    seed = check_seed("seed", seed)
    X = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    initial, best, pure = [], [], []
    for L in depths:
        cfg = SANConfig(n_layers=L, n_heads=H, d_model=d, skip=True, init_scale=scale)
        found = theory.search_smallest_ratio(cfg, X, steps=steps, restarts=restarts, seed=seed)
        initial.append(float(np.median(found["initial"])))
        best.append(found["best"])
        net = SAN(cfg.replace(skip=False), seed=seed)  # the search's first restart, without skips
        r = theory.tracked_residual(net, X)
        pure.append(float(r[-1] / r[0]))
    return SkipSearch(np.array(depths, dtype=float), np.array(initial), np.array(best), np.array(pure),
                      scale, steps)


@dataclass
class RealSkip:
    """Per real model: the last layer's relative residual with skips and without (clean surgery),
    geometric means over sequences, ``{label: (with_skip, without)}``."""

    last: dict

    def glue(self) -> dict:
        skip = [v[0] for v in self.last.values()]
        pure = [v[1] for v in self.last.values()]
        return {"lim-skip-real-min": (min(skip), "{:.2f}"), "lim-skip-real-max": (max(skip), "{:.2f}"),
                "lim-noskip-real-max": (max(pure), "sci")}


def real_skip_residuals(models, n_seq: int, n_tokens: int) -> RealSkip:
    """The clean ``san+skip`` (attention with skips, nothing else) and ``san`` ablations of each
    real model (:func:`rankcollapse.real.residual_curve`, float64) on ``n_seq`` windows of
    ``n_tokens`` tokens of the book's text, last layer. A :class:`RealSkip`."""
    from .real import residual_curve, token_windows

    models = list(models)
    if not models:
        raise ValueError("models must hold at least one RealModel")
    last = {}
    for m in models:
        ids = token_windows(m, n_seq, n_tokens)
        with_skip = residual_curve(m, ids, "san+skip", "clean")[:, -1].numpy()
        without = residual_curve(m, ids, "san", "clean")[:, -1].numpy()
        last[m.label] = (float(geometric_mean(with_skip)), float(geometric_mean(without)))
    return RealSkip(last)

