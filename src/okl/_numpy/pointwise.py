"""The pointwise learning step in NumPy: the twin of _core/_pointwise.pyx (docs/algorithms.md, 1-3, 7).

`schedule` gives eta_t and lam_t of step t, `step` takes one step on either
model (a `NumpyExpansion`, or a `NumpyLinearModel` on feature rows), and
`fit_chunk` runs a chunk.  The schedule, loss and state are the dicts the
Cython loop takes as structs (fields named as there); the state after the
chunk is returned, as in Cython.
"""
import math

import numpy as np

from okl._numpy.codes import Offset, StepSize
from okl._numpy.drift import drift_loss, make_drift, make_drift_state, watch
from okl._numpy.kernels import kernel_values
from okl._numpy.losses import Loss, gradient

AUTO, POWER, GIVEN, SCALED = StepSize.AUTO, StepSize.POWER, StepSize.GIVEN, StepSize.SCALED
FIXED, MEAN, STEP = Offset.FIXED, Offset.MEAN, Offset.STEP
TAKEN, SKIPPED, DIVERGED = 0, 1, 2


def make_schedule(kind=GIVEN, eta=0.0, eta_decay=0.0, lam=0.0, lam_decay=0.0, lipschitz=1.0,
                  intercept=FIXED, drift=None):
    """The `Schedule` fields: eta_t = eta t^-eta_decay (POWER), 1/(lam_t + L C_K^2) t^-eta_decay
    (AUTO) or given per row (GIVEN); lam_t = lam t^-lam_decay; `intercept` (an `Offset`) says
    how b learns; `drift` the forgetting and change detection (`okl._numpy.drift.make_drift`,
    None: none)."""
    return dict(kind=int(kind), eta=float(eta), eta_decay=float(eta_decay), lam=float(lam),
                lam_decay=float(lam_decay), lipschitz=float(lipschitz), intercept=int(intercept),
                drift=make_drift() if drift is None else dict(drift))


def make_state(t=0, ck2=0.0, b=0.0, dev=0.0, drift=None):
    """The `StepState` fields: steps taken, C_K^2 so far, the offset b, the sum of
    w_s |y_s - b_{s+1}| (SCALED), the drift state (`okl._numpy.drift.make_drift_state`;
    None: the clock at t, nothing detected), and what the steps report."""
    return dict(t=float(t), ck2=float(ck2), b=float(b), dev=float(dev), eta_t=np.nan,
                lam_t=np.nan, eta_try=np.nan, reset_t=0.0, reset_eta=0.0, reset_lam=0.0,
                drift=make_drift_state(tau=t) if drift is None else dict(drift))


def schedule(s, t, ck2, eta_given=np.nan, dev=0.0):
    """(eta_t, lam_t) of step t (the drift state's clock tau); C_K^2 = ck2 includes the step's
    own K(x_t, x_t); dev is the mean |y_s - b_{s+1}| of the steps before (0 for none; SCALED)."""
    lam_t = s["lam"] if s["lam_decay"] == 0.0 else s["lam"] * t ** -s["lam_decay"]
    if s["kind"] == GIVEN:
        return eta_given, lam_t
    decay = 1.0 if s["eta_decay"] == 0.0 else t ** -s["eta_decay"]
    if s["kind"] in (AUTO, SCALED):
        denom = lam_t + s["lipschitz"] * ck2
        eta_t = decay / denom if denom > 0.0 else decay
        if s["kind"] == SCALED and dev > 1.0:     # the targets' scale, when above 1
            eta_t *= dev
        return eta_t, lam_t
    return s["eta"] * decay, lam_t


def offset(s, b, y, w, t):
    """b_{t+1} of a MEAN offset (docs/defaults.md, section 1); b for the others."""
    if s["intercept"] == MEAN:
        return b + (y - b) * (w / t if w < t else 1.0)
    return b


# the prior-shift offset of the binary classifier (docs/defaults.md, section 1)
PRIOR_RATE = 0.01       # the recent labels' mean forgets at this rate
PRIOR_NOISE = 3.0       # the soft threshold, in standard deviations of that mean
PRIOR_START = (0.0, 0.0, 0.0, 0.0, 0.0)     # no step counted


