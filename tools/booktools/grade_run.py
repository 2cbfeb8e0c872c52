"""The grader's two child processes, one submission each (``booktools.grade`` starts them).

    python -m booktools.grade_run run RUN_DIR      execute the submission's cells
    python -m booktools.grade_run verify RUN_DIR   check the answers it left, in a clean process

``run`` executes ``RUN_DIR/plan.json``'s cells with **nbclient** (the maintained engine of
``jupyter execute``, papermill and nbgrader): a fresh IPython kernel, started by jupyter_client
in its own session, each cell with the time left of the notebook's budget (counted from the
kernel's start) as its time-out, errors
allowed (an error is logged and the next cell runs, so one broken exercise does not void the
others), a kernel that dies (``os._exit``, a segfault, ``exit()``) reported as such, and the
kernel killed at the end. The grader adds its own cells: one first (``grade_kernel.setup``:
tracing the cells the student wrote) and one after each check cell (``grade_kernel.capture``:
the check's answer taken out of the kernel into ``answers/`` of the plan's ``outbox``, a folder
apart from ``RUN_DIR``, the grader's state); nothing is checked there.
The state (``ran``, or ``timed out``/``crashed`` and in which cell) goes to ``RUN_DIR/run.json``:
a notebook that ends its own kernel, even with ``os._exit(0)``, has not run to its end.

``verify`` runs in a fork of the verifier's server, with nothing of the student's imported:
``grade_verify`` (what it checks and how).

What the maintained tools do that this grader does not, and the other way round:

- **nbclient** runs the cells, times them out and notices a dead kernel (used here). It knows
  nothing of answers or checks.
- **nbgrader** (autograde) also runs the notebook with nbclient, then scores the student's own
  test cells, read-only cells locked by a checksum, points per cell, manual grading in its
  formgrader web app and a database of students; a student who redefines the test's helpers in
  the kernel changes the verdict, since the tests run in the student's kernel. Here the checks
  run in a clean process, on the answer taken out of the kernel.
- **otter-grader** runs each submission in a Docker container (a sandbox this grader does not
  provide: see ``grade.py`` for the container recipe), scores its own test files with points
  per test case, and works with Gradescope (its ``results.json``) and Canvas. Its tests also run
  in the state the student's notebook left, and it has no check of its own for answers that call
  the library's reference.
- **gradescope-utils** writes ``results.json`` from ``unittest`` results; the book's checks are
  no ``unittest`` cases, so ``grade_export`` writes the file (its schema is tested).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

from .grade_files import append_record as _append
from .grade_files import error_text as _error_text
from .grade_files import outbox as _outbox
from .grade_files import read_records as _jsonl
from .grade_kernel import digest


def _cell_error(cell) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"[:300]
    return None


def _program(plan: dict, run_dir: Path) -> list[tuple[str, int | None, str]]:
    """``(kind, plan cell, source)`` of every cell the kernel runs, the grader's included."""
    traced = [digest(c["source"]) for c in plan["cells"] if c.get("traced")]
    call = "__import__('booktools.grade_kernel').grade_kernel."
    box = _outbox(plan, run_dir)
    out = [("grader", None, f"{call}setup({traced!r}, {str(box / 'traces.jsonl')!r})")]
    for i, cell in enumerate(plan["cells"]):
        out.append(("cell", i, cell["source"]))
        if cell["capture"]:
            args = f"{cell['capture']!r}, {str(box / 'answers')!r}, {cell.get('origin') or i + 1!r}"
            out.append(("grader", i, f"{call}capture({args})"))
    return out


def run(run_dir: Path) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    plan = json.loads((run_dir / "plan.json").read_text())
    (_outbox(plan, run_dir) / "answers").mkdir(exist_ok=True)
    (run_dir / "calls").mkdir(exist_ok=True)
    log = run_dir / "cells.jsonl"
    program = _program(plan, run_dir)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for _, _, src in program])
    deadline = math.inf  # the notebook's budget starts once its kernel is up
    client = NotebookClient(
        nb,
        timeout_func=lambda cell: max(1, math.ceil(deadline - time.monotonic())),
        allow_errors=True,
        kernel_name="python3",
        shutdown_kernel="immediate",
        extra_arguments=["--HistoryManager.hist_file=:memory:"],  # as papermill
        resources={"metadata": {"path": os.getcwd()}},
    )
    state, where = "ran", None
    try:
        with client.setup_kernel():
            (run_dir / "kernel.pid").write_text(str(client.km.provisioner.pid))
            deadline = time.monotonic() + plan["timeout"]
            for k, (kind, i, _) in enumerate(program):
                if time.monotonic() >= deadline:
                    state, where = "timed out", i
                    break
                if kind == "cell":
                    _append(log, {"cell": i, "started": True})
                try:
                    client.execute_cell(nb.cells[k], k)
                except CellTimeoutError:
                    state, where = "timed out", i
                    break
                except DeadKernelError:
                    state, where = "crashed", i
                    break
                if kind == "cell":
                    _append(
                        log,
                        {
                            "cell": i,
                            "error": _cell_error(nb.cells[k]),
                            "count": nb.cells[k].get("execution_count"),
                        },
                    )
                nb.cells[k].outputs = []  # what the notebook printed is never read: keep no copy
    except (DeadKernelError, RuntimeError) as err:  # the kernel did not start, or died in between
        if state == "ran":
            state, where = "crashed", None
            _append(log, {"kernel": _error_text(err)})
    (run_dir / "run.json").write_text(json.dumps({"state": state, "cell": where}))
    _attribute_calls(plan, run_dir)


def _attribute_calls(plan: dict, run_dir: Path) -> None:
    """For each value answer: the library functions its cells called (``calls/<id>.json``),
    and whether one of them ran without the tracer (it was turned off, or its hooks removed)."""
    ran = {r["cell"]: r.get("count") for r in _jsonl(run_dir / "cells.jsonl") if "error" in r}
    box = _outbox(plan, run_dir)
    traces = {
        r.get("execution_count"): r
        for r in _jsonl(box / "traces.jsonl")  # the kernel's: what is not a record is dropped
        if isinstance(r, dict) and isinstance(r.get("calls", []), list)
    }
    for ex_id, window in plan.get("windows", {}).items():
        calls, untraced = set(), False
        for i in window:
            if i not in ran:
                continue
            record = traces.get(ran[i])
            if record is None or not record.get("intact"):
                untraced = True
            calls.update(record.get("calls", []) if record else [])
        (run_dir / "calls" / f"{ex_id}.json").write_text(
            json.dumps({"calls": sorted(calls), "untraced": untraced})
        )


def main(argv: list[str]) -> None:
    cmd, run_dir = argv[0], Path(argv[1])
    try:
        if cmd == "run":
            run(run_dir)
        elif cmd == "verify":
            from .grade_verify import verify

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
