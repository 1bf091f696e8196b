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
