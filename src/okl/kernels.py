"""Kernels by name: one row per kernel, the Python face of the Cython `Kernel` enum.

Yang writes the Gaussian with sigma: gamma = 1 / (2 sigma^2); Smale-Yao with c:
gamma = 1 / c^2.  The Matern kernel of smoothness `nu` (0.5, 1.5 or 2.5, in
closed form) has length scale 1 / sqrt(2 gamma), so that it tends to the
Gaussian of the same gamma as nu grows and gamma="scale" fits both;
``s = sqrt(4 nu gamma) ||x - u||_2``.  See docs/algorithms.md, section 0.2.

The kernel parameters travel by name, as one dict (`kernel_params`: the
kernel's code and gamma, degree, coef0, nu), to the expansions, the feature
maps and the `KernelSpec` of the compiled loops.

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
    diag: Callable          # (||x||^2 per row, kernel_params dict) -> K(x, x)
    # a width kernel, K(x, u) = k(gamma * distance): gamma="scale" and the spread check apply
    width: bool = False
    # (rng, kernel_params dict, shape) -> frequencies g drawn once at unit scale from the
    # kernel's spectral density (Bochner), for random Fourier features; None: the kernel has no
    # sampler, approximation="fourier" refuses it
    fourier: Optional[Callable] = None
    # kernel_params dict -> s(gamma): the frequencies of width gamma are s(gamma) g (a scale
    # family, so gamma="scale"'s warm-up re-reads the same draw; docs/defaults.md, section 2)
    fourier_scale: Optional[Callable] = None


def _matern_frequencies(rng, p, shape):
    """Multivariate Student-t of 2 nu degrees of freedom, unit scale, one per column (scale
    sqrt(2 gamma): `_root_2_gamma`)."""
    nu = p["nu"]
    z = rng.standard_normal(size=shape)
    return z / np.sqrt(rng.chisquare(2.0 * nu, size=shape[1]) / (2.0 * nu))


def _root_2_gamma(p):
    return np.sqrt(2.0 * p["gamma"])


def _ones(xx, p):
    return np.ones_like(xx)


KERNELS = {row.name: row for row in (
    KernelRow("linear", Kernel.LINEAR, "<x, u> + coef0", "max ||x||^2 + coef0 (data)",
              lambda xx, p: xx + p["coef0"]),
    KernelRow("polynomial", Kernel.POLYNOMIAL, "(gamma <x, u> + coef0)^degree", "data dependent",
              lambda xx, p: (p["gamma"] * xx + p["coef0"]) ** p["degree"]),
    KernelRow("gaussian", Kernel.GAUSSIAN, "exp(-gamma ||x - u||_2^2)", "1", _ones, width=True,
              fourier=lambda rng, p, shape: rng.standard_normal(size=shape),
              fourier_scale=_root_2_gamma),
    KernelRow("laplacian", Kernel.LAPLACIAN, "exp(-gamma ||x - u||_1)", "1", _ones, width=True,
              fourier=lambda rng, p, shape: rng.standard_cauchy(size=shape),
              fourier_scale=lambda p: p["gamma"]),
    KernelRow("matern", Kernel.MATERN,
              "exp(-s) {1, 1 + s, 1 + s + s^2/3} (nu = 0.5, 1.5, 2.5)", "1", _ones, width=True,
              fourier=_matern_frequencies, fourier_scale=_root_2_gamma),
)}

#: the smoothness values of the Matern kernel (closed forms; docs/algorithms.md, section 0.2)
MATERN_NU = (0.5, 1.5, 2.5)
#: the kernel parameters and their defaults; `kernel_params` gives them to the loops by name
KERNEL_PARAMS = dict(gamma=1.0, degree=3, coef0=0.0, nu=1.5)


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


def kernel_params(kernel, **params):
    """The parameters the loops take, by name: the kernel's code and gamma, degree, coef0, nu.

    `kernel` is a name or a code; a parameter not given takes its default
    (`KERNEL_PARAMS`), so an estimator without a kernel's own parameter still
    builds its spec.
    """
    code = int(kernel) if not isinstance(kernel, str) else int(kernel_code(kernel))
    out = dict(kernel=code)
    for name, default in KERNEL_PARAMS.items():
        value = params.get(name, default)
        out[name] = int(value) if name == "degree" else float(value)
    return out


def _as_rows(X):
    X = np.ascontiguousarray(X, dtype=np.float64)
    return X.reshape(1, -1) if X.ndim == 1 else X


def kernel_matrix(X, U=None, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0, nu=1.5):
    """Gram matrix ``K[i, j] = K(X[i], U[j])`` (U defaults to X), computed in Cython."""
    X = _as_rows(X)
    U = X if U is None else _as_rows(U)
    if X.shape[1] != U.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but U has {U.shape[1]}.")
    return _kernel_matrix(X, U, int(kernel_code(kernel)), float(gamma), int(degree), float(coef0),
                          float(nu))


def kernel_diag(X, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0, nu=1.5):
    """``K(x, x)`` for every row of X; its running maximum is C_K^2 on the stream."""
    X = _as_rows(X)
    return kernel_row(kernel).diag(np.einsum("ij,ij->i", X, X), kernel_params(
        kernel, gamma=gamma, degree=degree, coef0=coef0, nu=nu))
