"""The two models of RegularizedPAClassifier: linear weights and a kernel expansion.

Each model learns a validated chunk with the Cython loops of `_core/_pa.pyx`
(or their NumPy twins), keeps ``||w||^2`` (``||f||_K^2``) incrementally, and
has checkpoint / restore / get_state / from_state, so the estimator only
keeps parameters, validation and counters.  See docs/algorithms.md, section 5.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import safe_sparse_dot

from okl._engines import ENGINES, engine_of
from okl._core import _pa
from okl._numpy import pa as _np_pa



class LinearPAModel:
    """f(x) = scale * raw.x: the O(1) shrinks of "objective" and "l2" multiply `scale`."""

    def __init__(self, n_features):
        self.raw = np.zeros(n_features)
        self.scale = 1.0
        self.sq_norm = 0.0

    def checkpoint(self, n_new):
        return self.raw, self.scale, self.sq_norm      # learn rebinds, never writes, raw

    def restore(self, token):
        self.raw, self.scale, self.sq_norm = token

    def learn(self, X, y, rule, sigma, engine, scores, events):
        """Run the chunk (dense or CSR rows); return -1 or the first divergent step."""
        w, scale = self.raw.copy(), self.scale
        if rule[0] == _pa.Regularization.L1 and scale != 1.0:   # the L1 step works on w itself
            w, scale = scale * w, 1.0
        if engine == "numpy":
            result = _np_pa.fit_linear(w, scale, self.sq_norm, X, y, *rule, sigma, scores, events)
        elif sp.issparse(X):
            result = _pa.fit_csr(w, scale, self.sq_norm, X.data,
                                 X.indices.astype(np.int32, copy=False),  # columns < 2^31
                                 X.indptr.astype(np.intp, copy=False),
                                 y, *rule, sigma, scores, events)
        else:
            result = _pa.fit_dense(w, scale, self.sq_norm, X, y, *rule, sigma, scores, events)
        failed, scale, sq_norm = result
        if failed < 0:
            self.raw, self.scale, self.sq_norm = w, scale, sq_norm
        return failed

    def decision(self, X):
        return self.scale * safe_sparse_dot(X, self.raw)

    def norm(self):
        return float(self.scale * np.linalg.norm(self.raw))

    @property
    def coef(self):
        return self.scale * self.raw

    def get_state(self):
        return dict(raw=self.raw.copy(), scale=self.scale, sq_norm=self.sq_norm)

    @classmethod
    def from_state(cls, state):
        self = cls(len(state["raw"]))
        self.raw = np.array(state["raw"], dtype=np.float64)
        self.scale, self.sq_norm = float(state["scale"]), float(state["sq_norm"])
        return self


class KernelPAModel:
    """f = sum_i a_i K(x_i, .), an expansion whose budget policy decides which centre leaves."""

    def __init__(self, expansion):
        self.expansion = expansion
        self.sq_norm = 0.0

    def _on(self, engine):
        """The expansion, converted if `engine` changed since it was built."""
        cls = ENGINES[engine].expansion
        if not isinstance(self.expansion, cls):
            self.expansion = cls.from_state(self.expansion.get_state())
        return self.expansion

    def checkpoint(self, n_new):
        return self.expansion, self.expansion.checkpoint(n_new), self.sq_norm

    def restore(self, token):
        self.expansion, undo, self.sq_norm = token
        self.expansion.restore(undo)

    def learn(self, X, y, rule, sigma, engine, scores, events):
        failed, sq_norm = ENGINES[engine].pa_kernel(self._on(engine), self.sq_norm, X, y, *rule,
                                               scores, events)
        if failed < 0:
            self.sq_norm = sq_norm
        return failed

    def decision(self, X):
        return self.expansion.predict(X)

    def norm(self):
        return float(np.sqrt(max(self.expansion.sq_norm(), 0.0)))

    def get_state(self):
        return dict(self.expansion.get_state(), sq_norm=self.sq_norm,
                    engine=engine_of(self.expansion))

    @classmethod
    def from_state(cls, state):
        state = dict(state)
        sq_norm, engine = float(state.pop("sq_norm")), state.pop("engine")
        self = cls(ENGINES[engine].expansion.from_state(state))
        self.sq_norm = sq_norm
        return self


class FeaturePAModel:
    """PA on fixed-size features z(x) (random Fourier or Nystroem): a `LinearPAModel` of z.

    In the feature space the kernel rules are the linear ones, with ||w||^2
    kept exactly; a step costs O(D d) whatever the stream's length
    (docs/budget.md, section 2).
    """

    def __init__(self, fmap):
        self.fmap = fmap
        self.linear = LinearPAModel(fmap.n_components)

    @property
    def sq_norm(self):
        return self.linear.sq_norm

    def checkpoint(self, n_new):
        return self.linear.checkpoint(n_new)

    def restore(self, token):
        self.linear.restore(token)

    def learn(self, X, y, rule, sigma, engine, scores, events):
        return self.linear.learn(self.fmap.transform(X), y, rule, sigma, engine, scores, events)

    def decision(self, X):
        return self.linear.decision(self.fmap.transform(X))

    def norm(self):
        return self.linear.norm()

    def get_state(self):
        state = {"linear_" + k: v for k, v in self.linear.get_state().items()}
        state.update({"fmap_" + k: v for k, v in self.fmap.get_state().items()})
        return state

    @classmethod
    def from_state(cls, state):
        from okl._features import NystroemFeatures, RandomFourierFeatures

        fstate = {k[5:]: v for k, v in state.items() if k.startswith("fmap_")}
        fmap_cls = RandomFourierFeatures if fstate["kind"] == "fourier" else NystroemFeatures
        self = cls.__new__(cls)
        self.fmap = fmap_cls.from_state(fstate)
        self.linear = LinearPAModel.from_state(
            {k[7:]: v for k, v in state.items() if k.startswith("linear_")})
        return self
