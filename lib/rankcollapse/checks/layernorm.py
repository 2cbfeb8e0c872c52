"""Exercises of the chapter "LayerNorm's rank argument"."""

import torch

from .. import layernorm as ln
from ..san import LN_EPS
from . import Exercise, register


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
        hint="Row by row: subtract the token's mean over features, divide by sqrt(biased variance + 1e-5).",
        mistakes=[
            (_ln_columns, "LayerNorm normalises each token (a row, over its d features), not each feature over the tokens."),
            (_ln_unbiased, "torch.nn.LayerNorm uses the biased variance (divide by d, not d - 1)."),
            (_ln_eps_outside, "Is your epsilon inside the square root? sigma = sqrt(var + eps)."),
            (_ln_no_centre, "Centre first: the centring C = I - 11^T/d is half of LayerNorm's right multiplication."),
        ],
    )
)


def _scale_cases():
    gen = torch.Generator().manual_seed(2107)
    cases = []
    for n, d in ((4, 3), (8, 6), (16, 16)):
        Z = torch.randn(n, d, generator=gen, dtype=torch.float64) * torch.rand(n, 1, generator=gen, dtype=torch.float64) * 3
        sigma = 0.5 + torch.rand(n, generator=gen, dtype=torch.float64)
        cases.append((Z, sigma))
    return cases


register(
    Exercise(
        id="layernorm.common_scale",
        reference=lambda Z, sigma: ln.common_scale(Z, 1.0 / sigma, "best"),
        cases=_scale_cases,
        hint="Minimise sum_i ||z_i / sigma_i - c z_i||^2 over c: set the derivative to zero.",
        mistakes=[
            (lambda Z, sigma: (1.0 / sigma).mean(), "The mean of 1/sigma_i ignores how large each token is; weight token i by ||z_i||^2."),
            (lambda Z, sigma: 1.0 / sigma.mean(), "1 / mean(sigma) is neither the least-squares scale nor the mean of 1/sigma_i; weight by ||z_i||^2."),
            (lambda Z, sigma: ((Z**2).sum(-1) / sigma**2).sum() / (Z**2).sum(), "Too many factors of sigma: the least-squares c is sum ||z_i||^2/sigma_i over sum ||z_i||^2."),
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
            (lambda Y, rtol: int((torch.linalg.svdvals(Y) > rtol).sum()),
             "The tolerance is relative: compare with rtol * (largest singular value), or a rescaled matrix changes rank."),
            (lambda Y, rtol: min(Y.shape), "Not every matrix has full rank: count the singular values that are not negligible."),
            (lambda Y, rtol: int((torch.linalg.eigvals(Y @ Y.T).abs() > rtol * torch.linalg.eigvals(Y @ Y.T).abs().max()).sum()),
             "Eigenvalues of Y Y^T are squared singular values: compare them with rtol^2 times the largest, or use singular values."),
        ],
    )
)
