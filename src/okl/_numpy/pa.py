"""The passive-aggressive loops (docs/algorithms.md, section 5) in NumPy: twin of _core/_pa.pyx.

The twin keeps the true weights (it multiplies w by cv at every shrink, where
the Cython loop multiplies one scale), so it returns scale = 1.  With `drift`
(the `Drift` fields) each loop watches the mistakes and the step starts from
`pre` times the model (okl._numpy.drift; the note of _core/_pa.pyx);
`drift_state`, the 7 fields as an array, is updated in place.
"""
import numpy as np
import scipy.sparse as sp

from okl._numpy.codes import Event, Regularization, Variant
from okl._numpy.drift import FIELDS, watch
from okl._numpy import projections
from okl._numpy.kernels import kernel_values


def violated(mistake, m):
    """The update condition: a mistake (y f <= 0), or hinge loss > 0 (y f < 1)."""
    return m <= 0.0 if mistake else m < 1.0


def coefs(reg, variant, C, alpha, beta, m, xx, vv):
    """(event, cv, ca) of a violated step: w_{t+1} = cv w_t + ca y x."""
    if reg == Regularization.L2:
        step = projections.halfspace_l2_coefs(vv, m, xx, 1.0, beta)
        return (Event.INFEASIBLE, 1.0, 0.0) if step is None else (Event.UPDATED, *step)
    if xx == 0.0:
        hard = reg == Regularization.OBJECTIVE or variant == Variant.PA
        return (Event.INFEASIBLE if hard else Event.PASSIVE), 1.0, 0.0
    loss = 1.0 - m
    if reg == Regularization.OBJECTIVE:
        cv = 1.0 / (1.0 + alpha)
        return Event.UPDATED, cv, (loss + alpha) / xx * cv
    if variant == Variant.PA:
        return Event.UPDATED, 1.0, loss / xx
    if variant == Variant.PA_I:
        return Event.UPDATED, 1.0, min(C, loss / xx)
    return Event.UPDATED, 1.0, loss / (xx + 0.5 / C)


def _exponent(x):
    """e with max |x_j| in [2^(e-1), 2^e) (0 for x = 0)."""
    top = float(np.max(np.abs(x))) if x.size else 0.0
    return int(np.frexp(top)[1]) if top > 0.0 else 0


def scaled_coefs(reg, variant, C, alpha, beta, m, uu, e, vv):
    """`coefs` for a row x = 2^e u given uu = ||u||^2: (event, cv, ca 2^e), so that
    w_{t+1} = cv w_t + cas y u; no term of ||x||^2 = 4^e uu is formed."""
    if reg == Regularization.L2:
        step = projections.halfspace_l2_coefs(vv, np.ldexp(m, -e), uu, np.ldexp(1.0, -e), beta)
        return (Event.INFEASIBLE, 1.0, 0.0) if step is None else (Event.UPDATED, *step)
    if uu == 0.0:
        hard = reg == Regularization.OBJECTIVE or variant == Variant.PA
        return (Event.INFEASIBLE if hard else Event.PASSIVE), 1.0, 0.0
    loss = 1.0 - m
    with np.errstate(over="ignore", under="ignore"):
        if reg == Regularization.OBJECTIVE:
            cv = 1.0 / (1.0 + alpha)
            return Event.UPDATED, cv, np.ldexp((loss + alpha) / uu, -e) * cv
        if variant == Variant.PA:
            return Event.UPDATED, 1.0, np.ldexp(loss / uu, -e)
        if variant == Variant.PA_I:
            return Event.UPDATED, 1.0, min(np.ldexp(C, e), np.ldexp(loss / uu, -e))
        if e >= 0:
            return Event.UPDATED, 1.0, np.ldexp(loss, -e) / (uu + np.ldexp(0.5 / C, -2 * e))
        return Event.UPDATED, 1.0, np.ldexp(loss, e) / (np.ldexp(uu, 2 * e) + 0.5 / C)


class _Watch:
    """The drift state of one loop: `pre` of a step, kept unless the step was infeasible."""

    def __init__(self, drift, drift_state):
        self.drift, self.array = drift, drift_state
        self.state = None if drift is None else dict(zip(FIELDS, map(float, drift_state)))
        self.after = None

    def pre(self, loss):
        if self.drift is None:
            return 1.0
        factor, self.after = watch(self.drift, self.state, loss)
        return factor

    def keep(self, event):
        if self.drift is not None and event != Event.INFEASIBLE:
            self.state = self.after

    def close(self):
        if self.drift is not None:
            self.array[:] = [self.state[name] for name in FIELDS]


