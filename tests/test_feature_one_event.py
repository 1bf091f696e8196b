"""Feature models one event at a time: the compiled step (`FeatureEvents`) is the chunk's step."""
import copy

import numpy as np
import pytest

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl._core._pointwise import FeatureEvents, PointwiseEvents

APPROX = {
    "fourier": dict(approximation="fourier", n_components=60, gamma=0.4, random_state=3),
    "nystroem": dict(approximation="nystroem", n_components=25, gamma=0.4),
    "nystroem-poly": dict(approximation="nystroem", n_components=25, kernel="polynomial",
                          gamma=0.3, degree=2, coef0=1.0),
    "fourier-laplacian": dict(approximation="fourier", n_components=60, kernel="laplacian",
                              gamma=0.4, random_state=1),
    "nystroem-laplacian": dict(approximation="nystroem", n_components=25, kernel="laplacian",
                               gamma=0.4),
    "nystroem-linear": dict(approximation="nystroem", n_components=4, kernel="linear",
                            coef0=1.0),
}


def stream(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    return X, y


def labels(y):
    return np.where(y > np.median(y), "up", "down")


def weights(est):
    model = est._expansion
    return model.linear.coef_ if model.linear is not None else model.expansion.coef_


def assert_same(a, b):
    np.testing.assert_allclose(weights(a), weights(b), rtol=0, atol=1e-12)
    for name in ("t_", "ck2_", "eta_", "lam_", "intercept_"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-12, abs=1e-12), name


def run_events(est, X, y):
    preds = []
    for xi, yi in zip(X, y):
        preds.append(est.predict_one(xi) if hasattr(est, "t_") else None)
        est.learn_one(xi, yi)
    return preds


@pytest.mark.parametrize("approx", APPROX)
@pytest.mark.parametrize("task", ["regression", "classification"])
def test_events_equal_partial_fit(approx, task):
    X, y = stream()
    if task == "regression":
        make = lambda: OnlineKernelRegressor(fit_intercept=True, **APPROX[approx])  # noqa: E731
    else:
        y = labels(y)
        make = lambda: OnlineKernelClassifier(loss="logistic", fit_intercept=True,  # noqa: E731
                                              **APPROX[approx])
    ours = make()
    preds = run_events(ours, X, y)
    assert isinstance(ours._compiled_events([None]), FeatureEvents)
    ref = make().partial_fit(X, y)
    assert_same(ours, ref)
    ref = make()
    ref_preds = []
    for i in range(len(X)):
        ref_preds.append(ref.predict(X[i:i + 1])[0] if i else None)
        ref.partial_fit(X[i:i + 1], y[i:i + 1])
    if task == "regression":
        np.testing.assert_allclose(preds[1:], ref_preds[1:], rtol=0, atol=1e-12)
        one, chunk = [ours.predict_one(x) for x in X[:20]], ours.predict(X[:20])
    else:
        assert preds[1:] == ref_preds[1:]
        one = [ours.decision_function_one(x) for x in X[:20]]
        chunk = ours.decision_function(X[:20])
    np.testing.assert_allclose(one, chunk, rtol=0, atol=1e-12)   # the compiled predict


def test_nystroem_switches_then_takes_the_compiled_step():
    X, y = stream()
    est = OnlineKernelRegressor(**APPROX["nystroem"])
    for i in range(10):
        est.learn_one(X[i], y[i])
    assert est._expansion.linear is None                    # the exact phase: its expansion's
    assert isinstance(est._compiled_events([None]), PointwiseEvents)
    for i in range(10, len(X)):
        est.learn_one(X[i], y[i])
    assert est._expansion.linear is not None
    assert isinstance(est._compiled_events([None]), FeatureEvents)


def test_a_kept_row_serves_only_the_same_row():
    X, y = stream()
    est = OnlineKernelRegressor(**APPROX["fourier"]).partial_fit(X[:50], y[:50])
    ref = copy.deepcopy(est)
    assert est.predict_one(X[50]) == pytest.approx(ref.predict(X[50:51])[0], abs=1e-12)
    est.learn_one(X[50], y[50])
    ref.partial_fit(X[50:51], y[50:51])
    # after the step, the same row gives the new model's value, another row its own
    assert est.predict_one(X[50]) == pytest.approx(ref.predict(X[50:51])[0], abs=1e-12)
    assert est.predict_one(X[51]) == pytest.approx(ref.predict(X[51:52])[0], abs=1e-12)
    row = X[52].copy()
    est.predict_one(row)
    row[0] += 0.5                                           # the same buffer, new values
    assert est.predict_one(row) == pytest.approx(ref.predict(row[None, :])[0], abs=1e-12)


@pytest.mark.parametrize("x, error", [
    (np.array([np.nan, 0, 0, 0, 0]), ValueError),
    (np.array([np.inf, 0, 0, 0, 0]), ValueError),
    (np.zeros(4), ValueError),
])
@pytest.mark.parametrize("approx", ["fourier", "nystroem"])
def test_bad_events_leave_the_model_as_it_was(x, error, approx):
    X, y = stream()
    est = OnlineKernelRegressor(**APPROX[approx]).partial_fit(X[:100], y[:100])
    est.learn_one(X[100], y[100])
    before = copy.deepcopy(est)
    with pytest.raises(error):
        est.learn_one(x, 1.0)
    with pytest.raises(error):
        est.predict_one(x)
    assert_same(est, before)
    est.learn_one(X[101], y[101])
    before.learn_one(X[101], y[101])
    assert_same(est, before)


@pytest.mark.filterwarnings("ignore:.*cannot shrink past zero")
def test_divergence_leaves_the_model_as_it_was():
    X, y = stream()
    est = OnlineKernelRegressor(eta=1e300, eta_decay=0.0, loss="squared",
                                **APPROX["fourier"]).partial_fit(X[:1], y[:1])
    est.learn_one(X[1], y[1])
    before = copy.deepcopy(est)
    with pytest.raises(FloatingPointError, match="left as it was"):
        for i in range(2, 40):
            est.learn_one(X[i] * 1e5, 1e300)
            before = copy.deepcopy(est)
    assert_same(est, before)


@pytest.mark.parametrize("row", [list, lambda r: r.astype(np.float32).astype(np.float64),
                                 lambda r: np.asfortranarray(np.vstack([r, r]))[0],
                                 lambda r: {f"x{j}": v for j, v in enumerate(r)}])
def test_row_types_take_the_same_step(row):
    X, y = stream(n=80)
    X = X.astype(np.float32).astype(np.float64)         # float32 rows hold the same values
    ours = OnlineKernelRegressor(**APPROX["fourier"])
    ref = OnlineKernelRegressor(**APPROX["fourier"])
    for xi, yi in zip(X, y):
        ours.learn_one(row(xi), yi)
        ref.learn_one(xi, yi)
    assert_same(ours, ref)


def test_set_params_and_a_restore_rebuild_the_step():
    X, y = stream()
    est = OnlineKernelRegressor(**APPROX["fourier"]).partial_fit(X[:50], y[:50])
    est.learn_one(X[50], y[50])
    events = est._one_event()._fast()
    est.set_params(lam=0.1)
    est.learn_one(X[51], y[51])
    ref = OnlineKernelRegressor(**APPROX["fourier"]).partial_fit(X[:51], y[:51])
    ref.set_params(lam=0.1)
    ref.partial_fit(X[51:52], y[51:52])
    assert_same(est, ref)
    assert est._one_event()._fast() is not events
    # an engine change and back: new linear models, a new step
    est.set_params(engine="numpy")
    est.learn_one(X[52], y[52])
    est.set_params(engine="cython")
    est.learn_one(X[53], y[53])
    ref.set_params(engine="numpy")
    ref.partial_fit(X[52:53], y[52:53])
    ref.set_params(engine="cython")
    ref.partial_fit(X[53:54], y[53:54])
    assert_same(est, ref)


@pytest.mark.parametrize("approx", ["fourier", "nystroem"])
def test_weights_and_a_callable_step_take_the_chunk_step(approx):
    X, y = stream()
    w = np.random.default_rng(1).choice([0.0, 0.5, 2.0], size=len(X))
    params = dict(APPROX[approx], eta=lambda t: 0.3 / np.sqrt(t), eta_decay=0.0,
                  fit_intercept=True)
    ours = OnlineKernelRegressor(**params)
    for xi, yi, wi in zip(X, y, w):
        ours.learn_one(xi, yi, sample_weight=wi)
    assert isinstance(ours._compiled_events([None]), FeatureEvents)
    assert_same(ours, OnlineKernelRegressor(**params).partial_fit(X, y, sample_weight=w))


@pytest.mark.parametrize("kernel, params", [
    ("gaussian", dict(gamma=0.3)), ("laplacian", dict(gamma=0.3)), ("matern", dict(gamma=0.3)),
    ("linear", dict(coef0=1.0)), ("polynomial", dict(gamma=0.5, degree=3, coef0=1.0))])
def test_the_compiled_row_map_is_the_chunk_map(kernel, params):
    from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 6))
    maps = [NystroemFeatures(X[:37], kernel, **params)]
    if kernel in ("gaussian", "laplacian", "matern"):
        maps.append(RandomFourierFeatures(kernel, params["gamma"], 70, 0).fit(6))
    for fmap in maps:
        Z = fmap.row_map().transform(X)
        exact = isinstance(fmap, RandomFourierFeatures)        # the very same function
        np.testing.assert_allclose(Z, fmap.transform(X), rtol=0, atol=0 if exact else 1e-12)
