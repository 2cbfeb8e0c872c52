"""The student version of the book: every chapter with its solutions removed.

The blocks from ``solution-start`` to ``solution-end`` (the dropdowns holding the executed
solutions) are removed; the exercise statements, the stubs that raise ``NotImplementedError`` and
the check cells stay. A student notebook still executes from top to bottom: each check answers
"not attempted" until the student replaces the stub.

    python -m booktools.student [--out _build/student] [--ipynb]     # or: rankbook-student

writes ``<out>/chapters/<name>.md`` (and ``.ipynb`` with ``--ipynb``) for each chapter in _toc.yml.
The ``.md`` keeps the chapter's MyST (JupyterLab shows it with jupyterlab-myst, see the README);
the ``.ipynb`` reads in any Jupyter: its Markdown is :func:`booktools.readable.readable`'s, with
the numbers of the last book build (``_build/jupyter_execute``) where the book glues them.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from . import ROOT
from .toc import toc_notebooks

# a solution block: an opening fence of 3+ backticks or colons with {solution-start}, up to the
# matching {solution-end} fence and its closing fence
SOLUTION = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{solution-start\}.*?"
    r"^(?P=fence)\{solution-end\}[^\n]*\n(?P=fence)[ \t]*\n",
    re.S | re.M,
)


def strip_solutions(text: str) -> str:
    """The chapter's MyST source without its solution blocks, an answer cell after each written
    exercise (:func:`written_exercises`)."""
    out = SOLUTION.sub("", text)
    if "{solution-start}" in out or "{solution-end}" in out:
        raise ValueError("a solution-start/solution-end pair is malformed; nothing written")
    out = with_points(out, exercise_points(out))
    for at, (meta, source) in sorted(_inserted(out).items(), reverse=True):
        cell = f"\n+++ {json.dumps(meta)}\n\n{source}\n\n+++\n"
        out = out[:at] + (cell if at else cell.lstrip("\n")) + out[at:]
    return out


RULES = (
    "**How your answers are graded.** A check cell runs your code (or reads your value) and "
    "says *correct*, *incorrect* with a hint, or *not attempted*; the instructor's grader runs "
    "the same checks. Your code may call Python, NumPy, PyTorch and the library's building "
    "blocks (`rc.ops`, `rc.san`, ...), but not the library function that computes what the "
    "exercise asks for (the one its check compares you with, such as `rc.paths.path_count` for "
    "a path count): an answer that calls it scores 0, and the check says so in your notebook "
    "(*correct, but it calls the library's answer: 0 points when graded*). Record a "
    "prediction, with your reason in a comment, before you run the cells that measure it: the "
    "instructor reads the reason beside the value. Explain and prove answers go in the answer cell "
    "after their exercise (more cells of yours may follow it, before the next exercise) and are "
    "graded by hand; each exercise gives its points beside its ratings."
)


_RATINGS = re.compile(
    r"(?P<head>^:label: (?P<label>ex-[\w-]+)\n(?:`{3,}|:{3,})\n\n\*\*[^*]+\*\*\s*"
    r"\(difficulty\s+\d/3,\s+importance\s+\d/3,\s+\d+\s+minutes)\)",
    re.M,
)


def exercise_points(text: str) -> dict[str, float]:
    """``{label: points}`` of the exercises of the MyST ``text``: the rubric's for one graded by
    hand, else the registry's entry of the first check after it (the points rule:
    ``rankbook.checks``)."""
    import rankbook as book

    found = list(_EXERCISE.finditer(text))
    out = {}
    for m, nxt in zip(found, [*found[1:], None]):
        label = m["label"]
        if label in book.checks.RUBRICS:
            out[label] = float(book.checks.RUBRICS[label].points)
            continue
        call = re.search(
            r"""book\.checks\.check\(["']([^"']+)["']""",
            text[m.end() : nxt.start() if nxt is not None else len(text)],
        )
        entry = call and (book.checks.EXERCISES.get(call[1]) or book.checks.QUESTIONS.get(call[1]))
        if entry:
            out[label] = float(entry.points)
    return out


def with_points(text: str, points: dict[str, float]) -> str:
    """``text`` with each exercise's points after its ratings: "(difficulty 2/3, importance 3/3,
    20 minutes, 2 points)"."""

    def add(m):
        if m["label"] not in points:
            return m[0]
        n = points[m["label"]]
        return f"{m['head']}, {n:g} point{'' if n == 1 else 's'})"

    return _RATINGS.sub(add, text)


