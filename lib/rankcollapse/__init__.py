"""rankcollapse: the shared library of the book *Rank collapse in self-attention networks*.

``import rankcollapse as rc`` and reach every module as an attribute (``rc.residual``,
``rc.san``, ``rc.paths``, ...). Modules load on first use, so importing the package costs only
what the core needs (torch); ``real`` loads transformers, ``centering`` SciPy, and so on.

The mathematical core (``residual``, ``san`` with ``san_config`` and ``ops``, ``paths``, ``theory``)
depends on torch alone and knows nothing of plotting, real models or exercises. The layers on top
import the core, never the other way round: ``centering`` (the exact centre of the residual, a
linear programme solved with SciPy; pass ``center=rc.centering.optimal_center`` to the core's
residuals), ``lipschitz`` (with ``mlp_price``), ``layernorm``, ``stats`` (small statistics of
curves), ``bound_study`` and ``bound_tightness`` (the collapse bound measured on random networks, as
result objects), ``cubic_rate`` (the cubic rate measured: one layer's two powers, the rate through
depth), ``lower_bound`` and ``lower_bound_theorem`` (the book's lower bound on the residual with
skips, and networks that reach it), ``lower_bound_preln`` (the bound with LayerNorm before each
branch), ``lower_bound_search`` (the adversarial
search against it), ``real`` (real transformers converted into the core's network), ``toy``
(the paper's toy tasks), ``later`` (results after the paper) and ``corpus`` (the book's texts).
``tests/test_init.py`` checks that this list is what exists.

The book's own layer (a chapter's start, glued values, sizes, exercises, figures) is the
package ``rankbook`` beside this one: it imports the library, never the other way round.
"""

import importlib

__version__ = "0.1.0"

_MODULES = (
    "residual",
    "centering",
    "san",
    "san_config",
    "ops",
    "paths",
    "theory",
    "lipschitz",
    "mlp_price",
    "layernorm",
    "stats",
    "bound_study",
    "bound_tightness",
    "cubic_rate",
    "lower_bound",
    "lower_bound_theorem",
    "lower_bound_search",
    "lower_bound_preln",
    "real",
    "toy",
    "later",
    "corpus",
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
