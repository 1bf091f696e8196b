"""Inputs that never slip through: missing targets, weights and sizes that cannot be meant,
messages that name the real cause, many new labels (issue 38, items 4, 5, 7, 8 and 10)."""
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier

import okl
from okl import (
    CoefficientRegularizedClassifier,
    KernelRLSRegressor,
    MultiKernelRegressor,
    OnlineKernelClassifier,
    OnlineKernelRegressor,
    PairwiseLearner,
    RegularizedPAClassifier,
)
from okl._params import InvalidParameterError
from okl.preprocessing import OnlineStandardScaler


def _data(n=40, d=3, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, np.sin(X[:, 0]), (X[:, 0] > 0).astype(int)


# ---- item 4: a missing target has its own message, before any step ---------------------------

@pytest.mark.parametrize("missing", [None, float("nan")])
@pytest.mark.parametrize("path", ["chunk", "one-row chunk", "event"])
def test_a_missing_target_is_named_before_any_step(learner_case, kit, missing, path):
    cls, engine = learner_case
    est = kit.make(cls, engine)
    X, y = kit.stream(est, n=40)
    kit.learn(est, X[:30], y[:30])
    before = kit.fingerprint(est, X), _steps(est)
    targets = list(y[30:33].tolist())
    targets[1] = missing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError),
                           match="missing target|cannot be a class label|contains NaN"):
            if path == "chunk":
                est.partial_fit(X[30:33], np.array(targets, dtype=object if missing is None
                                                   else float))
            elif path == "one-row chunk":
                est.partial_fit(X[31:32], np.array([missing], dtype=object))
            else:
                est.learn_one(X[31], missing)
    after = kit.fingerprint(est, X), _steps(est)
    np.testing.assert_array_equal(after[0], before[0])
    assert after[1] == before[1], "a refused call took a step"


def _steps(est):
    """t_ of the learner (a pipeline's last step)."""
    return getattr(est, "steps", [(None, est)])[-1][1].t_


@pytest.mark.parametrize("make, message", [
    (lambda: OnlineKernelRegressor(), "missing target at row 0"),
    (lambda: PairwiseLearner(), "missing target at row 0"),
    (lambda: PairwiseLearner(pair_kernel="difference"), "missing target"),
    (lambda: MultiKernelRegressor(), "missing target at row 0"),
])
def test_the_issues_missing_targets(make, message):
    """PairwiseLearner stored a NaN target; the difference pair kernel took learn_one(x,
    None); OnlineKernelRegressor said "diverged at step t=1"."""
    X, y, _ = _data()
    est = make().fit(X[:10], y[:10])
    with pytest.raises(ValueError, match=message):
        est.partial_fit(X[:2], [None, 0.5])
    with pytest.raises(ValueError, match="missing target"):
        est.learn_one(X[0], None)
    assert est.t_ == 10


def test_a_non_numeric_target_is_named():
    X, y, _ = _data()
    est = OnlineKernelRegressor().fit(X[:10], y[:10])
    with pytest.raises(TypeError, match=r"real numbers as targets, but got 'a' \(str\) at row 1"):
        est.partial_fit(X[:2], np.array([0.5, "a"], dtype=object))
    with pytest.raises(ValueError, match="non-finite target"):
        est.learn_one(X[0], 10 ** 400)


# ---- item 5: messages that point the right way ----------------------------------------------

@pytest.mark.parametrize("make, labels", [
    (lambda: RegularizedPAClassifier(kernel="gaussian"), True),
    (lambda: RegularizedPAClassifier(kernel="polynomial"), True),
    (lambda: OnlineKernelRegressor(kernel="linear"), False),
])
@pytest.mark.parametrize("path", ["chunk", "event"])
def test_a_huge_row_is_named_as_the_cause(make, labels, path):
    """A row near 1e200 was blamed on "a tiny nonzero ||x||" (the PA) or on the step size."""
    X, y, yc = _data()
    est = make().fit(X[:20], yc[:20] if labels else y[:20])
    x = X[25] * 1e200
    with pytest.raises(FloatingPointError, match="too large for float64") as info:
        if path == "chunk":
            est.partial_fit(np.vstack([X[20:22], x]), (yc if labels else y)[20:23])
        else:
            est.learn_one(x, (yc if labels else y)[25])
    assert "tiny" not in str(info.value) and "smaller eta" not in str(info.value)


