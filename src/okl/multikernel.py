"""Online multiple kernel learning: many Gaussian widths in one pass, combined by Hedge.

MultiKernelClassifier
    K NORMA classifiers (one per width and step scale, one that forgets per
    width, and linear ones) on one support set, binary or multiclass (a score
    per class and learner, docs/multiclass.md); the prediction is their
    Hedge-weighted vote with a fixed share, or the vote of one learner drawn
    with probability q_k (Jin, Hoi and Yang 2010; Hoi, Jin, Zhao and Yang
    2013; Herbster and Warmuth 1998).
MultiKernelRegressor
    The same for kernel regression (any residual loss): the Hedge-weighted
    average of the learners, or one drawn learner.

The loops are `okl._core._multikernel` (twin `okl._numpy.multikernel`);
docs/multikernel.md derives the rule, its bound and the defaults.
"""
import functools
import inspect
import operator
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from okl import _locks, _warnings
from okl._base import Diverged, OnlineLearner, check_X, one_row, params_changed, transaction
from okl._blas import one_thread
from okl._labels import LabelsMixin
from okl._core._krls import KRLSEvents, KRLSModel, KRLSPoolEvents
from okl._core._multikernel import MultiKernel, MultiKernelEvents, bayes_mixture
from okl._engines import ENGINES
from okl._numpy.codes import StepSize
from okl._numpy.multikernel import (
    CLASSIFY, DETERMINISTIC, REGRESS, STOCHASTIC, NumpyMultiKernel, make_hedge,
)
from okl._numpy.multikernel import bayes_mixture as numpy_bayes_mixture
from okl._numpy.krls import SHARED_WARMUP
from okl._numpy.codes import Offset
from okl._numpy.pointwise import make_schedule
from okl._numpy.warmup import WARMUP
from okl._params import (
    BOOL, CLASSES_CONSTRAINTS, ENGINE_CONSTRAINTS, INTERCEPT_CONSTRAINTS, NONE,
    ONLINE_WEIGHT_CHECKS, Interval, InvalidParameterError, Kind, Options, validate_params,
)
from okl._persist import C_INT_MAX, loadable
from okl.classification import MULTICLASS_LOSSES, _finite_lipschitz
from okl.krls import KernelRLSRegressor
from okl.losses import MARGIN_LOSSES, loss_spec, loss_value
from okl.regression import REGRESSION_LOSSES

__all__ = ["MultiKernelClassifier", "MultiKernelRegressor", "AUTO_GAMMAS", "AUTO_BUDGET"]

#: The widths of gammas="auto", relative to 1 / tr(Cov(x)) of the inputs seen so far
#: (1 / n_features for standardized features): eight octaves around the data's scale
#: (docs/multikernel.md, "Defaults").
AUTO_GAMMAS = tuple(2.0 ** j for j in range(-4, 4))

#: The shared centres of budget="auto" (docs/multikernel.md, section 7).
AUTO_BUDGET = 500

_GRID = Kind(lambda v: not isinstance(v, str) and np.ndim(v) == 1 and 0 < len(v) <= 64
             and all(isinstance(g, Real) and not isinstance(g, bool) and np.isfinite(g)
                     and g > 0 for g in v), "a non-empty list of floats > 0")
_POLICIES = {"oldest": 0, "smallest": 1, "merge": 2}

_CONSTRAINTS = {
    "gammas": [Options("auto"), _GRID],
    "eta_scales": [_GRID],
    "lam": [Interval(Real, 0, None, closed="left")],
    "eta": [Interval(Real, 0, None, closed="neither"), Options("auto")],
    "eta_decay": [Interval(Real, 0, None, closed="left")],
    "beta": [Interval(Real, 0, 1, closed="right")],
    "share": [Interval(Real, 0, 1, closed="left")],
    "forgetting": [Interval(Real, 0, 1, closed="right"), NONE],
    "linear": [BOOL],
    "combination": [Options("deterministic", "stochastic")],
    "budget": [Interval(Integral, 1, None, closed="left"), Options("auto"), NONE],
    "budget_policy": [Options(*_POLICIES)],
    "random_state": [Interval(Integral, 0, None, closed="left"), NONE],
    "verbose": [BOOL, NONE],
    **ENGINE_CONSTRAINTS,
    **INTERCEPT_CONSTRAINTS,
}

_PARAMS_DOC = """\
    gammas : "auto" or list of floats > 0, default="auto"
        The Gaussian widths, K(x, u) = exp(-gamma ||x - u||^2).  "auto" is
        `AUTO_GAMMAS` (2^-4 ... 2^3) times 1 / tr(Cov(x)) of the inputs learned
        so far (running moments, so it works from the first event; 1 /
        n_features until two inputs differ).
    eta_scales : list of floats > 0, default=ETA_SCALES
        Step multipliers: one learner per (width, scale), learner (j, s) steps
        ``eta_scales[s] eta_t`` (docs/multikernel.md, section 4).
    linear : bool, default=True
        The pool also holds linear learners on the features centred by their
        running mean m (the kernel (<x - m, u - m> + r) / ((d + 1) r), r the
        mean squared entry of the centred inputs: an intercept on the scale of
        one feature, and K(x, x) = 1 on average as for the Gaussian kernel),
        one per step scale and one that forgets (docs/multikernel.md, section 1).
    forgetting : float in (0, 1] or None, default=FORGETTING
        The pool also holds, for each width (and the linear kernel), a learner
        that forgets: a constant step (the first event's, eta_1) and its past
        shrunk by this factor at every event, an exponential window of about
        ``1 / (1 - forgetting)`` events.  None: only the papers' learners, whose
        steps decay (docs/multikernel.md, section 9).
    lam : float >= 0, default=1e-3
        Regularization: every step shrinks each learner by ``1 - eta_t lam``.
    eta : float > 0 or "auto"ETA_SCALED, default=ETA
        Step size, as the single learner's: "auto" is ``1 / ((lam + M) t**eta_decay)``
        (M the loss's Lipschitz constant; C_K^2 = 1), a float ``eta t**-eta_decay``.SCALED_DOC
    eta_decay : float >= 0
        Exponent of the step size.
    beta : float in (0, 1], default=BETA
        Hedge's discount: a learner's weight is multiplied by beta**loss at
        every event, beta = 1 never reweights (docs/multikernel.md, section 5).
    share : float in [0, 1), default=SHARE
        Fixed share (Herbster and Warmuth): after each update every weight
        becomes ``(1 - share) q_k + share / K``, so that a learner's weight
        can come back after a change; 0 is the papers' Hedge
        (docs/multikernel.md, section 9).
    combination : {"deterministic", "stochastic"}, default="deterministic"
        Predict with the Hedge-weighted combination of every learner, or with
        one learner drawn with probability q_k (its draw is fixed per step by
        `random_state`).
    budget : int >= 1, "auto" or None, default="auto"
        At most this many centres, shared by every learner; "auto" is
        `AUTO_BUDGET` (docs/multikernel.md, section 7), None no limit (the
        papers' growing expansions).
    budget_policy : {"merge", "smallest", "oldest"}, default="merge"
        What a full budget does: "merge" takes BSGD's merge of the leading
        learner (largest Hedge weight), every learner keeping its projection
        onto the merged centre; "smallest" removes the centre whose coefficient
        column (across learners) has the smallest norm, the newcomer's
        included; "oldest" replaces the oldest centre (docs/multikernel.md,
        section 5).
    fit_intercept : bool, default=FIT_INTERCEPT
        Learn an offset b_k per learner (docs/multikernel.md, section 5: the
        classifier's default is False, as for `OnlineKernelClassifier`'s kernel
        part, the regressor's True, a running mean of the targets).
    random_state : int >= 0 or None, default=None
        Seed of the stochastic combination's draws (None: a fresh seed per fit).
    verbose : bool or None, default=False
        A progress bar on large chunks.
    engine : {"cython", "numpy"}, default="cython"
        "numpy" runs the NumPy twin (same iterates, slower)."""


