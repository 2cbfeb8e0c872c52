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
            if top == "centering" and name == "residual":
                continue  # the optimal centre's LP, loaded lazily inside residual.center_of
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
