"""The student edition of the HTML book: the same pages without the solutions and without the
instructor's guide, in ``_build/student/html``.

It does not execute the chapters again: it takes the notebooks the book build executed
(``_build/jupyter_execute/chapters/<name>.ipynb``, which myst-nb writes), removes their
solution blocks cell by cell (:func:`booktools.student.strip_notebook`, the same blocks
:func:`~booktools.student.strip_solutions` removes from the sources) and builds the book from a
copy of its sources (``_build/student/source``) in which each chapter is that stripped notebook
and execution is off. The glued numbers and the figures are the book build's own. In that copy
the guide's page is gone from ``_toc.yml`` and from the disk, a link to it elsewhere becomes
plain text, and ``book_edition: student`` tells the Sphinx extension (``booktools.ext.bookext``) to
point the Colab button at the student notebook, drop the Binder button (Binder opens the
repository's chapter, solutions included) and fail the build if a solution is left.

    python -m booktools.edition --mode fast     # the book build (fast), then the student edition
    python -m booktools.edition --reuse         # the student edition from the last book build
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

from . import BUILD, ROOT
from .build import MODE_FILE, build, run_with_progress
from .guide import GUIDE
from .student import STUDENT_DIR, strip_notebook, write_student_notebook
from .toc import chapter_key, toc_notebooks

OUT = BUILD / "student"
SOURCE = OUT / "source"  # the staged sources
HTML = OUT / "html"
EXECUTED = BUILD / "jupyter_execute"
STUDENT_LOG = BUILD / "student-build.log"
STUDENT_PDF_NAME = "book-student.pdf"  # booktools.ext.release.STUDENT_PDF, without Sphinx

# what is not copied into the staged sources (besides hidden names): the build, the code and tests
NOT_COPIED = {
    "_build",
    "tests",
    "lib",
    "book",
    "tools",
    "benchmarks",
    "binder",
    "__pycache__",
}
# a link to the guide (by document or by its label), in MyST
GUIDE_LINK = re.compile(r"\{(?:doc|ref)\}`(?:[^`<]*<)?/?" + GUIDE + r">?`")
GUIDE_TEXT = "the instructor's guide (not in the student edition)"


def without_guide(toc: dict) -> dict:
    """The table of contents ``toc`` (as YAML reads it) without the guide's entry."""

    def walk(node):
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key in ("parts", "chapters", "sections") and isinstance(value, list):
                    value = [
                        walk(v)
                        for v in value
                        if not (
                            isinstance(v, dict) and v.get("file", "").removesuffix(".md") == GUIDE
                        )
                    ]
                out[key] = value
            return out
        return node

    return walk(toc)


def executed_notebooks(mode: str | None = None) -> dict[Path, Path]:
    """Each chapter's executed notebook from the last book build, by chapter source; a
    ``RuntimeError`` saying what to run when one is missing, older than its source, or
    from another mode than ``mode``."""
    built = MODE_FILE.read_text().strip() if MODE_FILE.exists() else None
    if built is None:
        raise RuntimeError(
            "no book build to take the executed chapters from: run `python -m booktools.build "
            "--mode fast` (or `python3 tasks.py book`) first, or leave out --reuse"
        )
    if mode is not None and built != mode:
        raise RuntimeError(
            f"the last book build ran in {built} mode, not {mode}: build it again, or leave out "
            "--reuse"
        )
    out = {}
    for path in toc_notebooks():
        executed = EXECUTED / (chapter_key(path) + ".ipynb")
        if not executed.exists():
            raise RuntimeError(f"{executed} is missing: build the book again")
        if executed.stat().st_mtime < path.stat().st_mtime:
            raise RuntimeError(
                f"{path.relative_to(ROOT)} changed after the book build: build the book again"
            )
        out[path] = executed
    return out


