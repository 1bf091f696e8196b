"""One nogil loop per chunk for coefficient-regularized online classification.

Tian-Sheng, eq. (0.4) (docs/algorithms.md, section 4): fixed centres c_1..c_m, k_t = (K(x_t, c_j))_j,
f_a(x) = a . k(x), and every step updates all m coefficients,
    a_{t+1} = (1 - eta_t lam) a_t - eta_t phi'_-(y_t f_{a_t}(x_t)) y_t k_t.
The model is a KernelExpansion whose centres never change once placed; its
lazy scale makes the shrink O(1), so a step is one pass over the centres for
k_t (vectorised exp) and one O(m) axpy for the gradient.

The step is written once per model, `cstep` (binary) and `cmstep` (k classes, a
matrix A): the chunk loops and `CoefRegEvents` (one event, no allocation) call
them.  A step checks everything before its first write (the newcomer becomes a
centre only then), so a refused step changes nothing.  With a `Drift` record
(_drift.pxd) the step watches its mistakes and the coefficients take its factor
(forgetting, and `keep` at a change) before the step: the loops take the drift
state as an array of its 8 fields, updated in place.
"""
import numpy as np

from libc.math cimport NAN, exp, fmin, isfinite, pow, sqrt
from libc.string cimport memcmp, memcpy

from okl._core._kernels cimport cdot, ckernel_row, cself
from okl._core._lazy cimport cshrink_lazy
from okl._core._losses cimport LOGISTIC, Loss, LossSpec, cdloss
from okl._core._expansion cimport KernelExpansion
from okl._core._pointwise cimport Events, cready
from okl._core._drift cimport (
    DRIFT_FIELDS, Drift, DriftState, cactive, cdrift_tuple, cload, cmistake, cread_drift,
    cstore, cwatch,
)
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals
from okl._core._warmup cimport Warmup


cdef enum:
    TAKEN = 0
    DIVERGED = 2


cdef inline double cnext_scale(double scale, double factor) noexcept nogil:
    """The scale `cshrink_lazy` leaves after a shrink by factor."""
    scale *= factor
    if factor <= 0.0 or scale < 1e-9 or scale > 1e9:
        return 1.0
    return scale


cdef inline double ckk(KernelExpansion e, const double* x, double xx, bint ready, double* kb,
                       Py_ssize_t n_centers, double* kx) noexcept nogil:
    """||k_t||^2 with the newcomer's K(x, x) when x becomes a centre; fills kb[:m] unless
    `ready` (kb[:m] = K(c_j, x) of the m centres already)."""
    cdef Py_ssize_t m = e.n_support
    cdef double kk
    if not ready and m:
        ckernel_row(&e.kernel, x, e.centers, m, e.n_features, kb)
    kk = cdot(kb, kb, m) if m else 0.0
    kx[0] = 0.0
    if m < n_centers:
        kx[0] = cself(&e.kernel, xx)
        kk += kx[0] * kx[0]
    return kk


cdef int cstep(KernelExpansion e, const double* x, double xx, double y, double eta_t,
               double lam, double lipschitz, Py_ssize_t n_centers, const LossSpec* spec,
               bint ready, double* kb, double* f_out, double* eta_out,
               double* kk_out, const Drift* dr, DriftState* ds) noexcept nogil:
    """One binary step on the row x (label y = +-1): TAKEN or DIVERGED (nothing changed).

    kb (room for m + 1) holds K(c_j, x) (computed here unless `ready`); f_out gets
    f_t(x_t), eta_out the eta_t used, kk_out ||k_t||^2; dr (or NULL: none) the drift
    settings, ds the drift state, updated when the step is taken.
    """
    cdef Py_ssize_t m = e.n_support
    cdef double f, kk, kx, step, g, factor, kept = 1.0
    cdef DriftState nxt
    kk = ckk(e, x, xx, ready, kb, n_centers, &kx)
    f = e.scale * cdot(e.coef, kb, m) if m else 0.0
    f_out[0] = f
    if not (isfinite(f) and isfinite(kx)):
        return DIVERGED
    if dr != NULL:          # the mistake watched; the coefficients take `kept` first
        kept = cwatch(dr, ds, 1.0 if y * f <= 0.0 else 0.0, &nxt)
    kk_out[0] = kk
    step = eta_t
    if lipschitz > 0.0:
        step = fmin(step, 1.0 / (lipschitz * kk + lam))
    eta_out[0] = step
    g = y * cdloss(spec, y * f * kept)
    factor = (1.0 - step * lam) * kept
    if g != 0.0 and not isfinite(step * g / cnext_scale(e.scale, factor)):
        return DIVERGED
    e.cshrink_coef(factor)              # <= 0: a = 0, centres kept
    if m < n_centers:
        e.cadd(x, xx, 0.0)              # x_t is a centre from now on, a_j = 0
        kb[m] = kx
    if g != 0.0:
        e.caxpy_coef(-step * g, kb)
    if dr != NULL:
        ds[0] = nxt
    return TAKEN


