r"""Path-restricted evaluation of a trained toy network, exact, with the official sampling scheme.

Hold every attention matrix and LayerNorm scale at the value it takes in the full model's
forward pass (``rc.paths.frozen_layers``). The SAN's output is then the sum of its
``(H+1)^L`` path terms exactly (the paper's path decomposition; chapter "The path decomposition"),
and any set of paths can be read out on its own: the readout standardises each token and
applies the trained classifier (:meth:`rankcollapse.toy.ToyModel.readout`). Computed here:

(a) every single path's term, its token accuracy and its share of the output's residual;
(b) the sum ``T_l`` of all paths of length ``l`` (``rc.paths.decompose_by_length``) and the
    sum of all paths up to length ``l``, and their accuracies;
(c) the official code's sampling scheme, with the attention frozen: the sum of ``k`` paths of
    length ``l`` drawn at random (``k`` = 5 or 20; a head uniform in every layer, the skipped
    layers uniform without replacement, paths drawn independently, as
    ``functions.create_path``), the draw repeated.

(a) and (c) enumerate every path, so they run on the first ``n_sampled`` sequences; (b) and the
full model are computed on every sequence *and* on those same first ``n_sampled`` ones, so that
each comparison can be made on the same tokens on both sides.

What the official code plots is (c), with its paths re-run through the network (each layer's
attention recomputed from the path's own input) and mean and standard deviation over 5 draws;
here the paths are the decomposition's, with attention frozen, so that (c) estimates (b) and
both can be compared with the exact values. :func:`fisher_exact` compares two counts of runs (the
circle toy's merged rollouts under two variants).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from .. import paths as _paths
from .._validate import (
    check_int,
    check_seed,
)
from .model import READOUT_EPS
from .path_terms import (  # noqa: F401  (re-exported)
    all_path_terms,
    by_length,
    ordered_path_terms,
    path_index,
    path_terms_order,
    sample_paths,
)

__all__ = [
    "all_path_terms",
    "path_index",
    "sample_paths",
    "evaluate_paths",
    "PathEvaluation",
    "by_length",
    "fisher_exact",
]


def fisher_exact(hits_a: int, n_a: int, hits_b: int, n_b: int) -> float:
    """The two-sided p-value of Fisher's exact test that ``hits_a`` of ``n_a`` runs and ``hits_b``
    of ``n_b`` runs come from one rate: the probability, with the total of hits fixed, of a split
    at most as likely as the one observed (hypergeometric; exact, in integers)."""
    n_a, n_b = check_int("n_a", n_a), check_int("n_b", n_b)
    hits_a = check_int("hits_a", hits_a, minimum=0, maximum=n_a)
    hits_b = check_int("hits_b", hits_b, minimum=0, maximum=n_b)
    total = hits_a + hits_b
    ways = [
        math.comb(n_a, k) * math.comb(n_b, total - k)
        for k in range(max(0, total - n_b), min(n_a, total) + 1)
    ]
    seen = math.comb(n_a, hits_a) * math.comb(n_b, total - hits_a)
    # a split counts as at most as likely as the one seen up to a relative 1e-9 (ties)
    return min(1.0, sum(w for w in ways if w <= seen * (1 + 1e-9)) / sum(ways))


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
        """Correct tokens of each representation in ``R`` ``(K, B, n, d)``, all sequences:
        ``(K,)``."""
        return self.hits(R, y).sum(-1)


def _residual_norm(R: torch.Tensor) -> torch.Tensor:
    """Composite norm ``sqrt(||.||_1 ||.||_inf)`` of the mean-centred residual of each ``(n, d)``
    matrix of ``R`` (``rc.residual.composite_norm`` of ``rc.residual.res``, without their
    checks)."""
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
    """Evaluate a float64 :class:`~rankcollapse.toy.ToyModel` restricted to its paths, on ``(X,
    y)``.

    (a) and (c) enumerate every path term, a chunk of sequences at a time (a chunk's terms
    take at most ``budget_mb`` megabytes, one sequence at least); (b) uses the dynamic programme
    ``rc.paths.decompose_by_length``. The draws of (c) are seeded by ``seed`` and the same for
    every chunk of sequences (``ks=()``: no draws). ``n_sampled`` limits (a) and (c) to the first
    ``n_sampled`` sequences (all by default); (b) and the full model are given on all of them and on
    those first ``n_sampled`` (``PathEvaluation.matched``).
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
        built[:, path_terms_order(L, H + skip)] = counts
        groups = [(r, built[r : r + group].to_sparse_csr()) for r in range(0, len(counts), group)]
    for start in range(0, n_sampled, chunk):
        stop = min(start + chunk, n_sampled)  # (a) and (c) on the first n_sampled sequences only
        E, yc = E_all[start:stop], y[start:stop]
        terms, order = ordered_path_terms(san, E)  # (K, b, n, d), built order
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
    order = path_terms_order(L, H + skip)
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
