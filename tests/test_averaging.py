"""okl.distributed.AveragedLearner and average_models, on a real two-process LocalCluster."""
import copy
import os
import pickle
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp

distributed = pytest.importorskip(
    "distributed", reason="okl.distributed needs Dask: pip install \"okl[dask]\"")

import cloudpickle  # noqa: E402  (comes with distributed)
from sklearn.base import clone, is_classifier, is_regressor  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

from okl import (CoefficientRegularizedClassifier, OnlineKernelClassifier,  # noqa: E402
                 OnlineKernelRegressor, RegularizedPAClassifier)
from okl.distributed import AveragedLearner, WorkerLostError, average_models  # noqa: E402

# The workers cannot import this module (pytest imports it by path): ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def regression_stream(seed, n=600):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] + 0.2 * rng.standard_normal(n)


def classification_stream(seed, n=600):
    X, y = regression_stream(seed, n)
    return X, np.where(y > 0, 1, 0)


LEARNERS = {
    "regressor": (OnlineKernelRegressor(gamma=0.5, budget=None), regression_stream),
    "budget": (OnlineKernelRegressor(gamma=0.5, budget=40), regression_stream),
    "classifier": (OnlineKernelClassifier(gamma=0.5, lam=0.01, budget=None),
                   classification_stream),
    "pa-kernel": (RegularizedPAClassifier(kernel="gaussian", gamma=0.5), classification_stream),
    "pa-linear": (RegularizedPAClassifier(kernel="linear", variant="PA-I"),
                  classification_stream),
}


def fitted(learner, stream, seed):
    X, y = stream(seed, 200)
    return clone(learner).fit(X, y)


def decision(model, X):
    return model.decision_function(X) if is_classifier(model) else model.predict(X)


# ---- the average itself, without Dask -------------------------------------------------------

@pytest.mark.parametrize("name", ["regressor", "classifier", "pa-kernel", "pa-linear"])
def test_average_predicts_the_mean_of_the_predictions(name):
    learner, stream = LEARNERS[name]
    models = [fitted(learner, stream, seed) for seed in (1, 2, 3)]
    average = average_models(models)
    X = stream(9, 50)[0]
    expected = np.mean([decision(m, X) for m in models], axis=0)
    np.testing.assert_allclose(decision(average, X), expected, rtol=0, atol=1e-12)
    assert average.t_ == sum(m.t_ for m in models)
    assert type(average) is type(learner)
    average.partial_fit(*stream(4, 20))            # an ordinary estimator: it continues


def test_divergence_is_the_squared_distance_in_the_rkhs():
    from okl._averaging import divergence
    from okl.kernels import kernel_matrix

    learner, stream = LEARNERS["classifier"]
    f, g = (fitted(learner, stream, seed) for seed in (1, 2))
    centers = np.concatenate([f.support_vectors_, g.support_vectors_])
    c = np.concatenate([f.dual_coef_, -g.dual_coef_])
    expected = c @ kernel_matrix(centers, gamma=0.5) @ c
    expected += (getattr(f, "intercept_", 0.0) - getattr(g, "intercept_", 0.0)) ** 2
    assert divergence(f, g) == pytest.approx(expected, rel=1e-10)
    assert divergence(f, f) == pytest.approx(0.0, abs=1e-10)


def test_average_merges_identical_centres_and_keeps_the_budget():
    learner, stream = LEARNERS["regressor"]
    a = fitted(learner, stream, 1)
    same = average_models([a, copy.deepcopy(a)])
    assert same.n_support_ == a.n_support_
    np.testing.assert_allclose(same.dual_coef_, a.dual_coef_, atol=1e-15)
    bounded, _ = LEARNERS["budget"]
    models = [fitted(bounded, stream, seed) for seed in (1, 2)]
    assert average_models(models).n_support_ == 40


def test_average_of_linear_pa_is_the_mean_weight():
    learner, stream = LEARNERS["pa-linear"]
    models = [fitted(learner, stream, seed) for seed in (1, 2)]
    average = average_models(models)
    np.testing.assert_allclose(average.coef_, (models[0].coef_ + models[1].coef_) / 2, atol=1e-15)
    assert average.sq_norm_ == pytest.approx(float(np.sum(average.coef_ ** 2)))


