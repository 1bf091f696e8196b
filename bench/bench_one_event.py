"""Cost of one event: okl one event at a time vs okl's fused loop, river, scikit-learn, VW.

Every benchmark runs a stream of K events through a model that is already
warm (W = 101 events: m = 100 centres, budget 100, so m stays fixed; a
regressor's first event only sets its offset) and reports the median
time per event (``extra_info["steps"] = K``).  Each event is "predict, then
learn", as progressive validation and a live stream do.  Labels:

- "cython": okl's fused loop, ``partial_fit`` on the K rows at once (the
  predictions come out of the same loop); the reference of the ratios;
- "event": ``predict_one(x)`` + ``learn_one(x, y)`` on a 1-D float64 row;
  "event-dict": the same with a dict of feature name -> value; "event-list",
  "event-f32", "event-F": a Python list, a float32 row, a row of a
  Fortran-ordered X (non-contiguous), in the group "one event row types" whose
  reference is "event" (any row type should cost at most 1.5x a ready row), and in
  "one event row types PairwiseLearner" for a ranker of 100 stored points;
  "okl-river":
  the same through ``okl.river.to_river`` (river's protocol, dicts);
- "row": ``predict(X[i:i+1])`` + ``partial_fit(X[i:i+1], y[i:i+1])`` on a ready
  C-contiguous float64 row; "row-list", "row-f32", "row-F": the same with a
  list, a float32 row, a row of a Fortran-ordered X; "pfit-row": the one-row
  ``partial_fit`` alone;
- peers on the same events: river's LinearRegression ("river-LR"),
  LogisticRegression ("river-Log"), PAClassifier ("river-PA") on dicts;
  scikit-learn's SGDRegressor / SGDClassifier ``predict`` + ``partial_fit`` on
  one row ("sk-SGD"); vowpalwabbit's predict + learn on pre-formatted lines
  ("vw"), when installed.

river and vowpalwabbit are optional: their benchmarks are skipped without them.

    python -m pytest bench/bench_one_event.py --benchmark-only
    python bench/bench_one_event.py      # every learner beside its fused loop (p5 / median)
    python bench/bench_one_event.py Pairwise     # the learners whose name holds "Pairwise"
"""
import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier, SGDRegressor

from okl import OnlineKernelClassifier, OnlineKernelRegressor, PairwiseLearner

M = 100          # centres
W = M + 1        # warm-up events: a regressor's first one only sets its offset (no centre)
K = 300          # events per timed round
TASKS = ("regression", "classification")


def events(task, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(W + K, d)) / np.sqrt(d)
    if task == "regression":
        y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=W + K)
    else:
        y = (X[:, 0] * X[:, 1] + 0.05 * rng.normal(size=W + K) > 0).astype(np.int64)
    return X, y


def warm_okl(task, d):
    X, y = events(task, d)
    if task == "regression":
        est = OnlineKernelRegressor(gamma=0.5, budget=M)
        est.partial_fit(X[:W], y[:W])
    else:
        est = OnlineKernelClassifier(gamma=0.5, loss="logistic", budget=M)
        est.partial_fit(X[:W], y[:W], classes=[0, 1])
    assert est.n_support_ == M
    return est, X[W:], y[W:]


def one_event_api(est):
    """learn_one / predict_one: the estimator's own, else okl's adapter (same iterates)."""
    if hasattr(est, "learn_one"):
        return est.predict_one, est.learn_one
    from okl.pipeline import EventAdapter
    adapter = EventAdapter(est)
    return adapter.predict_one, adapter.learn_one


