"""FeatureModel: the pointwise rule on fixed-size features (FOGD, NOGD), one model object.

`approximation="fourier"`: f(x) = <w, z(x)> with D random Fourier features from
the first step on (FOGD).  `approximation="nystroem"`: the exact, unbudgeted
expansion until it holds D centres, then Nystroem features on those centres
as landmarks, starting from the weights that give the same function (NOGD;
docs/budget.md, section 2).  Either way the same schedules and losses as the
exact learner, O(D d) per step whatever t, and the template's checkpoint,
restore and state protocol.

References
----------
Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17,
2016; Rahimi and Recht, "Random features for large-scale kernel machines",
NIPS 2007.
"""

from numbers import Integral

from okl._engines import ENGINES
from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
from okl.kernels import kernel_diag

APPROXIMATIONS = ("fourier", "nystroem")


class FeatureModel:
    """f(x) = <w, z(x)> on a fixed-size feature map (after NOGD's exact phase for Nystroem)."""

    def __init__(self, approximation, n_features, kernel, kernel_code, gamma, degree, coef0,
                 n_components, random_state, engine, nu=1.5):
        self.approximation = approximation
        self.n_features, self.n_components = int(n_features), int(n_components)
        self.kernel, self.kernel_code = kernel, int(kernel_code)
        self.gamma, self.degree, self.coef0 = float(gamma), int(degree), float(coef0)
        self.nu = float(nu)
        self.engine = engine
        self.fmap, self.linear, self.expansion = None, None, None
        if approximation == "fourier":
            self.fmap = RandomFourierFeatures(kernel, gamma, n_components, random_state, nu)
            self.fmap.fit(n_features)
            self.linear = ENGINES[engine].linear(n_components)
        else:
            self.expansion = ENGINES[engine].expansion(n_features, kernel_code, gamma, degree,
                                                       coef0, nu=self.nu)

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

    def _on(self, engine):
        """Convert the parts to `engine` (the estimator's engine may change between calls)."""
        if engine == self.engine:
            return
        if self.linear is not None:
            self.linear = ENGINES[engine].linear.from_state(self.linear.get_state())
        if self.expansion is not None:
            self.expansion = ENGINES[engine].expansion.from_state(self.expansion.get_state())
        self.engine = engine

    def learn(self, engine, X, y, schedule, loss, state, scores, weight=None, eta=None):
        """Predict-then-update over the rows: (first divergent row or -1, the state after).

        The arguments are those of `_pointwise.fit_chunk`: one step for the
        exact phase and the features alike; on features, C_K^2 follows the
        kernel's K(x, x) of the raw rows.
        """
        self._on(engine)
        loop = ENGINES[engine].pointwise
        start, n = 0, len(X)

        def rows(a, lo, hi):
            return None if a is None else a[lo:hi]
        while self.linear is None and start < n:
            # NOGD's exact phase: each row adds at most one centre, so after
            # n_components - n_support rows the expansion may be full
            stop = min(n, start + max(self.n_components - self.expansion.n_support, 1))
            failed, state = loop(self.expansion, X[start:stop], y[start:stop], schedule, loss,
                                 state, scores[start:stop], rows(weight, start, stop),
                                 rows(eta, start, stop))
            if failed >= 0:
                return start + failed, state
            start = stop
            if self.expansion.n_support >= self.n_components:
                self._switch()
        if start < n:
            kdiag = kernel_diag(X[start:], self.kernel, self.gamma, self.degree, self.coef0,
                                self.nu)
            failed, state = loop(self.linear, self.fmap.transform(X[start:]), y[start:],
                                 schedule, loss, state, scores[start:], rows(weight, start, n),
                                 rows(eta, start, n), kdiag)
            if failed >= 0:
                return start + failed, state
        return -1, state

    def _switch(self):
        """From the exact expansion over D centres to Nystroem features on them (same f)."""
        e = self.expansion
        self.fmap = NystroemFeatures(e.centers_, self.kernel_code, self.gamma, self.degree,
                                     self.coef0, nu=self.nu)
        self.linear = ENGINES[self.engine].linear(self.fmap.n_components)
        self.linear.set_coef(self.fmap.weights_from_expansion(e.coef_))
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
                     kernel=self.kernel, kernel_code=self.kernel_code, gamma=self.gamma,
                     degree=self.degree, coef0=self.coef0, nu=self.nu,
                     n_components=self.n_components,
                     engine=self.engine, phase="linear" if self.linear is not None else "exact")
        if self.linear is not None:
            for key, value in self.linear.get_state().items():
                state["linear_" + key] = value
            for key, value in self.fmap.get_state().items():
                state["fmap_" + key] = value
        else:
            for key, value in self.expansion.get_state().items():
                state["expansion_" + key] = value
        return state

    @classmethod
    def from_state(cls, state):
        self = cls.__new__(cls)
        for key in ("approximation", "kernel", "engine"):
            setattr(self, key, str(state[key]))
        for key in ("n_features", "kernel_code", "degree", "n_components"):
            setattr(self, key, int(state[key]))
        self.gamma, self.coef0 = float(state["gamma"]), float(state["coef0"])
        self.nu = float(state.get("nu", 1.5))
        self.fmap, self.linear, self.expansion = None, None, None

        def part(prefix):
            return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        if state["phase"] == "linear":
            self.linear = ENGINES[self.engine].linear.from_state(part("linear_"))
            fstate = part("fmap_")
            if "seed" in fstate:            # a pickle: the map is drawn again from its seed
                self.fmap = RandomFourierFeatures(
                    self.kernel, self.gamma, self.n_components, fstate["seed"], nu=self.nu)
                self.fmap.fit(self.n_features)
            else:
                fmap_cls = (RandomFourierFeatures if fstate["kind"] == "fourier"
                            else NystroemFeatures)
                self.fmap = fmap_cls.from_state(fstate)
        else:
            self.expansion = ENGINES[self.engine].expansion.from_state(part("expansion_"))
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
