"""Exercises of the chapter "Pure attention collapses"."""

import math

import torch

from rankcollapse.residual import composite_norm, norm_1, norm_inf, res

from .questions import Question
from .registry import Exercise, Rubric, register


def _cascade(c, r0, L):
    return c ** ((3**L - 1) / 2) * r0 ** (3**L)


def _cascade_cases():
    return [(c, r0, L) for c in (0.5, 1.0, 2.0) for r0 in (0.3, 0.9, 1.0) for L in (0, 1, 2, 3)]


register(
    Exercise(
        id="collapse.cascade",
        reference=_cascade,
        cases=_cascade_cases,
        hint=(
            "Unroll r_l <= c r_{l-1}^3 from the input: each earlier layer's constant is cubed by "
            "every later layer."
        ),
        mistakes=[
            (
                lambda c, r0, L: c**L * r0 ** (3**L),
                "The constants cascade too: r_2 <= c (c r_0^3)^3 = c^4 r_0^9, not c^2 r_0^9.",
            ),
            (
                lambda c, r0, L: c ** (3**L) * r0 ** (3**L),
                "Count the constants: c^(1 + 3 + ... + 3^(L-1)) = c^((3^L - 1)/2).",
            ),
            (
                lambda c, r0, L: c ** ((3**L - 1) / 2) * r0 ** (3 * L),
                "The residual is cubed once per layer: the exponent is 3^L, not 3L.",
            ),
        ],
    )
)


def _beta_head(W_Q, W_K, W_V, W_O):
    W_QK, W = W_Q @ W_K.T, W_V @ W_O
    return norm_1(W_QK) * torch.sqrt(norm_1(W) * norm_inf(W))


def _beta_cases():
    gen = torch.Generator().manual_seed(2103)
    cases = []
    for d, dqk, dv in ((4, 2, 3), (6, 6, 2), (5, 3, 5)):
        r = lambda *s: torch.randn(*s, generator=gen, dtype=torch.float64)  # noqa: E731
        cases.append((r(d, dqk), r(d, dqk) * 3, r(d, dv), r(dv, d) * 0.5))
    return cases


register(
    Exercise(
        id="collapse.beta",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_beta_head,
        cases=_beta_cases,
        hint=(
            "beta = ||W_Q W_K^T||_1 * ||W_V W_O||_{1,inf}: the largest column sum, then the "
            "composite norm sqrt(||.||_1 ||.||_inf)."
        ),
        mistakes=[
            (
                lambda W_Q, W_K, W_V, W_O: (
                    norm_1(W_K @ W_Q.T) * torch.sqrt(norm_1(W_V @ W_O) * norm_inf(W_V @ W_O))
                ),
                "The logits are X W_Q (X W_K)^T = X (W_Q W_K^T) X^T: W_QK = W_Q W_K^T, not its "
                "transpose "
                "(whose largest column sum is W_QK's largest row sum).",
            ),
            (
                lambda W_Q, W_K, W_V, W_O: (
                    norm_1(W_Q @ W_K.T) * norm_1(W_V @ W_O) * norm_inf(W_V @ W_O)
                ),
                "Is your square root there? The composite norm is sqrt(||W||_1 ||W||_inf).",
            ),
            (
                lambda W_Q, W_K, W_V, W_O: (
                    norm_1(W_Q @ W_K.T) * torch.sqrt(norm_1(W_V) * norm_inf(W_V))
                ),
                "The head's value map includes its slice of the output projection: W = W_V W_O.",
            ),
        ],
    )
)


def _centred_output(P, R, W):
    pbar = P.mean(dim=-2, keepdim=True)
    return (P - pbar) @ R @ W


def _centred_cases():
    gen = torch.Generator().manual_seed(3)
    cases = []
    for n, d in ((3, 2), (5, 4), (7, 3)):
        P = torch.softmax(torch.randn(n, n, generator=gen, dtype=torch.float64) * 2, dim=-1)
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        R = X - X.mean(dim=0)
        W = torch.randn(d, d, generator=gen, dtype=torch.float64)
        cases.append((P, R, W))
    return cases