def run(benchmark, task, d, label, loop):
    benchmark.group = f"one event {task:<14} d={d:<2d} m={M}"
    benchmark.extra_info.update(label=label, steps=K)
    benchmark.pedantic(loop, rounds=7, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task", TASKS)
def test_fused_loop(benchmark, task, d):
    est, X, y = warm_okl(task, d)
    run(benchmark, task, d, "cython", lambda: est.partial_fit(X, y))
    assert est.n_support_ == M


def dict_events(X, d):
    names = [f"x{j}" for j in range(d)]
    return [dict(zip(names, row.tolist())) for row in X]


def warm_by_events(task, d, learn_one, est):
    """Learn the first W events as dicts through the one-event API (names fixed by the first)."""
    X, y = events(task, d)
    rows, labels = dict_events(X, d), y.tolist()
    for x, target in zip(rows[:W], labels[:W]):
        learn_one(x, target)
    assert est.n_support_ == M
    return rows[W:], labels[W:]


def make_okl(task):
    if task == "regression":
        return OnlineKernelRegressor(gamma=0.5, budget=M)
    return OnlineKernelClassifier(gamma=0.5, loss="logistic", budget=M)


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("form", ["event", "event-dict"])
def test_okl_one_event(benchmark, task, d, form):
    if form == "event-dict":
        est = make_okl(task)
        predict_one, learn_one = one_event_api(est)
        rows, labels = warm_by_events(task, d, learn_one, est)
    else:
        est, X, y = warm_okl(task, d)
        predict_one, learn_one = one_event_api(est)
        rows, labels = list(X), y.tolist()

    def loop():
        for x, target in zip(rows, labels):
            predict_one(x)
            learn_one(x, target)
    run(benchmark, task, d, form, loop)
    assert est.n_support_ == M


ROW_FORMS = ["event", "event-list", "event-f32", "event-F", "event-dict"]


def row_form(est, X, form):
    """The rows of X as `form` gives them (a dict learner's names set as if its first event
    had been a dict)."""
    d = X.shape[1]
    if form == "event-dict":
        est._row_keys = tuple(f"x{j}" for j in range(d))
        return dict_events(X, d)
    if form == "event-list":
        return X.tolist()
    if form == "event-f32":
        return list(X.astype(np.float32))
    if form == "event-F":
        return list(np.asfortranarray(X))
    return list(X)


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("form", ROW_FORMS)
def test_okl_event_row_types(benchmark, task, d, form):
    est, X, y = warm_okl(task, d)
    predict_one, learn_one = one_event_api(est)
    rows, labels = row_form(est, X, form), y.tolist()

    def loop():
        for x, target in zip(rows, labels):
            predict_one(x)
            learn_one(x, target)
    benchmark.group = f"one event row types {task:<14} d={d:<2d} m={M}"
    benchmark.extra_info.update(label=form, steps=K, ref="event")
    benchmark.pedantic(loop, rounds=7, iterations=1, warmup_rounds=1)
    assert est.n_support_ == M


@pytest.mark.parametrize("pair_kernel", ["linear", "difference"])
@pytest.mark.parametrize("form", ROW_FORMS)
def test_pairwise_event_row_types(benchmark, pair_kernel, form):
    """PairwiseLearner, m = 100 stored points (a reservoir), d = 20: each row type beside a
    ready row (the difference pair kernel's g also gains a centre per event)."""
    X, y = events("regression", 20)
    est = PairwiseLearner(pair_kernel=pair_kernel, gamma=0.5, eta=0.5, buffer=M,
                          random_state=0).fit(X[:W], y[:W])
    rows, labels = row_form(est, X[W:], form), y[W:].tolist()

    def loop():
        for x, target in zip(rows, labels):
            est.predict_one(x)
            est.learn_one(x, target)
    benchmark.group = f"one event row types PairwiseLearner {pair_kernel:<10} d=20 buffer={M}"
    benchmark.extra_info.update(label=form, steps=K, ref="event")
    benchmark.pedantic(loop, rounds=7, iterations=1, warmup_rounds=1)
    assert est.n_stored_ == M


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task", TASKS)
def test_okl_through_river(benchmark, task, d):
    pytest.importorskip("river", reason="river is an optional peer")
    from okl.river import to_river
    est = make_okl(task)
    model = to_river(est)
    rows, labels = warm_by_events(task, d, model.learn_one, est)

    def loop():
        for x, target in zip(rows, labels):
            model.predict_one(x)
            model.learn_one(x, target)
    run(benchmark, task, d, "okl-river", loop)


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("layout", ["row", "row-list", "row-f32", "row-F", "pfit-row"])
def test_okl_one_row(benchmark, task, d, layout):
    est, X, y = warm_okl(task, d)
    if layout == "row-list":
        rows = [X[i:i + 1].tolist() for i in range(K)]
    elif layout == "row-f32":
        X32 = X.astype(np.float32)
        rows = [X32[i:i + 1] for i in range(K)]
    elif layout == "row-F":
        XF = np.asfortranarray(X)
        rows = [XF[i:i + 1] for i in range(K)]
    else:
        rows = [X[i:i + 1] for i in range(K)]
    targets = [y[i:i + 1] for i in range(K)]
    predict, partial_fit = est.predict, est.partial_fit

    if layout == "pfit-row":
        def loop():
            for x, target in zip(rows, targets):
                partial_fit(x, target)
    else:
        def loop():
            for x, target in zip(rows, targets):
                predict(x)
                partial_fit(x, target)
    run(benchmark, task, d, layout, loop)


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task", TASKS)
def test_sklearn_sgd(benchmark, task, d):
    X, y = events(task, d)
    est = SGDRegressor() if task == "regression" else SGDClassifier(loss="log_loss")
    kwargs = {} if task == "regression" else {"classes": [0, 1]}
    est.partial_fit(X[:W], y[:W], **kwargs)
    rows = [X[W + i:W + i + 1] for i in range(K)]
    targets = [y[W + i:W + i + 1] for i in range(K)]

    def loop():
        for x, target in zip(rows, targets):
            est.predict(x)
            est.partial_fit(x, target)
    run(benchmark, task, d, "sk-SGD", loop)


RIVER_MODELS = {
    "regression": {"river-LR": lambda lm: lm.LinearRegression()},
    "classification": {"river-Log": lambda lm: lm.LogisticRegression(),
                       "river-PA": lambda lm: lm.PAClassifier()},
}


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task, label", [(task, label) for task in TASKS
                                         for label in RIVER_MODELS[task]])
