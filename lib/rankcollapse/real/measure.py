"""The paper's measurement on real transformers: every layer's relative residual, per variant.

The paper's main figure (Dong et al. 2021, Section 3, Figure 2) plots the relative residual of
each layer's token matrix of BERT, ALBERT and XLNet, for the full model and three ablations. Here
each model runs as the core's :class:`~rankcollapse.san.SAN` (:mod:`rankcollapse.real.convert`),
so a curve is :func:`rankcollapse.residual.relative_residual` of the SAN's hidden states.
Shapes: token ids ``(b, n)``; hidden states ``(L + 1, b, n, d)`` with entry 0 the input of the
first layer; attention matrices ``(L, b, H, n, n)``; curves ``(b, L + 1)``.
"""

from __future__ import annotations

import torch

from .. import residual
from .._env import threads_from_env, torch_threads
from .._validate import check_choice, check_int
from .convert import ablation_config
from .hub import RealModel
from .registry import ABLATIONS
from .text import encode, token_windows

__all__ = ["THREADS", "hidden_states", "relative_residuals", "residual_curve", "residual_curves"]


THREADS = threads_from_env()  # torch threads for this module's heavy loops (see _threads)


def _threads(n=None):
    """``torch_threads(n)`` (:func:`rankcollapse._env.torch_threads`), ``n`` :data:`THREADS` by
    default: the block runs on that many threads, the previous count restored afterwards.

    By default (:data:`THREADS` is ``None``) torch's own thread count is used, one per core: on an
    idle 2-core machine the chapter's forward passes run 1.8 times faster on two threads than on
    one. Where other processes compete for the cores (a shared machine, tests run in parallel),
    OpenMP threads spin waiting for each other and one thread was measured 3.5 times faster than
    two: set ``RANKCOLLAPSE_THREADS=1`` in the environment, or ``rc.real.measure.THREADS = 1``.
    """
    return torch_threads(THREADS if n is None else n)


def _check_model(model) -> RealModel:
    if not isinstance(model, RealModel):
        raise TypeError(
            f"model must be a rankcollapse.real.RealModel (from rc.real.load), got {type(model).__name__}"
        )
    return model


def _inputs(model, texts_or_ids, attention_mask, too_long):
    ids, mask = encode(model, texts_or_ids, too_long=too_long, limit=model.max_tokens)
    if attention_mask is not None:
        attention_mask = torch.as_tensor(attention_mask)
        if attention_mask.shape != ids.shape:
            raise ValueError(
                f"attention_mask must have the shape of the ids {tuple(ids.shape)}, "
                f"got {tuple(attention_mask.shape)}"
            )
        mask = attention_mask
    return ids, mask


@torch.no_grad()
def hidden_states(
    model,
    texts_or_ids,
    variant: str = "full",
    surgery: str = "clean",
    *,
    dtype: torch.dtype = torch.float64,
    attention_mask=None,
    batch_size: int = 8,
    return_attentions: bool = False,
    progress: bool = False,
    too_long: str = "error",
):
    """Every layer's token matrix of ``model`` run as ``variant`` under ``surgery``.

    ``model``: a :class:`~rankcollapse.real.hub.RealModel` (from :func:`rankcollapse.real.load`).
    ``texts_or_ids``: a string, a list of strings (tokenised with the model's vocabulary, padded
    and masked) or token ids ``(n,)`` / ``(b, n)``. ``variant``/``surgery``: see
    :mod:`rankcollapse.real.convert` (``"paper"``: what the official code computed; ``"clean"``:
    the theorem's model). ``dtype``: the arithmetic (``torch.float64`` shows the collapse's tail,
    which ``float32`` floors near ``1e-7``). ``attention_mask``: ``(b, n)``, 1 on real tokens;
    padded keys are never attended to, and each sequence's real tokens come out as they would
    alone. ``too_long``: ``"error"`` or ``"truncate"`` (with a warning) for inputs longer than
    the model's position table. Sequences run ``batch_size`` at a time (``progress=True``: a bar).

    Returns the hidden states ``(L + 1, b, n, d)`` (entry 0 is the first layer's input: the
    embeddings, after ALBERT's projection), or with ``return_attentions`` a pair
    ``(states, attentions)`` with attentions ``(L, b, H, n, n)``.
    """
    _check_model(model)
    ablation_config(model.network_config(), variant, surgery)  # checks variant and surgery first
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    batch_size = check_int("batch_size", batch_size)
    ids, mask = _inputs(model, texts_or_ids, attention_mask, too_long)
    net = model.network(dtype)
    san = net.ablate(variant, surgery)
    if mask is not None:
        mask = san.check_key_mask(mask, ids[..., None])
    starts = range(0, ids.shape[0], batch_size)
    if progress:
        from tqdm import tqdm  # plain bar on stderr: never part of a notebook's compared output

        starts = tqdm(starts, desc=f"{model.name} {variant} ({surgery})", leave=False)
    states, attns = [], []
    with _threads():
        for s in starts:
            m = None if mask is None else mask[s : s + batch_size]
            out = san(net.embed(ids[s : s + batch_size]), key_mask=m)
            states.append(torch.stack(out.hidden_states))
            if return_attentions:
                attns.append(torch.stack(out.attentions))
    states = torch.cat(states, dim=1)
    return (states, torch.cat(attns, dim=1)) if return_attentions else states


