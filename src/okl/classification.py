"""Binary kernel classifiers learned online (docs/algorithms.md, sections 3 and 4).

OnlineKernelClassifier
    NORMA (Kivinen-Smola-Williamson), the kernel SGD baseline of Shen-Dietterich:
    every sample whose margin loss has a non-zero slope becomes a centre.
CoefficientRegularizedClassifier
    Tian-Sheng's coefficient-regularized scheme: m fixed centres, a dense
    update of all m coefficients per step, and a step size that provably keeps
    the coefficients bounded.
"""
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils import check_array

from okl._base import Diverged, OnlineLearner
from okl._binary import BinaryClassifierMixin
from okl._docstrings import shared_params
from okl._engines import ENGINES
from okl._kernel_learners import KernelModelMixin, PointwiseMixin, expansion_class, warn_reset
from okl._params import (
    APPROXIMATION_CONSTRAINTS, ARRAY_2D, CLASSES_CONSTRAINTS, ENGINE_CONSTRAINTS,
    INTERCEPT_CONSTRAINTS, NONE, ONLINE_WEIGHT_CHECKS,
    POINTWISE_STEP_CONSTRAINTS, STEP_CONSTRAINTS, Interval, Options, budget_constraints,
    kernel_constraints,
)
from okl._persist import C_INT_MAX, loadable
from okl.kernels import kernel_code
from okl.losses import MARGIN_LOSSES, lipschitz_at_origin, loss_spec, slope_at_origin
from okl.schedules import step_numbers, step_sizes



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
class OnlineKernelClassifier(PointwiseMixin, BinaryClassifierMixin, ClassifierMixin,
                             OnlineLearner):
    """Binary kernel classification by NORMA: stochastic gradient steps in an RKHS.

    Each sample is predicted with the current model, then learned:
    ``f_{t+1} = (1 - eta_t lam) f_t - eta_t phi'_-(y_t f_t(x_t)) y_t K(x_t, .)``
    (docs/algorithms.md, section 3; Kivinen, Smola and Williamson 2004, the baseline of
    Shen-Dietterich).  A sample becomes a centre when the loss has a non-zero
    slope at its margin, so the hinge loss keeps only margin errors.

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
    loss : {"hinge", "squared_hinge", "logistic", "least_squares", "exponential"}, default="hinge"
        Margin loss phi(m) of m = y f(x), with left derivatives; see `okl.losses`.
    lam : float >= 0, default=1e-3
        Regularization: every step shrinks f by ``1 - eta_t lam``.  1e-3 with
        eta_decay=1/2 had the lowest progressive error among lam in
        {1e-4, 1e-3, 1e-2, 1e-1} and eta_decay in {1/2, 3/4} on two moons,
        breast cancer and digits (odd vs even), with the hinge loss.
    eta : float > 0, "auto" or callable, default="auto"
        Step size.  "auto" is ``1 / ((lam + M C_K^2) t**eta_decay)``, M the
        Lipschitz constant of phi'_- at the origin (`okl.losses.lipschitz_at_origin`)
        and C_K^2 the running maximum of K(x, x); without a budget it keeps
        ``||f_t||_K <= C_K |phi'_-(0)| / lam`` (docs/algorithms.md, section 3.1).
        The exponential loss has no finite M: give it an explicit eta.  A float
        gives ``eta * t**-eta_decay``; a callable maps the array of step
        numbers t (from 1) to step sizes.
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
    {verbose}
    {engine}

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Sorted labels; classes_[1] is the positive class (y = +1).
    n_features_in_ : int
    t_ : int
        Samples learned so far.
    n_support_ : int
        Number of centres.
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
    dual_coef_ : ndarray of shape (n_support_,)
        f = sum_i dual_coef_[i] K(support_vectors_[i], .).
    ck2_ : float
        C_K^2, the running maximum of K(x, x) over the stream.
    eta_, lam_ : float
        The step size and regularization of the most recent step.
    intercept_ : float
        The offset b (0 with fit_intercept=False).

    References
    ----------
    See docs/algorithms.md, section 3; the eta="auto" step and its RKHS
    ball: section 3.1.

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
        **CLASSES_CONSTRAINTS,
    }

    #: scikit-learn's estimator checks this learner fails by design, with the reason
    #: (a weight is not repeated rows): ``check_estimator(est,
    #: expected_failed_checks=est.expected_failed_checks)``.
    expected_failed_checks = ONLINE_WEIGHT_CHECKS

    def __init__(self, kernel="gaussian", gamma="scale", degree=3, coef0=0.0, loss="hinge",
                 lam=1e-3, eta="auto", eta_decay=0.5, budget="auto", budget_policy="auto",
                 approximation=None, n_components=100, random_state=None, fit_intercept=False,
                 classes=None, verbose=False, engine="cython"):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.loss = loss
        self.lam = lam
        self.eta = eta
        self.eta_decay = eta_decay
        self.budget = budget
        self.budget_policy = budget_policy
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.approximation = approximation
        self.n_components = n_components
        self.random_state = random_state
        self.verbose = verbose
        self.engine = engine

    def fit(self, X, y, sample_weight=None):
        """Learn the rows of X in order, from a fresh model (one online pass).

        The two labels are the constructor's `classes`, else those of y.
        `sample_weight` (w_t >= 0) scales the loss gradient of each step; 0
        skips the row (docs/algorithms.md, section 7.2).
        """
        return self._fit(X, y, sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue the stream with the rows of X, in order.

        `classes` (the two labels) is required on the first call unless the
        constructor has them; `sample_weight` as in `fit`.  A call that raises
        (bad input, a label not in `classes_`, divergence) leaves the model
        exactly as it was.
        """
        self._progressive_scores(X, y, classes, sample_weight=sample_weight)
        return self

    def _loss_spec(self):
        return loss_spec(self.loss)

    def _auto_lipschitz(self):
        return _finite_lipschitz(self)


