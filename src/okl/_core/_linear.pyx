"""LinearModel: the weight vector of the fixed-size feature learners, and the feature maps' cosines.

With a feature map z (random Fourier or Nystroem, `okl._feature_maps`) the
pointwise rule of docs/algorithms.md, sections 1-3, acts on f(x) = b + <w, z(x)>;
the step itself is `okl._core._pointwise`'s, which this model serves through
`cpredict`, `cshrink` (O(1): w = scale w_raw) and `cadd`.  Per step O(D), whatever t.
`FeatureRow` maps one row to its features in C (the one-event step,
`_pointwise.FeatureEvents`): the Fourier map is the very function of the chunks'
`fourier_rows`, so both give the same z bit for bit.

References
----------
Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17,
2016 (FOGD, NOGD); Rahimi and Recht, NIPS 2007.
"""
import numpy as np

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.math cimport isfinite, sqrt

from okl._core._kernels cimport (
    GAUSSIAN, LINEAR, POLYNOMIAL, Kernel, KernelSpec, cdot, ckernel_row, cpowi, kernel_spec,
    okl_exp_scaled,
)
from okl._core._lazy cimport RENORMALISED, cshrink_lazy


cdef extern from "_rowmat.h" nogil:
    const Py_ssize_t OKL_ROW_BLOCK
    void okl_row_times(Py_ssize_t n, Py_ssize_t D, const double* x, const double* W, double* z)
    void okl_row_times_lower(Py_ssize_t n, Py_ssize_t D, const double* x, const double* W,
                             double* z)


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

    # -- the step's operations (okl._core._pointwise), nogil -----------------------------

    cdef double cpredict(self, const double* z) noexcept nogil:
        """f(z) = scale <w_raw, z>."""
        return self.scale * cdot(self.w, z, self.n_components)

    cdef void cshrink(self, double factor) noexcept nogil:
        """w <- factor w in O(1); factor <= 0 sets w = 0 exactly."""
        if factor != 1.0 and cshrink_lazy(self.w, self.n_components, &self.scale,
                                          factor) == RENORMALISED:
            self.n_rescale += 1

    cdef bint cadd(self, const double* z, double zz, double a) noexcept nogil:
        """w <- w + a z; False (and no change) when a / scale is not finite."""
        cdef Py_ssize_t j
        cdef double c = a / self.scale
        if not isfinite(c):
            return False
        for j in range(self.n_components):
            self.w[j] += c * z[j]
        return True

    def __reduce__(self):
        return (_rebuild, (self.get_state(),))


