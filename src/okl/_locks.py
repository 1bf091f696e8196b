"""One call at a time: a re-entrant lock per estimator, kept outside it.

`locked(estimator)` serialises the calls that read or write a model; two
threads calling partial_fit on one estimator get the result of one serial
order, and two estimators learn in two threads at once.  The lock lives
outside the estimator, so pickling and cloning never see it.  It is a
`okl._core._lock.ReentrantLock`, which the compiled one-event steps take in C.  `VALIDATED`
holds the parameter values each estimator was last validated with (okl._base).
"""
import functools
import threading
import weakref

from okl._core._lock import ReentrantLock

_LOCKS = weakref.WeakKeyDictionary()
VALIDATED = weakref.WeakKeyDictionary()
GUARD = threading.Lock()        # held only while a lock or a record is looked up


def locked(estimator):
    """The re-entrant lock of `estimator` (a context manager)."""
    with GUARD:
        lock = _LOCKS.get(estimator)
        if lock is None:
            lock = _LOCKS[estimator] = ReentrantLock()
    return lock


def serialised(method):
    """Run `method` under the estimator's lock (readers wait for a running partial_fit)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with locked(self):
            return method(self, *args, **kwargs)
    return wrapper