def fit_chunk(KernelExpansion expansion,
              const double[:, ::1] X,      # IN (n, d)
              const double[::1] y,         # IN (n,) labels in {-1, +1}
              const double[::1] eta,       # IN (n,) scheduled eta_t
              double lam,                  # IN lam > 0
              double lipschitz,            # IN M; > 0 caps eta_t at 1 / (M ||k_t||^2 + lam)
              Py_ssize_t n_centers,        # IN m: stream points become centres until m exist
              LossSpec loss,               # IN a margin loss (okl.losses.loss_spec)
              double[::1] pred_out,        # OUT (n,) f_t(x_t), before the update
              double[::1] eta_out,         # OUT (n,) the eta_t used
              double[::1] kk_out,          # OUT (n,) ||k_t||^2
              const double[::1] gamma=None,     # IN (n + 1,) the width of each row, and after
              drift=None,                  # IN the `Drift` fields, or None: none
              double[::1] drift_state=None):   # IN/OUT (8,) the drift state (with drift)
    """Run the chunk; return -1, or the index of the first step that diverged.  `gamma`:
    gamma="scale"'s warm-up (docs/defaults.md, section 2), set on the centres' kernel
    before each row."""
    cdef LossSpec spec = loss
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False, widths = gamma is not None
    cdef const double* x
    cdef Drift dr
    cdef DriftState ds
    cdef const Drift* watch = NULL
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if widths and gamma.shape[0] != n + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    if drift is not None:
        if drift_state is None or drift_state.shape[0] != DRIFT_FIELDS:
            raise ValueError("drift_state must hold the 8 fields of the drift state.")
        dr = drift
        cload(&drift_state[0], &ds)
        watch = &dr
    expansion.reserve(max(0, min(n, n_centers - expansion.n_support)))
    with nogil:
        for i in range(n + 1 if widths else n):
            if widths and gamma[i] != expansion.kernel.gamma:
                expansion.cset_gamma(gamma[i])
            if i == n:
                break
            if cinterrupted(&work, expansion.n_support * d):
                interrupted = True
                break
            x = &X[i, 0]
            if cstep(expansion, x, cdot(x, x, d), y[i], eta[i], lam, lipschitz, n_centers,
                     &spec, False, expansion.kbuf, &pred_out[i], &eta_out[i],
                     &kk_out[i], watch, &ds) == DIVERGED:
                failed = i
                break
    if watch != NULL:
        cstore(&ds, &drift_state[0])
    if interrupted:
        craise_pending()
    return failed


# -- k classes: a coefficient matrix A (m, k), scores s = A^T k_t -----------------------
#
# The gradient g of the loss in s: the softmax's p - e_y (loss "logistic"), or
# phi'_-(s_y - s_r) (e_y - e_r), r the best wrong class, for the other margin
# losses; the step, in the norm 2 ||A||_F^2 of docs/multiclass-pa.md, is
#     A_{t+1} = (1 - eta_t lam) A_t - (eta_t / 2) k_t g_t^T,
# so with k = 2 and A = [-a/2, a/2] it is the binary step on a = A_1 - A_0.

