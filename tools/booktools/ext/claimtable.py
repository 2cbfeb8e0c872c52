"""The status page's list of declared claims (``{claims-table}``), loaded by `_config.yml`.

Every chapter marks its qualitative statements in the prose (``[sentence]{.claim #claim-NAME}``)
and declares each beside the numbers that decide it (``run.claim("NAME", ...)``,
`book/rankbook/evidence.py`); each declaration glues a JSON record under ``claim.<name>``. This
directive shows them grouped by chapter, in the order of `_toc.yml` and of declaration, one
collapsible group per chapter (``<details>``; open in print and in the PDF): for each claim its
section, its whole sentence as the chapter's page shows it (copied from the chapter's doctree,
glued numbers and formulas included) with a link to it, the condition that makes it true and the
evidence behind it, and how often it held in the claims sweep (``status/claims.json``, written by
``python -m booktools.sweep``: "10/10 fast, 5/5 full"), with what this build found. A chapter
changed since its sweep says so. The page also prints the sweep's date and wall time.

The records are read from myst-nb's glue caches after every page has been read (a post-transform,
as myst-nb's own cross-page glue does), so the chapters' execution order does not matter. A toc
chapter that glued no claim at all fails the build: a chapter whose prose states results declares
them.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

from booktools import ROOT
from booktools.outputs import claim_records
from booktools.sweep import (
    FAST_SEEDS,
    FEWER_FULL_SEEDS,
    FULL_SEEDS,
    RECORD,
    checked_modes,
    held,
    read,
    source_hash,
)
from booktools.toc import toc_notebooks

HEADER = ("§", "claim", "held")


class claims_pending(nodes.General, nodes.Element):
    """Placeholder replaced by the claims once every chapter has been executed."""


class claims_group(nodes.General, nodes.Element):
    """One chapter's claims: ``<details>`` in HTML, a plain block elsewhere."""


class claims_summary(nodes.General, nodes.TextElement):
    """A group's always-visible line: ``<summary>`` in HTML, a bold paragraph elsewhere."""


class ClaimsTable(SphinxDirective):
    has_content = False

    def run(self):
        for path in toc_notebooks():
            self.env.note_dependency(str(path))
        self.env.note_dependency(str(RECORD))
        return [claims_pending()]


def _records(folder: str, docname: str) -> list[dict]:
    from myst_nb.ext.glue.crossref import read_glue_cache

    return claim_records(
        {key: output["data"] for key, output in read_glue_cache(folder, docname).items()}
    )


