"""Exercises of the chapter "After the paper: five later results"."""

import math as _math

import torch
import torch as _torch

from .questions import Question  # noqa: F401
from .registry import Exercise, Rubric, register  # noqa: F401


def _window_attention(S, window):
    """Row softmax of the logits ``S`` ``(n, n)`` with keys outside ``|i - j| < window`` given
    weight 0 (the mask the core applies, :func:`rankcollapse.ops.allowed_keys`)."""
    from rankcollapse.ops import allowed_keys

    n = S.shape[-1]
    allowed = allowed_keys(n, None, False, window)
    return torch.softmax(
        S if allowed is None else S.masked_fill(~allowed.reshape(n, n), float("-inf")), dim=-1
    )


def _band(n, window, lower, upper=None):
    i = torch.arange(n)
    diff = i[:, None] - i[None, :]
    return (diff > -window if upper is None else diff >= -upper) & (
        diff < window if lower is None else diff <= lower
    )


def _window_cases():
    gen = torch.Generator().manual_seed(17)
    return [
        (torch.randn(n, n, generator=gen, dtype=torch.float64) * 2, w)
        for n, w in ((5, 2), (6, 3), (7, 1), (4, 4))
    ]


register(
    Exercise(
        id="later.window_attention",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_window_attention,
        cases=_window_cases,
        hint="Set the logits of the hidden keys to -inf before the softmax, so that each row's "
        "weights sum to one "
        "over the keys with |i - j| < window.",
        mistakes=[
            (
                lambda S, w: torch.softmax(
                    S.masked_fill(~_band(S.shape[-1], w, None), 0.0), dim=-1
                ),
                (
                    "A logit of 0 is not a hidden key: exp(0) = 1 still gives it weight. Mask with "
                    "-inf."
                ),
            ),
            (
                lambda S, w: torch.softmax(
                    S.masked_fill(~_band(S.shape[-1], w, w, w), float("-inf")), dim=-1
                ),
                (
                    "The window is one token too wide: a window of w keeps |i - j| < w, so w = 1 "
                    "is the token alone."
                ),
            ),
            (
                lambda S, w: torch.softmax(
                    S.masked_fill(~_band(S.shape[-1], w, w - 1, 0), float("-inf")), dim=-1
                ),
                (
                    "That window looks back only (a causal window): keep the keys on both sides, "
                    "|i - j| < w."
                ),
            ),
            (
                lambda S, w: torch.softmax(S, dim=-1) * _band(S.shape[-1], w, None),
                (
                    "Zeroing the weights after the softmax leaves rows that no longer sum to one: "
                    "mask the logits before it."
                ),
            ),
        ],
    )
)


def _causal_against_full():
    """Whether causal attention collapses "faster" or "slower" than full attention (or "the same"),
    from the fitted rates of small random networks (rc.later.masks.mask_study)."""
    from rankcollapse.later.masks import mask_study

    study = mask_study(
        masks=("full", "causal"),
        window=2,
        n_layers=12,
        n_heads=2,
        d_model=16,
        n_tokens=12,
        samples=2,
        seed=0,
        generator=torch.Generator().manual_seed(0),
    )
    full, causal = -study.rate("full"), -study.rate("causal")
    if abs(full - causal) < 0.1 * max(full, causal):
        return "the same"
    return "faster" if causal > full else "slower"


register(
    Question(
        id="later.predict_causal",
        kind="predict",
        answer=_causal_against_full,
        choices=("faster", "slower", "the same"),
        hint="Look at the first token: under a causal mask, whom does it attend to, "
        "at every layer?",
        mistakes=[
            (
                "faster",
                "Fewer keys do not mean faster averaging: the first token attends only to itself "
                "and never moves, "
                "and the others are pulled towards it at a fixed fraction per layer, while full "
                "attention's "
                "rows become uniform as the tokens close in, which cubes the residual.",
            ),
            (
                "the same",
                "The mask changes the rate: the diagonal of a causal P stays large (token 1's is "
                "1), so the "
                "collapse is geometric, not doubly exponential.",
            ),
        ],
    )
)


