"""Many new labels: the time of one ``partial_fit`` of n rows, each with a label not seen before.

A kernel `RegularizedPAClassifier`, `OnlineKernelClassifier`, `MultiKernelClassifier` and a
linear `RegularizedPAClassifier` on standard normal rows of 8 features; every row carries a new
label, so the model grows by one class per row.  CPU seconds of the call (process time).  With
``--limit S`` each run is a child process stopped after S CPU seconds (shown as "> S"), and a
model's larger n are skipped after it.

Run: ``python bench/many_labels.py [--n 500 1000 2000] [--models pa-kernel ...] [--limit 60]``
(docs/multiclass.md, section 1, "Many new labels").
"""
import argparse
import math
import os
import resource
import signal
import subprocess
import sys
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


def capped(name, n, limit):
    """`run` in a child process stopped after `limit` CPU seconds of the call; None when it was."""
    child = subprocess.run([sys.executable, __file__, "--one", name, str(n), str(limit)],
                           text=True, capture_output=True)
    if child.returncode == -signal.SIGXCPU:
        return None
    if child.returncode:
        raise RuntimeError(child.stderr)
    seconds, k = child.stdout.split()
    return float(seconds), int(k)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--limit", type=float, help="CPU seconds a run may take")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)   # the child of --limit
    args = parser.parse_args(argv)
    if args.one:                    # the limit counts from here, after the imports
        run(args.one[0], 3)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        stop = math.ceil(usage.ru_utime + usage.ru_stime + float(args.one[2]))
        resource.setrlimit(resource.RLIMIT_CPU, (stop, stop + 1))
        print(*run(args.one[0], int(args.one[1])))
        return
    print("load average: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"{'model':12s} {'new labels':>10s} {'CPU s':>8s}")
    for name in args.models:
        for n in sorted(args.n):
            got = run(name, n) if args.limit is None else capped(name, n, args.limit)
            if got is None:
                print(f"{name:12s} {n:10d} {'> ' + format(args.limit, 'g'):>8s}", flush=True)
                break
            print(f"{name:12s} {got[1]:10d} {got[0]:8.2f}", flush=True)


if __name__ == "__main__":
    main()
