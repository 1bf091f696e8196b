"""MultiExpansion: one support set, a coefficient vector per centre (docs/multiclass.md, section 2).

f(x) = scale * sum_i coef[i, :] K(centers[i], x) in R^k: one kernel row per
event serves every class.  The shrink is lazy (`_lazy.pxd`, over all n k
coefficients), centres live in one C-contiguous buffer reserved before a
chunk.  Budgets: OLDEST (ring), SMALLEST (by ||a_i||), MERGE (BSGD with vector
coefficients, `cmulti_merge_find`, docs/multiclass.md section 5).  The NumPy
twin is okl/_numpy/multiexpansion.py.
"""
import numpy as np

from okl._numpy.kernels import kernel_record
from okl._numpy.multiexpansion import dense_layout, pair_layout

from libc.math cimport INFINITY, exp, isfinite, sqrt
from libc.string cimport memcpy, memset

from okl._core._expansion cimport MERGE, NEWCOMER, NO_EVICTION, OLDEST, SMALLEST
from okl._core._kernels cimport (
    Kernel, KernelSpec, cdot, ckernel, ckernel_row, ckernel_row_norms, cself, kernel_spec,
    okl_dots, okl_sqdists, spec_params,
)
from okl._core._lazy cimport RENORMALISED, cshrink_lazy


cdef extern from "_merge.h" nogil:
    Py_ssize_t okl_merge_argmin(Py_ssize_t n, const double* w)


cdef extern from "_multi.h" nogil:
    void okl_rows_axpy(Py_ssize_t n, Py_ssize_t k, const double* A, const double* w, double* out)


cdef double INVPHI = 0.6180339887498949     # (sqrt(5) - 1) / 2, golden-section ratio
cdef int GOLDEN_STEPS = 12                  # bracket 1/2 -> 1.6e-3; Newton polishes
cdef double PRUNE_SLACK = 1e-9              # a bound within this of the best is still tried


cdef inline double cphi(double A, double B, double C, double g, double h) noexcept nogil:
    """||a_m K(x_m, z) + a_n K(x_n, z)||^2 at z = h x_m + (1 - h) x_n (Gaussian, g = gamma d^2)."""
    cdef double kmz = exp(-g * (1.0 - h) * (1.0 - h)), knz = exp(-g * h * h)
    return A * kmz * kmz + B * knz * knz + 2.0 * C * kmz * knz


cdef double cnewton(double A, double B, double C, double g, double h, double lo,
                    double hi) noexcept nogil:
    """Polish the maximiser h of `cphi` on [lo, hi] by Newton steps on phi'(h) = 0.

    With u = 1 - h and T1, T2, T3 the three terms of phi:
    phi' = 4 g (u T1 - h T2) + 2 g (u - h) T3 and
    phi'' = 4 g (T1 (4 g u^2 - 1) + T2 (4 g h^2 - 1) + T3 (g (u - h)^2 - 1)).
    Golden section leaves h within sqrt(eps) of the top; Newton takes it to
    rounding, so both engines land on the same h.
    """
    cdef double u, T1, T2, T3, d1, d2, hn
    cdef int it
    for it in range(8):
        u = 1.0 - h
        T1 = A * exp(-2.0 * g * u * u)
        T2 = B * exp(-2.0 * g * h * h)
        T3 = 2.0 * C * exp(-g * (u * u + h * h))
        d1 = 4.0 * g * (u * T1 - h * T2) + 2.0 * g * (u - h) * T3
        d2 = 4.0 * g * (T1 * (4.0 * g * u * u - 1.0) + T2 * (4.0 * g * h * h - 1.0)
                        + T3 * (g * (u - h) * (u - h) - 1.0))
        if not d2 < 0.0:
            break
        hn = h - d1 / d2
        if hn < lo:
            hn = lo
        if hn > hi:
            hn = hi
        if hn == h:
            break
        h = hn
    return h


cdef inline double cdotk(const double* a, const double* b, Py_ssize_t k) noexcept nogil:
    """<a, b> over the k classes: a plain loop (k is small; no call into the SIMD kernels)."""
    cdef double s = 0.0
    cdef Py_ssize_t c
    for c in range(k):
        s += a[c] * b[c]
    return s


cdef inline double clower(double A, double B, double C, double kk) noexcept nogil:
    """A lower bound of the degradation: sigma_min^2 of a_m K_m + a_n K_n.

    The merged a_z K_z is at best the pair's projection on one direction of
    span{K_m, K_n}, so the degradation is at least the least eigenvalue of
    G Q, G = [[A, C], [C, B]], Q = [[1, k], [k, 1]]: 2 det / (T + sqrt(T^2 - 4 det))
    with T = A + B + 2 C k, det = (A B - C^2)(1 - k^2) (docs/multiclass.md, section 5).
    """
    cdef double T, det, disc
    kk = kk if kk > 0.0 else 0.0
    T = A + B + 2.0 * C * kk
    det = (A * B - C * C) * (1.0 - kk * kk)
    det = det if det > 0.0 else 0.0
    disc = T * T - 4.0 * det
    disc = disc if disc > 0.0 else 0.0
    return 2.0 * det / (T + sqrt(disc)) if T > 0.0 else 0.0


