"""The theory of rank collapse: the quantities of Theorems 2.2 and 2.3 and the bound they give.

Dong et al. (2021, Theorems 2.2 and 2.3) bound the residual of a *pure* self-attention network
(no skip connections, no MLP, no LayerNorm, no biases) after ``L`` layers:

.. math::
    \\lVert \\operatorname{res}(X_L) \\rVert_{1,\\infty}
    \\le \\Big(\\frac{4 \\gamma \\beta H}{\\sqrt{d_{qk}}}\\Big)^{\\frac{3^L-1}{2}}
         \\lVert \\operatorname{res}(X) \\rVert_{1,\\infty}^{3^L},

where ``beta`` bounds :math:`\\lVert W_{QK,h}\\rVert_1 \\lVert W_{h}\\rVert_{1,\\infty}` in every layer
and head, and ``gamma`` depends on the attention entries. The book derives ``gamma`` from the
proof of the one-layer step (chapter "Pure attention collapses", section 2):

.. math::
    \\gamma_l = \\frac{\\sinh(2\\varepsilon_l)}{2\\varepsilon_l}\\, e^{\\varepsilon_l}
                \\sqrt{\\max_h \\lVert P^{(l)}_h \\rVert_1}\\;\\nu_l,

with :math:`\\varepsilon_l = \\max_{h,i,j} |E_{h,ij}|`, :math:`E_h = R W_{QK,h} R^\\top/\\sqrt{d_{qk}}`,
:math:`R = X_{l} - \\mathbf 1 \\bar x^\\top` the mean-centred input of layer ``l``;
:math:`\\lVert P_h\\rVert_1` the largest column sum of head ``h``'s attention matrix (how much
attention the most-attended token receives; 1 for uniform attention); and :math:`\\nu_l \\ge 1`
a head-balance factor, exactly 1 for a single head. Every residual here is mean-centred
(``rc.residual.res(X, center="mean")``); since the optimal residual is never larger than the
mean-centred one, the bound also bounds the paper's optimal residual.

The core of the library: imports torch and the core modules only. Also here: the families of
skip-connection networks that never lose residual (chapter "Skip connections").
"""

from __future__ import annotations

import math

import torch

from ._validate import as_tokens, check_choice, check_int, check_positive_float
from .residual import composite_norm, norm_1, norm_inf, res
from .san import SAN, SANConfig, check_san

__all__ = [
    "check_pure_attention",
    "qk_matrices",
    "value_matrices",
    "beta",
    "gamma",
    "gamma_details",
    "collapse_bound",
    "tracked_residual",
    "layer_constants",
    "unit_residual_tokens",
    "depth_profile",
    "BOUND_FORMS",
    "PRESERVING_FAMILIES",
    "preserving_san",
    "preserving_input",
    "random_instances",
    "search_smallest_ratio",
]

BOUND_FORMS = ("paper", "layerwise", "step")
PRESERVING_FAMILIES = ("zero_value", "uniform_attention", "reserved_subspace")


def check_pure_attention(model) -> SAN:
    """Raise ``ValueError`` unless ``model`` is a pure self-attention network (Theorems 2.2, 2.3).

    The theorems cover ``skip=False, mlp=0, layernorm="none", bias=False`` only; the error names
    every switch that takes the model outside them, and why.
    """
    cfg = check_san(model).config
    why = []
    if cfg.skip:
        why.append("it has skip connections (skip=True): the length-zero path carries the input "
                   "through untouched and the bound does not hold (chapter 'Skip connections')")
    if cfg.mlp:
        why.append(f"it has an MLP (mlp={cfg.mlp}): the bound then needs the MLP's Lipschitz constant")
    if cfg.layernorm != "none":
        why.append(f"it has LayerNorm (layernorm={cfg.layernorm!r}): the proof assumes no normalisation")
    if cfg.bias:
        why.append("it has biases (bias=True): query/key biases change the attention logits the proof expands")
    if why:
        raise ValueError("model is not a pure self-attention network, which is all the theorem covers: "
                         + "; ".join(why))
    return model


