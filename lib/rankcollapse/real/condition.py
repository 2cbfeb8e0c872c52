"""The collapse condition evaluated on real weights: does :math:`4\\gamma\\beta H/\\sqrt{d_{qk}} < 1` hold?

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import theory
from .._validate import check_bool, check_choice, check_int, check_positive_float
from ..san import SAN, Block
from ..stats import first_below, log_slope
from .convert import ablation_config
from .hub import RealModel, load
from .measure import _check_model, _threads, hidden_states
from .registry import MODELS
from .text import token_windows

__all__ = [
    "CONDITIONS",
    "pure_attention",
    "real_inputs",
    "condition_models",
    "condition_holds",
    "smallest_shrink",
    "attention_entropy",
    "ModelCondition",
    "model_condition",
    "ConditionStudy",
    "condition_study",
]

CONDITIONS = (
    "layer",
    "full",
)  # c_l < 1 in every layer; sqrt(max_l c_l) r_0 < 1 (the book's refinement)


def pure_attention(model, dtype=torch.float64, *, shrink: float = 1.0) -> SAN:
    """The pure self-attention network of ``model``'s attention weights: the theorems' object.

    ``model``: a :class:`~rankcollapse.real.hub.RealModel`. No skip, MLP or LayerNorm (the clean
    ``san`` ablation of :func:`rankcollapse.real.convert.ablation_config`), no biases, dot-product
    attention with no mask (GPT-2's causal mask and XLNet's relative positions dropped); shared
    layers (ALBERT) stay shared. ``shrink``: ``W_Q`` and ``W_K`` divided by it (``W_QK`` by its
    square). ``dtype``: float64 (default) follows the collapse's tail. Passes
    :func:`rankcollapse.theory.check_pure_attention`.
    """
    _check_model(model)
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
    _check_model(model)
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


def _check_condition(condition):
    return check_choice("condition", condition, CONDITIONS)


def _statistic(det, condition, shrink=1.0):
    """Per input: ``max_l c_l`` (``"layer"``) or ``sqrt(max_l c_l) r_0`` (``"full"``), for the network
    with ``W_Q, W_K`` divided by ``shrink`` on the input whose details ``det`` hold (the original
    network on the input divided by ``shrink``)."""
    c = det["constants"].amax(dim=0) / shrink**2
    if condition == "layer":
        return c
    return torch.sqrt(c) * det["residual"][0] * shrink


def _details(san, X):
    det = theory.gamma_details(san, X)
    cfg = san.config
    b = det["beta"].reshape((-1,) + (1,) * (det["gamma"].ndim - 1))
    det["constants"] = (
        4 * det["gamma"] * b * cfg.n_heads / math.sqrt(cfg.d_qk)
    )  # c_l, as layer_constants
    return det


@torch.no_grad()
def condition_holds(san, X, condition: str = "layer") -> bool:
    """Whether the condition holds for the pure network ``san`` on every input of ``X`` ``(b, n, d)``:
    ``"layer"``: :math:`c_l < 1` in every layer (:func:`rankcollapse.theory.layer_constants`);
    ``"full"``: :math:`\\sqrt{\\max_l c_l}\\, r_0 < 1`, the book's refinement."""
    _check_condition(condition)
    with _threads():
        return bool((_statistic(_details(san, X), condition) < 1).all())


@torch.no_grad()
def smallest_shrink(san, X, condition: str = "layer", *, rtol: float = 1e-2) -> tuple[float, float]:
    r"""The smallest ``k`` such that dividing ``W_Q`` and ``W_K`` by ``k`` makes ``condition`` hold on
    every input of ``X`` ``(b, n, d)``, to relative precision ``rtol``: ``(k_holds, k_fails)`` with
    the condition holding at ``k_holds`` and failing at ``k_fails >= k_holds / (1 + rtol)``
    (``(1.0, 0.0)`` when it already holds at ``k = 1``).

    Since :math:`\kappa \ge 1`, :math:`\max_h\lVert P_h\rVert_1 \ge 1` and ``nu >= 1``, every
    constant is at least :math:`4\beta_l\nu_l H/\sqrt{d_{qk}}` whatever the input, so the
    condition fails for every ``k`` below the square root of the largest such floor (times the
    largest :math:`r_0` for ``"full"``). The search starts there and bisects in ``log k`` (each
    step one batched :func:`rankcollapse.theory.gamma_details` call on the shrunk input, see the
    module's note). Assumes the statistic falls as ``k`` grows (tested, not proved).
    """
    _check_condition(condition)
    rtol = check_positive_float("rtol", rtol)
    X = san.check_input(X)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (b, n, d), got {tuple(X.shape)}")
    with _threads():
        det = _details(san, X)
        if bool((_statistic(det, condition) < 1).all()):
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
    return bool((_statistic(_details(san, X / k), condition, k) < 1).all())


