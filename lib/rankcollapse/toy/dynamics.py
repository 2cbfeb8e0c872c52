"""Weights over training time and tokens through depth, measured on the same training run.

Two things are called "rank collapse": token representations becoming the same through the
layers of one forward pass (the paper's), and weight matrices losing rank over training time.
This module trains one toy network (a :class:`rankcollapse.toy.ToyTask`, with or without skip
connections), keeps its weights at chosen epochs (:class:`TrainingRun`), and measures both at
every kept epoch from those same weights (:class:`DynamicsStudy`):

- the stable rank :math:`\\lVert W\\rVert_F^2 / \\lVert W\\rVert_2^2` of every attention weight
  matrix of the SAN (:func:`stable_rank`, :func:`weight_matrices`);
- the relative residual of the tokens through depth (``rc.residual.through_depth``) on held-out
  sequences, and the token accuracy there.

Training is ``rc.toy.train``'s own loop (``fit``), with an ``on_epoch`` callback that copies the
weights; the run with skips is therefore the very run ``rc.toy.train`` caches for the same task
and seed (its last weights are equal bit for bit). The kept weights are cached beside the toy
checkpoints (``rc.toy.cache_dir()``), under a name holding every setting. Book: chapter "What the
theorem does not say", section "Two meanings of rank collapse".
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from .._env import torch_threads
from .._validate import check_bool, check_int, check_seed
from ..residual import through_depth
from ..stats import geometric_mean
from . import data as _data
from .model import ToyModel
from .train import (
    ToyTask,
    cache_dir,
    check_task,
    code_version,
    fit,
    task_data,
    toy_config,
    training_code_hash,
)

__all__ = [
    "DYNAMICS_VERSION",
    "WEIGHT_KINDS",
    "stable_rank",
    "weight_matrices",
    "TrainingRun",
    "training_run",
    "DynamicsStudy",
    "dynamics_study",
]

# what a cached run holds: a hash of this module's code (rc.toy.code_version), part of its key
DYNAMICS_VERSION = code_version(Path(__file__))
WEIGHT_KINDS = ("W_Q", "W_K", "W_V", "W_O")
FLOOR = 1e-300  # a relative residual below this counts as this (an exact zero)


def stable_rank(W) -> torch.Tensor:
    """Stable rank :math:`\\lVert W\\rVert_F^2 / \\lVert W\\rVert_2^2` of each matrix of ``W``
    ``(..., m, k)``.

    Between 1 (one singular value carries everything) and the rank (all non-zero singular
    values equal); shape ``(...)``. A numpy array is taken as a tensor. A zero matrix has none: it
    is refused.
    """
    if isinstance(W, np.ndarray) and np.issubdtype(W.dtype, np.floating):
        W = torch.from_numpy(W)
    if not isinstance(W, torch.Tensor) or W.ndim < 2 or not W.is_floating_point():
        raise TypeError(
            f"W must be a floating-point tensor of matrices (..., m, k), got {type(W).__name__}"
            + (f" of shape {tuple(W.shape)}" if isinstance(W, torch.Tensor) else "")
        )
    with torch.no_grad():
        s = torch.linalg.svdvals(W)
        if (s[..., 0] == 0).any():
            raise ValueError("W must have no zero matrix (its stable rank is undefined)")
        return (s**2).sum(-1) / s[..., 0] ** 2


def weight_matrices(model: ToyModel) -> dict:
    """The SAN's attention weights of a toy network: ``{kind: (L, H, d_in, d_out)}`` for each of
    :data:`WEIGHT_KINDS` (per head: ``W_Q``, ``W_K``, ``W_V`` are ``d x d_head``, ``W_O`` is
    ``d_head x d``), detached copies."""
    if not isinstance(model, ToyModel):
        raise TypeError(f"model must be a rc.toy.ToyModel, got {type(model).__name__}")
    return {
        k: torch.stack([getattr(b, k).detach().clone() for b in model.san.layers])
        for k in WEIGHT_KINDS
    }


def _key(task: ToyTask, seed: int, skip: bool, epochs: tuple) -> str:
    blob = json.dumps(
        {
            "task": asdict(task),
            "seed": seed,
            "skip": skip,
            "epochs": list(epochs),
            "code": training_code_hash(),
            "dynamics": DYNAMICS_VERSION,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _epochs(checkpoints, total: int) -> tuple:
    """``checkpoints`` kept epochs: an int (evenly spaced from 0 to ``total``) or a sequence."""
    if isinstance(checkpoints, (list, tuple)):
        epochs = tuple(check_int("checkpoints", e, minimum=0, maximum=total) for e in checkpoints)
        if not epochs or list(epochs) != sorted(set(epochs)):
            raise ValueError(
                f"checkpoints must be increasing epochs in [0, {total}], got {checkpoints!r}"
            )
        return epochs
    k = check_int("checkpoints", checkpoints, minimum=2)
    return tuple(sorted(set(int(round(e)) for e in np.linspace(0, total, k))))


@dataclass
class TrainingRun:
    """One training run of a toy network, its weights kept at ``epochs``.

    ``states[k]``: the state dict at ``epochs[k]`` (float32, as trained); ``loss``: training loss
    per epoch; ``run_id``: the hash naming the run (task, seed, skip, kept epochs, code version),
    also the cache file's name; ``from_cache``: loaded rather than trained now.
    """

    task: ToyTask
    seed: int
    skip: bool
    epochs: tuple
    states: list
    loss: list
    run_id: str
    data: _data.TaskData
    path: Path
    from_cache: bool

    def model_at(self, k: int, dtype: torch.dtype = torch.float64) -> ToyModel:
        """The network with the weights of checkpoint ``k`` (an index into ``epochs``), in
        ``dtype``."""
        k = check_int("k", k, minimum=-len(self.states), maximum=len(self.states) - 1)
        config = replace(toy_config(self.task, self.data), skip=self.skip)
        model = ToyModel(config, seed=0, dtype=dtype)
        model.load_state_dict(self.states[k])
        return model.eval()

    def measure(self, k: int, n_probe: int) -> dict:
        """Both quantities at checkpoint ``k``, from its weights alone: ``stable_rank``
        ``{kind: (L, H)}``; ``residual`` ``(L + 1,)``, the geometric mean over the first ``n_probe``
        held-out sequences of the relative residual (mean centre, composite norm) of each layer's
        output, index 0 the SAN's input; ``accuracy`` on all held-out sequences; ``qk_norm``, the
        largest :math:`\\lVert W_Q W_K^\\top\\rVert_2 / \\sqrt{d_{head}}` over layers and heads;
        ``constant``, the fraction of held-out sequences on which it predicts one value at every
        position."""
        n_probe = check_int("n_probe", n_probe, maximum=len(self.data.X_eval))
        model = self.model_at(k)
        W = weight_matrices(model)
        with torch.no_grad():
            hidden = model.san(model.embed(self.data.X_eval[:n_probe])).hidden_states
            rel = through_depth(hidden)  # (L + 1, n_probe)
            qk = (
                torch.linalg.matrix_norm(W["W_Q"] @ W["W_K"].transpose(-1, -2), ord=2)
                / W["W_Q"].shape[-1] ** 0.5
            )
            pred = model(self.data.X_eval).argmax(-1)
            acc = float((pred == self.data.y_eval).double().mean())
            constant = float((pred == pred[..., :1]).all(-1).double().mean())
        return {
            "stable_rank": {kind: stable_rank(W[kind]).numpy() for kind in WEIGHT_KINDS},
            "residual": geometric_mean(rel.numpy(), axis=1, floor=FLOOR),
            "accuracy": acc,
            "constant": constant,
            "qk_norm": float(qk.max()),
        }

    def sensitivity(
        self, k: int, n_probe: int, *, eps: float = 1e-4, directions: int = 4, seed: int = 0
    ) -> np.ndarray:
        """Relative sensitivity of the SAN at checkpoint ``k`` to small random perturbations of its
        input tokens (``rc.lipschitz.perturbation_gain`` on the first ``n_probe`` held-out
        sequences' embeddings): ``(n_probe, directions)``. Chapter "The MLP trade-off", section
        4."""
        from ..lipschitz import perturbation_gain

        n_probe = check_int("n_probe", n_probe, maximum=len(self.data.X_eval))
        model = self.model_at(k)
        with torch.no_grad():
            X = model.embed(self.data.X_eval[:n_probe])
        return perturbation_gain(model.san, X, eps=eps, directions=directions, seed=seed).numpy()


def training_run(
    task: ToyTask,
    seed: int = 0,
    *,
    skip: bool = True,
    checkpoints=6,
    retrain: bool = False,
    progress: bool = False,
) -> TrainingRun:
    """Train ``task``'s network from ``seed`` (skip connections on or off), keeping its weights at
    ``checkpoints`` epochs (an int: evenly spaced from 0 to ``task.epochs``; or a sequence of
    epochs).

    The loop is ``rc.toy.train``'s; with ``skip=True`` the last kept weights at ``task.epochs``
    are those ``rc.toy.train(task, seed)`` returns. Cached under ``rc.toy.cache_dir()``
    (``retrain=True`` trains again). Only the sequence tasks (not the circle) are accepted.
    """
    check_task(task)
    if task.task == "circle":
        raise ValueError(
            "task must be a sequence task (sorting, convex_hull, memorization), got 'circle'"
        )
    seed, skip = check_seed("seed", seed), check_bool("skip", skip)
    retrain, progress = check_bool("retrain", retrain), check_bool("progress", progress)
    epochs = _epochs(checkpoints, task.epochs)
    data = task_data(task, seed)
    run_id = _key(task, seed, skip, epochs)
    path = cache_dir() / f"dynamics-{task.task}-{'skip' if skip else 'noskip'}-{run_id}.pt"
    if path.exists() and not retrain:
        try:
            saved = torch.load(path, weights_only=True)
            return TrainingRun(
                task, seed, skip, epochs, saved["states"], saved["loss"], run_id, data, path, True
            )
        except (RuntimeError, KeyError, EOFError) as err:
            print(f"ignoring {path} ({type(err).__name__}); training again", file=sys.stderr)
    model = ToyModel(replace(toy_config(task, data), skip=skip), seed=seed)
    kept = {}

    def keep(epoch, m):
        if epoch in epochs:
            kept[epoch] = {name: t.detach().clone() for name, t in m.state_dict().items()}

    with torch_threads(1):  # as rc.toy.train: results independent of the thread count
        model.train()
        log = fit(task, model, data, progress, on_epoch=keep)
    states = [kept[e] for e in epochs]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(
        {"states": states, "loss": log["loss"], "task": asdict(task), "seed": seed, "skip": skip},
        tmp,
    )
    os.replace(tmp, path)
    return TrainingRun(task, seed, skip, epochs, states, log["loss"], run_id, data, path, False)


@dataclass
class DynamicsStudy:
    """Both meanings of rank collapse on the same runs. For ``skip`` in ``(True, False)``:
    ``runs[skip]`` the :class:`TrainingRun`; ``stable_rank[skip]`` ``(K, 4 L H)`` every attention
    weight matrix's stable rank at each of the ``K`` kept ``epochs``; ``residual[skip]``
    ``(K, L + 1)``; ``accuracy[skip]``, ``qk_norm[skip]``, ``constant[skip]`` ``(K,)`` (see
    :meth:`TrainingRun.measure`); ``run_ids[skip]``."""

    runs: dict
    epochs: np.ndarray
    stable_rank: dict
    residual: dict
    accuracy: dict
    qk_norm: dict
    constant: dict
    n_probe: int

    @property
    def run_ids(self) -> dict:
        """``{skip: run_id}``: the run each quantity was read from."""
        return {skip: run.run_id for skip, run in self.runs.items()}

    def change(self, skip: bool) -> dict:
        """Relative changes from the first kept epoch to the last: ``stable_rank`` (largest over
        matrices of ``|sr_K / sr_0 - 1|``), ``stable_rank_mean`` (of the mean over matrices), and
        the last layer's relative residual as a factor ``last / first``."""
        sr, res = self.stable_rank[skip], self.residual[skip][:, -1]
        return {
            "stable_rank": float(np.abs(sr[-1] / sr[0] - 1).max()),
            "stable_rank_mean": float(sr[-1].mean() / sr[0].mean() - 1),
            "residual_factor": float(max(res[-1], FLOOR) / max(res[0], FLOOR)),
        }

    def numbers(self, skip: bool) -> dict:
        """The numbers of one variant at the first and the last kept epoch (floats): ``acc0``,
        ``acc`` (held-out token accuracy); ``res0``, ``res`` (the last layer's relative residual),
        ``res_in`` (the relative residual entering the attention layers, last epoch); ``sr0``,
        ``sr`` (mean stable rank); ``qk0``, ``qk`` (the largest
        :math:`\\lVert W_QW_K^\\top\\rVert_2/\\sqrt{d_{head}}`); ``constant`` (fraction of held-out
        sequences predicted as one value, last epoch); and :meth:`change`'s three numbers."""
        sr, res, acc, qk = (
            self.stable_rank[skip],
            self.residual[skip],
            self.accuracy[skip],
            self.qk_norm[skip],
        )
        return {
            "acc0": float(acc[0]),
            "acc": float(acc[-1]),
            "res0": float(res[0, -1]),
            "res": float(res[-1, -1]),
            "res_in": float(res[-1, 0]),
            "sr0": float(sr[0].mean()),
            "sr": float(sr[-1].mean()),
            "qk0": float(qk[0]),
            "qk": float(qk[-1]),
            "constant": float(self.constant[skip][-1]),
            **self.change(skip),
        }


def dynamics_study(
    task: ToyTask,
    seed: int = 0,
    *,
    checkpoints=6,
    n_probe: int = 32,
    retrain: bool = False,
    progress: bool = False,
) -> DynamicsStudy:
    """Train ``task``'s network with and without skip connections (:func:`training_run`) and, at
    every kept epoch, measure the stable ranks of its attention weights and the relative residual
    of its tokens through depth, both from that checkpoint's weights
    (:meth:`TrainingRun.measure`)."""
    check_task(task)
    # memorization: its training set
    n_eval = task.n_train if task.task == "memorization" else task.n_eval
    n_probe = check_int("n_probe", n_probe, maximum=n_eval)
    runs = {
        skip: training_run(
            task, seed, skip=skip, checkpoints=checkpoints, retrain=retrain, progress=progress
        )
        for skip in (True, False)
    }
    sr, res, acc, qk, const = {}, {}, {}, {}, {}
    for skip, run in runs.items():
        m = [run.measure(k, n_probe) for k in range(len(run.epochs))]
        sr[skip] = np.array(
            [np.concatenate([x["stable_rank"][kind].ravel() for kind in WEIGHT_KINDS]) for x in m]
        )
        res[skip] = np.array([x["residual"] for x in m])
        acc[skip] = np.array([x["accuracy"] for x in m])
        qk[skip] = np.array([x["qk_norm"] for x in m])
        const[skip] = np.array([x["constant"] for x in m])
    return DynamicsStudy(runs, np.array(runs[True].epochs), sr, res, acc, qk, const, n_probe)
