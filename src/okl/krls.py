"""KernelRLSRegressor: kernel recursive least squares (KRLS-T, ALD-KRLS, sliding-window and
fixed-budget dictionaries, RLS on random features), with predictive variance."""
from contextvars import ContextVar
from numbers import Integral, Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from okl import _locks, _warnings
from okl._adapt import AdaptMixin
from okl._base import (
    Diverged, OnlineLearner, _one_target, check_X, one_row, params_changed, transaction,
)
from okl._blas import one_thread
from okl._core import _pointwise
from okl._core._krls import KRLSEvents, KRLSModel, RLSFeatures
from okl._core._warmup import Width, moments_after
from okl._docstrings import shared_params
from okl._engines import ENGINES
from okl._feature_maps import RandomFourierFeatures
from okl._gamma import WARMUP, WidthMoments, check_width_moments, start_warmup, warn_spread
from okl._numpy.codes import Prune
from okl._numpy.krls import (
    EVIDENCE_EVENTS, NOISE_GRID, WIDTH_FACTORS, WIDTH_STRIDE, NumpyKRLS, NumpyRLSFeatures,
    evidence_choice, linear_evidence, rewidth, shared,
)
from okl._params import (
    BOOL, DRIFT_CONSTRAINTS, ENGINE_CONSTRAINTS, NONE, Interval, InvalidParameterError, Options, kernel_constraints,
    validate_params,
)
from okl._persist import loadable
from okl._kernel_learners import fitted_params
from okl._rows import check_label
from okl.drift import drift_spec
from okl.kernels import (
    KERNEL_PARAMS, KERNELS, kernel_diagonal, kernel_matrix, kernel_params, kernel_row,
)

#: budget="auto": the centres KernelRLSRegressor keeps (docs/krls.md, section 5)
DEFAULT_BUDGET = 200
#: nu="auto": the ALD threshold a new centre's residual must pass (docs/krls.md, section 8)
DEFAULT_NU = 1e-4
#: noise="auto": the noise of the warm-up's events, before their evidence chooses one
WARMUP_NOISE = 0.1
POLICIES = {"significance": Prune.SIGNIFICANCE, "oldest": Prune.OLDEST}
# (learner, list) while `_progressive_std` runs: the chunks' predictive standard deviations
_STD_ROWS = ContextVar("krls_std_rows", default=(None, None))
# the events after which gamma="scale" takes the width of the rows so far (docs/krls.md, 5 and
# 8: no move at 64, whose width served only events 65-100 before the end's evidence)
WIDTH_EVENTS = (1, 2, 4, 8, 16, 32, WARMUP)
# kernel="auto": the kernels the warm-up's evidence may choose (docs/krls.md, section 8)
AUTO_KERNELS = ("gaussian", "linear")


def _kept(X, y, w, rows, targets, weights):
    """The warm-up's kept events (X, y, w) followed by k more (rows (k, d) or one row (d,),
    targets, weights), as views of buffers of `WARMUP` rows or more that grow in place:
    written from row n = len(w) when the views are the first n rows of buffers whose row n
    is free (its weight NaN), else views of new buffers.  Learners may hold the same views
    (MultiKernelRegressor's do, docs/krls.md, section 9): rows are claimed (their weights
    written) before they are filled, so the claimed rows are the first ones of a buffer,
    and of two holders of n rows the second to learn copies; a holder's n rows never change
    (pickling, a deep copy and okl.save store those n rows only).  Undoing an event is
    putting the views back."""
    n, k = len(w), len(rows) if rows.ndim == 2 else 1
    bX, by, bw = X.base, y.base, w.base
    if not (bw is not None and by is not None and bX is not None and n < len(bw) >= n + k
            and bX.shape == (len(bw), X.shape[1]) and by.shape == bw.shape
            and bw[n] != bw[n]):
        size = max(WARMUP, n + k)
        bX, by, bw = np.empty((size, X.shape[1])), np.empty(size), np.full(size, np.nan)
        bX[:n], by[:n], bw[:n] = X, y, w
    bw[n:n + k] = weights               # claimed (a weight is not NaN)
    bX[n:n + k], by[n:n + k] = rows, targets
    return bX[:n + k], by[:n + k], bw[:n + k]


def _shared_kept(d, X, y, weight):
    """`_kept` of the views a learner holds (d: its ``__dict__``) and the rows X (targets y,
    weights `weight` or None), `shared` by the learners that hold the same views (kept with
    the result: their ids name them while it is kept)."""
    views = d["_warm_X"], d["_warm_y"], d["_warm_w"]
    key = ("kept", *map(id, views), X.shape, X.tobytes(), y.tobytes(),
           None if weight is None else weight.tobytes())
    return shared(key, lambda: (views, _kept(*views, X, y,
                                             1.0 if weight is None else weight)))[1]


def _auto(given, value, default):
    """"auto" when the model's value is what "auto" resolves to (unchanged), else the value."""
    return "auto" if given == "auto" and value == default else value


