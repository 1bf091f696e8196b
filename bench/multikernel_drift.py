"""Drifting streams for the multi-kernel learners' adaptation (docs/multikernel.md, section 9).

Four small generators of this script only (okl.synth gains its own drifting
generators separately): each returns (X, y, changes), `changes` the events
where the concept changes (empty for a continuous drift).

- ``moving_clusters``: Gaussian clusters of random classes in the unit cube of 10
  dimensions whose centres move at a constant speed, reflected at the walls;
- ``abrupt_switch``: a cluster concept (4 clusters per class, 10 dimensions)
  replaced by a new one at the middle of the stream;
- ``switching_hyperplane``: a linear concept in 10 dimensions whose normal
  vector is drawn again at each third of the stream, 10% label noise;
- ``drifting_friedman``: Friedman's regression target on 10 features, its five
  relevant features exchanged for the other five at the middle;

and `okl.synth.drifting_friedman` (10,000 events, four changes, ``random_state=0``).

The events are standardised online (okl.preprocessing.OnlineStandardScaler),
as in bench/multikernel_defaults.py, and learned one at a time (predict, then
learn) by okl's defaults, the first-order multi-kernel learners with and without
adaptation (``forgetting=None, share=0.0``) and river's learners with their defaults (where
river is installed): overall accuracy (RMSE), the accuracy (RMSE) over the 500
events after each change, and the delay until the mean over the last 200
events is back within 0.01 (1%) of the 500 events before the change.

    python bench/multikernel_drift.py ["stream name" ...] [--learners "label" ...]
"""
import argparse
import os
import time

import numpy as np

from okl import (  # noqa: F401 (the learners are named in LEARNERS)
    MultiKernelClassifier, MultiKernelRegressor, OnlineKernelClassifier, OnlineKernelRegressor,
)
from okl.preprocessing import OnlineStandardScaler
from okl.synth import drifting_friedman as synth_drifting_friedman

try:
    from river import forest, linear_model, neighbors, tree  # noqa: F401 (LEARNERS)
except ImportError:
    forest = None