cdef inline double cgrid(double A, double B, double C, double kk, Py_ssize_t* j_out) noexcept nogil:
    """The degradation at the best h of {0, 1/4, 1/2, 3/4, 1} (k^(1/16) ... by square roots)."""
    cdef double s1, s2, s4, phi, top = -1.0
    cdef double kmzs[5]
    cdef double knzs[5]
    cdef Py_ssize_t c
    if not kk > 0.0:
        kk = 0.0
    s1 = sqrt(kk)
    s2 = sqrt(s1)
    s4 = sqrt(sqrt(s2))
    kmzs[0], knzs[0] = kk, 1.0
    kmzs[1], knzs[1] = s1 * s4, s4
    kmzs[2], knzs[2] = s2, s2
    kmzs[3], knzs[3] = s4, s1 * s4
    kmzs[4], knzs[4] = 1.0, kk
    for c in range(5):
        phi = A * kmzs[c] * kmzs[c] + B * knzs[c] * knzs[c] + 2.0 * C * kmzs[c] * knzs[c]
        if phi > top:
            top = phi
            j_out[0] = c
    return A + B + 2.0 * C * kk - top


cdef Py_ssize_t cmulti_merge_find(const double* centers, const double* coef, Py_ssize_t n,
                                  Py_ssize_t d, Py_ssize_t k, double gamma, const double* krow,
                                  const double* norms, Py_ssize_t m, double* work,
                                  double* cwork, double* h_out, double* az_out,
                                  double* loss_out) noexcept nogil:
    """The merge that takes n centres to n - 1 (Gaussian kernel); return the partner or -1.

    m = argmin ||a_i|| (the first on ties), norms[i] = ||a_i||^2, krow[i] = K(x_i, x_m).  Each
    partner's degradation ||a_m K_m + a_n K_n - a_z K_z||^2 is evaluated on the
    grid h in {0, 1/4, 1/2, 3/4, 1} (powers of k = K(x_m, x_n) by square roots),
    except where a lower bound (`clower`, in work) already exceeds the best
    found (the partner of least bound is tried first); the least is refined by golden section on its bracket, and the merge is
    dropped for a removal of x_m when it degrades more than the removal,
    ||a_m||^2.  az_out (k) receives a_z (raw units); loss_out the degradation.
    """
    cdef Py_ssize_t i, c, best = -1, j = 0, best_j = 0, first
    cdef double A, B, C, D, best_D = 0.0
    cdef double best_B = 0.0, best_C = 0.0, g, lo, hi, x1, x2, f1, f2, h, fh, kmz, knz, loss
    A = norms[m]
    h_out[0] = 0.0
    loss_out[0] = A
    if A == 0.0 or n < 2:
        return -1
    okl_dots(n, k, coef, coef + m * k, cwork)      # C_i = a_m . a_i, every partner
    for i in range(n):              # the lower bound of every partner's degradation
        work[i] = clower(A, norms[i], cwork[i], krow[i])
    work[m] = INFINITY
    first = okl_merge_argmin(n, work)
    for i in range(-1, n):          # the grid: `first`, then those the bound leaves in
        if i < 0:
            i = first
        elif i == first or not work[i] <= best_D * (1.0 + PRUNE_SLACK):
            continue
        B = norms[i]
        C = cwork[i]
        D = cgrid(A, B, C, krow[i], &j)
        if best < 0 or D < best_D or (D == best_D and i < best):
            best, best_D, best_j, best_B, best_C = i, D, j, B, C
    g = 0.0
    okl_sqdists(1, d, centers + m * d, centers + best * d, &g)
    g *= gamma
    lo = best_j * 0.25 - 0.25
    hi = best_j * 0.25 + 0.25
    if lo < 0.0:
        lo = 0.0
    if hi > 1.0:
        hi = 1.0
    x1 = hi - INVPHI * (hi - lo)
    x2 = lo + INVPHI * (hi - lo)
    f1 = cphi(A, best_B, best_C, g, x1)
    f2 = cphi(A, best_B, best_C, g, x2)
    for c in range(GOLDEN_STEPS):
        if f1 < f2:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + INVPHI * (hi - lo)
            f2 = cphi(A, best_B, best_C, g, x2)
        else:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - INVPHI * (hi - lo)
            f1 = cphi(A, best_B, best_C, g, x1)
    if f1 >= f2:
        h, fh = x1, f1
    else:
        h, fh = x2, f2
    if cphi(A, best_B, best_C, g, best_j * 0.25) > fh:
        h = best_j * 0.25
    h = cnewton(A, best_B, best_C, g, h, 0.0, 1.0)
    kmz = exp(-g * (1.0 - h) * (1.0 - h))
    knz = exp(-g * h * h)
    for c in range(k):
        az_out[c] = coef[m * k + c] * kmz + coef[best * k + c] * knz
    loss = A + best_B + 2.0 * best_C * exp(-g) - cdot(az_out, az_out, k)
    if not loss < A:
        return -1                       # removing x_m degrades less
    h_out[0] = h
    loss_out[0] = loss
    return best


