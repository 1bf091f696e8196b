"""BSGD budget merging in NumPy: the readable twin of _core/_merge.pyx.

Same rule, same table built by the same solver, same order of operations, so
the two agree to rounding (libm's `exp` here, okl's SIMD one in Cython).  The
derivation is docs/budget.md, section 1.

References
----------
Wang, Crammer and Vucetic, "Breaking the curse of kernelization: budgeted
stochastic gradient descent for large-scale SVM training", JMLR 13, 2012.
"""
import functools
import math

import numpy as np

from okl._numpy.codes import Kernel
from okl._numpy.kernels import kernel_values

NM, NK = 32, 128        # table cells: mu on [0, 1/2], k on [0, 1] (as _core/_merge.pyx)
TOL = 6e-3              # partners whose tabulated rho is within TOL of the best are solved exactly


def solve_t(L, g):
    """The root t <= 0 of t - g tanh(t / 2) = L (L <= 0) on the rising branch, Newton from L - g."""
    t = L - g
    for _ in range(100):
        u = 1.0 / (1.0 + math.exp(t))            # tanh(t / 2) = 1 - 2u, sech^2(t / 2) / 2 = 2u (1 - u)
        tn = t - (t - g * (1.0 - 2.0 * u) - L) / (1.0 - 2.0 * g * u * (1.0 - u))
        tn = min(tn, 0.0)
        if not tn > t:
            break
        t = tn
    return t


def merge_pair(cm, cn, g):
    """(h, c_z, degradation) of merging (c_m, x_m) into a same-sign (c_n, x_n) at h x_m + (1 - h) x_n.

    a, b: the smaller and the larger coefficient; h solves the stationarity
    equation (docs/budget.md); the degradation is a^2 (1 - k^2) - dc (2 c0 + dc)
    with c0 = b + a k and dc = c_z - c0.
    """
    if not cm * cn > 0.0:
        raise ValueError("merge_pair merges coefficients of the same sign only "
                         "(mu = c_m / (c_m + c_n) in (0, 1)).")
    if not g >= 0.0:
        raise ValueError(f"g = gamma ||x_m - x_n||^2 must be >= 0, got {g}.")
    flip = abs(cm) > abs(cn)
    a, b = (cn, cm) if flip else (cm, cn)
    km1 = math.expm1(-g)
    h, k = 0.0, 1.0 + km1
    if 0.0 < g < 700.0:
        e = math.exp(solve_t(math.log(a / b), g))
        h = e / (1.0 + e)
    c0 = b + a * k
    # h = 0 puts z at x_n: K(x_n, z) - 1 = 0, also when g overflowed to inf (not inf * 0)
    dc = a * (math.exp(-g * (1.0 - h) * (1.0 - h)) - k) + (
        b * math.expm1(-g * h * h) if h != 0.0 else 0.0)
    loss = -a * a * km1 * (2.0 + km1) - dc * (2.0 * c0 + dc)      # 1 - k^2 = -km1 (2 + km1)
    return (1.0 - h if flip else h), c0 + dc, loss


def rho_exact(mu, k):
    """rho(mu, k): the degradation of merging (mu, 1 - mu) at kernel value k, over mu^2."""
    if k <= 0.0:
        return 1.0
    if mu == 0.0:                       # the limit mu -> 0: 1 - k^2 (1 + 2 g)
        return 1.0 - k * k * (1.0 - 2.0 * math.log(k))
    return merge_pair(mu, 1.0 - mu, -math.log(k))[2] / (mu * mu)


@functools.cache
def rho_table():
    """rho at mu = i / (2 NM), k = j / NK, from the exact solver (built on first use)."""
    return np.array([[rho_exact(i / (2.0 * NM), j / NK) for j in range(NK + 1)]
                     for i in range(NM + 1)])