def test_coefficient_regularized_needs_shared_centres():
    X = classification_stream(1, 200)[0]
    free = [CoefficientRegularizedClassifier(n_centers=10, gamma=0.5).fit(
        *classification_stream(s, 100)) for s in (1, 2)]
    with pytest.raises(ValueError, match="centers"):
        average_models(free)
    shared = [CoefficientRegularizedClassifier(centers=X[:10], gamma=0.5).fit(
        *classification_stream(s, 100)) for s in (1, 2)]
    average = average_models(shared)
    np.testing.assert_allclose(average.coef_, (shared[0].coef_ + shared[1].coef_) / 2,
                               atol=1e-15)


# ---- AveragedLearner ------------------------------------------------------------------------

def by_hand(learner, parts, k, S, classes=None, owners=None):
    """Iterative parameter mixing written out with plain okl estimators, in this process.

    Partition i belongs to model owners[i] (default i mod k); round r learns rows
    [r S, (r + 1) S) of every model's share (its partitions, concatenated).
    """
    owners = [i % k for i in range(len(parts))] if owners is None else owners
    mine = [[p for p, o in zip(parts, owners) if o == j] for j in range(k)]
    shares = [(np.concatenate([p[0] for p in m]), np.concatenate([p[1] for p in m]))
              for m in mine if m]
    models = [None] * k
    kwargs = {} if classes is None else {"classes": classes}
    for start in range(0, max(len(s[1]) for s in shares), S):
        for j, (X, y) in enumerate(shares):
            if start < len(y):
                if models[j] is None:
                    models[j] = clone(learner)
                models[j].partial_fit(X[start:start + S], y[start:start + S], **kwargs)
        average = average_models([m for m in models if m is not None])
        own = [0 if m is None else m.t_ for m in models]
        models = [copy.deepcopy(average) for _ in range(k)]
        for m, t in zip(models, own):
            m.t_ = t
    return average


def blocks(X, y, size):
    return [(X[a:a + size], y[a:a + size]) for a in range(0, len(X), size)]


@pytest.mark.parametrize("name", ["regressor", "budget", "classifier", "pa-kernel", "pa-linear"])
def test_static_equals_a_hand_computed_run(client, name):
    learner, stream = LEARNERS[name]
    X, y = stream(5, 700)
    classes = [0, 1] if is_classifier(learner) else None
    est = AveragedLearner(learner, n_workers=2, sync_every=50, client=client).fit(X, y)
    expected = by_hand(learner, blocks(X, y, 50), 2, 50, classes)
    Xt = stream(6, 100)[0]
    np.testing.assert_allclose(decision(est.model_, Xt), decision(expected, Xt), rtol=0,
                               atol=1e-12)
    assert est.t_ == len(X) and est.n_rounds_ == 7 and est.n_syncs_ == 7
    assert est.bytes_sent_ > 0


def test_partial_fit_continues_and_sequential_client_agrees(client):
    learner, stream = LEARNERS["classifier"]
    X, y = stream(7, 600)
    est = AveragedLearner(learner, sync_every=50, client=client)
    est.partial_fit(X[:300], y[:300], classes=[0, 1]).partial_fit(X[300:], y[300:])
    here = AveragedLearner(learner, sync_every=50, client="sequential").fit(X, y)
    np.testing.assert_allclose(est.decision_function(X), here.decision_function(X), atol=1e-12)
    assert est.t_ == here.t_ == 600
    assert est.score(X, y) == here.score(X, y)


def test_dynamic_threshold_zero_equals_static(client):
    learner, stream = LEARNERS["regressor"]
    X, y = stream(8, 600)
    static = AveragedLearner(learner, sync_every=30, client=client).fit(X, y)
    dynamic = AveragedLearner(learner, sync_every=30, sync="dynamic", threshold=0.0,
                              client=client).fit(X, y)
    np.testing.assert_allclose(dynamic.predict(X), static.predict(X), rtol=0, atol=1e-12)
    assert dynamic.n_syncs_ == static.n_syncs_ == 10


