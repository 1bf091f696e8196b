"""Kernel classifiers learned online (docs/algorithms.md, sections 3 and 4; docs/multiclass.md).

OnlineKernelClassifier
    NORMA (Kivinen-Smola-Williamson), the kernel SGD baseline of Shen-Dietterich:
    every sample whose margin loss has a non-zero slope becomes a centre.  Any
    number of classes: one support set, a coefficient vector per centre.
CoefficientRegularizedClassifier
    Tian-Sheng's coefficient-regularized scheme: m fixed centres, a dense
    update of all m coefficients per step, and a step size that provably keeps
    the coefficients bounded.
"""
import math
import weakref
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils import check_array

from okl._adapt import AdaptMixin
from okl._base import Diverged, OnlineLearner, check_X, params_changed
from okl._core._coefreg import CoefRegEvents
from okl._core._expansion import KernelExpansion
from okl._core._linear import MultiLinearModel
from okl._core._multiclass import MulticlassEvents, MultiFeatureEvents
from okl._core._multiexpansion import MultiExpansion
from okl._feature_model import FeatureModel
from okl._labels import LabelsMixin
from okl._docstrings import shared_params
from okl._core._warmup import Warmup
from okl._gamma import LOCAL_FACTOR, WARMUP, width_of
from okl._engines import ENGINES
from okl._feature_maps import kernel_matrix
from okl._kernel_learners import KernelModelMixin, PointwiseMixin, expansion_class, warn_reset
from okl._numpy.codes import MulticlassLoss
from okl._numpy.drift import state_tuple
from okl._numpy.pointwise import make_state
from okl._numpy.multiexpansion import NumpyMultiExpansion, from_binary, insert_class
from okl._params import (
    APPROXIMATION_CONSTRAINTS, ARRAY_2D, BOOL, CLASSES_CONSTRAINTS, DRIFT_CONSTRAINTS,
    ENGINE_CONSTRAINTS,
    INTERCEPT_CONSTRAINTS, NONE, ONLINE_WEIGHT_CHECKS,
    POINTWISE_STEP_CONSTRAINTS, STEP_CONSTRAINTS, Interval, InvalidParameterError, Options,
    budget_constraints, kernel_constraints,
)
from okl._persist import C_INT_MAX, loadable
from okl.budgets import budget_code, resolve_budget_policy
from okl.kernels import kernel_row
from okl.losses import (
    MARGIN_LOSSES, lipschitz_at_origin, loss_spec, loss_value, slope_at_origin,
)
from okl.schedules import step_numbers, step_sizes


MULTI_EXPANSIONS = (MultiExpansion, NumpyMultiExpansion)
# eta="scaled"'s kbar of each classifier still measuring it, with the `_warmup_rows` it stored
_KERNEL_MEANS = weakref.WeakKeyDictionary()
MULTICLASS_LOSSES = {"hinge": MulticlassLoss.HINGE, "logistic": MulticlassLoss.LOGISTIC}


def _holds(kbar, attrs, stored):
    """The kbar over rows holds what the learner stored last (a failed call may have moved
    it past the learner's restored `_warmup_rows`)."""
    rows = attrs.get("_warmup_rows")
    return (rows is stored and kbar.n_points == (0 if rows is None else len(rows))
            and kbar.total == attrs.get("_warmup_sum", 0.0))


def _finite_lipschitz(estimator):
    """M of the estimator's loss for eta='auto'; raise where M is infinite."""
    M = lipschitz_at_origin(estimator.loss)
    if not np.isfinite(M):
        raise ValueError(
            f"{type(estimator).__name__}(eta='auto') needs a finite local Lipschitz constant "
            f"M of the loss derivative at the origin, and loss={estimator.loss!r} has none: "
            "for e^-m, M = (e^R - 1) / R on |m| <= R grows without bound, so the admissible "
            "step would vanish. Pass an explicit step, e.g. eta=0.1, or use loss='logistic'.")
    return M


