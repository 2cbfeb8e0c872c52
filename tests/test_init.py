"""``rankcollapse.__init__`` lists exactly the modules that exist, and each of them imports."""

import importlib
from pathlib import Path

import pytest

import rankcollapse as rc

LIB = Path(rc.__file__).resolve().parent


def module_names():
    """Every public module of the package: ``x.py`` and subpackages ``x/__init__.py`` (not
    ``_x``)."""
    files = {p.stem for p in LIB.glob("*.py") if not p.stem.startswith("_")}
    packages = {
        p.parent.name for p in LIB.glob("*/__init__.py") if not p.parent.name.startswith("_")
    }
    return files | packages


def test_every_module_is_listed_and_nothing_else():
    assert set(rc._MODULES) == module_names()
    assert len(rc._MODULES) == len(set(rc._MODULES))


@pytest.mark.parametrize("name", rc._MODULES)
def test_every_listed_name_imports(name):
    module = getattr(rc, name)
    assert module is importlib.import_module(f"rankcollapse.{name}")
    assert name in dir(rc)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="tasks"):
        rc.tasks  # noqa: B018  (listed once, never written)
