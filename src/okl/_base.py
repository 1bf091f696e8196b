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
(`okl._guard.locked`): two threads calling partial_fit get the result of one
serial order.  Parameters are validated at the first call of a stream and
again whenever one was changed (set_params); those the fitted model is built
from (`_fitted_with`) cannot change until fit starts again.
"""
import operator
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, is_classifier
from sklearn.utils.validation import check_is_fitted, validate_data

from okl import _guard
from okl._core._expansion import KernelExpansion
from okl._core._pointwise import PointwiseEvents, StepSize
from okl._numpy.expansion import NumpyExpansion
from okl._numpy.pointwise import make_schedule, make_state
from okl._approx import FeatureModel
from okl._engines import ENGINES
from okl._gamma import scale_gamma, warn_spread
from okl._params import InvalidParameterError, validate_params
from okl._progress import progress
from okl._rows import check_label
from okl._streaming import OneEventMixin
from okl.budgets import budget_code, default_budget_policy, resolve_budget_policy
from okl.kernels import KERNELS, kernel_code, kernel_row
from okl.schedules import step_sizes

_F64 = np.dtype(np.float64)
VERBOSE_STRETCH = 1000      # rows per progress-bar update of a verbose fit


def expansion_class(estimator):
    """The expansion class of the estimator's `engine` (a clear error for an unknown one)."""
    engine = ENGINES.get(estimator.engine) if isinstance(estimator.engine, str) else None
    if engine is None:
        validate_params(estimator)          # names the parameter
        raise InvalidParameterError(f"Unknown engine {estimator.engine!r}.")
    return engine.expansion


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


_PARAM_GETTERS = {}


def _param_values(estimator):
    """The parameter values of `estimator`, as one tuple (one C call per estimator)."""
    cls = type(estimator)
    getter = _PARAM_GETTERS.get(cls)
    if getter is None:
        names = tuple(cls._get_param_names())
        getter = _PARAM_GETTERS[cls] = (operator.attrgetter(*names) if len(names) > 1
                                        else lambda est: (getattr(est, names[0]),))
    return getter(estimator)


def _params_changed(estimator):
    """True unless every parameter is the very object validated at the last call."""
    seen = _guard.VALIDATED.get(estimator)
    now = _param_values(estimator)
    return seen is None or len(seen) != len(now) or any(map(operator.is_not, seen, now))


def _params_validated(estimator):
    _guard.VALIDATED[estimator] = _param_values(estimator)


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and not isinstance(
        a, bool) and isinstance(b, (int, float)) and not isinstance(b, bool) and a == b)


def _check_unchanged(estimator):
    """Refuse a changed parameter that the fitted model was built with."""
    changed = [f"{name}={getattr(estimator, name)!r} (fitted with {then!r})"
               for name, then in estimator._fitted_with()
               if not _same(getattr(estimator, name), then)]
    if changed:
        raise ValueError(
            f"{type(estimator).__name__}.partial_fit continues the model built by fit and "
            f"cannot change {', '.join(changed)}. Call fit to start again with the new "
            "values, or set them back.")


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


def check_sample_weight(estimator, sample_weight, n, fresh=False):
    """sample_weight as a finite float64 array of n values >= 0 (None stays None).

    A fresh fit whose weights are all 0 would learn nothing: it raises.
    """
    if sample_weight is None:
        return None
    if not getattr(estimator, "_supports_sample_weight", False):
        raise TypeError(f"{type(estimator).__name__} takes no sample_weight (docs/algorithms.md, "
                        "section 7.2: passive-aggressive and pairwise rules are unweighted).")
    w = np.asarray(sample_weight, dtype=np.float64)
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


