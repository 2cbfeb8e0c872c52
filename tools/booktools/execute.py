"""A chapter executed with papermill, as the tests and the status page run it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from . import BUILD
from .timings import longest_first

# rankbook.checks.BOOK_BUILD_ENV, named again (booktools stays off the book layer here)
BOOK_BUILD_ENV = "RANKCOLLAPSE_BOOK_BUILD"
EXECUTED = BUILD / "papermill"  # executed fast-mode notebooks, kept for inspection


def execute(
    path: Path,
    mode: str = "fast",
    seed: int = 0,
    out_dir: Path = EXECUTED,
    nb=None,
    name: str | None = None,
    student: bool = False,
    book: bool = False,
):
    """Execute a chapter with papermill in ``mode`` with ``seed`` and return the executed notebook.

    The notebook is written to ``out_dir / (name or the chapter's stem) + ".ipynb"``. ``nb``: a
    variant of the chapter to run instead of ``path`` converted by jupytext (the Colab notebook);
    ``student=True``: the student version (:func:`booktools.student.student_notebook`, the
    solutions stripped). Either runs where the chapter would, from ``path``'s folder. The mode is
    the one asked for: ``RANKCOLLAPSE_MODE``, which would override it inside the kernel, is not
    passed on. ``book=True``: the run is the book's page (the kernel gets
    ``RANKCOLLAPSE_BOOK_BUILD=1`` as in a jupyter-book build: the exercises' checks say they ran the
    reference solution); otherwise the kernel does not get it, even when this process has it.
    """
    import jupytext
    import papermill

    path = Path(path)
    if student:
        if nb is not None:
            raise ValueError("execute: give nb or student=True, not both")
        from .student import student_notebook

        nb = student_notebook(path.read_text())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.pop(name, None) for name in ("RANKCOLLAPSE_MODE", BOOK_BUILD_ENV)}
    if book:  # the kernel inherits os.environ
        os.environ[BOOK_BUILD_ENV] = "1"
    try:
        return papermill.execute_notebook(
            jupytext.read(path) if nb is None else nb,
            str(out_dir / ((name or path.stem) + ".ipynb")),
            parameters={"mode": mode, "seed": seed},
            kernel_name="python3",
            cwd=str(path.parent),
            progress_bar=False,
        )
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


KERNELS_LOG = BUILD / "kernels.log"  # what the parallel runs' kernels print to stderr


def _worker(one_thread: bool, log: str):
    """A parallel run's worker. With ``one_thread``, its kernels (which inherit the environment)
    use one torch thread (``RANKCOLLAPSE_THREADS``, unless the reader set it), so that the kernels
    share the cores instead of each taking every core: on 2 cores, limits and real_models at seeds
    0 and 1 took 229 s with torch's default and 66 s with one thread each, with the same glued
    values. The kernels' own stderr (ipykernel's start-up warnings, one per chapter) goes to
    ``log``; a cell's error comes back as the run's exception."""
    if one_thread:
        os.environ.setdefault("RANKCOLLAPSE_THREADS", "1")
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 2)
    os.close(fd)


def _timed(path, options):
    start = time.monotonic()
    nb = execute(path, **options)
    return nb, time.monotonic() - start


def execute_all(runs, jobs: int | None = None, done=None) -> dict:
    """Execute several chapters at once, each in a process of its own (up to ``jobs``, default one
    per core, each kernel with one torch thread), and return ``{key: executed notebook}``, or the
    run's exception for a run that failed.

    ``runs``: ``{key: (path, options)}``, ``options`` being :func:`execute`'s keyword arguments.
    ``done(key, seconds, error)`` is called as each run ends (``error`` is ``None`` on success).
    The runs start longest first (:func:`booktools.timings.longest_first`); the result keeps the
    order of ``runs``.
    """
    return Batch(runs, jobs).wait(done)


class Batch:
    """Runs started now and collected later: :func:`execute_all` without the wait. The processes
    (and their kernels) start, with this process's environment and folder, before the constructor
    returns, so that what the caller changes afterwards (a test's ``monkeypatch``) reaches none of
    them. :meth:`wait` returns what :func:`execute_all` returns; :meth:`cancel` stops the runs not
    yet begun."""

    def __init__(self, runs, jobs: int | None = None):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.order = list(runs)
        runs = longest_first(runs)
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
            raise ValueError(f"execute_all: jobs must be a positive integer, got {jobs!r}")
        jobs = max(1, min(jobs or len(os.sched_getaffinity(0)), len(runs) or 1))
        self.made: dict = {}
        self.futures: dict = {}
        self.pool = None
        self.started = time.monotonic()
        if not runs:
            return
        KERNELS_LOG.parent.mkdir(parents=True, exist_ok=True)
        KERNELS_LOG.write_text("")  # this batch's kernels only
        self.pool = ProcessPoolExecutor(
            jobs,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker,
            initargs=(jobs > 1, str(KERNELS_LOG)),
        )
        self.futures = {
            self.pool.submit(_timed, path, options): key for key, (path, options) in runs.items()
        }

    def wait(self, done=None) -> dict:
        """Wait for every run; ``done(key, seconds, error)`` as each ends (see execute_all)."""
        from concurrent.futures import as_completed

        for future in as_completed(self.futures):
            key, error = self.futures[future], future.exception()
            if error is None:
                self.made[key], seconds = future.result()
            else:
                self.made[key], seconds = error, time.monotonic() - self.started
            if done is not None:
                done(key, seconds, error)
        self.cancel()
        return {key: self.made[key] for key in self.order if key in self.made}

    def cancel(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
