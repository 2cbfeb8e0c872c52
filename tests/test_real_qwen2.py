"""rc.real.convert.qwen2: Qwen2's decoder (Llama's layer with biases on q, k and v alone, grouped
heads) converted into the core's SAN equals transformers' Qwen2Model at random initialisation,
every layer, float64 within 1e-10; its biases are where Qwen2 has them and the no-bias variant
removes them."""

import pytest
import torch

import rankcollapse as rc

transformers = pytest.importorskip("transformers")

SMALL = dict(
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_key_value_heads=2,
    num_hidden_layers=3,
    vocab_size=100,
)


@pytest.mark.parametrize(
    "changes",
    [dict(), dict(num_key_value_heads=1), dict(num_key_value_heads=4)],
    ids=["gqa", "mqa", "mha"],
)
def test_every_layer_matches_transformers(changes):
    errors = rc.real.parity("qwen2", {**SMALL, **changes}, seed=0, n_tokens=11)
    assert len(errors) == 4 and max(errors) < 1e-10, errors


def test_a_padded_batch_and_twice_the_depth_match_transformers():
    assert max(rc.real.parity("qwen2", SMALL, seed=1, padded=True)) < 1e-10
    errors = rc.real.parity("qwen2", SMALL, seed=2, depth_factor=2)
    assert len(errors) == 7 and max(errors) < 1e-10, errors


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
