"""Many new labels: the time of one ``partial_fit`` of n rows, each with a label not seen before.

A kernel `RegularizedPAClassifier`, `OnlineKernelClassifier`, `MultiKernelClassifier` and a
linear `RegularizedPAClassifier` on standard normal rows of 8 features; every row carries a new
label, so the model grows by one class per row.  CPU seconds of the call (process time).

Run: ``python bench/many_labels.py [--n 500 1000 2000] [--models pa-kernel ...]``
(docs/multiclass.md, section 1, "Many new labels").
"""
import argparse
import time

import numpy as np

import okl

MODELS = {
    "pa-kernel": lambda: okl.RegularizedPAClassifier(kernel="gaussian", gamma=0.1),
    "pa-linear": lambda: okl.RegularizedPAClassifier(kernel="linear"),
    "okc-kernel": lambda: okl.OnlineKernelClassifier(gamma=0.1, budget=None,
                                                     drift_detector=None),
    "multikernel": lambda: okl.MultiKernelClassifier(),
}


def run(name, n, d=8, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    y = np.arange(n)
    est = MODELS[name]()
    start = time.process_time()
    est.partial_fit(X, y)
    return time.process_time() - start, len(est.classes_)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args(argv)
    print(f"{'model':12s} {'new labels':>10s} {'CPU s':>8s}")
    for name in args.models:
        for n in args.n:
            seconds, k = run(name, n)
            print(f"{name:12s} {k:10d} {seconds:8.2f}", flush=True)


if __name__ == "__main__":
    main()