@pytest.mark.parametrize("make", [
    lambda: OnlineKernelClassifier(kernel="linear"),
    lambda: OnlineKernelClassifier(kernel="polynomial"),
    lambda: RegularizedPAClassifier(kernel="gaussian"),
])
@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("path", ["chunk", "event"])
def test_a_huge_row_is_named_as_the_cause_with_three_classes(make, engine, path):
    """The compiled one-event step of k classes blamed the step size for such an event."""
    X, _, _ = _data()
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    est = make().set_params(engine=engine).fit(X[:20], y3[:20])
    before = est.decision_function(X)
    with pytest.raises(FloatingPointError, match="too large for float64") as info:
        if path == "chunk":
            est.partial_fit(np.vstack([X[20:22], X[25] * 1e200]), y3[20:23])
        else:
            est.learn_one(X[25] * 1e200, y3[25].item())
    assert "tiny" not in str(info.value) and "smaller eta" not in str(info.value)
    np.testing.assert_array_equal(est.decision_function(X), before)


def test_a_tiny_row_still_names_the_tiny_norm():
    X, _, yc = _data()
    est = RegularizedPAClassifier(variant="PA").fit(X[:20], yc[:20])   # the uncapped step
    with pytest.raises(FloatingPointError, match="tiny nonzero norm"):
        est.partial_fit(X[20:21] * 1e-200, yc[20:21])


# ---- item 7: sizes that cannot be meant are refused before anything is allocated -------------

@pytest.mark.parametrize("make, name", [
    (lambda: OnlineKernelRegressor(budget=2 ** 31 - 1), "budget"),
    (lambda: OnlineKernelRegressor(approximation="fourier", n_components=2 ** 31 - 1),
     "n_components"),
    (lambda: RegularizedPAClassifier(kernel="gaussian", approximation="nystroem",
                                     n_components=10 ** 6), "n_components"),
    (lambda: CoefficientRegularizedClassifier(n_centers=2 ** 31 - 1), "n_centers"),
    (lambda: PairwiseLearner(pair_kernel="difference", buffer=10 ** 7), "buffer"),
    (lambda: MultiKernelRegressor(learner="sgd", budget=2 ** 31 - 1), "budget"),
    (lambda: KernelRLSRegressor(budget=50_000), "budget"),         # 2 x 18.6 GiB of matrices
    (lambda: KernelRLSRegressor(approximation="fourier", n_components=50_000), "n_components"),
])
def test_a_size_beyond_memory_is_refused_at_the_first_call(make, name, monkeypatch):
    from okl import _params
    monkeypatch.setattr(_params, "physical_memory", lambda: 16 * 2 ** 30)
    X, y, yc = _data()
    est = make()
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter .* more than this "
                                                    "machine's memory"):
        est.fit(X, yc if is_classifier(est) else y)
    assert not hasattr(est, "t_")


def test_the_krls_matrices_and_a_conformal_window_count_in_the_memory_check(monkeypatch):
    """KernelRLSRegressor keeps budget x budget matrices (the centres alone looked small); a
    conformal window keeps its scores twice."""
    from okl import ConformalRegressor
    from okl import _params
    sizes = dict((name, n_bytes) for name, n_bytes, _ in _params.model_sizes(
        KernelRLSRegressor(budget=1000), 3))
    assert sizes["budget"] == 8 * 1000 * (3 + 2 + 2 * 1000)
    monkeypatch.setattr(_params, "physical_memory", lambda: 2 ** 20)    # 1 MiB
    X, y, _ = _data()
    est = ConformalRegressor(OnlineKernelRegressor(budget=10), window=10 ** 6)
    with pytest.raises(InvalidParameterError, match="'window' parameter .* a window of "
                                                    "1000000 scores"):
        est.fit(X, y)
    assert not hasattr(est, "t_")
    ConformalRegressor(OnlineKernelRegressor(budget=10), window=100).fit(X, y)


@pytest.mark.parametrize("n_workers, match", [
    (10 ** 9, "more than the 60 rows"), (61, "more than the 60 rows"),
    ("2", "must be an int"), (2.7, "must be an int"), (True, "must be an int"),
])
def test_averaged_learner_refuses_workers_that_cannot_be_meant(n_workers, match):
    """n_workers=10**9 allocated 24 GB before any check; '2' and 2.7 were taken."""
    from okl.distributed import AveragedLearner
    X, y, _ = _data(60)
    with pytest.raises(ValueError, match=match):
        AveragedLearner(OnlineKernelRegressor(), n_workers=n_workers,
                        client="sequential").fit(X, y)


