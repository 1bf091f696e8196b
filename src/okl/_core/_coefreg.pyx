"""One nogil loop per chunk for coefficient-regularized online classification.

Tian-Sheng, eq. (0.4) (docs/algorithms.md, section 4): fixed centres c_1..c_m, k_t = (K(x_t, c_j))_j,
f_a(x) = a . k(x), and every step updates all m coefficients,
    a_{t+1} = (1 - eta_t lam) a_t - eta_t phi'_-(y_t f_{a_t}(x_t)) y_t k_t.
The model is a KernelExpansion whose centres never change once placed; its
lazy scale makes the shrink O(1), so a step is one pass over the centres for
k_t (BLAS + vectorised exp) and one O(m) axpy for the gradient.
"""
import numpy as np

from libc.math cimport exp, fmin, isfinite

from okl._core._kernels cimport cdot
from okl._core._lazy cimport cshrink_lazy
from okl._core._losses cimport LOGISTIC, Loss, LossSpec, cdloss
from okl._core._expansion cimport KernelExpansion
from okl._core._signals cimport cinterrupted, craise_pending


def fit_chunk(KernelExpansion expansion,
              const double[:, ::1] X,      # IN (n, d)
              const double[::1] y,         # IN (n,) labels in {-1, +1}
              const double[::1] eta,       # IN (n,) scheduled eta_t
              double lam,                  # IN lam > 0
              double lipschitz,            # IN M; > 0 caps eta_t at 1 / (M ||k_t||^2 + lam)
              Py_ssize_t n_centers,        # IN m: stream points become centres until m exist
              LossSpec loss,               # IN a margin loss (okl.losses.loss_spec)
              double[::1] pred_out,        # OUT (n,) f_t(x_t), before the update
              double[::1] eta_out,         # OUT (n,) the eta_t used
              double[::1] kk_out):         # OUT (n,) ||k_t||^2
    """Run the chunk; return -1, or the index of the first step that diverged."""
    cdef LossSpec spec = loss
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False
    cdef const double* x
    cdef double xx, f, kk, step, g
    cdef double* kb
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    expansion.reserve(max(0, min(n, n_centers - expansion.n_support)))
    with nogil:
        for i in range(n):
            if cinterrupted(&work, expansion.n_support * d):
                interrupted = True
                break
            x = &X[i, 0]
            xx = cdot(x, x, d)
            if expansion.n_support < n_centers:
                expansion.cadd(x, xx, 0.0)      # x_t is a centre from now on, a_j = 0
            f = expansion.cpredict(x)           # leaves k_t in kbuf
            pred_out[i] = f
            if not isfinite(f):
                failed = i
                break
            kb = expansion.kbuf
            kk = cdot(kb, kb, expansion.n_support)
            kk_out[i] = kk
            step = eta[i]
            if lipschitz > 0.0:
                step = fmin(step, 1.0 / (lipschitz * kk + lam))
            eta_out[i] = step
            g = y[i] * cdloss(&spec, y[i] * f)
            expansion.cshrink_coef(1.0 - step * lam)     # <= 0: a = 0, centres kept
            if g == 0.0:
                continue
            if not isfinite(step * g / expansion.scale):
                failed = i
                break
            expansion.caxpy_coef(-step * g, kb)
    if interrupted:
        craise_pending()
    return failed


# -- k classes: a coefficient matrix A (m, k), scores s = A^T k_t -----------------------
#
# The gradient g of the loss in s: the softmax's p - e_y (loss "logistic"), or
# phi'_-(s_y - s_r) (e_y - e_r), r the best wrong class, for the other margin
# losses; the step, in the norm 2 ||A||_F^2 of docs/multiclass-pa.md, is
#     A_{t+1} = (1 - eta_t lam) A_t - (eta_t / 2) k_t g_t^T,
# so with k = 2 and A = [-a/2, a/2] it is the binary step on a = A_1 - A_0.

