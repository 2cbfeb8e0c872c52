"""Answers the instructor reads: collected side by side, scored by hand, merged back.

**Where an answer is.** A student answers an explain (or prove) question in the notebook, in a
Markdown cell below the question (or by editing the question's cell, or in a code cell). The
grader compares the submission, cell by cell and line by line (``difflib``), with the chapter's
student version: every line the student added or changed belongs to the last exercise whose
``exercise-start`` comes before it, so an answer written below the question's cell (which, in a
notebook, also holds the chapter's last headings) is found. A predict question's sheet shows the
value the check read and the lines added in its exercise (the prediction, a comment giving a
reason).

**The sheets** (``hand/<label>.md`` and ``hand/<label>.csv`` in the output folder): one per
question, the model answer (the chapter's solution) and the rubric (the check registry's
``Rubric`` for that label, or 1 point with the model answer's "A good answer ..." sentence), then
every submission's answer. The CSV has the columns ``question``, ``submission``, ``student``,
``max points``, ``score``, ``comment``, ``answer``: fill in ``score`` (blank: not scored) and
pass the file back with ``--merge`` (any number of these files; rows of other questions are
read too). A score for an explain question adds to the total; a score for a predict question
replaces the check's points.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from pathlib import Path

SHEET_COLUMNS = ["question", "submission", "student", "max points", "score", "comment", "answer"]
_START = re.compile(r"^(`{3,}|:{3,})\{exercise-start\}\s*$")
_LABEL = re.compile(r"^:label:\s*(ex-[\w-]+)\s*$")


def _lines(cells) -> list[tuple[str, int, str]]:
    """``(cell type, cell number, line)`` of every line of every cell."""
    out = []
    for k, (kind, source) in enumerate(cells):
        out.append((kind, k, f"<<{kind} cell>>"))
        out.extend((kind, k, line) for line in source.split("\n"))
    return out


def _readable_form(cells: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Cells as a notebook handed out in Jupyter's Markdown (:mod:`booktools.readable`) has them,
    its build's numbers left out (:func:`booktools.readable.canonical`)."""
    from . import readable

    refs = readable.book_labels()
    return [
        (kind, readable.canonical(readable.markdown(src, {}, refs) if kind == "markdown" else src))
        for kind, src in cells
    ]


def collect(cells: list[dict], chapter) -> dict[str, str]:
    """``{label: text}``: what the submission added in each exercise (module docstring). A
    notebook handed out in Jupyter's Markdown (``booktools.student --ipynb``) is compared with the
    chapter in that form, each exercise found by the label it keeps."""
    from .readable import EXERCISE_MARK, canonical

    theirs = [(c.get("type", "code"), c["source"]) for c in cells]
    ours = chapter.student_cells
    if any(EXERCISE_MARK.match(line) for _, src in theirs for line in src.split("\n")):
        theirs = [(k, canonical(src) if k == "markdown" else src) for k, src in theirs]
        ours = _readable_form(ours)
    theirs, ours = _lines(theirs), _lines(ours)
    matcher = difflib.SequenceMatcher(
        None, [x[2] for x in ours], [x[2] for x in theirs], autojunk=False
    )
    added = set()
    for op, _, _, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            added.update(range(j1, j2))
    found: dict[str, list] = {}
    label, opened = None, False
    for j, (kind, cell, line) in enumerate(theirs):
        if opened and _LABEL.match(line):
            label = _LABEL.match(line).group(1)
        if EXERCISE_MARK.match(line):
            label = EXERCISE_MARK.match(line)["label"]
        opened = bool(_START.match(line))
        if j in added and label is not None and not line.startswith("<<"):
            found.setdefault(label, []).append((kind, cell, line))
    return {lb: _text(parts) for lb, parts in found.items() if _text(parts)}


def _text(parts) -> str:
    blocks, last = [], None
    for kind, cell, line in parts:
        if (kind, cell) != last:
            blocks.append([kind, []])
            last = (kind, cell)
        blocks[-1][1].append(line)
    out = []
    for kind, lines in blocks:
        body = "\n".join(lines).strip("\n")
        if body.strip():
            out.append(f"```python\n{body}\n```" if kind == "code" else body.strip())
    return "\n\n".join(out)


def _answer(sub, h) -> str:
    text = sub.hand.get(h.label, "")
    if h.check is None:
        return text
    got = sub.outcomes.get(h.check)
    value = sub.values.get(h.check, "none recorded")
    head = f"prediction: {value!r} (the check: {got.outcome if got else 'no outcome'})"
    return head + ("\n\n" + text if text else "")


