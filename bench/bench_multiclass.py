"""Native multiclass: the cost of one event at k = 10 classes vs two, beside river; digits quality.

Cost (pytest-benchmark).  A warm OnlineKernelClassifier (loss="logistic",
budget m = 200, d = 64: sklearn's digits, standardised) takes K events of
"predict_one, then learn_one"; the median time per event is reported for:

- "binary" (the reference of each group): the same model on two classes
  (digits odd vs even), the cost of today's binary step;
- "k=10": the ten digits natively (one kernel row for every class);
- "okl-OvR": river's OneVsRestClassifier over ``to_river`` of ten binary
  models (what a user had to do before: ten expansions of m centres each);
- "river-OvR-Log": river's OneVsRestClassifier(LogisticRegression()) and
  "river-KNN": river's KNNClassifier (window 200), both on dicts.

The groups are the budget policies "merge" (the Gaussian default) and "oldest".

    python -m pytest bench/bench_multiclass.py --benchmark-only

Quality (a script): digits shuffled once (seed 0), scaled online
(OnlineStandardScaler), one progressive pass.  The parameters of
OnlineKernelClassifier(budget=200) are chosen on the first 20% of the stream
only (the grid below); the table gives the progressive accuracy of the whole
pass and the time per event of each learner, river's KNN, Hoeffding tree and
adaptive random forest beside it.

    python bench/bench_multiclass.py

and the cost ratio alone, binary and k = 10 in interleaved rounds:

    python bench/bench_multiclass.py --cost
"""
import itertools
import time

import numpy as np
import pytest
from sklearn.datasets import load_digits

from okl import OnlineKernelClassifier
from okl.preprocessing import OnlineStandardScaler

M = 200          # centres
K = 400          # events per timed round
GRID = dict(loss=["hinge", "logistic"], gamma=[0.01, 0.015, 0.02, 0.03, 0.04],
            lam=[0.0, 1e-4, 1e-3, 1e-2], eta_decay=[0.0, 0.25, 0.5], fit_intercept=[False, True])


def digits(seed=0):
    """Digits shuffled once and scaled online (each row with the statistics before it)."""
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    X, y = X[order], y[order]
    scaler, Z = OnlineStandardScaler(), np.empty_like(X)
    for i, x in enumerate(X):
        scaler.learn_one(x)
        Z[i] = scaler.transform_one(x)
    return Z, y


def warm(k, policy):
    X, y = digits()
    y = y if k == 10 else y % 2
    est = OnlineKernelClassifier(gamma=1.0 / 64, loss="logistic", budget=M, budget_policy=policy,
                                 classes=np.unique(y))
    est.partial_fit(X[:2 * M], y[:2 * M])
    assert est.n_support_ == M
    return est, X[2 * M:2 * M + K], y[2 * M:2 * M + K].tolist()


def run(benchmark, policy, label, loop):
    benchmark.group = f"multiclass per event d=64 m={M} k=10 vs 2, {policy}"
    benchmark.extra_info.update(label=label, steps=K, ref="binary")
    benchmark.pedantic(loop, rounds=7, iterations=1, warmup_rounds=1)


def event_loop(predict_one, learn_one, X, y):
    def loop():
        for x, label in zip(X, y):
            predict_one(x)
            learn_one(x, label)
    return loop


@pytest.mark.parametrize("policy", ["merge", "oldest"])
@pytest.mark.parametrize("k", [2, 10])
def test_okl_native(benchmark, policy, k):
    est, X, y = warm(k, policy)
    run(benchmark, policy, "binary" if k == 2 else "k=10",
        event_loop(est.predict_one, est.learn_one, X, y))


def river_events(X):
    return [dict(enumerate(x.tolist())) for x in X]


@pytest.mark.parametrize("policy", ["merge", "oldest"])
def test_okl_one_vs_rest(benchmark, policy):
    multiclass = pytest.importorskip("river.multiclass")
    from okl.river import to_river
    X, y = digits()
    model = multiclass.OneVsRestClassifier(to_river(OnlineKernelClassifier(
        gamma=1.0 / 64, loss="logistic", budget=M, budget_policy=policy)))
    events = river_events(X[:2 * M + K])
    for x, label in zip(events[:2 * M], y[:2 * M].tolist()):
        model.learn_one(x, label)
    run(benchmark, policy, "okl-OvR",
        event_loop(model.predict_one, model.learn_one, events[2 * M:], y[2 * M:2 * M + K].tolist()))


