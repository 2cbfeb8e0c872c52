"""Grade a folder of submitted student notebooks: ``python3 tasks.py grade SUBMISSIONS_DIR``.

    python -m booktools.grade SUBMISSIONS_DIR [--out DIR] [--timeout SECONDS] [--jobs N]
        [--mode fast|full] [--format csv|canvas|gradescope ...] [--student-pattern REGEX]
        [--assignment CHAPTER=HEADER ...]
    python -m booktools.grade [SUBMISSIONS_DIR] [--out DIR] --merge HAND_SCORES.csv [...]

Every ``.ipynb`` and MyST ``.md`` notebook under ``SUBMISSIONS_DIR`` is one submission, except
in ``--out``, in hidden folders and in any folder an earlier grading wrote (it holds
``grades.json``): grading ``subs`` twice grades the same submissions. Its chapter is the one
whose check ids it mentions most. Every submission is read before any runs. Each runs in its
own processes (``booktools.grade_run``), in three private temporary folders of its own (its
working folder, the folder its answers are taken out to, and the grader's state for it, none
inside another or the grader's working folder), in ``--mode`` (default ``fast``: the checks do
not depend on the mode), with ``--timeout`` seconds (finite, at most a day) for the notebook and
as many again for checking its answers; at most ``--jobs`` run at a time. Its answers are checked
in a fork of a verifier server (``grade_server``) that loaded the book's checks before the first
submission ran. Written to ``--out`` (default ``SUBMISSIONS_DIR/graded/``; a file, a path below
a file, the submissions folder itself or an unwritable folder is refused before anything runs):
``grades.csv`` and ``grades.md`` (``grade_export``), a Markdown report per submission
(``grade_report``), the hand-grading sheets in ``hand/`` (``grade_hand``), ``canvas.csv`` and
``gradescope/`` when ``--format`` asks, and ``grades.json``, from which ``--merge`` rewrites them
all with the hand scores of filled-in sheets, without running anything again. A name that is not
UTF-8 (a zip made on Windows) is shown with ``\\xe9``-style escapes.

A check's outcome is one of ``OUTCOMES``. The grader compares each check cell with the chapter's
own (as Python syntax: spacing, comments and a trailing ``;`` do not matter): a check cell that
was changed is *edited* (scored 0; the report says what the answer itself would get), one that
is gone is *missing*. The verdict comes from the book's check run by the grader in a clean
process on the answer taken out of the notebook (``grade_verify``, ``grade_pack``), never from what
the notebook printed. An answer that calls the library function its check compares against is
*used the reference* (``grade_trace``). Points: a check's ``points`` (the registry; default 1)
times its credit (1 or 0; the share of cases passed for a ``partial`` check) for *correct*,
*incorrect* and *crashed*; 0 for the other outcomes.

Threat model (``instructors.md``, "Untrusted work", says the same for instructors). Handled,
with no container: anything the notebook does to its own kernel (replacing ``book.checks.check``,
an exercise's reference, the registry, a library function, ``torch``'s comparisons; printing
fake verdicts; editing or deleting check cells, alias imports included; ``sys.exit``,
``os._exit`` (even with status 0), a dead kernel, an endless loop, a cell that raises); an answer
that tampers with the checks while being checked (*tampered*), turns off the call tracing
(*tampered*), hands in or calls the checks' own reference or reaches into ``book.checks`` (*used
the reference*), calls the library's function of the reference's role (*used the reference*),
mutates its inputs (it gets copies), or is an object with a doctored ``__eq__`` (values are
reduced to plain numbers and strings first). And no one submission spoils the others' grades or
the run: junk written to its output, its working folder or the folder above it, or into the
answers it leaves; a file name that is not UTF-8; a file that is no notebook; editing another
submission's file (all are read first); editing the installed checks on disk (the references are
in memory since the grading began: ``tests/test_grade.py`` grades a class of 30 with 5 such
submissions and the 25 others get the points they get alone); killing the process its answer is
checked in, or that process's parent; something put where an output goes (renamed
``.in-the-way``); the grader failing on it (its row says so, every check *crashed*). Not handled
(a container or a sandbox is needed): the student's code runs with the grader's rights, so it can
read and write your files, use the network and signal your processes; one that searches the
machine for the grader's private folders can change another submission's answers or verdicts
while they are checked, and one that finds and kills the grader or the verifier server ends the
run or its checking (a verifier started again refuses if the checks changed on disk); one that
edits the grader's own files (``tools/booktools/grade_run.py``, ``grade_kernel.py``, which each
later notebook's run loads from disk) changes how the later submissions run; a process
that escapes its process group (``setsid``) survives the time-out; memory and disk are not
limited; data a reference reads lazily (a real model's weights, from the cache) is read from
disk; an answer that forges the verifier's output from inside it; a value computed with the
library elsewhere and typed in. **Grade untrusted work in a container or a sandbox**:
``instructors.md`` gives a Docker recipe (untested here: no container engine runs on the
machines this book is built on) and a bubblewrap one (tested here, as root, with Debian 12's
bwrap 0.8.0: the repository and the home folder read-only to the notebooks, no network, no other
process visible).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import os
import sys
from pathlib import Path

from . import grade_export as export
from .grade_hand import read_scores, sheet_rows
from .grade_plan import OUTPUT_MARK, chapter_specs, find_submissions, identify, plan  # noqa: F401
from .grade_server import Verifiers
from .grade_submission import (  # noqa: F401
    Outcome,
    Submission,
    child_env,
    failed,
    grade_one,
    prepare,
)
from .grade_write import from_state, write_outputs

OUTCOMES = (
    "correct",
    "incorrect",
    "not attempted",
    "crashed",
    "timed out",
    "missing",
    "edited",
    "tampered",
    "used the reference",
)
# ----------------------------------------------------------------------------- the command


MAX_TIMEOUT = 86400.0  # seconds: a day per notebook is more than any chapter needs


def check_timeout(timeout) -> float:
    """``--timeout``: a finite number of seconds above 0 (``inf`` would never stop a notebook,
    and the kernel's clock cannot count it)."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT)
    ):
        raise ValueError(
            f"--timeout must be a positive, finite number of seconds (at most {MAX_TIMEOUT:g}), "
            f"got {timeout!r}"
        )
    return float(timeout)


