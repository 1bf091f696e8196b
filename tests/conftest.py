"""Test session setup.

scikit-learn's array-API estimator check runs only when SciPy was imported
with SCIPY_ARRAY_API=1; set it before anything imports SciPy so that
parametrize_with_checks runs that check instead of skipping it.
"""
import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")


import inspect
import math
import pickle
import signal
import threading
import time
import traceback
import types
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, is_classifier


def _run_forked(func, *args, timeout=120.0):
    """func(*args) in a forked child: a crash (segfault, abort) fails the test, not pytest."""
    if not hasattr(os, "fork"):          # Windows: in this process, a crash stops pytest
        return func(*args)
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads: the child
        pid = os.fork()                                      # only runs func and exits
    if pid == 0:
        os.close(read_fd)
        try:
            payload = ("ok", func(*args))
        except BaseException as exc:
            payload = ("raised", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        with os.fdopen(write_fd, "wb") as pipe:
            pickle.dump(payload, pipe)
        os._exit(0)
    os.close(write_fd)
    chunks, deadline = [], time.monotonic() + timeout
    with os.fdopen(read_fd, "rb") as pipe:
        os.set_blocking(pipe.fileno(), False)
        while True:
            data = pipe.read()
            if data:
                chunks.append(data)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                os.set_blocking(pipe.fileno(), True)
                chunks.append(pipe.read() or b"")
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"{func.__name__} did not finish within {timeout} s")
            time.sleep(0.01)
    if os.WIFSIGNALED(status):
        pytest.fail(f"{func.__name__} crashed the process with "
                    f"{signal.Signals(os.WTERMSIG(status)).name}")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "raised":
        pytest.fail(f"{func.__name__} raised in the isolated child:\n{value}", pytrace=False)
    return value


@pytest.fixture
def isolated():
    """Run a crash-prone callable in a forked child; returns its (picklable) result."""
    return _run_forked


def _two_workers():
    """A real two-process LocalCluster (one thread per worker) and its Client.

    allowed-failures=1: a task is declared lost after its second dead worker, not its fourth.
    """
    dask = pytest.importorskip("dask", reason="okl.distributed needs Dask: pip install "
                                              "\"okl[dask]\"")
    distributed = pytest.importorskip("distributed", reason="okl.distributed needs Dask")
    from okl.distributed.tasks import local_cluster     # as okl starts its own
    # generous connection timeouts: on a loaded machine a worker process can take long to start
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.comm.timeouts.connect": "300s",
                          "distributed.comm.timeouts.tcp": "300s"}), \
            local_cluster(2) as cluster, distributed.Client(cluster) as dask_client:
        yield dask_client


@pytest.fixture(scope="module")
def client():
    """Two workers shared by a test module (`_two_workers`)."""
    yield from _two_workers()


@pytest.fixture
def unstolen_client():
    """Two workers whose scheduler never steals a task: a test of which results travel between
    workers then counts okl's own sends. Stealing moves a loosely pinned task (okl pins each
    model's rounds to a worker loosely, so that a lost worker's rounds can run elsewhere) to an
    idle worker when another is busy, as on a loaded machine, and its inputs travel with it."""
    dask = pytest.importorskip("dask", reason="okl.distributed needs Dask: pip install "
                                              "\"okl[dask]\"")
    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        yield from _two_workers()


@pytest.fixture
def own_client():
    """Two workers of the test's own, for a test that kills one: on a loaded machine a nanny's
    replacement worker may come late or not at all, which must not reach the other tests."""
    yield from _two_workers()


class ModelState:
    """model_state(est): a copy of the state of est's model; model_state.same(a, b) asserts that
    two copies are equal (arrays to the bit, NaN as NaN)."""

    def __call__(self, est):
        return {k: (v.copy() if isinstance(v, np.ndarray) else v)
                for k, v in est._model.get_state().items()}

    @staticmethod
    def same(a, b):
        assert a.keys() == b.keys()
        for k in a:
            if isinstance(a[k], np.ndarray):
                np.testing.assert_array_equal(a[k], b[k])
            elif isinstance(a[k], float) and math.isnan(a[k]):
                assert math.isnan(b[k])
            else:
                assert a[k] == b[k], k


