"""Kernel PA on fixed-size features: both engines, the exact norm, persistence, accuracy."""
import numpy as np
import pytest
from sklearn.datasets import make_moons

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
