"""Chapter "Pure attention collapses": Step 3's two bounds on Delta, the numerical half of
ex-collapse-prove (the instances the reader's bounds are compared on, their measurement, and the
exercise ``collapse.step3_bounds``)."""

import math

import torch

from rankcollapse.residual import norm_1, norm_inf

from .registry import Exercise, register

# Delta = P - 1 p-bar^T: the reader's bounds are compared with the chapter's on (eps, ||P||_1)
# drawn from random attention


def _step3_bounds(eps, p1):
    row = 2 * math.sinh(2 * eps)
    return torch.tensor([row, row * math.exp(2 * eps) * p1], dtype=torch.float64)


def step3_instances(seed: int = 3003) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(a, E)`` pairs: random mean-token logits ``a`` (n,) and residual logits ``E`` (n, n), with
    n from 2 to 8 and max|E| from about 0.01 to 2 (float64)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in (2, 5, 8):
        for scale in (0.01, 0.1, 0.5, 2.0):
            a = 2 * torch.randn(n, generator=gen, dtype=torch.float64)
            E = scale * (2 * torch.rand(n, n, generator=gen, dtype=torch.float64) - 1)
            out.append((a, E))
    return out


def step3_measure(a: torch.Tensor, E: torch.Tensor) -> dict:
    """For ``P = softmax(1 a^T + E)`` row by row: ``eps`` (max|E|), ``p1`` (||P||_1, the largest
    column sum) and ``delta_inf``, ``delta_1`` (the two norms of Delta = P - 1 p-bar^T)."""
    if not (isinstance(a, torch.Tensor) and a.dim() == 1 and a.numel() > 0):
        raise ValueError(
            "a must be a non-empty 1-d tensor of logits, got "
            f"{getattr(a, 'shape', type(a).__name__)}"
        )
    n = a.numel()
    if not (isinstance(E, torch.Tensor) and tuple(E.shape) == (n, n)):
        raise ValueError(
            f"E must be an ({n}, {n}) tensor to match a, got "
            f"{getattr(E, 'shape', type(E).__name__)}"
        )
    P = torch.softmax(a[None, :] + E, dim=1)
    delta = P - P.mean(dim=0, keepdim=True)
    return {
        "eps": float(E.abs().max()),
        "p1": float(norm_1(P)),
        "delta_inf": float(norm_inf(delta)),
        "delta_1": float(norm_1(delta)),
    }


def _step3_cases():
    return [(m["eps"], m["p1"]) for m in map(lambda x: step3_measure(*x), step3_instances())]


def _pair(f):
    return lambda eps, p1: torch.tensor(f(eps, p1), dtype=torch.float64)


register(
    Exercise(
        id="collapse.step3_bounds",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_step3_bounds,
        cases=_step3_cases,
        hint=(
            "Row sums: 2 sinh(2 eps) (the s_j sum to one); column sums: the same times e^(2 eps) "
            "||P||_1."
        ),
        mistakes=[
            (
                _pair(lambda e, p: (2 * math.sinh(e), 2 * math.sinh(e) * math.exp(e) * p)),
                "The normaliser sum_k s_k e^(E_ik) is not 1: it is an average of numbers in "
                "[e^-eps, e^eps], "
                "so rho lies in [e^-2eps, e^2eps].",
            ),
            (
                _pair(
                    lambda e, p: (math.exp(2 * e) - 1, (math.exp(2 * e) - 1) * math.exp(2 * e) * p)
                ),
                "rho_ij and the column mean of rho both lie in [e^-2eps, e^2eps]: they can differ "
                "by the "
                "interval's whole length, e^2eps - e^-2eps = 2 sinh(2 eps).",
            ),
            (
                _pair(lambda e, p: (2 * math.sinh(2 * e), 2 * math.sinh(2 * e))),
                (
                    "A column repeats one s_j n times instead of summing the s_j: bound n s_j by "
                    "e^(2 eps) ||P||_1."
                ),
            ),
            (
                _pair(lambda e, p: (2 * math.sinh(2 * e), 2 * math.sinh(2 * e) * p)),
                (
                    "n s_j <= e^(2 eps) ||P||_1, from P_kj >= s_j e^(-2 eps): the factor e^(2 eps) "
                    "is missing."
                ),
            ),
        ],
    )
)
