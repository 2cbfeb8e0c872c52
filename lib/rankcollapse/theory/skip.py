"""Skip connections: families of networks that never lose residual, an upper bound on the residual
(which can only grow with depth), and a search for the worst case.

Book: chapter "Skip connections" (section 2 proves each family; section 4 proves the upper bound,
says why it is vacuous, and is the search).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .._validate import (
    MAX_LOOP,
    as_tokens,
    check_bool,
    check_choice,
    check_cost,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from ..residual import check_center, composite_norm, norm_1, norm_inf, res
from ..san import SAN, SANConfig, check_san
from .bound import DEFAULT_CENTER, log_kappa
from .weights import qk_matrices, value_matrices

__all__ = [
    "PRESERVING_FAMILIES",
    "preserving_san",
    "preserving_input",
    "search_smallest_ratio",
    "MAX_STEPS",
    "MAX_RESTARTS",
    "skip_bound",
]

PRESERVING_FAMILIES = ("zero_value", "uniform_attention", "reserved_subspace")
from .._validate import SEED_LIMIT  # noqa: E402,F401  (the library's seed range, 0 <= seed < 2**32)

MAX_STEPS = 10**5  # Adam steps per restart in search_smallest_ratio
MAX_RESTARTS = 10**3


@torch.no_grad()
def preserving_san(
    family: str, config: SANConfig, *, seed: int, scale: float = 1.0, reserved: int | None = None
) -> SAN:
    """A SAN with skip connections whose residual never falls below its input's, at any depth.

    ``config`` must have ``skip=True`` (and no MLP, LayerNorm or biases). The weights are drawn
    as :class:`SAN` draws them from ``seed``, then changed according to ``family``:

    - ``"zero_value"``: ``W_V = 0`` in every head. Only the length-zero path survives:
      ``X_L = X`` exactly, so ``||res(X_L)|| = ||res(X)||``; ``beta = 0``.
    - ``"uniform_attention"``: ``W_Q = 0`` (``W_QK = 0``), value maps untouched (times ``scale``).
      Every ``P_h = 11^T/n``, so each layer adds the same row ``xbar^T W`` to every token:
      the residual is exactly preserved while the tokens move; ``beta = 0``.
    - ``"reserved_subspace"``: the features split into the first ``d - reserved`` (*content*) and
      the last ``reserved`` (*reserved*, default ``d // 2``) coordinates; every value map
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
    if not config.skip or config.skip_strength != 1:
        raise ValueError(
            "config must have skip=True (and skip_strength=1): without the usual skip connection "
            "no family preserves the residual"
        )
    if config.mlp or config.layernorm != "none" or config.bias:
        raise ValueError(
            "config must have mlp=0, layernorm='none' and bias=False (the families are proved for "
            "these)"
        )
    scale = check_positive_float("scale", scale, allow_zero=True)
    seed = check_seed("seed", seed)
    d = config.d_model
    if family == "reserved_subspace":
        reserved = (
            d // 2
            if reserved is None
            else check_int("reserved", reserved, minimum=1, maximum=d - 1)
        )
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
    """``X`` with its last ``reserved`` features (default ``d // 2``) set to zero, for
    ``"reserved_subspace"``.

    ``X``: ``(n, d)`` or ``(..., n, d)``; returns a new float tensor of the same shape.
    """
    X = as_tokens("X", X).clone()
    d = X.shape[-1]
    reserved = (
        d // 2 if reserved is None else check_int("reserved", reserved, minimum=1, maximum=d - 1)
    )
    X[..., d - reserved :] = 0
    return X


def search_smallest_ratio(
    config: SANConfig, X, *, steps: int, restarts: int, seed: int, lr: float = 0.15
) -> dict:
    """Search the weights of a SAN with skip connections for the smallest ``||res(X_L)|| /
    ||res(X)||``.

    An *exploration*, not a proof (chapter "Skip connections", section 4): no tight lower bound on
    this ratio is known. ``restarts`` networks are drawn from ``config`` (which must have
    ``skip=True``, and no MLP, LayerNorm or biases) with seeds ``seed, seed+1, ...``; each is
    trained for ``steps`` Adam steps (learning rate ``lr`` times the initial standard deviation
    of an attention weight, ``init_scale / sqrt(d_model)``) to minimise the log of the ratio on
    the fixed input ``X`` (``(n, d)``), with the *weight scale held fixed*: after every step each
    weight matrix is rescaled to the Frobenius norm it had at initialisation. Residuals are
    mean-centred, in the composite norm. At most ``10**5`` steps and ``10**3`` restarts
    (:data:`MAX_STEPS`, :data:`MAX_RESTARTS`); seeds in ``0 .. 2**32 - 1``. Returns ``{"best":
    smallest ratio found, "initial": the ratio of each restart at initialisation (list), "final":
    after the search (list)}``.
    """
    if not isinstance(config, SANConfig):
        raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
    if config.skip_strength != 1:
        raise ValueError(
            f"config has skip_strength={config.skip_strength}: the search is over networks with "
            "the usual skip X + SA(X) (skip_strength=1)"
        )
    if not config.skip or config.mlp or config.layernorm != "none" or config.bias:
        raise ValueError("config must have skip=True, mlp=0, layernorm='none' and bias=False")
    steps = check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    restarts = check_int("restarts", restarts, maximum=MAX_RESTARTS)
    seed = check_seed("seed", seed)  # seeds derive_seed(seed, k), k < restarts
    lr = check_positive_float("lr", lr)
    if config.n_layers == 0:
        raise ValueError(
            "config.n_layers must be >= 1: a network of depth 0 has no weights to search"
        )
    check_cost(
        "steps",
        steps * restarts * config.n_layers,
        MAX_LOOP,
        unit="layer-steps (steps * restarts * n_layers)",
        alternative="use fewer steps, restarts or layers (the book's full run: 960)",
    )
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
        model = SAN(config, seed=derive_seed(seed, k))
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


# ------------------------------------------------------------------ the upper bound with skips


def _check_attention_with_skips(model) -> SAN:
    cfg = check_san(model).config
    if cfg.skip_strength != 1:
        raise ValueError(
            f"model has skip_strength={cfg.skip_strength}: the bound is for the usual skip "
            "X + SA(X) (skip_strength=1)"
        )
    if not cfg.skip or cfg.mlp or cfg.layernorm != "none" or cfg.bias:
        raise ValueError(
            "model must be a self-attention network with skip connections and nothing else "
            f"(skip=True, mlp=0, layernorm='none', bias=False); got skip={cfg.skip}, "
            f"mlp={cfg.mlp}, layernorm={cfg.layernorm!r}, bias={cfg.bias}"
        )
    return model


@torch.no_grad()
def skip_bound(model, X, log10: bool = False, center: str = DEFAULT_CENTER) -> torch.Tensor:
    r"""The book's upper bound on :math:`\lVert\operatorname{res}(X_l)\rVert_{1,\infty}` with skip
    connections, ``l = 0..L``.

    Chapter "Skip connections", section 4, Proposition "A one-layer bound with skips (this book)":
    for a layer :math:`X_l = X_{l-1} + \sum_h P_h X_{l-1} W_h` whose input has residual ``r`` in
    ``center`` (``"mean"``, the default, or a centre function such as
    ``rc.centering.optimal_center``), with ``eps`` and
    :math:`q_h = \lVert W_{QK,h}\rVert_1` as in :func:`rankcollapse.theory.gamma_details`,
    :math:`\kappa_1 = \frac{\sinh 2\varepsilon}{2\varepsilon}e^{2\varepsilon}` and
    :math:`\kappa_\infty = \frac{\sinh 2\varepsilon}{2\varepsilon}`,

    .. math::
        \lVert\operatorname{res}(X_l)\rVert \le r\sqrt{(1 + a_1 r^2)(1 + a_\infty r^2)},\quad
        a_1 = \tfrac{4\kappa_1}{\sqrt{d_{qk}}}\sum_h q_h\lVert P_h\rVert_1\lVert W_h\rVert_1,\quad
        a_\infty = \tfrac{4\kappa_\infty}{\sqrt{d_{qk}}}\sum_h q_h\lVert W_h\rVert_\infty,

    applied layer after layer to the bound itself: ``b_0 = r_0``, ``b_l = b_{l-1} sqrt((1 + a_1
    b_{l-1}^2)(1 + a_inf b_{l-1}^2))``. Every factor is at least one, so the bound never falls with
    depth: it cannot show collapse, which is why an upper bound with skips is vacuous. ``eps`` and
    the column sums :math:`\lVert P_h\rVert_1` come from the forward pass on ``X``. Computed in
    log space (:math:`\log(1 + a b^2)` as the softplus of :math:`\log a + 2\log b`):
    ``log10=True`` returns :math:`\log_{10}` of the bound, finite where the bound overflows
    float64. An input residual of exactly 0 gives exactly 0 at every layer (tokens that are all the
    same stay the same), ``-inf`` in log; a network of depth 0 gives the input's residual. Shape
    ``(L+1,)`` for ``X`` ``(n, d)`` (``(L+1, ...)`` batched). The model must have ``skip=True`` and
    no MLP, LayerNorm or biases.
    """
    _check_attention_with_skips(model)
    center = check_center(center)
    log10 = check_bool("log10", log10)
    X = model.check_input(X)
    out = model(X)
    cfg = model.config
    Q, W = qk_matrices(model), value_matrices(model)
    if cfg.n_layers:
        q, w1, winf = norm_1(Q), norm_1(W), norm_inf(W)  # (L, H)
    scale = math.sqrt(cfg.d_qk)
    logb = torch.log(composite_norm(res(X, center=center)))
    bounds = [logb]
    for l, (Xl, P) in enumerate(zip(out.hidden_states[:-1], out.attentions)):
        R = res(Xl, center=center)
        E = torch.einsum("...nd,hde,...me->...hnm", R, Q[l], R) / scale
        eps = E.abs().amax(dim=(-1, -2, -3))
        log_sinhc = log_kappa(eps) - eps  # log(sinh(2 eps) / (2 eps)), finite where sinh overflows
        col = P.sum(dim=-2).amax(dim=-1)  # (..., H): ||P_h||_1
        log_a1 = torch.log(4 / scale * (q[l] * w1[l] * col).sum(dim=-1)) + log_sinhc + 2 * eps
        log_ainf = math.log(4 / scale) + torch.log((q[l] * winf[l]).sum()) + log_sinhc
        grow = 0.5 * (F.softplus(log_a1 + 2 * logb) + F.softplus(log_ainf + 2 * logb))
        logb = torch.where(torch.isneginf(logb), logb, logb + grow)
        bounds.append(logb)
    logb = torch.stack(bounds)
    return logb / math.log(10) if log10 else torch.exp(logb)
