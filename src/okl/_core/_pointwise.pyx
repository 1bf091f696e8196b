"""The pointwise learning step, written once (docs/algorithms.md, sections 1-3 and 7).

One step predicts f_t(x_t) = b_t + (model part), then
    f_{t+1} = (1 - lam_t eta_t) f_t - eta_t w_t g_t K(x_t, .),   b_{t+1} = b_t - eta_t w_t g_t
with g_t = V'_-(f_t(x_t) - y_t) for a residual loss and
g_t = y_t phi'_-(y_t f_t(x_t)) for a margin loss (y_t in {-1, +1}).  The
offset b follows the schedule's `intercept` (docs/defaults.md, section 1): the running
mean of the targets, the kernel part then stepping on y_t - b_{t+1} (MEAN, the regressors),
or the gradient step above (STEP, section 7.1); the
weight w_t (section 7.2) scales the gradient, and a step of weight 0 is
skipped (predicted; the model, t and C_K^2 do not change).  eta_t and lam_t
come from the schedule of step t (`cschedule`, the formulas of
`okl.schedules`): the NumPy engine's twin is `okl._numpy.pointwise`.

`cstep` is that step for either model: a `KernelExpansion` (the exact
learners, the budgets) or a `LinearModel` on feature rows (random Fourier or
Nystroem features).  It checks everything before its first write: a step that
would leave a non-finite model changes nothing.  Its callers:
`fit_chunk` (the nogil loop of a chunk, either model),
`PointwiseEvents.learn` (one event, O(m d), no allocation) and
`FeatureEvents.learn` (one event of a feature model: the row's features in C,
`_linear.FeatureRow`, then the same step).
"""
import numpy as np

cimport numpy as cnp
from cpython.dict cimport PyDict_GetItem
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_Check
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.math cimport NAN, copysign, fabs, fmax, fmin, isfinite, pow, sqrt
from libc.string cimport memcmp, memcpy

from okl._core._kernels cimport cdot, cself
from okl._core._losses cimport LossSpec, cgradient, cis_margin
from okl._core._drift cimport (
    DriftState, cactive, cdrift_loss, cdrift_tuple, cread_drift, cwatch,
)
from okl._core._expansion cimport MERGE, KernelExpansion
from okl._core._linear cimport FeatureRow, LinearModel
from okl._core._signals cimport cinterrupted, craise_pending, craise_signals
from okl._core._event cimport carray_into, cdict_into, dict_version
from okl._core._lock cimport ReentrantLock
from okl._core._warmup cimport C_WARMUP, KernelMean, Warmup


cnp.import_array()


cdef enum:
    TAKEN = 0
    SKIPPED = 1
    DIVERGED = 2


ctypedef fused Model:
    KernelExpansion
    LinearModel


cdef inline int cstep(Model model, const double* x, double xx, double kxx, double kself,
                      double f, double y, double w, double eta_given, const LossSpec* loss,
                      const Schedule* s, StepState* st) noexcept nogil:
    """One step from f = f_t(x_t) (offset included): TAKEN, SKIPPED (w = 0) or DIVERGED.

    x is the row the model adds (a centre, or a feature row z), xx = <x, x>;
    kxx = K(x_t, x_t) of the learner's kernel (for C_K^2) and kself = the model's
    own K(x, x) (xx for feature rows).  DIVERGED changes nothing.
    """
    cdef double t, ck2, eta_t, lam_t, g, factor, a, b_next, scale_next, dev, kept, shrink
    cdef DriftState drift
    st.eta_try = NAN
    if w != 0.0:
        t = st.t + 1.0
        ck2 = kxx if kxx > st.ck2 else st.ck2
        dev = st.dev / (t - 1.0) if t > 1.0 else 0.0
        # forgetting and change detection (_drift.pxd): the schedule's clock tau, and the
        # factor `kept` the model takes before the step
        kept = cwatch(&s.drift, &st.drift, cdrift_loss(cis_margin(loss.kind), y, f, dev), &drift)
        cschedule(s, drift.tau, ck2, eta_given, &eta_t, &lam_t, dev)
        st.eta_try = eta_t
    if not isfinite(f):
        return DIVERGED
    if w == 0.0:
        return SKIPPED
    # a MEAN offset moves first: the kernel part steps on the residual against b_{t+1}
    b_next = coffset(s, st.b, y, w, drift.tau)
    g = w * cgradient(loss, y, f - st.b + b_next)
    factor = 1.0 - lam_t * eta_t
    shrink = factor * kept
    a = -eta_t * g
    if s.intercept == STEP:
        b_next = st.b - eta_t * g
    scale_next = model.scale * shrink
    if shrink <= 0.0 or scale_next < 1e-9 or scale_next > 1e9:
        scale_next = 1.0            # what the lazy shrink leaves (_lazy.pxd)
    if not (isfinite(a / scale_next) and isfinite(b_next)):
        return DIVERGED
    # f_{t+1}(x_t): a step must leave a model that is finite where it just learned
    if g != 0.0 and not isfinite(shrink * (f - st.b) + a * kself + b_next):
        return DIVERGED
    model.cshrink(shrink)
    if g != 0.0:
        model.cadd(x, xx, a)
    if factor <= 0.0 and st.reset_t == 0.0:
        st.reset_t, st.reset_eta, st.reset_lam = t, eta_t, lam_t
    st.t, st.ck2, st.eta_t, st.lam_t, st.b = t, ck2, eta_t, lam_t, b_next
    st.dev += w * fabs(y - b_next)
    st.drift = drift
    return TAKEN


cdef inline double ckernel_mean(Model model, KernelMean kbar, double t,
                                bint after=False) noexcept nogil:
    """M kbar of the next step (t steps taken; kbar fixed once t >= WARMUP): over the
    expansion's centres at its width, or the rows learned (`KernelMean.rows`).  `after`
    a step: fix kbar when it is time, and bring the rows' sum to the width."""
    if Model is KernelExpansion:
        if after:
            kbar.cafter(model.centers, model.n_support, model.budget, model.kernel.gamma, t)
            return 0.0
        return kbar.clipschitz(model.centers, model.n_support, model.budget,
                               model.kernel.gamma, t)
    if after:
        kbar.cafter(NULL, 0, 0, kbar.gamma, t)
        return 0.0
    return kbar.clipschitz(NULL, 0, 0, kbar.gamma, t)


