"""KernelRLSRegressor's two forgetting modes: back to the prior and uncertainty injection
(forgetting_mode="inflate", bounded by the prior): the weighted-ridge equivalence, the
covariance over a long stream, time passing without data, a stream with dead directions,
files (docs/krls.md, section 11)."""
import json

import numpy as np
import pytest
from scipy.linalg import cholesky

import okl
from okl import KernelRLSRegressor, MultiKernelRegressor
from okl._numpy.krls import NumpyKRLS, NumpyRLSFeatures
from okl.kernels import kernel_matrix


def stream(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    drift = np.linspace(0.0, 2.0, n)[:, None]       # a slope that moves along the stream
    y = (X * (1.0 + drift)).sum(axis=1) + 0.2 * rng.standard_normal(n) + 3.0
    return X, y


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_inflation_gives_the_exponentially_weighted_ridge_mean(engine, fit_intercept):
    """Linear kernel <x, u> + c, feature map phi(x) = [x, sqrt(c)], no budget, nu = 0:
    after T events the posterior mean is the ridge solution with weights lam^(T - i) on
    event i and prior precision lam^(T - t_k) along the direction q_k that the k-th centre
    (event t_k) added to the dictionary's span (Gram-Schmidt of the centres' features),
    of the targets centred by the final offset b."""
    lam, noise, c, d = 0.99, 0.1, 1.0, 3
    X, y = stream(400, d=d, seed=1)
    est = KernelRLSRegressor(kernel="linear", gamma=1.0, coef0=c, noise=noise, forgetting=lam,
                             forgetting_mode="inflate", budget=None, nu=0.0,
                             drift_detector=None, fit_intercept=fit_intercept, engine=engine)
    top = 0.0                   # the largest variance after each event: the bound never binds
    for i in range(len(y)):
        est.partial_fit(X[i:i + 1], y[i:i + 1])
        top = max(top, np.diag(est._krls.get_state()["cov"]).max())
    assert top < 0.9
    T = len(y)
    phi = np.column_stack([X, np.full(T, np.sqrt(c))])
    centres = est.support_vectors_
    assert len(centres) == d + 1                 # the whole span, from the first d + 1 events
    entered = [int(np.flatnonzero((X == u).all(axis=1))[0]) + 1 for u in centres]
    Q, _ = np.linalg.qr(np.column_stack([centres, np.full(d + 1, np.sqrt(c))]).T)
    ages = T - np.arange(1, T + 1)
    P = (phi.T * lam ** ages) @ phi / noise + (Q * lam ** (T - np.array(entered))) @ Q.T
    b = est.intercept_
    w = np.linalg.solve(P, (phi.T * lam ** ages) @ (y - b) / noise)
    Xt = np.random.default_rng(2).normal(size=(30, d))
    expected = b + np.column_stack([Xt, np.full(30, np.sqrt(c))]) @ w
    # 400 recursive steps against one solve: agreement to 1e-9 of the targets' scale
    np.testing.assert_allclose(est.predict(Xt), expected, rtol=0, atol=1e-9 * np.abs(y).max())
    # and the mode matters: back to the prior, the same lambda gives another mean
    prior = KernelRLSRegressor(**dict(est.get_params(), forgetting_mode="prior")).fit(X, y)
    assert np.abs(prior.predict(Xt) - expected).max() > 1e-3 * np.abs(y).max()


@pytest.mark.parametrize("policy", ["significance", "oldest"])
def test_inflation_keeps_the_covariance_symmetric_positive_definite_on_a_long_stream(policy):
    # a full dictionary all stream long: every event is new to it (additions and removals)
    rng = np.random.default_rng(16)
    n = 200_000
    X = rng.uniform(-1.0, 1.0, size=(n, 4))
    y = np.sin(3.0 * X).sum(axis=1) + 0.1 * rng.standard_normal(n)
    est = KernelRLSRegressor(gamma=2.0, noise=1e-3, budget=50, budget_policy=policy,
                             forgetting=0.99, forgetting_mode="inflate").fit(X, y)
    model = est._krls.get_state()
    assert model["next_order"] > n // 2 and len(model["mean"]) == 50
    R, cov = model["R"], model["cov"]
    assert np.all(np.isfinite(R)) and np.all(np.isfinite(cov))
    assert np.array_equal(cov, cov.T)
    eig = np.linalg.eigvalsh(cov)
    assert eig[0] > 0 and eig[-1] < 1e6
    L = cholesky(kernel_matrix(est.support_vectors_, gamma=2.0), lower=True)
    np.testing.assert_allclose(R @ L, np.eye(len(R)), rtol=0, atol=1e-10)
    # the model still learns: its error on more events is well below the targets' spread
    pred = est._progressive_scores(X[:2000], y[:2000])
    assert np.sqrt(np.mean((pred - y[:2000]) ** 2)) < 0.5 * y.std()


def correlation(cov):
    root = np.sqrt(np.diag(cov))
    return cov / np.outer(root, root)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("approximation", [None, "fourier", "nystroem"])
def test_without_data_inflation_keeps_the_mean_and_grows_the_variance_up_to_the_prior(
        engine, approximation):
    """Events of weight 0 let time pass: "inflate" divides each variance by lambda until it
    reaches the prior's, 1, leaves one above 1 (a removal's) as it is, and scales the
    covariance on both sides by a diagonal (the correlations kept); the mean is kept (the
    prior mode pulls both back to the prior)."""
    X, y = stream(300, seed=3)
    est = KernelRLSRegressor(gamma=0.5, forgetting=0.98, forgetting_mode="inflate",
                             approximation=approximation, n_components=30, random_state=0,
                             engine=engine).fit(X, y)
    mean0 = est._krls.get_state()["mean"]
    cov0 = est._krls.get_state()["cov"]
    f0 = est.predict(X[:20])
    est.partial_fit(X[:25], y[:25], sample_weight=np.zeros(25))
    state = est._krls.get_state()
    np.testing.assert_array_equal(state["mean"], mean0)
    grown = np.diag(cov0) / 0.98 ** 25
    assert (grown > 1.0).any() and (grown < 0.9).any()      # some at the bound, some below it
    expected = np.where(np.diag(cov0) > 1.0, np.diag(cov0), np.minimum(grown, 1.0))
    np.testing.assert_allclose(np.diag(state["cov"]), expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(correlation(state["cov"]), correlation(cov0), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.predict(X[:20]), f0)


@pytest.mark.parametrize("approximation", [None, "fourier"])
def test_a_file_saved_before_the_mode_loads_as_prior_and_a_mode_mismatch_is_refused(
        approximation, tmp_path):
    X, y = stream(300, seed=4)
    params = dict(gamma=0.5, forgetting=0.99, forgetting_mode="prior", approximation=approximation,
                  n_components=30, random_state=0)
    est = KernelRLSRegressor(**params).fit(X, y)
    okl.save(est, tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz", allow_pickle=False) as data:
        arrays = dict(data)
    header = json.loads(arrays.pop("__header__").tobytes())
    assert header["objects"]["_krls"]["scalars"].pop("inflate") is False
    assert header["params"].pop("forgetting_mode") == "prior"
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(tmp_path / "old.npz", "wb") as file:
        np.savez(file, __header__=blob, **arrays)
    old = okl.load(tmp_path / "old.npz")
    assert not old._krls.inflate and old.forgetting_mode == "prior"
    np.testing.assert_array_equal(old.predict(X), est.predict(X))
    state = {k: v for k, v in est._krls.get_state().items() if k != "inflate"}
    engine = NumpyRLSFeatures if approximation else NumpyKRLS
    assert not engine.from_state(state).inflate and not type(est._krls).from_state(state).inflate
    # a model that injects uncertainty under an estimator of the prior mode: refused
    header["objects"]["_krls"]["scalars"]["inflate"] = True
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(tmp_path / "edited.npz", "wb") as file:
        np.savez(file, __header__=blob, **arrays)
    with pytest.raises(okl.ModelFileError, match="inflate"):
        okl.load(tmp_path / "edited.npz")


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("approximation", [None, "fourier", "nystroem"])
def test_without_data_for_long_the_covariance_stays_at_the_prior_and_the_model_learns(
        engine, approximation):
    """No windup: 10^5 events of weight 0 (2 10^4 on the slower NumPy engine) at lambda
    0.95 (unbounded, S would pass the floats' range after 13,800) leave S finite, symmetric
    positive definite, each variance the prior's (or, above it, as it was), and the model learns
    and predicts as well as one that did not wait."""
    X, y = stream(2300, seed=5)
    params = dict(gamma=0.5, noise=0.1, forgetting=0.95, forgetting_mode="inflate",
                  approximation=approximation, n_components=30, random_state=0,
                  drift_detector=None, engine=engine)
    fresh = KernelRLSRegressor(**params).fit(X[:300], y[:300])
    est = KernelRLSRegressor(**params).fit(X[:300], y[:300])
    before = np.diag(est._krls.get_state()["cov"])
    zero = np.zeros(10_000)
    for _ in range(10 if engine == "cython" else 2):
        est.partial_fit(np.zeros((10_000, 3)), zero, sample_weight=zero)
    cov = est._krls.get_state()["cov"]
    assert np.isfinite(cov).all() and np.array_equal(cov, cov.T)
    np.testing.assert_allclose(np.diag(cov), np.maximum(before, 1.0), rtol=1e-12, atol=1e-12)
    top = max(1.0, before.max())
    assert np.linalg.eigvalsh(cov)[0] > 0 and np.abs(cov).max() <= top * (1 + 1e-12)
    pred = est._progressive_scores(X[300:], y[300:])
    assert np.isfinite(pred).all() and np.isfinite(est.predict(X[:50], return_std=True)).all()
    expected = fresh._progressive_scores(X[300:], y[300:])
    rmse = [np.sqrt(np.mean((p[-1000:] - y[-1000:]) ** 2)) for p in (pred, expected)]
    assert rmse[0] < 1.01 * rmse[1]


def dead_directions(n, seed=0):
    """A linear stream that after event 1000 has a dead feature and two equal ones."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[1000:, 2] = 0.0
    X[1000:, 3] = X[1000:, 1]
    return X, X @ np.array([1.0, 2.0, -1.0, 0.5]) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("cls, params, rmse", [
    (KernelRLSRegressor, dict(kernel="linear", forgetting=0.998, forgetting_mode="inflate"), 0.2),
    (MultiKernelRegressor, {}, 0.11)])
def test_dead_directions_stop_at_the_prior_and_the_model_keeps_learning(cls, params, rmse):
    """Unbounded, the variance along the directions no event excites grows as lambda^-t and
    the model diverges near event 18,800; bounded, it stops at the prior's and the
    predictions stay near the noise (0.1) over 60,000 events, learned in chunks."""
    X, y = dead_directions(60_000)
    est = cls(**params)
    pred = np.zeros(len(y))
    for lo in range(0, len(y), 10_000):
        if lo:
            pred[lo:lo + 10_000] = est.predict(X[lo:lo + 10_000])
        est.partial_fit(X[lo:lo + 10_000], y[lo:lo + 10_000])
    assert np.isfinite(pred).all()
    assert np.sqrt(np.mean((pred[-20_000:] - y[-20_000:]) ** 2)) < rmse
    members = [m for _, m in est._members] if hasattr(est, "_members") else [est]
    inflating = [m for m in members if m.forgetting_mode == "inflate"]
    assert inflating
    for m in inflating:
        assert np.diag(m._krls.get_state()["cov"]).max() <= 1.0 + 1e-12


@pytest.mark.parametrize("noise", ["auto", 0.1])
def test_inflation_after_a_width_move_predicts_as_lambda_1_does(noise):
    """gamma="scale"'s warm-up carries the posterior to each new width, where variances can sit
    far above the prior (2e5 on Lorenz at event 32); the bound leaves them.  Pulled down to the
    prior they made the model certain of a mean it never learned there: events 50-100 had an
    RMSE of 21.4 (lambda 1: 0.415), and with a noise given, events 100-300 one of 215 (0.195)."""
    X, y = okl.synth.lorenz(300, embedding=6, random_state=0)
    rmse = []
    for params in ({"forgetting": 1.0}, {"forgetting": 0.999, "forgetting_mode": "inflate"}):
        pred = KernelRLSRegressor(noise=noise, **params)._progressive_scores(X, y, reset=True)
        rmse.append([np.sqrt(np.mean((pred[a:b] - y[a:b]) ** 2)) for a, b in ((50, 100),
                                                                             (100, 300))])
    np.testing.assert_array_less(rmse[1], 1.1 * np.array(rmse[0]))


def test_the_default_forgets_by_inflation_at_lambda_0999_and_forgetting_1_is_the_paper():
    params = KernelRLSRegressor().get_params()
    assert (params["forgetting"], params["forgetting_mode"]) == (0.999, "inflate")
    X, y = stream(400, seed=9)
    fixed = dict(gamma=0.5, noise=0.01, budget=None, nu=0.0)
    default = KernelRLSRegressor(**fixed).fit(X, y).predict(X[:50])
    # one parameter away: lambda 1 of either mode is the posterior of every event kept
    paper = KernelRLSRegressor(forgetting=1.0, **fixed).fit(X, y).predict(X[:50])
    prior = KernelRLSRegressor(forgetting=1.0, forgetting_mode="prior", **fixed).fit(X, y)
    np.testing.assert_array_equal(paper, prior.predict(X[:50]))
    assert np.abs(default - paper).max() > 1e-3


def test_the_pool_keeps_its_learners_at_lambda_1_but_the_tracking_one():
    X, y = stream(120, seed=10)
    pool = okl.MultiKernelRegressor().fit(X, y)
    learners = dict(pool._members)
    for name, m in learners.items():
        want = (0.998, "inflate") if name == "tracking" else (1.0, "prior")
        assert (m.forgetting, m.forgetting_mode) == want, name
    pool.partial_fit(X, y)                  # the fitted learners are the parameters' ones
    assert pool.t_ == 240
    given = okl.MultiKernelRegressor(learner_params={"forgetting": 0.999}).fit(X, y)
    assert dict(given._members)["gamma0"].forgetting == 0.999
    given.partial_fit(X, y)
    assert given.t_ == 240
    given.set_params(learner_params=None)
    with pytest.raises(ValueError, match="learner_params"):
        given.partial_fit(X, y)


def test_a_file_saved_before_forgetting_loads_without_it(tmp_path):
    """A file that names neither parameter was written before they existed: it did not forget,
    whatever the default is now."""
    X, y = stream(200, seed=11)
    est = KernelRLSRegressor(gamma=0.5, forgetting=1.0, forgetting_mode="prior").fit(X, y)
    okl.save(est, tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz", allow_pickle=False) as data:
        arrays = dict(data)
    header = json.loads(arrays.pop("__header__").tobytes())
    del header["params"]["forgetting"], header["params"]["forgetting_mode"]
    del header["objects"]["_krls"]["scalars"]["inflate"]
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(tmp_path / "old.npz", "wb") as file:
        np.savez(file, __header__=blob, **arrays)
    old = okl.load(tmp_path / "old.npz")
    assert (old.forgetting, old.forgetting_mode) == (1.0, "prior")
    np.testing.assert_array_equal(old.predict(X), est.predict(X))