def inline(s: str) -> list[nodes.Node]:
    """A claim's MyST source as docutils nodes where its page's rendering is not at hand:
    ``$...$`` becomes inline math, the rest stays text. A ``$`` without its closing pair is
    refused, naming the text."""
    parts = s.split("$")
    if len(parts) % 2 == 0:
        raise ValueError(f"an unpaired $ in a claim's text: {s!r}")
    return [nodes.math(p, p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]


_END = re.compile(r"[.!?](?=[)\"”’]?(\s|$))")


def _side(nodes_, forward: bool) -> list[nodes.Node]:
    """Copies of the nodes next to a claim's span, up to the end (``forward``) or the start of its
    sentence: a text node is cut at the first sentence end (".", "!", "?" before a space)."""
    out = []
    for node in nodes_ if forward else reversed(nodes_):
        if isinstance(node, nodes.Text):
            text = node.astext()
            ends = list(_END.finditer(text))
            if forward and ends:
                out.append(nodes.Text(text[: ends[0].end()]))
                break
            if not forward and ends:
                out.append(nodes.Text(text[ends[-1].end() :].lstrip()))
                break
            out.append(nodes.Text(text))
        else:
            out.append(node.deepcopy())
    return out if forward else out[::-1]


def _is_bundle(node) -> bool:
    """A glued value in a chapter's doctree: myst-nb's bundle of the value's forms (plain text,
    markdown), which its own post-transform reduces to one on the chapter's page."""
    return isinstance(node, nodes.container) and node.get("nb_element") == "mime_bundle"


def _bundle_text(bundle) -> str:
    forms = {child.get("mime_type"): child for child in bundle.children}
    chosen = forms.get("text/markdown") or forms.get("text/plain") or next(iter(forms.values()))
    return " ".join(chosen.astext().split())


def page_sentences(doctree) -> dict[str, tuple[list, list, list]]:
    """Each claim's sentence as its page shows it: name -> (the words before the claim's span in
    its sentence, the span's content, the words after it), copies of the page's nodes (glued
    values, formulas, emphasis) without ids (the page holds them) and with cross-references
    reduced to their text (they point from the chapter's page, not this one)."""
    out = {}
    for span in doctree.findall(nodes.inline):
        if "claim" not in span["classes"]:
            continue
        name = next((i[len("claim-") :] for i in span["ids"] if i.startswith("claim-")), None)
        if name is None:
            continue
        # node.deepcopy copies the children only; copy.deepcopy would follow each node's parent
        # and copy the whole chapter page, once per claim
        parts = [[child.deepcopy() for child in span.children]]
        para = span.parent
        if isinstance(para, nodes.paragraph):
            i = para.index(span)
            parts = [_side(para.children[:i], False), parts[0], _side(para.children[i + 1 :], True)]
        else:
            parts = [[], parts[0], []]
        clean = []
        for part in parts:
            holder = nodes.inline("", "", *part)
            for node in holder.findall(nodes.Element):
                node["ids"], node["names"] = [], []
            for ref in list(holder.findall(addnodes.pending_xref)):
                ref.replace_self(nodes.Text(ref.astext()))
            for bundle in list(holder.findall(_is_bundle)):
                bundle.replace_self(nodes.inline("", _bundle_text(bundle)))
            clean.append(list(holder.children))
        out[name] = tuple(clean)
    return out


def counts(entry: dict | None, r: dict) -> str:
    """How often the claim held in the sweep: ``10/10 fast, 5/5 full``, with its scale or rate."""
    if not entry:
        return "not swept"
    got = []
    for mode in ("fast", "full"):
        k, n, _false = held(entry, mode, r["name"])
        if n:
            unchecked = mode not in checked_modes(r["scale"])
            got.append(f"{k}/{n} {mode}" + (" (not checked)" if unchecked else ""))
    text = ", ".join(got) or "not in the sweep's runs"
    if r["scale"] == "full":
        text = "full mode only: " + text
    if r.get("rate") is not None:
        text = f"states ≥ {r['rate']:.0%} of draws: " + text
    return text


def this_build(r: dict) -> str:
    state = "held" if r["holds"] else "false"
    if not r["checked"]:
        state = f"not checked ({state})"
    elif not r["holds"] and r.get("rate") is not None:
        state = "false (a draw its rate allows)"
    return f"this build ({r['mode']}, seed {r['seed']}): {state}"


def _cell(*children) -> nodes.entry:
    entry = nodes.entry()
    para = nodes.paragraph()
    para.extend(children)
    entry += para
    return entry


def _text(s: str) -> nodes.entry:
    return _cell(nodes.Text(s))


def _link(children, refuri: str | None) -> nodes.Node:
    if refuri is None:
        return nodes.inline("", "", *children)
    return nodes.reference("", "", *children, refuri=refuri, internal=True)


def _claim_cell(r: dict, sentence, refuri: str | None) -> nodes.entry:
    """The claim's whole sentence (its span linked, the words around it as the page has them), then
    its condition and evidence."""
    before, claim, after = sentence or ([], inline(r["sentence"] or r["name"]), [])
    entry = _cell(*before, _link(claim, refuri), *after)
    for label, key in (("Condition: ", "condition"), ("Evidence: ", "evidence")):
        detail = nodes.paragraph(classes=["rc-claim-detail"])
        detail += nodes.strong("", label)
        detail.extend(inline(r[key]))
        entry += detail
    return entry


def table(rows, entry: dict | None, sentences: dict, uri) -> nodes.table:
    """One chapter's claims: ``rows`` its glued records, ``entry`` its sweep record, ``sentences``
    its page's spans (:func:`page_sentences`), ``uri(name)`` the link to a claim (or ``None``)."""
    tbl = nodes.table(classes=["rc-claims-table"])
    group = nodes.tgroup(cols=len(HEADER))
    tbl += group
    for width in (6, 70, 24):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    hrow = nodes.row()
    for h in HEADER:
        hrow += _text(h)
    head += hrow
    group += head
    body = nodes.tbody()
    for r in rows:
        row = nodes.row()
        row += _text(r["section"])
        row += _claim_cell(r, sentences.get(r["name"]), uri(r["name"]))
        cell = _text(counts(entry, r))
        cell += nodes.paragraph("", this_build(r), classes=["rc-claim-detail"])
        row += cell
        body += row
    group += body
    return tbl


def _seconds(s: float) -> str:
    return f"{s / 60:.0f} min" if s >= 120 else f"{s:.0f} s"


def sweep_summary(record: dict) -> nodes.paragraph:
    """The sweep's seeds, date and wall time, as the page prints them."""
    fewer = ", ".join(
        f"{c.replace('_', ' ')} at {n} ({why})" for c, (n, why) in FEWER_FULL_SEEDS.items()
    )
    para = nodes.paragraph()
    para += nodes.Text("The claims sweep (")
    para += nodes.literal("", "python -m booktools.sweep")
    text = (
        f") runs every chapter at fast seeds {FAST_SEEDS[0]}–{FAST_SEEDS[-1]} and full seeds "
        f"{FULL_SEEDS[0]}–{FULL_SEEDS[-1]}; fewer full seeds for cost: {fewer}. "
    )
    sweeps = record.get("sweeps", [])
    if not sweeps:
        text += "No sweep is recorded yet."
    else:
        whole = [s for s in sweeps if len(s["chapters"]) == len(toc_notebooks())]
        shown = whole[-1:] or sweeps[-3:]
        text += "; ".join(
            f"{'The whole book' if s in whole else ', '.join(s['chapters'])} swept on "
            f"{s['started'][:10]} in {_seconds(s['wall_seconds'])} of wall time "
            f"({s['runs']} runs, {s['jobs']} at once, commit {str(s['commit'])[:7]})"
            for s in shown
        )
        text += "."
    para += nodes.Text(text)
    return para


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _summary(title: str, rows, entry: dict | None, current: str | None) -> claims_summary:
    """A chapter's line: its claims, its sweep (date, seeds, run time), how many claims held at
    every seed they are checked at, and whether the chapter changed since."""
    if not entry:
        return claims_summary("", f"{title}: {_plural(len(rows), 'claim')}; not swept")
    below, unstated = 0, 0
    for r in rows:
        for mode in checked_modes(r["scale"]):
            k, n, _false = held(entry, mode, r["name"])
            if k < n:
                below += 1
                rate = r.get("rate")
                unstated += rate is None or k < rate * n - 1e-9
                break
    modes = [m for m in ("fast", "full") if m in entry]
    seeds = ", ".join(f"{len(entry[m]['seeds'])} {m} seeds" for m in modes)
    run_time = sum(sum(entry[m]["seconds"].values()) for m in modes)
    state = (
        f"swept {max(entry[m]['swept'] for m in modes)[:10]} at {seeds} "
        f"({_seconds(run_time)} of runs); "
    )
    if not below:
        state += "each held at every seed it is checked at"
    else:
        state += f"{below} below 100 %"
        state += (
            f", {unstated} of them stating no rate they meet" if unstated else ", each at its rate"
        )
    if any(entry[m].get("source_sha256") != current for m in modes):
        state += "; the chapter has changed since: sweep it again"
    return claims_summary("", f"{title}: {_plural(len(rows), 'claim')}; {state}")


class FillClaimsTable(SphinxPostTransform):
    default_priority = 6  # after myst-nb's cross-page glue (5), before references are resolved (10)

    def run(self, **kwargs):
        pending = list(self.document.findall(claims_pending))
        if not pending:
            return
        folder = self.env.mystnb_config.output_folder
        record = read(RECORD)
        html = self.app.builder.format == "html"
        out, silent = [sweep_summary(record)], []
        for path in toc_notebooks():
            docname = path.relative_to(ROOT).with_suffix("").as_posix()
            rows = _records(folder, docname)
            if not rows:
                silent.append(docname)
                continue
            try:
                sentences = page_sentences(self.env.get_doctree(docname))
            except FileNotFoundError:
                sentences = {}
            page = self.app.builder.get_relative_uri(self.env.docname, docname)

            def uri(name, page=page, sentences=sentences):
                return f"{page}#claim-{name}" if html and name in sentences else None

            number = self.env.toc_secnumbers.get(docname, {}).get("")
            title = self.env.titles[docname].astext() if docname in self.env.titles else docname
            title = (f"{'.'.join(map(str, number))}. " if number else "") + title
            entry = record["chapters"].get(path.stem)
            group = claims_group(classes=["rc-claims-chapter"])
            group += _summary(title, rows, entry, source_hash(path))
            group += table(rows, entry, sentences, uri)
            out.append(group)
        if silent:
            raise RuntimeError(
                "the status page's table of claims: no declared claim found in "
                f"{', '.join(silent)} "
                "(each chapter declares its qualitative statements with run.claim)"
            )
        for node in pending:
            node.replace_self([n.deepcopy() for n in out] if len(pending) > 1 else out)


def _visit_group_html(self, node):
    self.body.append(self.starttag(node, "details", CLASS="rc-claims-chapter"))


def _depart_group_html(self, node):
    self.body.append("</details>\n")


def _visit_summary_html(self, node):
    self.body.append(self.starttag(node, "summary", ""))


def _depart_summary_html(self, node):
    self.body.append("</summary>\n")


def _visit_summary_latex(self, node):
    self.body.append("\n\n\\noindent\\textbf{")


def _depart_summary_latex(self, node):
    self.body.append("}\n\n")


def _visit_summary_text(self, node):
    self.new_state(0)


def _depart_summary_text(self, node):
    self.end_state()


def _pass(self, node):
    pass


def setup(app):
    app.add_node(claims_pending)
    app.add_node(
        claims_group,
        html=(_visit_group_html, _depart_group_html),
        latex=(_pass, _pass),
        text=(_pass, _pass),
    )
    app.add_node(
        claims_summary,
        html=(_visit_summary_html, _depart_summary_html),
        latex=(_visit_summary_latex, _depart_summary_latex),
        text=(_visit_summary_text, _depart_summary_text),
    )
    app.add_directive("claims-table", ClaimsTable)
    app.add_post_transform(FillClaimsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
