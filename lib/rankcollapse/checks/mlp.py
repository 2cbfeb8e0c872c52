"""Exercises of the chapter "The MLP trade-off"."""

import torch

from ..residual import composite_norm
from . import Exercise, register


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
        hint="Bound every entry of the Jacobian W1 D W2 (0 <= D <= I) by |W1||W2|, then take the composite norm of that bound.",
        mistakes=[
            (lambda W1, W2: float(composite_norm(W1 @ W2)),
             "W1 W2 is the Jacobian with every ReLU on; other patterns D give other Jacobians. Take absolute values before multiplying."),
            (lambda W1, W2: float(composite_norm(W1) * composite_norm(W2)),
             "The composite norm is not submultiplicative in the way you need here; bound the entries of the product |W1||W2| instead."),
            (_no_sqrt, "The composite norm is the square root of the product ||B||_1 ||B||_inf (the official code forgets it too)."),
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
        hint="Divide the relative change of the output, ||Y' - Y|| / ||Y||, by the relative change of the input (Frobenius norms).",
        mistakes=[
            (lambda X, Xp, Y, Yp: _fro(Yp - Y) / _fro(Xp - X),
             "That is the absolute gain, which any rescaling of the output changes; divide each change by the size of what changed."),
            (lambda X, Xp, Y, Yp: (_fro(Xp - X) / _fro(X)) / (_fro(Yp - Y) / _fro(Y)),
             "Output change over input change, not the other way round."),
            (_relative_gain_l1inf,
             "Use the Frobenius norm here, as rc.lipschitz.perturbation_gain does by default."),
        ],
    )
)


def _minibatch_cases():
    gen = torch.Generator().manual_seed(2105)
    cases = []
    for N, P, B in ((8, 5, 1), (16, 3, 4), (32, 10, 8)):
        G = torch.randn(N, P, generator=gen, dtype=torch.float64) + torch.randn(P, generator=gen, dtype=torch.float64)
        cases.append((G, B))
    return cases


def _minibatch_variance(G, B):
    mean = G.mean(dim=0)
    return float(((G - mean) ** 2).sum() / (G.shape[0] - 1) / B)


register(
    Exercise(
        id="mlp.minibatch_variance",
        reference=_minibatch_variance,
        cases=_minibatch_cases,
        hint="Estimate E||g_i - mean||^2 from the rows (N - 1 degrees of freedom), then average B independent draws: divide by B.",
        mistakes=[
            (lambda G, B: float(((G - G.mean(0)) ** 2).sum() / (G.shape[0] - 1)),
             "That is one example's variance; a mean over B independent examples has B times less."),
            (lambda G, B: float(((G - G.mean(0)) ** 2).sum() / G.shape[0] / B),
             "The mean was estimated from the same rows: divide by N - 1, not N, for an unbiased estimate."),
            (lambda G, B: float((G**2).sum() / (G.shape[0] - 1) / B),
             "Subtract the mean gradient first: the variance is the spread around it, not the second moment."),
        ],
    )
)
