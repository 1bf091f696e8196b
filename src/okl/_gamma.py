"""The kernel width from the data: gamma="scale", and a warning when gamma is off the data's scale.

A Gaussian or Laplacian kernel with a width far from the data's scale learns
nothing useful and says nothing: with features of scale 1000 and gamma = 1
every K(x_i, x_j) of distinct points is 0 (each point is its own island, and
held-out R^2 is 0); with tiny features every K is 1 (one constant function).
`scale_gamma` is scikit-learn's SVC rule ``gamma = 1 / (n_features Var(X))``
on a chunk; `WidthMoments` (okl._numpy.warmup) is the same rule over the events
seen so far, and `width_of` the warm-up every kernel learner takes with
gamma="scale" (docs/defaults.md, section 2): its loops set the width of every
row, the width of the rows before it;
`spread_warning` looks at the first samples' kernel values and names the
cure.
"""
import warnings

import numpy as np

from okl._engines import ENGINES
from okl._numpy.warmup import WARMUP, WidthMoments, moves
from okl._numpy.warmup import spread as _spread
from okl.kernels import KernelScaleWarning, kernel_matrix, kernel_row

# off-diagonal kernel values of the first samples all below / above these: gamma is off
NEAR_ZERO = 1e-3
NEAR_ONE = 0.999
SPREAD_SAMPLES = 50


# the width factor of the learners with few centres per region
# (RegularizedPAClassifier, CoefficientRegularizedClassifier): docs/defaults.md, section 2
LOCAL_FACTOR = 4.0


def scale_gamma(X, name=None, factor=1.0):
    """``factor / (n_features * X.var())`` of the rows X (factor 1: scikit-learn's SVC
    gamma="scale"): the width the warm-up reaches after the rows X.

    The learners that keep few centres per region pass `LOCAL_FACTOR`
    (docs/defaults.md, section 2).  One row gives the variance of its own
    entries (as `WidthMoments` does), and ``factor / n_features``, the rule's
    value on standardised features, when they are all equal.  Constant rows
    (variance 0) give 1.0, as scikit-learn does.
    """
    X = np.asarray(X, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        var = _spread(float(X.var()), float(X.mean()))
    if not np.isfinite(var):
        var = 0.0
    if var > 0:
        return factor / (X.shape[1] * var)
    return factor / X.shape[1] if X.shape[0] < 2 else 1.0


def start_warmup(estimator, n_features):
    """Start gamma="scale"'s warm-up: no rows yet, the width ``factor / n_features``."""
    estimator._width_moments = WidthMoments().state()
    estimator.gamma_ = getattr(estimator, "_width_factor", 1.0) / n_features


def width_of(estimator, n_features):
    """The `Width` of gamma="scale"'s warm-up on the estimator's engine (its `_width_moments`
    and gamma_), or None when the width stays."""
    d = estimator.__dict__
    if "_width_moments" not in d:
        return None
    return ENGINES[estimator.engine].width(n_features, getattr(estimator, "_width_factor", 1.0),
                                           d["_width_moments"], d["gamma_"])


def warm_rows(estimator, X, weight, set_width, frozen=None, end=None):
    """The slices of the rows to learn in order: during gamma="scale"'s warm-up
    (`_width_moments` on the estimator) one row at a time, each learned with the width of
    the rows before it and then taken into the width (``set_width(gamma)`` gives it to the
    model), then the rest at once.  `frozen()` True ends the warm-up early (a model that
    can no longer change its width, e.g. Nystroem features); `end()` is called once the
    warm-up is over (random Fourier features then take their weights).  docs/defaults.md,
    section 2.

    The caller learns each slice before asking for the next (`join` its scores)."""
    d = estimator.__dict__
    n = X.shape[0]
    if "_width_moments" not in d:
        yield slice(0, n)
        return
    moments = WidthMoments(*d["_width_moments"])
    factor = getattr(estimator, "_width_factor", 1.0)
    i, warming = 0, True
    while i < n and warming:
        yield slice(i, i + 1)
        if frozen is not None and frozen():
            warming = False
        elif weight is None or weight[i] != 0.0:        # then x_i moves the width
            moments.add(X[i])
            gamma = moments.gamma(X.shape[1], factor) if moves(moments.rows) else d["gamma_"]
            if gamma != d["gamma_"]:
                set_width(gamma)
                d["gamma_"] = gamma
            d["_width_moments"] = moments.state()
            warming = moments.warming
        i += 1
    if not warming:
        del d["_width_moments"]                         # the width stays from now on
        if end is not None:
            end()
    if i < n:
        yield slice(i, n)


def join(parts):
    """The scores of the slices of `warm_rows`, as one array (None when a learner has none)."""
    if len(parts) == 1 or parts[0] is None:
        return parts[0]
    return np.concatenate(parts)


def check_width_moments(check, gamma):
    """okl.load's check of gamma="scale"'s warm-up moments (`_width_moments`), when the file
    has them."""
    if "_width_moments" in check.attrs:                  # gamma="scale" still warming up
        moments = check.attrs["_width_moments"]
        if (not isinstance(gamma, str) or not isinstance(moments, list)
                or len(moments) not in (3, 4)
                or not all(isinstance(v, (int, float)) and np.isfinite(v) for v in moments)
                or not 0 <= moments[0] < WidthMoments.warmup() or moments[2] < 0):
            check.fail("_width_moments must be [rows < the warm-up, mean, m2 >= 0, shift] of "
                       "gamma='scale'")
        check.out["_width_moments"] = [float(v) for v in moments]


def spread_message(X, kernel, gamma, name):
    """Why gamma looks off the data's scale, from the first samples' kernel values; or None."""
    if not kernel_row(kernel).width:
        return None
    X = np.asarray(X, dtype=np.float64)[:SPREAD_SAMPLES]
    n = X.shape[0]
    if n < 2:
        return None
    K = kernel_matrix(X, kernel=kernel, gamma=gamma)
    values = K[np.triu_indices(n, 1)]
    distinct = np.any(X[:, None, :] != X[None, :, :], axis=2)[np.triu_indices(n, 1)]
    values = values[distinct]
    if values.size == 0:
        return None
    if values.max() < NEAR_ZERO:
        return (f"{name}(kernel={kernel!r}, gamma={gamma:g}): every kernel value between the "
                f"first {n} samples is below {NEAR_ZERO:g}, so each sample is an island and "
                "the model cannot generalise: gamma is too large for the scale of X. Use "
                "gamma='scale', a smaller gamma, or standardize X (okl.preprocessing."
                "OnlineStandardScaler in an okl.pipeline.StreamPipeline).")
    if values.min() > NEAR_ONE:
        return (f"{name}(kernel={kernel!r}, gamma={gamma:g}): every kernel value between the "
                f"first {n} samples is above {NEAR_ONE:g}, so the kernel sees one constant "
                "function: gamma is too small for the scale of X. Use gamma='scale', a larger "
                "gamma, or standardize X (okl.preprocessing.OnlineStandardScaler in an "
                "okl.pipeline.StreamPipeline).")
    return None


def warn_spread(X, kernel, gamma, name, stacklevel=3):
    """Warn (KernelScaleWarning) when `spread_message` finds gamma off the data's scale."""
    message = spread_message(X, kernel, gamma, name)
    if message is not None:
        warnings.warn(message, KernelScaleWarning, stacklevel=stacklevel)
    return message is not None
