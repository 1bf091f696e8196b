"""average_models and divergence on RegularizedPAClassifier(approximation=...): no Dask needed."""
import copy

import numpy as np
import pytest

import okl
from okl import RegularizedPAClassifier
from okl._averaging import average_models, divergence

rng = np.random.default_rng(22)
X = rng.normal(size=(400, 4))
y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, 0)


def fourier(**kw):
    return RegularizedPAClassifier(kernel="gaussian", gamma=0.3, approximation="fourier",
                                   n_components=40, random_state=5, **kw)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("kernel", ["gaussian", "matern"])
def test_fourier_pa_models_average_their_weights(engine, kernel):
    models = [fourier(engine=engine).set_params(kernel=kernel).fit(X[i::2], y[i::2])
              for i in range(2)]
    avg = average_models(models)
    mean = (models[0].decision_function(X) + models[1].decision_function(X)) / 2
    np.testing.assert_allclose(avg.decision_function(X), mean, atol=1e-12)
    w = avg._model.linear.coef
    assert avg._model.sq_norm == pytest.approx(float(w @ w), rel=1e-12)   # ||w||^2 kept exact
    assert avg.t_ == 400
    assert divergence(models[0], models[1]) > 0 and divergence(models[0], models[0]) == 0
    avg.partial_fit(X[:50], y[:50])                     # the average continues learning
    assert avg.t_ == 450


def test_nystroem_pa_models_average_on_shared_landmarks_and_refuse_others():
    make = lambda: RegularizedPAClassifier(  # noqa: E731
        kernel="gaussian", gamma=0.3, approximation="nystroem", n_components=20)
    base = make().fit(X[:100], y[:100])                 # past its exact phase: landmarks fixed
    assert base._model.features is not None
    models = [copy.deepcopy(base).partial_fit(X[100 + i::2], y[100 + i::2]) for i in range(2)]
    avg = average_models(models)
    mean = (models[0].decision_function(X) + models[1].decision_function(X)) / 2
    np.testing.assert_allclose(avg.decision_function(X), mean, atol=1e-12)
    assert divergence(models[0], models[1]) > 0
    own = [make().fit(X[i::2], y[i::2]) for i in range(2)]     # each worker's own landmarks
    with pytest.raises(ValueError, match="different feature maps"):
        average_models(own)
    early = [make().fit(X[i:10:2], y[i:10:2]) for i in range(2)]   # still exact
    with pytest.raises(ValueError, match="exact phase"):
        average_models(early)


def test_different_random_states_are_refused_and_the_average_saves(tmp_path):
    with pytest.raises(ValueError, match="equal parameters"):
        average_models([fourier().fit(X, y), fourier().set_params(random_state=6).fit(X, y)])
    avg = average_models([fourier().fit(X[i::2], y[i::2]) for i in range(2)])
    okl.save(avg, tmp_path / "avg.npz")
    np.testing.assert_array_equal(okl.load(tmp_path / "avg.npz").decision_function(X),
                                  avg.decision_function(X))
