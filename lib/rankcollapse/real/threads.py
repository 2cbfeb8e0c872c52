"""How many torch threads :mod:`rankcollapse.real`'s heavy loops use (:class:`torch_threads`)."""

from __future__ import annotations

import torch

from .._env import threads_from_env

__all__ = ["THREADS", "torch_threads"]

THREADS = threads_from_env()  # torch threads for rc.real's heavy loops (see torch_threads)


class torch_threads:
    """Run a block with ``torch.set_num_threads(n)`` and restore the previous count afterwards.

    By default (:data:`THREADS` is ``None``) torch's own thread count is used, one per core: on an
    idle 2-core machine the chapter's forward passes run 1.8 times faster on two threads than on
    one. Where other processes compete for the cores (a shared machine, tests run in parallel),
    OpenMP threads spin waiting for each other and one thread was measured 3.5 times faster than
    two: set ``RANKCOLLAPSE_THREADS=1`` in the environment, or ``rc.real.threads.THREADS = 1``.
    """

    def __init__(self, n=None):
        self.n = THREADS if n is None else n

    def __enter__(self):
        self.prev = torch.get_num_threads()
        if self.n:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        torch.set_num_threads(self.prev)
        return False
