"""Fixed-size feature maps: a kernel model whose per-step cost does not grow with t.

`RandomFourierFeatures` (Rahimi-Recht) and `NystroemFeatures` map x to z(x) in
R^D with <z(x), z(u)> ~ K(x, u), so that f(x) = <w, z(x)> is a linear model
and every pointwise rule of okl (predict, shrink by (1 - eta lam), add
-eta g z(x)) runs on w in O(D) per step.  Features are computed per chunk
(one matrix product and one cosine pass), never per step.

References
----------
Rahimi and Recht, "Random features for large-scale kernel machines", NIPS 2007.
Lu, Hoi, Wang, Zhao and Liu, "Large scale online kernel learning", JMLR 17,
2016 (FOGD: random Fourier features; NOGD: Nystroem features from the first
B samples, after an exact kernel phase on those samples).
"""
from numbers import Integral

import numpy as np
from scipy.spatial.distance import cdist

from okl._blas import one_thread
from okl._core._kernels import Kernel, kernel_matrix as _kernel_matrix
from okl._core._linear import FeatureRow, fourier_rows
from okl._numpy.kernels import kernel_record, matern
from okl.kernels import KERNELS, kernel_params

CHUNK_ROWS = 256        # rows per matrix product: a block of CHUNK_ROWS x D stays in cache


def _kernel_row(kernel, what, fourier=False):
    """The `KernelRow` of a kernel name or code; with `fourier`, only kernels with a sampler."""
    rows = [r for r in KERNELS.values() if r.fourier is not None or not fourier]
    for row in rows:
        if (kernel == row.name if isinstance(kernel, str) else int(kernel) == int(row.code)):
            return row
    raise ValueError(f"{what} support the kernels {sorted(r.name for r in rows)}; "
                     f"got {kernel!r}.")


def _record(kernel, what, fourier=False, **params):
    """The kernel's record (`okl.kernels.kernel_params`): `kernel` itself when it is one (a
    dict), else built from a name or code and the parameters `params` by name; only for
    kernels the map supports."""
    record = kernel if isinstance(kernel, dict) else None
    _kernel_row(record["kernel"] if record else kernel, what, fourier)
    if record:
        return kernel_record(record)
    return kernel_params(kernel if isinstance(kernel, str) else int(kernel), **params)


def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    return np.random.default_rng(random_state)


def _as_rows(X, n_features):
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(f"X must have shape (n, {n_features}); got {X.shape}.")
    return X