def fit_chunk(Model model,
              const double[:, ::1] X,       # IN (n, d) rows (feature rows z for a LinearModel)
              const double[::1] y,          # IN (n,) targets, or labels in {-1, +1}
              Schedule schedule,
              LossSpec loss,
              StepState state,              # the learner's counters before the chunk
              double[::1] pred_out,         # OUT (n,) f_t(x_t), before each update
              const double[::1] weight=None,    # IN (n,) w_t >= 0, or None for 1
              const double[::1] eta=None,       # IN (n,) eta_t per row (schedule GIVEN)
              const double[::1] kdiag=None,     # IN (n,) K(x_t, x_t) (needed for a LinearModel)
              const double[::1] gamma=None,     # IN (n + 1,) the width of each row, and after
              KernelMean kbar=None,             # eta="scaled"'s kbar while it is measured
              const double[:, ::1] raw=None,    # IN (n, d0) the rows themselves (kbar on features)
              Py_ssize_t frozen_at=0):          # IN the width stays once this many centres exist
    """Run the chunk: (index of the first step that diverged or -1, the state after).

    The state after a divergence is the one before that step (the caller's
    checkpoint undoes the steps before it).  During the warm-ups (docs/defaults.md,
    sections 2 and 4) `gamma` gives the expansion's width before each row (gamma="scale",
    `_warmup.Width.sequence`; it stays once the expansion holds `frozen_at` centres, the
    Nystroem features' landmarks) and `kbar` the step's Lipschitz constant M kbar
    (eta="scaled"); kbar over the rows learned reads them from `raw` (X itself for an
    expansion).
    """
    cdef Py_ssize_t i, n = X.shape[0], d = X.shape[1]
    cdef Py_ssize_t failed = -1, work = 0, step_work
    cdef bint interrupted = False
    cdef const double* x
    cdef double xx, kxx, w = 1.0, eta_i = NAN, f
    cdef bint weighted = weight is not None, widths = gamma is not None
    cdef bint kbar_on = kbar is not None and kbar.active
    cdef bint rows = kbar_on and kbar.rows
    cdef int status
    if Model is KernelExpansion:
        if d != model.n_features:
            raise ValueError(f"X has {d} columns, the expansion {model.n_features}.")
    else:
        if d != model.n_components:
            raise ValueError(f"Z has {d} columns, the model {model.n_components}.")
        if kdiag is None or kdiag.shape[0] != n:
            raise ValueError("A LinearModel needs kdiag, K(x_t, x_t) of every row.")
    if y.shape[0] != n or pred_out.shape[0] != n:
        raise ValueError("X, y and pred_out must have the same number of rows.")
    if weighted and weight.shape[0] != n:
        raise ValueError(f"weight has {weight.shape[0]} values for {n} rows.")
    if schedule.kind == GIVEN and (eta is None or eta.shape[0] != n):
        raise ValueError("A GIVEN schedule needs eta, one value per row.")
    if widths and (Model is not KernelExpansion or gamma.shape[0] != n + 1):
        raise ValueError("gamma gives the width of an expansion's n rows and after them.")
    if rows and Model is KernelExpansion:
        raw = X
    if rows and (raw is None or raw.shape[0] != n or raw.shape[1] != kbar.n_features):
        raise ValueError("kbar over the rows learned needs them (raw).")
    if Model is KernelExpansion:
        model.reserve(n)
    if kbar is not None and not kbar.active:    # fixed earlier in the call
        schedule.lipschitz = kbar.lipschitz * kbar.final
    if kbar_on:
        kbar.ensure(max(kbar.n_points, model.n_support if Model is KernelExpansion else 0)
                    + n + 1)
    with nogil:
        if Model is KernelExpansion:
            if widths and gamma[0] != model.kernel.gamma:
                model.cset_gamma(gamma[0])
        for i in range(n):
            if Model is KernelExpansion:
                step_work = model.n_support * d
            else:
                step_work = d
            if cinterrupted(&work, step_work):
                interrupted = True
                break
            if kbar_on and kbar.active:
                schedule.lipschitz = ckernel_mean(model, kbar, state.t)
            x = &X[i, 0]
            xx = cdot(x, x, d)
            f = model.cpredict(x) + state.b
            pred_out[i] = f
            if weighted:
                w = weight[i]
            if eta is not None:
                eta_i = eta[i]
            if Model is KernelExpansion:
                kxx = cself(&model.kernel, xx)
                status = cstep(model, x, xx, kxx, kxx, f, y[i], w, eta_i, &loss, &schedule,
                               &state)
            else:
                status = cstep(model, x, xx, kdiag[i], xx, f, y[i], w, eta_i, &loss,
                               &schedule, &state)
            if status == DIVERGED:
                failed = i
                break
            if rows and status == TAKEN and kbar.active:
                kbar.cappend(&raw[i, 0])
            if Model is KernelExpansion:
                if frozen_at and model.n_support >= frozen_at:
                    widths = False          # Nystroem's switch follows: the width stays
                if widths and gamma[i + 1] != model.kernel.gamma:
                    model.cset_gamma(gamma[i + 1])
        if kbar_on and kbar.active and failed < 0 and not interrupted:
            ckernel_mean(model, kbar, state.t, True)    # fixed after the WARMUP-th step
    if interrupted:
        craise_pending()
    return failed, state


MISS = object()     # what predict_ready returns for an event it does not serve
cdef object MAX_EXACT = 2 ** 53     # the integer targets a double holds exactly