def _rows(X):
    """The rows of X as dense vectors (CSR rows are expanded one at a time)."""
    if not sp.issparse(X):
        yield from X
        return
    for i in range(X.shape[0]):
        x = np.zeros(X.shape[1])
        lo, hi = X.indptr[i], X.indptr[i + 1]
        x[X.indices[lo:hi]] = X.data[lo:hi]
        yield x


def fit_linear(w, scale, ww, X, y, reg, variant, C, alpha, beta, mistake, sigma,
               score_out, event_out, kxx=None, drift=None, drift_state=None):
    """Predict-then-update over the rows of X (dense or CSR); w is updated in place.

    `kxx` (or None): the K(x, x) of Nystroem feature rows, which replace
    ||x||^2 in the step coefficients (not in ||w||^2).  Returns (failed,
    scale, ww): failed is -1 or the first divergent step.
    """
    return _linear_loop(_fit_linear, w, scale, ww, X, y, reg, variant, C, alpha, beta,
                        mistake, sigma, score_out, event_out, kxx, drift, drift_state)


def _linear_loop(loop, w, scale, ww, X, y, reg, variant, C, alpha, beta, mistake, sigma,
                 score_out, event_out, kxx, drift, drift_state):
    """`loop` (`_fit_linear` or `_fit_multi`) watching the drift of its mistakes."""
    if drift is not None and reg == Regularization.L1:
        raise ValueError("the L1 loop takes no drift factor (its projection needs w itself).")
    return _watching(loop, drift, drift_state, w, scale, ww, X, y, reg, variant, C, alpha,
                     beta, mistake, sigma, score_out, event_out, kxx)


def _watching(loop, drift, drift_state, *args):
    """loop(*args, watched): the drift state is written back however the loop ends."""
    watched = _Watch(drift, drift_state)
    try:
        return loop(*args, watched)
    finally:
        watched.close()


def _fit_linear(w, scale, ww, X, y, reg, variant, C, alpha, beta, mistake, sigma, score_out,
                event_out, kxx, watched):
    w *= scale
    for i, x in enumerate(_rows(X)):
        f = w @ x
        score_out[i] = f
        if not np.isfinite(f):
            return i, 1.0, ww
        pre = watched.pre(1.0 if y[i] * f <= 0.0 else 0.0)
        m = y[i] * f * pre
        vv = ww * pre * pre
        event = Event.PASSIVE
        if violated(mistake, m):
            if reg == Regularization.L1:
                e = _exponent(x)
                e = 0 if -500 < e < 500 else e    # {a.w >= 1} as {(a/2^e).w >= 2^-e}
                with np.errstate(over="ignore"):
                    new = projections.halfspace_l1_ball(w, np.ldexp(y[i] * x, -e),
                                                        np.ldexp(1.0, -e), beta)
                if new is None:
                    event = Event.INFEASIBLE
                else:
                    event, w[:], ww = Event.UPDATED, new, new @ new
            else:
                e = _exponent(x)                    # x = 2^e u, max |u_j| in [1/2, 1)
                u = np.ldexp(x, -e)
                uu = u @ u
                uk = uu if kxx is None else np.ldexp(kxx[i], -2 * e)
                event, cv, cas = scaled_coefs(reg, variant, C, alpha, beta, m, uk, e, vv)
                if event == Event.UPDATED:
                    with np.errstate(over="ignore", invalid="ignore"):
                        ww_new = cv * cv * vv + 2.0 * cv * cas * np.ldexp(m, -e) + cas * cas * uu
                    if not (np.isfinite(cas) and np.isfinite(ww_new)):
                        return i, 1.0, ww
                    ww = max(ww_new, 0.0)
                    w *= cv * pre
                    w += cas * y[i] * u
            if event == Event.UPDATED and sigma > 0.0:
                w[:] = projections.truncate_smallest(w, sigma)
                ww = w @ w
        if event == Event.PASSIVE and pre != 1.0:
            w *= pre
            ww = vv
        watched.keep(event)
        event_out[i] = event
    return -1, 1.0, ww


def fit_kernel(expansion, ww, X, y, reg, variant, C, alpha, beta, mistake,
               score_out, event_out, drift=None, drift_state=None, gamma=None):
    """The loop for a NumpyExpansion f = sum_i a_i K(x_i, .); returns (failed, ww).

    ||f||_K^2 is carried exactly: the step's own change plus the budget's
    `norm_change` (as fit_kernel of _core/_pa.pyx).  `gamma` (n + 1,): the width before
    each row and after the last (gamma="scale"'s warm-up), ww recomputed at a new width
    with regularization "l2" (no other rule reads it).
    """
    if gamma is not None and len(gamma) != len(X) + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    return _watching(_widths, drift, drift_state, _fit_kernel, expansion, ww, X, y, reg,
                     variant, C, alpha, beta, mistake, score_out, event_out, gamma, 1.0)


