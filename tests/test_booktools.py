"""The book's tooling (tools/booktools, booktools.ext.booksources, tasks.py), without a book build.

The build's progress report is tested on recorded jupyter-book logs (tests/data/build_log_*.txt:
a two-chapter book, one chapter whose second cell fails, recorded with ``{ROOT}`` for its folder).
"""

import ast
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from booktools import ROOT
from booktools.build import BuildProgress, cell_location
from booktools.outputs import differences, figure_pixels, results

DATA = Path(__file__).parent / "data"


# -------------------------------------------------------------------------- which files are sources


def test_tool_folders_are_excluded_by_rule(tmp_path):
    """A venv by any name (pyvenv.cfg, conda-meta), hidden folders and tool caches are left out;
    the sources, and a folder merely named like an environment without being one, stay."""
    from sphinx.util.matching import get_matching_files

    from booktools.ext import booksources

    files = [
        "intro.md",
        "chapters/paths.md",
        "envelope/notes.md",  # sources ("envelope" is no venv)
        ".venv/lib/python3.11/site-packages/x/templates/card.md",
        "venv/lib/python3.11/site-packages/x/card.md",
        "env/x.md",
        "tools-env/deep/x.md",
        "conda/lib/x.md",
        "chapters/.ipynb_checkpoints/paths-checkpoint.md",
        "chapters/__pycache__/x.md",
        "node_modules/pkg/CHANGELOG.md",
        ".mypy_cache/3.11/x.md",
    ]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("# x\n")
    for env in ("venv", "env", "tools-env", ".venv"):
        (tmp_path / env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "conda" / "conda-meta").mkdir()
    assert sorted(booksources.environment_folders(tmp_path)) == [
        "conda",
        "env",
        "tools-env",
        "venv",
    ]
    patterns = booksources.tool_folder_patterns(tmp_path)
    kept = sorted(f for f in get_matching_files(tmp_path, ["**.md"], patterns))
    assert kept == ["chapters/paths.md", "envelope/notes.md", "intro.md"]


def test_the_book_build_reads_the_rule():
    """_config.yml loads the extension, and no longer lists the folders one by one."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "booktools.ext.booksources" in config["sphinx"]["extra_extensions"]
    assert not {".pytest_cache", "**/.ipynb_checkpoints", ".venv"} & set(config["exclude_patterns"])


def test_the_books_extensions_load_from_the_package(tmp_path, monkeypatch):
    """Every extension of tools/booktools/ext that _config.yml names loads by its dotted name into
    a small Sphinx project and acts (paperrefs names a bare reference to the paper's theorem).
    bookext marks the process as a book build (its kernels inherit RANKCOLLAPSE_BOOK_BUILD): the
    mark is undone after the test, so the exercises' checks in later tests report as usual."""
    import re

    from booktools.execute import BOOK_BUILD_ENV

    monkeypatch.setenv(BOOK_BUILD_ENV, "")  # recorded: the teardown restores the variable's state
    monkeypatch.delenv(BOOK_BUILD_ENV)

    import yaml
    from sphinx.application import Sphinx

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    ours = [e for e in config["sphinx"]["extra_extensions"] if e.startswith("booktools.ext.")]
    on_disk = sorted(p.stem for p in (ROOT / "tools" / "booktools" / "ext").glob("*.py"))
    assert sorted(e.rsplit(".", 1)[1] for e in ours) == [p for p in on_disk if p != "__init__"]
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "CITATION.cff"):  # what booktools.ext.release reads
        (src / name).write_text((ROOT / name).read_text())
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        f"extensions = ['myst_parser', 'sphinx_proof', *{ours!r}]\n"
    )
    (src / "index.md").write_text(
        "# Page\n\n````{prf:theorem} The paper's Theorem 2.2\n:label: thm-collapse-single\n"
        ":nonumber:\n\nA bound.\n````\n\nBare: {prf:ref}`thm-collapse-single`.\n"
    )
    out = tmp_path / "out"
    app = Sphinx(src, src, out, tmp_path / "doctrees", "html", status=None, freshenv=True)
    app.build()
    assert set(ours) <= set(app.extensions)
    text = re.sub(r"<[^>]+>", "", (out / "index.html").read_text()).replace("\u2019", "'")
    assert "Bare: the paper's Theorem 2.2." in text


