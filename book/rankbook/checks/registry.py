"""The registry of the book's exercises: what an exercise is (an :class:`Exercise`, answered by
a function; a :class:`~rankbook.checks.questions.Question`, answered by a value; the
:class:`Rubric` of one graded by hand), the three registries, and :func:`register`, which each
chapter's module of :mod:`rankbook.checks` calls on import. Checking an answer is
:func:`rankbook.checks.check`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rankcollapse._validate import check_bool

from . import tolerance
from .questions import Question
from .questions import check_grading as _check_grading

__all__ = ["Exercise", "Rubric", "EXERCISES", "QUESTIONS", "RUBRICS", "register"]


@dataclass
class Exercise:
    """An exercise: ``reference(*case)`` is right for every ``case`` in ``cases()``.

    ``mistakes``: ``(wrong_function, hint)`` pairs; a reader's answer equal to a wrong
    function's on the first failing case gets that hint. ``close(got, want)`` compares answers.
    ``points``, ``partial``, ``same_role``, ``allow_reference``: for grading (module docstring).
    """

    id: str
    reference: Callable
    cases: Callable[[], list]
    hint: str
    mistakes: list = field(default_factory=list)
    close: Callable = None
    points: float = 1
    partial: bool = False
    same_role: tuple = ()
    allow_reference: bool = False

    def __post_init__(self):
        _check_grading(self)
        check_bool("partial", self.partial)

    def same(self, got, want) -> bool:
        return (self.close or tolerance.close)(got, want)


@dataclass
class Rubric:
    """How an exercise without a check (explain, prove) is graded by hand: ``criteria`` are
    ``(points, what earns them)`` pairs, one per step of the answer; ``wrong_turns``: the common
    mistakes to look for, each saying what it costs; ``label`` is the exercise's label in its
    chapter."""

    label: str
    criteria: tuple
    wrong_turns: tuple = ()

    def __post_init__(self):
        if isinstance(self.wrong_turns, str) or not all(
            isinstance(w, str) and w.strip() for w in self.wrong_turns
        ):
            raise ValueError(f"Rubric {self.label!r}: wrong_turns is a tuple of non-empty strings")
        self.wrong_turns = tuple(self.wrong_turns)
        if not (isinstance(self.label, str) and self.label.startswith("ex-")):
            raise ValueError(f"Rubric label must be an exercise label 'ex-...', got {self.label!r}")
        self.criteria = tuple((p, str(text)) for p, text in self.criteria)
        if not self.criteria or any(
            isinstance(p, bool) or not isinstance(p, (int, float)) or p <= 0
            for p, _ in self.criteria
        ):
            raise ValueError(f"Rubric {self.label!r}: criteria are (positive points, text) pairs")

    @property
    def points(self) -> float:
        return sum(p for p, _ in self.criteria)


EXERCISES: dict[str, Exercise] = {}  # answered by a function
QUESTIONS: dict[str, Question] = {}  # answered by a value: a prediction, a figure read off
RUBRICS: dict[str, Rubric] = {}  # graded by hand, by exercise label


def register(ex):
    """Register an ``Exercise`` (a function to write), a ``Question`` (a value to give) or the
    ``Rubric`` of an exercise graded by hand."""
    if isinstance(ex, Rubric):
        if ex.label in RUBRICS:
            raise ValueError(f"a rubric for {ex.label!r} is registered twice")
        RUBRICS[ex.label] = ex
        return ex
    if not isinstance(ex, (Exercise, Question)):
        raise TypeError(
            f"register takes an Exercise or a Question (or a Rubric), got {type(ex).__name__}"
        )
    if ex.id in EXERCISES or ex.id in QUESTIONS:
        raise ValueError(f"exercise {ex.id!r} is registered twice")
    if isinstance(ex, Question):
        QUESTIONS[ex.id] = ex
    else:
        EXERCISES[ex.id] = ex
    return ex
