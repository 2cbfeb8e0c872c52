"""Masks do not prevent collapse, local masks slow it; LayerNorm can (Wu et al. 2024), measured
small.

Wu, Ajorlou, Wang, Jegelka and Jadbabaie ("On the role of attention masks and LayerNorm in
transformers", NeurIPS 2024) state in their abstract that pure masked attention still collapses
exponentially to a rank-one subspace, that sparse or local masks provably slow the collapse, and
that with LayerNorm and suitable value matrices the attention dynamics have equilibria of every
rank between one and full. Two measurements:

- :func:`mask_study`: the relative residual through depth of random pure-attention networks at
  the usual initialisation under each mask of :data:`MASKS` (full, causal, a sliding window, a
  causal sliding window; :attr:`rankcollapse.san.SANConfig.window`), with the fitted rate
  (:func:`rankcollapse.stats.log_slope`, decades per layer) and the depth where it reaches
  ``1e-6`` (:func:`rankcollapse.stats.first_below`);
- :func:`ln_counterexample`: the book's own construction of such equilibria: tokens at the
  vertices of a ``k``-cube orthogonal to the all-ones feature vector (:func:`cube_tokens`), sharp
  attention and the identity value matrix (:func:`sharp_attention_network`); by the cube's
  symmetry :math:`P X = c X`, ``c > 0``, and post-LayerNorm restores :math:`X` (up to ``eps``).

Above the core (``residual``, ``san``, ``stats``). The result objects return numbers; the
sentences that state them are the chapter's. Book: chapter "After the paper", section 2.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import (
    as_tokens,
    check_bool,
    check_generator,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from ..residual import relative_residual, through_depth
from ..san import SAN, SANConfig
from ..stats import first_below, geometric_mean, log_slope

__all__ = [
    "MASKS",
    "FIT_FLOOR",
    "LEVEL",
    "DEEPER",
    "mask_options",
    "window_mixing_rate",
    "MaskStudy",
    "mask_study",
    "cube_tokens",
    "sharp_attention_network",
    "numerical_rank",
    "LNCounterexample",
    "ln_counterexample",
]

MASKS = ("full", "causal", "window", "causal window")
# the rate is fitted on the layers whose relative residual is above this (float64 floors near 1e-16)
FIT_FLOOR = 1e-12
LEVEL = 1e-6  # "collapsed": the relative residual below this
# the LayerNorm construction's random value matrix is also run this many times deeper
DEEPER = 4


def mask_options(mask: str, window: int) -> dict:
    """The :class:`~rankcollapse.san.SANConfig` fields of ``mask`` (one of :data:`MASKS`) with a
    sliding window of ``window`` tokens."""
    if not isinstance(mask, str) or mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    window = check_int("window", window)
    return {
        "full": {},
        "causal": dict(causal=True),
        "window": dict(window=window),
        "causal window": dict(causal=True, window=window),
    }[mask]


@dataclass
class MaskStudy:
    """Relative residual through depth per mask (section 2): ``curves[mask]`` is
    ``(samples, L+1)``."""

    curves: dict
    window: int
    n_tokens: int
    samples: int

    def typical(self, mask: str) -> np.ndarray:
        """The geometric mean over networks, ``(L+1,)``."""
        return geometric_mean(self.curves[mask], floor=1e-300)

    def _resolved(self, mask: str) -> np.ndarray:
        """The typical curve up to the layer where it first falls below :data:`FIT_FLOOR`, where
        float64 still resolves it."""
        y = self.typical(mask)
        return y[: first_below(y, FIT_FLOOR, default=len(y))]

    def rate(self, mask: str) -> float:
        """Fitted decades per layer (a negative slope of ``log10`` of the typical curve) over the
        layers before it first falls below :data:`FIT_FLOOR`; ``nan`` with fewer than two."""
        y = self._resolved(mask)
        return (
            log_slope(np.arange(len(y), dtype=float), y, base=10) if len(y) >= 2 else float("nan")
        )

    @property
    def n_layers(self) -> int:
        """The depth ``L`` of the networks (every curve has ``L + 1`` points)."""
        return next(iter(self.curves.values())).shape[1] - 1

    def depth_to_collapse(self, mask: str):
        """The first layer where the typical relative residual is below :data:`LEVEL`, or None."""
        return first_below(self.typical(mask), LEVEL)

    def collapsed(self) -> list:
        """The masks whose residual reaches :data:`LEVEL` within the run's layers, in order."""
        return [m for m in self.curves if self.depth_to_collapse(m) is not None]

    def drops(self, mask: str) -> np.ndarray:
        """The decades lost by the typical curve at each layer (``log10`` at layer ``l-1`` minus
        ``log10`` at layer ``l``), over the layers before it first falls below :data:`FIT_FLOOR`."""
        return -np.diff(np.log10(self._resolved(mask)))

    def ordering_holds(self) -> bool:
        """The paper's ordering, in fitted rates: full attention falls fastest, and the local masks
        (``"window"``, ``"causal window"``, those measured) slower than the causal mask."""
        r = {m: -self.rate(m) for m in self.curves}
        full, causal = r.get("full", float("nan")), r.get("causal", float("nan"))
        local = [r[m] for m in ("window", "causal window") if m in r]
        return all(full > r[m] for m in r if m != "full") and all(v < causal for v in local)

    def falls_everywhere(self) -> bool:
        """Every mask's residual falls (a positive fitted rate): no mask stops the decline."""
        return all(-self.rate(m) > 0 for m in self.curves)

    def collapses_everywhere(self) -> bool:
        """Every mask's residual reaches :data:`LEVEL` within the run's layers."""
        return len(self.collapsed()) == len(self.curves)


