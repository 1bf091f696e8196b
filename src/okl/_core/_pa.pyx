"""The nogil loops of the regularized passive-aggressive learners (docs/algorithms.md, section 5).

Each step predicts f_t(x_t), m = y_t f_t(x_t).  When the update condition
holds (hinge loss > 0, or a mistake), the new model is

    w_{t+1} = cv w_t + ca y_t x_t          (f_{t+1} = cv f_t + ca y_t K(x_t, .))

with (cv, ca) from `ccoefs` (PA, objective, L2), or, for L1, the projection of
w_t onto {y x.w >= 1, ||w||_1 <= beta}; then optional truncation.  Linear
weights are stored as w = scale * raw, so the shrinks 1/(1+alpha) and 1/Z
cost O(1) and a CSR row costs O(nnz) (L1 and truncation touch all of w).
||w||^2 (||f||_K^2 for kernels) is carried along exactly, in O(1) per update.

On Nystroem features z(x), the projection of K(x, .) onto the landmarks'
span, the linear loop takes the rows' K(x, x) (`kxx`): the step coefficients
are the exact kernel step's, and the update adds its projection ca y z(x)
(docs/budget.md, section 2), so a row far from every landmark (||z(x)|| ~ 0)
gets no huge step l / ||z(x)||^2.

Each model has one step, an inline function from f_t(x_t) (`clinear_step`,
`cmulti_linear_step`, `ckernel_step`, `cmulti_kernel_step`) that checks
everything before its first write; the chunk loops and the one-event
`PAEvents.learn` both call it (docs/multiclass-pa.md, section 7).  With a
`Drift` record (_drift.pxd) the loops watch the mistakes, and the step starts
from `pre` times the model (forgetting, and `keep` at a change): the margin and
||w||^2 it reads are scaled, the shrink cv becomes cv pre, and a passive step
still takes pre (an infeasible one changes nothing).  Not with the L1 rule,
whose projection works on unscaled weights.
"""
import numpy as np

from libc.math cimport INFINITY, NAN, fabs, fmax, fmin, frexp, isfinite, ldexp
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp, memcpy, memset
from scipy.linalg.cython_blas cimport ddot, daxpy

from okl._core._kernels cimport cdot, cself
from okl._core._expansion cimport MERGE, KernelExpansion
from okl._core._multiexpansion cimport MultiExpansion
from okl._core._lazy cimport cshrink_lazy
from okl._core._linear cimport FeatureRow
from okl._core._pointwise cimport Events, cready, row_is_finite
from okl._core._warmup cimport C_WARMUP, Warmup
from okl._core._pointwise import huge_event
from okl._core._drift cimport (
    DRIFT_FIELDS, Drift, DriftState, cdrift_tuple, cload, cmistake, cread_drift, cstore,
    cwatch,
)
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals
from okl._core._projections cimport AbsIndex, chalfspace_l1, chalfspace_l2, ctruncate_smallest


cpdef enum Event:
    PASSIVE = 0       # the update condition does not hold: w_{t+1} = w_t
    UPDATED = 1
    INFEASIBLE = 2    # the constraint set is empty: the update is skipped


cpdef enum Regularization:
    NONE = 0          # Crammer et al. 2006: PA, PA-I, PA-II
    OBJECTIVE = 1     # Shen-Dietterich eq. 3.1 (alpha)
    L2 = 2            # eq. 3.9 (beta)
    L1 = 3            # eq. 3.10 (beta), linear only


cpdef enum Variant:
    PA = 0
    PA_I = 1
    PA_II = 2


cdef struct PASpec:
    Regularization reg
    Variant variant
    double C
    double alpha
    double beta
    bint mistake      # update when y f <= 0, instead of y f < 1


cdef struct Row:      # one input row: dense (idx == NULL, nnz = d) or CSR
    const double* val
    const int* idx
    Py_ssize_t nnz


cdef enum:
    INTERRUPTED = -2  # clinear's status when a signal handler raised
    DIVERGED = 3      # a step's status: the model would not be finite (nothing was written)


cdef inline double cscale_after(double scale, double factor) noexcept nogil:
    """The scale `cshrink_lazy` (and the expansions' `cshrink`) leave after f <- factor f:
    a step checks its new coefficient against it before its first write."""
    cdef double s
    if factor == 1.0:
        return scale
    if factor <= 0.0:
        return 1.0
    s = scale * factor
    return 1.0 if (s < 1e-9 or s > 1e9) else s


# -- the scalar step, shared by the linear and kernel loops ----------------------------

cdef inline bint cviolated(const PASpec* s, double m) noexcept nogil:
    return m <= 0.0 if s.mistake else m < 1.0


cdef inline Event ccoefs(const PASpec* s, double m, double xx, double vv,
                         double* cv, double* ca) noexcept nogil:
    """(cv, ca) of a violated step from m = y w.x, xx = ||x||^2 (K(x, x)), vv = ||w||^2."""
    cdef double l = 1.0 - m
    if s.reg == L2:     # Lemma 3.2: the projection onto {y x.w >= 1, ||w|| <= beta}
        return UPDATED if chalfspace_l2(vv, m, xx, 1.0, s.beta, cv, ca) else INFEASIBLE
    if xx == 0.0:       # x = 0 (K_x = 0): no step moves y f(x)
        return INFEASIBLE if (s.reg == OBJECTIVE or s.variant == PA) else PASSIVE
    cv[0] = 1.0
    if s.reg == OBJECTIVE:
        # Lemma 3.1, w = (w_t + tau y x) / (1 + alpha), tau = (l + alpha) / ||x||^2:
        # exact, since the margin constraint is active whenever m < 1
        cv[0] = 1.0 / (1.0 + s.alpha)
        ca[0] = (l + s.alpha) / xx * cv[0]
    elif s.variant == PA:
        ca[0] = l / xx
    elif s.variant == PA_I:
        ca[0] = fmin(s.C, l / xx)
    elif s.variant == PA_II:
        ca[0] = l / (xx + 0.5 / s.C)
    else:               # an unknown code: a NaN step, which the loop reports
        ca[0] = NAN
    return UPDATED


# -- linear weights w = scale * raw ---------------------------------------------------

cdef inline double crow_dot(const Row* r, const double* w) noexcept nogil:
    cdef int n = <int>r.nnz, inc = 1
    cdef Py_ssize_t k
    cdef double acc = 0.0
    if r.idx == NULL:
        return ddot(&n, <double*>r.val, &inc, <double*>w, &inc)
    for k in range(r.nnz):
        acc += r.val[k] * w[r.idx[k]]
    return acc


cdef inline double crow_sqnorm(const Row* r) noexcept nogil:
    cdef int n = <int>r.nnz, inc = 1
    return ddot(&n, <double*>r.val, &inc, <double*>r.val, &inc)


cdef inline void crow_axpy(const Row* r, double c, double* w) noexcept nogil:
    """w += c x."""
    cdef int n = <int>r.nnz, inc = 1
    cdef Py_ssize_t k
    if r.idx == NULL:
        daxpy(&n, &c, <double*>r.val, &inc, w, &inc)
        return
    for k in range(r.nnz):
        w[r.idx[k]] += c * r.val[k]


cdef inline int crow_exponent(const Row* r) noexcept nogil:
    """e with max_j |x_j| in [2^(e-1), 2^e) (0 for x = 0)."""
    cdef Py_ssize_t k
    cdef double top = 0.0
    cdef int e
    for k in range(r.nnz):
        top = fmax(top, fabs(r.val[k]))
    if top == 0.0 or not isfinite(top):
        return 0
    frexp(top, &e)
    return e


cdef inline double crow_sqnorm_scaled(const Row* r, int e) noexcept nogil:
    """||x / 2^e||^2 (for rows whose squares would overflow or underflow)."""
    cdef Py_ssize_t k
    cdef double u, acc = 0.0
    for k in range(r.nnz):
        u = ldexp(r.val[k], -e)
        acc += u * u
    return acc