cdef void cgrad(const LossSpec* L, const double* s, Py_ssize_t k, Py_ssize_t y,
                double* g) noexcept nogil:
    """g = d loss / d s at the scores s (k of them) for the true class y."""
    cdef Py_ssize_t c, r = -1
    cdef double top, total
    if L.kind == LOGISTIC:                  # softmax: p - e_y
        top = s[0]
        for c in range(1, k):
            if s[c] > top:
                top = s[c]
        total = 0.0
        for c in range(k):
            g[c] = exp(s[c] - top)
            total += g[c]
        for c in range(k):
            g[c] /= total
        g[y] -= 1.0
        return
    for c in range(k):
        g[c] = 0.0
        if c != y and (r < 0 or s[c] > s[r]):
            r = c
    if r >= 0:
        top = cdloss(L, s[y] - s[r])
        g[y] = top
        g[r] = -top


cdef int cmstep(KernelExpansion e, double* a, Py_ssize_t rows, Py_ssize_t k, double* scale,
                const double* x, double xx, Py_ssize_t y, double eta_t, double lam,
                double lipschitz, Py_ssize_t n_centers, const LossSpec* spec, bint ready,
                double* kb, double* s, double* g, double* ks, double* eta_out,
                double* kk_out, const Drift* dr, DriftState* ds) noexcept nogil:
    """One step of k classes on A = scale * a (rows x k, row j the centre j): TAKEN or
    DIVERGED (nothing changed).  s gets the scores before the step, g and ks are work (k);
    dr, ds as in `cstep`."""
    cdef Py_ssize_t j, c, m = e.n_support
    cdef double kk, kx, step, factor, h, scale_next, kept = 1.0
    cdef const double* sg = s
    cdef DriftState nxt
    kk = ckk(e, x, xx, ready, kb, n_centers, &kx)
    for c in range(k):
        s[c] = 0.0
    for j in range(m):
        for c in range(k):
            s[c] += kb[j] * a[j * k + c]
    for c in range(k):
        s[c] *= scale[0]
        if not isfinite(s[c]):
            return DIVERGED
    if not isfinite(kx):
        return DIVERGED
    if dr != NULL:          # the mistake watched
        kept = cwatch(dr, ds, cmistake(s, y, k), &nxt)
        if kept != 1.0:     # the scores of the model the step starts from
            for c in range(k):
                ks[c] = s[c] * kept
            sg = ks
    kk_out[0] = kk
    step = eta_t
    if lipschitz > 0.0:
        step = fmin(step, 1.0 / (lipschitz * kk + lam))
    eta_out[0] = step
    cgrad(spec, sg, k, y, g)
    factor = (1.0 - step * lam) * kept
    scale_next = cnext_scale(scale[0], factor)
    for c in range(k):
        if g[c] != 0.0 and not isfinite(-0.5 * step * g[c] / scale_next):
            return DIVERGED
    if m < n_centers:
        e.cadd(x, xx, 0.0)              # x_t is a centre from now on, A_j = 0
        kb[m] = kx
        m += 1
    cshrink_lazy(a, rows * k, scale, factor)
    for c in range(k):
        if g[c] == 0.0:
            continue
        h = -0.5 * step * g[c] / scale[0]
        for j in range(m):
            a[j * k + c] += h * kb[j]
    if dr != NULL:
        ds[0] = nxt
    return TAKEN


