"""The real-transformers chapter's measurements, as result objects: values, figure data, glue.

Each function runs one of the chapter's measurements and returns an object holding the raw
results (what the figures draw), the tables the chapter shows (:meth:`table`: ``(header, rows)``
of strings, for ``rc.book.Table(*result.table())``), and the values its prose states
(:meth:`glue`: ``{name: (value, format)}`` for :func:`rankcollapse.book.glue`). The chapter's
cells stay a call and a table. Book: chapter "Real transformers", sections 2 to 6.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import numpy as np

from ..centering import optimal_center
from ..stats import first_below, log_slope
from ..stats import geometric_mean as gmean
from .measure import hidden_states, residual_curve, residual_curves
from .products import path_profile
from .text import corpus, token_windows

__all__ = ["show", "Lineup", "describe", "Ablations", "ablations", "Centres", "centres", "PathProducts",
           "path_products_study"]

FLOOR = 1e-12  # below this a float64 relative residual is rounding error


def show(x: float) -> str:
    """A residual as the chapter's tables show it: ``1.23e-04``, or ``< 1e-12`` (rounding error)."""
    return f"{x:.2e}" if x >= FLOOR else "< 1e-12"


def _by_name(models, name):
    return next(m for m in models if m.name == name)


@dataclass
class Lineup:
    """The chapter's models and the corpus they read (section 2)."""

    models: list
    docs: list
    n_seq: int
    n_tokens: int

    @property
    def minilm(self):
        return _by_name(self.models, "all-MiniLM-L6-v2")

    def table(self) -> tuple[list, list]:
        """Header and rows: each model's label, number of layers and where its weights come from."""
        return ["model", "layers", "weights"], [[m.label, str(m.n_layers), m.source] for m in self.models]

    def corpus_text(self, width: int = 80) -> str:
        """The corpus in a sentence and the first document's beginning, wrapped at ``width``."""
        n_words = sum(len(d.split()) for d in self.docs)
        return f"{len(self.docs)} documents, {n_words:,} words. The first begins:\n" \
            + textwrap.fill(self.docs[0][:240] + " ...", width=width)

    def glue(self) -> dict:
        m = self.minilm
        return {"rm-n-docs": (len(self.docs), "{}"), "rm-minilm-layers": (m.n_layers, "{}"),
                "rm-minilm-heads": (m.n_heads, "{}"), "rm-minilm-width": (m.d_model, "{}"),
                "rm-n-seq": (self.n_seq, "{}"), "rm-n-tokens": (self.n_tokens, "{}")}


