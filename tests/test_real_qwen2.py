"""rc.real.convert.qwen2: Qwen2's decoder (Llama's layer with biases on q, k and v alone, grouped
heads) converted into the core's SAN: its biases are where Qwen2 has them, the no-bias variant
removes them, and sliding-window layers are refused. Its parity with transformers' Qwen2Model
(every layer, float64, 1e-10; grouped, multi-query and multi-head attention) is
tests/test_real_families.py's, for every family."""

import pytest
import torch
from real_by_hand import small

import rankcollapse as rc

transformers = pytest.importorskip("transformers")

SMALL = small("qwen2", 3)


@torch.no_grad()
def test_biases_on_q_k_v_only_and_the_no_bias_variant():
    net = rc.real.build("qwen2", SMALL, seed=0, init="library")
    blk = net.san.layers[0]
    assert net.config.bias_maps == ("q", "k", "v") and blk.b_K.shape == (2, 16)
    assert blk.b_O is None and blk.b_1 is None and blk.b_gate is None
    X = net.embed(torch.randint(0, 100, (9,), generator=torch.Generator().manual_seed(0)))
    with_b, without = net.ablate("san", "clean"), net.ablate("san", "clean", bias=False)
    assert without.layers[0].b_Q is None and without.layers[0].W_Q is blk.W_Q
    assert not torch.allclose(with_b(X).last_hidden_state, without(X).last_hidden_state)
    # without biases Qwen2's layer is Llama's: the same weights under Llama's config
    llama = net.config.replace(bias=False, bias_maps=None)
    bare = [
        {k: v for k, v in b.weights().items() if not k.startswith("b_")} for b in net.san.layers
    ]
    same = rc.san.SAN.from_weights(llama, bare, net.san.final_norm_weights())
    want = net.ablate("full", bias=False)(X).last_hidden_state
    assert torch.equal(same(X).last_hidden_state, want)


def test_sliding_window_layers_are_refused():
    hf = rc.real.transformers_model(
        "qwen2", {**SMALL, "use_sliding_window": True, "sliding_window": 4, "max_window_layers": 0}
    )
    with pytest.raises(ValueError, match="sliding"):
        rc.real.from_transformers(hf, "qwen2", "t")
