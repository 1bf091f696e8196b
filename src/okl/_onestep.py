"""The one-event fast path of the pointwise kernel learners (docs/algorithms.md, sections 1-3).

A step of `partial_fit` on one row costs tens of microseconds of Python and
NumPy around a sub-microsecond loop: validation, per-chunk schedule arrays,
the undo snapshot.  Here one event costs O(d) Python work and one compiled
call (`okl._core._event.PointwiseEvents`): the row is checked by `okl._rows`
(NaN/inf inside the step), the schedule of step t is a few float operations
(the formulas of `okl.schedules`), and the step checks everything before its
first write, so a failed event needs no undo.  The iterates are those of
`partial_fit` on the same rows.
"""
from okl._core._event import PointwiseEvents
from okl._core._expansion import KernelExpansion


def events_of(est, cache):
    """The `PointwiseEvents` of a fitted pointwise learner on the cython engine, or None.

    `cache` is a one-element list holding the last one built; it serves while
    the estimator holds the very expansion and parameter objects it was built
    with.  A new one is built only when the parameters are those validated by
    the last fit / partial_fit (okl._base): after `set_params`, the next event
    takes the validating path once.
    """
    events = cache[0]
    if events is not None and events.matches(est):
        return events
    if not (hasattr(est, "_loss_args") and "ck2_" in est.__dict__ and est.engine == "cython"
            and type(est.__dict__.get("_expansion")) is KernelExpansion):
        return None
    from okl._base import _params_changed
    if _params_changed(est):
        return None
    M = est._auto_lipschitz() if isinstance(est.eta, str) else 1.0
    names = ("_expansion",) + tuple(name for name in est.get_params(deep=False)
                                    if name in est.__dict__)
    events = cache[0] = PointwiseEvents(
        est._expansion, tuple(est._loss_args()), float(est.lam),
        float(getattr(est, "lam_decay", 0.0)), est.eta, float(est.eta_decay), float(M),
        type(est).__name__, None, names, bool(getattr(est, "fit_intercept", False)))
    events.bind(est)
    return events
