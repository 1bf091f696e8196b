"""One stream of 10^6 events: one process against AveragedLearner on k Dask workers.

The stream (d = 20, Friedman #1 on the first five features, the rest noise;
a regression target and its thresholded classification labels) is a
`dask.array` whose blocks are generated on the workers: the data live there,
the client never holds them.  The sequential learner learns the same rows in
this process (generated beforehand, not timed), one `partial_fit` per block
of ``sync_every`` rows, as the workers learn them.  For each model (a kernel
expansion with budget 200 and the merging policy; random Fourier features
with D = 500) and task, the table gives events per second, the held-out error
(misclassification rate; MSE relative to the target's variance), the
synchronisations and the model bytes per synchronisation, and the load
average before and during each run (sampled every second; a run at load above
1.5 does not count).  The 2-worker runs include generating their blocks; the
LocalCluster is started once, before the first run.

Run:  python bench/averaging.py [--n 1000000] [--sync-every 50000] [--workers 2]
                                [--models kernel fourier] [--tasks classification regression]
"""
import argparse
import os
import threading
import time

import numpy as np

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl.distributed import AveragedLearner
from okl.distributed.tasks import import_distributed

D_FEATURES = 20
Y_MEAN, Y_STD = 14.41, 4.99        # Friedman #1 target (noise 1), to standardise


def rows(seed, n):
    """n events of the stream: X (n, 20), the standardised target and the labels."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, D_FEATURES))
    f = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4])
    y = (f + rng.standard_normal(n) - Y_MEAN) / Y_STD
    return np.column_stack([X, y, (f > Y_MEAN).astype(float)])


def block_rows(block, seed):
    return rows(int(seed[0, 0]), block.shape[0])


def dask_stream(n, chunk):
    """The stream as a dask array generated block by block where it is computed."""
    import dask.array as da

    chunks = (tuple([chunk] * (n // chunk) + ([n % chunk] if n % chunk else [])),)
    template = da.zeros((n, D_FEATURES + 2), chunks=(chunks[0], D_FEATURES + 2))
    seeds = da.from_array(np.arange(len(chunks[0]))[:, None], chunks=(1, 1))
    return da.map_blocks(block_rows, template, seeds, dtype=float)


def local_stream(n, chunk):
    return np.concatenate([rows(i, min(chunk, n - a)) for i, a in enumerate(range(0, n, chunk))])


MODELS = {
    ("kernel", "classification"): lambda: OnlineKernelClassifier(
        gamma=0.1, lam=1e-4, budget=200, budget_policy="merge"),
    ("kernel", "regression"): lambda: OnlineKernelRegressor(
        gamma=0.1, lam=1e-4, budget=200, budget_policy="merge"),
    ("fourier", "classification"): lambda: OnlineKernelClassifier(
        gamma=0.1, lam=1e-4, approximation="fourier", n_components=500, random_state=0),
    ("fourier", "regression"): lambda: OnlineKernelRegressor(
        gamma=0.1, lam=1e-4, approximation="fourier", n_components=500, random_state=0),
}


class Load:
    """The 1-minute load average before a run and its maximum during it (sampled each second)."""

    def __enter__(self):
        self.before, self.peak, self._stop = os.getloadavg()[0], 0.0, threading.Event()

        def sample():
            while not self._stop.wait(1.0):
                self.peak = max(self.peak, os.getloadavg()[0])
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, os.getloadavg()[0])

    def __str__(self):
        flag = "" if max(self.before, self.peak) <= 1.5 else " (loaded: does not count)"
        return f"{self.before:.2f} -> {self.peak:.2f}{flag}"


def error(model, X, y, task):
    if task == "classification":
        return float(np.mean(model.predict(X) != y))
    return float(np.mean((model.predict(X) - y) ** 2) / np.var(y))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--sync-every", type=int, default=50_000)
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="dynamic averaging's threshold (squared RKHS distance)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=["kernel", "fourier"])
    parser.add_argument("--tasks", nargs="+", default=["classification", "regression"])
    args = parser.parse_args()
    distributed = import_distributed()
    k, S = args.workers, args.sync_every
    print(f"n = {args.n:,} events, d = {D_FEATURES}, {k} workers, sync_every = {S:,}; "
          f"{os.cpu_count()} cores; load average now {os.getloadavg()[0]:.2f}", flush=True)
    test = rows(10**6 + 7, 20_000)
    data = local_stream(args.n, S)
    with distributed.LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(k)
        stream = dask_stream(args.n, S)
        warm = dask_stream(4 * S, S)          # imports and first-call costs on the workers
        AveragedLearner(MODELS["fourier", "regression"](), k, S, client=client).fit(
            warm[:, :D_FEATURES], warm[:, D_FEATURES])
        print(f"\n{'model':<8} {'task':<15} {'run':<18} {'events/s':>9} {'speed-up':>8} "
              f"{'error':>7} {'seq.':>7} {'rounds':>6} {'syncs':>5} {'bytes/sync':>10} "
              f"{'busy':>5}  load before -> during", flush=True)
        for model in args.models:
            for task in args.tasks:
                column = D_FEATURES if task == "regression" else D_FEATURES + 1
                Xt, yt = test[:, :D_FEATURES], test[:, column]
                sequential = MODELS[model, task]()
                classes = [0.0, 1.0] if task == "classification" else None
                kwargs = {} if classes is None else {"classes": classes}
                with Load() as load:
                    start = time.perf_counter()
                    for a in range(0, args.n, S):     # block by block, as the workers learn
                        sequential.partial_fit(data[a:a + S, :D_FEATURES],
                                               data[a:a + S, column], **kwargs)
                    seconds = time.perf_counter() - start
                base, rate = error(sequential, Xt, yt, task), args.n / seconds
                print(f"{model:<8} {task:<15} {'1 process':<18} {rate:>9,.0f} {1:>8.2f} "
                      f"{base:>7.4f} {base:>7.4f} {'':>6} {'':>5} {'':>10} {'':>5}  {load}",
                      flush=True)
                for sync in ("static", "dynamic"):
                    est = AveragedLearner(MODELS[model, task](), k, S, sync=sync,
                                          threshold=args.threshold, client=client)
                    with Load() as load:
                        start = time.perf_counter()
                        est.fit(stream[:, :D_FEATURES], stream[:, column], classes=classes)
                        seconds = time.perf_counter() - start
                    err = error(est, Xt, yt, task)
                    busy = max(est.busy_seconds_) / seconds
                    print(f"{model:<8} {task:<15} {f'{k} workers {sync}':<18} "
                          f"{args.n / seconds:>9,.0f} {args.n / seconds / rate:>8.2f} "
                          f"{err:>7.4f} {base:>7.4f} {est.n_rounds_:>6} {est.n_syncs_:>5} "
                          f"{est.bytes_sent_ / est.n_syncs_:>10,.0f} {busy:>5.0%}  {load}",
                          flush=True)
                    est.close()


if __name__ == "__main__":
    main()
