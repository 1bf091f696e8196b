"""FeatureModel: the pointwise rule on fixed-size features (FOGD, NOGD), one model object.

`approximation="fourier"`: f(x) = <w, z(x)> with D random Fourier features from
the first step on (FOGD); with gamma="scale", the exact expansion on the live
width during the warm-up, then the weights w = sum_i a_i z(x_i)
(docs/defaults.md, section 2).  `approximation="nystroem"`: the exact, unbudgeted
expansion until it holds D centres, then Nystroem features on those centres
as landmarks, starting from the weights that give the same function (NOGD;
docs/budget.md, section 2).  Either way the same schedules and losses as the
exact learner, O(D d) per step whatever t, and the template's checkpoint,
restore and state protocol.  With k >= 3 classes the weights are a matrix W (k, D)
(`MultiLinearModel`) and the step is the multiclass one of the kernel model, the
exact phase a `MultiExpansion` (docs/multiclass.md, section 6); `with_class`
adds a class.

References
----------
Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17,
2016; Rahimi and Recht, "Random features for large-scale kernel machines",
NIPS 2007.
"""

from numbers import Integral

import numpy as np

from okl._engines import ENGINES
from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
from okl._numpy.kernels import kernel_record
from okl._numpy.multiexpansion import from_binary, insert_class
from okl.kernels import kernel_diagonal

APPROXIMATIONS = ("fourier", "nystroem")
# rows whose features a chunk maps at a time: z of 512 rows (2 MB at D = 500) is learned while
# it is in the cache, where a 50000-row chunk's z (200 MB) went to memory and back (2.8 -> 2.3 us
# a row at D = 500, d = 20)
FEATURE_ROWS = 512


