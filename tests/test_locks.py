"""The estimator's re-entrant lock (okl._locks, `okl._core._lock.ReentrantLock`): the lock the
one-event steps take in C, and every other call through ``with``."""
import pickle
import signal
import threading

import numpy as np
import pytest

from okl import OnlineKernelClassifier
from okl._core._lock import ReentrantLock
from okl._locks import locked


def test_the_holder_takes_it_again_and_other_threads_wait():
    lock, seen = ReentrantLock(), []
    with lock:
        with lock:
            assert lock.acquire()
            lock.release()

        def other():
            seen.append(lock.acquire(blocking=False))
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == [False]                  # held here: the other thread could not take it

    def taker():
        with lock:
            seen.append("in")
    thread = threading.Thread(target=taker)
    with lock:
        thread.start()
        thread.join(0.05)
        assert seen == [False]              # still waiting while this thread holds it
    thread.join()
    assert seen == [False, "in"]


def test_only_the_holder_releases():
    lock = ReentrantLock()
    with pytest.raises(RuntimeError, match="un-acquired"):
        lock.release()
    lock.acquire()
    errors = []

    def other():
        try:
            lock.release()
        except RuntimeError as error:
            errors.append(error)
    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert len(errors) == 1
    lock.release()
    assert lock.acquire(blocking=False)     # free again
    lock.release()


def test_it_is_not_pickled_and_each_estimator_has_its_own():
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(ReentrantLock())
    a, b = OnlineKernelClassifier(), OnlineKernelClassifier()
    assert locked(a) is locked(a) and locked(a) is not locked(b)
    assert isinstance(locked(a), ReentrantLock)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs signal.pthread_kill "
                    "(POSIX) to send a signal to the waiting thread")
def test_a_signal_interrupts_a_wait_without_taking_the_lock():
    """A thread waiting for the lock runs its signal handlers (Ctrl-C), as threading.RLock's
    waits do; the exception leaves the lock with its holder."""
    lock, held, done, released = ReentrantLock(), threading.Event(), threading.Event(), []

    def holder():
        with lock:
            held.set()
            done.wait(30)
        released.append(True)

    class Woken(Exception):
        pass
    fired = []

    def handler(signum, frame):
        if not fired:               # the first signal raises; any later one finds it done
            fired.append(True)
            raise Woken

    def send():                     # until one lands: one that came just before the wait
        while not fired and not done.is_set():     # began would not wake it
            signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
            done.wait(0.05)
    thread = threading.Thread(target=holder)
    thread.start()
    held.wait()
    old = signal.signal(signal.SIGUSR1, handler)
    sender = threading.Thread(target=send)
    try:
        with pytest.raises(Woken):
            sender.start()
            lock.acquire()
        assert not released                 # woken while the holder still held it
        assert not lock.acquire(blocking=False)
    finally:
        done.set()
        sender.join()
        thread.join()
        signal.signal(signal.SIGUSR1, old)
    assert lock.acquire(blocking=False)
    lock.release()


def test_one_event_steps_and_with_blocks_share_the_lock():
    """A thread holding the estimator's lock (as partial_fit does) makes learn_one wait."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(int)
    est = OnlineKernelClassifier(gamma=0.5, budget=20).partial_fit(X[:110], y[:110])
    est.learn_one(X[110], y[110].item())        # the compiled step is built
    t, order = est.t_, []

    def learner():
        est.learn_one(X[111], y[111].item())
        order.append("learned")
    thread = threading.Thread(target=learner)
    with locked(est):
        thread.start()
        thread.join(0.05)
        order.append("released")
    thread.join()
    assert order == ["released", "learned"]
    assert est.t_ == t + 1
