"""The collapse condition on every real model: per-layer, per-head and per-input constants, the
rescaling that makes it hold, and attention entropies, as result objects (chapter "What the
theorem does not say", section 1). The condition itself is computed by :mod:`.theorem`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ... import theory
from ..._validate import check_bool, check_int
from ...stats import first_below, log_slope
from ..measure import hidden_states
from ..model import check_model
from ..text import token_windows
from ..threads import torch_threads
from .theorem import (
    CONDITIONS,
    attention_entropy,
    check_condition,
    condition_details,
    condition_statistic,
    pure_attention,
    real_inputs,
    smallest_shrink,
)

__all__ = ["ModelCondition", "model_condition", "ConditionStudy", "condition_study"]


@dataclass
class ModelCondition:
    r"""The condition on one real model, on real inputs (section 1 of the chapter).

    Arrays (numpy, float64): ``beta`` ``(L, H)`` (per head, :func:`rankcollapse.theory.beta`);
    ``gamma``, ``constants`` ``(L, b)`` (per layer and input sequence, the book's ``gamma`` and
    :math:`c_l`); ``head_constants`` ``(L, H, b)``: :math:`4\gamma_l\beta_{l,h}H/\sqrt{d_{qk}}`,
    each head's share (the layer's constant is its largest head's); ``floor`` ``(L,)``: the
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
        """The geometric mean over input sequences of the relative residual, ``(L + 1,)`` (0 kept
        as 1e-300)."""
        return np.exp(np.log(np.clip(self.relative, 1e-300, None)).mean(axis=0))

    def collapse_rate(self) -> float:
        r"""The slope of :math:`\log(-\log\rho_l)` against layer, :math:`\rho_l` the typical
        relative residual over the input's (:func:`rankcollapse.stats.log_slope`, from layer 1 to
        the last layer above 1e-290): :math:`\log 3 \approx 1.10` for the cubic rate, 0 for a linear
        one."""
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
    check_model(model)
    n_seq, n_tokens = check_int("n_seq", n_seq), check_int("n_tokens", n_tokens, minimum=3)
    rescale_seq = check_int("rescale_seq", rescale_seq, maximum=n_seq)
    entropy_seq = check_int("entropy_seq", entropy_seq, maximum=n_seq)
    conditions = tuple(
        check_condition(c) for c in ((conditions,) if isinstance(conditions, str) else conditions)
    )
    san = pure_attention(model)
    X = real_inputs(model, n_seq, n_tokens)
    cfg = san.config
    with torch_threads():
        det = condition_details(san, X)
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
        full=condition_statistic(det, "full").numpy(),
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
        """Layers, heads and (model, sequence) pairs where each condition holds:
        ``{key: (held, total)}``."""
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
