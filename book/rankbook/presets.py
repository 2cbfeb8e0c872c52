"""Run sizes of every chapter: a ``fast`` mode (CI, papermill) and a ``full`` mode (the paper's scale).

A chapter's ``parameters`` cell holds ``mode`` and ``seed``; the next cell starts the chapter,
which asks this module for its sizes::

    run = book.start("paths", mode, seed)   # calls book.presets.get("paths", mode, seed)
    run.L, run.H, ...

so that no size is scattered through a chapter's cells. The environment variable
``RANKCOLLAPSE_MODE`` (``fast`` or ``full``), when set, overrides the chapter's ``mode``: the
test suite uses it to build the whole book quickly. The override is printed, never silent.

Also here: the shapes of real transformer architectures, for counting their paths.
"""

from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass

import torch

from rankcollapse._validate import (
    SEED_LIMIT,
    check_choice,
    check_dtype,
    check_elements,
    check_int,
    check_seed,
    derive_seed,
)
from rankcollapse.real.registry import MODELS

_REPR_WIDTH = 80  # characters: what a chapter's output box shows

__all__ = ["MODES", "ENV_VAR", "PRESETS", "ARCHITECTURES", "Run", "Draws", "get", "resolve_mode"]

MODES = ("fast", "full")
ENV_VAR = "RANKCOLLAPSE_MODE"

