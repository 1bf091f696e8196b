"""Kernels by name: one row per kernel, the Python face of the Cython `Kernel` enum.

Yang writes the Gaussian with sigma: gamma = 1 / (2 sigma^2); Smale-Yao with c:
gamma = 1 / c^2.  The Matern kernel of smoothness `nu` (0.5, 1.5 or 2.5, in
closed form) has length scale 1 / sqrt(2 gamma), so that it tends to the
Gaussian of the same gamma as nu grows and gamma="scale" fits both;
``s = sqrt(4 nu gamma) ||x - u||_2``.  See docs/algorithms.md, section 0.2.

The kernel parameters travel as one record, built here and nowhere else
(`kernel_params`: a dict of the kernel's code and every parameter of
`KERNEL_PARAMS` by name), whole to the expansions, the feature maps, the
models and the NumPy twins; the compiled loops turn it into one `KernelSpec`
(`_core/_kernels.pxd`, `kernel_spec`).  A kernel's row names the parameters
it reads; one that no estimator names reaches it through the estimators'
``kernel_params`` dict (docs/architecture.md, "Adding things").

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
from numbers import Real
from typing import Callable, Optional

import numpy as np

from okl._core._kernels import Kernel, kernel_matrix as _kernel_matrix
from okl._numpy.kernels import PARAMS, kernel_record


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
    # the parameters K reads, by name (names of KERNEL_PARAMS)
    params: tuple = ()


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
              lambda xx, p: xx + p["coef0"], params=("coef0",)),
    KernelRow("polynomial", Kernel.POLYNOMIAL, "(gamma <x, u> + coef0)^degree", "data dependent",
              lambda xx, p: (p["gamma"] * xx + p["coef0"]) ** p["degree"],
              params=("gamma", "degree", "coef0")),
    KernelRow("gaussian", Kernel.GAUSSIAN, "exp(-gamma ||x - u||_2^2)", "1", _ones, width=True,
              fourier=lambda rng, p, shape: rng.standard_normal(size=shape),
              fourier_scale=_root_2_gamma, params=("gamma",)),
    KernelRow("laplacian", Kernel.LAPLACIAN, "exp(-gamma ||x - u||_1)", "1", _ones, width=True,
              fourier=lambda rng, p, shape: rng.standard_cauchy(size=shape),
              fourier_scale=lambda p: p["gamma"], params=("gamma",)),
    KernelRow("matern", Kernel.MATERN,
              "exp(-s) {1, 1 + s, 1 + s + s^2/3} (nu = 0.5, 1.5, 2.5)", "1", _ones, width=True,
              fourier=_matern_frequencies, fourier_scale=_root_2_gamma, params=("gamma", "nu")),
)}

#: the smoothness values of the Matern kernel (closed forms; docs/algorithms.md, section 0.2)
MATERN_NU = (0.5, 1.5, 2.5)
#: every kernel parameter and its default (those of the record's twin, okl._numpy.kernels);
#: `kernel_params` gives them to the loops by name
KERNEL_PARAMS = PARAMS
#: the kernel parameters the kernel learners name (their __init__ and
#: `okl._params.kernel_constraints`); any other reaches the kernel through their
#: `kernel_params` dict.  By this list, not by attribute: an estimator's own parameter may
#: share a kernel parameter's name (the PA's alpha)
NAMED_KERNEL_PARAMS = ("gamma", "degree", "coef0", "nu")


def _number(v):
    return isinstance(v, Real) and not isinstance(v, (bool, np.bool_))


#: what a value of a kernel's own parameter must be: (test, description); one without an
#: entry takes any number.  An estimator that names the parameter checks it with the same
#: test (nu: `okl._params.kernel_constraints`); gamma, degree and coef0 are the estimators'.
KERNEL_CHECKS = dict(
    nu=(lambda v: _number(v) and float(v) in MATERN_NU,
        "one of " + ", ".join(map(str, MATERN_NU))),
)


def _table():
    rows = [(r.name, r.formula, r.sup) for r in KERNELS.values()]
    widths = [max(len(c) for c in col) for col in zip(("name", "K(x, u)", "C_K^2"), *rows)]
    rule = "  ".join("=" * w for w in widths)

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([rule, line(("name", "K(x, u)", "C_K^2")), rule, *map(line, rows), rule])


__doc__ = __doc__.replace("\nReferences\n", "\n" + _table() + "\n\nReferences\n", 1)  # before References


def kernel_row(name):
    """The `KernelRow` of a kernel name (or of its code)."""
    if not isinstance(name, str):
        for row in KERNELS.values():
            if int(row.code) == int(name):
                return row
        raise ValueError(f"Unknown kernel code {name!r}.")
    try:
        return KERNELS[name]
    except KeyError:
        raise ValueError(f"Unknown kernel {name!r}; choose one of {sorted(KERNELS)}.") from None


def kernel_code(name):
    """The `Kernel` enum member of a kernel name."""
    return kernel_row(name).code


def kernel_params(kernel, kernel_params=None, **params):
    """The kernel's record, the one thing the loops take: a dict of its code ("kernel") and
    every parameter of `KERNEL_PARAMS` by name, typed as its default.

    `kernel` is a name or a code; `params` are parameters by name (an
    estimator's named ones: gamma, degree, coef0, nu), and a parameter not
    given takes its default, so a model without a kernel's own parameter
    still builds its record.  `kernel_params` is an estimator's dict of the
    kernel's other parameters (scikit-learn's KernelRidge convention),
    checked by the kernel's row (`check_kernel_params`) and merged last.
    """
    code = int(kernel_row(kernel).code) if isinstance(kernel, str) else int(kernel)
    unknown = set(params) - set(KERNEL_PARAMS)
    if unknown:
        raise TypeError(f"Unknown kernel parameters {sorted(unknown)}; the kernel parameters "
                        f"are {list(KERNEL_PARAMS)}.")
    if kernel_params:
        check_kernel_params(code, kernel_params, params)
        params = dict(params, **kernel_params)
    return kernel_record(dict(params, kernel=code), complete=True)


def named_kernel_params(estimator):
    """The kernel parameters an estimator names: `NAMED_KERNEL_PARAMS`, or its class's
    ``_named_kernel_params`` when one of those names means something else there
    (`okl.KernelRLSRegressor`'s `nu` is its ALD threshold)."""
    return getattr(estimator, "_named_kernel_params", NAMED_KERNEL_PARAMS)


def kernel_params_of(estimator, **fitted):
    """The kernel's record of an estimator: its kernel, the kernel parameters it names
    (those of `named_kernel_params` it has), its ``kernel_params`` dict when it has one, and
    the `fitted` values over them (gamma: gamma_ when gamma="scale" set it)."""
    named = {name: getattr(estimator, name) for name in named_kernel_params(estimator)
             if hasattr(estimator, name)}
    return kernel_params(estimator.kernel, getattr(estimator, "kernel_params", None),
                         **dict(named, **fitted))


def check_kernel_params(kernel, given, named=()):
    """Check an estimator's `kernel_params` dict against the kernel's row: each name one the
    kernel reads and no estimator parameter in `named`, each value valid (`KERNEL_CHECKS`).

    Raises ValueError naming the kernel's parameters.
    """
    row = kernel if isinstance(kernel, KernelRow) else kernel_row(kernel)
    if given is None:
        return
    if not isinstance(given, dict) or not all(isinstance(k, str) for k in given):
        raise ValueError(f"kernel_params must be None or a dict of parameter names to values; "
                         f"got {given!r}.")
    reads = ", ".join(row.params) or "none"
    for name, value in given.items():
        if name in named:
            raise ValueError(f"kernel_params sets {name!r}, a parameter of the estimator: set "
                             f"{name}={value!r} there instead.")
        if name not in row.params:
            raise ValueError(f"kernel={row.name!r} has no parameter {name!r}; its parameters "
                             f"are: {reads}.")
        test, description = KERNEL_CHECKS.get(name, (_number, "a number"))
        if not test(value):
            raise ValueError(f"kernel_params[{name!r}] of kernel={row.name!r} must be "
                             f"{description}; got {value!r}.")


def _as_rows(X):
    X = np.ascontiguousarray(X, dtype=np.float64)
    return X.reshape(1, -1) if X.ndim == 1 else X


def kernel_matrix(X, U=None, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0, nu=1.5,
                  **params):
    """Gram matrix ``K[i, j] = K(X[i], U[j])`` (U defaults to X), computed in Cython;
    `params`: any other kernel parameter by name (`KERNEL_PARAMS`)."""
    X = _as_rows(X)
    U = X if U is None else _as_rows(U)
    if X.shape[1] != U.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but U has {U.shape[1]}.")
    return _kernel_matrix(X, U, kernel_params(kernel, gamma=gamma, degree=degree, coef0=coef0,
                                              nu=nu, **params))


def kernel_diag(X, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0, nu=1.5, **params):
    """``K(x, x)`` for every row of X; its running maximum is C_K^2 on the stream."""
    X = _as_rows(X)
    return kernel_row(kernel).diag(np.einsum("ij,ij->i", X, X), kernel_params(
        kernel, gamma=gamma, degree=degree, coef0=coef0, nu=nu, **params))


def kernel_diagonal(params, X):
    """``K(x, x)`` for every row of X, the kernel given as its record (`kernel_params`)."""
    X = _as_rows(X)
    return kernel_row(params["kernel"]).diag(np.einsum("ij,ij->i", X, X), params)
