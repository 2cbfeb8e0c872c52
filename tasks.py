#!/usr/bin/env python3
"""The book's two set-up commands, and a few more. Needs only Python 3.11 and pip.

    python tasks.py book      install, then build the whole book (every chapter executed, full mode)
    python tasks.py test      install, then run the tests (library, every chapter in fast mode,
                              the book built in fast mode from a clean _build)
    python tasks.py student   write the student version (solutions stripped) to _build/student/
    python tasks.py install   only install the pinned requirements and the library

Every command installs first: `pip install` of pinned versions is a no-op when they are present.
Extra arguments after `test` go to pytest (`python tasks.py test -k paths`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PY = sys.executable
# jupyter-book's command line, run by this Python (works in a venv, pyenv or the system Python)
JUPYTER_BOOK = (PY, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())")


def sh(*cmd: str) -> None:
    print("+", " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=ROOT)
    if result.returncode:
        sys.exit(result.returncode)


def install() -> None:
    pip = [PY, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    sh(*pip, "-r", "requirements.txt")
    nodeps = ROOT / "requirements-nodeps.txt"  # packages whose declared dependencies we must not pull
    if nodeps.exists():
        sh(*pip, "--no-deps", "-r", str(nodeps))
    sh(*pip, "--no-deps", "-e", ".")


def clean_build() -> None:
    """Remove everything a previous book build left (HTML, executed notebooks, Sphinx caches)."""
    for name in ("html", "jupyter_execute", ".doctrees", ".jupyter_cache"):
        shutil.rmtree(ROOT / "_build" / name, ignore_errors=True)


def build_command() -> list[str]:
    """jupyter-book build of the whole book, failing on any warning (-W -n) or cell error."""
    return [*JUPYTER_BOOK, "build", "--all", "-W", "-n", "--keep-going", "--path-output", str(ROOT), str(ROOT)]


def run_build(mode: str, **run_options) -> subprocess.CompletedProcess:
    """Build the book from a clean _build with every chapter executed in ``mode``
    (``run_options`` go to ``subprocess.run``, e.g. ``capture_output=True``)."""
    clean_build()
    return subprocess.run(build_command(), cwd=ROOT, env={**os.environ, "RANKCOLLAPSE_MODE": mode}, **run_options)


def build_book(mode: str = "full") -> None:
    """Build the book from a clean _build with every chapter executed in ``mode``; exit on failure."""
    print("+", " ".join(build_command()), flush=True)
    result = run_build(mode)
    if result.returncode:
        sys.exit(result.returncode)
    print(f"\nThe book is in {ROOT / '_build' / 'html' / 'index.html'}")


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in {"book", "test", "student", "install"}:
        print(__doc__)
        sys.exit(2)
    cmd, rest = argv[0], argv[1:]
    install()
    if cmd == "book":
        build_book("full")
    elif cmd == "test":
        sh(PY, "-m", "pytest", *rest)
    elif cmd == "student":
        sh(PY, "scripts/student.py", *rest)


if __name__ == "__main__":
    main(sys.argv[1:])
