"""The multiclass NORMA step on a `MultiExpansion` (docs/multiclass.md, sections 3 and 4).

One step predicts the scores s = f_t(x_t) + b_t in R^k, then
    f_{t+1} = (1 - lam_t eta_t) f_t - eta_t w_t g_t K(x_t, .),   b_{t+1} = b_t - eta_t w_t g_t
with g_t in R^k the gradient of the multiclass loss at s: Crammer-Singer's hinge
(g = e_r - e_y when s_y - s_r < 1, r the best wrong class; else 0 and no
centre is added) or the softmax cross-entropy (g = p - e_y).  eta_t and lam_t
are those of the binary step (`cschedule` of _pointwise.pyx, written again here
with the same formulas; the NumPy twin of both is okl/_numpy/pointwise.schedule).
A step checks everything before its first write: a step that would leave a
non-finite model changes nothing.  The model is a `MultiExpansion` or, for the
random Fourier and Nystroem models, the weight matrix `_linear.MultiLinearModel` on
feature rows (section 6).  Callers: `fit_chunk` (a chunk, nogil, either model),
`MulticlassEvents` (one event) and `MultiFeatureEvents` (one event on features).  The NumPy twin is okl/_numpy/multiclass.py.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport NAN, isfinite
from libc.string cimport memcmp, memcpy

from okl._core._expansion cimport MERGE
from okl._core._kernels cimport cdot, cself
from okl._core._linear cimport FeatureRow, MultiLinearModel
from okl._core._multiexpansion cimport MultiExpansion
from okl._core._pointwise import huge_event
from okl._core._pointwise cimport GIVEN, Events, Schedule, cready, cschedule, row_is_finite
from okl._core._drift cimport (
    DriftState, cactive, cdrift_tuple, cmistake, cread_drift, cwatch,
)
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals
from okl._core._warmup cimport KernelMean, Warmup

cnp.import_array()


cdef enum:
    TAKEN = 0
    SKIPPED = 1
    DIVERGED = 2


ctypedef fused MModel:          # the kernel expansion, or the weight matrix on features
    MultiExpansion
    MultiLinearModel


cdef struct MState:         # _pointwise.StepState without b (a vector here, passed apart)
    double t
    double ck2
    double eta_t
    double lam_t
    double eta_try
    double reset_t
    double reset_eta
    double reset_lam
    DriftState drift


cdef int cmstep(MModel model, const double* x, double xx, double kxx, double kself,
                const double* s, Py_ssize_t y, double w, double eta_given, int loss,
                const Schedule* sch, MState* st, double* b, double* g, double* a) noexcept nogil:
    """One step from the scores s = f_t(x_t) + b: TAKEN, SKIPPED (w = 0) or DIVERGED.

    x is the row the model adds (a centre, or a feature row z), xx = <x, x>; kxx =
    K(x_t, x_t) of the learner's kernel (for C_K^2), kself the model's own K(x, x)
    (xx for feature rows).  b (k) is updated in place when the step is taken; g, a:
    work (k).
    """
    cdef Py_ssize_t j, k = model.n_classes
    cdef double t = 0.0, ck2 = 0.0, eta_t = NAN, lam_t = NAN, factor, scale_next, bj
    cdef double kept = 1.0, shrink
    cdef DriftState drift
    cdef bint add
    st.eta_try = NAN
    if w != 0.0:
        t = st.t + 1.0
        ck2 = kxx if kxx > st.ck2 else st.ck2
        # forgetting and change detection on the mistakes (_drift.pxd)
        kept = cwatch(&sch.drift, &st.drift, cmistake(s, y, k), &drift)
        cschedule(sch, drift.tau, ck2, eta_given, &eta_t, &lam_t)
        st.eta_try = eta_t
    for j in range(k):
        if not isfinite(s[j]):
            return DIVERGED
    if w == 0.0:
        return SKIPPED
    add = cgradient(loss, s, y, k, w, g)
    factor = 1.0 - lam_t * eta_t
    shrink = factor * kept
    scale_next = model.scale * shrink
    if shrink <= 0.0 or scale_next < 1e-9 or scale_next > 1e9:
        scale_next = 1.0
    for j in range(k):
        a[j] = -eta_t * g[j]
        bj = b[j] - eta_t * g[j] if sch.intercept else b[j]
        if not (isfinite(a[j] / scale_next) and isfinite(bj)):
            return DIVERGED
        if add and not isfinite(shrink * (s[j] - b[j]) + a[j] * kself + bj):
            return DIVERGED
    model.cshrink(shrink)
    if add:
        model.cadd(x, xx, a)
    if sch.intercept:
        for j in range(k):
            b[j] -= eta_t * g[j]
    if factor <= 0.0 and st.reset_t == 0.0:
        st.reset_t, st.reset_eta, st.reset_lam = t, eta_t, lam_t
    st.t, st.ck2, st.eta_t, st.lam_t = t, ck2, eta_t, lam_t
    st.drift = drift
    return TAKEN


def fit_chunk(MModel model,
              const double[:, ::1] X,       # IN (n, d) rows (feature rows z for a MultiLinearModel)
              const Py_ssize_t[::1] y,      # IN (n,) class indices in [0, k)
              Schedule schedule,
              int loss,                     # a MulticlassLoss
              MState state,
              double[::1] b,                # IN/OUT (k,) the offsets
              double[:, ::1] pred_out,      # OUT (n, k) f_t(x_t) + b_t, before each update
              const double[::1] weight=None,
              const double[::1] eta=None,
              const double[::1] kdiag=None,     # IN (n,) K(x_t, x_t) (needed on features)
              const double[::1] gamma=None,     # IN (n + 1,) the width of each row, and after
              KernelMean kbar=None,             # eta="scaled"'s kbar while it is measured
              const double[:, ::1] raw=None,    # IN (n, d0) the rows themselves (kbar on features)
              Py_ssize_t frozen_at=0):          # IN the width stays once this many centres exist
    """Run the chunk: (index of the first step that diverged or -1, the state after).

    `gamma` and `kbar`: the warm-ups, as in `_pointwise.fit_chunk`."""
    cdef Py_ssize_t i, j, n = X.shape[0], d = X.shape[1], k = model.n_classes
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False
    cdef const double* x
    cdef double xx, kxx, w = 1.0, eta_i = NAN
    cdef bint widths = gamma is not None
    cdef bint kbar_on = kbar is not None and kbar.active
    cdef bint rows = kbar_on and kbar.rows
    cdef int status
    if MModel is MultiExpansion:
        if d != model.n_features:
            raise ValueError(f"X has {d} columns, the expansion {model.n_features}.")
    else:
        if d != model.n_components:
            raise ValueError(f"Z has {d} columns, the model {model.n_components}.")
        if kdiag is None or kdiag.shape[0] != n:
            raise ValueError("A MultiLinearModel needs kdiag, K(x_t, x_t) of every row.")
    if y.shape[0] != n or pred_out.shape[0] != n or pred_out.shape[1] != k or b.shape[0] != k:
        raise ValueError("X, y, b and pred_out do not match the expansion.")
    for i in range(n):
        if not 0 <= y[i] < k:
            raise ValueError(f"y[{i}] = {y[i]} is not a class index in [0, {k}).")
    if weight is not None and weight.shape[0] != n:
        raise ValueError(f"weight has {weight.shape[0]} values for {n} rows.")
    if schedule.kind == GIVEN and (eta is None or eta.shape[0] != n):
        raise ValueError("A GIVEN schedule needs eta, one value per row.")
    if widths and (MModel is not MultiExpansion or gamma.shape[0] != n + 1):
        raise ValueError("gamma gives the width of an expansion's n rows and after them.")
    if rows and MModel is MultiExpansion:
        raw = X
    if rows and (raw is None or raw.shape[0] != n or raw.shape[1] != kbar.n_features):
        raise ValueError("kbar over the rows learned needs them (raw).")
    g_arr, a_arr = np.empty(k), np.empty(k)
    cdef double[::1] g = g_arr, a = a_arr
    if MModel is MultiExpansion:
        model.reserve(n)
    if kbar is not None and not kbar.active:    # fixed earlier in the call
        schedule.lipschitz = kbar.lipschitz * kbar.final
    if kbar_on:
        kbar.ensure(max(kbar.n_points, model.n_support if MModel is MultiExpansion else 0)
                    + n + 1)
    with nogil:
        if MModel is MultiExpansion:
            if widths and gamma[0] != model.kernel.gamma:
                model.cset_gamma(gamma[0])
        for i in range(n):
            if cinterrupted(&work, (model.n_support * (d + k)) if MModel is MultiExpansion
                            else d * k):
                interrupted = True
                break
            if kbar_on and kbar.active:
                schedule.lipschitz = cmkernel_mean(model, kbar, state.t)
            x = &X[i, 0]
            xx = cdot(x, x, d)
            model.cscores(x, &pred_out[i, 0])
            for j in range(k):
                pred_out[i, j] += b[j]
            if weight is not None:
                w = weight[i]
            if eta is not None:
                eta_i = eta[i]
            if MModel is MultiExpansion:
                kxx = cself(&model.kernel, xx)
                status = cmstep(model, x, xx, kxx, kxx, &pred_out[i, 0], y[i], w, eta_i, loss,
                                &schedule, &state, &b[0], &g[0], &a[0])
            else:
                status = cmstep(model, x, xx, kdiag[i], xx, &pred_out[i, 0], y[i], w, eta_i,
                                loss, &schedule, &state, &b[0], &g[0], &a[0])
            if status == DIVERGED:
                failed = i
                break
            if rows and status == TAKEN and kbar.active:
                kbar.cappend(&raw[i, 0])
            if MModel is MultiExpansion:
                if frozen_at and model.n_support >= frozen_at:
                    widths = False          # Nystroem's switch follows: the width stays
                if widths and gamma[i + 1] != model.kernel.gamma:
                    model.cset_gamma(gamma[i + 1])
        if kbar_on and kbar.active and failed < 0 and not interrupted:
            cmkernel_mean(model, kbar, state.t, True)   # fixed after the WARMUP-th step
    if interrupted:
        craise_pending()
    return failed, state


cdef inline double cmkernel_mean(MModel model, KernelMean kbar, double t,
                                 bint after=False) noexcept nogil:
    """M kbar of the next step, or `after` a step: `_pointwise.ckernel_mean` on k classes."""
    if MModel is MultiExpansion:
        if after:
            kbar.cafter(model.centers, model.n_support, model.budget, model.kernel.gamma, t)
            return 0.0
        return kbar.clipschitz(model.centers, model.n_support, model.budget,
                               model.kernel.gamma, t)
    if after:
        kbar.cafter(NULL, 0, 0, kbar.gamma, t)
        return 0.0
    return kbar.clipschitz(NULL, 0, 0, kbar.gamma, t)


cdef const double* cvector(object v, Py_ssize_t* n, list keep) except NULL:
    """The data of a 1-D float64 buffer (a ready array read in place; any other buffer
    through a typed view, kept alive in `keep`), its length in n."""
    cdef const double* p = cready(v, n)
    cdef const double[::1] typed
    if p != NULL:
        return p
    typed = v
    keep.append(typed)
    n[0] = typed.shape[0]
    return &typed[0] if n[0] else &EMPTY        # never read: the lengths are checked first


cdef double EMPTY = 0.0


cdef object row_head(const double* x, Py_ssize_t d):
    """The first values of a row, for an error message."""
    return np.array([x[j] for j in range(min(d, 10))])


cdef class KScores(Events):
    """What the one-event steps of k classes share (`MulticlassEvents`, `MultiFeatureEvents`):
    buffers of k scores and offsets, the learner's counters read and stored in C, and the
    label of the scores without an array per event.  A subclass gives `_scores` (the model
    part of the scores of one row) and `_step` (the step on its model)."""
    cdef Py_ssize_t k, d
    cdef double[::1] s, bn, g, a
    cdef readonly object outcome     # what the last `learn` returned, None until it returns
    cdef public Warmup warm             # the warm-ups, while on (docs/defaults.md, 2 and 4)
    cdef Schedule schedule

    cdef double _gamma(self):
        """The model's width (the warm-ups measure at it)."""
        return NAN

    cdef int _buffers(self, Py_ssize_t k, Py_ssize_t d) except -1:
        self.k, self.d = k, d
        self.s, self.bn, self.g, self.a = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
        return 0

    cdef int _scores(self, const double* x, double* out, double t, str action) except -1:
        raise NotImplementedError

    cdef int _step(self, const double* x, Py_ssize_t y, double weight, double eta_given,
                   MState* st) except -1:
        raise NotImplementedError

    cdef int _check(self, Py_ssize_t n, Py_ssize_t nb) except -1:
        if n != self.d:
            raise ValueError(f"X has {n} features, but {self.name} is expecting {self.d} "
                             "features as input.")
        if nb != self.k:
            raise ValueError("intercept_ does not match the classes.")
        return 0

    cdef int _predict(self, const double* x, const double* b, double t, str action) except -1:
        """self.s <- the k scores f(x) + b."""
        cdef Py_ssize_t j
        self._scores(x, &self.s[0], t, action)
        for j in range(self.k):
            self.s[j] += b[j]
        return 0

    cdef int _learn(self, const double* x, const double* b, double y, double weight,
                    double eta_given, MState* st) except -1:
        """Predict the scores (self.s), then take step st.t + 1 from the counters in st:
        its status; self.bn holds b after it, st the new counters."""
        cdef Py_ssize_t yi = <Py_ssize_t>y
        if not (0 <= yi < self.k and yi == y):
            raise ValueError(f"y = {y} is not a class index in [0, {self.k}).")
        self._predict(x, b, st.t, "learned")
        memcpy(&self.bn[0], b, self.k * sizeof(double))
        st.eta_t = st.lam_t = st.eta_try = NAN
        st.reset_t = st.reset_eta = st.reset_lam = 0.0
        status = self._step(x, yi, weight, eta_given, st)
        if status == DIVERGED:
            raise (self.diverged(st.t, st.eta_try) if isfinite(cdot(x, x, self.d))
                   else huge_event(self.name))
        return status

    def predict(self, x, double t, b):
        """The k scores f(x) + b for one row (x, b: 1-D float64 buffers; a ready array is
        read in place)."""
        cdef Py_ssize_t n = 0, nb = 0
        cdef list keep = []
        cdef const double* px = cvector(x, &n, keep)
        cdef const double* pb = cvector(b, &nb, keep)
        self._check(n, nb)
        self._predict(px, pb, t, "predicted")
        return np.array(self.s)

    def learn(self, x, double y, double weight, double t, double ck2, b,
              double eta_given=NAN, double dev=0.0, drift=None):
        """Predict the scores, then take step t + 1 (y: the class index as a float).

        Returns (scores, taken, t, C_K^2, eta_t, lam_t, b after, reset, dev, drift), the
        arguments and results of `PointwiseEvents.learn` (dev, the SCALED step's sum, passes
        through: a classifier's step does not use it); raises,
        leaving the model as it was, on NaN/inf in x or divergence.
        """
        cdef Py_ssize_t n = 0, nb = 0
        cdef MState st
        cdef list keep = []
        cdef const double* px = cvector(x, &n, keep)
        cdef const double* pb = cvector(b, &nb, keep)
        self.outcome = None
        self._check(n, nb)
        st.t, st.ck2 = t, ck2
        cread_drift(drift, t, &st.drift)
        status = self._learn(px, pb, y, weight, eta_given, &st)
        self.outcome = (np.array(self.s), status == TAKEN, st.t, st.ck2, st.eta_t, st.lam_t,
                        np.array(self.bn),
                        (st.reset_t, st.reset_eta, st.reset_lam) if st.reset_t else None, dev,
                        cdrift_tuple(&st.drift))
        return self.outcome             # kept first, as PointwiseEvents.learn does

    def learn_into(self, dict attrs, x, double y, double weight=1.0,
                   double eta_given=NAN):
        """`learn` on the learner's own counters, as `PointwiseEvents.learn_into`: reads t_,
        ck2_, intercept_ and dev_ from `attrs` (the learner's ``__dict__``) and, when the step
        is taken, stores there what `okl._kernel_learners.PointwiseMixin._store_step` stores,
        in one compiled call; returns the scores.  Raises, leaving the model and `attrs` as
        they were."""
        cdef Py_ssize_t n = 0, nb = 0
        cdef list keep = []
        cdef const double* px = cvector(x, &n, keep)
        b = attrs["intercept_"]
        cdef const double* pb = cvector(b, &nb, keep)
        self._check(n, nb)
        self._learn_into(attrs, px, b, pb, y, weight, eta_given)
        return np.array(self.s)

    cdef int _learn_into(self, dict attrs, const double* x, object b, const double* pb,
                         double y, double weight, double eta_given) except -1:
        cdef MState st
        cdef double fixed, t0 = attrs["t_"]
        dev = attrs.get("dev_")
        drift = attrs.get("_drift_state")
        st.t, st.ck2 = t0, attrs["ck2_"]
        cread_drift(drift, t0, &st.drift)
        if self.warm is not None:
            self.warm.cload(attrs, self._gamma())
        if self._learn(x, pb, y, weight, eta_given, &st) != TAKEN:
            return 0
        if self.warm is not None:
            fixed = self.warm.cstore(attrs)
            if fixed == fixed:
                self.schedule.lipschitz = fixed
            if self.warm.over:
                self.warm = None
        if drift is not None or cactive(&self.schedule.drift):
            attrs["_drift_state"] = cdrift_tuple(&st.drift)
        if st.t != t0:
            attrs["eta_"] = st.eta_t
            attrs["lam_"] = st.lam_t
        attrs["t_"] = <long long>st.t
        attrs["ck2_"] = st.ck2
        if memcmp(&self.bn[0], pb, self.k * sizeof(double)) != 0:
            attrs["intercept_"] = np.array(self.bn)
        elif type(b) is not np.ndarray:
            attrs["intercept_"] = np.array(self.bn)
        attrs["dev_"] = 0.0 if dev is None else dev
        attrs["n_support_"] = self.n_support()
        return 0

    cdef Py_ssize_t n_support(self) noexcept:
        return 0            # no support vectors on features (FeatureModel.n_support)

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        cdef Py_ssize_t n = 0, nb = 0
        cdef const double* px = cready(x, &n)
        b = attrs["intercept_"]
        cdef const double* pb = cready(b, &nb)
        if px == NULL or pb == NULL:
            return 0            # the adapter's path (an intercept_ of another type)
        self._check(n, nb)
        self._learn_into(attrs, px, b, pb, y, 1.0, NAN)
        return 1

    cdef object cpredict(self, dict attrs, object x):
        """The k scores of one ready row as a new array (`predict` for another intercept_)."""
        cdef Py_ssize_t n = 0, nb = 0
        cdef cnp.npy_intp k = self.k
        cdef const double* px = cready(x, &n)
        cdef const double* pb = cready(attrs["intercept_"], &nb)
        if px == NULL or pb == NULL:
            return self.predict(x, attrs["t_"], attrs["intercept_"])
        self._check(n, nb)
        self._predict(px, pb, attrs["t_"], "predicted")
        out = cnp.PyArray_EMPTY(1, &k, cnp.NPY_DOUBLE, 0)
        memcpy(cnp.PyArray_DATA(<cnp.ndarray>out), &self.s[0], k * sizeof(double))
        return out

    cdef Py_ssize_t cpredict_into(self, dict attrs, object x, double* out,
                                  Py_ssize_t n) except -2:
        """`cpredict` into the caller's buffer of n = k doubles (-1 for another n or a row
        or intercept_ not ready)."""
        cdef Py_ssize_t nx = 0, nb = 0
        cdef const double* px = cready(x, &nx)
        cdef const double* pb = cready(attrs["intercept_"], &nb)
        if n != self.k or px == NULL or pb == NULL:
            return -1
        self._check(nx, nb)
        self._predict(px, pb, attrs["t_"], "predicted")
        memcpy(out, &self.s[0], self.k * sizeof(double))
        return self.k

    cdef object cpredict_label(self, dict attrs, object x):
        cdef Py_ssize_t n = 0, nb = 0
        cdef const double* px = cready(x, &n)
        cdef const double* pb = cready(attrs["intercept_"], &nb)
        if px == NULL or pb == NULL:
            return self.clabel(self.cpredict(attrs, x))
        self._check(n, nb)
        self._predict(px, pb, attrs["t_"], "predicted")
        return self.clabel_of(&self.s[0], self.k)


