"""Answers that copy the key: which library functions an answer calls, found by tracing calls.

The library the students install is also the answer key: ``rc.paths.path_count`` computes what
the exercise ``paths.count`` asks for. An answer that calls the function its check compares
against is *used the reference* (``booktools.grade``). What an answer calls is found while it
runs, with a profile hook (``sys.setprofile``, and ``threading.setprofile`` for threads it
starts), never by reading its source: a call reached through an alias, ``getattr``,
``functools.partial`` or a helper of the notebook is still a call.

Two sets meet:

- *the reference's functions*: the functions of the library (``rankcollapse``, ``rankbook``:
  its checks excepted) that the check's reference calls directly, on one of its own inputs, and
  whose result is the reference's result (``paths.count``'s ``lambda L, H, l: paths.path_count(L, H,
  l)`` calls ``path_count``; ``collapse.beta``'s reference calls ``norm_1`` on a product it made,
  which is not the answer: not counted); for a ``Question``, those ``answer()`` calls directly
  whose result is the answer. Found by tracing the reference while the check runs it (its first
  run). Plus the check's declared ``same_role`` functions (the library's function of the same
  role that the reference does not call).
- *the answer's calls*: the library functions called from code outside the library while the
  answer runs (a function answer: while the check calls it, in the verifying process; a value
  answer: while the notebook's cells that the student wrote run, in the kernel:
  ``booktools.grade_kernel``). A library function calling another is the library's business:
  only the calls that cross from outside into the library count.

"Library code" is code whose file lies in the installed ``rankcollapse`` or ``rankbook``
package, outside ``rankbook.checks``; code posing as the library from another file does not count as
the library. Deliberately hiding a call (computing the value once and typing it in, or loading the
library's code under another file name) is not caught.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

# found without importing the library (and torch): the grader's run process does not need them
LIB_DIR = str(Path(importlib.util.find_spec("rankcollapse").origin).resolve().parent)
BOOK_DIR = str(Path(importlib.util.find_spec("rankbook").origin).resolve().parent)
CHECKS_DIR = str(Path(BOOK_DIR) / "checks")
GRADER_DIR = str(Path(__file__).resolve().parent)  # the grader's own code calls the checks


def _in(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def is_library(code) -> bool:
    """Is ``code`` (a code object) the library's own or the book layer's, the checks excepted?"""
    f = code.co_filename
    return (_in(f, LIB_DIR) or _in(f, BOOK_DIR)) and not _in(f, CHECKS_DIR)


def is_package(code) -> bool:
    """Is ``code`` anywhere in the installed ``rankcollapse`` or ``rankbook``, checks included?"""
    return _in(code.co_filename, LIB_DIR) or _in(code.co_filename, BOOK_DIR)


# what a notebook may call in the checks: the check itself, and its verdict's methods
PUBLIC_CHECKS = (
    "rankbook.checks.check",
    "rankbook.checks.in_book_build",
    "rankbook.checks.CheckResult.",
)


def is_key(name: str) -> bool:
    """Is ``name`` (``module.qualname``) a function of the checks a notebook has no business
    calling (a reference, an answer, a helper of theirs: anything but ``PUBLIC_CHECKS``)?"""
    return name.startswith("rankbook.checks") and not any(
        name == p or (p.endswith(".") and name.startswith(p)) for p in PUBLIC_CHECKS
    )


def frame_name(frame) -> str:
    """``module.qualname`` of the function a frame runs."""
    return f"{frame.f_globals.get('__name__', '?')}.{frame.f_code.co_qualname}"


def function_name(fn) -> str:
    fn = getattr(fn, "__func__", fn)
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


class CallTracer:
    """A profile hook recording (1) the library functions called from outside the package (and
    the checks' own functions, called from outside the package and the grader) and (2) the
    direct calls of the first run of ``reference_code``, with their results.

    Use as a context manager around the check; ``answer_calls`` and ``reference_functions(same)``
    afterwards; ``intact`` is False if the hook was replaced while it ran.
    """

    def __init__(self, reference_code=None):
        self.reference_code = reference_code
        self.answer_calls: set[str] = set()
        self.checks_calls: set[str] = set()  # the checks' own functions, called by the answer
        self._ref_frame = None
        self._ref_done = False
        self._direct = {}  # id(frame) -> [name, uses_own_input, result]
        self._direct_list = []
        self.reference_result = None
        self.intact = True

    def __call__(self, frame, event, arg):
        if event == "call":
            code, back = frame.f_code, frame.f_back
            if back is None:
                return
            if is_package(code) and not is_package(back.f_code):
                if is_library(code):
                    self.answer_calls.add(frame_name(frame))
                elif not _in(back.f_code.co_filename, GRADER_DIR) and is_key(frame_name(frame)):
                    self.checks_calls.add(frame_name(frame))
            if self._ref_done:
                return
            if self._ref_frame is None and code is self.reference_code:
                self._ref_frame = frame
            elif self._ref_frame is not None and back is self._ref_frame and is_library(code):
                own = [
                    back.f_locals.get(n) for n in back.f_code.co_varnames[: back.f_code.co_argcount]
                ]
                given = list(frame.f_locals.values())
                uses = not own or any(a is b for a in given for b in own)
                rec = [frame_name(frame), uses, None]
                self._direct[id(frame)] = rec
                self._direct_list.append(rec)
        elif event == "return":
            if self._ref_frame is not None and not self._ref_done:
                if frame is self._ref_frame:
                    self.reference_result, self._ref_done = arg, True
                elif id(frame) in self._direct and frame.f_back is self._ref_frame:
                    self._direct[id(frame)][2] = arg

    def reference_functions(self, same) -> set[str]:
        """The library functions the reference called on its own inputs whose result was the
        reference's (compared with ``same(got, want)``)."""
        found = set()
        for name, uses, result in self._direct_list:
            try:
                if uses and self._ref_done and same(result, self.reference_result):
                    found.add(name)
            except Exception:  # noqa: BLE001 (a comparison that does not apply)
                pass
        return found

    def __enter__(self):
        self._old = sys.getprofile()
        threading.setprofile(self)
        sys.setprofile(self)
        return self

    def __exit__(self, *exc):
        self.intact = sys.getprofile() is self
        sys.setprofile(self._old)
        threading.setprofile(None)
        self._direct.clear()
        return False


def watched(ex, tracer: CallTracer) -> set[str]:
    """What an answer to ``ex`` (an ``Exercise`` or a ``Question``) may not call: the functions
    found by ``tracer`` around its check, plus its declared ``same_role``."""
    found = tracer.reference_functions(ex.same)
    return found | {function_name(fn) for fn in ex.same_role}


def reference_code(ex):
    """The code object whose first run the tracer follows: the reference, or ``answer``."""
    fn = getattr(ex, "reference", None) or getattr(ex, "answer", None)
    return getattr(fn, "__code__", None)
