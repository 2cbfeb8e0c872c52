"""The grader's outputs for people: one Markdown report per submission, and the grade sheet as a
Markdown table (``grades.md``; the tests write the sample submissions' one to
``_includes/example_grades.md`` for the instructor's guide)."""

from __future__ import annotations

import re
from pathlib import Path

from .grade_export import _num, score

MARK = {
    "correct": "✔",
    "incorrect": "✘",
    "not attempted": "…",
    "crashed": "💥",
    "timed out": "⏱",
    "missing": "∅",
    "edited": "✎",
    "tampered": "⚠",
    "used the reference": "⚠",
}


def report_name(rel: str, taken: set) -> str:
    """A report file name for the submission at ``rel``, unique within ``taken`` (updated):
    ``alice/paths.ipynb`` -> ``alice__paths.ipynb.md``, so that ``x.md`` and ``x.ipynb`` differ."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", rel.replace("/", "__"))
    name, k = base + ".md", 1
    while name.lower() in taken:
        k += 1
        name = f"{base}-{k}.md"
    taken.add(name.lower())
    return name


def _cell(text: str) -> str:
    return text.replace(
        "\n", " "
    )  # one line: a table row, a list item (``|`` is escaped by the table)


def _table(header, rows) -> list[str]:
    """The book layer's Markdown table (:func:`rankbook.tables.markdown_table`), every column
    left."""
    from rankbook.tables import markdown_table

    return markdown_table(header, rows, align="l" * len(header)).split("\n")


def _points(earned, most) -> str:
    return (
        f"{_num(earned)} of {_num(most)}" if earned is not None else f"not scored (of {_num(most)})"
    )


def write_report(sub, chapter, path: Path) -> None:
    p = score(sub, chapter)
    right = sum(o.outcome == "correct" for o in sub.outcomes.values())
    lines = [
        f"# {sub.rel}",
        "",
        f"- chapter: {sub.chapter or 'not recognised (no check of any chapter found)'}",
        f"- run: {sub.run}",
        f"- points: {_num(p['total'])} of {_num(p['max'])}"
        + (
            f" ({_num(p['to grade'])} of them graded by hand, not scored yet)"
            if p["to grade"]
            else ""
        ),
        f"- checks correct: {right} of {len(sub.outcomes)}",
        "",
    ]
    if sub.outcomes:
        rows = []
        for ex_id, got in sub.outcomes.items():
            label = next((c.label for c in chapter.checks if c.id == ex_id), "")
            hand = (sub.hand_scores or {}).get(label)
            note = f" Scored by hand: {hand[1]}".rstrip() if hand else ""
            rows.append(
                [
                    f"`{ex_id}`",
                    f"{MARK.get(got.outcome, '')} {got.outcome}",
                    _points(*p["checks"][ex_id]),
                    _cell(got.message + note),
                ]
            )
        lines += _table(["check", "outcome", "points", "details"], rows) + [""]
    if p["hand"]:
        kinds = {h.label: h.kind for h in chapter.hand}
        rows = [
            [
                f"`{label}`",
                kinds.get(label, ""),
                _points(*pts),
                _cell((sub.hand_scores or {}).get(label, (0, ""))[1]),
            ]
            for label, pts in p["hand"].items()
        ]
        lines += (
            [
                "Graded by hand (the rubric's points; an explain or prove answer is read by the "
                "instructor):",
                "",
            ]
            + _table(["exercise", "kind", "points", "comment"], rows)
            + [""]
        )
    if getattr(sub, "warnings", None):
        lines += ["Answer cells (the instructor should look):", ""]
        lines += [f"- {w}" for w in sub.warnings] + [""]
    if sub.cell_errors:
        lines += ["Cells that raised an error (the run went on with the next cell):", ""]
        lines += [f"- code cell {i}: `{_cell(e)}`" for i, e in sub.cell_errors[:20]]
        if len(sub.cell_errors) > 20:
            lines.append(f"- ... and {len(sub.cell_errors) - 20} more")
        lines.append("")
    lines.append(
        "Outcomes are the library's checks, run by the grader on the answers taken out of "
        "the notebook after it ran, never what the notebook printed."
    )
    path.write_text("\n".join(lines) + "\n")


def markdown_table(subs, specs: dict, ids: list[str], labels: list[str]) -> str:
    """The grade sheet as a Markdown table: one row a submission, one column a check (its outcome
    and points) or a hand-graded exercise (explain, prove: "graded by hand", with the rubric's
    points), then the total."""
    head = [
        "submission",
        "chapter",
        "run",
        *(f"`{i}`" for i in ids),
        *(f"`{lb}`" for lb in labels),
        "points",
    ]
    rows = []
    for s in subs:
        p = score(s, specs.get(s.chapter))
        cells = []
        for i in ids:
            got, pts = s.outcomes.get(i), p["checks"].get(i)
            cells.append(
                ""
                if not (got and pts)
                else f"scored by hand ({_num(pts[0])}/{_num(pts[1])}); the check: {got.outcome}"
                if i in p["by hand"]
                else f"{got.outcome} ({_num(pts[0])}/{_num(pts[1])})"
            )
        for lb in labels:
            pts = p["hand"].get(lb)
            cells.append(
                ""
                if pts is None
                else f"graded by hand: to score (of {_num(pts[1])})"
                if pts[0] is None
                else f"graded by hand ({_num(pts[0])}/{_num(pts[1])})"
            )
        rows.append(
            [
                f"`{s.rel}`",
                s.chapter or "",
                s.run,
                *cells,
                f"{_num(p['total'])} of {_num(p['max'])}",
            ]
        )
    return "\n".join(_table(head, rows)) + "\n"
