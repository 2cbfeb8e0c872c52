"""The grader's two child processes, one submission each (``booktools.grade`` starts them).

    python -m booktools.grade_run run RUN_DIR      execute the submission's cells
    python -m booktools.grade_run verify RUN_DIR   check the answers it left, in a clean process

``run`` executes ``RUN_DIR/plan.json``'s cells one by one in a fresh IPython shell (the engine
of a Jupyter kernel, in this process: the parent kills its whole process group on time-out),
from the working directory the parent gives it. An error in a cell is logged and the next cell
runs, as "Run all" with errors allowed: one broken exercise does not void the others. After each
check cell it takes out the check's answer (the function or value the chapter's original check
cell names) with ``grade_pack`` and writes it to ``RUN_DIR/answers/``; nothing is checked here.

``verify`` runs with nothing of the student's imported: it rebuilds each answer and calls the
library's ``rc.checks.check`` on it (on copies of the inputs), writing one verdict a line to
``RUN_DIR/verdicts.jsonl``. Before each check it notes which check runs (``verifying``), so that
the parent can tell which one hung or killed the process, and after it compares the library's
checks (the registry, every ``rankcollapse`` module's attributes, the comparison functions of
``torch``, ``math`` and ``builtins``) with a snapshot taken first: an answer that changed them
while being checked is *tampered*, and the process stops (the parent starts a fresh one for the
remaining checks).
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import sys
import traceback
from pathlib import Path

from .grade_pack import pack_namespace, plain_value, unpack


def _append(path: Path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _error_text(err) -> str:
    return f"{type(err).__name__}: {err}"[:300]


def run(run_dir: Path) -> None:
    plan = json.loads((run_dir / "plan.json").read_text())
    answers = run_dir / "answers"
    answers.mkdir(exist_ok=True)
    log = run_dir / "cells.jsonl"
    import matplotlib

    matplotlib.use("Agg")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.showtraceback = lambda *a, **k: None  # errors are logged below, one line each
    for i, cell in enumerate(plan["cells"]):
        _append(log, {"cell": i, "started": True})
        try:
            result = shell.run_cell(cell["source"], store_history=True, silent=False)
            err = result.error_before_exec or result.error_in_exec
        except BaseException as e:  # noqa: BLE001 (SystemExit and friends in the student's code)
            err = e
        _append(log, {"cell": i, "error": _error_text(err) if err is not None else None})
        for cap in cell.get("capture", []):
            _capture(shell.user_ns, cap, answers, cell.get("origin") or i + 1)


def _capture(ns: dict, cap: dict, answers: Path, cell: int) -> None:
    name, kind = cap["name"], cap["kind"]
    if name not in ns:
        record = {"failed": f"`{name}` is not defined when its check cell (code cell {cell}) runs"}
    else:
        try:
            record = {"value": plain_value(ns[name])} if kind == "value" else {"packed": pack_namespace(ns, name)}
        except Exception as err:  # noqa: BLE001
            record = {"failed": f"the grader could not take `{name}` out of the notebook: {_error_text(err)}"}
    (answers / f"{cap['id']}.pkl").write_bytes(pickle.dumps(record))


def _snapshot():
    """(owner, attribute, object) for everything the verdict depends on, objects kept alive."""
    import builtins
    import math

    import torch

    import rankcollapse.checks as C

    items = []
    for mod_name in sorted(m for m in sys.modules if m == "rankcollapse" or m.startswith("rankcollapse.")):
        mod = sys.modules[mod_name]
        for k, v in list(vars(mod).items()):
            items.append((mod_name, k, v))
            if hasattr(v, "__code__"):
                items.append((mod_name, k + ".__code__", v.__code__))
    for owner in (builtins, math, torch, torch.Tensor):
        for k in ("allclose", "as_tensor", "isclose", "isinstance", "float", "abs", "max", "callable",
                  "set", "type", "len", "__eq__", "isfinite", "repr"):
            if k in vars(owner):
                items.append((getattr(owner, "__name__", "?"), k, vars(owner)[k]))
    for reg in (C.EXERCISES, C.QUESTIONS):
        for ex_id, ex in reg.items():
            items.append(("registry", ex_id, ex))
            for k, v in list(vars(ex).items()):
                items.append((ex_id, k, v))
                if hasattr(v, "__code__"):
                    items.append((ex_id, k + ".__code__", v.__code__))
                if isinstance(v, list):
                    items.extend((ex_id, f"{k}[{j}]", w) for j, w in enumerate(v))
                    items.append((ex_id, k + " length", len(v)))
    return items


def _changed(before) -> str | None:
    """The first of ``before`` that is no longer there, or ``None``."""
    import rankcollapse.checks as C

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
    import rankcollapse as rc

    before = _snapshot()
    out = run_dir / "verdicts.jsonl"
    for ex_id in ids:
        path = run_dir / "answers" / f"{ex_id}.pkl"
        (run_dir / "verifying").write_text(ex_id)
        record = pickle.loads(path.read_bytes())
        verdict = _verdict(rc, ex_id, record)
        tampered = _changed(before)
        if tampered is not None:
            verdict = {"status": "tampered",
                       "message": f"Checking the answer changed {tampered}: the verdict is void."}
        _append(out, {"id": ex_id, **verdict})
        if tampered is not None:
            return  # the process is no longer clean: the parent starts another for the rest
    (run_dir / "verifying").unlink(missing_ok=True)


def _verdict(rc, ex_id: str, record: dict) -> dict:
    if "failed" in record:
        return {"status": "crashed", "message": record["failed"]}
    if "value" in record:
        value = record["value"]
        if isinstance(value, tuple) and value[:1] == ("unusable",):
            return {"status": "incorrect", "message": f"The answer is {value[1]}."}
        res = rc.checks.check(ex_id, value, quiet=True)
        return {"status": res.status, "message": res.message}
    try:
        fn, suspect = unpack(record["packed"])
    except Exception as err:  # noqa: BLE001
        return {"status": "crashed", "message": f"the answer could not be rebuilt: {_error_text(err)}"}
    if suspect:
        return {"status": "tampered", "message": "The answer uses the checks module ("
                + ", ".join(suspect) + ") instead of computing its result."}
    if not callable(fn):
        return {"status": "incorrect", "message": f"The answer is a {type(fn).__name__}, not a function."}

    def on_copies(*args):
        return fn(*copy.deepcopy(args))

    try:
        res = rc.checks.check(ex_id, on_copies, quiet=True)
    except Exception as err:  # noqa: BLE001 (a check that raises: report, do not stop)
        return {"status": "crashed", "message": f"the check raised {_error_text(err)}"}
    return {"status": res.status, "message": res.message}


def main(argv: list[str]) -> None:
    cmd, run_dir = argv[0], Path(argv[1])
    try:
        if cmd == "run":
            run(run_dir)
        elif cmd == "verify":
            verify(run_dir, argv[2:])
        else:
            raise SystemExit(f"unknown command {cmd!r}")
    except Exception:  # a failure of the grader itself: leave the traceback for the parent
        (run_dir / f"{cmd}-failure.txt").write_text(traceback.format_exc())
        raise
    # leave without running interpreter shutdown hooks that the student's code may have set
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
