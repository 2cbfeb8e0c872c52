"""rc.real: real transformers converted into the core's SAN match transformers, every layer.

Parity: for every model in the registry (MiniLM pretrained, the others at initialisation with a
seed), the converted network's hidden states equal transformers' own on sentences that are not in
the book's corpus (float64 within 1e-10, float32 within 1e-5, relative to each layer's largest
entry), on a padded batch of mixed lengths. Ablations: each (variant, surgery) equals the same
surgery applied to the transformers modules (sub-modules swapped or their forward replaced, as
the official code did), run through transformers' own forward.
"""

import copy

import pytest
import torch

import rankbook as book
import rankcollapse as rc

transformers = pytest.importorskip("transformers")

# Sentences written for these tests (not in rankcollapse/data), of different lengths.
SENTENCES = [
    "A quiet harbour town woke to the sound of gulls and distant engines.",
    "Mathematicians argue about elegance more than you might expect.",
    "Rain.",
    "The old bridge, rebuilt twice after floods, still carries carts across the river each "
    "market day.",
]
REGISTRY = [
    ("all-MiniLM-L6-v2", True),
    ("bert-base-cased", False),
    ("albert-base-v2", False),
    ("xlnet-base-cased", False),
    ("gpt2", False),
]


def rel_err(got, want, mask=None):
    """Largest entry error over each layer's largest entry (padded positions not compared)."""
    if mask is not None:
        keep = mask.bool()[None, :, :, None]
        got, want = got * keep, want * keep
    scale = want.abs().amax(dim=(-1, -2, -3), keepdim=True).clamp_min(1e-30)
    return ((got - want).abs() / scale).max().item()


def transformers_states(model, ids, mask, dtype):
    hf = copy.deepcopy(model.hf).to(dtype)
    with torch.no_grad():
        return torch.stack(hf(ids, attention_mask=mask, output_hidden_states=True).hidden_states)


@pytest.fixture(scope="module")
def registry_models():
    return {name: rc.real.load(name, pretrained, seed=1) for name, pretrained in REGISTRY}


def test_registry_is_what_the_parity_test_covers():
    assert {name for name, _ in REGISTRY} == set(rc.real.MODELS)


@pytest.mark.parametrize("name", [name for name, _ in REGISTRY])
def test_converted_network_matches_transformers_on_a_padded_batch(registry_models, name):
    model = registry_models[name]
    ids, mask = rc.real.encode(model, SENTENCES)
    assert mask is not None and not bool(mask.all())  # the batch is padded
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):
        got = rc.real.hidden_states(model, SENTENCES, dtype=dtype)
        want = transformers_states(model, ids, mask, dtype)
        assert (
            got.shape
            == want.shape
            == (model.n_layers + 1, len(SENTENCES), ids.shape[1], model.d_model)
        )
        assert got.dtype == dtype
        assert rel_err(got, want, mask) < tol, (name, dtype)


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "xlnet-base-cased", "gpt2"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_padded_batch_equals_each_sentence_alone(registry_models, name, dtype):
    """Issue 11: a padded batch of mixed lengths matches the unpadded sentences one by one."""
    model = registry_models[name]
    batch = rc.real.hidden_states(model, SENTENCES, dtype=dtype)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    for i, text in enumerate(SENTENCES):
        alone = rc.real.hidden_states(model, text, dtype=dtype)
        n = alone.shape[2]
        assert rel_err(batch[:, i : i + 1, :n], alone) < tol


def test_minilm_float64_padded_batch_no_longer_raises(registry_models):
    """Issue 11: the old key mask put float64's minimum into a float tensor and raised."""
    states = rc.real.hidden_states(registry_models["all-MiniLM-L6-v2"], ["a", "a b c"])
    assert states.dtype == torch.float64 and torch.isfinite(states).all()


def test_inputs_over_the_limit_are_refused_or_truncated_with_a_warning(registry_models):
    model = registry_models["all-MiniLM-L6-v2"]
    long_text = " ".join(["harbour"] * 600)
    with pytest.raises(ValueError, match="limit of 512"):
        rc.real.hidden_states(model, long_text)
    with pytest.raises(ValueError, match="at most 512 tokens"):
        rc.real.hidden_states(model, torch.full((1, 513), 1000))
    with pytest.warns(UserWarning, match="cut to the model's limit of 512"):
        states = rc.real.hidden_states(model, long_text, dtype=torch.float32, too_long="truncate")
    assert states.shape[2] == 512
    with pytest.raises(ValueError, match="too_long"):
        rc.real.hidden_states(model, "a", too_long="silently")