cdef class FeatureRow:
    """z(x) of one row, in C, into a buffer the caller owns (no allocation per row).

    `FeatureRow.fourier(W, b, kernel)`: z = sqrt(2 / D) cos(x W + b), the chunks' own
    function.  `FeatureRow.nystroem(landmarks, components, kernel)`: z = k_L(x) C, the
    kernel row of x against the B landmarks (from x L^T, as the chunks compute it, for
    the Gaussian, linear and polynomial kernels) times C (B, r), both products in
    blocks of columns over matrices packed block by block (`_rowmat.h`; a C zero above
    its diagonal, the lower basis of `NystroemFeatures`, is read from row j on for column
    j); it may differ from the chunks' BLAS products in the last bits.  `kernel` is the
    learner's kernel record (`okl.kernels.kernel_params`), kept as a `KernelSpec`.
    """

    def __dealloc__(self):
        PyMem_Free(self.kbuf)

    @staticmethod
    def fourier(const double[:, ::1] W, const double[::1] b, kernel):
        cdef FeatureRow self = FeatureRow.__new__(FeatureRow)
        if b.shape[0] != W.shape[1]:
            raise ValueError("FeatureRow.fourier: W (d, D) and b (D,) disagree.")
        self.kind, self.kernel = 0, kernel_spec(kernel)
        self.n_features, self.n_components, self.n_landmarks = W.shape[0], W.shape[1], 0
        self.keep = (W, b)
        self.W, self.b = &W[0, 0], &b[0]
        self.c = sqrt(2.0 / self.n_components)
        return self

    @staticmethod
    def nystroem(const double[:, ::1] landmarks, const double[:, ::1] components,
                 kernel):
        cdef FeatureRow self = FeatureRow.__new__(FeatureRow)
        if components.shape[0] != landmarks.shape[0]:
            raise ValueError("FeatureRow.nystroem: landmarks (B, d) and components (B, r) "
                             "disagree.")
        self.kind, self.kernel = 1, kernel_spec(kernel)
        self.n_features, self.n_landmarks = landmarks.shape[1], landmarks.shape[0]
        self.n_components = components.shape[1]
        self.lower = not np.any(np.triu(np.asarray(components), 1))
        # the Gaussian, linear and polynomial rows from x L^T in blocks of columns (as the
        # chunks' matrix products), with ||l_i||^2; the others sum distances (ckernel_row)
        cdef const double[::1] lt = packed(np.asarray(landmarks).T)
        cdef const double[::1] cp = packed(components)
        cdef const double[::1] ll = np.einsum("ij,ij->i", landmarks, landmarks)
        self.keep = (landmarks, lt, cp, ll)
        self.W, self.components = &landmarks[0, 0], &cp[0]
        self.lt, self.ll = &lt[0], &ll[0]
        self.kbuf = <double*>PyMem_Malloc(self.n_landmarks * sizeof(double))
        if self.kbuf == NULL:
            raise MemoryError()
        return self

    cdef void cmap(self, const double* x, double* z) noexcept nogil:
        """z <- z(x)."""
        cdef Py_ssize_t r = self.n_components
        if self.kind == 0:
            okl_fourier_rows(1, self.n_features, r, x, self.W, self.b, self.c, z)
            return
        cdef Py_ssize_t i, B = self.n_landmarks
        cdef double xx, v
        cdef Kernel kind = <Kernel>self.kernel.kind
        if kind == GAUSSIAN or kind == LINEAR or kind == POLYNOMIAL:
            okl_row_times(self.n_features, B, x, self.lt, self.kbuf)
            if kind == GAUSSIAN:
                xx = cdot(x, x, self.n_features)
                for i in range(B):
                    v = -2.0 * self.kbuf[i] + xx + self.ll[i]
                    self.kbuf[i] = 0.0 if v < 0.0 else v       # a NaN stays NaN
                okl_exp_scaled(B, self.kernel.gamma, self.kbuf)
            elif kind == LINEAR:
                for i in range(B):
                    self.kbuf[i] += self.kernel.coef0
            else:
                for i in range(B):
                    self.kbuf[i] = cpowi(self.kernel.gamma * self.kbuf[i] + self.kernel.coef0,
                                         self.kernel.degree)
        else:
            ckernel_row(&self.kernel, x, self.W, B, self.n_features, self.kbuf)
        if self.lower:
            okl_row_times_lower(B, r, self.kbuf, self.components, z)
        else:
            okl_row_times(B, r, self.kbuf, self.components, z)

    def transform(self, const double[:, ::1] X):
        """z of every row (a test's view of `cmap`)."""
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the map {self.n_features}.")
        Z = np.empty((X.shape[0], self.n_components))
        cdef double[:, ::1] out = Z
        cdef Py_ssize_t i
        for i in range(X.shape[0]):
            self.cmap(&X[i, 0], &out[i, 0])
        return Z


def packed(W):
    """W (n, D) as `okl_row_times` reads it: its blocks of OKL_ROW_BLOCK columns one after
    the other, each block's rows contiguous."""
    W = np.asarray(W, dtype=np.float64)
    return np.concatenate([W[:, j:j + OKL_ROW_BLOCK].ravel()
                           for j in range(0, W.shape[1], OKL_ROW_BLOCK)])


def _rebuild(state):
    return LinearModel.from_state(state)