def test_the_commands_run_from_the_package():
    """The tooling has one home: pyproject's [project.scripts] and tasks.py's steps name modules
    of booktools with a main(); the old homes (scripts/, _ext/) are gone."""
    import importlib
    import re
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts and all(name.startswith("rankbook-") for name in scripts), scripts
    for name, target in scripts.items():
        module, func = target.split(":")
        assert module.startswith("booktools.") and callable(
            getattr(importlib.import_module(module), func)
        ), name
    steps = re.findall(r'"-m", "(booktools\.\w+)"', (ROOT / "tasks.py").read_text())
    assert {"booktools.build", "booktools.student", "booktools.grade"} <= set(steps), steps
    for module in steps:
        assert callable(importlib.import_module(module).main), module
    assert not [*(ROOT / "scripts").glob("*.py"), *(ROOT / "_ext").glob("*.py")]


@pytest.mark.build
def test_decoy_tool_folders_do_not_reach_the_book(built_book):
    """The session's build ran with the decoys of conftest.DECOYS present (broken MyST, which
    would have failed the -W build) and built no page from them; the decoys are gone again."""
    from conftest import DECOYS

    html = built_book / "html"
    pages = {p.relative_to(html).as_posix() for p in html.rglob("*.html")}
    assert not [p for p in pages if "card" in p or "CHANGELOG" in p or "checkpoint" in p]
    assert not any((ROOT / d).exists() for d in DECOYS if not d.startswith(".venv/"))


def test_decoys_left_by_an_interrupted_run_are_removed_by_the_next(tmp_path):
    """A test run stopped during the book build leaves its decoys; the next run takes them back
    (their folders carry conftest.DECOY_MARK) and leaves a reader's own folders alone."""
    from conftest import DECOYS, plant_decoys, remove_decoys

    mine = tmp_path / "node_modules" / "pkg" / "README.md"  # a reader's own, beside a decoy
    mine.parent.mkdir(parents=True)
    mine.write_text("mine")
    # a decoy's very path
    own = tmp_path / "chapters" / ".ipynb_checkpoints" / "paths-checkpoint.md"
    own.parent.mkdir(parents=True)
    own.write_text("the reader's checkpoint")
    plant_decoys(tmp_path)  # interrupted: never removed
    later = tmp_path / "chapters" / ".ipynb_checkpoints" / "skip-checkpoint.md"
    later.write_text("saved since, in a folder a decoy shares")
    assert all((tmp_path / d).exists() for d in DECOYS)
    remove_decoys(plant_decoys(tmp_path), root=tmp_path)
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert left == [
        "chapters/.ipynb_checkpoints/paths-checkpoint.md",
        "chapters/.ipynb_checkpoints/skip-checkpoint.md",
        "node_modules/pkg/README.md",
    ]
    assert own.read_text() == "the reader's checkpoint" and mine.read_text() == "mine"
    assert not (tmp_path / "my-env").exists() and not (tmp_path / ".mypy_cache").exists()


# --------------------------------------------------------------------------- tasks.py


def test_tasks_runs_on_the_standard_library_alone():
    """tasks.py is what installs: it imports nothing outside the standard library, and runs (here:
    prints its usage) in a Python that sees no installed package at all (-S -I)."""
    tree = ast.parse((ROOT / "tasks.py").read_text())
    modules = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    modules |= {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}, modules
    result = subprocess.run(
        [sys.executable, "-S", "-I", str(ROOT / "tasks.py")], capture_output=True, text=True
    )
    assert result.returncode == 2 and "python tasks.py book" in result.stdout, result.stderr


def _tasks_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tasks_under_test", ROOT / "tasks.py")
    tasks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tasks)
    return tasks


