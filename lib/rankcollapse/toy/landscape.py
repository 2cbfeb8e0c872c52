"""Filter-normalised loss slices of a trained toy network (Li, Xu, Taylor, Studer and Goldstein,
2018).

The loss along a random direction in weight space, :math:`\\alpha \\mapsto \\mathcal L(\\theta +
\\alpha\\,\\delta)`, with ``delta`` *filter-normalised*: a Gaussian direction rescaled, unit by
unit, so that the weights feeding each output unit move by the norm of those weights
(:func:`filter_normalised_direction`). That removes the scale a network can hide in its weights,
so that slices of two networks can be set side by side. Here a "filter" is, for a matrix used
as ``X @ W`` (the SAN's ``W_Q, W_K, W_V, W_O``), one column of ``W`` (one head's one output
feature); for an ``nn.Linear`` weight, one row; for an embedding table, one row (one token's
or position's vector). One-dimensional parameters (biases, LayerNorm gains) are not moved, a
choice of this book. Book: chapter "What the theorem does not say", section "Other accounts of
why skip connections matter".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validate import check_generator, check_int, check_positive_float, check_seed
from .model import ToyModel
from .train import token_accuracy

__all__ = [
    "filter_normalised_direction",
    "training_loss",
    "LossSlice",
    "loss_slice",
    "LandscapeStudy",
    "landscape_study",
]


def _unit_axis(name: str, p: torch.Tensor) -> int:
    """The axis summed over to get one filter's norm."""
    if name.startswith("san."):
        return -2  # (H, d_in, d_out): a column per head and output feature
    return -1  # nn.Linear (out, in) and tables (rows, d): a row


def filter_normalised_direction(model: ToyModel, generator: torch.Generator) -> dict:
    """A random direction ``{name: tensor}`` over ``model``'s trainable parameters of two or more
    dimensions, each filter rescaled to the norm of the same filter of the weights (zero for
    one-dimensional parameters and for frozen ones)."""
    if not isinstance(model, ToyModel):
        raise TypeError(f"model must be a rc.toy.ToyModel, got {type(model).__name__}")
    check_generator("generator", generator)
    out = {}
    for name, p in model.named_parameters():
        if p.ndim < 2 or not p.requires_grad:
            out[name] = torch.zeros_like(p)
            continue
        d = torch.randn(p.shape, generator=generator, dtype=torch.float64).to(p.dtype)
        axis = _unit_axis(name, p)
        scale = p.detach().norm(dim=axis, keepdim=True) / d.norm(dim=axis, keepdim=True).clamp_min(
            1e-300
        )
        out[name] = d * scale
    return out


def _loss_and_accuracy(model, X, y):
    with torch.no_grad():
        out = model(X)
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        return float(loss), token_accuracy(out, y)


def training_loss(model: ToyModel, X, y) -> float:
    """Mean token cross-entropy of ``model`` on ``(X, y)`` (the loss it was trained on), no
    gradient."""
    if not isinstance(model, ToyModel):
        raise TypeError(f"model must be a rc.toy.ToyModel, got {type(model).__name__}")
    return _loss_and_accuracy(model, X, y)[0]


@dataclass
class LossSlice:
    """``losses`` ``(directions, len(alphas))``: the training loss at ``theta + alpha delta_i``;
    ``accuracy`` the same for the token accuracy; ``loss0`` the loss at the trained weights."""

    alphas: np.ndarray
    losses: np.ndarray
    accuracy: np.ndarray
    loss0: float

    def rise(self, alpha: float) -> float:
        """The mean, over directions and both signs, of ``loss(+-alpha) - loss(0)`` (nearest grid
        points)."""
        i = [int(np.argmin(np.abs(self.alphas - a))) for a in (-alpha, alpha)]
        return float(self.losses[:, i].mean() - self.loss0)

    def local_minima(self) -> np.ndarray:
        """Per direction, the number of interior grid points lower than both neighbours: 1 for
        a single basin, more for a rough ("chaotic", in Li et al.'s word) slice;
        ``(directions,)``."""
        mid = self.losses[:, 1:-1]
        return ((mid < self.losses[:, :-2]) & (mid < self.losses[:, 2:])).sum(1)


