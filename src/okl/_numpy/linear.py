"""Linear models over feature rows in NumPy: the twin of _core/_linear.pyx.

It keeps the true weights and multiplies them at every shrink (O(D)), where
the Cython model multiplies one scale.

References
----------
Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17, 2016.
"""
import numpy as np

from okl._core._losses import Loss
from okl._numpy.losses import derivative


def cos_rows(Z, b, c):
    """Z <- c cos(Z + b) in place."""
    Z += b
    np.cos(Z, out=Z)
    Z *= c


class NumpyLinearModel:
    """f(z) = <w, z> (the offset is the learner's)."""

    scale = 1.0
    n_rescale = 0

    def __init__(self, n_components):
        self.n_components = int(n_components)
        self.w = np.zeros(self.n_components)

    @property
    def coef_(self):
        return self.w.copy()

    def predict(self, Z):
        return np.asarray(Z) @ self.w

    def sq_norm(self):
        return float(self.w @ self.w)

    def checkpoint(self):
        return self.w.copy()

    def restore(self, state):
        self.w[:] = state

    def get_state(self):
        return dict(n_components=self.n_components, w=self.w.copy(), scale=1.0,
                    n_rescale=0)

    @classmethod
    def from_state(cls, state):
        self = cls(state["n_components"])
        self.w = float(state["scale"]) * np.array(state["w"], dtype=np.float64)
        return self

    def set_coef(self, w):
        self.w = np.array(w, dtype=np.float64)


def fit_chunk(model, Z, y, eta, lam, loss, tau, eps, delta, p, pred_out, weight=None,
              offset=None):
    """Predict-then-update over the feature rows; -1, or the first divergent step."""
    margin = loss >= Loss.HINGE
    b = 0.0 if offset is None else float(offset[0])
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            for i, z in enumerate(Z):
                f = b + float(model.w @ z)
                pred_out[i] = f
                if not np.isfinite(f):
                    return i
                if weight is not None and weight[i] == 0.0:
                    continue
                if margin:
                    g = y[i] * derivative(loss, y[i] * f, tau, eps, delta, p)
                else:
                    g = derivative(loss, f - y[i], tau, eps, delta, p)
                if weight is not None:
                    g = g * weight[i]
                if offset is not None and not np.isfinite(b - eta[i] * g):
                    return i
                factor = 1.0 - lam[i] * eta[i]
                if factor <= 0.0:
                    model.w[:] = 0.0
                else:
                    model.w *= factor
                if g != 0.0:
                    if not np.isfinite(eta[i] * g):
                        return i
                    model.w -= eta[i] * g * z
                if offset is not None:
                    b -= eta[i] * g
        return -1
    finally:
        if offset is not None:
            offset[0] = b
