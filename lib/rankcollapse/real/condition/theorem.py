"""The collapse condition evaluated on real weights:
does :math:`4\\gamma\\beta H/\\sqrt{d_{qk}} < 1` hold?

The paper's Theorems 2.2 and 2.3 (Dong et al. 2021) guarantee a doubly exponential collapse of a
*pure* attention network when :math:`4\\gamma\\beta H/\\sqrt{d_{qk}} < 1`; the paper never evaluates
that condition on a trained model. This module does, with the book's computable constants
(:mod:`rankcollapse.theory`: ``beta``, ``gamma``, the layer constants
:math:`c_l = 4\\gamma_l\\beta_l H/\\sqrt{d_{qk}}`) and the book's refinement (chapter "Pure
attention collapses", section 2): the bound :math:`c^{(3^L-1)/2} r_0^{3^L}` with
:math:`c = \\max_l c_l` goes to zero exactly when :math:`\\sqrt c\\, r_0 < 1`,
:math:`r_0 = \\lVert\\operatorname{res}(X)\\rVert_{1,\\infty}`; ``c_l < 1`` is that condition for
inputs with :math:`r_0 \\le 1`.

**The theorem's object** (:func:`pure_attention`): a real model's attention weights
:math:`W_Q, W_K, W_V, W_O` only, in the core's :class:`~rankcollapse.san.SAN` with no skip
connection, no MLP, no LayerNorm (``ablation_config(cfg, "san", "clean")``) and **no biases**
(query and key biases would change the logits the proof expands; value and output biases only
add a row ``1 b^T`` that the residual ignores), as dot-product attention over all tokens: GPT-2's
causal mask and XLNet's relative-position terms are dropped, because the theorems cover neither.
Its input is the real model's embedding of the book's text (:mod:`rankcollapse.real.text`).

**Rescaling** (:func:`smallest_shrink`): dividing :math:`W_Q` and :math:`W_K` by ``k`` gives the
same network as dividing the *input* by ``k`` (then multiplying every hidden state by ``k``):
each layer's logits :math:`X W_{QK} X^\\top` scale as the input's square and its output
linearly. So ``c_l`` of the rescaled network on ``X`` is :math:`c_l(X/k)/k^2` and
:math:`\\sqrt c\\, r_0` is that of the original network on :math:`X/k`; the search evaluates many
``k`` in one batched :func:`rankcollapse.theory.gamma_details` call. Book: chapter "What the
theorem does not say", section 1.

**Per layer, from the weights alone** (:func:`layer_theorem_constants`): the floor of the collapse
constant and the constants :math:`\\Omega` and :math:`k` of the book's lower bound with skips
(chapter "Skip connections at depth", section 5).
"""

from __future__ import annotations

import math

import torch

from ... import theory
from ..._validate import check_choice, check_int, check_positive_float
from ...lower_bound_theorem import constants_of_norms, head_norms
from ...san import SAN, Block
from ..ablation import ablation_config
from ..hub import load
from ..model import RealModel, check_model
from ..registry import MODELS
from ..text import token_windows
from ..threads import torch_threads

__all__ = [
    "CONDITIONS",
    "pure_attention",
    "real_inputs",
    "condition_models",
    "check_condition",
    "condition_details",
    "condition_statistic",
    "condition_holds",
    "smallest_shrink",
    "attention_entropy",
    "layer_theorem_constants",
]

CONDITIONS = (
    "layer",
    "full",
)  # c_l < 1 in every layer; sqrt(max_l c_l) r_0 < 1 (the book's refinement)


def pure_attention(model, dtype=torch.float64, *, shrink: float = 1.0) -> SAN:
    """The pure self-attention network of ``model``'s attention weights: the theorems' object.

    ``model``: a :class:`~rankcollapse.real.model.RealModel`. No skip, MLP or LayerNorm (the clean
    ``san`` ablation of :func:`rankcollapse.real.ablation.ablation_config`), no biases, dot-product
    attention with no mask (GPT-2's causal mask and XLNet's relative positions dropped); shared
    layers (ALBERT) stay shared. ``shrink``: ``W_Q`` and ``W_K`` divided by it (``W_QK`` by its
    square). ``dtype``: float64 (default) follows the collapse's tail. Passes
    :func:`rankcollapse.theory.check_pure_attention`.
    """
    check_model(model)
    shrink = check_positive_float("shrink", shrink)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    net = model.network(torch.float32)
    cfg, _ = ablation_config(net.config, "san", "clean")
    cfg = cfg.replace(
        bias=False, causal=False, attention="dot", clamp_len=0, position_dtype=None, dtype=dtype
    )
    wanted = list(Block(cfg, None).weights())  # W_Q, W_K, W_V, W_O: a pure layer has nothing else
    layers = []
    for block in dict.fromkeys(net.san.layers):
        own = {k: block.weights()[k].detach().to(dtype) for k in wanted}
        own["W_Q"], own["W_K"] = own["W_Q"] / shrink, own["W_K"] / shrink
        layers.append(own)
    return theory.check_pure_attention(SAN.from_weights(cfg, layers))


