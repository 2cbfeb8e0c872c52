"""The PDF edition: the whole book, and the student edition, as PDF files, from the last book build.

No chapter is executed again: as for the student edition's HTML (:mod:`booktools.edition`), the
book's sources are staged with each chapter replaced by the notebook the book build executed
(``_build/jupyter_execute``) and execution off, so the PDF shows the book build's glued numbers
and figures. Sphinx's LaTeX builder (through jupyter-book, ``--builder latex``; settings in
``_config.yml``'s ``latex:`` and ``latex_elements``) writes ``book.tex``; the figures' SVG are
converted to PDF by ``sphinxcontrib.rsvgconverter`` (Debian's ``rsvg-convert``), so they stay
vectors; ``latexmk`` runs XeLaTeX (Unicode text and fonts: GNU FreeFont) until the
cross-references, the numbered equations and the bibliography settle.

    python -m booktools.pdf                 # _build/pdf/book.pdf and _build/pdf/book-student.pdf
    python -m booktools.pdf --edition book  # one of them

TeX comes from Debian's packages (:data:`TEX_PACKAGES`): ``python3 tasks.py pdf`` installs them
with ``apt-get`` when ``xelatex`` is missing, as ``.ci/run`` does. The LaTeX logs are kept in
``_build/pdf/<edition>.log``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import io
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import BUILD
from .build import JUPYTER_BOOK, MODE_FILE
from .edition import executed_notebooks, stage

PDF = BUILD / "pdf"
EDITIONS = {"book": False, "book-student": True}  # the PDF's name -> without solutions
# what the PDF needs from Debian (installed with --no-install-recommends): XeLaTeX and the LaTeX
# packages Sphinx's LaTeX uses, latexmk, the fonts Sphinx names for XeLaTeX (GNU FreeFont), the
# SVG converter and pdftotext (the tests read the PDF's text)
TEX_PACKAGES = (
    "texlive-xetex",
    "texlive-latex-recommended",
    "texlive-latex-extra",
    "texlive-fonts-recommended",
    "latexmk",
    "fonts-freefont-otf",
    "librsvg2-bin",
    "poppler-utils",
)
TOOLS = ("xelatex", "latexmk", "rsvg-convert", "pdftotext")


def missing_tools() -> list[str]:
    """The programs the PDF needs that are not on ``PATH``."""
    return [t for t in TOOLS if shutil.which(t) is None]


def install_tex(out=None) -> int:
    """Install :data:`TEX_PACKAGES` with apt-get (through sudo when not root) unless every one of
    :data:`TOOLS` is already there; returns the exit code."""
    import os

    out = out or sys.stdout
    missing = missing_tools()
    if not missing:
        out.write(f"TeX is installed ({', '.join(TOOLS)} found)\n")
        return 0
    if shutil.which("apt-get") is None:
        out.write(
            f"FAILED: {', '.join(missing)} missing and no apt-get here: install TeX Live with "
            "XeLaTeX, "
            "latexmk, GNU FreeFont, rsvg-convert and pdftotext\n"
        )
        return 1
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    out.write(
        f"{', '.join(missing)} missing: apt-get install --no-install-recommends "
        f"{' '.join(TEX_PACKAGES)}\n"
    )
    out.flush()
    start = time.monotonic()
    for cmd in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *TEX_PACKAGES],
    ):
        if subprocess.run([*sudo, *cmd], env=env).returncode:
            out.write(f"FAILED: {' '.join(cmd)}\n")
            return 1
    out.write(f"TeX installed in {time.monotonic() - start:.0f} s\n")
    return 0


def latex_command(source: Path) -> list[str]:
    """jupyter-book's LaTeX builder on the staged ``source`` (``book.tex`` in
    ``source/_build/latex``), failing on any warning, as the HTML build does."""
    return [
        *JUPYTER_BOOK,
        "build",
        "--builder",
        "latex",
        "-W",
        "-n",
        "--keep-going",
        "--path-output",
        str(source),
        str(source),
    ]


def _run(cmd, cwd: Path, log, env=None) -> int:
    log.write(f"$ {' '.join(map(str, cmd))}\n")
    log.flush()
    return subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode


def build_pdf(name: str, executed: dict, out=None) -> Path | None:
    """Build the PDF ``name`` (a key of :data:`EDITIONS`) into ``_build/pdf/<name>.pdf`` from the
    ``executed`` notebooks; print each step's time to ``out``. Returns the PDF, or ``None`` when a
    step failed (its log says why)."""
    out = out or sys.stdout
    source = PDF / f"source-{name}"
    log_path = PDF / f"{name}.log"
    PDF.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        start = time.monotonic()
        stage(executed, source, student=EDITIONS[name])
        out.write(f"  {name}: LaTeX from the executed chapters ...")
        out.flush()
        if _run(latex_command(source), source, log):
            out.write(f" FAILED (the log: {log_path})\n")
            return None
        latex = source / "_build" / "latex"
        out.write(f" {time.monotonic() - start:.0f} s; typesetting (latexmk, xelatex) ...")
        out.flush()
        start = time.monotonic()
        code = _run(
            [
                "latexmk",
                "-xelatex",
                "-interaction=nonstopmode",
                "-halt-on-error",
                "-file-line-error",
                "book.tex",
            ],
            latex,
            log,
        )
        if code or not (latex / "book.pdf").exists():
            out.write(f" FAILED (the log: {log_path}; LaTeX's own: {latex / 'book.log'})\n")
            return None
    target = PDF / f"{name}.pdf"
    shutil.copy2(latex / "book.pdf", target)
    out.write(f" {time.monotonic() - start:.0f} s: {target}\n")
    out.flush()
    return target


def build(names=tuple(EDITIONS), out=None) -> int:
    """Build the PDFs ``names`` from the last book build; returns the exit code."""
    out = out or sys.stdout
    missing = missing_tools()
    if missing:
        out.write(
            f"FAILED: {', '.join(missing)} not found: TeX is not installed (Debian: apt-get "
            "install "
            f"--no-install-recommends {' '.join(TEX_PACKAGES)}; `python3 tasks.py pdf` does it)\n"
        )
        return 1
    try:
        executed = executed_notebooks()
    except RuntimeError as e:
        out.write(f"FAILED: {e}\n")
        return 1
    mode = MODE_FILE.read_text().strip()
    out.write(f"The PDF from the last book build ({mode} mode; no chapter is executed again):\n")
    start = time.monotonic()
    # the editions at once, each in a thread of its own: their steps are processes (Sphinx's LaTeX
    # builder, latexmk), one core each; each edition's lines are written once both are done, in
    # the order of ``names``
    reports = {name: io.StringIO() for name in names}
    with cf.ThreadPoolExecutor(max_workers=len(names)) as pool:
        built = list(pool.map(lambda n: build_pdf(n, executed, reports[n]), names))
    for name in names:
        out.write(reports[name].getvalue())
    if None in built:
        return 1
    out.write(f"PDF done in {time.monotonic() - start:.0f} s.\n")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--edition",
        choices=tuple(EDITIONS),
        action="append",
        help="which PDF (default: both): book (with solutions) or book-student",
    )
    ap.add_argument(
        "--install-tex",
        action="store_true",
        help="only install TeX's Debian packages (apt-get), when a tool is missing",
    )
    args = ap.parse_args(argv)
    if args.install_tex:
        return install_tex()
    return build(tuple(args.edition or EDITIONS))


if __name__ == "__main__":
    sys.exit(main())
