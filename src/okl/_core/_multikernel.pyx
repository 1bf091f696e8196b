"""Online multiple kernel learning: K Gaussian learners on one support set (docs/multikernel.md).

Learner k has the width ``gammas[width_of[k]]`` (times the running scale
1 / tr(Cov) of the inputs when `auto`), the step ``eta_scales[k] eta_t`` and
its own offset b_k; its coefficients are row k of the (learners x centres)
matrix, each row with a lazy scale (`_lazy.pxd`).  One event computes the
squared distances to the centres once, one exponential per (centre, width),
then every learner's NORMA step (the step of `_pointwise.pyx`, one column
added to the matrix) and the Hedge update of the weights q (Jin, Hoi and
Yang 2010; Hoi, Jin, Zhao and Yang 2013).  A step checks everything before
its first write.  The NumPy twin is `okl._numpy.multikernel`.
"""
import numpy as np

from libc.math cimport NAN, exp, isfinite, log
from libc.stdint cimport uint64_t
from libc.string cimport memcmp, memcpy

from okl._core._kernels cimport cdot, okl_exp_scaled, okl_sqdists
from okl._core._lazy cimport RENORMALISED, cshrink_lazy
from okl._core._losses cimport LossSpec, cgradient, closs
from okl._core._merge cimport cmerge_find, cmerge_point
from okl._core._pointwise cimport AUTO, MEAN, POWER, STEP, Schedule, cschedule
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals
from okl._numpy.multikernel import doublings


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
        0 replaces the oldest centre, 1 the one whose coefficient column has the
        smallest norm (the newcomer's own column included), 2 merges as BSGD
        does for the leading learner (`cmerge`).
    """
    cdef readonly Py_ssize_t n_features, n_learners, n_widths, n_support, capacity
    cdef readonly Py_ssize_t budget, next_slot, version
    cdef readonly int policy
    cdef readonly bint auto
    cdef readonly double t, ck2, eta_t, lam_t, n_seen, loss_scale
    cdef object _doublings, _gammas, _width_of, _eta_scales, _scale, _b, _q, _mean, _m2
    cdef object _centers, _coef, _sq, _kb, _work, _z
    cdef double* gammas
    cdef Py_ssize_t* width_of
    cdef int* doublings            # (n_widths,) p > 0: gammas[j] = 2^p gammas[j - 1] exactly
    cdef double* eta_scales
    cdef double* scale             # (K,) lazy scale of each row
    cdef double* b                 # (K,) offsets
    cdef double* q                 # (K,) Hedge weights, summing to 1
    cdef double* mean              # (d,) running mean (auto)
    cdef double* m2                # (d,) running sums of squared deviations (auto)
    cdef double* centers           # (capacity, d)
    cdef double* coef              # (K, capacity) raw, row k times scale[k]
    cdef double* sq                # (capacity,) squared distances to x
    cdef double* kb                # (n_widths, capacity) kernel rows
    cdef double* f                 # work: (K,) f_k(x), then the step's values
    cdef double* g
    cdef double* a
    cdef double* factor
    cdef double* bnext
    cdef double* z
    cdef double* zbuf              # (d,) the merged point

    def __init__(self, Py_ssize_t n_features, gammas, width_of, eta_scales, bint auto=False,
                 Py_ssize_t budget=0, int policy=OLDEST):
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
        self.n_features, self.n_widths, self.n_learners = n_features, len(gammas), len(width_of)
        self.auto, self.budget, self.policy = auto, budget, policy
        K = self.n_learners
        self._gammas, self._width_of, self._eta_scales = gammas.copy(), width_of.copy(), \
            eta_scales.copy()
        self._scale, self._b = np.ones(K), np.zeros(K)
        self._q = np.full(K, 1.0 / K)
        self._mean, self._m2 = np.zeros(n_features), np.zeros(n_features)
        self._work = np.zeros((6, K))
        self._z = np.zeros(n_features)
        cdef double[::1] zv = self._z
        self.zbuf = &zv[0]
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
        self.factor, self.bnext, self.z = &work[3, 0], &work[4, 0], &work[5, 0]
        self.n_support = self.next_slot = self.capacity = self.version = 0
        self.t = self.ck2 = self.n_seen = self.loss_scale = 0.0
        self.eta_t = self.lam_t = NAN
        self._allocate(16 if budget == 0 else min(16, self.room()))

    cpdef Py_ssize_t room(self):
        """Slots a full budget needs: B, or B + 1 under MERGE (the newcomer's, until the merge)."""
        return self.budget + 1 if self.policy == MERGE else self.budget

    cdef _allocate(self, Py_ssize_t capacity):
        cdef Py_ssize_t n = self.n_support, d = self.n_features, K = self.n_learners
        centers = np.empty((capacity, d))
        coef = np.empty((K, capacity))
        if n:
            centers[:n] = self._centers[:n]
            coef[:, :n] = self._coef[:, :n]
        self._centers, self._coef = centers, coef
        self._sq = np.empty(capacity)
        self._kb = np.empty((self.n_widths, capacity))
        cdef double[:, ::1] cv = centers, av = coef, kv = self._kb
        cdef double[::1] qv = self._sq
        self.centers, self.coef, self.kb, self.sq = &cv[0, 0], &av[0, 0], &kv[0, 0], &qv[0]
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
        """f[k] = f_k(x): the distances once, one exponential per (centre, width)."""
        cdef Py_ssize_t n = self.n_support, cap = self.capacity, i, j, k
        cdef int p, r
        cdef double gs, v
        cdef double* row
        cdef double* prev
        if n == 0:
            for k in range(self.n_learners):
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
        for k in range(self.n_learners):
            self.f[k] = self.scale[k] * cdot(self.coef + k * cap,
                                             self.kb + self.width_of[k] * cap, n) + self.b[k]

    cdef double ccombine(self, const Hedge* h) noexcept nogil:
        """The combined prediction of f[:] at step t."""
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
        cdef double best = 0.0, new = 0.0, c
        cdef double* row
        if self.budget == 0 or n < self.budget or self.policy == MERGE:
            return NO_EVICTION          # MERGE adds first, then merges (cmerge)
        if self.policy == OLDEST:
            return self.next_slot
        for i in range(n):              # the column norms, row by row (sq is free now)
            self.sq[i] = 0.0
        for k in range(self.n_learners):
            row = self.coef + k * cap
            for i in range(n):
                c = self.scale[k] * row[i]
                self.sq[i] += c * c
        for i in range(n):
            if i == 0 or self.sq[i] < best:
                best, slot = self.sq[i], i
        for k in range(self.n_learners):
            new += self.a[k] * self.a[k]
        return NEWCOMER if new <= best else slot

    cdef int cstep(self, const double* x, double y, double w, const Schedule* s,
                   const LossSpec* loss, const Hedge* h) noexcept nogil:
        """Every learner's step and the Hedge update from f[:] = f_k(x): TAKEN, SKIPPED or
        DIVERGED (nothing changed)."""
        cdef Py_ssize_t k, K = self.n_learners, slot, d = self.n_features, cap = self.capacity
        cdef double t, ck2, eta_t, lam_t, eta, scale_next, total, lossk, new_scale, delta
        cdef bint add = False, all_reset = True
        for k in range(K):
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
            # a MEAN offset moves first: the kernel part steps on the residual against b_{t+1}
            self.bnext[k] = self.b[k]
            if s.intercept == MEAN:
                self.bnext[k] = self.b[k] + (y - self.b[k]) * (w / t if w < t else 1.0)
            self.g[k] = w * cgradient(loss, y, self.f[k] - self.b[k] + self.bnext[k])
            self.factor[k] = 1.0 - lam_t * eta
            self.a[k] = -eta * self.g[k]
            if s.intercept == STEP:
                self.bnext[k] = self.b[k] - eta * self.g[k]
            scale_next = self.scale[k] * self.factor[k]
            if self.factor[k] <= 0.0 or scale_next < 1e-9 or scale_next > 1e9:
                scale_next = 1.0
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
            all_reset = all_reset and self.factor[k] <= 0.0
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
                cshrink_lazy(self.coef + k * cap, self.n_support, &self.scale[k],
                             self.factor[k])
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
                    self.coef[k * cap + slot] = self.a[k] / self.scale[k]
                if self.budget and self.policy == MERGE and self.n_support > self.budget:
                    self.cmerge()
        self.t, self.ck2, self.eta_t, self.lam_t = t, ck2, eta_t, lam_t
        for k in range(K):
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
        cdef Py_ssize_t i, k, ref = 0, m, n, last = N - 1
        cdef double h, cz, loss, dist, g, gs = self.cgamma_scale(), top = 0.0
        for k in range(self.n_learners):   # the first of the largest weights (ties: within
            if self.q[k] > top:                # 1e-9, which the engines' rounding cannot split)
                top = self.q[k]
        for k in range(self.n_learners):
            if self.q[k] >= top * (1.0 - 1e-9):
                ref = k
                break
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

    # -- Python face ---------------------------------------------------------------------

    def learn(self, const double[:, ::1] X, const double[::1] y, const double[::1] weight,
              Schedule schedule, LossSpec loss, Hedge hedge, double[::1] pred_out):
        """Predict-then-update over the rows: the index of the first divergent row, or -1."""
        cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1], failed = -1, work = 0
        cdef bint interrupted = False, weighted = weight is not None
        cdef double w = 1.0
        if d != self.n_features or y.shape[0] != n or pred_out.shape[0] != n or (
                weighted and weight.shape[0] != n):
            raise ValueError("X, y, weight and pred_out do not match the model.")
        if schedule.kind != AUTO and schedule.kind != POWER:
            raise ValueError("A MultiKernel takes the AUTO or POWER step.")
        self.reserve(n)
        with nogil:
            for i in range(n):
                if cinterrupted(&work, self.n_support * (d + self.n_learners + self.n_widths)):
                    interrupted = True
                    break
                self.cdecisions(&X[i, 0])
                pred_out[i] = self.ccombine(&hedge)
                if weighted:
                    w = weight[i]
                if self.cstep(&X[i, 0], y[i], w, &schedule, &loss, &hedge) == DIVERGED:
                    failed = i
                    break
        if interrupted:
            craise_pending()
        return failed

    def predict(self, const double[:, ::1] X, Hedge hedge):
        """The combined prediction of every row (at the current step)."""
        cdef Py_ssize_t i, n = X.shape[0]
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the model {self.n_features}.")
        out = np.empty(n)
        cdef double[::1] o = out
        for i in range(n):
            self.cdecisions(&X[i, 0])
            o[i] = self.ccombine(&hedge)
        return out

    def decisions(self, const double[:, ::1] X):
        """(rows, learners): f_k(x) of every learner at every row."""
        cdef Py_ssize_t i, k, n = X.shape[0], K = self.n_learners
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the model {self.n_features}.")
        out = np.empty((n, K))
        cdef double[:, ::1] o = out
        for i in range(n):
            self.cdecisions(&X[i, 0])
            for k in range(K):
                o[i, k] = self.f[k]
        return out

    @property
    def centers_(self):
        return self._centers[:self.n_support].copy()

    @property
    def coef_(self):
        """(learners, n_support) coefficients."""
        return self._scale[:, None] * self._coef[:, :self.n_support]

    @property
    def q_(self):
        return self._q.copy()

    @property
    def b_(self):
        return self._b.copy()

    # -- state (checkpoints, pickle, okl.save, engine switch) ------------------------------

    def get_state(self):
        n = self.n_support
        return dict(n_features=self.n_features, gammas=self._gammas.copy(),
                    width_of=self._width_of.astype(np.int64), eta_scales=self._eta_scales.copy(),
                    auto=bool(self.auto), budget=self.budget, policy=self.policy,
                    next_slot=self.next_slot, centers=self.centers_,
                    coef=self._coef[:, :n].copy(), scale=self._scale.copy(), b=self._b.copy(),
                    q=self._q.copy(), t=self.t, ck2=self.ck2, eta_t=self.eta_t,
                    lam_t=self.lam_t, n_seen=self.n_seen, mean=self._mean.copy(),
                    m2=self._m2.copy(), loss_scale=self.loss_scale)

    def _set_state(self, p):
        coef = np.asarray(p["coef"], dtype=np.float64).reshape(self.n_learners, -1)
        n = coef.shape[1]
        self.n_support = 0
        self.reserve(n)
        self._centers[:n] = np.asarray(p["centers"], dtype=np.float64).reshape(n, self.n_features)
        self._coef[:, :n] = coef
        self.n_support, self.next_slot = n, int(p["next_slot"])
        self._scale[:] = p["scale"]
        self._b[:] = p["b"]
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
                                    p["eta_scales"], bool(p["auto"]), p["budget"], p["policy"])
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