class OnlineLearner(OneEventMixin, BaseEstimator):
    """The base of every okl learner: the fit / partial_fit template and its hooks.

    `_progressive_scores` is the one entry point that learns; progressive
    validation calls it directly (it returns f_t(x_t) of each row, predicted
    before that row is learned) and persistence reads `_state_classes()`.
    """

    # the end of the divergence message: what to change
    _divergence_cure = ("use eta='auto', a smaller eta or a larger eta_decay, or scale X "
                        "(e.g. with sklearn.preprocessing.StandardScaler)")

    # learners whose update takes per-step weights (docs/algorithms.md, section 7.2)
    _supports_sample_weight = False

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

    def _progressive_scores(self, X, y, classes=None, reset=False, sample_weight=None):
        """Learn the rows in order; return f_t(x_t) for each, computed before its update."""
        if not reset and classes is None and sample_weight is None and "t_" in self.__dict__:
            with _guard.locked(self):
                scores = self._one_row(X, y)
            if scores is not None:
                return scores
        with _guard.locked(self), transaction(self) as guarded:
            first = reset or not hasattr(self, "t_")
            validate = first or _params_changed(self)
            if validate:
                self._validate_params()
                if not first:
                    _check_unchanged(self)
                if first:
                    self.__dict__.pop("_one_event_state", None)     # a fresh stream of events
            X, y = self._check_X_y(X, y, reset=first)
            weight = check_sample_weight(self, sample_weight, X.shape[0], fresh=reset)
            if first:
                self._start(X, y)
            y = self._targets(y, classes, first)
            for model in self._models():
                guarded.append((model, model.checkpoint(X.shape[0])))
            try:
                scores = self._learn_all(X, y, weight)
            except Diverged as failure:
                step = f"t={self.t_ + failure.step + 1}"
                if failure.eta is not None:
                    step += f" (eta_t={failure.eta:.3g})"
                raise FloatingPointError(
                    f"{type(self).__name__} diverged at step {step}: the model is no longer "
                    f"finite. {self._divergence_cure[0].upper()}{self._divergence_cure[1:]}. "
                    "The model is left as it was before this call.") from None
            self._check_size()
            if validate:
                _params_validated(self)
            return scores

    def _learn_all(self, X, y, weight):
        """`_learn` over the chunk; with `verbose`, in stretches of rows behind a progress bar.

        The stretches give the same iterates (schedules are per step), and the
        template's checkpoints cover the whole chunk, so the call stays all-or-nothing.
        """
        args = () if weight is None else (weight,)
        verbose = getattr(self, "verbose", False)
        n = X.shape[0]
        if verbose is False or n <= VERBOSE_STRETCH:
            return self._learn(X, y, *args)
        parts = []
        with progress(total=n, desc=type(self).__name__, unit="sample",
                      verbose=None if verbose is None else bool(verbose)) as bar:
            for lo in range(0, n, VERBOSE_STRETCH):
                rows = slice(lo, lo + VERBOSE_STRETCH)
                parts.append(self._learn(X[rows], y[rows], *(a[rows] for a in args)))
                bar.update(len(X[rows]))
        return None if parts[0] is None else np.concatenate(parts)

    def _fitted_with(self):
        """[(parameter, value the fitted model was built with)]: these cannot change
        between partial_fit calls (fit starts again with the new values)."""
        return []

    def _check_size(self):
        """Warn once when the model passes a size that slows every step (see okl._guard)."""

    def _one_row(self, X, y):
        """A one-row chunk through the compiled one-event step; None where it does not apply.

        Same iterates as the chunk loop; O(d) checks instead of scikit-learn's
        validation, which costs far more than the step.
        """
        if not (hasattr(self, "_loss_spec") and self.engine == "cython"):
            return None
        row = one_row(self, X)
        if row is None or not _one_target(y):
            return None
        existed = "_one_event_state" in self.__dict__
        try:
            adapter = self._one_event()
            events = adapter._fast()
            if events is None:
                if not existed:
                    del self.__dict__["_one_event_state"]
                return None
            target = y[0]
            if adapter._is_classifier():
                target = adapter._sign(target.item() if isinstance(target, np.generic) else target)
            else:
                target = check_label(self, target)
            return np.array([self._learn_event(events, row, target)])
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


