"""Which files under the repository are the book's sources: not the folders readers' tools create.

Loaded by `_config.yml` (`sphinx: extra_extensions`). Sphinx reads every `.md` file under the
source folder (the repository root) that `exclude_patterns` does not name. `only_build_toc_files:
true` does not stop it reading a virtual environment made inside the repository, as the README
suggests (`python3 -m venv .venv`): jupyter-book hands that option to sphinx-external-toc, which
lists the files to exclude with `glob.glob("**/*.md")`, and `glob` skips hidden folders, so
`.venv/lib/python3.11/site-packages/<package>/templates/card.md` is neither in the toc nor
excluded, and Sphinx (which walks hidden folders too) reads it and warns, failing the `-W` build.

The rule, applied when the configuration is read (before sphinx-external-toc's own pass):

- every hidden folder, at any depth (`.venv`, `.ipynb_checkpoints`, `.mypy_cache`, `.git`, ...);
- every folder named as a tool's cache or packages (`__pycache__`, `node_modules`);
- every folder that is a Python environment, whatever its name (`venv`, `env`, `my-env`, ...):
  it holds `pyvenv.cfg` (venv, virtualenv) or `conda-meta` (conda).
"""

from __future__ import annotations

import os
from pathlib import Path

# by name, at any depth; `.*` is every hidden folder
TOOL_FOLDER_NAMES = (".*", "__pycache__", "node_modules")
# a folder holding one of these is a Python environment
ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")


def _named(name: str) -> list[str]:
    # Sphinx matches exclude patterns against paths relative to the source folder with `*` not
    # crossing a `/`, and (when it walks the folders) does not expand `**/x` to a top-level `x`
    return [name, f"**/{name}"]


def environment_folders(srcdir: str | os.PathLike) -> list[str]:
    """Every folder under ``srcdir`` that is a Python environment, relative, in POSIX form.

    Walks the tree without entering hidden folders, tool folders or an environment found.
    """
    import fnmatch

    srcdir = Path(srcdir)
    found = []
    for root, dirs, files in os.walk(srcdir):
        if any(marker in files or marker in dirs for marker in ENVIRONMENT_MARKERS):
            found.append(Path(root).relative_to(srcdir).as_posix())
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not any(fnmatch.fnmatchcase(d, n) for n in TOOL_FOLDER_NAMES)]
    return [f for f in found if f != "."]


def tool_folder_patterns(srcdir: str | os.PathLike) -> list[str]:
    """The ``exclude_patterns`` that leave out every tool folder under ``srcdir`` (see above)."""
    patterns = [p for name in TOOL_FOLDER_NAMES for p in _named(name)]
    return patterns + environment_folders(srcdir)


def _exclude_tool_folders(app, config) -> None:
    extra = [p for p in tool_folder_patterns(app.srcdir) if p not in config.exclude_patterns]
    # a new list: extending in place would alter Sphinx's default value
    config.exclude_patterns = list(config.exclude_patterns) + extra


def setup(app):
    # sphinx-external-toc lists the files outside the toc at priority 900: run before it, so that
    # it need not list (or exclude one by one) the files of an environment folder
    app.connect("config-inited", _exclude_tool_folders, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
