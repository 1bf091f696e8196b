"""OnlineKernelRegressor: Smale-Yao least squares, Yang's quantile regression, NORMA."""
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin

from okl._base import OnlineLearner
from okl._kernel_learners import PointwiseMixin
from okl._docstrings import shared_params
from okl._params import (
    APPROXIMATION_CONSTRAINTS, DRIFT_CONSTRAINTS, ENGINE_CONSTRAINTS, INTERCEPT_CONSTRAINTS,
    ONLINE_WEIGHT_CHECKS, POINTWISE_STEP_CONSTRAINTS, Interval, InvalidParameterError, Options,
    budget_constraints, kernel_constraints,
)
from okl._persist import loadable
from okl.losses import RESIDUAL_LOSSES, loss_spec, loss_value

REGRESSION_LOSSES = tuple(name for name in RESIDUAL_LOSSES if name != "power")
# residual losses whose derivative is bounded: eta="scaled" multiplies their auto step
BOUNDED_DERIVATIVE = ("absolute", "epsilon_insensitive", "pinball", "huber")


@loadable
@shared_params
class OnlineKernelRegressor(PointwiseMixin, RegressorMixin, OnlineLearner):
    """Online kernel regression by stochastic gradient steps in an RKHS.

    Each sample is predicted with the current model, then learned:
    ``f_{t+1} = (1 - lam_t eta_t) f_t - eta_t V'_-(f_t(x_t) - y_t) K(x_t, .)``
    (docs/algorithms.md, sections 1-3).  With ``loss="squared"`` this is Smale-Yao's online
    regularized least squares, which converges to the kernel ridge solution;
    with ``loss="pinball"`` it is Yang's fully online quantile regression, whose
    epsilon-tube makes the model sparse; any loss is NORMA.

    One event at a time: `learn_one(x, y, sample_weight=1.0)`, `predict_one(x)`
    (the prior before any learning), `decision_function_one(x)`; x is a dict
    of feature name -> value or a 1-D row; same iterates as `partial_fit`
    (docs/streaming.md).

    Parameters
    ----------
    {kernel}
    {gamma}
    {degree}
    coef0 : float, default=0.0
        Constant added to <x, u> (linear, polynomial); >= 0 keeps K positive
        semi-definite.  ``kernel="linear", coef0=1`` is Adaline (Smale-Yao 6.1).
    {nu}
    {kernel_params}
    loss : {"squared", "absolute", "epsilon_insensitive", "pinball", "huber"}, default="squared"
        Residual loss of u = f(x) - y; squared is u^2/2.  See `okl.losses`.
    quantile : float in (0, 1), default=0.5
        tau of the pinball loss: the model estimates the tau-quantile of y | x.
    epsilon : float >= 0, default=0.0
        Half-width of the insensitive tube (epsilon_insensitive, pinball:
        Yang's epsilon, larger gives fewer centres); the threshold delta of
        the huber loss (which needs epsilon > 0).
    lam : float >= 0, default=1e-3
        Regularization lam_1; ``lam_t = lam * t**-lam_decay``.
    lam_decay : float >= 0, default=0.0
        0 keeps lam fixed (Smale-Yao; Yang's partially online scheme).  Yang's
        fully online presets: `okl.schedules.yang_exponents`.
    eta : float > 0, "scaled", "auto" or callable, default="scaled"
        Step size.  "auto" is ``1 / ((lam_t + C_K^2) t**eta_decay)``: for the
        squared loss and a kernel with constant C_K (Gaussian, Laplacian) and
        fixed lam, exactly Smale-Yao's Theorem A step (docs/algorithms.md,
        sections 1-2 discuss Yang's schedules).  "scaled" is "auto" for the
        squared loss and, for the losses whose derivative is bounded (absolute,
        epsilon_insensitive, pinball, huber), "auto" times the mean
        ``|y_s - b_{s+1}|`` of the steps before when it exceeds 1, so that the
        step moves f in units of a large target (docs/defaults.md, section 4).  A float gives ``eta * t**-eta_decay``; a callable maps the
        array of step numbers t (from 1) to step sizes.  See `okl.schedules`.
    eta_decay : float >= 0, default=0.6
        Exponent of the step size: Smale-Yao's theta in (1/2, 1), Yang's alpha
        (3/5 for r = 1).
    {budget}
    {budget_policy}
    {approximation}
    {n_components}
    {random_state}
    {fit_intercept}
    {forgetting}
    {drift_detector}
    {verbose}
    {engine}

    Attributes
    ----------
    n_features_in_ : int
    t_ : int
        Samples learned so far.
    n_drifts_ : int
        Changes the drift detector saw so far (docs/drift.md).
    n_support_ : int
        Number of centres.
    support_vectors_ : ndarray of shape (n_support_, n_features_in_)
    dual_coef_ : ndarray of shape (n_support_,)
        f = sum_i dual_coef_[i] K(support_vectors_[i], .).
    ck2_ : float
        C_K^2, the running maximum of K(x, x) over the stream.
    eta_, lam_ : float
        The step size and regularization of the most recent step.
    dev_ : float
        The sum of w_t |y_t - b_{t+1}| over the steps (the scale of eta="scaled").
    intercept_ : float
        The offset b (0 with fit_intercept=False).
    gamma_ : float
        The kernel width in use, with gamma="scale".

    References
    ----------
    See docs/algorithms.md, sections 1 (squared loss), 2 (pinball loss) and
    3 (any loss, budget).

    .. [1] S. Smale and Y. Yao, "Online learning algorithms", Foundations of
       Computational Mathematics, 6(2):145-170, 2006.
    .. [2] P. Yang, "Quantile regression with samples drawn from
       non-identical distributions", Journal of Mathematics (Shuxue
       Zazhi), 39(5):713-720, 2019. In Chinese, with an English
       abstract.
    .. [3] J. Kivinen, A. J. Smola and R. C. Williamson, "Online learning
       with kernels", IEEE Transactions on Signal Processing,
       52(8):2165-2176, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from okl import OnlineKernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (500, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=500)
    >>> est = OnlineKernelRegressor(gamma=0.5).fit(X, y)
    >>> est.partial_fit(X[:10], y[:10]).t_
    510
    """

    _parameter_constraints = {
        **kernel_constraints(),
        "loss": [Options(*REGRESSION_LOSSES)],
        "quantile": [Interval(Real, 0, 1, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "lam_decay": [Interval(Real, 0, None, closed="left")],
        **POINTWISE_STEP_CONSTRAINTS,
        **budget_constraints(),
        **APPROXIMATION_CONSTRAINTS,
        **ENGINE_CONSTRAINTS,
        **INTERCEPT_CONSTRAINTS,
        **DRIFT_CONSTRAINTS,
    }

    #: scikit-learn's estimator checks this learner fails by design, with the reason
    #: (a weight is not repeated rows): ``check_estimator(est,
    #: expected_failed_checks=est.expected_failed_checks)``.
    expected_failed_checks = ONLINE_WEIGHT_CHECKS

    def __init__(self, kernel="gaussian", gamma="scale", degree=3, coef0=0.0, nu=1.5,
                 kernel_params=None, loss="squared", quantile=0.5, epsilon=0.0, lam=1e-3,
                 lam_decay=0.0, eta="scaled", eta_decay=0.6, budget="auto", budget_policy="auto",
                 approximation=None, n_components=100, random_state=None, fit_intercept=True,
                 forgetting=1.0, drift_detector="page_hinkley", verbose=False,
                 engine="cython"):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.nu = nu
        self.kernel_params = kernel_params
        self.loss = loss
        self.quantile = quantile
        self.epsilon = epsilon
        self.lam = lam
        self.lam_decay = lam_decay
        self.eta = eta
        self.eta_decay = eta_decay
        self.budget = budget
        self.budget_policy = budget_policy
        self.fit_intercept = fit_intercept
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.approximation = approximation
        self.n_components = n_components
        self.random_state = random_state
        self.verbose = verbose
        self.engine = engine

    def _validate_params(self):
        super()._validate_params()
        if self.loss == "huber" and self.epsilon <= 0:
            raise InvalidParameterError(
                "loss='huber' takes its threshold delta from epsilon, which must be > 0 "
                f"(got epsilon={self.epsilon}); try epsilon=1.0.")

    def fit(self, X, y, sample_weight=None):
        """Learn the rows of X in order, from a fresh model (one online pass).

        `sample_weight` (w_t >= 0) scales the loss gradient of each step; 0
        skips the row (docs/algorithms.md, section 7.2).
        """
        self._progressive_scores(X, y, reset=True, sample_weight=sample_weight,
                                 keep_scores=False)
        return self

    def partial_fit(self, X, y, sample_weight=None):
        """Continue the stream with the rows of X, in order (`sample_weight` as in `fit`).

        A call that raises (bad input, divergence) leaves the model exactly as it was.
        """
        self._progressive_scores(X, y, sample_weight=sample_weight, keep_scores=False)
        return self

    def _scaled_step(self):
        """eta="scaled" scales the auto step when the loss derivative is bounded."""
        return self.loss in BOUNDED_DERIVATIVE

    def _loss_spec(self):
        return loss_spec(self.loss, tau=self.quantile, eps=self.epsilon, delta=self.epsilon)

    def _stream_loss(self, scores, y):
        """The training loss of every prediction."""
        spec = self._loss_spec()
        return loss_value(self.loss, np.asarray(scores) - np.asarray(y, dtype=np.float64),
                          tau=spec["tau"], eps=spec["eps"], delta=spec["delta"])

    def predict(self, X):
        """f(x) for every row of X."""
        return self._decision(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        # one online pass with default kernel width is not a batch fit of the
        # generic test data; the learning guarantees are tested in tests/
        tags.regressor_tags.poor_score = True
        return tags
