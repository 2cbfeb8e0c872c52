"""Exercises of the chapter "LayerNorm's rank argument"."""

import math

import torch

from rankcollapse import layernorm as ln
from rankcollapse.san import LN_EPS

from .questions import Question
from .registry import Exercise, Rubric, register


def _ln_cases():
    gen = torch.Generator().manual_seed(2106)
    cases = []
    for n, d, scale in ((3, 4, 1.0), (6, 8, 10.0), (5, 16, 0.01)):
        cases.append((scale * torch.randn(n, d, generator=gen, dtype=torch.float64) + 2.0,))
    return cases


def _ln_reference(Y):
    return ln.layer_norm(Y)


def _ln_unbiased(Y):
    mu = Y.mean(-1, keepdim=True)
    return (Y - mu) / torch.sqrt(Y.var(-1, unbiased=True, keepdim=True) + LN_EPS)


def _ln_eps_outside(Y):
    mu = Y.mean(-1, keepdim=True)
    return (Y - mu) / (Y.std(-1, unbiased=False, keepdim=True) + LN_EPS)


def _ln_columns(Y):
    mu = Y.mean(-2, keepdim=True)
    return (Y - mu) / torch.sqrt(((Y - mu) ** 2).mean(-2, keepdim=True) + LN_EPS)


