"""Tokens as particles on the sphere that cluster: self-attention in continuous depth.

Geshkovski, Letrouit, Polyanskiy and Rigollet ("A mathematical perspective on transformers") model
a transformer with LayerNorm as ``n`` particles on the unit sphere moving in continuous depth
``t`` (with query, key and value maps the identity):

.. math::
    \\dot x_i = P^\\perp_{x_i}\\Big(\\sum_j \\frac{e^{\\beta\\langle x_i, x_j\\rangle}}
    {\\sum_k e^{\\beta\\langle x_i, x_k\\rangle}}\\, x_j\\Big),
    \\qquad P^\\perp_x y = y - \\langle x, y\\rangle x,

``beta`` the inverse temperature. The projection :math:`P^\\perp` keeps the motion tangent to the
sphere, the role LayerNorm plays in a transformer (without its centring, it puts every token on a
sphere). :func:`attention_flow` integrates it by explicit Euler steps of size ``dt``, each followed
by a projection back to the sphere (dividing every token by its norm): the points stay on the
sphere to rounding. :func:`count_clusters` counts groups of tokens that have merged. The result
object returns numbers; the sentences that state them are the chapter's. Book: chapter "After
the paper", section 5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import (
    MAX_WORK,
    as_tokens,
    check_cost,
    check_elements,
    check_index,
    check_int,
    check_positive_float,
    check_seed,
)

__all__ = [
    "sphere_tokens",
    "attention_velocity",
    "attention_flow",
    "count_clusters",
    "ParticleResult",
    "particle_study",
    "CLUSTER_TOL",
    "MAX_STEPS",
    "MAX_TOKENS",
]

CLUSTER_TOL = 1e-3  # two tokens are together when 1 - <x_i, x_j> <= CLUSTER_TOL (angle about 0.045)
MAX_STEPS = 10**5  # Euler steps of one run
MAX_TOKENS = 10**4  # the flow forms n x n attention at every step


def sphere_tokens(n: int, d: int, *, seed: int) -> torch.Tensor:
    """``n`` tokens uniform on the unit sphere of ``R^d`` (normalised standard normals), ``(n, d)``
    float64."""
    n, d = check_int("n", n, maximum=MAX_TOKENS), check_int("d", d, minimum=2)
    if n * d > 10**8:
        raise ValueError(f"n * d = {n * d:,} exceeds 10**8: make the tokens fewer or narrower")
    gen = torch.Generator().manual_seed(check_seed("seed", seed))
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    return X / X.norm(dim=-1, keepdim=True)


def _unit(name, X) -> torch.Tensor:
    X = as_tokens(name, X)
    if X.shape[-2] > MAX_TOKENS:
        raise ValueError(f"{name} holds {X.shape[-2]} tokens, more than MAX_TOKENS = {MAX_TOKENS}")
    if not torch.allclose(X.norm(dim=-1), torch.ones((), dtype=X.dtype), atol=1e-6):
        raise ValueError(
            f"{name} must hold unit vectors (tokens on the sphere), got norms "
            f"{X.norm(dim=-1).min().item():.3g}..{X.norm(dim=-1).max().item():.3g}"
        )
    return X


def attention_velocity(X, beta: float) -> torch.Tensor:
    """The right-hand side
    :math:`P^\\perp_{x_i}(\\sum_j \\mathrm{softmax}_j(\\beta\\langle x_i,x_j\\rangle) x_j)`, shape
    of ``X`` (``(..., n, d)``, unit rows)."""
    X = _unit("X", X)
    beta = check_positive_float("beta", beta, allow_zero=True)
    return _velocity(X, beta)


def _velocity(X, beta):
    A = torch.softmax(beta * X @ X.transpose(-1, -2), dim=-1)
    V = A @ X
    return V - (V * X).sum(dim=-1, keepdim=True) * X


def attention_flow(X0, beta: float, *, dt: float, steps: int, every: int = 1) -> torch.Tensor:
    """Explicit Euler of the attention flow on the sphere from ``X0`` (``(..., n, d)``, unit rows),
    each step followed by the projection ``x <- x / |x|``. Returns the states at steps
    ``0, every, 2 every, ..., steps`` (the last always included): ``(T, ..., n, d)``, times
    ``k dt``. Refused before any step: more than :data:`rankcollapse._validate.MAX_WORK`
    multiply-adds in all (``2 n^2 d`` a step and a batch entry), or states beyond the memory cap."""
    X = _unit("X0", X0).clone()
    beta = check_positive_float("beta", beta, allow_zero=True)
    dt = check_positive_float("dt", dt)
    steps = check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    every = check_int("every", every)
    n, d = X.shape[-2:]
    batch = X.numel() // (n * d)
    check_cost(
        "steps",
        steps * 2 * batch * n * n * d,
        MAX_WORK,
        unit="multiply-adds (steps x 2 n^2 d, n tokens of X0)",
        alternative="take fewer steps or fewer tokens n",
    )
    kept = steps // every + 1 + (steps % every != 0)
    check_elements(
        "steps",
        kept * X.numel(),
        itemsize=X.element_size(),
        alternative="keep fewer states (a larger every), or take fewer steps or tokens",
    )
    if dt * (1 + beta) > 1:
        raise ValueError(
            f"dt must be at most 1 / (1 + beta) = {1 / (1 + beta):.3g} for a stable Euler step, "
            f"got {dt}"
        )
    out = [X.clone()]
    for k in range(1, steps + 1):
        X = X + dt * _velocity(X, beta)
        X = X / X.norm(dim=-1, keepdim=True)
        if k % every == 0 or k == steps:
            out.append(X.clone())
    return torch.stack(out)


def count_clusters(X, tol: float = CLUSTER_TOL) -> int:
    """The number of clusters of the tokens ``X`` (``(n, d)``, unit rows): connected groups of the
    graph joining ``i`` and ``j`` when ``1 - <x_i, x_j> <= tol``."""
    X = _unit("X", X)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {tuple(X.shape)}")
    tol = check_positive_float("tol", tol)
    near = (1 - X @ X.T) <= tol
    n, seen, count = X.shape[0], set(), 0
    for i in range(n):
        if i in seen:
            continue
        count += 1
        stack = [i]
        seen.add(i)
        while stack:
            j = stack.pop()
            for k in torch.nonzero(near[j]).flatten().tolist():
                if k not in seen:
                    seen.add(k)
                    stack.append(k)
    return count


@dataclass
class ParticleResult:
    """Clusters against depth and ``beta`` (section 5). ``times``: ``(T,)``; ``betas``; ``counts``:
    ``(len(betas), T)`` cluster counts (one seed); ``paths``: ``{beta: (T, n, d) array}`` for
    ``rankbook.plotting.later.particle_figure``; ``n``, ``d``, ``dt``."""

    times: np.ndarray
    betas: np.ndarray
    counts: np.ndarray
    paths: dict
    n: int
    d: int
    dt: float

    def merge_time(self, beta_index: int) -> float:
        """The first time at which one cluster remains (``inf`` if never within the run)."""
        beta_index = check_index(
            "beta_index", beta_index, len(self.counts), what="betas", allow_negative=True
        )
        one = np.nonzero(self.counts[beta_index] == 1)[0]
        return float(self.times[one[0]]) if one.size else math.inf

    def non_increasing_tail(self) -> bool:
        """Over the second half of the run, does every ``beta``'s count never rise?"""
        half = len(self.times) // 2
        return bool(np.all(np.diff(self.counts[:, half:], axis=1) <= 0))


