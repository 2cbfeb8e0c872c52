"""The answers a submission's run left, checked: ``python -m booktools.grade_run verify RUN_DIR
ID ...`` (:func:`verify`).

It runs with nothing of the student's imported, in a fork of the verifier's server
(``grade_server``: the book's checks loaded before any submission ran): it rebuilds each answer
and calls the book's ``book.checks.check`` on it (on copies of the inputs) under a call tracer
(``grade_trace``), writing one verdict a line to ``RUN_DIR/verdicts.jsonl``: the check's
status and credit, or *used the reference* when the answer called the function its check
compares against. Before each check it notes which check runs (``verifying``), so that the
parent can tell which one hung or killed the process, and after it compares the book's checks
(the registry, every ``rankcollapse`` and ``rankbook`` module's attributes, the comparison
functions of ``torch``, ``math`` and ``builtins``) with a snapshot taken first: an answer that
changed them while being checked is *tampered*, and the process stops (the parent starts a
fresh one for the rest).
"""

from __future__ import annotations

import copy
import json
import math
import os
import pickle
import sys
from pathlib import Path

from .grade_files import append_record as _append
from .grade_files import error_text as _error_text
from .grade_files import outbox as _outbox
from .grade_pack import unpack


def _snapshot():
    """(owner, attribute, object) for everything the verdict depends on, objects kept alive."""
    import builtins

    import torch

    import rankbook.checks as C

    items = []
    for mod_name in sorted(
        m
        for m in sys.modules
        if m in ("rankcollapse", "rankbook") or m.startswith(("rankcollapse.", "rankbook."))
    ):
        mod = sys.modules[mod_name]
        for k, v in list(vars(mod).items()):
            items.append((mod_name, k, v))
            if hasattr(v, "__code__"):
                items.append((mod_name, k + ".__code__", v.__code__))
    for owner in (builtins, math, torch, torch.Tensor):
        for k in (
            "allclose",
            "as_tensor",
            "isclose",
            "isinstance",
            "float",
            "abs",
            "max",
            "callable",
            "set",
            "type",
            "len",
            "__eq__",
            "isfinite",
            "repr",
        ):
            if k in vars(owner):
                items.append((getattr(owner, "__name__", "?"), k, vars(owner)[k]))
    for reg in (C.EXERCISES, C.QUESTIONS):
        for ex_id, ex in reg.items():
            items.append(("registry", ex_id, ex))
            for k, v in list(vars(ex).items()):
                items.append((ex_id, k, v))
                if hasattr(v, "__code__"):
                    items.append((ex_id, k + ".__code__", v.__code__))
                if isinstance(v, (list, tuple)):
                    items.extend((ex_id, f"{k}[{j}]", w) for j, w in enumerate(v))
                    items.append((ex_id, k + " length", len(v)))
    return items


def _changed(before) -> str | None:
    """The first of ``before`` that is no longer there, or ``None``."""
    import rankbook.checks as C

    regs = {**C.EXERCISES, **C.QUESTIONS}
    now = {i[:2]: i[2] for i in _snapshot()}
    for owner, key, obj in before:
        if owner == "registry":
            if regs.get(key) is not obj:
                return f"the exercise registry's {key}"
            continue
        cur = now.get((owner, key), _Missing)
        if key.endswith(" length"):
            if cur != obj:
                return f"{owner}.{key}"
        elif cur is not obj:
            return f"{owner}.{key}"
    return None


class _Missing:
    pass


