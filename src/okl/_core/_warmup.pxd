# The first WARMUP events of a learner, compiled (docs/defaults.md, sections 2 and 4):
# gamma="scale"'s width (`Width`) and eta="scaled"'s kernel mean (`KernelMean`); `Warmup` is
# what a one-event step keeps of them.  The loops that take them cimport these classes; their
# NumPy twins are in okl/_numpy/warmup.py.
from okl._core._kernels cimport KernelSpec


cdef enum:
    C_WARMUP = 100          # events the warm-ups last (okl._numpy.warmup.WARMUP)


cdef struct Moments:
    # the running moments of the entries of the rows taken (okl._numpy.warmup.WidthMoments)
    double rows
    double mean
    double m2
    double shift


cdef double cpairwise_sum(const double* a, Py_ssize_t n) noexcept nogil


cdef class Width:
    cdef Moments moments
    cdef readonly Py_ssize_t n_features
    cdef readonly double factor
    cdef readonly double gamma              # the width of the rows taken so far
    cdef readonly bint warming              # fewer than WARMUP rows taken
    cdef double[::1] work
    cdef bint cadd(self, const double* x) noexcept nogil


cdef class KernelMean:
    cdef readonly bint active               # still measured (fewer than WARMUP steps taken)
    cdef readonly bint rows                 # over the rows learned, not the model's centres
    cdef readonly double final              # kbar once fixed (kernel_mean_)
    cdef readonly double lipschitz          # M of the loss (the step's is M kbar)
    cdef public double gamma                # the width of a model without one (features)
    cdef KernelSpec spec
    cdef readonly Py_ssize_t n_features
    cdef Py_ssize_t m, cap, n_pending
    cdef double t_synced                    # the steps taken at the last `csync`
    cdef readonly double total              # rows: the sum of K over the pairs of rows
    cdef double total_gamma                 # rows: the width `total` is of (NaN: none)
    cdef object _points, _dist, _values, _kept
    cdef double* points                     # (cap, d) the points, in slot order
    cdef double* dist                       # packed: row j holds the j distances to 0..j-1
    cdef double* values                     # work: kernel values of the packed distances
    cdef double* kept                       # centres: the packed kernel values at kept_gamma
    cdef double kept_gamma                  # (NaN: none) of the pairs of points < kept_m
    cdef Py_ssize_t kept_m, total_m         # total: of the first total_m points at kept_gamma
    cdef int reserve(self, Py_ssize_t m) except -1
    cdef void _point(self, Py_ssize_t j, const double* x) noexcept nogil
    cdef void csync(self, const double* C, Py_ssize_t n, Py_ssize_t budget,
                    double t) noexcept nogil
    cdef void cappend(self, const double* x) noexcept nogil
    cdef double cmean(self, double gamma) noexcept nogil
    cdef double cstep_lipschitz(self, double gamma, double t) noexcept nogil
    cdef double clipschitz(self, const double* C, Py_ssize_t n, Py_ssize_t budget, double gamma,
                           double t) noexcept nogil
    cdef void cafter(self, const double* C, Py_ssize_t n, Py_ssize_t budget, double gamma,
                     double t) noexcept nogil


cdef class Warmup:
    cdef public Width width                 # None once the width stays
    cdef public KernelMean kbar             # None once kbar is fixed
    cdef object width_state, rows_state     # what `cstore` last stored on the learner
    cdef int cload(self, dict attrs, double gamma) except -1
    cdef bint cadd(self, const double* x) noexcept nogil
    cdef void cstop_width(self) noexcept
    cdef double cstore(self, dict attrs) except? -1.0
