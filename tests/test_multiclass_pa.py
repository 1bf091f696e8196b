"""Multiclass passive-aggressive (Crammer et al. 2006, the max-wrong-class constraint) and
the coefficient-regularized classifier on k classes: engines, the k = 2 reduction, the
closed-form steps, the estimators (docs/multiclass-pa.md)."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from okl._core._pa import Event
from okl._pa_models import LinearMultiPAModel, LinearPAModel
from okl.passive_aggressive import REGULARIZATIONS, VARIANTS

RULES = [("none", "PA"), ("none", "PA-I"), ("none", "PA-II"), ("objective", "PA"),
         ("l2", "PA"), ("l1", "PA")]


def rule(reg, variant="PA", C=0.5, alpha=0.1, beta=3.0, mistake=False):
    return (int(REGULARIZATIONS[reg]), int(VARIANTS[variant]), C, alpha, beta, mistake)


def stream(n=400, d=6, k=5, seed=0, drift=True):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=1.5, size=(k, d))
    y = rng.integers(k, size=n)
    X = means[y] + rng.normal(size=(n, d))
    if drift:
        X[n // 2:] = X[n // 2:] @ rng.normal(size=(d, d)) / np.sqrt(d)
    return np.ascontiguousarray(X), y


def run(model, X, y, r, engine, sigma=0.0, kxx=None):
    k = model.n_classes
    scores = np.empty((len(y), k))
    events = np.empty(len(y), dtype=np.int8)
    args = () if kxx is None else (kxx,)
    failed = model.learn(X, y, r, sigma, engine, scores, events, *args)
    assert failed == -1
    return scores, events


# -- engines ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reg, variant", RULES)
@pytest.mark.parametrize("mistake", [False, True])
@pytest.mark.parametrize("sigma", [0.0, 0.05])
def test_linear_engines_same_iterates(reg, variant, mistake, sigma):
    X, y = stream(3000, seed=1)
    r = rule(reg, variant, beta=2.0 if reg == "l1" else 3.0, mistake=mistake)
    out = {}
    for engine in ("cython", "numpy"):
        model = LinearMultiPAModel(5, X.shape[1])
        chunks = []
        for lo in range(0, len(X), 97):            # chunks of any size: the same stream
            chunks.append(run(model, X[lo:lo + 97], y[lo:lo + 97], r, engine, sigma))
        out[engine] = (np.vstack([c[0] for c in chunks]), np.hstack([c[1] for c in chunks]),
                       model.coef, model.sq_norm)
    (s1, e1, W1, n1), (s2, e2, W2, n2) = out["cython"], out["numpy"]
    np.testing.assert_array_equal(e1, e2)
    assert np.max(np.abs(s1 - s2)) <= 1e-10
    assert np.max(np.abs(W1 - W2)) <= 1e-10
    assert abs(n1 - n2) <= 1e-10 * max(1.0, n1)
    assert np.count_nonzero(e1 == Event.UPDATED) > 20
    assert n1 == pytest.approx(2.0 * np.sum(W1 ** 2), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("reg, variant", RULES)
def test_linear_csr_rows_same_iterates(reg, variant):
    X, y = stream(300, d=10, seed=2)
    X[np.abs(X) < 0.8] = 0.0
    r = rule(reg, variant, beta=2.0 if reg == "l1" else 3.0)
    dense, csr = LinearMultiPAModel(5, 10), LinearMultiPAModel(5, 10)
    sd, ed = run(dense, X, y, r, "cython")
    sc, ec = run(csr, sp.csr_matrix(X), y, r, "cython")
    sn, en = run(LinearMultiPAModel(5, 10), sp.csr_matrix(X), y, r, "numpy")
    np.testing.assert_array_equal(ed, ec)
    np.testing.assert_array_equal(ed, en)
    assert np.max(np.abs(sd - sc)) <= 1e-10 and np.max(np.abs(sd - sn)) <= 1e-10
    assert np.max(np.abs(dense.coef - csr.coef)) <= 1e-10


# -- k = 2 is the binary PA --------------------------------------------------------------------

@pytest.mark.parametrize("reg, variant", RULES)
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_two_classes_give_the_binary_iterates(reg, variant, engine):
    """W = [-w/2, w/2] moves exactly as the binary w: s_1 - s_0 = f, 2 ||W||^2 = ||w||^2."""
    X, y = stream(500, k=2, seed=3)
    r = rule(reg, variant, beta=2.0 if reg == "l1" else 3.0)
    binary = LinearPAModel(X.shape[1])
    f = np.empty(len(y))
    ev_b = np.empty(len(y), dtype=np.int8)
    assert binary.learn(X[:50], np.where(y[:50] == 1, 1.0, -1.0), r, 0.0, engine,
                        f[:50], ev_b[:50]) == -1
    multi = LinearMultiPAModel.from_binary(binary)          # the conversion, mid-stream
    assert np.allclose(multi.decision(X) @ [-1.0, 1.0], binary.decision(X), atol=1e-12)
    assert binary.learn(X[50:], np.where(y[50:] == 1, 1.0, -1.0), r, 0.0, engine,
                        f[50:], ev_b[50:]) == -1
    s, ev_m = run(multi, X[50:], y[50:], r, engine)
    tol = 1e-9 if reg == "l1" else 1e-12
    np.testing.assert_array_equal(ev_m, ev_b[50:])
    assert np.max(np.abs((s[:, 1] - s[:, 0]) - f[50:])) <= tol * max(1, np.abs(f).max())
    assert np.max(np.abs(multi.coef[1] - multi.coef[0] - binary.coef)) <= tol * 10
    assert multi.sq_norm == pytest.approx(binary.sq_norm, rel=1e-9)


# -- the step is the closed form of its problem ---------------------------------------------------

def solve(reg, variant, W0, x, y, r, C=0.5, alpha=0.1, beta=3.0):
    """The step's problem, solved numerically (SLSQP) in the norm 2 ||W||^2."""
    k, d = W0.shape

    def margin(v):
        W = v.reshape(k, d)
        return (W[y] - W[r]) @ x

    # 1/2 ||V - V_t||^2 with V = sqrt(2) W is ||W - W_t||^2
    dist = lambda v: np.sum((v - W0.ravel()) ** 2)     # noqa: E731
    cons = [{"type": "ineq", "fun": lambda v: margin(v) - 1.0}]
    if reg == "objective":
        fun = lambda v: dist(v) + alpha * np.sum(v ** 2)    # noqa: E731
    elif reg == "l2":
        fun = dist
        cons.append({"type": "ineq", "fun": lambda v: beta ** 2 - 2.0 * np.sum(v ** 2)})
    elif variant == "PA-I":         # slack xi >= 0 as an extra variable
        fun = lambda v: dist(v[:-1]) + C * v[-1]           # noqa: E731
        cons = [{"type": "ineq", "fun": lambda v: margin(v[:-1]) - 1.0 + v[-1]},
                {"type": "ineq", "fun": lambda v: v[-1]}]
        res = minimize(fun, np.append(W0.ravel(), 1.0), constraints=cons, method="SLSQP",
                       options=dict(ftol=1e-14, maxiter=500))
        return res.x[:-1].reshape(k, d)
    elif variant == "PA-II":
        fun = lambda v: dist(v[:-1]) + C * v[-1] ** 2      # noqa: E731
        cons = [{"type": "ineq", "fun": lambda v: margin(v[:-1]) - 1.0 + v[-1]}]
        res = minimize(fun, np.append(W0.ravel(), 1.0), constraints=cons, method="SLSQP",
                       options=dict(ftol=1e-14, maxiter=500))
        return res.x[:-1].reshape(k, d)
    else:
        fun = dist
    res = minimize(fun, W0.ravel(), constraints=cons, method="SLSQP",
                   options=dict(ftol=1e-14, maxiter=500))
    return res.x.reshape(k, d)


