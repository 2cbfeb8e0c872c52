"""The chapters listed in _toc.yml, and how the tests execute them."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "papermill"  # executed fast-mode notebooks, kept for inspection


def toc_files(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """Every file of the table of contents, in reading order (root first)."""
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
    return path.relative_to(ROOT).with_suffix("").as_posix()


def execute(path: Path, mode: str = "fast", seed: int = 0, out_dir: Path = EXECUTED, nb=None):
    """Execute a chapter with papermill in ``mode`` and return the executed notebook.

    ``nb``: a variant of the chapter to run instead of ``path`` converted by jupytext (the student
    version, the Colab notebook); it runs where the chapter would, from ``path``'s folder. The
    mode is the one asked for: ``RANKCOLLAPSE_MODE``, which would override it inside the kernel,
    is not passed on.
    """
    import os

    import jupytext
    import papermill

    out_dir.mkdir(parents=True, exist_ok=True)
    saved = os.environ.pop("RANKCOLLAPSE_MODE", None)  # the kernel inherits os.environ
    try:
        return papermill.execute_notebook(
            jupytext.read(path) if nb is None else nb,
            str(out_dir / (path.stem + ".ipynb")),
            parameters={"mode": mode, "seed": seed},
            kernel_name="python3",
            cwd=str(path.parent),
            progress_bar=False,
        )
    finally:
        if saved is not None:
            os.environ["RANKCOLLAPSE_MODE"] = saved


def text_outputs(nb) -> list[list[str]]:
    """Per code cell, its stdout and text/plain outputs (what "prints the same numbers" compares)."""
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        texts, chunks = [], []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                chunks.append("".join(out["text"]))  # streams arrive in chunks that vary run to run
            elif out.get("metadata", {}).get("scrapbook"):
                continue  # a glued value: the book build moves it into the prose
            elif out.get("output_type") in ("execute_result", "display_data"):
                plain = out.get("data", {}).get("text/plain")
                if plain and "<Figure" not in "".join(plain):
                    texts.append("".join(plain))
        # myst-nb (nb_merge_streams) saves the merged stream first, with trailing whitespace
        # stripped, and keeps the later chunks: compare lines without trailing whitespace
        def lines(text):
            return [line.rstrip() for line in text.rstrip().splitlines()]

        if len(chunks) > 1 and "\n".join(lines(chunks[0])).endswith("\n".join(lines("".join(chunks[1:])))):
            chunks = chunks[:1]
        cells.append(lines("".join(chunks)) + texts)
    return cells
