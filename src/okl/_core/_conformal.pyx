"""Online conformal calibration in C: the threshold update and the one-event path.

`Calibration` is the compiled twin of `okl._numpy.conformal.NumpyCalibration`
(the same state in the same arrays, the same steps in the same order; the
rules are derived in docs/conformal.md).  `learn_one`, `predict_one` and
`predict_interval_one` are `okl.conformal.ConformalRegressor`'s one-event
methods, compiled: the base learner's prediction, the score, the base
learner's step and the threshold's update in one call.  The prediction made
by `predict_one` / `predict_interval_one` is kept (`LastEvent`) and serves the
`learn_one` of the same event, so predict-then-learn predicts once.
`predict_set_one` and `learn_one_label` are `okl.conformal.ConformalClassifier`'s: the set built
here from the learner's compiled scores (`LastEvent.cscores`), its probabilities kept the same way.
"""
import numpy as np

cimport cython
cimport numpy as cnp
from libc.math cimport INFINITY, M_PI, exp, fabs, fmax, fmin, isfinite, log, sqrt, tan
from libc.string cimport memcmp, memcpy, memmove
from cpython.dict cimport PyDict_GetItem, PyDict_GetItemWithError
from cpython.float cimport PyFloat_Check, PyFloat_AS_DOUBLE
from cpython.object cimport PyObject
from cpython.ref cimport Py_XDECREF

from okl._core._event cimport dict_version
from okl._core._lock cimport ReentrantLock
from okl._core._pointwise cimport NOTHING, TARGETS, Events

cnp.import_array()


cdef extern from *:
    """
    /* (lo, hi) as a tuple held in *slot too: the one returned last, its two items replaced,
       when only *slot holds it (nobody can see it change, as zip's reused tuple), else a new
       one; a new reference, NULL on an error. */
    static PyObject* okl_conformal_pair(PyObject** slot, double lo, double hi) {
        PyObject *t = *slot, *a, *b, *old;
        a = PyFloat_FromDouble(lo);
        if (a == NULL)
            return NULL;
        b = PyFloat_FromDouble(hi);
        if (b == NULL) {
            Py_DECREF(a);
            return NULL;
        }
        if (t != NULL && Py_REFCNT(t) == 1) {
            old = PyTuple_GET_ITEM(t, 0);
            PyTuple_SET_ITEM(t, 0, a);
            Py_DECREF(old);
            old = PyTuple_GET_ITEM(t, 1);
            PyTuple_SET_ITEM(t, 1, b);
            Py_DECREF(old);
            Py_INCREF(t);
            return t;
        }
        t = PyTuple_New(2);
        if (t == NULL) {
            Py_DECREF(a);
            Py_DECREF(b);
            return NULL;
        }
        PyTuple_SET_ITEM(t, 0, a);
        PyTuple_SET_ITEM(t, 1, b);
        Py_XSETREF(*slot, t);
        Py_INCREF(t);
        return t;
    }
    """
    object okl_conformal_pair(PyObject** slot, double lo, double hi)


cdef extern from *:
    """
    #include <structmember.h>
    typedef struct { PyTypeObject* tp; unsigned int tag; Py_ssize_t offset; } okl_slot_cache;
    /* 1, *out the object in est's slot `name` (borrowed; NULL: unset), read at the offset of the
       member descriptor est's type finds for `name` (a data descriptor: what getattr gives), kept
       in *c for that type while its version tag is unchanged (a changed type gets a new one);
       0, no error: not such a slot (ask getattr). */
    static int okl_slot(PyObject* est, PyObject* name, okl_slot_cache* c, PyObject** out) {
        PyTypeObject* t = Py_TYPE(est);
        if (t != c->tp || c->tag == 0 || t->tp_version_tag != c->tag) {
            PyObject* d;
            PyMemberDef* m;
            c->tp = NULL;
            d = _PyType_Lookup(t, name);
            if (d == NULL || Py_TYPE(d) != &PyMemberDescr_Type)
                return 0;
            m = ((PyMemberDescrObject*)d)->d_member;
            if (m->type != T_OBJECT_EX || t->tp_version_tag == 0)
                return 0;
            c->tp = t;
            c->tag = t->tp_version_tag;
            c->offset = m->offset;
        }
        *out = *(PyObject**)((char*)est + c->offset);
        return 1;
    }
    """
    ctypedef struct okl_slot_cache:
        void* tp
        unsigned int tag
        Py_ssize_t offset
    int okl_slot(object est, object name, okl_slot_cache* c, PyObject** out)
    object PyObject_GenericGetDict(object o, void* context)

cpdef enum Method:
    ACI = 0
    QUANTILE = 1
    AGACI = 2
    PID = 3

cdef double INDEX_SLACK = 1e-9
# the normalised score: the calibration takes the scores of the events a learner predicts having
# learned this many (okl.conformal.SPREAD_EVENTS); `LastEvent.clearn` leaves the wrapper's
# first ones to the Python path
SPREAD_EVENTS = 2
cdef Py_ssize_t CSPREAD = SPREAD_EVENTS
cdef object ABSENT = object()       # a key missing from a dict (`LastEvent.cnoise`)
SCALARS = ("method", "alpha", "window", "t", "n", "head", "ki", "csat", "integral")
ARRAYS = ("gammas", "levels", "regret", "variance", "range", "ring", "sorted")


