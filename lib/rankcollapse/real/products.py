"""Products of attention matrices along paths (Dong et al. 2021, Section 2 and its appendix).

A path of the decomposition (the paper's path decomposition) picks one head in some of the layers;
its term carries the product of those heads' attention matrices, the latest layer on the left. The
paper's appendix samples random paths of each length in the full model and measures how close the
products come to rank one. Shapes: attentions ``(L, b, H, n, n)``; products ``(k, n, n)``.
"""

from __future__ import annotations

import random

import torch

from .. import residual
from .._validate import (
    MAX_WORK,
    as_tokens,
    check_choice,
    check_cost,
    check_index,
    check_int,
    check_probability_matrix,
    check_seed,
    derive_seed,
)
from ..paths.counting import check_draws
from .threads import torch_threads

__all__ = ["sample_paths", "path_products", "path_residuals", "path_profile"]


def _attentions(attentions) -> torch.Tensor:
    """``attentions`` ``(L, b, H, n, n)``, row-stochastic, as a floating tensor."""
    A = check_probability_matrix("attentions", attentions, atol=1e-4)
    if A.ndim != 5:
        raise ValueError(f"attentions must have shape (L, b, H, n, n), got {tuple(A.shape)}")
    return A


def sample_paths(n_layers: int, n_heads: int, length: int, n_paths: int, seed: int = 0):
    """``n_paths`` random paths of ``length`` heads: each a list of ``(layer, head)`` in layer
    order.

    The layers are ``length`` distinct ones drawn uniformly and sorted; each picks a head
    uniformly (as the official code samples them). More than 100,000 paths or ``n_paths * length >
    10**7`` (``rc.paths.counting.check_draws``) is refused before drawing.
    """
    n_layers = check_int("n_layers", n_layers)
    n_heads = check_int("n_heads", n_heads)
    length = check_int("length", length, maximum=n_layers)
    n_paths = check_int("n_paths", n_paths)
    check_draws("n_paths", n_paths, length)
    rng = random.Random(check_seed("seed", seed))
    return [
        list(
            zip(
                sorted(rng.sample(range(n_layers), length)),
                [rng.randrange(n_heads) for _ in range(length)],
            )
        )
        for _ in range(n_paths)
    ]


def path_products(attentions, paths, sequence: int = 0, order: str = "correct") -> torch.Tensor:
    """The products of attention matrices along ``paths``, shape ``(len(paths), n, n)``.

    ``attentions``: ``(L, b, H, n, n)``. A path ``[(l_1, h_1), ..., (l_k, h_k)]`` with
    ``l_1 < ... < l_k`` gives ``P = A^{(l_k)}_{h_k} ... A^{(l_1)}_{h_1}``, the latest layer on the
    left, as in the paper's path decomposition (``order="correct"``); ``order="reversed"`` gives
    ``A^{(l_1)} ... A^{(l_k)}``, what the official code computed (``P = P @ A_l`` in increasing
    layer order).
    """
    check_choice("order", order, ("correct", "reversed"))
    attentions = _attentions(attentions)
    L, b, H = attentions.shape[:3]
    A = attentions[:, check_index("sequence", sequence, b, what="sequences")]
    try:
        paths = list(paths) if not isinstance(paths, (str, bytes)) else paths
    except TypeError:
        raise TypeError(
            f"paths must be a list of paths [(layer, head), ...], got {type(paths).__name__}"
        ) from None
    if not isinstance(paths, list) or not paths:
        raise ValueError(
            f"paths must be a non-empty list of paths [(layer, head), ...], got {paths!r:.80}"
        )
    for i, path in enumerate(paths):
        for step in path:
            if not (isinstance(step, (tuple, list)) and len(step) == 2):
                raise TypeError(
                    f"paths[{i}] must be a list of (layer, head) pairs, got {path!r:.80}"
                )
            check_index(f"paths[{i}] layer", step[0], L, what="layers")
            check_index(f"paths[{i}] head", step[1], H, what="heads")
    return _products(A, paths, order)


def _products(A, paths, order):
    n = A.shape[-1]
    out = []
    for path in paths:
        P = torch.eye(n, dtype=A.dtype)
        for l, h in path:
            P = A[l, h] @ P if order == "correct" else P @ A[l, h]
        out.append(P)
    return torch.stack(out)


def path_residuals(products, against: str = "mean") -> torch.Tensor:
    """Relative residual of each product ``(k, n, n)`` in the composite norm, shape ``(k,)``.

    ``against="mean"``: ``P - 1 x^T`` with ``x`` the column mean (the paper's ``res``);
    ``against="rank1"``: ``P`` minus its best rank-1 approximation from the SVD (the official
    code's choice, which measures distance to *any* rank-1 matrix, not to ``1 x^T``).
    """
    check_choice("against", against, ("mean", "rank1"))
    products = as_tokens("products", products)
    if products.ndim != 3 or products.shape[-1] != products.shape[-2]:
        raise ValueError(f"products must have shape (k, n, n), got {tuple(products.shape)}")
    return _residuals(products, against)


def _residuals(products, against):
    if against == "mean":
        return residual.relative_residual(products)
    U, S, Vh = torch.linalg.svd(products)
    R = products - S[:, :1, None] * U[:, :, :1] @ Vh[:, :1, :]
    den = residual.composite_norm(products)
    # a zero product has rank 0 <= 1: residual 0 (0 / 0 is taken as 0, as relative_residual does)
    return torch.where(
        den > 0,
        residual.composite_norm(R) / torch.where(den > 0, den, torch.ones_like(den)),
        torch.zeros_like(den),
    )


def path_profile(
    attentions, n_paths: int = 50, seed: int = 0, *, order: str = "correct", against: str = "mean"
) -> torch.Tensor:
    """Relative residual of attention products against path length, shape ``(b * n_paths, L)``.

    For every length ``1..L`` and every sequence of ``attentions`` ``(L, b, H, n, n)``,
    ``n_paths`` paths from :func:`sample_paths` (seeded by ``seed`` and the length; the same
    paths for every sequence and both orders), multiplied by :func:`path_products` in ``order``
    and measured by :func:`path_residuals` ``against`` ``"mean"`` or ``"rank1"``. Column ``k`` is
    length ``k + 1``. (The paper's appendix figure, "chained attention along individual paths".)
    """
    attentions = _attentions(attentions)
    n_paths, seed = check_int("n_paths", n_paths), check_seed("seed", seed)
    check_choice("order", order, ("correct", "reversed"))
    check_choice("against", against, ("mean", "rank1"))
    L, b, H, n = attentions.shape[:4]
    check_cost(
        "n_paths",
        L * b * n_paths * L * n**3,
        MAX_WORK,
        unit="multiply-adds",
        alternative="use fewer paths or sequences",
    )
    cols = []
    with torch_threads():
        for length in range(1, L + 1):
            paths = sample_paths(L, H, length, n_paths, seed=derive_seed(seed, length, stride=1000))
            cols.append(
                torch.cat(
                    [
                        _residuals(_products(attentions[:, i], paths, order), against)
                        for i in range(b)
                    ]
                )
            )
    return torch.stack(cols, dim=1)
