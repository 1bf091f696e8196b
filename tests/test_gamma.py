"""gamma='scale' and the warning for a kernel width off the data's scale."""
import warnings

import numpy as np
import pytest
from sklearn.svm import SVC

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl._gamma import (
    LOCAL_FACTOR, WARMUP, KernelScaleWarning, scale_gamma, spread_message, warn_spread,
)


def test_scale_gamma_is_scikit_learns_svc_rule():
    X = np.random.default_rng(0).normal(1000, 300, (40, 3))
    y = (X[:, 0] > 1000).astype(int)
    svc = SVC(gamma="scale").fit(X, y)
    assert scale_gamma(X, "Est") == pytest.approx(svc._gamma, rel=1e-12)
    assert scale_gamma(np.ones((5, 2)), "Est") == 1.0
    assert scale_gamma(X[:1], "Est") == 1 / (3 * X[:1].var())      # one row: its entries
    assert scale_gamma(np.zeros((1, 3)), "Est") == 1 / 3   # equal entries: the standardised value
    assert scale_gamma(X, "Est", 4.0) == pytest.approx(4 * svc._gamma, rel=1e-12)


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
    factor = LOCAL_FACTOR if name in ("RegularizedPAClassifier",
                                      "CoefficientRegularizedClassifier") else 1.0
    # the rule over the warm-up's 100 events (tests/test_width_warmup.py); Nystroem features
    # of fewer landmarks keep the width of their switch
    widths = [scale_gamma(X[:t], name, factor)         # the width moves after these rows
              for t in (1, 2, 3, 5, 8, 12, 18, 27, 41, 62, 93, WARMUP)]
    if params.get("approximation") == "nystroem":
        assert min(abs(w / scaled.gamma_ - 1) for w in widths) < 1e-12
    else:
        assert scaled.gamma_ == pytest.approx(widths[-1], rel=1e-12)
    assert "_width_moments" not in scaled.__dict__
    scaled.partial_fit(X[120:], y[120:])

    def f(est):
        return est.score_samples(X) if name == "PairwiseLearner" else est.predict(X)
    buffer = io.BytesIO()
    okl.save(scaled, buffer)
    buffer.seek(0)
    loaded = okl.load(buffer)
    assert loaded.gamma == "scale" and loaded.gamma_ == scaled.gamma_
    np.testing.assert_array_equal(f(loaded), f(scaled))
    scaled.set_params(gamma=2 * scaled.gamma_)               # the fitted width cannot change
    with pytest.raises(ValueError, match="gamma"):
        scaled.partial_fit(X[:5], y[:5])


@pytest.mark.parametrize("make", [OnlineKernelRegressor, OnlineKernelClassifier])
def test_scale_follows_the_events_of_the_warm_up_then_stays(make):
    import io

    import okl
    rng = np.random.default_rng(3)
    X = rng.normal(2.0, 4.0, (160, 3))
    y = (X[:, 0] * X[:, 1] > 4).astype(float)
    w = rng.uniform(0.5, 2.0, len(X))
    w[[3, 40]] = 0.0                                    # a skipped row does not count
    kept = np.flatnonzero(w > 0)
    assert make().gamma == "scale"                     # the default
    if make is OnlineKernelClassifier:
        def make(**kw):
            return OnlineKernelClassifier(classes=[0.0, 1.0], **kw)
    est = make().fit(X[:1], y[:1])
    assert est.gamma_ == pytest.approx(1 / (3 * X[:1].var()), rel=1e-12)
    assert make().fit(X[:2], y[:2]).n_support_ <= 2
    for t, rows in ((2, 2), (17, 12), (99, 93)):       # it moves after 1, 2, 3, 5, 8, 12, ... rows
        est = make().fit(X[:t], y[:t], sample_weight=w[:t])
        assert est.gamma_ == pytest.approx(scale_gamma(X[kept[:rows]]), rel=1e-12)
    chunk = make().fit(X, y, sample_weight=w)
    assert chunk.gamma_ == pytest.approx(scale_gamma(X[kept[:WARMUP]]), rel=1e-12)
    assert "_width_moments" not in chunk.__dict__
    events = make()
    for i in range(50):
        events.learn_one(X[i], y[i], sample_weight=w[i])
    buffer = io.BytesIO()
    okl.save(events, buffer)                           # saved in the middle of the warm-up
    buffer.seek(0)
    events = okl.load(buffer)
    for i in range(50, len(X)):
        events.learn_one(X[i], y[i], sample_weight=w[i])
    numpy = make(engine="numpy").fit(X, y, sample_weight=w)
    for other in (events, numpy):
        assert other.gamma_ == pytest.approx(chunk.gamma_, rel=1e-12)
        np.testing.assert_allclose(other.dual_coef_, chunk.dual_coef_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(other.decision_function(X) if hasattr(chunk, 'classes_')
                                   else other.predict(X),
                                   chunk.decision_function(X) if hasattr(chunk, 'classes_')
                                   else chunk.predict(X), rtol=0, atol=1e-10)
    gamma = chunk.gamma_
    chunk.partial_fit(X, y)
    assert chunk.gamma_ == gamma                       # frozen after the warm-up


@pytest.mark.parametrize("name", ["RegularizedPAClassifier", "CoefficientRegularizedClassifier"])
def test_local_learners_take_four_times_the_rule_and_a_first_row_its_own_scale(name):
    import okl
    rng = np.random.default_rng(1)
    X = rng.normal(0.0, 300.0, (60, 5))                # raw features far from unit scale
    y = (X[:, 0] > 0).astype(int)
    params = dict(kernel="gaussian") if name == "RegularizedPAClassifier" else {}
    chunk = getattr(okl, name)(**params).fit(X, y)     # 60 rows: the width of the first 41
    assert chunk.gamma_ == pytest.approx(LOCAL_FACTOR / (5 * X[:41].var()), rel=1e-12)
    events = getattr(okl, name)(classes=[0, 1], **params)
    events.learn_one(X[0], y[0])                        # a first chunk of one row
    assert events.gamma_ == pytest.approx(LOCAL_FACTOR / (5 * X[0].var()), rel=1e-12)
    assert 1e-6 < events.gamma_ < 1e-3                  # on the data's scale, not 4 / d


def test_coefficient_regularized_defaults():
    from okl import CoefficientRegularizedClassifier
    params = CoefficientRegularizedClassifier().get_params()
    assert (params["n_centers"], params["lam"], params["gamma"]) == (500, 1e-3, "scale")