cdef inline void crow_axpy_scaled(const Row* r, double c, int e, double* w) noexcept nogil:
    """w += c x / 2^e, without forming c / 2^e (which may under- or overflow)."""
    cdef Py_ssize_t k
    for k in range(r.nnz):
        w[k if r.idx == NULL else r.idx[k]] += c * ldexp(r.val[k], -e)


cdef inline Event cscaled_coefs(const PASpec* s, double m, double uu, int e, double vv,
                                double* cv, double* cas) noexcept nogil:
    """`ccoefs` for a row x = 2^e u given uu = ||u||^2: (cv, ca 2^e), so that
    w_{t+1} = cv w_t + cas y u.  No term of ||x||^2 = 4^e uu is formed."""
    cdef double l = 1.0 - m
    if s.reg == L2:     # {y u.w >= 2^-e}: the same set, the same projection
        return UPDATED if chalfspace_l2(vv, ldexp(m, -e), uu, ldexp(1.0, -e), s.beta,
                                        cv, cas) else INFEASIBLE
    if uu == 0.0:       # x = 0: no step moves y f(x)
        return INFEASIBLE if (s.reg == OBJECTIVE or s.variant == PA) else PASSIVE
    cv[0] = 1.0
    if s.reg == OBJECTIVE:
        cv[0] = 1.0 / (1.0 + s.alpha)
        cas[0] = ldexp((l + s.alpha) / uu, -e) * cv[0]
    elif s.variant == PA:
        cas[0] = ldexp(l / uu, -e)
    elif s.variant == PA_I:
        cas[0] = fmin(ldexp(s.C, e), ldexp(l / uu, -e))
    elif s.variant != PA_II:    # an unknown code: a NaN step, which the loop reports
        cas[0] = NAN
    elif e >= 0:        # l 2^e / (4^e uu + 1/(2C)), without 4^e
        cas[0] = ldexp(l, -e) / (uu + ldexp(0.5 / s.C, -2 * e))
    else:
        cas[0] = ldexp(l, e) / (ldexp(uu, 2 * e) + 0.5 / s.C)
    return UPDATED


cdef Event cl1_step(double* w, double* ww, const Row* r, double y, double beta, Py_ssize_t d,
                    double* a_work, double* work) noexcept nogil:
    """w <- its projection onto {y x.w >= 1, ||w||_1 <= beta} (w unscaled).

    a_work holds a = y x densely; it is zero outside the row between calls.
    """
    cdef Py_ssize_t k
    cdef bint ok
    cdef int e = crow_exponent(r)
    if -500 < e < 500:  # else {a.w >= 1} as {(a / 2^e).w >= 2^-e}: no square of a overflows
        e = 0
    for k in range(r.nnz):
        a_work[k if r.idx == NULL else r.idx[k]] = ldexp(y * r.val[k], -e)
    ok = chalfspace_l1(w, a_work, d, ldexp(1.0, -e), beta, w, work)
    if r.idx != NULL:
        for k in range(r.nnz):
            a_work[r.idx[k]] = 0.0
    if not ok:
        return INFEASIBLE
    ww[0] = cdot(w, w, d)
    return UPDATED


cdef inline int clinear_step(double* w, double* scale, double* ww, Py_ssize_t d,
                             const Row* r, double y, double f, const PASpec* s, double sigma,
                             const double* kxx, double* a_work, double* work,
                             AbsIndex* pairs, double pre) noexcept nogil:
    """One step from f = f_t(x_t) (finite) on the weights w = scale * raw: an Event, or
    DIVERGED with nothing written.  The one step of the chunk loop `clinear` and of
    `PAEvents.learn`.  `kxx` (or NULL): K(x, x), replacing ||x||^2 in the coefficients;
    the step starts from pre w (1 with L1)."""
    cdef double m = y * f * pre, vv = ww[0] * pre * pre, uu, cv, ca, c, ww_new
    cdef int e
    cdef int ev = PASSIVE
    if not cviolated(s, m):
        if pre != 1.0:
            cshrink_lazy(w, d, scale, pre)
            ww[0] = vv
        return PASSIVE
    if s.reg == L1:
        ev = cl1_step(w, ww, r, y, s.beta, d, a_work, work)
    else:
        # x = 2^e u with max |u_j| in [1/2, 1): ||x||^2 = 4^e ||u||^2 never
        # overflows nor underflows, and w + ca y x = w + (ca 2^e) y u
        e = crow_exponent(r)
        uu = ldexp(crow_sqnorm(r), -2 * e) if -500 < e < 500 else crow_sqnorm_scaled(r, e)
        ev = cscaled_coefs(s, m, uu if kxx == NULL else ldexp(kxx[0], -2 * e), e,
                           vv, &cv, &ca)
        if ev == PASSIVE and pre != 1.0:
            cshrink_lazy(w, d, scale, pre)
            ww[0] = vv
        if ev == UPDATED:
            ww_new = cv * cv * vv + 2.0 * cv * ca * ldexp(m, -e) + ca * ca * uu
            c = ca * y / cscale_after(scale[0], cv * pre)
            if not (isfinite(ww_new) and isfinite(c)):
                return DIVERGED
            if cv * pre != 1.0:
                cshrink_lazy(w, d, scale, cv * pre)
            if -500 < e < 500:
                crow_axpy(r, ldexp(c, -e), w)
            else:
                crow_axpy_scaled(r, c, e, w)
            ww[0] = fmax(ww_new, 0.0)
    if ev == UPDATED and sigma > 0.0:
        ww[0] = scale[0] * scale[0] * ctruncate_smallest(
            w, d, sigma / (scale[0] * scale[0]), pairs)
    return ev


cdef Py_ssize_t clinear(double* w, double* scale, double* ww, Py_ssize_t d, bint sparse,
                        const double* data, const int* indices, const Py_ssize_t* indptr,
                        const double* y, Py_ssize_t n, const PASpec* s, double sigma,
                        const double* kxx, double* a_work, double* work, AbsIndex* pairs,
                        double* score_out, signed char* event_out, const Drift* dr,
                        DriftState* ds) noexcept nogil:
    """The loop over n rows, dense (n, d) or CSR; -1, the first divergent step, or
    INTERRUPTED (a signal handler raised).  `kxx` (or NULL): the K(x, x) that
    replace ||x||^2 in the step coefficients, not in ||w||^2; dr (or NULL), ds: the
    drift settings and state."""
    cdef Py_ssize_t i, done = 0
    cdef Row r
    cdef double f, pre = 1.0
    cdef DriftState nxt
    cdef int ev
    for i in range(n):
        if sparse:
            r = Row(data + indptr[i], indices + indptr[i], indptr[i + 1] - indptr[i])
        else:
            r = Row(data + i * d, NULL, d)
        if cinterrupted(&done, r.nnz if (s.reg != L1 and sigma == 0.0) else 8 * d):
            return INTERRUPTED
        f = scale[0] * crow_dot(&r, w)
        score_out[i] = f
        if not isfinite(f):
            return i
        if dr != NULL:
            pre = cwatch(dr, ds, 1.0 if y[i] * f <= 0.0 else 0.0, &nxt)
        ev = clinear_step(w, scale, ww, d, &r, y[i], f, s, sigma,
                          NULL if kxx == NULL else kxx + i, a_work, work, pairs, pre)
        if ev == DIVERGED:
            return i
        if dr != NULL and ev != INFEASIBLE:
            ds[0] = nxt
        event_out[i] = ev
    return -1


cdef const Drift* cwatching(object drift, object drift_state, Drift* dr,
                            DriftState* ds) except? NULL:
    """dr and ds from a loop's `drift` (the `Drift` fields, or None) and `drift_state` (an
    array of its 8 fields, IN/OUT); NULL for no drift."""
    cdef double[::1] a
    if drift is None:
        return NULL
    dr[0] = drift
    a = drift_state
    if a.shape[0] != DRIFT_FIELDS:
        raise ValueError("drift_state must hold the 8 fields of the drift state.")
    cload(&a[0], ds)
    return dr


