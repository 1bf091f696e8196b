"""Kernel PA on fixed-size features: both engines, the exact norm, persistence, accuracy."""
import numpy as np
import pytest
from sklearn.datasets import load_digits, make_moons
from sklearn.preprocessing import StandardScaler

import okl
from okl import RegularizedPAClassifier
from okl._params import InvalidParameterError


@pytest.mark.parametrize("approximation", ["fourier", "nystroem"])
@pytest.mark.parametrize("regularization", ["none", "objective", "l2"])
def test_feature_pa_matches_its_twin_keeps_the_norm_and_round_trips(approximation,
                                                                    regularization, tmp_path):
    X, y = make_moons(2500, noise=0.2, random_state=0)
    common = dict(kernel="gaussian", gamma=2.0, regularization=regularization, beta=5.0,
                  approximation=approximation, n_components=100, random_state=0)
    fast = RegularizedPAClassifier(**common).fit(X[:2000], y[:2000])
    slow = RegularizedPAClassifier(engine="numpy", **common).fit(X[:2000], y[:2000])
    np.testing.assert_allclose(fast.decision_function(X[2000:]),
                               slow.decision_function(X[2000:]), atol=1e-10)
    assert fast.sq_norm_ == pytest.approx(fast.rkhs_norm() ** 2, rel=1e-9, abs=1e-12)
    if regularization == "l2":
        assert fast.rkhs_norm() <= 5.0 + 1e-9
    exact = RegularizedPAClassifier(kernel="gaussian", gamma=2.0, regularization=regularization,
                                    beta=5.0).fit(X[:2000], y[:2000])
    assert fast.score(X[2000:], y[2000:]) >= exact.score(X[2000:], y[2000:]) - 0.03
    okl.save(fast, tmp_path / "m.okl")
    back = okl.load(tmp_path / "m.okl")
    np.testing.assert_array_equal(back.decision_function(X[2000:]), fast.decision_function(X[2000:]))


def test_feature_pa_parameters_are_checked():
    X, y = make_moons(50, random_state=0)
    for params, match in (({"kernel": "linear", "approximation": "fourier"}, "kernel models"),
                          ({"kernel": "polynomial", "approximation": "fourier"}, "'gaussian'"),
                          ({"kernel": "gaussian", "approximation": "fourier", "budget": 10},
                           "Set one")):
        with pytest.raises(InvalidParameterError, match=match):
            RegularizedPAClassifier(**params).fit(X, y)


def digits_stream():
    """Digits 0-4 against 5-9, standardised: 1000 events to learn, 797 held out."""
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], (y[order] >= 5).astype(int)
    scaler = StandardScaler().fit(X[:1000])
    return scaler.transform(X[:1000]), y[:1000], scaler.transform(X[1000:]), y[1000:]


NYSTROEM = dict(kernel="gaussian", gamma=1 / 32, classes=np.array([0, 1]),
                approximation="nystroem")


@pytest.mark.parametrize("regularization, D", [("none", 200), ("objective", 300), ("l2", 100)])
def test_nystroem_pa_does_not_depend_on_chunking(regularization, D):
    X, y, X_test, _ = digits_stream()
    params = dict(NYSTROEM, regularization=regularization, beta=3.0, n_components=D)
    chunk = RegularizedPAClassifier(**params)
    scores = chunk._progressive_scores(X, y)
    one = RegularizedPAClassifier(**params)
    one_scores = []
    for x, label in zip(X, y):
        one_scores.append(one.decision_function_one(x) if hasattr(one, "t_") else 0.0)
        one.learn_one(x, label)
    rows = RegularizedPAClassifier(**params)
    for i in range(len(X)):
        rows.partial_fit(X[i:i + 1], y[i:i + 1])
    pieces = RegularizedPAClassifier(**params)
    for lo in range(0, len(X), 137):                  # chunks that cross the switch
        pieces.partial_fit(X[lo:lo + 137], y[lo:lo + 137])
    numpy = RegularizedPAClassifier(engine="numpy", **params).fit(X, y)
    # the D landmarks are the D support vectors of the exact phase, whatever the chunks
    landmarks = chunk._model.features.fmap.landmarks
    assert landmarks.shape == (D, X.shape[1])
    np.testing.assert_allclose(one_scores[1:], scores[1:], rtol=0, atol=1e-10)
    for model in (one, rows, pieces, numpy):
        np.testing.assert_array_equal(model._model.features.fmap.landmarks, landmarks)
        assert model.n_updates_ == chunk.n_updates_
        np.testing.assert_allclose(model.decision_function(X_test),
                                   chunk.decision_function(X_test), rtol=0, atol=1e-10)
        assert model.sq_norm_ == pytest.approx(chunk.sq_norm_, rel=1e-12)


