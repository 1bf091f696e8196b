"""Online conformal prediction: intervals and prediction sets with a coverage guarantee.

`ConformalRegressor` and `ConformalClassifier` wrap a learner and learn, on
the stream, a threshold on a nonconformity score: each event's score is
taken from the prediction made before the learner learns the event, then
both learn.  Adaptive conformal inference keeps the long-run miscoverage at
`alpha` on any sequence; the default aggregates it over step sizes
(docs/conformal.md).

References
----------
See docs/conformal.md.

.. [1] I. Gibbs and E. Candes, "Adaptive conformal inference under
   distribution shift", NeurIPS 2021.
.. [2] A. N. Angelopoulos, E. J. Candes and R. J. Tibshirani, "Conformal PID
   control for time series prediction", NeurIPS 2023.
.. [3] M. Zaffran, O. Feron, Y. Goude, J. Josse and A. Dieuleveut, "Adaptive
   conformal predictions for time series", ICML 2022.
"""
import copy
import inspect
import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin, clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags

from okl import _locks
from okl._base import (
    OnlineLearner, _check_unchanged, params_validated, check_X, check_X_y, params_changed,
    transaction,
)
from okl._core import _conformal
from okl._core._conformal import Calibration
from okl._numpy.conformal import Method, NumpyCalibration
from okl._labels import LabelsMixin
from okl._one_event import OneEventMixin, rebound
from okl._params import Interval, InvalidParameterError, Kind, Options
from okl._persist import loadable
from okl._rows import check_label, check_row

METHODS = {"aci": Method.ACI, "quantile": Method.QUANTILE, "agaci": Method.AGACI,
           "pid": Method.PID}
# gamma="auto": Gibbs and Candes' step for ACI; the quantile tracker's step is relative to
# the largest recent score; AgACI's experts span the steps (docs/conformal.md, "Defaults")
AUTO_GAMMA = {"aci": (0.005,), "quantile": (0.01,), "pid": (0.01,),
              "agaci": (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)}
# integrator="auto": the PID integrator's gain K_I (in units of the largest recent score) and
# saturation constant C_sat (docs/conformal.md, "Conformal PID")
AUTO_INTEGRATOR = (1.0, 1.0)
CALIBRATIONS = {"cython": Calibration, "numpy": NumpyCalibration}
SCORES = ("auto", "absolute", "normalized", "quantile")
# nonconformity="normalized": the calibration takes the score of an event the learner predicts
# having learned at least this many events; before, its spread has no unit (docs/conformal.md,
# "Scores"); the compiled one-event path leaves the wrapper's first events to the Python one
SPREAD_EVENTS = _conformal.SPREAD_EVENTS
LEARNERS = ("estimator_", "lower_", "upper_")       # the learners a wrapper owns


def _sequence(value):
    """A tuple, list or 1-d array (okl.load gives a saved sequence back as an array)."""
    return isinstance(value, (tuple, list)) or isinstance(value, np.ndarray) and value.ndim == 1


def _steps(value):
    return _sequence(value) and len(value) > 0 and all(
        Interval(Real, 0, 1).is_satisfied_by(g) for g in value)


def _gains(value):
    return _sequence(value) and len(value) == 2 and all(
        Interval(Real, 0, None, closed="neither").is_satisfied_by(g) for g in value)


COMMON_CONSTRAINTS = {
    "estimator": [Kind(lambda v: v is None or hasattr(v, "get_params"),
                       "None or an estimator (an okl learner, or one with partial_fit)")],
    "alpha": [Interval(Real, 0, 1, closed="neither")],
    "method": [Options(*METHODS)],
    "gamma": [Options("auto"), Interval(Real, 0, 1),
              Kind(_steps, "a sequence of floats in [0, 1]")],
    "window": [Interval(Integral, 1, 10 ** 6)],
    "integrator": [Options("auto"), Kind(_gains, "a pair (K_I, C_sat) of floats > 0")],
    "engine": [Options("cython", "numpy")],
}


def returns_std(estimator):
    """True when `estimator.predict` takes ``return_std`` (a predictive standard deviation)."""
    try:
        return "return_std" in inspect.signature(estimator.predict).parameters
    except (AttributeError, TypeError, ValueError):
        return False


class _DictGuard:
    """Checkpoint / restore of a wrapped learner for the all-or-nothing template: its
    attributes (copied deeply for a learner okl does not know) and its model objects."""

    def __init__(self, estimator):
        self.estimator = estimator

    def checkpoint(self, n=0):
        est = self.estimator
        if isinstance(est, OnlineLearner):
            models = [(m, m.checkpoint(n)) for m in est._models()] if hasattr(est, "t_") else []
            return dict(est.__dict__), models
        return copy.deepcopy(est.__dict__), []

    def restore(self, token):
        saved, models = token
        for model, state in reversed(models):
            model.restore(state)
        est = self.estimator
        est.__dict__.clear()
        est.__dict__.update(saved)
        rebound(est)


