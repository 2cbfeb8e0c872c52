"""Whose result is whose: the book's own results, and a check that the prose credits them right.

The book reads one paper critically, so every statement in it says whose it is: the paper's (as
the paper gives it), the reading note's (the summary the project started from), or the book's
own (derived and proved in a chapter). Crediting the paper with something the book derived is
the worst defect such a book can have: a reader who cites "the paper's Theorem 2.2" on the
book's word would cite something the paper does not say.

:data:`BOOK_RESULTS` lists the book's own results: what identifies each in the prose (its
label, the library function that computes it, the phrases only the book uses for it) and
where it is proved. :func:`misattributions` reads a chapter and returns every paragraph,
list item or box that credits the paper (``the paper's Theorem``, ``the paper states/shows/
calls/proves ...``, a reference to a box that states a paper's result) *and* names one of the
book's results, unless the unit is itself labelled as the book's (a box titled "(this book)" or
a "This book's refinement" remark), where setting the two side by side is the point. It also
flags the reading note's phrases credited to the paper, and attributions no source available to
the book supports. :func:`unsourced_boxes` returns every theorem, lemma, proposition,
corollary or definition box whose title does not say whose it is; :func:`paper_box_problems`
every box of the paper's results that the book's counter would number (the paper's results
are unnumbered boxes, named as :data:`PAPER_RESULTS` says, so that "Theorem 2.1" names a result
of the book and "the paper's Theorem 2.2" one of the paper); :func:`page_text_credits` every
credit to the paper in text the library itself writes into a page (a legend, a widget's notes).

Pure Python (``re`` only): neither core nor upper layer, it reads text. Used by
``tests/test_attributions.py``; a chapter author can run it on a draft.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rankcollapse._validate import check_str

__all__ = [
    "BookResult",
    "BOOK_RESULTS",
    "PAPER_RESULTS",
    "PAPER_RESULT_LABELS",
    "PAGE_TEXT_CREDITS",
    "PAPER_ATTRIBUTION",
    "NOTE_PHRASES",
    "UNSUPPORTED_ATTRIBUTIONS",
    "BOOK_TITLE",
    "SOURCE_TITLE",
    "Unit",
    "units",
    "misattributions",
    "unsourced_boxes",
    "paper_box_problems",
    "page_text_credits",
    "check_file",
]


@dataclass(frozen=True)
class BookResult:
    """One result the book derives itself.

    ``markers``: regular expressions (case-insensitive) any of which, found in a paragraph,
    means the paragraph speaks of this result; ``chapter`` and ``label``: the chapter file and
    the label of the box where the book states and proves it (``None`` for a method the book
    introduces in prose and code rather than in a box).
    """

    name: str
    markers: tuple[str, ...]
    chapter: str
    label: str | None
    summary: str


BOOK_RESULTS: tuple[BookResult, ...] = (
    BookResult(
        "gamma",
        (
            r"def-gamma",
            r"rc\.theory\.gamma\b",
            r"head-balance",
            r"\\nu\b",
            r"sinh",
            r"the book's \$?\\gamma",
            r"our \$?\\gamma",
        ),
        "chapters/collapse.md",
        "def-gamma",
        "an explicit gamma, derived from the one-layer proof, that the library computes",
    ),
    BookResult(
        "one-layer lemma, any centre",
        (
            r"lem-one-layer",
            r"\bthe lemma\b",
            r"\bany centre\b",
            r"\barbitrary centre\b",
            r"one-layer step",
        ),
        "chapters/collapse.md",
        "lem-one-layer",
        "one pure-attention layer shrinks the residual cubically, for any centre",
    ),
    BookResult(
        "collapse bound with a computable constant",
        (
            r"thm-collapse-book",
            r"layerwise",
            r"each layer's own constant",
            r"rc\.theory\.collapse_bound",
        ),
        "chapters/collapse.md",
        "thm-collapse-book",
        "the cascade of the lemma, with each layer's own constant or the largest",
    ),
    BookResult(
        "tracked residual",
        (r"tracked residual", r"rc\.theory\.tracked_residual"),
        "chapters/collapse.md",
        None,
        "the residual propagated below float64's rounding floor",
    ),
    BookResult(
        "MLP bound in one centre",
        (r"thm-mlp-book", r"optimal centre throughout"),
        "chapters/mlp.md",
        "thm-mlp-book",
        "the collapse bound with MLPs, the optimal centre from first layer to last",
    ),
    BookResult(
        "weight bound on lambda",
        (r"prop-weight-bound", r"\benvelope\b"),
        "chapters/mlp.md",
        "prop-weight-bound",
        "the MLP's Lipschitz constant bounded by the Jacobian envelope of its weights",
    ),
    BookResult(
        "families that keep the residual",
        (r"prop-preserving", r"reserved[- ]subspace", r"rc\.theory\.preserving_san"),
        "chapters/skip.md",
        "prop-preserving",
        "three families of skip networks whose residual never falls",
    ),
    BookResult(
        "upper bound with skips",
        (r"prop-skip-bound", r"rc\.theory\.skip_bound"),
        "chapters/skip.md",
        "prop-skip-bound",
        "the one-layer bound with skips, which can only grow with depth",
    ),
    BookResult(
        "LayerNorm as matrix products",
        (r"def-ln-factors", r"prop-ln-rank", r"exact form", r"S\^\{-1\}\s*P_h"),
        "chapters/layernorm.md",
        "def-ln-factors",
        "LayerNorm as a left scaling and right multiplications; the exact rewriting of LN(SA(X))",
    ),
    BookResult(
        "mean and optimal residual within a factor 2",
        (r"at most twice", r"between 1 and 2"),
        "chapters/collapse.md",
        None,
        "the mean-centred residual is at most twice the optimal one",
    ),
    BookResult(
        "path terms with LayerNorm frozen",
        (r"FrozenLayer",),
        "chapters/paths.md",
        None,
        "the factors of each path term when LayerNorm's scales are frozen",
    ),
    BookResult(
        "lower bound with skips",
        (
            r"thm-skip-lower",
            r"lem-skip-layer",
            r"lem-rows-close",
            r"prop-skip-rate",
            r"rc\.lower_bound",
            r"at most like \$?L\^\{-1/2\}",
        ),
        "chapters/lower_bound.md",
        "thm-skip-lower",
        "with skips and value maps of row sums below 1/2, the residual falls at most like L^(-1/2); the rate is attained",
    ),
)

#: The boxes that state a result of the paper, and how a reference to each reads. The paper's
#: results are set apart from the book's numbered ones: their boxes are unnumbered
#: (``:nonumber:``; :func:`paper_box_problems`), so that the book's counter ("Theorem 2.1")
#: numbers the book's results only and a number such as "Theorem 2.2" names the paper's result
#: alone, always spelled "the paper's Theorem 2.2". A reference to one of these boxes is best
#: written with its text, ``{prf:ref}`the paper's Theorem 2.2 <thm-collapse-single>```; a bare
#: ``{prf:ref}`thm-collapse-single``` reads as the name below (``_ext/paperrefs.py``).
PAPER_RESULTS = {
    "thm-paths": "the paper's path decomposition",
    "thm-collapse-single": "the paper's Theorem 2.2",
    "thm-collapse-multi": "the paper's multi-head bound",
    "thm-mlp-bound": "the paper's bound with MLPs",
}

#: Labels of the boxes that state a result of the paper: a reference to one credits the paper.
PAPER_RESULT_LABELS = tuple(PAPER_RESULTS)

#: What credits the paper with a statement.
PAPER_ATTRIBUTION = (
    r"\bthe paper's (theorems?|lemmas?|corollar(y|ies)|propositions?|sections?|results?|conclusion|words|bound)\b",
    r"\bthe paper (states|shows|calls|proves|derives|reads|writes|says)\b",
    r"\{prf:ref\}`([^`<]*<)?(" + "|".join(PAPER_RESULT_LABELS) + r")>?`",
)

#: Text that credits the paper in a label, legend or note the library writes into a page
#: (:func:`page_text_credits`): "the paper's Theorem 2.2", "paper's theorem", "(as stated)".
PAGE_TEXT_CREDITS = (
    r"\bpaper(?:'|\u2019|&#x27;|&#39;)s\s+(theorems?|lemmas?|propositions?|corollar(y|ies)|bound)\b",
    r"\(as stated\)",
)

#: The reading note's own phrases: never the paper's words.
NOTE_PHRASES = (
    r"cannot help",
    r"fills? (the path set )?with short paths",
    r"long paths have (lost|had) their residual",
    r"a price the source names",
)

#: Crediting the note (then a note phrase may sit beside the paper's name).
NOTE_CREDIT = r"\b(the )?(reading )?note('s)?\b"

#: Claims about the paper that no source the book could read supports.
UNSUPPORTED_ATTRIBUTIONS = (
    (
        r"\b(its|the paper's) appendix (measures|shows|plots)",
        "where in the paper this is was not checked: attribute it to the official code, or drop it",
    ),
    (
        r"\bthe paper does not weigh\b",
        "the reading note records that the paper names the price; whether it weighs it was not checked",
    ),
    (
        r"\b(?:nor|neither) (?:does )?the paper (?:weighs?|frames?|sets?)\b"
        r"|\bthe paper (?:does not|doesn't|never|nowhere) (?:weighs?|frames?|sets?)\b"
        r"|\bthe paper (?:weighs|frames|sets) (?:it|this|that|the price|the trade)\b",
        "how the paper weighs or frames the price against other accounts was not checked; the reading "
        'note is the one that frames it ("pulls against ... neither frames it as a trade"): credit the note',
    ),
)

#: A title that labels a unit as the book's own (setting it beside the paper's is then allowed).
BOOK_TITLE = r"\(this book|this book's refinement"

#: A box title that says whose the statement is.
SOURCE_TITLE = r"the paper's|\(this book|the reading note"

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
    """Every theorem/lemma/proposition/corollary/definition box whose title does not say whose it is."""
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
    """Every credit to the paper (:data:`PAGE_TEXT_CREDITS`) in ``text`` that the library writes
    into a page: a figure's legend, a widget's labels and notes. What the library draws is the
    library's computation, the book's, so such text credits the paper wrongly; the chapter's
    prose, where the paper's statements stand beside the book's, says whose each is."""
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
        f"{b['title']!r} (add ':nonumber:' after its label, and refer to it as booktools.claims.PAPER_RESULTS "
        f"names it)"
        for b in paper_box_problems(text)
    ]
    return msgs
