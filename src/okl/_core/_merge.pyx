# BSGD budget merging for the Gaussian kernel: the merge rule, its table, and
# their Python face (tests, benchmarks).  The derivation is docs/budget.md,
# section 1; the readable twin is okl/_numpy/merge.py.
#
# For same-sign coefficients with |c_m| <= |c_n|, mu = |c_m| / (|c_m| + |c_n|)
# in (0, 1/2], k = K(x_m, x_n) = e^-g, the best merged point
# z = h x_m + (1 - h) x_n has h = 1 / (1 + e^-t), t the root on the rising
# branch of
#     Phi(t) = t - g tanh(t / 2) - log(mu / (1 - mu)),
# which is concave and increasing left of it: Newton from t = L - g (left of
# the root) climbs to it monotonically, in 3-9 steps.  The degradation is
# c_m^2 rho(mu, k); RHO tabulates rho on a (NM + 1) x (NK + 1) grid of
# mu in [0, 1/2], k in [0, 1], built once at import by the same solver.
#
# References: Wang, Crammer and Vucetic, "Breaking the curse of kernelization:
# budgeted stochastic gradient descent for large-scale SVM training",
# JMLR 13, 2012, Section 4.3.
import numpy as np

from libc.math cimport expm1, fabs, log, INFINITY

from okl._core._kernels cimport okl_exp_nonpos, okl_exp_scaled, okl_sqdists


cdef extern from "_merge.h" nogil:
    Py_ssize_t okl_merge_argmin_abs(Py_ssize_t n, const double* c)
    Py_ssize_t okl_merge_argmin(Py_ssize_t n, const double* w)
    void okl_merge_rho(Py_ssize_t n, double cm, const double* c, const double* T,
                       int nm, int nk, double* w)


cdef enum:
    NM = 32            # mu cells on [0, 1/2]
    NK = 128           # k cells on [0, 1]
# The largest |bilinear interpolation - rho| measured on the grid 8x finer
# and at random points is 3.0e-3 (near mu = 1/2, k = e^-2, where the best h
# leaves the midpoint); TOL doubles it.  A partner is solved exactly unless its
# tabulated rho exceeds the best exact rho by more than TOL.
cdef double TOL = 6e-3

cdef double RHO[(NM + 1) * (NK + 1)]

TABLE_SHAPE = (NM + 1, NK + 1)
TABLE_TOL = TOL


cdef double csolve_t(double L, double g) noexcept nogil:
    """The root t <= 0 of t - g tanh(t / 2) = L (L <= 0) on the rising branch, by Newton.

    From t = L - g, left of the root; each step stays left (Phi is concave
    there) and climbs, so the loop stops when a step no longer climbs.  With
    u = 1 / (1 + e^t): tanh(t / 2) = 1 - 2u and sech^2(t / 2) / 2 = 2 u (1 - u).
    """
    cdef double t = L - g, tn, u
    cdef int it
    for it in range(100):
        u = 1.0 / (1.0 + okl_exp_nonpos(t))
        tn = t - (t - g * (1.0 - 2.0 * u) - L) / (1.0 - 2.0 * g * u * (1.0 - u))
        if tn > 0.0:
            tn = 0.0
        if not tn > t:
            break
        t = tn
    return t


cdef void cmerge_pair(double cm, double cn, double g,
                      double* h_out, double* cz_out, double* loss_out) noexcept nogil:
    """The best merge of (x_m, c_m) and a same-sign (x_n, c_n), g = gamma ||x_m - x_n||^2.

    With a the smaller coefficient, b the larger, c0 = b + a k (z at the larger
    one's point) and dc = c_z - c0, the degradation
    a^2 + b^2 + 2 a b k - c_z^2 is written a^2 (1 - k^2) - dc (2 c0 + dc),
    which loses no digits when |b| >> |a|.  g >= 700 (k < 1e-304): h = 0.
    """
    cdef bint flip = fabs(cm) > fabs(cn)
    cdef double a = cn if flip else cm, b = cm if flip else cn
    cdef double h = 0.0, km1 = expm1(-g), k = 1.0 + km1, c0, dc, e
    if g > 0.0 and g < 700.0:
        e = okl_exp_nonpos(csolve_t(log(a / b), g))
        h = e / (1.0 + e)
    c0 = b + a * k
    # h = 0 puts z at x_n: K(x_n, z) - 1 = 0, also when g overflowed to inf (not inf * 0)
    dc = a * (okl_exp_nonpos(-g * (1.0 - h) * (1.0 - h)) - k) + (
        b * expm1(-g * h * h) if h != 0.0 else 0.0)
    h_out[0] = 1.0 - h if flip else h
    cz_out[0] = c0 + dc
    loss_out[0] = -a * a * km1 * (2.0 + km1) - dc * (2.0 * c0 + dc)      # 1 - k^2 = -km1 (2 + km1)


