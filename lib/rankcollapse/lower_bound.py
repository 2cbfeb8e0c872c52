"""A lower bound on the residual with skip connections (this book), and networks that reach it.

Dong et al. (2021) prove that pure attention loses its residual doubly exponentially with depth,
and pose a tight *lower* bound on the residual of attention with skip connections as an open
problem. This module computes the book's answer in a regime of the weights (chapter "A lower
bound with skip connections"), with numbers and tensors only:

- for a layer ``X + sum_h P_h X W_h`` with ``q_h = min(||W_QK,h||_1, ||W_QK,h||_inf)`` and
  ``omega_h = ||W_h||_inf``, the layer's constants ``Omega = sum_h omega_h`` and
  ``k = (4 / sqrt(d_qk)) sum_h q_h omega_h`` (:func:`layer_constants`);
- the theorem: if every layer has ``Omega <= Omega_max < 1/2`` and ``k <= k_max``, the
  mean-centred residual in the row-sum norm, ``b_l = ||res(X_l)||_inf``, satisfies
  ``1/b_L^2 <= max(1/b_0^2, 3 k_max/(1 - 2 Omega_max)^2) + (15/4) k_max L`` for every input and
  every depth (:func:`depth_bound`, :func:`lower_bound` for a core ``SAN``);
- the one-layer lemma in its a-posteriori form, ``b_{l+1} >= b_l (1 - sum_h 2 omega_h tanh 2
  eps_h)`` with the forward pass's ``eps_h = max_ij |R W_QK,h R^T|_ij / sqrt(d_qk)``
  (:func:`one_layer_bound`);
- networks of one shape with batched weights (:class:`Stack`), the construction that reaches the
  rate (``W_QK = q I``, ``W_h = -omega I`` on a regular simplex of tokens, :func:`construction`,
  :func:`simplex_tokens`, :func:`simplex_log10_ratios`), random networks in the regime
  (:func:`random_networks`) and the bound checked on them (:func:`bound_check`).

The theorem's functions live in :mod:`rankcollapse.lower_bound_theorem` (re-exported here), the
adversarial search over the weights in :mod:`rankcollapse.lower_bound_search`.
Core dependencies only (torch, numpy, the core modules). Book: chapter "A lower bound with skip
connections".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import (
    MAX_LAYERS,
    check_cost,
    check_elements,
    check_int,
    check_positive_float,
    check_seed,
)
from .lower_bound_theorem import (  # noqa: F401  (re-exported)
    OMEGA_LIMIT,
    STEP,
    THRESHOLD,
    as_float64,
    contraction,
    depth_bound,
    depth_grid,
    head_constants,
    layer_constants,
    lower_bound,
    one_layer_bound,
    residual_inf,
    wide_depth_bound,
    wide_lower_bound,
)
from .san import SAN, SANConfig

__all__ = [
    "STEP",
    "THRESHOLD",
    "OMEGA_LIMIT",
    "residual_inf",
    "layer_constants",
    "depth_bound",
    "contraction",
    "wide_depth_bound",
    "lower_bound",
    "wide_lower_bound",
    "one_layer_bound",
    "Stack",
    "construction",
    "simplex_tokens",
    "simplex_log10_ratios",
    "random_networks",
    "BoundCheck",
    "bound_check",
]


@dataclass(frozen=True)
class Stack:
    """``B`` self-attention networks of one shape with skips (or without), weights batched.

    ``QK`` ``(B, L, H, d, d)``: each head's ``W_QK = W_Q W_K^T``; ``W`` ``(B, L, H, d, d)``: its
    value map ``W_V W_O``; logits ``X W_QK X^T / sqrt(d_qk)``. :meth:`san` builds network ``i`` as a
    core ``SAN`` (``W_Q = W_QK``, ``W_K = I``, ``W_V = W_h``, ``W_O = I``, ``d_qk`` as given), the
    same network.
    """

    QK: torch.Tensor
    W: torch.Tensor
    d_qk: int

    def __post_init__(self):
        if (
            self.QK.ndim != 5
            or self.QK.shape != self.W.shape
            or self.QK.shape[-1] != self.QK.shape[-2]
        ):
            raise ValueError(
                f"QK and W must both have shape (B, L, H, d, d), got {tuple(self.QK.shape)} "
                f"and {tuple(self.W.shape)}"
            )
        check_int("d_qk", self.d_qk)

    def constants(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(k, Omega)`` of each network, the largest over its layers: each ``(B,)``."""
        k, omega = head_constants(self.QK.detach(), self.W.detach(), self.d_qk)
        return k.amax(-1), omega.amax(-1)

    def hidden(self, X, skip: bool = True) -> list[torch.Tensor]:
        """``X_0 .. X_L`` of every network on its input ``X`` ``(B, n, d)`` (or one ``(n, d)`` for
        all)."""
        B, d = self.QK.shape[0], self.QK.shape[-1]
        if (
            not isinstance(X, torch.Tensor)
            or X.ndim not in (2, 3)
            or X.shape[-1] != d
            or (X.ndim == 3 and X.shape[0] != B)
        ):
            raise ValueError(
                f"X must have shape ({B}, n, {d}) or (n, {d}), got {tuple(getattr(X, 'shape', ()))}"
            )
        if not X.is_floating_point():
            raise TypeError(f"X must be a floating-point tensor, got dtype {X.dtype}")
        X = X.to(self.QK.dtype)  # float32 tokens are cast to the networks' float64
        X = X.expand(B, *X.shape[-2:]) if X.ndim == 2 else X
        scale, out = 1 / math.sqrt(self.d_qk), [X]
        for QK, W in zip(
            self.QK.unbind(1), self.W.unbind(1)
        ):  # unbind: one backward for all layers
            Xh = X.unsqueeze(1)  # (B, 1, n, d)
            P = torch.softmax((Xh @ QK) @ Xh.transpose(-1, -2) * scale, dim=-1)
            A = ((P @ Xh) @ W).sum(1)
            X = X + A if skip else A
            out.append(X)
        return out

    def residuals(self, X, skip: bool = True) -> torch.Tensor:
        """``||res(X_l)||_inf`` of every network and layer, ``(B, L+1)``, no gradient."""
        with torch.no_grad():
            return torch.stack([residual_inf(h) for h in self.hidden(X, skip)], dim=-1)

    def san(self, i: int = 0, skip: bool = True) -> SAN:
        """Network ``i`` as a core ``SAN`` (float64), with or without skips."""
        _, L, H, d, _ = self.QK.shape
        cfg = SANConfig(n_layers=L, n_heads=H, d_model=d, d_qk=d, d_v=d, skip=skip)
        eye = torch.eye(d, dtype=torch.float64).expand(H, d, d)
        scale = math.sqrt(d / self.d_qk)  # the SAN divides by sqrt(d)
        return SAN.from_weights(
            cfg,
            [
                {
                    "W_Q": self.QK[i, l].detach() * scale,
                    "W_K": eye,
                    "W_V": self.W[i, l].detach(),
                    "W_O": eye,
                }
                for l in range(L)
            ],
        )

    def select(self, i) -> Stack:
        """The networks ``i`` (an index tensor or a slice) as a :class:`Stack`."""
        return Stack(self.QK[i].detach(), self.W[i].detach(), self.d_qk)


