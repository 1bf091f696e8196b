"""river interoperability: any okl learner as a river estimator.

An optional dependency: ``pip install "okl[river]"``.

`to_river(estimator)` wraps an okl learner in a `river.base.Regressor` or a
`river.base.Classifier` (binary or multiclass), so that `river.evaluate.progressive_val_score`,
river pipelines (``preprocessing.StandardScaler() | to_river(model)``) and
river metrics work with it.  Events are dicts of feature name -> value; the
first event fixes the feature order (a missing key is 0, an unknown key
raises unless the learner drops it, see `okl.pipeline.EventAdapter`).
"""
import functools

import numpy as np

from sklearn.base import clone, is_classifier

from okl._core import _platt, _pointwise
from okl._core._platt import OnlinePlatt
from okl._one_event import EventAdapter, _Schema

INSTALL_HINT = 'pip install "okl[river]"'


def _river():
    try:
        import river.base
    except ImportError as error:
        raise ImportError(
            f"okl.river needs the river package, which is not installed: {INSTALL_HINT} "
            "(or pip install river).") from error
    return river


def _label(value):
    """A label as a plain Python value (river's dict keys)."""
    return value.item() if isinstance(value, np.generic) else value


class _Wrapper:
    """What the river regressor and classifier share (mixed into river's bases).

    An okl learner takes dict events itself, in one compiled call where it can
    (`learn_one`, `predict_one`, `decision_function_one`): the wrapper calls them
    directly, so an event costs what it costs okl (docs/streaming.md).  With
    unknown_features="ignore" the adapter drops the unknown keys first."""

    def __init__(self, estimator, unknown_features="error"):
        self.estimator = estimator
        self.unknown_features = unknown_features
        self._events = EventAdapter(estimator, _Schema(unknown_features))
        self._labels = (None, [])       # classes_ and classes_.tolist() (river's dict keys)
        self._direct, self._own_step = self._serves()

    def _serves(self):
        """Whether the learner's own one-event methods serve every event, and whether its
        learn_one is the compiled one of `okl._core._pointwise` (whose step `_platt` calls)."""
        return (self.unknown_features == "error" and hasattr(self.estimator, "learn_one"),
                getattr(type(self.estimator), "learn_one", None) is _pointwise.learn_one)

    def _labels_of(self, classes):
        """classes_ as plain Python values (computed once per classes_)."""
        if self._labels[0] is not classes:
            self._labels = (classes, [_label(c) for c in classes])
        return self._labels[1]

    def learn_one(self, x, y, w=1.0):
        """Learn one event; `w` is river's sample weight (a weight scales the step)."""
        if w == 1.0 and self._direct:
            self.estimator.learn_one(x, y)
        else:
            self._events.learn_one(x, y, w)

    def _decision(self, x):
        """The learner's score of x (f, or the k scores)."""
        if self._direct:
            return self.estimator._score_one(x)
        return self._events.decision_function_one(x)

    def clone(self, new_params=None, include_attributes=False):
        """A fresh wrapper around an unfitted clone of the okl learner (river's clone)."""
        params = {"estimator": clone(self.estimator), "unknown_features": self.unknown_features}
        params.update(new_params or {})
        return type(self)(**params)

    def __repr__(self):
        return f"{type(self).__name__}({self.estimator!r})"

    def __getstate__(self):
        return {"estimator": self.estimator, "unknown_features": self.unknown_features,
                "_events": self._events}

    def __setstate__(self, state):
        for name, value in state.items():     # the classifier's are fields of its compiled core
            setattr(self, name, value)
        self._labels = (None, [])
        self._direct, self._own_step = self._serves()

    @classmethod
    def _unit_test_params(cls):
        from okl.regression import OnlineKernelRegressor
        yield {"estimator": OnlineKernelRegressor()}