@pytest.mark.parametrize("reg, variant", RULES[:5])
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_step_solves_its_problem(reg, variant, engine):
    rng = np.random.default_rng(4)
    k, d = 4, 3
    for trial in range(5):
        W0 = rng.normal(scale=0.3, size=(k, d))
        x = rng.normal(size=d)
        y = int(rng.integers(k))
        model = LinearMultiPAModel(k, d)
        model.raw = W0.copy()
        model.sq_norm = 2.0 * np.sum(W0 ** 2)
        if reg == "l2" and model.sq_norm > 2.5 ** 2:
            continue
        s, ev = run(model, x[None], np.array([y]), rule(reg, variant, beta=2.5), engine)
        r = int(np.argmax(np.where(np.arange(k) == y, -np.inf, s[0])))
        if s[0, y] - s[0, r] >= 1.0:
            assert ev[0] == Event.PASSIVE
            continue
        assert ev[0] == Event.UPDATED
        expected = solve(reg, variant, W0, x, y, r, beta=2.5)
        assert np.max(np.abs(model.coef - expected)) <= 1e-5
        if variant == "PA" and reg != "l2":
            assert (model.coef[y] - model.coef[r]) @ x == pytest.approx(1.0)
        assert model.sq_norm == pytest.approx(2.0 * np.sum(model.coef ** 2))


