"""Attacks through inputs and parameters: malformed CSR, extreme magnitudes, parameter changes.

Each attack must end in an exact result or a clear error that leaves the model
as it was.  Malformed sparse matrices run in a forked child (`isolated`):
they crashed the linear PA loop.
"""
import functools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import okl
import okl.projections as P
from okl import (
    CoefficientRegularizedClassifier,
    OnlineKernelClassifier,
    OnlineKernelRegressor,
    PairwiseLearner,
    RegularizedPAClassifier,
)
from okl._params import InvalidParameterError
from okl.evaluation import progressive_validation

FUZZ = settings(max_examples=150, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


def _state(est):
    """Everything okl.save would store, as comparable Python objects."""
    out = {}
    for key, value in sorted(vars(est).items()):
        if hasattr(value, "get_state"):
            value = value.get_state()
            out[key] = {k: (np.array(v) if isinstance(v, np.ndarray) else v)
                        for k, v in value.items()}
        else:
            out[key] = np.array(value) if isinstance(value, np.ndarray) else value
    return out


def _assert_same_state(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            _assert_same_state(x, y)
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=key)
        else:
            assert x == y or (x != x and y != y), key


# ---- malformed CSR -------------------------------------------------------------------------

def _csr_attack(kind, value, seed):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(12, 6)) * (rng.random((12, 6)) < 0.5)
    y = np.arange(12) % 2
    X = sp.csr_matrix(dense)
    clf = RegularizedPAClassifier(regularization="l1", beta=3.0) if seed % 2 else \
        RegularizedPAClassifier()
    clf.partial_fit(dense[:4], y[:4], classes=[0, 1])
    before = _state(clf)
    if kind == "index_high":
        X.indices[value % X.nnz] = 6 + value
    elif kind == "index_negative":
        X.indices[value % X.nnz] = -1 - value
    elif kind == "indptr_decreasing":
        X.indptr[1 + value % 11] = X.indptr[-1] + 5
    elif kind == "indptr_past_end":
        X.indptr[-1] = X.nnz + 1 + value
    elif kind == "indptr_start":
        X.indptr[0] = 1 + value % 3
    elif kind == "indptr_negative":
        X.indptr[1 + value % 11] = -1 - value
    elif kind == "unsorted":                         # legal: must equal the dense result
        for i in range(12):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            X.indices[lo:hi] = X.indices[lo:hi][::-1].copy()
            X.data[lo:hi] = X.data[lo:hi][::-1].copy()
        X.has_sorted_indices = False
    elif kind == "nan":
        X.data[value % X.nnz] = np.nan
    try:
        clf.partial_fit(X, y)
    except (ValueError, TypeError) as exc:
        _assert_same_state(_state(clf), before)
        return "error: " + str(exc)
    ref = RegularizedPAClassifier(**clf.get_params())
    ref.partial_fit(dense[:4], y[:4], classes=[0, 1]).partial_fit(dense, y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=1e-10, atol=1e-300)
    return "exact"


CSR_KINDS = ["index_high", "index_negative", "indptr_decreasing", "indptr_past_end",
             "indptr_start", "indptr_negative", "unsorted", "nan"]


def _fuzz_csr():
    counts = {}

    @FUZZ
    @given(st.sampled_from(CSR_KINDS), st.integers(0, 10 ** 6), st.integers(0, 3))
    def attack(kind, value, seed):
        outcome = _csr_attack(kind, value, seed)
        assert outcome == "exact" if kind == "unsorted" else outcome.startswith("error"), \
            (kind, outcome)
        counts[kind] = counts.get(kind, 0) + 1

    attack()
    return counts


def test_malformed_csr_gives_a_clear_error_and_leaves_the_model(isolated):
    counts = isolated(_fuzz_csr)
    assert sum(counts.values()) >= 100


@pytest.mark.parametrize("kind", ["index_high", "index_negative", "indptr_decreasing",
                                  "indptr_past_end"])
def test_malformed_csr_message_names_the_problem(kind, isolated):
    message = isolated(_csr_attack, kind, 3, 0)
    assert message.startswith("error") and ("indices" in message or "indptr" in message)


# ---- extreme magnitudes: kernels -----------------------------------------------------------