# ---- item 10: the small ones -------------------------------------------------------------------

@pytest.mark.parametrize("make, labels", [
    (lambda: OnlineKernelRegressor(), False),
    (lambda: OnlineKernelClassifier(), True),
    (lambda: MultiKernelRegressor(), False),
])
@pytest.mark.parametrize("weight, error", [("2", TypeError), (10 ** 400, ValueError)])
def test_sample_weight_is_a_number_on_every_path(make, labels, weight, error):
    """learn_one(x, y, sample_weight='2') was 2.0 for some learners; 10**400 a bare
    OverflowError."""
    X, y, yc = _data()
    target = yc if labels else y
    est = make().fit(X[:20], target[:20])
    with pytest.raises(error, match="sample_weight"):
        est.learn_one(X[20], target[20].item(), sample_weight=weight)
    with pytest.raises(error, match="sample_weight"):
        est.partial_fit(X[20:22], target[20:22], sample_weight=[1.0, weight])
    assert est.t_ == 20


def test_the_scaler_refuses_a_variance_beyond_float64():
    """Features near 1e300 kept an infinite variance (and scaled every value to 0)."""
    scaler = OnlineStandardScaler().partial_fit(np.array([[1.0], [2.0]]))
    before = pickle.dumps(scaler)
    for call in (lambda: scaler.partial_fit(np.array([[1e300], [-1e300]])),
                 lambda: scaler.learn_one(np.array([1e300]))):
        with pytest.raises(ValueError, match="cannot hold the variance of feature 0"):
            call()
        assert pickle.dumps(scaler) == before


# ---- item 8: many labels ------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda k: RegularizedPAClassifier(kernel="gaussian", budget=50, classes=np.arange(k)),
    lambda k: OnlineKernelClassifier(budget=50, classes=np.arange(k)),
])
def test_partial_fit_keeps_no_score_of_every_row_and_class(make, monkeypatch):
    """One 50,000-row chunk with 10^4 classes peaked at 4 GB for 8 MB of coefficients: the
    scores of every row and class were kept whole.  Now the memory is bounded by the chunk
    (scores of at most SCORE_VALUES at a time, here 2^16: 0.5 MiB)."""
    import tracemalloc

    from okl import _base
    monkeypatch.setattr(_base, "SCORE_VALUES", 2 ** 16)
    n, k = 3000, 1000
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(n, 3)), rng.integers(0, k, size=n)
    est = make(k).partial_fit(X[:5], y[:5])
    tracemalloc.start()
    try:
        est.partial_fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * k * 8 / 4, f"{peak / 2 ** 20:.1f} MiB for {n * k * 8 / 2 ** 20:.1f} MiB " \
                                 "of scores"
    twin = make(k).partial_fit(X[:5], y[:5])
    scores = twin._progressive_scores(X, y)             # progressive validation keeps them
    assert scores.shape == (n, k)
    np.testing.assert_array_equal(twin.decision_function(X[:50]), est.decision_function(X[:50]))


def test_a_multikernel_classifier_of_many_classes_warns(monkeypatch):
    """600 classes took 7-18 ms a step without the SizeWarning the README promises."""
    from okl import MultiKernelClassifier, _warnings
    monkeypatch.setattr(_warnings, "EXPANSION_WORK", 1000)
    X, _, _ = _data(200)
    y = np.arange(200) % 60
    with pytest.warns(_warnings.SizeWarning, match="scores 60 classes"):
        MultiKernelClassifier(budget=40).fit(X, y)


@pytest.mark.parametrize("eta, eta_decay", [(1e300, 0.75), (10.0, 0.0), (1e30, 0.5)])
def test_a_coefreg_step_that_empties_the_model_forever_is_refused(eta, eta_decay):
    """eta=1e300 collapsed the coefficients to zero with only a warning: eta_t lam >= 1 at
    every step of any stream is refused (Theorem 4 needs eta_t lam < 1)."""
    X, _, yc = _data()
    est = CoefficientRegularizedClassifier(eta=eta, eta_decay=eta_decay, lam=0.1)
    with pytest.raises(InvalidParameterError, match="every step of any stream"):
        est.fit(X, yc)
    assert not hasattr(est, "t_")
    est.set_params(eta=5.0, eta_decay=0.75).fit(X, yc)       # eta_t lam < 1 from t = 1.9 on


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("value", [0.5, "bogus"])
def test_an_engine_set_past_validation_is_named_by_a_fitted_krls(engine, value):
    """set_params(engine=0.5) on a fitted KernelRLSRegressor: predict raised KeyError."""
    X, y, _ = _data()
    est = KernelRLSRegressor(engine=engine).fit(X, y)
    before = est.predict(X)
    est.set_params(engine=value)
    with pytest.raises(InvalidParameterError, match="'engine' parameter"):
        est.predict(X)
    est.set_params(engine=engine)
    np.testing.assert_array_equal(est.predict(X), before)


