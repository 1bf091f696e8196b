"""The Matern kernel and its parameter nu: formula, engines, features, estimators, files."""
import io
import json
import math

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import Matern

import okl
from okl import (CoefficientRegularizedClassifier, OnlineKernelClassifier, OnlineKernelRegressor,
                 PairwiseLearner, RegularizedPAClassifier)
from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
from okl._feature_maps import kernel_matrix as blocked_matrix
from okl._numpy.kernels import kernel_values
from okl._params import InvalidParameterError
from okl.kernels import MATERN_NU, kernel_matrix, kernel_params

rng = np.random.default_rng(21)
X = rng.normal(size=(40, 5))
U = rng.normal(size=(25, 5))


def sklearn_matern(A, B, gamma, nu):
    """okl's Matern is scikit-learn's with length scale 1 / sqrt(2 gamma)."""
    return Matern(length_scale=1.0 / math.sqrt(2.0 * gamma), nu=nu)(A, B)


@pytest.mark.parametrize("nu", MATERN_NU)
@pytest.mark.parametrize("gamma", [0.05, 0.7, 3.0])
def test_every_formula_is_scikit_learns_matern(nu, gamma):
    expected = sklearn_matern(X, U, gamma, nu)
    np.testing.assert_allclose(kernel_matrix(X, U, "matern", gamma, nu=nu), expected,
                               rtol=1e-12, atol=1e-15)                       # Cython
    k = kernel_params("matern", gamma=gamma, nu=nu)
    numpy_rows = np.array([kernel_values(k, U, x) for x in X])             # NumPy twin
    np.testing.assert_allclose(numpy_rows, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(blocked_matrix(kernel_params("matern", gamma=gamma, nu=nu), X, U),
                               expected, rtol=1e-12, atol=1e-15)            # Nystroem's blocks


def test_nu_half_is_the_laplacian_kernel_in_one_dimension():
    """exp(-sqrt(2 gamma) |x - u|); okl's Laplacian is exp(-gamma' ||x - u||_1), the same in 1-D."""
    x, u = X[:, :1], U[:, :1]
    np.testing.assert_allclose(kernel_matrix(x, u, "matern", 0.4, nu=0.5),
                               kernel_matrix(x, u, "laplacian", math.sqrt(0.8)), rtol=1e-13)
    assert not np.allclose(kernel_matrix(X, U, "matern", 0.4, nu=0.5),     # L2, not L1, in 5-D
                           kernel_matrix(X, U, "laplacian", math.sqrt(0.8)))


def test_far_points_give_zero_and_nan_stays_nan():
    x = np.zeros((1, 2))
    far = np.array([[1e3, 0.0], [1e200, 0.0], [np.inf, 0.0], [np.nan, 0.0]])
    for nu in MATERN_NU:
        got = kernel_matrix(x, far, "matern", 1.0, nu=nu)[0]
        assert np.array_equal(got[:3], [0.0, 0.0, 0.0]) and np.isnan(got[3])
        with np.errstate(invalid="ignore"):
            twin = kernel_values(kernel_params("matern", nu=nu), far, x[0])
        assert np.array_equal(twin[:3], [0.0, 0.0, 0.0]) and np.isnan(twin[3])


def test_the_gram_matrix_is_psd_with_unit_diagonal():
    for nu in MATERN_NU:
        K = kernel_matrix(X, kernel="matern", gamma=0.5, nu=nu)
        np.testing.assert_allclose(np.diag(K), 1.0)
        assert np.linalg.eigvalsh(K).min() >= -1e-12


@pytest.mark.parametrize("nu", MATERN_NU)
def test_fourier_features_average_to_the_matern_kernel(nu):
    """z(x).z(u) is a mean of D terms 2 cos(w.x + b) cos(w.u + b) in [-2, 2] with mean K(x, u).

    Hoeffding and a union bound over the pairs: |mean - K| <= sqrt(8 log(2 P / p) / D) for all P
    pairs but with probability p = 1e-9; the seed is fixed, and the tolerance is what a correct
    sampler meets.  It is smaller than the gap to the Gaussian of the same gamma, so Gaussian
    frequencies (or any other kernel's) would fail.
    """
    gamma, D = 0.25, 400_000
    A, B = X[:6, :3], U[:6, :3]
    fmap = RandomFourierFeatures("matern", gamma, D, random_state=7, nu=nu).fit(3)
    approx = fmap.transform(A) @ fmap.transform(B).T
    exact = sklearn_matern(A, B, gamma, nu)
    tol = math.sqrt(8.0 * math.log(2.0 * exact.size / 1e-9) / D)
    assert np.abs(approx - exact).max() <= tol
    assert np.abs(kernel_matrix(A, B, "gaussian", gamma) - exact).max() > 3 * tol


def test_nystroem_features_are_exact_on_their_landmarks():
    f = NystroemFeatures(X[:20], "matern", gamma=0.3, nu=2.5)
    Z = f.transform(X[:20])
    np.testing.assert_allclose(Z @ Z.T, sklearn_matern(X[:20], X[:20], 0.3, 2.5), atol=1e-9)


def _stream(n=600, d=4, seed=3):
    r = np.random.default_rng(seed)
    Xs = r.normal(size=(n, d))
    return Xs, np.sin(Xs[:, 0]) + 0.1 * r.normal(size=n), np.where(Xs[:, 1] > 0, 1, -1)


@pytest.mark.parametrize("nu", MATERN_NU)
@pytest.mark.parametrize("extra", [{}, {"budget": 50, "budget_policy": "oldest"},
                                   {"approximation": "fourier", "random_state": 0},
                                   {"approximation": "nystroem", "n_components": 40}])
def test_both_engines_take_the_same_steps(nu, extra):
    Xs, y, _ = _stream()
    make = lambda engine: OnlineKernelRegressor(  # noqa: E731
        kernel="matern", nu=nu, gamma=0.3, engine=engine, **extra)
    a, b = make("cython").fit(Xs, y), make("numpy").fit(Xs, y)
    np.testing.assert_allclose(a.predict(Xs), b.predict(Xs), rtol=0, atol=1e-10)
    if not extra.get("approximation"):
        np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=0, atol=1e-10)


