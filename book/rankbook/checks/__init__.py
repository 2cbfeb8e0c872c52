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

- ``points`` (default 1): what a correct answer earns;
- ``partial`` (an ``Exercise``; default ``False``): with ``True`` every case is run and an answer
  earns the share of the cases it gets right (``CheckResult.credit``); otherwise all or nothing;
- ``same_role``: library functions that compute the answer, besides the ones the reference calls
  directly on its own inputs (found by tracing the reference while it runs); an answer that calls
  one of them is *used the reference* (scored 0) unless ``allow_reference`` is ``True``.

An exercise with no check (an explain or proof question, graded by hand) may register a
``Rubric``: its points and criteria, shown beside every student's answer on the hand-grading
sheet. Without one, the grader gives it 1 point and takes the model answer's "A good answer ..."
sentence as its criterion.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from rankcollapse._validate import check_bool

from . import tolerance
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


def _known_mistake(ex: Exercise, case, got):
    """The hint of the first known mistake whose answer on ``case`` is ``got`` (float64 tolerance),
    or ``None``."""
    for wrong, wrong_hint in ex.mistakes:
        try:
            if ex.same(got, wrong(*case)):
                return wrong_hint
        except Exception:
            pass
    return None


def _short(args) -> str:
    parts = []
    for a in args:
        parts.append(f"tensor{tuple(a.shape)}" if isinstance(a, torch.Tensor) else repr(a))
    return "(" + ", ".join(parts) + ")"


def _check_question(q: Question, value) -> CheckResult:
    if value is None or value is Ellipsis:
        return CheckResult(q.id, "not attempted", "Replace the `None` with your answer.")
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


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # rankbook/
_CHECKS = os.path.dirname(os.path.abspath(__file__))


def _library_dirs() -> tuple[str, ...]:
    import rankcollapse

    return (os.path.dirname(os.path.abspath(rankcollapse.__file__)), _PACKAGE)


def _is_library(code, dirs) -> bool:
    f = code.co_filename
    return any(f.startswith(d + os.sep) for d in dirs) and not f.startswith(_CHECKS + os.sep)


def _in_package(code, dirs) -> bool:
    """Is ``code`` anywhere in the library or the book layer, the checks included (a call from
    there into the library is the library's business, as for the grader)?"""
    return any(code.co_filename.startswith(d + os.sep) for d in dirs)


def _calls_the_answer(ex: Exercise, fn, case) -> set[str]:
    """The library functions that compute ``ex``'s answer (those its reference calls directly
    and returns, and its ``same_role``) which ``fn`` calls on ``case``: the notebook's side of
    the grader's rule (``booktools.grade_trace``, which traces the same way). Nothing is traced
    when a profile hook is already set (the grader's own tracer runs) or in the book build."""
    import sys

    if ex.allow_reference or sys.getprofile() is not None or in_book_build():
        return set()
    dirs = _library_dirs()
    ref_code = getattr(ex.reference, "__code__", None)
    direct, called = [], set()

    def name(frame) -> str:
        return f"{frame.f_globals.get('__name__', '?')}.{frame.f_code.co_qualname}"

    def hook(frame, event, arg):
        back = frame.f_back
        if back is None or not _is_library(frame.f_code, dirs):
            return
        if event == "call" and not _in_package(back.f_code, dirs):
            called.add(name(frame))
        if event == "return" and back.f_code is ref_code:
            direct.append((name(frame), arg))

    sys.setprofile(hook)
    try:
        want = ex.reference(*case)
        reference_calls = {n for n, got in direct if _same_quietly(ex, got, want)}
        called.clear()
        fn(*case)
    except Exception:  # noqa: BLE001 (the verdict stands; the trace is advice)
        return set()
    finally:
        sys.setprofile(None)
    reference_calls |= {f"{f.__module__}.{f.__qualname__}" for f in ex.same_role}
    return {_public(n) for n in called & reference_calls}


def _public(name: str) -> str:
    """``rankcollapse.paths.counting.path_count`` as a reader calls it: ``rc.paths.path_count``
    (the shortest module path that exports the same function)."""
    import sys

    module, _, qual = name.rpartition(".")
    parts = module.split(".")
    target = getattr(sys.modules.get(module), qual, None)
    for k in range(1, len(parts) + 1):
        if (
            target is not None
            and getattr(sys.modules.get(".".join(parts[:k])), qual, None) is target
        ):
            module = ".".join(parts[:k])
            break
    return f"{module}.{qual}".replace("rankcollapse.", "rc.", 1).replace("rankbook.", "book.", 1)


def _same_quietly(ex: Exercise, got, want) -> bool:
    try:
        return bool(ex.same(got, want))
    except Exception:  # noqa: BLE001
        return False


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
                f"On input {_short(case)} your function raised {type(err).__name__}: {err}",
            )
            if ex.partial:
                continue
            break
        if ex.same(got, want):
            passed += 1
            continue
        hint = _known_mistake(ex, case, got)
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
            ex.id, "incorrect", f"On input {_short(case)}. Hint: {hint or ex.hint}"
        )
        if not ex.partial:
            break
    if result is None:
        note = max(notes, key=len) if notes else ""  # the tail's note wins over the plain one
        result = CheckResult(ex.id, "correct", note)
        called = _calls_the_answer(ex, fn, cases[0]) if cases else set()
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
from . import skip as _skip  # noqa: E402,F401
from . import toy_tasks as _toy_tasks  # noqa: E402,F401
from . import toy_tasks_questions as _toy_tasks_questions  # noqa: E402,F401