def test_l1_step_solves_its_problem():
    rng = np.random.default_rng(5)
    k, d, beta = 3, 4, 2.0
    done = 0
    for trial in range(10):
        W0 = rng.normal(scale=0.2, size=(k, d))
        W0 *= min(1.0, 0.9 * beta / np.abs(W0).sum())
        x = rng.normal(scale=2.0, size=d)
        y = int(rng.integers(k))
        model = LinearMultiPAModel(k, d)
        model.raw = W0.copy()
        s, ev = run(model, x[None], np.array([y]), rule("l1", beta=beta), "cython")
        if ev[0] != Event.UPDATED:
            continue
        r = int(np.argmax(np.where(np.arange(k) == y, -np.inf, s[0])))
        v0 = W0.ravel()
        cons = [{"type": "ineq",
                 "fun": lambda v: (v.reshape(k, d)[y] - v.reshape(k, d)[r]) @ x - 1},
                {"type": "ineq", "fun": lambda v: beta - np.abs(v).sum()}]
        res = minimize(lambda v: np.sum((v - v0) ** 2), model.coef.ravel() * 0.99 + v0 * 0.01,
                       constraints=cons, method="SLSQP", options=dict(ftol=1e-14, maxiter=1000))
        got = np.sum((model.coef.ravel() - v0) ** 2)
        assert np.abs(model.coef).sum() <= beta * (1 + 1e-9)
        assert (model.coef[y] - model.coef[r]) @ x >= 1 - 1e-9
        assert got <= res.fun + 1e-7                  # no feasible point is closer
        done += 1
    assert done >= 3


# -- the coefficient-regularized loop on k classes --------------------------------------------

from okl._core import _coefreg  # noqa: E402
from okl._core._expansion import KernelExpansion  # noqa: E402
from okl._numpy import coefreg as np_coefreg  # noqa: E402
from okl._numpy.expansion import NumpyExpansion  # noqa: E402
from okl.kernels import kernel_code, kernel_params  # noqa: E402
from okl.losses import loss_spec  # noqa: E402


def coefreg_run(engine, X, y, k, loss, m=30, lam=0.01, auto=True, chunk=53, A0=None):
    cls = KernelExpansion if engine == "cython" else NumpyExpansion
    loop = _coefreg.fit_multi_chunk if engine == "cython" else np_coefreg.fit_multi_chunk
    e = cls(X.shape[1], kernel_params("gaussian", gamma=0.3))
    A, scale = (np.zeros((m, k)) if A0 is None else A0.copy()), 1.0
    n = len(y)
    eta = 0.5 / lam * np.arange(1, n + 1) ** -0.75
    S, used, kk = np.empty((n, k)), np.empty(n), np.empty(n)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        failed, scale = loop(e, A, scale, X[lo:hi], y[lo:hi], eta[lo:hi], lam,
                             0.25 if auto else 0.0, m, loss_spec(loss), S[lo:hi], used[lo:hi],
                             kk[lo:hi])
        assert failed == -1
    return S, scale * A, used, e