@torch.no_grad()
def attention_entropy(san, X) -> torch.Tensor:
    """Each layer's attention entropy over :math:`\\log n`, averaged over rows, heads and inputs, ``(L,)``.

    :math:`-\\sum_j P_{ij}\\log P_{ij}` of every row of every head's attention matrix on
    ``X`` ``(..., n, d)``; 1 for uniform attention (every token averages all), 0 for hard
    attention (each token attends to one).
    """
    X = san.check_input(X)
    n = X.shape[-2]
    if n < 2:
        raise ValueError(f"X must hold at least 2 tokens for an entropy relative to log n, got {n}")
    with _threads():
        out = []
        for P in san(X).attentions:
            h = -(P * torch.log(P.clamp_min(1e-300))).sum(-1)
            out.append(h.mean() / math.log(n))
    return torch.stack(out) if out else torch.zeros(0, dtype=X.dtype)


@dataclass
class ModelCondition:
    r"""The condition on one real model, on real inputs (section 1 of the chapter).

    Arrays (numpy, float64): ``beta`` ``(L, H)`` (per head, :func:`rankcollapse.theory.beta`);
    ``gamma``, ``constants`` ``(L, b)`` (per layer and input sequence, the book's ``gamma`` and
    :math:`c_l`); ``head_constants`` ``(L, H, b)``: :math:`4\gamma_l\beta_{l,h}H/\sqrt{d_{qk}}`, each
    head's share (the layer's constant is its largest head's); ``floor`` ``(L,)``: the
    input-free lower bound :math:`4\beta_l\nu_l H/\sqrt{d_{qk}}` of :math:`c_l`; ``r0`` ``(b,)``:
    :math:`\lVert\operatorname{res}(X)\rVert`; ``full`` ``(b,)``: :math:`\sqrt{\max_l c_l}\,r_0`;
    ``relative`` ``(b, L + 1)``: the tracked relative residual of the pure network
    (:func:`rankcollapse.theory.tracked_relative_residual`). ``shrink``: ``{condition: (k_holds,
    k_fails)}`` of :func:`smallest_shrink`; ``entropy``: ``{"real": (L,), "pure": (L,), condition:
    (L,)}``, attention entropy over log n in the real model, in the pure network, and in the pure
    network shrunk to where ``condition`` holds.
    """

    name: str
    label: str
    pretrained: bool
    n_heads: int
    d_qk: int
    beta: np.ndarray
    gamma: np.ndarray
    constants: np.ndarray
    head_constants: np.ndarray
    floor: np.ndarray
    r0: np.ndarray
    full: np.ndarray
    relative: np.ndarray
    shrink: dict = field(default_factory=dict)
    entropy: dict = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return self.beta.shape[0]

    def layer_holds(self) -> np.ndarray:
        """``(L,)``: :math:`c_l < 1` on every input sequence."""
        return (self.constants < 1).all(axis=1)

    def head_holds(self) -> np.ndarray:
        """``(L, H)``: the head's share of the constant below 1 on every input sequence."""
        return (self.head_constants < 1).all(axis=2)

    def log10_relative(self) -> np.ndarray:
        """``log10`` of :attr:`relative`, ``-inf`` where the tracked residual underflowed to 0."""
        with np.errstate(divide="ignore"):
            return np.log10(self.relative)

    def typical(self) -> np.ndarray:
        """The geometric mean over input sequences of the relative residual, ``(L + 1,)`` (0 kept as 1e-300)."""
        return np.exp(np.log(np.clip(self.relative, 1e-300, None)).mean(axis=0))

    def collapse_rate(self) -> float:
        r"""The slope of :math:`\log(-\log\rho_l)` against layer, :math:`\rho_l` the typical relative
        residual over the input's (:func:`rankcollapse.stats.log_slope`, from layer 1 to the last layer
        above 1e-290): :math:`\log 3 \approx 1.10` for the cubic rate, 0 for a linear one."""
        rho = self.typical() / self.typical()[0]
        last = first_below(rho, 1e-290, default=len(rho))
        ls = np.arange(1, last)
        if ls.size < 2 or not (rho[1:last] < 1).all():
            return float("nan")
        return log_slope(ls, -np.log(rho[1:last]), base=math.e)

    def step_ratios(self) -> np.ndarray:
        r"""The ratios :math:`\log\rho_{l+1}/\log\rho_l` of successive layers, over the layers that
        :meth:`collapse_rate` fits (from layer 1 to the last above 1e-290): 3 for a cube per layer,
        :math:`\rho_{l+1} = \rho_l^3`; above 3 and falling towards it for
        :math:`\rho_{l+1} = K\rho_l^3` with :math:`K < 1`. Empty when fewer than two layers qualify
        or the residual does not fall."""
        rho = self.typical() / self.typical()[0]
        last = first_below(rho, 1e-290, default=len(rho))
        logs = np.log(rho[1:last])
        if logs.size < 2 or not (logs < 0).all():
            return np.empty(0)
        return logs[1:] / logs[:-1]

    def floor_layer(self, level: float = 1e-12):
        """The first layer whose typical relative residual is below ``level`` (``None`` if none)."""
        return first_below(self.typical(), level)


