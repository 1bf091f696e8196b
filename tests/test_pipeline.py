"""StreamPipeline: chunks and events through a scaler into an okl learner, atomically."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from okl import (
    CoefficientRegularizedClassifier, OnlineKernelClassifier, OnlineKernelRegressor,
    PairwiseLearner, RegularizedPAClassifier,
)
from okl.pipeline import EventAdapter, StreamPipeline
from okl.preprocessing import OnlineStandardScaler


def regression(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(1000.0, 300.0, (n, d))
    y = np.sin(X[:, 0] / 300.0) + 0.1 * rng.normal(size=n)
    return X, y


def classification(n=120, d=3, seed=0):
    X, _ = regression(n, d, seed)
    return X, np.where(X[:, 0] + X[:, 1] > 2000.0, "yes", "no")


def expansion_state(est):
    return est._expansion.get_state()


def assert_same_model(a, b, atol=1e-12):
    sa, sb = expansion_state(a), expansion_state(b)
    for key in sa:
        np.testing.assert_allclose(np.asarray(sa[key], dtype=float),
                                   np.asarray(sb[key], dtype=float), rtol=0, atol=atol,
                                   err_msg=key)
    assert a.t_ == b.t_


def test_learn_one_is_the_scaler_then_the_learner_by_hand():
    X, y = regression()
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelRegressor(gamma=0.5))])
    scaler, learner = OnlineStandardScaler(), OnlineKernelRegressor(gamma=0.5)
    preds, by_hand = [], []
    for xi, yi in zip(X, y):
        preds.append(pipe.predict_one(xi))
        z = scaler.transform_one(xi)
        by_hand.append(learner.predict(z[None])[0] if hasattr(learner, "t_") else 0.0)
        pipe.learn_one(xi, yi)
        scaler.learn_one(xi)                      # river's order: learn, then transform
        learner.partial_fit(scaler.transform_one(xi)[None], [yi])
    np.testing.assert_allclose(preds, by_hand, rtol=0, atol=1e-12)
    assert preds[0] == 0.0                        # the prior before any learning
    assert_same_model(pipe["learn"], learner)


def test_events_and_dicts_give_the_chunk_iterates_without_a_scaler():
    X, y = regression()
    events = StreamPipeline([("learn", OnlineKernelRegressor(gamma=0.5))])
    for xi, yi in zip(X / 1000.0, y):
        events.learn_one({f"x{j}": v for j, v in enumerate(xi)}, yi)
    chunk = OnlineKernelRegressor(gamma=0.5).partial_fit(X / 1000.0, y)
    assert_same_model(events["learn"], chunk)


def test_partial_fit_is_the_steps_by_hand():
    X, y = regression()
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelRegressor(gamma=0.5))])
    scaler, learner = OnlineStandardScaler(), OnlineKernelRegressor(gamma=0.5)
    for lo in range(0, len(X), 30):
        pipe.partial_fit(X[lo:lo + 30], y[lo:lo + 30])
        learner.partial_fit(scaler.partial_fit(X[lo:lo + 30]).transform(X[lo:lo + 30]),
                            y[lo:lo + 30])
    assert_same_model(pipe["learn"], learner)
    np.testing.assert_allclose(pipe.predict(X), learner.predict(scaler.transform(X)),
                               rtol=0, atol=1e-12)
    assert np.isfinite(pipe.score(X, y)) and is_regressor(pipe)


@pytest.mark.parametrize("transformer", [StandardScaler(), MinMaxScaler()])
def test_scikit_learn_transformers_stream_too(transformer):
    X, y = regression()
    pipe = StreamPipeline([("scale", transformer), ("learn", OnlineKernelRegressor())])
    assert pipe.predict_one(X[0]) == 0.0           # an unfitted transformer passes events on
    for xi, yi in zip(X[:40], y[:40]):
        pipe.predict_one(xi)
        pipe.learn_one(xi, yi)
    ref_t, ref_l = clone(transformer), OnlineKernelRegressor()
    for xi, yi in zip(X[:40], y[:40]):
        ref_t.partial_fit(xi[None])
        ref_l.partial_fit(ref_t.transform(xi[None]), [yi])
    assert_same_model(pipe["learn"], ref_l)
    pipe.partial_fit(X[40:], y[40:])
    assert pipe["learn"].t_ == len(X)


def test_classifier_defers_until_two_labels_and_matches_partial_fit():
    X, y = classification()
    first_other = int(np.argmax(y != y[0]))
    assert first_other > 1
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelClassifier(loss="logistic"))])
    assert pipe.predict_one(X[0]) is None and pipe.predict_proba_one(X[0]) == {}
    for i, (xi, yi) in enumerate(zip(X, y)):
        if 0 < i <= first_other:
            assert pipe.predict_one(xi) == y[0]          # the one label seen: the prior
        pipe.learn_one(xi, yi)
    scaler, ref = OnlineStandardScaler(), OnlineKernelClassifier(loss="logistic")
    Z = []
    for xi in X:
        scaler.learn_one(xi)
        Z.append(scaler.transform_one(xi))
    ref.partial_fit(np.array(Z), y)         # the stream adds its labels (okl._labels)
    assert_same_model(pipe["learn"], ref)
    p = pipe.predict_proba_one(X[0])
    assert set(p) == {"no", "yes"} and abs(sum(p.values()) - 1.0) < 1e-12
    assert pipe.predict_one(X[0]) in ("no", "yes") and is_classifier(pipe)
    assert isinstance(pipe.decision_function_one(X[0]), float)


@pytest.mark.parametrize("make", [
    lambda: OnlineKernelClassifier(),
    lambda: CoefficientRegularizedClassifier(n_centers=10, gamma=1.0),
    lambda: RegularizedPAClassifier(),
    lambda: RegularizedPAClassifier(kernel="gaussian", regularization="l2", beta=3.0, gamma=1.0),
])
def test_every_classifier_streams_through_the_adapter(make):
    X, y = classification()
    adapter = EventAdapter(make())
    ref = make()
    scaler = OnlineStandardScaler().fit(X)
    Z = scaler.transform(X)
    for zi, yi in zip(Z, y):
        adapter.predict_one(zi)
        adapter.learn_one(zi, yi)
    ref.partial_fit(Z, y)                   # the stream adds its labels (okl._labels)
    np.testing.assert_allclose(adapter.estimator.decision_function(Z), ref.decision_function(Z),
                               rtol=0, atol=1e-12)


def test_pairwise_learner_scores_one_event():
    X, y = regression()
    Z = OnlineStandardScaler().fit_transform(X)
    # eta="auto" takes kappa (eq. 2.6) from the first call's rows: give events an explicit step
    adapter = EventAdapter(PairwiseLearner(eta=0.05))
    assert adapter.predict_one(Z[0]) == 0.0
    for zi, yi in zip(Z, y):
        adapter.learn_one(zi, yi)
    ref = PairwiseLearner(eta=0.05).partial_fit(Z, y)
    np.testing.assert_allclose(adapter.estimator.score_samples(Z), ref.score_samples(Z),
                               rtol=0, atol=1e-12)
    assert adapter.predict_one(Z[0]) == pytest.approx(ref.score_samples(Z[:1])[0], abs=1e-12)


def pipeline_state(pipe):
    scaler, learner = pipe["scale"], pipe["learn"]
    caches = ("_feature_index", "_feature_keys")
    return ({k: np.copy(v) for k, v in vars(scaler).items() if k not in caches},
            {k: np.copy(v) for k, v in vars(learner).items()
             if k not in ("_expansion", "_one_event_state", "_feature_index", "_feature_keys")},
            learner._expansion.get_state() if hasattr(learner, "_expansion") else None)


def assert_same_pipeline(a, b):
    for part_a, part_b in zip(a[:2], b[:2]):
        assert part_a.keys() == part_b.keys()
        for key in part_a:
            np.testing.assert_array_equal(part_a[key], part_b[key], err_msg=key)
    if a[2] is not None:
        for key in a[2]:
            np.testing.assert_array_equal(a[2][key], b[2][key], err_msg=key)


@pytest.mark.parametrize("x, y, error", [
    ({"a": np.nan, "b": 1.0, "c": 2.0}, "no", ValueError),
    ({"a": "1", "b": 1.0, "c": 2.0}, "no", TypeError),
    ({"a": 1.0, "d": 1.0}, "no", ValueError),
    ({"a": 1.0, "b": 1.0, "c": 2.0}, "maybe", ValueError),       # a label outside `classes`
    ({"a": 1.0, "b": 1.0, "c": 2.0}, 3, ValueError),             # a number among strings
])
def test_bad_events_leave_every_step_as_it_was(x, y, error):
    X, labels = classification()
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelClassifier(classes=["no", "yes"]))])
    for xi, yi in zip(X[:30], labels[:30]):
        pipe.learn_one(dict(zip("abc", xi)), yi)
    before = pipeline_state(pipe)
    with pytest.raises(error):
        pipe.learn_one(x, y)
    assert_same_pipeline(pipeline_state(pipe), before)


def test_bad_chunks_leave_every_step_as_it_was():
    X, y = classification()
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelClassifier())])
    pipe.partial_fit(X[:30], y[:30], classes=["no", "yes"])
    before = pipeline_state(pipe)
    bad_y = y[30:40].astype(object)
    bad_y[4] = "maybe"
    with pytest.raises(ValueError, match="maybe"):
        pipe.partial_fit(X[30:40], bad_y)                     # the scaler learned first
    bad_x = X[30:40].copy()
    bad_x[2, 0] = np.inf
    with pytest.raises(ValueError):
        pipe.partial_fit(bad_x, y[30:40])
    assert_same_pipeline(pipeline_state(pipe), before)


@pytest.mark.parametrize("engine, where", [("numpy", "partial_fit"), ("cython", "_loss_spec")])
def test_keyboard_interrupt_in_the_learner_leaves_the_scaler_as_it_was(engine, where):
    X, y = regression()
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelRegressor(engine=engine))])
    pipe.partial_fit(X[:20], y[:20])
    before = pipeline_state(pipe)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    setattr(pipe["learn"], where, interrupted)          # the one-row and the one-event paths
    with pytest.raises(KeyboardInterrupt):
        pipe.learn_one(X[20], y[20])
    delattr(pipe["learn"], where)
    assert_same_pipeline(pipeline_state(pipe), before)


def test_params_clone_fit_and_pickle():
    X, y = regression()
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelRegressor(gamma=0.5))])
    params = pipe.get_params()
    assert params["learn__gamma"] == 0.5 and params["scale"] is pipe["scale"]
    pipe.set_params(learn__gamma=0.25)
    assert pipe["learn"].gamma == 0.25
    pipe.fit(X, y)
    fresh = clone(pipe)
    assert not hasattr(fresh["learn"], "t_") and fresh["learn"].gamma == 0.25
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again.predict(X), pipe.predict(X))
    ref = OnlineKernelRegressor(gamma=0.25).fit(StandardScaler().fit_transform(X), y)
    np.testing.assert_allclose(pipe.predict(X), ref.predict(StandardScaler().fit(X).transform(X)),
                               rtol=0, atol=1e-9)
    with pytest.raises(TypeError, match="partial_fit and transform"):
        StreamPipeline([("pca", object()), ("learn", OnlineKernelRegressor())]).fit(X, y)


# ---- the one-event path of okl scalers ---------------------------------------------------

class GeneralScaler(OnlineStandardScaler):
    """The same scaler, on the pipeline's general path (its one-event path takes the class
    OnlineStandardScaler only)."""


def dict_events(n=500, seed=3):
    """n dict events of 5 features on large offsets; every 50th misses a key (a 0) and some
    values are ints, which take the general conversion."""
    rng = np.random.default_rng(seed)
    X = rng.normal([1000.0, -50.0, 3.0, 0.0, 1e5], [300.0, 5.0, 0.1, 1.0, 2e4], (n, 5))
    events = []
    for i, row in enumerate(X):
        x = dict(zip("abcde", row.tolist()))
        if i % 50 == 7:
            del x["e"]
        if i % 70 == 9:
            x["c"] = 3
        events.append(x)
    return X, events


@pytest.mark.parametrize("make, target", [
    (lambda: OnlineKernelClassifier(), lambda X: np.where(X[:, 0] > 1000.0, "yes", "no")),
    (lambda: OnlineKernelRegressor(), lambda X: np.sin(X[:, 0] / 300.0) + X[:, 2]),
])
@pytest.mark.parametrize("freeze_after", [None, 50])
def test_one_event_path_gives_the_general_path_iterates_bit_for_bit(make, target, freeze_after,
                                                                     monkeypatch):
    X, events = dict_events()
    y = target(X).tolist()
    fast = StreamPipeline([("scale", OnlineStandardScaler(freeze_after=freeze_after)),
                           ("learn", make())])
    general = StreamPipeline([("scale", GeneralScaler(freeze_after=freeze_after)),
                              ("learn", make())])
    calls = []
    learn_one = OnlineStandardScaler.learn_one
    monkeypatch.setattr(OnlineStandardScaler, "learn_one",
                        lambda self, x: calls.append(type(self)) or learn_one(self, x))
    for x, yi in zip(events, y):
        for pipe in (fast, general):
            pipe.predict_one(x)
        assert fast.predict_one(x) == general.predict_one(x)
        for method in ("decision_function_one", "predict_proba_one"):
            if hasattr(general, method):
                assert getattr(fast, method)(x) == getattr(general, method)(x)
        fast.learn_one(x, yi)
        general.learn_one(x, yi)
    # the general path learned every event, the one-event path the first and the odd ones
    assert calls.count(GeneralScaler) == len(events)
    assert calls.count(OnlineStandardScaler) < 30
    assert fast._path() is not None and general._path() is None
    a, b = pipeline_state(fast), pipeline_state(general)
    assert_same_pipeline(a, b)
    for key in a[2]:
        np.testing.assert_array_equal(a[2][key], b[2][key], err_msg=key)
    np.testing.assert_array_equal(fast.predict(X), general.predict(X))


INTERRUPT = []


def eta_or_interrupt(t):
    """A step size that raises KeyboardInterrupt inside the learner's step on demand."""
    if INTERRUPT:
        raise KeyboardInterrupt
    return 0.5 * np.asarray(t, dtype=np.float64) ** -0.5


