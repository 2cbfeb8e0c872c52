"""The bound of Theorems 2.2 and 2.3 and what it is made of: ``gamma``, the layer constants.

See :mod:`rankcollapse.theory` for the statement. Everything here is computed from one forward
pass of a pure attention network (:func:`rankcollapse.theory.weights.check_pure_attention`).
Book: chapter "Pure attention collapses", sections 2-3.
"""

from __future__ import annotations

import math

import torch

from .._validate import check_bool, check_choice, check_int
from ..residual import composite_norm, norm_1, norm_inf, res
from .weights import check_pure_attention, qk_matrices, value_matrices

__all__ = [
    "BOUND_FORMS",
    "gamma_details",
    "gamma",
    "layer_constants",
    "unit_residual_tokens",
    "depth_profile",
    "collapse_bound",
    "tracked_residual",
]

BOUND_FORMS = ("paper", "layerwise", "step")


@torch.no_grad()
def gamma_details(model, X) -> dict[str, torch.Tensor]:
    """Every ingredient of ``gamma`` for each layer, from one forward pass of ``model`` on ``X``.

    ``X``: ``(n, d)`` or ``(..., n, d)``. Returns tensors with a leading layer axis ``L``:

    - ``"eps"`` ``(L, ...)``: :math:`\\varepsilon_l = \\max_{h,i,j}|E_{h,ij}|`, ``E_h = R W_QK,h R^T / sqrt(d_qk)``
      with ``R`` the mean-centred input of layer ``l``;
    - ``"column_sum"`` ``(L, ...)``: :math:`\\max_h \\lVert P_h\\rVert_1`, the largest column sum of any
      head's attention matrix;
    - ``"nu"`` ``(L,)``: the head-balance factor
      :math:`\\sqrt{\\max_h q_h\\lVert W_h\\rVert_1 \\cdot \\max_h q_h\\lVert W_h\\rVert_\\infty} / \\beta_l`
      with :math:`q_h = \\lVert W_{QK,h}\\rVert_1` (1 for one head);
    - ``"kappa"`` ``(L, ...)``: :math:`\\sinh(2\\varepsilon)/(2\\varepsilon) \\cdot e^{\\varepsilon}`,
      which tends to 1 as the input collapses;
    - ``"gamma"`` ``(L, ...)``: their product ``kappa * sqrt(column_sum) * nu``;
    - ``"beta"`` ``(L,)``: :math:`\\beta_l = \\max_h \\lVert W_{QK,h}\\rVert_1 \\lVert W_h\\rVert_{1,\\infty}`;
    - ``"residual"`` ``(L+1, ...)``: the measured :math:`\\lVert\\operatorname{res}(X_l)\\rVert_{1,\\infty}`.

    Book: chapter "Pure attention collapses", section 2 (the derivation).
    """
    check_pure_attention(model)
    X = model.check_input(X)
    out = model(X)
    cfg = model.config
    Q, W = qk_matrices(model), value_matrices(model)
    q = norm_1(Q)  # (L, H)
    w1, winf = norm_1(W), norm_inf(W)
    b = q * torch.sqrt(w1 * winf)
    beta_l = b.amax(dim=-1)
    num = torch.sqrt((q * w1).amax(dim=-1) * (q * winf).amax(dim=-1))
    nu = torch.where(beta_l > 0, num / torch.where(beta_l > 0, beta_l, torch.ones_like(beta_l)),
                     torch.ones_like(beta_l))
    R_all = [res(Xl) for Xl in out.hidden_states]  # each layer's input, and the output
    eps, col = [], []
    for l, (R, P) in enumerate(zip(R_all[:-1], out.attentions)):
        E = torch.einsum("...nd,hde,...me->...hnm", R, Q[l], R) / math.sqrt(cfg.d_qk)
        eps.append(E.abs().amax(dim=(-1, -2, -3)))
        col.append(P.sum(dim=-2).amax(dim=(-1, -2)))
    resid = [composite_norm(R) for R in R_all]
    shape = X.shape[:-2]
    eps = torch.stack(eps) if eps else torch.zeros((0,) + shape, dtype=cfg.dtype)
    col = torch.stack(col) if col else torch.zeros((0,) + shape, dtype=cfg.dtype)
    t = 2 * eps
    sinhc = torch.where(t > 0, torch.sinh(t) / torch.where(t > 0, t, torch.ones_like(t)), torch.ones_like(t))
    kappa = sinhc * torch.exp(eps)
    nu_b = nu.reshape((-1,) + (1,) * len(shape))
    return {
        "eps": eps,
        "column_sum": col,
        "nu": nu,
        "kappa": kappa,
        "gamma": kappa * torch.sqrt(col) * nu_b,
        "beta": beta_l,
        "residual": torch.stack(resid),
    }


