"""Python face of the BSGD merge helpers of _merge.pxd (tests, benchmarks).

The hot path never comes through here: `KernelExpansion.cmerge` cimports
`cmerge_find` and `cmerge_point` and calls them inside its nogil step.
"""
import numpy as np

from okl._core._merge cimport cmerge_find, cmerge_pair, cmerge_point


def merge_pair(double cm, double cn, double g):
    """(h, c_z, degradation) of merging (c_m, x_m) into a same-sign partner (c_n, x_n).

    g is gamma ||x_m - x_n||_2^2 (Gaussian kernel); |c_m| <= |c_n|.
    """
    cdef double h, cz, loss
    if not cm * cn > 0.0:
        raise ValueError("merge_pair merges coefficients of the same sign only.")
    cmerge_pair(cm, cn, g, &h, &cz, &loss)
    return h, cz, loss


def merge_find(const double[:, ::1] centers,   # IN (n, d)
               const double[::1] coef,         # IN (n,) raw coefficients
               double gamma):
    """(m, partner, h, c_z, degradation): the merge that takes n centres to n - 1.

    partner is -1 when x_m is removed instead (no centre of the sign of c_m,
    or c_m == 0).  The merged point is z = h x_m + (1 - h) x_partner.
    """
    cdef Py_ssize_t n = centers.shape[0], d = centers.shape[1], m = 0, partner
    cdef double h, cz, loss
    if coef.shape[0] != n or n < 1:
        raise ValueError(f"coef has {coef.shape[0]} entries for {n} centres (need n >= 1).")
    cdef double[::1] work = np.empty(n, dtype=np.float64)
    with nogil:
        partner = cmerge_find(&centers[0, 0], &coef[0], n, d, gamma, &work[0],
                              &m, &h, &cz, &loss)
    return int(m), int(partner), h, cz, loss


def merge_step(centers, coef, double gamma):
    """Apply one merge as KernelExpansion does: (centers', coef', degradation), n - 1 rows.

    z and c_z go to the partner's slot, then the last row moves into slot m.
    """
    centers = np.array(centers, dtype=np.float64, order="C")
    coef = np.array(coef, dtype=np.float64)
    m, partner, h, cz, loss = merge_find(centers, coef, gamma)
    cdef double[:, ::1] c_view = centers
    cdef Py_ssize_t d = centers.shape[1], last = centers.shape[0] - 1
    if partner >= 0:
        cmerge_point(&c_view[m, 0], &c_view[partner, 0], d, h, &c_view[partner, 0])
        coef[partner] = cz
    centers[m] = centers[last]
    coef[m] = coef[last]
    return centers[:last].copy(), coef[:last].copy(), loss
