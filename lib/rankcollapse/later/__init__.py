"""Later results on rank collapse, each reproduced small with the book's core (chapter "After the
paper").

One module per result, each with the measurement a section of the chapter draws, returned as
numbers and data: ``gradients`` (Noci et al. 2022), ``masks`` (Wu et al. 2024), ``lam`` (Joseph et
al.), ``phases`` (Giorlandino and Goldt 2025), ``particles`` (Geshkovski et al.). The sentences,
the verdicts on each paper's claim and the conditions that decide them are the chapter's.
Submodules load on first use (``rc.later.gradients``), as the package's own modules do.
"""

import importlib
import pkgutil


def _submodules():
    return tuple(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def __getattr__(name):
    if name in _submodules():
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'rankcollapse.later' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_submodules()))
