"""Real architectures at any depth, in one call: ``build(family, overrides, seed, depth_factor,
init)`` returns the converted :class:`~rankcollapse.real.network.Network` (an embedding and the
core's :class:`~rankcollapse.san.SAN`), nothing downloaded.

>>> net = rc.real.build("llama", {"hidden_size": 64}, seed=0, depth_factor=4)
>>> out = net.ablate("full")(net.embed(ids))          # a SANOutput, every layer's hidden state
>>> net.ablate("san+skip", "clean", placement=None, branch_scale="depth")

Families (:data:`FAMILIES`): ``"bert"``, ``"albert"``, ``"xlnet"``, ``"gpt2"`` (the registry's
published configurations: BERT-base, ALBERT-base-v2, XLNet-base, GPT-2 small), ``"llama"``
(SmolLM2-135M's published configuration: 30 pre-RMSNorm layers, width 576, 9 query heads sharing
3 key/value heads, rotary positions on every dimension with theta 1e5, a SiLU-gated MLP of 1536)
and ``"gpt_neox"`` (Pythia-70M's: 6 pre-LN layers, width 512, 8 heads, attention and MLP in
parallel, rotary positions on a quarter of each head's dimensions) and ``"qwen2"``
(Qwen2.5-0.5B's: Llama's layer with biases on the query, key and value maps, 24 layers, width
896, 14 query heads sharing 2 key/value heads, theta 1e6). :func:`native_config` gives
each as transformers keyword arguments; ``config_overrides`` changes any of them (e.g.
``{"hidden_size": 64, "intermediate_size": 128}`` for a narrow network; an override of the
number of layers, :func:`depth_key`, sets the depth that ``depth_factor`` multiplies).

Depth: ``depth_factor=k`` builds ``k`` times the native number of layers. ALBERT's one shared
layer is applied ``k`` times as often (its ``num_hidden_layers``); every other family gets
further layers drawn from the same initialisation. ``init`` says which:

- ``"transformers"``: transformers' own initialiser builds the model of ``k L`` layers from its
  configuration under ``torch.manual_seed(seed)`` (forked: the global generator is untouched),
  as :func:`rankcollapse.real.load` does at native depth, and it is converted;
- ``"library"``: the embedding as above (from a one-layer model), every layer drawn by the core's
  initialiser (:class:`~rankcollapse.san.SAN` with ``seed``): weights normal with standard
  deviation ``1/sqrt(fan_in)``, biases uniform in ``+-1/sqrt(fan_in)`` as ``torch.nn.Linear``,
  norm gains 1 and shifts 0. transformers draws weights with standard deviation
  ``initializer_range`` (0.02; SmolLM2's 1/24) and zero biases, so the two differ in scale.

``as_transformers=False`` (default) runs every step in ``dtype``; ``True`` computes the rotary
sinusoids, RMSNorm, the decoders' softmax and XLNet's relative positions in float32, as
transformers does in a float64 model (what the parity tests compare, to 1e-10; the default
differs from it by about 1e-7 and has no float32 floor under the residual).

The variants are :meth:`Network.ablate`'s switches: ``variant`` (``"full"``, ``"san"``,
``"san+mlp"``, ``"san+skip"``), ``surgery`` (``"clean"``: exactly what the name says, norms
removed; ``"paper"``: the official code's), ``placement`` (``"pre"`` or ``"post"``: the same
weights with the norms moved), ``branch_scale`` (a number, or ``"depth"`` for ``1/sqrt(L)`` on
both residual branches, Noci et al. 2022's scaling), ``mask`` and ``bias``.
"""

from __future__ import annotations

import torch

from .._validate import check_choice, check_dtype, check_int, check_seed
from ..san import SAN
from .convert import from_transformers
from .model import RealModel
from .network import Network
from .registry import MODELS
from .text import CLS, SEP

__all__ = [
    "FAMILIES",
    "INITS",
    "NATIVE",
    "native_config",
    "depth_key",
    "transformers_classes",
    "transformers_model",
    "build",
    "real_model",
    "initial_real_model",
    "repeated",
]

INITS = ("transformers", "library")