class _ConformalBase(OnlineLearner):
    """What the conformal regressor and classifier share: parameters, calibration, state."""

    _parameter_constraints = COMMON_CONSTRAINTS

    def _gammas(self):
        g = AUTO_GAMMA[self.method] if isinstance(self.gamma, str) else self.gamma
        g = (float(g),) if isinstance(g, Real) else tuple(float(v) for v in g)
        if self.method != "agaci" and len(g) != 1:
            raise InvalidParameterError(
                f"method={self.method!r} takes one step gamma, got {len(g)}; "
                "method='agaci' aggregates several.")
        return g

    def _validate_params(self):
        super()._validate_params()
        self._gammas()

    def _integrator(self):
        gains = AUTO_INTEGRATOR if isinstance(self.integrator, str) else self.integrator
        return tuple(float(g) for g in gains)

    def _new_calibration(self):
        return CALIBRATIONS[self.engine](METHODS[self.method], float(self.alpha), self._gammas(),
                                         int(self.window), *self._integrator())

    def _fitted_with(self):
        return [(name, getattr(self, "_fitted_" + name)) for name in (
            "alpha", "method", "gamma", "window", "integrator", "engine")
            if "_fitted_" + name in self.__dict__]

    def _remember_params(self):
        for name in ("alpha", "method", "gamma", "window", "integrator", "engine"):
            self.__dict__["_fitted_" + name] = getattr(self, name)

    def _models(self):
        guards = [self.calibration_] if "calibration_" in self.__dict__ else []
        return guards + [_DictGuard(est) for est in self._learners()]

    def _learners(self):
        return [self.__dict__[k] for k in LEARNERS if k in self.__dict__]

    def _share_lock(self, name, value, fresh=False):
        """A learner bound as `name` takes the wrapper's lock (`_locks.share`: when it has none
        yet, or is `fresh`, a clone or a loaded copy only this call holds): a one-event call
        then takes one lock, the learner's own taking a count, and no thread interleaves with
        an event of either."""
        if name in LEARNERS and isinstance(value, _locks.LockedState):
            _locks.share(self, value, fresh)

    def _own(self, name, learner):
        """Bind a learner this call built (a clone, a copy) as `name`: it takes the wrapper's
        lock (`_share_lock`)."""
        _locks.share(self, learner, fresh=True)
        setattr(self, name, learner)

    def __setstate__(self, state):
        super().__setstate__(state)
        for name in LEARNERS:
            if name in self.__dict__:
                self._share_lock(name, self.__dict__[name])

    @property
    def threshold_(self):
        """q_t: the score threshold of the next prediction (inf before any event)."""
        return self.calibration_.threshold()

    _uncopied = ("_last",)      # the one-event cache: copies and pickles go without it

    @classmethod
    def _state_classes(cls):
        return (Calibration, NumpyCalibration)

    def _learner_tags(self, tags):
        """The learner's tags where the wrapper answers as it does (its predictions are the
        learner's); dense input only.  Each wrapper's `__sklearn_tags__` ends with it (after
        the scikit-learn mixin's own tags)."""
        tags.input_tags.sparse = False
        base = get_tags(self._base())
        for kind in ("regressor_tags", "classifier_tags"):
            mine, theirs = getattr(tags, kind), getattr(base, kind)
            if mine is not None and theirs is not None:
                mine.poor_score = theirs.poor_score
        return tags



