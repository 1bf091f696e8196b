"""The pointwise learners' loop (docs/algorithms.md, sections 1-3) in NumPy: twin of _core/_pointwise.pyx."""
import numpy as np

from okl._core._losses import Loss
from okl._numpy.losses import derivative


def fit_chunk(expansion, X, y, eta, lam, loss, tau, eps, delta, p, pred_out, weight=None,
              offset=None):
    """Predict-then-update over the rows; -1, or the index of the first divergent step.

    `weight` (w_t, default 1; 0 skips the step) and `offset` (a 1-element
    array holding b, updated in place) as in _core/_pointwise.pyx.
    """
    margin = loss >= Loss.HINGE
    expansion.reserve(len(X))
    b = 0.0 if offset is None else float(offset[0])
    failed = -1
    with np.errstate(over="ignore", invalid="ignore"):    # divergence is reported, not warned
        for i, x in enumerate(X):
            f = expansion.predict_one(x) + b
            pred_out[i] = f
            if not np.isfinite(f):
                failed = i
                break
            if weight is not None and weight[i] == 0.0:
                continue
            if margin:
                g = y[i] * derivative(loss, y[i] * f, tau, eps, delta, p)
            else:
                g = derivative(loss, f - y[i], tau, eps, delta, p)
            if weight is not None:
                g *= weight[i]
            b_next = b - eta[i] * g
            if offset is not None and not np.isfinite(b_next):
                failed = i
                break
            expansion.shrink(1.0 - lam[i] * eta[i])
            if g != 0.0 and not expansion.add(x, -eta[i] * g):
                failed = i
                break
            if offset is not None:
                b = b_next
    if offset is not None:
        offset[0] = b
    return failed