cdef class MultiExpansion:
    """f(x) = scale * sum_i coef[i, :] K(centers[i], x) in R^k, with a lazy global scale.

    Parameters
    ----------
    n_features, n_classes : int
    kernel : dict
        The kernel's record, `okl.kernels.kernel_params` (its code and every
        parameter by name); kept as one `KernelSpec`.
    budget : int
        Maximum number of centres, 0 for no limit.
    policy : int
        A `BudgetPolicy` code (MERGE needs the Gaussian kernel).

    References
    ----------
    docs/multiclass.md, sections 2 and 5.
    """

    def __init__(self, Py_ssize_t n_features, Py_ssize_t n_classes, kernel, Py_ssize_t budget=0,
                 int policy=OLDEST):
        cdef KernelSpec spec = kernel_spec(kernel)
        if n_features < 1 or n_classes < 1:
            raise ValueError(f"n_features and n_classes must be >= 1, got {n_features}, "
                             f"{n_classes}.")
        if budget < 0:
            raise ValueError(f"budget must be >= 0 (0 = unbounded), got {budget}.")
        if policy not in (OLDEST, SMALLEST, MERGE):
            raise ValueError(f"Unknown budget policy code {policy}.")
        if policy == MERGE and spec.kind != Kernel.GAUSSIAN:
            raise ValueError("The merge budget policy needs the 'gaussian' kernel; use "
                             "budget_policy='oldest' or 'smallest' with this kernel.")
        self.n_features, self.n_classes = n_features, n_classes
        self.kernel = spec
        self.budget, self.policy = budget, policy
        self.scale = 1.0
        self.n_support = self.n_rescale = self.next_slot = self.n_merges = 0
        self.capacity = 0
        self.kbuf_ready = False
        self.track_norm = False
        self.norm_change = 0.0
        self._zbuf = np.empty(n_features)
        self._abuf = np.empty(n_classes)
        cdef double[::1] z_view = self._zbuf, a_view = self._abuf
        self.zbuf, self.abuf = &z_view[0], &a_view[0]
        self._allocate(min(self._room(), 16) if budget else 16)

    cdef _allocate(self, Py_ssize_t capacity):
        cdef Py_ssize_t n = self.n_support, d = self.n_features, k = self.n_classes
        centers = np.empty((capacity, d))
        coef = np.empty((capacity, k))
        sqnorms = np.empty(capacity)
        if n:
            centers[:n] = self._centers[:n]
            coef[:n] = self._coef[:n]
            sqnorms[:n] = self._sqnorms[:n]
        self._centers, self._coef, self._sqnorms = centers, coef, sqnorms
        self._kbuf = np.empty(capacity)
        nbuf = np.empty(capacity)
        if n:
            nbuf[:n] = self._nbuf[:n]
        self._nbuf = nbuf
        self._wbuf = np.empty(capacity)
        self._cbuf = np.empty(capacity)
        cdef double[:, ::1] c_view = centers, a_view = coef
        cdef double[::1] s_view = sqnorms, k_view = self._kbuf, n_view = self._nbuf
        cdef double[::1] w_view = self._wbuf, cw_view = self._cbuf
        self.wbuf, self.cbuf = &w_view[0], &cw_view[0]
        self.centers, self.coef = &c_view[0, 0], &a_view[0, 0]
        self.sqnorms, self.kbuf, self.nbuf = &s_view[0], &k_view[0], &n_view[0]
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

    # -- the hot path (nogil, no allocation) -------------------------------------------------

    cdef void cvalues(self, const double* x) noexcept nogil:
        """kbuf[i] = K(centers[i], x) for every centre (the Gaussian and Matern distances from
        the centres' cached norms, as `KernelExpansion.cvalues`: docs/algorithms.md, 0.4)."""
        ckernel_row_norms(&self.kernel, x, cdot(x, x, self.n_features), self.centers,
                          self.sqnorms, self.n_support, self.n_features, self.kbuf)
        self.kbuf_x = x
        self.kbuf_n = self.n_support

    cdef void cscores(self, const double* x, double* out) noexcept nogil:
        """out[c] = f_c(x) (no offset), one kernel row for every class; leaves it in kbuf."""
        cdef Py_ssize_t c, k = self.n_classes
        if self.n_support == 0:
            memset(out, 0, k * sizeof(double))
            return
        self.cvalues(x)
        okl_rows_axpy(self.n_support, k, self.coef, self.kbuf, out)
        for c in range(k):
            out[c] *= self.scale

    cdef void cshrink(self, double factor) noexcept nogil:
        """f <- factor f in O(1); factor <= 0 empties the expansion exactly."""
        if factor == 1.0:
            return
        if factor <= 0.0:
            self.n_support = 0
            self.next_slot = 0
            self.scale = 1.0
            return
        cdef double s = self.scale * factor
        cdef Py_ssize_t i
        if cshrink_lazy(self.coef, self.n_support * self.n_classes, &self.scale,
                        factor) == RENORMALISED:
            self.n_rescale += 1
            for i in range(self.n_support):     # the raw rows were multiplied by s
                self.nbuf[i] *= s * s

    cdef double csqnorm_row(self, Py_ssize_t i) noexcept nogil:
        """||coef[i]||^2 (raw), kept in nbuf by every write (`cwrite`, `cshrink`)."""
        return self.nbuf[i]

    def _norms(self):
        """Recompute the kept row norms (after a restore or a rebuild)."""
        cdef Py_ssize_t i
        for i in range(self.n_support):
            self.nbuf[i] = cdotk(self.coef + i * self.n_classes, self.coef + i * self.n_classes,
                                 self.n_classes)

    cdef Py_ssize_t cvictim(self, double aa) noexcept nogil:
        """The slot that leaves if a centre of raw squared norm `aa` is added now (as
        KernelExpansion.cvictim, by ||a_i||)."""
        cdef Py_ssize_t i, slot
        cdef double least, v
        if self.budget == 0 or self.n_support < self.budget or self.policy == MERGE:
            return NO_EVICTION
        if self.policy == OLDEST:
            return self.next_slot
        slot, least = 0, self.csqnorm_row(0)
        for i in range(1, self.n_support):
            v = self.csqnorm_row(i)
            if v < least:
                slot, least = i, v
        if aa <= least:
            return NEWCOMER
        return slot

    cdef bint cadd(self, const double* x, double xx, const double* a) noexcept nogil:
        """f <- f + a K(x, .) (a in R^k), within the budget; False when a / scale is not finite.

        With `track_norm`, `norm_change` = sum_c ||f'_c||^2 - ||(f + a K(x, .))_c||^2
        for the model f' the budget leaves (as `KernelExpansion.cadd`): 0 with
        room, -(2 a.f(x) + ||a||^2 K(x, x)) when the newcomer is dropped,
        ||r||^2 K(x_o, x_o) - 2 r.(f + a K(x, .))(x_o) when r K(x_o, .) is
        removed, the merge's own change (`cmerge`); O(n (d + k)) per eviction.
        """
        cdef Py_ssize_t slot, c, k = self.n_classes, d = self.n_features
        cdef double aa = 0.0, dot
        cdef const double* x_o
        for c in range(k):
            self.abuf[c] = a[c] / self.scale
            if not isfinite(self.abuf[c]):
                return False
            aa += self.abuf[c] * self.abuf[c]
        self.norm_change = 0.0
        if self.policy == MERGE and self.budget and self.n_support >= self.budget:
            # kbuf still holds K(centers[i], x) when the step predicted at this x
            self.kbuf_ready = x == self.kbuf_x and self.kbuf_n == self.n_support
            self.cwrite(self.n_support, x, xx, self.abuf)
            self.n_support += 1
            self.cmerge()
            return True
        slot = self.cvictim(aa)
        if slot == NEWCOMER:
            if self.track_norm:     # kbuf holds K(centers, x) when the step predicted at this x
                if not (x == self.kbuf_x and self.kbuf_n == self.n_support):
                    self.cvalues(x)
                dot = self.cweighted(NULL, self.abuf, self.n_support)
                self.norm_change = -self.scale * self.scale * (
                    aa * cself(&self.kernel, xx) + 2.0 * dot)
            return True
        if slot == NO_EVICTION:
            slot = self.n_support
            self.n_support += 1
        else:
            if self.track_norm:     # r = coef[slot] leaves; f + a K(x, .) at its centre
                x_o = self.centers + slot * d
                dot = (self.cweighted(x_o, self.coef + slot * k, self.n_support)
                       + ckernel(&self.kernel, x, x_o, d)
                       * cdotk(self.abuf, self.coef + slot * k, k))
                self.norm_change = self.scale * self.scale * (
                    self.nbuf[slot] * cself(&self.kernel, self.sqnorms[slot]) - 2.0 * dot)
            if self.policy == OLDEST:
                self.next_slot = (slot + 1) % self.budget
        self.cwrite(slot, x, xx, self.abuf)
        return True

    cdef double cweighted(self, const double* y, const double* v, Py_ssize_t n) noexcept nogil:
        """sum_{i < n} K(centers[i], y) <coef[i], v> (raw units), one kernel row; y NULL: the
        row already in kbuf."""
        cdef Py_ssize_t i, k = self.n_classes
        cdef double total = 0.0
        if y != NULL:
            ckernel_row(&self.kernel, y, self.centers, n, self.n_features, self.kbuf)
            self.kbuf_x = NULL
        for i in range(n):
            total += self.kbuf[i] * cdotk(self.coef + i * k, v, k)
        return total

    cdef void cmerge(self) noexcept nogil:
        """B + 1 centres -> B: merge the least ||a_m|| into its best partner, or remove it."""
        cdef Py_ssize_t n = self.n_support, d = self.n_features, k = self.n_classes
        cdef Py_ssize_t last = n - 1, m, partner, j
        cdef double h, loss, fm, fn, fz
        m = okl_merge_argmin(n, self.nbuf)      # the least ||a_i||, the first on ties
        if m < 0:
            m = 0
        if self.kbuf_ready and m == last:   # the newcomer: its row was computed to predict
            self.kbuf[last] = 1.0           # K(x, x), Gaussian
        else:
            ckernel_row(&self.kernel, self.centers + m * d, self.centers, n, d, self.kbuf)
        self.kbuf_ready = False
        self.kbuf_x = NULL
        partner = cmulti_merge_find(self.centers, self.coef, n, d, k, self.kernel.gamma,
                                    self.kbuf, self.nbuf, m, self.wbuf, self.cbuf, &h,
                                    self.abuf, &loss)
        if partner >= 0:
            for j in range(d):
                self.zbuf[j] = self.centers[partner * d + j] + h * (
                    self.centers[m * d + j] - self.centers[partner * d + j])
        if self.track_norm:
            # sum_c ||f'_c||^2 - ||f_c||^2 = 2 (a_z.f(z) - a_m.f(x_m) - a_n.f(x_n)) + the
            # degradation for a merge, ||a_m||^2 K(x_m, x_m) - 2 a_m.f(x_m) for a removal
            # (f: the B + 1 centres; raw units), as KernelExpansion.cmerge; kbuf still
            # holds K(centers, x_m), which the search only read
            fm = self.cweighted(NULL, self.coef + m * k, n)
            if partner >= 0:
                fz = self.cweighted(self.zbuf, self.abuf, n)
                fn = self.cweighted(self.centers + partner * d, self.coef + partner * k, n)
                self.norm_change = 2.0 * (fz - fm - fn) + loss
            else:
                self.norm_change = self.nbuf[m] * cself(&self.kernel, self.sqnorms[m]) - 2.0 * fm
            self.norm_change *= self.scale * self.scale
        if partner >= 0:
            self.cwrite(partner, self.zbuf, cdot(self.zbuf, self.zbuf, d), self.abuf)
            self.n_merges += 1
        if m != last:
            self.cwrite(m, self.centers + last * d, self.sqnorms[last], self.coef + last * k)
        self.n_support = last

    cdef void cwrite(self, Py_ssize_t slot, const double* x, double xx,
                     const double* c) noexcept nogil:
        """Put the centre x with raw coefficients c in `slot`."""
        if slot < self.kbuf_n:
            self.kbuf_x = NULL              # a centre of kbuf's row changed
        memcpy(self.centers + slot * self.n_features, x, self.n_features * sizeof(double))
        self.sqnorms[slot] = xx
        memcpy(self.coef + slot * self.n_classes, c, self.n_classes * sizeof(double))
        self.nbuf[slot] = cdotk(c, c, self.n_classes)

    cdef double crow_dot(self, Py_ssize_t i, const double* v) noexcept nogil:
        """coef[i] . v (raw units), v: k doubles."""
        return cdotk(self.coef + i * self.n_classes, v, self.n_classes)

    # -- Python face ---------------------------------------------------------------------------

    def predict(self, const double[:, ::1] X):
        """The k scores at every row of X: shape (n_rows, n_classes)."""
        cdef Py_ssize_t r, n_rows = X.shape[0]
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the expansion {self.n_features}.")
        out_arr = np.zeros((n_rows, self.n_classes))
        if self.n_support == 0 or n_rows == 0:
            return out_arr
        cdef double[:, ::1] out = out_arr
        with nogil:
            for r in range(n_rows):
                self.cscores(&X[r, 0], &out[r, 0])
        self.kbuf_x = NULL
        return out_arr

    def add(self, const double[::1] x, const double[::1] a):
        """f <- f + a K(x, .) within the budget (a Python face of the hot path)."""
        if x.shape[0] != self.n_features or a.shape[0] != self.n_classes:
            raise ValueError("x or a has the wrong length.")
        self.reserve(1)
        if not self.cadd(&x[0], cdot(&x[0], &x[0], self.n_features), &a[0]):
            raise FloatingPointError("The coefficients / scale are not finite.")

    def shrink(self, double factor):
        self.cshrink(factor)

    def sq_norm(self):
        """||f||_K^2 = sum_c a_c' K a_c, O(n^2 d)."""
        if self.n_support == 0:
            return 0.0
        return float(np.sum(self.coef_ * self.predict(self._centers[:self.n_support])))

    @property
    def centers_(self):
        return self._centers[:self.n_support].copy()

    @property
    def coef_(self):
        """The coefficient vectors a_i, one row per centre (a copy)."""
        return self.scale * self._coef[:self.n_support]

    @property
    def raw_coef_(self):
        return self._coef[:self.n_support].copy()

    @property
    def kernel_params(self):
        """The kernel's record (`okl.kernels.kernel_params`), a new dict."""
        return spec_params(self.kernel)

    # -- undo, state --------------------------------------------------------------------------

    cdef void cset_gamma(self, double gamma) noexcept nogil:
        """The kernel's width is gamma (gamma="scale"'s warm-up): centres and coefficients
        stay, the kernel values are re-read."""
        self.kernel.gamma = gamma
        self.kbuf_x = NULL
        self.kbuf_ready = False

    def set_gamma(self, double gamma):
        """The kernel's width is gamma (`cset_gamma`)."""
        self.cset_gamma(gamma)

    def checkpoint(self, Py_ssize_t n_new):
        """What `restore` needs to undo the next steps (a copy of the n centres, O(n (d + k)))."""
        n = self.n_support
        return (n, self.scale, self.n_rescale, self.next_slot, self.n_merges,
                self._coef[:n].copy(), self._centers[:n].copy(), self._sqnorms[:n].copy(),
                self.kernel.gamma)

    def restore(self, state):
        n, scale, n_rescale, next_slot, n_merges, coef, centers, sqnorms, gamma = state
        if n > self.capacity:
            self._allocate(n)
        self._coef[:n], self._centers[:n], self._sqnorms[:n] = coef, centers, sqnorms
        self.n_support, self.scale, self.n_rescale = n, scale, n_rescale
        self.next_slot, self.n_merges = next_slot, n_merges
        self.kernel.gamma = gamma
        self.kbuf_x = NULL
        self._norms()

    def get_state(self):
        """Scalars and arrays that rebuild this expansion exactly."""
        n = self.n_support
        return dict(n_features=self.n_features, n_classes=self.n_classes, budget=self.budget,
                    policy=self.policy, scale=self.scale, n_rescale=self.n_rescale,
                    next_slot=self.next_slot, n_merges=self.n_merges,
                    centers=self._centers[:n].copy(), coef=self.raw_coef_,
                    sqnorms=self._sqnorms[:n].copy(), **self.kernel_params)

    def with_class(self, Py_ssize_t position):
        """A new expansion with a zero score function at `position` (a new class); this one
        is unchanged.  One copy of the coefficients with the room for centres kept, so the
        next step does not grow it again (docs/multiclass.md, section 3)."""
        cdef Py_ssize_t n = self.n_support, k = self.n_classes
        if not 0 <= position <= k:
            raise ValueError(f"position must be in [0, {k}], got {position}.")
        cdef MultiExpansion out = type(self)(self.n_features, k + 1, self.kernel_params,
                                             self.budget, self.policy)
        if self.capacity > out.capacity:
            out._allocate(self.capacity)
        out._centers[:n] = self._centers[:n]
        out._sqnorms[:n] = self._sqnorms[:n]
        coef = out._coef
        coef[:n, :position] = self._coef[:n, :position]
        coef[:n, position] = 0.0
        coef[:n, position + 1:] = self._coef[:n, position:]
        out._nbuf[:n] = self._nbuf[:n]          # a zero entry leaves the rows' norms
        out.n_support = n
        out.scale, out.n_rescale = self.scale, self.n_rescale
        out.next_slot, out.n_merges = self.next_slot, self.n_merges
        return out

    @classmethod
    def from_state(cls, state):
        cdef MultiExpansion self = cls(state["n_features"], state["n_classes"],
                                       kernel_record(state, complete=True), state["budget"],
                                       state["policy"])
        coef = np.asarray(state["coef"], dtype=np.float64).reshape(-1, state["n_classes"])
        n = len(coef)
        self.reserve(n)
        self._centers[:n] = state["centers"]
        self._set_coef(coef)
        self._sqnorms[:n] = state["sqnorms"]
        self.n_support = n
        self.scale = state["scale"]
        self.n_rescale = state["n_rescale"]
        self.next_slot = state["next_slot"]
        self.n_merges = state.get("n_merges", 0)
        self._norms()
        return self

    def _set_coef(self, coef):
        """The n x k raw coefficients of a state into room reserved for them."""
        self._coef[:len(coef)] = coef

    def __reduce__(self):
        return (_rebuild, (self.get_state(),))