@loadable
class ConformalRegressor(RegressorMixin, _ConformalBase):
    """Prediction intervals with a long-run coverage guarantee, learned on the stream.

    Wraps a regressor and learns the threshold q_t of a nonconformity score:
    the interval of an event is ``f(x) -+ q_t * sigma(x)``, ``sigma`` the
    learner's predictive standard deviation where it gives one (else 1), or
    ``[lo(x) - q_t, hi(x) + q_t]`` around a pinball pair (``nonconformity="quantile"``).
    Each event's score is taken from the prediction made before the learner
    learns the event; the threshold then moves so that the fraction of
    misses tends to `alpha` on any sequence (docs/conformal.md).

    One event at a time: `predict_interval_one(x)`, `predict_one(x)`,
    `learn_one(x, y)`; chunks: `predict_interval(X)`, `predict(X)`,
    `partial_fit(X, y)`; same iterates either way.  The prediction made by
    `predict_one` or `predict_interval_one` serves the `learn_one` of the same
    event (predict-then-learn predicts once).

    Parameters
    ----------
    estimator : regressor, default=None
        An okl regressor (any learner with `partial_fit` and `predict` also
        works); None is ``KernelRLSRegressor()``, whose predictive standard
        deviation normalises the scores (docs/conformal.md, section 6).  It is
        cloned by the first learning call (`calibrate` keeps a fitted one's
        fit).
    alpha : float in (0, 1), default=0.1
        Target miscoverage: intervals hold 1 - alpha of the targets.
    method : {"agaci", "aci", "quantile", "pid"}, default="agaci"
        "aci": adaptive conformal inference (Gibbs and Candes); "quantile":
        quantile tracking of the threshold, the proportional part of
        conformal PID control (Angelopoulos, Candes and Tibshirani); "pid":
        quantile tracking plus that paper's saturated integrator of the
        misses; "agaci": ACI over several steps, aggregated (Zaffran et al.).
    gamma : "auto", float or sequence of floats in [0, 1], default="auto"
        The step: of alpha_t for "aci" (auto: 0.005, the paper's; 0 is split
        conformal, the threshold the conformal quantile of the window), of
        q_t in units of the largest recent score for "quantile" and "pid"
        (auto: 0.01),
        the steps of the experts for "agaci" (auto: 0.0005 to 0.1).
    window : int, default=1000
        Scores kept for the conformal quantile (the most recent ones).
    integrator : "auto" or (K_I, C_sat), default="auto"
        method="pid": the integrator
        ``K_I |B|_t tan(E_t log(t + 1) / (C_sat (t + 1)))`` of the summed
        excess of misses E_t, K_I in units of the window's largest absolute
        score |B|_t; "auto" is (1.0, 1.0) (docs/conformal.md, "Conformal PID").
    nonconformity : {"auto", "absolute", "normalized", "quantile"}, default="auto"
        "absolute": ``|y - f(x)|``; "normalized": ``|y - f(x)| / sigma(x)``
        with the learner's ``predict(X, return_std=True)`` (the calibration
        leaves out the scores of its first two events, before its spread has
        a unit); "quantile": the
        conformalised quantile regression score ``max(lo - y, y - hi)`` of two
        clones learning the alpha/2 and 1 - alpha/2 quantiles (a regressor
        with `loss` and `quantile` parameters).  "auto": "normalized" when
        the learner gives a standard deviation, else "absolute"
        (docs/conformal.md, "Scores").
    engine : {"cython", "numpy"}, default="cython"
        The engine of the calibration (the learner keeps its own).

    Attributes
    ----------
    estimator_ : the learner being learned
    lower_, upper_ : the pinball pair (nonconformity="quantile")
    calibration_ : the threshold's state (`threshold_` is q_t)
    score_ : str
        The score in use.
    t_ : int
        Events learned.
    n_features_in_ : int

    References
    ----------
    See docs/conformal.md.

    Examples
    --------
    >>> import numpy as np
    >>> from okl import ConformalRegressor, OnlineKernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, (2000, 1)); y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=2000)
    >>> model = ConformalRegressor(OnlineKernelRegressor(gamma=0.5), alpha=0.1).fit(X, y)
    >>> lower, upper = model.predict_interval(X[:3])
    >>> bool(np.all(lower < upper))
    True
    """

    _parameter_constraints = {**COMMON_CONSTRAINTS, "nonconformity": [Options(*SCORES)]}

    def __init__(self, estimator=None, alpha=0.1, method="agaci", gamma="auto", window=1000,
                 integrator="auto", nonconformity="auto", engine="cython"):
        self.estimator = estimator
        self.alpha = alpha
        self.method = method
        self.gamma = gamma
        self.window = window
        self.integrator = integrator
        self.nonconformity = nonconformity
        self.engine = engine

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        self._share_lock(name, value)
        if name in ("estimator", "alpha", "method", "gamma", "window", "integrator",
                    "nonconformity", "engine"):
            self.__dict__.pop("_last", None)        # the next event validates them

    # -- the template's hooks ---------------------------------------------------------------

    def _validate_params(self):
        super()._validate_params()
        base = self._base()
        if is_classifier(base):
            raise InvalidParameterError(
                f"ConformalRegressor wraps a regressor; {type(base).__name__} is a classifier: "
                "use okl.ConformalClassifier.")
        if self.nonconformity == "normalized" and not returns_std(base):
            raise InvalidParameterError(
                f"nonconformity='normalized' needs a learner whose predict takes return_std "
                f"(as okl.KernelRLSRegressor); {type(base).__name__} has none. Use "
                "nonconformity='absolute' or 'quantile'.")
        if self.nonconformity == "quantile" and not {"loss", "quantile"} <= set(base.get_params()):
            raise InvalidParameterError(
                f"nonconformity='quantile' learns a pinball pair of clones of the learner, "
                f"which needs `loss` and `quantile` parameters; {type(base).__name__} has none. "
                "Pass such a learner (as okl.OnlineKernelRegressor()), or use "
                "nonconformity='auto'.")

    def __sklearn_tags__(self):
        return self._learner_tags(super().__sklearn_tags__())

    def _base(self):
        if self.estimator is None:
            from okl.krls import KernelRLSRegressor
            return KernelRLSRegressor()
        return self.estimator

    def _resolved_score(self):
        if self.nonconformity != "auto":
            return self.nonconformity
        return "normalized" if returns_std(self._base()) else "absolute"

    def _start(self, X, y):
        self._remember_params()
        self._own("estimator_", clone(self._base()))
        self.score_ = self._resolved_score()
        if self.score_ == "quantile":
            half = float(self.alpha) / 2.0
            self._own("lower_", clone(self._base()).set_params(loss="pinball", quantile=half))
            self._own("upper_", clone(self._base()).set_params(loss="pinball",
                                                               quantile=1.0 - half))
        self.calibration_ = self._new_calibration()
        self.t_ = 0

    def _check_X_y(self, X, y, reset):
        return check_X_y(self, X, y, reset=reset)

    def _learn(self, X, y):
        skip = self._unscaled(len(y))
        pred, a, b = self._learn_base(X, y)
        scores = self._scores(y, pred, a, b)
        q = np.full(len(y), self.calibration_.threshold())
        self.calibration_.update(scores[skip:], q[skip:])
        self._chunk_bands = self._bands(pred, a, b, q)
        self.t_ += len(y)
        if "_last" in self.__dict__:
            self._last.invalidate()
        return pred

    def _unscaled(self, n, learns=True):
        """How many of the next n events' scores the calibration leaves out: with the
        normalised score, those the learner predicts having learned fewer than
        `SPREAD_EVENTS` events (before, its spread is its prior's, in no unit of the
        targets: KernelRLSRegressor estimates its scale from the residuals, the first at its
        second event).  Their intervals are the threshold's, infinite before any score.
        The learner's `t_` counts its events; a learner without one has learned the wrapper's
        (`calibrate`, where it `learns` none: it is fitted)."""
        if self.score_ != "normalized":
            return 0
        seen = getattr(self.estimator_, "t_", None)
        if seen is None:
            seen = self.t_ if learns else SPREAD_EVENTS
        if not learns:
            return n if int(seen) < SPREAD_EVENTS else 0
        return max(0, min(n, SPREAD_EVENTS - int(seen)))

    def _learn_base(self, X, y):
        """(f, a, b) before each row's update, the learners learning the rows: a = b = sigma
        (1 without one), or a = lo, b = hi of the pinball pair."""
        est = self.estimator_
        if self.score_ == "quantile":
            return (_learn_rows(est, X, y), _learn_rows(self.lower_, X, y),
                    _learn_rows(self.upper_, X, y))
        if self.score_ == "normalized":
            chunk = getattr(est, "_progressive_std", None)
            if chunk is not None:           # the learner's compiled chunks
                f, sd = chunk(X, y)
                return f, sd, sd
            f, sd = np.empty(len(y)), np.empty(len(y))
            for i in range(len(y)):
                f[i], sd[i] = _predict_std(est, X[i])
                est.learn_one(X[i], float(y[i]))
            return f, sd, sd
        one = np.ones(len(y))
        return _learn_rows(est, X, y), one, one

    def _scores(self, y, f, a, b):
        with np.errstate(all="ignore"):
            if self.score_ == "quantile":
                s = np.maximum(a - y, y - b)
            else:
                s = np.abs(y - f) / np.maximum(a, 1e-300)
        if not np.all(np.isfinite(s)):
            raise FloatingPointError(
                f"ConformalRegressor: the learner's predictions are no longer finite at step "
                f"t={self.t_ + int(np.argmin(np.isfinite(s))) + 1}; the model is left as it was. "
                "Scale X and y, or make the learner's steps smaller.")
        return s

    def _bands(self, f, a, b, q):
        """(lower, upper) from predictions and thresholds (an empty band: its midpoint)."""
        with np.errstate(invalid="ignore"):
            if self.score_ == "quantile":
                lo, hi = a - q, b + q
            else:
                lo, hi = f - q * a, f + q * b
        mid = 0.5 * (a + b) if self.score_ == "quantile" else f
        empty = ~(lo <= hi)
        lo, hi = np.where(empty, mid, lo), np.where(empty, mid, hi)
        infinite = np.isposinf(q)
        return np.where(infinite, -np.inf, lo), np.where(infinite, np.inf, hi)

    def _progressive_intervals(self, X, y):
        """Learn the rows; (f_t(x_t), lower, upper) of each, made before its update."""
        with _locks.locked(self):
            pred = super()._progressive_scores(X, y)
            lower, upper = self.__dict__.pop("_chunk_bands")
            return pred, lower, upper

    def _progressive_scores(self, X, y, classes=None, reset=False, sample_weight=None,
                            keep_scores=True):
        if sample_weight is not None:
            raise TypeError("ConformalRegressor takes no sample_weight: the calibration "
                            "counts events.")
        with _locks.locked(self):
            pred = super()._progressive_scores(X, y, reset=reset)
            self.__dict__.pop("_chunk_bands", None)
            return pred

    def _stream_loss(self, scores, y):
        """The squared error of the point predictions."""
        return (np.asarray(scores) - np.asarray(y, dtype=np.float64)) ** 2

    # -- predictions --------------------------------------------------------------------------

    def _check_fitted(self):
        if "calibration_" not in self.__dict__:
            raise NotFittedError("This ConformalRegressor has learned nothing yet: call fit, "
                                 "partial_fit or learn_one first.")

    def predict(self, X):
        """The learner's prediction f(x) for every row of X."""
        with _locks.locked(self):
            self._check_fitted()
            return np.asarray(self.estimator_.predict(self._X(X)), dtype=np.float64)

    def _X(self, X):
        return check_X(self, X, reset=False)

    def predict_interval(self, X):
        """(lower, upper): the interval of every row of X at the current threshold."""
        with _locks.locked(self):
            self._check_fitted()
            X = self._X(X)
            f, a, b = self._predict_base(X)
            return self._bands(f, a, b, np.full(len(f), self.calibration_.threshold()))

    def _predict_base(self, X):
        if self.score_ == "quantile":
            return (self.estimator_.predict(X), self.lower_.predict(X),
                    self.upper_.predict(X))
        if self.score_ == "normalized":
            f, sd = self.estimator_.predict(X, return_std=True)
            return np.asarray(f, dtype=np.float64), np.asarray(sd), np.asarray(sd)
        one = np.ones(X.shape[0])
        return np.asarray(self.estimator_.predict(X), dtype=np.float64), one, one

    # -- one event ------------------------------------------------------------------------

    def _event_prediction(self, x):
        """(f, a, b) for one event (a row or a dict), the learners' one-event predictions."""
        if self.score_ == "normalized":
            f, sd = _predict_std(self.estimator_, x)
            return f, sd, sd
        f = _predict_one(self.estimator_, x)
        if self.score_ == "quantile":
            return f, _predict_one(self.lower_, x), _predict_one(self.upper_, x)
        return f, 1.0, 1.0

    def _event_start(self, x):
        """A first event: validate, start the model (its width from x)."""
        self._validate_params()
        row, _ = check_row(self, x)
        self._start(row[None, :], None)
        self.n_features_in_ = row.shape[0]

    def _learn_one_python(self, x, y, sample_weight=1.0):
        """learn_one without the compiled path (the first event, another engine, a check)."""
        if sample_weight != 1.0:
            raise TypeError("ConformalRegressor.learn_one takes no sample_weight: the "
                            "calibration counts events.")
        with _locks.locked(self), transaction(self) as guarded:
            first = "calibration_" not in self.__dict__
            if first:
                self._event_start(x)
            elif params_changed(self):
                self._validate_params()
                _check_unchanged(self)
            for model in self._models():
                guarded.append((model, model.checkpoint(1)))
            f, a, b = self._cached_or_predicted(x)
            y = check_label(self, y)        # a missing target: its own message
            s = self._scores(np.array([y]), np.array([f]), np.array([a]), np.array([b]))[0]
            skip = self._unscaled(1)
            for est in self._learners():
                est.learn_one(x, y)
            if not skip:
                self.calibration_.learn(s)
            self.t_ += 1
            params_validated(self)
        self._ready_events()

    def _ready_events(self):
        """The one-event cache, and with it the compiled path where it applies (the cython
        engine, a learner with a one-event step, not the pinball pair)."""
        last = self.__dict__.get("_last")
        if last is None:
            last = self.__dict__["_last"] = _conformal.LastEvent(
                _locks.locked(self), self.score_ == "normalized",
                self.engine == "cython" and self.score_ != "quantile"
                and isinstance(self.estimator_, OnlineLearner))
        last.invalidate()

    def _cached_or_predicted(self, x):
        last = self.__dict__.get("_last")
        if last is not None:
            hit = last.match(x, self.estimator_)
            if hit is not None:
                return hit
        return self._event_prediction(x)

    def _predict_interval_python(self, x):
        with _locks.locked(self):
            if "calibration_" not in self.__dict__:
                return (-math.inf, math.inf)
            f, a, b = self._event_prediction(x)
            self._ready_events()
            self.__dict__["_last"].store(x, self.estimator_, f, a, b)
            lo, hi = self._bands(np.array([f]), np.array([a]), np.array([b]),
                                 np.array([self.calibration_.threshold()]))
            return float(lo[0]), float(hi[0])

    def _predict_one_python(self, x):
        with _locks.locked(self):
            if "calibration_" not in self.__dict__:
                return 0.0
            f, a, b = self._event_prediction(x)
            self._ready_events()
            self.__dict__["_last"].store(x, self.estimator_, f, a, b)
            return float(f)

    learn_one = _conformal.learn_one
    predict_one = _conformal.predict_one
    predict_interval_one = _conformal.predict_interval_one

    # -- split conformal --------------------------------------------------------------------

    def calibrate(self, X, y):
        """Calibrate the threshold on held-out rows, the learner unchanged (split conformal).

        An unfitted wrapper takes a copy of the fitted `estimator` as it is.
        """
        with _locks.locked(self):
            with transaction(self) as guarded:
                if "calibration_" not in self.__dict__:
                    self._validate_params()
                    self._remember_params()
                    self._own("estimator_", copy.deepcopy(self._base()))
                    self.score_ = self._resolved_score()
                    if self.score_ == "quantile":
                        raise ValueError("calibrate needs nonconformity='absolute' or 'normalized' "
                                         "(a pinball pair is learned on the stream).")
                    self.calibration_ = self._new_calibration()
                    self.t_ = 0
                    X, y = check_X_y(self, X, y, reset=True)
                else:
                    X, y = check_X_y(self, X, y, reset=False)
                guarded.append((self.calibration_, self.calibration_.checkpoint()))
                f, a, b = self._predict_base(X)
                scores = self._scores(y, f, a, b)[self._unscaled(len(y), learns=False):]
                self.calibration_.update(scores, np.empty(len(scores)))
                self.__dict__.pop("_last", None)
        return self

    def _check_state(self, check):
        return _check_conformal_state(self, check)


