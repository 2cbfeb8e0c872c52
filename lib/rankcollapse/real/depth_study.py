"""The depth study of chapter "Skip connections at depth" as a result object: every model at every
seed through 8 times its depth (:func:`rankcollapse.real.depth.depth_run`), reduced to typical
curves, spreads, fitted forms (:mod:`rankcollapse.real.depth_fit`) and the theorems' constants.

Numbers only: the chapter's sentences, claims and figure are built from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validate import check_choice, check_int, check_seed, derive_seed
from .depth import FACTORS, VARIANTS, build, depth_run, texts
from .depth_cache import cached_run
from .depth_fit import fit_curve
from .hub import load

__all__ = ["PRETRAINED", "FLOORS", "DepthStudy", "depth_study"]

#: the pretrained model the study runs at its own depth and, as a probe, with its layers again
PRETRAINED = "all-MiniLM-L6-v2"
#: where a curve of each arithmetic stops being measurable: float64's rounding, float32's
FLOORS = {"float64": 1e-13, "float32": 1e-6}


def _key(variant, factor):
    return (
        ("scaled", factor)
        if variant == "scaled" and factor > 1
        else ("full" if variant == "scaled" else variant)
    )


@dataclass
class DepthStudy:
    """Every run of the study (:class:`rankcollapse.real.depth.DepthRun`), by model and seed.

    ``runs``: ``{model name: [DepthRun per seed]}`` (the pretrained model: one run, its weights
    have no seed). ``n_texts``, ``n_tokens``: the inputs of every run (the same windows of the
    book's essays in every model's vocabulary).
    """

    runs: dict
    n_texts: int
    n_tokens: int
    factors: tuple

    @property
    def names(self) -> list:
        return list(self.runs)

    def n_layers(self, name) -> int:
        """The model's native depth."""
        return self.runs[name][0].n_layers

    def curves(self, name, variant, factor: int | None = None) -> np.ndarray:
        """Every run's curve of ``variant`` (``"scaled"``: the network ``factor`` times as deep,
        its branches scaled for that depth), ``(seeds * texts, L + 1)``; for the other variants
        the network ``factor`` (default the largest) times as deep: its first ``factor L0 + 1``
        entries."""
        f = self.factors[-1] if factor is None else factor
        stacked = np.concatenate([r.curves[_key(variant, f)] for r in self.runs[name]])
        return stacked[:, : f * self.n_layers(name) + 1]

    def dtype(self, name, variant) -> str:
        return self.runs[name][0].dtypes[variant]

    def typical(self, name, variant, factor=None, per_seed: bool = False) -> np.ndarray:
        """The geometric mean over runs (``per_seed``: over each seed's texts, ``(seeds, L + 1)``),
        NaN past the layer where a collapsing run stopped."""
        c = self.curves(name, variant, factor)
        if per_seed:
            c = c.reshape(len(self.runs[name]), self.n_texts, -1)
        with np.errstate(divide="ignore"):
            logs = np.log(np.clip(c, 1e-300, None))
        return np.exp(logs.mean(axis=-2))

    def spread(self, name, variant, factor=None) -> tuple[np.ndarray, np.ndarray]:
        """The smallest and largest curve over runs (seeds and texts), each ``(L + 1,)``."""
        c = self.curves(name, variant, factor)
        return c.min(axis=0), c.max(axis=0)

    def fit(self, name, variant, factor=None, per_seed: bool = False):
        """The fitted form (:class:`~rankcollapse.real.depth_fit.Fit`) of the typical curve
        (``per_seed``: a list, one per seed), floored by the variant's arithmetic
        (:data:`FLOORS`)."""
        floor = FLOORS[self.dtype(name, variant)]
        if per_seed:
            return [fit_curve(g, floor=floor) for g in self.typical(name, variant, factor, True)]
        return fit_curve(self.typical(name, variant, factor), floor=floor)

    def growth(self, name, variant, which: str, factor=None) -> float:
        """How many times ``which`` (``"residual"``: ``||res(X_L)||``; ``"mean"``: ``||1 x_L^T||``,
        the mean token repeated) grew from the input to the last layer of the network ``factor``
        (default the largest) times as deep: the geometric mean over runs of each run's ratio
        (NaN where a run stopped before). The relative residual is the first over ``||X_L||``: it
        falls when the residual shrinks or when the mean grows."""
        check_choice("which", which, ("residual", "mean"))
        f = self.factors[-1] if factor is None else factor
        key = _key(variant, f)
        norms = [
            (r.residual_norms if which == "residual" else r.mean_norms)[key]
            for r in self.runs[name]
        ]
        c = np.concatenate(norms)[:, : f * self.n_layers(name) + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.exp(np.log(c[:, -1] / c[:, 0]).mean()))

    def underflowed(self, name, variant) -> list:
        """The layers at which a run's tokens of ``variant`` shrank to zero (underflow: a loss of
        scale, not of rank), one per run that did."""
        return [r.underflow[variant] for r in self.runs[name] if variant in r.underflow]

    def last(self, name, variant, factor: int) -> float:
        """The typical relative residual after the last layer of the network ``factor`` times as
        deep (NaN where the variant stopped at rounding error before it)."""
        return float(self.typical(name, variant, factor)[-1])

    def first(self, name) -> float:
        """The typical relative residual of the input (the embeddings)."""
        return float(self.typical(name, "full", 1)[0])

    def constants(self, name, which: str) -> np.ndarray:
        """Each layer's theorem constant ``which`` (``"c_floor"``, ``"omega"``, ``"k"``) at every
        seed, ``(seeds, L_max)``."""
        return np.stack([r.constants[which] for r in self.runs[name]])

    def floor_layer(self, name, variant) -> float:
        """The first layer at which the typical curve is below its arithmetic's floor (NaN if
        none)."""
        g = self.typical(name, variant)
        hit = np.nonzero(np.nan_to_num(g, nan=0.0) < FLOORS[self.dtype(name, variant)])[0]
        return float(hit[0]) if hit.size else math.nan

    def forms(self) -> dict:
        """``{(name, variant): Fit}`` of every model and variant at the largest depth
        (``"scaled"``: its network that deep)."""
        out = {}
        for name in self.names:
            for variant in VARIANTS:
                if _key(variant, self.factors[-1]) in self.runs[name][0].curves:
                    out[(name, variant)] = self.fit(name, variant)
        return out


