"""PairwiseLearner's O(t) average: the cython engine against its NumPy twin, and the step's floor.

The guard of docs/benchmarks.md: the linear pair kernel with the sign reducer and the hinge loss
learns T = 3000 events of d = 20 (each step averages over the points stored before it), once
per engine, alternating; then the step alone at t = 3000 stored points (64 steps), beside
NumPy's two matrix-vector products over the same points ("2 gemv", the floor of a step that
reads them twice).  Times are the process's CPU time (BLAS threads included), the minimum over
the rounds, with the load average.

    python bench/pairwise_guard.py              # 5 rounds
    OPENBLAS_NUM_THREADS=1 python bench/pairwise_guard.py
"""
import argparse
import os
import time

import numpy as np

from okl import PairwiseLearner
from okl._core._pairwise import Reducer
from okl._engines import ENGINES
from okl.losses import loss_spec

T, D, STEPS = 3000, 20, 64


def fit_seconds(engine, X, y):
    start = time.process_time()
    PairwiseLearner(pair_kernel="linear", reducer="sign", loss="hinge", engine=engine).fit(X, y)
    return time.process_time() - start


def step_seconds(run):
    start = time.process_time()
    run()
    return (time.process_time() - start) / STEPS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(T, D))
    y = X[:, 0] + 0.5 * rng.normal(size=T)
    H, yh, w0 = rng.normal(size=(T, D)), rng.normal(size=T), 0.01 * rng.normal(size=D)
    Xc, yc = rng.normal(size=(STEPS, D)), rng.normal(size=STEPS)
    eta, slots = np.full(STEPS, 0.01), np.full(STEPS, -1, dtype=np.intp)
    ones = np.ones(T)

    def chunk(engine):
        w = w0.copy()
        return lambda: ENGINES[engine].pairwise.linear_chunk(
            H, yh, T, w, Xc, yc, eta, slots, int(Reducer.SIGN), loss_spec("hinge"))

    def gemv():
        for _ in range(STEPS):
            H @ w0
            ones @ H
    fits = {"cython": [], "numpy": []}
    steps = {"cython": [], "numpy": [], "2 gemv": []}
    for _ in range(args.rounds):
        for engine in fits:
            fits[engine].append(fit_seconds(engine, X, y))
            steps[engine].append(step_seconds(chunk(engine)))
        steps["2 gemv"].append(step_seconds(gemv))
    cython, numpy = min(fits["cython"]), min(fits["numpy"])
    print(f"load average {os.getloadavg()[0]:.2f}; minimum of {args.rounds} rounds")
    print(f"fit, T = {T}, d = {D}: cython {cython * 1e3:.1f} ms, numpy {numpy * 1e3:.1f} ms, "
          f"numpy / cython {numpy / cython:.2f}")
    print("one step at t = %d: " % T + ", ".join(
        f"{label} {min(v) * 1e6:.1f} us" for label, v in steps.items()))


if __name__ == "__main__":
    main()
