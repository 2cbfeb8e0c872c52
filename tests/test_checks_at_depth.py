"""The exercises of the chapter "Skip connections at depth": references pass, plausible wrong
answers fail, and the converter step's reference is transformers' own forward."""

import math

import pytest
import torch

import rankbook as book
import rankcollapse as rc
from rankbook.checks import at_depth

pytest.importorskip("transformers")


def _check(name, answer):
    return book.checks.check(f"at_depth.{name}", answer, quiet=True)


def test_scaled_bound_reference_passes_and_mistakes_fail():
    ex = book.checks.EXERCISES["at_depth.scaled_bound"]
    assert _check("scaled_bound", ex.reference).passed
    for wrong, _ in ex.mistakes:
        result = _check("scaled_bound", wrong)
        assert result.status == "incorrect", wrong.__name__

    def unscaled_k(b0, k, omega, L0, L):  # a reader's own version of the Omega-only slip
        lam = math.sqrt(L0 / L)
        if lam * omega >= 0.5:
            return math.nan
        return float(rc.lower_bound.depth_bound(b0, k, lam * omega, [L])[0])

    result = _check("scaled_bound", unscaled_k)
    assert result.status == "incorrect" and "k is" in result.message


def test_scaled_bound_decays_like_a_quarter_power():
    """What the derivation shows: at large L the scaled bound falls like L^(-1/4)."""
    ref = book.checks.EXERCISES["at_depth.scaled_bound"].reference
    a, b = ref(1.0, 0.2, 2.0, 12, 12 * 4**10), ref(1.0, 0.2, 2.0, 12, 12 * 4**11)
    assert math.isclose(math.log(b / a) / math.log(4), -0.25, abs_tol=1e-3)


def test_gpt2_heads_reference_passes_and_mistakes_fail():
    ex = book.checks.EXERCISES["at_depth.gpt2_heads"]
    assert _check("gpt2_heads", ex.reference).passed
    for wrong, hint in ex.mistakes:
        result = _check("gpt2_heads", wrong)
        assert result.status == "incorrect" and hint[:30] in result.message, wrong.__name__


def test_gpt2_heads_reference_is_transformers_forward():
    """A core layer with the reference's heads (and GPT-2's LayerNorms, biases and MLP) computes
    what transformers' GPT-2 block computes, to float64 rounding."""
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(
        n_embd=24,
        n_head=3,
        n_layer=1,
        n_positions=16,
        vocab_size=11,
        bos_token_id=0,
        eos_token_id=0,
    )
    torch.manual_seed(5)
    model = GPT2Model(cfg).double().eval()
    block = model.h[0]
    for p in block.parameters():
        p.data.add_(0.05 * torch.randn_like(p))
    net = rc.real.from_transformers(model, "gpt2", "gpt2-small-test", torch.float64)
    weights = dict(net.san.layers[0].weights())
    weights.update(at_depth.gpt2_heads(block.attn.c_attn.weight, block.attn.c_proj.weight, 3))
    layer = rc.san.SAN.from_weights(
        net.config.replace(n_layers=1, final_layernorm=False), [weights]
    )
    X = torch.randn(2, 7, 24, dtype=torch.float64)
    with torch.no_grad():
        out = block(X)
        want = out[0] if isinstance(out, tuple) else out
        got = layer(X).hidden_states[-1]
    assert torch.allclose(got, want, rtol=1e-10, atol=1e-12)


def test_predict_pre_ln_is_checked_against_the_measurement():
    want = at_depth.predicted_change()
    assert want in at_depth.CHANGES
    assert [at_depth.change_class(r) for r in (3.0, 2.0, 0.5, 0.4, 1e-3, 1e-4)] == [
        "over 2 times higher",
        "within a factor 2",
        "within a factor 2",
        "2 to 1000 times lower",
        "2 to 1000 times lower",
        "over 1000 times lower",
    ]
    assert _check("predict_pre_ln", want).passed
    wrong = "over 1000 times lower" if want != "over 1000 times lower" else "within a factor 2"
    assert _check("predict_pre_ln", wrong).status == "incorrect"
    assert _check("predict_pre_ln", None).status == "not attempted"


def test_read_deepest_is_computed_and_native_depth_fails():
    assert _check("read_deepest", 96).passed
    result = _check("read_deepest", 12)
    assert result.status == "incorrect" and "own depth" in result.message
    assert _check("read_deepest", None).status == "not attempted"
