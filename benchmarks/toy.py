#!/usr/bin/env python3
"""Benchmark of the toy tasks (chapter "Which paths do trained networks use?").

1. Training: ``epochs`` epochs of the sorting network at the chapter's full size (6 layers,
   2 heads, width 48, 1,000 sequences, batches of 50), from scratch, on one thread, as
   ``rc.toy.train`` trains (the checkpoint goes to a temporary cache folder); then the same
   network with the official code's optimiser (Adam at 1e-5, batches of 30: 34 steps an
   epoch), and the projected time of its 65 epochs (2,210 steps), which the chapter trains
   from every seed.
2. Exact evaluation of every path of the convex-hull network's shape (6 layers, 3 heads,
   width 84, 4,096 paths) on ``n_seq`` sequences of 10 points, each path's token accuracy:
   - all paths at once, ``rc.toy.all_path_terms`` building the terms as a tree (each prefix
     once: 5,460 single-head or skip applications) and reading them out in batches;
   - path by path, each path run as its own single-head network (6 applications each,
     24,576 in all), the way the official code evaluates a path (though with frozen attention).
   Both give the same accuracies (checked).

Run: ``python benchmarks/toy.py`` (``--json FILE`` also writes the figures).

``--quick``: one epoch of the chapter's fast-mode sorting network (and the official optimiser on
it), and every path of a 3-layer, 2-head network on 2 sequences: for the tests
(``tests/test_benchmarks.py``), which check that it completes and that the two path evaluations
agree, never its times. It exits non-zero when they disagree.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

import torch

import rankbook as book
import rankcollapse as rc


def one_by_one(model, X, y):
    """Token accuracy of every path, each computed on its own (no shared prefixes)."""
    E = model.embed(X)
    _, layers, _ = rc.paths.frozen_layers(model.san, E)
    cfg = model.san.config
    acc = []
    for path in rc.paths.all_paths(cfg.n_layers, cfg.n_heads):
        term = E
        for layer, h in zip(layers, path):
            term = layer.skip(term) if h is None else layer.head(term.unsqueeze(0), h)[0]
        acc.append(rc.toy.token_accuracy(model.readout(term), y))
    return torch.tensor(acc, dtype=torch.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--n-seq", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="small sizes, one epoch (for the tests)")
    args = ap.parse_args()
    if args.epochs < 1 or args.n_seq < 1:
        ap.error(f"--epochs and --n-seq must be >= 1, got {args.epochs} and {args.n_seq}")
    if args.quick:
        args.epochs, args.n_seq = 1, 2
    mode = "fast" if args.quick else "full"
    torch.set_num_threads(1)
    out = {
        "machine": (
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"torch {torch.__version__}"
        ),
        "quick": args.quick,
    }

    sizes = dict(book.presets.PRESETS["toy_tasks"][mode]["tasks"]["sorting"], epochs=args.epochs)
    task = rc.toy.ToyTask("sorting", **sizes)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RANKCOLLAPSE_CACHE"] = tmp
        t = time.perf_counter()
        tr = rc.toy.train(task, seed=0, progress=False)
        out["train_sorting_seconds_per_epoch"] = (time.perf_counter() - t) / args.epochs
        official_sizes = dict(rc.toy.OFFICIAL["sorting"], epochs=args.epochs)
        if args.quick:  # the official optimiser on the fast-mode network and data
            official_sizes.update(
                {k: sizes[k] for k in ("n_layers", "d_model", "n_train", "n_eval")}
            )
        official = rc.toy.ToyTask("sorting", **official_sizes)
        t = time.perf_counter()
        rc.toy.train(official, seed=0, progress=False)
        out["train_official_sorting_seconds_per_epoch"] = (time.perf_counter() - t) / args.epochs
    print(
        f"training, sorting at {mode} size: {out['train_sorting_seconds_per_epoch']:.2f} s "
        f"per epoch ({tr.log['steps_per_epoch']} steps)"
    )
    full_epochs = rc.toy.OFFICIAL["sorting"]["epochs"]
    out["train_official_sorting_seconds"] = (
        out["train_official_sorting_seconds_per_epoch"] * full_epochs
    )
    print(
        "training, sorting with the official optimiser: "
        f"{out['train_official_sorting_seconds_per_epoch']:.2f} s "
        f"per epoch, about {out['train_official_sorting_seconds']:.0f} s "
        f"for its {full_epochs} epochs ({rc.toy.official_steps('sorting'):,} steps)"
    )

    hull_sizes = dict(book.presets.PRESETS["toy_tasks"]["full"]["tasks"]["convex_hull"])
    if args.quick:  # 3 layers, 2 heads: 27 paths
        hull_sizes.update(n_layers=3, n_heads=2, d_model=8)
    hull = rc.toy.ToyTask("convex_hull", **hull_sizes)
    data = rc.toy.convex_hull(1, args.n_seq, seed=0)
    model = rc.toy.ToyModel(rc.toy.toy_config(hull, data), seed=0, dtype=torch.float64).eval()
    X, y = data.X_eval, data.y_eval
    with torch.no_grad():
        t = time.perf_counter()
        ev = rc.toy.evaluate_paths(model, X, y, draws=1)
        out["all_paths_seconds"] = time.perf_counter() - t
        t = time.perf_counter()
        slow = one_by_one(model, X, y)
        out["one_by_one_seconds"] = time.perf_counter() - t
    if not torch.equal(torch.from_numpy(ev.path_accuracy), slow):
        raise SystemExit("the two path evaluations disagree")
    out["paths"] = len(ev.paths)
    out["speedup"] = out["one_by_one_seconds"] / out["all_paths_seconds"]
    out["agree"] = True
    print(
        f"every path of a {hull.n_layers}-layer, {hull.n_heads}-head network "
        f"({out['paths']:,} paths, {args.n_seq} sequences): "
        f"all at once {out['all_paths_seconds']:.2f} s, "
        f"one by one {out['one_by_one_seconds']:.2f} s ({out['speedup']:.1f}x)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
