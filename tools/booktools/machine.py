"""The machine a measurement ran on, and how much of it other work took while it ran.

A timing says little without the machine (:func:`facts`) and whether the machine was free: a run
that shared two cores with other work took longer than it would alone. :class:`OtherWork`
measures that sharing directly, instead of guessing it from the load average (which counts the
run's own processes too, so a run that keeps every core busy looks "busy" itself): the CPU time
the whole machine spent busy during the run (``/proc/stat``, steal time included: a virtual
machine's host giving the cores to someone else slows the run down as well) less the CPU time of
this process and of every process it started (``getrusage``; this process is made their
*subreaper*, so a grandchild whose parent exits before it, as a browser's helpers can, is still
counted as the run's own). What remains, divided by the run's wall time, is how many cores other
work kept busy on average: ``0.0`` on an idle machine, ``1.0`` when another program kept one core
busy the whole time.

Linux only (``/proc/stat``); elsewhere :attr:`OtherWork.cores` is None (not measured).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import time
from importlib import metadata
from pathlib import Path

BUSY_CORES = 0.2  # other work above this (cores, on average) makes a timing an upper bound


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def facts() -> dict:
    """What the measurements ran on (recorded with every measurement)."""

    def version(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch": version("torch"),
        "jupyter-book": version("jupyter-book"),
    }


def machine_busy_seconds() -> float | None:
    """CPU seconds all the machine's cores have spent busy since boot (``/proc/stat``: user, nice,
    system, irq, softirq and steal time); None where there is no ``/proc/stat``."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if fields[0] != "cpu" or len(fields) < 9:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_seconds() -> float:
    """CPU seconds this process and its finished (reaped) descendants have used."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def set_subreaper(on: bool) -> bool:
    """Make orphaned descendants this process's children (Linux ``PR_SET_CHILD_SUBREAPER``), so
    that their CPU time reaches :func:`own_seconds` once they are reaped, or stop it; whether
    the call succeeded (False off Linux or where the system refuses it)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    return prctl(36, int(on), 0, 0, 0) == 0  # 36: PR_SET_CHILD_SUBREAPER


def reap_orphans() -> None:
    """Collect descendants that were left to this process and have exited."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class OtherWork:
    """``with OtherWork() as other: run()`` then ``other.cores``: how many cores, on average,
    processes outside the run kept busy while it ran (None where it cannot be measured);
    ``other.own``: the CPU seconds the run itself used.

    Use it innermost, around work that waits for every process it starts (as
    ``subprocess.run``, papermill and the book build do): a descendant still running at the end
    counts as other work, and the block reaps the exited orphans it inherits, which a
    ``Popen`` that outlives the block would then not find. Not in a process that keeps children
    of its own (a test runner): measure in a child interpreter there. What it cannot separate
    from other work: the kernel's time for the run's own interrupts (network, disk), and, in a
    container, the host's other tenants (``/proc/stat`` is the host's)."""

    cores: float | None = None
    own: float | None = None

    def __enter__(self) -> OtherWork:
        reap_orphans()  # what earlier work left is not this run's
        self._reaper = set_subreaper(True)
        self._machine, self._own = machine_busy_seconds(), own_seconds()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        reap_orphans()
        wall = time.perf_counter() - self._start
        machine, own = machine_busy_seconds(), own_seconds()
        if self._reaper:
            set_subreaper(False)
        self.own = own - self._own
        if not self._reaper or machine is None or self._machine is None or wall <= 0:
            return  # without the subreaper a browser's helpers would count as other work
        other = (machine - self._machine) - self.own
        self.cores = round(max(other, 0.0) / wall, 2)
