"""The paper's toy tasks as seeded data generators (Dong et al. 2021, Section 4).

Every generator takes a ``seed`` and returns a :class:`TaskData`: inputs and per-token labels
for a training set and an evaluation set. Settings follow the official code
(github twistedcubic/attention-rank-collapse: ``run_sort.py``, ``run_convex_hull.py``,
``run_memorization.py``, ``run_circle.py``); where the book departs from it, the chapter
"Which paths do trained networks use?" says so.

- **sorting**: a sequence of ``seq_len`` integers drawn uniformly from ``0..vocab-1`` (repeats
  allowed, as the official default); the label of position ``i`` is the ``i``-th smallest.
- **convex hull**: ``seq_len`` points uniform in ``[0, 10]^2`` plus one Gaussian offset
  (standard deviation 3.3) per sequence; a point's label is 1 when it is a vertex of the hull.
- **memorization**: windows of ``seq_len`` words of the book's own prose (lower-cased, split on
  whitespace and punctuation), each token with a random binary label; evaluated on the
  training set, since the task is to memorise it.
- **circle** (:func:`circle_pairs`): points on a circle of radius 0.3; the input is two points
  half a turn apart, the target the next point of each.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._validate import (
    check_cost,
    check_elements,
    check_int,
    check_points,
    check_positive_float,
    check_seed,
)
from ..corpus import words

__all__ = [
    "TaskData",
    "baselines",
    "sorting",
    "convex_hull",
    "memorization",
    "memorization_ceiling",
    "hull_labels",
    "words",
    "circle_pairs",
]


@dataclass
class TaskData:
    """A task's data. ``X_*``: long ``(N, n)`` token ids or float ``(N, n, 2)`` points;
    ``y_*``: long ``(N, n)`` labels; ``n_labels``: number of classes; ``vocab``: number of
    token ids (0 for point inputs)."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_eval: torch.Tensor
    y_eval: torch.Tensor
    n_labels: int
    vocab: int


MAX_HULL_POINTS = 2 * 10**6  # convex_hull labels its points in Python: about 10 s at the cap


def _gen(seed):
    return torch.Generator().manual_seed(check_seed("seed", seed))


def sorting(n_train: int, n_eval: int, seq_len: int = 8, vocab: int = 10, *, seed: int) -> TaskData:
    """Sorting: ``X`` uniform integers in ``[0, vocab)``, shape ``(N, seq_len)``; ``y =
    sort(X)``."""
    n_train, n_eval = check_int("n_train", n_train), check_int("n_eval", n_eval)
    seq_len, vocab = check_int("seq_len", seq_len), check_int("vocab", vocab, minimum=2)
    check_elements(
        "(n_train + n_eval) * seq_len",
        (n_train + n_eval) * seq_len * 2,
        alternative="ask for fewer sequences",
    )
    g = _gen(seed)
    X = torch.randint(vocab, (n_train + n_eval, seq_len), generator=g)
    y = torch.sort(X, dim=-1).values
    return TaskData(X[:n_train], y[:n_train], X[n_train:], y[n_train:], vocab, vocab)


def hull_labels(points: torch.Tensor) -> torch.Tensor:
    """1 for the points of ``points`` ``(n, 2)`` that are vertices of their convex hull, else 0.

    Andrew's monotone chain: sort by ``x`` (then ``y``), build the lower and upper chains,
    dropping a point whenever the turn is not strictly counter-clockwise (collinear points on
    an edge are not vertices).
    """
    return _hull_labels(check_points("points", points, dim=2))


def _hull_labels(points: torch.Tensor) -> torch.Tensor:
    pts = [tuple(p) for p in points.tolist()]
    order = sorted(range(len(pts)), key=lambda i: pts[i])

    def cross(o, a, b):
        return (pts[a][0] - pts[o][0]) * (pts[b][1] - pts[o][1]) - (pts[a][1] - pts[o][1]) * (
            pts[b][0] - pts[o][0]
        )

    def chain(idx):
        out = []
        for i in idx:
            while len(out) >= 2 and cross(out[-2], out[-1], i) <= 0:
                out.pop()
            out.append(i)
        return out

    hull = set(chain(order)) | set(chain(order[::-1]))
    labels = torch.zeros(len(pts), dtype=torch.long)
    labels[sorted(hull)] = 1
    return labels


