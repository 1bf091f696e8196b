"""KernelExpansion: the growable kernel expansion every kernel learner updates.

The model is f(x) = scale * sum_i coef[i] K(centers[i], x).  A multiplicative
shrink of f costs O(1) (`_lazy.pxd`).  Centres live in one C-contiguous buffer
whose capacity is reserved before a chunk, so no step allocates.  Nothing
outside this class writes its buffers: loops call its cdef operations, and
the budget policy alone decides which centre leaves.
"""
import numpy as np

from okl._numpy.kernels import kernel_record

from libc.math cimport fabs, isfinite
from libc.string cimport memcpy

from okl._core._kernels cimport (
    KernelSpec, Kernel, cdot, ckernel, ckernel_row_norms, cself, kernel_spec, spec_params)
from okl._core._lazy cimport RENORMALISED, ZEROED, cshrink_lazy
from okl._core._merge cimport cmerge_find, cmerge_point


cdef class KernelExpansion:
    """f(x) = scale * sum_i coef[i] K(centers[i], x), with a lazy global scale.

    Parameters
    ----------
    n_features : int
    kernel : dict
        The kernel's record, `okl.kernels.kernel_params` (its code and every
        parameter by name); kept as one `KernelSpec`.
    budget : int
        Maximum number of centres, 0 for no limit.
    policy : int
        A `BudgetPolicy` code: which centre leaves when a new one would exceed
        the budget.
    """

    def __init__(self, Py_ssize_t n_features, kernel, Py_ssize_t budget=0, int policy=OLDEST):
        cdef KernelSpec spec = kernel_spec(kernel)
        if n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}.")
        if budget < 0:
            raise ValueError(f"budget must be >= 0 (0 = unbounded), got {budget}.")
        if policy not in (OLDEST, SMALLEST, MERGE):
            raise ValueError(f"Unknown budget policy code {policy}.")
        if policy == MERGE and spec.kind != Kernel.GAUSSIAN:
            raise ValueError("The merge budget policy needs the 'gaussian' kernel; use "
                             "budget_policy='oldest' or 'smallest' with this kernel.")
        self.n_features = n_features
        self.kernel = spec
        self.budget = budget
        self.policy = policy
        self.scale = 1.0
        self.n_support = 0
        self.n_rescale = 0
        self.next_slot = 0
        self.capacity = 0
        self.n_merges = 0
        self.track_norm = False
        self.norm_change = 0.0
        self._zbuf = np.empty(n_features, dtype=np.float64)
        cdef double[::1] z_view = self._zbuf
        self.zbuf = &z_view[0]
        self._allocate(min(self._room(), 16) if budget else 16)
        self._start_log(0)

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
        self.kbuf_x = NULL
        self.capacity = capacity

    def _room(self):
        """Slots a full budget needs: B, or B + 1 under MERGE (the newcomer's, until the merge)."""
        return self.budget + 1 if self.policy == MERGE else self.budget

    def reserve(self, Py_ssize_t n_new):
        """Make room for `n_new` more centres (capped by the budget), doubling."""
        cdef Py_ssize_t need = self.n_support + n_new
        if self.budget:
            need = min(need, self._room())
        if need > self.capacity:
            target = max(need, 2 * self.capacity)
            if self.budget:
                target = min(target, self._room())
            self._allocate(target)

    # -- the hot path (nogil, no allocation) -------------------------------------

    cdef void cvalues(self, const double* x) noexcept nogil:
        """kbuf[i] = K(centers[i], x) for every centre.

        Callers read kbuf, never write it: a merging `cadd` at the same x (same
        pointer, no centre written since) reuses it as the newcomer's row.  The
        centres' cached norms give the Gaussian and Matern distances at the cost
        of a dot product (`ckernel_row_norms`, docs/algorithms.md, section 0.4).
        """
        ckernel_row_norms(&self.kernel, x, cdot(x, x, self.n_features), self.centers,
                          self.sqnorms, self.n_support, self.n_features, self.kbuf)
        self.kbuf_x = x
        self.kbuf_n = self.n_support

    cdef double cpredict(self, const double* x) noexcept nogil:
        """f(x); leaves K(centers[i], x) in kbuf."""
        if self.n_support == 0:
            return 0.0
        self.cvalues(x)
        return self.scale * cdot(self.coef, self.kbuf, self.n_support)

    cdef void cshrink(self, double factor) noexcept nogil:
        """f <- factor f in O(1); factor <= 0 empties the expansion exactly."""
        if factor == 1.0:
            return
        if factor <= 0.0:
            self.n_support = 0
            self.next_slot = 0
            self.scale = 1.0
            return
        if cshrink_lazy(self.coef, self.n_support, &self.scale, factor) == RENORMALISED:
            self.n_rescale += 1

    cdef void cshrink_coef(self, double factor) noexcept nogil:
        """f <- factor f in O(1); factor <= 0 zeroes every coefficient and keeps the centres."""
        if factor != 1.0 and cshrink_lazy(self.coef, self.n_support, &self.scale,
                                          factor) == RENORMALISED:
            self.n_rescale += 1

    cdef void cadd_coef(self, Py_ssize_t i, double a) noexcept nogil:
        """f <- f + a K(centers[i], .)."""
        self.coef[i] += a / self.scale

    cdef void caxpy_coef(self, double a, const double* v) noexcept nogil:
        """f <- f + a sum_i v[i] K(centers[i], .) (v over the n_support centres)."""
        cdef Py_ssize_t i
        cdef double c = a / self.scale
        for i in range(self.n_support):
            self.coef[i] += c * v[i]

    cdef Py_ssize_t cvictim(self, double a) noexcept nogil:
        """The slot that leaves if a centre of coefficient `a` is added now.

        NO_EVICTION while there is room; NEWCOMER when the policy drops the
        new centre itself (SMALLEST, |a| no larger than every |coef|).
        """
        cdef Py_ssize_t i, slot
        if self.budget == 0 or self.n_support < self.budget or self.policy == MERGE:
            return NO_EVICTION          # MERGE adds first, then merges (cadd, cmerge)
        if self.policy == OLDEST:
            return self.next_slot
        slot = 0
        for i in range(1, self.n_support):
            if fabs(self.coef[i]) < fabs(self.coef[slot]):
                slot = i
        if fabs(a / self.scale) <= fabs(self.coef[slot]):
            return NEWCOMER
        return slot

    cdef bint cadd(self, const double* x, double xx, double a) noexcept nogil:
        """f <- f + a K(x, .), within the budget; False when the coefficient is not finite.

        With `track_norm`, `norm_change` = ||f'||^2 - ||f + a K(x, .)||^2 for the
        model f' the budget leaves: 0 with room, -(2 a f(x) + a^2 K(x, x)) when
        the newcomer is dropped, r (r K(x_o, x_o) - 2 (f + a K(x, .))(x_o)) when
        r K(x_o, .) is removed, the merge's own change (`cmerge`).  The kernel PA
        keeps ||f||_K exact with it whatever the policy (docs/budget.md).
        """
        cdef double c = a / self.scale, r, f_o
        cdef Py_ssize_t slot, d = self.n_features
        cdef const double* x_o
        if not isfinite(c):
            return False
        self.norm_change = 0.0
        if self.policy == MERGE and self.budget and self.n_support >= self.budget:
            # kbuf still holds K(centers[i], x) when the step predicted at this x
            self.kbuf_ready = x == self.kbuf_x and self.kbuf_n == self.n_support
            self.cwrite(self.n_support, x, xx, c)       # slot B: never logged (>= log_base)
            self.n_support += 1
            self.cmerge()
            return True
        slot = self.cvictim(a)
        if slot == NEWCOMER:
            if self.track_norm:     # kbuf holds K(centers, x) when the step predicted at this x
                self.norm_change = -a * (a * cself(&self.kernel, xx) + 2.0 * (
                    self.scale * cdot(self.coef, self.kbuf, self.n_support)
                    if x == self.kbuf_x and self.kbuf_n == self.n_support else self.cpredict(x)))
            return True
        if slot == NO_EVICTION:
            slot = self.n_support
            self.n_support += 1
        else:
            if self.track_norm:
                x_o = self.centers + slot * d
                r = self.scale * self.coef[slot]
                f_o = self.cpredict(x_o) + a * ckernel(&self.kernel, x, x_o, d)
                self.norm_change = r * (r * cself(&self.kernel, self.sqnorms[slot]) - 2.0 * f_o)
            if self.policy == OLDEST:
                self.next_slot = (slot + 1) % self.budget
        self.cwrite(slot, x, xx, c)
        return True

    cdef void cmerge(self) noexcept nogil:
        """B + 1 centres -> B: merge the smallest |coef| into its best partner (BSGD).

        `cmerge_find` works on the raw coefficients (the choice is invariant to
        the common scale) and reuses the newcomer's kernel row in kbuf when
        `cadd` found it there; z and c_z go to the partner's slot, the last row
        moves into the freed slot m.  Both writes go through `cwrite`, so the
        undo log holds every overwritten centre (at most two per step).
        """
        cdef Py_ssize_t n = self.n_support, d = self.n_features, last = n - 1, m, partner
        cdef double h, cz, loss
        cdef double fm, fn, fz, cm, cn
        partner = cmerge_find(self.centers, self.coef, n, d, self.kernel.gamma, self.kbuf,
                              self.kbuf_ready, &m, &h, &cz, &loss)
        self.kbuf_ready = False
        self.kbuf_x = NULL              # kbuf now holds the search's work
        if partner >= 0:
            cmerge_point(self.centers + m * d, self.centers + partner * d, d, h, self.zbuf)
        if self.track_norm:
            # ||f'||^2 - ||f||^2 = 2 (c_z f(z) - c_m f(x_m) - c_n f(x_n)) + degradation for a
            # merge, c_m^2 - 2 c_m f(x_m) for a removal (f: the B + 1 centres; raw units)
            cm = self.coef[m]
            ckernel_row_norms(&self.kernel, self.centers + m * d, self.sqnorms[m],
                              self.centers, self.sqnorms, n, d, self.kbuf)
            fm = cdot(self.coef, self.kbuf, n)
            if partner >= 0:
                cn = self.coef[partner]
                ckernel_row_norms(&self.kernel, self.centers + partner * d,
                                  self.sqnorms[partner], self.centers, self.sqnorms, n, d,
                                  self.kbuf)
                fn = cdot(self.coef, self.kbuf, n)
                ckernel_row_norms(&self.kernel, self.zbuf, cdot(self.zbuf, self.zbuf, d),
                                  self.centers, self.sqnorms, n, d, self.kbuf)
                fz = cdot(self.coef, self.kbuf, n)
                self.norm_change = 2.0 * (cz * fz - cm * fm - cn * fn) + loss
            else:
                self.norm_change = cm * cm - 2.0 * cm * fm
            self.norm_change *= self.scale * self.scale
        if partner >= 0:
            self.cwrite(partner, self.zbuf, cdot(self.zbuf, self.zbuf, d), cz)
            self.n_merges += 1
        if m != last:
            self.cwrite(m, self.centers + last * d, self.sqnorms[last], self.coef[last])
        self.n_support = last

    cdef void cset_gamma(self, double gamma) noexcept nogil:
        """The kernel's width is gamma (gamma="scale"'s warm-up): centres and coefficients
        stay, the kernel values are re-read."""
        self.kernel.gamma = gamma
        self.kbuf_x = NULL
        self.kbuf_ready = False

    def set_gamma(self, double gamma):
        """The kernel's width is gamma (`cset_gamma`)."""
        self.cset_gamma(gamma)

    cdef void cwrite(self, Py_ssize_t slot, const double* x, double xx, double c) noexcept nogil:
        """Put the centre x with raw coefficient c in `slot`, logging what it overwrites."""
        cdef Py_ssize_t d = self.n_features
        self.kbuf_x = NULL
        if slot < self.log_base:
            if self.log_len < self.log_cap:
                self.log_slots[self.log_len] = slot
                memcpy(self.log_rows + self.log_len * d, self.centers + slot * d,
                       d * sizeof(double))
                self.log_sq[self.log_len] = self.sqnorms[slot]
                self.log_len += 1
            else:
                self.log_lost = True
        memcpy(self.centers + slot * d, x, d * sizeof(double))
        self.sqnorms[slot] = xx
        self.coef[slot] = c

    # -- Python face -------------------------------------------------------------

    def predict(self, const double[:, ::1] X):
        """f at every row of X (float64, C order, n_features columns)."""
        cdef Py_ssize_t n_rows = X.shape[0], n = self.n_support, d = self.n_features, r
        if X.shape[1] != d:
            raise ValueError(f"X has {X.shape[1]} columns, the expansion {d}.")
        out_arr = np.zeros(n_rows, dtype=np.float64)
        if n == 0 or n_rows == 0:
            return out_arr
        cdef double[::1] out = out_arr
        cdef double[::1] kb = np.empty(n, dtype=np.float64)
        with nogil:
            for r in range(n_rows):
                ckernel_row_norms(&self.kernel, &X[r, 0], cdot(&X[r, 0], &X[r, 0], d),
                                  self.centers, self.sqnorms, n, d, &kb[0])
                out[r] = self.scale * cdot(self.coef, &kb[0], n)
        return out_arr

    def add(self, const double[::1] x, double a):
        """f <- f + a K(x, .) within the budget (a Python face of the hot path)."""
        if x.shape[0] != self.n_features:
            raise ValueError(f"x has {x.shape[0]} features, the expansion {self.n_features}.")
        self.reserve(1)
        if not self.cadd(&x[0], cdot(&x[0], &x[0], self.n_features), a):
            raise FloatingPointError(f"The coefficient {a} / scale is not finite.")

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
        """The kernel's record (`okl.kernels.kernel_params`), a new dict."""
        return spec_params(self.kernel)

    # -- undo for atomic chunks ----------------------------------------------------

    def _start_log(self, Py_ssize_t n_writes):
        """An empty undo log with room for `n_writes` overwritten centres."""
        cdef Py_ssize_t cap = max(n_writes, 1), d = self.n_features
        self._log_slots_arr = np.empty(cap, dtype=np.intp)
        self._log_rows_arr = np.empty((cap, d), dtype=np.float64)
        self._log_sq_arr = np.empty(cap, dtype=np.float64)
        cdef Py_ssize_t[::1] s_view = self._log_slots_arr
        cdef double[:, ::1] r_view = self._log_rows_arr
        cdef double[::1] q_view = self._log_sq_arr
        self.log_slots, self.log_rows, self.log_sq = &s_view[0], &r_view[0, 0], &q_view[0]
        self.log_cap = n_writes
        self.log_len = 0
        self.log_base = self.n_support
        self.log_lost = False

    def checkpoint(self, Py_ssize_t n_new):
        """Start the undo log of the next `n_new` steps; return what `restore` needs.

        The coefficients are copied (O(m): a renormalisation touches them all);
        a centre is copied only when a step overwrites one that existed before
        the chunk (a full budget, or an expansion emptied by a shrink <= 0), so
        the log costs O(n_new d), not O(m d).
        """
        if self.policy == MERGE:
            n_new = 2 * n_new           # a merge overwrites the partner and slot m
        if self.log_cap < n_new or self.log_cap > 4 * max(n_new, 16):
            self._start_log(n_new)
        self.log_len = 0
        self.log_base = self.n_support
        self.log_lost = False
        return (self.n_support, self.scale, self.n_rescale, self.next_slot,
                self._coef[:self.n_support].copy(), self.kernel.gamma)

    def restore(self, state):
        """Return to a `checkpoint`: replay the log backwards, then the coefficients."""
        n, scale, n_rescale, next_slot, coef, gamma = state
        cdef Py_ssize_t k, d = self.n_features, slot
        if self.log_lost or n > self.capacity:
            raise RuntimeError("The undo log of this chunk is incomplete; the expansion cannot "
                               "be restored (a chunk wrote more centres than it reserved).")
        for k in range(self.log_len - 1, -1, -1):
            slot = self.log_slots[k]
            memcpy(self.centers + slot * d, self.log_rows + k * d, d * sizeof(double))
            self.sqnorms[slot] = self.log_sq[k]
        self._coef[:n] = coef
        self.kbuf_x = NULL
        self.n_support, self.scale = n, scale
        self.n_rescale, self.next_slot = n_rescale, next_slot
        self.kernel.gamma = gamma
        self.log_len = 0

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
        # a state saved before a kernel parameter existed: its default
        cdef KernelExpansion self = cls(state["n_features"], kernel_record(state, complete=True),
                                        state["budget"], state["policy"])
        n = len(state["coef"])
        self.reserve(n)
        self._centers[:n] = state["centers"]
        self._coef[:n] = state["coef"]
        self._sqnorms[:n] = state["sqnorms"]
        self.n_support = n
        self.scale = state["scale"]
        self.n_rescale = state["n_rescale"]
        self.next_slot = state["next_slot"]
        self.log_base = n
        return self

    def __reduce__(self):
        return (_rebuild, (self.get_state(),))


def _rebuild(state):
    return KernelExpansion.from_state(state)
