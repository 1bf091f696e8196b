from okl._core._kernels cimport KernelSpec


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


cdef class FeatureRow:
    # z(x) of one row into a caller's buffer: random Fourier or Nystroem features
    cdef readonly int kind                  # 0: Fourier, 1: Nystroem
    cdef readonly Py_ssize_t n_features, n_components, n_landmarks
    cdef readonly KernelSpec kernel         # the learner's kernel (K(x, x); Nystroem's rows)
    cdef object keep                        # the arrays the pointers below read
    cdef const double* W                    # Fourier (d, D); Nystroem's landmarks (B, d)
    cdef const double* b                    # Fourier (D,)
    cdef const double* components           # Nystroem's C (B, r), packed (_rowmat.h)
    cdef bint lower                         # C[i, j] = 0 for i < j: read from row j on
    cdef double c                           # Fourier's sqrt(2 / D)
    cdef double* kbuf                       # Nystroem's kernel row (B,)
    cdef const double* lt                   # Nystroem's L^T (d, B), packed
    cdef const double* ll                   # Nystroem's ||l_i||^2 (B,)

    cdef void cmap(self, const double* x, double* z) noexcept nogil


cdef class MultiLinearModel:
    # s(z) = scale * W_raw z, W_raw (n_classes, n_components): a feature model of k classes
    cdef readonly Py_ssize_t n_classes, n_components
    cdef readonly double scale
    cdef readonly Py_ssize_t n_rescale
    cdef object _W
    cdef double* W

    cdef void cscores(self, const double* z, double* out) noexcept nogil
    cdef void cshrink(self, double factor) noexcept nogil
    cdef bint cadd(self, const double* z, double zz, const double* a) noexcept nogil
