"""The kernel learners' mixins: kernel parameters and model, and the pointwise family.

`KernelModelMixin` gives a learner its kernel parameters, its model (an
expansion or a feature model, on the engine it names) and the checks that
keep them consistent; `PointwiseMixin` is the pointwise family (Smale-Yao,
Yang, NORMA and their bounded models): its schedule, loss and counters go to
the one learning step of each engine (`_core/_pointwise.pyx`,
`_numpy/pointwise.py`) and it stores what the step returns
(docs/architecture.md).
"""
import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from okl import _locks, _warnings
from okl._adapt import AdaptMixin
from okl._base import Diverged, params_changed, check_X, one_row
from okl._core._expansion import KernelExpansion
from okl._core._linear import LinearModel
from okl._core._multiclass import MulticlassEvents, MultiFeatureEvents
from okl._core._pointwise import FeatureEvents, PointwiseEvents, StepSize
from okl._engines import ENGINES
from okl._feature_model import FeatureModel
from okl._core._warmup import Warmup
from okl._gamma import (
    check_width_moments, join, start_warmup, warm_rows, warn_spread, width_of,
)
from okl._numpy.expansion import NumpyExpansion
from okl._numpy.codes import Offset
from okl._numpy.drift import read_state
from okl._numpy.pointwise import (
    make_schedule, make_state, prior_count, prior_offset, prior_state,
)
from okl._params import InvalidParameterError, validate_params
from okl.budgets import (
    DEFAULT_BUDGET, budget_code, default_budget_policy, resolve_budget, resolve_budget_policy,
)
from okl.kernels import (
    KERNEL_PARAMS, KERNELS, kernel_params_of, kernel_row, named_kernel_params,
)
from okl.schedules import step_sizes


def expansion_class(estimator):
    """The expansion class of the estimator's `engine` (a clear error for an unknown one)."""
    engine = ENGINES.get(estimator.engine) if isinstance(estimator.engine, str) else None
    if engine is None:
        validate_params(estimator)          # names the parameter
        raise InvalidParameterError(f"Unknown engine {estimator.engine!r}.")
    return engine.expansion


def warn_reset(estimator, eta_t, lam_t, t):
    """Warn once when a step has 1 - lam_t eta_t <= 0: the shrink empties the model."""
    eta_t, t = np.atleast_1d(eta_t), np.atleast_1d(t)
    reset = np.asarray(eta_t * lam_t) >= 1.0
    if reset.any():
        i = int(np.argmax(reset))
        lam = float(np.broadcast_to(lam_t, np.shape(eta_t))[i])
        _warnings.warn_once(
            estimator, "reset",
            f"{type(estimator).__name__}: at step t={int(t[i])} the step eta_t={eta_t[i]:.3g} "
            f"and regularization lam_t={lam:.3g} give 1 - lam_t eta_t = "
            f"{1.0 - lam * eta_t[i]:.3g} <= 0, so the step sets the model to zero before "
            "adding the new term (it cannot shrink past zero). Use a smaller eta or lam, or "
            "eta='auto'. This warning is shown once.", UserWarning, stacklevel=6)


def expansion_fitted_with(estimator, expansion):
    """The parameters a fitted expansion was built with, as [(name, value)]."""
    from okl.budgets import BUDGET_POLICIES
    from okl.kernels import KERNELS
    params = expansion.kernel_params
    names = {int(row.code): name for name, row in KERNELS.items()}
    out = [("kernel", names.get(params["kernel"])), *fitted_params(estimator, params)]
    if hasattr(estimator, "budget"):
        budget = expansion.budget or None
        if estimator.budget == "auto" and budget == DEFAULT_BUDGET:
            budget = "auto"         # what "auto" resolved to: unchanged
        out.append(("budget", budget))
    if hasattr(estimator, "budget_policy") and expansion.budget:
        policies = {int(code): name for name, code in BUDGET_POLICIES.items()}
        name = policies[int(expansion.policy)]
        if (estimator.budget_policy == "auto"
                and default_budget_policy(names.get(params["kernel"])) == name):
            name = "auto"           # what "auto" resolved to: unchanged
        out.append(("budget_policy", name))
    return out


