"""Exercises of the chapter "Which paths do trained networks use?" answered by a value (predictions,
a figure read off) and the rubrics of those graded by hand; the functions to write are in
:mod:`.toy_tasks`."""

from .questions import Question
from .registry import Rubric, register

# ------------------------------------------------------------------ one path's term


# ------------------------------------------------------------------ value exercises (Questions)


def _sorting(n_layers=None):
    """The sorting task of the fast preset (vocab 10 in both presets), its data and its network at
    initialisation (seed 0), with ``n_layers`` layers if given."""
    from rankcollapse.toy import ToyModel, ToyTask, task_data, toy_config

    from ..presets import PRESETS

    shape = dict(PRESETS["toy_tasks"]["fast"]["tasks"]["sorting"])
    if n_layers is not None:
        shape["n_layers"] = n_layers
    task = ToyTask("sorting", **shape)
    data = task_data(task, seed=0)
    return data, ToyModel(toy_config(task, data), seed=0).eval()


def _residual_carrier():
    """Which lengths carry the most of the output's residual in a 12-layer sorting network at
    initialisation."""
    from rankcollapse.paths import length_profile

    data, init = _sorting(n_layers=12)
    share = length_profile(init.san, init.embed(data.X_eval[:8]))["residual_share"].mean(-1)
    best, L = int(share.argmax()), share.shape[0] - 1
    return "shortest" if best == 0 else "longest" if best == L else "middle"


register(
    Question(
        id="toy_tasks.predict_init_residual",
        kind="predict",
        answer=_residual_carrier,
        choices=("shortest", "middle", "longest"),
        hint=(
            "Chapter 'The path decomposition' measured which lengths carry the residual at "
            "initialisation."
        ),
        mistakes=[
            (
                "longest",
                "Each head a path crosses shrinks its term's residual by a roughly constant "
                "factor: "
                "the long paths are the collapsed ones.",
            ),
            (
                "middle",
                "The output's norm peaks at middle lengths, where there are many paths; its "
                "residual, "
                "the part that tells tokens apart, sits in the shortest.",
            ),
        ],
    )
)


def _chance():
    from rankcollapse.toy import baselines

    data, _ = _sorting()
    return baselines(data)["chance"]


register(
    Question(
        id="toy_tasks.read_chance",
        kind="read",
        answer=_chance,
        rtol=0.02,
        hint=(
            "The dotted line is the trivial predictor: for sorting, a uniform guess among the "
            "labels."
        ),
        mistakes=[
            (
                0.125,
                "One over the sequence length (8 tokens): but each output token is one of the "
                "vocab's values, "
                "not one of the positions.",
            ),
            (
                0.5,
                "A guess is right with probability one over the number of labels: the sorted "
                "tokens take "
                "one of 10 values.",
            ),
        ],
    )
)


register(
    Rubric(
        label="ex-toy-prove",
        criteria=(
            (
                1,
                "Each path has probability 1/N_l: the kept layers are a uniform l-subset, the "
                "heads in them "
                "independent and uniform (the heads of skipped layers discarded).",
            ),
            (1, "Unbiased: one draw has mean T_l / N_l; linearity."),
            (1, "The mean squared error, using the independence of the draws."),
            (
                1,
                (
                    "Scale invariance of the standardisation: centring and the standard deviation "
                    "both scale by c."
                ),
            ),
            (
                2,
                "A one-token example where one sampled path's expected accuracy differs from that "
                "of T_l, and "
                "why: the accuracy is a non-linear function of the sum (standardise, then the "
                "largest score).",
            ),
        ),
        wrong_turns=(
            (
                "Counting H^L head choices instead of H^l: the probability comes out wrong; 1 "
                "point off."
            ),
            (
                "Concluding that the accuracy is unbiased because the sum is: the fifth criterion "
                "is lost."
            ),
            (
                "Computing the variance without independence (cross terms kept or dropped without "
                "reason)."
            ),
        ),
    )
)