def learn_one(self, x, y, sample_weight=1.0):
    """Predict, then learn one event (x a dict or a 1-D row, y a scalar); returns None.

    `okl._one_event.OneEventMixin.learn_one`, compiled: the learner's one-event step
    (`Events.learn_ready`, kept in the learner's slot `_one_event_step`) in one call, or
    the adapter (`okl._one_event.EventAdapter`) for what it declines."""
    step = getattr(self, "_one_event_step", None)
    if isinstance(step, Events) and (<Events>step).learn_ready(self, x, y, sample_weight):
        return
    old = self.__dict__.get("_one_event_state")
    t = self.__dict__.get("t_")
    try:
        adapter = old if old is not None and old.estimator is self else self._one_event()
        with adapter.lock:
            adapter.learn_one(x, y, sample_weight)
    except BaseException:
        # a call that fails adds no adapter (what it holds, the learner's own attributes give
        # back); one that raises once the learner has the event (a Ctrl-C in its last lines)
        # keeps it, as the call would have
        if self.__dict__.get("_one_event_state") is not old and self.__dict__.get("t_") == t:
            if old is None:
                self.__dict__.pop("_one_event_state", None)
            else:
                self.__dict__["_one_event_state"] = old
        raise


def predict_one(self, x):
    """The prediction for one event; the prior before any learning.

    `okl._one_event.OneEventMixin.predict_one`, compiled as `learn_one`."""
    step = getattr(self, "_one_event_step", None)
    if isinstance(step, Events):
        label = (<Events>step).predict_ready(self, x)
        if label is not MISS:
            return label
    adapter = self.__dict__.get("_one_event_state")
    if adapter is None or adapter.estimator is not self:
        adapter = self._one_event()
    with adapter.lock:
        return adapter.predict_one(x)


def huge_event(name):
    """The error of an event too large for float64 (its squared norm overflows): the cause is
    the event, not the step size (okl._base names such a row of a chunk the same way)."""
    return FloatingPointError(
        f"{name} cannot learn this event: it is too large for float64 (its squared norm "
        "overflows, so no kernel value of it is finite). Scale X (e.g. with "
        "okl.preprocessing.OnlineStandardScaler). The model is left as it was.")


