"""Forgetting and change detection in the step: the twin of _core/_drift.pxd (docs/drift.md).

The settings `Drift` and the state `DriftState` are dicts here, structs in Cython (fields
named as there).  `watch` takes one step's loss: Page-Hinkley's test counts it, and the
schedule's clock tau and the factor the model takes before the step follow, the same
operations in the same order as `cwatch`.
"""
import math

from okl._numpy.codes import Detector

NONE, PAGE_HINKLEY = Detector.NONE, Detector.PAGE_HINKLEY


def make_drift(detector=NONE, delta=0.0, threshold=math.inf, floor=1.0, min_events=0.0,
               forgetting=1.0, keep=1.0):
    """The `Drift` fields: the detector (a `Detector`), Page-Hinkley's delta and threshold
    (in standard deviations of the loss, at least `floor`) and least number of events, the
    forgetting factor and the model's factor at a change.  The defaults adapt nothing: the
    papers' iterates."""
    return dict(detector=int(detector), delta=float(delta), threshold=float(threshold),
                floor=float(floor), min_events=float(min_events), forgetting=float(forgetting),
                keep=float(keep))


def make_drift_state(tau=0.0, n=0.0, mean=0.0, m2=0.0, cusum=0.0, low=0.0, changes=0.0,
                     pending=0.0):
    """The `DriftState` fields: the schedule's clock tau (the steps taken, without forgetting
    or changes), Page-Hinkley's events, mean loss, sum of squared deviations, cumulative sum
    and its least value since the last change, the changes so far, and `pending` (1: a
    detector outside the step, such as river's, saw a change that the next step takes)."""
    return dict(tau=float(tau), n=float(n), mean=float(mean), m2=float(m2), cusum=float(cusum),
                low=float(low), changes=float(changes), pending=float(pending))


def watch(d, st, loss):
    """(factor, the state after a step of loss `loss`): the model takes the factor before the
    step, whose schedule runs on the new state's tau.

    Page-Hinkley (PAGE_HINKLEY) counts the loss: n, the mean of the losses and their sum of
    squared deviations (Welford), the sum of ``(loss - mean) / sd - delta`` (sd their
    standard deviation, at least `floor`) and its least value; a change when
    n >= min_events and the sum rises more than threshold above its least value.  A
    `pending` change is one too.
    At a change the statistics and the clock restart and the model takes
    `keep`; every step the clock is ``tau <- forgetting tau + 1`` and the model takes
    `forgetting`.
    """
    n, mean, m2, cusum, low = st["n"], st["mean"], st["m2"], st["cusum"], st["low"]
    tau, changes = st["tau"], st["changes"]
    change = st["pending"] != 0.0
    if d["detector"] == PAGE_HINKLEY:
        n += 1.0
        dev = loss - mean
        mean += dev / n
        m2 += dev * (loss - mean)
        sd = math.sqrt(m2 / n)
        if sd < d["floor"]:
            sd = d["floor"]
        cusum += (loss - mean) / sd - d["delta"]
        low = min(low, cusum)
        change = change or (n >= d["min_events"] and cusum - low > d["threshold"])
    factor = d["forgetting"]
    if change:
        n = mean = m2 = cusum = low = tau = 0.0
        changes += 1.0
        factor *= d["keep"]
    tau = d["forgetting"] * tau + 1.0
    return factor, dict(tau=tau, n=n, mean=mean, m2=m2, cusum=cusum, low=low,
                        changes=changes, pending=0.0)


def drift_loss(margin, y, f, scale):
    """The loss Page-Hinkley watches: a mistake (1.0 when ``y f <= 0``, else 0.0) for a margin
    loss, ``|y - f| / scale`` for a residual one (scale: the targets' mean absolute
    deviation so far; 0.0 while it is 0)."""
    if margin:
        return 1.0 if y * f <= 0.0 else 0.0
    return abs(y - f) / scale if scale > 0.0 else 0.0


FIELDS = ("tau", "n", "mean", "m2", "cusum", "low", "changes", "pending")


def active(d):
    """Whether the step forgets or detects: otherwise tau stays the steps taken and the
    learner keeps no drift state."""
    return d["detector"] != NONE or d["forgetting"] != 1.0


def read_state(state, t):
    """The `DriftState` of a learner's stored one (`_drift_state`, the 8 fields in order), or
    for None the clock at t with nothing detected."""
    return make_drift_state(tau=t) if state is None else dict(zip(FIELDS, map(float, state)))


def state_tuple(d):
    """The drift state as a learner stores it (`_drift_state`)."""
    return tuple(d[name] for name in FIELDS)
