#!/usr/bin/env python3
"""Write the student version of the book: every chapter with its solutions removed.

For each chapter in _toc.yml, the blocks from ``solution-start`` to ``solution-end`` (the
dropdowns holding the executed solutions) are removed; the exercise statements, the stubs that
raise ``NotImplementedError`` and the check cells stay (``booktools.student``). A student
notebook still executes from top to bottom: each check answers "not attempted" until the
student replaces the stub.

    python scripts/student.py [--out _build/student] [--ipynb]

writes ``<out>/chapters/<name>.md`` (and ``.ipynb`` with ``--ipynb``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from booktools import ROOT
from booktools.student import write


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_build" / "student"))
    ap.add_argument("--ipynb", action="store_true", help="also write .ipynb notebooks (jupytext)")
    args = ap.parse_args(argv)
    existing = Path(args.out).resolve()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        ap.error(f"--out {args.out!r}: {existing} is a file, not a folder")
    written = write(args.out, args.ipynb)
    for t in written:
        print(t)
    return written


if __name__ == "__main__":
    main()
