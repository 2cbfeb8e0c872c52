"""The book's tooling, in one package: what the tests, ``tasks.py`` and the book build share.

Not the library (``rankcollapse``) nor the book's layer (``rankbook``), which readers import in
the chapters: this package reads the table of contents, executes chapters with papermill, builds
the book and reports its progress, extracts a chapter's results (glued values, printed text,
figures) and compares them between runs, writes the student and Colab versions, grades
submissions, measures the status page's timings, and holds the book's Sphinx extensions
(:mod:`booktools.ext`). It is installed with the library (``pip install -e .``; pyproject's
``[tool.setuptools.packages.find]``) so that the tests and the commands import it like any
package, without editing ``sys.path``; a person's commands run as ``python -m
booktools.<module>`` or by pyproject's ``[project.scripts]`` names (``rankbook-status``, ...).
It works from a checkout of the book's repository: :data:`ROOT` is the checkout, :data:`BUILD`
the folder its builds go to.

- :mod:`booktools.toc`: the chapters listed in ``_toc.yml``;
- :mod:`booktools.execute`: a chapter executed with papermill;
- :mod:`booktools.outputs`: a notebook's glued values, printed text and figures, and their
  comparison;
- :mod:`booktools.build`: the book build, with one progress line per chapter
  (``python -m booktools.build``);
- :mod:`booktools.compare`: results of chapters written to JSON and compared
  (``python -m booktools.compare``);
- :mod:`booktools.student`, :mod:`booktools.notebooks`: the student version and the Colab
  notebooks (``python -m booktools.student``, ``python -m booktools.notebooks``);
- :mod:`booktools.edition`: the student edition of the HTML book (``python -m booktools.edition``);
- :mod:`booktools.guide`: the instructor's guide's chapter map and assignment sets;
- :mod:`booktools.grade` (and its ``grade_*`` modules): the grading command;
  :mod:`booktools.samples`: its sample submissions and example grade sheet;
- :mod:`booktools.status`: the status page's measurements (``python -m booktools.status``);
  :mod:`booktools.sweep`: the claims sweep, every chapter at many seeds
  (``python -m booktools.sweep``);
  :mod:`booktools.machine`: the machine they ran on and the other work that shared it;
- :mod:`booktools.pdf`, :mod:`booktools.release`: the PDF edition; the version and citation;
- :mod:`booktools.claims`, :mod:`booktools.results`: whose result is whose (the book's, the
  paper's) and the check that the prose credits each right;
- :mod:`booktools.config`: ``_config.yml`` and the book's GitHub address;
- :mod:`booktools.ext`: the book's Sphinx extensions.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # tools/booktools/__init__.py -> the checkout

if not (ROOT / "_toc.yml").exists():  # pragma: no cover  (installed without the book's sources)
    raise ImportError(
        f"booktools works from a checkout of the book (pip install -e .); no _toc.yml in {ROOT}"
    )

# Where the builds go (the HTML book, its executed chapters, the student edition, the logs):
# ``_build`` in the checkout, or ``<BOOKTOOLS_OUTPUT>/_build`` when that variable names a folder
# (jupyter-book's --path-output). The tests set it (tests/conftest.py), so that running them never
# replaces the book a reader built with ``python3 tasks.py book``.
OUTPUT = Path(os.environ.get("BOOKTOOLS_OUTPUT") or ROOT).resolve()
BUILD = OUTPUT / "_build"
