"""Run sizes of every chapter: a ``fast`` mode (CI, papermill) and a ``full`` mode (the paper's
scale).

A chapter's ``parameters`` cell holds ``mode`` and ``seed``; the next cell starts the chapter,
which asks this module for its sizes::

    run = book.start("paths", mode, seed)   # calls book.presets.get("paths", mode, seed)
    run.L, run.H, ...

so that no size is scattered through a chapter's cells. The environment variable
``RANKCOLLAPSE_MODE`` (``fast`` or ``full``), when set, overrides the chapter's ``mode``: the
test suite uses it to build the whole book quickly. The override is printed, never silent.

Also here (from :mod:`rankcollapse.real.registry`, beside the models): the shapes of real
transformer architectures, for counting their paths.
"""

from __future__ import annotations

import math
import os
import textwrap

import torch

from rankcollapse._validate import (
    SEED_LIMIT,
    check_choice,
    check_dtype,
    check_elements,
    check_int,
    check_seed,
    derive_seed,
)
from rankcollapse.real.registry import ARCHITECTURES  # the table beside the registry

from . import beyond, paper

_REPR_WIDTH = 80  # characters: what a chapter's output box shows

__all__ = ["MODES", "ENV_VAR", "PRESETS", "ARCHITECTURES", "Run", "Draws", "get", "resolve_mode"]

MODES = ("fast", "full")
ENV_VAR = "RANKCOLLAPSE_MODE"

# chapter -> mode -> sizes: the chapters that reproduce the paper (.paper) and those beyond it
# (.beyond), in one fixed order. Keys are the names the chapters read (run.<name>).
_SIZES = {**paper.SIZES, **beyond.SIZES}
PRESETS: dict[str, dict[str, dict]] = {
    name: _SIZES[name]
    for name in (
        "collapse",
        "skip",
        "lower_bound",
        "limits",
        "later",
        "toy_tasks",
        "real_models",
        "at_depth",
        "paths",
        "mlp",
        "layernorm",
    )
}


def resolve_mode(mode: str) -> str:
    """``mode`` after the ``RANKCOLLAPSE_MODE`` override, checked to be ``"fast"`` or ``"full"``."""
    check_choice("mode", mode, MODES)
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        check_choice(ENV_VAR, override, MODES)
        if override != mode:
            print(f"{ENV_VAR}={override} overrides mode={mode!r} from the parameters cell")
        return override
    return mode


class Draws:
    """A chapter's seeded random inputs: one torch generator seeded with ``seed``.

    ``gen = run.stream()`` (or ``run.stream(1)`` for a second, independent stream) in a chapter,
    then ``gen.normal(n, d)``, ``gen.uniform(d)``, ``gen.integer(1, r)``: each call continues
    the same stream, so a chapter's inputs depend on its seed alone and a chapter needs no
    ``import torch``. ``gen.generator`` is the ``torch.Generator`` itself, for library functions
    that take one (``rc.theory.unit_residual_tokens(n, d, generator=gen.generator)``).
    """

    def __init__(self, seed: int):
        self.seed = check_seed("seed", seed)
        self.generator = torch.Generator().manual_seed(self.seed)

    @staticmethod
    def _shape(shape) -> tuple[int, ...]:
        if not shape:
            raise ValueError("shape must give at least one dimension, got none")
        shape = tuple(check_int(f"shape[{i}]", s) for i, s in enumerate(shape))
        check_elements(
            "shape", math.prod(shape), alternative="draw fewer samples or smaller tensors"
        )
        return shape

    def normal(self, *shape: int, dtype=torch.float64) -> torch.Tensor:
        """Standard normal entries, a tensor of ``shape`` (float64 unless ``dtype`` says
        otherwise)."""
        return torch.randn(
            self._shape(shape), dtype=check_dtype("dtype", dtype), generator=self.generator
        )

    def uniform(self, *shape: int, dtype=torch.float64) -> torch.Tensor:
        """Entries uniform in ``[0, 1)``, a tensor of ``shape``."""
        return torch.rand(
            self._shape(shape), dtype=check_dtype("dtype", dtype), generator=self.generator
        )

    def integer(self, low: int, high: int) -> int:
        """One integer uniform in ``low..high``, both included."""
        low = check_int("low", low, minimum=-(2**62))
        high = check_int("high", high, minimum=low)
        return int(torch.randint(low, high + 1, (1,), generator=self.generator))

    def __repr__(self):
        return f"Draws(seed={self.seed})"


class Run:
    """A chapter's run: its ``mode``, ``seed`` and sizes, read as attributes (``run.L``)."""

    def __init__(self, chapter: str, mode: str, seed: int, sizes: dict):
        # a size read as run.<name> must not be hidden by one of Run's own attributes (a preset's
        # "draws" was once shadowed by a method of that name and reached the chapter as a method)
        hidden = sorted(
            k for k in sizes if hasattr(type(self), k) or k in ("chapter", "mode", "seed")
        )
        if hidden:
            raise ValueError(
                f"preset {chapter!r}: sizes {hidden} would be hidden by Run's own attributes; "
                "rename them"
            )
        self.chapter, self.mode, self.seed = chapter, mode, seed
        self._sizes = dict(sizes)

    def __getattr__(self, name):
        sizes = self.__dict__.get("_sizes", {})
        if name in sizes:
            return sizes[name]
        raise AttributeError(
            f"preset {self.__dict__.get('chapter')!r} has no size {name!r}; it has {sorted(sizes)}"
        )

    def as_dict(self) -> dict:
        return dict(self._sizes)

    def stream(self, offset: int = 0) -> Draws:
        """The chapter's seeded random inputs, a :class:`Draws` seeded with ``seed + offset``.

        Streams with different offsets are independent; the same offset always starts the same
        stream (``run.stream(1).normal(samples, n, d)`` is the same tensor on every run).
        """
        offset = check_int("offset", offset, minimum=0, maximum=SEED_LIMIT - 1)
        return Draws(derive_seed(self.seed, offset))  # reduced modulo 2**32, inside the seed range

    def __repr__(self):
        sizes = ", ".join(f"{k}={v}" for k, v in self._sizes.items())
        head = f"Run({self.chapter!r}, mode={self.mode!r}, seed={self.seed}:"
        if len(head) + len(sizes) + 2 <= _REPR_WIDTH:
            return f"{head} {sizes})"
        # wrapped, so that a chapter's output box shows every size without scrolling
        body = textwrap.fill(
            sizes,
            width=_REPR_WIDTH,
            initial_indent="    ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        return f"{head}\n{body})"


def get(chapter: str, mode: str = "full", seed: int = 0) -> Run:
    """The sizes of ``chapter`` in ``mode`` (``"fast"`` or ``"full"``), with ``seed``.

    Unknown chapters or modes and seeds outside ``0 <= seed < 2**32`` raise here, before any work.
    """
    check_choice("chapter", chapter, tuple(PRESETS))
    seed = check_seed("seed", seed)
    mode = resolve_mode(mode)
    return Run(chapter, mode, seed, PRESETS[chapter][mode])
