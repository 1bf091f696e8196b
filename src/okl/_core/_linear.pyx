"""Linear models over dense feature rows: the loop of the fixed-size feature learners.

With a feature map z (random Fourier or Nystroem, `okl._features`) the
pointwise rule of docs/algorithms.md, sections 1-3, acts on f(x) = b + <w, z(x)>:
    predict f_t = b_t + s <w_raw, z_t>,
    w <- (1 - eta_t lam_t) w - eta_t g_t z_t      (the shrink is O(1): w = s w_raw),
    b <- b - eta_t g_t                            (only with an `offset` buffer; never shrunk),
with g_t = w_t V'_- the weighted loss derivative of the kernel learner (a step of
weight 0 is skipped), exactly as `_pointwise.fit_chunk`.  Per step O(D), whatever t.

References
----------
Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17,
2016 (FOGD, NOGD); Rahimi and Recht, NIPS 2007.
"""
import numpy as np

from libc.math cimport isfinite

from okl._core._kernels cimport cdot
from okl._core._lazy cimport RENORMALISED, cshrink_lazy
from okl._core._losses cimport Loss, LossSpec, cgradient
from okl._core._signals cimport cinterrupted, craise_pending


cdef extern from "_cos.h" nogil:
    void okl_cos_rows(Py_ssize_t n, Py_ssize_t D, double* Z, const double* b, double c)
    void okl_fourier_rows(Py_ssize_t n, Py_ssize_t d, Py_ssize_t D, const double* X,
                          const double* W, const double* b, double c, double* Z)