def construction(L: int, d: int, H: int, q: float, omega: float, signs=None) -> Stack:
    """One network of depth ``L``: every head ``W_QK = q I``, ``W_h = s_l omega I`` (``s_l = -1``,
    or ``signs``).

    With ``signs`` all ``-1`` it is the construction of chapter "A lower bound with skip
    connections", section 4 (``Omega = H omega``, ``k = 4 H q omega / sqrt(d)``); ``+1`` layers grow
    the residual instead (section 6).
    """
    L, d, H = check_int("L", L, minimum=1), check_int("d", d), check_int("H", H)
    check_cost(
        "L",
        L,
        MAX_LAYERS,
        unit="layers",
        alternative="the book's construction goes to 1024 layers; "
        "simplex_log10_ratios follows the construction exactly at any depth",
    )
    check_elements(
        "L * H * d * d", 2 * L * H * d * d, alternative="build a shallower or narrower construction"
    )
    q, omega = (
        check_positive_float("q", q, allow_zero=True),
        check_positive_float("omega", omega, allow_zero=True),
    )
    s = (
        torch.full((L,), -1.0, dtype=torch.float64)
        if signs is None
        else torch.as_tensor(signs, dtype=torch.float64)
    )
    if s.shape != (L,) or not bool(((s == 1) | (s == -1)).all()):
        raise ValueError(f"signs must hold L = {L} values, each +1 or -1")
    eye = torch.eye(d, dtype=torch.float64)
    QK = (q * eye).expand(1, L, H, d, d).clone()
    W = (omega * s[None, :, None, None, None] * eye).expand(1, L, H, d, d).clone()
    return Stack(QK, W, d)