def fit_multi_chunk(KernelExpansion expansion,  # IN/OUT the centres (its coef stays 0)
                    double[:, ::1] A,           # IN/OUT (>= m, k) raw coefficients
                    double scale,               # IN A_true = scale * A
                    const double[:, ::1] X,
                    const Py_ssize_t[::1] y,    # IN (n,) class indices in [0, k)
                    const double[::1] eta, double lam, double lipschitz,
                    Py_ssize_t n_centers, LossSpec loss,
                    double[:, ::1] score_out,   # OUT (n, k) scores before the update
                    double[::1] eta_out, double[::1] kk_out,
                    const double[::1] gamma=None,  # IN (n + 1,) the width of each row, and after
                    drift=None, double[::1] drift_state=None):     # as in `fit_chunk`
    """The multiclass chunk; return (failed, scale), failed = -1 or the first divergent step.
    The scores are those of the model before the step (before the drift factor)."""
    cdef LossSpec spec = loss
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1], k = A.shape[1]
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False, widths = gamma is not None
    cdef double[::1] g
    cdef const double* x
    cdef Drift dr
    cdef DriftState ds
    cdef const Drift* watch = NULL
    if drift is not None:
        if drift_state is None or drift_state.shape[0] != DRIFT_FIELDS:
            raise ValueError("drift_state must hold the 8 fields of the drift state.")
        dr = drift
        cload(&drift_state[0], &ds)
        watch = &dr
    if d != expansion.n_features:
        raise ValueError(f"X has {d} columns, the expansion {expansion.n_features}.")
    if A.shape[0] < n_centers or score_out.shape[0] != n or score_out.shape[1] != k:
        raise ValueError(f"A needs ({n_centers}, k) rows, score_out ({n}, {k}).")
    for i in range(n):
        if not 0 <= y[i] < k:
            raise ValueError(f"class index {y[i]} outside [0, {k}).")
    if widths and gamma.shape[0] != n + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    if n == 0 or k == 0:
        return -1, scale
    g = np.zeros(k)
    cdef double[::1] ks = np.zeros(k)
    expansion.reserve(max(0, min(n, n_centers - expansion.n_support)))
    with nogil:
        for i in range(n + 1 if widths else n):
            if widths and gamma[i] != expansion.kernel.gamma:
                expansion.cset_gamma(gamma[i])
            if i == n:
                break
            if cinterrupted(&work, expansion.n_support * (d + k)):
                interrupted = True
                break
            x = &X[i, 0]
            if cmstep(expansion, &A[0, 0], A.shape[0], k, &scale, x, cdot(x, x, d), y[i],
                      eta[i], lam, lipschitz, n_centers, &spec, False, expansion.kbuf,
                      &score_out[i, 0], &g[0], &ks[0], &eta_out[i], &kk_out[i], watch,
                      &ds) == DIVERGED:
                failed = i
                break
    if watch != NULL:
        cstore(&ds, &drift_state[0])
    if interrupted:
        craise_pending()
    return failed, scale


