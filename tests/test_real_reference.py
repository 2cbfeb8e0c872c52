"""rc.real replicates the numbers of the module it replaced (``rankcollapse.models``), in float64.

``tests/data/real_reference.json`` holds that module's relative-residual curves for every model,
variant and surgery, and its path profile, on two windows of 24 tokens (see the file's
``made_by``). Before the old module was removed, the same comparison ran against it directly:
hidden states agreed to 1e-14 relative, attention matrices to 3e-12, curves to 1e-15.
"""

import json
from pathlib import Path

import pytest
import torch

import rankcollapse as rc

pytest.importorskip("transformers")

REFERENCE = json.loads((Path(__file__).parent / "data" / "real_reference.json").read_text())[
    "values"
]
MODELS = [
    ("bert-base-cased", False),
    ("albert-base-v2", False),
    ("xlnet-base-cased", False),
    ("all-MiniLM-L6-v2", True),
]


@pytest.mark.parametrize("name, pretrained", MODELS)
def test_curves_and_path_profile_equal_the_old_modules(name, pretrained):
    model = rc.real.load(name, pretrained)
    model.position_dtype = torch.float64  # the old module computed XLNet's sinusoids in float64
    ids = rc.real.token_windows(model, 2, 24)
    for variant, surgery in rc.real.ABLATIONS + (("full", "paper"),):
        curve = rc.real.residual_curve(model, ids, variant, surgery)
        want = torch.tensor(REFERENCE[f"{name}|{variant}|{surgery}"], dtype=torch.float64)
        assert curve.shape == want.shape
        assert (curve - want).abs().max() < 1e-12, (variant, surgery)
    _, attn = rc.real.hidden_states(model, ids, "full", return_attentions=True)
    profile = rc.real.path_profile(attn, 5, 0)
    assert (
        profile - torch.tensor(REFERENCE[f"{name}|profile"], dtype=torch.float64)
    ).abs().max() < 1e-12


def test_xlnet_positions_as_transformers_computes_them_differ_only_at_float32_rounding():
    model = rc.real.load("xlnet-base-cased")
    ids = rc.real.token_windows(model, 2, 24)
    exact = REFERENCE["xlnet-base-cased|san+skip|clean"]
    curve = rc.real.residual_curve(
        model, ids, "san+skip", "clean"
    )  # float32 sinusoids (the default)
    diff = (curve - torch.tensor(exact, dtype=torch.float64)).abs().max()
    assert 0 < diff < 1e-5
