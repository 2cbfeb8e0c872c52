"""Real models' attention with skip connections and without, and what else holds the residual up.

The clean ``san+skip`` ablation (attention with skip connections, nothing else) and the clean
``san`` ablation (attention alone) of :mod:`rankcollapse.real.ablation`, run on the book's text
in float64, with the model's own attention mask (GPT-2's causal mask) and biases switched on or
off one at a time: a causal mask keeps the first token's row of every attention matrix equal to
``e_1``, so a decoder's tokens are not averaged as an encoder's are (Wu et al. 2024 measure how
masked attention collapses), and the query/key/value/output biases change which attention the
network computes. Book: chapter "What the theorem does not say", section 3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import residual
from .._validate import check_int
from ..stats import geometric_mean
from .model import check_model
from .text import token_windows
from .threads import torch_threads

__all__ = ["SETTINGS", "RealSkip", "real_skip_residuals"]

#: ``(skip, mask, bias)`` of every run: attention with skips (the model's own mask and biases),
#: and attention alone with the mask and the biases each on or off.
SETTINGS = (
    (True, True, True),
    (False, True, True),
    (False, True, False),
    (False, False, True),
    (False, False, False),
)


@dataclass
class RealSkip:
    """Relative residual curves of real models' clean attention ablations.

    ``curves``: ``{(label, skip, mask, bias): array (n_seq, L + 1)}`` for every model and every
    setting of :data:`SETTINGS` (``mask``: the model's own causal mask, where it has one;
    ``bias``: the query, key, value and output biases); ``causal``: ``{label: bool}``, whether
    the model's attention has a causal mask (for the others ``mask`` changes nothing).
    ``labels``: the models' labels in order.
    """

    labels: list
    causal: dict
    curves: dict

    def typical(
        self, label, skip: bool = False, mask: bool = True, bias: bool = True
    ) -> np.ndarray:
        """The geometric mean over sequences of one curve, ``(L + 1,)``."""
        return geometric_mean(self.curves[(label, skip, mask, bias)])

    def last(self, label, skip: bool = False, mask: bool = True, bias: bool = True) -> float:
        """The geometric mean over sequences of the last layer's relative residual."""
        return float(self.typical(label, skip, mask, bias)[-1])

    def lasts(self, skip: bool = False, mask: bool = True, bias: bool = True) -> np.ndarray:
        """:meth:`last` of every model, in the order of :attr:`labels`, ``(k,)``."""
        return np.array([self.last(lb, skip, mask, bias) for lb in self.labels])


@torch.no_grad()
def real_skip_residuals(models, n_seq: int, n_tokens: int, *, batch_size: int = 8) -> RealSkip:
    """Every setting of :data:`SETTINGS` for each real model of ``models``
    (:class:`~rankcollapse.real.model.RealModel` s) on :func:`token_windows` ``(n_seq, n_tokens)``
    of the book's text, in float64: the relative residual (mean centre, composite norm) of every
    layer. A :class:`RealSkip`."""
    check_int("n_seq", n_seq), check_int("n_tokens", n_tokens)
    models = [check_model(m) for m in models]
    if not models:
        raise ValueError("models must hold at least one RealModel")
    n_seq, n_tokens = check_int("n_seq", n_seq), check_int("n_tokens", n_tokens, minimum=2)
    batch_size = check_int("batch_size", batch_size)
    curves, causal = {}, {}
    for m in models:
        net = m.network(torch.float64)
        causal[m.label] = bool(net.config.causal)
        ids = token_windows(m, n_seq, n_tokens)
        for skip, mask, bias in SETTINGS:
            san = net.ablate("san+skip" if skip else "san", "clean", mask=mask, bias=bias)
            out = []
            with torch_threads():
                for s in range(0, ids.shape[0], batch_size):
                    states = torch.stack(san(net.embed(ids[s : s + batch_size])).hidden_states)
                    out.append(residual.relative_residual(states))  # (L + 1, b)
            curves[(m.label, skip, mask, bias)] = torch.cat(out, dim=1).T.double().numpy()
    return RealSkip([m.label for m in models], causal, curves)
