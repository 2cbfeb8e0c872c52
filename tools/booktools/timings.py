"""What each chapter took when the status page last measured it (``status/status.json``): the
order in which parallel runs are started (longest first, so that the longest chapter is not the
last to begin and the cores finish together)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import ROOT
from .toc import chapter_key

STATUS_JSON = ROOT / "status" / "status.json"


def read(path: Path = STATUS_JSON) -> dict:
    """The status page's record, or an empty one when there is none yet; a file that is not one
    (invalid JSON, a merge conflict left in it) is a ``ValueError`` naming it and the line."""
    if not path.exists():
        return {"chapters": {}}
    try:
        text = path.read_text(encoding="utf-8")
        record = json.loads(text)
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} cannot be read ({type(err).__name__}: {err})") from None
    except json.JSONDecodeError as err:
        conflict = next(
            (
                n
                for n, line in enumerate(text.splitlines(), 1)
                if line.startswith(("<<<<<<<", "=======", ">>>>>>>"))
            ),
            None,
        )
        why = (
            f"a merge-conflict marker at line {conflict}: resolve the conflict"
            if conflict
            else f"not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        )
        raise ValueError(f"{path}: {why}") from None
    if not isinstance(record, dict) or not isinstance(record.get("chapters", {}), dict):
        raise ValueError(f"{path}: not the status page's record (an object with 'chapters')")
    return record


def measured_seconds(chapter: Path, mode: str, record: dict | None = None) -> float | None:
    """Seconds the chapter took in ``mode`` at its last measurement; ``None`` if never measured."""
    record = read() if record is None else record
    entry = record.get("chapters", {}).get(chapter_key(chapter), {}).get("runs", {}).get(mode, {})
    return entry.get("seconds")


def longest_first(runs: dict) -> dict:
    """``runs`` (``{key: (chapter path, options)}``, options holding ``mode``) reordered by each
    chapter's measured seconds in its mode, longest first; one never measured goes first (it may
    be long); ties keep their order. An unreadable record leaves the order as it is (a warning)."""
    try:
        record = read(STATUS_JSON)
    except ValueError as err:
        print(f"warning: {err}; the chapters run in the book's order", file=sys.stderr)
        return dict(runs)

    def expected(item):
        path, options = item[1]
        seconds = measured_seconds(path, options.get("mode", "fast"), record)
        return -(float("inf") if seconds is None else seconds)

    return dict(sorted(runs.items(), key=expected))