def window_mixing_rate(n_tokens: int, window: int) -> float:
    """Decades per layer at which attention that averages, with equal weights, the tokens
    ``|i - j| < window`` evens out the slowest difference between ``n_tokens`` tokens: ``-log10`` of
    the second largest eigenvalue modulus of that row-stochastic matrix (a diffusion along the
    sequence). The book's heuristic for the two-sided
    window's late rate, section 2."""
    n, w = check_int("n_tokens", n_tokens, minimum=2), check_int("window", window)
    i = np.arange(n)
    seen = (np.abs(i[:, None] - i[None, :]) < w).astype(float)
    modulus = np.sort(np.abs(np.linalg.eigvals(seen / seen.sum(1, keepdims=True))))[::-1]
    return float(-np.log10(modulus[1])) if modulus[1] > 0 else float("inf")


def mask_study(
    *,
    masks=MASKS,
    window: int,
    n_layers: int,
    n_heads: int,
    d_model: int,
    n_tokens: int,
    samples: int,
    seed: int,
    generator,
) -> MaskStudy:
    """``samples`` pure-attention networks per mask (seeds ``seed + s``, the same weights for every
    mask) on standard normal inputs ``(n_tokens, d_model)`` drawn from ``generator``."""
    masks = tuple(masks)
    if not masks:
        raise ValueError("masks must name at least one mask")
    options = {m: mask_options(m, window) for m in masks}
    n_layers, n_heads, d_model = (
        check_int("n_layers", n_layers),
        check_int("n_heads", n_heads),
        check_int("d_model", d_model),
    )
    n_tokens, samples, seed = (
        check_int("n_tokens", n_tokens, minimum=2),
        check_int("samples", samples),
        check_seed("seed", seed),
    )
    generator = check_generator("generator", generator)
    inputs = [
        torch.randn(n_tokens, d_model, dtype=torch.float64, generator=generator)
        for _ in range(samples)
    ]
    curves = {}
    for mask in masks:
        cfg = SANConfig(n_layers=n_layers, n_heads=n_heads, d_model=d_model, **options[mask])
        with torch.no_grad():
            curves[mask] = np.array(
                [
                    through_depth(SAN(cfg, seed=derive_seed(seed, s))(X).hidden_states).numpy()
                    for s, X in enumerate(inputs)
                ]
            )
    return MaskStudy(curves, check_int("window", window), n_tokens, samples)


# ------------------------------------------------------------------ LayerNorm's equilibria


def cube_tokens(rank: int, d_model: int, generator) -> torch.Tensor:
    """The ``2^rank`` vertices of a cube, as tokens ``(2^rank, d_model)`` (float64).

    Row ``s`` is :math:`\\sqrt{d/k}\\sum_g s_g u_g` for the sign vector ``s`` in
    :math:`\\{-1, 1\\}^k`, ``u_1..u_k`` orthonormal and orthogonal to the all-ones feature vector (a
    random such frame from ``generator``): every row has feature mean 0 and variance 1, so LayerNorm
    (gain 1, shift 0) leaves it as it is (up to ``eps``). The matrix has rank ``k``;
    ``k <= d_model - 1`` and at most 10.
    """
    d = check_int("d_model", d_model, minimum=2)
    k = check_int("rank", rank, maximum=min(d - 1, 10))
    A = torch.randn(d, k, dtype=torch.float64, generator=check_generator("generator", generator))
    U, _ = torch.linalg.qr(A - A.mean(dim=0))
    signs = torch.tensor(list(itertools.product((-1.0, 1.0), repeat=k)), dtype=torch.float64)
    return math.sqrt(d / k) * signs @ U.T


