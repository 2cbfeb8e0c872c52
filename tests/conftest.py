"""Shared fixtures. The test suite runs from the repository root (see README)."""

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tasks.py: the build command the README uses


@pytest.fixture
def gen():
    """A fresh seeded generator per test (tests never touch the global RNG state)."""
    return torch.Generator().manual_seed(1234)


def random_tokens(gen, *shape, dtype=torch.float64):
    return torch.randn(*shape, generator=gen, dtype=dtype)


@pytest.fixture(scope="session")
def built_book():
    """The whole book built once per test session, in fast mode, from a clean _build.

    Returns the build folder (``_build``); the build fails on any warning or cell error.
    """
    import os
    import subprocess

    import tasks

    if "result" not in _BUILD:  # build once, even when it fails (pytest retries failing fixtures)
        tasks.clean_build()
        env = {**os.environ, "RANKCOLLAPSE_MODE": "fast"}
        _BUILD["result"] = subprocess.run(tasks.build_command(), cwd=ROOT, env=env, capture_output=True, text=True)
    result = _BUILD["result"]
    if result.returncode != 0:
        lines = (result.stdout + result.stderr).splitlines()
        problems = [line for line in lines if "WARNING" in line or "ERROR" in line or "Error" in line]
        pytest.fail("jupyter-book build failed:\n" + "\n".join(problems[-30:] + lines[-15:]))
    return ROOT / "_build"


_BUILD: dict = {}
