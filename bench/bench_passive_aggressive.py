"""Throughput of RegularizedPAClassifier against scikit-learn's passive-aggressive SGD.

Groups (each in one run, ratios to the "cython" label):
- "pa <regularization> dense d=100 n=200000": one pass over 2e5 dense samples;
- "pa <regularization> sparse d=10000 nnz=50 n=20000": one pass over 2e4 CSR rows
  with 50 term counts each (Zipf-like term frequencies, log-scaled, unit norm);
- "sklearn" is SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1",
  eta0=1, fit_intercept=False): scikit-learn's PA-I, one epoch by partial_fit;
  "numpy" is okl's reference engine on the first 2000 samples.
- "pa l1 text d=8000 n=3200": the L1-constrained learner on 3200 binary
  bag-of-words documents of 8000 features (~100 words each), Shen-Dietterich's
  20NewsGroup workload, which they report under 10 minutes with a QP package.
The L1 step projects onto {y x.w >= 1, ||w||_1 <= beta}: O(d) per update, so on
sparse data its pass is timed on the first 2000 rows.

Run: python -m pytest bench/bench_passive_aggressive.py --benchmark-only -q
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

from okl import RegularizedPAClassifier

RULES = {"none": {}, "objective": dict(alpha=0.01), "l2": dict(beta=2.0), "l1": dict(beta=10.0)}
NUMPY_STEPS = 2000
SPARSE_L1_STEPS = 2000


def labelled(X, rng, noise=0.1):
    u = rng.normal(size=X.shape[1])
    f = X @ u
    return np.where(f + noise * np.std(f) * rng.normal(size=X.shape[0]) > 0, 1, -1)


def text(n, d, words, rng, binary=False):
    """CSR term counts: `words` draws per row from Zipf-like frequencies 1 / (rank + 10)."""
    p = 1.0 / (np.arange(d) + 10.0)
    cols = rng.choice(d, size=(n, words), p=p / p.sum())
    X = sp.csr_matrix((np.ones(n * words), cols.ravel(), np.arange(0, n * words + 1, words)),
                      shape=(n, d))
    X.sum_duplicates()
    if binary:
        X.data[:] = 1.0
    else:
        X.data = np.log1p(X.data)
        X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(axis=1))))
    return X


@pytest.fixture(scope="module")
def streams():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(200_000, 100)) / 10.0
    sparse = text(20_000, 10_000, 50, rng)
    docs = text(3200, 8000, 110, rng, binary=True)
    return {"dense": (dense, labelled(dense, rng)), "sparse": (sparse, labelled(sparse, rng)),
            "text": (docs, labelled(docs, rng))}


def group(benchmark, name, label, steps):
    benchmark.group = name
    benchmark.extra_info["label"] = label
    benchmark.extra_info["steps"] = steps


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("label", ["cython", "numpy", "sklearn"])
def test_one_pass(benchmark, streams, kind, rule, label):
    X, y = streams[kind]
    if label == "numpy":
        X, y = X[:NUMPY_STEPS], y[:NUMPY_STEPS]
    elif rule == "l1" and kind == "sparse":
        X, y = X[:SPARSE_L1_STEPS], y[:SPARSE_L1_STEPS]
    shape = "dense d=100 n=200000" if kind == "dense" else "sparse d=10000 nnz=50 n=20000"
    group(benchmark, f"pa {rule} {shape}", label, X.shape[0])
    if label == "sklearn":
        make = lambda: SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1", eta0=1.0,
                                     fit_intercept=False, shuffle=False)
        learn = lambda est: est.partial_fit(X, y, classes=[-1, 1])
    else:
        make = lambda: RegularizedPAClassifier(regularization=rule, engine=label, **RULES[rule])
        learn = lambda est: est.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        benchmark.pedantic(learn, setup=lambda: ((make(),), {}),
                           rounds=1 if label == "numpy" else 5, iterations=1)


@pytest.mark.parametrize("label", ["cython", "numpy"])
def test_l1_text(benchmark, streams, label):
    X, y = streams["text"]
    if label == "numpy":
        X, y = X[:200], y[:200]
    group(benchmark, "pa l1 text d=8000 n=3200", label, X.shape[0])
    est = benchmark.pedantic(
        lambda: RegularizedPAClassifier(regularization="l1", beta=10.0, engine=label).fit(X, y),
        rounds=3 if label == "cython" else 1, iterations=1)
    benchmark.extra_info["updates"] = est.n_updates_
    benchmark.extra_info["nonzero weights"] = int(np.count_nonzero(est.coef_))
