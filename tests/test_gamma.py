"""gamma='scale' and the warning for a kernel width off the data's scale."""
import warnings

import numpy as np
import pytest
from sklearn.svm import SVC

from okl._gamma import KernelScaleWarning, scale_gamma, spread_message, warn_spread


def test_scale_gamma_is_scikit_learns_svc_rule():
    X = np.random.default_rng(0).normal(1000, 300, (40, 3))
    y = (X[:, 0] > 1000).astype(int)
    svc = SVC(gamma="scale").fit(X, y)
    assert scale_gamma(X, "Est") == pytest.approx(svc._gamma, rel=1e-12)
    assert scale_gamma(np.ones((5, 2)), "Est") == 1.0
    with pytest.raises(ValueError, match="at least 2 rows.*OnlineStandardScaler"):
        scale_gamma(X[:1], "Est")


def test_the_warning_names_the_cure_for_both_ends():
    rng = np.random.default_rng(0)
    big = rng.normal(1000, 300, (30, 3))
    assert "too large" in spread_message(big, "gaussian", 1.0, "Est")
    tiny = rng.normal(0, 1e-5, (30, 3))
    assert "too small" in spread_message(tiny, "laplacian", 1.0, "Est")
    assert spread_message(rng.normal(size=(30, 3)), "gaussian", 1.0, "Est") is None
    assert spread_message(big, "linear", 1.0, "Est") is None
    assert spread_message(big[:1], "gaussian", 1.0, "Est") is None
    assert spread_message(np.repeat(big[:1], 5, axis=0), "gaussian", 1.0, "Est") is None
    with pytest.warns(KernelScaleWarning, match="gamma='scale'"):
        assert warn_spread(big, "gaussian", 1.0, "Est")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_spread(big, "gaussian", scale_gamma(big, "Est"), "Est")


KERNEL_LEARNERS = [
    ("OnlineKernelRegressor", {}),
    ("OnlineKernelClassifier", {}),
    ("OnlineKernelClassifier", dict(approximation="nystroem", n_components=20)),
    ("RegularizedPAClassifier", dict(kernel="gaussian")),
    ("RegularizedPAClassifier", dict(kernel="gaussian", approximation="fourier",
                                     n_components=50, random_state=0)),
    ("RegularizedPAClassifier", dict(kernel="gaussian", approximation="nystroem",
                                     n_components=20)),
    ("CoefficientRegularizedClassifier", dict(n_centers=30)),
    ("PairwiseLearner", dict(pair_kernel="difference", buffer=40, random_state=0)),
]


@pytest.mark.parametrize("name, params", KERNEL_LEARNERS, ids=lambda v: str(v))
def test_every_kernel_learner_takes_gamma_scale(name, params):
    import io

    import okl
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) * 3.0
    y = (X[:, 0] * X[:, 1] > 0).astype(float)
    scaled = getattr(okl, name)(gamma="scale", **params).fit(X[:120], y[:120])
    gamma = scale_gamma(X[:120], name)
    assert scaled.gamma_ == gamma
    fixed = getattr(okl, name)(gamma=gamma, **params).fit(X[:120], y[:120])
    scaled.partial_fit(X[120:], y[120:])
    fixed.partial_fit(X[120:], y[120:])

    def f(est):
        return est.score_samples(X) if name == "PairwiseLearner" else est.predict(X)
    np.testing.assert_array_equal(f(scaled), f(fixed))                  # the same model
    buffer = io.BytesIO()
    okl.save(scaled, buffer)
    buffer.seek(0)
    loaded = okl.load(buffer)
    assert loaded.gamma == "scale" and loaded.gamma_ == gamma
    np.testing.assert_array_equal(f(loaded), f(scaled))
    scaled.set_params(gamma=2 * gamma)                       # the fitted width cannot change
    with pytest.raises(ValueError, match="gamma"):
        scaled.partial_fit(X[:5], y[:5])
