"""The book's own Sphinx additions, loaded by `_config.yml` (`sphinx: extra_extensions`).

1. Bibliography labels in author-year form ("Dong et al., 2021"), matching the author-year
   citations in the text, in place of the numeric labels of pybtex's `plain` style.
2. A Colab launch button on every chapter page. Colab opens only `.ipynb` files from a
   repository, and the chapters are MyST markdown: the publishing workflow
   (`.github/workflows/pages.yml`) writes a Colab-ready notebook per chapter with
   `python -m booktools.notebooks` and pushes them to the branch `colab_branch` (default
   `notebooks`); the button points there, next to the theme's Binder button (which opens the
   markdown source from the main branch with jupytext).
3. The student notebook of every chapter (solutions stripped, `booktools.student`), written
   into the built site and offered in the page's download menu beside the full notebook.
4. Each inline script once per page (Sphinx 7.4 writes an inline script that an extension
   registers twice; sphinx-thebe's `const THEBE_JS_URL` then throws on its second copy).
5. For the kernels that execute the chapters, `RANKCOLLAPSE_BOOK_BUILD=1`: the exercise checks
   then say that they ran the reference solution the page prints (`book.checks.in_book_build`).
6. The student edition (`book_edition: student`, set by `booktools.edition`): the Colab button
   opens the student notebook, the Binder button goes, and a solution left fails the build.
7. A chapter taken from jupyter-book's execution cache (`booktools.build` fills it) is written to
   `jupyter_execute/` with its outputs: myst-nb 1.4 renders the cached outputs but writes the
   notebook as read, without them, and that file is the page's .ipynb download, the student
   edition's and the PDF's source.
8. The site's ``index.html``, which sends a reader to the first page, written as a page: a
   language, a title, a link to follow where the redirect is blocked, and the book's icon
   (sphinx-external-toc writes the bare ``<meta http-equiv="Refresh">``, for which a browser asks
   the server for ``/favicon.ico``: a 404 in its console, on every visit to the site's address).
"""

from __future__ import annotations

import html
import os
import unicodedata
from collections import Counter
from pathlib import Path

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.util import isurl, logging

from booktools.config import github_repo  # the reading of the address the Colab notebooks share
from booktools.execute import BOOK_BUILD_ENV
from booktools.student import STUDENT_DIR, student_notebook_path, write_student_notebook

COLAB_URL = "https://colab.research.google.com"
logger = logging.getLogger(__name__)


# --- 1. author-year labels ------------------------------------------------------------------


def _last_name(person) -> str:
    """A person's last name as plain text (LaTeX accents and braces resolved)."""
    latex = " ".join(person.prelast_names + person.last_names)
    return unicodedata.normalize("NFC", Text.from_latex(latex).render_as("text"))


class AuthorYearLabels(BaseLabelStyle):
    """`Dong et al., 2021`; `Ba and Kiros, 2016`; a, b, ... when two entries would share one."""

    def format_label(self, entry) -> str:
        persons = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_last_name(p) for p in persons if str(p) != "others"]
        if not names:
            who = entry.fields.get("organization") or entry.key
        elif len(names) == 1 and "others" not in [str(p) for p in persons]:
            who = names[0]
        elif len(names) == 2 and len(persons) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{who}, {entry.fields.get('year', 'n.d.')}"

    def format_labels(self, sorted_entries):
        labels = [self.format_label(entry) for entry in sorted_entries]
        count = Counter(labels)
        seen: Counter = Counter()
        for label in labels:
            if count[label] == 1:
                yield label
            else:
                seen[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]


class PlainAuthorYear(PlainStyle):
    """pybtex's `plain` (sorted by author, year, title) with author-year labels."""

    default_label_style = "authoryear"


register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "plain_authoryear", PlainAuthorYear)


# --- 2. the Colab button --------------------------------------------------------------------


def colab_link(repository_url: str, branch: str, pagename: str) -> str:
    """The Colab address of the notebook `booktools.notebooks` writes for page `pagename`."""
    repo = github_repo(repository_url)
    if repo is None:
        raise ValueError(
            f"Colab opens notebooks from GitHub only; repository url {repository_url!r}"
        )
    org, repo = repo
    return f"{COLAB_URL}/github/{org}/{repo}/blob/{branch}/{pagename}.ipynb"


