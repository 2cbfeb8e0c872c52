"""The residual through depth with *relative* accuracy, below float64's cancellation floor.

:func:`tracked_residual` propagates each layer's mean token and residual separately (the
identities of the collapse bound's proof), so the collapse can be followed down to about
``1e-300``. Re-exported by :mod:`rankcollapse.theory.bound`, beside the bound it is compared with.
Book: chapter "Pure attention collapses".
"""

from __future__ import annotations

import math

import torch

from .._validate import check_bool
from ..residual import composite_norm
from .weights import check_pure_attention, output_map

__all__ = ["tracked_residual"]


@torch.no_grad()
def tracked_residual(model, X, log10: bool = False) -> torch.Tensor:
    """:math:`\\lVert\\operatorname{res}(X_l)\\rVert_{1,\\infty}` for ``l = 0..L``, computed with
    *relative* accuracy.

    A forward pass in float64 cannot see a residual below about ``1e-16`` of the tokens' common
    part: the subtraction ``X - 1 x^T`` cancels. This function propagates the mean ``x_l`` and the
    residual ``R_l = X_l - 1 x_l^T`` separately, using the identities of the proof (chapter "Pure
    attention collapses", section 2): the logits are ``1 a^T + E`` up to row constants with
    ``a = R W_QK^T x / sqrt(d_qk)``, ``E = R W_QK R^T / sqrt(d_qk)``; with ``s = softmax(a)`` and
    ``rho_ij = exp(E_ij) / sum_k s_k exp(E_ik)`` (computed with ``expm1``/``log1p``),
    ``R_{l+1} = sum_h (P_h - 1 pbar_h^T) R_l W_h`` where ``P_h - 1 pbar_h^T = s_j (rho_ij - mean_k
    rho_kj)``. In exact arithmetic it equals the residual of the forward pass; in float64 it follows
    the residual down to about ``1e-300`` (then it underflows to 0). Where a head's ``|E|`` reaches
    1 (large weights, nothing cancels) the attention matrix is used directly: there the accuracy
    is relative to the tokens' size, as in the forward pass, and hard attention that sends every
    token to the same one can give an exact 0. Shape ``(L+1,)`` (``(L+1, ...)``
    batched); ``log10=True`` returns :math:`\\log_{10}` (``-inf`` after underflow).
    """
    log10 = check_bool("log10", log10)
    check_pure_attention(model)
    X = model.check_input(X)
    norms = []
    for R in tracked_layers(model, X):
        norm = composite_norm(R)
        norms.append(
            torch.where(
                torch.isfinite(R).flatten(-2).all(dim=-1), norm, torch.full_like(norm, math.nan)
            )
        )
    out = torch.stack(norms)
    return torch.log10(out) if log10 else out


def attention_logits(R, x, block, cfg):
    """``(a, E)`` of Step 1 for one layer, each head's factors applied in turn (never the ``d x d``
    products, which cost ``d / d_qk`` times more): ``E = (R W_Q)(R W_K)^T / sqrt(d_qk)``
    ``(..., H, n, n)`` and, when ``x`` is given, ``a = (R W_K)(x W_Q)^T / sqrt(d_qk)`` ``(..., H,
    n)``,
    i.e. ``a_j = r_j^T W_QK^T x``."""
    scale = math.sqrt(cfg.d_qk)
    k = torch.einsum("...nd,hde->...hne", R, block.W_K.detach())
    E = torch.einsum("...nd,hde->...hne", R, block.W_Q.detach()) @ k.transpose(-1, -2) / scale
    if x is None:
        return None, E
    qx = torch.einsum("...d,hde->...he", x, block.W_Q.detach())
    return (k @ qx.unsqueeze(-1)).squeeze(-1) / scale, E


def _values(R, block):
    """``R W_V,h`` of every head, ``(..., H, n, d_v)`` for ``R`` ``(..., n, d)``."""
    return torch.einsum("...nd,hdv->...hnv", R, block.W_V.detach())


def _output(V, block):
    """``sum_h V_h W_O,h`` for ``V`` ``(..., H, m, d_v)``: ``(..., m, d)`` (``W_O`` times the
    config's ``branch_scale``, as the forward pass applies it)."""
    return torch.einsum("...hmv,hve->...me", V, output_map(block))


def tracked_layers(model, X) -> list[torch.Tensor]:
    """The mean-centred residuals ``R_0 .. R_L`` of :func:`tracked_residual` (``model`` and ``X``
    checked).

    Each layer's ``W_QK,h`` and ``W_h`` enter through their factors (:func:`attention_logits`,
    :func:`_values`, :func:`_output`): the same numbers up to rounding, and ``d / d_qk`` times fewer
    operations than with the ``d x d`` products of :func:`~.weights.qk_matrices` (what makes real
    models'
    layers affordable)."""
    cfg = model.config
    x = X.mean(dim=-2)  # (..., d)
    R = X - x.unsqueeze(-2)
    out = [R]
    for l in range(cfg.n_layers):
        block = model.layers[l]
        a, E = attention_logits(
            R, x, block, cfg
        )  # a_j = r_j^T W_QK^T x, E = R W_QK R^T (over sqrt(d_qk))
        s = torch.softmax(a, dim=-1)  # (..., H, n)
        # small E (the collapsing regime): rho - 1 with expm1/log1p, accurate to relative rounding
        t = (s.unsqueeze(-2) * torch.expm1(E.clamp(max=1.0))).sum(dim=-1, keepdim=True)
        rho_m1 = torch.expm1(E.clamp(max=1.0) - torch.log1p(t))
        col_mean = rho_m1.mean(dim=-2, keepdim=True)
        delta_small = s.unsqueeze(-2) * (rho_m1 - col_mean)  # P_h - 1 pbar_h^T, (..., H, n, n)
        pbar_small = s * (1 + col_mean.squeeze(-2))  # (..., H, n)
        # large E: nothing cancels, use the attention matrix itself
        P = torch.softmax(a.unsqueeze(-2) + E, dim=-1)
        delta_big, pbar_big = P - P.mean(dim=-2, keepdim=True), P.mean(dim=-2)
        small = E.abs().amax(dim=(-1, -2)) < 1.0  # (..., H)
        delta = torch.where(small[..., None, None], delta_small, delta_big)
        pbar = torch.where(small[..., None], pbar_small, pbar_big)
        V = _values(R, block)  # R W_V,h, (..., H, n, d_v)
        xv = _values(x.unsqueeze(-2), block)  # x^T W_V,h, (..., H, 1, d_v)
        x = _output(xv + pbar.unsqueeze(-2) @ V, block).squeeze(-2)  # sum_h (x + pbar_h^T R) W_h
        R = _output(delta @ V, block)  # sum_h (P_h - 1 pbar_h^T) R W_h
        out.append(R)
    return out