def convex_hull(n_train: int, n_eval: int, seq_len: int = 10, *, seed: int) -> TaskData:
    """Convex hull: ``X`` float64 ``(N, seq_len, 2)``, ``y`` 1 on hull vertices
    (:func:`hull_labels`)."""
    n_train, n_eval = check_int("n_train", n_train), check_int("n_eval", n_eval)
    seq_len = check_int("seq_len", seq_len, minimum=3)
    check_cost(
        "(n_train + n_eval) * seq_len",
        (n_train + n_eval) * seq_len,
        MAX_HULL_POINTS,
        unit="points",
        alternative="ask for fewer sequences (each one's hull is found point by point in Python)",
    )
    g = _gen(seed)
    N = n_train + n_eval
    X = torch.rand(N, seq_len, 2, generator=g, dtype=torch.float64) * 10
    X = X + torch.randn(N, 1, 2, generator=g, dtype=torch.float64) * 3.3
    y = torch.stack([_hull_labels(x) for x in X])
    return TaskData(X[:n_train], y[:n_train], X[n_train:], y[n_train:], 2, 0)


def memorization(n_seq: int, seq_len: int = 128, *, seed: int) -> TaskData:
    """Memorization: ``n_seq`` consecutive windows of ``seq_len`` words, ids by first appearance,
    each token with a random label in ``{0, 1}``. The evaluation set is the training set."""
    n_seq, seq_len = check_int("n_seq", n_seq), check_int("seq_len", seq_len, minimum=2)
    check_elements(
        "n_seq * seq_len", n_seq * seq_len * 2, alternative="ask for fewer or shorter sequences"
    )
    w = words()
    if n_seq * seq_len > len(w):
        raise ValueError(
            f"the book's prose has {len(w)} words: n_seq * seq_len = {n_seq * seq_len} is more"
        )
    ids = {}
    X = torch.tensor([ids.setdefault(t, len(ids)) for t in w[: n_seq * seq_len]]).reshape(
        n_seq, seq_len
    )
    y = torch.randint(2, (n_seq, seq_len), generator=_gen(seed))
    return TaskData(X, y, X, y, 2, len(ids))


def memorization_ceiling(data: TaskData) -> float:
    """The highest token accuracy any network *without position embeddings* can reach on the
    memorization set ``data`` (its training set).

    Such a network treats the tokens of a sequence symmetrically (attention is permutation
    equivariant), so every occurrence of a word in one window gets the same prediction: the best
    it can do is the more frequent label of that word in that window. The ceiling is the
    fraction of tokens those majority labels get right.
    """
    if not isinstance(data, TaskData):
        raise TypeError(f"data must be a TaskData, got {type(data).__name__}")
    if not isinstance(data, TaskData) or data.vocab == 0:
        raise TypeError("data must be the TaskData of the memorization task (token ids)")
    X, y = data.X_train, data.y_train
    key = X * data.n_labels + y  # (word, label) pairs, counted window by window
    counts = torch.zeros(len(X), data.vocab * data.n_labels, dtype=torch.long)
    counts.scatter_add_(1, key, torch.ones_like(key))
    best = counts.view(len(X), data.vocab, data.n_labels).amax(-1).sum()
    return float(best) / y.numel()


def circle_pairs(n_points: int = 1000, radius: float = 0.3):
    """The circle toy's data: ``(X, Y)`` float64 of shape ``(n_points // 2 - 1, 2, 2)``.

    ``n_points`` points ``p_k`` at angles ``2 pi k / n_points`` on a circle of ``radius``; the
    input ``X[i]`` is the pair ``(p_i, p_{i+m})`` with ``m = n_points // 2 - 1``, nearly half a
    turn apart, and the target ``Y[i]`` the pair one step further, ``(p_{i+1}, p_{i+m+1})``.
    Sizes whose tensors would pass the library's memory cap are refused before any allocation.
    """
    n_points = check_int("n_points", n_points, minimum=6)
    check_elements(
        "n_points",
        n_points,
        itemsize=96,
        alternative="ask for fewer points (the book's circle has 1000)",
    )
    radius = check_positive_float("radius", radius)
    theta = torch.arange(n_points, dtype=torch.float64) * 2 * torch.pi / n_points
    p = radius * torch.stack([torch.cos(theta), torch.sin(theta)], dim=-1)
    m = n_points // 2 - 1
    i = torch.arange(m)
    X = torch.stack([p[i], p[i + m]], dim=1)
    Y = torch.stack([p[i + 1], p[i + m + 1]], dim=1)
    return X, Y


def baselines(data: TaskData) -> dict[str, float]:
    """Trivial predictors' token accuracy on the evaluation set: ``chance`` (uniform over the
    labels, ``1 / n_labels``) and ``majority`` (always the training set's most frequent label)."""
    if not isinstance(data, TaskData):
        raise TypeError(f"data must be a TaskData, got {type(data).__name__}")
    top = torch.bincount(data.y_train.flatten(), minlength=data.n_labels).argmax()
    return {"chance": 1 / data.n_labels, "majority": float((data.y_eval == top).double().mean())}