@pytest.mark.parametrize("make", [
    lambda e: OnlineKernelClassifier(kernel="matern", nu=0.5, gamma=0.3, engine=e),
    lambda e: CoefficientRegularizedClassifier(kernel="matern", nu=2.5, gamma=0.3, engine=e),
    lambda e: RegularizedPAClassifier(kernel="matern", nu=1.5, gamma=0.3, engine=e),
    lambda e: RegularizedPAClassifier(kernel="matern", nu=2.5, gamma=0.3, engine=e,
                                      approximation="nystroem", n_components=30),
    lambda e: RegularizedPAClassifier(kernel="matern", nu=0.5, gamma=0.3, engine=e,
                                      approximation="fourier", random_state=1),
])
def test_every_classifier_learns_on_the_matern_kernel_in_both_engines(make):
    Xs, _, y = _stream()
    a, b = make("cython").fit(Xs, y), make("numpy").fit(Xs, y)
    np.testing.assert_allclose(a.decision_function(Xs), b.decision_function(Xs), atol=1e-10)
    assert (a.predict(Xs) == y).mean() > 0.8


def test_pairwise_learner_takes_nu():
    Xs, y, _ = _stream(200)

    def fitted(nu, engine="cython"):
        return PairwiseLearner(pair_kernel="difference", kernel="matern", nu=nu, gamma=0.3,
                               engine=engine).fit(Xs, y)
    a, b, c = fitted(0.5), fitted(0.5, "numpy"), fitted(2.5)
    pairs = (Xs[:20], Xs[20:40])
    np.testing.assert_allclose(a.decision_function(*pairs), b.decision_function(*pairs),
                               atol=1e-10)
    assert not np.allclose(a.decision_function(*pairs), c.decision_function(*pairs))


@pytest.mark.parametrize("cls", [OnlineKernelRegressor, OnlineKernelClassifier,
                                 CoefficientRegularizedClassifier, RegularizedPAClassifier,
                                 PairwiseLearner])
def test_every_kernel_learner_has_nu_and_refuses_other_values(cls):
    assert cls().get_params()["nu"] == 1.5
    Xs, _, y = _stream(20)
    for bad in (1.0, 3.5, "1.5", True, np.nan):
        with pytest.raises(InvalidParameterError, match="'nu' parameter"):
            cls(kernel="matern", nu=bad, gamma=0.3).fit(Xs, y)


def test_partial_fit_cannot_change_nu():
    Xs, y, _ = _stream(40)
    est = OnlineKernelRegressor(kernel="matern", nu=1.5).fit(Xs, y)
    est.set_params(nu=2.5)
    with pytest.raises(ValueError, match="nu"):
        est.partial_fit(Xs, y)


@pytest.mark.parametrize("extra", [{}, {"approximation": "fourier", "random_state": 0},
                                   {"approximation": "nystroem", "n_components": 20}])
def test_nu_round_trips_through_a_file_and_a_tampered_nu_is_refused(extra, tmp_path):
    Xs, y, yc = _stream(100)
    for est in (OnlineKernelRegressor(kernel="matern", nu=2.5, gamma=0.3, **extra).fit(Xs, y),
                RegularizedPAClassifier(kernel="matern", nu=2.5, gamma=0.3, **extra).fit(Xs, yc)):
        path = tmp_path / "m.npz"
        okl.save(est, path)
        loaded = okl.load(path)
        assert loaded.nu == 2.5
        np.testing.assert_array_equal(loaded.decision_function(Xs) if hasattr(
            est, "decision_function") else loaded.predict(Xs), est.decision_function(Xs)
            if hasattr(est, "decision_function") else est.predict(Xs))
        with np.load(path) as data:
            header = json.loads(bytes(data["__header__"]).decode())
            arrays = {k: data[k] for k in data.files if k != "__header__"}
        for value in (0.5, 1.0):        # another valid nu than the model's, an invalid one
            header["params"]["nu"] = value
            buffer = io.BytesIO()
            np.savez(buffer, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8),
                     **arrays)
            path.write_bytes(buffer.getvalue())
            with pytest.raises(okl.ModelFileError, match="nu"):
                okl.load(path)


def test_fourier_is_refused_for_a_kernel_without_a_sampler():
    Xs, y, _ = _stream(20)
    with pytest.raises(InvalidParameterError, match="no frequency sampler"):
        OnlineKernelRegressor(kernel="polynomial", approximation="fourier").fit(Xs, y)


def test_the_theory_targets_take_the_kernels_own_parameters():
    """kernel_ridge_target and rkhs_distance read Matern's nu (they used nu = 1.5 whatever)."""
    from okl.evaluation.targets import kernel_ridge_target, rkhs_distance
    from okl.kernels import kernel_matrix
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    for nu in (0.5, 2.5):
        K = kernel_matrix(X, kernel="matern", gamma=0.5, nu=nu)
        a = kernel_ridge_target(X, y, 0.1, kernel="matern", gamma=0.5, nu=nu)
        np.testing.assert_allclose((K + 20 * 0.1 * np.eye(20)) @ a, y, atol=1e-10)
        assert rkhs_distance(X, a, X[:5], a[:5], kernel="matern", gamma=0.5, nu=nu) == \
            pytest.approx(np.sqrt(a[5:] @ K[5:, 5:] @ a[5:]), rel=1e-9)
