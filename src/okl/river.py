"""river interoperability: any okl learner as a river estimator.

An optional dependency: ``pip install "okl[river]"``.

`to_river(estimator)` wraps an okl learner in a `river.base.Regressor` or a
binary `river.base.Classifier`, so that `river.evaluate.progressive_val_score`,
river pipelines (``preprocessing.StandardScaler() | to_river(model)``) and
river metrics work with it.  Events are dicts of feature name -> value; the
first event fixes the feature order (a missing key is 0, an unknown key
raises unless the learner drops it, see `okl.pipeline.EventAdapter`).
"""
import functools

from sklearn.base import clone, is_classifier

from okl._streaming import EventAdapter, _Schema

INSTALL_HINT = 'pip install "okl[river]"'


def _river():
    try:
        import river.base
    except ImportError as error:
        raise ImportError(
            f"okl.river needs the river package, which is not installed: {INSTALL_HINT} "
            "(or pip install river).") from error
    return river


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
        from okl import OnlineKernelRegressor
        yield {"estimator": OnlineKernelRegressor()}


@functools.cache
def _classes():
    river = _river()

    class RiverRegressor(_Wrapper, river.base.Regressor):
        """An okl learner as a river regressor: predict_one is f(x) (0 before learning)."""

        def predict_one(self, x):
            return float(self._events.predict_one(x))

    class RiverClassifier(_Wrapper, river.base.Classifier):
        """An okl binary classifier as a river classifier.

        Labels are learned from the stream (no `classes` needed): the first
        events wait until the second label appears, and until then
        predict_one returns the one label seen.  predict_proba_one needs
        loss="logistic" (the only loss whose score is a log-odds).
        """

        def predict_one(self, x, **kwargs):
            return self._events.predict_one(x)

        def predict_proba_one(self, x, **kwargs):
            if not hasattr(self.estimator, "predict_proba_one") and not hasattr(
                    self.estimator, "predict_proba"):
                raise NotImplementedError(
                    f"{type(self.estimator).__name__}"
                    f"(loss={getattr(self.estimator, 'loss', None)!r}) gives no probabilities; "
                    "use loss='logistic', or a metric on labels.")
            return self._events.predict_proba_one(x)

        @classmethod
        def _unit_test_params(cls):
            from okl import OnlineKernelClassifier
            yield {"estimator": OnlineKernelClassifier(loss="logistic")}

    for cls in (RiverRegressor, RiverClassifier):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
    return {"RiverRegressor": RiverRegressor, "RiverClassifier": RiverClassifier}


def __getattr__(name):
    """RiverRegressor and RiverClassifier exist once river is importable (so pickles load)."""
    if name in ("RiverRegressor", "RiverClassifier"):
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_river(estimator, unknown_features="error"):
    """Wrap an okl learner as a river estimator.

    Parameters
    ----------
    estimator : okl learner
        A classifier (binary) becomes a `river.base.Classifier`; a regressor or
        a `PairwiseLearner` (its score g(x)) a `river.base.Regressor`.
    unknown_features : {"error", "ignore"}, default="error"
        What a dict event with a key the first event did not have does: raise
        (the model unchanged), or drop the key.

    Returns
    -------
    RiverClassifier or RiverRegressor
        learn_one(x, y, w=1.0), predict_one(x), and predict_proba_one(x) for
        classifiers with loss="logistic".

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
    if is_classifier(estimator):
        return classes["RiverClassifier"](estimator, unknown_features)
    return classes["RiverRegressor"](estimator, unknown_features)
