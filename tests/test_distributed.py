"""okl.distributed on a real LocalCluster: two single-threaded worker processes."""
import os
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="okl.distributed needs Dask: pip install \"okl[dask]\"")

import cloudpickle  # noqa: E402  (comes with distributed)
from sklearn.base import clone, is_classifier  # noqa: E402

from okl import (OnlineKernelClassifier, OnlineKernelRegressor,  # noqa: E402
                 RegularizedPAClassifier)
from okl.distributed import (LostTasksError, TaskError, Trial, grid, learn_many,  # noqa: E402
                             map_trials)
from okl.evaluation import progressive_validation  # noqa: E402

# The workers cannot import this module (pytest imports it by path): ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def regression_stream(seed, n=600):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] + 0.2 * rng.standard_normal(n)


def classification_stream(seed, n=600):
    X, y = regression_stream(seed, n)
    return X, np.where(y > 0, 1, 0)


def chunked_stream(seed, n_chunks=3, n=200):
    """A recipe that yields chunks: a long stream made piece by piece on the worker."""
    for c in range(n_chunks):
        yield classification_stream(1000 * seed + c, n)


def sequential(estimator, chunks):
    """The reference: one estimator learning its chunks in this process."""
    est = clone(estimator)
    results = [progressive_validation(est, X, y, classes=[0, 1]) for X, y in chunks]
    return est, np.concatenate([r.predictions for r in results]), results


def test_dict_of_streams_equals_sequential(client):
    learners = {"reg": OnlineKernelRegressor(gamma=1.0, lam=1e-3),
                "clf": OnlineKernelClassifier(gamma=1.0, budget=100),
                "chunks": OnlineKernelClassifier(gamma=0.5, loss="logistic")}
    streams = {"reg": regression_stream(0),                      # arrays, shipped
               "clf": partial(classification_stream, 1),         # a recipe
               "chunks": partial(chunked_stream, 2)}             # a recipe of chunks
    got = learn_many(learners, streams, client, classes=[0, 1], return_predictions=True,
                     metrics={"max_abs": lambda y, p: float(np.max(np.abs(y - p)))})
    assert list(got) == list(streams)
    assert {r.worker for r in got.values()} <= set(client.scheduler_info()["workers"])
    for key, result in got.items():
        stream = streams[key]() if callable(streams[key]) else streams[key]
        chunks = list(stream) if key == "chunks" else [stream]
        est, predictions, parts = sequential(learners[key], chunks)
        np.testing.assert_array_equal(result.predictions, predictions)
        np.testing.assert_array_equal(result.model.dual_coef_, est.dual_coef_)
        np.testing.assert_array_equal(result.model.support_vectors_, est.support_vectors_)
        y = np.concatenate([c[1] for c in chunks])
        assert result.metrics["n_samples"] == len(y)
        assert result.metrics["max_abs"] == float(np.max(np.abs(y - predictions)))
        if len(parts) == 1:
            assert result.metrics["error"] == parts[0].error[-1]
            assert result.metrics["loss"] == parts[0].loss[-1]
        else:
            assert result.metrics["error"] == pytest.approx(np.mean(predictions != y), abs=1e-15)
    assert not hasattr(learners["reg"], "t_")              # the caller's estimators are untouched


def test_grid_x_trials_equals_sequential(client):
    keys = grid({"lam": [1e-3, 1e-2], "eta_decay": [0.5, 0.75]}, trials=3, seed=7)
    assert len(keys) == 12 and len(set(keys)) == 12
    assert keys[0] == Trial((("eta_decay", 0.5), ("lam", 1e-3)), 0, 7)
    assert {k.seed for k in keys} == {7, 8, 9}           # trials share streams across settings
    streams = {k: partial(regression_stream, k.seed) for k in keys}
    base = OnlineKernelRegressor(gamma=1.0)
    got = learn_many(base, streams, client, return_predictions=True)
    ref = learn_many(base, streams, "sequential", return_predictions=True)
    for k in keys:
        est = OnlineKernelRegressor(gamma=1.0, **k.kwargs)
        pv = progressive_validation(est, *regression_stream(k.seed))
        for result in (got[k], ref[k]):
            np.testing.assert_array_equal(result.predictions, pv.predictions)
            assert result.metrics == {"n_samples": 600, "error": pv.error[-1], "loss": pv.loss[-1]}
            np.testing.assert_array_equal(result.model.dual_coef_, est.dual_coef_)
            assert result.model.get_params() == est.get_params()


def test_user_client_is_left_open_and_an_address_works(client):
    address = client.scheduler.address
    streams = {i: partial(regression_stream, i, 100) for i in range(3)}
    by_client = learn_many(OnlineKernelRegressor(), streams, client, return_models=False)
    by_address = learn_many(OnlineKernelRegressor(), streams, address, return_models=False)
    assert client.status == "running"
    assert [r.metrics for r in by_client.values()] == [r.metrics for r in by_address.values()]
    assert all(r.model is None for r in by_client.values())
    with pytest.raises(ValueError, match="n_workers"):
        learn_many(OnlineKernelRegressor(), streams, client, n_workers=2)


