"""The theory of rank collapse: the paper's bounds, and the book's, with what they are made of.

Dong et al. (2021; Theorem 2.2 as the reading note gives it, and a multi-head form reported as its
Theorem 2.3) bound the residual of a *pure* self-attention network
(no skip connections, no MLP, no LayerNorm, no biases) after ``L`` layers:

.. math::
    \\lVert \\operatorname{res}(X_L) \\rVert_{1,\\infty}
    \\le \\Big(\\frac{4 \\gamma \\beta H}{\\sqrt{d_{qk}}}\\Big)^{\\frac{3^L-1}{2}}
         \\lVert \\operatorname{res}(X) \\rVert_{1,\\infty}^{3^L},

where ``beta`` bounds :math:`\\lVert W_{QK,h}\\rVert_1 \\lVert W_{h}\\rVert_{1,\\infty}` in every
layer and head, and ``gamma`` is a term depending on the attention entries (the reading note's
words; the paper's definition of it was not available to this book). What this package computes is
the *book's* bound of that form (chapter "Pure attention collapses", section 2, "The collapse bound
with a computable constant (this book)"), with the book's own ``gamma``, derived from the proof of
the one-layer lemma:

.. math::
    \\gamma_l = \\frac{\\sinh(2\\varepsilon_l)}{2\\varepsilon_l}\\, e^{\\varepsilon_l}
                \\sqrt{\\max_h \\lVert P^{(l)}_h \\rVert_1}\\;\\nu_l,

with :math:`\\varepsilon_l = \\max_{h,i,j} |E_{h,ij}|`, :math:`E_h = R W_{QK,h}
R^\\top/\\sqrt{d_{qk}}`,
:math:`R = X_{l} - \\mathbf 1 x^\\top` the input of layer ``l`` in the chosen centre;
:math:`\\lVert P_h\\rVert_1` the largest column sum of head ``h``'s attention matrix (how much
attention the most-attended token receives; 1 for uniform attention); and :math:`\\nu_l \\ge 1`
a head-balance factor, exactly 1 for a single head. The lemma holds for any centre, so every
function takes ``center`` (``"mean"``, the default everywhere, :data:`DEFAULT_CENTER`, or a
centre function such as ``rc.centering.optimal_center``, the paper's) and uses it for every layer; a
bound in either centre also bounds the optimal residual, the smallest of all.

The core of the library: imports torch and the core modules only. One job per module:

- :mod:`.weights`: which networks the theorems cover, ``W_QK``, ``W_h`` and ``beta``;
- :mod:`.bound`: ``gamma``, the layer constants, the bound and the residual it bounds;
- :mod:`.compare`: the bound against the tracked residual (its gap; the residual relative to
  the tokens' size), how hard the attention is, and how far it is from rank one;
- :mod:`.skip`: the skip-connection networks that never lose residual, the book's upper bound
  with skips (which can only grow with depth), and the search for the smallest ratio (chapter
  "Skip connections");
- :mod:`.instances`: random instances of the theorems' hypotheses.

Every public name is re-exported here: ``rc.theory.collapse_bound`` and so on.
"""

from .bound import (
    BOUND_FORMS,
    DEFAULT_CENTER,
    collapse_bound,
    depth_profile,
    gamma,
    gamma_details,
    layer_constants,
    tracked_residual,
    unit_residual_tokens,
)
from .compare import (
    attention_hardness,
    attention_through_depth,
    bound_gaps,
    rank_one_distance,
    tracked_relative_residual,
)
from .instances import random_instances
from .skip import (
    PRESERVING_FAMILIES,
    preserving_input,
    preserving_san,
    search_smallest_ratio,
    skip_bound,
)
from .weights import beta, check_pure_attention, qk_matrices, value_matrices

__all__ = [
    "check_pure_attention",
    "qk_matrices",
    "value_matrices",
    "beta",
    "gamma",
    "gamma_details",
    "collapse_bound",
    "tracked_residual",
    "tracked_relative_residual",
    "bound_gaps",
    "attention_hardness",
    "rank_one_distance",
    "attention_through_depth",
    "layer_constants",
    "unit_residual_tokens",
    "depth_profile",
    "BOUND_FORMS",
    "DEFAULT_CENTER",
    "skip_bound",
    "PRESERVING_FAMILIES",
    "preserving_san",
    "preserving_input",
    "random_instances",
    "search_smallest_ratio",
]
