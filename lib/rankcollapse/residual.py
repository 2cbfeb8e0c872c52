"""Residual norms: how far a token matrix is from having every token the same.

The paper measures collapse with the *residual* of a token matrix ``X`` (``n`` tokens by
``d`` features), the part that is not shared by every token (Dong et al. 2021, Section 2):

.. math::  \\operatorname{res}(X) = X - \\mathbf 1 x^\\top,
           \\qquad x = \\arg\\min_x \\lVert X - \\mathbf 1 x^\\top \\rVert ,

in the composite norm
:math:`\\lVert X\\rVert_{1,\\infty} = \\sqrt{\\lVert X\\rVert_1 \\lVert X\\rVert_\\infty}`. The
paper's official code centres with the column mean instead of the minimiser. The mean is the core's
centre (``center="mean"``); every function also takes a centre *function* ``center(X) -> x`` of
shape ``(..., d)``, such as the exact minimiser, a linear programme that sits above the core:
``center=rc.centering.optimal_center``. The core never imports it (it needs SciPy). Book: chapter
"The path decomposition", section "Measuring collapse".

Shape convention: every function takes ``(n, d)`` or batched ``(..., n, d)`` and reduces the
last two dimensions.
"""

from __future__ import annotations

import torch

from ._validate import as_tokens, check_choice

__all__ = [
    "NORMS",
    "CENTERS",
    "check_center",
    "norm_1",
    "norm_inf",
    "composite_norm",
    "matrix_norm",
    "center_of",
    "res",
    "relative_residual",
    "DEPTH_QUANTITIES",
    "through_depth",
]

NORMS = ("l1inf", "fro")
# log10 of the smallest residual a float64 tracked residual follows (below it, underflow)
UNDERFLOW_LOG10 = -300
CENTERS = ("mean",)  # the named centres; any function X -> x is accepted too


def check_center(center):
    """``center`` if it is ``"mean"`` or a function ``X -> x``; a clear error otherwise.

    ``"optimal"`` (the paper's exact minimiser) is refused with the way to ask for it: the linear
    programme lives above the core, in :func:`rankcollapse.centering.optimal_center`.
    """
    if callable(center):
        return center
    if center == "optimal":
        raise ValueError(
            'center="optimal" is the exact minimiser, a linear programme that lives above the core '
            "(it needs SciPy): pass center=rc.centering.optimal_center; "
            "the named centres are ['mean']"
        )
    if not isinstance(center, str):
        raise TypeError(
            f"center must be 'mean' or a function X -> x, got {type(center).__name__} {center!r}"
        )
    return check_choice("center", center, CENTERS)


def norm_1(X) -> torch.Tensor:
    r""":math:`\lVert X\rVert_1`, the largest absolute column sum; ``(..., n, d)`` -> ``(...)``."""
    X = as_tokens("X", X)
    return X.abs().sum(dim=-2).amax(dim=-1)


def norm_inf(X) -> torch.Tensor:
    r""":math:`\lVert X\rVert_\infty`, the largest absolute row sum; ``(..., n, d)`` ->
    ``(...)``."""
    X = as_tokens("X", X)
    return X.abs().sum(dim=-1).amax(dim=-1)


def composite_norm(X) -> torch.Tensor:
    r"""The composite norm
    :math:`\lVert X\rVert_{1,\infty} = \sqrt{\lVert X\rVert_1\lVert X\rVert_\infty}`.

    :math:`\lVert X\rVert_1` is the largest absolute column sum and :math:`\lVert X\rVert_\infty`
    the largest absolute row sum (paper, Section 2, the norm of Theorems 2.2 and 2.3). Computed
    as :math:`\sqrt{\lVert X\rVert_1}\sqrt{\lVert X\rVert_\infty}`, so that the product does not
    underflow for matrices as small as :math:`10^{-300}` (collapsed residuals).

    ``X``: ``(n, d)`` or ``(..., n, d)``; returns a tensor of shape ``(...)``.
    """
    return torch.sqrt(norm_1(X)) * torch.sqrt(norm_inf(X))


def matrix_norm(X, norm: str = "l1inf") -> torch.Tensor:
    """``norm="l1inf"``: :func:`composite_norm`; ``norm="fro"``: the Frobenius norm. Shape
    ``(...)``."""
    check_choice("norm", norm, NORMS)
    if norm == "l1inf":
        return composite_norm(X)
    X = as_tokens("X", X)
    return torch.linalg.matrix_norm(X, ord="fro")


