"""Exercises of the chapter "After the paper: five later results"."""

from . import Exercise, Question, register  # noqa: F401

# REGION helperC
# END REGION

# REGION helperD
import math as _math

import torch as _torch


def _attention_entropy(P):
    return -_torch.special.xlogy(P, P).sum(dim=-1)


def _entropy_cases():
    gen = _torch.Generator().manual_seed(17)
    cases = []
    for n, scale in ((3, 0.5), (5, 2.0), (6, 8.0)):
        cases.append((_torch.softmax(scale * _torch.randn(2, n, n, generator=gen, dtype=_torch.float64), dim=-1),))
    hard = _torch.eye(4, dtype=_torch.float64)[[1, 1, 3, 0]]  # one-hot rows: 0 log 0 = 0
    hard[0] = _torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=_torch.float64)
    cases.append((hard,))
    return cases


register(
    Exercise(
        id="later.attention_entropy",
        reference=_attention_entropy,
        cases=_entropy_cases,
        hint="H_i = -sum_j P_ij log P_ij along each row (the last dimension), natural log, with 0 log 0 = 0.",
        mistakes=[
            (lambda P: _attention_entropy(P) / _math.log(2),
             "That is the entropy in bits: the book measures it in nats (natural log), so uniform rows give log n."),
            (lambda P: -_torch.special.xlogy(P, P).sum(dim=-2),
             "You summed down the columns: a row of P is the attention of one query, and the entropy is per row."),
            (lambda P: _torch.special.xlogy(P, P).sum(dim=-1),
             "The sign: entropy is minus the sum of p log p, and it is never negative."),
        ],
    )
)


def _large_scale_phase():
    """The phase at the largest query/key scale with a skip (alpha = 1), measured small."""
    from ..later.phases import phase_study

    r = phase_study(scales=(0.0, 16.0), strengths=(1.0,), n_layers=6, n_heads=2, d_model=16, n_tokens=8,
                    samples=2, seed=0, generator=_torch.Generator().manual_seed(0))
    label = r.phases()[-1, 0]
    return {"rank collapse": "rank collapse", "entropy collapse": "entropy collapse"}.get(label, "neither")


register(
    Question(
        id="later.read_phase",
        kind="read",
        answer=_large_scale_phase,
        choices=("rank collapse", "entropy collapse", "neither"),
        hint="Read the left and middle panels at the right edge of the picture, in the rows with a skip.",
        mistakes=[
            ("rank collapse", "The middle panel is bright at the right edge: with a skip the residual is kept. "
                              "Rank collapse sits at the left edge (small scale, weak skip)."),
            ("neither", "Look at the left panel: at the largest scale the attention entropy is a small fraction of "
                        "log n, so each token attends to nearly one token."),
        ],
    )
)
# END REGION