cdef double crho_node(double mu, double k) noexcept nogil:
    """rho(mu, k) exactly: the degradation of (mu, 1 - mu) at kernel value k, over mu^2."""
    cdef double h, cz, loss
    if k <= 0.0:
        return 1.0
    if mu == 0.0:                   # the limit mu -> 0: 1 - k^2 (1 + 2 g)
        return 1.0 - k * k * (1.0 - 2.0 * log(k))
    cmerge_pair(mu, 1.0 - mu, -log(k), &h, &cz, &loss)
    return loss / (mu * mu)


cdef inline double crho(double mu, double k) noexcept nogil:
    """rho(mu, k) by bilinear interpolation in RHO (mu in [0, 1/2], k in [0, 1])."""
    cdef double x = mu * (2 * NM), y = k * NK, fx, fy
    cdef int i = <int>x, j = <int>y
    cdef const double* p
    if i > NM - 1:
        i = NM - 1
    if j > NK - 1:
        j = NK - 1
    fx = x - i
    fy = y - j
    p = RHO + i * (NK + 1) + j
    return (1.0 - fx) * ((1.0 - fy) * p[0] + fy * p[1]) + fx * ((1.0 - fy) * p[NK + 1]
                                                              + fy * p[NK + 2])


cdef void cbuild() noexcept nogil:
    cdef int i, j
    for i in range(NM + 1):
        for j in range(NK + 1):
            RHO[i * (NK + 1) + j] = crho_node(i / (2.0 * NM), j / <double>NK)


cbuild()


cdef Py_ssize_t cmerge_find(const double* centers, const double* coef,
                            Py_ssize_t n, Py_ssize_t d, double gamma, double* work,
                            bint row_ready, Py_ssize_t* m_out, double* h_out, double* cz_out,
                            double* loss_out, bint refine=True) noexcept nogil:
    """Choose the merge that takes n centres to n - 1 (Gaussian kernel); return the partner.

    m_out receives argmin |coef| (the first on ties); the return value is the
    partner, or -1 when x_m is removed instead (no other centre has the sign
    of c_m, or c_m == 0: removal is then exact).  The merged point is
    z = h x_m + (1 - h) x_partner with raw coefficient cz; loss_out is the
    weight degradation (raw units squared; c_m^2 for a removal).  work holds
    n doubles; nothing is allocated.  With row_ready, work[:n - 1] already
    holds K(x_i, x_{n-1}) (the newcomer's kernel row, which the step computed
    to predict): when m is the newcomer, as in nearly every step, that row is
    used and no distance is computed.

    One kernel row from x_m gives every k, the table every rho; the partner
    of least tabulated rho is solved exactly first, then (refine) every other
    partner whose tabulated rho is within TOL of the best exact one.  Without
    refine the partner of least tabulated rho is taken: its degradation is
    within TOL c_m^2 of the least.  The loops over the centres are _merge.h's,
    vectorised.
    """
    cdef Py_ssize_t i, m, first, best
    cdef double cm, h, cz, loss, limit
    cdef double best_h, best_cz, best_loss
    m = okl_merge_argmin_abs(n, coef)
    m_out[0] = m
    cm = coef[m]
    h_out[0] = 0.0
    cz_out[0] = 0.0
    loss_out[0] = cm * cm
    if cm == 0.0:
        return -1
    if not (row_ready and m == n - 1):
        okl_sqdists(n, d, centers, centers + m * d, work)
        okl_exp_scaled(n, gamma, work)
    okl_merge_rho(n, cm, coef, RHO, NM, NK, work)
    work[m] = INFINITY
    first = okl_merge_argmin(n, work)
    if first < 0:
        return -1
    best = first
    cmerge_pair(cm, coef[first], gamma * csqdist(centers + m * d, centers + first * d, d),
                &best_h, &best_cz, &best_loss)
    limit = best_loss / (cm * cm) + TOL if refine else -INFINITY
    for i in range(n):
        if work[i] < limit and i != first:
            cmerge_pair(cm, coef[i], gamma * csqdist(centers + m * d, centers + i * d, d),
                        &h, &cz, &loss)
            if loss < best_loss:
                best, best_h, best_cz, best_loss = i, h, cz, loss
    h_out[0] = best_h
    cz_out[0] = best_cz
    loss_out[0] = best_loss
    return best


