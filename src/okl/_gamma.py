"""The kernel width from the data: gamma="scale", and a warning when gamma is off the data's scale.

A Gaussian or Laplacian kernel with a width far from the data's scale learns
nothing useful and says nothing: with features of scale 1000 and gamma = 1
every K(x_i, x_j) of distinct points is 0 (each point is its own island, and
held-out R^2 is 0); with tiny features every K is 1 (one constant function).
`scale_gamma` is scikit-learn's SVC rule ``gamma = 1 / (n_features Var(X))``
on the first chunk; `WidthMoments` is the same rule over the events seen so
far (the pointwise learners' warm-up, docs/defaults.md, section 2);
`spread_warning` looks at the first samples' kernel values and names the
cure.
"""
import warnings

import numpy as np

from okl.kernels import KernelScaleWarning, kernel_matrix, kernel_row

# off-diagonal kernel values of the first samples all below / above these: gamma is off
NEAR_ZERO = 1e-3
NEAR_ONE = 0.999
SPREAD_SAMPLES = 50


# the width factor of the learners with a first-chunk width and few centres per region
# (RegularizedPAClassifier, CoefficientRegularizedClassifier): docs/defaults.md, section 2
LOCAL_FACTOR = 4.0

# events over which the pointwise learners' gamma="scale" follows the data, then stays
WARMUP = 100


def scale_gamma(X, name=None, factor=1.0):
    """``factor / (n_features * X.var())`` of the first chunk (factor 1: scikit-learn's SVC
    gamma="scale").

    The learners that take the rule on a first chunk and keep few centres per
    region (`LOCAL_FACTOR`) pass a factor of their own: docs/defaults.md,
    section 2.  A first chunk of one row gives the variance of its own entries
    (as `WidthMoments` does), and ``factor / n_features``, the rule's value on
    standardised features, when they are all equal.  A constant chunk
    (variance 0) gives 1.0, as scikit-learn does.
    """
    X = np.asarray(X, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        var = float(X.var())
    if not np.isfinite(var):
        var = 0.0
    if var > 0:
        return factor / (X.shape[1] * var)
    return factor / X.shape[1] if X.shape[0] < 2 else 1.0


class WidthMoments:
    """gamma="scale" from the first event: ``1 / (d Var)`` over the entries of the rows so far.

    Welford's running mean and sum of squared deviations over the d entries of
    every row learned (the variance scikit-learn's ``X.var()`` takes of the rows
    so far), for the first `WARMUP` rows; then the width stays.  One row gives
    the variance of its own entries; a variance of 0 gives ``1 / d`` before the
    second row and 1.0 after (scikit-learn's constant-data value).
    """

    def __init__(self, rows=0.0, mean=0.0, m2=0.0):
        self.rows, self.mean, self.m2 = float(rows), float(mean), float(m2)

    @staticmethod
    def warmup():
        return WARMUP

    @property
    def warming(self):
        return self.rows < WARMUP

    def add(self, x):
        """Take the row x (its d entries) into the moments; a row they cannot hold
        (entries so large that the squares overflow) does not count."""
        x = np.asarray(x, dtype=np.float64)
        d = x.size
        n = self.rows * d
        with np.errstate(over="ignore", invalid="ignore"):
            row_mean = float(x.mean())
            delta = row_mean - self.mean
            m2 = self.m2 + float(((x - row_mean) ** 2).sum()) + delta * delta * n * d / (n + d)
            mean = self.mean + delta * d / (n + d)
        if np.isfinite(m2) and np.isfinite(mean):
            self.m2, self.mean, self.rows = m2, mean, self.rows + 1.0

    def gamma(self, d):
        """``1 / (d Var)`` of the rows taken so far."""
        var = self.m2 / (self.rows * d) if self.rows else 0.0
        if var > 0:
            return 1.0 / (d * var)
        return 1.0 / d if self.rows <= 1 else 1.0


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
