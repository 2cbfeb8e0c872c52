"""What the grader runs inside the student's kernel, in cells it adds to the notebook it executes
(``booktools.grade_run``): nothing here decides a verdict.

- ``setup(traced, log)``, the first cell: a hook on IPython's ``pre_run_cell`` and
  ``post_run_cell`` events traces the cells the student wrote (``traced``: the SHA-1 of their
  sources) with :class:`KernelTracer`, and appends one line per traced
  cell to ``log``: its execution count, the library functions it called from outside the
  library, and whether the tracer was still in place at its end. A cell that turns the tracer
  off, or removes the hooks (no line at all), is told apart by the grader.
- ``capture(caps, answers, cell)``, after each check cell: takes each answer the chapter's check
  cell names (``grade_pack``) out of the namespace into ``answers/<id>.pkl``.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import threading
from pathlib import Path

from .grade_pack import pack_namespace, plain_value
from .grade_trace import frame_name, is_key, is_library, is_package


def digest(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()


class KernelTracer:
    """Records the library functions called from code outside the package, and the checks' own
    functions but the public ones (``grade_trace.is_key``)."""

    def __init__(self):
        self.calls: set[str] = set()

    def __call__(self, frame, event, arg):
        if (
            event == "call"
            and frame.f_back is not None
            and is_package(frame.f_code)
            and not is_package(frame.f_back.f_code)
        ):
            name = frame_name(frame)
            if is_library(frame.f_code) or is_key(name):
                self.calls.add(name)


def _append(path: str, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def setup(traced: list[str], log: str) -> None:
    from IPython import get_ipython

    ip, traced, state = get_ipython(), set(traced), {"tracer": None}

    def pre(info):
        state["tracer"] = None
        if digest(info.raw_cell or "") in traced:
            tracer = state["tracer"] = KernelTracer()
            threading.setprofile(tracer)
            sys.setprofile(tracer)

    def post(result):
        tracer, state["tracer"] = state["tracer"], None
        if tracer is None:
            return
        intact = sys.getprofile() is tracer
        sys.setprofile(None)
        threading.setprofile(None)
        _append(
            log,
            {
                "execution_count": result.execution_count,
                "calls": sorted(tracer.calls),
                "intact": intact,
            },
        )

    ip.events.register("pre_run_cell", pre)
    ip.events.register("post_run_cell", post)


def _error_text(err) -> str:
    return f"{type(err).__name__}: {err}"[:300]


def capture(caps: list[dict], answers: str, cell: int) -> None:
    from IPython import get_ipython

    ns = get_ipython().user_ns
    for cap in caps:
        name, kind = cap["name"], cap["kind"]
        if name not in ns:
            record = {
                "failed": f"`{name}` is not defined when its check cell (code cell {cell}) runs"
            }
        else:
            try:
                record = (
                    {"value": plain_value(ns[name])}
                    if kind == "value"
                    else {"packed": pack_namespace(ns, name)}
                )
            except Exception as err:  # noqa: BLE001
                record = {
                    "failed": f"the grader could not take `{name}` out of the notebook: "
                    f"{_error_text(err)}"
                }
        (Path(answers) / f"{cap['id']}.pkl").write_bytes(pickle.dumps(record))