@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared_hinge"])
def test_coefreg_engines_same_iterates(loss):
    X, y = stream(2000, d=4, k=4, seed=6)
    S1, A1, u1, _ = coefreg_run("cython", X, y, 4, loss)
    S2, A2, u2, _ = coefreg_run("numpy", X, y, 4, loss)
    assert np.max(np.abs(S1 - S2)) <= 1e-10
    assert np.max(np.abs(A1 - A2)) <= 1e-10
    np.testing.assert_allclose(u1, u2, rtol=1e-12)
    assert np.abs(A1).max() > 0.01


@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared_hinge", "least_squares"])
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_coefreg_two_classes_give_the_binary_iterates(loss, engine):
    """Softmax at k = 2 is the logistic loss and the max-wrong-class margin is y f:
    A = [-a/2, a/2] takes the binary steps on a = A_1 - A_0."""
    X, y = stream(400, d=4, k=2, seed=7)
    from okl._engines import ENGINES
    cls = KernelExpansion if engine == "cython" else NumpyExpansion
    e = cls(X.shape[1], kernel_params("gaussian", gamma=0.3))
    n, lam = len(y), 0.01
    eta = 0.5 / lam * np.arange(1, n + 1) ** -0.75
    f, used, kk = np.empty(n), np.empty(n), np.empty(n)
    assert ENGINES[engine].coefreg(e, X, np.where(y == 1, 1.0, -1.0), eta, lam, 0.25, 30,
                                   loss_spec(loss), f, used, kk) == -1
    S, A, used_m, _ = coefreg_run(engine, X, y, 2, loss)
    np.testing.assert_allclose(used_m, used, rtol=1e-12)
    scale = max(1.0, np.abs(f).max())
    assert np.max(np.abs(S[:, 1] - S[:, 0] - f)) <= 1e-10 * scale
    assert np.max(np.abs(A[:, 1] - A[:, 0] - e.coef_)) <= 1e-10 * scale
    assert np.max(np.abs(A[:, 1] + A[:, 0])) <= 1e-12 * scale     # stays zero-sum


# -- the estimators --------------------------------------------------------------------------

import warnings  # noqa: E402

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import okl  # noqa: E402
from okl import CoefficientRegularizedClassifier, RegularizedPAClassifier  # noqa: E402


def labelled(n=300, d=5, k=4, seed=8):
    X, y = stream(n, d=d, k=k, seed=seed, drift=False)
    return X, np.array(["ant", "bee", "cat", "dog", "eel", "fox"])[y]


ESTIMATORS = {
    "pa linear": lambda **kw: RegularizedPAClassifier(variant="PA-I", C=0.5, **kw),
    "pa l2": lambda **kw: RegularizedPAClassifier(regularization="l2", beta=3.0, **kw),
    "pa fourier": lambda **kw: RegularizedPAClassifier(
        kernel="gaussian", gamma=0.2, approximation="fourier", n_components=40, random_state=0,
        **kw),
    "pa kernel merge": lambda **kw: RegularizedPAClassifier(
        kernel="gaussian", gamma=0.2, budget=30, budget_policy="merge", **kw),
    "pa kernel l2": lambda **kw: RegularizedPAClassifier(
        kernel="gaussian", gamma=0.2, regularization="l2", beta=3.0, budget=30,
        budget_policy="smallest", **kw),
    "pa nystroem": lambda **kw: RegularizedPAClassifier(
        kernel="gaussian", gamma=0.2, approximation="nystroem", n_components=25, **kw),
    "coefreg hinge": lambda **kw: CoefficientRegularizedClassifier(n_centers=20, gamma=0.2,
                                                                   **kw),
    "coefreg logistic": lambda **kw: CoefficientRegularizedClassifier(
        n_centers=20, gamma=0.2, loss="logistic", **kw),
}


def snapshot(est, X):
    out = [est.t_, list(est.classes_), np.asarray(est.decision_function(X)).copy()]
    return out


