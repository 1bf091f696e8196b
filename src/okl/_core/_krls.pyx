"""Kernel recursive least squares: KRLS-T, ALD and budgets, compiled (docs/krls.md).

`KRLSModel` holds a Gaussian-process posterior over f in whitened coordinates of a
dictionary of centres (R = L^-1, K_D = L L^T; f(x) = b + l(x)^T u, l(x) = R k_D(x)) and
`cstep` is its one step: predict, one Kalman update (a new centre's coordinate enters when
its residual gamma2 passes nu), forgetting (back to the prior, or with `inflate` by
uncertainty injection bounded by the prior), the offset and signal scale,
and over budget one centre marginalised by Givens rotations; with a change detector
(`set_drift`, docs/drift.md) the residual of each event over the targets' mean absolute
deviation is watched before the update, and at a change the posterior forgets toward the
prior by `Drift.keep` after it.
The NumPy engine's twin,
`okl._numpy.krls`, documents each operation; this file takes the same ones in the same
order.  Callers: `fit_chunk` (the nogil loop of a chunk) and `KRLSEvents` (one event).
Every step is O(m^2) with m centres and allocates nothing.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, NAN, exp, fabs, hypot, isfinite, log, log1p, sqrt
from libc.string cimport memcmp, memcpy, memmove, memset

from okl._core._bayes cimport limit_densities, log_density
from okl._core._drift cimport (
    Drift, DriftState, cdrift_loss, cdrift_tuple, cread_drift, cwatch,
)
from okl._core._kernels cimport (
    KernelSpec, cdot, ckernel_row, ckernel_row_norms, cself, kernel_spec, spec_params,
)
from okl._core._linear cimport FeatureRow
from okl._core._pointwise cimport Events, cready, row_is_finite
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals

cnp.import_array()


cdef extern from "_krls.h" nogil:
    void okl_krls_update(Py_ssize_t n, Py_ssize_t cap, double* cov, const double* g, double c,
                         double a, double shift)
    void okl_krls_inflate(Py_ssize_t n, Py_ssize_t cap, double* cov, const double* g, double c,
                          double lam, double* d)
    void okl_axpy(Py_ssize_t n, double a, const double* x, double* y)
    void okl_rotate_rows(Py_ssize_t n, double* u, double* v, double c, double s)
    void okl_rotate_columns(Py_ssize_t n, Py_ssize_t cap, double* cov, Py_ssize_t r,
                            Py_ssize_t m, const double* cs, const double* sn)


cpdef enum Prune:
    SIGNIFICANCE = 0    # KRLS-T: the centre whose removal costs the least squared error
    OLDEST = 1          # a sliding window
    FREEZE = 2          # a full dictionary takes no centre (the Nystroem approximation)


cdef enum:
    TAKEN = 0
    DIVERGED = 2


# a centre joins only if its residual is above this fraction of k(x, x) (okl._numpy.krls)
cdef double RESIDUAL_FLOOR = 1e-12


cdef class Posterior:
    """The posterior of the whitened coordinates (or feature weights), the offset b and the
    signal scale, shared by `KRLSModel` and `RLSFeatures` (`okl._numpy.krls.Posterior`)."""
    cdef readonly Py_ssize_t n_features, n_support, capacity
    cdef readonly double noise, forgetting
    cdef readonly bint intercept, inflate
    cdef public double t, b, wsum, nums, dens
    # dev / devw: the targets' mean absolute deviation from b (the watched residual's scale)
    cdef public double dev, devw
    cdef double[:, ::1] cov
    cdef double[::1] mean, ones, kb, lv, gv
    # change detection (docs/drift.md): the settings, the state (a working copy of the
    # learner's _drift_state, set before each call) and whether the steps watch
    cdef Drift drift
    cdef DriftState dstate
    cdef bint watching
    # the last row `cpredict` evaluated (`crecall`): lv, gv hold its whitened row and
    # cov times it, while `held` (cleared by every change of the state)
    cdef double[::1] held_x
    cdef bint held
    cdef double held_f, held_sf2, held_gamma2, held_kxx, held_t, held_b
    cdef Py_ssize_t held_m

    def scale(self):
        """s02, the signal scale the variances are in units of (1 until an event counts)."""
        return self.nums / self.dens if self.dens > 0.0 else 1.0

    def _scalars(self):
        return dict(t=self.t, b=self.b, wsum=self.wsum, nums=self.nums, dens=self.dens,
                    dev=self.dev, devw=self.devw)

    def _set_scalars(self, state):
        self.t, self.b, self.wsum = float(state["t"]), float(state["b"]), float(state["wsum"])
        self.nums, self.dens = float(state["nums"]), float(state["dens"])
        # a state saved before the deviation: it starts at 0
        self.dev, self.devw = float(state.get("dev", 0.0)), float(state.get("devw", 0.0))
        self.held = False

    cdef void chold(self, const double* x, double f, double sf2, double gamma2,
                    double kxx) noexcept nogil:
        """Remember the evaluation of row x that `cpredict` just left in lv and gv."""
        memcpy(&self.held_x[0], x, self.n_features * sizeof(double))
        self.held_f, self.held_sf2, self.held_gamma2, self.held_kxx = f, sf2, gamma2, kxx
        self.held_t, self.held_b, self.held_m = self.t, self.b, self.n_support
        self.held = True

    cdef bint crecall(self, const double* x) noexcept nogil:
        """Whether lv and gv hold the evaluation of row x on the current state (the same
        bytes, `cpredict` the last to write them, no change since): a step then takes it."""
        return (self.held and self.held_t == self.t and self.held_b == self.b
                and self.held_m == self.n_support
                and memcmp(&self.held_x[0], x, self.n_features * sizeof(double)) == 0)

    def set_drift(self, drift, state=None, double t=0.0):
        """The steps that follow watch with the settings `drift` (a dict of the `Drift`
        fields, `okl._numpy.drift.make_drift`; None: they do not) from the drift state
        `state` (the learner's `_drift_state`, or None: nothing seen, the clock at t)."""
        cdef Drift d
        if drift is None:
            self.watching = False
            return
        d.detector, d.delta, d.threshold = drift["detector"], drift["delta"], drift["threshold"]
        d.floor, d.min_events = drift["floor"], drift["min_events"]
        d.forgetting, d.keep = drift["forgetting"], drift["keep"]
        self.cset_drift(&d, state, t)

    cdef int cset_drift(self, const Drift* d, object state, double t) except -1:
        """`set_drift` from the settings' record."""
        cread_drift(state, t, &self.dstate)
        self.drift = d[0]
        self.watching = True
        return 0

    def drift_state(self):
        """The drift state after the steps (as a learner stores it), or None when they did
        not watch."""
        return cdrift_tuple(&self.dstate) if self.watching else None

    def deviation(self):
        """The scale of the watched residual: the targets' mean absolute deviation from the
        offset so far, dev / devw (0 before any)."""
        return self.dev / self.devw if self.devw > 0.0 else 0.0

    cdef bint cwatch_event(self, double y, double f, DriftState* out) noexcept nogil:
        """Watch an event's residual |y - f| over the targets' mean absolute deviation
        (before the update): the state after it into `out`; whether it is a change."""
        cdef double scale
        if not self.watching:
            return False
        scale = self.dev / self.devw if self.devw > 0.0 else 0.0
        cwatch(&self.drift, &self.dstate, cdrift_loss(False, y, f, scale), out)
        return out.changes != self.dstate.changes

    cdef void cchange(self, Py_ssize_t m) noexcept nogil:
        """At a change: one step of forgetting toward the prior by `Drift.keep` (the
        posterior, the offset's and the signal scale's sums)."""
        cdef double keep = self.drift.keep
        self.cforget(m, keep, False)
        self.wsum *= keep
        self.nums *= keep
        self.dens *= keep
        self.dev *= keep
        self.devw *= keep

    def checkpoint(self, n_new=0):
        return self.get_state()

    def restore(self, token):
        cdef Posterior other = type(self).from_state(token)
        self._take(other)

    def _take(self, Posterior other):
        self.t, self.b, self.wsum, self.nums, self.dens = (other.t, other.b, other.wsum,
                                                           other.nums, other.dens)
        self.dev, self.devw = other.dev, other.devw
        self.n_support, self.capacity = other.n_support, other.capacity
        self.cov, self.mean, self.ones = other.cov, other.mean, other.ones
        self.kb, self.lv, self.gv = other.kb, other.lv, other.gv
        self.held = False

    def __reduce__(self):
        return (_rebuild, (type(self), self.get_state()))

    cdef double cmean(self, Py_ssize_t m) noexcept nogil:
        """b + l^T (mean - b ones), l in self.lv."""
        cdef Py_ssize_t i
        for i in range(m):
            self.kb[i] = self.mean[i] - self.b * self.ones[i]
        return self.b + cdot(&self.lv[0], &self.kb[0], m)

    cdef double cvariance(self, Py_ssize_t m) noexcept nogil:
        """l^T cov l, with g = cov l into self.gv."""
        cdef Py_ssize_t i
        for i in range(m):
            self.gv[i] = cdot(&self.cov[i, 0], &self.lv[0], m)
        return cdot(&self.lv[0], &self.gv[0], m)

    cdef void cforget(self, Py_ssize_t m, double lam, bint inflate) noexcept nogil:
        """Back to the prior: cov <- lam cov + (1 - lam) I, mean and ones times sqrt(lam);
        with `inflate`, uncertainty injection bounded by the prior: cov <- D cov D (the
        scales into kb, `okl_krls_inflate`), mean and ones kept."""
        cdef Py_ssize_t i, j, cap = self.cov.shape[1]
        cdef double root
        cdef double* cov = &self.cov[0, 0]
        if lam == 1.0:
            return
        if inflate:
            okl_krls_inflate(m, cap, cov, NULL, 0.0, lam, &self.kb[0])
            return
        root = sqrt(lam)
        for i in range(m):
            for j in range(m):
                cov[i * cap + j] *= lam
            cov[i * cap + i] += 1.0 - lam
            self.mean[i] *= root
            self.ones[i] *= root

    cdef bint cinnovations(self, Py_ssize_t m, double y, double w, double f, double sf2,
                           double* terms) noexcept nogil:
        """terms = (s, innov, innov1, z2) of an event (l in self.lv); False when not finite."""
        cdef const double* l = &self.lv[0]
        terms[0] = self.noise / w + sf2
        terms[1] = y - cdot(l, &self.mean[0], m)
        terms[2] = 1.0 - cdot(l, &self.ones[0], m)
        terms[3] = (y - f) * (y - f) / (self.noise / w + sf2)
        return (isfinite(f) and isfinite(terms[0]) and isfinite(terms[1] / terms[0])
                and isfinite(terms[2] / terms[0]) and isfinite(terms[3]) and terms[0] > 0.0)

    cdef void cabsorb(self, Py_ssize_t n, const double* terms, double y, double w) noexcept nogil:
        """The Kalman update along h = self.gv of n coordinates and the forgetting, in one
        pass (bounded inflation: its scales into kb); then the signal scale, the offset and
        the deviation's sums take the event (the offset's first event only fixes b)."""
        cdef Py_ssize_t i
        cdef double c = 1.0 / terms[0], lam = self.forgetting, root = sqrt(lam)
        cdef bint shrink = lam != 1.0 and not self.inflate
        cdef const double* g = &self.gv[0]
        for i in range(n):
            self.mean[i] += g[i] * (terms[1] * c)
            self.ones[i] += g[i] * (terms[2] * c)
            if shrink:
                self.mean[i] *= root
                self.ones[i] *= root
        if self.inflate and lam != 1.0:
            okl_krls_inflate(n, self.cov.shape[1], &self.cov[0, 0], g, c, lam, &self.kb[0])
        else:
            okl_krls_update(n, self.cov.shape[1], &self.cov[0, 0], g, c, lam, 1.0 - lam)
        if not self.intercept or self.wsum > 0.0:
            self.nums = lam * self.nums + terms[3]
            self.dens = lam * self.dens + 1.0
        if self.intercept:
            self.wsum = lam * self.wsum + w
            self.b += (w / self.wsum) * (y - self.b)
        self.dev = lam * self.dev + w * fabs(y - self.b)
        self.devw = lam * self.devw + w

    cdef bint cpass(self, Py_ssize_t m, double f) noexcept nogil:
        """An event of weight 0: time passes (forgetting), nothing is learned."""
        if not isfinite(f):
            return False
        self.cforget(m, self.forgetting, self.inflate)
        self.wsum *= self.forgetting
        return True

    cdef void cpredict(self, const double* x, double* f, double* sf2) noexcept nogil:
        pass

    cdef Py_ssize_t cwork(self) noexcept nogil:
        """The multiply-adds of one step, about (for Ctrl-C's checks)."""
        return self.n_support * (self.n_support + self.n_features) + self.n_features

    cdef int cstep(self, const double* x, double xx, double y, double w, double* f_out,
                   double* sf2_out) noexcept nogil:
        return DIVERGED

    def predict(self, const double[:, ::1] X, double[::1] var_out=None):
        """f(x) of every row; with `var_out`, the variance of f(x) (noise excluded) into it."""
        cdef Py_ssize_t i, n = X.shape[0]
        cdef double f, sf2
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the model {self.n_features}.")
        if var_out is not None and var_out.shape[0] != n:
            raise ValueError("var_out must have one value per row.")
        out = np.empty(n)
        cdef double[::1] o = out
        with nogil:
            for i in range(n):
                self.cpredict(&X[i, 0], &f, &sf2)
                o[i] = f
                if var_out is not None:
                    var_out[i] = sf2
        return out

    def learn_one(self, const double[::1] x, double y, double w=1.0):
        """Predict, then learn one event: (f, sf2) before the step, or None when the step
        would leave a non-finite model (nothing changed)."""
        cdef double f, sf2, xx
        if x.shape[0] != self.n_features:
            raise ValueError(f"x has {x.shape[0]} values, the model {self.n_features}.")
        self.reserve(1)
        xx = cdot(&x[0], &x[0], self.n_features)
        if not row_is_finite(&x[0], self.n_features, xx):
            return None
        if self.cstep(&x[0], xx, y, w, &f, &sf2) != TAKEN:
            return None
        return f, sf2

    def reserve(self, Py_ssize_t n_new):
        pass


cdef void cinverse_lower(Py_ssize_t n, const double* A, Py_ssize_t lda, double* out,
                         Py_ssize_t ldo) noexcept nogil:
    """out[:n, :n] = A^-1 for a lower-triangular A, a row at a time (forward substitution)."""
    cdef Py_ssize_t i, j, k
    cdef double* row
    for i in range(n):
        row = out + i * ldo
        memset(row, 0, n * sizeof(double))
        row[i] = 1.0
        for k in range(i):
            okl_axpy(k + 1, -A[i * lda + k], out + k * ldo, row)
        for j in range(i + 1):
            row[j] /= A[i * lda + i]


cdef void ccongruence(Py_ssize_t n, const double* L, Py_ssize_t ldl, const double* A,
                      Py_ssize_t lda, double* tmp, double* out, Py_ssize_t ldo) noexcept nogil:
    """out[:n, :n] = L A L^T for a lower-triangular L (tmp: n x n scratch, L A)."""
    cdef Py_ssize_t i, j, k
    for i in range(n):
        memset(tmp + i * n, 0, n * sizeof(double))
        for k in range(i + 1):
            okl_axpy(n, L[i * ldl + k], A + k * lda, tmp + i * n)
    for i in range(n):
        for j in range(n):
            out[i * ldo + j] = cdot(tmp + i * n, L + j * ldl, j + 1)


cdef class KRLSModel(Posterior):
    """KRLS on a dictionary of centres (the twin of `okl._numpy.krls.NumpyKRLS`, same
    parameters, state and iterates)."""
    cdef readonly Py_ssize_t budget
    cdef KernelSpec kernel
    cdef readonly double threshold
    cdef readonly int policy
    cdef public long long next_order
    cdef double[:, ::1] centers, R
    cdef double[::1] sqnorms, last
    cdef long long[::1] order

    def __init__(self, Py_ssize_t n_features, kernel, double noise, double forgetting=1.0,
                 double threshold=0.0, Py_ssize_t budget=0, int policy=SIGNIFICANCE,
                 bint intercept=True, bint inflate=False):
        if (n_features < 1 or not noise > 0.0 or not 0.0 < forgetting <= 1.0
                or not threshold >= 0.0):
            raise ValueError("KRLSModel needs n_features >= 1, noise > 0, 0 < forgetting <= 1 "
                             "and threshold >= 0.")
        self.n_features = n_features
        self.kernel = kernel_spec(kernel)
        self.noise, self.forgetting, self.threshold = noise, forgetting, threshold
        self.budget, self.policy, self.intercept = budget, policy, intercept
        self.inflate = inflate
        self.n_support = 0
        self.t = self.b = self.wsum = self.nums = self.dens = self.dev = self.devw = 0.0
        self.next_order = 0
        self.held_x = np.empty(n_features)
        self._alloc(0)

    def _alloc(self, Py_ssize_t capacity):
        self._install(self._buffers(max(capacity, 1), 0), capacity)

    def _buffers(self, Py_ssize_t c, Py_ssize_t m):
        """New zeroed buffers of capacity c holding the first m centres' values (centres, R,
        cov, sqnorms, mean, ones, order), and the work vectors (kb, lv, gv, last)."""
        b = (np.zeros((c, self.n_features)), np.zeros((c, c)), np.zeros((c, c)), np.zeros(c),
             np.zeros(c), np.zeros(c), np.zeros(c, dtype=np.int64), np.zeros(c), np.zeros(c),
             np.zeros(c), np.zeros(c))
        if m:
            b[0][:m] = self.centers[:m]
            b[1][:m, :m] = self.R[:m, :m]
            b[2][:m, :m] = self.cov[:m, :m]
            for new, old in zip(b[3:7], (self.sqnorms, self.mean, self.ones, self.order)):
                new[:m] = old[:m]
        return b

    cdef void _install(self, tuple b, Py_ssize_t capacity):
        """The buffers of `_buffers` in place of the model's: typed assignments only, so no
        Python code (no signal handler) runs between the first and the last."""
        self.capacity = capacity
        self.centers, self.R, self.cov, self.sqnorms = b[0], b[1], b[2], b[3]
        self.mean, self.ones, self.order = b[4], b[5], b[6]
        self.kb, self.lv, self.gv, self.last = b[7], b[8], b[9], b[10]
        self.held = False

    @property
    def kernel_params(self):
        """The kernel's record (`okl.kernels.kernel_params`)."""
        return spec_params(self.kernel)

    def reserve(self, Py_ssize_t n_new):
        """Room for n_new more centres (a budget of B needs B + 1: the newcomer).  The larger
        buffers are filled with the same values before they replace the old ones, and no
        Python code runs in between: an interrupt (or a MemoryError) leaves the model as it
        was, and the model after it is the same, bit for bit."""
        cdef Py_ssize_t need = self.n_support + n_new, m = self.n_support, c
        if self.budget:
            need = min(need, self.budget + 1)
        if need <= self.capacity:
            return
        c = max(need, 2 * self.capacity)
        self._install(self._buffers(c, m), c)

    def get_arrays(self):
        cdef Py_ssize_t m = self.n_support
        return dict(centers=np.array(self.centers[:m]), order=np.array(self.order[:m]),
                    R=np.array(self.R[:m, :m]), cov=np.array(self.cov[:m, :m]),
                    mean=np.array(self.mean[:m]), ones=np.array(self.ones[:m]))

    def set_arrays(self, arrays):
        cdef Py_ssize_t m = len(arrays["mean"])
        if m > self.capacity:
            self._alloc(m)
        centers = np.asarray(self.centers)
        centers[:m] = arrays["centers"]
        np.asarray(self.sqnorms)[:m] = np.einsum("ij,ij->i", centers[:m], centers[:m])
        np.asarray(self.order)[:m] = arrays["order"]
        np.asarray(self.R)[:m, :m] = arrays["R"]
        np.asarray(self.cov)[:m, :m] = arrays["cov"]
        np.asarray(self.mean)[:m] = arrays["mean"]
        np.asarray(self.ones)[:m] = arrays["ones"]
        self.n_support = m
        self.held = False

    def get_state(self):
        """Scalars and arrays that rebuild this model exactly (okl.save writes them)."""
        return dict(n_features=self.n_features, **self.kernel_params, noise=self.noise,
                    forgetting=self.forgetting, threshold=self.threshold, budget=self.budget,
                    policy=self.policy, intercept=self.intercept, inflate=self.inflate,
                    next_order=self.next_order, **self._scalars(), **self.get_arrays())

    @classmethod
    def from_state(cls, state):
        from okl._numpy.kernels import kernel_record
        cdef KRLSModel self = cls(int(state["n_features"]), kernel_record(state, complete=True),
                                  float(state["noise"]), float(state["forgetting"]),
                                  float(state["threshold"]), int(state["budget"]),
                                  int(state["policy"]), bool(state["intercept"]),
                                  bool(state.get("inflate", False)))
        self._set_scalars(state)
        self.next_order = int(state["next_order"])
        self._alloc(len(state["mean"]))
        self.set_arrays({k: np.asarray(state[k]) for k in
                         ("centers", "order", "R", "cov", "mean", "ones")})
        return self

    def _take(self, Posterior other):
        cdef KRLSModel o = <KRLSModel>other
        Posterior._take(self, other)
        self.next_order, self.kernel = o.next_order, o.kernel
        self.centers, self.R, self.order = o.centers, o.R, o.order
        self.sqnorms, self.last = o.sqnorms, o.last

    def rewidth(self, double gamma):
        """This model at the kernel width gamma, in place: the twin of `okl._numpy.krls.rewidth`
        (docs/krls.md, section 5), the posterior of f at the centres kept (mean L mean,
        covariance L cov L^T, L = R^-1), the Gram matrix at gamma factored a centre at a time
        and a centre whose residual falls below the threshold marginalised.  The scratch is
        allocated first; then, with no Python code, the kept centres' arrays are computed and
        written over the model's: an interrupt leaves the model as it was."""
        cdef Py_ssize_t m = self.n_support, cap = self.capacity, d = self.n_features
        cdef Py_ssize_t i, j, n = 0, s = max(m, 1)
        cdef KernelSpec spec = self.kernel
        cdef double gamma2, kjj
        spec.gamma = gamma
        cdef double[:, :, ::1] work = np.empty((5, s, s))
        cdef double[:, ::1] vec = np.empty((5, s))
        cdef Py_ssize_t[::1] keep = np.empty(s, dtype=np.intp)
        cdef double* L = &work[0, 0, 0]         # R^-1, then the new R
        cdef double* F = &work[1, 0, 0]         # the covariance of f at the centres
        cdef double* T = &work[2, 0, 0]         # scratch of ccongruence
        cdef double* K = &work[3, 0, 0]         # the Gram matrix, then F at the kept centres
        cdef double* Lk = &work[4, 0, 0]        # its factor, then the new covariance
        cdef double* fm = &vec[0, 0]
        cdef double* fo = &vec[1, 0]
        cdef double* row = &vec[2, 0]
        cdef double* R = &self.R[0, 0]
        cdef double* cov = &self.cov[0, 0]
        cdef double* C = &self.centers[0, 0]
        craise_signals()
        with nogil:
            cinverse_lower(m, R, cap, L, m)
            for i in range(m):
                fm[i] = cdot(L + i * m, &self.mean[0], i + 1)
                fo[i] = cdot(L + i * m, &self.ones[0], i + 1)
            ccongruence(m, L, m, cov, cap, T, F, m)
            for j in range(m):
                ckernel_row(&spec, C + j * d, C, m, d, K + j * m)
            for i in range(m):
                for j in range(i):
                    K[i * m + j] = K[j * m + i] = 0.5 * (K[i * m + j] + K[j * m + i])
            for j in range(m):                  # Cholesky, a centre at a time, in their order
                for i in range(n):
                    row[i] = (K[keep[i] * m + j] - cdot(Lk + i * m, row, i)) / Lk[i * m + i]
                kjj = K[j * m + j]
                gamma2 = kjj - cdot(row, row, n)
                if gamma2 > max(self.threshold, RESIDUAL_FLOOR * kjj):
                    memcpy(Lk + n * m, row, n * sizeof(double))
                    Lk[n * m + n] = sqrt(gamma2)
                    keep[n] = j
                    n += 1
            cinverse_lower(n, Lk, m, L, n)
            for i in range(n):
                for j in range(n):
                    K[i * n + j] = F[keep[i] * m + keep[j]]
                vec[3, i] = fm[keep[i]]
                vec[4, i] = fo[keep[i]]
            ccongruence(n, L, n, K, n, T, Lk, n)
            # the model's arrays from here on
            for i in range(n):
                j = keep[i]
                if j != i:
                    memcpy(C + i * d, C + j * d, d * sizeof(double))
                    self.sqnorms[i], self.order[i] = self.sqnorms[j], self.order[j]
                self.mean[i] = cdot(L + i * n, &vec[3, 0], i + 1)
                self.ones[i] = cdot(L + i * n, &vec[4, 0], i + 1)
            for i in range(m):
                memset(R + i * cap, 0, m * sizeof(double))
                memset(cov + i * cap, 0, m * sizeof(double))
            for i in range(n):
                memcpy(R + i * cap, L + i * n, (i + 1) * sizeof(double))
                for j in range(n):
                    cov[i * cap + j] = 0.5 * (Lk[i * n + j] + Lk[j * n + i])
            for i in range(n, m):
                memset(C + i * d, 0, d * sizeof(double))
                self.sqnorms[i] = self.mean[i] = self.ones[i] = 0.0
                self.order[i] = 0
            self.n_support = n
            self.kernel = spec
            self.held = False

    # -- the step ------------------------------------------------------------------------------

    cdef double cwhiten(self, const double* x, double xx, double* kxx) noexcept nogil:
        """l = R k_D(x) into self.lv, k(x, x) into kxx; returns gamma2 = k(x, x) - l^T l."""
        cdef Py_ssize_t i, m = self.n_support, cap = self.capacity
        cdef double* l = &self.lv[0]
        kxx[0] = cself(&self.kernel, xx)
        if m == 0:
            return kxx[0]
        ckernel_row_norms(&self.kernel, x, xx, &self.centers[0, 0], &self.sqnorms[0], m,
                          self.n_features, &self.kb[0])
        for i in range(m):
            l[i] = cdot(&self.R[i, 0], &self.kb[0], i + 1)
        return kxx[0] - cdot(l, l, m)

    cdef void cpredict(self, const double* x, double* f, double* sf2) noexcept nogil:
        """f(x) and the variance of f(x), noise excluded (held for a step of the same row)."""
        cdef double kxx, xx = cdot(x, x, self.n_features)
        cdef double gamma2 = self.cwhiten(x, xx, &kxx)
        if gamma2 < 0.0:
            gamma2 = 0.0
        sf2[0] = gamma2 + self.cvariance(self.n_support)
        f[0] = self.cmean(self.n_support)
        self.chold(x, f[0], sf2[0], gamma2, kxx)

    cdef int cstep(self, const double* x, double xx, double y, double w, double* f_out,
                   double* sf2_out) noexcept nogil:
        """Predict, then learn (x, y) with weight w: TAKEN, or DIVERGED (nothing changed).
        The dictionary must have room for one more centre (`reserve`)."""
        cdef Py_ssize_t i, j, m = self.n_support, n, cap = self.capacity, r
        cdef double kxx, gamma2, sf2, f, gamma, thresh
        cdef double terms[4]
        cdef bint add, change
        cdef DriftState after
        cdef double* l = &self.lv[0]
        cdef double* g = &self.gv[0]
        cdef double* cov = &self.cov[0, 0]
        cdef double* R = &self.R[0, 0]
        if self.crecall(x):         # predicted just before: l, g, f and sf2 are at hand
            gamma2, kxx, sf2, f = self.held_gamma2, self.held_kxx, self.held_sf2, self.held_f
        else:
            gamma2 = self.cwhiten(x, xx, &kxx)
            if gamma2 < 0.0:
                gamma2 = 0.0
            sf2 = gamma2 + self.cvariance(m)
            f = self.cmean(m)
        self.held = False
        f_out[0], sf2_out[0] = f, sf2
        if w == 0.0:
            return TAKEN if self.cpass(m, f) else DIVERGED
        if not self.cinnovations(m, y, w, f, sf2, terms):
            return DIVERGED
        change = self.cwatch_event(y, f, &after)
        thresh = RESIDUAL_FLOOR * kxx
        if self.threshold > thresh:
            thresh = self.threshold
        add = gamma2 > thresh and (self.policy != FREEZE or m < self.budget)
        if add:
            gamma = sqrt(gamma2)
            # the new centre's row of R, [-l^T R / gamma, 1 / gamma], from the rows of R
            memset(&self.kb[0], 0, m * sizeof(double))
            for i in range(m):
                okl_axpy(i + 1, l[i], &R[i * cap], &self.kb[0])
            for j in range(m):
                R[m * cap + j] = -self.kb[j] / gamma
                R[j * cap + m] = 0.0
                cov[m * cap + j] = 0.0
                cov[j * cap + m] = 0.0
            R[m * cap + m] = 1.0 / gamma
            cov[m * cap + m] = 1.0
            self.mean[m] = 0.0
            self.ones[m] = 0.0
            g[m] = gamma
            memcpy(&self.centers[m, 0], x, self.n_features * sizeof(double))
            self.sqnorms[m] = xx
            self.order[m] = self.next_order
            self.next_order += 1
            n = m + 1
        else:
            n = m
        self.cabsorb(n, terms, y, w)
        self.n_support = n
        if self.budget and n > self.budget and self.policy != FREEZE:
            r = 0
            if self.policy == SIGNIFICANCE:
                r = self.cleast_significant(n)
            else:
                for i in range(1, n):
                    if self.order[i] < self.order[r]:
                        r = i
            self.cremove(r)
        if change:
            self.cchange(self.n_support)
        if self.watching:
            self.dstate = after
        self.t += 1.0
        return TAKEN

    cdef Py_ssize_t cleast_significant(self, Py_ssize_t m) noexcept nogil:
        """The centre of least |(K^-1 mu)_i| / (K^-1)_ii (`okl._numpy.krls.significance`)."""
        cdef Py_ssize_t i, j, cap = self.capacity, best = 0
        cdef double* v = &self.kb[0]
        cdef double* norm = &self.last[0]
        cdef double* R = &self.R[0, 0]
        cdef double mc, value, low = 0.0
        memset(v, 0, m * sizeof(double))
        memset(norm, 0, m * sizeof(double))
        for i in range(m):
            mc = self.mean[i] - self.b * self.ones[i]
            for j in range(i + 1):
                v[j] += R[i * cap + j] * mc
                norm[j] += R[i * cap + j] * R[i * cap + j]
        for j in range(m):
            value = fabs(v[j]) / norm[j]
            if j == 0 or value < low:
                low, best = value, j
        return best

    cdef void cremove(self, Py_ssize_t r) noexcept nogil:
        """The dictionary without centre r (`okl._numpy.krls.remove`)."""
        cdef Py_ssize_t i, k, j, m = self.n_support, n = m - 1, cap = self.capacity
        cdef Py_ssize_t d = self.n_features
        cdef double* R = &self.R[0, 0]
        cdef double* cov = &self.cov[0, 0]
        cdef double* last = &self.last[0]
        cdef double* cs = &self.lv[0]           # the rotations (l and g are free by now)
        cdef double* sn = &self.gv[0]
        cdef double a, b, rho, c, s, t
        for i in range(r, m):
            last[i - r] = R[i * cap + r]
            for j in range(r, i):
                R[i * cap + j] = R[i * cap + j + 1]
            R[i * cap + i] = 0.0
        for k in range(m - 1 - r):
            i = r + k
            a, b = last[k], last[k + 1]
            rho = hypot(a, b)
            if rho == 0.0:
                c, s = 1.0, 0.0
            else:
                c, s = b / rho, a / rho
            cs[i], sn[i] = c, s
            okl_rotate_rows(i + 1, &R[i * cap], &R[(i + 1) * cap], c, s)
            last[k], last[k + 1] = 0.0, rho
            a, b = self.mean[i], self.mean[i + 1]
            self.mean[i], self.mean[i + 1] = c * a - s * b, s * a + c * b
            a, b = self.ones[i], self.ones[i + 1]
            self.ones[i], self.ones[i + 1] = c * a - s * b, s * a + c * b
            okl_rotate_rows(m, &cov[i * cap], &cov[(i + 1) * cap], c, s)
        okl_rotate_columns(m, cap, cov, r, m, cs, sn)
        for i in range(n):                      # symmetric: the lower triangle's values
            for j in range(i + 1, n):
                cov[i * cap + j] = cov[j * cap + i]
        for j in range(m):
            R[n * cap + j] = 0.0
            R[j * cap + n] = 0.0
        for i in range(r, n):
            if R[i * cap + i] < 0.0:
                for j in range(i + 1):
                    R[i * cap + j] = -R[i * cap + j]
                self.mean[i] = -self.mean[i]
                self.ones[i] = -self.ones[i]
                for j in range(n):
                    cov[i * cap + j] = -cov[i * cap + j]
                    cov[j * cap + i] = -cov[j * cap + i]
        memmove(&self.centers[r, 0], &self.centers[r + 1, 0], (m - 1 - r) * d * sizeof(double))
        memmove(&self.sqnorms[r], &self.sqnorms[r + 1], (m - 1 - r) * sizeof(double))
        memmove(&self.order[r], &self.order[r + 1], (m - 1 - r) * sizeof(long long))
        self.n_support = n


cdef class RLSFeatures(Posterior):
    """Recursive least squares on random Fourier features (the twin of
    `okl._numpy.krls.NumpyRLSFeatures`): the posterior of the weights of f(x) = b + z(x)^T w,
    z(x) computed in C by `FeatureRow` (the map's `transform`, bit for bit)."""
    cdef readonly Py_ssize_t n_components
    cdef FeatureRow rowmap
    cdef readonly dict fmap

    def __init__(self, dict fmap, double noise, double forgetting=1.0, bint intercept=True,
                 bint inflate=False):
        from okl._feature_maps import RandomFourierFeatures
        cdef Py_ssize_t D = int(fmap["n_components"])
        if not noise > 0.0 or not 0.0 < forgetting <= 1.0:
            raise ValueError("RLSFeatures needs noise > 0 and 0 < forgetting <= 1.")
        self.fmap = dict(fmap)
        self.rowmap = RandomFourierFeatures.from_state(self.fmap).row_map()
        self.n_features, self.n_components = self.rowmap.n_features, D
        self.noise, self.forgetting, self.intercept = noise, forgetting, intercept
        self.inflate = inflate
        self.t = self.b = self.wsum = self.nums = self.dens = self.dev = self.devw = 0.0
        self.n_support = 0
        self.capacity = D
        self.cov = np.eye(D)
        self.mean, self.ones = np.zeros(D), np.zeros(D)
        self.kb, self.lv, self.gv = np.zeros(D), np.zeros(D), np.zeros(D)
        self.held_x = np.empty(self.n_features)
        self.held = False

    cdef Py_ssize_t cwork(self) noexcept nogil:
        return self.n_components * (self.n_components + self.n_features)

    cdef void cpredict(self, const double* x, double* f, double* sf2) noexcept nogil:
        self.rowmap.cmap(x, &self.lv[0])
        sf2[0] = self.cvariance(self.n_components)
        f[0] = self.cmean(self.n_components)
        self.chold(x, f[0], sf2[0], 0.0, 0.0)

    cdef int cstep(self, const double* x, double xx, double y, double w, double* f_out,
                   double* sf2_out) noexcept nogil:
        """As `KRLSModel.cstep`, along e = z(x)."""
        cdef Py_ssize_t D = self.n_components
        cdef double terms[4]
        cdef bint change
        cdef DriftState after
        if self.crecall(x):
            f_out[0], sf2_out[0] = self.held_f, self.held_sf2
        else:
            self.cpredict(x, f_out, sf2_out)
        self.held = False
        if w == 0.0:
            return TAKEN if self.cpass(D, f_out[0]) else DIVERGED
        if not self.cinnovations(D, y, w, f_out[0], sf2_out[0], terms):
            return DIVERGED
        change = self.cwatch_event(y, f_out[0], &after)
        self.cabsorb(D, terms, y, w)
        if change:
            self.cchange(D)
        if self.watching:
            self.dstate = after
        self.t += 1.0
        return TAKEN

    def fit_rows(self, const double[:, ::1] X, const double[::1] y, const double[::1] weight):
        """Learn rows (the warm-up's, again): the number that would not be finite, or -1."""
        return fit_chunk(self, X, y, np.empty(X.shape[0]), np.empty(X.shape[0]), weight)

    def get_arrays(self):
        return dict(mean=np.array(self.mean), ones=np.array(self.ones), cov=np.array(self.cov))

    def get_state(self):
        return dict(**{"map_" + k: v for k, v in self.fmap.items()}, noise=self.noise,
                    forgetting=self.forgetting, intercept=self.intercept, inflate=self.inflate,
                    **self._scalars(), **self.get_arrays())

    @classmethod
    def from_state(cls, state):
        fmap = {k[4:]: v for k, v in state.items() if k.startswith("map_")}
        cdef RLSFeatures self = cls(fmap, float(state["noise"]), float(state["forgetting"]),
                                    bool(state["intercept"]), bool(state.get("inflate", False)))
        self._set_scalars(state)
        self.mean = np.array(state["mean"], dtype=np.float64)
        self.ones = np.array(state["ones"], dtype=np.float64)
        self.cov = np.array(state["cov"], dtype=np.float64)
        self.held = False
        return self


def _rebuild(cls, state):
    return cls.from_state(state)


def fit_chunk(Posterior model,
              const double[:, ::1] X,       # IN (n, d) rows
              const double[::1] y,          # IN (n,) targets
              double[::1] pred_out,         # OUT (n,) f_t(x_t), before each step
              double[::1] var_out,          # OUT (n,) the variance of f_t(x_t), noise excluded
              const double[::1] weight=None,    # IN (n,) w_t >= 0, or None for 1
              double[::1] scale_out=None):      # OUT (n,) s02 before each step, or None
    """Run the chunk: the index of the first step that would leave a non-finite model, or -1.

    The model after a failure is the one before that step (the caller's checkpoint undoes
    the steps before it)."""
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1], failed = -1, work = 0
    cdef bint interrupted = False
    cdef double w = 1.0, xx
    if d != model.n_features:
        raise ValueError(f"X has {d} columns, the model {model.n_features}.")
    if y.shape[0] != n or pred_out.shape[0] != n or var_out.shape[0] != n:
        raise ValueError("X, y, pred_out and var_out must have the same number of rows.")
    if weight is not None and weight.shape[0] != n:
        raise ValueError(f"weight has {weight.shape[0]} values for {n} rows.")
    if scale_out is not None and scale_out.shape[0] != n:
        raise ValueError(f"scale_out has {scale_out.shape[0]} values for {n} rows.")
    model.reserve(n)
    with nogil:
        for i in range(n):
            if cinterrupted(&work, model.cwork()):
                interrupted = True
                break
            if weight is not None:
                w = weight[i]
            if scale_out is not None:
                scale_out[i] = model.nums / model.dens if model.dens > 0.0 else 1.0
            xx = cdot(&X[i, 0], &X[i, 0], d)
            if (not row_is_finite(&X[i, 0], d, xx)
                    or model.cstep(&X[i, 0], xx, y[i], w, &pred_out[i], &var_out[i]) != TAKEN):
                failed = i
                break
    if interrupted:
        craise_pending()
    return failed


