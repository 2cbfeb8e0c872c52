"""Exercises of the chapter "The MLP trade-off"."""

import math

import torch

from rankcollapse.residual import composite_norm

from .questions import Question
from .registry import Exercise, Rubric, register


def _weights_cases():
    gen = torch.Generator().manual_seed(2103)
    cases = []
    for d, m in ((3, 5), (8, 32), (16, 4)):
        W1 = torch.randn(d, m, generator=gen, dtype=torch.float64)
        W2 = torch.randn(m, d, generator=gen, dtype=torch.float64)
        cases.append((W1, W2))
    return cases


def _relu_bound(W1, W2):
    return float(composite_norm(W1.abs() @ W2.abs()))


def _no_sqrt(W1, W2):
    B = W1.abs() @ W2.abs()
    return float(B.sum(dim=0).max() * B.sum(dim=1).max())


register(
    Exercise(
        id="mlp.weight_bound",
        reference=_relu_bound,
        cases=_weights_cases,
        hint=(
            "Bound every entry of the Jacobian W1 D W2 (0 <= D <= I) by |W1||W2|, then take the "
            "composite norm of that bound."
        ),
        mistakes=[
            (
                lambda W1, W2: float(composite_norm(W1 @ W2)),
                (
                    "W1 W2 is the Jacobian with every ReLU on; other patterns D give other "
                    "Jacobians. Take absolute values before multiplying."
                ),
            ),
            (
                lambda W1, W2: float(composite_norm(W1) * composite_norm(W2)),
                (
                    "The composite norm is not submultiplicative in the way you need here; bound "
                    "the entries of the product |W1||W2| instead."
                ),
            ),
            (
                _no_sqrt,
                (
                    "The composite norm is the square root of the product ||B||_1 ||B||_inf (the "
                    "official code forgets it too)."
                ),
            ),
        ],
    )
)


def _gain_cases():
    gen = torch.Generator().manual_seed(2104)
    cases = []
    for n, d, scale in ((4, 3, 1.0), (8, 6, 5.0), (16, 4, 0.1)):
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        Xp = X + 1e-3 * torch.randn(n, d, generator=gen, dtype=torch.float64)
        W = torch.randn(d, d, generator=gen, dtype=torch.float64)
        Y, Yp = scale * torch.tanh(X @ W) + 1.0, scale * torch.tanh(Xp @ W) + 1.0
        cases.append((X, Xp, Y, Yp))
    return cases


def _fro(A):
    return float(torch.linalg.matrix_norm(A))


def _relative_gain(X, Xp, Y, Yp):
    return (_fro(Yp - Y) / _fro(Y)) / (_fro(Xp - X) / _fro(X))


def _relative_gain_l1inf(X, Xp, Y, Yp):
    c = lambda A: float(composite_norm(A))  # noqa: E731
    return (c(Yp - Y) / c(Y)) / (c(Xp - X) / c(X))


register(
    Exercise(
        id="mlp.relative_gain",
        reference=_relative_gain,
        cases=_gain_cases,
        hint=(
            "Divide the relative change of the output, ||Y' - Y|| / ||Y||, by the relative change "
            "of the input (Frobenius norms)."
        ),
        mistakes=[
            (
                lambda X, Xp, Y, Yp: _fro(Yp - Y) / _fro(Xp - X),
                (
                    "That is the absolute gain, which any rescaling of the output changes; divide "
                    "each change by the size of what changed."
                ),
            ),
            (
                lambda X, Xp, Y, Yp: (_fro(Xp - X) / _fro(X)) / (_fro(Yp - Y) / _fro(Y)),
                "Output change over input change, not the other way round.",
            ),
            (
                _relative_gain_l1inf,
                "Use the Frobenius norm here, as rc.lipschitz.perturbation_gain does by default.",
            ),
        ],
    )
)


def _minibatch_cases():
    gen = torch.Generator().manual_seed(2105)
    cases = []
    for N, P, B in ((8, 5, 1), (16, 3, 4), (32, 10, 8)):
        G = torch.randn(N, P, generator=gen, dtype=torch.float64) + torch.randn(
            P, generator=gen, dtype=torch.float64
        )
        cases.append((G, B))
    return cases


def _minibatch_variance(G, B):
    mean = G.mean(dim=0)
    return float(((G - mean) ** 2).sum() / (G.shape[0] - 1) / B)


