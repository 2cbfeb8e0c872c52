"""The book's corpus: its own English prose (``rankcollapse/data/*.txt``), read here and nowhere
else.

Written for the book (science and history, no third-party text), so it ships with the package and
needs no download. The chapter "Real transformers" feeds the documents to real models
(``rc.real.corpus``, the same function); the toy memorization task reads them as words
(``rc.toy.words``, the same function).
"""

from __future__ import annotations

import re
from importlib import resources

__all__ = ["corpus", "words"]


def corpus() -> list[str]:
    """The book's English prose: a list of documents (``rankcollapse/data/*.txt``, one per file,
    in the files' order), each with its whitespace collapsed to single spaces.

    It stands in for the paper's wiki_bio sentences.
    """
    files = sorted(
        p
        for p in resources.files("rankcollapse").joinpath("data").iterdir()
        if p.name.endswith(".txt")
    )
    docs = [" ".join(f.read_text(encoding="utf-8").split()) for f in files]
    if not docs:
        raise FileNotFoundError(
            "rankcollapse/data/*.txt is missing: reinstall the package (pip install -e .)"
        )
    return docs


def words() -> list[str]:
    """The book's prose (:func:`corpus`, every document in order) as lower-case words."""
    return [w for doc in corpus() for w in re.findall(r"[a-z0-9]+", doc.lower())]
