"""The estimator's re-entrant lock (okl._locks), taken from C by the one-event steps.

`threading.RLock` does the same, but each of its calls from C parses its arguments as a
Python call: 4 of them were about 0.1 us of an event of 0.8-1.8 us (docs/streaming.md).
A `ReentrantLock` is taken and given back in C (`cacquire` / `crelease`) and, for Python
code, through `acquire` / `release` and ``with``.  Its owner and count change only while
the calling thread holds the GIL; a thread that must wait releases the GIL, and a signal
(Ctrl-C) interrupts the wait as it does `threading.RLock`'s.
"""
from cpython.exc cimport PyErr_CheckSignals
from cpython.pythread cimport (
    NOWAIT_LOCK, PyThread_acquire_lock, PyThread_allocate_lock, PyThread_free_lock,
    PyThread_release_lock,
)


cdef extern from "pythread.h":
    ctypedef enum PyLockStatus:
        PY_LOCK_FAILURE
        PY_LOCK_ACQUIRED
        PY_LOCK_INTR
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock lock, long long microseconds,
                                             int intr_flag) nogil
    unsigned long PyThread_get_thread_ident()


cdef class ReentrantLock:
    """A re-entrant lock: the thread that holds it may take it again, and holds it until it
    gave it back as often (as `threading.RLock`)."""

    def __cinit__(self):
        self.lock = PyThread_allocate_lock()
        if self.lock == NULL:
            raise MemoryError()
        self.owner, self.count = 0, 0

    def __dealloc__(self):
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    cdef int cacquire(self) except -1:
        """Take the lock, waiting (without the GIL) while another thread holds it."""
        cdef unsigned long me = PyThread_get_thread_ident()
        cdef PyLockStatus status
        if self.count > 0 and self.owner == me:
            self.count += 1
            return 0
        if not PyThread_acquire_lock(self.lock, NOWAIT_LOCK):
            while True:
                with nogil:
                    status = PyThread_acquire_lock_timed(self.lock, -1, 1)
                if status == PY_LOCK_ACQUIRED:
                    break
                PyErr_CheckSignals()       # a signal woke the wait: its handler may raise
        self.owner, self.count = me, 1
        return 0

    cdef int crelease(self) except -1:
        """Give the lock back once."""
        if self.count == 0 or self.owner != PyThread_get_thread_ident():
            raise RuntimeError("cannot release un-acquired lock")
        self.count -= 1
        if self.count == 0:
            self.owner = 0
            PyThread_release_lock(self.lock)
        return 0

    def acquire(self, bint blocking=True):
        """Take the lock (True), or, with ``blocking=False``, only when no other thread holds
        it (True) and else return False at once."""
        if not blocking and not (self.count > 0 and self.owner == PyThread_get_thread_ident()):
            if not PyThread_acquire_lock(self.lock, NOWAIT_LOCK):
                return False
            self.owner, self.count = PyThread_get_thread_ident(), 1
            return True
        self.cacquire()
        return True

    def release(self):
        self.crelease()

    def __enter__(self):
        self.cacquire()
        return True

    def __exit__(self, *exc_info):
        self.crelease()

    def __reduce__(self):
        raise TypeError("a lock cannot be pickled (okl keeps it outside the estimator)")
