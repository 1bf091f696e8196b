"""Many streams at once on Dask: one learner per stream, key or trial.

`learn_many` runs okl learners over a set of streams (one per customer,
sensor, hyper-parameter setting or repeated trial), each learner online over
its own stream with progressive validation, as tasks on a Dask cluster; it is
built on `map_trials`, which runs any function once per key.  `grid` makes the
keys of a grid x trials experiment.

Without ``client`` a `distributed.LocalCluster` of one single-threaded worker
process per core is started and closed afterwards; a `distributed.Client` (or
a scheduler address) is used as given; ``client="sequential"`` runs every task
in this process, in order, without importing Dask.  Results do not depend on
where a task runs: its randomness comes from its own stream and seed only.

Dask is an optional dependency: ``pip install "okl[dask]"``.  The design on a
real cluster (what travels, how often, failures) is in ``docs/distributed.md``.
"""
import copy
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from okl._progress import progress as progress_bar

SEQUENTIAL = "sequential"

__all__ = ["LostTasksError", "StreamResult", "TaskError", "Trial", "grid", "learn_many",
           "map_trials"]


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(
            "okl.distributed runs tasks on Dask, which is not installed. Install it with "
            "pip install \"okl[dask]\" (or pass client=\"sequential\" to run in this "
            "process).") from exc
    return distributed


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


# ---- where tasks run ---------------------------------------------------------------------------

