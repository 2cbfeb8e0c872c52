"""Grade a folder of submitted student notebooks: ``python3 tasks.py grade SUBMISSIONS_DIR``.

    python -m booktools.grade SUBMISSIONS_DIR [--out DIR] [--timeout SECONDS] [--jobs N]
        [--mode fast|full] [--format csv|canvas|gradescope ...] [--student-pattern REGEX]
        [--assignment CHAPTER=HEADER ...]
    python -m booktools.grade [SUBMISSIONS_DIR] [--out DIR] --merge HAND_SCORES.csv [...]

Every ``.ipynb`` and MyST ``.md`` notebook under ``SUBMISSIONS_DIR`` is one submission, except
in ``--out``, in hidden folders and in any folder an earlier grading wrote (it holds
``grades.json``): grading ``subs`` twice grades the same submissions. Its chapter is the one
whose check ids it mentions most. Each submission runs in its own processes
(``booktools.grade_run``), from its own empty temporary working directory, in ``--mode``
(default ``fast``: the checks do not depend on the mode), with ``--timeout`` seconds for the
notebook and as many again for checking its answers; at most ``--jobs`` run at a time. Written to
``--out`` (default ``SUBMISSIONS_DIR/graded/``; a file there is refused before anything runs):
``grades.csv`` and ``grades.md`` (``grade_export``), a Markdown report per submission
(``grade_report``), the hand-grading sheets in ``hand/`` (``grade_hand``), ``canvas.csv`` and
``gradescope/`` when ``--format`` asks, and ``grades.json``, from which ``--merge`` rewrites them
all with the hand scores of filled-in sheets, without running anything again.

A check's outcome is one of ``OUTCOMES``. The grader compares each check cell with the chapter's
own (as Python syntax: spacing, comments and a trailing ``;`` do not matter): a check cell that
was changed is *edited* (scored 0; the report says what the answer itself would get), one that
is gone is *missing*. The verdict comes from the book's check run by the grader in a clean
process on the answer taken out of the notebook (``grade_run``, ``grade_pack``), never from what
the notebook printed. An answer that calls the library function its check compares against is
*used the reference* (``grade_trace``). Points: a check's ``points`` (the registry; default 1)
times its credit (1 or 0; the share of cases passed for a ``partial`` check) for *correct*,
*incorrect* and *crashed*; 0 for the other outcomes.

Threat model. Handled: anything the notebook does to its own kernel (replacing
``book.checks.check``, an exercise's reference, the registry, a library function, ``torch``'s
comparisons; printing fake verdicts; editing or deleting check cells, alias imports included;
``sys.exit``, ``os._exit`` (even with status 0), a dead kernel, an endless loop, a cell that
raises); an answer that tampers with the checks while being checked (*tampered*), turns off
the call tracing (*tampered*), hands in or calls the checks' own reference or reaches into
``book.checks`` (*used the reference*), calls the library's function of the reference's role
(*used the reference*), mutates its inputs (it gets copies), or is an object with a doctored
``__eq__`` (values are reduced to plain numbers and strings first). Not handled: the student's code
runs with the grader's rights (files, network, other processes); an answer that deliberately forges
the verifier's output from inside it; a value computed with the library elsewhere and typed in; a
process that escapes its process group (``setsid``) survives the time-out. **Grade untrusted work in
a container** with no network, the submissions mounted read-only and the output folder writable; the
image is the repository with its requirements installed (``instructors.md`` gives the Dockerfile)::

    docker build -t rankcollapse-grade -f - . <<'END'
    FROM python:3.11-slim
    COPY . /book
    WORKDIR /book
    RUN PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu python3 tasks.py install
    END
    docker run --rm --network none --cpus 2 --memory 4g --user "$(id -u):$(id -g)" -e HOME=/tmp \\
        -v "$PWD/subs":/subs:ro -v "$PWD/graded":/graded \\
        rankcollapse-grade python3 -m booktools.grade /subs --out /graded

(``podman`` takes the same commands.) Untested: no container runs on the machines this book is
built on (podman installs, but its runtime may not set resource limits there, and no base image
can be pulled).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import grade_export as export
from .grade_hand import read_scores, write_sheets
from .grade_plan import OUTPUT_MARK, chapter_specs, find_submissions, identify, plan  # noqa: F401
from .grade_report import markdown_table, report_name, write_report
from .grade_server import Verifiers
from .grade_submission import (  # noqa: F401
    Outcome,
    Submission,
    child_env,
    failed,
    grade_one,
    prepare,
)

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
    not writable; a file where ``gradescope/`` goes. A folder inside the submissions is fine
    (the default, ``SUBMISSIONS_DIR/graded``): what it holds is never graded."""
    out = Path(out)
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
    out.mkdir(parents=True, exist_ok=True)
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
        subs = [_from_state(r) for r in state["submissions"]]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(
            f"{str(out / OUTPUT_MARK)!r} is not a grading's record ({type(err).__name__}): "
            "grade the submissions again"
        ) from None
    specs = chapter_specs()
    _, formats, named = _options(
        out,
        [*state.get("formats", []), *formats],
        subs[0].pattern if subs else None,
        [f"{k}={v}" for k, v in state.get("assignments", {}).items()] + list(assignments),
        specs,
    )
    for rel, scores in read_scores(files, subs, specs).items():
        next(s for s in subs if s.rel == rel).hand_scores.update(scores)
    write_outputs(subs, specs, out, formats, named, echo)
    return subs


