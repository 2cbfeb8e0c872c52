"""The book's live explorer: collapse against depth, attention weight scale and skip strength.

The reader moves three controls and sees the residual through depth beside the book's collapse
bound (chapter "Pure attention collapses", the theorem "The collapse bound with a computable
constant (this book)", one constant for all layers; shown in chapter "Skip connections",
section 3). Nothing runs in the reader's
browser but a small script: :func:`skip_strength_grid` measures every setting on a grid when the
book is built, and :func:`explorer_html` embeds the numbers with a self-contained script (plain
JavaScript drawing inline SVG; no library, nothing fetched), so the page works offline. The
words the widget shows (its legend and the note under the plot) are :data:`TEXT`, embedded with
the numbers: ``tests/test_attributions.py`` reads them with ``booktools.claims.page_text_credits``,
as it reads the chapters.

The skip strength :math:`\\alpha` scales the skip branch of every layer,
:math:`X_{l+1} = \\alpha X_l + \\operatorname{SA}(X_l)`: :math:`\\alpha = 0` is the pure attention
of the theorems, :math:`\\alpha = 1` the usual skip connection
(:class:`~rankcollapse.san.SANConfig`'s ``skip_strength``; :func:`scaled_skip_states` runs a
network's layers with the skip scaled).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from rankcollapse._validate import (
    MAX_LAYERS,
    check_int,
    check_positive_float,
    check_seed,
    derive_seed,
)
from rankcollapse.residual import composite_norm, res
from rankcollapse.san import SAN, SANConfig, check_san
from rankcollapse.theory import collapse_bound, tracked_residual, unit_residual_tokens

__all__ = ["TEXT", "scaled_skip_states", "skip_strength_grid", "explorer_html", "show"]

_FLOOR = -320.0  # log10 below float64's smallest number: "underflowed"
_BOUND_CAP = 1e6  # |log10| of the bound beyond which it is drawn and told as the cap

#: The words the widget writes into the page: its legend, and the note under the plot (``{L}``:
#: the depth shown, ``{value}``: the bound's last value). What it draws is the book's bound
#: (:func:`~rankcollapse.theory.collapse_bound`, ``form="paper"``: one constant for all layers,
#: the book's gamma), so the words call it the book's.
TEXT = {
    "measured": "measured",
    "bound": "the book's bound (one constant)",
    "axis": "layer l",
    "after": "After {L} layer{s} the residual is {shown} of the input\u2019s. ",
    "underflow": "below 10\u207b\u00b3\u2070\u2070 (underflow)",
    "no_bound": "With a skip (\u03b1 > 0) the bound gives nothing.",
    "vacuous": (
        "Dashed: the book\u2019s collapse bound, with one constant for all layers; at layer {L} "
        "it is above the input\u2019s residual, so it says nothing (these weights are too "
        "large for its condition)."
    ),
    "bound_value": (
        "Dashed: the book\u2019s collapse bound, with one constant for all layers, {value} at "
        "layer {L}."
    ),
}


@torch.no_grad()
def scaled_skip_states(model, X, strength: float) -> list[torch.Tensor]:
    """The hidden states ``X_0..X_L`` of ``model``'s attention layers with the skip scaled:
    :math:`X_{l+1} = \\alpha X_l + \\operatorname{SA}_l(X_l)`, ``alpha = strength``.

    ``model``: a pure-attention :class:`~rankcollapse.san.SAN` (no MLP, no LayerNorm; its
    ``skip`` flag is ignored, the strength replaces it: the same weights run with
    ``skip=True, skip_strength=strength``, :meth:`~rankcollapse.san.SAN.replace`). ``X``:
    ``(..., n, d)``.
    """
    model = check_san(model)
    cfg = model.config
    if cfg.mlp or cfg.layernorm != "none":
        raise ValueError("scaled_skip_states needs a pure-attention SAN (mlp=0, layernorm='none')")
    scaled = model.replace(
        skip=True, skip_strength=check_positive_float("strength", strength, allow_zero=True)
    )
    return scaled(X).hidden_states


def _log10_ratio(states) -> np.ndarray:
    r = torch.stack([composite_norm(res(h)) for h in states])
    with np.errstate(divide="ignore"):
        return np.log10((r / r[0]).numpy())


@torch.no_grad()
def skip_strength_grid(
    *, L: int, scales, strengths, n: int, d: int, H: int, samples: int, seed: int
) -> dict:
    """Measure :math:`\\lVert\\operatorname{res}(X_l)\\rVert / \\lVert\\operatorname{res}(X)\\rVert`
    for ``l = 0..L`` on a grid of attention weight scales (``init_scale``) and skip strengths.

    For each scale, ``samples`` random SANs (``H`` heads, width ``d``, seeds ``seed + s``) read
    ``n`` standard normal tokens scaled to
    :math:`\\lVert\\operatorname{res}(X)\\rVert_{1,\\infty}=1`
    (:func:`~rankcollapse.theory.unit_residual_tokens`); the same networks and inputs serve every
    strength. Strength 0 is pure attention, measured with
    :func:`~rankcollapse.theory.tracked_residual` (exact below float64's rounding floor) and
    bounded by :func:`~rankcollapse.theory.collapse_bound` (the book's bound, one constant for all
    layers, ``form="paper"``); with a skip
    (strength > 0) the forward pass is measured and the theorem gives no bound. The depth-``l``
    prefix of a depth-``L`` network is a depth-``l`` network, so one pass serves every depth.

    Returns a dict of plain lists (JSON-ready): ``L``, ``scales``, ``strengths``, ``input_rms``
    (the inputs' root-mean-square entry: unit-residual inputs are small), ``measured``
    (``[scale][strength][l]``, ``log10`` of the geometric mean over samples, ``-320`` after
    underflow), ``bound`` (``[scale][l]``, ``log10``, geometric mean over samples) and the sizes.
    """
    check_int("L", L, maximum=MAX_LAYERS)
    L, n, d, H = (
        check_int("L", L),
        check_int("n", n, minimum=2),
        check_int("d", d),
        check_int("H", H),
    )
    samples, seed = check_int("samples", samples), check_seed("seed", seed)
    scales = [float(s) for s in scales]
    strengths = [float(a) for a in strengths]
    if not scales or not strengths:
        raise ValueError("scales and strengths must each hold at least one value")
    if any(s <= 0 for s in scales) or any(a < 0 for a in strengths):
        raise ValueError(f"scales must be > 0 and strengths >= 0, got {scales} and {strengths}")
    gen = torch.Generator().manual_seed(seed)
    inputs = [unit_residual_tokens(n, d, generator=gen) for _ in range(samples)]
    measured = np.zeros((len(scales), len(strengths), L + 1))
    bound = np.zeros((len(scales), L + 1))
    for i, scale in enumerate(scales):
        cfg = SANConfig(n_layers=L, n_heads=H, d_model=d, init_scale=scale)
        models = [SAN(cfg, seed=derive_seed(seed, s)) for s in range(samples)]
        logs = np.zeros((samples, len(strengths), L + 1))
        bounds = np.zeros((samples, L + 1))
        for s, (model, X) in enumerate(zip(models, inputs)):
            for j, a in enumerate(strengths):
                if a == 0:
                    logs[s, j] = tracked_residual(model, X, log10=True).numpy()
                else:
                    logs[s, j] = _log10_ratio(scaled_skip_states(model, X, a))
            bounds[s] = collapse_bound(model, X, "paper", log10=True).numpy()
        logs = np.where(np.isfinite(logs), logs, _FLOOR).clip(_FLOOR, None)
        measured[i] = logs.mean(axis=0)
        # finite for JSON: beyond +-1e6 decades the bound says "vacuous" or "zero" all the same
        bound[i] = (
            np.nan_to_num(bounds, nan=_BOUND_CAP, posinf=_BOUND_CAP, neginf=-_BOUND_CAP)
            .clip(-_BOUND_CAP, _BOUND_CAP)
            .mean(axis=0)
        )
    return {
        "L": L,
        "n": n,
        "d": d,
        "H": H,
        "samples": samples,
        "seed": seed,
        "input_rms": round(float(torch.stack(inputs).pow(2).mean().sqrt()), 6),
        "scales": scales,
        "strengths": strengths,
        "measured": np.round(measured, 4).tolist(),
        "bound": np.round(bound, 4).tolist(),
    }


_HERE = Path(__file__).resolve().parent
_CSS = (_HERE / "explorer.css").read_text()  # the style sheet

_JS = (_HERE / "explorer.js").read_text()  # the script, a %-format with the explorer's id (uid)


def explorer_html(grid: dict, uid: str = "rc-explorer") -> str:
    """The explorer for ``grid`` (from :func:`skip_strength_grid`) as one self-contained HTML
    fragment: three sliders (depth, weight scale, skip strength), an inline SVG drawn by a
    small script from the embedded numbers, and a sentence reading the curve's last value."""
    if not isinstance(uid, str) or not uid.replace("-", "").isalnum():
        raise ValueError(f"uid must be letters, digits and '-', got {uid!r}")
    for key in ("L", "scales", "strengths", "measured", "bound"):
        if key not in grid:
            raise ValueError(f"grid lacks {key!r}: pass what skip_strength_grid returns")
    L, scales, strengths = grid["L"], grid["scales"], grid["strengths"]
    # the usual initialisation (scale 1) and the usual skip (strength 1) where the grid has them
    s0 = scales.index(1.0) if 1.0 in scales else 0
    a0 = 0
    payload = json.dumps({**grid, "text": TEXT}, separators=(",", ":")).replace("</", "<\\/")
    label = "\u2016res(X\u2097)\u2016 / \u2016res(X)\u2016 (log scale)"
    controls = "".join(
        f'<label for="{uid}-{name}">{text}</label>'
        f'<input type="range" id="{uid}-{name}" name="{name}" min="{lo}" max="{hi}" step="1" '
        f'value="{v}">'
        f'<output name="{name}" for="{uid}-{name}"></output>'
        for name, text, lo, hi, v in (
            ("depth", "depth L", 1, L, L),
            ("scale", "attention weight scale", 0, len(scales) - 1, s0),
            ("strength", "skip strength \u03b1", 0, len(strengths) - 1, a0),
        )
    )
    return (
        f'<div class="rc-explorer" id="{uid}"><style>{_CSS}</style>'
        f'<div class="rc-controls">{controls}</div>'
        f'<div class="rc-axis-label">{label}</div>'
        f'<div class="rc-plot"><svg viewBox="0 0 672 300" width="672" height="300" role="img" '
        f'aria-label="residual against layer, log scale" aria-describedby="{uid}-note"></svg></div>'
        f'<p class="rc-note" id="{uid}-note" aria-live="polite"></p>'
        f'<script type="application/json">{payload}</script>'
        f"<script>{_JS % {'uid': json.dumps(uid)}}</script></div>"
    )


class _HTML:
    def __init__(self, text):
        self.text = text

    def _repr_html_(self):
        return self.text

    def __repr__(self):
        return "(an interactive figure: open the book's page, or a notebook that renders HTML)"


def show(grid: dict, uid: str = "rc-explorer") -> None:
    """Display the explorer as the cell's output (HTML). Returns nothing, so that a cell
    ending with this call shows the explorer once (a page can hold each ``uid`` once)."""
    obj = _HTML(explorer_html(grid, uid))
    try:
        from IPython.display import display
    except ImportError:
        print(repr(obj))
    else:
        display(obj)
