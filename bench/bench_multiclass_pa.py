"""Multiclass PA and CoefReg: the cost of k = 10 classes against two, beside river; digits.

Groups (each in one run; ratios to the "binary" label, the same model on two classes):
- "mc pa gaussian budget=200 d=64": RegularizedPAClassifier(kernel="gaussian",
  budget=200) on a stream of 10 Gaussian blobs in d = 64 (labels mod 2 for the
  binary model), warmed up on 1000 events so that the budget is full, then one
  progressive pass (predict, then learn) over 2000 events as one chunk
  ("binary", "k=10") and one event at a time with `predict_one` + `learn_one`
  ("binary one", "k=10 one"); "river ovr" is river's
  OneVsRestClassifier(PAClassifier()) (river's PA is binary) on the same events.
- "mc pa linear d=64": the linear PA, the same passes.
- "mc coefreg m=200 d=64": CoefficientRegularizedClassifier(n_centers=200).

Run: python -m pytest bench/bench_multiclass_pa.py --benchmark-only -q
The digits table (progressive accuracy and us per event; parameters tuned on the
first 20% of the stream only): python bench/bench_multiclass_pa.py
"""
import copy
import itertools
import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from okl import CoefficientRegularizedClassifier, RegularizedPAClassifier
from okl.preprocessing import OnlineStandardScaler

D, K, WARM, STEPS = 64, 10, 1000, 2000


def blobs(n, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(K, D))
    y = rng.integers(K, size=n)
    return np.ascontiguousarray(means[y] + rng.normal(size=(n, D))), y


MODELS = {
    "mc pa gaussian budget=200 d=64": lambda: RegularizedPAClassifier(
        kernel="gaussian", gamma=1.0 / (2 * D), budget=200),
    "mc pa linear d=64": lambda: RegularizedPAClassifier(variant="PA-I", C=0.1),
    "mc coefreg m=200 d=64": lambda: CoefficientRegularizedClassifier(
        n_centers=200, gamma=1.0 / (2 * D), lam=1e-3),
}


@pytest.fixture(scope="module")
def stream():
    return blobs(WARM + STEPS)


def warmed(name, X, y, classes):
    model = MODELS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.partial_fit(X[:WARM], y[:WARM], classes=classes)
    return model


def group(benchmark, name, label, steps, ref="binary"):
    benchmark.group = name
    benchmark.extra_info["label"] = label
    benchmark.extra_info["steps"] = steps
    benchmark.extra_info["ref"] = ref


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("label", ["binary", "k=10", "binary one", "k=10 one"])
def test_per_event(benchmark, stream, name, label):
    X, y = stream
    if label.startswith("binary"):
        y = y % 2
    classes = np.unique(y)
    model = warmed(name, X, y, classes)
    Xs, ys = X[WARM:], y[WARM:]
    group(benchmark, name, label, STEPS)
    if label.endswith("one"):
        def run(est):
            for x, target in zip(Xs, ys.tolist()):
                est.predict_one(x)
                est.learn_one(x, target)
    else:
        def run(est):
            est.partial_fit(Xs, ys)
    benchmark.pedantic(run, setup=lambda: ((copy.deepcopy(model),), {}), rounds=3,
                       iterations=1)


def test_river_ovr(benchmark, stream):
    from river.linear_model import PAClassifier
    from river.multiclass import OneVsRestClassifier
    X, y = stream
    events = [dict(enumerate(x)) for x in X]
    model = OneVsRestClassifier(PAClassifier())
    for x, target in zip(events[:WARM], y[:WARM].tolist()):
        model.learn_one(x, target)
    group(benchmark, "mc pa linear d=64", "river ovr", STEPS)

    def run(est):
        for x, target in zip(events[WARM:], y[WARM:].tolist()):
            est.predict_one(x)
            est.learn_one(x, target)
    benchmark.pedantic(run, setup=lambda: ((copy.deepcopy(model),), {}), rounds=3,
                       iterations=1)


# -- the digits table (issue 17, point 6) ------------------------------------------------------

def digits_stream(seed=0):
    """sklearn's digits shuffled once, each event scaled by the running statistics of the
    events before it (OnlineStandardScaler: transform_one, then learn_one)."""
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    X, y = X[order], y[order]
    scaler = OnlineStandardScaler()
    Z = np.empty_like(X, dtype=np.float64)
    for t, x in enumerate(X):
        Z[t] = scaler.transform_one(x)
        scaler.learn_one(x)
    return Z, y


def progressive(make, X, y):
    """(accuracy of the predictions made before each event is learned, us per event)."""
    model = make()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = model._progressive_scores(X, y, classes=np.unique(y), reset=True)
    seconds = time.perf_counter() - start
    return float(np.mean(model._predictions(scores) == y)), 1e6 * seconds / len(y)


GRIDS = {
    "RegularizedPAClassifier gaussian budget=200": (
        lambda g, C: RegularizedPAClassifier(kernel="gaussian", gamma=g, budget=200,
                                             variant="PA-I", C=C),
        dict(g=[1 / 128, 1 / 64, 1 / 32, 1 / 16, 1 / 8], C=[0.1, 1.0, 10.0])),
    "RegularizedPAClassifier linear": (
        lambda C, v: RegularizedPAClassifier(variant=v, C=C),
        dict(C=[0.01, 0.1, 1.0], v=["PA-I", "PA-II"])),
    "CoefficientRegularizedClassifier m=200 logistic": (
        lambda g, lam: CoefficientRegularizedClassifier(n_centers=200, gamma=g, lam=lam,
                                                        loss="logistic"),
        dict(g=[1 / 64, 1 / 32, 1 / 16], lam=[1e-5, 1e-4, 1e-3])),
    "CoefficientRegularizedClassifier m=200 hinge": (
        lambda g, lam: CoefficientRegularizedClassifier(n_centers=200, gamma=g, lam=lam),
        dict(g=[1 / 64, 1 / 32, 1 / 16], lam=[1e-5, 1e-4, 1e-3])),
}


def main():
    X, y = digits_stream()
    tune = len(y) // 5
    print(f"digits: {len(y)} events, 10 classes; tuned on the first {tune}")
    print(f"{'estimator':50s} {'parameters':28s} {'accuracy':>8s} {'us/event':>9s}")
    for name, (make, grid) in GRIDS.items():
        best = max((dict(zip(grid, values)) for values in itertools.product(*grid.values())),
                   key=lambda p: progressive(lambda: make(**p), X[:tune], y[:tune])[0])
        accuracy, us = progressive(lambda: make(**best), X, y)
        shown = ", ".join(f"{k}={v:.3g}" for k, v in best.items() if not isinstance(v, str))
        shown += "".join(f", {v}" for v in best.values() if isinstance(v, str))
        print(f"{name:50s} {shown:28s} {accuracy:8.4f} {us:9.1f}")


if __name__ == "__main__":
    main()
