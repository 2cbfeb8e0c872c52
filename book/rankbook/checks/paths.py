"""Exercises of the chapter "The path decomposition"."""

import math

import torch

from rankcollapse import paths

from .registry import Exercise, register


def _count_cases():
    return [(L, H, l) for L in (0, 1, 2, 5, 12) for H in (1, 2, 3, 12) for l in range(L + 1)]


register(
    Exercise(
        id="paths.count",
        reference=lambda L, H, l: paths.path_count(L, H, l),
        cases=_count_cases,
        hint="A path of length l chooses which l layers it goes through, then one head in each.",
        mistakes=[
            (
                lambda L, H, l: H**l,
                "You chose the heads but not which l of the L layers the path goes through.",
            ),
            (
                lambda L, H, l: math.comb(L, l),
                "You chose the layers but not which of the H heads in each.",
            ),
            (
                lambda L, H, l: math.comb(L, l) * (H + 1) ** l,
                "A layer the path goes through offers H heads; the skip is not one of them.",
            ),
        ],
    )
)


def _mean_length_cases():
    return [(L, H) for L in (1, 3, 12, 24, 96) for H in (1, 2, 12, 16, 96)]


register(
    Exercise(
        id="paths.mean_length",
        reference=lambda L, H: paths.mean_path_length(L, H),
        cases=_mean_length_cases,
        hint=(
            "Each layer is crossed through a head with probability H/(H+1) when every path is "
            "equally likely."
        ),
        mistakes=[
            (
                lambda L, H: L * H // (H + 1),
                "Integer division: `//` rounds down (1 // 2 is 0); divide with `/`.",
            ),
            (
                lambda L, H: L / 2,
                (
                    "Not every length is equally likely: there are more paths through heads than "
                    "skips."
                ),
            ),
            (
                lambda L, H: L * (H - 1) / H,
                "The skip is one choice out of H + 1 in each layer, not out of H.",
            ),
        ],
    )
)


def _two_layer_cases():
    gen = torch.Generator().manual_seed(2021)
    cases = []
    for n, d in ((4, 3), (6, 5)):
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        P1 = torch.softmax(torch.randn(n, n, generator=gen, dtype=torch.float64), dim=-1)
        P2 = torch.softmax(torch.randn(n, n, generator=gen, dtype=torch.float64), dim=-1)
        W1 = torch.randn(d, d, generator=gen, dtype=torch.float64)
        W2 = torch.randn(d, d, generator=gen, dtype=torch.float64)
        cases.append((X, P1, P2, W1, W2))
    return cases


def _two_layer(X, P1, P2, W1, W2):
    return {
        (None, None): X,
        (0, None): P1 @ X @ W1,
        (None, 0): P2 @ X @ W2,
        (0, 0): P2 @ P1 @ X @ W1 @ W2,
    }


register(
    Exercise(
        id="paths.two_layer",
        reference=_two_layer,
        cases=_two_layer_cases,
        points=2,  # the chapter's one medium exercise to implement
        same_role=(paths.enumerate_paths,),
        hint="Expand (I + P2 . W2) applied to (X + P1 X W1): four terms, one per path.",
        mistakes=[
            (
                lambda X, P1, P2, W1, W2: {
                    **_two_layer(X, P1, P2, W1, W2),
                    (0, 0): P1 @ P2 @ X @ W1 @ W2,
                },
                (
                    "Is the later layer's attention on the left? Layer 2 mixes the tokens that "
                    "layer 1 produced: P2 P1 X."
                ),
            ),
            (
                lambda X, P1, P2, W1, W2: {
                    **_two_layer(X, P1, P2, W1, W2),
                    (0, 0): P2 @ P1 @ X @ W2 @ W1,
                },
                "The value maps act on the right in the order the layers apply them: X W1 W2.",
            ),
            (
                lambda X, P1, P2, W1, W2: {
                    k: v for k, v in _two_layer(X, P1, P2, W1, W2).items() if k != (None, None)
                },
                "Don't forget the path that skips both layers: it carries X through untouched.",
            ),
        ],
    )
)


# ------------------------------------------------------------------ build it yourself


def _attention_layer(X, W_Q, W_K, W_V, W_O):
    """The library's layer (``rc.san.SAN``, one layer, no skip, no bias) on the given weights."""
    from rankcollapse.san import SAN, SANConfig

    H, d, dqk = W_Q.shape
    cfg = SANConfig(n_layers=1, n_heads=H, d_model=d, d_qk=dqk, d_v=W_V.shape[-1], dtype=X.dtype)
    model = SAN.from_weights(cfg, [dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)])
    return model(X).last_hidden_state.detach()