def test_tasks_skips_the_install_only_when_nothing_changed(tmp_path, monkeypatch):
    """tasks.py runs pip unless this environment's last install was made from the same files and
    every pin is still installed at its version; a changed requirements file, a pin the
    environment lacks and a missing record each make it install again."""
    tasks = _tasks_module()
    monkeypatch.setattr(tasks, "INSTALLED", tmp_path / "record.txt")
    assert not tasks.installed()  # no record
    (tmp_path / "record.txt").write_text(tasks._fingerprint() + "\n")
    from importlib import metadata

    urls = [
        d.read_text("direct_url.json") or "" for d in metadata.distributions(name="rankcollapse")
    ]
    if any(ROOT.as_uri() + '"' in url for url in urls):  # this clone's editable install
        assert tasks.installed()
    # another clone's files: a changed requirements file
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in (*tasks.REQUIREMENTS, "pyproject.toml"):
        (clone / name).write_bytes((ROOT / name).read_bytes())
    monkeypatch.setattr(tasks, "ROOT", clone)
    (tmp_path / "record.txt").write_text(tasks._fingerprint() + "\n")
    with open(clone / "requirements.txt", "a") as f:
        f.write("no-such-package-of-ours==1.0\n")
    assert not tasks.installed()  # the record no longer matches
    (tmp_path / "record.txt").write_text(tasks._fingerprint() + "\n")
    assert not tasks.installed()  # the record matches; the pin is not installed


# ---------------------------------------------------------------------- the build's progress report


def _recorded(name, root):
    text = (DATA / name).read_text().replace("{ROOT}", str(root))
    return text.splitlines(keepends=True)


class _Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        self.t += 2.5
        return self.t


def test_progress_of_a_build_that_succeeds(tmp_path):
    progress = BuildProgress(root=tmp_path, clock=_Clock())
    shown = "".join(progress.feed(line) for line in _recorded("build_log_ok.txt", tmp_path))
    shown += progress.finish(0)
    assert shown == "  chapters/good ... 1.4 s\n  writing the HTML pages ... 2.5 s\n"
    assert progress.chapters == {"chapters/good": 1.45}


def test_progress_of_a_build_whose_cell_fails_names_chapter_and_cell(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "bad.md").write_text((DATA / "bad_chapter.md").read_text())
    progress = BuildProgress(root=tmp_path)
    shown = "".join(progress.feed(line) for line in _recorded("build_log_fail.txt", tmp_path))
    shown += progress.finish(1, log=tmp_path / "build.log")
    lines = shown.splitlines()
    assert lines[0] == "  chapters/bad ..."
    assert lines[1] == "FAILED: chapters/bad, code cell 2 (line 19 of chapters/bad.md):"
    assert "    np.zeros(3) @ np.zeros(4)" in lines
    assert any(
        line.strip().startswith("ValueError: matmul: Input operand 1 has a mismatch")
        for line in lines
    )
    assert lines[-1] == f"The whole log: {tmp_path / 'build.log'}"
    # the report, not the log: no Sphinx traceback, no kernel warning
    assert len(lines) < 20 and "sphinx" not in shown.lower() and "IPKernelApp" not in shown
    assert cell_location(tmp_path / "chapters" / "bad.md", "x = 1") == (1, 15)
    assert cell_location(tmp_path / "chapters" / "bad.md", "y = 2") is None


def test_progress_shows_each_warning_on_one_line(tmp_path):
    lines = [
        f"{tmp_path}/chapters/paths.md: Executing notebook using local CWD [mystnb]\n",
        f"{tmp_path}/chapters/paths.md:206: WARNING: No key 'paths-error' found in glue data "
        "for this document. [mystnb.glue]\n",
        f"{tmp_path}/chapters/paths.md: Executed notebook in 12.00 seconds [mystnb]\n",
        "build finished with problems, 1 warning.\n",
    ]
    progress = BuildProgress(root=tmp_path)
    shown = "".join(progress.feed(line) for line in lines) + progress.finish(1)
    assert shown.splitlines() == [
        "  chapters/paths ...",
        "  warning: chapters/paths.md:206: No key 'paths-error' found in glue data for this "
        "document. [mystnb.glue]",
        "  chapters/paths: 12.0 s",
        "FAILED: 1 warning(s) (the build fails on any warning), listed above.",
    ]


def test_progress_of_an_unexplained_failure_shows_the_log_tail(tmp_path):
    progress = BuildProgress(root=tmp_path, tail=2)
    for line in ["Running Sphinx\n", "Extension error:\n", "Could not import extension bookext\n"]:
        progress.feed(line)
    assert progress.finish(2).splitlines() == [
        "FAILED; the log's last lines:",
        "    Extension error:",
        "    Could not import extension bookext",
    ]


