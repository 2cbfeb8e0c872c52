"""What an executed chapter shows: its glued values, its printed text and its figures.

:func:`results` reads them from an executed notebook (papermill's or the book build's) into a
JSON-able dict; :func:`differences` compares two such dicts, numbers within a relative
tolerance. The determinism tests and ``tools/booktools/compare.py`` use both.

- **glue**: every output myst-nb's ``glue`` wrote (it carries ``metadata.scrapbook``), by name:
  its text representations (``text/plain``, ``text/markdown``, ...), which are what the prose
  shows. A glued figure is listed under ``figures`` instead. Read a book build's notebook with
  :func:`read_executed`, which finds the values myst-nb took out of it.
- **text**: per code cell, the lines it printed (stdout) and the ``text/plain`` of its other
  results (not figures, not glued values); trailing whitespace dropped. The line in which a chapter
  announces that ``RANKCOLLAPSE_MODE`` overrides its mode is left out: the book build sets the
  variable, papermill runs do not, and the line is not a result.
  The exercise checks' verdict on the reference solution, which the book build words as
  "checked against the reference solution" (``book.checks.in_book_build``), reads as papermill's
  "correct." here, for the same reason.
- **figures**: every figure output, by glue name (or ``cell <i> output <k>``): a PNG as its
  decoded pixels' shape and SHA-256 (:func:`figure_pixels` gives the arrays), an SVG (the book's
  figures, written with fixed ids and no date by ``book.plotting``) as the SHA-256 of its source.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re

GLUE_PREFIX = "application/papermill.record/"  # myst-nb's prefix for a value glued without display
OVERRIDE_MARK = "overrides mode="  # book.presets.resolve_mode's announcement of RANKCOLLAPSE_MODE
# book.checks' verdict in a book build, and the verdict a notebook run prints for the same pass
BOOK_VERDICT = re.compile(
    r"^✔ (\S+): checked against the reference solution\.\n  It passes;.*$", re.M
)
FIGURE_MIMES = {"image/png", "image/svg+xml"}
GLUE_DATA_KEY = (
    "booktools_glue"  # where read_executed puts the values of a build's <name>.glue.json
)


def _as_notebook_verdict(text: str) -> str:
    return BOOK_VERDICT.sub(r"✔ \1: correct.", text)


def _code_cells(nb):
    """The notebook's code cells, without the cell papermill adds for the injected parameters."""
    return [
        c
        for c in nb["cells"]
        if c["cell_type"] == "code"
        and "injected-parameters" not in c.get("metadata", {}).get("tags", [])
    ]


def _join(text) -> str:
    return "".join(text) if isinstance(text, list) else text


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


def _glue_name(out) -> str | None:
    scrap = out.get("metadata", {}).get("scrapbook")
    return scrap.get("name") if isinstance(scrap, dict) else None


def _data(out) -> dict:
    """The output's mime bundle, without myst-nb's prefix on values glued without display."""
    return {k.removeprefix(GLUE_PREFIX): v for k, v in out.get("data", {}).items()}


def text_outputs(nb) -> list[list[str]]:
    """Per code cell, its stdout lines and the ``text/plain`` of its other (non-figure, non-glue)
    results."""
    cells = []
    for cell in _code_cells(nb):
        texts, chunks = [], []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                chunks.append(_join(out["text"]))  # streams arrive in chunks that vary run to run
            elif _glue_name(out) is not None:
                continue  # a glued value: the book build moves it into the prose
            elif out.get("output_type") in ("execute_result", "display_data"):
                data = _data(out)
                plain = data.get("text/plain")
                if plain and not FIGURE_MIMES & set(data) and "<Figure" not in _join(plain):
                    texts.append(_join(plain))
        # myst-nb (nb_merge_streams) saves the merged stream first, with trailing whitespace
        # stripped, and keeps the later chunks: compare lines without trailing whitespace
        if len(chunks) > 1 and "\n".join(_lines(chunks[0])).endswith(
            "\n".join(_lines("".join(chunks[1:])))
        ):
            chunks = chunks[:1]
        lines = [
            line for t in ["".join(chunks), *texts] for line in _lines(_as_notebook_verdict(t))
        ]
        cells.append([line for line in lines if OVERRIDE_MARK not in line])
    return cells


def _glue_outputs(nb):
    for cell in _code_cells(nb):
        for out in cell.get("outputs", []):
            if _glue_name(out) is not None:
                yield out
    yield from nb.get("metadata", {}).get(GLUE_DATA_KEY, {}).values()


def glued_values(nb) -> dict[str, dict[str, str]]:
    """Every glued value that is not a figure: name -> {mime type: text}."""
    values = {}
    for out in _glue_outputs(nb):
        data = _data(out)
        if not FIGURE_MIMES & set(data):
            values[_glue_name(out)] = {
                mime: _join(v)
                for mime, v in sorted(data.items())
                if mime.startswith("text/") or mime.endswith("json")
            }
    return values


CLAIM_PREFIX = "claim."  # rankbook.evidence.GLUE_PREFIX (the tooling does not import the library)


def claim_records(glued: dict[str, dict]) -> list[dict]:
    """The declared claims among glued values (name -> mime bundle, as :func:`glued_values`
    returns them): each claim's JSON record, in the order glued."""
    return [
        json.loads(bundle["text/plain"])
        for key, bundle in glued.items()
        if key.startswith(CLAIM_PREFIX)
    ]


