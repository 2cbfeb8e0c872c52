"""What the library refuses: a table of bad calls and what each must give.

Every row is ``(call, expected)``: ``call`` takes no argument, ``expected`` is ``Raises(type,
words)`` (a ``TypeError``/``ValueError`` whose message contains each of ``words``, such as the
argument's name) or ``Returns(predicate, what)`` (a documented value). Each call runs in a
thread with a 10 s limit and may not raise the process's peak memory by more than 2 GB: huge
inputs must fail by validation, before any allocation. Add rows freely; a row for a bug that
another module owns is marked ``xfail(strict=True)`` with the owner in the reason, and a row
that would allocate or hang before its fix is not run (``run=False``).

Covers the core (``residual``, ``san``, ``paths``, ``theory``) and ``centering``,
``layernorm``, ``stats``, ``checks``.
"""

from __future__ import annotations

import importlib
import json
import math
import resource
import threading
import time
import types
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import rankbook as book
import rankcollapse as rc
from booktools import claims

LIMIT_S = 10.0
LIMIT_BYTES = 2 * 2**30


@dataclass
class Raises:
    type: type
    words: tuple = ()

    def __init__(self, type_, *words):
        self.type, self.words = type_, words


@dataclass
class Returns:
    predicate: object
    what: str


# --------------------------------------------------------------------------- shared inputs

_g = torch.Generator().manual_seed(0)
X = torch.randn(3, 4, dtype=torch.float64, generator=_g)
CFG = rc.san.SANConfig(n_layers=2, n_heads=2, d_model=4)
PURE = rc.san.SAN(CFG, seed=0)
SKIP = rc.san.SAN(CFG.replace(skip=True), seed=0)
MLP = rc.san.SAN(CFG.replace(mlp=8), seed=0)
POST = rc.san.SAN(CFG.replace(layernorm="post"), seed=0)
BIAS = rc.san.SAN(CFG.replace(bias=True), seed=0)
DEPTH0 = rc.san.SAN(CFG.replace(n_layers=0), seed=0)
DEPTH0_POST = rc.san.SAN(CFG.replace(n_layers=0, layernorm="post"), seed=0)
ZERO = rc.san.SAN(CFG.replace(init_scale=0.0), seed=0)  # output exactly zero
_SORT = rc.toy.ToyTask(
    "sorting",
    n_layers=1,
    n_heads=1,
    d_model=4,
    seq_len=3,
    n_train=4,
    n_eval=2,
    epochs=2,
    batch=2,
    lr=1e-3,
    vocab=3,
)
_CIRCLE = rc.toy.ToyTask("circle", 1, 2, 8, 2, 20, 1, 1, 5, 1e-3, variant="skip")
_TOY_X = torch.tensor([[0, 1, 2], [2, 1, 0]])
_TOY_Y = torch.sort(_TOY_X, -1).values
_TOY_MODEL = rc.toy.ToyModel(rc.toy.toy_config(_SORT, rc.toy.task_data(_SORT, 0)), seed=0)
NAN = torch.tensor([[1.0, float("nan"), 0.0, 0.0]] * 3, dtype=torch.float64)
INF = torch.tensor([[1.0, float("inf"), 0.0, 0.0]] * 3, dtype=torch.float64)
EMPTY = torch.zeros(0, 4, dtype=torch.float64)
WIDE = torch.randn(3, 5, dtype=torch.float64, generator=_g)
COMPLEX = torch.zeros(3, 4, dtype=torch.complex128)
BOOLS = torch.ones(3, 4, dtype=torch.bool)
HUGE_SEED = 2**70
NANF = float("nan")


def zero_tensor_like(shape):
    return lambda v: isinstance(v, torch.Tensor) and v.shape == shape and bool((v == 0).all())


def finite(v):
    if isinstance(v, dict):
        return all(finite(x) for x in v.values())
    if isinstance(v, torch.Tensor):
        return bool(torch.isfinite(v).all())
    return math.isfinite(v)


R = rc.residual
P = rc.paths
T = rc.theory
RC = rc.real.condition
RCV = rc.real.convert
LN = rc.layernorm
S = rc.stats
C = book.checks
SAN, SANConfig = rc.san.SAN, rc.san.SANConfig
LG, LM = rc.later.gradients, rc.later.masks


