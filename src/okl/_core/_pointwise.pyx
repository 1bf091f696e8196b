"""One nogil loop per chunk for the pointwise kernel learners (docs/algorithms.md, sections 1-3).

Each step predicts f_t(x_t) = b_t + (kernel part), then
    f_{t+1} = (1 - lam_t eta_t) f_t - eta_t w_t g_t K(x_t, .),   b_{t+1} = b_t - eta_t w_t g_t
with g_t = V'_-(f_t(x_t) - y_t) for a residual loss and
g_t = y_t phi'_-(y_t f_t(x_t)) for a margin loss (y_t in {-1, +1}).  The
offset b (docs/algorithms.md, section 7.1) is learned only when an `offset`
buffer is given; the weights w_t (section 7.2) default to 1, and a step of
weight 0 is skipped (predicted, but the model does not change).
The per-step eta_t and lam_t come in as arrays: schedules are computed once
per chunk, in NumPy, by okl.schedules (shared with the numpy engine).
"""
from libc.math cimport isfinite

from okl._core._kernels cimport cdot
from okl._core._losses cimport Loss, LossSpec, cgradient
from okl._core._expansion cimport KernelExpansion
from okl._core._signals cimport cinterrupted, craise_pending


def fit_chunk(KernelExpansion expansion,
              const double[:, ::1] X,      # IN (n, d)
              const double[::1] y,         # IN (n,)
              const double[::1] eta,       # IN (n,) eta_t
              const double[::1] lam,       # IN (n,) lam_t
              int loss, double tau, double eps, double delta, double p,
              double[::1] pred_out,        # OUT (n,) f_t(x_t), before the update
              const double[::1] weight=None,   # IN (n,) w_t >= 0, or None for 1
              double[::1] offset=None):    # IN/OUT (1,) b, or None for no offset
    """Run the chunk; return -1, or the index of the first step that diverged."""
    cdef LossSpec spec = LossSpec(<Loss>loss, tau, eps, delta, p)
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False
    cdef const double* x
    cdef double xx, f, g, b = 0.0, b_next
    cdef bint weighted = weight is not None, has_offset = offset is not None
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if weighted and weight.shape[0] != n:
        raise ValueError(f"weight has {weight.shape[0]} values for {n} rows.")
    if has_offset:
        b = offset[0]
    expansion.reserve(n)
    with nogil:
        for i in range(n):
            if cinterrupted(&work, expansion.n_support * d):
                interrupted = True
                break
            x = &X[i, 0]
            f = expansion.cpredict(x) + b
            pred_out[i] = f
            if not isfinite(f):
                failed = i
                break
            if weighted and weight[i] == 0.0:
                continue
            g = cgradient(&spec, y[i], f)
            if weighted:
                g *= weight[i]
            b_next = b - eta[i] * g
            if has_offset and not isfinite(b_next):
                failed = i
                break
            expansion.cshrink(1.0 - lam[i] * eta[i])
            xx = cdot(x, x, d)
            if g != 0.0 and not expansion.cadd(x, xx, -eta[i] * g):
                failed = i
                break
            if has_offset:
                b = b_next
    if has_offset:
        offset[0] = b
    if interrupted:
        craise_pending()
    return failed