def simplex_tokens(n: int, d: int, b0: float) -> torch.Tensor:
    """``n`` tokens at the vertices of a regular simplex centred at 0, ``(n, d)`` with ``||res||_inf
    = b0``.

    ``d >= n - 1``. Every token has the same norm and every pair the same inner product
    (``-|r|^2/(n-1)``), so attention with ``W_QK = q I`` is symmetric and doubly stochastic.
    The coordinates are those of the Helmert basis (column ``k``: ``(1, .., 1, -k, 0, ..) /
    sqrt(k (k + 1))``), the same on every machine, with exact zeros. Sizes over the library's
    memory or work caps are refused before anything is built.
    """
    n, d = check_int("n", n, minimum=2), check_int("d", d)
    if d < n - 1:
        raise ValueError(
            f"d must be at least n - 1 = {n - 1} for a regular simplex of n tokens, got {d}"
        )
    smaller = "build the simplex on fewer tokens (the book's has n = 4)"
    check_elements("n * (n + d)", 3 * n * n + n * d, alternative=smaller)
    b0 = check_positive_float("b0", b0)
    # the Helmert basis of the sum-zero subspace, written out (an SVD of the centring matrix, whose
    # n - 1 equal singular values leave the basis to the LAPACK build, made the input, and with
    # it every l1 size, depend on the machine): column k is (1, .., 1, -k, 0, ..)/sqrt(k (k + 1))
    i = torch.arange(n, dtype=torch.float64)[:, None]
    k = torch.arange(1, n, dtype=torch.float64)[None, :]
    X = torch.zeros(n, d, dtype=torch.float64)
    X[:, : n - 1] = torch.where(i < k, 1.0, torch.where(i == k, -k, 0.0)) / torch.sqrt(k * (k + 1))
    return X * (b0 / residual_inf(X))


def simplex_log10_ratios(
    signs, n: int, d: int, H: int, q: float, omega: float, b0: float
) -> np.ndarray:
    """``log10(b_l / b_0)``, ``l = 0..L``, of :func:`construction` (``signs``) on
    :func:`simplex_tokens`, exactly.

    The tokens stay a regular simplex: each layer multiplies the residual by ``1 + s_l H omega a``
    with ``a = (e^g - 1)/(e^g + n - 1)``, ``g = q rho^2 n / ((n-1) sqrt(d))`` and ``rho`` a token's
    l2 norm (chapter "A lower bound with skip connections", section 4). The scalar recursion is
    followed in logs, so ratios far below float64's range stay finite. A shrinking layer needs
    ``H omega <= 1`` (beyond it the factor changes sign).
    """
    n, d, H = check_int("n", n, minimum=2), check_int("d", d), check_int("H", H)
    q = check_positive_float("q", q, allow_zero=True)
    Om = H * check_positive_float("omega", omega, allow_zero=True)
    signs = np.atleast_1d(np.asarray(signs, dtype=float))
    check_cost(
        "signs",
        signs.size,
        10**7,
        unit="layers",
        alternative="follow the recursion on fewer layers",
    )
    if not np.isin(signs, (-1.0, 1.0)).all() or signs.ndim != 1:
        raise ValueError("signs must be a sequence of +1 (grow) and -1 (shrink)")
    if Om > 1 and (signs < 0).any():
        raise ValueError(f"a shrinking layer needs H * omega <= 1, got {Om:g}")
    log_rho = start = math.log(float(simplex_tokens(n, d, b0)[0].norm()))
    log_shrunk = math.log(1 - Om) if Om < 1 else -math.inf  # log of (1 - Om)
    out = [0.0]
    for s in signs:
        log_g = (
            math.log(q) + 2 * log_rho + math.log(n / ((n - 1) * math.sqrt(d)))
            if q > 0
            else -math.inf
        )
        if log_g > 700:
            raise ValueError(
                "the residual grew beyond what the recursion follows in float64 (g > e^700)"
            )
        g = math.exp(log_g)
        if s > 0:  # log(1 + Om a)
            log_rho += math.log1p(Om * -math.expm1(-g) / (1 + (n - 1) * math.exp(-g)))
        else:  # log(1 - Om a) = log((1 - Om) e^g + n - 1 + Om) - log(e^g + n - 1)
            log_rho += np.logaddexp(g + log_shrunk, math.log(n - 1 + Om)) - np.logaddexp(
                g, math.log(n - 1)
            )
        out.append((log_rho - start) / math.log(10))
    return np.array(out)


