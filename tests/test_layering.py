"""The library's layering: the mathematical core depends on torch alone.

Core modules may import torch, the standard library, numpy (for input conversion) and each
other; nothing in the core imports plotting, transformers, myst-nb or the exercise checks.
Checked twice: statically (the import statements) and at run time (a fresh interpreter that
imports the core must not have loaded the upper layers' dependencies).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib" / "rankcollapse"
CORE = [
    "_validate",
    "ops",
    "residual",
    "san",
    "san_config",
    "paths",
    "theory",
]  # a name is a module or a subpackage


def core_files():
    """Every file of the core: ``name.py``, or each file of the subpackage ``name/``."""
    for name in CORE:
        if (LIB / name).is_dir():
            yield from sorted((LIB / name).glob("*.py"))
        else:
            yield LIB / f"{name}.py"


ALLOWED_EXTERNAL = {
    "torch",
    "numpy",
    "math",
    "numbers",
    "itertools",
    "dataclasses",
    "typing",
    "__future__",
    "functools",
    "collections",
}


def imports_of(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, 0
        elif isinstance(node, ast.ImportFrom):
            yield (node.module or ""), node.level


def test_every_core_name_has_its_files():
    assert all(path.exists() for path in core_files())
    assert (LIB / "theory" / "__init__.py").exists() and len(
        list((LIB / "theory").glob("*.py"))
    ) > 1


@pytest.mark.parametrize("path", list(core_files()), ids=lambda p: p.relative_to(LIB).as_posix())
def test_core_imports_only_core_and_torch(path):
    name = path.relative_to(LIB).with_suffix("").as_posix()
    depth = len(path.relative_to(LIB).parts) - 1  # 0 for lib/rankcollapse/x.py, 1 inside theory/
    for module, level in imports_of(path):
        if level:  # relative import inside the package
            if level <= depth:  # a sibling inside the same core subpackage
                continue
            top = module.split(".")[0]
            assert top in CORE, f"core module {name} imports .{module}, which is not core"
        else:
            assert module.split(".")[0] in ALLOWED_EXTERNAL, f"core module {name} imports {module}"


def test_importing_the_core_loads_no_upper_layer():
    code = (
        "import sys, rankcollapse as rc\n"
        "rc.residual, rc.san, rc.paths, rc.theory\n"
        "bad = [m for m in ('matplotlib', 'transformers', 'myst_nb', 'scipy', 'rankcollapse.checks', "
        "'rankcollapse.plotting', 'rankcollapse.real') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_no_module_over_400_lines():
    """One job per module (issue 12): a file past 400 lines is split. rc.models is being
    converted into rc.real by its owner and is exempt until then."""
    long = {
        p.relative_to(LIB).as_posix(): n
        for p in LIB.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400 and p.name != "models.py"
    }
    assert not long, long


def test_shared_forward_passes(monkeypatch):
    """Functions that answer from one forward pass run it once (issue 12)."""
    import torch

    import rankcollapse as rc

    calls = []
    forward = rc.san.SAN.forward
    monkeypatch.setattr(rc.san.SAN, "forward", lambda self, X: calls.append(1) or forward(self, X))
    X = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    cfg = rc.san.SANConfig(n_layers=3, n_heads=2, d_model=8)
    pure, skip = rc.san.SAN(cfg, seed=0), rc.san.SAN(cfg.replace(skip=True), seed=0)
    post = rc.san.SAN(cfg.replace(layernorm="post"), seed=0)
    for call in (
        lambda: rc.layernorm.rewriting_discrepancy(post, X, 1),
        lambda: rc.theory.depth_profile(pure, X),
        lambda: rc.paths.length_profile(skip, X),
        lambda: rc.paths.decomposition_error(skip, X, with_enumeration=True),
    ):
        calls.clear()
        call()
        assert len(calls) == 1


# The book's own modules inside the package (issue 31 moves them out): they may write sentences.
BOOK_MODULES = {"book.py", "evidence.py", "presets.py", "claims.py", "explorer.py"}
BOOK_PACKAGES = {"checks", "plotting"}
SENTENCE_BUILDERS = {"glue", "verdict", "describe", "sentence", "phrase", "summary_text"}


def science_files():
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB)
        if (len(rel.parts) == 1 and rel.name in BOOK_MODULES) or rel.parts[0] in BOOK_PACKAGES:
            continue
        yield path


def page_text_problems(path: Path, rel: Path) -> list[str]:
    """What makes the science module at ``path`` (``rel`` inside the package) write page text:
    a glue/verdict/describe builder, or an import of the book's page layer."""
    tree = ast.parse(path.read_text())
    problems = [
        f"defines {n.name} (line {n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in SENTENCE_BUILDERS
    ]
    depth = len(rel.parts) - 1
    for module, level in imports_of(path):
        if (level > depth and module.split(".")[0] in {"book", "evidence"}) or (
            level == 0 and module.startswith(("rankcollapse.book", "rankcollapse.evidence"))
        ):
            problems.append(f"imports {'.' * level}{module}")
    return problems


@pytest.mark.parametrize("path", list(science_files()), ids=lambda p: p.relative_to(LIB).as_posix())
def test_the_science_library_returns_numbers_not_page_sentences(path):
    """Issue 26: the sentences that state results live in the chapters, next to the claims that
    check them. A science module defines no glue/verdict/describe builder and imports nothing of
    the book's page layer (``rankcollapse.book``, ``rankcollapse.evidence``)."""
    rel = path.relative_to(LIB)
    assert not page_text_problems(path, rel), f"{rel}: {page_text_problems(path, rel)}"


def test_the_sentence_scan_finds_a_builder(tmp_path):
    """The scan can fail: a glue method, or an import of the page layer, is caught; numbers are not."""
    probe = tmp_path / "probe.py"
    cases = {
        "class S:\n    def glue(self):\n        return {}\n": True,
        "from .book import glue\n": True,
        "from .residual import UNDERFLOW_LOG10\n": False,
        "import rankcollapse.book\n": True,
        "def numbers():\n    return {'slope': 1.0}\n": False,
    }
    for text, caught in cases.items():
        probe.write_text(text)
        assert bool(page_text_problems(probe, Path("probe.py"))) is caught, text
    probe.write_text("from ..evidence import Claim\n")
    assert page_text_problems(probe, Path("toy") / "probe.py") == ["imports ..evidence"]