class MultiKernelMixin:
    """What both multi-kernel learners share: the model, its steps and its state."""

    _supports_sample_weight = True

    # -- parameters --------------------------------------------------------------------

    def _grid(self):
        """(gammas, auto, width_of, eta_scales, forgetting) of the learners: for each width
        (width-major) one learner per step scale, then the one that forgets; then the linear
        learners (width -1) likewise."""
        auto = isinstance(self.gammas, str)
        gammas = np.array(AUTO_GAMMAS if auto else self.gammas, dtype=np.float64)
        kinds = list(range(len(gammas))) + ([-1] if self.linear else [])
        learners = [(j, float(c), 0.0) for j in kinds for c in self.eta_scales] + (
            [] if self.forgetting is None else [(j, 1.0, float(self.forgetting)) for j in kinds])
        learners.sort(key=lambda learner: kinds.index(learner[0]))       # stable: width-major
        width_of, scales, forgetting = (np.array(v) for v in zip(*learners))
        return (gammas, auto, width_of.astype(np.intp), scales.astype(np.float64),
                forgetting.astype(np.float64))

    def _budget(self):
        """The centres the model keeps (budget="auto" resolved), 0 for no limit."""
        return AUTO_BUDGET if isinstance(self.budget, str) else int(self.budget or 0)

    def _fitted_with(self):
        """The pool, budget and policy the model was built with (they cannot change
        mid-stream)."""
        state = self._model.get_state()
        width_of = np.asarray(state["width_of"])
        forgetting = np.asarray(state["forgetting"])
        first = width_of == width_of[0]
        policies = {code: name for name, code in _POLICIES.items()}
        budget = state["budget"] or None
        if self.budget == "auto" and budget == AUTO_BUDGET:
            budget = "auto"             # what "auto" resolved to: unchanged
        forgets = forgetting[forgetting > 0.0]
        return [("gammas", "auto" if state["auto"] else state["gammas"]),
                ("eta_scales", np.asarray(state["eta_scales"])[first & (forgetting == 0.0)]),
                ("linear", bool(np.any(width_of < 0))),
                ("forgetting", float(forgets[0]) if len(forgets) else None),
                ("budget", budget),
                ("budget_policy", policies[int(state["policy"])])]

    def _schedule(self):
        kind = StepSize.AUTO if isinstance(self.eta, str) else StepSize.POWER
        if self.eta == "scaled" and self.loss == "hinge":   # over kbar (docs/multikernel.md, 4)
            kind = StepSize.SCALED
        auto = kind != StepSize.POWER
        return make_schedule(kind, 0.0 if auto else self.eta, self.eta_decay, self.lam, 0.0,
                             self._auto_lipschitz() if auto else 1.0, self._offset())

    def _offset(self):
        """How the offsets b learn, as for the single learners (docs/defaults.md, section 1):
        the running mean of the targets (regression), the gradient step (classification)."""
        if not self.fit_intercept:
            return Offset.FIXED
        return Offset.STEP if self._task == CLASSIFY else Offset.MEAN

    def _hedge(self):
        return make_hedge(self.beta, STOCHASTIC if self.combination == "stochastic"
                          else DETERMINISTIC, self._task, self.__dict__.get("seed_", 0),
                          self.share)

    def _auto_lipschitz(self):
        return 1.0

    # -- the model ---------------------------------------------------------------------

    def _engine_model(self):
        """The model, converted if `engine` was changed since it was built."""
        model = self._model
        engine = ENGINES.get(self.engine) if isinstance(self.engine, str) else None
        if engine is None:              # set_params(engine=...) since the last call: named
            validate_params(self)
        cls = engine.multikernel
        if not isinstance(model, cls):
            model = self._model = cls.from_state(model.get_state())
        return model

    def _models(self):
        return (self._engine_model(),)

    @classmethod
    def _state_classes(cls):
        return (MultiKernel, NumpyMultiKernel)

    def _start(self, X, y):
        gammas, auto, width_of, scales, forgetting = self._grid()
        self._model = ENGINES[self.engine].multikernel(
            X.shape[1], gammas, width_of, scales, auto, self._budget(),
            _POLICIES[self.budget_policy], 1, forgetting)
        self.seed_ = (int(self.random_state) if self.random_state is not None
                      else int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 2))
        self.t_ = 0
        self.n_support_ = 0

    def _check_size(self):
        model = self.__dict__["_model"]
        if model.n_outputs >= 3:        # k classes: every learner scores each of them
            work = model.n_support * (model.n_features + model.n_learners * model.n_outputs)
            _warnings.warn_size(
                self, "classes", work, _warnings.EXPANSION_WORK,
                f"{type(self).__name__} scores {model.n_outputs} classes with each of its "
                f"{model.n_learners} learners on {model.n_support} centres: every step now "
                f"costs {work:.2g} multiply-adds, growing with every new class. Use fewer "
                "learners (gammas, eta_scales) or a smaller budget, or okl.OnlineKernelClassifier "
                "(one learner) for many classes (this warning is shown once).")
        if not self._budget():
            work = model.n_support * (model.n_features + model.n_learners)
            _warnings.warn_size(
                self, "expansion", work, _warnings.EXPANSION_WORK,
                f"{type(self).__name__} holds {model.n_support} shared centres of "
                f"{model.n_features} features for {model.n_learners} learners and has no "
                f"budget: every step now costs {work:.2g} multiply-adds and the model keeps "
                "growing with the stream. Pass budget=B to bound the number of centres "
                "(this warning is shown once).")

    def _store(self):
        model = self.__dict__["_model"]
        self.__dict__["t_"] = int(model.t)
        self.__dict__["n_support_"] = int(model.n_support)

    def _learn(self, X, y, weight=None):
        model = self._engine_model()
        scores = np.empty((X.shape[0], model.n_outputs), dtype=np.float64)
        failed = model.learn(X, np.ascontiguousarray(y, dtype=np.float64), weight,
                             self._schedule(), self._loss_spec(), self._hedge(), scores)
        if failed >= 0:
            raise Diverged(failed)
        self._store()
        return scores[:, 0] if model.n_outputs == 1 else scores

    # -- one event (the compiled step, as okl._kernel_learners.PointwiseMixin) ----------

    def _learn_event(self, events, row, y, weight=1.0):
        try:
            out, _ = events.learn(row, y, weight)
            self._store()
        except KeyboardInterrupt:   # raised once the step wrote: t_, n_support_ follow the model
            self._store()
            raise
        return out

    def _compiled_events(self, cache):
        """The compiled one-event step; while a classifier knows one class it takes the events
        of that class without learning them (okl._labels), a new label goes to partial_fit."""
        learns = self._task != CLASSIFY or len(self.__dict__.get("classes_", ())) >= 2
        events = cache[0]
        if events is not None and events.matches(self):     # the same classes_ among them
            return events
        if not ("t_" in self.__dict__ and self.engine == "cython"
                and type(self.__dict__.get("_model")) is MultiKernel):
            return None
        if params_changed(self):
            return None
        names = ("_model",) + ("classes_",) * (self._task == CLASSIFY) + tuple(
            name for name in self._parameter_constraints if name in self.__dict__)
        events = cache[0] = MultiKernelEvents(self._model, self._schedule(), self._loss_spec(),
                                              self._hedge(), type(self).__name__, names, learns)
        events.bind(self)
        return events

    @_locks.serialised
    def _decision(self, X):
        """The combined prediction of every row of validated X."""
        if "t_" not in self.__dict__:
            check_is_fitted(self, "t_")
        row = one_row(self, X) if "_one_event_state" in self.__dict__ else None
        if row is not None:
            events = self._one_event()._fast()
            if events is not None:
                return np.array([events.predict(row)])
        X = check_X(self, X, reset=False)
        return self._engine_model().predict(X, self._hedge())

    # -- what the learners say -----------------------------------------------------------

    @property
    def weights_(self):
        """The Hedge weights q_k of the learners (summing to 1), aligned with `gammas_`."""
        check_is_fitted(self, "t_")
        model = self._model
        return np.array(model.q_ if isinstance(model, MultiKernel) else model.q)

    @property
    def gammas_(self):
        """The width of each learner now (the running scale included for gammas="auto"); NaN
        for a linear learner."""
        check_is_fitted(self, "t_")
        state = self._model.get_state()
        scale = NumpyMultiKernel.from_state(state).gamma_scale()
        width_of = np.asarray(state["width_of"])
        return np.where(width_of >= 0, state["gammas"][np.maximum(width_of, 0)] * scale, np.nan)

    @property
    def eta_scales_(self):
        """The step multiplier of each learner."""
        check_is_fitted(self, "t_")
        return self._model.get_state()["eta_scales"]

    @property
    def forgetting_(self):
        """The forgetting factor of each learner; NaN for the papers' learners, whose steps
        decay."""
        check_is_fitted(self, "t_")
        forgetting = self._model.get_state()["forgetting"]
        return np.where(forgetting > 0.0, forgetting, np.nan)

    @property
    def intercept_(self):
        """The offsets b_k of the learners: (learners,), or (learners, classes) with 3 or
        more classes."""
        if "t_" not in self.__dict__:
            check_is_fitted(self, "t_")
        return np.array(self._model.b_)     # read at every predict_one: no state copy

    @property
    def support_vectors_(self):
        """The shared centres, in storage order."""
        check_is_fitted(self, "t_")
        return self._model.centers_

    @property
    def dual_coef_(self):
        """(Gaussian learners, n_support_): f_k = sum_i dual_coef_[k, i]
        K_k(support_vectors_[i], .) + intercept_[k] for the first learners (those with a
        width); (..., n_support_, classes) with 3 or more classes."""
        check_is_fitted(self, "t_")
        return self._model.coef_

    @property
    def linear_coef_(self):
        """(linear learners, n_features + 1): f_k = linear_coef_[l, :-1] . x +
        linear_coef_[l, -1] + intercept_[k] for the last learners (those without a width;
        they learn on inputs centred by their running mean, which the last column takes in);
        (..., n_features + 1, classes) with 3 or more classes."""
        check_is_fitted(self, "t_")
        return self._model.linear_coef_

    def learner_decisions(self, X):
        """(rows, learners): every learner's own f_k(x), aligned with `weights_`;
        (rows, learners, classes) scores with 3 or more classes."""
        check_is_fitted(self, "t_")
        with _locks.locked(self):
            X = check_X(self, X, reset=False)
            return self._engine_model().decisions(X)

    # -- okl.load ----------------------------------------------------------------------

    def _check_state(self, check):
        """okl.load's checks of the fitted state (see `OnlineLearner._check_state`)."""
        attrs, out, name = check.attrs, check.out, type(self).__name__
        d, t = out["n_features_in_"], out["t_"]
        labels = ("classes_",) if self._task == CLASSIFY else ()
        check.keys(attrs, ("n_features_in_", "t_", "n_support_", "seed_") + labels,
                   f"{name}'s attributes", optional=("_row_keys", "fixed_classes_"))
        if labels:
            check.binary_labels(max_classes=C_INT_MAX)
            if len(out["classes_"]) >= 3 and self.loss not in MULTICLASS_LOSSES:
                check.fail(f"loss={self.loss!r} has no multiclass model, yet classes_ holds "
                           f"{len(out['classes_'])}")
        if "_row_keys" in attrs:
            keys = attrs["_row_keys"]
            if (not isinstance(keys, list) or len(keys) != d
                    or not all(isinstance(k, (str, int)) for k in keys)):
                check.fail("_row_keys must list the names of the n_features_in_ features")
            out["_row_keys"] = tuple(keys)
        out["seed_"] = check.int(attrs["seed_"], "seed_", 0, 2 ** 62)
        kind, state = check.model("_model", ("MultiKernel", "NumpyMultiKernel"))
        gammas, auto, width_of, scales, forgetting = self._grid()
        K, W, L = len(width_of), len(gammas), int(np.sum(width_of < 0))
        check.keys(state, ("n_features", "gammas", "width_of", "eta_scales", "forgetting",
                           "auto", "budget", "policy", "next_slot", "centers", "coef",
                           "linear_coef", "scale", "b", "q", "t", "ck2", "eta_t", "lam_t",
                           "n_seen", "mean", "m2", "loss_scale", "kbar_sum", "kbar_pairs"),
                   "the model '_model'", optional=("n_outputs",))
        check.equal(state["n_features"], d, "_model.n_features")
        check.equal(state["auto"], auto, "_model.auto")
        budget = self._budget()
        check.equal(state["budget"], budget, "_model.budget")
        check.equal(state["policy"], _POLICIES[self.budget_policy], "_model.policy")
        if not (np.array_equal(check.array(state["gammas"], "_model.gammas", (W,)), gammas)
                and np.array_equal(check.array(state["width_of"], "_model.width_of", (K,), "i"),
                                   width_of)
                and np.array_equal(check.array(state["eta_scales"], "_model.eta_scales", (K,)),
                                   scales)
                and np.array_equal(check.array(state["forgetting"], "_model.forgetting", (K,)),
                                   forgetting)):
            check.fail("the model's learners (widths, step scales, forgetting) differ from the "
                       "parameters")
        C = len(out["classes_"]) if labels and len(out.get("classes_", ())) >= 3 else 1
        n_outputs = state.get("n_outputs", 1)
        if not (isinstance(n_outputs, (int, np.integer)) and n_outputs == C):
            check.fail(f"_model.n_outputs is {n_outputs!r}; the classes need {C}")
        outputs = (C,) if C > 1 else ()
        coef = check.array(state["coef"], "_model.coef", (K - L, None) + outputs)
        linear = check.array(state["linear_coef"], "_model.linear_coef", (L, d + 1) + outputs)
        n = coef.shape[1]
        out["n_support_"] = check.int(attrs["n_support_"], "n_support_", 0, t)
        if n != out["n_support_"] or (budget and n > budget):
            check.fail(f"n_support_ and the model's {n} centres disagree (or pass the budget)")
        centers = check.array(state["centers"], "_model.centers", (n, d))
        scale = check.array(state["scale"], "_model.scale", (K,))
        if np.any(scale <= 0):
            check.fail("_model.scale must be > 0")
        check.array(state["b"], "_model.b", (K,) + ((C,) if C > 1 else ()))
        q = check.array(state["q"], "_model.q", (K,))
        if np.any(q < 0) or not abs(q.sum() - 1.0) < 1e-9:
            check.fail("_model.q must be weights >= 0 summing to 1")
        # the running moments overflow on inputs near 1e154 (inf, then NaN): kept as they are
        m2 = check.array(state["m2"], "_model.m2", (d,), finite=False)
        if np.any(m2 < 0):
            check.fail("_model.m2 must be >= 0")
        check.array(state["mean"], "_model.mean", (d,), finite=False)
        if check.float(state["t"], "_model.t", 0.0) != t:
            check.fail(f"_model.t differs from t_ = {t}")
        check.float(state["ck2"], "_model.ck2", 0.0)
        check.float(state["n_seen"], "_model.n_seen", 0.0, float(t))
        check.float(state["loss_scale"], "_model.loss_scale", 0.0)
        # kbar's pairs: each of the first WARMUP steps with the centres before it
        pairs = check.float(state["kbar_pairs"], "_model.kbar_pairs", 0.0,
                            WARMUP * (WARMUP - 1) / 2)
        kbar_sum = check.array(state["kbar_sum"], "_model.kbar_sum", (W,))
        if not (pairs.is_integer() and np.all((kbar_sum >= 0) & (kbar_sum <= pairs))):
            check.fail("_model.kbar_sum must hold sums of kernel values in [0, 1] over "
                       "_model.kbar_pairs (a whole number) pairs")
        for field in ("eta_t", "lam_t"):
            value = state[field]
            if not (isinstance(value, float) and (np.isnan(value) or value >= 0)):
                check.fail(f"_model.{field} is {value!r}, not a number >= 0 or NaN")
        ring = budget if (budget and self.budget_policy == "oldest" and n == budget) else 1
        check.int(state["next_slot"], "_model.next_slot", 0, ring - 1)
        return {"_model": (kind, dict(state, centers=centers, coef=coef, linear_coef=linear))}


