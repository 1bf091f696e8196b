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
    """f(z) = intercept + <w, z>."""

    scale = 1.0
    n_rescale = 0

    def __init__(self, n_components):
        self.n_components = int(n_components)
        self.w = np.zeros(self.n_components)
        self.intercept = 0.0

    @property
    def coef_(self):
        return self.w.copy()

    def predict(self, Z):
        return self.intercept + np.asarray(Z) @ self.w

    def sq_norm(self):
        return float(self.w @ self.w)

    def checkpoint(self):
        return (self.w.copy(), self.intercept)

    def restore(self, state):
        w, self.intercept = state
        self.w[:] = w

    def get_state(self):
        return dict(n_components=self.n_components, w=self.w.copy(), scale=1.0,
                    intercept=self.intercept, n_rescale=0)

    @classmethod
    def from_state(cls, state):
        self = cls(state["n_components"])
        self.w = float(state["scale"]) * np.array(state["w"], dtype=np.float64)
        self.intercept = float(state["intercept"])
        return self

    def set_coef(self, w, intercept=0.0):
        self.w = np.array(w, dtype=np.float64)
        self.intercept = float(intercept)


def fit_chunk(model, Z, y, eta, lam, loss, tau, eps, delta, p, fit_intercept, pred_out):
    """Predict-then-update over the feature rows; -1, or the first divergent step."""
    margin = loss >= Loss.HINGE
    with np.errstate(over="ignore", invalid="ignore"):
        for i, z in enumerate(Z):
            f = model.intercept + float(model.w @ z)
            pred_out[i] = f
            if not np.isfinite(f):
                return i
            if margin:
                g = y[i] * derivative(loss, y[i] * f, tau, eps, delta, p)
            else:
                g = derivative(loss, f - y[i], tau, eps, delta, p)
            factor = 1.0 - lam[i] * eta[i]
            if factor <= 0.0:
                model.w[:] = 0.0
            else:
                model.w *= factor
            if g != 0.0:
                if not np.isfinite(eta[i] * g):
                    return i
                model.w -= eta[i] * g * z
                if fit_intercept:
                    model.intercept -= eta[i] * g
    return -1
