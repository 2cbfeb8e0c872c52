"""The collapse bound against what it bounds: the tracked residual relative to the tokens' size,
and how far the bound lies above the tracked residual.

Both read :func:`.bound.tracked_residual` (the mean-centred residual, accurate far below float64's
rounding floor). Book: chapter "Pure attention collapses", sections 4 and 6.
"""

from __future__ import annotations

import torch

from .._validate import check_choice, check_finite_float
from ..residual import composite_norm
from .bound import BOUND_FORMS, collapse_bound, tracked_residual
from .weights import check_pure_attention

__all__ = ["tracked_relative_residual", "bound_gaps"]


@torch.no_grad()
def tracked_relative_residual(model, X) -> torch.Tensor:
    r""":math:`\lVert\operatorname{res}(X_l)\rVert_{1,\infty} / \lVert X_l\rVert_{1,\infty}` for ``l = 0..L``, the residual tracked.

    The residual is :func:`tracked_residual` (mean centre), the size :math:`\lVert X_l\rVert` the
    composite norm of the forward pass's hidden state, so the ratio stays accurate below the
    forward pass's rounding floor (until the tracked residual underflows to 0). Relative, because
    large value maps make every entry large. Shape ``(L+1,)`` for ``X`` ``(n, d)``
    (``(L+1, b)`` batched).
    """
    check_pure_attention(model)
    X = model.check_input(X)
    sizes = torch.stack([composite_norm(h) for h in model(X).hidden_states])
    return tracked_residual(model, X) / sizes


@torch.no_grad()
def bound_gaps(model, X, forms=BOUND_FORMS, floor: float = -290.0) -> dict[str, torch.Tensor]:
    r""":math:`\log_{10}` (bound / tracked residual) at every layer ``l >= 1`` where both are representable.

    For each form of :func:`collapse_bound` (mean centre), a 1-D tensor of the gaps at the layers
    (and, batched, the inputs, layer-major) where the bound and :func:`tracked_residual` are
    finite and the tracked residual's :math:`\log_{10}` lies above ``floor`` (near float64's
    underflow the tracked residual loses its relative accuracy). A negative gap is a violation of
    the bound. Book: chapter "Pure attention collapses", section 6 (how tight the bound is).
    """
    if isinstance(forms, str):
        forms = (forms,)
    forms = tuple(check_choice("forms", f, BOUND_FORMS) for f in forms)
    if not forms:
        raise ValueError("forms must name at least one form of the bound, got none")
    floor = check_finite_float("floor", floor)
    tracked = tracked_residual(model, X, log10=True)[1:]
    out = {}
    for form in forms:
        bound = collapse_bound(model, X, form, log10=True)[1:]
        ok = torch.isfinite(bound) & torch.isfinite(tracked) & (tracked > floor)
        out[form] = (bound - tracked)[ok]
    return out