def real_inputs(model, n_seq: int, n_tokens: int, dtype=torch.float64) -> torch.Tensor:
    """The first layer's input on real text: ``model``'s embedding of :func:`token_windows`
    ``(n_seq, n_tokens)`` (its own tokenizer where it has one), shape ``(n_seq, n_tokens, d)``."""
    check_model(model)
    ids = token_windows(model, n_seq, n_tokens)
    with torch.no_grad():
        return model.network(torch.float32).embed(ids).to(dtype)


def condition_models(seed: int = 0, names=None) -> list[RealModel]:
    """The registry's models (:data:`rankcollapse.real.registry.MODELS`) as the section reads
    them: all-MiniLM-L6-v2 pretrained (the one pretrained model shipped offline), every other one
    at initialisation (``seed``). ``names``: a subset of the registry, in that order."""
    names = list(MODELS) if names is None else list(names)
    if not names:
        raise ValueError("names must list at least one model of the registry")
    for n in names:
        check_choice("names", n, tuple(MODELS))
    return [load(n, MODELS[n].source == "package", seed) for n in names]


def check_condition(condition) -> str:
    """``condition`` itself if it is one of :data:`CONDITIONS`; a ``ValueError`` naming them
    otherwise."""
    return check_choice("condition", condition, CONDITIONS)


def condition_statistic(det, condition: str, shrink: float = 1.0):
    """Per input: ``max_l c_l`` (``"layer"``) or ``sqrt(max_l c_l) r_0`` (``"full"``), for the
    network with ``W_Q, W_K`` divided by ``shrink`` on the input whose details ``det`` hold (the
    original network on the input divided by ``shrink``)."""
    if not isinstance(det, dict) or not {"constants", "residual"} <= det.keys():
        raise TypeError(
            f"det must be the dict of condition_details(san, X), got {type(det).__name__}"
        )
    check_condition(condition)
    shrink = check_positive_float("shrink", shrink)
    c = det["constants"].amax(dim=0) / shrink**2
    if condition == "layer":
        return c
    return torch.sqrt(c) * det["residual"][0] * shrink


def condition_details(san, X) -> dict:
    """:func:`rankcollapse.theory.gamma_details` of ``san`` on ``X`` with the layer constants
    :math:`c_l` added (``"constants"``, ``(L, b)``)."""
    det = theory.gamma_details(san, X)
    cfg = san.config
    b = det["beta"].reshape((-1,) + (1,) * (det["gamma"].ndim - 1))
    # c_l, as layer_constants
    det["constants"] = 4 * det["gamma"] * b * cfg.n_heads / math.sqrt(cfg.d_qk)
    return det


@torch.no_grad()
def condition_holds(san, X, condition: str = "layer") -> bool:
    """Whether the condition holds for the pure network ``san`` on every input of ``X``
    ``(b, n, d)``: ``"layer"``: :math:`c_l < 1` in every layer
    (:func:`rankcollapse.theory.layer_constants`); ``"full"``:
    :math:`\\sqrt{\\max_l c_l}\\, r_0 < 1`, the book's refinement."""
    check_condition(condition)
    with torch_threads():
        return bool((condition_statistic(condition_details(san, X), condition) < 1).all())


@torch.no_grad()
def smallest_shrink(san, X, condition: str = "layer", *, rtol: float = 1e-2) -> tuple[float, float]:
    r"""The smallest ``k`` such that dividing ``W_Q`` and ``W_K`` by ``k`` makes ``condition`` hold
    on every input of ``X`` ``(b, n, d)``, to relative precision ``rtol``: ``(k_holds, k_fails)``
    with the condition holding at ``k_holds`` and failing at ``k_fails >= k_holds / (1 + rtol)``
    (``(1.0, 0.0)`` when it already holds at ``k = 1``).

    Since :math:`\kappa \ge 1`, :math:`\max_h\lVert P_h\rVert_1 \ge 1` and ``nu >= 1``, every
    constant is at least :math:`4\beta_l\nu_l H/\sqrt{d_{qk}}` whatever the input, so the
    condition fails for every ``k`` below the square root of the largest such floor (times the
    largest :math:`r_0` for ``"full"``). The search starts there and bisects in ``log k`` (each
    step one batched :func:`rankcollapse.theory.gamma_details` call on the shrunk input, see the
    module's note). Assumes the statistic falls as ``k`` grows (tested, not proved).
    """
    check_condition(condition)
    rtol = check_positive_float("rtol", rtol)
    X = san.check_input(X)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (b, n, d), got {tuple(X.shape)}")
    with torch_threads():
        det = condition_details(san, X)
        if bool((condition_statistic(det, condition) < 1).all()):
            return 1.0, 0.0
        cfg = san.config
        floor = float((4 * det["beta"] * det["nu"] * cfg.n_heads / math.sqrt(cfg.d_qk)).max())
        r0 = float(det["residual"][0].max()) if condition == "full" else 1.0
        # below lo the floor alone keeps the statistic above 1 (the margin beats rounding)
        lo = max(1.0, (1 - 1e-6) * math.sqrt(floor) * r0)
        hi = lo * (1 + 4 * rtol)
        while not _all_hold(san, X, hi, condition):  # the floor is only a lower bound
            lo, hi = hi, hi * 2
            if hi > 1e150:
                raise RuntimeError("the condition did not hold at any shrink up to 1e150")
        while hi / lo > 1 + rtol:
            mid = math.sqrt(lo * hi)
            lo, hi = (lo, mid) if _all_hold(san, X, mid, condition) else (mid, hi)
        return float(hi), float(lo)


