"""Exercises answered by a value rather than a function: a prediction, a figure read off.

Two kinds share one check, ``book.checks.check(id, answer)``:

- ``predict``: the reader records a prediction in a variable *before* running the measurement
  (``prediction = "faster"``); the check compares it with what the library measures,
- ``read``: the reader reads a number or a choice off a figure the chapter shows
  (``answer = 4``); the check compares it with the value the figure was drawn from, within the
  tolerance a careful reading allows.

A stub is ``None`` (``prediction = None  # your answer``): *not attempted*. A choice outside
``choices`` is *incorrect* with the list of choices. The right answer is computed by the library
when the check runs (``answer()``), never typed into the registry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("predict", "read")


@dataclass
class Question:
    """A value exercise: ``answer()`` is the right value (computed), ``close(got, want)`` compares.

    ``choices``: the allowed answers of a multiple-choice question (strings or numbers), or
    ``None`` for a numeric answer compared with relative tolerance ``rtol``.
    ``mistakes``: ``(wrong_value, hint)`` pairs; a reader's answer equal to a wrong value gets its
    hint.
    ``points``, ``same_role``, ``allow_reference``: for grading (see ``rankbook.checks``).
    """

    id: str
    kind: str
    answer: Callable[[], object]
    hint: str
    choices: tuple | None = None
    rtol: float = 0.05
    mistakes: list = field(default_factory=list)
    points: float = 1
    same_role: tuple = ()
    allow_reference: bool = False

    def __post_init__(self):
        check_grading(self)
        if self.kind not in KINDS:
            raise ValueError(
                f"Question {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}"
            )
        if self.choices is not None:
            self.choices = tuple(self.choices)
        if not (isinstance(self.rtol, (int, float)) and 0 <= self.rtol < 1):
            raise ValueError(
                f"Question {self.id!r}: rtol must be a number in [0, 1), got {self.rtol!r}"
            )

    def same(self, got, want) -> bool:
        if self.choices is not None:
            return _normal(got) == _normal(want)
        try:
            g, w = float(got), float(want)
        except (TypeError, ValueError):
            return False
        return math.isfinite(g) and math.isclose(g, w, rel_tol=self.rtol, abs_tol=1e-12)

    def allowed(self, got) -> bool:
        """Is ``got`` a well-formed answer (one of the choices, or a real number)?"""
        if self.choices is not None:
            return _normal(got) in {_normal(c) for c in self.choices}
        if isinstance(got, bool):
            return False
        try:
            float(got)
        except (TypeError, ValueError):
            return False
        return True


def check_grading(ex) -> None:
    """The grading fields of an ``Exercise`` or a ``Question``, checked (``same_role`` made a
    tuple)."""
    points = ex.points
    if (
        isinstance(points, bool)
        or not isinstance(points, (int, float))
        or not 0 < points < math.inf
    ):
        raise ValueError(f"{ex.id!r}: points must be a positive number, got {points!r}")
    ex.same_role = tuple(ex.same_role)
    for fn in ex.same_role:
        if not callable(fn):
            raise TypeError(f"{ex.id!r}: same_role holds functions, got {type(fn).__name__}")
    if not isinstance(ex.allow_reference, bool):
        raise TypeError(
            f"{ex.id!r}: allow_reference must be True or False, got {ex.allow_reference!r}"
        )


def _normal(x):
    """Case and surrounding blanks do not matter in a choice; numbers compare as numbers."""
    if isinstance(x, str):
        return x.strip().lower()
    if isinstance(x, bool):
        return x
    if isinstance(x, (int, float)):
        return float(x)
    return x
