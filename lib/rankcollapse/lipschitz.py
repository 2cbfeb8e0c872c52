"""The MLP's Lipschitz constant, and the price of a large one: sensitivity and gradient variance.

With an MLP ``f`` after each attention layer, the paper's collapse bound gains the MLP's
Lipschitz constant :math:`\\lambda`: the factor becomes :math:`4\\gamma\\beta
H\\lambda/\\sqrt{d_{qk}}` (Dong et al. 2021, Section 3, "SAN with MLP"). The norm is the paper's
composite norm
:math:`\\lVert X\\rVert_{1,\\infty} = \\sqrt{\\lVert X\\rVert_1\\lVert X\\rVert_\\infty}` on the
``n x d`` token matrix, and ``f`` acts on every token (row) separately:

.. math::  \\lVert f(X) - f(Y)\\rVert_{1,\\infty} \\le \\lambda\\, \\lVert X - Y\\rVert_{1,\\infty}
           \\quad\\text{for all } n \\times d \\text{ matrices } X, Y .

This module brackets :math:`\\lambda` from both sides:

- :func:`lipschitz_upper_bound`, from the weights: :math:`\\lambda \\le \\lVert
  B\\rVert_{1,\\infty}` with ``B`` the entrywise envelope of every Jacobian :math:`W_1 D W_2` the
  MLP can have (:func:`jacobian_envelope`; at most :math:`c\\,|W_1|\\,|W_2|` with ``c`` the largest
  slope of the activation); valid for every ``n``.
- :func:`lipschitz_lower_bound`, from data: the largest ratio
  :math:`\\lVert f(X + \\Delta) - f(X)\\rVert_{1,\\infty} / \\lVert\\Delta\\rVert_{1,\\infty}`
  measured on actual pairs, at ``X`` built from the tokens the MLP sees, with :math:`\\Delta` first
  built from the local Jacobian and then improved by gradient ascent. Every pair evaluated is a
  witness, so the result is a true lower bound on :math:`\\lambda` for matrices with that ``n``.

and measures what a larger :math:`\\lambda` costs: :func:`perturbation_gain` (output change over
input change along random directions) and :func:`gradient_variance` (the spread of per-example
gradients, hence of mini-batch gradients), both in :mod:`rankcollapse.mlp_price` and re-exported
here.

Book: chapter "The MLP trade-off".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from ._validate import (
    MAX_LOOP,
    as_tokens,
    check_choice,
    check_cost,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from .mlp_price import (  # noqa: F401  (re-exported)
    GradientNoise,
    gradient_variance,
    memorization_task,
    per_example_gradients,
    perturbation_gain,
)
from .residual import composite_norm
from .san import ACTIVATIONS, SAN, activation, check_san

__all__ = [
    "NORM",
    "activation_slope",
    "jacobian_envelope",
    "mlp_inputs",
    "mlp_map",
    "lipschitz_upper_bound",
    "lipschitz_lower_bound",
    "LipschitzEstimate",
    "mlp_lipschitz",
    "perturbation_gain",
    "memorization_task",
    "per_example_gradients",
    "GradientNoise",
    "gradient_variance",
]

NORM = "l1inf"  # the norm every Lipschitz constant here is taken in: the composite (1, inf) norm


def activation_slope(activation: str) -> tuple[float, float]:
    """The range ``(lo, hi)`` of the activation's slope :math:`\\phi'`: ``(0, 1)`` for ReLU, about
    ``(-0.1289, 1.1289)`` for GELU (its derivative :math:`\\Phi(t) + t\\varphi(t)` peaks at
    :math:`t = \\sqrt 2` and dips at :math:`t = -\\sqrt 2`), and about ``(-0.1290, 1.1290)`` for its
    tanh approximation (``"gelu_tanh"``, found numerically: :func:`_tanh_gelu_slopes`)."""
    check_choice("activation", activation, ACTIVATIONS)
    if activation == "relu":
        return 0.0, 1.0
    if activation == "gelu_tanh":
        return _tanh_gelu_slopes()
    t = math.sqrt(2.0)
    cdf = 0.5 * (1 + math.erf(t / math.sqrt(2)))
    tpdf = t * math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    return (1 - cdf) - tpdf, cdf + tpdf


@functools.lru_cache(maxsize=1)
def _tanh_gelu_slopes() -> tuple[float, float]:
    """Extremes of the tanh-GELU's slope on a grid of step ``1e-4`` over ``[-5, 5]`` (they lie near
    ``+-1.5``), widened by ``1e-8``: at an extreme the slope's own derivative vanishes and its
    second is below 3 in size, so the grid misses at most ``3/2 (5e-5)^2 < 4e-9``."""
    x = torch.linspace(-5, 5, 100001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(activation(ACTIVATIONS[2])(x).sum(), x)
    return float(g.min()) - 1e-8, float(g.max()) + 1e-8


def jacobian_envelope(
    W_1: torch.Tensor, W_2: torch.Tensor, slopes: tuple[float, float]
) -> torch.Tensor:
    """Entrywise bound ``B`` with :math:`|W_1 D W_2| \\le B` for every diagonal ``D`` with entries
    in ``slopes``.

    :math:`B_{kj} = \\max_{D}\\,|\\sum_m W_{1,km} D_m W_{2,mj}|`, attained with each ``D_m`` at an
    end of its interval: the larger of the sum of the terms' largest values and minus the sum of
    their smallest. Shapes: ``W_1`` ``(d, m)``, ``W_2`` ``(m, d')``; returns ``(d, d')``.
    """
    if W_1.ndim != 2 or W_2.ndim != 2 or W_1.shape[1] != W_2.shape[0]:
        raise ValueError(
            f"W_1 (d_in, m) and W_2 (m, d_out) must share m, got W_1 {tuple(W_1.shape)} and W_2 "
            f"{tuple(W_2.shape)}"
        )
    lo, hi = min(slopes), max(slopes)
    # A term W1_km W2_mj is positive when its two factors share a sign: split each matrix into
    # its positive and negative parts and the sums over m of the positive terms (P) and of the
    # negative ones (N) are four matrix products. The largest value of a term is hi times it
    # when it is positive, lo times it when negative; the smallest the other way round. (The
    # (d, m, d') tensor of every term, 1.8 GB at MiniLM's width in float64, is never made.)
    W1p, W1n, W2p, W2n = W_1.clamp(min=0), W_1.clamp(max=0), W_2.clamp(min=0), W_2.clamp(max=0)
    P = W1p @ W2p + W1n @ W2n
    N = W1p @ W2n + W1n @ W2p
    top = hi * P + lo * N
    bottom = lo * P + hi * N
    return torch.maximum(top, -bottom)


def _check_mlp_model(model) -> None:
    check_san(model)
    if not model.config.mlp:
        raise ValueError(
            "model has no MLP (config.mlp == 0): build it with SANConfig(mlp=hidden width)"
        )


def mlp_map(model: SAN, layer: int):
    """The row-wise MLP of ``layer`` as a function ``(..., n, d) -> (..., n, d)`` (no skip, no
    LayerNorm)."""
    _check_mlp_model(model)
    layer = check_int("layer", layer, minimum=0, maximum=len(model.layers) - 1)
    return model.layers[layer].mlp


@torch.no_grad()
def mlp_inputs(model: SAN, X, *, key_mask=None) -> list[torch.Tensor]:
    """The matrices the MLP of each layer receives in the forward pass on ``X``: ``L`` tensors
    ``(..., n, d)``.

    For the paper's model (no skip, no LayerNorm) this is the attention output ``SA(X_{l-1})``;
    with skips or LayerNorm it is what :meth:`rankcollapse.san.Block.mlp_input` makes of the
    attention sub-layer's output (:meth:`~rankcollapse.san.Block.attention_sublayer`), the same
    calls the forward pass makes. ``key_mask`` ``(..., n)``: as
    :meth:`rankcollapse.san.SAN.forward`.
    """
    _check_mlp_model(model)
    X = model.check_input(X)
    key_mask = model.check_key_mask(key_mask, X)
    out = []
    for block in model.layers:
        Y = block.attention_sublayer(X, key_mask)[0]
        out.append(block.mlp_input(Y))
        X = block.mlp_sublayer(Y)
    return out


@torch.no_grad()
def lipschitz_upper_bound(model: SAN) -> torch.Tensor:
    """Upper bound on each layer's MLP Lipschitz constant in the composite norm, shape ``(L,)``.

    :math:`\\lambda_l \\le \\lVert B \\rVert_{1,\\infty}` with ``B`` the
    :func:`jacobian_envelope` of the layer's weights (never larger than
    :math:`c\\,|W_1|\\,|W_2|`, ``c`` the largest slope). Proof (chapter "The MLP trade-off",
    proposition on the weight bound): token ``i`` of :math:`f(X) - f(Y)` is :math:`(x_i - y_i) A_i`
    with
    :math:`A_i = \\int_0^1 W_1 D_i(t) W_2\\,dt`, the slopes on ``D_i(t)``'s diagonal inside the
    activation's slope range, so :math:`|A_i| \\le B` entrywise. Then the largest row sum of the
    difference is at most :math:`\\lVert B\\rVert_\\infty \\lVert X - Y\\rVert_\\infty` and the
    largest column sum at most :math:`\\lVert B\\rVert_1 \\lVert X - Y\\rVert_1`. Biases do not
    enter. Valid for every ``n``.
    """
    _check_mlp_model(model)
    slopes = activation_slope(model.config.activation)
    return torch.stack(
        [composite_norm(jacobian_envelope(b.W_1, b.W_2, slopes)) for b in model.layers]
    )


def _row_jacobians(f, T: torch.Tensor) -> torch.Tensor:
    """``M[k] = d f(t_k) / d t_k`` in the row convention (``delta f = delta t @ M``): shape ``(K, d,
    d)``."""
    J = torch.func.vmap(torch.func.jacrev(lambda t: f(t.unsqueeze(0))[0]))(
        T
    )  # J[k, j, i] = df_j/dt_i
    return J.transpose(-1, -2)


def _structured_directions(M: torch.Tensor, n: int, ts) -> list[torch.Tensor]:
    """Perturbations ``(n, d)`` that nearly attain ``||M||_{1,inf}`` for the linear row map ``x -> x
    M``.

    One token moves along the row of ``M`` with the largest absolute sum (this makes the largest
    row sum of the output large); the other ``n - 1`` move by ``t`` along the sign pattern of
    the column with the largest absolute sum (this makes the largest column sum large).
    """
    d = M.shape[0]
    k = int(M.abs().sum(dim=1).argmax())
    j = int(M.abs().sum(dim=0).argmax())
    u = torch.sign(M[:, j])
    u = torch.where(u == 0, torch.ones_like(u), u)
    e = torch.zeros(d, dtype=M.dtype)
    e[k] = 1.0
    out = [e.expand(n, d).clone(), u.expand(n, d).clone()]
    if n > 1:
        for t in ts:
            D = (t * u).expand(n, d).clone()
            D[0] = e
            out.append(D)
    return out


def _ratio(f, X, D, eps):
    """``||f(X + eps D) - f(X)|| / ||eps D||`` in the composite norm (an exact difference
    quotient)."""
    step = eps * D
    return composite_norm(f(X + step) - f(X)) / composite_norm(step)


def lipschitz_lower_bound(
    f, Z, *, steps: int = 50, points: int = 4, eps: float = 1e-5, seed: int = 0
) -> float:
    """Lower bound on the composite-norm Lipschitz constant of a row-wise map ``f``, from data
    ``Z``.

    ``Z``: tokens the map sees, ``(n, d)`` or ``(..., n, d)``; ``n`` is the number of tokens of the
    matrices compared. Returns the largest measured ratio
    :math:`\\lVert f(X + \\varepsilon\\Delta) - f(X)\\rVert_{1,\\infty} /
    \\lVert\\varepsilon\\Delta\\rVert_{1,\\infty}`:

    1. the ``points`` tokens ``x`` of ``Z`` with the largest local gain
       :math:`\\lVert M(x)\\rVert_{1,\\infty}` (``M`` the token Jacobian) are taken as base points,
       ``X = 1 x^T``;
    2. at each, structured perturbations that nearly attain :math:`\\lVert M(x)\\rVert_{1,\\infty}`
       for large ``n`` are tried;
    3. the best is improved by ``steps`` steps of gradient ascent (Adam) on the ratio, over the
       perturbation and the base point together (at most ``rankcollapse._validate.MAX_LOOP`` =
       10**5).

    Each ratio is an exact difference quotient of an actual pair of matrices, so the result never
    exceeds the true constant (for this ``n``), whatever the optimiser does. ``eps`` is the step
    relative to the base point's largest entry.
    """
    if not callable(f):
        raise TypeError(f"f must be a callable row-wise map, got {type(f).__name__}")
    Z = as_tokens("Z", Z)
    steps = check_int(
        "steps", steps, minimum=0, maximum=MAX_LOOP
    )  # each a Python-level Adam step through f
    points = check_int("points", points)
    eps = check_positive_float("eps", eps)
    seed = check_seed("seed", seed)
    n, d = Z.shape[-2:]
    T = Z.reshape(-1, d).detach()
    with torch.no_grad():
        M = _row_jacobians(f, T)
        local = composite_norm(M)
        best_idx = torch.argsort(local, descending=True)[:points]
        ts = [1.0 / d * r for r in (0.25, 0.5, 1.0, 2.0, 4.0)] + [1.0]
        best, best_X, best_D = -1.0, None, None
        for i in best_idx.tolist():
            X = T[i].expand(n, d).clone()
            scale = float(T[i].abs().max()) or 1.0
            for D in _structured_directions(M[i], n, ts):
                r = float(_ratio(f, X, D, eps * scale / float(D.abs().max())))
                if r > best:
                    best, best_X, best_D = r, X, D / D.abs().max()
    if steps == 0 or best_X is None:
        return best
    gen = torch.Generator().manual_seed(seed)
    X = (
        best_X
        + 1e-3 * torch.randn(best_X.shape, generator=gen, dtype=best_X.dtype) * best_X.abs().max()
    ).requires_grad_(True)
    D = best_D.clone().requires_grad_(True)
    scale = float(best_X.abs().max()) or 1.0
    opt = torch.optim.Adam([X, D], lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        Dn = D / D.abs().max()
        r = _ratio(f, X, Dn, eps * scale)
        if r.item() > best:
            best = r.item()
        (-r).backward()
        opt.step()
    with torch.no_grad():
        best = max(best, float(_ratio(f, X, D / D.abs().max(), eps * scale)))
    return best


@dataclass
class LipschitzEstimate:
    """Bracket ``lower <= lambda <= upper`` of each layer's MLP Lipschitz constant, shapes ``(L,)``.

    norm: the norm both bounds are taken in (``"l1inf"``, the composite norm); n: the number of
    tokens of the matrices the lower bound compared (the upper bound holds for every ``n``).
    """

    lower: torch.Tensor
    upper: torch.Tensor
    norm: str
    n: int

    @property
    def ratio(self) -> torch.Tensor:
        """``upper / lower``: how loose the bracket is (1 would be tight)."""
        return self.upper / self.lower


def mlp_lipschitz(
    model: SAN, X, *, steps: int = 50, points: int = 4, seed: int = 0
) -> LipschitzEstimate:
    """Both bounds on every layer's MLP Lipschitz constant, the lower one from the MLP's inputs on
    ``X``.

    ``X``: ``(n, d)`` or ``(..., n, d)`` inputs of the network; the lower bound of layer ``l``
    searches at the tokens the MLP of layer ``l`` receives (see :func:`lipschitz_lower_bound`).
    """
    check_seed("seed", seed)
    _check_mlp_model(model)
    X = model.check_input(X)
    steps = check_int("steps", steps, minimum=0)
    check_cost(
        "steps",
        steps * model.config.n_layers,
        MAX_LOOP,
        unit="Adam steps (steps x n_layers)",
        alternative="take fewer steps (or measure fewer layers)",
    )
    upper = lipschitz_upper_bound(model)
    inputs = mlp_inputs(model, X)
    lower = []
    for l, Z in enumerate(inputs):
        block = model.layers[l]
        lower.append(
            lipschitz_lower_bound(
                block.mlp, Z, steps=steps, points=points, seed=derive_seed(seed, l)
            )
        )
    return LipschitzEstimate(torch.tensor(lower, dtype=upper.dtype), upper, NORM, X.shape[-2])
