"""The library's reading of its environment variables other than the mode (``book.presets``).

``RANKCOLLAPSE_THREADS``: how many threads torch uses, a positive integer; unset, torch's own
count (one per core). Where other processes compete for the cores (a shared machine, tests run in
parallel), OpenMP threads spin waiting for each other and one thread can be several times faster
than two. ``book.start`` applies it at a chapter's start.
"""

from __future__ import annotations

import os

THREADS_VAR = "RANKCOLLAPSE_THREADS"


def threads_from_env() -> int | None:
    """``RANKCOLLAPSE_THREADS`` (a positive integer), or ``None``: torch's own count (every core)."""
    value = os.environ.get(THREADS_VAR, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_VAR} must be a positive integer, got {value!r}")
    return int(value)