cdef class Events:
    """The base of the one-event steps (`PointwiseEvents`, `FeatureEvents`, the multiclass,
    CoefReg and PA steps): `bind` remembers the objects the learner holds under `names`,
    `matches` asks that it still holds the very same ones (a refit, a restore or a changed
    parameter builds a new step).

    `learn_ready` / `predict_ready` are the one compiled call of `learn_one` /
    `predict_one` (`okl._one_event.OneEventMixin`): the row (a ready float64 row, or a
    dict, list, float32 or strided row converted in C), the label, the step and the
    learner's counters in one call.  An event they do not serve (a label not yet seen, a
    weight other than 1, a changed learner, a row of another kind) they decline without
    a write, and the adapter takes it (`okl._one_event.EventAdapter`), which teaches them
    the label codes (`remember`).
    """

    def bind(self, est):
        """Remember the objects est holds under `names` (instance attributes), for `matches`."""
        self.values = tuple([est.__dict__.get(name) for name in self.names])
        self.version = None

    cpdef bint matches(self, est):
        """est holds the very objects this step was built from."""
        return self.cmatches(est, est.__dict__)

    cdef int cmatches(self, object est, dict attrs) except -1:
        """`matches` on the learner and its ``__dict__``: 1 or 0 (subclasses add their own
        checks).

        Every attribute binding gives the learner a new `_attr_version`
        (`okl._one_event.OneEventMixin.__setattr__`): while it is the one seen at the
        last full comparison, no name can hold another object, and one lookup answers."""
        cdef Py_ssize_t i
        cdef PyObject* value
        version = getattr(est, "_attr_version", None)
        if version is not None and version is self.version:
            return True
        for i in range(len(self.names)):
            value = PyDict_GetItem(attrs, <object>PyTuple_GET_ITEM(self.names, i))
            if value == NULL or value != PyTuple_GET_ITEM(self.values, i):
                return False
        self.version = version
        return True

    cdef object diverged(self, double t, double eta):
        """The error of a step t + 1 whose model would no longer be finite (step size eta)."""
        return FloatingPointError(
            f"{self.name} diverged at step t={<Py_ssize_t>t + 1} (eta_t={eta:.3g}): the model "
            "would no longer be finite. The step size is too large for this data; use "
            "eta='auto', a smaller eta or a larger eta_decay, or scale X (e.g. with "
            "okl.preprocessing.OnlineStandardScaler). The model is left as it was.")

    def set_labels(self, classes, dict codes=None):
        """Serve the labels of `classes` (the learner's classes_; None: real targets), with
        the codes of the labels already seen (label -> target, from the adapter)."""
        if not self.ready:
            self.serves = NOTHING
        elif classes is None:
            self.serves = TARGETS
        elif classes is not self.classes:
            self.classes, self.labels = classes, classes.tolist()
            self.codes = {} if codes is None else dict(codes)
            self.serves = LABELS

    def set_lock(self, ReentrantLock lock):
        """The learner's re-entrant lock (okl._locks): the ready-row calls hold it."""
        self.lock = lock

    def remember(self, classes, y, double target):
        """The code of label y, as the adapter found it (at most 64 labels are kept)."""
        if classes is self.classes and len(self.codes) < 64:
            try:
                self.codes[y] = target
            except TypeError:           # unhashable: the adapter names what is wrong
                pass

    cdef object crow(self, dict attrs, object x):
        """Under the lock: x as a float64 row the step reads, x itself when ready, else
        converted in C into this step's row buffer (a dict in the learner's feature order, a
        list of numbers, a float32 or strided row; no allocation, and no Python code runs);
        None for anything else (the adapter's `okl._rows.check_row` names what is wrong).

        The dict `predict_one` just converted, unchanged since (its version, PEP 509), is
        not converted again by `learn_one`."""
        cdef Py_ssize_t n
        cdef cnp.npy_intp d
        cdef unsigned long long version = 0
        cdef int kind
        if cready(x, &n) != NULL:
            return x
        if type(x) is dict:
            keys = attrs.get("_feature_keys")
            if type(keys) is not tuple:
                return None
            version = dict_version(<dict>x)
            if (version != 0 and version == self.row_version and keys is self.row_keys
                    and <PyObject*>x == self.row_dict):
                return self.row_buffer
            d, kind = len(<tuple>keys), 0
        elif type(x) is list or type(x) is cnp.ndarray:
            width = attrs.get("n_features_in_")
            if type(width) is not int or not 0 < width < 1 << 40:
                return None
            d, kind = width, 1
        else:
            return None
        self.row_dict, self.row_version, self.row_keys = NULL, 0, None
        if self.row_buffer is None or cnp.PyArray_DIM(<cnp.ndarray>self.row_buffer, 0) != d:
            self.row_buffer = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
        out = <double*>cnp.PyArray_DATA(<cnp.ndarray>self.row_buffer)
        if kind == 1:
            return self.row_buffer if carray_into(x, d, out) else None
        if not cdict_into(x, <tuple>keys, out):
            return None
        self.row_dict, self.row_version, self.row_keys = <PyObject*>x, version, keys
        return self.row_buffer

    cpdef bint learn_ready(self, object est, object x, object y, object weight=1.0) except -1:
        """Learn one event in this call, under the learner's lock, or decline it (False)
        without a write."""
        cdef double target = 0.0
        if self.serves == NOTHING or self.lock is None:
            return False
        if not (type(weight) is float and PyFloat_AS_DOUBLE(weight) == 1.0
                or type(weight) is int and weight == 1):
            return False
        if self.serves == TARGETS:        # a real number, as okl._rows.check_label takes it
            if PyFloat_Check(y):
                target = PyFloat_AS_DOUBLE(y)
            elif type(y) is int and -MAX_EXACT <= y <= MAX_EXACT:
                target = <double>y
            else:
                return False
            if not isfinite(target):
                return False
        return self.clearn_locked(est, est.__dict__, x, y, target) == 1

    cdef int clearn_locked(self, object est, dict attrs, object x, object y,
                           double target) except -1:
        """`learn_ready`'s step under the learner's lock (attrs: est's ``__dict__``): 1 when
        the event was learned, 0 when declined without a write; for labels the target is the
        code of y, for targets the checked `target`."""
        cdef PyObject* code
        self.lock.cacquire()
        try:
            row = self.crow(attrs, x)
            if row is None or not self.cstill(est, attrs):
                return 0
            if self.serves == LABELS:
                code = PyDict_GetItem(self.codes, y)      # NULL for an unhashable y too
                if code == NULL:
                    return 0
                target = PyFloat_AS_DOUBLE(<object>code)
            return self.cevent(attrs, row, target)
        finally:
            self.lock.crelease()

    cpdef object predict_ready(self, object est, object x):
        """The prediction for one event (a label, or f) under the learner's lock, or `MISS`
        when declined."""
        cdef dict attrs
        if self.serves == NOTHING or self.lock is None:
            return MISS
        attrs = est.__dict__
        self.lock.cacquire()
        try:
            row = self.crow(attrs, x)
            if row is None or not self.cstill(est, attrs):
                return MISS
            if self.serves == TARGETS:
                return self.cpredict(attrs, row)
            return self.cpredict_label(attrs, row)
        finally:
            self.lock.crelease()

    def decision_ready(self, object est, object x):
        """f(x) of one event (the k scores with k classes), as `decision_function_one` gives
        it, under the learner's lock; `MISS` when declined (as `predict_ready`)."""
        cdef dict attrs
        if self.serves == NOTHING or self.lock is None:
            return MISS
        attrs = est.__dict__
        self.lock.cacquire()
        try:
            row = self.crow(attrs, x)
            if row is None or not self.cstill(est, attrs):
                return MISS
            return self.cpredict(attrs, row)
        finally:
            self.lock.crelease()

    cdef int cstill(self, object est, dict attrs) except -1:
        """Under the lock: the learner still has the classes_ the label codes are of, and the
        objects this step was built from (`cmatches`)."""
        if self.serves == LABELS and (PyDict_GetItem(attrs, "classes_")
                                      != <PyObject*>self.classes):
            return False
        return self.cmatches(est, attrs)

    cdef object cpredict_label(self, dict attrs, object x):
        """The label of one ready row (`clabel` of `cpredict`; the steps of k classes give it
        without an array of scores)."""
        return self.clabel(self.cpredict(attrs, x))

    cdef object clabel(self, object f):
        """The label of f (binary) or of the k scores."""
        cdef const double[::1] scores
        if type(f) is float:
            return self.labels[PyFloat_AS_DOUBLE(f) > 0.0] if len(self.labels) == 2 else MISS
        scores = f
        return self.clabel_of(&scores[0], scores.shape[0]) if scores.shape[0] else MISS

    cdef object clabel_of(self, const double* s, Py_ssize_t n):
        """The label of the k scores s (the first largest; a NaN first, as argmax)."""
        cdef Py_ssize_t i, best = 0
        for i in range(n):
            if s[i] != s[i]:
                best = i
                break
            if s[i] > s[best]:
                best = i
        return self.labels[best] if n == len(self.labels) else MISS

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        """Learn one ready row with weight 1 on the learner's counters in `attrs`: 1, or 0
        when the subclass declines it before any write."""
        return 0

    cdef object cpredict(self, dict attrs, object x):
        raise NotImplementedError

    cdef Py_ssize_t cpredict_into(self, dict attrs, object x, double* out,
                                  Py_ssize_t n) except -2:
        """The k scores of one ready row written into the caller's `out` (n doubles), no
        array made: k, or -1 when this step gives no k scores for it (`cpredict` then)."""
        return -1

    cdef int cpredict_std(self, dict attrs, object x, double* f, double* sf2,
                          double* scale) except -1:
        """f(x), the variance of f(x) (noise excluded) and the scale it is in units of for
        one ready row: 1, or 0 when this step gives no variance (the default)."""
        return 0

    cdef int ccount_prior(self, dict attrs, double h, double y, double w) except -1:
        """A taken step of kernel part h counts for the prior-shift offset: its state and
        intercept_ in `attrs` (the learner's ``__dict__``).  The state is read from the
        tuple only when it is not the one this step last stored (a 4-tuple as
        `okl._numpy.pointwise.prior_state` reads it)."""
        cdef double ps[5]
        state = attrs.get("_prior_state")
        if state is None:
            ps[0] = ps[1] = ps[2] = ps[3] = ps[4] = 0.0
        elif state is self.prior_tuple:
            memcpy(ps, self.prior_state, 5 * sizeof(double))
        else:
            cread_prior(ps, state)
        cprior_count(ps, h, y, w)
        state = (ps[0], ps[1], ps[2], ps[3], ps[4])
        attrs["_prior_state"] = state
        attrs["intercept_"] = cprior_offset(ps)
        memcpy(self.prior_state, ps, 5 * sizeof(double))
        self.prior_tuple = state
        return 0


