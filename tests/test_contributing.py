"""CONTRIBUTING.md's architecture table names modules that exist."""

import re

import pytest

from booktools import ROOT

LIB = ROOT / "lib" / "rankcollapse"
BOOK = ROOT / "book" / "rankbook"
HOME = {"core": LIB, "above": LIB, "book": BOOK}  # where a layer's modules live


def _exists(parts, home=LIB) -> bool:
    path = home.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_every_module_in_the_architecture_table_exists():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    table = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    rows = [
        line.split("|")
        for line in table.splitlines()
        if line.startswith(("| core", "| above", "| book"))
    ]
    assert len(rows) >= 10
    named = 0
    for row in rows:
        modules = re.findall(r"`([a-z_]+)`", row[2])
        home = HOME[row[1].strip()]
        for m in modules:
            assert _exists([m], home), (
                f"CONTRIBUTING.md names a module {m!r} that {home.relative_to(ROOT)} does not have"
            )
            named += 1
        # a package's row names its submodules in the third column: each must exist
        if (
            len(modules) == 1
            and (LIB / modules[0]).is_dir()
            and modules[0] in {"real", "toy", "theory"}
        ):
            for sub in re.findall(r"`([a-z_]+)`", row[3]):
                assert _exists([modules[0], sub]), f"{modules[0]}.{sub} is named but missing"
                named += 1
    assert named >= 30


@pytest.mark.parametrize("layers, home", [("core|above", LIB), ("book", BOOK)])
def test_the_table_lists_every_module(layers, home):
    text = (
        (ROOT / "CONTRIBUTING.md").read_text().split("## Architecture", 1)[1].split("\n## ", 1)[0]
    )
    named = set(re.findall(rf"\| (?:{layers}) \| ([^|]*)\|", text))
    names = {m for cell in named for m in re.findall(r"`([a-z_]+)`", cell)}
    actual = {p.stem for p in home.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in home.iterdir() if (p / "__init__.py").is_file()
    }
    assert actual - names == set(), (
        f"modules the architecture table does not name: {sorted(actual - names)}"
    )


def test_the_fast_loop_marks_the_library_tests_and_nothing_else():
    """CONTRIBUTING's fast loop (`-m library`) is the tests of the science library: a file is in
    it when it mirrors a module of lib/rankcollapse, and the book's, the tooling's and the
    chapters' tests are not."""
    from conftest import mirrors_library

    assert all(map(mirrors_library, ["test_san", "test_real_hub", "test_later_lam", "test_toy"]))
    assert not any(map(mirrors_library, ["test_checks", "test_grade", "test_chapters", "test_pdf"]))
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert 'python3 -m pytest -m "library and not slow"' in text
