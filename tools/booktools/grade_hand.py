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
    """``{label: text}``: what the submission added in each exercise (module docstring)."""
    return collect_answers(cells, chapter)[0]


def collect_answers(cells: list[dict], chapter) -> tuple[dict[str, str], list[str]]:
    """``({label: text}, warnings)``: what the submission added in each exercise, and what the
    instructor should know about its answer cells (empty, deleted, duplicated, moved).

    A line added in an answer cell (a cell whose metadata names its exercise, ``answer``) belongs
    to that exercise wherever the cell is; any other added line to the last exercise whose start
    comes before it. A notebook handed out in Jupyter's Markdown (``booktools.student --ipynb``)
    is compared with the chapter in that form, each exercise found by the label it keeps."""
    from .readable import EXERCISE_MARK, canonical

    theirs = [(c.get("type", "code"), c["source"]) for c in cells]
    owners = [c.get("answer") for c in cells]
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
    placed: dict[str, list] = {}  # answer cell's exercise -> the exercise it was found in
    label, opened = None, False
    for j, (kind, cell, line) in enumerate(theirs):
        if opened and _LABEL.match(line):
            label = _LABEL.match(line).group(1)
        if EXERCISE_MARK.match(line):
            label = EXERCISE_MARK.match(line)["label"]
        opened = bool(_START.match(line))
        owner = owners[cell]
        if line.startswith("<<"):
            if owner:
                placed.setdefault(owner, []).append(label)
            continue
        if j in added and (owner or label) is not None:
            found.setdefault(owner or label, []).append((kind, cell, line))
    answers = {lb: _text(parts) for lb, parts in found.items() if _text(parts)}
    return answers, _warnings(answers, placed, getattr(chapter, "answers", []))


def _warnings(answers: dict, placed: dict, expected: list) -> list[str]:
    out = []
    for lb, where in placed.items():
        if lb not in expected:
            out.append(f"an answer cell names {lb}, not a written exercise of this chapter")
            continue
        if len(where) > 1:
            out.append(
                f"{lb}: its answer cell is there {len(where)} times (copied?); their texts are "
                "read together"
            )
        moved = sorted({w or "the chapter's start" for w in where if w != lb})
        if moved:
            out.append(
                f"{lb}: its answer cell was moved (found after {', '.join(moved)}); it is read "
                f"as {lb}'s answer"
            )
    for lb in expected:
        if lb not in placed:
            out.append(
                f"{lb}: its answer cell is missing (deleted, or a notebook handed out before "
                "answer cells); what was added after the exercise is read as its answer"
            )
        if lb not in answers:
            out.append(f"{lb}: no answer (its answer cell is empty or still the placeholder)")
    return out


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


def _model(text: str, chapter: str | None = None) -> str:
    """The chapter's solution, its executable cells shown as Python code, its roles as the book
    prints them ("Theorem 4.1", a glued number of the last book build, marked; without a build
    the value's name in angle brackets): :func:`booktools.readable.markdown`."""
    from . import ROOT, readable

    text = re.sub(r"^(`{3,})\{code-cell\}[^\n]*$", r"\1python", text, flags=re.M)
    if not text.strip():
        return text
    values = readable.glued_values(ROOT / "chapters" / f"{chapter}.md") if chapter else {}
    out = readable.markdown(text, values, readable.book_labels())
    notes = [line for line in out.split("\n") if line.startswith("*†")]
    body = "\n".join(line for line in out.split("\n") if not line.startswith("*†")).rstrip()
    if notes:
        body += (
            "\n\n*† a number of the book's own run (the last build's"
            + ("; ⟨name⟩: no build found, see the chapter's page" if "⟨" in body else "")
            + ").*"
        )
    return body