def learned_regression_pipeline(n=100, eta=0.5):
    X, events = dict_events(n)
    pipe = StreamPipeline([("scale", OnlineStandardScaler()),
                           ("learn", OnlineKernelRegressor(eta=eta))])
    for x, yi in zip(events, X[:, 0] / 1000.0):
        pipe.learn_one(x, yi)
    assert pipe._path() is not None
    return pipe


@pytest.mark.parametrize("x, y, error", [
    ({"a": np.nan, "b": 1.0, "c": 2.0, "d": 0.0, "e": 1.0}, 1.0, ValueError),
    ({"a": 1.0, "b": np.inf, "c": 2.0, "d": 0.0, "e": 1.0}, 1.0, ValueError),
    ({"a": 1.0, "b": 1.0, "c": 2.0, "d": 0.0, "e": 1e200}, 1.0, ValueError),
    ({"a": 1.0, "b": 1.0, "c": 2.0, "d": 0.0, "f": 1.0}, 1.0, ValueError),  # unknown key
    ({"a": 1.0, "b": 1.0, "c": 2.0, "d": 0.0, "e": 1.0}, np.nan, ValueError),
    ({"a": 1.0, "b": 1.0, "c": 2.0, "d": 0.0, "e": 1.0}, np.inf, ValueError),
    (np.array([1.0, 2.0, np.nan, 0.0, 1.0]), 1.0, ValueError),
])
def test_bad_events_on_the_one_event_path_leave_the_pipeline_as_it_was(x, y, error):
    pipe = learned_regression_pipeline()
    before = pickle.dumps(pipe)
    with pytest.raises(error):
        pipe.learn_one(x, y)
    assert pickle.dumps(pipe) == before
    assert pipe._path() is not None


