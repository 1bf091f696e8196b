"""Coefficient-regularized online classification in NumPy: twin of _core/_coefreg.pyx.

Tian-Sheng, eq. (0.4): a_{t+1} = (1 - eta_t lam) a_t - eta_t phi'_-(y_t a_t . k_t) y_t k_t,
written on the true coefficients (no lazy scale).
"""
import numpy as np

from okl._numpy.codes import Loss
from okl._numpy.losses import derivative


def set_width(expansion, gamma, i):
    """gamma="scale"'s warm-up: the width of row i (or after the rows), when it moved."""
    if gamma is not None and gamma[i] != expansion.kernel_params["gamma"]:
        expansion.set_gamma(gamma[i])


def fit_chunk(expansion, X, y, eta, lam, lipschitz, n_centers, loss, pred_out, eta_out, kk_out,
              gamma=None):
    """Predict-then-update over the rows; -1, or the index of the first divergent step.
    `gamma` (n + 1): the width of each row and after them (gamma="scale"'s warm-up)."""
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
        kk_out[i] = k @ k
        step = eta[i]
        if lipschitz > 0:
            step = min(step, 1.0 / (lipschitz * kk_out[i] + lam))
        eta_out[i] = step
        g = y[i] * derivative(loss, y[i] * f)
        a *= max(1.0 - step * lam, 0.0)
        if g != 0.0:
            if not np.isfinite(step * g):
                return i
            a -= (step * g) * k
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
                    score_out, eta_out, kk_out, gamma=None):
    """Twin of _core/_coefreg.pyx's `fit_multi_chunk` on the true coefficients A (m, k),
    updated in place: A_{t+1} = (1 - eta_t lam) A_t - (eta_t / 2) k_t g_t^T.
    Returns (failed, 1.0)."""
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
        kk_out[i] = kv @ kv
        step = eta[i]
        if lipschitz > 0:
            step = min(step, 1.0 / (lipschitz * kk_out[i] + lam))
        eta_out[i] = step
        g = gradient(loss, s, int(y[i]))
        A *= max(1.0 - step * lam, 0.0)
        h = -0.5 * step * g
        if not np.all(np.isfinite(h)):
            return i, 1.0
        A[:m] += np.outer(kv, h)
    set_width(expansion, gamma, len(X))
    return -1, 1.0