def _gaussian(x, u, gamma):
    with np.errstate(over="ignore"):
        return np.exp(-gamma * np.sum((np.asarray(x) - np.asarray(u)) ** 2))


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("centre,query", [
    ([1e199], [3e199]),                 # norms overflow: K = 0, not 1
    ([1e300, -1e300], [1e300, 1e300]),
    ([1e6, 1e6], [1e6 + 0.01, 1e6]),    # cancellation near a large offset
    ([1e6], [1e6 - 0.1]),
    ([1e10, 3.0], [1e10 + 1e-3, 3.0]),
    ([1e-320], [0.0]),
    ([1e199], [1e199]),
])
def test_gaussian_kernel_is_exact_at_every_scale(centre, query, engine):
    est = OnlineKernelRegressor(eta=0.5, lam=0.0, engine=engine, gamma=1.0, fit_intercept=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est.fit(np.array([centre]), [1.0])
        a = est.dual_coef_[0]
        got = est.predict(np.array([query]))[0]
    assert a == 0.5
    np.testing.assert_allclose(got, a * _gaussian(centre, query, 1.0), rtol=1e-12, atol=0)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_gaussian_kernel_in_the_learning_loop_is_exact_near_large_offsets(engine):
    X = np.array([[1e6, 2e6], [1e6 + 0.01, 2e6 - 0.02], [1e6 - 0.03, 2e6]])
    y = np.array([1.0, -1.0, 0.5])
    est = OnlineKernelRegressor(eta=0.5, eta_decay=0.0, lam=0.0, engine=engine,
                                fit_intercept=False, gamma=1.0).fit(X, y)
    a = np.zeros(3)                      # the exact iterates, by hand
    for t in range(3):
        f = sum(a[j] * _gaussian(X[j], X[t], 1.0) for j in range(t))
        a[t] = -0.5 * (f - y[t])
    np.testing.assert_allclose(est.dual_coef_, a, rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda: RegularizedPAClassifier(kernel="gaussian"),
    lambda: OnlineKernelClassifier(eta=0.5, lam=0.0),
    lambda: CoefficientRegularizedClassifier(n_centers=3, eta=0.5),
])
def test_classifiers_see_exact_kernels_at_large_offsets(make):
    X = np.array([[1e8], [1e8 + 0.01], [1e8 - 0.02], [1e8 + 0.5]])
    y = np.array([1, 0, 1, 0])
    fast = make().fit(X, y)
    ref = make().set_params(engine="numpy").fit(X - 1e8, y)   # translation invariant
    np.testing.assert_allclose(fast.decision_function(X), ref.decision_function(X - 1e8),
                               rtol=1e-9, atol=1e-12)


def test_pairwise_difference_kernel_is_exact_at_large_offsets():
    X = np.array([[1e7, 0.0], [1e7 + 0.01, 0.0], [1e7, 0.02], [1e7 - 0.01, 0.01]])
    y = np.array([0.0, 1.0, 2.0, 3.0])
    kw = dict(pair_kernel="difference", eta=0.5, theta=0.5, gamma=1.0)
    fast = PairwiseLearner(**kw).fit(X, y)
    ref = PairwiseLearner(engine="numpy", **kw).fit(X - [1e7, 0.0], y)
    np.testing.assert_allclose(fast.score_samples(X), ref.score_samples(X - [1e7, 0.0]),
                               rtol=1e-9, atol=1e-12)


# ---- extreme magnitudes: linear PA ---------------------------------------------------------

@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("scale", [1e155, 1e200, 1e300, 1e-160, 1e-300])
def test_linear_pa_step_is_exact_for_extreme_rows(scale, sparse, engine):
    x = np.array([[scale, -2 * scale, 0.0, 3 * scale]])
    q = np.sum((x[0] / scale) ** 2)
    expected = x[0] / scale / q / scale                       # w = y x / ||x||^2
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        sq_norm = 1.0 / (q * scale * scale)                   # ||w||^2 = 1 / ||x||^2
    clf = RegularizedPAClassifier(engine=engine, variant="PA")     # the papers' hard margin
    X = sp.csr_matrix(x) if sparse else x
    if not (np.all(np.isfinite(expected)) and np.isfinite(sq_norm)):
        # ||w||^2 is not representable: a clear error, not a non-finite model
        with pytest.raises(FloatingPointError):
            clf.partial_fit(X, [1], classes=[0, 1])
        return
    clf.partial_fit(X, [1], classes=[0, 1])
    np.testing.assert_allclose(clf.coef_[0], expected, rtol=1e-12)
    assert np.isfinite(clf.sq_norm_)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("scale", [1e155, 1e300])
