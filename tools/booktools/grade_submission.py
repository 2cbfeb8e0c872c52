"""One submission graded: its notebook run in one child process, its answers checked in
another (``booktools.grade_run``), each check's outcome and credit (``booktools.grade`` starts
this for every submission, ``--jobs`` at a time).

The run process gets the notebook's ``--timeout`` plus ``GRACE`` seconds (the kernel's start and
clean-up); the verifying process ``--timeout`` seconds, restarted for the checks left after one
that killed it, hung or tampered. A child that times out or dies is killed with its process
group, and the kernel it started (in a session of its own) with it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .grade_hand import collect_answers
from .grade_plan import identify, plan, read_cells
from .grade_server import VerifierError

SCORED = ("correct", "incorrect", "crashed")  # outcomes whose credit counts (partial credit)
GRACE = 120  # seconds the run process gets beyond the notebook's budget (kernel start, clean-up)


class Outcome(NamedTuple):
    outcome: str
    message: str
    credit: float = 0.0


@dataclass
class Submission:
    path: Path
    rel: str
    chapter: str | None = None
    # ran / crashed in code cell N / timed out in code cell N / unreadable / unknown chapter
    run: str = "ran"
    outcomes: dict = field(default_factory=dict)  # id -> Outcome
    cell_errors: list = field(default_factory=list)
    seconds: float = 0.0
    hand: dict = field(default_factory=dict)  # exercise label -> the text the student added
    values: dict = field(default_factory=dict)  # value check id -> the value it read
    hand_scores: dict = field(default_factory=dict)  # exercise label -> (score, comment)
    pattern: str | None = None  # --student-pattern
    warnings: list = field(default_factory=list)  # about its answer cells (grade_hand)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_kernel(pid: int) -> None:
    """Kill the kernel the run process started (in a session of its own), if it still runs."""
    try:
        alive = b"ipykernel" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        alive = False
    if alive:
        _kill_group(pid)


def child_env() -> dict:
    """The grader's environment, less what would make a child grade in the book build's mode."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANKCOLLAPSE_MODE", "RANKCOLLAPSE_BOOK_BUILD")
    }
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _child(args: list[str], cwd: Path, timeout: float, log: Path) -> str:
    """Run ``python -m booktools.grade_run ...`` in its own session; "ok", "timed out" or "died
    (…)". On a time-out or a death its process group goes, and the kernel it started (its own
    session)."""
    env = child_env()
    with open(log, "ab") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "booktools.grade_run", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _kill_group(proc.pid)  # the notebook's children go with it
            proc.wait()
    if args[0] == "run" and code != 0:
        try:
            _kill_kernel(int((Path(args[1]) / "kernel.pid").read_text()))
        except (OSError, ValueError):
            pass
    if code is None:
        return "timed out"
    return "ok" if code == 0 else f"died (exit code {code})"


def _jsonl(path: Path) -> list[dict]:
    from .grade_files import read_records as read

    return read(path)


def prepare(sub: Submission, specs: dict) -> list | None:
    """The submission's cells, read (and its chapter found) before any submission runs; ``None``
    when there is nothing to run (``sub.run`` says why)."""
    try:
        cells = read_cells(sub.path)
    except Exception as err:  # noqa: BLE001 (not JSON, not a notebook, not UTF-8)
        sub.run = f"unreadable ({type(err).__name__})"
        return None
    sub.chapter = identify(cells, specs)
    if sub.chapter is None:
        sub.run = "unknown chapter"
        return None
    sub.hand, sub.warnings = collect_answers(cells, specs[sub.chapter])
    return cells


def _folders() -> tuple[Path, Path, Path]:
    """The grader's state (``plan.json``, the logs, the verdicts), the notebook's working folder
    and the folder its answers are taken out to: three private folders, none inside another, none
    the grader's working folder or below it."""
    return tuple(Path(tempfile.mkdtemp(prefix=f"grade-{k}-")) for k in ("state", "work", "answers"))


def _records(path: Path, n_cells: int) -> list[dict]:
    """The run's cell log, each line checked (a line that is not the grader's is dropped)."""
    out = []
    for r in _jsonl(path):
        cell = r.get("cell") if isinstance(r, dict) else None
        if isinstance(r, dict) and "kernel" in r and isinstance(r["kernel"], str):
            out.append({"kernel": r["kernel"][:300]})
        elif isinstance(cell, int) and not isinstance(cell, bool) and 0 <= cell < n_cells:
            error = r.get("error")
            out.append({**r, "error": error[:300] if isinstance(error, str) else None})
    return out


def _run_state(path: Path, n_cells: int) -> dict | None:
    try:
        ran = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(ran, dict) or ran.get("state") not in ("ran", "timed out", "crashed"):
        return None
    cell = ran.get("cell")
    ok = cell is None or (
        isinstance(cell, int) and not isinstance(cell, bool) and 0 <= cell < n_cells
    )
    return {"state": ran["state"], "cell": cell} if ok else None


