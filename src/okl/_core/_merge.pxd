# Budget maintenance by merging (BSGD), as inline nogil helpers a kernel
# expansion calls when its budget overflows (docs/algorithms.md, section 7.3;
# docs/budget.md).
#
# The model is f = s * sum_i c_i K(x_i, .) with the Gaussian kernel,
# K(x, x) = 1.  When B + 1 centres must become B, take m = argmin |c_i| and
# replace c_m K_m + c_n K_n by c_z K_z with z = h x_m + (1 - h) x_n on the
# segment between x_m and a partner x_n.  For a fixed z the best c_z is the
# projection c_z = c_m K(x_m, z) + c_n K(x_n, z), and the weight degradation is
#     ||c_m K_m + c_n K_n - c_z K_z||_K^2 = c_m^2 + c_n^2 + 2 c_m c_n k - c_z^2,
# k = K(x_m, x_n) (Pythagoras: K_z has unit norm).  So the best h maximises
# |c_z(h)|, and the partner is the one of least degradation.  With
# g = gamma ||x_m - x_n||^2 (k = e^-g):
#     c_z(h) = c_m exp(-g (1 - h)^2) + c_n exp(-g h^2).
# Partners: only those whose coefficient has the sign of c_m (the contract's
# rule; BudgetedSVM searches h outside [0, 1] for opposite signs).  h comes
# from a golden-section search on [0, 1]; c_z is a sum of two Gaussian bumps
# in h, unimodal when g <= 2 and possibly bimodal beyond, so the endpoint
# h = 0 (z = x_n) is compared as well (h = 1 never beats it, |c_m| <= |c_n|).
# Every merge degrades by at most c_m^2 (1 - k^2) <= c_m^2, the cost of
# removing x_m, which is what happens when no partner has the sign of c_m.
#
# Invariance: multiplying every c_i by one s != 0 keeps m, the partner and h,
# and multiplies c_z by s (degradations by s^2), so the helpers take the raw
# coefficients of a lazily scaled expansion and return a raw c_z.
#
# References: Wang, Crammer and Vucetic, "Breaking the curse of kernelization:
# budgeted stochastic gradient descent for large-scale SVM training",
# JMLR 13, 2012, Section 4.3.
from libc.math cimport exp, fabs


# The golden-section search on h stops when its bracket is shorter than 1e-5
# (24 steps; 0.6180339887498949 is (sqrt(5) - 1) / 2).  Near the maximum c_z is
# flat, so h to 1e-5 gives c_z to ~1e-11 relative; and the last comparisons
# still differ by ~1e-10 relative, far above rounding, so the Cython search (on
# raw, scaled coefficients) and its NumPy twin (on true ones) take the same path.


cdef inline double cmerge_cz(double cm, double cn, double g, double h) noexcept nogil:
    """c_z(h) = c_m exp(-g (1 - h)^2) + c_n exp(-g h^2), g = gamma ||x_m - x_n||^2."""
    return cm * exp(-g * (1.0 - h) * (1.0 - h)) + cn * exp(-g * h * h)


cdef inline double cmerge_golden(double cm, double cn, double g) noexcept nogil:
    """h in [0, 1] maximising sign(c_m) c_z(h) by golden-section search, same-sign c_m, c_n."""
    cdef double sgn = 1.0 if cm > 0.0 else -1.0
    cdef double a = 0.0, b = 1.0
    cdef double p = b - 0.6180339887498949 * (b - a), q = a + 0.6180339887498949 * (b - a)
    cdef double fp = sgn * cmerge_cz(cm, cn, g, p), fq = sgn * cmerge_cz(cm, cn, g, q)
    while b - a >= 1e-5:
        if fp >= fq:
            b = q
            q = p
            fq = fp
            p = b - 0.6180339887498949 * (b - a)
            fp = sgn * cmerge_cz(cm, cn, g, p)
        else:
            a = p
            p = q
            fp = fq
            q = a + 0.6180339887498949 * (b - a)
            fq = sgn * cmerge_cz(cm, cn, g, q)
    return 0.5 * (a + b)


cdef inline void cmerge_pair(double cm, double cn, double g,
                             double* h_out, double* cz_out, double* loss_out) noexcept nogil:
    """The best merge of (x_m, c_m) with a same-sign partner (x_n, c_n), |c_m| <= |c_n|."""
    cdef double k = exp(-g), h = 0.0, cz, czg, hg
    cz = cn + cm * k                       # h = 0: z = x_n
    if g > 0.0:
        hg = cmerge_golden(cm, cn, g)
        czg = cmerge_cz(cm, cn, g, hg)
        if fabs(czg) > fabs(cz):
            h = hg
            cz = czg
    h_out[0] = h
    cz_out[0] = cz
    loss_out[0] = cm * cm + cn * cn + 2.0 * cm * cn * k - cz * cz


