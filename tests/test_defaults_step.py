"""OnlineKernelClassifier's default step, eta="scaled" (docs/defaults.md, section 4).

The hinge step ``eta_t = t**-eta_decay / (lam + M kbar C_K^2)``, kbar the mean kernel value
between two centres (with K(x, x) = 1 as one pair more) measured over the first 100 steps,
then fixed (`kernel_mean_`); eta="auto" (the papers' step) stays one parameter away.
"""
import io

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_classification

import okl
from okl import OnlineKernelClassifier
from okl._persist import ModelFileError
from okl.evaluation import progressive_validation
from okl.kernels import kernel_matrix
from okl.preprocessing import OnlineStandardScaler


def online_scaled(X, y):
    """Shuffled once (seed 0), each event scaled by the moments of the events up to it."""
    order = np.random.default_rng(0).permutation(len(X))
    X, y = np.asarray(X, dtype=np.float64)[order], np.asarray(y)[order]
    scaler, Z = OnlineStandardScaler(), np.empty_like(X)
    for i, x in enumerate(X):
        scaler.learn_one(x)
        Z[i] = scaler.transform_one(x)
    return Z, y


def accuracy(est, X, y):
    return 1.0 - progressive_validation(est, X, y, chunk_size=1000).error[-1]


def kbar(centres, gamma):
    """The rule written out: the mean off-diagonal Gaussian kernel value, plus one pair of 1."""
    m = len(centres)
    if m < 2:
        return 1.0
    K = kernel_matrix(np.asarray(centres), kernel="gaussian", gamma=gamma)
    return (K[np.triu_indices(m, 1)].sum() + 1.0) / (m * (m - 1) / 2 + 1.0)


