"""The chapters' MyST markup as Markdown that Jupyter (or Colab) shows as the book does.

A chapter read as a notebook (jupytext) keeps its MyST: ``{glue}`` placeholders where the numbers
are, ``{numref}``/``{prf:ref}``/``{doc}``/``{ref}``/``{eq}``/``{cite:t}`` roles, exercise, proof and
admonition fences, claim spans. :func:`readable` rewrites a notebook's Markdown cells so that they
read in plain Jupyter:

- a glued value becomes the value of the book's own run, read from the executed notebooks the
  book build wrote (``_build/jupyter_execute/<chapter>.glue.json``), followed by a dagger and,
  at the cell's end, a note saying what the dagger means; without a build, a marked name (the
  value sits between HTML comments naming it, :func:`canonical`);
- a cross-reference becomes its text as the book numbers it ("Theorem 4.1", "Figure 2.3",
  "Exercise 1.6", "(1.2)"; the chapter numbers follow ``_toc.yml``'s numbered chapters, each kind
  counted in its chapter as Sphinx, sphinx-proof and sphinx-exercise do), a page's or section's
  title, or a citation ("Dong et al. (2021)");
- a directive fence becomes a bold title line and its body (theorems and admonitions quoted;
  an exercise keeps its label in an HTML comment, which the grader reads), a labelled equation
  gets its number as ``\\tag``;
- ``[text]{.claim #claim-x}`` and other attribute spans become their text, ``(label)=`` targets
  and ``%`` comments go.

    readable(nb, chapter_path)   # a copy of the notebook, its Markdown cells rewritten
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from pathlib import Path

from . import BUILD, ROOT
from .toc import chapter_key, toc_notebooks

EXECUTED = BUILD / "jupyter_execute"
MARK = "\N{DAGGER}"
GLUE_NOTE = (
    f"*{MARK} A number of the book's own run (its build, fast or full mode, seed as in the "
    "parameters cell); running the notebook computes it again in the code cells above.*"
)
NO_BUILD_NOTE = (
    f"*{MARK} ⟨name⟩: a number the book's build computes, not in the build this notebook was "
    "written from (or written without one): run the code cells above to see it.*"
)

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}(?P<arg>.*)$")
PLAIN_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
SPAN = re.compile(r"\[(?P<text>[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*)\]\{[.#][^}]*\}")
TARGET = re.compile(r"^\((?P<label>[\w:.-]+)\)=\s*$")
EQ_LABEL = re.compile(r"^\$\$\s*\((?P<label>[\w:.-]+)\)\s*$")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*$")

# MyST that plain Jupyter shows raw: roles, directive fences, attribute spans, targets
UNREAD = re.compile(r"\{[\w:-]+\}`|^ {0,3}(?:`{3,}|:{3,})\{|\]\{[.#]|^\([\w:.-]+\)=\s*$", re.M)

# sphinx-proof's numbered boxes (each counted on its own in a chapter)
PRF_KINDS = set(
    "theorem lemma proposition definition corollary conjecture axiom criterion example property "
    "observation remark assumption notation algorithm".split()
)


def plain(text: str) -> str:
    """``text`` without MyST roles' markup (a title that holds a role, say)."""
    return ROLE.sub(lambda m: m["body"].split("<")[0].strip() or m["body"], text)


def _options(lines: list[str]) -> tuple[dict, list[str]]:
    """A directive's ``:key: value`` options and the body after them."""
    opts, i = {}, 0
    while i < len(lines) and OPTION.match(lines[i]):
        m = OPTION.match(lines[i])
        opts[m["key"]] = m["value"].strip()
        i += 1
    return opts, lines[i:]


def _kind(name: str) -> str | None:
    """How the book numbers directive ``name``'s boxes ("Figure", "Theorem"), or ``None``."""
    if name in ("glue:figure", "figure"):
        return "Figure"
    if name in ("exercise", "exercise-start"):
        return "Exercise"
    if name.startswith("prf:") and name[4:] in PRF_KINDS:
        return name[4:].capitalize()
    return None


