"""Platt's scaling learned online, one event at a time, compiled (`okl.river.OnlinePlatt`),
and the river classifier's one-event calls (`RiverClassifierCore`).

The rule is written out in plain Python in tests/test_river.py (`ReferencePlatt`, and
`reference_softmax` for the k scores): the same arithmetic in the same order, and the test
checks the same (A, B) and probabilities to the last bit.
"""
cimport cython
cimport numpy as cnp
from libc.math cimport NAN, exp, isfinite

from cpython.object cimport PyObject

from okl._core._event cimport dict_version
from okl._core._pointwise cimport Events, LABELS, NOTHING

cnp.import_array()

cdef extern from *:
    """
    /* An object's instance dict without the attribute lookup of `__dict__` (NULL where
       CPython's private pointer is not used: the caller then looks it up). */
    #if PY_VERSION_HEX < 0x030E0000 && !defined(PYPY_VERSION)
    static inline PyObject* okl_instance_dict(PyObject* o) {
        PyObject** slot = _PyObject_GetDictPtr(o);
        return (slot != NULL && *slot != NULL && PyDict_CheckExact(*slot)) ? *slot : NULL;
    }
    #else
    static inline PyObject* okl_instance_dict(PyObject* o) { (void)o; return NULL; }
    #endif
    """
    PyObject* okl_instance_dict(object o)


cdef inline dict attrs_of(object est):
    """est.__dict__ (read through the instance's dict pointer where CPython has one)."""
    cdef PyObject* found = okl_instance_dict(est)
    if found != NULL:
        return <dict>found
    return est.__dict__


cdef inline double csigmoid(double z) noexcept nogil:
    """1 / (1 + e^-z) without overflow."""
    cdef double e
    if z >= 0.0:
        return 1.0 / (1.0 + exp(-z))
    e = exp(z)
    return e / (1.0 + e)


cdef class OnlinePlatt:
    """P(y = positive | f) = sigmoid(A f + B), fitted online to a stream of margins.

    Platt's scaling (1999) learned one event at a time: each event's margin
    f, taken before the model learns the event (an out-of-sample score, as
    Platt's held-out set), gives one Newton step on the logistic loss of
    (A, B) against Platt's regularised target (N+ + 1) / (N+ + 2) for a
    positive label, 1 / (N- + 2) for a negative one.  The curvature is
    accumulated with a forgetting factor, so that (A, B) follow the margins of
    a model that is still learning.  Starts at (A, B) = (1, 0): sigmoid(f).

    Parameters
    ----------
    lam : float, default=1.0
        Ridge weight pulling (A, B) towards (1, 0): it damps the first steps.
    memory : float, default=1000.0
        Events the curvature remembers (forgetting factor 1 - 1 / memory).

    References
    ----------
    J. C. Platt, "Probabilistic outputs for support vector machines and
    comparisons to regularized likelihood methods", in Advances in Large
    Margin Classifiers, MIT Press, 1999.  See docs/streaming.md, "Probabilities
    of hinge models".
    """
    cdef public double lam, memory, A, B
    cdef public long long n_positive, n_negative
    cdef double h0, h1, h2          # curvature: sum of p (1 - p) (f^2, f, 1), forgetting

    def __init__(self, double lam=1.0, double memory=1000.0):
        self.lam, self.memory = lam, memory
        self.A, self.B = 1.0, 0.0
        self.h0 = self.h1 = self.h2 = 0.0
        self.n_positive = self.n_negative = 0

    @property
    def h(self):
        """The curvature [sum p (1 - p) f^2, ... f, ... 1] (with forgetting)."""
        return [self.h0, self.h1, self.h2]

    @h.setter
    def h(self, value):
        self.h0, self.h1, self.h2 = value

    cpdef double proba(self, double f):
        """P(positive | margin f)."""
        return csigmoid(self.A * f + self.B)

    cpdef learn(self, double f, bint positive, double w=1.0):
        """One weighted Newton step on the event (f, positive); a non-finite f or a weight
        <= 0 teaches nothing."""
        self.cstep(f, positive, w, csigmoid(self.A * f + self.B))

    cdef void cstep(self, double f, bint positive, double w, double p) noexcept:
        """`learn` given p = `proba` (f) (a kept probability, the same bits)."""
        cdef double target, keep, c, ga, gb, haa, hab, hbb, det
        if not (isfinite(f) and w > 0.0):
            return
        if positive:
            target = (self.n_positive + 1.0) / (self.n_positive + 2.0)
            self.n_positive += 1
        else:
            target = 1.0 / (self.n_negative + 2.0)
            self.n_negative += 1
        keep, c = 1.0 - 1.0 / self.memory, w * p * (1.0 - p)
        self.h0 = keep * self.h0 + c * f * f
        self.h1 = keep * self.h1 + c * f
        self.h2 = keep * self.h2 + c
        # a recursive Newton step: (A, B) minimised the past losses plus
        # lam / 2 ||(A, B) - (1, 0)||^2; the new loss adds its gradient, and its
        # curvature joins the Hessian of the past
        ga, gb = w * (p - target) * f, w * (p - target)
        haa, hab, hbb = self.h0 + self.lam, self.h1, self.h2 + self.lam
        det = haa * hbb - hab * hab
        self.A -= (hbb * ga - hab * gb) / det
        self.B -= (haa * gb - hab * ga) / det

    def state(self):
        """(lam, memory, A, B, h, n_positive, n_negative)."""
        return (self.lam, self.memory, self.A, self.B, self.h, self.n_positive,
                self.n_negative)

    def __reduce__(self):
        return (_rebuild, self.state())

    def __eq__(self, other):
        return type(other) is type(self) and self.state() == other.state()


