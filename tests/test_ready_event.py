"""The ready-row entry of one event (`Events.learn_ready` / `predict_ready`, docs/streaming.md).

`learn_one` / `predict_one` of a fitted learner on the cython engine take one compiled
call: the row (ready, or converted in C), the label, the step and the counters.  These
tests ask that every learner takes it, that it gives the iterates and predictions of
`partial_fit` / `predict`, and that whatever it does not serve goes to the adapter
without a write.
"""
import copy
import pickle

import numpy as np
import pytest

from okl import (
    CoefficientRegularizedClassifier, OnlineKernelClassifier, OnlineKernelRegressor,
    RegularizedPAClassifier,
)
from okl.multikernel import MultiKernelClassifier, MultiKernelRegressor
from okl._base import transaction
from okl._one_event import EventAdapter, rebound

LEARNERS = {
    "kernel-classifier": (lambda: OnlineKernelClassifier(gamma=0.5, budget=20), 2),
    "kernel-classifier-k3": (lambda: OnlineKernelClassifier(gamma=0.5, budget=20), 3),
    "kernel-regressor": (lambda: OnlineKernelRegressor(gamma=0.5, budget=20), 0),
    "fourier": (lambda: OnlineKernelClassifier(approximation="fourier", n_components=40,
                                               gamma=0.5, random_state=0), 2),
    "fourier-k3": (lambda: OnlineKernelClassifier(approximation="fourier", n_components=40,
                                                  gamma=0.5, random_state=0), 3),
    "nystroem-regressor": (lambda: OnlineKernelRegressor(approximation="nystroem",
                                                         n_components=15, gamma=0.5), 0),
    "nystroem-k3": (lambda: OnlineKernelClassifier(approximation="nystroem", n_components=40,
                                                   gamma=0.5), 3),
    "coefreg": (lambda: CoefficientRegularizedClassifier(n_centers=20, gamma=0.5), 2),
    "coefreg-k3": (lambda: CoefficientRegularizedClassifier(n_centers=20, gamma=0.5), 3),
    "pa-linear": (lambda: RegularizedPAClassifier(variant="PA-I"), 2),
    "pa-kernel": (lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.5, budget=20,
                                                  budget_policy="oldest", variant="PA-I"), 2),
    "pa-kernel-k3": (lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.5, budget=20,
                                                     variant="PA-I"), 3),
    "multikernel": (lambda: MultiKernelClassifier(budget=20, random_state=0), 2),
    "multikernel-k3": (lambda: MultiKernelClassifier(budget=20, random_state=0), 3),
    "multikernel-regressor": (lambda: MultiKernelRegressor(learner="sgd", budget=20,
                                                         random_state=0), 0),
}