def _predict_one(est, x):
    if not hasattr(est, "predict_one"):
        row = np.asarray(x, dtype=np.float64)[None, :]
        try:
            return float(est.predict(row)[0])
        except NotFittedError:
            return 0.0
    return float(est.predict_one(x))


def _predict_std(est, x):
    try:
        f, sd = est.predict_one(x, return_std=True)
    except NotFittedError:      # nothing learned: its score is left out (`_unscaled`)
        return 0.0, 1.0
    return float(f), float(sd)


def _learn_rows(est, X, y):
    """est learns the rows in order; its prediction for each, made before its update."""
    if isinstance(est, OnlineLearner):
        return np.asarray(est._progressive_scores(X, y), dtype=np.float64)
    out = np.empty(len(y))
    for i in range(len(y)):
        row = X[i:i + 1]
        try:
            out[i] = float(np.asarray(est.predict(row)).ravel()[0])
        except NotFittedError:
            out[i] = 0.0
        est.partial_fit(row, y[i:i + 1])
    return out


def _check_conformal_state(est, check):
    """okl.load: the wrapper's fitted state (its learners are nested estimators)."""
    attrs = check.attrs
    for key in ("score_",):
        if attrs.get(key) not in SCORES[1:]:
            check.fail(f"{key} = {attrs.get(key)!r} is not a score")
        check.out[key] = attrs[key]
    for name in ("alpha", "method", "gamma", "window", "integrator", "engine"):
        key = "_fitted_" + name
        value = attrs.get(key)
        if isinstance(value, list):
            value = tuple(value)
        if key in attrs:
            check.out[key] = value
    learners = ["estimator_"] + (["lower_", "upper_"] if attrs["score_"] == "quantile" else [])
    for key in learners:
        learner = attrs.get(key)
        if learner is None or not hasattr(learner, "get_params"):
            check.fail(f"the learner {key} is missing")
        width = getattr(learner, "n_features_in_", check.out["n_features_in_"])
        check.equal(width, check.out["n_features_in_"], f"{key}.n_features_in_")
        _locks.share(est, learner, fresh=True)     # built by okl.load: it alone holds it
        check.out[key] = learner
    kind, state = check.model("calibration_", ("Calibration", "NumpyCalibration"))
    want = "Calibration" if est.engine == "cython" else "NumpyCalibration"
    check.equal(kind, want, "calibration_'s engine")
    state = _check_calibration(check, state, est)
    return {"calibration_": (kind, state)}


