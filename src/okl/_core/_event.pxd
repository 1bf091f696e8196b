cimport numpy as cnp

cdef int cdict_into(dict x, tuple keys, double* out) except -1
cdef int carray_into(object x, cnp.npy_intp d, double* out) except -1
cdef unsigned long long dict_version(dict x) noexcept