def test_dynamic_with_a_large_threshold_syncs_only_at_the_end(client):
    learner, stream = LEARNERS["regressor"]
    X, y = stream(8, 600)
    static = AveragedLearner(learner, sync_every=30, client=client).fit(X, y)
    dynamic = AveragedLearner(learner, sync_every=30, sync="dynamic", threshold=1e9,
                              client=client).fit(X, y)
    assert dynamic.n_syncs_ == 1 and dynamic.n_rounds_ == 10
    assert dynamic.bytes_sent_ < static.bytes_sent_
    assert dynamic.t_ == 600
    # no sync before the end: the average of two models that each learned their share alone
    parts = blocks(X, y, 30)
    alone = [clone(learner).fit(np.concatenate([p[0] for p in parts[j::2]]),
                                np.concatenate([p[1] for p in parts[j::2]])) for j in range(2)]
    np.testing.assert_allclose(dynamic.predict(X), average_models(alone).predict(X), atol=1e-12)


@pytest.mark.parametrize("collection", [False, True])     # rounds waiting for k drifts, or not
def test_models_that_agree_never_travel(unstolen_client, collection):
    # dynamic rounds without a synchronisation send the drift floats, not the models: no learn
    # task's result goes from one worker to another; a synchronisation sends them
    import dask.array as da
    from dask.utils import key_split

    X, y = regression_stream(17, 400)
    if collection:
        X, y = da.from_array(X, chunks=(25, 2)), da.from_array(y, chunks=25)
    moved = {}
    client = unstolen_client
    for threshold in (1e9, 0.0):
        since = time.time()
        est = AveragedLearner(OnlineKernelRegressor(gamma=0.5), sync_every=50, sync="dynamic",
                              threshold=threshold, client=client).fit(X, y)
        logs = client.run(lambda dask_worker: [
            key for entry in dask_worker.transfer_incoming_log if entry["start"] >= since
            for key in entry["keys"]])
        moved[threshold] = [key for keys in logs.values() for key in keys
                            if key_split(key) == "learn_round"]
        assert est.n_syncs_ == (1 if threshold else 4) and est.t_ == 400
    assert moved[1e9] == [] and len(moved[0.0]) >= 2 * 3     # each sync: each model, once


class Gated(OnlineKernelRegressor):
    """Model 1 (rows whose second feature is 1) waits in its first partition until model 0
    has learned 150 events, which it can do only if its rounds do not wait for model 1."""

    def __init__(self, gate=None, gamma=1.0):
        super().__init__(gamma=gamma)
        self.gate = gate

    def _validate_params(self):        # the parent's defaults are valid; gate is a name
        pass

    def partial_fit(self, X, y):
        if self.gate is not None:
            event, t = distributed.Event(self.gate), getattr(self, "t_", 0)
            if X[0, 1] == 1 and t == 0 and not event.wait(timeout=300):
                raise RuntimeError("model 1 was never let go: model 0 waited for it")
            if X[0, 1] == 0 and t + len(X) == 150:          # model 0, round 3 of 4
                event.set()
        return super().partial_fit(X, y)


def test_dynamic_rounds_without_a_sync_do_not_wait_for_the_other_worker(client):
    import dask.array as da

    X, y = regression_stream(14, 400)
    X[:, 1] = np.arange(400) // 25 % 2                      # the model that learns each row
    X, y = da.from_array(X, chunks=(25, 2)), da.from_array(y, chunks=25)
    gate = f"gate-{os.getpid()}-{id(X)}"
    est = AveragedLearner(Gated(gate, gamma=0.5), sync_every=50, sync="dynamic",
                          threshold=1e9, client=client).fit(X, y)
    here = AveragedLearner(Gated(None, gamma=0.5), sync_every=50, sync="dynamic",
                           threshold=1e9, client="sequential").fit(X, y)
    np.testing.assert_allclose(est.predict(X), here.predict(X), rtol=0, atol=1e-12)
    assert est.n_syncs_ == here.n_syncs_ == 1 and est.t_ == 400
    distributed.Event(gate, client=client).clear()


