"""The book as a citable release: its version, build date and commit on every page and in the
PDF, and its citation on the landing page.

- The **version** is the library's (``pyproject.toml``'s ``[project] version``), which
  ``CITATION.cff`` must repeat: a build whose two versions differ warns, and the book's ``-W``
  build fails. The **build date** is today's (UTC), or ``SOURCE_DATE_EPOCH``'s when set (the
  reproducible-builds convention). The **commit** is the checkout's ``HEAD`` (``git`` run in
  the sources' folder; "with local changes" when tracked files differ from it).
- Every HTML page's footer says "Version 0.1.0, built 2026-12-05 from commit 1a2b3c4", with a
  link to the landing page's "How to cite" and to the PDF of this version. In the PDF the title
  page says the version ("Version 0.1.0", also in every page's header) and, in place of the
  date, when and from which commit it was built.
- ``{book-citation}`` (a directive, on the landing page) shows the citation of the book from
  ``CITATION.cff``: the reference as text, a BibTeX entry, and the paper it builds on.
- ``{{ pdf_link }}``, ``{{ student_pdf_link }}`` and ``{{ book_version }}`` (MyST substitutions)
  name the PDFs of this version (attached to its release on GitHub by the publishing workflow,
  ``.github/workflows/pages.yml``) and the version; ``{{ pdf_links }}`` says which PDFs there
  are, in a sentence.
- The student edition (``book_edition: student``, :mod:`booktools.edition`) links no solution:
  every PDF link and substitution names the student PDF (``book-student.pdf``), and the footer
  names its commit without a link to the repository (which holds the solutions).
"""

from __future__ import annotations

import datetime as _dt
import html
import os
import subprocess
from pathlib import Path

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from booktools.release import citation as read_citation
from booktools.release import project_version

logger = logging.getLogger(__name__)

PDF_NAMES = {
    "pdf_link": ("book.pdf", "the PDF"),
    "student_pdf_link": ("book-student.pdf", "the student PDF"),
}
STUDENT_PDF = PDF_NAMES["student_pdf_link"][0]


def is_student(config) -> bool:
    """Whether the Sphinx ``config`` builds the student edition (``book_edition``, declared by
    ``booktools.ext.bookext``)."""
    return getattr(config, "book_edition", "full") == "student"


def pdf_substitutions(repository: str, version: str, student: bool) -> dict[str, str]:
    """The MyST substitutions naming the PDFs (see the module): in the student edition every one
    names the student PDF, so that no page of it links the PDF with the solutions."""

    def link(key):
        name, words = PDF_NAMES["student_pdf_link" if student else key]
        return f"[{words}]({release_url(repository, version, name)})" if repository else words

    subs = {key: link(key) for key in PDF_NAMES}
    subs["pdf_links"] = (
        f"{link('student_pdf_link')} of this version of the student edition (the book without "
        "its solutions)"
        if student
        else f"{link('pdf_link')} of this version of the whole book (and "
        f"{link('student_pdf_link')}, without the solutions)"
    )
    return subs


def citation(root: Path) -> dict:
    """``CITATION.cff`` of the sources in ``root`` (a staged copy of the sources holds its own)."""
    return read_citation(Path(root) / "CITATION.cff")