cdef class CoefRegEvents(Events):
    """One-event predict and learn for `CoefficientRegularizedClassifier` (either model).

    `learn` takes the chunk loops' own step (`cstep`, or `cmstep` on the estimator's
    matrix A, in place).  The kernel row of the last prediction is kept with a copy
    of the row and a fingerprint of the model (t, n_support, scale, n_rescale):
    "predict, then learn" computes k_t once.

    Parameters
    ----------
    expansion : KernelExpansion
        The centres (and the binary coefficients).
    A : ndarray of shape (n_centers, k) or None
        The coefficient matrix of k >= 3 classes (true values), updated in place.
    lam, eta, eta_decay, lipschitz : float
        The estimator's lam, its step (eta <= 0: a callable's eta_t is passed to
        `learn`), and M > 0 of eta="auto" (0: no cap).
    n_centers : int
    loss : dict
        The `LossSpec` fields.
    name : str
    names : tuple of str
        The estimator attributes `matches` compares.
    drift : dict or None
        The `Drift` fields (_drift.pxd), or None: no forgetting, no detector.
    """
    cdef Drift drift
    cdef bint watching
    cdef KernelExpansion expansion
    cdef object A_obj
    cdef double[:, ::1] A
    cdef Py_ssize_t k, n_centers
    cdef double lam, eta, eta_decay, lipschitz
    cdef LossSpec loss
    cdef double[::1] kb, last_row, s, g, ks
    cdef bint has_last
    cdef double last_t, last_scale, last_f, last_gamma
    cdef public Warmup warm             # gamma="scale"'s warm-up, while on (docs/defaults.md, 2)
    # the ready-row entry (`cevent`): eta="auto" (no warning to give), G / ||k_t|| of norm_bound_
    cdef public bint auto
    cdef public double gradient_at_zero
    cdef Py_ssize_t last_n, last_rescale

    def __init__(self, KernelExpansion expansion, A, double lam, double eta, double eta_decay,
                 double lipschitz, Py_ssize_t n_centers, LossSpec loss, str name,
                 tuple names=(), drift=None):
        self.watching = drift is not None
        if self.watching:
            self.drift = drift
        self.expansion = expansion
        self.A_obj = A
        self.k = 0
        if A is not None:
            self.A = A
            self.k = self.A.shape[1]
            if self.A.shape[0] < n_centers:
                raise ValueError(f"A has {self.A.shape[0]} rows for {n_centers} centres.")
        self.lam, self.eta, self.eta_decay, self.lipschitz = lam, eta, eta_decay, lipschitz
        self.n_centers, self.loss = n_centers, loss
        self.name, self.names = name, names
        self.values = tuple([expansion] + [None] * (len(names) - 1))
        self.kb = np.empty(max(n_centers, expansion.n_support) + 1)
        self.last_row = np.empty(expansion.n_features)
        self.s = np.empty(max(self.k, 1))
        self.g = np.empty(max(self.k, 1))
        self.ks = np.empty(max(self.k, 1))
        self.has_last = False
        self.ready = True

    cdef bint _ready(self, const double* x, double t):
        """Whether kb holds k(x) of this very row and model (the last prediction's)."""
        cdef KernelExpansion e = self.expansion
        return (self.has_last and t == self.last_t and e.n_support == self.last_n
                and e.scale == self.last_scale and e.n_rescale == self.last_rescale
                and e.kernel.gamma == self.last_gamma and memcmp(x, &self.last_row[0], e.n_features * sizeof(double)) == 0)

    cdef const double* _row(self, object x, str action) except NULL:
        """The data of row x (read in place when ready), checked: d values, all finite."""
        cdef Py_ssize_t j, n = 0, d = self.expansion.n_features
        cdef const double[::1] typed
        cdef const double* p = cready(x, &n)
        if p == NULL:           # any other 1-D float64 buffer, or a clear error
            typed = x
            n = typed.shape[0]
            p = &typed[0] if n else NULL
        if n != d:
            raise ValueError(f"X has {n} features, but {self.name} is expecting "
                             f"{d} features as input.")
        for j in range(d):
            if not isfinite(p[j]):
                raise ValueError(f"{self.name} got a row with NaN or inf: "
                                 f"{np.asarray(x)[:10]}; non-finite values cannot be {action}.")
        return p

    cdef void _remember(self, const double* x, double t):
        cdef KernelExpansion e = self.expansion
        memcpy(&self.last_row[0], x, e.n_features * sizeof(double))
        self.last_t, self.last_n, self.last_scale = t, e.n_support, e.scale
        self.last_rescale, self.has_last, self.last_gamma = e.n_rescale, True, e.kernel.gamma

    def predict(self, x, double t, b=None):
        """f(x) (binary) or the k scores A^T k(x) of one row (b: unused, no offset)."""
        return self._predict(x, t)

    cdef object _predict(self, object x, double t):
        cdef KernelExpansion e = self.expansion
        cdef Py_ssize_t j, c, m = e.n_support, k = self.k
        cdef const double* p = self._row(x, "predicted")
        if not self._ready(p, t):
            if m:
                ckernel_row(&e.kernel, p, e.centers, m, e.n_features, &self.kb[0])
            self._remember(p, t)
        if k == 0:
            return e.scale * cdot(e.coef, &self.kb[0], m) if m else 0.0
        out = np.zeros(k)
        cdef double[::1] o = out
        for j in range(m):
            for c in range(k):
                o[c] += self.kb[j] * self.A[j, c]
        return out

    def learn(self, x, double y, double t, double eta_given=NAN, dict attrs=None,
              drift_state=None):
        """Predict, then take step t + 1 (y: +-1.0, or the class index as a float; eta_given:
        eta_t of a callable eta; drift_state: the learner's `_drift_state`, None: none).
        Returns (f or the scores, eta_t, ||k_t||^2, the drift state after, a tuple); raises,
        leaving the model as it was, on NaN/inf in x or divergence.  During gamma="scale"'s
        warm-up `attrs` (the learner's ``__dict__``) holds its state (`Warmup`)."""
        cdef double eta_used = NAN, kk = NAN, f = NAN
        cdef DriftState ds
        cread_drift(drift_state, t, &ds)
        if self.warm is not None and attrs is not None:
            self.warm.cload(attrs, self.expansion.kernel.gamma)
        self._learn(x, y, t, eta_given, &f, &eta_used, &kk, &ds)
        if self.warm is not None and attrs is not None:
            self.warm.cstore(attrs)
            if self.warm.over:
                self.warm = None
        out = f if self.k == 0 else np.asarray(self.s[:self.k]).copy()
        return out, eta_used, kk, cdrift_tuple(&ds)

    cdef int _learn(self, object x, double y, double t, double eta_given, double* f,
                    double* eta_used, double* kk, DriftState* ds) except -1:
        """`learn` into f (binary), self.s (the k scores), eta_used, kk and ds."""
        cdef KernelExpansion e = self.expansion
        cdef Py_ssize_t i, yi = <Py_ssize_t>y, d = e.n_features
        cdef double eta_t, scale = 1.0
        cdef bint ready
        cdef int status
        cdef const double* p = self._row(x, "learned")
        if self.k and not (0 <= yi < self.k and yi == y):
            raise ValueError(f"y = {y} is not a class index in [0, {self.k}).")
        eta_t = eta_given if self.eta <= 0.0 else self.eta * pow(t + 1.0, -self.eta_decay)
        ready = self._ready(p, t)
        if e.n_support < self.n_centers and e.n_support == e.capacity:
            e.reserve(1)
        craise_signals()                # a Ctrl-C so far: raised before any write
        if self.k == 0:
            status = cstep(e, p, cdot(p, p, d), y, eta_t, self.lam, self.lipschitz,
                           self.n_centers, &self.loss, ready, &self.kb[0], f, eta_used, kk,
                           &self.drift if self.watching else NULL, ds)
        else:
            status = cmstep(e, &self.A[0, 0], self.A.shape[0], self.k, &scale, p,
                            cdot(p, p, d), yi, eta_t, self.lam, self.lipschitz,
                            self.n_centers, &self.loss, ready, &self.kb[0], &self.s[0],
                            &self.g[0], &self.ks[0], eta_used, kk,
                            &self.drift if self.watching else NULL, ds)
            if status == TAKEN and scale != 1.0:       # A = scale * a, as the chunk leaves it
                for i in range(self.A.shape[0] * self.k):
                    (&self.A[0, 0])[i] *= scale
        self.has_last = False
        if status == TAKEN and self.warm is not None and self.warm.cadd(p):
            e.cset_gamma(self.warm.width.gamma)
        if status == DIVERGED:
            raise FloatingPointError(
                f"{self.name} diverged at step t={<Py_ssize_t>t + 1} (eta_t={eta_used[0]:.3g}): "
                "the coefficients would no longer be finite. The explicit step size is too "
                "large for this data; use eta='auto' (whose steps keep ||a_t|| bounded), a "
                "smaller eta or a larger eta_decay. The model is left as it was.")
        return 0

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        """`learn` and the counters `CoefficientRegularizedClassifier._learn_event` keeps
        (t_, kappa_max_, norm_bound_, eta_), stored in this call; declined for a callable
        eta and for a step 1 - eta_t lam <= 0 of a given eta (the learner warns)."""
        cdef double eta_used = NAN, kk = NAN, f = NAN, kappa
        cdef DriftState ds
        t = attrs["t_"]
        if self.eta <= 0.0 or (not self.auto and self.eta * pow(
                t + 1.0, -self.eta_decay) * self.lam >= 1.0):
            return 0
        drift = attrs.get("_drift_state")
        cread_drift(drift, t, &ds)
        if self.warm is not None:
            self.warm.cload(attrs, self.expansion.kernel.gamma)
        self._learn(x, y, t, NAN, &f, &eta_used, &kk, &ds)
        if self.warm is not None:
            self.warm.cstore(attrs)
            if self.warm.over:
                self.warm = None
        if drift is not None or (self.watching and cactive(&self.drift)):
            attrs["_drift_state"] = cdrift_tuple(&ds)
        attrs["t_"] = t + 1
        kappa = sqrt(kk)
        if kappa > attrs["kappa_max_"]:
            attrs["kappa_max_"] = kappa
            attrs["norm_bound_"] = self.gradient_at_zero * kappa / self.lam
        attrs["eta_"] = eta_used
        return 1

    cdef object cpredict(self, dict attrs, object x):
        return self._predict(x, attrs["t_"])
