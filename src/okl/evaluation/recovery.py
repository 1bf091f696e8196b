"""Recovery from changes: the level after each drift position and the delay back (docs/drift.md)."""
from dataclasses import dataclass

import numpy as np

METRICS = ("accuracy", "rmse")


@dataclass
class Recovery:
    """How a learner's predictions recovered from each change of a stream.

    Attributes
    ----------
    metric : str
        "accuracy" (higher is better) or "rmse" (lower is better).
    overall : float
        The metric over the whole stream.
    drifts : ndarray of int64
        The drift positions (first events of the new concepts).
    before : ndarray
        The metric over the `window` events before each drift (fewer when the
        previous drift is closer).
    after : ndarray
        The metric over the `window` events from each drift on (fewer when the
        next drift is closer).
    delay : ndarray
        Events from each drift until the metric over the next `window` events
        is within `tolerance` of `before`; NaN when it never is before the next
        drift (the end of the stream).
    window : int
    tolerance : float
    """

    metric: str
    overall: float
    drifts: np.ndarray
    before: np.ndarray
    after: np.ndarray
    delay: np.ndarray
    window: int
    tolerance: float


def _metric_of(y_true, metric):
    if metric is None:
        return "rmse" if np.asarray(y_true).dtype.kind in "fc" else "accuracy"
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS} or None; got {metric!r}.")
    return metric


def recovery(y_true, y_pred, drifts, *, window=500, tolerance=0.01, metric=None):
    """The level of a learner's predictions around each change, and its delay to recover.

    The predictions are those made before each event is learned (progressive
    validation, e.g. `okl.evaluation.progressive_validation`'s ``predictions``).
    For each drift position p: the metric over the `window` events before p
    (`before`, the pre-change level), over the `window` events from p on
    (`after`), and the delay: the least d such that the metric over the
    `window` events from p + d on is within `tolerance` of the pre-change
    level (for accuracy: at least ``before - tolerance``; for the RMSE,
    relative: at most ``before * (1 + tolerance)``).  Every window stays
    between p and the next drift position (the end of the stream): it is
    shortened to that stretch when the stretch is shorter.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    y_pred : array-like of shape (n_samples,)
        Labels for accuracy, real values for the RMSE.
    drifts : array-like of int
        Increasing positions in [1, n_samples - 1], such as the third value
        returned by `okl.synth`'s drifting generators.
    window : int >= 1, default=500
    tolerance : float >= 0, default=0.01
    metric : {"accuracy", "rmse"} or None, default=None
        None: "rmse" for real targets (a float y_true), else "accuracy".

    Returns
    -------
    Recovery

    References
    ----------
    See docs/drift.md, section 2.

    Examples
    --------
    >>> import numpy as np
    >>> from okl.evaluation import recovery
    >>> y = np.zeros(2000, dtype=int)
    >>> pred = y.copy()
    >>> pred[1000:1100] = 1         # 100 mistakes right after the change at 1000
    >>> r = recovery(y, pred, [1000], window=200)
    >>> float(r.before[0]), float(r.after[0]), float(r.delay[0])
    (1.0, 0.5, 100.0)
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_true.shape != y_pred.shape or not y_true.size:
        raise ValueError(f"y_true and y_pred must be 1-D of the same length >= 1; got shapes "
                         f"{y_true.shape} and {y_pred.shape}.")
    n = len(y_true)
    positions = np.asarray(drifts)
    if (positions.ndim != 1 or positions.size and positions.dtype.kind not in "iu"
            or np.any(np.diff(positions) <= 0)
            or positions.size and (positions[0] < 1 or positions[-1] > n - 1)):
        raise ValueError("drifts must be increasing integer positions in [1, n_samples - 1] = "
                         f"[1, {n - 1}]; got {drifts!r}.")
    positions = positions.astype(np.int64)
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be an int >= 1; got {window!r}.")
    if not (isinstance(tolerance, (int, float, np.floating)) and 0 <= tolerance < np.inf):
        raise ValueError(f"tolerance must be a finite float >= 0; got {tolerance!r}.")
    metric = _metric_of(y_true, metric)
    if metric == "accuracy":
        values = (y_true == y_pred).astype(np.float64)
    else:
        values = (y_true.astype(np.float64) - y_pred.astype(np.float64)) ** 2
        if not np.all(np.isfinite(values)):
            raise ValueError("y_true and y_pred must be finite for the RMSE.")
    total = np.concatenate([[0.0], np.cumsum(values)])

    def level(lo, hi):
        """The metric over the events [lo, hi) (arrays of the same shape)."""
        mean = (total[hi] - total[lo]) / (hi - lo)
        return mean if metric == "accuracy" else np.sqrt(mean)

    edges = np.concatenate([[0], positions, [n]])
    before, after, delay = (np.empty(len(positions)) for _ in range(3))
    for i, p in enumerate(positions):
        previous, following = edges[i], edges[i + 2]
        before[i] = level(max(p - window, previous), p)
        w = min(window, following - p)
        after[i] = level(p, p + w)
        starts = np.arange(p, following - w + 1)
        ahead = level(starts, starts + w)
        near = (ahead >= before[i] - tolerance if metric == "accuracy"
                else ahead <= before[i] * (1.0 + tolerance))
        delay[i] = float(np.argmax(near)) if near.any() else np.nan
    return Recovery(metric=metric, overall=float(level(0, n)), drifts=positions, before=before,
                    after=after, delay=delay, window=int(window), tolerance=float(tolerance))