def moving_clusters(n=10000, d=10, n_centres=50, speed=1e-3, seed=0):
    """Gaussian clusters in the unit cube, each of a random class and width, whose centres
    move at a constant speed (per event) in random directions, reflected at the cube's
    walls: a drift without end."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(size=(n_centres, d))
    labels = rng.integers(2, size=n_centres)
    widths = rng.uniform(0.02, 0.1, size=n_centres)
    step = rng.normal(size=(n_centres, d))
    step *= speed / np.linalg.norm(step, axis=1, keepdims=True)
    X, y = np.empty((n, d)), np.empty(n, dtype=np.int64)
    c = rng.integers(n_centres, size=n)
    for t in range(n):
        X[t] = centres[c[t]] + widths[c[t]] * rng.normal(size=d)
        y[t] = labels[c[t]]
        centres += step
        out = (centres < 0) | (centres > 1)
        step[out] = -step[out]
        centres = np.clip(centres, 0, 1)
    return X, y, []


def _clusters(rng, n, d, per_class, spread):
    centres = spread * rng.normal(size=(2 * per_class, d))
    c = rng.integers(2 * per_class, size=n)
    return centres[c] + rng.normal(size=(n, d)), (c % 2).astype(np.int64)


def abrupt_switch(n=10000, d=10, per_class=4, seed=0):
    """A cluster concept, replaced by a new one (new centres, new labels) at n / 2."""
    rng = np.random.default_rng(seed)
    half = n // 2
    X1, y1 = _clusters(rng, half, d, per_class, 1.5)
    X2, y2 = _clusters(rng, n - half, d, per_class, 1.5)
    return np.vstack([X1, X2]), np.concatenate([y1, y2]), [half]


def switching_hyperplane(n=9000, d=10, noise=0.1, seed=0):
    """sign(w . x) with w drawn again at each third; a fraction `noise` of labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    changes = [n // 3, 2 * n // 3]
    y = np.empty(n, dtype=np.int64)
    for lo, hi in zip([0] + changes, changes + [n]):
        w = rng.normal(size=d)
        y[lo:hi] = X[lo:hi] @ w > 0
    flip = rng.random(n) < noise
    return X, np.where(flip, 1 - y, y), changes


def drifting_friedman(n=8000, d=10, noise=1.0, seed=0):
    """Friedman #1 on features 0-4, then (from n / 2) on features 5-9."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    half = n // 2

    def friedman(Z):
        return (10 * np.sin(np.pi * Z[:, 0] * Z[:, 1]) + 20 * (Z[:, 2] - 0.5) ** 2
                + 10 * Z[:, 3] + 5 * Z[:, 4])

    y = np.concatenate([friedman(X[:half, :5]), friedman(X[half:, 5:])])
    return X, y + noise * rng.normal(size=n), [half]


STREAMS = {"moving clusters": moving_clusters, "abrupt switch": abrupt_switch,
           "switching hyperplane": switching_hyperplane,
           "drifting Friedman (RMSE)": drifting_friedman,
           "okl.synth drifting Friedman (RMSE)": lambda: synth_drifting_friedman(
               10000, random_state=0)}


def scaled(X):
    scaler, Z = OnlineStandardScaler(), np.empty_like(X, dtype=np.float64)
    for i, x in enumerate(X):
        scaler.partial_fit(x[None, :])
        Z[i] = scaler.transform(x[None, :])[0]
    return Z


def progressive(label, X, y, classify):
    """(per-event hit or squared error, us per event) of one progressive pass, one event at a
    time (predict, then learn; river's learners on dict events)."""
    if label.startswith("river"):
        model = eval(label.split(" ", 1)[1])
        rows, out = [dict(enumerate(x)) for x in X], np.empty(len(y))
        start = time.process_time()
        for i, (x, target) in enumerate(zip(rows, y)):
            p = model.predict_one(x)
            out[i] = (p == target) if classify else ((p or 0.0) - target) ** 2
            model.learn_one(x, int(target) if classify else float(target))
    else:
        est, rows, labels = eval(label), list(X), y.tolist()
        out = np.empty(len(y))
        start = time.process_time()
        for i, (x, target) in enumerate(zip(rows, labels)):
            p = est.predict_one(x)
            out[i] = (p == target) if classify else (p - target) ** 2
            est.learn_one(x, target)
    return out, (time.process_time() - start) / len(y) * 1e6


def recovery(out, changes, classify, window=500, level=200):
    """(overall, [quality over the `window` events after each change], [delay after each
    change]): accuracy or RMSE; the delay is the number of events until the mean over the last
    `level` events is within 0.01 (accuracy; 1% for RMSE) of the mean over the `window`
    events before the change."""
    def quality(v):
        return float(np.mean(v)) if classify else float(np.sqrt(np.mean(v)))
    after, delay = [], []
    for c in changes:
        after.append(quality(out[c:c + window]))
        before = quality(out[c - window:c])
        running = [quality(out[c + i - level:c + i]) for i in range(level, len(out) - c)]
        near = [i for i, q in zip(range(level, len(out) - c), running)
                if (q >= before - 0.01 if classify else q <= 1.01 * before)]
        delay.append(near[0] if near else None)
    return quality(out), after, delay


LEARNERS = {
    True: ["MultiKernelClassifier()",
           "MultiKernelClassifier(forgetting=None, share=0.0)",
           "OnlineKernelClassifier()",
           "river neighbors.KNNClassifier()",
           "river linear_model.LogisticRegression()",
           "river forest.ARFClassifier(seed=0)",
           "river tree.HoeffdingAdaptiveTreeClassifier(seed=0)"],
    False: ["MultiKernelRegressor()",
            "MultiKernelRegressor(learner='sgd')",
            "MultiKernelRegressor(learner='sgd', forgetting=None, share=0.0)",
            "OnlineKernelRegressor()",
            "river neighbors.KNNRegressor()",
            "river linear_model.LinearRegression()",
            "river forest.ARFRegressor(seed=0)",
            "river tree.HoeffdingAdaptiveTreeRegressor(seed=0)"],
}


def main(names=None, learners=None):
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores); us per event is process CPU time")
    print("| stream | learner | accuracy (RMSE) | after each change (500 events) | "
          "delay (events) | us per event |")
    print("|---|---|---|---|---|---|")
    for name in names or STREAMS:
        X, y, changes = STREAMS[name]()
        Z, classify = scaled(X), "RMSE" not in name
        for label in learners or LEARNERS[classify]:
            if label.startswith("river") and forest is None:
                continue
            out, cost = progressive(label, Z, y, classify)
            overall, after, delay = recovery(out, changes, classify)
            print(f"| {name} | {label} | {overall:.4f} | "
                  f"{', '.join(f'{a:.3f}' for a in after) or '-'} | "
                  f"{', '.join(str(d) for d in delay) or '-'} | {cost:.0f} |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("streams", nargs="*", help="the streams (default: all)")
    parser.add_argument("--learners", nargs="*", help="the learners' labels (default: LEARNERS)")
    args = parser.parse_args()
    main(args.streams or None, args.learners)