def test_speculative_rounds_are_dropped_when_a_sync_is_due(client):
    # syncs after some rounds and not others: the rounds learned ahead are dropped at a sync
    import dask.array as da

    X, y = regression_stream(15, 1000)
    Xd, yd = da.from_array(X, chunks=(10, 2)), da.from_array(y, chunks=10)
    learner = OnlineKernelRegressor(gamma=0.5, budget=30, budget_policy="merge")
    runs = [AveragedLearner(learner, sync_every=25, sync="dynamic", threshold=threshold,
                            client=where).fit(Xd, yd)
            for threshold in (0.3, 1.0) for where in (client, "sequential")]
    for dask_run, here in zip(runs[::2], runs[1::2]):
        np.testing.assert_allclose(dask_run.predict(X), here.predict(X), rtol=0, atol=1e-12)
        assert dask_run.n_syncs_ == here.n_syncs_
        assert 2 < here.n_syncs_ < here.n_rounds_                   # some rounds, not all


class DiesOnce(OnlineKernelRegressor):
    """Kills its worker process the first time it learns (a marker file remembers)."""

    def __init__(self, marker=None, gamma=1.0):
        super().__init__(gamma=gamma)
        self.marker = marker

    def _validate_params(self):        # the parent's defaults are valid; marker is a path
        pass

    def partial_fit(self, X, y):
        if self.marker == "always":
            os._exit(1)
        if self.marker and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return super().partial_fit(X, y)


def test_a_killed_worker_with_scattered_rows_is_reported_and_nothing_is_half_learned(
        own_client, tmp_path):
    client = own_client
    X, y = regression_stream(11, 400)
    marker = str(tmp_path / "died")
    est = AveragedLearner(DiesOnce(marker, gamma=0.5), sync_every=50, client=client)
    try:                  # the rows scattered to the dead worker may be lost with it
        est.fit(X, y)
    except WorkerLostError:
        assert not hasattr(est, "model_")           # left as it was
        client.wait_for_workers(2, timeout=600)
        est.fit(X, y)                               # the marker exists: it lives this time
    assert os.path.exists(marker)                   # a worker did die, mid-run
    reference = AveragedLearner(OnlineKernelRegressor(gamma=0.5), sync_every=50,
                                client="sequential").fit(X, y)
    assert est.t_ == len(X)                         # every event learned, none silently lost
    np.testing.assert_allclose(est.predict(X), reference.predict(X), rtol=0, atol=1e-12)


def test_a_share_that_keeps_killing_workers_is_reported(own_client):
    client = own_client
    X, y = regression_stream(12, 200)
    est = AveragedLearner(DiesOnce("always", gamma=0.5), sync_every=50, client=client)
    with pytest.raises(WorkerLostError, match="not learned") as info:
        est.fit(X, y)
    assert info.value.events == 200 and info.value.round >= 1
    with pytest.raises(NotFittedError):                        # left as it was: unfitted
        est.predict(X)
    client.wait_for_workers(2, timeout=600)
    est.set_params(learner=OnlineKernelRegressor(gamma=0.5)).fit(X[:100], y[:100])
    before = est.predict(X)
    est.set_params(learner=DiesOnce("always", gamma=0.5))
    with pytest.raises(WorkerLostError):                       # a fit that fails keeps the model
        est.fit(X, y)
    np.testing.assert_array_equal(est.predict(X), before)
    assert est.t_ == 100 and est.n_rounds_ == 1


def test_sklearn_protocol():
    est = AveragedLearner(OnlineKernelClassifier(), n_workers=3, sync="dynamic", threshold=0.5,
                          client="sequential")
    params = est.get_params()
    for name in ("learner", "n_workers", "sync_every", "sync", "threshold", "client",
                 "learner__gamma"):
        assert name in params
    copy_ = clone(est).set_params(learner__gamma=2.0, sync_every=7)
    assert copy_.learner.gamma == 2.0 and copy_.sync_every == 7 and est.learner.gamma == "scale"
    assert is_classifier(est) and is_regressor(AveragedLearner(OnlineKernelRegressor()))
    with pytest.raises(NotFittedError):
        est.predict(np.zeros((1, 2)))
    X, y = classification_stream(3, 300)
    est.fit(X, y)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="sync"):
        AveragedLearner(OnlineKernelRegressor(), sync="sometimes", client="sequential").fit(X, y)