def _add_colab_button(app, pagename, templatename, context, doctree):
    # runs after sphinx-book-theme's add_launch_buttons (priority 501), which creates the group
    # only on notebook pages (chapters) when a launch provider is configured
    group = next(
        (b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"), None
    )
    if group is None:
        return
    theme = app.config.html_theme_options
    student = app.config.book_edition == "student"
    if student:  # Binder opens the repository's chapter, solutions included: not in this edition
        group["buttons"] = [b for b in group["buttons"] if b.get("text") != "Binder"]
    # the student edition opens the student notebook (booktools.notebooks: student/chapters/...)
    url = colab_link(
        theme.get("repository_url", ""),
        app.config.colab_branch,
        (STUDENT_DIR + "/" if student else "") + pagename,
    )
    group["buttons"].append(
        {
            "type": "link",
            "text": "Colab",
            "tooltip": "Launch on Colab",
            "icon": "_static/images/logo_colab.png",
            "url": url,
        }
    )


# --- 3. student notebooks -------------------------------------------------------------------


def _write_student_notebooks(app):
    """Write every chapter's student notebook (no solutions, not executed) into the site."""
    if app.builder.format != "html":
        return
    root = Path(app.srcdir)
    for docname in app.env.found_docs:
        source = root / f"{docname}.md"
        if not docname.startswith("chapters/") or not source.is_file():
            continue
        text = source.read_text()
        if "{solution-start}" not in text and "jupytext" not in text:
            continue
        write_student_notebook(text, app.outdir, docname)


def _add_student_download(app, pagename, templatename, context, doctree):
    group = next(
        (b for b in context.get("header_buttons", []) if b.get("label") == "download-buttons"), None
    )
    if group is None or not pagename.startswith("chapters/"):
        return
    # the student edition's chapters are executed notebooks (booktools.edition)
    suffixes = (".md", ".ipynb") if app.config.book_edition == "student" else (".md",)
    if not any((Path(app.srcdir) / f"{pagename}{suffix}").is_file() for suffix in suffixes):
        return
    full = next(
        (i for i, b in enumerate(group["buttons"]) if b.get("label") == "download-notebook-button"),
        -1,
    )
    group["buttons"].insert(
        full + 1,
        {
            "type": "link",
            "url": context["pathto"](student_notebook_path(pagename), 1),
            "text": "student .ipynb",
            "icon": "fas fa-user-graduate",
            "tooltip": "Download the student notebook (exercises without their solutions)",
            "label": "download-student-notebook-button",
        },
    )


def _no_solution_in_student_edition(app, doctree):
    """The student edition (``book_edition: student``) must hold no solution: warn (the -W
    build fails) at any solution node left by the stripping of ``booktools.edition``."""
    if app.config.book_edition != "student":
        return
    for node in doctree.findall(lambda n: type(n).__name__.startswith("solution_")):
        logger.warning(
            "the student edition holds a solution (%s)", type(node).__name__, location=node
        )


# --- 4. each inline script once ---------------------------------------------------------------


def _script_key(script):
    """What makes two scripts the same: the file (``None`` and ``""`` alike: inline) and the
    attributes (an inline script's ``body``). Sphinx's own comparison also weighs the priority
    and tells ``None`` from ``""``, which is how the doubles got in."""
    if isinstance(script, str):  # a plain file name (older Sphinx, or an extension)
        return (script, ())
    attrs = getattr(script, "attributes", {}) or {}
    return (
        getattr(script, "filename", None) or "",
        tuple(sorted((k, str(v)) for k, v in attrs.items())),
    )


def dedupe_scripts(scripts: list) -> list:
    """``scripts`` without repeats: an inline script (no file name, a ``body``) and a file
    each appear once, in their first place."""
    seen, out = set(), []
    for script in scripts:
        key = _script_key(script)
        if key in seen:
            continue
        seen.add(key)
        out.append(script)
    return out


def _dedupe_page_scripts(app, pagename, templatename, context, doctree):
    if "script_files" in context:
        context["script_files"] = dedupe_scripts(context["script_files"])


def _write_cached_outputs(app, env):
    """Item 7: after every page is read, before any is written (the theme copies
    `jupyter_execute/<page>.ipynb` into `_sources/` as it writes the page)."""
    import nbformat

    config = getattr(env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache":
        return
    from jupyter_cache import get_cache
    from myst_nb.ext.glue import extract_glue_data_cell

    cache = get_cache(config.execution_cache_path)
    for path in Path(config.output_folder).rglob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        if any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
            continue
        try:
            _, nb = cache.merge_match_into_notebook(nb)
        except KeyError:  # not a cached chapter
            continue
        # as myst-nb does to an executed notebook: the values glued without display leave their
        # cells (they are in <page>.glue.json, which the student edition reads back)
        for cell in nb.cells:
            if cell.cell_type == "code":
                extract_glue_data_cell(cell)
        nbformat.write(nb, path)


_INDEX = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta http-equiv="Refresh" content="0; url={first}">
<title>{title}</title>
{icon}</head>
<body><p><a href="{first}">{title}</a></p></body>
</html>
"""


def _write_index(app, exception) -> None:
    """Before sphinx-external-toc's own (which leaves an index.html it finds alone)."""
    if (
        exception is not None
        or app.builder.name != "html"
        or "index" in app.env.found_docs  # a page of the book's own (the first, or another)
    ):
        return
    icon = app.config.html_favicon
    if icon and not isurl(icon):
        icon = f"_static/{Path(icon).name}"
    Path(app.outdir, "index.html").write_text(
        _INDEX.format(
            lang=html.escape((app.config.language or "en").replace("_", "-")),
            first=html.escape(app.builder.get_target_uri(app.config.root_doc)),
            title=html.escape(app.config.html_title or app.config.project),
            icon=f'<link rel="icon" href="{html.escape(icon)}">\n' if icon else "",
        ),
        encoding="utf8",
    )


def setup(app):
    app.add_config_value("colab_branch", "notebooks", "html")
    # "student": the student edition (booktools.edition): Colab opens the student notebook,
    # no Binder button, and a solution left in a page fails the build
    app.add_config_value("book_edition", "full", "html")
    app.connect("doctree-read", _no_solution_in_student_edition)
    app.connect("html-page-context", _add_colab_button, priority=502)
    app.connect("html-page-context", _add_student_download, priority=503)
    app.connect("html-page-context", _dedupe_page_scripts, priority=999)
    app.connect("build-finished", lambda app, exc: exc is None and _write_student_notebooks(app))
    app.connect("env-updated", _write_cached_outputs)
    app.connect("build-finished", _write_index, priority=400)  # etoc's runs at 500
    # 5. the kernels myst-nb starts inherit this process's environment
    os.environ[BOOK_BUILD_ENV] = "1"
    return {"parallel_read_safe": True, "parallel_write_safe": True}
