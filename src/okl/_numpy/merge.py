"""BSGD budget merging in NumPy: the readable twin of _core/_merge.pxd.

Same rule, same order of operations, same scalar exponentials (libm's, via
`math.exp`), so the two agree to rounding of the distances.  The derivation
is in the header of `_core/_merge.pxd` and in docs/budget.md.

References
----------
Wang, Crammer and Vucetic, "Breaking the curse of kernelization: budgeted
stochastic gradient descent for large-scale SVM training", JMLR 13, 2012.
"""
import math

import numpy as np

from okl._core._kernels import Kernel

MERGE_KERNELS = (int(Kernel.GAUSSIAN), int(Kernel.LAPLACIAN))
INV_PHI = 0.6180339887498949      # (sqrt(5) - 1) / 2
TOL = 1e-5                        # golden-section bracket length at which the search stops


def merge_cz(cm, cn, g, h):
    """c_z(h) = c_m exp(-g (1 - h)^2) + c_n exp(-g h^2) (Gaussian, g = gamma ||x_m - x_n||^2)."""
    return cm * math.exp(-g * (1.0 - h) * (1.0 - h)) + cn * math.exp(-g * h * h)


def golden(cm, cn, g):
    """h in [0, 1] maximising sign(c_m) c_z(h), for same-sign c_m, c_n."""
    sgn = 1.0 if cm > 0.0 else -1.0
    a, b = 0.0, 1.0
    p, q = b - INV_PHI * (b - a), a + INV_PHI * (b - a)
    fp, fq = sgn * merge_cz(cm, cn, g, p), sgn * merge_cz(cm, cn, g, q)
    while b - a >= TOL:
        if fp >= fq:
            b, q, fq = q, p, fp
            p = b - INV_PHI * (b - a)
            fp = sgn * merge_cz(cm, cn, g, p)
        else:
            a, p, fp = p, q, fq
            q = a + INV_PHI * (b - a)
            fq = sgn * merge_cz(cm, cn, g, q)
    return 0.5 * (a + b)


def merge_pair(cm, cn, g, kind):
    """(h, c_z, degradation) of merging (c_m, x_m) into (c_n, x_n); see _merge.pxd."""
    check_kernel(kind)
    k = math.exp(-g)
    base = cm * cm + cn * cn + 2.0 * cm * cn * k
    h, cz = 0.0, cn + cm * k                        # h = 0: z = x_n
    if kind == Kernel.GAUSSIAN and cm * cn > 0.0 and g > 0.0:
        hg = golden(cm, cn, g)
        czg = merge_cz(cm, cn, g, hg)
        if abs(cz) < abs(czg):
            h, cz = hg, czg
    return h, cz, base - cz * cz


def merge_find(centers, coef, kind, gamma):
    """(m, partner, h, c_z, degradation) taking n centres to n - 1; partner -1 removes x_m."""
    check_kernel(kind)
    centers = np.asarray(centers, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    n = len(coef)
    m = int(np.argmin(np.abs(coef)))
    cm = float(coef[m])
    if n < 2 or cm == 0.0:
        return m, -1, 0.0, 0.0, cm * cm
    diff = centers - centers[m]
    dist = (diff * diff).sum(axis=1) if kind == Kernel.GAUSSIAN else np.abs(diff).sum(axis=1)
    g_all = gamma * dist
    g_all[m] = np.inf
    near = int(np.argmin(g_all))
    best = near
    best_h, best_cz, best_loss = merge_pair(cm, float(coef[near]), float(g_all[near]), kind)
    am = abs(cm)
    for i in range(n):
        if i == m or i == near:
            continue
        cn, g = float(coef[i]), float(g_all[i])
        an = abs(cn)
        if kind == Kernel.GAUSSIAN and cm * cn > 0.0:
            rho = am / (am + an)
            ub = max(an + am * math.exp(-g * (1.0 - rho) * (1.0 - rho)),
                     am + an * math.exp(-0.25 * g))
            lb = cm * cm + cn * cn + 2.0 * cm * cn * math.exp(-g) - ub * ub
        else:
            lb = cm * cm * (1.0 - math.exp(-2.0 * g))
        if lb >= best_loss:
            continue
        h, cz, loss = merge_pair(cm, cn, g, kind)
        if loss < best_loss:
            best, best_h, best_cz, best_loss = i, h, cz, loss
    return m, best, best_h, best_cz, best_loss


def merge_step(centers, coef, kind, gamma):
    """Apply one merge as an expansion would: (centers', coef', degradation)."""
    centers = np.array(centers, dtype=np.float64)
    coef = np.array(coef, dtype=np.float64)
    m, partner, h, cz, loss = merge_find(centers, coef, kind, gamma)
    if partner >= 0:
        centers[partner] = h * centers[m] + (1.0 - h) * centers[partner]
        coef[partner] = cz
    centers[m], coef[m] = centers[-1], coef[-1]
    return centers[:-1], coef[:-1], loss


def norm_change(coef, gram_rest_m, gram_rest_n, gram_rest_z, cm, cn, cz, loss):
    """||f'||_K^2 - ||f||_K^2 when c_m K_m + c_n K_n becomes c_z K_z.

    With g = f - c_m K_m - c_n K_n the rest of the expansion,
    ||f'||^2 - ||f||^2 = 2 (c_z g(z) - c_m g(x_m) - c_n g(x_n)) - degradation;
    gram_rest_* are the kernel values between the other centres and x_m, x_n, z.
    """
    coef = np.asarray(coef, dtype=np.float64)
    return 2.0 * (cz * (coef @ gram_rest_z) - cm * (coef @ gram_rest_m)
                  - cn * (coef @ gram_rest_n)) - loss


def check_kernel(kind):
    if int(kind) not in MERGE_KERNELS:
        raise ValueError("Merging budgets need a kernel with K(x, x) = 1 whose value along a "
                         "segment is known: 'gaussian' or 'laplacian'.")
