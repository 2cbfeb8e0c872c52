"""Whose result is whose: the book's own results, and a check that the prose credits them right.

The book reads one paper critically, so every statement in it says whose it is: the paper's (as
the paper gives it), the reading note's (the summary the project started from), or the book's
own (derived and proved in a chapter). Crediting the paper with something the book derived is
the worst defect such a book can have: a reader who cites "the paper's Theorem 2.2" on the
book's word would cite something the paper does not say.

:data:`booktools.results.BOOK_RESULTS` lists the book's own results: what identifies each in
the prose (its label, the library function that computes it, the phrases only the book uses
for it) and where it is proved. :func:`misattributions` reads a chapter and returns every paragraph,
list item or box that credits the paper (``the paper's Theorem``, ``the paper states/shows/
calls/proves ...``, a reference to a box that states a paper's result) *and* names one of the
book's results, unless the unit is itself labelled as the book's (a box titled "(this book)" or
a "This book's refinement" remark), where setting the two side by side is the point. It also
flags the reading note's phrases credited to the paper, and attributions no source available to
the book supports. :func:`unsourced_boxes` returns every theorem, lemma, proposition,
corollary or definition box whose title does not say whose it is; :func:`paper_box_problems`
every box of the paper's results that the book's counter would number (the paper's results
are unnumbered boxes, named as :data:`booktools.results.PAPER_RESULTS` says, so that "Theorem 2.1"
names a result of the book and "the paper's Theorem 2.2" one of the paper);
:func:`page_text_credits` every credit to the paper in text the book's code itself writes into
a page (a legend, a widget's notes).

Pure Python (``re``, and the library's argument checks): part of the book's tooling, it reads
text. Used by ``tests/test_attributions.py``; a chapter author can run it on a draft.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rankcollapse._validate import check_str

from .results import (
    BOOK_RESULTS,
    BOOK_TITLE,
    NOTE_CREDIT,
    NOTE_PHRASES,
    PAGE_TEXT_CREDITS,
    PAPER_ATTRIBUTION,
    SOURCE_TITLE,
    UNSUPPORTED_ATTRIBUTIONS,
)

__all__ = [
    "Unit",
    "units",
    "misattributions",
    "unsourced_boxes",
    "paper_box_problems",
    "page_text_credits",
    "check_file",
]

_BOX = re.compile(r"^(`{3,})\{(prf:[a-z]+|admonition)\}\s*(.*)$")
_SOURCED_KINDS = ("prf:theorem", "prf:lemma", "prf:proposition", "prf:corollary", "prf:definition")


@dataclass(frozen=True)
class Unit:
    """A paragraph, list item or whole box of a chapter, with the title that owns it."""

    text: str
    line: int
    title: str
    kind: str  # "prose", a box kind ("prf:theorem", ...), or "admonition"


def _strip_code(lines: list[str]) -> list[str | None]:
    """The markdown lines, code cells replaced by ``None`` (they are not prose)."""
    out, fence = [], None
    for line in lines:
        if fence is None:
            m = re.match(r"^(`{3,})\{code-cell\}", line)
            if m:
                fence = m.group(1)
                out.append(None)
                continue
            out.append(line)
        else:
            if line.strip() == fence:
                fence = None
            out.append(None)
    return out


def units(text: str) -> list[Unit]:
    """Split a MyST chapter into units: each prf box whole (a proof owned by the box before it),
    each paragraph, list item or table row of prose and of admonitions (owned by the
    admonition's title). Code cells are left out."""
    check_str("text", text)
    lines = _strip_code(text.splitlines())
    result: list[Unit] = []
    stack: list[tuple[str, str, str]] = []  # (fence, kind, title)
    box_lines: list[str] = []
    box_start = 0
    para: list[str] = []
    para_start = 0
    last_box_title = ""

    def flush():
        nonlocal para
        if para and any(p.strip() for p in para):
            owner = stack[-1] if stack else ("", "prose", "")
            result.append(Unit("\n".join(para), para_start, owner[2], owner[1]))
        para = []

    for i, line in enumerate(lines, start=1):
        if line is None:
            flush()
            continue
        m = _BOX.match(line)
        in_prf = bool(stack) and stack[-1][1].startswith("prf:")
        if m and not in_prf:
            flush()
            fence, kind, title = m.groups()
            if kind == "prf:proof":
                title = last_box_title
            stack.append((fence, kind, title))
            if kind.startswith("prf:"):
                box_lines, box_start = [title], i
            continue
        if stack and line.strip() == stack[-1][0]:
            if not stack[-1][1].startswith("prf:"):
                flush()  # the admonition's last paragraph, while it still owns it
            fence, kind, title = stack.pop()
            if kind.startswith("prf:"):
                result.append(Unit("\n".join(box_lines), box_start, title, kind))
                if kind != "prf:proof":
                    last_box_title = title
            continue
        if in_prf:
            box_lines.append(line)
            continue
        if not line.strip() or re.match(r"^\s*([-*|]|\d+\.)\s", line) or line.startswith("#"):
            flush()
            para_start = i
            if line.strip():
                para = [line]
            continue
        if not para:
            para_start = i
        para.append(line)
    flush()
    return result


def _find(patterns, text):
    for p in patterns:
        m = re.search(p, text, flags=re.IGNORECASE)
        if m:
            return m.group(0)
    return None


def misattributions(text: str) -> list[dict]:
    """Every unit of ``text`` (a chapter's MyST source) that credits the paper wrongly.

    Returns dicts with ``line``, ``why`` and ``excerpt``. Three kinds: a unit that credits the
    paper and names a result of :data:`BOOK_RESULTS` (allowed only inside a unit titled as the
    book's, :data:`BOOK_TITLE`); a reading-note phrase (:data:`NOTE_PHRASES`) credited to the
    paper without crediting the note; and an attribution of :data:`UNSUPPORTED_ATTRIBUTIONS`.
    """
    check_str("text", text)
    found = []
    for u in units(text):
        body = u.title + "\n" + u.text
        paper = _find(PAPER_ATTRIBUTION, body)
        excerpt = " ".join(u.text.split())[:160]
        for pattern, why in UNSUPPORTED_ATTRIBUTIONS:
            m = re.search(pattern, body, flags=re.IGNORECASE)
            if m:
                found.append({"line": u.line, "why": f"{m.group(0)!r}: {why}", "excerpt": excerpt})
        if not paper:
            continue
        note = _find(NOTE_PHRASES, body)
        if note and not re.search(NOTE_CREDIT, body, flags=re.IGNORECASE):
            found.append(
                {
                    "line": u.line,
                    "excerpt": excerpt,
                    "why": f"the reading note's phrase {note!r} credited to the paper ({paper!r})",
                }
            )
        if re.search(BOOK_TITLE, u.title, flags=re.IGNORECASE):
            continue
        for result in BOOK_RESULTS:
            marker = _find(result.markers, body)
            if marker:
                found.append(
                    {
                        "line": u.line,
                        "excerpt": excerpt,
                        "why": (
                            f"credits the paper ({paper!r}) beside the book's own result "
                            f"{result.name!r} ({marker!r}); state the paper's result as the "
                            f"paper gives it and the book's in a box of its own"
                        ),
                    }
                )
                break
    return found


def unsourced_boxes(text: str) -> list[dict]:
    """Every theorem/lemma/proposition/corollary/definition box whose title does not say whose it
    is."""
    check_str("text", text)
    return [
        {"line": u.line, "kind": u.kind, "title": u.title}
        for u in units(text)
        if u.kind in _SOURCED_KINDS and not re.search(SOURCE_TITLE, u.title, flags=re.IGNORECASE)
    ]


_NUMBERED_RESULT_KINDS = ("prf:theorem", "prf:lemma", "prf:proposition", "prf:corollary")


def paper_box_problems(text: str) -> list[dict]:
    """Every theorem, lemma, proposition or corollary box titled as the paper's (and not, even in
    part, as the book's: "this book" nowhere in its title) that the book's counter would number:
    it lacks ``:nonumber:``. The paper's results
    keep the paper's numbers, in their titles and in the references to them ("the paper's
    Theorem 2.2"); numbered by the book they would also read "Theorem 2.1" and so on, names of
    the book's own results. Returns dicts with ``line``, ``kind`` and ``title``."""
    check_str("text", text)
    out = []
    for u in units(text):
        if u.kind not in _NUMBERED_RESULT_KINDS or not re.search(
            r"the paper's", u.title, flags=re.IGNORECASE
        ):
            continue
        if re.search(r"\bthis book\b", u.title, flags=re.IGNORECASE):
            continue  # the statement is (also) the book's: the book's counter numbers it
        if not re.search(r"^:nonumber:\s*$", u.text, flags=re.MULTILINE):
            out.append({"line": u.line, "kind": u.kind, "title": u.title})
    return out


def page_text_credits(text: str) -> list[str]:
    """Every credit to the paper (:data:`PAGE_TEXT_CREDITS`) in ``text`` that the book's code
    (``rankbook``) writes into a page: a figure's legend, a widget's labels and notes. What it
    draws is the library's computation, the book's, so such text credits the paper wrongly; the
    chapter's prose, where the paper's statements stand beside the book's, says whose each is."""
    check_str("text", text)
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    return [
        m.group(0) for p in PAGE_TEXT_CREDITS for m in re.finditer(p, text, flags=re.IGNORECASE)
    ]


def check_file(path) -> list[str]:
    """Every check on one file, as readable messages (empty when the file is clean)."""
    path = Path(path)
    text = path.read_text()
    msgs = [
        f"{path.name}:{f['line']}: {f['why']}\n    {f['excerpt']}" for f in misattributions(text)
    ]
    msgs += [
        f"{path.name}:{b['line']}: {b['kind']} box without its source in the title: {b['title']!r} "
        f"(add '(the paper's ...)' or '(this book)')"
        for b in unsourced_boxes(text)
    ]
    msgs += [
        f"{path.name}:{b['line']}: {b['kind']} box titled as the paper's but numbered by the book: "
        f"{b['title']!r} (add ':nonumber:' after its label, and refer to it as "
        "booktools.results.PAPER_RESULTS "
        f"names it)"
        for b in paper_box_problems(text)
    ]
    return msgs
