"""The path decomposition of a self-attention network (Dong et al. 2021; chapter "The path
decomposition").

Hold every attention matrix ``P_h`` at the value it takes in the forward pass. The network is
then *linear* in its input, and expanding the product of layers gives

.. math::  \\mathrm{SAN}(X) = \\sum_{\\text{paths } p} P_p\\, X\\, W_p \\;+\\; \\text{constant},

where a path picks, in each layer, one head ``h`` (or, with skip connections, the skip,
written ``None`` here), ``P_p`` is the product of the chosen attention matrices (later layers on
the left) and ``W_p`` the product of the chosen ``W_{V,h} W_{O,h}`` (earlier layers on the
left). The constant collects the biases (``1 b^T`` in the paper). A path's *length* is the
number of heads it passes through; with skips there are ``C(L, l) H^l`` paths of length ``l``.

What is handled exactly: skip connections, biases (returned as a separate constant term when
``with_constant=True``) and LayerNorm, with each token's standard deviation frozen at its
forward-pass value (then LayerNorm is ``Y -> S^{-1} Y C G + 1 shift^T``: a left scaling by
the per-token ``1/sigma``, right multiplications by the centring ``C = I - 11^T/d`` and the
gain ``G``). With LayerNorm the left factors are ``S^{-1} P`` rather than ``P``, which are no
longer row-stochastic; the identity still holds exactly. MLPs are refused: an MLP is not
linear, so the network has no path decomposition.

Three modules: :mod:`.counting` (how many paths, of which lengths), :mod:`.frozen` (a layer
with frozen attention, an affine map) and :mod:`.decompose` (the decomposition, by length or
path by path). Book: chapter "The path decomposition".
"""

from .counting import (
    MAX_COUNT_LAYERS,
    MAX_LENGTH_DISTRIBUTION,
    MAX_PATHS,
    all_paths,
    length_distribution,
    mean_path_length,
    path_count,
    path_length,
    sample_paths,
)
from .decompose import (
    CIRCUITS,
    MAX_BYTES,
    circuit_groups,
    decompose_by_length,
    decomposition_error,
    enumerate_paths,
    length_gram,
    length_profile,
    path_norms,
)
from .frozen import FrozenLayer, frozen_layers

__all__ = [
    "path_count",
    "length_distribution",
    "mean_path_length",
    "enumerate_paths",
    "decompose_by_length",
    "length_profile",
    "circuit_groups",
    "CIRCUITS",
    "length_gram",
    "path_norms",
    "sample_paths",
    "decomposition_error",
    "frozen_layers",
    "FrozenLayer",
    "all_paths",
    "path_length",
    "MAX_BYTES",
    "MAX_PATHS",
    "MAX_LENGTH_DISTRIBUTION",
    "MAX_COUNT_LAYERS",
]
