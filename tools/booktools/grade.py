"""Grade a folder of submitted student notebooks: ``python3 tasks.py grade SUBMISSIONS_DIR``.

    python -m booktools.grade SUBMISSIONS_DIR [--out DIR] [--timeout SECONDS] [--jobs N] [--mode fast|full]

Every ``.ipynb`` and MyST ``.md`` notebook under ``SUBMISSIONS_DIR`` (the output folder and
hidden folders excepted) is one submission. Its chapter is the one whose check ids it mentions
most. Each submission runs in its own process (``booktools.grade_run``), from its own empty
temporary working directory, in ``--mode`` (default ``fast``: the checks do not depend on the
mode), with ``--timeout`` seconds for the notebook and as many again for checking its answers;
at most ``--jobs`` run at a time. Written to ``--out`` (default ``SUBMISSIONS_DIR/graded/``):
``grades.csv`` (one row a submission, one column a check, then the number correct and out of
how many) and a Markdown report per submission.

A check's outcome is one of ``OUTCOMES``. The grader compares each check cell with the chapter's
own (as Python syntax: spacing, comments and a trailing ``;`` do not matter): a check cell that
was changed is *edited* (scored 0; the report says what the answer itself would get), one that
is gone is *missing*. The verdict comes from the library's check run by the grader in a clean
process on the answer taken out of the notebook (``booktools.grade_run``, ``booktools.grade_pack``),
never from what the notebook printed.

Threat model. Handled: anything the notebook does to its own process (replacing
``rc.checks.check``, an exercise's reference, the registry, a library function, ``torch``'s
comparisons; printing fake verdicts; editing or deleting check cells, alias imports included;
``sys.exit``, ``os._exit``, a dead process, an endless loop, a cell that raises); an answer that
tampers with the checks while being checked (*tampered*), hands in the checks' own reference or
reaches into ``rc.checks`` (*tampered*), mutates its inputs (it gets copies), or is an object
with a doctored ``__eq__`` (values are reduced to plain numbers and strings first).
Not handled: the student's code runs with the grader's rights (files, network, other processes:
run the grader in a container or a throw-away account for untrusted work); an answer that
deliberately forges the verifier's output from inside it; a process that escapes its process
group (``setsid``) survives the time-out; an answer that calls the library's public functions
(``rc.paths.path_count``) is *correct*, as it would be for any automatic grader: the report
shows each answer's status, the instructor reads the code.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures as cf
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .grade_report import markdown_table, report_name, write_report

OUTCOMES = ("correct", "incorrect", "not attempted", "crashed", "timed out", "missing", "edited", "tampered")


@dataclass
class CheckSpec:
    id: str
    name: str  # the variable the original check cell passes
    kind: str  # "function" or "value"
    tree: str  # ast.dump of the original check cell


@dataclass
class Submission:
    path: Path
    rel: str
    chapter: str | None = None
    run: str = "ran"  # ran / crashed in cell N / timed out in cell N / unreadable / unknown chapter
    outcomes: dict = field(default_factory=dict)  # id -> (outcome, message)
    cell_errors: list = field(default_factory=list)
    seconds: float = 0.0


def _tree(source: str) -> str | None:
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return ast.dump(ast.parse(TransformerManager().transform_cell(source)))
    except (SyntaxError, ValueError):
        return None


def chapter_specs() -> dict[str, list[CheckSpec]]:
    """Each chapter's check cells, from its student version: ``{"paths": [CheckSpec, ...]}``."""
    import jupytext

    import rankcollapse as rc

    from .student import strip_solutions
    from .toc import toc_notebooks

    specs = {}
    for path in toc_notebooks():
        nb = jupytext.reads(strip_solutions(path.read_text()), fmt="md:myst")
        found = []
        for cell in nb.cells:
            if cell.cell_type != "code" or "checks.check(" not in cell.source:
                continue
            call = next(n for n in ast.walk(ast.parse(cell.source))
                        if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "check")
            ex_id, arg = call.args[0].value, call.args[1]
            kind = "value" if ex_id in rc.checks.QUESTIONS else "function"
            found.append(CheckSpec(ex_id, arg.id, kind, _tree(cell.source)))
        if found:
            specs[path.stem] = found
    return specs


def find_submissions(folder: Path, out: Path) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if (path.suffix not in (".ipynb", ".md") or not path.is_file()
                or any(p.startswith(".") for p in rel.parts) or out in path.parents):
            continue
        found.append(path)
    return found