def glue_cell(glue: dict):
    """A hidden code cell whose outputs hold the glued values myst-nb took out of the executed
    notebook (it writes them beside it, ``<chapter>.glue.json``): read again, they glue as they
    did in the book build. A value also shown as an output (no ``mime_prefix``: the figures) is
    still in its cell and is left out here."""
    import nbformat

    outputs = []
    for output in glue.values():
        prefix = output.get("metadata", {}).get("scrapbook", {}).get("mime_prefix", "")
        if not prefix:
            continue
        outputs.append(
            nbformat.from_dict(
                {**output, "data": {prefix + k: v for k, v in output["data"].items()}}
            )
        )
    cell = nbformat.v4.new_code_cell(
        "# the values glued in the book build (booktools.edition)",
        metadata={"tags": ["remove-cell"]},
    )
    cell.outputs = outputs
    return cell


def stage(executed: dict[Path, Path], source: Path = SOURCE, student: bool = True) -> Path:
    """Write the student edition's sources to ``source``: the book's sources, each chapter
    replaced by its executed notebook without solutions, the guide left out, execution off.
    With ``student=False``, the book's own sources with its executed notebooks, solutions and
    guide kept (what the PDF is built from, :mod:`booktools.pdf`)."""
    import nbformat
    import yaml

    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    for item in ROOT.iterdir():
        if item.name in NOT_COPIED or item.name.startswith("."):
            continue
        if item.is_dir():
            shutil.copytree(
                item, source / item.name, ignore=shutil.ignore_patterns(".*", "__pycache__")
            )
        else:
            shutil.copy2(item, source / item.name)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config.setdefault("execute", {})["execute_notebooks"] = "off"
    if student:
        (source / f"{GUIDE}.md").unlink(missing_ok=True)
        toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
        (source / "_toc.yml").write_text(yaml.safe_dump(without_guide(toc), sort_keys=False))
        config["title"] = f"{config['title']} (student edition)"
        # the repository holds every solution: no button to it in this edition
        config.setdefault("html", {})["use_repository_button"] = False
        config.setdefault("sphinx", {}).setdefault("config", {})["book_edition"] = "student"
    (source / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    for path, executed_path in executed.items():
        target = source / path.relative_to(ROOT)
        target.with_suffix(".md").unlink()
        nb = nbformat.read(executed_path, as_version=4)
        if student:
            nb = strip_notebook(nb)
        # the cells' lines in the chapter's MyST source: they no longer match (cells removed or
        # added)
        nb.metadata.pop("source_map", None)
        glued = executed_path.with_suffix(".glue.json")
        if glued.exists():
            nb.cells.append(glue_cell(json.loads(glued.read_text())))
        nbformat.write(nb, target.with_suffix(".ipynb"))
    for page in source.rglob("*.md") if student else ():
        text = page.read_text()
        if GUIDE_LINK.search(text):
            page.write_text(GUIDE_LINK.sub(GUIDE_TEXT, text))
    return source


# what marks a solution or the guide in a file of the site: a solution box, a solution block of
# the sources, the guide's page or its title
LEAKS = (
    'class="solution',
    "Solution to Exercise",
    "{solution-start}",
    f"{GUIDE}.html",
    "For instructors",
)
LINK = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")


def leaks(text: str) -> list[str]:
    """The marks of :data:`LEAKS` that ``text`` (a file of the student site) holds."""
    return [mark for mark in LEAKS if mark in text]


def external_problem(url: str, repository: str) -> str | None:
    """Why the student site may not link ``url`` (an address outside the site), or ``None``:
    anything in the book's ``repository`` (which holds the solutions) but the student PDF of a
    release, Binder (it opens the repository's chapters), a Colab notebook that is not a student
    notebook, a PDF that is not the student PDF."""
    path = url.split("#")[0].split("?")[0]
    repository = repository.rstrip("/")
    if path.endswith(".pdf") and not path.endswith("/" + STUDENT_PDF_NAME):
        return "a PDF other than the student PDF"
    if "mybinder.org" in url:
        return "Binder opens the repository's chapters, solutions included"
    if "colab.research.google.com" in url and f"/{STUDENT_DIR}/" not in path:
        return "a Colab notebook that is not a student notebook"
    if repository and (path == repository or path.startswith(repository + "/")):
        if not (
            path.startswith(repository + "/releases/download/") and path.endswith(STUDENT_PDF_NAME)
        ):
            return "the repository, which holds the solutions"
    return None


def crawl(site: Path, repository: str = "", start: str = "index.html"):
    """Follow every link of the student ``site`` from ``start``: each file reached in the site
    (pages, notebooks, sources, scripts) is read for :func:`leaks`, each address outside it
    checked by :func:`external_problem`. Returns ``(the files reached, the problems found)``,
    a problem as ``"<file>: <what>"``."""
    from urllib.parse import unquote, urlsplit

    site = Path(site).resolve()
    todo, seen, problems = [site / start], set(), []
    while todo:
        file = todo.pop()
        if file in seen:
            continue
        seen.add(file)
        rel = file.relative_to(site)
        if not file.is_file():
            problems.append(f"{rel}: a link to a file the site does not have")
            continue
        if file.suffix == ".pdf":
            if file.name != STUDENT_PDF_NAME:
                problems.append(f"{rel}: a PDF other than the student PDF")
            continue
        if file.suffix not in (".html", ".ipynb", ".md", ".txt", ".js", ".json"):
            continue
        text = file.read_text(errors="replace")
        problems += [f"{rel}: holds {mark!r}" for mark in leaks(text)]
        if file.suffix != ".html":
            continue
        for link in LINK.findall(text):
            parts = urlsplit(link)
            if parts.scheme in ("http", "https") or link.startswith("//"):
                why = external_problem(link, repository)
                if why:
                    problems.append(f"{rel}: links {link} ({why})")
                continue
            if parts.scheme or not parts.path:  # mailto:, data:, javascript:, "#anchor"
                continue
            target = (file.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_relative_to(site):
                problems.append(f"{rel}: links {link}, outside the site")
                continue
            todo.append(target)
    return seen, problems


def write_student_notebooks(html: Path = HTML) -> list[Path]:
    """The student notebooks (not executed) the chapter pages offer, at
    ``html/student/<chapter>.ipynb``, written from the chapters' sources as the book build writes
    them."""
    return [
        write_student_notebook(path.read_text(), html, chapter_key(path))
        for path in toc_notebooks()
    ]


def build_student(mode: str = "full", reuse: bool = False, out=None) -> int:
    """Build the student edition into ``_build/student/html``; first the book itself in ``mode``
    unless ``reuse`` (then the last book build's executed chapters, which must be from ``mode``
    when given). Returns the exit code."""
    out = out or sys.stdout
    if not reuse:
        code = build(mode, out=out)
        if code:
            return code
    try:
        executed = executed_notebooks(mode)
    except RuntimeError as e:
        out.write(f"FAILED: {e}\n")
        return 1
    source = stage(executed)
    out.write(
        "Building the student edition (no execution: the chapters as the book build executed "
        "them).\n"
    )
    code = run_with_progress(source, mode or "fast", out, STUDENT_LOG, what="The student edition")
    if code:
        return code
    shutil.rmtree(HTML, ignore_errors=True)
    shutil.move(str(source / "_build" / "html"), str(HTML))
    write_student_notebooks(HTML)
    shutil.rmtree(source / "_build", ignore_errors=True)
    out.write(f"The student edition: {HTML / 'index.html'}\n")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--mode",
        choices=("fast", "full"),
        default=None,
        help="the chapters' run sizes (default full; with --reuse, whatever the last build ran)",
    )
    ap.add_argument(
        "--reuse", action="store_true", help="take the last book build's executed chapters"
    )
    args = ap.parse_args(argv)
    return build_student(args.mode or ("full" if not args.reuse else None), reuse=args.reuse)


if __name__ == "__main__":
    sys.exit(main())
