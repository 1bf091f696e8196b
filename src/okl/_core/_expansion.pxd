from okl._core._kernels cimport KernelSpec


cpdef enum BudgetPolicy:
    OLDEST = 0      # replace the centre that entered first (NORMA truncation)
    SMALLEST = 1    # drop the centre of smallest |coefficient|, the newcomer included
    MERGE = 2       # merge the smallest |coefficient| into its best partner (BSGD, _merge.pxd)


cdef enum:
    NO_EVICTION = -1    # cvictim: there is room, nothing leaves
    NEWCOMER = -2       # cvictim: the new centre itself is the one that leaves


cdef class KernelExpansion:
    # f(x) = scale * sum_{i < n_support} coef[i] K(centers[i], x)
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t n_support
    cdef readonly Py_ssize_t capacity
    cdef readonly Py_ssize_t budget          # 0 means unbounded
    cdef readonly int policy
    cdef readonly double scale
    cdef readonly Py_ssize_t n_rescale       # renormalisations of the scale so far
    cdef readonly Py_ssize_t next_slot       # slot replaced next under OLDEST
    cdef readonly KernelSpec kernel
    cdef object _centers, _coef, _sqnorms, _kbuf, _zbuf   # owning NumPy buffers
    cdef double* centers                     # (capacity, n_features), C order
    cdef double* coef                        # (capacity,) raw, times scale
    cdef double* sqnorms                     # (capacity,) ||centers[i]||^2: the rows' distances use it
    cdef double* kbuf                        # (capacity,) K(centers[i], x) work space
    cdef const double* kbuf_x                # the x of kbuf, NULL once kbuf or a centre changes
    cdef Py_ssize_t kbuf_n                   # n_support when kbuf was computed
    cdef bint kbuf_ready                     # cadd -> cmerge: kbuf holds K(centers[i], newcomer)
    cdef double* zbuf                        # (n_features,) the merged point (MERGE)
    cdef readonly Py_ssize_t n_merges        # merges so far (MERGE)
    cdef public bint track_norm              # compute norm_change (the kernel PA tracks ||f||_K)
    cdef readonly double norm_change         # what the budget took from ||f + a K(x, .)||_K^2 in the last cadd
    # undo log of the current chunk: the centres it overwrites (see checkpoint)
    cdef object _log_slots_arr, _log_rows_arr, _log_sq_arr
    cdef Py_ssize_t* log_slots
    cdef double* log_rows
    cdef double* log_sq
    cdef Py_ssize_t log_base, log_len, log_cap
    cdef bint log_lost

    cdef _allocate(self, Py_ssize_t capacity)
    cdef void cvalues(self, const double* x) noexcept nogil
    cdef double cpredict(self, const double* x) noexcept nogil
    cdef void cshrink(self, double factor) noexcept nogil
    cdef void cshrink_coef(self, double factor) noexcept nogil
    cdef void cadd_coef(self, Py_ssize_t i, double a) noexcept nogil
    cdef void caxpy_coef(self, double a, const double* v) noexcept nogil
    cdef Py_ssize_t cvictim(self, double a) noexcept nogil
    cdef bint cadd(self, const double* x, double xx, double a) noexcept nogil
    cdef void cmerge(self) noexcept nogil
    cdef void cwrite(self, Py_ssize_t slot, const double* x, double xx, double c) noexcept nogil
    cdef void cset_gamma(self, double gamma) noexcept nogil