cdef inline double csqdist(const double* x, const double* u, Py_ssize_t d) noexcept nogil:
    """||x - u||_2^2, summed directly."""
    cdef double s
    okl_sqdists(1, d, x, u, &s)
    return s


# -- Python face -------------------------------------------------------------------------

def rho_table():
    """The table of rho(mu, k): row i is mu = i / (2 NM), column j is k = j / NK (a copy)."""
    return np.array(<double[:(NM + 1) * (NK + 1)]>RHO).reshape(TABLE_SHAPE)


def rho(double mu, double k):
    """rho(mu, k) interpolated in the table, mu in [0, 1/2], k in [0, 1]."""
    if not (0.0 <= mu <= 0.5 and 0.0 <= k <= 1.0):
        raise ValueError(f"rho needs mu in [0, 1/2] and k in [0, 1], got {mu}, {k}.")
    return crho(mu, k)


def rho_exact(double mu, double k):
    """rho(mu, k) from the exact solver (the table's node values)."""
    if not (0.0 <= mu <= 0.5 and 0.0 <= k <= 1.0):
        raise ValueError(f"rho needs mu in [0, 1/2] and k in [0, 1], got {mu}, {k}.")
    return crho_node(mu, k)


def merge_pair(double cm, double cn, double g):
    """(h, c_z, degradation) of merging (c_m, x_m) and a same-sign partner (c_n, x_n).

    g is gamma ||x_m - x_n||_2^2 (Gaussian kernel); z = h x_m + (1 - h) x_n.
    """
    cdef double h, cz, loss
    if not cm * cn > 0.0:
        raise ValueError("merge_pair merges coefficients of the same sign only "
                         "(mu = c_m / (c_m + c_n) in (0, 1)).")
    if not g >= 0.0:
        raise ValueError(f"g = gamma ||x_m - x_n||^2 must be >= 0, got {g}.")
    cmerge_pair(cm, cn, g, &h, &cz, &loss)
    return h, cz, loss


def merge_find(const double[:, ::1] centers,   # IN (n, d)
               const double[::1] coef,         # IN (n,) raw coefficients
               double gamma):
    """(m, partner, h, c_z, degradation): the merge that takes n centres to n - 1.

    partner is -1 when x_m is removed instead (no centre of the sign of c_m,
    or c_m == 0).  The merged point is z = h x_m + (1 - h) x_partner.
    """
    cdef Py_ssize_t n = centers.shape[0], d = centers.shape[1], m = 0, partner
    cdef double h, cz, loss
    if coef.shape[0] != n or n < 1:
        raise ValueError(f"coef has {coef.shape[0]} entries for {n} centres (need n >= 1).")
    cdef double[::1] work = np.empty(n, dtype=np.float64)
    with nogil:
        partner = cmerge_find(&centers[0, 0], &coef[0], n, d, gamma, &work[0], False,
                              &m, &h, &cz, &loss)
    return int(m), int(partner), h, cz, loss


def merge_step(centers, coef, double gamma):
    """Apply one merge as KernelExpansion does: (centers', coef', degradation), n - 1 rows.

    z and c_z go to the partner's slot, then the last row moves into slot m.
    """
    centers = np.array(centers, dtype=np.float64, order="C")
    coef = np.array(coef, dtype=np.float64)
    m, partner, h, cz, loss = merge_find(centers, coef, gamma)
    cdef double[:, ::1] c_view = centers
    cdef Py_ssize_t d = centers.shape[1], last = centers.shape[0] - 1
    if partner >= 0:
        cmerge_point(&c_view[m, 0], &c_view[partner, 0], d, h, &c_view[partner, 0])
        coef[partner] = cz
    centers[m] = centers[last]
    coef[m] = coef[last]
    return centers[:last].copy(), coef[:last].copy(), loss
