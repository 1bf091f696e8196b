"""One event for the pointwise kernel learners (docs/algorithms.md, sections 1-3): O(m d), no allocation.

`PointwiseEvents` serves one learner whose model is a `KernelExpansion`.
`predict` is f(x) for one row; `learn` predicts f_t(x_t), then takes the step
of the chunk loop in `_pointwise`,
    f_{t+1} = (1 - lam_t eta_t) f_t - eta_t w_t g_t K(x_t, .),
    b_{t+1} = b_t - eta_t w_t g_t            (with fit_intercept: NORMA's offset),
with the schedule of step t formed from a few floats (the formulas of
`okl.schedules`), and writes t_, ck2_, eta_, lam_, n_support_ back to the
estimator.  Every check (a non-finite row, a prediction or a coefficient that
would not be finite) comes before the first write, so a step that fails
leaves the model untouched and needs no undo.

"Predict, then learn" evaluates f_t(x_t) twice on the same model and row: the
last prediction is kept with a fingerprint of the model (t_, n_support,
scale, next_slot, n_rescale) and a copy of the row, and `learn` reuses it
when both match (the same floating-point value, computed once).
"""
import numpy as np
cimport numpy as cnp

from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_Size
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.long cimport PyLong_CheckExact
from cpython.object cimport PyObject
from libc.math cimport isfinite
from libc.string cimport memcmp, memcpy

from okl._core._kernels cimport cdot, cself
from okl._core._losses cimport Loss, LossSpec, cgradient
from okl._core._expansion cimport KernelExpansion

cnp.import_array()

cdef double SCALE_MIN = 1e-9
cdef double SCALE_MAX = 1e9


cdef inline bint row_is_finite(const double* x, Py_ssize_t d, double xx) noexcept nogil:
    cdef Py_ssize_t j
    if isfinite(xx):
        return True
    for j in range(d):                  # ||x||^2 overflowed, or x holds NaN/inf
        if not isfinite(x[j]):
            return False
    return True


