"""Per-event cost of KernelRLSRegressor one event at a time against its compiled chunks, the
labels interleaved round by round so that a loaded machine slows them alike (docs/krls.md,
section 2).  Full budget of m centres, d = 10, every event new to the dictionary (as
bench/bench_krls.py).  Labels:

- "chunk": the compiled chunk loop (``_core._krls.fit_chunk``);
- "one": ``predict_one(x)`` then ``learn_one(x, y)`` (the step takes the prediction's evaluation);
- "no-reuse": the same with the prediction of a row one ulp away, which the step cannot take (the
  cost of "one" before it could);
- "learn": ``learn_one`` alone;
- "limit": one dsymv and one dsyr on the m x m matrix, the BLAS limit of the update;
- "river": river's ``LinearRegression``, ``predict_one`` then ``learn_one`` of dict events.

Then ``ConformalRegressor(KernelRLSRegressor(budget=m))`` learning a chunk of rows: "conformal
chunk" in the learner's compiled chunks, "conformal events" in the event loop it keeps for other
learners (`bench_krls.EventLoopKRLS`).

Printed: the median over rounds of the CPU us per event (process time, which a loaded machine
disturbs less than the wall clock), and of each round's ratio to "chunk".  Run it with one BLAS
thread, as the step has:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python bench/krls_one_event.py [rounds]
"""
import copy
import sys
import time

import numpy as np
from scipy.linalg import blas

from okl._core._krls import fit_chunk

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_krls import D, EventLoopKRLS, events, full_model  # noqa: E402

from okl import ConformalRegressor, KernelRLSRegressor  # noqa: E402


def labels(m, k):
    est, rng = full_model(m)
    X, y = events(rng, k)
    ys = y.tolist()
    near = np.nextafter(X, np.inf)

    def chunk(model):
        fit_chunk(model._krls, X, y, np.empty(k), np.empty(k))

    def one(model, P=X):
        for i in range(k):
            model.predict_one(P[i])
            model.learn_one(X[i], ys[i])

    def learn(model):
        for i in range(k):
            model.learn_one(X[i], ys[i])

    rng2 = np.random.default_rng(0)
    A = rng2.normal(size=(m, m)) / m
    S0 = np.asfortranarray(np.eye(m) + A @ A.T)
    l = rng2.normal(size=m)

    def limit(_):
        S = S0.copy(order="F")
        for _ in range(k):
            g = blas.dsymv(1.0, S, l)
            blas.dsyr(-1e-3, g, a=S, overwrite_a=True)

    runs = {"chunk": chunk, "one": one, "no-reuse": lambda e: one(e, near), "learn": learn,
            "limit": limit}
    try:
        from river import linear_model
        river = linear_model.LinearRegression()
        rows = [{f"x{j}": v for j, v in enumerate(x)} for x in X.tolist()]

        def river_run(_):
            for i in range(k):
                river.predict_one(rows[i])
                river.learn_one(rows[i], ys[i])
        runs["river"] = river_run
    except ImportError:
        pass
    return est, runs


def conformal(m, rounds):
    """CPU us per event of a ConformalRegressor's chunk: (chunk, events) medians, ratio."""
    rng = np.random.default_rng(0)
    X, y = events(rng, 3 * m)
    models = {name: ConformalRegressor(cls(gamma=2.0, noise=1e-3, budget=m)).fit(X, y)
              for name, cls in (("chunk", KernelRLSRegressor), ("events", EventLoopKRLS))}
    k = max(8, 8000 // m)
    X, y = events(rng, k)
    times = {name: [] for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            model = copy.deepcopy(model)
            start = time.process_time()
            model.partial_fit(X, y)
            times[name].append((time.process_time() - start) / k * 1e6)
    a, b = np.array(times["chunk"]), np.array(times["events"])
    return np.median(a), np.median(b), np.median(b / a)


def main(rounds=15):
    print("| m | label | CPU us per event (median) | ratio to chunk (median of rounds) |")
    print("|---|---|---|---|")
    for m in (50, 100, 200, 500):
        k = max(8, 8000 // m)
        est, runs = labels(m, k)
        times = {name: [] for name in runs}
        for _ in range(rounds):
            for name, run in runs.items():
                model = copy.deepcopy(est)
                model.predict_one(np.zeros(D))      # the one-event adapter made, untimed
                start = time.process_time()
                run(model)
                times[name].append((time.process_time() - start) / k * 1e6)
        chunk = np.array(times["chunk"])
        for name, t in times.items():
            t = np.array(t)
            print(f"| {m} | {name} | {np.median(t):.1f} | {np.median(t / chunk):.2f} |", flush=True)
    print("\n| m | conformal chunk, us per event | conformal events | events / chunk |")
    print("|---|---|---|---|")
    for m in (50, 200):
        a, b, ratio = conformal(m, rounds)
        print(f"| {m} | {a:.1f} | {b:.1f} | {ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
