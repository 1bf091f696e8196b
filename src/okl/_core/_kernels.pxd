# Kernels: the enum (the single source of truth for kernel codes) and the
# inline point functions that every loop calls.  A loop over centres switches
# on `kind` once, outside the loop, and then calls the matching helper.
from libc.math cimport NAN, sqrt


cdef extern from "_simd.h" nogil:
    double okl_dot(Py_ssize_t d, const double* x, const double* u)
    void okl_dots(Py_ssize_t n, Py_ssize_t d, const double* C, const double* x, double* out)
    void okl_sqdists(Py_ssize_t n, Py_ssize_t d, const double* C, const double* x, double* out)
    void okl_sqdists_norms(Py_ssize_t n, Py_ssize_t d, const double* C, const double* cc,
                           const double* x, double xx, double* out)
    double OKL_CANCEL_TAU
    int OKL_EXPAND_MIN_D
    void okl_l1dists(Py_ssize_t n, Py_ssize_t d, const double* C, const double* x, double* out)
    double okl_exp_nonpos(double x)
    void okl_exp_scaled(Py_ssize_t n, double gamma, double* kb)
    int okl_simd_level()


cpdef enum Kernel:
    LINEAR = 0        # <x, u> + coef0
    POLYNOMIAL = 1    # (gamma <x, u> + coef0) ** degree
    GAUSSIAN = 2      # exp(-gamma ||x - u||_2^2)
    LAPLACIAN = 3     # exp(-gamma ||x - u||_1)
    MATERN = 4        # Matern of smoothness nu and length scale 1 / sqrt(2 gamma)


cdef struct KernelSpec:
    # the kernel's code and every kernel parameter, by the names of okl.kernels.KERNEL_PARAMS
    int kind           # a Kernel code (an int: the record's "kernel" converts both ways)
    double gamma
    double coef0
    int degree
    double nu          # Matern's smoothness: 0.5, 1.5 or 2.5


cdef inline KernelSpec kernel_spec(object params) except *:
    """The `KernelSpec` of a kernel-parameters record (the dict of `okl.kernels.kernel_params`:
    the code "kernel" and every parameter by name): the one place a spec is built.

    Fields are taken by name (Cython's dict-to-struct conversion), so a new field needs no
    change here or in any caller; a record without it raises.
    """
    fields = dict(params)
    fields["kind"] = fields.pop("kernel")
    return fields


cdef inline dict spec_params(KernelSpec spec):
    """The record of a `KernelSpec` (the inverse of `kernel_spec`): what get_state saves."""
    cdef dict fields = spec
    fields["kernel"] = int(fields.pop("kind"))
    return fields


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


cdef inline void cmatern(double nu, double gamma, Py_ssize_t n, double* kb) noexcept nogil:
    """kb[i] <- Matern_nu(s), s = sqrt(4 nu gamma kb[i]), from squared distances kb[i].

    Half-integer nu has the closed form exp(-s) times a polynomial in s:
    1, 1 + s, 1 + s + s^2 / 3 for nu = 0.5, 1.5, 2.5 (docs/algorithms.md,
    section 0.2).  Another nu gives NaN, which every caller reports.
    """
    cdef Py_ssize_t i
    cdef double c = 4.0 * nu * gamma, s, poly
    for i in range(n):
        s = sqrt(c * kb[i])
        if nu == 0.5:
            poly = 1.0
        elif nu == 1.5:
            poly = 1.0 + s
        elif nu == 2.5:
            poly = 1.0 + s + s * s / 3.0
        else:
            poly = NAN
        # beyond s = 708 the value is below 1e-300: 0 (also for s = inf, where poly * 0 is NaN)
        kb[i] = 0.0 if s > 708.0 else poly * okl_exp_nonpos(-s)


cdef inline void cvalues_from(const KernelSpec* k, Py_ssize_t n, double* kb) noexcept nogil:
    """kb[i] <- K from kb[i], the distance (Gaussian, Laplacian, Matern) or the inner product."""
    cdef Py_ssize_t i
    if k.kind == GAUSSIAN or k.kind == LAPLACIAN:
        okl_exp_scaled(n, k.gamma, kb)
    elif k.kind == MATERN:
        cmatern(k.nu, k.gamma, n, kb)
    elif k.kind == LINEAR:
        for i in range(n):
            kb[i] += k.coef0
    elif k.kind == POLYNOMIAL:
        for i in range(n):
            kb[i] = cpowi(k.gamma * kb[i] + k.coef0, k.degree)
    else:
        for i in range(n):
            kb[i] = NAN


cdef inline void ckernel_row(const KernelSpec* k, const double* x, const double* C,
                             Py_ssize_t n, Py_ssize_t d, double* kb) noexcept nogil:
    """kb[i] = K(C[i], x) for the n rows of C, distances summed directly.

    The Gaussian, Laplacian and Matern sum their distances directly, so points far from
    the origin lose no digits and far-apart points give K = 0, not 1; a NaN
    stays NaN.  An unknown kind gives NaN, which every caller reports.
    """
    if n == 0:
        return
    if k.kind == GAUSSIAN or k.kind == MATERN:
        okl_sqdists(n, d, C, x, kb)
    elif k.kind == LAPLACIAN:
        okl_l1dists(n, d, C, x, kb)
    else:
        okl_dots(n, d, C, x, kb)
    cvalues_from(k, n, kb)


cdef inline void ckernel_row_norms(const KernelSpec* k, const double* x, double xx,
                                   const double* C, const double* cc, Py_ssize_t n,
                                   Py_ssize_t d, double* kb) noexcept nogil:
    """kb[i] = K(C[i], x) given cc[i] = ||C[i]||^2 and xx = ||x||^2: the row of an expansion.

    The Gaussian and Matern take ||C[i] - x||^2 = xx + cc[i] - 2 <C[i], x> (the work of
    a dot product) where that form keeps its digits, and sum the distance directly where
    it would cancel or overflow (`okl_sqdists_norms`, docs/algorithms.md, section 0.4);
    the other kernels are `ckernel_row`'s.
    """
    if n == 0:
        return
    if k.kind == GAUSSIAN or k.kind == MATERN:
        okl_sqdists_norms(n, d, C, cc, x, xx, kb)
        cvalues_from(k, n, kb)
    else:
        ckernel_row(k, x, C, n, d, kb)


cdef inline double ckernel(const KernelSpec* k, const double* x, const double* u,
                           Py_ssize_t d) noexcept nogil:
    """K(x, u) for one pair."""
    cdef double value
    ckernel_row(k, x, u, 1, d, &value)
    return value


cdef inline double cself(const KernelSpec* k, double xx) noexcept nogil:
    """K(x, x) from ||x||^2."""
    if k.kind == LINEAR:
        return xx + k.coef0
    if k.kind == POLYNOMIAL:
        return cpowi(k.gamma * xx + k.coef0, k.degree)
    if k.kind == GAUSSIAN or k.kind == LAPLACIAN or k.kind == MATERN:
        return 1.0
    return NAN
