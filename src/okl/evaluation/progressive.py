"""Progressive validation: predict each event, then learn it (docs/streaming.md)."""

import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from okl._base import OnlineLearner
from okl._progress import progress as progress_bar
from okl._progress import write
from okl.evaluation.metrics import RunningMetric, as_metric, metric_name, refuse_label_metrics
from okl.stream import iter_array


@dataclass
class ProgressiveResult:
    """Predict-then-learn record of a stream.

    Attributes
    ----------
    predictions : ndarray
        The prediction for x_t made before learning z_t (labels for
        classifiers), one per sample; None (an object array) for the first
        samples of a classifier that knows no label yet, as its predict_one
        says.
    scores : ndarray or None
        f_t(x_t), the raw model output behind each prediction (None for
        estimators without okl's fused predict-then-learn loop).
    error : ndarray
        Cumulative mean error after each step: misclassification rate for
        classifiers, squared error for regressors.
    loss : ndarray or None
        Cumulative mean of the estimator's own training loss.
    steps : ndarray
        The sample counts at which `metrics` were taken: 1, 2, 4, 8, ...,
        every `print_every`, and the end of the stream.
    metrics : dict
        Metric name -> its value over the first ``steps[i]`` samples.
    seconds : float
        Wall-clock time of the run.
    classes : ndarray or None
        For classifiers: the sorted labels of the stream (predicted or true).
    confusion : ndarray or None
        For classifiers: ``confusion[i, j]`` counts the samples of label
        ``classes[i]`` predicted as ``classes[j]`` (docs/multiclass.md); a
        sample without a prediction (None) is in no cell.
    lower, upper, targets : ndarray or None
        An `okl.ConformalRegressor`'s interval of each event, made before
        learning it, and the targets (docs/conformal.md).
    covered, width : ndarray or None
        A conformal wrapper's run: whether each event's interval (set) held
        its target, and its width (set size).
    """

    predictions: np.ndarray
    scores: np.ndarray | None
    error: np.ndarray
    loss: np.ndarray | None
    steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: float = 0.0
    classes: np.ndarray | None = None
    confusion: np.ndarray | None = None
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    covered: np.ndarray | None = None
    width: np.ndarray | None = None
    targets: np.ndarray | None = None

    def window_coverage(self, window: int = 500) -> np.ndarray:
        """Coverage over the last `window` events, after each event (conformal wrappers).

        The first ``window - 1`` values cover the events so far.
        """
        if self.covered is None:
            raise ValueError("window_coverage needs a conformal wrapper's run (okl.conformal).")
        c = np.concatenate([[0], np.cumsum(self.covered)])
        t = np.arange(1, len(self.covered) + 1)
        lo = np.maximum(t - window, 0)
        return (c[t] - c[lo]) / (t - lo)

    def plot(self, axes: Any = None) -> Any:
        """Learning curves: each metric against the samples seen (log scale); needs matplotlib.

        Parameters
        ----------
        axes : sequence of matplotlib Axes, optional
            One per metric; default: a new figure with one panel per metric.

        Returns
        -------
        matplotlib.figure.Figure
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("ProgressiveResult.plot needs matplotlib: "
                              "pip install 'okl[plot]'.") from None
        names = list(self.metrics)
        band = self.lower is not None
        if axes is None:
            panels = len(names) + band
            _, axes = plt.subplots(1, panels, figsize=(4 * panels, 3.2), squeeze=False)
            axes = axes[0]
        if band:        # the intervals over the stream, and the targets
            ax, axes = axes[0], axes[1:]
            t = np.arange(1, len(self.lower) + 1)
            finite = np.isfinite(self.lower) & np.isfinite(self.upper)
            ax.fill_between(t[finite], self.lower[finite], self.upper[finite], alpha=0.35,
                            label="interval", step="mid")
            ax.plot(t, self.predictions, lw=0.8, label="prediction")
            if self.targets is not None:
                ax.plot(t, self.targets, ".", ms=1.5, color="k", label="target")
            ax.set(xlabel="event", title="intervals over the stream")
            ax.legend(loc="upper right", fontsize="small")
        for ax, name in zip(axes, names):
            ax.plot(self.steps, self.metrics[name], marker=".")
            ax.set(xscale="log", xlabel="samples seen", ylabel=name,
                   title=f"progressive {name}")
        axes[0].figure.tight_layout()
        return axes[0].figure


def _cumulative_mean(values):
    return np.cumsum(values) / np.arange(1, len(values) + 1)


def _is_classifier(estimator):
    """scikit-learn's is_classifier, also for objects without scikit-learn tags."""
    try:
        return is_classifier(estimator)
    except (AttributeError, TypeError):
        return getattr(estimator, "_estimator_type", None) == "classifier"


