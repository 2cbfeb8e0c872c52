"""The book's collapse bound (of the form of the paper's Theorem 2.2 and its multi-head form) and
what it is made of.

See :mod:`rankcollapse.theory` for the statement. Everything here is computed from one forward
pass of a pure attention network (:func:`rankcollapse.theory.weights.check_pure_attention`),
in one centre (``center``: ``"mean"``, the default everywhere, or a centre function such as
``rc.centering.optimal_center``, the paper's), the same for every layer. Book: chapter "Pure
attention collapses", sections 2-3 (the one-layer lemma for any centre, and the theorem "The
collapse bound with a computable constant (this book)").
"""

from __future__ import annotations

import math

import torch

from .._validate import (
    check_bool,
    check_choice,
    check_dtype,
    check_elements,
    check_generator,
    check_int,
)
from ..residual import check_center, composite_norm, res
from .tracked import (
    attention_logits,
    tracked_layers,
    tracked_residual,  # noqa: F401  (re-exported)
)
from .weights import check_pure_attention, head_norms

__all__ = [
    "BOUND_FORMS",
    "DEFAULT_CENTER",
    "gamma_details",
    "gamma",
    "layer_constants",
    "unit_residual_tokens",
    "depth_profile",
    "collapse_bound",
    "tracked_residual",
]

BOUND_FORMS = ("paper", "layerwise", "step")
#: The centre every function of :mod:`rankcollapse.theory` uses unless told otherwise: the column
#: mean (the official code's, and every figure's). The paper's optimal centre is a function
#: above the core: ``center=rc.centering.optimal_center``.
DEFAULT_CENTER = "mean"


def _layer_residuals(model, X, out, center: str) -> list[torch.Tensor]:
    """``R_l = X_l - 1 x_l^T`` for ``l = 0..L`` in ``center``: for the mean, the tracked residual
    (:func:`tracked_residual`: exact to relative rounding below the forward pass's floor); for a
    centre function (``rc.centering.optimal_center``), the forward pass's hidden states centred
    by it."""
    if center == "mean":
        return tracked_layers(model, X)
    return [res(h, center=center) for h in out.hidden_states]


@torch.no_grad()
def gamma_details(model, X, center: str = DEFAULT_CENTER) -> dict[str, torch.Tensor]:
    """Every ingredient of ``gamma`` for each layer, from one forward pass of ``model`` on ``X``.

    ``X``: ``(n, d)`` or ``(..., n, d)``; ``center``: the centre ``x`` of every layer's input,
    ``R = X_l - 1 x^T`` (``"mean"``: the column mean, followed by :func:`tracked_residual` so that
    it stays accurate below float64's floor; or a function ``X -> x``, such as
    ``rc.centering.optimal_center``, the minimiser of the composite norm, a linear programme per
    layer, slow for large matrices). The attention matrices do not depend
    on the centre; ``eps``, and so ``gamma``, does. Returns tensors with a leading layer axis ``L``:

    - ``"eps"`` ``(L, ...)``: :math:`\\varepsilon_l = \\max_{h,i,j}|E_{h,ij}|`, ``E_h = R W_QK,h R^T
      / sqrt(d_qk)`` with ``R`` the input of layer ``l`` in ``center``;
    - ``"column_sum"`` ``(L, ...)``: :math:`\\max_h \\lVert P_h\\rVert_1`, the largest column sum of
      any head's attention matrix;
    - ``"nu"`` ``(L,)``: the head-balance factor
      :math:`\\sqrt{\\max_h q_h\\lVert W_h\\rVert_1 \\cdot \\max_h q_h\\lVert W_h\\rVert_\\infty} /
      \\beta_l` with :math:`q_h = \\lVert W_{QK,h}\\rVert_1` (1 for one head);
    - ``"kappa"`` ``(L, ...)``: :math:`\\sinh(2\\varepsilon)/(2\\varepsilon) \\cdot
      e^{\\varepsilon}`, which tends to 1 as the input collapses;
    - ``"gamma"`` ``(L, ...)``: their product ``kappa * sqrt(column_sum) * nu``;
    - ``"beta"`` ``(L,)``: :math:`\\beta_l = \\max_h \\lVert W_{QK,h}\\rVert_1 \\lVert
      W_h\\rVert_{1,\\infty}`;
    - ``"residual"`` ``(L+1, ...)``: :math:`\\lVert R_l\\rVert_{1,\\infty}`, the residual in
      ``center`` (for the mean, the tracked one);
    - ``"forward_residual"`` ``(L+1, ...)``: the same from the float forward pass (it stops at the
      dtype's rounding floor);
    - ``"size"`` ``(L+1, ...)``: :math:`\\lVert X_l\\rVert_{1,\\infty}`, the tokens' size in the
      forward pass.

    Book: chapter "Pure attention collapses", section 2 (the derivation, Definition "The constant
    gamma of a layer (this book)").
    """
    check_pure_attention(model)
    center = check_center(center)
    X = model.check_input(X)
    out = model(X)
    cfg = model.config
    q, w1, winf = head_norms(model)  # (L, H) each
    b = q * torch.sqrt(w1 * winf)
    beta_l = b.amax(dim=-1)
    num = torch.sqrt((q * w1).amax(dim=-1) * (q * winf).amax(dim=-1))
    nu = torch.where(
        beta_l > 0,
        num / torch.where(beta_l > 0, beta_l, torch.ones_like(beta_l)),
        torch.ones_like(beta_l),
    )
    R_all = _layer_residuals(model, X, out, center)  # each layer's input, and the output
    eps, col = [], []
    for l, (R, P) in enumerate(zip(R_all[:-1], out.attentions)):
        E = attention_logits(R, None, model.layers[l], cfg)[1]
        eps.append(E.abs().amax(dim=(-1, -2, -3)))
        col.append(P.sum(dim=-2).amax(dim=(-1, -2)))
    resid = [composite_norm(R) for R in R_all]
    shape = X.shape[:-2]
    eps = torch.stack(eps) if eps else torch.zeros((0,) + shape, dtype=cfg.dtype)
    col = torch.stack(col) if col else torch.zeros((0,) + shape, dtype=cfg.dtype)
    t = 2 * eps
    sinhc = torch.where(
        t > 0, torch.sinh(t) / torch.where(t > 0, t, torch.ones_like(t)), torch.ones_like(t)
    )
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
        "forward_residual": torch.stack(
            [composite_norm(res(h, center=center)) for h in out.hidden_states]
        ),
        "size": torch.stack([composite_norm(h) for h in out.hidden_states]),
    }


