"""The status page's table of declared claims (``{claims-table}``), loaded by `_config.yml`.

Every chapter declares its qualitative statements as claims (``run.claim(...)``,
`book/rankbook/evidence.py`); each declaration glues a JSON record under ``claim.<name>``.
This directive lists them all, a row per claim in the order of `_toc.yml` and of declaration:
the chapter and section, the sentence, the condition that makes it true, the evidence (seeds,
depths, inputs), what this build found, and what the last full-mode run of its chapter found
(``status/status.json``, recorded by ``tools/booktools/status.py``). The build that makes the
page executed every chapter, and a claim it checks that does not hold stops that build, so on a
published (full-mode) page every row checked in full mode held; a fast build (the tests') marks
the claims checked at the paper's scale only.

The records are read from myst-nb's glue caches after every page has been read (a post-transform,
as myst-nb's own cross-page glue does), so the chapters' execution order does not matter. A toc
chapter that glued no claim at all fails the build: a chapter whose prose states results declares
them.
"""

from __future__ import annotations

import json

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

from booktools import ROOT
from booktools.outputs import claim_records
from booktools.toc import toc_notebooks

HEADER = ("where", "claim", "condition", "evidence", "checked")
# written by tools/booktools/status.py: each run's claims
STATUS_JSON = ROOT / "status" / "status.json"


class claims_pending(nodes.General, nodes.Element):
    """Placeholder replaced by the table once every chapter has been executed."""


class ClaimsTable(SphinxDirective):
    has_content = False

    def run(self):
        for path in toc_notebooks():
            self.env.note_dependency(str(path))
        return [claims_pending()]


def _records(folder: str, docname: str) -> list[dict]:
    from myst_nb.ext.glue.crossref import read_glue_cache

    return claim_records(
        {key: output["data"] for key, output in read_glue_cache(folder, docname).items()}
    )


def _verdict(r: dict) -> str:
    if r["checked"]:
        return f"held ({r['mode']}, seed {r['seed']})"
    state = "held" if r["holds"] else "did not hold"
    return f"checked in full mode only; {state} in this {r['mode']} run"


def full_runs(path=STATUS_JSON) -> dict[str, dict]:
    """Each chapter's last full-mode run as booktools.status recorded it: docname -> run."""
    try:
        status = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return {
        doc: entry["runs"]["full"]
        for doc, entry in status.get("chapters", {}).items()
        if "full" in entry.get("runs", {})
    }


def _last_full(run: dict | None, name: str) -> str:
    """What the last recorded full-mode run of the claim's chapter says about the claim."""
    if run is None:
        return "no full run recorded"
    day = run.get("measured", "")[:10]
    if not run.get("ok"):
        failed = name in run.get("error", "")
        return (
            f"did not hold ({day})" if failed else f"the run failed ({day}): {run.get('error', '')}"
        )
    claim = run.get("claims", {}).get(name)
    if claim is None:
        return (
            f"not declared in the run of {day} (declared since)"
            if "claims" in run
            else f"not recorded by the run of {day} (before claims were recorded)"
        )
    return f"held ({day})" if claim["holds"] else f"did not hold ({day})"


def _cell(*children) -> nodes.entry:
    entry = nodes.entry()
    para = nodes.paragraph()
    para.extend(children)
    entry += para
    return entry


def _text(s: str) -> nodes.entry:
    return _cell(nodes.Text(s))


def inline(s: str) -> list[nodes.Node]:
    """A claim's text as docutils nodes: ``$...$`` becomes inline math (typeset like the chapters'),
    the rest stays text. A ``$`` without its closing pair is refused, naming the text."""
    parts = s.split("$")
    if len(parts) % 2 == 0:
        raise ValueError(f"an unpaired $ in a claim's text: {s!r}")
    return [nodes.math(p, p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]


def _where(i: int, docname: str, refdoc: str, title: str, section: str) -> nodes.entry:
    ref = addnodes.pending_xref(
        "",
        refdomain="std",
        reftype="doc",
        reftarget="/" + docname,
        refdoc=refdoc,
        refexplicit=True,
        refwarn=True,
    )
    ref += nodes.inline(title, title)
    return _cell(nodes.Text(f"{i}. "), ref, nodes.Text(f", section {section}"))


def table(
    rows: list[tuple[str, dict]], refdoc: str, full: dict[str, dict] | None = None
) -> nodes.table:
    tbl = nodes.table(classes=["rc-claims-table"])
    group = nodes.tgroup(cols=len(HEADER))
    tbl += group
    for width in (12, 28, 24, 18, 18):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    hrow = nodes.row()
    for h in HEADER:
        hrow += _text(h)
    head += hrow
    group += head
    body = nodes.tbody()
    for i, (docname, r) in enumerate(rows, start=1):
        row = nodes.row()
        row += _where(i, docname, refdoc, r["chapter"].replace("_", " "), r["section"])
        for key in ("sentence", "condition", "evidence"):
            row += _cell(*inline(r[key] or f"(claim {r['name']}: its sentence was not found)"))
        row += _text(
            f"this build: {_verdict(r)}; last full run: "
            f"{_last_full((full or {}).get(docname), r['name'])}"
        )
        body += row
    group += body
    return tbl


class FillClaimsTable(SphinxPostTransform):
    default_priority = 6  # after myst-nb's cross-page glue (5), before references are resolved (10)

    def run(self, **kwargs):
        pending = list(self.document.findall(claims_pending))
        if not pending:
            return
        folder = self.env.mystnb_config.output_folder
        rows, silent = [], []
        for path in toc_notebooks():
            docname = path.relative_to(ROOT).with_suffix("").as_posix()
            found = _records(folder, docname)
            if not found:
                silent.append(docname)
            rows.extend((docname, r) for r in found)
        if silent:
            raise RuntimeError(
                "the status page's table of claims: no declared claim found in "
                f"{', '.join(silent)} "
                "(each chapter declares its qualitative statements with run.claim)"
            )
        for node in pending:
            node.replace_self(table(rows, self.env.docname, full_runs()))


def setup(app):
    app.add_node(claims_pending)
    app.add_directive("claims-table", ClaimsTable)
    app.add_post_transform(FillClaimsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