@torch.no_grad()
def qk_matrices(model) -> torch.Tensor:
    """:math:`W_{QK,h} = W_{Q,h} W_{K,h}^\\top` of every layer and head, shape ``(L, H, d, d)``.

    The attention logits of head ``h`` are :math:`X W_{QK,h} X^\\top / \\sqrt{d_{qk}}`.
    """
    check_san(model)
    mats = [b.W_Q.detach() @ b.W_K.detach().transpose(-1, -2) for b in model.layers]
    cfg = model.config
    if not mats:
        return torch.zeros(0, cfg.n_heads, cfg.d_model, cfg.d_model, dtype=cfg.dtype)
    return torch.stack(mats)


@torch.no_grad()
def value_matrices(model) -> torch.Tensor:
    """The value map :math:`W_h = W_{V,h} W_{O,h}` of every layer and head, shape ``(L, H, d, d)``.

    ``W_{V,h}`` is head ``h``'s ``(d, d_v)`` value projection and ``W_{O,h}`` its ``(d_v, d)`` slice
    of the output projection: the head contributes :math:`P_h X W_{V,h} W_{O,h}` to the layer.
    """
    check_san(model)
    mats = [b.W_V.detach() @ b.W_O.detach() for b in model.layers]
    cfg = model.config
    if not mats:
        return torch.zeros(0, cfg.n_heads, cfg.d_model, cfg.d_model, dtype=cfg.dtype)
    return torch.stack(mats)