@functools.cache
def _classes():
    river = _river()

    class RiverRegressor(_Wrapper, river.base.Regressor):
        """An okl learner as a river regressor: predict_one is f(x) (0 before learning)."""

        def predict_one(self, x):
            if self._direct:
                return float(self.estimator.predict_one(x))
            return float(self._events.predict_one(x))

    class RiverClassifier(_platt.RiverClassifierCore, _Wrapper, river.base.Classifier):
        """An okl classifier as a river classifier, binary or multiclass (no one-vs-rest).

        Labels are learned from the stream (no `classes` needed): a label
        seen for the first time adds a class, and while one label is known
        predict_one returns it (docs/multiclass.md).  predict_proba_one is the
        model's own for loss="logistic" (the logistic of f, the softmax of
        the k scores); for the other losses (hinge, ...) with two classes it
        is sigmoid(A f + B), Platt's scaling of the margin f learned online
        from the stream (`OnlinePlatt`), and with more classes the softmax
        of the k scores (a ranking, not calibrated).  With bool labels both
        True and False are always keys, as river's OneVsRestClassifier
        expects.
        """

        def __init__(self, estimator, unknown_features="error"):
            super().__init__(estimator, unknown_features)
            native = hasattr(estimator, "predict_proba_one") or hasattr(estimator, "predict_proba")
            self.platt = None if native else OnlinePlatt()
            self._first_label = None        # the label of the first event

        def _binary(self):
            """classes_ once the model has two labels, else None."""
            classes = self.estimator.__dict__.get("classes_")
            return classes if classes is not None and len(classes) == 2 else None

        # learn_one, predict_one and predict_proba_one: the compiled core's
        # (okl._core._platt.RiverClassifierCore), the direct path in one call, else
        # _learn_event / _proba_event

        def _learn_event(self, x, y, w=1.0):
            """Learn one event; its margin, taken first, teaches the Platt scaling (after
            the learner took the event: a bad event raises and changes nothing)."""
            platt = self.platt
            classes = None if platt is None else self._binary()
            if classes is None:
                _Wrapper.learn_one(self, x, y, w)
            else:
                f = self._decision(x)
                _Wrapper.learn_one(self, x, y, w)
                platt.learn(f, y == classes[1], w)
            if self._first_label is None:
                self._first_label = y

        def _proba_event(self, x):
            """predict_proba_one's path for what the compiled call does not serve."""
            many = self.estimator.__dict__.get("classes_", ())
            if self.platt is not None and len(many) == 2:
                p = self.platt.proba(self._decision(x))
                negative, positive = self._labels_of(many)
                return {negative: 1.0 - p, positive: p}
            if self.platt is not None and len(many) > 2:       # the k scores' softmax
                return _platt.softmax(self._labels_of(many), np.ascontiguousarray(
                    self._decision(x), dtype=np.float64))
            if self._direct and len(many) >= 2 and hasattr(self.estimator, "_event_proba"):
                # the model's own (loss="logistic"), from the compiled step's score
                return self.estimator._event_proba(self.estimator._score_one(x))
            if self._direct and hasattr(self.estimator, "predict_proba_one"):
                proba = self.estimator.predict_proba_one(x)
            else:
                proba = self._events.predict_proba_one(x)
            if not proba and self._first_label is not None:
                proba = {self._first_label: 1.0}        # one label seen: it is certain
            if len(proba) == 1 and isinstance(next(iter(proba)), bool):
                proba[not next(iter(proba))] = 0.0      # and the other bool has 0
            return proba

        def __getstate__(self):
            return {**super().__getstate__(), "platt": self.platt,
                    "_first_label": self._first_label}

        @classmethod
        def _unit_test_params(cls):
            from okl.classification import OnlineKernelClassifier
            yield {"estimator": OnlineKernelClassifier(loss="logistic")}

    class RiverConformalRegressor(RiverRegressor):
        """An `okl.ConformalRegressor` as a river regressor: ``predict_one(x,
        with_interval=True)`` gives river's `river.conf.Interval` (as river's
        `RegressionJackknife`), without it the point prediction."""

        def predict_one(self, x, with_interval=False, **kwargs):
            if not with_interval:
                return float(self._events.predict_one(x))
            from river.conf import Interval
            lower, upper = self.estimator.predict_interval_one(self._events._drop_unknown(x))
            return Interval(lower=lower, upper=upper)

        @classmethod
        def _unit_test_params(cls):
            from okl.conformal import ConformalRegressor
            yield {"estimator": ConformalRegressor()}

    classes = (RiverRegressor, RiverClassifier, RiverConformalRegressor)
    for cls in classes:
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
    return {cls.__name__: cls for cls in classes}


def __getattr__(name):
    """RiverRegressor and RiverClassifier exist once river is importable (so pickles load)."""
    if name in ("RiverRegressor", "RiverClassifier", "RiverConformalRegressor"):
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_river(estimator, unknown_features="error"):
    """Wrap an okl learner as a river estimator.

    Parameters
    ----------
    estimator : okl learner
        A classifier (binary or multiclass) becomes a `river.base.Classifier`; a regressor or
        a `PairwiseLearner` (its score g(x)) a `river.base.Regressor`.
    unknown_features : {"error", "ignore"}, default="error"
        What a dict event with a key the first event did not have does: raise
        (the model unchanged), or drop the key.

    Returns
    -------
    RiverClassifier, RiverRegressor or RiverConformalRegressor
        learn_one(x, y, w=1.0), predict_one(x) (for an `okl.ConformalRegressor`
        also ``predict_one(x, with_interval=True)``: a `river.conf.Interval`), and for classifiers
        predict_proba_one(x): the model's own with loss="logistic", else an
        online Platt scaling of the margin (`OnlinePlatt`).

    References
    ----------
    J. Montiel et al., "River: machine learning for streaming data in Python",
    Journal of Machine Learning Research 22(110):1-8, 2021.  docs/streaming.md.

    Examples
    --------
    >>> from river import evaluate, metrics, preprocessing        # doctest: +SKIP
    >>> from okl import OnlineKernelRegressor
    >>> from okl.river import to_river
    >>> model = preprocessing.StandardScaler() | to_river(OnlineKernelRegressor())  # doctest: +SKIP
    >>> evaluate.progressive_val_score(stream, model, metrics.MAE())   # doctest: +SKIP
    """
    classes = _classes()
    if hasattr(estimator, "predict_interval_one"):      # river's interval form
        return classes["RiverConformalRegressor"](estimator, unknown_features)
    if is_classifier(estimator):
        return classes["RiverClassifier"](estimator, unknown_features)
    return classes["RiverRegressor"](estimator, unknown_features)