def _is_fitted(estimator):
    try:
        check_is_fitted(estimator)
    except (NotFittedError, TypeError):
        return False
    return True


class _Record:
    """A growing 1-D array: appended pieces are merged every 1024 values (events stay cheap)."""

    def __init__(self):
        self.blocks, self.tail, self.tail_size = [], [], 0

    def append(self, values):
        self.tail.append(values)
        self.tail_size += len(values)
        if self.tail_size >= 1024:
            self.blocks.append(np.concatenate(self.tail))
            self.tail, self.tail_size = [], 0

    def last(self):
        return (self.tail or self.blocks)[-1][-1]

    def array(self):
        return np.concatenate(self.blocks + self.tail)


def _blocks(stream: Iterable, block_events: int) -> Iterator[tuple[Any, np.ndarray]]:
    """2-D (X, y) blocks from a stream of chunks or events, `block_events` events at a time."""
    keys = None
    rows, labels = [], []
    for x, y in stream:
        if y is None:
            raise ValueError("The stream has no targets: progressive validation needs labels "
                             "(e.g. iter_csv(path, target='y')).")
        if isinstance(x, Mapping):            # a river-style event {feature: value}
            keys = list(x) if keys is None else keys
            x = np.array([x[k] for k in keys], dtype=np.float64)
        if sp.issparse(x) or np.ndim(x) == 2:
            if rows:
                yield np.vstack(rows), np.asarray(labels)
                rows, labels = [], []
            yield x, np.asarray(y)
            continue
        rows.append(np.asarray(x, dtype=np.float64))
        labels.append(y)
        if len(rows) >= block_events:
            yield np.vstack(rows), np.asarray(labels)
            rows, labels = [], []
    if rows:
        yield np.vstack(rows), np.asarray(labels)


def _with_two_labels(blocks: Iterator) -> Iterator:
    """Merge the first blocks until they show two labels, for a binary classifier's first call."""
    first_X, first_y = [], []
    for X, y in blocks:
        first_X.append(X)
        first_y.append(y)
        if len(np.unique(np.concatenate(first_y))) >= 2:
            break
    if first_X:
        stack = sp.vstack if sp.issparse(first_X[0]) else np.vstack
        yield stack(first_X) if len(first_X) > 1 else first_X[0], np.concatenate(first_y)
    yield from blocks


def _report_points(print_every):
    """1, 2, 4, 8, ... merged with the multiples of print_every (none when 0 or None)."""
    power, multiple = 1, print_every or None
    while True:
        if multiple is None or power <= multiple:
            yield power
            if power == multiple:
                multiple += print_every
            power *= 2
        else:
            yield multiple
            multiple += print_every


def _format(value):
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)[:10]