cdef class KRLSEvents(Events):
    """One-event predict and learn for `okl.KernelRLSRegressor` (`okl._core._pointwise.Events`):
    the row, the step and the learner's counters (t_, n_support_) in one compiled call,
    checked before the first write; `predict_std` gives the mean and the variance of f(x).

    Parameters
    ----------
    model : KRLSModel or RLSFeatures
    name : str, the estimator's class name (for error messages)
    names : tuple of str, the estimator attributes `matches` compares (the model first)
    drift : dict or None, the `Drift` settings of a learner whose steps watch (the state is
        its `_drift_state`, read and stored at each event)
    learns : bool, whether `learn_ready` learns events (False: it declines every one, which
        the learner's `_learn_event` takes, as during its warm-up)
    """
    cdef Posterior model
    cdef bint watching, learns
    cdef Drift drift
    cdef object drift_tuple     # the `_drift_state` this step last stored (that very tuple)
    cdef DriftState stored      # and the state it was made of

    def __init__(self, Posterior model, str name, tuple names=(), drift=None, bint learns=True):
        self.model = model
        self.learns = learns
        self.watching = drift is not None
        if self.watching:
            self.drift.detector, self.drift.delta = drift["detector"], drift["delta"]
            self.drift.threshold, self.drift.floor = drift["threshold"], drift["floor"]
            self.drift.min_events, self.drift.forgetting = drift["min_events"], drift["forgetting"]
            self.drift.keep = drift["keep"]
        self.name, self.names = name, names
        self.values = tuple([model] + [None] * (len(names) - 1))
        self.ready = True

    cdef const double* crow_of(self, object x, str action) except NULL:
        """The data of a 1-D float64 row of the model's width, finite; else a clear error."""
        cdef Py_ssize_t n = 0
        cdef const double[::1] typed
        cdef const double* p = cready(x, &n)
        cdef double xx
        if p == NULL:
            typed = x
            n, p = typed.shape[0], &typed[0]
        if n != self.model.n_features:
            raise ValueError(f"X has {n} features, but {self.name} is expecting "
                             f"{self.model.n_features} features as input.")
        xx = cdot(p, p, n)
        if not row_is_finite(p, n, xx):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             f"non-finite values cannot be {action}.")
        return p

    def predict(self, x, t=None, b=None):
        """The posterior mean of f(x) for one row (t, b: the signature of the other steps)."""
        cdef double f, sf2
        self.model.cpredict(self.crow_of(x, "predicted"), &f, &sf2)
        return f

    def predict_std(self, x):
        """(mean, variance of f(x)) for one row, noise excluded."""
        cdef double f, sf2
        self.model.cpredict(self.crow_of(x, "predicted"), &f, &sf2)
        return f, sf2

    def learn_into(self, dict attrs, x, double y, double weight=1.0):
        """Predict f_t(x_t), then learn the event; t_ and n_support_ stored into `attrs` (the
        learner's ``__dict__``).  Raises, leaving the model and `attrs` as they were."""
        return self._learn_into(attrs, x, y, weight)

    cdef double _learn_into(self, dict attrs, object x, double y, double weight) except? -1.0:
        cdef double f, sf2
        cdef const double* p = self.crow_of(x, "learned")
        if not isfinite(y):
            raise ValueError(f"{self.name} got a non-finite target {y!r}; targets must be "
                             "finite numbers.")
        craise_signals()                # a Ctrl-C so far: raised before the buffers move
        self.cready(attrs)
        if self.model.cstep(p, cdot(p, p, self.model.n_features), y, weight, &f,
                            &sf2) != TAKEN:
            raise FloatingPointError(
                f"{self.name}: learning this event would leave a non-finite posterior (the "
                "target or the kernel values are too large). Check the targets' scale, or use "
                "a larger noise. The model is left as it was.")
        self.cstore(attrs)
        return f

    cdef int cready(self, dict attrs) except -1:
        """Before a step (the model unchanged): room for a newcomer, and the drift settings and
        state of the learner (`attrs`, its ``__dict__``)."""
        if self.model.n_support >= self.model.capacity:     # (a method call: only when full)
            self.model.reserve(1)       # moves the buffers, the model unchanged
        if self.watching:
            state = attrs.get("_drift_state")
            if (state is not None and state is self.drift_tuple    # read only when another
                    and memcmp(&self.stored, &self.model.dstate, sizeof(DriftState)) == 0):
                self.model.drift = self.drift       # wrote it, or the model's state moved
                self.model.watching = True
            else:
                self.model.cset_drift(&self.drift, state, self.model.t)
        else:
            self.model.watching = False
        return 0

    cdef int cstore(self, dict attrs) except -1:
        """After a step: t_, n_support_ and the drift state into the learner's `attrs`."""
        attrs["t_"] = <long long>self.model.t
        attrs["n_support_"] = self.model.n_support
        if self.watching:
            attrs["_drift_state"] = self.drift_tuple = cdrift_tuple(&self.model.dstate)
            self.stored = self.model.dstate
        return 0

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        if not self.learns:
            return 0
        self._learn_into(attrs, x, y, 1.0)
        return 1

    cdef object cpredict(self, dict attrs, object x):
        cdef double f, sf2
        self.model.cpredict(self.crow_of(x, "predicted"), &f, &sf2)
        return f

    cdef int cpredict_std(self, dict attrs, object x, double* f, double* sf2,
                          double* scale) except -1:
        """The mean and variance of f(x) (held for a step of the same row, as `predict_std`)
        and the signal scale s02 (`Posterior.scale`)."""
        cdef Posterior model = self.model
        model.cpredict(self.crow_of(x, "predicted"), f, sf2)
        scale[0] = model.nums / model.dens if model.dens > 0.0 else 1.0
        return 1


