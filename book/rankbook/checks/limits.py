"""Exercises of the chapter "What the theorem does not say"."""

import functools
import math

import torch

from .questions import Question  # noqa: F401
from .registry import Exercise, Rubric, register  # noqa: F401


def _layer_constant(beta, gamma, d_qk):
    """c_l = 4 gamma_l beta_l H / sqrt(d_qk) with beta_l the largest head's beta (the beta of the
    paper's multi-head bound, as reported)."""
    H = beta.shape[-1]
    return 4 * gamma * beta.amax(dim=-1) * H / math.sqrt(d_qk)


def _layer_constant_cases():
    gen = torch.Generator().manual_seed(1604)
    cases = []
    for L, H, d_qk in ((1, 1, 4), (3, 4, 16), (6, 12, 32), (2, 3, 64)):
        beta = torch.rand(L, H, generator=gen, dtype=torch.float64) * 5 + 0.1
        gamma = 1 + torch.rand(L, generator=gen, dtype=torch.float64) * 3
        cases.append((beta, gamma, d_qk))
    return cases


register(
    Exercise(
        id="limits.layer_constant",
        reference=_layer_constant,
        cases=_layer_constant_cases,
        hint="c_l = 4 gamma_l beta_l H / sqrt(d_qk), with beta_l the largest head's beta in layer "
        "l and H the number "
        "of heads (beta's second axis).",
        mistakes=[
            (
                lambda beta, gamma, d_qk: 4 * gamma * beta.amax(dim=-1) / math.sqrt(d_qk),
                (
                    "The multi-head constant (the paper's multi-head bound, as the collapse "
                    "chapter reports it) carries a factor H: the heads' contributions add up."
                ),
            ),
            (
                lambda beta, gamma, d_qk: (
                    4 * gamma * beta.mean(dim=-1) * beta.shape[-1] / math.sqrt(d_qk)
                ),
                "beta bounds every head: take the largest head's beta in each layer, not the mean.",
            ),
            (
                lambda beta, gamma, d_qk: 4 * gamma * beta.amax(dim=-1) * beta.shape[-1] / d_qk,
                (
                    "The logits are divided by sqrt(d_qk), and so is the constant: is your square "
                    "root there?"
                ),
            ),
            (
                lambda beta, gamma, d_qk: (
                    4 * gamma * beta.sum(dim=-1) * beta.shape[-1] / math.sqrt(d_qk)
                ),
                (
                    "The factor H already counts the heads: summing the heads' beta as well counts "
                    "them twice."
                ),
            ),
        ],
    )
)


@functools.lru_cache(maxsize=1)
def _minilm_orders():
    """Orders of magnitude of MiniLM's smallest per-layer constant above 1 (nearest of 1, 3, 5)."""
    from rankcollapse.real import condition, load
    from rankcollapse.theory import layer_constants

    model = load("all-MiniLM-L6-v2", True)
    c = layer_constants(condition.pure_attention(model), condition.real_inputs(model, 1, 16))
    return min((1, 3, 5), key=lambda k: abs(k - math.log10(float(c.min()))))


register(
    Question(
        id="limits.read_constants",
        kind="read",
        answer=_minilm_orders,
        choices=(1, 3, 5),
        hint=(
            "Read MiniLM's lowest point on the log axis and count the decades down to the dashed "
            "threshold at 1."
        ),
        mistakes=[
            (
                1,
                (
                    "One or two decades is about where the models at initialisation sit; "
                    "MiniLM's curve lies higher."
                ),
            ),
            (
                5,
                "Five decades is reached only in MiniLM's first layers, whose input has not yet "
                "collapsed; its "
                "smallest constant, in a collapsed layer, is lower.",
            ),
        ],
    )
)
# section 2 and 4 the stable rank to write, a prediction about a spiked matrix


def _stable_rank_cases():
    gen = torch.Generator().manual_seed(2116)
    cases = []
    for m, k in ((6, 6), (48, 24), (5, 9)):
        cases.append((torch.randn(m, k, generator=gen, dtype=torch.float64),))
    u, v = (
        torch.randn(10, 1, generator=gen, dtype=torch.float64),
        torch.randn(1, 7, generator=gen, dtype=torch.float64),
    )
    cases.append(
        (u @ v + 1e-2 * torch.randn(10, 7, generator=gen, dtype=torch.float64),)
    )  # nearly rank one
    return cases


def _stable_rank(W):
    s = torch.linalg.svdvals(W)
    return float((s**2).sum() / s[0] ** 2)


def _svals(W):
    return torch.linalg.svdvals(W)


register(
    Exercise(
        id="limits.stable_rank",
        reference=_stable_rank,
        cases=_stable_rank_cases,
        hint="The squared Frobenius norm (the sum of all squared singular values) over the squared "
        "spectral "
        "norm (the largest singular value, squared).",
        mistakes=[
            (
                lambda W: float(_svals(W).sum() / _svals(W)[0]),
                "That is the nuclear norm over the spectral norm: square the singular values "
                "before adding them, "
                "and square the largest too.",
            ),
            (
                lambda W: float(_svals(W).square().sum().sqrt() / _svals(W)[0]),
                "That is ||W||_F / ||W||_2; the stable rank is the ratio of the squares.",
            ),
            (
                lambda W: float(torch.linalg.matrix_rank(W)),
                "That is the rank, which counts every non-zero singular value whatever its size; "
                "the stable rank "
                "weighs them by their energy and changes continuously.",
            ),
            (
                lambda W: float(_svals(W)[0] ** 2 / _svals(W).square().sum()),
                "Upside down: the stable rank is at least 1 (Frobenius over spectral).",
            ),
        ],
    )
)