def model_condition(
    model,
    n_seq: int,
    n_tokens: int,
    *,
    rescale_seq: int = 1,
    rtol: float = 1e-2,
    conditions=CONDITIONS,
    entropy_seq: int = 1,
) -> ModelCondition:
    """The :class:`ModelCondition` of ``model`` on :func:`real_inputs` ``(n_seq, n_tokens)``.

    float64 for the pure network (its residual falls far below float32's floor); the real model's
    attention entropy in float32. The rescaling searches (:func:`smallest_shrink`) and entropies
    use the first ``rescale_seq`` (``entropy_seq``) sequences.
    """
    _check_model(model)
    n_seq, n_tokens = check_int("n_seq", n_seq), check_int("n_tokens", n_tokens, minimum=3)
    rescale_seq = check_int("rescale_seq", rescale_seq, maximum=n_seq)
    entropy_seq = check_int("entropy_seq", entropy_seq, maximum=n_seq)
    conditions = tuple(
        _check_condition(c) for c in ((conditions,) if isinstance(conditions, str) else conditions)
    )
    san = pure_attention(model)
    X = real_inputs(model, n_seq, n_tokens)
    cfg = san.config
    with _threads():
        det = _details(san, X)
        beta = theory.beta(san)
        relative = theory.tracked_relative_residual(san, X)
    scale = 4 * cfg.n_heads / math.sqrt(cfg.d_qk)
    out = ModelCondition(
        model.name,
        model.label,
        model.pretrained,
        cfg.n_heads,
        cfg.d_qk,
        beta=beta.numpy(),
        gamma=det["gamma"].numpy(),
        constants=det["constants"].numpy(),
        head_constants=(scale * det["gamma"][:, None, :] * beta[:, :, None]).numpy(),
        floor=(scale * det["beta"] * det["nu"]).numpy(),
        r0=det["residual"][0].numpy(),
        full=_statistic(det, "full").numpy(),
        relative=relative.T.numpy(),
    )
    ids = token_windows(model, entropy_seq, n_tokens)
    _, attn = hidden_states(model, ids, "full", dtype=torch.float32, return_attentions=True)
    h = -(attn * torch.log(attn.clamp_min(1e-30))).sum(-1)  # (L, b, H, n)
    keys = (
        torch.arange(1, n_tokens + 1)
        if model.network_config().causal
        else torch.full((n_tokens,), n_tokens)
    )
    rows = keys > 1  # a decoder's row i sees i + 1 keys: its entropy relative to log(i + 1)
    out.entropy["real"] = (
        (h[..., rows] / torch.log(keys[rows].double())).mean(dim=(1, 2, 3)).numpy()
    )
    out.entropy["pure"] = attention_entropy(san, X[:entropy_seq]).numpy()
    for c in conditions:
        out.shrink[c] = smallest_shrink(san, X[:rescale_seq], c, rtol=rtol)
        # the network shrunk by k attends on X as the original one on X / k (the module's note)
        out.entropy[c] = attention_entropy(san, X[:entropy_seq] / out.shrink[c][0]).numpy()
    return out


@dataclass
class ConditionStudy:
    """:class:`ModelCondition` of every model and the fractions where the condition holds."""

    results: list
    n_seq: int
    n_tokens: int

    def by_name(self, name) -> ModelCondition:
        """The result of the model called ``name`` (a ``KeyError`` naming it if none)."""
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"no model named {name!r} among {[r.name for r in self.results]}")

    def fractions(self) -> dict:
        """Layers, heads and (model, sequence) pairs where each condition holds: ``{key: (held, total)}``."""
        layers = np.concatenate([r.layer_holds() for r in self.results])
        heads = np.concatenate([r.head_holds().ravel() for r in self.results])
        full = np.concatenate([r.full < 1 for r in self.results])
        return {
            "layers": (int(layers.sum()), layers.size),
            "heads": (int(heads.sum()), heads.size),
            "full": (int(full.sum()), full.size),
        }


def condition_study(
    models,
    n_seq: int,
    n_tokens: int,
    *,
    rescale_seq: int = 1,
    entropy_seq: int = 1,
    rtol: float = 1e-2,
    conditions=CONDITIONS,
    progress: bool = False,
) -> ConditionStudy:
    """:func:`model_condition` of every model of ``models`` (:class:`RealModel` s, e.g. from
    :func:`condition_models`), as a :class:`ConditionStudy` (``progress``: a bar on stderr)."""
    models = list(models)
    if not models:
        raise ValueError("models must hold at least one RealModel")
    progress = check_bool("progress", progress)
    it = models
    if progress:
        from tqdm import tqdm

        it = tqdm(models, desc="condition", leave=False)
    res = [
        model_condition(
            m,
            n_seq,
            n_tokens,
            rescale_seq=rescale_seq,
            entropy_seq=entropy_seq,
            rtol=rtol,
            conditions=conditions,
        )
        for m in it
    ]
    return ConditionStudy(res, n_seq, n_tokens)
