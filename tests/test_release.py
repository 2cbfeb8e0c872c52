"""The book as a citable release: one version in pyproject.toml, CITATION.cff and CHANGELOG.md,
a citation file cffconvert validates, and the version, build date and commit on every page
(booktools.release, tools/booktools/ext/release.py)."""

import re
import shutil
import subprocess

import pytest

from booktools import ROOT
from booktools.ext import release
from booktools.release import editions, notes, project_version, validate_citation, version_problems


def test_the_version_is_the_same_everywhere():
    assert version_problems() == []
    assert project_version() == str(release.citation(ROOT)["version"])


def test_a_version_that_differs_is_found(tmp_path):
    for name in ("pyproject.toml", "CITATION.cff", "CHANGELOG.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    cff = tmp_path / "CITATION.cff"
    cff.write_text(re.sub(r"(?m)^version: .*$", "version: 9.9.9", cff.read_text()))
    problems = version_problems(tmp_path)
    assert len(problems) == 1 and "9.9.9" in problems[0]
    log = tmp_path / "CHANGELOG.md"
    log.write_text(log.read_text().replace(f"## {project_version()} (", "## 0.0.1 (", 1))
    assert any("CHANGELOG.md's newest edition is 0.0.1" in p for p in version_problems(tmp_path))


def test_the_changelog_has_this_version_and_its_notes():
    version = project_version()
    assert editions()[0][0] == version
    assert len(notes(version)) > 200
    with pytest.raises(ValueError, match="no entry"):
        notes("99.0.0")


def test_cffconvert_validates_the_citation_file(tmp_path):
    """cffconvert (in its own throwaway environment, _build/tools/cffconvert: it pins an old
    jsonschema the book's environment cannot take) finds CITATION.cff valid, and a broken copy
    not."""
    result = validate_citation()
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "CITATION.cff"
    broken.write_text(
        (ROOT / "CITATION.cff")
        .read_text()
        .replace("cff-version: 1.2.0", "cff-version: 1.2.0\nnot-a-key: 1")
    )
    assert validate_citation(broken).returncode != 0


def test_the_citation_as_text_and_bibtex():
    cff = release.citation(ROOT)
    text, entry = release.reference_text(cff), release.bibtex(cff)
    assert f"(version {cff['version']})" in text and cff["title"] in text
    assert entry.startswith("@book{") and f"edition = {{version {cff['version']}}}" in entry
    assert (
        release.stamp("0.1.0", "2026-12-05", "0123456789abcdef", True)
        == "Version 0.1.0, built 2026-12-05 from commit 0123456 with local changes"
    )


def _head():
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.build
@pytest.mark.parametrize("edition", ["book", "student edition"])
def test_every_page_carries_the_version_date_and_commit(edition, built_book, student_book):
    """Every page's footer: the version of CITATION.cff, the build date, the commit built from;
    the landing page has the "How to cite" section with the citation of that version. (Both
    builds named in the signature: the session runs this module after the chapters' runs.)"""
    html = built_book / "html" if edition == "book" else student_book
    version = str(release.citation(ROOT)["version"])
    head = _head()
    stamp = re.compile(
        rf'<p class="rc-release">Version {re.escape(version)}, built \d{{4}}-\d{{2}}-\d{{2}} from '
        r"commit "
        rf'(<a href="[^"]*/commit/{head}">)?{head[:7]}'
    )
    pages = [
        p
        for p in html.rglob("*.html")
        if p.relative_to(html).parts[0] not in ("_static", "_sources")
        and 'http-equiv="refresh"' not in p.read_text().lower()
    ]  # index.html only sends the reader to intro.html
    assert len(pages) > 10
    missing = [str(p.relative_to(html)) for p in pages if not stamp.search(p.read_text())]
    assert not missing, (
        f"pages without the stamp of version {version} and commit {head[:7]}: {missing}"
    )
    intro = (html / "intro.html").read_text()
    text = re.sub(r"<[^>]+>", "", intro)  # the BibTeX entry is highlighted: a span per token
    assert 'id="how-to-cite"' in intro and f"(version {version})" in text and "@book{" in text