# -- MultiKernelRegressor(learner="krls"): KernelRLSRegressor learners over widths ---------
# Each learner is a full KernelRLSRegressor with its own rules (budget, noise by the evidence of
# its warm-up, forgetting); the weights are the running posterior probabilities of the
# learners, each multiplied at every event by its predictive density N(y; f_k, s_k^2) (but at the
# events of `_scale_unknown`) and mixed with a fixed share (`bayes_mixture`).  docs/krls.md,
# section 9.

#: gammas="auto" with learner="krls": the widths of the pool, as factors of KernelRLSRegressor's
#: scale rule (docs/krls.md, section 9)
KRLS_FACTORS = tuple(2.0 ** j for j in range(-6, 4))
#: the constant c of the linear learner's kernel <x, u> + c (inputs on the scale of one)
LINEAR_COEF0 = 1.0
#: the lambda of the linear learner that forgets by uncertainty injection, which follows a
#: target a running scaler keeps moving (section 11 of docs/krls.md)
TRACKING_FORGETTING = 0.998
#: the forgetting of the pool's other learners, where it differs from KernelRLSRegressor's
#: default: none, the pool's tracking learner forgets for them (section 11 of docs/krls.md)
MEMBER_FORGETTING = {"forgetting": 1.0, "forgetting_mode": "prior"}
# the parameters the pool sets on its learners (learner_params may not)
_OWN = ("kernel", "gamma", "engine", "verbose")
MIXTURES = {"cython": bayes_mixture, "numpy": numpy_bayes_mixture}
#: sleep=: every learner wakes (predicts, learns, and its weight moves) at the events
#: SLEEP_AFTER + j WAKE_EVERY (the first once the learners' warm-up is done)
WAKE_EVERY = 200
SLEEP_AFTER = 100
#: sleep="auto" with learner="krls": the weight floor, measured in docs/krls.md (section 10)
AUTO_SLEEP = 0.01
# a learner's warm-up state, which `KernelRLSRegressor._warm_pending` moves
_WARM_STATE = ("_width_moments", "_warm_X", "_warm_y", "_warm_w")


#: the first-order learners' parameters (learner="sgd"), which learner="krls" leaves at
#: their defaults (loss and combination have their own message)
_FIRST_ORDER = ("eta_scales", "forgetting", "lam", "eta", "eta_decay", "beta", "budget",
                "budget_policy", "quantile", "epsilon")


@functools.cache
def _first_order_defaults(cls):
    """{name: default} of the `_FIRST_ORDER` parameters of `cls` (read once)."""
    params = inspect.signature(cls.__init__).parameters
    return {name: params[name].default for name in _FIRST_ORDER}


def _is_default(value, default):
    """Whether a parameter's value is its default (a list equal to a default tuple is)."""
    if isinstance(value, (str, type(None))) or isinstance(default, (str, type(None))):
        return isinstance(value, type(default)) and value == default
    if isinstance(value, Real) and isinstance(default, Real):
        return value == default
    return np.array_equal(value, default)


def check_learner_params(params):
    """The KernelRLSRegressor parameters of learner_params, or a clear error."""
    params = dict(params or {})
    known = set(KernelRLSRegressor().get_params()) - set(_OWN)
    wrong = sorted(set(params) - known)
    if wrong:
        raise InvalidParameterError(
            f"learner_params sets {', '.join(map(repr, wrong))}, which is not a parameter of "
            f"the pool's KernelRLSRegressor learners; it takes {', '.join(sorted(known))} "
            "(the widths are `gammas`, the engine `engine`).")
    return params


