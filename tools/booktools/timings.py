"""What each chapter took when the status page last measured it (``status/status.json``): the
order in which parallel runs are started (longest first, so that the longest chapter is not the
last to begin and the cores finish together)."""

from __future__ import annotations

import json
from pathlib import Path

from . import ROOT
from .toc import chapter_key

STATUS_JSON = ROOT / "status" / "status.json"


def read(path: Path = STATUS_JSON) -> dict:
    """The status page's record, or an empty one when there is none yet."""
    if path.exists():
        return json.loads(path.read_text())
    return {"chapters": {}}


def measured_seconds(chapter: Path, mode: str, record: dict | None = None) -> float | None:
    """Seconds the chapter took in ``mode`` at its last measurement; ``None`` if never measured."""
    record = read() if record is None else record
    entry = record.get("chapters", {}).get(chapter_key(chapter), {}).get("runs", {}).get(mode, {})
    return entry.get("seconds")


def longest_first(runs: dict) -> dict:
    """``runs`` (``{key: (chapter path, options)}``, options holding ``mode``) reordered by each
    chapter's measured seconds in its mode, longest first; one never measured goes first (it may
    be long); ties keep their order."""
    record = read()

    def expected(item):
        path, options = item[1]
        seconds = measured_seconds(path, options.get("mode", "fast"), record)
        return -(float("inf") if seconds is None else seconds)

    return dict(sorted(runs.items(), key=expected))