class RandomFourierFeatures:
    """z(x) = sqrt(2 / D) cos(x W + b): <z(x), z(u)> -> K(x, u) as D grows.

    Gaussian exp(-gamma ||x - u||_2^2): W_ij ~ N(0, 2 gamma); Laplacian
    exp(-gamma ||x - u||_1): W_ij ~ Cauchy(0, gamma) (the Fourier transform of
    exp(-gamma |t|) per coordinate); Matern: each column of W a multivariate
    Student-t of 2 nu degrees of freedom and scale sqrt(2 gamma); b_j ~ U[0, 2 pi).
    Each is a scale family, W = s(gamma) G with G drawn once at unit scale
    (the sampler and s are the kernel's row in `okl.kernels`), so `with_gamma`
    gives the same draw at another width.  z(x) . z(u) is an
    unbiased estimate of K(x, u) with variance <= 2 / D per pair.

    Parameters
    ----------
    kernel : {"gaussian", "laplacian", "matern"}, a `Kernel` code, or the kernel's
        record (`okl.kernels.kernel_params`, which then carries every parameter)
    gamma : float > 0
    n_components : int, the dimension D
    random_state : None, int, numpy Generator or RandomState
    **params : the kernel's other parameters by name (Matern's nu)

    References
    ----------
    Rahimi and Recht, NIPS 2007; Lu, Hoi, Wang, Zhao and Liu, JMLR 17, 2016 (FOGD).
    """

    def __init__(self, kernel="gaussian", gamma=1.0, n_components=100, random_state=None,
                 **params):
        self.params = _record(kernel, "Random Fourier features", True, gamma=gamma, **params)
        self.kernel, gamma = self.params["kernel"], self.params["gamma"]
        if not gamma > 0:
            raise ValueError(f"gamma must be > 0 for random Fourier features; got {gamma}.")
        if not isinstance(n_components, Integral) or n_components < 1:
            raise ValueError(f"n_components must be an int >= 1; got {n_components!r}.")
        self.gamma = float(gamma)
        self.n_components = int(n_components)
        self.random_state = random_state
        self.n_features = None

    def fit(self, n_features):
        """Draw W (n_features x D) and b (D,); `n_features` may be an int or an array X.

        The frequencies are drawn once at unit scale, ``W = s(gamma) G``
        (`KernelRow.fourier_scale`), so `with_gamma` re-reads the same draw at
        another width.
        """
        if not isinstance(n_features, Integral):
            n_features = np.shape(n_features)[1]
        rng = _rng(self.random_state)
        shape = (int(n_features), self.n_components)
        self.unit = _kernel_row(self.kernel, "Random Fourier features", fourier=True).fourier(
            rng, self.params, shape)
        self.W = self._scaled(self.unit)
        self.b = rng.uniform(0.0, 2.0 * np.pi, size=self.n_components)
        self.n_features = int(n_features)
        return self

    def _scale(self):
        """s(gamma): the frequencies of this width are s(gamma) times the unit draw."""
        return float(_kernel_row(self.kernel, "Random Fourier features", fourier=True)
                     .fourier_scale(self.params))

    def _scaled(self, unit):
        return np.ascontiguousarray(self._scale() * unit)

    def with_gamma(self, gamma):
        """The same draw at the width gamma: a new map, ``W = s(gamma) G``, b unchanged
        (gamma="scale"'s warm-up, docs/defaults.md, section 2)."""
        unit = self.__dict__.get("unit")
        if unit is None:                # a loaded map: its unit draw, from W
            unit = self.W / self._scale()
        new = type(self)(dict(self.params, gamma=float(gamma)), n_components=self.n_components,
                         random_state=self.random_state)
        new.n_features, new.unit, new.b = self.n_features, unit, self.b
        new.W = new._scaled(unit)
        return new

    def transform(self, X, out=None):
        """z(X), shape (n, D), float64 C order; written into `out` when given."""
        X = _as_rows(X, self.n_features)
        n, D = len(X), self.n_components
        if out is None:
            out = np.empty((n, D), dtype=np.float64)
        # one nogil pass per row, no BLAS: a threaded dgemm stalled 15x on a loaded machine
        fourier_rows(X, self.W, self.b, np.sqrt(2.0 / D), out)
        return out

    def row_map(self):
        """The compiled map of one row (`okl._core._linear.FeatureRow`): the same z as
        `transform`, bit for bit."""
        return FeatureRow.fourier(self.W, self.b, self.params)

    def get_state(self):
        """Scalars and arrays that rebuild this map exactly (okl.save writes them)."""
        return dict(kind="fourier", **self.params,
                    n_components=self.n_components, n_features=self.n_features,
                    W=self.W.copy(), b=self.b.copy())

    @classmethod
    def from_state(cls, state):
        self = cls(kernel_record(state, complete=True), n_components=int(state["n_components"]))
        self.n_features = int(state["n_features"])
        self.W = np.ascontiguousarray(state["W"], dtype=np.float64)
        self.b = np.ascontiguousarray(state["b"], dtype=np.float64)
        return self


def kernel_matrix(params, X, L):
    """K(X_i, L_j) for every pair, per chunk of rows (the Gaussian by a matrix product);
    `params` the kernel's record (`okl.kernels.kernel_params`)."""
    kernel, gamma, degree, coef0 = (params[k] for k in ("kernel", "gamma", "degree", "coef0"))
    X = np.ascontiguousarray(X, dtype=np.float64)
    L = np.ascontiguousarray(L, dtype=np.float64)
    out = np.empty((len(X), len(L)), dtype=np.float64)
    ll = np.einsum("ij,ij->i", L, L)
    for lo in range(0, len(X), CHUNK_ROWS):
        Xc, block = X[lo:lo + CHUNK_ROWS], out[lo:lo + CHUNK_ROWS]
        if kernel == Kernel.LAPLACIAN:
            block[:] = cdist(Xc, L, "cityblock")
            block *= -gamma
            np.exp(block, out=block)
            continue
        if kernel == Kernel.MATERN:
            block[:] = matern(params["nu"], gamma, cdist(Xc, L, "sqeuclidean"))
            continue
        if kernel not in (Kernel.GAUSSIAN, Kernel.LINEAR, Kernel.POLYNOMIAL):
            block[:] = _kernel_matrix(Xc, L, params)     # any other kernel: its compiled rows
            continue
        np.dot(Xc, L.T, out=block)
        if kernel == Kernel.GAUSSIAN:
            block *= -2.0
            block += np.einsum("ij,ij->i", Xc, Xc)[:, None]
            block += ll
            np.maximum(block, 0.0, out=block)
            block *= -gamma
            np.exp(block, out=block)
        elif kernel == Kernel.LINEAR:
            block += coef0
        else:
            block *= gamma
            block += coef0
            np.power(block, degree, out=block)
    return out


