"""What a check says beyond its verdict: expected against got (``difference``), and whether a
correct answer calls the library function that computes it (``calls_the_answer``, the notebook's
side of the grader's "used the reference": ``booktools.grade_trace`` traces the same way)."""

from __future__ import annotations

import os

import torch


def difference(got, want) -> str:
    """Expected against got, in a few words: the shapes when they differ, else the largest
    difference and where; the keys of a dict; two numbers. Empty when nothing short applies."""
    try:
        if isinstance(want, dict) and isinstance(got, dict):
            missing, extra = set(want) - set(got), set(got) - set(want)
            if missing or extra:
                return (
                    f" Keys: {len(got)} where {len(want)} are expected"
                    + (f", missing {sorted(missing, key=repr)[:4]}" if missing else "")
                    + (f", unexpected {sorted(extra, key=repr)[:4]}" if extra else "")
                    + "."
                )
            wrong = [k for k in want if not _close(got[k], want[k])]
            return f" The entries of {wrong[:4]} differ." if wrong else ""
        if isinstance(want, torch.Tensor):
            got_t = torch.as_tensor(got)
            if tuple(got_t.shape) != tuple(want.shape):
                return f" Expected shape {tuple(want.shape)}, got {tuple(got_t.shape)}."
            diff = (got_t.to(torch.float64) - want.to(torch.float64)).abs()
            if diff.numel() == 0 or not torch.isfinite(diff).any():
                return ""
            at = tuple(
                int(i)
                for i in torch.unravel_index(torch.nan_to_num(diff, 0.0).argmax(), diff.shape)
            )
            return (
                f" Largest difference {float(diff[at]):.3g} at index {at}: got "
                f"{float(got_t[at]):.6g}, expected {float(want[at]):.6g}."
            )
        if isinstance(want, (int, float)) and isinstance(got, (int, float)):
            return f" Expected {want!r}, got {got!r}."
    except Exception:
        return ""
    return ""


def _close(a, b) -> bool:
    try:
        return bool(
            torch.allclose(
                torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
            )
        )
    except Exception:
        return False


def short_input(args) -> str:
    parts = []
    for a in args:
        parts.append(f"tensor{tuple(a.shape)}" if isinstance(a, torch.Tensor) else repr(a))
    return "(" + ", ".join(parts) + ")"


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


def calls_the_answer(ex, fn, case, in_book_build: bool) -> set[str]:
    """The library functions that compute ``ex``'s answer (those its reference calls directly
    and returns, and its ``same_role``) which ``fn`` calls on ``case``: the notebook's side of
    the grader's rule (``booktools.grade_trace``, which traces the same way). Nothing is traced
    when a profile hook is already set (the grader's own tracer runs) or in the book build."""
    import sys

    if ex.allow_reference or sys.getprofile() is not None or in_book_build:
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


def _same_quietly(ex, got, want) -> bool:
    try:
        return bool(ex.same(got, want))
    except Exception:  # noqa: BLE001
        return False
