"""The book build: one command, used by ``tasks.py book``, the tests' fixture and the status page.

:func:`build` first executes the chapters with papermill, several at once (one process per core,
:func:`booktools.execute.execute_all`), or takes runs already made (the test session's seed-0
runs), and puts each executed chapter into jupyter-book's execution cache
(:func:`fill_cache`; ``_config.yml`` has ``execute_notebooks: cache``); jupyter-book then executes
nothing and writes the pages. It prints one line per chapter with its execution time, each warning
in one line, the time spent writing the pages and, when a cell fails, which chapter and which cell
failed and the cell's error. The whole jupyter-book log is kept in ``_build/build.log``
(:data:`booktools.BUILD`). A chapter the cache does not match is executed by jupyter-book itself,
as before (its progress line comes from myst-nb's log).

    python -m booktools.build --mode full     # what `python3 tasks.py book` runs after installing
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import BUILD, OUTPUT, ROOT

# jupyter-book's command line, run by this Python (works in a venv, pyenv or the system Python)
JUPYTER_BOOK = (
    sys.executable,
    "-c",
    "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
)
LOG = BUILD / "build.log"
CACHE = BUILD / ".jupyter_cache"  # myst-nb's default: beside the HTML folder
RUNS = BUILD / "book-runs"  # the chapters the book build executed (papermill), one per mode
# the mode of the last successful build (the student edition reads it)
MODE_FILE = BUILD / "mode.txt"


def clean_build() -> None:
    """Remove everything a previous book build left (HTML, executed notebooks, Sphinx caches)."""
    for name in ("html", "jupyter_execute", ".doctrees", ".jupyter_cache"):
        shutil.rmtree(BUILD / name, ignore_errors=True)
    MODE_FILE.unlink(missing_ok=True)


def build_command(root: Path = ROOT, output: Path | None = None) -> list[str]:
    """jupyter-book build of the whole book in ``root`` (its HTML to ``output/_build/html``;
    ``output`` is ``root`` unless given), failing on any warning (-W -n) or cell error."""
    return [
        *JUPYTER_BOOK,
        "build",
        "--all",
        "-W",
        "-n",
        "--keep-going",
        "--path-output",
        str(output or root),
        str(root),
    ]


def _env(mode: str) -> dict:
    # unbuffered: the chapters' lines arrive while the build runs, not at its end
    return {**os.environ, "RANKCOLLAPSE_MODE": mode, "PYTHONUNBUFFERED": "1"}


# --------------------------------------------------------------------------- reading the log

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_EXECUTING = re.compile(r"^(?P<path>\S+\.(?:md|ipynb)): Executing notebook using .*\[mystnb\]\s*$")
_EXECUTED = re.compile(
    r"^(?P<path>\S+\.(?:md|ipynb)): Executed notebook in (?P<seconds>[\d.]+) seconds \[mystnb\]\s*$"
)
_WARNING = re.compile(r"^(?P<where>.*?):?\s*(?P<kind>WARNING|ERROR|CRITICAL): (?P<message>.*)$")
_EXECUTION_ERROR = re.compile(r"ExecutionError: (?P<path>\S+\.(?:md|ipynb))\s*$")
_CELL_FAILED = (
    "An error occurred while executing the following cell:",
    "A cell timed out while it was being executed",
)
_RULE = re.compile(r"^-{10,}$")
_KERNEL_NOISE = ("[IPKernelApp] WARNING", "Kernel is running over TCP")


def cell_location(path: Path, source: str) -> tuple[int, int | None] | None:
    """``(n, line)``: the failing cell is the chapter's ``n``-th code cell (from 1), starting at
    ``line`` of its source file; ``None`` when no code cell has that source."""
    import jupytext

    source = source.strip()
    try:
        nb = jupytext.read(path)
        text = Path(path).read_text()
    except (OSError, ValueError):
        return None
    code = [c for c in nb.cells if c.cell_type == "code"]
    for n, cell in enumerate(code, start=1):
        if cell.source.strip() == source:
            at = text.find(source)
            return n, (text.count("\n", 0, at) + 1 if at >= 0 else None)
    return None


class BuildProgress:
    """Turns jupyter-book's log, line by line, into a short report (see the module).

    ``feed(line)`` returns what to print now; ``finish(returncode)`` what to print at the end.
    ``locate(path, source)`` places a failing cell (default :func:`cell_location`); ``clock``
    gives seconds (for the time spent writing the pages).
    """

    def __init__(
        self, root: Path = ROOT, locate=cell_location, clock=time.monotonic, tail: int = 25
    ):
        self.root, self.locate, self.clock, self.tail_size = Path(root), locate, clock, tail
        self.open_chapter: str | None = None  # a chapter line printed without its time yet
        self.chapters: dict[str, float] = {}
        self.warnings: list[str] = []
        self.failed_path: str | None = None
        self.cell_source: list[str] | None = None
        self.cell_error: list[str] = []
        self._state = None  # None, "source", "error"
        self._writing_since: float | None = None
        self._writing_done: float | None = None
        self._tail: list[str] = []

    def _key(self, path: str) -> str:
        p = Path(path)
        try:
            p = p.resolve().relative_to(self.root.resolve())
        except ValueError:
            pass
        return p.with_suffix("").as_posix()

    def _rel(self, where: str) -> str:
        return where.replace(str(self.root.resolve()) + "/", "").replace(str(self.root) + "/", "")

    def _close_line(self) -> str:
        if self.open_chapter is None:
            return ""
        self.open_chapter = None
        return "\n"

    def feed(self, line: str) -> str:
        line = _ANSI.sub("", line).rstrip("\n")
        self._tail = (self._tail + [line])[-self.tail_size :]
        if any(noise in line for noise in _KERNEL_NOISE):
            return ""
        # the failing cell's report (nbclient's CellExecutionError or CellTimeoutError)
        if any(line.startswith(s) or s in line for s in _CELL_FAILED) and self.cell_source is None:
            self._state, self.cell_source = "before-source", []
            if "timed out" in line:
                self.cell_error.append(line.split("CellTimeoutError: ")[-1])
            return ""
        if self._state == "before-source":
            if _RULE.match(line):
                self._state = "source"
            elif line.strip():
                self.cell_error.append(line)
            return ""
        if self._state == "source":
            if _RULE.match(line):
                self._state = "error"
            else:
                self.cell_source.append(line)
            return ""
        if self._state == "error":
            if line.startswith("The above exception was the direct cause") or line.startswith(
                "Traceback (most recent"
            ):
                self._state = "done"
            else:
                self.cell_error.append(line)
            return ""
        m = _EXECUTION_ERROR.search(line)
        if m:
            self.failed_path = self.failed_path or m["path"]
            return ""
        m = _EXECUTING.match(line)
        if m:
            key = self._key(m["path"])
            text = self._close_line() + f"  {key} ..."
            self.open_chapter = key
            return text
        m = _EXECUTED.match(line)
        if m:
            key = self._key(m["path"])
            self.chapters[key] = float(m["seconds"])
            if self.open_chapter == key:
                self.open_chapter = None
                return f" {float(m['seconds']):.1f} s\n"
            return self._close_line() + f"  {key}: {float(m['seconds']):.1f} s\n"
        m = _WARNING.match(line)
        if m and self._state is None:
            text = f"{self._rel(m['where'])}: {m['message']}" if m["where"] else m["message"]
            self.warnings.append(text)
            return self._close_line() + f"  {m['kind'].lower()}: {text}\n"
        if line.startswith("writing output... [") and self._writing_since is None:
            self._writing_since = self.clock()
            return self._close_line() + "  writing the HTML pages ..."
        if line.startswith("build succeeded") or line.startswith("build finished with problems"):
            if self._writing_since is not None and self._writing_done is None:
                self._writing_done = self.clock()
                return f" {self._writing_done - self._writing_since:.1f} s\n"
        return ""

    def failure(self) -> str | None:
        """The failed chapter and cell, with the cell's code and error, or ``None``."""
        if self.cell_source is None and self.failed_path is None:
            return None
        path = self.failed_path or (
            str(self.root / (self.open_chapter + ".md")) if self.open_chapter else None
        )
        chapter = self._key(path) if path else "a chapter"
        where = ""
        if path and self.cell_source:
            found = self.locate(Path(path), "\n".join(self.cell_source))
            if found:
                n, line = found
                where = f", code cell {n}" + (
                    f" (line {line} of {self._rel(str(path))})" if line else ""
                )
        lines = [f"FAILED: {chapter}{where}:"]
        if self.cell_source:
            lines += ["  the cell:"] + [f"    {s}" for s in self.cell_source if s.strip()]
        error = [e for e in self.cell_error if e.strip()]
        if error:
            lines += ["  its error:"] + [f"    {e}" for e in error[-40:]]
        return "\n".join(lines) + "\n"

    def finish(self, returncode: int, log: Path | None = None) -> str:
        """What to print once the build has ended with ``returncode``."""
        out = self._close_line()
        if self._writing_since is not None and self._writing_done is None:
            out += "\n"
        if returncode == 0:
            return out
        failure = self.failure()
        if failure:
            out += failure
        elif self.warnings:
            out += (
                f"FAILED: {len(self.warnings)} warning(s) (the build fails on any warning), "
                "listed above.\n"
            )
        else:
            out += (
                "FAILED; the log's last lines:\n" + "\n".join(f"    {t}" for t in self._tail) + "\n"
            )
        if log is not None:
            out += f"The whole log: {log}\n"
        return out