def test_nystroem_pa_is_the_exact_pa_until_the_switch_and_keeps_its_function():
    X, y, X_test, _ = digits_stream()
    exact = RegularizedPAClassifier(kernel="gaussian", gamma=1 / 32, classes=[0, 1])
    t = 0
    while not hasattr(exact, "t_") or exact.n_support_ < 150:
        exact.learn_one(X[t], y[t])
        t += 1
    before = RegularizedPAClassifier(n_components=150, **NYSTROEM).fit(X[:t - 1], y[:t - 1])
    assert before._model.features is None                 # 149 centres: still exact
    np.testing.assert_array_equal(before.decision_function(X_test),
                                  RegularizedPAClassifier(kernel="gaussian", gamma=1 / 32)
                                  .fit(X[:t - 1], y[:t - 1]).decision_function(X_test))
    after = RegularizedPAClassifier(n_components=150, **NYSTROEM).fit(X[:t], y[:t])
    assert after._model.features is not None              # the 150th centre: the switch
    np.testing.assert_allclose(after.decision_function(X_test), exact.decision_function(X_test),
                               rtol=0, atol=1e-8)
    assert after.sq_norm_ == pytest.approx(exact.rkhs_norm() ** 2, rel=1e-8)


@pytest.mark.parametrize("regularization", ["none", "objective", "l2"])
def test_nystroem_pa_learns_digits_nearly_as_well_as_the_exact_kernel_pa(regularization):
    # measured (exact; D = 200, 500): none 0.981; 0.969, 0.981, objective 0.925;
    # 0.902, 0.915, l2 0.962; 0.950, 0.964 (landmarks from the first rows: 0.67)
    X, y, X_test, y_test = digits_stream()
    params = dict(NYSTROEM, regularization=regularization, alpha=0.01, beta=10.0)
    exact = RegularizedPAClassifier(**dict(params, approximation=None)).fit(X, y)
    for D, margin in ((200, 0.03), (500, 0.02)):
        model = RegularizedPAClassifier(n_components=D, **params).fit(X, y)
        assert model.score(X_test, y_test) >= exact.score(X_test, y_test) - margin


@pytest.mark.parametrize("stop", [100, 600])                # the exact phase, then features
def test_nystroem_pa_round_trips_in_either_phase(stop, tmp_path):
    X, y, X_test, _ = digits_stream()
    model = RegularizedPAClassifier(n_components=200, **NYSTROEM).fit(X[:stop], y[:stop])
    assert (model._model.features is None) == (stop == 100)
    okl.save(model, tmp_path / "m.okl")
    back = okl.load(tmp_path / "m.okl")
    np.testing.assert_array_equal(back.decision_function(X_test), model.decision_function(X_test))
    for m in (model, back):
        m.partial_fit(X[stop:stop + 300], y[stop:stop + 300])
    np.testing.assert_array_equal(back.decision_function(X_test), model.decision_function(X_test))


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning", "ignore:invalid:RuntimeWarning")
def test_nystroem_pa_failed_chunk_across_the_switch_leaves_the_model_as_it_was():
    X, y = make_moons(120, noise=0.2, random_state=0)
    est = RegularizedPAClassifier(kernel="polynomial", degree=2, coef0=1.0, gamma=1.0,
                                  approximation="nystroem", n_components=20).fit(X[:10], y[:10])
    assert est._model.features is None
    before, state = est.decision_function(X[100:]), (est.t_, est.n_updates_, est.sq_norm_)
    bad = X[10:100].copy()
    bad[80] = 1e200                               # f(x) overflows after the switch
    with pytest.raises(FloatingPointError, match="t=91.*left as it was"):
        est.partial_fit(bad, y[10:100])
    assert est._model.features is None
    np.testing.assert_array_equal(est.decision_function(X[100:]), before)
    assert (est.t_, est.n_updates_, est.sq_norm_) == state
    est.partial_fit(X[10:90], y[10:90])
    assert est._model.features is not None        # the switch came before row 90