# ---- item 8: many new labels ----------------------------------------------------------------

def _many_labels(n=80, seed=3):
    X = np.random.default_rng(seed).normal(size=(n, 3))
    return X, np.arange(n) % 60          # 60 labels, each new at its first row


@pytest.mark.parametrize("make", [
    lambda budget, engine: RegularizedPAClassifier(kernel="gaussian", gamma=0.5, budget=budget,
                                                   budget_policy="oldest", engine=engine),
    lambda budget, engine: OnlineKernelClassifier(gamma=0.5, budget=budget,
                                                  budget_policy="oldest", drift_detector=None,
                                                  engine=engine),
], ids=["pa", "okc"])
@pytest.mark.parametrize("budget", [None, 30])
def test_many_new_labels_give_the_same_model_on_both_engines_chunks_and_events(make, budget):
    """A class added per row (`MultiExpansion.with_class`): the compiled engine, the NumPy
    engine and the one-event path reach the same model."""
    X, y = _many_labels()
    models = []
    for engine, path in [("cython", "chunk"), ("numpy", "chunk"), ("cython", "event")]:
        est = make(budget, engine)
        if path == "chunk":
            est.partial_fit(X, y)
        else:
            for x, label in zip(X, y):
                est.learn_one(x, label.item())
        models.append(est)
    assert all(len(est.classes_) == 60 for est in models)
    reference = models[0].decision_function(X)
    for est in models[1:]:
        np.testing.assert_allclose(est.decision_function(X), reference, rtol=0, atol=1e-10)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_a_new_class_copies_the_expansion_once_and_keeps_its_room(engine):
    """with_class leaves the old expansion as it was (a failed call's undo), puts a zero
    score function at its position and keeps the room for centres, so the next step does
    not grow it again: the centres' buffers grow geometrically, not per label."""
    X, y = _many_labels(40)
    est = RegularizedPAClassifier(kernel="gaussian", gamma=0.5, engine=engine).fit(X, y)
    old = est._model.expansion
    before = old.predict(X)
    new = old.with_class(7)
    np.testing.assert_array_equal(old.predict(X), before)
    after = new.predict(X)
    np.testing.assert_array_equal(after[:, 7], 0.0)
    np.testing.assert_array_equal(np.delete(after, 7, axis=1), before)
    if engine == "cython":
        assert new.capacity == old.capacity
        assert old.capacity < 2 * max(old.n_support, 16)     # doubling, not per label
    with pytest.raises(ValueError, match="position must be in"):
        old.with_class(old.n_classes + 1)


def test_the_scaler_refuses_a_value_it_could_not_carry_beside_others():
    """One event near 1e155 was accepted (one sample: variance 0), and from then on every
    chunk, however clean, was refused: the scaler was stuck.  Such a value is refused when
    it comes, and the scaler learns on."""
    scaler = OnlineStandardScaler().partial_fit(np.array([[1.0, 0.0], [2.0, 1.0]]))
    before = pickle.dumps(scaler)
    for call in (lambda: scaler.learn_one(np.array([0.5, 1e155])),
                 lambda: scaler.partial_fit(np.array([[0.5, 0.0], [1.0, -1e155]]))):
        with pytest.raises(ValueError, match="variance of feature 1: a value of .*1e.155"):
            call()
        assert pickle.dumps(scaler) == before
    fresh = OnlineStandardScaler()
    with pytest.raises(ValueError, match="beyond"):
        fresh.learn_one(np.array([1e155]))
    fresh.learn_one(np.array([1e150]))      # the largest it takes, beside any other value
    fresh.partial_fit(np.array([[-1e150], [3.0]]))
    assert np.isfinite(fresh.var_).all() and fresh.n_samples_seen_ == 3
