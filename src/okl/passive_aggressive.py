"""RegularizedPAClassifier: Shen and Dietterich's regularized passive-aggressive learners."""
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from okl import _locks, _warnings
from okl._adapt import AdaptMixin
from okl._base import Diverged, OnlineLearner, check_X, params_changed
from okl._kernel_learners import KernelModelMixin, expansion_fitted_with, fitted_params
from okl._sparse import check_csr
from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
from okl._pa_models import (
    FeaturePAModel, KernelMultiPAModel, KernelPAModel, LinearMultiPAModel, LinearPAModel,
    NystroemPAModel, WarmFourierPAModel, is_multiclass, with_classes,
)
from okl._labels import LabelsMixin, multiclass_loss
from okl._core._expansion import KernelExpansion
from okl._core._multiexpansion import MultiExpansion, SparseMultiExpansion
from okl._core._pa import Event, EventsKind, PAEvents, Regularization, Variant
from okl._core._warmup import Warmup
from okl._docstrings import shared_params
from okl._gamma import LOCAL_FACTOR, width_of
from okl._numpy.drift import state_tuple
from okl._params import (
    APPROXIMATION_CONSTRAINTS, CLASSES_CONSTRAINTS, DRIFT_CONSTRAINTS, ENGINE_CONSTRAINTS, Interval,
    InvalidParameterError, Options, budget_constraints, kernel_constraints,
)
from okl._persist import C_INT_MAX, loadable, prefixed, substate
from okl.budgets import budget_code, resolve_budget_policy
from okl.kernels import KERNELS, kernel_row
from okl.losses import loss_value

REGULARIZATIONS = {"none": Regularization.NONE, "objective": Regularization.OBJECTIVE,
                   "l2": Regularization.L2, "l1": Regularization.L1}
VARIANTS = {"PA": Variant.PA, "PA-I": Variant.PA_I, "PA-II": Variant.PA_II}
EMPTY_SET = {
    "none": "x = 0 (K(x, x) = 0), which no weight vector gives margin 1",
    "objective": "x = 0 (K(x, x) = 0), which no weight vector gives margin 1",
    "l2": "beta * ||x||_2 < 1 (beta^2 K(x, x) < 1 for kernels): raise beta or scale X up",
    "l1": "beta * ||x||_inf < 1: raise beta or scale X up",
}
_INFEASIBLE = int(Event.INFEASIBLE)     # one event's code
# C="auto" of PA-I: on standardised features (linear, polynomial), and for K(x, x) = 1
# (docs/defaults.md, section 5)
AUTO_C_LINEAR = 0.01
AUTO_C = 1.0


class InfeasibleUpdateWarning(UserWarning):
    """Samples whose constraint set was empty were skipped (see n_infeasible_)."""


