"""Automatic checks for the book's exercises.

An exercise's check cell calls ``rc.checks.check("paths.count", path_count)``. The reader's
function is run on seeded inputs and compared with the library's reference; the answer is one of

- ``correct``,
- ``incorrect`` with a hint: where the wrong answer matches a known mistake the hint names it
  ("Is the later layer's attention on the left?"), otherwise it shows the first failing input,
- ``not attempted`` when the function still raises ``NotImplementedError`` (the student
  version of the book stops there and nowhere else),
- ``error`` with the exception the function raised.

Each exercise is registered here with its reference, its inputs and its known mistakes; the
tests check that every reference passes and every known mistake fails.

One module per chapter registers that chapter's exercises (``checks/paths.py``, ...); this
package imports them all at the bottom.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Callable

import torch

__all__ = ["Exercise", "CheckResult", "EXERCISES", "register", "check", "in_book_build", "BOOK_BUILD_ENV"]


@dataclass
class Exercise:
    """An exercise: ``reference(*case)`` is right for every ``case`` in ``cases()``.

    ``mistakes``: ``(wrong_function, hint)`` pairs; a reader's answer equal to a wrong
    function's on the first failing case gets that hint. ``close(got, want)`` compares answers.
    """

    id: str
    reference: Callable
    cases: Callable[[], list]
    hint: str
    mistakes: list = field(default_factory=list)
    close: Callable = None

    def same(self, got, want) -> bool:
        return (self.close or _close)(got, want)


@dataclass
class CheckResult:
    exercise: str
    status: str  # "correct", "incorrect", "not attempted", "error"
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    def __repr__(self):
        mark = {"correct": "✔", "incorrect": "✘", "not attempted": "…", "error": "✘"}[self.status]
        if self.status == "correct" and in_book_build():
            # the book runs the check on the solution printed above it: say so, so that a reader
            # does not take it for their own pass (in a notebook the check runs their function)
            return (f"{mark} {self.exercise}: checked against the reference solution.\n"
                    "  It passes; in a notebook this cell checks your own function.")
        return f"{mark} {self.exercise}: {self.status}. {self.message}".rstrip()


# set by the book's Sphinx extension (_ext/bookext.py) for the kernels that execute the chapters
BOOK_BUILD_ENV = "RANKCOLLAPSE_BOOK_BUILD"


def in_book_build() -> bool:
    """True while the book is being built: the kernel runs a chapter for its page, where the
    function checked is the solution the page prints, not a reader's."""
    return os.environ.get(BOOK_BUILD_ENV) == "1"


EXERCISES: dict[str, Exercise] = {}


def register(ex: Exercise) -> Exercise:
    if ex.id in EXERCISES:
        raise ValueError(f"exercise {ex.id!r} is registered twice")
    EXERCISES[ex.id] = ex
    return ex


def _close(got, want, rtol=1e-8, atol=1e-10) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and all(_close(got[k], want[k]) for k in want)
    if isinstance(want, torch.Tensor):
        got = torch.as_tensor(got, dtype=want.dtype) if not isinstance(got, torch.Tensor) else got
        return got.shape == want.shape and torch.allclose(got.to(want.dtype), want, rtol=rtol, atol=atol)
    if isinstance(want, (int, float)):
        try:
            return math.isclose(float(got), float(want), rel_tol=rtol, abs_tol=atol)
        except (TypeError, ValueError):
            return False
    return got == want


def _short(args) -> str:
    parts = []
    for a in args:
        parts.append(f"tensor{tuple(a.shape)}" if isinstance(a, torch.Tensor) else repr(a))
    return "(" + ", ".join(parts) + ")"


def check(exercise_id: str, fn: Callable, *, quiet: bool = False) -> CheckResult:
    """Run the reader's ``fn`` against exercise ``exercise_id``'s reference; print and return the verdict."""
    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; known: {sorted(EXERCISES)}")
    if not callable(fn):
        raise TypeError(f"fn must be the function you wrote, got {type(fn).__name__}")
    ex = EXERCISES[exercise_id]
    result = None
    for case in ex.cases():
        want = ex.reference(*case)
        try:
            got = fn(*case)
        except NotImplementedError:
            result = CheckResult(ex.id, "not attempted", "Replace the `raise NotImplementedError` with your code.")
            break
        except Exception as err:  # the reader's code failed: report it, do not crash the notebook
            result = CheckResult(ex.id, "error", f"On input {_short(case)} your function raised {type(err).__name__}: {err}")
            break
        if ex.same(got, want):
            continue
        hint = ex.hint
        for wrong, wrong_hint in ex.mistakes:
            try:
                if ex.same(got, wrong(*case)):
                    hint = wrong_hint
                    break
            except Exception:
                pass
        result = CheckResult(ex.id, "incorrect", f"On input {_short(case)}. Hint: {hint}")
        break
    if result is None:
        result = CheckResult(ex.id, "correct", "")
    if not quiet:
        print(result)
    return result




# Each chapter's exercises, registered on import (keep this list in book order).
from . import paths as _paths  # noqa: E402,F401
from . import collapse as _collapse  # noqa: E402,F401
from . import skip as _skip  # noqa: E402,F401
from . import toy_tasks as _toy_tasks  # noqa: E402,F401
from . import mlp as _mlp  # noqa: E402,F401
from . import layernorm as _layernorm  # noqa: E402,F401
from . import real_models as _real_models  # noqa: E402,F401
