"""Online pairwise learning (Lin-Lei-Zhang-Zhou, Algorithm 1): one nogil loop per chunk.

Step t >= 2 averages the loss gradient over the points stored before it:
    f_{t+1} = f_t - (eta_t / m) sum_{j < t} V'_-(r(y_t, y_j), f_t(x_t, x_j)) K_{(x_t, x_j)}
(m = t - 1, or the reservoir size).  Each step is ONE fused pass over the
stored points: a block of rows is read from memory once, and while it is in
cache it gives the pair values f_t(x_t, x_j), the loss slopes and their
contribution to the gradient.  After its step, x_t is written to the slot the
caller chose (`slot[i]`: the next free slot, a reservoir slot, or -1).

Pair kernels (one function each):
    linear      f(x, x') = w.(x - x')                      O(m d) per step
    metric      f(x, x') = (x - x')^T M (x - x')           O(m d^2)
    difference  f(x, x') = g(x) - g(x'), g a kernel expansion with one centre
                per step; the Gram matrix of the stored points and the values
                g(x_j) are cached, so a step costs t kernel values and O(m^2)
                multiply-adds (8 m^2 bytes of memory).
The squared loss with the linear pair kernel and the difference reducer needs
only the running moments of (x, y): `linear_moments_chunk`, O(d^2) per step.
"""
import numpy as np

from libc.math cimport NAN, isfinite
from scipy.linalg.cython_blas cimport dgemm, dgemv, dsymv

from okl._core._signals cimport cinterrupted, craise_pending
from okl._core._kernels cimport cdot, cself
from okl._core._losses cimport Loss, LossSpec, cdloss, cdloss_right, cis_margin
from okl._core._expansion cimport KernelExpansion


cpdef enum Reducer:
    SIGN = 0          # r = sign(y - y')               (ranking)
    DIFFERENCE = 1    # r = y - y'                     (regression of differences)
    DISSIMILAR = 2    # r = +1 if y != y' else -1      (metric learning, y = class codes)


# Rows per block: a block of stored points stays in L2 between its two uses.
cdef Py_ssize_t BLOCK_DOUBLES = 8192
# Below this many multiply-adds a plain loop beats a BLAS call.
cdef Py_ssize_t BLAS_MIN_WORK = 512


cdef inline double creduce(Reducer kind, double y, double yp) noexcept nogil:
    """r(y, y')."""
    if kind == SIGN:
        return <double>((y > yp) - (y < yp))
    if kind == DIFFERENCE:
        return y - yp
    if kind == DISSIMILAR:
        return 1.0 if y != yp else -1.0
    return NAN


cdef inline double cslope(const LossSpec* L, bint margin, double r, double a) noexcept nogil:
    """V'_-(r, a): the left derivative in a of phi(r a) (margin) or psi(a - r) (residual)."""
    cdef double z
    if not margin:
        return cdloss(L, a - r)
    z = r * a
    # for r < 0 a step left in a is a step right in z: phi's right slope
    return r * (cdloss_right(L, z) if r < 0.0 else cdloss(L, z))


cdef inline void crow_dots(const double* H, Py_ssize_t rows, Py_ssize_t d,
                           const double* v, double* out) noexcept nogil:
    """out[j] = H[j] . v for the `rows` rows of H (C order, d columns)."""
    cdef Py_ssize_t j
    cdef int bd = <int>d, brows = <int>rows, inc = 1
    cdef double one = 1.0, zero = 0.0
    if rows * d >= BLAS_MIN_WORK:
        dgemv(b"T", &bd, &brows, &one, <double*>H, &bd, <double*>v, &inc, &zero, out, &inc)
    else:
        for j in range(rows):
            out[j] = cdot(H + j * d, v, d)


cdef inline void crows_axpy(const double* H, Py_ssize_t rows, Py_ssize_t d,
                            const double* g, double* acc) noexcept nogil:
    """acc += sum_j g[j] H[j] over the `rows` rows of H."""
    cdef Py_ssize_t j, k
    cdef int bd = <int>d, brows = <int>rows, inc = 1
    cdef double one = 1.0
    cdef const double* h
    if rows * d >= BLAS_MIN_WORK:
        dgemv(b"N", &bd, &brows, &one, <double*>H, &bd, <double*>g, &inc, &one, acc, &inc)
    else:
        for j in range(rows):
            h = H + j * d
            for k in range(d):
                acc[k] += g[j] * h[k]


