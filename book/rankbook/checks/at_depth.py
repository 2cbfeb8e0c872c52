"""Exercises of the chapter "Skip connections at depth"."""

import math

import torch

from rankcollapse import lower_bound

from .questions import Question
from .registry import Exercise, Rubric, register

# ------------------------------------------------- predict, then measure: pre-LN at 8 x depth

#: the setting the prediction is about (the chapter's fast-mode sizes, one seed)
PREDICT_SETTING = dict(
    name="gpt2", seed=0, width=64, heads=4, n_texts=3, n_tokens=16, factor=8, variant="full"
)


CHANGES = (
    "within a factor 2",
    "2 to 1000 times lower",
    "over 1000 times lower",
    "over 2 times higher",
)


def change_class(ratio: float) -> str:
    """The choice of :data:`CHANGES` a ratio (deepest over own depth) falls in."""
    if ratio > 2:
        return CHANGES[3]
    if ratio >= 0.5:
        return CHANGES[0]
    return CHANGES[1] if ratio >= 1e-3 else CHANGES[2]


def predicted_change():
    """How GPT-2's full block (pre-LN, causal) at 8 times its depth compares with its own depth,
    in the setting :data:`PREDICT_SETTING`: the typical relative residual after layer 96 over
    that after layer 12, as one of :data:`CHANGES` (what the prediction is checked against)."""
    from rankcollapse.real import depth

    s = PREDICT_SETTING
    model = depth.build(s["name"], s["seed"], width=s["width"], heads=s["heads"])
    ids = depth.texts(model, s["n_texts"], s["n_tokens"])
    run = depth.depth_run(
        model, ids, s["seed"], factors=(s["factor"],), variants=(s["variant"],), float32=()
    )
    curve = run.curves[s["variant"]]
    typical = torch.from_numpy(curve).log().mean(0).exp().numpy()
    return change_class(float(typical[-1] / typical[run.n_layers]))


register(
    Question(
        id="at_depth.predict_pre_ln",
        kind="predict",
        answer=predicted_change,
        choices=CHANGES,
        hint=(
            "A pre-LN layer adds its branches to the stream and normalises only what enters "
            "them: what does each layer add, compared with what the stream already holds?"
        ),
        mistakes=[
            (
                "over 1000 times lower",
                "That is pure attention's fall; with skips the input's path carries the "
                "stream through every layer.",
            ),
            (
                "2 to 1000 times lower",
                "Each layer does move the stream, but by little next to what it already "
                "holds: count how much 84 more such layers can take away.",
            ),
        ],
    )
)

# ------------------------------------------------------------ read the figure: the deepest GPT-2


def _deepest_gpt2():
    from rankcollapse.real import depth, spec

    return spec("gpt2").n_layers * depth.FACTORS[-1]


register(
    Question(
        id="at_depth.read_deepest",
        kind="read",
        answer=_deepest_gpt2,
        rtol=0.0,
        hint="Each panel runs from the input to eight times its model's own depth.",
        mistakes=[
            (12, "12 is GPT-2's own depth; the panel goes on to eight times that."),
            (8, "8 is the factor; the axis counts layers."),
            (48, "48 is four times GPT-2's depth, the last grey line; the panel goes further."),
        ],
    )
)


register(
    Rubric(
        label="ex-depth-explain",
        criteria=(
            (
                2,
                "'Prevent' as a statement about depth: the residual with skips bounded away from "
                "zero however deep, in every placement; a fall at a fixed rate only slows the "
                "loss.",
            ),
            (1, "Uses the measurements: flat for some models, falling for ALBERT's shared layer."),
            (
                2,
                "Two gaps from 'transformers people train': initialisation, not training (MiniLM "
                "the only trained model, its deeper versions a probe); further layers drawn or "
                "repeated rather than trained at that depth; the fast page's narrowed widths.",
            ),
        ),
        wrong_turns=(
            "Reading 'stays far above pure attention' as 'prevented': the first criterion is lost.",
        ),
    )
)

# ------------------------------------------------------- derive: the bound for scaled branches


def _scaled_cases():
    cases = []
    for b0, k, omega, L0, L in (
        (2.0, 0.05, 0.3, 12, 12),
        (2.0, 0.05, 0.3, 12, 96),
        (1.0, 0.4, 0.9, 6, 48),
        (5.0, 0.01, 2.0, 12, 384),
        (0.5, 1.0, 0.2, 4, 64),
    ):
        cases.append((b0, k, omega, L0, L))
    return cases


def _scaled_bound(b0, k, omega, L0, L):
    lam = math.sqrt(L0 / L)
    if lam * omega >= 0.5:
        return math.nan
    return float(lower_bound.depth_bound(b0, lam * k, lam * omega, [L])[0])


def _omega_only(b0, k, omega, L0, L):
    lam = math.sqrt(L0 / L)
    if lam * omega >= 0.5:
        return math.nan
    return float(lower_bound.depth_bound(b0, k, lam * omega, [L])[0])


def _unscaled(b0, k, omega, L0, L):
    if omega >= 0.5:
        return math.nan
    return float(lower_bound.depth_bound(b0, k, omega, [L])[0])


def _squared(b0, k, omega, L0, L):
    lam = L0 / L
    if lam * omega >= 0.5:
        return math.nan
    return float(lower_bound.depth_bound(b0, lam * k, lam * omega, [L])[0])


def _same_nan(got, want):
    try:
        g, w = float(got), float(want)
    except (TypeError, ValueError):
        return False
    if math.isnan(w):
        return math.isnan(g)
    return math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-12)


