"""Real transformers past their own depth: every layer's relative residual at 1x to 8x the native
depth, for the paper's variants, the other LayerNorm placement and depth-scaled branches.

Book: chapter "Skip connections at depth". A model of the registry is built at initialisation by
transformers (:func:`build`, optionally narrowed for a fast run) and converted into the core's
:class:`~rankcollapse.san.SAN` (:mod:`rankcollapse.real.convert`); its own layers are the first
block. Deeper networks continue it (:func:`deeper_layers`):

- ``"draw"``: further layers drawn by the library from the distribution transformers'
  initialiser draws the native layers from: every weight tensor whose entries are not all equal
  gets fresh normal entries of mean 0 and the standard deviation of the same tensor pooled over
  the native layers (transformers draws every linear map and XLNet's position biases from a
  normal of mean 0; GPT-2's two output projections with a smaller deviation, ``0.02 /
  sqrt(2 n_layer)``, which the pooled deviation keeps); constant tensors (LayerNorm gains and
  shifts, biases at 0) are copied;
- ``"repeat"``: the native layers applied again in order (ALBERT's one shared layer; the
  pretrained MiniLM, as a probe).

Every layer ``l`` of every variant (:data:`VARIANTS`) runs in lockstep on the same weights
(:func:`depth_run`): ``"san"``, ``"san+mlp"``, ``"san+skip"`` (the clean ablations of
:mod:`rankcollapse.real.ablation`, the theorem's models), ``"full"`` (the block as built, its
final LayerNorm left out: it acts once, after the last layer), ``"flipped"`` (the full block with
its LayerNorm placement switched, post-LN to pre-LN or back, on the same weights) and
``"scaled"`` (the full block with both residual branches multiplied by ``sqrt(L_native / L)`` for
a network of ``L`` layers: 1 at the native depth; the ``1 / sqrt(L)`` scaling of Noci et al.
2022, and exactly what transformers' initialiser does to a GPT-2 of ``L`` layers, whose output
projections it draws with ``0.02 / sqrt(2 L)``). The causal mask stays where the model has one.
Each distinct layer's constants of the book's two theorems are computed from its weights
(:func:`layer_theorem_constants`, from :mod:`rankcollapse.real.condition.theorem`). Results are
numbers: :class:`DepthRun`; the fits of the curves are :mod:`rankcollapse.real.depth_fit`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .._validate import check_choice, check_int, check_seed
from ..residual import matrix_norm, relative_residual, res
from ..san import Block
from .ablation import ablation_config
from .condition.theorem import layer_theorem_constants
from .deeper import EXTENSIONS, deeper_layers, extension_seed, native_layers
from .families import (
    FAMILIES,
    NATIVE,
    depth_key,
    initial_real_model,
    native_config,
    transformers_model,
)
from .model import RealModel, check_model
from .network import Embedding
from .registry import MODELS
from .text import token_windows
from .threads import torch_threads

__all__ = [
    "VARIANTS",
    "FACTORS",
    "EXTENSIONS",
    "FLOOR64",
    "WIDTH_KEYS",
    "build",
    "deeper_layers",
    "layer_theorem_constants",
    "DepthRun",
    "depth_run",
]

VARIANTS = ("san", "san+mlp", "san+skip", "full", "flipped", "scaled")
FACTORS = (1, 2, 4, 8)
#: below this a float64 relative residual is rounding error: a collapsing variant stops there
FLOOR64 = 1e-14
#: a state whose largest entry is below this has lost its scale (underflow), not its rank
UNDERFLOW = 1e-200

# per family, the transformers config keys of (width, heads, MLP width): for narrowed builds
WIDTH_KEYS = {
    "bert": ("hidden_size", "num_attention_heads", "intermediate_size"),
    "albert": ("hidden_size", "num_attention_heads", "intermediate_size"),
    "xlnet": ("d_model", "n_head", "d_inner"),
    "gpt2": ("n_embd", "n_head", "n_inner"),
    "llama": ("hidden_size", "num_attention_heads", "intermediate_size"),
    "gpt_neox": ("hidden_size", "num_attention_heads", "intermediate_size"),
    "qwen2": ("hidden_size", "num_attention_heads", "intermediate_size"),
}


def _family_of(name: str) -> tuple[str, str, dict]:
    """``(family, published name, configuration)`` of a registry model or a family of
    :data:`rankcollapse.real.families.FAMILIES` (today's decoders: ``"llama"``, ``"gpt_neox"``)."""
    if name in MODELS:
        s = MODELS[name]
        return s.family, name, dict(s.config)
    check_choice("name", name, tuple(MODELS) + FAMILIES)
    return name, NATIVE[name][0], native_config(name)


def build(
    name: str,
    seed: int,
    *,
    width: int | None = None,
    heads: int | None = None,
    layers: int | None = None,
):
    """Model ``name`` at initialisation, by transformers' own initialiser under ``seed`` (the
    global random state untouched), as a :class:`RealModel`.

    ``name``: a model of the registry (:data:`rankcollapse.real.registry.MODELS`) or a family of
    :data:`rankcollapse.real.families.FAMILIES` (``"llama"``: SmolLM2-135M's configuration,
    ``"gpt_neox"``: Pythia-70M's). ``width``/``heads``: a narrowed copy of the published
    configuration (MLP width ``4 width``; grouped-query attention with two query heads per
    key/value head), for fast runs; ``layers``: another native depth. ``None`` keeps the
    published sizes (then a registry model's weights are those of :func:`rankcollapse.real.load`
    with the same seed).
    """
    family, published, config = _family_of(name)
    seed = check_seed("seed", seed)
    if (width is None) != (heads is None):
        raise ValueError("width and heads must be given together (or neither)")
    if width is not None:
        width, heads = check_int("width", width), check_int("heads", heads)
        if width % heads:
            raise ValueError(f"width must be a multiple of heads, got {width} and {heads}")
        w_key, h_key, m_key = WIDTH_KEYS[family]
        if "num_key_value_heads" in config:  # still grouped: two query heads per key/value head
            config["num_key_value_heads"] = heads // 2 if heads % 2 == 0 else heads
        config.update({w_key: width, h_key: heads, m_key: 4 * width})
    if layers is not None:
        config[depth_key(family)] = check_int("layers", layers)
    hf = transformers_model(family, config, seed=seed)
    where = "" if width is None else f", narrowed to width {width} and {heads} heads"
    if layers is not None:
        where += f", {layers} layers"
    own = published if name in MODELS else name
    return initial_real_model(hf, family, own, seed, label=published, note=where)


def _embed64(net, ids) -> torch.Tensor:
    """The first layer's input in float64 from ``net``'s (float32) embedding tables."""
    e = net.embedding

    def cast(t):
        return None if t is None else t.double()

    return Embedding(
        e.word.double(),
        position=cast(e.position),
        token_type=cast(e.token_type),
        ln=None if e.ln is None else (e.ln[0].double(), e.ln[1].double(), e.ln[2]),
        proj=None if e.proj is None else tuple(cast(t) for t in e.proj),
    )(ids)


def _flip(layernorm: str) -> str:
    if layernorm == "none":
        raise ValueError("the variant 'flipped' needs a model with LayerNorm")
    return "pre" if layernorm == "post" else "post"


def _variant_config(base, variant):
    if variant in ("san", "san+mlp", "san+skip"):
        cfg, _ = ablation_config(base, variant, "clean")
        return cfg
    if variant == "flipped":
        return base.replace(layernorm=_flip(base.layernorm))
    return base  # full, scaled (the scale is applied to the weights)


@dataclass
class DepthRun:
    """One model at one seed, every variant through ``factors`` times its native depth.

    ``curves``: ``{variant: array (b, L_max + 1)}`` for the variants whose network does not depend
    on its total depth (entry ``l`` is layer ``l``'s relative residual, 0 the input; NaN after a
    collapsing variant stopped at rounding error, and wherever a run's tokens under- or
    overflowed, as a gated MLP without its skip can make them), and
    ``{("scaled", f): array (b, f L0 + 1)}`` for each factor ``f > 1`` (at ``f = 1`` the
    scaled network is the full one).
    ``residual_norms``, ``mean_norms``: the same shapes and keys, the composite norm of
    ``res(X_l)`` (the relative residual's numerator) and of ``1 x_l^T``, the mean token
    repeated (what the numerator leaves): a relative residual falls when the first shrinks or
    when the second grows. ``underflow``: ``{key: layer}`` for a stream whose tokens shrank
    below :data:`UNDERFLOW` (a loss of scale, not of rank: the stream stops there, NaN after).
    ``constants``: ``{"c_floor" | "omega" | "k": array (L_max,)}`` per layer (unscaled weights).
    ``dtypes``: the arithmetic of each variant. ``causal``, ``layernorm`` (its placement),
    ``d_model``, ``n_heads``: the model's.
    """

    name: str
    family: str
    seed: int
    n_layers: int
    factors: tuple
    extension: str
    causal: bool
    layernorm: str
    d_model: int
    n_heads: int
    curves: dict = field(repr=False)
    constants: dict = field(repr=False)
    dtypes: dict = field(repr=False)
    residual_norms: dict = field(default_factory=dict, repr=False)
    mean_norms: dict = field(default_factory=dict, repr=False)
    underflow: dict = field(default_factory=dict, repr=False)


@torch.no_grad()
def depth_run(
    model: RealModel,
    ids,
    seed: int,
    *,
    factors=FACTORS,
    extension: str = "draw",
    variants=VARIANTS,
    float32=("full", "flipped", "scaled"),
) -> DepthRun:
    """Every layer's relative residual of ``model`` at ``max(factors)`` times its native depth.

    ``ids``: token ids ``(b, n)`` (no padding). ``seed``: the further layers' draws
    (:func:`deeper_layers`). ``variants``: a subset of :data:`VARIANTS`; ``float32``: those run in
    float32 (the others in float64, whose rounding floor the collapsing variants reach; a
    float32 state's residual is measured in float64). The relative residual is the paper's
    (column-mean centre, composite norm). Layers run one at a time, the same weights for every
    variant, so memory holds one layer.
    """
    check_model(model)
    seed = check_seed("seed", seed)
    factors = tuple(sorted({check_int("factors", f) for f in factors}))
    for v in variants:
        check_choice("variants", v, VARIANTS)
    extension = check_choice("extension", extension, EXTENSIONS)
    ids = torch.as_tensor(ids)
    if ids.ndim != 2:
        raise ValueError(f"ids must have shape (b, n), got {tuple(ids.shape)}")
    net = model.network(torch.float32)
    base = net.config.replace(final_layernorm=False, n_layers=1, shared=False)
    L0 = net.config.n_layers
    L_max = L0 * factors[-1]
    native = native_layers(net)
    X0 = _embed64(net, ids)
    states = {}  # key -> [X, cfg, lam, total depth, list of residual rows]
    for v in variants:
        # the scaled network at the native depth is the full one (its branches times 1)
        keys = [(v, f) for f in factors if f > 1] if v == "scaled" else [v]
        for key in keys:
            dt = torch.float32 if v in float32 else torch.float64
            # every step in the run's dtype (the decoders' converters compute norms, softmax
            # and positions in float32 as transformers does: that would floor the collapse)
            cfg = _variant_config(base, v).replace(
                dtype=dt, norm_dtype=None, softmax_dtype=None, position_dtype=None
            )
            f = key[1] if v == "scaled" else factors[-1]
            lam = math.sqrt(1 / f) if v == "scaled" else 1.0
            if lam != 1:
                cfg = cfg.replace(branch_scale=lam)
            block = Block(cfg, None)  # its weights are set layer by layer (_apply)
            states[key] = [X0.to(dt), cfg, lam, f * L0, [_measure(X0[None])[0, :3]], block]
    constants = {"c_floor": [], "omega": [], "k": []}
    underflow = {}
    seen = {}  # a native layer's constants, by its weights' storage (ALBERT's layers share one)
    H, d_qk = base.n_heads, base.d_qk
    layers = deeper_layers(native, L_max, extension, extension_seed(seed))
    with torch_threads():
        for l, w in enumerate(layers):
            # a drawn layer is new: its dict's id may be a freed one's, so only the native
            # layers (alive for the whole run) are looked up
            if l < L0 or extension == "repeat":
                key = w["W_Q"].data_ptr()
                if key not in seen:
                    seen[key] = layer_theorem_constants(w, H, d_qk)
                values = seen[key]
            else:
                values = layer_theorem_constants(w, H, d_qk)
            for name, value in values.items():
                constants[name].append(value)
            params = {}  # this layer's weights as parameters of each dtype, shared by the variants
            moved = []  # the streams this layer moved, their residuals measured together
            for key, st in states.items():
                X, cfg, lam, total, rows, block = st
                if X is None or l >= total:
                    continue
                if cfg.dtype not in params:
                    params[cfg.dtype] = {
                        k: nn.Parameter(t.to(cfg.dtype), requires_grad=False) for k, t in w.items()
                    }
                st[0] = _apply(block, params[cfg.dtype], lam, X)
                moved.append((key, st))
            if not moved:
                continue
            measured = _measure(torch.stack([st[0].double() for _, st in moved]))
            for (key, st), m in zip(moved, measured):
                st[4].append(m[:3])
                r = m[0]
                if not np.isfinite(r).all():
                    if (m[3] > 0).any():  # some text's tokens went to ~0
                        underflow[key] = l + 1
                    st[0] = None  # tokens that under- or overflowed (a gated MLP without skip)
                elif st[1].dtype == torch.float64 and key in ("san", "san+mlp"):
                    if (r < FLOOR64).all():
                        st[0] = None  # at rounding error: the rest is noise
    curves, residual_norms, mean_norms = {}, {}, {}
    for key, (_, _, _, total, rows, _) in states.items():
        for i, into in enumerate((curves, residual_norms, mean_norms)):
            out = np.full((ids.shape[0], total + 1), np.nan)
            out[:, : len(rows)] = np.stack([r[i] for r in rows], axis=1)
            into[key] = out
    return DepthRun(
        model.name,
        model.family,
        seed,
        L0,
        factors,
        extension,
        bool(net.config.causal),
        net.config.layernorm,
        net.config.d_model,
        net.config.n_heads,
        curves,
        {k: np.array(v) for k, v in constants.items()},
        {v: ("float32" if v in float32 else "float64") for v in variants},
        residual_norms,
        mean_norms,
        underflow,
    )


def _measure(stacked: torch.Tensor) -> np.ndarray:
    """``(relative residual, ||res(X)||, ||1 x^T||, underflowed)`` of states ``(streams, b, n,
    d)`` (float64), shaped ``(streams, 4, b)``: NaN for a text whose tokens are not finite, and
    for one whose largest entry is below :data:`UNDERFLOW` (its scale lost: the ratio is then
    rounding; ``underflowed`` 1 there, else 0)."""
    S, b = stacked.shape[:2]
    out = torch.full((S, 4, b), math.nan, dtype=torch.float64)
    big = stacked.abs().flatten(2).amax(-1)  # (streams, b), NaN where not finite
    ok = torch.isfinite(stacked).flatten(2).all(-1)
    out[:, 0][ok] = relative_residual(stacked[ok])
    fine = ok & (big >= UNDERFLOW)
    out[:, 0][ok & ~fine] = math.nan
    out[:, 3] = (ok & ~fine).double()
    X = stacked[fine]
    R = res(X)
    out[:, 1][fine] = matrix_norm(R)
    out[:, 2][fine] = matrix_norm(X - R)
    return out.numpy()


def _apply(block, weights, lam, X):
    """``block`` (a :class:`~rankcollapse.san.Block` of the variant's config) with the parameters
    of ``weights`` that it has, on ``X``; ``lam`` scales the MLP's branch (the attention's is the
    config's ``branch_scale``). Setting the parameters in place of building a layer each time
    keeps the per-layer cost to the arithmetic."""
    for k in block.weights():
        new = weights[k]
        if lam != 1 and k in ("W_2", "b_2"):
            new = nn.Parameter(new * lam, requires_grad=False)
        setattr(block, k, new)
    return block(X)[0]


def texts(model: RealModel, n_texts: int, n_tokens: int) -> torch.Tensor:
    """``n_texts`` windows of ``n_tokens`` token ids, each from a different essay of the book's
    corpus (:func:`rankcollapse.real.text.token_windows`), ``(n_texts, n_tokens)``."""
    return token_windows(model, n_texts, n_tokens)
