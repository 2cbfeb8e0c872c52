#!/usr/bin/env python3
"""Benchmark of the path decomposition (chapter "The path decomposition").

1. ``decompose_by_length`` at L=12, H=12, n=128, d=768 in float32 (BERT-base's shape):
   target under 2 s. Its arithmetic is about 26 GFLOP (printed below), so at the machine's
   matrix-multiply rate the floor is a fraction of a second.
2. Enumeration against the dynamic programme at L=6, H=3 on the same input (4,096 paths), at
   equal results (the per-length sums agree). Two enumerations are timed:
   - term by term: each path's term built on its own, ``P_p X W_p`` applied layer by layer as
     the paper's path decomposition writes it (about 4.5 single-head applications per path here);
     target: the programme at least 100x faster;
   - ``rc.paths.enumerate_paths``, which builds the terms as a tree, sharing each prefix with
     its extensions (one single-head application per tree edge, 4,095 in all). Against it the
     programme's advantage in arithmetic alone is 4,095 single-head applications against
     H L (L+1) / 2 = 63, about 65x (printed below); the measured ratio adds per-path overhead.

Timings are the median of ``--repeat`` runs after a warm-up. Run: ``python benchmarks/paths.py``
(``--json FILE`` also writes the figures, for the book's status page). The enumeration's 4,096
terms take 1.5 GiB, over ``enumerate_paths``'s 1 GiB default guard: the benchmark raises its
``max_bytes`` to 2 GiB (``ENUMERATION_BYTES``), knowingly.

``--quick``: the same comparisons at small sizes (L=4, H=2 and L=3, H=2, 16 tokens of width 32),
one repeat, and the machine's rate on a small product: for the tests (``tests/test_benchmarks.py``),
which check that it completes and that the methods agree, never its times. It exits non-zero
when the per-length sums disagree.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import torch

import rankcollapse as rc


def timed(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def dp_flops(L, H, n, d, dv):
    """Multiply-adds x 2 of decompose_by_length's head applications (the forward pass excluded)."""
    per_term = 2 * n * d * H * dv + 2 * H * n * n * dv + 2 * n * H * dv * d
    return per_term * sum(l + 1 for l in range(L))


def term_by_term(model, X):
    """Every path term computed on its own (no shared prefixes), grouped by length."""
    _, layers, _ = rc.paths.frozen_layers(model, X)
    cfg = model.config
    sums = torch.zeros((cfg.n_layers + 1,) + X.shape, dtype=X.dtype)
    for path in rc.paths.all_paths(cfg.n_layers, cfg.n_heads, skip=cfg.skip):
        term = X
        for layer, h in zip(layers, path):
            term = layer.skip(term) if h is None else layer.head(term.unsqueeze(0), h)[0]
        sums[rc.paths.path_length(path)] += term
    return sums


AGREEMENT = 1e-4  # float32 sums of up to 4,096 terms: the methods agree to about 1e-6

ENUMERATION_BYTES = 2 * 2**30  # the enumeration of 4,096 terms of 128 x 768 floats needs 1.5 GiB


def matmul_rate(n=2048):
    """The machine's float32 matrix-multiply rate on a large square product (FLOP/s)."""
    A, B = torch.randn(n, n), torch.randn(n, n)
    t, _ = timed(lambda: A @ B, 5)
    return 2 * n**3 / t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument(
        "--quick", action="store_true", help="small sizes and one repeat (for the tests)"
    )
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    # sizes: tokens n, width d, the big network (L, H) and the enumerated one (L, H)
    n, d, (L_big, H_big), (L, H) = (
        (16, 32, (4, 2), (3, 2)) if args.quick else (128, 768, (12, 12), (6, 3))
    )
    repeat = 1 if args.quick else args.repeat

    X = torch.randn(n, d, generator=torch.Generator().manual_seed(0))
    results = {
        "machine": (
            f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}"
        ),
        "quick": args.quick,
    }

    rate = matmul_rate(256 if args.quick else 2048)
    results["matmul_gflops"] = rate / 1e9

    cfg = rc.san.SANConfig(n_layers=L_big, n_heads=H_big, d_model=d, skip=True, dtype=torch.float32)
    big = rc.san.SAN(cfg, seed=0).requires_grad_(False)
    t_dp, _ = timed(lambda: rc.paths.decompose_by_length(big, X), repeat)
    flops = dp_flops(L_big, H_big, n, d, cfg.d_v)
    results.update(dp_L12_H12_seconds=t_dp, dp_L12_H12_gflop=flops / 1e9)
    print(f"matrix multiply rate: {rate / 1e9:.3g} GFLOP/s (float32, {results['machine']})")
    print(
        f"decompose_by_length L={L_big} H={H_big} n={n} d={d} float32: {t_dp:.3f} s "
        f"({flops / 1e9:.1f} GFLOP, {flops / rate:.2f} s at the rate above)   target < 2 s: "
        f"{'met' if t_dp < 2 else 'MISSED'}"
    )

    cfg = rc.san.SANConfig(n_layers=L, n_heads=H, d_model=d, skip=True, dtype=torch.float32)
    small = rc.san.SAN(cfg, seed=0).requires_grad_(False)
    t_dp6, terms = timed(lambda: rc.paths.decompose_by_length(small, X), repeat)
    t_en, paths = timed(
        lambda: rc.paths.enumerate_paths(small, X, max_bytes=ENUMERATION_BYTES), max(1, repeat // 2)
    )
    grouped = torch.stack(
        [sum(t for p, t in paths.items() if rc.paths.path_length(p) == l) for l in range(L + 1)]
    )
    t_tt, by_term = timed(lambda: term_by_term(small, X), 1)
    err = max(
        float((grouped - terms).norm() / terms.norm()),
        float((by_term - terms).norm() / terms.norm()),
    )
    results.update(
        dp_L6_H3_seconds=t_dp6,
        enum_L6_H3_seconds=t_en,
        term_by_term_L6_H3_seconds=t_tt,
        ratio=t_tt / t_dp6,
        ratio_tree=t_en / t_dp6,
        agreement=err,
        paths=len(paths),
    )
    tree_apps, dp_apps = sum(H * (H + 1) ** l for l in range(L)), H * L * (L + 1) // 2
    print(
        f"L={L} H={H} ({len(paths):,} paths), per-length sums agree to {err:.1e}; "
        f"dynamic programme {t_dp6:.3f} s"
    )
    print(
        f"  term-by-term enumeration {t_tt:.2f} s: ratio {t_tt / t_dp6:.0f}x   target >= 100x: "
        f"{'met' if t_tt / t_dp6 >= 100 else 'MISSED'}"
    )
    print(
        f"  rc.paths.enumerate_paths (shared prefixes) {t_en:.2f} s: ratio {t_en / t_dp6:.0f}x "
        f"(arithmetic ratio {tree_apps} / {dp_apps} = {tree_apps / dp_apps:.0f}x single-head "
        "applications)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if not err < AGREEMENT:
        raise SystemExit(
            f"the enumerations and the dynamic programme disagree: relative error {err:.1e} "
            f">= {AGREEMENT:g}"
        )


if __name__ == "__main__":
    main()
