"""Points, totals and the files a gradebook takes.

- ``grades.csv``: one row a submission: the student, the chapter, how the notebook ran, per check
  its outcome and its points, per hand-graded exercise its points, then the total, the maximum,
  the number of checks correct and the report's file name.
- ``canvas.csv`` (``--format canvas``): Canvas's gradebook import: the columns ``Student``,
  ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per assignment (one per
  chapter graded; header ``Name`` for a new assignment, ``Name (id)`` for an existing one:
  ``--assignment paths="Homework 1 (123456)"``), a ``Points Possible`` row first, then one row
  per student with the chapter's total (the best of a student's submissions of one chapter).
- ``gradescope/<report>.json`` (``--format gradescope``): Gradescope's autograder
  ``results.json`` per submission: the total as ``score``, and one test per check and per
  hand-graded exercise once scored (``name``, ``score``, ``max_score``, ``output``,
  ``visibility``; the ones not scored yet are named in ``output``); with a
  single submission also ``results.json``, which the autograder's ``run_autograder`` script
  (:func:`gradescope_autograder`) copies to where Gradescope reads it.

**The student** of a submission comes from its path under SUBMISSIONS_DIR (:func:`student_of`):
``--student-pattern`` is a regular expression with named groups among ``name``, ``id`` (Canvas's
user ID), ``sis_user_id``, ``sis_login_id`` and ``section``, searched in the path; by default a
Canvas download's file name (``doejane_123456_7890123_paths.ipynb`` or
``doejane_late_123456_...``: the name and the Canvas user ID; check a few names of your own
download), or else the first folder (``alice/paths.ipynb``), or else the file name up to its first
``_`` or ``.`` (``alice_paths.ipynb``, ``alice.ipynb``), as the SIS Login ID.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from .grade_submission import SCORED

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
FIELDS = {
    "name": "Student",
    "id": "ID",
    "sis_user_id": "SIS User ID",
    "sis_login_id": "SIS Login ID",
    "section": "Section",
}
CANVAS_DOWNLOAD = r"(?:^|/)(?P<name>[A-Za-z-]+)_(?:late_|LATE_)?(?P<id>\d+)_\d+_[^/]*$"
FORMATS = ("csv", "canvas", "gradescope")


def _num(x: float) -> str:
    """A number as a gradebook cell: ``2``, ``0.75``."""
    return f"{x:.4g}" if x != int(x) else str(int(x))


def check_pattern(pattern: str | None) -> re.Pattern:
    try:
        compiled = re.compile(pattern if pattern is not None else CANVAS_DOWNLOAD)
    except re.error as err:
        raise ValueError(f"--student-pattern is not a regular expression: {err}") from None
    unknown = set(compiled.groupindex) - set(FIELDS)
    if unknown:
        raise ValueError(
            f"--student-pattern has groups {sorted(unknown)}; allowed: {sorted(FIELDS)}"
        )
    return compiled


def student_of(rel: str, pattern: str | None = None) -> dict:
    """``{"Student": ..., "ID": ..., "SIS User ID": ..., "SIS Login ID": ..., "Section": ...}``
    for the submission at ``rel`` (the module docstring says how)."""
    row = dict.fromkeys(CANVAS_COLUMNS, "")
    m = check_pattern(pattern).search(rel)
    if m:
        row.update({FIELDS[k]: v for k, v in m.groupdict().items() if v})
    elif pattern is None:
        parts = rel.split("/")
        row["SIS Login ID"] = parts[0] if len(parts) > 1 else re.split(r"[_.]", parts[0])[0]
    row["Student"] = row["Student"] or row["SIS Login ID"] or row["SIS User ID"] or row["ID"] or rel
    return row


def score(sub, chapter) -> dict:
    """The points of one submission: ``{"checks": {id: (earned, max)}, "hand": {label: (earned
    or None, max)}, "by hand": the ids of the checks a hand score replaced, "total": float,
    "max": float, "to grade": the points of the hand-graded exercises not scored yet}``. A hand
    score for a predict question (its label) replaces the check's points; hand scores not given
    count 0 in the total."""
    if chapter is None:
        return {
            "checks": {},
            "hand": {},
            "by hand": set(),
            "total": 0.0,
            "max": 0.0,
            "to grade": 0.0,
        }
    hand = getattr(sub, "hand_scores", {}) or {}
    checks, replaced = {}, set()
    for c in chapter.checks:
        got = sub.outcomes.get(c.id)
        earned = c.points * got.credit if got is not None and got.outcome in SCORED else 0.0
        if c.label in hand:
            earned = hand[c.label][0]
            replaced.add(c.id)
        checks[c.id] = (earned, c.points)
    by_hand = {
        h.label: (hand[h.label][0] if h.label in hand else None, h.points)
        for h in chapter.hand
        if h.check is None
    }
    total = sum(e for e, _ in checks.values()) + sum(e or 0.0 for e, _ in by_hand.values())
    later = sum(m for e, m in by_hand.values() if e is None)
    return {
        "checks": checks,
        "hand": by_hand,
        "by hand": replaced,
        "total": total,
        "max": chapter.max_points,
        "to grade": later,
    }


def columns(subs, specs: dict) -> tuple[list, list]:
    """The check ids and the hand-graded labels of the chapters found, in book order."""
    found = {s.chapter for s in subs}
    chapters = [spec for name, spec in specs.items() if name in found]
    return (
        [c.id for ch in chapters for c in ch.checks],
        [h.label for ch in chapters for h in ch.hand if h.check is None],
    )


def write_csv(subs, specs: dict, path: Path, reports: dict) -> None:
    ids, labels = columns(subs, specs)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "submission",
                "student",
                "chapter",
                "run",
                *[x for i in ids for x in (i, f"{i} points")],
                *(f"{lb} points" for lb in labels),
                "points",
                "max points",
                "correct",
                "out of",
                "report",
            ]
        )
        for s in subs:
            p = score(s, specs.get(s.chapter))
            cells = []
            for i in ids:
                got, pts = s.outcomes.get(i), p["checks"].get(i)
                cells += [got.outcome if got else "", _num(pts[0]) if pts else ""]
            hand = [
                ("" if p["hand"].get(lb, (None,))[0] is None else _num(p["hand"][lb][0]))
                for lb in labels
            ]
            right = sum(o.outcome == "correct" for o in s.outcomes.values())
            w.writerow(
                [
                    s.rel,
                    student_of(s.rel, s.pattern)["Student"],
                    s.chapter or "",
                    s.run,
                    *cells,
                    *hand,
                    _num(p["total"]),
                    _num(p["max"]),
                    right,
                    len(s.outcomes),
                    reports[s.rel],
                ]
            )


def write_canvas(subs, specs: dict, path: Path, assignments: dict | None = None) -> list[str]:
    """Canvas's gradebook import CSV; returns warnings (a student with two submissions of a
    chapter)."""
    chapters = [name for name in specs if any(s.chapter == name for s in subs)]
    headers = {ch: (assignments or {}).get(ch) or specs[ch].title for ch in chapters}
    rows, warnings = {}, []
    for s in subs:
        if s.chapter is None:
            continue
        who = student_of(s.rel, s.pattern)
        key = tuple(who[c] for c in CANVAS_COLUMNS)
        row = rows.setdefault(key, {})
        total = score(s, specs[s.chapter])["total"]
        if s.chapter in row:
            warnings.append(
                f"{who['Student']} has two submissions of {s.chapter}: the higher total goes to "
                "Canvas"
            )
        row[s.chapter] = max(total, row.get(s.chapter, total))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CANVAS_COLUMNS + [headers[ch] for ch in chapters])
        w.writerow(
            ["Points Possible", "", "", "", ""] + [_num(specs[ch].max_points) for ch in chapters]
        )
        for key, row in sorted(rows.items()):
            w.writerow(list(key) + [_num(row[ch]) if ch in row else "" for ch in chapters])
    return warnings


def gradescope_results(sub, chapter) -> dict:
    """Gradescope's ``results.json`` for one submission."""
    p = score(sub, chapter)
    tests = []
    for c in chapter.checks if chapter else []:
        got = sub.outcomes.get(c.id)
        earned, most = p["checks"][c.id]
        said = (
            f"{got.outcome}. {got.message}" if got and got.message else got.outcome if got else ""
        )
        if c.id in p["by hand"]:  # a prediction scored by hand: its points replace the check's
            tests.append(
                {
                    "name": c.id,
                    "score": earned,
                    "max_score": most,
                    "status": "passed" if earned >= most else "failed",
                    "output": f"Scored by hand: {_num(earned)} of {_num(most)}. The check said: "
                    f"{said}",
                    "visibility": "visible",
                }
            )
            continue
        tests.append(
            {
                "name": c.id,
                "score": earned,
                "max_score": most,
                "status": "passed" if got is not None and got.outcome == "correct" else "failed",
                "output": said,
                "visibility": "visible",
            }
        )
    later = []
    for h in chapter.hand if chapter else []:
        if h.check is None:
            earned = p["hand"][h.label][0]
            if earned is None:
                later.append(f"{h.label} ({h.kind}, {_num(h.points)} points)")
                continue
            comment = sub.hand_scores[h.label][1]
            tests.append(
                {
                    "name": f"{h.label} (graded by hand)",
                    "score": earned,
                    "max_score": h.points,
                    "output": f"Scored by hand. {comment}".strip(),
                    "visibility": "visible",
                }
            )
    output = f"{sub.rel}: {sub.chapter or 'chapter not recognised'}; the notebook {sub.run}."
    if later:
        output += " Graded by hand, not here: " + ", ".join(later) + "."
    return {"score": p["total"], "output": output, "visibility": "visible", "tests": tests}