def _log_kappa(eps: torch.Tensor) -> torch.Tensor:
    r""":math:`\log\kappa = \log(\sinh(2\varepsilon)/(2\varepsilon)) + \varepsilon`, finite where ``kappa`` overflows.

    For ``2 eps >= 20``: :math:`\log\sinh t = t - \log 2 + \log(1 - e^{-2t})`.
    """
    t = 2 * eps
    small = torch.where(t < 20, t, torch.zeros_like(t))
    sinhc = torch.where(small > 0, torch.sinh(small) / torch.where(small > 0, small, torch.ones_like(small)),
                        torch.ones_like(small))
    big = torch.where(t >= 20, t, torch.full_like(t, 20.0))
    log_big = big - math.log(2) + torch.log1p(-torch.exp(-2 * big)) - torch.log(big)
    return torch.where(t < 20, torch.log(sinhc), log_big) + eps


def _log_layer_constants(model, det) -> torch.Tensor:
    r""":math:`\log c_l`, ``(L, ...)``: the log of the product where it is a finite float, else the sum
    of the factors' logs (``kappa`` overflows float64 once :math:`\varepsilon` passes about 236)."""
    cfg = model.config
    c = _layer_constants(model, det)
    beta_b = det["beta"].reshape((-1,) + (1,) * (det["gamma"].ndim - 1))
    nu_b = det["nu"].reshape(beta_b.shape)
    log_sum = (math.log(4 * cfg.n_heads / math.sqrt(cfg.d_qk)) + _log_kappa(det["eps"])
               + 0.5 * torch.log(det["column_sum"]) + torch.log(nu_b) + torch.log(beta_b))
    return torch.where(torch.isfinite(c), torch.log(c), log_sum)


def _layer_constants(model, det) -> torch.Tensor:
    b = det["beta"].reshape((-1,) + (1,) * (det["gamma"].ndim - 1))
    return 4 * det["gamma"] * b * model.config.n_heads / math.sqrt(model.config.d_qk)


def gamma(model, X) -> torch.Tensor:
    """The book's ``gamma`` of every layer, shape ``(L,)`` for ``X`` of shape ``(n, d)`` (``(L, ...)`` batched).

    :math:`\\gamma_l = \\frac{\\sinh 2\\varepsilon_l}{2\\varepsilon_l} e^{\\varepsilon_l}
    \\sqrt{\\max_h\\lVert P^{(l)}_h\\rVert_1}\\,\\nu_l` (see :func:`gamma_details` for each factor),
    the constant for which the one-layer step
    :math:`\\lVert\\operatorname{res}(X_{l+1})\\rVert \\le \\frac{4\\gamma_l\\beta_l H}{\\sqrt{d_{qk}}}
    \\lVert\\operatorname{res}(X_l)\\rVert^3` is proved in chapter "Pure attention collapses",
    section 2. It is computed from the forward pass of ``model`` on ``X`` (the attention entries
    and the layer inputs). Only pure attention networks are accepted.
    """
    return gamma_details(model, X)["gamma"]