cdef inline Py_ssize_t csearch(const double* a, Py_ssize_t n, double v) noexcept:
    """The left insertion index of v in the sorted a[:n] (numpy's searchsorted).  Branch-free
    halving: a[base:base + n] holds the index, the comparison only picks the half (a
    conditional move, no mispredicted jump)."""
    cdef Py_ssize_t base = 0, half
    if n == 0:
        return 0
    while n > 1:
        half = n >> 1
        base = base + half if a[base + half] < v else base
        n -= half
    return base + (a[base] < v)


cdef inline double cquantile_of(const double* a, Py_ssize_t n, double beta) noexcept:
    """The ceil((n + 1) beta)-th smallest of the n sorted scores a: +inf past the n-th, -inf
    before the first.  ceil(x) > n is x > n and ceil(x) < 1 is x <= 0 (n an integer); between,
    the index is ceil(x) from its truncation (no call of `ceil`: the same index)."""
    cdef double x = (n + 1) * beta - INDEX_SLACK
    cdef Py_ssize_t j
    if x > n:
        return INFINITY
    if x <= 0.0:
        return -INFINITY
    j = <Py_ssize_t>x
    if j < x:
        j += 1
    return a[j - 1]


cdef inline double csaturation(double integral, Py_ssize_t t, double csat) noexcept:
    """tan(integral log(t + 1) / (csat (t + 1))), +-inf at and past +-pi/2."""
    cdef double x = integral * log(t + 1.0) / (csat * (t + 1.0))
    if x >= M_PI / 2:
        return INFINITY
    if x <= -M_PI / 2:
        return -INFINITY
    return tan(x)


