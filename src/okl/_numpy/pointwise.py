"""The pointwise learners' loop (docs/algorithms.md, sections 1-3) in NumPy: twin of _core/_pointwise.pyx."""
import numpy as np

from okl._core._losses import Loss
from okl._numpy.losses import derivative


def fit_chunk(expansion, X, y, eta, lam, loss, tau, eps, delta, p, pred_out):
    """Predict-then-update over the rows; -1, or the index of the first divergent step."""
    margin = loss >= Loss.HINGE
    expansion.reserve(len(X))
    with np.errstate(over="ignore", invalid="ignore"):    # divergence is reported, not warned
        for i, x in enumerate(X):
            f = expansion.predict_one(x)
            pred_out[i] = f
            if not np.isfinite(f):
                return i
            if margin:
                g = y[i] * derivative(loss, y[i] * f, tau, eps, delta, p)
            else:
                g = derivative(loss, f - y[i], tau, eps, delta, p)
            expansion.shrink(1.0 - lam[i] * eta[i])
            if g != 0.0 and not expansion.add(x, -eta[i] * g):
                return i
    return -1
