"""Online multiple kernel learning: K Gaussian learners on one support set (docs/multikernel.md).

Learner k has the width ``gammas[width_of[k]]`` (times the running scale
1 / tr(Cov) of the inputs when `auto`), the step ``eta_scales[k] eta_t`` and
its own offsets b_k; its coefficients are block k of the (learners x outputs
x centres) array, each block with a lazy scale (`_lazy.pxd`): a score is one
SIMD dot product of a coefficient row with the width's kernel row (the state
and the NumPy twin hold (learners x centres x outputs)).  One output
(binary classification, regression) is f_k(x) in R; n_outputs = C >= 3 are
the scores of C classes (docs/multiclass.md), learner k a multiclass NORMA
learner whose centre i holds a coefficient vector of C values.  One event
computes the squared distances to the centres once, one exponential per
(centre, width), then every learner's NORMA step (the step of
`_pointwise.pyx`, or `_multiclass.pxd`'s gradient with C classes; one
centre added for all) and the Hedge update of the weights q (Jin, Hoi and
Yang 2010; Hoi, Jin, Zhao and Yang 2013).  A step checks everything before
its first write.  The NumPy twin is `okl._numpy.multikernel`.
"""
import numpy as np

from libc.math cimport NAN, exp, isfinite, log
from libc.stdint cimport uint64_t
from libc.string cimport memcmp, memcpy

from okl._core._kernels cimport cdot, okl_exp_scaled, okl_sqdists
from okl._core._lazy cimport KEPT, RENORMALISED, Rescale, cshrink_lazy
from okl._core._losses cimport LOGISTIC, LossSpec, cgradient, closs
from okl._core._merge cimport cmerge_find, cmerge_point
from okl._core._multiclass cimport HINGE as MC_HINGE, LOGISTIC as MC_LOGISTIC
from okl._core._multiclass cimport cgradient as cmulti_gradient
from okl._core._multiexpansion cimport cmulti_merge_find
from okl._core._pointwise cimport AUTO, MEAN, POWER, STEP, Events, Schedule, cschedule
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals
from okl._numpy.multikernel import doublings


cdef extern from "_merge.h" nogil:
    Py_ssize_t okl_merge_argmin(Py_ssize_t n, const double* w)



cpdef enum Combination:
    DETERMINISTIC = 0   # the Hedge-weighted vote (classification) or average (regression)
    STOCHASTIC = 1      # the prediction of one learner drawn with probability q_k


cpdef enum Task:
    CLASSIFY = 0        # Hedge loss: the learner's mistake
    REGRESS = 1         # Hedge loss: the learner's loss over its running maximum


cdef enum:
    OLDEST = 0
    SMALLEST = 1
    MERGE = 2
    NO_EVICTION = -1
    NEWCOMER = -2
    TAKEN = 0
    SKIPPED = 1
    DIVERGED = 2


cdef struct Hedge:
    double beta
    int combination
    int task
    uint64_t seed


# A leader's coefficient vector of squared norm <= NEGLIGIBLE times its largest is not used by it:
# every partner then merges it at a degradation of rounding size, so the choice among them would be
# rounding's; the centre is removed instead (docs/multikernel.md, section 8).
cdef double NEGLIGIBLE = 1e-12
# A leader's merge whose degradation is not below ||a_m||^2 (removing x_m) by more than NO_GAIN
# times ||a_m||^2 + ||a_n||^2 (the size of its rounding) gains nothing: every partner is then as
# good as removing x_m (no centre is near x_m at the leader's width), the winner would be
# rounding's, and x_m is removed instead (docs/multikernel.md, section 8).
cdef double NO_GAIN = 1e-9


cdef inline Py_ssize_t cargmax(const double* s, Py_ssize_t C) noexcept nogil:
    """The first of the largest of s[0..C)."""
    cdef Py_ssize_t c, best = 0
    for c in range(1, C):
        if s[c] > s[best]:
            best = c
    return best


cdef inline double cuniform(uint64_t seed, double t) noexcept nogil:
    """The uniform draw in [0, 1) of step t (splitmix64), as `okl._numpy.multikernel.uniform`."""
    cdef uint64_t z = seed + (<uint64_t>t + 1) * <uint64_t>0x9E3779B97F4A7C15ULL
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    z = z ^ (z >> 31)
    return <double>(z >> 11) * (1.0 / 9007199254740992.0)


