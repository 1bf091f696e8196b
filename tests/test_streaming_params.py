"""sample_weight, fit_intercept, classes, gamma='scale': both engines, chunks and events agree."""
import warnings

import numpy as np
import pytest

from okl import (
    CoefficientRegularizedClassifier, OnlineKernelClassifier, OnlineKernelRegressor,
    RegularizedPAClassifier,
)
from okl.kernels import KernelScaleWarning


def stream(n=200, d=3, seed=0, offset=0.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = offset + np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    return X, y


def model(est):
    state = est._expansion.get_state()
    return (state["centers"], state["scale"] * state["coef"], est.t_, est.intercept_)


def assert_same(a, b, atol=1e-12):
    for u, v in zip(model(a), model(b)):
        np.testing.assert_allclose(u, v, rtol=0, atol=atol)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("make", [
    lambda **kw: OnlineKernelRegressor(gamma=0.5, **kw),
    lambda **kw: OnlineKernelRegressor(gamma=0.5, loss="pinball", quantile=0.8, budget=30, **kw),
    lambda **kw: OnlineKernelClassifier(gamma=0.5, loss="logistic", **kw),
])
def test_weights_and_offset_are_the_same_in_both_engines_and_one_event(make, fit_intercept):
    X, y = stream(offset=3.0)
    if isinstance(make(), OnlineKernelClassifier):
        y = (y > 3.5).astype(int)
    w = np.random.default_rng(1).uniform(0, 2, len(X))
    w[::7] = 0.0
    kw = dict(fit_intercept=fit_intercept)
    cy = make(**kw).fit(X, y, sample_weight=w)
    nb = make(engine="numpy", **kw).fit(X, y, sample_weight=w)
    assert_same(cy, nb, atol=1e-10)
    events = make(**kw)
    if isinstance(events, OnlineKernelClassifier):
        events.set_params(classes=[0, 1])
    for xi, yi, wi in zip(X, y, w):
        events.learn_one(xi, yi, sample_weight=wi)
    assert_same(events, cy)
    assert (cy.intercept_ != 0.0) == fit_intercept


def test_zero_weights_skip_their_rows_entirely():
    X, y = stream()
    w = np.ones(len(X))
    w[[0, 5, 6, 50]] = 0.0
    ours = OnlineKernelRegressor(gamma=0.5).fit(X, y, sample_weight=w)
    ref = OnlineKernelRegressor(gamma=0.5).fit(X[w > 0], y[w > 0])
    assert_same(ours, ref)
    assert ours.t_ == int(np.sum(w > 0))


def test_a_weight_scales_the_gradient_of_its_step():
    X, y = stream(2)
    est = OnlineKernelRegressor(gamma=0.5, eta=0.3, eta_decay=0.0, fit_intercept=False)
    est.fit(X[:1], y[:1], sample_weight=[2.5])
    assert est.dual_coef_[0] == pytest.approx(-0.3 * 2.5 * (0.0 - y[0]), rel=1e-15)


def test_the_regressor_s_offset_is_the_running_mean_of_the_targets():
    X, y = stream(300, offset=40.0)
    w = np.random.default_rng(2).uniform(0, 2, len(X))
    w[::5] = 0.0
    est = OnlineKernelRegressor(gamma=0.5, eta=0.3, eta_decay=0.0, lam=0.1)
    est._progressive_scores(X, y, sample_weight=w)
    b, t = 0.0, 0
    for target, wi in zip(y, w):
        if wi > 0:
            t += 1
            b += (target - b) * min(1.0, wi / t)
    assert est.intercept_ == pytest.approx(b, rel=1e-14)
    first = OnlineKernelRegressor(gamma=0.5).fit(X[:1], y[:1])
    assert first.intercept_ == y[0] and first.n_support_ == 0     # the residual y_1 - b_2 = 0
    paper = OnlineKernelRegressor(gamma=0.5, eta=0.3, eta_decay=0.0, lam=0.1,
                                  fit_intercept=False).fit(X, y)
    assert paper.intercept_ == 0.0


def test_the_classifier_s_offset_is_norma_s_rule():
    X, y = stream(300)
    labels = (y > 0.4).astype(int)
    est = OnlineKernelClassifier(gamma=0.5, eta=0.3, eta_decay=0.0, lam=0.1, fit_intercept=True)
    scores = est._progressive_scores(X, labels, classes=[0, 1])
    b = 0.0
    for f, label in zip(scores, 2.0 * labels - 1.0):
        b -= 0.3 * (-label if label * f < 1.0 else 0.0)     # b_{t+1} = b_t - eta_t g_t
    assert est.intercept_ == pytest.approx(b, rel=1e-14)
    assert OnlineKernelClassifier(gamma=0.5).fit(X, labels).intercept_ == 0.0   # the default


def test_the_intercept_fixes_an_uncentred_target():
    X, y = stream(3000, offset=40.0)
    rmse = {}
    for fit_intercept in (True, False):
        est = OnlineKernelRegressor(gamma=0.5, fit_intercept=fit_intercept)
        scores = est._progressive_scores(X, y)
        rmse[fit_intercept] = np.sqrt(np.mean((scores[1000:] - y[1000:]) ** 2))
    assert rmse[True] < rmse[False] / 3


@pytest.mark.parametrize("seed", range(3))
def test_the_default_offset_is_within_1_1x_of_the_centred_target(seed):
    """The issue's stream: y = sin(2 x1) + noise + 40 on [-2, 2]^2, gamma = 1, 2500 steps.  The
    default offset (the running mean of the targets, docs/defaults.md) learns the shifted target
    within 1.1x the held-out RMSE of the papers' model on the centred target (1.01-1.04x here;
    NORMA's offset step was 5.7x)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, (3500, 2))
    y = np.sin(2.0 * X[:, 0]) + 0.1 * rng.normal(size=len(X))
    shifted = OnlineKernelRegressor(gamma=1.0).fit(X[:2500], y[:2500] + 40.0)
    centred = OnlineKernelRegressor(gamma=1.0, fit_intercept=False).fit(X[:2500], y[:2500])
    rmse_shifted = np.sqrt(np.mean((shifted.predict(X[2500:]) - 40.0 - y[2500:]) ** 2))
    rmse_centred = np.sqrt(np.mean((centred.predict(X[2500:]) - y[2500:]) ** 2))
    assert rmse_shifted <= 1.1 * rmse_centred


@pytest.mark.parametrize("make", [
    lambda: OnlineKernelClassifier(classes=["a", "b"]),
    lambda: CoefficientRegularizedClassifier(n_centers=10, classes=["a", "b"], gamma=1.0),
    lambda: RegularizedPAClassifier(classes=["b", "a"]),
])
def test_constructor_classes_start_a_stream_and_give_a_prior(make):
    X, y = stream()
    labels = np.where(y > 0.4, "b", "a")
    est = make()
    assert est.predict_one(X[0]) == "a"                   # f = 0 predicts classes_[0]
    est.learn_one(X[0], labels[0])                        # no deferral: learned at once
    assert est.t_ == 1 and est.classes_.tolist() == ["a", "b"]
    for xi, yi in zip(X[1:], labels[1:]):
        est.learn_one(xi, yi)
    ref = make().set_params(classes=None).partial_fit(X, labels, classes=["a", "b"])
    np.testing.assert_allclose(est.decision_function(X), ref.decision_function(X), rtol=0,
                               atol=1e-12)
    chunk = make().partial_fit(X, labels)                 # partial_fit needs no classes either
    np.testing.assert_allclose(chunk.decision_function(X), ref.decision_function(X), rtol=0,
                               atol=1e-12)
    with pytest.raises(ValueError, match="not in classes_"):
        make().partial_fit(X[:3], ["a", "c", "b"])


def test_gamma_scale_and_the_warning():
    rng = np.random.default_rng(0)
    X = rng.normal(1000.0, 300.0, (400, 4))
    y = np.sin(X[:, 0] / 300.0)
    with pytest.warns(KernelScaleWarning, match="gamma='scale'"):
        OnlineKernelRegressor(gamma=1.0).partial_fit(X[:50], y[:50])
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelScaleWarning)
        est = OnlineKernelRegressor().partial_fit(X[:50], y[:50])     # the default: "scale"
    assert est.gamma_ == pytest.approx(1.0 / (4 * X[:41].var()), rel=1e-12)  # its move at 41 rows
    est.partial_fit(X[50:], y[50:])
    assert est.gamma_ == pytest.approx(1.0 / (4 * X[:100].var()), rel=1e-12)  # after the warm-up
    assert est._expansion.kernel_params["gamma"] == est.gamma_
    fresh = OnlineKernelRegressor()
    fresh.learn_one(X[0], y[0])                          # usable from the first event
    assert fresh.gamma_ == pytest.approx(1.0 / (4 * X[:1].var()), rel=1e-12)
    pa = RegularizedPAClassifier(kernel="gaussian", classes=[0, 1])
    pa.learn_one(X[0], 1)                   # a first chunk of one row: its entries' variance
    assert pa.gamma_ == pytest.approx(4.0 / (4 * X[:1].var()), rel=1e-12)   # 4 times the rule


def test_set_params_between_events_is_validated_and_used():
    X, y = stream(60)
    est = OnlineKernelRegressor(gamma=0.5)
    for xi, yi in zip(X[:30], y[:30]):
        est.learn_one(xi, yi)
    est.set_params(lam=-1.0)
    t = est.t_
    with pytest.raises(ValueError, match="'lam'"):
        est.learn_one(X[30], y[30])
    assert est.t_ == t
    est.set_params(lam=0.01)                             # a new lam takes effect at once
    for xi, yi in zip(X[30:], y[30:]):
        est.learn_one(xi, yi)
    ref = OnlineKernelRegressor(gamma=0.5).partial_fit(X[:30], y[:30])
    ref.set_params(lam=0.01).partial_fit(X[30:], y[30:])
    assert_same(est, ref)


def test_okl_save_keeps_the_offset_and_the_dict_features(tmp_path):
    import okl
    X, y = stream(40, offset=5.0)
    est = OnlineKernelRegressor(gamma=0.5)
    for xi, yi in zip(X, y):
        est.learn_one({"a": xi[0], "b": xi[1], "c": xi[2]}, yi)
    okl.save(est, tmp_path / "m.npz")
    again = okl.load(tmp_path / "m.npz")
    assert again.intercept_ == est.intercept_ != 0.0
    scaled = OnlineKernelRegressor(gamma="scale").fit(X, y)
    okl.save(scaled, tmp_path / "s.npz")
    assert okl.load(tmp_path / "s.npz").gamma_ == scaled.gamma_
    event = {"c": 0.1, "a": 0.2, "b": 0.3}
    assert again.predict_one(event) == est.predict_one(event)


def test_the_default_step_is_the_auto_step_grown_to_the_targets_scale():
    X, y = stream(200)
    y = 10.0 * y + 5.0
    est = OnlineKernelRegressor(loss="absolute", gamma=0.5).fit(X, y)
    b = dev = 0.0
    for t, target in enumerate(y, 1):
        scale = max(1.0, dev / (t - 1)) if t > 1 else 1.0
        eta = t ** -0.6 / (1e-3 + 1.0) * scale
        b += (target - b) / t
        dev += abs(target - b)
    assert est.eta_ == pytest.approx(eta, rel=1e-12) and scale > 3.0
    assert est.dev_ == pytest.approx(dev, rel=1e-12)
    paper = OnlineKernelRegressor(loss="absolute", gamma=0.5, eta="auto").fit(X, y)
    assert paper.eta_ == pytest.approx(200 ** -0.6 / (1e-3 + 1.0), rel=1e-12)
    squared = OnlineKernelRegressor(gamma=0.5).fit(X, y)         # its step grows with y already
    assert squared.eta_ == pytest.approx(200 ** -0.6 / (1e-3 + 1.0), rel=1e-12)
    for engine in ("numpy",):
        other = OnlineKernelRegressor(loss="absolute", gamma=0.5, engine=engine).fit(X, y)
        np.testing.assert_allclose(other.dual_coef_, est.dual_coef_, rtol=0, atol=1e-10)
