"""approximation="fourier" / "nystroem" on the pointwise learners: engines, atomicity, state, NOGD."""
import pickle

import numpy as np
import pytest

import okl
from okl.evaluation import progressive_validation
from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl._params import InvalidParameterError


def data(n=1500, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n), np.where(X[:, 0] * X[:, 1] > 0, 1, 0)


@pytest.mark.parametrize("approximation", ["fourier", "nystroem"])
@pytest.mark.parametrize("cls", [OnlineKernelRegressor, OnlineKernelClassifier])
def test_engines_give_the_same_iterates(cls, approximation):
    X, yr, yc = data()
    y = yc if cls is OnlineKernelClassifier else yr
    kw = dict(gamma=0.5, approximation=approximation, n_components=60, random_state=3)
    a, b = cls(**kw), cls(engine="numpy", **kw)
    for lo in range(0, len(X), 400):                       # chunks cross the NOGD switch
        sa = a._progressive_scores(X[lo:lo + 400], y[lo:lo + 400], classes=None) \
            if cls is OnlineKernelRegressor else a._progressive_scores(X[lo:lo + 400], y[lo:lo + 400], classes=np.array([0, 1]))
        sb = b._progressive_scores(X[lo:lo + 400], y[lo:lo + 400], classes=None) \
            if cls is OnlineKernelRegressor else b._progressive_scores(X[lo:lo + 400], y[lo:lo + 400], classes=np.array([0, 1]))
        np.testing.assert_allclose(sa, sb, rtol=0, atol=1e-10)
    assert a._expansion.linear is not None and a.n_components_ <= 60


def test_nystroem_switch_keeps_the_function():
    X, y, _ = data(400)
    exact = OnlineKernelRegressor(gamma=0.5, fit_intercept=False).fit(X[:300], y[:300])
    approx = OnlineKernelRegressor(gamma=0.5, approximation="nystroem", n_components=300,
                                   fit_intercept=False)
    approx.fit(X[:300], y[:300])                           # switches after exactly 300 centres
    assert approx._expansion.linear is not None
    np.testing.assert_allclose(approx.predict(X[300:]), exact.predict(X[300:]), atol=1e-6)


def test_fourier_learns_like_the_exact_learner():
    X, y, _ = data(3000)
    exact = progressive_validation(OnlineKernelRegressor(gamma=0.5), X, y)
    fourier = progressive_validation(
        OnlineKernelRegressor(gamma=0.5, approximation="fourier", n_components=500, random_state=0),
        X, y)
    assert fourier.error[-1] < 1.3 * exact.error[-1]


@pytest.mark.filterwarnings("ignore:.*1 - lam_t eta_t")
@pytest.mark.parametrize("approximation", ["fourier", "nystroem"])
def test_failed_chunk_leaves_the_model_as_it_was(approximation):
    X, y, _ = data(200)
    est = OnlineKernelRegressor(gamma=0.5, approximation=approximation, n_components=50,
                                random_state=0).fit(X[:100], y[:100])
    before = est.predict(X[150:])
    bad = X[100:200].copy()
    bad[70, 0] = np.nan
    with pytest.raises(ValueError):
        est.partial_fit(bad, y[100:200])
    np.testing.assert_array_equal(est.predict(X[150:]), before)
    with pytest.raises(FloatingPointError):
        est.set_params(eta=1e300, eta_decay=0.0).partial_fit(X[100:200], y[100:200] * 1e300)
    np.testing.assert_array_equal(est.predict(X[150:]), before)


@pytest.mark.parametrize("approximation", ["fourier", "nystroem"])
@pytest.mark.parametrize("n_fit", [30, 300])                # exact phase, then linear phase
def test_save_load_and_pickle(tmp_path, approximation, n_fit):
    X, _, y = data(400)
    est = OnlineKernelClassifier(gamma=0.5, approximation=approximation, n_components=80,
                                 random_state=1).fit(X[:n_fit], y[:n_fit])
    path = tmp_path / "m.npz"
    okl.save(est, path)
    for other in (okl.load(path), pickle.loads(pickle.dumps(est))):
        np.testing.assert_array_equal(other.decision_function(X), est.decision_function(X))
        other.partial_fit(X[n_fit:], y[n_fit:])
    est.partial_fit(X[n_fit:], y[n_fit:])
    np.testing.assert_allclose(other.decision_function(X), est.decision_function(X), atol=1e-12)


@pytest.mark.parametrize("random_state", [7, np.int64(7), None])
def test_a_pickle_draws_seeded_features_again(random_state):
    # Dask ships models by pickle: with an int seed the map's W and b do not travel
    X, _, y = data(300)
    est = OnlineKernelClassifier(gamma=0.5, approximation="fourier", n_components=400,
                                 random_state=random_state).fit(X, y)
    fmap = est._expansion.fmap
    blob = pickle.dumps(est, protocol=5)
    other = pickle.loads(blob)
    np.testing.assert_array_equal(other._expansion.fmap.W, fmap.W)
    np.testing.assert_array_equal(other._expansion.fmap.b, fmap.b)
    np.testing.assert_array_equal(other.decision_function(X), est.decision_function(X))
    if random_state is None:        # nothing to draw them from: they travel
        assert len(blob) > fmap.W.nbytes
    else:
        assert len(blob) < fmap.W.nbytes


def test_seeds_and_parameter_checks():
    X, y, _ = data(100)
    a = OnlineKernelRegressor(approximation="fourier", n_components=20, random_state=4).fit(X, y)
    b = OnlineKernelRegressor(approximation="fourier", n_components=20, random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    with pytest.raises(InvalidParameterError, match="Set one of them"):
        OnlineKernelRegressor(approximation="fourier", budget=10).fit(X, y)
    with pytest.raises(InvalidParameterError, match="approximation='nystroem'"):
        OnlineKernelRegressor(kernel="polynomial", approximation="fourier").fit(X, y)
    OnlineKernelRegressor(kernel="polynomial", approximation="nystroem", n_components=10).fit(X, y)


def test_gamma_scale_feature_model_round_trips(tmp_path):
    import okl
    X = np.random.default_rng(0).normal(size=(200, 3))
    est = OnlineKernelRegressor(gamma="scale", approximation="fourier", n_components=20).fit(
        X, X[:, 0])
    okl.save(est, tmp_path / "m.okl")
    np.testing.assert_array_equal(okl.load(tmp_path / "m.okl").predict(X), est.predict(X))


def test_a_pickled_matern_fourier_model_draws_its_own_frequencies_again():
    import pickle
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.sin(X[:, 0])
    est = OnlineKernelRegressor(kernel="matern", nu=0.5, approximation="fourier",
                                n_components=30, gamma=0.5, random_state=4).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