def _rebuild(state):
    return MultiExpansion.from_state(state)


cdef class SparseMultiExpansion(MultiExpansion):
    """`MultiExpansion` with at most two nonzero coefficients per centre (the kernel PA's).

    A PA step gives its centre +tau for the label and -tau for the top wrong class,
    the binary model's conversion (-a/2, a/2), and the regularised variants only
    rescale, so each centre keeps two (class, value) pairs: the scores are a
    scatter-add of the kernel row (a step O(m d + k)) and a new class renumbers
    the class indices (O(m), no m x k copy).  Budgets "oldest" and "smallest"
    keep the layout; "merge" makes rows dense and stays with `MultiExpansion`.
    The state (`get_state`) is the dense one, so files are those of `MultiExpansion`.
    The NumPy twin is `okl._numpy.multiexpansion.NumpySparseMultiExpansion`.

    References
    ----------
    docs/multiclass.md, sections 1 and 2.
    """

    def __init__(self, Py_ssize_t n_features, Py_ssize_t n_classes, kernel, Py_ssize_t budget=0,
                 int policy=OLDEST):
        if policy == MERGE and budget:
            raise ValueError("The merge budget policy makes coefficient rows dense: use "
                             "MultiExpansion for it.")
        MultiExpansion.__init__(self, n_features, n_classes, kernel, budget, policy)

    cdef _allocate(self, Py_ssize_t capacity):
        cdef Py_ssize_t n = self.n_support, d = self.n_features
        centers = np.empty((capacity, d))
        pcls = np.full((capacity, 2), -1, dtype=np.intp)
        pval = np.zeros((capacity, 2))
        sqnorms = np.empty(capacity)
        nbuf = np.empty(capacity)
        if n:
            centers[:n] = self._centers[:n]
            pcls[:n] = self._pcls[:n]
            pval[:n] = self._pval[:n]
            sqnorms[:n] = self._sqnorms[:n]
            nbuf[:n] = self._nbuf[:n]
        self._centers, self._pcls, self._pval, self._sqnorms = centers, pcls, pval, sqnorms
        self._nbuf, self._kbuf = nbuf, np.empty(capacity)
        self._wbuf = self._cbuf = self._coef = None     # the merge's buffers: no merge here
        cdef double[:, ::1] c_view = centers, v_view = pval
        cdef Py_ssize_t[:, ::1] p_view = pcls
        cdef double[::1] s_view = sqnorms, k_view = self._kbuf, n_view = self._nbuf
        self.centers, self.pcls, self.pval = &c_view[0, 0], &p_view[0, 0], &v_view[0, 0]
        self.sqnorms, self.kbuf, self.nbuf = &s_view[0], &k_view[0], &n_view[0]
        self.coef = self.wbuf = self.cbuf = NULL
        self.kbuf_x = NULL
        self.capacity = capacity

    cdef void cscores(self, const double* x, double* out) noexcept nogil:
        """out[c] = f_c(x): one kernel row scattered into the k scores, O(m d + k)."""
        cdef Py_ssize_t i, c, j, k = self.n_classes
        memset(out, 0, k * sizeof(double))
        if self.n_support == 0:
            return
        self.cvalues(x)
        for i in range(self.n_support):
            for j in range(2 * i, 2 * i + 2):
                c = self.pcls[j]
                if c >= 0:
                    out[c] += self.pval[j] * self.kbuf[i]
        for c in range(k):
            out[c] *= self.scale

    cdef void cshrink(self, double factor) noexcept nogil:
        """f <- factor f in O(1) (the lazy scale over the 2 m values)."""
        if factor == 1.0:
            return
        if factor <= 0.0:
            self.n_support = 0
            self.next_slot = 0
            self.scale = 1.0
            return
        cdef double s = self.scale * factor
        cdef Py_ssize_t i
        if cshrink_lazy(self.pval, 2 * self.n_support, &self.scale, factor) == RENORMALISED:
            self.n_rescale += 1
            for i in range(self.n_support):
                self.nbuf[i] *= s * s

    cdef double crow_dot(self, Py_ssize_t i, const double* v) noexcept nogil:
        cdef double total = 0.0
        cdef Py_ssize_t j
        for j in range(2 * i, 2 * i + 2):
            if self.pcls[j] >= 0:
                total += self.pval[j] * v[self.pcls[j]]
        return total

    cdef double cpairs_dot(self, Py_ssize_t i, const Py_ssize_t* cls,
                           const double* val) noexcept nogil:
        """coef[i] . (the row of pairs cls, val) (raw units)."""
        cdef double total = 0.0
        cdef Py_ssize_t j, q
        for j in range(2 * i, 2 * i + 2):
            for q in range(2):
                if self.pcls[j] >= 0 and self.pcls[j] == cls[q]:
                    total += self.pval[j] * val[q]
        return total

    def _norms(self):
        cdef Py_ssize_t i
        for i in range(self.n_support):
            self.nbuf[i] = self.pval[2 * i] * self.pval[2 * i] + self.pval[2 * i + 1] * \
                self.pval[2 * i + 1]

    cdef double cweighted(self, const double* y, const double* v, Py_ssize_t n) noexcept nogil:
        cdef Py_ssize_t i
        cdef double total = 0.0
        if y != NULL:
            ckernel_row(&self.kernel, y, self.centers, n, self.n_features, self.kbuf)
            self.kbuf_x = NULL
        for i in range(n):
            total += self.kbuf[i] * self.crow_dot(i, v)
        return total

    cdef bint cadd(self, const double* x, double xx, const double* a) noexcept nogil:
        """`MultiExpansion.cadd` for an a of at most two nonzeros (False otherwise, or when
        a / scale is not finite); O(k) with room, O(m d) per eviction."""
        cdef Py_ssize_t slot, c, i, k = self.n_classes, d = self.n_features, nnz = 0
        cdef Py_ssize_t cls[2]
        cdef double val[2]
        cdef double aa = 0.0, v, dot
        cdef const double* x_o
        cls[0] = cls[1] = -1
        val[0] = val[1] = 0.0
        for c in range(k):
            if a[c] != 0.0:
                v = a[c] / self.scale
                if not isfinite(v) or nnz == 2:
                    return False
                cls[nnz], val[nnz] = c, v
                nnz += 1
                aa += v * v
            elif not isfinite(a[c] / self.scale):
                return False
        self.norm_change = 0.0
        slot = self.cvictim(aa)
        if slot == NEWCOMER:
            if self.track_norm:
                if not (x == self.kbuf_x and self.kbuf_n == self.n_support):
                    self.cvalues(x)
                dot = 0.0
                for i in range(self.n_support):
                    dot += self.kbuf[i] * self.cpairs_dot(i, cls, val)
                self.norm_change = -self.scale * self.scale * (
                    aa * cself(&self.kernel, xx) + 2.0 * dot)
            return True
        if slot == NO_EVICTION:
            slot = self.n_support
            self.n_support += 1
        else:
            if self.track_norm:     # r = coef[slot] leaves; f + a K(x, .) at its centre
                x_o = self.centers + slot * d
                ckernel_row(&self.kernel, x_o, self.centers, self.n_support, d, self.kbuf)
                self.kbuf_x = NULL
                dot = 0.0
                for i in range(self.n_support):
                    dot += self.kbuf[i] * self.cpairs_dot(i, self.pcls + 2 * slot,
                                                          self.pval + 2 * slot)
                dot += ckernel(&self.kernel, x, x_o, d) * self.cpairs_dot(slot, cls, val)
                self.norm_change = self.scale * self.scale * (
                    self.nbuf[slot] * cself(&self.kernel, self.sqnorms[slot]) - 2.0 * dot)
            if self.policy == OLDEST:
                self.next_slot = (slot + 1) % self.budget
        self.cwrite_pairs(slot, x, xx, cls, val)
        return True

    cdef void cwrite(self, Py_ssize_t slot, const double* x, double xx,
                     const double* c) noexcept nogil:
        """Put x with the raw dense coefficients c (at most two nonzeros: the first two kept)."""
        cdef Py_ssize_t j, nnz = 0
        cdef Py_ssize_t cls[2]
        cdef double val[2]
        cls[0] = cls[1] = -1
        val[0] = val[1] = 0.0
        for j in range(self.n_classes):
            if c[j] != 0.0 and nnz < 2:
                cls[nnz], val[nnz] = j, c[j]
                nnz += 1
        self.cwrite_pairs(slot, x, xx, cls, val)

    cdef void cwrite_pairs(self, Py_ssize_t slot, const double* x, double xx,
                           const Py_ssize_t* cls, const double* val) noexcept nogil:
        if slot < self.kbuf_n:
            self.kbuf_x = NULL
        memcpy(self.centers + slot * self.n_features, x, self.n_features * sizeof(double))
        self.sqnorms[slot] = xx
        self.pcls[2 * slot], self.pcls[2 * slot + 1] = cls[0], cls[1]
        self.pval[2 * slot], self.pval[2 * slot + 1] = val[0], val[1]
        self.nbuf[slot] = val[0] * val[0] + val[1] * val[1]

    def add(self, const double[::1] x, const double[::1] a):
        """f <- f + a K(x, .) within the budget; a has at most two nonzeros."""
        if np.count_nonzero(a) > 2:
            raise ValueError("SparseMultiExpansion.add takes at most two nonzero coefficients; "
                             "use MultiExpansion for dense ones.")
        MultiExpansion.add(self, x, a)

    def sq_norm(self):
        """||f||_K^2 = sum_c a_c' K a_c, O(n^2 d + n k)."""
        cdef Py_ssize_t j, d = self.n_features
        cdef double total = 0.0
        s_arr = np.zeros(self.n_classes)
        cdef double[::1] s = s_arr
        for j in range(self.n_support):
            self.cscores(self.centers + j * d, &s[0])
            total += self.crow_dot(j, &s[0])
        self.kbuf_x = NULL
        return self.scale * total

    @property
    def coef_(self):
        """The coefficient vectors a_i, one row per centre (a dense copy, n x k)."""
        return self.scale * self.raw_coef_

    @property
    def raw_coef_(self):
        n = self.n_support
        return dense_layout(self._pcls[:n], self._pval[:n], self.n_classes)

    def checkpoint(self, Py_ssize_t n_new):
        """What `restore` needs to undo the next steps (a copy of the n centres, O(n d))."""
        n = self.n_support
        return (n, self.scale, self.n_rescale, self.next_slot, self._pcls[:n].copy(),
                self._pval[:n].copy(), self._centers[:n].copy(), self._sqnorms[:n].copy(),
                self.kernel.gamma)

    def restore(self, state):
        n, scale, n_rescale, next_slot, pcls, pval, centers, sqnorms, gamma = state
        if n > self.capacity:
            self._allocate(n)
        self._pcls[:n], self._pval[:n] = pcls, pval
        self._centers[:n], self._sqnorms[:n] = centers, sqnorms
        self.n_support, self.scale, self.n_rescale, self.next_slot = n, scale, n_rescale, next_slot
        self.kernel.gamma = gamma
        self.kbuf_x = NULL
        self._norms()

    def with_class(self, Py_ssize_t position):
        """A new expansion with a zero score function at `position`; this one unchanged.
        O(n d) copies and O(n) renumbering: no n x k values."""
        cdef Py_ssize_t n = self.n_support, k = self.n_classes
        if not 0 <= position <= k:
            raise ValueError(f"position must be in [0, {k}], got {position}.")
        cdef SparseMultiExpansion out = SparseMultiExpansion(
            self.n_features, k + 1, self.kernel_params, self.budget, self.policy)
        if self.capacity > out.capacity:
            out._allocate(self.capacity)
        out._centers[:n] = self._centers[:n]
        out._sqnorms[:n] = self._sqnorms[:n]
        out._nbuf[:n] = self._nbuf[:n]
        out._pval[:n] = self._pval[:n]
        pcls = out._pcls
        pcls[:n] = self._pcls[:n]
        pcls[:n][pcls[:n] >= position] += 1
        out.n_support = n
        out.scale, out.n_rescale = self.scale, self.n_rescale
        out.next_slot, out.n_merges = self.next_slot, self.n_merges
        return out

    def _set_coef(self, coef):
        """The n x k raw coefficients of a `MultiExpansion` state as pairs (ValueError when
        a row has more than two nonzeros)."""
        n = len(coef)
        self._pcls[:n], self._pval[:n] = pair_layout(coef)

    def __reduce__(self):
        return (_rebuild_sparse, (self.get_state(),))


