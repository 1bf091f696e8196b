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

and the template makes each call all-or-nothing: any exception (a
KeyboardInterrupt and a warning turned into an error included) leaves the
learner exactly as it was (attributes rebound, models restored from their
checkpoints).  Calls on one estimator are serialised by a lock of its own
(`okl._locks.locked`): two threads calling partial_fit get the result of one
serial order.  Parameters are validated at the first call of a stream and
again whenever one was changed (set_params); those the fitted model is built
from (`_fitted_with`) cannot change until fit starts again.
"""
import numbers
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from okl import _locks
from okl._core._expansion import KernelExpansion
from okl._numpy.expansion import NumpyExpansion
from okl._one_event import OneEventMixin, rebound
from okl._params import check_memory, validate_params
from okl._progress import progress
from okl._rows import as_float, check_label, forget_names, real_targets

_F64 = np.dtype(np.float64)
VERBOSE_STRETCH = 1000      # rows per progress-bar update of a verbose fit
SCORE_VALUES = 2 ** 20      # scores fit / partial_fit hold at once (8 MiB; k classes: k a row)


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
        interrupted = None
        while True:         # a Ctrl-C during the undo itself: undo again (each step is a copy)
            try:
                for model, token in reversed(guarded):
                    model.restore(token)
                estimator.__dict__.clear()
                estimator.__dict__.update(saved)
                rebound(estimator)
                break
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted
        raise


def params_changed(estimator):
    """True unless every parameter is the very object validated at the last call."""
    return not _locks.validated(estimator)


params_validated = _locks.mark_validated


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and not isinstance(
        a, bool) and isinstance(b, (int, float)) and not isinstance(b, bool) and a == b)


def unhonoured(estimator):
    """The parameters changed since fit that the fitted model cannot take, as
    ["name=value (fitted with value)"] (empty for an unfitted estimator)."""
    if "t_" not in estimator.__dict__ or not params_changed(estimator):
        return []
    scaled = "gamma_" in estimator.__dict__         # fitted with gamma="scale"
    return [f"{name}={getattr(estimator, name)!r} (fitted with {then!r})"
            for name, then in estimator._fitted_with()
            if not _same(getattr(estimator, name),
                         "scale" if name == "gamma" and scaled else then)]


def _check_unchanged(estimator):
    """Refuse a changed parameter that the fitted model was built with."""
    changed = estimator._unhonoured()
    if changed:
        raise ValueError(
            f"{type(estimator).__name__}.partial_fit continues the model built by fit and "
            f"cannot change {', '.join(changed)}. Call fit to start again with the new "
            "values, or set them back.")


def _huge_row(X):
    """The cause of a divergence when a row of X is too large for float64 (its squared norm
    overflows, so no kernel value of it is finite), or None."""
    with np.errstate(over="ignore", invalid="ignore"):
        sq = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
              else np.einsum("ij,ij->i", X, X))
    huge = ~np.isfinite(sq)
    if not huge.any():
        return None
    i = int(np.argmax(huge))
    row = X[i].toarray().ravel() if sp.issparse(X) else X[i]
    return (f"row {i} of this call is too large for float64: its entries reach "
            f"{np.abs(row).max():.3g}, so its squared norm overflows and no kernel value of it "
            "is finite. Scale X (e.g. with okl.preprocessing.OnlineStandardScaler)")


def check_dense(estimator, X):
    """Kernel expansions store centres as dense rows: refuse sparse input clearly."""
    if sp.issparse(X):
        raise TypeError(
            f"{type(estimator).__name__} takes dense input only (sparse matrix given): a kernel "
            "expansion stores its centres as dense rows. Convert with X.toarray(); for sparse "
            "linear models use okl.RegularizedPAClassifier(kernel='linear').")


def _ready(estimator, X, reset=False):
    """True when X is already what validation would return for a fitted estimator (`reset`:
    for a fresh one, whose width X then fixes).

    Streams call partial_fit and predict on small chunks; scikit-learn's
    validate_data costs hundreds of microseconds per call, far more than the
    steps (a millisecond on a first call).  A C-contiguous, finite float64
    ndarray with the fitted width needs no conversion, so it skips the generic
    path (which still produces every error message).
    """
    return (type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2
            and X.flags.c_contiguous and X.shape[0] > 0
            and (X.shape[1] > 0 if reset else
                 X.shape[1] == getattr(estimator, "n_features_in_", -1)
                 and not hasattr(estimator, "feature_names_in_"))
            and np.isfinite(X).all())


def _reset(estimator, X):
    """What validate_data(reset=True) records of a ready ndarray: its width, no names."""
    estimator.n_features_in_ = X.shape[1]
    if "feature_names_in_" in estimator.__dict__:
        del estimator.feature_names_in_


def check_X(estimator, X, reset):
    """Dense, finite, C-contiguous float64 X with the fitted number of features."""
    if _ready(estimator, X, reset):
        if reset:
            _reset(estimator, X)
        return X
    check_dense(estimator, X)
    return validate_data(estimator, X, reset=reset, dtype=np.float64, order="C")


def check_X_y(estimator, X, y, reset, y_numeric=True):
    """`check_X` plus a finite 1-D y of the same length (numeric when `y_numeric`)."""
    if (_ready(estimator, X, reset) and type(y) is np.ndarray and y.ndim == 1
            and len(y) == len(X) and (y.dtype == np.float64 if y_numeric else y.dtype.kind in "iub")
            and (not y_numeric or np.isfinite(y).all())):
        if reset:
            _reset(estimator, X)
        return X, y
    check_dense(estimator, X)
    if y_numeric:
        y = real_targets(estimator, y)      # a missing target: its own message, row and value
    return validate_data(estimator, X, y, reset=reset, dtype=np.float64, order="C",
                         y_numeric=y_numeric)


def check_sample_weight(estimator, sample_weight, n, fresh=False):
    """sample_weight as a finite float64 array of n values >= 0 (None stays None).

    A fresh fit whose weights are all 0 would learn nothing: it raises.
    """
    if sample_weight is None:
        return None
    if not getattr(estimator, "_supports_sample_weight", False):
        raise TypeError(f"{type(estimator).__name__} takes no sample_weight (docs/algorithms.md, "
                        "section 7.2: passive-aggressive and pairwise rules are unweighted).")
    w = np.asarray(sample_weight)
    if w.dtype.kind == "O" and all(isinstance(v, numbers.Real) for v in w.ravel().tolist()):
        w = np.array([as_float(v) for v in w.ravel().tolist()]).reshape(w.shape)   # 10**400
    if w.dtype.kind not in "biuf":      # strings are refused, as by learn_one's check_weight
        raise TypeError(f"sample_weight must hold numbers >= 0 (one per row), got "
                        f"{str(sample_weight)[:60]} (dtype {w.dtype}).")
    w = w.astype(np.float64)
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"sample_weight must hold {n} finite values >= 0 (one per row), got "
                         f"{np.asarray(sample_weight)!r}.")
    if fresh and not np.any(w > 0):
        raise ValueError(f"Every sample_weight is zero, so {type(estimator).__name__}.fit would "
                         "learn nothing; give some rows a positive weight.")
    return np.ascontiguousarray(w)


def one_row(estimator, X):
    """X of one row (an ndarray of any dtype and order, or a nested list) as a float64 1-D
    row, when it needs no scikit-learn validation; else None.  NaN/inf is left to the
    compiled step, which checks it."""
    if type(X) is np.ndarray:
        if X.ndim != 2 or X.shape[0] != 1 or X.dtype.kind not in "biuf":
            return None
    elif type(X) is not list or len(X) != 1:
        return None
    if "feature_names_in_" in estimator.__dict__:
        return None
    if type(X) is np.ndarray:
        row = X[0]
        if row.dtype is not _F64 or not row.flags.c_contiguous:
            row = np.ascontiguousarray(row, dtype=np.float64)
    else:
        if type(X[0]) is not list:
            return None
        try:
            row = np.array(X[0], dtype=np.float64)
        except (TypeError, ValueError):
            return None                  # the full validation names the problem
        if row.ndim != 1:
            return None
    return row if row.shape[0] == estimator.__dict__.get("n_features_in_", -1) else None


def _one_target(y):
    """y holds exactly one label or target (an ndarray or a list)."""
    return (type(y) is np.ndarray and y.shape == (1,)) or (type(y) is list and len(y) == 1)


_PARAM_NAMES = {}


class OnlineLearner(OneEventMixin, BaseEstimator):
    """The base of every okl learner: the fit / partial_fit template and its hooks.

    `_progressive_scores` is the one entry point that learns; progressive
    validation calls it directly (it returns f_t(x_t) of each row, predicted
    before that row is learned) and persistence reads `_state_classes()`.
    """

    @classmethod
    def _get_param_names(cls):
        """scikit-learn's parameter names of the class, read from __init__ once (not at
        every get_params: a learner's first event calls it several times)."""
        names = _PARAM_NAMES.get(cls)
        if names is None:
            names = _PARAM_NAMES[cls] = super()._get_param_names()
        return list(names)

    # the end of the divergence message: what to change
    _divergence_cure = ("use eta='auto', a smaller eta or a larger eta_decay, or scale X "
                        "(e.g. with sklearn.preprocessing.StandardScaler)")

    # learners whose update takes per-step weights (docs/algorithms.md, section 7.2)
    _supports_sample_weight = False

    def fit(self, X, y):
        """Learn the rows of X in order, from a fresh model (one online pass)."""
        self._progressive_scores(X, y, reset=True, keep_scores=False)
        return self

    def partial_fit(self, X, y):
        """Continue the stream with the rows of X, in order.

        A call that raises (bad input, divergence) leaves the model exactly as it was.
        """
        self._progressive_scores(X, y, keep_scores=False)
        return self

    def _progressive_scores(self, X, y, classes=None, reset=False, sample_weight=None,
                            keep_scores=True):
        """Learn the rows in order; return f_t(x_t) for each, computed before its update
        (None without `keep_scores`: fit and partial_fit keep no scores of the whole chunk,
        k per row with k classes)."""
        if not reset and classes is None and sample_weight is None and "t_" in self.__dict__:
            with _locks.locked(self):
                taken, scores = self._one_row(X, y)
            if taken:
                return scores
        with _locks.locked(self), transaction(self) as guarded:
            first = reset or not hasattr(self, "t_")
            validate = first or params_changed(self)
            if validate:
                self._validate_params()
                if not first:
                    _check_unchanged(self)
                if first:
                    self.__dict__.pop("_one_event_state", None)     # a fresh stream of events
                if reset:
                    forget_names(self)      # and fit's X fixes the features, not old dicts
            X, y = self._check_X_y(X, y, reset=first)
            weight = check_sample_weight(self, sample_weight, X.shape[0], fresh=reset)
            if first:
                check_memory(self, X.shape[1])      # before anything of that size is made
                self._start(X, y)
            y = self._targets(y, classes, first)
            for model in self._models():
                guarded.append((model, model.checkpoint(X.shape[0])))
            try:
                scores = self._learn_all(X, y, weight, keep_scores)
            except Diverged as failure:
                step = f"t={self.t_ + failure.step + 1}"
                if failure.eta is not None:
                    step += f" (eta_t={failure.eta:.3g})"
                cure = _huge_row(X) or self._divergence_cure
                raise FloatingPointError(
                    f"{type(self).__name__} diverged at step {step}: the model is no longer "
                    f"finite. {cure[0].upper()}{cure[1:]}. "
                    "The model is left as it was before this call.") from None
            self._check_size()
            if validate:
                params_validated(self)
            return scores

    def _learn_all(self, X, y, weight, keep_scores=True):
        """`_learn` over the chunk; with `verbose`, in stretches of rows behind a progress bar;
        without `keep_scores` (fit, partial_fit), in stretches whose scores take at most
        SCORE_VALUES values (k classes: k per row), dropped as they go (None is returned).

        The stretches give the same iterates (schedules are per step), and the
        template's checkpoints cover the whole chunk, so the call stays all-or-nothing.
        """
        args = () if weight is None else (weight,)
        verbose = getattr(self, "verbose", False)
        n = X.shape[0]
        classes = len(self.__dict__.get("classes_", ()))
        stretch = n if keep_scores else max(1, SCORE_VALUES // (classes if classes >= 3 else 1))
        shown = verbose is not False and n > VERBOSE_STRETCH
        if shown:
            stretch = min(stretch, VERBOSE_STRETCH)
        if stretch >= n:
            scores = self._learn(X, y, *args)
            return scores if keep_scores else None
        parts = []
        with progress(total=n, desc=type(self).__name__, unit="sample",
                      verbose=(None if verbose is None else bool(verbose)) if shown
                      else False) as bar:
            for lo in range(0, n, stretch):
                rows = slice(lo, lo + stretch)
                scores = self._learn(X[rows], y[rows], *(a[rows] for a in args))
                if keep_scores:
                    parts.append(scores)
                bar.update(len(X[rows]))
        return None if not parts or parts[0] is None else np.concatenate(parts)

    def _check_state(self, check):
        """okl.load: check the fitted state `check` read against this estimator's parameters.

        Fills `check.out` (a `okl._persist.StateCheck`) with the attributes to set and
        returns {name: (model type, state)} of the model objects to build; every failure
        is `check.fail(...)`, naming the field (docs/guide/persistence.md).
        """
        check.fail(f"okl.load does not know the fitted state of {type(self).__name__}")

    def _fitted_with(self):
        """[(parameter, value the fitted model was built with)]: these cannot change
        between partial_fit calls (fit starts again with the new values)."""
        return []

    def _unhonoured(self):
        """The parameters changed (set_params) since fit that the model cannot take, named
        with both values: partial_fit and okl.save refuse them (fit starts again)."""
        return unhonoured(self)

    def _check_size(self):
        """Warn once when the model passes a size that slows every step (see okl._warnings)."""

    def _takes_one_row(self):
        """Whether a one-row chunk may take the compiled one-event step (`_one_row`)."""
        return hasattr(self, "_loss_spec") and self.engine == "cython"

    def _one_row(self, X, y):
        """A one-row chunk through the compiled one-event step: (True, f_t(x_t) as an array of
        one, or None for a learner without scores), or (False, None) where it does not apply.

        Same iterates as the chunk loop; O(d) checks instead of scikit-learn's
        validation, which costs far more than the step.
        """
        if not self._takes_one_row():
            return False, None
        row = one_row(self, X)
        if row is None or not _one_target(y):
            return False, None
        existed = "_one_event_state" in self.__dict__
        try:
            adapter = self._one_event()
            events = adapter._fast()
            if events is None:
                if not existed:
                    del self.__dict__["_one_event_state"]
                return False, None
            target = y[0]
            if adapter._kinds()[3]:         # labels: through their codes
                target = adapter._sign(target.item() if isinstance(target, np.generic) else target)
                if target is None:          # a new label: the template adds it
                    if not existed:
                        del self.__dict__["_one_event_state"]
                    return False, None
            else:
                target = check_label(self, target)
            f = self._learn_event(events, row, target)
            return True, None if f is None else np.array([f])
        except BaseException:
            if not existed:
                self.__dict__.pop("_one_event_state", None)    # a failed call adds nothing
            raise

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
