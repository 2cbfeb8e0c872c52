"""Text and tokens: the book's corpus, MiniLM's tokenizer, windows of token ids, and encoding.

The paper fed its models 32 sequences of 128 tokens of wiki_bio biographies, a data set whose
download no longer works; the book uses its own prose (``rankcollapse/data/*.txt``). Token ids
come from the model's own tokenizer when one is available offline (MiniLM, or a hub model with
its files); otherwise from MiniLM's uncased WordPiece vocabulary, mapped into the model's range.
Shapes: token ids ``(b, n)``, masks ``(b, n)`` with 1 on real tokens.
"""

from __future__ import annotations

import functools
import os
import warnings

import torch

from .._validate import check_choice, check_int
from ..corpus import corpus  # noqa: F401  (re-exported: rc.real.corpus)
from .registry import minilm_path

__all__ = [
    "CLS",
    "SEP",
    "corpus",
    "map_ids",
    "minilm_tokenizer",
    "token_windows",
    "encode",
    "check_ids",
    "TOO_LONG",
]

CLS, SEP = 101, 102  # MiniLM's (uncased WordPiece) [CLS] and [SEP]
TOO_LONG = ("error", "truncate")


@functools.lru_cache(maxsize=1)
def minilm_tokenizer():
    """MiniLM's WordPiece tokenizer as a function ``str -> list[int]`` (no special tokens, no
    padding)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(minilm_path(), "tokenizer.json"))
    tok.no_padding()  # its tokenizer.json pads every input to 128 tokens
    tok.no_truncation()
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def map_ids(ids, vocab_size):
    """MiniLM WordPiece ids into ``[1, vocab_size)``: kept when they fit, else
    ``1 + id mod (V - 1)``.

    Id 0 is avoided because it is the padding row (zero at initialisation) in BERT and ALBERT.
    """
    vocab_size = check_int("vocab_size", vocab_size, minimum=2)
    return [i if 0 < i < vocab_size else 1 + i % (vocab_size - 1) for i in ids]


def _encoder(model):
    """``(encode, (cls, sep))`` for ``model`` (``None``: MiniLM's ids); ``cls``/``sep`` ``None``
    when unframed."""
    if model is None:
        return minilm_tokenizer(), (CLS, SEP)
    if model.tokenizer is not None:
        return model.tokenizer, model.cls_sep
    base, vocab = minilm_tokenizer(), model.vocab_size
    return (lambda text: map_ids(base(text), vocab)), model.cls_sep


def _frame(ids, cls_sep):
    cls, sep = cls_sep
    return ids if cls is None else [cls] + ids + [sep]


def token_windows(model=None, n_seq: int = 32, n_tokens: int = 128) -> torch.Tensor:
    """``n_seq`` windows of ``n_tokens`` token ids of the book's prose, shape ``(n_seq, n_tokens)``.

    Each document of :func:`corpus` is tokenised and cut into consecutive windows of
    ``n_tokens - 2`` tokens (the rest of a document is dropped), each framed by the model's
    [CLS] and [SEP] ids (GPT-2, a decoder, reads unframed windows of ``n_tokens``); windows are
    taken in document order, alternating documents so that a small ``n_seq`` still covers many
    documents. Tokens come from the model's own tokenizer when it has one (MiniLM, or a hub model
    with its files); otherwise MiniLM's uncased WordPiece ids mapped into the model's vocabulary
    range (:func:`map_ids`): at initialisation the embedding rows are random, so any fixed map
    keeps what matters, which tokens repeat and where. ``model=None`` gives MiniLM's ids.
    """
    n_seq = check_int("n_seq", n_seq)
    n_tokens = check_int("n_tokens", n_tokens, minimum=3, maximum=512)
    encode, cls_sep = _encoder(model)
    w = n_tokens - (0 if cls_sep[0] is None else 2)
    per_doc = []
    for doc in corpus():
        ids = list(encode(doc))
        per_doc.append([_frame(ids[i : i + w], cls_sep) for i in range(0, len(ids) - w + 1, w)])
    windows, k = [], 0
    while len(windows) < n_seq and any(k < len(d) for d in per_doc):
        windows += [d[k] for d in per_doc if k < len(d)]
        k += 1
    if len(windows) < n_seq:
        raise ValueError(
            f"the corpus holds only {len(windows)} windows of {n_tokens} tokens, "
            f"asked for n_seq={n_seq}"
        )
    return torch.tensor(windows[:n_seq], dtype=torch.long)


def check_ids(ids: torch.Tensor, vocab_size: int, name: str = "texts_or_ids") -> torch.Tensor:
    """``ids`` if every token id is in ``[0, vocab_size)``; a ``ValueError`` naming the first bad
    one."""
    bad = (ids < 0) | (ids >= vocab_size)
    if bad.any():
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name}: token ids must be in [0, {vocab_size}) for this model, "
            f"got {int(ids[where])} at index {where}"
        )
    return ids


def encode(model, inputs, *, too_long: str = "error", limit: int | None = None):
    """Token ids ``(b, n)`` and a mask ``(b, n)`` (``None`` when nothing is padded) from text or
    ids.

    ``inputs``: a string, a list of strings (tokenised with the model's vocabulary, framed, padded
    at the end, masked) or integer token ids ``(n,)`` / ``(b, n)``. ``limit``: the most tokens per
    sequence (the model's position table); a longer input raises a ``ValueError`` with
    ``too_long="error"`` (default) or, with ``too_long="truncate"``, is cut to ``limit`` tokens
    with a warning (text keeps its final [SEP]). Ids out of the model's vocabulary raise.
    """
    check_choice("too_long", too_long, TOO_LONG)
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(inputs, (list, tuple)) and inputs and all(isinstance(t, str) for t in inputs):
        enc, cls_sep = _encoder(model)
        seqs = [_frame(list(enc(t)), cls_sep) for t in inputs]
        longest = max(len(s) for s in seqs)
        if limit is not None and longest > limit:
            seqs = [_cut(s, limit, cls_sep, too_long, longest) for s in seqs]
        if min(len(s) for s in seqs) == 0:
            raise ValueError("texts_or_ids: a text has no tokens (an empty string?)")
        n = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), n, dtype=torch.long)
        mask = torch.zeros(len(seqs), n, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
            mask[i, : len(s)] = 1
        return check_ids(ids, model.vocab_size), (None if bool(mask.all()) else mask)
    if not isinstance(inputs, torch.Tensor) or inputs.dtype not in (torch.int32, torch.int64):
        raise TypeError(
            "texts_or_ids must be a string, a list of strings or an integer tensor of token ids "
            f"of shape (n,) or (b, n), got {type(inputs).__name__}"
        )
    ids = inputs.long()
    if ids.ndim == 1:
        ids = ids[None]
    if ids.ndim != 2 or ids.numel() == 0:
        raise ValueError(
            f"texts_or_ids: token ids must have shape (n,) or (b, n), got {tuple(inputs.shape)}"
        )
    if limit is not None and ids.shape[1] > limit:
        if too_long == "error":
            raise ValueError(
                f"texts_or_ids: {model.name} takes at most {limit} tokens per sequence, got "
                f"{ids.shape[1]}; cut the input, or pass too_long='truncate'"
            )
        warnings.warn(
            f"{model.name} takes at most {limit} tokens per sequence: "
            f"{ids.shape[1]} cut to {limit}",
            stacklevel=3,
        )
        ids = ids[:, :limit]
    return check_ids(ids, model.vocab_size), None


def _cut(seq, limit, cls_sep, too_long, longest):
    if len(seq) <= limit:
        return seq
    if too_long == "error":
        raise ValueError(
            f"texts_or_ids: a text has {longest} tokens, more than the model's limit of {limit}; "
            "shorten it, or pass too_long='truncate'"
        )
    warnings.warn(
        f"a text of {len(seq)} tokens is cut to the model's limit of {limit}", stacklevel=4
    )
    return seq[: limit - 1] + [cls_sep[1]] if cls_sep[0] is not None else seq[:limit]
