"""Exercises of the chapter "A lower bound with skip connections"."""

import math

import torch

from .questions import Question
from .registry import Exercise, Rubric, register


def _construction_layer(X, q, w):
    d = X.shape[-1]
    P = torch.softmax(q * X @ X.transpose(-1, -2) / math.sqrt(d), dim=-1)
    return X - w * P @ X


def _construction_cases():
    gen = torch.Generator().manual_seed(27)
    cases = []
    for n, d, q, w in ((3, 2, 1.0, 0.3), (4, 8, 4.0, 0.15), (6, 5, 0.5, 0.45)):
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        cases.append((X, q, w))
    return cases


register(
    Exercise(
        id="lower_bound.construction_layer",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_construction_layer,
        cases=_construction_cases,
        hint=(
            "One skip layer: X + P X W with P = softmax(X W_QK X^T / sqrt(d)) row by row, W_QK = q "
            "I and W = -w I."
        ),
        mistakes=[
            (
                lambda X, q, w: (
                    -w * torch.softmax(q * X @ X.T / math.sqrt(X.shape[-1]), dim=-1) @ X
                ),
                "That is the layer without its skip connection: the layer adds its output to X.",
            ),
            (
                lambda X, q, w: (
                    X - w * torch.softmax(q * X @ X.T / math.sqrt(X.shape[-1]), dim=0) @ X
                ),
                (
                    "The softmax normalises each row (one query's weights over the keys): dim=-1, "
                    "not dim=0."
                ),
            ),
            (
                lambda X, q, w: X - w * torch.softmax(q * X @ X.T, dim=-1) @ X,
                "The logits are divided by sqrt(d_qk), here sqrt(d).",
            ),
            (
                lambda X, q, w: (
                    X + w * torch.softmax(q * X @ X.T / math.sqrt(X.shape[-1]), dim=-1) @ X
                ),
                (
                    "The value map is -w I: it points against the residual (+w I makes the "
                    "residual grow)."
                ),
            ),
        ],
    )
)


# the chapter's setting (book.presets.PRESETS["lower_bound"], the same in both modes)
_SETTING = dict(n=4, d=8, H=2, q=4.0, omega=0.15, b0=8.0)


def _depth_factor():
    """How much the construction's ratio falls from depth 256 to 1024: the nearest of the three
    choices."""
    from rankcollapse.lower_bound import simplex_log10_ratios

    log10 = simplex_log10_ratios([-1] * 1024, **_SETTING)
    factor = 10 ** (log10[1024] - log10[256])
    choices = {"1/2": 0.5, "1/4": 0.25, "collapse": 1e-10}
    return min(choices, key=lambda k: abs(math.log10(choices[k]) - math.log10(factor)))


register(
    Question(
        id="lower_bound.predict_deeper",
        kind="predict",
        answer=_depth_factor,
        choices=("1/2", "1/4", "collapse"),
        hint=(
            "A ratio that falls like L^a changes by 4^a when the depth is multiplied by 4: what is "
            "a here?"
        ),
        mistakes=[
            (
                "1/4",
                "That is a fall like 1/L. Each layer removes about k r^3, so 1/r^2 grows by a "
                "constant per "
                "layer: r falls like L^(-1/2).",
            ),
            (
                "collapse",
                "With a skip the length-zero path carries the residual through; the cascade of "
                "pure "
                "attention never starts, and the theorem rules out anything faster than L^(-1/2) "
                "here.",
            ),
        ],
    )
)


def _gap_at_depth():
    """The construction's ratio over the bound at depth 1024 (the figure's last point), nearest of
    the choices."""
    from rankcollapse.lower_bound import depth_bound, simplex_log10_ratios

    s = _SETTING
    measured = 10 ** simplex_log10_ratios([-1] * 1024, **s)[1024]
    k, omega = 4 * s["H"] * s["q"] * s["omega"] / math.sqrt(s["d"]), s["H"] * s["omega"]
    bound = float(depth_bound(s["b0"], k, omega, [1024])[0]) / s["b0"]
    return min((2, 8, 100), key=lambda c: abs(math.log10(c) - math.log10(measured / bound)))


register(
    Question(
        id="lower_bound.read_gap",
        kind="read",
        answer=_gap_at_depth,
        choices=(2, 8, 100),
        hint=(
            "On a log axis a factor 10 is one decade: how far apart are the two curves at the "
            "right edge?"
        ),
        mistakes=[
            (
                2,
                (
                    "The curves are further apart: read the distance in decades on the vertical "
                    "axis at L = 1024."
                ),
            ),
            (
                100,
                "That is two decades; at L = 1024 the two curves are less than one decade apart.",
            ),
        ],
    )
)

register(
    Rubric(
        label="ex-lb-prove",
        criteria=(
            (1, "sum_j |u_j - v_j| = 2 (u(A) - v(A)), because both vectors sum to one."),
            (
                2,
                "The two bounds u(A) - t <= (e^d - 1) t and u(A) - t <= (1 - e^{-d})(1 - t), the "
                "second from "
                "the complement of A.",
            ),
            (1, "Maximises the minimum over t: the two meet at t = 1/(e^d + 1), value tanh(d/2)."),
            (1, "The bound is attained for n = 2 (an explicit pair)."),
            (
                1,
                "Applies it to row i of P and the mean row p-bar with d = 4 eps (p-bar is a "
                "probability "
                "vector; the ratios P_ij / p-bar_j lie in [e^{-4 eps}, e^{4 eps}]).",
            ),
        ),
        wrong_turns=(
            "The termwise bound |u_j - v_j| <= (e^d - 1) v_j, giving e^d - 1: true but not the "
            "lemma; the "
            "second and third criteria are lost.",
            (
                "Only the first of the two bounds on u(A) - t (so no maximum over t): 1 of the 2 "
                "points."
            ),
            (
                "Ratios to p-bar taken as e^{+-2 eps} (from Step 3's rho) instead of e^{+-4 eps}: "
                "the last point."
            ),
        ),
    )
)