def _inserted(text: str) -> dict[int, tuple[dict, str]]:
    """The cells the student version adds, by the offset of ``text`` they go at: the rules
    before the first exercise, an answer cell after each written one."""
    first = _EXERCISE.search(text)
    out = {first.start(): ({ANSWER_KEY: {"rules": True}}, RULES)} if first else {}
    for label, kind, end in written_exercises(text):
        out[end] = ({ANSWER_KEY: {"answer": label}}, placeholder(kind))
    return out


# An answer cell: a Markdown cell after an exercise graded by hand (explain, prove: no check
# follows it), owned by the exercise through its metadata {"rankbook": {"answer": label}}, which
# the grader reads (booktools.grade_hand.collect), wherever the cell is.
ANSWER_KEY = "rankbook"
_EXERCISE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{exercise-start\}\n:label: (?P<label>\S+)\n(?P=fence)\n\n"
    r"\*\*(?P<title>[^*]+)\*\*.*?^(?P=fence)\{exercise-end\}[^\n]*\n(?P=fence)[ \t]*\n",
    re.M | re.S,
)
_CHECK_CALL = re.compile(r"""book\.checks\.check\(["']""")
PLACEHOLDERS = {
    "prove": "*Your proof: write it in this cell, in place of this line (double-click the cell to "
    "edit it). Give every step its reason, numbered as the exercise's parts are. The grader "
    "reads this cell as your answer to the exercise above, wherever it is; more cells of yours "
    "below it, before the next exercise, are read with it.*",
    "explain": "*Your answer: write it in this cell, in place of this line (double-click the cell "
    "to edit it), in the few sentences the exercise asks for, each question of it answered. The "
    "grader reads this cell as your answer to the exercise above, wherever it is; more cells of "
    "yours below it, before the next exercise, are read with it.*",
}


def placeholder(kind: str) -> str:
    """The text of an answer cell before the student writes in it."""
    return PLACEHOLDERS.get(kind, PLACEHOLDERS["explain"])


def written_exercises(text: str) -> list[tuple[str, str, int]]:
    """``(label, kind, end)`` of every exercise of the MyST ``text`` that no check follows
    (before the next exercise): its answer is written, graded by hand. ``kind`` is "prove" or
    "explain" (from the title), ``end`` the offset just after its ``exercise-end`` fence."""
    found = list(_EXERCISE.finditer(text))
    out = []
    for m, nxt in zip(found, [*found[1:], None]):
        stop = nxt.start() if nxt is not None else len(text)
        if _CHECK_CALL.search(text, m.end(), stop):
            continue
        kind = "prove" if m["title"].strip().lower().startswith("prove") else "explain"
        out.append((m["label"], kind, m.end()))
    return out


def answer_of(metadata) -> str | None:
    """The exercise label a cell's metadata says the cell answers (``None``: not an answer
    cell)."""
    entry = (metadata or {}).get(ANSWER_KEY)
    label = entry.get("answer") if isinstance(entry, dict) else None
    return label if isinstance(label, str) else None


_SOLUTION_START = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-start\}")


def strip_notebook(nb):
    """A copy of notebook ``nb`` (a chapter as myst-nb or jupytext reads it, executed or not)
    without its solution blocks: what :func:`strip_solutions` removes from the MyST source,
    removed cell by cell (the code cells of a solution go whole; the executed outputs of the
    other cells stay)."""
    import copy

    nb = copy.deepcopy(nb)
    cells, fence, state = [], None, None  # state: None, "inside", "closing" (the end's fence next)
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            if state is None:
                cells.append(cell)
            continue
        kept = []
        for line in cell.source.split("\n"):
            if state is None:
                m = _SOLUTION_START.match(line)
                if m:
                    fence, state = m["fence"], "inside"
                else:
                    kept.append(line)
            elif state == "inside":
                if line.startswith(fence + "{solution-end}"):
                    state = "closing"
            elif line.strip() == fence:
                state = None
            else:
                raise ValueError(
                    "a solution-end is not followed by its closing fence; nothing written"
                )
        if "\n".join(kept).strip():
            cell.source = "\n".join(kept)
            cells.append(cell)
    if state is not None:
        raise ValueError("a solution-start/solution-end pair is malformed; nothing written")
    nb.cells = _with_answer_cells(_measurements_hidden(cells))
    return nb