@loadable
@shared_params
class OnlineKernelClassifier(PointwiseMixin, LabelsMixin, ClassifierMixin,
                             OnlineLearner):
    """Kernel classification by NORMA: stochastic gradient steps in an RKHS, any number of classes.

    Each sample is predicted with the current model, then learned:
    ``f_{t+1} = (1 - eta_t lam) f_t - eta_t phi'_-(y_t f_t(x_t)) y_t K(x_t, .)``
    (docs/algorithms.md, section 3; Kivinen, Smola and Williamson 2004, the baseline of
    Shen-Dietterich).  A sample becomes a centre when the loss has a non-zero
    slope at its margin, so the hinge loss keeps only margin errors.

    With three classes or more, f is vector-valued, ``f(x) = b + sum_i a_i
    K(c_i, x)`` with a_i in R^k (one kernel row per event serves every class),
    and the step is the same with the gradient g in R^k of Crammer-Singer's
    hinge (loss="hinge") or of the softmax (loss="logistic", with
    `predict_proba`): ``f_{t+1} = (1 - eta_t lam) f_t - eta_t g_t K(x_t, .)``.
    A label seen for the first time adds a class (unless `classes` fixes
    them); with two classes the model is exactly the binary one, converted
    exactly at the third (docs/multiclass.md).  With `approximation`, the
    k-class model is a weight matrix W (k, D) on the features, the same step
    (docs/multiclass.md, section 6).

    One event at a time: `learn_one(x, y, sample_weight=1.0)`, `predict_one(x)`
    (the prior before any learning), `decision_function_one(x)`,
    `predict_proba_one(x)` (loss="logistic"); x is a dict of feature name ->
    value or a 1-D row; same iterates as `partial_fit` (docs/streaming.md).

    Parameters
    ----------
    {kernel}
    {gamma}
    {degree}
    {coef0}
    {nu}
    {kernel_params}
    loss : {"hinge", "squared_hinge", "logistic", "least_squares", "exponential"}, default="hinge"
        Margin loss phi(m) of m = y f(x), with left derivatives; see `okl.losses`.
        With more than two classes "hinge" (Crammer-Singer) or "logistic"
        (softmax); the others refuse a third class.
    lam : float >= 0, default=1e-3
        Regularization: every step shrinks f by ``1 - eta_t lam``.  1e-3 with
        eta_decay=1/2 had the lowest progressive error among lam in
        {1e-4, 1e-3, 1e-2, 1e-1} and eta_decay in {1/2, 3/4} on two moons,
        breast cancer and digits (odd vs even), with the hinge loss.
    eta : float > 0, "scaled", "auto" or callable, default="scaled"
        Step size.  "auto" (the papers' step) is ``1 / ((lam + M C_K^2) t**eta_decay)``,
        M the Lipschitz constant of phi'_- at the origin
        (`okl.losses.lipschitz_at_origin`) and C_K^2 the running maximum of K(x, x);
        without a budget it keeps ``||f_t||_K <= C_K |phi'_-(0)| / lam``
        (docs/algorithms.md, section 3.1).  "scaled" is
        ``1 / ((lam + M kbar C_K^2) t**eta_decay)`` with kbar (`kernel_mean_`) the
        mean kernel value between two centres (with `approximation`: two of the
        rows learned), measured over the first 100 steps and then fixed: a step
        on the scale of the kernel values a new event sees, so that f reaches
        the hinge's margin (docs/defaults.md, section 4); it applies to the
        hinge loss with a width kernel, and is "auto" otherwise.  The
        exponential loss has no finite M: give it an explicit eta.  A float
        gives ``eta * t**-eta_decay``; a callable maps the array of step numbers
        t (from 1) to step sizes.
    eta_decay : float >= 0, default=0.5
        Exponent of the step size: NORMA's ``eta_t ~ t**-1/2``, for which
        Kivinen et al. bound the cumulative regularized loss by O(sqrt(T)).
    {budget}
    {budget_policy}
    {approximation}
    {n_components}
    {random_state}
    {fit_intercept_margin}
    {classes}
    {forgetting}
    {drift_detector}
    {verbose}
    {engine}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Sorted labels; with two, classes_[1] is the positive class (y = +1).
    fixed_classes_ : bool
        True when `classes` fixed classes_; else a new label adds a class.
    n_features_in_ : int
    t_ : int
        Samples learned so far (none while one class is known).
    n_drifts_ : int
        Changes the drift detector saw so far (docs/drift.md).
    n_support_ : int
        Number of centres.
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
    dual_coef_ : ndarray of shape (n_support_,) or (n_support_, n_classes)
        f = sum_i dual_coef_[i] K(support_vectors_[i], .): a coefficient per
        centre with two classes, a vector per centre with more.
    ck2_ : float
        C_K^2, the running maximum of K(x, x) over the stream.
    eta_, lam_ : float
        The step size and regularization of the most recent step.
    kernel_mean_ : float
        kbar of eta="scaled", in (0, 1], fixed after the first 100 steps (absent
        before them and with a step that does not measure it); on features, of
        the first 100 rows learned.
    intercept_ : float or ndarray of shape (n_classes,)
        The offset b (0 with fit_intercept=False), one per class with more
        than two.

    References
    ----------
    See docs/algorithms.md, section 3; the eta="auto" step and its RKHS
    ball: section 3.1; eta="scaled": docs/defaults.md, section 4; more than
    two classes: docs/multiclass.md.

    .. [1] J. Kivinen, A. J. Smola and R. C. Williamson, "Online learning
       with kernels", IEEE Transactions on Signal Processing,
       52(8):2165-2176, 2004.
    .. [2] Y. Ying and D.-X. Zhou, "Online regularized classification
       algorithms", IEEE Transactions on Information Theory,
       52(11):4775-4788, 2006.
    .. [3] M. Tian (Ningbo University) and B. Sheng (Shaoxing University),
       "Convergence analysis of coefficient regularized classification
       online algorithms". In Chinese, with an English abstract; the
       journal and year are not given on its first page.
    .. [4] J. Shen and T. G. Dietterich, "A family of large margin linear
       classifiers and its application in dynamic environments",
       Statistical Analysis and Data Mining, 2(5-6), 2009.
    .. [5] K. Crammer and Y. Singer, "On the algorithmic implementation of
       multiclass kernel-based vector machines", JMLR 2:265-292, 2001.
    .. [6] Z. Wang, K. Crammer and S. Vucetic, "Breaking the curse of
       kernelization: budgeted stochastic gradient descent for large-scale
       SVM training", JMLR 13:3103-3131, 2012.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from okl import OnlineKernelClassifier
    >>> X, y = make_moons(2000, noise=0.2, random_state=0)
    >>> clf = OnlineKernelClassifier(gamma=2.0).fit(X[:1500], y[:1500])
    >>> round(clf.score(X[1500:], y[1500:]), 2) > 0.9
    True
    """

    _parameter_constraints = {
        **kernel_constraints(),
        "loss": [Options(*MARGIN_LOSSES)],
        "lam": [Interval(Real, 0, None, closed="left")],
        **POINTWISE_STEP_CONSTRAINTS,
        **budget_constraints(),
        **APPROXIMATION_CONSTRAINTS,
        **ENGINE_CONSTRAINTS,
        **INTERCEPT_CONSTRAINTS,
        "fit_intercept": [BOOL, Options("prior")],
        **CLASSES_CONSTRAINTS,
        **DRIFT_CONSTRAINTS,
    }

    #: scikit-learn's estimator checks this learner fails by design, with the reason
    #: (a weight is not repeated rows): ``check_estimator(est,
    #: expected_failed_checks=est.expected_failed_checks)``.
    expected_failed_checks = ONLINE_WEIGHT_CHECKS

    def __init__(self, kernel="gaussian", gamma="scale", degree=3, coef0=0.0, nu=1.5,
                 kernel_params=None, loss="hinge", lam=1e-3, eta="scaled", eta_decay=0.5,
                 budget="auto", budget_policy="auto", approximation=None, n_components=100,
                 random_state=None, fit_intercept="prior", classes=None, forgetting=1.0,
                 drift_detector="page_hinkley", verbose=False, engine="cython"):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.nu = nu
        self.kernel_params = kernel_params
        self.loss = loss
        self.lam = lam
        self.eta = eta
        self.eta_decay = eta_decay
        self.budget = budget
        self.budget_policy = budget_policy
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.approximation = approximation
        self.n_components = n_components
        self.random_state = random_state
        self.verbose = verbose
        self.engine = engine

    def fit(self, X, y, sample_weight=None):
        """Learn the rows of X in order, from a fresh model (one online pass).

        The classes are the constructor's `classes`, else the labels of y.
        `sample_weight` (w_t >= 0) scales the loss gradient of each step; 0
        skips the row (docs/algorithms.md, section 7.2).
        """
        return self._fit(X, y, sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue the stream with the rows of X, in order.

        `classes` on the first call fixes the classes (else a label seen for
        the first time adds one, docs/multiclass.md); `sample_weight` as in
        `fit`.  A call that raises (bad input, a label outside fixed classes,
        divergence) leaves the model exactly as it was.
        """
        self._progressive_scores(X, y, classes, sample_weight=sample_weight,
                                 keep_scores=False)
        return self

    def _loss_spec(self):
        return loss_spec(self.loss)

    # -- multiclass (docs/multiclass.md) ------------------------------------------------------

    _multiclass = True

    def _is_multi(self):
        model = self.__dict__.get("_expansion")
        return isinstance(model, MULTI_EXPANSIONS) or (isinstance(model, FeatureModel)
                                                      and model.n_classes >= 3)

    def _add_class(self, position):
        """A zero column at `position` for a new class; the binary model converts exactly
        (s = (-f/2, f/2), b likewise; docs/multiclass.md, section 3)."""
        name = type(self).__name__
        if self.loss not in MULTICLASS_LOSSES:
            raise ValueError(
                f"{name}(loss={self.loss!r}) learns two classes; the stream shows a third. "
                f"The multiclass losses are {sorted(MULTICLASS_LOSSES)} (Crammer-Singer's hinge "
                "and the softmax); use one of them, or fix `classes` to two labels.")
        model = self._expansion
        if isinstance(model, FeatureModel):     # the weight matrix W (k, D): a zero row
            self._expansion = self._engine_expansion().with_class(position)
            b = np.asarray(self.intercept_, dtype=np.float64)
            self.intercept_ = np.insert(b if b.ndim else np.array([-0.5, 0.5]) * float(b),
                                        position, 0.0)
            return
        multi = ENGINES[self.engine].multi_expansion if self.engine in ENGINES else None
        if multi is None:
            expansion_class(self)               # names the bad engine
        if isinstance(model, multi):            # one copy, the room kept
            self._expansion = model.with_class(position)
            self.intercept_ = np.insert(np.asarray(self.intercept_, dtype=np.float64),
                                        position, 0.0)
            return
        if isinstance(model, MULTI_EXPANSIONS):
            state = insert_class(model.get_state(), position)
            b = np.insert(np.asarray(self.intercept_, dtype=np.float64), position, 0.0)
        else:
            state = from_binary(model.get_state(), position)
            b = np.insert(np.array([-0.5, 0.5]) * self.intercept_, position, 0.0)
        self._expansion = multi.from_state(state)
        self.intercept_ = b

    def _validate_params(self):
        super()._validate_params()
        if self._is_multi() and self.loss not in MULTICLASS_LOSSES:
            raise ValueError(
                f"{type(self).__name__} holds a model of {len(self.classes_)} classes, and "
                f"loss={self.loss!r} has no multiclass form: use one of "
                f"{sorted(MULTICLASS_LOSSES)}, or call fit to start again.")

    def _engine_expansion(self):
        model = self.__dict__.get("_expansion")
        if isinstance(model, FeatureModel):
            return model
        if isinstance(model, MULTI_EXPANSIONS):
            cls = ENGINES[self.engine].multi_expansion if self.engine in ENGINES else None
            if cls is None:
                expansion_class(self)           # names the bad engine
            if not isinstance(model, cls):
                model = self._expansion = cls.from_state(model.get_state())
            return model
        return super()._engine_expansion()

    def _learn_rows(self, X, y, weight=None, gamma=None, kbar=None):
        if not self._is_multi():
            return super()._learn_rows(X, y, weight, gamma, kbar)
        model = self._engine_expansion()
        n, k = X.shape[0], len(self.classes_)
        eta = None
        if callable(self.eta):
            active = np.ones(n, dtype=bool) if weight is None else weight > 0
            eta = step_sizes(self.eta, self.eta_decay,
                             np.maximum(self.t_ + np.cumsum(active), 1).astype(np.float64))
        scores = np.empty((n, k))
        b = np.array(self.intercept_, dtype=np.float64)
        state = make_state(self.t_, self.ck2_, drift=self._drift_state_now())
        del state["b"]                          # the offsets b travel apart, as an array
        args = (X, np.ascontiguousarray(y, dtype=np.intp), self._schedule(),
                int(MULTICLASS_LOSSES[self.loss]), state, b, scores, weight, eta)
        if isinstance(model, FeatureModel):
            failed, state = model.learn_multi(self.engine, *args, gamma=gamma, kbar=kbar)
        else:
            failed, state = ENGINES[self.engine].multiclass(model, *args, gamma=gamma, kbar=kbar)
        if failed >= 0:
            eta_try = state["eta_try"]
            raise Diverged(failed, eta_try if np.isfinite(eta_try) else None)
        if state["reset_t"]:
            warn_reset(self, state["reset_eta"], state["reset_lam"], state["reset_t"])
        self._store_step(state["t"], state["ck2"], state["eta_t"], state["lam_t"], b,
                         self.__dict__.get("dev_", 0.0), state["drift"])
        return scores

    def _compiled_events(self, cache):
        if len(self.__dict__.get("classes_", ())) < 2:
            return None                 # one class: nothing is learned (okl._labels)
        if not self._is_multi() or self._outside():
            return super()._compiled_events(cache)
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        model = self._expansion
        features = (type(model) is FeatureModel and model.engine == "cython"
                    and type(model.linear) is MultiLinearModel)
        if not (self.engine == "cython" and (type(model) is MultiExpansion or features)):
            return None
        if params_changed(self):
            return None
        names = ("_expansion",) + tuple(name for name in self.get_params(deep=False)
                                        if name in self.__dict__)
        if features:        # the weight matrix on features (docs/multiclass.md, section 6)
            events = MultiFeatureEvents(model, model.fmap.row_map(), self._schedule(),
                                        int(MULTICLASS_LOSSES[self.loss]), type(self).__name__,
                                        names)
        else:
            events = MulticlassEvents(model, self._schedule(), int(MULTICLASS_LOSSES[self.loss]),
                                      type(self).__name__, names)
        events.warm = self._events_warmup()
        cache[0] = events
        events.bind(self)
        return events

    @classmethod
    def _state_classes(cls):
        return super()._state_classes() + MULTI_EXPANSIONS

    def _check_state(self, check):
        """okl.load's checks (see `OnlineLearner._check_state`); k >= 3 classes: a multi-output
        expansion, an offset per class (docs/multiclass.md).  `kernel_mean_` (eta="scaled"
        after its first `WARMUP` steps) is a kernel value in (0, 1]; before them a model on
        features holds at most t_ < `WARMUP` rows (`_warmup_rows`) and the sum of K over their
        pairs (`_warmup_sum`)."""
        own = {name: check.attrs.pop(name) for name in ("kernel_mean_", "_warmup_rows",
                                                        "_warmup_sum") if name in check.attrs}
        try:
            built = self._check_model_state(check)
        finally:
            check.attrs.update(own)
        out = check.out
        if "kernel_mean_" in own:
            out["kernel_mean_"] = check.float(own["kernel_mean_"], "kernel_mean_", 0.0, 1.0,
                                              open_lo=True)
        if "_warmup_rows" in own or "_warmup_sum" in own:
            rows = check.array(own.get("_warmup_rows"), "_warmup_rows",
                               (None, out["n_features_in_"]))
            m = len(rows)
            if ("kernel_mean_" in own or built["_expansion"][0] != "FeatureModel"
                    or not 1 <= m <= min(out["t_"], WARMUP - 1)):
                check.fail("_warmup_rows must hold the rows learned so far (at most t_ < "
                           f"{WARMUP}) of a model on features whose kernel_mean_ is not fixed")
            out["_warmup_rows"] = rows
            out["_warmup_sum"] = check.float(own.get("_warmup_sum"), "_warmup_sum", 0.0,
                                             m * (m - 1) / 2.0)
        return built

    def _check_model_state(self, check):
        classes = check.attrs.get("classes_")
        if not (isinstance(classes, np.ndarray) and classes.ndim == 1 and len(classes) >= 3):
            return super()._check_state(check)
        attrs, out, name = check.attrs, check.out, type(self).__name__
        t = out["t_"]
        check.keys(attrs, ("n_features_in_", "t_", "ck2_", "n_support_", "classes_",
                           "intercept_"), f"{name}'s attributes",
                   optional=("eta_", "lam_", "gamma_", "_row_keys", "fixed_classes_", "dev_",
                             "_width_moments", "_prior_state", "_drift_state"))
        check.binary_labels(max_classes=C_INT_MAX)
        k = len(out["classes_"])
        if self.loss not in MULTICLASS_LOSSES:
            check.fail(f"loss={self.loss!r} has no multiclass model, yet classes_ holds {k}")
        check.floats("ck2_", lo=0.0)
        check.floats("eta_", "lam_", "dev_", lo=0.0, optional=True)
        self._check_width_moments(check)
        self._check_prior_state(check)
        self._check_drift_state(check)
        out["intercept_"] = check.array(attrs["intercept_"], "intercept_", (k,))
        check.fitted_gamma()
        if "_row_keys" in attrs:
            keys = attrs["_row_keys"]
            if (not isinstance(keys, list) or len(keys) != out["n_features_in_"]
                    or not all(isinstance(key, (str, int)) for key in keys)):
                check.fail("_row_keys must list the names of the n_features_in_ features")
            out["_row_keys"] = tuple(keys)
        out["n_support_"] = check.int(attrs["n_support_"], "n_support_", 0, t)
        kind, state = check.model("_expansion", ("MultiExpansion", "NumpyMultiExpansion",
                                                 "FeatureModel"))
        if kind == "FeatureModel":      # the weight matrix W (k, D) (docs/multiclass.md, 6)
            state = check.features(state, out["n_features_in_"], out["n_support_"],
                                   out.get("gamma_", self.gamma), n_classes=k)
            return {"_expansion": (kind, state)}
        policy = budget_code(resolve_budget_policy(self.budget_policy, self.kernel, name))
        state = check.multi_expansion(state, "_expansion", int(self._budget() or 0), int(policy), k)
        if len(state["coef"]) != out["n_support_"]:
            check.fail(f"n_support_ = {out['n_support_']} but '_expansion' holds "
                       f"{len(state['coef'])} centres")
        return {"_expansion": (kind, state)}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags

    def _auto_lipschitz(self):
        """M of the auto step; with eta="scaled" times kbar, the kernel's typical value between
        two centres (`_kernel_mean`): the step ``1 / ((lam + M kbar C_K^2) t**eta_decay)``."""
        M = _finite_lipschitz(self)
        if not self._margin_scaled():
            return M
        # before kbar is fixed the loops take each step's from `_kernel_mean_tracker`
        return M * self.__dict__.get("kernel_mean_", 1.0)

    # -- eta="scaled": the hinge step on the scale of the kernel values (docs/defaults.md, 4) --

    def _margin_scaled(self):
        """Whether eta="scaled" scales the hinge step: the hinge loss with a width kernel
        (K(x, x) = 1), on its exact expansion or on features; otherwise "scaled" is "auto"."""
        return self.eta == "scaled" and self.loss == "hinge" and kernel_row(self.kernel).width

    def _kernel_mean(self):
        """kbar: `kernel_mean_` once fixed; before, the mean kernel value of the centres (on
        features: the rows learned) now, at the width as fitted (1 before two exist)."""
        kbar = self.__dict__.get("kernel_mean_")
        if kbar is not None:
            return kbar
        tracker = self._kernel_mean_tracker()
        if tracker is None:
            return 1.0
        model = self.__dict__["_expansion"]
        if not tracker.rows:
            tracker.sync(model.centers_, int(getattr(model, "budget", 0) or 0))
        return tracker.mean(model.gamma if tracker.rows else self._kernel_gamma())

    def _kernel_mean_tracker(self):
        """eta="scaled"'s kbar while it is measured (the first `WARMUP` steps), else None: the
        mean kernel value between two distinct centres (on features: rows learned), counting
        K(x, x) = 1 as one pair more (kbar = 1 before two exist), at the model's width before
        each step (`okl._core._warmup.KernelMean` and its twin).  The one of the last call
        serves while it can: over centres it checks them itself; over rows while the
        learner holds the rows it stored (`_warmup_rows`)."""
        d = self.__dict__
        if not self._margin_scaled() or "kernel_mean_" in d or "_expansion" not in d:
            return None
        model = d["_expansion"]
        rows = isinstance(model, FeatureModel)
        kind = ENGINES[self.engine].kernel_mean
        kept = _KERNEL_MEANS.get(self)
        if kept is not None:
            kbar, stored = kept
            if (type(kbar) is kind and kbar.rows == rows and kbar.active
                    and (not rows or _holds(kbar, d, stored))):
                return kbar
        kbar = kind(_finite_lipschitz(self), self._kernel_params(), d["n_features_in_"], rows,
                    d.get("_warmup_rows"), d.get("_warmup_sum", 0.0), self._kernel_gamma())
        _KERNEL_MEANS[self] = (kbar, d.get("_warmup_rows"))
        return kbar

    def _learn(self, X, y, weight=None):
        """The rows in order; with eta="scaled" the first `WARMUP` steps each take kbar of the
        centres (on features: the rows learned) before them, then kbar stays
        (`kernel_mean_`)."""
        kbar = self._kernel_mean_tracker()
        if kbar is None:
            return super()._learn(X, y, weight)
        scores = super()._learn(X, y, weight, kbar=kbar)
        if not kbar.active:
            self.kernel_mean_ = float(kbar.final)
            self.__dict__.pop("_warmup_rows", None)
            self.__dict__.pop("_warmup_sum", None)
            _KERNEL_MEANS.pop(self, None)
        elif kbar.rows:
            self._warmup_rows, self._warmup_sum = kbar.state()
            _KERNEL_MEANS[self] = (kbar, self._warmup_rows)
        return scores

    def _start(self, X, y):
        super()._start(X, y)
        for name in ("kernel_mean_", "_warmup_rows", "_warmup_sum"):
            self.__dict__.pop(name, None)
        _KERNEL_MEANS.pop(self, None)


@loadable
@shared_params
class CoefficientRegularizedClassifier(AdaptMixin, KernelModelMixin, LabelsMixin,
                                       ClassifierMixin, OnlineLearner):
    """Tian-Sheng's coefficient-regularized online classification, eq. (0.4).

    The model is ``f_a(x) = a . k(x)`` over m fixed centres, ``k(x) =
    (K(x, c_1), ..., K(x, c_m))``, and each sample updates all m coefficients:
    ``a_{t+1} = a_t - eta_t (lam a_t + phi'_-(y_t f_{a_t}(x_t)) y_t k_t)``
    (docs/algorithms.md, section 4), stochastic gradient descent on
    ``E phi(y f_a(x)) + lam/2 ||a||^2``, whose minimiser a_lam it approaches
    (Theorem 1).  These are exactly the paper's iterates: no offset (append a
    constant column to X to learn one).  One event at a time: `learn_one`,
    `predict_one`, `decision_function_one` (one-row `partial_fit` steps, same
    iterates; docs/streaming.md).

    Any number of classes (okl._labels: fixed by `classes`, or added as the
    stream shows them): with k >= 3 the model is a coefficient matrix A of
    shape (m, k), scores ``s = A^T k(x)``, and the step is
    ``A <- (1 - eta_t lam) A - (eta_t / 2) k_t g_t^T`` with g the gradient of
    the softmax loss (``loss="logistic"``, which gives `predict_proba`) or of
    phi on the margin ``s_y - max_{c != y} s_c`` (the other losses).  With two
    classes it is the binary rule above, exactly; a binary model becomes
    ``A = [-a/2, a/2]`` at the third class (docs/multiclass-pa.md, sections 4-5).

    Parameters
    ----------
    centers : array of shape (m, n_features) or None, default=None
        The centres c_j.  None takes the first `n_centers` stream points; a
        centre exists (with a_j = 0) from the step that sees it.
    n_centers : int, default=500
        m when `centers` is None; ignored otherwise (500, as budget="auto" of
        the pointwise learners: docs/defaults.md, section 2).
    {kernel}
    {gamma_plain}
    {degree}
    {coef0}
    {nu}
    {kernel_params}
    loss : {"hinge", "squared_hinge", "logistic", "least_squares", "exponential"}, default="hinge"
        Margin loss phi(m) of m = y f(x), with left derivatives (the paper's
        hinge-loss example is Corollary 3).
    lam : float > 0, default=1e-3
        Coefficient regularization lam (Corollary 3 takes lam = T**-gamma for
        a stream of T samples; docs/defaults.md, section 2).
    eta : float > 0, "auto" or callable, default="auto"
        Step size.  A float gives exactly ``eta * t**-eta_decay`` (the paper's
        ``1 / (mu t**theta)`` with eta = 1/mu).  "auto" is the corrected step
        ``eta_t = min(t**-eta_decay / lam, 1 / (M ||k_t||^2 + lam))``, which
        keeps ``||a_t|| <= |phi'_-(0)| kappa_max / lam`` at every step
        (docs/algorithms.md, sections 4.2-4.3); the exponential loss has no
        finite M and needs an explicit eta.  A callable maps the array of step
        numbers t (from 1) to step sizes (no cap).
    eta_decay : float in [0, 1], default=0.75
        theta of the step ``t**-theta``; Theorem 4 needs theta in (0, 1].  3/4
        is Corollary 3's ``theta = (2 beta + 1) / (2 (beta + 1))`` for a
        smooth target (beta = 1, epsilon -> 0).
    {classes}
    forgetting : float in (0, 1], default=1.0
        Each step scales the coefficients by this factor first, so that old
        events fade with a memory of about ``1 / (1 - forgetting)`` events (the
        step sizes keep their schedule: eta="auto" is capped by
        ``1 / (M ||k_t||^2 + lam)`` and hardly decays).  1 forgets nothing: the
        paper's iterates (docs/drift.md, section 3).
    drift_detector : None, "page_hinkley", okl.drift.PageHinkley or a detector, default=None
        A change detector on the learner's mistakes; at a change the
        coefficients are scaled by `okl.drift.KEEP` before the step.
        "page_hinkley" and `okl.drift.PageHinkley` run inside the compiled
        step; any object with ``update(x)`` and ``drift_detected`` (such as
        ``river.drift.ADWIN()``) runs on the Python path, on a copy
        (`drift_detector_`), its change taken at the next step (docs/drift.md).
    {verbose}
    {engine}

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
        Sorted labels; with two, classes_[1] is the positive class (y = +1).
    n_features_in_ : int
    t_ : int
        Samples learned so far.
    n_centers_ : int
        m.
    centers_ : ndarray of shape (<= m, n_features_in_)
        The centres that exist so far (all m once m samples were seen, or
        from the start when `centers` is given).
    coef_ : ndarray of shape (len(centers_),) or (len(centers_), k)
        The coefficients a (the true values, lazy scale applied); with k >= 3
        classes the matrix A.
    kappa_max_ : float
        max_s ||k_s||_2 over the steps seen: the corrected constant kappa.
    M_ : float
        The local Lipschitz constant M of phi'_- at the origin for `loss`.
    norm_bound_ : float
        ``|phi'_-(0)| kappa_max_ / lam``: the bound of ||coef_|| (Theorem 3,
        corrected), guaranteed under eta="auto"; on k >= 3 classes the bound of
        ``sqrt(2) ||coef_||_F`` (for the softmax, ``|phi'_-(0)|`` becomes
        ``sqrt((k - 1) / (2k))``).
    eta_ : float
        The step size of the most recent step.

    References
    ----------
    See docs/algorithms.md, section 4 (corrected kappa: 4.1; eta="auto":
    4.2; the bound norm_bound_: 4.3).

    .. [1] M. Tian (Ningbo University) and B. Sheng (Shaoxing University),
       "Convergence analysis of coefficient regularized classification
       online algorithms". In Chinese, with an English abstract; the
       journal and year are not given on its first page.
    .. [2] Y. Ying and D.-X. Zhou, "Online regularized classification
       algorithms", IEEE Transactions on Information Theory,
       52(11):4775-4788, 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from okl import CoefficientRegularizedClassifier
    >>> X, y = make_moons(2000, noise=0.2, random_state=0)
    >>> clf = CoefficientRegularizedClassifier(n_centers=50, gamma=2.0).fit(X[:1500], y[:1500])
    >>> clf.coef_.shape
    (50,)
    >>> bool(np.linalg.norm(clf.coef_) <= clf.norm_bound_)
    True
    """

    _width_factor = LOCAL_FACTOR    # gamma="scale": 4 / (d Var), docs/defaults.md, section 2
    _parameter_constraints = {
        "centers": [NONE, ARRAY_2D],
        "n_centers": [Interval(Integral, 1, None, closed="left")],
        **kernel_constraints(),
        "loss": [Options(*MARGIN_LOSSES)],
        "lam": [Interval(Real, 0, None, closed="neither")],
        **STEP_CONSTRAINTS,
        "eta_decay": [Interval(Real, 0, 1, closed="both")],
        **ENGINE_CONSTRAINTS,
        **CLASSES_CONSTRAINTS,
        **DRIFT_CONSTRAINTS,
    }

    def __init__(self, centers=None, n_centers=500, kernel="gaussian", gamma="scale", degree=3,
                 coef0=0.0, nu=1.5, kernel_params=None, loss="hinge", lam=1e-3, eta="auto",
                 eta_decay=0.75, classes=None, forgetting=1.0, drift_detector=None,
                 verbose=False, engine="cython"):
        self.centers = centers
        self.n_centers = n_centers
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.nu = nu
        self.kernel_params = kernel_params
        self.loss = loss
        self.lam = lam
        self.eta = eta
        self.eta_decay = eta_decay
        self.classes = classes
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.verbose = verbose
        self.engine = engine

    def _validate_params(self):
        super()._validate_params()
        eta = self.eta
        if isinstance(eta, Real) and not isinstance(eta, bool) and eta * self.lam >= 1.0:
            # eta_t lam = eta lam t**-eta_decay >= 1 empties the model at every step (Theorem
            # 4 needs eta_t lam < 1): refused when no stream leaves that regime (t < 2**53)
            if self.eta_decay == 0 or math.log(eta * self.lam) / self.eta_decay >= 53 * math.log(2.0):
                raise InvalidParameterError(
                    f"eta={eta!r} and lam={self.lam!r} give eta_t lam >= 1 at every step of "
                    "any stream: each step sets the coefficients to zero before adding its "
                    "own term, so the model keeps only the last event and collapses to zero "
                    f"wherever that term vanishes. Use eta='auto', or an eta below 1/lam = "
                    f"{1.0 / self.lam:.3g}.")

    def _start(self, X, y):
        n_features = X.shape[1]
        self._start_width(X)        # gamma="scale" follows the warm-up's events (`_learn`)
        kernel = self._kernel_params()
        if self.centers is None:
            centers = np.empty((0, n_features))
            self.n_centers_ = int(self.n_centers)
        else:
            centers = check_array(self.centers, dtype=np.float64, order="C",
                                  input_name="centers")
            if centers.shape[1] != n_features:
                raise ValueError(
                    f"centers has {centers.shape[1]} features but X has {n_features}: "
                    "the centres must live in the input space.")
            self.n_centers_ = len(centers)
        self._expansion = expansion_class(self).from_state(dict(
            n_features=n_features, budget=0, policy=0, scale=1.0, n_rescale=0, next_slot=0,
            centers=centers, coef=np.zeros(len(centers)),
            sqnorms=np.einsum("ij,ij->i", centers, centers), **kernel))
        if "_coef_matrix" in self.__dict__:         # k >= 3 classes: built by _learn
            del self._coef_matrix
        self.t_ = 0
        self.kappa_max_ = 0.0
        self.norm_bound_ = 0.0
        self._start_drift()

    _divergence_cure = ("the explicit step size is too large for this data; use eta='auto' "
                        "(whose steps keep ||a_t|| bounded), a smaller eta or a larger eta_decay")

    _width_loops = True

    def _learn_rows(self, X, y, weight=None, gamma=None):
        """The loop over the rows; `gamma` the width of each row and after them (gamma="scale"'s
        warm-up: the fixed centres' kernel re-read, coefficients unchanged)."""
        n = X.shape[0]
        auto = isinstance(self.eta, str)
        M = _finite_lipschitz(self) if auto else lipschitz_at_origin(self.loss)
        eta_t = step_sizes(1.0 / self.lam if auto else self.eta, self.eta_decay,
                           step_numbers(self.t_, n))
        if not auto:
            warn_reset(self, eta_t, float(self.lam), step_numbers(self.t_, n))
        eta_used, kk = np.empty(n), np.empty(n)
        drift = self._watched()
        state = np.array(state_tuple(self._drift_state_now()))
        A = self._multiclass_matrix()
        if A is None:
            scores = np.empty(n)
            failed = ENGINES[self.engine].coefreg(
                self._engine_expansion(), X, y, eta_t, float(self.lam), M if auto else 0.0,
                self.n_centers_, loss_spec(self.loss), scores, eta_used, kk, gamma, drift, state)
        else:       # k classes: A (m, k), docs/multiclass-pa.md, section 5
            A = A.copy()
            scores = np.empty((n, A.shape[1]))
            failed, scale = ENGINES[self.engine].coefreg_multi(
                self._engine_expansion(), A, 1.0, X, np.ascontiguousarray(y, dtype=np.intp),
                eta_t, float(self.lam), M if auto else 0.0, self.n_centers_,
                loss_spec(self.loss), scores, eta_used, kk, gamma, drift, state)
            if failed < 0:
                A *= scale
                self._coef_matrix = A
        if failed >= 0:
            raise Diverged(failed, eta_used[failed])
        if drift is not None:
            self._store_drift(tuple(state.tolist()))
        self.t_ += n
        self.M_ = M
        self.kappa_max_ = max(self.kappa_max_, float(np.sqrt(kk.max())))
        self.norm_bound_ = self._gradient_at_zero() * self.kappa_max_ / self.lam
        self.eta_ = float(eta_used[-1])
        return scores

    def _gradient_at_zero(self):
        """G / ||k_t||, the loss gradient at the zero model per unit kernel row: |phi'_-(0)|,
        or sqrt((k - 1) / (2k)) for the softmax on k >= 3 classes (docs/multiclass-pa.md, 5)."""
        k = len(self.classes_)
        if k >= 3 and self.loss == "logistic":
            return float(np.sqrt((k - 1) / (2.0 * k)))
        return abs(slope_at_origin(self.loss))

    # -- one event (docs/streaming.md): the chunk loops' step, compiled ------------------------

    def _compiled_events(self, cache):
        """The `CoefRegEvents` of this fitted classifier on the cython engine, or None; cached
        in `cache` while the estimator holds the very objects it was built from."""
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        d = self.__dict__
        if not ("kappa_max_" in d and len(d.get("classes_", ())) >= 2
                and self.engine == "cython" and type(d.get("_expansion")) is KernelExpansion) \
                or self._outside():
            return None         # a detector outside the step: one-row partial_fit
        if params_changed(self):
            return None
        auto = isinstance(self.eta, str)
        M = _finite_lipschitz(self) if auto else 0.0
        A = self._multiclass_matrix()
        names = ("_expansion",) + (() if A is None else ("_coef_matrix",)) + tuple(
            name for name in self.get_params(deep=False) if name in d)
        events = cache[0] = CoefRegEvents(
            d["_expansion"], A, float(self.lam),
            1.0 / self.lam if auto else (0.0 if callable(self.eta) else float(self.eta)),
            float(self.eta_decay), M, self.n_centers_, loss_spec(self.loss),
            type(self).__name__, names, self._watched())
        events.auto, events.gradient_at_zero = auto, self._gradient_at_zero()
        width = width_of(self, d["n_features_in_"])
        events.warm = None if width is None else Warmup(width)
        events.bind(self)
        return events

    def _loss_spec(self):
        """The loss as the compiled step takes it (its presence lets a one-row `partial_fit`
        take the one-event step, `okl._base.OnlineLearner._one_row`)."""
        return loss_spec(self.loss)

    def _learn_event(self, events, row, y, weight=1.0):
        """One event through `CoefRegEvents.learn`; its prediction (f or the k scores)."""
        d = self.__dict__
        eta = self.eta
        given = math.nan
        if callable(eta):
            given = float(step_sizes(eta, self.eta_decay, step_numbers(d["t_"], 1))[0])
        out, eta_t, kk, drift = events.learn(row, y, d["t_"], given, d, d.get("_drift_state"))
        if type(eta) is not str and eta_t * self.lam >= 1.0:
            warn_reset(self, np.array([eta_t]), float(self.lam), np.array([d["t_"] + 1]))
        if self._watched() is not None:
            self._store_drift(drift)
        d["t_"] += 1
        kappa = math.sqrt(kk)
        if kappa > d["kappa_max_"]:
            d["kappa_max_"] = kappa
            d["norm_bound_"] = self._gradient_at_zero() * kappa / self.lam
        d["eta_"] = eta_t
        return out

    @property
    def intercept_(self):
        """0: the paper's iterates have no offset (one per class with k >= 3)."""
        k = len(self.__dict__.get("classes_", ()))
        return np.zeros(k) if k >= 3 else 0.0

    _multiclass = True

    def _add_class(self, position):
        """A new class at `position` of classes_: a zero column of A.  At the third class
        the binary model f = a.k first becomes A = [-a/2, a/2], the same decisions
        (docs/multiclass-pa.md, section 4); the expansion keeps the centres, its coef 0.
        New objects, so a failed call's undo restores the old ones."""
        A = self.__dict__.get("_coef_matrix")
        if A is None:
            expansion = self._engine_expansion()
            a = expansion.coef_
            A = np.zeros((self.n_centers_, 2))
            A[:len(a), 0], A[:len(a), 1] = -0.5 * a, 0.5 * a
            state = expansion.get_state()
            state.update(coef=np.zeros_like(state["coef"]), scale=1.0)
            self._expansion = type(expansion).from_state(state)
        self._coef_matrix = np.ascontiguousarray(np.insert(A, position, 0.0, axis=1))

    def _multiclass_matrix(self):
        """A of shape (m, k) when classes_ holds k >= 3 classes, else None (a fresh model
        built before `classes_` was known starts at A = 0)."""
        k = len(self.classes_)
        if k >= 3 and "_coef_matrix" not in self.__dict__:
            self._coef_matrix = np.zeros((self.n_centers_, k))
        return self.__dict__.get("_coef_matrix")

    def _decision(self, X):
        """f(x), or the k scores A^T k(x) of every row of X (k >= 3)."""
        if self.__dict__.get("_coef_matrix") is None:
            return super()._decision(X)
        X = check_X(self, X, reset=False)
        e = self._engine_expansion()
        centers = e.centers_
        K = kernel_matrix(e.kernel_params, X, centers)
        return K @ self._coef_matrix[:len(centers)]

    def _check_state(self, check):
        """okl.load's checks of this learner's fitted state (see `OnlineLearner._check_state`)."""
        attrs, out, name = check.attrs, check.out, type(self).__name__
        t = out["t_"]
        built = {}
        check.keys(attrs, ("n_features_in_", "t_", "classes_", "n_centers_", "kappa_max_",
                           "norm_bound_"), f"{name}'s attributes",
                   optional=("M_", "eta_", "gamma_", "fixed_classes_", "_coef_matrix",
                             "_row_keys", "_width_moments", "_drift_state"))
        check.row_keys()
        self._check_drift_state(check)
        check.fitted_gamma()
        self._check_width_moments(check)
        check.binary_labels(max_classes=C_INT_MAX)
        k = len(out["classes_"])
        m = out["n_centers_"] = check.int(attrs["n_centers_"], "n_centers_", 1, C_INT_MAX)
        if k >= 3:              # the coefficient matrix A (docs/multiclass-pa.md, section 5)
            out["_coef_matrix"] = check.array(attrs.get("_coef_matrix"), "_coef_matrix", (m, k))
        elif "_coef_matrix" in attrs:
            check.fail(f"_coef_matrix is stored for {k} classes; it exists from 3 on")
        check.floats("kappa_max_", "norm_bound_", lo=0.0)
        check.floats("M_", "eta_", lo=0.0, optional=True)
        kind, state = check.model("_expansion", ("KernelExpansion", "NumpyExpansion"))
        state = check.fitted_expansion(state, "_expansion", 0, 0)
        n = len(state["coef"])
        given = self.centers is not None
        if given and m != len(self.centers):
            check.fail(f"n_centers_ = {m} but the parameter centers has {len(self.centers)} rows")
        if not given and m != self.n_centers:
            check.fail(f"n_centers_ = {m} but the parameter n_centers is {self.n_centers}")
        if n != (m if given else min(t, m)):
            check.fail(f"'_expansion' holds {n} centres, inconsistent with n_centers_ = {m} "
                       f"and t_ = {t}")
        built["_expansion"] = (kind, state)
        return built

    def _fitted_with(self):
        fixed = super()._fitted_with()
        if self.centers is None:
            return fixed + [("n_centers", self.n_centers_)]
        return fixed + [("centers", self._expansion.centers_)]

    @property
    def centers_(self):
        """The centres c_j that exist so far, one per row."""
        return self.support_vectors_

    @property
    def coef_(self):
        """The coefficients a_j of f = sum_j a_j K(c_j, .), aligned with centers_; with
        k >= 3 classes the rows of A, shape (len(centers_), k)."""
        A = self.__dict__.get("_coef_matrix")
        if A is None:
            return self.dual_coef_
        return A[:self._expansion.n_support].copy()

    def _stream_loss(self, scores, y):
        """phi(y f) of every prediction; with k >= 3 classes the softmax loss ("logistic")
        or phi of the margin s_y - max_{c != y} s_c (docs/multiclass-pa.md, section 5)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim < 2 or self.loss in ("hinge", "logistic"):
            return super()._stream_loss(scores, y)
        scores = np.where(np.isfinite(scores), scores, 0.0)     # a class not yet known: 0
        rows = np.arange(len(scores))
        index = np.searchsorted(self.classes_, np.asarray(y))
        wrong = scores.copy()
        wrong[rows, index] = -np.inf
        return loss_value(self.loss, scores[rows, index] - wrong.max(axis=1))