def _check_calibration(check, state, est):
    from okl._numpy.conformal import ARRAYS, SCALARS
    check.keys(state, SCALARS + ARRAYS, "the calibration")
    check.equal(int(state["method"]), int(METHODS[est.method]), "calibration_.method")
    check.equal(float(state["alpha"]), float(est.alpha), "calibration_.alpha")
    ki, csat = est._integrator()
    check.equal(float(state["ki"]), ki, "calibration_.ki")
    check.equal(float(state["csat"]), csat, "calibration_.csat")
    if not math.isfinite(float(state["integral"])):
        check.fail("calibration_.integral must be finite")
    w = check.int(state["window"], "calibration_.window", 1, 10 ** 6)
    check.equal(w, int(est.window), "calibration_.window")
    t = check.int(state["t"], "calibration_.t")
    n = check.int(state["n"], "calibration_.n", 0, min(w, t))
    head = check.int(state["head"], "calibration_.head", 0, w - 1)
    gammas = check.array(state["gammas"], "calibration_.gammas", (None,))
    check.equal(tuple(gammas.tolist()), est._gammas(), "calibration_.gammas")
    k = len(gammas)
    out = dict(state, method=int(state["method"]), window=w, t=t, n=n, head=head, gammas=gammas)
    for name in ("levels", "regret", "variance", "range"):
        out[name] = check.array(state[name], f"calibration_.{name}", (k,))
    ring = out["ring"] = check.array(state["ring"], "calibration_.ring", (w,))
    srt = out["sorted"] = check.array(state["sorted"], "calibration_.sorted", (w,))
    if np.any(np.diff(srt[:n]) < 0) or not np.array_equal(
            np.sort(ring[:n] if n < w else ring), srt[:n]):
        check.fail("calibration_.sorted is not the sorted window of calibration_.ring")
    if np.any(out["variance"] < 0) or np.any(out["range"] < 0):
        check.fail("calibration_.variance and range must be >= 0")
    return out


