"""One nogil loop per chunk for coefficient-regularized online classification.

Tian-Sheng, eq. (0.4) (docs/algorithms.md, section 4): fixed centres c_1..c_m, k_t = (K(x_t, c_j))_j,
f_a(x) = a . k(x), and every step updates all m coefficients,
    a_{t+1} = (1 - eta_t lam) a_t - eta_t phi'_-(y_t f_{a_t}(x_t)) y_t k_t.
The model is a KernelExpansion whose centres never change once placed; its
lazy scale makes the shrink O(1), so a step is one pass over the centres for
k_t (BLAS + vectorised exp) and one O(m) axpy for the gradient.
"""
from libc.math cimport fmin, isfinite

from okl._core._kernels cimport cdot
from okl._core._losses cimport Loss, LossSpec, cdloss
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