cdef object step_score(object est, dict attrs, object x):
    """f(x) (or the k scores) from the learner's compiled step (attrs: the learner's
    ``__dict__``), `Events.decision_ready` as C calls (the row, the check and the prediction
    under the learner's lock); None when the step declines x."""
    cdef Events step
    found = getattr(est, "_one_event_step", None)
    if isinstance(found, Events):
        step = <Events>found
        if step.serves != NOTHING and step.lock is not None:
            step.lock.cacquire()
            try:
                row = step.crow(attrs, x)
                if row is not None and step.cstill(est, attrs):
                    return step.cpredict(attrs, row)
            finally:
                step.lock.crelease()
    return None


cdef object score(object est, dict attrs, object x):
    """f(x) (or the k scores) of the learner (``__dict__`` attrs): its compiled step's
    (`step_score`), else its own `_score_one`."""
    f = step_score(est, attrs, x)
    return est._score_one(x) if f is None else f


cdef learn(object est, dict attrs, object x, object y, bint own):
    """est.learn_one(x, y) (attrs: est's ``__dict__``); `own`: est's learn_one is the
    compiled `okl._core._pointwise.learn_one`, whose step is taken here as
    `Events.clearn_locked` for a label of weight 1 (the row, the check, the label's code and
    the step under the learner's lock); what it declines goes to est.learn_one, which
    declines it again without a write and takes the adapter."""
    cdef Events step
    if own:
        found = getattr(est, "_one_event_step", None)
        if isinstance(found, Events):
            step = <Events>found
            if (step.serves == LABELS and step.lock is not None
                    and step.clearn_locked(est, attrs, x, y, 0.0) == 1):
                return
    est.learn_one(x, y)