def describe(models, n_seq: int, n_tokens: int) -> Lineup:
    """The :class:`Lineup` of ``models`` with the book's corpus and the run's window sizes."""
    return Lineup(list(models), corpus(), n_seq, n_tokens)


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

    def table(self) -> tuple[list, list]:
        """Header and rows: the typical relative residual after layers 1, 2 and the last, for
        every (model, variant, surgery)."""
        rows = []
        for (label, variant, surgery), c in self.curves.items():
            g = gmean(c)
            rows.append([label, variant, surgery, show(g[1]), show(g[2]), show(g[-1])])
        return ["model", "variant", "surgery", "layer 1", "layer 2", "last layer"], rows

    def surgery_table(self) -> tuple[list, list]:
        """Header and rows: the paper's surgery against the clean one, after layer 3 (or the last
        but none if fewer) and the last, for the ablations the surgeries differ on."""
        rows = []
        for m in self.models:
            for v in ("san", "san+mlp", "san+skip"):
                p, c = self.typical(m, v, "paper"), self.typical(m, v, "clean")
                mid = min(3, len(p) - 1)
                rows.append([m.label, v, str(mid), show(p[mid]), show(c[mid]), show(p[-1]), show(c[-1])])
        return ["model", "variant", "layer", "paper", "clean", "last: paper", "last: clean"], rows

    def glue(self) -> dict:
        models, last = self.models, (lambda m, v, s: self.typical(m, v, s)[-1])
        full_last = [last(m, "full", "clean") for m in models]
        floor = {m.name: first_below(self.typical(m, "san", "clean"), FLOOR) for m in models}
        init_floor = [floor[m.name] for m in models if not m.pretrained and floor[m.name] is not None]
        bert, albert, xlnet = (_by_name(models, n) for n in ("bert-base-cased", "albert-base-v2", "xlnet-base-cased"))
        minilm = _by_name(models, "all-MiniLM-L6-v2")
        gx = self.typical(xlnet, "san", "clean")
        k_floor = first_below(gx, 1e-13, default=len(gx) - 1)
        k = max(2, min(k_floor, len(gx) - 1))
        slope = log_slope(np.arange(1, k + 1), gx[1:k + 1], base=10)
        drop = lambda m, v, s: self.typical(m, v, s)[0] / self.typical(m, v, s)[-1]  # noqa: E731
        skip_cases = (("full", "clean"), ("san+skip", "paper"), ("san+skip", "clean"))
        g_bert = self.typical(bert, "san", "clean")
        return {
            "rm-full-min": (min(full_last), "{:.2f}"), "rm-full-max": (max(full_last), "{:.2f}"),
            "rm-init-floor-max": (max(init_floor) if init_floor else float("nan"), "{}"),
            "rm-minilm-floor": (floor["all-MiniLM-L6-v2"] or float("nan"), "{}"),
            "rm-bert-floor": (floor["bert-base-cased"] or float("nan"), "{}"),
            "rm-xlnet-floor": (floor["xlnet-base-cased"] or float("nan"), "{}"),
            "rm-san-last-max": (max(last(m, v, s) for m in models for v in ("san", "san+mlp")
                                    for s in ("paper", "clean")), "sci"),
            "rm-bert-san-1": (g_bert[1], "sci"), "rm-bert-san-2": (g_bert[2], "sci"),
            "rm-xlnet-decades": (-slope, "{:.1f}"),
            "rm-skip-min": (min(last(m, "san+skip", s) for m in models for s in ("paper", "clean")), "{:.2f}"),
            "rm-full-drop": (max(drop(m, "full", "clean") for m in models), "{:.1f}"),
            "rm-skip-drop": (max(drop(m, v, s) for m in models for v, s in skip_cases), "{:.0f}"),
            "rm-mean-max": (max(c.max() for c in self.curves.values()), "{:.3f}"),
            "rm-albert-skip-paper": (last(albert, "san+skip", "paper"), "{:.2f}"),
            "rm-albert-skip-clean": (last(albert, "san+skip", "clean"), "{:.2f}"),
            "rm-minilm-skip-paper": (last(minilm, "san+skip", "paper"), "{:.2f}"),
            "rm-minilm-skip-clean": (last(minilm, "san+skip", "clean"), "{:.2f}"),
            "rm-minilm-san-paper-2": (self.typical(minilm, "san", "paper")[2], "sci"),
            "rm-minilm-san-clean-2": (self.typical(minilm, "san", "clean")[2], "sci"),
        }


def ablations(models, n_seq: int, n_tokens: int, *, batch_size: int = 8, progress: bool = True) -> Ablations:
    """:func:`rankcollapse.real.measure.residual_curves` of ``models`` (float64 where a curve falls
    to rounding error, float32 where it stays of order one), as an :class:`Ablations`."""
    curves = residual_curves(models, n_seq, n_tokens, dtype="auto", batch_size=batch_size, progress=progress)
    return Ablations(list(models), curves)


