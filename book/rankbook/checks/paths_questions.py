"""Exercises of the chapter "The path decomposition" answered by a value (predictions, a figure read
off) and the rubrics of those graded by hand; the functions to write are in :mod:`.paths`."""

from rankcollapse import paths

from .questions import Question
from .registry import Rubric, register

# ------------------------------------------------------------------ value exercises (Questions)

register(
    Question(
        id="paths.predict_length",
        kind="predict",
        # the measurement the chapter runs after the prediction: the share of paths of each length
        answer=lambda: int(paths.length_distribution(12, 1).argmax()),
        choices=(0, 6, 12),
        same_role=(paths.length_distribution,),  # the measurement the prediction comes before
        hint="Count the paths of each length, C(L, l) H^l, for L = 12 and H = 1.",
        mistakes=[
            (
                12,
                "With one head a layer offers two choices, the head or the skip, equally often: "
                "a path through every layer is one of 2^12 paths, not the typical one.",
            ),
            (
                0,
                (
                    "The path that skips every layer is also only one of 2^12; C(12, l) is largest "
                    "in the middle."
                ),
            ),
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
        hint="A path of length 1 goes through a head in one of the 3 layers and skips the other "
        "two.",
        mistakes=[
            (3, "You chose the layer the path goes through, but not which of its 2 heads."),
            (2, "You chose the head, but not which of the 3 layers the path goes through."),
            (
                1,
                (
                    "The figure draws one path of each length; count every path of length 1, not "
                    "only the one drawn."
                ),
            ),
        ],
    )
)


# ------------------------------------------------------------------ graded by hand

register(
    Rubric(
        label="ex-paths-explain",
        criteria=(
            (
                1,
                "Says why the shares can add up to more than one: the norm of a sum is at most the "
                "sum of the norms, equal only when the terms are aligned, so a sum above one says "
                "the "
                "terms are not aligned; cancelling is a claim about the cross terms (their inner "
                "products), which the shares alone do not show.",
            ),
            (
                1,
                "Says that the paths share every attention matrix of the forward pass, so they are "
                "not independent members of an ensemble.",
            ),
            (
                1,
                "Says where the ensemble reading holds: the decomposition is exact only with the "
                "attention frozen; it tells which lengths carry the output, not what separately "
                "trained shallow networks would do.",
            ),
        ),
    )
)

register(
    Rubric(
        label="ex-paths-prove",
        criteria=(
            (
                1,
                (
                    "Base case, and the skip written as head 0 of each layer: one layer is a sum "
                    "of H + 1 terms."
                ),
            ),
            (
                2,
                "Induction step: substitutes the hypothesis into layer L, distributes, and says "
                "why the "
                "latest layer's P is leftmost and its W rightmost (left and right "
                "multiplication); every "
                "path appears exactly once.",
            ),
            (
                1,
                (
                    "Counts the paths of length l as binom(L, l) H^l and checks that they add up "
                    "to (H+1)^L."
                ),
            ),
            (
                1,
                (
                    "Biases: the extra term stays of the form 1 c^T, because P 1 = 1 "
                    "(row-stochastic attention)."
                ),
            ),
        ),
        wrong_turns=(
            "The attention products in the order P(1) ... P(L) (first layer leftmost): the "
            "induction "
            "step loses its 2 points unless the order is derived and right.",
            "Forgetting the length-0 path (the skip in every layer) or counting binom(L, l) "
            "alone: the "
            "counting point is lost.",
            "Treating the network as linear in X with the attention recomputed: the identity "
            "needs the "
            "attention frozen; say so, at most 1 point off.",
        ),
    )
)