cdef class KeptMargin:
    """The margin f of the event x that `predict_one` / `predict_proba_one` took, for the
    learn_one of x that follows: kept with x, its version and the version of the learner's
    ``__dict__`` (PEP 509: a change of x, a step or any attribute binding gives another),
    used once.  Nothing is kept where CPython keeps no versions or for an event that is
    not a dict.  Never pickled (the wrapper makes a new one)."""
    cdef object x, est
    cdef unsigned long long xv, ev
    cdef double f
    # the Platt probability of f that predict_proba_one gave and the (A, B) it was of (p NaN
    # for none): sigmoid(a f + b), a function of the three alone (kept after f is used)
    cdef double p, a, b

    cdef void keep(self, object est, dict attrs, object x, double f, double p=NAN,
                   double a=0.0, double b=0.0):
        """Keep f, the margin of x on est (whose ``__dict__`` is attrs), and p = sigmoid(a f
        + b), its probability under the Platt scaling (a, b)."""
        cdef unsigned long long xv = 0, ev = 0
        if type(x) is dict:
            xv, ev = dict_version(<dict>x), dict_version(attrs)
        if xv == 0 or ev == 0:
            self.x = self.est = None
            return
        self.x, self.est, self.xv, self.ev, self.f = x, est, xv, ev, f
        self.p, self.a, self.b = p, a, b

    cdef object margin(self, object est, dict attrs, object x):
        """The kept margin of x on the unchanged learner est (``__dict__`` attrs), else
        `score`."""
        if (self.x is not None and self.x is x and self.est is est
                and self.xv == dict_version(<dict>x)
                and self.ev == dict_version(attrs)):
            self.x = self.est = None
            return self.f
        return score(est, attrs, x)

    cdef double proba(self, OnlinePlatt platt, double f) noexcept:
        """platt's probability of f: the kept one when it is of the same f and (A, B) (the
        same bits as computing it again), else computed."""
        if self.p == self.p and self.f == f and self.a == platt.A and self.b == platt.B:
            return self.p
        return csigmoid(platt.A * f + platt.B)


def softmax(list labels, object scores):
    """{label: probability}: the softmax of the k scores (a 1-D float64 C-contiguous array),
    exp(s - max s) / their sum, with the C library's exp, summed in order; a NaN score gives
    NaN everywhere."""
    cdef const double* v
    cdef Py_ssize_t i, k
    cdef double top, total = 0.0
    if not (type(scores) is cnp.ndarray and cnp.PyArray_NDIM(<cnp.ndarray>scores) == 1
            and cnp.PyArray_TYPE(<cnp.ndarray>scores) == cnp.NPY_DOUBLE
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>scores)):
        raise TypeError("the scores must be a 1-D float64 C-contiguous array.")
    k = cnp.PyArray_DIM(<cnp.ndarray>scores, 0)
    if k != len(labels) or k == 0:
        raise ValueError(f"{k} scores for {len(labels)} labels.")
    v = <const double*>cnp.PyArray_DATA(<cnp.ndarray>scores)  # no memoryview: dearer than the loop
    top = v[0]
    for i in range(1, k):
        if not v[i] <= top:         # a larger score, or a NaN (which stays)
            top = v[i]
    for i in range(k):
        total += exp(v[i] - top)
    return {labels[i]: exp(v[i] - top) / total for i in range(k)}