@loadable
@shared_params
class CoefficientRegularizedClassifier(KernelModelMixin, BinaryClassifierMixin,
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

    Parameters
    ----------
    centers : array of shape (m, n_features) or None, default=None
        The centres c_j.  None takes the first `n_centers` stream points; a
        centre exists (with a_j = 0) from the step that sees it.
    n_centers : int, default=100
        m when `centers` is None; ignored otherwise.
    {kernel}
    {gamma_plain}
    {degree}
    {coef0}
    loss : {"hinge", "squared_hinge", "logistic", "least_squares", "exponential"}, default="hinge"
        Margin loss phi(m) of m = y f(x), with left derivatives (the paper's
        hinge-loss example is Corollary 3).
    lam : float > 0, default=0.01
        Coefficient regularization lam (Corollary 3 takes lam = T**-gamma for
        a stream of T samples).
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
    {verbose}
    {engine}

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Sorted labels; classes_[1] is the positive class (y = +1).
    n_features_in_ : int
    t_ : int
        Samples learned so far.
    n_centers_ : int
        m.
    centers_ : ndarray of shape (<= m, n_features_in_)
        The centres that exist so far (all m once m samples were seen, or
        from the start when `centers` is given).
    coef_ : ndarray of shape (len(centers_),)
        The coefficients a (the true values, lazy scale applied).
    kappa_max_ : float
        max_s ||k_s||_2 over the steps seen: the corrected constant kappa.
    M_ : float
        The local Lipschitz constant M of phi'_- at the origin for `loss`.
    norm_bound_ : float
        ``|phi'_-(0)| kappa_max_ / lam``: the bound of ||coef_|| (Theorem 3,
        corrected), guaranteed under eta="auto".
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
    }

    def __init__(self, centers=None, n_centers=100, kernel="gaussian", gamma="scale", degree=3,
                 coef0=0.0, loss="hinge", lam=0.01, eta="auto", eta_decay=0.75, classes=None,
                 verbose=False, engine="cython"):
        self.centers = centers
        self.n_centers = n_centers
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.loss = loss
        self.lam = lam
        self.eta = eta
        self.eta_decay = eta_decay
        self.classes = classes
        self.verbose = verbose
        self.engine = engine

    def _start(self, X, y):
        n_features = X.shape[1]
        self._fit_gamma(X)
        kernel = dict(kernel=int(kernel_code(self.kernel)), gamma=float(self._kernel_gamma()),
                      degree=int(self.degree), coef0=float(self.coef0))
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
        self.t_ = 0
        self.kappa_max_ = 0.0
        self.norm_bound_ = 0.0

    _divergence_cure = ("the explicit step size is too large for this data; use eta='auto' "
                        "(whose steps keep ||a_t|| bounded), a smaller eta or a larger eta_decay")

    def _learn(self, X, y):
        n = X.shape[0]
        auto = isinstance(self.eta, str)
        M = _finite_lipschitz(self) if auto else lipschitz_at_origin(self.loss)
        eta_t = step_sizes(1.0 / self.lam if auto else self.eta, self.eta_decay,
                           step_numbers(self.t_, n))
        if not auto:
            warn_reset(self, eta_t, float(self.lam), step_numbers(self.t_, n))
        scores, eta_used, kk = np.empty(n), np.empty(n), np.empty(n)
        failed = ENGINES[self.engine].coefreg(
            self._engine_expansion(), X, y, eta_t, float(self.lam), M if auto else 0.0,
            self.n_centers_, loss_spec(self.loss), scores, eta_used, kk)
        if failed >= 0:
            raise Diverged(failed, eta_used[failed])
        self.t_ += n
        self.M_ = M
        self.kappa_max_ = max(self.kappa_max_, float(np.sqrt(kk.max())))
        self.norm_bound_ = abs(slope_at_origin(self.loss)) * self.kappa_max_ / self.lam
        self.eta_ = float(eta_used[-1])
        return scores

    def _check_state(self, check):
        """okl.load's checks of this learner's fitted state (see `OnlineLearner._check_state`)."""
        attrs, out, name = check.attrs, check.out, type(self).__name__
        t = out["t_"]
        built = {}
        check.keys(attrs, ("n_features_in_", "t_", "classes_", "n_centers_", "kappa_max_",
                           "norm_bound_"), f"{name}'s attributes",
                   optional=("M_", "eta_", "gamma_"))
        check.fitted_gamma()
        m = out["n_centers_"] = check.int(attrs["n_centers_"], "n_centers_", 1, C_INT_MAX)
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
        check.binary_labels()
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
        """The coefficients a_j of f = sum_j a_j K(c_j, .), aligned with centers_."""
        return self.dual_coef_
