"""The models of RegularizedPAClassifier: linear weights, a kernel expansion, features.

Each model learns a validated chunk with the Cython loops of `_core/_pa.pyx`
(or their NumPy twins), keeps ``||w||^2`` (``||f||_K^2``) incrementally, and
has checkpoint / restore / get_state / from_state, so the estimator only
keeps parameters, validation and counters.  See docs/algorithms.md, section 5,
and docs/budget.md, section 2 (features, NOGD).
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import safe_sparse_dot

from okl._engines import ENGINES, engine_of
from okl._core import _pa
from okl._core._multiexpansion import SparseMultiExpansion
from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
from okl._numpy import pa as _np_pa
from okl._numpy.codes import BudgetPolicy
from okl._numpy.multiexpansion import NumpySparseMultiExpansion
from okl import kernels
from okl._numpy.kernels import kernel_record


SPARSE_MULTI = {"cython": SparseMultiExpansion, "numpy": NumpySparseMultiExpansion}


def multi_expansion(engine, state):
    """The kernel PA's multi-output expansion of `state` on `engine`: the pair layout (at most
    two coefficients per centre, docs/multiclass.md, section 1) unless the budget merges or
    a row has more than two nonzeros (the dense `multi_expansion` of the engine)."""
    coef = np.asarray(state["coef"]).reshape(-1, state["n_classes"])
    if ((int(state["policy"]) != BudgetPolicy.MERGE or not state["budget"])
            and not np.any(np.count_nonzero(coef, axis=1) > 2)):
        return SPARSE_MULTI[engine].from_state(state)
    return ENGINES[engine].multi_expansion.from_state(state)


def _rewidth(expansion, gamma):
    """A new expansion of the same centres and coefficients on the kernel of width gamma."""
    state = expansion.get_state()
    state["gamma"] = float(gamma)
    return type(expansion).from_state(state)



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

    def learn(self, X, y, rule, sigma, engine, scores, events, kxx=None, drift=None,
              drift_state=None):
        """Run the chunk (dense or CSR rows); return -1 or the first divergent step.

        `kxx` (dense rows only): the K(x, x) that replace ||x||^2 in the step
        coefficients, for Nystroem features (`FeaturePAModel`); `drift` and `drift_state`
        (IN/OUT) as the loops of `okl._core._pa` take them (docs/drift.md).
        """
        w, scale = self.raw.copy(), self.scale
        if rule[0] == _pa.Regularization.L1 and scale != 1.0:   # the L1 step works on w itself
            w, scale = scale * w, 1.0
        if engine == "numpy":
            result = _np_pa.fit_linear(w, scale, self.sq_norm, X, y, *rule, sigma, scores, events,
                                       kxx, drift, drift_state)
        elif sp.issparse(X):
            result = _pa.fit_csr(w, scale, self.sq_norm, X.data,
                                 X.indices.astype(np.int32, copy=False),  # columns < 2^31
                                 X.indptr.astype(np.intp, copy=False),
                                 y, *rule, sigma, scores, events, drift, drift_state)
        else:
            result = _pa.fit_dense(w, scale, self.sq_norm, X, y, *rule, sigma, scores, events,
                                   kxx, drift, drift_state)
        failed, scale, sq_norm = result
        if failed < 0:
            self.raw, self.scale, self.sq_norm = w, scale, sq_norm
        return failed

    def to_multiclass(self):
        """A `LinearMultiPAModel` with the same decisions: W = [-w/2, w/2]."""
        return LinearMultiPAModel.from_binary(self)

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


class LinearMultiPAModel:
    """k classes: scores s = W x with W = scale * raw, shape (k, d); multiclass PA steps.

    `sq_norm` is ``2 ||W||_F^2``, the binary model's ||w||^2 when k = 2 and
    W = [-w/2, w/2] (docs/multiclass-pa.md): `from_binary` keeps it.
    """

    def __init__(self, n_classes, n_features):
        self.raw = np.zeros((n_classes, n_features))
        self.scale = 1.0
        self.sq_norm = 0.0

    @classmethod
    def from_binary(cls, binary):
        """The same decisions from a `LinearPAModel`: s_0 = -f/2, s_1 = f/2."""
        self = cls(2, len(binary.raw))
        self.raw = np.ascontiguousarray(np.outer([-0.5, 0.5], binary.raw))
        self.scale, self.sq_norm = binary.scale, binary.sq_norm
        return self

    @property
    def n_classes(self):
        return self.raw.shape[0]

    def with_class(self, position):
        """A new model with a class at `position` (its row of W zero, the other scores kept);
        self is left as it was, so a failed call that added it can undo it."""
        new = type(self).from_state(self.get_state())
        new.raw = np.ascontiguousarray(np.insert(self.raw, position, 0.0, axis=0))
        return new

    def checkpoint(self, n_new):
        return self.raw, self.scale, self.sq_norm      # learn rebinds, never writes, raw

    def restore(self, token):
        self.raw, self.scale, self.sq_norm = token

    def learn(self, X, y, rule, sigma, engine, scores, events, kxx=None, drift=None,
              drift_state=None):
        """Run the chunk (y: class indices); return -1 or the first divergent step."""
        w, scale = self.raw.copy(), self.scale
        if rule[0] == _pa.Regularization.L1 and scale != 1.0:
            w, scale = scale * w, 1.0
        y = np.ascontiguousarray(y, dtype=np.intp)
        if engine == "numpy":
            result = _np_pa.fit_multi(w, scale, self.sq_norm, X, y, *rule, sigma, scores,
                                      events, kxx, drift, drift_state)
        elif sp.issparse(X):
            result = _pa.fit_multi_csr(w, scale, self.sq_norm, X.data,
                                       X.indices.astype(np.int32, copy=False),
                                       X.indptr.astype(np.intp, copy=False),
                                       y, *rule, sigma, scores, events, drift, drift_state)
        else:
            result = _pa.fit_multi_dense(w, scale, self.sq_norm, X, y, *rule, sigma, scores,
                                         events, kxx, drift, drift_state)
        failed, scale, sq_norm = result
        if failed < 0:
            self.raw, self.scale, self.sq_norm = w, scale, sq_norm
        return failed

    def decision(self, X):
        return self.scale * np.asarray(safe_sparse_dot(X, self.raw.T))

    def norm(self):
        return float(np.sqrt(2.0) * self.scale * np.linalg.norm(self.raw))

    @property
    def coef(self):
        return self.scale * self.raw

    def get_state(self):
        return dict(raw=self.raw.copy(), scale=self.scale, sq_norm=self.sq_norm)

    @classmethod
    def from_state(cls, state):
        raw = np.array(state["raw"], dtype=np.float64)
        self = cls(*raw.shape)
        self.raw = np.ascontiguousarray(raw)
        self.scale, self.sq_norm = float(state["scale"]), float(state["sq_norm"])
        return self


def is_multiclass(model):
    """True for a model of k >= 2 score functions (a binary model has one)."""
    return getattr(model, "n_classes", 0) > 0


def with_classes(model, k):
    """The model on k >= 3 classes: a binary model converted, (-f/2, f/2), then zero score
    functions appended (a fresh model is all zero).  A new object; `model` is unchanged."""
    new = model if is_multiclass(model) else model.to_multiclass()
    while new.n_classes < k:
        new = new.with_class(new.n_classes)
    return new


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

    def to_multiclass(self):
        """A `KernelMultiPAModel` with the same decisions: a_i -> (-a_i/2, a_i/2), the same
        ||f||^2 (docs/multiclass-pa.md, section 4)."""
        state = self.expansion.get_state()
        a = state["scale"] * np.asarray(state["coef"], dtype=np.float64)
        multi = {key: state[key] for key in ("n_features", "budget", "policy", "next_slot",
                                             "sqnorms")}
        multi.update(kernel_record(state, complete=True), n_classes=2, scale=1.0, n_rescale=0,
                     n_merges=state.get("n_merges", 0),
                     centers=np.asarray(state["centers"], dtype=np.float64).reshape(
                         -1, state["n_features"]),
                     coef=np.column_stack([-0.5 * a, 0.5 * a]))
        engine = engine_of(self.expansion)
        return KernelMultiPAModel(multi_expansion(engine, multi), self.sq_norm)

    def with_gamma(self, gamma):
        """A new model: the same expansion on the kernel of width gamma, ||f||_K^2 recomputed
        for it (gamma="scale"'s warm-up, m <= 100 centres: docs/defaults.md, section 2)."""
        new = type(self)(_rewidth(self.expansion, gamma))
        new.sq_norm = max(float(new.expansion.sq_norm()), 0.0)
        return new

    def learn(self, X, y, rule, sigma, engine, scores, events, drift=None, drift_state=None,
              gamma=None):
        """Run the chunk; `gamma` the width of each row and after them (gamma="scale"'s
        warm-up: ||f||_K^2 recomputed at each new width, docs/defaults.md, section 2)."""
        failed, sq_norm = ENGINES[engine].pa_kernel(self._on(engine), self.sq_norm, X, y, *rule,
                                               scores, events, drift, drift_state, gamma)
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


class KernelMultiPAModel:
    """k classes: f = sum_i a_i K(x_i, .), a_i in R^k, one support set (a multi-output
    expansion, whose budget policy decides which centre leaves).

    `sq_norm` is ``2 sum_c ||f_c||_K^2`` (docs/multiclass-pa.md), carried exactly by the
    loop through every step and budget eviction (NaN only in a model saved by an older
    okl; the next step recomputes it).
    """

    def __init__(self, expansion, sq_norm=0.0):
        self.expansion = expansion
        self.sq_norm = sq_norm

    @property
    def n_classes(self):
        return self.expansion.n_classes

    def _on(self, engine):
        if not isinstance(self.expansion, ENGINES[engine].multi_expansion):
            self.expansion = multi_expansion(engine, self.expansion.get_state())
        return self.expansion

    def with_class(self, position):
        """A new model with a zero score function at `position`; self is unchanged."""
        return type(self)(self.expansion.with_class(position), self.sq_norm)

    def checkpoint(self, n_new):
        return self.expansion, self.expansion.checkpoint(n_new), self.sq_norm

    def restore(self, token):
        self.expansion, undo, self.sq_norm = token
        self.expansion.restore(undo)

    def with_gamma(self, gamma):
        """A new model on the kernel of width gamma, 2 sum_c ||f_c||^2 recomputed for it."""
        new = type(self)(_rewidth(self.expansion, gamma))
        new.sq_norm = new.exact_sq_norm()
        return new

    def learn(self, X, y, rule, sigma, engine, scores, events, drift=None, drift_state=None,
              gamma=None):
        failed, sq_norm = ENGINES[engine].pa_multi_kernel(
            self._on(engine), self.sq_norm, X, np.ascontiguousarray(y, dtype=np.intp), *rule,
            scores, events, drift, drift_state, gamma)
        if failed < 0:
            self.sq_norm = sq_norm
        return failed

    def decision(self, X):
        return self.expansion.predict(X)

    def exact_sq_norm(self):
        """2 sum_c ||f_c||_K^2 from the expansion, O(n^2 d)."""
        return 2.0 * max(self.expansion.sq_norm(), 0.0)

    def norm(self):
        return float(np.sqrt(self.exact_sq_norm()))

    def get_state(self):
        return dict(self.expansion.get_state(), sq_norm=self.sq_norm,
                    engine=engine_of(self.expansion))

    @classmethod
    def from_state(cls, state):
        state = dict(state)
        sq_norm, engine = float(state.pop("sq_norm")), state.pop("engine")
        return cls(multi_expansion(engine, state), sq_norm)


def kernel_diagonal(fmap, X):
    """K(x, x) for every row of X, with the kernel of the Nystroem map `fmap`."""
    return np.ascontiguousarray(kernels.kernel_diagonal(fmap.params, X), dtype=np.float64)


class FeaturePAModel:
    """PA on fixed-size features z(x) (random Fourier or Nystroem): a `LinearPAModel` of z.

    In the feature space the kernel rules are the linear ones, with ||w||^2
    kept exactly; a step costs O(D d) whatever the stream's length.  Nystroem
    features are the projection of K(x, .) onto the landmarks' span, so the
    step is the exact kernel step projected: its coefficients take K(x, x),
    not ||z(x)||^2, which vanishes far from every landmark and would make the
    PA step l / ||z(x)||^2 blow up (docs/budget.md, section 2).
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

    @property
    def n_classes(self):
        return self.linear.n_classes

    def _with_linear(self, linear):
        new = type(self).__new__(type(self))
        new.fmap, new.linear = self.fmap, linear
        return new

    def to_multiclass(self):
        """A new model: the binary weights w as the two-class W = [-w/2, w/2]
        (docs/multiclass-pa.md, section 4)."""
        return self._with_linear(LinearMultiPAModel.from_binary(self.linear))

    def with_class(self, position):
        return self._with_linear(self.linear.with_class(position))

    def with_gamma(self, gamma):
        """The same weights on the random Fourier features of width gamma (the same draw,
        `RandomFourierFeatures.with_gamma`): ||w||^2 is unchanged."""
        new = type(self).__new__(type(self))
        new.fmap, new.linear = self.fmap.with_gamma(gamma), self.linear
        return new

    def learn(self, X, y, rule, sigma, engine, scores, events, drift=None, drift_state=None):
        kxx = kernel_diagonal(self.fmap, X) if isinstance(self.fmap, NystroemFeatures) else None
        return self.linear.learn(self.fmap.transform(X), y, rule, sigma, engine, scores, events,
                                 kxx, drift=drift, drift_state=drift_state)

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
        fstate = {k[5:]: v for k, v in state.items() if k.startswith("fmap_")}
        fmap_cls = RandomFourierFeatures if fstate["kind"] == "fourier" else NystroemFeatures
        self = cls.__new__(cls)
        self.fmap = fmap_cls.from_state(fstate)
        linear = {k[7:]: v for k, v in state.items() if k.startswith("linear_")}
        kind = LinearMultiPAModel if np.ndim(linear["raw"]) == 2 else LinearPAModel
        self.linear = kind.from_state(linear)
        return self


class NystroemPAModel:
    """NOGD for PA: the exact kernel PA until it holds D centres, then PA on their features.

    The exact phase is an unbudgeted `KernelPAModel`; each update adds one
    centre, so a chunk is run in stretches of at most D - n_support rows and
    the switch comes after the same event however the stream is chunked.  At
    the switch the D centres become the Nystroem landmarks and f = sum_i a_i
    K(L_i, .) becomes the weights w with <w, z(x)> = f(x) (exactly, unless an
    eigenvalue of K_LL was dropped); ||w||^2 is its RKHS norm^2.  From then on
    a `FeaturePAModel`: O(D d) per step (docs/budget.md, section 2).

    References
    ----------
    Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17,
    2016 (NOGD).
    """

    def __init__(self, expansion, n_components):
        self.n_components = int(n_components)
        self.exact = KernelPAModel(expansion)
        self.features = None

    @property
    def model(self):
        """The model of the current phase."""
        return self.exact if self.features is None else self.features

    @property
    def sq_norm(self):
        return self.model.sq_norm

    @property
    def n_classes(self):
        return self.model.n_classes     # AttributeError for a binary model

    def exact_sq_norm(self):
        return self.model.exact_sq_norm() if self.features is None else self.sq_norm

    def _with(self, exact, features):
        new = type(self).__new__(type(self))
        new.n_components, new.exact, new.features = self.n_components, exact, features
        return new

    def to_multiclass(self):
        """A new model with the same decisions on two classes (docs/multiclass-pa.md)."""
        if self.features is None:
            return self._with(self.exact.to_multiclass(), None)
        return self._with(None, self.features.to_multiclass())

    def with_class(self, position):
        if self.features is None:
            return self._with(self.exact.with_class(position), None)
        return self._with(None, self.features.with_class(position))

    def with_gamma(self, gamma):
        """The exact phase on the kernel of width gamma; the features keep the width of the
        switch (the warm-up ends there)."""
        if self.features is not None:
            raise ValueError("Nystroem features keep the width they were built with.")
        return self._with(self.exact.with_gamma(gamma), None)

    @property
    def kernel_params(self):
        """The kernel's record (`okl.kernels.kernel_params`), a new dict."""
        if self.features is None:
            return self.exact.expansion.kernel_params
        return dict(self.features.fmap.params)

    def checkpoint(self, n_new):
        return (self.exact, None if self.exact is None else self.exact.checkpoint(n_new),
                self.features, None if self.features is None else self.features.checkpoint(n_new))

    def restore(self, token):
        self.exact, exact_token, self.features, features_token = token
        if self.exact is not None:
            self.exact.restore(exact_token)
        if self.features is not None:
            self.features.restore(features_token)

    def learn(self, X, y, rule, sigma, engine, scores, events, drift=None, drift_state=None):
        start, n = 0, len(X)
        while self.features is None and start < n:
            stop = min(n, start + self.n_components - self.exact.expansion.n_support)
            failed = self.exact.learn(X[start:stop], y[start:stop], rule, sigma, engine,
                                      scores[start:stop], events[start:stop], drift,
                                      drift_state)
            if failed >= 0:
                return start + failed
            start = stop
            if self.exact.expansion.n_support >= self.n_components:
                self._switch()
        if start < n:
            failed = self.features.learn(X[start:], y[start:], rule, sigma, engine,
                                         scores[start:], events[start:], drift, drift_state)
            if failed >= 0:
                return start + failed
        return -1

    def _switch(self):
        """From the D centres of the exact phase to Nystroem features on them (same f)."""
        e = self.exact.expansion
        fmap = NystroemFeatures(e.centers_, e.kernel_params)
        features = FeaturePAModel(fmap)
        coef = e.coef_
        if coef.ndim == 2:      # k classes: W (k, D), sq_norm 2 ||W||^2 (docs/multiclass-pa.md)
            W = np.array([fmap.weights_from_expansion(column) for column in coef.T])
            features.linear = LinearMultiPAModel(*W.shape)
            features.linear.raw = np.ascontiguousarray(W)
            features.linear.sq_norm = 2.0 * float(np.sum(W * W))
        else:
            w = fmap.weights_from_expansion(coef)
            features.linear.raw = np.ascontiguousarray(w)
            features.linear.sq_norm = float(w @ w)
        self.exact, self.features = None, features

    def decision(self, X):
        return self.model.decision(X)

    def norm(self):
        return self.model.norm()

    def get_state(self):
        state = dict(n_components=self.n_components,
                     phase="exact" if self.features is None else "linear")
        if self.features is None:
            state.update({"exact_" + k: v for k, v in self.exact.get_state().items()})
        else:
            state.update(self.features.get_state())
        return state

    @classmethod
    def from_state(cls, state):
        self = cls.__new__(cls)
        self.n_components = int(state["n_components"])
        self.exact, self.features = None, None
        if state["phase"] == "exact":
            exact = {k[6:]: v for k, v in state.items() if k.startswith("exact_")}
            kind = KernelMultiPAModel if "n_classes" in exact else KernelPAModel
            self.exact = kind.from_state(exact)
        else:
            self.features = FeaturePAModel.from_state(
                {k: v for k, v in state.items() if k.startswith(("linear_", "fmap_"))})
        return self


class WarmFourierPAModel:
    """PA with random Fourier features during gamma="scale"'s warm-up: the exact kernel PA
    on the live width beside the map drawn at the start (docs/defaults.md, section 2).

    The warm-up re-reads the expansion ``f = sum_i a_i K(x_i, .)`` at each new width, as
    the exact kernel PA does, and the map's frequencies follow it (the same draw,
    `RandomFourierFeatures.with_gamma`).  At the end of the warm-up `features` gives the
    `FeaturePAModel` of weights ``w = sum_i a_i z(x_i)``: <w, z(x)> is f with K replaced by
    its random feature estimate, ``||w||^2`` its norm^2.  From then on the PA rules of
    `FeaturePAModel`, O(D d) per step.
    """

    features = None         # no feature model yet (as NOGD's exact phase)

    def __init__(self, exact, fmap):
        self.exact, self._map = exact, fmap

    @property
    def fmap(self):
        """The map at the exact model's width (the same draw, `with_gamma`): the compiled
        loops and one-event steps move that width."""
        gamma = float(self.exact.expansion.kernel_params["gamma"])
        if gamma != self._map.params["gamma"]:
            self._map = self._map.with_gamma(gamma)
        return self._map

    @property
    def sq_norm(self):
        return self.exact.sq_norm

    @property
    def n_classes(self):
        return self.exact.n_classes     # AttributeError for a binary model

    @property
    def expansion(self):
        return self.exact.expansion

    def exact_sq_norm(self):
        return self.exact.exact_sq_norm()

    def to_multiclass(self):
        return type(self)(self.exact.to_multiclass(), self.fmap)

    def with_class(self, position):
        return type(self)(self.exact.with_class(position), self.fmap)

    def with_gamma(self, gamma):
        return type(self)(self.exact.with_gamma(gamma), self.fmap.with_gamma(gamma))

    def checkpoint(self, n_new):
        return self.exact.checkpoint(n_new)

    def restore(self, token):
        self.exact.restore(token)

    def learn(self, X, y, rule, sigma, engine, scores, events, drift=None, drift_state=None,
              gamma=None):
        """The exact PA's chunk (`gamma`: the width of each row and after them)."""
        return self.exact.learn(X, y, rule, sigma, engine, scores, events, drift, drift_state,
                                gamma)

    def decision(self, X):
        return self.exact.decision(X)

    def norm(self):
        return self.exact.norm()

    def feature_model(self):
        """The `FeaturePAModel` of the weights ``w = sum_i a_i z(x_i)`` (one row of W per
        class with k >= 3, ``||W||^2 = 2 ||W||_F^2``: docs/multiclass-pa.md)."""
        e = self.exact.expansion
        Z = self.fmap.transform(e.centers_)
        coef = np.asarray(e.coef_, dtype=np.float64)
        features = FeaturePAModel(self.fmap)
        if coef.ndim == 2:
            W = np.ascontiguousarray((Z.T @ coef).T)
            features.linear = LinearMultiPAModel(*W.shape)
            features.linear.raw = W
            features.linear.sq_norm = 2.0 * float(np.sum(W * W))
        else:
            w = np.ascontiguousarray(Z.T @ coef)
            features.linear.raw = w
            features.linear.sq_norm = float(w @ w)
        if not (np.all(np.isfinite(features.linear.raw)) and np.isfinite(features.sq_norm)):
            raise FloatingPointError(
                "The random features of the warm-up's centres are not finite (features of "
                "this scale overflow x W); scale X, or give gamma a number.")
        return features

    def get_state(self):
        state = {"exact_" + k: v for k, v in self.exact.get_state().items()}
        state.update({"fmap_" + k: v for k, v in self.fmap.get_state().items()})
        return state

    @classmethod
    def from_state(cls, state):
        exact = {k[6:]: v for k, v in state.items() if k.startswith("exact_")}
        kind = KernelMultiPAModel if "n_classes" in exact else KernelPAModel
        fmap = RandomFourierFeatures.from_state(
            {k[5:]: v for k, v in state.items() if k.startswith("fmap_")})
        return cls(kind.from_state(exact), fmap)
