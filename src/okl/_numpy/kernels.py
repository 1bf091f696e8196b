"""Kernel values between one point and many centres, as `ckernel_row` computes them."""
import numpy as np

from okl._numpy.codes import Kernel


def kernel_values(kernel, gamma, degree, coef0, centers, x):
    """K(centers[i], x) for every row; distances are summed directly, as in Cython."""
    if kernel == Kernel.GAUSSIAN:
        with np.errstate(over="ignore"):        # points 1e154 apart: distance inf, K = 0
            return np.exp(-gamma * ((centers - x) ** 2).sum(axis=1))
    if kernel == Kernel.LAPLACIAN:
        return np.exp(-gamma * np.abs(centers - x).sum(axis=1))
    if kernel == Kernel.LINEAR:
        return centers @ x + coef0
    if kernel == Kernel.POLYNOMIAL:
        return (gamma * (centers @ x) + coef0) ** degree
    raise ValueError(f"Unknown kernel code {kernel}.")
