"""Sizes of the chapters that go beyond the paper (the book's lower bound, the limits of the
theorem, later results): chapter -> mode -> sizes.

Keys are the names the chapters read (``run.<name>``); see each chapter for their meaning. The
run machinery that serves them is :mod:`rankbook.presets`.
"""

SIZES: dict[str, dict[str, dict]] = {
    "at_depth": {
        # the registry's models at initialisation through factors x their own depth: seeds
        # (derived from the run's seed), n_texts windows of n_tokens tokens of the book's essays;
        # fast mode narrows every model to width d_model with n_heads heads (MLP 4 d_model) and
        # runs in float64 throughout; full mode keeps the published sizes and runs the blocks
        # with skips and LayerNorm (full, flipped, scaled) in float32. "llama" is SmolLM2-135M's
        # configuration, "gpt_neox" Pythia-70M's (rc.real.families); fast mode builds the
        # Llama-style model with 12 layers instead of its 30.
        "fast": dict(
            names=(
                "bert-base-cased",
                "albert-base-v2",
                "xlnet-base-cased",
                "gpt2",
                "llama",
                "gpt_neox",
            ),
            layers={"llama": 12},
            n_seeds=3,
            n_texts=3,
            n_tokens=16,
            factors=(1, 2, 4, 8),
            d_model=64,
            n_heads=4,
            float32=(),
        ),
        "full": dict(
            names=(
                "bert-base-cased",
                "albert-base-v2",
                "xlnet-base-cased",
                "gpt2",
                "llama",
                "gpt_neox",
            ),
            layers={},
            n_seeds=3,
            n_texts=3,
            n_tokens=32,
            factors=(1, 2, 4, 8),
            d_model=None,
            n_heads=None,
            float32=("full", "flipped", "scaled"),
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
        # Section 7 (Omega < 1): wide_networks random networks with Omega up to 1; the search at
        # n = 2 with Omega in wide_omegas over wide_depths. Section 8 (pre-LN): the step at the
        # standard initialisations of widths preln_widths on preln_n tokens; the antipodal
        # construction (width preln_d, omega, a) started preln_steps steps above 0, to depth
        # preln_L, beside preln_random random pre-LN networks; the bound checked on random pre-LN
        # networks, (count, largest depth) per entry of preln_check. At realistic scale (section 3):
        # a layer of width real_d (heads of 64) at the library's initialisation, its value maps
        # scaled to Omega = real_Omega, real_n Gaussian tokens, the bounds at depth real_L. The
        # figures of sections 5 and 7: lb_random random networks at the weight bounds, to con_L.
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
            wide_networks=1000,
            wide_depths=(1, 2, 4, 8),
            wide_omegas=(0.6, 0.9),
            preln_n=8,
            preln_widths=(64, 256),
            preln_d=8,
            preln_omega=0.3,
            preln_a=2.0,
            preln_steps=6,
            preln_L=256,
            preln_random=3,
            preln_check=((2000, 16),),
            real_d=256,
            real_L=12,
            real_n=128,
            real_Omega=0.25,
            lb_random=3,
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
            restarts=12,
            steps=60,
            omega_mid=0.375,
            mid_depths=(1, 2, 4, 8, 16, 32, 64),
            grow_L=8,
            unbounded_t=(1.0, 10.0, 100.0, 1000.0, 10000.0),
            bite_q=1.0,
            bite_L=6,
            wide_networks=10000,
            wide_depths=(1, 2, 4, 8, 16, 32, 64),
            wide_omegas=(0.6, 0.9),
            preln_n=8,
            preln_widths=(64, 128, 256, 512, 768),
            preln_d=8,
            preln_omega=0.3,
            preln_a=2.0,
            preln_steps=6,
            preln_L=1024,
            preln_random=5,
            preln_check=((9500, 16), (500, 256)),
            real_d=768,
            real_L=12,
            real_n=128,
            real_Omega=0.25,
            lb_random=8,
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
            # dyn_checkpoints epochs, tokens measured on dyn_probe held-out sequences, from
            # dyn_seeds
            # seeds (seed, seed + 1, ...; section 2 shows the first); loss slices along
            # slice_directions filter-normalised directions at slice_points steps in [-1, 1], on
            # slice_n
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
            # masks (section 2): depth, tokens, width, heads, networks, sliding window (tokens);
            # deep enough (four times the 32 and 48 layers measured before) for the causal window
            # to collapse within the run
            mask_L=128,
            mask_n=12,
            mask_d=16,
            mask_H=2,
            mask_samples=2,
            mask_window=2,
            # LayerNorm's equilibria (section 2): cube ranks, width, depth, attention sharpness,
            # start noise
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
            mask_L=192,
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
}