def layer_constants(model, X) -> torch.Tensor:
    r"""Each layer's constant :math:`c_l = 4\gamma_l\beta_l H/\sqrt{d_{qk}}`, shape ``(L, ...)``.

    The one-layer step reads :math:`\lVert\operatorname{res}(X_{l+1})\rVert \le c_l
    \lVert\operatorname{res}(X_l)\rVert^3`; the theorem's condition is :math:`c_l < 1` for
    inputs with :math:`\lVert\operatorname{res}(X)\rVert \le 1` (chapter "Pure attention
    collapses", section 2).
    """
    return _layer_constants(model, gamma_details(model, X))


def unit_residual_tokens(n: int, d: int, *, generator: torch.Generator, dtype=torch.float64) -> torch.Tensor:
    r"""Standard normal tokens ``(n, d)`` scaled so that :math:`\lVert\operatorname{res}(X)\rVert_{1,\infty} = 1`.

    The mean-centred residual; the theorems' condition is stated for inputs of this size.
    """
    n, d = check_int("n", n, minimum=2), check_int("d", d)
    X = torch.randn(n, d, dtype=dtype, generator=generator)
    return X / composite_norm(res(X))


@torch.no_grad()
def depth_profile(model, X) -> dict[str, torch.Tensor]:
    r"""The residual against depth, measured and bounded, as ``log10`` (each ``(L+1,)``).

    ``"forward"``: :math:`\log_{10}\lVert\operatorname{res}(X_l)\rVert_{1,\infty}` from the float
    forward pass (it stops at the dtype's rounding floor); ``"tracked"``: the same followed
    exactly by :func:`tracked_residual`; ``"paper"`` and ``"layerwise"``: the bound of
    :func:`collapse_bound` in those forms; and ``"c"``: the largest layer constant of
    :func:`layer_constants` (a scalar). For ``X`` of shape ``(n, d)``.
    """
    det = gamma_details(model, X)  # one forward pass for every entry but the tracked residual
    logc = _log_layer_constants(model, det)
    return {
        "forward": torch.log10(det["residual"]),
        "tracked": tracked_residual(model, X, log10=True),
        "paper": _bound(logc, det, "paper") / math.log(10),
        "layerwise": _bound(logc, det, "layerwise") / math.log(10),
        "c": _layer_constants(model, det).max(),
    }


def _pow3(l: int, dtype) -> torch.Tensor:
    return torch.tensor(3.0, dtype=dtype) ** l


@torch.no_grad()
def collapse_bound(model, X, form: str = "paper", log10: bool = False) -> torch.Tensor:
    """The upper bound on :math:`\\lVert\\operatorname{res}(X_l)\\rVert_{1,\\infty}` for every layer ``l = 0..L``.

    Shape ``(L+1,)`` for ``X`` of shape ``(n, d)`` (``(L+1, ...)`` batched); entry 0 is the measured
    input residual itself. With :math:`c_l = 4\\gamma_l\\beta_l H/\\sqrt{d_{qk}}` (``gamma``: :func:`gamma`,
    ``beta``: the largest of :func:`beta` in layer ``l``) and :math:`r_l` the measured mean-centred residual:

    - ``form="paper"``: Theorems 2.2/2.3 as stated, :math:`c^{(3^l-1)/2} r_0^{3^l}` with ``c`` the
      largest :math:`c_k` over layers ``k < l``;
    - ``form="layerwise"``: the same cascade with each layer's own constant,
      :math:`\\prod_{k<l} c_k^{3^{l-1-k}} \\, r_0^{3^l}` (never larger);
    - ``form="step"``: the one-layer inequality applied to the measured input of each layer,
      :math:`c_{l-1} r_{l-1}^3`.

    Computed in log space (the bound over- and underflows doubly exponentially): ``log10=True``
    returns :math:`\\log_{10}` of the bound, which stays finite where the bound itself is 0 or inf
    in float64, and wherever the bound is finite: each constant :math:`c_l` enters as its log,
    taken factor by factor where :math:`c_l` itself overflows (large :math:`\\varepsilon_l`). Residuals are mean-centred; the bound holds for the optimal residual too.
    Book: chapter "Pure attention collapses", sections 2-3.
    """
    check_choice("form", form, BOUND_FORMS)
    log10 = check_bool("log10", log10)
    det = gamma_details(model, X)
    logb = _bound(_log_layer_constants(model, det), det, form)
    return logb / math.log(10) if log10 else torch.exp(logb)