def _member(params, engine, gamma=None, factor=None, linear=False, tracking=False):
    """One learner of the pool: the scale rule's width times `factor` (its warm-up's
    evidence chooses only its noise), a given width, or the linear kernel (`tracking`: the
    one that forgets by uncertainty injection, `TRACKING_FORGETTING`); `MEMBER_FORGETTING`
    unless `params` (learner_params) says."""
    params = {**MEMBER_FORGETTING, **params}
    if linear:
        if tracking:
            params = dict(params, forgetting=TRACKING_FORGETTING, forgetting_mode="inflate")
        return KernelRLSRegressor(kernel="linear", gamma=1.0, coef0=LINEAR_COEF0, engine=engine,
                                  **params)
    if factor is None:
        return KernelRLSRegressor(gamma=float(gamma), engine=engine, **params)
    est = KernelRLSRegressor(gamma="scale", engine=engine, **params)
    est.__dict__.update(_width_factor=float(factor), _width_grid=[1.0])
    return est


def _pool(gammas, linear, params, engine):
    """The learners of learner="krls", as (name, learner) pairs: one per width (gammas "auto":
    the factors `KRLS_FACTORS` of the scale rule), then the linear ones: one of
    `learner_params`, one that tracks."""
    factors = isinstance(gammas, str)
    members = [(f"gamma{j}", _member(params, engine, factor=g) if factors
                else _member(params, engine, g))
               for j, g in enumerate(KRLS_FACTORS if factors else gammas)]
    if linear:
        members += [("linear", _member(params, engine, linear=True)),
                    ("tracking", _member(params, engine, linear=True, tracking=True))]
    return members


def _scale_unknown(t, weight, n, intercept):
    """The rows (of a call of n rows, the pool at event t) at which the learners' signal scale
    s02 has counted no standardised error (docs/krls.md, sections 3 and 9): those of positive
    weight among the pool's first two events (the first sets the offset b), or its first
    without the offset.  Their density is the same for every learner up to a constant (the
    scale's prior integrates it out), so the weights take none of it."""
    positive, before = _events_before(t, weight, n)
    return positive & (before < 1 + bool(intercept))


def _pool_learn(members, logw, share, t, X, y, weight, engine):
    """Every learner learns the rows in order (its compiled chunks), then the weights take
    the rows (`bayes_mixture`) but those of `_scale_unknown` (the pool at event t): (mean,
    std of the mixture before each row, the new logw, the learners' means and standard
    deviations F, S (rows, learners)).  Raises FloatingPointError when a learner's
    predictive density is not finite."""
    n, K = X.shape[0], len(members)
    F, S = np.empty((n, K)), np.empty((n, K))
    token = SHARED_WARMUP.set({})       # the learners' warm-ups share their common work
    try:
        for k, (name, m) in enumerate(members):
            if "t_" not in m.__dict__:      # the first rows: the template starts the learner
                F[:, k], S[:, k] = m._progressive_std(X, y, weight)
                continue
            try:        # validated and checkpointed by the pool's own template
                F[:, k], S[:, k] = m._learn_std(X, y, weight)
            except Diverged as failure:
                raise FloatingPointError(
                    f"MultiKernelRegressor's learner {name} diverged at row {failure.step + 1} "
                    f"of this call: the model is no longer finite. Check the targets' scale, or "
                    "pass a larger noise in learner_params. The model is left as it was.") from None
    finally:
        SHARED_WARMUP.reset(token)
    w = np.ones(n) if weight is None else np.array(weight, dtype=np.float64)
    w[_scale_unknown(t, weight, n, members[0][1].fit_intercept)] = 0.0
    logw = np.array(logw, dtype=np.float64)
    mean, std = np.empty(n), np.empty(n)
    failed = MIXTURES[engine](F, S, np.ascontiguousarray(y, dtype=np.float64), w, logw,
                              float(share), mean, std)
    if failed >= 0:
        raise FloatingPointError(
            f"MultiKernelRegressor's learners gave no finite predictive density at row "
            f"{failed + 1} of this call; scale the targets. The model is left as it was.")
    return mean, std, logw, F, S


def _events_before(t, weight, n):
    """For each row of a call of n rows, the pool at event t: whether its weight is positive
    (an event), and the pool's events before it."""
    positive = np.ones(n, dtype=bool) if weight is None else np.asarray(weight) > 0
    return positive, t + np.cumsum(positive) - positive


def _wake_rows(positive, before):
    """The rows of a call (`_events_before`'s `positive`, `before`) at which every learner
    wakes: those of positive weight at the events t' = `SLEEP_AFTER` + j `WAKE_EVERY`, j >= 0."""
    after = before - SLEEP_AFTER
    return np.flatnonzero(positive & (after >= 0) & (after % WAKE_EVERY == 0))


def _pool_sleep_learn(members, logw, asleep, share, floor, t, X, y, weight, engine):
    """`_pool_learn` with sleeping learners (docs/krls.md, section 10): between wake rows
    only the awake learners predict, learn and move their weights (the sleepers' weights
    stay at the floor, outside the mixture); at a wake row every learner learns it and the
    whole mixture takes it, then the learners whose weight is below `floor` (all but the
    heaviest) fall asleep at the floor.  (mean, std, logw, asleep)."""
    n = X.shape[0]
    logw, asleep = np.array(logw, dtype=np.float64), np.array(asleep, dtype=bool)
    positive, events = _events_before(t, weight, n)
    means, stds, lo = [], [], 0
    for i in [*_wake_rows(positive, events), n]:
        for a, b, wake in ((lo, i, False), (i, min(i + 1, n), True)):
            if a >= b:
                continue
            part = None if weight is None else weight[a:b]
            at = int(events[a])
            awake = np.flatnonzero(~asleep)
            mass = np.logaddexp.reduce(logw[awake])
            if not asleep.any():
                mean, std, logw, _, _ = _pool_learn(members, logw, share, at, X[a:b],
                                                    y[a:b], part, engine)
            elif wake:      # everyone learns the row; its prediction is the awake ones' (predict)
                before = logw[awake] - mass
                _, _, logw, F, S = _pool_learn(members, logw, share, at, X[a:b], y[a:b],
                                               part, engine)
                mean, std = _mixture(F[:, awake], S[:, awake], before)
            else:
                mean, std, sub, _, _ = _pool_learn([members[k] for k in awake],
                                                   logw[awake] - mass, share, at, X[a:b],
                                                   y[a:b], part, engine)
                logw[awake] = sub + mass
            means.append(mean)
            stds.append(std)
            if wake:
                w = np.exp(logw)
                asleep = w < floor
                asleep[np.argmax(w)] = False
                low = np.log(floor)
                rest = np.logaddexp.reduce(logw[~asleep])
                logw[~asleep] += np.log1p(-floor * asleep.sum()) - rest
                logw[asleep] = low
        lo = i + 1
    return np.concatenate(means), np.concatenate(stds), logw, asleep


def _pool_predict(members, logw, X):
    """(mean, std) of the mixture for every row (`_mixture`)."""
    F = np.empty((X.shape[0], len(members)))
    S = np.empty_like(F)
    for k, (_, m) in enumerate(members):
        F[:, k], S[:, k] = m.predict(X, return_std=True)
    return _mixture(F, S, logw)


def _mixture(F, S, logw):
    """(mean, std) of the learners' (F, S) under the weights exp(logw): sum_k w_k f_k and
    sqrt(sum_k w_k (s_k^2 + f_k^2) - mean^2)."""
    w = np.exp(logw)
    mean = F @ w
    second = (S * S + F * F) @ w - mean * mean
    return mean, np.sqrt(np.maximum(second, 0.0))


class _PoolGuard:
    """checkpoint(n) / restore(token) of the learners of learner="krls", for
    `okl._base.transaction` (which restores the weights with the estimator's attributes):
    a call that raises leaves the learners and the weights as they were, together.  With
    `learns(n)` (sleep=), only the learners that the next n events may change."""

    def __init__(self, members, learns=None):
        self.members = members
        self.learns = learns

    def checkpoint(self, n_new=0):
        saved = []
        kept = None if self.learns is None else self.learns(n_new)
        for k, (_, m) in enumerate(self.members):
            if kept is not None and not kept[k]:
                saved.append(None)
                continue
            model = m.__dict__.get("_krls")
            saved.append((dict(m.__dict__), None if model is None
                          else (model, model.checkpoint(n_new))))
        return saved

    def restore(self, token):
        for (_, m), saved in zip(self.members, token):
            if saved is None:       # a sleeper the call did not reach
                continue
            state, model = saved
            if model is not None:
                model[0].restore(model[1])
            m.__dict__.clear()
            m.__dict__.update(state)


def _warm_groups(members):
    """The learners of a pool whose warm-up is under way, as (learner, its warm-up state
    `_WARM_STATE` (None: an attribute it has not), whether that state is the previous one's:
    the same objects, else equal values) triples, and whether the next event moves a
    learner's width or ends its warm-up (`KernelRLSRegressor._warm_moves`, asked once a
    state)."""
    warming, last, moves = [], None, False
    for _, m in members:
        if not m._warming():
            continue
        state = tuple(map(m.__dict__.get, _WARM_STATE))
        same = last is not None and (all(map(operator.is_, state, last)) or all(
            a is b or (a is not None and b is not None and np.array_equal(a, b))
            for a, b in zip(state, last)))
        if not same:
            last = state
            moves = moves or m._warm_moves()
        warming.append((m, state, same))
    return warming, moves