@pytest.fixture
def model_state():
    """The state of an estimator's model, to check that a call left it exactly as it was."""
    return ModelState()


@pytest.fixture
def in_threads():
    """run(work, parts): work(part) in one thread per part, all at once; returns what they
    raised."""
    def run(work, parts):
        errors = []

        def target(part):
            try:
                work(part)
            except BaseException as error:      # noqa: BLE001 - returned to the test
                errors.append(error)
        threads = [threading.Thread(target=target, args=(part,)) for part in parts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return errors
    return run


# ---- every public estimator (the snapshot and adversarial tests run over all of them) ---------
#
# The classes are read from `okl.__all__` (those it names and those of the public modules it
# names), so an estimator added to okl joins these tests without a line here: a constructor
# argument without a default gets an okl learner (`estimator`, `learner`: a classifier for a
# classifier's wrapper) or the steps of a pipeline (`steps`).

def _public_classes():
    import okl
    found = set()
    for name in okl.__all__:
        obj = getattr(okl, name)
        members = vars(obj).values() if isinstance(obj, types.ModuleType) else [obj]
        for cls in members:
            if (isinstance(cls, type) and issubclass(cls, BaseEstimator)
                    and cls.__module__.startswith("okl") and not cls.__name__.startswith("_")
                    and hasattr(cls, "partial_fit")):
                found.add(cls)
    return sorted(found, key=lambda cls: cls.__name__)


def _inner(cls, name):
    import okl
    import okl.preprocessing
    if name == "steps":
        return [("scale", okl.preprocessing.OnlineStandardScaler()),
                ("learn", okl.OnlineKernelRegressor(budget=40))]
    if "Classifier" in cls.__name__:
        return okl.OnlineKernelClassifier(budget=40)
    return okl.OnlineKernelRegressor(budget=40)


def make(cls, engine=None):
    """An instance of `cls` (on `engine` when it has one); required arguments filled in."""
    kwargs = {}
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty:
            kwargs[p.name] = _inner(cls, p.name)
        elif p.name == "engine" and engine is not None:
            kwargs["engine"] = engine
        elif p.name == "random_state":
            kwargs["random_state"] = 0
    return cls(**kwargs)


def estimator_cases():
    """[(id, cls, engine)]: every estimator class, on each engine it has."""
    out = []
    for cls in _public_classes():
        engines = (["cython", "numpy"]
                   if "engine" in inspect.signature(cls.__init__).parameters else [None])
        out += [(f"{cls.__name__}-{engine or 'any'}", cls, engine) for engine in engines]
    return out


def is_transformer(est):
    return hasattr(est, "transform") and not hasattr(est, "predict") \
        and not hasattr(est, "decision_function")


def stream(est, n=300, d=4, seed=0):
    """(X, y) for est: labels for a classifier, None for a transformer, else real targets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if is_transformer(est):
        return X, None
    if is_classifier(est):
        return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    return X, np.sin(X[:, 0]) + 0.1 * X[:, 1]


def learn(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if y is None:
            return est.partial_fit(X)
        return est.partial_fit(X, y)


def fingerprint(est, X):
    """What the estimator gives on X (predictions, scores or the transformed rows)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("predict", "score_samples", "decision_function", "transform"):
            if hasattr(est, method):
                return np.asarray(getattr(est, method)(X))
    raise AssertionError(f"{type(est).__name__} has no prediction method")


def pytest_generate_tests(metafunc):
    """`estimator_case`: (class, engine) of every public estimator on each of its engines;
    `learner_case`: of those that learn targets (not the transformers)."""
    for name in ("estimator_case", "learner_case"):
        if name in metafunc.fixturenames:
            cases = [case for case in estimator_cases() if name == "estimator_case"
                     or hasattr(case[1], "predict") or hasattr(case[1], "decision_function")]
            metafunc.parametrize(name, [(cls, engine) for _, cls, engine in cases],
                                 ids=[case_id for case_id, _, _ in cases])


@pytest.fixture
def kit():
    """The helpers that build, feed and read any public estimator (see `estimator_cases`)."""
    return types.SimpleNamespace(make=make, stream=stream, learn=learn, fingerprint=fingerprint,
                                 is_transformer=is_transformer, classes=_public_classes)
