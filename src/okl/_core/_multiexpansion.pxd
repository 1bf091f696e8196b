from okl._core._kernels cimport KernelSpec


cdef class MultiExpansion:
    # f(x) = scale * sum_{i < n_support} coef[i, :] K(centers[i], x), a vector of n_classes scores
    cdef readonly Py_ssize_t n_features
    cdef readonly Py_ssize_t n_classes
    cdef readonly Py_ssize_t n_support
    cdef readonly Py_ssize_t capacity
    cdef readonly Py_ssize_t budget          # 0 means unbounded
    cdef readonly int policy                 # a BudgetPolicy code (_expansion.pxd)
    cdef readonly double scale
    cdef readonly Py_ssize_t n_rescale
    cdef readonly Py_ssize_t next_slot       # slot replaced next under OLDEST
    cdef readonly Py_ssize_t n_merges
    cdef readonly KernelSpec kernel
    cdef object _centers, _coef, _sqnorms, _kbuf, _nbuf, _wbuf, _cbuf, _zbuf, _abuf
    cdef double* centers                     # (capacity, n_features)
    cdef double* coef                        # (capacity, n_classes) raw, times scale
    cdef double* sqnorms                     # (capacity,)
    cdef double* kbuf                        # (capacity,) K(centers[i], x) work space
    cdef double* nbuf                        # (capacity,) ||coef[i]||^2 (raw), kept up to date
    cdef double* wbuf                        # (capacity,) the merge's bounds (MERGE)
    cdef double* cbuf                        # (capacity,) a_m . a_i (MERGE)
    cdef const double* kbuf_x                # the x of kbuf, NULL once kbuf or a centre changes
    cdef Py_ssize_t kbuf_n
    cdef bint kbuf_ready                     # cadd -> cmerge: kbuf holds K(centers[i], newcomer)
    cdef double* zbuf                        # (n_features,) the merged point
    cdef double* abuf                        # (n_classes,) the merged coefficient vector
    cdef public bint track_norm              # compute norm_change (the kernel PA tracks ||f||_K)
    cdef readonly double norm_change         # what the last cadd's budget took from sum_c ||f_c||^2

    cdef _allocate(self, Py_ssize_t capacity)
    cdef void cvalues(self, const double* x) noexcept nogil
    cdef void cscores(self, const double* x, double* out) noexcept nogil
    cdef void cshrink(self, double factor) noexcept nogil
    cdef double csqnorm_row(self, Py_ssize_t i) noexcept nogil
    cdef Py_ssize_t cvictim(self, double aa) noexcept nogil
    cdef bint cadd(self, const double* x, double xx, const double* a) noexcept nogil
    cdef double cweighted(self, const double* y, const double* v, Py_ssize_t n) noexcept nogil
    cdef void cmerge(self) noexcept nogil
    cdef void cset_gamma(self, double gamma) noexcept nogil
    cdef void cwrite(self, Py_ssize_t slot, const double* x, double xx,
                     const double* c) noexcept nogil
    cdef double crow_dot(self, Py_ssize_t i, const double* v) noexcept nogil


cdef class SparseMultiExpansion(MultiExpansion):
    # The kernel PA's layout (docs/multiclass.md, section 1): coef[i, :] has at most two
    # nonzeros, (pcls[2 i + p], pval[2 i + p]) for p = 0, 1 (raw, times scale; class -1: none)
    cdef object _pcls, _pval
    cdef Py_ssize_t* pcls                    # (capacity, 2)
    cdef double* pval                        # (capacity, 2)

    cdef double cpairs_dot(self, Py_ssize_t i, const Py_ssize_t* cls,
                           const double* val) noexcept nogil
    cdef void cwrite_pairs(self, Py_ssize_t slot, const double* x, double xx,
                           const Py_ssize_t* cls, const double* val) noexcept nogil


# The merge search with vector coefficients (docs/multiclass.md, section 5), also taken by the
# multi-kernel classifier's merge (_multikernel.pyx) on its leading learner's coefficients.
cdef Py_ssize_t cmulti_merge_find(const double* centers, const double* coef, Py_ssize_t n,
                                  Py_ssize_t d, Py_ssize_t k, double gamma, const double* krow,
                                  const double* norms, Py_ssize_t m, double* work,
                                  double* cwork, double* h_out, double* az_out,
                                  double* loss_out) noexcept nogil