def log_kappa(eps: torch.Tensor) -> torch.Tensor:
    r""":math:`\log\kappa = \log(\sinh(2\varepsilon)/(2\varepsilon)) + \varepsilon`, finite where
    ``kappa`` overflows.

    For ``2 eps >= 20``: :math:`\log\sinh t = t - \log 2 + \log(1 - e^{-2t})`.
    """
    t = 2 * eps
    small = torch.where(t < 20, t, torch.zeros_like(t))
    sinhc = torch.where(
        small > 0,
        torch.sinh(small) / torch.where(small > 0, small, torch.ones_like(small)),
        torch.ones_like(small),
    )
    big = torch.where(t >= 20, t, torch.full_like(t, 20.0))
    log_big = big - math.log(2) + torch.log1p(-torch.exp(-2 * big)) - torch.log(big)
    return torch.where(t < 20, torch.log(sinhc), log_big) + eps


def _log_layer_constants(model, det) -> torch.Tensor:
    r""":math:`\log c_l`, ``(L, ...)``: the log of the product where it is a finite float, else the
    sum
    of the factors' logs (``kappa`` overflows float64 once :math:`\varepsilon` passes about 236)."""
    cfg = model.config
    c = _layer_constants(model, det)
    beta_b = det["beta"].reshape((-1,) + (1,) * (det["gamma"].ndim - 1))
    nu_b = det["nu"].reshape(beta_b.shape)
    log_sum = (
        math.log(4 * cfg.n_heads / math.sqrt(cfg.d_qk))
        + log_kappa(det["eps"])
        + 0.5 * torch.log(det["column_sum"])
        + torch.log(nu_b)
        + torch.log(beta_b)
    )
    return torch.where(torch.isfinite(c), torch.log(c), log_sum)


def _layer_constants(model, det) -> torch.Tensor:
    b = det["beta"].reshape((-1,) + (1,) * (det["gamma"].ndim - 1))
    return 4 * det["gamma"] * b * model.config.n_heads / math.sqrt(model.config.d_qk)