# --------------------------------------------------------------------------- a chapter's results


def hand_made_notebook(value="0.12", printed="residual 1.000000000000", color=0.0):
    """A notebook as myst-nb and papermill leave it: a glued value, a glued figure, printed text."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.style.context("default"):  # whatever style an earlier test set
        fig, ax = plt.subplots(figsize=(1, 1), dpi=100)
        ax.plot([0, 1], [0, 1], color=(color, 0, 0))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
    png = base64.b64encode(buf.getvalue()).decode()
    v4 = nbformat.v4
    params = v4.new_code_cell("mode = 'fast'", metadata={"tags": ["injected-parameters"]})
    cell = v4.new_code_cell(
        "...",
        outputs=[
            v4.new_output(
                "stream",
                name="stdout",
                text=printed + "\nRANKCOLLAPSE_MODE=fast overrides mode='full' from x\n",
            ),
            v4.new_output(
                "display_data",
                data={"application/papermill.record/text/plain": value},
                metadata={
                    "scrapbook": {"name": "x-value", "mime_prefix": "application/papermill.record/"}
                },
            ),
            v4.new_output(
                "display_data",
                data={"image/png": png, "text/plain": "<Figure>"},
                metadata={"scrapbook": {"name": "fig-x", "mime_prefix": ""}},
            ),
            v4.new_output("execute_result", data={"text/plain": "Run('x')"}, execution_count=1),
        ],
    )
    return v4.new_notebook(cells=[params, cell])


def test_results_of_a_notebook():
    got = results(hand_made_notebook())
    assert got["glue"] == {"x-value": {"text/plain": "0.12"}}
    assert got["text"] == [["residual 1.000000000000", "Run('x')"]]  # the override line left out
    assert set(got["figures"]) == {"fig-x"} and len(got["figures"]["fig-x"]["sha256"]) == 64
    (pixels,) = figure_pixels(hand_made_notebook()).values()
    assert pixels.shape[:2] == (100, 100)


def test_differences_by_name_with_a_tolerance():
    a = results(hand_made_notebook())
    assert differences(a, results(hand_made_notebook()), rtol=0) == []
    # 1e-13 relative: within the default tolerance, not within 0
    b = results(hand_made_notebook(printed="residual 1.000000000000100"))
    assert differences(a, b) == []
    assert differences(a, b, rtol=0) == [
        "text line 1: 'residual 1.000000000000' != 'residual 1.000000000000100'"
    ]
    c = results(hand_made_notebook(value="0.13", color=1.0))
    assert differences(a, c) == [
        "glue 'x-value': '0.12' != '0.13'",
        "figure 'fig-x': pixels differ (shape [100, 100, 4] vs [100, 100, 4])",
    ]
    d = results(hand_made_notebook(printed="residual 1.0 and more"))
    assert differences(a, d)[0].startswith("text line 1:")


def test_differences_of_svg_figures():
    """SVG digests (the book's figures) have no pixel shape: a changed one is reported, not a
    KeyError."""
    svg = {"format": "svg", "sha256": "0" * 64}
    png = {"format": "png", "shape": [1, 1, 4], "sha256": "1" * 64}
    a = {"figures": {"fig-x": svg}}
    assert differences(a, a) == []
    assert differences(a, {"figures": {"fig-x": dict(svg, sha256="2" * 64)}}) == [
        "figure 'fig-x': SVG differs"
    ]
    assert differences(a, {"figures": {"fig-x": png}}) == ["figure 'fig-x': format svg vs png"]


def test_compare_outputs_records_and_compares(tmp_path, capsys):
    """tools/booktools/compare.py's two steps on hand-made executed notebooks (read with --from)."""
    from booktools.compare import main

    for name, value in (("before", "0.12"), ("same", "0.12"), ("after", "0.13")):
        (tmp_path / name).mkdir()
        nbformat.write(hand_made_notebook(value=value), tmp_path / name / "paths.ipynb")
        assert (
            main(
                [
                    "record",
                    str(tmp_path / f"{name}.json"),
                    "--chapters",
                    "paths",
                    "--from",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "before.json"), str(tmp_path / "same.json")]) == 0
    assert capsys.readouterr().out.startswith(
        "0 difference(s) in 1 chapter(s), 4 values, lines and figures"
    )
    assert main(["compare", str(tmp_path / "before.json"), str(tmp_path / "after.json")]) == 1
    assert (
        capsys.readouterr().out.splitlines()[0]
        == "chapters/paths: glue 'x-value': '0.12' != '0.13'"
    )
    # two seeds: compared all the same, the reader told first
    assert (
        main(
            [
                "record",
                str(tmp_path / "seed1.json"),
                "--chapters",
                "paths",
                "--seed",
                "1",
                "--from",
                str(tmp_path / "after"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "before.json"), str(tmp_path / "seed1.json")]) == 1
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith("note: the runs differ: mode fast, seed 0 against mode fast, seed 1")
    assert shown[1] == "chapters/paths: glue 'x-value': '0.12' != '0.13'"
    with pytest.raises(SystemExit):
        main(["record", str(tmp_path / "x.json"), "--chapters", "no-such-chapter"])
    # the command runs from any folder, without any path set-up
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "booktools.compare",
            "compare",
            str(tmp_path / "before.json"),
            str(tmp_path / "after.json"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 1 and "x-value" in result.stdout, result.stderr


@pytest.mark.parametrize(
    "content, args, words",
    [
        (None, ["compare", "{d}/a.json", "{d}/b.json"], ("a.json", "no such file")),
        ("{}", ["compare", "{d}/x.json", "{d}/x.json"], ("x.json", "not a record", "'mode'")),
        ("[1, 2", ["compare", "{d}/x.json", "{d}/x.json"], ("x.json", "not a JSON file")),
        (
            '{"mode": "fast", "seed": 0, "chapters": {}}',
            ["compare", "{d}/x.json", "{d}/x.json", "--rtol", "-1"],
            ("--rtol", ">= 0"),
        ),
        (
            None,
            ["record", "{d}/rec.json", "--chapters", "paths", "--from", "{d}/nodir"],
            ("--from", "nodir", "does not exist"),
        ),
        (
            None,
            ["record", "{d}/rec.json", "--chapters", "paths", "--from", "{d}"],
            ("--from", "paths.ipynb"),
        ),
    ],
    ids=[
        "missing files",
        "not a record",
        "not JSON",
        "negative rtol",
        "missing --from folder",
        "notebook missing in --from",
    ],
)
def test_compare_outputs_refuses_bad_arguments_in_one_line(tmp_path, content, args, words):
    """A usage error (exit 2) naming the file or option, not a traceback."""
    if content is not None:
        (tmp_path / "x.json").write_text(content)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "booktools.compare",
            *(a.format(d=tmp_path) for a in args),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
    assert not (tmp_path / "rec.json").exists()


def test_a_build_notebook_is_read_with_its_glue_file(tmp_path):
    """myst-nb takes the values glued without display out of the notebook it saves and writes
    them to <name>.glue.json: read_executed puts them back, so a build's run reads as
    papermill's."""
    import json

    nb = hand_made_notebook()
    cell = nb.cells[1]
    glued = [o for o in cell.outputs if o.get("metadata", {}).get("scrapbook")]
    cell.outputs = [o for o in cell.outputs if o not in glued[:1]]  # as myst-nb saves it
    nbformat.write(nb, tmp_path / "paths.ipynb")
    (tmp_path / "paths.glue.json").write_text(
        json.dumps(
            {
                "x-value": {
                    "output_type": "display_data",
                    "data": {"text/plain": "0.12"},
                    "metadata": {
                        "scrapbook": {
                            "name": "x-value",
                            "mime_prefix": "application/papermill.record/",
                        }
                    },
                }
            }
        )
    )
    assert results(nbformat.read(tmp_path / "paths.ipynb", as_version=4))["glue"] == {}
    from booktools.outputs import read_executed

    assert (
        differences(
            results(read_executed(tmp_path / "paths.ipynb")), results(hand_made_notebook()), rtol=0
        )
        == []
    )