cdef class KRLSPoolEvents(Events):
    """One-event predict and learn for `okl.MultiKernelRegressor(learner="krls")` (docs/krls.md,
    sections 9-10): every awake learner's step, the Bayesian mixture of their predictive
    densities with the fixed share (none at the events before the learners' signal scale has
    counted a standardised error, `okl.multikernel._scale_unknown`), and with ``sleep=`` the
    wake events' bookkeeping, in one compiled call; the iterates of
    `okl.multikernel._pool_sleep_learn` / `_pool_learn` on one row.  Every learner is checked
    (its prediction, its innovation, the mixture's density) before the first write: a call
    that raises leaves the pool as it was.

    Parameters
    ----------
    steps : list of KRLSEvents, one per learner (fitted, a `KRLSModel`; during its warm-up a
        step that does not watch)
    learners : list of the learners (their ``__dict__`` takes t_, n_support_, _drift_state)
    share : float, the fixed share of the weight update
    floor : float, ``sleep`` (0: no learner sleeps)
    after, every : int, the wake events are after + j every (the pool's t_ before them)
    name : str; names : tuple of str, the pool's attributes `matches` compares
    learns : bool, whether `learn_ready` learns events (False: it declines every one, which
        the pool's `_learn_event` takes, as during its learners' warm-up)
    """
    cdef list steps, learners, attrs_of
    cdef readonly bint learns
    cdef dict pool                  # the pool's ``__dict__`` (`bind`)
    cdef Py_ssize_t K, after, every
    cdef double share, floor
    cdef double[::1] F, S, lw, sub, work
    cdef Py_ssize_t[::1] ix
    cdef unsigned char[::1] asleep
    # the pool's _logw and _asleep as this step stores them: its own arrays, written in place
    cdef object logw_out, asleep_out
    cdef double[::1] logw_view
    cdef unsigned char[::1] asleep_view

    def __init__(self, list steps, list learners, double share, double floor, Py_ssize_t after,
                 Py_ssize_t every, str name, tuple names=(), bint learns=True):
        cdef KRLSEvents step
        self.K = len(steps)
        if self.K < 1 or len(learners) != self.K or every < 1:
            raise ValueError("KRLSPoolEvents needs one step per learner and every >= 1.")
        for step in steps:
            if type(step.model) is not KRLSModel:
                raise TypeError("KRLSPoolEvents takes the steps of KRLSModel learners.")
        self.steps, self.learners = steps, learners
        self.attrs_of = [learner.__dict__ for learner in learners]
        self.share, self.floor, self.after, self.every = share, floor, after, every
        self.learns = learns
        self.F, self.S = np.empty(self.K), np.empty(self.K)
        self.lw, self.sub, self.work = np.empty(self.K), np.empty(self.K), np.empty(self.K)
        self.ix = np.empty(self.K, dtype=np.intp)
        self.asleep = np.zeros(self.K, dtype=np.uint8)
        self.logw_out, self.asleep_out = np.empty(self.K), np.zeros(self.K, dtype=bool)
        self.logw_view, self.asleep_view = self.logw_out, self.asleep_out.view(np.uint8)
        self.name, self.names = name, names
        self.values = tuple([None] * len(names))
        self.ready = True

    def bind(self, est):
        """`Events.bind`; the pool's ``__dict__`` is where `predict` reads the weights."""
        Events.bind(self, est)
        self.pool = est.__dict__

    def predict(self, x, t=None, b=None):
        """The mixture's mean for one row (t, b: the signature of the other steps)."""
        cdef double mean, std
        self.cmixture_std(self.pool, self.crow_of(x, "predicted"), &mean, &std)
        return mean

    cdef int cmatches(self, object est, dict attrs) except -1:
        """The pool holds the objects this step was built from, and every learner the model
        its step was built from."""
        cdef Py_ssize_t k
        cdef KRLSEvents step
        if not Events.cmatches(self, est, attrs):
            return False
        for k in range(self.K):
            step = <KRLSEvents>self.steps[k]
            if not step.cmatches(self.learners[k], <dict>self.attrs_of[k]):
                return False
        return True

    cdef const double* crow_of(self, object x, str action) except NULL:
        return (<KRLSEvents>self.steps[0]).crow_of(x, action)

    cdef Py_ssize_t cread(self, dict attrs) except -1:
        """The pool's weights into lw and its sleepers into asleep: the number asleep."""
        cdef Py_ssize_t k, n = 0
        cdef const double[::1] given
        logw, asleep = attrs.get("_logw"), attrs.get("_asleep")
        if logw is self.logw_out and (asleep is self.asleep_out or self.floor == 0.0):
            for k in range(self.K):     # this step's own arrays: no check, no conversion
                self.lw[k] = self.logw_view[k]
                self.asleep[k] = self.asleep_view[k] if self.floor != 0.0 else 0
                n += self.asleep[k]
            return n
        if not (type(logw) is cnp.ndarray and logw.dtype == np.float64 and logw.shape == (self.K,)):
            raise ValueError(f"{self.name}: _logw must hold one float64 per learner; "
                             "refit the model.")
        given = np.ascontiguousarray(logw)
        for k in range(self.K):
            self.lw[k] = given[k]
        # no sleepers: sleep=None (set back to None wakes every learner) or a pool without them
        if asleep is None or self.floor == 0.0:
            self.asleep[:] = 0
            return 0
        if not (type(asleep) is cnp.ndarray and asleep.dtype == np.bool_
                and asleep.shape == (self.K,)):
            raise ValueError(f"{self.name}: _asleep must hold one bool per learner; "
                             "refit the model.")
        for k in range(self.K):
            self.asleep[k] = asleep[k]
            n += self.asleep[k]
        return n

    cdef Py_ssize_t cawake(self, bint everyone) noexcept:
        """The learners that take the event into ix: the awake ones, or all of them."""
        cdef Py_ssize_t k, n = 0
        for k in range(self.K):
            if everyone or not self.asleep[k]:
                self.ix[n] = k
                n += 1
        return n

    cdef double cmass(self, Py_ssize_t n) noexcept:
        """log sum exp of lw over ix[:n]."""
        cdef Py_ssize_t j
        cdef double top = -INFINITY, z = 0.0
        for j in range(n):
            if self.lw[self.ix[j]] > top:
                top = self.lw[self.ix[j]]
        for j in range(n):
            z += exp(self.lw[self.ix[j]] - top)
        return top + log(z)

    cdef void cmix(self, Py_ssize_t n, const double* logw, double* mean,
                   double* std) noexcept:
        """The mixture's (mean, std) of the learners ix[:n] under the weights exp(logw[:n])."""
        cdef Py_ssize_t j, k
        cdef double f = 0.0, second = 0.0, z
        for j in range(n):
            k = self.ix[j]
            z = exp(logw[j])
            f += z * self.F[k]
            second += z * (self.S[k] * self.S[k] + self.F[k] * self.F[k])
        second -= f * f
        mean[0] = f
        std[0] = sqrt(second) if second > 0.0 else 0.0

    cdef void cupdate(self, Py_ssize_t n, double* logw, double y, double w) noexcept:
        """The Bayesian update of the weights exp(logw[:n]) of the learners ix[:n] by their
        predictive densities to the power w, then the fixed share (`bayes_mixture`)."""
        cdef Py_ssize_t j, k
        cdef double top = -INFINITY, z = 0.0, mix = self.share / n
        for j in range(n):
            k = self.ix[j]
            self.work[j] = log_density(y - self.F[k], self.S[k] * self.S[k], w, logw[j])
            if self.work[j] > top:
                top = self.work[j]
        top = limit_densities(&self.work[0], logw, n, top)
        for j in range(n):
            self.work[j] = exp(self.work[j] - top)
            z += self.work[j]
        for j in range(n):
            logw[j] = log((1.0 - self.share) * self.work[j] / z + mix)

    cdef void csleep(self) noexcept:
        """After a wake event: the learners below the floor (never the heaviest) sleep at
        the floor, the awake weights renormalised so that all sum to 1."""
        cdef Py_ssize_t k, best = 0, n = 0, count = 0
        cdef double low = log(self.floor), rest
        for k in range(self.K):
            if self.lw[k] > self.lw[best]:
                best = k
        for k in range(self.K):
            self.asleep[k] = exp(self.lw[k]) < self.floor and k != best
            count += self.asleep[k]
        n = self.cawake(False)
        rest = self.cmass(n)
        for k in range(self.K):
            if self.asleep[k]:
                self.lw[k] = low
            else:
                self.lw[k] += log1p(-self.floor * count) - rest

    def learn_into(self, dict attrs, x, double y, double weight=1.0):
        """Predict the mixture's mean for x, then learn the event; the pool's _logw,
        _asleep, t_, n_support_ and each stepping learner's counters stored into `attrs` and
        the learners.  Raises, leaving the pool and its learners as they were."""
        cdef double mean, std
        return self._learn_into(attrs, x, y, weight, &mean, &std)

    def learn_std(self, dict attrs, x, double y, double weight=1.0):
        """`learn_into`, returning the mixture's (mean, std) before the step."""
        cdef double mean, std
        self._learn_into(attrs, x, y, weight, &mean, &std)
        return mean, std

    cdef double _learn_into(self, dict attrs, object x, double y, double w, double* mean,
                            double* std) except? -1.0:
        cdef const double* p = self.crow_of(x, "learned")
        cdef Py_ssize_t j, k, n, sleeping
        cdef long long t
        cdef bint wake
        cdef double f, sf2, s02, xx, mass, ok, u, terms[4]
        cdef KRLSEvents step
        cdef Posterior model
        if not isfinite(y):
            raise ValueError(f"{self.name} got a non-finite target {y!r}; targets must be "
                             "finite numbers.")
        if not (isfinite(w) and w >= 0.0):
            raise ValueError(f"{self.name} got the sample weight {w!r}; weights must be "
                             "finite and >= 0.")
        t = attrs["t_"]
        sleeping = self.cread(attrs)
        wake = (self.floor > 0.0 and w > 0.0 and t >= self.after
                and (t - self.after) % self.every == 0)
        n = self.cawake(wake or sleeping == 0)
        model = (<KRLSEvents>self.steps[0]).model
        xx = cdot(p, p, model.n_features)
        # the density's power: 0 while the signal scale has counted no error (the pool's
        # first two events, the first setting the offset; the first without it)
        u = w if t >= 1 + model.intercept else 0.0
        craise_signals()                # a Ctrl-C so far: raised before the buffers move
        # every check before the first write
        for j in range(n):
            k = self.ix[j]
            step = <KRLSEvents>self.steps[k]
            model = step.model
            step.cready(<dict>self.attrs_of[k])
            s02 = model.nums / model.dens if model.dens > 0.0 else 1.0
            model.cpredict(p, &f, &sf2)     # held: the step below takes it
            self.F[k] = f
            self.S[k] = sqrt(s02 * (model.noise + sf2))
            ok = (model.cinnovations(model.n_support, y, w, f, sf2, terms) if w != 0.0
                  else isfinite(f))
            if not ok:
                raise FloatingPointError(
                    f"{self.name}'s learner {k}: learning this event would leave a non-finite "
                    "posterior (the target or the kernel values are too large). Check the "
                    "targets' scale, or pass a larger noise in learner_params. The model is "
                    "left as it was.")
            if not (isfinite(self.S[k]) and self.S[k] >= 0.0):
                raise FloatingPointError(
                    f"{self.name}'s learners gave no finite predictive density for this "
                    "event; scale the targets. The model is left as it was.")
        # the mixture: the awake learners' prediction; the weights of those that learn move
        if sleeping == 0:
            for j in range(n):
                self.sub[j] = self.lw[self.ix[j]]
            self.cmix(n, &self.sub[0], mean, std)
            self.cupdate(n, &self.sub[0], y, u)
            for j in range(n):
                self.lw[self.ix[j]] = self.sub[j]
        else:
            n = self.cawake(False)
            mass = self.cmass(n)
            for j in range(n):
                self.sub[j] = self.lw[self.ix[j]] - mass
            self.cmix(n, &self.sub[0], mean, std)
            if wake:
                n = self.cawake(True)
                for j in range(n):
                    self.sub[j] = self.lw[j]
                self.cupdate(n, &self.sub[0], y, u)
                for j in range(n):
                    self.lw[j] = self.sub[j]
            else:
                self.cupdate(n, &self.sub[0], y, u)
                for j in range(n):
                    self.lw[self.ix[j]] = self.sub[j] + mass
        n = self.cawake(wake or sleeping == 0)
        for j in range(n):              # the checks above passed: every step is taken
            k = self.ix[j]
            step = <KRLSEvents>self.steps[k]
            step.model.cstep(p, xx, y, w, &f, &sf2)
            step.cstore(<dict>self.attrs_of[k])
        if wake:
            self.csleep()
        support = 0
        for k in range(self.K):
            support += (<KRLSEvents>self.steps[k]).model.n_support
            self.logw_view[k] = self.lw[k]
            self.asleep_view[k] = self.asleep[k]
        attrs["_logw"] = self.logw_out
        attrs["_asleep"] = self.asleep_out
        attrs["t_"] = t + (w > 0.0)
        attrs["n_support_"] = support
        return mean[0]

    def predict_std(self, dict attrs, x):
        """(mean, std) of the awake learners' mixture for one row (attrs: the pool's
        ``__dict__``), as `MultiKernelRegressor.predict(X, return_std=True)`."""
        cdef double mean, std
        self.cmixture_std(attrs, self.crow_of(x, "predicted"), &mean, &std)
        return mean, std

    cdef int cmixture_std(self, dict attrs, const double* p, double* mean,
                          double* std) except -1:
        cdef Py_ssize_t j, k, n, sleeping = self.cread(attrs)
        cdef double f, sf2, s02, mass = 0.0
        cdef Posterior model
        n = self.cawake(sleeping == 0)
        for j in range(n):
            k = self.ix[j]
            model = (<KRLSEvents>self.steps[k]).model
            s02 = model.nums / model.dens if model.dens > 0.0 else 1.0
            model.cpredict(p, &f, &sf2)
            self.F[k] = f
            self.S[k] = sqrt(s02 * (model.noise + sf2))
        if sleeping:
            mass = self.cmass(n)
        for j in range(n):
            self.sub[j] = self.lw[self.ix[j]] - mass
        self.cmix(n, &self.sub[0], mean, std)
        return 0

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        cdef double mean, std
        if not self.learns:
            return 0
        self._learn_into(attrs, x, y, 1.0, &mean, &std)
        return 1

    cdef object cpredict(self, dict attrs, object x):
        cdef double mean, std
        self.cmixture_std(attrs, self.crow_of(x, "predicted"), &mean, &std)
        return mean
