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
    """The chapter's MyST source without its solution blocks."""
    out = SOLUTION.sub("", text)
    if "{solution-start}" in out or "{solution-end}" in out:
        raise ValueError("a solution-start/solution-end pair is malformed; nothing written")
    return out


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
    nb.cells = cells
    return nb


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
