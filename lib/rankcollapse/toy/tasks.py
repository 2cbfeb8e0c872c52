"""The toy tasks: their settings (:class:`ToyTask`), the official code's runs for comparison, and
what a task means for data and network (:func:`task_data`, :func:`toy_config`). Training them is
:mod:`rankcollapse.toy.train`'s job (which re-exports these names).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._validate import check_choice, check_int, check_positive_float
from . import data as _data
from .model import ToyConfig

__all__ = [
    "ToyTask",
    "task_data",
    "toy_config",
    "TASKS",
    "CIRCLE_VARIANTS",
    "OFFICIAL",
    "OFFICIAL_LINES",
    "OFFICIAL_MEMORIZATION_TOKENS",
    "official_steps",
]

TASKS = ("sorting", "convex_hull", "memorization", "circle")

# The official code's settings (the commands of its README, arguments.py's defaults, the scripts'
# optimisers), for comparison with the book's presets. Memorization: 500 RTE sequences of up to
# 128 WordPiece tokens, evaluated on the training set.
OFFICIAL = {
    "sorting": dict(
        n_layers=6,
        n_heads=2,
        d_model=48,
        seq_len=8,
        vocab=10,
        n_train=1000,
        n_eval=200,
        epochs=65,
        batch=30,
        lr=1e-5,
    ),
    "convex_hull": dict(
        n_layers=6,
        n_heads=3,
        d_model=84,
        seq_len=10,
        n_train=10000,
        n_eval=300,
        epochs=70,
        batch=30,
        lr=1e-5,
        weight_decay=1e-3,
        schedule="step",
        milestones=(15, 30, 40, 50, 60),
        gamma=0.91,
    ),
    "memorization": dict(
        n_layers=6,
        n_heads=2,
        d_model=250,
        seq_len=128,
        n_train=500,
        n_eval=500,
        epochs=50,
        batch=8,
        lr=3e-4,
        schedule="linear",
    ),
    "circle": dict(
        n_layers=1,
        n_heads=2,
        d_model=32,
        seq_len=2,
        n_train=1000,
        n_eval=1,
        epochs=70,
        batch=30,
        lr=1e-5,
    ),
}
# The official memorization set: 500 RTE sentence pairs of up to 128 WordPiece tokens, about
# 30,000 labelled tokens in all (an approximate count; the data set is not shipped with the book).
OFFICIAL_MEMORIZATION_TOKENS = 30_000


def official_steps(task: str) -> int:
    """Optimiser steps of the official code's run of ``task``: ``epochs * ceil(n_train / batch)``
    with :data:`OFFICIAL`'s settings (sorting 2,210, convex hull 23,380, memorization 3,150)."""
    check_choice("task", task, tuple(OFFICIAL))
    o = OFFICIAL[task]
    return o["epochs"] * -(-o["n_train"] // o["batch"])


# The constant lines of the official figures ("obtained by running the model and using all
# paths", typed into run_sort.py, run_convex_hull.py and trainer.py): (full model, baseline, its
# name).
OFFICIAL_LINES = {
    "sorting": (0.98, 0.1, "random predictor"),
    "convex_hull": (0.9, 0.54, "majority predictor"),
    "memorization": (0.85, 0.5, "random predictor"),
}
CIRCLE_VARIANTS = ("attention", "skip", "mlp")


@dataclass(frozen=True)
class ToyTask:
    """Settings of one toy task: data, network and optimiser (every field enters the cache key).

    task: one of :data:`TASKS`. n_train/n_eval: sequences (memorization evaluates on its
    training set; circle: ``n_train`` points on the circle). seq_len: tokens per sequence.
    vocab: sorting's number of values. epochs, batch, lr: Adam's. weight_decay: Adam's L2
    term. schedule: ``"constant"``, ``"step"`` (multiply by ``gamma`` at each epoch in
    ``milestones``) or ``"linear"`` (decay to 0 over training, as the Hugging Face Trainer).
    variant: circle only, one of :data:`CIRCLE_VARIANTS`.
    """

    task: str
    n_layers: int
    n_heads: int
    d_model: int
    seq_len: int
    n_train: int
    n_eval: int
    epochs: int
    batch: int
    lr: float
    vocab: int = 10
    weight_decay: float = 0.0
    schedule: str = "constant"
    milestones: tuple = ()
    gamma: float = 1.0
    variant: str = ""

    def __post_init__(self):
        check_choice("task", self.task, TASKS)
        for name in (
            "n_layers",
            "n_heads",
            "d_model",
            "seq_len",
            "n_train",
            "n_eval",
            "epochs",
            "batch",
        ):
            check_int(name, getattr(self, name), minimum=0 if name == "epochs" else 1)
        check_positive_float("lr", self.lr)
        check_choice("schedule", self.schedule, ("constant", "step", "linear"))
        object.__setattr__(self, "milestones", tuple(self.milestones))
        if self.task == "circle":
            check_choice("variant", self.variant, CIRCLE_VARIANTS)
        elif self.variant:
            raise ValueError(
                f"variant is for the circle task only, got {self.variant!r} for {self.task!r}"
            )

    @property
    def steps(self) -> int:
        """Optimiser steps of a training run: ``epochs * ceil(n_train / batch)`` (circle:
        ``n_train`` is the number of points, and the pairs are ``n_train // 2 - 1``)."""
        n = self.n_train // 2 - 1 if self.task == "circle" else self.n_train
        return self.epochs * -(-n // self.batch)

    def replace(self, **changes) -> ToyTask:
        from dataclasses import replace

        return replace(self, **changes)


def check_task(task) -> ToyTask:
    """``task`` if it is a :class:`ToyTask`; a ``TypeError`` naming ``task`` otherwise."""
    if not isinstance(task, ToyTask):
        raise TypeError(f"task must be a ToyTask, got {type(task).__name__}")
    return task


def task_data(task: ToyTask, seed: int) -> _data.TaskData:
    """The seeded data of ``task`` (a :class:`ToyTask`, else a ``TypeError``; circle: the pairs, as
    ``X_train``/``y_train`` float)."""
    if check_task(task).task == "sorting":
        return _data.sorting(task.n_train, task.n_eval, task.seq_len, task.vocab, seed=seed)
    if task.task == "convex_hull":
        return _data.convex_hull(task.n_train, task.n_eval, task.seq_len, seed=seed)
    if task.task == "memorization":
        return _data.memorization(task.n_train, task.seq_len, seed=seed)
    X, Y = _data.circle_pairs(task.n_train)
    return _data.TaskData(X, Y, X, Y, 2, 0)


def toy_config(task: ToyTask, data: _data.TaskData) -> ToyConfig:
    """The network for ``task``: the official code's embedding for it, ``rc.san`` in the middle."""
    check_task(task)
    common = dict(
        n_layers=task.n_layers, n_heads=task.n_heads, d_model=task.d_model, n_out=data.n_labels
    )
    if task.task == "sorting":
        return ToyConfig(**common, vocab=data.vocab, positions=task.seq_len)
    if task.task == "memorization":  # the official memorization model has no position embeddings
        return ToyConfig(**common, vocab=data.vocab)
    if task.task == "convex_hull":
        return ToyConfig(**common, inputs="points", ffn2=True)
    # circle: Linear(2, d), LayerNorm, one post-LN attention layer (with a skip or an MLP, or
    # neither),
    # Linear(d, 2): the official circle model always normalises, which keeps the rollout bounded
    v = task.variant
    return ToyConfig(
        **common,
        inputs="points",
        standardise=False,
        skip=v == "skip",
        mlp=task.d_model if v == "mlp" else 0,
    )