cdef inline double cmerge_bound(double am, double an, double g) noexcept nogil:
    """An upper bound of max |c_z(h)| on [0, 1] (|c_m| = am <= an = |c_n|, same signs).

    On each eighth [k/8, (k+1)/8] of [0, 1], exp(-g h^2) <= T[k] and
    exp(-g (1 - h)^2) <= T[7 - k] with T[j] = exp(-g j^2 / 64), so
    |c_z| <= max_k an T[k] + am T[7 - k].  T comes from one exponential by
    T[j + 1] = T[j] q^(2j + 1), q = exp(-g / 64).
    """
    cdef double T[8]
    cdef double q = exp(-g / 64.0), q2 = q * q, step = q, ub = 0.0, v
    cdef int j
    T[0] = 1.0
    for j in range(7):
        T[j + 1] = T[j] * step       # step = q^(2j + 1)
        step = step * q2
    for j in range(8):
        v = an * T[j] + am * T[7 - j]
        if v > ub:
            ub = v
    return ub


cdef inline double cmerge_sqdist(const double* x, const double* u, Py_ssize_t d) noexcept nogil:
    """||x - u||_2^2, summed directly."""
    cdef Py_ssize_t j
    cdef double s = 0.0, t
    for j in range(d):
        t = x[j] - u[j]
        s += t * t
    return s


cdef inline Py_ssize_t cmerge_find(const double* centers,   # IN (n, d) row-major
                                   const double* coef,      # IN (n,) raw coefficients
                                   Py_ssize_t n, Py_ssize_t d, double gamma,
                                   double* work,            # WORK (n,)
                                   Py_ssize_t* m_out, double* h_out, double* cz_out,
                                   double* loss_out) noexcept nogil:
    """Choose the merge that takes n centres to n - 1 (Gaussian kernel); return the partner.

    m_out receives argmin |coef| (the first on ties); the return value is the
    partner, or -1 when x_m is removed instead (no other centre has the sign
    of c_m, or c_m == 0: removal is then exact).  The merged point is
    z = h x_m + (1 - h) x_partner with raw coefficient cz; loss_out is the
    weight degradation (raw units squared; c_m^2 for a removal).  work holds
    n doubles; nothing is allocated.

    Partners are visited nearest first; a partner is skipped when a lower bound
    of its degradation (from `cmerge_bound`) cannot beat the best so far, so a
    merge costs one O(n d) distance pass, one exponential per partner and a
    few 1-D searches.
    """
    cdef Py_ssize_t i, m = 0, best = -1, near = -1
    cdef double cm, cn, g, h, cz, loss, lb, ub, am, an
    cdef double best_h = 0.0, best_cz = 0.0, best_loss = 0.0
    for i in range(1, n):
        if fabs(coef[i]) < fabs(coef[m]):
            m = i
    m_out[0] = m
    cm = coef[m]
    h_out[0] = 0.0
    cz_out[0] = 0.0
    loss_out[0] = cm * cm
    if cm == 0.0:
        return -1
    for i in range(n):
        work[i] = 0.0
        if i == m or cm * coef[i] <= 0.0:
            continue
        work[i] = gamma * cmerge_sqdist(centers + m * d, centers + i * d, d)
        if near < 0 or work[i] < work[near]:
            near = i
    if near < 0:
        return -1
    cmerge_pair(cm, coef[near], work[near], &best_h, &best_cz, &best_loss)
    best = near
    am = fabs(cm)
    for i in range(n):
        if i == m or i == near or cm * coef[i] <= 0.0:
            continue
        cn = coef[i]
        g = work[i]
        an = fabs(cn)
        ub = cmerge_bound(am, an, g)
        lb = cm * cm + cn * cn + 2.0 * cm * cn * exp(-g) - ub * ub
        if lb >= best_loss:
            continue
        cmerge_pair(cm, cn, g, &h, &cz, &loss)
        if loss < best_loss:
            best, best_h, best_cz, best_loss = i, h, cz, loss
    h_out[0] = best_h
    cz_out[0] = best_cz
    loss_out[0] = best_loss
    return best


cdef inline void cmerge_point(const double* xm, const double* xn, Py_ssize_t d, double h,
                              double* z_out) noexcept nogil:
    """z = h x_m + (1 - h) x_n (z_out may alias x_n, not x_m)."""
    cdef Py_ssize_t j
    for j in range(d):
        z_out[j] = h * xm[j] + (1.0 - h) * xn[j]
