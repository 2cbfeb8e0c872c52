"""The depth study's runs cached on disk: one file per model, seed and setting, keyed by the code.

A run of :func:`rankcollapse.real.depth.depth_run` at a published width takes seconds to a
minute; the chapter "Skip connections at depth" makes eighteen. :func:`cached_run` returns the
cached :class:`~rankcollapse.real.depth.DepthRun` of the same settings and the same code (a hash
of every module of :mod:`rankcollapse.real` and of the core it runs on, with torch's and
transformers' versions), or computes it and stores it under ``cache_dir("depth")``
(``~/.cache/rankcollapse/depth/``, or ``$RANKCOLLAPSE_CACHE/depth/``; :mod:`rankcollapse._cache`).
A file holds numbers only (numpy's ``.npz``, no pickle).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from .._cache import cache_dir, code_version
from .depth import DepthRun

__all__ = ["DEPTH_FILES", "depth_code_hash", "run_path", "cached_run"]

_HERE = Path(__file__).parent
#: the code that decides a run: every module of rankcollapse.real (converters included) and the
#: core modules the network, the residual and the constants come from
DEPTH_FILES = (
    *sorted(_HERE.rglob("*.py")),
    *(_HERE.parent / f for f in ("san.py", "san_config.py", "ops.py", "residual.py")),
    _HERE.parent / "lower_bound_theorem.py",
    _HERE.parent / "_validate.py",
)


@functools.cache
def depth_code_hash() -> str:
    """:func:`~rankcollapse._cache.code_version` of :data:`DEPTH_FILES` with torch's and
    transformers' versions (computed once)."""
    import torch
    import transformers

    return hashlib.sha256(
        f"{code_version(*DEPTH_FILES)} {torch.__version__} {transformers.__version__}".encode()
    ).hexdigest()[:16]


def run_path(settings: dict) -> Path:
    """Where the run of ``settings`` (a JSON-able mapping of every argument that decides it) is
    cached."""
    if not isinstance(settings, dict):
        raise ValueError(f"settings must be a dict of the run's arguments, got {settings!r}")
    blob = json.dumps({"settings": settings, "code": depth_code_hash()}, sort_keys=True)
    key = hashlib.sha256(blob.encode()).hexdigest()[:20]
    return cache_dir("depth") / f"{settings.get('name', 'run')}-{key}.npz"


def _save(run: DepthRun, path: Path) -> None:
    arrays = {}
    for kind, curves in (
        ("curve", run.curves),
        ("resnorm", run.residual_norms),
        ("meannorm", run.mean_norms),
    ):
        for key, curve in curves.items():
            arrays[f"{kind}:" + (f"{key[0]}@{key[1]}" if isinstance(key, tuple) else key)] = curve
    for name, values in run.constants.items():
        arrays["const:" + name] = values
    meta = {
        k: getattr(run, k)
        for k in ("name", "family", "seed", "n_layers", "extension", "causal", "layernorm")
    }
    meta.update(d_model=run.d_model, n_heads=run.n_heads, factors=list(run.factors))
    meta["dtypes"] = run.dtypes
    meta["underflow"] = [
        [*(k if isinstance(k, tuple) else (k,)), v] for k, v in run.underflow.items()
    ]
    arrays["meta"] = np.array(json.dumps(meta))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:  # written whole, then renamed: a reader never sees half a file
        np.savez(f, **arrays)
    os.replace(tmp, path)


def _load(path: Path) -> DepthRun:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        kinds = {"curve": {}, "resnorm": {}, "meannorm": {}}
        constants = {}
        for name in z.files:
            kind, _, key = name.partition(":")
            if kind in kinds:
                if "@" in key:
                    variant, factor = key.split("@")
                    key = (variant, int(factor))
                kinds[kind][key] = z[name]
            elif name.startswith("const:"):
                constants[name[len("const:") :]] = z[name]
    factors = tuple(meta.pop("factors"))
    dtypes = meta.pop("dtypes")
    underflow = {(k[0] if len(k) == 1 else tuple(k)): v for *k, v in meta.pop("underflow")}
    return DepthRun(
        factors=factors,
        curves=kinds["curve"],
        constants=constants,
        dtypes=dtypes,
        residual_norms=kinds["resnorm"],
        mean_norms=kinds["meannorm"],
        underflow=underflow,
        **meta,
    )


def cached_run(settings: dict, compute) -> tuple[DepthRun, bool]:
    """``(run, from_cache)``: the cached run of ``settings``, or ``compute()``'s, stored for next
    time. A cached file that cannot be read is computed again and replaced."""
    if not isinstance(settings, dict) or "name" not in settings or "seed" not in settings:
        raise ValueError("settings must be a dict with at least 'name' and 'seed'")
    path = run_path(settings)
    if path.is_file():
        try:
            return _load(path), True
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged file: computed again below
    run = compute()
    _save(run, path)
    return run, False