def read_executed(path):
    """An executed notebook from its file, with the values myst-nb glued in it.

    The book build's notebooks (``_build/jupyter_execute/**/<name>.ipynb``) have lost the values
    glued without display: myst-nb moves them to ``<name>.glue.json`` beside the notebook. They
    are put back here (under the notebook's metadata), so that a papermill run and a build's run
    read alike.
    """
    import json
    from pathlib import Path

    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    glue = path.with_name(path.stem + ".glue.json")
    if glue.exists():
        nb.metadata[GLUE_DATA_KEY] = json.loads(glue.read_text())
    return nb


def _figure_outputs(nb):
    """``(name, mime type, data)`` of every figure output: PNG bytes decoded, SVG as text."""
    outs = [
        (_glue_name(out) or f"cell {i} output {k}", out)
        for i, cell in enumerate(_code_cells(nb))
        for k, out in enumerate(cell.get("outputs", []))
    ]
    outs += list(nb.get("metadata", {}).get(GLUE_DATA_KEY, {}).items())
    for name, out in outs:
        data = _data(out)
        if "image/svg+xml" in data:
            yield name, "image/svg+xml", _join(data["image/svg+xml"])
        elif "image/png" in data:
            yield name, "image/png", base64.b64decode(_join(data["image/png"]))


def decode_png(png: bytes):
    """The pixels of a PNG image, as a numpy array (height, width, channels) of floats in [0, 1]."""
    import io

    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png), format="png")


def figure_pixels(nb) -> dict:
    """Every PNG output's decoded pixels, by glue name (or ``cell <i> output <k>``)."""
    return {key: decode_png(png) for key, mime, png in _figure_outputs(nb) if mime == "image/png"}


def pixel_digest(pixels) -> str:
    """SHA-256 of a pixel array's shape and values (equal digests: identical pixels)."""
    import numpy as np

    pixels = np.ascontiguousarray(pixels)
    return hashlib.sha256(
        repr((pixels.shape, str(pixels.dtype))).encode() + pixels.tobytes()
    ).hexdigest()


def results(nb) -> dict:
    """An executed notebook's glued values, printed text and figures, JSON-able (see the module)."""
    return {
        "glue": glued_values(nb),
        "text": text_outputs(nb),
        "figures": {key: _figure_digest(mime, data) for key, mime, data in _figure_outputs(nb)},
    }


def _figure_digest(mime: str, data) -> dict:
    if mime == "image/svg+xml":
        return {"format": "svg", "sha256": hashlib.sha256(data.encode()).hexdigest()}
    pixels = decode_png(data)
    return {"format": "png", "shape": list(pixels.shape), "sha256": pixel_digest(pixels)}


# --------------------------------------------------------------------------- comparison

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b")


def _close(a: str, b: str, rtol: float) -> bool:
    """Two texts are the same, numbers within relative tolerance ``rtol``, everything else
    exactly."""
    if a == b:
        return True
    na, nb_ = _NUMBER.findall(a), _NUMBER.findall(b)
    if _NUMBER.split(a) != _NUMBER.split(b) or len(na) != len(nb_):
        return False
    for x, y in zip(na, nb_):
        fx, fy = float(x), float(y)
        if fx == fy or (math.isnan(fx) and math.isnan(fy)):
            continue
        if not (math.isfinite(fx) and math.isfinite(fy)) or abs(fx - fy) > rtol * max(
            abs(fx), abs(fy)
        ):
            return False
    return True


def differences(a: dict, b: dict, rtol: float = 1e-12) -> list[str]:
    """Every difference between two :func:`results`, one line each (empty: the same results).

    Glued values by name, printed text line by line (all cells' lines in order, so that a
    chapter whose cells were regrouped compares equal when it prints the same), figures by
    pixel digest. Numbers in texts may differ by the relative tolerance ``rtol``.
    """
    out = []
    ga, gb = a.get("glue", {}), b.get("glue", {})
    for name in sorted(set(ga) | set(gb)):
        if name not in gb:
            out.append(f"glue {name!r}: only in the first ({_show(ga[name])})")
        elif name not in ga:
            out.append(f"glue {name!r}: only in the second ({_show(gb[name])})")
        elif set(ga[name]) != set(gb[name]) or not all(
            _close(ga[name][m], gb[name][m], rtol) for m in ga[name]
        ):
            out.append(f"glue {name!r}: {_show(ga[name])} != {_show(gb[name])}")
    la = [line for cell in a.get("text", []) for line in cell]
    lb = [line for cell in b.get("text", []) for line in cell]
    if len(la) != len(lb):
        import difflib

        diff = [d for d in difflib.unified_diff(la, lb, "first", "second", n=0, lineterm="")][2:]
        out.append(f"text: {len(la)} lines != {len(lb)} lines:\n    " + "\n    ".join(diff[:40]))
    else:
        out += [
            f"text line {i + 1}: {x!r} != {y!r}"
            for i, (x, y) in enumerate(zip(la, lb))
            if not _close(x, y, rtol)
        ]
    fa, fb = a.get("figures", {}), b.get("figures", {})
    for key in sorted(set(fa) | set(fb)):
        if key not in fb or key not in fa:
            out.append(f"figure {key!r}: only in the {'first' if key in fa else 'second'}")
        elif fa[key] != fb[key]:
            out.append(f"figure {key!r}: {_figure_difference(fa[key], fb[key])}")
    return out


def _figure_difference(a: dict, b: dict) -> str:
    """How two figure digests differ: PNGs by pixels (with their shapes), SVGs by their bytes."""
    if a.get("format") == b.get("format") == "png":
        return f"pixels differ (shape {a['shape']} vs {b['shape']})"
    if a.get("format") == b.get("format") == "svg":
        return "SVG differs"
    return f"format {a.get('format')} vs {b.get('format')}"


def _show(bundle: dict) -> str:
    texts = set(bundle.values())
    return repr(next(iter(texts))) if len(texts) == 1 else repr(bundle)
