"""Issue 45's probes of the grader, as a careful instructor would try them, and its time-outs
tested without depending on the machine's speed.

The time-outs: a notebook whose cell loops, and an answer that hangs when its check calls it.
Their tests used to grade with a 15-s budget and expect the cells before the loop (the imports
of torch and the book) to fit in it, which they did not on a loaded machine. Here the notebook's
cells run in this process (``grade_run.run``) with the run's clock standing still until the
looping cell starts, then set one second before the notebook's deadline: the cells before it take
whatever time they take, and the looping one is stopped by nbclient's own time-out (the path a
real loop takes, real kernel included). The answers are then checked as the grader checks them.
An answer that hangs its check needs a real time-out of the check (``HANG_TIMEOUT``, spent
waiting, not computing); the checks around it are a fork of the verifier's server each, which
has every module imported already, so they take a small part of it.

The probes: a class of a few tiny submissions (no import in the kernel: the check cells are the
grader's, which never run there) with the issue's hostile ones mixed in, each its own row.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from test_grade import (
    IDS,
    JUNK,
    KILLER,
    POINTS,
    REWRITE,
    RIGHT,
    notebook,
    paths_spec,
    tiny,
)

from booktools import ROOT, grade, grade_run, grade_submission
from booktools.grade_export import score
from booktools.grade_server import Verifiers
from booktools.grade_submission import Submission, child_env, grade_one, prepare

LOOP = "while True:\n    pass"
HANG_TIMEOUT = 30  # s: the time-out of the checks of the answer that hangs its check


class RunClock:
    """``grade_run``'s clock: standing still (at the real time it was made) until ``jump()``,
    then the real clock shifted so that it reads ``at`` seconds after that start (``at`` is set
    from the notebook's budget)."""

    def __init__(self):
        self.start, self.shift = time.monotonic(), None

    def monotonic(self) -> float:
        if self.shift is None:
            return self.start
        return time.monotonic() + self.shift

    def jump(self, at: float) -> None:
        self.shift = self.start + at - time.monotonic()


def _run_in_process(monkeypatch, clock: RunClock, when) -> list:
    """``grade_submission._child`` with the ``run`` command run here, on ``clock``: ``when(plan,
    record)`` is called on every line the run logs, before it is written (the clock's jump
    goes there). Returns the list the states' folders are appended to."""
    real_child, real_append, seen = grade_submission._child, grade_run._append, []
    monkeypatch.setattr(grade_run, "time", clock)

    def append(path, record):
        when(json.loads((Path(path).parent / "plan.json").read_text()), record)
        real_append(path, record)

    def child(args, cwd, timeout, log):
        if args[0] != "run":
            return real_child(args, cwd, timeout, log)
        seen.append(Path(args[1]))
        here = os.getcwd()
        os.chdir(cwd)  # the kernel's folder is the run's working folder, as in the child
        try:
            grade_run.run(Path(args[1]))
        finally:
            os.chdir(here)
        return "ok"

    monkeypatch.setattr(grade_run, "_append", append)
    monkeypatch.setattr(grade_submission, "_child", child)
    return seen


def _graded(path: Path, timeout: float, verifiers=None) -> Submission:
    specs = {"paths": paths_spec()}
    sub = Submission(path, path.name)
    cells = prepare(sub, specs)
    assert sub.chapter == "paths", sub.run
    return grade_one(sub, specs, "fast", timeout, cells, verifiers)


def _loop_cell(plan: dict) -> int:
    return next(i for i, c in enumerate(plan["cells"]) if c["source"] == LOOP)


def test_a_notebook_that_loops_is_stopped_in_its_loop_by_the_time_out(tmp_path, monkeypatch):
    """The clock stands still until the loop starts, then reads 0.5 s before the deadline: the
    cells before it (the imports of torch and the book) count for nothing, and the loop gets
    the one second nbclient is given at least. The notebook is reported timed out in the loop's
    cell; the check before it is graded, the checks after it are timed out."""
    clock = RunClock()
    budget = 600.0

    def when(plan, record):
        if record.get("started") and record.get("cell") == _loop_cell(plan):
            clock.jump(budget - 0.5)

    _run_in_process(monkeypatch, clock, when)
    path = tmp_path / "loop.md"
    path.write_text(notebook({"count": RIGHT["count"]}, extra={"count": LOOP}))
    sub = _graded(path, budget)
    assert sub.run == "timed out in code cell 4", sub.run  # import, answer, check, the loop
    got = {i: sub.outcomes[i].outcome for i in IDS}
    assert got == {"paths.count": "correct", **{i: "timed out" for i in IDS[1:]}}
    message = sub.outcomes["paths.two_layer"].message
    assert message == "The notebook timed out in code cell 4 before this check."
    assert score(sub, paths_spec())["total"] == POINTS["paths.count"]
    assert clock.shift is not None  # the loop started: the clock jumped to its deadline


def test_a_deadline_passed_between_two_cells_runs_no_further_cell(tmp_path, monkeypatch):
    """The clock passes the deadline as the first answer's cell ends: the grader runs no further
    cell, its own included (the answer is not taken out: its check is timed out, not checked),
    and says in which cell the notebook was when its time ran out."""
    clock, started = RunClock(), []
    budget = 600.0

    def when(plan, record):
        if record.get("started"):
            started.append(record["cell"])
        count = next(i for i, c in enumerate(plan["cells"]) if c["source"] == RIGHT["count"])
        if "error" in record and record.get("cell") == count:  # the count answer ran
            clock.jump(budget + 1)

    _run_in_process(monkeypatch, clock, when)
    path = tmp_path / "slow.md"
    path.write_text(notebook(RIGHT))
    sub = _graded(path, budget)
    # import, answer, check: stopped at the check cell, before the grader's capture after it
    assert sub.run == "timed out in code cell 3", sub.run
    assert {i: sub.outcomes[i].outcome for i in IDS} == {i: "timed out" for i in IDS}
    assert started == [0, 1, 2]  # the grader's parameters, the import, the answer: no more


def test_an_answer_that_hangs_or_ends_its_check_is_that_checks_outcome(tmp_path, monkeypatch):
    """A function that waits forever when the grader calls it is timed out after ``timeout``
    seconds of checking; one that ends the process it is checked in is crashed; the answer
    between them is checked in a fresh fork and correct. The notebook itself ran (its clock
    stands still: the time-out here is the checks')."""
    _run_in_process(monkeypatch, RunClock(), lambda plan, record: None)
    path = tmp_path / "late.md"
    path.write_text(
        notebook(
            {
                "count": "def path_count(L, H, length):\n    import time\n    while True:\n"
                "        time.sleep(0.05)",
                "mean": "def mean_length(L, H):\n    import os\n    os._exit(1)",
                "two": RIGHT["two"],
            }
        )
    )
    verifiers = Verifiers(1, child_env())
    try:
        sub = _graded(path, HANG_TIMEOUT, verifiers)
    finally:
        verifiers.close()
    assert sub.run == "ran"
    got = [sub.outcomes[i].outcome for i in IDS]
    assert got == ["timed out", "correct", "crashed", "not attempted", "not attempted"]
    assert sub.outcomes["paths.count"].message == (
        f"Checking the answer took more than {HANG_TIMEOUT} s."
    )
    assert "killed the process" in sub.outcomes["paths.mean_length"].message


# --- a class with the hostile submissions -------------------------------------------


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """A class of two honest submissions and the issue's hostile ones, graded once; the honest
    ones graded alone too. The checks the grader imports are a copy of the book's layer on
    PYTHONPATH, which one submission rewrites."""
    import shutil
    import tempfile

    tmp = tmp_path_factory.mktemp("probes")
    copy = tmp / "site"
    shutil.copytree(ROOT / "book" / "rankbook", copy / "rankbook")
    old = {k: os.environ.get(k) for k in ("PYTHONPATH",)}
    old_tempdir = tempfile.tempdir
    os.environ["PYTHONPATH"] = os.pathsep.join([str(copy), *filter(None, [old["PYTHONPATH"]])])
    (tmp / "tmp").mkdir()
    tempfile.tempdir = str(tmp / "tmp")  # the grader's own folders, looked at afterwards
    try:
        alone, whole = tmp / "alone", tmp / "class"
        alone.mkdir()
        whole.mkdir()
        for k in (1, 2):
            (alone / f"honest{k}.md").write_text(tiny(k))
            (whole / f"honest{k}.md").write_text(tiny(k))
        out = whole / "graded"
        (whole / "junk.md").write_text(tiny(4, JUNK.replace("{out!r}", repr(str(out)))))
        (whole / "zz-\udce9l\udce8ve.md").write_text(tiny(2))  # a name a Windows zip gives
        (whole / "rewrite.md").write_text(
            tiny(1, last=REWRITE.replace("{copy!r}", repr(str(copy))))
        )
        (whole / "killer.md").write_text(tiny(2, count=KILLER))
        quiet = dict(timeout=120, jobs=2, echo=lambda *a: None)
        specs = paths_spec()
        points = {s.rel: score(s, specs)["total"] for s in grade.grade(alone, **quiet)}
        subs = {s.rel: s for s in grade.grade(whole, **quiet)}
        left = [p for p in os.listdir(tmp / "tmp") if p.startswith("grade-")]
    finally:
        tempfile.tempdir = old_tempdir
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    return points, subs, whole, copy, left


def test_probe_the_honest_get_what_they_get_alone(probed):
    points, subs, _, _, _ = probed
    specs = paths_spec()
    assert points == {"honest1.md": 2, "honest2.md": 3}  # test_grade.HONEST_POINTS
    for name in points:
        assert subs[name].run == "ran" and score(subs[name], specs)["total"] == points[name]


def test_probe_junk_appended_to_the_parent_folder_is_its_own_row(probed):
    """It appends to every file in its folder and the one above (once the grader's state), puts
    a folder where grades.md goes and junk on its outputs: the run still writes every row."""
    _, subs, whole, _, left = probed
    assert subs["junk.md"].run == "ran"
    assert subs["junk.md"].outcomes["paths.read_diagram"].outcome == "correct"  # k = 4: 6
    assert (whole / "graded" / "grades.md.in-the-way").is_dir()
    rows = (whole / "graded" / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + len(subs) == 7
    assert not left  # the grader's own folders are gone


def test_probe_a_name_that_is_not_utf8_is_graded_under_an_escaped_name(probed):
    _, subs, whole, _, _ = probed
    name = "zz-\\xe9l\\xe8ve.md"
    assert subs[name].run == "ran" and subs[name].chapter == "paths"
    assert score(subs[name], paths_spec())["total"] == 3  # tiny(2), as honest2
    assert name in (whole / "graded" / "grades.csv").read_text(encoding="utf-8")


def test_probe_a_reference_rewritten_on_disk_changes_no_verdict(probed):
    """It rewrites paths.read_diagram's reference answer in the installed checks to its own
    answer, 5, after its last cell; its check still compares with the answer loaded before."""
    _, subs, _, copy, _ = probed
    assert "answer = lambda: 5" in (copy / "rankbook" / "checks" / "paths_questions.py").read_text()
    assert subs["rewrite.md"].run == "ran"
    assert subs["rewrite.md"].outcomes["paths.read_diagram"].outcome == "incorrect"


def test_probe_an_answer_that_kills_its_checker_ends_only_its_check(probed):
    _, subs, _, _, _ = probed
    killer = subs["killer.md"].outcomes
    assert killer["paths.count"].outcome == "crashed"
    # its function ran and killed its checker's parent: the checks after it are still checked
    assert killer["paths.count"].message == (
        "Checking the answer killed the process (killed by signal 9)."  # was 'exit code -9'
    )
    assert killer["paths.read_diagram"].outcome == "correct"  # tiny(2): the others right
    assert killer["paths.predict_length"].outcome == "correct"


def test_a_grader_failure_on_one_submission_is_that_submissions_row(tmp_path, monkeypatch):
    """Whatever the grader itself fails on while grading one submission (here: a failure made
    for b.md) is that submission's row, every check crashed and 0 points; the others are graded
    and every output is written."""
    from booktools.grade_submission import Outcome

    class NoServer:  # nothing is checked here: no verifier's server to start
        def __init__(self, *args):
            pass

        def close(self):
            pass

    def grade_one(sub, specs, mode, timeout, cells=None, verifiers=None):
        if sub.rel == "b.md":
            raise RuntimeError("made to fail")
        sub.outcomes = {s.id: Outcome("correct", "") for s in specs[sub.chapter].checks}
        return sub

    monkeypatch.setattr(grade, "Verifiers", NoServer)
    monkeypatch.setattr(grade, "grade_one", grade_one)
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(tiny(2))
    subs = {s.rel: s for s in grade.grade(tmp_path, echo=lambda *a: None)}
    assert subs["a.md"].run == "ran"
    assert subs["b.md"].run == "not graded: the grader failed on it (RuntimeError: made to fail)"
    assert {o.outcome for o in subs["b.md"].outcomes.values()} == {"crashed"}
    assert score(subs["b.md"], paths_spec())["total"] == 0
    rows = (tmp_path / "graded" / "grades.csv").read_text(encoding="utf-8")
    assert "a.md" in rows and "made to fail" in (tmp_path / "graded" / "grades.md").read_text()


@pytest.mark.parametrize(
    "name, why", [("x" * 300, "File name too long"), ("/proc/graded", "/proc")]
)
def test_an_out_folder_that_cannot_be_made_is_one_line_naming_it(tmp_path, capsys, name, why):
    """``--out`` whose folder cannot be created, where no permission check sees it (a name
    longer than the file system allows; a folder in /proc, which tells root it may write there:
    made, it fails; another user is told it is not writable) is
    refused in one line naming ``--out``, exit 2, before any notebook runs: it was a traceback
    from mkdir."""
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.md").write_text(tiny(1))
    out = tmp_path / name
    try:
        code = grade.main([str(tmp_path / "subs"), "--out", str(out)])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert "Traceback" not in err and "--out" in err and why in err, err
    assert len(err.strip().splitlines()) == 1, err
