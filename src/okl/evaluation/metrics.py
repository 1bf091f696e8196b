"""Running metrics: means of a per-sample value, exact at every step."""

from collections.abc import Callable
from typing import Any

import numpy as np

from okl._base import OnlineLearner


class RunningMetric:
    """A metric that is the mean of a per-sample value (then `finish` maps the mean).

    Subclasses set `name` and define `sample_values`; those that read class
    probabilities set ``needs_proba = True``.
    """

    name = "metric"
    needs_proba = False

    def sample_values(self, y: np.ndarray, predictions: np.ndarray, *,
                      scores: np.ndarray | None = None, proba: np.ndarray | None = None,
                      classes: np.ndarray | None = None) -> np.ndarray:
        """The value of every sample; its running mean is the metric.

        `scores` are an okl learner's f_t(x_t); `proba` the class probabilities,
        one column per label of the sorted `classes`.
        """
        raise NotImplementedError

    def finish(self, mean: float) -> float:
        """The metric from the mean of the sample values."""
        return mean


class MeanAbsoluteError(RunningMetric):
    """Mean of |y - prediction|."""

    name = "mae"

    def sample_values(self, y, predictions, **_):
        return np.abs(y - predictions)


class MeanSquaredError(RunningMetric):
    """Mean of (y - prediction)^2."""

    name = "mse"

    def sample_values(self, y, predictions, **_):
        return (y - predictions) ** 2


class RootMeanSquaredError(MeanSquaredError):
    """Square root of the mean squared error."""

    name = "rmse"

    def finish(self, mean):
        return float(np.sqrt(mean))


class Accuracy(RunningMetric):
    """Fraction of predictions equal to the label."""

    name = "accuracy"

    def sample_values(self, y, predictions, **_):
        return (y == predictions).astype(np.float64)


class ErrorRate(RunningMetric):
    """Fraction of predictions different from the label."""

    name = "error_rate"

    def sample_values(self, y, predictions, **_):
        return (y != predictions).astype(np.float64)


class LogLoss(RunningMetric):
    """Mean of -log P(y | x), from ``predict_proba`` (okl: loss="logistic")."""

    name = "log_loss"
    needs_proba = True

    def sample_values(self, y, predictions, *, proba=None, classes=None, **_):
        column = np.searchsorted(np.asarray(classes), y)
        p = np.clip(proba[np.arange(len(y)), column], 1e-15, 1.0)
        return -np.log(p)


def macro_f1(y_true, y_pred):
    """The unweighted mean over the labels seen of each label's F1 score (scikit-learn's
    ``f1_score(average="macro")`` over the true and predicted labels so far)."""
    from sklearn.metrics import f1_score
    return f1_score(y_true, y_pred, average="macro", zero_division=0.0)


class PinballLoss(RunningMetric):
    """Mean pinball loss of quantile `quantile`: max(q u, (q - 1) u), u = y - prediction."""

    def __init__(self, quantile: float = 0.5):
        self.quantile = float(quantile)
        self.name = f"pinball({self.quantile:g})"

    def sample_values(self, y, predictions, **_):
        u = y - predictions
        return np.maximum(self.quantile * u, (self.quantile - 1.0) * u)


class Coverage(RunningMetric):
    """Fraction of labels at or below the prediction: the quantile level a model reaches."""

    name = "coverage"

    def sample_values(self, y, predictions, **_):
        return (y <= predictions).astype(np.float64)


class TrainingLoss(RunningMetric):
    """Mean training loss of an okl learner on its predictions (its own ``loss``)."""

    name = "loss"

    def __init__(self, learner: OnlineLearner):
        self.learner = learner

    def sample_values(self, y, predictions, *, scores=None, **_):
        return self.learner._stream_loss(scores, y)


def as_metric(spec: Any, learner: Any, fused: bool) -> RunningMetric | Callable:
    """A RunningMetric or a callable f(y_true, y_pred) from a user's specification."""
    if isinstance(spec, RunningMetric) or (callable(spec) and not isinstance(spec, str)):
        return spec
    named = {"mae": MeanAbsoluteError, "mse": MeanSquaredError, "rmse": RootMeanSquaredError,
             "accuracy": Accuracy, "error_rate": ErrorRate, "log_loss": LogLoss,
             "coverage": Coverage, "macro_f1": lambda: macro_f1,
             "pinball": lambda: PinballLoss(getattr(learner, "quantile", 0.5))}
    if spec == "loss":
        if not fused:
            raise ValueError(f"metric 'loss' is the training loss of an okl learner; "
                             f"{type(learner).__name__} has none. Use e.g. 'mse'.")
        return TrainingLoss(learner)
    if spec not in named:
        raise ValueError(f"Unknown metric {spec!r}: use one of {', '.join(['loss', *named])}, "
                         "a RunningMetric, or a function f(y_true, y_pred) such as "
                         "sklearn.metrics.r2_score.")
    return named[spec]()


LABEL_METRICS = ("accuracy", "error_rate", "log_loss", "macro_f1")


def refuse_label_metrics(specs: Any, classifier: bool, estimator: Any) -> None:
    """A metric of labels (accuracy, ...) on a regressor's numbers would count every inexact
    prediction as a mistake: refused, naming the metrics that fit."""
    for spec in specs or ():
        if isinstance(spec, str) and spec in LABEL_METRICS and not classifier:
            raise ValueError(
                f"metric {spec!r} compares predicted labels with true ones, but "
                f"{type(estimator).__name__} is a regressor: its predictions are numbers, "
                "almost never equal to a label. Use 'mae', 'mse' or 'rmse', or learn a "
                "classifier (okl learn --model classifier).")


def metric_name(metric: RunningMetric | Callable) -> str:
    return metric.name if isinstance(metric, RunningMetric) else getattr(
        metric, "__name__", type(metric).__name__)
