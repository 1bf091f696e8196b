"""Regressions found by an adversarial audit of the multiclass, multi-kernel and label code.

Each test replays the smallest scenario that broke a rule of the house: nothing a
user can pass, load or do crashes or corrupts a model, and a call that raises
leaves the model exactly as it was.
"""
import pickle
import warnings

import numpy as np
import pytest

from okl import (
    CoefficientRegularizedClassifier,
    MultiKernelClassifier,
    MultiKernelRegressor,
    PairwiseLearner,
    RegularizedPAClassifier,
    load,
    save,
)

ENGINES = ["cython", "numpy"]


# ---- a multi-kernel model without centres ------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_refused_call_restores_a_multikernel_model_without_centres(engine):
    """The checkpoint of a model of 0 centres could not be restored (centres reshaped to
    (0, -1)): the refusal of a third class raised a reshape error and left the offsets moved."""
    X = np.random.default_rng(0).normal(size=(10, 2))
    est = MultiKernelClassifier(gammas=(0.5,), eta_scales=(1.0,), engine=engine)
    est.partial_fit(X[:5], np.zeros(5, dtype=int))          # one class: no centre yet
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match="Only binary classification"):
        est.partial_fit(X[5:], np.array([0, 1, 2, 0, 1]))
    assert pickle.dumps(est) == before


@pytest.mark.parametrize("make", [MultiKernelClassifier, MultiKernelRegressor])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_multikernel_model_without_centres_pickles_and_saves(make, engine, tmp_path):
    X = np.random.default_rng(1).normal(size=(4, 3))
    est = make(engine=engine)
    if make is MultiKernelClassifier:
        est.partial_fit(X, np.zeros(4, dtype=int))
    else:
        est.partial_fit(X, np.zeros(4), sample_weight=np.zeros(4))
    assert est._model.n_support == 0
    copy = pickle.loads(pickle.dumps(est))
    save(est, tmp_path / "m.okl")
    for other in (copy, load(tmp_path / "m.okl")):
        assert other._model.n_support == 0
        np.testing.assert_array_equal(other.predict(X), est.predict(X))


# ---- a multi-kernel merge across an overflowing distance --------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_multikernel_merge_with_a_far_centre_keeps_the_model_finite(engine):
    """z = x_m (h = 1) with ||x_m - x_n||^2 = inf: K(x_m, z) was exp(-g 0 inf) = NaN, a NaN
    coefficient that every later prediction returned (the step had been accepted)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 5))
    X[8] = [1e-160, 1.5, 1.3, -1e300, 0.26]                  # finite, its squared norm is not
    y = np.sin(X[:, 0])
    est = MultiKernelRegressor(gammas=(0.5,), eta_scales=(1.0, 4.0), loss="absolute", eta=5.0,
                               eta_decay=0.0, budget=2, budget_policy="merge", random_state=0,
                               engine=engine)
    for x, target in zip(X, y):
        est.learn_one(x, float(target))
        assert np.all(np.isfinite(est._model.get_state()["coef"]))
    assert np.all(np.isfinite(est.predict(rng.normal(size=(5, 5)))))


def test_the_far_centre_merge_is_the_same_in_both_engines():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    X[::7, 1] = 1e300
    y = np.cos(X[:, 0]).clip(-1, 1)
    models = []
    for engine in ENGINES:
        est = MultiKernelRegressor(gammas=(0.5, 2.0), budget=3, budget_policy="merge",
                                   eta=1.0, engine=engine)
        for x, target in zip(X, y):
            est.learn_one(x, float(target))
        state = est._model.get_state()
        models.append((state["scale"][:, None] * state["coef"], state["centers"]))
    np.testing.assert_allclose(models[0][0], models[1][0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(models[0][1], models[1][1], rtol=0, atol=1e-10)
    assert np.all(np.isfinite(models[0][0]))


# ---- okl.save of a model fed dict events -------------------------------------------------------

DICT_FED = {
    "pa-linear": (RegularizedPAClassifier, 2),
    "pa-kernel-3": (lambda: RegularizedPAClassifier(kernel="gaussian"), 3),
    "coefreg": (lambda: CoefficientRegularizedClassifier(n_centers=5), 2),
    "pairwise": (PairwiseLearner, 0),
}


@pytest.mark.parametrize("name", sorted(DICT_FED))
def test_okl_load_reads_what_okl_save_wrote_after_dict_events(name, tmp_path):
    """The feature order of dict events (`_row_keys`) was saved, and load refused the file
    as damaged ("unknown entries ['_row_keys']")."""
    make, k = DICT_FED[name]
    rng = np.random.default_rng(3)
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(20):
            x = {"a": rng.normal(), "b": rng.normal()}
            est.learn_one(x, i % k if k else x["a"])
    save(est, tmp_path / "m.okl")
    other = load(tmp_path / "m.okl")
    assert other._row_keys == ("a", "b")
    probe = {"b": 0.5, "a": -1.0}                           # the saved order places the keys
    assert other.predict_one(probe) == est.predict_one(probe)