def _ln_no_centre(Y):
    return Y / torch.sqrt(((Y - Y.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True) + LN_EPS)


register(
    Exercise(
        id="layernorm.layer_norm",
        reference=_ln_reference,
        cases=_ln_cases,
        hint=(
            "Row by row: subtract the token's mean over features, divide by sqrt(biased variance + "
            "1e-5)."
        ),
        mistakes=[
            (
                _ln_columns,
                (
                    "LayerNorm normalises each token (a row, over its d features), not each "
                    "feature over the tokens."
                ),
            ),
            (_ln_unbiased, "torch.nn.LayerNorm uses the biased variance (divide by d, not d - 1)."),
            (_ln_eps_outside, "Is your epsilon inside the square root? sigma = sqrt(var + eps)."),
            (
                _ln_no_centre,
                (
                    "Centre first: the centring C = I - 11^T/d is half of LayerNorm's right "
                    "multiplication."
                ),
            ),
        ],
    )
)


def _scale_cases():
    gen = torch.Generator().manual_seed(2107)
    cases = []
    for n, d in ((4, 3), (8, 6), (16, 16)):
        Z = (
            torch.randn(n, d, generator=gen, dtype=torch.float64)
            * torch.rand(n, 1, generator=gen, dtype=torch.float64)
            * 3
        )
        sigma = 0.5 + torch.rand(n, generator=gen, dtype=torch.float64)
        cases.append((Z, sigma))
    return cases


register(
    Exercise(
        id="layernorm.common_scale",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=lambda Z, sigma: ln.common_scale(Z, 1.0 / sigma, "best"),
        cases=_scale_cases,
        hint="Minimise sum_i ||z_i / sigma_i - c z_i||^2 over c: set the derivative to zero.",
        mistakes=[
            (
                lambda Z, sigma: (1.0 / sigma).mean(),
                (
                    "The mean of 1/sigma_i ignores how large each token is; weight token i by "
                    "||z_i||^2."
                ),
            ),
            (
                lambda Z, sigma: 1.0 / sigma.mean(),
                (
                    "1 / mean(sigma) is neither the least-squares scale nor the mean of 1/sigma_i; "
                    "weight by ||z_i||^2."
                ),
            ),
            (
                lambda Z, sigma: ((Z**2).sum(-1) / sigma**2).sum() / (Z**2).sum(),
                (
                    "Too many factors of sigma: the least-squares c is sum ||z_i||^2/sigma_i over "
                    "sum ||z_i||^2."
                ),
            ),
        ],
    )
)


def _rank_cases():
    gen = torch.Generator().manual_seed(2108)
    cases = []
    for n, d, r, scale in ((6, 5, 2, 1.0), (10, 8, 3, 1e-12), (8, 12, 3, 1e9), (7, 7, 1, 1.0)):
        A = torch.randn(n, r, generator=gen, dtype=torch.float64)
        B = torch.randn(r, d, generator=gen, dtype=torch.float64)
        cases.append((scale * (A @ B), 1e-10))
    # prescribed singular values 1, 1e-6, 1e-13: numerical rank 2 at rtol = 1e-10
    Q1, _ = torch.linalg.qr(torch.randn(6, 3, generator=gen, dtype=torch.float64))
    Q2, _ = torch.linalg.qr(torch.randn(5, 3, generator=gen, dtype=torch.float64))
    s = torch.tensor([1.0, 1e-6, 1e-13], dtype=torch.float64)
    cases.append(((Q1 * s) @ Q2.T, 1e-10))
    return cases


register(
    Exercise(
        id="layernorm.numerical_rank",
        reference=lambda Y, rtol: int(ln.numerical_rank(Y, rtol)),
        cases=_rank_cases,
        hint="Count singular values larger than rtol times the largest singular value.",
        mistakes=[
            (
                lambda Y, rtol: int((torch.linalg.svdvals(Y) > rtol).sum()),
                (
                    "The tolerance is relative: compare with rtol * (largest singular value), or a "
                    "rescaled matrix changes rank."
                ),
            ),
            (
                lambda Y, rtol: min(Y.shape),
                (
                    "Not every matrix has full rank: count the singular values that are not "
                    "negligible."
                ),
            ),
            (
                lambda Y, rtol: int(
                    (
                        torch.linalg.eigvals(Y @ Y.T).abs()
                        > rtol * torch.linalg.eigvals(Y @ Y.T).abs().max()
                    ).sum()
                ),
                (
                    "Eigenvalues of Y Y^T are squared singular values: compare them with rtol^2 "
                    "times the largest, or use singular values."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ value exercises (Questions)

_SHAPE = dict(n_layers=6, n_heads=2, d_model=16)  # the fast preset's networks


def _nearest_level(log10_value):
    levels = {"about 1": 0.0, "about 1e-3": -3.0, "rounding error": -16.0}
    return min(levels, key=lambda k: abs(levels[k] - log10_value))


def _post_ln_with_skips():
    """Relative residual (geometric mean over inputs) after 6 post-LN layers with skips, to the
    nearest level."""
    from rankcollapse.san import SAN, SANConfig
    from rankcollapse.stats import geometric_mean

    X = torch.randn(4, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    model = SAN(SANConfig(**_SHAPE, layernorm="post", skip=True), seed=0)
    last = ln.residual_profile(model, X)["relative"][-1]
    return _nearest_level(math.log10(geometric_mean(last, floor=1e-17)))


register(
    Question(
        id="layernorm.predict_post_ln_skip",
        kind="predict",
        answer=_post_ln_with_skips,
        choices=("about 1", "about 1e-3", "rounding error"),
        hint=(
            "Which path does a skip connection add, and can a LayerNorm, which rescales each "
            "token, remove it?"
        ),
        mistakes=[
            (
                "rounding error",
                "That is post-LN without skips (fig-ln-collapse a). With skips the length-zero "
                "path "
                "carries the input, and LayerNorm rescales each token without mixing tokens.",
            ),
            (
                "about 1e-3",
                "A skip layer loses residual only slowly, and LayerNorm does not mix tokens: "
                "after 6 "
                "layers the relative residual is still of order one.",
            ),
        ],
    )
)


def _balanced_law():
    """How the absolute residual of noiseless balanced tokens changes through post-LN
    (fig-ln-balanced, right)."""
    from rankcollapse.san import SAN, SANConfig

    model = SAN(SANConfig(**_SHAPE, layernorm="post"), seed=0)
    a = ln.residual_profile(model, ln.balanced_tokens(16, 16, seed=0), rtol=1e-8)["absolute"]
    drops = [math.log10(a[l].item()) - math.log10(a[l + 1].item()) for l in range(1, len(a) - 1)]
    if max(abs(x) for x in drops) < 0.05:
        return "constant"
    return "doubly exponential" if drops[-1] > 2 * max(drops[0], 1e-3) else "geometric"


register(
    Question(
        id="layernorm.read_balanced",
        kind="read",
        answer=_balanced_law,
        choices=("constant", "geometric", "doubly exponential"),
        hint="Look at the noise-0 curve in the right-hand panel, after the first layer.",
        mistakes=[
            (
                "doubly exponential",
                "That is the left-hand panel, without LayerNorm, where the curves steepen layer "
                "after layer.",
            ),
            (
                "geometric",
                "A geometric fall is a straight sloping line on the log axis; the noiseless "
                "post-LN curve "
                "is flat after the first layer: LayerNorm resets the tokens' size every layer.",
            ),
        ],
    )
)

register(
    Rubric(
        label="ex-ln-prove",
        criteria=(
            (1, "States rank(AB) <= min(rank A, rank B) and rank(A + B) <= rank A + rank B."),
            (1, "rank LN(Y) <= rank Y + 1, and <= rank Y with a zero shift."),
            (1, "Pi LN(Y) = Pi S^{-1} Y C G because Pi 1 = 0, so its rank is at most rank Y."),
            (
                2,
                "A rank-one Y with LN(Y) of rank two (tokens of opposite sign along one "
                "direction, a shift "
                "not parallel to it), with the rank verified.",
            ),
            (1, "S^{-1} keeps the rank (invertible); C and G can lower it."),
        ),
        wrong_turns=(
            "A rank-one example whose rows all have the same sign: LN maps them to one row, rank "
            "one; "
            "the example's 2 points are lost.",
            "Claiming S^{-1} must be on the right for the argument: it works on either side.",
            (
                "Forgetting the shift's +1 (claiming rank LN(Y) <= rank Y always): the second "
                "point is lost."
            ),
        ),
    )
)
