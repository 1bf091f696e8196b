"""Where tasks run: a Dask cluster, a given client or this process; the errors of lost
or failing tasks; grid x trials keys (docs/distributed.md)."""

import os
from collections.abc import Mapping
from contextlib import contextmanager
from typing import NamedTuple

from okl._progress import progress as progress_bar

SEQUENTIAL = "sequential"


def import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            "okl.distributed runs tasks on Dask, which is not installed. Install it with "
            "pip install \"okl[dask]\" (or pass client=\"sequential\" to run in this "
            "process).") from exc
    return distributed


# What okl's own LocalCluster changes in Dask's defaults (docs/distributed.md, section 2).
# Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns glibc's adaptive
# mmap threshold off: every large temporary of a learning task (a chunk's validated copy, its
# scores) is then a fresh mapping paid in page faults, 3-6 % of an okl learner's CPU.
UNTRIMMED = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
# A worker's own background work: its profiler samples the task's stack every 10 ms, its event
# loop checks its health every 20 ms, its system monitor runs every 0.5 s, and it and its nanny
# read its memory every 0.1 s.  Each wakes a thread that must take the GIL from the learning
# task and a core from the other worker: the learning tasks of two workers waited 6-7 % of their
# time with them, 1.6-1.9 % without.  Idle, the workers and the client's process then use 1.5 %
# of a core instead of 3.5 %; a worker past the nanny's memory limit is stopped within a second.
QUIET = {"distributed.worker.profile.enabled": False,
         "distributed.admin.tick.interval": "1s",
         "distributed.admin.system-monitor.interval": "5s",
         "distributed.worker.memory.monitor-interval": "1s"}


def local_cluster(n_workers):
    """The `LocalCluster` okl starts itself: ``n_workers`` single-threaded worker processes on
    the loopback interface, without Dask's ``MALLOC_TRIM_THRESHOLD_=65536`` (`UNTRIMMED`)
    and without the background work its workers do for a dashboard it does not have
    (`QUIET`: no profiler, an event-loop check and a memory check every second, a system
    monitor every 5 s)."""
    distributed = import_distributed()
    import dask
    with dask.config.set({**UNTRIMMED, **QUIET}):
        return distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                        processes=True, host="127.0.0.1",
                                        dashboard_address=None)


class TaskError(RuntimeError):
    """A task raised; ``key`` names it and the original exception is the cause."""

    def __init__(self, key, exc):
        super().__init__(f"the task for key {key!r} raised {type(exc).__name__}: {exc}")
        self.key = key


class LostTasksError(RuntimeError):
    """Tasks lost with the workers that ran them, after the scheduler's retries.

    ``keys`` lists every lost key; ``results`` holds what the other tasks
    returned, so finished work is kept and nothing is silently missing.
    """

    def __init__(self, keys, results):
        super().__init__(
            f"{len(keys)} task(s) were lost: their workers died on every attempt "
            f"(keys {list(keys)!r}). The {len(results)} finished results are in "
            "this error's .results; rerun the lost keys, or raise the scheduler's "
            "distributed.scheduler.allowed-failures.")
        self.keys = list(keys)
        self.results = results



@contextmanager
def _session(client=None, n_workers=None):
    """Yield the `distributed.Client` to run on (None for ``client="sequential"``).

    ``client=None`` starts a `LocalCluster` of ``n_workers`` (default: the
    number of cores; `local_cluster`) and closes it on exit; a scheduler address string connects a
    new Client, closed on exit; a Client is yielded as given and left open.
    """
    if isinstance(client, str) and client == SEQUENTIAL:
        yield None
        return
    if client is not None and n_workers is not None:
        raise ValueError("n_workers sizes the LocalCluster started when client=None; "
                         "with a client or scheduler address given, size that cluster instead.")
    if client is not None and not isinstance(client, str):
        yield client
        return
    distributed = import_distributed()
    if isinstance(client, str):
        with distributed.Client(client) as new:
            yield new
        return
    with local_cluster(n_workers or os.cpu_count() or 1) as cluster, \
            distributed.Client(cluster) as new:
        yield new