@contextmanager
def _session(client=None, n_workers=None):
    """Yield the `distributed.Client` to run on (None for ``client="sequential"``).

    ``client=None`` starts a `LocalCluster` of ``n_workers`` (default: the
    number of cores) single-threaded worker processes on the loopback
    interface and closes it on exit; a scheduler address string connects a
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
    distributed = _import_distributed()
    if isinstance(client, str):
        with distributed.Client(client) as new:
            yield new
        return
    with distributed.LocalCluster(n_workers=n_workers or os.cpu_count() or 1,
                                  threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as new:
        yield new


def _run(func, payloads, client, n_workers, retries, progress, desc):
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
            distributed = _import_distributed()
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
    return _run(func, payloads, client, n_workers, retries, progress, "trials")


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


# ---- many streams ------------------------------------------------------------------------------

@dataclass
class StreamResult:
    """What one learner's task returns.

    metrics : dict
        ``n_samples``; ``error``, the progressive-validation error over the
        whole stream (misclassification rate, or mean squared error); ``loss``,
        the mean training loss (None for a learner without okl's fused loop);
        then every metric asked for, ``metric(y, predictions)``.
    model : estimator, bytes or None
        The learner after the stream, its `okl.save` bytes, or None (see
        ``return_models``); `estimator` gives the estimator in every case.
    predictions : array or None
        Each sample's prediction made before learning it (``return_predictions``).
    seconds : float
        Wall time of the task on its worker, making the stream included.
    worker : str
        The worker's address ("local" in this process).
    """

    key: object
    metrics: dict
    model: object = None
    predictions: np.ndarray | None = None
    seconds: float = 0.0
    worker: str = field(default="local")

    def estimator(self):
        """The learned estimator, loading `okl.save` bytes when that is what came back."""
        if isinstance(self.model, bytes):
            import io

            from okl import load
            return load(io.BytesIO(self.model))
        return self.model


def _estimator_for(learner, key):
    """A fresh estimator for `key`: a clone of one estimator (with a Trial's setting), an
    entry of a dict, or what a callable returns; never the caller's own object."""
    if isinstance(learner, Mapping):
        if key not in learner:
            raise KeyError(f"learner has no estimator for the stream key {key!r}.")
        return copy.deepcopy(learner[key])
    if hasattr(learner, "get_params"):
        estimator = clone(learner)
        if isinstance(key, Trial):
            estimator.set_params(**key.kwargs)
        return estimator
    if callable(learner):
        return copy.deepcopy(learner(key))
    raise TypeError("learner must be an estimator, a dict key -> estimator or a callable "
                    f"key -> estimator; got {type(learner).__name__}.")


def _is_pair(data):
    """True for one (X, y) pair, False for an iterable of (X_chunk, y_chunk) chunks."""
    return (isinstance(data, (tuple, list)) and len(data) == 2
            and hasattr(data[0], "shape") and hasattr(data[1], "__len__"))


def _worker_name():
    if "distributed" not in sys.modules:
        return "local"
    try:
        return sys.modules["distributed"].get_worker().address
    except ValueError:      # not inside a worker
        return "local"


def _save_bytes(estimator):
    from okl import save

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.npz")
        save(estimator, path)
        with open(path, "rb") as file:
            return file.read()


def _learn_task(payload):
    """Progressive validation of one learner over one stream, on a worker."""
    from okl.evaluation import progressive_validation

    key, estimator, stream, (metrics, classes, return_models, return_predictions) = payload
    start = time.perf_counter()
    data = stream() if callable(stream) else stream
    keep = bool(metrics) or return_predictions
    kwargs = {} if classes is None else {"classes": classes}
    n, errors, losses, predictions, targets = 0, [], [], [], []
    for X, y in ([data] if _is_pair(data) else data):
        result = progressive_validation(estimator, X, y, **kwargs)
        m = len(result.predictions)
        n += m
        errors.append((result.error[-1], m))
        losses.append(None if result.loss is None else (result.loss[-1], m))
        if keep:
            predictions.append(result.predictions)
            targets.append(np.asarray(y))

    def mean(parts):
        if not parts or any(p is None for p in parts):
            return None
        if len(parts) == 1:
            return float(parts[0][0])
        return float(sum(v * m for v, m in parts) / sum(m for _, m in parts))

    scores = {"n_samples": n, "error": mean(errors), "loss": mean(losses)}
    if keep:
        predictions = np.concatenate(predictions) if predictions else np.empty(0)
        targets = np.concatenate(targets) if targets else np.empty(0)
    for name, metric in (metrics or {}).items():
        scores[name] = metric(targets, predictions)
    if return_models == "bytes":
        model = _save_bytes(estimator)
    else:
        model = estimator if return_models else None
    return StreamResult(key, scores, model, predictions if return_predictions else None,
                        time.perf_counter() - start, _worker_name())


def learn_many(learner, streams, client=None, *, n_workers=None, metrics=None, classes=None,
               return_models=True, return_predictions=False, retries=1, progress=None):
    """Learn every stream with its own learner, online, as tasks on a Dask cluster.

    Each task makes its stream on its worker, predicts each sample before
    learning it (`okl.evaluation.progressive_validation`) and sends back a
    small `StreamResult`.  The results equal a sequential run of the same
    learners over the same streams, bit for bit.

    Parameters
    ----------
    learner : estimator, dict or callable
        One estimator, cloned for every stream (a `Trial` key's setting is set
        on the clone); a dict key -> estimator; or a callable key -> estimator.
        The caller's estimators are never modified.
    streams : dict
        key -> stream.  A stream is an (X, y) pair of arrays, or a recipe: a
        picklable zero-argument callable (e.g. ``functools.partial`` of a
        seeded generator) returning an (X, y) pair or an iterable of
        (X_chunk, y_chunk) chunks, so that a large stream is made on the
        worker instead of shipped to it.
    client : distributed.Client, str, None or "sequential"
        Where to run (see `map_trials`).
    n_workers : int, optional
        Workers of the LocalCluster started when ``client`` is None.
    metrics : dict, optional
        name -> ``metric(y, predictions)`` over the whole stream, computed on
        the worker (e.g. ``sklearn.metrics.balanced_accuracy_score``).
    classes : array, optional
        All labels of a classifier's stream, for its first chunk.
    return_models : bool or "bytes"
        Send back the learned estimator (True), its `okl.save` bytes (data
        that loads without unpickling: "bytes"), or nothing (False).
    return_predictions : bool
        Send back every prediction (8 bytes a sample).
    retries, progress
        See `map_trials`.

    Returns
    -------
    dict
        key -> `StreamResult`, in the order of ``streams``.
    """
    if not isinstance(streams, Mapping):
        raise TypeError("streams must be a dict key -> stream (an (X, y) pair or a callable "
                        f"recipe); got {type(streams).__name__}.")
    if return_models not in (True, False, "bytes"):
        raise ValueError(f"return_models must be True, False or 'bytes'; got {return_models!r}.")
    options = (metrics, classes, return_models, bool(return_predictions))
    payloads = {key: (key, _estimator_for(learner, key), stream, options)
                for key, stream in streams.items()}
    return _run(_learn_task, payloads, client, n_workers, retries, progress, "streams")
