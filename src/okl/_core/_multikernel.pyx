"""Online multiple kernel learning: a pool of learners combined by Hedge (docs/multikernel.md).

The pool holds `n_gauss` Gaussian learners on one shared support set, then
`n_linear` linear learners (the kernel (<x - m, u - m> + r) / ((d + 1) r) on the inputs
centred by their running mean m, r the mean squared entry of the centred inputs).
Gaussian learner k has the width ``gammas[width_of[k]]`` (times the running scale 1 /
tr(Cov) of the inputs when `auto`), its coefficients are block k of the (learners x
outputs x centres) array, each block with a lazy scale (`_lazy.pxd`): a score is one
SIMD dot product of a coefficient row with the width's kernel row (the state and the
NumPy twin hold (learners x centres x outputs)). Linear learner l holds the weights of
the centred features and its intercept, block l of the
(learners x outputs x (d + 1)) array, also lazily scaled.  Learner k steps
``eta_scales[k]`` times the schedule's eta_t (the papers' decaying step), or,
when ``forgetting[k] > 0``, a constant step (eta_1 times its scale) and a shrink
by the factor forgetting[k] at every step (docs/multikernel.md, section 9); the
SCALED schedule divides a Gaussian learner's step by kbar of its width, the mean
kernel value between each of the first `C_WARMUP` events and the centres before
it, and a linear learner's by the linear kernel's mean between two inputs, 1 / (d + 1)
(docs/multikernel.md, section 4).
One output (binary classification, regression) is f_k(x) in R; n_outputs = C
>= 3 are the scores of C classes (docs/multiclass.md), learner k a multiclass
NORMA learner.  One event computes the squared distances to the centres once,
one exponential per (centre, width), then every learner's NORMA step (the step
of `_pointwise.pyx`, or `_multiclass.pxd`'s gradient with C classes; one centre
added for all Gaussian learners) and the Hedge update of the weights q (Jin,
Hoi and Yang 2010; Hoi, Jin, Zhao and Yang 2013), with a fixed share (Herbster
and Warmuth 1998).  A step checks everything before its first write.  The NumPy
twin is `okl._numpy.multikernel`.
"""
import numpy as np

from libc.math cimport INFINITY, NAN, exp, isfinite, log, sqrt
from libc.stdint cimport uint64_t
from libc.string cimport memcmp, memcpy