def prior_state(state):
    """The prior-shift state ``(n, ybar, recent, hbar, srecent)`` of a stored one: None is
    `PRIOR_START`; a 4-tuple (saved before srecent was kept) starts srecent at recent, no lag
    seen yet (b = 0 until the kernel part's recent signs are counted)."""
    if state is None:
        return PRIOR_START
    if len(state) == 4:
        return (*state, state[2])
    return state


def prior_offset(state):
    """b = sign(u) max(min(|u| - noise, sign(u) v), 0) hbar of the prior-shift state
    ``(n, ybar, recent, hbar, srecent)`` (`prior_offsets`), u = recent - ybar the prior's
    shift, v = recent - srecent the kernel part's lag behind the recent labels: 0 while
    the shift is within `PRIOR_NOISE` of its standard deviations on a stationary stream
    or the kernel part's recent signs already follow it."""
    _, ybar, recent, hbar, srecent = state
    noise = PRIOR_NOISE * math.sqrt(PRIOR_RATE / (2.0 - PRIOR_RATE) * max(1.0 - ybar * ybar, 0.0))
    shift = recent - ybar
    lag = math.copysign(1.0, shift) * (recent - srecent)
    return math.copysign(max(min(abs(shift) - noise, lag), 0.0), shift) * hbar


def prior_count(state, h, y, w):
    """The prior-shift state after a step of weight w > 0 on label y with kernel part h: a
    weight counts as w events, capped at replacing the means."""
    n, ybar, recent, hbar, srecent = state
    n += 1.0
    rate = w / n if w < n else 1.0
    fast = max(rate, min(PRIOR_RATE * w, 1.0))
    return (n, ybar + rate * (y - ybar),
            recent + fast * (y - recent),
            hbar + rate * (abs(h) - hbar),
            srecent + fast * ((1.0 if h > 0.0 else -1.0) - srecent))


def prior_offsets(state, h, y, weight=None):
    """The prior-shift offset over a chunk: (b_t of every row, the state after).

    `state` is ``(n, ybar, recent, hbar, srecent)``: the steps counted, the mean
    of their labels y in {-1, 1}, that mean forgetting at `PRIOR_RATE`, the mean
    ``|h_s(x_s)|`` of the kernel part before each step, and the mean of its signs
    ``sign h_s(x_s)`` (the label it predicted) forgetting as ``recent`` (`prior_state`
    reads a stored one).  Row t is predicted with ``b_t = prior_offset(state)``, then
    counted (`prior_count`; a zero weight is not).  The kernel part never sees b: it
    steps on h, the papers' iterates.  Both engines and the one-event step call these
    functions, so they agree exactly.
    """
    state = prior_state(state)
    b_out = np.empty(len(h))
    for i in range(len(h)):
        b_out[i] = prior_offset(state)
        w = 1.0 if weight is None else float(weight[i])
        if w != 0.0:
            state = prior_count(state, float(h[i]), float(y[i]), w)
    return b_out, state