cdef int cdrift_out(const Drift* watch, const DriftState* ds, object drift_state) except -1:
    """Store the drift state back into the loop's array."""
    cdef double[::1] a
    if watch != NULL:
        a = drift_state
        cstore(ds, &a[0])
    return 0


cdef _fit_linear(double[::1] w, double scale, double ww, bint sparse, const double* data,
                 const int* indices, const Py_ssize_t* indptr, const double[::1] y,
                 PASpec s, double sigma, const double* kxx, double[::1] score_out,
                 signed char[::1] event_out, drift=None, drift_state=None):
    cdef Py_ssize_t d = w.shape[0], failed
    cdef double* a_work = NULL
    cdef double* work = NULL
    cdef AbsIndex* pairs = NULL
    cdef Drift dr
    cdef DriftState ds
    cdef const Drift* watch = cwatching(drift, drift_state, &dr, &ds)
    if s.reg == L1 and scale != 1.0:
        raise ValueError("the L1 loop needs unscaled weights (scale = 1).")
    if s.reg == L1 and watch != NULL:
        raise ValueError("the L1 loop takes no drift factor (its projection needs w itself).")
    try:
        if s.reg == L1:
            a_work = <double*>calloc(d, sizeof(double))
            work = <double*>calloc(d, sizeof(double))
            if a_work == NULL or work == NULL:
                raise MemoryError()
        if sigma > 0.0:
            pairs = <AbsIndex*>calloc(d, sizeof(AbsIndex))
            if pairs == NULL:
                raise MemoryError()
        with nogil:
            failed = clinear(&w[0], &scale, &ww, d, sparse, data, indices, indptr, &y[0],
                             y.shape[0], &s, sigma, kxx, a_work, work, pairs,
                             &score_out[0], &event_out[0], watch, &ds)
    finally:
        free(a_work)
        free(work)
        free(pairs)
    cdrift_out(watch, &ds, drift_state)
    if failed == INTERRUPTED:
        craise_pending()
    return failed, scale, ww


def fit_dense(double[::1] w,                  # IN/OUT (d,) raw weights: w_true = scale * w
              double scale, double ww,        # IN scale, ||w_true||^2
              const double[:, ::1] X,         # IN (n, d)
              const double[::1] y,            # IN (n,) in {-1, +1}
              int reg, int variant, double C, double alpha, double beta, bint mistake,
              double sigma,                   # truncation threshold, 0 for none
              double[::1] score_out,          # OUT (n,) f_t(x_t), before the update
              signed char[::1] event_out,     # OUT (n,) an Event per step
              const double[::1] kxx=None,     # IN (n,) K(x, x) of feature rows, or None
              drift=None,                     # IN the `Drift` fields, or None: none
              drift_state=None):              # IN/OUT (8,) the drift state (with drift)
    """Run the chunk; return (failed, scale, ww), failed = -1 or the first divergent step."""
    if X.shape[1] != w.shape[0]:
        raise ValueError(f"X has {X.shape[1]} columns, w {w.shape[0]}.")
    if kxx is not None and kxx.shape[0] != X.shape[0]:
        raise ValueError(f"kxx has {kxx.shape[0]} values for {X.shape[0]} rows.")
    return _fit_linear(w, scale, ww, False, &X[0, 0], NULL, NULL, y,
                       PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake),
                       sigma, NULL if kxx is None else &kxx[0], score_out, event_out, drift,
                       drift_state)


def fit_csr(double[::1] w, double scale, double ww,
            const double[::1] data,           # IN CSR rows, canonical (sorted, no duplicates)
            const int[::1] indices,           # IN column of each entry (int32, as scipy's)
            const Py_ssize_t[::1] indptr,     # IN (n + 1,)
            const double[::1] y,
            int reg, int variant, double C, double alpha, double beta, bint mistake,
            double sigma, double[::1] score_out, signed char[::1] event_out, drift=None,
            drift_state=None):
    """`fit_dense` for CSR rows: each row costs O(its nonzeros), plus O(d) for L1/truncation."""
    cdef double no_data = 0.0           # pointed to when every row is empty
    cdef int no_index = 0
    return _fit_linear(w, scale, ww, True, &data[0] if data.shape[0] else &no_data,
                       &indices[0] if indices.shape[0] else &no_index, &indptr[0], y,
                       PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake),
                       sigma, NULL, score_out, event_out, drift, drift_state)


# -- kernel expansions ------------------------------------------------------------

cdef inline int ckernel_step(KernelExpansion e, const double* x, double xx, double kxx,
                             double f, double y, const PASpec* s, double* ww,
                             double pre) noexcept nogil:
    """One step from f = f_t(x_t) (finite) on f = sum_i a_i K(x_i, .): an Event, or
    DIVERGED with nothing written.  The one step of `fit_kernel` and `PAEvents.learn`.

    ||f||_K^2 is carried exactly: the step's own change, plus what the budget
    took, which the expansion reports whatever its policy (`norm_change` of
    `KernelExpansion.cadd`, docs/budget.md; `e.track_norm` must be set).  The step starts from pre f (the module's note).
    """
    cdef double m = y * f * pre, vv = ww[0] * pre * pre, cv, ca, c, ww_new
    cdef int ev = PASSIVE
    if cviolated(s, m):
        ev = ccoefs(s, m, kxx, vv, &cv, &ca)
    if ev == PASSIVE and pre != 1.0:
        e.cshrink(pre)
        ww[0] = vv
    if ev != UPDATED:
        return ev
    c = ca * y
    # what `cadd` would refuse; a centre whose ||x||^2 overflows has no finite kernel value
    if not (isfinite(c / cscale_after(e.scale, cv * pre)) and isfinite(xx)):
        return DIVERGED
    ww_new = cv * cv * vv + 2.0 * cv * ca * m + ca * ca * kxx
    e.cshrink(cv * pre)
    e.cadd(x, xx, c)
    ww[0] = fmax(ww_new + e.norm_change, 0.0)
    return UPDATED


def fit_kernel(KernelExpansion expansion,
               double ww,                     # IN ||f||_K^2
               const double[:, ::1] X, const double[::1] y,
               int reg, int variant, double C, double alpha, double beta, bint mistake,
               double[::1] score_out, signed char[::1] event_out, drift=None,
               drift_state=None,
               const double[::1] gamma=None):   # IN (n + 1,) the width of each row, and after
    """The loop for f = sum_i a_i K(x_i, .); return (failed, ww) (see `ckernel_step`;
    drift, drift_state as in `fit_dense`).

    During gamma="scale"'s warm-up (docs/defaults.md, section 2) `gamma` gives the kernel's
    width before each row and after the last; at a new width ww is ||f||_K^2 recomputed
    where the rule reads it (regularization "l2", `cwidth`); no other rule reads it, and
    the learner recomputes it once the warm-up ends."""
    cdef PASpec s = PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake)
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1], failed = -1, work = 0
    cdef bint interrupted = False, widths = gamma is not None
    cdef const double* x
    cdef double xx, f, pre = 1.0
    cdef int ev
    cdef Drift dr
    cdef DriftState ds, nxt
    cdef const Drift* watch = cwatching(drift, drift_state, &dr, &ds)
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if reg == L1:
        raise ValueError("the L1 constraint needs the linear kernel.")
    if widths and gamma.shape[0] != n + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    expansion.reserve(n)
    expansion.track_norm = True         # the budget reports its change of ||f||_K^2
    with nogil:
        for i in range(n):
            if cinterrupted(&work, expansion.n_support * d):
                interrupted = True
                break
            if widths:
                cwidth(expansion, gamma[i], reg == L2, &ww)
            x = &X[i, 0]
            xx = cdot(x, x, d)
            f = expansion.cpredict(x)
            score_out[i] = f
            if not isfinite(f):
                failed = i
                break
            if watch != NULL:
                pre = cwatch(watch, &ds, 1.0 if y[i] * f <= 0.0 else 0.0, &nxt)
            ev = ckernel_step(expansion, x, xx, cself(&expansion.kernel, xx), f, y[i], &s, &ww,
                              pre)
            if ev == DIVERGED:
                failed = i
                break
            if watch != NULL and ev != INFEASIBLE:
                ds = nxt
            event_out[i] = ev
        if widths and failed < 0 and not interrupted:
            cwidth(expansion, gamma[n], reg == L2, &ww)
    cdrift_out(watch, &ds, drift_state)
    if interrupted:
        craise_pending()
    return failed, ww


