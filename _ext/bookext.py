"""The book's own Sphinx additions, loaded by `_config.yml` (`sphinx: local_extensions`).

1. Bibliography labels in author-year form ("Dong et al., 2021"), matching the author-year
   citations in the text, in place of the numeric labels of pybtex's `plain` style.
2. A Colab launch button on every chapter page. Colab opens only `.ipynb` files from a
   repository, and the chapters are MyST markdown: the publishing workflow
   (`.github/workflows/pages.yml`) writes a Colab-ready notebook per chapter with
   `scripts/notebooks.py` and pushes them to the branch `colab_branch` (default `notebooks`);
   the button points there, next to the theme's Binder button (which opens the markdown source
   from the main branch with jupytext).
"""

from __future__ import annotations

import unicodedata
from collections import Counter

from booktools.config import github_repo  # the reading of the address the Colab notebooks share
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle

COLAB_URL = "https://colab.research.google.com"


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
    """The Colab address of the notebook `scripts/notebooks.py` writes for page `pagename`."""
    repo = github_repo(repository_url)
    if repo is None:
        raise ValueError(f"Colab opens notebooks from GitHub only; repository url {repository_url!r}")
    org, repo = repo
    return f"{COLAB_URL}/github/{org}/{repo}/blob/{branch}/{pagename}.ipynb"


def _add_colab_button(app, pagename, templatename, context, doctree):
    # runs after sphinx-book-theme's add_launch_buttons (priority 501), which creates the group
    # only on notebook pages (chapters) when a launch provider is configured
    group = next((b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"), None)
    if group is None:
        return
    theme = app.config.html_theme_options
    url = colab_link(theme.get("repository_url", ""), app.config.colab_branch, pagename)
    group["buttons"].append(
        {
            "type": "link",
            "text": "Colab",
            "tooltip": "Launch on Colab",
            "icon": "_static/images/logo_colab.png",
            "url": url,
        }
    )


def setup(app):
    app.add_config_value("colab_branch", "notebooks", "html")
    app.connect("html-page-context", _add_colab_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
