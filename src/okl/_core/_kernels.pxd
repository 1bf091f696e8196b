# Kernels: the enum (the single source of truth for kernel codes) and the
# inline point functions that every loop calls.  A loop over centres switches
# on `kind` once, outside the loop, and then calls the matching helper.
from libc.math cimport fabs, fmax


cdef extern from "_simd.h" nogil:
    double okl_dot(Py_ssize_t d, const double* x, const double* u)
    void okl_dots(Py_ssize_t n, Py_ssize_t d, const double* C, const double* x, double* out)
    double okl_exp_nonpos(double x)
    void okl_gaussian_from_dots(Py_ssize_t n, double gamma, double xx,
                                const double* sqnorms, double* kb)
    void okl_exp_scaled(Py_ssize_t n, double gamma, double* kb)


cpdef enum Kernel:
    LINEAR = 0        # <x, u> + coef0
    POLYNOMIAL = 1    # (gamma <x, u> + coef0) ** degree
    GAUSSIAN = 2      # exp(-gamma ||x - u||_2^2)
    LAPLACIAN = 3     # exp(-gamma ||x - u||_1)


cdef struct KernelSpec:
    Kernel kind
    double gamma
    double coef0
    int degree


cdef inline double cpowi(double base, int n) noexcept nogil:
    """base ** n for an int n >= 0, by squaring (libm pow is several times slower)."""
    cdef double result = 1.0
    while n > 0:
        if n & 1:
            result *= base
        base *= base
        n >>= 1
    return result


cdef inline double cdot(const double* x, const double* u, Py_ssize_t d) noexcept nogil:
    return okl_dot(d, x, u)


cdef inline double cl1(const double* x, const double* u, Py_ssize_t d) noexcept nogil:
    cdef double acc = 0.0
    cdef Py_ssize_t j
    for j in range(d):
        acc += fabs(x[j] - u[j])
    return acc


cdef inline double cfrom_dot(const KernelSpec* k, double dot, double xx, double uu) noexcept nogil:
    """K(x, u) from <x, u> and the squared norms (every kernel but the Laplacian)."""
    if k.kind == LINEAR:
        return dot + k.coef0
    if k.kind == POLYNOMIAL:
        return cpowi(k.gamma * dot + k.coef0, k.degree)
    # GAUSSIAN: the expansion of ||x - u||^2 can round below zero for x ~ u
    return okl_exp_nonpos(-k.gamma * fmax(xx + uu - 2.0 * dot, 0.0))


cdef inline double ckernel(const KernelSpec* k, const double* x, const double* u,
                           Py_ssize_t d, double xx, double uu) noexcept nogil:
    """K(x, u) for one pair; xx, uu are the squared norms (used by the Gaussian)."""
    if k.kind == LAPLACIAN:
        return okl_exp_nonpos(-k.gamma * cl1(x, u, d))
    return cfrom_dot(k, cdot(x, u, d), xx, uu)


cdef inline double cself(const KernelSpec* k, double xx) noexcept nogil:
    """K(x, x) from ||x||^2."""
    if k.kind == LINEAR:
        return xx + k.coef0
    if k.kind == POLYNOMIAL:
        return cpowi(k.gamma * xx + k.coef0, k.degree)
    return 1.0
