"""Training the toy networks on CPU, deterministically, with checkpoints cached on disk.

``rc.toy.train(task, seed)`` trains the network of a :class:`ToyTask` (or loads it: the
checkpoint of the same settings, seed and training code is reused, :func:`training_code_hash`),
showing a tqdm progress bar on stderr and returning a :class:`Trained` whose ``log`` is the same
whether the model was trained now or loaded. The cache folder is ``~/.cache/rankcollapse/toy/``, or
``$RANKCOLLAPSE_CACHE/toy/`` when that environment variable is set; delete the folder to clear
it. ``retrain=True`` trains again and overwrites the checkpoint.

Training runs on one torch thread, whatever the machine: results then do not depend on the
thread count (reductions split across threads add in another order), and on a shared 2-core
machine one thread is as fast as two for these small matrices. Data are not shuffled (as in the
official code) and the networks have no dropout, so two runs from scratch give the same
checkpoint bit for bit.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .. import _cache
from .._cache import code_version  # noqa: F401  (re-exported: rc.toy.code_version)
from .._env import torch_threads
from .._validate import check_int, check_seed
from . import data as _data
from .model import ToyModel
from .tasks import (  # noqa: F401  (re-exported: the toy package and callers import them here)
    CIRCLE_VARIANTS,
    OFFICIAL,
    OFFICIAL_LINES,
    OFFICIAL_MEMORIZATION_TOKENS,
    TASKS,
    ToyTask,
    check_task,
    official_steps,
    task_data,
    toy_config,
)

__all__ = [
    "TRAINING_FILES",
    "training_code_hash",
    "code_version",
    "ToyTask",
    "Trained",
    "cache_dir",
    "checkpoint_path",
    "train",
    "train_all",
    "task_data",
    "toy_config",
    "TASKS",
    "CIRCLE_VARIANTS",
    "token_accuracy",
    "OFFICIAL",
    "OFFICIAL_LINES",
    "OFFICIAL_MEMORIZATION_TOKENS",
    "official_steps",
]


_HERE = Path(__file__).parent
#: The code that decides what training produces: the training loop, the tasks, the data
#: generators, the toy model and the core network it wraps. Its hash (:func:`training_code_hash`)
#: is part of every checkpoint's key, so a change to any of them trains anew.
TRAINING_FILES = (
    _HERE / "train.py",
    _HERE / "tasks.py",
    _HERE / "data.py",
    _HERE / "model.py",
    _HERE / "circle.py",
    _HERE.parent / "san.py",
    _HERE.parent / "san_config.py",
    _HERE.parent / "ops.py",
)


@functools.cache
def training_code_hash() -> str:
    """:func:`code_version` of :data:`TRAINING_FILES` (computed once, when a key is first
    needed)."""
    return code_version(*TRAINING_FILES)


def cache_dir() -> Path:
    """``$RANKCOLLAPSE_CACHE/toy`` if the variable is set, else ``~/.cache/rankcollapse/toy``."""
    return _cache.cache_dir("toy")


def _key(task: ToyTask, seed: int) -> str:
    blob = json.dumps(
        {"task": asdict(task), "seed": seed, "code": training_code_hash()}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def checkpoint_path(task: ToyTask, seed: int) -> Path:
    """Where the checkpoint of ``task`` trained from ``seed`` is cached."""
    seed = check_seed("seed", seed)
    name = task.task + (f"-{task.variant}" if task.variant else "")
    return cache_dir() / f"{name}-{_key(task, seed)}.pt"


@dataclass
class Trained:
    """A trained toy network. ``model``: float32 as trained; ``exact``: its float64 twin (for
    path sums); ``log``: epochs, steps, loss per epoch, accuracies (identical for a trained and
    a loaded model); ``from_cache``: whether it was loaded."""

    task: ToyTask
    seed: int
    data: _data.TaskData
    model: ToyModel
    log: dict
    path: Path
    from_cache: bool
    exact: ToyModel = field(init=False)

    def __post_init__(self):
        self.exact = self.model.twin(torch.float64)

    def initial(self) -> ToyModel:
        """The same network at initialisation (float64): the weights training started from."""
        return ToyModel(self.model.config, seed=self.seed, dtype=torch.float64).eval()

    @property
    def steps(self) -> int:
        """Optimiser steps taken: epochs times batches per epoch."""
        return self.log["epochs"] * self.log["steps_per_epoch"]


def token_accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of tokens whose arg-max class is the label (the official code's token accuracy)."""
    if not (isinstance(logits, torch.Tensor) and isinstance(y, torch.Tensor)) or tuple(
        logits.shape[:-1]
    ) != tuple(y.shape):
        raise ValueError(
            "logits (..., n, V) and y (..., n) must match, got "
            f"{tuple(getattr(logits, 'shape', ()))} and "
            f"{tuple(getattr(y, 'shape', ()))}"
        )
    return float((logits.argmax(-1) == y).double().mean())


