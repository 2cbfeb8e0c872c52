"""Exercises of the chapter "After the paper: five later results"."""

from . import Exercise, Question, register  # noqa: F401

# REGION helperC
import torch  # noqa: E402


def _window_attention(S, window):
    """Row softmax of the logits ``S`` ``(n, n)`` with keys outside ``|i - j| < window`` given weight 0
    (the mask the core applies, :func:`rankcollapse.ops.allowed_keys`)."""
    from ..ops import allowed_keys

    n = S.shape[-1]
    allowed = allowed_keys(n, None, False, window)
    return torch.softmax(S if allowed is None else S.masked_fill(~allowed.reshape(n, n), float("-inf")), dim=-1)


def _band(n, window, lower, upper=None):
    i = torch.arange(n)
    diff = i[:, None] - i[None, :]
    return (diff > -window if upper is None else diff >= -upper) & (diff < window if lower is None else diff <= lower)


def _window_cases():
    gen = torch.Generator().manual_seed(17)
    return [(torch.randn(n, n, generator=gen, dtype=torch.float64) * 2, w) for n, w in ((5, 2), (6, 3), (7, 1), (4, 4))]


register(
    Exercise(
        id="later.window_attention",
        reference=_window_attention,
        cases=_window_cases,
        hint="Set the logits of the hidden keys to -inf before the softmax, so that each row's weights sum to one "
             "over the keys with |i - j| < window.",
        mistakes=[
            (lambda S, w: torch.softmax(S.masked_fill(~_band(S.shape[-1], w, None), 0.0), dim=-1),
             "A logit of 0 is not a hidden key: exp(0) = 1 still gives it weight. Mask with -inf."),
            (lambda S, w: torch.softmax(S.masked_fill(~_band(S.shape[-1], w, w, w), float("-inf")), dim=-1),
             "The window is one token too wide: a window of w keeps |i - j| < w, so w = 1 is the token alone."),
            (lambda S, w: torch.softmax(S.masked_fill(~_band(S.shape[-1], w, w - 1, 0), float("-inf")), dim=-1),
             "That window looks back only (a causal window): keep the keys on both sides, |i - j| < w."),
            (lambda S, w: torch.softmax(S, dim=-1) * _band(S.shape[-1], w, None),
             "Zeroing the weights after the softmax leaves rows that no longer sum to one: mask the logits before it."),
        ],
    )
)


def _causal_against_full():
    """Whether causal attention collapses "faster" or "slower" than full attention (or "the same"),
    from the fitted rates of small random networks (rc.later.masks.mask_study)."""
    from ..later.masks import mask_study

    study = mask_study(masks=("full", "causal"), window=2, n_layers=12, n_heads=2, d_model=16, n_tokens=12,
                       samples=2, seed=0, generator=torch.Generator().manual_seed(0))
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
        hint="Look at the first token: under a causal mask, whom does it attend to, at every layer?",
        mistakes=[
            ("faster", "Fewer keys do not mean faster averaging: the first token attends only to itself and never moves, "
                       "and the others are pulled towards it at a fixed fraction per layer, while full attention's "
                       "rows become uniform as the tokens close in, which cubes the residual."),
            ("the same", "The mask changes the rate: the diagonal of a causal P stays large (token 1's is 1), so the "
                         "collapse is geometric, not doubly exponential."),
        ],
    )
)
# END REGION

# REGION helperD
# END REGION