def _widths(loop, expansion, ww, X, y, reg, variant, C, alpha, beta, mistake, score_out,
            event_out, gamma, factor, watched):
    """`loop` one row at a time at the widths `gamma` (None: all rows at once); ww at a
    new width is ``factor ||f||_K^2`` (factor 2: the multiclass 2 sum_c ||f_c||^2)."""
    if gamma is None:
        return loop(expansion, ww, X, y, reg, variant, C, alpha, beta, mistake, score_out,
                    event_out, watched)
    n = len(X)
    for i in range(n + 1):
        if gamma[i] != expansion.kernel_params["gamma"]:
            expansion.set_gamma(gamma[i])
            if reg == Regularization.L2:
                ww = factor * max(expansion.sq_norm(), 0.0)
        if i == n:
            break
        failed, ww = loop(expansion, ww, X[i:i + 1], y[i:i + 1], reg, variant, C, alpha,
                          beta, mistake, score_out[i:i + 1], event_out[i:i + 1], watched)
        if failed >= 0:
            return i, ww
    return -1, ww


def _fit_kernel(expansion, ww, X, y, reg, variant, C, alpha, beta, mistake, score_out,
                event_out, watched):
    p = expansion.kernel_params

    def K(u, v):
        return kernel_values(p, u[None], v)[0]

    expansion.reserve(len(X))
    expansion.track_norm = True
    for i, x in enumerate(X):
        kxx = K(x, x)
        f = expansion.predict_one(x)
        score_out[i] = f
        if not np.isfinite(f):
            return i, ww
        pre = watched.pre(1.0 if y[i] * f <= 0.0 else 0.0)
        m = y[i] * f * pre
        vv = ww * pre * pre
        event = Event.PASSIVE
        if violated(mistake, m):
            event, cv, ca = coefs(reg, variant, C, alpha, beta, m, kxx, vv)
        if event == Event.PASSIVE and pre != 1.0:
            expansion.shrink(pre)
            ww = vv
        if event == Event.UPDATED:
            if not np.isfinite(x @ x):      # ||x||^2 overflows: no kernel value of it is finite
                return i, ww
            c = ca * y[i]
            ww_new = cv * cv * vv + 2.0 * cv * ca * m + ca * ca * kxx
            expansion.shrink(cv * pre)
            if not expansion.add(x, c):
                return i, ww
            ww = max(ww_new + expansion.norm_change, 0.0)
        watched.keep(event)
        event_out[i] = event
    return -1, ww


def margin(s, y):
    """(s_y - max_{c != y} s_c, r): r the first best wrong class (+inf, -1 when k < 2)."""
    if len(s) < 2:
        return np.inf, -1
    wrong = np.where(np.arange(len(s)) == y, -np.inf, s)
    r = int(np.argmax(wrong))
    return s[y] - s[r], r


def fit_multi(W, scale, ww, X, y, reg, variant, C, alpha, beta, mistake, sigma,
              score_out, event_out, kxx=None, drift=None, drift_state=None):
    """The multiclass loop of _core/_pa.pyx (`fit_multi_dense` / `fit_multi_csr`) on the
    (k, d) weights W, updated in place; ww = 2 ||W||_F^2.  Returns (failed, 1.0, ww).

    The step is the binary one on V = sqrt(2) W and the row (e_y - e_r) x / sqrt(2):
    W_{t+1} = cv W_t + (ca / 2) (e_y - e_r) x (docs/multiclass-pa.md).
    """
    return _linear_loop(_fit_multi, W, scale, ww, X, y, reg, variant, C, alpha, beta,
                        mistake, sigma, score_out, event_out, kxx, drift, drift_state)


