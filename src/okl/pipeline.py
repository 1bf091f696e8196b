"""StreamPipeline: transformers and an okl learner chained so that the chain still streams.

scikit-learn's Pipeline has no `partial_fit`, so a stream cannot go through a
scaler into an online learner.  `StreamPipeline` passes `partial_fit`
(chunks) and `learn_one` (events) through every step, in river's order: each
transformer first learns the rows, then transforms them with its updated
statistics, and the last step learns the result.  Predictions transform with
the statistics as they are, so "predict, then learn" is honest progressive
validation.
"""
import copy
import operator

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.metaestimators import available_if

from okl import _locks
from okl._base import transaction
from okl._core._event import dict_row
from okl._one_event import EventAdapter, _Schema, rebound
from okl._persist import loadable
from okl._rows import check_row
from okl.preprocessing import OnlineStandardScaler


def _final_has(name):
    return lambda self: hasattr(self.steps[-1][1], name)


def _final_has_event(name, batch):
    return lambda self: hasattr(self.steps[-1][1], name) or hasattr(self.steps[-1][1], batch)


@loadable
class StreamPipeline(_locks.LockedState, BaseEstimator):
    """Transformers then an online learner, learning chunk by chunk or event by event.

    Parameters
    ----------
    steps : list of (name, estimator)
        Every step but the last is a transformer with `partial_fit` and
        `transform` (`okl.preprocessing.OnlineStandardScaler`, or scikit-learn's
        StandardScaler, MinMaxScaler, MaxAbsScaler, ...); the last is an okl
        learner (any estimator with `partial_fit`).
    unknown_features : {"error", "ignore"}, default="error"
        For dict events that reach a step taking arrays: what a key unseen on
        the first event does (the first event fixes the feature order; a
        missing key is 0).

    Notes
    -----
    Order of updates (river's ``compose.Pipeline``): `partial_fit` and
    `learn_one` let each transformer learn the rows, then transform them with
    the updated statistics, and pass them on; the last step learns.
    `predict`, `predict_one` (and the other prediction methods) only
    transform.  So calling ``predict_one(x)`` then ``learn_one(x, y)`` on each
    event predicts every event before any step has seen it.  `fit` is a fresh
    start: transformers `fit_transform` the whole X, then the learner makes
    its one online pass (scikit-learn's Pipeline).

    A call that raises leaves every step as it was: okl's estimators are
    atomic, and the transformers' fitted attributes are restored.  Calls on
    the pipeline are serialised by its lock (then each step takes its own), so
    a prediction, a pickle or `okl.save` from another thread sees every step
    between two calls.  `okl.save` / `okl.load` store the pipeline with its
    steps when each is an okl estimator (docs/guide/persistence.md).

    References
    ----------
    The update order is that of river's ``compose.Pipeline`` (J. Montiel et
    al., "River: machine learning for streaming data in Python", JMLR
    22(110), 2021); progressive validation: A. Blum, A. Kalai and J.
    Langford, "Beating the hold-out", COLT 1999.  docs/streaming.md.

    Examples
    --------
    >>> import numpy as np
    >>> from okl import OnlineKernelRegressor
    >>> from okl.pipeline import StreamPipeline
    >>> from okl.preprocessing import OnlineStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(1000, 300, (300, 2)); y = np.sin(X[:, 0] / 300)
    >>> pipe = StreamPipeline([("scale", OnlineStandardScaler()),
    ...                        ("learn", OnlineKernelRegressor(gamma=0.5))])
    >>> for xi, yi in zip(X, y):
    ...     y_hat = pipe.predict_one(xi)
    ...     pipe.learn_one(xi, yi)
    >>> pipe.partial_fit(X[:10], y[:10]).steps[-1][1].t_
    310
    """

    # caches outside the state (never copied nor pickled): `_path`'s, and the lock
    __slots__ = ("_one_event_path", "_one_event_lock")

    def __init__(self, steps, unknown_features="error"):
        self.steps = steps
        self.unknown_features = unknown_features

    # -- composition (scikit-learn's Pipeline conventions) -------------------------------

    @_locks.serialised
    def get_params(self, deep=True):
        params = {"steps": self.steps, "unknown_features": self.unknown_features}
        if deep:
            for name, est in self.steps:
                params[name] = est
                if hasattr(est, "get_params"):
                    for key, value in est.get_params(deep=True).items():
                        params[f"{name}__{key}"] = value
        return params

    @_locks.serialised
    def set_params(self, **params):
        if "steps" in params:
            self.steps = params.pop("steps")
        if "unknown_features" in params:
            self.unknown_features = params.pop("unknown_features")
        names = dict(self.steps)
        nested = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in names:
                raise ValueError(f"Invalid parameter {key!r} for {self!r}: no step {name!r}.")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                self.steps = [(n, value if n == name else e) for n, e in self.steps]
        for name, sub in nested.items():
            dict(self.steps)[name].set_params(**sub)
        return self

    @property
    def named_steps(self):
        return dict(self.steps)

    def __len__(self):
        return len(self.steps)

    def __getitem__(self, index):
        if isinstance(index, str):
            return self.named_steps[index]
        if isinstance(index, slice):
            return StreamPipeline(self.steps[index], self.unknown_features)
        return self.steps[index][1]

    @property
    def _final(self):
        return self.steps[-1][1]

    @property
    def _transformers(self):
        return [est for _, est in self.steps[:-1]]

    @property
    def classes_(self):
        return self._final.classes_

    @property
    def n_features_in_(self):
        return self.steps[0][1].n_features_in_

    def _check_steps(self):
        if not isinstance(self.steps, list) or not self.steps or not all(
                isinstance(step, tuple) and len(step) == 2 for step in self.steps):
            raise TypeError("steps must be a non-empty list of (name, estimator) tuples, "
                            f"got {self.steps!r}.")
        for name, est in self.steps[:-1]:
            if not (hasattr(est, "partial_fit") and hasattr(est, "transform")):
                raise TypeError(
                    f"Step {name!r} ({type(est).__name__}) must have partial_fit and "
                    "transform to stream; e.g. okl.preprocessing.OnlineStandardScaler.")
        if not hasattr(self._final, "partial_fit"):
            raise TypeError(f"The last step ({type(self._final).__name__}) must have "
                            "partial_fit to learn from a stream.")

    def _validate_params(self):
        """okl.load's check of the parameters: the steps, and unknown_features."""
        self._check_steps()
        if self.unknown_features not in ("error", "ignore"):
            raise ValueError("unknown_features must be 'error' or 'ignore', got "
                             f"{self.unknown_features!r}.")

    def _check_state(self, check):
        """okl.load: a pipeline keeps no fitted state of its own (its steps do)."""
        check.fail(f"StreamPipeline keeps no fitted attributes, but the file holds "
                   f"{sorted(check.attrs) + sorted(check.objects)}")

    def _adapter(self):
        adapter = self.__dict__.get("_events")
        if adapter is None or adapter.estimator is not self._final:
            adapter = self._events = EventAdapter(self._final,
                                                  _Schema(self.unknown_features))
        return adapter

    # -- atomic updates ------------------------------------------------------------------

    def _snapshot(self):
        saved = []
        for est in self._transformers:
            state = dict(est.__dict__)
            if not _replaces_arrays(est):
                state = copy.deepcopy(state)
            saved.append((est, state))
        adapter = self._adapter()
        saved.append((adapter, dict(adapter.__dict__, _pending=list(adapter._pending))))
        saved.append((adapter.schema, dict(adapter.schema.__dict__)))
        return saved

    @staticmethod
    def _restore(saved):
        for obj, state in saved:
            obj.__dict__.clear()
            obj.__dict__.update(state)
            rebound(obj)

    @_locks.serialised
    def _atomic(self, update, *args, **kwargs):
        saved = self._snapshot()
        try:
            with transaction(self):
                return update(*args, **kwargs)
        except BaseException:
            self._restore(saved)
            raise

    # -- chunks --------------------------------------------------------------------------

    def fit(self, X, y, **fit_params):
        """A fresh start: transformers fit_transform X, then the learner's one online pass."""
        self._check_steps()
        return self._atomic(self._fit, X, y, fit_params)

    def _fit(self, X, y, fit_params):
        for est in self._transformers:
            X = est.fit_transform(X)
        self._final.fit(X, y, **fit_params)
        self._adapter().reset()
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Each transformer learns the rows, then transforms them; the learner learns them.

        `classes` and `sample_weight` go to the learner (transformers learn every
        row unweighted, as river's).
        """
        self._check_steps()
        return self._atomic(self._partial_fit, X, y, classes, sample_weight)

    def _partial_fit(self, X, y, classes, sample_weight):
        for est in self._transformers:
            est.partial_fit(X)
            X = est.transform(X)
        kwargs = {}
        if classes is not None:
            kwargs["classes"] = classes
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        self._final.partial_fit(X, y, **kwargs)
        return self

    def _transform(self, X):
        for est in self._transformers:
            X = est.transform(X)
        return X

    @_locks.serialised
    def transform(self, X):
        """X through every transformer (not the last step)."""
        return self._transform(X)

    @available_if(_final_has("predict"))
    @_locks.serialised
    def predict(self, X):
        return self._final.predict(self._transform(X))

    @available_if(_final_has("decision_function"))
    @_locks.serialised
    def decision_function(self, X, *args):
        return self._final.decision_function(self._transform(X), *args)

    @available_if(_final_has("predict_proba"))
    @_locks.serialised
    def predict_proba(self, X):
        return self._final.predict_proba(self._transform(X))

    @available_if(_final_has("score_samples"))
    @_locks.serialised
    def score_samples(self, X):
        return self._final.score_samples(self._transform(X))

    @available_if(_final_has("score"))
    @_locks.serialised
    def score(self, X, y, sample_weight=None):
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        return self._final.score(self._transform(X), y, **kwargs)

    # -- events --------------------------------------------------------------------------

    def _learn_event(self, x, y, sample_weight):
        adapter = self._adapter()
        for est in self._transformers:
            if hasattr(est, "learn_one"):
                est.learn_one(x)
                x = est.transform_one(x)
            else:
                row, names = adapter.schema.row(x)
                X = row[None, :]
                est.partial_fit(X)
                x = np.ascontiguousarray(est.transform(X)[0], dtype=np.float64)
                adapter.schema.commit(row, names)
        adapter.learn_one(x, y, sample_weight)

    def learn_one(self, x, y, sample_weight=1.0):
        """Learn one event (a dict or a 1-D row) through the chain; returns None (river)."""
        with self._lock():
            path = self._path()
            if path is None or not self._learn_fast(path, x, y, sample_weight):
                self._check_steps()
                self._atomic(self._learn_event, x, y, sample_weight)

    # -- the one-event path of okl scalers (docs/streaming.md) ---------------------------

    def _lock(self):
        """The pipeline's lock (okl._locks), kept once looked up (taken twice per event)."""
        lock = getattr(self, "_one_event_lock", None)
        if lock is None:
            lock = self._one_event_lock = _locks.locked(self)
        return lock

    def _path(self):
        """(scalers, their locks, the adapter, the learner): the one-event path when every
        transformer is an `OnlineStandardScaler` fitted with the parameters last validated
        and the learner has taken their features (an event then crosses them as one float64
        row, each scaler's update and transform in one pass in C), else None.  Kept in a
        slot (a cache: never copied nor pickled) with the steps and the parameter values it
        was built for."""
        cache = getattr(self, "_one_event_path", None)
        if cache is not None and cache[0] == self.steps and (
                self.__dict__.get("_events") is cache[3]):
            for est, params in cache[5]:
                if not ("n_samples_seen_" in est.__dict__ and all(
                        map(operator.is_, params, _locks.param_values(est)))):
                    break
            else:
                return cache
        self._one_event_path = cache = self._build_path()
        return cache

    def _build_path(self):
        steps = self.steps
        if type(steps) is not list or len(steps) < 2 or not all(
                type(step) is tuple and len(step) == 2 for step in steps):
            return None
        scalers = tuple(est for _, est in steps[:-1])
        if not all(type(est) is OnlineStandardScaler and est._ready() for est in scalers):
            return None
        final = steps[-1][1]
        if not hasattr(final, "partial_fit"):
            return None
        adapter = self._adapter()
        # the learner has taken the events' features, in the scalers' order: it may take rows
        held = (final if adapter.native else adapter.schema).__dict__
        if "n_features_in_" not in held or held.get("_row_keys") != scalers[0].__dict__.get(
                "_row_keys"):
            return None
        return (list(steps), scalers, tuple(_locks.locked(est) for est in scalers), adapter,
                final, tuple((est, _locks.param_values(est)) for est in scalers))

    def _row_through(self, path, x, step):
        """x as one float64 row (the first scaler's feature order) through every scaler's
        `step` (`_learn_row` or `_transform_row`), each under its lock; None where a scaler's
        own method must decide (a bad value: it then raises as on the general path)."""
        first = path[1][0]
        keys = first.__dict__.get("_feature_keys")
        row = dict_row(x, keys) if type(x) is dict and keys is not None else None
        if row is None:
            row, _ = check_row(first, x, check_finite=False)     # the scalers check
        for est, lock in zip(path[1], path[2]):
            with lock:
                row = step(est, row)
            if row is None:
                return None
        return row

    def _learn_fast(self, path, x, y, sample_weight):
        """learn_one through okl scalers; False, changing nothing, where the general path
        must take the event.  A call that raises restores the scalers' moments (each update
        rebinds them), and the adapter's state where it makes one-row partial_fit calls."""
        adapter = path[3]
        saved = [(est, dict(est.__dict__)) for est in path[1]]
        if not adapter.native:          # one-row partial_fit calls: the adapter's state too
            saved += self._snapshot()
        try:
            row = self._row_through(path, x, OnlineStandardScaler._learn_row)
            if row is None:
                self._restore(saved)
                return False
            if adapter.native and sample_weight == 1.0:
                path[4].learn_one(row, y)           # the learner's own (compiled) step
            else:
                adapter.learn_one(row, y, sample_weight)
        except BaseException:
            while True:         # a Ctrl-C during the restore itself: restore again
                try:
                    self._restore(saved)
                    break
                except KeyboardInterrupt:
                    pass
            raise
        return True

    def _predict_row(self, x):
        """x through every transformer, as a row where okl scalers take it in one pass."""
        path = self._path()
        if path is not None:
            row = self._row_through(path, x, OnlineStandardScaler._transform_row)
            if row is not None:
                return row
        return self._transform_one(x)

    def _transform_one(self, x):
        schema = self._adapter().schema
        for est in self._transformers:
            if hasattr(est, "transform_one"):
                x = est.transform_one(x)
            else:
                row, _ = schema.row(x)
                if not _is_fitted_transformer(est):
                    x = row                       # nothing learned yet: the identity
                else:
                    x = np.ascontiguousarray(est.transform(row[None, :])[0], dtype=np.float64)
        return x

    @_locks.serialised
    def transform_one(self, x):
        """One event through every transformer."""
        return self._transform_one(x)

    def predict_one(self, x):
        """The last step's prediction for one event (its prior before any learning)."""
        with self._lock():
            path = self._path()
            if path is not None and path[3].native:
                row = self._row_through(path, x, OnlineStandardScaler._transform_row)
                if row is not None:
                    return path[4].predict_one(row)     # the learner's own (compiled) step
            return self._adapter().predict_one(self._predict_row(x))

    @available_if(_final_has_event("decision_function_one", "decision_function"))
    @_locks.serialised
    def decision_function_one(self, x):
        return self._adapter().decision_function_one(self._predict_row(x))

    @available_if(_final_has_event("predict_proba_one", "predict_proba"))
    @_locks.serialised
    def predict_proba_one(self, x):
        return self._adapter().predict_proba_one(self._predict_row(x))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            final = self._final.__sklearn_tags__()
        except (AttributeError, IndexError, TypeError):
            return tags
        tags.estimator_type = final.estimator_type
        tags.classifier_tags = final.classifier_tags
        tags.regressor_tags = final.regressor_tags
        tags.input_tags.sparse = False
        return tags


def _replaces_arrays(est):
    """True for transformers known to rebind, never mutate, their fitted arrays."""
    return isinstance(est, OnlineStandardScaler)


def _is_fitted_transformer(est):
    return any(key.endswith("_") and not key.startswith("_") for key in vars(est))


__all__ = ["StreamPipeline"]
