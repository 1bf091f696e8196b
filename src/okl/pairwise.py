"""PairwiseLearner: online pairwise learning in an RKHS (Lin-Lei-Zhang-Zhou, Algorithm 1)."""
from contextlib import nullcontext
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from okl import _locks, _warnings
from okl._base import Diverged, OnlineLearner, check_X, check_X_y, params_changed
from okl._blas import one_thread
from okl._docstrings import shared_params
from okl._engines import ENGINES
from okl._gamma import check_width_moments, start_warmup, width_of
from okl._labels import as_labels
from okl._core._expansion import KernelExpansion
from okl._core._pairwise import PairEvents, PairKind, Reducer
from okl._core._warmup import Warmup
from okl._pair_models import (
    DifferencePairModel, LinearPairModel, MetricPairModel, MomentsPairModel,
    reservoir_slots, stored_caches,
)
from okl._params import (
    ENGINE_CONSTRAINTS, NONE, Interval, InvalidParameterError, Kind, Options, kernel_constraints,
    validate_params,
)
from okl._persist import loadable, prefixed, substate
from okl.kernels import kernel_diagonal, kernel_params, kernel_params_of, kernel_row
from okl.losses import PAIRWISE_LOSSES, loss_spec, pairwise_growth
from okl.schedules import step_numbers, step_sizes

REDUCERS = {"sign": Reducer.SIGN, "difference": Reducer.DIFFERENCE,
            "dissimilar": Reducer.DISSIMILAR}
PAIR_KERNELS = ("linear", "difference", "metric")
RANDOM_STATE = Kind(lambda v: isinstance(v, (Integral, np.random.RandomState)),
                    "an int or a numpy.random.RandomState")


# ---- the schedule of Theorem 2.3 -------------------------------------------------------------

def pair_kernel_kappa(X, pair_kernel, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0,
                      **params):
    """kappa = max(1, sup sqrt(K((x, x'), (x, x')))) over the pairs of rows of X (eq. (2.4)).

    An O(n d) upper bound of the sup, so eta_1 from eq. (2.6) stays admissible:
    ``||x - x'|| <= 2 max_i ||x_i - mean||`` for the linear pair kernel (its
    square for the metric kernel, whose K is ||x - x'||^4); for the difference
    kernel ``k(x,x) - 2 k(x,x') + k(x',x')`` is at most 2 for the Gaussian and
    Laplacian kernels, ``||x - x'||^2`` for the linear one and
    ``4 max_i k(x_i, x_i)`` for the polynomial one.  `kernel` is a name, or the
    kernel's record (`okl.kernels.kernel_params`, which carries every parameter);
    `params`: the kernel's other parameters by name.
    """
    X = np.asarray(X, dtype=np.float64)
    record = kernel if isinstance(kernel, dict) else None
    if record:
        kernel = kernel_row(record["kernel"]).name
    if pair_kernel != "difference" or kernel == "linear":
        diameter = 2.0 * np.sqrt(np.max(np.sum((X - X.mean(axis=0)) ** 2, axis=1)))
        sup = diameter ** 2 if pair_kernel != "metric" else diameter ** 4
    elif kernel_row(kernel).width:         # K(x, x) = 1
        sup = 2.0
    else:
        if record is None:
            record = kernel_params(kernel, gamma=gamma, degree=degree, coef0=coef0, **params)
        sup = 4.0 * float(np.max(kernel_diagonal(record, X)))
    return max(1.0, float(np.sqrt(sup)))


def lin_eta1(theta, q, c_q, v0, kappa):
    """The largest eta_1 of eq. (2.6):
    ``min(sqrt(1-theta) / (2 sqrt(2) c_q kappa (kappa+1)^q), (1-theta) / (4 |V|_0))``."""
    first = (np.sqrt(1.0 - theta) / (2.0 * np.sqrt(2.0) * c_q * kappa * (kappa + 1.0) ** q)
             if c_q > 0 else np.inf)
    second = (1.0 - theta) / (4.0 * v0) if v0 > 0 else np.inf
    return float(min(first, second))


def _check_dense(X):
    if sp.issparse(X):
        raise TypeError("PairwiseLearner takes dense input only (sparse matrix given): it stores "
                        "the points of the stream as dense rows. Convert with X.toarray().")


# ---- the estimator ---------------------------------------------------------------------------