def write_gradescope(subs, specs: dict, out: Path, reports: dict) -> None:
    folder = out / "gradescope"
    folder.mkdir(parents=True, exist_ok=True)
    for s in subs:
        data = json.dumps(gradescope_results(s, specs.get(s.chapter)), indent=1)
        (folder / (reports[s.rel].removesuffix(".md") + ".json")).write_text(data)
        if len(subs) == 1:
            (out / "results.json").write_text(data)


RUN_AUTOGRADER = '''#!/usr/bin/env python3
"""Gradescope runs this for each submission: grade the notebook in /autograder/submission with
the book's grader and put its results.json where Gradescope reads it (written by
`python3 -m booktools.grade_export gradescope-autograder`)."""
import json, os, shutil, subprocess, sys
from pathlib import Path

root = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
out = Path(os.environ.get("GRADE_OUT", "/tmp/graded"))
results = root / "results" / "results.json"
results.parent.mkdir(parents=True, exist_ok=True)
shutil.rmtree(out, ignore_errors=True)
run = subprocess.run([sys.executable, "-m", "booktools.grade", str(root / "submission"), "--out", str(out),
                      "--format", "gradescope", "--jobs", "1", "--timeout", "{timeout}"],
                     capture_output=True, text=True)
print(run.stdout, run.stderr)
if (out / "results.json").exists():
    shutil.copy(out / "results.json", results)
else:
    why = (run.stderr.strip().splitlines() or ["no result"])[-1]
    results.write_text(json.dumps({{"score": 0.0, "output": "Not graded: " + why + " (upload one notebook)."}}))
'''  # noqa: E501

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image: install the book's library
# and tools from the copy of the repository in this zip (the repository's own install step).
set -euo pipefail
apt-get install -y python3 python3-pip python3-venv
cd /autograder/source
python3 -m venv /autograder/venv
/autograder/venv/bin/python tasks.py install
"""


def gradescope_autograder(dest: Path, timeout: float = 600) -> list[Path]:
    """``setup.sh`` and ``run_autograder`` for a Gradescope programming assignment, in ``dest``."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    run = dest / "run_autograder"
    run.write_text(
        RUN_AUTOGRADER.replace("#!/usr/bin/env python3", "#!/autograder/venv/bin/python", 1).format(
            timeout=f"{timeout:g}"
        )
    )
    setup = dest / "setup.sh"
    setup.write_text(SETUP_SH)
    for path in (run, setup):
        path.chmod(0o755)
    return [setup, run]


def main(argv=None) -> int:
    """``python -m booktools.grade_export gradescope-autograder DIR``: exit 2 with one line for a
    bad ``DIR`` (a file, or below one)."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] != ["gradescope-autograder"] or len(argv) != 2:
        print("usage: python -m booktools.grade_export gradescope-autograder DIR", file=sys.stderr)
        return 2
    dest = Path(argv[1])
    above = next((p for p in [dest, *dest.resolve().parents] if p.exists()), None)
    if above is not None and not above.is_dir():
        where = "is a file" if above == dest else f"is below {str(above)!r}, a file"
        print(
            f"gradescope-autograder: error: DIR {str(dest)!r} {where}: give a folder to write "
            "setup.sh and run_autograder to",
            file=sys.stderr,
        )
        return 2
    try:
        written = gradescope_autograder(dest)
    except OSError as err:
        print(
            f"gradescope-autograder: error: DIR {str(dest)!r}: {err.strerror or err}",
            file=sys.stderr,
        )
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
