r"""Path-restricted evaluation of a trained toy network, exact, with the paper's sampled estimate.

Hold every attention matrix and LayerNorm scale at the value it takes in the full model's
forward pass (``rc.paths.frozen_layers``). The SAN's output is then the sum of its
``(H+1)^L`` path terms exactly (the paper's path decomposition; chapter "The path decomposition"),
and any set of paths can be read out on its own: the readout standardises each token and
applies the trained classifier (:meth:`rankcollapse.toy.ToyModel.readout`). Computed here:

(a) every single path's term, its token accuracy and its share of the output's residual;
(b) the sum ``T_l`` of all paths of length ``l`` (``rc.paths.decompose_by_length``) and the
    sum of all paths up to length ``l``, and their accuracies;
(c) the official code's estimate: the sum of ``k`` paths of length ``l`` drawn at random
    (``k`` = 5 or 20; a head uniform in every layer, the skipped layers uniform without
    replacement, paths drawn independently, as ``functions.create_path``), the draw repeated.

(a) and (c) enumerate every path, so they run on the first ``n_sampled`` sequences; (b) and the
full model are computed on every sequence *and* on those same first ``n_sampled`` ones, so that
each comparison can be made on the same tokens on both sides.

What the official code plots is (c), with its paths re-run through the network (each layer's
attention recomputed from the path's own input) and mean and standard deviation over 5 draws;
here the paths are the decomposition's, with attention frozen, so that (c) estimates (b) and
both can be compared with the exact values.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from .. import paths as _paths
from .._validate import (
    check_bool,
    check_elements,
    check_generator,
    check_index,
    check_int,
    check_seed,
)
from ..paths.counting import MAX_PATHS, too_many_paths
from ..san import check_san
from .model import READOUT_EPS

__all__ = [
    "all_path_terms",
    "path_index",
    "sample_paths",
    "evaluate_paths",
    "PathEvaluation",
    "by_length",
]


@torch.no_grad()
def all_path_terms(san, E: torch.Tensor) -> torch.Tensor:
    """Every path term of ``san`` on ``E`` ``(B, n, d)``: a tensor ``(K, B, n, d)``, ``K = (H+1)^L``
    with skips, in the order of ``rc.paths.all_paths`` (first layer most significant; in each layer
    the skip first, then heads ``0..H-1``). Terms are built layer by layer, each prefix once.
    Refused before any work, as by ``rc.paths.enumerate_paths``: more than ``rc.paths.MAX_PATHS``
    terms, or terms beyond the memory cap (``rc.paths.decompose_by_length`` sums them by length)."""
    cfg = check_san(san).config
    L, C = cfg.n_layers, cfg.n_heads + cfg.skip
    alternative = (
        "rc.paths.decompose_by_length sums the terms of each length without enumerating them"
    )
    if too_many_paths(L, C, MAX_PATHS):
        raise ValueError(
            f"san (L={L} layers of {cfg.n_heads} heads{' and a skip' if cfg.skip else ''}) has {C}^{L} "
            f"paths: all_path_terms would build that many terms, more than the cap of "
            f"rc.paths.MAX_PATHS = {MAX_PATHS:,} paths; {alternative}"
        )
    E = san.check_input(E)
    # the terms, the last layer's branches they are built from, and the reordered copy returned
    check_elements(
        "E",
        2 * C**L * E.numel(),
        itemsize=E.element_size(),
        alternative=f"pass fewer sequences in E; {alternative}",
    )
    terms, order = _path_terms(san, E)
    return terms[order]


def _path_terms(san, E):
    """:func:`all_path_terms` in the order they are built, and ``order``: the position there of
    each path of ``rc.paths.all_paths``.

    Each layer's branches are written side by side, ``(C, K, ...)`` with ``C = H + 1`` choices
    and ``K`` prefixes, so that every branch is one contiguous block computed in place: the last
    layer's choice is the most significant digit of a built term's position, the first layer's
    the least. Each branch is ``rc.paths.FrozenLayer``'s (``skip``, ``head``); for post-LayerNorm
    layers, as the toy networks', the LayerNorm's centring and gain are folded into each head's
    ``W_O`` and its left scaling into ``P_h`` (all linear: ``S^{-1} P Y W_V W_O (I - 11^T/d)
    diag(g)``), which spares passes over the largest tensors; the terms are the same up to
    rounding.
    """
    E, layers, _ = _paths.frozen_layers(san, E)
    skip, H = san.config.skip, san.config.n_heads
    C = H + skip
    terms = E.unsqueeze(0)
    for layer in layers:
        out = torch.empty((C,) + terms.shape, dtype=terms.dtype)
        if layer.ln == "post":
            dv = layer.dv
            if skip:  # S^{-1} (Y - mean) diag(g)
                torch.sub(terms, terms.mean(dim=-1, keepdim=True), out=out[0])
                out[0].mul_(layer.inv_sigma * layer.gain)
                if layer.alpha != 1:
                    out[0].mul_(layer.alpha)
            W_O = (layer.W_O - layer.W_O.mean(dim=-1, keepdim=True)) * layer.gain  # (H*dv, d)
            for h in range(H):
                cols = slice(h * dv, (h + 1) * dv)
                P = layer.P[..., h, :, :] * layer.inv_sigma  # (..., n, n): rows scaled
                torch.matmul(P @ (terms @ layer.W_V[:, cols]), W_O[cols], out=out[h + skip])
        else:
            if skip:
                out[0] = layer.skip(terms)
            for h in range(H):
                out[h + skip] = layer.head(terms, h)
        terms = out.flatten(0, 1)
        del out
    return terms, _path_terms_order(len(layers), C)


def _path_terms_order(L: int, C: int) -> torch.Tensor:
    """For each path of ``rc.paths.all_paths`` (first layer's choice most significant), its
    position among the terms as :func:`_path_terms` builds them (last layer's most significant)."""
    digits = torch.tensor(list(itertools.product(range(C), repeat=L)), dtype=torch.long).reshape(
        -1, L
    )
    return (digits * C ** torch.arange(L)).sum(-1)


def path_index(path, H: int, skip: bool = True) -> int:
    """Position of ``path`` (a tuple of heads, ``None`` for a skipped layer) in :func:`all_path_terms`.

    Every entry is ``None`` (only with ``skip``) or a head ``0 .. H-1``; others are refused, naming
    ``path`` (a head ``H`` or ``-1`` would give the index of another path)."""
    H, skip = check_int("H", H), check_bool("skip", skip)
    if isinstance(path, (str, bytes)) or not hasattr(path, "__iter__"):
        raise TypeError(
            f"path must be a tuple of heads (None for a skipped layer), got {type(path).__name__}"
        )
    path = tuple(path)
    for i, c in enumerate(path):
        if c is None:
            if not skip:
                raise ValueError(
                    f"path[{i}] is None (a skipped layer), but skip=False: the network has no skips"
                )
            continue
        check_index(f"path[{i}]", c, H, what="heads")
    idx = 0
    for c in path:
        idx = idx * (H + skip) + ((0 if c is None else c + skip) if skip else c)
    return idx


def sample_paths(
    L: int, H: int, length: int, k: int, draws: int, gen: torch.Generator
) -> torch.Tensor:
    """``draws`` sets of ``k`` random paths of ``length`` heads, as indices ``(draws, k)`` into
    :func:`all_path_terms`. As the official ``create_path``: a head uniform in each layer, then
    ``L - length`` layers chosen uniformly without replacement are skipped. ``gen``: a ``torch.Generator``.
    Sizes whose tensors would pass the library's memory cap are refused before any allocation."""
    L, H, length = (
        check_int("L", L),
        check_int("H", H),
        check_int("length", length, minimum=0, maximum=L),
    )
    k, draws, gen = check_int("k", k), check_int("draws", draws), check_generator("gen", gen)
    check_elements(
        "draws * k * L",
        draws * k * L,
        itemsize=48,
        alternative="draw fewer or smaller sets of paths",
    )
    if (H + 1) ** L > 2**63:  # the largest index, (H+1)^L - 1, must fit an int64
        raise ValueError(
            f"L={L} layers of H={H} heads have (H+1)^L = {H + 1}^{L} paths, beyond the int64 indices "
            f"of all_path_terms (at most 2^63); such a network has far too many paths to enumerate"
        )
    heads = torch.randint(H, (draws, k, L), generator=gen) + 1
    order = torch.argsort(torch.rand(draws, k, L, generator=gen), dim=-1)
    skipped = torch.zeros(draws, k, L, dtype=torch.bool)
    skipped.scatter_(-1, order[..., : L - length], True)
    choice = torch.where(skipped, torch.zeros_like(heads), heads)
    weights = (H + 1) ** torch.arange(L - 1, -1, -1)
    return (choice * weights).sum(-1)


def by_length(values, lengths) -> dict[str, np.ndarray]:
    """Mean, standard deviation, best and worst of ``values`` (one per path) over the paths of each length.

    ``lengths``: non-negative integers, one per entry of ``values`` (at least one)."""
    if len(values) != len(lengths):
        raise ValueError(
            f"values and lengths must have one entry per path, got {len(values)} and {len(lengths)}"
        )
    if len(values) == 0:
        raise ValueError("values and lengths are empty: there are no paths to summarise")
    values, lengths = np.asarray(values, dtype=float), np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer) or (lengths < 0).any():
        raise ValueError(
            f"lengths must be non-negative integers (path lengths), one per path, got {lengths.tolist()!r:.80}"
        )
    ls = np.arange(lengths.max() + 1)
    pick = [values[lengths == l] for l in ls]
    return {
        "length": ls,
        "mean": np.array([v.mean() for v in pick]),
        "std": np.array([v.std() for v in pick]),
        "best": np.array([v.max() for v in pick]),
        "worst": np.array([v.min() for v in pick]),
        "count": np.array([len(v) for v in pick]),
    }


@dataclass
class PathEvaluation:
    """Token accuracies of a trained network restricted to sets of its paths.

    paths, lengths: all ``K`` paths and their lengths; counts ``(L+1,)``: paths of each length.
    On the first ``n_sampled`` sequences (``tokens`` tokens, the *matched* tokens):
    path_accuracy ``(K,)`` each path alone (a); path_residual ``(K,)`` each path's share
    :math:`\\lVert\\mathrm{res}(T_p)\\rVert / \\lVert\\mathrm{res}(Y)\\rVert` of the output's
    residual (composite norm, mean centre; mean over the sequences); sampled ``{k: (L+1, draws)}``
    the accuracy of each draw of ``k`` random paths of each length (c); and, on the same tokens,
    ``matched``: ``{"length": (L+1,), "cumulative": (L+1,), "full": float}``, the accuracies of
    (b) and of the full model. On every sequence (``tokens_all`` tokens): length_accuracy
    ``(L+1,)`` all paths of length ``l`` together, cumulative_accuracy ``(L+1,)`` all paths up to
    length ``l`` (b; its last entry is the full model's), full_accuracy the model.
    """

    L: int
    H: int
    paths: list
    lengths: np.ndarray
    path_accuracy: np.ndarray
    path_residual: np.ndarray
    length_accuracy: np.ndarray
    cumulative_accuracy: np.ndarray
    full_accuracy: float
    sampled: dict
    matched: dict
    tokens: int
    tokens_all: int

    @property
    def counts(self) -> np.ndarray:
        """Number of paths of each length, ``C(L, l) H^l``."""
        return np.bincount(self.lengths, minlength=self.L + 1)

    def per_length(self, values: str = "path_accuracy") -> dict[str, np.ndarray]:
        """(a) grouped by length: :func:`by_length` of ``path_accuracy`` or ``path_residual``."""
        if values not in ("path_accuracy", "path_residual"):
            raise ValueError(f"values must be 'path_accuracy' or 'path_residual', got {values!r}")
        return by_length(getattr(self, values), self.lengths)


class _Reader:
    """``model``'s readout, reduced to what an arg-max needs, for many representations at once.

    For the standardising readout ``cls(std(R))``: the logits are
    ``(R W^T - m (W 1)^T) / s + b`` with ``m`` and ``s`` each token's mean and standard deviation
    over features, so one product with ``[W; 1]`` and one squared norm per token give them, with
    no copy of ``R``. Other readouts go through ``model.readout``.
    """

    def __init__(self, model):
        self.model = model
        self.fast = model.config.standardise
        W, b = model.classifier.weight.detach(), model.classifier.bias.detach()
        self.A = torch.cat([W, torch.ones(1, W.shape[1], dtype=W.dtype)]).T  # (d, C+1)
        self.Wsum, self.b, self.d = W.sum(1), b, W.shape[1]

    def hits(self, R: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Correct tokens of each representation in ``R`` ``(K, B, n, d)`` against ``y`` ``(B, n)``,
        per sequence: ``(K, B)``."""
        if not self.fast:
            return (self.model.readout(R).argmax(-1) == y).sum(-1)
        Z = R @ self.A
        m = Z[..., -1:] / self.d
        var = torch.linalg.vector_norm(R, dim=-1, keepdim=True) ** 2 / self.d - m**2
        logits = (Z[..., :-1] - m * self.Wsum) / torch.sqrt(var.clamp_min(0) + READOUT_EPS) + self.b
        return (logits.argmax(-1) == y).sum(-1)

    def correct(self, R: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Correct tokens of each representation in ``R`` ``(K, B, n, d)``, all sequences: ``(K,)``."""
        return self.hits(R, y).sum(-1)


def _residual_norm(R: torch.Tensor) -> torch.Tensor:
    """Composite norm ``sqrt(||.||_1 ||.||_inf)`` of the mean-centred residual of each ``(n, d)``
    matrix of ``R`` (``rc.residual.composite_norm`` of ``rc.residual.res``, without their checks)."""
    A = (R - R.mean(dim=-2, keepdim=True)).abs_()
    return torch.sqrt(A.sum(-2).amax(-1) * A.sum(-1).amax(-1))


@torch.no_grad()
def evaluate_paths(
    model,
    X,
    y,
    *,
    ks=(5, 20),
    draws: int = 200,
    seed: int = 0,
    budget_mb: float = 160,
    n_sampled: int | None = None,
) -> PathEvaluation:
    """Evaluate a float64 :class:`~rankcollapse.toy.ToyModel` restricted to its paths, on ``(X, y)``.

    (a) and (c) enumerate every path term, a chunk of sequences at a time (a chunk's terms
    take at most ``budget_mb`` megabytes, one sequence at least); (b) uses the dynamic programme
    ``rc.paths.decompose_by_length``. The draws of (c) are seeded by ``seed`` and the same for
    every chunk of sequences (``ks=()``: no draws). ``n_sampled`` limits (a) and (c) to the first ``n_sampled``
    sequences (all by default); (b) and the full model are given on all of them and on those
    first ``n_sampled`` (``PathEvaluation.matched``).
    """
    seed = check_seed("seed", seed)
    if model.dtype != torch.float64:
        raise ValueError(
            "model must be float64 (ToyModel.twin()): path sums are exact only in float64"
        )
    san = model.san
    L, H, skip = san.config.n_layers, san.config.n_heads, san.config.skip
    if not skip:
        raise ValueError("the toy networks have skip connections; paths of every length need them")
    ks = tuple(check_int("k", k) for k in ks)
    draws = check_int("draws", draws)
    N = len(X)
    n_sampled = N if n_sampled is None else check_int("n_sampled", n_sampled, maximum=N)
    all_paths = _paths.all_paths(L, H, skip)
    K = len(all_paths)
    lengths = np.array([_paths.path_length(p) for p in all_paths])
    reader = _Reader(model)

    # (c): one matrix of path counts, a row per (k, length, draw), drawn once
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for k in ks:
        for l in range(L + 1):
            idx = sample_paths(L, H, l, k, draws, gen)
            counts = torch.zeros(draws, K, dtype=torch.float64)
            counts.scatter_add_(1, idx, torch.ones_like(idx, dtype=torch.float64))
            rows.append(counts)
    # (len(ks) * (L+1) * draws, K), at most max(ks) non-zeros a row; no rows when ks is empty
    counts = torch.cat(rows) if rows else torch.zeros(0, K, dtype=torch.float64)

    E_all = model.embed(X)
    n, d = E_all.shape[-2:]
    # (b) and the full model on every sequence, by the dynamic programme; per sequence, so
    # that the first n_sampled give the matched accuracies
    T = _paths.decompose_by_length(san, E_all)  # (L+1, N, n, d)
    C = T.cumsum(0)
    length_hits = reader.hits(T, y)  # (L+1, N)
    cumulative_hits = reader.hits(C, y)
    full_hits = (model(X).argmax(-1) == y).sum(-1)  # (N,)
    res_Y = _residual_norm(C[-1])  # (N,): the output's residual, per sequence

    per_seq = K * n * d * 8 / 2**20
    chunk = max(1, int(budget_mb // per_seq))
    built_correct = torch.zeros(K, dtype=torch.long)
    built_residual = torch.zeros(K, dtype=torch.float64)
    sampled_correct = torch.zeros(len(counts), dtype=torch.long)
    group = max(
        1, int(budget_mb * 2**20 // (8 * chunk * n * d)) // 2
    )  # rows of draws summed at once
    with (
        warnings.catch_warnings()
    ):  # "sparse CSR support is in beta": only its matrix product is used
        warnings.simplefilter("ignore", UserWarning)
        # the draws' path counts with their columns in the order the terms are built
        built = torch.empty_like(counts)
        built[:, _path_terms_order(L, H + skip)] = counts
        groups = [(r, built[r : r + group].to_sparse_csr()) for r in range(0, len(counts), group)]
    for start in range(0, n_sampled, chunk):
        stop = min(start + chunk, n_sampled)  # (a) and (c) on the first n_sampled sequences only
        E, yc = E_all[start:stop], y[start:stop]
        terms, order = _path_terms(san, E)  # (K, b, n, d), built order
        for i in range(0, K, 256):  # each path's accuracy and residual, in the built order
            block = terms[i : i + 256]
            built_correct[i : i + 256] += reader.correct(block, yc)
            built_residual[i : i + 256] += (_residual_norm(block) / res_Y[start:stop]).sum(-1)
        flat = terms.flatten(1)
        for r, rows_r in groups:  # each draw's sum of its k path terms, a group of draws at a time
            S = torch.sparse.mm(rows_r, flat).view(-1, *terms.shape[1:])
            sampled_correct[r : r + len(S)] += reader.correct(S, yc)
        del terms, flat
    tok_all, tok_s = N * n, n_sampled * n
    order = _path_terms_order(L, H + skip)
    path_correct, path_residual = built_correct[order], built_residual[order]
    sampled = sampled_correct.double().div(tok_s).view(len(ks), L + 1, draws).numpy()
    first = slice(0, n_sampled)
    return PathEvaluation(
        L=L,
        H=H,
        paths=all_paths,
        lengths=lengths,
        path_accuracy=path_correct.double().div(tok_s).numpy(),
        path_residual=path_residual.div(n_sampled).numpy(),
        length_accuracy=length_hits.sum(-1).double().div(tok_all).numpy(),
        cumulative_accuracy=cumulative_hits.sum(-1).double().div(tok_all).numpy(),
        full_accuracy=float(full_hits.sum()) / tok_all,
        sampled={k: sampled[i] for i, k in enumerate(ks)},
        matched={
            "length": length_hits[:, first].sum(-1).double().div(tok_s).numpy(),
            "cumulative": cumulative_hits[:, first].sum(-1).double().div(tok_s).numpy(),
            "full": float(full_hits[first].sum()) / tok_s,
        },
        tokens=tok_s,
        tokens_all=tok_all,
    )