@cython.final    # no subclass: its C methods are called directly (inlined)
cdef class Calibration:
    """The threshold of one conformal calibration and the state it learns from (see
    `okl._numpy.conformal.NumpyCalibration`, whose parameters it takes)."""

    cdef readonly int method
    cdef readonly double alpha, q, level, ki, csat, integral
    cdef readonly Py_ssize_t window, t, n, head, k
    cdef double[::1] gammas_, levels_, regret_, variance_, range_, ring_, sorted_, scratch, wbuf
    cdef double[::1] etas          # AgACI: each expert's eta, as the last `cweights` found it
    cdef double[::1] halves, ranges    # 1 / (2 range) of the range it was computed for (`cweights`)
    cdef double logk

    def __init__(self, method, double alpha, gammas, Py_ssize_t window, double ki=1.0,
                 double csat=1.0):
        self.method, self.alpha, self.window = int(method), alpha, window
        self.ki, self.csat, self.integral = ki, csat, 0.0
        g = np.array(gammas, dtype=np.float64)
        self.k = len(g)
        self.gammas_ = g
        self.levels_ = np.full(self.k, 0.0 if self.method in (QUANTILE, PID) else alpha)
        self.regret_, self.variance_, self.range_ = (np.zeros(self.k), np.zeros(self.k),
                                                     np.zeros(self.k))
        self.ring_, self.sorted_ = np.zeros(window), np.zeros(window)
        self.scratch, self.wbuf, self.etas = np.zeros(self.k), np.zeros(self.k), np.zeros(self.k)
        self.halves, self.ranges = np.zeros(self.k), np.full(self.k, np.nan)   # none computed
        self.logk = log(<double>self.k)
        self.t = self.n = self.head = 0
        self.crefresh()

    # -- the threshold ----------------------------------------------------------------------

    cdef double cquantile(self, double beta) noexcept:
        return cquantile_of(&self.sorted_[0], self.n, beta)

    cdef void cexperts(self, double* out) noexcept:
        cdef Py_ssize_t i
        if self.method == QUANTILE or self.method == PID:
            out[0] = self.q
            return
        for i in range(self.k):
            out[i] = self.cquantile(1.0 - self.levels_[i])

    cdef void cweights(self, double* w) noexcept:
        """The experts' weights into w; their etas into `etas` (the next `clearn` reads them:
        nothing the etas depend on changes in between).  An expert's eta is
        min(1 / (2 range), sqrt(log k / variance)), 0 before any variance; 1 / (2 range) is
        divided again only when its range moved (rarely, once warm)."""
        cdef Py_ssize_t i, k = self.k
        cdef double top = -INFINITY, total = 0.0, logk = self.logk, a, b, r, v
        cdef double* eta = &self.etas[0]
        cdef double* half = &self.halves[0]
        cdef double* seen = &self.ranges[0]
        cdef const double* regret = &self.regret_[0]
        cdef const double* variance = &self.variance_[0]
        cdef const double* spans = &self.range_[0]
        for i in range(k):
            v = variance[i]
            if v > 0.0:
                r = spans[i]
                if r != seen[i]:
                    half[i] = 1.0 / (2.0 * r)   # finite: range >= |r| > 0 once r^2 counted
                    seen[i] = r
                a = half[i]
                b = sqrt(logk / v)
                eta[i] = a if a < b else b      # fmin of two finite values, inlined
            else:
                eta[i] = 0.0
            w[i] = eta[i] * regret[i]
            if w[i] > top:                      # fmax: w is finite, top starts at -inf
                top = w[i]
        for i in range(k):
            # exp as the twin's, skipped where its value is exact: exp(0) = 1 (the top
            # expert) and 0 below -746 (an underflow)
            w[i] = 1.0 if w[i] == top else (0.0 if w[i] - top < -746.0 else exp(w[i] - top))
            total += w[i]
        for i in range(k):
            w[i] = w[i] / total

    cdef void crefresh(self) noexcept:
        cdef Py_ssize_t i
        cdef double level = 0.0, r
        cdef double* w = &self.wbuf[0]
        self.level = self.levels_[0]
        if self.method == AGACI:
            self.cweights(w)
            for i in range(self.k):
                level += w[i] * self.levels_[i]
            self.level = level
        if self.n == 0:
            self.q = INFINITY
        elif self.method == QUANTILE:
            self.q = self.levels_[0]
        elif self.method == PID:
            r = csaturation(self.integral, self.t, self.csat)
            if r == INFINITY or r == -INFINITY:
                self.q = r
            else:
                self.q = self.levels_[0] + self.ki * fmax(
                    fabs(self.sorted_[0]), fabs(self.sorted_[self.n - 1])) * r
        else:
            self.q = self.cquantile(1.0 - self.level)

    def threshold(self):
        """q_t: the threshold of the next event's prediction set."""
        return self.q

    def expert_thresholds(self):
        out = np.empty(self.k)
        cdef double[::1] o = out
        self.cexperts(&o[0])
        return out

    def weights(self):
        out = np.empty(self.k)
        cdef double[::1] o = out
        self.cweights(&o[0])
        return out

    # -- learning ---------------------------------------------------------------------------

    cdef void cinsert(self, double s, Py_ssize_t j) noexcept:
        """s joins the window (the oldest score leaves a full one) at j, its left insertion
        index in the sorted copy (among equal scores any place gives the same array); the
        sorted copy moves only the scores between the two positions (the twin removes, then
        inserts: the same array)."""
        cdef Py_ssize_t n = self.n, i
        cdef double* a = &self.sorted_[0]
        if n == self.window:
            i = csearch(a, n, self.ring_[self.head])
            if j > i:
                memmove(a + i, a + i + 1, (j - 1 - i) * sizeof(double))
                a[j - 1] = s
            else:
                memmove(a + j + 1, a + j, (i - j) * sizeof(double))
                a[j] = s
        else:
            memmove(a + j + 1, a + j, (n - j) * sizeof(double))
            a[j] = s
            self.n = n + 1
        self.ring_[self.head] = s
        self.head = (self.head + 1) % self.window

    cdef void clearn(self, double s) noexcept:
        """One event's score s (finite), taken before the model learned the event."""
        cdef Py_ssize_t i, j = csearch(&self.sorted_[0], self.n, s)
        cdef double alpha = self.alpha, level = self.level, err, beta, g, r, q
        cdef double* e = &self.scratch[0]
        cdef const double* a = &self.sorted_[0]
        cdef const double* eta = &self.etas[0]
        cdef const double* gammas = &self.gammas_[0]
        cdef double* levels = &self.levels_[0]
        cdef double* regret = &self.regret_[0]
        cdef double* variance = &self.variance_[0]
        cdef double* spans = &self.range_[0]
        cdef Py_ssize_t n = self.n
        if self.method == QUANTILE or self.method == PID:
            err = 1.0 if s > self.q else 0.0        # q_1 = inf: the first event is covered
            self.cinsert(s, j)
            if self.t == 0:
                self.levels_[0] = s
            else:
                self.levels_[0] += self.gammas_[0] * self.sorted_[self.n - 1] * (err - alpha)
            if self.method == PID:
                self.integral += err - alpha
        elif self.method == AGACI and self.n > 0:
            beta = 1.0 - j / (self.n + 1.0)         # s's rank: its left insertion index
            g = (1.0 if beta < level else 0.0) - alpha
            for i in range(self.k):     # one pass: each expert's regret, then its level
                q = cquantile_of(a, n, 1.0 - levels[i])
                r = g * (level - levels[i])
                regret[i] += r - eta[i] * r * r     # the last refresh's eta
                variance[i] += r * r
                if fabs(r) > spans[i]:              # fmax of finite values, inlined
                    spans[i] = fabs(r)
                levels[i] += gammas[i] * (alpha - (1.0 if s > q else 0.0))
            self.cinsert(s, j)
        else:
            self.cexperts(e)
            for i in range(self.k):
                self.levels_[i] += self.gammas_[i] * (alpha - (1.0 if s > e[i] else 0.0))
            self.cinsert(s, j)
        self.t += 1
        self.crefresh()

    def learn(self, double s):
        """One event's score s (finite), taken before the model learned the event."""
        self.clearn(s)

    def update(self, const double[::1] scores, double[::1] q_out):
        """Learn the scores in order; q_out[i] = the threshold event i was predicted with."""
        cdef Py_ssize_t i
        if q_out.shape[0] != scores.shape[0]:
            raise ValueError("q_out must have one entry per score")
        for i in range(scores.shape[0]):
            q_out[i] = self.q
            self.clearn(scores[i])

    # -- state ------------------------------------------------------------------------------

    def get_state(self):
        return {"method": self.method, "alpha": self.alpha, "window": self.window, "t": self.t,
                "n": self.n, "head": self.head, "ki": self.ki, "csat": self.csat,
                "integral": self.integral, "gammas": np.array(self.gammas_),
                "levels": np.array(self.levels_), "regret": np.array(self.regret_),
                "variance": np.array(self.variance_), "range": np.array(self.range_),
                "ring": np.array(self.ring_), "sorted": np.array(self.sorted_)}

    @classmethod
    def from_state(cls, state):
        cdef Calibration new = cls(state["method"], state["alpha"], state["gammas"],
                                   state["window"], state["ki"], state["csat"])
        new.t, new.n, new.head = state["t"], state["n"], state["head"]
        new.integral = state["integral"]
        new.levels_ = np.array(state["levels"], dtype=np.float64)
        new.regret_ = np.array(state["regret"], dtype=np.float64)
        new.variance_ = np.array(state["variance"], dtype=np.float64)
        new.range_ = np.array(state["range"], dtype=np.float64)
        new.ring_ = np.array(state["ring"], dtype=np.float64)
        new.sorted_ = np.array(state["sorted"], dtype=np.float64)
        new.crefresh()
        return new

    def __reduce__(self):
        return (_rebuild, (type(self), self.get_state()))

    def checkpoint(self, n=0):
        return self.get_state()

    def restore(self, token):
        cdef Calibration old = type(self).from_state(token)
        self.method, self.alpha, self.window, self.k = old.method, old.alpha, old.window, old.k
        self.ki, self.csat, self.integral = old.ki, old.csat, old.integral
        self.t, self.n, self.head = old.t, old.n, old.head
        self.gammas_, self.levels_, self.regret_ = old.gammas_, old.levels_, old.regret_
        self.variance_, self.range_, self.ring_ = old.variance_, old.range_, old.ring_
        self.sorted_, self.scratch, self.wbuf = old.sorted_, old.scratch, old.wbuf
        self.etas, self.logk = old.etas, old.logk
        self.halves, self.ranges = old.halves, old.ranges
        self.crefresh()

    def copy(self):
        return type(self).from_state(self.get_state())