def sharp_attention_network(
    d_model: int, n_layers: int, beta: float, *, layernorm: bool, value=None
) -> SAN:
    """One head, shared weights: logits :math:`\\beta\\, x_i^\\top x_j / d`, value map ``value``
    ``(d, d)`` (identity by default; :math:`W_V = ` ``value``, :math:`W_O = I`), post-LayerNorm
    (gain 1, shift 0) when ``layernorm``, no skip, no MLP."""
    d = check_int("d_model", d_model, minimum=2)
    beta = check_positive_float("beta", beta)
    layernorm = check_bool("layernorm", layernorm)
    ln = "post" if layernorm else "none"
    L = check_int("n_layers", n_layers)
    cfg = SANConfig(n_layers=L, n_heads=1, d_model=d, d_qk=d, d_v=d, layernorm=ln, shared=True)
    eye = torch.eye(d, dtype=torch.float64)
    if value is None:
        value = eye
    elif not isinstance(value, torch.Tensor) or value.shape != (d, d):
        raise ValueError(
            f"value must be a ({d}, {d}) tensor, got "
            f"{getattr(value, 'shape', type(value).__name__)}"
        )
    s = math.sqrt(beta / math.sqrt(d))  # W_Q W_K^T / sqrt(d_qk) = (beta / d) I
    weights = dict(
        W_Q=(s * eye)[None], W_K=(s * eye)[None], W_V=value.double()[None], W_O=eye[None]
    )
    if layernorm:
        weights.update(
            ln1_gain=torch.ones(d, dtype=torch.float64),
            ln1_shift=torch.zeros(d, dtype=torch.float64),
        )
    return SAN.from_weights(cfg, [weights])


def numerical_rank(X, rtol: float = 1e-8) -> int:
    """The number of singular values of ``X`` ``(n, d)`` above ``rtol`` times the largest (0 for
    ``X = 0``): the dimension of the subspace the tokens span."""
    X = as_tokens("X", X, max_batch_dims=0)
    rtol = check_positive_float("rtol", rtol)
    s = torch.linalg.svdvals(X)
    return 0 if s[0] == 0 else int((s > rtol * s[0]).sum())


@dataclass
class LNCounterexample:
    """Section 2's LayerNorm construction. ``rows``: one dict per rank ``k`` with the rank and
    relative residual after ``n_layers`` for three runs (``"ln"``: the construction;
    ``"ln_random_value"``: with LayerNorm but a random value matrix; ``"ln_perturbed"``: the
    construction from a perturbed start), ``"ln_random_value_deep"`` (the random value matrix after
    :data:`DEEPER` times ``n_layers``), and, for the same weights without LayerNorm,
    ``"no_ln_shrink"`` (its residual after ``n_layers`` over its residual at the input: the paper's
    measure), ``"no_ln_depth"`` (the first layer where that ratio is below :data:`LEVEL`) and
    ``"no_ln_shape"`` (the smallest relative residual over the layers before it, where float64
    resolves the attention), ``"moved"`` (how far the construction's tokens moved after
    ``n_layers``, relative Frobenius distance), ``"defect"`` (how far one layer moves them: about
    ``eps/2``) and ``"self_weight"`` (the attention a token pays itself, the mean diagonal of
    ``P``)."""

    rows: list
    d_model: int
    n_layers: int
    beta: float
    noise: float

    def holds(self) -> bool:
        """Every cube is an equilibrium of one layer (up to LayerNorm's ``eps``), the post-LN
        network never ends at rank one, and the same weights without LayerNorm collapse in the
        paper's sense (the residual below :data:`LEVEL` of its start)."""
        return self.no_ln_collapses() and all(
            r["defect"] < 1e-4 and r["ln"][0] >= 2 for r in self.rows
        )

    def no_ln_collapses(self) -> bool:
        """Without LayerNorm every cube's residual falls below :data:`LEVEL` of its start."""
        return all(r["no_ln_shrink"] < LEVEL for r in self.rows)

    def kept(self) -> list:
        """The ranks the post-LN network still has, exactly, after ``n_layers``."""
        return [r["k"] for r in self.rows if r["ln"][0] == r["k"]]

    def summary(self) -> dict:
        """The numbers section 2 states, over the cubes: ``ranks`` and ``kept`` (lists), ``defect``
        (the largest), ``moved`` (the largest), ``self_min``/``self_max`` (the attention a token
        pays itself), ``no_ln_depth`` (the latest first layer below :data:`LEVEL` without LayerNorm;
        ``None`` if some cube never gets there), ``no_ln_shape`` (the smallest); random value
        matrix: ``random_rank_max``, ``random_res_min``, ``random_ranks`` (one per cube), and after
        :data:`DEEPER` times the depth ``random_rank_max_deep``, ``random_res_min_deep``;
        ``perturbed_rank_min``/``_max``/``perturbed_res_min`` (starts moved by ``noise``);
        ``eps``."""
        rows = self.rows
        depths = [r["no_ln_depth"] for r in rows]
        return dict(
            ranks=[r["k"] for r in rows],
            kept=self.kept(),
            defect=max(r["defect"] for r in rows),
            moved=max(r["moved"] for r in rows),
            self_min=min(r["self_weight"] for r in rows),
            self_max=max(r["self_weight"] for r in rows),
            no_ln_depth=None if any(d is None for d in depths) else max(depths),
            no_ln_shape=min(r["no_ln_shape"] for r in rows),
            random_rank_max=max(r["ln_random_value"][0] for r in rows),
            random_res_min=min(r["ln_random_value"][1] for r in rows),
            random_ranks=[r["ln_random_value"][0] for r in rows],
            random_rank_max_deep=max(r["ln_random_value_deep"][0] for r in rows),
            random_res_min_deep=min(r["ln_random_value_deep"][1] for r in rows),
            perturbed_rank_min=min(r["ln_perturbed"][0] for r in rows),
            perturbed_rank_max=max(r["ln_perturbed"][0] for r in rows),
            perturbed_res_min=min(r["ln_perturbed"][1] for r in rows),
            eps=SANConfig().ln_eps,
        )


