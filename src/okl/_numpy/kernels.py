"""Kernel values between one point and many centres, as the Cython loops compute them."""
import numpy as np

from okl._core._kernels import Kernel


def kernel_values(kernel, gamma, degree, coef0, centers, sqnorms, x):
    """K(centers[i], x) for every row; `sqnorms` are the rows' squared norms."""
    if kernel == Kernel.LAPLACIAN:
        return np.exp(-gamma * np.abs(centers - x).sum(axis=1))
    dots = centers @ x
    if kernel == Kernel.LINEAR:
        return dots + coef0
    if kernel == Kernel.POLYNOMIAL:
        return (gamma * dots + coef0) ** degree
    return np.exp(-gamma * np.maximum(x @ x + sqnorms - 2.0 * dots, 0.0))