def step(model, x, kxx, kself, f, y, w, eta_given, loss, s, st):
    """One step from f = f_t(x_t): TAKEN, SKIPPED (w = 0) or DIVERGED (nothing changed).

    `st` (the state dict) is updated in place; kxx = K(x_t, x_t) of the
    learner's kernel, kself = the model's own K(x, x).
    """
    st["eta_try"] = np.nan
    if w != 0.0:
        t = st["t"] + 1.0
        ck2 = max(kxx, st["ck2"])
        mean_dev = st["dev"] / (t - 1.0) if t > 1.0 else 0.0
        # forgetting and change detection (okl._numpy.drift): the clock tau of the schedule,
        # the factor `kept` the model takes before the step
        kept, drift = watch(s["drift"], st["drift"],
                            drift_loss(loss["kind"] >= Loss.HINGE, y, f, mean_dev))
        tau = drift["tau"]
        eta_t, lam_t = schedule(s, tau, ck2, eta_given, mean_dev)
        st["eta_try"] = eta_t
    if not np.isfinite(f):
        return DIVERGED
    if w == 0.0:
        return SKIPPED
    # a MEAN offset moves first: the kernel part steps on the residual against b_{t+1}
    b_next = offset(s, st["b"], y, w, tau)
    g = w * gradient(loss, y, f - st["b"] + b_next)
    factor = 1.0 - lam_t * eta_t
    shrink = factor * kept
    a = -eta_t * g
    if s["intercept"] == STEP:
        b_next = st["b"] - eta_t * g
    if not (np.isfinite(a) and np.isfinite(b_next)):
        return DIVERGED
    if g != 0.0 and not np.isfinite(shrink * (f - st["b"]) + a * kself + b_next):
        return DIVERGED
    model.shrink(shrink)
    if g != 0.0:
        model.add(x, a)
    if factor <= 0.0 and st["reset_t"] == 0.0:
        st.update(reset_t=t, reset_eta=eta_t, reset_lam=lam_t)
    st.update(t=t, ck2=ck2, eta_t=eta_t, lam_t=lam_t, b=b_next,
              dev=st["dev"] + w * abs(y - b_next), drift=drift)
    return TAKEN


def kernel_mean(model, kbar, t, after=False):
    """M kbar of the next step (t steps taken; kbar fixed once t >= WARMUP), over the
    expansion's centres at its width or the rows learned; `after` a step: fix kbar when it
    is time, and bring the rows' sum to the width (`_core._pointwise.ckernel_mean`)."""
    expansion = hasattr(model, "kernel_params")
    gamma = model.kernel_params["gamma"] if expansion else kbar.gamma
    args = (model.centers_ if expansion and not kbar.rows else None,
            model.budget if expansion else 0, gamma, t)
    return kbar.after(*args) if after else kbar.lipschitz_of(*args)


def set_width(model, gamma):
    """The expansion's width is gamma (gamma="scale"'s warm-up), when it is not already."""
    if gamma != model.kernel_params["gamma"]:
        model.set_gamma(gamma)


def fit_chunk(model, X, y, schedule, loss, state, pred_out, weight=None, eta=None, kdiag=None,
              gamma=None, kbar=None, raw=None, frozen_at=0):
    """Predict-then-update over the rows: (first divergent row or -1, the state after).

    During the warm-ups `gamma` (n + 1) gives the expansion's width before each row and
    after them (it stays once the expansion holds `frozen_at` centres), and `kbar` the
    step's M kbar (over the rows learned: read from `raw`, X
    itself for an expansion), as in `_core._pointwise.fit_chunk`."""
    st = dict(state)
    schedule = dict(schedule)
    linear = kdiag is not None
    if kbar is not None and not kbar.active:        # fixed earlier in the call
        schedule["lipschitz"] = kbar.lipschitz * kbar.final
        kbar = None
    if kbar is not None and kbar.rows and not linear:
        raw = X
    if not linear:
        model.reserve(len(X))
        if gamma is not None:
            set_width(model, gamma[0])
    with np.errstate(over="ignore", invalid="ignore"):     # divergence is reported, not warned
        for i, x in enumerate(X):
            if kbar is not None and kbar.active:
                schedule["lipschitz"] = kernel_mean(model, kbar, st["t"])
            f = model.predict_one(x) + st["b"]
            pred_out[i] = f
            if linear:
                kxx, kself = kdiag[i], float(x @ x)
            else:
                kxx = kself = float(kernel_values(model.kernel_params, x[None, :], x)[0])
            w = 1.0 if weight is None else weight[i]
            status = step(model, x, kxx, kself, f, y[i], w, np.nan if eta is None else eta[i],
                          loss, schedule, st)
            if status == DIVERGED:
                return i, st
            if kbar is not None and kbar.active and kbar.rows and status == TAKEN:
                kbar.append(raw[i])
            if frozen_at and model.n_support >= frozen_at:
                gamma = None                    # Nystroem's switch follows: the width stays
            if gamma is not None and not linear:
                set_width(model, gamma[i + 1])
    if kbar is not None and kbar.active:
        kernel_mean(model, kbar, st["t"], after=True)       # fixed after the WARMUP-th step
    return -1, st