def ln_counterexample(
    *, ranks, d_model: int, n_layers: int, beta: float, noise: float, generator
) -> LNCounterexample:
    """Run :func:`sharp_attention_network` for ``n_layers`` on :func:`cube_tokens` of each rank in
    ``ranks``, with and without LayerNorm, with a random value matrix (standard deviation
    ``1/sqrt(d)``, the usual initialisation of ``W_V W_O``'s scale) and from a start moved by
    Gaussian noise of standard deviation ``noise``; everything random is drawn from
    ``generator``."""
    ranks = tuple(check_int("ranks", k) for k in ranks)
    if not ranks:
        raise ValueError("ranks must list at least one rank")
    noise = check_positive_float("noise", noise, allow_zero=True)
    generator = check_generator("generator", generator)
    d = check_int("d_model", d_model, minimum=2)
    rows = []
    for k in ranks:
        X = cube_tokens(k, d, generator)
        value = torch.randn(d, d, dtype=torch.float64, generator=generator) / math.sqrt(d)
        moved = X + noise * torch.randn(X.shape, dtype=torch.float64, generator=generator)

        def rank_res(Y):
            return numerical_rank(Y) if Y.abs().max() > 0 else 0, float(relative_residual(Y))

        def last(layernorm, start, v=None):
            with torch.no_grad():
                out = sharp_attention_network(d, n_layers, beta, layernorm=layernorm, value=v)(
                    start
                )
            return out, rank_res(out.last_hidden_state)

        out, ln = last(True, X)
        with torch.no_grad():
            once = sharp_attention_network(d, 1, beta, layernorm=True)(X).last_hidden_state
            bare = sharp_attention_network(d, n_layers, beta, layernorm=False)(X).hidden_states
            # the random value matrix, continued to DEEPER times the depth (its first n_layers
            # layers are the run's)
            random = sharp_attention_network(
                d, DEEPER * n_layers, beta, layernorm=True, value=value
            )(X).hidden_states
        # without LayerNorm: each layer maps the cube to c X, so its shape (relative residual) is
        # kept exactly and only its size falls; once the logits fall below float64's resolution the
        # attention is exactly uniform and rounding merges the tokens. So the size is measured (the
        # paper's residual), and the shape only over the layers whose size is above LEVEL of the
        # start.
        size = through_depth(bare, "residual")
        size = (size / size[0]).numpy()
        resolved = size > LEVEL
        shape = through_depth(bare, "relative").numpy()[resolved]
        rows.append(
            dict(
                k=k,
                ln=ln,
                defect=float((once - X).norm() / X.norm()),
                no_ln_shrink=float(size[-1]),
                no_ln_depth=first_below(size, LEVEL),
                no_ln_shape=float(shape.min()),
                ln_random_value=rank_res(random[n_layers]),
                ln_random_value_deep=rank_res(random[-1]),
                ln_perturbed=last(True, moved)[1],
                moved=float((out.last_hidden_state - X).norm() / X.norm()),
                self_weight=float(out.attentions[0].diagonal(dim1=-2, dim2=-1).mean()),
            )
        )
    return LNCounterexample(rows, d, n_layers, float(beta), noise)