def progressive_validation(estimator: Any, X: Any, y: Any = None, *,
                           metrics: Iterable[Any] | None = None, classes: Any = None,
                           chunk_size: int = 1000, print_every: int | None = None,
                           progress: bool | None = None) -> ProgressiveResult:
    """Predict each sample with the current model, then learn it (in place).

    The estimator continues from its current state (pass a fresh one, or
    ``sklearn.base.clone(est)``, for a clean run).  okl learners predict inside
    their own loop, exactly before each update, at the cost of partial_fit.
    Any other estimator with partial_fit and predict (a scikit-learn
    SGDRegressor, a streaming pipeline) takes the generic path: each chunk is
    predicted, then learned, so its predictions are per sample for events
    and for arrays (fed one row at a time), per chunk for a stream of chunks.

    Parameters
    ----------
    estimator : an okl learner, or any estimator with partial_fit and predict
    X : array or sparse matrix of shape (n_samples, n_features), or a stream
        With `y`: the samples.  Without: an iterable of ``(X, y)`` chunks or
        ``(x, y)`` events (1-D x or a dict), such as the readers of
        `okl.stream` give.
    y : array of shape (n_samples,), optional
        The targets of array X.
    metrics : list, optional
        Names ("mae", "mse", "rmse", "accuracy", "error_rate", "log_loss",
        "macro_f1", "pinball", "coverage", "loss": an okl learner's training
        loss; for an `okl.conformal` wrapper "coverage" of its intervals or
        sets, "width" (the mean width of the finite intervals, or the set
        size) and "window_coverage" (over the last 500 events), its default
        beside the error),
        `RunningMetric` objects such as ``PinballLoss(0.9)``, or functions
        ``f(y_true, y_pred)`` such as ``sklearn.metrics.r2_score`` (evaluated
        on all predictions so far at each report point, their warnings on
        the first few samples silenced).  Default: the error
        ("error_rate" or "mse") and, for okl learners, "loss".
    classes : array, optional
        All labels, for a classifier's first partial_fit.  Default: none for
        okl's classifiers (also at the end of a StreamPipeline): they add a
        label as it appears (docs/multiclass.md), so that the run knows no
        future label and equals a predict_one / learn_one loop; a sample
        predicted before any label is known is predicted None, an error for
        "error_rate" and "accuracy", probability 0 for "log_loss", left out of
        the functions' samples and of the confusion matrix.  For another
        classifier: np.unique(y) for arrays, the labels of a stream's first
        samples, read until two differ.
    chunk_size : int, default=1000
        Samples per call into an okl learner (events are gathered into chunks
        of this size; the result does not depend on it).
    print_every : int, optional
        Print a line (average and since-last value of the first metric, label
        and prediction of the last sample, centres, seconds) after 1, 2, 4, 8,
        ... samples and every `print_every` samples; 0 prints at the doubling
        counts only; None (default) prints nothing.
    progress : bool, optional
        A progress bar on stderr: None (default) when it is a terminal.

    Returns
    -------
    ProgressiveResult
    """
    from okl.pairwise import PairwiseLearner

    if not isinstance(chunk_size, (int, np.integer)) or isinstance(chunk_size, bool) \
            or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}.")
    if print_every is not None and (not isinstance(print_every, (int, np.integer))
                                    or print_every < 0):
        raise ValueError(f"print_every must be a non-negative integer or None, "
                         f"got {print_every!r}.")
    if isinstance(estimator, PairwiseLearner):
        raise TypeError("PairwiseLearner predicts pairs, not points: progressive validation "
                        "does not apply. Evaluate it with okl.evaluation.ranking_error.")
    if not (hasattr(estimator, "partial_fit") and hasattr(estimator, "predict")):
        raise TypeError(f"{type(estimator).__name__} cannot learn a stream: it needs "
                        "partial_fit and predict (for a scaler followed by a learner, chain "
                        "them with okl.pipeline.StreamPipeline, not sklearn's Pipeline).")
    fused = isinstance(estimator, OnlineLearner)
    banded = hasattr(estimator, "_progressive_intervals") or hasattr(estimator, "_progressive_sets")
    classifier = _is_classifier(estimator) or (classes is not None and not fused)
    discovers = fused and hasattr(estimator, "_align_scores")    # adds labels as they come
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    adds_labels = hasattr(final, "_event_target")     # okl's: labels discovered as they come
    knew_labels = len(getattr(final, "classes_", ())) > 0
    # a stream's first labels are the prior of the predictions; learners that add labels
    # (okl's classifiers, also at the end of a StreamPipeline) are not told them as classes
    tell_classes = classes is not None or y is not None or not hasattr(final, "_event_target")
    total = None
    if y is not None:
        y = np.asarray(y)
        total = len(y)
        if classifier and classes is None and not adds_labels:
            classes = np.unique(y)
        X = iter_array(X, y, chunk_size=chunk_size if fused else 1)
    blocks = _blocks(X, chunk_size if fused else 1)
    if classifier and classes is None and not discovers and not adds_labels:
        blocks = _with_two_labels(blocks)
    refuse_label_metrics(metrics, classifier, estimator)
    if metrics is None:
        metrics = ["error_rate" if classifier else "mse"] + (
            list(BAND_METRICS) if banded else ["loss"] if fused else [])
    band_names = [m for m in metrics if banded and isinstance(m, str) and m in BAND_METRICS]
    metrics = [as_metric(m, estimator, fused) for m in metrics if m not in band_names] or [
        as_metric("error_rate" if classifier else "mse", estimator, fused)]
    names = [metric_name(m) for m in metrics]
    if len(set(names)) < len(names):
        raise ValueError(f"Two metrics share a name: {names}.")
    running = [m for m in metrics if isinstance(m, RunningMetric)]
    needs_proba = any(m.needs_proba for m in running)
    if needs_proba and not hasattr(estimator, "predict_proba"):
        raise ValueError(f"log_loss needs class probabilities, and {type(estimator).__name__} "
                         "has no predict_proba (okl classifiers have it with loss='logistic').")

    seen_y, seen_pred, seen_scores = _Record(), _Record(), _Record()
    seen_a, seen_b = _Record(), _Record()       # a conformal wrapper's bands or sets
    score_parts = []
    totals = dict.fromkeys(names, 0.0)
    last_totals = dict(totals)
    steps, recorded = [], {name: [] for name in names}
    points = _report_points(print_every)
    next_point = next(points)
    fitted = fused or _is_fitted(estimator)
    t = last_t = 0
    start = time.perf_counter()

    def value(metric, name, lo, hi, at_totals):
        """A metric over samples lo..hi-1; running metrics from `at_totals` (sums to hi)."""
        if isinstance(metric, RunningMetric):
            done = at_totals[name] - (last_totals[name] if lo else 0.0)
            return metric.finish(done / (hi - lo))
        y_all, p_all = seen_y.array()[lo:hi], seen_pred.array()[lo:hi]
        if p_all.dtype == object:           # samples predicted before any label was known
            made = p_all != None                                        # noqa: E711
            if not made.any():
                return float("nan")
            y_all, p_all = y_all[made], np.array(p_all[made].tolist())
        with warnings.catch_warnings():     # e.g. one label in the first samples
            warnings.simplefilter("ignore")
            return float(metric(y_all, p_all))

    def report(point, at_totals):
        """Record the metrics over the first `point` samples; print a line when asked."""
        nonlocal last_t, last_totals
        steps.append(point)
        for metric, name in zip(metrics, names):
            recorded[name].append(value(metric, name, 0, point, at_totals))
        if print_every is not None:          # pieces end at report points: the last sample
            if not last_t:
                write(f"{'average':>10} {'since':>10} {'samples':>10} {'label':>10} "
                      f"{'prediction':>10} {'centres':>8} {'seconds':>8}   ({names[0]})")
            since = value(metrics[0], names[0], last_t, point, at_totals)
            centres = getattr(estimator, "n_support_", "-")
            write(f"{recorded[names[0]][-1]:>10.6g} {since:>10.6g} {point:>10d} "
                  f"{_format(seen_y.last()):>10} {_format(seen_pred.last()):>10} "
                  f"{centres!s:>8} {time.perf_counter() - start:>8.2f}")
        last_t, last_totals = point, at_totals

    def learn(Xb, yb):
        """Predict-then-learn a piece; return the running metrics' sample values."""
        nonlocal fitted, knew_labels
        kwargs = ({"classes": classes} if classifier and classes is not None and tell_classes
                  and not hasattr(estimator, "classes_") else {})
        proba = None
        scores = None
        if banded:
            scores, a, b = (estimator._progressive_intervals(Xb, yb) if not classifier
                            else estimator._progressive_sets(Xb, yb))
            seen_a.append(a)
            seen_b.append(b)
            predictions = estimator._predictions(scores)
        elif fused:
            scores = estimator._progressive_scores(Xb, yb, **kwargs)
            predictions = estimator._predictions(scores)
            if needs_proba:
                proba = (estimator._scores_proba(scores) if discovers
                         else np.column_stack([expit(-scores), expit(scores)]))
            if discovers and not knew_labels and "classes" not in kwargs:   # no label known yet
                predictions = predictions.astype(object)
                predictions[0] = None
                if proba is not None:
                    proba[0] = 0.0
        else:
            known = getattr(estimator, "classes_", None)    # the labels before this piece
            if fitted:
                predictions = estimator.predict(Xb)
                if needs_proba:
                    proba = estimator.predict_proba(Xb)
            elif classifier and classes is None:     # no label known: no prediction
                predictions = np.full(len(yb), None, dtype=object)
            else:      # nothing learned yet: predict the first class, or 0
                predictions = np.full(len(yb), classes[0] if classifier else 0.0)
                if needs_proba:
                    proba = np.full((len(yb), len(classes)), 1.0 / len(classes))
            estimator.partial_fit(Xb, yb, **kwargs)
            after = getattr(estimator, "classes_", yb[:1])
            if needs_proba and (proba is None or len(after) > proba.shape[1]):
                grown = np.zeros((len(yb), len(after)))    # a new label: probability 0
                if proba is not None:
                    grown[:, np.searchsorted(after, known)] = proba
                proba = grown
            fitted = True
        knew_labels = True
        seen_y.append(yb)
        seen_pred.append(np.asarray(predictions))
        if discovers:           # the scores of each block have the classes known after it
            score_parts.append((scores, estimator.classes_))
        elif fused:
            seen_scores.append(scores)
        return {metric.name: metric.sample_values(yb, predictions, scores=scores, proba=proba,
                                                  classes=getattr(estimator, "classes_", classes))
                for metric in running}

    bar = progress_bar(total=total, desc=type(estimator).__name__, unit="samples",
                       verbose=progress)
    with bar:
        for Xb, yb in blocks:
            if not sp.issparse(Xb):
                Xb = np.ascontiguousarray(Xb, dtype=np.float64)
            if not classifier:
                yb = np.asarray(yb, dtype=np.float64)
            elif classes is None and not discovers and not adds_labels:   # two labels
                classes = np.unique(yb)
            lo, n = 0, Xb.shape[0]
            while lo < n:      # printing splits the chunk at report points, for exact centres
                hi = min(n, lo + next_point - t) if print_every is not None else n
                partial = {name: np.cumsum(v) for name, v in learn(Xb[lo:hi], yb[lo:hi]).items()}
                before = dict(totals)
                totals.update({name: before[name] + sums[-1] for name, sums in partial.items()})
                while next_point <= t + hi - lo:
                    k = next_point - t - 1
                    report(next_point, {name: before[name] + sums[k]
                                        for name, sums in partial.items()})
                    next_point = next(points)
                t += hi - lo
                bar.update(hi - lo)
                lo = hi
    if t == 0:
        raise ValueError("The stream is empty: no sample to validate.")
    if last_t != t:
        report(t, totals)
    y_all, predictions = seen_y.array(), seen_pred.array()
    if classifier:
        error = _cumulative_mean(predictions != y_all)
    else:
        error = _cumulative_mean((predictions - y_all) ** 2)
    if discovers:
        scores = estimator._align_scores(score_parts)
    else:
        scores = seen_scores.array() if fused else None
    loss = _cumulative_mean(estimator._stream_loss(scores, y_all)) if fused else None
    labels = confusion = None
    if classifier:
        made = predictions != None if predictions.dtype == object else slice(None)  # noqa: E711
        labels = np.unique(np.concatenate([np.unique(y_all), np.unique(predictions[made])]))
        confusion = np.zeros((len(labels), len(labels)), dtype=np.int64)
        np.add.at(confusion, (np.searchsorted(labels, y_all[made]),
                              np.searchsorted(labels, predictions[made].astype(labels.dtype))),
                  1)
    result = ProgressiveResult(predictions, scores, error, loss, np.array(steps),
                               {name: np.array(v) for name, v in recorded.items()},
                               time.perf_counter() - start, labels, confusion)
    if banded:
        _band_metrics(result, band_names, y_all, seen_a.array(), seen_b.array(), classifier)
    return result