cdef class PointwiseEvents(Events):
    """One-event predict and learn for a pointwise learner whose model is a `KernelExpansion`.

    `learn` predicts f_t(x_t), then takes `cstep`; the learner's counters come
    in as arguments and the new ones go back as a tuple, which the learner
    stores (`okl._base.PointwiseMixin`).  "Predict, then learn" evaluates
    f_t(x_t) twice on the same model and row: the last prediction is kept with
    a fingerprint of the model (t, n_support, scale, next_slot, n_rescale)
    and a copy of the row, and `learn` reuses it when both match.

    Parameters
    ----------
    expansion : KernelExpansion
    schedule : dict
        The `Schedule` fields (the learner's `_schedule()`).
    loss : dict
        The `LossSpec` fields (`okl.losses.loss_spec`).
    name : str
        The estimator's class name, for error messages.
    names : tuple of str
        The estimator attributes `matches` compares (the expansion and the parameters).
    """
    cdef KernelExpansion expansion
    cdef Schedule schedule
    cdef LossSpec loss
    cdef readonly object outcome     # what the last `learn` returned, None until it returns
    cdef readonly bint given            # a GIVEN schedule: the caller passes eta_t of each step
    cdef public bint prior              # the prior-shift offset (learn_into keeps it)
    cdef public Warmup warm             # the warm-ups, while on (docs/defaults.md, 2 and 4)
    # the `FeatureModel` whose exact phase this expansion is (`owner.expansion`); `warm_end`:
    # its warm-up's last event ends the phase (random Fourier features then take their
    # weights, `owner.end_warmup`, in the event); `switch_at`: the centres at which the
    # learner takes the next event (Nystroem's switch)
    cdef public object owner
    cdef public bint warm_end
    cdef public Py_ssize_t switch_at
    cdef bint stale                     # the exact phase ended, or an event failed after
                                        # its step: the learner builds a new step
    # the last prediction and the model it was made on
    cdef double[::1] last_row
    cdef bint has_last
    cdef double last_f, last_xx, last_scale, last_t, last_gamma
    cdef Py_ssize_t last_n, last_slot, last_rescale

    def __init__(self, KernelExpansion expansion, Schedule schedule, LossSpec loss, str name,
                 tuple names=()):
        self.expansion = expansion
        self.schedule, self.loss = schedule, loss
        self.given = schedule.kind == GIVEN
        self.ready = not self.given     # a callable's step sizes come from the learner
        self.name, self.names = name, names
        self.values = tuple([expansion] + [None] * (len(names) - 1))
        self.last_row = np.empty(expansion.n_features)
        self.has_last = False

    cdef int cmatches(self, object est, dict attrs) except -1:
        """est holds the objects this step was built from; on a feature model's exact phase,
        its expansion still, and not at an event the learner takes itself (`owner`)."""
        cdef Warmup warm = self.warm
        if not Events.cmatches(self, est, attrs):
            return False
        if self.owner is None:
            return True
        if self.stale or self.owner.expansion is not self.expansion:
            return False
        return not (self.switch_at and self.expansion.n_support >= self.switch_at - 1)

    cdef inline double _f(self, const double* x, double* xx_out, double t):
        """The model part of f(x), with the cache; NaN for a non-finite row."""
        cdef KernelExpansion e = self.expansion
        cdef Py_ssize_t d = e.n_features
        cdef double xx, f
        if (self.has_last and t == self.last_t and e.n_support == self.last_n
                and e.scale == self.last_scale and e.next_slot == self.last_slot
                and e.n_rescale == self.last_rescale and e.kernel.gamma == self.last_gamma
                and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            xx_out[0] = self.last_xx
            return self.last_f
        xx = cdot(x, x, d)
        xx_out[0] = xx
        if not row_is_finite(x, d, xx):
            return NAN
        f = e.cpredict(x)
        memcpy(&self.last_row[0], x, d * sizeof(double))
        self.last_f, self.last_xx, self.last_t = f, xx, t
        self.last_n, self.last_scale, self.last_gamma = e.n_support, e.scale, e.kernel.gamma
        self.last_slot, self.last_rescale = e.next_slot, e.n_rescale
        self.has_last = True
        return f

    cdef inline void _check(self, object x, Py_ssize_t n, const double* p, double xx, double f,
                            str action) except *:
        if n != self.expansion.n_features:
            raise ValueError(f"X has {n} features, but {self.name} is expecting "
                             f"{self.expansion.n_features} features as input.")
        if f != f and not row_is_finite(p, n, xx):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             f"non-finite values cannot be {action}.")

    def predict(self, x, double t, double b):
        """f(x) = b + kernel part for one row, a 1-D float64 buffer (t: the learner's steps,
        for the cache)."""
        return self._predict(x, t, b)

    cdef double _predict(self, object x, double t, double b) except? -1.0:
        cdef double xx = 0.0, f = NAN
        cdef Py_ssize_t n = 0
        cdef const double[::1] typed
        cdef const double* p = cready(x, &n)
        if p == NULL:           # any other 1-D float64 buffer, or a clear error
            typed = x
            n, p = typed.shape[0], &typed[0]
        if n == self.expansion.n_features:
            f = self._f(p, &xx, t) + b
        self._check(x, n, p, xx, f, "predicted")
        return f

    cdef double _learn(self, object x, double y, double weight, double eta_given,
                       StepState* st, int* status) except? -1.0:
        """Predict f_t(x_t) from the counters in `st`, then take the step; st holds the new ones."""
        cdef double xx = 0.0, f = NAN
        cdef KernelExpansion e = self.expansion
        cdef Py_ssize_t n = 0
        cdef const double[::1] typed
        cdef const double* p = cready(x, &n)
        cdef Schedule schedule = self.schedule
        cdef Warmup warm = self.warm
        if p == NULL:
            typed = x
            n, p = typed.shape[0], &typed[0]
        if n == e.n_features:
            f = self._f(p, &xx, st.t) + st.b
        self._check(x, n, p, xx, f, "learned")
        st.eta_t = st.lam_t = st.eta_try = NAN
        st.reset_t = st.reset_eta = st.reset_lam = 0.0
        if weight != 0.0 and e.n_support == e.capacity and (
                not e.budget or e.n_support < e.budget or e.policy == MERGE):
            # moves the buffers, the model unchanged; a full MERGE budget needs slot B for
            # the newcomer until the merge (`reserve` caps the room at B + 1)
            e.reserve(1)
        if warm is not None and warm.kbar is not None and weight != 0.0:
            warm.kbar.ensure(e.n_support + 2)
            schedule.lipschitz = ckernel_mean(e, warm.kbar, st.t)
        craise_signals()                # a Ctrl-C so far: raised before any write
        status[0] = cstep(e, p, xx, cself(&e.kernel, xx), cself(&e.kernel, xx), f, y,
                          weight, eta_given, &self.loss, &schedule, st)
        if status[0] == DIVERGED:
            raise self.diverged(st.t, st.eta_try) if isfinite(xx) else huge_event(self.name)
        if warm is not None and status[0] == TAKEN:
            if warm.kbar is not None and warm.kbar.rows:
                warm.kbar.cappend(p)
            if self.switch_at and e.n_support >= self.switch_at:
                warm.cstop_width()          # Nystroem's switch: the width stays
            elif warm.cadd(p):
                e.cset_gamma(warm.width.gamma)
            if warm.kbar is not None:
                ckernel_mean(e, warm.kbar, st.t, True)
        return f

    def learn(self, x, double y, double weight, double t, double ck2,
              double b, double eta_given=NAN, double dev=0.0, drift=None):
        """Predict f_t(x_t), then take step t + 1.

        `y` is the target, or the label as -1.0 / +1.0 for a margin loss; a
        weight 0 skips the event; `eta_given` is eta_t of a GIVEN schedule; `dev`
        the state's sum of |y_s - b_{s+1}| (SCALED); `drift` the stored drift state
        (`_drift_state`, None: none).  Returns (f_t(x_t), taken, t, C_K^2, eta_t,
        lam_t, b, reset, dev, drift) after the step, reset = (t, eta_t, lam_t) of a
        step that emptied the model, else None.  Raises, leaving the model as it was,
        on NaN/inf in x or divergence.
        """
        cdef StepState st
        cdef int status
        cdef double f
        st.t, st.ck2, st.b, st.dev = t, ck2, b, dev
        cread_drift(drift, t, &st.drift)
        f = self._learn(x, y, weight, eta_given, &st, &status)
        return (f, status == TAKEN, st.t, st.ck2, st.eta_t, st.lam_t, st.b,
                (st.reset_t, st.reset_eta, st.reset_lam) if st.reset_t else None, st.dev,
                cdrift_tuple(&st.drift))

    def learn_into(self, dict attrs, x, double y, double weight=1.0,
                   double eta_given=NAN):
        """`learn` on the learner's own counters; returns f_t(x_t).

        `attrs` is the learner's ``__dict__``: the step reads t_, ck2_, intercept_ and
        dev_ from it and, when taken, stores what it returns there as
        `okl._kernel_learners.PointwiseMixin._store_step` does (eta_ and lam_ when t
        moved, t_, ck2_, intercept_, dev_, n_support_), in one compiled call.  Raises,
        leaving the model and `attrs` as they were.
        """
        return self._learn_into(attrs, x, y, weight, eta_given)

    cdef double _learn_into(self, dict attrs, object x, double y, double weight,
                            double eta_given) except? -1.0:
        cdef StepState st
        cdef int status
        cdef double f, t0, fixed, b = attrs["intercept_"]
        cdef bint ending
        dev = attrs.get("dev_")
        drift = attrs.get("_drift_state")
        st.t, st.ck2 = attrs["t_"], attrs["ck2_"]
        st.b = 0.0 if self.prior else b     # the prior-shift offset stays out of the step
        st.dev = 0.0 if dev is None else dev
        cread_drift(drift, st.t, &st.drift)
        t0 = st.t
        if self.warm is not None:
            self.warm.cload(attrs, self.expansion.kernel.gamma)
        # the warm-up's last row on random Fourier features' exact phase: the owner then
        # takes its weights, and the step is undone if that fails (a Ctrl-C included)
        ending = (self.warm_end and self.warm is not None and self.warm.width is not None
                  and self.warm.width.warming
                  and self.warm.width.moments.rows >= C_WARMUP - 1)
        token = self.expansion.checkpoint(1) if ending else None
        f = self._learn(x, y, weight, eta_given, &st, &status)
        model = None
        if ending and status == TAKEN and not self.warm.width.warming:
            try:
                model = self.owner.end_warmup()
            except BaseException:
                self.expansion.restore(token)
                self.stale = True           # its warm-ups took the row: built anew
                raise
        if status == TAKEN and self.warm is not None:
            fixed = self.warm.cstore(attrs)
            if fixed == fixed:
                self.schedule.lipschitz = fixed
            if self.warm.over:
                self.warm = None
        if status == TAKEN:
            if st.t != t0:
                attrs["eta_"] = st.eta_t
                attrs["lam_"] = st.lam_t
            attrs["t_"] = <long long>st.t
            attrs["ck2_"] = st.ck2
            attrs["dev_"] = st.dev
            if drift is not None or cactive(&self.schedule.drift):
                attrs["_drift_state"] = cdrift_tuple(&st.drift)
            attrs["n_support_"] = self.expansion.n_support
            if not self.prior:
                attrs["intercept_"] = st.b
            else:                   # b predicted this event, then the event counts
                self.ccount_prior(attrs, f, y, weight)
            if self.switch_at and self.expansion.n_support >= self.switch_at:
                self.owner._full()          # Nystroem's features on the full exact phase
                attrs["n_support_"] = self.owner.n_support
            if model is not None:           # the features: the learner builds their step
                attrs["_expansion"] = model
                attrs["n_support_"] = model.n_support
                self.stale = True
        return f + b if self.prior else f

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        if self.given:                  # the callable's step sizes come from the learner
            return 0
        self._learn_into(attrs, x, y, 1.0, NAN)
        return 1

    cdef object cpredict(self, dict attrs, object x):
        return self._predict(x, attrs["t_"], attrs["intercept_"])