def test_l1_pa_step_is_exact_for_huge_rows(scale, engine):
    x = np.array([[scale, -2 * scale, 0.0, 3 * scale]])
    clf = RegularizedPAClassifier(regularization="l1", beta=1.0, engine=engine)
    clf.partial_fit(x, [1], classes=[0, 1])
    # the closest w to 0 with x.w >= 1 is x / ||x||^2, well inside ||w||_1 <= 1
    np.testing.assert_allclose(clf.coef_[0], x[0] / scale / 14.0 / scale, rtol=1e-12)
    assert np.isfinite(clf.sq_norm_)


@pytest.mark.parametrize("variant,factor", [("PA-I", 1.0), ("PA-II", 2.0)])
def test_a_subnormal_row_is_not_zero(variant, factor):
    x = np.array([[1e-320, 0.0, -3e-320]])
    clf = RegularizedPAClassifier(variant=variant, C=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.partial_fit(x, [1], classes=[0, 1])
    np.testing.assert_array_equal(clf.coef_[0], factor * x[0])


# ---- extreme magnitudes: projections -------------------------------------------------------

def _vectors(seed, d=6):
    rng = np.random.default_rng(seed)
    return rng.normal(size=d), rng.normal(size=d)


SCALES = [2.0 ** k for k in (-1000, -800, -600, 500, 900, 1000, 1015)]


@pytest.mark.parametrize("s", SCALES)
@pytest.mark.parametrize("seed", range(3))
def test_ball_projections_are_exact_at_every_scale(s, seed):
    v, _ = _vectors(seed)
    for project, beta in ((P.project_l2_ball, 0.5), (P.project_l1_ball, 0.7)):
        want = project(v, beta) * s
        got = project(v * s, beta * s)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * s * np.max(np.abs(v)))


@pytest.mark.parametrize("s", SCALES)
@pytest.mark.parametrize("c", [2.0 ** -1000, 1.0, 2.0 ** 1000])
@pytest.mark.parametrize("seed", range(3))
def test_halfspace_projections_are_exact_at_every_scale(s, c, seed):
    v, a = _vectors(seed)
    b = 0.8 * float(np.linalg.norm(a))
    for project, beta in ((P.project_halfspace_l2_ball, 2.0),
                          (P.project_halfspace_l1_ball, 3.0)):
        want = project(v, a, b, beta) * s
        if not all(1e-300 < abs(z) < 1e300 for z in (b * c * s, beta * s, c, s)):
            continue
        got = project(v * s, a * c, b * c * s, beta * s)
        np.testing.assert_allclose(got, want, rtol=1e-9,
                                   atol=1e-9 * s * max(np.max(np.abs(v)), beta))


def test_projection_of_huge_vectors_is_feasible():
    w = P.project_l1_ball([1e308, 1e308, 1e308], 1e308)
    np.testing.assert_allclose(w, [1e308 / 3] * 3, rtol=1e-12)
    w = P.project_l2_ball([1e200, 1e200], 1.0)
    np.testing.assert_allclose(w, [2 ** -0.5] * 2, rtol=1e-12)
    w = P.project_l2_ball([1e-200, 1e-200], 1e-250)
    np.testing.assert_allclose(w, [1e-250 * 2 ** -0.5] * 2, rtol=1e-12)



@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_small_projections_of_huge_vectors_are_exact(engine):
    """A threshold within rounding of the entries it cuts: |v_j| - mu = 0.5 at |v_j| = 1e308
    is computed from the deficits max|v| - |v_j|, not by cancelling 1e308 against mu."""
    from okl._numpy import projections as N
    if engine == "cython":
        l1, hl1 = P.project_l1_ball, P.project_halfspace_l1_ball
    else:                               # the twin, on the facade's exact rescaling
        def l1(v, beta, e=1024):
            return np.ldexp(N.l1_ball(np.ldexp(np.asarray(v), -e), np.ldexp(beta, -e)), e)

        def hl1(v, a, b, beta, e=1024):
            return np.ldexp(N.halfspace_l1_ball(np.ldexp(np.asarray(v), -e), np.asarray(a) / 2.0,
                                                np.ldexp(b / 2.0, -e), np.ldexp(beta, -e)), e)
    np.testing.assert_array_equal(l1([1e308, 1e308], 1.0), [0.5, 0.5])
    np.testing.assert_array_equal(l1([1e308, -1e308, 3.0], 1.0), [0.5, -0.5, 0.0])
    np.testing.assert_array_equal(hl1([1e308, 1e308], [1.0, 1.0], 1.0, 5.0), [2.5, 2.5])
    below = float(np.nextafter(1e308, 0.0))     # 1e308 - 2**971
    np.testing.assert_array_equal(l1([1e308, below], 3 * 2.0 ** 971), [2.0 ** 972, 2.0 ** 971])

