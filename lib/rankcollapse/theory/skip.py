"""Skip connections: families of networks that never lose residual, and a search for the worst case.

Book: chapter "Skip connections" (section 2 proves each family; section 4 is the search).
"""

from __future__ import annotations

import math

import torch

from .._validate import as_tokens, check_choice, check_int, check_positive_float
from ..residual import composite_norm, res
from ..san import SAN, SANConfig

__all__ = ["PRESERVING_FAMILIES", "preserving_san", "preserving_input", "search_smallest_ratio"]

PRESERVING_FAMILIES = ("zero_value", "uniform_attention", "reserved_subspace")


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
