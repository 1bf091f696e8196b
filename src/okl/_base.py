"""The skeleton every okl learner shares: one fit / partial_fit template, input checks, undo.

A learner fills the template's hooks:

``_validate_params()``      check the parameters (the first call of a stream)
``_check_X_y(X, y, reset)`` validated X (float64, C order) and y
``_start(X, y)``            a fresh model from the first chunk
``_targets(y, classes, first)``  y as the loop takes it (e.g. labels -> {-1, +1})
``_models()``               the objects `_learn` changes in place (checkpointed)
``_learn(X, y)``            run the chunk; return f_t(x_t) before each update, or
                            raise `Diverged` at the first non-finite step
``_decision(X)``            f(x) for every row
``_predictions(scores)``    the prediction behind each score (a label, or the score)
``_stream_loss(scores, y)`` the training loss of each prediction

and the template makes each call all-or-nothing: any exception leaves the
learner exactly as it was (attributes rebound, models restored from their
checkpoints).
"""
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from okl._core import _pointwise
from okl._core._expansion import KernelExpansion
from okl._numpy import pointwise as _np_pointwise
from okl._numpy.expansion import NumpyExpansion
from okl._params import validate_params
from okl.budgets import budget_code
from okl.kernels import kernel_code, kernel_diag
from okl.schedules import regularization, running_sup, step_numbers, step_sizes

EXPANSIONS = {"cython": KernelExpansion, "numpy": NumpyExpansion}
POINTWISE = {"cython": _pointwise.fit_chunk, "numpy": _np_pointwise.fit_chunk}


class Diverged(Exception):
    """Raised by `_learn` at the first step whose model is no longer finite."""

    def __init__(self, step, eta=None):
        super().__init__(step, eta)
        self.step, self.eta = step, eta


@contextmanager
def transaction(estimator):
    """Undo every attribute (re)binding of `estimator`, and every guarded model, if the block raises.

    Yields a list; append ``(model, model.checkpoint(n))`` for objects changed
    in place.
    """
    saved = dict(estimator.__dict__)
    guarded = []
    try:
        yield guarded
    except BaseException:
        for model, token in reversed(guarded):
            model.restore(token)
        estimator.__dict__.clear()
        estimator.__dict__.update(saved)
        raise


def check_dense(estimator, X):
    """Kernel expansions store centres as dense rows: refuse sparse input clearly."""
    if sp.issparse(X):
        raise TypeError(
            f"{type(estimator).__name__} takes dense input only (sparse matrix given): a kernel "
            "expansion stores its centres as dense rows. Convert with X.toarray(); for sparse "
            "linear models use okl.RegularizedPAClassifier(kernel='linear').")


def _ready(estimator, X):
    """True when X is already what validation would return for a fitted estimator.

    Streams call partial_fit and predict on small chunks; scikit-learn's
    validate_data costs hundreds of microseconds per call, far more than the
    steps.  A C-contiguous, finite float64 ndarray with the fitted width needs
    no conversion, so it skips the generic path (which still produces every
    error message).
    """
    return (type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2
            and X.flags.c_contiguous and X.shape[0] > 0
            and X.shape[1] == getattr(estimator, "n_features_in_", -1)
            and not hasattr(estimator, "feature_names_in_") and np.isfinite(X).all())


def check_X(estimator, X, reset):
    """Dense, finite, C-contiguous float64 X with the fitted number of features."""
    if not reset and _ready(estimator, X):
        return X
    check_dense(estimator, X)
    return validate_data(estimator, X, reset=reset, dtype=np.float64, order="C")


def check_X_y(estimator, X, y, reset, y_numeric=True):
    """`check_X` plus a finite 1-D y of the same length (numeric when `y_numeric`)."""
    if (not reset and _ready(estimator, X) and type(y) is np.ndarray and y.ndim == 1
            and len(y) == len(X) and (y.dtype == np.float64 if y_numeric else y.dtype.kind in "iub")
            and (not y_numeric or np.isfinite(y).all())):
        return X, y
    check_dense(estimator, X)
    return validate_data(estimator, X, y, reset=reset, dtype=np.float64, order="C",
                         y_numeric=y_numeric)


