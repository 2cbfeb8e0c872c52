"""The collapse bound measured on random pure-attention networks, as result objects.

Each function runs one measurement of the book's collapse bound (:mod:`rankcollapse.theory`)
and returns an object holding the raw results (what a figure draws) and the numbers the prose
states (:meth:`numbers`: a dict of floats and ints, no formats and no words; the chapter glues
them and states, beside them, the claims they decide):

- :func:`depth_study`: the residual against depth, forward pass, tracked and bounded;
- :func:`regime_study`: the relative residual after ``L`` layers against the layer constants,
  over weight scales (where the condition holds and where it fails), and how hard the attention is;
- :func:`delay_study`: the networks that kept their residual, run deeper: the layer where each
  collapses;
- :func:`tightness_study`: how far the bound lies above the tracked residual on random instances;
- :func:`centre_study`: the mean-centred against the optimal residual, and the bound in each centre.

(the last two in :mod:`.bound_tightness`, re-exported here).

The cubic rate itself (one layer's two powers, and the rate through depth) is measured in
:mod:`.cubic_rate`.

Random inputs come from the ``generator`` passed (a chapter's ``run.stream().generator``), in
the order the functions are called; network ``s`` of a study is seeded ``seed + s``. Above the
core: it imports the core, :mod:`.stats` and :mod:`.centering`. Book: chapter "Pure attention
collapses", sections 2 to 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import (
    check_generator,
    check_index,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from .bound_tightness import (  # noqa: F401  (the studies and their results re-exported)
    CentreStudy,
    Tightness,
    centre_study,
    pure_config,
    tightness_study,
)
from .ops import check_runs
from .residual import UNDERFLOW_LOG10
from .san import SAN
from .theory import (
    attention_hardness,
    depth_profile,
    layer_constants,
    tracked_relative_residual,
    unit_residual_tokens,
)

__all__ = [
    "DepthStudy",
    "depth_study",
    "RegimeStudy",
    "regime_study",
    "DelayStudy",
    "delay_study",
    "Tightness",
    "tightness_study",
    "CentreStudy",
    "centre_study",
]

UNDERFLOW = 10.0**UNDERFLOW_LOG10  # a tracked residual below this has underflowed


@dataclass
class DepthStudy:
    """Residual against depth (section 3): ``curves[H]`` maps ``"size"``, ``"forward"``,
    ``"tracked"``, ``"paper"``, ``"layerwise"`` to ``(samples, L+1)`` arrays of :math:`\\log_{10}`
    and ``"c"`` to the ``(samples,)`` largest layer constants
    (:func:`rankcollapse.theory.depth_profile`); ``"relative"`` is ``tracked - size``, the
    :math:`\\log_{10}` relative residual."""

    curves: dict
    init_scale: float
    samples: int

    def __post_init__(self):
        for c in self.curves.values():
            if "size" in c and "relative" not in c:
                c["relative"] = c["tracked"] - c["size"]

    def median(self, H: int, key: str, layer: int) -> float:
        """``10**`` the median over networks of curve ``key`` at ``layer`` (``H`` heads; ``0 <=
        layer <= L``,
        a negative layer is refused, not read from the end)."""
        if H not in self.curves:
            raise ValueError(
                f"H must be one of the head counts studied {sorted(self.curves)}, got {H!r}"
            )
        curves = self.curves[H]
        if key not in curves:
            raise ValueError(f"key must be one of {sorted(curves)}, got {key!r}")
        layer = check_index("layer", layer, curves[key].shape[1], what="depths 0 .. L")
        return float(10 ** np.median(curves[key][:, layer]))

    def numbers(self) -> dict:
        """Sizes; per head count (``_1``: one head, ``_H``: the most heads) the largest constant,
        the residual and the paper-form bound after two layers, the tokens' size's median change
        per layer (``size_step``, in decades) and the relative residual after two layers; the
        forward pass's floor (the higher median of its last layer); violations of the layerwise
        bound by the tracked residual; the largest relative residual at the last layer where it
        is finite."""
        one, many = min(self.curves), max(self.curves)
        out = {
            "H": many,
            "samples": self.samples,
            "init_scale": self.init_scale,
            "floor": float(10 ** max(np.median(c["forward"][:, -1]) for c in self.curves.values())),
            "violations": sum(
                int(np.sum(c["tracked"] > c["layerwise"] + 1e-9)) for c in self.curves.values()
            ),
        }
        for suffix, H in (("1", one), ("H", many)):
            c = self.curves[H]
            out[f"c_max_{suffix}"] = float(c["c"].max())
            out[f"layer2_{suffix}"] = self.median(H, "tracked", 2)
            out[f"bound2_{suffix}"] = self.median(H, "paper", 2)
            out[f"relative2_{suffix}"] = self.median(H, "relative", 2)
            out[f"size_step_{suffix}"] = float(np.median(np.diff(c["size"], axis=1)))
        return out


def depth_study(
    *,
    heads,
    n_layers: int,
    d_model: int,
    n_tokens: int,
    init_scale: float,
    samples: int,
    seed: int,
    generator,
) -> DepthStudy:
    """For each head count in ``heads``, ``samples`` pure attention networks (seeds ``seed + s``)
    on inputs of ``n_tokens`` tokens scaled to a unit residual
    (:func:`rankcollapse.theory.unit_residual_tokens`), profiled through depth."""
    heads = tuple(check_int("heads", H) for H in heads)
    if not heads:
        raise ValueError("heads must list at least one head count, got none")
    samples, seed, generator = (
        check_int("samples", samples),
        check_seed("seed", seed),
        check_generator("generator", generator),
    )
    init_scale = check_positive_float("init_scale", init_scale)
    n_tokens = check_int("n_tokens", n_tokens, minimum=2)
    # every head count's networks, costed as the largest's, before any is built
    check_runs(
        pure_config(n_layers, max(heads), d_model, init_scale),
        (n_tokens, d_model),
        samples * len(heads),
    )
    curves = {}
    for H in heads:
        cfg = pure_config(n_layers, H, d_model, init_scale)
        profiles = [
            depth_profile(
                SAN(cfg, seed=derive_seed(seed, s)),
                unit_residual_tokens(n_tokens, d_model, generator=generator),
            )
            for s in range(samples)
        ]
        curves[H] = {k: np.array([p[k].numpy() for p in profiles]) for k in profiles[0]}
    return DepthStudy(curves, init_scale, samples)


@dataclass
class RegimeStudy:
    """Relative residual against the layer constants (section 4): ``rows`` is ``(count, 6)``,
    each ``(init_scale, log10 c_1, log10 max_l c_l, log10 relative residual after L layers, mean row
    maximum of the attention, mean number of distinct attention targets per head)``; the
    residual floored at ``10**-300`` (underflow), the constants' logs finite where
    :math:`c_l` overflows (:func:`rankcollapse.theory.layer_constants`), the last two from
    :func:`rankcollapse.theory.attention_hardness` (averaged over layers and heads)."""

    rows: np.ndarray
    n_layers: int
    n_tokens: int

    COLLAPSED = -10.0  #: log10 relative residual below which a network counts as collapsed
    KEPT = -3.0  #: log10 relative residual above which it counts as having kept its residual

    def numbers(self) -> dict:
        """How many networks meet the condition (every layer's constant below 1) and the largest
        log10 relative residual they keep; whether each of them also has ``c_1 < 1`` (the
        figure's axis); how many fail it and still collapse, up to which ``c_1``; the smallest
        ``c_1`` and weight scale that keep the relative residual above ``10**KEPT``; how hard
        the attention is in those (row maximum, distinct targets) and, for contrast, in the
        networks at the smallest weight scale; the largest log10 ``max_l c_l``. NaN where a group
        is empty."""
        r = self.rows
        holds, fails = r[r[:, 2] < 0], r[r[:, 2] >= 0]
        collapsed, kept = fails[fails[:, 3] < self.COLLAPSED], r[r[:, 3] > self.KEPT]
        small = r[r[:, 0] == r[:, 0].min()]
        nan = float("nan")

        def top(a, col, f):
            return float(f(a[:, col])) if len(a) else nan

        return {
            "L": self.n_layers,
            "n": self.n_tokens,
            "holds_n": len(holds),
            "holds_worst_log10": top(holds, 3, np.max),
            "holds_c1_below_one": bool(np.all(holds[:, 1] < 0)),
            "fails_n": len(fails),
            "fails_collapsed": len(collapsed),
            "fails_cmax": float(np.power(10.0, top(collapsed, 1, np.max))),
            "kept_n": len(kept),
            "kept_cmin": float(np.power(10.0, top(kept, 1, np.min))),
            "kept_scale": top(kept, 0, np.min),
            "kept_row_max": top(kept, 4, np.mean),
            "kept_targets": top(kept, 5, np.mean),
            "kept_targets_min": top(kept, 5, np.min),
            "small_scale": float(r[:, 0].min()),
            "small_row_max": top(small, 4, np.mean),
            "log10_cmax_max": float(np.max(r[:, 2])),
        }


def regime_study(
    *,
    scales,
    samples: int,
    n_layers: int,
    n_heads: int,
    d_model: int,
    n_tokens: int,
    seed: int,
    generator,
) -> RegimeStudy:
    """For each weight scale, ``samples`` networks (seeds ``seed + s``) on unit-residual inputs:
    the first layer's constant, the largest (:math:`\\log_{10}`), the tracked relative residual
    after ``n_layers`` layers, and how hard the attention is."""
    scales = tuple(check_positive_float("scales", s) for s in scales)
    samples, seed, generator = (
        check_int("samples", samples),
        check_seed("seed", seed),
        check_generator("generator", generator),
    )
    n_tokens = check_int("n_tokens", n_tokens, minimum=2)
    check_runs(
        pure_config(n_layers, n_heads, d_model, 1.0), (n_tokens, d_model), samples * len(scales)
    )
    rows = []
    for scale in scales:
        for s in range(samples):
            model = SAN(pure_config(n_layers, n_heads, d_model, scale), seed=derive_seed(seed, s))
            X = unit_residual_tokens(n_tokens, d_model, generator=generator)
            logc = layer_constants(model, X, log10=True)
            relative = tracked_relative_residual(model, X)[-1].item()
            hard = attention_hardness(model, X)
            rows.append(
                (
                    scale,
                    logc[0].item(),
                    logc.max().item(),
                    np.log10(max(relative, UNDERFLOW)),
                    hard["row_max"].mean().item(),
                    hard["targets"].double().mean().item(),
                )
            )
    return RegimeStudy(np.array(rows), n_layers, n_tokens)


@dataclass
class DelayStudy:
    """The networks of a :class:`RegimeStudy` that kept their residual after its ``L`` layers, run
    deeper (section 4): ``rows`` is ``(count, 4)``, each ``(init_scale, depth run, first layer whose
    tracked relative residual is below 10**KEPT, first layer below 10**COLLAPSED)``, NaN where it
    never falls below within the depth run. ``depth run`` is the requested depth, or half of it as
    often as needed for the forward pass to stay finite (large value maps overflow float64)."""

    rows: np.ndarray
    regime_layers: int

    def numbers(self) -> dict:
        """How many networks were run deeper and how many collapsed (below 10**COLLAPSED) within
        their depth; the first and last layer at which they did; the smallest depth run."""
        r = self.rows
        done = r[np.isfinite(r[:, 3])]
        nan = float("nan")
        return {
            "n": len(r),
            "collapsed": len(done),
            "regime_L": self.regime_layers,
            "first_layer_min": float(done[:, 3].min()) if len(done) else nan,
            "first_layer_max": float(done[:, 3].max()) if len(done) else nan,
            "depth_min": float(r[:, 1].min()) if len(r) else nan,
        }


def delay_study(
    regime: RegimeStudy,
    *,
    samples: int,
    n_heads: int,
    d_model: int,
    depth: int,
    seed: int,
    generator,
) -> DelayStudy:
    """Every network of ``regime`` (built by :func:`regime_study` with ``samples`` networks per
    scale, seeded ``seed + s``) whose relative residual stayed above ``10**RegimeStudy.KEPT``,
    rebuilt with the same scale and seed at ``depth`` layers and run on a fresh unit-residual input:
    the layers at
    which its tracked relative residual first falls below ``10**KEPT`` and ``10**COLLAPSED``."""
    if not isinstance(regime, RegimeStudy):
        raise TypeError(f"regime must be a RegimeStudy (regime_study), got {type(regime).__name__}")
    samples, seed, generator = (
        check_int("samples", samples),
        check_seed("seed", seed),
        check_generator("generator", generator),
    )
    depth = check_int("depth", depth)
    kept = int(np.sum(regime.rows[:, 3] > RegimeStudy.KEPT)) if len(regime.rows) else 0
    check_runs(
        pure_config(depth, n_heads, d_model, 1.0),
        (regime.n_tokens, d_model),
        kept,
        name="samples (the regime's kept networks)",
    )
    rows = []
    for i, row in enumerate(regime.rows):
        if not row[3] > RegimeStudy.KEPT:
            continue
        scale, s = float(row[0]), i % samples
        X = unit_residual_tokens(regime.n_tokens, d_model, generator=generator)
        L = depth
        while True:
            model = SAN(pure_config(L, n_heads, d_model, scale), seed=derive_seed(seed, s))
            try:
                r = tracked_relative_residual(model, X).numpy()
                break
            except ValueError:  # the forward pass overflowed: run a shallower network
                if L == 1:
                    raise
                L //= 2
        logr = np.log10(np.maximum(r, UNDERFLOW))
        first = [
            float(np.argmax(logr < t)) if (logr < t).any() else float("nan")
            for t in (RegimeStudy.KEPT, RegimeStudy.COLLAPSED)
        ]
        rows.append((scale, L, *first))
    return DelayStudy(np.array(rows).reshape(-1, 4), regime.n_layers)