def _loss(task, out, y):
    if task.task == "circle":  # the official circle script: squared error summed over the batch
        return ((out - y) ** 2).sum()
    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def fit(
    task: ToyTask, model: ToyModel, data: _data.TaskData, progress: bool, on_epoch=None
) -> dict:
    """Adam on ``task``'s schedule, in order, no shuffling; the log of losses per epoch.

    ``on_epoch(epoch, model)``, when given, is called before the first step (``epoch = 0``) and
    after each epoch (``epoch = 1 .. task.epochs``), under ``torch.no_grad``; it must not change
    the model (``rc.toy.dynamics`` copies the weights there). Training itself is the same with or
    without it.
    """
    from tqdm import tqdm  # a plain bar on stderr: never part of a notebook's compared output

    X, y = data.X_train, data.y_train
    if task.task == "circle":
        X, y = X.to(model.dtype), y.to(model.dtype)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=task.lr, weight_decay=task.weight_decay)
    steps = (len(X) + task.batch - 1) // task.batch
    total = max(1, steps * task.epochs)
    if task.schedule == "linear":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / total))
    else:
        sched = None
    losses = []
    bar = tqdm(
        range(task.epochs),
        desc=task.task + (f"-{task.variant}" if task.variant else ""),
        file=sys.stderr,
        disable=not progress,
        leave=False,
    )
    if on_epoch is not None:
        with torch.no_grad():
            on_epoch(0, model)
    for epoch in bar:
        if task.schedule == "step" and epoch in task.milestones:
            for group in opt.param_groups:
                group["lr"] *= task.gamma
        total_loss = 0.0
        for i in range(0, len(X), task.batch):
            loss = _loss(task, model(X[i : i + task.batch]), y[i : i + task.batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            total_loss += float(loss.detach()) * len(X[i : i + task.batch])
        losses.append(total_loss / len(X))
        bar.set_postfix(loss=f"{losses[-1]:.3g}")
        if on_epoch is not None:
            with torch.no_grad():
                on_epoch(epoch + 1, model)
    return {"epochs": task.epochs, "steps_per_epoch": steps, "loss": losses}


def train(task: ToyTask, seed: int = 0, *, retrain: bool = False, progress: bool = True) -> Trained:
    """Train ``task``'s network from ``seed`` (or load its cached checkpoint) and return it.

    The checkpoint lives in :func:`checkpoint_path`: its name holds a hash of every field of
    ``task``, ``seed`` and :func:`training_code_hash`. ``retrain=True`` ignores it and
    trains again. The data are drawn from ``seed`` too (:func:`task_data`).
    """
    check_task(task)
    seed = check_seed("seed", seed)
    if not isinstance(retrain, bool):
        raise TypeError(f"retrain must be True or False, got {retrain!r}")
    data = task_data(task, seed)
    model = ToyModel(toy_config(task, data), seed=seed)
    path = checkpoint_path(task, seed)
    if path.exists() and not retrain:
        try:
            saved = torch.load(path, weights_only=True)
            model.load_state_dict(saved["state"])
        except (
            RuntimeError,
            KeyError,
            EOFError,
        ) as err:  # unreadable, or from other code: train again
            print(f"ignoring {path} ({type(err).__name__}); training again", file=sys.stderr)
        else:
            print(f"loaded {path}", file=sys.stderr)
            return Trained(task, seed, data, model.eval(), saved["log"], path, True)
    start = time.perf_counter()
    with torch_threads(1):  # one thread: results independent of the thread count
        model.train()
        log = fit(task, model, data, progress)
    model.eval()
    trained = Trained(task, seed, data, model, log, path, False)
    if task.task != "circle":
        with torch.no_grad():
            log["train_accuracy"] = token_accuracy(trained.exact(data.X_train), data.y_train)
            log["eval_accuracy"] = token_accuracy(trained.exact(data.X_eval), data.y_eval)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(
        {
            "state": model.state_dict(),
            "log": log,
            "task": asdict(task),
            "seed": seed,
            "code": training_code_hash(),
        },
        tmp,
    )
    os.replace(tmp, path)
    print(f"trained in {time.perf_counter() - start:.1f} s, saved {path}", file=sys.stderr)
    return trained


def _train_quietly(task: ToyTask, seed: int, retrain: bool) -> str:
    """A worker process's job for :func:`train_all`: train one network, no progress bar."""
    return str(train(task, seed, retrain=retrain, progress=False).path)


def _cost(task: ToyTask) -> float:
    """A rough cost of training ``task`` (steps times the work of one sequence), to start the
    longest jobs first."""
    return task.steps * task.batch * task.seq_len * task.d_model**2 * task.n_layers


def train_all(jobs, *, retrain: bool = False, workers: int = 1, progress: bool = True) -> list:
    """:func:`train` for every ``(task, seed)`` of ``jobs``, in order: a list of :class:`Trained`.

    The networks with no cached checkpoint (all of them with ``retrain=True``) are trained first,
    ``workers`` at a time in separate processes when ``workers > 1`` (each on one thread, so
    the checkpoints are the same bit for bit as :func:`train`'s alone); then every checkpoint is
    loaded in order. On a machine with two cores two workers halve the time of training from
    scratch; with everything cached no process is started.
    """
    jobs = list(jobs)
    for i, job in enumerate(jobs):
        if not (isinstance(job, tuple) and len(job) == 2 and isinstance(job[0], ToyTask)):
            raise TypeError(f"jobs[{i}] must be a (ToyTask, seed) pair, got {job!r}")
    workers = check_int("workers", workers)
    if not isinstance(retrain, bool):
        raise TypeError(f"retrain must be True or False, got {retrain!r}")
    todo = list(
        dict.fromkeys(
            (t, check_seed("seed", s))
            for t, s in jobs
            if retrain or not checkpoint_path(t, s).exists()
        )
    )
    if workers > 1 and len(todo) > 1:
        import multiprocessing

        todo.sort(key=lambda job: -_cost(job[0]))  # the longest first
        with multiprocessing.get_context("spawn").Pool(min(workers, len(todo))) as pool:
            for path in pool.starmap(
                _train_quietly, [(t, s, retrain) for t, s in todo], chunksize=1
            ):
                print(f"trained {path}", file=sys.stderr)
        retrain = False  # every checkpoint is fresh now
    done = {}
    for t, s in jobs:  # load (or, with one worker, train) in order, each pair once
        if (t, s) not in done:
            done[t, s] = train(t, s, retrain=retrain, progress=progress)
    return [done[t, s] for t, s in jobs]
