"""Parameter constraints, checked at fit time (scikit-learn's idea, our code).

An estimator lists, per parameter, the constraints any one of which makes a
value valid; `validate_params` raises one message that names them all, e.g.
"The 'eta' parameter of OnlineKernelRegressor must be a float in (0, inf) or
'auto'. Got -1 instead."
"""
import math
import os
from numbers import Integral, Real

import numpy as np

# Integer parameters reach C ints and BLAS's 32-bit sizes: larger values are refused.
INT_MAX = 2 ** 31 - 1


class InvalidParameterError(ValueError, TypeError):
    """A parameter has a value outside its constraints."""


class Interval:
    """Finite numbers of `kind` (Real or Integral) between `left` and `right`.

    `closed` is "both", "left", "right" or "neither"; None is an open end (but
    never infinity).  Integers are at most INT_MAX in magnitude.
    """

    def __init__(self, kind, left, right, closed="both"):
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def is_satisfied_by(self, value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if self.kind is Integral:
            if abs(int(value)) > INT_MAX:
                return False
        else:
            try:
                if not math.isfinite(float(value)):
                    return False
            except (OverflowError, TypeError, ValueError):
                return False
        if self.left is not None:
            low_ok = value >= self.left if self.closed in ("both", "left") else value > self.left
            if not low_ok:
                return False
        if self.right is not None:
            return value <= self.right if self.closed in ("both", "right") else value < self.right
        return True

    def __str__(self):
        noun = "an int" if self.kind is Integral else "a float"
        lo = "-inf" if self.left is None else f"{self.left:g}"
        hi = "inf" if self.right is None else f"{self.right:g}"
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        return f"{noun} in {lb}{lo}, {hi}{rb}"


class Options:
    """One of a fixed set of strings."""

    def __init__(self, *options):
        self.options = options

    def is_satisfied_by(self, value):
        return isinstance(value, str) and value in self.options

    def __str__(self):
        if len(self.options) == 1:
            return repr(self.options[0])
        return "a str among {" + ", ".join(repr(o) for o in self.options) + "}"


class Kind:
    """Any value for which `test` is true, described as `description`."""

    def __init__(self, test, description):
        self.test, self.description = test, description

    def is_satisfied_by(self, value):
        return self.test(value)

    def __str__(self):
        return self.description


NONE = Kind(lambda v: v is None, "None")
CALLABLE = Kind(callable, "a callable")
BOOL = Kind(lambda v: isinstance(v, (bool, np.bool_)), "a bool")
ARRAY_2D = Kind(lambda v: np.ndim(v) == 2 and not isinstance(v, str), "a 2-D array")


def validate_params(estimator):
    """Check every parameter of `estimator` against its `_parameter_constraints`."""
    name = type(estimator).__name__
    params = estimator.get_params(deep=False)
    for param, constraints in estimator._parameter_constraints.items():
        value = params[param]
        if any(c.is_satisfied_by(value) for c in constraints):
            continue
        described = [str(c) for c in constraints]
        allowed = described[0] if len(described) == 1 else (
            ", ".join(described[:-1]) + " or " + described[-1])
        raise InvalidParameterError(
            f"The {param!r} parameter of {name} must be {allowed}. Got {value!r} instead"
            f"{_why(value, constraints)}.")
    if params.get("kernel_params") is not None and "kernel" in params:
        from okl.kernels import check_kernel_params, named_kernel_params
        try:        # the kernel's row: names it reads and no other parameter sets, valid values
            check_kernel_params(params["kernel"], params["kernel_params"],
                                [k for k in named_kernel_params(estimator) if k in params])
        except ValueError as exc:
            raise InvalidParameterError(f"The 'kernel_params' parameter of {name}: {exc}") \
                from None


def _why(value, constraints):
    """Why a number that looks in range is refused: infinite, or an int too large for C."""
    if not any(isinstance(c, Interval) for c in constraints):
        return ""
    if isinstance(value, Integral) and not isinstance(value, (bool, np.bool_)) \
            and abs(int(value)) > INT_MAX:
        if any(isinstance(c, Interval) and c.kind is Integral for c in constraints):
            return f" (integers are limited to {INT_MAX}: they reach C ints and BLAS sizes)"
    if isinstance(value, Real) and not isinstance(value, (bool, np.bool_)):
        try:
            if math.isinf(float(value)):
                return " (infinity is not a usable value)"
        except OverflowError:
            return " (too large for a float)"
    return ""


# -- constraint blocks shared by the estimators (names from the registries) --------------

def kernel_constraints():
    """kernel, gamma, degree, coef0, nu: the parameters of every kernel in `okl.kernels`;
    kernel_params: a kernel's other parameters by name (`okl.kernels.check_kernel_params`)."""
    from okl.kernels import KERNEL_CHECKS, KERNELS
    return {
        "kernel": [Options(*KERNELS)],
        "gamma": [Interval(Real, 0, None, closed="neither"), Options("scale")],
        "degree": [Interval(Integral, 1, None, closed="left")],
        "coef0": [Interval(Real, 0, None, closed="left")],
        "nu": [Kind(*KERNEL_CHECKS["nu"])],
        "kernel_params": [NONE, Kind(lambda v: isinstance(v, dict), "a dict")],
    }


def budget_constraints():
    """budget and budget_policy, from the policies of `okl.budgets`."""
    from okl.budgets import BUDGET_POLICIES
    return {
        "budget": [NONE, Interval(Integral, 1, None, closed="left"), Options("auto")],
        "budget_policy": [Options("auto", *BUDGET_POLICIES)],
    }


STEP_CONSTRAINTS = {
    "eta": [Interval(Real, 0, None, closed="neither"), Options("auto"), CALLABLE],
    "eta_decay": [Interval(Real, 0, None, closed="left")],
}
# the pointwise learners also take eta="scaled" (docs/defaults.md, section 4)
POINTWISE_STEP_CONSTRAINTS = {
    **STEP_CONSTRAINTS,
    "eta": [Interval(Real, 0, None, closed="neither"), Options("auto", "scaled"), CALLABLE],
}
ENGINE_CONSTRAINTS = {"engine": [Options("cython", "numpy")],
                      "verbose": [BOOL, NONE]}

# scikit-learn's estimator checks that a NORMA learner fails by design: a weight w scales one
# step's gradient once, and the shrink (1 - eta_t lam) is applied once, so w = 2 is not two
# copies of the row (docs/algorithms.md, section 7.2).  scikit-learn >= 1.6 has no tag for
# this (its own SGD estimators are listed inside scikit-learn); pass it to the checks:
# ``check_estimator(est, expected_failed_checks=est.expected_failed_checks)``.
ONLINE_WEIGHT_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data":
        "sample_weight scales one online step (docs/algorithms.md, section 7.2); it is not "
        "equivalent to repeating samples, as for scikit-learn's SGD estimators",
}

