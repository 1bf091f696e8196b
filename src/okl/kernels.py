"""Kernels by name: one row per kernel, the Python face of the Cython `Kernel` enum.

Yang writes the Gaussian with sigma: gamma = 1 / (2 sigma^2); Smale-Yao with c:
gamma = 1 / c^2.  See docs/algorithms.md, section 0.2.

References
----------
See docs/algorithms.md, section 0.2.

.. [1] S. Smale and Y. Yao, "Online learning algorithms", Foundations of
   Computational Mathematics, 6(2):145-170, 2006.
.. [2] P. Yang, "Quantile regression with samples drawn from
   non-identical distributions", Journal of Mathematics (Shuxue
   Zazhi), 39(5):713-720, 2019. In Chinese, with an English
   abstract.
"""
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from okl._core._kernels import Kernel, kernel_matrix as _kernel_matrix


class KernelScaleWarning(UserWarning):
    """The kernel width does not fit the scale of the data (see gamma="scale")."""


@dataclass(frozen=True)
class KernelRow:
    """Everything okl knows about one kernel."""

    name: str
    code: Kernel
    formula: str            # K(x, u)
    sup: str                # C_K^2 = sup_x K(x, x)
    diag: Callable          # (||x||^2 per row, gamma, degree, coef0) -> K(x, x)
    # a width kernel, K(x, u) = k(gamma * distance): gamma="scale" and the spread check apply
    width: bool = False
    # (rng, gamma, shape) -> frequencies drawn from the kernel's spectral density (Bochner),
    # for random Fourier features; None: the kernel has no sampler, approximation="fourier"
    # refuses it
    fourier: Optional[Callable] = None


KERNELS = {row.name: row for row in (
    KernelRow("linear", Kernel.LINEAR, "<x, u> + coef0", "max ||x||^2 + coef0 (data)",
              lambda xx, gamma, degree, coef0: xx + coef0),
    KernelRow("polynomial", Kernel.POLYNOMIAL, "(gamma <x, u> + coef0)^degree", "data dependent",
              lambda xx, gamma, degree, coef0: (gamma * xx + coef0) ** degree),
    KernelRow("gaussian", Kernel.GAUSSIAN, "exp(-gamma ||x - u||_2^2)", "1",
              lambda xx, gamma, degree, coef0: np.ones_like(xx), width=True,
              fourier=lambda rng, gamma, shape: rng.normal(0.0, np.sqrt(2.0 * gamma), size=shape)),
    KernelRow("laplacian", Kernel.LAPLACIAN, "exp(-gamma ||x - u||_1)", "1",
              lambda xx, gamma, degree, coef0: np.ones_like(xx), width=True,
              fourier=lambda rng, gamma, shape: gamma * rng.standard_cauchy(size=shape)),
)}


def _table():
    rows = [(r.name, r.formula, r.sup) for r in KERNELS.values()]
    widths = [max(len(c) for c in col) for col in zip(("name", "K(x, u)", "C_K^2"), *rows)]
    rule = "  ".join("=" * w for w in widths)

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([rule, line(("name", "K(x, u)", "C_K^2")), rule, *map(line, rows), rule])


__doc__ = __doc__.replace("\nReferences\n", "\n" + _table() + "\n\nReferences\n", 1)  # before References


def kernel_row(name):
    """The `KernelRow` of a kernel name."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ValueError(f"Unknown kernel {name!r}; choose one of {sorted(KERNELS)}.") from None


def kernel_code(name):
    """The `Kernel` enum member of a kernel name."""
    return kernel_row(name).code


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
    return kernel_row(kernel).diag(np.einsum("ij,ij->i", X, X), gamma, degree, coef0)
