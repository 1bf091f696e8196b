from cpython.pythread cimport PyThread_type_lock


cdef class ReentrantLock:
    cdef PyThread_type_lock lock
    cdef unsigned long owner        # the thread holding it (count > 0)
    cdef Py_ssize_t count           # how many times that thread took it
    cdef int cacquire(self) except -1
    cdef int crelease(self) except -1
