"""booktools.ext.buildspeed: the build's repeated lookups done once, with the same pages."""

import importlib.metadata
import io

import pytest
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import docutils_namespace

PAGES = {
    "index": ".. toctree::\n\n   figures\n   text\n\nSee :numref:`fig-a` and :numref:`fig-b`.\n",
    "figures": (
        "Figures\n=======\n\n"
        ".. _fig-a:\n\n.. figure:: a.png\n\n   The first.\n\n"
        ".. _fig-b:\n\n.. figure:: a.png\n\n   The second.\n"
    ),
    "text": "Text\n====\n\n:numref:`fig-a`, :numref:`fig-b`, :numref:`Figure {number} <fig-a>`.\n",
}


def build(tmp_path, extensions, monkeypatch) -> tuple[dict, list]:
    import pybtex.plugin

    # the extension's setup replaces pybtex's lookup for the process: restored after the test
    monkeypatch.setattr(pybtex.plugin, "entry_points", pybtex.plugin.entry_points)
    src = tmp_path / "src"
    src.mkdir(parents=True)
    (src / "conf.py").write_text(f"extensions = {extensions!r}\nnumfig = True\n")
    (src / "a.png").write_bytes(b"")
    for name, text in PAGES.items():
        (src / f"{name}.rst").write_text(text)
    read = []
    get_doctree = BuildEnvironment.get_doctree

    def counted(env, docname):
        read.append(docname)
        return get_doctree(env, docname)

    monkeypatch.setattr(BuildEnvironment, "get_doctree", counted)
    warnings = io.StringIO()
    with docutils_namespace():  # each app registers its nodes and directives afresh
        app = Sphinx(
            src,
            src,
            tmp_path / "out",
            tmp_path / "doctrees",
            "html",
            status=None,
            warning=warnings,
        )
        app.build()
    # (in a session where other tests ran Sphinx, docutils' registry holds their nodes: noise)
    problems = [w for w in warnings.getvalue().splitlines() if "already registered" not in w]
    assert not problems, problems
    assert app.statuscode == 0
    html = {name: (tmp_path / "out" / f"{name}.html").read_text() for name in PAGES}
    return html, read


def test_numbered_references_read_each_doctree_once_and_read_the_same(tmp_path, monkeypatch):
    plain, read_plain = build(tmp_path / "plain", [], monkeypatch)
    fast, read_fast = build(tmp_path / "fast", ["booktools.ext.buildspeed"], monkeypatch)
    for name in PAGES:
        assert fast[name] == plain[name], name
    assert "Fig. 1" in plain["text"] and "Figure 1" in plain["text"] and "Fig. 2" in plain["text"]
    # five references to the figures' page: a reading of its doctree each, then one in all (and
    # one more to write the page itself)
    assert read_plain.count("figures") >= 6 and read_fast.count("figures") <= 2


def test_pybtex_finds_its_plugins_and_the_ones_registered_while_it_runs(monkeypatch):
    import pybtex.plugin

    from booktools.ext import buildspeed

    monkeypatch.setattr(pybtex.plugin, "entry_points", pybtex.plugin.entry_points)
    html = pybtex.plugin.find_plugin("pybtex.backends", "html")
    buildspeed._entry_points_read_once()
    assert pybtex.plugin.entry_points.read_once
    assert pybtex.plugin.find_plugin("pybtex.backends", "html") is html
    assert list(pybtex.plugin.entry_points(group="pybtex.backends", name="html")) == list(
        importlib.metadata.entry_points(group="pybtex.backends", name="html")
    )

    class Mine(pybtex.plugin.Plugin):
        pass

    pybtex.plugin.register_plugin("pybtex.style.formatting", "rankbook-test", Mine)
    try:
        assert pybtex.plugin.find_plugin("pybtex.style.formatting", "rankbook-test") is Mine
    finally:
        pybtex.plugin._RUNTIME_PLUGINS["pybtex.style.formatting"].pop("rankbook-test")
    with pytest.raises(pybtex.plugin.PluginNotFound):
        pybtex.plugin.find_plugin("pybtex.backends", "no-such-backend")