def fitted_params(estimator, params):
    """The kernel parameters a model was built with (its record `params`), as [(name, value)]:
    those the estimator names (gamma, degree, coef0, nu: every learner names the first three),
    and `kernel_params`, the others, as the estimator would give them."""
    named = [name for name in named_kernel_params(estimator)
             if name in ("gamma", "degree", "coef0") or hasattr(estimator, name)]
    out = [(name, params[name]) for name in named]
    if hasattr(estimator, "kernel_params"):
        given = estimator.kernel_params or {}
        then = {name: params[name] for name in KERNEL_PARAMS if name not in named}
        if any(given.get(name, KERNEL_PARAMS[name]) != value for name, value in then.items()):
            given = {name: value for name, value in then.items()
                     if value != KERNEL_PARAMS[name]} or None
        else:
            given = estimator.kernel_params         # unchanged: the very value
        out.append(("kernel_params", given))
    return out


class KernelModelMixin:
    """Shared parts of the learners whose model is a kernel expansion `_expansion`.

    Subclasses define the kernel parameters (kernel, gamma, degree, coef0),
    `engine`, and optionally `budget` and `budget_policy`.
    """

    def _kernel_gamma(self):
        """The gamma the model uses: gamma_ when fitted (gamma="scale"), else the parameter."""
        return self.__dict__.get("gamma_", self.gamma)

    def _start_width(self, X):
        """gamma="scale": start the warm-up (`okl._gamma.warm_rows`: gamma_ follows the
        first 100 events, docs/defaults.md, section 2); a number: no gamma_."""
        self.__dict__.pop("_width_moments", None)
        if isinstance(self.gamma, str):
            start_warmup(self, X.shape[1])
        else:
            self.__dict__.pop("gamma_", None)

    # the loops take the width of every row (`_learn_rows(..., gamma=)`); else the warm-up
    # learns one row at a time (`okl._gamma.warm_rows`)
    _width_loops = False

    def _learn(self, X, y, weight=None, **more):
        """The rows in order (`_learn_rows`, which `more` goes to).  During gamma="scale"'s
        warm-up each row is learned with the width of the rows before it, then taken into
        the width (docs/defaults.md, section 2): the widths depend only on the rows
        (`okl._gamma.width_of`, `sequence`), and the loops set each on the model before
        the row's step."""
        if not self._width_loops:
            parts = []
            for rows in warm_rows(self, X, weight, self._set_width, self._width_frozen,
                                  self._end_width):
                parts.append(self._learn_rows(X[rows], y[rows],
                                              None if weight is None else weight[rows], **more))
            return join(parts)
        width = width_of(self, X.shape[1])
        if width is None:
            return self._learn_rows(X, y, weight, **more)
        n = X.shape[0]
        gamma, end = width.sequence(X, weight)
        stop = end if end >= 0 and self._width_ends() else n
        frozen = self._width_frozen()
        parts = [self._learn_rows(X[:stop], y[:stop], None if weight is None else weight[:stop],
                                  gamma=gamma[:stop + 1], **more)]
        if not frozen and self._width_frozen():     # the model can no longer follow it
            self.gamma_ = self._expansion.gamma
            del self._width_moments
        elif end >= 0:
            self.gamma_ = float(gamma[stop])
            del self._width_moments
            self._end_width()
        else:
            self.gamma_ = float(gamma[n])
            self._width_moments = width.state()
        if stop < n:
            parts.append(self._learn_rows(X[stop:], y[stop:],
                                          None if weight is None else weight[stop:], **more))
        return join(parts)

    def _width_ends(self):
        """True when the model changes form at the end of the warm-up (`_end_width`): the
        rows after it are learned apart."""
        return False

    def _width_frozen(self):
        """True once the model can no longer take a new width (the warm-up then ends)."""
        return False

    def _end_width(self):
        """The end of the warm-up: the model takes its final form (random Fourier features
        their weights); nothing for most models."""

    def _check_width_moments(self, check):
        """okl.load's check of gamma="scale"'s warm-up moments, when the file has them."""
        check_width_moments(check, self.gamma)

    def _kernel_params(self):
        """The kernel as the loops take it, by name (`okl.kernels.kernel_params`): its code
        and every kernel parameter this learner has, gamma as fitted."""
        return kernel_params_of(self, gamma=self._kernel_gamma())

    def _budget(self):
        """The centres the expansion keeps (budget="auto" resolved), or None: unbounded."""
        return resolve_budget(getattr(self, "budget", None),
                              getattr(self, "approximation", None) is None)

    def _new_expansion(self, n_features):
        policy = resolve_budget_policy(getattr(self, "budget_policy", "oldest"), self.kernel,
                                       type(self).__name__)
        return expansion_class(self)(n_features, self._kernel_params(),
                                     budget=int(self._budget() or 0),
                                     policy=int(budget_code(policy)))

    def _engine_expansion(self):
        """The expansion, converted if `engine` was changed since it was built."""
        expansion = self._expansion
        cls = expansion_class(self)
        if not isinstance(expansion, cls):
            expansion = self._expansion = cls.from_state(expansion.get_state())
        return expansion

    def _models(self):
        return (self._engine_expansion(),)

    def _fitted_with(self):
        model = self._expansion
        if isinstance(model, FeatureModel):
            return [("kernel", model.kernel), *fitted_params(self, model.params),
                    ("approximation", model.approximation),
                    ("n_components", model.n_components)]
        return expansion_fitted_with(self, model)

    def _check_size(self):
        if self._budget() is None and not isinstance(self._expansion, FeatureModel):
            expansion = self._expansion
            work = expansion.n_support * expansion.n_features
            _warnings.warn_size(
                self, "expansion", work, _warnings.EXPANSION_WORK,
                f"{type(self).__name__} holds {expansion.n_support} centres of "
                f"{expansion.n_features} features and has no budget: every step now costs "
                f"{work:.2g} multiply-adds and the model keeps growing with the stream. Pass "
                "budget=B to bound the number of centres (budget_policy='merge', the default "
                "on the Gaussian kernel, keeps accuracy best), or approximation='fourier' or "
                "'nystroem' with n_components=D for a fixed-size model (this warning is shown "
                "once).")

    @_locks.serialised
    def _decision(self, X):
        """f(x) for every row of validated X."""
        if "t_" not in self.__dict__:
            check_is_fitted(self, "t_")
        row = (one_row(self, X) if "_one_event_state" in self.__dict__
               and hasattr(self, "_loss_spec") else None)
        if row is not None:
            events = self._one_event()._fast()
            if events is not None:
                return np.array([events.predict(row, self.t_, self.intercept_)])
        X = check_X(self, X, reset=False)
        return self._engine_expansion().predict(X) + self.__dict__.get("intercept_", 0.0)

    @property
    def support_vectors_(self):
        """The centres x_i of f = sum_i a_i K(x_i, .), in storage order."""
        check_is_fitted(self, "t_")
        return self._expansion.centers_

    @property
    def dual_coef_(self):
        """The coefficients a_i of f = sum_i a_i K(x_i, .), aligned with support_vectors_."""
        check_is_fitted(self, "t_")
        return self._expansion.coef_

    @_locks.serialised
    def rkhs_norm(self):
        """||f||_K, the norm of the current model in the RKHS of the kernel."""
        check_is_fitted(self, "t_")
        return float(np.sqrt(max(self._expansion.sq_norm(), 0.0)))


