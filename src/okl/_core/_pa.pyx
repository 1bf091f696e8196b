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
"""
import numpy as np

from libc.math cimport INFINITY, NAN, fabs, fmax, fmin, frexp, isfinite, ldexp
from libc.stdlib cimport calloc, free
from libc.string cimport memset
from scipy.linalg.cython_blas cimport ddot, daxpy

from okl._core._kernels cimport cdot, ckernel_row, cself
from okl._core._expansion cimport KernelExpansion
from okl._core._multiexpansion cimport MultiExpansion
from okl._core._lazy cimport cshrink_lazy
from okl._core._signals cimport cinterrupted, craise_pending
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


cdef Py_ssize_t clinear(double* w, double* scale, double* ww, Py_ssize_t d, bint sparse,
                        const double* data, const int* indices, const Py_ssize_t* indptr,
                        const double* y, Py_ssize_t n, const PASpec* s, double sigma,
                        const double* kxx, double* a_work, double* work, AbsIndex* pairs,
                        double* score_out, signed char* event_out) noexcept nogil:
    """The loop over n rows, dense (n, d) or CSR; -1, the first divergent step, or
    INTERRUPTED (a signal handler raised).  `kxx` (or NULL): the K(x, x) that
    replace ||x||^2 in the step coefficients, not in ||w||^2."""
    cdef Py_ssize_t i, done = 0
    cdef Row r
    cdef double f, m, uu, cv, ca, c, ww_new
    cdef int e
    cdef Event ev
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
        m = y[i] * f
        ev = PASSIVE
        if cviolated(s, m):
            if s.reg == L1:
                ev = cl1_step(w, ww, &r, y[i], s.beta, d, a_work, work)
            else:
                # x = 2^e u with max |u_j| in [1/2, 1): ||x||^2 = 4^e ||u||^2 never
                # overflows nor underflows, and w + ca y x = w + (ca 2^e) y u
                e = crow_exponent(&r)
                uu = ldexp(crow_sqnorm(&r), -2 * e) if -500 < e < 500 else crow_sqnorm_scaled(&r, e)
                ev = cscaled_coefs(s, m, uu if kxx == NULL else ldexp(kxx[i], -2 * e), e,
                                   ww[0], &cv, &ca)
                if ev == UPDATED:
                    ww_new = cv * cv * ww[0] + 2.0 * cv * ca * ldexp(m, -e) + ca * ca * uu
                    if not isfinite(ww_new):
                        return i
                    if cv != 1.0:
                        cshrink_lazy(w, d, scale, cv)
                    c = ca * y[i] / scale[0]
                    if not isfinite(c):
                        return i
                    if -500 < e < 500:
                        crow_axpy(&r, ldexp(c, -e), w)
                    else:
                        crow_axpy_scaled(&r, c, e, w)
                    ww[0] = fmax(ww_new, 0.0)
            if ev == UPDATED and sigma > 0.0:
                ww[0] = scale[0] * scale[0] * ctruncate_smallest(
                    w, d, sigma / (scale[0] * scale[0]), pairs)
        event_out[i] = ev
    return -1


cdef _fit_linear(double[::1] w, double scale, double ww, bint sparse, const double* data,
                 const int* indices, const Py_ssize_t* indptr, const double[::1] y,
                 PASpec s, double sigma, const double* kxx, double[::1] score_out,
                 signed char[::1] event_out):
    cdef Py_ssize_t d = w.shape[0], failed
    cdef double* a_work = NULL
    cdef double* work = NULL
    cdef AbsIndex* pairs = NULL
    if s.reg == L1 and scale != 1.0:
        raise ValueError("the L1 loop needs unscaled weights (scale = 1).")
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
                             &score_out[0], &event_out[0])
    finally:
        free(a_work)
        free(work)
        free(pairs)
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
              const double[::1] kxx=None):    # IN (n,) K(x, x) of feature rows, or None
    """Run the chunk; return (failed, scale, ww), failed = -1 or the first divergent step."""
    if X.shape[1] != w.shape[0]:
        raise ValueError(f"X has {X.shape[1]} columns, w {w.shape[0]}.")
    if kxx is not None and kxx.shape[0] != X.shape[0]:
        raise ValueError(f"kxx has {kxx.shape[0]} values for {X.shape[0]} rows.")
    return _fit_linear(w, scale, ww, False, &X[0, 0], NULL, NULL, y,
                       PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake),
                       sigma, NULL if kxx is None else &kxx[0], score_out, event_out)


def fit_csr(double[::1] w, double scale, double ww,
            const double[::1] data,           # IN CSR rows, canonical (sorted, no duplicates)
            const int[::1] indices,           # IN column of each entry (int32, as scipy's)
            const Py_ssize_t[::1] indptr,     # IN (n + 1,)
            const double[::1] y,
            int reg, int variant, double C, double alpha, double beta, bint mistake,
            double sigma, double[::1] score_out, signed char[::1] event_out):
    """`fit_dense` for CSR rows: each row costs O(its nonzeros), plus O(d) for L1/truncation."""
    cdef double no_data = 0.0           # pointed to when every row is empty
    cdef int no_index = 0
    return _fit_linear(w, scale, ww, True, &data[0] if data.shape[0] else &no_data,
                       &indices[0] if indices.shape[0] else &no_index, &indptr[0], y,
                       PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake),
                       sigma, NULL, score_out, event_out)


# -- kernel expansions ------------------------------------------------------------

def fit_kernel(KernelExpansion expansion,
               double ww,                     # IN ||f||_K^2
               const double[:, ::1] X, const double[::1] y,
               int reg, int variant, double C, double alpha, double beta, bint mistake,
               double[::1] score_out, signed char[::1] event_out):
    """The loop for f = sum_i a_i K(x_i, .); return (failed, ww).

    ||f||_K^2 is carried exactly: the step's own change, plus what the budget
    took, which the expansion reports whatever its policy (`norm_change` of
    `KernelExpansion.cadd`, docs/budget.md).
    """
    cdef PASpec s = PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake)
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1], failed = -1, work = 0
    cdef bint interrupted = False
    cdef const double* x
    cdef double xx, kxx, f, m, cv, ca, c, ww_new
    cdef Event ev
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if reg == L1:
        raise ValueError("the L1 constraint needs the linear kernel.")
    expansion.reserve(n)
    expansion.track_norm = True         # the budget reports its change of ||f||_K^2
    with nogil:
        for i in range(n):
            if cinterrupted(&work, expansion.n_support * d):
                interrupted = True
                break
            x = &X[i, 0]
            xx = cdot(x, x, d)
            kxx = cself(&expansion.kernel, xx)
            f = expansion.cpredict(x)
            score_out[i] = f
            if not isfinite(f):
                failed = i
                break
            m = y[i] * f
            ev = PASSIVE
            if cviolated(&s, m):
                ev = ccoefs(&s, m, kxx, ww, &cv, &ca)
            if ev == UPDATED:
                c = ca * y[i]
                ww_new = cv * cv * ww + 2.0 * cv * ca * m + ca * ca * kxx
                expansion.cshrink(cv)
                if not expansion.cadd(x, xx, c):
                    failed = i
                    break
                ww = fmax(ww_new + expansion.norm_change, 0.0)
            event_out[i] = ev
    if interrupted:
        craise_pending()
    return failed, ww


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


cdef Py_ssize_t cmulti_linear(double* w, double* scale, double* ww, Py_ssize_t k,
                              Py_ssize_t d, bint sparse, const double* data,
                              const int* indices, const Py_ssize_t* indptr,
                              const Py_ssize_t* y, Py_ssize_t n, const PASpec* s, double sigma,
                              const double* kxx, double* a_work, double* work, AbsIndex* pairs,
                              double* score_out, signed char* event_out) noexcept nogil:
    """The multiclass loop over n rows; w is (k, d) raw weights (W = scale * w).
    Returns -1, the first divergent step, or INTERRUPTED."""
    cdef Py_ssize_t i, c, r, yi, done = 0, kd = k * d
    cdef Row row
    cdef double m, uu, cv, ca, h, ww_new
    cdef double* s_i
    cdef int e
    cdef bint ok
    cdef Event ev
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
        yi = y[i]
        m = cmargin(s_i, k, yi, &r)
        ev = PASSIVE
        if cviolated(s, m):
            e = crow_exponent(&row)
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
                uu = (ldexp(crow_sqnorm(&row), -2 * e) if -500 < e < 500
                      else crow_sqnorm_scaled(&row, e))
                ev = cscaled_coefs(s, m, uu if kxx == NULL else ldexp(kxx[i], -2 * e), e,
                                   ww[0], &cv, &ca)
                if ev == UPDATED:
                    ww_new = cv * cv * ww[0] + 2.0 * cv * ca * ldexp(m, -e) + ca * ca * uu
                    if not isfinite(ww_new):
                        return i
                    if cv != 1.0:
                        cshrink_lazy(w, kd, scale, cv)
                    h = 0.5 * ca / scale[0]
                    if not isfinite(h):
                        return i
                    if -500 < e < 500:
                        crow_axpy(&row, ldexp(h, -e), w + yi * d)
                        crow_axpy(&row, -ldexp(h, -e), w + r * d)
                    else:
                        crow_axpy_scaled(&row, h, e, w + yi * d)
                        crow_axpy_scaled(&row, -h, e, w + r * d)
                    ww[0] = fmax(ww_new, 0.0)
            if ev == UPDATED and sigma > 0.0:
                ww[0] = 2.0 * scale[0] * scale[0] * ctruncate_smallest(
                    w, kd, 0.5 * sigma / (scale[0] * scale[0]), pairs)
        event_out[i] = ev
    return -1


cdef _fit_multi(double[:, ::1] w, double scale, double ww, bint sparse, const double* data,
                const int* indices, const Py_ssize_t* indptr, const Py_ssize_t[::1] y,
                PASpec s, double sigma, const double* kxx, double[:, ::1] score_out,
                signed char[::1] event_out):
    cdef Py_ssize_t k = w.shape[0], d = w.shape[1], n = y.shape[0], failed, i
    cdef double* a_work = NULL
    cdef double* work = NULL
    cdef AbsIndex* pairs = NULL
    if s.reg == L1 and scale != 1.0:
        raise ValueError("the L1 loop needs unscaled weights (scale = 1).")
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
                                   &score_out[0, 0], &event_out[0])
    finally:
        free(a_work)
        free(work)
        free(pairs)
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
                    const double[::1] kxx=None):
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
                      sigma, NULL if kxx is None else &kxx[0], score_out, event_out)


def fit_multi_csr(double[:, ::1] w, double scale, double ww,
                  const double[::1] data, const int[::1] indices,
                  const Py_ssize_t[::1] indptr, const Py_ssize_t[::1] y,
                  int reg, int variant, double C, double alpha, double beta, bint mistake,
                  double sigma, double[:, ::1] score_out, signed char[::1] event_out):
    """`fit_multi_dense` for canonical CSR rows."""
    cdef double no_data = 0.0
    cdef int no_index = 0
    if indptr.shape[0] != y.shape[0] + 1:
        raise ValueError(f"indptr has {indptr.shape[0]} entries for {y.shape[0]} rows.")
    return _fit_multi(w, scale, ww, True, &data[0] if data.shape[0] else &no_data,
                      &indices[0] if indices.shape[0] else &no_index, &indptr[0], y,
                      PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake),
                      sigma, NULL, score_out, event_out)


# -- multiclass kernel expansions -------------------------------------------------------

cdef double cmulti_sqnorm(MultiExpansion e, double* row) noexcept nogil:
    """sum_c ||f_c||_K^2 = sum_ij K(c_i, c_j) <a_i, a_j>, O(n^2 (d + k)); row: n doubles."""
    cdef Py_ssize_t i, j, c, n = e.n_support, d = e.n_features, k = e.n_classes
    cdef double total = 0.0, acc
    for i in range(n):
        ckernel_row(&e.kernel, e.centers + i * d, e.centers, n, d, row)
        for j in range(n):
            acc = 0.0
            for c in range(k):
                acc += e.coef[i * k + c] * e.coef[j * k + c]
            total += row[j] * acc
    return e.scale * e.scale * total


def fit_multi_kernel(MultiExpansion expansion,
                     double ww,                  # IN 2 sum_c ||f_c||_K^2, or NaN (unknown)
                     const double[:, ::1] X,
                     const Py_ssize_t[::1] y,    # IN (n,) class indices in [0, k)
                     int reg, int variant, double C, double alpha, double beta, bint mistake,
                     double[:, ::1] score_out,   # OUT (n, k) scores before the update
                     signed char[::1] event_out):
    """The multiclass loop for f = sum_i a_i K(x_i, .), a_i in R^k; return (failed, ww).

    The step is the binary one on m = s_y - s_r (docs/multiclass-pa.md):
    f_{t+1} = cv f_t + (ca / 2) (e_y - e_r) K(x_t, .).  ww is needed by the L2
    rule only: it is carried through each step and recomputed exactly after a
    budget eviction; the other rules return NaN after an eviction (the model
    computes ||f||^2 when asked).
    """
    cdef PASpec s = PASpec(<Regularization>reg, <Variant>variant, C, alpha, beta, mistake)
    cdef Py_ssize_t i, c, r, yi, before, n = X.shape[0], d = X.shape[1], k = expansion.n_classes
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False, finite
    cdef const double* x
    cdef double xx, kxx, m, cv, ca, ww_new
    cdef double* sc
    cdef double[::1] a, row
    cdef Event ev
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if reg == L1:
        raise ValueError("the L1 constraint needs the linear kernel.")
    if score_out.shape[0] != n or score_out.shape[1] != k or event_out.shape[0] != n:
        raise ValueError(f"score_out must be ({n}, {k}) and event_out ({n},).")
    for i in range(n):
        if not 0 <= y[i] < k:
            raise ValueError(f"class index {y[i]} outside [0, {k}).")
    if n == 0:
        return -1, ww
    expansion.reserve(n)
    a = np.zeros(k)
    row = np.zeros(expansion.capacity + 1)
    with nogil:
        for i in range(n):
            if cinterrupted(&work, expansion.n_support * (d + k)):
                interrupted = True
                break
            x = &X[i, 0]
            xx = cdot(x, x, d)
            kxx = cself(&expansion.kernel, xx)
            sc = &score_out[i, 0]
            expansion.cscores(x, sc)
            finite = True
            for c in range(k):
                if not isfinite(sc[c]):
                    finite = False
            if not finite:
                failed = i
                break
            yi = y[i]
            m = cmargin(sc, k, yi, &r)
            ev = PASSIVE
            if cviolated(&s, m):
                ev = ccoefs(&s, m, kxx, ww, &cv, &ca)
            if ev == UPDATED:
                ww_new = cv * cv * ww + 2.0 * cv * ca * m + ca * ca * kxx
                expansion.cshrink(cv)
                before = expansion.n_support
                a[yi] = 0.5 * ca
                a[r] = -0.5 * ca
                if not expansion.cadd(x, xx, &a[0]):
                    failed = i
                    break
                a[yi] = 0.0
                a[r] = 0.0
                if expansion.n_support > before:
                    ww = fmax(ww_new, 0.0) if isfinite(ww_new) else NAN
                elif s.reg == L2:          # a budget eviction: the norm, exactly
                    ww = 2.0 * cmulti_sqnorm(expansion, &row[0])
                else:
                    ww = NAN
            event_out[i] = ev
    if interrupted:
        craise_pending()
    return failed, ww