def test_river(benchmark, task, label, d):
    linear_model = pytest.importorskip("river.linear_model", reason="river is an optional peer")
    X, y = events(task, d)
    names = [f"x{j}" for j in range(d)]
    rows = [dict(zip(names, row.tolist())) for row in X]
    labels = y.tolist() if task == "regression" else [bool(v) for v in y]
    model = RIVER_MODELS[task][label](linear_model)
    for x, target in zip(rows[:W], labels[:W]):
        model.learn_one(x, target)
    rows, labels = rows[W:], labels[W:]

    def loop():
        for x, target in zip(rows, labels):
            model.predict_one(x)
            model.learn_one(x, target)
    run(benchmark, task, d, label, loop)


@pytest.mark.parametrize("d", [5, 20])
@pytest.mark.parametrize("task", TASKS)
def test_vowpalwabbit(benchmark, task, d):
    vw_module = pytest.importorskip("vowpalwabbit", reason="vowpalwabbit is an optional peer")
    X, y = events(task, d)
    loss = "squared" if task == "regression" else "logistic"
    vw = vw_module.Workspace(f"--quiet --loss_function {loss}")
    targets = y.astype(float) if task == "regression" else np.where(y > 0, 1.0, -1.0)
    features = [" ".join(f"x{j}:{v:.17g}" for j, v in enumerate(row)) for row in X]
    lines = [f"{t:.17g} | {f}" for t, f in zip(targets, features)]
    queries = [f"| {f}" for f in features]
    for line in lines[:W]:
        vw.learn(line)
    lines, queries = lines[W:], queries[W:]

    def loop():
        for query, line in zip(queries, lines):
            vw.predict(query)
            vw.learn(line)
    run(benchmark, task, d, "vw", loop)
    vw.finish()