cdef void cgrad(const LossSpec* L, const double* s, Py_ssize_t k, Py_ssize_t y,
                double* g) noexcept nogil:
    """g = d loss / d s at the scores s (k of them) for the true class y."""
    cdef Py_ssize_t c, r = -1
    cdef double top, total
    if L.kind == LOGISTIC:                  # softmax: p - e_y
        top = s[0]
        for c in range(1, k):
            if s[c] > top:
                top = s[c]
        total = 0.0
        for c in range(k):
            g[c] = exp(s[c] - top)
            total += g[c]
        for c in range(k):
            g[c] /= total
        g[y] -= 1.0
        return
    for c in range(k):
        g[c] = 0.0
        if c != y and (r < 0 or s[c] > s[r]):
            r = c
    if r >= 0:
        top = cdloss(L, s[y] - s[r])
        g[y] = top
        g[r] = -top


def fit_multi_chunk(KernelExpansion expansion,  # IN/OUT the centres (its coef stays 0)
                    double[:, ::1] A,           # IN/OUT (>= m, k) raw coefficients
                    double scale,               # IN A_true = scale * A
                    const double[:, ::1] X,
                    const Py_ssize_t[::1] y,    # IN (n,) class indices in [0, k)
                    const double[::1] eta, double lam, double lipschitz,
                    Py_ssize_t n_centers, LossSpec loss,
                    double[:, ::1] score_out,   # OUT (n, k) scores before the update
                    double[::1] eta_out, double[::1] kk_out):
    """The multiclass chunk; return (failed, scale), failed = -1 or the first divergent step."""
    cdef LossSpec spec = loss
    cdef Py_ssize_t i, j, c, n = X.shape[0], d = X.shape[1], k = A.shape[1]
    cdef Py_ssize_t m, failed = -1, work = 0
    cdef bint interrupted = False, finite
    cdef double[::1] g
    cdef const double* x
    cdef double xx, kk, step, h, acc
    cdef double* kb
    cdef double* s
    cdef double* a = &A[0, 0] if A.shape[0] * k > 0 else NULL
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if A.shape[0] < n_centers or score_out.shape[0] != n or score_out.shape[1] != k:
        raise ValueError(f"A needs ({n_centers}, k) rows, score_out ({n}, {k}).")
    for i in range(n):
        if not 0 <= y[i] < k:
            raise ValueError(f"class index {y[i]} outside [0, {k}).")
    if n == 0:
        return -1, scale
    g = np.zeros(max(k, 1))
    expansion.reserve(max(0, min(n, n_centers - expansion.n_support)))
    with nogil:
        for i in range(n):
            if cinterrupted(&work, expansion.n_support * (d + k)):
                interrupted = True
                break
            x = &X[i, 0]
            xx = cdot(x, x, d)
            if expansion.n_support < n_centers:
                expansion.cadd(x, xx, 0.0)      # x_t is a centre from now on, A_j = 0
            expansion.cvalues(x)
            kb = expansion.kbuf
            m = expansion.n_support
            s = &score_out[i, 0]
            for c in range(k):
                s[c] = 0.0
            for j in range(m):
                for c in range(k):
                    s[c] += kb[j] * a[j * k + c]
            finite = True
            for c in range(k):
                s[c] *= scale
                if not isfinite(s[c]):
                    finite = False
            if not finite:
                failed = i
                break
            kk = cdot(kb, kb, m)
            kk_out[i] = kk
            step = eta[i]
            if lipschitz > 0.0:
                step = fmin(step, 1.0 / (lipschitz * kk + lam))
            eta_out[i] = step
            if k > 0:
                cgrad(&spec, s, k, y[i], &g[0])
                cshrink_lazy(a, A.shape[0] * k, &scale, 1.0 - step * lam)
            for c in range(k):
                if g[c] == 0.0:
                    continue
                h = -0.5 * step * g[c] / scale
                if not isfinite(h):
                    failed = i
                    break
                for j in range(m):
                    a[j * k + c] += h * kb[j]
            if failed >= 0:
                break
    if interrupted:
        craise_pending()
    return failed, scale
