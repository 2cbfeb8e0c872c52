"""Shared fixtures. The test suite runs from the repository root (see README).

The tests build the book, the student edition and the executed chapters into ``_build/tests/``
(``BOOKTOOLS_OUTPUT``, read by :mod:`booktools`), never into the ``_build/html`` a reader built
with ``python3 tasks.py book``: running the tests after building the book leaves that book as it
was.
"""

import os
import shutil
from pathlib import Path

# before booktools is imported (its build folders are read from the environment once)
os.environ.setdefault(
    "BOOKTOOLS_OUTPUT", str(Path(__file__).resolve().parents[1] / "_build" / "tests")
)
# One thread per process, here and in every process the tests start (before torch is imported:
# OMP_NUM_THREADS sets torch's count at its start): from collection on, the session's chapter
# runs take the cores in processes of their own (see RUN_JOBS), and processes that each take every
# core spin waiting for each other (booktools.execute measured one thread 3.5 times faster on 2
# busy cores). A reader's own setting is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RANKCOLLAPSE_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

from booktools import BUILD, ROOT  # noqa: E402

# Folders a reader's tools leave in the repository, each holding markdown Sphinx must not read
# (broken MyST: reading it would fail the -W build). The book build of the session runs with
# them present (see `built_book`); tools/booktools/ext/booksources.py excludes them by rule.
DECOY_MD = "# Card\n\n```{no-such-directive}\n:broken: [\n```\n\n{no-such-role}`x`\n"
DECOYS = (
    ".venv/lib/python3.11/site-packages/x/templates/card.md",  # the README's venv (hidden)
    "my-env/lib/python3.11/site-packages/x/templates/card.md",  # a venv by another name ...
    "my-env/pyvenv.cfg",  # ... found by its pyvenv.cfg
    "chapters/.ipynb_checkpoints/paths-checkpoint.md",  # Jupyter Lab
    "chapters/__pycache__/card.md",
    "node_modules/x/CHANGELOG.md",
    ".mypy_cache/3.11/card.md",
)


# Which papermill runs (fast mode) each test reads: test -> (seed, student edition?) pairs. The
# session starts every run its collected tests need once, as soon as the tests are collected, in
# parallel processes (one per core, at most RUN_JOBS), and runs the other tests meanwhile: the
# modules whose tests read a run (through `runs`, `built_book`, `student_book`) come last. See
# `pytest_collection_modifyitems` and `runs`. Each test runs alone too (`pytest -k`): it then
# makes its own.
RUNS_READ = {
    "test_chapter_executes_in_fast_mode": ((0, False),),
    "test_chapter_shows_the_same_results_as_the_book_build": ((0, False),),
    "test_same_seed_same_results": ((0, False), (0, True)),
    "test_another_seed_changes_the_random_quantities": ((0, False), (1, False)),
    "test_student_chapter_executes_and_checks_say_not_attempted": ((0, True),),
}
RUN_JOBS = 2
BATCH = pytest.StashKey()  # the session's runs (booktools.execute.Batch), started at collection


def _run_options(seed: int, student: bool) -> dict:
    """``booktools.execute.execute``'s options for a session run (fast mode, its own folder)."""
    from booktools.execute import EXECUTED

    out_dir = (
        EXECUTED / "student" if student else EXECUTED if seed == 0 else EXECUTED / f"seed{seed}"
    )
    # the seed-0 run is the book's page (the book build takes it): its checks say so
    return {
        "mode": "fast",
        "seed": seed,
        "out_dir": out_dir,
        "student": student,
        "book": seed == 0 and not student,
    }


def _wanted_runs(items) -> list:
    """The (chapter path, seed, student) runs the collected tests read, in a fixed order."""
    return sorted(
        {
            (item.callspec.params["path"], seed, student)
            for item in items
            if item.originalname in RUNS_READ and hasattr(item, "callspec")
            for seed, student in RUNS_READ[item.originalname]
        },
        key=lambda run: (run[1], run[2], str(run[0])),
    )


def _start_runs(config, items) -> None:
    """Start the session's runs (in processes of their own, which keep the environment of this
    moment: no test has run yet) and put the modules that read them last, each module kept whole
    (its module-scoped fixtures are made once)."""
    from booktools.execute import Batch

    late = {item.path for item in items if "runs" in getattr(item, "fixturenames", ())}
    items.sort(key=lambda item: item.path in late)  # in place, stable: each group's order kept
    if config.option.collectonly:
        return
    wanted = _wanted_runs(items)
    config.stash[BATCH] = Batch(
        {key: (key[0], _run_options(*key[1:])) for key in wanted}, jobs=RUN_JOBS
    )


def pytest_sessionfinish(session):
    batch = session.config.stash.get(BATCH, None)
    if batch is not None:  # an interrupted session: the runs not yet begun are not begun
        batch.cancel()