cdef class MultiLinearModel:
    """s(z) = scale * W_raw z in R^k: the weight matrix W (k, D) of a feature model of k >= 3
    classes, lazily scaled as `LinearModel` (docs/multiclass.md, section 6).  It serves
    the multiclass step (`_multiclass.cmstep`) through `cscores`, `cshrink` and `cadd`."""

    def __init__(self, Py_ssize_t n_classes, Py_ssize_t n_components):
        if n_classes < 1 or n_components < 1:
            raise ValueError(f"n_classes and n_components must be >= 1, got {n_classes} and "
                             f"{n_components}.")
        self.n_classes, self.n_components = n_classes, n_components
        self._W = np.zeros((n_classes, n_components), dtype=np.float64)
        cdef double[:, ::1] view = self._W
        self.W = &view[0, 0]
        self.scale = 1.0
        self.n_rescale = 0

    @property
    def coef_(self):
        """W = scale * W_raw, shape (k, D) (a copy)."""
        return self.scale * self._W

    def predict(self, const double[:, ::1] Z):
        """The k scores of every feature row, shape (n, k)."""
        if Z.shape[1] != self.n_components:
            raise ValueError(f"Z has {Z.shape[1]} columns, the model {self.n_components}.")
        return self.scale * (np.asarray(Z) @ self._W.T)

    def sq_norm(self):
        """||W||_F^2: the squared norm of the vector-valued f."""
        return float(self.scale * self.scale * np.sum(self._W * self._W))

    def checkpoint(self):
        return (self._W.copy(), self.scale, self.n_rescale)

    def restore(self, state):
        W, self.scale, self.n_rescale = state
        self._W[:] = W

    def get_state(self):
        return dict(n_classes=self.n_classes, n_components=self.n_components, w=self._W.copy(),
                    scale=self.scale, n_rescale=self.n_rescale)

    @classmethod
    def from_state(cls, state):
        W = np.asarray(state["w"], dtype=np.float64)
        cdef MultiLinearModel self = cls(int(state["n_classes"]), int(state["n_components"]))
        self._W[:] = W.reshape(self.n_classes, self.n_components)
        self.scale = float(state["scale"])
        self.n_rescale = int(state["n_rescale"])
        return self

    def set_coef(self, W):
        """Start from given weights (k, D) (NOGD's switch, an average)."""
        W = np.asarray(W, dtype=np.float64)
        if W.shape != (self.n_classes, self.n_components):
            raise ValueError(f"W has shape {W.shape}, the model "
                             f"{(self.n_classes, self.n_components)}.")
        self._W[:] = W
        self.scale = 1.0

    cdef void cscores(self, const double* z, double* out) noexcept nogil:
        """out <- scale W_raw z."""
        cdef Py_ssize_t c, D = self.n_components
        for c in range(self.n_classes):
            out[c] = self.scale * cdot(self.W + c * D, z, D)

    cdef void cshrink(self, double factor) noexcept nogil:
        """W <- factor W in O(1); factor <= 0 sets W = 0 exactly."""
        if factor != 1.0 and cshrink_lazy(self.W, self.n_classes * self.n_components,
                                          &self.scale, factor) == RENORMALISED:
            self.n_rescale += 1

    cdef bint cadd(self, const double* z, double zz, const double* a) noexcept nogil:
        """W <- W + a z^T; False (and no change) when some a_c / scale is not finite."""
        cdef Py_ssize_t c, j, D = self.n_components
        cdef double ac
        cdef double* row
        for c in range(self.n_classes):
            if not isfinite(a[c] / self.scale):
                return False
        for c in range(self.n_classes):
            ac, row = a[c] / self.scale, self.W + c * D
            if ac != 0.0:
                for j in range(D):
                    row[j] += ac * z[j]
        return True

    def __reduce__(self):
        return (_rebuild_multi, (self.get_state(),))


def _rebuild_multi(state):
    return MultiLinearModel.from_state(state)
