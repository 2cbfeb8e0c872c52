"""rc.real.skips: real models' clean attention with skips and without, mask and biases switched.

Pins: with skips the residual is kept and without it is lost (pretrained MiniLM); a model with no
mask is unchanged by mask=False; GPT-2's causal mask is what keeps its attention-alone residual
(at initialisation, a few tokens: with the mask the residual stays far above rounding error, and
without it falls to it, biases on or off); the curves are rc.residual's relative residual of the
ablated network's own hidden states; Network.ablate drops exactly the mask and the biases; bad
inputs are refused with their names.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rankcollapse as rc
from rankcollapse.real import skips as S

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def minilm():
    return rc.real.load("all-MiniLM-L6-v2", True)


@pytest.fixture(scope="module")
def gpt2():
    return rc.real.load("gpt2", False, seed=0)


@pytest.fixture(scope="module")
def both(minilm, gpt2):
    return S.real_skip_residuals([minilm, gpt2], 2, 16)


def test_every_setting_is_measured(both, minilm, gpt2):
    assert both.labels == [minilm.label, gpt2.label]
    assert both.causal == {minilm.label: False, gpt2.label: True}
    for label, L in ((minilm.label, 6), (gpt2.label, 12)):
        for setting in S.SETTINGS:
            c = both.curves[(label,) + setting]
            assert c.shape == (2, L + 1) and np.all(c >= 0)
    assert both.lasts().shape == (2,)


def test_skips_keep_the_residual_and_attention_alone_loses_it(both, minilm):
    assert both.last(minilm.label, skip=True) > 0.1
    for mask in (True, False):
        for bias in (True, False):
            assert both.last(minilm.label, mask=mask, bias=bias) < 1e-12


def test_no_mask_changes_nothing_where_there_is_none(both, minilm):
    for bias in (True, False):
        np.testing.assert_array_equal(
            both.curves[(minilm.label, False, True, bias)],
            both.curves[(minilm.label, False, False, bias)],
        )


def test_the_causal_mask_holds_gpt2_up(both, gpt2):
    with_mask = [both.last(gpt2.label, mask=True, bias=b) for b in (True, False)]
    without = [both.last(gpt2.label, mask=False, bias=b) for b in (True, False)]
    assert min(with_mask) > 1e-6
    assert max(without) < 1e-12
    # with the mask the residual still falls, layer after layer
    assert np.all(np.diff(both.typical(gpt2.label)) < 0)


def test_the_curves_are_the_ablated_networks_relative_residual(both, gpt2):
    net = gpt2.network(torch.float64)
    san = net.ablate("san", "clean", mask=False, bias=False)
    assert not san.config.causal and not san.config.bias and not san.config.skip
    assert san.config.layernorm == "none" and san.config.mlp == 0
    ids = rc.real.token_windows(gpt2, 2, 16)
    states = torch.stack(san(net.embed(ids)).hidden_states)
    expected = rc.residual.relative_residual(states).T.numpy()
    np.testing.assert_allclose(both.curves[(gpt2.label, False, False, False)], expected, rtol=1e-12)
    assert both.last(gpt2.label, mask=False, bias=False) == pytest.approx(
        float(np.exp(np.log(expected[:, -1]).mean())), rel=1e-12
    )


def test_ablate_keeps_the_default_network_and_shares_weights(gpt2):
    net = gpt2.network(torch.float64)
    assert net.ablate("san", "clean") is net.ablate("san", "clean", mask=True, bias=True)
    plain = net.ablate("san", "clean", mask=False)
    assert plain.config.bias and not plain.config.causal
    assert plain.layers[0].W_Q is net.san.layers[0].W_Q


def test_bad_inputs(gpt2):
    with pytest.raises(ValueError, match="models"):
        S.real_skip_residuals([], 1, 8)
    with pytest.raises(TypeError, match="model"):
        S.real_skip_residuals([None], 1, 8)
    with pytest.raises(ValueError, match="n_tokens"):
        S.real_skip_residuals([gpt2], 1, 1)
    with pytest.raises(TypeError, match="mask"):
        gpt2.network(torch.float64).ablate("san", "clean", mask="no")


def test_attention_biases_are_zero_at_initialisation(gpt2):
    """Limits, section 3: at initialisation transformers sets the attention biases to zero, so
    switching them off cannot change a model at initialisation (only MiniLM's are trained)."""
    for name in ("bert-base-cased", "albert-base-v2"):
        m = rc.real.load(name, False, seed=1)
        _assert_zero_biases(m)
    _assert_zero_biases(gpt2)


def _assert_zero_biases(model):
    for block in model.network(torch.float32).san.layers:
        for key in ("b_Q", "b_K", "b_V", "b_O"):
            assert torch.count_nonzero(block.weights()[key]) == 0, (model.name, key)
