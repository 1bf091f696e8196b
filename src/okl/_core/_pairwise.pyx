"""Online pairwise learning (Lin-Lei-Zhang-Zhou, Algorithm 1): one step, written once.

Step t >= 2 averages the loss gradient over the points stored before it:
    f_{t+1} = f_t - (eta_t / m) sum_{j < t} V'_-(r(y_t, y_j), f_t(x_t, x_j)) K_{(x_t, x_j)}
(m = t - 1, or the reservoir size).  Each step is ONE fused pass over the
stored points: a block of rows is read from memory once, and while it is in
cache it gives the pair values f_t(x_t, x_j), the loss slopes and their
contribution to the gradient.  After its step, x_t is written to the slot the
caller chose (`slot[i]`: the next free slot, a reservoir slot, or -1).

Pair kernels (one step function each, `c*_step`):
    linear      f(x, x') = w.(x - x')                      O(m d) per step
    metric      f(x, x') = (x - x')^T M (x - x')           O(m d^2)
    difference  f(x, x') = g(x) - g(x'), g a kernel expansion with one centre
                per step; the Gram matrix of the stored points and the values
                g(x_j) are cached, so a step costs t kernel values and O(m^2)
                multiply-adds (8 m^2 bytes of memory).
The squared loss with the linear pair kernel and the difference reducer needs
only the running moments of (x, y): `cmoments_step`, O(d^2) per step.

A step checks everything before its first write: a step whose model would not
be finite changes nothing.  Its callers: the nogil loop of a chunk
(`linear_chunk`, `metric_chunk`, `difference_chunk`, `linear_moments_chunk`)
and `PairEvents` (one event, the step size and the reservoir slot of step t
computed in C: `cstep_size`, `creservoir_slot`).
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport NAN, fmax, isfinite, pow
from libc.string cimport memcmp, memcpy
from scipy.linalg.cython_blas cimport dgemm

from okl._core._signals cimport cinterrupted, craise_pending
from okl._core._kernels cimport cdot, ckernel_row_norms, cself, okl_dots
from okl._core._losses cimport Loss, LossSpec, cdloss, cdloss_right, cis_margin
from okl._core._expansion cimport KernelExpansion
from okl._core._pointwise cimport Events, cready, row_is_finite
from okl._core._warmup cimport Warmup
from okl._core._pointwise import MISS

cnp.import_array()


cpdef enum Reducer:
    SIGN = 0          # r = sign(y - y')               (ranking)
    DIFFERENCE = 1    # r = y - y'                     (regression of differences)
    DISSIMILAR = 2    # r = +1 if y != y' else -1      (metric learning, y = class codes)


cpdef enum PairKind:
    LINEAR = 0        # LinearPairModel
    METRIC = 1        # MetricPairModel
    DIFFERENCE_KERNEL = 2   # DifferencePairModel
    MOMENTS = 3       # MomentsPairModel


# Rows per block: a block of stored points stays in L2 between its two uses.
cdef Py_ssize_t BLOCK_DOUBLES = 8192
# The metric kernel's products (block rows x d x d multiply-adds) stay under OpenBLAS's
# threshold for one thread (65536 x 4): no worker thread wakes up for a step, and none can
# stall it on busy cores.  Beyond d = 256 they cannot: `PairEvents.blas_threads`.
cdef Py_ssize_t GEMM_ONE_THREAD = 65536


cdef inline Py_ssize_t cblock(Py_ssize_t d, bint metric) noexcept nogil:
    """Stored points per block of a step."""
    if metric:
        return max(1, min(BLOCK_DOUBLES // d, GEMM_ONE_THREAD // (d * d)))
    return max(1, BLOCK_DOUBLES // d)


cdef struct PairRule:
    LossSpec loss
    bint margin
    Reducer reducer


cdef inline PairRule crule(int reducer, LossSpec loss) noexcept:
    cdef PairRule rule
    rule.loss, rule.margin, rule.reducer = loss, cis_margin(loss.kind), <Reducer>reducer
    return rule


cdef inline double creduce(Reducer kind, double y, double yp) noexcept nogil:
    """r(y, y')."""
    if kind == SIGN:
        return <double>((y > yp) - (y < yp))
    if kind == DIFFERENCE:
        return y - yp
    if kind == DISSIMILAR:
        return 1.0 if y != yp else -1.0
    return NAN


cdef inline double cslope(const PairRule* rule, double y, double yp, double a) noexcept nogil:
    """V'_-(r(y, y'), a): the left derivative in a of phi(r a) (margin) or psi(a - r)."""
    cdef double r = creduce(rule.reducer, y, yp), z
    if not rule.margin:
        return cdloss(&rule.loss, a - r)
    z = r * a
    # for r < 0 a step left in a is a step right in z: phi's right slope
    return r * (cdloss_right(&rule.loss, z) if r < 0.0 else cdloss(&rule.loss, z))


cdef inline double cstep_size(double eta1, double theta, double t) noexcept nogil:
    """eta_t = eta_1 max(t - 1, 1)^-theta (`okl.schedules.step_sizes` of the estimator)."""
    return eta1 * pow(fmax(t - 1.0, 1.0), -theta)


cdef inline Py_ssize_t creservoir_slot(unsigned long long t, Py_ssize_t buffer,
                                       unsigned long long seed) noexcept nogil:
    """The slot of step t's point: `okl._pair_models.reservoir_slots` for one t (buffer 0:
    every point is kept)."""
    cdef unsigned long long z, j
    if buffer <= 0 or t <= <unsigned long long>buffer:
        return <Py_ssize_t>t - 1
    z = seed + t * 0x9E3779B97F4A7C15ULL
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    j = (z ^ (z >> 31)) % t
    return <Py_ssize_t>j if j < <unsigned long long>buffer else -1


cdef inline void crow_dots(const double* H, Py_ssize_t rows, Py_ssize_t d,
                           const double* v, double* out) noexcept nogil:
    """out[j] = H[j] . v for the `rows` rows of H (C order, d columns): four rows at a
    time, one call for the block (`okl_dots`, the speed of a one-thread dgemv)."""
    okl_dots(rows, d, H, v, out)


cdef inline void crows_axpy(const double* H, Py_ssize_t rows, Py_ssize_t d,
                            const double* g, double* acc) noexcept nogil:
    """acc += sum_j g[j] H[j] over the `rows` rows of H, four rows per pass over acc
    (one load and store of acc per four rows: a row at a time waited on them)."""
    cdef Py_ssize_t j = 0, k
    cdef const double* h0
    cdef const double* h1
    cdef const double* h2
    cdef const double* h3
    cdef double g0, g1, g2, g3
    while j + 4 <= rows:
        h0 = H + j * d
        h1, h2, h3 = h0 + d, h0 + 2 * d, h0 + 3 * d
        g0, g1, g2, g3 = g[j], g[j + 1], g[j + 2], g[j + 3]
        for k in range(d):
            acc[k] += (g0 * h0[k] + g1 * h1[k]) + (g2 * h2[k] + g3 * h3[k])
        j += 4
    while j < rows:
        h0 = H + j * d
        g0 = g[j]
        for k in range(d):
            acc[k] += g0 * h0[k]
        j += 1


cdef inline Py_ssize_t cstore(double* H, double* yh, Py_ssize_t m, Py_ssize_t slot,
                              const double* x, double y, Py_ssize_t d) noexcept nogil:
    """x_t to its slot (-1: not stored); the points stored after it."""
    if slot < 0:
        return m
    memcpy(H + slot * d, x, d * sizeof(double))
    yh[slot] = y
    return m + 1 if slot == m else m


# ---- the steps -------------------------------------------------------------------------------

cdef Py_ssize_t clinear_step(double* H, double* yh, Py_ssize_t m, double* w, Py_ssize_t d,
                             const double* x, double yt, double eta, Py_ssize_t slot,
                             const PairRule* rule, double* gbuf, Py_ssize_t block,
                             double* acc) noexcept nogil:
    """One step of the linear pair kernel: the points stored after it, or -1 (nothing
    written) when w would not be finite.  Work space: gbuf (block), acc (d)."""
    cdef Py_ssize_t j, k, b0, rows
    cdef double wx, G, c
    if m > 0:
        wx = cdot(w, x, d)
        G = 0.0
        for k in range(d):
            acc[k] = 0.0
        b0 = 0
        while b0 < m:
            rows = min(block, m - b0)
            crow_dots(H + b0 * d, rows, d, w, gbuf)
            for j in range(rows):
                gbuf[j] = cslope(rule, yt, yh[b0 + j], wx - gbuf[j])
                G += gbuf[j]
            crows_axpy(H + b0 * d, rows, d, gbuf, acc)
            b0 += rows
        # sum_j g_j (x_t - x_j) = G x_t - sum_j g_j x_j
        c = eta / m
        for k in range(d):
            acc[k] = w[k] - c * (G * x[k] - acc[k])
            if not isfinite(acc[k]):
                return -1
        memcpy(w, acc, d * sizeof(double))
    return cstore(H, yh, m, slot, x, yt, d)


cdef int cmoments_step(double* S, const double* origin, double* w, Py_ssize_t d,
                       const double* x, double y, double eta, double* z,
                       double* grad) noexcept nogil:
    """One step of `linear_moments_chunk`: 0, or -1 (nothing written) when w would not be
    finite.  S is (d+2, d+2) in C order; work space: z (d+2), grad (d)."""
    cdef Py_ssize_t e = d + 2, k, l
    cdef double cnt, wx, wS1, yt, c
    cdef double* zx = z + 1
    z[0] = 1.0
    for k in range(d):
        zx[k] = x[k] - origin[k]
    yt = y - origin[d]
    z[d + 1] = yt
    cnt = S[0]
    if cnt > 0.0:
        wx = cdot(w, zx, d)
        wS1 = cdot(w, S + 1, d)
        for k in range(d):
            grad[k] = (zx[k] * (cnt * wx - wS1) - S[1 + k] * wx
                       + cdot(S + (1 + k) * e + 1, w, d)
                       - zx[k] * (cnt * yt - S[d + 1]) + yt * S[1 + k]
                       - S[(1 + k) * e + d + 1])
        c = eta / cnt
        for k in range(d):
            grad[k] = w[k] - c * grad[k]
            if not isfinite(grad[k]):
                return -1
        memcpy(w, grad, d * sizeof(double))
    for k in range(e):
        for l in range(e):
            S[k * e + l] += z[k] * z[l]
    return 0


cdef Py_ssize_t cmetric_step(double* H, double* yh, Py_ssize_t m, double* M, Py_ssize_t d,
                             const double* x, double yt, double eta, Py_ssize_t slot,
                             const PairRule* rule, double* D, double* P, double* G,
                             Py_ssize_t block) noexcept nogil:
    """One step of the metric pair kernel: the points stored after it, or -1 (nothing
    written) when M would not be finite.  Work space: D, P (block, d), G (d, d).

    Per block of stored points: D = x_t - x_j (rows), P = D M (dgemm), the pair
    values rowwise D.P, the slopes, then G += D^T diag(g) D (dgemm); M moves by
    the symmetric part of G, so it stays exactly symmetric."""
    cdef Py_ssize_t j, k, l, b0, rows
    cdef double c, gj, a, mkl
    cdef double* Dj
    cdef double* Pj
    cdef int bd = <int>d, brows
    cdef double one = 1.0, zero = 0.0
    if m > 0:
        for k in range(d * d):
            G[k] = 0.0
        b0 = 0
        while b0 < m:
            rows = min(block, m - b0)
            brows = <int>rows
            for j in range(rows):
                for k in range(d):
                    D[j * d + k] = x[k] - H[(b0 + j) * d + k]
            # column-major view: P^T = M D^T (M symmetric)
            dgemm(b"N", b"N", &bd, &brows, &bd, &one, M, &bd, D, &bd, &zero, P, &bd)
            for j in range(rows):
                Dj = D + j * d
                Pj = P + j * d
                gj = cslope(rule, yt, yh[b0 + j], cdot(Dj, Pj, d))
                for k in range(d):
                    Pj[k] = gj * Dj[k]
            # column-major view: G^T += D^T (g D)
            dgemm(b"N", b"T", &bd, &bd, &brows, &one, D, &bd, P, &bd, &one, G, &bd)
            b0 += rows
        # the new M in G's place, pair by pair: M_kl - c (G_kl + G_lk) and its mirror
        c = 0.5 * eta / m
        for k in range(d):
            for l in range(k, d):
                a = G[k * d + l] + G[l * d + k]
                mkl = M[k * d + l] - c * a
                G[l * d + k] = M[l * d + k] - c * a
                G[k * d + l] = mkl
                if not (isfinite(mkl) and isfinite(G[l * d + k])):
                    return -1
        memcpy(M, G, d * d * sizeof(double))
    return cstore(H, yh, m, slot, x, yt, d)


cdef double cdifference_values(KernelExpansion g, const Py_ssize_t* idx, Py_ssize_t m,
                               const double* x, double* kvec) noexcept nogil:
    """g(x_t), and kvec[j] = k(x_j, x_t) for the m stored points (read off g's kernel row)."""
    cdef Py_ssize_t j
    cdef double gx = g.cpredict(x)     # g.kbuf[c] = k(c-th centre, x_t)
    for j in range(m):
        kvec[j] = g.kbuf[idx[j]]
    return gx


cdef Py_ssize_t cdifference_step(KernelExpansion g, Py_ssize_t* idx, double* yh, double* s,
                                 double* gram, Py_ssize_t cap, Py_ssize_t m,
                                 const double* x, double xx, double gx, const double* kvec,
                                 double yt, double eta, Py_ssize_t slot,
                                 const PairRule* rule, double* gbuf,
                                 double* Kg) noexcept nogil:
    """One step of the difference pair kernel from gx = g(x_t) and kvec
    (`cdifference_values`): the points stored after it, or -1 (nothing written) when g
    would not be finite.  g has room for one more centre; work space: gbuf, Kg (m).

    It moves g <- g - c (G k(x_t, .) - sum_j g_j k(x_j, .)), c = eta_t / m,
    G = sum_j g_j, adding x_t as a centre; the cached g(x_j) follow with one
    symmetric matrix-vector product with the Gram matrix of the stored points."""
    cdef Py_ssize_t j
    cdef double kself = cself(&g.kernel, xx), G = 0.0, dgx = 0.0, c = 0.0, gnew
    if m > 0:
        for j in range(m):
            gbuf[j] = cslope(rule, yt, yh[j], gx - s[j])
            G += gbuf[j]
            dgx += gbuf[j] * kvec[j]          # sum_j g_j k(x_j, x_t)
        c = eta / m
        for j in range(m):
            Kg[j] = s[j] - c * (G * kvec[j] - cdot(gram + j * cap, gbuf, m))
            if not (isfinite(Kg[j]) and isfinite(g.coef[idx[j]] + c * gbuf[j] / g.scale)):
                return -1
    gnew = gx - c * (G * kself - dgx)  # g_{t+1}(x_t)
    if not (isfinite(gnew) and isfinite(-c * G / g.scale)):
        return -1
    for j in range(m):
        s[j] = Kg[j]
        g.cadd_coef(idx[j], c * gbuf[j])
    g.cadd(x, xx, -c * G)
    if slot < 0:
        return m
    idx[slot] = g.n_support - 1
    yh[slot] = yt
    s[slot] = gnew
    for j in range(m):
        gram[slot * cap + j] = kvec[j]
        gram[j * cap + slot] = kvec[j]
    gram[slot * cap + slot] = kself
    return m + 1 if slot == m else m


# ---- the chunks ------------------------------------------------------------------------------

def linear_chunk(double[:, ::1] H,            # IN/OUT (capacity, d) stored points x_j
                 double[::1] yh,              # IN/OUT (capacity,) their targets y_j
                 Py_ssize_t m,                # IN points stored before the chunk
                 double[::1] w,               # IN/OUT (d,) f(x, x') = w.(x - x')
                 const double[:, ::1] X,      # IN (n, d)
                 const double[::1] y,         # IN (n,)
                 const double[::1] eta,       # IN (n,) eta_t
                 const Py_ssize_t[::1] slot,  # IN (n,) slot of x_t after its step, -1: none
                 int reducer, LossSpec loss):
    """Linear pair kernel; return (points stored, -1 or the first step that diverged)."""
    cdef PairRule rule = crule(reducer, loss)
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, stored
    cdef Py_ssize_t block = cblock(d, False), failed = -1, work = 0
    cdef bint interrupted = False
    gbuf_arr = np.empty(block, dtype=np.float64)
    acc_arr = np.empty(d, dtype=np.float64)
    cdef double[::1] gbuf = gbuf_arr, acc = acc_arr
    if n == 0:
        return m, failed
    with nogil:
        for i in range(n):
            if cinterrupted(&work, m * d):
                interrupted = True
                break
            stored = clinear_step(&H[0, 0], &yh[0], m, &w[0], d, &X[i, 0], y[i], eta[i],
                                  slot[i], &rule, &gbuf[0], block, &acc[0])
            if stored < 0:
                failed = i
                break
            m = stored
    if interrupted:
        craise_pending()
    return m, failed


def linear_moments_chunk(double[:, ::1] S,         # IN/OUT (d+2, d+2) sum_j z_j z_j^T
                         const double[::1] origin,  # IN (d+1,) (x_1, y_1)
                         double[::1] w,             # IN/OUT (d,)
                         const double[:, ::1] X,    # IN (n, d)
                         const double[::1] y,       # IN (n,)
                         const double[::1] eta):    # IN (n,) eta_t
    """Squared loss, linear pair kernel, r = y - y': the exact average from running moments.

    With z_j = (1, x_j - x_1, y_j - y_1) and S = sum_{j<t} z_j z_j^T, whose
    blocks are n = S[0, 0], S1, Sy (first row), S2, Syx, the gradient sum is
        sum_j (w.(x - x_j) - (y - y_j)) (x - x_j)
          = x (n w.x - w.S1) - S1 (w.x) + S2 w - [x (n y - Sy) - y S1 + Syx]
    in the shifted coordinates, which keep the sums free of cancellation when
    the data sit far from 0.  O(d^2) per step.  Return -1 or the first step
    that diverged.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False
    z_arr = np.empty(d + 2, dtype=np.float64)
    grad_arr = np.empty(d, dtype=np.float64)
    cdef double[::1] z = z_arr, grad = grad_arr
    if n == 0:
        return failed
    with nogil:
        for i in range(n):
            if cinterrupted(&work, (d + 2) * (d + 2)):
                interrupted = True
                break
            if cmoments_step(&S[0, 0], &origin[0], &w[0], d, &X[i, 0], y[i], eta[i], &z[0],
                             &grad[0]) < 0:
                failed = i
                break
    if interrupted:
        craise_pending()
    return failed


def metric_chunk(double[:, ::1] H,            # IN/OUT (capacity, d) stored points x_j
                 double[::1] yh,              # IN/OUT (capacity,) their targets y_j
                 Py_ssize_t m,                # IN points stored before the chunk
                 double[:, ::1] M,            # IN/OUT (d, d) symmetric metric
                 const double[:, ::1] X,      # IN (n, d)
                 const double[::1] y,         # IN (n,)
                 const double[::1] eta,       # IN (n,) eta_t
                 const Py_ssize_t[::1] slot,  # IN (n,) slot of x_t after its step, -1: none
                 int reducer, LossSpec loss):
    """Metric pair kernel ((x-x').(u-u'))^2: f = D^T M D with D = x - x' (`cmetric_step`).
    Return (points stored, -1 or the first step that diverged)."""
    cdef PairRule rule = crule(reducer, loss)
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, stored
    cdef Py_ssize_t block = cblock(d, True), failed = -1, work = 0
    cdef bint interrupted = False
    D_arr = np.empty((block, d), dtype=np.float64)
    P_arr = np.empty((block, d), dtype=np.float64)
    G_arr = np.empty((d, d), dtype=np.float64)
    cdef double[:, ::1] D = D_arr, P = P_arr, G = G_arr
    if n == 0:
        return m, failed
    with nogil:
        for i in range(n):
            if cinterrupted(&work, m * d * d):
                interrupted = True
                break
            stored = cmetric_step(&H[0, 0], &yh[0], m, &M[0, 0], d, &X[i, 0], y[i], eta[i],
                                  slot[i], &rule, &D[0, 0], &P[0, 0], &G[0, 0], block)
            if stored < 0:
                failed = i
                break
            m = stored
    if interrupted:
        craise_pending()
    return m, failed


def difference_chunk(KernelExpansion g,         # IN/OUT g = sum_i a_i k(c_i, .), c_i = x_{i+1}
                     Py_ssize_t[::1] idx,       # IN/OUT (capacity,) centre of each stored point
                     double[::1] yh,            # IN/OUT (capacity,) their targets y_j
                     double[::1] s,             # IN/OUT (capacity,) g(x_j) of each stored point
                     double[:, ::1] gram,       # IN/OUT (capacity, capacity) k(x_i, x_j) stored
                     Py_ssize_t m,              # IN points stored before the chunk
                     const double[:, ::1] X,    # IN (n, d)
                     const double[::1] y,       # IN (n,)
                     const double[::1] eta,     # IN (n,) eta_t
                     const Py_ssize_t[::1] slot,  # IN (n,) slot of x_t after its step, -1: none
                     int reducer, LossSpec loss,
                     const double[::1] gamma=None):  # IN (n + 1,) the width of each row, and after
    """Difference pair kernel k(x,u) - k(x,u') - k(x',u) + k(x',u'): f = g(x) - g(x')
    (`cdifference_step`).  Return (points stored, -1 or the first step that diverged).

    During gamma="scale"'s warm-up (docs/defaults.md, section 2) `gamma` gives the base
    kernel's width before each row and after the last; at a new width the stored points'
    caches are recomputed (`cdifference_width`)."""
    cdef PairRule rule = crule(reducer, loss)
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], cap = gram.shape[0]
    cdef Py_ssize_t i, stored, failed = -1, work = 0
    cdef bint interrupted = False, widths = gamma is not None
    cdef double gx
    cdef const double* x
    gbuf_arr = np.empty(max(cap, 1), dtype=np.float64)
    kvec_arr = np.empty(max(cap, 1), dtype=np.float64)
    Kg_arr = np.empty(max(cap, 1), dtype=np.float64)
    cdef double[::1] gbuf = gbuf_arr, kvec = kvec_arr, Kg = Kg_arr
    if d != g.n_features:
        raise ValueError(f"X has {d} columns, the expansion {g.n_features}.")
    if widths and gamma.shape[0] != n + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    if widths and m > 0 and (idx.shape[0] < m or s.shape[0] < m or gram.shape[1] != cap):
        raise ValueError("idx, s and gram must hold the m stored points.")
    if n == 0:
        if widths:
            cdifference_width(g, gamma[0], &idx[0] if m else NULL, &s[0] if m else NULL,
                              &gram[0, 0] if m else NULL, cap, m)
        return m, failed
    g.reserve(n)
    with nogil:
        for i in range(n + 1 if widths else n):
            if widths:
                cdifference_width(g, gamma[i], &idx[0], &s[0], &gram[0, 0], cap, m)
                if i == n:
                    break
            if cinterrupted(&work, g.n_support * d + m * m):
                interrupted = True
                break
            x = &X[i, 0]
            gx = cdifference_values(g, &idx[0], m, x, &kvec[0])
            stored = cdifference_step(g, &idx[0], &yh[0], &s[0], &gram[0, 0], cap, m, x,
                                      cdot(x, x, d), gx, &kvec[0], y[i], eta[i], slot[i],
                                      &rule, &gbuf[0], &Kg[0])
            if stored < 0:
                failed = i
                break
            m = stored
    if interrupted:
        craise_pending()
    return m, failed


cdef void cdifference_width(KernelExpansion g, double gamma, const Py_ssize_t* idx, double* s,
                            double* gram, Py_ssize_t cap, Py_ssize_t m) noexcept nogil:
    """g on the base kernel of width gamma (its centres and coefficients kept); the m stored
    points' caches g(x_j) and k(x_j, x_l) recomputed from g's kernel rows at their centres,
    as the steps read them (`cdifference_values`).  When the stored points are g's centres
    in order (the warm-up's first 100 steps with a buffer of 100 or more) the Gram matrix is
    computed once by symmetry and g(x_j) read off it."""
    cdef Py_ssize_t j, l, d = g.n_features
    cdef bint ordered = m == g.n_support
    if gamma == g.kernel.gamma:
        return
    g.cset_gamma(gamma)
    for j in range(m):
        if idx[j] != j:
            ordered = False
    if ordered:
        for j in range(m):
            ckernel_row_norms(&g.kernel, g.centers + j * d, g.sqnorms[j], g.centers,
                              g.sqnorms, j + 1, d, g.kbuf)
            for l in range(j + 1):
                gram[j * cap + l] = g.kbuf[l]
                gram[l * cap + j] = g.kbuf[l]
        for j in range(m):
            s[j] = g.scale * cdot(g.coef, gram + j * cap, m)
    else:
        for j in range(m):
            s[j] = g.cpredict(g.centers + idx[j] * d)
            for l in range(m):
                gram[j * cap + l] = g.kbuf[idx[l]]
    g.kbuf_x = NULL                     # kbuf holds a centre's row, not a step's


def step_slots(double[::1] t, double eta1, double theta, Py_ssize_t buffer,
               unsigned long long seed):
    """(eta_t, slot) of the steps t as `PairEvents` computes them one at a time (for tests)."""
    cdef Py_ssize_t i, n = t.shape[0]
    eta = np.empty(n)
    slots = np.empty(n, dtype=np.intp)
    cdef double[::1] e = eta
    cdef Py_ssize_t[::1] s = slots
    for i in range(n):
        e[i] = cstep_size(eta1, theta, t[i])
        s[i] = creservoir_slot(<unsigned long long>t[i], buffer, seed)
    return eta, slots


# ---- one event -------------------------------------------------------------------------------

cdef inline double* cdoubles(object a, Py_ssize_t rows, Py_ssize_t cols) noexcept:
    """The data of `a` when it is a writeable, aligned, C-contiguous float64 array of shape
    (rows,) (cols < 0) or (rows, cols); NULL otherwise."""
    cdef cnp.ndarray arr
    if type(a) is not cnp.ndarray:
        return NULL
    arr = <cnp.ndarray>a
    if not (cnp.PyArray_TYPE(arr) == cnp.NPY_DOUBLE and cnp.PyArray_ISCARRAY(arr)
            and cnp.PyArray_NDIM(arr) == (1 if cols < 0 else 2)
            and cnp.PyArray_DIM(arr, 0) == rows
            and (cols < 0 or cnp.PyArray_DIM(arr, 1) == cols)):
        return NULL
    return <double*>cnp.PyArray_DATA(arr)


cdef inline Py_ssize_t* cindices(object a, Py_ssize_t rows) noexcept:
    """The data of `a` when it is a writeable, C-contiguous intp array of `rows` values."""
    cdef cnp.ndarray arr
    if type(a) is not cnp.ndarray:
        return NULL
    arr = <cnp.ndarray>a
    if not (cnp.PyArray_TYPE(arr) == cnp.NPY_INTP and cnp.PyArray_ISCARRAY(arr)
            and cnp.PyArray_NDIM(arr) == 1 and cnp.PyArray_DIM(arr, 0) == rows):
        return NULL
    return <Py_ssize_t*>cnp.PyArray_DATA(arr)


cdef class PairEvents(Events):
    """One-event predict and learn for `PairwiseLearner` on the cython engine.

    `learn` computes eta_t and the reservoir slot of step t in C, then takes the
    very step of the chunk loops (`clinear_step`, `cmetric_step`,
    `cdifference_step`, `cmoments_step`) on the model's own buffers, so its
    iterates are those of `partial_fit` on the same rows.  A step checks
    everything before its first write: a row with NaN/inf or a divergent step
    raises and leaves the model as it was.  The event whose point would make
    the stored points reach `warn_at` (the size `PairwiseLearner._check_size`
    warns at) is declined, so the estimator's path warns first.  With the
    difference pair kernel, "predict, then learn" evaluates g(x_t) once: the
    last prediction is kept with its kernel values, a copy of the row and a
    fingerprint of the model (t, the centres, the stored points).

    Parameters
    ----------
    kind : PairKind
    model : LinearPairModel, MetricPairModel, DifferencePairModel or MomentsPairModel
        The estimator's `_model`; `learn` writes its arrays in place.
    reducer : int
    loss : dict
        The `LossSpec` fields.
    eta1, theta : float
        The step ``eta_t = eta1 max(t - 1, 1)^-theta``.
    buffer : int
        The reservoir's size, 0 for every point.
    seed : int
        The reservoir's seed.
    warn_at : int
        The number of stored points the estimator warns at (0: never).
    name, cure : str
        The estimator's class name and the end of the divergence message.
    names : tuple of str
        The estimator attributes `matches` compares.
    """
    cdef readonly int kind
    cdef readonly bint blas_threads       # its products may wake BLAS threads (metric, d > 256)
    cdef object model, history, cure
    cdef dict mattrs, hattrs              # the model's and its stored points' __dict__
    cdef PairRule rule
    cdef double eta1, theta
    cdef Py_ssize_t buffer, warn_at, d, block
    cdef unsigned long long seed
    cdef object work_arr                  # the step's work space (a float64 array)
    cdef double* work
    cdef Py_ssize_t work_cap              # stored points the work space holds (difference)
    # the last prediction of the difference pair kernel, its kernel values (work[:m])
    cdef public Warmup warm               # gamma="scale"'s warm-up, while on (difference kernel)
    cdef bint has_last
    cdef object last_g
    cdef double last_gx, last_xx
    cdef Py_ssize_t last_t, last_n, last_m
    cdef double[::1] last_row

    def __init__(self, int kind, model, int reducer, LossSpec loss, double eta1, double theta,
                 Py_ssize_t buffer, unsigned long long seed, Py_ssize_t warn_at, str name,
                 str cure, tuple names=()):
        self.kind, self.model = kind, model
        self.mattrs = model.__dict__
        self.history = self.mattrs.get("history")
        self.hattrs = None if self.history is None else self.history.__dict__
        self.rule = crule(reducer, loss)
        self.eta1, self.theta, self.buffer, self.seed = eta1, theta, buffer, seed
        self.warn_at = warn_at
        self.name, self.cure, self.names = name, cure, names
        self.ready = True
        if kind == MOMENTS:
            self.d = len(self.mattrs["w"])
        elif kind == DIFFERENCE_KERNEL:
            self.d = (<KernelExpansion?>self.mattrs["g"]).n_features
        else:
            self.d = self.history.n_features
        self.block = cblock(self.d, kind == METRIC)
        self.blas_threads = kind == METRIC and self.d * self.d > GEMM_ONE_THREAD
        self.last_row = np.empty(self.d)
        self.work_cap = -1
        self._reserve_work(0)

    cdef int _reserve_work(self, Py_ssize_t cap) except -1:
        """Work space for the step (for `cap` stored points with the difference kernel)."""
        cdef Py_ssize_t d = self.d, size
        if self.kind == DIFFERENCE_KERNEL:
            if cap <= self.work_cap:
                return 0
            size = 3 * max(cap, 1)      # kvec, gbuf, Kg
            self.has_last = False       # kvec moves
        elif self.work_cap >= 0:
            return 0
        elif self.kind == LINEAR:
            size = self.block + d
        elif self.kind == METRIC:
            size = 2 * self.block * d + d * d
        else:
            size = 2 * d + 2
        self.work_arr = np.empty(size)
        self.work = <double*>cnp.PyArray_DATA(<cnp.ndarray>self.work_arr)
        self.work_cap = cap
        return 0

    cdef const double* _row(self, object x, Py_ssize_t* n, list keep) except? NULL:
        """A 1-D float64 row: read in place when ready, else through a typed view (kept
        alive in `keep`); raises for anything else."""
        cdef const double[::1] typed
        cdef const double* p = cready(x, n)
        if p == NULL:
            typed = x
            keep.append(typed)
            n[0] = typed.shape[0]
            p = &typed[0] if n[0] else <const double*>&self.last_row[0]
        return p

    cdef int _check(self, object x, const double* p, Py_ssize_t n, double* xx,
                    str action) except -1:
        """The row has the learner's width and finite values (xx = <x, x>), or raise."""
        if n != self.d:
            raise ValueError(f"X has {n} features, but {self.name} is expecting {self.d} "
                             "features as input.")
        xx[0] = cdot(p, p, n)
        if not row_is_finite(p, n, xx[0]):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             f"non-finite values cannot be {action}.")
        return 0

    cdef object _score(self, object x, const double* p, Py_ssize_t n, object t):
        """g(x) of a row (w.x, or the expansion g); None for the metric kernel."""
        cdef double xx
        cdef KernelExpansion g
        cdef Py_ssize_t m
        cdef Py_ssize_t* idx
        cdef const double* w
        self._check(x, p, n, &xx, "predicted")
        if self.kind == LINEAR or self.kind == MOMENTS:
            w = cdoubles(self.mattrs["w"], self.d, -1)
            return None if w == NULL else cdot(w, p, self.d)
        if self.kind == METRIC:
            return None
        g = self.mattrs["g"]
        if type(t) is not int or not self._difference_ready(g, &idx, &m):
            return None
        self._reserve_work(self.hattrs["capacity"])
        self.last_gx = cdifference_values(g, idx, m, p, self.work)
        memcpy(&self.last_row[0], p, self.d * sizeof(double))
        self.last_g, self.last_t, self.last_n, self.last_m = g, t, g.n_support, m
        self.last_xx, self.has_last = xx, True
        return self.last_gx

    cdef bint _difference_ready(self, object g, Py_ssize_t** idx, Py_ssize_t* m) except -1:
        """g is a KernelExpansion and the stored points' indices are what the step reads."""
        if type(g) is not KernelExpansion or self.mattrs.get("history") is not self.history:
            return False
        m[0] = self.hattrs["m"]
        idx[0] = cindices(self.hattrs["idx"], self.hattrs["capacity"])
        return idx[0] != NULL and 0 <= m[0] <= self.hattrs["capacity"]

    def predict(self, x, t, b=None):
        """g(x) for one row, a 1-D float64 buffer (t: the learner's steps; b: unused, a
        ranker has no offset)."""
        cdef Py_ssize_t n = 0
        cdef list keep = []
        if self.kind == METRIC:
            raise AttributeError(
                f"{self.name} has no score of one event here: it scores pairs of rows "
                "(e.g. pair_kernel='metric'); use decision_function(X1, X2).")
        p = self._row(x, &n, keep)
        f = self._score(x, p, n, int(t))
        if f is None:
            raise RuntimeError(f"{self.name}'s model is not the one this step was built for.")
        return f

    cdef object cpredict(self, dict attrs, object x):
        cdef Py_ssize_t n = 0
        cdef const double* p = cready(x, &n)
        f = self._score(x, p, n, attrs.get("t_"))
        return MISS if f is None else f

    cdef object cpredict_label(self, dict attrs, object x):
        """A ranker's score, whatever its labels."""
        return self.cpredict(attrs, x)

    def learn(self, dict attrs, x, double y):
        """Learn one row (a 1-D float64 buffer) of target y (a class code for
        reducer="dissimilar") on the learner's counters in `attrs` (the caller limits BLAS
        to one thread when `blas_threads`)."""
        cdef Py_ssize_t n = 0
        cdef list keep = []
        p = self._row(x, &n, keep)
        if not self._learn(attrs, x, p, n, y, True):
            raise RuntimeError(f"{self.name}'s model is not the one this step was built for.")

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        cdef Py_ssize_t n = 0
        cdef const double* p = cready(x, &n)
        return self._learn(attrs, x, p, n, y, False)

    cdef int _learn(self, dict attrs, object x, const double* p, Py_ssize_t n, double y,
                    bint called) except -1:
        """Step t_ + 1 on the model's buffers: 1, or 0 when declined before any write (a
        model not as built; unless `called` from the estimator's `_learn_event`, the point
        that reaches `warn_at`, or a step that may wake BLAS threads)."""
        cdef double xx, eta, gx
        cdef Py_ssize_t t, slot, m = 0, cap = 0, stored, d = self.d
        cdef double* H = NULL
        cdef double* yh = NULL
        cdef double* w
        cdef double* S
        cdef double* origin
        cdef double* s
        cdef double* gram
        cdef double* work = NULL
        cdef Py_ssize_t* idx = NULL
        cdef KernelExpansion g = None
        self._check(x, p, n, &xx, "learned")
        if self.blas_threads and not called:
            return 0
        t_now = attrs.get("t_")
        if type(t_now) is not int or t_now < 0:
            return 0
        t = <Py_ssize_t>t_now + 1
        eta = cstep_size(self.eta1, self.theta, <double>t)
        slot = creservoir_slot(<unsigned long long>t, self.buffer, self.seed)
        if self.kind != MOMENTS:
            if self.mattrs.get("history") is not self.history:
                return 0
            m = self.hattrs["m"]
            if not (0 <= m <= self.hattrs["capacity"] and -1 <= slot <= m):
                return 0
            if slot == m and not called and m + 1 == self.warn_at:
                return 0                # the estimator warns before it takes this point
            if slot == m and m == self.hattrs["capacity"]:
                self.history.reserve(1)     # rebinds its arrays (same values)
            cap = self.hattrs["capacity"]
            yh = cdoubles(self.hattrs["y"], cap, -1)
            if yh == NULL:
                return 0
        t_next, m_next = t_now + 1, (m + 1 if slot == m else m)    # before any write
        if self.kind == LINEAR or self.kind == METRIC:
            H = cdoubles(self.hattrs["X"], cap, d)
            w = cdoubles(self.mattrs["w"], d, -1 if self.kind == LINEAR else d)
            if H == NULL or w == NULL:
                return 0
            self._reserve_work(0)
            work = self.work
            if self.kind == LINEAR:
                stored = clinear_step(H, yh, m, w, d, p, y, eta, slot, &self.rule, work,
                                      self.block, work + self.block)
            else:
                stored = cmetric_step(H, yh, m, w, d, p, y, eta, slot, &self.rule, work,
                                      work + self.block * d, work + 2 * self.block * d,
                                      self.block)
        elif self.kind == MOMENTS:
            S = cdoubles(self.mattrs["S"], d + 2, d + 2)
            origin = cdoubles(self.mattrs["origin"], d + 1, -1)
            w = cdoubles(self.mattrs["w"], d, -1)
            if S == NULL or origin == NULL or w == NULL:
                return 0
            work = self.work
            stored = cmoments_step(S, origin, w, d, p, y, eta, work, work + d + 2)
        else:
            g = self.mattrs["g"]
            if not self._difference_ready(g, &idx, &m):
                return 0
            if self.warm is not None:
                self.warm.cload(attrs, g.kernel.gamma)
                if self.warm.over:
                    self.warm = None
            s = cdoubles(self.hattrs["s"], cap, -1)
            gram = cdoubles(self.hattrs["gram"], cap, cap)
            if s == NULL or gram == NULL or g.n_features != d:
                return 0
            if g.n_support == g.capacity:
                g.reserve(1)
            self._reserve_work(cap)
            work = self.work
            if (self.has_last and self.last_g is g and self.last_t == t - 1
                    and self.last_n == g.n_support and self.last_m == m
                    and memcmp(p, &self.last_row[0], d * sizeof(double)) == 0):
                gx = self.last_gx               # predict_one's g(x_t) and kernel values
            else:
                gx = cdifference_values(g, idx, m, p, work)
            self.has_last = False
            stored = cdifference_step(g, idx, yh, s, gram, cap, m, p, xx, gx, work, y, eta,
                                      slot, &self.rule, work + cap, work + 2 * cap)
        if stored < 0:
            raise FloatingPointError(
                f"{self.name} diverged at step t={t} (eta_t={eta:.3g}): the model is no "
                f"longer finite. {self.cure[0].upper()}{self.cure[1:]}. The model is left as "
                "it was.")
        if self.warm is not None:       # the row taken into the width, the caches re-read
            if self.warm.cadd(p):
                cdifference_width(g, self.warm.width.gamma, idx, s, gram, cap, m_next)
            self.warm.cstore(attrs)
            if self.warm.over:
                self.warm = None
        attrs["t_"] = t_next
        if self.kind != MOMENTS:
            self.hattrs["m"] = m_next
            attrs["n_stored_"] = m_next
        return 1