cdef class FeatureEvents(Events):
    """One-event predict and learn for a feature model (`okl._feature_model.FeatureModel`).

    The row's features z(x) are computed in C into a buffer of this object
    (`FeatureRow.cmap`), then `cstep` takes the step on the `LinearModel`, as the
    chunk loop does on the same features.  The features of the last row are kept
    with a copy of the row: "predict, then learn" maps the row once (the map is
    fixed, so z stays valid; f = <w, z> is recomputed, O(D)).  Same arguments and
    results as `PointwiseEvents`; `matches` also asks that the feature model still
    holds this linear model and map (Nystroem's switch, a restore, an engine change
    build a new one).
    """
    cdef LinearModel linear
    cdef FeatureRow rowmap
    cdef readonly object outcome     # what the last `learn` returned, None until it returns
    cdef public bint prior              # the prior-shift offset (learn_into keeps it)
    cdef public Warmup warm             # eta="scaled"'s kbar over the rows, while measured
    cdef object model, fmap
    cdef Schedule schedule
    cdef LossSpec loss
    cdef double[::1] z, last_row
    cdef bint has_last
    cdef double last_xx, last_zz

    def __init__(self, model, FeatureRow rowmap, Schedule schedule, LossSpec loss, str name,
                 tuple names=()):
        self.model, self.linear, self.fmap = model, model.linear, model.fmap
        if rowmap.n_components != self.linear.n_components:
            raise ValueError("FeatureEvents: the map and the linear model disagree.")
        self.rowmap = rowmap
        self.schedule, self.loss = schedule, loss
        self.name, self.names = name, names
        self.values = tuple([model] + [None] * (len(names) - 1))
        self.z = np.empty(rowmap.n_components)
        self.last_row = np.empty(rowmap.n_features)
        self.has_last = False
        self.ready = schedule.kind != GIVEN     # a callable's step sizes come from the learner

    cdef int cmatches(self, object est, dict attrs) except -1:
        """est holds the objects this step was built from, and its model this map and weights."""
        return (Events.cmatches(self, est, attrs) and self.model.linear is self.linear
                and self.model.fmap is self.fmap)

    cdef inline bint _features(self, const double* x, double* xx_out):
        """z(x) into self.z (with the cache); False for a non-finite row."""
        cdef Py_ssize_t d = self.rowmap.n_features
        cdef double xx
        if self.has_last and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0:
            xx_out[0] = self.last_xx
            return True
        xx = cdot(x, x, d)
        xx_out[0] = xx
        if not row_is_finite(x, d, xx):
            return False
        self.has_last = False
        self.rowmap.cmap(x, &self.z[0])
        self.last_zz = cdot(&self.z[0], &self.z[0], self.rowmap.n_components)
        memcpy(&self.last_row[0], x, d * sizeof(double))
        self.last_xx = xx
        self.has_last = True
        return True

    cdef inline double _f(self, object x, double b, str action) except? -1.0:
        """f(x) = b + <w, z(x)> of a 1-D float64 buffer (read in place when ready)."""
        cdef double xx
        cdef Py_ssize_t n = 0
        cdef const double[::1] typed
        cdef const double* p = cready(x, &n)
        if p == NULL:           # any other 1-D float64 buffer, or a clear error
            typed = x
            n, p = typed.shape[0], &typed[0]
        if n != self.rowmap.n_features:
            raise ValueError(f"X has {n} features, but {self.name} is expecting "
                             f"{self.rowmap.n_features} features as input.")
        if not self._features(p, &xx):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             f"non-finite values cannot be {action}.")
        return self.linear.cpredict(&self.z[0]) + b

    def predict(self, x, double t, double b):
        """f(x) = b + <w, z(x)> for one row (t: unused, the signature of `PointwiseEvents`)."""
        return self._f(x, b, "predicted")

    cdef int _learn(self, object x, double y, double weight, double eta_given, StepState* st,
                    double* f) except -1:
        """Predict f_t(x_t) (into f) from the counters in `st`, then take the step: its status;
        st holds the new counters."""
        cdef Schedule schedule = self.schedule
        cdef Warmup warm = self.warm
        f[0] = self._f(x, st.b, "learned")
        st.eta_t = st.lam_t = st.eta_try = NAN
        st.reset_t = st.reset_eta = st.reset_lam = 0.0
        if warm is not None and warm.kbar is not None and weight != 0.0:
            warm.kbar.ensure(warm.kbar.n_points + 2)
            schedule.lipschitz = ckernel_mean(self.linear, warm.kbar, st.t)
        craise_signals()                # a Ctrl-C so far: raised before any write
        status = cstep(self.linear, &self.z[0], self.last_zz,
                       cself(&self.rowmap.kernel, self.last_xx), self.last_zz, f[0], y, weight,
                       eta_given, &self.loss, &schedule, st)
        if status == DIVERGED:
            raise (self.diverged(st.t, st.eta_try) if isfinite(self.last_xx)
                   else huge_event(self.name))
        if warm is not None and warm.kbar is not None and status == TAKEN:
            warm.kbar.cappend(&self.last_row[0])       # the row itself (`_features` keeps it)
            ckernel_mean(self.linear, warm.kbar, st.t, True)
        return status

    def learn(self, x, double y, double weight, double t, double ck2,
              double b, double eta_given=NAN, double dev=0.0, drift=None):
        """Predict f_t(x_t), then take step t + 1: `PointwiseEvents.learn`'s arguments and
        results.  Raises, leaving the model as it was, on NaN/inf in x or divergence; the
        results are kept in `outcome` before the call returns (a Ctrl-C raised as it returns
        lets the learner store them: `okl._kernel_learners.PointwiseMixin._learn_event`)."""
        self.outcome = None
        cdef StepState st
        cdef double f
        st.t, st.ck2, st.b, st.dev = t, ck2, b, dev
        cread_drift(drift, t, &st.drift)
        status = self._learn(x, y, weight, eta_given, &st, &f)
        self.outcome = (f, status == TAKEN, st.t, st.ck2, st.eta_t, st.lam_t, st.b,
                        (st.reset_t, st.reset_eta, st.reset_lam) if st.reset_t else None, st.dev,
                        cdrift_tuple(&st.drift))
        return self.outcome

    def learn_into(self, dict attrs, x, double y, double weight=1.0, double eta_given=NAN):
        """`learn` on the learner's own counters, as `PointwiseEvents.learn_into` (read from
        and stored into `attrs`, the learner's ``__dict__``, in one compiled call); returns
        f_t(x_t).  Raises, leaving the model and `attrs` as they were."""
        return self._learn_into(attrs, x, y, weight, eta_given)

    cdef double _learn_into(self, dict attrs, object x, double y, double weight,
                            double eta_given) except? -1.0:
        cdef StepState st
        cdef double f, t0, fixed, b = attrs["intercept_"]
        dev = attrs.get("dev_")
        drift = attrs.get("_drift_state")
        st.t, st.ck2 = attrs["t_"], attrs["ck2_"]
        st.b = 0.0 if self.prior else b     # the prior-shift offset stays out of the step
        st.dev = 0.0 if dev is None else dev
        cread_drift(drift, st.t, &st.drift)
        t0 = st.t
        if self.warm is not None:
            self.warm.cload(attrs, self.warm.kbar.gamma if self.warm.kbar is not None else NAN)
        if self._learn(x, y, weight, eta_given, &st, &f) == TAKEN:
            if self.warm is not None:
                fixed = self.warm.cstore(attrs)
                if fixed == fixed:
                    self.schedule.lipschitz = fixed
                if self.warm.over:
                    self.warm = None
            if st.t != t0:
                attrs["eta_"] = st.eta_t
                attrs["lam_"] = st.lam_t
            attrs["t_"] = <long long>st.t
            attrs["ck2_"] = st.ck2
            attrs["dev_"] = st.dev
            if drift is not None or cactive(&self.schedule.drift):
                attrs["_drift_state"] = cdrift_tuple(&st.drift)
            attrs["n_support_"] = 0     # no support vectors on features (FeatureModel.n_support)
            if not self.prior:
                attrs["intercept_"] = st.b
            else:
                self.ccount_prior(attrs, f, y, weight)
        return f + b if self.prior else f

    cdef int cevent(self, dict attrs, object x, double y) except -1:
        self._learn_into(attrs, x, y, 1.0, NAN)
        return 1

    cdef object cpredict(self, dict attrs, object x):
        return self._f(x, attrs["intercept_"], "predicted")


