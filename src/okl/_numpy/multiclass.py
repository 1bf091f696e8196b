"""The multiclass NORMA step in NumPy: the twin of _core/_multiclass.pyx (docs/multiclass.md, 3-4).

Same arguments as the Cython chunk loop (the schedule and state as dicts, the
offsets b as an array updated in place), same iterates.
"""
import numpy as np

from okl._numpy.codes import MulticlassLoss
from okl._numpy.drift import watch
from okl._numpy.pointwise import DIVERGED, SKIPPED, TAKEN, kernel_mean, schedule, set_width
from okl._numpy.kernels import kernel_values


def gradient(loss, s, y, w):
    """(w times the loss gradient at the scores s, true class y; whether it is non-zero)."""
    k = len(s)
    g = np.zeros(k)
    if loss == MulticlassLoss.HINGE:
        r = -1
        for j in range(k):
            if j != y and (r < 0 or s[j] > s[r]):
                r = j
        if not 1.0 - s[y] + s[r] > 0.0:
            return g, False
        g[y], g[r] = -w, w
        return g, True
    e = np.exp(s - s.max())
    p = e / e.sum()
    p[y] -= 1.0
    return w * p, True


def step(model, x, kxx, s, y, w, eta_given, loss, sch, st, b, kself=None):
    """One step from the scores s = f_t(x_t) + b: TAKEN, SKIPPED or DIVERGED (nothing changed).

    kxx = K(x_t, x_t) (for C_K^2); kself the model's own K(x, x), <z, z> for a feature row
    (kxx when None)."""
    kself = kxx if kself is None else kself
    st["eta_try"] = np.nan
    if w != 0.0:
        t = st["t"] + 1.0
        ck2 = max(kxx, st["ck2"])
        # forgetting and change detection on the mistakes (okl._numpy.drift)
        kept, drift = watch(sch["drift"], st["drift"], float(int(np.argmax(s)) != y))
        eta_t, lam_t = schedule(sch, drift["tau"], ck2, eta_given)
        st["eta_try"] = eta_t
    if not np.all(np.isfinite(s)):
        return DIVERGED
    if w == 0.0:
        return SKIPPED
    g, add = gradient(loss, s, y, w)
    factor = 1.0 - lam_t * eta_t
    shrink = factor * kept
    a = -eta_t * g
    b_next = b - eta_t * g if sch["intercept"] else b.copy()
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b_next))):
        return DIVERGED
    if add and not np.all(np.isfinite(shrink * (s - b) + a * kself + b_next)):
        return DIVERGED
    model.shrink(shrink)
    if add:
        model.add(x, a)
    b[:] = b_next
    if factor <= 0.0 and st["reset_t"] == 0.0:
        st.update(reset_t=t, reset_eta=eta_t, reset_lam=lam_t)
    st.update(t=t, ck2=ck2, eta_t=eta_t, lam_t=lam_t, drift=drift)
    return TAKEN


def fit_chunk(model, X, y, schedule_, loss, state, b, pred_out, weight=None, eta=None,
              kdiag=None, gamma=None, kbar=None, raw=None, frozen_at=0):
    """Predict-then-update over the rows: (first divergent row or -1, the state after).

    On feature rows (a `NumpyMultiLinearModel`) kdiag gives K(x_t, x_t) of every row;
    `gamma` and `kbar`: the warm-ups, as in `okl._numpy.pointwise.fit_chunk`."""
    st = dict(state)
    schedule_ = dict(schedule_)
    features = kdiag is not None
    if kbar is not None and not kbar.active:        # fixed earlier in the call
        schedule_["lipschitz"] = kbar.lipschitz * kbar.final
        kbar = None
    if kbar is not None and kbar.rows and not features:
        raw = X
    if not features:
        model.reserve(len(X))
        if gamma is not None:
            set_width(model, gamma[0])
    with np.errstate(over="ignore", invalid="ignore"):
        for i, x in enumerate(X):
            if kbar is not None and kbar.active:
                schedule_["lipschitz"] = kernel_mean(model, kbar, st["t"])
            s = model.scores(x) + b
            pred_out[i] = s
            if features:
                kxx, kself = float(kdiag[i]), float(x @ x)
            else:
                kxx = kself = float(kernel_values(model.kernel_params, x[None, :], x)[0])
            w = 1.0 if weight is None else weight[i]
            status = step(model, x, kxx, s, int(y[i]), w, np.nan if eta is None else eta[i],
                          loss, schedule_, st, b, kself)
            if status == DIVERGED:
                return i, st
            if kbar is not None and kbar.active and kbar.rows and status == TAKEN:
                kbar.append(raw[i])
            if frozen_at and model.n_support >= frozen_at:
                gamma = None                    # Nystroem's switch follows: the width stays
            if gamma is not None and not features:
                set_width(model, gamma[i + 1])
    if kbar is not None and kbar.active:
        kernel_mean(model, kbar, st["t"], after=True)
    return -1, st