def read_cells(path: Path) -> list[dict]:
    """The submission's code cells: ``[{"source": str, "tags": [...]}]``."""
    import jupytext
    import nbformat

    nb = nbformat.read(path, as_version=4) if path.suffix == ".ipynb" else jupytext.read(path)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
            cells.append({"source": source, "tags": list(cell.get("metadata", {}).get("tags", []))})
    return cells


def identify(cells: list[dict], specs: dict[str, list[CheckSpec]]) -> str | None:
    text = "\n".join(c["source"] for c in cells)
    counts = {ch: sum(bool(re.search(rf"""["']{re.escape(s.id)}["']""", text)) for s in found)
              for ch, found in specs.items()}
    best = max(counts, key=counts.get, default=None)
    return best if best is not None and counts[best] > 0 else None


def plan(cells: list[dict], specs: list[CheckSpec], mode: str, seed: int = 0):
    """The cells to run (the check cells kept from the chapter are not run: the grader checks)
    and, per check id, ``"edited"``, ``"missing"`` or ``None``."""
    trees = [_tree(c["source"]) for c in cells]
    where, status = {}, {}
    for s in specs:
        mention = re.compile(rf"""["']{re.escape(s.id)}["']""")
        same = [i for i, t in enumerate(trees) if t is not None and t == s.tree]
        mentions = [i for i, c in enumerate(cells) if mention.search(c["source"])]
        if same:
            where[s.id], status[s.id] = same[0], None
        elif mentions:
            where[s.id], status[s.id] = mentions[0], "edited"
        else:
            status[s.id] = "missing"
    unchanged = {i for s in specs for i, t in enumerate(trees) if t is not None and t == s.tree}
    params = f"mode = {mode!r}\nseed = {seed!r}  # injected by the grader"
    out = []
    for i, c in enumerate(cells):
        out.append({"source": "pass" if i in unchanged else c["source"], "origin": i + 1,
                    "capture": [{"id": s.id, "name": s.name, "kind": s.kind}
                                for s in specs if where.get(s.id) == i]})
        if "parameters" in c["tags"]:
            out.append({"source": params, "capture": [], "origin": None})
    if not any("parameters" in c["tags"] for c in cells):
        out.insert(0, {"source": params, "capture": [], "origin": None})
    return out, status


