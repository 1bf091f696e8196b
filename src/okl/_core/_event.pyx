"""One event for the pointwise kernel learners (ALGORITHMS 1-3): O(m d), no allocation.

`predict_event` is f(x) for one row; `learn_event` predicts f_t(x_t), then
takes the step of the chunk loop in `_pointwise`,
    f_{t+1} = (1 - lam_t eta_t) f_t - eta_t w_t g_t K(x_t, .),   b_{t+1} = b_t - eta_b w_t g_t,
with the same g_t.  Every check (a non-finite row, a prediction or a
coefficient that would not be finite) comes before the first write, so a
step that fails leaves the expansion untouched and needs no undo.  The
schedule of one step is a few floats: the caller passes t**-eta_decay and
lam_t; with ``auto`` the step 1 / ((lam_t + M C_K^2) t**eta_decay) is formed
here, after C_K^2 took K(x_t, x_t) into its running maximum.
"""
from libc.math cimport isfinite

from okl._core._kernels cimport cdot, cself
from okl._core._losses cimport Loss, LossSpec, cdloss, cis_margin
from okl._core._expansion cimport KernelExpansion

cdef double SCALE_MIN = 1e-9
cdef double SCALE_MAX = 1e9


cpdef enum EventStatus:
    LEARNED = 0
    BAD_ROW = 1         # the row holds NaN or inf: nothing changed
    DIVERGED = 2        # f_t(x_t) or the new coefficient is not finite: nothing changed


cdef inline bint row_is_finite(const double[::1] x, double xx) noexcept nogil:
    cdef Py_ssize_t j
    if isfinite(xx):
        return True
    for j in range(x.shape[0]):         # ||x||^2 overflowed or x holds NaN/inf
        if not isfinite(x[j]):
            return False
    return True


def predict_event(KernelExpansion expansion, const double[::1] x):
    """f(x) for one row (no intercept); NaN when the row is not finite."""
    if x.shape[0] != expansion.n_features:
        raise ValueError(f"x has {x.shape[0]} values, the expansion {expansion.n_features}.")
    cdef double xx = cdot(&x[0], &x[0], x.shape[0])
    if not row_is_finite(x, xx):
        return float("nan")
    return expansion.cpredict(&x[0], xx)


def learn_event(KernelExpansion expansion,
                const double[::1] x,        # IN (d,)
                double y,                   # target, or the label in {-1, +1}
                double decay,               # t**-eta_decay (auto) or eta_t itself
                double lam,                 # lam_t
                bint auto,                  # eta_t = decay / (lam_t + M C_K^2)
                double lipschitz,           # M of the auto step
                double ck2,                 # C_K^2 before this step
                int loss, double tau, double eps, double delta, double p,
                double weight,              # w_t >= 0 scales the loss gradient
                double b,                   # the offset b_t (0 without an intercept)
                double eta_b_ratio):        # eta_b / eta_t (0 without an intercept)
    """One predict-then-update step.

    Returns (status, f_t(x_t) + b_t, eta_t, C_K^2 after the step, b_{t+1});
    with status != LEARNED the expansion is exactly as before.
    """
    cdef Py_ssize_t d = x.shape[0]
    if d != expansion.n_features:
        raise ValueError(f"x has {d} values, the expansion {expansion.n_features}.")
    cdef LossSpec spec = LossSpec(<Loss>loss, tau, eps, delta, p)
    cdef const double* xp = &x[0]
    cdef double xx = cdot(xp, xp, d)
    if not row_is_finite(x, xx):
        return BAD_ROW, float("nan"), 0.0, ck2, b
    cdef double kxx = cself(&expansion.kernel, xx)
    if kxx > ck2:
        ck2 = kxx
    cdef double eta = decay, denom
    if auto:
        denom = lam + lipschitz * ck2
        if denom > 0.0:
            eta = decay / denom
    expansion.reserve(1)                 # may move the buffers; the model is unchanged
    cdef double f = expansion.cpredict(xp, xx) + b
    if not isfinite(f):
        return DIVERGED, f, eta, ck2, b
    cdef double g
    if cis_margin(spec.kind):
        g = y * cdloss(&spec, y * f)
    else:
        g = cdloss(&spec, f - y)
    g *= weight
    if weight == 0.0:                    # w = 0 skips the step: the model is unchanged
        return LEARNED, f, eta, ck2, b
    cdef double factor = 1.0 - lam * eta
    cdef double a = -eta * g
    cdef double scale = expansion.scale * factor
    if factor <= 0.0 or scale < SCALE_MIN or scale > SCALE_MAX:
        scale = 1.0
    cdef double b_next = b - eta_b_ratio * eta * g
    if not (isfinite(a / scale) and isfinite(b_next)):
        return DIVERGED, f, eta, ck2, b
    expansion.cshrink(factor)
    if g != 0.0:
        expansion.cadd(xp, xx, a)
    return LEARNED, f, eta, ck2, b_next
