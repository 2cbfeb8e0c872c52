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
    monkeypatch.setattr(machine, "set_subreaper", lambda on: True)
    monkeypatch.setattr(machine, "reap_orphans", lambda: None)
    with machine.OtherWork() as other:
        pass
    assert (other.cores, other.own) == (1.0, 15.0)
    monkeypatch.setattr(machine, "set_subreaper", lambda on: False)  # refused: not measured
    clock, busy, own = iter([0.0, 10.0]), iter([0.0, 25.0]), iter([0.0, 15.0])
    with machine.OtherWork() as other:
        pass
    assert other.cores is None


def test_a_grandchild_left_behind_counts_as_the_runs_own():
    """Inside ``OtherWork``, a child that starts a CPU-bound grandchild and exits at once: the
    grandchild is reparented to the measuring process (the subreaper), reaped when the block
    ends, and its CPU time counted as the run's own (without the subreaper it would be lost to
    init and counted as other work)."""
    code = f"""
    import os
    burn = {BURN.format(s=1.0)!r}
    with OtherWork() as other:
        subprocess.run([sys.executable, "-c",
            "import subprocess, sys; subprocess.Popen([sys.executable, '-c', " + repr(burn) + "])"])
        # wait until the orphan has exited, without collecting it: the block does that
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
    print(json.dumps({{"own": other.own}}))
    """
    assert measure(code)["own"] >= 0.9


def test_a_program_running_beside_the_run_is_other_work():
    """A CPU-bound program started before the run and still running after it is not the run's:
    it shows as other work, about one core (at least half of one however busy the machine, and
    more where other programs run too, as the test session's other worker does; the scale is
    checked exactly by test_the_arithmetic)."""
    code = f"""
    beside = subprocess.Popen([sys.executable, "-c", {BURN.format(s=5)!r}])
    try:
        time.sleep(0.5)
        with OtherWork() as other:
            time.sleep(2.0)
    finally:
        beside.kill()
        beside.wait()
    print(json.dumps({{"cores": other.cores}}))
    """
    assert measure(code)["cores"] >= 0.5
