"""The adversary: gradient search for the smallest residual a network with skips can leave.

The book's lower bound with skip connections (:mod:`rankcollapse.lower_bound`) holds for every
network whose value maps have ``Omega = sum_h ||W_h||_inf < 1/2``. How close to it can a network
get? :func:`search` looks for the smallest ratio ``||res(X_L)||_inf / ||res(X)||_inf`` over the
weights *and* the input (its residual held at ``b0``), at fixed bounds on every head's
``||W_QK,h||_inf <= q`` and ``||W_h||_inf <= omega``: Adam on the log of the ratio (torch
autograd), each row of every weight matrix projected back onto the l1 ball of its bound after
every step (the Euclidean projection), many restarts run as one batch: the first four start
exactly at the known network ``W_QK = q I``, ``W_h = -omega I`` (the construction), the rest of
the first half near it, the second half at random; restart ``r``'s input starts as
:data:`START_INPUTS` ``[r % 4]`` (two clusters ``+-e_1``, one-hot tokens, a regular simplex,
Gaussian tokens), so the known networks on clustered, sparse and simplex inputs are among the
candidates and the search reports at most what they reach. A search finds an upper
estimate of the infimum, never the infimum. Core dependencies only. Book: chapter "A lower bound
with skip connections", sections 5 and 6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import (
    MAX_LAYERS,
    MAX_LOOP,
    MAX_WORK,
    check_cost,
    check_elements,
    check_int,
    check_positive_float,
    check_seed,
)
from .lower_bound import Stack, residual_inf, simplex_tokens

__all__ = [
    "MAX_STEPS",
    "MAX_RESTARTS",
    "START_INPUTS",
    "project_rows",
    "start_inputs",
    "at_the_bounds",
    "SearchResult",
    "search",
]

MAX_STEPS = 10**4
MAX_RESTARTS = 10**3


def project_rows(M: torch.Tensor, radius: float = 1.0) -> torch.Tensor:
    """The Euclidean projection of every row of ``M`` (last dimension) onto the l1 ball of
    ``radius``.

    ``M`` a floating-point tensor (others refused by name; float32 is projected in float64 and
    cast back). Rows inside the ball are kept; the others are soft-thresholded, ``sign(m) max(|m| -
    theta, 0)`` with the ``theta`` that puts the row on the sphere (Duchi et al. 2008's sort-based
    rule); rows of entries so large that the rule rounds away stay finite and inside the ball.
    """
    if not isinstance(M, torch.Tensor) or not M.is_floating_point():
        raise TypeError(f"M must be a floating-point torch tensor, got {type(M).__name__}")
    radius = check_positive_float("radius", radius)
    if M.dtype != torch.float64:  # sums of huge float32 entries overflow: work in float64
        return project_rows(M.to(torch.float64), radius).to(M.dtype)
    a = M.abs()
    inside = a.sum(-1, keepdim=True) <= radius
    s, _ = torch.sort(a, dim=-1, descending=True)
    excess = s.cumsum(-1) - radius
    idx = torch.arange(1, M.shape[-1] + 1, dtype=M.dtype)
    last = ((s - excess / idx > 0) * idx).amax(-1, keepdim=True).long() - 1  # the last index kept
    last = last.clamp(min=0)  # huge entries can round every test to False: keep the largest
    theta = excess.gather(-1, last) / (last + 1).to(M.dtype)
    out = torch.sign(M) * torch.clamp(a - theta, min=0)
    norm = out.abs().sum(-1, keepdim=True)  # rounding at huge sizes can leave it off the sphere
    out = torch.where(norm > radius, out * (radius / norm), out)
    return torch.where(inside, M, out)


@dataclass
class SearchResult:
    """What :func:`search` found, per depth of ``depths`` ``(k,)``.

    ``best``: the smallest ratio over restarts and steps; ``initial``: the smallest at the start;
    ``networks``: per depth, ``(Stack, X)`` of every restart at its best step (``X`` ``(R, n, d)``,
    residual ``b0``), for checking the bound on them; ``q``, ``omega``, ``b0``, ``steps``,
    ``restarts``: the search's settings.
    """

    depths: np.ndarray
    best: np.ndarray
    initial: np.ndarray
    networks: list
    q: float
    omega: float
    b0: float
    steps: int
    restarts: int

    def best_network(self, i: int):
        """``(Stack, X)`` of the best network found at depth ``depths[i]`` (one network, ``X``
        ``(n, d)``)."""
        stack, X = self.networks[i]
        j = int(torch.argmin(stack.residuals(X)[:, -1]))
        return stack.select(slice(j, j + 1)), X[j]

    def without_skips(self) -> np.ndarray:
        """The ratio of each depth's best network run without skips, same weights and input,
        ``(k,)`` (the float64 forward pass: it stops near ``1e-16`` of the tokens' size)."""
        out = []
        for i in range(len(self.depths)):
            stack, X = self.best_network(i)
            out.append(float(stack.residuals(X, skip=False)[0, -1] / self.b0))
        return np.array(out)


def search(
    depths,
    *,
    n: int,
    d: int,
    H: int,
    q: float,
    omega: float,
    b0: float,
    restarts: int,
    steps: int,
    seed: int,
    lr: float = 0.02,
) -> SearchResult:
    """Search, at each depth of ``depths``, for the smallest ``||res(X_L)||_inf / b0`` with skips.

    Networks of ``H`` heads on ``n`` tokens of width ``d`` (``d_qk = d``); every head's
    ``||W_QK,h||_inf <= q`` and ``||W_h||_inf <= omega`` (so ``Omega <= H omega``); the input's
    residual held at ``||res(X)||_inf = b0`` (its mean is free). ``restarts`` networks per depth,
    ``steps`` Adam steps of learning rate ``lr`` on ``W_QK / q``, ``W_h / omega`` and the input,
    the weights projected after each step (:func:`project_rows`). Seeded by ``seed`` (the same
    draws at every depth). Returns a :class:`SearchResult`.
    """
    depths = [check_int("depths", L, maximum=MAX_LAYERS) for L in np.atleast_1d(depths)]
    if not depths or sorted(set(depths)) != depths:
        raise ValueError(f"depths must be increasing depths >= 1, got {depths}")
    n, d, H = check_int("n", n, minimum=2), check_int("d", d), check_int("H", H)
    q, omega, b0 = (check_positive_float(k, v) for k, v in (("q", q), ("omega", omega), ("b0", b0)))
    restarts = check_int("restarts", restarts, maximum=MAX_RESTARTS)
    steps = check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    seed, lr = check_seed("seed", seed), check_positive_float("lr", lr)
    check_elements(
        "restarts * max(depths) * H * d * d",
        8 * restarts * max(depths) * H * d * d,
        alternative="use fewer restarts or shallower depths",
    )
    layer_steps = sum(depths) * (steps + 1)
    check_cost(
        "steps",
        layer_steps,
        MAX_LOOP,
        unit="layer-steps (sum(depths) * (steps + 1))",
        alternative="use fewer steps or depths (the book's full run: 3.1e+04)",
    )
    check_cost(
        "steps",
        layer_steps * restarts * H * (n * d * d + n * n * d) * 6,
        MAX_WORK,
        unit="multiply-adds",
        alternative="use fewer restarts, steps or depths",
    )
    best, initial, networks = [], [], []
    with torch.enable_grad():
        for L in depths:
            found = _search_depth(L, n, d, H, q, omega, b0, restarts, steps, seed, lr)
            best.append(float(found[0].min()))
            initial.append(found[1])
            networks.append(found[2])
    return SearchResult(
        np.array(depths, dtype=float),
        np.array(best),
        np.array(initial),
        networks,
        q,
        omega,
        b0,
        steps,
        restarts,
    )


def at_the_bounds(count: int, L: int, *, n: int, d: int, H: int, q: float, omega: float,
                  b0: float, seed: int):  # fmt: skip
    """``count`` random networks at the search's weight bounds, with Gaussian inputs: ``(Stack,
    X)``, ``X`` ``(count, n, d)`` with ``||res(X)||_inf = b0``. Every row of every head's ``W_QK``
    and ``W_h`` is a Gaussian direction scaled to l1 norm ``q`` and ``omega`` exactly (so
    ``||W_QK,h||_inf = q``, ``||W_h||_inf = omega``, ``Omega = H omega``): random networks as strong
    as the bounds allow, for comparison with the search and the bound (chapter "A lower bound with
    skip connections", figures of sections 5 and 7)."""
    count = check_int("count", count, maximum=MAX_RESTARTS)
    L = check_int("L", L, maximum=MAX_LAYERS)
    n, d, H = check_int("n", n, minimum=2), check_int("d", d), check_int("H", H)
    q, omega, b0 = (check_positive_float(k, v) for k, v in (("q", q), ("omega", omega), ("b0", b0)))
    check_elements("2 * count * L * H * d * d", 2 * count * L * H * d * d,
                   alternative="use fewer or shallower networks")  # fmt: skip
    g = torch.Generator().manual_seed(check_seed("seed", seed))
    A, B = (torch.randn(count, L, H, d, d, generator=g, dtype=torch.float64) for _ in range(2))
    A, B = A / A.abs().sum(-1, keepdim=True), B / B.abs().sum(-1, keepdim=True)
    X = torch.randn(count, n, d, generator=g, dtype=torch.float64)
    X = X * (b0 / residual_inf(X))[:, None, None]
    return Stack(q * A, omega * B, d), X


#: The inputs the restarts start from, in turn (restart ``r`` takes ``START_INPUTS[r % 4]``).
START_INPUTS = ("clusters", "sparse", "simplex", "gaussian")


def start_inputs(kind: str, restarts: int, n: int, d: int, g: torch.Generator | None = None):
    """Starting inputs ``(restarts, n, d)`` of one kind (:data:`START_INPUTS`), before scaling:
    ``"clusters"``, two clusters of tokens ``+e_1`` and ``-e_1`` (alternating); ``"sparse"``,
    one-hot tokens ``e_(i mod d)`` (Gaussian when ``d = 1``); ``"simplex"``, a regular simplex
    centred at 0 (Gaussian when ``d < n - 1``); ``"gaussian"``, Gaussian tokens drawn from ``g``."""
    if kind not in START_INPUTS:
        raise ValueError(f"kind must be one of {START_INPUTS}, got {kind!r}")
    restarts = check_int("restarts", restarts, maximum=MAX_RESTARTS)
    n, d = check_int("n", n, minimum=2), check_int("d", d)
    check_elements("restarts * n * d", restarts * n * d, alternative="use fewer restarts or tokens")
    X = torch.zeros(n, d, dtype=torch.float64)
    if kind == "clusters":
        X[:, 0] = torch.tensor([1.0, -1.0], dtype=torch.float64).repeat(n)[:n]
    elif kind == "sparse" and d >= 2:
        X[torch.arange(n), torch.arange(n) % d] = 1.0
    elif kind == "simplex" and d >= n - 1:
        X = simplex_tokens(n, d, 1.0)
    else:
        return torch.randn(restarts, n, d, generator=g, dtype=torch.float64)
    return X.expand(restarts, n, d).clone()


def _search_depth(L, n, d, H, q, omega, b0, restarts, steps, seed, lr):
    g = torch.Generator().manual_seed(seed)
    shape = (restarts, L, H, d, d)
    A = torch.randn(*shape, generator=g, dtype=torch.float64) / d
    B = torch.randn(*shape, generator=g, dtype=torch.float64) / d
    exact = min(len(START_INPUTS), restarts)  # the known networks: the construction, exactly
    near = max(restarts // 2, exact)  # then near it, then at random
    eye = torch.eye(d, dtype=torch.float64)
    A[:near], B[:near] = eye + 0.1 * A[:near], -eye + 0.1 * B[:near]
    A[:exact], B[:exact] = eye, -eye
    A, B = project_rows(A).requires_grad_(), project_rows(B).requires_grad_()
    X = torch.randn(restarts, n, d, generator=g, dtype=torch.float64)
    for i, kind in enumerate(START_INPUTS[:-1]):  # restart r starts from input kind r % 4
        X[i :: len(START_INPUTS)] = start_inputs(kind, restarts, n, d, g)[i :: len(START_INPUTS)]
    X = X.requires_grad_()
    opt = torch.optim.Adam([A, B, X], lr=lr)
    best = torch.full((restarts,), math.inf, dtype=torch.float64)
    keep = [A.detach().clone(), B.detach().clone(), X.detach().clone()]
    start = None
    for step in range(steps + 1):  # the last pass only evaluates
        opt.zero_grad()
        Xn = X * (b0 / residual_inf(X))[:, None, None]
        log_ratio = torch.log(residual_inf(Stack(q * A, omega * B, d).hidden(Xn)[-1]) / b0)
        value = log_ratio.detach()
        start = value.min().exp().item() if start is None else start
        better = value < best
        best = torch.where(better, value, best)
        for kept, now in zip(keep, (A, B, Xn)):
            kept[better] = now.detach()[better]
        if step == steps:
            break
        log_ratio.sum().backward()
        opt.step()
        with torch.no_grad():
            A.copy_(project_rows(A))
            B.copy_(project_rows(B))
    return best.exp(), start, (Stack(q * keep[0], omega * keep[1], d), keep[2])
