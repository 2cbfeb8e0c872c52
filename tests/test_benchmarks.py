"""The benchmark scripts run: each in its quick mode (small sizes, one repeat), checking that it
completes and that the methods it compares agree. Never its times (they depend on the machine).

``python3 benchmarks/paths.py`` once stopped on ``enumerate_paths``'s memory guard with nothing
running it; these tests are what keeps the scripts from breaking unseen.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_quick(script: str, tmp_path: Path, timeout: float = 300) -> dict:
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (
        f"{script} --quick failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )
    return json.loads(out.read_text())


def test_paths_quick(tmp_path):
    figures = run_quick("paths.py", tmp_path)
    assert figures["quick"] is True
    assert figures["paths"] == 27  # every path of L=3, H=2 with skips: 3**3
    assert figures["agreement"] < 1e-4  # enumeration, term by term and the dynamic programme


def test_toy_quick(tmp_path):
    figures = run_quick("toy.py", tmp_path)
    assert (
        figures["quick"] is True and figures["agree"] is True
    )  # all at once == one by one, exactly
    assert figures["paths"] == 27


def test_grade_quick(tmp_path):
    figures = run_quick("grade.py", tmp_path, timeout=600)
    assert figures["submissions"] == 1 and sum(figures["runs"].values()) == 1


def test_full_enumeration_fits_the_benchmark_guard():
    """The full benchmark's enumeration (L=6, H=3, 128 x 768 float32) is admitted by the guard it
    passes."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import paths as bench
    finally:
        sys.path.pop(0)
    import torch

    import rankcollapse as rc
    from rankcollapse.paths.decompose import _check_enumeration

    cfg = rc.san.SANConfig(n_layers=6, n_heads=3, d_model=768, skip=True, dtype=torch.float32)
    model = rc.san.SAN(cfg, seed=0)
    X = torch.zeros(128, 768)
    with pytest.raises(
        ValueError, match="max_bytes"
    ):  # the default guard refuses it (1.5 GiB > 1 GiB)
        _check_enumeration(model, X, rc.paths.MAX_PATHS, rc.paths.decompose.MAX_BYTES)
    _check_enumeration(
        model, X, rc.paths.MAX_PATHS, bench.ENUMERATION_BYTES
    )  # the benchmark's is admitted