def test_bad_token_ids_and_all_padding_rows_get_clear_errors(registry_models):
    model = registry_models["all-MiniLM-L6-v2"]
    with pytest.raises(
        ValueError, match=r"texts_or_ids: token ids must be in \[0, 30522\).*-1 at index \(0, 1\)"
    ):
        rc.real.hidden_states(model, torch.tensor([[101, -1, 102]]))
    with pytest.raises(ValueError, match="30522"):
        rc.real.hidden_states(model, torch.tensor([101, 30522, 102]))
    ids = torch.tensor([[101, 1000, 102], [101, 1001, 102]])
    with pytest.raises(ValueError, match=r"no real token \(all padding\) at index \(1,\)"):
        rc.real.hidden_states(model, ids, attention_mask=torch.tensor([[1, 1, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match="all padding"):
        rc.real.relative_residuals(torch.zeros(2, 2, 3, 4), torch.tensor([[1, 1, 1], [0, 0, 0]]))


def test_network_ablations_share_the_weights_and_follow_the_table(registry_models):
    net = registry_models["bert-base-cased"].network(torch.float64)
    full = net.san
    for variant, surgery in rc.real.ABLATIONS:
        san = net.ablate(variant, surgery)
        assert san.layers[0].W_Q is full.layers[0].W_Q  # the same parameter, not a copy
        assert net.ablate(variant, surgery) is san
    cfg = {key: net.ablate(*key).config for key in rc.real.ABLATIONS}
    assert (
        cfg[("san", "clean")].skip,
        cfg[("san", "clean")].mlp,
        cfg[("san", "clean")].layernorm,
    ) == (False, 0, "none")
    assert (cfg[("san", "paper")].layernorm, cfg[("san", "paper")].mlp) == (
        "post",
        0,
    )  # keeps its LayerNorm
    assert (cfg[("san+mlp", "paper")].skip, cfg[("san+mlp", "paper")].skip_mlp) == (
        False,
        True,
    )  # keeps the MLP's skip
    assert (cfg[("san+mlp", "clean")].skip_mlp, cfg[("san+skip", "clean")].skip) == (False, True)
    albert = registry_models["albert-base-v2"].network(torch.float64)
    paper_san = albert.ablate("san", "paper")
    assert (
        paper_san.config.mlp == 768 and paper_san.config.shared
    )  # ALBERT: identity maps kept an MLP
    assert torch.equal(paper_san.layers[0].W_1, torch.eye(768, dtype=torch.float64))


@pytest.mark.slow
def test_the_core_applies_to_real_weights(registry_models):
    """beta, the path decomposition and the Lipschitz bound read a converted network as they are."""
    model = registry_models["all-MiniLM-L6-v2"]
    net = model.network(torch.float64)
    X = net.embed(rc.real.token_windows(model, 1, 12))[0]
    san = net.ablate("san", "clean")
    assert rc.theory.beta(san).shape == (6, 12)
    skip = net.ablate("san+skip", "clean")
    terms, constant = rc.paths.decompose_by_length(skip, X, with_constant=True)
    assert torch.allclose(terms.sum(0) + constant, skip(X).last_hidden_state, atol=1e-10)
    upper = rc.lipschitz.lipschitz_upper_bound(net.ablate("san+mlp", "clean"))
    assert upper.shape == (6,) and torch.all(upper > 0)


def test_token_windows_and_corpus():
    ids = rc.real.token_windows(None, 32, 128)
    assert ids.shape == (32, 128) and ids.dtype == torch.long
    assert (ids[:, 0] == 101).all() and (ids[:, -1] == 102).all()
    assert len({tuple(r.tolist()) for r in ids}) == 32  # all different
    assert rc.real.corpus() and all(len(doc.split()) > 300 for doc in rc.real.corpus())
    assert not any(
        s.split()[0] in " ".join(rc.real.corpus()) and s in " ".join(rc.real.corpus())
        for s in SENTENCES
    )
    mapped = rc.real.text.map_ids(list(range(28990, 30522)), 28996)
    assert min(mapped) >= 1 and max(mapped) < 28996
    with pytest.raises(ValueError, match="n_seq"):
        rc.real.token_windows(None, 10_000, 128)


def test_gpt2_windows_are_unframed_and_in_its_vocabulary(registry_models):
    ids = rc.real.token_windows(registry_models["gpt2"], 3, 16)
    assert ids.shape == (3, 16) and int(ids.max()) < 50257 and not (ids[:, 0] == 101).all()


def test_init_models_are_the_published_shapes_and_seeded():
    state = torch.random.get_rng_state()
    albert = rc.real.load("albert-base-v2", seed=3)
    assert torch.equal(torch.random.get_rng_state(), state), (
        "load must not touch the global generator"
    )
    again, other = rc.real.load("albert-base-v2", seed=3), rc.real.load("albert-base-v2", seed=4)
    w = lambda m: m.network(torch.float32).san.layers[0].W_Q  # noqa: E731
    assert torch.equal(w(albert), w(again)) and not torch.equal(w(albert), w(other))
    assert (albert.n_layers, albert.n_heads, albert.d_model, albert.vocab_size) == (
        12,
        12,
        768,
        30000,
    )
    assert not albert.pretrained and albert.label == "albert-base-v2 (at initialisation)"


def test_bad_arguments(registry_models):
    model = registry_models["all-MiniLM-L6-v2"]
    ids = rc.real.token_windows(model, 1, 8)
    with pytest.raises(ValueError, match="variant"):
        rc.real.hidden_states(model, ids, "mlp")
    with pytest.raises(ValueError, match="surgery"):
        rc.real.hidden_states(model, ids, "san", "official")
    with pytest.raises(TypeError, match="model"):
        rc.real.hidden_states(model.hf, ids)
    with pytest.raises(TypeError, match="texts_or_ids"):
        rc.real.hidden_states(model, ids.float())
    with pytest.raises(ValueError, match="name"):
        rc.real.load("gpt-3")
    with pytest.raises(TypeError, match="pretrained"):
        rc.real.load("gpt2", pretrained="yes")


def test_threads_from_the_environment(monkeypatch):
    from rankcollapse._env import threads_from_env
    from rankcollapse.real import threads

    monkeypatch.delenv("RANKCOLLAPSE_THREADS", raising=False)
    assert threads_from_env() is None
    monkeypatch.setenv("RANKCOLLAPSE_THREADS", "1")
    assert threads_from_env() == 1
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("RANKCOLLAPSE_THREADS", bad)
        with pytest.raises(ValueError, match="RANKCOLLAPSE_THREADS must be a positive integer"):
            threads_from_env()
    before = torch.get_num_threads()
    with threads.torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    monkeypatch.setattr(
        threads, "THREADS", None
    )  # as read from an environment without the variable
    with threads.torch_threads(None):  # None: leave torch's count as it is
        assert torch.get_num_threads() == before


def test_path_products_order_and_residuals():
    gen = torch.Generator().manual_seed(0)
    A = torch.softmax(torch.randn(3, 1, 2, 5, 5, generator=gen, dtype=torch.float64), dim=-1)
    paths = [[(0, 1), (2, 0)]]
    right = rc.real.path_products(A, paths)[0]
    assert torch.allclose(right, A[2, 0, 0] @ A[0, 0, 1])
    rev = rc.real.path_products(A, paths, order="reversed")[0]
    assert torch.allclose(rev, A[0, 0, 1] @ A[2, 0, 0])
    assert torch.allclose(right.sum(-1), torch.ones(5, dtype=torch.float64))
    ones = torch.ones(1, 5, 5, dtype=torch.float64) / 5
    assert rc.real.path_residuals(ones).item() == pytest.approx(0, abs=1e-15)
    assert rc.real.path_residuals(ones, against="rank1").item() == pytest.approx(0, abs=1e-12)
    sampled = rc.real.sample_paths(12, 12, 4, 10, seed=1)
    assert len(sampled) == 10 and all(
        len(p) == 4 and [l for l, _ in p] == sorted({l for l, _ in p}) for p in sampled
    )
    assert sampled == rc.real.sample_paths(12, 12, 4, 10, seed=1)
    # the cap on n_paths is checked before drawing: the draws are those of before it
    assert rc.real.sample_paths(6, 4, 3, 3, seed=2) == [
        [(0, 2), (4, 1), (5, 2)],
        [(1, 0), (2, 1), (4, 3)],
        [(2, 3), (3, 2), (5, 0)],
    ]
    prof = rc.real.path_profile(A, n_paths=4, seed=0)
    assert prof.shape == (4, 3) and (prof[:, 0] > 0).all()


def test_presets_read_the_registry_without_transformers():
    import subprocess
    import sys

    code = (
        "import sys, rankbook.presets as p\n"
        "print([(a.name, a.n_layers, a.n_heads) for a in p.ARCHITECTURES[:3]],\n"
        "      'transformers' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[('BERT-base', 12, 12), ('ALBERT-base', 12, 12), ('GPT-2 small', 12, 12)] False"
    for a in book.presets.ARCHITECTURES[:3]:
        s = next(s for s in rc.real.MODELS.values() if s.architecture == a.name)
        assert (s.n_layers, s.n_heads) == (a.n_layers, a.n_heads)
