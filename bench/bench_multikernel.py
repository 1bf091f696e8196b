"""Cost of one event: 8 Gaussian widths on one support set vs one learner (docs/multikernel.md).

A warm model of m = 200 centres (budget 200, so m stays fixed) on d = 20
features learns K more events; every benchmark reports the median time per
event.  In each group the reference ("single") is `OnlineKernelClassifier`
with one width, the same loss, budget and policy, timed in the same run:

- "8 widths": `MultiKernelClassifier` with 8 widths and one step scale (the
  issue's target: at most 3x "single");
- "8x3 default": 8 widths and the default step scales (1, 4, 16), 24 learners.

Groups "fused" time ``partial_fit`` on the K rows at once; groups "event" time
``learn_one`` per row (1-D float64 rows, the compiled one-event path).  Each
group runs with k = 2 classes (the binary model) and k = 10 (a score per
class and learner; the reference is then `OnlineKernelClassifier`'s
multiclass model).

    python -m pytest bench/bench_multikernel.py --benchmark-only
"""
import numpy as np
import pytest

from okl import MultiKernelClassifier, OnlineKernelClassifier

M, D, K = 200, 20, 400
WIDTHS = [2.0 ** j / D for j in range(-4, 4)]


def stream(k, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M + 1 + K, D))
    if k == 2:
        y = (X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=M + 1 + K) > 0).astype(np.int64)
    else:                           # k sectors of the angle in the first two features
        angle = np.arctan2(X[:, 1], X[:, 0]) + np.pi
        y = np.minimum((angle / (2 * np.pi) * k).astype(np.int64), k - 1)
    return X, y


def warm(label, policy, k=2):
    X, y = stream(k)
    common = dict(loss="logistic", budget=M, budget_policy=policy)
    if label == "single":
        est = OnlineKernelClassifier(gamma=1.0 / D, **common)
    elif label == "8 widths":
        est = MultiKernelClassifier(gammas=WIDTHS, eta_scales=[1.0], **common)
    else:
        est = MultiKernelClassifier(gammas=WIDTHS, **common)
    # M + 1 rows: the budget is full and a merging model has its newcomer's slot B + 1
    est.partial_fit(X[:M + 1], y[:M + 1], classes=list(range(k)))
    assert est.n_support_ == M
    return est, X[M + 1:], y[M + 1:]


LABELS = ("single", "8 widths", "8x3 default")


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("policy", ["oldest", "smallest", "merge"])
@pytest.mark.parametrize("label", LABELS)
def test_fused(benchmark, label, policy, k):
    est, X, y = warm(label, policy, k)
    benchmark.group = f"multikernel fused m={M} d={D} k={k} {policy}"
    benchmark.extra_info.update(label=label, ref="single", steps=K)

    def run():                      # the model stays at m = B centres: steady state
        est.partial_fit(X, y)
    benchmark(run)


@pytest.mark.parametrize("k", [2, 10])
@pytest.mark.parametrize("policy", ["oldest", "smallest", "merge"])
@pytest.mark.parametrize("label", LABELS)
def test_event(benchmark, label, policy, k):
    est, X, y = warm(label, policy, k)
    rows, labels = list(X), y.tolist()
    benchmark.group = f"multikernel event m={M} d={D} k={k} {policy}"
    benchmark.extra_info.update(label=label, ref="single", steps=K)

    def run():
        for x, target in zip(rows, labels):
            est.learn_one(x, target)
    benchmark(run)
