"""Automatic checks for the book's exercises.

An exercise's check cell calls ``book.checks.check("paths.count", path_count)``. The reader's
function is run on seeded inputs and compared with the library's reference; the answer is one of

- ``correct``; an answer computed in float32 is compared with float32's tolerance and is
  ``correct (in float32)``, or ``correct (in float32; float64 would show the tail)`` where the
  reference's own float32 values differ from its float64 ones by more than float32's resolution
  (values below it, cancellations),
- ``incorrect`` with a hint: where the wrong answer matches a known mistake the hint names it
  ("Is the later layer's attention on the left?"), otherwise it shows the first failing input,
- ``not attempted`` when the function still raises ``NotImplementedError`` (the student
  version of the book stops there and nowhere else),
- ``error`` with the exception the function raised.

Each exercise is registered here with its reference, its inputs and its known mistakes; the
tests check that every reference passes and every known mistake fails.

An exercise answered by a value (a prediction recorded before a measurement, a number read off a
figure) is a ``Question`` (``checks/questions.py``): ``book.checks.check("collapse.predict_rate",
prediction)`` compares the value with what the library computes; ``None`` is *not attempted*.

One module per chapter registers that chapter's exercises (``checks/paths.py``, ...); this
package imports them all at the bottom.

For grading (``python3 tasks.py grade``, ``tools/booktools/grade.py``) every check carries

- ``points``: what a correct answer earns. The points rule: a checked exercise earns its
  difficulty (1, 2 or 3, as its title gives it; the default 1, a test holds every entry to it);
  an exercise graded by hand earns its rubric's points, 1 per thing a good answer does and 2
  for a step that carries the argument;
- ``partial`` (an ``Exercise``; default ``False``): with ``True`` every case is run and an answer
  earns the share of the cases it gets right (``CheckResult.credit``); otherwise all or nothing;
- ``same_role``: library functions that compute the answer, besides the ones the reference calls
  directly on its own inputs (found by tracing the reference while it runs); an answer that calls
  one of them is *used the reference* (scored 0) unless ``allow_reference`` is ``True``.

An exercise with no check (an explain or proof question, graded by hand) registers a
``Rubric`` (``checks/rubrics.py`` holds those not in their chapter's module): its points and
criteria, shown beside every student's answer on the hand-grading sheet (a test asks every such
exercise for one; without one the grader would give it 1 point and take the model answer's "A
good answer ..." sentence as its criterion).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from rankcollapse._validate import check_bool

from . import tolerance
from .advice import calls_the_answer, difference, short_input
from .questions import Question
from .registry import EXERCISES, QUESTIONS, RUBRICS, Exercise, Rubric, register

__all__ = [
    "Exercise",
    "Question",
    "Rubric",
    "CheckResult",
    "EXERCISES",
    "QUESTIONS",
    "RUBRICS",
    "register",
    "check",
    "in_book_build",
    "BOOK_BUILD_ENV",
]


@dataclass
class CheckResult:
    exercise: str
    status: str  # "correct", "incorrect", "not attempted", "error"
    message: str
    credit: float = None  # the share of the points earned: 1 or 0, or the cases passed (partial)

    def __post_init__(self):
        if self.credit is None:
            self.credit = 1.0 if self.status == "correct" else 0.0

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    def __repr__(self):
        mark = {"correct": "✔", "incorrect": "✘", "not attempted": "…", "error": "✘"}[self.status]
        if self.status == "correct" and in_book_build():
            # the book runs the check on the solution printed above it: say so, so that a reader
            # does not take it for their own pass (in a notebook the check runs their function)
            return (
                f"{mark} {self.exercise}: checked against the reference solution.\n"
                "  It passes; in a notebook this cell checks your own function."
            )
        if self.status == "correct" and self.message:
            return f"{mark} {self.exercise}: correct ({self.message})."
        return f"{mark} {self.exercise}: {self.status}. {self.message}".rstrip()


# set by the book's Sphinx extension (booktools.ext.bookext) for the kernels that execute the
# chapters
BOOK_BUILD_ENV = "RANKCOLLAPSE_BOOK_BUILD"


def in_book_build() -> bool:
    """True while the book is being built: the kernel runs a chapter for its page, where the
    function checked is the solution the page prints, not a reader's."""
    return os.environ.get(BOOK_BUILD_ENV) == "1"


def _float32_verdict(ex: Exercise, case, got, want):
    """``None`` unless ``got`` is right to float32 precision; then the note for the verdict."""
    if ex.close is not None or not tolerance.has_float_tensor(case):
        return None
    try:
        want32 = ex.reference(*tolerance.to_float32(case))
    except Exception:
        return None
    if not tolerance.close32(got, want, want32):
        return None
    return (
        "in float32; float64 would show the tail"
        if tolerance.tail_lost(want, want32)
        else "in float32"
    )


def _matches(ex, wrong, case, got) -> bool:
    try:
        return bool(ex.same(got, wrong(*case)))
    except Exception:
        return False