def test_own_cluster_is_started_and_closed():
    X, y = regression_stream(2, 200)
    est = AveragedLearner(OnlineKernelRegressor(gamma=0.5), n_workers=2, sync_every=40)
    try:
        est.fit(X, y)
        assert est.t_ == 200
        clone(est)                                     # no Client in the parameters
        pickle.dumps(est)
    finally:
        est.close()
    assert not hasattr(est, "_cluster")


def test_random_feature_models_average_their_weights():
    """Models on one random feature map (one random_state) average exactly; other maps refuse."""
    from okl._averaging import divergence
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(600, 3)), np.sin(rng.normal(size=600))

    def make(seed):
        return OnlineKernelRegressor(approximation="fourier", n_components=50, random_state=seed,
                                     gamma=0.5)
    models = [make(3).fit(X[i::2], y[i::2]) for i in range(2)]
    avg = average_models(models)
    np.testing.assert_allclose(avg.predict(X), (models[0].predict(X) + models[1].predict(X)) / 2,
                               atol=1e-12)
    assert divergence(models[0], models[1]) > 0 and divergence(models[0], models[0]) == 0
    nystroem = [OnlineKernelRegressor(approximation="nystroem", n_components=20,
                                      gamma=0.5).fit(X[i::2], y[i::2])
                for i in range(2)]                      # each worker's own landmarks
    with pytest.raises(ValueError, match="different feature maps"):
        average_models(nystroem)
    scaled = [OnlineKernelRegressor(gamma="scale", budget=None).fit(X[i::2] * (i + 1), y[i::2])
              for i in range(2)]                        # each its own width
    with pytest.raises(ValueError, match="widths differ"):
        average_models(scaled)


# ---- Dask collections and files: partitions learned where they live -------------------------

CLIENT_PID = os.getpid()


def made_on_a_worker(block, seed, d):
    """A block of the stream made where it is computed; the client process refuses to."""
    if os.getpid() == CLIENT_PID:
        raise RuntimeError("a partition was materialised in the client process")
    return generated_rows(seed, block.shape[0], d)


def generated_rows(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, d))
    return np.column_stack([X, np.sin(2 * X[:, 0]) + X[:, 1]])


def lazy_stream(chunks, d=2, seed=0):
    """A dask array of (X | y) whose blocks are generated on the workers only."""
    import dask.array as da

    n = sum(chunks)
    template = da.zeros((n, d + 1), chunks=(tuple(chunks), d + 1))
    seeds = da.from_array(np.arange(len(chunks)) + 1000 * seed, chunks=1)[:, None]
    data = da.map_blocks(lambda b, s: made_on_a_worker(b, int(s[0, 0]), d), template, seeds,
                         dtype=float)
    return data[:, :d], data[:, d]


def stream_rows(chunks, d=2, seed=0):
    rows = np.concatenate([generated_rows(1000 * seed + i, c, d) for i, c in enumerate(chunks)])
    return rows[:, :d], rows[:, d]


