"""Cost of one event for RegularizedPAClassifier: one event at a time vs the fused loop, vs river.

Every benchmark runs K events through a warm model (the kernel models hold
m = 100 centres, budget 100, so m stays fixed; d = 20) and reports the median
time per event (``extra_info["steps"] = K``).  Each event is "predict, then
learn", as progressive validation and a live stream do.  Groups: linear,
kernel (Gaussian, budget 100, each budget policy), 200 random Fourier
features and 200 Nystroem features (NOGD after its switch), two classes and k = 10.
Labels:

- "cython": the fused loop, ``partial_fit`` on the K rows at once (its
  predictions come out of the same loop); the reference of the ratios;
- "event": ``predict_one(x)`` + ``learn_one(x, y)`` on a 1-D float64 row
  (the compiled step `okl._core._pa.PAEvents`); "event-dict", "event-list",
  "event-f32", "event-F": a dict of feature name -> value, a Python list, a
  float32 row, a row of a Fortran-ordered X; "event-before": the one-row
  ``partial_fit`` / ``predict`` path every event took before the compiled step
  (the compiled step switched off for the timing);
- "river-PA": river's ``PAClassifier`` (PA-I, C = 1) on dicts (two classes
  only; river is optional: skipped without it).

    python -m pytest bench/bench_one_event_pa.py --benchmark-only
"""
import numpy as np
import pytest

from okl import RegularizedPAClassifier

M = 100         # centres of the kernel models
K = 300         # events per timed round
D = 20
MODELS = {
    "linear": dict(),
    "merge": dict(kernel="gaussian", gamma=0.05, budget=M, budget_policy="merge"),
    "oldest": dict(kernel="gaussian", gamma=0.05, budget=M, budget_policy="oldest"),
    "smallest": dict(kernel="gaussian", gamma=0.05, budget=M, budget_policy="smallest"),
    "fourier": dict(kernel="gaussian", gamma=0.05, approximation="fourier", n_components=200,
                    random_state=0),
    "nystroem": dict(kernel="gaussian", gamma=0.05, approximation="nystroem", n_components=200),
}
LAYOUTS = ["event", "event-dict", "event-list", "event-f32", "event-F", "event-before"]


def events(k, seed=0):
    rng = np.random.default_rng(seed)
    n = 2000 + K
    X = rng.normal(size=(n, D)) / np.sqrt(D) * 3.0
    W = rng.normal(size=(k, D))
    scores = X @ W.T + 0.5 * rng.normal(size=(n, k))
    y = np.argmax(scores, axis=1) if k > 2 else (scores[:, 0] > 0).astype(np.int64)
    return X, y


def names():
    return [f"x{j}" for j in range(D)]


def warm(model, k, dicts=False):
    """A model that learned 2000 events (a full budget), and the K events to time."""
    X, y = events(k)
    est = RegularizedPAClassifier(**MODELS[model], variant="PA-I", classes=list(range(k)))
    if dicts:
        for row, label in zip(X[:2000], y[:2000].tolist()):
            est.learn_one(dict(zip(names(), row.tolist())), label)
    else:
        est.partial_fit(X[:2000], y[:2000])
    if model in ("merge", "oldest", "smallest"):
        assert est.n_support_ == M
    return est, X[2000:], y[2000:]


def run(benchmark, model, k, label, loop):
    size = {"linear": "", "fourier": " D=200", "nystroem": " D=200"}.get(model, f" m={M}")
    benchmark.group = f"PA one event {model:<8} k={k:<2d} d={D}{size}"
    benchmark.extra_info.update(label=label, steps=K)
    benchmark.pedantic(loop, rounds=7, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("model", MODELS)
def test_fused_loop(benchmark, model, k):
    est, X, y = warm(model, k)
    run(benchmark, model, k, "cython", lambda: est.partial_fit(X, y))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("model", MODELS)
def test_one_event(benchmark, monkeypatch, model, k, layout):
    est, X, y = warm(model, k, dicts=layout == "event-dict")
    labels = y.tolist()
    if layout == "event-dict":
        rows = [dict(zip(names(), row.tolist())) for row in X]
    elif layout == "event-list":
        rows = [row.tolist() for row in X]
    elif layout == "event-f32":
        rows = list(X.astype(np.float32))
    elif layout == "event-F":
        rows = list(np.asfortranarray(X))
    else:
        rows = list(X)
    if layout == "event-before":    # the one-row partial_fit / predict path of every event
        monkeypatch.setattr(RegularizedPAClassifier, "_compiled_events",
                            lambda self, cache: None)

    def loop():
        for x, label in zip(rows, labels):
            est.predict_one(x)
            est.learn_one(x, label)
    run(benchmark, model, k, layout, loop)


def test_river_pa(benchmark):
    river = pytest.importorskip("river", reason="river is an optional peer")
    from river.linear_model import PAClassifier
    X, y = events(2)
    model = PAClassifier(C=1.0, mode=1)
    rows = [dict(zip(names(), row.tolist())) for row in X]
    for row, label in zip(rows[:2000], y[:2000].tolist()):
        model.learn_one(row, bool(label))
    timed, labels = rows[2000:], [bool(v) for v in y[2000:].tolist()]
    assert river is not None

    def loop():
        for x, label in zip(timed, labels):
            model.predict_one(x)
            model.learn_one(x, label)
    run(benchmark, "linear", 2, "river-PA", loop)
