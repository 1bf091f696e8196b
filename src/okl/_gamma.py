"""The kernel width from the data: gamma="scale", and a warning when gamma is off the data's scale.

A Gaussian or Laplacian kernel with a width far from the data's scale learns
nothing useful and says nothing: with features of scale 1000 and gamma = 1
every K(x_i, x_j) of distinct points is 0 (each point is its own island, and
held-out R^2 is 0); with tiny features every K is 1 (one constant function).
`scale_gamma` is scikit-learn's SVC rule ``gamma = 1 / (n_features Var(X))``
on the first chunk; `spread_warning` looks at the first samples' kernel
values and names the cure.
"""
import warnings

import numpy as np

from okl.kernels import KernelScaleWarning, kernel_matrix, kernel_row

# off-diagonal kernel values of the first samples all below / above these: gamma is off
NEAR_ZERO = 1e-3
NEAR_ONE = 0.999
SPREAD_SAMPLES = 50


def scale_gamma(X, name):
    """``1 / (n_features * X.var())`` of the first chunk (scikit-learn's SVC gamma="scale").

    A chunk of one row has no variance: raise, naming the alternatives.
    A constant chunk (variance 0) gives 1.0, as scikit-learn does.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] < 2:
        raise ValueError(
            f"{name}(gamma='scale') sets gamma = 1 / (n_features * X.var()) from the first "
            f"chunk, which needs at least 2 rows; the first call had {X.shape[0]}. Start the "
            "stream with partial_fit on a few rows, pass a number (e.g. gamma=1 / n_features "
            "for standardized features), or put okl.preprocessing.OnlineStandardScaler first.")
    var = float(X.var())
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


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