def check_out(out: Path, folder: Path | None = None, formats=()) -> Path:
    """``--out``, refused before any work: a file, or below one; the submissions folder itself;
    not writable; a file where ``gradescope/`` goes; a name the system refuses (too long). A
    folder inside the submissions is fine (the default, ``SUBMISSIONS_DIR/graded``): what it
    holds is never graded."""
    out = Path(out)
    try:
        out.exists()
    except OSError as err:  # not 'does not exist', which exists() answers: a name too long
        raise ValueError(f"--out {str(out)!r}: {err.strerror}") from None
    if out.exists() and not out.is_dir():
        raise ValueError(
            f"--out {str(out)!r} is a file, not a folder: give a folder to write the grades to"
        )
    resolved = out.resolve()
    above = next((p for p in resolved.parents if p.exists()), None)
    if not out.exists() and above is not None and not above.is_dir():
        raise ValueError(
            f"--out {str(out)!r} is below {str(above)!r}, a file: give a folder to write the "
            "grades to"
        )
    if folder is not None and resolved == Path(folder).resolve():
        raise ValueError(
            f"--out {str(out)!r} is the submissions folder itself: give a folder of its own "
            "(the default is SUBMISSIONS_DIR/graded)"
        )
    nearest = resolved if out.exists() else above
    if nearest is not None and not os.access(nearest, os.W_OK | os.X_OK):
        raise ValueError(f"--out {str(out)!r}: {str(nearest)!r} is not writable")
    if "gradescope" in formats and (resolved / "gradescope").exists():
        if not (resolved / "gradescope").is_dir():
            raise ValueError(
                f"--out {str(out)!r} holds a file named gradescope, where --format gradescope "
                "writes its folder: move it, or give another --out"
            )
    return out