def _attention_mistake(transpose=False, scale=True, axis=-1):
    """A layer with one of the known mistakes: logits transposed, no 1/sqrt(d_qk), softmax over
    columns."""

    def layer(X, W_Q, W_K, W_V, W_O):
        out = torch.zeros_like(X)
        for h in range(W_Q.shape[0]):
            logits = (X @ W_Q[h]) @ (X @ W_K[h]).T
            logits = logits.T if transpose else logits
            if scale:
                logits = logits / math.sqrt(W_Q.shape[-1])
            out = out + torch.softmax(logits, dim=axis) @ X @ W_V[h] @ W_O[h]
        return out

    return layer


def _attention_cases():
    gen = torch.Generator().manual_seed(1706)
    cases = []
    for n, d, H, dqk, dv in ((4, 6, 1, 3, 3), (5, 8, 2, 4, 2), (7, 6, 3, 2, 2)):
        r = lambda *s: torch.randn(*s, generator=gen, dtype=torch.float64)  # noqa: E731
        cases.append(
            (r(n, d), r(H, d, dqk), r(H, d, dqk), r(H, d, dv), r(H, dv, d) / math.sqrt(H * dv))
        )
    return cases


register(
    Exercise(
        id="paths.attention_layer",
        reference=_attention_layer,
        cases=_attention_cases,
        points=2,
        hint="For each head: logits X W_Q (X W_K)^T / sqrt(d_qk), softmax along each row, then P X "
        "W_V W_O; "
        "add the heads.",
        mistakes=[
            (
                _attention_mistake(transpose=True),
                "Are your logits transposed? Row i holds token i's query against every key: (X "
                "W_Q)(X W_K)^T, "
                "not (X W_K)(X W_Q)^T.",
            ),
            (
                _attention_mistake(scale=False),
                (
                    "Is the 1/sqrt(d_qk) there? Divide the logits by the square root of the "
                    "query/key width."
                ),
            ),
            (
                _attention_mistake(axis=-2),
                "Each row of P must sum to one (token i averages the tokens): take the softmax "
                "along the last "
                "axis, over the keys.",
            ),
        ],
    )
)


def _by_length(X, Ps, Ws):
    """The dynamic programme over lengths with skips: ``(L+1, n, d)``, entry ``l`` the length-``l``
    sum."""
    terms = [X]
    for P, W in zip(Ps, Ws):
        heads = lambda Y: sum(P[h] @ Y @ W[h] for h in range(P.shape[0]))  # noqa: E731
        terms = (
            [terms[0]]
            + [terms[l] + heads(terms[l - 1]) for l in range(1, len(terms))]
            + [heads(terms[-1])]
        )
    return torch.stack(terms)


def _by_length_cases():
    gen = torch.Generator().manual_seed(1999)
    cases = []
    for L, H, n, d in ((1, 2, 3, 2), (2, 1, 4, 3), (3, 2, 4, 3), (4, 3, 5, 2)):
        X = torch.randn(n, d, generator=gen, dtype=torch.float64)
        Ps = torch.softmax(torch.randn(L, H, n, n, generator=gen, dtype=torch.float64), dim=-1)
        Ws = torch.randn(L, H, d, d, generator=gen, dtype=torch.float64) / math.sqrt(H * d)
        cases.append((X, Ps, Ws))
    return cases


def _shifted_down(X, Ps, Ws):  # entry l holds the length-(l+1) sum
    T = _by_length(X, Ps, Ws)
    return torch.cat([T[1:], torch.zeros_like(T[:1])])


def _shifted_up(X, Ps, Ws):  # entry l holds the length-(l-1) sum
    T = _by_length(X, Ps, Ws)
    return torch.cat([torch.zeros_like(T[:1]), T[:-1]])


register(
    Exercise(
        id="paths.by_length",
        points=3,  # its difficulty: the points rule (rankbook.checks)
        reference=_by_length,
        cases=_by_length_cases,
        same_role=(paths.decompose_by_length,),
        hint="Keep one sum per length. A layer keeps each length-l sum (the skip) and adds the "
        "heads applied "
        "to the length-(l-1) sum; after L layers there are L + 1 lengths, 0 to L.",
        mistakes=[
            (
                _shifted_down,
                "Off by one: your entry l holds the paths through l + 1 heads. The length-0 sum "
                "is X "
                "itself, at index 0.",
            ),
            (
                _shifted_up,
                "Off by one: your entry l holds the paths through l - 1 heads. A head moves a "
                "term from "
                "length l - 1 to length l, and the length-0 sum X sits at index 0.",
            ),
            (
                lambda X, Ps, Ws: _by_length(X, Ps, Ws)[:-1],
                (
                    "Off by one: after L layers there are L + 1 lengths, 0 to L; the full-depth "
                    "sum is missing."
                ),
            ),
        ],
    )
)