def same(a, b):
    assert a[0] == b[0] and a[1] == b[1]
    np.testing.assert_array_equal(a[2], b[2])


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_learns_k_classes(name):
    X, y = labelled()
    est = ESTIMATORS[name]()
    est.partial_fit(X[:200], y[:200], classes=np.unique(y))
    assert list(est.classes_) == ["ant", "bee", "cat", "dog"]
    S = est.decision_function(X[200:])
    assert S.shape == (100, 4)
    np.testing.assert_array_equal(est.predict(X[200:]), est.classes_[S.argmax(axis=1)])
    assert np.mean(est.predict(X[200:]) == y[200:]) > 0.8


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_estimator_is_the_model_loop(engine):
    X, y = labelled(k=5)
    est = RegularizedPAClassifier(variant="PA-II", C=0.3, engine=engine)
    est.fit(X, y)
    model = LinearMultiPAModel(5, X.shape[1])
    run(model, X, np.searchsorted(np.unique(y), y), rule("none", "PA-II", C=0.3), engine)
    np.testing.assert_allclose(est.coef_, model.coef, atol=1e-12)
    assert est.sq_norm_ == pytest.approx(model.sq_norm)


@pytest.mark.parametrize("name", ["pa linear", "pa l2", "pa fourier", "pa kernel merge",
                                  "pa kernel l2", "pa nystroem", "coefreg hinge",
                                  "coefreg logistic"])
def test_a_third_class_converts_the_binary_model_exactly(name):
    """Classes discovered online: two classes learn the binary model; the third converts it
    to (-f/2, f/2) plus a zero score function, then the multiclass rule goes on."""
    X, y = labelled(k=3, seed=9)
    second = np.flatnonzero(y != y[0])[0]           # one class learns nothing (okl._labels)
    two = sorted({y[0], y[second]})
    third = np.flatnonzero(~np.isin(y, two))[0]
    online = ESTIMATORS[name]()
    for x, label in zip(X, y):
        online.learn_one(x, label)
    # the same by hand: the binary estimator, then the conversion and the multiclass rule
    est = ESTIMATORS[name](classes=two)
    est.fit(X[second:third], y[second:third])
    f = est.decision_function(X)
    position = int(np.searchsorted(two, y[third]))
    est._add_class(position)
    est.classes_ = np.insert(est.classes_, position, y[third])
    S = est.decision_function(X)
    others = [c for c in range(3) if c != position]
    np.testing.assert_allclose(S[:, others[1]] - S[:, others[0]], f, atol=1e-12)
    np.testing.assert_array_equal(S[:, position], 0.0)
    est._learn(X[third:], np.searchsorted(est.classes_, y[third:]))
    np.testing.assert_allclose(online.decision_function(X), est.decision_function(X),
                               atol=1e-12)
    assert online.t_ == len(y) - second


@pytest.mark.parametrize("name", ESTIMATORS)
def test_bad_labels_leave_the_model_unchanged(name):
    X, y = labelled()
    est = ESTIMATORS[name]()
    est.partial_fit(X[:100], y[:100], classes=np.unique(y))
    before = snapshot(est, X)
    for bad in ([np.nan], [3], [None], [[1, 2]]):
        with pytest.raises((ValueError, TypeError)):
            est.partial_fit(X[100:101], np.array(bad, dtype=object))
        same(snapshot(est, X), before)
    with pytest.raises(ValueError):
        ESTIMATORS[name](classes=["ant", "ant", "bee"]).partial_fit(X[:5], y[:5])


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_label_of_another_type_in_one_event_leaves_the_model_unchanged(name):
    X, y = labelled(k=3)
    est = ESTIMATORS[name]()
    for x, label in zip(X[:50], y[:50]):
        est.learn_one(x, label)
    before = snapshot(est, X)
    for bad in (7, float("nan")):
        with pytest.raises((ValueError, TypeError)):
            est.learn_one(X[50], bad)
        same(snapshot(est, X), before)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_persistence_round_trip(tmp_path, name, engine):
    X, y = labelled()
    est = ESTIMATORS[name](engine=engine).fit(X[:200], y[:200])
    okl.save(est, tmp_path / "model.okl")
    back = okl.load(tmp_path / "model.okl")
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    est.partial_fit(X[200:], y[200:])
    back.partial_fit(X[200:], y[200:])
    np.testing.assert_allclose(back.decision_function(X), est.decision_function(X), atol=1e-12)