# ---- a call never leaves a non-finite model ---------------------------------------------------

def _finite(state):
    """All floats finite; `sqnorms` (a cache of ||c||^2, +inf where that overflows) aside."""
    for key, value in state.items():
        if key.endswith("sqnorms"):
            continue
        if isinstance(value, dict):
            if not _finite(value):
                return False
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
            if not np.all(np.isfinite(value)):
                return False
        elif isinstance(value, float) and not np.isfinite(value):
            return False
    return True


MAKERS = {
    "regressor": lambda: OnlineKernelRegressor(),
    "regressor-linear": lambda: OnlineKernelRegressor(kernel="linear"),
    "regressor-poly": lambda: OnlineKernelRegressor(kernel="polynomial", eta=0.1),
    "classifier": lambda: OnlineKernelClassifier(),
    "coefreg": lambda: CoefficientRegularizedClassifier(n_centers=4),
    "pa": lambda: RegularizedPAClassifier(),
    "pa-l2": lambda: RegularizedPAClassifier(regularization="l2", beta=1e300),
    "pa-kernel": lambda: RegularizedPAClassifier(kernel="gaussian"),
    "pa-poly": lambda: RegularizedPAClassifier(kernel="polynomial"),
    "pairwise": lambda: PairwiseLearner(eta=0.1),
    "pairwise-metric": lambda: PairwiseLearner(pair_kernel="metric", eta=0.1),
    "pairwise-difference": lambda: PairwiseLearner(pair_kernel="difference", eta=0.1),
}


def _fit_first(est, X, y):
    if isinstance(est, PairwiseLearner):
        return est.partial_fit(X, y.astype(float))
    if isinstance(est, (OnlineKernelClassifier, RegularizedPAClassifier,
                        CoefficientRegularizedClassifier)):
        return est.partial_fit(X, y, classes=[0, 1])
    return est.partial_fit(X, y.astype(float))


@settings(max_examples=120, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(MAKERS)),
       st.sampled_from([1e-320, 1e-160, 1.0, 1e100, 1e155, 1e199, 1e300, 1.7e308]),
       st.sampled_from([1.0, 1e300]), st.integers(1, 3))
