"""Online preprocessing: a standard scaler that learns from a stream.

`OnlineStandardScaler` keeps the exact running mean and variance of every
feature (Welford's update for one event, Chan-Golub-LeVeque's merge for a
chunk), so its statistics after any split of a stream into chunks and events
equal the batch mean and variance of everything seen, up to rounding.
"""
from collections.abc import Mapping
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from okl import _locks
from okl._base import params_changed, params_validated, transaction
from okl._core._event import standardized_row, welford_row
from okl._params import BOOL, NONE, Interval, Options, validate_params
from okl._persist import loadable
from okl._rows import UNKNOWN_FEATURES, check_row, commit_names, forget_names

# a standard deviation below this is a constant feature, scaled by 1 (scikit-learn's rule)
_TINY_SCALE = 10 * np.finfo(np.float64).eps
_LARGEST = 1e150    # |x| the scaler takes: two such values' squared deviation stays finite


def _scale_of(var):
    scale = np.sqrt(var)
    scale[scale < _TINY_SCALE] = 1.0
    return scale


@loadable
class OnlineStandardScaler(_locks.LockedState, OneToOneFeatureMixin, TransformerMixin,
                           BaseEstimator):
    """Standardize features with running means and variances, one chunk or one event at a time.

    ``z = (x - mean_) / scale_``, with ``mean_`` and ``var_`` (population
    variance, ``ddof=0``) those of every row learned so far, exactly: one event
    is Welford's update, a chunk is merged with Chan, Golub and LeVeque's
    pairwise formula.  A feature of zero variance gets ``scale_ = 1`` (as
    scikit-learn's StandardScaler), so it maps to 0, never to inf.

    It follows scikit-learn (`fit`, `partial_fit`, `transform`,
    `inverse_transform`, `get_params`) and river (`learn_one`, `transform_one`)
    at once.  An event is a dict of feature name -> value or a 1-D array-like;
    the first call fixes the feature order (a missing key is 0; an unknown key
    raises unless ``unknown_features="ignore"``).  `transform_one` before any
    learning returns the event unchanged (mean 0, scale 1), as a stream's first
    prediction needs; the batch `transform` then raises NotFittedError.

    Parameters
    ----------
    with_mean : bool, default=True
        Subtract the running mean.
    with_std : bool, default=True
        Divide by the running standard deviation.
    unknown_features : {"error", "ignore"}, default="error"
        What a dict event with a key not seen on the first call does: raise,
        or drop the key.
    freeze_after : int >= 1 or None, default=None
        Learn the moments of the first ``freeze_after`` rows only, then hold
        them: later rows are still checked and transformed, not learned, so a
        learner downstream sees one scaling of the stream once it has settled
        (a model that never forgets, such as `okl.KernelRLSRegressor`'s linear
        kernel, fits rows of moving scalings worse: docs/krls.md, section 9).
        None learns from every row.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When the first call was a DataFrame (a first dict fixes the order of
        its keys privately).
    n_samples_seen_ : int
        Rows learned so far (at most ``freeze_after``).
    mean_, var_ : ndarray of shape (n_features_in_,)
        Running mean and population variance of every feature.
    scale_ : ndarray of shape (n_features_in_,)
        ``sqrt(var_)``, with 1 for constant features (None when with_std=False).

    References
    ----------
    B. P. Welford, "Note on a method for calculating corrected sums of squares
    and products", Technometrics 4(3), 1962.
    T. F. Chan, G. H. Golub and R. J. LeVeque, "Updating formulae and a pairwise
    algorithm for computing sample variances", Stanford CS report STAN-CS-79-773, 1979.

    Examples
    --------
    >>> import numpy as np
    >>> from okl.preprocessing import OnlineStandardScaler
    >>> scaler = OnlineStandardScaler()
    >>> for x in ({"a": 1.0, "b": 10.0}, {"a": 3.0, "b": 30.0}):
    ...     scaler.learn_one(x)
    >>> scaler.transform_one({"a": 3.0, "b": 10.0})
    {'a': 1.0, 'b': -1.0}
    >>> OnlineStandardScaler().partial_fit(np.array([[1.0, 10.0], [3.0, 30.0]])).mean_
    array([ 2., 20.])
    """

    _parameter_constraints = {
        "with_mean": [BOOL],
        "with_std": [BOOL],
        "unknown_features": [Options(*UNKNOWN_FEATURES)],
        "freeze_after": [NONE, Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, with_mean=True, with_std=True, unknown_features="error",
                 freeze_after=None):
        self.with_mean = with_mean
        self.with_std = with_std
        self.unknown_features = unknown_features
        self.freeze_after = freeze_after

    # -- learning ------------------------------------------------------------------------

    def _start(self, n_features):
        self.n_features_in_ = n_features
        self.n_samples_seen_ = 0
        self.mean_ = np.zeros(n_features)
        self.var_ = np.zeros(n_features)
        self._m2 = np.zeros(n_features)          # sum of squared deviations from the mean
        self.scale_ = np.ones(n_features) if self.with_std else None

    def fit(self, X, y=None):
        """Mean and variance of the rows of X, from scratch."""
        with _locks.locked(self), transaction(self):
            self._clear()
            return self.partial_fit(X)

    def _clear(self):
        forget_names(self)
        for name in ("n_features_in_", "n_samples_seen_", "mean_", "var_", "_m2", "scale_"):
            self.__dict__.pop(name, None)

    def partial_fit(self, X, y=None):
        """Merge the rows of X into the running mean and variance (up to
        ``freeze_after`` rows in all).

        A call that raises (NaN/inf, a changed number of features) leaves the
        scaler as it was.
        """
        with _locks.locked(self), transaction(self):
            first = not hasattr(self, "n_samples_seen_")
            self._validate_params()
            X = self._check_X(X, reset=first)
            if first:
                self._start(X.shape[1])
            self._merge(X[:self._room(X.shape[0])])
        return self

    def _room(self, n):
        """How many of n new rows are learned: all, or those before ``freeze_after``."""
        if self.freeze_after is None:
            return n
        return min(n, max(self.freeze_after - self.n_samples_seen_, 0))

    def _merge(self, X):
        """Chan et al.'s merge of the chunk's mean and M2 into the running ones."""
        n_b = X.shape[0]
        if n_b == 0:
            return
        _refuse_huge(X)
        with np.errstate(over="ignore", invalid="ignore"):      # `_set` refuses a non-finite
            mean_b = X.mean(axis=0)
            m2_b = ((X - mean_b) ** 2).sum(axis=0)
            n_a = self.n_samples_seen_
            n = n_a + n_b
            delta = mean_b - self.mean_
            mean = self.mean_ + delta * (n_b / n)
            m2 = self._m2 + m2_b + delta * delta * (n_a * n_b / n)
        self._set(n, mean, m2)

    def _set(self, n, mean, m2):
        with np.errstate(over="ignore", invalid="ignore"):
            bad = ~(np.isfinite(mean) & np.isfinite(m2))
        if bad.any():
            raise _variance_error(int(np.argmax(bad)), "its values (or their squared "
                                  "deviations) pass the largest float64, 1.8e308")
        var = m2 / n
        scale = _scale_of(var) if self.with_std else None
        # every value is computed before the first assignment: the update is atomic
        self.n_samples_seen_, self.mean_, self._m2, self.var_, self.scale_ = (
            n, mean, m2, var, scale)

    def learn_one(self, x):
        """Welford's update with one event (a dict or a 1-D row); returns None (river)."""
        with _locks.locked(self), transaction(self):
            first = not hasattr(self, "n_samples_seen_")
            self._validate_params()
            row, names = check_row(self, x)
            if first:
                self._start(row.shape[0])
            if not self._room(1):       # past freeze_after: checked, not learned
                commit_names(self, names)
                return
            _refuse_huge(row[None, :])
            n = self.n_samples_seen_ + 1
            with np.errstate(over="ignore", invalid="ignore"):  # `_set` refuses a non-finite
                delta = row - self.mean_
                mean = self.mean_ + delta / n
                m2 = self._m2 + delta * (row - mean)
            self._set(n, mean, m2)
            commit_names(self, names)

    def _ready(self):
        """True when a ready row may take the one-pass methods below: fitted, and its
        parameters those it was last validated with."""
        return "n_samples_seen_" in self.__dict__ and _locks.validated(self)

    def _learn_row(self, row):
        """`learn_one` then `transform_one` of a ready float64 row, in one pass in C
        (`okl._core._event.welford_row`, the same floats): the standardized row, or None,
        changing nothing, where `learn_one` must decide (a bad value).  For a `_ready`
        scaler under its lock (okl.pipeline's one-event path, docs/streaming.md)."""
        n = self.n_samples_seen_ + 1
        if self.freeze_after is not None and n > self.freeze_after:      # `_room`
            return self._transform_row(row)
        out = welford_row(row, self.mean_, self._m2, n, self.with_mean, self.with_std,
                          _LARGEST, _TINY_SCALE)
        if out is None:
            return None
        self.n_samples_seen_, self.mean_, self._m2, self.var_, self.scale_, row = (n, *out)
        return row

    def _transform_row(self, row):
        """`transform_one` of a ready float64 row in one pass in C, or None where it must
        decide (a non-finite value); for a `_ready` scaler under its lock."""
        return standardized_row(row, self.mean_, self.scale_, self.with_mean, self.with_std)

    # -- okl.save / okl.load ---------------------------------------------------------------

    _counters = ("n_features_in_", "n_samples_seen_")       # okl.load's (okl._persist)

    def _validate_params(self):
        """Check the parameters when one changed since the last call (set_params); scale_
        then follows with_std, so a change is honoured at once, and by okl.save."""
        if params_changed(self):
            validate_params(self)
            if "var_" in self.__dict__:
                self.scale_ = _scale_of(self.var_) if self.with_std else None
            params_validated(self)

    def _check_state(self, check):
        """okl.load's checks: the mean and M2 of n_samples_seen_ rows; var_ and scale_ must be
        what they give."""
        attrs, out = check.attrs, check.out
        d, n = out["n_features_in_"], out["n_samples_seen_"]
        check.keys(attrs, ("n_features_in_", "n_samples_seen_", "mean_", "var_", "_m2",
                           "scale_"), "OnlineStandardScaler's attributes",
                   optional=("_row_keys",))
        if n < 1:
            check.fail("n_samples_seen_ is 0, but a fitted scaler has seen a row")
        out["mean_"] = check.array(attrs["mean_"], "mean_", (d,))
        m2 = out["_m2"] = check.array(attrs["_m2"], "_m2", (d,))
        if np.any(m2 < 0):
            check.fail("_m2 holds a negative sum of squares")
        out["var_"] = m2 / n
        out["scale_"] = _scale_of(out["var_"]) if self.with_std else None
        if not np.array_equal(check.array(attrs["var_"], "var_", (d,)), out["var_"]):
            check.fail("var_ is not _m2 / n_samples_seen_")
        if self.with_std:
            if not np.array_equal(check.array(attrs["scale_"], "scale_", (d,)), out["scale_"]):
                check.fail("scale_ is not the standard deviation var_ gives")
        elif attrs["scale_"] is not None:
            check.fail("scale_ is stored, but with_std=False keeps none")
        check.row_keys()
        return {}

    def _check_X(self, X, reset):
        if sp.issparse(X):
            raise TypeError("OnlineStandardScaler takes dense input only (a sparse matrix "
                            "would be densified by centring); use with_mean=False in "
                            "sklearn.preprocessing.StandardScaler for sparse data.")
        if (not reset and type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2
                and X.shape[1] == self.n_features_in_ and X.shape[0] > 0
                and "feature_names_in_" not in self.__dict__ and np.isfinite(X).all()):
            return X
        return validate_data(self, X, reset=reset, dtype=np.float64)

    # -- transforming --------------------------------------------------------------------

    def _apply(self, X):
        if self.with_mean:
            X = X - self.mean_
        if self.with_std:
            X = X / self.scale_
        return X

    @_locks.serialised
    def transform(self, X, copy=None):
        """(X - mean_) / scale_ for every row of X."""
        check_is_fitted(self, "n_samples_seen_")
        self._validate_params()
        X = self._check_X(X, reset=False)
        return np.array(self._apply(X), dtype=np.float64, order="C", copy=True)

    @_locks.serialised
    def inverse_transform(self, X, copy=None):
        """X * scale_ + mean_: the rows in their original units."""
        check_is_fitted(self, "n_samples_seen_")
        self._validate_params()
        X = np.array(validate_data(self, X, reset=False, dtype=np.float64), copy=True)
        if self.with_std:
            X *= self.scale_
        if self.with_mean:
            X += self.mean_
        return X

    @_locks.serialised
    def transform_one(self, x):
        """One event standardized: a dict for a dict (keyed like the first event), else a row.

        Before any learning the event comes back unchanged (as floats).
        """
        if not hasattr(self, "n_samples_seen_"):
            row, names = check_row(self, x)
            return dict(zip(names, row.tolist())) if names is not None else row.copy()
        self._validate_params()
        row, _ = check_row(self, x)
        z = self._apply(row)
        if isinstance(x, Mapping):
            return dict(zip(self._keys(), z.tolist()))
        return z

    def _keys(self):
        keys = self.__dict__.get("_row_keys")
        if keys is None:
            keys = tuple(self.feature_names_in_.tolist())
        return keys

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


def _refuse_huge(X):
    """Refuse a value the running variance could not carry beside any other: accepted, it
    would make every later chunk overflow (the scaler would refuse all of them)."""
    huge = np.abs(X) > _LARGEST
    if huge.any():
        j = int(np.argmax(huge.any(axis=0)))
        raise _variance_error(j, f"a value of {X[:, j][huge[:, j]][0]:.3g} is beyond "
                              f"+-{_LARGEST:.0e}, whose squared deviations from other values "
                              "pass the largest float64, 1.8e308")


def _variance_error(j, why):
    return ValueError(
        f"OnlineStandardScaler cannot hold the variance of feature {j}: {why}. Divide X by a "
        "constant first (e.g. X / 1e150); the scaler is left as it was.")