def run_tasks(func, payloads, client, n_workers, retries, progress, desc):
    """{key: func(payload)} for a dict key -> payload: the one mechanism behind this module."""
    keys = list(payloads)
    results = {}
    bar = progress_bar(total=len(keys), desc=desc, unit="task", verbose=progress)
    try:
        with _session(client, n_workers) as dask_client:
            if dask_client is None:
                for key in keys:
                    try:
                        results[key] = func(payloads[key])
                    except Exception as exc:
                        raise TaskError(key, exc) from exc
                    bar.update()
                return results
            distributed = import_distributed()
            futures = {dask_client.submit(func, payloads[key], pure=False, retries=retries): key
                       for key in keys}
            lost = []
            for future in distributed.as_completed(futures):
                key = futures[future]
                if future.status == "finished":
                    results[key] = future.result()
                elif future.status == "cancelled":
                    lost.append(key)
                else:
                    exc = future.exception()
                    if isinstance(exc, distributed.KilledWorker):
                        lost.append(key)
                    else:
                        dask_client.cancel(list(futures))
                        raise TaskError(key, exc) from exc.with_traceback(future.traceback())
                future.release()
                bar.update()
            if lost:
                order = {key: i for i, key in enumerate(keys)}
                raise LostTasksError(sorted(lost, key=order.get),
                                     {key: results[key] for key in keys if key in results})
            return {key: results[key] for key in keys}
    finally:
        bar.close()


def map_trials(func, trials, client=None, *, n_workers=None, retries=1, progress=None):
    """Run ``func`` once per key on a Dask cluster; return {key: result} in key order.

    Parameters
    ----------
    func : callable
        Runs on the workers; it must be picklable (a module function, a
        ``functools.partial``, or a function of a script: cloudpickle ships it).
    trials : dict or sequence
        A dict key -> argument runs ``func(argument)`` per key; a sequence of
        keys runs ``func(key)``.  Keys must be hashable.
    client : distributed.Client, str, None or "sequential"
        None starts a LocalCluster of single-threaded worker processes on the
        loopback interface and closes it afterwards; a scheduler address
        ("tcp://host:8786") connects a Client, closed afterwards; a Client is
        used as given and left open; "sequential" runs every task in this
        process, in order, without importing Dask.
    n_workers : int, optional
        Workers of the LocalCluster started when ``client`` is None.
    retries : int
        Times a task that raises is rerun before its error is final.  A task
        whose worker dies is rerun by the scheduler (up to its
        ``distributed.scheduler.allowed-failures``, default 3).
    progress : bool, optional
        A tqdm bar over finished tasks; default: when stderr is a terminal.

    Returns
    -------
    dict
        Every key, or the call raises: `TaskError` (naming the key) for a task
        that raised, `LostTasksError` (naming every lost key) for tasks whose
        workers kept dying.
    """
    payloads = dict(trials) if isinstance(trials, Mapping) else {key: key for key in trials}
    return run_tasks(func, payloads, client, n_workers, retries, progress, "trials")


# ---- grid x trials -----------------------------------------------------------------------------

class Trial(NamedTuple):
    """One key of a grid x trials experiment: a parameter setting and a repeat."""

    params: tuple
    """The setting as sorted (name, value) pairs; ``dict(params)`` for keyword arguments."""
    trial: int
    seed: int
    """The trial's seed: the same for every setting, so that settings are compared on the
    same streams (a paired design)."""

    @property
    def kwargs(self):
        """The setting as a dict of estimator parameters."""
        return dict(self.params)


def grid(param_grid, trials=1, seed=0):
    """The keys of every parameter setting times ``trials`` repeats.

    Parameters
    ----------
    param_grid : dict or list of dicts
        Parameter names -> lists of values, as for
        `sklearn.model_selection.ParameterGrid` (values must be hashable).
    trials : int
        Repeats of every setting.
    seed : int
        Trial r gets the seed ``seed + r``, whatever the setting.

    Returns
    -------
    list of Trial
        Settings in ParameterGrid order, trials innermost.  With `learn_many`
        and one estimator, each key's setting is applied to its clone.
    """
    from sklearn.model_selection import ParameterGrid

    return [Trial(tuple(sorted(params.items())), r, seed + r)
            for params in ParameterGrid(param_grid) for r in range(int(trials))]