def _child(args: list[str], cwd: Path, timeout: float, log: Path) -> str:
    """Run ``python -m booktools.grade_run ...`` in its own session; "ok", "timed out" or "died (…)"."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANKCOLLAPSE_MODE", "RANKCOLLAPSE_BOOK_BUILD")}
    env.setdefault("MPLBACKEND", "Agg")
    with open(log, "ab") as f:
        proc = subprocess.Popen([sys.executable, "-m", "booktools.grade_run", *args], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the notebook's children go with it
            except ProcessLookupError:
                pass
            proc.wait()
    if code is None:
        return "timed out"
    return "ok" if code == 0 else f"died (exit code {code})"


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def grade_one(sub: Submission, specs: dict, mode: str, timeout: float) -> Submission:
    start = time.monotonic()
    try:
        cells = read_cells(sub.path)
    except Exception as err:  # noqa: BLE001 (not JSON, not a notebook)
        sub.run = f"unreadable ({type(err).__name__})"
        return sub
    sub.chapter = identify(cells, specs)
    if sub.chapter is None:
        sub.run = "unknown chapter"
        return sub
    chapter = specs[sub.chapter]
    to_run, status = plan(cells, chapter, mode)
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        run_dir, work = Path(tmp), Path(tmp) / "work"
        work.mkdir()
        (run_dir / "plan.json").write_text(json.dumps({"cells": to_run}))
        state = _child(["run", str(run_dir)], work, timeout, run_dir / "output.txt")
        log = _jsonl(run_dir / "cells.jsonl")
        origin = [c["origin"] for c in to_run]  # the submission's code cell, counted from 1
        started = [r["cell"] for r in log if r.get("started")]
        finished = {r["cell"]: r["error"] for r in log if "error" in r}
        sub.cell_errors = [(origin[i], e) for i, e in finished.items() if e]
        stuck = next((i for i in started if i not in finished), None)
        if state != "ok":
            where = f" in code cell {origin[stuck]}" if stuck is not None and origin[stuck] else ""
            sub.run = ("timed out" if state == "timed out" else "crashed") + where
        answers = [s.id for s in chapter if (run_dir / "answers" / f"{s.id}.pkl").exists()]
        verdicts = _verify(run_dir, work, answers, timeout)
        for s in chapter:
            if s.id in verdicts:
                outcome, message = verdicts[s.id]
            elif status[s.id] == "missing":
                outcome, message = "missing", "The check cell was deleted."
            else:
                outcome = "timed out" if state == "timed out" else "crashed"
                message = f"The notebook {sub.run} before this check."
            if status[s.id] == "edited":
                message = f"The check cell was edited; the answer itself: {outcome}. {message}".strip()
                outcome = "edited"
            sub.outcomes[s.id] = (outcome, message)
    sub.seconds = time.monotonic() - start
    return sub


LIBRARY_STATUS = {"correct": "correct", "incorrect": "incorrect", "not attempted": "not attempted",
                  "error": "crashed", "crashed": "crashed", "tampered": "tampered"}


def _verify(run_dir: Path, work: Path, ids: list[str], timeout: float) -> dict:
    """``{id: (outcome, message)}`` for the answers left in ``run_dir/answers``."""
    verdicts, todo = {}, list(ids)
    while todo:
        (run_dir / "verdicts.jsonl").unlink(missing_ok=True)  # written by this verifier only
        (run_dir / "verifying").unlink(missing_ok=True)
        state = _child(["verify", str(run_dir), *todo], work, timeout, run_dir / "verify.txt")
        for r in _jsonl(run_dir / "verdicts.jsonl"):
            if r.get("id") in todo and r["id"] not in verdicts:
                verdicts[r["id"]] = (LIBRARY_STATUS.get(r.get("status"), "crashed"), str(r.get("message", "")))
        todo = [i for i in todo if i not in verdicts]
        if not todo:
            break
        busy = (run_dir / "verifying").read_text() if (run_dir / "verifying").exists() else todo[0]
        busy = busy if busy in todo else todo[0]
        if state == "timed out":
            verdicts[busy] = ("timed out", f"Checking the answer took more than {timeout:g} s.")
        elif state == "ok":
            continue  # stopped after a tampered verdict: the rest in a fresh process
        else:
            verdicts[busy] = ("crashed", f"Checking the answer killed the process ({state}).")
        todo = [i for i in todo if i not in verdicts]
    return verdicts


def grade(folder: Path, out: Path | None = None, timeout: float = 600, jobs: int = 2,
          mode: str = "fast", echo=print) -> list[Submission]:
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"SUBMISSIONS_DIR {str(folder)!r} is not a folder" if folder.exists()
                         else f"SUBMISSIONS_DIR {str(folder)!r} does not exist")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if mode not in ("fast", "full"):
        raise ValueError(f"mode must be 'fast' or 'full', got {mode!r}")
    out = Path(out) if out is not None else folder / "graded"
    paths = find_submissions(folder, out.resolve())
    if not paths:
        raise ValueError(f"no .ipynb or .md notebooks in {str(folder)!r}")
    specs = chapter_specs()
    subs = [Submission(p, p.relative_to(folder).as_posix()) for p in paths]
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(grade_one, s, specs, mode, timeout) for s in subs]
        for fut in cf.as_completed(futures):
            s = fut.result()
            right = sum(o == "correct" for o, _ in s.outcomes.values())
            echo(f"graded {s.rel}: {s.chapter or '-'}, {s.run}, {right}/{len(s.outcomes)} correct "
                 f"({s.seconds:.0f} s)")
    write_outputs(subs, specs, out)
    echo(f"wrote {out / 'grades.csv'} and {len(subs)} reports")
    return subs


def columns(subs: list[Submission], specs: dict) -> list[str]:
    """The check ids of the chapters found, in book order."""
    found = {s.chapter for s in subs}
    return [c.id for ch, checks in specs.items() if ch in found for c in checks]


def write_outputs(subs: list[Submission], specs: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ids = columns(subs, specs)
    with open(out / "grades.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["submission", "chapter", "run", *ids, "correct", "out of", "report"])
        taken = set()
        for s in subs:
            name = report_name(s.rel, taken)
            write_report(s, out / name)
            right = sum(o == "correct" for o, _ in s.outcomes.values())
            w.writerow([s.rel, s.chapter or "", s.run, *(s.outcomes.get(i, ("",))[0] for i in ids),
                        right, len(s.outcomes), name])
    (out / "grades.md").write_text(markdown_table(subs, ids))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 tasks.py grade", description=__doc__.split("\n")[0])
    ap.add_argument("submissions", metavar="SUBMISSIONS_DIR")
    ap.add_argument("--out", default=None, help="where to write grades.csv and the reports "
                    "(default SUBMISSIONS_DIR/graded/)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per notebook (default 600)")
    ap.add_argument("--jobs", type=int, default=2, help="submissions run at a time (default 2)")
    ap.add_argument("--mode", default="fast", choices=("fast", "full"))
    args = ap.parse_args(argv)
    try:
        grade(Path(args.submissions), args.out, args.timeout, args.jobs, args.mode)
    except ValueError as err:
        print(f"grade: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
