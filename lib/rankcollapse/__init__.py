"""rankcollapse: the shared library of the book *Rank collapse in self-attention networks*.

``import rankcollapse as rc`` and reach every module as an attribute (``rc.residual``,
``rc.san``, ``rc.paths``, ...). Modules load on first use, so importing the package costs only
what the core needs (torch); plotting loads matplotlib, and so on.

The mathematical core (``residual``, ``san``, ``paths``, ``theory``) depends on torch alone and
knows nothing of plotting, real models or exercises; ``centering`` solves the linear programme
of the exact residual with SciPy, loaded only when asked for. The layers on top (``presets``,
``plotting``, ``checks``, ``models``, ``tasks``, ``glue``) import the core, never the other way round.
``claims`` reads text, not tensors: the book's own results and the check that the chapters
credit them right.
"""

import importlib

__version__ = "0.1.0"

_MODULES = (
    "residual",
    "centering",
    "san",
    "paths",
    "theory",
    "lipschitz",
    "layernorm",
    "presets",
    "plotting",
    "checks",
    "models",
    "tasks",
    "book",
    "claims",
)

__all__ = list(_MODULES)


def __getattr__(name):
    if name in _MODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'rankcollapse' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_MODULES))
