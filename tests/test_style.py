"""The code's style is ruff's (pinned in requirements.txt, configured in pyproject.toml): CI fails
on a lint violation or on a file ruff would format differently."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed: `python3 tasks.py install` installs the pinned version")
    return subprocess.run([exe, *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint_passes():
    out = ruff("check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format_is_applied():
    out = ruff("format", "--check", "--no-cache", ".")
    assert out.returncode == 0, out.stdout + out.stderr