cdef class MultiKernel:
    """K Gaussian kernel learners on one support set, combined by Hedge weights.

    Parameters
    ----------
    n_features : int
    gammas : array of shape (n_widths,)
        The widths (relative to the running scale when `auto`).
    width_of : int array of shape (n_learners,)
        The width of each learner.
    eta_scales : array of shape (n_learners,)
        The step of learner k is eta_scales[k] eta_t.
    auto : bool
        Multiply the widths by 1 / tr(Cov) of the inputs learned so far.
    budget : int
        At most this many centres (0: no limit).
    policy : int
        0 replaces the oldest centre, 1 the one whose coefficients (every learner,
        every output) have the smallest norm (the newcomer's own included), 2
        merges as BSGD does for the leading learner (`cmerge`).
    n_outputs : int
        1: f_k(x) in R (binary labels +-1, or regression); C >= 3: C class
        scores per learner, y the class index.
    """
    cdef readonly Py_ssize_t n_features, n_learners, n_widths, n_support, capacity, n_outputs
    cdef readonly Py_ssize_t budget, next_slot, version
    cdef readonly int policy
    cdef readonly bint auto
    cdef readonly double t, ck2, eta_t, lam_t, n_seen, loss_scale
    cdef object _doublings, _gammas, _width_of, _eta_scales, _scale, _b, _q, _mean, _m2
    cdef object _centers, _coef, _sq, _kb, _work, _z, _mwork, _az, _rn, _mblock
    cdef double* gammas
    cdef Py_ssize_t* width_of
    cdef int* doublings            # (n_widths,) p > 0: gammas[j] = 2^p gammas[j - 1] exactly
    cdef double* eta_scales
    cdef double* scale             # (K,) lazy scale of each row
    cdef double* b                 # (K, C) offsets
    cdef double* q                 # (K,) Hedge weights, summing to 1
    cdef double* mean              # (d,) running mean (auto)
    cdef double* m2                # (d,) running sums of squared deviations (auto)
    cdef double* centers           # (capacity, d)
    cdef double* coef              # (K, C, capacity) raw, block k times scale[k]
    cdef double* mblock            # (capacity, C) the leader's block, centre-major, to merge
    cdef double* sq                # (capacity,) squared distances to x
    cdef double* kb                # (n_widths, capacity) kernel rows
    cdef double* f                 # work: (K, C) f_k(x), then the step's values
    cdef double* g                 # (K, C)
    cdef double* a                 # (K, C)
    cdef double* bnext             # (K, C)
    cdef double* factor            # (K,)
    cdef double* z                 # (K,) Hedge losses
    cdef double* zbuf              # (d,) the merged point
    cdef double* rn                # (K, capacity) with C outputs: ||raw coef[k, i, :]||^2, kept
    cdef double* mnorm             # (capacity,) merge work with C outputs: row norms, bounds, dots
    cdef double* mbound
    cdef double* mdot
    cdef double* az                # (C,)

    def __init__(self, Py_ssize_t n_features, gammas, width_of, eta_scales, bint auto=False,
                 Py_ssize_t budget=0, int policy=OLDEST, Py_ssize_t n_outputs=1):
        gammas = np.ascontiguousarray(gammas, dtype=np.float64)
        width_of = np.ascontiguousarray(width_of, dtype=np.intp)
        eta_scales = np.ascontiguousarray(eta_scales, dtype=np.float64)
        if n_features < 1 or gammas.ndim != 1 or len(gammas) < 1:
            raise ValueError("A MultiKernel needs n_features >= 1 and at least one width.")
        if (width_of.ndim != 1 or len(width_of) < 1 or eta_scales.shape != width_of.shape
                or width_of.min() < 0 or width_of.max() >= len(gammas)):
            raise ValueError("width_of and eta_scales must give every learner a width index.")
        if budget < 0 or policy not in (OLDEST, SMALLEST, MERGE):
            raise ValueError(f"Bad budget {budget} or policy code {policy}.")
        if n_outputs < 1 or n_outputs == 2:
            raise ValueError(f"n_outputs is 1 (a scalar f) or the number of classes >= 3, "
                             f"not {n_outputs}.")
        self.n_features, self.n_widths, self.n_learners = n_features, len(gammas), len(width_of)
        self.auto, self.budget, self.policy = auto, budget, policy
        self.n_outputs = n_outputs
        K, C = self.n_learners, n_outputs
        self._gammas, self._width_of, self._eta_scales = gammas.copy(), width_of.copy(), \
            eta_scales.copy()
        self._scale, self._b = np.ones(K), np.zeros(K * C)
        self._q = np.full(K, 1.0 / K)
        self._mean, self._m2 = np.zeros(n_features), np.zeros(n_features)
        self._work = np.zeros((6, K * C))
        self._z = np.zeros(n_features)
        self._az = np.zeros(C)
        cdef double[::1] zv = self._z, azv = self._az
        self.zbuf = &zv[0]
        self.az = &azv[0]
        cdef double[::1] gv = self._gammas, ev = self._eta_scales, sv = self._scale
        cdef double[::1] bv = self._b, qv = self._q, mv = self._mean, m2v = self._m2
        cdef Py_ssize_t[::1] wv = self._width_of
        self._doublings = np.ascontiguousarray(doublings(gammas), dtype=np.intc)
        cdef int[::1] dv = self._doublings
        self.doublings = &dv[0]
        cdef double[:, ::1] work = self._work
        self.gammas, self.width_of, self.eta_scales = &gv[0], &wv[0], &ev[0]
        self.scale, self.b, self.q, self.mean, self.m2 = &sv[0], &bv[0], &qv[0], &mv[0], &m2v[0]
        self.f, self.g, self.a = &work[0, 0], &work[1, 0], &work[2, 0]
        self.bnext, self.factor, self.z = &work[3, 0], &work[4, 0], &work[5, 0]
        self.n_support = self.next_slot = self.capacity = self.version = 0
        self.t = self.ck2 = self.n_seen = self.loss_scale = 0.0
        self.eta_t = self.lam_t = NAN
        self._allocate(16 if budget == 0 else min(16, self.room()))

    cdef inline void cnorm_row(self, Py_ssize_t k, Py_ssize_t i) noexcept nogil:
        """rn[k, i] = ||raw coef[k, i, :]||^2 (C outputs)."""
        cdef Py_ssize_t c, C = self.n_outputs
        cdef const double* col = self.coef + k * C * self.capacity + i
        cdef double v = 0.0
        for c in range(C):
            v += col[c * self.capacity] * col[c * self.capacity]
        self.rn[k * self.capacity + i] = v

    cpdef Py_ssize_t room(self):
        """Slots a full budget needs: B, or B + 1 under MERGE (the newcomer's, until the merge)."""
        return self.budget + 1 if self.policy == MERGE else self.budget

    cdef _allocate(self, Py_ssize_t capacity):
        cdef Py_ssize_t n = self.n_support, d = self.n_features, K = self.n_learners
        centers = np.empty((capacity, d))
        coef = np.empty((K, self.n_outputs, capacity))
        if n:
            centers[:n] = self._centers[:n]
            coef[:, :, :n] = self._coef[:, :, :n]
        self._centers, self._coef = centers, coef
        self._sq = np.empty(capacity)
        self._kb = np.empty((self.n_widths, capacity))
        self._mwork = np.empty((3, capacity if self.n_outputs > 1 else 1))
        self._mblock = np.empty((capacity if self.n_outputs > 1 else 1, self.n_outputs))
        cdef double[:, ::1] bv = self._mblock
        self.mblock = &bv[0, 0]
        rn = np.empty((K, capacity if self.n_outputs > 1 else 1))
        if n and self.n_outputs > 1:
            rn[:, :n] = self._rn[:, :n]
        self._rn = rn
        cdef double[:, ::1] rv = rn
        self.rn = &rv[0, 0]
        cdef double[:, ::1] cv = centers, kv = self._kb, mv = self._mwork
        cdef double[:, :, ::1] av = coef
        cdef double[::1] qv = self._sq
        self.centers, self.coef, self.kb, self.sq = &cv[0, 0], &av[0, 0, 0], &kv[0, 0], &qv[0]
        self.mnorm, self.mbound, self.mdot = &mv[0, 0], &mv[1, 0], &mv[2, 0]
        self.capacity = capacity

    def reserve(self, Py_ssize_t n_new):
        """Make room for `n_new` more centres (capped by the budget), doubling."""
        cdef Py_ssize_t need = self.n_support + n_new
        if self.budget:
            need = min(need, self.room())
        if need > self.capacity:
            target = max(need, 2 * self.capacity)
            self._allocate(min(target, self.room()) if self.budget else target)

    # -- the hot path (nogil, no allocation) -------------------------------------------

    cdef double cgamma_scale(self) noexcept nogil:
        """1 / tr(Cov) of the inputs learned so far (auto), 1 / n_features before any spread
        (and once it overflowed: a width of 0 made K = exp(0 inf) = NaN at a far centre)."""
        cdef double total = 0.0
        cdef Py_ssize_t j
        if not self.auto:
            return 1.0
        for j in range(self.n_features):
            total += self.m2[j]
        if self.n_seen < 2.0 or not total > 0.0 or not isfinite(total):   # no (finite) spread
            return 1.0 / self.n_features
        return self.n_seen / total

    cdef void cdecisions(self, const double* x) noexcept nogil:
        """f[k, c] = f_k(x)_c: the distances once, one exponential per (centre, width)."""
        cdef Py_ssize_t n = self.n_support, cap = self.capacity, i, j, k, c
        cdef Py_ssize_t C = self.n_outputs
        cdef int p, r
        cdef double gs, v
        cdef double* row
        cdef double* prev
        if n == 0:
            for k in range(self.n_learners * C):
                self.f[k] = self.b[k]
            return
        okl_sqdists(n, self.n_features, self.centers, x, self.sq)
        gs = self.cgamma_scale()
        for j in range(self.n_widths):
            row = self.kb + j * cap
            p = self.doublings[j]
            if p == 0:
                memcpy(row, self.sq, n * sizeof(double))
                okl_exp_scaled(n, self.gammas[j] * gs, row)
            else:                   # gammas[j] = 2^p gammas[j - 1]: K_j = K_{j-1}^(2^p)
                prev = row - cap
                for i in range(n):
                    v = prev[i]
                    for r in range(p):
                        v = v * v
                    row[i] = v
        for k in range(self.n_learners):    # one dot product per (learner, class)
            for c in range(C):
                self.f[k * C + c] = self.scale[k] * cdot(
                    self.coef + (k * C + c) * cap, self.kb + self.width_of[k] * cap, n
                ) + self.b[k * C + c]

    cdef void cvote(self, const Hedge* h, double* out) noexcept nogil:
        """With C classes, out[c] = the Hedge weight of the learners whose scores f[k, :]
        have their largest at c (deterministic), or e_c for the class of one drawn learner."""
        cdef Py_ssize_t k, c, K = self.n_learners, C = self.n_outputs
        cdef double u, total = 0.0
        for c in range(C):
            out[c] = 0.0
        if h.combination == STOCHASTIC:
            for k in range(K):
                total += self.q[k]
            u = cuniform(h.seed, self.t) * total
            total = 0.0
            for k in range(K):
                total += self.q[k]
                if total > u:
                    break
            out[cargmax(self.f + k * C, C)] = 1.0
            return
        for k in range(K):
            out[cargmax(self.f + k * C, C)] += self.q[k]

    cdef double ccombine(self, const Hedge* h) noexcept nogil:
        """The combined prediction of f[:] at step t (one output)."""
        cdef Py_ssize_t k, K = self.n_learners
        cdef double out = 0.0, u, total = 0.0, value
        if h.combination == STOCHASTIC:
            for k in range(K):
                total += self.q[k]
            u = cuniform(h.seed, self.t) * total
            total = 0.0
            for k in range(K):
                total += self.q[k]
                if total > u:
                    break
            value = self.f[k]
            if h.task == CLASSIFY:
                return 1.0 if value > 0.0 else -1.0
            return value
        for k in range(K):
            value = self.f[k]
            if h.task == CLASSIFY:
                value = 1.0 if value > 0.0 else -1.0
            out += self.q[k] * value
        return out

    cdef Py_ssize_t cvictim(self) noexcept nogil:
        """The slot the new column takes: NO_EVICTION, NEWCOMER or a slot to replace."""
        cdef Py_ssize_t i, k, slot = 0, n = self.n_support, cap = self.capacity
        cdef Py_ssize_t C = self.n_outputs
        cdef double best = 0.0, new = 0.0, c
        cdef double* row
        if self.budget == 0 or n < self.budget or self.policy == MERGE:
            return NO_EVICTION          # MERGE adds first, then merges (cmerge)
        if self.policy == OLDEST:
            return self.next_slot
        for i in range(n):              # the column norms, row by row (sq is free now)
            self.sq[i] = 0.0
        for k in range(self.n_learners):
            if C > 1:                   # the kept row norms: K n work, not K n C
                c = self.scale[k] * self.scale[k]
                row = self.rn + k * cap
                for i in range(n):
                    self.sq[i] += c * row[i]
                continue
            row = self.coef + k * cap
            for i in range(n):
                c = self.scale[k] * row[i]
                self.sq[i] += c * c
        for i in range(n):
            if i == 0 or self.sq[i] < best:
                best, slot = self.sq[i], i
        for k in range(self.n_learners * C):
            new += self.a[k] * self.a[k]
        return NEWCOMER if new <= best else slot

    cdef int cstep(self, const double* x, double y, double w, const Schedule* s,
                   const LossSpec* loss, const Hedge* h) noexcept nogil:
        """Every learner's step and the Hedge update from f[:] = f_k(x): TAKEN, SKIPPED or
        DIVERGED (nothing changed).  With C classes y is the class index."""
        cdef Py_ssize_t k, c, K = self.n_learners, slot, d = self.n_features, cap = self.capacity
        cdef Py_ssize_t C = self.n_outputs, yi = <Py_ssize_t>y if self.n_outputs > 1 else 0
        cdef double t, ck2, eta_t, lam_t, eta, scale_next, total, lossk, new_scale, delta
        cdef bint add = False, all_reset = True, moves
        cdef Rescale rescale
        cdef int mloss = MC_LOGISTIC if loss.kind == LOGISTIC else MC_HINGE
        for k in range(K * C):
            if not isfinite(self.f[k]):
                return DIVERGED
        if w == 0.0:
            return SKIPPED
        t = self.t + 1.0
        ck2 = self.ck2 if self.ck2 > 1.0 else 1.0
        cschedule(s, t, ck2, NAN, &eta_t, &lam_t)
        new_scale = self.loss_scale
        for k in range(K):
            eta = eta_t * self.eta_scales[k]
            self.factor[k] = 1.0 - lam_t * eta
            scale_next = self.scale[k] * self.factor[k]
            if self.factor[k] <= 0.0 or scale_next < 1e-9 or scale_next > 1e9:
                scale_next = 1.0
            all_reset = all_reset and self.factor[k] <= 0.0
            if C > 1:               # the multiclass step (_multiclass.pyx, `cmstep`)
                moves = cmulti_gradient(mloss, self.f + k * C, yi, C, w, self.g + k * C)
                for c in range(C):
                    self.a[k * C + c] = -eta * self.g[k * C + c]
                    self.bnext[k * C + c] = self.b[k * C + c]
                    if s.intercept == STEP:
                        self.bnext[k * C + c] = self.b[k * C + c] - eta * self.g[k * C + c]
                    if not (isfinite(self.a[k * C + c] / scale_next)
                            and isfinite(self.bnext[k * C + c])):
                        return DIVERGED
                    if moves and not isfinite(self.factor[k] * (self.f[k * C + c]
                                                                - self.b[k * C + c])
                                              + self.a[k * C + c] + self.bnext[k * C + c]):
                        return DIVERGED
                self.z[k] = 0.0 if cargmax(self.f + k * C, C) == yi else 1.0
                add = add or moves
                continue
            # a MEAN offset moves first: the kernel part steps on the residual against b_{t+1}
            self.bnext[k] = self.b[k]
            if s.intercept == MEAN:
                self.bnext[k] = self.b[k] + (y - self.b[k]) * (w / t if w < t else 1.0)
            self.g[k] = w * cgradient(loss, y, self.f[k] - self.b[k] + self.bnext[k])
            self.a[k] = -eta * self.g[k]
            if s.intercept == STEP:
                self.bnext[k] = self.b[k] - eta * self.g[k]
            if not (isfinite(self.a[k] / scale_next) and isfinite(self.bnext[k])):
                return DIVERGED
            if not isfinite(self.factor[k] * (self.f[k] - self.b[k]) + self.a[k]
                            + self.bnext[k]):
                return DIVERGED
            if h.task == CLASSIFY:
                self.z[k] = 0.0 if (self.f[k] > 0.0) == (y > 0.0) else 1.0
            else:
                self.z[k] = closs(loss, self.f[k] - y)
                if not isfinite(self.z[k]):
                    return DIVERGED
                if self.z[k] > new_scale:
                    new_scale = self.z[k]
            add = add or self.g[k] != 0.0
        # -- writes ------------------------------------------------------------------------
        self.loss_scale = new_scale
        total = 0.0
        for k in range(K):
            if h.task == REGRESS:
                self.z[k] = self.z[k] / new_scale if new_scale > 0.0 else 0.0
            self.q[k] = self.q[k] * exp(self.z[k] * log(h.beta))
            total += self.q[k]
        for k in range(K):
            self.q[k] = self.q[k] / total
        if all_reset:
            self.n_support = 0
            self.next_slot = 0
            for k in range(K):
                self.scale[k] = 1.0
        else:
            for k in range(K):
                # block k: C rows of `cap`, the first n_support of each in use
                rescale = cshrink_lazy(self.coef + k * cap * C,
                                       (C - 1) * cap + self.n_support, &self.scale[k],
                                       self.factor[k])
                if C > 1 and rescale != KEPT:   # raw was rescaled or zeroed (rare)
                    for slot in range(self.n_support):
                        self.cnorm_row(k, slot)
        if add:
            slot = self.cvictim()
            if slot != NEWCOMER:
                if slot == NO_EVICTION:
                    slot = self.n_support
                    self.n_support += 1
                elif self.policy == OLDEST:
                    self.next_slot = (slot + 1) % self.budget
                memcpy(self.centers + slot * d, x, d * sizeof(double))
                for k in range(K):
                    for c in range(C):
                        self.coef[(k * C + c) * cap + slot] = self.a[k * C + c] / self.scale[k]
                    if C > 1:
                        self.cnorm_row(k, slot)
                if self.budget and self.policy == MERGE and self.n_support > self.budget:
                    if C == 1:
                        self.cmerge()
                    else:
                        self.cmerge_vectors()
        self.t, self.ck2, self.eta_t, self.lam_t = t, ck2, eta_t, lam_t
        for k in range(K * C):
            self.b[k] = self.bnext[k]
        if self.auto:                   # Welford's running moments of the inputs
            self.n_seen += 1.0
            for k in range(d):
                delta = x[k] - self.mean[k]
                self.mean[k] = self.mean[k] + delta / self.n_seen
                self.m2[k] = self.m2[k] + delta * (x[k] - self.mean[k])
        self.version += 1
        return TAKEN

    cdef void cmerge(self) noexcept nogil:
        """B + 1 centres -> B by BSGD's merge as the leading learner (largest Hedge weight) would
        take it: `cmerge_find` on its coefficient row and width gives the centre m, its partner
        n and z = h x_m + (1 - h) x_n; every learner k keeps the projection of its two terms
        onto its own K_k(z, .), A[k, m] K_k(x_m, z) + A[k, n] K_k(x_n, z).  No partner (partner
        < 0) removes x_m.  The last centre fills slot m."""
        cdef Py_ssize_t N = self.n_support, d = self.n_features, cap = self.capacity
        cdef Py_ssize_t i, k, ref = self.cleader(), m, n, last = N - 1
        cdef double h, cz, loss, dist, g, gs = self.cgamma_scale()
        n = cmerge_find(self.centers, self.coef + ref * cap, N, d,
                        self.gammas[self.width_of[ref]] * gs, self.kb, False, &m, &h, &cz, &loss)
        if n >= 0:
            dist = 0.0
            for i in range(d):
                dist += (self.centers[m * d + i] - self.centers[n * d + i]) ** 2
            cmerge_point(self.centers + m * d, self.centers + n * d, d, h, self.zbuf)
            for k in range(self.n_learners):
                g = self.gammas[self.width_of[k]] * gs
                # K(x_m, z) = 1 at h = 1 (K(x_n, z) at h = 0), also when dist overflowed to inf
                self.coef[k * cap + n] = (
                    self.coef[k * cap + m] * (exp(-g * (1.0 - h) * (1.0 - h) * dist)
                                              if h != 1.0 else 1.0)
                    + self.coef[k * cap + n] * (exp(-g * h * h * dist) if h != 0.0 else 1.0))
            memcpy(self.centers + n * d, self.zbuf, d * sizeof(double))
        if m != last:
            memcpy(self.centers + m * d, self.centers + last * d, d * sizeof(double))
            for k in range(self.n_learners):
                self.coef[k * cap + m] = self.coef[k * cap + last]
        self.n_support = last

    cdef Py_ssize_t cleader(self) noexcept nogil:
        """The first learner of largest Hedge weight (ties within 1e-9, which the engines'
        rounding cannot split)."""
        cdef Py_ssize_t k
        cdef double top = 0.0
        for k in range(self.n_learners):
            if self.q[k] > top:
                top = self.q[k]
        for k in range(self.n_learners):
            if self.q[k] >= top * (1.0 - 1e-9):
                return k
        return 0

    cdef void cmerge_vectors(self) noexcept nogil:
        """`cmerge` with C class scores: B + 1 centres -> B by the vector merge of
        `MultiExpansion` (`cmulti_merge_find`: m of least ||a_m||, its partner, h) on the
        leading learner's (centres x C) block and width; every learner k keeps the projection
        of its two terms onto its own K_k(z, .), coefficient vector by vector."""
        cdef Py_ssize_t N = self.n_support, d = self.n_features, cap = self.capacity
        cdef Py_ssize_t C = self.n_outputs, i, k, c, ref = self.cleader(), m, n, last = N - 1
        cdef double h = 0.0, loss = 0.0, dist, g, gs = self.cgamma_scale(), v, em, en, top = 0.0
        cdef const double* block = self.mblock
        for i in range(N):
            v = 0.0
            for c in range(C):
                self.mblock[i * C + c] = self.coef[(ref * C + c) * cap + i]
                v += self.mblock[i * C + c] * self.mblock[i * C + c]
            self.mnorm[i] = v
            if v > top:
                top = v
        m = okl_merge_argmin(N, self.mnorm)
        if m < 0:
            m = 0
        n = -1                  # the leader does not use x_m (NEGLIGIBLE): remove it
        if self.mnorm[m] > NEGLIGIBLE * top:
            g = self.gammas[self.width_of[ref]] * gs
            okl_sqdists(N, d, self.centers, self.centers + m * d, self.sq)
            okl_exp_scaled(N, g, self.sq)       # K_ref(x_i, x_m)
            n = cmulti_merge_find(self.centers, block, N, d, C, g, self.sq, self.mnorm, m,
                                  self.mbound, self.mdot, &h, self.az, &loss)
            if n >= 0 and not (self.mnorm[m] - loss
                               > NO_GAIN * (self.mnorm[m] + self.mnorm[n])):
                n = -1          # no gain beyond rounding: remove x_m (NO_GAIN)
        if n >= 0:
            dist = 0.0
            for i in range(d):
                dist += (self.centers[m * d + i] - self.centers[n * d + i]) ** 2
            cmerge_point(self.centers + m * d, self.centers + n * d, d, h, self.zbuf)
            for k in range(self.n_learners):
                g = self.gammas[self.width_of[k]] * gs
                em = exp(-g * (1.0 - h) * (1.0 - h) * dist)
                en = exp(-g * h * h * dist)
                for c in range(C):
                    self.coef[(k * C + c) * cap + n] = (self.coef[(k * C + c) * cap + m] * em
                                                        + self.coef[(k * C + c) * cap + n] * en)
                self.cnorm_row(k, n)
            memcpy(self.centers + n * d, self.zbuf, d * sizeof(double))
        if m != last:
            memcpy(self.centers + m * d, self.centers + last * d, d * sizeof(double))
            for k in range(self.n_learners):
                for c in range(C):
                    self.coef[(k * C + c) * cap + m] = self.coef[(k * C + c) * cap + last]
                self.rn[k * cap + m] = self.rn[k * cap + last]
        self.n_support = last

    cdef void cpredict(self, const Hedge* h, double* out) noexcept nogil:
        """The combined prediction of f[:] into out[0] (one output) or out[0..C)."""
        if self.n_outputs == 1:
            out[0] = self.ccombine(h)
        else:
            self.cvote(h, out)

    # -- Python face ---------------------------------------------------------------------

    def learn(self, const double[:, ::1] X, const double[::1] y, const double[::1] weight,
              Schedule schedule, LossSpec loss, Hedge hedge, double[:, ::1] pred_out):
        """Predict-then-update over the rows: the index of the first divergent row, or -1.

        pred_out is (rows, n_outputs); with C classes y holds class indices."""
        cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1], failed = -1, work = 0
        cdef bint interrupted = False, weighted = weight is not None
        cdef double w = 1.0
        if d != self.n_features or y.shape[0] != n or pred_out.shape[0] != n or (
                pred_out.shape[1] != self.n_outputs) or (weighted and weight.shape[0] != n):
            raise ValueError("X, y, weight and pred_out do not match the model.")
        if self.n_outputs > 1:
            for i in range(n):
                if not (0 <= y[i] < self.n_outputs and y[i] == <Py_ssize_t>y[i]):
                    raise ValueError(f"y[{i}] = {y[i]} is not a class index in "
                                     f"[0, {self.n_outputs}).")
        if schedule.kind != AUTO and schedule.kind != POWER:
            raise ValueError("A MultiKernel takes the AUTO or POWER step.")
        self.reserve(n)
        with nogil:
            for i in range(n):
                if cinterrupted(&work, self.n_support * (d + self.n_learners * self.n_outputs
                                                          + self.n_widths)):
                    interrupted = True
                    break
                self.cdecisions(&X[i, 0])
                self.cpredict(&hedge, &pred_out[i, 0])
                if weighted:
                    w = weight[i]
                if self.cstep(&X[i, 0], y[i], w, &schedule, &loss, &hedge) == DIVERGED:
                    failed = i
                    break
        if interrupted:
            craise_pending()
        return failed

    def predict(self, const double[:, ::1] X, Hedge hedge):
        """The combined prediction of every row (at the current step): (rows,), or
        (rows, C) votes with C classes."""
        cdef Py_ssize_t i, n = X.shape[0]
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the model {self.n_features}.")
        out = np.empty((n, self.n_outputs))
        cdef double[:, ::1] o = out
        for i in range(n):
            self.cdecisions(&X[i, 0])
            self.cpredict(&hedge, &o[i, 0])
        return out[:, 0] if self.n_outputs == 1 else out

    def decisions(self, const double[:, ::1] X):
        """f_k(x) of every learner at every row: (rows, learners), or (rows, learners, C)."""
        cdef Py_ssize_t i, k, n = X.shape[0], KC = self.n_learners * self.n_outputs
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the model {self.n_features}.")
        out = np.empty((n, KC))
        cdef double[:, ::1] o = out
        for i in range(n):
            self.cdecisions(&X[i, 0])
            for k in range(KC):
                o[i, k] = self.f[k]
        return out if self.n_outputs == 1 else out.reshape(n, self.n_learners, self.n_outputs)

    @property
    def centers_(self):
        return self._centers[:self.n_support].copy()

    @property
    def coef_(self):
        """(learners, n_support) coefficients, (learners, n_support, C) with C classes."""
        coef = self._scale[:, None, None] * self._coef[:, :, :self.n_support]
        return coef[:, 0] if self.n_outputs == 1 else coef.transpose(0, 2, 1).copy()

    @property
    def q_(self):
        return self._q.copy()

    @property
    def b_(self):
        return self._b.copy() if self.n_outputs == 1 else self._b.reshape(self.n_learners, -1)

    # -- state (checkpoints, pickle, okl.save, engine switch) ------------------------------

    def get_state(self):
        n = self.n_support
        return dict(n_features=self.n_features, gammas=self._gammas.copy(),
                    width_of=self._width_of.astype(np.int64), eta_scales=self._eta_scales.copy(),
                    auto=bool(self.auto), budget=self.budget, policy=self.policy,
                    next_slot=self.next_slot, centers=self.centers_,
                    coef=self._coef[:, 0, :n].copy() if self.n_outputs == 1 else
                    self._coef[:, :, :n].transpose(0, 2, 1).copy(), scale=self._scale.copy(),
                    b=self.b_,
                    q=self._q.copy(), t=self.t, ck2=self.ck2, eta_t=self.eta_t,
                    lam_t=self.lam_t, n_seen=self.n_seen, mean=self._mean.copy(),
                    m2=self._m2.copy(), loss_scale=self.loss_scale, n_outputs=self.n_outputs)

    def _set_state(self, p):
        n = np.size(p["centers"]) // self.n_features
        coef = np.asarray(p["coef"], dtype=np.float64).reshape(self.n_learners, n,
                                                               self.n_outputs)
        self.n_support = 0
        self.reserve(n)
        self._centers[:n] = np.asarray(p["centers"], dtype=np.float64).reshape(n, self.n_features)
        self._coef[:, :, :n] = coef.transpose(0, 2, 1)
        cdef Py_ssize_t k, i
        if self.n_outputs > 1:          # the kept row norms, by the rule of every write
            for k in range(self.n_learners):
                for i in range(n):
                    self.cnorm_row(k, i)
        self.n_support, self.next_slot = n, int(p["next_slot"])
        self._scale[:] = p["scale"]
        self._b[:] = np.ravel(p["b"])
        self._q[:] = p["q"]
        self._mean[:] = p["mean"]
        self._m2[:] = p["m2"]
        self.t, self.ck2 = float(p["t"]), float(p["ck2"])
        self.eta_t, self.lam_t = float(p["eta_t"]), float(p["lam_t"])
        self.n_seen, self.loss_scale = float(p["n_seen"]), float(p["loss_scale"])
        self.version += 1

    @classmethod
    def from_state(cls, p):
        cdef MultiKernel self = cls(p["n_features"], p["gammas"], p["width_of"],
                                    p["eta_scales"], bool(p["auto"]), p["budget"], p["policy"],
                                    int(p.get("n_outputs", 1)))
        self._set_state(p)
        return self

    def checkpoint(self, Py_ssize_t n_new):
        return self.get_state()

    def restore(self, state):
        self._set_state(state)

    def __reduce__(self):
        return (_rebuild, (self.get_state(),))


