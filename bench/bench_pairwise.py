"""PairwiseLearner: cost of one step of Algorithm 1 against the points already seen.

Run:  python -m pytest bench/bench_pairwise.py --benchmark-only -q

A step at stream position t averages over t stored points, so each benchmark
first builds a model that has seen t points (stored directly, without paying
for the t previous steps), then times partial_fit steps from there (64 per
call for the linear kernel, 8 for the difference kernel; the ~0.2 ms of input
checks per call is included).  Groups, each with the cython and numpy engines:
  linear hinge d t      per-step cost vs t; "2 gemv" is NumPy's two
                        matrix-vector products over the history alone, the
                        floor of any implementation that reads it twice
                        (the cython pass reads it once)
  squared linear d t    the running-moment shortcut (O(d^2)) vs the full
                        O(t d) average ("full average", cython)
  difference gaussian   O(t d + t^2) per step with the Gram matrix cached;
                        with buffer=B, O(t d + B^2)
"""
import copy

import numpy as np
import pytest

from okl import PairwiseLearner
from okl.pairwise import PairHistory

STEPS = 64      # partial_fit steps per timed call (amortizes the ~0.2 ms of input checks)


def stored_linear(t, d, engine, loss="hinge", reducer="sign"):
    """A linear-pair-kernel model that stores t random points (no steps paid for)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(t, d)), rng.normal(size=t)
    est = PairwiseLearner(loss=loss, reducer=reducer, eta=0.5, engine=engine)
    est._running_moments = False
    est.fit(X[:2], y[:2])
    est._history = PairHistory.from_state(
        dict(n_features=d, kind="points", buffer=None, m=t, y=y, X=X))
    est._history.reserve(STEPS)
    est.coef_ = 0.01 * rng.normal(size=d)
    est.t_ = t
    return est


def chunk(d, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(STEPS, d)), rng.normal(size=STEPS)


def time_steps(benchmark, make, X, y, group, label, rounds):
    benchmark.group = group
    benchmark.extra_info["label"] = label
    benchmark.extra_info["steps"] = len(X)
    benchmark.pedantic(lambda est: est.partial_fit(X, y), setup=lambda: ((make(),), {}),
                       rounds=rounds, iterations=1)


@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("t", [100, 300, 1000, 5000, 20000])
@pytest.mark.parametrize("label", ["cython", "numpy", "2 gemv"])
def test_linear_step(benchmark, label, t, d):
    X, y = chunk(d)
    group = f"pairwise linear hinge d={d} t={t}"
    rounds = 5 if t * d >= 500_000 else 15
    if label == "2 gemv":
        H = np.random.default_rng(0).normal(size=(t, d))
        w, g = np.ones(d), np.ones(t)

        def two_passes():
            for _ in range(STEPS):
                H @ w
                g @ H
        benchmark.group = group
        benchmark.extra_info.update(label=label, steps=STEPS)
        benchmark.pedantic(two_passes, rounds=rounds, iterations=1)
        return
    template = stored_linear(t, d, label)
    time_steps(benchmark, lambda: copy.deepcopy(template), X, y, group, label, rounds)


@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("label", ["cython", "numpy", "full average"])
def test_squared_shortcut(benchmark, label, d):
    t = 20000
    X, y = chunk(d)
    if label == "full average":
        template = stored_linear(t, d, "cython", loss="squared", reducer="difference")
    else:
        rng = np.random.default_rng(0)
        Xs = rng.normal(size=(t, d))
        template = PairwiseLearner(loss="squared", reducer="difference", eta=0.01,
                                   engine=label).fit(Xs, Xs[:, 0])
    time_steps(benchmark, lambda: copy.deepcopy(template), X, y,
               f"pairwise squared linear d={d} t={t}", label, 10)


_DIFFERENCE = {}


def stored_difference(t, d, buffer):
    """A difference-kernel model after t real steps (built once per size, by cython)."""
    key = (t, d, buffer)
    if key not in _DIFFERENCE:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(t, d))
        _DIFFERENCE[key] = PairwiseLearner(pair_kernel="difference", gamma=0.1, eta=0.5,
                                           buffer=buffer, random_state=0).fit(X, X[:, 0])
    return _DIFFERENCE[key]


@pytest.mark.parametrize("t,buffer", [(500, None), (1000, None), (2000, None), (2000, 500)])
@pytest.mark.parametrize("label", ["cython", "numpy"])
def test_difference_step(benchmark, label, t, buffer):
    d = 10
    X, y = chunk(d)
    template = stored_difference(t, d, buffer)

    def make():
        est = copy.deepcopy(template)
        est.set_params(engine=label)
        est._g()                    # convert the expansion outside the timing
        return est
    group = f"pairwise difference gaussian d={d} t={t}" + (f" B={buffer}" if buffer else "")
    time_steps(benchmark, make, X[:8], y[:8], group, label, 5)