def _rebuild(cls, state):
    return cls.from_state(state)


@cython.final    # no subclass: its C methods are called directly (inlined)
cdef class LastEvent:
    """The prediction `predict_one` / `predict_interval_one` made for the event x, kept for
    the `learn_one` of the same event, and the compiled one-event path of the wrapper.

    A kept prediction serves while x is the very object predicted (a dict unchanged since,
    by its version; a float64 row with the same values) and the learner has not changed
    (its `t_` and `_attr_version`, okl._one_event).  `fast`: the wrapper's one-event calls
    run here (the cython engine and an okl learner); else its Python methods do.  For the
    classifier, `proba(learner)` chooses the function giving the {label: probability} of an
    event (again when the learner or its `_attr_version` changes), and the kept prediction is
    that dict.
    """

    cdef ReentrantLock lock
    cdef readonly bint normalized, fast, valid
    cdef object x, t, version
    cdef object est, est_predict, est_learn     # the learner and its methods
    cdef dict est_dict                          # and its dict
    cdef unsigned long long dversion
    cdef object row                 # a float64 buffer of row_d values: the row predicted
    cdef double* row_data
    cdef Py_ssize_t row_d
    cdef double f, a, b
    cdef object proba, kept         # the classifier's probabilities: the chooser, the dict
    cdef object proba_est, proba_version, proba_fn
    cdef object std_step, std_est   # a step with predict_std, of a learner with _noise_value
    cdef object noise_est, noise_param, noise_fit   # `cnoise`: the objects its value is of
    cdef double noise
    cdef object events              # the last learner step found to be an Events (`cevents`)
    cdef object d_est, d_cal, d_t   # `cattrs`: the wrapper's estimator_, calibration_, t_
    cdef unsigned long long d_version   # when its dict was at this version (0: none)
    cdef object scored              # scored(learner): its probabilities are the softmax below
    cdef bint by_scores             # of the learner chosen
    cdef object classes, labels     # its classes_, as a list,
    cdef dict index                 # {label: position}
    cdef object pbuf                # the k probabilities of the event kept (`kept` None)
    cdef PyObject* pair             # the (lower, upper) returned last (`okl_conformal_pair`)
    cdef okl_slot_cache version_slot, step_slot     # `cslot`: the learner's two slots
    cdef double* pk
    cdef Py_ssize_t k, pk_n

    def __init__(self, ReentrantLock lock, bint normalized, bint fast, proba=None, scored=None):
        self.lock, self.normalized, self.fast, self.valid = lock, normalized, fast, False
        self.proba, self.scored = proba, scored
        self.row_d = -1
        self.pk_n = -1

    def __dealloc__(self):
        Py_XDECREF(self.pair)

    def invalidate(self):
        self.valid = False
        self.x = self.kept = None

    cdef inline void cbind(self, object est) except *:
        """Keep the learner's dict and bound methods (looked up again for another learner)."""
        if est is not self.est:
            self.est, self.est_dict = est, est.__dict__
            self.est_predict, self.est_learn = est.predict_one, est.learn_one

    cdef inline object cslot(self, object est, str name, okl_slot_cache* c):
        """getattr(est, name, None) for one of the learner's slots, read in C (`okl_slot`)."""
        cdef PyObject* out
        if okl_slot(est, name, c, &out):
            return None if out == NULL else <object>out
        return getattr(est, name, None)

    cdef inline object ct(self):
        """The learner's t_ (None before it has one)."""
        cdef PyObject* t = PyDict_GetItemWithError(self.est_dict, "t_")    # str keys: no error
        return None if t == NULL else <object>t

    cdef void cstore(self, object x, object est, double f, double a, double b) except *:
        cdef cnp.ndarray arr
        cdef Py_ssize_t d
        self.valid = False
        self.x = None
        version = self.cslot(est, "_attr_version", &self.version_slot)
        if version is None:
            return
        self.cbind(est)
        if type(x) is dict:
            self.dversion = dict_version(<dict>x)
            if self.dversion == 0:
                return
        elif type(x) is cnp.ndarray:
            arr = <cnp.ndarray>x
            if not (cnp.PyArray_NDIM(arr) == 1 and cnp.PyArray_TYPE(arr) == cnp.NPY_DOUBLE
                    and cnp.PyArray_IS_C_CONTIGUOUS(arr)):
                return
            d = cnp.PyArray_DIM(arr, 0)
            if d != self.row_d:
                self.row = np.empty(d)
                self.row_data = <double*>cnp.PyArray_DATA(<cnp.ndarray>self.row)
                self.row_d = d
            memcpy(self.row_data, cnp.PyArray_DATA(arr), d * sizeof(double))
            self.dversion = 0
        else:
            return
        self.x, self.t, self.version = x, self.ct(), version
        self.f, self.a, self.b = f, a, b
        self.valid = True

    def store(self, x, est, double f, double a, double b):
        self.cstore(x, est, f, a, b)

    cdef bint cmatch(self, object x, object est) except -1:
        cdef cnp.ndarray arr
        cdef Py_ssize_t d
        if not self.valid or x is not self.x or est is not self.est:
            return False
        if self.ct() is not self.t or self.cslot(est, "_attr_version", &self.version_slot) is not self.version:
            return False
        if type(x) is dict:
            return dict_version(<dict>x) == self.dversion
        arr = <cnp.ndarray>x
        d = cnp.PyArray_DIM(arr, 0) if cnp.PyArray_NDIM(arr) == 1 else -1
        return (d == self.row_d and cnp.PyArray_TYPE(arr) == cnp.NPY_DOUBLE
                and cnp.PyArray_IS_C_CONTIGUOUS(arr)
                and memcmp(self.row_data, cnp.PyArray_DATA(arr), d * sizeof(double)) == 0)

    def match(self, x, est):
        """(f, a, b) kept for x, or None."""
        return (self.f, self.a, self.b) if self.cmatch(x, est) else None

    cdef void cchoose(self, object est) except *:
        """The probability function of this learner (chosen again when it or its
        `_attr_version` changes), and whether `cscores` serves it."""
        version = self.cslot(est, "_attr_version", &self.version_slot)
        if est is not self.proba_est or version is None or version is not self.proba_version:
            self.proba_fn = self.proba(est)
            self.by_scores = self.scored is not None and bool(self.scored(est))
            self.proba_est, self.proba_version = est, version

    cpdef dict proba_one(self, object est, object x):
        """{label: probability} of the event x by the learner est."""
        self.cchoose(est)
        return self.proba_fn(x)

    cdef bint cscores(self, object est, object x) except -1:
        """The k probabilities of x into `pk` from the compiled step's scores
        (`decision_ready`), as the learner's `_event_proba` gives them (the logistic of one
        margin; exp(f - max f) over their sum, added in order): 1, or
        0 when declined (no compiled step, a score not finite, an unexpected shape).  k > 2
        scores are written straight into `pk` when the step can (`cdecision`)."""
        cdef cnp.ndarray arr
        cdef Py_ssize_t j, k
        cdef double v
        cdef Events step
        self.valid = False
        found = self.cevents(est)
        if found is None:
            return False
        step = <Events>found
        classes = self.est_dict.get("classes_")
        if classes is None:
            return False
        if classes is not self.classes:
            labels = est._labels_list()
            self.index = {label: j for j, label in enumerate(labels)}
            self.labels, self.classes = labels, classes
        k = len(self.labels)
        if k != self.pk_n:
            self.pbuf = np.empty(k)
            self.pk = <double*>cnp.PyArray_DATA(<cnp.ndarray>self.pbuf)
            self.pk_n = k
        r = self.cdecision(step, est, x, self.pk if k > 2 else NULL, k)
        if r is None:
            return False
        if r is True:                   # the k scores are in pk
            return self.csoftmax(self.pk, k)
        if k == 1:
            self.pk[0] = 1.0
        elif PyFloat_Check(r):
            v = PyFloat_AS_DOUBLE(r)
            if k != 2 or not isfinite(v):
                return False
            v = 1.0 / (1.0 + exp(-v))
            self.pk[0], self.pk[1] = 1.0 - v, v
        elif type(r) is cnp.ndarray:
            arr = <cnp.ndarray>r
            if not (cnp.PyArray_NDIM(arr) == 1 and cnp.PyArray_DIM(arr, 0) == k
                    and cnp.PyArray_TYPE(arr) == cnp.NPY_DOUBLE
                    and cnp.PyArray_IS_C_CONTIGUOUS(arr)):
                return False
            memcpy(self.pk, cnp.PyArray_DATA(arr), k * sizeof(double))
            return self.csoftmax(self.pk, k)
        else:
            return False
        self.k = k
        return True

    cdef bint csoftmax(self, double* f, Py_ssize_t k) noexcept:
        """The k scores in f, in place, to exp(f - max f) over their sum (added in order):
        1, or 0 when a score is not finite."""
        cdef Py_ssize_t j
        cdef double top = f[0], total = 0.0
        for j in range(k):
            if not isfinite(f[j]):
                return False
            if f[j] > top:
                top = f[j]
        for j in range(k):
            f[j] = exp(f[j] - top)
            total += f[j]
        for j in range(k):
            f[j] = f[j] / total
        self.k = k
        return True

    cdef object cdecision(self, Events step, object est, object x, double* out, Py_ssize_t k):
        """`Events.decision_ready(est, x)` as C calls (the row, the check and the scores under
        the learner's lock; no method lookup): f(x) or the k scores, None when declined; True
        when the step wrote its k scores into `out` (not NULL: `Events.cpredict_into`)."""
        cdef dict attrs = self.est_dict
        if step.serves == NOTHING or step.lock is None:
            return None
        step.lock.cacquire()
        try:
            row = step.crow(attrs, x)
            if row is None or not step.cstill(est, attrs):
                return None
            if out != NULL and step.cpredict_into(attrs, row, out, k) == k:
                return True
            return step.cpredict(attrs, row)
        finally:
            step.lock.crelease()

    cdef double cprob(self, object y) except? -1.0:
        """The probability kept in `pk` for the label y (0 for a label not known)."""
        j = self.index.get(y)
        return 0.0 if j is None else self.pk[<Py_ssize_t>j]

    cdef object cpredict_set(self, dict d, object x):
        """The set of one event under the wrapper's lock (None: the Python path takes it);
        its probabilities are kept for the `learn_one` of the same event."""
        cdef double q
        cdef Py_ssize_t j
        self.cattrs(d)
        est, cal = self.d_est, self.d_cal
        if type(cal) is not Calibration or est is None:
            return None
        self.lock.cacquire()
        try:
            self.cbind(est)
            self.cchoose(est)
            q = (<Calibration>cal).q
            if self.by_scores and self.cscores(est, x):
                self.cstore(x, est, 0.0, 0.0, 0.0)
                out = set()
                for j in range(self.k):
                    if 1.0 - self.pk[j] <= q:
                        out.add(self.labels[j])
                return out
            proba = self.proba_fn(x)
            self.cstore(x, est, 0.0, 0.0, 0.0)
            self.kept = proba
            return {c for c, p in proba.items() if 1.0 - p <= q}
        finally:
            self.lock.crelease()

    def store_proba(self, x, est, dict kept):
        self.cstore(x, est, 0.0, 0.0, 0.0)
        self.kept = kept

    def match_proba(self, x, est):
        """The probabilities kept for x as a dict, or None."""
        if not self.cmatch(x, est):
            return None
        if self.kept is None:
            return {self.labels[j]: self.pk[j] for j in range(self.k)}
        return self.kept

    cdef int clearn_label(self, dict d, object x, object y) except -1:
        """Learn one labelled event: 1, or 0 when declined before any write (the Python path
        takes it)."""
        cdef double s
        cdef unsigned long long v = self.cattrs(d)
        est, cal, t = self.d_est, self.d_cal, self.d_t
        if type(cal) is not Calibration or est is None or type(t) is not int:
            return 0
        self.lock.cacquire()
        try:
            self.cbind(est)
            if self.cmatch(x, est):
                s = 1.0 - (self.cprob(y) if self.kept is None else <double>self.kept.get(y, 0.0))
            else:
                self.cchoose(est)
                if self.by_scores and self.cscores(est, x):
                    s = 1.0 - self.cprob(y)
                else:
                    s = 1.0 - <double>self.proba_fn(x).get(y, 0.0)
            return self.ccommit(d, est, cal, t, x, y, s, v)
        finally:
            self.lock.crelease()

    cdef void cprediction(self, object est, object x, double* f, double* a) except *:
        """f(x), and sigma(x) for normalised scores (else 1): from the learner's compiled
        step (`cstep`), else its `predict_one`."""
        if not self.cstep(est, x, f, a):
            if self.normalized:
                r = self.est_predict(x, return_std=True)
                f[0], a[0] = r[0], r[1]
            else:
                f[0], a[0] = self.est_predict(x), 1.0

    cdef bint cstep(self, object est, object x, double* f, double* a) except -1:
        """f(x) and sigma(x) from the learner's compiled one-event step, the very call its
        own `predict_one` makes: 1, or 0 when the step declines.  sigma(x) is then
        KernelRLSRegressor's ``predict_one(x, return_std=True)``: its step's mean and
        variance of f(x) on the row in one C call (`Events.cpredict_std`, held for the learn
        of the same row), sqrt(scale (noise + variance)), as computed there."""
        cdef Events step
        cdef dict attrs
        cdef double sf2, scale
        found = self.cevents(est)
        if found is None:
            return False
        step = <Events>found
        if not self.normalized:
            r = step.predict_ready(est, x)
            if type(r) is not float:                # MISS
                return False
            f[0], a[0] = PyFloat_AS_DOUBLE(r), 1.0
            return True
        if found is not self.std_step or est is not self.std_est:     # checked once
            if not (hasattr(found, "predict_std") and hasattr(est, "_noise_value")):
                return False
            self.std_step, self.std_est = found, est
        if step.serves != TARGETS or step.lock is None:
            return False
        attrs = self.est_dict
        step.lock.cacquire()
        try:
            row = step.crow(attrs, x)
            if row is None or not step.cstill(est, attrs):
                return False
            if not step.cpredict_std(attrs, row, f, &sf2, &scale):
                return False
            a[0] = sqrt(scale * (self.cnoise(est, attrs) + sf2))
            return True
        finally:
            step.lock.crelease()

    cdef double cnoise(self, object est, dict attrs) except? -1.0:
        """KernelRLSRegressor's `_noise_value()`: called again only when the learner, or the
        object its `noise` or `noise_` holds, is another one (the value is of those alone,
        and floats do not change)."""
        cdef PyObject* p = PyDict_GetItem(attrs, "noise")
        cdef PyObject* n = PyDict_GetItem(attrs, "noise_")
        param = ABSENT if p == NULL else <object>p
        fit = ABSENT if n == NULL else <object>n
        if est is not self.noise_est or param is not self.noise_param or fit is not self.noise_fit:
            self.noise = <double>est._noise_value()
            self.noise_est, self.noise_param, self.noise_fit = est, param, fit
        return self.noise

    cdef inline unsigned long long cattrs(self, dict d):
        """The wrapper's estimator_, calibration_ and t_ into d_est, d_cal, d_t, read from its
        dict d again only when d changed since (its version, which it returns; a change
        `ccommit` made itself is known)."""
        cdef unsigned long long v = dict_version(d)
        if v == 0 or v != self.d_version:
            self.d_est, self.d_cal = d.get("estimator_"), d.get("calibration_")
            self.d_t = d.get("t_")
            self.d_version = v
        return v

    cdef inline object cevents(self, object est):
        """The learner's compiled one-event step (an `Events`), or None (the type check made
        once per step)."""
        found = self.cslot(est, "_one_event_step", &self.step_slot)
        if found is self.events or found is None:
            return found
        if not isinstance(found, Events):
            return None
        self.events = found
        return found

    cdef int ccommit(self, dict d, object est, object cal, object t, object x, object y,
                     double s, unsigned long long v) except -1:
        """The write of `clearn` / `clearn_label` (under the wrapper's lock, the event's score
        s taken): the kept prediction dropped, the learner learns (x, y) (its compiled step's
        call, as its `learn_one` makes it, else that method), then the threshold and t_.  A
        learner that raises leaves everything as it was; one that raises once it has learned
        the event (a Ctrl-C in its last Python lines) has the threshold and t_ follow it
        before the exception goes on.  v: the version of d when est, cal and t were read from
        it (`cattrs`)."""
        cdef unsigned long long before
        self.valid = False
        self.x = self.kept = None
        after = t + 1
        learned = (<dict>self.est_dict).get("t_")
        try:
            if not self.clearn_step(self.cevents(est), est, x, y):
                self.est_learn(x, y)
        except BaseException:
            if (<dict>self.est_dict).get("t_") != learned:     # the learner took it
                (<Calibration>cal).clearn(s)
                d["t_"] = after
                self.d_version = 0
            raise
        (<Calibration>cal).clearn(s)            # C only: no signal lands in between
        before = dict_version(d)
        d["t_"] = after
        if before != 0 and before == v:         # d held est, cal and t until this write
            self.d_est, self.d_cal, self.d_t = est, cal, after
            self.d_version = dict_version(d)
        else:
            self.d_version = 0
        return 1

    cdef bint clearn_step(self, object found, object est, object x, object y) except -1:
        """`Events.learn_ready(est, x, y, 1.0)` of the learner's step `found` (None: none) as
        C calls on the learner's dict kept by `cbind` (no attribute lookup): True when
        learned, False when declined without a write."""
        cdef Events step
        cdef double target = 0.0
        if found is None:
            return False
        step = <Events>found
        if step.serves == NOTHING or step.lock is None:
            return False
        if step.serves == TARGETS:
            if type(y) is not float:
                return step.learn_ready(est, x, y, 1.0)
            target = PyFloat_AS_DOUBLE(y)
            if not isfinite(target):
                return False
        return step.clearn_locked(est, self.est_dict, x, y, target) == 1

    cdef object cpredict(self, dict d, object x, bint interval):
        """f, or the interval (lower, upper), for one event, under the wrapper's lock."""
        cdef double f, a, q, lo, hi
        self.cattrs(d)
        est, cal = self.d_est, self.d_cal
        if type(cal) is not Calibration or est is None:
            return None
        self.lock.cacquire()
        try:
            self.cbind(est)
            self.cprediction(est, x, &f, &a)
            self.cstore(x, est, f, a, a)
            if not interval:
                return f
            q = (<Calibration>cal).q
            if q == INFINITY:
                return okl_conformal_pair(&self.pair, -INFINITY, INFINITY)
            lo, hi = f - q * a, f + q * a
            if not lo <= hi:
                return okl_conformal_pair(&self.pair, f, f)
            return okl_conformal_pair(&self.pair, lo, hi)
        finally:
            self.lock.crelease()

    cdef int clearn(self, dict d, object x, object y) except -1:
        """Learn one event (y a finite float): 1, or 0 when declined before any write (the
        Python path takes it)."""
        cdef double f, a, s
        cdef unsigned long long v = self.cattrs(d)
        est, cal, t = self.d_est, self.d_cal, self.d_t
        if type(cal) is not Calibration or est is None or type(t) is not int:
            return 0
        if self.normalized and <Py_ssize_t>t < CSPREAD:   # the learner's t_ decides there
            return 0
        self.lock.cacquire()
        try:
            self.cbind(est)
            if self.cmatch(x, est):
                f, a = self.f, self.a
            else:
                self.cprediction(est, x, &f, &a)
            s = fabs(PyFloat_AS_DOUBLE(y) - f) / fmax(a, 1e-300)
            if not isfinite(s):
                return 0
            return self.ccommit(d, est, cal, t, x, y, s, v)
        finally:
            self.lock.crelease()