def warn_reset(estimator, eta_t, lam_t, t):
    """Warn once when a step has 1 - lam_t eta_t <= 0: the shrink empties the model."""
    eta_t, t = np.atleast_1d(eta_t), np.atleast_1d(t)
    reset = np.asarray(eta_t * lam_t) >= 1.0
    if reset.any():
        i = int(np.argmax(reset))
        lam = float(np.broadcast_to(lam_t, np.shape(eta_t))[i])
        _guard.warn_once(
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
    out = [("kernel", names.get(params["kernel"])), ("gamma", params["gamma"]),
           ("degree", params["degree"]), ("coef0", params["coef0"])]
    if hasattr(estimator, "budget"):
        out.append(("budget", expansion.budget or None))
    if hasattr(estimator, "budget_policy") and expansion.budget:
        policies = {int(code): name for name, code in BUDGET_POLICIES.items()}
        name = policies[int(expansion.policy)]
        if (estimator.budget_policy == "auto"
                and default_budget_policy(names.get(params["kernel"])) == name):
            name = "auto"           # what "auto" resolved to: unchanged
        out.append(("budget_policy", name))
    return out


class KernelModelMixin:
    """Shared parts of the learners whose model is a kernel expansion `_expansion`.

    Subclasses define the kernel parameters (kernel, gamma, degree, coef0),
    `engine`, and optionally `budget` and `budget_policy`.
    """

    def _kernel_gamma(self):
        """The gamma the model uses: gamma_ when fitted (gamma="scale"), else the parameter."""
        return self.__dict__.get("gamma_", self.gamma)

    def _new_expansion(self, n_features):
        policy = resolve_budget_policy(getattr(self, "budget_policy", "oldest"), self.kernel,
                                       type(self).__name__)
        return expansion_class(self)(
            n_features, int(kernel_code(self.kernel)), float(self._kernel_gamma()),
            int(self.degree), float(self.coef0), int(getattr(self, "budget", None) or 0),
            int(budget_code(policy)))

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
            return [("kernel", model.kernel), ("gamma", model.gamma), ("degree", model.degree),
                    ("coef0", model.coef0), ("approximation", model.approximation),
                    ("n_components", model.n_components)]
        return expansion_fitted_with(self, model)

    def _check_size(self):
        if getattr(self, "budget", 0) is None and not isinstance(self._expansion, FeatureModel):
            expansion = self._expansion
            work = expansion.n_support * expansion.n_features
            _guard.warn_size(
                self, "expansion", work, _guard.EXPANSION_WORK,
                f"{type(self).__name__} holds {expansion.n_support} centres of "
                f"{expansion.n_features} features and has no budget: every step now costs "
                f"{work:.2g} multiply-adds and the model keeps growing with the stream. Pass "
                "budget=B to bound the number of centres (budget_policy='merge', the default "
                "on the Gaussian kernel, keeps accuracy best), or approximation='fourier' or "
                "'nystroem' with n_components=D for a fixed-size model (this warning is shown "
                "once).")

    @_guard.serialised
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

    @_guard.serialised
    def rkhs_norm(self):
        """||f||_K, the norm of the current model in the RKHS of the kernel."""
        check_is_fitted(self, "t_")
        return float(np.sqrt(max(self._expansion.sq_norm(), 0.0)))


class PointwiseMixin(KernelModelMixin):
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
        """okl.load: check the fitted state `check` read against this estimator's parameters.

        Fills `check.out` with the attributes to set and returns {name: (model type, state)}
        of the model objects to build (docs/guide/persistence.md).
        """
        attrs, out, name = check.attrs, check.out, type(self).__name__
        d, t = out["n_features_in_"], out["t_"]
        built = {}
        labels = ("classes_",) if is_classifier(self) else ()
        check.keys(attrs, ("n_features_in_", "t_", "ck2_", "n_support_") + labels,
                   f"{name}'s attributes",
                   optional=("eta_", "lam_", "intercept_", "gamma_", "_row_keys"))
        check.floats("ck2_", lo=0.0)
        check.floats("eta_", "lam_", lo=0.0, optional=True)
        check.floats("intercept_", optional=True)                 # the offset b (docs/streaming.md)
        check.floats("gamma_", lo=0.0, open_lo=True, optional=True)
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
            state = check.fitted_expansion(state, "_expansion", int(self.budget or 0), int(policy))
        if kind != "FeatureModel" and len(state["coef"]) != out["n_support_"]:
            check.fail(f"n_support_ = {out['n_support_']} but '_expansion' holds "
                       f"{len(state['coef'])} centres")
        built["_expansion"] = (kind, state)
        if labels:
            check.binary_labels()
        return built

    @classmethod
    def _state_classes(cls):
        return (KernelExpansion, NumpyExpansion, FeatureModel)

    def _validate_params(self):
        super()._validate_params()
        if getattr(self, "approximation", None) is not None and self.budget is not None:
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
        """The features of the approximation's linear model (0 during Nystroem's exact phase)."""
        check_is_fitted(self, "t_")
        return self._expansion.n_features_out

    def _auto_lipschitz(self):
        """M in the auto step 1 / ((lam_t + M C_K^2) t**eta_decay); 1 unless a loss needs more."""
        return 1.0

    _supports_sample_weight = True

    def _start(self, X, y):
        name = type(self).__name__
        if isinstance(self.gamma, str):                       # "scale"
            self.gamma_ = scale_gamma(X, name)
        else:
            self.__dict__.pop("gamma_", None)
        warn_spread(X, self.kernel, float(self._kernel_gamma()), name, stacklevel=5)
        if getattr(self, "approximation", None) is not None:
            self._expansion = FeatureModel(
                self.approximation, X.shape[1], self.kernel, int(kernel_code(self.kernel)),
                float(self._kernel_gamma()), self.degree, self.coef0, self.n_components,
                self.random_state, self.engine)
        else:
            self._expansion = self._new_expansion(X.shape[1])
        self.t_ = 0
        self.ck2_ = 0.0
        self.n_support_ = 0
        self.intercept_ = 0.0

    def _schedule(self):
        """The `Schedule` of the steps (okl._core._pointwise), as a dict."""
        eta = self.eta
        kind = (StepSize.AUTO if isinstance(eta, str) else StepSize.GIVEN if callable(eta)
                else StepSize.POWER)
        return make_schedule(kind, eta if kind == StepSize.POWER else 0.0, self.eta_decay,
                             self.lam, getattr(self, "lam_decay", 0.0),
                             self._auto_lipschitz() if kind == StepSize.AUTO else 1.0,
                             getattr(self, "fit_intercept", False))

    def _step_state(self):
        """The counters a step reads (the `StepState` of okl._core._pointwise), as a dict."""
        return make_state(self.t_, self.ck2_, self.intercept_)

    def _store_step(self, t, ck2, eta_t, lam_t, b):
        """Keep what the steps returned (t_ counts the steps taken)."""
        d = self.__dict__
        if t != d["t_"]:
            d["eta_"], d["lam_"] = eta_t, lam_t
        d["t_"], d["ck2_"], d["intercept_"] = int(t), ck2, b
        d["n_support_"] = int(d["_expansion"].n_support)

    def _learn(self, X, y, weight=None):
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
            failed, state = model.learn(self.engine, *args)
        else:
            failed, state = ENGINES[self.engine].pointwise(model, *args)
        if failed >= 0:
            eta_try = state["eta_try"]
            raise Diverged(failed, eta_try if np.isfinite(eta_try) else None)
        if state["reset_t"]:
            warn_reset(self, state["reset_eta"], state["reset_lam"], state["reset_t"])
        self._store_step(state["t"], state["ck2"], state["eta_t"], state["lam_t"], state["b"])
        return scores

    def _learn_event(self, events, row, y, weight=1.0):
        """One event through the compiled step (`_core._pointwise.PointwiseEvents`); f_t(x_t)."""
        d = self.__dict__
        f, taken, t, ck2, eta_t, lam_t, b, _ = events.learn(row, y, weight, d["t_"], d["ck2_"],
                                                            d["intercept_"])
        if taken:
            self._store_step(t, ck2, eta_t, lam_t, b)
        return f

    def _compiled_events(self, cache):
        """The `PointwiseEvents` of this fitted learner on the cython engine, or None.

        `cache` is a one-element list holding the last one built; it serves while
        the estimator holds the very expansion and parameter objects it was built
        with.  A new one is built only when the parameters are those validated by
        the last fit / partial_fit: after `set_params`, the next event takes the
        validating path once.
        """
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        if not ("ck2_" in self.__dict__ and self.engine == "cython"
                and type(self.__dict__.get("_expansion")) is KernelExpansion):
            return None
        if _params_changed(self):
            return None
        names = ("_expansion",) + tuple(name for name in self.get_params(deep=False)
                                        if name in self.__dict__)
        events = cache[0] = PointwiseEvents(
            self._expansion, self._schedule(), self._loss_spec(),
            self.eta if callable(self.eta) else None, type(self).__name__, names)
        events.bind(self)
        return events