def chapter_labels(text: str, number: int) -> dict[str, str]:
    """The labels of chapter ``number``'s MyST source ``text`` -> their references' text: its
    numbered boxes (each kind counted on its own, in source order), its labelled equations, its
    sections (and the chapter) by title, as the book's references show them."""
    out, counts = {}, {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = TARGET.match(line)
        if m and i + 1 < len(lines) and (h := HEADING.match(lines[i + 1])):
            title = plain(h["title"])
            out[m["label"]] = title
            continue
        m = EQ_LABEL.match(line)
        if m:
            counts["eq"] = counts.get("eq", 0) + 1
            out[m["label"]] = f"({number}.{counts['eq']})"
            continue
        m = FENCE.match(line)
        kind = _kind(m["name"]) if m else None
        if kind is None:
            continue
        counts[kind] = counts.get(kind, 0) + 1
        opts, _ = _options(lines[i + 1 :])
        label = opts.get("label") or opts.get("name")
        if label:
            out[label] = f"{kind} {number}.{counts[kind]}"
    return out


@lru_cache(maxsize=1)
def book_labels() -> dict[str, str]:
    """Every label of the book -> its reference's text (:func:`chapter_labels` of each chapter,
    numbered in ``_toc.yml``'s order; the other pages' sections), and ``doc:<page>`` -> each
    page's title."""
    out = {}
    chapters = toc_notebooks()
    for number, path in enumerate(chapters, start=1):
        text = path.read_text()
        out.update(chapter_labels(text, number))
        out[f"doc:{chapter_key(path)}"] = _title(text, path.stem)
    for page in sorted(ROOT.glob("*.md")):
        text = page.read_text()
        out.setdefault(f"doc:{page.stem}", _title(text, page.stem))
        for label, title in chapter_labels(text, 0).items():
            if not title.startswith("(0.") and " 0." not in title:
                out.setdefault(label, title)
    return out


def _title(text: str, default: str) -> str:
    return next(
        (plain(h["title"]) for ln in text.splitlines() if (h := HEADING.match(ln))), default
    )


@lru_cache(maxsize=1)
def bibliography() -> dict[str, tuple[str, str]]:
    """``references.bib``'s keys -> (the authors as cited, the year)."""
    out = {}
    text = (ROOT / "references.bib").read_text()
    for entry in re.split(r"\n(?=@)", text):
        key = re.match(r"\s*@\w+\{([^,]+),", entry)
        if not key:
            continue
        author = re.search(r"\bauthor\s*=\s*\{(.*?)\}\s*,?\s*\n", entry, re.S)
        year = re.search(r"\byear\s*=\s*\{?(\d{4})", entry)
        names = [a.strip() for a in author[1].split(" and ")] if author else ["?"]
        last = [n.split(",")[0].strip().strip("{}") if "," in n else n.split()[-1] for n in names]
        who = (
            last[0]
            if len(last) == 1
            else f"{last[0]} and {last[1]}"
            if len(last) == 2
            else f"{last[0]} et al."
        )
        out[key[1].strip()] = (who, year[1] if year else "n.d.")
    return out


def cite(keys: str, parenthetical: bool) -> str:
    """``{cite:t}`` / ``{cite:p}`` of ``keys`` as text: "Dong et al. (2021)", "(Dong et al.,
    2021)"."""
    bib = bibliography()
    found = [bib.get(k.strip(), (k.strip(), "")) for k in keys.split(",")]
    if parenthetical:
        return "(" + "; ".join(f"{w}, {y}" if y else w for w, y in found) + ")"
    return "; ".join(f"{w} ({y})" if y else w for w, y in found)


def glued_values(path: Path, executed: Path | None = None) -> dict[str, str]:
    """The values chapter ``path`` glued in the book build (``<executed>/<chapter>.glue.json``,
    myst-nb's record): name -> the text the page shows. Empty without a build."""
    glue = (executed or EXECUTED) / (chapter_key(path) + ".glue.json")
    if not glue.exists():
        return {}
    return dict(_read_glue(str(glue), glue.stat().st_mtime_ns))


@lru_cache(maxsize=16)
def _read_glue(glue: str, mtime: int) -> tuple:
    out = {}
    for name, output in json.loads(Path(glue).read_text()).items():
        data = output.get("data", {})
        text = data.get("text/markdown")
        if text is None and "text/plain" in data:
            text = data["text/plain"]
            if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
                text = text[1:-1]
        if text is not None:
            out[name] = text
    return tuple(out.items())


def _glue_text(body: str, role: str, values: dict, executed: Path | None = None) -> str:
    doc, _, body = body.rpartition("::")  # another chapter's value: {glue}`other.md::name`
    if doc:
        values = glued_values(ROOT / "chapters" / Path(doc).with_suffix(".md").name, executed)
    name, _, fmt = body.partition(":") if role == "glue:text" else (body, "", "")
    value = values.get(name.strip())
    if value is None:
        return glued(name.strip(), f"⟨{name.strip()}⟩")
    if fmt:
        try:
            value = format(float(value), fmt)
        except ValueError:
            pass
    return glued(name.strip(), value)


def glued(name: str, value: str) -> str:
    """A glued value as the notebooks show it: the value and its mark, between two HTML comments
    naming it (invisible in Jupyter), which :func:`canonical` reads back."""
    return f"<!--glue:{name}-->{value}<!--/glue-->{MARK}"


GLUED = re.compile(r"<!--glue:(?P<name>[^>]*?)-->.*?<!--/glue-->")
EXERCISE_MARK = re.compile(r"^<!-- exercise-start: (?P<label>[\w-]+) -->$")


def canonical(text: str) -> str:
    """A readable Markdown cell's text without what depends on the build it was written from
    (the glued values, the notes on them): two notebooks written from different builds (or
    without one) read the same. The grader compares a submission with the chapter so."""
    text = GLUED.sub(lambda m: "{glue}`" + m["name"] + "`", text)
    for note in (GLUE_NOTE, NO_BUILD_NOTE):
        text = text.replace("\n\n" + note, "").replace(note, "")
    return text


def role_text(role: str, body: str, values: dict, refs: dict, executed: Path | None = None) -> str:
    """One MyST role as the text a reader of the book sees in its place."""
    if role in ("glue", "glue:", "glue:text", "glue:md", "glue:any"):
        return _glue_text(body, role, values, executed)
    if role in ("cite:t", "cite:p", "cite"):
        return cite(body, parenthetical=role != "cite:t")
    m = re.match(r"^(?P<text>.*?)\s*<(?P<target>[^>]+)>$", body, re.S)
    text, target = (m["text"], m["target"]) if m else (None, body)
    target = target.strip()
    if role == "doc":
        key = target.lstrip("/").removesuffix(".md")
        key = re.sub(r"^(\.\./)+", "", key)
        if "/" not in key and f"doc:chapters/{key}" in refs:
            key = f"chapters/{key}"
        return text or refs.get(f"doc:{key}", key)
    found = refs.get(target)
    if role == "numref" and text is not None:
        number = found.split(" ", 1)[-1] if found else target
        return text.replace("%s", number).replace("{number}", number)
    if role == "eq":
        return found or f"({target})"
    if text:
        return text
    return found or target


def _convert_roles(text: str, values: dict, refs: dict, executed: Path | None) -> str:
    text = SPAN.sub(lambda m: m["text"], text)
    return ROLE.sub(lambda m: role_text(m["role"], m["body"], values, refs, executed), text)


def _box(name: str, arg: str, opts: dict, body: list[str], refs: dict) -> list[str]:
    """A directive as Markdown: a bold title line and its body; theorem-like boxes and
    admonitions as a quotation."""
    label = opts.get("label") or opts.get("name")
    arg = arg.strip()
    if name == "exercise-start":  # the label stays, for the grader (booktools.grade_hand)
        mark = [f"<!-- exercise-start: {label} -->"] if label else []
        return [*mark, f"**{refs.get(label, 'Exercise')}**", *body]
    if name in ("exercise-end", "solution-end"):
        return body
    if name == "solution-start":
        return [f"**Solution to {refs.get(arg, 'the exercise')}**", *body]
    if name in ("glue:figure", "figure"):
        caption = " ".join(line.strip() for line in body if line.strip())
        return [f"*{refs.get(label, 'Figure')}.* {caption}".rstrip()]
    if name == "prf:proof":
        return ["*Proof.*" + (f" ({arg})" if arg else ""), *body]
    if name.startswith("prf:") or name == "admonition" or name in ADMONITIONS:
        kind = refs.get(label) or (name.split(":")[-1].capitalize() if name != "admonition" else "")
        title = " ".join(t for t in (kind and f"**{kind}**", arg and f"**{arg}**") if t)
        title = f"**{kind}** ({arg})" if kind and arg else title
        while body and not body[0].strip():
            body = body[1:]
        lines = [title, "", *body] if title else body
        return [("> " + line).rstrip() for line in lines]
    return [f"**{arg or name}**", *body] if arg or body else []


ADMONITIONS = ("note", "tip", "important", "warning", "caution", "attention", "hint", "seealso")


def _convert_fences(lines: list[str], refs: dict) -> list[str]:
    """The directive fences of ``lines`` (nested ones too) as Markdown."""
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or m["name"] == "code-cell":
            out.append(lines[i])
            i += 1
            continue
        fence, j, inner = m["fence"], i + 1, None
        while j < len(lines):  # the closing fence: same characters, as long, outside a code block
            line = lines[j]
            if inner:
                if line.strip().startswith(inner) and not line.strip()[len(inner) :].strip():
                    inner = None
            elif line.strip().startswith(fence) and not line.strip().lstrip(fence[0]):
                break
            elif (p := PLAIN_FENCE.match(line)) and not FENCE.match(line):
                inner = p[1]
            j += 1
        opts, body = _options(lines[i + 1 : j])
        out += _box(m["name"], m["arg"], opts, _convert_fences(body, refs), refs)
        i = j + 1
    return out


def _equations(lines: list[str], refs: dict) -> list[str]:
    """A labelled display equation (``$$ (label)`` closing it) numbered as the book numbers it."""
    out = []
    for line in lines:
        m = EQ_LABEL.match(line)
        number = refs.get(m["label"], "").strip("()") if m else ""
        out += [f"\\tag{{{number}}}", "$$"] if m and number else ["$$"] if m else [line]
    return out


def markdown(
    text: str, values: dict, refs: dict | None = None, executed: Path | None = None
) -> str:
    """A Markdown cell's MyST ``text`` as plain Jupyter Markdown (see the module); ``values``
    are the chapter's glued values (:func:`glued_values`), ``refs`` the labels
    (:func:`book_labels`), ``executed`` where the build's glued values are (another chapter's)."""
    refs = book_labels() if refs is None else refs
    lines = [ln for ln in text.split("\n") if not TARGET.match(ln) and not ln.startswith("%")]
    lines = _convert_fences(_equations(lines, refs), refs)
    out = _convert_roles("\n".join(lines), values, refs, executed)
    out = re.sub(r"\n{3,}", "\n\n", out).strip("\n")
    missing = out.count("⟩<!--/glue-->" + MARK)
    if out.count(MARK) > missing:
        out += "\n\n" + GLUE_NOTE
    if missing:
        out += "\n\n" + NO_BUILD_NOTE
    return out


def readable(nb, path: Path, executed: Path | None = None):
    """A copy of notebook ``nb`` (chapter ``path``, as jupytext reads it, its solutions stripped
    or not) whose Markdown cells read in plain Jupyter (see the module); the glued values are the
    book build's (in ``executed``, default the build's ``jupyter_execute``)."""
    nb = copy.deepcopy(nb)
    values, refs = glued_values(path, executed), book_labels()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = markdown(cell.source, values, refs, executed)
    nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
    text = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = {k: v for k, v in math_macros().items() if re.search(rf"\\{k}(?![A-Za-z])", text)}
    if used:  # the book defines them for MathJax in _config.yml; Jupyter's MathJax needs them here
        import nbformat

        cell = nbformat.v4.new_markdown_cell(
            "$" + "".join(f"\\newcommand{{\\{k}}}{{{v}}}" for k, v in used.items()) + "$"
        )
        cell.metadata["tags"] = ["math-macros"]
        cell.id = "math-macros"
        nb.cells.insert(0, cell)
    return nb


@lru_cache(maxsize=1)
def math_macros() -> dict[str, str]:
    """The formulas' macros the book defines for MathJax (``_config.yml``,
    ``mathjax3_config.tex.macros``): name -> definition."""
    from .config import book_config

    config = book_config().get("sphinx", {}).get("config", {}).get("mathjax3_config") or {}
    return {k: str(v) for k, v in ((config.get("tex") or {}).get("macros") or {}).items()}
