"""Shared fixtures. The test suite runs from the repository root (see README)."""

from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def gen():
    """A fresh seeded generator per test (tests never touch the global RNG state)."""
    return torch.Generator().manual_seed(1234)


def random_tokens(gen, *shape, dtype=torch.float64):
    return torch.randn(*shape, generator=gen, dtype=dtype)