@loadable
@shared_params
class PairwiseLearner(OnlineLearner):
    """Online pairwise learning in an RKHS (Lin, Lei, Zhang and Zhou, Algorithm 1).

    A predictor on pairs f(x, x') learns from a stream, with no
    regularization: ``f_1 = f_2 = 0`` and, at step t >= 2,
    ``f_{t+1} = f_t - eta_t/(t-1) sum_{j<t} V'_-(r(y_t, y_j), f_t(x_t, x_j)) K_{(x_t, x_j)}``,
    the average over every previous point (docs/algorithms.md, section 6).  That average is
    one fused pass over the stored points per step, in Cython.

    These are exactly the paper's iterates: an offset would cancel in
    g(x) - g(x'), so there is no fit_intercept.  One event at a time:
    `learn_one(x, y)` learns one (x, y), `predict_one(x)` is the score g(x)
    (0 before any learning); eta="auto" takes kappa from the first call's rows,
    so give a stream of single events an explicit eta (docs/streaming.md).

    Parameters
    ----------
    reducer : {"sign", "difference", "dissimilar"}, default="sign"
        The reduced target r(y, y'): ``sign(y - y')`` (ranking),
        ``y - y'`` (regression of differences), or +1 if y != y' and -1 if
        y == y' (metric learning: y holds class labels, and the hinge loss
        then charges ``(1 + f)_+`` to a same-class pair, ``(1 - f)_+`` to a
        pair from different classes).
    loss : {"hinge", "logistic", "squared_hinge", "squared", "absolute", "power"}, default="hinge"
        V(r, a) for the value a = f(x, x'): the margin losses phi(r a) (hinge
        ``(1 - m)_+``, logistic ``log(1 + e^-m)``, squared hinge
        ``(1 - m)_+^2``) or the residual losses psi(a - r) (squared
        ``(a - r)^2 / 2``, absolute ``|a - r|``, power ``|a - r|^p``).
        Updates use the left derivative in a.  See `okl.losses`.
    p : float >= 1, default=2.0
        The exponent of ``loss="power"``.
    pair_kernel : {"linear", "difference", "metric"}, default="linear"
        K on pairs.  "linear": ``(x - x').(u - u')``, so ``f = w.(x - x')``
        (fitted `coef_` = w; `kernel` is unused).  "difference":
        ``k(x,u) - k(x,u') - k(x',u) + k(x',u')`` for the base `kernel` k, so
        ``f(x, x') = g(x) - g(x')`` with g a kernel expansion.  "metric":
        ``((x - x').(u - u'))^2``, so ``f = (x - x')^T M (x - x')`` with M
        symmetric (fitted `metric_`).
    kernel : {"gaussian", "laplacian", "matern", "polynomial", "linear"}, default="gaussian"
        Base kernel k of ``pair_kernel="difference"``; see `okl.kernels`.
    gamma, degree, coef0 : float or "scale", int, float, default="scale", 3, 0.0
        Parameters of the base kernel.  gamma="scale" is ``1 / (n_features X.var())``
        over the events learned so far (scikit-learn's SVC rule): the width follows
        the first 100 events, then stays (docs/defaults.md, section 2); kept in `gamma_`.
    {nu}
    {kernel_params}
    eta : float > 0 or "auto", default="auto"
        eta_1 of the step ``eta_t = eta_1 (t-1)^-theta`` (t = 1 is the first
        sample; the paper's ``eta_{t+1} = eta_1 t^-theta``).  "auto" is the
        largest eta_1 of eq. (2.6), from the loss's growth constants
        (`okl.losses.pairwise_growth`, with sup|r| = 1 for "sign" and
        "dissimilar" and the range of y for "difference") and kappa of the
        pair kernel, both over the data of the first call
        (`pair_kernel_kappa`).  It needs theta < 1.
    theta : float >= 0 or None, default=None
        Decay of the step.  None is ``(q+2)/(q+3)`` for the loss's growth
        exponent q (Corollary 2.5 (I)): 2/3 for hinge, logistic and absolute,
        3/4 for squared and squared hinge, (p+1)/(p+2) for power.  Theorem 2.3
        covers ``q/(q+1) <= theta < 1``.
    buffer : int >= 1 or None, default=None
        Average over a reservoir of `buffer` past points, a uniform sample of
        the stream (Algorithm R), instead of all of them: O(buffer) per step
        for long streams.  None keeps every point.
    random_state : int, RandomState or None, default=None
        Seeds the reservoir (used only with `buffer`).
    {verbose}
    {engine}

    Attributes
    ----------
    n_features_in_ : int
    t_ : int
        Samples learned so far.
    eta1_, theta_ : float
        The step ``eta_t = eta1_ (t-1)^-theta_`` in use.
    kappa_ : float
        kappa of the pair kernel over the first call's data (`pair_kernel_kappa`).
    n_stored_ : int
        Points kept for the average (t_, or at most `buffer`; 0 when the
        squared loss runs on running moments, see Notes).
    coef_ : ndarray of shape (n_features_in_,)
        w of ``f = w.(x - x')`` (pair_kernel="linear").
    metric_ : ndarray of shape (n_features_in_, n_features_in_)
        M of ``f = (x - x')^T M (x - x')`` (pair_kernel="metric").
    support_vectors_, dual_coef_ : ndarray
        ``g = sum_i dual_coef_[i] k(support_vectors_[i], .)``
        (pair_kernel="difference"): one centre per sample.
    classes_ : ndarray
        reducer="dissimilar": the labels seen, in the order of the calls that
        brought them (sorted within a call); any new label is welcome.

    Notes
    -----
    Cost per step, for t points seen, m stored (m = t, or `buffer`), d features:
    linear O(m d); metric O(m d^2); difference O(t d) kernel values for g(x_t)
    plus O(m^2) for the cached values g(x_j), with 8 m^2 bytes for the Gram
    matrix of the stored points (800 MB at m = 10^4: use `buffer` for long
    streams) and 8 t d bytes for g's centres.  The squared loss with the
    linear pair kernel and reducer="difference" (no buffer) needs only the
    running moments of (x, y): O(d^2) per step and memory, the same iterates.

    Every parameter is read at the first call (fit, or the first
    partial_fit); partial_fit refuses changed parameters except `engine`.

    References
    ----------
    See docs/algorithms.md, section 6.

    .. [1] J. Lin, Y. Lei, B. Zhang and D.-X. Zhou, "Online pairwise
       learning algorithms with convex loss functions", Information
       Sciences, 406-407, 2017.
    .. [2] J. S. Vitter, "Random sampling with a reservoir", ACM
       Transactions on Mathematical Software, 11(1):37-57, 1985.

    Examples
    --------
    >>> import numpy as np
    >>> from okl import PairwiseLearner
    >>> from okl.evaluation import ranking_error
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 5)); y = X @ [1.0, -2.0, 0.5, 0.0, 1.0]
    >>> est = PairwiseLearner(eta=1.0).fit(X, y)       # linear ranking, hinge loss
    >>> float(round(ranking_error(est, X, y), 3))
    0.002
    """

    _parameter_constraints = {
        "reducer": [Options(*REDUCERS)],
        "loss": [Options(*PAIRWISE_LOSSES)],
        "p": [Interval(Real, 1, None, closed="left")],
        "pair_kernel": [Options(*PAIR_KERNELS)],
        **kernel_constraints(),
        "eta": [Interval(Real, 0, None, closed="neither"), Options("auto")],
        "theta": [NONE, Interval(Real, 0, None, closed="left")],
        "buffer": [NONE, Interval(Integral, 1, None, closed="left")],
        "random_state": [NONE, RANDOM_STATE],
        **ENGINE_CONSTRAINTS,
    }

    # The exact running-moment shortcut of the squared loss (tests and bench/ turn it off
    # to compare it with the full average).
    _running_moments = True

    def __init__(self, reducer="sign", loss="hinge", p=2.0, pair_kernel="linear",
                 kernel="gaussian", gamma="scale", degree=3, coef0=0.0, nu=1.5, kernel_params=None,
                 eta="auto", theta=None, buffer=None, random_state=None, verbose=False,
                 engine="cython"):
        self.reducer = reducer
        self.loss = loss
        self.p = p
        self.pair_kernel = pair_kernel
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.nu = nu
        self.kernel_params = kernel_params
        self.eta = eta
        self.theta = theta
        self.buffer = buffer
        self.random_state = random_state
        self.verbose = verbose
        self.engine = engine

    # -- learning (fit, partial_fit: the OnlineLearner template) ----------------------------

    _divergence_cure = ("the step size is too large for this data; use eta='auto', a smaller "
                        "eta or a larger theta, or scale X (e.g. with "
                        "sklearn.preprocessing.StandardScaler)")

    def _check_state(self, check):
        """okl.load's checks of this learner's fitted state (see `OnlineLearner._check_state`)."""
        attrs, out, name = check.attrs, check.out, type(self).__name__
        d, t = out["n_features_in_"], out["t_"]
        built = {}
        labels = ("classes_",) if self.reducer == "dissimilar" else ()
        check.keys(attrs, ("n_features_in_", "t_", "_params", "n_stored_", "theta_", "kappa_",
                           "eta1_", "_seed") + labels, f"{name}'s attributes",
                   optional=("gamma_", "_row_keys", "_width_moments"))
        check.row_keys()
        check.fitted_gamma(needed=self.pair_kernel == "difference")
        check_width_moments(check, self.gamma if self.pair_kernel == "difference" else 0.0)
        stored = attrs["_params"]
        if isinstance(stored, list) and len(stored) == len(self._FROZEN) - 1:
            i = self._FROZEN.index("kernel_params")     # a file saved before kernel_params
            stored = stored[:i] + [None] + stored[i:]
        if not (isinstance(stored, list) and stored == self._frozen_params()):
            check.fail("_params (the parameters of the first call) differ from the parameters")
        out["_params"] = list(stored)
        check.floats("theta_", lo=0.0)
        check.floats("kappa_", lo=1.0)
        check.floats("eta1_", lo=0.0, open_lo=True)
        # what the parameters fix (`_start`): theta_, and eta1_ for a number eta
        q = pairwise_growth(self.loss, 1.0, self.p)[0]      # q: the loss's alone
        theta = (q + 2.0) / (q + 3.0) if self.theta is None else float(self.theta)
        check.equal(out["theta_"], theta, "theta_")
        if self.eta != "auto":
            check.equal(out["eta1_"], float(self.eta), "eta1_")
        out["_seed"] = check.int(attrs["_seed"], "_seed", 0, 2 ** 31 - 1)
        stored = out["n_stored_"] = check.int(attrs["n_stored_"], "n_stored_", 0, t)
        moments = (self._running_moments and self.loss == "squared"
                   and self.reducer == "difference" and self.pair_kernel == "linear"
                   and self.buffer is None)
        want = ("MomentsPairModel" if moments else
                {"linear": "LinearPairModel", "metric": "MetricPairModel",
                 "difference": "DifferencePairModel"}[self.pair_kernel])
        kind, state = check.model("_model", (want,))
        if moments:
            check.keys(state, ("S", "origin", "w"), "the moments model '_model'")
            state = dict(S=check.array(state["S"], "_model.S", (d + 2, d + 2)),
                         origin=check.array(state["origin"], "_model.origin", (d + 1,)),
                         w=check.array(state["w"], "_model.w", (d,)))
            if stored:
                check.fail("n_stored_ must be 0 for the running-moment model")
        else:
            extra = {k for k in state if not k.startswith(("history_", "g_"))}
            difference = self.pair_kernel == "difference"
            check.keys(extra, ("engine",) if difference else ("w",), "the model '_model'")
            n_centres, out_state = 0, {}
            if difference:
                out_state["engine"] = check.engine(state["engine"], "_model.engine")
                g = check.fitted_expansion(substate(state, "g_"), "_model.g", 0, 0)
                n_centres = len(g["coef"])
                if n_centres != t:
                    check.fail(f"g holds {n_centres} centres, not one per step (t_ = {t})")
                out_state.update(prefixed("g_", g))
            else:
                shape = (d, d) if self.pair_kernel == "metric" else (d,)
                out_state["w"] = check.array(state["w"], "_model.w", shape)
            history = check.history(substate(state, "history_"), d,
                                     "centres" if difference else "points", self.buffer, t,
                                     n_centres)
            if len(history["y"]) != stored:
                check.fail(f"n_stored_ = {stored} but the history holds {len(history['y'])} "
                           "points")
            if difference and stored:       # the caches beside the points: what g gives there
                s, gram = stored_caches(ENGINES["numpy"].expansion.from_state(g),
                                        history["idx"])
                for key, value, true in (("s", history["s"], s), ("gram", history["gram"], gram)):
                    if not np.all(np.abs(value - true) <= 1e-9 * (1.0 + np.abs(true).max())):
                        check.fail(f"history_{key} is not what g gives at the stored points")
            out_state.update(prefixed("history_", history))
            if labels:
                codes = history["y"]
                out["classes_"] = check.labels(attrs["classes_"], "classes_", binary=False)
                if np.any((codes < 0) | (codes >= len(out["classes_"]))
                          | (codes != np.round(codes))):
                    check.fail("history_y holds class codes outside classes_")
            state = out_state
        if labels and "classes_" not in out:
            out["classes_"] = check.labels(attrs["classes_"], "classes_", binary=False)
        built["_model"] = (kind, state)
        return built

    @classmethod
    def _state_classes(cls):
        return (LinearPairModel, MetricPairModel, DifferencePairModel, MomentsPairModel)

    def _validate_params(self):
        validate_params(self)
        if self.eta == "auto" and self.theta is not None and self.theta >= 1:
            raise InvalidParameterError(
                f"eta='auto' is eq. (2.6) of Lin et al., which needs theta < 1 (got "
                f"theta={self.theta}); pass a number eta, or theta=None for (q+2)/(q+3).")

    # what the first call fixes (engine may change; random_state is spent on the seed)
    _FROZEN = ("reducer", "loss", "p", "pair_kernel", "kernel", "gamma", "degree", "coef0", "nu",
               "kernel_params", "eta", "theta", "buffer")

    def _frozen_params(self):
        return [getattr(self, name) for name in self._FROZEN]

    def _unhonoured(self):
        """The parameters of `_FROZEN` changed since the first call (partial_fit and okl.save
        refuse them)."""
        if "_params" not in self.__dict__ or self._frozen_params() == self._params:
            return []
        return [f"{name}={now!r} (fitted with {then!r})" for name, now, then in
                zip(self._FROZEN, self._frozen_params(), self._params) if now != then]

    def _check_X_y(self, X, y, reset):
        _check_dense(X)
        return check_X_y(self, X, y, reset=reset, y_numeric=self.reducer != "dissimilar")

    def _models(self):
        return (self._model,)

    def _start(self, X, y):
        """A fresh model, with the step of Theorem 2.3 set from the first call's data."""
        d = X.shape[1]
        self.__dict__.pop("classes_", None)       # a previous fit's labels
        self._params = self._frozen_params()
        self.t_ = 0
        self.n_stored_ = 0
        if self.reducer == "dissimilar":
            self.classes_ = y[:0]
        r_max = float(np.ptp(y)) if self.reducer == "difference" else 1.0
        q, c_q, v0 = pairwise_growth(self.loss, r_max, self.p)
        self.theta_ = (q + 2.0) / (q + 3.0) if self.theta is None else float(self.theta)
        self.__dict__.pop("_width_moments", None)
        if isinstance(self.gamma, str) and self.pair_kernel == "difference":
            start_warmup(self, d)   # gamma="scale" follows the warm-up's events (`_learn`)
        else:
            self.__dict__.pop("gamma_", None)
        gamma = self.__dict__.get("gamma_", self.gamma)
        # the kernel's record: the difference pair kernel's g (gamma a number there)
        record = kernel_params_of(self, gamma=gamma) if self.pair_kernel == "difference" else None
        self.kappa_ = pair_kernel_kappa(X, self.pair_kernel, record or self.kernel)
        self.eta1_ = (lin_eta1(self.theta_, q, c_q, v0, self.kappa_) if self.eta == "auto"
                      else float(self.eta))
        self._seed = (int(check_random_state(self.random_state).randint(2 ** 31 - 1))
                      if self.buffer is not None else 0)
        if (self._running_moments and self.loss == "squared" and self.reducer == "difference"
                and self.pair_kernel == "linear" and self.buffer is None):
            self._model = MomentsPairModel(np.append(X[0], y[0]))
        elif self.pair_kernel == "linear":
            self._model = LinearPairModel(d, self.buffer)
        elif self.pair_kernel == "metric":
            self._model = MetricPairModel(d, self.buffer)
        else:
            self._model = DifferencePairModel(ENGINES[self.engine].expansion(d, record),
                                              self.buffer)

    def _targets(self, y, classes, first):
        """y as float64: real targets, or class codes (index in classes_) for "dissimilar"."""
        if self.reducer != "dissimilar":
            return np.ascontiguousarray(y, dtype=np.float64)
        y, _ = as_labels(y)             # a missing label (None, NaN) named as such
        check_classification_targets(y)
        new = np.setdiff1d(np.unique(y), self.classes_)
        self.classes_ = np.concatenate([self.classes_, new])
        order = np.argsort(self.classes_, kind="stable")
        return order[np.searchsorted(self.classes_, y, sorter=order)].astype(np.float64)

    def _learn(self, X, y):
        """The rows in order, through gamma="scale"'s warm-up while it lasts (the difference
        pair kernel; docs/defaults.md, section 2): each row is learned at the width of the
        rows before it (`okl._gamma.width_of`, `sequence`), which the loop sets on g."""
        width = width_of(self, X.shape[1])
        if width is None:
            return self._learn_rows(X, y)
        gamma, end = width.sequence(X)
        self._model = self._model.with_own_caches()     # the loop rewrites them at each width
        self._learn_rows(X, y, gamma=gamma)
        self.gamma_ = float(gamma[-1])
        if end >= 0:
            del self._width_moments                     # the width stays from now on
        else:
            self._width_moments = width.state()

    def _learn_rows(self, X, y, weight=None, gamma=None):
        """One engine call over the validated chunk (`gamma`: the width of each row)."""
        n = X.shape[0]
        t = step_numbers(self.t_, n)
        eta_t = step_sizes(self.eta1_, self.theta_, np.maximum(t - 1.0, 1.0))
        args = (int(REDUCERS[self.reducer]), self._loss_spec())
        slots = reservoir_slots(t, self.buffer, self._seed)
        failed = self._model.learn(self.engine, X, y, eta_t, slots, args,
                                   **({} if gamma is None else {"gamma": gamma}))
        if failed >= 0:
            raise Diverged(failed, eta_t[failed])
        self.t_ += n
        self.n_stored_ = int(self._model.n_stored)

    def _check_size(self, m=None):
        """Warn once past the size that slows every step (m: the points stored, by default
        those of the model)."""
        if self.buffer is not None:
            return
        m, d = int(self._model.n_stored if m is None else m), self.n_features_in_
        if self.pair_kernel == "difference":
            _warnings.warn_size(
                self, "gram", 8 * m * m, _warnings.GRAM_BYTES,
                f"{type(self).__name__}(pair_kernel='difference') caches the Gram matrix of "
                f"the {m} points stored so far: {8 * m * m / 2 ** 20:.0f} MiB, growing as the "
                "square of the stream. Pass buffer=B to average over a reservoir of B points "
                "(8 B^2 bytes; this warning is shown once).")
        else:
            _warnings.warn_size(
                self, "history", m * d * (d if self.pair_kernel == "metric" else 1),
                _warnings.EXPANSION_WORK,
                f"{type(self).__name__} averages over all {m} points seen: every step now "
                "reads them all and the store keeps growing. Pass buffer=B to average over a "
                "reservoir of B points (this warning is shown once).")

    def _warn_at(self):
        """The number of stored points `_check_size` first warns at (0: never)."""
        if self.buffer is not None or isinstance(self._model, MomentsPairModel):
            return 0
        d = self.n_features_in_
        if self.pair_kernel == "difference":
            return int(np.ceil(np.sqrt(_warnings.GRAM_BYTES / 8)))
        return -(-_warnings.EXPANSION_WORK // (d * d if self.pair_kernel == "metric" else d))

    # -- one event (okl._one_event) ---------------------------------------------------------

    def _compiled_events(self, cache):
        """The `PairEvents` of this fitted learner on the cython engine, or None (the one-row
        partial_fit path: the NumPy engine).  During gamma="scale"'s warm-up the step takes
        each row into the width (`okl._core._warmup.Warmup`).

        `cache` is a one-element list holding the last one built; it serves while
        the estimator holds the very model, labels and parameter objects it was built with.
        """
        events = cache[0]
        if events is not None and events.matches(self):
            return events
        d = self.__dict__
        if not ("t_" in d and self.engine == "cython") or params_changed(self):
            return None
        model = d["_model"]
        kind = {LinearPairModel: PairKind.LINEAR, MetricPairModel: PairKind.METRIC,
                DifferencePairModel: PairKind.DIFFERENCE_KERNEL,
                MomentsPairModel: PairKind.MOMENTS}[type(model)]
        if kind == PairKind.DIFFERENCE_KERNEL and type(model.g) is not KernelExpansion:
            return None         # g on the NumPy engine: the one-row path converts it
        names = ("_model", "eta1_", "theta_", "_seed") + (
            ("classes_",) if self.reducer == "dissimilar" else ()) + tuple(
            name for name in self.get_params(deep=False) if name in d)
        events = cache[0] = PairEvents(
            int(kind), model, int(REDUCERS[self.reducer]), self._loss_spec(),
            self.eta1_, self.theta_, self.buffer or 0, self._seed, self._warn_at(),
            type(self).__name__, self._divergence_cure, names)
        width = width_of(self, d["n_features_in_"])
        events.warm = None if width is None else Warmup(width)
        events.bind(self)
        return events

    def _loss_spec(self):
        """The loss as the compiled steps take it (its presence lets a one-row `partial_fit`
        take the one-event step, `okl._base.OnlineLearner._one_row`)."""
        return loss_spec(self.loss, p=self.p)

    def _learn_event(self, events, row, y, weight=1.0):
        """One event through `PairEvents.learn` (y: a class code for reducer="dissimilar"),
        after the size warning it may bring; BLAS on one thread where the step's products
        could wake more (`okl._blas.one_thread`)."""
        d = self.__dict__
        if self._warn_at():             # a store that grows: its warning comes before the step
            self._check_size(d["n_stored_"] + 1)
        with one_thread() if events.blas_threads else nullcontext():
            events.learn(d, row, y)

    @available_if(lambda self: self.reducer == "dissimilar")
    def _event_target(self, y):
        """reducer="dissimilar": the code of label y (its index in classes_, as `_targets`
        gives it), or None for a new label (the one-row partial_fit adds it)."""
        labels = self.__dict__.get("classes_")
        labels = [] if labels is None else labels.tolist()
        return float(labels.index(y)) if y in labels else None

    # -- prediction ---------------------------------------------------------------------------

    @_locks.serialised
    def decision_function(self, X1, X2=None):
        """f(X1[i], X2[i]) for every row pair.

        X2=None pairs each row with the origin: f(x, 0) is w.x (linear pair
        kernel), g(x) - g(0) (difference) or x^T M x (metric).
        """
        check_is_fitted(self, "t_")
        _check_dense(X1)
        X1 = check_X(self, X1, reset=False)
        if X2 is None:
            X2 = np.zeros((1, X1.shape[1]))
        else:
            _check_dense(X2)
            X2 = check_X(self, X2, reset=False)
            if X2.shape != X1.shape:
                raise ValueError(f"X1 and X2 must hold the same number of rows (the pairs); "
                                 f"got shapes {X1.shape} and {X2.shape}.")
        return self._model.decision(X1, X2)

    def _has_scores(self):
        if self.pair_kernel == "metric":
            raise AttributeError("score_samples needs f(x, x') = g(x) - g(x'): pair_kernel "
                                 "'linear' or 'difference', not 'metric'.")
        return True

    @available_if(_has_scores)
    @_locks.serialised
    def score_samples(self, X):
        """g(x) for every row, with f(x, x') = g(x) - g(x'): ranking scores (higher ranks first).

        g(x) = w.x for the linear pair kernel, the kernel expansion g for the
        difference kernel.
        """
        check_is_fitted(self, "t_")
        _check_dense(X)
        X = check_X(self, X, reset=False)
        return self._model.scores(X)

    def _fitted_model(self, cls, name, pair_kernel):
        check_is_fitted(self, "t_")
        if not isinstance(self._model, cls):
            raise AttributeError(f"{name} exists for a fitted pair_kernel={pair_kernel!r} "
                                 "model only.")
        return self._model

    @property
    def coef_(self):
        """w of f = w.(x - x') (pair_kernel="linear")."""
        return self._fitted_model((LinearPairModel, MomentsPairModel), "coef_", "linear").w

    @property
    def metric_(self):
        """M of f = (x - x')^T M (x - x') (pair_kernel="metric")."""
        return self._fitted_model(MetricPairModel, "metric_", "metric").w

    @property
    def support_vectors_(self):
        """Centres of g = sum_i a_i k(x_i, .) (pair_kernel="difference"): every sample seen."""
        return self._fitted_model(DifferencePairModel, "support_vectors_", "difference").g.centers_

    @property
    def dual_coef_(self):
        """Coefficients a_i of g = sum_i a_i k(x_i, .) (pair_kernel="difference")."""
        return self._fitted_model(DifferencePairModel, "dual_coef_", "difference").g.coef_

    @_locks.serialised
    def rkhs_norm(self):
        """||f||_K in the RKHS of the pair kernel: ||w||, ||M||_F, or ||g||_k (difference)."""
        check_is_fitted(self, "t_")
        return self._model.norm()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.target_tags.required = True
        return tags
