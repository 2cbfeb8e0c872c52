"""Later results on rank collapse, each reproduced small with the book's core (chapter "After the paper").

One module per result, each with the measurement a section of the chapter draws and a ``verdict``:
``gradients`` (Noci et al. 2022), ``masks`` (Wu et al. 2024), ``lam`` (Joseph et al.), ``phases``
(Giorlandino and Goldt 2025), ``particles`` (Geshkovski et al.); ``verdicts`` collects the closing table.
Modules load on first use (``rc.later.lam``), as the package's own modules do.
"""

import importlib
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def __getattr__(name):
    if not name.startswith("_") and (_HERE / f"{name}.py").exists():
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'rankcollapse.later' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {p.stem for p in _HERE.glob("*.py") if not p.stem.startswith("_")})
