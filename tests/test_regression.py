"""OnlineKernelRegressor: engines, schedules, validation, atomicity, persistence, sklearn."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import okl
from okl import OnlineKernelRegressor
from okl.regression import REGRESSION_LOSSES

KERNEL_PARAMS = {
    "gaussian": dict(gamma=0.5),
    "laplacian": dict(gamma=0.5),
    "linear": dict(coef0=1.0),
    "polynomial": dict(gamma=0.2, degree=3, coef0=1.0),
}


def stream(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    return X, y


def model_state(est):
    """Everything that defines a fitted model, for exact before/after comparisons."""
    scalars = {k: v for k, v in vars(est).items() if not k.startswith("_expansion")}
    return scalars, est._expansion.get_state()


def assert_same_state(a, b):
    assert a[0].keys() == b[0].keys()
    for key in a[0]:
        np.testing.assert_array_equal(a[0][key], b[0][key], err_msg=key)
    for key in a[1]:
        np.testing.assert_array_equal(a[1][key], b[1][key], err_msg=key)


@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
@pytest.mark.parametrize("loss", REGRESSION_LOSSES)
def test_engines_give_the_same_iterates(kernel, loss):
    X, y = stream(2000)
    params = dict(kernel=kernel, loss=loss, quantile=0.3, epsilon=0.1, lam=0.01, lam_decay=0.2,
                  **KERNEL_PARAMS[kernel])
    fast = OnlineKernelRegressor(**params)
    slow = OnlineKernelRegressor(engine="numpy", **params)
    f_fast = fast._progressive_scores(X, y)
    f_slow = slow._progressive_scores(X, y)
    assert fast.n_support_ == slow.n_support_ > 0
    np.testing.assert_allclose(f_fast, f_slow, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fast.dual_coef_, slow.dual_coef_, rtol=0, atol=1e-10)
    X_test, _ = stream(100, seed=1)
    np.testing.assert_allclose(fast.predict(X_test), slow.predict(X_test), rtol=0, atol=1e-10)


def test_fit_in_one_call_equals_partial_fit_in_chunks():
    X, y = stream(500)
    whole = OnlineKernelRegressor(loss="pinball", quantile=0.8, lam_decay=0.2).fit(X, y)
    parts = OnlineKernelRegressor(loss="pinball", quantile=0.8, lam_decay=0.2)
    for lo in range(0, 500, 37):
        parts.partial_fit(X[lo:lo + 37], y[lo:lo + 37])
    assert parts.t_ == whole.t_ == 500
    np.testing.assert_array_equal(parts.dual_coef_, whole.dual_coef_)
    # fit restarts the stream
    whole.fit(X[:10], y[:10])
    assert whole.t_ == 10


def test_engine_can_change_between_calls():
    X, y = stream(300)
    ref = OnlineKernelRegressor().fit(X, y)
    est = OnlineKernelRegressor().fit(X[:150], y[:150])
    est.set_params(engine="numpy").partial_fit(X[150:], y[150:])
    np.testing.assert_allclose(est.dual_coef_, ref.dual_coef_, atol=1e-12)


def test_auto_step_is_smale_yao():
    X, y = stream(50)
    X[7] *= 10      # the linear kernel's C_K^2 is a running maximum of ||x||^2 + coef0
    for kernel, lam in [("gaussian", 0.1), ("linear", 0.0)]:
        est = OnlineKernelRegressor(kernel=kernel, lam=lam, eta_decay=0.75, coef0=1.0)
        for t in range(1, 51):
            est.partial_fit(X[t - 1:t], y[t - 1:t])
            ck2 = 1.0 if kernel == "gaussian" else (X[:t] ** 2).sum(axis=1).max() + 1.0
            assert est.ck2_ == pytest.approx(ck2, rel=1e-14)
            assert est.eta_ == pytest.approx(1.0 / ((lam + ck2) * t ** 0.75), rel=1e-14)


def test_explicit_and_callable_schedules():
    X, y = stream(40)
    est = OnlineKernelRegressor(eta=0.5, eta_decay=0.5, lam=0.2, lam_decay=0.25).fit(X, y)
    assert est.eta_ == pytest.approx(0.5 * 40 ** -0.5)
    assert est.lam_ == pytest.approx(0.2 * 40 ** -0.25)
    by_hand = OnlineKernelRegressor(eta=lambda t: 0.5 / np.sqrt(t), lam=0.2, lam_decay=0.25).fit(X, y)
    np.testing.assert_allclose(by_hand.dual_coef_, est.dual_coef_, rtol=1e-14)
    with pytest.raises(ValueError, match="callable eta must map"):
        OnlineKernelRegressor(eta=lambda t: -1.0 * t).fit(X, y)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_bad_input_is_rejected_and_loses_nothing(engine):
    X, y = stream(100)
    est = OnlineKernelRegressor(engine=engine).fit(X, y)
    before = model_state(est)
    X_nan = X[:10].copy()
    X_nan[5, 1] = np.nan
    X_inf = X[:10].copy()
    X_inf[9, 0] = np.inf
    y_nan = y[:10].copy()
    y_nan[3] = np.nan
    cases = [
        (X_nan, y[:10], ValueError, "NaN"),
        (X_inf, y[:10], ValueError, "infinity"),
        (X[:10], y_nan, ValueError, "NaN"),
        (X[:10, :2], y[:10], ValueError, "X has 2 features, but OnlineKernelRegressor is expecting 3"),
        (X[:10], y[:9], ValueError, "inconsistent numbers of samples"),
        (X[0], y[:1], ValueError, "Expected 2D array"),
        (sp.csr_matrix(X[:10]), y[:10], TypeError, "dense input only.*sparse"),
    ]
    for X_bad, y_bad, error, message in cases:
        with pytest.raises(error, match=message):
            est.partial_fit(X_bad, y_bad)
        assert_same_state(model_state(est), before)
    with pytest.raises(ValueError, match="X has 2 features"):
        est.predict(X[:3, :2])


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_divergence_mid_chunk_raises_and_restores(engine):
    X, y = stream(300)
    X *= 50     # a fixed step of 1 on the linear kernel explodes within a few steps
    est = OnlineKernelRegressor(kernel="linear", engine=engine, eta=0.02, eta_decay=0.0,
                                budget=20).fit(X[:5] / 50, y[:5])
    before = model_state(est)
    with pytest.raises(FloatingPointError, match=r"diverged at step t=\d+.*eta='auto'"):
        est.partial_fit(X, y * 1e6)
    assert_same_state(model_state(est), before)
    # the model still learns afterwards
    est.partial_fit(X[:5] / 50, y[:5])
    assert est.t_ == 10


def test_a_failed_first_call_leaves_an_unfitted_model():
    X, y = stream(10)
    y[4] = np.inf
    est = OnlineKernelRegressor()
    with pytest.raises(ValueError):
        est.partial_fit(X, y)
    assert vars(est) == vars(OnlineKernelRegressor())


@pytest.mark.parametrize("params, message", [
    (dict(eta=-1), "The 'eta' parameter of OnlineKernelRegressor must be a float in (0, inf), "
                   "a str among {'auto', 'scaled'} or a callable. Got -1 instead."),
    (dict(kernel="rbf"), "The 'kernel' parameter"),
    (dict(budget=0), "The 'budget' parameter of OnlineKernelRegressor must be None, an int in [1, inf) or 'auto'"),
    (dict(quantile=1.0), "The 'quantile' parameter"),
    (dict(loss="huber"), "loss='huber' takes its threshold delta from epsilon"),
])
def test_parameters_are_checked_at_fit(params, message):
    est = OnlineKernelRegressor(**params)      # no check in __init__
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        est.fit(*stream(5))


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_pickle_and_okl_save_round_trip(engine, tmp_path):
    X, y = stream(200)
    est = OnlineKernelRegressor(loss="pinball", quantile=0.9, epsilon=0.05, budget=60,
                                budget_policy="smallest", engine=engine).fit(X, y)
    X_test, _ = stream(50, seed=4)
    expected = est.predict(X_test)
    clone_ = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone_.predict(X_test), expected)
    path = tmp_path / "model.npz"
    okl.save(est, path)
    loaded = okl.load(path)
    assert type(loaded._expansion) is type(est._expansion)
    assert loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict(X_test), expected)
    # both continue the stream identically
    est.partial_fit(X[:30], y[:30])
    loaded.partial_fit(X[:30], y[:30])
    np.testing.assert_array_equal(loaded.predict(X_test), est.predict(X_test))
    assert loaded.t_ == est.t_ == 230


def test_save_refuses_a_callable_and_load_never_unpickles(tmp_path):
    X, y = stream(20)
    with pytest.raises(TypeError, match="okl.save stores data only; the parameter 'eta'"):
        okl.save(OnlineKernelRegressor(eta=lambda t: 1 / t).fit(X, y), tmp_path / "m.npz")
    np.savez(tmp_path / "evil.npz", __header__=np.array([object()], dtype=object))
    with pytest.raises(okl.ModelFileError, match="never unpickles"):
        okl.load(tmp_path / "evil.npz")


def test_unfitted_save_and_load_at_any_file_name(tmp_path):
    okl.save(OnlineKernelRegressor(gamma=2.0), tmp_path / "model.okl")
    assert okl.load(tmp_path / "model.okl").get_params()["gamma"] == 2.0


def test_in_a_pipeline():
    X, y = stream(400)
    pipe = make_pipeline(StandardScaler(), OnlineKernelRegressor(gamma=0.3)).fit(X, y)
    assert pipe.score(*stream(200, seed=5)) > 0.6


@parametrize_with_checks([OnlineKernelRegressor(), OnlineKernelRegressor(engine="numpy"),
                          OnlineKernelRegressor(loss="pinball", kernel="laplacian", budget=50)],
                         expected_failed_checks=lambda est: est.expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_ready_arrays_take_the_fast_path_with_the_same_result():
    X, y = stream(300)
    slow = OnlineKernelRegressor().fit(X, y)
    fast = OnlineKernelRegressor().fit(X[:1], y[:1])
    for i in range(1, 300):        # C-contiguous float64 rows: no validate_data
        fast.partial_fit(X[i:i + 1], y[i:i + 1])
    np.testing.assert_array_equal(fast.dual_coef_, slow.dual_coef_)
    as_lists = OnlineKernelRegressor().fit(X[:1], y[:1])
    for i in range(1, 300):        # lists and Fortran order take the generic path
        as_lists.partial_fit(np.asfortranarray(X[i:i + 1]), y[i:i + 1].tolist())
    np.testing.assert_array_equal(as_lists.dual_coef_, slow.dual_coef_)
    np.testing.assert_array_equal(fast.predict(X[:5]), slow.predict(X[:5].tolist()))