def verify(run_dir: Path, ids: list[str]) -> None:
    os.environ.pop("RANKCOLLAPSE_BOOK_BUILD", None)
    import rankbook as book

    before = _snapshot()
    out = run_dir / "verdicts.jsonl"
    box = _outbox(json.loads((run_dir / "plan.json").read_text()), run_dir)
    for ex_id in ids:
        (run_dir / "verifying").write_text(ex_id)
        try:
            record = pickle.loads((box / "answers" / f"{ex_id}.pkl").read_bytes())
            if not isinstance(record, dict):
                raise TypeError(f"a {type(record).__name__}, not the grader's record")
        except Exception as err:  # noqa: BLE001 (written in the kernel: anything can be there)
            record = {"failed": f"the answer could not be read back: {_error_text(err)}"}
        calls_file = run_dir / "calls" / f"{ex_id}.json"
        calls = json.loads(calls_file.read_text()) if calls_file.exists() else {}
        verdict = _verdict(book, ex_id, record, calls)
        tampered = _changed(before)
        if tampered is not None:
            verdict = {
                "status": "tampered",
                "message": f"Checking the answer changed {tampered}: the verdict is void.",
            }
        _append(out, {"id": ex_id, **verdict})
        if tampered is not None:
            return  # the process is no longer clean: the parent starts another for the rest
    (run_dir / "verifying").unlink(missing_ok=True)


def _verdict(book, ex_id: str, record: dict, calls: dict) -> dict:
    from .grade_trace import CallTracer, is_key, reference_code, watched

    ex = book.checks.EXERCISES.get(ex_id) or book.checks.QUESTIONS[ex_id]
    tracer = CallTracer(reference_code(ex))
    if "failed" in record:
        return {"status": "crashed", "message": record["failed"]}
    if "value" in record:
        value = record["value"]
        if isinstance(value, tuple) and value[:1] == ("unusable",):
            return {"status": "incorrect", "message": f"The answer is {value[1]}."}
        if calls.get("untraced"):
            return {
                "status": "tampered",
                "message": "A cell that computes this answer turned off the grader's call tracing.",
            }
        with tracer:
            res = book.checks.check(ex_id, value, quiet=True)
        answer_calls, shown = set(calls.get("calls", [])), {"value": value}
        keys = sorted(c for c in answer_calls if is_key(c))
        if keys and res.status != "not attempted":
            return {
                **shown,
                "status": "used the reference",
                "message": "A cell that computes this answer "
                f"calls the checks' own {', '.join(f'`{k}`' for k in keys)}; the answer itself: "
                f"{res.status}.",
            }
    else:
        try:
            fn, suspect = unpack(record["packed"])
        except Exception as err:  # noqa: BLE001
            return {
                "status": "crashed",
                "message": f"the answer could not be rebuilt: {_error_text(err)}",
            }
        if suspect:
            return {
                "status": "used the reference",
                "message": "The answer uses the checks module ("
                + ", ".join(suspect)
                + ") instead of computing its result.",
            }
        if not callable(fn):
            return {
                "status": "incorrect",
                "message": f"The answer is a {type(fn).__name__}, not a function.",
            }

        def on_copies(*args):
            return fn(*copy.deepcopy(args))

        try:
            with tracer:
                res = book.checks.check(ex_id, on_copies, quiet=True)
        except Exception as err:  # noqa: BLE001 (a check that raises: report, do not stop)
            return {"status": "crashed", "message": f"the check raised {_error_text(err)}"}
        if not tracer.intact:
            return {
                "status": "tampered",
                "message": "The answer turned off the grader's call tracing.",
            }
        answer_calls, shown = tracer.answer_calls, {}
        if tracer.checks_calls and res.status != "not attempted":
            names = ", ".join(f"`{u}`" for u in sorted(tracer.checks_calls))
            return {
                "status": "used the reference",
                "message": f"The answer calls the checks' own {names} "
                f"instead of computing its result; the answer itself: {res.status}.",
            }
    used = sorted(answer_calls & watched(ex, tracer))
    verdict = {"status": res.status, "message": res.message, "credit": res.credit, **shown}
    if used and res.status != "not attempted":
        names = ", ".join(f"`{u}`" for u in used)
        if ex.allow_reference:
            verdict["message"] = (
                f"{res.message} (It calls {names}, which this check allows.)"
            ).strip()
        else:
            verdict = {
                **shown,
                "status": "used the reference",
                "credit": 0.0,
                "message": f"The answer calls {names}, the library's own answer to this check; "
                f"the answer itself: {res.status}.",
            }
    return verdict