def _rebuild(state):
    return MultiKernel.from_state(state)


cdef inline bint row_is_finite(const double* x, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(d):
        if not isfinite(x[j]):
            return False
    return True


cdef class MultiKernelEvents(Events):
    """One-event predict and learn of a `MultiKernel` (no allocation, no Python loop).

    `names` are the estimator attributes `matches` compares (the model and the
    parameters): `_pointwise.Events`, the base of every one-event step.
    """
    cdef MultiKernel model
    cdef Schedule schedule
    cdef LossSpec loss
    cdef Hedge hedge
    # the last prediction (every f_k and the combination) and the model version it was made on
    cdef double[::1] last_row, last_f, last_out
    cdef bint has_last
    cdef Py_ssize_t last_version

    def __init__(self, MultiKernel model, Schedule schedule, LossSpec loss, Hedge hedge,
                 str name, tuple names=()):
        if schedule.kind != AUTO and schedule.kind != POWER:
            raise ValueError("A MultiKernel takes the AUTO or POWER step.")
        self.model, self.schedule, self.loss, self.hedge = model, schedule, loss, hedge
        self.name, self.names = name, names
        self.values = tuple([model] + [None] * (len(names) - 1))
        self.last_row = np.empty(model.n_features)
        self.last_f = np.empty(model.n_learners * model.n_outputs)
        self.last_out = np.empty(model.n_outputs)
        self.has_last = False
        self.ready = True

    cdef object _predict(self, const double* x):
        """The combination at x (a float, or C votes), f_k left in model.f; "predict, then
        learn" on the same row and model reuses the prediction (every write to the model
        changes its `version`)."""
        cdef MultiKernel m = self.model
        cdef Py_ssize_t d = m.n_features, KC = m.n_learners * m.n_outputs
        if not (self.has_last and m.version == self.last_version
                and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            m.cdecisions(x)
            m.cpredict(&self.hedge, &self.last_out[0])
            memcpy(&self.last_row[0], x, d * sizeof(double))
            memcpy(&self.last_f[0], m.f, KC * sizeof(double))
            self.last_version = m.version
            self.has_last = True
        else:
            memcpy(m.f, &self.last_f[0], KC * sizeof(double))
        if m.n_outputs == 1:
            return self.last_out[0]
        return np.array(self.last_out)

    cdef _check(self, const double[::1] x, str action):
        if x.shape[0] != self.model.n_features:
            raise ValueError(f"X has {x.shape[0]} features, but {self.name} is expecting "
                             f"{self.model.n_features} features as input.")
        if not row_is_finite(&x[0], x.shape[0]):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             f"non-finite values cannot be {action}.")

    def learner_values(self):
        """Every learner's f_k (K,) or scores (K, C) at the row last predicted."""
        values = np.array(self.last_f)
        return values if self.model.n_outputs == 1 else values.reshape(self.model.n_learners, -1)

    def predict(self, const double[::1] x, t=None, b=None):
        """The combined prediction of one row."""
        self._check(x, "predicted")
        return self._predict(&x[0])

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        """`learn`, and the counters the learner's `_store` keeps (t_, n_support_)."""
        self.learn(x, y, 1.0)
        attrs["t_"] = <long long>self.model.t
        attrs["n_support_"] = self.model.n_support
        return 1

    cdef object cpredict(self, dict attrs, object x):
        return self.predict(x)

    def learn(self, const double[::1] x, double y, double weight):
        """Predict, then learn one row; returns (the combined prediction, taken).

        Raises, leaving the model as it was, on NaN/inf in x or divergence.
        """
        cdef MultiKernel m = self.model
        cdef int status
        self._check(x, "learned")
        if m.n_outputs > 1 and not (0 <= y < m.n_outputs and y == <Py_ssize_t>y):
            raise ValueError(f"y = {y} is not a class index in [0, {m.n_outputs}).")
        if weight != 0.0 and m.n_support == m.capacity and not (
                m.budget and m.n_support >= m.room()):
            m.reserve(1)
        out = self._predict(&x[0])
        craise_signals()                # a Ctrl-C so far: raised before any write
        status = m.cstep(&x[0], y, weight, &self.schedule, &self.loss, &self.hedge)
        if status == DIVERGED:
            raise FloatingPointError(
                f"{self.name} diverged at step t={<Py_ssize_t>m.t + 1}: the model would no "
                "longer be finite. Use eta='auto' or a smaller eta, or scale X (e.g. with "
                "okl.preprocessing.OnlineStandardScaler). The model is left as it was.")
        return out, status == TAKEN
