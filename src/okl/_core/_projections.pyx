"""Exact Euclidean projections (nogil cores and their array wrappers).

L1 ball: the soft threshold whose level makes ||w||_1 = beta, found by Duchi
et al.'s pivot search (ICML 2008) in expected O(d).
Halfspace and L1 ball: w = S_mu(v + tau a), the soft-threshold S_mu of the
halfspace step v + tau a (KKT).  For each tau, mu is the L1-ball threshold,
so g(tau) = a.w(tau) - b is nondecreasing (a projection is monotone) and
piecewise linear; Newton steps on the current linear piece, safeguarded by
bisection (whenever a step leaves the bracket or fails to halve the step
before it), find its root.  The step is exact once it starts on the root's
piece, so the search ends after a few pieces, with g = 0 to rounding.
"""
import numpy as np

from libc.math cimport INFINITY, copysign, fabs, fmax, sqrt
from libc.stdlib cimport malloc, free
from libc.float cimport DBL_EPSILON

from okl._core._kernels cimport cdot

cdef int MAX_ITER = 100             # pieces of g visited; a few in practice
cdef double FACE_RTOL = 1e-12       # b within this of beta ||a||_inf: the set is a face


cdef inline double cshrink(double u, double top, double delta) noexcept nogil:
    """Soft threshold S_mu(u) = sign(u) max(|u| - mu, 0) for mu = top - delta.

    Computed as delta - (top - |u|): top - |u| is exact for |u| near top
    (Sterbenz), so the result keeps its digits even when mu cancels |u| to far
    below its size (|u| = 1e308, |u| - mu = 0.5).
    """
    cdef double m = delta - (top - fabs(u))
    return copysign(m, u) if m > 0.0 else 0.0