@pytest.fixture(scope="session")
def runs(request):
    """``runs(path, seed=0, student=False)``: this session's papermill run of chapter ``path`` in
    fast mode (the student edition's when ``student``), the executed notebook; a run that failed
    raises its error in each test that reads it."""
    from booktools.execute import execute

    batch = request.config.stash.get(BATCH, None)
    made = batch.wait() if batch is not None else {}

    def run(path, seed=0, student=False):
        if (path, seed, student) not in made:
            made[path, seed, student] = execute(path, **_run_options(seed, student))
        if isinstance(made[path, seed, student], BaseException):
            raise made[path, seed, student]
        return made[path, seed, student]

    run.made = made  # what the session has run so far: the book build takes its seed-0 runs
    return run


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The toy tasks' checkpoint cache in a fresh folder of this test's (never the reader's)."""
    monkeypatch.setenv("RANKCOLLAPSE_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture
def gen():
    """A fresh seeded generator per test (tests never touch the global RNG state)."""
    return torch.Generator().manual_seed(1234)


def random_tokens(gen, *shape, dtype=torch.float64):
    return torch.randn(*shape, generator=gen, dtype=dtype)


DECOY_MARK = ".rankcollapse-test-decoy"  # appended to a decoy file's name: the mark beside it


def _mark(path: Path) -> Path:
    return path.with_name(path.name + DECOY_MARK)


def plant_decoys(root=ROOT, decoys=DECOYS) -> list:
    """Create the decoy files under ``root``, each with a mark file beside it; returns the files
    planted. A decoy file already there with its mark was left by an interrupted earlier run
    (Ctrl-C during the build): it is planted again, so that it is removed afterwards. One there
    without a mark is the reader's own and is left alone."""
    planted = []
    for rel in decoys:
        path = root / rel
        if path.exists() and not _mark(path).exists():
            continue  # the reader's own file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("" if path.name == "pyvenv.cfg" else DECOY_MD)
        _mark(path).write_text("a decoy of tests/conftest.py; safe to delete\n")
        planted.append(path)
    return planted


def remove_decoys(planted, root=ROOT) -> None:
    """Remove the planted files and their marks, then each folder above them that is left empty
    (up to ``root``): never a file of the reader's, even in a folder a decoy shares."""
    for path in planted:
        path.unlink(missing_ok=True)
        _mark(path).unlink(missing_ok=True)
        for folder in path.parents:
            if folder == root or not folder.is_relative_to(root):
                break
            try:
                folder.rmdir()
            except OSError:  # not empty: the reader's, or another decoy's still there
                break


@pytest.fixture(scope="session")
def built_book(runs):
    """The whole book built once per test session, in fast mode, from a clean build folder, with
    the decoy folders of ``DECOYS`` present in the repository (removed again after the build).
    The chapters' seed-0 runs this session has made are reused (none is executed twice); the
    build executes the others.

    Returns the build folder (:data:`booktools.BUILD`, ``_build/tests/_build``); the build fails
    on any warning or cell error, and when it writes, changes or removes a file of the reader's own
    book (``_build/html``: every file's mtime compared). A session fixture runs once: when it
    fails, pytest reports the stored failure to every later test that asks for it, without
    building again.
    """
    import io

    from booktools.build import build

    readers = ROOT / "_build" / "html"
    had_book = readers.exists()
    files = lambda: {p: p.stat().st_mtime_ns for p in readers.rglob("*") if p.is_file()}  # noqa: E731
    before = files()
    created = plant_decoys()
    report = io.StringIO()
    try:
        made = {
            path: nb
            for (path, seed, student), nb in runs.made.items()
            if seed == 0 and not student and not isinstance(nb, BaseException)
        }
        code = build("fast", out=report, executed=made)
    finally:
        remove_decoys(created)
        after = files()
        if not had_book:  # whatever appeared there is the tests' (and is reported below)
            shutil.rmtree(readers, ignore_errors=True)
    if code != 0:
        pytest.fail("jupyter-book build failed:\n" + report.getvalue())
    touched = sorted(
        str(p.relative_to(readers))
        for p in before.keys() | after.keys()
        if before.get(p) != after.get(p)
    )
    if touched:
        pytest.fail(
            f"the tests' book build wrote into the reader's book ({readers}), not {BUILD}: "
            + ", ".join(touched[:5])
        )
    return BUILD


@pytest.fixture(scope="session")
def student_book(built_book):
    """The student edition (booktools.edition) built from the session's book build: its
    executed chapters, stripped of their solutions, with execution off (a few seconds).
    Returns its HTML folder (``student/html`` in the build folder)."""
    import io

    from booktools.edition import HTML, build_student

    report = io.StringIO()
    if build_student("fast", reuse=True, out=report) != 0:
        pytest.fail("the student edition failed to build:\n" + report.getvalue())
    return HTML


LIBRARY = ROOT / "lib" / "rankcollapse"


def mirrors_library(stem: str) -> bool:
    """Whether ``tests/<stem>.py`` tests a module of the science library: ``test_<module>`` or,
    for a subpackage, ``test_<package>_<anything>`` (``test_real_hub``, ``test_later_lam``)."""
    name = stem.removeprefix("test_")
    packages = {p.name for p in LIBRARY.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in LIBRARY.glob("*.py")} | packages
    return name in modules or any(name.startswith(f"{p}_") for p in packages)


def pytest_collection_modifyitems(config, items):
    """The ``library`` mark on every test of a file that mirrors a library module: the fast loop
    (``python3 -m pytest -m "library and not slow"``) runs the science library's tests alone."""
    for item in items:
        if mirrors_library(item.path.stem):
            item.add_marker(pytest.mark.library)


def pytest_collection_finish(session):
    """After ``-k``/``-m`` have chosen the tests: start the runs they read (see RUNS_READ)."""
    _start_runs(session.config, session.items)
