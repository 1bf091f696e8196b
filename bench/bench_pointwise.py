"""Per-step cost of the pointwise loop (docs/algorithms.md, sections 1-3) with m centres in d dimensions.

Labels: "cython" (the nogil loop), "numpy" (the reference engine), "limit"
(one NumPy dgemv over the same centre buffer plus m exponentials: the work a
step cannot avoid).  Every step predicts, shrinks and replaces the oldest of
m centres (budget = m), so m stays fixed while timing.

    python -m pytest bench/bench_pointwise.py --benchmark-only
"""
import numpy as np
import pytest

from okl._core._expansion import BudgetPolicy, KernelExpansion
from okl._core._losses import Loss
from okl._core._pointwise import fit_chunk as cython_fit_chunk
from okl._numpy.expansion import NumpyExpansion
from okl._numpy.pointwise import fit_chunk as numpy_fit_chunk, make_schedule, make_state
from okl.kernels import kernel_params

ENGINES = {"cython": (KernelExpansion, cython_fit_chunk), "numpy": (NumpyExpansion, numpy_fit_chunk)}
GAMMA = 0.5
SQUARED = dict(kind=int(Loss.SQUARED), tau=0.5, eps=0.0, delta=1.0, p=2.0)
ROUNDS = {"cython": 201, "numpy": 15}


def full_expansion(engine, m, d, rng):
    cls, fit_chunk = ENGINES[engine]
    expansion = cls(d, kernel_params("gaussian", gamma=GAMMA), m, BudgetPolicy.OLDEST)
    X = rng.normal(size=(m, d)) / np.sqrt(d)
    fit_chunk(expansion, X, rng.normal(size=m), make_schedule(kind=1, eta=0.1, lam=1e-3),
              SQUARED, make_state(), np.empty(m))
    assert expansion.n_support == m
    return expansion


@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("m", [10, 100, 1000, 10000])
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_step(benchmark, engine, m, d):
    rng = np.random.default_rng(0)
    expansion = full_expansion(engine, m, d, rng)
    # short calls, many rounds: the median of short calls, as the "limit" has, is what a shared
    # machine leaves comparable (a call of 200 steps at m d = 1e6 always took a few preemptions)
    budget_work = 2_000_000 if engine == "cython" else 100_000     # 2 steps at m d = 1e6
    k = int(np.clip(budget_work // (m * d), 2, 5000))
    X = rng.normal(size=(k, d)) / np.sqrt(d)
    y = rng.normal(size=k)
    schedule, out = make_schedule(kind=1, eta=0.05, lam=1e-3), np.empty(k)
    fit_chunk = ENGINES[engine][1]
    benchmark.group = f"pointwise gaussian d={d:<3d} m={m}"
    benchmark.extra_info.update(label=engine, steps=k)
    failed, _ = benchmark.pedantic(fit_chunk, args=(expansion, X, y, schedule, SQUARED, make_state(),
                                                    out), rounds=ROUNDS[engine], iterations=1,
                                   warmup_rounds=1)
    assert failed == -1 and expansion.n_support == m


@pytest.mark.parametrize("d", [10, 100])
@pytest.mark.parametrize("m", [10, 100, 1000, 10000])
def test_limit(benchmark, m, d):
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(m, d)) / np.sqrt(d)
    x = rng.normal(size=d) / np.sqrt(d)
    benchmark.group = f"pointwise gaussian d={d:<3d} m={m}"
    benchmark.extra_info.update(label="limit", steps=1)
    benchmark(lambda: np.exp(-GAMMA * (centers @ x)))