def _code_cells(nb) -> list:
    return [
        c
        for c in nb.cells
        if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]


def fill_cache(executed: dict, cache_path: Path = CACHE) -> None:
    """Put each executed chapter (``{chapter path: notebook executed by papermill}``) into
    jupyter-book's execution cache, keyed as myst-nb will look it up: the chapter as myst-nb reads
    it, with the outputs of the run's code cells (papermill's injected parameters cell left out).
    A run whose code cells are not the chapter's is refused (the chapter changed after it ran)."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    cache = get_cache(str(cache_path))
    for path, ran in executed.items():
        text = Path(path).read_text()
        nb = create_nb_reader(str(path), MdParserConfig(), NbParserConfig(), text).read(text)
        mine, theirs = _code_cells(nb), _code_cells(ran)
        if [c.source.strip() for c in mine] != [c.source.strip() for c in theirs]:
            raise ValueError(
                f"fill_cache: the run of {path} does not have the chapter's code cells "
                "(was the chapter edited after it ran?)"
            )
        for n, (cell, out) in enumerate(zip(mine, theirs), 1):
            cell.outputs, cell.execution_count = out.get("outputs", []), n
        seconds = ran.metadata.get("papermill", {}).get("duration")
        cache.cache_notebook_bundle(
            CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
            check_validity=False,
            overwrite=True,
        )


def _failure(key: str, error: BaseException) -> str:
    """A failed papermill run, for the reader: the chapter, then the cell and its error."""
    text = _ANSI.sub("", str(error)).strip().splitlines()
    return f"FAILED: {key}:\n" + "\n".join(f"    {t}" for t in text[-60:]) + "\n"


def build(
    mode: str = "full",
    out=None,
    log: Path = LOG,
    executed: dict | None = None,
    jobs: int | None = None,
) -> int:
    """Build the book from a clean _build with every chapter executed in ``mode``, printing
    progress to ``out`` (default stdout) and the whole log to ``log``; returns the exit code.

    ``executed``: ``{chapter path: notebook}`` runs already made in ``mode`` with seed 0 and
    ``book=True`` (:func:`booktools.execute.execute`; the test session's); the other chapters are
    executed here, ``jobs`` at a time (default one per core)."""
    from .execute import execute_all
    from .toc import toc_notebooks

    out = out or sys.stdout
    begun = time.monotonic()
    clean_build()
    chapters = toc_notebooks()
    executed = {Path(p): nb for p, nb in (executed or {}).items() if Path(p) in chapters}
    todo = [p for p in chapters if p not in executed]
    out.write(
        f"Building the book ({mode} mode): the chapters are executed, then the pages are written.\n"
    )
    if len(executed):
        out.write(f"  {len(executed)} chapter(s) taken from runs already made\n")
    if todo:

        def done(key, seconds, error):
            out.write(
                f"  {key.relative_to(ROOT).with_suffix('').as_posix()}: {seconds:.1f} s"
                + (" (FAILED)" if error else "")
                + "\n"
            )
            out.flush()

        start = time.monotonic()
        made = execute_all(
            {p: (p, {"mode": mode, "seed": 0, "out_dir": RUNS / mode, "book": True}) for p in todo},
            jobs=jobs,
            done=done,
        )
        failed = {p: e for p, e in made.items() if isinstance(e, BaseException)}
        for p, error in failed.items():
            out.write(_failure(p.relative_to(ROOT).with_suffix("").as_posix(), error))
        if failed:
            out.flush()
            return 1
        out.write(f"  {len(todo)} chapter(s) executed in {time.monotonic() - start:.0f} s\n")
        executed |= made
    fill_cache(executed)
    code = run_with_progress(ROOT, mode, out, log, what="The pages", output=OUTPUT)
    if code == 0:
        MODE_FILE.write_text(mode + "\n")
        out.write(f"The book built in {time.monotonic() - begun:.0f} s\n")
    return code


def run_with_progress(
    root: Path, mode: str, out, log: Path, what: str = "The book", output: Path | None = None
) -> int:
    """Run :func:`build_command` in ``root`` (HTML to ``output/_build/html``, ``output`` is ``root``
    unless given), printing :class:`BuildProgress`'s report to ``out`` and the whole log to
    ``log``; returns the exit code."""
    output = output or root
    log.parent.mkdir(parents=True, exist_ok=True)
    progress = BuildProgress(root)
    out.flush()
    start = time.monotonic()
    with (
        open(log, "w") as keep,
        subprocess.Popen(
            build_command(root, output),
            cwd=root,
            env=_env(mode),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        ) as proc,
    ):
        for line in proc.stdout:
            keep.write(line)
            text = progress.feed(line)
            if text:
                out.write(text)
                out.flush()
    out.write(progress.finish(proc.returncode, log))
    seconds = time.monotonic() - start
    if proc.returncode == 0:
        out.write(f"{what} built in {seconds:.0f} s: {output / '_build' / 'html' / 'index.html'}\n")
    out.flush()
    return proc.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--mode",
        choices=("fast", "full"),
        default="full",
        help="the chapters' run sizes (RANKCOLLAPSE_MODE for every chapter)",
    )
    return build(ap.parse_args(argv).mode)


if __name__ == "__main__":
    sys.exit(main())
