#!/usr/bin/env python3
"""Benchmark of the toy tasks (chapter "Which paths do trained networks use?").

1. Training: ``epochs`` epochs of the sorting network at the chapter's full size (6 layers,
   2 heads, width 48, 1,000 sequences, batches of 50), from scratch, on one thread, as
   ``rc.toy.train`` trains (the checkpoint goes to a temporary cache folder).
2. Exact evaluation of every path of the convex-hull network's shape (6 layers, 3 heads,
   width 84, 4,096 paths) on ``n_seq`` sequences of 10 points, each path's token accuracy:
   - all paths at once, ``rc.toy.all_path_terms`` building the terms as a tree (each prefix
     once: 5,460 single-head or skip applications) and reading them out in batches;
   - path by path, each path run as its own single-head network (6 applications each,
     24,576 in all), the way the official code evaluates a path (though with frozen attention).
   Both give the same accuracies (checked).

Run: ``python benchmarks/toy.py`` (``--json FILE`` also writes the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

import torch

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
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}"}

    sizes = dict(rc.presets.PRESETS["toy_tasks"]["full"]["tasks"]["sorting"], epochs=args.epochs)
    task = rc.toy.ToyTask("sorting", **sizes)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RANKCOLLAPSE_CACHE"] = tmp
        t = time.perf_counter()
        tr = rc.toy.train(task, seed=0, progress=False)
        out["train_sorting_seconds_per_epoch"] = (time.perf_counter() - t) / args.epochs
    print(f"training, sorting at full size: {out['train_sorting_seconds_per_epoch']:.2f} s per epoch "
          f"({tr.log['steps_per_epoch']} steps)")

    hull = rc.toy.ToyTask("convex_hull", **rc.presets.PRESETS["toy_tasks"]["full"]["tasks"]["convex_hull"])
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
    assert torch.equal(torch.from_numpy(ev.path_accuracy), slow), "the two evaluations disagree"
    out["paths"] = len(ev.paths)
    out["speedup"] = out["one_by_one_seconds"] / out["all_paths_seconds"]
    print(f"every path of a 6-layer, 3-head network ({out['paths']:,} paths, {args.n_seq} sequences): "
          f"all at once {out['all_paths_seconds']:.2f} s, one by one {out['one_by_one_seconds']:.2f} s "
          f"({out['speedup']:.1f}x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
