"""Speed-up of okl.distributed on the pairwise reproduction's repeats: 1 vs 2 workers.

Runs the repeats of examples/lin_pairwise_ranking.py through
`okl.distributed.map_trials` on LocalClusters of 1 and 2 worker processes,
alternating, in one run; prints each wall time (cluster start excluded, then
included), the load average, the speed-up, and checks that every run gives
exactly the same errors as the sequential one.

Run:  python bench/distributed_speedup.py [--repeats 100] [--rounds 2] [--steps 2000]
"""
import argparse
import importlib.util
import os
import time
from functools import partial
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import StandardScaler

from okl.distributed.tasks import _session, map_trials


def load_example():
    path = Path(__file__).resolve().parent.parent / "examples" / "lin_pairwise_ranking.py"
    spec = importlib.util.spec_from_file_location("lin_pairwise_ranking", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    example = load_example()
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    ts = example.checkpoints(args.steps)
    rng = np.random.default_rng(0)
    streams = {rep: rng.integers(0, len(X), args.steps) for rep in range(args.repeats)}
    func = partial(example.repeat, X=X, y=y, ts=ts)

    def stack(out):
        return np.array([out[rep] for rep in range(args.repeats)])

    start = time.perf_counter()
    reference = stack(map_trials(func, streams, "sequential"))
    print(f"sequential, in this process: {time.perf_counter() - start:.1f} s "
          f"(load {os.getloadavg()[0]:.2f})", flush=True)
    times = {1: [], 2: []}
    for _ in range(args.rounds):
        for n in (1, 2):
            load = os.getloadavg()[0]
            start = time.perf_counter()
            with _session(None, n) as client:
                ready = time.perf_counter()
                out = stack(map_trials(func, streams, client))
            end = time.perf_counter()
            assert np.array_equal(out, reference), "results differ from the sequential run"
            times[n].append(end - ready)
            print(f"{n} worker(s): {end - ready:.1f} s ({end - start:.1f} s with the cluster's "
                  f"start), load {load:.2f} -> {os.getloadavg()[0]:.2f}, identical results",
                  flush=True)
    one, two = min(times[1]), min(times[2])
    print(f"{args.repeats} repeats: best of {args.rounds}: 1 worker {one:.1f} s, 2 workers "
          f"{two:.1f} s, speed-up {one / two:.2f}x")


if __name__ == "__main__":
    main()