def test_predict_proba_is_the_softmax():
    X, y = labelled()
    est = ESTIMATORS["coefreg logistic"]().fit(X, y)
    P = est.predict_proba(X)
    S = est.decision_function(X)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    np.testing.assert_allclose(P, E / E.sum(axis=1, keepdims=True), rtol=1e-12)
    p = est.predict_proba_one(X[0])
    assert list(p) == list(est.classes_)
    np.testing.assert_allclose(list(p.values()), P[0], rtol=1e-12)
    assert not hasattr(ESTIMATORS["coefreg hinge"]().fit(X, y), "predict_proba")


def test_pa_on_digits():
    """Progressive accuracy of one pass over sklearn's digits (shuffled once, each event
    scaled by the statistics of the events before it)."""
    from sklearn.datasets import load_digits
    from okl.preprocessing import OnlineStandardScaler
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    scaler = OnlineStandardScaler()
    Z = np.empty(X.shape)
    for t, x in enumerate(X[order]):
        Z[t] = scaler.transform_one(x)
        scaler.learn_one(x)
    est = RegularizedPAClassifier(variant="PA-II", C=0.1)
    scores = est._progressive_scores(Z, y[order], classes=np.arange(10), reset=True)
    assert np.mean(est._predictions(scores) == y[order]) > 0.9


@pytest.mark.parametrize("name", ["pa linear", "pa kernel", "coefreg given centres"])
def test_average_models_on_k_classes(name):
    """The average of multiclass models predicts the mean of their scores."""
    from okl.distributed import average_models
    X, y = labelled(400)
    if name == "pa linear":
        make = ESTIMATORS[name]
    elif name == "pa kernel":
        make = lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.2)  # noqa: E731
    else:
        make = lambda: CoefficientRegularizedClassifier(centers=X[:15], gamma=0.2)  # noqa: E731
    models = [make().fit(X[lo:lo + 100], y[lo:lo + 100]) for lo in range(0, 400, 100)]
    assert all(list(m.classes_) == ["ant", "bee", "cat", "dog"] for m in models)
    mean = average_models(models)
    np.testing.assert_allclose(mean.decision_function(X),
                               np.mean([m.decision_function(X) for m in models], axis=0),
                               atol=1e-12)
    if name == "pa linear":
        assert mean.sq_norm_ == pytest.approx(2.0 * np.sum(mean.coef_ ** 2))
    if name == "pa kernel":
        assert mean.sq_norm_ == pytest.approx(mean.rkhs_norm() ** 2)
    mean.partial_fit(X[:10], y[:10])                       # and it goes on learning


# -- the kernel form: one support set, a coefficient vector per centre ----------------------

from okl._core._multiexpansion import MultiExpansion  # noqa: E402
from okl._numpy.multiexpansion import NumpyMultiExpansion  # noqa: E402
from okl._pa_models import KernelMultiPAModel, KernelPAModel  # noqa: E402
from okl.budgets import budget_code  # noqa: E402

POLICIES = [(0, "oldest"), (25, "oldest"), (25, "smallest"), (25, "merge")]


def multi_model(engine, k, d, budget=0, policy="oldest", gamma=0.3):
    cls = MultiExpansion if engine == "cython" else NumpyMultiExpansion
    return KernelMultiPAModel(cls(d, k, kernel_params("gaussian", gamma=gamma),
                                  budget=budget, policy=int(budget_code(policy))))


@pytest.mark.parametrize("reg, variant", RULES[:5])
@pytest.mark.parametrize("budget, policy", POLICIES)
def test_kernel_engines_same_iterates(reg, variant, budget, policy):
    X, y = stream(1200, d=4, k=5, seed=10)
    r = rule(reg, variant, beta=3.0)
    out = {}
    for engine in ("cython", "numpy"):
        model = multi_model(engine, 5, 4, budget, policy)
        chunks = [run(model, X[lo:lo + 77], y[lo:lo + 77], r, engine)
                  for lo in range(0, len(X), 77)]
        out[engine] = (np.vstack([c[0] for c in chunks]), np.hstack([c[1] for c in chunks]),
                       model)
    (s1, e1, m1), (s2, e2, m2) = out["cython"], out["numpy"]
    np.testing.assert_array_equal(e1, e2)
    assert np.max(np.abs(s1 - s2)) <= 1e-10
    assert np.max(np.abs(m1.expansion.coef_ - m2.expansion.coef_)) <= 1e-10
    assert np.count_nonzero(e1 == Event.UPDATED) > 20
    exact = m1.exact_sq_norm()
    # tracked under every rule and policy: incrementally (cython), recomputed (numpy)
    assert m1.sq_norm == pytest.approx(exact, rel=1e-9)
    assert m2.sq_norm == pytest.approx(exact, rel=1e-9)
    if reg == "l2" and budget == 0:        # (an eviction may leave the ball until the next step)
        assert exact <= 3.0 ** 2 * (1 + 1e-9)