cdef double csq_norm(KernelExpansion e) noexcept nogil:
    """||f||_K^2 = sum_j a_j f(c_j) from the centres, O(n^2 d) (the expansion's `sq_norm`)."""
    cdef Py_ssize_t j, d = e.n_features
    cdef double total = 0.0
    for j in range(e.n_support):
        total += e.coef[j] * e.cpredict(e.centers + j * d)
    e.kbuf_x = NULL                     # kbuf holds a centre's row, not a step's
    return fmax(e.scale * total, 0.0)


cdef double cmulti_sq_norm(MultiExpansion e, double* s) noexcept nogil:
    """2 sum_c ||f_c||_K^2 from the centres, O(n^2 (d + k)); s: k doubles of work."""
    cdef Py_ssize_t j, d = e.n_features
    cdef double total = 0.0
    for j in range(e.n_support):
        e.cscores(e.centers + j * d, s)
        total += e.crow_dot(j, s)
    e.kbuf_x = NULL
    return 2.0 * fmax(e.scale * total, 0.0)


cdef void cwidth(KernelExpansion e, double gamma, bint now, double* ww) noexcept nogil:
    """The expansion at the width gamma (gamma="scale"'s warm-up); `now`: ww, ||f||_K^2 of
    the new kernel, recomputed when the width moves."""
    if gamma != e.kernel.gamma:
        e.cset_gamma(gamma)
        if now:
            ww[0] = csq_norm(e)


cdef void cmulti_width(MultiExpansion e, double gamma, bint now, double* ww,
                       double* s) noexcept nogil:
    """`cwidth` of a multi-output expansion: ww is 2 sum_c ||f_c||_K^2 (s: k doubles)."""
    if gamma != e.kernel.gamma:
        e.cset_gamma(gamma)
        if now:
            ww[0] = cmulti_sq_norm(e, s)


# -- multiclass: k weight vectors, Crammer et al.'s max-wrong-class constraint ----------
#
# Scores s_c = w_c.x; y the true class, r the best wrong class (the first of the
# highest), m = s_y - s_r.  In the coordinates V = sqrt(2) W the single
# constraint m >= 1 is the binary one on the row a = (e_y - e_r) x / sqrt(2),
# ||a||^2 = ||x||^2, so every rule above gives (cv, ca) from m, ||x||^2 and
# ||V||^2 = 2 ||W||^2 unchanged, and W_{t+1} = cv W_t + (ca / 2) (e_y - e_r) x.
# ww is ||V||^2 = 2 ||W||_F^2: at k = 2 with W = [-w/2, w/2] it is ||w||^2
# (docs/multiclass-pa.md).

cdef inline double cmargin(const double* s, Py_ssize_t k, Py_ssize_t y,
                           Py_ssize_t* r) noexcept nogil:
    """s_y - max_{c != y} s_c, the best wrong class in r (-1 and +inf when k < 2)."""
    cdef Py_ssize_t c
    cdef double top = 0.0
    r[0] = -1
    for c in range(k):
        if c != y and (r[0] < 0 or s[c] > top):
            r[0], top = c, s[c]
    if r[0] < 0:
        return INFINITY
    return s[y] - top


cdef inline int cmulti_linear_step(double* w, double* scale, double* ww, Py_ssize_t k,
                                   Py_ssize_t d, const Row* row, Py_ssize_t yi,
                                   const double* sc, const PASpec* s, double sigma,
                                   const double* kxx, double* a_work, double* work,
                                   AbsIndex* pairs, double pre) noexcept nogil:
    """One step from the scores sc (finite) on the (k, d) weights W = scale * raw: an
    Event, or DIVERGED with nothing written.  The one step of `cmulti_linear` and
    `PAEvents.learn`; it starts from pre W (1 with L1)."""
    cdef Py_ssize_t c, r, kd = k * d
    cdef double m, uu, cv, ca, h, ww_new, vv = ww[0] * pre * pre
    cdef int e
    cdef bint ok
    cdef int ev = PASSIVE
    m = cmargin(sc, k, yi, &r) * pre
    if not cviolated(s, m):
        if pre != 1.0:
            cshrink_lazy(w, kd, scale, pre)
            ww[0] = vv
        return PASSIVE
    e = crow_exponent(row)
    if s.reg == L1:     # the projection of the flat W onto {a.W >= 1, ||W||_1 <= beta}
        if -500 < e < 500:
            e = 0
        for c in range(row.nnz):
            h = ldexp(row.val[c], -e)
            a_work[yi * d + (c if row.idx == NULL else row.idx[c])] = h
            a_work[r * d + (c if row.idx == NULL else row.idx[c])] = -h
        ok = chalfspace_l1(w, a_work, kd, ldexp(1.0, -e), s.beta, w, work)
        for c in range(row.nnz):
            a_work[yi * d + (c if row.idx == NULL else row.idx[c])] = 0.0
            a_work[r * d + (c if row.idx == NULL else row.idx[c])] = 0.0
        if ok:
            ev = UPDATED
            ww[0] = 2.0 * cdot(w, w, kd)
        else:
            ev = INFEASIBLE
    else:
        uu = (ldexp(crow_sqnorm(row), -2 * e) if -500 < e < 500
              else crow_sqnorm_scaled(row, e))
        ev = cscaled_coefs(s, m, uu if kxx == NULL else ldexp(kxx[0], -2 * e), e,
                           vv, &cv, &ca)
        if ev == PASSIVE and pre != 1.0:
            cshrink_lazy(w, kd, scale, pre)
            ww[0] = vv
        if ev == UPDATED:
            ww_new = cv * cv * vv + 2.0 * cv * ca * ldexp(m, -e) + ca * ca * uu
            h = 0.5 * ca / cscale_after(scale[0], cv * pre)
            if not (isfinite(ww_new) and isfinite(h)):
                return DIVERGED
            if cv * pre != 1.0:
                cshrink_lazy(w, kd, scale, cv * pre)
            if -500 < e < 500:
                crow_axpy(row, ldexp(h, -e), w + yi * d)
                crow_axpy(row, -ldexp(h, -e), w + r * d)
            else:
                crow_axpy_scaled(row, h, e, w + yi * d)
                crow_axpy_scaled(row, -h, e, w + r * d)
            ww[0] = fmax(ww_new, 0.0)
    if ev == UPDATED and sigma > 0.0:
        ww[0] = 2.0 * scale[0] * scale[0] * ctruncate_smallest(
            w, kd, 0.5 * sigma / (scale[0] * scale[0]), pairs)
    return ev