def stream(k, n=160, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 2
    if k == 0:
        return X, np.sin(3 * X[:, 0]) + X[:, 1]
    if k == 2:
        return X, np.where(X[:, 0] * X[:, 1] + 0.1 * X[:, 2] > 0, "yes", "no")
    return X, np.array(["a", "b", "c"])[np.argmax(X[:, :3], axis=1)]


def warm(name, n=100):
    """A fitted learner past its warm-ups: the kernel classifier's eta="scaled" measures
    its step over the first 100 steps (docs/defaults.md, section 4), one row at a time."""
    make, k = LEARNERS[name]
    X, y = stream(k)
    est = make()
    kwargs = {} if k == 0 else {"classes": np.unique(y)}
    est.partial_fit(X[:n], y[:n], **kwargs)
    return est, X, y


@pytest.fixture
def adapter_calls(monkeypatch):
    """How often the adapter took an event (the ready-row entry declined it)."""
    calls = {"learn": 0, "predict": 0}
    learn, predict = EventAdapter.learn_one, EventAdapter.predict_one

    def counted_learn(self, *args, **kwargs):
        calls["learn"] += 1
        return learn(self, *args, **kwargs)

    def counted_predict(self, *args, **kwargs):
        calls["predict"] += 1
        return predict(self, *args, **kwargs)
    monkeypatch.setattr(EventAdapter, "learn_one", counted_learn)
    monkeypatch.setattr(EventAdapter, "predict_one", counted_predict)
    return calls


def decisions(est, X):
    scores = est.decision_function if hasattr(est, "decision_function") else est.predict
    return np.asarray(scores(X), dtype=np.float64)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_every_learner_takes_one_compiled_call_with_the_chunk_iterates(name, adapter_calls):
    est, X, y = warm(name)
    ref = copy.deepcopy(est)
    k = LEARNERS[name][1]
    predictions = []
    for i in range(60, 160):
        predictions.append(est.predict_one(X[i]))
        est.learn_one(X[i], y[i].item())
    # the adapter takes the first event of each label (it teaches the codes), no more
    assert adapter_calls["learn"] <= max(k, 1)
    assert adapter_calls["predict"] <= 1
    expected = []
    for i in range(60, 160):
        value = ref.predict(X[i:i + 1])[0]
        expected.append(value.item() if isinstance(value, np.generic) else value)
        ref.partial_fit(X[i:i + 1], y[i:i + 1])
    if k:
        assert predictions == expected
    else:
        np.testing.assert_allclose(predictions, expected, rtol=0, atol=1e-10)
    assert est.t_ == ref.t_
    np.testing.assert_allclose(decisions(est, X), decisions(ref, X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["kernel-classifier", "fourier", "coefreg", "pa-kernel",
                                  "kernel-regressor"])
@pytest.mark.parametrize("form", ["list", "float32", "fortran", "dict", "dict-new-keys"])
def test_other_row_types_are_converted_in_the_same_call(name, form, adapter_calls):
    est, X, y = warm(name)
    ref = copy.deepcopy(est)
    if form.startswith("dict"):
        est._row_keys = tuple(f"x{j}" for j in range(X.shape[1]))  # as if fitted on dicts
        est.learn_one(dict(zip(est._row_keys, X[60].tolist())), y[60].item())
        ref.partial_fit(X[60:61], y[60:61])
        rows = [dict(zip(est._row_keys if form == "dict" else       # new key objects each time
                         ["".join(("x", str(j))) for j in range(X.shape[1])], row.tolist()))
                for row in X]
    elif form == "list":
        rows = X.tolist()
    elif form == "float32":
        X = X.astype(np.float32).astype(np.float64)     # the values a float32 row holds
        rows = list(X.astype(np.float32))
    else:
        rows = list(np.asfortranarray(X))
    start = 61 if form.startswith("dict") else 60
    calls = dict(adapter_calls)
    for i in range(start, 120):
        est.predict_one(rows[i])
        est.learn_one(rows[i], y[i].item())
        ref.partial_fit(X[i:i + 1], y[i:i + 1])
    k = LEARNERS[name][1]
    assert adapter_calls["learn"] - calls["learn"] <= max(k, 1)
    assert adapter_calls["predict"] - calls["predict"] <= 1
    np.testing.assert_allclose(decisions(est, X), decisions(ref, X), rtol=0, atol=1e-10)


def test_the_prior_offset_follows_chunks_and_restores_between_events():
    X, y = stream(2, n=300)
    est = OnlineKernelClassifier(gamma=0.5, budget=20)      # fit_intercept="prior"
    ref = OnlineKernelClassifier(gamma=0.5, budget=20)
    est.partial_fit(X[:40], y[:40], classes=["no", "yes"])
    ref.partial_fit(X[:40], y[:40], classes=["no", "yes"])
    for start in range(40, 280, 40):
        for i in range(start, start + 20):      # events, then a chunk: the state moves in both
            est.learn_one(X[i], y[i].item())
        est.partial_fit(X[start + 20:start + 40], y[start + 20:start + 40])
        ref.partial_fit(X[start:start + 40], y[start:start + 40])
        assert est._prior_state == pytest.approx(ref._prior_state, rel=1e-12, abs=1e-12)
        assert est.intercept_ == pytest.approx(ref.intercept_, rel=1e-12, abs=1e-12)
    # a state put back from outside (a restore) is read, not the one the step kept
    saved = copy.deepcopy(est.__dict__["_prior_state"])
    est.learn_one(X[0], y[0].item())
    ref.partial_fit(X[0:1], y[0:1])
    est._prior_state = saved
    ref._prior_state = saved
    est.learn_one(X[1], y[1].item())
    ref.partial_fit(X[1:2], y[1:2])
    assert est._prior_state == pytest.approx(ref._prior_state, rel=1e-12, abs=1e-12)


def test_what_the_entry_does_not_serve_goes_to_the_adapter_unchanged(adapter_calls):
    est, X, y = warm("kernel-classifier")
    est.learn_one(X[60], y[60].item())
    est.learn_one(X[61], "yes" if y[60] == "no" else "no")
    before = dict(adapter_calls)
    est.learn_one(X[62], y[62].item(), sample_weight=0.5)      # a weight: the adapter
    assert adapter_calls["learn"] == before["learn"] + 1
    with pytest.raises(ValueError, match="not in classes_"):  # an unseen label
        est.learn_one(X[63], "maybe")
    state = copy.deepcopy(est.__dict__)
    with pytest.raises(ValueError, match="NaN or inf"):         # the compiled step refuses it
        est.learn_one(np.full(X.shape[1], np.nan), y[63].item())
    assert est.t_ == state["t_"] and est._prior_state == state["_prior_state"]
    est.set_params(lam=0.1)     # a changed parameter: validated once (building the new step),
    calls = adapter_calls["learn"]      # then served
    for i in range(64, 70):
        est.learn_one(X[i], y[i].item())
    assert adapter_calls["learn"] == calls + 1
    est.set_params(gamma=-1.0)
    with pytest.raises(ValueError):
        est.learn_one(X[70], y[70].item())


def test_a_feature_model_with_new_weights_builds_a_new_step():
    est, X, y = warm("fourier")
    est.learn_one(X[60], y[60].item())
    est.learn_one(X[61], y[61].item())
    events = est._one_event()._events[0]
    model = est._expansion
    model.linear = copy.deepcopy(model.linear)      # the same model object, new weights
    assert not events.learn_ready(est, X[62], y[62].item())
    est.learn_one(X[62], y[62].item())
    assert est._one_event()._events[0] is not events


@pytest.mark.parametrize("form", ["ready", "list"])
def test_threads_and_a_chunk_learner_share_one_model(form):
    """Threads calling learn_one / predict_one while another calls partial_fit: the compiled
    call holds the estimator's lock (and converts a list into its one row buffer under it),
    so every event and row is learned once."""
    import threading
    X, y = stream(2, n=2400)
    rows = list(X) if form == "ready" else X.tolist()
    est = OnlineKernelClassifier(gamma=0.5, budget=30)
    est.partial_fit(X[:40], y[:40], classes=["no", "yes"])
    errors = []

    def events(events_of):
        try:
            for i in events_of:
                est.predict_one(rows[i])
                est.learn_one(rows[i], y[i].item())
        except BaseException as error:      # noqa: BLE001 - reported below
            errors.append(error)

    def chunks():
        try:
            for start in range(2000, 2400, 20):
                est.partial_fit(X[start:start + 20], y[start:start + 20])
        except BaseException as error:      # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=events, args=(range(40 + j, 2000, 3),)) for j in range(3)]
    threads.append(threading.Thread(target=chunks))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert est.t_ == 2400
    assert est._prior_state[0] == 2400          # every step counted once by the prior offset
    assert np.all(np.isfinite(est.decision_function(X)))


def test_a_regressor_takes_int_and_numpy_targets_in_the_same_call(adapter_calls):
    est, X, y = warm("kernel-regressor")
    ref = copy.deepcopy(est)
    targets = np.round(3 * y).astype(np.int64)
    for i in range(60, 100):
        target = targets[i].item() if i % 2 else np.float64(targets[i])
        est.learn_one(X[i], target)
        ref.partial_fit(X[i:i + 1], targets[i:i + 1].astype(np.float64))
    assert adapter_calls["learn"] == 1     # the first event builds the step
    np.testing.assert_allclose(decisions(est, X), decisions(ref, X), rtol=0, atol=1e-10)
    with pytest.raises(TypeError, match="real number"):
        est.learn_one(X[0], "1.0")
    with pytest.raises(ValueError, match="non-finite"):
        est.learn_one(X[0], float("inf"))
    assert est.t_ == ref.t_


@pytest.mark.parametrize("name", LEARNERS)
def test_the_step_sees_every_rebinding_and_every_restore(name):
    """The step compares the objects it was built from only when the learner's
    `_attr_version` changed: a binding, a deletion and a transaction's restore (which
    writes ``__dict__`` directly) each give a new one; the version is never model state."""
    est, X, y = warm(name)
    est.predict_one(X[60])
    events = est._one_event()._events[0]
    assert events.matches(est)
    version = est._attr_version
    assert "_attr_version" not in vars(est) and "_attr_version" not in est.__getstate__()
    engine = est.engine
    with pytest.raises(RuntimeError):
        with transaction(est):
            est.engine = "".join(["cyt", "hon"])     # an equal value, another object
            assert est._attr_version != version and not events.matches(est)
            raise RuntimeError
    assert est._attr_version != version and events.matches(est)   # the same objects again
    est.__dict__["engine"] = "".join(["cyt", "hon"])   # behind __setattr__'s back
    rebound(est)                                       # as a restore does after it
    assert not events.matches(est)
    est.__dict__["engine"] = engine
    rebound(est)
    assert events.matches(est)
    del est.engine
    assert not events.matches(est)
    est.engine = engine
    clone = pickle.loads(pickle.dumps(est))
    assert clone._attr_version not in (version, est._attr_version)
