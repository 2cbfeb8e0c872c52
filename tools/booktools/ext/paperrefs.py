"""References to the paper's results, which the book does not number.

The paper's statements are boxes of their own style: unnumbered (``:nonumber:``), titled with the
paper's number ("the paper's Theorem 2.2"), so that the book's counter numbers only the book's
own results and "Theorem 2.2" never names two results (``booktools.claims.paper_box_problems``
checks the boxes). A reference written with its text, ``{prf:ref}`the paper's Theorem 2.2
<thm-collapse-single>```, reads as written. sphinx-proof renders a bare reference to an
unnumbered box as its type alone ("Theorem "); this extension gives it the name
``booktools.results.PAPER_RESULTS`` lists for the box ("the paper's Theorem 2.2"), capitalised at
the start of a sentence. Loaded by `_config.yml` (`sphinx: extra_extensions`).
"""

from __future__ import annotations

import re

from docutils import nodes


def _target(ref: nodes.reference) -> str:
    return ref.get("refid") or (ref.get("refuri") or "").rpartition("#")[2]


def _starts_sentence(ref: nodes.reference) -> bool:
    parent = ref.parent
    if parent is None:
        return False
    i = parent.index(ref)
    if i == 0:
        return isinstance(parent, nodes.paragraph)
    before = parent[i - 1].astext()
    return bool(re.search(r"[.!?]\s+$", before))


def name_paper_references(app, doctree, docname) -> int:
    """Give every bare reference to an unnumbered box of the paper's results its name; returns how
    many."""
    from booktools.results import PAPER_RESULTS

    proofs = getattr(app.env, "proof_list", {})
    named = 0
    for ref in list(doctree.findall(nodes.reference)):
        target = _target(ref)
        box = proofs.get(target)
        if target not in PAPER_RESULTS or not box or not box.get("nonumber"):
            continue
        if ref.astext().strip() != box["realtype"].title():  # written with its own text: leave it
            continue
        name = PAPER_RESULTS[target]
        if _starts_sentence(ref):
            name = name[0].upper() + name[1:]
        for child in list(ref.children):
            ref.remove(child)
        ref += nodes.Text(name)
        named += 1
    return named


def setup(app):
    app.connect("doctree-resolved", name_paper_references)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
