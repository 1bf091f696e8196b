"""The one-event fast path of the pointwise kernel learners (ALGORITHMS 1-3).

A step of `partial_fit` on one row costs tens of microseconds of Python and
NumPy around a sub-microsecond loop: validation, per-chunk schedule arrays,
the undo snapshot.  Here one event costs O(d) Python work and one compiled
call: the row is checked by `okl._rows` (and for NaN/inf inside the step), the
schedule of step t is a few float operations (the same formulas as
`okl.schedules`, so the same floating-point values), and the step
(`okl._core._event.learn_event`) checks everything before its first write, so
a failed event needs no undo.  The iterates are those of `partial_fit` on the
same rows.
"""
import numpy as np

from okl._core._event import EventStatus, learn_event, predict_event
from okl._core._expansion import KernelExpansion
from okl._rows import check_row
from okl.schedules import step_sizes


def supports_fast_path(est):
    """True for a fitted pointwise learner on the cython engine (the steps this module takes)."""
    return (hasattr(est, "_loss_args") and hasattr(est, "ck2_")
            and type(est.__dict__.get("_expansion")) is KernelExpansion
            and est.engine == "cython")


def _step_size_args(est, t, lam_t):
    """(decay, auto, M): what learn_event needs to form eta_t, in O(1)."""
    eta = est.eta
    if isinstance(eta, str):                                   # "auto"
        return t ** -est.eta_decay, True, est._auto_lipschitz()
    if callable(eta):
        return float(step_sizes(eta, est.eta_decay, np.array([float(t)]))[0]), False, 1.0
    return eta * t ** -est.eta_decay, False, 1.0


def learn_row(est, row, target, weight=1.0):
    """Predict f_t(x_t), then take step t on one checked row; return f_t(x_t).

    `target` is the float target (regressors) or the label as -1.0 / +1.0.
    Raises (leaving `est` exactly as it was) on a non-finite row or divergence.
    """
    t = est.t_ + 1
    lam_t = est.lam * float(t) ** -getattr(est, "lam_decay", 0.0)
    decay, auto, lipschitz = _step_size_args(est, float(t), lam_t)
    status, f, eta_t, ck2, _ = learn_event(
        est._expansion, row, target, decay, lam_t, auto, lipschitz, est.ck2_,
        *est._loss_args(), weight, 0.0, 0.0)
    if status == EventStatus.BAD_ROW:
        raise ValueError(f"{type(est).__name__} got a row with NaN or inf: {row[:10]}; "
                         "non-finite values cannot be learned.")
    if status == EventStatus.DIVERGED:
        raise FloatingPointError(
            f"{type(est).__name__} diverged at step t={t} (eta_t={eta_t:.3g}): the model is "
            "no longer finite. The step size is too large for this data; use eta='auto', a "
            "smaller eta or a larger eta_decay, or scale X (e.g. with "
            "okl.preprocessing.OnlineStandardScaler). The model is left as it was.")
    # plain attribute stores: no call, so no signal can land between them
    est.t_, est.ck2_, est.eta_, est.lam_, est.n_support_ = (
        t, ck2, eta_t, lam_t, est._expansion.n_support)
    return f


def decision_row(est, x):
    """f(x) for one event (dict or 1-D row) of a fitted learner on the fast path."""
    row, _ = check_row(est, x, check_finite=False)
    f = predict_event(est._expansion, row)
    if f != f:
        raise ValueError(f"{type(est).__name__} got a row with NaN or inf: {row[:10]}.")
    return f
