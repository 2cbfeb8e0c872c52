"""The PDF's LaTeX set-up (the LaTeX builder of ``booktools.pdf``).

1. The book's formulas use a few macros of its own (``\\res``, ``\\SA``, ...), defined once in
   ``_config.yml`` for MathJax (``mathjax3_config.tex.macros``). This extension writes the same
   definitions into the LaTeX preamble, so that the two cannot drift apart.
2. sphinx-proof (0.4) labels a theorem or definition in LaTeX with the document it finds by
   matching the chapter's title against its section's names, which fails for a title with an
   apostrophe ("LayerNorm's rank argument", "the paper's measurements"): the label became
   ``None:def-ln-factors`` and every reference to it "??". Here the document is the file the
   LaTeX writer is in (``curfilestack``), the name Sphinx's own references use.
3. The book's shape, as the HTML book numbers it: the landing page, the notation and the guide
   are front matter (unnumbered chapters, roman page numbers), the parts of ``_toc.yml`` with
   ``numbered`` are LaTeX parts whose chapters are numbered 1, 2, ... as on the pages (so
   "Figure 2.1" and "Theorem 2.1" are in chapter 2 in both), and the pages after them (status,
   bibliography) are back matter. LaTeX's ``book`` class (``latex_docclass`` in ``_config.yml``)
   has ``\\frontmatter``, ``\\mainmatter`` and ``\\backmatter``; they are put at the head of the
   documents where each begins, and the running head says "Chapter N." in the main matter only.
4. A proof (sphinx-proof's ``{prf:proof}``) is an admonition without a title, its first line
   starting "Proof. ": Sphinx's LaTeX box took the body's first token for the title, an empty
   title bar above the text. In the LaTeX build, the box is titled "Proof." and the body's own
   "Proof. " goes (the HTML pages keep theirs).
"""

from __future__ import annotations


def latex_macros(mathjax_config: dict | None) -> str:
    """``\\newcommand`` lines for the macros of a MathJax 3 configuration (``tex.macros``: a name
    and its TeX, or a list ``[TeX, number of arguments]``)."""
    macros = ((mathjax_config or {}).get("tex") or {}).get("macros") or {}
    lines = []
    for name, body in macros.items():
        args = 0
        if isinstance(body, (list, tuple)):
            body, args = body[0], int(body[1]) if len(body) > 1 else 0
        lines.append(f"\\newcommand{{\\{name}}}" + (f"[{args}]" if args else "") + f"{{{body}}}")
    return "\n".join(lines)


# the running head names a chapter "Chapter 3. Title" in the main matter only; fancyhdr's own
# \chaptermark (which Sphinx's page style uses) numbers the front and back matter's too
CHAPTER_MARK = (
    "\\makeatletter\n\\renewcommand{\\chaptermark}[1]{\\markboth{\\if@mainmatter"
    "\\@chapapp\\ \\thechapter.\\ \\fi #1}{}}\n\\makeatother"
)


def _add_preamble(app, config) -> None:
    elements = dict(config.latex_elements or {})
    added = [latex_macros(config.mathjax3_config), CHAPTER_MARK]
    elements["preamble"] = "\n".join([elements.get("preamble", ""), *added]).strip() + "\n"
    config.latex_elements = elements


def _visit_proof_box(self, node) -> None:
    """sphinx-proof's LaTeX visitor, labelling the box with the document it is in."""
    from sphinx_proof.nodes import find_parent, latex_admonition_start

    # the file the LaTeX writer is in (it enters each inlined document's start_of_file); the
    # root document is not inlined: there, sphinx-proof's own search
    docname = (
        self.curfilestack[-1]
        if self.curfilestack
        else find_parent(self.builder.env, node, "section")
    )
    self.body.append("\\label{" + f"{docname}:{node.attributes['label']}" + "}")
    self.body.append(latex_admonition_start)


def matter_marks(toc: dict) -> dict[str, str]:
    """The LaTeX to put at the head of a document, by document: ``\\mainmatter`` and
    ``\\part{caption}`` where a numbered part begins, ``\\backmatter`` where the first
    unnumbered part after them begins (``toc``: ``_toc.yml`` as YAML reads it)."""
    marks, numbered_seen = {}, False
    for part in toc.get("parts", []):
        chapters = part.get("chapters") or []
        if not chapters:
            continue
        first = chapters[0]["file"].removesuffix(".md")
        if part.get("numbered"):
            caption = part.get("caption", "")
            marks[first] = ("" if numbered_seen else "\\mainmatter\n") + f"\\part{{{caption}}}"
            numbered_seen = True
        elif numbered_seen:
            marks[first] = "\\backmatter"
            break
    return marks


def _mark_matter(app, doctree) -> None:
    from pathlib import Path

    import yaml
    from docutils import nodes

    if app.builder.format != "latex":
        return
    docname = app.env.docname
    if docname == app.config.root_doc:
        latex = "\\frontmatter"
    else:
        toc = yaml.safe_load((Path(app.srcdir) / "_toc.yml").read_text())
        latex = matter_marks(toc).get(docname)
    if latex:
        doctree.insert(0, nodes.raw("", latex + "\n", format="latex"))


def title_proofs(doctree) -> int:
    """Each proof admonition of ``doctree`` without a title gets the title "Proof.", taken off
    its first paragraph's text (see the module); returns how many."""
    from docutils import nodes

    done = 0
    for box in doctree.findall(nodes.admonition):
        if "proof" not in box["classes"] or (box.children and isinstance(box[0], nodes.title)):
            continue
        para = box.next_node(nodes.paragraph)
        text = para.next_node(nodes.Text) if para is not None else None
        if text is None or not text.startswith("Proof. "):
            continue
        text.parent.replace(text, nodes.Text(text[len("Proof. ") :]))
        box.insert(0, nodes.title("", "Proof."))
        done += 1
    return done


def _title_proofs(app, doctree, docname) -> None:
    if app.builder.format == "latex":
        title_proofs(doctree)


def setup(app):
    app.connect("doctree-read", _mark_matter)
    app.connect("doctree-resolved", _title_proofs)
    app.connect("config-inited", _add_preamble)
    # after sphinx-proof has registered its nodes: their LaTeX visitors replaced (see the module)
    app.setup_extension("sphinx_proof")
    from sphinx_proof.nodes import (
        NODE_TYPES,
        depart_enumerable_node,
        depart_unenumerable_node,
        unenumerable_node,
    )

    for node in NODE_TYPES.values():
        app.add_node(node, override=True, latex=(_visit_proof_box, depart_enumerable_node))
    app.add_node(
        unenumerable_node, override=True, latex=(_visit_proof_box, depart_unenumerable_node)
    )
    return {"parallel_read_safe": True, "parallel_write_safe": True}