# -- the prior-shift offset of the binary classifier (docs/defaults.md, section 1) ---------------
# okl._numpy.pointwise's prior_offset / prior_count / prior_offsets in C, the same operations in
# the same order (the engines agree; tests/test_intercept.py checks the constants are the twin's).

PRIOR_RATE = 0.01       # the recent labels' mean forgets at this rate
PRIOR_NOISE = 3.0       # the soft threshold, in standard deviations of that mean
cdef double CPRIOR_RATE = PRIOR_RATE, CPRIOR_NOISE = PRIOR_NOISE


cdef int cread_prior(double* ps, object state) except -1:
    """ps = the stored state (`okl._numpy.pointwise.prior_state`: a 4-tuple's srecent
    starts at its recent)."""
    if len(state) == 4:
        ps[0], ps[1], ps[2], ps[3] = state
        ps[4] = ps[2]
    else:
        ps[0], ps[1], ps[2], ps[3], ps[4] = state
    return 0


cdef inline double cprior_offset(const double* s) noexcept nogil:
    """b = sign(u) max(min(|u| - noise, sign(u) v), 0) hbar of the state
    s = (n, ybar, recent, hbar, srecent), u = recent - ybar, v = recent - srecent."""
    cdef double noise = CPRIOR_NOISE * sqrt(CPRIOR_RATE / (2.0 - CPRIOR_RATE)
                                            * fmax(1.0 - s[1] * s[1], 0.0))
    cdef double shift = s[2] - s[1]
    cdef double lag = copysign(1.0, shift) * (s[2] - s[4])
    return copysign(fmax(fmin(fabs(shift) - noise, lag), 0.0), shift) * s[3]


