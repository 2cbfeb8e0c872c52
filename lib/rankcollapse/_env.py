"""The library's reading of its environment variables other than the mode (``book.presets``).

``RANKCOLLAPSE_THREADS``: how many threads torch uses, a positive integer; unset, torch's own
count (one per core). Where other processes compete for the cores (a shared machine, tests run in
parallel), OpenMP threads spin waiting for each other and one thread can be several times faster
than two. ``book.start`` applies it at a chapter's start (:func:`set_torch_threads`); the
library's heavy loops run inside :func:`torch_threads`.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

THREADS_VAR = "RANKCOLLAPSE_THREADS"


def threads_from_env() -> int | None:
    """``RANKCOLLAPSE_THREADS`` (a positive integer), or ``None``: torch's own count (every
    core)."""
    value = os.environ.get(THREADS_VAR, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_VAR} must be a positive integer, got {value!r}")
    return int(value)


@contextmanager
def torch_threads(n: int | None):
    """Run a block on ``n`` torch threads (``None``: torch's count as it is) and restore the
    previous count afterwards (:func:`set_torch_threads` sets a count for the rest of a process).
    Every place in the library that sets torch's threads goes through these two."""
    prev = torch.get_num_threads()
    set_torch_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def set_torch_threads(n: int | None) -> None:
    """Set torch's thread count to ``n`` (``None``: leave it alone). ``book.start`` (rankbook)
    calls it with :func:`threads_from_env`."""
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n (torch threads) must be a positive integer or None, got {n!r}")
        torch.set_num_threads(n)
