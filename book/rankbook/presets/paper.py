"""Sizes of the chapters that reproduce the paper: chapter -> mode -> sizes.

Keys are the names the chapters read (``run.<name>``); see each chapter for their meaning. The
run machinery that serves them is :mod:`rankbook.presets`.
"""

SIZES: dict[str, dict[str, dict]] = {
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
