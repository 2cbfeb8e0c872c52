"""Exercises of the chapter "What the theorem does not say"."""

from . import Exercise, Question, register  # noqa: F401
import functools
import math

import torch


def _layer_constant(beta, gamma, d_qk):
    """c_l = 4 gamma_l beta_l H / sqrt(d_qk) with beta_l the largest head's beta (Theorem 2.3's beta)."""
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
        hint="c_l = 4 gamma_l beta_l H / sqrt(d_qk), with beta_l the largest head's beta in layer l and H the number "
             "of heads (beta's second axis).",
        mistakes=[
            (lambda beta, gamma, d_qk: 4 * gamma * beta.amax(dim=-1) / math.sqrt(d_qk),
             "The multi-head constant (the paper's Theorem 2.3) carries a factor H: the heads' contributions add up."),
            (lambda beta, gamma, d_qk: 4 * gamma * beta.mean(dim=-1) * beta.shape[-1] / math.sqrt(d_qk),
             "beta bounds every head: take the largest head's beta in each layer, not the mean."),
            (lambda beta, gamma, d_qk: 4 * gamma * beta.amax(dim=-1) * beta.shape[-1] / d_qk,
             "The logits are divided by sqrt(d_qk), and so is the constant: is your square root there?"),
            (lambda beta, gamma, d_qk: 4 * gamma * beta.sum(dim=-1) * beta.shape[-1] / math.sqrt(d_qk),
             "The factor H already counts the heads: summing the heads' beta as well counts them twice."),
        ],
    )
)


@functools.lru_cache(maxsize=1)
def _minilm_orders():
    """Orders of magnitude of MiniLM's smallest per-layer constant above 1 (nearest of 1, 3, 5)."""
    from ..real import condition, load
    from ..theory import layer_constants

    model = load("all-MiniLM-L6-v2", True)
    c = layer_constants(condition.pure_attention(model), condition.real_inputs(model, 1, 16))
    return min((1, 3, 5), key=lambda k: abs(k - math.log10(float(c.min()))))


register(
    Question(
        id="limits.read_constants",
        kind="read",
        answer=_minilm_orders,
        choices=(1, 3, 5),
        hint="Read MiniLM's lowest point on the log axis and count the decades down to the dashed threshold at 1.",
        mistakes=[
            (1, "One or two decades is where the models at initialisation sit (tens to hundreds); MiniLM's curve lies higher."),
            (5, "Five decades is reached only in MiniLM's first layers, whose input has not yet collapsed; its "
                "smallest constant, in a collapsed layer, is lower."),
        ],
    )
)
# section 2 and 4 the stable rank to write, a prediction about a spiked matrix
import torch  # noqa: E402


def _stable_rank_cases():
    gen = torch.Generator().manual_seed(2116)
    cases = []
    for m, k in ((6, 6), (48, 24), (5, 9)):
        cases.append((torch.randn(m, k, generator=gen, dtype=torch.float64),))
    u, v = torch.randn(10, 1, generator=gen, dtype=torch.float64), torch.randn(1, 7, generator=gen, dtype=torch.float64)
    cases.append((u @ v + 1e-2 * torch.randn(10, 7, generator=gen, dtype=torch.float64),))  # nearly rank one
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
        hint="The squared Frobenius norm (the sum of all squared singular values) over the squared spectral "
             "norm (the largest singular value, squared).",
        mistakes=[
            (lambda W: float(_svals(W).sum() / _svals(W)[0]),
             "That is the nuclear norm over the spectral norm: square the singular values before adding them, "
             "and square the largest too."),
            (lambda W: float(_svals(W).square().sum().sqrt() / _svals(W)[0]),
             "That is ||W||_F / ||W||_2; the stable rank is the ratio of the squares."),
            (lambda W: float(torch.linalg.matrix_rank(W)),
             "That is the rank, which counts every non-zero singular value whatever its size; the stable rank "
             "weighs them by their energy and changes continuously."),
            (lambda W: float(_svals(W)[0] ** 2 / _svals(W).square().sum()),
             "Upside down: the stable rank is at least 1 (Frobenius over spectral)."),
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
    sr = lambda A: float((np.linalg.svd(A, compute_uv=False) ** 2).sum() / np.linalg.norm(A, 2) ** 2)  # noqa: E731
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
        hint="Which of the two norms does a spike along the top singular direction change the most?",
        mistakes=[
            ("changes by less than half",
             "The rank does not change (still 24), but the stable rank is not the rank: the spike quadruples the "
             "largest singular value, so the squared spectral norm in the denominator grows 16 times while the "
             "squared Frobenius norm grows far less."),
            ("rises", "The spike adds energy, but all of it along the one direction that sets ||W||_2: the "
                      "energy is less spread, not more."),
        ],
    )
)
