"""The weight vector of the feature learners in NumPy: the twin of _core/_linear.pyx.

It keeps the true weights and multiplies them at every shrink (O(D)), where
the Cython model multiplies one scale.

References
----------
Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17, 2016.
"""
import numpy as np


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

    # -- the step's operations (okl._numpy.pointwise) ---------------------------------------

    def predict_one(self, z):
        return float(self.w @ z)

    def shrink(self, factor):
        """w <- factor w; factor <= 0 sets w = 0."""
        if factor <= 0.0:
            self.w[:] = 0.0
        else:
            self.w *= factor

    def add(self, z, a):
        self.w += a * z


class NumpyMultiLinearModel:
    """s(z) = W z in R^k, W (k, D): the twin of `_core._linear.MultiLinearModel`."""

    scale = 1.0
    n_rescale = 0

    def __init__(self, n_classes, n_components):
        self.n_classes, self.n_components = int(n_classes), int(n_components)
        self.W = np.zeros((self.n_classes, self.n_components))

    @property
    def coef_(self):
        return self.W.copy()

    def predict(self, Z):
        return np.asarray(Z) @ self.W.T

    def sq_norm(self):
        return float(np.sum(self.W * self.W))

    def checkpoint(self):
        return self.W.copy()

    def restore(self, state):
        self.W[:] = state

    def get_state(self):
        return dict(n_classes=self.n_classes, n_components=self.n_components, w=self.W.copy(),
                    scale=1.0, n_rescale=0)

    @classmethod
    def from_state(cls, state):
        self = cls(state["n_classes"], state["n_components"])
        self.W = float(state["scale"]) * np.array(state["w"], dtype=np.float64).reshape(
            self.n_classes, self.n_components)
        return self

    def set_coef(self, W):
        self.W = np.array(W, dtype=np.float64).reshape(self.n_classes, self.n_components)

    # -- the multiclass step's operations (okl._numpy.multiclass) -------------------------------

    def scores(self, z):
        return self.W @ z

    def shrink(self, factor):
        """W <- factor W; factor <= 0 sets W = 0."""
        if factor <= 0.0:
            self.W[:] = 0.0
        else:
            self.W *= factor

    def add(self, z, a):
        self.W += np.outer(a, z)
