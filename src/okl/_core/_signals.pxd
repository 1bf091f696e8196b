# Ctrl-C inside the nogil loops.  A loop counts the multiply-adds of its steps;
# every WORK_PER_CHECK of them (about a millisecond) it takes the GIL for a
# moment and lets Python run its signal handlers.  When one raises (Ctrl-C:
# KeyboardInterrupt) the loop stops at once, and its def wrapper raises that
# exception with `craise_pending()` once the GIL is back; the estimator's
# template then restores the model from its checkpoint.

cdef extern from "Python.h":
    int PyErr_CheckSignals()    # -1 with the handler's exception set (declared noexcept here)

cdef extern from *:
    """
    static int okl_raise_pending(void) { return -1; }
    """
    int okl_raise_pending() except -1     # -1: Cython raises the exception already set


cdef enum:
    WORK_PER_CHECK = 1 << 22


cdef inline bint cinterrupted(Py_ssize_t* work, Py_ssize_t step_work) noexcept nogil:
    """Add `step_work` multiply-adds; every WORK_PER_CHECK, True if a signal handler raised."""
    cdef int status
    work[0] += step_work + 1
    if work[0] < WORK_PER_CHECK:
        return False
    work[0] = 0
    with gil:
        status = PyErr_CheckSignals()
    return status != 0


cdef inline int craise_pending() except -1:
    """Raise the exception a signal handler left set (call with the GIL, after the loop)."""
    return okl_raise_pending()


cdef inline int craise_signals() except -1:
    """Run Python's signal handlers now and raise what one raised.

    A one-event step calls it after its prediction, before its first write: CPython
    runs the handlers when a call returns, so a Ctrl-C that came during the step
    would otherwise be raised after the model changed and before the caller stored
    the step's counters.
    """
    if PyErr_CheckSignals() != 0:
        return okl_raise_pending()
    return 0