cdef inline void cprior_count(double* s, double h, double y, double w) noexcept nogil:
    """The state after a step of weight w > 0 on label y with kernel part h."""
    cdef double rate, fast
    s[0] += 1.0
    rate = w / s[0] if w < s[0] else 1.0
    fast = fmax(rate, fmin(CPRIOR_RATE * w, 1.0))
    s[1] = s[1] + rate * (y - s[1])
    s[2] = s[2] + fast * (y - s[2])
    s[3] = s[3] + rate * (fabs(h) - s[3])
    s[4] = s[4] + fast * ((1.0 if h > 0.0 else -1.0) - s[4])


def prior_offsets(tuple state, const double[::1] h, const double[::1] y,
                  const double[::1] weight=None):
    """The prior-shift offset over a chunk: (b_t of every row, the state after)."""
    cdef Py_ssize_t i, n = h.shape[0]
    cdef double w
    cdef double ps[5]
    if y.shape[0] != n or (weight is not None and weight.shape[0] != n):
        raise ValueError("h, y and weight do not match.")
    if state is None:
        ps[0] = ps[1] = ps[2] = ps[3] = ps[4] = 0.0
    else:
        cread_prior(ps, state)
    out = np.empty(n)
    cdef double[::1] b = out
    with nogil:
        for i in range(n):
            b[i] = cprior_offset(ps)
            w = 1.0 if weight is None else weight[i]
            if w != 0.0:
                cprior_count(ps, h[i], y[i], w)
    return out, (ps[0], ps[1], ps[2], ps[3], ps[4])
