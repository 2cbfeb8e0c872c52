"""The real-transformers chapter's measurements, as result objects holding numbers and figure data.

Each function runs one of the chapter's measurements and returns an object holding the raw
results (what the figures draw) and methods that reduce them to numbers (a typical curve, the
layer where a curve reaches rounding error, a median over paths). The chapter builds its tables,
glued values and sentences from those numbers. Book: chapter "Real transformers", sections 3 to 6
(:func:`deeper_study`: section 3, ALBERT's shared layer applied past its own depth).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .._validate import check_int, check_seed
from ..centering import optimal_center
from ..stats import first_below, log_slope
from ..stats import geometric_mean as gmean
from .families import transformers_model
from .measure import hidden_states, residual_curve, residual_curves
from .model import RealModel, check_model
from .products import path_profile
from .text import token_windows

__all__ = [
    "FLOOR",
    "by_name",
    "Ablations",
    "ablations",
    "Centres",
    "centres",
    "PathProducts",
    "path_products_study",
    "applied_again",
    "Deeper",
    "deeper_study",
]

FLOOR = 1e-12  # below this a float64 relative residual is rounding error


def by_name(models, name):
    """The model of ``models`` whose ``name`` is ``name`` (a ``KeyError`` naming it if none)."""
    for m in models:
        if m.name == name:
            return m
    raise KeyError(f"no model named {name!r} among {[m.name for m in models]}")


@dataclass
class Ablations:
    """Every model's relative-residual curves for every (variant, surgery) (sections 3 and 4).

    ``curves``: ``{(model.label, variant, surgery): array (n_seq, L + 1)}``, as
    :func:`rankcollapse.real.measure.residual_curves` returns them.
    """

    models: list
    curves: dict

    def typical(self, model, variant, surgery) -> np.ndarray:
        """The geometric mean over sequences of one curve, ``(L + 1,)`` (what the figure draws)."""
        return gmean(self.curves[(model.label, variant, surgery)])

    def last(self, model, variant, surgery) -> float:
        """The typical relative residual after the last layer."""
        return float(self.typical(model, variant, surgery)[-1])

    def drop(self, model, variant, surgery) -> float:
        """The typical relative residual at the input over its value after the last layer."""
        g = self.typical(model, variant, surgery)
        return float(g[0] / g[-1])

    def floor_layer(self, model, variant, surgery, level: float = FLOOR, default=None):
        """The first layer whose typical relative residual is below ``level`` (``default`` if
        none)."""
        return first_below(self.typical(model, variant, surgery), level, default=default)

    def decades_per_layer(self, model, variant, surgery, level: float = 1e-13) -> float:
        """Orders of magnitude lost per layer: minus the slope of ``log10`` of the typical curve
        against layer, fitted from layer 1 to the last layer above ``level`` (at least two
        layers)."""
        g = self.typical(model, variant, surgery)
        k = max(2, min(first_below(g, level, default=len(g) - 1), len(g) - 1))
        return -log_slope(np.arange(1, k + 1), g[1 : k + 1], base=10)

    def log_steps(self, model, variant, surgery, level: float = 1e-13) -> np.ndarray:
        """Orders of magnitude lost at each layer, ``log10(g_{l-1} / g_l)`` of the typical curve
        ``g``, from the input to the last layer still above ``level`` (a fall into rounding error
        is left out), ``(k,)``; empty when layer 1 is already below ``level``."""
        g = self.typical(model, variant, surgery)
        k = first_below(g, level, default=len(g))
        return -np.diff(np.log10(g[:k]))


def ablations(
    models, n_seq: int, n_tokens: int, *, batch_size: int = 8, progress: bool = True
) -> Ablations:
    """:func:`rankcollapse.real.measure.residual_curves` of ``models`` (float64 where a curve falls
    to rounding error, float32 where it stays of order one), as an :class:`Ablations`."""
    check_int("n_seq", n_seq), check_int("n_tokens", n_tokens)
    curves = residual_curves(
        models, n_seq, n_tokens, dtype="auto", batch_size=batch_size, progress=progress
    )
    return Ablations(list(models), curves)


@dataclass
class Centres:
    """Mean against optimal centre on one model (section 5): curves ``(n_seq, L + 1)`` per
    variant."""

    n_seq: int
    n_tokens: int
    mean: dict = field(default_factory=dict)
    optimal: dict = field(default_factory=dict)

    def ratio(self, variant) -> np.ndarray:
        """Optimal over mean-centred residual, layer by layer (1 where the mean one is 0)."""
        m = self.mean[variant]
        return self.optimal[variant] / np.where(m > 0, m, 1)

    def typical(self, variant, centre: str = "mean") -> np.ndarray:
        """The geometric mean over sequences of ``variant``'s curve with ``centre`` (``"mean"`` or
        ``"optimal"``), ``(L + 1,)``."""
        return gmean({"mean": self.mean, "optimal": self.optimal}[centre][variant])


def centres(model, n_seq: int, n_tokens: int, variants=("full", "san+skip", "san")) -> Centres:
    """Each ``variant`` (clean surgery) of ``model`` with the column-mean and the optimal centre
    (a linear programme per matrix, :func:`rankcollapse.residual.res`), as a :class:`Centres`."""
    check_model(model)
    ids = token_windows(model, n_seq, n_tokens)
    out = Centres(n_seq, n_tokens)
    for v in variants:
        out.mean[v] = residual_curve(model, ids, v, "clean").numpy()
        out.optimal[v] = residual_curve(model, ids, v, "clean", center=optimal_center).numpy()
    return out


@dataclass
class PathProducts:
    """Relative residual of attention products along sampled paths (section 6).

    ``profiles``: ``{(model.label, order, against): array (n_seq * n_paths, L)}``, column ``k``
    for paths of ``k + 1`` heads (:func:`rankcollapse.real.products.path_profile`).
    """

    models: list
    profiles: dict

    def medians(self, model, order="correct", against="mean") -> np.ndarray:
        """The median over paths for every length, ``(L,)`` (entry ``k`` for ``k + 1`` heads)."""
        return np.median(self.profiles[(model.label, order, against)], axis=0)

    def median(self, model, order, against, length) -> float:
        """The median over paths of ``length`` heads."""
        return float(self.medians(model, order, against)[length - 1])


def path_products_study(
    models,
    n_seq: int,
    n_tokens: int,
    n_paths: int,
    seed: int,
    *,
    batch_size: int = 8,
    detailed: str = "all-MiniLM-L6-v2",
) -> PathProducts:
    """Attention products of every model's full forward pass (float64) along ``n_paths`` random
    paths per length, both orders against ``1 x^T``; for the ``detailed`` model also against the
    SVD's rank-1 approximation (the official code's reference). A :class:`PathProducts`."""
    check_int("n_seq", n_seq), check_int("n_tokens", n_tokens)
    check_int("n_paths", n_paths)
    check_seed("seed", seed)
    profiles = {}
    for m in models:
        ids = token_windows(m, n_seq, n_tokens)
        _, attn = hidden_states(m, ids, "full", return_attentions=True, batch_size=batch_size)
        for order in ("correct", "reversed"):
            for against in ("mean", "rank1") if m.name == detailed and m.pretrained else ("mean",):
                profiles[(m.label, order, against)] = path_profile(
                    attn, n_paths, seed, order=order, against=against
                ).numpy()
        del attn
    return PathProducts(list(models), profiles)


def applied_again(model, n_layers: int) -> RealModel:
    """ALBERT ``model`` with its one shared layer applied ``n_layers`` times instead of its own
    number: the same weights, ``num_hidden_layers = n_layers`` in its configuration (a new
    transformers model, :func:`rankcollapse.real.families.transformers_model` of that
    configuration, into which the original's state dict is loaded, strictly: ALBERT's
    parameters do not depend on its depth). Only a model whose layers all share one set of
    weights can be deepened so (``ValueError`` otherwise)."""
    check_model(model)
    n_layers = check_int("n_layers", n_layers)
    config = model.hf.config
    if model.family != "albert" or config.num_hidden_groups != 1:
        raise ValueError(
            f"model must be an ALBERT whose layers share one set of weights (num_hidden_groups=1), "
            f"got {model.name} ({model.family})"
        )
    deeper = type(config)(**{**config.to_dict(), "num_hidden_layers": n_layers})
    hf = transformers_model("albert", deeper)
    hf.load_state_dict(model.hf.state_dict(), strict=True)
    return RealModel(
        model.name,
        model.family,
        hf,
        model.pretrained,
        f"{model.source}, its shared layer applied {n_layers} times",
        model.tokenizer,
        model.cls_sep,
    )


@dataclass
class Deeper:
    """Relative-residual curves of ALBERT models with their shared layer applied ``n_layers``
    times (chapter "Real transformers", section 3).

    ``curves``: ``{(i, variant): array (n_seq, n_layers + 1)}`` for the ``i``-th model given
    (clean surgery); ``native``: the models' own number of layers.
    """

    native: int
    n_layers: int
    n_models: int
    variants: tuple
    curves: dict

    def typical(self, i, variant) -> np.ndarray:
        """The geometric mean over sequences of model ``i``'s curve, ``(n_layers + 1,)``."""
        return gmean(self.curves[(i, variant)])

    def at(self, variant, layer) -> np.ndarray:
        """The typical relative residual after ``layer`` layers, one per model, ``(k,)``."""
        return np.array([self.typical(i, variant)[layer] for i in range(self.n_models)])

    def decades_per_layer(self, variant, start, stop) -> np.ndarray:
        """Orders of magnitude lost per layer between layers ``start`` and ``stop`` of the typical
        curve, one per model, ``(k,)``."""
        return np.log10(self.at(variant, start) / self.at(variant, stop)) / (stop - start)