def _attention_entropy(P):
    return -_torch.special.xlogy(P, P).sum(dim=-1)


def _entropy_cases():
    gen = _torch.Generator().manual_seed(17)
    cases = []
    for n, scale in ((3, 0.5), (5, 2.0), (6, 8.0)):
        cases.append(
            (
                _torch.softmax(
                    scale * _torch.randn(2, n, n, generator=gen, dtype=_torch.float64), dim=-1
                ),
            )
        )
    hard = _torch.eye(4, dtype=_torch.float64)[[1, 1, 3, 0]]  # one-hot rows: 0 log 0 = 0
    hard[0] = _torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=_torch.float64)
    cases.append((hard,))
    return cases


register(
    Exercise(
        id="later.attention_entropy",
        reference=_attention_entropy,
        cases=_entropy_cases,
        partial=True,  # forgetting 0 log 0 = 0 fails the one-hot case only
        hint=(
            "H_i = -sum_j P_ij log P_ij along each row (the last dimension), natural log, with 0 "
            "log 0 = 0."
        ),
        mistakes=[
            (
                lambda P: _attention_entropy(P) / _math.log(2),
                (
                    "That is the entropy in bits: the book measures it in nats (natural log), so "
                    "uniform rows give log n."
                ),
            ),
            (
                lambda P: -_torch.special.xlogy(P, P).sum(dim=-2),
                (
                    "You summed down the columns: a row of P is the attention of one query, and "
                    "the entropy is per row."
                ),
            ),
            (
                lambda P: _torch.special.xlogy(P, P).sum(dim=-1),
                "The sign: entropy is minus the sum of p log p, and it is never negative.",
            ),
        ],
    )
)


def _large_scale_phase():
    """The phase at the largest query/key scale with a skip (alpha = 1), measured small."""
    from rankcollapse.later.phases import phase_study

    r = phase_study(
        scales=(0.0, 16.0),
        strengths=(1.0,),
        n_layers=6,
        n_heads=2,
        d_model=16,
        n_tokens=8,
        samples=2,
        seed=0,
        generator=_torch.Generator().manual_seed(0),
    )
    label = r.phases()[-1, 0]
    return {"rank collapse": "rank collapse", "entropy collapse": "entropy collapse"}.get(
        label, "neither"
    )


register(
    Question(
        id="later.read_phase",
        kind="read",
        answer=_large_scale_phase,
        choices=("rank collapse", "entropy collapse", "neither"),
        hint=(
            "Read the left and middle panels at the right edge of the picture, in the rows with a "
            "skip."
        ),
        mistakes=[
            (
                "rank collapse",
                "The middle panel is bright at the right edge: with a skip the residual is kept. "
                "Rank collapse sits at the left edge (small scale, weak skip).",
            ),
            (
                "neither",
                "Look at the left panel: at the largest scale the attention entropy is a small "
                "fraction of "
                "log n, so each token attends to nearly one token.",
            ),
        ],
    )
)


register(
    Rubric(
        label="ex-later-prove",
        criteria=(
            (1, "A causal row 1 is e_1^T, so the first token is x_1^T W_1 ... W_L by induction."),
            (
                2,
                "D(PX) <= (1 - delta) D(X): two rows share mass at least delta (their minimum), "
                "the rest are "
                "two non-negative vectors of equal sum 1 - sum min, each a scaled convex "
                "combination.",
            ),
            (1, "Exponential convergence to x_1: (1 - delta)^L, token 1 fixed by part 1."),
            (1, "The band of a product of L banded matrices is L (w - 1), by induction."),
            (
                1,
                "Disjoint dependence sets while 2 L (w - 1) < n - 1, and an input (0 on one set, "
                "e on the "
                "other) that keeps D(X_L) = D(X).",
            ),
        ),
        wrong_turns=(
            (
                "Bounding ||(a - b)^T X|| by the triangle inequality over all tokens: a factor 2, "
                "no contraction."
            ),
            "Taking the band of the product as w - 1 instead of L (w - 1).",
            (
                "Using part 2 without the causal mask: token 1 then moves too, and the limit is "
                "not x_1."
            ),
        ),
    )
)