cdef class MulticlassEvents(KScores):
    """One-event predict and learn on a `MultiExpansion` (as _pointwise.PointwiseEvents).

    The last prediction is kept with a fingerprint of the model (t, n_support,
    scale, next_slot, n_rescale) and a copy of the row; `learn` reuses it on
    the same row and model ("predict, then learn" costs one kernel row).
    """
    cdef MultiExpansion expansion
    cdef int loss
    cdef double[::1] last_row, last_s
    cdef bint has_last
    cdef double last_xx, last_scale, last_t, last_gamma
    cdef Py_ssize_t last_n, last_slot, last_rescale

    def __init__(self, MultiExpansion expansion, Schedule schedule, int loss, str name,
                 tuple names=()):
        self.expansion = expansion
        self.schedule, self.loss = schedule, loss
        self.name, self.names = name, names
        self.values = tuple([expansion] + [None] * (len(names) - 1))
        self._buffers(expansion.n_classes, expansion.n_features)
        self.last_row = np.empty(expansion.n_features)
        self.last_s = np.empty(expansion.n_classes)
        self.has_last = False
        self.ready = schedule.kind != GIVEN     # a callable's step sizes come from the learner

    cdef int _scores(self, const double* x, double* out, double t, str action) except -1:
        """The model part of the scores into out (reused for the same row and model)."""
        cdef MultiExpansion e = self.expansion
        cdef Py_ssize_t d = e.n_features, k = e.n_classes
        cdef double xx
        if (self.has_last and t == self.last_t and e.n_support == self.last_n
                and e.scale == self.last_scale and e.next_slot == self.last_slot
                and e.n_rescale == self.last_rescale and e.kernel.gamma == self.last_gamma
                and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            memcpy(out, &self.last_s[0], k * sizeof(double))
            return 0
        xx = cdot(x, x, d)
        if not row_is_finite(x, d, xx):
            raise ValueError(f"{self.name} got a row with NaN or inf: "
                             f"{row_head(x, d)}; non-finite values "
                             f"cannot be {action}.")
        e.cscores(x, out)
        memcpy(&self.last_row[0], x, d * sizeof(double))
        memcpy(&self.last_s[0], out, k * sizeof(double))
        self.last_xx, self.last_t = xx, t
        self.last_n, self.last_scale, self.last_gamma = e.n_support, e.scale, e.kernel.gamma
        self.last_slot, self.last_rescale = e.next_slot, e.n_rescale
        self.has_last = True
        return 0

    cdef double _gamma(self):
        return self.expansion.kernel.gamma

    cdef int _step(self, const double* x, Py_ssize_t y, double weight, double eta_given,
                   MState* st) except -1:
        cdef MultiExpansion e = self.expansion
        cdef double kxx = cself(&e.kernel, self.last_xx)      # _scores just kept x's xx
        cdef Schedule schedule = self.schedule
        cdef Warmup warm = self.warm
        cdef int status
        if weight != 0.0 and e.n_support == e.capacity and (
                not e.budget or e.n_support < e.budget or e.policy == MERGE):
            # moves the buffers, the model unchanged; a full MERGE budget needs slot B for
            # the newcomer until the merge (`reserve` caps the room at B + 1)
            e.reserve(1)
        if warm is not None and warm.kbar is not None and weight != 0.0:
            warm.kbar.ensure(e.n_support + 2)
            schedule.lipschitz = cmkernel_mean(e, warm.kbar, st.t)
        craise_signals()                # a Ctrl-C so far: raised before any write
        status = cmstep(e, x, self.last_xx, kxx, kxx, &self.s[0], y, weight, eta_given,
                        self.loss, &schedule, st, &self.bn[0], &self.g[0], &self.a[0])
        if warm is not None and status == TAKEN:
            if warm.kbar is not None and warm.kbar.rows:
                warm.kbar.cappend(x)
            if warm.cadd(x):
                e.cset_gamma(warm.width.gamma)
            if warm.kbar is not None:
                cmkernel_mean(e, warm.kbar, st.t, True)
        return status

    cdef Py_ssize_t n_support(self) noexcept:
        return self.expansion.n_support


cdef class MultiFeatureEvents(KScores):
    """One-event predict and learn on the weight matrix of a feature model of k classes.

    The row's features z(x) are computed in C (`_linear.FeatureRow`) into a buffer
    kept with a copy of the row ("predict, then learn" maps it once), then `cmstep`
    takes the chunk loop's step on the `MultiLinearModel`.  Arguments and results
    are those of `MulticlassEvents`; `matches` also asks that the feature model still
    holds this weight matrix and map.
    """
    cdef MultiLinearModel linear
    cdef FeatureRow rowmap
    cdef object model, fmap
    cdef int loss
    cdef double[::1] z, last_row
    cdef bint has_last
    cdef double last_xx, last_zz

    def __init__(self, model, FeatureRow rowmap, Schedule schedule, int loss, str name,
                 tuple names=()):
        self.model, self.linear, self.fmap = model, model.linear, model.fmap
        if rowmap.n_components != self.linear.n_components:
            raise ValueError("MultiFeatureEvents: the map and the weights disagree.")
        self.rowmap = rowmap
        self.schedule, self.loss = schedule, loss
        self.name, self.names = name, names
        self.values = tuple([model] + [None] * (len(names) - 1))
        self._buffers(self.linear.n_classes, rowmap.n_features)
        self.z = np.empty(rowmap.n_components)
        self.last_row = np.empty(rowmap.n_features)
        self.has_last = False
        self.ready = schedule.kind != GIVEN

    cdef int cmatches(self, object est, dict attrs) except -1:
        return (Events.cmatches(self, est, attrs) and self.model.linear is self.linear
                and self.model.fmap is self.fmap)

    cdef int _scores(self, const double* x, double* out, double t, str action) except -1:
        """out <- the k scores <W_c, z(x)> (z cached with the row)."""
        cdef Py_ssize_t d = self.d
        cdef double xx
        if not (self.has_last and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            xx = cdot(x, x, d)
            if not row_is_finite(x, d, xx):
                raise ValueError(f"{self.name} got a row with NaN or inf: "
                                 f"{row_head(x, d)}; non-finite values "
                                 f"cannot be {action}.")
            self.has_last = False
            self.rowmap.cmap(x, &self.z[0])
            self.last_zz = cdot(&self.z[0], &self.z[0], self.rowmap.n_components)
            memcpy(&self.last_row[0], x, d * sizeof(double))
            self.last_xx, self.has_last = xx, True
        self.linear.cscores(&self.z[0], out)
        return 0

    cdef double _gamma(self):
        return self.warm.kbar.gamma if self.warm is not None and self.warm.kbar is not None \
            else NAN

    cdef int _step(self, const double* x, Py_ssize_t y, double weight, double eta_given,
                   MState* st) except -1:
        cdef Schedule schedule = self.schedule
        cdef Warmup warm = self.warm
        cdef int status
        if warm is not None and warm.kbar is not None and weight != 0.0:
            warm.kbar.ensure(warm.kbar.n_points + 2)
            schedule.lipschitz = cmkernel_mean(self.linear, warm.kbar, st.t)
        craise_signals()                # a Ctrl-C so far: raised before any write
        status = cmstep(self.linear, &self.z[0], self.last_zz,
                        cself(&self.rowmap.kernel, self.last_xx), self.last_zz, &self.s[0], y,
                        weight, eta_given, self.loss, &schedule, st, &self.bn[0],
                        &self.g[0], &self.a[0])
        if warm is not None and warm.kbar is not None and status == TAKEN:
            warm.kbar.cappend(&self.last_row[0])
            cmkernel_mean(self.linear, warm.kbar, st.t, True)
        return status
