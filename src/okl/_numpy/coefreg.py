"""Coefficient-regularized online classification in NumPy: twin of _core/_coefreg.pyx.

Tian-Sheng, eq. (0.4): a_{t+1} = (1 - eta_t lam) a_t - eta_t phi'_-(y_t a_t . k_t) y_t k_t,
written on the true coefficients (no lazy scale).
"""
import numpy as np

from okl._numpy.codes import Loss
from okl._numpy.drift import FIELDS, watch
from okl._numpy.losses import derivative


def set_width(expansion, gamma, i):
    """gamma="scale"'s warm-up: the width of row i (or after the rows), when it moved."""
    if gamma is not None and gamma[i] != expansion.kernel_params["gamma"]:
        expansion.set_gamma(gamma[i])


def _state(drift_state):
    return dict(zip(FIELDS, map(float, drift_state)))


def fit_chunk(expansion, X, y, eta, lam, lipschitz, n_centers, loss, pred_out, eta_out, kk_out,
              gamma=None, drift=None, drift_state=None):
    """Predict-then-update over the rows; -1, or the index of the first divergent step.
    `gamma` (n + 1): the width of each row and after them (gamma="scale"'s warm-up).

    With `drift` (the `Drift` fields) the step watches its mistakes and the coefficients take
    its factor first; `drift_state` (the 8 fields, an array) is updated in place."""
    ds = None if drift is None else _state(drift_state)
    failed = _fit(expansion, X, y, eta, lam, lipschitz, n_centers, loss, pred_out, eta_out,
                  kk_out, gamma, drift, ds)
    if drift is not None:
        drift_state[:] = [ds[name] for name in FIELDS]
    return failed


def _fit(expansion, X, y, eta, lam, lipschitz, n_centers, loss, pred_out, eta_out, kk_out,
         gamma, drift, ds):
    expansion.reserve(max(0, min(len(X), n_centers - expansion.n_support)))
    for i, x in enumerate(X):
        set_width(expansion, gamma, i)
        if expansion.n_support < n_centers:
            expansion.add(x, 0.0)               # x_t is a centre from now on, a_j = 0
        k = expansion.values(x)
        a = expansion._coef[:expansion.n_support]   # a view: updated in place
        f = float(a @ k)
        pred_out[i] = f
        if not np.isfinite(f):
            return i
        kept, after = 1.0, None
        if drift is not None:
            kept, after = watch(drift, ds, 1.0 if y[i] * f <= 0.0 else 0.0)
        kk_out[i] = k @ k
        step = eta[i]
        if lipschitz > 0:
            step = min(step, 1.0 / (lipschitz * kk_out[i] + lam))
        eta_out[i] = step
        g = y[i] * derivative(loss, y[i] * f * kept)
        a *= max(1.0 - step * lam, 0.0) * kept
        if g != 0.0:
            if not np.isfinite(step * g):
                return i
            a -= (step * g) * k
        if after is not None:
            ds.update(after)
    set_width(expansion, gamma, len(X))
    return -1


def gradient(loss, s, y):
    """d loss / d s: the softmax's p - e_y ("logistic"), else phi'_-(s_y - s_r) (e_y - e_r)."""
    k = len(s)
    if int(loss["kind"]) == Loss.LOGISTIC:
        p = np.exp(s - s.max())
        g = p / p.sum()
        g[y] -= 1.0
        return g
    g = np.zeros(k)
    if k > 1:
        r = int(np.argmax(np.where(np.arange(k) == y, -np.inf, s)))
        g[y] = derivative(loss, s[y] - s[r])
        g[r] = -g[y]
    return g


def fit_multi_chunk(expansion, A, scale, X, y, eta, lam, lipschitz, n_centers, loss,
                    score_out, eta_out, kk_out, gamma=None, drift=None, drift_state=None):
    """Twin of _core/_coefreg.pyx's `fit_multi_chunk` on the true coefficients A (m, k),
    updated in place: A_{t+1} = (1 - eta_t lam) A_t - (eta_t / 2) k_t g_t^T (`drift` and
    `drift_state` as in `fit_chunk`).  Returns (failed, 1.0)."""
    ds = None if drift is None else _state(drift_state)
    out = _fit_multi(expansion, A, scale, X, y, eta, lam, lipschitz, n_centers, loss,
                     score_out, eta_out, kk_out, gamma, drift, ds)
    if drift is not None:
        drift_state[:] = [ds[name] for name in FIELDS]
    return out


def _fit_multi(expansion, A, scale, X, y, eta, lam, lipschitz, n_centers, loss, score_out,
               eta_out, kk_out, gamma, drift, ds):
    A *= scale
    expansion.reserve(max(0, min(len(X), n_centers - expansion.n_support)))
    for i, x in enumerate(X):
        set_width(expansion, gamma, i)
        if expansion.n_support < n_centers:
            expansion.add(x, 0.0)               # x_t is a centre from now on, A_j = 0
        kv = expansion.values(x)
        m = len(kv)
        s = kv @ A[:m]
        score_out[i] = s
        if not np.all(np.isfinite(s)):
            return i, 1.0
        kept, after = 1.0, None
        if drift is not None:
            kept, after = watch(drift, ds, float(int(np.argmax(s)) != int(y[i])))
        kk_out[i] = kv @ kv
        step = eta[i]
        if lipschitz > 0:
            step = min(step, 1.0 / (lipschitz * kk_out[i] + lam))
        eta_out[i] = step
        g = gradient(loss, s * kept if kept != 1.0 else s, int(y[i]))
        A *= max(1.0 - step * lam, 0.0) * kept
        h = -0.5 * step * g
        if not np.all(np.isfinite(h)):
            return i, 1.0
        A[:m] += np.outer(kv, h)
        if after is not None:
            ds.update(after)
    set_width(expansion, gamma, len(X))
    return -1, 1.0
