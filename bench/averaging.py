"""One stream on k Dask workers by model averaging: error, speed and traffic.

For a regression stream (Friedman #1) and a classification stream
(make_classification), learns n events with the sequential learner and with
`okl.distributed.AveragedLearner` on a LocalCluster of k single-threaded
worker processes, static (every sync_every events per worker) and dynamic
(a threshold grid), and prints the held-out error against the sequential
learner's, events per second (cluster start excluded, one warm-up run),
synchronisations and bytes per synchronisation, with the load average.

Run:  python bench/averaging.py [--n 20000] [--budget 300] [--workers 1 2]
"""
import argparse
import os
import time

import numpy as np
from sklearn.datasets import make_classification, make_friedman1
from sklearn.preprocessing import StandardScaler

from okl import OnlineKernelClassifier, OnlineKernelRegressor, RegularizedPAClassifier
from okl.distributed import AveragedLearner, _import_distributed


def streams(n, seed=0):
    """(name, learner factory, X, y, X_test, y_test, error function) per stream."""
    m = n + 2000
    X, y = make_friedman1(m, n_features=10, noise=1.0, random_state=seed)
    X = StandardScaler().fit_transform(X)
    y = (y - y.mean()) / y.std()
    Xc, yc = make_classification(m, n_features=20, n_informative=10, flip_y=0.02,
                                 random_state=seed)
    Xc = StandardScaler().fit_transform(Xc)

    def mse(model, X, y):
        return float(np.mean((model.predict(X) - y) ** 2))

    def err(model, X, y):
        return float(np.mean(model.predict(X) != y))

    return [
        ("regression", lambda b: OnlineKernelRegressor(gamma=0.1, lam=1e-3, budget=b,
                                                      budget_policy="smallest"),
         X[:n], y[:n], X[n:], y[n:], mse, "mse", (0.01, 0.1, 1.0)),
        ("classification", lambda b: OnlineKernelClassifier(gamma=0.05, lam=1e-3, budget=b,
                                                           budget_policy="smallest"),
         Xc[:n], yc[:n], Xc[n:], yc[n:], err, "error", (0.1, 1.0, 10.0)),
        ("linear PA", lambda b: RegularizedPAClassifier(kernel="linear", variant="PA-I", C=0.1),
         Xc[:n], yc[:n], Xc[n:], yc[n:], err, "error", (0.1, 1.0, 10.0)),
    ]


def timed(est, X, y):
    start = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sync-every", type=int, nargs="+", default=[100, 1000])
    args = parser.parse_args()
    distributed = _import_distributed()
    print(f"n = {args.n} events, budget {args.budget}; load average before: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    header = (f"{'stream':<15} {'k':>2} {'sync':<8} {'every/Delta':>11} {'metric':>7} "
              f"{'sequential':>10} {'events/s':>9} {'rounds':>6} {'syncs':>5} "
              f"{'bytes/sync':>10}")
    for name, make, X, y, Xt, yt, error, metric, thresholds in streams(args.n):
        sequential = make(args.budget)
        seconds = timed(sequential, X, y)
        base = error(sequential, Xt, yt)
        print(f"\n{name}: sequential learner {base:.4f} ({metric}), "
              f"{len(X) / seconds:,.0f} events/s in this process")
        print(header)
        for k in args.workers:
            with distributed.LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                                          host="127.0.0.1", dashboard_address=None) as cluster, \
                    distributed.Client(cluster) as client:
                settings = [("static", s) for s in args.sync_every]
                settings += [("dynamic", d) for d in thresholds] if k > 1 else []
                warm = AveragedLearner(make(args.budget), n_workers=k, client=client)
                warm.fit(X[:2000], y[:2000])
                for sync, value in settings:
                    options = ({"sync_every": value} if sync == "static"
                               else {"sync_every": 100, "threshold": value})
                    est = AveragedLearner(make(args.budget), n_workers=k, sync=sync,
                                          client=client, **options)
                    seconds = timed(est, X, y)
                    label = f"{value}" if sync == "static" else f"100/{value:g}"
                    print(f"{name:<15} {k:>2} {sync:<8} {label:>11} {error(est, Xt, yt):>7.4f} "
                          f"{base:>10.4f} {len(X) / seconds:>9,.0f} {est.n_rounds_:>6} "
                          f"{est.n_syncs_:>5} {est.bytes_sent_ / max(est.n_syncs_, 1):>10,.0f}")
    print(f"\nload average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
