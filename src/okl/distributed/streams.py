"""Many streams, one learner each, as tasks (`learn_many`; docs/distributed.md, section 1)."""

import copy
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone

from okl.distributed.tasks import Trial, run_tasks



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

            from okl._persist import load
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
    from okl._persist import save

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
    return run_tasks(_learn_task, payloads, client, n_workers, retries, progress, "streams")
