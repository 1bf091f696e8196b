"""Array-level kernel functions over the inline point functions of _kernels.pxd."""
import os
import warnings

import numpy as np

# the distance rule of `okl_sqdists_norms` (docs/algorithms.md, section 0.4)
CANCEL_TAU = OKL_CANCEL_TAU
EXPAND_MIN_D = OKL_EXPAND_MIN_D

# the SIMD levels of the loops of _simd.h, by the names OKL_SIMD takes
SIMD_LEVELS = {1: "baseline", 3: "x86-64-v3", 4: "x86-64-v4"}
if os.environ.get("OKL_SIMD", "") not in ("", *SIMD_LEVELS.values()):
    warnings.warn(f"OKL_SIMD={os.environ['OKL_SIMD']!r} is not a SIMD level and is ignored: "
                  f"use one of {', '.join(SIMD_LEVELS.values())}.", RuntimeWarning, stacklevel=1)


def simd_level():
    """The SIMD level the compiled loops run at: "baseline", "x86-64-v3" or "x86-64-v4", the
    highest the CPU supports or the lower one the environment variable OKL_SIMD names, chosen
    when the modules are loaded (docs/architecture.md, "SIMD levels")."""
    return SIMD_LEVELS[okl_simd_level()]


def kernel_matrix(const double[:, ::1] X, const double[:, ::1] U, params):
    """Gram matrix K(X_i, U_j) as a new (n, m) float64 array; `params` the kernel's record
    (`okl.kernels.kernel_params`)."""
    cdef Py_ssize_t n = X.shape[0], m = U.shape[0], d = X.shape[1], i
    cdef KernelSpec spec = kernel_spec(params)
    out_arr = np.empty((n, m), dtype=np.float64)
    cdef double[:, ::1] out = out_arr
    if n == 0 or m == 0:
        return out_arr
    with nogil:
        for i in range(n):
            ckernel_row(&spec, &X[i, 0], &U[0, 0], m, d, &out[i, 0])
    return out_arr


def sq_distances(const double[:, ::1] X, const double[:, ::1] U, const double[::1] U_sqnorms=None):
    """||X_i - U_j||^2 as a new (n, m) array: summed directly, or from the norms U_sqnorms
    and ||X_i||^2 by the rule of the expansions (`okl_sqdists_norms`); for tests."""
    cdef Py_ssize_t n = X.shape[0], m = U.shape[0], d = X.shape[1], i
    if U.shape[1] != d or (U_sqnorms is not None and U_sqnorms.shape[0] != m):
        raise ValueError("X, U and U_sqnorms do not match.")
    out_arr = np.empty((n, m), dtype=np.float64)
    cdef double[:, ::1] out = out_arr
    if n == 0 or m == 0:
        return out_arr
    with nogil:
        for i in range(n):
            if U_sqnorms is None:
                okl_sqdists(m, d, &U[0, 0], &X[i, 0], &out[i, 0])
            else:
                okl_sqdists_norms(m, d, &U[0, 0], &U_sqnorms[0], &X[i, 0],
                                  cdot(&X[i, 0], &X[i, 0], d), &out[i, 0])
    return out_arr


def exp_nonpos(const double[::1] x, double gamma=-1.0, bint loop=False):
    """exp(-gamma x) by okl_exp_nonpos (docs/algorithms.md, section 0.4), as a new array:
    one call per value, or (loop) the SIMD loop of the Gaussian rows, okl_exp_scaled;
    the default gamma = -1 gives exp(x).  For tests."""
    cdef Py_ssize_t n = x.shape[0], i
    out_arr = np.array(x, dtype=np.float64)
    cdef double[::1] out = out_arr
    if n == 0:
        return out_arr
    with nogil:
        if loop:
            okl_exp_scaled(n, gamma, &out[0])
        else:
            for i in range(n):
                out[i] = okl_exp_nonpos(-gamma * out[i])
    return out_arr
