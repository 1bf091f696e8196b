cimport numpy as cnp

cdef int cdict_into(dict x, tuple keys, double* out) except -1
cdef int carray_into(object x, cnp.npy_intp d, double* out) except -1
