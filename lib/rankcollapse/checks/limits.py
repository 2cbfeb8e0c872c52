"""Exercises of the chapter "What the theorem does not say"."""

from . import Exercise, Question, register  # noqa: F401

# REGION helperA
# END REGION

# REGION helperB
# section 2 and 4 (helperB): the stable rank to write, a prediction about a spiked matrix
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
# END REGION