def particle_study(
    *, n: int, d: int, betas, T: float, dt: float, every: int, seed: int, show=None
) -> ParticleResult:
    """Cluster counts against depth ``t <= T`` for each ``beta`` (section 5), from the same ``n``
    tokens uniform on the sphere of ``R^d`` (``seed``); ``show``: the betas whose paths
    ``rankbook.plotting.later.particle_figure`` draws (default: first, middle and last)."""
    try:
        betas = [check_positive_float("betas", b, allow_zero=True) for b in betas]
    except TypeError:
        raise TypeError(
            f"betas must be a sequence of numbers >= 0, got {type(betas).__name__}"
        ) from None
    if not betas:
        raise ValueError("betas must hold at least one value")
    T, dt = check_positive_float("T", T), check_positive_float("dt", dt)
    steps = check_int("steps (T / dt)", round(T / dt), maximum=MAX_STEPS)
    X0 = sphere_tokens(n, d, seed=seed)
    show = (
        [betas[0], betas[len(betas) // 2], betas[-1]] if show is None else [float(b) for b in show]
    )
    if not set(show) <= set(betas):
        raise ValueError(f"show must be a subset of betas {betas}, got {show}")
    counts, paths, times = [], {}, None
    for beta in betas:
        traj = attention_flow(X0, beta, dt=dt, steps=steps, every=every)
        counts.append([count_clusters(x) for x in traj])
        if beta in show:
            paths[beta] = traj.numpy()
        times = dt * np.array([min(k * every, steps) for k in range(len(traj))])
    return ParticleResult(times, np.array(betas), np.array(counts), paths, n, d, dt)
