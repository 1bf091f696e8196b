"""Kernel values between one point and many centres, as `ckernel_row` computes them."""
import numpy as np

from okl._numpy.codes import Kernel


def matern(nu, gamma, sq):
    """Matern_nu(s), s = sqrt(4 nu gamma sq), from squared distances (as `cmatern`)."""
    s = np.sqrt(4.0 * nu * gamma * sq)
    if nu == 0.5:
        poly = np.ones_like(s)
    elif nu == 1.5:
        poly = 1.0 + s
    elif nu == 2.5:
        poly = 1.0 + s + s * s / 3.0
    else:
        poly = np.full_like(s, np.nan)
    with np.errstate(invalid="ignore"):
        return np.where(s > 708.0, 0.0, poly * np.exp(-s))


def kernel_values(k, centers, x):
    """K(centers[i], x) for every row, with the kernel parameters `k` (a dict, by name).

    `k` holds "kernel" (a code), "gamma", "degree", "coef0" and "nu", as the
    `KernelSpec` of _core/_kernels.pxd; distances are summed directly, as in Cython.
    """
    kernel, gamma = k["kernel"], k["gamma"]
    if kernel == Kernel.GAUSSIAN:
        with np.errstate(over="ignore"):        # points 1e154 apart: distance inf, K = 0
            return np.exp(-gamma * ((centers - x) ** 2).sum(axis=1))
    if kernel == Kernel.LAPLACIAN:
        return np.exp(-gamma * np.abs(centers - x).sum(axis=1))
    if kernel == Kernel.MATERN:
        with np.errstate(over="ignore"):
            return matern(k["nu"], gamma, ((centers - x) ** 2).sum(axis=1))
    if kernel == Kernel.LINEAR:
        return centers @ x + k["coef0"]
    if kernel == Kernel.POLYNOMIAL:
        return (gamma * (centers @ x) + k["coef0"]) ** k["degree"]
    raise ValueError(f"Unknown kernel code {kernel}.")
