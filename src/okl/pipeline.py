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
import inspect
import math

import numpy as np
from sklearn.base import BaseEstimator, is_classifier
from sklearn.utils.metaestimators import available_if

from okl._base import transaction
from okl._onestep import events_of
from okl._rows import check_label, check_row, commit_names, forget_names


F64 = np.dtype(np.float64)


class _Schema:
    """The feature order of dict events, for steps that only take arrays."""

    def __init__(self, unknown_features="error"):
        self.unknown_features = unknown_features

    def row(self, x):
        """(row, names): x as a float64 row; names to `commit` when a first dict fixed them."""
        return check_row(self, x)

    def commit(self, row, names):
        commit_names(self, names)
        self.n_features_in_ = row.shape[0]

    def reset(self):
        forget_names(self)
        self.__dict__.pop("n_features_in_", None)


def _accepts(method, name):
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _is_fitted(est):
    return hasattr(est, "t_") or hasattr(est, "n_samples_seen_")


class EventAdapter:
    """One event at a time for any okl learner: its own `learn_one` where it has one.

    A learner without `learn_one` gets one-row `partial_fit` / `predict`
    calls (same iterates).  A classifier started without `classes` learns its
    first events once the second label has appeared: until then they wait in
    order (learning them then gives exactly the iterates of `partial_fit` on
    the same rows), and `predict_one` returns the one label seen, the prior.
    """

    def __init__(self, estimator, schema=None):
        self.estimator = estimator
        self.schema = _Schema() if schema is None else schema
        self._pending = []          # (row, y, weight) waiting for the second label
        self._classes = None        # (classes_, classes_.tolist()) for the label of one event
        self._events = [None]       # the compiled one-event steps (okl._onestep)
        self._kind = None           # (estimator, is a classifier)

    def reset(self):
        self._pending = []
        self.schema.reset()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_events"] = [None]       # compiled steps are rebuilt on demand
        return state

    @property
    def native(self):
        return self._kinds()[2]

    def _kinds(self):
        """(estimator, is a classifier, has its own learn_one), computed once per estimator."""
        kind = self._kind
        if kind is None or kind[0] is not self.estimator:
            est = self.estimator
            kind = self._kind = (est, is_classifier(est), hasattr(est, "learn_one"))
        return kind

    def _fit_kwargs(self, sample_weight, classes=None):
        kwargs = {}
        method = self.estimator.partial_fit
        if classes is not None:
            kwargs["classes"] = classes
        if sample_weight is not None and (np.any(np.asarray(sample_weight) != 1.0)):
            if not _accepts(method, "sample_weight"):
                raise TypeError(f"{type(self.estimator).__name__}.partial_fit takes no "
                                "sample_weight in this version of okl.")
            kwargs["sample_weight"] = np.atleast_1d(np.asarray(sample_weight, dtype=np.float64))
        return kwargs

    def _fast(self):
        """The compiled one-event steps, when they apply (a fitted pointwise learner), or None."""
        events = self._events[0]
        if events is not None and events.matches(self.estimator):
            return events
        events = events_of(self.estimator, self._events)
        if events is not None:
            self._sync_schema()
        return events

    def _sync_schema(self):
        """Take the fitted width (and feature names) of a learner fitted elsewhere."""
        est, schema = self.estimator, self.schema
        if "n_features_in_" not in schema.__dict__ and "n_features_in_" in est.__dict__:
            names = est.__dict__.get("feature_names_in_")
            schema.commit(np.empty(est.n_features_in_),
                          None if names is None else tuple(names.tolist()))

    def _is_classifier(self):
        return self._kinds()[1]

    def _labels(self):
        """[negative, positive] as Python objects."""
        classes = self.estimator.classes_
        if self._classes is None or self._classes[0] is not classes:
            self._classes = (classes, classes.tolist())
        return self._classes[1]

    def _sign(self, y):
        """A label as -1.0 / +1.0 by classes_; an unseen label raises."""
        negative, positive = self._labels()
        if y == positive:
            return 1.0
        if y == negative:
            return -1.0
        raise ValueError(f"y contains labels [{y!r}] that are not in classes_ "
                         f"{[negative, positive]}. Pass every label in `classes` on the "
                         "first call to partial_fit.")

    def learn_one(self, x, y, sample_weight=1.0):
        est = self.estimator
        _, classifier, native = self._kinds()
        if native:
            if sample_weight == 1.0:
                est.learn_one(x, y)
            else:
                est.learn_one(x, y, sample_weight=sample_weight)
            return
        if sample_weight != 1.0:
            self._fit_kwargs(sample_weight)             # raises where partial_fit has none
        events = self._fast()
        if events is not None:
            names = None
            if not (type(x) is np.ndarray and x.dtype is F64 and x.ndim == 1
                    and x.flags.c_contiguous):
                x, names = check_row(self.schema, x, check_finite=False)
            if classifier:
                target = self._sign(y)
            elif type(y) is float and y - y == 0.0:        # a finite float
                target = y
            else:
                target = check_label(est, y)
            events.learn(est, x, target)
            if names is not None:
                self.schema.commit(x, names)
            return
        row, names = self.schema.row(x)
        if self._is_classifier() and not hasattr(est, "classes_"):
            labels = {label for _, label, _ in self._pending} | {y}
            if len(labels) < 2:
                self._pending.append((row, y, sample_weight))
                self.schema.commit(row, names)
                return
            rows = [r for r, _, _ in self._pending] + [row]
            ys = [label for _, label, _ in self._pending] + [y]
            ws = [w for _, _, w in self._pending] + [sample_weight]
            est.partial_fit(np.vstack(rows), np.asarray(ys),
                            **self._fit_kwargs(ws, classes=np.unique(np.asarray(ys))))
            self._pending = []
        else:
            est.partial_fit(row[None, :], np.asarray([y]), **self._fit_kwargs(sample_weight))
        self.schema.commit(row, names)

    def _row(self, x):
        row, _ = self.schema.row(x)
        return row[None, :]

    def _decision_fast(self, events, x):
        if not (type(x) is np.ndarray and x.dtype is F64 and x.ndim == 1
                and x.flags.c_contiguous):
            x, _ = check_row(self.schema, x, check_finite=False)
        return events.predict(self.estimator.t_, x)

    def predict_one(self, x):
        est = self.estimator
        _, classifier, native = self._kinds()
        if native:
            return est.predict_one(x)
        events = self._fast()
        if events is not None:
            f = self._decision_fast(events, x)
            if classifier:
                return self._labels()[f > 0]
            return f
        X = self._row(x)
        if not _is_fitted(est):
            if self._is_classifier():
                return self._pending[0][1] if self._pending else None
            return 0.0
        if hasattr(est, "score_samples") and not hasattr(est, "predict"):
            return float(est.score_samples(X)[0])
        value = est.predict(X)[0]
        return value.item() if isinstance(value, np.generic) else value

    def decision_function_one(self, x):
        est = self.estimator
        if hasattr(est, "decision_function_one"):
            return est.decision_function_one(x)
        events = self._fast()
        if events is not None:
            return self._decision_fast(events, x)
        X = self._row(x)
        if not _is_fitted(est):
            return 0.0
        if hasattr(est, "score_samples") and not hasattr(est, "predict"):
            return float(est.score_samples(X)[0])
        return float(est.decision_function(X)[0])

    def predict_proba_one(self, x):
        """{label: probability}, river's form; {} while no label is known."""
        est = self.estimator
        if hasattr(est, "predict_proba_one"):
            return est.predict_proba_one(x)
        events = self._fast()
        if events is not None:
            if not hasattr(est, "predict_proba"):
                raise AttributeError(f"{type(est).__name__} has no predict_proba "
                                     f"(loss={getattr(est, 'loss', None)!r}).")
            p = _sigmoid(self._decision_fast(events, x))
            negative, positive = self._labels()
            return {negative: 1.0 - p, positive: p}
        X = self._row(x)
        if not _is_fitted(est):
            return {self._pending[0][1]: 1.0} if self._pending else {}
        p = est.predict_proba(X)[0]
        return {label.item() if isinstance(label, np.generic) else label: float(q)
                for label, q in zip(est.classes_, p)}


