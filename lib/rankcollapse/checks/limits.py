"""Exercises of the chapter "What the theorem does not say"."""

from . import Exercise, Question, register  # noqa: F401

# REGION helperA
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
            (1, "One decade is where BERT, ALBERT and XLNet at initialisation sit (tens); MiniLM's curve lies higher."),
            (5, "Five decades is reached only in MiniLM's first layers, whose input has not yet collapsed; its "
                "smallest constant, in a collapsed layer, is lower."),
        ],
    )
)
# END REGION

# REGION helperB
# END REGION
