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

from okl._numpy.codes import Kernel

INV_PHI = 0.6180339887498949      # (sqrt(5) - 1) / 2
TOL = 1e-5                        # golden-section bracket length at which the search stops


def merge_cz(cm, cn, g, h):
    """c_z(h) = c_m exp(-g (1 - h)^2) + c_n exp(-g h^2), g = gamma ||x_m - x_n||^2."""
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


def merge_pair(cm, cn, g):
    """(h, c_z, degradation) of merging (c_m, x_m) into a same-sign (c_n, x_n), |c_m| <= |c_n|."""
    if not cm * cn > 0.0:
        raise ValueError("merge_pair merges coefficients of the same sign only.")
    k = math.exp(-g)
    h, cz = 0.0, cn + cm * k                        # h = 0: z = x_n
    if g > 0.0:
        hg = golden(cm, cn, g)
        czg = merge_cz(cm, cn, g, hg)
        if abs(czg) > abs(cz):
            h, cz = hg, czg
    return h, cz, cm * cm + cn * cn + 2.0 * cm * cn * k - cz * cz


def bound(am, an, g):
    """Upper bound of max |c_z| on [0, 1]: max_k an T[k] + am T[7 - k], T[j] = exp(-g j^2 / 64)."""
    q = math.exp(-g / 64.0)
    q2, step, T = q * q, q, [1.0]
    for _ in range(7):
        T.append(T[-1] * step)
        step = step * q2
    ub = 0.0
    for j in range(8):
        v = an * T[j] + am * T[7 - j]
        if v > ub:
            ub = v
    return ub


def merge_find(centers, coef, gamma):
    """(m, partner, h, c_z, degradation) taking n centres to n - 1; partner -1 removes x_m."""
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
    diff = centers - centers[m]
    g_all = gamma * (diff * diff).sum(axis=1)
    near = int(np.flatnonzero(same)[np.argmin(g_all[same])])
    best = near
    best_h, best_cz, best_loss = merge_pair(cm, float(coef[near]), float(g_all[near]))
    am = abs(cm)
    for i in np.flatnonzero(same):
        if i == near:
            continue
        cn, g = float(coef[i]), float(g_all[i])
        an = abs(cn)
        ub = bound(am, an, g)
        if cm * cm + cn * cn + 2.0 * cm * cn * math.exp(-g) - ub * ub >= best_loss:
            continue                                 # cannot beat the best: skipped
        h, cz, loss = merge_pair(cm, cn, g)
        if loss < best_loss:
            best, best_h, best_cz, best_loss = int(i), h, cz, loss
    return m, best, best_h, best_cz, best_loss


def merge_step(centers, coef, gamma):
    """Apply one merge as an expansion would: (centers', coef', degradation)."""
    centers = np.array(centers, dtype=np.float64)
    coef = np.array(coef, dtype=np.float64)
    m, partner, h, cz, loss = merge_find(centers, coef, gamma)
    if partner >= 0:
        centers[partner] = h * centers[m] + (1.0 - h) * centers[partner]
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
