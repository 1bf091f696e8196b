cdef class LinearModel:
    # f(z) = scale * <w_raw, z>: the fixed-size feature model (the offset is the learner's)
    cdef readonly Py_ssize_t n_components
    cdef readonly double scale
    cdef readonly Py_ssize_t n_rescale
    cdef object _w
    cdef double* w

    cdef double cpredict(self, const double* z) noexcept nogil
    cdef void cshrink(self, double factor) noexcept nogil
    cdef bint cadd(self, const double* z, double zz, double a) noexcept nogil