def _sigmoid(f):
    """1 / (1 + e^-f) without overflow."""
    if f >= 0:
        return 1.0 / (1.0 + math.exp(-f))
    e = math.exp(f)
    return e / (1.0 + e)


def _final_has(name):
    return lambda self: hasattr(self.steps[-1][1], name)


def _final_has_event(name, batch):
    return lambda self: hasattr(self.steps[-1][1], name) or hasattr(self.steps[-1][1], batch)


class StreamPipeline(BaseEstimator):
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
    atomic, and the transformers' fitted attributes are restored.

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

    def __init__(self, steps, unknown_features="error"):
        self.steps = steps
        self.unknown_features = unknown_features

    # -- composition (scikit-learn's Pipeline conventions) -------------------------------

    def get_params(self, deep=True):
        params = {"steps": self.steps, "unknown_features": self.unknown_features}
        if deep:
            for name, est in self.steps:
                params[name] = est
                if hasattr(est, "get_params"):
                    for key, value in est.get_params(deep=True).items():
                        params[f"{name}__{key}"] = value
        return params

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

    def transform(self, X):
        """X through every transformer (not the last step)."""
        return self._transform(X)

    @available_if(_final_has("predict"))
    def predict(self, X):
        return self._final.predict(self._transform(X))

    @available_if(_final_has("decision_function"))
    def decision_function(self, X, *args):
        return self._final.decision_function(self._transform(X), *args)

    @available_if(_final_has("predict_proba"))
    def predict_proba(self, X):
        return self._final.predict_proba(self._transform(X))

    @available_if(_final_has("score_samples"))
    def score_samples(self, X):
        return self._final.score_samples(self._transform(X))

    @available_if(_final_has("score"))
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
        self._check_steps()
        self._atomic(self._learn_event, x, y, sample_weight)

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

    def transform_one(self, x):
        """One event through every transformer."""
        return self._transform_one(x)

    def predict_one(self, x):
        """The last step's prediction for one event (its prior before any learning)."""
        return self._adapter().predict_one(self._transform_one(x))

    @available_if(_final_has_event("decision_function_one", "decision_function"))
    def decision_function_one(self, x):
        return self._adapter().decision_function_one(self._transform_one(x))

    @available_if(_final_has_event("predict_proba_one", "predict_proba"))
    def predict_proba_one(self, x):
        return self._adapter().predict_proba_one(self._transform_one(x))

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
    from okl.preprocessing import OnlineStandardScaler
    return isinstance(est, OnlineStandardScaler)


def _is_fitted_transformer(est):
    return any(key.endswith("_") and not key.startswith("_") for key in vars(est))


__all__ = ["StreamPipeline"]