def test_keyboard_interrupt_in_the_learners_step_leaves_the_pipeline_as_it_was():
    pipe = learned_regression_pipeline(eta=eta_or_interrupt)
    before = pickle.dumps(pipe)
    x = {"a": 1100.0, "b": -52.0, "c": 3.1, "d": 0.5, "e": 1e5}
    INTERRUPT.append(True)
    try:
        with pytest.raises(KeyboardInterrupt):
            pipe.learn_one(x, 0.5)
    finally:
        INTERRUPT.clear()
    assert pickle.dumps(pipe) == before
    pipe.learn_one(x, 0.5)                          # and it learns the event afterwards
    assert pipe["scale"].n_samples_seen_ == 101 and pipe["learn"].t_ == 101


def test_two_threads_learning_events_give_a_serial_order(monkeypatch):
    """Each learn_one is one step of the pipeline's history: the scaler and the learner take
    the events of two streaming threads in one order, and the state is that of the events
    learned one by one in that order."""
    import sys
    import threading
    X, events = dict_events(600)
    y = (X[:, 0] / 1000.0).tolist()                 # distinct targets: they name the events
    blob = pickle.dumps(learned_regression_pipeline(100))
    index = {yi: i for i, yi in enumerate(y)}
    scaler_step = OnlineStandardScaler._learn_row
    for _ in range(4):                              # races of 2 x 250 events
        pipe = pickle.loads(blob)
        scaled, learned, barrier = [], [], threading.Barrier(2)
        learner_step = pipe["learn"].learn_one

        def scaling(self, row, scaled=scaled):
            scaled.append(row[0])
            return scaler_step(self, row)

        def learning(x, yi, learned=learned, learner_step=learner_step):
            learned.append(yi)
            return learner_step(x, yi)
        monkeypatch.setattr(OnlineStandardScaler, "_learn_row", scaling)
        pipe["learn"].learn_one = learning

        def stream(part, pipe=pipe, barrier=barrier):
            barrier.wait()
            for i in part:
                pipe.learn_one(events[i], y[i])
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            threads = [threading.Thread(target=stream, args=(range(lo, lo + 250),))
                       for lo in (100, 350)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            sys.setswitchinterval(interval)
        del pipe["learn"].learn_one
        monkeypatch.undo()
        assert sorted(learned) == sorted(y[100:600])
        assert scaled == [X[index[yi], 0] for yi in learned]    # one order for both steps
        serial = pickle.loads(blob)
        for yi in learned:
            serial.learn_one(events[index[yi]], yi)
        assert_same_pipeline(pipeline_state(pipe), pipeline_state(serial))
        np.testing.assert_array_equal(pipe.predict(X), serial.predict(X))