@pytest.mark.parametrize("chunks, S", [([50] * 8, 50), ([70, 30, 90, 45, 65, 100], 40)])
def test_a_dask_array_is_learned_on_the_workers(client, chunks, S):
    learner = OnlineKernelRegressor(gamma=0.5, budget=30)
    X, y = lazy_stream(chunks)
    est = AveragedLearner(learner, sync_every=S, client=client).fit(X, y)
    Xn, yn = stream_rows(chunks)
    offsets = np.cumsum([0] + chunks)
    parts = [(Xn[a:b], yn[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    expected = by_hand(learner, parts, 2, S)
    np.testing.assert_allclose(est.predict(Xn), expected.predict(Xn), rtol=0, atol=1e-12)
    assert est.t_ == len(yn) and est.model_.n_support_ <= 30
    if chunks == [50] * 8:      # chunks of sync_every rows: the same as the arrays in memory
        here = AveragedLearner(learner, sync_every=S, client=client).fit(Xn, yn)
        np.testing.assert_array_equal(here.predict(Xn), est.predict(Xn))
        assert (here.n_rounds_, here.n_syncs_) == (est.n_rounds_, est.n_syncs_) == (4, 4)


def test_partial_fit_takes_collections_and_dynamic_agrees_in_process(client):
    X, y = lazy_stream([30] * 12, seed=1)      # chunks of sync_every rows, as in memory
    Xn, yn = stream_rows([30] * 12, seed=1)
    learner = OnlineKernelRegressor(gamma=0.5)
    for sync, threshold in (("static", 0.0), ("dynamic", 0.5)):
        est = AveragedLearner(learner, sync_every=30, sync=sync, threshold=threshold,
                              client=client)
        est.partial_fit(X[:180], y[:180]).partial_fit(X[180:], y[180:])
        here = AveragedLearner(learner, sync_every=30, sync=sync, threshold=threshold,
                               client="sequential")
        here.partial_fit(Xn[:180], yn[:180]).partial_fit(Xn[180:], yn[180:])
        np.testing.assert_allclose(est.predict(Xn), here.predict(Xn), rtol=0, atol=1e-12)
        assert (est.t_, est.n_rounds_, est.n_syncs_) == (here.t_, here.n_rounds_, here.n_syncs_)
    assert 2 < est.n_syncs_ < est.n_rounds_                    # dynamic: fewer syncs


def test_a_dask_dataframe_with_a_target_column(client):
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X, y = classification_stream(4, 400)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "label": y})
    ddf = dd.from_pandas(frame, npartitions=5)
    learner = OnlineKernelClassifier(gamma=0.5, lam=0.01)
    est = AveragedLearner(learner, sync_every=60, client=client).fit(ddf, "label")
    lengths = ddf.map_partitions(len).compute().tolist()
    offsets = np.cumsum([0] + lengths)
    parts = [(X[a:b], y[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    expected = by_hand(learner, parts, 2, 60, classes=[0, 1])
    np.testing.assert_allclose(est.decision_function(X), expected.decision_function(X),
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.classes_, [0, 1])
    with pytest.raises(ValueError, match="target column"):
        est.fit(ddf, "missing")


def write_csv(path, X, y):
    header = ",".join([f"x{i}" for i in range(X.shape[1])] + ["target"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="")
    return str(path)


def test_files_are_read_on_the_workers(client, tmp_path):
    X, y = regression_stream(5, 300)
    files = [write_csv(tmp_path / f"part{i}.csv", X[a:a + 100], y[a:a + 100])
             for i, a in enumerate(range(0, 300, 100))]
    learner = OnlineKernelRegressor(gamma=0.5)
    est = AveragedLearner(learner, sync_every=40, client=client).fit(files, "target")
    expected = by_hand(learner, blocks(X, y, 100), 2, 40)
    np.testing.assert_allclose(est.predict(X), expected.predict(X), rtol=0, atol=1e-9)
    assert est.t_ == 300
    bad = write_csv(tmp_path / "wide.csv", np.ones((10, 3)), np.ones(10))
    with pytest.raises(ValueError, match="wide.csv has 3 columns"):
        est.partial_fit(files + [bad], "target")
    np.testing.assert_array_equal(est.predict(X), expected.predict(X))  # kept


def test_a_bad_partition_is_named_and_the_model_kept(client):
    import dask.array as da

    X, y = regression_stream(6, 400)
    learner = OnlineKernelRegressor(gamma=0.5)
    est = AveragedLearner(learner, sync_every=50, client=client).fit(X, y)
    before, t = est.predict(X), est.t_
    bad = X.copy()
    bad[230, 1] = np.nan
    Xd, yd = da.from_array(bad, chunks=(100, 2)), da.from_array(y, chunks=100)
    for sync in ("static", "dynamic"):
        est.set_params(sync=sync)
        with pytest.raises(ValueError, match=r"block 2 \(rows 200..299\) holds NaN"):
            est.partial_fit(Xd, yd)
        np.testing.assert_array_equal(est.predict(X), before)
        assert est.t_ == t
    with pytest.raises(ValueError, match=r"rows 200..249 holds NaN"):
        AveragedLearner(learner, sync_every=50, client="sequential").fit(bad, y)


@pytest.mark.parametrize("name", sorted(LEARNERS))
@pytest.mark.parametrize("where", ["X", "y"])
def test_values_are_checked_by_the_learner_and_the_partition_named(name, where):
    # the rounds leave the finite check to the learner and name the partition when it fails
    learner, stream = LEARNERS[name]
    X, y = stream(9, 300)
    X, y = X.copy(), y.astype(float)
    if where == "X":
        X[170, 0] = np.inf
    else:
        y[170] = np.nan
    est = AveragedLearner(learner, sync_every=50, client="sequential")
    what = "feature values" if where == "X" else "labels"
    with pytest.raises(ValueError, match=rf"rows 150..199 holds NaN or infinite {what}"):
        est.fit(X, y, classes=[0.0, 1.0] if is_classifier(learner) else None)
    assert not hasattr(est, "model_")
    if name == "pa-linear" and where == "X":                    # sparse rows too
        with pytest.raises(ValueError, match=r"rows 150..199 holds NaN or infinite feature"):
            est.fit(sp.csr_matrix(X), y, classes=[0.0, 1.0])


@pytest.mark.parametrize("sync", ["static", "dynamic"])
def test_bounded_kernel_and_fourier_models_average_within_their_size(client, sync):
    X, y = lazy_stream([50] * 12, seed=2)
    Xn, yn = stream_rows([50] * 12, seed=2)
    merge = OnlineKernelRegressor(gamma=0.5, budget=25, budget_policy="merge")
    fourier = OnlineKernelRegressor(gamma=0.5, approximation="fourier", n_components=40,
                                    random_state=0)
    for learner in (merge, fourier):
        est = AveragedLearner(learner, sync_every=50, sync=sync, threshold=1e-3,
                              client=client).fit(X, y)
        here = AveragedLearner(learner, sync_every=50, sync=sync, threshold=1e-3,
                               client="sequential").fit(Xn, yn)
        np.testing.assert_allclose(est.predict(Xn), here.predict(Xn), rtol=0, atol=1e-12)
        if learner is merge:
            assert est.model_.n_support_ <= 25
        if sync == "static":
            expected = by_hand(learner, blocks(Xn, yn, 50), 2, 50)
            np.testing.assert_allclose(est.predict(Xn), expected.predict(Xn), rtol=0,
                                       atol=1e-12)


@pytest.mark.parametrize("sync, chunk", [("static", 50), ("dynamic", 25)])
def test_a_killed_worker_recomputes_a_dask_share(own_client, tmp_path, sync, chunk):
    # dynamic with partitions of half a round: speculative rounds, then a sync, a worker dying
    import dask.array as da

    X, y = regression_stream(13, 400)
    Xd, yd = da.from_array(X, chunks=(chunk, 2)), da.from_array(y, chunks=chunk)
    marker = str(tmp_path / "died")
    options = dict(sync_every=50, sync=sync, threshold=0.5)
    est = AveragedLearner(DiesOnce(marker, gamma=0.5), client=own_client, **options).fit(Xd, yd)
    assert os.path.exists(marker)
    reference = AveragedLearner(OnlineKernelRegressor(gamma=0.5), client="sequential",
                                **options).fit(Xd, yd)
    assert est.t_ == len(X) and est.n_syncs_ == reference.n_syncs_
    np.testing.assert_allclose(est.predict(X), reference.predict(X), rtol=0, atol=1e-12)


def test_in_memory_rows_are_scattered_once(client, monkeypatch):
    rows = []
    original = client.scatter

    def scatter(data, **kwargs):
        rows.append(sum(len(part[1]) for part in data))
        return original(data, **kwargs)
    monkeypatch.setattr(client, "scatter", scatter)
    X, y = regression_stream(14, 500)
    est = AveragedLearner(OnlineKernelRegressor(gamma=0.5), sync_every=50, client=client)
    est.fit(X, y)
    assert rows == [250, 250]          # one scatter per worker, every row once, none per round
    assert est.n_rounds_ == 5 and est.t_ == 500


def test_partitions_are_assigned_to_the_models_that_hold_them():
    from okl.distributed.partitions import assign, plan_rounds

    where = ["a", "b"]
    assert assign([50] * 6, [()] * 6, where) == [0, 1, 0, 1, 0, 1]     # nothing held: i mod k
    held = [("b",), ("b",), ("a",), ("a",), ("b",), ("a",)]
    assert assign([50] * 6, held, where) == [1, 1, 0, 0, 1, 0]         # where they are
    # all on one worker: it keeps its quota (half the rows), the rest move to the other
    assert assign([50] * 6, [("a",)] * 6, where) == [0, 0, 0, 1, 1, 1]
    # held by a worker without a model (a larger cluster): the least loaded model takes it
    assert assign([50] * 4, [("c",)] * 4, where) == [0, 1, 0, 1]
    # two models on one worker (k > the cluster's size) share what it holds
    assert assign([50] * 4, [("a",)] * 4, ["a", "b", "a"]) == [0, 2, 1, 0]
    rounds = plan_rounds([50, 50, 30], 2, 40, owners=[1, 1, 0])
    assert rounds == [[[(2, 0, 30)], [(0, 0, 40)]], [[], [(0, 40, 50), (1, 0, 30)]],
                      [[], [(1, 30, 50)]]]


def test_a_persisted_array_is_learned_where_it_lives(client):
    from okl.distributed.partitions import Partitions, assign

    chunks = [40] * 8
    X, y = lazy_stream(chunks, seed=3)
    X, y = client.persist([X, y])
    distributed.wait([X, y])
    where = sorted(client.nthreads())
    held = client.who_has(X)
    keys = [key[0] for key in X.__dask_keys__()]
    holders = [tuple(held[key]) for key in keys]
    owners = assign(chunks, holders, where)
    moved = {i for i in range(8) if where[owners[i]] not in holders[i]}   # beyond a quota
    assert len(moved) <= 4
    learner = OnlineKernelRegressor(gamma=0.5, budget=30, budget_policy="merge")
    est = AveragedLearner(learner, sync_every=40, client=client)
    est.fit(X, y)
    # every block was learned on the worker that holds it, unless it had to move
    fetched = client.run(lambda dask_worker: [key for log in dask_worker.transfer_incoming_log
                                              for key in log["keys"]])
    fetched = {key for keys in fetched.values() for key in keys}
    for i, (x_key, y_key) in enumerate(zip(keys, y.__dask_keys__())):
        assert (x_key in fetched) == (y_key in fetched) == (i in moved)
    parts = Partitions.of(X, y, 40, client, where)
    # the blocks that never moved are in place; a moved block's copy on its new worker may
    # already be dropped again (Dask's active memory manager keeps one copy of a key)
    assert parts.locate(client, where) == owners and set(parts.held) >= set(range(8)) - moved
    Xn, yn = stream_rows(chunks, seed=3)
    expected = by_hand(learner, blocks(Xn, yn, 40), 2, 40, owners=owners)
    np.testing.assert_allclose(est.predict(Xn), expected.predict(Xn), rtol=0, atol=1e-12)
    assert est.t_ == 320 and est.n_rounds_ == 4 and est.model_.n_support_ <= 30
    assert len(est.cpu_seconds_) == len(est.mixing_seconds_) == len(est.busy_seconds_) == 2
    assert all(m > 0 for m in est.mixing_seconds_)                  # 3 all-reduces each
    np.testing.assert_allclose(X.compute()[:, 0], Xn[:, 0])        # the user's data kept


def test_a_persisted_array_on_one_worker_is_shared(client):
    chunks = [40] * 6
    X, y = lazy_stream(chunks, seed=4)
    where = sorted(client.nthreads())
    X, y = client.persist([X, y], workers=[where[0]])
    distributed.wait([X, y])
    learner = OnlineKernelRegressor(gamma=0.5, budget=30, budget_policy="merge")
    est = AveragedLearner(learner, sync_every=40, client=client).fit(X, y)
    Xn, yn = stream_rows(chunks, seed=4)
    # the first worker keeps its quota (half the rows), the rest moves to the second
    expected = by_hand(learner, blocks(Xn, yn, 40), 2, 40, owners=[0, 0, 0, 1, 1, 1])
    np.testing.assert_allclose(est.predict(Xn), expected.predict(Xn), rtol=0, atol=1e-12)
    assert est.n_rounds_ == 3