def grade_one(
    sub: Submission, specs: dict, mode: str, timeout: float, cells=None, verifiers=None
) -> Submission:
    start = time.monotonic()
    if cells is None:
        cells = prepare(sub, specs)
        if cells is None:
            return sub
    chapter = specs[sub.chapter]
    to_run, status, windows = plan(cells, chapter, mode)
    state_dir, work, outbox = _folders()
    try:
        (state_dir / "plan.json").write_text(
            json.dumps(
                {"cells": to_run, "timeout": timeout, "windows": windows, "outbox": str(outbox)}
            )
        )
        state = _child(["run", str(state_dir)], work, timeout + GRACE, state_dir / "output.txt")
        origin = [c["origin"] for c in to_run]  # the submission's code cell, counted from 1
        log = _records(state_dir / "cells.jsonl", len(to_run))
        sub.cell_errors = [(origin[r["cell"]], r["error"]) for r in log if r.get("error")]
        ran = _run_state(state_dir / "run.json", len(to_run))
        if state == "timed out" or ran is None:
            stuck = next((r["cell"] for r in reversed(log) if r.get("started")), None)
            ran = {"state": "timed out" if state == "timed out" else "crashed", "cell": stuck}
        if ran["state"] != "ran":
            where = ran.get("cell")
            where = f" in code cell {origin[where]}" if where is not None and origin[where] else ""
            kernel = next((r["kernel"] for r in log if "kernel" in r), "")
            sub.run = ran["state"] + where + (f" (the kernel: {kernel})" if kernel else "")
        answers = [s.id for s in chapter.checks if (outbox / "answers" / f"{s.id}.pkl").is_file()]
        verdicts, sub.values = _verify(state_dir, work, answers, timeout, verifiers)
        for s in chapter.checks:
            if s.id in verdicts:
                got = verdicts[s.id]
            elif status[s.id] == "missing":
                got = Outcome("missing", "The check cell was deleted.")
            else:
                outcome = "timed out" if ran["state"] == "timed out" else "crashed"
                got = Outcome(outcome, f"The notebook {sub.run} before this check.")
            if status[s.id] == "edited":
                got = Outcome(
                    "edited",
                    f"The check cell was edited; the answer itself: {got.outcome}. "
                    f"{got.message}".strip(),
                )
            sub.outcomes[s.id] = got
    finally:
        for folder in (state_dir, work, outbox):
            shutil.rmtree(folder, ignore_errors=True)
    sub.seconds = time.monotonic() - start
    return sub


def failed(sub: Submission, specs: dict, err: BaseException) -> Submission:
    """The row of a submission the grader itself failed on: every check crashed, 0 points."""
    why = f"{type(err).__name__}: {err}"[:300]
    sub.run = f"not graded: the grader failed on it ({why})"
    chapter = specs.get(sub.chapter)
    for s in chapter.checks if chapter else []:
        sub.outcomes[s.id] = Outcome("crashed", f"The grader failed on this submission ({why}).")
    return sub


LIBRARY_STATUS = {
    "correct": "correct",
    "incorrect": "incorrect",
    "not attempted": "not attempted",
    "error": "crashed",
    "crashed": "crashed",
    "tampered": "tampered",
    "used the reference": "used the reference",
}


def _verify(run_dir: Path, work: Path, ids: list[str], timeout: float, verifiers=None) -> dict:
    """``{id: Outcome}`` for the answers left in ``run_dir/answers``, and ``{id: value}`` for the
    value answers (as the check read them)."""
    verdicts, values, todo = {}, {}, list(ids)
    while todo:
        (run_dir / "verdicts.jsonl").unlink(missing_ok=True)  # written by this verifier only
        (run_dir / "verifying").unlink(missing_ok=True)
        log = run_dir / "verify.txt"
        if verifiers is None:
            state = _child(["verify", str(run_dir), *todo], work, timeout, log)
        else:
            try:
                state = verifiers.verify(run_dir, work, todo, log, timeout)
            except VerifierError as err:
                for i in todo:
                    verdicts[i] = Outcome("crashed", f"The answer was not checked: {err}.")
                break
        for r in _jsonl(run_dir / "verdicts.jsonl"):
            if not isinstance(r, dict) or r.get("id") not in todo or r["id"] in verdicts:
                continue
            outcome = LIBRARY_STATUS.get(r.get("status"), "crashed")
            credit = _credit(r.get("credit")) if outcome in SCORED else 0.0
            verdicts[r["id"]] = Outcome(outcome, str(r.get("message", ""))[:2000], credit)
            if "value" in r:
                values[r["id"]] = r["value"]
        todo = [i for i in todo if i not in verdicts]
        if not todo:
            break
        try:
            busy = (run_dir / "verifying").read_text()
        except (OSError, ValueError):
            busy = todo[0]
        busy = busy if busy in todo else todo[0]
        if state == "timed out":
            verdicts[busy] = Outcome(
                "timed out", f"Checking the answer took more than {timeout:g} s."
            )
        elif state == "ok":
            continue  # stopped after a tampered verdict: the rest in a fresh process
        else:
            verdicts[busy] = Outcome(
                "crashed", f"Checking the answer killed the process ({state})."
            )
        todo = [i for i in todo if i not in verdicts]
    return verdicts, values


def _credit(x) -> float:
    """A verdict's credit: a number in [0, 1] (anything else: 0)."""
    try:
        x = float(x or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return x if 0.0 <= x <= 1.0 else 0.0