from okl._core._bayes cimport limit_densities, log_density
from okl._core._kernels cimport cdot, okl_exp_scaled, okl_sqdists
from okl._core._lazy cimport KEPT, RENORMALISED, Rescale, cshrink_lazy
from okl._core._losses cimport LOGISTIC, LossSpec, cgradient, closs
from okl._core._merge cimport cmerge_find, cmerge_point
from okl._core._multiclass cimport HINGE as MC_HINGE, LOGISTIC as MC_LOGISTIC
from okl._core._multiclass cimport cgradient as cmulti_gradient
from okl._core._multiexpansion cimport cmulti_merge_find
from okl._core._pointwise cimport (
    AUTO, MEAN, POWER, SCALED, STEP, Events, Schedule, cschedule,
)
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals
from okl._core._warmup cimport C_WARMUP
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
    double share        # fixed share: q <- (1 - share) q + share / K after each update
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
    """A pool of kernel learners (Gaussian ones on one support set, linear ones) combined by
    Hedge weights.

    Parameters
    ----------
    n_features : int
    gammas : array of shape (n_widths,)
        The widths (relative to the running scale when `auto`).
    width_of : int array of shape (n_learners,)
        The width of each learner, -1 for a linear learner (the linear learners come last).
    eta_scales : array of shape (n_learners,)
        The step of learner k is eta_scales[k] eta_t (eta_1 when it forgets).
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
    forgetting : array of shape (n_learners,) or None
        0: the papers' decaying step; a factor in (0, 1]: a constant step and
        that shrink at every step (None: every learner decays).
    """
    cdef readonly Py_ssize_t n_features, n_learners, n_widths, n_support, capacity, n_outputs
    cdef readonly Py_ssize_t n_gauss, n_linear
    cdef readonly Py_ssize_t budget, next_slot, version, kb_stamp
    cdef readonly int policy
    cdef readonly bint auto
    cdef readonly double t, ck2, eta_t, lam_t, n_seen, loss_scale, kbar_pairs
    cdef object _doublings, _gammas, _width_of, _eta_scales, _forget, _scale, _b, _q, _mean
    cdef object _m2, _centers, _coef, _lin, _sq, _kb, _work, _z, _mwork, _az, _rn, _mblock
    cdef object _wwork, _kbar, _xc
    cdef double* gammas
    cdef Py_ssize_t* width_of
    cdef int* doublings            # (n_widths,) p > 0: gammas[j] = 2^p gammas[j - 1] exactly
    cdef double* eta_scales
    cdef double* forget            # (K,) 0: decaying step; else the forgetting factor
    cdef double* scale             # (K,) lazy scale of each row
    cdef double* b                 # (K, C) offsets
    cdef double* q                 # (K,) Hedge weights, summing to 1
    cdef double* mean              # (d,) running mean of the inputs
    cdef double* m2                # (d,) running sums of squared deviations
    cdef double* centers           # (capacity, d)
    cdef double* coef              # (n_gauss, C, capacity) raw, block k times scale[k]
    cdef double* lin               # (n_linear, C, d + 1) raw, block l times scale[n_gauss + l]
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
    cdef double* xc                # (d,) the event centred by the running mean (linear learners)
    cdef double* rn                # (n_gauss, capacity) with C outputs: ||raw coef[k, i, :]||^2
    cdef double* mnorm             # (capacity,) merge work with C outputs: row norms, bounds, dots
    cdef double* mbound
    cdef double* mdot
    cdef double* az                # (C,)
    cdef double* em                # (n_widths,) the merge's K_j(x_m, z), K_j(x_n, z)
    cdef double* en
    cdef double* kbar_sum          # (n_widths,) sum of K_j(x_s, centres before s), s <= C_WARMUP
    cdef double* kbar_next         # (n_widths,) the step's sums, written once it is taken

    def __init__(self, Py_ssize_t n_features, gammas, width_of, eta_scales, bint auto=False,
                 Py_ssize_t budget=0, int policy=OLDEST, Py_ssize_t n_outputs=1,
                 forgetting=None):
        gammas = np.ascontiguousarray(gammas, dtype=np.float64)
        width_of = np.ascontiguousarray(width_of, dtype=np.intp)
        eta_scales = np.ascontiguousarray(eta_scales, dtype=np.float64)
        forget = np.zeros(len(width_of)) if forgetting is None else \
            np.ascontiguousarray(forgetting, dtype=np.float64)
        if n_features < 1 or gammas.ndim != 1 or len(gammas) < 1:
            raise ValueError("A MultiKernel needs n_features >= 1 and at least one width.")
        if (width_of.ndim != 1 or len(width_of) < 1 or eta_scales.shape != width_of.shape
                or forget.shape != width_of.shape or width_of.min() < -1
                or width_of.max() >= len(gammas)
                or np.any(np.diff((width_of < 0).astype(np.intp)) < 0)):
            raise ValueError("width_of, eta_scales and forgetting must give every learner a "
                             "width index (-1: linear, after the Gaussian learners).")
        if not np.all((forget == 0.0) | ((forget > 0.0) & (forget <= 1.0))):
            raise ValueError("A learner's forgetting is 0 (the decaying step) or in (0, 1].")
        if budget < 0 or policy not in (OLDEST, SMALLEST, MERGE):
            raise ValueError(f"Bad budget {budget} or policy code {policy}.")
        if n_outputs < 1 or n_outputs == 2:
            raise ValueError(f"n_outputs is 1 (a scalar f) or the number of classes >= 3, "
                             f"not {n_outputs}.")
        self.n_features, self.n_widths, self.n_learners = n_features, len(gammas), len(width_of)
        self.n_linear = int(np.sum(width_of < 0))
        self.n_gauss = self.n_learners - self.n_linear
        self.auto, self.budget, self.policy = auto, budget, policy
        self.n_outputs = n_outputs
        K, C = self.n_learners, n_outputs
        self._gammas, self._width_of, self._eta_scales = gammas.copy(), width_of.copy(), \
            eta_scales.copy()
        self._forget = forget.copy()
        self._scale, self._b = np.ones(K), np.zeros(K * C)
        self._q = np.full(K, 1.0 / K)
        self._mean, self._m2 = np.zeros(n_features), np.zeros(n_features)
        self._lin = np.zeros((max(self.n_linear, 1), C, n_features + 1))
        self._work = np.zeros((6, K * C))
        self._wwork = np.zeros((2, self.n_widths))
        self._kbar = np.zeros((2, self.n_widths))
        self._z, self._xc = np.zeros(n_features), np.zeros(n_features)
        self._az = np.zeros(C)
        cdef double[::1] zv = self._z, azv = self._az, xcv = self._xc
        self.zbuf, self.xc = &zv[0], &xcv[0]
        self.az = &azv[0]
        cdef double[::1] gv = self._gammas, ev = self._eta_scales, sv = self._scale
        cdef double[::1] fv = self._forget
        cdef double[::1] bv = self._b, qv = self._q, mv = self._mean, m2v = self._m2
        cdef Py_ssize_t[::1] wv = self._width_of
        self._doublings = np.ascontiguousarray(doublings(gammas), dtype=np.intc)
        cdef int[::1] dv = self._doublings
        self.doublings = &dv[0]
        cdef double[:, ::1] work = self._work, ww = self._wwork, kv = self._kbar
        cdef double[:, :, ::1] lv = self._lin
        self.gammas, self.width_of, self.eta_scales = &gv[0], &wv[0], &ev[0]
        self.forget, self.lin = &fv[0], &lv[0, 0, 0]
        self.scale, self.b, self.q, self.mean, self.m2 = &sv[0], &bv[0], &qv[0], &mv[0], &m2v[0]
        self.f, self.g, self.a = &work[0, 0], &work[1, 0], &work[2, 0]
        self.bnext, self.factor, self.z = &work[3, 0], &work[4, 0], &work[5, 0]
        self.em, self.en = &ww[0, 0], &ww[1, 0]
        self.kbar_sum, self.kbar_next = &kv[0, 0], &kv[1, 0]
        self.n_support = self.next_slot = self.capacity = self.version = self.kb_stamp = 0
        self.t = self.ck2 = self.n_seen = self.loss_scale = self.kbar_pairs = 0.0
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
        cdef Py_ssize_t n = self.n_support, d = self.n_features, K = self.n_gauss
        centers = np.empty((capacity, d))
        coef = np.empty((max(K, 1), self.n_outputs, capacity))
        if n:
            centers[:n] = self._centers[:n]
            coef[:K, :, :n] = self._coef[:K, :, :n]
        self._centers, self._coef = centers, coef
        self._sq = np.empty(capacity)
        self._kb = np.empty((self.n_widths, capacity))
        self._mwork = np.empty((3, capacity if self.n_outputs > 1 else 1))
        self._mblock = np.empty((capacity if self.n_outputs > 1 else 1, self.n_outputs))
        cdef double[:, ::1] bv = self._mblock
        self.mblock = &bv[0, 0]
        rn = np.empty((max(K, 1), capacity if self.n_outputs > 1 else 1))
        if n and self.n_outputs > 1:
            rn[:K, :n] = self._rn[:K, :n]
        self._rn = rn
        cdef double[:, ::1] rv = rn
        self.rn = &rv[0, 0]
        cdef double[:, ::1] cv = centers, kv = self._kb, mv = self._mwork
        cdef double[:, :, ::1] av = coef
        cdef double[::1] qv = self._sq
        self.centers, self.coef, self.kb, self.sq = &cv[0, 0], &av[0, 0, 0], &kv[0, 0], &qv[0]
        self.mnorm, self.mbound, self.mdot = &mv[0, 0], &mv[1, 0], &mv[2, 0]
        self.capacity = capacity
        self.kb_stamp += 1              # the kernel rows are gone

    def reserve(self, Py_ssize_t n_new):
        """Make room for `n_new` more centres (capped by the budget), doubling."""
        cdef Py_ssize_t need = self.n_support + n_new
        if self.budget:
            need = min(need, self.room())
        if need > self.capacity:
            target = max(need, 2 * self.capacity)
            self._allocate(min(target, self.room()) if self.budget else target)

    # -- the hot path (nogil, no allocation) -------------------------------------------

    cdef double cspread(self) noexcept nogil:
        """n_seen tr(Cov) of the inputs learned so far, 0 before any (finite) spread."""
        cdef double total = 0.0
        cdef Py_ssize_t j
        for j in range(self.n_features):
            total += self.m2[j]
        if self.n_seen < 2.0 or not total > 0.0 or not isfinite(total):
            return 0.0
        return total

    cdef double cgamma_scale(self) noexcept nogil:
        """1 / tr(Cov) of the inputs learned so far (auto), 1 / n_features before any spread
        (and once it overflowed: a width of 0 made K = exp(0 inf) = NaN at a far centre)."""
        cdef double total
        if not self.auto:
            return 1.0
        total = self.cspread()
        return self.n_seen / total if total > 0.0 else 1.0 / self.n_features

    cdef double ccentred(self, const double* x) noexcept nogil:
        """xc = x - m, m the running mean of the inputs learned so far (x itself before the
        first, so that a shifted stream is centred alike): the linear learners' input; returns
        ||xc||^2."""
        cdef Py_ssize_t j
        for j in range(self.n_features):
            self.xc[j] = x[j] - self.mean[j] if self.n_seen else 0.0
        return cdot(self.xc, self.xc, self.n_features)

    cdef double clinear_offset(self, double xx) noexcept nogil:
        """r_t, the mean squared entry of the centred inputs learned so far and this one
        (xx = ||x_t - m||^2): the linear learners' kernel is (<x - m, u - m> + r_t) / ((d + 1)
        r_t), an intercept on the scale of one feature, of mean K(x, x) = 1 (r_t = 1 while
        every input is the same)."""
        cdef double total = 0.0, r
        cdef Py_ssize_t j
        for j in range(self.n_features):
            total += self.m2[j]
        r = (total + xx) / ((self.n_seen + 1.0) * self.n_features)
        return r if r > 0.0 else 1.0

    cdef void cdecisions(self, const double* x) noexcept nogil:
        """f[k, c] = f_k(x)_c: the distances once, one exponential per (centre, width), one dot
        product per (Gaussian learner, class); (x - m) . w per (linear learner, class)."""
        cdef Py_ssize_t n = self.n_support, cap = self.capacity, i, j, k, c, d = self.n_features
        cdef Py_ssize_t C = self.n_outputs, KG = self.n_gauss
        cdef int p, r
        cdef double gs
        cdef double* row
        cdef double* prev
        cdef const double* w
        cdef bint far
        self.kb_stamp += 1
        if n == 0:
            for k in range(KG * C):
                self.f[k] = self.b[k]
        elif KG:
            okl_sqdists(n, d, self.centers, x, self.sq)
            gs = self.cgamma_scale()
            for j in range(self.n_widths):
                row = self.kb + j * cap
                p = self.doublings[j]
                if p == 0:
                    memcpy(row, self.sq, n * sizeof(double))
                    okl_exp_scaled(n, self.gammas[j] * gs, row)
                    continue
                prev = row - cap        # gammas[j] = 2^p gammas[j - 1]: K_j = K_{j-1}^(2^p)
                for i in range(n):
                    row[i] = prev[i] * prev[i]
                for r in range(1, p):
                    for i in range(n):
                        row[i] = row[i] * row[i]
            for k in range(KG):     # one dot product per (learner, class)
                for c in range(C):
                    self.f[k * C + c] = self.scale[k] * cdot(
                        self.coef + (k * C + c) * cap, self.kb + self.width_of[k] * cap, n
                    ) + self.b[k * C + c]
        far = self.n_linear and not isfinite(self.ccentred(x))
        for k in range(KG, self.n_learners):
            for c in range(C):      # ||x - m||^2 overflows: the linear kernel is 0, as exp(-inf)
                w = self.lin + ((k - KG) * C + c) * (d + 1)
                self.f[k * C + c] = self.b[k * C + c] if far else \
                    self.scale[k] * (cdot(w, self.xc, d) + w[d]) + self.b[k * C + c]

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
        for k in range(self.n_gauss):
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
        for k in range(self.n_gauss * C):
            new += self.a[k] * self.a[k]
        return NEWCOMER if new <= best else slot

    cdef int cstep(self, const double* x, double y, double w, const Schedule* s,
                   const LossSpec* loss, const Hedge* h) noexcept nogil:
        """Every learner's step and the Hedge update from f[:] = f_k(x): TAKEN, SKIPPED or
        DIVERGED (nothing changed).  With C classes y is the class index."""
        cdef Py_ssize_t i, k, c, j, K = self.n_learners, KG = self.n_gauss, slot
        cdef Py_ssize_t d = self.n_features, cap = self.capacity
        cdef Py_ssize_t C = self.n_outputs, yi = <Py_ssize_t>y if self.n_outputs > 1 else 0
        cdef double t, ck2, kxx = 1.0, eta_t, lam_t, eta, scale_next
        cdef double eta_1, unused, total, new_scale, delta, coef, r = 1.0, nx = 1.0
        cdef double pairs = self.kbar_pairs, k_linear = 1.0, xx  # the linear steps over k_linear
        cdef bint warm
        cdef bint add = False, all_reset = True, moves, linear
        cdef Rescale rescale
        cdef double* wrow
        cdef int mloss = MC_LOGISTIC if loss.kind == LOGISTIC else MC_HINGE
        for k in range(K * C):
            if not isfinite(self.f[k]):
                return DIVERGED
        if w == 0.0:
            return SKIPPED
        t = self.t + 1.0
        ck2 = self.ck2 if self.ck2 > 1.0 else 1.0
        cschedule(s, t, ck2, NAN, &eta_t, &lam_t)
        cschedule(s, 1.0, ck2, NAN, &eta_1, &unused)      # the forgetting learners' step
        if self.n_linear:       # the kernel (<x - m, u - m> + r) nx, nx = 1 / ((d + 1) r)
            xx = self.ccentred(x)
            r = self.clinear_offset(xx)
            nx = 1.0 / ((d + 1.0) * r)
            kxx = (xx + r + 1.0) * nx           # K(x_t, x_t) and more: bounds every |xc_j| nx
            if not isfinite(kxx):               # ||x - m||^2 overflows: no linear learner moves
                kxx, r, nx = 0.0, 0.0, 0.0
            elif s.kind == SCALED:  # the linear kernel's mean between two inputs: 1 / (d + 1)
                k_linear = r * nx
            elif s.kind == AUTO:    # K(x_t, x_t), where it exceeds 1: normalised LMS
                k_linear = max(1.0, (xx + r) * nx)
        # kbar: the first C_WARMUP steps' kernel rows join the sums, at widths from the data
        # (auto: once two inputs differ, so that a stream scaled by any factor steps the same)
        warm = t <= C_WARMUP and KG and (not self.auto or self.cspread() > 0.0)
        for j in range(self.n_widths):
            self.kbar_next[j] = self.kbar_sum[j]
            if warm:
                for i in range(self.n_support):
                    self.kbar_next[j] += self.kb[j * cap + i]
        if warm:
            pairs += self.n_support
        new_scale = self.loss_scale
        for k in range(K):
            linear = k >= KG
            if self.forget[k] > 0.0:
                eta = eta_1 * self.eta_scales[k]
                self.factor[k] = self.forget[k]
            else:
                eta = eta_t * self.eta_scales[k]
            if linear:
                eta = eta / k_linear
            elif s.kind == SCALED:                  # over the width's kernel mean
                eta = eta * (pairs + 1.0) / (self.kbar_next[self.width_of[k]] + 1.0)
            if self.forget[k] == 0.0:
                self.factor[k] = 1.0 - lam_t * eta
            scale_next = self.scale[k] * self.factor[k]
            if self.factor[k] <= 0.0 or scale_next < 1e-9 or scale_next > 1e9:
                scale_next = 1.0
            if not linear:
                all_reset = all_reset and self.factor[k] <= 0.0
            if C > 1:               # the multiclass step (_multiclass.pyx, `cmstep`)
                moves = cmulti_gradient(mloss, self.f + k * C, yi, C, w, self.g + k * C)
                for c in range(C):
                    self.a[k * C + c] = -eta * self.g[k * C + c]
                    self.bnext[k * C + c] = self.b[k * C + c]
                    if s.intercept == STEP:
                        self.bnext[k * C + c] = self.b[k * C + c] - eta * self.g[k * C + c]
                    if not (isfinite(self.a[k * C + c] * (kxx if linear else 1.0) / scale_next)
                            and isfinite(self.bnext[k * C + c])):
                        return DIVERGED
                    if moves and not isfinite(self.factor[k] * (self.f[k * C + c]
                                                                - self.b[k * C + c])
                                              + self.a[k * C + c] * (kxx if linear else 1.0)
                                              + self.bnext[k * C + c]):
                        return DIVERGED
                self.z[k] = 0.0 if cargmax(self.f + k * C, C) == yi else 1.0
                add = add or (moves and not linear)
                continue
            # a MEAN offset moves first: the kernel part steps on the residual against b_{t+1}
            self.bnext[k] = self.b[k]
            if s.intercept == MEAN:
                self.bnext[k] = self.b[k] + (y - self.b[k]) * (w / t if w < t else 1.0)
            self.g[k] = w * cgradient(loss, y, self.f[k] - self.b[k] + self.bnext[k])
            self.a[k] = -eta * self.g[k]
            if s.intercept == STEP:
                self.bnext[k] = self.b[k] - eta * self.g[k]
            if not (isfinite(self.a[k] * (kxx if linear else 1.0) / scale_next)
                    and isfinite(self.bnext[k])):
                return DIVERGED
            if not isfinite(self.factor[k] * (self.f[k] - self.b[k])
                            + self.a[k] * (kxx if linear else 1.0) + self.bnext[k]):
                return DIVERGED
            if h.task == CLASSIFY:
                self.z[k] = 0.0 if (self.f[k] > 0.0) == (y > 0.0) else 1.0
            else:
                self.z[k] = closs(loss, self.f[k] - y)
                if not isfinite(self.z[k]):
                    return DIVERGED
                if self.z[k] > new_scale:
                    new_scale = self.z[k]
            add = add or (self.g[k] != 0.0 and not linear)
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
            if h.share > 0.0:       # fixed share (Herbster and Warmuth)
                self.q[k] = (1.0 - h.share) * self.q[k] + h.share / K
        for k in range(KG, K):      # the linear learners: w <- factor w + a nx (x - m, r)
            wrow = self.lin + (k - KG) * C * (d + 1)
            cshrink_lazy(wrow, C * (d + 1), &self.scale[k], self.factor[k])
            for c in range(C):
                coef = self.a[k * C + c] / self.scale[k] * nx
                if coef != 0.0:
                    for j in range(d):
                        wrow[c * (d + 1) + j] += coef * self.xc[j]
                    wrow[c * (d + 1) + d] += coef * r
        if all_reset and KG:
            self.n_support = 0
            self.next_slot = 0
            for k in range(KG):
                self.scale[k] = 1.0
        else:
            for k in range(KG):
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
                for k in range(KG):
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
        self.kbar_pairs = pairs
        for j in range(self.n_widths):
            self.kbar_sum[j] = self.kbar_next[j]
        for k in range(K * C):
            self.b[k] = self.bnext[k]
        self.n_seen += 1.0              # Welford's running moments of the inputs
        for k in range(d):
            delta = x[k] - self.mean[k]
            self.mean[k] = self.mean[k] + delta / self.n_seen
            self.m2[k] = self.m2[k] + delta * (x[k] - self.mean[k])
        self.version += 1
        return TAKEN

    cdef void cmerge(self) noexcept nogil:
        """B + 1 centres -> B by BSGD's merge as the leading learner (`cleader`) would take it:
        `cmerge_find` on its coefficient row and width gives the centre m, its partner n (the
        partner of least tabulated degradation: one exact solve) and z = h x_m + (1 - h) x_n;
        every learner k keeps the projection of its two terms onto its own K_k(z, .),
        A[k, m] K_k(x_m, z) + A[k, n] K_k(x_n, z).  No partner (partner < 0) removes x_m.
        The last centre fills slot m.  When m is the newcomer (nearly always), the leader's
        kernel row of this event gives every k."""
        cdef Py_ssize_t N = self.n_support, d = self.n_features, cap = self.capacity
        cdef Py_ssize_t i, j, k, ref = self.cleader(), m, n, last = N - 1
        cdef double h, cz, loss, dist, g, gs = self.cgamma_scale()
        n = cmerge_find(self.centers, self.coef + ref * cap, N, d,
                        self.gammas[self.width_of[ref]] * gs, self.kb + self.width_of[ref] * cap,
                        True, &m, &h, &cz, &loss, False)
        if n >= 0:
            dist = 0.0
            for i in range(d):
                dist += (self.centers[m * d + i] - self.centers[n * d + i]) ** 2
            cmerge_point(self.centers + m * d, self.centers + n * d, d, h, self.zbuf)
            for j in range(self.n_widths):
                g = self.gammas[j] * gs
                # K(x_m, z) = 1 at h = 1 (K(x_n, z) at h = 0), also when dist overflowed to inf
                self.em[j] = exp(-g * (1.0 - h) * (1.0 - h) * dist) if h != 1.0 else 1.0
                self.en[j] = exp(-g * h * h * dist) if h != 0.0 else 1.0
            for k in range(self.n_gauss):
                self.coef[k * cap + n] = (self.coef[k * cap + m] * self.em[self.width_of[k]]
                                          + self.coef[k * cap + n] * self.en[self.width_of[k]])
            memcpy(self.centers + n * d, self.zbuf, d * sizeof(double))
        if m != last:
            memcpy(self.centers + m * d, self.centers + last * d, d * sizeof(double))
            for k in range(self.n_gauss):
                self.coef[k * cap + m] = self.coef[k * cap + last]
        self.n_support = last

    cdef Py_ssize_t cleader(self) noexcept nogil:
        """The first Gaussian learner of largest Hedge weight among those whose steps decay (all
        of them when none does), ties within 1e-9 (which the engines' rounding cannot split).
        A forgetting learner's smallest coefficients are its oldest centres, which the
        learners of long memory need (docs/multikernel.md, section 9)."""
        cdef Py_ssize_t k
        cdef double top = -1.0
        cdef bint any_decays = False
        for k in range(self.n_gauss):
            any_decays = any_decays or self.forget[k] == 0.0
        for k in range(self.n_gauss):
            if self.q[k] > top and (self.forget[k] == 0.0 or not any_decays):
                top = self.q[k]
        for k in range(self.n_gauss):
            if self.q[k] >= top * (1.0 - 1e-9) and (self.forget[k] == 0.0 or not any_decays):
                return k
        return 0

    cdef void cmerge_vectors(self) noexcept nogil:
        """`cmerge` with C class scores: B + 1 centres -> B by the vector merge of
        `MultiExpansion` (`cmulti_merge_find`: m of least ||a_m||, its partner, h) on the
        leading learner's (centres x C) block and width; every learner k keeps the projection
        of its two terms onto its own K_k(z, .), coefficient vector by vector."""
        cdef Py_ssize_t N = self.n_support, d = self.n_features, cap = self.capacity
        cdef Py_ssize_t C = self.n_outputs, i, j, k, c, ref = self.cleader(), m, n, last = N - 1
        cdef double h = 0.0, loss = 0.0, dist, g, gs = self.cgamma_scale(), v, top = 0.0
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
            for j in range(self.n_widths):
                g = self.gammas[j] * gs
                self.em[j] = exp(-g * (1.0 - h) * (1.0 - h) * dist)
                self.en[j] = exp(-g * h * h * dist)
            for k in range(self.n_gauss):
                for c in range(C):
                    self.coef[(k * C + c) * cap + n] = (
                        self.coef[(k * C + c) * cap + m] * self.em[self.width_of[k]]
                        + self.coef[(k * C + c) * cap + n] * self.en[self.width_of[k]])
                self.cnorm_row(k, n)
            memcpy(self.centers + n * d, self.zbuf, d * sizeof(double))
        if m != last:
            memcpy(self.centers + m * d, self.centers + last * d, d * sizeof(double))
            for k in range(self.n_gauss):
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
        if schedule.kind != AUTO and schedule.kind != POWER and schedule.kind != SCALED:
            raise ValueError("A MultiKernel takes the AUTO, SCALED or POWER step.")
        self.reserve(n)
        with nogil:
            for i in range(n):
                if cinterrupted(&work, self.n_support * (d + self.n_gauss * self.n_outputs
                                                          + self.n_widths)
                                + self.n_linear * self.n_outputs * d):
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
        """(Gaussian learners, n_support) coefficients, (..., n_support, C) with C classes."""
        KG = self.n_gauss
        coef = self._scale[:KG, None, None] * self._coef[:KG, :, :self.n_support]
        return coef[:, 0] if self.n_outputs == 1 else coef.transpose(0, 2, 1).copy()

    @property
    def linear_coef_(self):
        """(linear learners, d + 1) weights on the raw inputs (the intercept last: the
        intercept learned on x - m less the weights' product with m), (..., d + 1, C) with C
        classes."""
        L, d = self.n_linear, self.n_features
        w = self._scale[self.n_gauss:, None, None] * self._lin[:L]
        if self.n_seen:
            w[:, :, d] -= w[:, :, :d] @ self._mean
        return w[:, 0] if self.n_outputs == 1 else w.transpose(0, 2, 1).copy()

    @property
    def q_(self):
        return self._q.copy()

    @property
    def b_(self):
        return self._b.copy() if self.n_outputs == 1 else self._b.reshape(self.n_learners, -1)

    # -- state (checkpoints, pickle, okl.save, engine switch) ------------------------------

    def get_state(self):
        n, KG, L = self.n_support, self.n_gauss, self.n_linear
        lin = self._lin[:L]
        return dict(n_features=self.n_features, gammas=self._gammas.copy(),
                    width_of=self._width_of.astype(np.int64), eta_scales=self._eta_scales.copy(),
                    forgetting=self._forget.copy(),
                    auto=bool(self.auto), budget=self.budget, policy=self.policy,
                    next_slot=self.next_slot, centers=self.centers_,
                    coef=self._coef[:KG, 0, :n].copy() if self.n_outputs == 1 else
                    self._coef[:KG, :, :n].transpose(0, 2, 1).copy(),
                    linear_coef=lin[:, 0].copy() if self.n_outputs == 1 else
                    lin.transpose(0, 2, 1).copy(), scale=self._scale.copy(),
                    b=self.b_,
                    q=self._q.copy(), t=self.t, ck2=self.ck2,
                    eta_t=self.eta_t, lam_t=self.lam_t, n_seen=self.n_seen,
                    mean=self._mean.copy(), m2=self._m2.copy(), loss_scale=self.loss_scale,
                    kbar_sum=self._kbar[0].copy(), kbar_pairs=self.kbar_pairs,
                    n_outputs=self.n_outputs)

    def _set_state(self, p):
        n = np.size(p["centers"]) // self.n_features
        KG, L, C, d = self.n_gauss, self.n_linear, self.n_outputs, self.n_features
        coef = np.asarray(p["coef"], dtype=np.float64).reshape(KG, n, C)
        self.n_support = 0
        self.reserve(n)
        self._centers[:n] = np.asarray(p["centers"], dtype=np.float64).reshape(n, d)
        self._coef[:KG, :, :n] = coef.transpose(0, 2, 1)
        if L:
            self._lin[:L] = np.asarray(p["linear_coef"], dtype=np.float64).reshape(
                L, d + 1, C).transpose(0, 2, 1)
        cdef Py_ssize_t k, i
        if self.n_outputs > 1:          # the kept row norms, by the rule of every write
            for k in range(KG):
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
        self._kbar[0] = p["kbar_sum"]
        self.kbar_pairs = float(p["kbar_pairs"])
        self.version += 1

    @classmethod
    def from_state(cls, p):
        cdef MultiKernel self = cls(p["n_features"], p["gammas"], p["width_of"],
                                    p["eta_scales"], bool(p["auto"]), p["budget"], p["policy"],
                                    int(p.get("n_outputs", 1)), p["forgetting"])
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
    parameters): `_pointwise.Events`, the base of every one-event step.  Without
    `learns` (a classifier that knows one class) an event is checked and predicted, and
    nothing is learned.
    """
    cdef readonly bint learns
    cdef MultiKernel model
    cdef Schedule schedule
    cdef LossSpec loss
    cdef Hedge hedge
    # the last prediction (every f_k and the combination), the model version it was made on
    # and the kernel rows it left (the merge reads the leader's)
    cdef double[::1] last_row, last_f, last_out
    cdef bint has_last
    cdef Py_ssize_t last_version, last_stamp

    def __init__(self, MultiKernel model, Schedule schedule, LossSpec loss, Hedge hedge,
                 str name, tuple names=(), bint learns=True):
        if schedule.kind != AUTO and schedule.kind != POWER and schedule.kind != SCALED:
            raise ValueError("A MultiKernel takes the AUTO, SCALED or POWER step.")
        self.model, self.schedule, self.loss, self.hedge = model, schedule, loss, hedge
        self.learns = learns
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
        changes its `version`; every other prediction its kernel rows' `kb_stamp`)."""
        cdef MultiKernel m = self.model
        cdef Py_ssize_t d = m.n_features, KC = m.n_learners * m.n_outputs
        if not (self.has_last and m.version == self.last_version
                and m.kb_stamp == self.last_stamp
                and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            m.cdecisions(x)
            m.cpredict(&self.hedge, &self.last_out[0])
            memcpy(&self.last_row[0], x, d * sizeof(double))
            memcpy(&self.last_f[0], m.f, KC * sizeof(double))
            self.last_version = m.version
            self.last_stamp = m.kb_stamp
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
        if not self.learns:
            return out, False
        craise_signals()                # a Ctrl-C so far: raised before any write
        status = m.cstep(&x[0], y, weight, &self.schedule, &self.loss, &self.hedge)
        if status == DIVERGED:
            raise FloatingPointError(
                f"{self.name} diverged at step t={<Py_ssize_t>m.t + 1}: the model would no "
                "longer be finite. Use eta='auto' or a smaller eta, or scale X (e.g. with "
                "okl.preprocessing.OnlineStandardScaler). The model is left as it was.")
        return out, status == TAKEN


# -- MultiKernelRegressor(learner="krls"): Bayesian model averaging of KRLS learners ----------

def bayes_mixture(const double[:, ::1] F, const double[:, ::1] S, const double[::1] y,
                  const double[::1] weight, double[::1] logw, double share, double[::1] mean,
                  double[::1] std):
    """Bayesian model averaging of K learners over n events (docs/krls.md, section 9).

    Event i: the mixture's mean ``f = sum_k w_k F[i, k]`` and standard deviation
    ``sqrt(sum_k w_k (S[i, k]^2 + F[i, k]^2) - f^2)`` with the weights w = exp(logw)
    before the event (into `mean`, `std`); then every weight is multiplied by the
    predictive density N(y_i; F[i, k], S[i, k]^2) to the power weight[i] (0: the event
    is not learned), normalised and mixed with the fixed
    share, ``w <- (1 - share) w + share / K``, and `logw` holds its logarithm.  A learner
    certain of its prediction (S = 0) takes the limit of its density: the weight goes to
    the learners that predicted y exactly, and none moves when every learner is certain
    and wrong (`limit_densities`).  Returns the first event whose F, S or y is not finite
    or whose S is < 0 (`logw` then holds the weights before that event), or -1.  The
    NumPy twin is
    `okl._numpy.multikernel.bayes_mixture`.
    """
    cdef Py_ssize_t n = F.shape[0], K = F.shape[1], i, k, failed = -1
    cdef bint bad
    cdef double f, second, top, z, mix = 0.0
    cdef double[::1] work = np.empty(K)
    if S.shape[0] != n or S.shape[1] != K or y.shape[0] != n or weight.shape[0] != n \
            or logw.shape[0] != K or mean.shape[0] != n or std.shape[0] != n:
        raise ValueError("bayes_mixture: F, S, y, weight, logw, mean and std do not agree "
                         "in shape")
    if K:
        mix = share / K
    with nogil:
        for i in range(n):
            bad = not (isfinite(y[i]) and isfinite(weight[i]))
            for k in range(K):
                if not (isfinite(F[i, k]) and isfinite(S[i, k]) and S[i, k] >= 0.0):
                    bad = True
            if bad:
                failed = i
                break
            f = 0.0
            second = 0.0
            top = -INFINITY
            for k in range(K):
                z = exp(logw[k])
                f += z * F[i, k]
                second += z * (S[i, k] * S[i, k] + F[i, k] * F[i, k])
                work[k] = log_density(y[i] - F[i, k], S[i, k] * S[i, k], weight[i], logw[k])
                if work[k] > top:
                    top = work[k]
            top = limit_densities(&work[0], &logw[0], K, top)
            mean[i] = f
            second -= f * f
            std[i] = sqrt(second) if second > 0.0 else 0.0
            z = 0.0
            for k in range(K):
                work[k] = exp(work[k] - top)
                z += work[k]
            for k in range(K):
                logw[k] = log((1.0 - share) * work[k] / z + mix)
    return failed