class NystroemFeatures:
    """z(x) = k_L(x) C, from landmarks L and K_LL = U Lambda U^T: C = U_r Lambda_r^{-1/2} Q.

    Eigenvalues below `tol * max eigenvalue` are dropped (r <= len(L) components
    remain), so z(L_i) . z(L_j) = K(L_i, L_j) up to the dropped part: exactly
    when nothing is dropped.  ``basis="lower"`` (the default) takes the rotation Q
    (r x r, orthogonal; from the QR factorisation of (U_r Lambda_r^{-1/2})^T) that
    makes C lower-trapezoidal, C[i, j] = 0 for i < j: the same inner products, and
    the one-row product reads half of C (docs/budget.md, section 2).  ``"eigen"``
    (Q = I) is the basis of models saved before it.  `weights_from_expansion` turns
    f = sum_i a_i K(L_i, .) into w with <w, z(x)> = f(x): NOGD's switch from an exact
    kernel phase on the first B samples to a linear model on their features.

    References
    ----------
    Lu, Hoi, Wang, Zhao and Liu, JMLR 17, 2016 (NOGD).
    """

    def __init__(self, landmarks, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0,
                 tol=1e-12, basis="lower", **params):
        self.params = _record(kernel, "Nystroem features", gamma=gamma, degree=degree,
                              coef0=coef0, **params)
        self.kernel = self.params["kernel"]
        self.gamma, self.degree, self.coef0 = (self.params[k]
                                               for k in ("gamma", "degree", "coef0"))
        self.tol = float(tol)
        if basis not in ("lower", "eigen"):
            raise ValueError(f"basis must be 'lower' or 'eigen'; got {basis!r}.")
        self.basis = basis
        L = np.ascontiguousarray(landmarks, dtype=np.float64)
        if L.ndim != 2 or len(L) < 1:
            raise ValueError(f"landmarks must be a non-empty 2-D array; got shape {L.shape}.")
        self.landmarks = L
        self.n_features = L.shape[1]
        with one_thread():
            K = kernel_matrix(self.params, L, L)
            K = 0.5 * (K + K.T)
            lam, U = np.linalg.eigh(K)
        top = lam[-1] if len(lam) else 0.0
        if not top > 0:
            raise ValueError("The landmarks' kernel matrix has no positive eigenvalue.")
        keep = lam > self.tol * top
        self.eigenvalues = lam[keep]
        self.eigenvectors = np.ascontiguousarray(U[:, keep])
        C = self.eigenvectors / np.sqrt(self.eigenvalues)
        self.rotation = None
        if basis == "lower":            # C^T = Q R: C Q = R^T, zero above its diagonal
            self.rotation, R = np.linalg.qr(C.T)
            C = R.T
        self.components = np.ascontiguousarray(C)
        self.n_components = int(keep.sum())

    def transform(self, X, out=None):
        """z(X), shape (n, r), float64 C order."""
        X = _as_rows(X, self.n_features)
        if out is None:
            out = np.empty((len(X), self.n_components), dtype=np.float64)
        with one_thread():
            for lo in range(0, len(X), CHUNK_ROWS):
                k = kernel_matrix(self.params, X[lo:lo + CHUNK_ROWS], self.landmarks)
                np.dot(k, self.components, out=out[lo:lo + CHUNK_ROWS])
        return out

    def row_map(self):
        """The compiled map of one row (`okl._core._linear.FeatureRow`): `transform`'s z
        up to the last bits of its blocked products."""
        return FeatureRow.nystroem(self.landmarks, self.components, self.params)

    def weights_from_expansion(self, coef):
        """w = Q^T Lambda_r^{1/2} U_r^T a, so <w, z(x)> = k_L(x)^T U_r U_r^T a (a (B, k): one
        column of w per class).

        That is f(x) = sum_i a_i K(L_i, x) exactly when no eigenvalue was
        dropped; otherwise a is first projected on the kept eigenvectors, which
        changes f by a function of RKHS norm^2 sum_dropped lambda_j (u_j . a)^2.
        ||w||^2 is the RKHS norm^2 of the projected f.
        """
        a = np.asarray(coef, dtype=np.float64)
        root = np.sqrt(self.eigenvalues)
        w = (root if a.ndim == 1 else root[:, None]) * (self.eigenvectors.T @ a)
        return w if self.rotation is None else self.rotation.T @ w

    def get_state(self):
        return dict(kind="nystroem", **self.params, tol=self.tol, basis=self.basis,
                    landmarks=self.landmarks.copy())

    @classmethod
    def from_state(cls, state):
        """The map of `get_state`; a state without a basis (saved before it) is "eigen"."""
        return cls(state["landmarks"], kernel_record(state, complete=True),
                   tol=float(state["tol"]), basis=state.get("basis", "eigen"))
