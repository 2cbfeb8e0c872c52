"""The collapse bound against what it bounds: the tracked residual relative to the tokens' size,
how far the bound lies above the tracked residual, and how hard the attention is where the
residual survives; how far each attention matrix is from rank one.

The first two read :func:`.bound.tracked_residual` (the mean-centred residual, accurate far below
float64's rounding floor). Book: chapter "Pure attention collapses", sections 2, 4, 5 and 6.
"""

from __future__ import annotations

import torch

from .._validate import check_choice, check_finite_float, check_probability_matrix
from ..residual import NORMS, composite_norm, matrix_norm, res
from .bound import BOUND_FORMS, collapse_bound, tracked_residual
from .weights import check_pure_attention

__all__ = [
    "tracked_relative_residual",
    "bound_gaps",
    "attention_hardness",
    "rank_one_distance",
    "attention_through_depth",
]


@torch.no_grad()
def tracked_relative_residual(model, X) -> torch.Tensor:
    r""":math:`\lVert\operatorname{res}(X_l)\rVert_{1,\infty} / \lVert X_l\rVert_{1,\infty}` for ``l
    = 0..L``, the residual tracked.

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
    r""":math:`\log_{10}` (bound / tracked residual) at every layer ``l >= 1`` where both are
    representable.

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


@torch.no_grad()
def attention_hardness(model, X) -> dict[str, torch.Tensor]:
    r"""How close each head's attention is to a 0/1 matrix, and how many tokens it points to.

    From the forward pass of a pure attention network on ``X`` ``(n, d)``, for every layer and
    head (shapes ``(L, H)``):

    - ``"row_max"``: the largest entry of each row of :math:`P_h`, averaged over rows: ``1/n``
      for uniform attention, 1 for hard attention (each token attends to one token);
    - ``"targets"``: the number of distinct tokens the rows attend to most
      (:math:`|\{\arg\max_j P_{h,ij} : i\}|`), between 1 (every token attends to the same
      token) and ``n``.

    Book: chapter "Pure attention collapses", section 4 (the networks that escape collapse).
    """
    check_pure_attention(model)
    X = model.check_input(X)
    if X.dim() != 2:
        raise ValueError(f"X must be one input of shape (n, d), got shape {tuple(X.shape)}")
    P = torch.stack(model(X).attentions)  # (L, H, n, n)
    top = P.argmax(dim=-1)  # (L, H, n)
    targets = torch.tensor(
        [[len(torch.unique(t)) for t in layer] for layer in top], dtype=torch.int64
    )
    return {"row_max": P.amax(dim=-1).mean(dim=-1), "targets": targets.reshape(P.shape[:2])}


def rank_one_distance(P, norm: str = "fro") -> torch.Tensor:
    r"""How far row-stochastic matrices ``P`` ``(..., n, n)`` are from rank one: :math:`\lVert P -
    \mathbf 1\bar p^\top\rVert`.

    :math:`\bar p` is the column mean of ``P``, so :math:`P - \mathbf 1\bar p^\top` is the
    matrix :math:`\Delta` of Step 2 of the chapter "Pure attention collapses" (section 2), and the
    mean-centred residual of ``P`` seen as ``n`` tokens. In the Frobenius norm (``norm="fro"``,
    the default) it is the distance to the nearest matrix of the form :math:`\mathbf 1 s^\top`
    (every row the same), and that nearest matrix, :math:`\mathbf 1\bar p^\top`, is itself
    row-stochastic; ``norm="l1inf"`` gives :math:`\lVert\Delta\rVert_{1,\infty}`, the norm the
    chapter's Steps bound. Zero when every row of ``P`` is the same (up to the rounding of the
    column mean), and only then. Shape ``(...)``. ``P`` that is not row-stochastic (square,
    non-negative, rows summing to 1 within ``1e-6 n``) is refused with a ``ValueError``.
    """
    check_choice("norm", norm, NORMS)
    P = check_probability_matrix("P", P)
    return matrix_norm(res(P), norm=norm)


@torch.no_grad()
def attention_through_depth(model, X, norm: str = "fro") -> dict[str, torch.Tensor]:
    r"""Every layer's attention matrices and their distance to rank one, from one forward pass.

    ``model``: a pure attention network; ``X``: ``(n, d)`` or batched ``(..., n, d)``. Returns
    ``"attention"`` ``(L, ..., H, n, n)``, the matrices :math:`P^{(l)}_h`, and ``"distance"``
    ``(L, ..., H)``, :func:`rank_one_distance` of each (in ``norm``). Book: chapter "Pure
    attention collapses", section 5 (the attention matrices through depth).
    """
    check_pure_attention(model)
    check_choice("norm", norm, NORMS)
    X = model.check_input(X)
    attentions = model(X).attentions
    if not attentions:  # no layers
        n, H = X.shape[-2], model.config.n_heads
        P = torch.zeros((0,) + X.shape[:-2] + (H, n, n), dtype=X.dtype)
        return {"attention": P, "distance": P.sum(dim=(-1, -2))}
    P = torch.stack(attentions)
    return {"attention": P, "distance": rank_one_distance(P, norm=norm)}
