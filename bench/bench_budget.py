"""Bounded time and memory on long streams: budgets, merging, random features, Nystroem.

pytest-benchmark part (same-run ratios, see conftest.py):
- "merge vs oldest B=..., event | chunk": a warm OnlineKernelRegressor, d = 20,
  budget B full, K events predicted then learned, with budget_policy "merge"
  against "oldest" (the reference of the ratio): one event at a time
  (``predict_one`` + ``learn_one``) and the fused loop (one ``partial_fit`` of
  the K rows);
- "budget step B=...": one pointwise step of the Cython loop with a full budget
  (oldest policy) against the BSGD merge search on the same B + 1 centres
  (okl._core._merge, the extra work of a merging step) and the NumPy driver;
- "features D=...": one step of the linear loop on random Fourier features
  (feature computation included) against scikit-learn's SGDClassifier on
  RBFSampler features (the natural peer) and the NumPy twin.

Script part (prints tables; the figures quoted in docs/budget.md):
    python bench/bench_budget.py merge       # merge vs oldest, interleaved rounds, B = 50 ... 1000
    python bench/bench_budget.py frontier    # policy x budget: error, us/step, memory
    python bench/bench_budget.py million     # T = 1e6, d = 20, 1000 random features
    python bench/bench_budget.py blas        # the unbudgeted T = 2e4 pass, BLAS threads, a loaded core

Streams and drivers: bench/budget_streams.py.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from budget_streams import stream  # noqa: E402

from okl import OnlineKernelClassifier, OnlineKernelRegressor  # noqa: E402
from okl._core._expansion import BudgetPolicy, KernelExpansion  # noqa: E402
from okl._core._kernels import Kernel  # noqa: E402
from okl.kernels import kernel_params  # noqa: E402
from okl._core._linear import LinearModel  # noqa: E402
from okl._core._losses import Loss  # noqa: E402
from okl._core._merge import merge_find  # noqa: E402
from okl._core._pointwise import fit_chunk as pointwise_fit_chunk  # noqa: E402
from okl._feature_maps import RandomFourierFeatures  # noqa: E402
from okl._numpy import linear as numpy_linear  # noqa: E402
from okl._numpy import pointwise as numpy_pointwise  # noqa: E402
from okl._numpy.pointwise import make_schedule, make_state  # noqa: E402

GAMMA = 0.05
HINGE = dict(kind=int(Loss.HINGE), tau=0.5, eps=0.0, delta=1.0, p=2.0)


# -- pytest-benchmark -----------------------------------------------------------------

@pytest.mark.parametrize("B", [50, 200, 1000])
@pytest.mark.parametrize("label", ["cython", "merge"])
def test_budget_step(benchmark, label, B):
    d = 20
    rng = np.random.default_rng(0)
    benchmark.group = f"budget step d=20 B={B}"
    if label == "cython":
        exp = KernelExpansion(d, kernel_params("gaussian", gamma=GAMMA), B,
                              int(BudgetPolicy.OLDEST))
        X = rng.normal(size=(B + 2000, d))
        y = np.sign(rng.normal(size=B + 2000))
        schedule = make_schedule(kind=1, eta=0.5, lam=1e-4)
        pointwise_fit_chunk(exp, X[:B], y[:B], schedule, HINGE, make_state(), np.empty(B))
        Xs, ys = X[B:], y[B:]
        k = len(ys)
        benchmark.extra_info.update(label="cython", steps=k)
        benchmark.pedantic(pointwise_fit_chunk,
                           args=(exp, Xs, ys, schedule, HINGE, make_state(), np.empty(k)),
                           rounds=5, iterations=1)
    else:
        C = rng.normal(size=(B + 1, d))
        c = rng.normal(size=B + 1)
        benchmark.extra_info.update(label="merge", steps=1)
        benchmark(merge_find, C, c, GAMMA)


MERGE_D, MERGE_K = 20, 300


@pytest.mark.parametrize("B", [50, 100, 200, 500, 1000])
@pytest.mark.parametrize("mode", ["event", "chunk"])
@pytest.mark.parametrize("policy", ["oldest", "merge"])
def test_merge_vs_oldest(benchmark, policy, mode, B):
    d, K = MERGE_D, MERGE_K
    rng = np.random.default_rng(0)
    X = rng.normal(size=(B + 14 * K, d)) / np.sqrt(d)   # warm-up, then 12 rounds
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=len(X))
    est = OnlineKernelRegressor(gamma=0.5, budget=B, budget_policy=policy)
    est.partial_fit(X[:B + K], y[:B + K])
    assert est.n_support_ == B
    rows = iter(range(B + K, len(X), K))
    benchmark.group = f"merge vs oldest B={B:<4d} d={d} {mode}"
    benchmark.extra_info.update(label=policy, steps=K, ref="oldest")

    def events():
        lo = next(rows)
        for i in range(lo, lo + K):
            est.predict_one(X[i])
            est.learn_one(X[i], y[i])

    def chunk():
        lo = next(rows)
        est.partial_fit(X[lo:lo + K], y[lo:lo + K])
    benchmark.pedantic(events if mode == "event" else chunk, rounds=11, iterations=1,
                       warmup_rounds=1)


@pytest.mark.parametrize("D", [100, 1000])
@pytest.mark.parametrize("label", ["cython", "numpy", "sklearn"])
def test_feature_step(benchmark, label, D):
    d, n = 20, 4096 if label != "numpy" else 256
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = np.sign(X[:, 0] + 0.1 * rng.normal(size=n))
    schedule, kdiag = make_schedule(kind=1, eta=0.1, lam=1e-4), np.ones(n)
    benchmark.group = f"features d=20 D={D}"
    benchmark.extra_info.update(label=label, steps=n)
    if label == "sklearn":
        from sklearn.kernel_approximation import RBFSampler
        from sklearn.linear_model import SGDClassifier
        sampler = RBFSampler(gamma=GAMMA, n_components=D, random_state=0).fit(X)
        sgd = SGDClassifier(loss="hinge", alpha=1e-4, learning_rate="constant", eta0=0.1)
        classes = np.array([-1.0, 1.0])
        benchmark.pedantic(lambda: sgd.partial_fit(sampler.transform(X), y, classes=classes),
                           rounds=5, iterations=1)
        return
    fmap = RandomFourierFeatures("gaussian", GAMMA, D, 0).fit(d)
    module = {"cython": None, "numpy": numpy_linear}[label]
    model = LinearModel(D) if module is None else numpy_linear.NumpyLinearModel(D)
    loop = pointwise_fit_chunk if module is None else numpy_pointwise.fit_chunk
    out = np.empty(n)

    def run():
        return loop(model, fmap.transform(X), y, schedule, HINGE, make_state(), out, None, None,
                    kdiag)
    benchmark.pedantic(run, rounds=5, iterations=1)


# -- script: the frontier ---------------------------------------------------------------

def _estimator(task, params, budget, policy, approximation=None, n_components=100):
    cls = OnlineKernelClassifier if task == "classification" else OnlineKernelRegressor
    kw = dict(gamma=params["gamma"], lam=params["lam"], eta="auto",
              eta_decay=params["eta_decay"], budget=budget)
    if budget:
        kw["budget_policy"] = policy
    if approximation:
        kw.update(approximation=approximation, n_components=n_components, random_state=0)
    return cls(**kw)


def _cython_pass(name, budget, policy, approximation=None, n_components=100):
    """(progressive error, us per step) of the Cython estimator (one pass, best of 3)."""
    X, y, task, params = stream(name)
    from okl.evaluation import progressive_validation
    best, err = np.inf, None
    for _ in range(3):
        est = _estimator(task, params, budget, policy, approximation, n_components)
        kw = dict(classes=np.array([-1.0, 1.0])) if task == "classification" else {}
        t0 = time.perf_counter()
        res = progressive_validation(est, X, y, chunk_size=2048, **kw)
        best = min(best, (time.perf_counter() - t0) / len(y))
        err = float(res.error[-1])
    return err, best * 1e6


def frontier(streams=("digits", "cancer", "friedman"), budgets=(50, 100, 200),
             components=(100, 200, 500, 1000), out=sys.stdout):
    """Rows (stream, model, size, progressive error, us/step, memory bytes)."""
    rows = []
    for name in streams:
        d = stream(name)[0].shape[1]
        err, us = _cython_pass(name, None, None)
        rows.append((name, "exact", "-", err, us, None))
        unb = err
        for B in budgets:
            for policy in ("oldest", "smallest", "merge"):
                err, us = _cython_pass(name, B, policy)
                rows.append((name, policy, B, err, us, (B + (policy == "merge")) * (d + 2) * 8))
        for D in components:
            err, us = _cython_pass(name, None, None, "fourier", D)
            rows.append((name, "fourier", D, err, us, (D * (d + 2)) * 8))
        for B in budgets:
            err, us = _cython_pass(name, None, None, "nystroem", B)
            rows.append((name, "nystroem", B, err, us, (B * d + B * B + B) * 8))
        for row in rows[-(1 + 3 * len(budgets) + len(components) + len(budgets)):]:
            _print_row(row, unb, out)
    return rows


def _print_row(row, unb, out):
    name, model, size, err, us, mem = row
    rel = err / unb - 1.0
    mem_s = "grows" if mem is None else f"{mem / 1024:.1f} KiB"
    print(f"| {name} | {model} | {size} | {err:.4f} | {rel:+.1%} | {us:.2f} | {mem_s} |",
          file=out, flush=True)


# -- script: merge vs oldest, interleaved ---------------------------------------------------

def merge_vs_oldest(budgets=(50, 100, 200, 500, 1000), d=20, K=300, rounds=21):
    """CPU time per event of "merge" and "oldest", their rounds interleaved (a load that changes
    during the run hits both alike): medians and the ratio of the medians, one event at a time
    (predict_one + learn_one) and in chunks of K (partial_fit)."""
    print("| B | mode | oldest (us/event) | merge (us/event) | merge / oldest |")
    print("|---|---|---|---|---|")
    for B in budgets:
        for mode in ("chunk", "event"):
            rng = np.random.default_rng(0)
            X = rng.normal(size=(B + K * (rounds + 1), d)) / np.sqrt(d)
            y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=len(X))
            ests = {p: OnlineKernelRegressor(gamma=0.5, budget=B, budget_policy=p)
                    .partial_fit(X[:B + K], y[:B + K]) for p in ("oldest", "merge")}
            times = {p: [] for p in ests}
            for lo in range(B + K, len(X) - K + 1, K):
                for p, est in ests.items():
                    t0 = time.process_time()
                    if mode == "chunk":
                        est.partial_fit(X[lo:lo + K], y[lo:lo + K])
                    else:
                        for i in range(lo, lo + K):
                            est.predict_one(X[i])
                            est.learn_one(X[i], y[i])
                    times[p].append((time.process_time() - t0) / K * 1e6)
            o, m = np.median(times["oldest"]), np.median(times["merge"])
            print(f"| {B} | {mode} | {o:.2f} | {m:.2f} | {m / o:.2f} |", flush=True)


# -- script: T = 1e6 ---------------------------------------------------------------------

def million(T=1_000_000, d=20, D=1000, chunk=4096):
    """A stream of T samples, d features, D random Fourier features: total learner time."""
    rng = np.random.default_rng(0)
    v = rng.normal(size=d) / np.sqrt(d)
    fmap = RandomFourierFeatures("gaussian", 1.0 / d, D, 0).fit(d)
    model = LinearModel(D)
    out = np.empty(chunk)
    t_learn, cpu, errors = 0.0, 0.0, 0
    schedule = make_schedule(kind=1, eta=1 / (1 + 1e-4), eta_decay=0.5, lam=1e-4)
    state, kdiag = make_state(), np.ones(chunk)
    for lo in range(0, T, chunk):
        hi = min(lo + chunk, T)
        X = rng.normal(size=(hi - lo, d))
        y = np.where(np.sin(2 * X @ v) + 0.1 * rng.normal(size=hi - lo) >= 0, 1.0, -1.0)
        t0, c0 = time.perf_counter(), time.process_time()
        Z = fmap.transform(X)
        failed, state = pointwise_fit_chunk(model, Z, y, schedule, HINGE, state, out[:hi - lo],
                                            None, None, kdiag[:hi - lo])
        t_learn += time.perf_counter() - t0
        cpu += time.process_time() - c0
        assert failed == -1
        errors += int(np.sum(np.where(out[:hi - lo] >= 0, 1.0, -1.0) != y))
    print(f"T={T} d={d} D={D}: learner time {t_learn:.2f} s wall, {cpu:.2f} s CPU "
          f"({t_learn / T * 1e6:.2f} us/step wall), "
          f"progressive error {errors / T:.4f}; load average {os.getloadavg()[0]:.1f}")
    return t_learn


# -- script: BLAS threads ------------------------------------------------------------------

BUSY = "import time\nwhile True:\n    pass\n"


def blas(T=20_000, d=20):
    """The unbudgeted pass with default BLAS threads vs one, while a busy loop holds a core.

    The bandwidth limit is the time to read every centre once per step,
    sum_t (t d 8 bytes) / bandwidth, with the bandwidth measured in the same
    run as the rate of a one-thread dgemv over the final T x d centre buffer
    (it reads the buffer once); as a check, T one-thread dgemv products with
    the buffer at its average size T/2 give nearly the same figure.
    """
    from threadpoolctl import threadpool_info, threadpool_limits
    rng = np.random.default_rng(0)
    X = rng.normal(size=(T, d)) / np.sqrt(d)
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=T)

    def one_pass():
        est = OnlineKernelRegressor(gamma=1.0, lam=1e-3)
        t0 = time.perf_counter()
        est.partial_fit(X, y)
        return time.perf_counter() - t0

    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        time.sleep(0.5)
        threads = max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
        default = min(one_pass() for _ in range(2))
        with threadpool_limits(limits=1, user_api="blas"):
            single = min(one_pass() for _ in range(2))
            full, x = np.ascontiguousarray(X), X[0]
            reps = 200
            t0 = time.perf_counter()
            for _ in range(reps):
                full @ x
            bw = reps * full.nbytes / (time.perf_counter() - t0)
            half = full[:T // 2]
            t0 = time.perf_counter()
            for _ in range(2000):
                half @ x
            dgemv_limit = (time.perf_counter() - t0) / 2000 * T
    finally:
        busy.kill()
        busy.wait()
    read_limit = (T * (T + 1) / 2) * d * 8 / bw
    print(f"unbudgeted T={T} d={d}, one core busy, load average {os.getloadavg()[0]:.1f}")
    print(f"  default BLAS threads ({threads}): {default:.2f} s")
    print(f"  one BLAS thread:                {single:.2f} s")
    print(f"  read limit (bandwidth {bw / 1e9:.1f} GB/s): {read_limit:.2f} s -> "
          f"ratio {single / read_limit:.2f} (one thread), {default / read_limit:.2f} (default)")
    print(f"  dgemv limit (T products at m = T/2): {dgemv_limit:.2f} s")
    return default, single, read_limit, dgemv_limit


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "frontier"
    if what == "frontier":
        print("| stream | model | budget / D | progressive error | vs exact | us/step | memory |")
        print("|---|---|---|---|---|---|---|")
        frontier()
    elif what == "merge":
        merge_vs_oldest()
    elif what == "million":
        million()
    elif what == "blas":
        blas()