@pytest.mark.parametrize("policy", ["merge", "oldest"])
@pytest.mark.parametrize("peer", ["river-OvR-Log", "river-KNN"])
def test_river(benchmark, policy, peer):
    river = pytest.importorskip("river")
    from river import linear_model, multiclass, neighbors
    X, y = digits()
    model = (multiclass.OneVsRestClassifier(linear_model.LogisticRegression())
             if peer == "river-OvR-Log" else neighbors.KNNClassifier(
                 engine=neighbors.LazySearch(window_size=M)))
    events = river_events(X[:2 * M + K])
    for x, label in zip(events[:2 * M], y[:2 * M].tolist()):
        model.learn_one(x, label)
    assert river
    run(benchmark, policy, peer,
        event_loop(model.predict_one, model.learn_one, events[2 * M:], y[2 * M:2 * M + K].tolist()))


# -- quality: the digits table ------------------------------------------------------------------

def progressive(make, X, y):
    """(accuracy, us per event) of one predict-then-learn pass (okl's fused loop)."""
    est = make()
    start = time.perf_counter()
    predictions = est._predictions(est._progressive_scores(X, y))
    return float(np.mean(predictions == y)), (time.perf_counter() - start) / len(y) * 1e6


def river_progressive(model, X, y):
    hits, start = 0, time.perf_counter()
    for x, label in zip(river_events(X), y.tolist()):
        hits += model.predict_one(x) == label
        model.learn_one(x, label)
    return hits / len(y), (time.perf_counter() - start) / len(y) * 1e6


def tune(X, y, fraction=0.2):
    """The grid's best parameters on the first `fraction` of the stream."""
    n = int(len(y) * fraction)
    best = None
    for values in itertools.product(*GRID.values()):
        params = dict(zip(GRID, values))
        accuracy, _ = progressive(lambda: OnlineKernelClassifier(budget=M, **params), X[:n], y[:n])
        if best is None or accuracy > best[0]:
            best = (accuracy, params)
    return best


def cost(rounds=25):
    """Per-event cost, k = 10 vs binary, in interleaved rounds (robust on a shared machine)."""
    for policy in ("merge", "oldest"):
        models = {k: warm(k, policy) for k in (2, 10)}
        times = {2: [], 10: []}
        for _ in range(rounds):
            for k, (est, X, y) in models.items():
                loop = event_loop(est.predict_one, est.learn_one, X, y)
                start = time.perf_counter()
                loop()
                times[k].append((time.perf_counter() - start) / len(y) * 1e6)
        low = {k: min(v) for k, v in times.items()}
        mid = {k: float(np.median(v)) for k, v in times.items()}
        print(f"{policy:>6}: binary {low[2]:.1f} / {mid[2]:.1f} us, k=10 {low[10]:.1f} / "
              f"{mid[10]:.1f} us (min / median of {rounds} interleaved rounds of {K} events); "
              f"ratio {low[10] / low[2]:.2f} / {mid[10] / mid[2]:.2f}")


def main():
    import sys
    if "--cost" in sys.argv:
        cost()
        return
    X, y = digits()
    accuracy_20, params = tune(X, y)
    print(f"tuned on the first 20% ({int(0.2 * len(y))} events): accuracy {accuracy_20:.4f}, "
          f"{params}")
    rows = [("OnlineKernelClassifier(budget=200), tuned", progressive(
                lambda: OnlineKernelClassifier(budget=M, **params), X, y)),
            ("OnlineKernelClassifier(budget=200), defaults", progressive(
                lambda: OnlineKernelClassifier(budget=M), X, y))]
    try:
        from river import ensemble, forest, neighbors, tree     # noqa: F401
        rows.append(("river KNNClassifier (window 200)", river_progressive(
            neighbors.KNNClassifier(engine=neighbors.LazySearch(window_size=M)), X, y)))
        rows.append(("river HoeffdingTreeClassifier", river_progressive(
            tree.HoeffdingTreeClassifier(), X, y)))
        rows.append(("river ARFClassifier (seed 0)", river_progressive(
            forest.ARFClassifier(seed=0), X, y)))
    except ImportError:
        print("river is not installed: its rows are left out")
    print(f"{'learner':<48} {'accuracy':>9} {'us/event':>9}")
    for name, (accuracy, us) in rows:
        print(f"{name:<48} {accuracy:>9.4f} {us:>9.1f}")


if __name__ == "__main__":
    main()
