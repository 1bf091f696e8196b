"""Cost per event of the multi-kernel learners' defaults (docs/multikernel.md, section 7).

Three measurements, each printed as a table with the load average beside it
(times are the process's CPU time, `time.thread_time`, so that other jobs on
the machine stretch them less; ratios are of figures taken in the same run):

- ``growth``: one event at a time (`predict_one`, then `learn_one`) on a
  stream of N events from a fresh model; microseconds per event over events
  0-100, 100-200, 2000-4000 and the last 2000.  The targets: the last 2000
  cost at most 1.5 times events 2000-4000 (a bounded model), the first 100
  at most twice the next 100 (the start at compiled speed).
- ``ratio``: a warm model (3000 events) against `OnlineKernelClassifier()`
  warmed on the same events, both with their defaults: microseconds per event
  of ``partial_fit`` on chunks of 1000 rows and of one event at a time, the
  fastest of several repeats.  The target: at most 3 times the single learner.
- ``start``: the first 100 events against the next 100 (one at a time), the
  fastest of several fresh models, for the classifier and the regressor on
  scikit-learn's breast cancer and diabetes data.
- ``merge``: the setting of bench/bench_multikernel.py (m = 200 centres, d =
  20, logistic loss, a noisy XOR), each budget policy: the multi-kernel
  learner's default pool against `OnlineKernelClassifier` with one width and
  the same loss, budget and policy.

The streams: a noisy two-feature concept (``sign(x1 x2 + sin 2 x1)`` with 5%
of labels flipped) and the same concept with 18 noise features (d = 20), and a
64-feature one; generated here, standardised.

    python bench/multikernel_cost.py growth [N] [d] [estimator]
    python bench/multikernel_cost.py ratio [d ...] [estimator ...]
    python bench/multikernel_cost.py start [estimator ...]
    python bench/multikernel_cost.py merge
"""
import os
import sys
import time

import numpy as np

from okl import (
    MultiKernelClassifier, MultiKernelRegressor, OnlineKernelClassifier, OnlineKernelRegressor,
)


