"""Lambda-skip connections: ``X + lambda SA(X)``, the residual against the branch weight ``lambda``.

Joseph, Sieber, Zeilinger and Amo Alonso (ICLR 2025) weight the skip connection against the
attention branch and state a sufficient condition on that weight under which rank collapse cannot
happen. Their exact condition (stated with LayerNorm) could not be read offline; this module
measures the book's own version: networks ``X_{l+1} = X_l + lambda SA(X_l)`` (pure attention and a
skip, nothing else) and the book's sufficient condition below.

A lambda-skip layer is a core :class:`~rankcollapse.san.SAN` with ``skip=True`` and
``branch_scale=lambda`` (:func:`lambda_skip_san`): the attention matrices ``P_h`` depend on
``W_Q, W_K`` only, so ``lambda SA(X)`` is ``SA`` with value maps ``lambda W_h``
(:func:`~rankcollapse.theory.value_matrices` includes the branch scale). ``lambda = 0`` is the
identity; ``lambda = 1`` the usual skip connection.

**The book's condition** (chapter "After the paper", section 3). With :math:`C = I - \\mathbf 1
\\mathbf 1^\\top/n` and :math:`R_l = C X_l` (the mean-centred residual, the exact minimiser in the
Frobenius norm), :math:`P_h\\mathbf 1 = \\mathbf 1` gives :math:`R_{l+1} = R_l + \\sum_h C P_h C R_l
W_h`, hence

.. math::
    \\lVert R_{l+1}\\rVert_F \\ge (1 - g_l)\\lVert R_l\\rVert_F,\\quad
    g_l = \\sum_h \\lVert C P_h C\\rVert_2 \\lVert W_h\\rVert_2, \\qquad
    \\lVert X_{l+1}\\rVert_F \\le (1 + c_l)\\lVert X_l\\rVert_F,\\quad
    c_l = \\sum_h \\lVert P_h\\rVert_2 \\lVert W_h\\rVert_2,

(``W_h`` including ``lambda``), so the relative residual obeys
:math:`\\rho_L \\ge \\rho_0\\prod_l (1 - g_l)_+/(1 + c_l)`. If every :math:`g_l < 1` the residual
cannot vanish at any depth and falls at most geometrically: no doubly exponential collapse.
Since :math:`g_l` is proportional to ``lambda`` (up to the attention's change), the condition holds
below a threshold :math:`\\lambda^*` where :math:`\\max_l g_l = 1` (:func:`lambda_study` finds it);
a deeper network has more layers whose constant may reach 1, so the threshold depends on the depth
(:meth:`LambdaResult.thresholds`). The result object returns numbers; the sentences that state
them are the chapter's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import (
    as_tokens,
    check_generator,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from ..residual import relative_residual, through_depth
from ..san import SAN, SANConfig, check_san, check_size
from ..theory import value_matrices

# samples * n_tokens * max(n_tokens * n_heads, d_model): refused above, before any allocation
MAX_ENTRIES = 10**8

__all__ = [
    "MAX_ENTRIES",
    "lambda_skip_san",
    "layer_constants",
    "relative_residual_lower_bound",
    "LambdaResult",
    "lambda_study",
]


def _check_config(config) -> SANConfig:
    if not isinstance(config, SANConfig):
        raise TypeError(f"config must be a SANConfig, got {type(config).__name__}")
    if (
        config.mlp
        or config.layernorm != "none"
        or config.bias
        or config.causal
        or config.attention != "dot"
    ):
        raise ValueError(
            "config must be pure attention (mlp=0, layernorm='none', bias=False, causal=False, "
            "attention='dot'): a lambda-skip layer is X + lambda SA(X)"
        )
    return config.replace(skip=True, skip_strength=1.0)


def lambda_skip_san(config: SANConfig, lam: float, *, seed: int) -> SAN:
    """The network ``X_{l+1} = X_l + lam SA_l(X_l)``: ``config``'s weights (drawn from ``seed``),
    skip connections on, the attention branch weighted by ``lam`` (``>= 0``; the config's
    ``branch_scale``). ``lam = 0`` is the identity.

    ``config``: a pure-attention :class:`~rankcollapse.san.SANConfig` (its ``skip`` flag and
    ``skip_strength`` are set).
    The same ``seed`` gives the same ``W_Q, W_K, W_V`` and the same attention at every ``lam``.
    """
    cfg = _check_config(config)
    lam = check_positive_float("lam", lam, allow_zero=True)
    return SAN(cfg.replace(branch_scale=lam), seed=seed)


def _check_lambda_model(model) -> SAN:
    cfg = check_san(model).config
    if not cfg.skip or cfg.skip_strength != 1 or cfg.mlp or cfg.layernorm != "none" or cfg.bias:
        raise ValueError(
            "model must be a lambda-skip network (skip=True, skip_strength=1, mlp=0, "
            "layernorm='none', bias=False), "
            "as lambda_skip_san builds"
        )
    return model


@torch.no_grad()
def layer_constants(model, X) -> dict:
    """The book's per-layer constants ``g_l`` and ``c_l`` (module docstring) on the forward pass of
    ``X``.

    ``X``: ``(n, d)`` or ``(..., n, d)``. Returns ``{"g": (L, ...), "c": (L, ...)}`` tensors (the
    attention ``P_h`` is the one the network computes on ``X``; ``W_h`` includes ``lambda``).
    """
    _check_lambda_model(model)
    X = model.check_input(X)
    return _constants(model, X, model(X))


def _constants(model, X, out) -> dict:
    L, n = model.config.n_layers, X.shape[-2]
    if L == 0:
        empty = torch.zeros((0,) + X.shape[:-2], dtype=X.dtype)
        return {"g": empty, "c": empty.clone()}
    W = torch.linalg.matrix_norm(value_matrices(model), ord=2)  # (L, H)
    C = torch.eye(n, dtype=X.dtype) - 1.0 / n
    g, c = [], []
    for l, P in enumerate(out.attentions):  # P: (..., H, n, n)
        cpc = torch.linalg.matrix_norm(C @ P @ C, ord=2)  # (..., H)
        p2 = torch.linalg.matrix_norm(P, ord=2)
        g.append((cpc * W[l]).sum(dim=-1))
        c.append((p2 * W[l]).sum(dim=-1))
    return {"g": torch.stack(g), "c": torch.stack(c)}


@torch.no_grad()
def relative_residual_lower_bound(model, X) -> torch.Tensor:
    """The book's lower bound on the Frobenius relative residual ``rho_l``, ``l = 0..L``:
    ``rho_0 prod_{k<l} max(1 - g_k, 0) / (1 + c_k)``. Shape ``(L + 1, ...)``."""
    X = _check_lambda_model(model).check_input(X)
    return _bound(X, layer_constants(model, X))


def _bound(X, k) -> torch.Tensor:
    factors = (1 - k["g"]).clamp(min=0) / (1 + k["c"])
    rho0 = relative_residual(X, norm="fro")
    return (
        torch.cat([rho0.unsqueeze(0), rho0 * torch.cumprod(factors, dim=0)])
        if len(factors)
        else rho0.unsqueeze(0)
    )


def _threshold(lams, gmax) -> float:
    """The ``lambda`` where ``max_l g_l`` crosses 1, interpolated in log-log between grid points
    (``inf`` if it never does, ``nan`` if it already exceeds 1 at the smallest positive
    ``lambda``)."""
    pos = [(a, g) for a, g in zip(lams, gmax) if a > 0]
    for (a0, g0), (a1, g1) in zip(pos, pos[1:]):
        if g0 < 1 <= g1:
            t = (0 - math.log(g0)) / (math.log(g1) - math.log(g0))
            return math.exp(math.log(a0) + t * (math.log(a1) - math.log(a0)))
    if pos and pos[0][1] >= 1:
        return float("nan")
    return float("inf")


@dataclass
class LambdaResult:
    """The relative residual against ``lambda`` (section 3). ``lambdas``: the grid; ``rho``:
    ``(samples, len(lambdas), L+1)`` Frobenius relative residuals through depth; ``bound``: the
    book's lower bound, same shape; ``g``: ``(samples, len(lambdas), L)`` the layer constants
    ``g_l``; ``n_layers``, ``samples`` the sizes. The first ``l`` layers of the networks are the
    networks of depth ``l`` (the same weights), so every ``depth`` below is read off one run."""

    lambdas: np.ndarray
    rho: np.ndarray
    bound: np.ndarray
    g: np.ndarray
    n_layers: int
    samples: int

    def _depth(self, depth) -> int:
        return self.n_layers if depth is None else check_int("depth", depth, maximum=self.n_layers)

    def median(self, which: str = "rho") -> np.ndarray:
        """Median over samples, ``(len(lambdas), L+1)``."""
        return np.median(getattr(self, which), axis=0)

    def gmax(self, depth=None) -> np.ndarray:
        """``(samples, len(lambdas))``: the largest ``g_l`` over the first ``depth`` layers (all by
        default)."""
        return self.g[..., : self._depth(depth)].max(axis=-1)

    def thresholds(self, depth=None) -> np.ndarray:
        """Each sample's threshold ``lambda*`` for the network of ``depth`` layers (default ``L``):
        where the largest ``g_l`` of its layers crosses 1 (:func:`_threshold`)."""
        gmax = self.gmax(depth)
        return np.array([_threshold(self.lambdas, gmax[s]) for s in range(self.samples)])

    def threshold_at(self, depth=None) -> float:
        """The median threshold over samples for ``depth`` layers (default ``L``)."""
        return float(np.median(self.thresholds(depth)))

    @property
    def threshold(self) -> float:
        """The median threshold ``lambda*`` over samples, at the full depth ``L``."""
        return self.threshold_at()

    def violations(self) -> int:
        """Entries where the measured relative residual falls below the book's bound (must be 0)."""
        return int(np.sum(self.rho < self.bound * (1 - 1e-9) - 1e-300))

    def _below(self, depth):
        return (self.lambdas > 0) & (self.lambdas < self.threshold_at(depth))

    def kept(self, depth=None) -> tuple[float, float]:
        """The smallest and largest median ``rho`` after ``depth`` layers (default ``L``) over the
        grid's ``0 < lambda < lambda*`` of that depth (``nan`` if none)."""
        rho, below = self.median()[:, self._depth(depth)], self._below(depth)
        return (
            (float(rho[below].min()), float(rho[below].max()))
            if below.any()
            else (math.nan, math.nan)
        )

    def falls(self, depth=None) -> bool:
        """The trend after ``depth`` layers: is the median ``rho`` at the largest ``lambda`` below a
        tenth of the smallest value kept below the threshold (and below a tenth of ``rho_0``)?"""
        rho = self.median()[:, self._depth(depth)]
        low = self.kept(depth)[0]
        low = rho[0] if math.isnan(low) else min(low, rho[0])
        return bool(rho[-1] < 0.1 * low)

    def bound_gap(self, depth=None) -> tuple[float, float]:
        """How loose the book's bound is after ``depth`` layers (default ``L``): ``(lambda, ratio)``
        at the largest grid ``lambda`` below that depth's threshold, ``ratio`` the median bound over
        the median measured ``rho`` (``(nan, nan)`` if no grid point lies below the threshold)."""
        d, below = self._depth(depth), np.nonzero(self._below(depth))[0]
        if not below.size:
            return math.nan, math.nan
        j = below[-1]
        return float(self.lambdas[j]), float(self.median("bound")[j, d] / self.median()[j, d])


