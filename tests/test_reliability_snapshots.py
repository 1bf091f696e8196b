"""Snapshots never tear: pickling, copy.deepcopy, clone (get_params) and okl.save made while
another thread is inside a call see the estimator between two calls, never half of one.

Every public estimator (`estimator_case`, read from okl.__all__ by conftest.py) on each
engine: a thread holds the estimator's lock, as any call does, across two updates; the
snapshots taken meanwhile must show the state after both (they wait for the lock), never
the state between them.
"""
import copy
import io
import pickle
import threading
import warnings

import numpy as np
import pytest
from sklearn.base import clone

import okl
from okl import _locks
from okl.pipeline import StreamPipeline
from okl.preprocessing import OnlineStandardScaler

TORN = "a value set inside a call"      # a parameter value only a torn snapshot can see


def _saved(est):
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    return okl.load(buffer)


SNAPSHOTS = {
    "pickle": lambda est: pickle.loads(pickle.dumps(est)),
    "deepcopy": copy.deepcopy,
    "okl.save": _saved,
    "clone": clone,
}


def _plain_param(est):
    """A parameter holding a plain value (the one a call sets to TORN and back)."""
    return next(name for name, value in est.get_params(deep=False).items()
                if value is None or isinstance(value, (bool, int, float, str)))


def test_snapshots_wait_for_a_call_in_another_thread(estimator_case, kit):
    cls, engine = estimator_case
    est = kit.make(cls, engine)
    X, y = kit.stream(est)
    parts = [(X[i::3], None if y is None else y[i::3]) for i in range(3)]
    kit.learn(est, *parts[0])
    twin = kit.make(cls, engine)            # the serial history: all three parts
    for part in parts:
        kit.learn(twin, *part)
    after = kit.fingerprint(twin, X[:40])
    param = _plain_param(est)
    value = est.get_params(deep=False)[param]
    inside, taken, results = threading.Event(), threading.Event(), {}

    def call():                             # one call of two steps, as partial_fit holds it
        with _locks.locked(est):
            kit.learn(est, *parts[1])
            est.set_params(**{param: TORN})
            inside.set()
            taken.wait(0.25)                # a torn snapshot completes here; a whole one waits
            est.set_params(**{param: value})
            kit.learn(est, *parts[2])

    def snapshot(name):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results[name] = SNAPSHOTS[name](est)
        except BaseException as exc:        # noqa: BLE001 - reported below
            results[name] = exc
        if len(results) == len(SNAPSHOTS):
            taken.set()

    caller = threading.Thread(target=call)
    caller.start()
    assert inside.wait(60)
    takers = [threading.Thread(target=snapshot, args=(name,)) for name in SNAPSHOTS]
    for thread in takers:
        thread.start()
    for thread in takers + [caller]:
        thread.join(120)
    for name, copied in results.items():
        assert not isinstance(copied, BaseException), f"{name}: {copied!r}"
        assert copied.get_params(deep=False)[param] == value, f"{name} saw the call's inside"
        if name != "clone":
            np.testing.assert_array_equal(kit.fingerprint(copied, X[:40]), after, err_msg=name)


def test_a_save_during_a_long_partial_fit_is_a_whole_model(tmp_path):
    """The issue's scenario: okl.save in a loop while another thread learns a long chunk.
    Files written during the call were refused by okl.load (centres and their squared norms
    from two different steps)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = np.sin(X[:, 0])
    est = okl.OnlineKernelRegressor(budget=None).partial_fit(X[:500], y[:500])
    probe = X[:30]
    before = est.predict(probe)
    after = pickle.loads(pickle.dumps(est)).partial_fit(X[500:], y[500:]).predict(probe)
    learner = threading.Thread(target=est.partial_fit, args=(X[500:], y[500:]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner.start()
        seen = []
        while learner.is_alive() or not seen:
            path = tmp_path / f"m{len(seen)}.okl"
            okl.save(est, path)
            seen.append(okl.load(path).predict(probe))
        learner.join()
    assert all(np.array_equal(p, before) or np.array_equal(p, after) for p in seen)


def test_a_save_from_inside_a_locked_call_does_not_wait(tmp_path):
    """The lock is re-entrant: a callback of the thread that holds it may save."""
    X = np.random.default_rng(1).normal(size=(50, 3))
    est = okl.OnlineKernelRegressor().fit(X, X[:, 0])
    with _locks.locked(est):
        okl.save(est, tmp_path / "m.okl")
        blob = pickle.dumps(est)
        twin = copy.deepcopy(est)
    for other in (okl.load(tmp_path / "m.okl"), pickle.loads(blob), twin):
        np.testing.assert_array_equal(other.predict(X), est.predict(X))


def test_a_pipeline_snapshot_waits_for_a_step_in_use_elsewhere():
    """A pipeline's snapshot takes its own lock, then each step's: a step learning in another
    thread delays it, never deadlocks it, and the copy holds that step's whole call."""
    X = np.random.default_rng(2).normal(size=(60, 3))
    scaler, learner = OnlineStandardScaler(), okl.OnlineKernelRegressor()
    pipe = StreamPipeline([("scale", scaler), ("learn", learner)]).partial_fit(X[:30], X[:30, 0])
    inside, results = threading.Event(), []

    def call():
        with _locks.locked(learner):
            learner.partial_fit(X[30:40], X[30:40, 0])
            inside.set()
            threading.Event().wait(0.1)
            learner.partial_fit(X[40:], X[40:, 0])

    caller = threading.Thread(target=call)
    caller.start()
    assert inside.wait(60)
    results.append(pickle.loads(pickle.dumps(pipe)))
    caller.join(60)
    assert results[0].steps[-1][1].t_ == learner.t_ == 60