def _known_mistake(ex: Exercise, case, got, fn=None):
    """The hint of the known mistake whose answer on ``case`` is ``got`` (float64 tolerance), or
    ``None``. Where several match there (``L * H // (H + 1)`` and ``L * (H - 1) / H`` are both 0
    at ``L = H = 1``), the reader's ``fn`` is run on the other cases until one mistake is left: the
    hint is matched to the mistake, not to its value on one input."""
    found = [(w, h) for w, h in ex.mistakes if _matches(ex, w, case, got)]
    for other in ex.cases()[:8] if fn is not None and len(found) > 1 else ():
        try:
            theirs = fn(*other)
        except Exception:
            break
        narrowed = [(w, h) for w, h in found if _matches(ex, w, other, theirs)]
        found = narrowed or found
        if len(found) == 1:
            break
    return found[0][1] if found else None


def _check_question(q: Question, value) -> CheckResult:
    if value is None or value is Ellipsis:
        ask = "Replace the `None` with your answer."
        if q.kind == "predict":  # the next cell measures it: the prediction comes first
            ask = (
                "Replace the `None` with your prediction, your reason in a comment, before you "
                "run the next cell: it measures the answer."
            )
        return CheckResult(q.id, "not attempted", ask)
    if not q.allowed(value):
        expected = (
            f"one of {', '.join(map(repr, q.choices))}" if q.choices is not None else "a number"
        )
        return CheckResult(q.id, "incorrect", f"Your answer {value!r} is not {expected}.")
    want = q.answer()
    if q.same(value, want):
        return CheckResult(q.id, "correct", "")
    for wrong, wrong_hint in q.mistakes:
        if q.same(value, wrong):
            return CheckResult(q.id, "incorrect", f"Hint: {wrong_hint}")
    return CheckResult(q.id, "incorrect", f"Hint: {q.hint}")


def check(exercise_id: str, fn, *, quiet: bool = False) -> CheckResult:
    """Check the reader's answer to exercise ``exercise_id``; print and return the verdict.

    For an ``Exercise`` the answer ``fn`` is the reader's function, run against the reference;
    for a ``Question`` it is the value the reader gave (``None``: not attempted).
    """
    if exercise_id in QUESTIONS:
        result = _check_question(QUESTIONS[exercise_id], fn)
        if not check_bool("quiet", quiet):
            print(result)
        return result
    if exercise_id not in EXERCISES:
        raise ValueError(
            f"unknown exercise {exercise_id!r}; known: {sorted(EXERCISES) + sorted(QUESTIONS)}"
        )
    if not callable(fn):
        raise TypeError(f"fn must be the function you wrote, got {type(fn).__name__}")
    quiet = check_bool("quiet", quiet)
    ex = EXERCISES[exercise_id]
    result, notes, passed, cases = None, set(), 0, ex.cases()
    for case in cases:
        want = ex.reference(*case)
        try:
            got = fn(*case)
        except NotImplementedError:
            result, passed = (
                CheckResult(
                    ex.id,
                    "not attempted",
                    "Replace the `raise NotImplementedError` with your code.",
                ),
                0,
            )
            break
        except Exception as err:  # the reader's code failed: report it, do not crash the notebook
            result = result or CheckResult(
                ex.id,
                "error",
                f"On input {short_input(case)} your function raised {type(err).__name__}: {err}",
            )
            if ex.partial:
                continue
            break
        if ex.same(got, want):
            passed += 1
            continue
        hint = _known_mistake(ex, case, got, fn)
        note = _float32_verdict(ex, case, got, want)
        if note is not None and hint is None:
            notes.add(note)
            passed += 1
            continue
        if note is not None:  # an answer without a dtype (an int) that is also a known mistake's
            hint += (
                " (Computed in float32? This input's answer lies below float32's resolution, "
                "where float32 gives this same answer: compute in float64.)"
            )
        result = result or CheckResult(
            ex.id,
            "incorrect",
            f"On input {short_input(case)}.{difference(got, want)} Hint: {hint or ex.hint}",
        )
        if not ex.partial:
            break
    if result is None:
        note = max(notes, key=len) if notes else ""  # the tail's note wins over the plain one
        result = CheckResult(ex.id, "correct", note)
        called = calls_the_answer(ex, fn, cases[0], in_book_build()) if cases else set()
        if called:  # what the grader scores "used the reference" (booktools.grade_trace)
            result.credit = 0.0
            result.message = (note + "; " if note else "") + (
                f"but it calls the library's answer, {', '.join(sorted(called))}: 0 points "
                "when graded; the exercises' rule: write it without that call"
            )
    elif ex.partial and result.status != "not attempted":
        result.credit = passed / len(cases)
        result.message += f" ({passed} of {len(cases)} cases right.)"
    if not quiet:
        print(result)
    return result


# Each chapter's exercises, registered on import (keep this list in book order).
from . import at_depth as _at_depth  # noqa: E402,F401
from . import collapse as _collapse  # noqa: E402,F401
from . import collapse_step3 as _collapse_step3  # noqa: E402,F401
from . import later as _later  # noqa: E402,F401
from . import layernorm as _layernorm  # noqa: E402,F401
from . import limits as _limits  # noqa: E402,F401
from . import lower_bound as _lower_bound  # noqa: E402,F401
from . import mlp as _mlp  # noqa: E402,F401
from . import paths as _paths  # noqa: E402,F401
from . import paths_questions as _paths_questions  # noqa: E402,F401
from . import real_models as _real_models  # noqa: E402,F401
from . import rubrics as _rubrics  # noqa: E402,F401
from . import skip as _skip  # noqa: E402,F401
from . import toy_tasks as _toy_tasks  # noqa: E402,F401
from . import toy_tasks_questions as _toy_tasks_questions  # noqa: E402,F401
