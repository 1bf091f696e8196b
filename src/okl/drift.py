"""Streams that change: forgetting, and change detection on a learner's own loss (docs/drift.md).

Every single learner (`okl.OnlineKernelClassifier`, `okl.OnlineKernelRegressor`,
`okl.RegularizedPAClassifier`, `okl.CoefficientRegularizedClassifier`) adapts with
one of two parameters (`okl.KernelRLSRegressor` has its own `forgetting` and takes the
detector on its standardised residual, docs/drift.md, section 3):

``drift_detector``
    A change detector watching the learner's own loss before each step (its
    mistakes, or a regressor's absolute error over the targets' mean absolute
    deviation).  At a change the learner starts afresh from what it knows: its
    schedule restarts (the large early steps again) and its model is scaled by
    `KEEP`, so that the new concept outweighs the old one and, under a budget, the
    old centres are the first to go.  "page_hinkley" (or a `PageHinkley`) runs
    inside the compiled step; any detector with ``update(x)`` and
    ``drift_detected``, such as ``river.drift.ADWIN()``, runs on the Python path.
``forgetting``
    A factor lambda in (0, 1]: each step scales the model by lambda and runs the
    schedule on the forgetting count ``tau <- lambda tau + 1``, so that the step
    sizes stop decaying at about those of step ``1 / (1 - lambda)`` and what was
    learned fades with that memory, for streams that never stop moving.

References
----------
See docs/drift.md.

.. [1] E. S. Page, "Continuous inspection schemes", Biometrika, 41(1/2):100-115, 1954.
.. [2] D. V. Hinkley, "Inference about the change-point from cumulative sum tests",
   Biometrika, 58(3):509-523, 1971.
.. [3] A. Bifet and R. Gavalda, "Learning from time-changing data with adaptive
   windowing", SIAM International Conference on Data Mining, 2007.
"""
from numbers import Real

from okl._numpy.codes import Detector
from okl._numpy.drift import make_drift, make_drift_state, watch

__all__ = ["FLOOR", "KEEP", "PageHinkley", "drift_spec", "outside_detector"]

#: The factor the model takes at a detected change (docs/drift.md, section 3).
KEEP = 0.5
#: The least standard deviation of the loss that Page-Hinkley divides by (that of a 1 %
#: error rate, 0.1): a learner that has made no mistake for a while is not alarmed by one.
FLOOR = 0.1


class PageHinkley:
    """Page-Hinkley's test for a rise of the mean of a stream of losses, in standard deviations.

    With n the events since the last change, ``mean`` the mean of their losses x_s,
    ``sd`` their standard deviation (at least `FLOOR`) and ``cusum`` the sum of
    ``(x_s - mean_s) / sd_s - delta``, a change is signalled when n >= min_events and
    cusum rises more than `threshold` above its least value; the test then starts
    again.  Measured in standard deviations, the test is as sensitive at a 2 % error
    rate as at 30 %.  Passed as an okl learner's `drift_detector`, it runs inside the
    compiled step on the learner's own loss (a mistake counts 1); alone,
    ``update(x)`` and ``drift_detected`` follow river's detectors.

    Parameters
    ----------
    delta : float >= 0, default=0.05
        The rise of the mean loss that is tolerated, in standard deviations.
    threshold : float > 0, default=50.0
        The rise of the cumulative sum that is a change, in standard deviations.
    min_events : int >= 1, default=30
        No change is signalled before this many events since the last one.

    Attributes
    ----------
    drift_detected : bool
        Whether the last `update` signalled a change.
    n_detections : int
        The changes signalled so far.

    References
    ----------
    See docs/drift.md, section 2 (the default delta and threshold).

    Examples
    --------
    >>> from okl.drift import PageHinkley
    >>> ph = PageHinkley()
    >>> alarms = [i for i, x in enumerate([0] * 500 + [1] * 100) if ph.update(x).drift_detected]
    >>> alarms
    [505]
    """

    def __init__(self, delta=0.05, threshold=50.0, min_events=30):
        self.delta = delta
        self.threshold = threshold
        self.min_events = min_events
        self._state = make_drift_state()
        self.drift_detected = False
        self.n_detections = 0

    def _check(self):
        for name, value, low, closed in (("delta", self.delta, 0.0, True),
                                         ("threshold", self.threshold, 0.0, False),
                                         ("min_events", self.min_events, 1.0, True)):
            if (isinstance(value, bool) or not isinstance(value, Real) or value != value
                    or value == float("inf") or (value < low if closed else value <= low)):
                bound = f">= {low:g}" if closed else f"> {low:g}"
                raise ValueError(f"PageHinkley's {name} must be a finite number {bound}; "
                                 f"got {value!r}.")

    def spec(self):
        """The settings as the compiled step takes them (a `Drift` record without
        forgetting)."""
        self._check()
        return make_drift(Detector.PAGE_HINKLEY, self.delta, self.threshold, FLOOR,
                          self.min_events, 1.0, KEEP)

    def update(self, x):
        """Count the loss x; `drift_detected` says whether it signalled a change."""
        _, self._state = watch(self.spec(), self._state, float(x))
        self.drift_detected = self._state["changes"] > self.n_detections
        self.n_detections = int(self._state["changes"])
        return self

    def __repr__(self):
        return (f"PageHinkley(delta={self.delta!r}, threshold={self.threshold!r}, "
                f"min_events={self.min_events!r})")


def outside_detector(detector):
    """Whether `detector` runs outside the compiled step (river's, or any object with
    ``update`` and ``drift_detected`` that is not a `PageHinkley`)."""
    return detector is not None and not isinstance(detector, (str, PageHinkley))


def drift_spec(forgetting=1.0, drift_detector=None):
    """The `Drift` record of the compiled step for a learner's `forgetting` and
    `drift_detector` (a detector outside the step counts as none: its changes reach the
    step as `pending`).

    Returns
    -------
    dict
        The fields of `okl._numpy.drift.make_drift`.
    """
    if drift_detector == "page_hinkley":
        drift_detector = PageHinkley()
    if isinstance(drift_detector, PageHinkley):
        spec = drift_detector.spec()
    else:
        spec = make_drift(keep=KEEP)
    spec["forgetting"] = float(forgetting)
    return spec