register(
    Exercise(
        id="at_depth.scaled_bound",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=_scaled_bound,
        cases=_scaled_cases,
        close=_same_nan,
        partial=True,
        hint=(
            "Scaling a branch by lam scales every value map W_h = W_V W_O by lam: Omega and k "
            "both carry one factor of ||W_h||_inf; the query-key maps are unchanged."
        ),
        mistakes=[
            (
                _omega_only,
                "k is (4/sqrt(d_qk)) sum_h q_h omega_h: it carries the value maps' norm too, so it "
                "scales by lam as Omega does.",
            ),
            (
                _unscaled,
                "The network of depth L has its branches multiplied by sqrt(L0 / L): its "
                "constants are those of the native layers times that factor.",
            ),
            (_squared, "The branches are scaled by the square root of L0 / L, not by L0 / L."),
        ],
    )
)

register(
    Rubric(
        label="ex-depth-derive",
        criteria=(
            (1, "Omega and k are both linear in the value maps, so both are multiplied by lam."),
            (1, "The regime: lam Omega < 1/2, i.e. L > L0 (2 Omega)^2 for lam = sqrt(L0 / L)."),
            (
                2,
                "For large L the threshold (1 - 2 lam Omega)/sqrt(3 lam k) grows like L^(1/4), "
                "so b~ = b0; the bound is b0 / sqrt(1 + (15/4) k b0^2 sqrt(L0 L)), which "
                "decays like L^(-1/4).",
            ),
            (
                1,
                "Unscaled (lam = 1, Omega < 1/2) the same bound decays like L^(-1/2): the scaling "
                "halves the exponent, and it brings networks whose Omega exceeds 1/2 into the "
                "regime at all.",
            ),
        ),
        wrong_turns=(
            "Scaling Omega but not k: the exponent comes out as -1/2 and the last criterion is "
            "lost.",
            "Reading the bound as the measured rate: a lower bound says the residual cannot fall "
            "faster, not that it falls like L^(-1/4).",
        ),
    )
)

# --------------------------------------------------- build: one step of GPT-2's converter


def _gpt2_blocks():
    from transformers import GPT2Config, GPT2Model

    cases = []
    for seed, d, H in ((0, 16, 4), (1, 24, 3), (2, 8, 1), (3, 32, 8)):
        cfg = GPT2Config(
            n_embd=d,
            n_head=H,
            n_layer=1,
            n_positions=16,
            vocab_size=11,
            bos_token_id=0,
            eos_token_id=0,
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            block = GPT2Model(cfg).double().h[0]
            for p in block.parameters():  # biases too, so that no mistake hides behind a zero
                p.data.add_(0.05 * torch.randn_like(p))
        cases.append((block.attn.c_attn.weight.detach(), block.attn.c_proj.weight.detach(), H))
    return cases


def gpt2_heads(c_attn, c_proj, n_heads):
    """Reference: GPT-2's fused ``c_attn`` ``(d, 3d)`` (a ``Conv1D``: ``x @ W``) and ``c_proj``
    ``(d, d)`` as the core's ``W_Q, W_K, W_V`` ``(H, d, d_h)`` and ``W_O`` ``(H, d_h, d)``."""
    d = c_attn.shape[0]
    dh = d // n_heads
    q, k, v = c_attn.split(d, dim=1)
    heads = {
        name: w.reshape(d, n_heads, dh).permute(1, 0, 2)
        for name, w in (("W_Q", q), ("W_K", k), ("W_V", v))
    }
    heads["W_O"] = c_proj.reshape(n_heads, dh, d)
    return heads


def _transposed(c_attn, c_proj, n_heads):
    d = c_attn.shape[0]
    blocks = [w.T for w in c_attn.split(d, dim=1)]  # read as nn.Linear's (out, in)
    return gpt2_heads(torch.cat(blocks, dim=1), c_proj.T, n_heads)


def _head_minor(c_attn, c_proj, n_heads):
    d = c_attn.shape[0]
    dh = d // n_heads
    q, k, v = c_attn.split(d, dim=1)
    heads = {
        name: w.reshape(d, dh, n_heads).permute(2, 0, 1)
        for name, w in (("W_Q", q), ("W_K", k), ("W_V", v))
    }
    heads["W_O"] = c_proj.reshape(dh, n_heads, d).permute(1, 0, 2)
    return heads


def _kqv(c_attn, c_proj, n_heads):
    out = gpt2_heads(c_attn, c_proj, n_heads)
    out["W_Q"], out["W_K"] = out["W_K"], out["W_Q"]
    return out


register(
    Exercise(
        id="at_depth.gpt2_heads",
        points=2,  # its difficulty: the points rule (rankbook.checks)
        reference=gpt2_heads,
        cases=_gpt2_blocks,
        hint=(
            "c_attn's columns are the queries, then the keys, then the values, each head's "
            "d_h columns side by side; Conv1D computes x @ W, so no transpose is needed."
        ),
        mistakes=[
            (
                _transposed,
                "GPT-2's Conv1D stores its weight as (in, out) and computes x @ W: unlike "
                "nn.Linear, it needs no transpose.",
            ),
            (
                _head_minor,
                "Head h owns columns h d_h to (h + 1) d_h - 1 of each block of d: reshape "
                "to (d, H, d_h), heads first, not (d, d_h, H).",
            ),
            (_kqv, "c_attn's first d columns are the queries, the next d the keys."),
        ],
    )
)