def _from_state(r: dict) -> Submission:
    return Submission(
        Path(r["path"]),
        r["rel"],
        r["chapter"],
        r["run"],
        {k: Outcome(*v) for k, v in r["outcomes"].items()},
        [tuple(e) for e in r["cell_errors"]],
        r["seconds"],
        r["hand"],
        r["values"],
        {k: tuple(v) for k, v in r["hand_scores"].items()},
        r.get("pattern"),
    )


def write_outputs(
    subs, specs: dict, out: Path, formats=("csv",), assignments=None, echo=print
) -> None:
    """Every output written to a private folder inside ``out``, then moved into place: a
    submission that put something where an output goes (a folder named ``grades.csv``) has it
    moved aside (``NAME.in-the-way``), not the run crash after the grading."""
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))
    try:
        _write_outputs(subs, specs, stage, formats, assignments, echo, out)
        for moved in _publish(stage, out):
            echo(f"warning: {moved} was in the way of the grades: renamed {moved}.in-the-way")
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _publish(stage: Path, out: Path) -> list[str]:
    aside = []
    for path in sorted(stage.rglob("*")):
        target = out / path.relative_to(stage)
        if target.is_dir() and not target.is_symlink() and not path.is_dir():
            target.rename(target.with_name(target.name + ".in-the-way"))
            aside.append(str(target))
        elif path.is_dir() and target.exists() and (target.is_symlink() or not target.is_dir()):
            target.rename(target.with_name(target.name + ".in-the-way"))
            aside.append(str(target))
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            os.replace(path, target)
    return aside


def _write_outputs(subs, specs: dict, out: Path, formats, assignments, echo, final) -> None:
    taken, reports = set(), {}
    for s in subs:
        reports[s.rel] = report_name(s.rel, taken)
        write_report(s, specs.get(s.chapter), out / reports[s.rel])
    export.write_csv(subs, specs, out / "grades.csv", reports)
    (out / "grades.md").write_text(markdown_table(subs, specs, *export.columns(subs, specs)))
    sheets = write_sheets(subs, specs, out, lambda s: export.student_of(s.rel, s.pattern), final)
    written = [
        "grades.csv",
        f"{len(subs)} reports",
        f"{len(sheets) // 2} hand-grading sheets in hand/",
    ]
    if "canvas" in formats:
        for warning in export.write_canvas(subs, specs, out / "canvas.csv", assignments):
            echo(f"warning: {warning}")
        written.append("canvas.csv")
    if "gradescope" in formats:
        export.write_gradescope(subs, specs, out, reports)
        written.append("gradescope/")
    state = {
        "version": 1,
        "formats": list(formats),
        "assignments": assignments or {},
        "submissions": [
            {
                "path": str(s.path),
                "rel": s.rel,
                "chapter": s.chapter,
                "run": s.run,
                "outcomes": {k: list(v) for k, v in s.outcomes.items()},
                "cell_errors": s.cell_errors,
                "seconds": s.seconds,
                "hand": s.hand,
                "values": s.values,
                "hand_scores": s.hand_scores,
                "pattern": s.pattern,
            }
            for s in subs
        ],
    }
    (out / OUTPUT_MARK).write_text(json.dumps(state, indent=1))
    unscored = sum(
        1
        for s in subs
        for _, pts in export.score(s, specs.get(s.chapter))["hand"].items()
        if pts[0] is None
    )
    echo(
        f"wrote to {final}: {', '.join(written)}"
        + (
            f"; {unscored} answers to grade by hand count 0 until merged (--merge)"
            if unscored
            else ""
        )
    )


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
