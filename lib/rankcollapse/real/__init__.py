"""Real transformers in the core's network: BERT, ALBERT, XLNet, GPT-2, Llama, GPT-NeoX, Qwen2
and a pretrained MiniLM.

Book: chapter "Real transformers". Sub-modules, one job each:

- :mod:`~rankcollapse.real.registry`: the models, their published configurations, the variants,
  and the table of architectures whose paths are counted;
- :mod:`~rankcollapse.real.text`: the book's corpus, tokens, windows and encoding;
- :mod:`~rankcollapse.real.hub`: loading (at initialisation, a local copy, the hub with a timeout);
- :mod:`~rankcollapse.real.model`: a loaded model (:class:`RealModel`);
- :mod:`~rankcollapse.real.convert`: a transformers model in the core's types, one converter per
  family (``bert``, ``albert``, ``xlnet``, ``gpt2``, ``llama``, ``gpt_neox``, ``qwen2``) and one
  dispatch;
- :mod:`~rankcollapse.real.families`: any family at any multiple of its depth, in one call
  (:func:`build`), from transformers' initialisation or the library's;
- :mod:`~rankcollapse.real.parity`: a converted network against transformers' own forward,
  every layer (:func:`parity`);
- :mod:`~rankcollapse.real.network`: the converted model, an embedding and a
  :class:`rankcollapse.san.SAN`;
- :mod:`~rankcollapse.real.ablation`: the variants and surgeries as the core's switches;
- :mod:`~rankcollapse.real.threads`: the torch threads of the heavy loops;
- :mod:`~rankcollapse.real.measure`: hidden states and relative-residual curves;
- :mod:`~rankcollapse.real.products`: products of attention matrices along sampled paths;
- :mod:`~rankcollapse.real.study`: the chapter's measurements as result objects;
- :mod:`~rankcollapse.real.condition`: the collapse condition evaluated on real weights
  (chapter "What the theorem does not say");
- :mod:`~rankcollapse.real.skips`: attention with skips and without, the causal mask and the
  biases switched on and off (the same chapter);
- :mod:`~rankcollapse.real.depth`, :mod:`~rankcollapse.real.depth_fit`,
  :mod:`~rankcollapse.real.depth_study`: the models past their own depth, the form of a curve
  over depth, and the study of chapter "Skip connections at depth".

``transformers`` is imported only when a model is built or loaded.
"""

from . import condition, depth, depth_fit, depth_study, skips, study
from .ablation import ablation_config
from .convert import from_transformers
from .families import (
    FAMILIES,
    build,
    native_config,
    real_model,
    repeated,
    transformers_model,
)
from .hub import hub_problem, hub_timeout, lineup, load, try_load
from .measure import hidden_states, relative_residuals, residual_curve, residual_curves
from .model import RealModel
from .network import Embedding, Network
from .parity import layer_errors as parity_errors
from .parity import parity
from .products import path_products, path_profile, path_residuals, sample_paths
from .registry import (
    ABLATIONS,
    MODELS,
    SURGERIES,
    VARIANTS,
    ModelSpec,
    ModelUnavailable,
    minilm_path,
    spec,
)
from .text import corpus, encode, token_windows

__all__ = [
    "MODELS",
    "VARIANTS",
    "SURGERIES",
    "ABLATIONS",
    "ModelSpec",
    "ModelUnavailable",
    "spec",
    "minilm_path",
    "RealModel",
    "load",
    "try_load",
    "lineup",
    "hub_problem",
    "hub_timeout",
    "Embedding",
    "Network",
    "ablation_config",
    "from_transformers",
    "FAMILIES",
    "build",
    "real_model",
    "native_config",
    "repeated",
    "transformers_model",
    "parity",
    "parity_errors",
    "corpus",
    "encode",
    "token_windows",
    "hidden_states",
    "relative_residuals",
    "residual_curve",
    "residual_curves",
    "sample_paths",
    "path_products",
    "path_residuals",
    "path_profile",
    "study",
    "condition",
    "skips",
    "depth",
    "depth_fit",
    "depth_study",
]
