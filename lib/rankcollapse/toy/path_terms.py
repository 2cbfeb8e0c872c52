"""Every path term of a trained toy network, built layer by layer, and the paths' bookkeeping:
a path's position among the terms (:func:`path_index`), the official code's random draws of
paths of one length (:func:`sample_paths`) and summaries over the paths of each length
(:func:`by_length`). :mod:`rankcollapse.toy.evaluate` reads the terms out (and re-exports these).
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from .. import paths as _paths
from .._validate import check_bool, check_elements, check_generator, check_index, check_int
from ..paths.counting import MAX_PATHS, too_many_paths
from ..san import check_san

__all__ = ["all_path_terms", "path_index", "sample_paths", "by_length"]


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
            f"san (L={L} layers of {cfg.n_heads} heads{' and a skip' if cfg.skip else ''}) has "
            f"{C}^{L} "
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
    terms, order = ordered_path_terms(san, E)
    return terms[order]


def ordered_path_terms(san, E):
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
                    out[0].mul_(layer.cfg.skip_weight(terms.ndim - 1))
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
    return terms, path_terms_order(len(layers), C)


def path_terms_order(L: int, C: int) -> torch.Tensor:
    """For each path of ``rc.paths.all_paths`` (first layer's choice most significant), its
    position among the terms as :func:`ordered_path_terms` builds them (last layer's most
    significant)."""
    digits = torch.tensor(list(itertools.product(range(C), repeat=L)), dtype=torch.long).reshape(
        -1, L
    )
    return (digits * C ** torch.arange(L)).sum(-1)


def path_index(path, H: int, skip: bool = True) -> int:
    """Position of ``path`` (a tuple of heads, ``None`` for a skipped layer) in
    :func:`all_path_terms`.

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
    ``L - length`` layers chosen uniformly without replacement are skipped. ``gen``: a
    ``torch.Generator``.
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
            f"L={L} layers of H={H} heads have (H+1)^L = {H + 1}^{L} paths, beyond the int64 "
            "indices "
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
    """Mean, standard deviation, best and worst of ``values`` (one per path) over the paths of each
    length.

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
            "lengths must be non-negative integers (path lengths), one per path, got "
            f"{lengths.tolist()!r:.80}"
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