def deeper_study(
    models,
    n_layers: int,
    n_seq: int,
    n_tokens: int,
    *,
    variants=("full", "san+skip"),
    dtype=torch.float32,
    batch_size: int = 8,
) -> Deeper:
    """Each ALBERT of ``models`` with its shared layer applied ``n_layers`` times
    (:func:`applied_again`), run as each clean ``variant`` on :func:`token_windows` ``(n_seq,
    n_tokens)`` of the book's text in ``dtype`` (float32 by default: these variants stay far above
    its rounding error). A :class:`Deeper`."""
    models = [check_model(m) for m in models]
    if not models:
        raise ValueError("models must hold at least one ALBERT RealModel")
    natives = {m.n_layers for m in models}
    if len(natives) != 1:
        raise ValueError(f"models must share one number of layers, got {sorted(natives)}")
    n_layers, n_seq = check_int("n_layers", n_layers), check_int("n_seq", n_seq)
    n_tokens, batch_size = check_int("n_tokens", n_tokens), check_int("batch_size", batch_size)
    curves = {}
    for i, m in enumerate(models):
        deep = applied_again(m, n_layers)
        ids = token_windows(deep, n_seq, n_tokens)
        for v in variants:
            curves[(i, v)] = residual_curve(
                deep, ids, v, "clean", dtype=dtype, batch_size=batch_size
            ).numpy()
    return Deeper(natives.pop(), n_layers, len(models), tuple(variants), curves)