def _rebuild_sparse(state):
    return SparseMultiExpansion.from_state(state)


def multi_merge_find(const double[:, ::1] centers, const double[:, ::1] coef, double gamma):
    """(m, partner, h, a_z, degradation) taking n centres to n - 1; partner -1 removes x_m
    (the Python face of `cmulti_merge_find`, for tests)."""
    cdef Py_ssize_t n = centers.shape[0], d = centers.shape[1], k = coef.shape[1], m = 0, j
    cdef double h = 0.0, loss = 0.0
    if coef.shape[0] != n or n < 1:
        raise ValueError("coef needs one row per centre (n >= 1).")
    az = np.zeros(k)
    krow, work, cwork = np.empty(n), np.empty(n), np.empty(n)
    cdef double[::1] az_view = az, krow_view = krow, work_view = work, cwork_view = cwork
    cdef KernelSpec spec
    memset(&spec, 0, sizeof(KernelSpec))         # the Gaussian reads its width only
    spec.kind, spec.gamma = Kernel.GAUSSIAN, gamma
    norms = np.array([cdotk(&coef[j, 0], &coef[j, 0], k) for j in range(n)])
    cdef double[::1] norms_view = norms
    m = int(np.argmin(norms))
    ckernel_row(&spec, &centers[m, 0], &centers[0, 0], n, d, &krow_view[0])
    partner = cmulti_merge_find(&centers[0, 0], &coef[0, 0], n, d, k, gamma, &krow_view[0],
                                &norms_view[0], m, &work_view[0], &cwork_view[0], &h,
                                &az_view[0], &loss)
    return int(m), int(partner), h, az, loss
