"""Test session setup.

scikit-learn's array-API estimator check runs only when SciPy was imported
with SCIPY_ARRAY_API=1; set it before anything imports SciPy so that
parametrize_with_checks runs that check instead of skipping it.
"""
import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")


import math
import pickle
import signal
import threading
import time
import traceback
import warnings

import numpy as np
import pytest


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