#: family -> (the published configuration it starts from, transformers keyword arguments)
NATIVE = {
    "bert": ("bert-base-cased", MODELS["bert-base-cased"].config),
    "albert": ("albert-base-v2", MODELS["albert-base-v2"].config),
    "xlnet": ("xlnet-base-cased", MODELS["xlnet-base-cased"].config),
    "gpt2": ("gpt2", MODELS["gpt2"].config),
    "llama": (
        "SmolLM2-135M",  # HuggingFaceTB/SmolLM2-135M's config.json (LlamaForCausalLM)
        dict(
            vocab_size=49152,
            hidden_size=576,
            intermediate_size=1536,
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            hidden_act="silu",
            max_position_embeddings=8192,
            initializer_range=1 / 24,
            rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
            attention_bias=False,
            mlp_bias=False,
            tie_word_embeddings=True,
            bos_token_id=0,
            eos_token_id=0,
        ),
    ),
    "gpt_neox": (
        "pythia-70m",  # EleutherAI/pythia-70m's config.json (GPTNeoXForCausalLM)
        dict(
            vocab_size=50304,
            hidden_size=512,
            intermediate_size=2048,
            num_hidden_layers=6,
            num_attention_heads=8,
            hidden_act="gelu",
            max_position_embeddings=2048,
            initializer_range=0.02,
            layer_norm_eps=1e-5,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.25,
            },
            use_parallel_residual=True,
            attention_bias=True,
            tie_word_embeddings=False,
            bos_token_id=0,
            eos_token_id=0,
        ),
    ),
    "qwen2": (
        "Qwen2.5-0.5B",  # Qwen/Qwen2.5-0.5B's config.json (Qwen2ForCausalLM)
        dict(
            vocab_size=151936,
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            hidden_act="silu",
            max_position_embeddings=32768,
            initializer_range=0.02,
            rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            use_sliding_window=False,
            tie_word_embeddings=True,
            bos_token_id=151643,
            eos_token_id=151643,
        ),
    ),
}
FAMILIES = tuple(NATIVE)

_DEPTH = {"xlnet": "n_layer", "gpt2": "n_layer"}  # the others: num_hidden_layers


def depth_key(family: str) -> str:
    """The transformers config key of ``family``'s number of layers."""
    check_choice("family", family, FAMILIES)
    return _DEPTH.get(family, "num_hidden_layers")


def native_config(family: str, config_overrides=None) -> dict:
    """``family``'s published configuration (:data:`NATIVE`) as transformers keyword arguments,
    with ``config_overrides`` (a mapping) applied; an override of a key the configuration does
    not have is refused (a misspelling would otherwise be ignored)."""
    check_choice("family", family, FAMILIES)
    config = dict(NATIVE[family][1])
    if config_overrides is None:
        return config
    if not hasattr(config_overrides, "items"):
        raise TypeError(
            f"config_overrides must be a mapping, got {type(config_overrides).__name__}"
        )
    config_cls, _ = transformers_classes(family)
    known = set(config) | set(config_cls().to_dict())
    unknown = sorted(set(config_overrides) - known)
    if unknown:
        raise ValueError(f"config_overrides: {family} configurations have no key {unknown}")
    config.update(config_overrides)
    return config


def transformers_classes(family: str):
    """``(config class, model class)`` of ``family`` in transformers (imported here)."""
    check_choice("family", family, FAMILIES)
    import transformers as tf

    tf.logging.set_verbosity_error()
    return {
        "bert": (tf.BertConfig, tf.BertModel),
        "albert": (tf.AlbertConfig, tf.AlbertModel),
        "xlnet": (tf.XLNetConfig, tf.XLNetModel),
        "gpt2": (tf.GPT2Config, tf.GPT2Model),
        "llama": (tf.LlamaConfig, tf.LlamaModel),
        "gpt_neox": (tf.GPTNeoXConfig, tf.GPTNeoXModel),
        "qwen2": (tf.Qwen2Config, tf.Qwen2Model),
    }[family]


def transformers_model(family: str, config_overrides=None, *, seed: int = 0, depth_factor=1):
    """transformers' own model of ``family`` at ``depth_factor`` times its native depth
    (:func:`native_config` with ``config_overrides``), initialised by transformers under
    ``torch.manual_seed(seed)`` in a forked generator, eager attention, evaluation mode.

    ``config_overrides`` may also be a transformers configuration of ``family`` (a model's
    ``.config``): then it is the whole configuration, the published one is not consulted (what
    :func:`rankcollapse.real.study.applied_again` builds ALBERT's deeper model from)."""
    k = check_int("depth_factor", depth_factor)
    if hasattr(config_overrides, "to_dict") and hasattr(config_overrides, "model_type"):
        check_choice("family", family, FAMILIES)
        if config_overrides.model_type != family:
            raise ValueError(
                f"config_overrides: a {config_overrides.model_type} configuration, not {family}'s"
            )
        config = config_overrides.to_dict()
    else:
        config = native_config(family, config_overrides)
    key = depth_key(family)
    config[key] = config[key] * k
    return _initialised(family, config, seed)


def _initialised(family: str, config: dict, seed: int):
    seed = check_seed("seed", seed)
    config_cls, model_cls = transformers_classes(family)
    c = config_cls(**config)
    c._attn_implementation = "eager"
    kw = {"add_pooling_layer": False} if family in ("bert", "albert") else {}
    with torch.random.fork_rng(devices=[]):  # the global generator is left as it was
        torch.manual_seed(seed)
        model = model_cls(c, **kw)
    return model.eval()