register(
    Exercise(
        id="collapse.centred_output",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_centred_output,
        cases=_centred_cases,
        hint=(
            "res(P X W) = (I - 11^T/n) P X W, and (I - 11^T/n) P = P - 1 pbar^T with pbar the "
            "column means of P."
        ),
        mistakes=[
            (
                lambda P, R, W: P @ R @ W,
                "P R W is not centred: P mixes the rows, so its columns need not average to zero.",
            ),
            (
                lambda P, R, W: (P - P.mean(dim=-2, keepdim=True)) @ R,
                (
                    "Don't forget the value map: the head outputs P X W, so the residual is (P - 1 "
                    "pbar^T) R W."
                ),
            ),
            (
                lambda P, R, W: (P - torch.eye(P.shape[0], dtype=P.dtype)) @ R @ W,
                (
                    "P - I measures how far attention is from each token keeping itself; the "
                    "residual needs P - 1 pbar^T."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ build it yourself


def _residual_and_norm(X):
    """The library's residual (mean centre) and its composite norm: ``{"res": res(X), "norm":
    ||res(X)||_{1,inf}}``."""
    R = res(X)
    return {"res": R, "norm": composite_norm(R)}


def _residual_mistake(centre="columns", norm="l1inf"):
    def wrong(X):
        R = {
            "columns": X - X.mean(dim=-2, keepdim=True),
            "rows": X - X.mean(dim=-1, keepdim=True),
            "none": X,
        }[centre]
        if norm == "sum-then-max":
            value = torch.sqrt(norm_1(R) * norm_inf(R))
        elif norm == "max-then-sum":  # the reductions of each norm in the wrong order
            value = torch.sqrt(R.abs().amax(dim=-2).sum(dim=-1) * R.abs().amax(dim=-1).sum(dim=-1))
        else:
            value = torch.linalg.matrix_norm(R, ord="fro")
        return {"res": R, "norm": value}

    return wrong


def _residual_cases():
    gen = torch.Generator().manual_seed(2021)
    cases = []
    for n, d, shift in ((3, 2, 0.0), (5, 4, 3.0), (6, 6, -1.5), (4, 7, 10.0)):
        X = torch.randn(n, d, generator=gen, dtype=torch.float64) + shift * torch.randn(
            1, d, generator=gen, dtype=torch.float64
        )
        cases.append((X,))
    return cases


register(
    Exercise(
        id="collapse.residual",
        reference=_residual_and_norm,
        cases=_residual_cases,
        hint="res(X) = X - 1 x^T with x the mean of the tokens (the column means); its norm is "
        "sqrt(||R||_1 ||R||_inf): the largest absolute column sum times the largest absolute row "
        "sum.",
        mistakes=[
            (
                _residual_mistake(centre="rows", norm="sum-then-max"),
                "Wrong centre: you subtracted each token's own mean over its features. The "
                "residual subtracts the "
                "token that is common to all rows, the mean over the tokens (axis -2).",
            ),
            (
                _residual_mistake(centre="none", norm="sum-then-max"),
                "You did not centre: res(X) = X - 1 x^T removes the part every token shares.",
            ),
            (
                _residual_mistake(norm="max-then-sum"),
                "Wrong order in the norms: ||R||_1 is the largest of the column sums (sum down "
                "each column, then "
                "the maximum), not the sum of the columns' largest entries; likewise ||R||_inf "
                "over rows.",
            ),
            (
                _residual_mistake(norm="fro"),
                (
                    "That is the Frobenius norm; the book's norm is the composite sqrt(||R||_1 "
                    "||R||_inf)."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ value exercises (Questions)

# the small pure-attention networks the chapter's exercises measure (the fast preset's shape)
_SHAPE = dict(n_layers=6, n_heads=4, d_model=16)
_N_TOKENS = 12


def _network_and_input(init_scale, n_layers=6):
    from rankcollapse.san import SAN, SANConfig
    from rankcollapse.theory import unit_residual_tokens

    model = SAN(SANConfig(**{**_SHAPE, "n_layers": n_layers}, init_scale=init_scale), seed=0)
    X = unit_residual_tokens(
        _N_TOKENS, _SHAPE["d_model"], generator=torch.Generator().manual_seed(0)
    )
    return model, X


def _relative_residual_log10(init_scale):
    """log10 of the tracked relative residual after 6 layers, as section 4 measures it."""
    from rankcollapse.theory import tracked_relative_residual

    model, X = _network_and_input(init_scale)
    return math.log10(max(tracked_relative_residual(model, X)[-1].item(), 1e-300))


def _keeps_more():
    usual, large = _relative_residual_log10(1.0), _relative_residual_log10(30.0)
    if max(usual, large) < -10:
        return "neither"
    return "scale 30" if large > usual else "scale 1"


register(
    Question(
        id="collapse.predict_hard_attention",
        kind="predict",
        answer=_keeps_more,
        choices=("scale 1", "scale 30", "neither"),
        hint="Look again at section 4: what does attention become when its weights are very large?",
        mistakes=[
            (
                "scale 1",
                "Larger weights make the constant c larger, so the bound says nothing; and they "
                "make attention "
                "nearly hard, each token attending to a single token: P stops averaging the "
                "tokens together.",
            ),
            (
                "neither",
                "Pure attention with usual weights collapses, but nearly hard attention "
                "(init_scale 30) is the "
                "way out that section 4 found: its relative residual stays above 1e-3.",
            ),
        ],
    )
)


def _bound_growth():
    """The factor by which log10 of the paper-form bound grows from layer 3 to layer 4 (nearest
    choice)."""
    from rankcollapse.theory import collapse_bound

    model, X = _network_and_input(0.2, n_layers=4)
    log_bound = collapse_bound(model, X, "paper", log10=True)
    ratio = (log_bound[4] / log_bound[3]).item()
    return min((1, 2, 3), key=lambda c: abs(c - ratio))


register(
    Question(
        id="collapse.read_bound_growth",
        kind="read",
        answer=_bound_growth,
        choices=(1, 2, 3),
        hint="The bound is c^((3^l - 1)/2) r0^(3^l): how does its logarithm grow with l?",
        mistakes=[
            (
                1,
                "Equal steps down a log axis would be a geometric (linear-rate) fall; the dashed "
                "curve steepens "
                "with every layer.",
            ),
            (
                2,
                (
                    "Squaring would double the exponent each layer; the residual enters each "
                    "layer's bound cubed (Step 4)."
                ),
            ),
        ],
    )
)

register(
    Rubric(
        label="ex-collapse-prove",
        criteria=(
            (
                1,
                "Derives P_ij = s_j rho_ij by dividing numerator and denominator by sum_k e^{a_k}.",
            ),
            (
                1,
                "rho_ij in [e^{-2 eps}, e^{2 eps}]: the normaliser is an average (weights s_k) of "
                "numbers "
                "in [e^{-eps}, e^{eps}].",
            ),
            (
                2,
                "|Delta_ij| <= 2 sinh(2 eps) s_j: the column mean of rho lies in the same "
                "interval, and two "
                "numbers of an interval of length e^{2 eps} - e^{-2 eps} differ by at most that; "
                "row sums "
                "give ||Delta||_inf <= 2 sinh(2 eps) because the s_j sum to one.",
            ),
            (
                2,
                "||Delta||_1: bounds n s_j by e^{2 eps} ||P||_1 from P_kj >= s_j e^{-2 eps}, and "
                "says why "
                "the column sums need it (one s_j repeated n times, not summed over j).",
            ),
        ),
        wrong_turns=(
            "Taking the normaliser to be 1 (or at least 1): gives rho in [e^{-eps}, e^{eps}] and "
            "loses the "
            "second point.",
            (
                "A one-sided bound such as e^{2 eps} - 1 for |rho_ij - mean rho|: half of the 2 "
                "points."
            ),
            (
                "Summing s_j down a column to claim ||Delta||_1 <= 2 sinh(2 eps): the last 2 "
                "points are lost."
            ),
        ),
    )
)
