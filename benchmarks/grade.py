#!/usr/bin/env python3
"""Benchmark of the grading command: a class of 30 submissions of one chapter.

The 30 submissions are the sample submissions of ``tests/data/submissions/`` (the paths
chapter's student version: one correct, one with typical mistakes, one untouched, one that
crashes), copied in turn under 30 students' names. They are graded as ``python3 tasks.py grade``
grades them: fast mode, ``--jobs 2`` (each submission runs its notebook in a fresh kernel, then
its answers are checked in a clean process), with the Canvas and Gradescope exports. The wall
time is printed with the machine's core count and its load (``uptime``) before and after: the
time depends on what else runs on the machine.

Run: ``python benchmarks/grade.py`` (``--n 30 --jobs 2 --json FILE``). ``--quick``: one submission,
one job (for the tests, ``tests/test_benchmarks.py``, which check that every submission is graded,
never the time).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from booktools import ROOT, grade

SAMPLES = ROOT / "tests" / "data" / "submissions"


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=30, help="submissions (default 30)")
    ap.add_argument("--jobs", type=int, default=2, help="submissions graded at a time (default 2)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    ap.add_argument("--quick", action="store_true", help="one submission, one job (for the tests)")
    args = ap.parse_args()
    if args.quick:
        args.n, args.jobs = 1, 1
    if args.n < 1 or args.jobs < 1:
        ap.error(f"--n and --jobs must be >= 1, got {args.n} and {args.jobs}")
    samples = sorted(SAMPLES.glob("*.md"))
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        for k in range(args.n):
            shutil.copy(samples[k % len(samples)], subs / f"student{k:02d}_paths.md")
        before = uptime()
        start = time.monotonic()
        graded = grade.grade(
            subs,
            Path(tmp) / "graded",
            jobs=args.jobs,
            mode="fast",
            echo=lambda *a: None,
            formats=["canvas", "gradescope"],
        )
        seconds = time.monotonic() - start
        after = uptime()
    runs = {}
    for s in graded:
        runs[s.run] = runs.get(s.run, 0) + 1
    figures = {
        "submissions": args.n,
        "jobs": args.jobs,
        "seconds": round(seconds, 1),
        "seconds_per_submission": round(seconds / args.n, 2),
        "runs": runs,
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "uptime_before": before,
        "uptime_after": after,
        "date": time.strftime("%Y-%m-%d"),
    }
    print(
        f"graded {args.n} submissions of the paths chapter (fast mode, --jobs {args.jobs}) in "
        f"{seconds:.0f} s ({seconds / args.n:.1f} s a submission) on {os.cpu_count()} cores"
    )
    print(f"how they ran: {runs}")
    if sum(runs.values()) != args.n:
        raise SystemExit(f"graded {sum(runs.values())} of {args.n} submissions")
    print(f"before: {before}\nafter:  {after}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
