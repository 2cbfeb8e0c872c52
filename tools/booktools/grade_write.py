"""The grader's outputs written (``booktools.grade`` calls it after grading, and after a
``--merge``): the grade sheets, the reports, the hand-grading sheets, the exports and
``grades.json``, the record a merge reads back (:func:`from_state`).

Everything is written to a private folder inside ``--out`` first, then moved into place: a
submission that put something where an output goes (a folder named ``grades.csv``) has it
renamed ``NAME.in-the-way``, and the run does not crash after the grading.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from . import grade_export as export
from .grade_hand import write_sheets
from .grade_plan import OUTPUT_MARK
from .grade_report import markdown_table, report_name, write_report
from .grade_submission import Outcome, Submission


def from_state(r: dict) -> Submission:
    """A submission as ``grades.json`` records it."""
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
        list(r.get("warnings", [])),
    )


def write_outputs(
    subs, specs: dict, out: Path, formats=("csv",), assignments=None, echo=print, sheets=None
) -> None:
    """Every output written to a private folder inside ``out``, then moved into place: a
    submission that put something where an output goes (a folder named ``grades.csv``) has it
    moved aside (``NAME.in-the-way``), not the run crash after the grading. ``sheets``: the
    questions whose hand-grading sheets are written (``None``: all; a merge rewrites only the
    sheets it merged, so scores typed into another sheet and not merged yet stay)."""
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))
    try:
        _write_outputs(subs, specs, stage, formats, assignments, echo, out, sheets)
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


def _write_outputs(
    subs, specs: dict, out: Path, formats, assignments, echo, final, only=None
) -> None:
    taken, reports = set(), {}
    for s in subs:
        reports[s.rel] = report_name(s.rel, taken)
        write_report(s, specs.get(s.chapter), out / reports[s.rel])
    export.write_csv(subs, specs, out / "grades.csv", reports)
    (out / "grades.md").write_text(markdown_table(subs, specs, *export.columns(subs, specs)))
    sheets = write_sheets(
        subs, specs, out, lambda s: export.student_of(s.rel, s.pattern), final, only
    )
    written = [
        "grades.csv",
        f"{len(subs)} reports",
        f"{len(sheets) // 2} hand-grading sheets in hand/"
        + (" (the merged ones, with every score merged so far)" if only is not None else ""),
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
                "warnings": s.warnings,
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