def _options(out, formats, pattern, assignments, specs=None, folder=None):
    formats = sorted(
        {"csv", *(f.strip() for spec in formats or () for f in spec.split(",") if f.strip())}
    )
    bad = [f for f in formats if f not in export.FORMATS]
    if bad:
        raise ValueError(f"--format {bad[0]!r} is not one of {', '.join(export.FORMATS)}")
    out = check_out(out, folder, formats)
    export.check_pattern(pattern)
    parsed = {}
    for item in assignments or ():
        chapter, sep, header = item.partition("=")
        if not sep or not header.strip():
            raise ValueError(
                f'--assignment {item!r}: write CHAPTER=HEADER, e.g. paths="Homework 1 (123456)"'
            )
        if specs is not None and chapter not in specs:
            raise ValueError(
                f"--assignment {item!r}: no chapter {chapter!r}; chapters: {', '.join(specs)}"
            )
        parsed[chapter] = header.strip()
    return out, formats, parsed


def shown(rel: str) -> str:
    """A path as the grades show it: a byte that is not UTF-8 (a zip made on Windows) written as
    ``\\xe9``, so that every name can be printed, written and told apart."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def grade(
    folder: Path,
    out: Path | None = None,
    timeout: float = 600,
    jobs: int = 2,
    mode: str = "fast",
    echo=print,
    formats=("csv",),
    student_pattern: str | None = None,
    assignments=(),
) -> list[Submission]:
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(
            f"SUBMISSIONS_DIR {str(folder)!r} is not a folder"
            if folder.exists()
            else f"SUBMISSIONS_DIR {str(folder)!r} does not exist"
        )
    timeout = check_timeout(timeout)
    if isinstance(jobs, bool) or not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if mode not in ("fast", "full"):
        raise ValueError(f"mode must be 'fast' or 'full', got {mode!r}")
    out, formats, _ = _options(
        out if out is not None else folder / "graded", formats, student_pattern, (), None, folder
    )
    paths = find_submissions(folder, out)
    if not paths:
        raise ValueError(f"no .ipynb or .md notebooks in {str(folder)!r}")
    specs = chapter_specs()
    _, _, named = _options(out, formats, student_pattern, assignments, specs, folder)
    try:  # before any notebook runs: what no permission check sees (/proc, ...) fails here
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"--out {str(out)!r} cannot be made: {err.strerror}") from None
    base = folder.resolve()
    subs = [
        Submission(p, shown(p.relative_to(base).as_posix()), pattern=student_pattern) for p in paths
    ]
    # every submission read before any runs: what one does to another's file changes nothing
    cells = [prepare(s, specs) for s in subs]
    verifiers = Verifiers(min(jobs, len(subs)), child_env()) if any(cells) else None
    try:
        with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {
                pool.submit(grade_one, s, specs, mode, timeout, c, verifiers): s
                for s, c in zip(subs, cells)
            }
            for fut in cf.as_completed(futures):
                s = futures[fut]
                try:
                    fut.result()
                except Exception as err:  # noqa: BLE001 (the grader's failure: this row's only)
                    failed(s, specs, err)
                p = export.score(s, specs.get(s.chapter))
                right = sum(o.outcome == "correct" for o in s.outcomes.values())
                later = f" ({export._num(p['to grade'])} to grade by hand)" if p["to grade"] else ""
                echo(
                    f"graded {s.rel}: {s.chapter or '-'}, {s.run}, {export._num(p['total'])} of "
                    f"{export._num(p['max'])} points{later}, {right}/{len(s.outcomes)} checks "
                    f"correct ({s.seconds:.0f} s)"
                )
    finally:
        if verifiers is not None:
            verifiers.close()
    write_outputs(subs, specs, out, formats, named, echo)
    return subs


def _earlier(folder: Path | None, out: Path | None, files) -> Path:
    """The output folder of the grading to merge into: ``--out``, else ``SUBMISSIONS_DIR/graded``,
    else the folder a sheet came from (``graded/hand/x.csv`` -> ``graded``)."""
    if out is not None or folder is not None:
        return Path(out) if out is not None else Path(folder) / "graded"
    for f in map(Path, files):
        for d in (f.parent.parent, f.parent):
            if (d / OUTPUT_MARK).is_file():
                return d
    raise ValueError(
        "--merge: name the earlier grading with SUBMISSIONS_DIR or --out "
        "(no grades.json beside the sheets)"
    )


def merge(
    folder: Path | None, out: Path | None, files, formats=(), assignments=(), echo=print
) -> list[Submission]:
    """Fold the hand scores of filled-in sheets into an earlier grading's outputs (nothing
    re-runs)."""
    out = _earlier(folder, out, files)
    _options(out, formats, None, ())
    if not (out / OUTPUT_MARK).is_file():
        raise ValueError(
            f"no earlier grading in {str(out)!r} ({OUTPUT_MARK} is missing): "
            f"run `python3 tasks.py grade {folder or 'SUBMISSIONS_DIR'}` first"
        )
    try:
        state = json.loads((out / OUTPUT_MARK).read_text())
        subs = [from_state(r) for r in state["submissions"]]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(
            f"{str(out / OUTPUT_MARK)!r} is not a grading's record ({type(err).__name__}): "
            "grade the submissions again"
        ) from None
    for f in files:  # each sheet's encoding and rows, before the chapters are read
        list(sheet_rows(Path(f)))
    specs = chapter_specs()
    _, formats, named = _options(
        out,
        [*state.get("formats", []), *formats],
        subs[0].pattern if subs else None,
        [f"{k}={v}" for k, v in state.get("assignments", {}).items()] + list(assignments),
        specs,
    )
    scores = read_scores(files, subs, specs, lambda s: export.student_of(s.rel, s.pattern))
    for rel, scored in scores.items():  # every score merged before stays unless re-scored
        next(s for s in subs if s.rel == rel).hand_scores.update(scored)
    merged = {row["question"].strip() for f in files for _, row in sheet_rows(Path(f))}
    write_outputs(subs, specs, out, formats, named, echo, sheets=merged)
    return subs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 tasks.py grade", description=__doc__.split("\n")[0])
    ap.add_argument("submissions", metavar="SUBMISSIONS_DIR", nargs="?", default=None)
    ap.add_argument(
        "--out", default=None, help="where to write the grades (default SUBMISSIONS_DIR/graded/)"
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=600,
        help="seconds per notebook (default 600, at most a day)",
    )
    ap.add_argument("--jobs", type=int, default=2, help="submissions run at a time (default 2)")
    ap.add_argument("--mode", default="fast", choices=("fast", "full"))
    ap.add_argument(
        "--format",
        action="append",
        default=[],
        metavar="csv|canvas|gradescope",
        help="also write canvas.csv or gradescope/ (repeat, or comma-separate)",
    )
    ap.add_argument(
        "--student-pattern",
        default=None,
        metavar="REGEX",
        help="named groups name, id, sis_user_id, sis_login_id, section, searched in each "
        "submission's path (default: a Canvas download's name, the folder, the file name)",
    )
    ap.add_argument(
        "--assignment",
        action="append",
        default=[],
        metavar="CHAPTER=HEADER",
        help='the Canvas column of a chapter, e.g. paths="Homework 1 (123456)"',
    )
    ap.add_argument(
        "--merge",
        action="append",
        default=[],
        metavar="HAND_SCORES.csv",
        help="fold the scores of a filled-in hand-grading sheet into the earlier grading in --out "
        "(repeat it for several sheets: --merge a.csv --merge b.csv)",
    )
    args = ap.parse_args(argv)
    try:
        if args.merge:
            merge(
                args.submissions and Path(args.submissions),
                args.out,
                args.merge,
                args.format,
                args.assignment,
            )
        elif args.submissions is None:
            ap.error("the following arguments are required: SUBMISSIONS_DIR")
        else:
            grade(
                Path(args.submissions),
                args.out,
                args.timeout,
                args.jobs,
                args.mode,
                formats=args.format,
                student_pattern=args.student_pattern,
                assignments=args.assignment,
            )
    except ValueError as err:
        print(f"grade: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