def test_okl_starts_its_workers_without_dask_malloc_trim_and_background_work():
    """okl's own LocalCluster (client=None) unsets Dask's MALLOC_TRIM_THRESHOLD_=65536, which
    costs a learner 3-6 % of its CPU in page faults, and quiets its workers' profiler, event
    loop checks, system monitor and memory checks (the worker's and its nanny's), whose wakeups
    made learning tasks wait 6-7 % of their time (docs/distributed.md, section 2); the client's
    own configuration is left as it was."""
    import dask
    import distributed
    from okl.distributed.tasks import QUIET, local_cluster
    before = {key: dask.config.get(key) for key in QUIET}
    assert dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_")
    with local_cluster(1) as cluster, distributed.Client(cluster) as own:
        env = own.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        config = own.run(lambda: {key: dask.config.get(key) for key in QUIET})
        profiled = own.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks)
        checks = own.run(lambda dask_worker:
                         dask_worker.periodic_callbacks["memory_monitor"].callback_time)
        nanny_checks = [nanny.periodic_callbacks["memory_monitor"].callback_time
                        for nanny in cluster.workers.values()]
    assert list(env.values()) == [None]
    assert list(checks.values()) == [1000] and nanny_checks == [1000]
    assert list(config.values()) == [QUIET] and list(profiled.values()) == [False]
    assert dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_")
    assert {key: dask.config.get(key) for key in QUIET} == before


def test_a_task_error_names_its_key(client):
    X, y = regression_stream(0, 50)
    bad = X.copy()
    bad[10, 0] = np.nan
    streams = {"good": (X, y), ("sensor", 17): (bad, y)}
    with pytest.raises(TaskError, match=r"\('sensor', 17\).*ValueError") as info:
        learn_many(OnlineKernelRegressor(), streams, client, retries=0)
    assert info.value.key == ("sensor", 17)
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(TaskError, match="'sensor'"):
        learn_many(OnlineKernelRegressor(), streams, "sequential")


def die_once(marker):
    """Kill this worker process on the first attempt (with a marker); return its pid."""
    if marker is not None and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return os.getpid()


def always_die(_):
    os._exit(1)


def test_a_killed_worker_is_retried(client, tmp_path):
    # one death per task is allowed: the task (and any queued beside it) runs again
    tasks = {i: str(tmp_path / "marker") if i == 1 else None for i in range(4)}
    got = map_trials(die_once, tasks, client)
    assert list(got) == [0, 1, 2, 3] and all(isinstance(pid, int) for pid in got.values())
    assert os.path.exists(tasks[1])                         # it did die once
    client.wait_for_workers(2, timeout=600)   # a restart is slow on a loaded machine


def test_a_task_that_keeps_killing_workers_is_reported(client):
    tasks = {"lost": None, "fine": None}
    funcs = {"lost": always_die, "fine": lambda _: "done"}
    with pytest.raises(LostTasksError, match="'lost'") as info:
        map_trials(lambda key: funcs[key](key), list(tasks), client)
    assert info.value.keys == ["lost"]
    assert info.value.results == {"fine": "done"}          # finished work is kept
    client.wait_for_workers(2, timeout=600)   # a restart is slow on a loaded machine


def test_saved_models_round_trip(client):
    X, y = classification_stream(3)
    est = RegularizedPAClassifier(regularization="l2", beta=5.0, kernel="gaussian", budget=50)
    saved = learn_many(est, {"pa": (X, y)}, client, return_models="bytes")["pa"]
    plain = learn_many(est, {"pa": (X, y)}, client)["pa"]
    assert isinstance(saved.model, bytes) and saved.metrics == plain.metrics
    np.testing.assert_array_equal(saved.estimator().decision_function(X),
                                  plain.estimator().decision_function(X))


def test_map_trials_keeps_key_order(client):
    assert map_trials(lambda k: k * k, [3, 1, 2], client) == {3: 9, 1: 1, 2: 4}
    assert map_trials(len, {"a": "xy", "b": "xyz"}, "sequential") == {"a": 2, "b": 3}


def test_sequential_runs_without_dask():
    code = ("import sys, numpy as np; from okl import OnlineKernelRegressor; "
            "from okl.distributed import learn_many; X = np.ones((20, 1)); "
            "r = learn_many(OnlineKernelRegressor(), {0: (X, X[:, 0])}, 'sequential'); "
            "assert r[0].metrics['n_samples'] == 20; "
            "assert 'dask' not in sys.modules and 'distributed' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r'pip install "okl\[dask\]"'):
        learn_many(OnlineKernelRegressor(), {0: regression_stream(0, 10)}, n_workers=1)


@pytest.mark.parametrize("estimator", [
    OnlineKernelClassifier(gamma=0.5, budget=50),
    OnlineKernelRegressor(gamma=0.5, approximation="fourier", n_components=30, random_state=0),
    RegularizedPAClassifier(kernel="linear", variant="PA-I"),
])
def test_inside_dask_ml_incremental_equals_a_sequential_pass(client, estimator):
    """dask_ml.wrappers.Incremental calls partial_fit block by block on the workers: the
    same model as one partial_fit per block here."""
    import dask.array as da
    from dask_ml.wrappers import Incremental

    X, y = (classification_stream if is_classifier(estimator) else regression_stream)(9, 500)
    kwargs = {"classes": [0, 1]} if is_classifier(estimator) else {}
    Xd, yd = da.from_array(X, chunks=(120, 2)), da.from_array(y, chunks=120)
    wrapped = Incremental(estimator, shuffle_blocks=False).fit(Xd, yd, **kwargs)
    reference = clone(estimator)
    for a in range(0, len(X), 120):
        reference.partial_fit(X[a:a + 120], y[a:a + 120], **kwargs)
    learned = wrapped.estimator_
    assert type(learned) is type(estimator) and learned.t_ == reference.t_ == len(X)
    score = learned.decision_function if is_classifier(estimator) else learned.predict
    expected = reference.decision_function if is_classifier(estimator) else reference.predict
    np.testing.assert_array_equal(score(X), expected(X))
    np.testing.assert_array_equal(wrapped.predict(Xd).compute(), reference.predict(X))