@loadable
class ConformalClassifier(ClassifierMixin, _ConformalBase):
    """Prediction sets with a long-run coverage guarantee, learned on the stream.

    Wraps a classifier and learns the threshold q_t of the score
    ``1 - p(y | x)``: the set of an event holds every label whose probability
    is at least ``1 - q_t``, and q_t moves (as in `ConformalRegressor`) so
    that the fraction of events whose label is outside its set tends to
    `alpha` on any sequence (docs/conformal.md).  The probabilities are the
    learner's ``predict_proba`` where it has one, else the logistic (two
    labels) or the softmax of its decision scores.

    One event at a time: `predict_set_one(x)` (a set of labels),
    `predict_one(x)`, `learn_one(x, y)`; chunks: `predict_set(X)` (a boolean
    array, one column per label of `classes_`), `predict(X)`,
    `partial_fit(X, y)`.

    Parameters
    ----------
    estimator : classifier, default=None
        An okl classifier; None is ``OnlineKernelClassifier(loss="logistic")``.
    alpha, method, gamma, window, integrator, engine
        As in `ConformalRegressor`.

    Attributes
    ----------
    estimator_, calibration_, threshold_, t_, n_features_in_
        As in `ConformalRegressor`.
    classes_ : ndarray
        The labels seen (the learner's).

    References
    ----------
    See docs/conformal.md.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from okl import ConformalClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> model = ConformalClassifier(alpha=0.1).fit(X, y)
    >>> model.predict_set(X[:2]).shape
    (2, 3)
    """

    def __init__(self, estimator=None, alpha=0.1, method="agaci", gamma="auto", window=1000,
                 integrator="auto", engine="cython"):
        self.estimator = estimator
        self.alpha = alpha
        self.method = method
        self.gamma = gamma
        self.window = window
        self.integrator = integrator
        self.engine = engine

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        self._share_lock(name, value)
        if name in ("estimator", "alpha", "method", "gamma", "window", "integrator", "engine"):
            self.__dict__.pop("_last", None)        # the next event validates them

    def _validate_params(self):
        super()._validate_params()
        base = self._base()
        if not is_classifier(base):
            raise InvalidParameterError(f"ConformalClassifier wraps a classifier; "
                                        f"{type(base).__name__} is not one: use "
                                        "okl.ConformalRegressor.")
        if not hasattr(base, "learn_one"):
            raise InvalidParameterError(f"ConformalClassifier learns one event at a time and "
                                        f"needs learn_one; {type(base).__name__} has none.")

    def __sklearn_tags__(self):
        return self._learner_tags(super().__sklearn_tags__())

    def _base(self):
        if self.estimator is None:
            from okl.classification import OnlineKernelClassifier
            return OnlineKernelClassifier(loss="logistic")
        return self.estimator

    @property
    def classes_(self):
        return getattr(self.estimator_, "classes_", np.array([]))

    def _start(self, X, y):
        self._remember_params()
        self._own("estimator_", clone(self._base()))
        self.calibration_ = self._new_calibration()
        self.t_ = 0

    def _check_X_y(self, X, y, reset):
        return check_X_y(self, X, y, reset=reset, y_numeric=False)

    def partial_fit(self, X, y, classes=None):
        """Continue the stream with the rows of X, in order.

        `classes` on the first call fixes the learner's classes (its `classes`
        parameter); a call that raises leaves the model exactly as it was.
        """
        self._progressive_scores(X, y, classes, keep_scores=False)
        return self

    def _targets(self, y, classes, first):
        if classes is not None:
            if first:
                if "classes" not in self.estimator_.get_params():
                    raise TypeError(f"{type(self.estimator_).__name__} has no `classes` "
                                    "parameter to fix: call partial_fit without classes.")
                self.estimator_.set_params(classes=classes)
            elif not np.array_equal(np.sort(np.asarray(classes)), np.sort(self.classes_)):
                raise ValueError(f"classes={list(classes)} differs from the classes the first "
                                 f"call fixed, {list(self.classes_)}: call fit to start again.")
        return np.asarray(y)

    def _learn(self, X, y):
        n = len(y)
        predictions, covered, sizes = np.empty(n, dtype=object), np.empty(n, bool), np.empty(n)
        proba_one = _proba_function(self.estimator_)
        for i in range(n):
            label = y[i].item() if isinstance(y[i], np.generic) else y[i]
            proba = proba_one(X[i])
            q = self.calibration_.threshold()
            chosen = {c for c, p in proba.items() if 1.0 - p <= q}
            predictions[i] = max(proba, key=proba.get) if proba else label
            covered[i], sizes[i] = label in chosen, len(chosen)
            s = 1.0 - proba.get(label, 0.0)
            self.estimator_.learn_one(X[i], label)
            self.calibration_.learn(s)
        self.t_ += n
        self._chunk_sets = covered, sizes
        if "_last" in self.__dict__:
            self._last.invalidate()
        return predictions

    def _progressive_sets(self, X, y):
        """Learn the rows; (prediction, label in its set, set size) of each, made before its
        update."""
        with _locks.locked(self):
            pred = super()._progressive_scores(X, y)
            covered, sizes = self.__dict__.pop("_chunk_sets")
            return pred, covered, sizes

    def _progressive_scores(self, X, y, classes=None, reset=False, sample_weight=None,
                            keep_scores=True):
        if sample_weight is not None:
            raise TypeError("ConformalClassifier takes no sample_weight: the calibration "
                            "counts events.")
        with _locks.locked(self):
            pred = super()._progressive_scores(X, y, classes, reset=reset)
            self.__dict__.pop("_chunk_sets", None)
            return pred

    def _predictions(self, scores):
        return np.asarray(scores)

    def _stream_loss(self, scores, y):
        """The error rate of the point predictions."""
        return (np.asarray(scores) != np.asarray(y)).astype(np.float64)

    def _check_fitted(self):
        if "calibration_" not in self.__dict__:
            raise NotFittedError("This ConformalClassifier has learned nothing yet: call fit, "
                                 "partial_fit or learn_one first.")

    def predict(self, X):
        """The learner's label for every row of X."""
        with _locks.locked(self):
            self._check_fitted()
            return self.estimator_.predict(check_X(self, X, reset=False))

    def predict_set(self, X):
        """Boolean array (n_samples, n_classes): label ``classes_[j]`` is in the set of row i."""
        with _locks.locked(self):
            self._check_fitted()
            P = _proba(self.estimator_, check_X(self, X, reset=False))
            return 1.0 - P <= self.calibration_.threshold()

    def _predict_set_python(self, x):
        """predict_set_one without the compiled path (another engine, a learner without a
        one-event step)."""
        with _locks.locked(self):
            if "calibration_" not in self.__dict__:
                return set()
            self._ready_events()
            last = self.__dict__["_last"]
            proba = last.proba_one(self.estimator_, x)
            last.store_proba(x, self.estimator_, proba)
            q = self.calibration_.threshold()
            return {c for c, p in proba.items() if 1.0 - p <= q}

    def predict_one(self, x):
        """The learner's label for one event (None before any learning)."""
        with _locks.locked(self):
            if "calibration_" not in self.__dict__:
                return None
            return self.estimator_.predict_one(x)

    def _ready_events(self):
        """The one-event cache, and with it the compiled path where it applies (the cython
        engine, an okl learner)."""
        last = self.__dict__.get("_last")
        if last is None:
            last = self.__dict__["_last"] = _conformal.LastEvent(
                _locks.locked(self), False,
                self.engine == "cython" and isinstance(self.estimator_, OnlineLearner),
                _proba_function, _scored)
        last.invalidate()

    learn_one = _conformal.learn_one_label
    predict_set_one = _conformal.predict_set_one

    def _learn_one_python(self, x, y, sample_weight=1.0):
        """learn_one without the compiled path (the first event, another engine, a check)."""
        if sample_weight != 1.0:
            raise TypeError("ConformalClassifier.learn_one takes no sample_weight: the "
                            "calibration counts events.")
        with _locks.locked(self), transaction(self) as guarded:
            if "calibration_" not in self.__dict__:
                self._validate_params()
                row, _ = check_row(self, x)
                self._start(row[None, :], None)
                self.n_features_in_ = row.shape[0]
            elif params_changed(self):
                self._validate_params()
                _check_unchanged(self)
            for model in self._models():
                guarded.append((model, model.checkpoint(1)))
            last = self.__dict__.get("_last")
            proba = last.match_proba(x, self.estimator_) if last is not None else None
            if proba is None:
                proba = _proba_function(self.estimator_)(x)
            s = 1.0 - proba.get(y, 0.0)
            self.estimator_.learn_one(x, y)
            self.calibration_.learn(s)
            self.t_ += 1
            params_validated(self)
        self._ready_events()

    def _check_state(self, check):
        check.attrs.setdefault("score_", "absolute")
        out = _check_conformal_state(self, check)
        check.out.pop("score_", None)
        return out


