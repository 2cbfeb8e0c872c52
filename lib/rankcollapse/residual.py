"""Residual norms: how far a token matrix is from having every token the same.

The paper measures collapse with the *residual* of a token matrix ``X`` (``n`` tokens by
``d`` features), the part that is not shared by every token (Dong et al. 2021, Section 2):

.. math::  \\operatorname{res}(X) = X - \\mathbf 1 x^\\top,
           \\qquad x = \\arg\\min_x \\lVert X - \\mathbf 1 x^\\top \\rVert ,

in the composite norm :math:`\\lVert X\\rVert_{1,\\infty} = \\sqrt{\\lVert X\\rVert_1 \\lVert X\\rVert_\\infty}`.
The paper's official code centres with the column mean instead of the minimiser; both are
offered here (``center="mean"`` and ``center="optimal"``). Book: chapter "The path
decomposition", section "Measuring collapse".

Shape convention: every function takes ``(n, d)`` or batched ``(..., n, d)`` and reduces the
last two dimensions.
"""

from __future__ import annotations

import torch

from ._validate import as_tokens, check_choice

__all__ = ["NORMS", "CENTERS", "norm_1", "norm_inf", "composite_norm", "matrix_norm", "center_of", "res", "relative_residual"]

NORMS = ("l1inf", "fro")
CENTERS = ("mean", "optimal")


def norm_1(X) -> torch.Tensor:
    r""":math:`\lVert X\rVert_1`, the largest absolute column sum; ``(..., n, d)`` -> ``(...)``."""
    X = as_tokens("X", X)
    return X.abs().sum(dim=-2).amax(dim=-1)


def norm_inf(X) -> torch.Tensor:
    r""":math:`\lVert X\rVert_\infty`, the largest absolute row sum; ``(..., n, d)`` -> ``(...)``."""
    X = as_tokens("X", X)
    return X.abs().sum(dim=-1).amax(dim=-1)


def composite_norm(X) -> torch.Tensor:
    r"""The composite norm :math:`\lVert X\rVert_{1,\infty} = \sqrt{\lVert X\rVert_1\lVert X\rVert_\infty}`.

    :math:`\lVert X\rVert_1` is the largest absolute column sum and :math:`\lVert X\rVert_\infty`
    the largest absolute row sum (paper, Section 2, the norm of Theorems 2.2 and 2.3). Computed
    as :math:`\sqrt{\lVert X\rVert_1}\sqrt{\lVert X\rVert_\infty}`, so that the product does not
    underflow for matrices as small as :math:`10^{-300}` (collapsed residuals).

    ``X``: ``(n, d)`` or ``(..., n, d)``; returns a tensor of shape ``(...)``.
    """
    return torch.sqrt(norm_1(X)) * torch.sqrt(norm_inf(X))


def matrix_norm(X, norm: str = "l1inf") -> torch.Tensor:
    """``norm="l1inf"``: :func:`composite_norm`; ``norm="fro"``: the Frobenius norm. Shape ``(...)``."""
    check_choice("norm", norm, NORMS)
    if norm == "l1inf":
        return composite_norm(X)
    X = as_tokens("X", X)
    return torch.linalg.matrix_norm(X, ord="fro")


def center_of(X, center: str = "mean", norm: str = "l1inf") -> torch.Tensor:
    """The vector ``x`` of :math:`\\operatorname{res}(X) = X - \\mathbf 1 x^\\top`, shape ``(..., d)``.

    ``center="mean"`` is the column mean (the official code's choice). ``center="optimal"``
    is the exact minimiser of ``norm``: for the composite norm a linear-programming solution
    (:func:`rankcollapse.centering.optimal_center`); for the Frobenius norm the mean *is*
    the minimiser.
    """
    check_choice("center", center, CENTERS)
    check_choice("norm", norm, NORMS)
    X = as_tokens("X", X)
    if center == "mean" or norm == "fro":
        return X.mean(dim=-2)
    from .centering import optimal_center

    return optimal_center(X)


def res(X, center: str = "mean", norm: str = "l1inf") -> torch.Tensor:
    """The residual :math:`\\operatorname{res}(X) = X - \\mathbf 1 x^\\top` (paper, Section 2).

    ``center``: ``"mean"`` (column mean, as the official code) or ``"optimal"`` (the exact
    minimiser of ``norm`` over ``x``, as the paper defines it). The optimal residual is never
    larger than the mean-centred one in the same norm. Returns a tensor shaped like ``X``.
    """
    X = as_tokens("X", X)
    x = center_of(X, center=center, norm=norm)
    return X - x.unsqueeze(-2)


def relative_residual(X, norm: str = "l1inf", center: str = "mean") -> torch.Tensor:
    """The relative residual :math:`\\lVert\\operatorname{res}(X)\\rVert / \\lVert X\\rVert`, shape ``(...)``.

    This is the quantity the paper plots against depth (its Figure 2, computed there with the
    mean centre). With the optimal centre it lies in ``[0, 1]`` (``x = 0`` is a candidate); with
    the mean centre in the composite norm it can exceed 1. A zero matrix has relative residual 0.
    """
    X = as_tokens("X", X)
    num = matrix_norm(res(X, center=center, norm=norm), norm=norm)
    den = matrix_norm(X, norm=norm)
    return torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(den))
