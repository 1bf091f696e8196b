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

from libc.math cimport NAN, isfinite
from libc.string cimport memcmp, memcpy

from okl._core._expansion cimport MERGE
from okl._core._kernels cimport cdot, cself
from okl._core._linear cimport FeatureRow, MultiLinearModel
from okl._core._multiexpansion cimport MultiExpansion
from okl._core._pointwise cimport GIVEN, Events, Schedule, cready, cschedule
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals


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
    cdef bint add
    st.eta_try = NAN
    if w != 0.0:
        t = st.t + 1.0
        ck2 = kxx if kxx > st.ck2 else st.ck2
        cschedule(sch, t, ck2, eta_given, &eta_t, &lam_t)
        st.eta_try = eta_t
    for j in range(k):
        if not isfinite(s[j]):
            return DIVERGED
    if w == 0.0:
        return SKIPPED
    add = cgradient(loss, s, y, k, w, g)
    factor = 1.0 - lam_t * eta_t
    scale_next = model.scale * factor
    if factor <= 0.0 or scale_next < 1e-9 or scale_next > 1e9:
        scale_next = 1.0
    for j in range(k):
        a[j] = -eta_t * g[j]
        bj = b[j] - eta_t * g[j] if sch.intercept else b[j]
        if not (isfinite(a[j] / scale_next) and isfinite(bj)):
            return DIVERGED
        if add and not isfinite(factor * (s[j] - b[j]) + a[j] * kself + bj):
            return DIVERGED
    model.cshrink(factor)
    if add:
        model.cadd(x, xx, a)
    if sch.intercept:
        for j in range(k):
            b[j] -= eta_t * g[j]
    if factor <= 0.0 and st.reset_t == 0.0:
        st.reset_t, st.reset_eta, st.reset_lam = t, eta_t, lam_t
    st.t, st.ck2, st.eta_t, st.lam_t = t, ck2, eta_t, lam_t
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
              const double[::1] kdiag=None):    # IN (n,) K(x_t, x_t) (needed on features)
    """Run the chunk: (index of the first step that diverged or -1, the state after)."""
    cdef Py_ssize_t i, j, n = X.shape[0], d = X.shape[1], k = model.n_classes
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False
    cdef const double* x
    cdef double xx, kxx, w = 1.0, eta_i = NAN
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
    g_arr, a_arr = np.empty(k), np.empty(k)
    cdef double[::1] g = g_arr, a = a_arr
    if MModel is MultiExpansion:
        model.reserve(n)
    with nogil:
        for i in range(n):
            if cinterrupted(&work, (model.n_support * (d + k)) if MModel is MultiExpansion
                            else d * k):
                interrupted = True
                break
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
                if cmstep(model, x, xx, kxx, kxx, &pred_out[i, 0], y[i], w, eta_i, loss,
                          &schedule, &state, &b[0], &g[0], &a[0]) == DIVERGED:
                    failed = i
                    break
            elif cmstep(model, x, xx, kdiag[i], xx, &pred_out[i, 0], y[i], w, eta_i, loss,
                        &schedule, &state, &b[0], &g[0], &a[0]) == DIVERGED:
                failed = i
                break
    if interrupted:
        craise_pending()
    return failed, state


cdef inline bint row_is_finite(const double* x, Py_ssize_t d, double xx) noexcept nogil:
    cdef Py_ssize_t j
    if isfinite(xx):
        return True
    for j in range(d):
        if not isfinite(x[j]):
            return False
    return True


cdef int store_step(dict attrs, tuple out, double t0, Py_ssize_t n_support) except -1:
    """What `okl._kernel_learners.PointwiseMixin._store_step` stores after a taken step of k
    classes, from the outcome of `learn` (`MulticlassEvents`, `MultiFeatureEvents`)."""
    if out[1]:
        if out[2] != t0:
            attrs["eta_"] = out[4]
            attrs["lam_"] = out[5]
        attrs["t_"] = <long long>out[2]
        attrs["ck2_"] = out[3]
        attrs["intercept_"] = out[6]
        attrs["dev_"] = out[8]
        attrs["n_support_"] = n_support
    return 0


