"""The book's Sphinx extensions, loaded by ``_config.yml`` (``sphinx: extra_extensions``) by their
dotted names (``booktools.ext.bookext``, ...): booktools is installed with the library.

- :mod:`~booktools.ext.bookext`: author-year bibliography labels, the Colab button, the student
  edition's switches, the site's index page;
- :mod:`~booktools.ext.booksources`: which files under the repository are the book's sources;
- :mod:`~booktools.ext.guide`: the instructor's guide's generated tables;
- :mod:`~booktools.ext.claimtable`: the status page's table of every chapter's declared claims;
- :mod:`~booktools.ext.a11y`: every figure's alt text, read from its SVG; list roles;
- :mod:`~booktools.ext.release`: the version, build date and commit on every page; the citation;
- :mod:`~booktools.ext.pdfsetup`: the PDF's LaTeX (the formulas' macros, front/main/back matter);
- :mod:`~booktools.ext.paperrefs`: a bare reference to the paper's results reads by name;
- :mod:`~booktools.ext.buildspeed`: two lookups the build repeated (numbered references' doctrees,
  pybtex's plugins), done once.
"""