ROWS = [
    # ------------------------------------------------------------------ residual
    (
        "through_depth one tensor",
        lambda: R.through_depth(torch.ones(3, 2)),
        Raises(TypeError, "hidden_states", "list"),
    ),
    (
        "through_depth quantity",
        lambda: R.through_depth([torch.ones(3, 2)], "rank"),
        Raises(ValueError, "quantity", "residual"),
    ),
    ("norm_1 list", lambda: R.norm_1([[1.0, 2.0]]), Raises(TypeError, "X", "torch.Tensor")),
    ("norm_inf 1-D", lambda: R.norm_inf(torch.ones(3)), Raises(ValueError, "X", "shape")),
    ("composite_norm empty", lambda: R.composite_norm(EMPTY), Raises(ValueError, "X", "empty")),
    ("composite_norm NaN", lambda: R.composite_norm(NAN), Raises(ValueError, "X", "NaN")),
    (
        "composite_norm inf",
        lambda: R.composite_norm(INF),
        Raises(ValueError, "X", "NaN or infinite"),
    ),
    ("composite_norm complex", lambda: R.composite_norm(COMPLEX), Raises(TypeError, "X", "real")),
    ("composite_norm bool tensor", lambda: R.composite_norm(BOOLS), Raises(TypeError, "X", "real")),
    ("composite_norm string", lambda: R.composite_norm("X"), Raises(TypeError, "X")),
    ("composite_norm None", lambda: R.composite_norm(None), Raises(TypeError, "X")),
    (
        "matrix_norm bad norm",
        lambda: R.matrix_norm(X, "l2"),
        Raises(ValueError, "norm", "'fro'", "'l1inf'"),
    ),
    ("matrix_norm norm None", lambda: R.matrix_norm(X, None), Raises(TypeError, "norm")),
    ("res bad center", lambda: R.res(X, center="median"), Raises(ValueError, "center", "'mean'")),
    (
        "res center 'optimal'",
        lambda: R.res(X, center="optimal"),
        Raises(ValueError, "center", "rc.centering.optimal_center"),
    ),
    ("res center None", lambda: R.res(X, center=None), Raises(TypeError, "center")),
    (
        "res center returns wrong shape",
        lambda: R.res(X, center=lambda Y: Y[0, :2]),
        Raises(ValueError, "center(X)", "shape"),
    ),
    ("res norm bad", lambda: R.res(X, norm="nuclear"), Raises(ValueError, "norm")),
    (
        "relative_residual zeros",
        lambda: R.relative_residual(torch.zeros(3, 4)),
        Returns(lambda v: v == 0, "0 (0/0 is 0)"),
    ),
    (
        "relative_residual int tensor",
        lambda: R.relative_residual(torch.ones(3, 4, dtype=torch.int64)),
        Returns(lambda v: v == 0, "0 (integers are converted)"),
    ),
    (
        "relative_residual numpy",
        lambda: R.relative_residual(np.eye(3)),
        Returns(finite, "a finite value"),
    ),
    (
        "relative_residual huge values",
        lambda: R.relative_residual(torch.full((3, 4), 1e300, dtype=torch.float64)),
        Returns(lambda v: v == 0, "0: every token equal"),
    ),
    ("center_of X string", lambda: R.center_of("abc"), Raises(TypeError, "X")),
    ("check_center number", lambda: R.check_center(3), Raises(TypeError, "center")),
    # -------------------------------------------------------------- san (helper "real" owns san.py)
    (
        "SANConfig n_layers -1",
        lambda: SANConfig(n_layers=-1),
        Raises(ValueError, "n_layers", ">= 0"),
    ),
    ("SANConfig n_heads 0", lambda: SANConfig(n_heads=0), Raises(ValueError, "n_heads", ">= 1")),
    ("SANConfig d_model 0", lambda: SANConfig(d_model=0), Raises(ValueError, "d_model")),
    (
        "SANConfig d_model float",
        lambda: SANConfig(d_model=4.0),
        Raises(TypeError, "d_model", "integer"),
    ),
    ("SANConfig n_layers bool", lambda: SANConfig(n_layers=True), Raises(TypeError, "n_layers")),
    (
        "SANConfig skip 'no'",
        lambda: SANConfig(skip="no"),
        Raises(TypeError, "skip", "True or False"),
    ),
    ("SANConfig bias 1", lambda: SANConfig(bias=1), Raises(TypeError, "bias")),
    ("SANConfig shared None", lambda: SANConfig(shared=None), Raises(TypeError, "shared")),
    ("SANConfig mlp -1", lambda: SANConfig(mlp=-1), Raises(ValueError, "mlp")),
    ("SANConfig d_qk 0", lambda: SANConfig(d_qk=0), Raises(ValueError, "d_qk")),
    (
        "SANConfig layernorm bad",
        lambda: SANConfig(layernorm="mid"),
        Raises(ValueError, "layernorm", "'post'"),
    ),
    (
        "SANConfig activation bad",
        lambda: SANConfig(activation="tanh"),
        Raises(ValueError, "activation", "'gelu'"),
    ),
    (
        "SANConfig init_scale nan",
        lambda: SANConfig(init_scale=NANF),
        Raises(ValueError, "init_scale"),
    ),
    (
        "SANConfig init_scale inf",
        lambda: SANConfig(init_scale=math.inf),
        Raises(ValueError, "init_scale"),
    ),
    (
        "SANConfig init_scale negative",
        lambda: SANConfig(init_scale=-1.0),
        Raises(ValueError, "init_scale"),
    ),
    (
        "SANConfig init_scale string",
        lambda: SANConfig(init_scale="1"),
        Raises(TypeError, "init_scale"),
    ),
    ("SANConfig mlp_scale nan", lambda: SANConfig(mlp_scale=NANF), Raises(ValueError, "mlp_scale")),
    (
        "SANConfig dtype float16",
        lambda: SANConfig(dtype=torch.float16),
        Raises(ValueError, "dtype"),
    ),
    (
        "SANConfig dtype string",
        lambda: SANConfig(dtype="float64"),
        Returns(lambda c: c.dtype == torch.float64, "accepted"),
    ),
    ("SANConfig replace bad", lambda: CFG.replace(n_heads=-2), Raises(ValueError, "n_heads")),
    (
        "SAN config not a SANConfig",
        lambda: SAN({"n_layers": 2}, seed=0),
        Raises(TypeError, "config", "SANConfig"),
    ),
    ("SAN seed negative", lambda: SAN(CFG, seed=-1), Raises(ValueError, "seed")),
    ("SAN seed float", lambda: SAN(CFG, seed=1.5), Raises(TypeError, "seed")),
    ("SAN seed bool", lambda: SAN(CFG, seed=True), Raises(TypeError, "seed")),
    ("SAN seed string", lambda: SAN(CFG, seed="0"), Raises(TypeError, "seed")),
    ("SAN seed 2**70", lambda: SAN(CFG, seed=HUGE_SEED), Raises(ValueError, "seed")),
    (
        "SAN n_layers 10**6",
        lambda: SAN(SANConfig(n_layers=10**6), seed=0),
        Raises(ValueError, "n_layers", "4,096 layers"),
    ),
    (
        "SAN n_heads 10**9",
        lambda: SAN(SANConfig(n_heads=10**9), seed=0),
        Raises(ValueError, "n_heads", "GiB"),
    ),
    (
        "SAN d_model 10**6",
        lambda: SAN(SANConfig(d_model=10**6), seed=0),
        Raises(ValueError, "d_model", "GiB"),
    ),
    ("SAN forward wrong width", lambda: PURE(WIDE), Raises(ValueError, "X", "4 features")),
    ("SAN forward NaN", lambda: PURE(NAN), Raises(ValueError, "X", "NaN")),
    ("SAN forward empty", lambda: PURE(EMPTY), Raises(ValueError, "X", "empty")),
    ("SAN forward list", lambda: PURE([[0.0] * 4] * 3), Raises(TypeError, "X")),
    (
        "SAN forward float32 input",
        lambda: PURE(X.float()).last_hidden_state.dtype,
        Returns(lambda d: d == torch.float64, "cast to the model's dtype"),
    ),
    (
        "SAN scale_weights nan",
        lambda: SAN(CFG, seed=0).scale_weights(NANF),
        Raises(ValueError, "factor"),
    ),
    (
        "SAN scale_weights which bad",
        lambda: SAN(CFG, seed=0).scale_weights(2.0, "all"),
        Raises(ValueError, "which"),
    ),
    (
        "SAN scale_weights mlp without MLP",
        lambda: SAN(CFG, seed=0).scale_weights(2.0, "mlp"),
        Raises(ValueError, "mlp"),
    ),
    (
        "check_san not a SAN",
        lambda: rc.san.check_san(torch.nn.Linear(2, 2)),
        Raises(TypeError, "model", "SAN"),
    ),
    # ------------------------------------------------------------------ paths
    (
        "path_count skip 'no'",
        lambda: P.path_count(3, 2, 3, skip="no"),
        Raises(TypeError, "skip", "True or False"),
    ),
    ("path_count skip 0", lambda: P.path_count(3, 2, 3, skip=0), Raises(TypeError, "skip")),
    ("path_count L negative", lambda: P.path_count(-1, 2, 0), Raises(ValueError, "L", ">= 0")),
    ("path_count H 0", lambda: P.path_count(3, 0, 1), Raises(ValueError, "H", ">= 1")),
    ("path_count length float", lambda: P.path_count(3, 2, 1.0), Raises(TypeError, "length")),
    ("path_count H bool", lambda: P.path_count(3, True, 1), Raises(TypeError, "H")),
    (
        "path_count huge",
        lambda: P.path_count(10**4, 10**3, 5),
        Returns(lambda v: v == math.comb(10**4, 5) * 10**15, "exact"),
    ),
    ("path_count length > L", lambda: P.path_count(3, 2, 4), Returns(lambda v: v == 0, "0")),
    (
        "path_count L 10**9",
        lambda: P.path_count(10**9, 10**6, 5 * 10**8),
        Raises(ValueError, "L", "<="),
    ),
    (
        "length_distribution 10**5",
        lambda: P.length_distribution(10**5, 2),
        Returns(
            lambda v: v.shape == (10**5 + 1,) and abs(float(v.sum()) - 1) < 1e-9,
            "the binomial, fast",
        ),
    ),
    (
        "length_distribution 10**9",
        lambda: P.length_distribution(10**9, 2),
        Raises(ValueError, "L", "<="),
    ),
    ("length_distribution H 0", lambda: P.length_distribution(3, 0), Raises(ValueError, "H")),
    (
        "length_distribution L string",
        lambda: P.length_distribution("12", 2),
        Raises(TypeError, "L"),
    ),
    (
        "length_distribution L 0",
        lambda: P.length_distribution(0, 5),
        Returns(lambda v: v.tolist() == [1.0], "[1.0]"),
    ),
    ("mean_path_length L negative", lambda: P.mean_path_length(-3, 2), Raises(ValueError, "L")),
    ("all_paths H 0", lambda: P.all_paths(2, 0), Raises(ValueError, "H", ">= 1")),
    ("all_paths L 10**6", lambda: P.all_paths(10**6, 2), Raises(ValueError, "max_paths")),
    ("all_paths L 10**18", lambda: P.all_paths(10**18, 10**9), Raises(ValueError, "max_paths")),
    ("all_paths skip 'no'", lambda: P.all_paths(2, 2, skip="no"), Raises(TypeError, "skip")),
    (
        "all_paths L 0",
        lambda: P.all_paths(0, 2),
        Returns(lambda v: v == [()], "[()]: the one empty path"),
    ),
    ("path_length int", lambda: P.path_length(3), Raises(TypeError, "path")),
    ("path_length negative head", lambda: P.path_length((0, -1)), Raises(ValueError, "path entry")),
    (
        "enumerate_paths memory",
        lambda: P.enumerate_paths(
            rc.san.SAN(SANConfig(n_layers=6, n_heads=3, d_model=768), seed=0),
            torch.zeros(512, 768, dtype=torch.float64),
        ),
        Raises(ValueError, "max_bytes", "decompose_by_length"),
    ),
    (
        "enumerate_paths count",
        lambda: P.enumerate_paths(
            rc.san.SAN(SANConfig(n_layers=12, n_heads=12, d_model=4, skip=True), seed=0), X
        ),
        Raises(ValueError, "max_paths", "decompose_by_length"),
    ),
    (
        "enumerate_paths max_bytes 0",
        lambda: P.enumerate_paths(PURE, X, max_bytes=0),
        Raises(ValueError, "max_bytes"),
    ),
    (
        "enumerate_paths with_constant 'yes'",
        lambda: P.enumerate_paths(PURE, X, with_constant="yes"),
        Raises(TypeError, "with_constant"),
    ),
    ("enumerate_paths MLP", lambda: P.enumerate_paths(MLP, X), Raises(ValueError, "MLP")),
    (
        "enumerate_paths not a model",
        lambda: P.enumerate_paths("model", X),
        Raises(TypeError, "model"),
    ),
    (
        "decompose_by_length NaN",
        lambda: P.decompose_by_length(PURE, NAN),
        Raises(ValueError, "X", "NaN"),
    ),
    (
        "decompose_by_length wrong width",
        lambda: P.decompose_by_length(PURE, WIDE),
        Raises(ValueError, "X", "features"),
    ),
    (
        "decompose_by_length bias",
        lambda: P.decompose_by_length(BIAS, X),
        Raises(ValueError, "with_constant"),
    ),
    (
        "decompose_by_length with_constant 1",
        lambda: P.decompose_by_length(PURE, X, with_constant=1),
        Raises(TypeError, "with_constant"),
    ),
    (
        "decomposition_error default at BERT's width",
        lambda: P.decomposition_error(
            rc.san.SAN(SANConfig(n_layers=6, n_heads=3, d_model=768, skip=True), seed=0),
            torch.zeros(64, 768, dtype=torch.float64) + 1.0,
        ),
        Returns(lambda v: set(v) == {"by_length"}, "the dynamic programme only"),
    ),
    (
        "decomposition_error enumeration too large",
        lambda: P.decomposition_error(
            rc.san.SAN(SANConfig(n_layers=12, n_heads=12, d_model=4, skip=True), seed=0),
            X,
            with_enumeration=True,
        ),
        Raises(ValueError, "max_paths"),
    ),
    (
        "decomposition_error with_enumeration 'no'",
        lambda: P.decomposition_error(PURE, X, with_enumeration="no"),
        Raises(TypeError, "with_enumeration"),
    ),
    (
        "decomposition_error zero output",
        lambda: P.decomposition_error(ZERO, X, with_enumeration=True),
        Returns(
            lambda v: v == {"by_length": 0.0, "enumeration": 0.0},
            "0: an absolute error at a zero output",
        ),
    ),
    (
        "length_profile bad norm",
        lambda: P.length_profile(SKIP, X, norm="l2"),
        Raises(ValueError, "norm", "'fro'", "'l1inf'"),
    ),
    (
        "length_profile bad center",
        lambda: P.length_profile(SKIP, X, center="median"),
        Raises(ValueError, "center", "'mean'"),
    ),
    (
        "length_profile constant",
        lambda: P.length_profile(BIAS, X),
        Raises(ValueError, "length_profile", "bias=False"),
    ),
    (
        "length_profile zero output",
        lambda: P.length_profile(ZERO, X),
        Returns(finite, "finite shares (0/0 is 0)"),
    ),
    (
        "length_gram constant",
        lambda: P.length_gram(BIAS, X),
        Raises(ValueError, "constant", "with_constant=True"),
    ),
    ("length_gram MLP", lambda: P.length_gram(MLP, X), Raises(ValueError, "MLP")),
    (
        "path_norms wrong length",
        lambda: P.path_norms(SKIP, X, [(0,)]),
        Raises(ValueError, "one entry per layer"),
    ),
    (
        "path_norms skip without skips",
        lambda: P.path_norms(PURE, X, [(None,) * CFG.n_layers]),
        Raises(ValueError, "without skips"),
    ),
    (
        "path_norms no path",
        lambda: P.path_norms(SKIP, X, []),
        Raises(ValueError, "at least one path"),
    ),
    (
        "path_norms bad norm",
        lambda: P.path_norms(SKIP, X, [(0,) * CFG.n_layers], norm="l2"),
        Raises(ValueError, "norm"),
    ),
    (
        "sample_paths too long",
        lambda: P.sample_paths(2, 2, 3, 1, generator=torch.Generator()),
        Raises(ValueError, "length"),
    ),
    (
        "sample_paths no generator",
        lambda: P.sample_paths(2, 2, 1, 1, generator=0),
        Raises(TypeError, "generator"),
    ),
    ("frozen_layers NaN", lambda: P.frozen_layers(PURE, NAN), Raises(ValueError, "X")),
    ("circuit_groups not sums by length", lambda: P.circuit_groups(X), Raises(ValueError, "T")),
    (
        "circuit_groups ints",
        lambda: P.circuit_groups(torch.zeros(3, 3, 4, dtype=torch.long)),
        Raises(ValueError, "T"),
    ),
    # ------------------------------------------------------------------ theory
    (
        "gamma depth 0",
        lambda: T.gamma(DEPTH0, X),
        Returns(lambda v: v.shape == (0,), "no layers: shape (0,)"),
    ),
    (
        "collapse_bound depth 0",
        lambda: T.collapse_bound(DEPTH0, X),
        Returns(
            lambda v: v.shape == (1,) and torch.isclose(v[0], R.composite_norm(R.res(X))),
            "[the input's residual]",
        ),
    ),
    (
        "depth_profile depth 0",
        lambda: T.depth_profile(DEPTH0, X)["paper"].shape,
        Returns(lambda v: v == (1,), "one entry"),
    ),
    (
        "paper_rewriting depth 0",
        lambda: LN.paper_rewriting(DEPTH0_POST, X, 0),
        Raises(ValueError, "n_layers=0"),
    ),
    (
        "search depth 0",
        lambda: T.search_smallest_ratio(
            CFG.replace(n_layers=0, skip=True), X, steps=1, restarts=1, seed=0
        ),
        Raises(ValueError, "n_layers"),
    ),
    (
        "decompose_by_length depth 0",
        lambda: P.decompose_by_length(DEPTH0, X),
        Returns(lambda v: torch.equal(v[0], X), "[X]"),
    ),
    (
        "check_pure_attention skip",
        lambda: T.check_pure_attention(SKIP),
        Raises(ValueError, "skip=True"),
    ),
    (
        "check_pure_attention not a model",
        lambda: T.check_pure_attention(None),
        Raises(TypeError, "model"),
    ),
    ("beta not a model", lambda: T.beta(3), Raises(TypeError, "model")),
    ("qk_matrices not a model", lambda: T.qk_matrices("model"), Raises(TypeError, "model")),
    (
        "value_matrices zero layers",
        lambda: T.value_matrices(SAN(SANConfig(n_layers=0, d_model=4), seed=0)),
        Returns(lambda v: v.shape == (0, 1, 4, 4), "(0, H, d, d)"),
    ),
    (
        "beta zero layers",
        lambda: T.beta(SAN(SANConfig(n_layers=0), seed=0)),
        Returns(lambda v: v.shape == (0, 1), "(0, H)"),
    ),
    ("gamma MLP", lambda: T.gamma(MLP, X), Raises(ValueError, "MLP")),
    ("gamma NaN", lambda: T.gamma(PURE, NAN), Raises(ValueError, "X", "NaN")),
    ("gamma_details wrong width", lambda: T.gamma_details(PURE, WIDE), Raises(ValueError, "X")),
    (
        "collapse_bound form bad",
        lambda: T.collapse_bound(PURE, X, "cubic"),
        Raises(ValueError, "form", "'paper'"),
    ),
    (
        "collapse_bound log10 'no'",
        lambda: T.collapse_bound(PURE, X, log10="no"),
        Raises(TypeError, "log10"),
    ),
    (
        "collapse_bound large eps",
        lambda: T.collapse_bound(PURE, 1e3 * X, "paper", log10=True),
        Returns(
            lambda v: not torch.isnan(v).any() and not (v == math.inf).any(), "finite log bound"
        ),
    ),
    ("collapse_bound skip", lambda: T.collapse_bound(SKIP, X), Raises(ValueError, "skip")),
    (
        "tracked_relative_residual skip",
        lambda: T.tracked_relative_residual(SKIP, X),
        Raises(ValueError, "skip"),
    ),
    ("attention_hardness skip", lambda: T.attention_hardness(SKIP, X), Raises(ValueError, "skip")),
    (
        "rank_one_distance not square",
        lambda: T.rank_one_distance(X),
        Raises(ValueError, "P", "square"),
    ),
    (
        "rank_one_distance bad norm",
        lambda: T.rank_one_distance(torch.eye(3), norm="l2"),
        Raises(ValueError, "norm"),
    ),
    ("rank_one_distance NaN", lambda: T.rank_one_distance(NAN[:, :3]), Raises(ValueError, "P")),
    (
        "attention_through_depth skip",
        lambda: T.attention_through_depth(SKIP, X),
        Raises(ValueError, "skip"),
    ),
    (
        "attention_through_depth depth 0",
        lambda: T.attention_through_depth(DEPTH0, X)["distance"].shape,
        Returns(lambda v: v[0] == 0, "no layers"),
    ),
    (
        "attention_hardness batch",
        lambda: T.attention_hardness(PURE, X.expand(2, 3, 4)),
        Raises(ValueError, "one input"),
    ),
    (
        "layer_constants log10 'yes'",
        lambda: T.layer_constants(PURE, X, log10="yes"),
        Raises(TypeError, "log10"),
    ),
    ("bound_gaps skip", lambda: T.bound_gaps(SKIP, X, ("paper",)), Raises(ValueError, "skip")),
    (
        "collapse_bound center 'median'",
        lambda: T.collapse_bound(PURE, X, center="median"),
        Raises(ValueError, "center"),
    ),
    (
        "collapse_bound center 'optimal' string",
        lambda: T.collapse_bound(PURE, X, center="optimal"),
        Raises(ValueError, "center", "optimal_center"),
    ),
    (
        "collapse_bound identical tokens",
        lambda: T.collapse_bound(PURE, torch.ones(3, 4, dtype=torch.float64), "layerwise"),
        Returns(lambda v: bool((v == 0).all()), "exactly 0 at every layer"),
    ),
    (
        "collapse_bound step zero values",
        lambda: T.collapse_bound(ZERO, X, "step", log10=True),
        Returns(lambda v: not torch.isnan(v).any(), "no NaN"),
    ),
    ("skip_bound pure", lambda: T.skip_bound(PURE, X), Raises(ValueError, "skip")),
    (
        "skip_bound MLP",
        lambda: T.skip_bound(SAN(CFG.replace(skip=True, mlp=8), seed=0), X),
        Raises(ValueError, "mlp"),
    ),
    ("skip_bound NaN", lambda: T.skip_bound(SKIP, NAN), Raises(ValueError, "X", "NaN")),
    (
        "skip_bound center bad",
        lambda: T.skip_bound(SKIP, X, center="median"),
        Raises(ValueError, "center"),
    ),
    (
        "skip_bound log10 'no'",
        lambda: T.skip_bound(SKIP, X, log10="no"),
        Raises(TypeError, "log10"),
    ),
    ("skip_bound not a model", lambda: T.skip_bound("model", X), Raises(TypeError, "model")),
    (
        "skip_bound depth 0",
        lambda: T.skip_bound(SAN(CFG.replace(n_layers=0, skip=True), seed=0), X).shape,
        Returns(lambda v: v == (1,), "one entry"),
    ),
    (
        "tracked_residual log10 1",
        lambda: T.tracked_residual(PURE, X, log10=1),
        Raises(TypeError, "log10"),
    ),
    ("tracked_residual LN", lambda: T.tracked_residual(POST, X), Raises(ValueError, "LayerNorm")),
    (
        "layer_constants empty X",
        lambda: T.layer_constants(PURE, EMPTY),
        Raises(ValueError, "X", "empty"),
    ),
    ("depth_profile string X", lambda: T.depth_profile(PURE, "X"), Raises(TypeError, "X")),
    (
        "depth_profile zero output",
        lambda: T.depth_profile(ZERO, X),
        Returns(lambda v: not torch.isnan(v["paper"]).any(), "no NaN"),
    ),
    (
        "unit_residual_tokens n 1",
        lambda: T.unit_residual_tokens(1, 4, generator=_g),
        Raises(ValueError, "n"),
    ),
    (
        "unit_residual_tokens d 0",
        lambda: T.unit_residual_tokens(3, 0, generator=_g),
        Raises(ValueError, "d"),
    ),
    (
        "random_instances 15",
        lambda: sum(x.shape[0] for _, x in T.random_instances(15, seed=0)),
        Returns(lambda v: v == 15, "exactly 15 inputs"),
    ),
    ("random_instances 0", lambda: T.random_instances(0, seed=0), Raises(ValueError, "count")),
    (
        "random_instances negative",
        lambda: T.random_instances(-5, seed=0),
        Raises(ValueError, "count"),
    ),
    (
        "random_instances seed 2**70",
        lambda: T.random_instances(10, seed=HUGE_SEED),
        Raises(ValueError, "seed"),
    ),
    (
        "random_instances seed float",
        lambda: T.random_instances(10, seed=0.5),
        Raises(TypeError, "seed"),
    ),
    (
        "random_instances batch 0",
        lambda: T.random_instances(10, seed=0, batch=0),
        Raises(ValueError, "batch"),
    ),
    (
        "random_instances max_n huge",
        lambda: T.random_instances(10, seed=0, max_n=10**9),
        Raises(ValueError, "max_n"),
    ),
    (
        "random_instances max_n 1",
        lambda: T.random_instances(10, seed=0, max_n=1),
        Raises(ValueError, "max_n"),
    ),
    (
        "random_instances max_heads 10**9",
        lambda: T.random_instances(10, seed=0, max_heads=10**9),
        Raises(ValueError, "max_heads"),
    ),
    (
        "random_instances count 10**12 is lazy",
        lambda: next(iter(T.random_instances(10**12, seed=0)))[1].shape[0],
        Returns(lambda v: v == 10, "a generator: the first model's 10 inputs"),
    ),
    (
        "preserving_san family bad",
        lambda: T.preserving_san("none", CFG.replace(skip=True), seed=0),
        Raises(ValueError, "family"),
    ),
    (
        "preserving_san no skip",
        lambda: T.preserving_san("zero_value", CFG, seed=0),
        Raises(ValueError, "skip=True"),
    ),
    (
        "preserving_san config dict",
        lambda: T.preserving_san("zero_value", {}, seed=0),
        Raises(TypeError, "config"),
    ),
    (
        "preserving_san scale nan",
        lambda: T.preserving_san("uniform_attention", CFG.replace(skip=True), seed=0, scale=NANF),
        Raises(ValueError, "scale"),
    ),
    (
        "preserving_san reserved too big",
        lambda: T.preserving_san("reserved_subspace", CFG.replace(skip=True), seed=0, reserved=4),
        Raises(ValueError, "reserved"),
    ),
    (
        "preserving_san seed 2**70",
        lambda: T.preserving_san("zero_value", CFG.replace(skip=True), seed=HUGE_SEED),
        Raises(ValueError, "seed"),
    ),
    (
        "preserving_input reserved 0",
        lambda: T.preserving_input(X, reserved=0),
        Raises(ValueError, "reserved"),
    ),
    ("preserving_input list", lambda: T.preserving_input([[1.0, 2.0]]), Raises(TypeError, "X")),
    (
        "search steps negative",
        lambda: T.search_smallest_ratio(CFG.replace(skip=True), X, steps=-1, restarts=1, seed=0),
        Raises(ValueError, "steps"),
    ),
    (
        "search restarts 0",
        lambda: T.search_smallest_ratio(CFG.replace(skip=True), X, steps=1, restarts=0, seed=0),
        Raises(ValueError, "restarts"),
    ),
    (
        "search steps 10**9",
        lambda: T.search_smallest_ratio(CFG.replace(skip=True), X, steps=10**9, restarts=1, seed=0),
        Raises(ValueError, "steps"),
    ),
    (
        "search restarts 10**9",
        lambda: T.search_smallest_ratio(CFG.replace(skip=True), X, steps=1, restarts=10**9, seed=0),
        Raises(ValueError, "restarts"),
    ),
    (
        "search seed 2**70",
        lambda: T.search_smallest_ratio(
            CFG.replace(skip=True), X, steps=1, restarts=1, seed=HUGE_SEED
        ),
        Raises(ValueError, "seed"),
    ),
    (
        "search lr nan",
        lambda: T.search_smallest_ratio(
            CFG.replace(skip=True), X, steps=1, restarts=1, seed=0, lr=NANF
        ),
        Raises(ValueError, "lr"),
    ),
    (
        "search batched X",
        lambda: T.search_smallest_ratio(
            CFG.replace(skip=True), X[None], steps=1, restarts=1, seed=0
        ),
        Raises(ValueError, "X", "(n, d)"),
    ),
    (
        "search X equal tokens",
        lambda: T.search_smallest_ratio(
            CFG.replace(skip=True), torch.ones(3, 4), steps=1, restarts=1, seed=0
        ),
        Raises(ValueError, "X", "zero residual"),
    ),
    (
        "search no skip",
        lambda: T.search_smallest_ratio(CFG, X, steps=1, restarts=1, seed=0),
        Raises(ValueError, "skip=True"),
    ),
    # ------------------------------------------------------------------ centering
    (
        "optimal_center list",
        lambda: rc.centering.optimal_center([[1.0, 2.0]]),
        Raises(TypeError, "X"),
    ),
    (
        "optimal_center NaN",
        lambda: rc.centering.optimal_center(NAN),
        Raises(ValueError, "X", "NaN"),
    ),
    ("optimal_center empty", lambda: rc.centering.optimal_center(EMPTY), Raises(ValueError, "X")),
    (
        "optimal_center one row",
        lambda: rc.centering.optimal_center(X[:1]),
        Returns(lambda v: torch.equal(v, X[0]), "the row"),
    ),
    (
        "optimal_center equal rows",
        lambda: rc.centering.optimal_center(torch.ones(50, 3, 2, dtype=torch.float64)),
        Returns(lambda v: torch.equal(v, torch.ones(50, 2, dtype=torch.float64)), "the common row"),
    ),
    # ------------------------------------------------------------------ layernorm
    ("numerical_rank rtol nan", lambda: LN.numerical_rank(X, NANF), Raises(ValueError, "rtol")),
    (
        "numerical_rank rtol negative",
        lambda: LN.numerical_rank(X, -1.0),
        Raises(ValueError, "rtol"),
    ),
    (
        "rank_one_deviation one row",
        lambda: LN.rank_one_deviation(torch.ones(1, 4)),
        Raises(ValueError, "Y", "2 rows"),
    ),
    ("rank_one_deviation not a tensor", lambda: LN.rank_one_deviation("Y"), Raises(TypeError, "Y")),
    (
        "numerical_rank zeros",
        lambda: LN.numerical_rank(torch.zeros(3, 4)),
        Returns(lambda v: v == 0, "0"),
    ),
    (
        "layer_norm gain wrong shape",
        lambda: LN.layer_norm(X, gain=torch.ones(3)),
        Raises(ValueError, "gain", "shape"),
    ),
    (
        "layer_norm shift NaN",
        lambda: LN.layer_norm(X, shift=torch.full((4,), NANF)),
        Raises(ValueError, "shift", "NaN"),
    ),
    ("layer_norm gain string", lambda: LN.layer_norm(X, gain="ones"), Raises(TypeError, "gain")),
    ("ln_factors NaN", lambda: LN.ln_factors(NAN), Raises(ValueError, "Y")),
    (
        "ln_from_factors not factors",
        lambda: LN.ln_from_factors(X, (1, 2)),
        Raises(TypeError, "factors"),
    ),
    (
        "common_scale how bad",
        lambda: LN.common_scale(X, torch.ones(3), "median"),
        Raises(ValueError, "how"),
    ),
    (
        "common_scale shape",
        lambda: LN.common_scale(X, torch.ones(5)),
        Raises(ValueError, "inv_sigma", "shape"),
    ),
    (
        "common_scale NaN",
        lambda: LN.common_scale(X, torch.full((3,), NANF, dtype=torch.float64)),
        Raises(ValueError, "inv_sigma"),
    ),
    (
        "paper_rewriting pure model",
        lambda: LN.paper_rewriting(PURE, X),
        Raises(ValueError, "layernorm='post'"),
    ),
    (
        "paper_rewriting layer out of range",
        lambda: LN.paper_rewriting(POST, X, 2),
        Raises(ValueError, "layer", "<= 1"),
    ),
    (
        "exact_rewriting layer negative",
        lambda: LN.exact_rewriting(POST, X, -1),
        Raises(ValueError, "layer"),
    ),
    (
        "rewriting_discrepancy how bad",
        lambda: LN.rewriting_discrepancy(POST, X, 0, "worst"),
        Raises(ValueError, "how"),
    ),
    (
        "rewriting_discrepancy layer float",
        lambda: LN.rewriting_discrepancy(POST, X, 0.0),
        Raises(TypeError, "layer"),
    ),
    (
        "scale_spread zero",
        lambda: LN.scale_spread(torch.zeros(3)),
        Raises(ValueError, "sigma", "positive"),
    ),
    (
        "scale_spread scalar",
        lambda: LN.scale_spread(torch.tensor(1.0)),
        Raises(ValueError, "sigma", "shape"),
    ),
    ("scale_spread string", lambda: LN.scale_spread("abc"), Raises(TypeError, "sigma")),
    (
        "near_uniform eps nan",
        lambda: LN.near_uniform_along_ones(3, 4, NANF, seed=0),
        Raises(ValueError, "eps"),
    ),
    (
        "near_uniform level nan",
        lambda: LN.near_uniform_along_ones(3, 4, 0.1, seed=0, level=NANF),
        Raises(ValueError, "level"),
    ),
    (
        "near_uniform huge",
        lambda: LN.near_uniform_along_ones(10**6, 10**6, 0.1, seed=0),
        Raises(ValueError, "n * d"),
    ),
    (
        "near_uniform seed 2**70",
        lambda: LN.near_uniform_along_ones(3, 4, 0.1, seed=HUGE_SEED),
        Raises(ValueError, "seed"),
    ),
    (
        "near_uniform dtype",
        lambda: LN.near_uniform_along_ones(3, 4, 0.1, seed=0, dtype=torch.int64),
        Raises(ValueError, "dtype"),
    ),
    (
        "balanced_tokens odd n",
        lambda: LN.balanced_tokens(3, 4, seed=0),
        Raises(ValueError, "n", "even"),
    ),
    (
        "balanced_tokens noise inf",
        lambda: LN.balanced_tokens(4, 4, seed=0, noise=math.inf),
        Raises(ValueError, "noise"),
    ),
    (
        "balanced_tokens L=10**6 width",
        lambda: LN.balanced_tokens(10**6, 10**6, seed=0),
        Raises(ValueError, "n * d"),
    ),
    (
        "residual_profile rtol nan",
        lambda: LN.residual_profile(PURE, X, NANF),
        Raises(ValueError, "rtol"),
    ),
    (
        "residual_profile not a model",
        lambda: LN.residual_profile(None, X),
        Raises(TypeError, "model"),
    ),
    # ------------------------------------------------------------------ real.condition
    ("pure_attention not a model", lambda: RC.pure_attention(PURE), Raises(TypeError, "model")),
    ("real_inputs not a model", lambda: RC.real_inputs(None, 2, 8), Raises(TypeError, "model")),
    (
        "condition_models unknown name",
        lambda: RC.condition_models(0, ["bert"]),
        Raises(ValueError, "names"),
    ),
    ("condition_models no name", lambda: RC.condition_models(0, []), Raises(ValueError, "names")),
    (
        "condition_holds bad condition",
        lambda: RC.condition_holds(PURE, X[None], "strict"),
        Raises(ValueError, "condition"),
    ),
    ("condition_holds skip", lambda: RC.condition_holds(SKIP, X[None]), Raises(ValueError, "skip")),
    (
        "smallest_shrink 2-D X",
        lambda: RC.smallest_shrink(PURE, X),
        Raises(ValueError, "X", "(b, n, d)"),
    ),
    (
        "smallest_shrink rtol 0",
        lambda: RC.smallest_shrink(PURE, X[None], rtol=0.0),
        Raises(ValueError, "rtol"),
    ),
    ("smallest_shrink bias", lambda: RC.smallest_shrink(BIAS, X[None]), Raises(ValueError, "bias")),
    (
        "attention_entropy one token",
        lambda: RC.attention_entropy(PURE, X[:1]),
        Raises(ValueError, "2 tokens"),
    ),
    (
        "model_condition not a model",
        lambda: RC.model_condition(PURE, 2, 8),
        Raises(TypeError, "model"),
    ),
    (
        "condition_study no model",
        lambda: RC.condition_study([], 2, 8),
        Raises(ValueError, "models"),
    ),
    # ------------------------------------------------------------------ stats
    ("geometric_mean empty", lambda: S.geometric_mean([]), Raises(ValueError, "values")),
    (
        "geometric_mean floor nan",
        lambda: S.geometric_mean([1.0], floor=NANF),
        Raises(ValueError, "floor"),
    ),
    ("first_below level 0", lambda: S.first_below([1.0], 0.0), Raises(ValueError, "level")),
    (
        "first_below none below",
        lambda: S.first_below([1.0, 2.0], 1e-3),
        Returns(lambda v: v is None, "None"),
    ),
    ("log_slope one point", lambda: S.log_slope([1.0], [1.0]), Raises(ValueError, "at least 2")),
    (
        "log_slope zero y",
        lambda: S.log_slope([1.0, 2.0], [0.0, 1.0]),
        Raises(ValueError, "y", "positive"),
    ),
    # ------------------------------------------------------------ later: gradients, masks, verdicts
    ("SANConfig window -1", lambda: SANConfig(window=-1), Raises(ValueError, "window")),
    ("SANConfig window 1.5", lambda: SANConfig(window=1.5), Raises(TypeError, "window")),
    (
        "branch_states with an MLP",
        lambda: LG.branch_states(MLP, X, skip=True),
        Raises(ValueError, "mlp"),
    ),
    (
        "branch_states scale nan",
        lambda: LG.branch_states(PURE, X, skip=True, branch_scale=NANF),
        Raises(ValueError, "branch_scale"),
    ),
    (
        "branch_states skip 'yes'",
        lambda: LG.branch_states(PURE, X, skip="yes"),
        Raises(TypeError, "skip"),
    ),
    (
        "layer_gradients G misshapen",
        lambda: LG.layer_gradients(PURE, X, X[:2], skip=False),
        Raises(ValueError, "G", "shape"),
    ),
    (
        "layer_gradients batched X",
        lambda: LG.layer_gradients(PURE, X[None], X[None], skip=False),
        Raises(ValueError, "X"),
    ),
    (
        "layer_gradients depth 0",
        lambda: LG.layer_gradients(DEPTH0, X, X, skip=False),
        Raises(ValueError, "n_layers"),
    ),
    (
        "gradient_study generator 0",
        lambda: LG.gradient_study(
            n_layers=2, n_heads=1, d_model=4, n_tokens=3, samples=1, seed=0, generator=0
        ),
        Raises(TypeError, "generator"),
    ),
    (
        "gradient_study one token",
        lambda: LG.gradient_study(
            n_layers=2,
            n_heads=1,
            d_model=4,
            n_tokens=1,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        ),
        Raises(ValueError, "n_tokens"),
    ),
    (
        "mask_options unknown",
        lambda: LM.mask_options("sparse", 2),
        Raises(ValueError, "mask", "causal"),
    ),
    ("mask_options window 0", lambda: LM.mask_options("window", 0), Raises(ValueError, "window")),
    (
        "mask_study no masks",
        lambda: LM.mask_study(
            masks=(),
            window=2,
            n_layers=2,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        ),
        Raises(ValueError, "masks"),
    ),
    (
        "mask_study seed 2**70",
        lambda: LM.mask_study(
            window=2,
            n_layers=2,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=HUGE_SEED,
            generator=torch.Generator(),
        ),
        Raises(ValueError, "seed"),
    ),
    (
        "cube_tokens rank = d",
        lambda: LM.cube_tokens(4, 4, torch.Generator()),
        Raises(ValueError, "rank"),
    ),
    (
        "cube_tokens rank 30",
        lambda: LM.cube_tokens(30, 64, torch.Generator()),
        Raises(ValueError, "rank", "10"),
    ),
    (
        "sharp_attention_network beta 0",
        lambda: LM.sharp_attention_network(4, 2, 0.0, layernorm=True),
        Raises(ValueError, "beta"),
    ),
    (
        "sharp_attention_network value shape",
        lambda: LM.sharp_attention_network(4, 2, 1.0, layernorm=False, value=torch.eye(2)),
        Raises(ValueError, "value"),
    ),
    (
        "numerical_rank zeros",
        lambda: LM.numerical_rank(torch.zeros(3, 4)),
        Returns(lambda v: v == 0, "0"),
    ),
    ("numerical_rank NaN", lambda: LM.numerical_rank(NAN), Raises(ValueError, "X", "NaN")),
    (
        "ln_counterexample no ranks",
        lambda: LM.ln_counterexample(
            ranks=(), d_model=4, n_layers=2, beta=1.0, noise=0.0, generator=torch.Generator()
        ),
        Raises(ValueError, "ranks"),
    ),
    (
        "ln_counterexample noise -1",
        lambda: LM.ln_counterexample(
            ranks=(2,), d_model=4, n_layers=2, beta=1.0, noise=-1.0, generator=torch.Generator()
        ),
        Raises(ValueError, "noise"),
    ),
    # ---------------------------------------------------------------- later: lam, phases, particles
    (
        "lambda_skip_san cfg with MLP",
        lambda: rc.later.lam.lambda_skip_san(CFG.replace(mlp=4), 1.0, seed=0),
        Raises(ValueError, "config", "pure attention"),
    ),
    (
        "lambda_skip_san lam nan",
        lambda: rc.later.lam.lambda_skip_san(CFG, NANF, seed=0),
        Raises(ValueError, "lam"),
    ),
    (
        "lambda_skip_san config not a config",
        lambda: rc.later.lam.lambda_skip_san("cfg", 1.0, seed=0),
        Raises(TypeError, "config"),
    ),
    (
        "layer_constants pure SAN",
        lambda: rc.later.lam.layer_constants(PURE, X),
        Raises(ValueError, "model", "lambda-skip"),
    ),
    (
        "relative_residual_lower_bound wrong width",
        lambda: rc.later.lam.relative_residual_lower_bound(
            SKIP, torch.randn(3, 5, dtype=torch.float64)
        ),
        Raises(ValueError, "X"),
    ),
    (
        "lambda_study generator 0",
        lambda: rc.later.lam.lambda_study(
            lambdas=[1.0],
            n_layers=1,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=0,
        ),
        Raises(TypeError, "generator"),
    ),
    (
        "lambda_study negative lambda",
        lambda: rc.later.lam.lambda_study(
            lambdas=[-1.0],
            n_layers=1,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        ),
        Raises(ValueError, "lambdas"),
    ),
    (
        "lambda_study huge",
        lambda: rc.later.lam.lambda_study(
            lambdas=[1.0],
            n_layers=1,
            n_heads=1,
            d_model=4,
            n_tokens=10**6,
            samples=10,
            seed=0,
            generator=torch.Generator(),
        ),
        Raises(ValueError, "n_tokens"),
    ),
    (
        "attention_entropy not square",
        lambda: rc.later.phases.attention_entropy(torch.ones(2, 3)),
        Raises(ValueError, "P", "square"),
    ),
    (
        "attention_entropy negative",
        lambda: rc.later.phases.attention_entropy(-torch.eye(3)),
        Raises(ValueError, "P"),
    ),
    (
        "attention_entropy a string",
        lambda: rc.later.phases.attention_entropy("P"),
        Raises(TypeError, "P"),
    ),
    (
        "scaled_qk_san negative scale",
        lambda: rc.later.phases.scaled_qk_san(CFG, -1.0, seed=0),
        Raises(ValueError, "qk_scale"),
    ),
    (
        "scaled_qk_san causal",
        lambda: rc.later.phases.scaled_qk_san(CFG.replace(causal=True), 1.0, seed=0),
        Raises(ValueError, "config"),
    ),
    (
        "post_ln_states without LayerNorm",
        lambda: rc.later.phases.post_ln_states(PURE, X, 1.0),
        Raises(ValueError, "layernorm"),
    ),
    (
        "post_ln_states strength inf",
        lambda: rc.later.phases.post_ln_states(POST, X, math.inf),
        Raises(ValueError, "strength"),
    ),
    (
        "phase_study decreasing scales",
        lambda: rc.later.phases.phase_study(
            scales=[1.0, 0.5],
            strengths=[1.0],
            n_layers=1,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        ),
        Raises(ValueError, "scales"),
    ),
    (
        "phase_study huge",
        lambda: rc.later.phases.phase_study(
            scales=[1.0],
            strengths=[1.0],
            n_layers=1,
            n_heads=1,
            d_model=4,
            n_tokens=10**6,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        ),
        Raises(ValueError, "n_tokens"),
    ),
    (
        "sphere_tokens d=1",
        lambda: rc.later.particles.sphere_tokens(3, 1, seed=0),
        Raises(ValueError, "d"),
    ),
    (
        "sphere_tokens huge",
        lambda: rc.later.particles.sphere_tokens(10**4, 10**6, seed=0),
        Raises(ValueError, "n * d"),
    ),
    (
        "attention_velocity off the sphere",
        lambda: rc.later.particles.attention_velocity(X, 1.0),
        Raises(ValueError, "X", "unit vectors"),
    ),
    (
        "attention_flow dt too large",
        lambda: rc.later.particles.attention_flow(
            rc.later.particles.sphere_tokens(3, 2, seed=0), 9.0, dt=0.5, steps=1
        ),
        Raises(ValueError, "dt"),
    ),
    (
        "attention_flow steps huge",
        lambda: rc.later.particles.attention_flow(
            rc.later.particles.sphere_tokens(3, 2, seed=0), 1.0, dt=0.1, steps=10**9
        ),
        Raises(ValueError, "steps"),
    ),
    (
        "count_clusters tol 0",
        lambda: rc.later.particles.count_clusters(
            rc.later.particles.sphere_tokens(3, 2, seed=0), 0.0
        ),
        Raises(ValueError, "tol"),
    ),
    (
        "particle_study no betas",
        lambda: rc.later.particles.particle_study(
            n=3, d=3, betas=[], T=1.0, dt=0.1, every=1, seed=0
        ),
        Raises(ValueError, "betas"),
    ),
    (
        "particle_study T/dt huge",
        lambda: rc.later.particles.particle_study(
            n=3, d=3, betas=[1.0], T=1e9, dt=0.1, every=1, seed=0
        ),
        Raises(ValueError, "steps"),
    ),
    # ------------------------------------------------------------------ toy.dynamics, toy.landscape
    (
        "stable_rank vector",
        lambda: rc.toy.dynamics.stable_rank(torch.ones(3)),
        Raises(TypeError, "W"),
    ),
    (
        "stable_rank ints",
        lambda: rc.toy.dynamics.stable_rank(torch.ones(2, 2, dtype=torch.int64)),
        Raises(TypeError, "W"),
    ),
    (
        "stable_rank zero matrix",
        lambda: rc.toy.dynamics.stable_rank(torch.zeros(3, 3)),
        Raises(ValueError, "zero matrix"),
    ),
    (
        "stable_rank numpy",
        lambda: float(rc.toy.dynamics.stable_rank(np.eye(3))),
        Returns(lambda v: abs(v - 3.0) < 1e-12, "3 for the identity"),
    ),
    (
        "weight_matrices not a toy model",
        lambda: rc.toy.dynamics.weight_matrices(PURE),
        Raises(TypeError, "model"),
    ),
    (
        "training_run not a task",
        lambda: rc.toy.dynamics.training_run("sorting"),
        Raises(TypeError, "task"),
    ),
    (
        "training_run circle",
        lambda: rc.toy.dynamics.training_run(_CIRCLE),
        Raises(ValueError, "circle"),
    ),
    (
        "training_run skip 'no'",
        lambda: rc.toy.dynamics.training_run(_SORT, skip="no"),
        Raises(TypeError, "skip"),
    ),
    (
        "training_run seed 2**70",
        lambda: rc.toy.dynamics.training_run(_SORT, seed=HUGE_SEED),
        Raises(ValueError, "seed"),
    ),
    (
        "training_run checkpoints 1",
        lambda: rc.toy.dynamics.training_run(_SORT, checkpoints=1),
        Raises(ValueError, "checkpoints"),
    ),
    (
        "training_run checkpoints past the end",
        lambda: rc.toy.dynamics.training_run(_SORT, checkpoints=(0, 9)),
        Raises(ValueError, "checkpoints"),
    ),
    (
        "dynamics_study n_probe too many",
        lambda: rc.toy.dynamics.dynamics_study(_SORT, n_probe=10**6),
        Raises(ValueError, "n_probe"),
    ),
    (
        "dynamics_study not a task",
        lambda: rc.toy.dynamics.dynamics_study(None),
        Raises(TypeError, "task"),
    ),
    (
        "filter_normalised_direction not a model",
        lambda: rc.toy.landscape.filter_normalised_direction(PURE, torch.Generator()),
        Raises(TypeError, "model"),
    ),
    (
        "training_loss not a model",
        lambda: rc.toy.landscape.training_loss(PURE, X, X),
        Raises(TypeError, "model"),
    ),
    (
        "loss_slice alphas without 0",
        lambda: rc.toy.landscape.loss_slice(_TOY_MODEL, _TOY_X, _TOY_Y, alphas=[1.0, 2.0, 3.0]),
        Raises(ValueError, "alphas"),
    ),
    (
        "loss_slice directions 0",
        lambda: rc.toy.landscape.loss_slice(
            _TOY_MODEL, _TOY_X, _TOY_Y, alphas=[-1, 0, 1], directions=0
        ),
        Raises(ValueError, "directions"),
    ),
    (
        "landscape_study not a study",
        lambda: rc.toy.landscape.landscape_study(None, alphas=[-1, 0, 1]),
        Raises(TypeError, "study"),
    ),
    # ------------------------------------------------------------------ checks
    (
        "check unknown id",
        lambda: C.check("paths.nothing", lambda: 0, quiet=True),
        Raises(ValueError, "unknown exercise"),
    ),
    (
        "check quiet 'no'",
        lambda: C.check("paths.count", lambda *a: 0, quiet="no"),
        Raises(TypeError, "quiet"),
    ),
    (
        "check fn not callable",
        lambda: C.check("paths.count", 3, quiet=True),
        Raises(TypeError, "fn"),
    ),
    (
        "check crashing answer",
        lambda: C.check("paths.count", lambda *a: 1 / 0, quiet=True).status,
        Returns(lambda v: v == "error", "'error', not a crash"),
    ),
    (
        "check answer of wrong type",
        lambda: C.check("collapse.beta", lambda *a: "beta", quiet=True).status,
        Returns(lambda v: v == "incorrect", "'incorrect'"),
    ),
    (
        "check answer NaN",
        lambda: C.check("collapse.beta", lambda *a: torch.tensor(NANF), quiet=True).status,
        Returns(lambda v: v == "incorrect", "'incorrect'"),
    ),
]