# chapter -> mode -> sizes. Keys are the names the chapters read; see each chapter for meaning.
PRESETS: dict[str, dict[str, dict]] = {
    "collapse": {
        # pure attention: residual against depth with the bound beside it (small weights),
        # the regime of 4 gamma beta H < sqrt(d_qk) over a grid of weight scales, the cubic rate,
        # the bound's tightness on random instances, mean against optimal residual (small n, d);
        # one layer's Delta against ||res X||^2 over residual scales (delta_scales), and the
        # attention maps of the first maps_L layers of a one-head network.
        "fast": dict(
            n=12,
            d=16,
            H=4,
            L=6,
            samples=4,
            small_scale=0.2,
            scales=(0.3, 1.0, 3.0, 8.0, 12.0, 20.0, 30.0),
            regime_L=6,
            regime_samples=2,
            tight_instances=300,
            opt_n=6,
            opt_d=4,
            opt_L=3,
            opt_samples=3,
            delta_scales=(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
            maps_L=4,
        ),
        "full": dict(
            n=32,
            d=64,
            H=8,
            L=8,
            samples=16,
            small_scale=0.2,
            scales=(0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0, 20.0, 25.0, 30.0, 40.0),
            regime_L=8,
            regime_samples=6,
            tight_instances=3000,
            opt_n=8,
            opt_d=6,
            opt_L=3,
            opt_samples=10,
            delta_scales=(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
            maps_L=4,
        ),
    },
    "skip": {
        # skip connections: families that keep the residual (depth up to 100), collapse with and
        # without skips at initialisation, the per-length decomposition, and the exploration of
        # the smallest residual ratio a random search finds at fixed weight scale; the explorer's
        # grid (depth, attention weight scale, skip strength: book.explorer.skip_strength_grid).
        "fast": dict(
            n=12,
            d=16,
            H=4,
            L=6,
            samples=4,
            family_L=100,
            explore_L=(1, 2, 4),
            explore_scale=0.5,
            explore_restarts=1,
            explore_steps=20,
            explorer_L=6,
            explorer_n=8,
            explorer_d=16,
            explorer_H=2,
            explorer_samples=2,
            explorer_scales=(0.2, 1.0, 4.0),
            explorer_strengths=(0.0, 0.5, 1.0),
        ),
        "full": dict(
            n=32,
            d=64,
            H=8,
            L=12,
            samples=16,
            family_L=100,
            explore_L=(1, 2, 4, 8, 16),
            explore_scale=0.5,
            explore_restarts=1,
            explore_steps=60,
            explorer_L=12,
            explorer_n=16,
            explorer_d=32,
            explorer_H=4,
            explorer_samples=3,
            explorer_scales=(0.1, 0.2, 0.5, 1.0, 2.0, 4.0),
            explorer_strengths=(0.0, 0.25, 0.5, 0.75, 1.0),
        ),
    },
    "lower_bound": {
        # the theorem's setting: n tokens of width d (d_qk = d), H heads, every head's
        # ||W_QK||_inf <= q and ||W_h||_inf <= omega (Omega = H omega = 0.3), inputs with
        # ||res(X)||_inf = b0; the construction to depth con_L, its exponent fitted from depth
        # fit_from on; the bound checked on check_networks random networks in the regime; the
        # search (depths, restarts, Adam steps); outside the regime: the search at omega_mid
        # (Omega = 0.75) over mid_depths, the grow-then-cancel network up to depth grow_L, the
        # one-layer example's query/key scales unbounded_t; where the pure theorem bites: the
        # construction with ||W_QK|| = bite_q on inputs of composite residual 1, depth bite_L.
        "fast": dict(
            n=4,
            d=8,
            H=2,
            q=4.0,
            omega=0.15,
            b0=8.0,
            con_L=1024,
            fit_from=16,
            check_networks=10000,
            search_depths=(1, 2, 4, 8, 16),
            restarts=8,
            steps=30,
            omega_mid=0.375,
            mid_depths=(1, 2, 4, 8, 16),
            grow_L=8,
            unbounded_t=(1.0, 10.0, 100.0, 1000.0, 10000.0),
            bite_q=1.0,
            bite_L=6,
        ),
        "full": dict(
            n=4,
            d=8,
            H=2,
            q=4.0,
            omega=0.15,
            b0=8.0,
            con_L=1024,
            fit_from=16,
            check_networks=10000,
            search_depths=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            restarts=16,
            steps=60,
            omega_mid=0.375,
            mid_depths=(1, 2, 4, 8, 16, 32, 64),
            grow_L=8,
            unbounded_t=(1.0, 10.0, 100.0, 1000.0, 10000.0),
            bite_q=1.0,
            bite_L=6,
        ),
    },
    "limits": {
        # what the theorem does not say: the convergence condition on real weights,
        # two meanings of rank collapse and the other accounts, on one small training run.
        "fast": dict(
            # the condition on real weights: models (fast: three of the registry), sequences x
            # tokens of real text, sequences for the shrink search and the attention entropies
            cond_models=("all-MiniLM-L6-v2", "bert-base-cased", "gpt2"),
            cond_seq=2,
            cond_tokens=32,
            cond_rescale_seq=1,
            cond_entropy_seq=1,
            # sorting trained with and without skips (dyn_task: ToyTask fields), weights kept at
            # dyn_checkpoints epochs, tokens measured on dyn_probe held-out sequences, from dyn_seeds
            # seeds (seed, seed + 1, ...; section 2 shows the first); loss slices along
            # slice_directions filter-normalised directions at slice_points steps in [-1, 1], on slice_n
            # training sequences, summarised at +-slice_radius
            dyn_task=dict(
                n_layers=4,
                n_heads=2,
                d_model=16,
                seq_len=8,
                vocab=10,
                n_train=300,
                n_eval=40,
                epochs=6,
                batch=50,
                lr=3e-3,
            ),
            dyn_checkpoints=4,
            dyn_probe=16,
            dyn_seeds=3,
            slice_directions=2,
            slice_points=11,
            slice_n=64,
            slice_radius=0.5,
        ),
        "full": dict(
            cond_models=(
                "all-MiniLM-L6-v2",
                "bert-base-cased",
                "albert-base-v2",
                "xlnet-base-cased",
                "gpt2",
            ),
            cond_seq=4,
            cond_tokens=128,
            cond_rescale_seq=2,
            cond_entropy_seq=2,
            dyn_task=dict(
                n_layers=6,
                n_heads=2,
                d_model=48,
                seq_len=8,
                vocab=10,
                n_train=1000,
                n_eval=200,
                epochs=25,
                batch=50,
                lr=1e-3,
            ),
            dyn_checkpoints=6,
            dyn_probe=32,
            dyn_seeds=3,
            slice_directions=3,
            slice_points=21,
            slice_n=256,
            slice_radius=0.5,
        ),
    },
    "later": {
        # five later results, each reproduced small: gradients and masks, the
        # skip strength, the two collapses and the particles. Statements about depth are
        # measured at three depths spanning a factor 4 (grad_depths, lam_depths, phase_depth).
        "fast": dict(
            # gradients (section 1): depths (the deepest is drawn), tokens, width, heads, networks
            grad_depths=(6, 12, 24),
            grad_n=12,
            grad_d=16,
            grad_H=2,
            grad_samples=2,
            # masks (section 2): depth, tokens, width, heads, networks, sliding window (tokens)
            mask_L=32,
            mask_n=12,
            mask_d=16,
            mask_H=2,
            mask_samples=2,
            mask_window=2,
            # LayerNorm's equilibria (section 2): cube ranks, width, depth, attention sharpness, start noise
            ln_ranks=(3, 4, 5, 6),
            ln_d=8,
            ln_L=60,
            ln_beta=8.0,
            ln_noise=0.1,
            # lam: lambda-skip networks (rc.later.lam.lambda_study), read at the depths lam_depths
            # (the deepest is n_layers); phase: the query/key scale by skip strength grid
            # (rc.later.phases.phase_study); phase_depth: the same networks and inputs continued
            # to the depths (rc.later.phases.depth_study; the first depth is phase's n_layers,
            # the scales are phase's smallest and largest, the sizes are phase's); particle: the
            # attention flow on the sphere (rc.later.particles.particle_study)
            lam=dict(
                lambdas=(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
                n_layers=16,
                n_heads=2,
                d_model=16,
                n_tokens=8,
                samples=3,
            ),
            lam_depths=(4, 8, 16),
            phase=dict(
                scales=(0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
                strengths=(0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
                n_layers=8,
                n_heads=2,
                d_model=16,
                n_tokens=8,
                samples=3,
            ),
            phase_depth=dict(
                depths=(8, 16, 32),
                scales=(0.0, 16.0),
                strengths=(0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0),
                ratios=(0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.8, 1.0),
                n_heads=2,
                d_model=16,
                n_tokens=8,
                samples=3,
            ),
            particle=dict(n=24, d=3, betas=(1.0, 4.0, 9.0, 16.0, 25.0), T=30.0, dt=0.02, every=25),
        ),
        "full": dict(
            grad_depths=(8, 16, 32),
            grad_n=32,
            grad_d=64,
            grad_H=4,
            grad_samples=8,
            mask_L=48,
            mask_n=32,
            mask_d=64,
            mask_H=4,
            mask_samples=8,
            mask_window=3,
            ln_ranks=(3, 4, 5, 6),
            ln_d=8,
            ln_L=60,
            ln_beta=8.0,
            ln_noise=0.1,
            lam=dict(
                lambdas=(
                    0.01,
                    0.02,
                    0.05,
                    0.1,
                    0.15,
                    0.2,
                    0.3,
                    0.5,
                    0.7,
                    1.0,
                    1.5,
                    2.0,
                    3.0,
                    5.0,
                    10.0,
                ),
                n_layers=48,
                n_heads=2,
                d_model=32,
                n_tokens=16,
                samples=8,
            ),
            lam_depths=(12, 24, 48),
            phase=dict(
                scales=(0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0, 32.0),
                strengths=(0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0),
                n_layers=12,
                n_heads=2,
                d_model=32,
                n_tokens=16,
                samples=8,
            ),
            phase_depth=dict(
                depths=(12, 24, 48),
                scales=(0.0, 32.0),
                strengths=(0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0),
                ratios=(0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.8, 1.0),
                n_heads=2,
                d_model=32,
                n_tokens=16,
                samples=8,
            ),
            particle=dict(
                n=48, d=3, betas=(1.0, 2.0, 4.0, 9.0, 16.0, 25.0), T=60.0, dt=0.01, every=50
            ),
        ),
    },
    "toy_tasks": {
        # the paper's toy tasks (sorting, convex hull, memorization: ToyTask fields), trained with
        # skips and post-LayerNorm from n_seeds seeds (seed, seed + 1, ...), networks missing from
        # the cache trained `workers` at a time (processes, one thread each), every path evaluated;
        # n_sampled: the first sequences on which every single path, the draws of ks random paths
        # (draws times), the per-length profile and, for comparison, the sums of all paths are
        # evaluated (the sums also on every sequence); circle: the one-layer circle toy, trained
        # from circle_seeds seeds (whether its pair merges depends on the run) and rolled out for
        # `steps`.
        "fast": dict(
            tasks=dict(
                sorting=dict(
                    n_layers=4,
                    n_heads=2,
                    d_model=16,
                    seq_len=8,
                    vocab=10,
                    n_train=300,
                    n_eval=40,
                    epochs=6,
                    batch=50,
                    lr=3e-3,
                ),
                convex_hull=dict(
                    n_layers=4,
                    n_heads=3,
                    d_model=24,
                    seq_len=10,
                    n_train=400,
                    n_eval=40,
                    epochs=3,
                    batch=50,
                    lr=3e-3,
                    weight_decay=1e-3,
                ),
                memorization=dict(
                    n_layers=4,
                    n_heads=2,
                    d_model=32,
                    seq_len=32,
                    n_train=6,
                    n_eval=6,
                    epochs=20,
                    batch=3,
                    lr=1e-3,
                    schedule="linear",
                ),
            ),
            # sorting again with the official optimiser (Adam, lr 1e-5, batches of 30), here for
            # as many epochs as above: too few steps to learn, it only exercises the code
            official_sorting=dict(
                n_layers=4,
                n_heads=2,
                d_model=16,
                seq_len=8,
                vocab=10,
                n_train=300,
                n_eval=40,
                epochs=6,
                batch=30,
                lr=1e-5,
            ),
            n_seeds=3,
            workers=1,
            n_sampled=dict(sorting=40, convex_hull=20, memorization=6),
            ks=(5, 20),
            draws=50,
            circle=dict(
                n_layers=1,
                n_heads=2,
                d_model=16,
                seq_len=2,
                n_train=200,
                n_eval=1,
                epochs=10,
                batch=20,
                lr=3e-3,
            ),
            circle_seeds=3,
            steps=60,
        ),
        "full": dict(
            tasks=dict(
                sorting=dict(
                    n_layers=6,
                    n_heads=2,
                    d_model=48,
                    seq_len=8,
                    vocab=10,
                    n_train=1000,
                    n_eval=200,
                    epochs=25,
                    batch=50,
                    lr=1e-3,
                ),
                convex_hull=dict(
                    n_layers=6,
                    n_heads=3,
                    d_model=84,
                    seq_len=10,
                    n_train=10000,
                    n_eval=300,
                    epochs=4,
                    batch=100,
                    lr=1e-3,
                    weight_decay=1e-3,
                ),
                memorization=dict(
                    n_layers=6,
                    n_heads=2,
                    d_model=250,
                    seq_len=128,
                    n_train=32,
                    n_eval=32,
                    epochs=50,
                    batch=8,
                    lr=3e-4,
                    schedule="linear",
                ),
            ),
            # the official code's sorting run, optimiser and all (rc.toy.OFFICIAL["sorting"])
            official_sorting=dict(
                n_layers=6,
                n_heads=2,
                d_model=48,
                seq_len=8,
                vocab=10,
                n_train=1000,
                n_eval=200,
                epochs=65,
                batch=30,
                lr=1e-5,
            ),
            n_seeds=3,
            workers=2,
            n_sampled=dict(sorting=200, convex_hull=50, memorization=8),
            ks=(5, 20),
            draws=50,
            circle=dict(
                n_layers=1,
                n_heads=2,
                d_model=32,
                seq_len=2,
                n_train=1000,
                n_eval=1,
                epochs=70,
                batch=30,
                lr=1e-3,
            ),
            circle_seeds=10,
            steps=300,
        ),
    },
    "real_models": {
        # the paper's Figure 2 on real transformers: n_seq windows of n_tokens tokens of the
        # book's prose; every model, variant and surgery; the optimal centre (an LP per matrix,
        # about 1 s at 32 x 384) on MiniLM for opt_seq windows of opt_tokens tokens; products of
        # attention matrices along n_paths random paths per length on path_seq sequences.
        "fast": dict(
            n_seq=4, n_tokens=48, batch=4, opt_seq=1, opt_tokens=16, path_seq=1, n_paths=10
        ),
        "full": dict(
            n_seq=32, n_tokens=128, batch=16, opt_seq=2, opt_tokens=32, path_seq=4, n_paths=30
        ),
    },
    "paths": {
        # verify the path decomposition by enumeration on a small SAN; per-length contributions
        # of a SAN with skips at initialisation at BERT-base's shape (full) or a small one
        # (fast), beside per_path random paths of each length.
        "fast": dict(
            enum_L=3,
            enum_H=2,
            enum_n=8,
            enum_d=16,
            L=6,
            H=4,
            n=32,
            d=64,
            samples=2,
            per_path=8,
            check_trials=5,
        ),
        "full": dict(
            enum_L=4,
            enum_H=3,
            enum_n=16,
            enum_d=32,
            L=12,
            H=12,
            n=128,
            d=768,
            samples=8,
            per_path=8,
            check_trials=20,
        ),
    },
    "mlp": {
        # sweep of the MLP's scale (and so of its Lipschitz constant) on one SAN+MLP: collapse,
        # sensitivity to input perturbations and gradient variance on the same models.
        "fast": dict(
            L=4,
            H=2,
            d=16,
            n=16,
            hidden=64,
            scales=(0.5, 1.0, 1.5, 2.0, 3.0),
            samples=4,
            directions=4,
            grad_samples=8,
            lip_steps=20,
            lip_points=2,
            eps=1e-4,
        ),
        "full": dict(
            L=6,
            H=2,
            d=32,
            n=32,
            hidden=128,
            scales=(0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0),
            samples=16,
            directions=16,
            grad_samples=32,
            lip_steps=50,
            lip_points=4,
            eps=1e-4,
        ),
    },
    "layernorm": {
        # collapse with no / post / pre LayerNorm on the same weights; rank before and after LN on
        # random low-rank inputs; the paper's rewriting layer by layer; the balanced construction.
        "fast": dict(
            L=6,
            H=2,
            d=16,
            n=16,
            samples=4,
            rank_trials=200,
            rank_n=12,
            rank_d=10,
            uniform_eps=1e-5,
            noises=(0.0, 1e-3, 1e-1),
        ),
        "full": dict(
            L=10,
            H=4,
            d=64,
            n=64,
            samples=16,
            rank_trials=2000,
            rank_n=24,
            rank_d=16,
            uniform_eps=1e-5,
            noises=(0.0, 1e-3, 1e-1),
        ),
    },
}


@dataclass(frozen=True)
class Architecture:
    """Layer and head counts of a real transformer (one attention stack)."""

    name: str
    n_layers: int
    n_heads: int
    note: str


# Shapes from each model's paper or released configuration: the models of the registry of real
# transformers (rankcollapse.real.registry, plain data) and three larger shapes only counted here.
# Only attention paths are counted, as in the paper: MLP sub-layers, which also sit on skip
# connections, are not branches here.
ARCHITECTURES = tuple(
    Architecture(s.architecture, s.n_layers, s.n_heads, s.note)
    for s in (MODELS[name] for name in ("bert-base-cased", "albert-base-v2", "gpt2"))
) + (
    Architecture("BERT-large", 24, 16, "Devlin et al. 2019"),
    Architecture("T5-11B encoder", 24, 128, "Raffel et al. 2020; very wide: 128 heads"),
    Architecture("GPT-3 175B", 96, 96, "Brown et al. 2020; very deep: 96 layers"),
)


def resolve_mode(mode: str) -> str:
    """``mode`` after the ``RANKCOLLAPSE_MODE`` override, checked to be ``"fast"`` or ``"full"``."""
    check_choice("mode", mode, MODES)
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        check_choice(ENV_VAR, override, MODES)
        if override != mode:
            print(f"{ENV_VAR}={override} overrides mode={mode!r} from the parameters cell")
        return override
    return mode


class Draws:
    """A chapter's seeded random inputs: one torch generator seeded with ``seed``.

    ``gen = run.stream()`` (or ``run.stream(1)`` for a second, independent stream) in a chapter,
    then ``gen.normal(n, d)``, ``gen.uniform(d)``, ``gen.integer(1, r)``: each call continues
    the same stream, so a chapter's inputs depend on its seed alone and a chapter needs no
    ``import torch``. ``gen.generator`` is the ``torch.Generator`` itself, for library functions
    that take one (``rc.theory.unit_residual_tokens(n, d, generator=gen.generator)``).
    """

    def __init__(self, seed: int):
        self.seed = check_seed("seed", seed)
        self.generator = torch.Generator().manual_seed(self.seed)

    @staticmethod
    def _shape(shape) -> tuple[int, ...]:
        if not shape:
            raise ValueError("shape must give at least one dimension, got none")
        shape = tuple(check_int(f"shape[{i}]", s) for i, s in enumerate(shape))
        check_elements(
            "shape", math.prod(shape), alternative="draw fewer samples or smaller tensors"
        )
        return shape

    def normal(self, *shape: int, dtype=torch.float64) -> torch.Tensor:
        """Standard normal entries, a tensor of ``shape`` (float64 unless ``dtype`` says otherwise)."""
        return torch.randn(
            self._shape(shape), dtype=check_dtype("dtype", dtype), generator=self.generator
        )

    def uniform(self, *shape: int, dtype=torch.float64) -> torch.Tensor:
        """Entries uniform in ``[0, 1)``, a tensor of ``shape``."""
        return torch.rand(
            self._shape(shape), dtype=check_dtype("dtype", dtype), generator=self.generator
        )

    def integer(self, low: int, high: int) -> int:
        """One integer uniform in ``low..high``, both included."""
        low = check_int("low", low, minimum=-(2**62))
        high = check_int("high", high, minimum=low)
        return int(torch.randint(low, high + 1, (1,), generator=self.generator))

    def __repr__(self):
        return f"Draws(seed={self.seed})"


class Run:
    """A chapter's run: its ``mode``, ``seed`` and sizes, read as attributes (``run.L``)."""

    def __init__(self, chapter: str, mode: str, seed: int, sizes: dict):
        # a size read as run.<name> must not be hidden by one of Run's own attributes (a preset's
        # "draws" was once shadowed by a method of that name and reached the chapter as a method)
        hidden = sorted(
            k for k in sizes if hasattr(type(self), k) or k in ("chapter", "mode", "seed")
        )
        if hidden:
            raise ValueError(
                f"preset {chapter!r}: sizes {hidden} would be hidden by Run's own attributes; rename them"
            )
        self.chapter, self.mode, self.seed = chapter, mode, seed
        self._sizes = dict(sizes)

    def __getattr__(self, name):
        sizes = self.__dict__.get("_sizes", {})
        if name in sizes:
            return sizes[name]
        raise AttributeError(
            f"preset {self.__dict__.get('chapter')!r} has no size {name!r}; it has {sorted(sizes)}"
        )

    def as_dict(self) -> dict:
        return dict(self._sizes)

    def stream(self, offset: int = 0) -> Draws:
        """The chapter's seeded random inputs, a :class:`Draws` seeded with ``seed + offset``.

        Streams with different offsets are independent; the same offset always starts the same
        stream (``run.stream(1).normal(samples, n, d)`` is the same tensor on every run).
        """
        offset = check_int("offset", offset, minimum=0, maximum=SEED_LIMIT - 1)
        return Draws(derive_seed(self.seed, offset))  # reduced modulo 2**32, inside the seed range

    def __repr__(self):
        sizes = ", ".join(f"{k}={v}" for k, v in self._sizes.items())
        head = f"Run({self.chapter!r}, mode={self.mode!r}, seed={self.seed}:"
        if len(head) + len(sizes) + 2 <= _REPR_WIDTH:
            return f"{head} {sizes})"
        # wrapped, so that a chapter's output box shows every size without scrolling
        body = textwrap.fill(
            sizes,
            width=_REPR_WIDTH,
            initial_indent="    ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        return f"{head}\n{body})"


def get(chapter: str, mode: str = "full", seed: int = 0) -> Run:
    """The sizes of ``chapter`` in ``mode`` (``"fast"`` or ``"full"``), with ``seed``.

    Unknown chapters or modes and seeds outside ``0 <= seed < 2**32`` raise here, before any work.
    """
    check_choice("chapter", chapter, tuple(PRESETS))
    seed = check_seed("seed", seed)
    mode = resolve_mode(mode)
    return Run(chapter, mode, seed, PRESETS[chapter][mode])