def gamma(model, X, center: str = DEFAULT_CENTER) -> torch.Tensor:
    """The book's ``gamma`` of every layer, shape ``(L,)`` for ``X`` of shape ``(n, d)`` (``(L,
    ...)`` batched).

    :math:`\\gamma_l = \\frac{\\sinh 2\\varepsilon_l}{2\\varepsilon_l} e^{\\varepsilon_l}
    \\sqrt{\\max_h\\lVert P^{(l)}_h\\rVert_1}\\,\\nu_l` (see :func:`gamma_details` for each factor),
    the constant for which the one-layer step
    :math:`\\lVert\\operatorname{res}(X_{l+1})\\rVert \\le \\frac{4\\gamma_l\\beta_l
    H}{\\sqrt{d_{qk}}} \\lVert\\operatorname{res}(X_l)\\rVert^3` is proved in chapter "Pure
    attention collapses", section 2. It is computed from the forward pass of ``model`` on ``X`` (the
    attention entries and the layer inputs, centred by ``center``, see :func:`gamma_details`). Only
    pure attention networks are accepted.
    """
    return gamma_details(model, X, center)["gamma"]


def layer_constants(model, X, center: str = DEFAULT_CENTER, log10: bool = False) -> torch.Tensor:
    r"""Each layer's constant :math:`c_l = 4\gamma_l\beta_l H/\sqrt{d_{qk}}`, shape ``(L, ...)``.

    The one-layer step reads :math:`\lVert\operatorname{res}(X_{l+1})\rVert \le c_l
    \lVert\operatorname{res}(X_l)\rVert^3`; the theorem's condition is :math:`\max_l c_l < 1` for
    inputs with :math:`\lVert\operatorname{res}(X)\rVert \le 1` (chapter "Pure attention
    collapses", section 2). ``center`` as in :func:`gamma_details`. ``log10=True`` returns
    :math:`\log_{10} c_l`, finite where :math:`c_l` itself overflows float64 (large weights grow
    the later layers' inputs, and :math:`\gamma_l` grows like :math:`e^{3\varepsilon_l}`).
    """
    log10 = check_bool("log10", log10)
    det = gamma_details(model, X, center)
    if log10:
        return _log_layer_constants(model, det) / math.log(10)
    return _layer_constants(model, det)


def unit_residual_tokens(
    n: int, d: int, *, generator: torch.Generator, dtype=torch.float64
) -> torch.Tensor:
    r"""Standard normal tokens ``(n, d)`` scaled so that
    :math:`\lVert\operatorname{res}(X)\rVert_{1,\infty} = 1`.

    The mean-centred residual; the theorems' condition is stated for inputs of this size.
    """
    n, d = check_int("n", n, minimum=2), check_int("d", d)
    check_elements("n * d", n * d, alternative="draw fewer or narrower tokens")
    generator = check_generator("generator", generator)
    X = torch.randn(n, d, dtype=check_dtype("dtype", dtype), generator=generator)
    return X / composite_norm(res(X))


@torch.no_grad()
def depth_profile(model, X, center: str = DEFAULT_CENTER) -> dict[str, torch.Tensor]:
    r"""The residual against depth, measured and bounded, as ``log10`` (each ``(L+1,)``).

    ``"forward"``: :math:`\log_{10}\lVert\operatorname{res}(X_l)\rVert_{1,\infty}` from the float
    forward pass (it stops at the dtype's rounding floor); ``"tracked"``: the same followed
    exactly by :func:`tracked_residual`; ``"paper"`` and ``"layerwise"``: the bound of
    :func:`collapse_bound` in those forms; and ``"c"``: the largest layer constant of
    :func:`layer_constants` (a scalar; NaN for a network of depth 0, which has no layer); and
    ``"size"``: :math:`\log_{10}\lVert X_l\rVert_{1,\infty}`, the tokens' size (``"tracked"``
    minus ``"size"`` is the relative residual). For ``X`` of shape ``(n, d)``; ``center`` as in
    :func:`gamma_details` (``"tracked"`` is the mean-centred residual whatever the centre).
    """
    det = gamma_details(model, X, center)  # one forward pass for every entry
    logc = _log_layer_constants(model, det)
    tracked = det["residual"] if center == "mean" else tracked_residual(model, X)
    c = _layer_constants(model, det)
    return {
        "size": torch.log10(det["size"]),
        "forward": torch.log10(det["forward_residual"]),
        "tracked": torch.log10(tracked),
        "paper": _bound(logc, det, "paper") / math.log(10),
        "layerwise": _bound(logc, det, "layerwise") / math.log(10),
        "c": c.max() if c.numel() else torch.tensor(math.nan, dtype=c.dtype),
    }


def _pow3(l: int, dtype) -> torch.Tensor:
    return torch.tensor(3.0, dtype=dtype) ** l