def learn_one(self, x, y, sample_weight=1.0):
    """Predict (or take the prediction kept for x), then learn one event: the learner and the
    threshold; returns None.  `okl.conformal.ConformalRegressor.learn_one`, compiled."""
    cdef dict d = PyObject_GenericGetDict(self, NULL)     # no attribute lookup
    last = d.get("_last")
    if (type(last) is LastEvent and (<LastEvent>last).fast
            and (type(y) is float or type(y) is int and -2 ** 53 <= y <= 2 ** 53)
            and (type(sample_weight) is float and sample_weight == 1.0
                 or type(sample_weight) is int and sample_weight == 1)
            and isfinite(<double>y)
            and (<LastEvent>last).clearn(d, x, y if type(y) is float else float(y))):
        return None
    self._learn_one_python(x, y, sample_weight)


def learn_one_label(self, x, y, sample_weight=1.0):
    """Take the probabilities of x (or those kept for x), then learn one event: the learner
    and the threshold; returns None.  `okl.conformal.ConformalClassifier.learn_one`,
    compiled."""
    cdef dict d = PyObject_GenericGetDict(self, NULL)     # no attribute lookup
    last = d.get("_last")
    if (type(last) is LastEvent and (<LastEvent>last).fast
            and (type(sample_weight) is float and sample_weight == 1.0
                 or type(sample_weight) is int and sample_weight == 1)
            and (<LastEvent>last).clearn_label(d, x, y)):
        return None
    self._learn_one_python(x, y, sample_weight)