class PointwiseMixin(AdaptMixin, KernelModelMixin):
    """The predict-then-update loop of docs/algorithms.md, sections 1-3.

    Subclasses give `lam`, `eta`, `eta_decay` (and optionally `lam_decay`) and
    `_loss_spec()`, the loss as the loops take it (`okl.losses.loss_spec`).
    One step is written once, in `okl._core._pointwise` (twin:
    `okl._numpy.pointwise`): the chunk loop, the feature loop and the compiled
    one-event step all take it, and this class stores what it returns.  With `approximation` set
    ("fourier" or "nystroem") the model is a `FeatureModel` of `n_components`
    features instead of a kernel expansion (docs/budget.md, section 2).
    """

    def _check_state(self, check):
        """okl.load's checks of this learner's fitted state (see `OnlineLearner._check_state`)."""
        attrs, out, name = check.attrs, check.out, type(self).__name__
        d, t = out["n_features_in_"], out["t_"]
        built = {}
        labels = ("classes_",) if is_classifier(self) else ()
        check.keys(attrs, ("n_features_in_", "t_", "ck2_", "n_support_") + labels,
                   f"{name}'s attributes",
                   optional=("eta_", "lam_", "intercept_", "gamma_", "_row_keys",
                             "fixed_classes_", "_width_moments", "dev_", "_prior_state",
                             "_drift_state"))
        check.floats("ck2_", lo=0.0)
        check.floats("eta_", "lam_", "dev_", lo=0.0, optional=True)
        check.floats("intercept_", optional=True)                 # the offset b (docs/streaming.md)
        out.setdefault("intercept_", 0.0)
        self._check_prior_state(check)
        self._check_drift_state(check)
        check.fitted_gamma()
        self._check_width_moments(check)
        if "_row_keys" in attrs:                             # the feature order of dict events
            keys = attrs["_row_keys"]
            if (not isinstance(keys, list) or len(keys) != d
                    or not all(isinstance(k, (str, int)) for k in keys)):
                check.fail("_row_keys must list the names of the n_features_in_ features")
            out["_row_keys"] = tuple(keys)
        out["n_support_"] = check.int(attrs["n_support_"], "n_support_", 0, t)
        kind, state = check.model("_expansion",
                                  ("KernelExpansion", "NumpyExpansion", "FeatureModel"))
        if kind == "FeatureModel":
            state = check.features(state, d, out["n_support_"],
                                   out.get("gamma_", self.gamma))
        else:
            policy = budget_code(resolve_budget_policy(self.budget_policy, self.kernel, name))
            state = check.fitted_expansion(state, "_expansion", int(self._budget() or 0),
                                           int(policy))
        if kind != "FeatureModel" and len(state["coef"]) != out["n_support_"]:
            check.fail(f"n_support_ = {out['n_support_']} but '_expansion' holds "
                       f"{len(state['coef'])} centres")
        built["_expansion"] = (kind, state)
        if labels:
            check.binary_labels()
        return built

    def _check_prior_state(self, check):
        """okl.load's check of the prior-shift offset's state (fit_intercept="prior"); a
        4-tuple (without srecent) continues as `okl._numpy.pointwise.prior_state` reads it."""
        if "_prior_state" in check.attrs:
            state = check.attrs["_prior_state"]
            if (getattr(self, "fit_intercept", False) != "prior"
                    or not isinstance(state, (list, tuple)) or len(state) not in (4, 5)
                    or not all(isinstance(v, (int, float)) and np.isfinite(v) for v in state)
                    or state[0] < 0 or max(abs(v) for v in state[1:3]) > 1 or state[3] < 0
                    or (len(state) == 5 and abs(state[4]) > 1)):
                check.fail("_prior_state must be [n >= 0, |ybar| <= 1, |recent| <= 1, hbar >= 0, "
                           "|srecent| <= 1] of fit_intercept='prior'")
            check.out["_prior_state"] = prior_state(tuple(float(v) for v in state))

    @classmethod
    def _state_classes(cls):
        return (KernelExpansion, NumpyExpansion, FeatureModel)

    def _validate_params(self):
        super()._validate_params()
        if (getattr(self, "approximation", None) is not None
                and resolve_budget(self.budget, False) is not None):
            raise InvalidParameterError(
                f"approximation={self.approximation!r} is a fixed-size model of n_components "
                f"features; budget={self.budget} applies to the exact kernel expansion. Set "
                "one of them, not both.")
        if (getattr(self, "approximation", None) == "fourier"
                and kernel_row(self.kernel).fourier is None):
            sampled = sorted(name for name, row in KERNELS.items() if row.fourier is not None)
            raise InvalidParameterError(
                f"approximation='fourier' draws random features of the kernels {sampled}; "
                f"kernel={self.kernel!r} has no frequency sampler. Use "
                "approximation='nystroem' with this kernel.")

    def _engine_expansion(self):
        if isinstance(self._expansion, FeatureModel):
            return self._expansion
        return super()._engine_expansion()

    @property
    def n_components_(self):
        """The features of the approximation's linear model (0 during an exact phase:
        Nystroem's, or random Fourier features' during gamma="scale"'s warm-up)."""
        check_is_fitted(self, "t_")
        return self._expansion.n_features_out

    def _scaled_step(self):
        """Whether eta="scaled" scales the auto step (the regressor's bounded losses)."""
        return False

    def _auto_lipschitz(self):
        """M in the auto step 1 / ((lam_t + M C_K^2) t**eta_decay); 1 unless a loss needs more."""
        return 1.0

    _supports_sample_weight = True

    def _start(self, X, y):
        name = type(self).__name__
        self._start_width(X)        # gamma="scale" follows the warm-up's events (`_learn`)
        if not isinstance(self.gamma, str):
            warn_spread(X, self.kernel, float(self._kernel_gamma()), name, stacklevel=5)
        if getattr(self, "approximation", None) is not None:
            self._expansion = FeatureModel(
                self.approximation, X.shape[1], self.kernel, self._kernel_params(),
                self.n_components, self.random_state, self.engine,
                warm="_width_moments" in self.__dict__)
        else:
            self._expansion = self._new_expansion(X.shape[1])
        self.t_ = 0
        self.ck2_ = 0.0
        self.n_support_ = 0
        self.intercept_ = 0.0
        self.dev_ = 0.0
        self.__dict__.pop("_prior_state", None)
        self._start_drift()

    def _schedule(self):
        """The `Schedule` of the steps (okl._core._pointwise), as a dict."""
        eta = self.eta
        kind = (StepSize.AUTO if isinstance(eta, str) else StepSize.GIVEN if callable(eta)
                else StepSize.POWER)
        if eta == "scaled" and self._scaled_step():
            kind = StepSize.SCALED
        return make_schedule(kind, eta if kind == StepSize.POWER else 0.0, self.eta_decay,
                             self.lam, getattr(self, "lam_decay", 0.0),
                             self._auto_lipschitz() if kind in (StepSize.AUTO, StepSize.SCALED)
                             else 1.0,
                             self._offset(), self._drift())

    def _offset(self):
        """How the offset b learns in the step (docs/defaults.md, section 1): the running mean
        of the targets for a regressor, the gradient step for a classifier; the prior-shift
        offset moves outside the step (`_prior`)."""
        fit = getattr(self, "fit_intercept", False)
        if fit is False or fit == "prior":
            return Offset.FIXED
        return Offset.STEP if is_classifier(self) else Offset.MEAN

    def _prior(self):
        """Whether b is the prior-shift offset (fit_intercept="prior", docs/defaults.md,
        section 1): the kernel part steps without it, b is added to its predictions.  A
        model of three classes or more keeps its offsets fixed (one per class)."""
        return (getattr(self, "fit_intercept", False) == "prior"
                and not isinstance(self.__dict__.get("intercept_"), np.ndarray))

    def _step_state(self):
        """The counters a step reads (the `StepState` of okl._core._pointwise), as a dict."""
        return make_state(self.t_, self.ck2_, 0.0 if self._prior() else self.intercept_,
                          self.__dict__.get("dev_", 0.0),
                          read_state(self.__dict__.get("_drift_state"), self.t_))

    def _store_step(self, t, ck2, eta_t, lam_t, b, dev, drift=None):
        """Keep what the steps returned (t_ counts the steps taken; `drift` the drift state, a
        dict or a stored tuple); one event on the cython engine stores the same in
        `PointwiseEvents.learn_into` (`MulticlassEvents.learn_into`)."""
        d = self.__dict__
        if t != d["t_"]:
            d["eta_"], d["lam_"] = eta_t, lam_t
        d["t_"], d["ck2_"], d["dev_"] = int(t), ck2, dev
        self._store_drift(drift)
        if not self._prior():           # the prior-shift offset is kept by `_follow_prior`
            d["intercept_"] = b
        d["n_support_"] = int(d["_expansion"].n_support)

    def _set_width(self, gamma):
        """Give the model the width gamma (its centres and coefficients, or its weights,
        unchanged): a new model object."""
        model = self._engine_expansion()
        if isinstance(model, FeatureModel):
            self._expansion = model.with_gamma(gamma)
            return
        state = model.get_state()
        state["gamma"] = float(gamma)
        self._expansion = type(model).from_state(state)

    def _width_frozen(self):
        model = self._expansion
        return isinstance(model, FeatureModel) and model.width_frozen

    def _width_ends(self):
        model = self._expansion
        return isinstance(model, FeatureModel) and model.warm

    def _end_width(self):
        model = self._expansion
        if isinstance(model, FeatureModel):
            self._expansion = model.end_warmup()
            self.n_support_ = int(self._expansion.n_support)   # 0 on features

    _width_loops = True

    def _kernel_mean_tracker(self):
        """eta="scaled"'s kbar while it is measured (`okl.classification`), else None."""
        return None

    def _learn_rows(self, X, y, weight=None, gamma=None, kbar=None):
        """The loop over the rows (either engine, an expansion or features); `gamma` the
        width of each row and after them, `kbar` eta="scaled"'s kernel mean (the warm-ups,
        docs/defaults.md, sections 2 and 4)."""
        n = X.shape[0]
        eta = None
        if callable(self.eta):          # the callable's step sizes at the steps the rows take
            active = np.ones(n, dtype=bool) if weight is None else weight > 0
            eta = step_sizes(self.eta, self.eta_decay,
                             np.maximum(self.t_ + np.cumsum(active), 1).astype(np.float64))
        scores = np.empty(n, dtype=np.float64)
        model = self._engine_expansion()
        args = (X, y, self._schedule(), self._loss_spec(), self._step_state(), scores, weight,
                eta)
        if isinstance(model, FeatureModel):
            failed, state = model.learn(self.engine, *args, gamma=gamma, kbar=kbar)
        else:
            failed, state = ENGINES[self.engine].pointwise(model, *args, gamma=gamma, kbar=kbar)
        if failed >= 0:
            eta_try = state["eta_try"]
            raise Diverged(failed, eta_try if np.isfinite(eta_try) else None)
        if state["reset_t"]:
            warn_reset(self, state["reset_eta"], state["reset_lam"], state["reset_t"])
        self._store_step(state["t"], state["ck2"], state["eta_t"], state["lam_t"], state["b"],
                         state["dev"], state["drift"])
        if self._prior():
            scores = self._follow_prior(scores, y, weight)
        return scores

    def _follow_prior(self, h, y, weight=None):
        """The predictions h_t(x_t) + b_t of the prior-shift offset over the rows learned
        (`okl._numpy.pointwise.prior_offsets` and its compiled twin); keeps its state and
        intercept_."""
        b, state = ENGINES[self.engine].prior_offsets(
            prior_state(self.__dict__.get("_prior_state")),
            np.ascontiguousarray(h, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64),
            None if weight is None else np.ascontiguousarray(weight, dtype=np.float64))
        self._prior_state = state
        self.intercept_ = prior_offset(state)
        return h + b

    def _learn_event(self, events, row, y, weight=1.0):
        """One event through the compiled step (`_core._pointwise.PointwiseEvents`); f_t(x_t)."""
        d = self.__dict__
        if type(events) is PointwiseEvents and not events.given:
            return events.learn_into(d, row, y, weight)     # reads and stores the counters
        eta = np.nan
        if weight != 0.0 and callable(self.eta):       # the callable's step at step t + 1
            eta = float(step_sizes(self.eta, 0.0, np.array([d["t_"] + 1.0]))[0])
        if type(events) is PointwiseEvents or type(events) is FeatureEvents:
            return events.learn_into(d, row, y, weight, eta)
        if type(events) is MulticlassEvents or type(events) is MultiFeatureEvents:
            return events.learn_into(d, row, y, weight, eta)
        prior = self._prior()
        b = d["intercept_"]
        try:
            out = events.learn(row, y, weight, d["t_"], d["ck2_"], 0.0 if prior else b, eta,
                               d.get("dev_", 0.0), d.get("_drift_state"))
            # (learn resets events.outcome before it can raise)
            self._store_event(out, y, weight)
        except KeyboardInterrupt:
            # a Ctrl-C raised once the compiled step had written (as the call returned, or
            # here): the counters follow the model; `outcome` is None when nothing was written
            self._store_event(events.outcome, y, weight)
            raise
        return out[0] + b if prior else out[0]

    def _store_event(self, out, y, weight):
        """Keep what a one-event step returned (None: it wrote nothing); then the prior-shift
        offset, which predicted the event, counts it."""
        if out is not None and out[1]:
            f, _, t, ck2, eta_t, lam_t, b, _, dev, drift = out
            self._store_step(t, ck2, eta_t, lam_t, b, dev, drift)
            if self._prior():
                d = self.__dict__
                state = d["_prior_state"] = prior_count(
                    prior_state(d.get("_prior_state")), f, y, weight)
                d["intercept_"] = prior_offset(state)

    def _compiled_events(self, cache):
        """The `PointwiseEvents` (or, on features, `FeatureEvents`) of this fitted learner on
        the cython engine, or None.

        `cache` is a one-element list holding the last one built; it serves while
        the estimator holds the very expansion and parameter objects it was built
        with.  A new one is built only when the parameters are those validated by
        the last fit / partial_fit: after `set_params`, the next event takes the
        validating path once.
        """
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        d = self.__dict__
        model = d.get("_expansion")
        if not ("ck2_" in d and self.engine == "cython") or self._outside():
            return None
        exact = None            # a feature model's exact phase (its expansion)
        if type(model) is FeatureModel:     # its features once they exist (FeatureEvents)
            if model.engine != "cython":
                return None
            if model.linear is None:
                if type(model.expansion) is not KernelExpansion:
                    return None
                exact = model.expansion
            elif type(model.linear) is not LinearModel:
                return None
        elif type(model) is not KernelExpansion:
            return None
        if params_changed(self):
            return None
        names = ("_expansion",) + tuple(name for name in self.get_params(deep=False)
                                        if name in d)
        if exact is not None:
            events = PointwiseEvents(exact, self._schedule(), self._loss_spec(),
                                     type(self).__name__, names)
            events.owner, events.warm_end = model, model.warm
            events.switch_at = model.n_components if model.approximation == "nystroem" else 0
        elif type(model) is FeatureModel:
            events = FeatureEvents(model, model.fmap.row_map(), self._schedule(),
                                   self._loss_spec(), type(self).__name__, names)
        else:
            events = PointwiseEvents(model, self._schedule(), self._loss_spec(),
                                     type(self).__name__, names)
        events.warm = self._events_warmup()
        events.prior = self._prior()
        cache[0] = events
        events.bind(self)
        return events

    def _events_warmup(self):
        """The warm-ups a one-event step takes (docs/defaults.md, sections 2 and 4), or None
        when both are over."""
        d = self.__dict__
        width = width_of(self, d["n_features_in_"])
        kbar = self._kernel_mean_tracker()
        if width is None and kbar is None:
            return None
        if kbar is not None and isinstance(d["_expansion"], FeatureModel):
            kbar.gamma = d["_expansion"].gamma
        return Warmup(width, kbar)

