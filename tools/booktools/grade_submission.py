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
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .grade_hand import collect
from .grade_plan import identify, plan, read_cells

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


def _child(args: list[str], cwd: Path, timeout: float, log: Path) -> str:
    """Run ``python -m booktools.grade_run ...`` in its own session; "ok", "timed out" or "died
    (…)". On a time-out or a death its process group goes, and the kernel it started (its own
    session)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANKCOLLAPSE_MODE", "RANKCOLLAPSE_BOOK_BUILD")
    }
    env.setdefault("MPLBACKEND", "Agg")
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
    kernel = Path(args[1]) / "kernel.pid"
    if args[0] == "run" and code != 0 and kernel.exists():
        _kill_kernel(int(kernel.read_text()))
    if code is None:
        return "timed out"
    return "ok" if code == 0 else f"died (exit code {code})"


def _jsonl(path: Path) -> list[dict]:
    from .grade_run import _jsonl as read

    return read(path)


def grade_one(sub: Submission, specs: dict, mode: str, timeout: float) -> Submission:
    start = time.monotonic()
    try:
        cells = read_cells(sub.path)
    except Exception as err:  # noqa: BLE001 (not JSON, not a notebook)
        sub.run = f"unreadable ({type(err).__name__})"
        return sub
    sub.chapter = identify(cells, specs)
    if sub.chapter is None:
        sub.run = "unknown chapter"
        return sub
    chapter = specs[sub.chapter]
    sub.hand = collect(cells, chapter)
    to_run, status, windows = plan(cells, chapter, mode)
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        run_dir, work = Path(tmp), Path(tmp) / "work"
        work.mkdir()
        (run_dir / "plan.json").write_text(
            json.dumps({"cells": to_run, "timeout": timeout, "windows": windows})
        )
        state = _child(["run", str(run_dir)], work, timeout + GRACE, run_dir / "output.txt")
        origin = [c["origin"] for c in to_run]  # the submission's code cell, counted from 1
        log = _jsonl(run_dir / "cells.jsonl")
        sub.cell_errors = [(origin[r["cell"]], r["error"]) for r in log if r.get("error")]
        ran = (
            json.loads((run_dir / "run.json").read_text())
            if (run_dir / "run.json").exists()
            else None
        )
        if state == "timed out" or ran is None:
            stuck = next((r["cell"] for r in reversed(log) if r.get("started")), None)
            ran = {"state": "timed out" if state == "timed out" else "crashed", "cell": stuck}
        if ran["state"] != "ran":
            where = ran.get("cell")
            where = f" in code cell {origin[where]}" if where is not None and origin[where] else ""
            kernel = next((r["kernel"] for r in log if "kernel" in r), "")
            sub.run = ran["state"] + where + (f" (the kernel: {kernel})" if kernel else "")
        answers = [s.id for s in chapter.checks if (run_dir / "answers" / f"{s.id}.pkl").exists()]
        verdicts, sub.values = _verify(run_dir, work, answers, timeout)
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
    sub.seconds = time.monotonic() - start
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


def _verify(run_dir: Path, work: Path, ids: list[str], timeout: float) -> dict:
    """``{id: Outcome}`` for the answers left in ``run_dir/answers``, and ``{id: value}`` for the
    value answers (as the check read them)."""
    verdicts, values, todo = {}, {}, list(ids)
    while todo:
        (run_dir / "verdicts.jsonl").unlink(missing_ok=True)  # written by this verifier only
        (run_dir / "verifying").unlink(missing_ok=True)
        state = _child(["verify", str(run_dir), *todo], work, timeout, run_dir / "verify.txt")
        for r in _jsonl(run_dir / "verdicts.jsonl"):
            if r.get("id") in todo and r["id"] not in verdicts:
                outcome = LIBRARY_STATUS.get(r.get("status"), "crashed")
                credit = float(r.get("credit") or 0.0) if outcome in SCORED else 0.0
                verdicts[r["id"]] = Outcome(outcome, str(r.get("message", "")), credit)
                if "value" in r:
                    values[r["id"]] = r["value"]
        todo = [i for i in todo if i not in verdicts]
        if not todo:
            break
        busy = (run_dir / "verifying").read_text() if (run_dir / "verifying").exists() else todo[0]
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
