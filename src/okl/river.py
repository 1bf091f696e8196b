"""river interoperability: any okl learner as a river estimator.

An optional dependency: ``pip install "okl[river]"``.

`to_river(estimator)` wraps an okl learner in a `river.base.Regressor` or a
`river.base.Classifier` (binary or multiclass), so that `river.evaluate.progressive_val_score`,
river pipelines (``preprocessing.StandardScaler() | to_river(model)``) and
river metrics work with it.  Events are dicts of feature name -> value; the
first event fixes the feature order (a missing key is 0, an unknown key
raises unless the learner drops it, see `okl.pipeline.EventAdapter`).
"""
import copy
import functools
import math

import numpy as np

from sklearn.base import clone, is_classifier

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


class OnlinePlatt:
    """P(y = positive | f) = sigmoid(A f + B), fitted online to a stream of margins.

    Platt's scaling (1999) learned one event at a time: each event's margin
    f, taken before the model learns the event (an out-of-sample score, as
    Platt's held-out set), gives one Newton step on the logistic loss of
    (A, B) against Platt's regularised target (N+ + 1) / (N+ + 2) for a
    positive label, 1 / (N- + 2) for a negative one.  The curvature is
    accumulated with a forgetting factor, so that (A, B) follow the margins of
    a model that is still learning.  Starts at (A, B) = (1, 0): sigmoid(f).

    Parameters
    ----------
    lam : float, default=1.0
        Ridge weight pulling (A, B) towards (1, 0): it damps the first steps.
    memory : float, default=1000.0
        Events the curvature remembers (forgetting factor 1 - 1 / memory).

    References
    ----------
    J. C. Platt, "Probabilistic outputs for support vector machines and
    comparisons to regularized likelihood methods", in Advances in Large
    Margin Classifiers, MIT Press, 1999.  See docs/streaming.md, "Probabilities
    of hinge models".
    """

    def __init__(self, lam=1.0, memory=1000.0):
        self.lam, self.memory = float(lam), float(memory)
        self.A, self.B = 1.0, 0.0
        self.h = [0.0, 0.0, 0.0]          # curvature: sum of p (1 - p) (f^2, f, 1)
        self.n_positive = self.n_negative = 0

    def proba(self, f):
        """P(positive | margin f)."""
        return _sigmoid(self.A * f + self.B)

    def learn(self, f, positive, w=1.0):
        """One weighted Newton step on the event (f, positive)."""
        f, w = float(f), float(w)
        if not (math.isfinite(f) and w > 0):
            return
        if positive:
            target = (self.n_positive + 1.0) / (self.n_positive + 2.0)
            self.n_positive += 1
        else:
            target = 1.0 / (self.n_negative + 2.0)
            self.n_negative += 1
        p = self.proba(f)
        keep, c = 1.0 - 1.0 / self.memory, w * p * (1.0 - p)
        self.h = [keep * self.h[0] + c * f * f, keep * self.h[1] + c * f, keep * self.h[2] + c]
        # a recursive Newton step: (A, B) minimised the past losses plus
        # lam / 2 ||(A, B) - (1, 0)||^2; the new loss adds its gradient, and its
        # curvature joins the Hessian of the past
        ga, gb = w * (p - target) * f, w * (p - target)
        haa, hab, hbb = self.h[0] + self.lam, self.h[1], self.h[2] + self.lam
        det = haa * hbb - hab * hab
        self.A -= (hbb * ga - hab * gb) / det
        self.B -= (haa * gb - hab * ga) / det


def _label(value):
    """A label as a plain Python value (river's dict keys)."""
    return value.item() if isinstance(value, np.generic) else value


def _sigmoid(z):
    """1 / (1 + e^-z) without overflow."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class _Wrapper:
    """What the river regressor and classifier share (mixed into river's bases)."""

    def __init__(self, estimator, unknown_features="error"):
        self.estimator = estimator
        self.unknown_features = unknown_features
        self._events = EventAdapter(estimator, _Schema(unknown_features))

    def learn_one(self, x, y, w=1.0):
        """Learn one event; `w` is river's sample weight (a weight scales the step)."""
        self._events.learn_one(x, y, w)

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
        self.__dict__.update(state)

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
            return float(self._events.predict_one(x))

    class RiverClassifier(_Wrapper, river.base.Classifier):
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
            classes = getattr(self.estimator, "classes_", None)
            return classes if classes is not None and len(classes) == 2 else None

        def learn_one(self, x, y, w=1.0):
            """Learn one event; its margin, taken first, teaches the Platt scaling."""
            classes = self._binary()
            if self.platt is None or classes is None:
                self._events.learn_one(x, y, w)
            else:
                platt = copy.deepcopy(self.platt)
                platt.learn(self._events.decision_function_one(x), y == classes[1], w)
                self._events.learn_one(x, y, w)     # raises (all unchanged) on a bad event
                self.platt = platt
            if self._first_label is None:
                self._first_label = y

        def predict_one(self, x, **kwargs):
            return self._events.predict_one(x)

        def predict_proba_one(self, x, **kwargs):
            classes = self._binary()
            many = getattr(self.estimator, "classes_", ())
            if self.platt is not None and classes is not None:
                p = self.platt.proba(self._events.decision_function_one(x))
                proba = {_label(classes[0]): 1.0 - p, _label(classes[1]): p}
            elif self.platt is not None and len(many) > 2:       # the k scores' softmax
                s = np.asarray(self._events.decision_function_one(x), dtype=np.float64)
                e = np.exp(s - s.max())
                proba = dict(zip(map(_label, many), (e / e.sum()).tolist()))
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