_SCALED_DOC = """
        "scaled" (with the hinge loss; else "auto") divides each learner's step
        by its kernel's mean between two inputs: a width's over each of the first
        100 events and the centres before it, the (centred) linear kernel's
        1 / (d + 1) (docs/multikernel.md, section 4)."""


def _with_params(cls):
    """Class decorator: the shared parameter descriptions, with the class's defaults, in place
    of the docstring's %s."""
    defaults = cls().get_params()
    scaled = defaults["eta"] == "scaled"
    text = _PARAMS_DOC.replace(
        "eta_decay : float >= 0", f"eta_decay : float >= 0, default={defaults['eta_decay']}")
    for key, value in [("ETA_SCALES", defaults["eta_scales"]), ("BETA", defaults["beta"]),
                       ("ETA_SCALED", ' or "scaled"' if scaled else ""),
                       ("default=ETA\n", f"default={defaults['eta']!r}\n"),
                       ("SCALED_DOC", _SCALED_DOC if scaled else ""),
                       ("FIT_INTERCEPT", defaults["fit_intercept"]),
                       ("FORGETTING", defaults["forgetting"]), ("SHARE", defaults["share"])]:
        text = text.replace(key, str(value))
    cls.__doc__ = cls.__doc__ % text
    return cls


@loadable
@_with_params
class MultiKernelClassifier(MultiKernelMixin, LabelsMixin, ClassifierMixin,
                            OnlineLearner):
    """Classification by many Gaussian kernel learners at once, combined by Hedge.

    Every (width, step scale) pair is a NORMA learner (the step of
    `OnlineKernelClassifier`) on one shared support set: an event computes
    the squared distances to the centres once and one exponential per
    (centre, width).  Learner k's weight q_k is multiplied by beta at each of
    its mistakes; the prediction is the label of the weighted vote (with two
    classes the sign of ``sum_k q_k sign(f_k(x))``; with more, the class of
    largest ``sum_k q_k [argmax_c f_k(x)_c = class]``: the deterministic rule,
    whose mistakes are at most ``(ln(1 / q_best) + M_best ln(1/beta)) / ln(2 /
    (1 + beta))``, q_best the best learner's start weight), or the label of one
    learner drawn with probability q_k (the stochastic rule). Labels are
    discovered on the stream as by `OnlineKernelClassifier`: a third class
    turns every learner into a multiclass learner (a score per class,
    docs/multiclass.md) exactly. With one width and one step scale it is
    `OnlineKernelClassifier` with the same parameters, iterate for iterate.
    One event at a time: `learn_one`, `predict_one`, `decision_function_one`
    (same iterates as `partial_fit`).

    Parameters
    ----------
    loss : {"hinge", "squared_hinge", "logistic", "least_squares", "exponential"}, default="hinge"
        The margin loss of every learner; with three classes or more "hinge"
        (Crammer-Singer) or "logistic" (softmax).
%s
    forgetting_start : float > 0, default=1.5
        The Hedge start: each learner that forgets (`forgetting`) starts with
        this many times the weight of the others, since its large constant
        step learns fastest on the first events; 1.0 (with
        ``width_start=False``) is the papers' uniform start 1 / K
        (docs/multikernel.md, section 6).
    width_start : bool, default=True
        With ``gammas="auto"``, a Gaussian learner of relative width g (its
        gamma times tr(Cov)) also starts with weight times ``1 - exp(-2 g)``,
        the kernel distance between two typical inputs: a wide width, under
        which all inputs look alike, starts light (docs/multikernel.md,
        section 6).
    classes : array of labels or None, default=None
        Fixes `classes_` at the start of a stream.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    t_ : int
        Samples learned so far.
    n_support_ : int
        Shared centres.
    weights_ : ndarray of shape (n_learners,)
        The Hedge weights; `gammas_` and `eta_scales_` say which learner is which.
    seed_ : int
        The seed of the stochastic combination's draws.

    References
    ----------
    docs/multikernel.md derives the rule, its mistake bound and the defaults.

    .. [1] R. Jin, S. C. H. Hoi and T. Yang, "Online multiple kernel learning:
       algorithms and mistake bounds", ALT 2010.
    .. [2] S. C. H. Hoi, R. Jin, P. Zhao and T. Yang, "Online multiple kernel
       classification", Machine Learning 90(2):289-316, 2013.
    .. [3] J. Kivinen, A. J. Smola and R. C. Williamson, "Online learning
       with kernels", IEEE Transactions on Signal Processing 52(8), 2004.
    .. [4] K. Crammer and Y. Singer, "On the algorithmic implementation of
       multiclass kernel-based vector machines", JMLR 2:265-292, 2001.
    .. [5] M. Herbster and M. K. Warmuth, "Tracking the best expert", Machine
       Learning 32(2):151-178, 1998 (fixed share).
    .. [6] Y. Shen, T. Chen and G. B. Giannakis, "Random feature-based online
       multi-kernel learning in environments with unknown dynamics", JMLR
       20(22):1-36, 2019 (learners that forget).

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from okl import MultiKernelClassifier
    >>> X, y = make_moons(2000, noise=0.2, random_state=0)
    >>> clf = MultiKernelClassifier().fit(X[:1500], y[:1500])
    >>> round(clf.score(X[1500:], y[1500:]), 2) > 0.9
    True
    """

    _task = CLASSIFY
    _multiclass = True
    _parameter_constraints = {**_CONSTRAINTS, "loss": [Options(*MARGIN_LOSSES)],
                              "eta": [Interval(Real, 0, None, closed="neither"),
                                      Options("auto", "scaled")],
                              "forgetting_start": [Interval(Real, 0, None, closed="neither")],
                              "width_start": [BOOL],
                              **CLASSES_CONSTRAINTS}
    expected_failed_checks = ONLINE_WEIGHT_CHECKS

    def __init__(self, gammas="auto", eta_scales=(0.25, 1.0), linear=True,
                 forgetting=0.998, forgetting_start=1.5, loss="hinge", lam=1e-3, eta="scaled",
                 eta_decay=0.5, beta=0.8, share=1e-3, combination="deterministic",
                 budget="auto", budget_policy="merge", fit_intercept=False, width_start=True,
                 classes=None, random_state=None, verbose=False, engine="cython"):
        self.gammas = gammas
        self.eta_scales = eta_scales
        self.linear = linear
        self.forgetting = forgetting
        self.forgetting_start = forgetting_start
        self.loss = loss
        self.lam = lam
        self.eta = eta
        self.eta_decay = eta_decay
        self.beta = beta
        self.share = share
        self.combination = combination
        self.budget = budget
        self.budget_policy = budget_policy
        self.fit_intercept = fit_intercept
        self.width_start = width_start
        self.classes = classes
        self.random_state = random_state
        self.verbose = verbose
        self.engine = engine

    def fit(self, X, y, sample_weight=None):
        """Learn the rows of X in order, from a fresh model (one online pass)."""
        return self._fit(X, y, sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue the stream with the rows of X, in order (all-or-nothing)."""
        self._progressive_scores(X, y, classes, sample_weight=sample_weight,
                                 keep_scores=False)
        return self

    def _loss_spec(self):
        return loss_spec(self.loss)

    def _start(self, X, y):
        """The pool and its Hedge start (docs/multikernel.md, section 6): `forgetting_start`
        times heavier for the learners that forget and, with `width_start` and
        gammas="auto", times ``1 - exp(-2 g)`` for a Gaussian learner of relative width g."""
        super()._start(X, y)
        state = self._model.get_state()
        q = np.where(np.asarray(state["forgetting"]) > 0.0, float(self.forgetting_start), 1.0)
        if self.width_start and state["auto"]:
            width_of = np.asarray(state["width_of"])
            g = np.asarray(state["gammas"])[np.maximum(width_of, 0)]
            q *= np.where(width_of >= 0, -np.expm1(-2.0 * g), 1.0)
        if np.any(q != q[0]):
            self._model = type(self._model).from_state(dict(state, q=q / q.sum()))

    def _auto_lipschitz(self):
        return _finite_lipschitz(self)

    def _stream_loss(self, scores, y):
        """The combined learner's mistakes (0 / 1) over the stream."""
        return (self._predictions(scores) != np.asarray(y)).astype(np.float64)

    # -- multiclass (docs/multiclass.md; docs/multikernel.md, section 8) -----------------

    def _add_class(self, position):
        """A zero score at `position` for a new class in every learner; the binary learners
        convert exactly (s = (-f/2, f/2), b likewise; docs/multiclass.md, section 3)."""
        if self.loss not in MULTICLASS_LOSSES:
            raise ValueError(
                f"{type(self).__name__}(loss={self.loss!r}) learns two classes; the stream "
                f"shows a third. The multiclass losses are {sorted(MULTICLASS_LOSSES)} "
                "(Crammer-Singer's hinge and the softmax); use one of them, or fix `classes` "
                "to two labels.")
        model = self._model
        state = model.get_state()
        coef, linear, b = (np.asarray(state[key]) for key in ("coef", "linear_coef", "b"))
        if model.n_outputs == 1:            # (-f/2, f/2) and the new zero score
            coef, linear, b = (np.insert(np.stack([-0.5 * v, 0.5 * v], axis=v.ndim),
                                         position, 0.0, axis=v.ndim) for v in (coef, linear, b))
        else:
            coef, linear, b = (np.insert(v, position, 0.0, axis=v.ndim - 1)
                               for v in (coef, linear, b))
        self._model = type(model).from_state(dict(state, coef=coef, linear_coef=linear, b=b,
                                                  n_outputs=b.shape[1]))

    def _validate_params(self):
        super()._validate_params()
        model = self.__dict__.get("_model")
        if model is not None and model.n_outputs > 1 and self.loss not in MULTICLASS_LOSSES:
            raise ValueError(
                f"{type(self).__name__} holds a model of {len(self.classes_)} classes, and "
                f"loss={self.loss!r} has no multiclass form: use one of "
                f"{sorted(MULTICLASS_LOSSES)}, or call fit to start again.")

    def _mixture(self, F):
        """The Hedge mixture sum_k q_k P_k(class | x) of the learners' values F: (rows, K)
        f_k (the logistic s(f_k) of classes_[1]), or (rows, K, C) scores (the softmax)."""
        q = self.weights_
        if F.ndim == 2:
            p = expit(F) @ q
            return np.column_stack([1.0 - p, p])
        return np.einsum("nkc,k->nc", softmax(F, axis=2), q)

    @available_if(lambda self: self.loss == "logistic")
    def predict_proba(self, X):
        """P(class | x): the Hedge mixture of the learners' probabilities (loss="logistic").

        ``sum_k q_k P_k(class | x)``, P_k the logistic s(f_k) with two classes,
        the softmax of learner k's scores with more (docs/multikernel.md,
        section 8).  Its largest class can differ from the vote's `predict`.
        """
        check_is_fitted(self, "t_")
        if len(self.classes_) == 1:
            return np.ones((len(check_X(self, X, reset=False)), 1))
        return self._mixture(self.learner_decisions(X))

    @available_if(lambda self: self.loss == "logistic")
    def predict_log_proba(self, X):
        """The logarithm of `predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def _event_proba(self, f):
        """{label: probability} of the event just predicted by the one-event path (the learners'
        values of that row are the compiled path's)."""
        labels = self._labels_list()
        if len(labels) == 1:
            return {labels[0]: 1.0}
        events = self._one_event()._fast()
        p = self._mixture(events.learner_values()[None])[0]
        return dict(zip(labels, p.tolist()))


@loadable
@_with_params
class MultiKernelRegressor(MultiKernelMixin, RegressorMixin, OnlineLearner):
    """Kernel regression by second-order learners over widths, by Bayesian model averaging.

    By default (``learner="krls"``) the pool is `KernelRLSRegressor` learners, one per
    width (and two linear ones), combined by Bayesian model averaging: every weight is
    multiplied by the learner's predictive density N(y; f_k, s_k^2) and mixed with the
    fixed `share`, the learners below the weight floor `sleep` sleeping between wake
    events; ``predict(X, return_std=True)`` gives the mixture's mean and standard
    deviation (docs/krls.md, sections 9-10).

    With ``learner="sgd"`` every (width, step scale) pair is a first-order learner of
    `OnlineKernelRegressor` (any residual loss) on one shared support set, combined by
    Hedge: learner k's weight is multiplied by ``beta**(loss_k / S_t)``, S_t the largest
    loss of any learner so far; the prediction is the weighted average ``sum_k q_k
    f_k(x)`` (deterministic) or one learner drawn with probability q_k (stochastic).
    With one width and one step scale it is `OnlineKernelRegressor` with the same
    parameters, iterate for iterate (docs/multikernel.md).

    Parameters
    ----------
    learner : {"krls", "sgd"}, default="krls"
        "krls": second-order learners, `KernelRLSRegressor` with its own budget, noise
        and forgetting (`learner_params`), one per width of `gammas` ("auto":
        `KRLS_FACTORS` times KernelRLSRegressor's scale rule, each learner's warm-up
        choosing its noise) and, with `linear`, two of the linear kernel <x, u> + 1
        (Bayesian linear regression): one of `learner_params`, and one that forgets by
        uncertainty injection, ``forgetting_mode="inflate"`` with `TRACKING_FORGETTING`
        (it follows a target that a running scaler keeps moving, section 11 of
        docs/krls.md); combined by Bayesian model averaging with `share`; it takes
        `gammas`, `linear`, `share`, `learner_params`, `sleep` and `engine`, and a
        first-order parameter set away from its default is an error.  "sgd":
        first-order (NORMA) learners on one shared support set, combined by Hedge (the
        parameters from `eta_scales` on); dense inputs only for both.
    learner_params : dict or None, default=None
        With learner="krls", parameters of every `KernelRLSRegressor` learner (e.g.
        ``{"budget": 100, "forgetting": 0.999}``); None: its defaults but its forgetting,
        `MEMBER_FORGETTING` (lambda 1; section 11 of docs/krls.md).
    sleep : "auto", float in (0, 1) or None, default="auto"
        With learner="krls", a weight floor: a learner whose weight is below it at a wake
        event (the event 100, then every 200th) sleeps until the next one: it neither
        predicts nor learns, its weight stays at the floor, and the mixture is the awake
        learners'.  At a wake event every learner learns the event and takes its density.
        "auto" is `AUTO_SLEEP` (learner="sgd": unused); None: the exact Bayesian model average,
        every learner at every event (docs/krls.md,
        section 10).
    loss : {"squared", "absolute", "epsilon_insensitive", "pinball", "huber"}, default="squared"
        learner="sgd": the residual loss of every learner (and of Hedge).
    quantile : float in (0, 1), default=0.5
        tau of the pinball loss.
    epsilon : float >= 0, default=0.0
        The tube of epsilon_insensitive and pinball; huber's delta.
%s

    Attributes
    ----------
    t_ : int
    n_support_ : int
        Centres of the shared support set (learner="krls": of all the learners).
    weights_ : ndarray of shape (n_learners,)
    seed_ : int
        learner="sgd" only.
    learners_ : list of KernelRLSRegressor
        learner="krls" only: the learners, aligned with `weights_` and `gammas_`.

    References
    ----------
    docs/multikernel.md derives the rule, its loss bound and the defaults; docs/krls.md,
    section 9, the pool of learner="krls".

    .. [1] S. C. H. Hoi, R. Jin, P. Zhao and T. Yang, "Online multiple kernel
       classification", Machine Learning 90(2):289-316, 2013.
    .. [2] N. Cesa-Bianchi and G. Lugosi, "Prediction, Learning, and Games",
       Cambridge University Press, 2006 (Hedge with convex losses).
    .. [3] M. Herbster and M. K. Warmuth, "Tracking the best expert", Machine
       Learning 32(2):151-178, 1998 (fixed share).
    .. [4] Y. Shen, T. Chen and G. B. Giannakis, "Random feature-based online
       multi-kernel learning in environments with unknown dynamics", JMLR
       20(22):1-36, 2019 (learners that forget).
    .. [5] S. Van Vaerenbergh, M. Lazaro-Gredilla and I. Santamaria, "Kernel recursive
       least-squares tracker for time-varying regression", IEEE Transactions on Neural
       Networks and Learning Systems, 23(8):1313-1326, 2012 (the learners of
       learner="krls").

    Examples
    --------
    >>> import numpy as np
    >>> from okl import MultiKernelRegressor
    >>> X = np.random.default_rng(0).uniform(-3, 3, (1000, 1))
    >>> reg = MultiKernelRegressor().fit(X, np.sin(X[:, 0]))
    >>> bool(abs(reg.predict([[1.0]])[0] - np.sin(1.0)) < 0.2)
    True
    """

    _task = REGRESS
    _parameter_constraints = {
        **_CONSTRAINTS, "loss": [Options(*REGRESSION_LOSSES)],
        "learner": [Options("sgd", "krls")],
        "learner_params": [NONE, Kind(lambda v: isinstance(v, dict),
                                      "a dict of KernelRLSRegressor's parameters")],
        "sleep": [NONE, Options("auto"), Interval(Real, 0, 1, closed="neither")],
        "quantile": [Interval(Real, 0, 1, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
    }

    @property
    def expected_failed_checks(self):
        """scikit-learn's checks that the learners fail by design (their sample_weight)."""
        if self.learner == "krls":
            return KernelRLSRegressor.expected_failed_checks
        return ONLINE_WEIGHT_CHECKS

    def __init__(self, gammas="auto", eta_scales=(1.0,), linear=True, forgetting=0.998,
                 loss="squared", quantile=0.5, epsilon=0.0, lam=1e-3, eta="auto", eta_decay=0.6,
                 beta=0.3, share=1e-3, combination="deterministic", budget="auto",
                 budget_policy="merge", fit_intercept=True, random_state=None, verbose=False,
                 engine="cython", learner="krls", learner_params=None, sleep="auto"):
        self.learner = learner
        self.learner_params = learner_params
        self.sleep = sleep
        self.gammas = gammas
        self.eta_scales = eta_scales
        self.linear = linear
        self.forgetting = forgetting
        self.loss = loss
        self.quantile = quantile
        self.epsilon = epsilon
        self.lam = lam
        self.eta = eta
        self.eta_decay = eta_decay
        self.beta = beta
        self.share = share
        self.combination = combination
        self.budget = budget
        self.budget_policy = budget_policy
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.verbose = verbose
        self.engine = engine

    def _validate_params(self):
        super()._validate_params()
        if self.loss == "huber" and self.epsilon <= 0:
            raise InvalidParameterError(
                "loss='huber' takes its threshold delta from epsilon, which must be > 0 "
                f"(got epsilon={self.epsilon}); try epsilon=1.0.")
        if self.learner == "krls":
            if self.loss != "squared" or self.combination != "deterministic":
                raise InvalidParameterError(
                    "learner='krls' averages Gaussian posteriors (the squared loss, every "
                    f"learner's mean); got loss={self.loss!r}, combination="
                    f"{self.combination!r}. Use loss='squared', combination='deterministic', "
                    "or pass learner='sgd'.")
            defaults = _first_order_defaults(type(self))
            first = [name for name in _FIRST_ORDER
                     if not _is_default(getattr(self, name), defaults[name])]
            if first:
                raise InvalidParameterError(
                    f"{', '.join(f'{n}={getattr(self, n)!r}' for n in first)}: first-order "
                    "parameters, which learner='krls' (the default: KernelRLSRegressor "
                    "learners, their parameters in learner_params) does not take; pass "
                    "learner='sgd' for the first-order pool.")
            check_learner_params(self.learner_params)
            if self.fit_intercept is not True and "fit_intercept" not in (
                    self.learner_params or {}):
                raise InvalidParameterError(
                    "learner='krls' takes fit_intercept from learner_params (KernelRLSRegressor's "
                    "running mean of the targets); pass learner_params={'fit_intercept': False}.")
        elif self.learner_params is not None or self.sleep not in (None, "auto"):
            raise InvalidParameterError(
                f"learner_params={self.learner_params!r} and sleep={self.sleep!r} are "
                "learner='krls''s (its KernelRLSRegressor learners); with learner='sgd' leave "
                "them at their defaults.")

    def _floor(self):
        """The weight floor of learner="krls" (`sleep`, "auto" resolved), or None."""
        return AUTO_SLEEP if self.sleep == "auto" else self.sleep

    # -- learner="krls": the pool of KernelRLSRegressor learners (docs/krls.md, section 9) ----

    def _krls(self):
        """Whether the fitted model (else the parameters) is the KRLS pool."""
        if "_members" in self.__dict__:
            return True
        return "_model" not in self.__dict__ and self.learner == "krls"

    def _start(self, X, y):
        d = self.__dict__
        if self.learner != "krls":
            for name in ("_members", "_logw", "_asleep"):
                d.pop(name, None)
            return super()._start(X, y)
        d.pop("_model", None)
        gammas = self.gammas if isinstance(self.gammas, str) else [float(g) for g in self.gammas]
        self._members = _pool(gammas, self.linear, check_learner_params(self.learner_params),
                              self.engine)
        K, floor = len(self._members), self._floor()
        if floor is not None and floor * (K - 1) >= 1.0:
            raise InvalidParameterError(
                f"sleep={floor} is a weight floor for {K} learners: it must be below "
                f"1 / {K - 1} (the floors of the sleepers and the awake learner sum to 1); "
                "try sleep=0.01, or None.")
        self._logw = np.full(K, -np.log(K))
        self._asleep = np.zeros(K, dtype=bool)
        self.t_ = 0
        self.n_support_ = 0

    def _pool_engine(self):
        """The learners, on the engine of `engine` (set_params(engine=...) reaches them)."""
        for _, m in self._members:
            m.engine = self.engine
        return self._members

    def _models(self):
        if self._krls():
            return (_PoolGuard(self._pool_engine(), None if self._floor() is None
                               else self._learners_of),)
        return super()._models()

    def _learners_of(self, n):
        """sleep=: the learners the next n events may change: the awake ones, and all when
        a wake event may be among them."""
        asleep = self.__dict__.get("_asleep")
        if asleep is None or len(_wake_rows(*_events_before(self.t_, None, n))):
            return np.ones(len(self._members), dtype=bool)
        return ~asleep

    def _learn(self, X, y, weight=None):
        if not self._krls():
            return super()._learn(X, y, weight)
        asleep = self.__dict__.get("_asleep")      # (a pool pickled before sleep= has none)
        floor = self._floor()
        if asleep is None or (floor is None and asleep.any()):
            # sleep set back to None: every learner is awake again
            self._asleep = asleep = np.zeros(len(self._members), dtype=bool)
        if floor is None:
            mean, std, self._logw, _, _ = _pool_learn(
                self._pool_engine(), self._logw, self.share, self.t_, X, y, weight,
                self.engine)
        else:
            mean, std, self._logw, self._asleep = _pool_sleep_learn(
                self._pool_engine(), self._logw, asleep, self.share, float(floor),
                self.t_, X, y, weight, self.engine)
        self.t_ += int(len(y) if weight is None else np.count_nonzero(np.asarray(weight) > 0))
        self.n_support_ = int(sum(m.n_support_ for _, m in self._members))
        stds = self.__dict__.get("_pool_stds")
        if stds is not None:
            stds.append(std)
        return mean

    def _fitted_with(self):
        if not self._krls():
            return [("learner", "sgd"), *super()._fitted_with()]
        members = [m for _, m in self._members]
        factors = "_width_factor" in members[0].__dict__
        gaussian = [m for m in members if m.kernel != "linear"]
        first = gaussian[0].get_params(deep=False)
        given = check_learner_params(self.learner_params)
        defaults = {**KernelRLSRegressor().get_params(), **MEMBER_FORGETTING}
        fitted = {k: first[k] for k, v in defaults.items()
                  if k not in _OWN and (k in given or not np.array_equal(first[k], v))}
        return [("learner", "krls"), ("linear", len(gaussian) < len(members)),
                ("gammas", "auto" if factors else np.array([m.gamma for m in gaussian])),
                ("learner_params", self.learner_params if given == fitted
                 else (fitted or None))]

    def _takes_one_row(self):
        return not self._krls() and super()._takes_one_row()

    def _compiled_events(self, cache):
        """learner="krls": the pool's one compiled call per event (`KRLSPoolEvents`) on the
        cython engine once every learner has its model; during a learner's warm-up its step
        does not watch and the pool's step declines the ready-row entry (`_learn_event`
        takes the event)."""
        if not self._krls():
            return super()._compiled_events(cache)
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        if not ("t_" in self.__dict__ and self.engine == "cython") or params_changed(self):
            return None
        steps, warming = [], False
        for _, m in self._pool_engine():
            model = m.__dict__.get("_krls")
            if type(model) is not KRLSModel or m._outside():
                return None
            warm = m._warming()
            warming |= warm
            # (the warm-up's attributes too: its end, which drops them, gives a new step)
            names = ("_krls",) + tuple(name for name in ("_width_moments", "_warm_X",
                                                         *m.get_params(deep=False))
                                       if name in m.__dict__)
            step = KRLSEvents(model, type(m).__name__, names, None if warm else m._watched(),
                              not warm)
            step.bind(m)
            steps.append(step)
        names = ("_members",) + tuple(name for name in self.get_params(deep=False)
                                      if name in self.__dict__)
        events = cache[0] = KRLSPoolEvents(
            steps, [m for _, m in self._members], float(self.share),
            0.0 if self._floor() is None else float(self._floor()), SLEEP_AFTER, WAKE_EVERY,
            type(self).__name__, names, not warming)
        events.bind(self)
        return events

    def _learn_event(self, events, row, y, weight=1.0):
        """learner="krls": one event through the pool's compiled step; during the learners'
        warm-up an event of weight 1 takes `_warm_event`, or `_warm_move` when a learner
        moves its width or ends its warm-up there; the others the one-row chunk."""
        if not self._krls():
            return super()._learn_event(events, row, y, weight)
        if events.learns:
            return events.learn_into(self.__dict__, row, y, weight)
        if weight == 1.0 and len(row) == self.n_features_in_:
            warming, moves = _warm_groups(self._members)
            if not moves:
                return self._warm_event(events, warming, row, y)
            with _locks.locked(self):
                taken, f = self._warm_move(events, [m for m, *_ in warming], row, y)
            if taken:
                return f
        return float(self._progressive_scores(
            row[None, :], np.array([y]),
            sample_weight=None if weight == 1.0 else np.array([weight]))[0])

    def _warm_event(self, events, warming, row, y):
        """A warm-up event (docs/krls.md, section 10): the bookkeeping of every `warming`
        learner (`_warm_groups`' triples; `KernelRLSRegressor._warm_pending`, computed once
        for the learners that hold the same state, its objects shared), then the pool's
        compiled step, last, which learns the event whole (every learner, the weights) or
        refuses it before its first write; a refused event (a bad row or target, a Ctrl-C)
        leaves the bookkeeping undone: every learner holds its state again."""
        pending, new = [], None
        for m, _, same in warming:
            if same:
                m._check_size()
            else:
                new = m._warm_pending(row, y)
            pending.append((m.__dict__, new))
        attrs = self.__dict__
        t = attrs["t_"]
        try:
            for d, new in pending:
                d.update(new)
            return events.learn_into(attrs, row, y, 1.0)
        except BaseException:
            while attrs["t_"] == t:     # refused: undo (again after a Ctrl-C in the undo)
                try:
                    for (d, new), (_, state, _) in zip(pending, warming):
                        d.update((name, old) for name, old in zip(_WARM_STATE, state)
                                 if name in new)
                    break
                except KeyboardInterrupt:
                    pass
            raise

    def _warm_move(self, events, warming, row, y):
        """A warm-up event of weight 1 at which a learner moves its width or ends its warm-up
        (docs/krls.md, section 10): the pool's compiled step, then every `warming` learner's
        `KernelRLSRegressor._follow_warmup` of the row, which share their common work
        (`SHARED_WARMUP`): the iterates of the one-row chunk, under one checkpoint of the
        learners and the weights: an exception leaves the pool as it was.  (taken, the
        mixture's mean); an end of a warm-up that would diverge is left to the chunk path
        (not taken), which names the cause."""
        d = self.__dict__
        # the step writes the weights into its own arrays: the transaction keeps copies
        for name in ("_logw", "_asleep"):
            if d.get(name) is not None:
                d[name] = np.array(d[name])
        X, target = row[None, :], np.array([y])
        try:
            with transaction(self) as guarded:
                guard = _PoolGuard(self._members)
                guarded.append((guard, guard.checkpoint(1)))
                f = events.learn_into(d, row, y, 1.0)
                token = SHARED_WARMUP.set({})
                try:
                    with one_thread():      # once for every learner's end of the warm-up
                        for m in warming:
                            m._follow_warmup(X, target, None)
                            m._check_size()
                finally:
                    SHARED_WARMUP.reset(token)
                d["n_support_"] = int(sum(m.n_support_ for _, m in self._members))
        except Diverged:
            return False, None      # undone
        return True, f

    def _check_size(self):
        if not self._krls():
            super()._check_size()

    def _progressive_std(self, X, y):
        """learner="krls": learn the rows in order (as `partial_fit`); (mean, std) of the
        mixture for each, made before its update (okl.ConformalRegressor's normalised
        scores)."""
        if not self._krls():
            raise AttributeError("_progressive_std: learner='sgd' gives no standard deviation")
        stds = []
        self.__dict__["_pool_stds"] = stds
        try:
            mean = np.asarray(self._progressive_scores(X, y), dtype=np.float64)
        finally:
            self.__dict__.pop("_pool_stds", None)
        return mean, np.concatenate(stds) if stds else np.empty(0)

    @property
    def weights_(self):
        """The weights of the learners (summing to 1): Hedge's, or with learner="krls" the
        posterior probabilities of the KRLS learners (widths in `gammas_`, the linear ones
        last)."""
        check_is_fitted(self, "t_")
        if self._krls():
            return np.exp(self._logw)
        return MultiKernelMixin.weights_.fget(self)

    @property
    def gammas_(self):
        """The width of each learner now; NaN for a linear learner."""
        check_is_fitted(self, "t_")
        if self._krls():
            return np.array([np.nan if m.kernel == "linear" else
                             float(m.__dict__.get("gamma_", m.gamma)) for _, m in self._members])
        return MultiKernelMixin.gammas_.fget(self)

    @property
    def learners_(self):
        """learner="krls": the `KernelRLSRegressor` learners of the pool, aligned with
        `weights_` (read them, do not fit them)."""
        check_is_fitted(self, "_members")
        return [m for _, m in self._members]

    def _check_state(self, check):
        if "_members" not in check.attrs:
            return super()._check_state(check)
        attrs, out = check.attrs, check.out
        check.keys(attrs, ("n_features_in_", "t_", "n_support_", "_members", "_logw"),
                   "the attributes of learner='krls'", optional=("_asleep", "_row_keys"))
        if self.learner != "krls":
            check.fail("a pool of KernelRLSRegressor learners belongs to learner='krls'")
        params = check_learner_params(self.learner_params)
        gammas = self.gammas if isinstance(self.gammas, str) else [float(g) for g in self.gammas]
        want = _pool(gammas, self.linear, params, self.engine)
        members = attrs["_members"]
        if isinstance(members, list) and len(members) == len(want) - 1 and self.linear:
            # a file written before the tracking learner (section 11 of docs/krls.md)
            want = [(n, w) for n, w in want if n != "tracking"]
        if not (isinstance(members, list) and [n for n, _ in members] == [n for n, _ in want]):
            check.fail("_members must be the (name, learner) pairs of gammas and linear")
        for (name, m), (_, w) in zip(members, want):
            if type(m) is not KernelRLSRegressor or m.get_params() != w.get_params():
                check.fail(f"the learner {name} is not the pool's KernelRLSRegressor")
            if (m.__dict__.get("_width_factor"), m.__dict__.get("_width_grid")) != (
                    w.__dict__.get("_width_factor"), w.__dict__.get("_width_grid")):
                check.fail(f"the learner {name} does not follow its width of the grid")
            check.equal(getattr(m, "n_features_in_", None), out["n_features_in_"],
                        f"{name}.n_features_in_")
            if not (isinstance(getattr(m, "t_", None), int) and 0 <= m.t_ <= out["t_"]):
                check.fail(f"{name}.t_ must count at most the pool's t_ events (a learner "
                           "that slept learned fewer)")
        logw = check.array(attrs["_logw"], "_logw", (len(want),), finite=False)
        if np.any(np.isnan(logw)) or np.any(logw == np.inf) or not np.isclose(
                np.exp(logw).sum(), 1.0, rtol=1e-9, atol=0.0):
            check.fail("_logw must be the logarithms of weights summing to 1")
        out["n_support_"] = check.int(attrs["n_support_"], "n_support_",
                                      *(2 * [sum(m.n_support_ for _, m in members)]))
        asleep = attrs.get("_asleep", np.zeros(len(want), dtype=bool))
        if not (isinstance(asleep, np.ndarray) and asleep.dtype == bool
                and asleep.shape == (len(want),)) or (self._floor() is None and asleep.any()):
            check.fail("_asleep must be one bool per learner (all False unless sleep is set)")
        if asleep.any() and (asleep.all() or not np.allclose(
                np.exp(logw[asleep]), self._floor(), rtol=1e-9, atol=0.0)):
            check.fail("the sleepers' weights must be the floor sleep, one learner awake")
        out["_members"], out["_logw"], out["_asleep"] = members, logw, asleep.copy()
        check.row_keys()
        return {}

    def fit(self, X, y, sample_weight=None):
        """Learn the rows of X in order, from a fresh model (one online pass)."""
        self._progressive_scores(X, y, reset=True, sample_weight=sample_weight,
                                 keep_scores=False)
        return self

    def partial_fit(self, X, y, sample_weight=None):
        """Continue the stream with the rows of X, in order (all-or-nothing)."""
        self._progressive_scores(X, y, sample_weight=sample_weight, keep_scores=False)
        return self

    def _loss_spec(self):
        return loss_spec(self.loss, tau=self.quantile, eps=self.epsilon, delta=self.epsilon)

    def _stream_loss(self, scores, y):
        spec = self._loss_spec()
        return loss_value(self.loss, np.asarray(scores) - np.asarray(y, dtype=np.float64),
                          tau=spec["tau"], eps=spec["eps"], delta=spec["delta"])

    @property
    def predict(self):
        """The combined prediction for every row of X: ``predict(X)``; with learner="krls"
        also ``predict(X, return_std=True)``, (mean, standard deviation) of the mixture (only
        then does predict take return_std, so that okl.ConformalRegressor normalises by it)."""
        return self._predict_std if self._krls() else self._predict_mean

    def _decision(self, X):
        if self._krls():
            return self._predict_std(X)
        return super()._decision(X)

    def learner_decisions(self, X):
        """(rows, learners): every learner's own f_k(x), aligned with `weights_`."""
        if not self._krls():
            return super().learner_decisions(X)
        check_is_fitted(self, "t_")
        with _locks.locked(self):
            X = check_X(self, X, reset=False)
            return np.column_stack([m.predict(X) for _, m in self._pool_engine()])

    def _predict_mean(self, X):
        """The combined prediction for every row of X."""
        return self._decision(X)

    def _predict_std(self, X, return_std=False):
        """The mixture's mean for every row of X; with ``return_std=True``, (mean, std)."""
        with _locks.locked(self):
            check_is_fitted(self, "t_")
            X = check_X(self, X, reset=False)
            members, logw = self._pool_engine(), self._logw
            asleep = self.__dict__.get("_asleep")
            if asleep is not None and asleep.any():     # the sleepers have no voice
                awake = np.flatnonzero(~asleep)
                members = [members[k] for k in awake]
                logw = logw[awake] - np.logaddexp.reduce(logw[awake])
            mean, std = _pool_predict(members, logw, X)
        return (mean, std) if return_std else mean

    def predict_one(self, x, return_std=False):
        """The combined prediction for one event (a dict or a 1-D row); with learner="krls"
        and ``return_std=True``, (mean, standard deviation) of the mixture."""
        if not return_std:
            return super().predict_one(x)
        if not self._krls():
            raise ValueError("return_std=True needs learner='krls' (the first-order learners "
                             "give no predictive variance)")
        check_is_fitted(self, "t_")
        adapter = self._one_event()
        with adapter.lock:
            events = adapter._fast()
            row, _ = adapter.schema.row(x, check_finite=events is None)
            if events is not None:      # the compiled step checks the row
                return events.predict_std(self.__dict__, row)
        mean, std = self.predict(row[None], return_std=True)
        return float(mean[0]), float(std[0])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.regressor_tags.poor_score = True
        return tags