def _label(value):
    return value.item() if isinstance(value, np.generic) else value


def _proba_function(est):
    """`_proba_one` for this learner as a function of the event, its choice made once: an okl
    learner's `predict_proba_one` as it is (its labels and probabilities are Python's)."""
    if isinstance(est, OnlineLearner) and hasattr(est, "predict_proba_one") and hasattr(
            est, "predict_proba"):
        return est.predict_proba_one
    return lambda x: _proba_one(est, x)


def _scored(est):
    """Whether est's `predict_proba_one` is the softmax (or logistic) of its compiled step's
    scores, which `_conformal.LastEvent` computes in C with the same result."""
    kind = type(est)
    return (inspect.getattr_static(kind, "predict_proba_one", None)
            is inspect.getattr_static(OneEventMixin, "predict_proba_one")
            and inspect.getattr_static(kind, "_event_proba", None) is LabelsMixin._event_proba)


def _proba_one(est, x):
    """{label: probability} of one event ({} before any label)."""
    if hasattr(est, "predict_proba_one") and hasattr(est, "predict_proba"):
        return {_label(k): float(v) for k, v in est.predict_proba_one(x).items()}
    classes = getattr(est, "classes_", None)
    if classes is None or len(classes) == 0:
        return {}
    if len(classes) == 1:
        return {_label(classes[0]): 1.0}
    f = np.atleast_1d(np.asarray(est.decision_function_one(x), dtype=np.float64))
    p = _softmax(f, len(classes))
    return {_label(c): float(v) for c, v in zip(classes, p)}


def _proba(est, X):
    """Probabilities (n, k) of the rows: predict_proba, else from the decision scores."""
    if hasattr(est, "predict_proba"):
        return np.asarray(est.predict_proba(X), dtype=np.float64)
    classes = est.classes_
    if len(classes) == 1:
        return np.ones((X.shape[0], 1))
    F = np.asarray(est.decision_function(X), dtype=np.float64)
    return np.array([_softmax(np.atleast_1d(f), len(classes)) for f in F])


def _softmax(f, k):
    """The logistic of one margin (two labels), else the softmax of the k scores."""
    if k == 2 and len(f) == 1:
        p = 1.0 / (1.0 + math.exp(-f[0])) if f[0] >= 0 else math.exp(f[0]) / (1.0 + math.exp(f[0]))
        return np.array([1.0 - p, p])
    e = np.exp(f - f.max())
    return e / e.sum()
