"""The book's configuration (``_config.yml``) and the reading of its GitHub address, shared by the
Sphinx extension's Colab button (``booktools.ext.bookext``) and the Colab notebooks
(:mod:`booktools.notebooks`)."""

from __future__ import annotations

import re
from pathlib import Path

from . import ROOT


def book_config(path: Path = ROOT / "_config.yml") -> dict:
    import yaml

    return yaml.safe_load(Path(path).read_text())


def github_repo(url: str) -> tuple[str, str] | None:
    """``(owner, name)`` of a GitHub repository address (``.git`` and a final ``/`` allowed), else
    None."""
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?", url or "")
    return match.groups() if match else None
