"""Exercises of the chapter "Skip connections"."""

import torch

from . import Exercise, register


def _skip_residual(P, R, W):
    pbar = P.mean(dim=-2, keepdim=True)
    return R + (P - pbar) @ R @ W


def _cases(seed):
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for n, d in ((3, 2), (5, 4), (6, 6)):
        P = torch.softmax(torch.randn(n, n, generator=gen, dtype=torch.float64) * 2, dim=-1)
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        W = torch.randn(d, d, generator=gen, dtype=torch.float64)
        cases.append((P, X - X.mean(dim=0), W))
    return cases


register(
    Exercise(
        id="skip.residual_after_layer",
        reference=_skip_residual,
        cases=lambda: _cases(11),
        hint="X + P X W = (1 x^T + R) + P (1 x^T + R) W; centre it: the length-zero path keeps R itself.",
        mistakes=[
            (lambda P, R, W: (P - P.mean(dim=-2, keepdim=True)) @ R @ W,
             "That is the layer without its skip connection: the length-zero path adds R itself."),
            (lambda P, R, W: R + P @ R @ W, "P R W is not centred: subtract the column means of P (P - 1 pbar^T)."),
        ],
    )
)


def _reserved_map(M, d):
    content, reserved = M.shape
    W = torch.zeros(d, d, dtype=M.dtype)
    W[:content, content:] = M
    return W


def _reserved_map_backwards(M, d):
    content = M.shape[0]
    W = torch.zeros(d, d, dtype=M.dtype)
    W[content:, :content] = M.T
    return W


def _reserved_cases():
    gen = torch.Generator().manual_seed(5)
    return [(torch.randn(c, d - c, generator=gen, dtype=torch.float64), d) for c, d in ((2, 4), (3, 5), (4, 6))]


register(
    Exercise(
        id="skip.reserved_map",
        reference=_reserved_map,
        cases=_reserved_cases,
        hint="Rows of W are the features a head reads, columns the features it writes: read content rows, write reserved columns.",
        mistakes=[
            (_reserved_map_backwards,
             "That map reads the reserved features and writes the content ones: it overwrites what should be kept."),
            (lambda M, d: torch.nn.functional.pad(M, (0, d - M.shape[1], 0, d - M.shape[0])),
             "Your block sits on the content columns: X W then changes the content features the argument relies on."),
        ],
    )
)


def _uniform_layer(X, W):
    return X + X.mean(dim=-2, keepdim=True) @ W


def _uniform_cases():
    gen = torch.Generator().manual_seed(7)
    return [(torch.randn(n, d, generator=gen, dtype=torch.float64), torch.randn(d, d, generator=gen, dtype=torch.float64))
            for n, d in ((3, 2), (4, 4), (6, 3))]


register(
    Exercise(
        id="skip.uniform_layer",
        reference=_uniform_layer,
        cases=_uniform_cases,
        hint="With W_QK = 0 every row of P is 1^T/n, so P X = 1 xbar^T: every token receives the same row xbar^T W.",
        mistakes=[
            (lambda X, W: X + X @ W, "That is P = I (each token attends to itself). Uniform attention averages all tokens."),
            (lambda X, W: X.mean(dim=-2, keepdim=True) @ W + 0 * X, "Don't forget the skip connection: the layer adds to X."),
        ],
    )
)
