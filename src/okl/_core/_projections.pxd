# Exact Euclidean projections onto norm balls and onto their intersection with
# a halfspace {w : a.w >= b}: the nogil cores of okl.projections, cimported by
# the passive-aggressive loops (_pa.pyx).  Every function reports an empty
# constraint set by returning False; none allocates (callers pass work space).
from libc.math cimport sqrt


cdef struct AbsIndex:     # one entry of a weight vector, sorted by (mag, index)
    double mag
    Py_ssize_t index


cdef double cl1_threshold(const double* v, const double* a, double tau, Py_ssize_t d,
                          double beta, double* work, double* top) noexcept nogil
cdef bint chalfspace_l1(const double* v, const double* a, Py_ssize_t d, double b,
                        double beta, double* w_out, double* work) noexcept nogil
cdef double ctruncate_smallest(double* w, Py_ssize_t d, double sigma,
                               AbsIndex* work) noexcept nogil


cdef inline bint chalfspace_l2(double vv, double av, double aa, double b, double beta,
                               double* cv, double* ca) noexcept nogil:
    """The closest point to v with a.w >= b and ||w||_2 <= beta, as w = cv v + ca a.

    Takes vv = ||v||^2, av = a.v, aa = ||a||^2 (O(1) work).  The KKT conditions
    give w = (v + tau a) / Z with tau >= 0, Z >= 1 (Shen-Dietterich Lemma 3.2
    for any b): try the ball alone (tau = 0), then the halfspace alone (Z = 1,
    Lemma 3.2's A <= B), then both constraints active.  False when the set is
    empty, i.e. b > beta ||a||.  b and beta are never squared (no overflow or
    underflow of beta^2 ||a||^2 - b^2 for radii far from 1).
    """
    cdef double norm_v, norm_a, shrink, A, gap, sqrt_B, Z
    norm_a = sqrt(aa)
    if b > beta * norm_a:
        return False
    # tau = 0: the ball projection, if it lies in the halfspace
    norm_v = sqrt(vv)
    shrink = 1.0 if norm_v <= beta else beta / norm_v
    if shrink * av >= b:
        cv[0] = shrink
        ca[0] = 0.0
        return True
    # here aa > 0 (a = 0 leaves all or nothing), and b > -beta ||a|| (else the ball
    # lies in the halfspace): B = beta^2 ||a||^2 - b^2 = (beta ||a|| - b)(beta ||a|| + b)
    A = vv * aa - av * av           # ||a||^2 ||v - (a.v/aa) a||^2
    gap = beta * norm_a - b
    sqrt_B = sqrt(gap if gap > 0.0 else 0.0) * sqrt(beta * norm_a + b)
    if av < b and sqrt(A if A > 0.0 else 0.0) <= sqrt_B:
        cv[0] = 1.0                 # Z = 1: the halfspace projection is in the ball
        ca[0] = (b - av) / aa
        return True
    if gap <= 0.0:                  # b = beta ||a||: the single point b a / aa
        cv[0] = 0.0
        ca[0] = b / aa
        return True
    Z = sqrt(A if A > 0.0 else 0.0) / sqrt_B
    if Z < 1.0:                     # rounding; Z > 1 in exact arithmetic here
        Z = 1.0
    cv[0] = 1.0 / Z
    ca[0] = (b - av / Z) / aa       # tau / Z with tau = (b Z - a.v) / ||a||^2
    return True
