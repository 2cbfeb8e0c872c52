"""The files of a grading run's folder, read and written by the grader's child processes
(``grade_run``, ``grade_verify``) and the parent (``grade_submission``): records appended one JSON
line at a time and synced (a child killed mid-way leaves every line it finished), read back
skipping any line that is not the grader's, and the kernel's outbox (its answers and traces), a
folder apart from the grader's state.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["append_record", "error_text", "read_records", "outbox"]


def append_record(path: Path, record: dict) -> None:
    """Append ``record`` to the JSON-lines file ``path``, synced to disk."""
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def error_text(err) -> str:
    """An exception as one short line: its type and message, at most 300 characters."""
    return f"{type(err).__name__}: {err}"[:300]


def read_records(path: Path) -> list[dict]:
    """The JSON lines of ``path`` (none if it cannot be read), any other line skipped."""
    out = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except (ValueError, RecursionError):  # a line that is not the grader's
            pass
    return out


def outbox(plan: dict, run_dir: Path) -> Path:
    """Where the kernel writes (its answers, its trace): a folder apart from the grader's state."""
    return Path(plan.get("outbox") or run_dir)
