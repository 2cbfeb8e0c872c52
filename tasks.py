#!/usr/bin/env python3
"""The book's two set-up commands, and a few more. Needs only Python 3.11 and pip.

    python tasks.py book      install, then build the whole book (every chapter executed, full mode)
    python tasks.py test      install, then run the tests (library, every chapter in fast mode,
                              the book built in fast mode from a clean _build)
    python tasks.py student   write the student version (solutions stripped) to _build/student/
    python tasks.py grade SUBMISSIONS_DIR [--out DIR] [--timeout SECONDS]
                              [--format canvas|gradescope] [--merge HAND_SCORES.csv]
                              grade submitted student notebooks: grades.csv, one report each and the
                              hand-grading sheets, in SUBMISSIONS_DIR/graded/ unless --out says
                              otherwise; --format adds a Canvas import CSV or Gradescope
                              results.json; --merge folds an instructor's hand scores into the
                              totals and exports
    python tasks.py student-book  build the book (full mode; `--mode fast`), then its student
                              edition (no solutions, no instructor's guide) in _build/student/html/
    python tasks.py pdf       the PDF of the book and of its student edition (_build/pdf/book.pdf,
                              book-student.pdf) from the last book build, no chapter executed again;
                              installs TeX (Debian's packages, apt-get) when it is missing
    python tasks.py install   only install the pinned requirements and the library

Every command installs first, unless this environment's last install was made from the same
requirements files and pyproject.toml and every pinned package is still there at its version
(then it says so and goes on); `python tasks.py install` always runs pip.
Extra arguments after `test` go to pytest (`python tasks.py test -k paths`); after `grade`, to
`booktools.grade` (`python tasks.py grade submissions/ --timeout 300`).

This file is what installs, so it uses the standard library alone; the steps after the install
run in a new process, which imports what was installed (the book's tooling, `booktools`).
Each step prints what it does and how long it took.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PY = sys.executable


def step(title: str, *cmd: str) -> None:
    """Run one step, printing its title first and its time after; exit when it fails."""
    print(f"==> {title}", flush=True)
    start = time.monotonic()
    result = subprocess.run(cmd, cwd=ROOT)
    seconds = time.monotonic() - start
    if result.returncode:
        print(
            f"==> FAILED after {seconds:.0f} s: {title} (exit code {result.returncode})", flush=True
        )
        sys.exit(result.returncode)
    print(f"==> done in {seconds:.0f} s: {title}", flush=True)


INSTALLED = Path(sys.prefix) / "rankcollapse-installed.txt"  # in the environment, not the clone
REQUIREMENTS = ("requirements.txt", "requirements-nodeps.txt")


def _fingerprint() -> str:
    """What the install was made from: the requirements files, pyproject.toml and this clone."""
    import hashlib

    digest = hashlib.sha256(str(ROOT).encode())
    for name in (*REQUIREMENTS, "pyproject.toml"):
        path = ROOT / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    return digest.hexdigest()


def installed() -> bool:
    """Whether this environment already holds the install: the last install in it was made from
    the same requirements files and pyproject.toml of this clone, and every pinned package is
    there at its version (importlib.metadata: a fraction of a second, where pip takes ~10 s)."""
    import json
    from importlib import metadata

    if not INSTALLED.exists() or INSTALLED.read_text().strip() != _fingerprint():
        return False
    for name in REQUIREMENTS:
        path = ROOT / name
        for line in path.read_text().splitlines() if path.exists() else ():
            pin = line.split("#", 1)[0].strip()
            if not pin:
                continue
            package, _, version = pin.partition("==")
            try:  # a local label (torch's "+cpu") satisfies the pin, as it does for pip
                if metadata.version(package.strip()).split("+")[0] != version.strip():
                    return False
            except metadata.PackageNotFoundError:
                return False
    # this clone's editable install (pip's record of where it came from, in site-packages; the
    # clone's own rankcollapse.egg-info, which setuptools leaves beside pyproject.toml, has none)
    for dist in metadata.distributions(name="rankcollapse"):
        url = json.loads(dist.read_text("direct_url.json") or "{}")
        if url.get("url") == ROOT.as_uri() and url.get("dir_info", {}).get("editable", False):
            return True
    return False


def install(always: bool = False) -> None:
    if not always and installed():
        print(
            "==> install: already done in this environment (the pinned packages are there, and "
            "requirements*.txt and pyproject.toml are as they were); python3 tasks.py install "
            "runs pip again",
            flush=True,
        )
        return
    pip = [PY, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    step(
        "install the pinned requirements (pip install -r requirements.txt)",
        *pip,
        "-r",
        "requirements.txt",
    )
    # packages whose declared dependencies we must not pull
    nodeps = ROOT / "requirements-nodeps.txt"
    if nodeps.exists():
        step(
            "install the packages whose dependencies are not pulled (requirements-nodeps.txt)",
            *pip,
            "--no-deps",
            "-r",
            str(nodeps),
        )
    step(
        "install the library and the book's tools (pip install -e .)", *pip, "--no-deps", "-e", "."
    )
    try:
        INSTALLED.write_text(_fingerprint() + "\n")
    except OSError:  # a system Python's prefix: pip runs again next time
        pass


# the student edition of the HTML book (booktools.edition; `--reuse` takes the last book build)
STUDENT_BOOK = "student-book"


def student_book(rest: list[str]) -> None:
    step("build the book, then its student edition", PY, "-m", "booktools.edition", *rest)


def pdf(rest: list[str]) -> None:
    # booktools.pdf names the Debian packages; it runs apt-get (with sudo when not root) only when
    # xelatex, latexmk, rsvg-convert or pdftotext is missing
    step(
        "install TeX if it is missing (Debian packages)", PY, "-m", "booktools.pdf", "--install-tex"
    )
    step("build the PDFs from the last book build", PY, "-m", "booktools.pdf", *rest)


def main(argv: list[str]) -> None:
    commands = ("book", "test", "student", "grade", "install", "pdf", STUDENT_BOOK)
    if not argv or argv[0] not in commands:
        print(__doc__)
        if argv:
            print(
                f"tasks.py: unknown command {argv[0]!r}: one of {', '.join(commands)}",
                file=sys.stderr,
            )
        sys.exit(2)
    cmd, rest = argv[0], argv[1:]
    install(always=cmd == "install")
    if cmd == "book":
        # booktools.build prints one line per chapter with its time, and the failing cell if any
        step("build the book (full mode)", PY, "-m", "booktools.build", "--mode", "full")
    elif cmd == "test":
        step("run the tests (pytest)", PY, "-m", "pytest", *rest)
    elif cmd == "student":
        step("write the student version", PY, "-m", "booktools.student", *rest)
    elif cmd == "grade":
        step("grade the submissions", PY, "-m", "booktools.grade", *rest)
    elif cmd == STUDENT_BOOK:
        student_book(rest)
    elif cmd == "pdf":
        pdf(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
