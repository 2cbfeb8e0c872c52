"""How many torch threads :mod:`rankcollapse.real`'s heavy loops use: :data:`THREADS`, read once
from ``RANKCOLLAPSE_THREADS``, and :func:`torch_threads`, the library's one thread helper
(:func:`rankcollapse._env.torch_threads`) with that default.

By default (:data:`THREADS` is ``None``) torch's own thread count is used, one per core: on an
idle 2-core machine the chapter's forward passes run 1.8 times faster on two threads than on
one. Where other processes compete for the cores (a shared machine, tests run in parallel),
OpenMP threads spin waiting for each other and one thread was measured 3.5 times faster than
two: set ``RANKCOLLAPSE_THREADS=1`` in the environment, or ``rc.real.threads.THREADS = 1``.
"""

from __future__ import annotations

from .. import _env

__all__ = ["THREADS", "torch_threads"]

THREADS = _env.threads_from_env()  # torch threads for rc.real's heavy loops


def torch_threads(n: int | None = None):
    """``rankcollapse._env.torch_threads(n)``, ``n`` :data:`THREADS` unless given."""
    return _env.torch_threads(THREADS if n is None else n)