@pytest.mark.parametrize("policy", ["oldest", "smallest", "merge"])
def test_multi_expansion_reports_what_an_eviction_takes(policy):
    """norm_change = sum_c ||f'_c||^2 - ||(f + a K(x, .))_c||^2 exactly, for every policy and
    every kind of eviction (the newcomer dropped, a centre removed, a merge), so the kernel
    PA carries ||f||^2 in O(n (d + k)) per eviction instead of recomputing it in O(n^2)."""
    rng = np.random.default_rng(12)
    k, d, budget = 4, 3, 6
    e = MultiExpansion(d, k, kernel_params("gaussian", gamma=0.4), budget=budget,
                       policy=int(budget_code(policy)))
    e.track_norm = True
    seen = 0
    for step in range(200):
        x = rng.standard_normal(d) * (0.3 if step % 3 else 1.5)
        a = rng.standard_normal(k) * rng.choice([0.01, 1.0, 5.0])
        if step % 5 == 4:
            e.shrink(0.7)
        before = e.sq_norm()
        f_x = e.predict(x[None])[0]
        full = before + 2.0 * a @ f_x + a @ a       # ||f + a K(x, .)||^2, K(x, x) = 1
        n = e.n_support
        e.add(x, a)
        if n == budget:
            seen += 1
        assert e.sq_norm() - full == pytest.approx(e.norm_change, abs=1e-9 * max(1.0, full))
    assert seen > 150


@pytest.mark.parametrize("policy", ["oldest", "smallest", "merge"])
@pytest.mark.parametrize("reg", ["none", "objective", "l2"])
def test_kernel_sq_norm_stays_exact_through_evictions(policy, reg):
    """The estimator's sq_norm_ is the carried value (never NaN), equal to the exact norm after
    every event of a stream with a full budget."""
    rng = np.random.default_rng(13)
    X = rng.standard_normal((600, 4))
    y = rng.integers(0, 5, 600)
    est = RegularizedPAClassifier(kernel="gaussian", gamma=0.3, budget=20, budget_policy=policy,
                                  regularization=reg, beta=3.0, classes=list(range(5)))
    for i, (x, label) in enumerate(zip(X, y.tolist())):
        est.learn_one(x, label)
        if i % 50 == 49:
            carried = est._model.sq_norm
            assert np.isfinite(carried)
            assert carried == pytest.approx(est._model.exact_sq_norm(), rel=1e-9)
    assert est.n_support_ == 20


@pytest.mark.parametrize("reg, variant", RULES[:5])
@pytest.mark.parametrize("budget, policy", POLICIES[:3])
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_kernel_two_classes_give_the_binary_iterates(reg, variant, budget, policy, engine):
    """a_i -> (-a_i/2, a_i/2): the multiclass kernel loop takes the binary steps."""
    from okl._core._expansion import KernelExpansion as KE
    X, y = stream(300, d=4, k=2, seed=11)
    r = rule(reg, variant, beta=3.0)
    cls = KE if engine == "cython" else NumpyExpansion
    binary = KernelPAModel(cls(4, kernel_params("gaussian", gamma=0.3), budget=budget,
                               policy=int(budget_code(policy))))
    f = np.empty(len(y))
    ev_b = np.empty(len(y), dtype=np.int8)
    yb = np.where(y == 1, 1.0, -1.0)
    assert binary.learn(X[:40], yb[:40], r, 0.0, engine, f[:40], ev_b[:40]) == -1
    multi = binary.to_multiclass()
    assert binary.learn(X[40:], yb[40:], r, 0.0, engine, f[40:], ev_b[40:]) == -1
    s, ev_m = run(multi, X[40:], y[40:], r, engine)
    np.testing.assert_array_equal(ev_m, ev_b[40:])
    assert np.max(np.abs((s[:, 1] - s[:, 0]) - f[40:])) <= 1e-10
    assert multi.sq_norm == pytest.approx(binary.sq_norm, rel=1e-9)