BAND_METRICS = ("coverage", "width", "window_coverage")
WINDOW = 500        # events of "window_coverage"


def _band_metrics(result, names, y, a, b, classifier):
    """A conformal wrapper's run: each event's band (or set), whether it held the target,
    its width (or set size), and the band metrics at the report points: "coverage" so far,
    the mean "width" of the finite bands so far (the set size), "window_coverage" over
    the last WINDOW events."""
    if classifier:
        result.covered, result.width = a.astype(bool), b.astype(np.float64)
    else:
        result.lower, result.upper, result.targets = a, b, y
        result.covered, result.width = (y >= a) & (y <= b), b - a
    steps = result.steps
    finite = np.isfinite(result.width)
    sums = np.cumsum(np.where(finite, result.width, 0.0))
    counts = np.cumsum(finite)
    window = result.window_coverage(WINDOW)
    values = {"coverage": np.cumsum(result.covered)[steps - 1] / steps,
              "width": np.where(counts[steps - 1] > 0, sums[steps - 1]
                                / np.maximum(counts[steps - 1], 1), np.inf),
              "window_coverage": window[steps - 1]}
    for name in names:
        result.metrics[name] = values[name]


def evaluate(estimator: Any, X: Any, y: Any = None, *, metrics: Iterable[Any] | None = None,
             chunk_size: int = 1000, progress: bool | None = None) -> dict[str, float]:
    """Metrics of a fitted estimator's predictions on a stream, without learning.

    Parameters
    ----------
    estimator : a fitted estimator with predict
    X, y : arrays, or a stream of ``(X, y)`` chunks or events without y
        As in `progressive_validation`.
    metrics : list, optional
        As in `progressive_validation` (no "loss"); default "error_rate" for
        classifiers, "mse" for regressors.
    chunk_size : int, default=1000
        Samples per predict call.
    progress : bool, optional
        A progress bar on stderr: None (default) when it is a terminal.

    Returns
    -------
    dict
        Metric name -> value over the whole stream.
    """
    if not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}.")
    classifier = _is_classifier(estimator)
    refuse_label_metrics(metrics, classifier, estimator)
    metrics = [as_metric(m, estimator, False) for m in (
        metrics if metrics is not None else ["error_rate" if classifier else "mse"])]
    names = [metric_name(m) for m in metrics]
    totals = dict.fromkeys(names, 0.0)
    seen_y, seen_pred = _Record(), _Record()
    stream = iter_array(X, y, chunk_size=chunk_size) if y is not None else X
    with progress_bar(total=None if y is None else len(y), desc="evaluate", unit="samples",
                      verbose=progress) as bar:
        for Xb, yb in _blocks(stream, chunk_size):
            yb = yb if classifier else np.asarray(yb, dtype=np.float64)
            predictions = estimator.predict(Xb)
            for metric, name in zip(metrics, names):
                if isinstance(metric, RunningMetric):
                    proba = estimator.predict_proba(Xb) if metric.needs_proba else None
                    totals[name] += float(np.sum(metric.sample_values(
                        yb, predictions, proba=proba,
                        classes=getattr(estimator, "classes_", None))))
            seen_y.append(yb)
            seen_pred.append(np.asarray(predictions))
            bar.update(len(yb))
    if not (seen_y.blocks or seen_y.tail):
        raise ValueError("The stream is empty: nothing to evaluate.")
    y_all, p_all = seen_y.array(), seen_pred.array()
    return {name: (metric.finish(totals[name] / len(y_all)) if isinstance(metric, RunningMetric)
                   else float(metric(y_all, p_all)))
            for metric, name in zip(metrics, names)}
