"""noise="auto"'s evidence compiled: `log_evidences`, the twin of
`okl._numpy.krls.log_evidences`, and `gram_base`, of `okl._numpy.kernels.gram_base`
(docs/krls.md, section 8).

The same LAPACK calls on the same numbers (the tridiagonal reduction dsytrd and the
reflectors' dormqr unblocked, as scipy's wrappers call them; then at every noise dpttrf and
dpttrs), with the sums and the loop over the noises in C.  It runs at the end of the
warm-up, before the model changes, and allocates its work arrays.
"""
import numpy as np

from libc.math cimport INFINITY, fabs, log, sqrt
from scipy.linalg.cython_lapack cimport dormqr, dpttrf, dpttrs, dsytrd

from okl._core._kernels cimport GAUSSIAN, LAPLACIAN, MATERN
from okl._core._warmup cimport cpairwise_sum
from okl._numpy import kernels

# the smallest positive double (np.finfo(float).tiny): q's floor
cdef double TINY = 2.2250738585072014e-308


def log_evidences(const double[:, ::1] K, const double[::1] y, const double[::1] w,
                  const double[::1] noises, bint centred):
    """`okl._numpy.krls.log_evidences` of the symmetric Gram matrix K of the rows (y, w)
    at every noise of `noises`: -inf where T + noise I is not positive definite."""
    cdef int n = K.shape[0], k = noises.shape[0], m = n - 1, one = 1, info = 0
    cdef int lwork = max(n, 1), i, j
    cdef double mean = 0.0, wsum = 0.0, log_w = 0.0, q, logdet, dof
    out = np.full(k, -INFINITY)
    cdef double[::1] res = out
    cdef double[::1] root = np.empty(n), z = np.empty(max(n, 1)), x = np.empty(max(n, 1))
    cdef double[::1] d = np.empty(max(n, 1)), e = np.zeros(max(n, 1))
    cdef double[::1] tau = np.zeros(max(n, 1)), dn = np.empty(max(n, 1))
    cdef double[::1] en = np.zeros(max(n, 1)), work = np.empty(max(n, 1))
    # a[j, i] in C order is A(i, j) in LAPACK's: the lower triangle of W^1/2 K W^1/2
    cdef double[:, ::1] a = np.zeros((max(n, 1), max(n, 1)))
    if n == 0:
        return out
    if centred:
        for i in range(n):
            mean += y[i] * w[i]
            wsum += w[i]
        mean /= wsum
    dof = n - 1 if centred else n
    for i in range(n):
        root[i] = sqrt(w[i])
        z[i] = root[i] * ((y[i] - mean) if centred else y[i])
        log_w += log(w[i])
    for j in range(n):
        for i in range(j, n):
            a[j, i] = root[i] * K[i, j] * root[j]
    dsytrd(b"L", &n, &a[0, 0], &n, &d[0], &e[0], &tau[0], &work[0], &lwork, &info)
    if m > 0:               # Q's reflectors are those of a QR factor of A(1:, :-1)
        lwork = 1
        dormqr(b"L", b"T", &m, &one, &m, &a[0, 1], &n, &tau[0], &z[1], &m, &work[0], &lwork,
               &info)
    for j in range(k):
        for i in range(n):
            dn[i] = d[i] + noises[j]
            x[i] = z[i]
        for i in range(m):
            en[i] = e[i]
        dpttrf(&n, &dn[0], &en[0], &info)
        if info != 0:
            continue
        dpttrs(&n, &one, &dn[0], &en[0], &x[0], &n, &info)
        q = 0.0
        logdet = 0.0
        for i in range(n):
            q += z[i] * x[i]
            logdet += log(dn[i])
        q = max(q, TINY)
        res[j] = -0.5 * dof * log(q / dof) - 0.5 * (logdet - log_w)
    return out


def gram_base(int kernel, const double[:, ::1] X):
    """`okl._numpy.kernels.gram_base` of the rows X, bit for bit: for the Gaussian, Matern
    and Laplacian kernels each entry the sum of the squared (absolute) differences of two
    rows, summed in NumPy's order (`cpairwise_sum`); the other kernels' is the twin's."""
    if kernel != GAUSSIAN and kernel != MATERN and kernel != LAPLACIAN:
        return kernels.gram_base(kernel, np.asarray(X))
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j, k
    cdef bint l1 = kernel == LAPLACIAN
    out = np.empty((n, n))
    cdef double[:, ::1] res = out
    cdef double[::1] work = np.empty(max(d, 1))
    with nogil:
        for i in range(n):
            for j in range(i + 1):      # (x - u)^2 and |x - u| are (u - x)^2, |u - x|
                for k in range(d):
                    work[k] = (fabs(X[i, k] - X[j, k]) if l1
                               else (X[i, k] - X[j, k]) * (X[i, k] - X[j, k]))
                res[i, j] = res[j, i] = cpairwise_sum(&work[0], d)
    return out