class OnlineLearner(BaseEstimator):
    """The base of every okl learner: the fit / partial_fit template and its hooks.

    `_progressive_scores` is the one entry point that learns; progressive
    validation calls it directly (it returns f_t(x_t) of each row, predicted
    before that row is learned) and persistence reads `_state_classes()`.
    """

    # the end of the divergence message: what to change
    _divergence_cure = ("use eta='auto', a smaller eta or a larger eta_decay, or scale X "
                        "(e.g. with sklearn.preprocessing.StandardScaler)")

    def fit(self, X, y):
        """Learn the rows of X in order, from a fresh model (one online pass)."""
        self._progressive_scores(X, y, reset=True)
        return self

    def partial_fit(self, X, y):
        """Continue the stream with the rows of X, in order.

        A call that raises (bad input, divergence) leaves the model exactly as it was.
        """
        self._progressive_scores(X, y)
        return self

    def _progressive_scores(self, X, y, classes=None, reset=False):
        """Learn the rows in order; return f_t(x_t) for each, computed before its update."""
        with transaction(self) as guarded:
            first = reset or not hasattr(self, "t_")
            if first:
                self._validate_params()
            X, y = self._check_X_y(X, y, reset=first)
            if first:
                self._start(X, y)
            y = self._targets(y, classes, first)
            for model in self._models():
                guarded.append((model, model.checkpoint(X.shape[0])))
            try:
                return self._learn(X, y)
            except Diverged as failure:
                step = f"t={self.t_ + failure.step + 1}"
                if failure.eta is not None:
                    step += f" (eta_t={failure.eta:.3g})"
                raise FloatingPointError(
                    f"{type(self).__name__} diverged at step {step}: the model is no longer "
                    f"finite. {self._divergence_cure[0].upper()}{self._divergence_cure[1:]}. "
                    "The model is left as it was before this call.") from None

    # -- hooks ------------------------------------------------------------------------------

    def _validate_params(self):
        validate_params(self)

    def _check_X_y(self, X, y, reset):
        return check_X_y(self, X, y, reset=reset)

    def _start(self, X, y):
        raise NotImplementedError

    def _targets(self, y, classes, first):
        """y as float64 (a classifier maps labels to {-1, +1})."""
        return np.ascontiguousarray(y, dtype=np.float64)

    def _models(self):
        """The objects `_learn` changes in place; each has checkpoint(n) / restore(token)."""
        return ()

    def _learn(self, X, y):
        raise NotImplementedError

    def _predictions(self, scores):
        """The prediction behind each score f_t(x_t): the score itself, for regressors."""
        return np.asarray(scores)

    def _stream_loss(self, scores, y):
        """The training loss of every prediction of the stream."""
        raise NotImplementedError

    @classmethod
    def _state_classes(cls):
        """The classes of the model objects this learner holds (for okl.save / okl.load)."""
        return (KernelExpansion, NumpyExpansion)


class KernelModelMixin:
    """Shared parts of the learners whose model is a kernel expansion `_expansion`.

    Subclasses define the kernel parameters (kernel, gamma, degree, coef0),
    `engine`, and optionally `budget` and `budget_policy`.
    """

    def _new_expansion(self, n_features):
        return EXPANSIONS[self.engine](
            n_features, int(kernel_code(self.kernel)), float(self.gamma),
            int(self.degree), float(self.coef0), int(getattr(self, "budget", None) or 0),
            int(budget_code(getattr(self, "budget_policy", "oldest"))))

    def _engine_expansion(self):
        """The expansion, converted if `engine` was changed since it was built."""
        expansion = self._expansion
        cls = EXPANSIONS[self.engine]
        if not isinstance(expansion, cls):
            expansion = self._expansion = cls.from_state(expansion.get_state())
        return expansion

    def _models(self):
        return (self._engine_expansion(),)

    def _decision(self, X):
        """f(x) for every row of validated X."""
        check_is_fitted(self, "t_")
        X = check_X(self, X, reset=False)
        return self._engine_expansion().predict(X)

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

    def rkhs_norm(self):
        """||f||_K, the norm of the current model in the RKHS of the kernel."""
        check_is_fitted(self, "t_")
        return float(np.sqrt(max(self._expansion.sq_norm(), 0.0)))


class PointwiseMixin(KernelModelMixin):
    """The predict-then-update loop of docs/algorithms.md, sections 1-3.

    Subclasses give `lam`, `eta`, `eta_decay` (and optionally `lam_decay`) and
    `_loss_args()`, the Cython loss arguments.
    """

    def _auto_lipschitz(self):
        """M in the auto step 1 / ((lam_t + M C_K^2) t**eta_decay); 1 unless a loss needs more."""
        return 1.0

    def _start(self, X, y):
        self._expansion = self._new_expansion(X.shape[1])
        self.t_ = 0
        self.ck2_ = 0.0
        self.n_support_ = 0

    def _learn(self, X, y):
        n = X.shape[0]
        t = step_numbers(self.t_, n)
        lam_t = regularization(self.lam, getattr(self, "lam_decay", 0.0), t)
        ck2 = running_sup(kernel_diag(X, self.kernel, self.gamma, self.degree, self.coef0),
                          self.ck2_)
        M = self._auto_lipschitz() if isinstance(self.eta, str) else 1.0
        eta_t = step_sizes(self.eta, self.eta_decay, t, lam_t, M * ck2)
        scores = np.empty(n, dtype=np.float64)
        expansion = self._engine_expansion()
        failed = POINTWISE[self.engine](expansion, X, y, eta_t, lam_t, *self._loss_args(), scores)
        if failed >= 0:
            raise Diverged(failed, eta_t[failed])
        self.t_ += n
        self.ck2_ = float(ck2[-1])
        self.eta_ = float(eta_t[-1])
        self.lam_ = float(lam_t[-1])
        self.n_support_ = int(expansion.n_support)
        return scores
