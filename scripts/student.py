#!/usr/bin/env python3
"""Write the student version of the book: every chapter with its solutions removed.

For each chapter in _toc.yml, the blocks from ``solution-start`` to ``solution-end`` (the
dropdowns holding the executed solutions) are removed; the exercise statements, the stubs that
raise ``NotImplementedError`` and the check cells stay. A student notebook still executes from
top to bottom: each check answers "not attempted" until the student replaces the stub.

    python scripts/student.py [--out _build/student] [--ipynb]

writes ``<out>/chapters/<name>.md`` (and ``.ipynb`` with ``--ipynb``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

# a solution block: an opening fence of 3+ backticks or colons with {solution-start}, up to the
# matching {solution-end} fence and its closing fence
SOLUTION = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{solution-start\}.*?^(?P=fence)\{solution-end\}[^\n]*\n(?P=fence)[ \t]*\n",
    re.S | re.M,
)


def strip_solutions(text: str) -> str:
    """The chapter's MyST source without its solution blocks."""
    out = SOLUTION.sub("", text)
    if "{solution-start}" in out or "{solution-end}" in out:
        raise ValueError("a solution-start/solution-end pair is malformed; nothing written")
    return out


def main(argv=None):
    from chapters_util import toc_notebooks

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_build" / "student"))
    ap.add_argument("--ipynb", action="store_true", help="also write .ipynb notebooks (jupytext)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    written = []
    for path in toc_notebooks():
        target = out / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(strip_solutions(path.read_text()))
        written.append(target)
        if args.ipynb:
            import jupytext

            jupytext.write(jupytext.read(target), target.with_suffix(".ipynb"))
    for t in written:
        print(t)
    return written


if __name__ == "__main__":
    main()