cdef class MulticlassEvents(Events):
    """One-event predict and learn on a `MultiExpansion` (as _pointwise.PointwiseEvents).

    The last prediction is kept with a fingerprint of the model (t, n_support,
    scale, next_slot, n_rescale) and a copy of the row; `learn` reuses it on
    the same row and model ("predict, then learn" costs one kernel row).
    """
    cdef MultiExpansion expansion
    cdef Schedule schedule
    cdef int loss
    cdef readonly object outcome     # what the last `learn` returned, None until it returns
    cdef double[::1] last_row, last_s, g, a
    cdef bint has_last
    cdef double last_xx, last_scale, last_t
    cdef Py_ssize_t last_n, last_slot, last_rescale

    def __init__(self, MultiExpansion expansion, Schedule schedule, int loss, str name,
                 tuple names=()):
        self.expansion = expansion
        self.schedule, self.loss = schedule, loss
        self.name, self.names = name, names
        self.values = tuple([expansion] + [None] * (len(names) - 1))
        self.last_row = np.empty(expansion.n_features)
        self.last_s = np.empty(expansion.n_classes)
        self.g = np.empty(expansion.n_classes)
        self.a = np.empty(expansion.n_classes)
        self.has_last = False
        self.ready = schedule.kind != GIVEN     # a callable's step sizes come from the learner

    cdef bint _scores(self, const double* x, double* out, double* xx_out, double t):
        """The model part of the scores into out; False for a non-finite row."""
        cdef MultiExpansion e = self.expansion
        cdef Py_ssize_t d = e.n_features, k = e.n_classes
        cdef double xx
        if (self.has_last and t == self.last_t and e.n_support == self.last_n
                and e.scale == self.last_scale and e.next_slot == self.last_slot
                and e.n_rescale == self.last_rescale
                and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            xx_out[0] = self.last_xx
            memcpy(out, &self.last_s[0], k * sizeof(double))
            return True
        xx = cdot(x, x, d)
        xx_out[0] = xx
        if not row_is_finite(x, d, xx):
            return False
        e.cscores(x, out)
        memcpy(&self.last_row[0], x, d * sizeof(double))
        memcpy(&self.last_s[0], out, k * sizeof(double))
        self.last_xx, self.last_t = xx, t
        self.last_n, self.last_scale = e.n_support, e.scale
        self.last_slot, self.last_rescale = e.next_slot, e.n_rescale
        self.has_last = True
        return True

    cdef _check(self, Py_ssize_t n, Py_ssize_t nb):
        if n != self.expansion.n_features:
            raise ValueError(f"X has {n} features, but {self.name} is expecting "
                             f"{self.expansion.n_features} features as input.")
        if nb != self.expansion.n_classes:
            raise ValueError("intercept_ does not match the classes.")

    def predict(self, x, double t, b):
        """The k scores f(x) + b for one row (x, b: 1-D float64 buffers; a ready array is
        read in place, as `PointwiseEvents.predict` does)."""
        cdef Py_ssize_t j, n = 0, nb = 0, k = self.expansion.n_classes
        cdef double xx
        cdef const double[::1] tx, tb
        cdef const double* px = cready(x, &n)
        cdef const double* pb = cready(b, &nb)
        if px == NULL:
            tx = x
            n = tx.shape[0]
            px = &tx[0] if n else NULL
        if pb == NULL:
            tb = b
            nb = tb.shape[0]
            pb = &tb[0] if nb else NULL
        self._check(n, nb)
        out = np.empty(k)
        cdef double[::1] o = out
        if not self._scores(px, &o[0], &xx, t):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             "non-finite values cannot be predicted.")
        for j in range(k):
            o[j] += pb[j]
        return out

    def learn(self, x, double y, double weight, double t, double ck2, b,
              double eta_given=NAN, double dev=0.0):
        """Predict the scores, then take step t + 1 (y: the class index as a float).

        Returns (scores, taken, t, C_K^2, eta_t, lam_t, b after, reset, dev), the
        arguments and results of `PointwiseEvents.learn` (dev, the SCALED step's sum, passes
        through: a classifier's step does not use it); raises,
        leaving the model as it was, on NaN/inf in x or divergence.
        """
        cdef MultiExpansion e = self.expansion
        cdef Py_ssize_t j, n = 0, nb = 0, k = e.n_classes, yi = <Py_ssize_t>y
        cdef double xx
        cdef MState st
        cdef int status
        cdef const double[::1] tx, tb
        self.outcome = None
        cdef const double* px = cready(x, &n)
        cdef const double* pb = cready(b, &nb)
        if px == NULL:
            tx = x
            n = tx.shape[0]
            px = &tx[0] if n else NULL
        if pb == NULL:
            tb = b
            nb = tb.shape[0]
            pb = &tb[0] if nb else NULL
        self._check(n, nb)
        if not (0 <= yi < k and yi == y):
            raise ValueError(f"y = {y} is not a class index in [0, {k}).")
        s_arr = np.empty(k)
        b_arr = np.empty(k)
        cdef double[::1] s = s_arr, bn = b_arr
        memcpy(&bn[0], pb, k * sizeof(double))
        if not self._scores(px, &s[0], &xx, t):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             "non-finite values cannot be learned.")
        for j in range(k):
            s[j] += pb[j]
        st.t, st.ck2 = t, ck2
        st.eta_t = st.lam_t = st.eta_try = NAN
        st.reset_t = st.reset_eta = st.reset_lam = 0.0
        if weight != 0.0 and e.n_support == e.capacity and (
                not e.budget or e.n_support < e.budget or e.policy == MERGE):
            # moves the buffers, the model unchanged; a full MERGE budget needs slot B for
            # the newcomer until the merge (`reserve` caps the room at B + 1)
            e.reserve(1)
        craise_signals()                # a Ctrl-C so far: raised before any write
        status = cmstep(e, px, xx, cself(&e.kernel, xx), cself(&e.kernel, xx), &s[0], yi,
                        weight, eta_given, self.loss, &self.schedule, &st, &bn[0], &self.g[0],
                        &self.a[0])
        if status == DIVERGED:
            raise self.diverged(t, st.eta_try)
        self.outcome = (s_arr, status == TAKEN, st.t, st.ck2, st.eta_t, st.lam_t, b_arr,
                        (st.reset_t, st.reset_eta, st.reset_lam) if st.reset_t else None, dev)
        return self.outcome             # kept first, as PointwiseEvents.learn does

    def learn_into(self, dict attrs, x, double y, double weight=1.0,
                   double eta_given=NAN):
        """`learn` on the learner's own counters, as `PointwiseEvents.learn_into`: reads t_,
        ck2_, intercept_ and dev_ from `attrs` (the learner's ``__dict__``) and, when the step
        is taken, stores there what `okl._kernel_learners.PointwiseMixin._store_step` stores,
        in one compiled call; returns the scores.  Raises, leaving the model and `attrs` as
        they were."""
        cdef double t0 = attrs["t_"]
        dev = attrs.get("dev_")
        out = self.learn(x, y, weight, t0, attrs["ck2_"], attrs["intercept_"], eta_given,
                         0.0 if dev is None else dev)
        store_step(attrs, out, t0, self.expansion.n_support)
        return out[0]

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        self.learn_into(attrs, x, y, 1.0, NAN)
        return 1

    cdef object cpredict(self, dict attrs, object x):
        return self.predict(x, attrs["t_"], attrs["intercept_"])