@dataclass
class Centres:
    """Mean against optimal centre on one model (section 5): curves ``(n_seq, L + 1)`` per variant."""

    n_seq: int
    n_tokens: int
    mean: dict = field(default_factory=dict)
    optimal: dict = field(default_factory=dict)

    def ratio(self, variant) -> np.ndarray:
        """Optimal over mean-centred residual, layer by layer (1 where the mean one is 0)."""
        m = self.mean[variant]
        return self.optimal[variant] / np.where(m > 0, m, 1)

    def table(self) -> tuple[list, list]:
        """Header and rows: a row per layer (the input first, depth read downwards), a column per
        variant and centre, the typical residual in each cell."""
        columns = [(f"{v}: {c}", gmean(by[v])) for v in self.mean
                   for c, by in (("mean", self.mean), ("optimal", self.optimal))]
        n = len(columns[0][1]) if columns else 0
        labels = ["input"] + [f"layer {l}" for l in range(1, n)]
        return ["", *(name for name, _ in columns)], [[labels[i], *(show(col[i]) for _, col in columns)]
                                                     for i in range(n)]

    def glue(self) -> dict:
        r = self.ratio("full")
        return {"rm-opt-seq": (self.n_seq, "{}"), "rm-opt-tokens": (self.n_tokens, "{}"),
                "rm-opt-ratio-min": (r.min(), "{:.2f}"), "rm-opt-ratio-max": (r.max(), "{:.2f}")}


def centres(model, n_seq: int, n_tokens: int, variants=("full", "san+skip", "san")) -> Centres:
    """Each ``variant`` (clean surgery) of ``model`` with the column-mean and the optimal centre
    (a linear programme per matrix, :func:`rankcollapse.residual.res`), as a :class:`Centres`."""
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

    def median(self, model, order, against, length) -> float:
        return float(np.median(self.profiles[(model.label, order, against)][:, length - 1]))

    def table(self, lengths: int = 6) -> tuple[list, list]:
        """Header and rows: per model and order, the median over paths for lengths 1 to ``lengths``
        (a model with fewer layers leaves its last cells empty)."""
        rows = []
        for m in self.models:
            for order in ("correct", "reversed"):
                med = np.median(self.profiles[(m.label, order, "mean")], 0)[:lengths]
                cells = [show(x) for x in med] + [""] * (lengths - len(med))
                rows.append([m.label if order == "correct" else "", order] + cells)
        return ["model", "order"] + [f"length {k}" for k in range(1, lengths + 1)], rows

    def glue(self) -> dict:
        bert, minilm = _by_name(self.models, "bert-base-cased"), _by_name(self.models, "all-MiniLM-L6-v2")
        med = self.median
        rev = np.median(self.profiles[(minilm.label, "reversed", "mean")], 0)
        cor = np.median(self.profiles[(minilm.label, "correct", "mean")], 0)
        gap = max(abs(np.log10(rev) - np.log10(cor)))
        return {
            "rm-path-bert-1": (med(bert, "correct", "mean", 1), "sci"),
            "rm-path-bert-3": (med(bert, "correct", "mean", 3), "sci"),
            "rm-path-minilm-1": (med(minilm, "correct", "mean", 1), "{:.2f}"),
            "rm-path-minilm-3": (med(minilm, "correct", "mean", 3), "{:.2f}"),
            "rm-path-minilm-L": (med(minilm, "correct", "mean", minilm.n_layers), "sci"),
            "rm-path-minilm-rank1-1": (med(minilm, "correct", "rank1", 1), "{:.2f}"),
            "rm-path-minilm-rev-2": (med(minilm, "reversed", "mean", 2), "{:.2f}"),
            "rm-path-minilm-cor-2": (med(minilm, "correct", "mean", 2), "{:.2f}"),
            "rm-path-order-gap": (10**gap, "{:.1f}"),
        }


def path_products_study(models, n_seq: int, n_tokens: int, n_paths: int, seed: int, *,
                        batch_size: int = 8, detailed: str = "all-MiniLM-L6-v2") -> PathProducts:
    """Attention products of every model's full forward pass (float64) along ``n_paths`` random
    paths per length, both orders against ``1 x^T``; for the ``detailed`` model also against the
    SVD's rank-1 approximation (the official code's reference). A :class:`PathProducts`."""
    profiles = {}
    for m in models:
        ids = token_windows(m, n_seq, n_tokens)
        _, attn = hidden_states(m, ids, "full", return_attentions=True, batch_size=batch_size)
        for order in ("correct", "reversed"):
            for against in ("mean", "rank1") if m.name == detailed and m.pretrained else ("mean",):
                profiles[(m.label, order, against)] = path_profile(attn, n_paths, seed, order=order,
                                                                   against=against).numpy()
        del attn
    return PathProducts(list(models), profiles)