def fourier_rows(const double[:, ::1] X,     # IN (n, d)
                 const double[:, ::1] W,     # IN (d, D)
                 const double[::1] b,        # IN (D,)
                 double c,
                 double[:, ::1] Z_out):      # OUT (n, D)
    """Z_out <- c cos(X W + b), in one nogil pass with no BLAS (see _cos.h)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], D = W.shape[1]
    if W.shape[0] != d or b.shape[0] != D or Z_out.shape[0] != n or Z_out.shape[1] != D:
        raise ValueError("fourier_rows: X (n, d), W (d, D), b (D,) and Z_out (n, D) disagree.")
    if n == 0:
        return
    with nogil:
        okl_fourier_rows(n, d, D, &X[0, 0], &W[0, 0], &b[0], c, &Z_out[0, 0])


def cos_rows(double[:, ::1] Z,          # IN/OUT (n, D): X W in, c cos(X W + b) out
             const double[::1] b,       # IN (D,)
             double c):
    """Z[i, j] <- c cos(Z[i, j] + b[j]) in place (SIMD cosine, see _cos.h)."""
    if Z.shape[1] != b.shape[0]:
        raise ValueError(f"Z has {Z.shape[1]} columns, b {b.shape[0]} entries.")
    if Z.shape[0] == 0:
        return
    with nogil:
        okl_cos_rows(Z.shape[0], Z.shape[1], &Z[0, 0], &b[0], c)


cdef class LinearModel:
    """f(z) = scale * <w_raw, z>, a lazily scaled weight vector (the offset is the learner's)."""
    cdef readonly Py_ssize_t n_components
    cdef readonly double scale
    cdef readonly Py_ssize_t n_rescale
    cdef object _w
    cdef double* w

    def __init__(self, Py_ssize_t n_components):
        if n_components < 1:
            raise ValueError(f"n_components must be >= 1, got {n_components}.")
        self.n_components = n_components
        self._w = np.zeros(n_components, dtype=np.float64)
        cdef double[::1] view = self._w
        self.w = &view[0]
        self.scale = 1.0
        self.n_rescale = 0

    @property
    def coef_(self):
        """w = scale * w_raw (a copy)."""
        return self.scale * self._w

    def predict(self, const double[:, ::1] Z):
        """f at every feature row."""
        if Z.shape[1] != self.n_components:
            raise ValueError(f"Z has {Z.shape[1]} columns, the model {self.n_components}.")
        return self.scale * (np.asarray(Z) @ self._w)

    def sq_norm(self):
        """||w||^2 (the RKHS norm^2 of f for an exact feature map)."""
        return float(self.scale * self.scale * (self._w @ self._w))

    def checkpoint(self):
        return (self._w.copy(), self.scale, self.n_rescale)

    def restore(self, state):
        w, self.scale, self.n_rescale = state
        self._w[:] = w

    def get_state(self):
        return dict(n_components=self.n_components, w=self._w.copy(), scale=self.scale,
                    n_rescale=self.n_rescale)

    @classmethod
    def from_state(cls, state):
        cdef LinearModel self = cls(int(state["n_components"]))
        self._w[:] = state["w"]
        self.scale = float(state["scale"])
        self.n_rescale = int(state["n_rescale"])
        return self

    def set_coef(self, const double[::1] w):
        """Start from given weights (e.g. NOGD's switch from the exact phase)."""
        if w.shape[0] != self.n_components:
            raise ValueError(f"w has {w.shape[0]} entries, the model {self.n_components}.")
        self._w[:] = w
        self.scale = 1.0

    def __reduce__(self):
        return (_rebuild, (self.get_state(),))


def _rebuild(state):
    return LinearModel.from_state(state)


def fit_chunk(LinearModel model,
              const double[:, ::1] Z,      # IN (n, D) feature rows z(x_t)
              const double[::1] y,         # IN (n,)
              const double[::1] eta,       # IN (n,) eta_t
              const double[::1] lam,       # IN (n,) lam_t
              int loss, double tau, double eps, double delta, double p,
              double[::1] pred_out,        # OUT (n,) f_t(x_t), before the update
              const double[::1] weight=None,   # IN (n,) w_t >= 0, or None for 1
              double[::1] offset=None):    # IN/OUT (1,) b, or None for no offset
    """Run the chunk; return -1, or the index of the first step that diverged."""
    cdef LossSpec spec = LossSpec(<Loss>loss, tau, eps, delta, p)
    cdef Py_ssize_t i, j, n = Z.shape[0], D = Z.shape[1]
    cdef Py_ssize_t failed = -1, work = 0
    cdef bint interrupted = False
    cdef bint weighted = weight is not None, has_offset = offset is not None
    cdef const double* z
    cdef double* w = model.w
    cdef double f, g, c, b = 0.0, b_next
    if D != model.n_components:
        raise ValueError(f"Z has {D} columns, the model {model.n_components}.")
    if y.shape[0] != n or eta.shape[0] != n or lam.shape[0] != n or pred_out.shape[0] != n:
        raise ValueError("Z, y, eta, lam and pred_out must have the same length.")
    if weighted and weight.shape[0] != n:
        raise ValueError(f"weight has {weight.shape[0]} values for {n} rows.")
    if has_offset:
        b = offset[0]
    with nogil:
        for i in range(n):
            if cinterrupted(&work, D):
                interrupted = True
                break
            z = &Z[i, 0]
            f = b + model.scale * cdot(w, z, D)
            pred_out[i] = f
            if not isfinite(f):
                failed = i
                break
            if weighted and weight[i] == 0.0:
                continue
            g = cgradient(&spec, y[i], f)
            if weighted:
                g *= weight[i]
            b_next = b - eta[i] * g
            if has_offset and not isfinite(b_next):
                failed = i
                break
            if cshrink_lazy(w, D, &model.scale, 1.0 - lam[i] * eta[i]) == RENORMALISED:
                model.n_rescale += 1
            if g != 0.0:
                c = -eta[i] * g / model.scale
                if not isfinite(c):
                    failed = i
                    break
                for j in range(D):
                    w[j] += c * z[j]
            if has_offset:
                b = b_next
    if has_offset:
        offset[0] = b
    if interrupted:
        craise_pending()
    return failed
