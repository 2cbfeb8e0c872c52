"""Two lookups the book build repeated, done once (a profile of the fast build: 30 s, of which
these took 10).

1. ``{numref}``: Sphinx 7.4 resolves each numbered reference by unpickling the whole doctree of the
   page the figure is on (``StandardDomain._resolve_numref_xref`` calls ``env.get_doctree``), to
   read one node of it: 127 references, 145 unpickled doctrees of ~300 kB, 7 s. Here the
   resolution reads each page's doctree once per build; the reference reads the node and does not
   change it. The doctrees are read again after the pages are read (``env-updated``), so a page
   that changed is never served from an earlier reading.
2. pybtex's plugins: pybtex looks each one up among the installed packages' entry points on every
   citation it formats (``importlib.metadata.entry_points``, 161 times, 2.7 s). The installed
   packages do not change during a build; pybtex's own register of plugins added while it runs
   (``register_plugin``, which sphinxcontrib-bibtex uses) is still read first, as before.
"""

from __future__ import annotations

import importlib.metadata


class _DoctreesReadOnce:
    """The build environment, with each page's doctree unpickled once (for reading only)."""

    def __init__(self, env):
        self._env = env
        self._doctrees = {}

    def get_doctree(self, docname: str):
        if docname not in self._doctrees:
            self._doctrees[docname] = self._env.get_doctree(docname)
        return self._doctrees[docname]

    def __getattr__(self, name):
        return getattr(self._env, name)


def _numref_reads_each_doctree_once(app, env) -> None:
    domain = env.get_domain("std")
    resolve = type(domain)._resolve_numref_xref
    once = _DoctreesReadOnce(env)

    def resolve_numref(env, *args, **kwargs):
        return resolve(domain, once, *args, **kwargs)

    domain._resolve_numref_xref = resolve_numref


def _entry_points_read_once() -> None:
    import pybtex.plugin

    if getattr(pybtex.plugin.entry_points, "read_once", False):
        return
    installed = importlib.metadata.entry_points()

    def entry_points(**params):
        return installed.select(**params)

    entry_points.read_once = True
    pybtex.plugin.entry_points = entry_points


def setup(app):
    app.connect("env-updated", _numref_reads_each_doctree_once)
    _entry_points_read_once()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