def _fit_multi(W, scale, ww, X, y, reg, variant, C, alpha, beta, mistake, sigma, score_out,
               event_out, kxx, watched):
    W *= scale
    for i, x in enumerate(_rows(X)):
        s = W @ x
        score_out[i] = s
        if not np.all(np.isfinite(s)):
            return i, 1.0, ww
        yi = int(y[i])
        pre = watched.pre(float(int(np.argmax(s)) != yi))
        m, r = margin(s, yi)
        m *= pre
        vv = ww * pre * pre
        event = Event.PASSIVE
        if violated(mistake, m):
            e = _exponent(x)
            if reg == Regularization.L1:
                e = 0 if -500 < e < 500 else e
                a = np.zeros_like(W)
                with np.errstate(over="ignore"):
                    a[yi] = np.ldexp(x, -e)
                    a[r] = -a[yi]
                    new = projections.halfspace_l1_ball(W.ravel(), a.ravel(), np.ldexp(1.0, -e),
                                                        beta)
                if new is None:
                    event = Event.INFEASIBLE
                else:
                    W[:] = new.reshape(W.shape)
                    event, ww = Event.UPDATED, 2.0 * (new @ new)
            else:
                u = np.ldexp(x, -e)
                uu = u @ u
                uk = uu if kxx is None else np.ldexp(kxx[i], -2 * e)
                event, cv, cas = scaled_coefs(reg, variant, C, alpha, beta, m, uk, e, vv)
                if event == Event.UPDATED:
                    with np.errstate(over="ignore", invalid="ignore"):
                        ww_new = cv * cv * vv + 2.0 * cv * cas * np.ldexp(m, -e) + cas * cas * uu
                    if not (np.isfinite(cas) and np.isfinite(ww_new)):
                        return i, 1.0, ww
                    ww = max(ww_new, 0.0)
                    W *= cv * pre
                    W[yi] += 0.5 * cas * u
                    W[r] -= 0.5 * cas * u
            if event == Event.UPDATED and sigma > 0.0:
                flat = projections.truncate_smallest(W.ravel(), 0.5 * sigma)
                W[:] = flat.reshape(W.shape)
                ww = 2.0 * (flat @ flat)
        if event == Event.PASSIVE and pre != 1.0:
            W *= pre
            ww = vv
        watched.keep(event)
        event_out[i] = event
    return -1, 1.0, ww


def fit_multi_kernel(expansion, ww, X, y, reg, variant, C, alpha, beta, mistake,
                     score_out, event_out, drift=None, drift_state=None, gamma=None):
    """Twin of `fit_multi_kernel` of _core/_pa.pyx on a NumpyMultiExpansion; (failed, ww)
    (`gamma` as in `fit_kernel`)."""
    if gamma is not None and len(gamma) != len(X) + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    if len(X) and np.isnan(ww):         # a model saved when ww was not tracked
        ww = 2.0 * max(expansion.sq_norm(), 0.0)
    return _watching(_widths, drift, drift_state, _fit_multi_kernel, expansion, ww, X, y,
                     reg, variant, C, alpha, beta, mistake, score_out, event_out, gamma, 2.0)


def _fit_multi_kernel(expansion, ww, X, y, reg, variant, C, alpha, beta, mistake, score_out,
                      event_out, watched):
    p = expansion.kernel_params
    k = expansion.n_classes
    if len(X) and np.isnan(ww):         # a model saved when ww was not tracked
        ww = 2.0 * max(expansion.sq_norm(), 0.0)
    expansion.reserve(len(X))
    for i, x in enumerate(X):
        kxx = kernel_values(p, x[None], x)[0]
        s = expansion.scores(x)
        score_out[i] = s
        if not np.all(np.isfinite(s)):
            return i, ww
        yi = int(y[i])
        pre = watched.pre(float(int(np.argmax(s)) != yi))
        m, r = margin(s, yi)
        m *= pre
        vv = ww * pre * pre
        event = Event.PASSIVE
        if violated(mistake, m):
            event, cv, ca = coefs(reg, variant, C, alpha, beta, m, kxx, vv)
        if event == Event.PASSIVE and pre != 1.0:
            expansion.shrink(pre)
            ww = vv
        if event == Event.UPDATED:
            if not np.isfinite(x @ x):      # ||x||^2 overflows: no kernel value of it is finite
                return i, ww
            ww_new = cv * cv * vv + 2.0 * cv * ca * m + ca * ca * kxx
            expansion.shrink(cv * pre)
            before = expansion.n_support
            a = np.zeros(k)
            a[yi], a[r] = 0.5 * ca, -0.5 * ca
            if not expansion.add(x, a):
                return i, ww
            if expansion.n_support > before:
                ww = max(ww_new, 0.0) if np.isfinite(ww_new) else np.nan
            else:       # a budget eviction: the norm, exactly (the Cython loop: incrementally)
                ww = 2.0 * max(expansion.sq_norm(), 0.0)
        watched.keep(event)
        event_out[i] = event
    return -1, ww
