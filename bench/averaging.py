"""One stream of 10^6 events at rest on k Dask workers: one process against AveragedLearner.

The stream (d = 20, Friedman #1 on the first five features, the rest noise;
a regression target and its thresholded classification labels) is made
before any clock starts, twice: in this process, for the sequential learner,
and as a `dask.array` of blocks of ``--chunk`` rows generated and persisted on
the workers (the making time is printed on its own line), where
AveragedLearner finds it: each run learns data already in memory, as the
issue asks ("the data stays where it is").  The sequential learner learns the
same rows, one `partial_fit` per block of ``--chunk`` rows.

For each model (a kernel expansion with budget 200 and the merging policy; random
Fourier features with D = 500) and task, the runs (1 process; k plain processes learning
their shares at once, without Dask or averaging: the speed-up this machine allows right
now; k workers static; k workers dynamic) are interleaved ``--repeats`` times, so that a
change of load hits all of them, and the table gives medians: events per second,
speed-up, held-out error (misclassification rate; MSE relative to the target's
variance), rounds, synchronisations, model bytes per synchronisation, and the 1-minute
load average before each run and its maximum during it (sampled every 0.2 s; a run that
starts above 1.5 does not count); before each model and task it waits, 3 minutes at
most, until the load average is at most ``--settle`` (1.0), which its own runs lift. A
second table splits the k-worker wall time, per worker, from Dask's task stream and the
learner's own clocks (`split`): the client's plan, the first dispatch, learning,
averaging, the rest of the round tasks, other tasks, the time between the worker's tasks
(a synchronisation's barrier, hops), its wait for the other workers' last task, the
final gather and the client's average. The LocalCluster is started and warmed once,
before, as okl starts its own (`okl.distributed.tasks.local_cluster`: without Dask's
MALLOC_TRIM_THRESHOLD_, and without the workers' profiler, with their event-loop checks
every second, their memory checks every second and their system monitor every 5 s);
``--malloc-trim dask`` starts its workers with Dask's 65536 instead, and ``--background
dask`` with Dask's background work.

With ``--lost-worker``, instead: for each model and task, on a LocalCluster per pair of
runs, kill one worker's process (SIGKILL; the nanny starts a new one) at each
``--kill-at`` fraction of an undisturbed fit of the same session, and give both wall
times, the learning lost with the worker (the time from its last finished task to its
death), the round tasks finished, the blocks of the persisted stream remade, and whether
the result is the undisturbed run's bit for bit (`lost_worker`).

Run:  python bench/averaging.py [--n 1000000] [--chunk 50000] [--sync-every N]
                                [--repeats 3] [--workers 2] [--threshold 0.05]
                                [--models kernel fourier] [--tasks classification regression]
                                [--runs processes static dynamic] [--malloc-trim off|dask]
                                [--background okl|dask] [--settle 1.0]
      python bench/averaging.py --lost-worker [--kill-at 0.25 0.5 0.75] [--models ...]
                                              [--tasks ...]
"""
import argparse
import os
import statistics
import threading
import time

import numpy as np
from dask.utils import key_split

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl.distributed import AveragedLearner
from okl.distributed.tasks import QUIET, UNTRIMMED, import_distributed

D_FEATURES = 20
Y_MEAN, Y_STD = 14.41, 4.99        # Friedman #1 target (noise 1), to standardise
RUNS = ("1 process", "processes", "static", "dynamic")


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