def test_no_call_leaves_a_non_finite_model(name, magnitude, target, n_rows):
    est = MAKERS[name]()
    rng = np.random.default_rng(n_rows)
    base = rng.normal(size=(8, 3))
    y0 = (base[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit_first(est, base, y0)
        before = _state(est)
        X = rng.normal(size=(n_rows, 3)) * magnitude
        y = np.resize([1, 0], n_rows) * (target if target != 1.0 else 1)
        if hasattr(est, "classes_") and not isinstance(est, PairwiseLearner):
            y = np.resize([1, 0], n_rows)
        try:
            est.partial_fit(X, y.astype(float) if not hasattr(est, "classes_") else y)
        except (FloatingPointError, ValueError, OverflowError):
            _assert_same_state(_state(est), before)
            return
        assert _finite(_state(est)), f"{name}: a successful call left a non-finite model"
        est.partial_fit(base, y0.astype(float) if not hasattr(est, "classes_") else y0)


# ---- parameters --------------------------------------------------------------------------

def _fitted(make):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    est = make()
    if isinstance(est, PairwiseLearner):
        return est.fit(X, y.astype(float)), X, y.astype(float)
    if isinstance(est, OnlineKernelRegressor):
        return est.fit(X, y.astype(float)), X, y.astype(float)
    return est.fit(X, y), X, y


BAD_AFTER_FIT = [
    (OnlineKernelRegressor, "lam", -1.0), (OnlineKernelRegressor, "eta", 0.0),
    (OnlineKernelRegressor, "quantile", 2.0), (OnlineKernelRegressor, "engine", "gpu"),
    (OnlineKernelRegressor, "lam", np.inf), (OnlineKernelRegressor, "eta_decay", -1.0),
    (OnlineKernelClassifier, "lam", np.nan), (OnlineKernelClassifier, "engine", "gpu"),
    (OnlineKernelClassifier, "loss", "nope"),
    (CoefficientRegularizedClassifier, "lam", 0.0),
    (CoefficientRegularizedClassifier, "eta_decay", 2.0),
    (RegularizedPAClassifier, "alpha", -1.0), (RegularizedPAClassifier, "beta", np.inf),
    (RegularizedPAClassifier, "C", 0.0), (RegularizedPAClassifier, "engine", "gpu"),
    (RegularizedPAClassifier, "variant", "PA-III"),
    (PairwiseLearner, "engine", "gpu"),
]


@pytest.mark.parametrize("cls,param,value", BAD_AFTER_FIT)
def test_set_params_after_fit_is_validated(cls, param, value):
    est, X, y = _fitted(cls)
    est.set_params(**{param: value})
    before = _state(est)
    with pytest.raises(InvalidParameterError, match=repr(param)):
        est.partial_fit(X, y)
    _assert_same_state(_state(est), before)


CHANGED_AFTER_FIT = [
    (OnlineKernelRegressor, "kernel", "laplacian"), (OnlineKernelRegressor, "gamma", 3.0),
    (OnlineKernelRegressor, "budget", 5), (OnlineKernelClassifier, "degree", 2),
    (functools.partial(OnlineKernelClassifier, budget=10), "budget_policy", "smallest"),
    (CoefficientRegularizedClassifier, "n_centers", 7),
    (CoefficientRegularizedClassifier, "gamma", 0.1),
    (RegularizedPAClassifier, "kernel", "gaussian"),
]


@pytest.mark.parametrize("cls,param,value", CHANGED_AFTER_FIT)
def test_model_defining_parameters_cannot_change_silently(cls, param, value):
    est, X, y = _fitted(cls)
    est.set_params(**{param: value})
    before = _state(est)
    with pytest.raises(ValueError, match=rf"{param}.*fit|fit.*{param}"):
        est.partial_fit(X, y)
    _assert_same_state(_state(est), before)
    est.fit(X, y)          # fit starts again with the new value


NON_FINITE = [
    (OnlineKernelRegressor, "gamma", np.inf), (OnlineKernelRegressor, "lam", np.inf),
    (OnlineKernelRegressor, "eta", np.inf), (OnlineKernelRegressor, "epsilon", np.inf),
    (OnlineKernelClassifier, "eta_decay", np.inf), (OnlineKernelClassifier, "coef0", np.inf),
    (RegularizedPAClassifier, "alpha", np.inf), (RegularizedPAClassifier, "beta", np.inf),
    (RegularizedPAClassifier, "truncate_sigma", np.inf),
    (CoefficientRegularizedClassifier, "lam", np.inf),
    (PairwiseLearner, "gamma", np.inf), (PairwiseLearner, "p", np.inf),
    (PairwiseLearner, "eta", np.inf),
]


@pytest.mark.parametrize("cls,param,value", NON_FINITE)
def test_infinite_parameters_are_refused_by_name(cls, param, value):
    with pytest.raises(InvalidParameterError, match=repr(param)):
        _fitted(lambda: cls(**{param: value}))


HUGE_INTS = [(OnlineKernelRegressor, "budget"), (OnlineKernelRegressor, "degree"),
             (CoefficientRegularizedClassifier, "n_centers"), (PairwiseLearner, "buffer"),
             (RegularizedPAClassifier, "degree")]


@pytest.mark.parametrize("cls,param", HUGE_INTS)
def test_huge_integer_parameters_are_refused_by_name(cls, param):
    with pytest.raises(InvalidParameterError, match=repr(param)):
        _fitted(lambda: cls(**{param: 10 ** 30}))


@pytest.mark.parametrize("param", ["gamma", "lam", "eta", "C"])
def test_huge_python_ints_are_numbers(param):
    cls = RegularizedPAClassifier if param == "C" else OnlineKernelRegressor
    extra = {"variant": "PA-I"} if param == "C" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est, X, y = _fitted(lambda: cls(**{param: 10 ** 30}, **extra))
        except FloatingPointError:
            return          # a clear divergence error, not numpy's "ufunc 'isnan'"
    assert np.all(np.isfinite(est.decision_function(X) if param == "C" else est.predict(X)))


def test_a_step_that_resets_the_model_warns_once():
    X = np.random.default_rng(0).normal(size=(50, 2))
    est = OnlineKernelRegressor(eta=10.0, lam=1.0, eta_decay=0.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, X[:, 0])
        est.partial_fit(X, X[:, 0])
    relevant = [w for w in caught if "lam" in str(w.message) and "eta" in str(w.message)]
    assert len(relevant) == 1, [str(w.message) for w in caught]


@pytest.mark.parametrize("chunk_size", [-1, 0, 2.5])
def test_progressive_validation_checks_chunk_size(chunk_size):
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="chunk_size"):
        progressive_validation(OnlineKernelRegressor(), X, X[:, 0], chunk_size=chunk_size)


def test_model_file_error_is_public():
    assert issubclass(okl.ModelFileError, ValueError)
    assert "ModelFileError" in okl.__all__


# ---- the stream generators take counts, not bools -------------------------------------------

def _drifting(**kwargs):
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    kwargs = {"classes": (3, 7, 8, 9), "n_per_phase": 10, **kwargs}
    return okl.synth.drifting_phases(X, y, **kwargs)


@pytest.mark.parametrize("call, match", [
    (lambda: _drifting(n_per_phase=True), "n_per_phase must be an int"),
    (lambda: _drifting(classes=None), "classes must be 4 distinct labels"),
    (lambda: _drifting(classes=3), "classes must be 4 distinct labels"),
    (lambda: _drifting(replace="no"), "replace must be True or False"),
    (lambda: okl.synth.phase_probabilities(True), "n_per_phase must be an int"),
    (lambda: okl.synth.nonidentical(True, 0.5), "n must be an int"),
    (lambda: okl.synth.nonidentical(10, True), "b must be"),
    (lambda: okl.synth.nonidentical(10, 0.5, c=True), "c must be"),
    (lambda: okl.synth.nonidentical(10, 0.5, n_features=True), "n_features must be an int"),
    (lambda: okl.synth.nonidentical(10, 0.5, chunk_size=True), "chunk_size"),
    (lambda: okl.synth.nonidentical(10, 0.5, nu=None), "nu must be"),
    (lambda: okl.synth.mixture_weight(3, True), "b must be a number"),
    (lambda: okl.synth.conditional_quantile(np.zeros((2, 1)), True), "quantile must be"),
])
def test_stream_generators_refuse_bools_and_none_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("how", ["fit", "one row at a time", "learn_one"])
def test_a_huge_coefreg_step_is_named_on_every_path(engine, how):
    """eta = 2000 with lam = 1e-3: 1 - lam eta_t <= 0 empties the model at the first steps;
    the learner says so once, whichever way it is fed, as OnlineKernelClassifier does.
    (eta = 1e300 never leaves that regime: it is refused, test_reliability_values.py.)"""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    est = CoefficientRegularizedClassifier(eta=2000.0, engine=engine)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if how == "fit":
            est.fit(X, y)
        elif how == "one row at a time":
            for i in range(len(X)):
                est.partial_fit(X[i:i + 1], y[i:i + 1], classes=[0, 1])
        else:
            from okl.river import to_river
            model = to_river(est)
            for x, label in zip(X, y):
                model.learn_one(dict(enumerate(x)), int(label))
    named = [w for w in caught if "1 - lam_t eta_t" in str(w.message) and "eta" in str(w.message)]
    assert len(named) == 1, [str(w.message) for w in caught]
    assert np.all(np.isfinite(est.decision_function(X)))


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("how", ["partial_fit", "learn_one"])
def test_a_step_that_would_leave_an_infinite_model_is_refused(engine, fit_intercept, how):
    """A call that succeeds leaves a finite model; this one raises and leaves the model as it was."""
    est = OnlineKernelRegressor(kernel="linear", lam=0, eta=1, eta_decay=0, engine=engine,
                                fit_intercept=fit_intercept)
    est.partial_fit([[1.0]], [1.0])
    before = est.predict([[1e100], [1.0]])
    with pytest.raises(FloatingPointError, match="diverged at step t=2"):
        if how == "partial_fit":
            est.partial_fit([[1e100]], [1e200])
        else:
            est.learn_one(np.array([1e100]), 1e200)
    assert est.t_ == 1
    np.testing.assert_array_equal(est.predict([[1e100], [1.0]]), before)
