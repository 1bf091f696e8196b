"""PairwiseLearner: cost of one step of Algorithm 1 against the points already seen.

Run:  python -m pytest bench/bench_pairwise.py --benchmark-only -q

A step at stream position t averages over t stored points, so each benchmark
starts from t stored points (stored directly, without paying for the t
previous steps).  Groups, each with the cython and numpy engines:
  linear hinge d t      per-step cost vs t of the engine loops themselves (64
                        steps per call, t fixed); "2 gemv" is NumPy's two
                        matrix-vector products over the history alone, the
                        floor of any implementation that reads it twice (the
                        cython pass reads it once); "partial_fit" is the
                        cython engine through the estimator, whose input
                        checks cost ~0.2 ms per call
  (the groups below time partial_fit: 64 steps per call, 8 for difference)
  squared linear d t    the running-moment shortcut (O(d^2)) vs the full
                        O(t d) average ("full average", cython)
  difference gaussian   O(t d + t^2) per step with the Gram matrix cached;
                        with buffer=B, O(t d + B^2)
"""
import copy

import numpy as np
import pytest

from okl import PairwiseLearner
from okl._core._losses import Loss
from okl._core._pairwise import Reducer
from okl._pair_models import ENGINES, PairHistory

STEPS = 64      # partial_fit steps per timed call (amortizes the ~0.2 ms of input checks)


def stored_linear(t, d, engine, loss="hinge", reducer="sign"):
    """A linear-pair-kernel model that stores t random points (no steps paid for)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(t, d)), rng.normal(size=t)
    est = PairwiseLearner(loss=loss, reducer=reducer, eta=0.5, engine=engine)
    est._running_moments = False
    est.fit(X[:2], y[:2])
    est._model.history = PairHistory.from_state(
        dict(n_features=d, kind="points", buffer=None, m=t, y=y, X=X))
    est._model.history.reserve(STEPS)
    est._model.w = 0.01 * rng.normal(size=d)
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
@pytest.mark.parametrize("label", ["cython", "numpy", "2 gemv", "partial_fit"])
def test_linear_step(benchmark, label, t, d):
    """One engine call of STEPS steps against exactly t stored points (nothing is stored)."""
    rng = np.random.default_rng(0)
    H, yh, w0 = rng.normal(size=(t, d)), rng.normal(size=t), 0.01 * rng.normal(size=d)
    X, y = chunk(d)
    eta, slots = np.full(STEPS, 0.01), np.full(STEPS, -1, dtype=np.intp)
    benchmark.group = f"pairwise linear hinge d={d} t={t}"
    benchmark.extra_info.update(label=label, steps=STEPS)
    rounds = 5 if t * d >= 500_000 else 15
    if label == "partial_fit":      # the cython engine behind the estimator's checks
        template = stored_linear(t, d, "cython")
        benchmark.pedantic(lambda est: est.partial_fit(X, y),
                           setup=lambda: ((copy.deepcopy(template),), {}),
                           rounds=rounds, iterations=1)
        return
    if label == "2 gemv":
        g = np.ones(t)

        def run(w):
            for _ in range(STEPS):
                H @ w
                g @ H
    else:
        engine = ENGINES[label]

        def run(w):
            engine.linear_chunk(H, yh, t, w, X, y, eta, slots, int(Reducer.SIGN),
                                int(Loss.HINGE), 2.0)
    benchmark.pedantic(run, setup=lambda: ((w0.copy(),), {}), rounds=rounds, iterations=1)


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
        est._model.on(label).reserve(8)     # convert and grow the buffers outside the timing
        est._model.history.reserve(8)
        return est
    group = f"pairwise difference gaussian d={d} t={t}" + (f" B={buffer}" if buffer else "")
    time_steps(benchmark, make, X[:8], y[:8], group, label, 5)