@loadable
@shared_params
class RegularizedPAClassifier(AdaptMixin, KernelModelMixin, LabelsMixin, ClassifierMixin,
                              OnlineLearner):
    """Passive-aggressive online classification, plain or regularized (Shen-Dietterich).

    Each sample is predicted with the current model, then learned.  When the
    update condition holds, the weights move to the closest point (in L2) that
    gives the sample margin ``y w.x >= 1``, under a regularization
    (docs/algorithms.md, section 5):

    - ``"none"``: Crammer et al.'s PA, PA-I or PA-II (`variant`),
      ``w += tau y x``;
    - ``"objective"``: eq. 3.1, ``min 1/2 ||w - w_t||^2 + alpha/2 ||w||^2``,
      i.e. ``w = (w_t + tau y x) / (1 + alpha)`` (Lemma 3.1): every update
      also shrinks the older ones;
    - ``"l2"``: eq. 3.9, the projection onto ``{y x.w >= 1, ||w||_2 <= beta}``
      (Lemma 3.2, ``w = (w_t + tau y x) / Z``): PA until the norm reaches beta;
    - ``"l1"``: eq. 3.10, the projection onto ``{y x.w >= 1, ||w||_1 <= beta}``,
      solved exactly without a QP package (`okl.projections`): sparse weights.

    A sample whose constraint set is empty (l2: ``beta ||x||_2 < 1``, l1:
    ``beta ||x||_inf < 1``, hard margin: ``x = 0``) is skipped, counted in
    `n_infeasible_`, with one `InfeasibleUpdateWarning` per fit.
    ``truncate_sigma > 0`` then zeroes the smallest weights after each update
    (Section 3.3).

    Any number of classes (okl._labels: fixed by `classes`, or added as the
    stream shows them).  With k >= 3 the model scores each class, s = W x
    (or ``sum_i a_i K(x_i, x)``, ``a_i`` in R^k, one support set), and the
    single constraint is Crammer et al.'s multiclass one: the true class
    beats the best wrong class r by 1.  Every rule above is then the binary
    one on m = s_y - s_r with ``||f||^2 = 2 sum_c ||f_c||^2``, and updates
    ``W <- cv W + (ca / 2) (e_y - e_r) x``; with two classes it is the binary
    rule exactly, and a binary model becomes (-f/2, f/2) at the third class
    (docs/multiclass-pa.md).

    The model has no intercept, as in the paper: f(x) = w.x (or f(x) =
    sum_i a_i K(x_i, x)); append a constant column to X to learn one.  The
    regularized rules, and ``variant="PA"``, give exactly the paper's iterates;
    the default is PA-I with a capped step, robust to noisy labels
    (docs/defaults.md, section 5).  One event at a time: `learn_one`,
    `predict_one`, `decision_function_one` (a compiled step on the cython
    engine, the iterates of `partial_fit`; docs/multiclass-pa.md, section 7).

    Linear models (``kernel="linear"``) keep the weights as ``scale * w``, so
    the shrinks of "objective" and "l2" cost O(1) and a row of a scipy CSR
    matrix costs O(its nonzeros) ("l1" and truncation touch every weight of an
    updated step).  Kernel models ("none", "objective", "l2") are kernel
    expansions with ``||f||_K^2`` kept incrementally; a `budget` removes the
    oldest support vector, as Shen and Dietterich propose after the Forgetron.

    Parameters
    ----------
    regularization : {"none", "objective", "l2", "l1"}, default="none"
        The update rule, above.  "l1" needs the linear kernel.
    variant : {"auto", "PA", "PA-I", "PA-II"}, default="auto"
        With ``regularization="none"``: ``tau = l / ||x||^2`` (PA),
        ``min(C, l / ||x||^2)`` (PA-I) or ``l / (||x||^2 + 1 / (2C))`` (PA-II),
        l the hinge loss (Crammer et al. 2006).  The regularized rules keep the
        margin constraint hard, so they take "PA" only.  "auto" is PA-I with
        ``regularization="none"`` (robust to label noise: docs/defaults.md,
        section 5) and PA with the regularized rules; "PA" gives the papers'
        hard margin.
    C : float > 0 or "auto", default="auto"
        Aggressiveness of PA-I and PA-II: the largest step tau.  "auto" is 0.01 for
        the linear and polynomial kernels (features of unit variance: standardise
        them) and 1 for the kernels with ``K(x, x) = 1`` (Gaussian, Laplacian,
        Matern), chosen on noisy and clean streams (docs/defaults.md, section 5).
    alpha : float >= 0, default=0.1
        Shrink rate of "objective": each update divides the weights by
        ``1 + alpha``.
    beta : float > 0, default=1.0
        Radius of the norm ball of "l2" (``||w||_2 <= beta``, ``||f||_K`` for
        kernels) and "l1" (``||w||_1 <= beta``).
    update : {"margin", "mistake"}, default="margin"
        When to update: hinge loss > 0 (``y f(x) < 1``, as PA) or on mistakes
        only (``y f(x) <= 0``, the paper's analysis).
    truncate_sigma : float >= 0, default=0.0
        After each update, sort ``|w_i|`` ascending and zero the longest prefix
        whose squares sum below truncate_sigma (Section 3.3; Theorem 3.4 bounds
        the cost).  0 keeps every weight.  Linear kernel only.
    kernel : {"linear", "polynomial", "gaussian", "laplacian", "matern"}, default="linear"
        See `okl.kernels`.  "linear" learns the weight vector w directly.
    {gamma_plain}
    degree : int >= 1, default=3
        Polynomial degree.
    coef0 : float >= 0, default=0.0
        Constant of the polynomial kernel; 0 for "linear" (no intercept).
    {nu}
    {kernel_params}
    budget : int or None, default=None
        Maximum number of support vectors of a kernel model.  None is unbounded.
    budget_policy : {"auto", "merge", "oldest", "smallest"}, default="auto"
        What a full budget does: "merge" (BSGD; Gaussian kernel) merges the
        support vector of smallest |coefficient| into its best partner and
        updates ||f||_K^2 exactly (docs/budget.md); "oldest" drops the oldest,
        "smallest" the smallest.  "auto" is "merge" for the Gaussian kernel and
        "oldest" otherwise.
    approximation : {None, "fourier", "nystroem"}, default=None
        A fixed-size kernel model, with ``||w||^2`` kept exactly in the
        feature space and O(n_components d) per step whatever the stream's
        length (docs/budget.md).  "fourier": the PA rules on `n_components`
        random Fourier features (Gaussian, Laplacian and Matern kernels).
        "nystroem" (NOGD): the exact kernel PA until it holds `n_components`
        support vectors, then Nystroem features with those as landmarks,
        starting from the same function; each step is the exact kernel step
        projected onto the landmarks' span.  The model does not depend on
        how the stream is chunked.  Exclusive with `budget`.
    {n_components}
    {random_state}
    {classes}
    forgetting : float in (0, 1], default=1.0
        Each step starts from the model scaled by this factor (a passive step
        too), so that old events fade with a memory of about
        ``1 / (1 - forgetting)`` events; "objective" already shrinks at every
        update.  1 forgets nothing: the paper's iterates (docs/drift.md,
        section 3).  Not with "l1", whose projection works on w itself.
    drift_detector : None, "page_hinkley", okl.drift.PageHinkley or a detector, default=None
        A change detector on the learner's mistakes; at a change the step
        starts from the model scaled by `okl.drift.KEEP`.  "page_hinkley" and
        `okl.drift.PageHinkley` run inside the compiled step; any object with
        ``update(x)`` and ``drift_detected`` (such as ``river.drift.ADWIN()``)
        runs on the Python path, on a copy (`drift_detector_`), its change
        taken at the next step.  An infeasible step changes nothing, the
        detector's count included (docs/drift.md).  Not with "l1".
    {verbose}
    {engine}

    Attributes
    ----------
    classes_ : ndarray of shape (k,)
        The sorted labels; with two, ``classes_[1]`` is the positive class (y = +1).
    n_features_in_ : int
    t_ : int
        Samples learned so far.
    n_drifts_ : int
        Changes the drift detector saw so far (docs/drift.md).
    n_updates_ : int
        Samples that changed the model.
    n_infeasible_ : int
        Samples skipped because their constraint set was empty.
    sq_norm_ : float
        ``||w||_2^2`` (``||f||_K^2`` for kernels), kept incrementally; with
        k >= 3 classes ``2 sum_c ||f_c||^2`` (docs/multiclass-pa.md).
    coef_ : ndarray of shape (1, n_features_in_) or (k, n_features_in_)
        The weights w, or W with k >= 3 classes (linear kernel only).
    n_support_ : int
        Number of support vectors (kernel models).
    support_vectors_, dual_coef_ : ndarray
        f = sum_i dual_coef_[i] K(support_vectors_[i], .) (kernel models);
        dual_coef_ has one row of k coefficients per centre with k >= 3 classes.

    References
    ----------
    See docs/algorithms.md, section 5, and docs/multiclass-pa.md (k classes).

    .. [1] J. Shen and T. G. Dietterich, "A family of large margin linear
       classifiers and its application in dynamic environments",
       Statistical Analysis and Data Mining, 2(5-6), 2009.
    .. [2] K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer,
       "Online passive-aggressive algorithms", Journal of Machine
       Learning Research, 7:551-585, 2006.
    .. [3] O. Dekel, S. Shalev-Shwartz and Y. Singer, "The Forgetron: a
       kernel-based perceptron on a fixed budget", Advances in Neural
       Information Processing Systems 18, pages 259-266, 2006.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from okl import RegularizedPAClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = RegularizedPAClassifier(regularization="l2", beta=2.0).fit(X, y)
    >>> bool(clf.sq_norm_ <= 2.0 ** 2 + 1e-9)
    True
    """

    _width_factor = LOCAL_FACTOR    # gamma="scale": 4 / (d Var), docs/defaults.md, section 2
    _multiclass = True          # k >= 3 classes natively (okl._labels)

    _parameter_constraints = {
        "regularization": [Options(*REGULARIZATIONS)],
        "variant": [Options("auto", *VARIANTS)],
        "C": [Interval(Real, 0, None, closed="neither"), Options("auto")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "update": [Options("margin", "mistake")],
        "truncate_sigma": [Interval(Real, 0, None, closed="left")],
        **kernel_constraints(),
        **budget_constraints(),
        **APPROXIMATION_CONSTRAINTS,
        **ENGINE_CONSTRAINTS,
        **CLASSES_CONSTRAINTS,
        **DRIFT_CONSTRAINTS,
    }

    def __init__(self, regularization="none", variant="auto", C="auto", alpha=0.1, beta=1.0,
                 update="margin", truncate_sigma=0.0, kernel="linear", gamma="scale", degree=3,
                 coef0=0.0, nu=1.5, kernel_params=None, budget=None, budget_policy="auto",
                 approximation=None, n_components=100, random_state=None, classes=None,
                 forgetting=1.0, drift_detector=None, verbose=False, engine="cython"):
        self.regularization = regularization
        self.variant = variant
        self.C = C
        self.alpha = alpha
        self.beta = beta
        self.update = update
        self.truncate_sigma = truncate_sigma
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.nu = nu
        self.kernel_params = kernel_params
        self.budget = budget
        self.classes = classes
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.budget_policy = budget_policy
        self.approximation = approximation
        self.n_components = n_components
        self.random_state = random_state
        self.verbose = verbose
        self.engine = engine

    def _validate_params(self):
        super()._validate_params()
        linear = self.kernel == "linear"
        problems = [
            (self.variant not in ("PA", "auto") and self.regularization != "none",
             f"variant={self.variant!r} applies to regularization='none' only: the regularized "
             "updates keep the margin constraint hard (Shen-Dietterich eqs. 3.1, 3.9, 3.10)."),
            (self.regularization == "l1" and not linear,
             "regularization='l1' needs kernel='linear': the L1 ball bounds feature weights."),
            (self.truncate_sigma > 0 and not linear,
             "truncate_sigma > 0 needs kernel='linear': it zeroes feature weights."),
            (self.budget is not None and linear,
             "budget applies to kernel models; a linear model keeps one weight vector. "
             "Use budget=None."),
            (self.coef0 != 0 and linear,
             "kernel='linear' has no intercept (as in the paper), so coef0 must be 0; append a "
             "constant column to X to learn an intercept."),
            (self.approximation is not None and linear,
             "approximation applies to kernel models; kernel='linear' already learns w directly."),
            (self.approximation is not None and self.budget is not None,
             f"approximation={self.approximation!r} is a fixed-size model of n_components "
             "features; budget applies to the exact kernel expansion. Set one of them."),
            (self.approximation == "fourier" and kernel_row(self.kernel).fourier is None,
             "approximation='fourier' draws random features of the kernels "
             f"{sorted(k for k, row in KERNELS.items() if row.fourier)}; kernel={self.kernel!r} "
             "has no frequency sampler. Use approximation='nystroem'."),
            (self.regularization == "l1" and (self.forgetting != 1.0
                                              or self.drift_detector is not None),
             "regularization='l1' takes neither forgetting nor a drift_detector: its "
             "projection onto the L1 ball works on the weights themselves, which a drift "
             "factor would scale. Use 'l2' or 'objective' on a drifting stream."),
        ]
        for failed, message in problems:
            if failed:
                raise InvalidParameterError(message)

    # -- learning (fit, partial_fit: _OnlineBinaryClassifier) -------------------------------

    def _check_X_y(self, X, y, reset):
        if self.kernel != "linear" or not sp.issparse(X):
            return super()._check_X_y(X, y, reset)             # dense rows
        check_csr(X, None if reset else getattr(self, "n_features_in_", None))
        X, y = validate_data(self, X, y, reset=reset, accept_sparse="csr", dtype=np.float64)
        check_csr(X)                                            # after any conversion
        if not X.has_canonical_format:                          # the loop reads each entry once
            X = X.copy()
            X.sum_duplicates()
        return X, y

    def _start(self, X, y):
        self.t_ = 0
        self.n_updates_ = 0
        self.n_infeasible_ = 0
        self.__dict__.pop("_width_moments", None)
        self._start_drift()
        if self.kernel != "linear":
            self._start_width(X)    # gamma="scale" follows the warm-up's events (`_learn`)
        if self.kernel == "linear":
            self._model = LinearPAModel(X.shape[1])
        elif self.approximation == "fourier":
            fmap = RandomFourierFeatures(self._kernel_params(), n_components=self.n_components,
                                         random_state=self.random_state).fit(X.shape[1])
            if "_width_moments" in self.__dict__:       # the exact PA until the warm-up ends
                self._model = WarmFourierPAModel(
                    KernelPAModel(self._new_expansion(X.shape[1])), fmap)
            else:
                self._model = FeaturePAModel(fmap)
        elif self.approximation == "nystroem":      # NOGD: exact until n_components centres
            self._model = NystroemPAModel(self._new_expansion(X.shape[1]), self.n_components)
        else:
            self._model = KernelPAModel(self._new_expansion(X.shape[1]))

    @property
    def _divergence_cure(self):
        """What makes a PA step overflow, by kernel: l / K(x, x) for a tiny nonzero K(x, x)
        (the linear and polynomial kernels), a row whose squared norm overflows (any other
        kernel: its K(x, x) is 1)."""
        huge = ("a row whose squared norm overflows float64 (entries of 1e154 or more) has "
                "no finite kernel value")
        tiny = "a row of tiny nonzero norm makes the step l/K(x, x) overflow"
        cause = {"linear": tiny, "polynomial": f"{tiny}, or {huge}"}.get(self.kernel, huge)
        return (f"{cause}. Scale X (e.g. with okl.preprocessing.OnlineStandardScaler)"
                + (" or use variant='PA-I'" if cause != huge else ""))

    def _check_state(self, check):
        """okl.load's checks of this learner's fitted state (see `OnlineLearner._check_state`)."""
        attrs, out, name = check.attrs, check.out, type(self).__name__
        d, t = out["n_features_in_"], out["t_"]
        built = {}
        check.keys(attrs, ("n_features_in_", "t_", "classes_", "n_updates_", "n_infeasible_"),
                   f"{name}'s attributes", optional=("gamma_", "fixed_classes_", "_row_keys",
                                                     "_width_moments", "_drift_state"))
        check.row_keys()
        self._check_drift_state(check)
        check.fitted_gamma(needed=self.kernel != "linear")
        self._check_width_moments(check)
        check.binary_labels(max_classes=C_INT_MAX)
        k = len(out["classes_"])            # k >= 3: a model of k score functions
        out["n_updates_"] = check.int(attrs["n_updates_"], "n_updates_", 0, t)
        out["n_infeasible_"] = check.int(attrs["n_infeasible_"], "n_infeasible_", 0,
                                         t - out["n_updates_"])
        if self.kernel == "linear":
            kind, state = check.model("_model", ("LinearMultiPAModel",) if k >= 3
                                      else ("LinearPAModel",))
            check.keys(state, ("raw", "scale", "sq_norm"), "the linear model '_model'")
            raw = check.array(state["raw"], "_model.raw", (k, d) if k >= 3 else (d,))
            scale = check.float(state["scale"], "_model.scale", 0.0, open_lo=True)
            with np.errstate(over="ignore"):
                if not np.all(np.isfinite(scale * raw)):
                    check.fail("_model.scale times _model.raw is not finite")
            state = dict(raw=raw, scale=scale,
                         sq_norm=check.float(state["sq_norm"], "_model.sq_norm", 0.0))
        elif self.approximation == "fourier" and "_width_moments" in out:
            kind, state = check.model("_model", ("WarmFourierPAModel",))   # the warm-up
            fmap = {k: v for k, v in state.items() if k.startswith("fmap_")}
            exact = substate(state, "exact_")
            sq_norm = check.float(exact.get("sq_norm"), "_model.exact_sq_norm", 0.0)
            engine = check.engine(exact.get("engine"), "_model.exact_engine")
            rest = {key: v for key, v in exact.items() if key not in ("sq_norm", "engine")}
            policy = int(budget_code(resolve_budget_policy(self.budget_policy, self.kernel, name)))
            rest = (check.multi_expansion(rest, "_model.exact", 0, policy, k) if k >= 3
                    else check.fitted_expansion(rest, "_model.exact", 0, policy))
            checked = check.pa_features(dict(
                fmap, linear_raw=np.zeros((k, self.n_components) if k >= 3
                                          else self.n_components),
                linear_scale=1.0, linear_sq_norm=0.0), d)
            state = dict(prefixed("exact_", dict(rest, sq_norm=sq_norm, engine=engine)),
                         **{key: v for key, v in checked.items() if key.startswith("fmap_")})
        elif self.approximation == "fourier":
            kind, state = check.model("_model", ("FeaturePAModel",))
            state = check.pa_features(state, d)
        elif self.approximation == "nystroem":
            kind, state = check.model("_model", ("NystroemPAModel",))
            D = self.n_components
            check.equal(state.get("n_components"), D, "_model.n_components")
            phase = state.get("phase")
            if phase == "exact":                      # NOGD's exact phase: < D centres
                check.keys(state, ("n_components", "phase"), "the Nystroem model '_model'",
                           optional=tuple(k for k in state if k.startswith("exact_")))
                sq_norm = check.float(state.get("exact_sq_norm"), "_model.exact_sq_norm", 0.0)
                engine = check.engine(state.get("exact_engine"), "_model.exact_engine")
                rest = {key: v for key, v in substate(state, "exact_").items()
                        if key not in ("sq_norm", "engine")}
                policy = budget_code(resolve_budget_policy(self.budget_policy, self.kernel, name))
                if k >= 3:
                    rest = check.multi_expansion(rest, "_model.exact", 0, int(policy), k)
                else:
                    rest = check.fitted_expansion(rest, "_model.exact", 0, int(policy))
                if len(rest["coef"]) >= D:
                    check.fail(f"the exact phase holds {len(rest['coef'])} centres; "
                               f"n_components = {D}")
                state = dict(n_components=D, phase=phase,
                             **prefixed("exact_", dict(rest, sq_norm=sq_norm, engine=engine)))
            elif phase == "linear":
                features = {k: v for k, v in state.items() if k not in ("n_components", "phase")}
                state = dict(check.pa_features(features, d), n_components=D, phase=phase)
            else:
                check.fail(f"_model.phase = {phase!r} is neither 'exact' nor 'linear'")
        else:
            kind, state = check.model("_model", ("KernelMultiPAModel",) if k >= 3
                                      else ("KernelPAModel",))
            sq_norm = state.get("sq_norm")
            if not (k >= 3 and isinstance(sq_norm, float) and np.isnan(sq_norm)):
                sq_norm = check.float(sq_norm, "_model.sq_norm", 0.0)   # NaN: not tracked
            engine = check.engine(state.get("engine"), "_model.engine")
            rest = {key: v for key, v in state.items() if key not in ("sq_norm", "engine")}
            policy = int(budget_code(resolve_budget_policy(self.budget_policy, self.kernel, name)))
            budget = int(self.budget or 0)
            if k >= 3:          # one coefficient vector per centre
                rest = check.multi_expansion(rest, "_model", budget, policy, k)
            else:
                rest = check.fitted_expansion(rest, "_model", budget, policy)
            state = dict(rest, sq_norm=sq_norm, engine=engine)
        built["_model"] = (kind, state)
        return built

    @classmethod
    def _state_classes(cls):
        return (LinearPAModel, KernelPAModel, FeaturePAModel, NystroemPAModel,
                LinearMultiPAModel, KernelMultiPAModel, WarmFourierPAModel)

    def _models(self):
        return (self._model,)

    def _fitted_with(self):
        if isinstance(self._model, (LinearPAModel, LinearMultiPAModel)):
            return [("kernel", "linear")]
        if isinstance(self._model, (FeaturePAModel, WarmFourierPAModel)):
            fmap = self._model.fmap      # random features: degree and coef0 play no part
            return [("approximation", "fourier"),
                    *[(name, value) for name, value in fitted_params(self, fmap.params)
                      if name not in ("degree", "coef0")],
                    ("n_components", fmap.n_components)]
        if isinstance(self._model, NystroemPAModel):
            names = {int(row.code): name for name, row in KERNELS.items()}
            p = self._model.kernel_params
            return [("approximation", "nystroem"), ("kernel", names[int(p["kernel"])]),
                    *fitted_params(self, p), ("n_components", self._model.n_components)]
        return expansion_fitted_with(self, self._model.expansion)

    def _check_size(self):
        if isinstance(self._model, (KernelPAModel, KernelMultiPAModel)) and self.budget is None:
            expansion = self._model.expansion
            work = expansion.n_support * expansion.n_features
            _warnings.warn_size(
                self, "expansion", work, _warnings.EXPANSION_WORK,
                f"{type(self).__name__} holds {expansion.n_support} support vectors of "
                f"{expansion.n_features} features and has no budget: every step now costs "
                f"{work:.2g} multiply-adds and the model keeps growing with the stream. Pass "
                "budget=B to bound the number of support vectors (this warning is shown once).")

    def _set_width(self, gamma):
        """The kernel model at the width gamma (`with_gamma` of `okl._pa_models`: the same
        coefficients or weights, ||f||^2 of the new kernel)."""
        self._model = self._multiclass_model().with_gamma(gamma)

    @property
    def _width_loops(self):
        """The exact kernel models (random Fourier features' warm-up too: the exact PA) take
        the width of every row in their loops (`KernelModelMixin._learn`); Nystroem's
        warm-up learns one row at a time."""
        model = self.__dict__.get("_model")
        if type(model) is WarmFourierPAModel:
            model = model.exact
        return type(model) in (KernelPAModel, KernelMultiPAModel)

    def _width_ends(self):
        return isinstance(self._model, WarmFourierPAModel)     # the features from then on

    def _width_frozen(self):
        model = self._model
        return isinstance(model, NystroemPAModel) and model.features is not None

    def _end_width(self):
        if isinstance(self._model, WarmFourierPAModel):    # the weights w = sum_i a_i z(x_i)
            self._model = self._model.feature_model()
        elif self._width_loops:     # ||f||_K^2 at the final width (the loops' `cwidth`)
            self._model.sq_norm = self._exact_sq_norm()

    def _exact_sq_norm(self):
        """||f||_K^2 (2 sum_c ||f_c||^2 with k classes) recomputed from the exact model."""
        model = self._model
        return (model.exact_sq_norm() if is_multiclass(model)
                else max(float(model.expansion.sq_norm()), 0.0))

    def _learn_rows(self, X, y, weight=None, gamma=None):
        n = X.shape[0]
        if is_multiclass(self._multiclass_model()):     # y: class indices; scores (n, k)
            y = np.ascontiguousarray(y, dtype=np.intp)
            scores = np.empty((n, self._model.n_classes), dtype=np.float64)
        else:
            scores = np.empty(n, dtype=np.float64)
        events = np.empty(n, dtype=np.int8)
        drift = self._watched()
        state = np.array(state_tuple(self._drift_state_now()))
        widths = {} if gamma is None else {"gamma": np.ascontiguousarray(gamma)}
        failed = self._model.learn(X, y, self._rule(), float(self.truncate_sigma), self.engine,
                                   scores, events, drift=drift, drift_state=state, **widths)
        if failed >= 0:
            raise Diverged(failed)
        if drift is not None:
            self._store_drift(tuple(state.tolist()))
        self.t_ += n
        self.n_updates_ += int(np.count_nonzero(events == Event.UPDATED))
        skipped = np.flatnonzero(events == Event.INFEASIBLE)
        if skipped.size and not self.n_infeasible_:
            warnings.warn(
                f"{skipped.size} of {n} samples (the first at step t="
                f"{self.t_ - n + skipped[0] + 1}) had an empty constraint set, "
                f"{EMPTY_SET[self.regularization]}. They were skipped and are counted in "
                "n_infeasible_; this warning is shown once per fit.",
                InfeasibleUpdateWarning, stacklevel=5)
        self.n_infeasible_ += int(skipped.size)
        return scores

    def _rule(self):
        """(reg, variant, C, alpha, beta, mistake), as the loops of okl._core._pa take it;
        variant="auto" and C="auto" resolved (docs/defaults.md, section 5)."""
        variant = self.variant
        if variant == "auto":
            variant = "PA-I" if self.regularization == "none" else "PA"
        C = self.C
        if isinstance(C, str):          # "auto": the largest step on the kernel's scale
            C = AUTO_C if kernel_row(self.kernel).width else AUTO_C_LINEAR
        return (int(REGULARIZATIONS[self.regularization]), int(VARIANTS[variant]),
                float(C), float(self.alpha), float(self.beta), self.update == "mistake")

    # -- one event (okl._one_event) ---------------------------------------------------------

    def _compiled_events(self, cache):
        """The `PAEvents` of this fitted learner on the cython engine, or None (the one-row
        partial_fit path: the NumPy engine, Nystroem's exact phase, a new label).

        `cache` is a one-element list holding the last one built; it serves while
        the estimator holds the very model and parameter objects it was built with
        (a partial_fit on a linear model rebinds its weights: a new one is built).
        """
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        d = self.__dict__
        model, k = d.get("_model"), len(d.get("classes_", ()))
        warming = "_width_moments" in d
        if (not ("t_" in d and self.engine == "cython" and k >= 2)
                or (warming and not self._width_loops) or params_changed(self)
                or self._outside()):
            return None     # the feature models' warm-up of gamma="scale", a detector outside
        fmap, owner = None, None
        if type(model) is WarmFourierPAModel:   # the exact PA until the warm-up's end, then
            owner, model = model, model.exact   # the switch to the features (`PAEvents`)
        if type(model) is NystroemPAModel and model.features is not None:
            model = model.features          # NOGD after its switch: the features' model
        if type(model) is FeaturePAModel and type(model.fmap) in (RandomFourierFeatures,
                                                                  NystroemFeatures):
            fmap, model = model.fmap, model.linear      # the linear step on z(x)
        kind = type(model)
        if kind is LinearPAModel and k == 2:
            code = EventsKind.LINEAR
            if self.regularization == "l1" and model.scale != 1.0:
                return None                 # partial_fit first takes the scale into w
        elif kind is LinearMultiPAModel and k == model.n_classes:
            code = EventsKind.MULTI_LINEAR
            if self.regularization == "l1" and model.scale != 1.0:
                return None
        elif kind is KernelPAModel and k == 2 and type(model.expansion) is KernelExpansion:
            code = EventsKind.KERNEL
        elif (kind is KernelMultiPAModel and k == model.n_classes
              and type(model.expansion) in (MultiExpansion, SparseMultiExpansion)):
            code = EventsKind.MULTI_KERNEL
        else:
            return None
        names = ("_model",) + tuple(name for name in self.get_params(deep=False) if name in d)
        events = cache[0] = PAEvents(int(code), model, self._rule(), float(self.truncate_sigma),
                                     type(self).__name__, self._divergence_cure, names, fmap,
                                     self._watched())
        if warming:                 # the exact kernel models: the step takes the warm-up
            events.warm = Warmup(width_of(self, d["n_features_in_"]))
            events.warm_end, events.owner = owner is not None, owner
        events.bind(self)
        return events

    def _learn_event(self, events, row, y, weight=1.0):
        """One event through the compiled step (`okl._core._pa.PAEvents`); f_t(x_t).

        The step moves `t_` and `n_updates_` itself; an infeasible step changes
        nothing, so its warning (which may raise) comes before it is counted.
        """
        d = self.__dict__
        f, event = events.learn(row, y, d)
        if event == _INFEASIBLE:
            if not d["n_infeasible_"]:
                warnings.warn(
                    f"The sample at step t={d['t_'] + 1} had an empty constraint set, "
                    f"{EMPTY_SET[self.regularization]}. It was skipped and is counted in "
                    "n_infeasible_; this warning is shown once per fit.",
                    InfeasibleUpdateWarning, stacklevel=5)
            events.skipped(d)
        return f

    def _stream_loss(self, scores, y):
        """The hinge loss max(0, 1 - m) of every prediction (PA's loss): m = y f_t(x_t), or
        with k classes the margin s_y - max_{c != y} s_c (docs/multiclass-pa.md)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 2:        # a class unknown at a row scores 0 there (okl._labels)
            return multiclass_loss("hinge", np.where(np.isfinite(scores), scores, 0.0),
                                   np.searchsorted(self.classes_, np.asarray(y)))
        if len(self.classes_) < 2:
            return np.zeros(len(scores))
        return loss_value("hinge", self._encode(np.asarray(y)) * scores)

    def _add_class(self, position):
        """A new class at `position` of classes_: a zero score function; at the third class
        the binary model first becomes (-f/2, f/2), the same decisions and the same ||f||^2
        (docs/multiclass-pa.md, section 4).  A new model object, so a failed call's undo
        restores the old one."""
        model = self._model
        if not is_multiclass(model):
            model = model.to_multiclass()
        self._model = model.with_class(position)

    def _multiclass_model(self):
        """The model, on k >= 3 classes when classes_ holds them (a fresh model built binary
        before `classes_` was known becomes k zero score functions)."""
        k = len(self.classes_)
        if k >= 3 and not is_multiclass(self._model):
            self._model = with_classes(self._model, k)
        return self._model

    # -- the fitted model ---------------------------------------------------------------------

    @_locks.serialised
    def _decision(self, X):
        check_is_fitted(self, "t_")
        if sp.issparse(X) and self.kernel == "linear":
            check_csr(X, self.n_features_in_)
            X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64)
            check_csr(X)
        else:
            X = check_X(self, X, reset=False)
        return self._model.decision(X)

    def _kernel_model(self, name):
        check_is_fitted(self, "t_")
        if isinstance(self._model, (FeaturePAModel, NystroemPAModel, WarmFourierPAModel)):
            raise AttributeError(f"{name} exists for exact kernel models only; with "
                                 f"approximation={self.approximation!r} the model is f(x) = "
                                 "<w, z(x)> on fixed-size features.")
        if not isinstance(self._model, (KernelPAModel, KernelMultiPAModel)):
            raise AttributeError(f"{name} exists for kernel models only; a linear model is "
                                 "f(x) = coef_ . x.")
        return self._model.expansion

    @property
    def sq_norm_(self):
        """||w||_2^2 (||f||_K^2 for kernels), kept incrementally; with k >= 3 classes
        ``2 sum_c ||f_c||^2`` (docs/multiclass-pa.md); computed if a model saved by an older
        okl did not track it."""
        check_is_fitted(self, "t_")
        sq_norm = self._model.sq_norm
        if np.isnan(sq_norm):           # a multiclass kernel model after a budget eviction
            return self._model.exact_sq_norm()
        if "_width_moments" in self.__dict__ and self._width_loops:
            return self._exact_sq_norm()    # re-read at each width, tracked from the end
        return sq_norm

    @property
    def n_support_(self):
        """Number of support vectors (kernel models)."""
        return int(self._kernel_model("n_support_").n_support)

    @property
    def support_vectors_(self):
        """The centres x_i of f = sum_i a_i K(x_i, .) (kernel models)."""
        return self._kernel_model("support_vectors_").centers_

    @property
    def dual_coef_(self):
        """The coefficients a_i of f = sum_i a_i K(x_i, .) (kernel models)."""
        return self._kernel_model("dual_coef_").coef_

    @property
    def coef_(self):
        """The weights w of f(x) = w.x, shape (1, n_features_in_), or W of the scores
        s = W x, shape (k, n_features_in_) with k >= 3 classes (linear kernel only)."""
        check_is_fitted(self, "t_")
        if isinstance(self._model, LinearMultiPAModel):
            return self._model.coef
        if not isinstance(self._model, LinearPAModel):
            raise AttributeError(
                "coef_ exists for kernel='linear' only; a kernel model is "
                "f = sum_i dual_coef_[i] K(support_vectors_[i], .).")
        return self._model.coef[None, :]

    @_locks.serialised
    def rkhs_norm(self):
        """||w||_2 (linear) or ||f||_K (kernel), recomputed from the model."""
        check_is_fitted(self, "t_")
        return self._model.norm()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel == "linear"
        # one online pass without an intercept (as in the paper) is not a batch
        # fit of sklearn's uncentred test blobs; learning is tested in tests/
        tags.classifier_tags.poor_score = True
        return tags