cdef class MultiFeatureEvents(Events):
    """One-event predict and learn on the weight matrix of a feature model of k classes.

    The row's features z(x) are computed in C (`_linear.FeatureRow`) into a buffer
    kept with a copy of the row ("predict, then learn" maps it once), then `cmstep`
    takes the chunk loop's step on the `MultiLinearModel`.  Arguments and results
    are those of `MulticlassEvents`; `matches` also asks that the feature model still
    holds this weight matrix and map.
    """
    cdef MultiLinearModel linear
    cdef FeatureRow rowmap
    cdef readonly object outcome     # what the last `learn` returned, None until it returns
    cdef object model, fmap
    cdef Schedule schedule
    cdef int loss
    cdef double[::1] z, last_row, g, a
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
        self.z = np.empty(rowmap.n_components)
        self.last_row = np.empty(rowmap.n_features)
        self.g = np.empty(self.linear.n_classes)
        self.a = np.empty(self.linear.n_classes)
        self.has_last = False
        self.ready = schedule.kind != GIVEN

    cdef int cmatches(self, dict attrs) except -1:
        return (Events.cmatches(self, attrs) and self.model.linear is self.linear
                and self.model.fmap is self.fmap)

    cdef _scores(self, const double[::1] x, const double[::1] b, double* out, str action):
        """out <- the k scores <W_c, z(x)> + b_c (z cached with the row)."""
        cdef Py_ssize_t j, d = self.rowmap.n_features, k = self.linear.n_classes
        cdef double xx
        if x.shape[0] != d:
            raise ValueError(f"X has {x.shape[0]} features, but {self.name} is expecting "
                             f"{d} features as input.")
        if b.shape[0] != k:
            raise ValueError("intercept_ does not match the classes.")
        if not (self.has_last and memcmp(&x[0], &self.last_row[0], d * sizeof(double)) == 0):
            xx = cdot(&x[0], &x[0], d)
            if not row_is_finite(&x[0], d, xx):
                raise ValueError(f"{self.name} got a row with NaN or inf: "
                                 f"{np.asarray(x)[:10]}; non-finite values cannot be {action}.")
            self.has_last = False
            self.rowmap.cmap(&x[0], &self.z[0])
            self.last_zz = cdot(&self.z[0], &self.z[0], self.rowmap.n_components)
            memcpy(&self.last_row[0], &x[0], d * sizeof(double))
            self.last_xx, self.has_last = xx, True
        self.linear.cscores(&self.z[0], out)
        for j in range(k):
            out[j] += b[j]

    def predict(self, const double[::1] x, double t, const double[::1] b):
        """The k scores W z(x) + b for one row."""
        out = np.empty(self.linear.n_classes)
        cdef double[::1] o = out
        self._scores(x, b, &o[0], "predicted")
        return out

    def learn(self, const double[::1] x, double y, double weight, double t, double ck2,
              const double[::1] b, double eta_given=NAN, double dev=0.0):
        """Predict the scores, then take step t + 1: `MulticlassEvents.learn`'s arguments and
        results.  Raises, leaving the model as it was, on NaN/inf in x or divergence."""
        cdef Py_ssize_t k = self.linear.n_classes, yi = <Py_ssize_t>y
        cdef MState st
        cdef int status
        self.outcome = None
        if not (0 <= yi < k and yi == y):
            raise ValueError(f"y = {y} is not a class index in [0, {k}).")
        s_arr = np.empty(k)
        cdef double[::1] s = s_arr
        self._scores(x, b, &s[0], "learned")
        b_arr = np.array(b)
        cdef double[::1] bn = b_arr
        st.t, st.ck2 = t, ck2
        st.eta_t = st.lam_t = st.eta_try = NAN
        st.reset_t = st.reset_eta = st.reset_lam = 0.0
        craise_signals()                # a Ctrl-C so far: raised before any write
        status = cmstep(self.linear, &self.z[0], self.last_zz,
                        cself(&self.rowmap.kernel, self.last_xx), self.last_zz, &s[0], yi,
                        weight, eta_given, self.loss, &self.schedule, &st, &bn[0], &self.g[0],
                        &self.a[0])
        if status == DIVERGED:
            raise self.diverged(t, st.eta_try)
        self.outcome = (s_arr, status == TAKEN, st.t, st.ck2, st.eta_t, st.lam_t, b_arr,
                        (st.reset_t, st.reset_eta, st.reset_lam) if st.reset_t else None, dev)
        return self.outcome             # kept first, as PointwiseEvents.learn does

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        """`learn` on the learner's counters, stored as `PointwiseMixin._store_step` does
        (okl._kernel_learners) for the scores of k classes."""
        cdef double t0 = attrs["t_"]
        dev = attrs.get("dev_")
        out = self.learn(x, y, 1.0, t0, attrs["ck2_"], attrs["intercept_"], NAN,
                         0.0 if dev is None else dev)
        store_step(attrs, out, t0, 0)   # no support vectors on features (FeatureModel.n_support)
        return 1

    cdef object cpredict(self, dict attrs, object x):
        return self.predict(x, attrs["t_"], attrs["intercept_"])
