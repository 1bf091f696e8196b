"""Kernels by name: the Python face of the Cython `Kernel` enum.

==========  ===============================  ==================================
name        K(x, u)                          C_K^2 = sup_x K(x, x)
==========  ===============================  ==================================
linear      <x, u> + coef0                   max ||x||^2 + coef0 (data dependent)
polynomial  (gamma <x, u> + coef0)^degree    data dependent
gaussian    exp(-gamma ||x - u||_2^2)        1
laplacian   exp(-gamma ||x - u||_1)          1
==========  ===============================  ==================================

Yang writes the Gaussian with sigma: gamma = 1 / (2 sigma^2); Smale-Yao with c:
gamma = 1 / c^2.
"""
import numpy as np

from okl._core._kernels import Kernel, kernel_matrix as _kernel_matrix

KERNELS = {
    "linear": Kernel.LINEAR,
    "polynomial": Kernel.POLYNOMIAL,
    "gaussian": Kernel.GAUSSIAN,
    "laplacian": Kernel.LAPLACIAN,
}


def kernel_code(name):
    """The `Kernel` enum member of a kernel name."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ValueError(f"Unknown kernel {name!r}; choose one of {sorted(KERNELS)}.") from None


def _as_rows(X):
    X = np.ascontiguousarray(X, dtype=np.float64)
    return X.reshape(1, -1) if X.ndim == 1 else X


def kernel_matrix(X, U=None, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0):
    """Gram matrix ``K[i, j] = K(X[i], U[j])`` (U defaults to X), computed in Cython."""
    X = _as_rows(X)
    U = X if U is None else _as_rows(U)
    if X.shape[1] != U.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but U has {U.shape[1]}.")
    return _kernel_matrix(X, U, int(kernel_code(kernel)), float(gamma), int(degree), float(coef0))


def kernel_diag(X, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0):
    """``K(x, x)`` for every row of X; its running maximum is C_K^2 on the stream."""
    X = _as_rows(X)
    code = kernel_code(kernel)
    if code in (Kernel.GAUSSIAN, Kernel.LAPLACIAN):
        return np.ones(X.shape[0])
    xx = np.einsum("ij,ij->i", X, X)
    if code == Kernel.LINEAR:
        return xx + coef0
    return (gamma * xx + coef0) ** degree
