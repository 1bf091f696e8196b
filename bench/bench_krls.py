"""Per-event cost of KernelRLSRegressor (docs/krls.md) with a full budget of m centres.

Labels, per group "krls d=10 m=B":

- "cython": the compiled chunk loop, every event new to the dictionary (it enters, and
  one centre leaves by the significance rule), no forgetting;
- "forget": the same with forgetting 0.999 (back to the prior at every event);
- "oldest": the sliding window (the oldest centre leaves: the most rotations);
- "one": ``predict_one`` then ``learn_one`` of the estimator on 1-D rows (the step takes
  the evaluation of the row its prediction left);
- "learn": ``learn_one`` alone (what "one" costs beyond it is the prediction);
- "no-reuse": "one" with the prediction of a row one ulp away, which the step cannot take (the
  cost of "one" before the step took the prediction's evaluation);
- "numpy": the NumPy engine;
- "limit": the BLAS limit of the same update, one dsymv (g = S l) and one dsyr
  (S -= c g g^T) on the m x m matrix, the work no O(m^2) step can avoid;
- "river": river's ``LinearRegression`` (``predict_one`` then ``learn_one`` of dict events),
  what a user picks for speed.

Group "krls conformal m=B": ``ConformalRegressor(KernelRLSRegressor(budget=B))`` learning a
chunk of rows, "chunk" through the learner's compiled chunks (each row's mean and predictive
std before its step), "events" through the event loop it falls back to for other learners.

    python -m pytest bench/bench_krls.py --benchmark-only
"""
import numpy as np
import pytest
from scipy.linalg import blas

from okl import ConformalRegressor, KernelRLSRegressor

D = 10
ROUNDS = 31


def full_model(m, engine="cython", **params):
    rng = np.random.default_rng(0)
    est = KernelRLSRegressor(gamma=2.0, noise=1e-3, budget=m, engine=engine, **params)
    X = rng.uniform(-1, 1, size=(3 * m, D))
    est.fit(X, np.sin(X).sum(axis=1))
    assert est.n_support_ == m
    return est, rng


def events(rng, k):
    X = rng.uniform(-1, 1, size=(k, D))
    return X, np.sin(X).sum(axis=1)


SETTINGS = {"cython": {}, "forget": dict(forgetting=0.999), "oldest": dict(budget_policy="oldest")}


@pytest.mark.parametrize("m", [50, 100, 200, 500])
@pytest.mark.parametrize("label", sorted(SETTINGS))
def test_chunk(benchmark, label, m):
    est, rng = full_model(m, **SETTINGS[label])
    k = max(4, 40000 // m)
    X, y = events(rng, k)
    model = est._krls
    from okl._core._krls import fit_chunk
    pred, var = np.empty(k), np.empty(k)
    benchmark.group = f"krls d={D} m={m}"
    benchmark.extra_info.update(label=label, steps=k)
    benchmark.pedantic(fit_chunk, args=(model, X, y, pred, var), rounds=ROUNDS, iterations=1,
                       warmup_rounds=1)
    assert model.n_support == m


@pytest.mark.parametrize("m", [50, 100, 200, 500])
@pytest.mark.parametrize("label", ["one", "no-reuse"])
def test_one_event(benchmark, label, m):
    est, rng = full_model(m)
    k = max(4, 20000 // m)
    X, y = events(rng, k)
    y = y.tolist()
    P = X if label == "one" else np.nextafter(X, np.inf)

    def run():
        for i in range(k):
            est.predict_one(P[i])
            est.learn_one(X[i], y[i])

    benchmark.group = f"krls d={D} m={m}"
    benchmark.extra_info.update(label=label, steps=k)
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("m", [50, 100, 200, 500])
def test_learn_one(benchmark, m):
    est, rng = full_model(m)
    k = max(4, 20000 // m)
    X, y = events(rng, k)
    y = y.tolist()

    def run():
        for i in range(k):
            est.learn_one(X[i], y[i])

    benchmark.group = f"krls d={D} m={m}"
    benchmark.extra_info.update(label="learn", steps=k)
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1)


class EventLoopKRLS(KernelRLSRegressor):
    """KernelRLSRegressor without its chunks of (mean, std): ConformalRegressor's event loop."""
    _progressive_std = None


@pytest.mark.parametrize("m", [50, 200])
@pytest.mark.parametrize("label", ["chunk", "events"])
def test_conformal(benchmark, label, m):
    rng = np.random.default_rng(0)
    learner = (KernelRLSRegressor if label == "chunk" else EventLoopKRLS)(gamma=2.0, noise=1e-3,
                                                                           budget=m)
    X, y = events(rng, 3 * m)
    model = ConformalRegressor(learner).fit(X, y)
    k = max(4, 20000 // m)
    X, y = events(rng, k)
    benchmark.group = f"krls conformal m={m}"
    benchmark.extra_info.update(label=label, steps=k)
    benchmark.pedantic(model.partial_fit, args=(X, y), rounds=ROUNDS // 3, iterations=1,
                       warmup_rounds=1)


@pytest.mark.parametrize("m", [50, 100, 200])
def test_numpy(benchmark, m):
    est, rng = full_model(m, engine="numpy")
    k = 20
    X, y = events(rng, k)
    benchmark.group = f"krls d={D} m={m}"
    benchmark.extra_info.update(label="numpy", steps=k)
    benchmark.pedantic(est.partial_fit, args=(X, y), rounds=5, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("m", [50, 100, 200, 500])
def test_limit(benchmark, m):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(m, m)) / m
    S = np.asfortranarray(np.eye(m) + A @ A.T)
    l = rng.normal(size=m)
    k = max(4, 40000 // m)

    def run():
        for _ in range(k):
            g = blas.dsymv(1.0, S, l)
            blas.dsyr(-1e-3, g, a=S, overwrite_a=True)

    benchmark.group = f"krls d={D} m={m}"
    benchmark.extra_info.update(label="limit", steps=k)
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("m", [50, 100, 200, 500])
def test_river(benchmark, m):
    linear_model = pytest.importorskip("river.linear_model", reason="river is the peer here")
    rng = np.random.default_rng(0)
    model = linear_model.LinearRegression()
    k = 2000
    X, y = events(rng, k)
    rows = [{f"x{j}": v for j, v in enumerate(x)} for x in X.tolist()]
    y = y.tolist()

    def run():
        for i in range(k):
            model.predict_one(rows[i])
            model.learn_one(rows[i], y[i])

    benchmark.group = f"krls d={D} m={m}"
    benchmark.extra_info.update(label="river", steps=k)
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1)
