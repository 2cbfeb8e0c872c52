#!/usr/bin/env python3
"""Benchmark of the path decomposition (chapter "The path decomposition").

1. ``decompose_by_length`` at L=12, H=12, n=128, d=768 in float32 (BERT-base's shape):
   target under 2 s. Its arithmetic is about 26 GFLOP (printed below), so at the machine's
   matrix-multiply rate the floor is a fraction of a second.
2. Enumeration against the dynamic programme at L=6, H=3 on the same input (4,096 paths), at
   equal results (the per-length sums agree). Two enumerations are timed:
   - term by term: each path's term built on its own, ``P_p X W_p`` applied layer by layer as
     Theorem 2.1 writes it (about 4.5 single-head applications per path here); target: the
     programme at least 100x faster;
   - ``rc.paths.enumerate_paths``, which builds the terms as a tree, sharing each prefix with
     its extensions (one single-head application per tree edge, 4,095 in all). Against it the
     programme's advantage in arithmetic alone is 4,095 single-head applications against
     H L (L+1) / 2 = 63, about 65x (printed below); the measured ratio adds per-path overhead.

Timings are the median of ``--repeat`` runs after a warm-up. Run: ``python benchmarks/paths.py``
(``--json FILE`` also writes the figures, for the book's status page).
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


def matmul_rate(n=2048):
    """The machine's float32 matrix-multiply rate on a large square product (FLOP/s)."""
    A, B = torch.randn(n, n), torch.randn(n, n)
    t, _ = timed(lambda: A @ B, 5)
    return 2 * n**3 / t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args()

    X = torch.randn(128, 768, generator=torch.Generator().manual_seed(0))
    results = {"machine": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}"}

    rate = matmul_rate()
    results["matmul_gflops"] = rate / 1e9

    cfg = rc.san.SANConfig(n_layers=12, n_heads=12, d_model=768, skip=True, dtype=torch.float32)
    big = rc.san.SAN(cfg, seed=0).requires_grad_(False)
    t_dp, _ = timed(lambda: rc.paths.decompose_by_length(big, X), args.repeat)
    flops = dp_flops(12, 12, 128, 768, cfg.d_v)
    results.update(dp_L12_H12_seconds=t_dp, dp_L12_H12_gflop=flops / 1e9)
    print(f"matrix multiply rate: {rate / 1e9:.0f} GFLOP/s (float32, {results['machine']})")
    print(f"decompose_by_length L=12 H=12 n=128 d=768 float32: {t_dp:.3f} s "
          f"({flops / 1e9:.1f} GFLOP, {flops / rate:.2f} s at the rate above)   target < 2 s: "
          f"{'met' if t_dp < 2 else 'MISSED'}")

    cfg = rc.san.SANConfig(n_layers=6, n_heads=3, d_model=768, skip=True, dtype=torch.float32)
    small = rc.san.SAN(cfg, seed=0).requires_grad_(False)
    t_dp6, terms = timed(lambda: rc.paths.decompose_by_length(small, X), args.repeat)
    t_en, paths = timed(lambda: rc.paths.enumerate_paths(small, X), max(1, args.repeat // 2))
    grouped = torch.stack([sum(t for p, t in paths.items() if rc.paths.path_length(p) == l) for l in range(7)])
    t_tt, by_term = timed(lambda: term_by_term(small, X), 1)
    err = max(float((grouped - terms).norm() / terms.norm()), float((by_term - terms).norm() / terms.norm()))
    results.update(dp_L6_H3_seconds=t_dp6, enum_L6_H3_seconds=t_en, term_by_term_L6_H3_seconds=t_tt,
                   ratio=t_tt / t_dp6, ratio_tree=t_en / t_dp6, agreement=err)
    H, L = 3, 6
    tree_apps, dp_apps = sum(H * (H + 1) ** l for l in range(L)), H * L * (L + 1) // 2
    print(f"L=6 H=3 (4,096 paths), per-length sums agree to {err:.1e}; dynamic programme {t_dp6:.3f} s")
    print(f"  term-by-term enumeration {t_tt:.2f} s: ratio {t_tt / t_dp6:.0f}x   target >= 100x: "
          f"{'met' if t_tt / t_dp6 >= 100 else 'MISSED'}")
    print(f"  rc.paths.enumerate_paths (shared prefixes) {t_en:.2f} s: ratio {t_en / t_dp6:.0f}x "
          f"(arithmetic ratio {tree_apps} / {dp_apps} = {tree_apps / dp_apps:.0f}x single-head applications)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