cdef Py_ssize_t cmulti_linear(double* w, double* scale, double* ww, Py_ssize_t k,
                              Py_ssize_t d, bint sparse, const double* data,
                              const int* indices, const Py_ssize_t* indptr,
                              const Py_ssize_t* y, Py_ssize_t n, const PASpec* s, double sigma,
                              const double* kxx, double* a_work, double* work, AbsIndex* pairs,
                              double* score_out, signed char* event_out, const Drift* dr,
                              DriftState* ds) noexcept nogil:
    """The multiclass loop over n rows; w is (k, d) raw weights (W = scale * w).
    Returns -1, the first divergent step, or INTERRUPTED."""
    cdef Py_ssize_t i, c, done = 0, kd = k * d
    cdef Row row
    cdef double* s_i
    cdef double pre = 1.0
    cdef DriftState nxt
    cdef int ev
    for i in range(n):
        if sparse:
            row = Row(data + indptr[i], indices + indptr[i], indptr[i + 1] - indptr[i])
        else:
            row = Row(data + i * d, NULL, d)
        if cinterrupted(&done, k * row.nnz if (s.reg != L1 and sigma == 0.0) else 8 * kd):
            return INTERRUPTED
        s_i = score_out + i * k
        for c in range(k):
            s_i[c] = scale[0] * crow_dot(&row, w + c * d)
            if not isfinite(s_i[c]):
                return i
        if dr != NULL:
            pre = cwatch(dr, ds, cmistake(s_i, y[i], k), &nxt)
        ev = cmulti_linear_step(w, scale, ww, k, d, &row, y[i], s_i, s, sigma,
                                NULL if kxx == NULL else kxx + i, a_work, work, pairs, pre)
        if ev == DIVERGED:
            return i
        if dr != NULL and ev != INFEASIBLE:
            ds[0] = nxt
        event_out[i] = ev
    return -1


cdef _fit_multi(double[:, ::1] w, double scale, double ww, bint sparse, const double* data,
                const int* indices, const Py_ssize_t* indptr, const Py_ssize_t[::1] y,
                PASpec s, double sigma, const double* kxx, double[:, ::1] score_out,
                signed char[::1] event_out, drift=None, drift_state=None):
    cdef Py_ssize_t k = w.shape[0], d = w.shape[1], n = y.shape[0], failed, i
    cdef double* a_work = NULL
    cdef double* work = NULL
    cdef AbsIndex* pairs = NULL
    cdef Drift dr
    cdef DriftState ds
    cdef const Drift* watch = cwatching(drift, drift_state, &dr, &ds)
    if s.reg == L1 and scale != 1.0:
        raise ValueError("the L1 loop needs unscaled weights (scale = 1).")
    if s.reg == L1 and watch != NULL:
        raise ValueError("the L1 loop takes no drift factor (its projection needs w itself).")
    if score_out.shape[0] != n or score_out.shape[1] != k or event_out.shape[0] != n:
        raise ValueError(f"score_out must be ({n}, {k}) and event_out ({n},).")
    for i in range(n):
        if not 0 <= y[i] < k:
            raise ValueError(f"class index {y[i]} outside [0, {k}).")
    if n == 0 or k == 0:
        return -1, scale, ww
    try:
        if s.reg == L1:
            a_work = <double*>calloc(k * d + 1, sizeof(double))
            work = <double*>calloc(k * d + 1, sizeof(double))
            if a_work == NULL or work == NULL:
                raise MemoryError()
        if sigma > 0.0:
            pairs = <AbsIndex*>calloc(k * d + 1, sizeof(AbsIndex))
            if pairs == NULL:
                raise MemoryError()
        with nogil:
            failed = cmulti_linear(&w[0, 0], &scale, &ww, k, d, sparse, data, indices, indptr,
                                   &y[0], n, &s, sigma, kxx, a_work, work, pairs,
                                   &score_out[0, 0], &event_out[0], watch, &ds)
    finally:
        free(a_work)
        free(work)
        free(pairs)
    cdrift_out(watch, &ds, drift_state)
    if failed == INTERRUPTED:
        craise_pending()
    return failed, scale, ww


def fit_multi_dense(double[:, ::1] w,         # IN/OUT (k, d) raw weights: W = scale * w
                    double scale, double ww,  # IN scale, 2 ||W||_F^2
                    const double[:, ::1] X,   # IN (n, d)
                    const Py_ssize_t[::1] y,  # IN (n,) class indices in [0, k)
                    int reg, int variant, double C, double alpha, double beta, bint mistake,
                    double sigma,
                    double[:, ::1] score_out, # OUT (n, k) scores before the update
                    signed char[::1] event_out,
                    const double[::1] kxx=None, drift=None, drift_state=None):
    """The multiclass chunk; return (failed, scale, ww) as `fit_dense`."""
    if X.shape[1] != w.shape[1]:
        raise ValueError(f"X has {X.shape[1]} columns, w {w.shape[1]}.")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows, y {y.shape[0]}.")
    if kxx is not None and kxx.shape[0] != X.shape[0]:
        raise ValueError(f"kxx has {kxx.shape[0]} values for {X.shape[0]} rows.")
    if X.shape[0] == 0:
        return -1, scale, ww
    return _fit_multi(w, scale, ww, False, &X[0, 0], NULL, NULL, y,
                      PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake),
                      sigma, NULL if kxx is None else &kxx[0], score_out, event_out, drift,
                      drift_state)


def fit_multi_csr(double[:, ::1] w, double scale, double ww,
                  const double[::1] data, const int[::1] indices,
                  const Py_ssize_t[::1] indptr, const Py_ssize_t[::1] y,
                  int reg, int variant, double C, double alpha, double beta, bint mistake,
                  double sigma, double[:, ::1] score_out, signed char[::1] event_out,
                  drift=None, drift_state=None):
    """`fit_multi_dense` for canonical CSR rows."""
    cdef double no_data = 0.0
    cdef int no_index = 0
    if indptr.shape[0] != y.shape[0] + 1:
        raise ValueError(f"indptr has {indptr.shape[0]} entries for {y.shape[0]} rows.")
    return _fit_multi(w, scale, ww, True, &data[0] if data.shape[0] else &no_data,
                      &indices[0] if indices.shape[0] else &no_index, &indptr[0], y,
                      PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake),
                      sigma, NULL, score_out, event_out, drift, drift_state)


# -- multiclass kernel expansions -------------------------------------------------------

cdef inline int cmulti_kernel_step(MultiExpansion e, const double* x, double xx, double kxx,
                                   const double* sc, Py_ssize_t yi, const PASpec* s,
                                   double* ww, double* a, double pre) noexcept nogil:
    """One step from the scores sc (finite) on f = sum_i a_i K(x_i, .), a_i in R^k: an
    Event, or DIVERGED with nothing written.  The one step of `fit_multi_kernel` and
    `PAEvents.learn`.  a: k doubles of work, zero between calls.

    ww = 2 sum_c ||f_c||_K^2 is carried exactly: the step's own change plus what
    the budget took (`norm_change` of `MultiExpansion.cadd`, whatever the policy;
    `e.track_norm` must be set), O(1) with room and O(n (d + k)) per eviction.
    """
    cdef Py_ssize_t r
    cdef double m, cv, ca, ww_new, vv = ww[0] * pre * pre
    cdef int ev = PASSIVE
    m = cmargin(sc, e.n_classes, yi, &r) * pre
    if cviolated(s, m):
        ev = ccoefs(s, m, kxx, vv, &cv, &ca)
    if ev == PASSIVE and pre != 1.0:
        e.cshrink(pre)
        ww[0] = vv
    if ev != UPDATED:
        return ev
    # what `cadd` would refuse; a centre whose ||x||^2 overflows has no finite kernel value
    if not (isfinite(0.5 * ca / cscale_after(e.scale, cv * pre)) and isfinite(xx)):
        return DIVERGED
    ww_new = cv * cv * vv + 2.0 * cv * ca * m + ca * ca * kxx
    e.cshrink(cv * pre)
    a[yi] = 0.5 * ca
    a[r] = -0.5 * ca
    e.cadd(x, xx, a)
    a[yi] = 0.0
    a[r] = 0.0
    ww_new += 2.0 * e.norm_change
    ww[0] = fmax(ww_new, 0.0) if isfinite(ww_new) else NAN
    return UPDATED


cdef double cmulti_ww(MultiExpansion e, double ww):
    """ww, or 2 sum_c ||f_c||_K^2 from the expansion when ww is NaN (a model saved when
    it was not tracked), O(n^2 (d + k))."""
    if ww == ww:
        return ww
    return 2.0 * max(e.sq_norm(), 0.0)


