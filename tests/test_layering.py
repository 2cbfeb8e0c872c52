"""The library's layering: the mathematical core depends on torch alone, and the book's own
layer (``rankbook``) sits above the library (``rankcollapse``), never inside it.

Core modules may import torch, the standard library, numpy (for input conversion) and each
other; nothing in the core imports plotting, transformers, myst-nb or the exercise checks.
Checked twice: statically (the import statements) and at run time (a fresh interpreter that
imports the core must not have loaded the upper layers' dependencies). The rules between the
library, the book layer and the tooling (issue 31) are stated where they are checked, below.
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
        "bad = [m for m in ('matplotlib', 'transformers', 'myst_nb', 'scipy', 'rankbook.checks', "
        "'rankbook.plotting', 'rankcollapse.real') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_no_module_over_400_lines():
    """One job per module (issue 12): a file of the library or of the book layer past 400
    lines is split."""
    book = LIB.parents[1] / "book" / "rankbook"
    long = {
        p.relative_to(base.parent).as_posix(): n
        for base in (LIB, book)
        for p in base.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
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


SENTENCE_BUILDERS = {"glue", "verdict", "describe", "sentence", "phrase", "summary_text"}


def page_text_problems(path: Path) -> list[str]:
    """What makes the science module at ``path`` write page text: a glue/verdict/describe
    builder, or an import of the book's page layer (``rankbook``)."""
    tree = ast.parse(path.read_text())
    problems = [
        f"defines {n.name} (line {n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in SENTENCE_BUILDERS
    ]
    for module, level in imports_of(path):
        if level == 0 and module.split(".")[0] == "rankbook":
            problems.append(f"imports {module}")
    return problems


@pytest.mark.parametrize(
    "path", sorted(LIB.rglob("*.py")), ids=lambda p: p.relative_to(LIB).as_posix()
)
def test_the_science_library_returns_numbers_not_page_sentences(path):
    """Issue 26: the sentences that state results live in the chapters, next to the claims that
    check them. A module of the library defines no glue/verdict/describe builder and imports
    nothing of the book's page layer (``rankbook``)."""
    assert not page_text_problems(path), f"{path.relative_to(LIB)}: {page_text_problems(path)}"


def test_the_sentence_scan_finds_a_builder(tmp_path):
    """The scan can fail: a glue method, or an import of the page layer, is caught; numbers are
    not."""
    probe = tmp_path / "probe.py"
    cases = {
        "class S:\n    def glue(self):\n        return {}\n": True,
        "from rankbook.page import glue\n": True,
        "from .residual import UNDERFLOW_LOG10\n": False,
        "import rankbook.evidence\n": True,
        "def numbers():\n    return {'slope': 1.0}\n": False,
    }
    for text, caught in cases.items():
        probe.write_text(text)
        assert bool(page_text_problems(probe)) is caught, text


# ------------------------------------------------------------------ the book layer and the library
#
# Issue 31: the library (lib/rankcollapse: numbers and tensors) and the book's own layer
# (book/rankbook: a chapter's start, glued values, sizes, exercises, figures) are two packages;
# the tooling (tools/booktools) sits above both. Four rules, each read from the import
# statements of every file (the AST, anywhere in the file: a lazy import inside a function is a
# dependency too):
#
# 1. no module of rankcollapse imports rankbook or booktools (absolute, or relative imports
#    that climb out of the package);
# 2. rankbook imports rankcollapse and itself, never booktools (the tooling is above the book);
# 3. no import cycle among the modules of either package (``from . import x`` is an edge to the
#    submodule ``x`` when there is one, else to the package's ``__init__``; an import under
#    ``if TYPE_CHECKING:`` never runs and is no edge);
# 4. no private name crosses modules: ``from M import _name`` is refused unless ``_name`` is
#    itself a module or package (``from . import _validate``, ``from ._env import ...``); a
#    private function, class or constant (``from .measure import _helper``) is used only by the
#    module that defines it, whether ``M`` is a sibling or the package's own ``__init__``.
#    Aliasing a public name to a private one (``import checks as _checks``) and dunders
#    (``__all__``) are allowed. Rule 4 covers imports from first-party packages only.