@torch.no_grad()
def collapse_bound(
    model, X, form: str = "paper", log10: bool = False, center: str = DEFAULT_CENTER
) -> torch.Tensor:
    """The book's upper bound on :math:`\\lVert\\operatorname{res}(X_l)\\rVert_{1,\\infty}` for
    every layer ``l = 0..L``.

    Shape ``(L+1,)`` for ``X`` of shape ``(n, d)`` (``(L+1, ...)`` batched); entry 0 is the input
    residual itself. One centre throughout (``center``, see :func:`gamma_details`): the residuals
    :math:`r_l` and the constants :math:`c_l = 4\\gamma_l\\beta_l H/\\sqrt{d_{qk}}` (``gamma``:
    :func:`gamma`, ``beta``: the largest of :func:`beta` in layer ``l``) are all in it, and the
    bound bounds the residual in that centre (and, the optimal residual being the smallest, the
    optimal residual too):

    - ``form="paper"``: one constant for all layers, the form of the paper's Theorem 2.2 (with
      the book's ``gamma``), :math:`c^{(3^l-1)/2} r_0^{3^l}` with ``c`` the largest :math:`c_k`
      over layers ``k < l``;
    - ``form="layerwise"``: the same cascade with each layer's own constant,
      :math:`\\prod_{k<l} c_k^{3^{l-1-k}} \\, r_0^{3^l}` (never larger);
    - ``form="step"``: the one-layer lemma applied to each layer's own input, :math:`c_{l-1}
      r_{l-1}^3`, with :math:`r_{l-1}` and :math:`c_{l-1}` from the tracked residual for the mean
      centre (accurate far below the forward pass's rounding floor, where the forward residual is
      rounding noise), from the forward pass for a centre function.

    Zeros are exact, never dropped: an input residual of exactly 0 (every token the same) gives a
    bound of exactly 0 at every layer, as does a layer constant of 0 (``beta = 0``) from the next
    layer on, since tokens that are all the same stay the same; a zero residual wins over an
    infinite constant. (The tracked residual underflows to 0 below about ``1e-308``; the step form
    then reads that 0 as exact. The paper and layerwise forms need only :math:`r_0`.) Computed in
    log space (the bound over- and underflows doubly exponentially): ``log10=True`` returns
    :math:`\\log_{10}` of the bound, ``-inf`` for an exact 0, finite wherever the bound is a
    positive finite number even if float64 cannot hold it: each constant :math:`c_l` enters as its
    log, taken factor by factor where :math:`c_l` itself overflows (large :math:`\\varepsilon_l`).
    NaN only where the tracked residual itself is not finite. Book: chapter "Pure attention
    collapses", sections 2-3.
    """
    check_choice("form", form, BOUND_FORMS)
    log10 = check_bool("log10", log10)
    det = gamma_details(model, X, center)
    logb = _bound(_log_layer_constants(model, det), det, form)
    return logb / math.log(10) if log10 else torch.exp(logb)


def _bound(logc: torch.Tensor, det: dict, form: str) -> torch.Tensor:
    """The natural log of the bound of :func:`collapse_bound`, ``(L+1, ...)``, from ``log c_l`` and
    the residuals.

    An exact zero (a residual or a constant whose log is ``-inf``) makes every later entry
    ``-inf``, whatever the other factors (``-inf + inf`` would otherwise give NaN).
    """
    L = logc.shape[0]
    logr = torch.log(det["residual"])
    neg_inf = torch.full_like(logr[0], -math.inf)
    zero = torch.isneginf(logr[0])  # a zero residual so far, or a zero constant
    out = [logr[0]]
    running = None
    for l in range(1, L + 1):
        if form == "step":
            step_zero = torch.isneginf(logr[l - 1]) | torch.isneginf(logc[l - 1])
            out.append(torch.where(step_zero, neg_inf, logc[l - 1] + 3 * logr[l - 1]))
            continue
        zero = zero | torch.isneginf(logc[l - 1])
        if form == "paper":
            running = logc[l - 1] if running is None else torch.maximum(running, logc[l - 1])
            value = (_pow3(l, logc.dtype) - 1) / 2 * running + _pow3(l, logc.dtype) * logr[0]
        else:  # layerwise
            value = _pow3(l, logc.dtype) * logr[0]
            for k in range(l):
                value = value + _pow3(l - 1 - k, logc.dtype) * logc[k]
        out.append(torch.where(zero, neg_inf, value))
    return torch.stack(out)