def fit_multi_kernel(MultiExpansion expansion,
                     double ww,                  # IN 2 sum_c ||f_c||_K^2 (NaN: recomputed)
                     const double[:, ::1] X,
                     const Py_ssize_t[::1] y,    # IN (n,) class indices in [0, k)
                     int reg, int variant, double C, double alpha, double beta, bint mistake,
                     double[:, ::1] score_out,   # OUT (n, k) scores before the update
                     signed char[::1] event_out, drift=None, drift_state=None,
                     const double[::1] gamma=None):  # IN (n + 1,) the widths (`fit_kernel`)
    """The multiclass loop for f = sum_i a_i K(x_i, .), a_i in R^k; return (failed, ww).

    The step is the binary one on m = s_y - s_r (docs/multiclass-pa.md):
    f_{t+1} = cv f_t + (ca / 2) (e_y - e_r) K(x_t, .) (`cmulti_kernel_step`); `gamma` as
    in `fit_kernel`.
    """
    cdef PASpec s = PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake)
    cdef Py_ssize_t i, c, n = X.shape[0], d = X.shape[1], k = expansion.n_classes
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False, finite, widths = gamma is not None
    cdef const double* x
    cdef double xx, pre = 1.0
    cdef double* sc
    cdef double[::1] a, sbuf
    cdef int ev
    cdef Drift dr
    cdef DriftState ds, nxt
    cdef const Drift* watch = cwatching(drift, drift_state, &dr, &ds)
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if reg == L1:
        raise ValueError("the L1 constraint needs the linear kernel.")
    if score_out.shape[0] != n or score_out.shape[1] != k or event_out.shape[0] != n:
        raise ValueError(f"score_out must be ({n}, {k}) and event_out ({n},).")
    for i in range(n):
        if not 0 <= y[i] < k:
            raise ValueError(f"class index {y[i]} outside [0, {k}).")
    if widths and gamma.shape[0] != n + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    sbuf = np.zeros(k)                  # work: the scores at a centre (`cmulti_sq_norm`)
    if n == 0:
        if widths:
            cmulti_width(expansion, gamma[0], reg == L2, &ww, &sbuf[0])
        return -1, ww
    ww = cmulti_ww(expansion, ww)
    expansion.reserve(n)
    expansion.track_norm = True         # the budget reports its change of sum_c ||f_c||^2
    a = np.zeros(k)
    with nogil:
        for i in range(n):
            if cinterrupted(&work, expansion.n_support * (d + k)):
                interrupted = True
                break
            if widths:
                cmulti_width(expansion, gamma[i], reg == L2, &ww, &sbuf[0])
            x = &X[i, 0]
            xx = cdot(x, x, d)
            sc = &score_out[i, 0]
            expansion.cscores(x, sc)
            finite = True
            for c in range(k):
                if not isfinite(sc[c]):
                    finite = False
            if not finite:
                failed = i
                break
            if watch != NULL:
                pre = cwatch(watch, &ds, cmistake(sc, y[i], k), &nxt)
            ev = cmulti_kernel_step(expansion, x, xx, cself(&expansion.kernel, xx), sc, y[i],
                                    &s, &ww, &a[0], pre)
            if ev == DIVERGED:
                failed = i
                break
            if watch != NULL and ev != INFEASIBLE:
                ds = nxt
            event_out[i] = ev
        if widths and failed < 0 and not interrupted:
            cmulti_width(expansion, gamma[n], reg == L2, &ww, &sbuf[0])
    cdrift_out(watch, &ds, drift_state)
    if interrupted:
        craise_pending()
    return failed, ww


# -- one event at a time ------------------------------------------------------------------

cpdef enum EventsKind:
    LINEAR = 0          # LinearPAModel: w = scale * raw, (d,)
    MULTI_LINEAR = 1    # LinearMultiPAModel: W = scale * raw, (k, d)
    KERNEL = 2          # KernelPAModel on a KernelExpansion
    MULTI_KERNEL = 3    # KernelMultiPAModel on a MultiExpansion


