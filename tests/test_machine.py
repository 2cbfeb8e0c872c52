"""booktools.machine: the machine's facts, and the CPU other work took during a run.

The measurement runs in a child interpreter: it makes its process the subreaper of its
descendants and reaps them, which the pytest worker must not do to its own children.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from booktools import machine

pytestmark = pytest.mark.skipif(
    machine.machine_busy_seconds() is None, reason="no /proc/stat (not Linux)"
)

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def measure(code: str) -> dict:
    """Run ``code`` (which may use ``OtherWork``, ``own_seconds``) in a fresh interpreter; its
    last printed line is read as JSON."""
    prelude = "import json, subprocess, sys, time\nfrom booktools.machine import *\n"
    out = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_facts_name_the_machine():
    facts = machine.facts()
    assert facts["cores"] >= 1 and facts["cpu"] and facts["python"] and facts["torch"]


def test_the_arithmetic(monkeypatch):
    """Other work = the machine's busy CPU time less the run's own, per second of wall time."""
    clock = iter([100.0, 110.0])  # 10 s of wall time
    busy = iter([1000.0, 1025.0])  # the machine: 25 CPU seconds busy
    own = iter([5.0, 20.0])  # the run: 15 of them
    monkeypatch.setattr(machine.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(machine, "machine_busy_seconds", lambda: next(busy))
    monkeypatch.setattr(machine, "own_seconds", lambda: next(own))
    monkeypatch.setattr(machine, "become_subreaper", lambda: None)
    monkeypatch.setattr(machine, "reap_orphans", lambda: None)
    with machine.OtherWork() as other:
        pass
    assert other.cores == 1.0


def test_a_grandchild_left_behind_counts_as_the_runs_own():
    """A child that starts a CPU-bound grandchild and exits at once: the grandchild is
    reparented to the measuring process (the subreaper) and its CPU time reaches own_seconds."""
    code = f"""
    become_subreaper()
    before = own_seconds()
    burn = {BURN.format(s=1.0)!r}
    subprocess.run([sys.executable, "-c",
        "import subprocess, sys; subprocess.Popen([sys.executable, '-c', " + repr(burn) + "])"])
    time.sleep(0.2)
    while True:  # wait for the orphan to finish, then collect it
        try:
            import os
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            break
    print(json.dumps({{"own": own_seconds() - before}}))
    """
    assert measure(code)["own"] >= 0.9


def test_a_program_running_beside_the_run_is_other_work():
    """A CPU-bound program started before the run and still running after it is not the run's:
    it shows as other work: about one core (at least half of one however busy the machine; and
    more than one where other programs run too, as the test session's other worker does)."""
    code = f"""
    beside = subprocess.Popen([sys.executable, "-c", {BURN.format(s=30)!r}])
    time.sleep(0.5)
    with OtherWork() as other:
        time.sleep(2.0)
    beside.kill()
    print(json.dumps({{"cores": other.cores}}))
    """
    assert measure(code)["cores"] >= 0.5
