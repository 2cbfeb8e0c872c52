r"""Path-restricted evaluation of a trained toy network, exact, with the paper's sampled estimate.

Hold every attention matrix and LayerNorm scale at the value it takes in the full model's
forward pass (``rc.paths.frozen_layers``). The SAN's output is then the sum of its
``(H+1)^L`` path terms exactly (Theorem 2.1 of the paper; chapter "The path decomposition"),
and any set of paths can be read out on its own: the readout standardises each token and
applies the trained classifier (:meth:`rankcollapse.toy.ToyModel.readout`). Computed here:

(a) every single path's term and its token accuracy, for all paths;
(b) the sum ``T_l`` of all paths of length ``l`` (``rc.paths.decompose_by_length``) and the
    sum of all paths up to length ``l``, and their accuracies;
(c) the official code's estimate: the sum of ``k`` paths of length ``l`` drawn at random
    (``k`` = 5 or 20; a head uniform in every layer, the skipped layers uniform without
    replacement, paths drawn independently, as ``functions.create_path``), the draw repeated.

What the official code plots is (c), with its paths re-run through the network (each layer's
attention recomputed from the path's own input) and mean and standard deviation over 5 draws;
here the paths are the decomposition's, with attention frozen, so that (c) estimates (b) and
both can be compared with the exact values.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from .. import paths as _paths
from .._validate import check_int

__all__ = ["all_path_terms", "path_index", "sample_paths", "evaluate_paths", "PathEvaluation", "by_length"]


@torch.no_grad()
def all_path_terms(san, E: torch.Tensor) -> torch.Tensor:
    """Every path term of ``san`` on ``E`` ``(B, n, d)``: a tensor ``(K, B, n, d)``, ``K = (H+1)^L``
    with skips, in the order of ``rc.paths.all_paths`` (first layer most significant; in each layer
    the skip first, then heads ``0..H-1``). Terms are built layer by layer, each prefix once."""
    E, layers, _ = _paths.frozen_layers(san, E)
    skip, H = san.config.skip, san.config.n_heads
    C = H + skip
    terms = E.unsqueeze(0)
    for layer in layers:
        out = torch.empty((terms.shape[0], C) + terms.shape[1:], dtype=terms.dtype)
        if skip:
            out[:, 0] = layer.skip(terms)
        for h in range(H):
            out[:, h + skip] = layer.head(terms, h)
        terms = out.flatten(0, 1)
        del out
    return terms


def path_index(path, H: int, skip: bool = True) -> int:
    """Position of ``path`` (a tuple of heads, ``None`` for a skipped layer) in :func:`all_path_terms`."""
    idx = 0
    for c in path:
        idx = idx * (H + skip) + ((0 if c is None else c + skip) if skip else c)
    return idx


def sample_paths(L: int, H: int, length: int, k: int, draws: int, gen: torch.Generator) -> torch.Tensor:
    """``draws`` sets of ``k`` random paths of ``length`` heads, as indices ``(draws, k)`` into
    :func:`all_path_terms`. As the official ``create_path``: a head uniform in each layer, then
    ``L - length`` layers chosen uniformly without replacement are skipped."""
    L, H, length = check_int("L", L), check_int("H", H), check_int("length", length, minimum=0, maximum=L)
    heads = torch.randint(H, (draws, k, L), generator=gen) + 1
    order = torch.argsort(torch.rand(draws, k, L, generator=gen), dim=-1)
    skipped = torch.zeros(draws, k, L, dtype=torch.bool)
    skipped.scatter_(-1, order[..., : L - length], True)
    choice = torch.where(skipped, torch.zeros_like(heads), heads)
    weights = (H + 1) ** torch.arange(L - 1, -1, -1)
    return (choice * weights).sum(-1)


def by_length(values, lengths) -> dict[str, np.ndarray]:
    """Mean, standard deviation, best and worst of ``values`` (one per path) over the paths of each length."""
    values, lengths = np.asarray(values, dtype=float), np.asarray(lengths)
    ls = np.arange(lengths.max() + 1)
    pick = [values[lengths == l] for l in ls]
    return {"length": ls, "mean": np.array([v.mean() for v in pick]), "std": np.array([v.std() for v in pick]),
            "best": np.array([v.max() for v in pick]), "worst": np.array([v.min() for v in pick]),
            "count": np.array([len(v) for v in pick])}


@dataclass
class PathEvaluation:
    """Token accuracies of a trained network restricted to sets of its paths.

    paths, lengths: all ``K`` paths and their lengths. path_accuracy ``(K,)``: each path alone (a).
    length_accuracy ``(L+1,)``: all paths of length ``l`` together; cumulative_accuracy
    ``(L+1,)``: all paths up to length ``l`` (b; its last entry is the full model's).
    full_accuracy: the model. sampled: ``{k: (L+1, draws)}`` the accuracy of each draw of ``k``
    random paths of each length (c). tokens: how many tokens each accuracy is over.
    """

    L: int
    H: int
    paths: list
    lengths: np.ndarray
    path_accuracy: np.ndarray
    length_accuracy: np.ndarray
    cumulative_accuracy: np.ndarray
    full_accuracy: float
    sampled: dict
    tokens: int

    def per_length(self) -> dict[str, np.ndarray]:
        """(a) grouped by length: :func:`by_length` of the single paths' accuracies."""
        return by_length(self.path_accuracy, self.lengths)


def _correct(model, R, y):
    """Correct tokens of each representation in ``R`` ``(K, B, n, d)`` against ``y`` ``(B, n)``."""
    return (model.readout(R).argmax(-1) == y).sum(dim=(-1, -2))


@torch.no_grad()
def evaluate_paths(model, X, y, *, ks=(5, 20), draws: int = 200, seed: int = 0, budget_mb: float = 160,
                   n_sampled: int | None = None) -> PathEvaluation:
    """Evaluate a float64 :class:`~rankcollapse.toy.ToyModel` restricted to its paths, on ``(X, y)``.

    (a) and (c) enumerate every path term, a chunk of sequences at a time (a chunk's terms
    take at most ``budget_mb`` megabytes, one sequence at least); (b) uses the dynamic programme
    ``rc.paths.decompose_by_length``. The draws of (c) are seeded by ``seed`` and the same for
    every chunk of sequences. ``n_sampled`` limits (a) and (c) to the first ``n_sampled``
    sequences (all by default); (b) and the full model always use all of them.
    """
    if model.dtype != torch.float64:
        raise ValueError("model must be float64 (ToyModel.twin()): path sums are exact only in float64")
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

    # (c): one matrix of path counts, a row per (k, length, draw), drawn once
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for k in ks:
        for l in range(L + 1):
            idx = sample_paths(L, H, l, k, draws, gen)
            counts = torch.zeros(draws, K, dtype=torch.float64)
            counts.scatter_add_(1, idx, torch.ones_like(idx, dtype=torch.float64))
            rows.append(counts)
    counts = torch.cat(rows)  # (len(ks) * (L+1) * draws, K), at most max(ks) non-zeros a row

    E_all = model.embed(X)
    n, d = E_all.shape[-2:]
    # (b) and the full model on every sequence, by the dynamic programme
    T = _paths.decompose_by_length(san, E_all)
    length_correct = _correct(model, T, y)
    cumulative_correct = _correct(model, T.cumsum(0), y)
    full_correct = (model(X).argmax(-1) == y).sum()

    per_seq = K * n * d * 8 / 2**20
    chunk = max(1, int(budget_mb // per_seq))
    path_correct = torch.zeros(K, dtype=torch.long)
    sampled_correct = torch.zeros(len(counts), dtype=torch.long)
    group = max(1, int(budget_mb * 2**20 // (8 * chunk * n * d)) // 2)  # rows of draws summed at once
    with warnings.catch_warnings():  # "sparse CSR support is in beta": only its matrix product is used
        warnings.simplefilter("ignore", UserWarning)
        groups = [(r, counts[r:r + group].to_sparse_csr()) for r in range(0, len(counts), group)]
    for start in range(0, n_sampled, chunk):
        stop = min(start + chunk, n_sampled)  # (a) and (c) on the first n_sampled sequences only
        E, yc = E_all[start:stop], y[start:stop]
        terms = all_path_terms(san, E)  # (K, b, n, d)
        for i in range(0, K, 256):
            path_correct[i:i + 256] += _correct(model, terms[i:i + 256], yc)
        flat = terms.flatten(1)
        for r, rows_r in groups:  # each draw's sum of its k path terms, a group of draws at a time
            S = torch.sparse.mm(rows_r, flat).view(-1, *terms.shape[1:])
            sampled_correct[r:r + len(S)] += _correct(model, S, yc)
        del terms, flat
    tok_all, tok_s = N * n, n_sampled * n
    sampled = sampled_correct.double().div(tok_s).view(len(ks), L + 1, draws).numpy()
    return PathEvaluation(
        L=L, H=H, paths=all_paths, lengths=lengths,
        path_accuracy=path_correct.double().div(tok_s).numpy(),
        length_accuracy=length_correct.double().div(tok_all).numpy(),
        cumulative_accuracy=cumulative_correct.double().div(tok_all).numpy(),
        full_accuracy=float(full_correct) / tok_all,
        sampled={k: sampled[i] for i, k in enumerate(ks)},
        tokens=tok_s,
    )
