"""Random Fourier and Nystroem models of k >= 3 classes: a weight matrix W (k, D) (docs/multiclass.md)."""
import copy

import numpy as np
import pytest
from sklearn.datasets import load_iris

import okl
from okl import OnlineKernelClassifier
from okl._core._multiclass import MultiFeatureEvents
from okl.distributed import average_models

APPROX = {
    "fourier": dict(approximation="fourier", n_components=40, random_state=0),
    "nystroem": dict(approximation="nystroem", n_components=20),
}
MODELS = dict(APPROX, exact=dict(approximation="nystroem", n_components=400))  # no switch here


def stream(n=400, d=4, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :k - 1] @ rng.normal(size=(k - 1, k)) + 0.3 * rng.normal(size=(n, k)),
                  axis=1)
    return X, y


def make(approx, **kw):
    return OnlineKernelClassifier(gamma=0.3, **dict(MODELS[approx], **kw))


def weights(est):
    model = est._expansion
    return model.linear.coef_ if model.linear is not None else model.expansion.coef_


def assert_same(a, b, atol=1e-12):
    np.testing.assert_allclose(weights(a), weights(b), rtol=0, atol=atol)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=atol)
    for name in ("t_", "ck2_", "eta_", "lam_"):
        assert getattr(a, name) == pytest.approx(getattr(b, name), rel=atol, abs=atol), name


@pytest.mark.parametrize("approx", APPROX)
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_the_numpy_twin_gives_the_same_iterates(approx, loss):
    X, y = stream(n=1500)
    kw = dict(loss=loss, fit_intercept=True, lam=1e-2)
    ours = make(approx, **kw).partial_fit(X, y)
    twin = make(approx, engine="numpy", **kw).partial_fit(X, y)
    assert weights(ours).shape == (4, ours.n_components_)
    assert_same(ours, twin, atol=1e-10)
    np.testing.assert_allclose(ours.decision_function(X), twin.decision_function(X), rtol=0,
                               atol=1e-10)


@pytest.mark.parametrize("approx", APPROX)
def test_the_third_class_converts_the_binary_model_exactly(approx):
    X, y = stream(k=3)
    two = y < 2
    est = make(approx, loss="logistic", fit_intercept=True).partial_fit(X[two][:150],
                                                                       y[two][:150])
    f = est.decision_function(X)
    binary = copy.deepcopy(est)
    est._insert_class(2)                # what a third label does before its step
    scores = est.decision_function(X)
    np.testing.assert_allclose(scores, np.column_stack([-f / 2, f / 2, 0 * f]), rtol=0,
                               atol=1e-12)
    p = est.predict_proba(X)[:, :2]          # the two old classes keep their odds
    np.testing.assert_allclose(p / p.sum(axis=1, keepdims=True), binary.predict_proba(X),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("approx", APPROX)
def test_classes_are_discovered_at_their_sorted_place(approx):
    X, y = stream(k=3)
    labels = np.array(["a", "b", "c"])[y]
    order = np.argsort(y != 1, kind="stable")[::-1]        # "a"/"c" first, "b" last
    X, labels = X[order], labels[order]
    est = make(approx, loss="hinge")
    est.partial_fit(X[:200], labels[:200])
    assert est.classes_.tolist() == ["a", "c"]
    est.partial_fit(X[200:], labels[200:])
    assert est.classes_.tolist() == ["a", "b", "c"]
    assert weights(est).shape[0 if est._expansion.linear is not None else 1] == 3
    # the same stream given all at once: the same model
    ref = make(approx, loss="hinge")
    for lo in range(0, len(X), 50):
        ref.partial_fit(X[lo:lo + 50], labels[lo:lo + 50])
    assert_same(est, ref)


@pytest.mark.parametrize("approx", APPROX)
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_events_equal_partial_fit(approx, loss):
    X, y = stream()
    ours = make(approx, loss=loss, fit_intercept=True)
    preds = []
    for xi, yi in zip(X, y):
        preds.append(ours.predict_one(xi) if hasattr(ours, "t_") else None)
        ours.learn_one(xi, yi)
    assert isinstance(ours._compiled_events([None]), MultiFeatureEvents)
    ref = make(approx, loss=loss, fit_intercept=True).partial_fit(X, y)
    assert_same(ours, ref)
    np.testing.assert_allclose([ours.decision_function_one(x) for x in X[:20]],
                               ref.decision_function(X[:20]), rtol=0, atol=1e-12)
    if loss == "logistic":
        p = ours.predict_proba_one(X[0])
        assert list(p) == ref.classes_.tolist()
        np.testing.assert_allclose(list(p.values()), ref.predict_proba(X[:1])[0], atol=1e-12)


@pytest.mark.parametrize("approx", APPROX)
def test_bad_events_leave_the_model_as_it_was(approx):
    X, y = stream()
    est = make(approx, loss="logistic").partial_fit(X[:300], y[:300])
    est.learn_one(X[300], y[300])
    before = copy.deepcopy(est)
    for x in (np.array([np.nan, 0, 0, 0]), np.zeros(3)):
        with pytest.raises(ValueError):
            est.learn_one(x, y[0])
    with pytest.raises(ValueError):
        est.learn_one(X[301], "a new kind of label")
    assert_same(est, before)
    assert est.classes_.tolist() == before.classes_.tolist()


@pytest.mark.parametrize("approx", MODELS)
def test_save_load_and_a_corrupt_weight_matrix(approx, tmp_path):
    """okl.save / okl.load keep W (or the exact phase's k-valued expansion) and check its shape."""
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    est = make(approx, fit_intercept=True).partial_fit(X, y)
    path = tmp_path / "model.okl"
    okl.save(est, path)
    back = okl.load(path)
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    back.partial_fit(X[:10], y[:10])
    est.partial_fit(X[:10], y[:10])
    assert_same(back, est)
    if est._expansion.linear is None:
        assert est._expansion.expansion.n_classes == 3
        return
    # a weight matrix of the wrong number of classes is refused on load
    bad = copy.deepcopy(est)
    bad._expansion.linear = type(bad._expansion.linear)(4, bad.n_components_)
    okl.save(bad, path)
    with pytest.raises(ValueError, match="linear_n_classes"):
        okl.load(path)


def test_average_models_averages_the_weight_matrices():
    X, y = stream(n=600)
    a = make("fourier", fit_intercept=True).partial_fit(X[:300], y[:300])
    b = make("fourier", fit_intercept=True).partial_fit(X[300:], y[300:])
    avg = average_models([a, b])
    np.testing.assert_allclose(weights(avg), (weights(a) + weights(b)) / 2, rtol=0, atol=1e-15)
    np.testing.assert_allclose(avg.intercept_, (a.intercept_ + b.intercept_) / 2, atol=1e-15)
    np.testing.assert_allclose(
        avg.decision_function(X), (a.decision_function(X) + b.decision_function(X)) / 2,
        rtol=0, atol=1e-12)


def test_nystroem_keeps_its_function_at_the_switch():
    X, y = stream(k=3)
    est = make("nystroem", loss="logistic")
    est.partial_fit(X[:19], y[:19])
    assert est._expansion.linear is None
    f = est.decision_function(X)
    est._expansion._switch()
    assert est._expansion.linear.coef_.shape[0] == 3
    np.testing.assert_allclose(est.decision_function(X), f, rtol=0, atol=1e-8)