# -- streaming (docs/streaming.md) ------------------------------------------------------------

INTERCEPT_CONSTRAINTS = {"fit_intercept": [BOOL]}
CLASSES_CONSTRAINTS = {
    "classes": [NONE, Kind(lambda v: np.ndim(v) == 1 and not isinstance(v, str) and len(v) >= 2
                           and len(set(np.asarray(v).tolist())) == len(v),
                           "an array of at least two distinct labels")],
}

# -- fixed-size models (docs/budget.md) ---------------------------------------------------------

APPROXIMATION_CONSTRAINTS = {
    "approximation": [NONE, Options("fourier", "nystroem")],
    "n_components": [Interval(Integral, 1, None, closed="left")],
    "random_state": [NONE, Interval(Integral, 0, None, closed="left")],
}

# -- streams that change (docs/drift.md) ----------------------------------------------------------

DRIFT_CONSTRAINTS = {
    "forgetting": [Interval(Real, 0, 1, closed="right")],
    "drift_detector": [NONE, Options("page_hinkley"),
                       Kind(lambda v: not isinstance(v, str) and hasattr(v, "update")
                            and hasattr(v, "drift_detected"),
                            "a detector with update(x) and drift_detected (okl.drift.PageHinkley, "
                            "river.drift.ADWIN(), ...)")],
}

# -- sizes a model would reach (docs/guide/persistence.md, "What a failed call leaves") ----------

def physical_memory():
    """This machine's memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def model_sizes(estimator, n_features):
    """[(parameter, bytes, what)]: the memory each size parameter of `estimator` lets its
    model reach on n_features inputs (float64 buffers; the smallest each needs).  A class's
    `_square_matrices` ({parameter: count}) adds the n x n matrices its model keeps."""
    d, out = int(n_features), []
    params = estimator.get_params(deep=False)

    def number(name):
        value = params.get(name)
        return int(value) if isinstance(value, Integral) and not isinstance(value, bool) \
            else None

    square = getattr(estimator, "_square_matrices", {})

    def matrices(name, n):
        """(doubles, words) of the n x n matrices the model keeps for parameter `name`."""
        count = square.get(name, 0)
        return count * n, (f" and {count} {n} x {n} matrices" if count else "")

    budget, D = number("budget"), number("n_components")
    if budget:
        extra, words = matrices("budget", budget)
        out.append(("budget", 8 * budget * (d + 2 + extra),
                    f"{budget} centres of {d} features{words}"))
    if D and params.get("approximation") == "fourier":
        extra, words = matrices("n_components", D)
        out.append(("n_components", 8 * D * (d + 2 + extra),
                    f"{D} random features of {d} inputs{words}"))
    if D and params.get("approximation") == "nystroem":
        extra, words = matrices("n_components", D)
        out.append(("n_components", 8 * D * (d + 3 * D + extra),
                    f"{D} Nystroem landmarks, their {D} x {D} kernel matrix{words}"))
    buffer = number("buffer")
    if buffer:
        square = params.get("pair_kernel") == "difference"
        out.append(("buffer", 8 * buffer * (d + 2 + (buffer if square else 0)),
                    f"{buffer} stored points" + (" and their Gram matrix" if square else "")))
    n_centers = number("n_centers")
    if n_centers:
        out.append(("n_centers", 8 * n_centers * (d + 2), f"{n_centers} centres of {d} features"))
    window = number("window")
    if window:
        out.append(("window", 16 * window, f"a window of {window} scores and its sorted copy"))
    return out


def check_memory(estimator, n_features):
    """Refuse, before anything is allocated, a size parameter whose model could not fit in
    this machine's memory (a typo such as budget=10**9 would take the machine)."""
    total = physical_memory()
    if total is None:
        return
    for name, n_bytes, what in model_sizes(estimator, n_features):
        if n_bytes > total:
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(estimator).__name__} asks for {what}: "
                f"{n_bytes / 2 ** 30:.3g} GiB, more than this machine's memory "
                f"({total / 2 ** 30:.3g} GiB). Use a smaller {name}.")