cdef inline void cstore(double* H, double* yh, Py_ssize_t slot, const double* x,
                        double y, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(d):
        H[slot * d + k] = x[k]
    yh[slot] = y


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
    cdef LossSpec spec = loss
    cdef bint margin = cis_margin(spec.kind)
    cdef Reducer kind = <Reducer>reducer
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j, k, b0, rows
    cdef Py_ssize_t block = max(1, BLOCK_DOUBLES // d), failed = -1
    cdef Py_ssize_t work = 0
    cdef bint interrupted = False
    cdef double wx, G, c, yt
    cdef const double* x
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
            x = &X[i, 0]
            yt = y[i]
            if m > 0:
                wx = cdot(&w[0], x, d)
                G = 0.0
                for k in range(d):
                    acc[k] = 0.0
                b0 = 0
                while b0 < m:
                    rows = min(block, m - b0)
                    crow_dots(&H[b0, 0], rows, d, &w[0], &gbuf[0])
                    for j in range(rows):
                        gbuf[j] = cslope(&spec, margin, creduce(kind, yt, yh[b0 + j]),
                                         wx - gbuf[j])
                        G += gbuf[j]
                    crows_axpy(&H[b0, 0], rows, d, &gbuf[0], &acc[0])
                    b0 += rows
                # sum_j g_j (x_t - x_j) = G x_t - sum_j g_j x_j
                c = eta[i] / m
                for k in range(d):
                    w[k] -= c * (G * x[k] - acc[k])
                    if not isfinite(w[k]):
                        failed = i
                if failed >= 0:
                    break
            if slot[i] >= 0:
                cstore(&H[0, 0], &yh[0], slot[i], x, yt, d)
                if slot[i] == m:
                    m += 1
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
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], e = d + 2, i, k, l
    cdef Py_ssize_t failed = -1
    cdef Py_ssize_t work = 0
    cdef bint interrupted = False
    cdef double cnt, wx, wS1, yt, c
    z_arr = np.empty(e, dtype=np.float64)
    grad_arr = np.empty(d, dtype=np.float64)
    cdef double[::1] z = z_arr, grad = grad_arr
    cdef double* zx = &z[1]
    if n == 0:
        return failed
    with nogil:
        for i in range(n):
            if cinterrupted(&work, (d + 2) * (d + 2)):
                interrupted = True
                break
            z[0] = 1.0
            for k in range(d):
                zx[k] = X[i, k] - origin[k]
            yt = y[i] - origin[d]
            z[d + 1] = yt
            cnt = S[0, 0]
            if cnt > 0.0:
                wx = cdot(&w[0], zx, d)
                wS1 = cdot(&w[0], &S[0, 1], d)
                for k in range(d):
                    grad[k] = (zx[k] * (cnt * wx - wS1) - S[0, 1 + k] * wx
                               + cdot(&S[1 + k, 1], &w[0], d)
                               - zx[k] * (cnt * yt - S[0, d + 1]) + yt * S[0, 1 + k]
                               - S[1 + k, d + 1])
                c = eta[i] / cnt
                for k in range(d):
                    w[k] -= c * grad[k]
                    if not isfinite(w[k]):
                        failed = i
                if failed >= 0:
                    break
            for k in range(e):
                for l in range(e):
                    S[k, l] += z[k] * z[l]
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
    """Metric pair kernel ((x-x').(u-u'))^2: f = D^T M D with D = x - x'.

    Per block of stored points: D = x_t - x_j (rows), P = D M (dgemm), the pair
    values rowwise D.P, the slopes, then G += D^T diag(g) D (dgemm); M moves by
    the symmetric part of G, so it stays exactly symmetric.  Return (points
    stored, -1 or the first step that diverged).
    """
    cdef LossSpec spec = loss
    cdef bint margin = cis_margin(spec.kind)
    cdef Reducer kind = <Reducer>reducer
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j, k, l, b0, rows
    cdef Py_ssize_t block = max(1, BLOCK_DOUBLES // d), failed = -1
    cdef Py_ssize_t work = 0
    cdef bint interrupted = False
    cdef double c, yt, gj
    cdef const double* x
    cdef double* Dj
    cdef double* Pj
    D_arr = np.empty((block, d), dtype=np.float64)
    P_arr = np.empty((block, d), dtype=np.float64)
    G_arr = np.empty((d, d), dtype=np.float64)
    cdef double[:, ::1] D = D_arr, P = P_arr, G = G_arr
    cdef int bd = <int>d, brows
    cdef double one = 1.0, zero = 0.0
    if n == 0:
        return m, failed
    with nogil:
        for i in range(n):
            if cinterrupted(&work, m * d * d):
                interrupted = True
                break
            x = &X[i, 0]
            yt = y[i]
            if m > 0:
                for k in range(d):
                    for l in range(d):
                        G[k, l] = 0.0
                b0 = 0
                while b0 < m:
                    rows = min(block, m - b0)
                    brows = <int>rows
                    for j in range(rows):
                        for k in range(d):
                            D[j, k] = x[k] - H[b0 + j, k]
                    # column-major view: P^T = M D^T (M symmetric)
                    dgemm(b"N", b"N", &bd, &brows, &bd, &one, &M[0, 0], &bd,
                          &D[0, 0], &bd, &zero, &P[0, 0], &bd)
                    for j in range(rows):
                        Dj = &D[j, 0]
                        Pj = &P[j, 0]
                        gj = cslope(&spec, margin, creduce(kind, yt, yh[b0 + j]),
                                    cdot(Dj, Pj, d))
                        for k in range(d):
                            Pj[k] = gj * Dj[k]
                    # column-major view: G^T += D^T (g D)
                    dgemm(b"N", b"T", &bd, &bd, &brows, &one, &D[0, 0], &bd,
                          &P[0, 0], &bd, &one, &G[0, 0], &bd)
                    b0 += rows
                c = 0.5 * eta[i] / m
                for k in range(d):
                    for l in range(d):
                        M[k, l] -= c * (G[k, l] + G[l, k])
                        if not isfinite(M[k, l]):
                            failed = i
                if failed >= 0:
                    break
            if slot[i] >= 0:
                cstore(&H[0, 0], &yh[0], slot[i], x, yt, d)
                if slot[i] == m:
                    m += 1
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
                     int reducer, LossSpec loss):
    """Difference pair kernel k(x,u) - k(x,u') - k(x',u) + k(x',u'): f = g(x) - g(x').

    Step t evaluates g(x_t) over all centres (which also gives k(x_t, x_j) for
    the stored points), forms the slopes g_j from the cached g(x_j), and moves
        g <- g - c (G k(x_t, .) - sum_j g_j k(x_j, .)),   c = eta_t / m, G = sum_j g_j,
    adding x_t as a centre.  The cached g(x_i) follow with one symmetric
    matrix-vector product with the Gram matrix of the stored points.  The
    caller reserves room for n centres in `g`.  Return (points stored, -1 or
    the first step that diverged).
    """
    cdef LossSpec spec = loss
    cdef bint margin = cis_margin(spec.kind)
    cdef Reducer kind = <Reducer>reducer
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], cap = gram.shape[0]
    cdef Py_ssize_t i, j, sl, failed = -1
    cdef Py_ssize_t work = 0
    cdef bint interrupted = False
    cdef double xx, gx, kself, yt, G, dgx, c, gnew
    cdef const double* x
    gbuf_arr = np.empty(max(cap, 1), dtype=np.float64)
    kvec_arr = np.empty(max(cap, 1), dtype=np.float64)
    Kg_arr = np.empty(max(cap, 1), dtype=np.float64)
    cdef double[::1] gbuf = gbuf_arr, kvec = kvec_arr, Kg = Kg_arr
    cdef int bm, bcap = <int>cap, inc = 1
    cdef double one = 1.0, zero = 0.0
    if d != g.n_features:
        raise ValueError(f"X has {d} columns, the expansion {g.n_features}.")
    if n == 0:
        return m, failed
    g.reserve(n)
    with nogil:
        for i in range(n):
            if cinterrupted(&work, g.n_support * d + m * m):
                interrupted = True
                break
            x = &X[i, 0]
            yt = y[i]
            xx = cdot(x, x, d)
            gx = g.cpredict(x)            # g.kbuf[c] = k(c-th centre, x_t)
            kself = cself(&g.kernel, xx)
            G = 0.0
            dgx = 0.0                          # sum_j g_j k(x_j, x_t)
            c = 0.0
            if m > 0:
                for j in range(m):
                    kvec[j] = g.kbuf[idx[j]]
                    gbuf[j] = cslope(&spec, margin, creduce(kind, yt, yh[j]), gx - s[j])
                    G += gbuf[j]
                    dgx += gbuf[j] * kvec[j]
                c = eta[i] / m
                bm = <int>m
                dsymv(b"U", &bm, &one, &gram[0, 0], &bcap, &gbuf[0], &inc, &zero, &Kg[0], &inc)
                for j in range(m):
                    s[j] -= c * (G * kvec[j] - Kg[j])
                    g.cadd_coef(idx[j], c * gbuf[j])
                    if not isfinite(s[j]):
                        failed = i
            gnew = gx - c * (G * kself - dgx)  # g_{t+1}(x_t)
            if failed >= 0 or not isfinite(gnew) or not g.cadd(x, xx, -c * G):
                failed = i
                break
            sl = slot[i]
            if sl >= 0:
                idx[sl] = g.n_support - 1
                yh[sl] = yt
                s[sl] = gnew
                for j in range(m):
                    gram[sl, j] = kvec[j]
                    gram[j, sl] = kvec[j]
                gram[sl, sl] = kself
                if sl == m:
                    m += 1
    if interrupted:
        craise_pending()
    return m, failed