def _all_hold(san, X, k, condition) -> bool:
    """Does ``condition`` hold on every input for ``san`` with ``W_Q, W_K`` divided by ``k``?"""
    return bool((condition_statistic(condition_details(san, X / k), condition, k) < 1).all())


@torch.no_grad()
def attention_entropy(san, X) -> torch.Tensor:
    """Each layer's attention entropy over :math:`\\log n`, averaged over rows, heads and inputs,
    ``(L,)``.

    :math:`-\\sum_j P_{ij}\\log P_{ij}` of every row of every head's attention matrix on
    ``X`` ``(..., n, d)``; 1 for uniform attention (every token averages all), 0 for hard
    attention (each token attends to one).
    """
    X = san.check_input(X)
    n = X.shape[-2]
    if n < 2:
        raise ValueError(f"X must hold at least 2 tokens for an entropy relative to log n, got {n}")
    with torch_threads():
        out = []
        for P in san(X).attentions:
            h = -(P * torch.log(P.clamp_min(1e-300))).sum(-1)
            out.append(h.mean() / math.log(n))
    return torch.stack(out) if out else torch.zeros(0, dtype=X.dtype)


@torch.no_grad()
def layer_theorem_constants(weights: dict, n_heads: int, d_qk: int) -> dict:
    """One layer's constants of the book's two theorems, from its attention weights ``W_Q, W_K``
    ``(H, d, d_qk)`` and ``W_V, W_O``.

    ``"c_floor"``: :math:`4\\beta\\nu H/\\sqrt{d_{qk}}`, the smallest value the pure-attention
    bound's constant :math:`c_l = 4\\gamma_l\\beta_l H/\\sqrt{d_{qk}}` takes on any input
    (:math:`\\gamma_l \\ge \\nu_l`; chapter "Pure attention collapses"): its condition
    :math:`c_l < 1` fails on every input when this is at least 1. ``"omega"`` and ``"k"``: the
    lower bound's :math:`\\Omega = \\sum_h \\lVert W_h\\rVert_\\infty` and
    :math:`k = (4/\\sqrt{d_{qk}})\\sum_h q_h\\omega_h` (chapter "A lower bound with skip
    connections"), which needs :math:`\\Omega < 1/2`. Biases, masks, LayerNorm and XLNet's
    position terms are outside both theorems: these are the constants of the layer's dot-product
    attention weights alone. The products are taken in the weights' dtype (at least float32).
    """
    n_heads, d_qk = check_int("n_heads", n_heads), check_int("d_qk", d_qk)
    dt = torch.promote_types(weights["W_Q"].dtype, torch.float32)  # float32 weights: float32
    Q, K = weights["W_Q"].to(dt), weights["W_K"].to(dt)
    V, O = weights["W_V"].to(dt), weights["W_O"].to(dt)
    if K.shape[0] != n_heads:  # grouped-query attention: each key/value head serves a group
        K = K.repeat_interleave(n_heads // K.shape[0], dim=0)
        V = V.repeat_interleave(n_heads // V.shape[0], dim=0)
    norms = head_norms(Q @ K.transpose(-1, -2), V @ O)  # of (H, d, d) products, each abs once
    q1, w1, winf = norms["qk_1"], norms["w_1"], norms["w_inf"]  # ||W_QK,h||_1: column sums
    b = q1 * torch.sqrt(w1 * winf)
    beta = b.max()
    nu = torch.sqrt((q1 * w1).max() * (q1 * winf).max()) / beta if beta > 0 else 1.0
    k, omega = constants_of_norms(norms, d_qk)
    return {
        "c_floor": float(4 * beta * nu * n_heads / math.sqrt(d_qk)),
        "omega": float(omega),
        "k": float(k),
    }