# --------------------------------------------------------------- the rest of the library (issue 32)


def _fig():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots()


_STACK = rc.lower_bound.construction(2, 4, 1, 1.0, 0.1)
_ATT = torch.full((2, 1, 2, 3, 3), 1 / 3, dtype=torch.float64)  # (L, b, H, n, n) uniform attention
LB, LBS, EX, PH, LIP, OPS = (
    rc.lower_bound,
    rc.lower_bound_search,
    book.explorer,
    rc.later.phases,
    rc.lipschitz,
    rc.ops,
)
BS, CR, RP, RT, TD, TE = (
    rc.bound_study,
    rc.cubic_rate,
    rc.real.products,
    rc.real.text,
    rc.toy.data,
    rc.toy.evaluate,
)
TT = importlib.import_module("rankcollapse.toy.train")  # rc.toy.train is the function
GEN = torch.Generator().manual_seed(0)

ROWS += [
    # ------------------------------------------------------------------ book
    ("fmt_sci string", lambda: book.fmt_sci("1e3"), Raises(TypeError, "x")),
    (
        "fmt_sci_log10 beyond float range",
        lambda: book.fmt_sci_log10(400.99),
        Returns(lambda v: v == "9.8 × 10⁴⁰⁰", "9.8 × 10⁴⁰⁰"),
    ),
    (
        "fmt_sci_log10 1e300",
        lambda: book.fmt_sci_log10(1e300),
        Returns(lambda v: "10" in v, "a power of ten, no overflow"),
    ),
    ("glue name not a string", lambda: book.glue(3, 1.0), Raises(ValueError, "name")),
    ("glue_figure not a figure", lambda: book.glue_figure("x", "fig"), Raises(TypeError, "fig")),
    (
        "glue_table rows of wrong length",
        lambda: book.glue_table("t", ["a", "b"], [[1]], display=False),
        Raises(ValueError, "row", "2 cells"),
    ),
    (
        "markdown_table rows of wrong length",
        lambda: book.markdown_table(["a", "b"], [[1, 2, 3]]),
        Raises(ValueError, "rows[0]", "header"),
    ),
    (
        "start seed 2**70",
        lambda: book.start("paths", "fast", HUGE_SEED),
        Raises(ValueError, "seed"),
    ),
    ("start mode bad", lambda: book.start("paths", "medium", 0), Raises(ValueError, "mode")),
    # ------------------------------------------------------------------ bound_study
    (
        "centre_study samples 0",
        lambda: BS.centre_study(
            samples=0, n_layers=1, n_heads=1, d_model=4, n_tokens=3, seed=0, generator=GEN
        ),
        Raises(ValueError, "samples"),
    ),
    (
        "delay_study not a RegimeStudy",
        lambda: BS.delay_study(
            None, samples=1, n_heads=1, d_model=4, depth=2, seed=0, generator=GEN
        ),
        Raises(TypeError, "regime"),
    ),
    (
        "delta_scaling_study one scale",
        lambda: CR.delta_scaling_study(
            scales=[0.1], samples=1, d_model=4, n_tokens=3, seed=0, generator=GEN
        ),
        Raises(ValueError, "scales"),
    ),
    (
        "delta_scaling_study n_tokens 1",
        lambda: CR.delta_scaling_study(
            scales=[0.1, 0.2], samples=1, d_model=4, n_tokens=1, seed=0, generator=GEN
        ),
        Raises(ValueError, "n_tokens"),
    ),
    (
        "cubic_rate_study generator 0",
        lambda: CR.cubic_rate_study(
            samples=1, n_layers=1, n_heads=1, d_model=4, n_tokens=3, seed=0, generator=0
        ),
        Raises(TypeError, "generator"),
    ),
    (
        "depth_study (bound) seed 2**70",
        lambda: BS.depth_study(
            heads=[1],
            n_layers=1,
            d_model=4,
            n_tokens=3,
            init_scale=1.0,
            samples=1,
            seed=HUGE_SEED,
            generator=GEN,
        ),
        Raises(ValueError, "seed"),
    ),
    (
        "regime_study scale nan",
        lambda: BS.regime_study(
            scales=[NANF],
            samples=1,
            n_layers=1,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            seed=0,
            generator=GEN,
        ),
        Raises(ValueError, "scale"),
    ),
    ("tightness_study count 0", lambda: BS.tightness_study(0, seed=0), Raises(ValueError, "count")),
    (
        "DepthStudy.median layer -1",
        lambda: BS.depth_study(
            heads=[1],
            n_layers=1,
            d_model=4,
            n_tokens=3,
            init_scale=1.0,
            samples=1,
            seed=0,
            generator=GEN,
        ).median(1, "paper", -1),
        Raises(ValueError, "layer", "negative"),
    ),
    # ------------------------------------------------------------------ checks, claims, evidence
    (
        "register not an Exercise",
        lambda: book.checks.register("paths.count"),
        Raises(TypeError, "register", "Exercise"),
    ),
    (
        "claims.check_file missing",
        lambda: claims.check_file("/nonexistent/chapter.md"),
        Raises(FileNotFoundError, "chapter.md"),
    ),
    (
        "claims.misattributions bytes",
        lambda: claims.misattributions(b"text"),
        Raises(TypeError, "text"),
    ),
    (
        "claims.page_text_credits None",
        lambda: claims.page_text_credits(None),
        Raises(TypeError, "text"),
    ),
    (
        "claims.paper_box_problems int",
        lambda: claims.paper_box_problems(3),
        Raises(TypeError, "text"),
    ),
    ("claims.units list", lambda: claims.units(["a"]), Raises(TypeError, "text")),
    (
        "claims.unsourced_boxes None",
        lambda: claims.unsourced_boxes(None),
        Raises(TypeError, "text"),
    ),
    (
        "declare holds 'yes'",
        lambda: book.evidence.declare(
            "paths",
            "fast",
            0,
            "x",
            sentence="A sentence.",
            section="1",
            condition="c",
            holds="yes",
            evidence="seed 0",
        ),
        Raises(TypeError, "holds"),
    ),
    ("plain a module", lambda: book.evidence.plain(rc), Raises(TypeError, "numbers", "module")),
    # ------------------------------------------------------------------ explorer
    ("explorer_html not a grid", lambda: EX.explorer_html({}), Raises(ValueError, "grid")),
    ("show not a grid", lambda: EX.show("grid"), Raises(ValueError, "grid")),
    (
        "scaled_skip_states strength nan",
        lambda: EX.scaled_skip_states(PURE, X, NANF),
        Raises(ValueError, "strength"),
    ),
    (
        "skip_strength_grid L 10**6",
        lambda: EX.skip_strength_grid(
            L=10**6, scales=[1.0], strengths=[1.0], n=3, d=4, H=1, samples=1, seed=0
        ),
        Raises(ValueError, "L", "<= 4096"),
    ),
    # ------------------------------------------------------------------ later.phases
    (
        "crossing lengths differ",
        lambda: PH.crossing([0.0, 1.0], [1.0], 0.5),
        Raises(ValueError, "x", "y"),
    ),
    (
        "depth_study (phases) depths 10**6",
        lambda: PH.depth_study(
            depths=[10**6],
            scales=[1.0],
            strengths=[1.0],
            ratios=[1.0],
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=GEN,
        ),
        Raises(ValueError, "depths", "<= 4096"),
    ),
    (
        "PhaseResult.critical_strength index 5",
        lambda: PH.phase_study(
            scales=[1.0],
            strengths=[1.0],
            n_layers=1,
            n_heads=1,
            d_model=4,
            n_tokens=3,
            samples=1,
            seed=0,
            generator=torch.Generator(),
        ).critical_strength(5),
        Raises(ValueError, "scale_index"),
    ),
    # ------------------------------------------------------------------ lipschitz
    (
        "activation_slope bad",
        lambda: LIP.activation_slope("tanh"),
        Raises(ValueError, "activation"),
    ),
    (
        "gradient_variance targets misshapen",
        lambda: LIP.gradient_variance(MLP, X[None], X, torch.nn.Linear(4, 4).double()),
        Raises(ValueError, "targets", "shape"),
    ),
    (
        "jacobian_envelope shapes",
        lambda: LIP.jacobian_envelope(torch.ones(4, 8), torch.ones(4, 8), (0.0, 1.0)),
        Raises(ValueError, "W_2", "share m"),
    ),
    (
        "lipschitz_lower_bound f not callable",
        lambda: LIP.lipschitz_lower_bound(3, X),
        Raises(TypeError, "f"),
    ),
    (
        "lipschitz_upper_bound no MLP",
        lambda: LIP.lipschitz_upper_bound(PURE),
        Raises(ValueError, "MLP"),
    ),
    (
        "memorization_task 10**6 x 10**4 x 10**4",
        lambda: LIP.memorization_task(10**6, 10**4, 10**4, seed=0),
        Raises(ValueError, "samples * n * d", "GiB"),
    ),
    ("mlp_inputs no MLP", lambda: LIP.mlp_inputs(PURE, X), Raises(ValueError, "MLP")),
    (
        "mlp_lipschitz seed -1",
        lambda: LIP.mlp_lipschitz(MLP, X, seed=-1),
        Raises(ValueError, "seed"),
    ),
    ("mlp_map layer -1", lambda: LIP.mlp_map(MLP, -1), Raises(ValueError, "layer")),
    (
        "per_example_gradients targets misshapen",
        lambda: LIP.per_example_gradients(MLP, X[None], X[None], 3),
        Raises(ValueError, "targets"),
    ),
    (
        "perturbation_gain zero input",
        lambda: LIP.perturbation_gain(MLP, torch.zeros(3, 4, dtype=torch.float64)),
        Raises(ValueError, "X", "zero"),
    ),
    # -------------------------------------------------------------- lower_bound, lower_bound_search
    ("bound_check not a Stack", lambda: LB.bound_check(PURE, X[None]), Raises(TypeError, "stack")),
    (
        "construction L 10**6",
        lambda: LB.construction(10**6, 4, 1, 1.0, 0.1),
        Raises(ValueError, "L", "4,096 layers"),
    ),
    (
        "depth_bound depths negative",
        lambda: LB.depth_bound(1.0, 1.0, 0.1, [-1]),
        Raises(ValueError, "depths"),
    ),
    (
        "depth_bound grid of 10**9",
        lambda: LB.depth_bound(1.0, 1.0, 0.1, np.broadcast_to(np.int64(3), (10**9,))),
        Raises(ValueError, "depths", "GiB"),
    ),
    (
        "layer_constants (lower bound) not a model",
        lambda: LB.layer_constants("model"),
        Raises(TypeError, "model"),
    ),
    ("lower_bound no skip", lambda: LB.lower_bound(PURE, X), Raises(ValueError, "skip")),
    ("construction L 0", lambda: LB.construction(0, 4, 1, 1.0, 0.1), Raises(ValueError, "L")),
    (
        "depth_bound shapes that do not broadcast",
        lambda: LB.depth_bound(torch.ones(2), torch.ones(3), 0.1, [1]),
        Raises(ValueError, "b0, k and omega", "broadcast"),
    ),
    (
        "wide_depth_bound omega 1",
        lambda: LB.wide_depth_bound(1.0, 1.0, 1.0, [1]),
        Raises(ValueError, "omega"),
    ),
    (
        "project_rows numpy array",
        lambda: LBS.project_rows(np.ones((2, 2))),
        Raises(TypeError, "M", "ndarray"),
    ),
    (
        "mean_steps post-LN model",
        lambda: rc.lower_bound_preln.mean_steps(SKIP),
        Raises(ValueError, "layernorm='pre'"),
    ),
    (
        "preln_relative_bound post-LN model",
        lambda: rc.lower_bound_preln.preln_relative_bound(SKIP, X),
        Raises(ValueError, "layernorm='pre'"),
    ),
    (
        "preln_bound post-LN model",
        lambda: rc.lower_bound_preln.preln_bound(SKIP, X),
        Raises(ValueError, "layernorm='pre'"),
    ),
    (
        "antipodal_tokens odd n",
        lambda: rc.lower_bound_preln.antipodal_tokens(3, 4, 1.0),
        Raises(ValueError, "n", "even"),
    ),
    (
        "standard_init unknown init",
        lambda: rc.lower_bound_preln.standard_init(64, "xavier"),
        Raises(ValueError, "init"),
    ),
    ("one_layer_bound NaN", lambda: LB.one_layer_bound(SKIP, NAN), Raises(ValueError, "X", "NaN")),
    (
        "random_networks max_n 1",
        lambda: next(LB.random_networks(1, seed=0, max_n=1)),
        Raises(ValueError, "max_n"),
    ),
    ("residual_inf string", lambda: LB.residual_inf("X"), Raises(TypeError, "X")),
    (
        "simplex_log10_ratios signs 0",
        lambda: LB.simplex_log10_ratios([0], 3, 4, 1, 1.0, 0.1, 1.0),
        Raises(ValueError, "signs"),
    ),
    ("simplex_tokens b0 0", lambda: LB.simplex_tokens(3, 4, 0.0), Raises(ValueError, "b0")),
    (
        "project_rows radius nan",
        lambda: LBS.project_rows(torch.ones(2, 2), NANF),
        Raises(ValueError, "radius"),
    ),
    (
        "at_the_bounds omega 0",
        lambda: LBS.at_the_bounds(2, 2, n=3, d=3, H=1, q=1.0, omega=0.0, b0=1.0, seed=0),
        Raises(ValueError, "omega"),
    ),
    (
        "start_inputs unknown kind",
        lambda: LBS.start_inputs("ring", 1, 4, 5),
        Raises(ValueError, "kind"),
    ),
    (
        "start_inputs one token",
        lambda: LBS.start_inputs("sparse", 1, 1, 5),
        Raises(ValueError, "n"),
    ),
    (
        "search (lower bound) at its maxima",
        lambda: LBS.search(
            [64],
            n=4,
            d=8,
            H=2,
            q=4.0,
            omega=0.15,
            b0=8.0,
            restarts=LBS.MAX_RESTARTS,
            steps=LBS.MAX_STEPS,
            seed=0,
        ),
        Raises(ValueError, "steps", "layer-steps"),
    ),
    (
        "search (skip) at its maxima",
        lambda: T.search_smallest_ratio(
            CFG.replace(skip=True),
            X,
            steps=rc.theory.skip.MAX_STEPS,
            restarts=rc.theory.skip.MAX_RESTARTS,
            seed=0,
        ),
        Raises(ValueError, "steps", "layer-steps"),
    ),
    # ------------------------------------------------------------------ ops
    ("activation unknown", lambda: OPS.activation("swish"), Raises(ValueError, "activation")),
    (
        "allowed_keys causal 'yes'",
        lambda: OPS.allowed_keys(3, None, "yes"),
        Raises(TypeError, "causal"),
    ),
    (
        "check_forward 10**5 tokens",
        lambda: OPS.check_forward(CFG, (10**5, 4)),
        Raises(ValueError, "X", "GiB", "fewer tokens"),
    ),
    (
        "SAN forward 10**5 tokens",
        lambda: PURE(torch.zeros(10**5, 4, dtype=torch.float64)),
        Raises(ValueError, "X", "GiB"),
    ),
    (
        "check_key_mask wrong shape",
        lambda: OPS.check_key_mask(torch.ones(5, dtype=torch.bool), (3,)),
        Raises(ValueError, "key_mask"),
    ),
    (
        "check_size too big",
        lambda: OPS.check_size(SANConfig(d_model=10**5)),
        Raises(ValueError, "GiB"),
    ),
    ("forward_cost shape 1-D", lambda: OPS.forward_cost(CFG, (4,)), Raises(ValueError, "shape")),
    (
        "layer_norm eps negative",
        lambda: OPS.layer_norm_sigma(
            X, torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64), -1.0
        ),
        Raises(ValueError, "eps"),
    ),
    ("relative_positions n 0", lambda: OPS.relative_positions(0, 4), Raises(ValueError, "n")),
    (
        "relative_scores not a block",
        lambda: OPS.relative_scores(None, X, X),
        Raises(TypeError, "block"),
    ),
    (
        "set_weights missing name",
        lambda: OPS.set_weights(PURE.layers[0], {}, "layers[0]"),
        Raises(ValueError, "layers[0]"),
    ),
    ("weight_count not a config", lambda: OPS.weight_count({}), Raises(TypeError, "config")),
    # ------------------------------------------------------------------ plotting
    ("alt_text not a figure", lambda: book.plotting.alt.alt_text("fig"), Raises(TypeError, "fig")),
    (
        "plain_text not a string",
        lambda: book.plotting.alt.plain_text(3),
        Raises(TypeError, "label"),
    ),
    (
        "power_law no axes",
        lambda: book.plotting.depth.power_law(None, [[1, 2]], [[1, 2]]),
        Raises(TypeError, "ax"),
    ),
    (
        "power_law zero y",
        lambda: book.plotting.depth.power_law(_fig()[1], [[1, 2]], [[0, 2]]),
        Raises(ValueError, "positive"),
    ),
    (
        "attention_maps no axes",
        lambda: book.plotting.depth.attention_maps([None], [np.eye(2)], ["a"]),
        Raises(TypeError, "axes[0]"),
    ),
    (
        "attention_maps fewer titles",
        lambda: book.plotting.depth.attention_maps([_fig()[1]], [np.eye(2)], []),
        Raises(ValueError, "title"),
    ),
    ("code_version no path", lambda: rc.toy.code_version(), Raises(ValueError, "path")),
    (
        "code_version missing file",
        lambda: rc.toy.code_version("/nonexistent/x.py"),
        Raises(FileNotFoundError, "not a file"),
    ),
    (
        "ablation_panel no axes",
        lambda: book.plotting.depth.ablation_panel(None, {}),
        Raises(TypeError, "ax"),
    ),
    (
        "cubic_rate no axes",
        lambda: book.plotting.depth.cubic_rate(None, [1, 2], [1, 2]),
        Raises(TypeError, "ax"),
    ),
    (
        "curve_with_band no axes",
        lambda: book.plotting.drawings.curve_with_band(None, [1, 2], [[1, 2]]),
        Raises(TypeError, "ax"),
    ),
    (
        "fit_title not a string",
        lambda: book.plotting.drawings.fit_title(_fig()[1], 3),
        Raises(TypeError, "title"),
    ),
    (
        "length_distributions no rows",
        lambda: book.plotting.drawings.length_distributions([]),
        Raises(ValueError, "rows"),
    ),
    (
        "mlp_tradeoff lengths differ",
        lambda: book.plotting.drawings.mlp_tradeoff([1.0, 2.0], [1.0], [1.0], [1.0]),
        Raises(ValueError, "lam"),
    ),
    (
        "path_diagram L 0",
        lambda: book.plotting.drawings.path_diagram(0, 2, highlight=()),
        Raises(ValueError, "L"),
    ),
    (
        "rank_change_bars lengths differ",
        lambda: book.plotting.drawings.rank_change_bars([1, 2], [1]),
        Raises(ValueError, "after"),
    ),
    (
        "residual_vs_depth no axes",
        lambda: book.plotting.depth.residual_vs_depth(None, {}),
        Raises(TypeError, "ax"),
    ),
    (
        "check_figure not a figure",
        lambda: book.plotting.style.check_figure("fig"),
        Raises(TypeError, "fig"),
    ),
    (
        "figure_problems not a figure",
        lambda: book.plotting.style.figure_problems(None),
        Raises(TypeError, "fig"),
    ),
    (
        "fit_to_page column_inches 0",
        lambda: book.plotting.style.fit_to_page(_fig()[0], 0.0),
        Raises(ValueError, "column_inches"),
    ),
    (
        "integer_ticks axis bad",
        lambda: book.plotting.style.integer_ticks(_fig()[1], "z"),
        Raises(ValueError, "axis"),
    ),
    (
        "sequential_colours 0",
        lambda: book.plotting.style.sequential_colours(0),
        Raises(ValueError, "count"),
    ),
    (
        "spread_indices most 0",
        lambda: book.plotting.style.spread_indices(3, 0),
        Raises(ValueError, "most"),
    ),
    (
        "svg_bytes not a figure",
        lambda: book.plotting.style.svg_bytes("fig"),
        Raises(TypeError, "fig"),
    ),
    # ------------------------------------------------------------------ presets
    (
        "presets.get unknown chapter",
        lambda: book.presets.get("nochapter", "fast"),
        Raises(ValueError, "chapter"),
    ),
    (
        "presets.get seed 2**32",
        lambda: book.presets.get("paths", "fast", 2**32),
        Raises(ValueError, "seed"),
    ),
    ("resolve_mode bad", lambda: book.presets.resolve_mode("medium"), Raises(ValueError, "mode")),
    (
        "Draws.normal 10**6 x 10**4 x 10**4",
        lambda: book.presets.get("paths", "fast").stream().normal(10**6, 10**4, 10**4),
        Raises(ValueError, "shape", "GiB"),
    ),
    # ------------------------------------------------------------------ real
    (
        "ablation_config variant bad",
        lambda: rc.real.ablation.ablation_config(CFG, "half", "clean"),
        Raises(ValueError, "variant"),
    ),
    (
        "shared_san full not a SAN",
        lambda: rc.real.ablation.shared_san(None, CFG),
        Raises(TypeError, "full"),
    ),
    (
        "check_model not a model",
        lambda: rc.real.model.check_model("bert"),
        Raises(TypeError, "model"),
    ),
    ("local_copy unknown", lambda: rc.real.hub.local_copy("nomodel"), Raises(ValueError, "name")),
    (
        "torch_threads zero",
        lambda: rc.real.threads.torch_threads(0).__enter__(),
        Raises(ValueError, "torch threads"),
    ),
    (
        "check_condition bad",
        lambda: RC.check_condition("strict"),
        Raises(ValueError, "condition"),
    ),
    (
        "condition_details skip",
        lambda: RC.condition_details(SKIP, X[None]),
        Raises(ValueError, "skip"),
    ),
    (
        "condition_statistic det not details",
        lambda: RC.condition_statistic({}, "layer"),
        Raises(TypeError, "det"),
    ),
    (
        "bert convert not a BERT",
        lambda: RCV.bert.convert(None, "bert", torch.float64),
        Raises(TypeError, "model"),
    ),
    (
        "albert convert a GPT-2 config",
        lambda: RCV.albert.convert(
            types.SimpleNamespace(config=types.SimpleNamespace(model_type="gpt2")),
            "albert",
            torch.float64,
        ),
        Raises(TypeError, "model", "albert"),
    ),
    (
        "gpt2 convert not a model",
        lambda: RCV.gpt2.convert("gpt2", "gpt2", torch.float64),
        Raises(TypeError, "model"),
    ),
    (
        "transformers_config no config",
        lambda: RCV.common.transformers_config(object(), "bert"),
        Raises(TypeError, "model"),
    ),
    (
        "bert san_config not a config",
        lambda: RCV.bert.san_config(None, torch.float64),
        Raises(TypeError, "c"),
    ),
    (
        "bert embedding not embeddings",
        lambda: RCV.bert.embedding(torch.nn.Linear(2, 2), torch.float64),
        Raises(TypeError, "emb"),
    ),
    (
        "bert layer_weights no query",
        lambda: RCV.bert.layer_weights(None, None, None, None, None, None, 2, torch.float64),
        Raises(TypeError, "att"),
    ),
    (
        "activation_of unknown",
        lambda: RCV.common.activation_of("swish"),
        Raises(ValueError, "activation"),
    ),
    (
        "parameter not a tensor",
        lambda: RCV.common.parameter([1.0], torch.float64),
        Raises(TypeError, "t"),
    ),
    (
        "attention_weights H zero",
        lambda: RCV.common.attention_weights(
            *[torch.zeros(4, 4)] * 4, [None] * 4, 0, torch.float64
        ),
        Raises(ValueError, "H"),
    ),
    (
        "layernorm_weights not a LayerNorm",
        lambda: RCV.common.layernorm_weights("ln1", torch.nn.Linear(2, 2), torch.float64),
        Raises(TypeError, "ln"),
    ),
    (
        "linear not a Linear",
        lambda: RCV.common.linear(torch.nn.LayerNorm(2), torch.float64),
        Raises(TypeError, "lin"),
    ),
    (
        "mlp_and_norms proj not a Linear",
        lambda: RCV.common.mlp_and_norms(
            torch.nn.Linear(2, 3),
            torch.nn.LayerNorm(3),
            *[torch.nn.LayerNorm(2)] * 2,
            torch.float64,
        ),
        Raises(TypeError, "proj", "Linear"),
    ),
    (
        "mlp_and_norms ln2 not a LayerNorm",
        lambda: RCV.common.mlp_and_norms(
            torch.nn.Linear(2, 3), torch.nn.Linear(3, 2), torch.nn.LayerNorm(2), None, torch.float64
        ),
        Raises(TypeError, "ln2", "LayerNorm"),
    ),
    (
        "final_layernorm not a LayerNorm",
        lambda: RCV.common.final_layernorm(torch.nn.Linear(2, 2), torch.float64),
        Raises(TypeError, "ln"),
    ),
    (
        "from_transformers family bad",
        lambda: rc.real.convert.from_transformers(None, "t5", "t5-small"),
        Raises(ValueError, "family"),
    ),
    (
        "hub_problem name unknown",
        lambda: rc.real.hub.hub_problem("nomodel"),
        Raises(ValueError, "name"),
    ),
    ("hub_timeout negative", lambda: rc.real.hub.hub_timeout(-1), Raises(ValueError, "timeout")),
    ("lineup seed 2**70", lambda: rc.real.hub.lineup(HUGE_SEED), Raises(ValueError, "seed")),
    ("load unknown", lambda: rc.real.hub.load("nomodel"), Raises(ValueError, "name")),
    (
        "try_load pretrained 'yes'",
        lambda: rc.real.hub.try_load("bert-base-cased", "yes"),
        Raises(TypeError, "pretrained"),
    ),
    (
        "hidden_states not a model",
        lambda: rc.real.measure.hidden_states("model", torch.zeros(1, 3, dtype=torch.long)),
        Raises(TypeError, "model"),
    ),
    (
        "relative_residuals center bad",
        lambda: rc.real.measure.relative_residuals(X[None, None], center="median"),
        Raises(ValueError, "center"),
    ),
    (
        "residual_curve not a model",
        lambda: rc.real.measure.residual_curve("model", torch.zeros(1, 3, dtype=torch.long)),
        Raises(TypeError, "model"),
    ),
    (
        "residual_curves n_tokens 0",
        lambda: rc.real.measure.residual_curves([], 1, 0),
        Raises(ValueError, "n_tokens"),
    ),
    ("path_products no path", lambda: RP.path_products(_ATT, []), Raises(ValueError, "paths")),
    (
        "path_products layer out of range",
        lambda: RP.path_products(_ATT, [[(2, 0)]]),
        Raises(ValueError, "layer"),
    ),
    (
        "path_products not stochastic",
        lambda: RP.path_products(2 * _ATT, [[(0, 0)]]),
        Raises(ValueError, "attentions", "row-stochastic"),
    ),
    (
        "path_profile seed 5 * 10**6",
        lambda: RP.path_profile(_ATT, 2, seed=5 * 10**6).shape,
        Returns(lambda v: v == (2, 2), "accepted: derived seeds stay in range"),
    ),
    (
        "path_profile seed 2**32",
        lambda: RP.path_profile(_ATT, 2, seed=2**32),
        Raises(ValueError, "seed"),
    ),
    (
        "path_residuals rank1 zero products",
        lambda: RP.path_residuals(torch.zeros(2, 3, 3), "rank1"),
        Returns(lambda v: bool((v == 0).all()), "0 (a zero product has rank 0)"),
    ),
    (
        "sample_paths (real) length > n_layers",
        lambda: RP.sample_paths(2, 1, 3, 1),
        Raises(ValueError, "length"),
    ),
    ("spec unknown", lambda: rc.real.registry.spec("nomodel"), Raises(ValueError, "name")),
    (
        "real_skip_residuals n_seq 0",
        lambda: rc.real.skips.real_skip_residuals([], 0, 8),
        Raises(ValueError, "n_seq"),
    ),
    (
        "ablations n_tokens 0",
        lambda: rc.real.study.ablations([], 1, 0),
        Raises(ValueError, "n_tokens"),
    ),
    ("by_name missing", lambda: rc.real.study.by_name([], "bert"), Raises(KeyError, "bert")),
    (
        "centres not a model",
        lambda: rc.real.study.centres("model", 1, 8),
        Raises(TypeError, "model"),
    ),
    (
        "path_products_study seed 2**70",
        lambda: rc.real.study.path_products_study([], 1, 8, 2, HUGE_SEED),
        Raises(ValueError, "seed"),
    ),
    (
        "check_ids out of vocabulary",
        lambda: RT.check_ids(torch.tensor([[5]]), 3),
        Raises(ValueError, "texts_or_ids"),
    ),
    (
        "encode too_long bad",
        lambda: RT.encode(None, ["a"], too_long="cut"),
        Raises(ValueError, "too_long"),
    ),
    (
        "map_ids vocab_size 0",
        lambda: RT.map_ids(torch.tensor([1]), 0),
        Raises(ValueError, "vocab_size"),
    ),
    (
        "token_windows n_tokens 0",
        lambda: RT.token_windows(None, 1, 0),
        Raises(ValueError, "n_tokens"),
    ),
    (
        "xlnet convert not a model",
        lambda: importlib.import_module("rankcollapse.real.convert.xlnet").convert(
            None, "xlnet", torch.float64, torch.float32
        ),
        Raises(TypeError, "model"),
    ),
    # ------------------------------------------------------------------ toy
    (
        "rollout steps 0",
        lambda: rc.toy.circle.rollout(None, torch.zeros(2), -1),
        Raises(ValueError, "steps"),
    ),
    ("baselines not data", lambda: TD.baselines(None), Raises(TypeError, "data")),
    ("circle_pairs radius nan", lambda: TD.circle_pairs(10, NANF), Raises(ValueError, "radius")),
    (
        "convex_hull 10**6 sequences",
        lambda: TD.convex_hull(10**6, 10, seed=0),
        Raises(ValueError, "n_train", "points"),
    ),
    (
        "hull_labels 3-d points",
        lambda: TD.hull_labels(torch.rand(5, 3)),
        Raises(ValueError, "points", "(n, 2)"),
    ),
    ("memorization seed -1", lambda: TD.memorization(2, 8, seed=-1), Raises(ValueError, "seed")),
    (
        "memorization_ceiling not data",
        lambda: TD.memorization_ceiling(None),
        Raises(TypeError, "data"),
    ),
    (
        "sorting 10**6 x 10**4 sequences",
        lambda: TD.sorting(10**6, 1, 10**4, seed=0),
        Raises(ValueError, "n_train", "GiB"),
    ),
    ("all_path_terms not a SAN", lambda: TE.all_path_terms(None, X), Raises(TypeError, "san")),
    (
        "by_length lengths differ",
        lambda: TE.by_length([1.0, 2.0], [0]),
        Raises(ValueError, "lengths"),
    ),
    (
        "evaluate_paths seed 2**70",
        lambda: TE.evaluate_paths(_TOY_MODEL.twin(), _TOY_X, _TOY_Y, seed=HUGE_SEED),
        Raises(ValueError, "seed"),
    ),
    (
        "path_index wrong length",
        lambda: TE.path_index((0, 1), 2, True),
        Returns(lambda v: isinstance(v, int), "an index"),
    ),
    (
        "sample_paths (toy) generator 0",
        lambda: TE.sample_paths(2, 2, 1, 1, 1, 0),
        Raises(TypeError, "gen"),
    ),
    (
        "accuracy_by_length no axes",
        lambda: book.plotting.toy.accuracy_by_length(None, None, 0.5),
        Raises(TypeError, "ax"),
    ),
    (
        "loss_slices no axes",
        lambda: book.plotting.toy.loss_slices(None, None),
        Raises(TypeError, "ax"),
    ),
    (
        "merged_fraction no axes",
        lambda: book.plotting.toy.merged_fraction(None, {}, {}),
        Raises(TypeError, "ax"),
    ),
    (
        "per_path_residual no axes",
        lambda: book.plotting.toy.per_path_residual(None, [None]),
        Raises(TypeError, "ax"),
    ),
    (
        "profile no axes",
        lambda: book.plotting.toy.profile(None, None, None),
        Raises(TypeError, "ax"),
    ),
    (
        "single_paths no axes",
        lambda: book.plotting.toy.single_paths(None, None),
        Raises(TypeError, "ax"),
    ),
    (
        "training_dynamics no axes",
        lambda: book.plotting.toy.training_dynamics(None, None),
        Raises(TypeError, "axes"),
    ),
    (
        "trajectories no axes",
        lambda: book.plotting.toy.trajectories(None, None),
        Raises(TypeError, "ax"),
    ),
    (
        "standardise eps negative",
        lambda: rc.toy.model.standardise(X, -1.0),
        Raises(ValueError, "eps"),
    ),
    ("checkpoint_path seed -1", lambda: TT.checkpoint_path(_SORT, -1), Raises(ValueError, "seed")),
    (
        "official_steps unknown task",
        lambda: TT.official_steps("parity"),
        Raises(ValueError, "task"),
    ),
    ("task_data seed 2**70", lambda: TT.task_data(_SORT, HUGE_SEED), Raises(ValueError, "seed")),
    (
        "token_accuracy shapes",
        lambda: TT.token_accuracy(torch.zeros(2, 3, 4), torch.zeros(2, 2, dtype=torch.long)),
        Raises(ValueError, "y"),
    ),
    ("toy_config not a task", lambda: TT.toy_config("sorting", None), Raises(TypeError, "task")),
    ("train seed 2**70", lambda: TT.train(_SORT, HUGE_SEED), Raises(ValueError, "seed")),
    ("train_all workers 0", lambda: TT.train_all([], workers=0), Raises(ValueError, "workers")),
    # ------------------------------------------------------------------ dtypes and devices
    ("res float16", lambda: R.res(X.half()), Raises(TypeError, "X", "float16")),
    ("res bfloat16", lambda: R.res(X.bfloat16()), Raises(TypeError, "X", "bfloat16")),
    (
        "SAN forward meta tensor",
        lambda: PURE(torch.zeros(3, 4, device="meta")),
        Raises(ValueError, "X", "meta"),
    ),
    (
        "relative_residual near 1e308",
        lambda: R.relative_residual(
            torch.tensor([[1e308, -1e308], [0.0, 1e308]], dtype=torch.float64)
        ),
        Returns(finite, "finite (rescaled before the norms)"),
    ),
    (
        "attention_entropy not row-stochastic",
        lambda: PH.attention_entropy(2 * torch.eye(3)),
        Raises(ValueError, "P", "row-stochastic"),
    ),
    (
        "log_slope equal x",
        lambda: S.log_slope([1.0, 1.0], [1.0, 2.0]),
        Raises(ValueError, "x", "equal"),
    ),
    (
        "path_count 10**300 heads",
        lambda: P.path_count(10**5, 10**300, 10**5),
        Raises(ValueError, "H", "digits"),
    ),
    ("SAN seed 2**32", lambda: SAN(CFG, seed=2**32), Raises(ValueError, "seed", "4294967295")),
    (
        "ToyModel seed 2**32",
        lambda: rc.toy.ToyModel(_TOY_MODEL.config, seed=2**32),
        Raises(ValueError, "seed"),
    ),
    # ------------------------------------------------------------------ a held-out tester's calls
    (
        "sample_paths 10**10 paths",
        lambda: P.sample_paths(10, 2, 5, 10**10, generator=GEN),
        Raises(ValueError, "count", "cap", "fewer paths"),
    ),
    (
        "sample_paths count * L beyond the cap",
        lambda: P.sample_paths(10**6, 2, 5, 100, generator=GEN),
        Raises(ValueError, "count", "path entries", "cap"),
    ),
    (
        "sample_paths (real) 10**10 paths",
        lambda: RP.sample_paths(12, 12, 6, 10**10, seed=0),
        Raises(ValueError, "n_paths", "cap", "fewer paths"),
    ),
    (
        "simplex_tokens 10**6 tokens",
        lambda: LB.simplex_tokens(10**6, 10**6, 1.0),
        Raises(ValueError, "n", "GiB", "cap", "fewer tokens"),
    ),
    (
        "simplex_tokens 20000 tokens",
        lambda: LB.simplex_tokens(20000, 20000, 1.0),
        Raises(ValueError, "n", "GiB", "cap", "fewer tokens"),
    ),
    (
        "circle_pairs 10**11 points",
        lambda: TD.circle_pairs(10**11),
        Raises(ValueError, "n_points", "GiB", "cap", "fewer points"),
    ),
    (
        "sample_paths (toy) 10**9 draws",
        lambda: TE.sample_paths(10, 2, 5, 1000, 10**9, GEN),
        Raises(ValueError, "draws * k * L", "GiB", "cap"),
    ),
    (
        "sample_paths (toy) k 0",
        lambda: TE.sample_paths(10, 2, 5, 0, 1, GEN),
        Raises(ValueError, "k"),
    ),
    (
        "rank_one_distance 3 I",
        lambda: T.rank_one_distance(3 * torch.eye(3)),
        Raises(ValueError, "P", "row-stochastic"),
    ),
    (
        "rank_one_distance negative entry",
        lambda: T.rank_one_distance(torch.tensor([[1.5, -0.5], [0.5, 0.5]])),
        Raises(ValueError, "P", "non-negative"),
    ),
    (
        "scale_spread near 1e306",
        lambda: LN.scale_spread(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64) * 1e306),
        Returns(lambda v: abs(float(v) - 0.408248290463863) < 1e-12, "0.4082..., as at scale 1"),
    ),
    (
        "scale_spread near 1e-306",
        lambda: LN.scale_spread(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64) * 1e-306),
        Returns(lambda v: abs(float(v) - 0.408248290463863) < 1e-12, "0.4082..., as at scale 1"),
    ),
    (
        "geometric_mean NaN",
        lambda: S.geometric_mean(np.array([1.0, NANF, 2.0])),
        Raises(ValueError, "values", "finite"),
    ),
    (
        "geometric_mean inf",
        lambda: S.geometric_mean([1.0, math.inf]),
        Raises(ValueError, "values", "finite"),
    ),
    (
        "log_slope NaN x",
        lambda: S.log_slope([1.0, NANF], [1.0, 2.0]),
        Raises(ValueError, "x", "finite"),
    ),
    ("fmt_sci digits -1", lambda: book.fmt_sci(1.5, digits=-1), Raises(ValueError, "digits")),
    ("fmt_sci digits 1.5", lambda: book.fmt_sci(1.5, digits=1.5), Raises(TypeError, "digits")),
    (
        "fmt_sci digits 10**9",
        lambda: book.fmt_sci(1.5, digits=10**9),
        Raises(ValueError, "digits"),
    ),
    (
        "markdown_table empty header",
        lambda: book.markdown_table([], []),
        Raises(ValueError, "header"),
    ),
    (
        "standardise meta tensor",
        lambda: rc.toy.standardise(torch.empty(3, 4, device="meta")),
        Raises(ValueError, "Y", "meta"),
    ),
    (
        "standardise float16",
        lambda: rc.toy.standardise(X.half()),
        Raises(TypeError, "Y", "float16"),
    ),
    (
        "task_data task a string",
        lambda: TT.task_data("sorting", 0),
        Raises(TypeError, "task", "ToyTask"),
    ),
    # ------------------------------------------------ a held-out tester's calls (issue 32, round 2)
    (
        "attention_flow 3000 tokens x 10**5 steps",
        lambda: rc.later.particles.attention_flow(
            rc.later.particles.sphere_tokens(3000, 3, seed=0), 1.0, dt=0.01, steps=10**5
        ),
        Raises(ValueError, "steps", "multiply-adds", "cap", "fewer steps"),
    ),
    (
        "attention_flow states beyond memory",
        lambda: rc.later.particles.attention_flow(
            rc.later.particles.sphere_tokens(2, 2000, seed=0), 1.0, dt=0.01, steps=10**5
        ),
        Raises(ValueError, "steps", "GiB", "cap", "every"),
    ),
    (
        "lipschitz_lower_bound steps 10**9",
        lambda: LIP.lipschitz_lower_bound(torch.tanh, X, steps=10**9),
        Raises(ValueError, "steps", "<= 100000"),
    ),
    (
        "mlp_lipschitz steps x layers beyond the cap",
        lambda: LIP.mlp_lipschitz(MLP, X, steps=10**5),
        Raises(ValueError, "steps", "Adam steps", "cap"),
    ),
    (
        "depth_study (bound) samples 10**9",
        lambda: BS.depth_study(
            heads=[1],
            n_layers=4,
            d_model=8,
            n_tokens=4,
            init_scale=1.0,
            samples=10**9,
            seed=0,
            generator=GEN,
        ),
        Raises(ValueError, "samples", "cap"),
    ),
    (
        "depth_study (bound) 4e12 multiply-adds",
        lambda: BS.depth_study(
            heads=[4],
            n_layers=4000,
            d_model=64,
            n_tokens=64,
            init_scale=1.0,
            samples=1000,
            seed=0,
            generator=GEN,
        ),
        Raises(ValueError, "samples", "multiply-adds", "n_layers", "cap", "fewer samples"),
    ),
    (
        "regime_study samples 10**9",
        lambda: BS.regime_study(
            scales=[1.0],
            samples=10**9,
            n_layers=4,
            n_heads=1,
            d_model=8,
            n_tokens=4,
            seed=0,
            generator=GEN,
        ),
        Raises(ValueError, "samples", "cap"),
    ),
    (
        "delay_study 10**5 kept networks",
        lambda: BS.delay_study(
            BS.RegimeStudy(np.zeros((10**5, 6)), 4, 4),
            samples=1,
            n_heads=1,
            d_model=4,
            depth=10,
            seed=0,
            generator=GEN,
        ),
        Raises(ValueError, "samples", "layer passes", "cap"),
    ),
    (
        "tightness_study count 10**9",
        lambda: BS.tightness_study(10**9, seed=0),
        Raises(ValueError, "count", "cap"),
    ),
    (
        "centre_study samples 10**6",
        lambda: BS.centre_study(
            samples=10**6, n_layers=3, n_heads=1, d_model=4, n_tokens=4, seed=0, generator=GEN
        ),
        Raises(ValueError, "samples", "cap"),
    ),
    (
        "cubic_rate_study samples 10**9",
        lambda: CR.cubic_rate_study(
            samples=10**9, n_layers=4, n_heads=1, d_model=8, n_tokens=4, seed=0, generator=GEN
        ),
        Raises(ValueError, "samples", "cap"),
    ),
    (
        "delta_scaling_study samples 10**9",
        lambda: CR.delta_scaling_study(
            scales=[0.1, 0.2], samples=10**9, d_model=4, n_tokens=3, seed=0, generator=GEN
        ),
        Raises(ValueError, "samples", "cap"),
    ),
    (
        "check_runs 10**9 networks",
        lambda: OPS.check_runs(CFG, (3, 4), 10**9),
        Raises(ValueError, "samples", "cap"),
    ),
    (
        "check_runs n_layers 10**6",
        lambda: OPS.check_runs(SANConfig(n_layers=10**6), (3, 4), 1),
        Raises(ValueError, "n_layers"),
    ),
    (
        "relative_positions 10**8 positions",
        lambda: OPS.relative_positions(10**8, 512),
        Raises(ValueError, "n", "GiB", "cap"),
    ),
    (
        "allowed_keys window -3",
        lambda: OPS.allowed_keys(5, None, causal=False, window=-3),
        Raises(ValueError, "window", ">= 0"),
    ),
    (
        "layer_norm (ops) Y a list",
        lambda: OPS.layer_norm_sigma([[1.0, 2.0], [3.0, 4.0]], torch.ones(2), torch.zeros(2)),
        Raises(TypeError, "Y", "torch.Tensor"),
    ),
    (
        "all_path_terms 4^20 terms",
        lambda: TE.all_path_terms(
            SAN(SANConfig(n_layers=20, n_heads=3, d_model=8, skip=True), seed=0),
            torch.zeros(1, 4, 8, dtype=torch.float64),
        ),
        Raises(ValueError, "4^20", "paths", "MAX_PATHS", "decompose_by_length"),
    ),
    (
        "path_index head 5 of 2",
        lambda: TE.path_index((5,), 2),
        Raises(ValueError, "path[0]", "0 .. 1"),
    ),
    (
        "path_index head -1",
        lambda: TE.path_index((-1, 0), 2),
        Raises(ValueError, "path[0]", "negative"),
    ),
    (
        "path_index skip without skips",
        lambda: TE.path_index((None, 0), 2, skip=False),
        Raises(ValueError, "path[0]", "skip=False"),
    ),
    (
        "sample_paths (toy) indices beyond int64",
        lambda: TE.sample_paths(70, 1, 35, 2, 2, GEN),
        Raises(ValueError, "L=70", "H=1", "int64"),
    ),
    (
        "by_length negative lengths",
        lambda: TE.by_length([0.5, 0.6], [-1, -2]),
        Raises(ValueError, "lengths", "non-negative"),
    ),
    (
        "by_length empty",
        lambda: TE.by_length([], []),
        Raises(ValueError, "values", "lengths", "empty"),
    ),
    (
        "crossing x NaN",
        lambda: PH.crossing([1.0, NANF, 3.0], [0.1, 0.2, 0.9], 0.5),
        Raises(ValueError, "x", "finite"),
    ),
    (
        "crossing level 0",
        lambda: PH.crossing([1.0, 2.0, 3.0], [-1.0, 0.5, 1.0], 0.0),
        Raises(ValueError, "level", "> 0"),
    ),
    (
        "log_slope x near 1e300",
        lambda: S.log_slope([1e300, 2e300, 3e300], [1.0, 10.0, 100.0], base=10),
        Returns(lambda v: abs(v * 1e300 - 1) < 1e-9, "1e-300 decades per unit (fitted scale-free)"),
    ),
    (
        "log_slope x near 1e-300",
        lambda: S.log_slope([1e-300, 2e-300, 3e-300], [1.0, 10.0, 100.0], base=10),
        Returns(lambda v: abs(v / 1e300 - 1) < 1e-9, "1e300 decades per unit (fitted scale-free)"),
    ),
    (
        "depth_bound depths range(10**9)",
        lambda: LB.depth_bound(1.0, 1.0, 0.1, range(10**9)),
        Raises(ValueError, "depths", "GiB"),
    ),
    (
        "depth_bound b0 a string",
        lambda: LB.depth_bound("big", 1.0, 0.1, [1]),
        Raises(TypeError, "b0"),
    ),
    (
        "depth_bound omega None",
        lambda: LB.depth_bound(1.0, 1.0, None, [1]),
        Raises(TypeError, "omega"),
    ),
    (
        "fmt_sci_log10 a string",
        lambda: book.fmt_sci_log10("abc"),
        Raises(TypeError, "log10_value"),
    ),
    (
        "fmt_sci rounding into 10^3",
        lambda: book.fmt_sci(999.96),
        Returns(lambda v: v == "1.0 × 10³", "1.0 × 10³, not 1e+03"),
    ),
    (
        "geometric_mean negative value",
        lambda: S.geometric_mean([-1.0, 4.0]),
        Raises(ValueError, "values", "non-negative"),
    ),
]


