"""Exercises of the chapter "The path decomposition"."""

import math

import torch

from .. import paths
from . import Exercise, Question, register


def _count_cases():
    return [(L, H, l) for L in (0, 1, 2, 5, 12) for H in (1, 2, 3, 12) for l in range(L + 1)]


register(
    Exercise(
        id="paths.count",
        reference=lambda L, H, l: paths.path_count(L, H, l),
        cases=_count_cases,
        hint="A path of length l chooses which l layers it goes through, then one head in each.",
        mistakes=[
            (lambda L, H, l: H**l, "You chose the heads but not which l of the L layers the path goes through."),
            (lambda L, H, l: math.comb(L, l), "You chose the layers but not which of the H heads in each."),
            (lambda L, H, l: math.comb(L, l) * (H + 1) ** l, "A layer the path goes through offers H heads; the skip is not one of them."),
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
        hint="Each layer is crossed through a head with probability H/(H+1) when every path is equally likely.",
        mistakes=[
            (lambda L, H: L / 2, "Not every length is equally likely: there are more paths through heads than skips."),
            (lambda L, H: L * (H - 1) / H, "The skip is one choice out of H + 1 in each layer, not out of H."),
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
    return {(None, None): X, (0, None): P1 @ X @ W1, (None, 0): P2 @ X @ W2, (0, 0): P2 @ P1 @ X @ W1 @ W2}


register(
    Exercise(
        id="paths.two_layer",
        reference=_two_layer,
        cases=_two_layer_cases,
        hint="Expand (I + P2 . W2) applied to (X + P1 X W1): four terms, one per path.",
        mistakes=[
            (lambda X, P1, P2, W1, W2: {**_two_layer(X, P1, P2, W1, W2), (0, 0): P1 @ P2 @ X @ W1 @ W2},
             "Is the later layer's attention on the left? Layer 2 mixes the tokens that layer 1 produced: P2 P1 X."),
            (lambda X, P1, P2, W1, W2: {**_two_layer(X, P1, P2, W1, W2), (0, 0): P2 @ P1 @ X @ W2 @ W1},
             "The value maps act on the right in the order the layers apply them: X W1 W2."),
            (lambda X, P1, P2, W1, W2: {k: v for k, v in _two_layer(X, P1, P2, W1, W2).items() if k != (None, None)},
             "Don't forget the path that skips both layers: it carries X through untouched."),
        ],
    )
)


# ------------------------------------------------------------------ value exercises (Questions)

register(
    Question(
        id="paths.predict_length",
        kind="predict",
        # the measurement the chapter runs after the prediction: the share of paths of each length
        answer=lambda: int(paths.length_distribution(12, 1).argmax()),
        choices=(0, 6, 12),
        hint="Count the paths of each length, C(L, l) H^l, for L = 12 and H = 1.",
        mistakes=[
            (12, "With one head a layer offers two choices, the head or the skip, equally often: "
                 "a path through every layer is one of 2^12 paths, not the typical one."),
            (0, "The path that skips every layer is also only one of 2^12; C(12, l) is largest in the middle."),
        ],
    )
)

register(
    Question(
        id="paths.read_diagram",
        kind="read",
        # the network the figure draws: 3 layers, 2 heads, skips
        answer=lambda: paths.path_count(3, 2, 1),
        rtol=0.0,
        hint="A path of length 1 goes through a head in one of the 3 layers and skips the other two.",
        mistakes=[
            (3, "You chose the layer the path goes through, but not which of its 2 heads."),
            (2, "You chose the head, but not which of the 3 layers the path goes through."),
            (1, "The figure draws one path of each length; count every path of length 1, not only the one drawn."),
        ],
    )
)