def depth_study(
    names,
    seed: int,
    n_seeds: int,
    n_texts: int,
    n_tokens: int,
    *,
    factors=FACTORS,
    width: int | None = None,
    heads: int | None = None,
    pretrained: bool = True,
    float32=(),
    layers=None,
    cache: bool = True,
) -> DepthStudy:
    """Every model of ``names`` at ``n_seeds`` seeds derived from ``seed`` (``seed * n_seeds +
    i``, so that two runs' seeds never overlap) through ``max(factors)`` times its depth, on
    ``n_texts`` windows of ``n_tokens`` tokens, and (``pretrained``) the pretrained MiniLM with
    its own layers applied again (one run, its weights being seedless).

    Built by transformers at initialisation (:func:`rankcollapse.real.depth.build`, narrowed to
    ``width`` and ``heads`` when given); ALBERT's shared layer applied again, the others' further
    layers drawn (:func:`rankcollapse.real.depth.deeper_layers`). ``float32``: the variants run
    in float32 (:func:`rankcollapse.real.depth.depth_run`). ``layers``: ``{name: native depth}``
    for models built at another depth than their published one. ``cache``: each model's run at
    each seed is kept on disk and reused by a later study of the same settings and code
    (:mod:`rankcollapse.real.depth_cache`).
    """
    layers = {} if layers is None else dict(layers)
    n_texts, n_tokens = check_int("n_texts", n_texts), check_int("n_tokens", n_tokens)
    seed, n_seeds = check_seed("seed", seed), check_int("n_seeds", n_seeds)
    seeds = [derive_seed(seed, i, stride=n_seeds) for i in range(n_seeds)]
    factors = tuple(sorted(set(factors)))
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be True or False, got {cache!r}")
    float32 = tuple(sorted(float32))
    common = dict(n_texts=n_texts, n_tokens=n_tokens, factors=list(factors), float32=float32)

    def one(name, s):
        def compute():
            if name == PRETRAINED:
                model = load(PRETRAINED, True)
            else:
                model = build(name, s, width=width, heads=heads, layers=layers.get(name))
            # ALBERT: one layer's weights for every layer; MiniLM: its own layers again (a probe)
            again = name == PRETRAINED or model.family == "albert"
            ids = texts(model, n_texts, n_tokens)
            return depth_run(
                model,
                ids,
                s,
                factors=factors,
                extension="repeat" if again else "draw",
                float32=float32,
            )

        if not cache:
            return compute()
        narrowed = name != PRETRAINED and width is not None
        settings = dict(
            common,
            name=name,
            seed=s,
            width=width if narrowed else None,
            heads=heads if narrowed else None,
            layers=layers.get(name),
        )
        return cached_run(settings, compute)[0]

    runs = {name: [one(name, s) for s in seeds] for name in names}
    if pretrained:
        runs[PRETRAINED] = [one(PRETRAINED, seeds[0])]
    return DepthStudy(runs, n_texts, n_tokens, factors)
