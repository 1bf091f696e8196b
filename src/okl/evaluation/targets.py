"""The exact targets of the theory: the kernel ridge solution and RKHS distances
(docs/algorithms.md, section 1)."""


import numpy as np

from okl.kernels import kernel_matrix


def kernel_ridge_target(X, y, lam, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0,
                        **params):
    """Coefficients a of f* = sum_i a_i K(x_i, .) with (K + n lam I) a = y; `params`: the
    kernel's other parameters by name (Matern's nu, `okl.kernels.KERNEL_PARAMS`).

    f* minimises mean_i (f(x_i) - y_i)^2 + lam ||f||_K^2, the target of
    Smale-Yao's algorithm when the samples are drawn uniformly from (X, y).
    """
    K = kernel_matrix(X, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, **params)
    n = len(K)
    return np.linalg.solve(K + n * lam * np.eye(n), np.asarray(y, dtype=np.float64))


def rkhs_distance(centers_a, coef_a, centers_b, coef_b, kernel="gaussian", gamma=1.0,
                  degree=3, coef0=0.0, **params):
    """||f_a - f_b||_K for two kernel expansions f = sum_i coef[i] K(centers[i], .);
    `params` as in `kernel_ridge_target`.

    Repeated centres are merged first, so an online model whose centres are
    copies of a finite sample costs O(n^2) in the number of distinct points.
    """
    centers = np.vstack([np.atleast_2d(centers_a), np.atleast_2d(centers_b)])
    coef = np.concatenate([np.ravel(coef_a), -np.ravel(coef_b)])
    unique, inverse = np.unique(centers, axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=coef, minlength=len(unique))
    K = kernel_matrix(unique, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
                      **params)
    return float(np.sqrt(max(merged @ K @ merged, 0.0)))
