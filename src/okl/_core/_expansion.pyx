"""KernelExpansion: the growable kernel expansion every pointwise learner updates.

The model is f(x) = scale * sum_i coef[i] K(centers[i], x).  A multiplicative
shrink of f costs O(1) (it multiplies `scale`); the coefficients are rescaled
only when `scale` leaves [1e-9, 1e9].  Centres live in one C-contiguous buffer
whose capacity is reserved before a chunk, so no step allocates.
"""
import numpy as np

from libc.math cimport fabs, fmax, isfinite
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemv, dgemm, ddot

from okl._core._kernels cimport (
    Kernel, LINEAR, POLYNOMIAL, GAUSSIAN, LAPLACIAN, KernelSpec, cl1, cpowi,
    okl_dots, okl_gaussian_from_dots, okl_exp_scaled,
)

cdef double SCALE_MIN = 1e-9
cdef double SCALE_MAX = 1e9
# Above this many multiply-adds a (threaded) BLAS dgemv beats okl_dots (measured in bench/).
cdef Py_ssize_t BLAS_MIN_WORK = 1 << 17


cdef class KernelExpansion:
    """f(x) = scale * sum_i coef[i] K(centers[i], x), with a lazy global scale.

    Parameters
    ----------
    n_features : int
    kernel : int
        A `Kernel` code.
    gamma, degree, coef0 : float
        Kernel parameters (see `okl.kernels`).
    budget : int
        Maximum number of centres, 0 for no limit.
    policy : int
        A `BudgetPolicy` code: which centre leaves when a new one would exceed
        the budget.
    """

    def __init__(self, Py_ssize_t n_features, int kernel, double gamma=1.0,
                 int degree=3, double coef0=0.0, Py_ssize_t budget=0,
                 int policy=OLDEST):
        if n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}.")
        if budget < 0:
            raise ValueError(f"budget must be >= 0 (0 = unbounded), got {budget}.")
        self.n_features = n_features
        self.kernel = KernelSpec(<Kernel>kernel, gamma, coef0, degree)
        self.budget = budget
        self.policy = policy
        self.scale = 1.0
        self.n_support = 0
        self.n_rescale = 0
        self.next_slot = 0
        self.capacity = 0
        self._allocate(min(budget, 16) if budget else 16)

    # -- buffers ---------------------------------------------------------------

    cdef _allocate(self, Py_ssize_t capacity):
        """Move the buffers to a new capacity (>= n_support)."""
        cdef Py_ssize_t n = self.n_support, d = self.n_features
        centers = np.empty((capacity, d), dtype=np.float64)
        coef = np.empty(capacity, dtype=np.float64)
        sqnorms = np.empty(capacity, dtype=np.float64)
        if n:
            centers[:n] = self._centers[:n]
            coef[:n] = self._coef[:n]
            sqnorms[:n] = self._sqnorms[:n]
        self._centers, self._coef, self._sqnorms = centers, coef, sqnorms
        self._kbuf = np.empty(capacity, dtype=np.float64)
        cdef double[:, ::1] c_view = centers
        cdef double[::1] a_view = coef, s_view = sqnorms, k_view = self._kbuf
        self.centers = &c_view[0, 0]
        self.coef = &a_view[0]
        self.sqnorms = &s_view[0]
        self.kbuf = &k_view[0]
        self.capacity = capacity

    def reserve(self, Py_ssize_t n_new):
        """Make room for `n_new` more centres (capped by the budget), doubling."""
        cdef Py_ssize_t need = self.n_support + n_new
        if self.budget:
            need = min(need, self.budget)
        if need > self.capacity:
            target = max(need, 2 * self.capacity)
            if self.budget:
                target = min(target, self.budget)
            self._allocate(target)

    # -- the hot path (nogil, no allocation) -------------------------------------

    cdef void cvalues(self, const double* x, double xx) noexcept nogil:
        """kbuf[i] = K(centers[i], x) for every centre; xx = ||x||^2."""
        cdef Py_ssize_t i, n = self.n_support, d = self.n_features
        cdef const KernelSpec* k = &self.kernel
        cdef double* kb = self.kbuf
        cdef double one = 1.0, zero = 0.0
        cdef int bn = <int>n, bd = <int>d, inc = 1
        if n == 0:
            return
        if k.kind == LAPLACIAN:
            for i in range(n):
                kb[i] = cl1(x, self.centers + i * d, d)
            okl_exp_scaled(n, k.gamma, kb)
            return
        if n * d >= BLAS_MIN_WORK:
            dgemv(b"T", &bd, &bn, &one, self.centers, &bd, <double*>x, &inc,
                  &zero, kb, &inc)
        else:
            okl_dots(n, d, self.centers, x, kb)
        if k.kind == LINEAR:
            for i in range(n):
                kb[i] += k.coef0
        elif k.kind == POLYNOMIAL:
            for i in range(n):
                kb[i] = cpowi(k.gamma * kb[i] + k.coef0, k.degree)
        else:
            okl_gaussian_from_dots(n, k.gamma, xx, self.sqnorms, kb)

    cdef double cpredict(self, const double* x, double xx) noexcept nogil:
        """f(x); leaves K(centers[i], x) in kbuf."""
        cdef int bn = <int>self.n_support, inc = 1
        if bn == 0:
            return 0.0
        self.cvalues(x, xx)
        return self.scale * ddot(&bn, self.coef, &inc, self.kbuf, &inc)

    cdef void cshrink(self, double factor) noexcept nogil:
        """f <- factor * f in O(1); factor <= 0 empties the expansion exactly."""
        cdef Py_ssize_t i
        if factor <= 0.0:
            self.n_support = 0
            self.next_slot = 0
            self.scale = 1.0
            return
        self.scale *= factor
        if self.scale < SCALE_MIN or self.scale > SCALE_MAX:
            for i in range(self.n_support):
                self.coef[i] *= self.scale
            self.scale = 1.0
            self.n_rescale += 1

    cdef bint cadd(self, const double* x, double xx, double a) noexcept nogil:
        """f <- f + a K(x, .); False when the stored coefficient is not finite."""
        cdef double c = a / self.scale
        cdef Py_ssize_t i, slot, d = self.n_features
        if not isfinite(c):
            return False
        if self.budget == 0 or self.n_support < self.budget:
            slot = self.n_support
            self.n_support += 1
        elif self.policy == OLDEST:
            slot = self.next_slot
            self.next_slot = (slot + 1) % self.budget
        else:
            slot = 0
            for i in range(1, self.n_support):
                if fabs(self.coef[i]) < fabs(self.coef[slot]):
                    slot = i
            if fabs(c) <= fabs(self.coef[slot]):
                return True     # the newcomer is the smallest: it leaves at once
        memcpy(self.centers + slot * d, x, d * sizeof(double))
        self.sqnorms[slot] = xx
        self.coef[slot] = c
        return True

    # -- Python face -------------------------------------------------------------

    def predict(self, const double[:, ::1] X):
        """f at every row of X (float64, C order, n_features columns)."""
        cdef Py_ssize_t n_rows = X.shape[0], n = self.n_support, d = self.n_features
        cdef Py_ssize_t r, i, start, rows, block
        cdef double acc
        cdef const KernelSpec* k = &self.kernel
        out_arr = np.zeros(n_rows, dtype=np.float64)
        if n == 0 or n_rows == 0:
            return out_arr
        cdef double[::1] out = out_arr
        cdef double[::1] xx = np.einsum("ij,ij->i", X, X)
        if k.kind == LAPLACIAN:
            with nogil:
                for r in range(n_rows):
                    out[r] = self.cpredict(&X[r, 0], xx[r])
            return out_arr
        # blocks of rows against all centres in one dgemm: G = X_block @ centers.T
        block = max(1, min(256, (1 << 20) // n))
        cdef double[:, ::1] G = np.empty((block, n), dtype=np.float64)
        cdef double one = 1.0, zero = 0.0
        cdef int bn = <int>n, bd = <int>d, brows
        start = 0
        with nogil:
            while start < n_rows:
                rows = min(block, n_rows - start)
                brows = <int>rows
                dgemm(b"T", b"N", &bn, &brows, &bd, &one, self.centers, &bd,
                      <double*>&X[start, 0], &bd, &zero, &G[0, 0], &bn)
                for r in range(rows):
                    acc = 0.0
                    if k.kind == LINEAR:
                        for i in range(n):
                            acc += self.coef[i] * (G[r, i] + k.coef0)
                    elif k.kind == POLYNOMIAL:
                        for i in range(n):
                            acc += self.coef[i] * cpowi(k.gamma * G[r, i] + k.coef0, k.degree)
                    else:
                        okl_gaussian_from_dots(n, k.gamma, xx[start + r], self.sqnorms, &G[r, 0])
                        for i in range(n):
                            acc += self.coef[i] * G[r, i]
                    out[start + r] = self.scale * acc
                start += rows
        return out_arr

    def sq_norm(self):
        """||f||_K^2 = sum_i a_i f(centers[i]), O(n^2 d)."""
        if self.n_support == 0:
            return 0.0
        values = self.predict(self._centers[:self.n_support])
        return float(np.dot(self.coef_, values))

    @property
    def centers_(self):
        """The centres, one per row, in storage order (a copy)."""
        return self._centers[:self.n_support].copy()

    @property
    def coef_(self):
        """The coefficients a_i of f = sum_i a_i K(centers[i], .) (a copy)."""
        return self.scale * self._coef[:self.n_support]

    @property
    def raw_coef_(self):
        """The stored coefficients, before the global scale (a copy)."""
        return self._coef[:self.n_support].copy()

    @property
    def kernel_params(self):
        return dict(kernel=int(self.kernel.kind), gamma=self.kernel.gamma,
                    degree=int(self.kernel.degree), coef0=self.kernel.coef0)

    # -- undo for atomic chunks ----------------------------------------------------

    def checkpoint(self, Py_ssize_t n_new, bint may_clear):
        """What `restore` needs to undo the next `n_new` steps.

        Coefficients are always copied (renormalisation touches them all);
        centres only when the chunk can overwrite a slot: a full budget, or a
        shrink factor <= 0 that empties the expansion (`may_clear`).
        """
        cdef Py_ssize_t n = self.n_support
        overwrite = may_clear or (self.budget and n + n_new > self.budget)
        return (n, self.scale, self.n_rescale, self.next_slot,
                self._coef[:n].copy(),
                self._centers[:n].copy() if overwrite else None,
                self._sqnorms[:n].copy() if overwrite else None)

    def restore(self, state):
        """Return to a `checkpoint`."""
        n, scale, n_rescale, next_slot, coef, centers, sqnorms = state
        self._coef[:n] = coef
        if centers is not None:
            self._centers[:n] = centers
            self._sqnorms[:n] = sqnorms
        self.n_support, self.scale = n, scale
        self.n_rescale, self.next_slot = n_rescale, next_slot

    # -- state (pickle, okl.save, engine switch) -----------------------------------

    def get_state(self):
        """Scalars and arrays that rebuild this expansion exactly."""
        n = self.n_support
        return dict(
            n_features=self.n_features, budget=self.budget, policy=self.policy,
            scale=self.scale, n_rescale=self.n_rescale, next_slot=self.next_slot,
            centers=self._centers[:n].copy(), coef=self._coef[:n].copy(),
            sqnorms=self._sqnorms[:n].copy(), **self.kernel_params,
        )

    @classmethod
    def from_state(cls, state):
        cdef KernelExpansion self = cls(
            state["n_features"], state["kernel"], state["gamma"], state["degree"],
            state["coef0"], state["budget"], state["policy"])
        n = len(state["coef"])
        self.reserve(n)
        self._centers[:n] = state["centers"]
        self._coef[:n] = state["coef"]
        self._sqnorms[:n] = state["sqnorms"]
        self.n_support = n
        self.scale = state["scale"]
        self.n_rescale = state["n_rescale"]
        self.next_slot = state["next_slot"]
        return self

    def __reduce__(self):
        return (_rebuild, (self.get_state(),))


def _rebuild(state):
    return KernelExpansion.from_state(state)
