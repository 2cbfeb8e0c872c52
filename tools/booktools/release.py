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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path.name}: no such file ({path})") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{path.name}: cannot be read ({type(err).__name__}: {err})") from None


def project_version(root: Path = ROOT) -> str:
    """The book's version: ``[project] version`` in ``pyproject.toml``."""
    try:
        version = tomllib.loads(_read(root / "pyproject.toml"))["project"]["version"]
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"pyproject.toml is not valid TOML: {err}") from None
    except (KeyError, TypeError):
        raise ValueError("pyproject.toml has no [project] version") from None
    return str(version)


def citation(path: Path = CITATION) -> dict:
    """``CITATION.cff`` read (a clear error naming the file and the line for invalid YAML)."""
    import yaml

    try:
        data = yaml.safe_load(_read(path))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValueError(f"{path.name} is not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} holds a {type(data).__name__}, not a CITATION.cff mapping")
    return data


def editions(path: Path = CHANGELOG) -> list[tuple[str, str]]:
    """``(version, date)`` of every edition in ``CHANGELOG.md``, newest first."""
    return [(m["version"], m["date"]) for m in EDITION.finditer(_read(path))]


def notes(version: str, path: Path = CHANGELOG) -> str:
    """The CHANGELOG entry of ``version`` (its text below its heading, up to the next edition)."""
    text = _read(path)
    heads = list(EDITION.finditer(text))
    for i, m in enumerate(heads):
        if m["version"] == version:
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            return text[m.end() : end].split("\n", 1)[-1].strip()
    raise ValueError(
        f"{path.name} has no entry for version {version} (a heading '## {version} (YYYY-MM-DD): "
        "title')"
    )


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


def main(argv=None, root: Path = ROOT) -> int:
    """The command; ``root``: the repository whose files it reads (the tests give another)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--check", action="store_true", help="versions agree and CITATION.cff validates"
    )
    what.add_argument("--version", action="store_true", help="print the book's version")
    what.add_argument("--notes", action="store_true", help="print this version's CHANGELOG entry")
    args = ap.parse_args(argv)
    try:
        version = project_version(root)
        if args.version:
            print(version)
            return 0
        if args.notes:
            print(notes(version, root / "CHANGELOG.md"))
            return 0
        problems = version_problems(root)
    except ValueError as err:
        print(f"release: error: {err}", file=sys.stderr)
        return 2
    result = validate_citation(root / "CITATION.cff")
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