cdef class PAEvents(Events):
    """One-event predict and learn for `RegularizedPAClassifier`, on the model's own buffers.

    `learn` predicts, then takes the very step of the chunk loops
    (`clinear_step`, `cmulti_linear_step`, `ckernel_step`,
    `cmulti_kernel_step`), so its iterates are those of `partial_fit` on the
    same rows.  The last prediction is kept with a fingerprint of the model
    and a copy of the row, so "predict, then learn" costs one prediction (one
    kernel row), and a merging budget reuses that row.  A step checks
    everything before its first write: a row with NaN/inf or a divergent step
    raises and leaves the model as it was.

    Parameters
    ----------
    kind : EventsKind
    model : LinearPAModel, LinearMultiPAModel, KernelPAModel or KernelMultiPAModel
        The estimator's `_model` (or the linear model of its random Fourier
        features); `learn` writes its weights (or expansion) in place and its
        `scale` / `sq_norm` attributes.
    rule : tuple
        (reg, variant, C, alpha, beta, mistake), as the chunk loops take it.
    sigma : float
        The truncation threshold (linear models), 0 for none.
    name, cure : str
        The estimator's class name and the end of the divergence message.
    names : tuple of str
        The estimator attributes `matches` compares (the model and the parameters).
    fmap : RandomFourierFeatures or NystroemFeatures, optional
        A linear model on the features z(x) of each row (``approximation="fourier"``,
        or "nystroem" once its features exist), computed in C by the map's
        `row_map` (`okl._core._linear.FeatureRow`: the Fourier features bit for bit as
        `transform`); on Nystroem features the step takes K(x, x) in place of
        ||z(x)||^2, as the chunk loop does.
    drift : dict or None
        The `Drift` fields (_drift.pxd): the step watches its mistakes and keeps the
        learner's `_drift_state`; None: no forgetting, no detector.
    """
    cdef Drift drift
    cdef bint watching
    cdef readonly int kind
    cdef object model, raw, cure
    cdef dict mattrs                      # the model's __dict__: its scale, sq_norm, raw
    cdef KernelExpansion expansion
    cdef MultiExpansion mexpansion
    cdef PASpec spec
    cdef double sigma
    cdef Py_ssize_t d, k
    cdef double[::1] w, last_row, last_s, a, a_work, work
    cdef double[::1] last_x               # a feature model's row x (its z is last_row)
    cdef FeatureRow frow                  # the feature map of one row, or None
    cdef bint nystroem                    # Nystroem features: the step takes K(x, x)
    cdef double last_kxx                  # K(x, x) of the last row (Nystroem)
    cdef const double[::1] view           # a row that is not a ready array, while it is read
    cdef Py_ssize_t n_in                  # the row's width (d, or n_in with features)
    cdef bint features                    # a linear model on the features of the row
    cdef AbsIndex* pairs
    cdef public Warmup warm               # gamma="scale"'s warm-up, while on (kernel models)
    cdef public bint warm_end             # random Fourier features' exact phase (`owner`)
    cdef public object owner              # its `WarmFourierPAModel`; None once a switch failed
    cdef double[::1] wscores              # work: the scores at a centre (`cmulti_sq_norm`)
    cdef bint has_last
    cdef double last_xx, last_t, last_scale
    cdef Py_ssize_t last_n, last_slot, last_rescale

    def __cinit__(self):
        self.pairs = NULL

    def __dealloc__(self):
        free(self.pairs)

    def __init__(self, int kind, model, tuple rule, double sigma, str name, str cure,
                 tuple names=(), fmap=None, drift=None):
        reg, variant, C, alpha, beta, mistake = rule
        self.watching = drift is not None
        if self.watching:
            if reg == L1:
                raise ValueError("the L1 step takes no drift factor.")
            self.drift = drift
        self.spec = PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake)
        self.kind, self.model, self.sigma = kind, model, sigma
        self.mattrs = model.__dict__
        self.name, self.cure, self.names = name, cure, names
        self.values = tuple([model] + [None] * (len(names) - 1))
        self.k = 1
        if kind == LINEAR or kind == MULTI_LINEAR:
            self.raw = model.raw
            if not (self.raw.flags.c_contiguous and self.raw.flags.writeable
                    and self.raw.dtype == np.float64):
                raise ValueError("the weights must be a writeable C-contiguous float64 array.")
            if kind == MULTI_LINEAR:
                self.k, self.d = self.raw.shape[0], self.raw.shape[1]
            else:
                self.d = self.raw.shape[0]
            self.w = self.raw.reshape(-1)
            if reg == L1 and model.scale != 1.0:
                raise ValueError("the L1 step needs unscaled weights (scale = 1).")
        elif kind == KERNEL:
            if reg == L1:
                raise ValueError("the L1 constraint needs the linear kernel.")
            self.expansion = model.expansion
            self.expansion.track_norm = True
            self.d = self.expansion.n_features
        elif kind == MULTI_KERNEL:
            if reg == L1:
                raise ValueError("the L1 constraint needs the linear kernel.")
            self.mexpansion = model.expansion
            self.mexpansion.track_norm = True
            self.d, self.k = self.mexpansion.n_features, self.mexpansion.n_classes
            model.sq_norm = cmulti_ww(self.mexpansion, model.sq_norm)
        else:
            raise ValueError(f"unknown kind {kind}.")
        self.features = fmap is not None
        self.n_in = self.d
        if self.features:
            if kind != LINEAR and kind != MULTI_LINEAR:
                raise ValueError("feature maps feed a linear model.")
            self.frow = fmap.row_map()
            if self.frow.n_components != self.d:
                raise ValueError("the features and the weights disagree.")
            self.nystroem = self.frow.kind == 1
            self.n_in = self.frow.n_features
            self.last_x = np.empty(self.n_in)
        self.last_row = np.empty(self.d)
        self.last_s = np.empty(self.k)
        self.wscores = np.empty(self.k)
        self.a = np.zeros(self.k)
        n = self.k * self.d
        self.a_work = np.zeros(n + 1 if reg == L1 else 1)
        self.work = np.zeros(n + 1 if reg == L1 else 1)
        if sigma > 0.0:
            self.pairs = <AbsIndex*>calloc(n + 1, sizeof(AbsIndex))
            if self.pairs == NULL:
                raise MemoryError()
        self.has_last = False
        self.ready = True

    cdef int cmatches(self, object est, dict attrs) except -1:
        """est holds the very objects this step was built from (its model, its weights or
        expansion, its parameters)."""
        if not Events.cmatches(self, est, attrs):
            return False
        if self.warm_end:           # random Fourier features' exact phase, while it lasts
            if self.owner is None or attrs.get("_width_moments") is None:
                return False
        if self.kind == LINEAR or self.kind == MULTI_LINEAR:
            return self.mattrs.get("raw") is self.raw
        if self.kind == KERNEL:
            return self.model.expansion is self.expansion
        return self.model.expansion is self.mexpansion

    cdef double _scale(self):
        if self.kind == KERNEL:
            return self.expansion.scale
        if self.kind == MULTI_KERNEL:
            return self.mexpansion.scale
        return self.mattrs["scale"]

    cdef const double* _row(self, object x) except NULL:
        """The data of row x (a ready array in place; any other 1-D float64 buffer through a
        typed view kept in `view`), after checking its width."""
        cdef Py_ssize_t n = 0
        cdef const double* p = cready(x, &n)
        if p == NULL:
            self.view = x
            n, p = self.view.shape[0], &self.view[0] if self.view.shape[0] else NULL
        if n != self.n_in:
            raise ValueError(f"X has {n} features, but {self.name} is expecting "
                             f"{self.n_in} features as input.")
        return p

    cdef int _scores(self, const double* x, double t) except -1:
        """The scores of row x (of width n_in, `_row`) into last_s (kept for the next call on
        the same row and model); raises on a row with NaN/inf."""
        cdef Py_ssize_t c, n = 0, slot = 0, rescale = 0, d = self.d, d_in = self.n_in
        cdef double scale, xx
        cdef Row row
        cdef double* seen = &self.last_x[0] if self.features else &self.last_row[0]
        scale = self._scale()
        if self.kind == KERNEL:
            n, slot, rescale = (self.expansion.n_support, self.expansion.next_slot,
                                self.expansion.n_rescale)
        elif self.kind == MULTI_KERNEL:
            n, slot, rescale = (self.mexpansion.n_support, self.mexpansion.next_slot,
                                self.mexpansion.n_rescale)
        if (self.has_last and t == self.last_t and scale == self.last_scale
                and n == self.last_n and slot == self.last_slot
                and rescale == self.last_rescale
                and memcmp(x, seen, d_in * sizeof(double)) == 0):
            return 0
        self.has_last = False
        memcpy(seen, x, d_in * sizeof(double))
        xx = cdot(seen, seen, d_in)
        if not row_is_finite(seen, d_in, xx):
            raise ValueError(f"{self.name} got a row with NaN or inf: "
                             f"{np.array([seen[c] for c in range(min(d_in, 10))])}; "
                             "non-finite values cannot be learned or predicted.")
        if self.features:           # z(x) into last_row, as the map's transform
            self.frow.cmap(seen, &self.last_row[0])
            if self.nystroem:
                self.last_kxx = cself(&self.frow.kernel, xx)
        if self.kind == KERNEL:
            self.last_s[0] = self.expansion.cpredict(&self.last_row[0])
        elif self.kind == MULTI_KERNEL:
            self.mexpansion.cscores(&self.last_row[0], &self.last_s[0])
        else:
            row = Row(&self.last_row[0], NULL, d)
            for c in range(self.k):
                self.last_s[c] = scale * crow_dot(&row, &self.w[c * d])
        self.last_xx, self.last_t, self.last_scale = xx, t, scale
        self.last_n, self.last_slot, self.last_rescale = n, slot, rescale
        self.has_last = True
        return 0

    cdef _result(self):
        return self.last_s[0] if self.kind == LINEAR or self.kind == KERNEL \
            else np.array(self.last_s)

    def predict(self, x, double t, b=None):
        """f(x) for one row (k scores with k >= 3 classes); t: the learner's t_, for the
        cache; b: unused (the model has no intercept)."""
        self._scores(self._row(x), t)
        return self._result()

    def learn(self, x, double y, dict counters):
        """Predict f_t(x_t), then take step t + 1; return (f_t(x_t), Event).

        `y` is the label as -1.0 / +1.0 (two classes) or the class index.
        `counters` is the estimator's ``__dict__``: its ``t_`` (and ``n_updates_``)
        move here, in the same C call as the step, for a PASSIVE or UPDATED step (no
        signal can land between the model and its counters); an INFEASIBLE step
        changes nothing, and the caller warns, then calls `skipped`.  Raises,
        leaving the model as it was, on a bad row or label, or a divergent step.
        """
        cdef const double* p = self._row(x)
        cdef double t = counters["t_"]
        self._predict_step(p, y, t)
        result = self._result()
        return result, self._step(y, counters)

    cdef int _predict_step(self, const double* x, double y, double t) except -1:
        """Check the label, make room for a newcomer, and predict f_t(x_t) into last_s."""
        cdef Py_ssize_t c, yi = <Py_ssize_t>y
        if self.kind == MULTI_LINEAR or self.kind == MULTI_KERNEL:
            if not (0 <= yi < self.k and yi == y):
                raise ValueError(f"y = {y} is not a class index in [0, {self.k}).")
        elif not (y == 1.0 or y == -1.0):
            raise ValueError(f"y = {y} is not -1 or +1.")
        if self.kind == KERNEL and self.expansion.n_support == self.expansion.capacity and (
                not self.expansion.budget or self.expansion.n_support < self.expansion.budget
                or self.expansion.policy == MERGE):
            self.expansion.reserve(1)       # moves the buffers, the model unchanged
        elif self.kind == MULTI_KERNEL and self.mexpansion.n_support == self.mexpansion.capacity \
                and (not self.mexpansion.budget
                     or self.mexpansion.n_support < self.mexpansion.budget
                     or self.mexpansion.policy == MERGE):
            self.mexpansion.reserve(1)
        self._scores(x, t)
        for c in range(self.k):
            if not isfinite(self.last_s[c]):
                self._diverged(t)
        return 0

    cdef int _step(self, double y, dict counters) except -1:
        """Step t + 1 on the row `_predict_step` just predicted; its Event, with the counters
        stored in `counters` (`_take`); at the warm-up's last row on random Fourier
        features, the switch to them too (`_ending`)."""
        if self.warm_end:
            return self._ending(y, counters, False)
        return self._take(y, counters)

    cdef int _ending(self, double y, dict counters, bint infeasible) except -1:
        """The step (`_take`, or with `infeasible` the count of a skipped row, `skipped`) on
        random Fourier features' exact phase.  When it ends the warm-up, the learner takes
        the weights of the features, ``w = sum_i a_i z(x_i)`` (`WarmFourierPAModel.
        feature_model`, as its `_end_width` after a chunk, docs/defaults.md, section 2); if
        that fails (a Ctrl-C included) the step is undone and this step is not used again."""
        moments = counters.get("_width_moments")
        if moments is None or moments[0] < C_WARMUP - 1:
            if infeasible:
                return self._count_skipped(counters)
            return self._take(y, counters)
        owner, saved = self.owner, dict(counters)
        token = owner.checkpoint(1)
        try:
            ev = self._count_skipped(counters) if infeasible else self._take(y, counters)
            if "_width_moments" not in counters and ev != INFEASIBLE:
                counters["_model"] = owner.feature_model()
        except BaseException:
            owner.restore(token)
            for key in [key for key in counters if key not in saved]:
                del counters[key]
            counters.update(saved)
            self.owner = None
            self.has_last = False
            raise
        return ev

    cdef int _take(self, double y, dict counters) except -1:
        """Step t + 1 (`_step`) on the model this step holds."""
        cdef Py_ssize_t yi = <Py_ssize_t>y
        cdef double scale, ww, xx, pre = 1.0
        cdef int ev
        cdef Row row
        cdef const double* xp = &self.last_row[0]
        cdef const double* kxx
        cdef DriftState ds, nxt
        steps = counters["t_"]
        cdef double t = steps
        if self.warm is not None:
            self._warm_load(counters)
        ww = self.mattrs["sq_norm"]
        xx = self.last_xx
        if self.watching:           # the mistake watched (_drift.pxd)
            cread_drift(counters.get("_drift_state"), t, &ds)
            pre = cwatch(&self.drift, &ds, (1.0 if y * self.last_s[0] <= 0.0 else 0.0)
                         if self.kind == LINEAR or self.kind == KERNEL
                         else cmistake(&self.last_s[0], yi, self.k), &nxt)
        craise_signals()                # a Ctrl-C so far: raised before any write
        if self.kind == KERNEL:
            ev = ckernel_step(self.expansion, xp, xx, cself(&self.expansion.kernel, xx),
                              self.last_s[0], y, &self.spec, &ww, pre)
        elif self.kind == MULTI_KERNEL:
            ev = cmulti_kernel_step(self.mexpansion, xp, xx, cself(&self.mexpansion.kernel, xx),
                                    &self.last_s[0], yi, &self.spec, &ww, &self.a[0], pre)
        else:
            scale = self.mattrs["scale"]
            row = Row(xp, NULL, self.d)
            kxx = &self.last_kxx if self.nystroem else NULL
            if self.kind == LINEAR:
                ev = clinear_step(&self.w[0], &scale, &ww, self.d, &row, y, self.last_s[0],
                                  &self.spec, self.sigma, kxx, &self.a_work[0], &self.work[0],
                                  self.pairs, pre)
            else:
                ev = cmulti_linear_step(&self.w[0], &scale, &ww, self.k, self.d, &row, yi,
                                        &self.last_s[0], &self.spec, self.sigma, kxx,
                                        &self.a_work[0], &self.work[0], self.pairs, pre)
            if ev == UPDATED or (ev == PASSIVE and pre != 1.0):
                self.mattrs["scale"] = scale
        if ev == DIVERGED:
            self._diverged(t)
        if ev == UPDATED or (ev == PASSIVE and pre != 1.0):
            self.mattrs["sq_norm"] = ww
            self.has_last = False
        if ev != INFEASIBLE and self.warm is not None:
            self._warm_step(counters)
        if ev == UPDATED:
            counters["n_updates_"] = counters["n_updates_"] + 1
        if ev != INFEASIBLE:
            if self.watching:
                counters["_drift_state"] = cdrift_tuple(&nxt)
            counters["t_"] = steps + 1
        return ev

    cdef int _warm_load(self, dict counters) except -1:
        """The warm-up of the learner's attributes, at the model's width."""
        self.warm.cload(counters, self.expansion.kernel.gamma if self.kind == KERNEL
                        else self.mexpansion.kernel.gamma)
        if self.warm.over:
            self.warm = None
        return 0

    cdef int _warm_step(self, dict counters) except -1:
        """gamma="scale"'s warm-up takes the row just learned (docs/defaults.md, section 2): at
        a new width the expansion is re-read, ||f||_K^2 recomputed where the rule reads it
        (`cwidth`) and when the warm-up ends (as the learner does after a chunk); gamma_ and
        the moments are stored on the learner."""
        cdef Warmup warm = self.warm
        cdef bint moved = warm.cadd(&self.last_row[0])
        cdef bint now = not warm.width.warming or (moved and self.spec.reg == L2)
        cdef double ww = self.mattrs["sq_norm"]
        if self.kind == KERNEL:
            if moved:
                self.expansion.cset_gamma(warm.width.gamma)
            if now:
                ww = csq_norm(self.expansion)
        else:
            if moved:
                self.mexpansion.cset_gamma(warm.width.gamma)
            if now:
                ww = cmulti_sq_norm(self.mexpansion, &self.wscores[0])
        if moved:
            self.has_last = False
        self.mattrs["sq_norm"] = ww
        warm.cstore(counters)
        if warm.over:
            self.warm = None
        return 0

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        """`learn` with its counters; an INFEASIBLE step (which changed nothing) is declined,
        for the learner to warn and count it."""
        self._predict_step(self._row(x), y, attrs["t_"])
        return self._step(y, attrs) != INFEASIBLE

    cdef object cpredict(self, dict attrs, object x):
        self._scores(self._row(x), attrs["t_"])
        return self._result()

    cdef object cpredict_label(self, dict attrs, object x):
        if self.kind == LINEAR or self.kind == KERNEL:
            return Events.cpredict_label(self, attrs, x)
        self._scores(self._row(x), attrs["t_"])
        return self.clabel_of(&self.last_s[0], self.k)

    def skipped(self, dict counters):
        """Count an INFEASIBLE step: ``t_`` and ``n_infeasible_`` in one C call (and take its
        row into gamma="scale"'s warm-up, as the chunk loops do)."""
        if self.warm_end:
            self._ending(0.0, counters, True)
        else:
            self._count_skipped(counters)

    cdef int _count_skipped(self, dict counters) except -1:
        """`skipped` on the model this step holds; PASSIVE (nothing learned)."""
        if self.warm is not None:
            self._warm_load(counters)
        if self.warm is not None:
            self._warm_step(counters)
        counters["n_infeasible_"] = counters["n_infeasible_"] + 1
        counters["t_"] = counters["t_"] + 1
        return PASSIVE

    cdef _diverged(self, double t):
        if not isfinite(self.last_xx):     # the event itself, not the step (as partial_fit says)
            raise huge_event(self.name)
        raise FloatingPointError(
            f"{self.name} diverged at step t={<Py_ssize_t>t + 1}: the model would no longer "
            f"be finite. {self.cure[0].upper()}{self.cure[1:]}. The model is left as it was.")