def _spiked():
    """The stable rank of a 48 x 24 Gaussian matrix (numpy seed 0) and of the same matrix plus
    three times its top singular direction (the chapter's measuring cell)."""
    import numpy as np

    W = np.random.default_rng(0).standard_normal((48, 24))
    u, s, vt = np.linalg.svd(W)
    spiked = W + 3 * s[0] * np.outer(u[:, 0], vt[0])
    sr = lambda A: float(
        (np.linalg.svd(A, compute_uv=False) ** 2).sum() / np.linalg.norm(A, 2) ** 2
    )  # noqa: E731
    return sr(W), sr(spiked)


def _spike_answer():
    before, after = _spiked()
    if after < before / 2:
        return "falls by more than half"
    return "rises" if after > before else "changes by less than half"


register(
    Question(
        id="limits.predict_spike",
        kind="predict",
        answer=_spike_answer,
        choices=("falls by more than half", "changes by less than half", "rises"),
        hint="Which of the two norms does a spike along the top singular direction "
        "change the most?",
        mistakes=[
            (
                "changes by less than half",
                "The rank does not change (still 24), but the stable rank is not the rank: the "
                "spike quadruples the "
                "largest singular value, so the squared spectral norm in the denominator grows 16 "
                "times while the "
                "squared Frobenius norm grows far less.",
            ),
            (
                "rises",
                "The spike adds energy, but all of it along the one direction that sets ||W||_2: "
                "the "
                "energy is less spread, not more.",
            ),
        ],
    )
)

register(
    Rubric(
        label="ex-limits-prove",
        criteria=(
            (
                2,
                "u_l <= u_{l-1}^3 from the substitution, and u_L <= u_0^{3^L} by induction using "
                "that "
                "x -> x^3 is increasing; back to r_L <= c^{(3^L - 1)/2} r_0^{3^L}.",
            ),
            (
                1,
                "The bound c^{-1/2} u_0^{3^L} tends to zero if and only if u_0 = sqrt(c) r_0 < 1 "
                "(all three "
                "cases of u_0).",
            ),
            (
                1,
                "c < 1 suffices when r_0 <= 1; a pair with c < 1 and a growing bound, and one "
                "with c > 1 "
                "and a collapsing bound.",
            ),
            (
                2,
                "The smallest depth: L > log_3(ln(1/(tau sqrt c)) / ln(1/u_0)), and its growth "
                "like "
                "log_3(1/eta) near the threshold.",
            ),
        ),
        wrong_turns=(
            (
                "Concluding that c < 1 is necessary, or sufficient for every input: the examples' "
                "point is lost."
            ),
            (
                "Forgetting the factor c^{-1/2} (writing the bound as u_0^{3^L}): 1 point off the "
                "first criterion."
            ),
            "Solving for the depth with one logarithm (log_3 of 1/tau): the doubly exponential "
            "rate needs two; "
            "1 of the last 2 points.",
        ),
    )
)


# the depth the cascade's bound needs, the numerical half of ex-limits-prove: the bound
# c^((3^L - 1)/2) r0^(3^L) = c^(-1/2) (sqrt(c) r0)^(3^L), in logarithms (3^L overflows quickly)

DEPTH_SEARCH = (
    200  # far beyond any depth the cases need (3^200 ln(1/u0) is huge for u0 < 1 - 1e-15)
)


def _log_bound(c, r0, L):
    return 3**L * math.log(math.sqrt(c) * r0) - 0.5 * math.log(c)


def _depth_needed(c, r0, tau):
    for L in range(DEPTH_SEARCH + 1):
        if _log_bound(c, r0, L) < math.log(tau):
            return L
        if math.sqrt(c) * r0 >= 1:  # the bound never falls: depth 0 was the only chance
            return None
    return None


def _depth_cases():
    cases = [
        (c, r0, tau)
        for c in (0.25, 0.5, 2.0, 4.0)
        for r0 in (0.1, 0.45, 0.9, 2.0)
        for tau in (1e-3, 1e-12)
    ]
    # near the threshold sqrt(c) r0 = 1: the depth grows like log_3(1/eta)
    cases += [(1.0, 1 - eta, 1e-6) for eta in (1e-2, 1e-4, 1e-8)]
    return cases


def _off_by_one(c, r0, tau):
    L = _depth_needed(c, r0, tau)
    return None if L is None else L + 1


def _no_constant(c, r0, tau):
    u0 = math.sqrt(c) * r0
    if u0 >= 1:
        return 0 if u0 < tau else None
    return next(L for L in range(DEPTH_SEARCH + 1) if 3**L * math.log(u0) < math.log(tau))


register(
    Exercise(
        id="limits.depth_needed",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_depth_needed,
        cases=_depth_cases,
        hint="The bound is c^(-1/2) u0^(3^L) with u0 = sqrt(c) r0: take logarithms, "
        "3^L ln(u0) - ln(c)/2 < ln(tau); it falls only when u0 < 1.",
        mistakes=[
            (
                lambda c, r0, tau: None if c >= 1 else _depth_needed(c, r0, tau),
                (
                    "The bound falls when sqrt(c) r0 < 1, not when c < 1: with c = 4 and r0 = 0.1 "
                    "it collapses."
                ),
            ),
            (
                _off_by_one,
                "Depth 0 is the input itself, whose bound is r0: count the layers from 0.",
            ),
            (
                _no_constant,
                "The bound is c^(-1/2) (sqrt(c) r0)^(3^L): the factor c^(-1/2) is missing.",
            ),
        ],
    )
)
