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

    Returns the build folder (``_build``); the build fails on any warning or cell error. A
    session fixture runs once: when it fails, pytest reports the stored failure to every later
    test that asks for it, without building again.
    """
    import tasks

    result = tasks.run_build("fast", capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stdout + result.stderr).splitlines()
        problems = [line for line in lines if "WARNING" in line or "ERROR" in line or "Error" in line]
        pytest.fail("jupyter-book build failed:\n" + "\n".join(problems[-30:] + lines[-15:]))
    return ROOT / "_build"