cdef class MultiKernelEvents:
    """One-event predict and learn of a `MultiKernel` (no allocation, no Python loop).

    `names` are the estimator attributes `matches` compares (the model and the
    parameters), as `_pointwise.PointwiseEvents`.
    """
    cdef MultiKernel model
    cdef Schedule schedule
    cdef LossSpec loss
    cdef Hedge hedge
    cdef object name
    cdef tuple names, values
    # the last prediction (every f_k and the combination) and the model version it was made on
    cdef double[::1] last_row, last_f
    cdef bint has_last
    cdef double last_out
    cdef Py_ssize_t last_version

    def __init__(self, MultiKernel model, Schedule schedule, LossSpec loss, Hedge hedge,
                 str name, tuple names=()):
        if schedule.kind != AUTO and schedule.kind != POWER:
            raise ValueError("A MultiKernel takes the AUTO or POWER step.")
        self.model, self.schedule, self.loss, self.hedge = model, schedule, loss, hedge
        self.name, self.names = name, names
        self.values = tuple([model] + [None] * (len(names) - 1))
        self.last_row = np.empty(model.n_features)
        self.last_f = np.empty(model.n_learners)
        self.has_last = False

    cdef double _predict(self, const double* x):
        """The combination at x, f_k left in model.f; "predict, then learn" on the same row and
        model reuses the prediction (every write to the model changes its `version`)."""
        cdef MultiKernel m = self.model
        cdef Py_ssize_t d = m.n_features, K = m.n_learners
        if (self.has_last and m.version == self.last_version
                and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            memcpy(m.f, &self.last_f[0], K * sizeof(double))
            return self.last_out
        m.cdecisions(x)
        self.last_out = m.ccombine(&self.hedge)
        memcpy(&self.last_row[0], x, d * sizeof(double))
        memcpy(&self.last_f[0], m.f, K * sizeof(double))
        self.last_version = m.version
        self.has_last = True
        return self.last_out

    def bind(self, est):
        self.values = tuple([est.__dict__.get(name) for name in self.names])

    cpdef bint matches(self, est):
        cdef dict attrs = est.__dict__
        cdef Py_ssize_t i
        for i in range(len(self.names)):
            if attrs.get(self.names[i], self) is not self.values[i]:
                return False
        return True

    cdef _check(self, const double[::1] x, str action):
        if x.shape[0] != self.model.n_features:
            raise ValueError(f"X has {x.shape[0]} features, but {self.name} is expecting "
                             f"{self.model.n_features} features as input.")
        if not row_is_finite(&x[0], x.shape[0]):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             f"non-finite values cannot be {action}.")

    def predict(self, const double[::1] x, t=None, b=None):
        """The combined prediction of one row."""
        self._check(x, "predicted")
        return self._predict(&x[0])

    def learn(self, const double[::1] x, double y, double weight):
        """Predict, then learn one row; returns (the combined prediction, taken).

        Raises, leaving the model as it was, on NaN/inf in x or divergence.
        """
        cdef MultiKernel m = self.model
        cdef double out
        cdef int status
        self._check(x, "learned")
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