def build(
    family: str,
    config_overrides=None,
    seed: int = 0,
    depth_factor: int = 1,
    init: str = "transformers",
    *,
    dtype=torch.float64,
    as_transformers: bool = False,
) -> Network:
    """``family`` (:data:`FAMILIES`) at ``depth_factor`` times its native depth, converted into a
    :class:`Network` in ``dtype``: the module's docstring says what each argument does.

    The network's ``name`` is ``"<published name> x<depth_factor> (<init> init, seed <seed>)"``.
    """
    check_choice("family", family, FAMILIES)
    check_choice("init", init, INITS)
    dtype, seed = check_dtype("dtype", dtype), check_seed("seed", seed)
    if not isinstance(as_transformers, bool):
        raise TypeError(f"as_transformers must be True or False, got {as_transformers!r}")
    k = check_int("depth_factor", depth_factor)
    name = f"{NATIVE[family][0]} x{k} ({init} init, seed {seed})"
    if init == "transformers":
        hf = transformers_model(family, config_overrides, seed=seed, depth_factor=k)
        return from_transformers(hf, family, name, dtype, as_transformers=as_transformers)
    config = native_config(family, config_overrides)
    depth = config[depth_key(family)] * k
    config[depth_key(family)] = 1  # the embedding from a one-layer model; layers from the core
    net = from_transformers(
        _initialised(family, config, seed), family, name, dtype, as_transformers=as_transformers
    )
    san = SAN(net.config.replace(n_layers=depth), seed=seed).requires_grad_(False)
    return Network(name, net.embedding, san, paper_identity_mlp=net.paper_identity_mlp)


def real_model(
    family: str,
    config_overrides=None,
    seed: int = 0,
    depth_factor: int = 1,
    *,
    as_transformers: bool = False,
) -> RealModel:
    """``family`` at ``depth_factor`` times its depth from transformers' initialisation, as a
    :class:`~rankcollapse.real.RealModel` (what :func:`rankcollapse.real.hidden_states`,
    :func:`~rankcollapse.real.residual_curve` and :func:`~rankcollapse.real.token_windows` take):
    token ids are MiniLM's WordPiece ids mapped into the family's vocabulary, framed by [CLS]
    ... [SEP] for the encoders (BERT, ALBERT, XLNet) and unframed for the decoders."""
    hf = transformers_model(family, config_overrides, seed=seed, depth_factor=depth_factor)
    name = f"{NATIVE[family][0]} x{check_int('depth_factor', depth_factor)}"
    return initial_real_model(hf, family, name, seed, as_transformers=as_transformers)


def initial_real_model(
    hf, family: str, name: str, seed: int, *, label=None, note: str = "", as_transformers=None
) -> RealModel:
    """The :class:`~rankcollapse.real.RealModel` ``name`` of ``hf``, a model of ``family`` just
    built by :func:`transformers_model` under ``seed``: its source reads ``"<label> at
    initialisation (transformers' initialiser, seed <seed><note>)"`` (``label``: ``name`` when
    ``None``), token ids framed by [CLS] ... [SEP] for the encoders (BERT, ALBERT, XLNet)."""
    check_choice("family", family, FAMILIES)
    check_seed("seed", seed)
    if getattr(getattr(hf, "config", None), "model_type", None) != family:
        raise TypeError(f"hf must be a transformers {family} model, got {type(hf).__name__}")
    for arg, text in (("name", name), ("note", note)) + ((("label", label),) if label else ()):
        if not isinstance(text, str):
            raise TypeError(f"{arg} must be a string, got {type(text).__name__}")
    framed = family in ("bert", "albert", "xlnet")
    return RealModel(
        name,
        family,
        hf,
        False,
        f"{name if label is None else label} at initialisation "
        f"(transformers' initialiser, seed {seed}{note})",
        None,
        (CLS, SEP) if framed else (None, None),
        as_transformers=as_transformers,
    )


def repeated(net: Network, factor: int) -> Network:
    """``net`` with its layers applied ``factor`` times in turn (layers ``1..L, 1..L, ...``, the
    parameters shared, not copied): a probe of a pretrained network past its depth (MiniLM), not
    a network anyone trained. A shared-layer network (ALBERT) simply applies its layer more."""
    if not isinstance(net, Network):
        raise TypeError(f"net must be a rankcollapse.real.Network, got {type(net).__name__}")
    k = check_int("factor", factor)
    cfg = net.config.replace(n_layers=net.config.n_layers * k)
    layers = [block.weights() for block in dict.fromkeys(net.san.layers)]
    san = SAN.from_weights(cfg, layers if cfg.shared else layers * k, net.san.final_norm_weights())
    return Network(
        f"{net.name} (layers applied x{k})",
        net.embedding,
        san,
        paper_identity_mlp=net.paper_identity_mlp,
    )