cdef double csimplex_threshold(double* s, Py_ssize_t n, double z, double* top) noexcept nogil:
    """delta with theta = top - delta solving sum_i max(s_i - theta, 0) = z
    (n >= 1, z >= 0); top = max(s).  Overwrites s with the deficits top - s_i.

    Duchi et al.'s pivot search (ICML 2008, Fig. 2) on the deficits t_i:
    a pivot splits the undecided entries into G (those <= pivot) and the
    rest; if the pivot is in the support, so is all of G, else the support
    lies in G without the pivot.  Expected O(n).  On the support,
    delta = (z + sum t_i) / rho: no sum of the s_i, which would cancel.
    """
    cdef Py_ssize_t lo = 0, hi = n, j, k, rho = 0
    cdef double cum = 0.0, pivot, g, m = s[0]
    for j in range(1, n):
        m = fmax(m, s[j])
    top[0] = m
    if z <= 0.0:                      # theta = max(s): everything is cut
        return 0.0
    for j in range(n):
        s[j] = m - s[j]
    while lo < hi:
        s[lo], s[lo + (hi - lo) // 2] = s[lo + (hi - lo) // 2], s[lo]
        pivot = g = s[lo]
        k = lo + 1
        for j in range(lo + 1, hi):   # move G = {t_j <= pivot} to s[lo:k]
            if s[j] <= pivot:
                g += s[j]
                s[j], s[k] = s[k], s[j]
                k += 1
        if (rho + k - lo) * pivot - (cum + g) < z:  # the pivot is in the support
            cum += g
            rho += k - lo
            lo = k
        else:
            lo += 1
            hi = k
    return (z + cum) / rho


cdef double cl1_threshold(const double* v, const double* a, double tau, Py_ssize_t d,
                          double beta, double* work, double* top) noexcept nogil:
    """delta with ||S_mu(u)||_1 = beta for mu = top - delta and u = v + tau a
    (a may be NULL: u = v); top = delta = 0 (mu = 0) when ||u||_1 <= beta.
    work: d doubles."""
    cdef Py_ssize_t j, n = 0
    cdef double u, total = 0.0
    for j in range(d):
        u = fabs(v[j] + tau * a[j]) if a != NULL else fabs(v[j])
        if u > 0.0:
            work[n] = u
            n += 1
            total += u
    top[0] = 0.0
    if total <= beta:
        return 0.0
    return csimplex_threshold(work, n, beta, top)


cdef double csegment(const double* v, const double* a, Py_ssize_t d, double tau,
                     double b, double beta, double* work, double* top, double* delta,
                     double* slope, double* size) noexcept nogil:
    """g(tau) = a.w - b for w = S_mu(v + tau a), the L1-ball projection of v + tau a.

    Also gives mu = top - delta, the slope of g on tau's linear piece and the
    size of the terms of a.w (the rounding scale of g).  Where the ball is
    active, on the support S (signs s_j) mu moves by sum_S s_j a_j / |S| per
    unit of tau.
    """
    cdef Py_ssize_t j, k = 0
    cdef double u, w, g = -b, sa = 0.0, a2 = 0.0
    delta[0] = cl1_threshold(v, a, tau, d, beta, work, top)
    size[0] = fabs(b)
    if top[0] == 0.0:                # inside the ball: w = u, slope ||a||^2
        for j in range(d):
            u = v[j] + tau * a[j]
            g += a[j] * u
            size[0] += fabs(a[j] * u)
            a2 += a[j] * a[j]
        slope[0] = a2
        return g
    for j in range(d):
        u = v[j] + tau * a[j]
        w = cshrink(u, top[0], delta[0])
        if w != 0.0:
            g += a[j] * w
            size[0] += fabs(a[j] * w)
            sa += a[j] if u > 0.0 else -a[j]
            a2 += a[j] * a[j]
            k += 1
    slope[0] = fmax(a2 - sa * sa / k, 0.0) if k else 0.0
    return g


cdef bint chalfspace_l1(const double* v, const double* a, Py_ssize_t d, double b,
                        double beta, double* w_out, double* work) noexcept nogil:
    """The closest point to v with a.w >= b and ||w||_1 <= beta, into w_out.

    w_out may be v.  work: d doubles.  False when the set is empty, i.e.
    b > beta ||a||_inf (up to a relative FACE_RTOL).
    """
    cdef Py_ssize_t j, n, it
    cdef double amax = 0.0, tol, g, top, delta, slope, size, tau, lo, hi, newton, step, prev_step
    cdef double s
    for j in range(d):
        amax = fmax(amax, fabs(a[j]))
    tol = FACE_RTOL * beta * amax
    if b > beta * amax + tol:
        return False
    # tau = 0: the ball projection, if it lies in the halfspace
    tau = 0.0
    g = csegment(v, a, d, tau, b, beta, work, &top, &delta, &slope, &size)
    if g < 0.0 and b >= beta * amax - tol:
        # b = beta ||a||_inf: the set is the face w_j = beta sign(a_j) p_j on
        # J = {|a_j| = ||a||_inf}, p in the simplex; project v onto it
        n = 0
        for j in range(d):
            if fabs(a[j]) == amax:
                work[n] = copysign(v[j], a[j]) / beta
                n += 1
        delta = csimplex_threshold(work, n, 1.0, &top)
        for j in range(d):
            s = 0.0
            if fabs(a[j]) == amax:
                s = copysign(beta * fmax(delta - (top - copysign(v[j], a[j]) / beta), 0.0), a[j])
            w_out[j] = s
        return True
    if g < 0.0:
        # the halfspace is active: find tau > 0 with g(tau) = 0
        lo, hi, step, prev_step = 0.0, INFINITY, INFINITY, INFINITY
        for it in range(MAX_ITER):
            newton = tau - g / slope if slope > 0.0 else INFINITY
            prev_step = step
            if hi == INFINITY:
                tau = newton if newton < INFINITY else 2.0 * lo + beta / amax
                step = INFINITY
            elif lo < newton < hi and 2.0 * fabs(newton - tau) <= prev_step:
                step = fabs(newton - tau)       # Newton, while its steps halve
                tau = newton
            else:
                step = 0.5 * (hi - lo)          # else bisection
                tau = lo + step
            g = csegment(v, a, d, tau, b, beta, work, &top, &delta, &slope, &size)
            # converged: g vanishes to rounding, or so does the next Newton step
            if fabs(g) <= 8.0 * DBL_EPSILON * fmax(size, slope * tau):
                break
            if g < 0.0:
                lo = tau
            else:
                hi = tau
            if hi < INFINITY and hi - lo <= 4.0 * DBL_EPSILON * hi:
                break
    for j in range(d):
        w_out[j] = cshrink(v[j] + tau * a[j], top, delta)
    return True


cdef inline bint cbefore(const AbsIndex* x, const AbsIndex* y) noexcept nogil:
    """x sorts before y: smaller magnitude, ties by lower index."""
    return x.mag < y.mag or (x.mag == y.mag and x.index < y.index)


cdef double ctruncate_smallest(double* w, Py_ssize_t d, double sigma,
                               AbsIndex* work) noexcept nogil:
    """Zero the smallest |w_j| (ties: lower j first) while their squares sum to
    less than sigma (Shen-Dietterich 3.3); return ||w||^2 of what is kept.

    A selection, not a sort: a pivot splits the undecided nonzero entries into
    the smaller ones L and the rest; if L's squares (and the pivot's) fit under
    sigma they are zeroed and the search goes on above the pivot, else the cut
    lies inside L.  Expected O(d).
    """
    cdef Py_ssize_t j, k, lo = 0, hi = 0
    cdef double removed = 0.0, sq
    cdef AbsIndex pivot
    for j in range(d):
        if w[j] != 0.0:
            work[hi].mag = fabs(w[j])
            work[hi].index = j
            hi += 1
    while lo < hi:
        work[lo], work[lo + (hi - lo) // 2] = work[lo + (hi - lo) // 2], work[lo]
        pivot = work[lo]
        sq = 0.0
        k = lo + 1
        for j in range(lo + 1, hi):   # move L = {entries before the pivot} to work[lo+1:k]
            if cbefore(&work[j], &pivot):
                sq += work[j].mag * work[j].mag
                work[j], work[k] = work[k], work[j]
                k += 1
        if removed + sq >= sigma:     # the cut lies inside L
            lo += 1
            hi = k
            continue
        removed += sq
        for j in range(lo + 1, k):
            w[work[j].index] = 0.0
        if removed + pivot.mag * pivot.mag >= sigma:
            break                     # the pivot and all above it stay
        removed += pivot.mag * pivot.mag
        w[pivot.index] = 0.0
        lo = k
    return cdot(w, w, d)


# -- array wrappers (inputs validated by okl.projections; d >= 1) ------------------


def l2_ball(const double[::1] v, double beta):
    """v scaled into the ball ||w||_2 <= beta, as a new array."""
    cdef double norm = sqrt(cdot(&v[0], &v[0], v.shape[0]))
    out = np.array(v, dtype=np.float64)
    if norm > beta:
        out *= beta / norm
    return out


def l1_ball(const double[::1] v, double beta):
    """The projection of v onto ||w||_1 <= beta, as a new array."""
    cdef Py_ssize_t j, d = v.shape[0]
    out_arr = np.empty(d, dtype=np.float64)
    cdef double[::1] out = out_arr
    cdef double[::1] work = np.empty(d, dtype=np.float64)
    cdef double top, delta
    with nogil:
        delta = cl1_threshold(&v[0], NULL, 0.0, d, beta, &work[0], &top)
        for j in range(d):
            out[j] = cshrink(v[j], top, delta)
    return out_arr


def halfspace_l2_ball(const double[::1] v, const double[::1] a, double b, double beta):
    """The closest point to v with a.w >= b, ||w||_2 <= beta; None when empty."""
    cdef Py_ssize_t d = v.shape[0]
    cdef double cv, ca
    if not chalfspace_l2(cdot(&v[0], &v[0], d), cdot(&a[0], &v[0], d),
                         cdot(&a[0], &a[0], d), b, beta, &cv, &ca):
        return None
    return cv * np.asarray(v) + ca * np.asarray(a)


def halfspace_l1_ball(const double[::1] v, const double[::1] a, double b, double beta):
    """The closest point to v with a.w >= b, ||w||_1 <= beta; None when empty."""
    cdef Py_ssize_t d = v.shape[0]
    out_arr = np.empty(d, dtype=np.float64)
    cdef double[::1] out = out_arr
    cdef double[::1] work = np.empty(d, dtype=np.float64)
    cdef bint ok
    with nogil:
        ok = chalfspace_l1(&v[0], &a[0], d, b, beta, &out[0], &work[0])
    return out_arr if ok else None


def truncate_smallest(const double[::1] w, double sigma):
    """w with its smallest entries zeroed (see ctruncate_smallest), as a new array."""
    cdef Py_ssize_t d = w.shape[0]
    out_arr = np.array(w, dtype=np.float64)
    cdef double[::1] out = out_arr
    cdef AbsIndex* work = <AbsIndex*>malloc(d * sizeof(AbsIndex))
    if work == NULL:
        raise MemoryError()
    try:
        with nogil:
            ctruncate_smallest(&out[0], d, sigma, work)
    finally:
        free(work)
    return out_arr