def _measurements_hidden(cells: list) -> list:
    """``cells`` with the outputs of each prediction's measurement removed: the code cell right
    after a predict question's check (the chapters put the measurement there; a test holds them
    to it), so the student edition's page does not print the measured answer under the question
    a student has yet to predict."""
    import rankbook as book

    predict = {q.id for q in book.checks.QUESTIONS.values() if q.kind == "predict"}
    code = [k for k, c in enumerate(cells) if c.cell_type == "code"]
    for k, nxt in zip(code, code[1:]):
        call = re.search(r"""book\.checks\.check\(["']([^"']+)["']""", cells[k].source)
        if call and call[1] in predict and "outputs" in cells[nxt]:
            cells[nxt].outputs = []
            cells[nxt].execution_count = None
    return cells


def _with_answer_cells(cells: list) -> list:
    """``cells`` with an answer cell after each written exercise (as :func:`strip_solutions`
    puts them in the source): the Markdown cell holding its end split after the end's fence."""
    import copy

    import nbformat

    text = "".join(c.source.rstrip("\n") + "\n\n" for c in cells)
    points = exercise_points(text)
    for cell in cells:
        if cell.cell_type == "markdown":
            cell.source = with_points(cell.source, points)
    text, where = "", []  # the cells' sources joined, and where each cell starts in it
    for cell in cells:
        where.append(len(text))
        text += cell.source.rstrip("\n") + "\n\n"
    ends = {}
    for at, (meta, source) in _inserted(text).items():
        ends[at] = nbformat.v4.new_markdown_cell(source)
        ends[at].metadata.update(meta)
    out = []
    for k, cell in enumerate(cells):
        start, stop = where[k], where[k] + len(cell.source.rstrip("\n")) + 2
        cuts = sorted(e for e in ends if start < e <= stop)
        if cell.cell_type != "markdown" or not cuts:
            out.append(cell)
            out += [ends[e] for e in cuts]
            continue
        bounds = [0, *(e - start for e in cuts), None]
        for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
            piece = cell.source[a:b].strip("\n")
            if piece.strip():
                part = copy.deepcopy(cell)
                part.source = piece
                if n and "id" in part:
                    part.id = f"{part.id}-{n}"
                out.append(part)
            if b is not None:
                out.append(ends[b + start])
    return out


def student_notebook(text: str):
    """The student notebook (not executed) of a chapter's MyST source ``text``."""
    import jupytext

    return jupytext.reads(strip_solutions(text), fmt="md:myst")


STUDENT_DIR = "student"  # in the built site: student/chapters/<name>.ipynb


def student_notebook_path(pagename: str) -> str:
    """Where page ``pagename``'s (``chapters/paths``) student notebook lies in the built site,
    relative to its root."""
    return f"{STUDENT_DIR}/{pagename}.ipynb"


def write_student_notebook(text: str, site: Path, pagename: str) -> Path:
    """Write the student notebook of the chapter source ``text`` (page ``pagename``) into the
    built site ``site``, where the page's download button points; returns the file."""
    import jupytext

    target = Path(site) / student_notebook_path(pagename)
    target.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(student_notebook(text), target)
    return target


def write(out: Path, ipynb: bool = False) -> list[Path]:
    """Write every chapter of the toc without its solutions to ``out/chapters/<name>.md`` (and
    ``.ipynb`` with ``ipynb``); returns the files written."""
    out = Path(out)
    written = []
    for path in toc_notebooks():
        target = out / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(strip_solutions(path.read_text()))
        written.append(target)
        if ipynb:  # MyST as Markdown Jupyter reads, the book build's numbers in place
            import jupytext

            from .readable import readable

            jupytext.write(readable(jupytext.read(target), path), target.with_suffix(".ipynb"))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_build" / "student"))
    ap.add_argument("--ipynb", action="store_true", help="also write .ipynb notebooks (jupytext)")
    args = ap.parse_args(argv)
    existing = Path(args.out).resolve()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        ap.error(f"--out {args.out!r}: {existing} is a file, not a folder")
    for path in write(args.out, args.ipynb):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