def lambda_study(
    *,
    lambdas,
    n_layers: int,
    n_heads: int,
    d_model: int,
    n_tokens: int,
    samples: int,
    seed: int,
    generator,
) -> LambdaResult:
    """The relative residual of lambda-skip networks against ``lambda`` (chapter "After the paper",
    section 3).

    ``samples`` networks (seeds ``seed + s``, ``n_heads`` heads, width ``d_model``, depth
    ``n_layers``) read inputs of ``n_tokens`` standard normal tokens drawn from ``generator``; the
    same networks and inputs serve every ``lambda`` in ``lambdas`` (non-negative, increasing; 0 is
    added if absent). Float64 throughout.
    """
    check_generator("generator", generator)
    L, H, d = (
        check_int("n_layers", n_layers),
        check_int("n_heads", n_heads),
        check_int("d_model", d_model),
    )
    n, samples, seed = (
        check_int("n_tokens", n_tokens, minimum=2),
        check_int("samples", samples),
        check_seed("seed", seed),
    )
    try:
        lams = sorted(
            {0.0} | {check_positive_float("lambdas", a, allow_zero=True) for a in lambdas}
        )
    except TypeError:
        raise TypeError(
            f"lambdas must be a sequence of numbers >= 0, got {type(lambdas).__name__}"
        ) from None
    if len(lams) < 2:
        raise ValueError("lambdas must hold at least one value > 0")
    cfg = SANConfig(n_layers=L, n_heads=H, d_model=d)
    check_size(cfg)
    if samples * n * max(n * H, d) > MAX_ENTRIES:
        raise ValueError(
            "samples * n_tokens * max(n_tokens * n_heads, d_model) = "
            f"{samples * n * max(n * H, d):,} "
            f"exceeds {MAX_ENTRIES:,}: make the study smaller"
        )
    X = as_tokens("X", torch.randn(samples, n, d, generator=generator, dtype=torch.float64))
    rho = np.zeros((samples, len(lams), L + 1))
    bound, g = np.zeros_like(rho), np.zeros((samples, len(lams), L))
    for s in range(samples):
        for j, lam in enumerate(lams):
            model = lambda_skip_san(cfg, lam, seed=derive_seed(seed, s))
            with torch.no_grad():
                out = model(X[s])
                k = _constants(model, X[s], out)
            rho[s, j] = through_depth(out.hidden_states, "relative", norm="fro").numpy()
            bound[s, j] = _bound(X[s], k).numpy()
            g[s, j] = k["g"].numpy()
    return LambdaResult(np.array(lams), rho, bound, g, L, samples)
