"""Array-level kernel functions over the inline point functions of _kernels.pxd."""
import numpy as np



def kernel_matrix(const double[:, ::1] X, const double[:, ::1] U, int kind,
                  double gamma, int degree, double coef0, double nu=1.5):
    """Gram matrix K(X_i, U_j) as a new (n, m) float64 array."""
    cdef Py_ssize_t n = X.shape[0], m = U.shape[0], d = X.shape[1], i
    cdef KernelSpec spec = KernelSpec(<Kernel>kind, gamma, coef0, degree, nu)
    out_arr = np.empty((n, m), dtype=np.float64)
    cdef double[:, ::1] out = out_arr
    if n == 0 or m == 0:
        return out_arr
    with nogil:
        for i in range(n):
            ckernel_row(&spec, &X[i, 0], &U[0, 0], m, d, &out[i, 0])
    return out_arr