def write_sheets(
    subs, specs: dict, out: Path, student_of, shown: Path | None = None, only=None
) -> list[Path]:
    """One Markdown and one CSV sheet per question of the chapters graded (``shown``: the output
    folder the sheets name, when ``out`` is where they are written first; ``only``: the labels
    of the sheets to write, ``None`` for all). Every score merged so far is on its sheet."""
    folder = out / "hand"
    named = Path(shown if shown is not None else out) / "hand"
    written = []
    for name, chapter in specs.items():
        mine = [s for s in subs if s.chapter == name]
        for h in chapter.hand if mine else []:
            if only is not None and h.label not in only:
                continue
            folder.mkdir(parents=True, exist_ok=True)
            rows = [
                [
                    h.label,
                    s.rel,
                    student_of(s)["Student"],
                    f"{h.points:g}",
                    *_scored(s, h.label),
                    _answer(s, h),
                ]
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
                _model(h.model, name) or "*(the chapter gives none)*",
                "",
                "## Answers",
                "",
                "| submission | student | answer | score |",
                "|:--|:--|:--|:--|",
            ]
            lines += [
                f"| `{r[1]}` | {_cell(r[2])} | {_cell(r[6])} | {r[4] or '___'} of {r[3]}"
                + (f" ({_cell(r[5])})" if r[5] else "")
                + " |"
                for r in rows
            ]
            notes = [
                f"- `{s.rel}`: {w}"
                for s in mine
                for w in getattr(s, "warnings", [])
                if w.startswith(h.label + ":")
            ]
            if notes:
                lines += ["", "## Answer cells to look at", "", *notes]
            (folder / f"{h.label}.md").write_text("\n".join(lines) + "\n")
            written += [folder / f"{h.label}.md", folder / f"{h.label}.csv"]
    return written


def _scored(sub, label: str) -> list[str]:
    """The score and comment merged for ``label`` (blank when none was)."""
    got = (sub.hand_scores or {}).get(label)
    return [f"{got[0]:g}", got[1]] if got else ["", ""]


def _same(a: str, b: str) -> bool:
    return " ".join((a or "").split()) == " ".join((b or "").split())


def read_scores(paths, subs, specs: dict, student_of=None) -> dict[str, dict[str, tuple]]:
    """``{submission: {label: (score, comment)}}`` from filled-in sheets; a clear error for a row
    that names an unknown question or submission, or a score that is not a number in [0, max]."""
    by_rel = {s.rel: s for s in subs}
    points = {h.label: (h.points, name) for name, ch in specs.items() for h in ch.hand}
    specs_of = {h.label: h for ch in specs.values() for h in ch.hand}
    out: dict[str, dict] = {}
    seen: dict[tuple, str] = {}
    for path in map(Path, paths):
        for n, row in sheet_rows(path):
            label, rel, raw = (
                row["question"].strip(),
                row["submission"].strip(),
                (row["score"] or "").strip(),
            )
            where = f"--merge {path.name}, line {n}"
            if (label, rel) in seen:
                raise ValueError(
                    f"{where}: {label} of {rel!r} is scored twice (also {seen[label, rel]})"
                )
            seen[label, rel] = where.removeprefix("--merge ")
            if label not in points:
                raise ValueError(f"{where}: unknown question {label!r}")
            if rel not in by_rel or by_rel[rel].chapter != points[label][1]:
                raise ValueError(
                    f"{where}: no submission {rel!r} of chapter {points[label][1]} was graded"
                )
            sub = by_rel[rel]
            if student_of is not None and (row.get("student") or "").strip() not in (
                "",
                student_of(sub)["Student"],
            ):
                raise ValueError(
                    f"{where}: the row's student {row['student'].strip()!r} is not the graded "
                    f"submission's ({student_of(sub)['Student']!r}): a sheet of another grading?"
                )
            if (row.get("answer") or "").strip() and not _same(
                row["answer"], _answer(sub, specs_of[label])
            ):
                raise ValueError(
                    f"{where}: the row's answer is not the graded submission's answer to {label} "
                    "(a sheet of another grading? grade again, or take the sheet from this "
                    "grading's hand/ folder)"
                )
            if not raw:
                continue
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
