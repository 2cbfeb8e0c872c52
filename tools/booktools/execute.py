"""A chapter executed with papermill, as the tests and the status page run it."""

from __future__ import annotations

import os
from pathlib import Path

from . import BUILD

EXECUTED = BUILD / "papermill"  # executed fast-mode notebooks, kept for inspection


def execute(
    path: Path,
    mode: str = "fast",
    seed: int = 0,
    out_dir: Path = EXECUTED,
    nb=None,
    name: str | None = None,
    student: bool = False,
):
    """Execute a chapter with papermill in ``mode`` with ``seed`` and return the executed notebook.

    The notebook is written to ``out_dir / (name or the chapter's stem) + ".ipynb"``. ``nb``: a
    variant of the chapter to run instead of ``path`` converted by jupytext (the Colab notebook);
    ``student=True``: the student version (:func:`booktools.student.student_notebook`, the
    solutions stripped). Either runs where the chapter would, from ``path``'s folder. The mode is
    the one asked for: ``RANKCOLLAPSE_MODE``, which would override it inside the kernel, is not
    passed on.
    """
    import jupytext
    import papermill

    path = Path(path)
    if student:
        if nb is not None:
            raise ValueError("execute: give nb or student=True, not both")
        from .student import student_notebook

        nb = student_notebook(path.read_text())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = os.environ.pop("RANKCOLLAPSE_MODE", None)  # the kernel inherits os.environ
    try:
        return papermill.execute_notebook(
            jupytext.read(path) if nb is None else nb,
            str(out_dir / ((name or path.stem) + ".ipynb")),
            parameters={"mode": mode, "seed": seed},
            kernel_name="python3",
            cwd=str(path.parent),
            progress_bar=False,
        )
    finally:
        if saved is not None:
            os.environ["RANKCOLLAPSE_MODE"] = saved