def loss_slice(model: ToyModel, X, y, *, alphas, directions: int = 3, seed: int = 0) -> LossSlice:
    """The filter-normalised 1-D loss slices of ``model`` on ``(X, y)`` along ``directions``
    random directions (:func:`filter_normalised_direction`, drawn from ``seed``), at the
    steps ``alphas`` (a sequence holding 0). The model is left unchanged."""
    if not isinstance(model, ToyModel):
        raise TypeError(f"model must be a rc.toy.ToyModel, got {type(model).__name__}")
    alphas = np.asarray(alphas, dtype=float)
    if (
        alphas.ndim != 1
        or len(alphas) < 3
        or not np.all(np.isfinite(alphas))
        or not np.any(alphas == 0)
    ):
        raise ValueError("alphas must be a sequence of at least three finite steps, one of them 0")
    directions, seed = check_int("directions", directions), check_seed("seed", seed)
    gen = torch.Generator().manual_seed(seed)
    theta = {n: p.detach().clone() for n, p in model.named_parameters()}
    loss0 = training_loss(model, X, y)
    losses, acc = np.zeros((directions, len(alphas))), np.zeros((directions, len(alphas)))
    try:
        for i in range(directions):
            delta = filter_normalised_direction(model, gen)
            for j, a in enumerate(alphas):
                with torch.no_grad():
                    for n, p in model.named_parameters():
                        p.copy_(theta[n] + float(a) * delta[n])
                losses[i, j], acc[i, j] = _loss_and_accuracy(model, X, y)
    finally:
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(theta[n])
    return LossSlice(alphas, losses, acc, loss0)


@dataclass
class LandscapeStudy:
    """The loss slices of the last checkpoint of each run of a
    :class:`~rankcollapse.toy.dynamics.DynamicsStudy`: ``slices[skip]`` a :class:`LossSlice` on the
    first ``n_loss`` training sequences."""

    slices: dict
    n_loss: int
    radius: float

    def at_radius(self, skip: bool) -> dict:
        """Numbers of the slices of one variant: ``loss0`` (the trained loss), ``rise`` (the mean
        rise of the loss at ``alpha = +-radius``, :meth:`LossSlice.rise`), ``minima`` (the largest
        number of local minima on any slice) and ``accuracy`` (the mean token accuracy left at
        ``+-radius``)."""
        s = self.slices[skip]
        i = [int(np.argmin(np.abs(s.alphas - a))) for a in (-self.radius, self.radius)]
        return {
            "loss0": s.loss0,
            "rise": s.rise(self.radius),
            "minima": int(s.local_minima().max()),
            "accuracy": float(s.accuracy[:, i].mean()),
        }


def landscape_study(
    study, *, alphas, directions: int = 3, n_loss: int = 256, radius: float = 0.5, seed: int = 0
) -> LandscapeStudy:
    """:func:`loss_slice` of both trained networks of ``study`` (their last checkpoint, float32 as
    trained) on their first ``n_loss`` training sequences, the same ``seed`` for both (the same
    Gaussian draws, each normalised to its own network's filters)."""
    from .dynamics import DynamicsStudy

    if not isinstance(study, DynamicsStudy):
        raise TypeError(
            f"study must be a rc.toy.dynamics.DynamicsStudy, got {type(study).__name__}"
        )
    radius = check_positive_float("radius", radius)
    slices = {}
    for skip, run in study.runs.items():
        n = check_int("n_loss", n_loss, maximum=len(run.data.X_train))
        slices[skip] = loss_slice(
            run.model_at(-1, torch.float32),
            run.data.X_train[:n],
            run.data.y_train[:n],
            alphas=alphas,
            directions=directions,
            seed=seed,
        )
    return LandscapeStudy(slices, n, radius)
