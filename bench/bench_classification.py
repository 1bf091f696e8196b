"""Per-step cost of the classifiers: cython engine vs numpy engine vs the BLAS limit.

Each group times learning a chunk of a stream from a model that already holds m
centres, so every step costs one pass over m centres of dimension d:
- "coefreg": CoefficientRegularizedClassifier with m given centres (dense update
  of all m coefficients per step);
- "norma": OnlineKernelClassifier with the logistic loss (every sample becomes a
  centre) and budget m (the oldest centre leaves).
The "limit" label is f(x) of the same chunk by batch prediction (a dgemm of
256 rows at a time against the centres, then vectorised exponentials), per
row: every online step evaluates f(x_t), so no online loop can beat it.
BLAS runs on one thread (bench/conftest.py).

Run: python -m pytest bench/bench_classification.py --benchmark-only -q
"""
import pickle

import numpy as np
import pytest

from okl import CoefficientRegularizedClassifier, OnlineKernelClassifier

GRID = [(d, m) for d in (10, 100) for m in (10, 100, 1000, 10000)]
STEPS = {"cython": 2000, "numpy": 200}


def data(d, m, n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m + n, d)) / np.sqrt(d)
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=m + n) > 0, 1, -1)
    return X, y


def fitted(algorithm, engine, d, m):
    """A model holding m centres, ready to learn the stream after them.

    Built by the cython engine; the next call converts it to `engine`.
    """
    X, y = data(d, m, 0)
    if algorithm == "coefreg":
        est = CoefficientRegularizedClassifier(centers=X, gamma=0.5)
    else:
        est = OnlineKernelClassifier(loss="logistic", budget=m, gamma=0.5)
    return est.partial_fit(X, y, classes=[-1, 1]).set_params(engine=engine)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("d, m", GRID)
@pytest.mark.parametrize("algorithm", ["coefreg", "norma"])
def test_step(benchmark, algorithm, d, m, engine):
    steps = STEPS[engine]
    X, y = data(d, m, steps, seed=1)
    X, y = X[m:], y[m:]
    frozen = pickle.dumps(fitted(algorithm, engine, d, m))

    def setup():
        return (pickle.loads(frozen), X, y), {}

    benchmark.group = f"{algorithm} gaussian d={d} m={m}"
    benchmark.extra_info["label"] = engine
    benchmark.extra_info["steps"] = steps
    benchmark.pedantic(lambda est, X, y: est.partial_fit(X, y), setup=setup,
                       rounds=5 if engine == "cython" else 3, iterations=1)


@pytest.mark.parametrize("d, m", GRID)
@pytest.mark.parametrize("algorithm", ["coefreg", "norma"])
def test_batch_limit(benchmark, algorithm, d, m):
    steps = STEPS["cython"]
    X, _ = data(d, m, steps, seed=1)
    est = fitted(algorithm, "cython", d, m)
    benchmark.group = f"{algorithm} gaussian d={d} m={m}"
    benchmark.extra_info["label"] = "limit"
    benchmark.extra_info["steps"] = steps
    benchmark.pedantic(est.decision_function, args=(X[m:],), rounds=5, iterations=1)