def rho(mu, k):
    """rho(mu, k) by bilinear interpolation in `rho_table` (arrays or scalars).

    mu and k are clamped to the table, a NaN to its lower edge, as in _core/_merge.h.
    """
    T = rho_table()
    x, y = np.asarray(mu, dtype=np.float64) * (2 * NM), np.asarray(k, dtype=np.float64) * NK
    x = np.where(x >= 0.0, np.minimum(x, 2 * NM), 0.0)
    y = np.where(y >= 0.0, np.minimum(y, NK), 0.0)
    i, j = np.minimum(x.astype(np.intp), NM - 1), np.minimum(y.astype(np.intp), NK - 1)
    fx, fy = x - i, y - j
    return ((1.0 - fx) * ((1.0 - fy) * T[i, j] + fy * T[i, j + 1])
            + fx * ((1.0 - fy) * T[i + 1, j] + fy * T[i + 1, j + 1]))


def merge_find(centers, coef, gamma, row=None, refine=True):
    """(m, partner, h, c_z, degradation) taking n centres to n - 1; partner -1 removes x_m.

    Every k from one kernel row, every rho from the table; the partner of
    least tabulated rho is solved exactly, then (refine) every other partner
    whose tabulated rho is within TOL of its exact one (units of c_m^2).
    `row`: the kernel values K(x_i, x_{n-1}) of the first n - 1 centres, used
    when m is the last centre (as the compiled `cmerge_find` with row_ready).
    """
    centers = np.asarray(centers, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    m = int(np.argmin(np.abs(coef)))
    cm = float(coef[m])
    if cm == 0.0:
        return m, -1, 0.0, 0.0, 0.0
    same = cm * coef > 0.0
    same[m] = False
    if not same.any():
        return m, -1, 0.0, 0.0, cm * cm
    if row is not None and m == len(coef) - 1:
        k = np.append(np.asarray(row, dtype=np.float64)[:m], 1.0)
    else:
        k = kernel_values(dict(kernel=int(Kernel.GAUSSIAN), gamma=gamma), centers, centers[m])
    am = abs(cm)
    r = np.where(same, rho(am / (am + np.abs(coef)), k), np.inf)
    first = int(np.argmin(r))                     # the first on ties, as okl_merge_argmin

    def exact(i):
        diff = centers[i] - centers[m]
        return merge_pair(cm, float(coef[i]), gamma * float(diff @ diff))

    best = first
    best_h, best_cz, best_loss = exact(first)
    with np.errstate(divide="ignore", invalid="ignore"):    # c_m^2 may underflow to 0, as in C
        limit = np.float64(best_loss) / np.float64(cm * cm) + TOL if refine else -np.inf
    for i in np.flatnonzero(r < limit):
        if i == first:
            continue
        h, cz, loss = exact(i)
        if loss < best_loss:
            best, best_h, best_cz, best_loss = int(i), h, cz, loss
    return m, best, best_h, best_cz, best_loss


def merge_step(centers, coef, gamma):
    """Apply one merge as an expansion would: (centers', coef', degradation)."""
    centers = np.array(centers, dtype=np.float64)
    coef = np.array(coef, dtype=np.float64)
    m, partner, h, cz, loss = merge_find(centers, coef, gamma)
    if partner >= 0:
        centers[partner] = centers[partner] + h * (centers[m] - centers[partner])
        coef[partner] = cz
    centers[m], coef[m] = centers[-1], coef[-1]
    return centers[:-1], coef[:-1], loss


def norm_change(coef_rest, k_rest_m, k_rest_n, k_rest_z, cm, cn, cz, loss):
    """||f'||_K^2 - ||f||_K^2 when c_m K_m + c_n K_n becomes c_z K_z.

    With r = f - c_m K_m - c_n K_n the rest of the expansion,
    ||f'||^2 - ||f||^2 = 2 (c_z r(z) - c_m r(x_m) - c_n r(x_n)) - degradation;
    k_rest_* are the kernel values between the other centres and x_m, x_n, z.
    """
    coef_rest = np.asarray(coef_rest, dtype=np.float64)
    return 2.0 * (cz * (coef_rest @ k_rest_z) - cm * (coef_rest @ k_rest_m)
                  - cn * (coef_rest @ k_rest_n)) - loss


def check_kernel(kind):
    if int(kind) != int(Kernel.GAUSSIAN):
        raise ValueError("The merge budget policy needs the 'gaussian' kernel (K(x, x) = 1 and "
                         "its values along a segment known; for the Laplacian the best merged "
                         "point is always one of the two centres, docs/algorithms.md 7.3). Use "
                         "budget_policy='oldest' or 'smallest' with this kernel.")
