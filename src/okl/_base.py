"""What every okl estimator shares: input checks, engines, atomic updates."""
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from okl._core import _pointwise
from okl._core._expansion import BudgetPolicy, KernelExpansion
from okl._numpy import pointwise as _np_pointwise
from okl._numpy.expansion import NumpyExpansion
from okl._params import validate_params
from okl.kernels import kernel_code, kernel_diag
from okl.schedules import regularization, running_sup, step_numbers, step_sizes

EXPANSIONS = {"cython": KernelExpansion, "numpy": NumpyExpansion}
POINTWISE = {"cython": _pointwise.fit_chunk, "numpy": _np_pointwise.fit_chunk}
BUDGET_POLICIES = {"oldest": BudgetPolicy.OLDEST, "smallest": BudgetPolicy.SMALLEST}


@contextmanager
def transaction(estimator):
    """Undo every attribute (re)binding of `estimator` if the block raises.

    Objects mutated in place (an expansion) restore themselves; see
    `KernelExpansion.checkpoint`.
    """
    saved = dict(estimator.__dict__)
    try:
        yield
    except BaseException:
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
    """The base of every okl learner: the hooks streams and persistence rely on.

    `_progressive_scores(X, y, classes=None, sample_weight=None)` learns a
    chunk and returns f_t(x_t) for each row, predicted before its update;
    `_predictions(scores)` maps those scores to predictions (labels for a
    classifier); `_stream_loss(scores, y)` is the training loss of each.
    """

    def _predictions(self, scores):
        """The prediction behind each score f_t(x_t): the score itself, for regressors."""
        return np.asarray(scores)

    def _stream_loss(self, scores, y):
        """The training loss of every prediction of the stream."""
        raise NotImplementedError


class KernelExpansionMixin:
    """Shared parts of the learners whose model is a `KernelExpansion`.

    Subclasses define `_parameter_constraints`, the kernel parameters
    (kernel, gamma, degree, coef0), `budget`, `budget_policy` and `engine`.
    """

    def _validate_params(self):
        validate_params(self)

    def _new_expansion(self, n_features):
        return EXPANSIONS[self.engine](
            n_features, int(kernel_code(self.kernel)), float(self.gamma),
            int(self.degree), float(self.coef0), int(self.budget or 0),
            int(BUDGET_POLICIES[self.budget_policy]))

    def _engine_expansion(self):
        """The expansion, converted if `engine` was changed since it was built."""
        expansion = self._expansion
        cls = EXPANSIONS[self.engine]
        if not isinstance(expansion, cls):
            expansion = self._expansion = cls.from_state(expansion.get_state())
        return expansion

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


class PointwiseMixin(KernelExpansionMixin):
    """The predict-then-update loop of ALGORITHMS 1-3 over a kernel expansion.

    Subclasses give `lam`, `eta`, `eta_decay` (and optionally `lam_decay`) and
    `_loss_args()`, the Cython loss arguments.
    """

    def _auto_lipschitz(self):
        """M in the auto step 1 / ((lam_t + M C_K^2) t**eta_decay); 1 unless a loss needs more."""
        return 1.0

    def _reset(self, n_features):
        self._expansion = self._new_expansion(n_features)
        self.t_ = 0
        self.ck2_ = 0.0
        self.n_support_ = 0

    def _learn(self, X, y):
        """Learn validated rows in order; return f_t(x_t), each before its update."""
        n = X.shape[0]
        expansion = self._engine_expansion()
        t = step_numbers(self.t_, n)
        lam_t = regularization(self.lam, getattr(self, "lam_decay", 0.0), t)
        ck2 = running_sup(kernel_diag(X, self.kernel, self.gamma, self.degree, self.coef0),
                          self.ck2_)
        M = self._auto_lipschitz() if isinstance(self.eta, str) else 1.0
        eta_t = step_sizes(self.eta, self.eta_decay, t, lam_t, M * ck2)
        scores = np.empty(n, dtype=np.float64)
        undo = expansion.checkpoint(n, bool(np.any(lam_t * eta_t >= 1.0)))
        failed = POINTWISE[self.engine](expansion, X, np.ascontiguousarray(y, dtype=np.float64),
                                        eta_t, lam_t, *self._loss_args(), scores)
        if failed >= 0:
            expansion.restore(undo)
            raise FloatingPointError(
                f"{type(self).__name__} diverged at step t={self.t_ + failed + 1} "
                f"(eta_t={eta_t[failed]:.3g}): the model is no longer finite. The step size is "
                "too large for this data; use eta='auto', a smaller eta or a larger eta_decay, "
                "or scale X (e.g. with sklearn.preprocessing.StandardScaler). The model is "
                "left as it was before this call.")
        self.t_ += n
        self.ck2_ = float(ck2[-1])
        self.eta_ = float(eta_t[-1])
        self.lam_ = float(lam_t[-1])
        self.n_support_ = int(expansion.n_support)
        return scores


class BinaryClassifierMixin:
    """Labels of okl's binary classifiers, as scikit-learn has them.

    `classes_` is sorted; `classes_[1]` is the positive class (+1).  Learners
    see y in {-1, +1}; predictions map back through `classes_`.
    """

    def _set_classes(self, y, classes):
        """Fix `classes_` on a first call: from `classes`, else from y."""
        check_classification_targets(y)
        classes = np.unique(y if classes is None else np.asarray(classes))
        name = type(self).__name__
        if len(classes) > 2:
            raise ValueError(
                f"Only binary classification is supported: {name} got {len(classes)} classes "
                f"({classes.tolist()}). For more classes wrap it: "
                f"sklearn.multiclass.OneVsRestClassifier({name}(...)).")
        if len(classes) < 2:
            raise ValueError(
                f"{name} needs two classes to learn, but the data has only one class: "
                f"{classes.tolist()}. Pass both labels in `classes`.")
        self.classes_ = classes

    def _encode(self, y):
        """y as floats in {-1, +1}; labels outside `classes_` raise, naming the cure."""
        positive = y == self.classes_[1]
        if np.all(positive | (y == self.classes_[0])):
            return np.where(positive, 1.0, -1.0)
        check_classification_targets(y)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        raise ValueError(
            f"y contains labels {unseen.tolist()} that are not in classes_ "
            f"{self.classes_.tolist()}. Pass every label in `classes` on the first "
            "call to partial_fit.")

    def _predictions(self, scores):
        """The label of each decision value: classes_[1] where f(x) > 0."""
        return self.classes_[(np.asarray(scores) > 0).astype(np.intp)]