def center_of(X, center="mean", norm: str = "l1inf") -> torch.Tensor:
    """The vector ``x`` of :math:`\\operatorname{res}(X) = X - \\mathbf 1 x^\\top`, shape
    ``(..., d)``.

    ``center="mean"`` is the column mean (the official code's choice); for the Frobenius norm
    the mean *is* the minimiser. ``center`` may also be a function ``X -> x``:
    ``rc.centering.optimal_center`` is the exact minimiser of the composite norm (a linear
    programme, above the core). ``norm`` is checked here for the callers that pass it on.
    """
    center = check_center(center)
    check_choice("norm", norm, NORMS)
    X = as_tokens("X", X)
    if center == "mean":
        return X.mean(dim=-2)
    x = center(X)
    if not isinstance(x, torch.Tensor) or x.shape != X.shape[:-2] + X.shape[-1:]:
        raise ValueError(
            f"center(X) must return a tensor of shape {tuple(X.shape[:-2] + X.shape[-1:])}, "
            f"got {getattr(x, 'shape', type(x).__name__)}"
        )
    return x


def res(X, center="mean", norm: str = "l1inf") -> torch.Tensor:
    """The residual :math:`\\operatorname{res}(X) = X - \\mathbf 1 x^\\top` (paper, Section 2).

    ``center``: ``"mean"`` (column mean, as the official code) or a function ``X -> x``, such
    as ``rc.centering.optimal_center`` (the exact minimiser of the composite norm, as the paper
    defines it; never larger than the mean-centred residual). Returns a tensor shaped like ``X``.
    """
    X = as_tokens("X", X)
    x = center_of(X, center=center, norm=norm)
    return X - x.unsqueeze(-2)


def relative_residual(X, norm: str = "l1inf", center="mean") -> torch.Tensor:
    """The relative residual :math:`\\lVert\\operatorname{res}(X)\\rVert / \\lVert X\\rVert`, shape
    ``(...)``.

    This is the quantity the paper plots against depth (its Figure 2, computed there with the
    mean centre). With the optimal centre (``center=rc.centering.optimal_center``) it lies in
    ``[0, 1]`` (``x = 0`` is a candidate); with the mean centre in the composite norm it can
    exceed 1. A zero matrix has relative residual 0 (``0 / 0`` is taken as 0: nothing differs
    between its tokens).
    """
    X = rescaled(as_tokens("X", X))
    num = matrix_norm(res(X, center=center, norm=norm), norm=norm)
    den = matrix_norm(X, norm=norm)
    return torch.where(
        den > 0, num / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(den)
    )


def rescaled(X: torch.Tensor, dims: tuple = (-2, -1)) -> torch.Tensor:
    """``X`` with each matrix ``(n, d)`` (each slice over ``dims``) multiplied by a power of two
    that brings its largest entry near 1, where that entry is beyond ``2**±500`` (a scale-free
    quantity of entries near ``1e308`` would otherwise overflow in its norms). A power of two is
    exact, and other matrices are untouched, so the result is bit-identical wherever no rescaling
    was
    needed."""
    if not X.is_floating_point():
        return X
    top = X.abs().amax(dim=dims, keepdim=True)
    exponent = torch.frexp(top).exponent
    far = (exponent.abs() > 500) & (top > 0)
    if not bool(far.any()):
        return X
    return torch.ldexp(X, torch.where(far, -exponent, torch.zeros_like(exponent)))


DEPTH_QUANTITIES = ("residual", "relative", "norm")


def through_depth(
    hidden_states, quantity: str = "relative", norm: str = "l1inf", center="mean"
) -> torch.Tensor:
    r"""One quantity of every hidden state, stacked through depth: shape ``(L + 1, ...)``, detached.

    ``hidden_states``: the ``L + 1`` token matrices ``(..., n, d)`` of a forward pass (a
    ``SANOutput``'s ``hidden_states``). ``quantity``: ``"residual"``, the norm of
    :math:`\operatorname{res}(X_l)`; ``"relative"``, :func:`relative_residual`; ``"norm"``, the
    norm of :math:`X_l` itself. ``norm`` and ``center`` as in :func:`relative_residual`.
    """
    check_choice("quantity", quantity, DEPTH_QUANTITIES)
    if (
        isinstance(hidden_states, torch.Tensor)
        or not hasattr(hidden_states, "__len__")
        or not len(hidden_states)
    ):
        raise TypeError(
            "hidden_states must be a non-empty list of token matrices (..., n, d), "
            f"got {type(hidden_states).__name__}"
        )
    measure = {
        "residual": lambda X: matrix_norm(res(X, center=center, norm=norm), norm=norm),
        "relative": lambda X: relative_residual(X, norm=norm, center=center),
        "norm": lambda X: matrix_norm(X, norm=norm),
    }[quantity]
    with torch.no_grad():
        return torch.stack([measure(X) for X in hidden_states]).detach()
