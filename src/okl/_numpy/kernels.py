"""Kernel values between one point and many centres, as `ckernel_row` and `ckernel_row_norms`
compute them, and the kernel record they read (the twin of `KernelSpec`, _core/_kernels.pxd)."""
from enum import IntEnum

import numpy as np


class Kernel(IntEnum):
    LINEAR = 0        # <x, u> + coef0
    POLYNOMIAL = 1    # (gamma <x, u> + coef0) ** degree
    GAUSSIAN = 2      # exp(-gamma ||x - u||_2^2)
    LAPLACIAN = 3     # exp(-gamma ||x - u||_1)
    MATERN = 4        # Matern of smoothness nu and length scale 1 / sqrt(2 gamma)


#: every kernel parameter and its default, by name: the fields of `KernelSpec` beside the
#: code "kernel" (okl.kernels.KERNEL_PARAMS; a parameter's type is its default's)
PARAMS = dict(gamma=1.0, degree=3, coef0=0.0, nu=1.5)


def kernel_record(params, complete=False):
    """The kernel record of `params` (a record, or a model's state that holds one): the code
    "kernel" and every parameter of `PARAMS`, typed, as a new dict.

    A parameter missing raises KeyError, as `kernel_spec` does; with `complete` it takes its
    default (a state saved before the parameter existed).
    """
    out = dict(kernel=int(params["kernel"]))
    for name, default in PARAMS.items():
        out[name] = type(default)(params.get(name, default) if complete else params[name])
    return out

# as OKL_CANCEL_TAU and OKL_EXPAND_MIN_D of _core/_simd.h (docs/algorithms.md, section 0.4)
CANCEL_TAU = 0.25
EXPAND_MIN_D = 64
_MAX = np.finfo(np.float64).max


def sq_distances(centers, x, sqnorms=None):
    """||centers[i] - x||^2 for every row: summed directly, or from the centres' squared
    norms `sqnorms` and ||x||^2 by the rule of `okl_sqdists_norms`.

    With at least EXPAND_MIN_D features, the expanded form (||x||^2 + sqnorms) - 2 centers @ x
    is kept where it is at least CANCEL_TAU (||x||^2 + sqnorms) (and finite); elsewhere it
    would cancel, and those rows are summed directly (docs/algorithms.md, section 0.4).
    """
    with np.errstate(over="ignore", invalid="ignore"):      # far or huge points: inf, then K = 0
        if sqnorms is None or centers.shape[1] < EXPAND_MIN_D:
            return ((centers - x) ** 2).sum(axis=1)
        s = x @ x + sqnorms
        dist = s - 2.0 * (centers @ x)
        near = ~((dist >= CANCEL_TAU * s) & (s <= _MAX))
        if near.any():
            dist[near] = ((centers[near] - x) ** 2).sum(axis=1)
        return dist


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


def kernel_values(k, centers, x, sqnorms=None):
    """K(centers[i], x) for every row, with the kernel parameters `k` (a dict, by name).

    `k` is the kernel record (`kernel_record`): "kernel" (a code) and every
    parameter of `PARAMS`, as the `KernelSpec` of _core/_kernels.pxd.
    Distances are summed directly (`ckernel_row`), or, given the centres'
    squared norms `sqnorms`, taken by the rule of `sq_distances`
    (`ckernel_row_norms`).
    """
    return kernel_of(k, kernel_base(k["kernel"], centers, x, sqnorms))


def kernel_base(kernel, centers, x, sqnorms=None):
    """What the kernel of code `kernel` is a function of, for every row: the squared distances
    (`sq_distances`; Gaussian, Matern), the L1 distances (Laplacian) or the inner products
    (linear, polynomial) of the centres and x.  No parameter enters it."""
    if kernel in (Kernel.GAUSSIAN, Kernel.MATERN):
        return sq_distances(centers, x, sqnorms)
    if kernel == Kernel.LAPLACIAN:
        return np.abs(centers - x).sum(axis=1)
    if kernel in (Kernel.LINEAR, Kernel.POLYNOMIAL):
        return centers @ x
    raise ValueError(f"Unknown kernel code {kernel}.")


def kernel_of(k, base):
    """The kernel values of the record `k` from `kernel_base`'s values `base` (of any shape,
    element by element)."""
    kernel, gamma = k["kernel"], k["gamma"]
    if kernel in (Kernel.GAUSSIAN, Kernel.LAPLACIAN):
        return np.exp(-gamma * base)
    if kernel == Kernel.MATERN:
        return matern(k["nu"], gamma, base)
    if kernel == Kernel.LINEAR:
        return base + k["coef0"]
    if kernel == Kernel.POLYNOMIAL:
        return (gamma * base + k["coef0"]) ** k["degree"]
    raise ValueError(f"Unknown kernel code {kernel}.")


#: gram_base's differences of rows are taken this many entries at a time at most
GRAM_BLOCK = 1 << 17


def gram_base(kernel, X):
    """`kernel_base` of the rows of X against each other, an (n, n) matrix: the kernel's Gram
    matrix at any width is `kernel_of` of it, each entry as `kernel_values` gives it (the
    distances of a block of rows at once, each summed as `sq_distances` sums it)."""
    n = len(X)
    if kernel not in (Kernel.GAUSSIAN, Kernel.MATERN, Kernel.LAPLACIAN):
        return np.array([kernel_base(kernel, X, x) for x in X]).reshape(n, n)
    out = np.empty((n, n))
    step = max(1, GRAM_BLOCK // max(X.size, 1))
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, n, step):
            diff = X[lo:lo + step, None, :] - X[None, :, :]
            (np.abs if kernel == Kernel.LAPLACIAN else np.square)(diff, out=diff)
            out[lo:lo + step] = diff.sum(axis=2)
    return out