def _plural(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def _cell(text: str) -> str:
    """``text`` in one table cell: lines joined by ``<br>``, code lines as inline code."""
    lines, code = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            code = not code
        elif code:
            lines.append(f"`{line}`" if line.strip() else "")
        else:
            lines.append(line)
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "<br>".join(lines).replace("|", "\\|") or "*(no answer)*"


def _model(text: str) -> str:
    """The chapter's solution, its executable cells shown as Python code."""
    return re.sub(r"^(`{3,})\{code-cell\}[^\n]*$", r"\1python", text, flags=re.M)


def write_sheets(subs, specs: dict, out: Path, student_of, shown: Path | None = None) -> list[Path]:
    """One Markdown and one CSV sheet per question of the chapters graded (``shown``: the output
    folder the sheets name, when ``out`` is where they are written first)."""
    folder = out / "hand"
    named = Path(shown if shown is not None else out) / "hand"
    written = []
    for name, chapter in specs.items():
        mine = [s for s in subs if s.chapter == name]
        for h in chapter.hand if mine else []:
            folder.mkdir(parents=True, exist_ok=True)
            rows = [
                [h.label, s.rel, student_of(s)["Student"], f"{h.points:g}", "", "", _answer(s, h)]
                for s in mine
            ]
            with open(folder / f"{h.label}.csv", "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(SHEET_COLUMNS)
                w.writerows(rows)
            rubric = "\n".join(f"- **{_plural(p)}**: {c}" for p, c in h.criteria)
            lines = [
                f"# `{h.label}`: {h.title} ({_plural(h.points)})",
                "",
                f"Chapter `{name}`, {'an' if h.kind[0] in 'aeiou' else 'a'} {h.kind} question. "
                f"Fill in the `score` column of `{h.label}.csv` and run `python3 tasks.py grade "
                f"--merge {named / (h.label + '.csv')}`.",
                "",
                "## Rubric",
                "",
                rubric,
                "",
            ]
            if h.wrong_turns:
                lines += ["Common wrong turns:", ""] + [f"- {w}" for w in h.wrong_turns] + [""]
            lines += [
                "## Model answer",
                "",
                _model(h.model) or "*(the chapter gives none)*",
                "",
                "## Answers",
                "",
                "| submission | student | answer | score |",
                "|:--|:--|:--|:--|",
            ]
            lines += [f"| `{r[1]}` | {_cell(r[2])} | {_cell(r[6])} | ___ of {r[3]} |" for r in rows]
            (folder / f"{h.label}.md").write_text("\n".join(lines) + "\n")
            written += [folder / f"{h.label}.md", folder / f"{h.label}.csv"]
    return written


def read_scores(paths, subs, specs: dict) -> dict[str, dict[str, tuple]]:
    """``{submission: {label: (score, comment)}}`` from filled-in sheets; a clear error for a row
    that names an unknown question or submission, or a score that is not a number in [0, max]."""
    by_rel = {s.rel: s for s in subs}
    points = {h.label: (h.points, name) for name, ch in specs.items() for h in ch.hand}
    out: dict[str, dict] = {}
    for path in map(Path, paths):
        for n, row in sheet_rows(path):
            label, rel, raw = (
                row["question"].strip(),
                row["submission"].strip(),
                (row["score"] or "").strip(),
            )
            if not raw:
                continue
            where = f"--merge {path.name}, line {n}"
            if label not in points:
                raise ValueError(f"{where}: unknown question {label!r}")
            if rel not in by_rel or by_rel[rel].chapter != points[label][1]:
                raise ValueError(
                    f"{where}: no submission {rel!r} of chapter {points[label][1]} was graded"
                )
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"{where}: score {raw!r} is not a number") from None
            if not 0 <= value <= points[label][0]:
                raise ValueError(f"{where}: score {raw} is not between 0 and {points[label][0]:g}")
            out.setdefault(rel, {})[label] = (value, (row.get("comment") or "").strip())
    return out


FIX = (
    "save it again as UTF-8 (Excel: Save As, 'CSV UTF-8 (Comma delimited)'; LibreOffice: Text "
    "CSV, character set 'Unicode (UTF-8)')"
)


def sheet_rows(path: Path):
    """``(line, row)`` of a filled-in sheet: UTF-8 with or without a byte-order mark (Excel's
    'CSV UTF-8'); another encoding, a missing column or a row that does not fit the columns is
    refused naming the sheet and the line."""
    if not path.is_file():
        raise ValueError(f"--merge {str(path)!r} is not a file")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"--merge {path.name}: not UTF-8 (byte 0x{err.object[err.start]:02x} at offset "
            f"{err.start}; Windows-1252?): {FIX}"
        ) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        fields = reader.fieldnames or []
    except csv.Error as err:
        raise ValueError(f"--merge {path.name}, line 1: {err}") from None
    missing = {"question", "submission", "score"} - {f.strip() for f in fields}
    if missing:
        raise ValueError(
            f"--merge {path.name}: no column {sorted(missing)} (a sheet from hand/ has them)"
        )
    reader.fieldnames = [f.strip() for f in fields]
    line = reader.line_num
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise ValueError(f"--merge {path.name}, line {reader.line_num}: {err}") from None
        n, line = line + 1, reader.line_num
        extra = [v for v in row.pop(None, None) or [] if v.strip()]
        short = [k for k in ("question", "submission", "score") if row.get(k) is None]
        if not extra and not short:
            yield n, row
            continue
        if short and not any((v or "").strip() for v in row.values()):
            continue  # an empty row
        got = len([v for v in row.values() if v is not None]) + len(extra)
        raise ValueError(
            f"--merge {path.name}, line {n}: {got} fields where the sheet has {len(fields)} "
            "columns (a note typed in a row of its own? write it in the comment column of a "
            "submission's row; a comma in a cell? the cell must be quoted)"
        )