def build_date() -> str:
    """Today in UTC as ``YYYY-MM-DD``, or the day of ``SOURCE_DATE_EPOCH`` when it is set."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = _dt.datetime.fromtimestamp(int(epoch), _dt.UTC) if epoch else _dt.datetime.now(_dt.UTC)
    return when.date().isoformat()


def commit(root: Path) -> tuple[str | None, bool]:
    """``(HEAD's full hash, whether tracked files differ from it)`` of the git checkout holding
    ``root``; ``(None, False)`` outside one."""

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode:
            return None, False
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.TimeoutExpired):
        return None, False
    return head.stdout.strip(), bool(changed.stdout.strip())


def stamp(version: str, date: str, sha: str | None, changed: bool) -> str:
    """The line every page and the PDF carry:
    ``Version 0.1.0, built 2026-12-05 from commit 1a2b3c4``."""
    where = (
        (f" from commit {sha[:7]}" + (" with local changes" if changed else ""))
        if sha
        else " (commit unknown)"
    )
    return f"Version {version}, built {date}{where}"


def release_url(repository_url: str, version: str, name: str) -> str:
    """Where the publishing workflow attaches file ``name`` of release ``v<version>``."""
    return f"{repository_url.rstrip('/')}/releases/download/v{version}/{name}"


# --------------------------------------------------------------------------- Sphinx


def _config_inited(app, config) -> None:
    root = Path(app.confdir)
    version = project_version(root)
    sha, changed = commit(root)
    date = build_date()
    config.book_release = {"version": version, "date": date, "sha": sha, "changed": changed}
    config.version = config.release = version
    config.today = f"Built {date}" + (
        f" from commit {sha[:7]}" + (" with local changes" if changed else "") if sha else ""
    )
    elements = dict(config.latex_elements or {})
    elements.setdefault("releasename", "Version")
    config.latex_elements = elements
    repository = (config.html_theme_options or {}).get("repository_url", "")
    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    subs["book_version"] = version
    subs.update(pdf_substitutions(repository, version, is_student(config)))
    config.myst_substitutions = subs
    cited = citation(root).get("version")
    if str(cited) != version:
        logger.warning(
            "CITATION.cff says version %s, pyproject.toml %s: make them the same", cited, version
        )


def footer_html(info: dict, repository: str, cite: str, student: bool) -> str:
    """The footer's line (``info``: what ``_config_inited`` found) with its links: the commit
    (not in the student edition: the repository holds the solutions), "How to cite" (``cite``)
    and the PDF of this version (the student PDF in the student edition)."""
    text = html.escape(stamp(info["version"], info["date"], info["sha"], info["changed"]))
    repository = repository.rstrip("/")
    if info["sha"] and repository and not student:
        short = info["sha"][:7]
        text = text.replace(
            f"commit {short}",
            f'commit <a href="{html.escape(repository)}/commit/{info["sha"]}">{short}</a>',
            1,
        )
    name = STUDENT_PDF if student else PDF_NAMES["pdf_link"][0]
    pdf = release_url(repository, info["version"], name) if repository else None
    links = f'<a href="{cite}">How to cite</a>' + (f' · <a href="{pdf}">PDF</a>' if pdf else "")
    return f'<p class="rc-release">{text} · {links}</p>'


def _footer(app, pagename, templatename, context, doctree) -> None:
    repository = (app.config.html_theme_options or {}).get("repository_url", "")
    # "#": the page itself
    cite = context["pathto"](app.config.root_doc).split("#")[0] + "#how-to-cite"
    context["theme_extra_footer"] = footer_html(
        app.config.book_release, repository, cite, is_student(app.config)
    )


def _authors(authors: list) -> str:
    names = []
    for a in authors:
        if "name" in a:
            names.append(a["name"])
        else:
            names.append(f"{a.get('family-names', '')}, {a.get('given-names', '')}".strip(", "))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def bibtex(cff: dict, key: str = "rankcollapsebook") -> str:
    """A BibTeX entry of the book described by ``cff`` (``CITATION.cff``, as YAML reads it)."""
    year = str(cff.get("date-released", ""))[:4]
    author = " and ".join(
        "{" + a["name"] + "}" if "name" in a else f"{a['family-names']}, {a['given-names']}"
        for a in cff["authors"]
    )
    fields = [
        ("author", author),
        ("title", cff["title"]),
        ("year", year),
        ("edition", f"version {cff['version']}"),
        ("url", cff.get("url") or cff.get("repository-code", "")),
    ]
    body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields if v)
    return f"@book{{{key},\n{body}\n}}"


def reference_text(cff: dict) -> str:
    """The book as a reference in words: authors (year). Title (version X). Address."""
    year = str(cff.get("date-released", ""))[:4]
    url = cff.get("url") or cff.get("repository-code", "")
    return f"{_authors(cff['authors'])} ({year}). {cff['title']} (version {cff['version']}). {url}"


class BookCitation(SphinxDirective):
    """``{book-citation}``: the book's citation from ``CITATION.cff`` (see the module)."""

    has_content = False

    def run(self):
        cff = citation(Path(self.env.app.confdir))
        self.env.note_dependency(str(Path(self.env.app.confdir) / "CITATION.cff"))
        out = [nodes.paragraph(text=reference_text(cff))]
        block = nodes.literal_block(bibtex(cff), bibtex(cff))
        block["language"] = "bibtex"
        out.append(block)
        for ref in cff.get("references", []):
            year = str(ref.get("year", ""))
            where = ref.get("conference", {}).get("name") or ref.get("journal", "")
            doi = f" https://doi.org/{ref['doi']}" if ref.get("doi") else ""
            out.append(
                nodes.paragraph(
                    text=f"The book builds on: {_authors(ref['authors'])} ({year}). "
                    f"{ref['title']}. {where}.{doi}"
                )
            )
        return out


def setup(app):
    # what _config_inited found: version, build date, commit (read by the page footer)
    app.add_config_value("book_release", {}, "env")
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _footer)
    app.add_directive("book-citation", BookCitation)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