class FeatureModel:
    """f(x) = <w, z(x)> on a fixed-size feature map (after NOGD's exact phase for Nystroem).

    `kernel` is the kernel's name, `params` its record (`okl.kernels.kernel_params`), which
    the feature map and the exact phase's expansion take whole.  `warm`: random Fourier
    features start with the exact expansion (gamma="scale"'s warm-up, `end_warmup`).
    """

    def __init__(self, approximation, n_features, kernel, params, n_components, random_state,
                 engine, warm=False):
        self.approximation = approximation
        self.n_features, self.n_components = int(n_features), int(n_components)
        self.kernel, self._params = kernel, kernel_record(params)
        self.engine = engine
        self.fmap, self.linear, self.expansion = None, None, None
        if approximation == "fourier":
            self.fmap = RandomFourierFeatures(self.params, n_components=n_components,
                                              random_state=random_state)
            self.fmap.fit(n_features)
            if not warm:
                self.linear = ENGINES[engine].linear(n_components)
        if self.linear is None:
            self.expansion = ENGINES[engine].expansion(n_features, self.params)

    @property
    def params(self):
        """The kernel's record; in the exact phase at the expansion's width (gamma="scale"'s
        warm-up sets it row by row, docs/defaults.md, section 2)."""
        if self.expansion is not None:
            gamma = self.expansion.kernel_params["gamma"]
            if gamma != self._params["gamma"]:
                self._params = kernel_record(dict(self._params, gamma=gamma))
        return self._params

    @params.setter
    def params(self, value):
        self._params = value

    @property
    def kernel_code(self):
        return self.params["kernel"]

    @property
    def gamma(self):
        return self.params["gamma"]

    @property
    def warm(self):
        """Random Fourier features in gamma="scale"'s warm-up: the exact expansion on the
        live width until `end_warmup`."""
        return self.approximation == "fourier" and self.linear is None

    def _copy(self):
        """A new model object sharing this one's parts (the caller replaces those that
        change).  Not `copy.copy`: that goes through `__reduce__`, which writes the whole
        state and draws the random features again from their seed, a millisecond per
        width of the warm-up."""
        out = FeatureModel.__new__(FeatureModel)
        out.__dict__.update(self.__dict__)
        return out

    # -- the learner's view ------------------------------------------------------------------

    @property
    def n_support(self):
        """Centres of the exact phase; 0 (no support vectors) on features."""
        if self.linear is None:
            return self.expansion.n_support
        return 0

    @property
    def n_features_out(self):
        """The features of the linear model (r <= D for Nystroem), or 0 in the exact phase."""
        return 0 if self.linear is None else self.fmap.n_components

    @property
    def n_classes(self):
        """k of a multiclass model (W of k rows), 0 for a binary or real-valued f."""
        part = self.linear if self.linear is not None else self.expansion
        return int(getattr(part, "n_classes", 0))

    def _classes(self, engine):
        """(linear class, expansion class) of `engine` for this model's number of outputs."""
        e = ENGINES[engine]
        return (e.multi_linear, e.multi_expansion) if self.n_classes else (e.linear, e.expansion)

    def _on(self, engine):
        """Convert the parts to `engine` (the estimator's engine may change between calls)."""
        if engine == self.engine:
            return
        linear, expansion = self._classes(engine)
        if self.linear is not None:
            self.linear = linear.from_state(self.linear.get_state())
        if self.expansion is not None:
            self.expansion = expansion.from_state(self.expansion.get_state())
        self.engine = engine

    def with_class(self, position):
        """A new model with a class at `position` (its weights a zero row; at the third class
        the binary f becomes the scores (-f/2, f/2), as `okl._labels` does for kernels).
        The parts are new objects, so the template's undo keeps the old model."""
        out = self._copy()
        e = ENGINES[self.engine]
        if self.linear is not None:
            if self.n_classes:
                W = np.insert(self.linear.coef_, position, 0.0, axis=0)
            else:
                w = self.linear.coef_
                W = np.insert(np.vstack([-0.5 * w, 0.5 * w]), position, 0.0, axis=0)
            out.linear = e.multi_linear(W.shape[0], W.shape[1])
            out.linear.set_coef(W)
        else:
            state = self.expansion.get_state()
            state = (insert_class(state, position) if self.n_classes
                     else from_binary(state, position))
            out.expansion = e.multi_expansion.from_state(state)
        return out

    def with_gamma(self, gamma):
        """A new model of width gamma (gamma="scale"'s warm-up, docs/defaults.md, section
        2): the exact phase (Nystroem's, or random Fourier features' during the warm-up)
        re-reads its expansion with the new kernel, and the random features are the same
        draw at the new width (`RandomFourierFeatures.with_gamma`).  Nystroem features,
        built at the switch, keep theirs: the warm-up ends there.  The parts that change
        are new objects, so the template's undo keeps the old model."""
        if self.approximation == "nystroem" and self.linear is not None:
            raise ValueError("Nystroem features keep the width they were built with.")
        out = self._copy()
        out.params = kernel_record(dict(self.params, gamma=float(gamma)))
        if self.linear is None:
            state = self.expansion.get_state()
            state["gamma"] = out.gamma
            out.expansion = type(self.expansion).from_state(state)
        else:
            out.linear = type(self.linear).from_state(self.linear.get_state())
        if self.approximation == "fourier":
            out.fmap = self.fmap.with_gamma(out.gamma)
        return out

    @property
    def width_frozen(self):
        """True once the model can no longer follow a moving width (Nystroem features)."""
        return self.approximation == "nystroem" and self.linear is not None

    def learn(self, engine, X, y, schedule, loss, state, scores, weight=None, eta=None,
              gamma=None, kbar=None):
        """Predict-then-update over the rows: (first divergent row or -1, the state after).

        The arguments are those of `_pointwise.fit_chunk`: one step for the
        exact phase and the features alike; on features, C_K^2 follows the
        kernel's K(x, x) of the raw rows.  `gamma` (the width of each row, and
        after them) reaches the exact phase; `kbar` (over the rows learned) every
        stretch.
        """
        self._on(engine)
        return self._run(ENGINES[engine].pointwise, X, y, (schedule, loss, state), scores,
                         weight, eta, gamma, kbar)

    def learn_multi(self, engine, X, y, schedule, loss, state, b, scores, weight=None, eta=None,
                    gamma=None, kbar=None):
        """`learn` with k >= 3 classes: the arguments of `_multiclass.fit_chunk` (y class
        indices, `loss` a MulticlassLoss code, the offsets b (k,) updated in place)."""
        self._on(engine)
        return self._run(ENGINES[engine].multiclass, X, y, (schedule, loss, state, b), scores,
                         weight, eta, gamma, kbar)

    def _run(self, loop, X, y, args, scores, weight, eta, gamma=None, kbar=None):
        """`loop` over the rows, the exact phase's stretches first, then the features; `args`
        (schedule, loss, state[, b]) go to every call, the state threaded through them."""
        start, n = 0, len(X)

        def rows(a, lo, hi):
            return None if a is None else a[lo:hi]
        while self.linear is None and start < n:
            # NOGD's exact phase: each row adds at most one centre, so after
            # n_components - n_support rows the expansion may be full
            stop = self._exact_stop(start, n)
            failed, state = loop(self.expansion, X[start:stop], y[start:stop], *args,
                                 scores[start:stop], rows(weight, start, stop),
                                 rows(eta, start, stop),
                                 gamma=None if gamma is None else gamma[start:stop + 1],
                                 kbar=kbar, frozen_at=self._frozen_at())
            args = (*args[:2], state, *args[3:])
            if failed >= 0:
                return start + failed, state
            start = stop
            self._full()
        if start < n:
            Z = np.empty((min(FEATURE_ROWS, n - start), self.fmap.n_components))
            if kbar is not None:
                kbar.gamma = self.gamma
        while start < n:
            stop = min(n, start + FEATURE_ROWS)
            z = self.fmap.transform(X[start:stop], out=Z[:stop - start])
            failed, state = loop(self.linear, z, y[start:stop], *args, scores[start:stop],
                                 rows(weight, start, stop), rows(eta, start, stop),
                                 kernel_diagonal(self.params, X[start:stop]), kbar=kbar,
                                 raw=X[start:stop] if kbar is not None and kbar.active
                                 else None)
            args = (*args[:2], state, *args[3:])
            if failed >= 0:
                return start + failed, state
            start = stop
        return -1, args[2]

    def _exact_stop(self, start, n):
        """The end of the next stretch of the exact phase: Nystroem's may fill its D centres
        (each row adds at most one); random Fourier features' (gamma="scale"'s warm-up) ends
        with the warm-up, not here."""
        if self.approximation == "fourier":
            return n
        return min(n, start + max(self.n_components - self.expansion.n_support, 1))

    def _frozen_at(self):
        """The centres at which the exact phase ends and its width stays (Nystroem's D)."""
        return self.n_components if self.approximation == "nystroem" else 0

    def _full(self):
        if self.approximation == "nystroem" and self.expansion.n_support >= self.n_components:
            self._switch()

    def end_warmup(self):
        """The model after gamma="scale"'s warm-up: random Fourier features, whose warm-up
        ran the exact expansion ``f = sum_i a_i K(x_i, .)`` on the live width, take the
        weights ``w = sum_i a_i z(x_i)``, so <w, z(x)> is f with K replaced by its random
        feature estimate (docs/defaults.md, section 2).  A new model; self is unchanged."""
        if self.approximation != "fourier" or self.linear is not None:
            return self
        out = self._copy()
        out._params = self.params
        if self.fmap.gamma != out.gamma:
            out.fmap = self.fmap.with_gamma(out.gamma)
        linear, _ = self._classes(self.engine)
        coef = np.asarray(self.expansion.coef_, dtype=np.float64)
        Z = out.fmap.transform(self.expansion.centers_)
        if coef.ndim == 2:
            out.linear = linear(coef.shape[1], self.n_components)
            out.linear.set_coef(np.ascontiguousarray((Z.T @ coef).T))
        else:
            out.linear = linear(self.n_components)
            out.linear.set_coef(Z.T @ coef)
        if not np.all(np.isfinite(out.linear.coef_)):
            raise FloatingPointError(
                "The random features of the warm-up's centres are not finite (features of "
                "this scale overflow x W); scale X, or give gamma a number.")
        out.expansion = None
        return out

    def _switch(self):
        """From the exact expansion over D centres to Nystroem features on them (same f)."""
        e = self.expansion
        self._params = self.params          # the width of the exact phase stays
        self.fmap = NystroemFeatures(e.centers_, self.params)
        linear, _ = self._classes(self.engine)
        coef = np.asarray(e.coef_, dtype=np.float64)
        if coef.ndim == 2:          # k classes: each column of the (n, k) coefficients
            self.linear = linear(coef.shape[1], self.fmap.n_components)
            self.linear.set_coef(self.fmap.weights_from_expansion(coef).T)
        else:
            self.linear = linear(self.fmap.n_components)
            self.linear.set_coef(self.fmap.weights_from_expansion(coef))
        self.expansion = None

    def predict(self, X):
        """f at every row of X."""
        return self.decision(X)

    def decision(self, X):
        if self.linear is None:
            return self.expansion.predict(X)
        return self.linear.predict(self.fmap.transform(X))

    def sq_norm(self):
        return self.expansion.sq_norm() if self.linear is None else self.linear.sq_norm()

    # -- checkpoint / restore (the template's undo) -------------------------------------------

    def checkpoint(self, n_new):
        return (self.fmap, self.linear, self.linear.checkpoint() if self.linear is not None
                else None, self.expansion,
                self.expansion.checkpoint(n_new) if self.expansion is not None else None,
                self.engine)

    def restore(self, token):
        self.fmap, self.linear, linear_token, self.expansion, exp_token, self.engine = token
        if self.linear is not None:
            self.linear.restore(linear_token)
        if self.expansion is not None:
            self.expansion.restore(exp_token)

    # -- state (okl.save, pickle) ---------------------------------------------------------------

    def get_state(self):
        state = dict(approximation=self.approximation, n_features=self.n_features,
                     **dict(self.params, kernel=self.kernel, kernel_code=self.kernel_code),
                     n_components=self.n_components,
                     engine=self.engine, phase="linear" if self.linear is not None else "exact")
        if self.linear is not None:
            for key, value in self.linear.get_state().items():
                state["linear_" + key] = value
        else:
            for key, value in self.expansion.get_state().items():
                state["expansion_" + key] = value
        if self.fmap is not None:       # random Fourier features' warm-up keeps its draw
            for key, value in self.fmap.get_state().items():
                state["fmap_" + key] = value
        return state

    @classmethod
    def from_state(cls, state):
        self = cls.__new__(cls)
        for key in ("approximation", "kernel", "engine"):
            setattr(self, key, str(state[key]))
        for key in ("n_features", "n_components"):
            setattr(self, key, int(state[key]))
        self.params = kernel_record(dict(state, kernel=state["kernel_code"]), complete=True)
        self.fmap, self.linear, self.expansion = None, None, None

        def part(prefix):
            return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        e = ENGINES[self.engine]
        fstate = part("fmap_")
        if "seed" in fstate:            # a pickle: the map is drawn again from its seed, at its width
            self.fmap = RandomFourierFeatures(kernel_record(fstate, complete=True),
                                              n_components=self.n_components,
                                              random_state=fstate["seed"])
            self.fmap.fit(self.n_features)
        elif fstate:
            fmap_cls = (RandomFourierFeatures if fstate["kind"] == "fourier"
                        else NystroemFeatures)
            self.fmap = fmap_cls.from_state(fstate)
        if state["phase"] == "linear":
            linear = part("linear_")
            self.linear = (e.multi_linear if "n_classes" in linear else e.linear).from_state(
                linear)
        else:
            expansion = part("expansion_")
            self.expansion = (e.multi_expansion if "n_classes" in expansion
                              else e.expansion).from_state(expansion)
        return self

    def __reduce__(self):
        """Pickle (Dask ships models this way) without the random features' W and b when they
        come from an int seed: the unpickled map draws them again, bit for bit, so an
        averaging round sends the weights and not the map (docs/distributed.md, section 2)."""
        state = self.get_state()
        seed = getattr(self.fmap, "random_state", None)
        if (self.approximation == "fourier" and isinstance(seed, Integral)
                and not isinstance(seed, bool)):
            del state["fmap_W"], state["fmap_b"]
            state["fmap_seed"] = int(seed)
        return (FeatureModel.from_state, (state,))