# issue 45: the cubic-rate study's edges, and the path decomposition with several skip strengths
_STRENGTHS = rc.san.SANConfig(
    n_layers=3, n_heads=2, d_model=4, skip=True, bias=True, skip_strength=(0.5, 1.0, 2.0)
)


def _decomposed_minus_forward(layernorm: str, enumerate_: bool = False) -> float:
    """max |sum of the path terms + the constant - the forward| for a batch of 3 inputs, one
    skip strength each, with biases (the documented configuration of issue 45)."""
    model = rc.san.SAN(_STRENGTHS.replace(layernorm=layernorm), seed=0)
    X = torch.randn(3, 5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model(X).last_hidden_state
    if enumerate_:
        terms, constant = rc.paths.enumerate_paths(model, X, with_constant=True)
        total = sum(terms.values())
    else:
        terms, constant = rc.paths.decompose_by_length(model, X, with_constant=True)
        total = terms.sum(0)
    return float((total + constant - out).abs().max())


ROWS += [
    (
        "cubic_rate_study n_layers 2 (no slope from layer 2 on)",
        lambda: CR.cubic_rate_study(
            samples=1, n_layers=2, n_heads=1, d_model=4, n_tokens=3, seed=0, generator=GEN
        ),
        Raises(ValueError, "n_layers", ">= 3"),
    ),
    (
        "delta_scaling_study scales at float64's rounding",
        lambda: CR.delta_scaling_study(
            scales=[1e-9, 1e-8], samples=1, d_model=4, n_tokens=3, seed=0, generator=GEN
        ),
        Raises(ValueError, "scales", "rounding"),
    ),
    (
        "delta_scaling_study scales whose squares underflow",
        lambda: CR.delta_scaling_study(
            scales=[1e-200, 1e-100], samples=1, d_model=4, n_tokens=3, seed=0, generator=GEN
        ),
        Raises(ValueError, "scales", "float64"),
    ),
    *(
        (
            f"decompose_by_length with_constant, three skip strengths, biases, {ln} LayerNorm",
            lambda ln=ln: _decomposed_minus_forward(ln),
            Returns(lambda v: v < 1e-12, "the terms and the constant add up to the forward"),
        )
        for ln in ("none", "pre", "post")
    ),
    (
        "enumerate_paths with_constant, three skip strengths, biases",
        lambda: _decomposed_minus_forward("pre", enumerate_=True),
        Returns(lambda v: v < 1e-12, "the path terms and the constant add up to the forward"),
    ),
]

# ------------------------------------- the wave's new functions (pre-LN bound, real families)

_PRELN = SAN(CFG.replace(skip=True, layernorm="pre"), seed=0)
_COS = torch.ones(3, 2, dtype=torch.float64)
_IDS = torch.zeros(1, 3, dtype=torch.long)
LP, LT, AB, CVC = (
    rc.lower_bound_preln,
    rc.lower_bound_theorem,
    rc.real.ablation,
    importlib.import_module("rankcollapse.real.convert.common"),
)
NEOX, LLAMA, QWEN2 = (
    importlib.import_module(f"rankcollapse.real.convert.{m}")
    for m in ("gpt_neox", "llama", "qwen2")
)
DEP, DFIT, DSTUDY, FAM, PAR, STU, DCACHE = (
    importlib.import_module(f"rankcollapse.real.{m}")
    for m in ("depth", "depth_fit", "depth_study", "families", "parity", "study", "depth_cache")
)

# No row here builds a transformers model or imports transformers: each is refused first.
ROWS += [
    (
        "window_mixing_rate window 0",
        lambda: LM.window_mixing_rate(4, 0),
        Raises(ValueError, "window"),
    ),
    (
        "preln construction L 0",
        lambda: LP.construction(0, 4, 1.0, 1.0),
        Raises(ValueError, "L", ">= 1"),
    ),
    (
        "construction_step d 0",
        lambda: LP.construction_step(0, 1.0, 1.0),
        Raises(ValueError, "d", ">= 2"),
    ),
    ("layer_steps n 0", lambda: LP.layer_steps(_PRELN, 0), Raises(ValueError, "n", ">= 2")),
    (
        "preln_constants a post-LN model",
        lambda: LP.preln_constants(SKIP),
        Raises(ValueError, "model", "layernorm='pre'"),
    ),
    (
        "random_networks count 0 (checked at the first draw)",
        lambda: next(LP.random_networks(0, seed=0)),
        Raises(ValueError, "count", ">= 1"),
    ),
    ("residual_l2 1-D", lambda: LP.residual_l2(torch.ones(3)), Raises(ValueError, "X", "shape")),
    ("value_row_sums a string", lambda: LP.value_row_sums("m"), Raises(TypeError, "model", "SAN")),
    ("contraction n 0", lambda: LT.contraction(0.5, 0), Raises(ValueError, "n")),
    (
        "wide_lower_bound no skip",
        lambda: LT.wide_lower_bound(PURE, X),
        Raises(ValueError, "skip=True"),
    ),
    (
        "rms_norm_sigma gain of 3 features for 4",
        lambda: OPS.rms_norm_sigma(X, torch.ones(3, dtype=torch.float64)),
        Raises(ValueError, "gain", "4 features"),
    ),
    (
        "rotary_tables rotary 3",
        lambda: OPS.rotary_tables(4, 3),
        Raises(ValueError, "rotary", "even"),
    ),
    (
        "rotate x a list",
        lambda: OPS.rotate([1.0], _COS, _COS),
        Raises(TypeError, "x", "torch.Tensor"),
    ),
    (
        "rotate tables wider than x",
        lambda: OPS.rotate(X, torch.ones(3, 6), torch.ones(3, 6)),
        Raises(ValueError, "cos and sin", "at most"),
    ),
    ("reshaped_config a string", lambda: AB.reshaped_config("cfg"), Raises(TypeError, "config")),
    ("rope a dict", lambda: CVC.rope({}), Raises(TypeError, "c", "transformers configuration")),
    ("upcast 'yes'", lambda: CVC.upcast("yes", rms=True), Raises(TypeError, "as_transformers")),
    (
        "gpt_neox convert a string",
        lambda: NEOX.convert("m", "x", torch.float64),
        Raises(TypeError, "model", "gpt_neox"),
    ),
    (
        "gpt_neox san_config a string",
        lambda: NEOX.san_config("c", torch.float64),
        Raises(TypeError, "c", "GPTNeoXConfig"),
    ),
    (
        "llama convert a string",
        lambda: LLAMA.convert("m", "x", torch.float64),
        Raises(TypeError, "model", "llama"),
    ),
    (
        "llama network a string",
        lambda: LLAMA.network("m", "x", CFG),
        Raises(TypeError, "model", "llama"),
    ),
    (
        "llama san_config a string",
        lambda: LLAMA.san_config("c", torch.float64),
        Raises(TypeError, "c", "LlamaConfig"),
    ),
    (
        "qwen2 convert a string",
        lambda: QWEN2.convert("m", "x", torch.float64),
        Raises(TypeError, "model", "qwen2"),
    ),
    (
        "depth build unknown name",
        lambda: DEP.build("nosuch", 0),
        Raises(ValueError, "name", "gpt2"),
    ),
    (
        "deeper_layers unknown extension (checked at the first layer)",
        lambda: next(DEP.deeper_layers([{}], 2, "copy", 0)),
        Raises(ValueError, "extension", "'draw'"),
    ),
    (
        "depth_run a string",
        lambda: DEP.depth_run("m", _IDS, 0),
        Raises(TypeError, "model", "RealModel"),
    ),
    (
        "layer_theorem_constants n_heads 0",
        lambda: DEP.layer_theorem_constants({}, 0, 4),
        Raises(ValueError, "n_heads", ">= 1"),
    ),
    (
        "native_layers a string",
        lambda: DEP.native_layers("bert"),
        Raises(TypeError, "net", "Network"),
    ),
    (
        "extension_seed -1",
        lambda: DEP.extension_seed(-1),
        Raises(ValueError, "seed"),
    ),
    (
        "cached_run settings without a seed",
        lambda: DCACHE.cached_run({"name": "gpt2"}, lambda: None),
        Raises(ValueError, "settings", "'seed'"),
    ),
    (
        "run_path settings a list",
        lambda: DCACHE.run_path(["gpt2", 0]),
        Raises(ValueError, "settings"),
    ),
    (
        "initial_real_model hf not a model",
        lambda: FAM.initial_real_model("not a model", "bert", "bert", 0),
        Raises(TypeError, "hf", "bert"),
    ),
    (
        "initial_real_model unknown family",
        lambda: FAM.initial_real_model(None, "t5", "t5", 0),
        Raises(ValueError, "family"),
    ),
    (
        "fit_curve start -1",
        lambda: DFIT.fit_curve([1.0, 0.5, 0.25, 0.1], start=-1),
        Raises(ValueError, "start"),
    ),
    (
        "fit_forms lengths differ",
        lambda: DFIT.fit_forms([1, 2, 3], [1.0, 2.0]),
        Raises(ValueError, "layers and values"),
    ),
    (
        "depth_study n_seeds 0",
        lambda: DSTUDY.depth_study(["gpt2"], 0, 0, 1, 4),
        Raises(ValueError, "n_seeds", ">= 1"),
    ),
    (
        "families build unknown family",
        lambda: FAM.build("nosuch"),
        Raises(ValueError, "family", "gpt2"),
    ),
    ("depth_key unknown family", lambda: FAM.depth_key("nosuch"), Raises(ValueError, "family")),
    (
        "initial_real_model hf not a model of the family",
        lambda: FAM.initial_real_model(torch.nn.Linear(2, 2), "gpt2", "m", 0),
        Raises(TypeError, "hf", "gpt2"),
    ),
    (
        "native_config unknown family",
        lambda: FAM.native_config("nosuch"),
        Raises(ValueError, "family"),
    ),
    (
        "real_model depth_factor 0",
        lambda: FAM.real_model("gpt2", depth_factor=0),
        Raises(ValueError, "depth_factor"),
    ),
    ("repeated a string", lambda: FAM.repeated("net", 2), Raises(TypeError, "net", "Network")),
    (
        "transformers_classes unknown family",
        lambda: FAM.transformers_classes("nosuch"),
        Raises(ValueError, "family"),
    ),
    (
        "transformers_model depth_factor 0",
        lambda: FAM.transformers_model("gpt2", depth_factor=0),
        Raises(ValueError, "depth_factor", ">= 1"),
    ),
    (
        "layer_errors shapes differ",
        lambda: PAR.layer_errors(torch.ones(2, 3, 4), torch.ones(2, 3, 5)),
        Raises(ValueError, "got and want", "shape"),
    ),
    ("parity n_tokens 0", lambda: PAR.parity("gpt2", n_tokens=0), Raises(ValueError, "n_tokens")),
    (
        "applied_again a string",
        lambda: STU.applied_again("m", 2),
        Raises(TypeError, "model", "RealModel"),
    ),
    ("deeper_study no models", lambda: STU.deeper_study([], 2, 1, 4), Raises(ValueError, "models")),
    (
        "norm_sigma cfg a string",
        lambda: rc.san.norm_sigma("cfg", X, torch.ones(4)),
        Raises(TypeError, "cfg"),
    ),
    (
        "fisher_exact hits_a > n_a",
        lambda: TE.fisher_exact(5, 3, 1, 4),
        Raises(ValueError, "hits_a", "<= 3"),
    ),
]


def _run_guarded(call):
    """Run ``call`` in a thread: ``(result, error, seconds, peak memory growth in bytes)``."""
    box = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as err:  # noqa: BLE001  (reported below)
            box["error"] = err

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(LIMIT_S)
    elapsed = time.perf_counter() - start
    if thread.is_alive():
        pytest.fail(f"still running after {LIMIT_S:.0f} s")
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    return box.get("value"), box.get("error"), elapsed, grown


def _ids(rows):
    return [r.values[0] if hasattr(r, "values") else r[0] for r in rows]


@pytest.mark.parametrize("name, call, expected", ROWS, ids=_ids(ROWS))
def test_bad_call(name, call, expected):
    value, error, elapsed, grown = _run_guarded(call)
    assert elapsed < LIMIT_S
    assert grown < LIMIT_BYTES, f"peak memory grew by {grown / 2**30:.2f} GiB"
    if isinstance(expected, Raises):
        assert error is not None, f"expected {expected.type.__name__}, returned {value!r:.200}"
        assert isinstance(error, expected.type), (
            f"expected {expected.type.__name__}, got {type(error).__name__}: {error}"
        )
        for word in expected.words:
            assert word in str(error), f"message {str(error)!r} does not name {word!r}"
    else:
        assert error is None, f"expected {expected.what}, raised {type(error).__name__}: {error}"
        assert expected.predicate(value), f"expected {expected.what}, got {value!r:.200}"


def test_the_table_is_broad():
    """At least one row for every public function of the modules covered (a guard against drift)."""
    import inspect

    covered = " ".join(
        inspect.getsource(row.values[1] if hasattr(row, "values") else row[1]) for row in ROWS
    )
    for module in (rc.residual, rc.paths, rc.theory, rc.layernorm, rc.stats):
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not isinstance(obj, type):
                assert f".{name}(" in covered, f"no bad-input row calls {module.__name__}.{name}"


# -------------------------------------------------------------------------- coverage of the library

# Public functions with nothing to validate: no argument at all is found automatically (a
# function whose signature is empty); these take arguments only in a trivial sense.
NOTHING_TO_VALIDATE = {}


def _public_functions():
    """Every public function of the library: the functions in ``__all__`` of each module of
    ``rankcollapse`` (not the private ``_validate``/``_env``), each once (re-exports are the same
    object)."""
    import importlib
    import inspect
    import pkgutil

    found = {}
    for info in pkgutil.walk_packages(rc.__path__, "rankcollapse."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isfunction(obj) and obj.__module__.startswith("rankcollapse"):
                found.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return found


def _entered(call) -> set:
    """The code objects a row's ``call`` enters directly (through decorators such as
    ``torch.no_grad``)."""
    import sys

    top = call.__code__
    seen = set()

    def profile(frame, event, arg):
        if event != "call":
            return
        back = frame.f_back
        hops = 0
        while back is not None and hops < 3:
            if back.f_code is top:
                seen.add(frame.f_code)
                return
            if "rankcollapse" in back.f_code.co_filename:
                return
            back, hops = back.f_back, hops + 1

    sys.setprofile(profile)
    try:
        call()
    except Exception:  # noqa: BLE001  (the rows' errors are test_bad_call's business)
        pass
    finally:
        sys.setprofile(None)
    return seen


def test_every_public_function_has_a_row():
    """A row calls every public function of the library directly (``NOTHING_TO_VALIDATE`` aside, and
    functions without parameters), so each function's contract at its boundary is probed."""
    import inspect

    entered = set()
    for row in ROWS:
        values = row.values if hasattr(row, "values") else row
        entered |= _entered(values[1])
    missing = []
    for qualname, fn in sorted(_public_functions().items()):
        if qualname in NOTHING_TO_VALIDATE or not inspect.signature(fn).parameters:
            continue
        if inspect.unwrap(fn).__code__ not in entered:
            missing.append(qualname)
    assert not missing, f"{len(missing)} public functions have no bad-input row: {missing}"


# ------------------------------------------------------------------------ command-line entry points

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]

# (name, arguments after the interpreter, words the error output must contain). Each must exit
# with status 2 (an argparse-style usage error) within CLI_LIMIT_S, before doing any work.
CLI_ROWS = [
    ("tasks.py unknown command", ["tasks.py", "frobnicate"], ("unknown command", "frobnicate")),
    ("tasks.py grade without SUBMISSIONS_DIR", ["tasks.py", "grade"], ("SUBMISSIONS_DIR",)),
    (
        "tasks.py grade missing folder",
        ["tasks.py", "grade", "/nonexistent/subs"],
        ("SUBMISSIONS_DIR", "does not exist"),
    ),
    (
        "tasks.py grade --timeout -5",
        ["tasks.py", "grade", "/tmp", "--timeout", "-5"],
        ("timeout", "positive"),
    ),
    (
        "grader missing folder",
        ["-m", "booktools.grade", "/nonexistent/subs"],
        ("SUBMISSIONS_DIR", "does not exist"),
    ),
    (
        "grader --timeout abc",
        ["-m", "booktools.grade", "/tmp", "--timeout", "abc"],
        ("--timeout", "abc"),
    ),
    (
        "grader --format excel",
        ["-m", "booktools.grade", "/tmp", "--format", "excel"],
        ("--format", "excel"),
    ),
    (
        "booktools.status unknown option",
        ["-m", "booktools.status", "--frobnicate"],
        ("--frobnicate",),
    ),
    (
        "booktools.student --out inside a file",
        ["-m", "booktools.student", "--out", "/etc/passwd/x"],
        ("--out", "not a folder"),
    ),
    ("booktools.student unknown option", ["-m", "booktools.student", "--bogus"], ("--bogus",)),
    (
        "benchmarks/paths.py --repeat 0",
        ["benchmarks/paths.py", "--repeat", "0"],
        ("--repeat", ">= 1"),
    ),
    ("benchmarks/toy.py --epochs 0", ["benchmarks/toy.py", "--epochs", "0"], ("--epochs", ">= 1")),
    ("benchmarks/grade.py --jobs 0", ["benchmarks/grade.py", "--jobs", "0"], ("--jobs", ">= 1")),
    (
        "booktools.compare compare missing files",
        ["-m", "booktools.compare", "compare", "/nonexistent/a.json", "/nonexistent/b.json"],
        ("a.json", "no such file"),
    ),
    (
        "booktools.compare compare --rtol -1",
        [
            "-m",
            "booktools.compare",
            "compare",
            "/nonexistent/a.json",
            "/nonexistent/b.json",
            "--rtol",
            "-1",
        ],
        ("--rtol", ">= 0"),
    ),
    (
        "booktools.compare record --from missing folder",
        [
            "-m",
            "booktools.compare",
            "record",
            "/nonexistent/rec.json",
            "--chapters",
            "paths",
            "--from",
            "/nonexistent/nb",
        ],
        ("--from", "does not exist"),
    ),
]
CLI_LIMIT_S = 120  # tasks.py installs first (a no-op pip run when everything is present)


@pytest.mark.parametrize("name, args, words", CLI_ROWS, ids=[r[0] for r in CLI_ROWS])
def test_bad_command_line(name, args, words):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=CLI_LIMIT_S
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, f"exit status {proc.returncode}:\n{output[-2000:]}"
    for word in words:
        assert word in output, f"{word!r} not in the error output:\n{output[-2000:]}"


# issue 45: commands given bad files or arguments, run in this process (nothing starts: each
# must refuse before any work). A row is (name, make, words): ``make(tmp, monkeypatch)`` sets up
# the files and returns ``(main, argv)``; ``main(argv)`` must return 2 (or exit with 2) and say
# each of ``words`` in one line on stderr, without a traceback.

_HEADER_MD = "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"


def _subs(tmp):
    (tmp / "subs").mkdir()
    (tmp / "subs" / "a.md").write_text(_HEADER_MD)
    return tmp / "subs"


def _grade(*args):
    def make(tmp, monkeypatch):
        from booktools import grade

        subs = _subs(tmp)
        (tmp / "taken.csv").write_text("mine")
        (tmp / "out").mkdir()
        (tmp / "out" / "gradescope").write_text("mine")
        fill = {"SUBS": str(subs), "TMP": str(tmp)}
        return grade.main, [a.format(**fill) for a in args]

    return make


def _release(cff: str, changelog: str, *argv):
    def make(tmp, monkeypatch):
        from booktools import release

        (tmp / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0.2.0"\n')
        (tmp / "CITATION.cff").write_text(cff)
        (tmp / "CHANGELOG.md").write_text(changelog)
        return (lambda a: release.main(a, root=tmp)), list(argv)

    return make


_GOOD_CFF = 'cff-version: 1.2.0\nversion: 0.2.0\ndate-released: "2026-12-05"\n'
_CONFLICT = '{\n<<<<<<< HEAD\n  "chapters": {}\n=======\n  "chapters": {"x": {}}\n>>>>>>> b\n}\n'


def _status(tmp, monkeypatch):
    from booktools import status

    (tmp / "status.json").write_text(_CONFLICT)
    monkeypatch.setattr(status, "JSON_PATH", tmp / "status.json")
    monkeypatch.setattr(status, "TABLE_PATH", tmp / "table.md")
    return status.main, ["--render"]


def _compare(record, *argv):
    def make(tmp, monkeypatch):
        from booktools import compare

        good = {
            "mode": "fast",
            "seed": 0,
            "chapters": {"paths": {"glue": {}, "text": [], "figures": {}}},
        }
        (tmp / "good.json").write_text(json.dumps(good))
        (tmp / "bad.json").write_text(json.dumps(record))
        (tmp / "folder").mkdir()
        return compare.main, [a.format(TMP=str(tmp)) for a in argv]

    return make


def _autograder(tmp, monkeypatch):
    from booktools import grade_export

    (tmp / "taken").write_text("mine")
    return grade_export.main, ["gradescope-autograder", str(tmp / "taken")]


def _sheet(data: bytes, *words):
    def make(tmp, monkeypatch):
        from booktools import grade

        out = tmp / "graded"
        out.mkdir()
        state = {"version": 1, "formats": [], "assignments": {}, "submissions": []}
        (out / "grades.json").write_text(json.dumps(state))
        (tmp / "sheet.csv").write_bytes(data)
        return grade.main, ["--out", str(out), "--merge", str(tmp / "sheet.csv")]

    return make


_SHEET = "question,submission,student,max points,score,comment,answer\n"
COMMAND_ROWS = [
    *(
        (f"grade --timeout {t}", _grade("{SUBS}", "--timeout", t), ("--timeout", "finite", shown))
        for t, shown in (
            ("inf", "inf"),
            ("nan", "nan"),
            ("0", "0"),
            ("-5", "-5"),
            ("1e300", "1e+300"),
        )
    ),
    (
        "grade --out below a file",
        _grade("{SUBS}", "--out", "{TMP}/taken.csv/graded"),
        ("--out", "is below", "a file"),
    ),
    (
        "grade --out the submissions folder",
        _grade("{SUBS}", "--out", "{SUBS}"),
        ("--out", "the submissions folder itself"),
    ),
    (
        "grade --format gradescope with a file named gradescope in --out",
        _grade("{SUBS}", "--out", "{TMP}/out", "--format", "gradescope"),
        ("--out", "a file named gradescope"),
    ),
    ("gradescope-autograder DIR a file", _autograder, ("DIR", "is a file")),
    (
        "grade --merge a sheet saved in Windows-1252",
        _sheet((_SHEET + "ex-a,a.md,Zoë,3,1,très bien,\n").encode("cp1252")),
        ("sheet.csv", "not UTF-8", "CSV UTF-8"),
    ),
    (
        "grade --merge a sheet with a BOM (read: its columns found, its stray row refused)",
        _sheet(("\ufeff" + _SHEET + "ex-a,a.md,A,3,,,\nstray\n").encode()),
        ("sheet.csv, line 3", "fields"),
    ),
    (
        "grade --merge a note typed in a short row of its own",
        _sheet((_SHEET + "ex-a,a.md,A,3,,,\nlate: see my e-mail\n").encode()),
        ("sheet.csv, line 3", "fields"),
    ),
    (
        "release --check CITATION.cff invalid YAML",
        _release("cff-version: 1.2.0\nversion: [0.2.0\n", "## 0.2.0 (2026-12-05): x\n", "--check"),
        ("CITATION.cff", "not valid YAML", "line"),
    ),
    (
        "release --notes without an entry",
        _release(_GOOD_CFF, "# Changes\n", "--notes"),
        ("CHANGELOG.md", "no entry", "0.2.0"),
    ),
    (
        "status --render a merge conflict in status.json",
        _status,
        ("status.json", "merge-conflict", "line 2"),
    ),
    (
        "compare a malformed record",
        _compare(
            {"mode": "fast", "seed": 0, "chapters": {"paths": {"glue": [1]}}},
            "compare",
            "{TMP}/good.json",
            "{TMP}/bad.json",
        ),
        ("bad.json", "'glue'"),
    ),
    (
        "compare a folder as a record",
        _compare({}, "compare", "{TMP}/folder", "{TMP}/good.json"),
        ("folder", "a folder, not a record"),
    ),
    (
        "compare record into a folder",
        _compare({}, "record", "{TMP}/folder", "--chapters", "paths"),
        ("folder", "is a folder"),
    ),
    (
        "compare record --seed -1",
        _compare({}, "record", "{TMP}/r.json", "--chapters", "paths", "--seed", "-1"),
        ("--seed", "-1"),
    ),
]


@pytest.mark.parametrize("name, make, words", COMMAND_ROWS, ids=[r[0] for r in COMMAND_ROWS])
def test_bad_command_in_process(name, make, words, tmp_path, monkeypatch, capsys):
    main, argv = make(tmp_path, monkeypatch)
    start = time.perf_counter()
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    assert time.perf_counter() - start < LIMIT_S  # refused before any work
    err = capsys.readouterr().err
    assert code == 2, f"exit status {code}:\n{err[-2000:]}"
    assert "Traceback" not in err
    for word in words:
        assert word in err, f"{word!r} not in the error output:\n{err[-2000:]}"


def test_the_build_order_survives_a_conflicted_status_json(tmp_path, monkeypatch, capsys):
    """The book build orders its chapters by status.json's timings: a merge conflict left in it
    keeps the book's order, with a one-line warning naming the file (issue 45)."""
    from booktools import timings

    (tmp_path / "status.json").write_text(_CONFLICT)
    monkeypatch.setattr(timings, "STATUS_JSON", tmp_path / "status.json")
    runs = {"a": (ROOT / "chapters" / "paths.md", {"mode": "fast"}), "b": (ROOT / "x.md", {})}
    assert list(timings.longest_first(runs)) == ["a", "b"]
    err = capsys.readouterr().err
    assert "status.json" in err and "merge-conflict marker at line 2" in err
