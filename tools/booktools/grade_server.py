"""The verifier's server: the book's checks loaded once, before any submission runs, and each
submission's answers checked in a fork of it (``booktools.grade_submission`` asks).

    python -m booktools.grade_server      (the grader starts it; requests on stdin)

Started by ``booktools.grade`` before the first student cell runs, it imports every module of
``rankcollapse`` and ``rankbook`` (the checks, their references, the question answers' code) and
the grader's own verifying code. For each request (one JSON line: ``run_dir``, ``cwd``, ``ids``,
``log``) it forks: the child, in a session of its own and in the submission's working folder, runs
``grade_verify.verify`` on the answers; the server answers ``{"pid": …}`` then ``{"code": …}`` (the
child's exit status, negative for a signal). So the references the answers are compared with are
the ones in memory since the grading started: a submission that edits the installed checks on
disk (``book/rankbook/checks/*.py``) changes nothing the verifier uses, and what the answer does
to the verifying process dies with the fork. Data read lazily by a reference (a real model's
weights, from the cache) is still read from disk.

``sources`` (the server's first line, ``{"ready": …}``) is the SHA-256 of every source file it
imported: a server started again after one died compares its own with them, and one that differs
(the files were changed since the grading started) refuses to serve.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import pkgutil
import queue
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

PACKAGES = ("rankcollapse", "rankbook")


def _load() -> dict[str, str]:
    """Import every module of the book's packages; the SHA-256 of each imported source file."""
    os.environ.pop("RANKCOLLAPSE_BOOK_BUILD", None)
    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        for info in pkgutil.walk_packages(pkg.__path__, name + "."):
            try:
                importlib.import_module(info.name)
            except Exception:  # noqa: BLE001 (an optional module that cannot load: not a check's)
                pass
    from . import (  # noqa: F401 (the verifier's code)
        grade_pack,
        grade_run,
        grade_trace,
        grade_verify,
    )

    out = {}
    for name, mod in sorted(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if path and (name in PACKAGES or name.startswith(tuple(p + "." for p in PACKAGES))):
            try:
                with open(path, "rb") as f:
                    out[name] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                out[name] = "unreadable"
    return out


def _child(request: dict, keep: tuple[int, ...]) -> None:
    """In the fork: a session of its own, the submission's folder, the log as output; then one
    more fork, which verifies, while this one waits for it and leaves with its status. So the
    process an answer runs in has this one for parent, not the server: an answer that kills its
    parent ends only this submission's check (the server reports a death), and the time-out's
    kill of this session takes the verifying process with it."""
    code = 1
    try:
        os.setsid()
        for fd in keep:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.chdir(request["cwd"])
        pid = os.fork()
        if pid == 0:
            code = 1
            from .grade_run import main

            main(["verify", request["run_dir"], *request["ids"]])  # leaves with os._exit(0)
        else:
            status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            code = status if status >= 0 else 128 - status  # killed by signal s: 128 + s
    except BaseException:  # noqa: BLE001 (the grader reads the exit status and the log)
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(code)


def serve(stdin=None, stdout=None) -> None:
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    expected = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
    try:
        sources = _load()
    except Exception as err:  # noqa: BLE001
        stdout.write(json.dumps({"error": f"{type(err).__name__}: {err}"[:300]}) + "\n")
        stdout.flush()
        return
    if expected is not None:
        changed = sorted(k for k in {*expected, *sources} if expected.get(k) != sources.get(k))
        if changed:
            why = f"the module {changed[0]} changed on disk since the grading began"
            stdout.write(json.dumps({"error": why}) + "\n")
            stdout.flush()
            return
    stdout.write(json.dumps({"ready": True, "sources": sources}) + "\n")
    stdout.flush()
    for line in stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, (stdin.fileno(), stdout.fileno()))
        stdout.write(json.dumps({"pid": pid}) + "\n")
        stdout.flush()
        _, status = os.waitpid(pid, 0)
        stdout.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        stdout.flush()


# ------------------------------------------------------------------------------ the grader's side

START = 600  # seconds a server may take to import the book (a loaded machine)


class VerifierError(Exception):
    """A server that could not start, or died: the answers it was to check are *crashed*."""


class Verifier:
    """One server (a child of the grader); ``verify`` blocks until its fork ends or times out."""

    def __init__(self, env: dict, sources: dict | None = None):
        self.home = tempfile.mkdtemp(prefix="grade-verifier-")
        args = [sys.executable, "-m", "booktools.grade_server"]
        self.proc = subprocess.Popen(
            args + ([json.dumps(sources)] if sources is not None else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.home,
            env=env,
        )
        self._buf = b""
        first = self._line(START)
        if not first or "ready" not in first:
            self.close()
            why = first.get("error") if first else "it ended before it was ready"
            raise VerifierError(f"the verifier could not start: {why}")
        self.sources = first["sources"]

    def _line(self, timeout: float) -> dict | None:
        """The server's next line (``None``: it ended, or ``timeout`` passed)."""
        fd, end = self.proc.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def verify(self, run_dir: Path, cwd: Path, ids: list[str], log: Path, timeout: float) -> str:
        """ "ok", "timed out" or "died (…)", as ``grade_submission._child`` says of a process."""
        request = {"run_dir": str(run_dir), "cwd": str(cwd), "ids": ids, "log": str(log)}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as err:
            raise VerifierError(f"the verifier ended ({type(err).__name__})") from None
        started = self._line(60)
        if not started or "pid" not in started:
            raise VerifierError("the verifier ended before it checked the answers")
        done = self._line(timeout)
        try:  # whatever the answer left running in the session goes with it
            os.killpg(started["pid"], signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if done is None and self.alive:
            self._line(60)
            return "timed out"
        if not done or "code" not in done:
            raise VerifierError("the verifier ended while it checked the answers")
        code = done["code"]
        if code == 0:
            return "ok"
        return (
            f"killed by signal {-code}"
            if isinstance(code, int) and code < 0
            else f"died (exit code {code})"
        )

    def close(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        import shutil

        shutil.rmtree(self.home, ignore_errors=True)


class Verifiers:
    """``n`` servers started at once (before any submission runs), lent one at a time; a server
    that died is started again, and refuses if the book's modules changed on disk meanwhile."""

    def __init__(self, n: int, env: dict):
        self.env, self.free, self.sources = env, queue.Queue(), None
        import concurrent.futures as cf

        with cf.ThreadPoolExecutor(max_workers=n) as pool:
            started = [pool.submit(Verifier, env) for _ in range(n)]
        errors = []
        for fut in started:
            try:
                server = fut.result()
            except VerifierError as err:
                errors.append(err)
                continue
            self.sources = server.sources
            self.free.put(server)
        if errors and self.free.empty():
            raise errors[0]
        for _ in errors:
            self.free.put(None)

    def verify(self, run_dir, cwd, ids, log, timeout) -> str:
        server = self.free.get()
        try:
            if server is None or not server.alive:
                if server is not None:
                    server.close()
                server = None
                server = Verifier(self.env, self.sources)
            return server.verify(run_dir, cwd, ids, log, timeout)
        except VerifierError:
            if server is not None:
                server.close()
            server = None
            raise
        finally:
            self.free.put(server)

    def close(self) -> None:
        while not self.free.empty():
            server = self.free.get()
            if server is not None:
                server.close()


if __name__ == "__main__":
    serve()