def predict_set_one(self, x):
    """The set of labels for one event (empty before any learning); its probabilities are
    kept for the `learn_one` of the same event.  `okl.conformal.ConformalClassifier
    .predict_set_one`, compiled."""
    cdef dict d = PyObject_GenericGetDict(self, NULL)     # no attribute lookup
    last = d.get("_last")
    if type(last) is LastEvent and (<LastEvent>last).fast:
        out = (<LastEvent>last).cpredict_set(d, x)
        if out is not None:
            return out
    return self._predict_set_python(x)


def predict_one(self, x):
    """The learner's prediction for one event (0 before any learning); kept for the
    `learn_one` of the same event."""
    cdef dict d = PyObject_GenericGetDict(self, NULL)     # no attribute lookup
    last = d.get("_last")
    if type(last) is LastEvent and (<LastEvent>last).fast:
        out = (<LastEvent>last).cpredict(d, x, False)
        if out is not None:
            return out
    return self._predict_one_python(x)


def predict_interval_one(self, x):
    """(lower, upper) for one event ((-inf, inf) before any learning); the prediction is kept
    for the `learn_one` of the same event."""
    cdef dict d = PyObject_GenericGetDict(self, NULL)     # no attribute lookup
    last = d.get("_last")
    if type(last) is LastEvent and (<LastEvent>last).fast:
        out = (<LastEvent>last).cpredict(d, x, True)
        if out is not None:
            return out
    return self._predict_interval_python(x)