def beta(model) -> torch.Tensor:
    """:math:`\\lVert W_{QK,h}\\rVert_1 \\lVert W_h\\rVert_{1,\\infty}` per layer and head, shape ``(L, H)``.

    ``W_QK,h = W_Q,h W_K,h^T`` (``d x d``, see :func:`qk_matrices`) and ``W_h = W_V,h W_O,h``
    (``d x d``, the head's value map including its slice of the output projection, see
    :func:`value_matrices`); :math:`\\lVert\\cdot\\rVert_1` is the largest absolute column sum and
    :math:`\\lVert\\cdot\\rVert_{1,\\infty}` the composite norm. The theorems' ``beta`` is any upper
    bound of these numbers: ``beta(model).max()``. Defined for any SAN (the skip-connection
    chapter uses it too); the bound itself needs a pure attention network.
    """
    Q, W = qk_matrices(model), value_matrices(model)
    return norm_1(Q) * torch.sqrt(norm_1(W) * norm_inf(W))


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
    det = gamma_details(model, X)
    extra = det["gamma"].ndim - 1
    b = det["beta"].reshape((-1,) + (1,) * extra)
    return 4 * det["gamma"] * b * model.config.n_heads / math.sqrt(model.config.d_qk)


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
    hidden = model(X).hidden_states
    return {
        "forward": torch.stack([torch.log10(composite_norm(res(h))) for h in hidden]),
        "tracked": tracked_residual(model, X, log10=True),
        "paper": collapse_bound(model, X, "paper", log10=True),
        "layerwise": collapse_bound(model, X, "layerwise", log10=True),
        "c": layer_constants(model, X).max(),
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
    in float64. Residuals are mean-centred; the bound holds for the optimal residual too.
    Book: chapter "Pure attention collapses", sections 2-3.
    """
    check_choice("form", form, BOUND_FORMS)
    det = gamma_details(model, X)
    cfg = model.config
    H, L = cfg.n_heads, cfg.n_layers
    shape = det["residual"].shape[1:]
    beta_b = det["beta"].reshape((-1,) + (1,) * len(shape))
    c = 4 * det["gamma"] * beta_b * H / math.sqrt(cfg.d_qk)  # (L, ...)
    logc = torch.log(c)
    logr = torch.log(det["residual"])
    out = [logr[0]]
    running = None
    for l in range(1, L + 1):
        if form == "step":
            out.append(logc[l - 1] + 3 * logr[l - 1])
            continue
        if form == "paper":
            running = logc[l - 1] if running is None else torch.maximum(running, logc[l - 1])
            out.append((_pow3(l, c.dtype) - 1) / 2 * running + _pow3(l, c.dtype) * logr[0])
        else:  # layerwise
            acc = _pow3(l, c.dtype) * logr[0]
            for k in range(l):
                acc = acc + _pow3(l - 1 - k, c.dtype) * logc[k]
            out.append(acc)
    logb = torch.stack(out)
    return logb / math.log(10) if log10 else torch.exp(logb)


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


# ------------------------------------------------------------------ skip connections


@torch.no_grad()
def preserving_san(family: str, config: SANConfig, *, seed: int, scale: float = 1.0, reserved: int | None = None) -> SAN:
    """A SAN with skip connections whose residual never falls below its input's, at any depth.

    ``config`` must have ``skip=True`` (and no MLP, LayerNorm or biases). The weights are drawn
    as :class:`SAN` draws them from ``seed``, then changed according to ``family``:

    - ``"zero_value"``: ``W_V = 0`` in every head. Only the length-zero path survives:
      ``X_L = X`` exactly, so ``||res(X_L)|| = ||res(X)||``; ``beta = 0``.
    - ``"uniform_attention"``: ``W_Q = 0`` (``W_QK = 0``), value maps untouched (times ``scale``).
      Every ``P_h = 11^T/n``, so each layer adds the same row ``xbar^T W`` to every token:
      the residual is exactly preserved while the tokens move; ``beta = 0``.
    - ``"reserved_subspace"``: the features split into the first ``d - reserved`` (*content*) and the last
      ``reserved`` (*reserved*, default ``d // 2``) coordinates; every value map
      ``W_h = W_V,h W_O,h`` reads only content coordinates and writes only reserved ones
      (``W_V`` rows of reserved features and ``W_O`` columns of content features set to 0), then
      value maps are multiplied by ``scale``. Queries and keys are untouched, so attention is
      non-trivial and ``beta > 0`` can be made as small as wanted with ``scale``. The content
      columns of ``X_l`` never change, so ``||res(X_L)|| >= ||res(X)||`` for every input whose
      reserved coordinates are zero (see :func:`preserving_input`).

    Book: chapter "Skip connections", section 2, where each family is proved.
    """
    check_choice("family", family, PRESERVING_FAMILIES)
    if not isinstance(config, SANConfig):
        raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
    if not config.skip:
        raise ValueError("config must have skip=True: without skip connections no family preserves the residual")
    if config.mlp or config.layernorm != "none" or config.bias:
        raise ValueError("config must have mlp=0, layernorm='none' and bias=False (the families are proved for these)")
    scale = check_positive_float("scale", scale, allow_zero=True)
    d = config.d_model
    if family == "reserved_subspace":
        reserved = d // 2 if reserved is None else check_int("reserved", reserved, minimum=1, maximum=d - 1)
        if d < 2:
            raise ValueError("the reserved_subspace family needs d_model >= 2")
    model = SAN(config, seed=seed)
    for block in dict.fromkeys(model.layers):
        if family == "zero_value":
            block.W_V.zero_()
        elif family == "uniform_attention":
            block.W_Q.zero_()
            block.W_V.mul_(scale)
        else:
            content = d - reserved
            block.W_V[:, content:, :] = 0  # reads content features only
            block.W_O[:, :, :content] = 0  # writes reserved features only
            block.W_V.mul_(scale)
    return model


def preserving_input(X, reserved: int | None = None) -> torch.Tensor:
    """``X`` with its last ``reserved`` features (default ``d // 2``) set to zero, for ``"reserved_subspace"``.

    ``X``: ``(n, d)`` or ``(..., n, d)``; returns a new float tensor of the same shape.
    """
    X = as_tokens("X", X).clone()
    d = X.shape[-1]
    reserved = d // 2 if reserved is None else check_int("reserved", reserved, minimum=1, maximum=d - 1)
    X[..., d - reserved:] = 0
    return X


# ------------------------------------------------------------------ random instances


def random_instances(count: int, *, seed: int, batch: int = 10, max_n: int = 12, max_d: int = 12,
                     max_heads: int = 3, max_layers: int = 4):
    """``count`` random pure-attention instances ``(model, X)``, as ``count // batch`` models with ``batch`` inputs each.

    Each model draws ``n, d`` in ``2..max_n``/``2..max_d``, ``1..max_heads`` heads, ``1..max_layers``
    layers and an attention weight scale (``init_scale``) log-uniform in ``[0.05, 2]``; each input
    ``X`` of shape ``(batch, n, d)`` has standard normal entries times a scale log-uniform in
    ``[0.01, 10]``. Every instance satisfies the hypotheses of Theorems 2.2/2.3 (a pure attention
    network, any finite weights). Used by the tests and by chapter "Pure attention collapses"
    (how tight the bound is).
    """
    count = check_int("count", count)
    seed = check_int("seed", seed, minimum=0)
    batch = check_int("batch", batch)
    g = torch.Generator().manual_seed(seed)
    for i in range(max(1, count // batch)):
        n = int(torch.randint(2, max_n + 1, (1,), generator=g))
        d = int(torch.randint(2, max_d + 1, (1,), generator=g))
        H = int(torch.randint(1, max_heads + 1, (1,), generator=g))
        L = int(torch.randint(1, max_layers + 1, (1,), generator=g))
        s = float(10 ** (torch.rand(1, generator=g) * 1.6 - 1.3))
        xs = 10 ** (torch.rand(batch, 1, 1, generator=g, dtype=torch.float64) * 3 - 2)
        cfg = SANConfig(n_layers=L, n_heads=H, d_model=d, init_scale=s)
        model = SAN(cfg, seed=(seed * 100_003 + i) % (2**62))
        yield model, torch.randn(batch, n, d, generator=g, dtype=torch.float64) * xs


def search_smallest_ratio(config: SANConfig, X, *, steps: int, restarts: int, seed: int, lr: float = 0.15) -> dict:
    """Search the weights of a SAN with skip connections for the smallest ``||res(X_L)|| / ||res(X)||``.

    An *exploration*, not a proof (chapter "Skip connections", section 4): no tight lower bound on
    this ratio is known. ``restarts`` networks are drawn from ``config`` (which must have
    ``skip=True``, and no MLP, LayerNorm or biases) with seeds ``seed, seed+1, ...``; each is
    trained for ``steps`` Adam steps (learning rate ``lr`` times the initial standard deviation
    of an attention weight, ``init_scale / sqrt(d_model)``) to minimise the log of the ratio on
    the fixed input ``X`` (``(n, d)``), with the *weight scale held fixed*: after every step each
    weight matrix is rescaled to the Frobenius norm it had at initialisation. Residuals are
    mean-centred, in the composite norm. Returns ``{"best": smallest ratio found, "initial":
    the ratio of each restart at initialisation (list), "final": after the search (list)}``.
    """
    if not isinstance(config, SANConfig):
        raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
    if not config.skip or config.mlp or config.layernorm != "none" or config.bias:
        raise ValueError("config must have skip=True, mlp=0, layernorm='none' and bias=False")
    steps = check_int("steps", steps, minimum=0)
    restarts = check_int("restarts", restarts)
    seed = check_int("seed", seed, minimum=0)
    lr = check_positive_float("lr", lr)
    if config.init_scale == 0:
        raise ValueError("config.init_scale must be > 0: the search holds the weight scale fixed")
    lr = lr * config.init_scale / math.sqrt(config.d_model)
    X = as_tokens("X", X, d=config.d_model, dtype=config.dtype)  # what SAN.check_input does
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {tuple(X.shape)}")
    r0 = composite_norm(res(X))
    if r0 == 0:
        raise ValueError("X has zero residual (every token the same): the ratio is undefined")

    def log_ratio(model):
        Y = model(X).last_hidden_state
        return torch.log(composite_norm(res(Y))) - torch.log(r0)

    initial, final = [], []
    with torch.enable_grad():  # works even where the caller disabled gradients
        _search(config, X, log_ratio, steps, restarts, seed, lr, initial, final)
    return {"best": min(final), "initial": initial, "final": final}


def _search(config, X, log_ratio, steps, restarts, seed, lr, initial, final):
    for k in range(restarts):
        model = SAN(config, seed=seed + k)
        params = [p for p in model.parameters()]
        norms = [p.detach().norm() for p in params]
        opt = torch.optim.Adam(params, lr=lr)
        with torch.no_grad():
            best = log_ratio(model).item()
        initial.append(math.exp(best))
        for _ in range(steps):
            opt.zero_grad()
            loss = log_ratio(model)  # the ratio of the current (projected) weights
            best = min(best, loss.item())
            loss.backward()
            opt.step()
            with torch.no_grad():
                for p, nrm in zip(params, norms):
                    pn = p.norm()
                    if pn > 0:
                        p.mul_(nrm / pn)
        with torch.no_grad():
            best = min(best, log_ratio(model).item())
        final.append(math.exp(best))