def _bound(logc: torch.Tensor, det: dict, form: str) -> torch.Tensor:
    """The natural log of the bound of :func:`collapse_bound`, ``(L+1, ...)``, from ``log c_l`` and the residuals."""
    L = logc.shape[0]
    logr = torch.log(det["residual"])
    out = [logr[0]]
    running = None
    for l in range(1, L + 1):
        if form == "step":
            out.append(logc[l - 1] + 3 * logr[l - 1])
            continue
        if form == "paper":
            running = logc[l - 1] if running is None else torch.maximum(running, logc[l - 1])
            out.append((_pow3(l, logc.dtype) - 1) / 2 * running + _pow3(l, logc.dtype) * logr[0])
        else:  # layerwise
            acc = _pow3(l, logc.dtype) * logr[0]
            for k in range(l):
                acc = acc + _pow3(l - 1 - k, logc.dtype) * logc[k]
            out.append(acc)
    return torch.stack(out)


@torch.no_grad()
def tracked_residual(model, X, log10: bool = False) -> torch.Tensor:
    """:math:`\\lVert\\operatorname{res}(X_l)\\rVert_{1,\\infty}` for ``l = 0..L``, computed with *relative* accuracy.

    A forward pass in float64 cannot see a residual below about ``1e-16`` of the tokens' common
    part: the subtraction ``X - 1 x^T`` cancels. This function propagates the mean ``x_l`` and the
    residual ``R_l = X_l - 1 x_l^T`` separately, using the identities of the proof (chapter "Pure
    attention collapses", section 2): the logits are ``1 a^T + E`` up to row constants with
    ``a = R W_QK^T x / sqrt(d_qk)``, ``E = R W_QK R^T / sqrt(d_qk)``; with ``s = softmax(a)`` and
    ``rho_ij = exp(E_ij) / sum_k s_k exp(E_ik)`` (computed with ``expm1``/``log1p``),
    ``R_{l+1} = sum_h (P_h - 1 pbar_h^T) R_l W_h`` where ``P_h - 1 pbar_h^T = s_j (rho_ij - mean_k rho_kj)``.
    In exact arithmetic it equals the residual of the forward pass; in float64 it follows the
    residual down to about ``1e-300`` (then it underflows to 0). Where a head's ``|E|`` reaches 1
    (large weights, nothing cancels) the attention matrix is used directly: there the accuracy
    is relative to the tokens' size, as in the forward pass, and hard attention that sends every
    token to the same one can give an exact 0. Shape ``(L+1,)`` (``(L+1, ...)``
    batched); ``log10=True`` returns :math:`\\log_{10}` (``-inf`` after underflow).
    """
    log10 = check_bool("log10", log10)
    check_pure_attention(model)
    X = model.check_input(X)
    cfg = model.config
    Q, W = qk_matrices(model), value_matrices(model)
    scale = math.sqrt(cfg.d_qk)
    x = X.mean(dim=-2)  # (..., d)
    R = X - x.unsqueeze(-2)
    norms = [composite_norm(R)]
    for l in range(cfg.n_layers):
        a = torch.einsum("...nd,hed,...e->...hn", R, Q[l], x) / scale  # a_j = r_j^T W_QK^T x
        E = torch.einsum("...nd,hde,...me->...hnm", R, Q[l], R) / scale
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
        R_new = torch.einsum("...hnm,...md,hde->...ne", delta, R, W[l])
        x = torch.einsum("...hd,hde->...e", x.unsqueeze(-2) + torch.einsum("...hm,...md->...hd", pbar, R), W[l])
        R = R_new
        norms.append(composite_norm(R) if torch.isfinite(R).all() else torch.full_like(norms[0], float("nan")))
    out = torch.stack(norms)
    return torch.log10(out) if log10 else out