register(
    Exercise(
        id="mlp.minibatch_variance",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_minibatch_variance,
        cases=_minibatch_cases,
        hint=(
            "Estimate E||g_i - mean||^2 from the rows (N - 1 degrees of freedom), then average B "
            "independent draws: divide by B."
        ),
        mistakes=[
            (
                lambda G, B: float(((G - G.mean(0)) ** 2).sum() / (G.shape[0] - 1)),
                (
                    "That is one example's variance; a mean over B independent examples has B "
                    "times less."
                ),
            ),
            (
                lambda G, B: float(((G - G.mean(0)) ** 2).sum() / G.shape[0] / B),
                (
                    "The mean was estimated from the same rows: divide by N - 1, not N, for an "
                    "unbiased estimate."
                ),
            ),
            (
                lambda G, B: float((G**2).sum() / (G.shape[0] - 1) / B),
                (
                    "Subtract the mean gradient first: the variance is the spread around it, not "
                    "the second moment."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ value exercises (Questions)

# one small SAN + MLP of the fast preset's shape, its MLP scaled by s (the chapter's sweep)
_SHAPE = dict(n_layers=4, n_heads=2, d_model=16, mlp=64)


def _sweep_model(mlp_scale):
    from rankcollapse.san import SAN, SANConfig

    return SAN(SANConfig(**_SHAPE, mlp_scale=mlp_scale), seed=0)


def _sweep_input():
    return torch.randn(4, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))


def _last_layer_log10(mlp_scale):
    """log10 of the geometric mean relative residual after the last layer (floor 1e-17)."""
    from rankcollapse.residual import relative_residual
    from rankcollapse.stats import geometric_mean

    with torch.no_grad():
        last = _sweep_model(mlp_scale)(_sweep_input()).last_hidden_state
    return math.log10(geometric_mean(relative_residual(last), floor=1e-17))


def _larger_mlp():
    small, large = _last_layer_log10(0.5), _last_layer_log10(3.0)
    if abs(large - small) < 0.5:  # within half an order of magnitude
        return "no change"
    return "slower" if large > small else "faster"


register(
    Question(
        id="mlp.predict_scale",
        kind="predict",
        answer=_larger_mlp,
        choices=("faster", "slower", "no change"),
        hint="What does scaling the MLP do to the size of the next attention layer's input, and "
        "what does that "
        "do to the attention weights?",
        mistakes=[
            (
                "faster",
                "A bias-free ReLU MLP scaled by s multiplies its output by s^2: the next "
                "attention layer's "
                "input grows, its logits (quadratic in it) grow, and sharper attention averages "
                "the tokens "
                "less.",
            ),
            (
                "no change",
                "By itself the MLP changes no relative residual (it is positively homogeneous), "
                "but it "
                "changes the size of the next attention layer's input, and attention sharpens "
                "with it.",
            ),
        ],
    )
)


def _lambda_ratio():
    """The measured lower bound on lambda (mean over layers) at MLP scale 2, over that at scale
    1."""
    from rankcollapse.lipschitz import mlp_lipschitz

    X = _sweep_input()[:2]
    lower = [
        mlp_lipschitz(_sweep_model(s), X, steps=20, points=2, seed=0).lower.mean().item()
        for s in (1.0, 2.0)
    ]
    return lower[1] / lower[0]


register(
    Question(
        id="mlp.read_lambda_scale",
        kind="read",
        answer=_lambda_ratio,
        rtol=0.1,
        hint=(
            "Both weight matrices of the MLP are multiplied by s, and a ReLU commutes with a "
            "positive scale."
        ),
        mistakes=[
            (
                2.0,
                "Each of the MLP's two weight matrices is scaled by s: lambda grows as s times s.",
            ),
            (16.0, "lambda is the product of the two matrices' gains, s each: s^2, not s^4."),
        ],
    )
)

register(
    Rubric(
        label="ex-mlp-prove",
        criteria=(
            (
                1,
                "ReLU's difference quotient lies in [0, 1] (case by case), so a token's "
                "difference is "
                "(x_i - y_i) W_1 D_i W_2; the biases cancel.",
            ),
            (
                1,
                "|A_i| <= |W_1| |W_2| entrywise, from 0 <= theta <= 1 and the triangle inequality.",
            ),
            (1, "The row-sum bound with ||B||_inf."),
            (
                2,
                "The column-sum bound with ||B||_1, summing over tokens with each token's own A_i "
                "bounded "
                "by the common B; then multiply and take the square root.",
            ),
        ),
        wrong_turns=(
            "Bounding |A_i| by |W_1 W_2| (the product first, then absolute values): false when "
            "inactive "
            "units would cancel; the second point is lost.",
            "One matrix A for every token (the column bound then looks like a single linear map): "
            "the "
            "column criterion is worth at most 1 of its 2 points.",
            "Forgetting the biases, or claiming they change lambda: they cancel in the difference.",
        ),
    )
)
