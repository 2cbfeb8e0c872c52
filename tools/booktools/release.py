"""The book's release: its version where it is written (``pyproject.toml``, ``CITATION.cff``,
``CHANGELOG.md``), the citation file validated by ``cffconvert``, and the release notes.

``cffconvert`` (the Citation File Format's own validator) pins an old ``jsonschema`` (< 4) that the
book's environment cannot take (Jupyter's packages need a newer one), so it never enters it: it is
installed in a throwaway virtual environment of its own, ``_build/tools/cffconvert/`` (made on
first use, about 15 s; delete it at will), and run from there.

    python -m booktools.release --check   # the three versions agree, CITATION.cff validates
    python -m booktools.release --version # print the version (the publishing workflow's tag)
    python -m booktools.release --notes   # print this version's CHANGELOG entry (the release notes)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

from . import BUILD, ROOT

CFFCONVERT = "cffconvert==2.0.0"  # the validator, pinned; its dependencies are its own
CFF_VENV = BUILD / "tools" / "cffconvert"
CITATION = ROOT / "CITATION.cff"
CHANGELOG = ROOT / "CHANGELOG.md"
# a CHANGELOG.md edition heading: "## 0.1.0 (2026-12-05): title"
EDITION = re.compile(r"^## (?P<version>\d+\.\d+\.\d+) \((?P<date>\d{4}-\d{2}-\d{2})\)", re.M)


def project_version(root: Path = ROOT) -> str:
    """The book's version: ``[project] version`` in ``pyproject.toml``."""
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]


def citation(path: Path = CITATION) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())


def editions(path: Path = CHANGELOG) -> list[tuple[str, str]]:
    """``(version, date)`` of every edition in ``CHANGELOG.md``, newest first."""
    return [(m["version"], m["date"]) for m in EDITION.finditer(path.read_text())]


def notes(version: str, path: Path = CHANGELOG) -> str:
    """The CHANGELOG entry of ``version`` (its text below its heading, up to the next edition)."""
    text = path.read_text()
    heads = list(EDITION.finditer(text))
    for i, m in enumerate(heads):
        if m["version"] == version:
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            return text[m.end() : end].split("\n", 1)[-1].strip()
    raise ValueError(f"CHANGELOG.md has no entry for version {version}")


def version_problems(root: Path = ROOT) -> list[str]:
    """Where the version or the release date disagree, as sentences (empty: they agree)."""
    version = project_version(root)
    cff = citation(root / "CITATION.cff")
    listed = editions(root / "CHANGELOG.md")
    problems = []
    if str(cff.get("version")) != version:
        problems.append(f"CITATION.cff says version {cff.get('version')}, pyproject.toml {version}")
    if not listed or listed[0][0] != version:
        problems.append(
            f"CHANGELOG.md's newest edition is {listed[0][0] if listed else 'missing'}, not "
            f"{version}"
        )
    elif str(cff.get("date-released")) != listed[0][1]:
        problems.append(
            f"CITATION.cff's date-released {cff.get('date-released')} is not CHANGELOG.md's "
            f"{listed[0][1]} for {version}"
        )
    return problems


def cffconvert(where: Path = CFF_VENV, out=None) -> Path:
    """The ``cffconvert`` command of the throwaway environment ``where``, installed on first use."""
    out = out or sys.stdout
    exe = where / "bin" / "cffconvert"
    if not exe.exists():
        out.write(
            f"installing {CFFCONVERT} into its own environment {where} (not the book's) ...\n"
        )
        out.flush()
        venv.EnvBuilder(with_pip=True, clear=True).create(where)
        subprocess.run(
            [
                str(where / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                CFFCONVERT,
            ],
            check=True,
        )
    return exe


def validate_citation(path: Path = CITATION, where: Path = CFF_VENV) -> subprocess.CompletedProcess:
    """``cffconvert --validate`` on ``path`` (exit code 0: valid), its output captured."""
    return subprocess.run(
        [str(cffconvert(where)), "--validate", "--infile", str(path)],
        capture_output=True,
        text=True,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--check", action="store_true", help="versions agree and CITATION.cff validates"
    )
    what.add_argument("--version", action="store_true", help="print the book's version")
    what.add_argument("--notes", action="store_true", help="print this version's CHANGELOG entry")
    args = ap.parse_args(argv)
    version = project_version()
    if args.version:
        print(version)
        return 0
    if args.notes:
        print(notes(version))
        return 0
    problems = version_problems()
    result = validate_citation()
    if result.returncode:
        problems.append("cffconvert --validate: " + (result.stdout + result.stderr).strip())
    for p in problems:
        print("FAILED:", p)
    if not problems:
        print(
            f"version {version}: pyproject.toml, CITATION.cff and CHANGELOG.md agree; "
            f"CITATION.cff is valid ({CFFCONVERT})"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