@pytest.mark.parametrize("budget, policy", [(None, "auto"), (30, "merge"), (30, "oldest")])
def test_kernel_estimator_on_k_classes(tmp_path, budget, policy):
    X, y = labelled(400)
    make = lambda **kw: RegularizedPAClassifier(  # noqa: E731
        kernel="gaussian", gamma=0.2, budget=budget, budget_policy=policy, **kw)
    est = make()
    for x, label in zip(X[:300], y[:300]):
        est.learn_one(x, label)
    assert list(est.classes_) == ["ant", "bee", "cat", "dog"]
    assert est.dual_coef_.shape == (est.n_support_, 4)
    assert np.mean(est.predict(X[300:]) == y[300:]) > 0.8
    assert est.sq_norm_ == pytest.approx(est.rkhs_norm() ** 2, rel=1e-9)
    okl.save(est, tmp_path / "m.okl")
    back = okl.load(tmp_path / "m.okl")
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    chunk = make().partial_fit(X[:300], y[:300])  # one chunk: the same iterates
    np.testing.assert_allclose(chunk.decision_function(X), est.decision_function(X),
                               atol=1e-10)


@parametrize_with_checks([
    RegularizedPAClassifier(kernel="gaussian", approximation="fourier", n_components=30,
                            random_state=0),
    RegularizedPAClassifier(kernel="gaussian", gamma=0.5, budget=20, budget_policy="merge"),
    CoefficientRegularizedClassifier(n_centers=20, loss="squared_hinge"),
])
def test_sklearn_compatible_with_k_classes(estimator, check):
    assert estimator.__sklearn_tags__().classifier_tags.multi_class
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.mark.parametrize("name, key", [("pa linear", "obj:_model:raw"),
                                       ("pa kernel merge", "obj:_model:coef"),
                                       ("pa fourier", "obj:_model:linear_raw"),
                                       ("coefreg hinge", "attr:_coef_matrix")])
def test_a_file_whose_model_has_the_wrong_number_of_classes_is_refused(tmp_path, name, key):
    X, y = labelled()
    est = ESTIMATORS[name]().fit(X, y)
    okl.save(est, tmp_path / "m.okl")
    with np.load(tmp_path / "m.okl") as data:
        arrays = {k: data[k] for k in data.files}
    assert key in arrays, sorted(arrays)
    arrays[key] = np.ascontiguousarray(np.delete(arrays[key], 0, axis=arrays[key].ndim - 1
                                                 if key != "obj:_model:raw" and
                                                 key != "obj:_model:linear_raw" else 0))
    with open(tmp_path / "bad.okl", "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(okl.ModelFileError):
        okl.load(tmp_path / "bad.okl")


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_nystroem_switches_with_the_same_scores(engine):
    """NOGD on k classes: at the switch the D centres' coefficient vectors become W (k, D)
    with <W, z(x)> = f(x), and learning one event at a time = one chunk."""
    X, y = labelled(300)
    make = lambda: ESTIMATORS["pa nystroem"](engine=engine)     # noqa: E731
    est = make()
    for x, label in zip(X, y):
        est.learn_one(x, label)
    chunk = make().partial_fit(X, y)
    assert est._model.features is not None and est._model.n_classes == 4
    np.testing.assert_allclose(chunk.decision_function(X), est.decision_function(X),
                               atol=1e-9)
    exact = make().partial_fit(X[:24], y[:24])       # < 25 centres: the exact phase
    model = exact._model
    assert model.features is None and model.n_classes == len(exact.classes_) >= 3
    before = exact.decision_function(X)
    model._switch()
    np.testing.assert_allclose(exact.decision_function(X), before, atol=1e-8)
