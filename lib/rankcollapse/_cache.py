"""Where the library keeps what is expensive to compute, keyed by the code that computed it.

The folder is ``~/.cache/rankcollapse/<kind>/``, or ``$RANKCOLLAPSE_CACHE/<kind>/`` when that
environment variable is set (:func:`cache_dir`); delete it to clear the cache. A cached result's
name holds a hash of its settings and of the code that decides it (:func:`code_version`), so a
change to that code computes it again. Kinds: ``"toy"`` (the toy tasks' trained checkpoints,
:mod:`rankcollapse.toy.train`) and ``"depth"`` (the depth study's runs of real architectures,
:mod:`rankcollapse.real.depth_cache`).
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

__all__ = ["CACHE_VAR", "cache_dir", "code_version"]

CACHE_VAR = "RANKCOLLAPSE_CACHE"


def cache_dir(kind: str) -> Path:
    """``$RANKCOLLAPSE_CACHE/<kind>`` if the variable is set, else ``~/.cache/rankcollapse/<kind>``
    (not created here)."""
    if not isinstance(kind, str) or not kind.isidentifier():
        raise ValueError(f"kind must be a folder name such as 'toy', got {kind!r}")
    root = os.environ.get(CACHE_VAR, "").strip()
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "rankcollapse") / kind


def code_version(*paths: Path) -> str:
    """A hash of the code in ``paths`` (Python files): of each file's syntax tree without its
    docstrings, so that an edit to a comment, a docstring or the layout keeps what is cached,
    and any change to what the code does computes it again."""
    if not paths:
        raise ValueError("code_version needs at least one path (the Python files to hash)")
    digest = hashlib.sha256()
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"code_version: paths holds {str(path)!r}, which is not a file")
        tree = ast.parse(Path(path).read_text())
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                body[:1] = [] if len(body) > 1 else [ast.Pass()]
        digest.update(ast.dump(tree).encode())
    return digest.hexdigest()[:12]
