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
CORE = ["_validate", "residual", "san", "paths", "theory"]  # a name is a module or a subpackage


def core_files():
    """Every file of the core: ``name.py``, or each file of the subpackage ``name/``."""
    for name in CORE:
        if (LIB / name).is_dir():
            yield from sorted((LIB / name).glob("*.py"))
        else:
            yield LIB / f"{name}.py"
ALLOWED_EXTERNAL = {"torch", "numpy", "math", "numbers", "itertools", "dataclasses", "typing", "__future__", "functools", "collections"}


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
    assert (LIB / "theory" / "__init__.py").exists() and len(list((LIB / "theory").glob("*.py"))) > 1


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
        "'rankcollapse.plotting', 'rankcollapse.models') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_no_module_over_400_lines():
    """One job per module (issue 12): a file past 400 lines is split. rc.models is being
    converted into rc.real by its owner and is exempt until then."""
    long = {p.relative_to(LIB).as_posix(): n for p in LIB.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400 and p.name != "models.py"}
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
    for call in (lambda: rc.layernorm.rewriting_discrepancy(post, X, 1),
                 lambda: rc.theory.depth_profile(pure, X),
                 lambda: rc.paths.length_profile(skip, X),
                 lambda: rc.paths.decomposition_error(skip, X, with_enumeration=True)):
        calls.clear()
        call()
        assert len(calls) == 1