@cython.auto_pickle(False)
cdef class RiverClassifierCore:
    """What `okl.river.RiverClassifier` reads on every event, in one compiled object (its
    first base): the learner, its Platt scaling, the wrapper's flags, the labels' cache, the
    first label and the kept margin are C fields, and `learn_one`, `predict_one` and
    `predict_proba_one` are one compiled call each.  The wrapper pickles and clones
    through its own ``__getstate__`` / ``__setstate__`` and ``clone``; a new or unpickled
    wrapper keeps no margin."""
    cdef public object estimator, platt, _first_label
    cdef public bint _direct, _own_step
    cdef public tuple _labels       # classes_ and classes_.tolist() (river's dict keys)
    cdef KeptMargin margin          # predict's margin, for learn_one

    def __cinit__(self, *args, **kwargs):
        self.margin = KeptMargin()
        self._labels = (None, [])

    cdef list labels_of(self, object classes):
        """classes_ as plain Python values (the wrapper's `_labels_of`, cached)."""
        if self._labels[0] is classes:
            return self._labels[1]
        return self._labels_of(classes)

    cdef Py_ssize_t n_classes(self, object classes) except -1:
        """len(classes_) (its labels' cache's, when it is of classes)."""
        if self._labels[0] is classes:
            return len(self._labels[1])
        return len(classes)

    def learn_one(self, x, y, w=1.0):
        """Learn one event with the learner's own `learn_one`; with a Platt scaling and two
        classes, the event's margin, taken first, teaches the scaling after the learner took
        the event (a bad event raises and changes nothing).  A weight other than 1 or a
        wrapper that drops unknown keys take the wrapper's `_learn_event`."""
        cdef dict attrs
        cdef bint positive
        if not ((w is 1.0 or type(w) is float and <double>w == 1.0) and self._direct):
            self._learn_event(x, y, w)
            return
        est = self.estimator
        platt = self.platt
        attrs = attrs_of(est)
        classes = attrs.get("classes_") if type(platt) is OnlinePlatt else None
        if classes is not None and self.n_classes(classes) == 2:
            f = self.margin.margin(est, attrs, x)
            positive = y == self.labels_of(classes)[1]      # before any write
            learn(est, attrs, x, y, self._own_step)
            (<OnlinePlatt>platt).cstep(f, positive, 1.0, self.margin.proba(platt, f))
        else:
            learn(est, attrs, x, y, self._own_step)
        if self._first_label is None:
            self._first_label = y

    def predict_one(self, x, **kwargs):
        """The learner's own `predict_one`, or the adapter's for a wrapper that drops unknown
        keys.  With a Platt scaling and two classes, the label of the compiled step's margin
        f (classes_[f > 0], as the step's own label), the margin kept for the learn_one of x
        that follows (`KeptMargin`)."""
        cdef dict attrs
        if not self._direct:
            return self._events.predict_one(x)
        est = self.estimator
        attrs = attrs_of(est)
        classes = attrs.get("classes_")
        if (type(self.platt) is OnlinePlatt and classes is not None
                and self.n_classes(classes) == 2):
            f = step_score(est, attrs, x)
            if type(f) is float:
                self.margin.keep(est, attrs, x, f)      # for the learn_one of x that follows
                return self.labels_of(classes)[<double>f > 0.0]
        return est.predict_one(x)

    def predict_proba_one(self, x, **kwargs):
        """{label: probability} from the learner's compiled score (the Platt scaling of the
        margin with two classes, the softmax of the k scores, or the model's own
        `_event_proba`); the wrapper's `_proba_event` for the rest."""
        cdef Py_ssize_t k
        cdef double p
        cdef dict attrs
        est = self.estimator
        attrs = attrs_of(est)
        classes = attrs.get("classes_")
        if classes is not None and self._direct:
            k = self.n_classes(classes)
            platt = self.platt
            if type(platt) is OnlinePlatt and k == 2:
                f = score(est, attrs, x)
                p = csigmoid((<OnlinePlatt>platt).A * <double>f + (<OnlinePlatt>platt).B)
                self.margin.keep(est, attrs, x, f, p, (<OnlinePlatt>platt).A,
                                 (<OnlinePlatt>platt).B)   # for the learn_one of x that follows
                labels = self.labels_of(classes)
                return {labels[0]: 1.0 - p, labels[1]: p}
            if platt is None and k >= 2:
                event_proba = getattr(est, "_event_proba", None)
                if event_proba is not None:     # the model's own (loss="logistic")
                    return event_proba(score(est, attrs, x))
            elif platt is not None and k > 2:       # a ranking: the k scores' softmax
                return softmax(self.labels_of(classes), score(est, attrs, x))
        return self._proba_event(x)


def _rebuild(lam, memory, A, B, h, n_positive, n_negative):
    platt = OnlinePlatt(lam, memory)
    platt.A, platt.B, platt.h = A, B, h
    platt.n_positive, platt.n_negative = n_positive, n_negative
    return platt
