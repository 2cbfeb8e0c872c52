"""LayerNorm and rank: the paper's rewriting, where it is exact, and what rank does not measure.

LayerNorm acts on each token (row) ``y_i`` of ``Y`` (``n x d``):
``LN(Y)_i = (y_i - mean(y_i) 1)^T / sigma_i * gain + shift`` with ``sigma_i`` the token's own
standard deviation (plus ``eps``). As matrices (chapter "LayerNorm's rank argument"):

.. math::  \\LN(Y) = S^{-1}\\, Y\\, C\\, G + \\mathbf 1\\, \\mathrm{shift}^\\top,
           \\qquad C = I - \\tfrac1d \\mathbf 1\\mathbf 1^\\top,\\; G =
           \\operatorname{diag}(\\mathrm{gain}), \\; S = \\operatorname{diag}(\\sigma_1, \\dots,
           \\sigma_n):

the centring ``C`` and the gain ``G`` multiply on the right, the per-token scale ``S^{-1}`` on
the left. The paper, as the reading note gives it, writes ``LN(SA(X)) = sum_h P_h X W_h D^{-1} + 1
b~^T``, a right multiplication only; that is exact when every token has the same ``sigma`` and
otherwise an approximation, whose size :func:`rewriting_discrepancy` measures.

Reuses :func:`rankcollapse.ops.layer_norm_sigma` (the forward map) and
:class:`rankcollapse.paths.FrozenLayer` (the layer with frozen attention and frozen scales).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ._validate import (
    as_tokens,
    check_choice,
    check_dtype,
    check_finite_float,
    check_int,
    check_positive_float,
    check_seed,
)
from .ops import layer_norm_sigma
from .paths import FrozenLayer
from .residual import composite_norm, matrix_norm, relative_residual, res, rescaled
from .san import SAN, check_san

__all__ = [
    "numerical_rank",
    "rank_one_deviation",
    "layer_norm",
    "LNFactors",
    "ln_factors",
    "ln_from_factors",
    "common_scale",
    "paper_rewriting",
    "exact_rewriting",
    "rewriting_discrepancy",
    "scale_spread",
    "near_uniform_along_ones",
    "balanced_tokens",
    "residual_profile",
]


def numerical_rank(Y, rtol: float | None = None) -> torch.Tensor:
    """Number of singular values of ``Y`` above ``rtol`` times the largest, shape ``(...)``.

    ``Y``: ``(n, d)`` or ``(..., n, d)``. Default ``rtol = max(n, d) * machine epsilon`` of ``Y``'s
    dtype (numpy's ``matrix_rank`` convention). A zero matrix has rank 0.
    """
    Y = as_tokens("Y", Y)
    if rtol is None:
        rtol = max(Y.shape[-2:]) * torch.finfo(Y.dtype).eps
    rtol = check_positive_float("rtol", rtol)
    s = torch.linalg.svdvals(Y)
    top = s[..., :1]
    return ((s > rtol * top) & (top > 0)).sum(dim=-1)


def rank_one_deviation(Y) -> torch.Tensor:
    """``sigma_2 / sigma_1``, the second singular value of ``Y`` over the first, shape ``(...)``.

    ``Y``: ``(n, d)`` or ``(..., n, d)`` with ``min(n, d) >= 2``. Zero exactly when ``Y`` has rank
    at most one, so for rank-one tokens ``s v^T`` carried through a network it is the relative
    size of everything else the layers have added (noise, rounding errors); a zero matrix gives 0.
    Chapter "LayerNorm's rank argument", section "Rank is not distance to uniformity".
    """
    Y = as_tokens("Y", Y)
    if min(Y.shape[-2:]) < 2:
        raise ValueError(f"Y must have at least 2 rows and 2 columns, got shape {tuple(Y.shape)}")
    s = torch.linalg.svdvals(Y)
    top = s[..., 0]
    return torch.where(
        top > 0, s[..., 1] / top.clamp_min(torch.finfo(Y.dtype).tiny), torch.zeros_like(top)
    )


def _vector(name, v, d, dtype):
    if isinstance(v, (list, tuple)):
        v = torch.tensor(v, dtype=dtype)
    elif isinstance(v, np.ndarray):
        v = torch.from_numpy(v)
    if not isinstance(v, torch.Tensor) or not (
        v.is_floating_point() or v.dtype in (torch.int32, torch.int64)
    ):
        raise TypeError(f"{name} must be a real tensor of shape ({d},), got {type(v).__name__}")
    if v.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {tuple(v.shape)}")
    if not torch.isfinite(v).all():
        raise ValueError(f"{name} contains NaN or infinite entries")
    return v.to(dtype)


def _gain_shift(Y, gain, shift):
    d = Y.shape[-1]
    gain = torch.ones(d, dtype=Y.dtype) if gain is None else _vector("gain", gain, d, Y.dtype)
    shift = torch.zeros(d, dtype=Y.dtype) if shift is None else _vector("shift", shift, d, Y.dtype)
    return gain, shift


def layer_norm(Y, gain=None, shift=None) -> torch.Tensor:
    """LayerNorm over features, ``(..., n, d) -> (..., n, d)``
    (:func:`rankcollapse.ops.layer_norm_sigma`).

    ``gain`` defaults to ones and ``shift`` to zeros (LayerNorm at initialisation).
    """
    Y = as_tokens("Y", Y)
    gain, shift = _gain_shift(Y, gain, shift)
    return layer_norm_sigma(Y, gain, shift)[0]


@dataclass
class LNFactors:
    """The factors of ``LN(Y) = S^{-1} Y C G + 1 shift^T``.

    inv_sigma: ``(..., n)``, the diagonal of the left factor ``S^{-1}``; C: ``(d, d)`` centring;
    G: ``(d, d)`` diagonal gain; shift: ``(d,)``.
    """

    inv_sigma: torch.Tensor
    C: torch.Tensor
    G: torch.Tensor
    shift: torch.Tensor


def ln_factors(Y, gain=None, shift=None) -> LNFactors:
    """The left factor (per-token ``1/sigma_i``) and right factors (``C``, ``G``) of ``LN(Y)``."""
    Y = as_tokens("Y", Y)
    gain, shift = _gain_shift(Y, gain, shift)
    d = Y.shape[-1]
    _, sigma = layer_norm_sigma(Y, gain, shift)
    C = torch.eye(d, dtype=Y.dtype) - torch.full((d, d), 1.0 / d, dtype=Y.dtype)
    return LNFactors(1.0 / sigma, C, torch.diag(gain), shift)


def ln_from_factors(Y, factors: LNFactors) -> torch.Tensor:
    """``S^{-1} Y C G + 1 shift^T`` as explicit matrix products (equals ``LN(Y)`` to rounding)."""
    Y = as_tokens("Y", Y)
    if not isinstance(factors, LNFactors):
        raise TypeError(
            f"factors must be an LNFactors (from ln_factors), got {type(factors).__name__}"
        )
    S_inv = torch.diag_embed(factors.inv_sigma)
    return S_inv @ Y @ factors.C @ factors.G + factors.shift


def common_scale(Z, inv_sigma, how: str = "best") -> torch.Tensor:
    """One scale ``c`` (shape ``(...)``) to stand in for every token's ``1/sigma_i`` in ``S^{-1}
    Z``.

    ``how="best"``: the least-squares choice :math:`c = \\sum_i \\lVert z_i\\rVert^2/\\sigma_i
    \\,/\\, \\sum_i \\lVert z_i\\rVert^2`, which minimises :math:`\\lVert S^{-1}Z - cZ\\rVert_F`
    (the choice most favourable to the paper's rewriting); ``how="mean"``: the mean of
    ``1/sigma_i``.
    """
    check_choice("how", how, ("best", "mean"))
    Z = as_tokens("Z", Z)
    inv_sigma = _scales("inv_sigma", inv_sigma, Z.shape[:-1], Z.dtype)
    if how == "mean":
        return inv_sigma.mean(dim=-1)
    w = (Z**2).sum(dim=-1)
    return (w * inv_sigma).sum(dim=-1) / w.sum(dim=-1).clamp_min(torch.finfo(Z.dtype).tiny)


def _post_ln_layer(model, layer):
    check_san(model)
    cfg = model.config
    if cfg.layernorm != "post" or cfg.skip or cfg.mlp:
        raise ValueError(
            "the rewriting of LN(SA(X)) needs a post-LN model without skip connections or MLP "
            f"(SANConfig(layernorm='post', skip=False, mlp=0)); got layernorm={cfg.layernorm!r}, "
            f"skip={cfg.skip}, mlp={cfg.mlp}"
        )
    if not len(model.layers):
        raise ValueError("model has no layers (n_layers=0): there is no layer to rewrite")
    return model.layers[check_int("layer", layer, minimum=0, maximum=len(model.layers) - 1)]


@torch.no_grad()
def _layer_pieces(model, X, layer):
    """One forward pass: the layer's block, its input, attention, LayerNorm scales and output."""
    block = _post_ln_layer(model, layer)
    X = model.check_input(X)
    out = model(X)
    X_in = out.hidden_states[layer]
    return block, X_in, out.attentions[layer], out.ln_scales[layer], out.hidden_states[layer + 1]


def _exact(block, X_in, P, sigma):
    return FrozenLayer(block, P, sigma)(X_in)


def _paper(block, X_in, P, sigma, how):
    Z, _ = block.attention(X_in)  # SA(X_l), LayerNorm's input
    c = common_scale((Z - Z.mean(dim=-1, keepdim=True)) * block.ln1_gain, 1.0 / sigma, how)
    return FrozenLayer(block, P, (1.0 / c).unsqueeze(-1).expand_as(sigma))(X_in)


@torch.no_grad()
def exact_rewriting(model: SAN, X, layer: int = 0) -> torch.Tensor:
    """``LN(SA(X_l))`` rebuilt as :math:`\\sum_h (S^{-1}P_h) X_l W_h C G + \\text{const}`, exactly.

    The left factor of each head is ``S^{-1} P_h`` (no longer row-stochastic), the right factor
    ``W_h C G``; built with :class:`rankcollapse.paths.FrozenLayer` at the forward-pass
    attention and scales. ``X_l`` is the input of ``layer`` in the forward pass on ``X``. Matches
    the layer's output to rounding error.
    """
    block, X_in, P, sigma, _ = _layer_pieces(model, X, layer)
    return _exact(block, X_in, P, sigma)


@torch.no_grad()
def paper_rewriting(model: SAN, X, layer: int = 0, how: str = "best") -> torch.Tensor:
    """The paper's form :math:`\\sum_h P_h X_l \\tilde W_h + \\mathbf 1\\tilde b^\\top`,
    :math:`\\tilde W_h = W_h C G c`.

    Every token's ``1/sigma_i`` is replaced by one common scale ``c`` (:func:`common_scale`), so
    that LayerNorm becomes a right multiplication, ``D^{-1} = c\\,C G``, as the paper writes it.
    Exact when all ``sigma_i`` are equal; otherwise see :func:`rewriting_discrepancy`.
    """
    check_choice("how", how, ("best", "mean"))
    block, X_in, P, sigma, _ = _layer_pieces(model, X, layer)
    return _paper(block, X_in, P, sigma, how)


@torch.no_grad()
def rewriting_discrepancy(model: SAN, X, layer: int = 0, how: str = "best") -> dict:
    """How far the paper's right-multiplication form is from ``LN(SA(X_l))``, relative to its norm.

    Returns a dict of tensors of shape ``(...)`` (Frobenius norms): ``"paper"`` for
    :func:`paper_rewriting`, ``"exact"`` for :func:`exact_rewriting` (rounding error), and
    ``"spread"``, the coefficient of variation of the ``sigma_i`` (:func:`scale_spread`), which
    the paper's error tracks. One forward pass serves all three.
    """
    check_choice("how", how, ("best", "mean"))
    block, X_in, P, sigma, Y = _layer_pieces(model, X, layer)
    den = matrix_norm(Y, "fro")
    return {
        "paper": matrix_norm(_paper(block, X_in, P, sigma, how) - Y, "fro") / den,
        "exact": matrix_norm(_exact(block, X_in, P, sigma) - Y, "fro") / den,
        "spread": scale_spread(sigma),
    }


def _scales(name, s, shape=None, dtype=None) -> torch.Tensor:
    """Positive finite per-token scales of shape ``(..., n)`` (``shape`` when given)."""
    if isinstance(s, (list, tuple, np.ndarray)):
        s = torch.as_tensor(np.asarray(s, dtype=float))
    if not isinstance(s, torch.Tensor) or not s.is_floating_point():
        raise TypeError(
            f"{name} must be a floating tensor of shape (..., n), got {type(s).__name__}"
        )
    if s.ndim < 1 or s.shape[-1] < 1 or (shape is not None and s.shape != shape):
        want = f"{tuple(shape)}" if shape is not None else "(..., n) with n >= 1"
        raise ValueError(f"{name} must have shape {want}, got {tuple(s.shape)}")
    if not torch.isfinite(s).all() or (s <= 0).any():
        raise ValueError(f"{name} must hold finite positive scales")
    return s if dtype is None else s.to(dtype)


def scale_spread(sigma) -> torch.Tensor:
    """Coefficient of variation (std / mean) of per-token scales ``sigma`` of shape ``(..., n)``; 0
    iff all equal.

    ``sigma`` must be finite and positive (LayerNorm's ``sqrt(var + eps)`` always is). Scale-free at
    any magnitude: rows beyond ``2**±500`` are first rescaled by an exact power of two (others are
    untouched).
    """
    sigma = rescaled(_scales("sigma", sigma), dims=(-1,))
    return sigma.std(dim=-1, unbiased=False) / sigma.mean(dim=-1)


_MAX_SIDE = 10**6  # tokens or features of a drawn matrix
_MAX_ELEMENTS = 2**25  # n * d of a drawn matrix (256 MiB in float64)


def _check_size(n, d):
    if n * d > _MAX_ELEMENTS:
        raise ValueError(f"n * d must be at most {_MAX_ELEMENTS}, got n={n}, d={d}")


def near_uniform_along_ones(
    n: int, d: int, eps: float, *, seed: int, level: float = 1.0, dtype=torch.float64
) -> torch.Tensor:
    """``Y = level * 1 1_d^T + eps * E``: every token almost the same, and that common token along
    ``1_d``.

    ``E`` is ``(n, d)`` Gaussian. Its relative residual is of order ``eps``; LayerNorm's centring
    removes the common part ``level * 1 1_d^T`` exactly, and what is left, ``eps * E C``, already
    has relative residual of order one: the centring alone makes the jump. The per-token division
    by ``sigma_i`` (about ``sqrt(LN_EPS)`` when ``eps**2`` is far below LayerNorm's own ``LN_EPS``)
    then changes the relative residual little, and leaves the output's entries of size about
    ``eps / sqrt(LN_EPS)``, not of unit size (chapter "LayerNorm's rank argument", section "Rank
    is not distance to uniformity").
    """
    n, d = check_int("n", n, maximum=_MAX_SIDE), check_int("d", d, minimum=2, maximum=_MAX_SIDE)
    _check_size(n, d)
    eps = check_positive_float("eps", eps)
    level = check_finite_float("level", level)
    seed = check_seed("seed", seed)
    dtype = check_dtype("dtype", dtype)
    gen = torch.Generator().manual_seed(seed)
    E = torch.randn(n, d, generator=gen, dtype=dtype)
    return level * torch.ones(n, d, dtype=dtype) + eps * E


def balanced_tokens(
    n: int, d: int, *, seed: int, noise: float = 0.0, dtype=torch.float64
) -> torch.Tensor:
    """Rank-one tokens ``X = s v^T`` with balanced signs ``s`` (half ``+1``, half ``-1``), plus
    optional noise.

    The mean token is zero, so ``res(X) = X`` with the mean centre: as far from ``1 x^T`` as a
    matrix of its norm can be, yet of rank one. Attention keeps the form ``s w^T`` (every token
    attends equally to its own sign class), so the tokens stay antipodal at every depth; without
    LayerNorm ``||w||`` shrinks, with post-LN it is reset every layer. ``noise`` adds
    ``noise * ||v||/sqrt(d)`` times a Gaussian matrix. ``n`` must be even.
    """
    n, d = check_int("n", n, minimum=2, maximum=_MAX_SIDE), check_int("d", d, maximum=_MAX_SIDE)
    if n % 2:
        raise ValueError(f"n must be even (half the tokens +v, half -v), got {n}")
    _check_size(n, d)
    noise = check_positive_float("noise", noise, allow_zero=True)
    seed = check_seed("seed", seed)
    dtype = check_dtype("dtype", dtype)
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(d, generator=gen, dtype=dtype)
    s = torch.ones(n, dtype=dtype)
    s[1::2] = -1.0
    X = s[:, None] * v[None, :]
    if noise:
        X = X + noise * v.norm() / d**0.5 * torch.randn(n, d, generator=gen, dtype=dtype)
    return X


def residual_profile(model: SAN, X, rtol: float | None = None) -> dict:
    """Per layer (``L + 1`` entries) of the forward pass on ``X``: ``"absolute"``
    ``||res||_{1,inf}``, ``"relative"`` residual, numerical ``"rank"`` (with ``rtol``, see
    :func:`numerical_rank`) and ``"rank_one"``, the :func:`rank_one_deviation` (needs at least 2
    tokens and 2 features),
    each a tensor of shape ``(L+1, ...)``."""
    check_san(model)
    if rtol is not None:
        check_positive_float("rtol", rtol)
    with torch.no_grad():
        hs = model(model.check_input(X)).hidden_states
    return {
        "absolute": torch.stack([composite_norm(res(h)) for h in hs]),
        "relative": torch.stack([relative_residual(h) for h in hs]),
        "rank": torch.stack([numerical_rank(h, rtol) for h in hs]),
        "rank_one": torch.stack([rank_one_deviation(h) for h in hs]),
    }