# the inequality behind the attention-rows lemma, the numerical half of ex-lb-prove: from two
# probability vectors, delta = max_j |ln(u_j / v_j)| and the bound 2 tanh(delta / 2) on sum_j |u_j -
# v_j|


def _ratio_bound(u, v):
    delta = (u / v).log().abs().max()
    return 2 * torch.tanh(delta / 2)


def ratio_instances(seed: int = 4101) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(u, v)`` pairs of positive probability vectors (float64): random ones of 2 to 12 entries,
    close and far apart, and the pair that attains the bound for n = 2 (delta = 1.5)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in (2, 3, 6, 12):
        for spread in (0.05, 0.5, 3.0):
            v = torch.softmax(torch.randn(n, generator=gen, dtype=torch.float64), dim=0)
            u = torch.softmax(
                v.log() + spread * torch.randn(n, generator=gen, dtype=torch.float64), dim=0
            )
            out.append((u, v))
    e = math.exp(1.5)
    out.append(
        (
            torch.tensor([e, 1.0], dtype=torch.float64) / (1 + e),
            torch.tensor([1.0, e], dtype=torch.float64) / (1 + e),
        )
    )
    return out


register(
    Exercise(
        id="lower_bound.ratio_bound",
        reference=_ratio_bound,
        cases=ratio_instances,
        hint=(
            "delta is the largest |ln(u_j / v_j)| over j, in either direction; the bound is 2 "
            "tanh(delta / 2)."
        ),
        mistakes=[
            (
                lambda u, v: 2 * torch.tanh((u / v).log().max() / 2),
                (
                    "The ratios may fall below one too: delta is the largest |ln(u_j / v_j)|, with "
                    "the absolute value."
                ),
            ),
            (
                lambda u, v: (u / v).log().abs().max().exp() - 1,
                "e^delta - 1 is the termwise bound (|u_j - v_j| <= (e^delta - 1) v_j summed): it "
                "misses that both "
                "vectors sum to one; the lemma's bound is 2 tanh(delta / 2).",
            ),
            (
                lambda u, v: 2 * torch.tanh((u / v).log().abs().max()),
                (
                    "The two bounds on u(A) - t meet at t = 1/(e^delta + 1), where they equal "
                    "tanh(delta / 2): half of delta."
                ),
            ),
        ],
    )
)


# section 7: the fraction one layer keeps whenever Omega < 1


def _contraction(omega, n):
    c = (n - 1) / n
    return (1 - omega) / (1 + (2 * c - 1) * omega)


register(
    Exercise(
        id="lower_bound.contraction",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_contraction,
        cases=lambda: [(om, n) for om in (0.0, 0.3, 0.6, 0.9, 0.99) for n in (2, 4, 64)],
        hint=(
            "Sum the Neumann series: b <= b' (1 + 2c (Omega + Omega^2 + ...)) with c = (n-1)/n, "
            "then solve for b'/b."
        ),
        mistakes=[
            (
                lambda omega, n: 1 - 2 * omega,
                "1 - 2 Omega is the lemma of section 2: it is negative past Omega = 1/2. The "
                "products of the Delta's keep the factor 2c from compounding: sum the series.",
            ),
            (
                lambda omega, n: (1 - omega) / (1 + omega),
                "That is the bound uniform in n (c = 1); with n tokens each Delta is at most "
                "2(n-1)/n: use c = (n-1)/n.",
            ),
            (
                lambda omega, n: 1 - omega,
                "1 - Omega is the value at n = 2 only; for more tokens the series adds 2c Omega^j "
                "for every j >= 1.",
            ),
        ],
    )
)


# section 8: the step of the pre-LN construction


def _preln_step(d, omega, a):
    return omega * math.sqrt(d) * math.tanh(a * math.sqrt(d))


register(
    Exercise(
        id="lower_bound.preln_step",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_preln_step,
        cases=lambda: [(d, om, a) for d in (9, 16, 64) for om in (0.1, 0.5) for a in (0.01, 1.0)],
        hint=(
            "After LayerNorm every token has norm sqrt(d); the two clusters' logits are -+a d / "
            "sqrt(d_qk) with d_qk = d; a row of Delta N(X) is -tanh(eps) times the token."
        ),
        mistakes=[
            (
                lambda d, omega, a: omega * math.sqrt(d) * math.tanh(2 * a * math.sqrt(d)),
                "tanh(2 eps) is the theorem's bound on the step; the construction's own step is "
                "tanh(eps): each token gives sigma(2 eps) of its attention to the other cluster.",
            ),
            (
                lambda d, omega, a: omega * math.tanh(a * math.sqrt(d)),
                "LayerNorm puts each token on the sphere of radius sqrt(d), not 1: the step has a "
                "factor sqrt(d).",
            ),
            (
                lambda d, omega, a: omega * math.sqrt(d) * math.tanh(a * d),
                "The logits are divided by sqrt(d_qk) = sqrt(d): eps = a d / sqrt(d) = a sqrt(d).",
            ),
        ],
    )
)
