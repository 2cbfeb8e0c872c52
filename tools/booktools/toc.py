"""The chapters listed in ``_toc.yml``: what the tests execute and the status command measures."""

from __future__ import annotations

from pathlib import Path

from . import ROOT


def toc_files(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """Every file of the table of contents, in reading order (root first)."""
    import yaml

    toc = yaml.safe_load(toc_path.read_text())
    files = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)

    walk({k: v for k, v in toc.items() if k in ("parts", "chapters")})
    return files


def toc_notebooks() -> list[Path]:
    """The toc's files that are notebooks (MyST markdown with a jupytext/kernelspec header)."""
    out = []
    for f in toc_files():
        path = ROOT / (f if f.endswith(".md") else f + ".md")
        if path.exists() and "kernelspec:" in path.read_text().split("\n---", 1)[0]:
            out.append(path)
    return out


def chapter_key(path: Path) -> str:
    """The chapter as _toc.yml names it: ``chapters/paths``."""
    return Path(path).resolve().relative_to(ROOT).with_suffix("").as_posix()