def every_learner(rounds=5, chunk=100, n=2000, only=""):
    """predict_one + learn_one of every learner at m = 100 centres (or D = 100-500 features),
    d = 20 (64 for the feature models of bench_one_event_features.py), beside its fused loop:
    per event, the 5th percentile / median over chunks of 100 events of interleaved rounds on
    copies of one warm model (each copy first takes 50 events: its first calls validate its
    parameters and build the compiled step, once per estimator object).  `only`: the
    learners whose name holds it."""
    import copy
    import time

    from okl import CoefficientRegularizedClassifier, RegularizedPAClassifier

    def stream(d, task, rows):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(rows, d)) / np.sqrt(d)
        return X, (np.sin(3 * X[:, 0]) if task == "regression"
                   else (X[:, 0] * X[:, 1] > 0).astype(np.int64))

    learners = {
        "OnlineKernelClassifier(budget=100)": (
            lambda: OnlineKernelClassifier(gamma=0.5, budget=M), 20, "classification", W),
        "OnlineKernelRegressor(budget=100)": (
            lambda: OnlineKernelRegressor(gamma=0.5, budget=M), 20, "regression", W),
        "CoefficientRegularizedClassifier(n_centers=100)": (
            lambda: CoefficientRegularizedClassifier(n_centers=M, gamma=0.5, loss="hinge"), 20,
            "classification", 600),
        "RegularizedPAClassifier linear": (
            lambda: RegularizedPAClassifier(variant="PA-I"), 20, "classification", 2000),
        "RegularizedPAClassifier kernel, budget 100": (
            lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.05, budget=M,
                                            budget_policy="oldest", variant="PA-I"), 20,
            "classification", 2000),
        "Fourier D=200 d=64": (
            lambda: OnlineKernelClassifier(approximation="fourier", n_components=200,
                                           gamma=0.5, loss="hinge", random_state=0), 64,
            "classification", 600),
        "Fourier D=500 d=64": (
            lambda: OnlineKernelClassifier(approximation="fourier", n_components=500,
                                           gamma=0.5, loss="hinge", random_state=0), 64,
            "classification", 600),
        "Nystroem D=200 d=64": (
            lambda: OnlineKernelClassifier(approximation="nystroem", n_components=200,
                                           gamma=0.5, loss="hinge", random_state=0), 64,
            "classification", 600),
        "Nystroem D=100 d=20": (
            lambda: OnlineKernelClassifier(approximation="nystroem", n_components=100,
                                           gamma=0.5, loss="hinge", random_state=0), 20,
            "classification", 600),
        # a ranker's step reads its m = 100 stored points (buffer); the difference pair
        # kernel's g also has one centre per step (t = 150 ... 2150 here)
        "PairwiseLearner linear, buffer 100": (
            lambda: PairwiseLearner(eta=0.5, buffer=M, random_state=0), 20, "regression", W),
        "PairwiseLearner metric, buffer 100": (
            lambda: PairwiseLearner(pair_kernel="metric", eta=0.01, buffer=M, random_state=0),
            20, "regression", W),
        "PairwiseLearner difference, buffer 100": (
            lambda: PairwiseLearner(pair_kernel="difference", gamma=0.5, eta=0.5, buffer=M,
                                    random_state=0), 20, "regression", W),
        "PairwiseLearner linear, every point (t = 1050-3050)": (
            lambda: PairwiseLearner(eta=0.5), 20, "regression", 1000),
        "PairwiseLearner squared (running moments)": (
            lambda: PairwiseLearner(loss="squared", reducer="difference", eta=0.05), 20,
            "regression", W),
    }
    prime = 50
    for name, (make, d, task, warm) in learners.items():
        if only and only not in name:
            continue
        X, y = stream(d, task, warm + prime + n)
        est = make()
        kwargs = {"classes": [0, 1]} if task == "classification" else {}
        est.partial_fit(X[:warm], y[:warm], **kwargs)
        # a metric ranker has no score of one point: its events only learn
        predicts = getattr(est, "pair_kernel", None) != "metric"
        X, y = X[warm:], y[warm:]
        rows, labels = list(X), y.tolist()
        fused, one = [], []
        for _ in range(rounds):
            a, b = copy.deepcopy(est), copy.deepcopy(est)
            a.partial_fit(X[:prime], y[:prime])
            for x, target in zip(rows[:prime], labels[:prime]):
                if predicts:
                    b.predict_one(x)
                b.learn_one(x, target)
            for s in range(prime, prime + n, chunk):
                start = time.perf_counter()
                a.partial_fit(X[s:s + chunk], y[s:s + chunk])
                fused.append(time.perf_counter() - start)
                start = time.perf_counter()
                for x, target in zip(rows[s:s + chunk], labels[s:s + chunk]):
                    if predicts:
                        b.predict_one(x)
                    b.learn_one(x, target)
                one.append(time.perf_counter() - start)
        f, e = np.array(fused) / chunk * 1e6, np.array(one) / chunk * 1e6
        print(f"{name:48s} fused {np.percentile(f, 5):5.2f} / {np.median(f):5.2f} us   one event "
              f"{np.percentile(e, 5):5.2f} / {np.median(e):5.2f} us   ratio "
              f"{np.percentile(e, 5) / np.percentile(f, 5):4.2f}", flush=True)


if __name__ == "__main__":
    import sys
    every_learner(only=" ".join(sys.argv[1:]))