def concept(n, d, seed=0):
    """x ~ N(0, I_d), y = [x1 x2 + sin(2 x1) > 0], 5% of labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 0]) > 0).astype(np.int64)
    return X, np.where(rng.random(n) < 0.05, 1 - y, y)


def load():
    return f"load average {os.getloadavg()[0]:.1f} (2 cores)"


def one_event_times(est, X, y, edges):
    """CPU time (us per event) of predict_one + learn_one between consecutive edges."""
    rows, labels = list(X), y.tolist()
    marks, start = {}, time.thread_time()
    for i, (x, target) in enumerate(zip(rows, labels), 1):
        est.predict_one(x)
        est.learn_one(x, target)
        if i in edges:
            marks[i] = time.thread_time()
    marks[0] = start
    points = [0] + sorted(edges)
    return {f"{a}-{b}": (marks[b] - marks[a]) / (b - a) * 1e6 for a, b in zip(points, points[1:])}


def growth(n=60000, d=2, label="MultiKernelClassifier()"):
    X, y = concept(n, d)
    warm, wy = concept(300, d, seed=1)
    one_event_times(eval(label), warm, wy, {300})        # the interpreter's first calls
    est = eval(label)
    times = one_event_times(est, X, y, {100, 200, 2000, 4000, n - 2000, n})
    last = f"{n - 2000}-{n}"
    print(f"{label}, {n} events, d = {d}, {load()}")
    print("| " + " | ".join(times) + " | last / 2000-4000 | first 100 / next 100 | centres |")
    print("|" + "---|" * (len(times) + 3))
    print("| " + " | ".join(f"{v:.1f}" for v in times.values())
          + f" | {times[last] / times['2000-4000']:.2f} | {times['0-100'] / times['100-200']:.2f}"
          + f" | {est.n_support_} |", flush=True)


def steady(est, X, y, rounds=5):
    """(us per event fused, us per event one at a time): the fastest of `rounds` repeats on
    copies of the warm model."""
    import pickle
    blob = pickle.dumps(est)
    fused = single = np.inf
    for _ in range(rounds):
        model = pickle.loads(blob)
        start = time.thread_time()
        for lo in range(0, 2000, 1000):
            model.partial_fit(X[lo:lo + 1000], y[lo:lo + 1000])
        fused = min(fused, (time.thread_time() - start) / 2000 * 1e6)
        model = pickle.loads(blob)
        rows, labels = list(X[2000:3000]), y[2000:3000].tolist()
        start = time.thread_time()
        for x, target in zip(rows, labels):
            model.predict_one(x)
            model.learn_one(x, target)
        single = min(single, (time.thread_time() - start) / 1000 * 1e6)
    return fused, single


def ratio(dims=(2, 20, 64), labels=("MultiKernelClassifier()",)):
    print(f"warm models (3000 events), then 2000 events in chunks of 1000 and 1000 one at a "
          f"time; {load()}")
    print("| d | estimator | centres | chunks (us/event) | ratio | one event (us/event) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for d in dims:
        X, y = concept(6000, d)
        ref = None
        for label in ("OnlineKernelClassifier()",) + tuple(labels):
            est = eval(label)
            est.partial_fit(X[:3000], y[:3000], classes=[0, 1])
            fused, single = steady(est, X[3000:], y[3000:])
            ref = ref or (fused, single)
            print(f"| {d} | {label} | {est.n_support_} | {fused:.2f} | {fused / ref[0]:.2f} | "
                  f"{single:.2f} | {single / ref[1]:.2f} |", flush=True)


def start(labels=None, rounds=5):
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.preprocessing import StandardScaler
    cases = labels or ["MultiKernelClassifier()", "MultiKernelRegressor(learner='sgd')",
                       "OnlineKernelClassifier()", "OnlineKernelRegressor()"]
    print(f"first 100 events against the next 100, one at a time (fastest of {rounds} fresh "
          f"models); {load()}")
    print("| estimator | data | events 0-100 (us/event) | events 100-200 | ratio |")
    print("|---|---|---|---|---|")
    for label in cases:
        classify = "Classifier" in label
        X, y = load_breast_cancer(return_X_y=True) if classify else load_diabetes(return_X_y=True)
        X = StandardScaler().fit_transform(X)
        one_event_times(eval(label), X[:50], y[:50], {50})
        best = {}
        for _ in range(rounds):
            times = one_event_times(eval(label), X[:200], y[:200], {100, 200})
            best = {k: min(v, best.get(k, np.inf)) for k, v in times.items()}
        name = "breast cancer" if classify else "diabetes"
        print(f"| {label} | {name} | {best['0-100']:.1f} | {best['100-200']:.1f} | "
              f"{best['0-100'] / best['100-200']:.2f} |", flush=True)


def merge(m=200, d=20):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m + 1 + 3000, d))
    y = (X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=len(X)) > 0).astype(np.int64)
    print(f"m = {m}, d = {d}, logistic loss, warm models; {load()}")
    print("| policy | estimator | chunks (us/event) | ratio | one event (us/event) | ratio |")
    print("|---|---|---|---|---|---|")
    for policy in ("merge", "oldest"):
        ref = None
        for label in (f"OnlineKernelClassifier(gamma={1 / d}, loss='logistic', budget={m}, "
                      f"budget_policy='{policy}')",
                      f"MultiKernelClassifier(loss='logistic', budget={m}, "
                      f"budget_policy='{policy}')"):
            est = eval(label)
            est.partial_fit(X[:m + 1], y[:m + 1], classes=[0, 1])
            fused, single = steady(est, X[m + 1:], y[m + 1:])
            ref = ref or (fused, single)
            print(f"| {policy} | {label} | {fused:.2f} | {fused / ref[0]:.2f} | {single:.2f} | "
                  f"{single / ref[1]:.2f} |", flush=True)


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "growth":
        growth(*([int(a) for a in args[:2]] + args[2:]))
    elif what == "ratio":
        dims = tuple(int(a) for a in args if a.isdigit()) or (2, 20, 64)
        ratio(dims, tuple(a for a in args if not a.isdigit()) or ("MultiKernelClassifier()",))
    elif what == "merge":
        merge()
    else:
        start(args or None)