def relative_residuals(
    states, attention_mask=None, *, center: str = "mean", norm: str = "l1inf"
) -> torch.Tensor:
    """The relative residual ``||res(X_l)|| / ||X_l||`` of every layer and sequence, shape ``(L+1, b)``.

    ``states``: ``(L+1, b, n, d)`` from :func:`hidden_states`. With ``attention_mask`` ``(b, n)``
    only the real tokens of each sequence count (padding rows are dropped before centring).
    ``center``/``norm`` as :func:`rankcollapse.residual.relative_residual` (the paper plots the
    mean centre in the composite norm; ``center=rc.centering.optimal_center`` solves a linear programme per matrix).
    """
    if not isinstance(states, torch.Tensor) or states.ndim != 4:
        raise ValueError(
            f"states must be a tensor of shape (L+1, b, n, d), got {getattr(states, 'shape', type(states))}"
        )
    if attention_mask is None:
        return residual.relative_residual(states, norm=norm, center=center)
    mask = torch.as_tensor(attention_mask).bool()
    if mask.shape != states.shape[1:3]:
        raise ValueError(
            f"attention_mask must have shape (b, n) = {tuple(states.shape[1:3])}, got {tuple(mask.shape)}"
        )
    if not mask.any(dim=1).all():
        raise ValueError(
            f"attention_mask has a sequence with no real token (all padding) at index "
            f"{int((~mask.any(dim=1)).nonzero()[0])}"
        )
    cols = [
        residual.relative_residual(states[:, i][:, mask[i]], norm=norm, center=center)
        for i in range(states.shape[1])
    ]
    return torch.stack(cols, dim=1)


def residual_curve(
    model,
    ids,
    variant: str = "full",
    surgery: str = "clean",
    *,
    dtype: torch.dtype = torch.float64,
    batch_size: int = 8,
    center: str = "mean",
    attention_mask=None,
) -> torch.Tensor:
    """Relative residual of every layer of ``model`` on every sequence, shape ``(b, L + 1)``.

    :func:`hidden_states` then :func:`relative_residuals`, one batch at a time so that the
    hidden states of all sequences are never held at once (the paper's Figure 2, one curve per
    sequence; the composite norm, mean-centred by default as the paper plots it).
    """
    _check_model(model)
    ids, mask = _inputs(model, ids, attention_mask, "error")
    batch_size = check_int("batch_size", batch_size)
    out = []
    for s in range(0, ids.shape[0], batch_size):
        m = None if mask is None else mask[s : s + batch_size]
        states = hidden_states(
            model, ids[s : s + batch_size], variant, surgery, dtype=dtype, attention_mask=m
        )
        with _threads():
            out.append(relative_residuals(states, m, center=center))
    return torch.cat(out, dim=1).T.double()


def residual_curves(
    models,
    n_seq: int = 32,
    n_tokens: int = 128,
    *,
    ablations=ABLATIONS,
    dtype=torch.float64,
    batch_size: int = 8,
    progress: bool = True,
) -> dict:
    """:func:`residual_curve` of every model in ``models`` for every ``(variant, surgery)`` pair.

    ``models``: :class:`~rankcollapse.real.hub.RealModel` s; each reads :func:`token_windows`
    ``(n_seq, n_tokens)`` in its own vocabulary. ``dtype``: one dtype, a function ``variant ->
    dtype``, or ``"auto"``: float64 for ``san`` and ``san+mlp``, whose residuals fall to rounding
    error and whose tail float32 would floor near ``1e-7``, float32 for ``full`` and ``san+skip``,
    which stay of order one (half the time). Returns ``{(model.label, variant, surgery): array
    (n_seq, L + 1)}`` (numpy, float64). ``progress`` shows a bar on stderr.
    """
    check_int("n_seq", n_seq), check_int("n_tokens", n_tokens)
    if isinstance(dtype, str):
        check_choice("dtype", dtype, ("auto",))

    def dtype_of(v):
        if isinstance(dtype, str):
            return torch.float64 if v in ("san", "san+mlp") else torch.float32
        return dtype(v) if callable(dtype) else dtype

    order = [(i, m, v, s) for i, m in enumerate(models) for v, s in ablations]
    # each model's float32 runs first, then its float64 ones: the network is converted once per dtype
    jobs = [
        job[1:]
        for job in sorted(order, key=lambda job: (job[0], dtype_of(job[2]) == torch.float64))
    ]
    if progress:
        from tqdm import tqdm

        jobs = tqdm(jobs, desc="residual curves")
    ids, out = {}, {}
    for m, v, s in jobs:
        if m.label not in ids:
            ids[m.label] = token_windows(m, n_seq, n_tokens)
        out[(m.label, v, s)] = residual_curve(
            m, ids[m.label], v, s, dtype=dtype_of(v), batch_size=batch_size
        ).numpy()
    return {(m.label, v, s): out[(m.label, v, s)] for _, m, v, s in order}
