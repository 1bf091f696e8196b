"""Forgetting and change detection in the step (okl.drift, docs/drift.md): both engines, chunks
and events, persistence, a detector outside the step (river's)."""
import copy
import io
import pickle

import numpy as np
import pytest
from river.drift import ADWIN
from river.drift import PageHinkley as RiverPageHinkley

import okl
from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl._params import InvalidParameterError
from okl.drift import KEEP, PageHinkley
from okl.synth import concept_switch, drifting_friedman

ADAPTING = ({"drift_detector": "page_hinkley"}, {"forgetting": 0.995},
            {"drift_detector": PageHinkley(threshold=10.0), "forgetting": 0.999})
MODELS = ({}, {"budget": 60}, {"approximation": "nystroem", "n_components": 40},
          {"approximation": "fourier", "n_components": 40, "random_state": 0})


def switch(n=1200, n_classes=2, seed=0):
    X, y, drifts = concept_switch(n, n_features=4, n_clusters=8, n_classes=n_classes,
                                  drifts=3, random_state=seed)
    return X, y, drifts


def friedman_stream(n=1200, seed=0):
    return drifting_friedman(n, n_features=6, drifts=3, random_state=seed)


def state(est):
    return np.array(est.__dict__.get("_drift_state", ()))


@pytest.mark.parametrize("adapt", ADAPTING)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n_classes", (2, 3))
def test_classifier_engines_agree(adapt, model, n_classes):
    """Both engines, the same iterates (1e-10) and drift state: changes found, clock restarted."""
    X, y, _ = switch(n_classes=n_classes)
    fits = [OnlineKernelClassifier(engine=e, **adapt, **model).fit(X, y)
            for e in ("cython", "numpy")]
    np.testing.assert_allclose(fits[0].decision_function(X), fits[1].decision_function(X),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(state(fits[0]), state(fits[1]), rtol=0, atol=1e-10)
    if "drift_detector" in adapt:
        assert fits[0].n_drifts_ >= 1
        assert state(fits[0])[0] < fits[0].t_          # the clock restarted


@pytest.mark.parametrize("adapt", ADAPTING)
@pytest.mark.parametrize("params", ({}, {"loss": "absolute"}, {"loss": "pinball", "quantile": 0.3,
                                                               "lam_decay": 0.2},
                                    {"approximation": "nystroem", "n_components": 40}))
def test_regressor_engines_agree(adapt, params):
    X, y, _ = friedman_stream()
    fits = [OnlineKernelRegressor(engine=e, **adapt, **params).fit(X, y)
            for e in ("cython", "numpy")]
    np.testing.assert_allclose(fits[0].predict(X), fits[1].predict(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(state(fits[0]), state(fits[1]), rtol=0, atol=1e-10)
    assert fits[0].intercept_ == pytest.approx(fits[1].intercept_, abs=1e-10)
    if isinstance(adapt.get("drift_detector"), PageHinkley):     # the sensitive one
        assert fits[0].n_drifts_ >= 1


@pytest.mark.parametrize("engine", ("cython", "numpy"))
@pytest.mark.parametrize("adapt", ADAPTING)
@pytest.mark.parametrize("n_classes", (2, 3))
def test_chunks_and_events_agree(engine, adapt, n_classes):
    """Chunks of any size and one event at a time give the same iterates and drift state."""
    X, y, _ = switch(900, n_classes=n_classes, seed=1)
    whole = OnlineKernelClassifier(engine=engine, **adapt).fit(X, y)
    chunks = OnlineKernelClassifier(engine=engine, **adapt)
    for lo in range(0, len(X), 97):
        chunks.partial_fit(X[lo:lo + 97], y[lo:lo + 97], classes=np.unique(y))
    events = OnlineKernelClassifier(engine=engine, classes=np.unique(y), **adapt)
    for x, label in zip(X, y):
        events.learn_one(x, label)
    for other in (chunks, events):
        np.testing.assert_allclose(other.decision_function(X), whole.decision_function(X),
                                   rtol=0, atol=1e-10)
        np.testing.assert_allclose(state(other), state(whole), rtol=0, atol=1e-10)
        assert other.n_drifts_ == whole.n_drifts_


@pytest.mark.parametrize("engine", ("cython", "numpy"))
def test_regressor_events_agree(engine):
    X, y, _ = friedman_stream(800, seed=2)
    whole = OnlineKernelRegressor(engine=engine, drift_detector="page_hinkley").fit(X, y)
    events = OnlineKernelRegressor(engine=engine, drift_detector="page_hinkley")
    for x, target in zip(X, y):
        events.learn_one(x, target)
    np.testing.assert_allclose(events.predict(X), whole.predict(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(state(events), state(whole), rtol=0, atol=1e-10)


def test_off_is_the_papers_step():
    """forgetting=1 and no detector: no drift state, the iterates of the step without them."""
    X, y, _ = switch()
    plain = OnlineKernelClassifier(drift_detector=None).fit(X, y)
    assert "_drift_state" not in plain.__dict__ and plain.n_drifts_ == 0
    # a detector that never fires changes nothing either
    quiet = OnlineKernelClassifier(drift_detector=PageHinkley(threshold=1e9)).fit(X, y)
    np.testing.assert_array_equal(quiet.decision_function(X), plain.decision_function(X))
    assert state(quiet)[0] == quiet.t_ and quiet.n_drifts_ == 0


def test_forgetting_count_and_fading():
    """tau <- lam tau + 1 tends to 1 / (1 - lam); the model fades by lam per step."""
    X, y, _ = friedman_stream(3000)
    est = OnlineKernelRegressor(forgetting=0.99, eta=0.01, eta_decay=0.0, lam=0.0,
                                budget=None, fit_intercept=False).fit(X, y)
    tau = state(est)[0]
    assert tau == pytest.approx((1 - 0.99 ** 3000) / (1 - 0.99), rel=1e-12)
    before = est.predict(X[:5])
    est.partial_fit(X[:1], y[:1], sample_weight=[0.0])        # a zero weight: no step
    np.testing.assert_array_equal(est.predict(X[:5]), before)
    f = est.predict(X[:1])
    plain = copy.deepcopy(est)
    plain.set_params(forgetting=1.0)
    est.partial_fit(X[:1], y[:1])
    plain.partial_fit(X[:1], y[:1])
    # f_{t+1}(x) = lam f_t(x) - eta g K(x, x) + ... versus f_t(x) - eta g K(x, x) + ...
    assert est.predict(X[:1]) - plain.predict(X[:1]) == pytest.approx(-0.01 * f, rel=1e-6)


def test_a_change_restarts_the_clock_and_keeps_half():
    """A change at step t: tau = 1 after it, the model scaled by KEEP before the step."""
    ph = PageHinkley(delta=0.0, threshold=0.5, min_events=1)
    X, y, _ = friedman_stream(400)
    est = OnlineKernelRegressor(drift_detector=ph, eta=0.01, eta_decay=0.5, lam=0.0,
                                fit_intercept=False).fit(X[:300], y[:300])
    assert est.n_drifts_ >= 1
    changes = est.n_drifts_
    for x, target in zip(X[300:], y[300:]):
        ref = copy.deepcopy(est)
        est.partial_fit(x[None], [target])
        if est.n_drifts_ > changes:
            changes = est.n_drifts_
            assert state(est)[0] == 1.0
            f = ref.predict(x[None])[0]
            ref.set_params(drift_detector=None)
            del ref._drift_state
            ref.t_ = 0                          # the schedule's first step, eta = 0.01
            ref.partial_fit(x[None], [target])
            # the changed step: KEEP f_t - eta g K, the plain first step: f_t - eta g K
            assert est.predict(x[None])[0] - ref.predict(x[None])[0] == pytest.approx(
                (KEEP - 1.0) * f, rel=1e-9, abs=1e-12)
            break
    else:
        pytest.fail("no change after step 300")


@pytest.mark.parametrize("engine", ("cython", "numpy"))
def test_save_load_and_pickle_continue_the_stream(engine):
    X, y, _ = switch(1200, n_classes=3)
    est = OnlineKernelClassifier(engine=engine, drift_detector="page_hinkley",
                                 forgetting=0.999).fit(X[:700], y[:700])
    assert "_drift_state" in est.__dict__
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    loaded = okl.load(buffer)
    pickled = pickle.loads(pickle.dumps(est))
    for other in (loaded, pickled):
        assert other._drift_state == est._drift_state
    for other in (est, loaded, pickled):
        other.partial_fit(X[700:], y[700:])
    for other in (loaded, pickled):
        np.testing.assert_array_equal(other.decision_function(X), est.decision_function(X))
        assert other._drift_state == est._drift_state


@pytest.mark.parametrize("bad", ([1.0] * 7, [1.0, 0, 0, 0, 0, 0, 0, 2],
                                 [1.0, -1, 0, 0, 0, 0, 0, 0], [1.0, 1, 0, -1, 0, 0, 0, 0],
                                 [1.0, 1, 0, 0, 0, 0.5, 0, 0], [1.0, 1, 0, 0, -1, 0, 0.5, 0],
                                 [1.0, 1, 0, 0, 0, 0, 0, float("nan")], "x"))
def test_load_refuses_a_bad_drift_state(bad, tmp_path):
    X, y, _ = switch(300)
    est = OnlineKernelClassifier(drift_detector="page_hinkley").fit(X, y)
    path = tmp_path / "model.npz"
    est._drift_state = bad
    try:
        okl.save(est, path)
    except (TypeError, ValueError):
        return                                  # a value okl.save cannot write at all
    with pytest.raises(okl.ModelFileError, match="_drift_state"):
        okl.load(path)


@pytest.mark.parametrize("engine", ("cython", "numpy"))
def test_divergence_leaves_the_drift_state(engine):
    """A chunk that diverges (a fixed step of 1 on the linear kernel, test_regression's) leaves
    the drift state as it was."""
    X, y, _ = friedman_stream(300)
    est = OnlineKernelRegressor(kernel="linear", engine=engine, eta=0.02, eta_decay=0.0,
                                budget=20, drift_detector="page_hinkley",
                                forgetting=0.99).fit(X[:50], y[:50])
    before = est._drift_state
    with pytest.raises(FloatingPointError, match="diverged"):
        est.partial_fit(X * 50, y * 1e6)
    assert est._drift_state is before


def test_river_detector_runs_outside_the_step():
    """river's ADWIN on the Python path: the same iterates by chunks or events, the stream's
    changes found, the parameter left as given, pickle (okl.save refuses the object)."""
    X, y, _ = concept_switch(2000, n_features=4, n_clusters=8, drifts=1, move=0.0,
                             random_state=3)
    given = ADWIN()
    whole = OnlineKernelClassifier(drift_detector=given).fit(X, y)
    assert whole.n_drifts_ >= 1 and given.n_detections == 0
    assert whole.drift_detector_ is not given
    events = OnlineKernelClassifier(drift_detector=ADWIN(), classes=np.unique(y))
    for x, label in zip(X, y):
        events.learn_one(x, label)
    np.testing.assert_array_equal(events.decision_function(X), whole.decision_function(X))
    assert events._drift_state == whole._drift_state
    again = pickle.loads(pickle.dumps(whole))
    again.partial_fit(X[:50], y[:50])
    whole.partial_fit(X[:50], y[:50])
    np.testing.assert_array_equal(again.decision_function(X), whole.decision_function(X))
    with pytest.raises(TypeError, match="drift_detector"):
        okl.save(whole, io.BytesIO())
    # an exception leaves the detector's copy as it was
    copy_before = whole.drift_detector_
    bad = X[:5].copy()
    bad[3] = np.nan
    with pytest.raises(ValueError):
        whole.partial_fit(bad, y[:5])
    assert whole.drift_detector_ is copy_before


def test_pending_change_is_taken_at_the_next_step():
    """A change seen outside the step (pending) restarts the clock at the next step."""
    X, y, _ = friedman_stream(300)
    est = OnlineKernelRegressor(forgetting=1.0).fit(X[:200], y[:200])
    est._drift_state = (200.0, 0, 0, 0, 0, 0, 0, 1.0)
    est.partial_fit(X[200:201], y[200:201])
    assert est._drift_state == (1.0, 0, 0, 0, 0, 0, 1.0, 0.0)
    assert est.n_drifts_ == 1


def test_page_hinkley_alone():
    ph = PageHinkley()
    seen = [i for i, x in enumerate([0.0] * 500 + [1.0] * 100) if ph.update(x).drift_detected]
    assert seen == [505] and ph.n_detections == 1
    quiet = PageHinkley(min_events=1000)
    assert not any(quiet.update(x).drift_detected for x in [0.0] * 500 + [1.0] * 100)
    for bad in (dict(delta=-1), dict(threshold=0), dict(min_events=0), dict(delta=np.inf),
                dict(threshold="x")):
        with pytest.raises(ValueError, match="PageHinkley"):
            PageHinkley(**bad).update(0.0)


@pytest.mark.parametrize("params, match", (({"forgetting": 0.0}, "forgetting"),
                                           ({"forgetting": 1.5}, "forgetting"),
                                           ({"drift_detector": "adwin"}, "drift_detector"),
                                           ({"drift_detector": 3}, "drift_detector")))
def test_bad_parameters(params, match):
    X, y, _ = switch(100)
    with pytest.raises(InvalidParameterError, match=match):
        OnlineKernelClassifier(**params).fit(X, y)


# -- RegularizedPAClassifier and CoefficientRegularizedClassifier: the model takes the factor --

PA_MODELS = ({"kernel": "linear", "regularization": "none"},
             {"kernel": "linear", "regularization": "objective", "alpha": 0.01},
             {"kernel": "linear", "regularization": "l2", "beta": 3.0, "truncate_sigma": 0.01},
             {"kernel": "gaussian", "regularization": "none", "variant": "PA-I"},
             {"kernel": "gaussian", "regularization": "l2", "beta": 5.0, "budget": 40},
             {"kernel": "gaussian", "approximation": "nystroem", "n_components": 30},
             {"kernel": "gaussian", "approximation": "fourier", "n_components": 30,
              "random_state": 0})
FACTORS = ({"drift_detector": PageHinkley(threshold=10.0)}, {"forgetting": 0.99},
           {"drift_detector": "page_hinkley", "forgetting": 0.995})


@pytest.mark.parametrize("adapt", FACTORS)
@pytest.mark.parametrize("model", PA_MODELS)
@pytest.mark.parametrize("n_classes", (2, 3))
def test_pa_engines_chunks_and_events_agree(adapt, model, n_classes):
    """Both engines (the NumPy twin keeps true weights: 1e-9), chunks and events (exactly)."""
    X, y, _ = switch(900, n_classes=n_classes, seed=4)
    fits = [okl.RegularizedPAClassifier(engine=e, **adapt, **model).fit(X, y)
            for e in ("cython", "numpy")]
    np.testing.assert_allclose(fits[0].decision_function(X), fits[1].decision_function(X),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(state(fits[0]), state(fits[1]), rtol=1e-12, atol=1e-9)
    events = okl.RegularizedPAClassifier(classes=np.unique(y), **adapt, **model)
    for x, label in zip(X, y):
        events.learn_one(x, label)
    np.testing.assert_allclose(events.decision_function(X), fits[0].decision_function(X),
                               rtol=1e-12, atol=1e-12)
    assert events._drift_state == fits[0]._drift_state


def test_pa_off_is_the_papers_rule():
    X, y, _ = switch(600, seed=5)
    plain = okl.RegularizedPAClassifier(kernel="gaussian").fit(X, y)
    quiet = okl.RegularizedPAClassifier(kernel="gaussian",
                                        drift_detector=PageHinkley(threshold=1e9)).fit(X, y)
    np.testing.assert_array_equal(quiet.decision_function(X), plain.decision_function(X))
    assert "_drift_state" not in plain.__dict__ and quiet.n_drifts_ == 0


def test_pa_refuses_l1_with_a_drift_factor():
    X, y, _ = switch(100)
    with pytest.raises(InvalidParameterError, match="l1"):
        okl.RegularizedPAClassifier(regularization="l1", forgetting=0.99).fit(X, y)


@pytest.mark.parametrize("adapt", FACTORS)
@pytest.mark.parametrize("n_classes", (2, 3))
@pytest.mark.parametrize("loss", ("hinge", "logistic"))
def test_coefreg_engines_chunks_and_events_agree(adapt, n_classes, loss):
    X, y, _ = switch(900, n_classes=n_classes, seed=6)
    params = dict(n_centers=60, loss=loss, **adapt)
    fits = [okl.CoefficientRegularizedClassifier(engine=e, **params).fit(X, y)
            for e in ("cython", "numpy")]
    np.testing.assert_allclose(fits[0].decision_function(X), fits[1].decision_function(X),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(state(fits[0]), state(fits[1]), rtol=1e-12, atol=1e-9)
    events = okl.CoefficientRegularizedClassifier(classes=np.unique(y), **params)
    for x, label in zip(X, y):
        events.learn_one(x, label)
    np.testing.assert_allclose(events.decision_function(X), fits[0].decision_function(X),
                               rtol=1e-12, atol=1e-12)
    assert events._drift_state == fits[0]._drift_state


@pytest.mark.parametrize("make", (
    lambda **kw: okl.RegularizedPAClassifier(kernel="gaussian", **kw),
    lambda **kw: okl.RegularizedPAClassifier(kernel="gaussian", **kw, classes=[0, 1, 2]),
    lambda **kw: okl.CoefficientRegularizedClassifier(n_centers=50, **kw),
    lambda **kw: okl.CoefficientRegularizedClassifier(n_centers=50, **kw,
                                                      classes=[0, 1, 2])))
def test_pa_and_coefreg_find_a_switch(make):
    """The classes of the same places switch: Page-Hinkley sees it, after the change."""
    X, y, _ = concept_switch(3000, n_features=4, n_clusters=20, drifts=1, move=0.0,
                             random_state=3)
    if len(make().get_params()["classes"] or ()) == 3:
        y = (y + (np.arange(len(y)) % 7 == 0)) % 3      # a third class, now and then
    adapted = make(drift_detector=PageHinkley(threshold=30.0)).fit(X[:1500], y[:1500])
    assert adapted.n_drifts_ == 0
    adapted.partial_fit(X[1500:], y[1500:])
    assert adapted.n_drifts_ >= 1
    assert make().fit(X, y).n_drifts_ == 0


@pytest.mark.parametrize("make", (
    lambda **kw: okl.RegularizedPAClassifier(kernel="gaussian", **kw),
    lambda **kw: okl.CoefficientRegularizedClassifier(n_centers=50, **kw)))
def test_pa_and_coefreg_save_load_continue(make, tmp_path):
    X, y, _ = switch(900, n_classes=3, seed=7)
    est = make(drift_detector="page_hinkley", forgetting=0.999).fit(X[:500], y[:500])
    okl.save(est, tmp_path / "m.npz")
    loaded = okl.load(tmp_path / "m.npz")
    assert loaded._drift_state == est._drift_state
    for other in (est, loaded):
        other.partial_fit(X[500:], y[500:])
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    assert loaded._drift_state == est._drift_state


@pytest.mark.parametrize("make", (
    lambda **kw: okl.RegularizedPAClassifier(kernel="gaussian", **kw),
    lambda **kw: okl.CoefficientRegularizedClassifier(n_centers=50, **kw),
    lambda **kw: OnlineKernelRegressor(**kw)))
def test_river_detector_on_the_other_learners(make):
    """river's Page-Hinkley (rises only) outside the step: the same by chunks and events."""
    X, y, _ = concept_switch(2000, n_features=4, n_clusters=8, drifts=1, move=0.0,
                             random_state=3)
    fixed = {"classes": [0, 1]}
    if "Regressor" in repr(make()):
        X, y, _ = drifting_friedman(2000, n_features=6, drifts=1, random_state=3)
        fixed = {}
    whole = make(drift_detector=RiverPageHinkley(mode="up", threshold=10)).fit(X, y)
    events = make(drift_detector=RiverPageHinkley(mode="up", threshold=10), **fixed)
    for x, target in zip(X, y):
        events.learn_one(x, target)
    np.testing.assert_array_equal(events.predict(X), whole.predict(X))
    assert events._drift_state == whole._drift_state and whole.n_drifts_ >= 1


def test_a_file_saved_before_the_parameters_neither_forgets_nor_detects(tmp_path):
    """okl.load of a file without forgetting / drift_detector: the model as it was then."""
    import json
    X, y, _ = switch(300)
    est = OnlineKernelClassifier(drift_detector=None).fit(X, y)
    okl.save(est, tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz", allow_pickle=False) as data:
        arrays = dict(data)
    header = json.loads(arrays.pop("__header__").tobytes())
    for name in ("forgetting", "drift_detector"):
        del header["params"][name]
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(tmp_path / "old.npz", "wb") as file:
        np.savez(file, __header__=blob, **arrays)
    old = okl.load(tmp_path / "old.npz")
    assert old.forgetting == 1.0 and old.drift_detector is None
    np.testing.assert_array_equal(old.decision_function(X), est.decision_function(X))


# -- KernelRLSRegressor: the detector on the residual over the targets' deviation, KRLS's own
# forgetting ----------------------------------------------------------------------------------

KRLS_MODELS = ({}, {"gamma": 0.5, "noise": 0.1, "budget": 40},
               {"approximation": "fourier", "n_components": 30, "random_state": 0},
               {"approximation": "nystroem", "n_components": 30, "forgetting": 0.999})


def krls_state(est):
    return est._krls.get_state()


def assert_krls_equal(a, b):
    for key, value in krls_state(a).items():
        np.testing.assert_array_equal(value, krls_state(b)[key], err_msg=key)
    assert a.__dict__.get("_drift_state") == b.__dict__.get("_drift_state")


@pytest.mark.parametrize("model", KRLS_MODELS)
def test_krls_engines_agree(model):
    """Both engines, the same iterates and drift state (1e-10), the stream's changes found."""
    X, y, _ = drifting_friedman(2000, n_features=6, drifts=3, random_state=0)
    fits = [okl.KernelRLSRegressor(engine=e, drift_detector="page_hinkley", **model)
            for e in ("cython", "numpy")]
    scores = [est._progressive_scores(X, y, reset=True) for est in fits]
    np.testing.assert_allclose(scores[0], scores[1], rtol=0, atol=1e-10)
    np.testing.assert_allclose(fits[0].predict(X), fits[1].predict(X), rtol=0, atol=1e-10)
    # the sums of the drift state (m2, cusum: hundreds of residuals) to 1e-10 of their size
    np.testing.assert_allclose(state(fits[0]), state(fits[1]), rtol=1e-10, atol=1e-10)
    assert fits[0].n_drifts_ >= 1


@pytest.mark.parametrize("engine", ("cython", "numpy"))
@pytest.mark.parametrize("detector", ("page_hinkley", PageHinkley(threshold=10.0)))
def test_krls_chunks_and_events_agree(engine, detector):
    """From the warm-up on (noise="auto", gamma="scale"), chunks of any size and one event at a
    time give the same iterates and drift state, bit for bit."""
    X, y, _ = drifting_friedman(900, n_features=6, drifts=2, random_state=1)
    whole = okl.KernelRLSRegressor(engine=engine, drift_detector=detector).fit(X, y)
    chunks = okl.KernelRLSRegressor(engine=engine, drift_detector=detector)
    for lo in range(0, len(X), 97):
        chunks.partial_fit(X[lo:lo + 97], y[lo:lo + 97])
    events = okl.KernelRLSRegressor(engine=engine, drift_detector=detector)
    for x, target in zip(X, y):
        events.learn_one(x, target)
    for other in (chunks, events):
        assert_krls_equal(whole, other)
    assert whole.n_drifts_ >= 1


def test_krls_watches_the_residual_over_the_deviation_after_the_warm_up():
    """The loss watched is |y - f| / the targets' mean absolute deviation before the step: a
    PageHinkley alone, fed those, signals at the same events; nothing is watched during the
    warm-up of noise="auto"."""
    X, y, _ = drifting_friedman(1500, n_features=6, drifts=2, random_state=2)
    est = okl.KernelRLSRegressor(drift_detector="page_hinkley").fit(X[:60], y[:60])
    assert est._warming() and "_drift_state" not in est.__dict__
    est.partial_fit(X[60:100], y[60:100])
    assert not est._warming() and "_drift_state" not in est.__dict__    # nothing watched yet
    alone, seen, alarms = PageHinkley(), [], []
    for i in range(100, len(X)):
        mean = est.predict(X[i:i + 1])
        if alone.update(abs(y[i] - mean[0]) / est._krls.deviation()).drift_detected:
            alarms.append(i)
        before = est.n_drifts_
        est.partial_fit(X[i:i + 1], y[i:i + 1])
        if est.n_drifts_ > before:
            seen.append(i)
    assert seen and seen == alarms
    np.testing.assert_allclose(est._drift_state, [alone._state[k] for k in (
        "tau", "n", "mean", "m2", "cusum", "low", "changes", "pending")], rtol=1e-9, atol=1e-9)


def test_krls_a_change_forgets_toward_the_prior_by_keep():
    """At a change the posterior, having learned the event, takes one step of KRLS's own
    forgetting by KEEP (the offset's, the signal scale's and the deviation's sums too)."""
    from okl._numpy.krls import NumpyKRLS, forget
    X, y, _ = drifting_friedman(1500, n_features=6, drifts=2, random_state=3)
    est = okl.KernelRLSRegressor(engine="numpy", gamma=0.5, noise=0.1, budget=40,
                                 drift_detector="page_hinkley").fit(X[:300], y[:300])
    for i in range(300, len(X)):
        ref = NumpyKRLS.from_state(est._krls.get_state())
        before = est.n_drifts_
        est.partial_fit(X[i:i + 1], y[i:i + 1])
        if est.n_drifts_ > before:
            break
    else:
        pytest.fail("no change after event 300")
    ref.learn_one(X[i], y[i])
    forget(ref.cov, ref.mean, ref.ones, KEEP, ref.n_support)
    ref.wsum, ref.nums, ref.dens = KEEP * ref.wsum, KEEP * ref.nums, KEEP * ref.dens
    ref.dev, ref.devw = KEEP * ref.dev, KEEP * ref.devw
    for key, value in ref.get_state().items():
        np.testing.assert_array_equal(value, krls_state(est)[key], err_msg=key)
    assert est._drift_state[1] == 0.0 and est._drift_state[6] == 1.0    # PH restarted


def test_krls_without_a_detector_keeps_no_drift_state():
    X, y, _ = drifting_friedman(400, n_features=6, drifts=1, random_state=4)
    est = okl.KernelRLSRegressor(drift_detector=None).fit(X, y)
    assert "_drift_state" not in est.__dict__ and est.n_drifts_ == 0


@pytest.mark.parametrize("engine", ("cython", "numpy"))
def test_krls_save_load_and_pickle_continue_the_stream(engine, tmp_path):
    X, y, _ = drifting_friedman(1200, n_features=6, drifts=2, random_state=5)
    est = okl.KernelRLSRegressor(engine=engine, drift_detector="page_hinkley",
                                 budget=50).fit(X[:700], y[:700])
    assert est.n_drifts_ >= 1
    okl.save(est, tmp_path / "m.okl")
    copies = (okl.load(tmp_path / "m.okl"), pickle.loads(pickle.dumps(est)))
    for other in copies:
        assert other._drift_state == est._drift_state
    for other in (est, *copies):
        other.partial_fit(X[700:], y[700:])
    for other in copies:
        assert_krls_equal(est, other)
    est._drift_state = (1.0, -1, 0, 0, 0, 0, 0, 0)
    okl.save(est, tmp_path / "bad.okl")
    with pytest.raises(okl.ModelFileError, match="_drift_state"):
        okl.load(tmp_path / "bad.okl")


@pytest.mark.parametrize("engine", ("cython", "numpy"))
def test_krls_bad_input_leaves_the_drift_state(engine):
    X, y, _ = drifting_friedman(600, n_features=6, drifts=1, random_state=6)
    est = okl.KernelRLSRegressor(engine=engine, drift_detector="page_hinkley").fit(X[:300],
                                                                                 y[:300])
    before, model = est._drift_state, krls_state(est)
    bad = X[300:310].copy()
    bad[7] = np.nan
    with pytest.raises(ValueError):
        est.partial_fit(bad, y[300:310])
    with pytest.raises(ValueError):
        est.learn_one(bad[7], y[307])
    assert est._drift_state is before
    for key, value in model.items():
        np.testing.assert_array_equal(value, krls_state(est)[key], err_msg=key)


def test_krls_river_detector_runs_outside_the_step():
    """river's ADWIN on the Python path: chunks and events give the same iterates, the change
    is found and taken at the next event."""
    X, y, _ = drifting_friedman(1500, n_features=6, drifts=1, random_state=7)
    whole = okl.KernelRLSRegressor(gamma=0.5, noise=0.1, drift_detector=ADWIN()).fit(X, y)
    assert whole.n_drifts_ >= 1
    events = okl.KernelRLSRegressor(gamma=0.5, noise=0.1, drift_detector=ADWIN())
    for x, target in zip(X, y):
        events.learn_one(x, target)
    assert_krls_equal(whole, events)
    off = okl.KernelRLSRegressor(gamma=0.5, noise=0.1).fit(X, y)
    assert not np.array_equal(off.predict(X[:5]), whole.predict(X[:5]))
