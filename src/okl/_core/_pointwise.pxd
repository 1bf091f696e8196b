"""The schedule of the pointwise step, shared by every loop that takes it (docs/architecture.md).

`_pointwise.pyx` (the binary and regression step), `_multiclass.pyx` (k classes) and
`_multikernel.pyx` (many widths) cimport `Schedule` and `cschedule` from here, so a step size
is written once.
"""
cimport numpy as cnp
from cpython.object cimport PyObject
from libc.math cimport isfinite, pow

from okl._core._drift cimport Drift, DriftState
from okl._core._lock cimport ReentrantLock


cpdef enum StepSize:
    AUTO = 0        # eta_t = t**-eta_decay / (lam_t + M C_K^2), the papers' admissible step
    POWER = 1       # eta_t = eta t**-eta_decay
    GIVEN = 2       # eta_t given per row (a callable's values)
    SCALED = 3      # the AUTO step times max(1, the mean |y_s - b_{s+1}| of the steps before t)


cpdef enum Offset:
    FIXED = 0       # b stays as it is (fit_intercept=False)
    MEAN = 1        # b_{t+1} = b_t + min(1, w_t / t) (y_t - b_t): the running mean of the targets
    STEP = 2        # b_{t+1} = b_t - eta_t w_t g_t


cdef struct Schedule:
    int kind            # a StepSize
    double eta
    double eta_decay
    double lam
    double lam_decay
    double lipschitz    # M of the auto step
    int intercept       # how the offset b learns: an Offset
    Drift drift         # forgetting and change detection (_drift.pxd)


cdef struct StepState:
    double t            # steps taken (a zero weight does not count)
    double ck2          # C_K^2, the running max of K(x_s, x_s) over the steps taken
    double b            # the offset
    double dev          # the sum of w_s |y_s - b_{s+1}| over the steps taken (sigma_t of SCALED)
    double eta_t        # the schedule of the last step taken
    double lam_t
    double eta_try      # eta_t of the last step tried (NaN for a zero weight)
    double reset_t      # the first step with 1 - lam_t eta_t <= 0, or 0
    double reset_eta
    double reset_lam
    DriftState drift    # the schedule's clock and the change detector (_drift.pxd)


cdef inline void cschedule(const Schedule* s, double t, double ck2, double eta_given,
                           double* eta_t, double* lam_t, double dev=0.0) noexcept nogil:
    """eta_t and lam_t of step t (C_K^2 = ck2 after the step's own K(x_t, x_t); dev: the
    mean of |y_s - b_{s+1}| over the steps before, 0 for none, for SCALED)."""
    cdef double decay
    lam_t[0] = s.lam if s.lam_decay == 0.0 else s.lam * pow(t, -s.lam_decay)
    if s.kind == GIVEN:
        eta_t[0] = eta_given
        return
    decay = 1.0 if s.eta_decay == 0.0 else pow(t, -s.eta_decay)
    if s.kind == AUTO or s.kind == SCALED:
        # lam_t + M C_K^2 = 0 only while every K(x_s, x_s) is 0 and lam = 0: the step is moot
        eta_t[0] = decay / (lam_t[0] + s.lipschitz * ck2) if lam_t[0] + s.lipschitz * ck2 > 0.0 \
            else decay
        if s.kind == SCALED and dev > 1.0:     # the targets' scale, when above 1
            eta_t[0] *= dev
    else:
        eta_t[0] = s.eta * decay


cdef inline double coffset(const Schedule* s, double b, double y, double w,
                           double t) noexcept nogil:
    """b_{t+1} of a MEAN offset (docs/defaults.md, section 1); b for the others."""
    if s.intercept == MEAN:
        return b + (y - b) * (w / t if w < t else 1.0)
    return b


cdef inline const double* cready(object x, Py_ssize_t* n) noexcept:
    """The data of x when it is an aligned, native, C-contiguous float64 1-D array (n: its
    length), read in place; NULL for any other object (callers take a typed memoryview)."""
    cdef cnp.ndarray a
    if type(x) is not cnp.ndarray:
        return NULL
    a = <cnp.ndarray>x
    if not (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_NDIM(a) == 1
            and cnp.PyArray_ISCARRAY_RO(a)):
        return NULL
    n[0] = cnp.PyArray_DIM(a, 0)
    return <const double*>cnp.PyArray_DATA(a)


cdef inline bint row_is_finite(const double* x, Py_ssize_t d, double xx) noexcept nogil:
    """x holds no NaN or inf, given xx = <x, x>."""
    cdef Py_ssize_t j
    if isfinite(xx):
        return True
    for j in range(d):                  # ||x||^2 overflowed, or x holds NaN/inf
        if not isfinite(x[j]):
            return False
    return True


cpdef enum Serves:
    NOTHING = 0     # learn_ready / predict_ready decline every event (the adapter's path)
    TARGETS = 1     # a regressor's real targets
    LABELS = 2      # a classifier's labels, through the codes the adapter remembered


cdef class Events:
    # what every one-event step keeps of its learner (docs/streaming.md): the names of the
    # learner's attributes it was built from and the very objects they held
    cdef object name
    cdef tuple names, values
    cdef object version     # the learner's `_attr_version` when they last matched
    # the ready-row entry (learn_ready / predict_ready): what it serves, the classes_ its
    # label codes (label -> target of the step) and labels (classes_.tolist()) are of
    cdef public int serves
    cdef bint ready                 # the subclass gives cevent / cpredict for this learner
    cdef object classes
    cdef dict codes
    cdef list labels
    cdef ReentrantLock lock         # the learner's lock (okl._locks), taken in the call
    cdef object row_buffer          # a converted row (crow), under the lock
    # the dict it holds (only compared, never read: no reference), that dict's version
    # then, and the feature order it was read in
    cdef PyObject* row_dict
    cdef unsigned long long row_version
    cdef object row_keys
    # the prior-shift offset's state (n, ybar, recent, hbar, srecent) as last stored in the
    # learner's _prior_state (that very tuple: a restore or a chunk rereads it)
    cdef object prior_tuple
    cdef double prior_state[5]
    cpdef bint matches(self, est)
    cpdef bint learn_ready(self, object est, object x, object y, object weight=*) except -1
    cpdef object predict_ready(self, object est, object x)
    cdef int cmatches(self, object est, dict attrs) except -1
    cdef int cstill(self, object est, dict attrs) except -1
    cdef object crow(self, dict attrs, object x)
    cdef int cevent(self, dict attrs, object x, double y) except -1
    cdef int clearn_locked(self, object est, dict attrs, object x, object y,
                           double target) except -1
    cdef object cpredict(self, dict attrs, object x)
    cdef object cpredict_label(self, dict attrs, object x)
    cdef Py_ssize_t cpredict_into(self, dict attrs, object x, double* out,
                                  Py_ssize_t n) except -2
    cdef int cpredict_std(self, dict attrs, object x, double* f, double* sf2,
                          double* scale) except -1
    cdef object clabel(self, object f)
    cdef object clabel_of(self, const double* s, Py_ssize_t n)
    cdef int ccount_prior(self, dict attrs, double h, double y, double w) except -1
    cdef object diverged(self, double t, double eta)