@loadable
@shared_params
class KernelRLSRegressor(AdaptMixin, RegressorMixin, OnlineLearner):
    """Kernel recursive least squares: a Gaussian-process posterior learned one event at a time.

    Each event is predicted (mean and variance), then learned by one rank-one update of the
    posterior over a dictionary of centres: the kernel recursive least-squares tracker,
    KRLS-T (Van Vaerenbergh, Lazaro-Gredilla and Santamaria), with Engel's approximate
    linear dependence test (a new centre joins when its residual passes `nu`), a bounded
    dictionary (`budget`, `budget_policy`), forgetting back to the prior or by uncertainty
    injection (`forgetting`, `forgetting_mode`), and an offset b, the running mean of the
    targets.  ``forgetting=1, budget=None, nu=0`` gives exactly the kernel ridge
    (Gaussian-process) solution on the data seen (docs/krls.md).  Per event O(m^2) with m
    centres; the posterior is kept in whitened coordinates of the dictionary, which keeps it
    symmetric positive definite.

    ``predict(X, return_std=True)`` and ``predict_one(x, return_std=True)`` give the
    posterior predictive standard deviation, noise included:
    ``sqrt(s02 (noise + sf2(x)))`` with s02 the signal scale estimated from the
    standardised residuals of the stream (`noise_scale_`).

    Parameters
    ----------
    kernel : {{"auto", "gaussian", "laplacian", "matern", "polynomial", "linear"}}, \
default="gaussian"
        See `okl.kernels`.  "auto": the Gaussian kernel, and at the end of the warm-up of
        noise="auto" its evidence chooses between the Gaussian kernel (its widths and
        noises) and the linear kernel ``<x, u> + c`` (its noises; c the warm-up's mean
        <x, x>, `coef0` unused): the fitted model keeps the winner, `kernel_` (docs/krls.md,
        section 8).  With a given noise or approximation="fourier", "auto" is the Gaussian
        kernel.
    {gamma}
    {degree}
    {coef0}
    kernel_params : dict or None, default=None
        The kernel's own parameters by name (the Matern kernel's smoothness:
        ``kernel_params={{"nu": 2.5}}``; `nu` of this estimator is the ALD threshold).
    noise : float > 0, default=0.01
        KRLS-T's sn2: the variance of the noise relative to the prior variance of f,
        k(x, x) (1 for the Gaussian kernel).  Small values follow the data closely.
    forgetting : float in (0, 1], default=0.999
        KRLS-T's lambda: each event forgets the past by this factor (`forgetting_mode`),
        so that old data fade and the model tracks a changing target; 1 keeps
        everything (KRLS-T's stationary posterior, the kernel ridge solution).  0.999:
        the largest lambda of 1, 0.9995, 0.999, 0.9985 that brings every stream of
        docs/krls.md, section 8, within 1.15x of a batch kernel ridge tuned in hindsight.
    forgetting_mode : {{"prior", "inflate"}}, default="inflate"
        How `forgetting` < 1 forgets (KRLS-T's two modes [1]_): "prior" back to the
        prior (covariance and mean); "inflate" by uncertainty injection, the covariance
        divided by lambda and the mean kept: exponentially weighted least squares, the
        data of t events ago weighted lambda^t, which follows a target that moves all
        stream long (a running scaler's) without the pull of the mean toward 0.  Each
        variance grows only up to the prior's (the covariance scaled on both sides by a
        diagonal), so a direction no event excites stops at the prior instead of
        growing as lambda^-t ("windup", section 11 of docs/krls.md).  The offset b and
        the drift detector's step at a change are the same in both modes.
    drift_detector : None, "page_hinkley", okl.drift.PageHinkley or a detector, default="page_hinkley"
        A change detector on each event's residual ``|y - f|`` (before the update)
        over the targets' mean absolute deviation so far, a scale that does not
        narrow as the posterior does; None: no detector (KRLS-T's iterates, the
        papers' setting; docs/drift.md, section 3, measures both).  At a change the
        posterior, once it has learned the event, takes one step of forgetting by
        `okl.drift.KEEP` (the offset's, signal scale's and deviation's memories too), so
        that the new target outweighs the old one.  "page_hinkley" and
        `okl.drift.PageHinkley` run inside the compiled step; any object with
        ``update(x)`` and ``drift_detected`` (such as ``river.drift.ADWIN()``)
        runs on the Python path, on a copy (`drift_detector_`), and its change is
        taken at the next event.  The detector starts after the warm-up of
        gamma="scale" or noise="auto" (docs/drift.md, section 3).
    budget : int, "auto" or None, default="auto"
        The most centres kept ("auto": 200; None: no bound).
    budget_policy : {{"significance", "oldest"}}, default="significance"
        Which centre leaves a full dictionary: "significance" the one whose removal
        costs the least squared error (KRLS-T, FB-KRLS), "oldest" the oldest (the
        sliding window of SW-KRLS).  The centre leaves by marginalisation: what it
        taught the others stays.
    nu : float >= 0 or "auto", default="auto"
        The approximate linear dependence threshold of Engel, Mannor and Meir: a new
        centre joins only when ``k(x, x) - k_D(x)^T K_D^-1 k_D(x) > nu`` ("auto":
        1e-4); below it the event updates the posterior without a centre.
    approximation : {{None, "fourier", "nystroem"}}, default=None
        "nystroem": the dictionary is frozen once it holds `n_components` centres
        (recursive least squares on their Nystroem features); "fourier": recursive
        least squares on `n_components` random Fourier features.  O(n_components^2)
        per event; exclusive with `budget`.
    {n_components}
    {random_state}
    fit_intercept : bool, default=True
        The offset b is the running mean of the targets (with forgetting, their
        forgetting mean) and the posterior is that of the centred targets.
    {verbose}
    {engine}

    Attributes
    ----------
    n_features_in_ : int
    t_ : int
        Events learned (weight > 0).
    n_support_ : int
        Centres in the dictionary (0 on random Fourier features).
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
    dual_coef_ : ndarray of shape (n_support_,)
        The posterior mean is ``intercept_ + sum_i dual_coef_[i] K(support_vectors_[i], x)``.
    intercept_ : float
        The offset b.
    noise_scale_ : float
        s02, the signal scale the variances are in units of.
    n_drifts_ : int
        Changes the drift detector saw so far (docs/drift.md).
    gamma_ : float
        The kernel width in use, with gamma="scale" (with ``kernel_="linear"`` the scale
        rule's, unused).
    kernel_ : str
        The kernel of the fitted model: `kernel`, or the one kernel="auto" chose.

    References
    ----------
    See docs/krls.md.

    .. [1] S. Van Vaerenbergh, M. Lazaro-Gredilla and I. Santamaria, "Kernel recursive
       least-squares tracker for time-varying regression", IEEE Transactions on Neural
       Networks and Learning Systems, 23(8):1313-1326, 2012.
    .. [2] Y. Engel, S. Mannor and R. Meir, "The kernel recursive least-squares
       algorithm", IEEE Transactions on Signal Processing, 52(8):2275-2285, 2004.
    .. [3] S. Van Vaerenbergh, J. Via and I. Santamaria, "A sliding-window kernel RLS
       algorithm and its application to nonlinear channel identification", ICASSP 2006;
       S. Van Vaerenbergh, I. Santamaria, W. Liu and J. C. Principe, "Fixed-budget
       kernel recursive least-squares", ICASSP 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from okl import KernelRLSRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (500, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=500)
    >>> est = KernelRLSRegressor().fit(X, y)
    >>> mean, std = est.predict([[0.5]], return_std=True)
    """

    _parameter_constraints = {
        **{k: v for k, v in kernel_constraints().items() if k != "nu"},
        "kernel": [Options("auto", *KERNELS)],
        "noise": [Interval(Real, 0, None, closed="neither"), Options("auto")],
        "forgetting": [Interval(Real, 0, 1, closed="right")],
        "forgetting_mode": [Options("prior", "inflate")],
        "drift_detector": DRIFT_CONSTRAINTS["drift_detector"],
        "budget": [NONE, Interval(Integral, 1, None, closed="left"), Options("auto")],
        "budget_policy": [Options(*POLICIES)],
        "nu": [Interval(Real, 0, None, closed="left"), Options("auto")],
        "approximation": [NONE, Options("fourier", "nystroem")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "random_state": [NONE, Interval(Integral, 0, None, closed="left")],
        "fit_intercept": [BOOL],
        **ENGINE_CONSTRAINTS,
    }
    # the kernel parameters this estimator names (`nu` is the ALD threshold here)
    _named_kernel_params = ("gamma", "degree", "coef0")
    _supports_sample_weight = True
    # the square matrices its model keeps (okl._params.model_sizes): R and the covariance of
    # the dictionary, the covariance of n_components features
    _square_matrices = {"budget": 2, "n_components": 1}
    # a weight scales one observation's precision; it is not repeated rows
    expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data":
            "sample_weight w divides one event's noise variance by w (docs/krls.md, section "
            "2); forgetting and the signal scale count events, not copies of rows",
    }

    def __init__(self, kernel="gaussian", gamma="scale", degree=3, coef0=0.0,
                 kernel_params=None, noise="auto", forgetting=0.999, forgetting_mode="inflate",
                 drift_detector="page_hinkley", budget="auto", budget_policy="significance",
                 nu="auto", approximation=None, n_components=100, random_state=None,
                 fit_intercept=True, verbose=False, engine="cython"):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.noise = noise
        self.forgetting = forgetting
        self.forgetting_mode = forgetting_mode
        self.drift_detector = drift_detector
        self.budget = budget
        self.budget_policy = budget_policy
        self.nu = nu
        self.approximation = approximation
        self.n_components = n_components
        self.random_state = random_state
        self.fit_intercept = fit_intercept
        self.verbose = verbose
        self.engine = engine

    # -- parameters -----------------------------------------------------------------------------

    def _validate_params(self):
        if self.kernel == "auto" and self.kernel_params is not None:
            raise InvalidParameterError(
                f"kernel='auto' chooses between the {' and '.join(AUTO_KERNELS)} kernels, "
                f"which read no kernel_params; got kernel_params={self.kernel_params!r}. Name "
                "the kernel (e.g. kernel='matern') to pass its parameters.")
        super()._validate_params()
        if self.approximation is not None and self.budget not in ("auto", None):
            raise InvalidParameterError(
                f"approximation={self.approximation!r} is a model of n_components features; "
                f"budget={self.budget} bounds the exact dictionary. Set one of them, not both.")
        if self.approximation == "fourier" and self._base_kernel() not in (
                "gaussian", "laplacian", "matern"):
            raise InvalidParameterError(
                f"approximation='fourier' draws random features of the gaussian, laplacian "
                f"and matern kernels; kernel={self.kernel!r} has none. Use "
                "approximation='nystroem' with this kernel.")

    def _budget(self):
        if self.approximation is not None:
            return 0
        if self.budget == "auto":
            return DEFAULT_BUDGET
        return 0 if self.budget is None else int(self.budget)

    def _drift(self):
        """The `Drift` record of the steps: the detector, with KRLS's own forgetting in the
        model (`okl.drift.drift_spec`)."""
        return drift_spec(1.0, self.drift_detector)

    def _noise_value(self):
        """The noise in use: noise_ (noise="auto"), else the parameter; before any fit,
        the warm-up's."""
        if self.noise == "auto" or "noise_" in self.__dict__:
            return float(self.__dict__.get("noise_", WARMUP_NOISE))
        return float(self.noise)

    def _nu(self):
        """nu="auto": DEFAULT_NU (docs/krls.md, section 8)."""
        return DEFAULT_NU if self.nu == "auto" else float(self.nu)

    def _base_kernel(self):
        """The kernel before the warm-up's choice: `kernel`, the Gaussian for "auto"."""
        return "gaussian" if self.kernel == "auto" else self.kernel

    def _kernel_params(self, kernel=None, gamma=None, coef0=None):
        """The kernel's record: `kernel` (default `_base_kernel`) at `gamma` (default gamma_
        when gamma="scale" set it, else the parameter) and `coef0` (default the parameter)."""
        gamma = self.__dict__.get("gamma_", self.gamma) if gamma is None else gamma
        return kernel_params(kernel or self._base_kernel(), self.kernel_params, gamma=gamma,
                             degree=self.degree, coef0=self.coef0 if coef0 is None else coef0)

    @property
    def kernel_(self):
        """The kernel of the fitted model (`kernel`, or the one kernel="auto" chose)."""
        check_is_fitted(self, "t_")
        model = self._krls
        record = (RandomFourierFeatures.from_state(model.fmap).params
                  if isinstance(model, (RLSFeatures, NumpyRLSFeatures)) else model.kernel_params)
        return kernel_row(record["kernel"]).name

    def _fitted_with(self):
        """The parameters the fitted model was built with, read from the model."""
        model = self._krls
        features = isinstance(model, (RLSFeatures, NumpyRLSFeatures))
        record = (RandomFourierFeatures.from_state(model.fmap).params if features
                  else model.kernel_params)
        kernel = kernel_row(record["kernel"]).name
        if self.kernel == "auto" and kernel in AUTO_KERNELS:
            # the linear kernel's constant is the warm-up's, not the parameter coef0
            record = dict(record, coef0=self.coef0) if kernel == "linear" else record
            kernel = "auto"
        noise = "auto" if "noise_" in self.__dict__ else model.noise
        out = [("kernel", kernel), *fitted_params(self, record),
               ("noise", noise), ("forgetting", model.forgetting),
               ("forgetting_mode", "inflate" if model.inflate else "prior"),
               ("fit_intercept", model.intercept)]
        if features or ("_warm_X" in self.__dict__ and self.approximation == "fourier"):
            # (during the warm-up the model is exact: it becomes features only at its end)
            return out + [("approximation", "fourier"), ("n_components", self.n_components)
                          if not features else ("n_components", model.n_components)]
        if model.policy == Prune.FREEZE:
            return out + [("approximation", "nystroem"), ("n_components", model.budget),
                          ("nu", _auto(self.nu, model.threshold, self._nu()))]
        policies = {int(code): name for name, code in POLICIES.items()}
        return out + [("approximation", None), ("budget", _auto(self.budget, model.budget or
                                                                 None, DEFAULT_BUDGET)),
                      ("budget_policy", policies[model.policy]),
                      ("nu", _auto(self.nu, model.threshold, self._nu()))]

    # -- the model ------------------------------------------------------------------------------

    def _new_model(self, n_features, record=None):
        """A fresh dictionary model of the parameters (`record`: the kernel's, default
        `_kernel_params`)."""
        engine = ENGINES[self.engine]
        budget, policy = self._budget(), POLICIES[self.budget_policy]
        if self.approximation == "nystroem":
            budget, policy = int(self.n_components), Prune.FREEZE
        return engine.krls(n_features, record or self._kernel_params(), self._noise_value(),
                           float(self.forgetting), self._nu(), budget, int(policy),
                           bool(self.fit_intercept), self.forgetting_mode == "inflate")

    def _engine_model(self):
        """The model, converted if `engine` was changed since it was built."""
        model = self._krls
        engine = ENGINES.get(self.engine) if isinstance(self.engine, str) else None
        if engine is None:              # set_params(engine=...) since the last call: named
            validate_params(self)
        cls = (engine.rls_features if isinstance(model, (RLSFeatures, NumpyRLSFeatures))
               else engine.krls)
        if not isinstance(model, cls):
            model = self._krls = cls.from_state(model.get_state())
        return model

    def _models(self):
        return (self._engine_model(),)

    @classmethod
    def _state_classes(cls):
        return (KRLSModel, NumpyKRLS, RLSFeatures, NumpyRLSFeatures)

    def _start(self, X, y):
        d = self.__dict__
        for name in ("_width_moments", "gamma_", "noise_", "_warm_X", "_warm_y", "_warm_w"):
            d.pop(name, None)
        if isinstance(self.gamma, str):
            start_warmup(self, X.shape[1])
        else:
            warn_spread(X, self._base_kernel(), float(self.gamma), type(self).__name__,
                        stacklevel=5)
        if self.noise == "auto":
            self.noise_ = WARMUP_NOISE
        if self.noise == "auto" or (self.approximation == "fourier"
                                    and isinstance(self.gamma, str)):
            d["_warm_X"] = np.empty((0, X.shape[1]))
            d["_warm_y"] = d["_warm_w"] = np.empty(0)
        self._krls = self._new_model(X.shape[1])
        if self._warming():     # room for the warm-up's centres: no buffer grows during it
            self._krls.reserve(WARMUP)
        if self.approximation == "fourier" and not self._warming():
            self._to_features()
        self.t_ = 0
        self.n_support_ = 0
        self._start_drift()

    def _warming(self):
        """Whether the warm-up is under way: gamma="scale"'s width, noise="auto"'s events."""
        return "_width_moments" in self.__dict__ or "_warm_X" in self.__dict__

    def _to_features(self):
        """Recursive least squares on random Fourier features of the width in use; the events
        kept by the warm-up are learned again on them."""
        fmap = RandomFourierFeatures(self._kernel_params(), n_components=self.n_components,
                                     random_state=self.random_state).fit(self.n_features_in_)
        self._krls = ENGINES[self.engine].rls_features(
            fmap.get_state(), self._noise_value(), float(self.forgetting),
            bool(self.fit_intercept), self.forgetting_mode == "inflate")
        self._replay()

    def _replay(self):
        """Learn the warm-up's events again on the model (a fresh one of the final settings)."""
        d = self.__dict__
        X, y, w = d.pop("_warm_X", None), d.pop("_warm_y", None), d.pop("_warm_w", None)
        if X is not None and len(X):
            model = self._krls
            failed = ENGINES[self.engine].krls_chunk(model, X, y, np.empty(len(y)),
                                                      np.empty(len(y)), w)
            if failed >= 0:
                raise Diverged(failed)

    # -- learning -------------------------------------------------------------------------------

    def _learn(self, X, y, weight=None):
        """The rows in order; during the warm-up in stretches that end where the model
        changes: at `WIDTH_EVENTS` (gamma="scale": the width of the rows so far, `rewidth`)
        and at the end of the warm-up (noise="auto": the evidence of its events chooses the
        noise, and with gamma="scale" the width; docs/krls.md, section 8)."""
        parts, n, lo = [], X.shape[0], 0
        while lo < n:
            hi = n
            if self._warming() and n > 1:       # (one row is one stretch)
                seen = self._warm_events()
                target = (next(e for e in WIDTH_EVENTS if e > seen)
                          if "_width_moments" in self.__dict__ else WARMUP)
                active = np.ones(n - lo, dtype=bool) if weight is None else weight[lo:] > 0
                reach = np.flatnonzero(np.cumsum(active) >= target - seen)
                hi = lo + int(reach[0]) + 1 if len(reach) else n
            w = None if weight is None else weight[lo:hi]
            parts.append(self._learn_rows(X[lo:hi], y[lo:hi], w))
            if self._warming():
                self._follow_warmup(X[lo:hi], y[lo:hi], w)
            lo = hi
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _warm_events(self):
        """The warm-up's events of positive weight so far."""
        d = self.__dict__
        if "_width_moments" in d:
            return int(d["_width_moments"][0])
        return int(np.count_nonzero(d["_warm_w"] > 0))

    def _follow_warmup(self, X, y, weight):
        """The warm-up takes the rows just learned: gamma="scale"'s moments (at a width event
        the model takes the width of the rows so far), the events kept for its end."""
        d = self.__dict__
        if "_warm_X" in d:
            d["_warm_X"], d["_warm_y"], d["_warm_w"] = _shared_kept(d, X, y, weight)
        if "_width_moments" in d:
            key = ("moments", self.engine, tuple(d["_width_moments"]), X.shape, X.tobytes(),
                   None if weight is None else weight.tobytes())
            moments = shared(key, lambda: self._moments_after(X, weight))
            d["_width_moments"] = moments.state()
            gamma = moments.gamma(X.shape[1], getattr(self, "_width_factor", 1.0))
            if moments.rows in WIDTH_EVENTS and gamma != d["gamma_"]:
                d["gamma_"] = gamma
                if "_warm_X" not in d or moments.warming:
                    model = self._engine_model()
                    if self.engine == "cython":     # compiled, in place
                        model.rewidth(gamma)
                    else:
                        with one_thread():      # small LAPACK calls: threads only add waiting
                            state = rewidth(model.get_state(), gamma)
                        self._krls = type(model).from_state(state)
                    # (in the dict: a compiled step holds the model, which moved in place)
                    d["n_support_"] = int(self._krls.n_support)
        if self._warm_events() >= WARMUP:
            with one_thread():      # the evidence's small LAPACK calls, the replay
                self._end_warmup()

    def _moments_after(self, X, weight):
        """gamma="scale"'s `WidthMoments` once the rows X (of positive weight) are taken."""
        if self.engine == "cython":     # the compiled twin: the same moments, bit for bit
            width = Width(X.shape[1], 1.0, self._width_moments)
            width.sequence(X, weight)
            return WidthMoments(*width.state())
        moments = WidthMoments(*self._width_moments)
        for i in range(len(X)):
            if weight is None or weight[i] != 0.0:
                moments.add(X[i])
        return moments

    def _end_warmup(self):
        """noise="auto": the noise (and with gamma="scale" the width, among multiples of the
        scale) of the largest evidence of the warm-up's last `EVIDENCE_EVENTS` events (the
        engine's `log_evidences`), with kernel="auto" against the linear kernel's, then a fresh
        model of those settings learns all of them again; random Fourier features take the
        final width."""
        d = self.__dict__
        d.pop("_width_moments", None)
        if self.noise == "auto":
            keep = np.flatnonzero(d["_warm_w"] > 0)[-EVIDENCE_EVENTS:]
            X, y, w = d["_warm_X"][keep], d["_warm_y"][keep], d["_warm_w"][keep]
            scale = d.get("gamma_")
            gammas = (scale * np.asarray(getattr(self, "_width_grid", WIDTH_FACTORS))
                      if scale is not None
                      else np.array([float(self.gamma)]))
            evidences = ENGINES[self.engine].log_evidences
            gamma, noise, value = evidence_choice(self._kernel_params(), X, y, w, gammas,
                                                  NOISE_GRID, bool(self.fit_intercept),
                                                  evidences=evidences, stride=WIDTH_STRIDE,
                                                  gram=ENGINES[self.engine].gram_base)
            record = None
            if self.kernel == "auto" and self.approximation != "fourier":
                coef0, linear, evidence = linear_evidence(X, y, w, NOISE_GRID,
                                                          bool(self.fit_intercept),
                                                          evidences=evidences)
                if evidence > value:
                    gamma, noise = scale, linear
                    record = self._kernel_params("linear", scale or self.gamma, coef0)
            if scale is not None and gamma is not None:
                d["gamma_"] = gamma
            d["noise_"] = noise
            if self.approximation != "fourier":
                self._krls = self._new_model(self.n_features_in_, record)
                self._replay()
                self.n_support_ = int(self._krls.n_support)
        if self.approximation == "fourier":
            self._to_features()
        for name in ("_warm_X", "_warm_y", "_warm_w"):
            d.pop(name, None)

    def _learn_rows(self, X, y, weight):
        n = X.shape[0]
        pred, var = np.empty(n), np.empty(n)
        owner, stds = _STD_ROWS.get()
        scale = np.empty(n) if owner is self else None
        model = self._engine_model()
        model.set_drift(None if self._warming() else self._watched(),
                        self.__dict__.get("_drift_state"), self.t_)
        failed = ENGINES[self.engine].krls_chunk(model, X, y, pred, var, weight, scale)
        if failed >= 0:
            raise Diverged(failed)
        if scale is not None:       # as predict_one(x, return_std=True) before the step
            stds.append(np.sqrt(scale * (model.noise + var)))
        self.t_ = int(model.t)
        self.n_support_ = int(model.n_support)
        self._store_drift(model.drift_state())
        return pred

    def _drift_scale(self, X, weight):
        """A detector outside the step (`AdaptMixin`): the targets' mean absolute deviation
        before the row's step, as the compiled step (None during the warm-up: not
        watched)."""
        w = 1.0 if weight is None else float(weight[0])
        if "t_" not in self.__dict__ or self._warming() or not w > 0.0:
            return None
        return float(self._krls.deviation())

    def fit(self, X, y, sample_weight=None):
        """Learn the rows of X in order, from a fresh model (one online pass).

        `sample_weight` w_t >= 0 divides the noise variance of event t by w_t; 0 lets
        time pass (forgetting) without learning the event (docs/krls.md, section 2).
        """
        self._progressive_scores(X, y, reset=True, sample_weight=sample_weight)
        return self

    def partial_fit(self, X, y, sample_weight=None):
        """Continue the stream with the rows of X, in order (`sample_weight` as in `fit`).

        A call that raises (bad input, a non-finite posterior) leaves the model exactly as
        it was.
        """
        self._progressive_scores(X, y, sample_weight=sample_weight)
        return self

    _divergence_cure = ("check the targets' scale, or use a larger noise")

    def _stream_loss(self, scores, y):
        return 0.5 * (np.asarray(scores) - np.asarray(y, dtype=np.float64)) ** 2

    # -- okl.load ------------------------------------------------------------------------------

    def _check_state(self, check):
        """okl.load's checks of the fitted state (`OnlineLearner._check_state`): every field
        against the parameters, and the model's invariants (R the inverse Cholesky factor of
        the centres' Gram matrix, the covariance symmetric positive semi-definite)."""
        attrs, out = check.attrs, check.out
        d, t = out["n_features_in_"], out["t_"]
        check.keys(attrs, ("n_features_in_", "t_", "n_support_"),
                   "KernelRLSRegressor's attributes",
                   optional=("gamma_", "noise_", "_width_moments", "_row_keys", "_warm_X",
                             "_warm_y", "_warm_w", "_drift_state", "_width_factor",
                             "_width_grid"))
        if "_width_factor" in attrs:    # a learner of MultiKernelRegressor(learner="krls")
            if not isinstance(self.gamma, str) or attrs.get("_width_grid") != [1.0]:
                check.fail("_width_factor and _width_grid belong to gamma='scale' learners of "
                           "MultiKernelRegressor(learner='krls')")
            out["_width_factor"] = check.float(attrs["_width_factor"], "_width_factor", 0.0,
                                               open_lo=True)
            out["_width_grid"] = [1.0]
        check.fitted_gamma()
        self._check_drift_state(check)
        check_width_moments(check, self.gamma)
        check.row_keys()
        if self.noise == "auto":
            out["noise_"] = check.float(attrs.get("noise_"), "noise_", 0.0, open_lo=True)
        elif "noise_" in attrs:
            check.fail(f"noise_ is stored, but noise={self.noise!r} sets none")
        kind, state = check.model("_krls", ("KRLSModel", "NumpyKRLS", "RLSFeatures",
                                            "NumpyRLSFeatures"))
        warm = "_warm_X" in attrs
        kernel, coef0 = self._base_kernel(), None
        if self.kernel == "auto" and state.get("kernel") == int(KERNELS["linear"].code):
            if warm or self.noise != "auto" or self.approximation == "fourier":
                check.fail("a linear model belongs to kernel='auto' after the warm-up of "
                           "noise='auto' only")
            kernel = "linear"
            coef0 = check.float(state.get("coef0"), "_krls.coef0", 0.0, open_lo=True)
        try:
            record = self._kernel_params(kernel, out.get("gamma_", self.gamma), coef0)
        except (ValueError, TypeError) as exc:
            check.fail(f"its kernel parameters are invalid: {exc}")
        kept = self.noise == "auto" or (self.approximation == "fourier"
                                          and isinstance(self.gamma, str))
        if warm != (kept and t < WARMUP):
            check.fail("the warm-up's events (_warm_X, _warm_y, _warm_w) are kept during the "
                       "warm-up of noise='auto' or of approximation='fourier', and only then")
        if warm:
            n = check.int(len(attrs["_warm_X"]) if isinstance(attrs["_warm_X"], np.ndarray)
                          else -1, "the length of _warm_X", 0, WARMUP)
            out["_warm_X"] = check.array(attrs["_warm_X"], "_warm_X", (n, d))
            out["_warm_y"] = check.array(attrs.get("_warm_y"), "_warm_y", (n,))
            out["_warm_w"] = check.array(attrs.get("_warm_w"), "_warm_w", (n,))
            if np.any(out["_warm_w"] < 0) or np.count_nonzero(out["_warm_w"] > 0) != t:
                check.fail("_warm_w must hold the weights >= 0 of the warm-up's t_ events")
        noise = out.get("noise_", self.noise)
        for name, value in (("noise", noise), ("forgetting", self.forgetting),
                            ("intercept", self.fit_intercept)):
            check.equal(state.get(name), value if name == "intercept" else float(value),
                        f"_krls.{name}")
        # a file written before forgetting_mode: the mode "prior"
        check.equal(bool(state.get("inflate", False)), self.forgetting_mode == "inflate",
                    "_krls.inflate")
        for name in ("t", "wsum", "nums", "dens"):
            check.float(state.get(name), f"_krls.{name}", 0.0)
        # the watched residual's scale; a file written before it starts it at 0 (the
        # deviation of the events after the load)
        for name in ("dev", "devw"):
            if name in state:
                check.float(state[name], f"_krls.{name}", 0.0)
        check.float(state.get("b"), "_krls.b")
        check.equal(check.float(state["t"], "_krls.t", 0.0), float(t), "_krls.t")
        if kind.endswith("RLSFeatures"):
            if self.approximation != "fourier" or warm:
                check.fail("a feature model belongs to approximation='fourier' after its warm-up")
            state = self._check_features(check, state, d, record)
            out["n_support_"] = check.int(attrs["n_support_"], "n_support_", 0, 0)
            return {"_krls": (kind, state)}
        policy = (Prune.FREEZE if self.approximation == "nystroem"
                  else POLICIES[self.budget_policy])
        budget = int(self.n_components) if self.approximation == "nystroem" else self._budget()
        check.keys(state, ("n_features", "kernel", *KERNEL_PARAMS, "noise", "forgetting", "threshold",
                           "budget", "policy", "intercept", "next_order", "t", "b", "wsum",
                           "nums", "dens", "centers", "order", "R", "cov", "mean", "ones"),
                   "the model '_krls'", optional=("dev", "devw", "inflate"))
        check.equal(state["n_features"], d, "_krls.n_features")
        check.equal(state["kernel"], record["kernel"], "_krls.kernel")
        check.kernel_fields(state, "_krls", record)
        check.equal(float(state["threshold"]), self._nu(), "_krls.threshold")
        check.equal(check.int(state["budget"], "_krls.budget", 0, 2 ** 31 - 1), budget,
                    "_krls.budget")
        check.equal(check.int(state["policy"], "_krls.policy", 0, 2), int(policy),
                    "_krls.policy")
        mean = check.array(state["mean"], "_krls.mean", (None,))
        m = len(mean)
        if budget and m > budget:
            check.fail(f"_krls holds {m} centres, more than its budget {budget}")
        if m > t:
            check.fail(f"_krls holds {m} centres but learned {t} events")
        out["n_support_"] = check.int(attrs["n_support_"], "n_support_", m, m)
        centers = check.array(state["centers"], "_krls.centers", (m, d))
        ones = check.array(state["ones"], "_krls.ones", (m,))
        order = check.array(state["order"], "_krls.order", (m,), kind="i")
        nxt = check.int(state["next_order"], "_krls.next_order", 0)
        if m and (np.any(np.diff(order) <= 0) or order[0] < 0 or order[-1] >= nxt):
            check.fail("_krls.order must increase and stay below _krls.next_order")
        R = check.array(state["R"], "_krls.R", (m, m))
        cov = check.array(state["cov"], "_krls.cov", (m, m))
        if np.any(np.triu(R, 1)) or np.any(np.diag(R) <= 0):
            check.fail("_krls.R is not lower triangular with a positive diagonal")
        if not np.array_equal(cov, cov.T):
            check.fail("_krls.cov is not symmetric")
        if m:
            K = kernel_matrix(centers, centers, **record)
            whitened = R @ K @ R.T
            if not np.allclose(whitened, np.eye(m), rtol=0.0, atol=1e-6):
                check.fail("_krls.R is not the inverse Cholesky factor of the Gram matrix of "
                           "_krls.centers (the centres or the kernel were changed)")
            low = np.linalg.eigvalsh(cov)[0]
            if low < -1e-9 * max(1.0, float(np.abs(cov).max())):
                check.fail("_krls.cov is not positive semi-definite")
        return {"_krls": (kind, dict(state, centers=centers, mean=mean, ones=ones, order=order,
                                     R=R, cov=cov))}

    def _check_features(self, check, state, d, record):
        """The state of recursive least squares on random Fourier features."""
        D = int(self.n_components)
        fmap = {k[4:]: v for k, v in state.items() if k.startswith("map_")}
        check.keys(state, ("noise", "forgetting", "intercept", "t", "b", "wsum", "nums",
                           "dens", "mean", "ones", "cov", *("map_" + k for k in fmap)),
                   "the model '_krls'", optional=("dev", "devw", "inflate"))
        check.keys(fmap, ("kind", "kernel", *KERNEL_PARAMS, "n_components", "n_features", "W",
                          "b"), "the feature map of '_krls'")
        check.equal(fmap["kind"], "fourier", "_krls.map_kind")
        check.equal(fmap["kernel"], record["kernel"], "_krls.map_kernel")
        check.kernel_fields(fmap, "_krls", record, prefix="")
        check.equal(fmap["n_components"], D, "_krls.map_n_components")
        check.equal(fmap["n_features"], d, "_krls.map_n_features")
        W = check.array(fmap["W"], "_krls.map_W", (d, D))
        b = check.array(fmap["b"], "_krls.map_b", (D,))
        if self.random_state is not None:       # the map is the seed's draw: recompute it
            drawn = RandomFourierFeatures(record, n_components=D,
                                          random_state=self.random_state).fit(d)
            if not (np.array_equal(drawn.W, W) and np.array_equal(drawn.b, b)):
                check.fail("_krls's random Fourier map is not the draw of random_state")
        mean = check.array(state["mean"], "_krls.mean", (D,))
        ones = check.array(state["ones"], "_krls.ones", (D,))
        cov = check.array(state["cov"], "_krls.cov", (D, D))
        if not np.array_equal(cov, cov.T):
            check.fail("_krls.cov is not symmetric")
        if np.linalg.eigvalsh(cov)[0] < -1e-9 * max(1.0, float(np.abs(cov).max())):
            check.fail("_krls.cov is not positive semi-definite")
        return dict(state, mean=mean, ones=ones, cov=cov, map_W=W, map_b=b)

    # -- one event at a time (docs/streaming.md) -----------------------------------------------

    def _takes_one_row(self):
        return self.engine == "cython" and _STD_ROWS.get()[0] is not self

    def _one_row(self, X, y):
        """A one-row chunk through the compiled one-event step (`_learn_event`), during the
        warm-up too; an event that moves the width or ends the warm-up (`_warm_moves`)
        takes `_learn` of the row under a checkpoint, without the chunk's validation (the
        same iterates, docs/krls.md, section 8).  A row or target the chunk path would
        refuse, or a step that would diverge, is left to the chunk path, which names the
        cause."""
        if not (self._warming() and self._warm_moves()):
            return super()._one_row(X, y)
        if not self._takes_one_row() or params_changed(self) or self._outside():
            return False, None
        row = one_row(self, X)
        if row is None or not _one_target(y):
            return False, None
        try:
            target = check_label(self, y[0])
        except (TypeError, ValueError):
            return False, None
        try:
            with transaction(self) as guarded:
                model = self._engine_model()
                guarded.append((model, model.checkpoint(1)))
                scores = self._learn(row[None, :], np.array([target]))
                self._check_size()
        except Diverged:
            return False, None      # undone
        return True, scores

    def _warm_moves(self):
        """Whether the warm-up's next event may move gamma="scale"'s width (`WIDTH_EVENTS`)
        or end the warm-up: the model then changes beyond one step."""
        d = self.__dict__
        if "_width_moments" in d:
            seen = int(d["_width_moments"][0]) + 1
            return seen >= WARMUP or seen in WIDTH_EVENTS
        # (the events kept bound those of positive weight: counted only near the end)
        return len(d["_warm_w"]) + 1 >= WARMUP and self._warm_events() + 1 >= WARMUP

    def _warm_event(self, events, row, y):
        """A warm-up event of weight 1 that neither moves the width nor ends the warm-up
        (docs/krls.md, section 8): its bookkeeping (gamma="scale"'s moments, the event kept
        for noise="auto"'s evidence), then the compiled step, last.  The step learns the
        event whole or refuses it before its first write; a refused event (a bad row or
        target, a Ctrl-C) leaves the bookkeeping undone."""
        d = self.__dict__
        model = self._krls
        pending = self._warm_pending(row, y)
        saved = {name: d[name] for name in pending}
        t = model.t
        try:
            d.update(pending)
            return events.learn_into(d, row, y, 1.0)
        except BaseException:
            while model.t == t:     # refused: undo (again after a Ctrl-C in the undo)
                try:
                    d.update(saved)
                    break
                except KeyboardInterrupt:
                    pass
            raise

    def _warm_move(self, events, row, y):
        """A warm-up event of weight 1 that moves the width or ends the warm-up (docs/krls.md,
        section 8): the compiled step, then `_follow_warmup` of the row (the iterates of the
        one-row chunk), under a checkpoint: an exception leaves the learner as it was.  The
        step, which reads the model's width from the model, serves the next events too.
        (taken, f_t(x_t)); a step of the warm-up's end that would diverge is left to the
        chunk path (not taken), which names the cause."""
        try:
            with transaction(self) as guarded:
                model = self._krls
                guarded.append((model, model.checkpoint(1)))
                f = events.learn_into(self.__dict__, row, y, 1.0)
                self._follow_warmup(row[None, :], np.array([y]), None)
                self._check_size()
        except Diverged:
            return False, None      # undone
        if self._warming():         # the same model, at its new width: the same step
            events.bind(self)
        return True, f

    def _warm_pending(self, row, y):
        """`_warm_event`'s bookkeeping of a row of weight 1, not yet stored on the learner:
        the attributes the warm-up holds after it (gamma="scale"'s moments, noise="auto"'s
        events, written into rows of their buffers that no learner holds, `_kept`)."""
        d = self.__dict__
        pending = {}
        if "_width_moments" in d:
            pending["_width_moments"] = moments_after(d["_width_moments"], row)
        if "_warm_X" in d:
            pending["_warm_X"], pending["_warm_y"], pending["_warm_w"] = _kept(
                d["_warm_X"], d["_warm_y"], d["_warm_w"], row, y, 1.0)
        self._check_size()
        return pending

    def _progressive_std(self, X, y, sample_weight=None):
        """Learn the rows in order (as `partial_fit`, in compiled chunks): (mean, std) of each
        made before its update, the numbers of ``predict_one(x, return_std=True)`` before
        ``learn_one(x, y)`` (okl.ConformalRegressor's normalised scores)."""
        stds = []
        token = _STD_ROWS.set((self, stds))
        try:
            mean = np.asarray(self._progressive_scores(X, y, sample_weight=sample_weight),
                              dtype=np.float64)
        finally:
            _STD_ROWS.reset(token)
        return mean, np.concatenate(stds) if stds else np.empty(0)

    def _learn_std(self, X, y, weight=None):
        """`_progressive_std` of a fitted learner on rows its owner validated and checkpointed
        (MultiKernelRegressor(learner="krls"), docs/krls.md, section 9): the compiled chunks
        without the template's checks and copy; raises `Diverged` as `_learn`."""
        stds = []
        token = _STD_ROWS.set((self, stds))
        try:
            mean = self._learn(X, y, weight)
        finally:
            _STD_ROWS.reset(token)
        return mean, np.concatenate(stds)

    def _compiled_events(self, cache):
        """The `KRLSEvents` of this fitted learner on the cython engine, or None (the NumPy
        engine); `cache` as `okl._kernel_learners.PointwiseMixin._compiled_events`.  During
        the warm-up of gamma="scale" or noise="auto" the step neither watches nor learns
        through the ready-row entry: its events take `_learn_event`."""
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        model = self.__dict__.get("_krls")
        if not (type(model) in (KRLSModel, RLSFeatures) and self.engine == "cython"
                ) or params_changed(self) or self._outside():
            return None
        warming = self._warming()
        # (the warm-up's attributes too: its end, which drops them, gives a new step)
        names = ("_krls",) + tuple(name for name in ("_width_moments", "_warm_X",
                                                     *self.get_params(deep=False))
                                   if name in self.__dict__)
        events = cache[0] = KRLSEvents(model, type(self).__name__, names,
                                       None if warming else self._watched(), not warming)
        events.bind(self)
        return events

    def _learn_event(self, events, row, y, weight=1.0):
        """One event through the compiled step; f_t(x_t).  During the warm-up an event of
        weight 1 takes `_warm_event`, or `_warm_move` when it moves the width or ends the
        warm-up; the others the one-row chunk."""
        if not self._warming():
            return events.learn_into(self.__dict__, row, y, weight)
        if weight == 1.0 and len(row) == self.n_features_in_:
            if not self._warm_moves():
                return self._warm_event(events, row, y)
            with _locks.locked(self):
                taken, f = self._warm_move(events, row, y)
            if taken:
                return f
        return float(self._progressive_scores(
            row[None, :], np.array([y]),
            sample_weight=None if weight == 1.0 else np.array([weight]))[0])

    def predict_one(self, x, return_std=False):
        """The posterior mean of f(x) for one event (x a dict or a 1-D row; 0 before any
        learning); with ``return_std=True``, (mean, predictive standard deviation)."""
        if not return_std:
            return _pointwise.predict_one(self, x)
        adapter = self._one_event()
        with adapter.lock:
            if "t_" not in self.__dict__:
                row, _ = adapter.schema.row(x)
                gamma = 1.0 / len(row) if isinstance(self.gamma, str) else self.gamma
                kxx = float(kernel_diagonal(self._kernel_params(gamma=gamma), row)[0])
                return 0.0, float(np.sqrt(self._noise_value() + kxx))
            events = adapter._fast()
            row, _ = adapter.schema.row(x, check_finite=events is None)
            if events is not None:
                f, sf2 = events.predict_std(row)
            else:
                var = np.empty(1)
                f = float(self._engine_model().predict(check_X(self, row[None], False), var)[0])
                sf2 = float(var[0])
            return f, float(np.sqrt(self._krls.scale() * (self._noise_value() + sf2)))

    # -- prediction -----------------------------------------------------------------------------

    @_locks.serialised
    def predict(self, X, return_std=False):
        """The posterior mean of f(x) for every row; with ``return_std=True`` also the
        predictive standard deviation, noise included: (mean, std)."""
        if "t_" not in self.__dict__:
            check_is_fitted(self, "t_")
        X = check_X(self, X, reset=False)
        model = self._engine_model()
        if not return_std:
            return model.predict(X)
        var = np.empty(X.shape[0])
        mean = model.predict(X, var)
        return mean, np.sqrt(model.scale() * (self._noise_value() + var))

    def _decision(self, X):
        return self.predict(X)

    @property
    def intercept_(self):
        """The offset b."""
        check_is_fitted(self, "t_")
        return float(self._krls.b)

    @property
    def noise_scale_(self):
        """s02: the variances of the posterior are in units of this scale."""
        check_is_fitted(self, "t_")
        return float(self._krls.scale())

    @property
    def support_vectors_(self):
        """The centres of the dictionary, in storage order."""
        check_is_fitted(self, "t_")
        return self._krls.get_arrays().get("centers", np.empty((0, self.n_features_in_)))

    @property
    def dual_coef_(self):
        """a with posterior mean ``intercept_ + sum_i a_i K(support_vectors_[i], x)``."""
        check_is_fitted(self, "t_")
        model = self._krls
        arrays = model.get_arrays()
        if "R" not in arrays:
            return np.empty(0)
        return arrays["R"].T @ (arrays["mean"] - model.b * arrays["ones"])

    def _check_size(self):
        model = self._krls
        if self._budget() == 0 and self.approximation is None:
            m = model.n_support
            work = m * (m + self.n_features_in_)
            _warnings.warn_size(
                self, "krls", work, _warnings.EXPANSION_WORK,
                f"{type(self).__name__} holds {m} centres and has no budget: every event now "
                f"costs {work:.2g} multiply-adds and the dictionary keeps growing. Pass "
                "budget=B (or a larger nu) to bound it (this warning is shown once).")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags
