"""Forgetting and change detection in the step (docs/drift.md).

Every loop that adapts cimports the settings `Drift`, the state `DriftState` and `cwatch`
from here and calls `cwatch` once per step, with the loss `cdrift_loss` of the prediction
it just made; the NumPy twin is okl/_numpy/drift.py (same operations, same order).
Page-Hinkley's test is written here, not taken from river, because it runs inside the
nogil loop of a chunk: a change is acted on at the very step that shows it, so chunks and
single events give the same iterates, and its whole state is a few numbers that okl.save
keeps with the model.
"""
from libc.math cimport fabs, sqrt


cdef enum:
    DETECT_NONE = 0         # okl._numpy.codes.Detector.NONE
    DETECT_PAGE_HINKLEY = 1     # Detector.PAGE_HINKLEY


cdef struct Drift:
    int detector            # a Detector code
    double delta            # Page-Hinkley: the rise of the mean loss that is tolerated,
    double threshold        # and the rise of the cumulative sum that is a change, both in
    double floor            # standard deviations of the loss (at least `floor`)
    double min_events       # no change before this many events since the last one
    double forgetting       # every step: f <- forgetting f, tau <- forgetting tau + 1
    double keep             # at a change: f <- keep f, tau <- 1


cdef struct DriftState:
    double tau              # the schedule's clock (the steps taken, with neither)
    double n                # Page-Hinkley since the last change: events,
    double mean             # mean loss,
    double m2               # the sum of squared deviations from it,
    double cusum            # the sum of (loss - mean) / sd - delta,
    double low              # and its least value
    double changes          # the changes so far
    double pending          # 1: a detector outside the step saw a change; the next step takes it


cdef inline double cwatch(const Drift* d, const DriftState* st, double loss,
                          DriftState* out) noexcept nogil:
    """The state after a step of loss `loss` into `out`; returns the factor the model takes
    before the step (whose schedule runs on out.tau)."""
    cdef double n = st.n, mean = st.mean, m2 = st.m2, cusum = st.cusum, low = st.low
    cdef double tau = st.tau, changes = st.changes, factor, dev, sd
    cdef bint change = st.pending != 0.0
    if d.detector == DETECT_PAGE_HINKLEY:
        n += 1.0
        dev = loss - mean
        mean += dev / n
        m2 += dev * (loss - mean)
        sd = sqrt(m2 / n)
        if sd < d.floor:
            sd = d.floor
        cusum += (loss - mean) / sd - d.delta
        low = cusum if cusum < low else low
        change = change or (n >= d.min_events and cusum - low > d.threshold)
    factor = d.forgetting
    if change:
        n = mean = m2 = cusum = low = tau = 0.0
        changes += 1.0
        factor *= d.keep
    out.tau = d.forgetting * tau + 1.0
    out.n, out.mean, out.m2, out.cusum, out.low = n, mean, m2, cusum, low
    out.changes, out.pending = changes, 0.0
    return factor


cdef inline double cmistake(const double* s, Py_ssize_t y, Py_ssize_t k) noexcept nogil:
    """The loss watched on k scores: 1.0 when the first largest is not the true class's."""
    cdef Py_ssize_t j, best = 0
    for j in range(1, k):
        if s[j] > s[best]:
            best = j
    return 0.0 if best == y else 1.0


cdef inline double cdrift_loss(bint margin, double y, double f, double scale) noexcept nogil:
    """The loss Page-Hinkley watches: a mistake (y f <= 0) for a margin loss, |y - f| / scale
    for a residual one (scale: the targets' mean absolute deviation so far, 0 while none)."""
    if margin:
        return 1.0 if y * f <= 0.0 else 0.0
    return fabs(y - f) / scale if scale > 0.0 else 0.0


cdef inline bint cactive(const Drift* d) noexcept nogil:
    """Whether the step forgets or detects: otherwise tau stays the steps taken and the
    learner keeps no drift state."""
    return d.detector != DETECT_NONE or d.forgetting != 1.0


cdef inline int cread_drift(object state, double t, DriftState* out) except -1:
    """out = a learner's stored drift state (`_drift_state`, the 8 fields in order), or for
    None the clock at t with nothing detected."""
    if state is None:
        out.tau = t
        out.n = out.mean = out.m2 = out.cusum = out.low = out.changes = out.pending = 0.0
    else:
        (out.tau, out.n, out.mean, out.m2, out.cusum, out.low, out.changes,
         out.pending) = state
    return 0


cdef inline tuple cdrift_tuple(const DriftState* d):
    """The drift state as a learner stores it (`_drift_state`)."""
    return (d.tau, d.n, d.mean, d.m2, d.cusum, d.low, d.changes, d.pending)


cdef enum:
    DRIFT_FIELDS = 8        # okl._numpy.drift.FIELDS


cdef inline void cload(const double* a, DriftState* out) noexcept nogil:
    """out = the 8 fields of a loop's drift state array (IN/OUT, `okl._numpy.drift.FIELDS`)."""
    out.tau, out.n, out.mean, out.m2 = a[0], a[1], a[2], a[3]
    out.cusum, out.low, out.changes, out.pending = a[4], a[5], a[6], a[7]


cdef inline void cstore(const DriftState* d, double* a) noexcept nogil:
    """The drift state into a loop's array of its 8 fields."""
    a[0], a[1], a[2], a[3] = d.tau, d.n, d.mean, d.m2
    a[4], a[5], a[6], a[7] = d.cusum, d.low, d.changes, d.pending