def dask_stream(n, chunk, name=None):
    """The stream as a dask array generated block by block where it is computed (``name``:
    the prefix of its keys, to make a stream that shares no block with another)."""
    import dask.array as da

    chunks = (tuple([chunk] * (n // chunk) + ([n % chunk] if n % chunk else [])),)
    template = da.zeros((n, D_FEATURES + 2), chunks=(chunks[0], D_FEATURES + 2))
    seeds = da.from_array(np.arange(len(chunks[0]))[:, None], chunks=(1, 1))
    return da.map_blocks(block_rows, template, seeds, dtype=float, name=name)


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
    """The 1-minute load average before a run and its maximum during it."""

    def __enter__(self):
        self.before, self.peak, self._stop = os.getloadavg()[0], 0.0, threading.Event()

        def sample():
            while not self._stop.wait(0.2):
                self.peak = max(self.peak, os.getloadavg()[0])
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, os.getloadavg()[0])


def plain_process(j, k, pipe):
    """A plain process (no Dask) that learns share j of the stream when told: the ceiling."""
    shares = {}
    while True:
        job = pipe.recv()
        if job is None:
            return
        model, task, n, chunk = job
        if (n, chunk) not in shares:          # blocks j, j + k, ...: the share of model j
            starts = range(j * chunk, n, k * chunk)
            shares[n, chunk] = [rows(a // chunk, min(chunk, n - a)) for a in starts]
        column = D_FEATURES if task == "regression" else D_FEATURES + 1
        kwargs = {"classes": [0.0, 1.0]} if task == "classification" else {}
        est = MODELS[model, task]()
        pipe.send("ready")
        pipe.recv()                           # go: every process starts at once
        t0, cpu = time.perf_counter(), time.thread_time()
        for block in shares[n, chunk]:
            est.partial_fit(block[:, :D_FEATURES], block[:, column], **kwargs)
        pipe.send((time.perf_counter() - t0, time.thread_time() - cpu))


class Processes:
    """k plain processes learning their shares at once, without averaging or Dask: how
    much faster than one process this machine can be, right now."""

    def __init__(self, k):
        import multiprocessing as mp

        context = mp.get_context("spawn")
        self.pipes, self.procs = [], []
        for j in range(k):
            here, there = context.Pipe()
            proc = context.Process(target=plain_process, args=(j, k, there), daemon=True)
            proc.start()
            self.pipes.append(here)
            self.procs.append(proc)

    def run(self, *job):
        for pipe in self.pipes:
            pipe.send(job)
        for pipe in self.pipes:
            assert pipe.recv() == "ready"
        t0 = time.perf_counter()
        for pipe in self.pipes:
            pipe.send("go")
        results = [pipe.recv() for pipe in self.pipes]
        return time.perf_counter() - t0, results

    def close(self):
        for pipe, proc in zip(self.pipes, self.procs):
            pipe.send(None)
            proc.join()


def error(model, X, y, task):
    if task == "classification":
        return float(np.mean(model.predict(X) != y))
    return float(np.mean((model.predict(X) - y) ** 2) / np.var(y))


def split(records, t0, t1, est):
    """Milliseconds per worker (averaged over the workers): where a k-worker run's wall time went.

    From the call's start: the client's plan (until its first submission), the first dispatch
    (until the worker's first task starts), the worker's tasks (learning, averaging, the rest
    of the round tasks, other tasks), the gaps between its tasks (the barrier of each
    synchronisation: waiting for the other workers' states, and the hops), its wait for the
    last task of the other workers, the final gather (the last task's end to the states'
    arrival here) and the client's average (unpickled states averaged, sizes counted).
    """
    phases = est._phases
    workers = {}
    for rec in records:
        name = key_split(rec["key"])
        for s in rec["startstops"]:
            w = workers.setdefault(rec["worker"], {"round": 0.0, "other": 0.0, "transfer": 0.0,
                                                   "spans": []})
            if s["action"] != "compute":
                w["transfer"] += s["stop"] - s["start"]
                continue
            w["round" if name == "learn_round" else "other"] += s["stop"] - s["start"]
            w["spans"].append((s["start"], s["stop"]))
    k = len(est.busy_seconds_)
    n = max(len(workers), 1)
    last = max((max(b for _, b in w["spans"]) for w in workers.values() if w["spans"]),
               default=t1)

    def mean(f):
        return sum(f(w) for w in workers.values() if w["spans"]) / n

    def gaps(spans):
        spans = sorted(spans)
        return sum(max(0.0, b[0] - max(a[1] for a in spans[:i + 1]))
                   for i, b in enumerate(spans[1:]))
    learn, mixing = sum(est.busy_seconds_) / k, sum(est.mixing_seconds_) / k
    return {"wall": t1 - t0, "plan": phases["planned"] - t0,
            "first dispatch": mean(lambda w: min(a for a, _ in w["spans"]) - phases["planned"]),
            "learning": learn, "learning CPU": sum(est.cpu_seconds_) / k, "averaging": mixing,
            "round tasks, rest": mean(lambda w: w["round"]) - learn - mixing,
            "other tasks": mean(lambda w: w["other"]),
            "between tasks": mean(lambda w: gaps(w["spans"])),
            "wait for the last": mean(lambda w: last - max(b for _, b in w["spans"])),
            "final gather": phases["gathered"] - last,
            "client average": phases["averaged"] - phases["gathered"],
            "after": t1 - phases["averaged"], "transfers": mean(lambda w: w["transfer"])}


def lost_worker(args, test):
    """Kill one worker's process at about 25 %, 50 % and 75 % of a fit: the cost, the work
    recomputed, and whether the result is the one of an undisturbed run of the same session.

    Each pair of runs has its own LocalCluster and the stream persisted on it, half of its
    blocks on each worker: an undisturbed fit is timed, then the same fit with a SIGKILL sent
    from a timer thread to the process of model 0's worker (the nanny starts a new one); the
    task streams of the two runs give the rounds learned and the tasks that remade lost blocks.
    """
    import signal

    distributed = import_distributed()
    k, out = args.workers, []
    for model in args.models:
        for task in args.tasks:
            column = D_FEATURES if task == "regression" else D_FEATURES + 1
            classes = [0.0, 1.0] if task == "classification" else None
            Xt = test[:, :D_FEATURES]
            for fraction in args.kill_at:
                # a cluster per pair: the nanny's new worker is not always back in time
                with distributed.LocalCluster(n_workers=k, threads_per_worker=1,
                                              processes=True, host="127.0.0.1",
                                              dashboard_address=None) as cluster, \
                        distributed.Client(cluster) as client:
                    client.wait_for_workers(k)
                    name = f"lost-{model}-{task}-{fraction}"
                    X, y = _persist_balanced(client, args, column, name)
                    warm = dask_stream(4 * args.chunk, args.chunk, name + "-warm")
                    AveragedLearner(MODELS[model, task](), k, client=client).fit(
                        warm[:, :D_FEATURES], warm[:, column], classes=classes)
                    placed = _placement(client, X)
                    runs = {}
                    for kind in ("undisturbed", "killed"):
                        for _ in range(50):                 # the plan depends on where blocks are
                            if _placement(client, X) == placed:
                                break
                            time.sleep(0.1)
                        same = _placement(client, X) == placed
                        est = AveragedLearner(MODELS[model, task](), k, client=client)
                        timer, victim = None, sorted(client.nthreads())[0]
                        if kind == "killed":
                            pid = client.run(os.getpid, workers=[victim])[victim]
                            delay = fraction * runs["undisturbed"]["seconds"]
                            timer = threading.Timer(delay, os.kill, (pid, signal.SIGKILL))
                        with distributed.get_task_stream(client) as ts:
                            t0, w0 = time.perf_counter(), time.time()
                            if timer is not None:
                                timer.start()
                            try:
                                est.fit(X, y, classes=classes)
                                failed = None
                            except Exception as exc:        # noqa: BLE001 (reported)
                                failed = f"{type(exc).__name__}: {str(exc)[:80]}"
                            seconds = time.perf_counter() - t0
                            if timer is not None:
                                timer.join()
                        tasks, done = {}, [0.0]          # tasks run; victim's last task end
                        for rec in ts.data:
                            key = key_split(rec["key"])
                            for ss in rec["startstops"]:
                                if ss["action"] == "compute":
                                    tasks[key] = tasks.get(key, 0) + 1
                                    if timer is not None and rec["worker"] == victim \
                                            and ss["stop"] - w0 < delay:
                                        done.append(ss["stop"] - w0)
                        runs[kind] = {"seconds": seconds, "tasks": tasks, "failed": failed,
                                      "same": same,
                                      "lost": None if timer is None else delay - max(done),
                                      "f": None if failed else (est.decision_function(Xt)
                                                                if classes else est.predict(Xt))}
                    ok, bad = runs["undisturbed"], runs["killed"]
                    block = key_split(name)
                    remade = bad["tasks"].get(block, 0) - ok["tasks"].get(block, 0)
                    if bad["failed"]:
                        same = bad["failed"]
                    elif not bad["same"]:
                        same = "not compared: the blocks moved between the runs"
                    elif np.array_equal(bad["f"], ok["f"]):
                        same = "identical"
                    else:
                        same = f"differs by {np.max(np.abs(bad['f'] - ok['f'])):.1e}"
                    row = [model, task, f"{fraction:.0%}", f"{ok['seconds'] * 1e3:,.0f}",
                           f"{bad['seconds'] * 1e3:,.0f}",
                           f"{bad['seconds'] / ok['seconds']:.2f}",
                           f"{bad['lost'] * 1e3:,.0f}",
                           f"{ok['tasks'].get('learn_round', 0)} -> "
                           f"{bad['tasks'].get('learn_round', 0)}",
                           f"{remade} of {len(X.chunks[0])}", same,
                           f"{os.getloadavg()[0]:.2f}"]
                    out.append(row)
                    print(" | ".join(row), flush=True)
    head = ["model", "task", "killed at", "undisturbed (ms)", "with a lost worker (ms)",
            "ratio", "learning lost (ms)", "round tasks finished", "blocks remade", "result",
            "load after"]
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for row in out:
        print("| " + " | ".join(row) + " |")


def _persist_balanced(client, args, column, name):
    """The stream persisted with 1/k of its blocks on each worker (Dask places them unevenly:
    then blocks would move to balance the shares, and their copies change the next plan)."""
    distributed = import_distributed()
    k = args.workers
    for attempt in range(20):
        stream = dask_stream(args.n, args.chunk, f"{name}-{attempt}")
        X, y = client.persist([stream[:, :D_FEATURES], stream[:, column]])
        distributed.wait([X, y])
        held = _placement(client, X)
        counts = [sum(w == (worker,) for w in held.values()) for worker in client.nthreads()]
        if counts == [len(held) // k] * k and len(held) % k == 0:
            return X, y
        client.cancel([X, y])
    return X, y


def _placement(client, X):
    """The workers holding each persisted block of X."""
    from distributed import futures_of

    held = client.who_has(futures_of(X))
    return {key: tuple(sorted(workers)) for key, workers in held.items()}


def settle(bound, most=180.0):
    """Wait until the 1-minute load average is at most ``bound`` (or ``most`` seconds)."""
    start = time.perf_counter()
    while os.getloadavg()[0] > bound and time.perf_counter() - start < most:
        time.sleep(5)
    print(f"waited {time.perf_counter() - start:.0f} s for the load average to reach "
          f"{os.getloadavg()[0]:.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=50_000,
                        help="rows per persisted block (and per sequential partial_fit)")
    parser.add_argument("--sync-every", type=int, default=None,
                        help="AveragedLearner's sync_every (default: its own default)")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="dynamic averaging's threshold (squared RKHS distance)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=["kernel", "fourier"])
    parser.add_argument("--tasks", nargs="+", default=["classification", "regression"])
    parser.add_argument("--malloc-trim", choices=["off", "dask"], default="off",
                        help="the workers' MALLOC_TRIM_THRESHOLD_: unset, as in the LocalCluster "
                             "okl starts itself (okl.distributed.tasks.local_cluster), or Dask's "
                             "65536")
    parser.add_argument("--background", choices=["okl", "dask"], default="okl",
                        help="the workers' profiler, event-loop and memory checks and system "
                             "monitor: quieted, as in the LocalCluster okl starts itself "
                             "(okl.distributed.tasks.QUIET), or Dask's defaults")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="before each model and task, wait (at most 3 minutes) until the "
                             "1-minute load average is at most this: the benchmark's own runs "
                             "lift it, and a row that starts above 1.5 does not count")
    parser.add_argument("--lost-worker", action="store_true",
                        help="kill a worker mid-fit instead (--kill-at fractions of a fit)")
    parser.add_argument("--kill-at", nargs="+", type=float, default=[0.25, 0.5, 0.75])
    parser.add_argument("--runs", nargs="+", default=list(RUNS[1:]), choices=RUNS[1:],
                        help="the runs beside the one process (its throughput and error are "
                             "the reference)")
    args = parser.parse_args()
    distributed = import_distributed()
    k, chunk = args.workers, args.chunk
    options = {} if args.sync_every is None else {"sync_every": args.sync_every}
    S = AveragedLearner(None, **options).sync_every
    began = time.perf_counter()
    print(f"n = {args.n:,} events, d = {D_FEATURES}, blocks of {chunk:,} rows, {k} workers, "
          f"sync_every = {S:,}, threshold = {args.threshold}, {args.repeats} repeats; "
          f"{os.cpu_count()} cores; load average now {os.getloadavg()[0]:.2f}", flush=True)
    test = rows(10**6 + 7, 20_000)
    import dask

    # the workers as okl's own LocalCluster starts them (okl.distributed.tasks.local_cluster),
    # or with Dask's MALLOC_TRIM_THRESHOLD_ and background work
    trim = {**({} if args.malloc_trim == "dask" else UNTRIMMED),
            **({} if args.background == "dask" else QUIET)}
    if args.lost_worker:
        with dask.config.set(trim):
            lost_worker(args, test)
        print(f"\nall runs took {time.perf_counter() - began:.0f} s")
        return
    with dask.config.set(trim), distributed.LocalCluster(
            n_workers=k, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(k)
        start = time.perf_counter()
        data = local_stream(args.n, chunk)
        print(f"stream made in this process: {time.perf_counter() - start:.2f} s (not timed)")
        start = time.perf_counter()
        stream = dask_stream(args.n, chunk)
        X, y_reg, y_cls = client.persist([stream[:, :D_FEATURES], stream[:, D_FEATURES],
                                          stream[:, D_FEATURES + 1]])
        distributed.wait([X, y_reg, y_cls])
        held = client.has_what()
        print(f"stream made and persisted on the workers: {time.perf_counter() - start:.2f} s "
              f"(not timed); blocks per worker: "
              f"{[sum(key[0] == X.name for key in keys) for keys in held.values()]}")
        warm = dask_stream(4 * chunk, chunk)      # first calls of each model on the workers
        for (model, task), make in MODELS.items():
            if model in args.models and task in args.tasks:
                column = D_FEATURES if task == "regression" else D_FEATURES + 1
                AveragedLearner(make(), k, client=client, **options).fit(
                    warm[:, :D_FEATURES], warm[:, column],
                    classes=[0.0, 1.0] if task == "classification" else None)
        processes = Processes(k)
        processes.run("kernel", "regression", 4 * k * chunk, chunk)     # imports, first calls
        rows_out, splits = [], []
        for model in args.models:
            for task in args.tasks:
                settle(args.settle)
                column = D_FEATURES if task == "regression" else D_FEATURES + 1
                y = y_reg if task == "regression" else y_cls
                Xt, yt = test[:, :D_FEATURES], test[:, column]
                classes = [0.0, 1.0] if task == "classification" else None
                kwargs = {} if classes is None else {"classes": classes}
                chosen = ("1 process", *args.runs)
                runs = {run: [] for run in chosen}
                for rep in range(args.repeats):
                    turn = rep % len(chosen)
                    order = chosen[turn:] + chosen[:turn]       # rotated: load drift hits all
                    for run in order:
                        if run == "processes":
                            with Load() as load:
                                seconds, results = processes.run(model, task, args.n, chunk)
                            runs[run].append((seconds, load, None, {
                                "wall": seconds, "cpu": max(c for _, c in results)}))
                            continue
                        if run == "1 process":
                            est = MODELS[model, task]()
                            with Load() as load:
                                t0, cpu = time.perf_counter(), time.thread_time()
                                for a in range(0, args.n, chunk):
                                    est.partial_fit(data[a:a + chunk, :D_FEATURES],
                                                    data[a:a + chunk, column], **kwargs)
                                seconds, cpu = time.perf_counter() - t0, time.thread_time() - cpu
                            runs[run].append((seconds, load, est, {"wall": seconds, "cpu": cpu}))
                            continue
                        est = AveragedLearner(MODELS[model, task](), k, sync=run,
                                              threshold=args.threshold, client=client, **options)
                        with Load() as load, distributed.get_task_stream(client) as ts:
                            t0, w0 = time.perf_counter(), time.time()
                            est.fit(X, y, classes=classes)
                            seconds, w1 = time.perf_counter() - t0, time.time()
                        runs[run].append((seconds, load, est, split(ts.data, w0, w1, est)))
                base = error(runs["1 process"][0][2], Xt, yt, task)
                rate = args.n / statistics.median(r[0] for r in runs["1 process"])
                seq_cpu = statistics.median(r[3]["cpu"] for r in runs["1 process"])
                for run in chosen:
                    seconds = statistics.median(r[0] for r in runs[run])
                    est = runs[run][0][2]
                    before = statistics.median(r[1].before for r in runs[run])
                    during = max(r[1].peak for r in runs[run])
                    flag = "" if before <= 1.5 else " (loaded: does not count)"
                    name = {"1 process": run, "processes": f"{k} processes, no Dask"}.get(
                        run, f"{k} workers {run}")
                    row = [model, task, name, f"{args.n / seconds:,.0f}",
                           f"{args.n / seconds / rate:.2f}",
                           "" if est is None else f"{error(est, Xt, yt, task):.4f}", f"{base:.4f}"]
                    if est is None or run == "1 process":
                        row += ["", "", ""]
                    else:
                        row += [f"{est.n_rounds_}", f"{est.n_syncs_}",
                                f"{est.bytes_sent_ / est.n_syncs_:,.0f}"]
                        parts = [r[3] for r in runs[run]]
                        splits.append((model, task, run, seq_cpu, {
                            key: statistics.median(p[key] for p in parts) for key in parts[0]}))
                    rows_out.append(row + [f"{before:.2f} -> {during:.2f}{flag}"])
                    print(" | ".join(rows_out[-1]), flush=True)
        processes.close()
    print(f"\nmedians of {args.repeats} runs; all runs took {time.perf_counter() - began:.0f} s\n")
    head = ["model", "task", "run", "events/s", "speed-up", "error", "seq. error", "rounds",
            "syncs", "bytes/sync", "load before -> during"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for row in rows_out:
        print("| " + " | ".join(row) + " |")
    keys = list(splits[0][4]) if splits else []
    print("\nwhere the k-worker wall time went (ms per worker, medians; plan + first dispatch "
          "+ the tasks + between tasks + wait for the last + final gather + client average + "
          "after = wall; learning CPU below learning: the worker waited for a core)\n")
    print("| model | task | run | 1 process CPU | " + " | ".join(keys)
          + " |\n|" + "---|" * (len(keys) + 4))
    for model, task, run, seq_cpu, parts in splits:
        print(f"| {model} | {task} | {run} | {seq_cpu * 1e3:,.0f} | "
              + " | ".join(f"{parts[key] * 1e3:,.0f}" for key in keys) + " |")


if __name__ == "__main__":
    main()