def random_networks(
    count: int,
    *,
    seed: int,
    batch: int = 100,
    max_n: int = 10,
    max_d: int = 10,
    max_H: int = 4,
    max_L: int = 12,
    omega_max: float = 0.5,
):
    """Random networks with skips in the theorem's regime, ``(Stack, X)`` in batches of ``batch``.

    Per batch: ``n`` in ``2..max_n`` tokens, width ``d`` in ``2..max_d``, ``H`` in ``1..max_H``
    heads, depth in ``1..max_L``; per network: ``W_QK`` Gaussian times a scale log-uniform in
    ``[1e-2, 1e2]`` (half of them ``q I`` plus noise), value maps Gaussian (half ``-I`` plus noise)
    rescaled to ``Omega`` in ``(0, omega_max)`` (``1/2``, or up to ``1`` for the theorem of
    section 7), most near ``omega_max``; inputs Gaussian with a residual scale
    and a mean log-uniform in ``[1e-2, 1e2]`` (a tenth of them regular simplices).
    """
    count, batch, seed = (
        check_int("count", count),
        check_int("batch", batch),
        check_seed("seed", seed),
    )
    max_n, max_d = check_int("max_n", max_n, minimum=2), check_int("max_d", max_d, minimum=2)
    max_H, max_L = check_int("max_H", max_H), check_int("max_L", max_L, maximum=MAX_LAYERS)
    omega_max = check_positive_float("omega_max", omega_max)
    if omega_max > 1:
        raise ValueError(f"omega_max must be at most 1 (the theorems' regimes), got {omega_max}")
    check_elements(
        "batch * max_L * max_H * max_d**2",
        4 * batch * max_L * max_H * max_d**2,
        alternative="use smaller batches or networks",
    )
    g = torch.Generator().manual_seed(seed)
    randint = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))  # noqa: E731
    logu = lambda *shape: 10 ** (4 * torch.rand(*shape, generator=g, dtype=torch.float64) - 2)  # noqa: E731
    done = 0
    while done < count:
        B = min(batch, count - done)
        n, d, H, L = randint(2, max_n), randint(2, max_d), randint(1, max_H), randint(1, max_L)
        eye, shape = torch.eye(d, dtype=torch.float64), (B, L, H, d, d)
        noise = lambda: torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(d)  # noqa: E731
        half = (torch.arange(B) % 2 == 0).to(torch.float64)[:, None, None, None, None]
        QK = (noise() + half * eye) * logu(B, 1, 1, 1, 1)
        W = noise() - half * eye
        target = (
            omega_max
            * (1 - torch.rand(B, L, 1, 1, 1, generator=g, dtype=torch.float64) ** 3)
            * (1 - 1e-9)
        )
        W = W / W.abs().sum(-1).amax(-1).sum(-1)[..., None, None, None] * target
        X = torch.randn(B, n, d, generator=g, dtype=torch.float64) * logu(B, 1, 1)
        X = X + torch.randn(B, 1, d, generator=g, dtype=torch.float64) * logu(B, 1, 1)
        if d >= n - 1:  # every tenth input a regular simplex of the same residual size
            idx = torch.arange(0, B, 10)
            X[idx] = torch.stack([simplex_tokens(n, d, float(residual_inf(X[i]))) for i in idx])
        yield Stack(QK, W, d), X
        done += B


@dataclass
class BoundCheck:
    """The bound against the measured residual: ``networks`` checked, ``pairs`` (network, depth)
    compared, ``violations`` (measured below the bound by more than ``1e-9`` relative), ``worst``:
    the smallest measured / bound over every pair (``inf`` when no pair was compared; a pair whose
    bound is 0, a fully collapsed input, counts as 1). ``a + b`` merges two checks, in either
    order."""

    networks: int
    pairs: int
    violations: int
    worst: float

    def __add__(self, other: BoundCheck) -> BoundCheck:
        return BoundCheck(
            self.networks + other.networks,
            self.pairs + other.pairs,
            self.violations + other.violations,
            float(np.fmin(self.worst, other.worst)),  # symmetric, and a NaN never wins
        )


def bound_check(stack: Stack, X, wide: bool = False) -> BoundCheck:
    """:func:`depth_bound` (``wide``: :func:`wide_depth_bound`, with the inputs' ``n``) at every
    depth of every network of ``stack`` (on ``X``, ``(B, n, d)``), against the forward pass's
    residual. Each network's ``k`` and ``Omega`` are its own (largest over layers)."""
    if not isinstance(stack, Stack):
        raise TypeError(
            f"stack must be a rankcollapse.lower_bound.Stack, got {type(stack).__name__}"
        )
    measured = stack.residuals(X)  # (B, L+1)
    k, omega = stack.constants()
    depths = range(measured.shape[1])
    if wide:
        bound = wide_depth_bound(measured[:, 0], k, omega, depths, X.shape[-2])
    else:
        bound = depth_bound(measured[:, 0], k, omega, depths)
    # depth 0 is the input itself, not compared; a collapsed input (bound 0) has ratio 1
    ratio = torch.where(bound > 0, measured / torch.where(bound > 0, bound, 1.0), 1.0)[:, 1:]
    worst = float(ratio.min()) if ratio.numel() else math.inf
    return BoundCheck(stack.QK.shape[0], ratio.numel(), int((ratio < 1 - 1e-9).sum()), worst)