BOOK = LIB.parents[1] / "book" / "rankbook"
TOOLS = LIB.parents[1] / "tools" / "booktools"
PACKAGE_DIRS = {"rankcollapse": LIB, "rankbook": BOOK, "booktools": TOOLS}


def module_of(path: Path) -> tuple[str, bool]:
    """``(dotted name, is a package)`` of a file of one of the first-party packages."""
    for top, base in PACKAGE_DIRS.items():
        if path.is_relative_to(base):
            parts = [top, *path.relative_to(base).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            return ".".join(parts[:-1] if is_package else parts), is_package
    raise ValueError(f"{path} is in none of {sorted(PACKAGE_DIRS)}")


def package_files(top: str) -> list[Path]:
    return sorted(PACKAGE_DIRS[top].rglob("*.py"))


def known_modules() -> set[str]:
    return {module_of(p)[0] for top in ("rankcollapse", "rankbook") for p in package_files(top)}


def typing_only_lines(tree) -> set[int]:
    """The lines of the imports under ``if TYPE_CHECKING:`` (they never run)."""
    return {
        inner.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
        if isinstance(inner, (ast.Import, ast.ImportFrom))
    }


def resolved_imports(text: str, module: str, is_package: bool, known: set[str]):
    """Every import of ``text`` (the source of ``module``) as ``(target, name, line)``: ``target``
    the dotted module imported from, resolved for relative imports (``None`` when a relative
    import climbs above the top package); ``name`` the name imported from it, or ``None`` for
    ``import target`` and for a ``from`` import of a submodule (then ``target`` is the
    submodule)."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 >= len(here):
                    yield None, None, node.lineno
                    continue
                base = ".".join(here[: len(here) - (node.level - 1)])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    yield sub, None, node.lineno
                else:
                    yield base, alias.name, node.lineno


def top_of(target: str | None) -> str | None:
    return target.split(".")[0] if target else None


def layer_problems(text: str, module: str, is_package: bool, known: set[str]) -> list[str]:
    """Rules 1 and 2 for one file: what ``module`` imports that its layer may not."""
    layer = module.split(".")[0]
    refused = {"rankcollapse": {"rankbook", "booktools"}, "rankbook": {"booktools"}}[layer]
    problems = []
    for target, _, line in resolved_imports(text, module, is_package, known):
        if target is None:
            problems.append(f"line {line}: a relative import above the package {layer}")
        elif top_of(target) in refused:
            problems.append(f"line {line}: imports {target}")
    return problems


def private_problems(text: str, module: str, is_package: bool, known: set[str]) -> list[str]:
    """Rule 4 for one file: every private name it imports from another first-party module."""
    return [
        f"line {line}: from {target} import {name}"
        for target, name, line in resolved_imports(text, module, is_package, known)
        if name is not None
        and name.startswith("_")
        and not (name.startswith("__") and name.endswith("__"))
        and top_of(target) in PACKAGE_DIRS
    ]


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the modules among ``sources`` it imports (``sources``: name -> (text,
    is_package)). An import under ``if TYPE_CHECKING:`` (an annotation's name) is no edge."""
    known = set(sources)
    graph = {}
    for module, (text, is_package) in sources.items():
        typing_only = typing_only_lines(ast.parse(text))
        graph[module] = {
            target
            for target, _, line in resolved_imports(text, module, is_package, known)
            if target in known and target != module and line not in typing_only
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as ``[a, b, ..., a]``, or ``None`` (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def sources_of(top: str) -> dict[str, tuple[str, bool]]:
    out = {}
    for path in package_files(top):
        module, is_package = module_of(path)
        out[module] = (path.read_text(), is_package)
    return out


def _ids(p: Path) -> str:
    return module_of(p)[0]


@pytest.mark.parametrize("path", package_files("rankcollapse"), ids=_ids)
def test_the_library_imports_nothing_of_the_book_or_its_tools(path):
    """Rule 1: ``rankcollapse`` knows nothing of ``rankbook`` or ``booktools``."""
    module, is_package = module_of(path)
    problems = layer_problems(path.read_text(), module, is_package, known_modules())
    assert not problems, f"{module}: {problems}"


@pytest.mark.parametrize("path", package_files("rankbook"), ids=_ids)
def test_the_book_layer_imports_the_library_never_the_tools(path):
    """Rule 2: ``rankbook`` may import ``rankcollapse`` (and itself), never ``booktools``."""
    module, is_package = module_of(path)
    problems = layer_problems(path.read_text(), module, is_package, known_modules())
    assert not problems, f"{module}: {problems}"


def test_the_book_layer_stands_on_the_library():
    """Rule 2's other half, so that the scan is not vacuous: rankbook does import rankcollapse."""
    known = known_modules()
    targets = {
        top_of(target)
        for path in package_files("rankbook")
        for target, _, _ in resolved_imports(path.read_text(), *module_of(path), known)
    }
    assert {"rankcollapse", "rankbook"} <= targets


def test_importing_every_library_module_loads_no_book_module():
    """Rule 1 at run time: a fresh interpreter that imports every module ``rankcollapse`` lists
    has loaded nothing of ``rankbook`` or ``booktools``."""
    code = (
        "import importlib, sys, rankcollapse as rc\n"
        "for name in rc._MODULES:\n"
        "    importlib.import_module('rankcollapse.' + name)\n"
        "print(','.join(m for m in sys.modules if m.split('.')[0] in ('rankbook', 'booktools')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("top", ["rankcollapse", "rankbook"])
def test_no_import_cycle(top):
    """Rule 3: the modules of each package import one another without a cycle."""
    cycle = find_cycle(import_graph(sources_of(top)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    "path", package_files("rankcollapse") + package_files("rankbook"), ids=_ids
)
def test_no_private_name_crosses_modules(path):
    """Rule 4: no ``from M import _name`` of a private function, class or constant."""
    module, is_package = module_of(path)
    problems = private_problems(path.read_text(), module, is_package, known_modules())
    assert not problems, f"{module}: {problems}"


def test_each_layering_rule_can_fail():
    """The scans catch what they are for: each rule is fed a snippet that breaks it."""
    known = {
        "rankcollapse",
        "rankcollapse.residual",
        "rankcollapse._validate",
        "rankcollapse.real",
        "rankcollapse.real.measure",
        "rankcollapse.real.convert",
        "rankbook",
        "rankbook.page",
    }
    lib = ("rankcollapse.real.measure", False)
    # rule 1: absolute and relative imports of the book or the tools, and climbing out
    assert layer_problems("import rankbook\n", *lib, known) == ["line 1: imports rankbook"]
    assert layer_problems("from rankbook.page import glue\n", *lib, known)
    assert layer_problems("def f():\n    from booktools import claims\n", *lib, known)
    assert layer_problems("from ... import x\n", *lib, known)
    assert not layer_problems("from ..residual import res\nfrom . import convert\n", *lib, known)
    # rule 2: the book may import the library, not the tools
    page = ("rankbook.page", False)
    assert not layer_problems("from rankcollapse.residual import res\n", *page, known)
    assert layer_problems("import booktools.claims\n", *page, known)
    # rule 3: a cycle through `from . import x` and a relative import is found and named
    graph = import_graph(
        {
            "rankcollapse.real": ("from . import measure\n", True),
            "rankcollapse.real.measure": ("from .convert import f\n", False),
            "rankcollapse.real.convert": ("from . import helper\n", False),
        }
    )
    assert find_cycle(graph) == [
        "rankcollapse.real",
        "rankcollapse.real.measure",
        "rankcollapse.real.convert",
        "rankcollapse.real",
    ]
    graph["rankcollapse.real.convert"] = set()
    assert find_cycle(graph) is None
    typing_only = (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from . import measure\n"
    )
    assert not import_graph({"rankcollapse.real.convert": (typing_only, False)})[
        "rankcollapse.real.convert"
    ]
    # rule 4: a private name from a sibling or from the package's __init__; a private module is
    # fine, and so are an alias and a dunder
    assert private_problems("from .convert import _helper\n", *lib, known) == [
        "line 1: from rankcollapse.real.convert import _helper"
    ]
    assert private_problems("from . import _cache\n", *lib, known)
    assert not private_problems("from .. import _validate\n", *lib, known)
    assert not private_problems("from .._validate import check_int as _ci\n", *lib, known)
    assert not private_problems("from .convert import __all__ as _all\n", *lib, known)
    assert not private_problems("from torch import _C\n", *lib, known)