cdef class PointwiseEvents:
    """One-event predict and learn for a pointwise learner and its expansion.

    Parameters
    ----------
    expansion : KernelExpansion
    loss_args : tuple
        (code, tau, eps, delta, p), the estimator's `_loss_args()`.
    lam, lam_decay : float
        lam_t = lam * t**-lam_decay.
    eta : float, "auto" or callable; eta_decay : float; lipschitz : float
        The step size as the estimator has it; "auto" is
        1 / ((lam_t + lipschitz C_K^2) t**eta_decay).
    name : str
        The estimator's class name, for error messages.
    key : object
        What the owner compares to know the parameters are unchanged.
    """
    cdef KernelExpansion expansion
    cdef LossSpec spec
    cdef bint auto, intercept
    cdef double lam, lam_decay, eta, eta_decay, lipschitz
    cdef object eta_callable, name
    cdef readonly object key
    cdef tuple names, values
    # t**-eta_decay and t**-lam_decay for a block of coming steps, from NumPy's power:
    # the very values the chunk path's schedule arrays hold (NumPy's vectorised pow may
    # differ from libm's in the last bit)
    cdef double[::1] eta_pows, lam_pows
    cdef Py_ssize_t block_lo, block_len
    # the last prediction and the model it was made on
    cdef double[::1] last_row
    cdef bint has_last
    cdef double last_f, last_xx, last_scale
    cdef Py_ssize_t last_t, last_n, last_slot, last_rescale

    def __init__(self, KernelExpansion expansion, tuple loss_args, double lam, double lam_decay,
                 eta, double eta_decay, double lipschitz, str name, key=None, tuple names=(),
                 bint fit_intercept=False):
        self.expansion = expansion
        code, tau, eps, delta, p = loss_args
        self.spec = LossSpec(<Loss><int>code, tau, eps, delta, p)
        self.lam, self.lam_decay, self.eta_decay = lam, lam_decay, eta_decay
        self.lipschitz = lipschitz
        self.auto = isinstance(eta, str)
        self.eta_callable = eta if callable(eta) else None
        self.eta = 0.0 if (self.auto or callable(eta)) else float(eta)
        self.name, self.key = name, key
        self.names = names
        self.intercept = fit_intercept
        self.values = tuple([expansion] + [None] * (len(names) - 1))
        self.last_row = np.empty(expansion.n_features)
        self.has_last = False
        self.block_lo, self.block_len = 0, 0

    cdef void _powers(self, Py_ssize_t t) except *:
        """Fill the power block so that it covers step t."""
        t_block = np.arange(t, t + 128, dtype=np.float64)
        self.eta_pows = t_block ** -self.eta_decay
        self.lam_pows = t_block ** -self.lam_decay
        self.block_lo, self.block_len = t, 128

    def bind(self, est):
        """Remember the objects est holds under `names` (instance attributes), for `matches`."""
        self.values = tuple([est.__dict__.get(name) for name in self.names])

    cpdef bint matches(self, est):
        """est holds the very objects this step was built from (its expansion, its parameters)."""
        cdef dict attrs = est.__dict__
        cdef Py_ssize_t i
        cdef PyObject* value
        for i in range(len(self.names)):
            value = PyDict_GetItem(attrs, self.names[i])
            if value is NULL or value is not <PyObject*>self.values[i]:
                return False
        return True

    cdef inline double _f(self, const double* x, double* xx_out, Py_ssize_t t):
        """f(x) with the cache; NaN for a non-finite row."""
        cdef KernelExpansion e = self.expansion
        cdef Py_ssize_t d = e.n_features
        cdef double xx
        if (self.has_last and t == self.last_t and e.n_support == self.last_n
                and e.scale == self.last_scale and e.next_slot == self.last_slot
                and e.n_rescale == self.last_rescale
                and memcmp(x, &self.last_row[0], d * sizeof(double)) == 0):
            xx_out[0] = self.last_xx
            return self.last_f
        xx = cdot(x, x, d)
        xx_out[0] = xx
        if not row_is_finite(x, d, xx):
            return float("nan")
        cdef double f = e.cpredict(x)
        memcpy(&self.last_row[0], x, d * sizeof(double))
        self.last_f, self.last_xx, self.last_t = f, xx, t
        self.last_n, self.last_scale = e.n_support, e.scale
        self.last_slot, self.last_rescale = e.next_slot, e.n_rescale
        self.has_last = True
        return f

    cdef inline void _check(self, Py_ssize_t d) except *:
        if d != self.expansion.n_features:
            raise ValueError(f"X has {d} features, but {self.name} is expecting "
                             f"{self.expansion.n_features} features as input.")

    def predict(self, est, const double[::1] x):
        """f(x) = b + kernel part for one row; ValueError for NaN/inf."""
        self._check(x.shape[0])
        cdef double xx
        cdef double f = self._f(&x[0], &xx, est.t_)
        if self.intercept:
            f += <double>est.intercept_
        if f != f and not row_is_finite(&x[0], x.shape[0], xx):
            raise ValueError(f"{self.name} got a row with NaN or inf: "
                             f"{np.asarray(x)[:10]}; non-finite values cannot be predicted.")
        return f

    def learn(self, est, const double[::1] x, double y, double weight=1.0):
        """Predict f_t(x_t), then take step t = est.t_ + 1; return f_t(x_t).

        `y` is the target, or the label as -1.0 / +1.0 for a margin loss; a
        weight w > 0 scales the loss gradient, w = 0 skips the event (the model,
        t_ and the schedules are as if it was not in the stream).
        Raises, leaving est and the model as they were, on NaN/inf in x or
        divergence.
        """
        cdef Py_ssize_t d = x.shape[0]
        self._check(d)
        cdef KernelExpansion e = self.expansion
        cdef Py_ssize_t t_done = est.t_
        cdef double t = <double>(t_done + 1)
        cdef double ck2 = est.ck2_
        cdef const double* xp = &x[0]
        cdef double xx
        cdef double b = est.intercept_ if self.intercept else 0.0
        cdef double f = self._f(xp, &xx, t_done) + b
        if not row_is_finite(xp, d, xx):
            raise ValueError(f"{self.name} got a row with NaN or inf: {np.asarray(x)[:10]}; "
                             "non-finite values cannot be learned.")
        if weight == 0.0:                # a zero weight skips the event: nothing changes
            return f
        cdef double kxx = cself(&e.kernel, xx)
        if kxx > ck2:
            ck2 = kxx
        cdef Py_ssize_t step = t_done + 1
        if not (self.block_lo <= step < self.block_lo + self.block_len):
            self._powers(step)
        cdef double lam_t = self.lam * self.lam_pows[step - self.block_lo]
        cdef double eta_t, denom
        if self.eta_callable is not None:
            from okl.schedules import step_sizes
            eta_t = float(step_sizes(self.eta_callable, self.eta_decay, np.array([t]))[0])
        elif self.auto:
            eta_t = self.eta_pows[step - self.block_lo]
            denom = lam_t + self.lipschitz * ck2
            if denom > 0.0:
                eta_t = eta_t / denom
        else:
            eta_t = self.eta * self.eta_pows[step - self.block_lo]
        if not isfinite(f):
            raise FloatingPointError(
                f"{self.name} diverged at step t={t_done + 1} (eta_t={eta_t:.3g}): the model is "
                "no longer finite. The step size is too large for this data; use eta='auto', "
                "a smaller eta or a larger eta_decay, or scale X (e.g. with "
                "okl.preprocessing.OnlineStandardScaler). The model is left as it was.")
        cdef double g = weight * cgradient(&self.spec, y, f)
        cdef double factor = 1.0 - lam_t * eta_t
        cdef double a = -eta_t * g
        cdef double scale = e.scale * factor
        if factor <= 0.0 or scale < SCALE_MIN or scale > SCALE_MAX:
            scale = 1.0
        cdef double b_next = b - eta_t * g          # NORMA's offset: no shrink
        if not (isfinite(a / scale) and isfinite(b_next)):
            raise FloatingPointError(
                f"{self.name} diverged at step t={t_done + 1} (eta_t={eta_t:.3g}): the new "
                "coefficient is not finite. Use eta='auto', a smaller eta, or scale X. The "
                "model is left as it was.")
        if g != 0.0 and e.n_support == e.capacity and not (
                e.budget and e.n_support >= e.budget):
            e.reserve(1)                 # moves the buffers; the model is unchanged
        e.cshrink(factor)
        if g != 0.0:
            e.cadd(xp, xx, a)
        # the estimator's attributes, after every check (no Python code runs in between)
        est.t_ = t_done + 1
        est.ck2_ = ck2
        est.eta_ = eta_t
        est.lam_ = lam_t
        est.n_support_ = e.n_support
        if self.intercept:
            est.intercept_ = b_next
        return f


def dict_row(dict x, tuple keys):
    """The values of dict `x` as a float64 row, when its keys are `keys` in that order and
    every value is a Python float or int; None otherwise (the caller takes the general path).

    One pass in C: the common stream event, every feature in the first event's order.
    """
    cdef cnp.npy_intp d = len(keys)
    cdef Py_ssize_t i = 0, pos = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef object expected
    if PyDict_Size(x) != d:
        return None
    row = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    cdef double* out = <double*>cnp.PyArray_DATA(<cnp.ndarray>row)
    while PyDict_Next(x, &pos, &key, &value):
        expected = keys[i]
        if key is not <PyObject*>expected and not (<object>key == expected):
            return None
        if PyFloat_CheckExact(<object>value):
            out[i] = PyFloat_AS_DOUBLE(<object>value)
        elif PyLong_CheckExact(<object>value):
            out[i] = <double><object>value
        else:
            return None
        i += 1
    return row