def stream(n=400, d=5, seed=0, k=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if k == 2:
        return X, (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(int)
    return X, np.argmax(X[:, :k] + 0.5 * rng.normal(size=(n, k)), axis=1)


@pytest.mark.parametrize("make, lo, hi", [
    (lambda: (lambda X, y: (X, (y >= 5).astype(int)))(*load_digits(return_X_y=True)), 0.93, 0.88),
    (lambda: make_classification(2000, 20, n_informative=5, random_state=0), 0.84, 0.82),
])
def test_the_default_step_learns_where_the_papers_step_stalls(make, lo, hi):
    """digits 0-4 vs 5-9 (0.944 against 0.863) and a generated stream (0.859 against 0.804):
    with the admissible step nearly every event violates the margin and f is a vote of all of
    them; the default step reaches the margin."""
    X, y = online_scaled(*make())
    assert OnlineKernelClassifier().eta == "scaled"
    assert accuracy(OnlineKernelClassifier(), X, y) >= lo
    assert accuracy(OnlineKernelClassifier(eta="auto"), X, y) < hi


def test_the_step_is_the_rule_written_out():
    """NORMA's hinge step with kbar of the centres before each of the first 100 steps, then
    the kbar of step 100 (budget None, a fixed width, fit_intercept=False)."""
    X, y = stream(260)
    gamma, lam = 0.3, 1e-3
    est = OnlineKernelClassifier(gamma=gamma, lam=lam, budget=None, fit_intercept=False,
                                 classes=[0, 1]).fit(X, y)
    centres, coef, fixed = [], [], None
    for t, (x, label) in enumerate(zip(X, np.where(y > 0, 1.0, -1.0)), 1):
        f = sum(a * np.exp(-gamma * np.sum((c - x) ** 2)) for c, a in zip(centres, coef))
        scale = fixed if fixed is not None else kbar(centres, gamma)
        eta = t ** -0.5 / (lam + scale)
        coef = [a * (1.0 - lam * eta) for a in coef]
        if label * f <= 1.0:
            centres.append(x)
            coef.append(eta * label)
        if t == 100:
            fixed = kbar(centres, gamma)
    assert est.kernel_mean_ == pytest.approx(fixed, rel=1e-12)
    assert est.eta_ == pytest.approx(260 ** -0.5 / (lam + fixed), rel=1e-12)
    np.testing.assert_allclose(est.support_vectors_, centres, rtol=0, atol=0)
    np.testing.assert_allclose(est.dual_coef_, coef, rtol=0, atol=1e-10)


@pytest.mark.parametrize("k", [2, 3])
def test_engines_chunks_events_and_a_saved_warm_up_agree(k):
    """Both engines, one chunk or one event at a time, and a model saved in the middle of
    the 100 steps and loaded: the same iterates (a budget of 60 merges during them; zero
    weights skip events)."""
    X, y = stream(1500, d=6, seed=1, k=k)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(X))
    w[[3, 40, 99, 120]] = 0.0
    kw = dict(budget=60, classes=list(range(k)))
    chunk = OnlineKernelClassifier(**kw).fit(X, y, sample_weight=w)
    numpy = OnlineKernelClassifier(engine="numpy", **kw).fit(X, y, sample_weight=w)
    events = OnlineKernelClassifier(**kw)
    events.partial_fit(X[:1], y[:1], sample_weight=w[:1])
    for i in range(1, 50):
        events.learn_one(X[i], int(y[i]), sample_weight=w[i])
    assert "kernel_mean_" not in events.__dict__
    buffer = io.BytesIO()
    okl.save(events, buffer)
    buffer.seek(0)
    events = okl.load(buffer)
    for i in range(50, 300):
        events.learn_one(X[i], int(y[i]), sample_weight=w[i])
    events.partial_fit(X[300:], y[300:], sample_weight=w[300:])
    assert events.kernel_mean_ == chunk.kernel_mean_       # the same engine: exactly
    assert numpy.kernel_mean_ == pytest.approx(chunk.kernel_mean_, rel=1e-12)   # merged centres
    assert 0.0 < chunk.kernel_mean_ < 1.0
    for other in (numpy, events):
        np.testing.assert_allclose(other.decision_function(X), chunk.decision_function(X),
                                   rtol=0, atol=1e-10)
        assert other.t_ == chunk.t_


def test_a_saved_scale_is_kept_and_checked():
    X, y = stream(300)
    est = OnlineKernelClassifier(gamma=0.3).fit(X, y)
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    loaded = okl.load(buffer)
    assert loaded.kernel_mean_ == est.kernel_mean_
    for bad in (0.0, 1.5, float("nan")):
        est.kernel_mean_ = bad
        buffer = io.BytesIO()
        okl.save(est, buffer)
        buffer.seek(0)
        with pytest.raises(ModelFileError, match="kernel_mean_"):
            okl.load(buffer)


@pytest.mark.parametrize("kw", [dict(loss="logistic"), dict(kernel="polynomial", gamma=0.2),
                                dict(approximation="fourier", random_state=0)])
def test_scaled_is_auto_beyond_the_hinge_on_an_exact_width_kernel(kw):
    """The rule is measured for the hinge loss on an exact expansion of a width kernel;
    elsewhere eta="scaled" is the papers' step, to the bit."""
    X, y = stream(300)
    scaled = OnlineKernelClassifier(**kw).fit(X, y)
    auto = OnlineKernelClassifier(eta="auto", **kw).fit(X, y)
    np.testing.assert_array_equal(scaled.decision_function(X), auto.decision_function(X))
    assert "kernel_mean_" not in scaled.__dict__


@pytest.mark.parametrize("lam", [0.5, 0.05])
def test_the_default_step_keeps_the_papers_ball(lam):
    """|phi'| <= 1 and eta_t lam <= lam / (lam + kbar) < 1: ||f_t||_K <= C_K / lam at every step
    without a budget (docs/defaults.md, section 4; docs/algorithms.md, section 3.1)."""
    X, y = stream(300, seed=3)
    est = OnlineKernelClassifier(gamma=2.0, lam=lam, budget=None, fit_intercept=False,
                                 classes=[0, 1])
    norms = []
    for i in range(0, 300, 10):
        est.partial_fit(X[i:i + 10], y[i:i + 10])
        norms.append(est.rkhs_norm())
        assert est.eta_ * lam < 1.0
    assert max(norms) <= (1.0 + 1e-12) / lam
    assert max(norms) > 0.3 / lam           # near the ball: the bound is not idle


def test_an_interrupt_as_kbar_is_fixed_leaves_the_model_as_it_was(monkeypatch):
    X, y = stream(200)
    est = OnlineKernelClassifier(gamma=0.3, classes=[0, 1]).partial_fit(X[:90], y[:90])
    before = est.decision_function(X)
    state = {k: v for k, v in est.__dict__.items() if k.endswith("_") and np.isscalar(v)}

    def interrupted(self):
        if self.t_ >= 100:
            raise KeyboardInterrupt
        return measure(self)
    measure = OnlineKernelClassifier._measure_kernel_mean
    monkeypatch.setattr(OnlineKernelClassifier, "_measure_kernel_mean", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(X[90:150], y[90:150])
    assert "kernel_mean_" not in est.__dict__
    assert {k: est.__dict__[k] for k in state} == state
    np.testing.assert_array_equal(est.decision_function(X), before)
    monkeypatch.undo()
    ref = OnlineKernelClassifier(gamma=0.3, classes=[0, 1]).partial_fit(X[:150], y[:150])
    est.partial_fit(X[90:150], y[90:150])
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
