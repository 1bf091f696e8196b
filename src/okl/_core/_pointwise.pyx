"""One nogil loop per chunk for the pointwise kernel learners (docs/algorithms.md, sections 1-3).

Each step predicts f_t(x_t), then
    f_{t+1} = (1 - lam_t eta_t) f_t - eta_t g_t K(x_t, .)
with g_t = V'_-(f_t(x_t) - y_t) for a residual loss and
g_t = y_t phi'_-(y_t f_t(x_t)) for a margin loss (y_t in {-1, +1}).
The per-step eta_t and lam_t come in as arrays: schedules are computed once
per chunk, in NumPy, by okl.schedules (shared with the numpy engine).
"""
from libc.math cimport isfinite

from okl._core._kernels cimport cdot
from okl._core._losses cimport Loss, LossSpec, cdloss, cis_margin
from okl._core._expansion cimport KernelExpansion


def fit_chunk(KernelExpansion expansion,
              const double[:, ::1] X,      # IN (n, d)
              const double[::1] y,         # IN (n,)
              const double[::1] eta,       # IN (n,) eta_t
              const double[::1] lam,       # IN (n,) lam_t
              int loss, double tau, double eps, double delta, double p,
              double[::1] pred_out):       # OUT (n,) f_t(x_t), before the update
    """Run the chunk; return -1, or the index of the first step that diverged."""
    cdef LossSpec spec = LossSpec(<Loss>loss, tau, eps, delta, p)
    cdef bint margin = cis_margin(spec.kind)
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t failed = -1
    cdef const double* x
    cdef double xx, f, g
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    expansion.reserve(n)
    with nogil:
        for i in range(n):
            x = &X[i, 0]
            xx = cdot(x, x, d)
            f = expansion.cpredict(x)
            pred_out[i] = f
            if not isfinite(f):
                failed = i
                break
            if margin:
                g = y[i] * cdloss(&spec, y[i] * f)
            else:
                g = cdloss(&spec, f - y[i])
            expansion.cshrink(1.0 - lam[i] * eta[i])
            if g != 0.0 and not expansion.cadd(x, xx, -eta[i] * g):
                failed = i
                break
    return failed
