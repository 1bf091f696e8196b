"""Array-level loss functions over the inline point functions of _losses.pxd.

Each takes the loss as a `LossSpec` built from a dict (`okl.losses.loss_spec`).
"""
import numpy as np


def loss_values(const double[::1] z, LossSpec loss):
    """Loss values at every z, as a new array."""
    cdef LossSpec spec = loss
    cdef Py_ssize_t i, n = z.shape[0]
    out_arr = np.empty(n, dtype=np.float64)
    cdef double[::1] out = out_arr
    with nogil:
        for i in range(n):
            out[i] = closs(&spec, z[i])
    return out_arr


def loss_derivatives(const double[::1] z, LossSpec loss):
    """Left derivatives at every z, as a new array."""
    cdef LossSpec spec = loss
    cdef Py_ssize_t i, n = z.shape[0]
    out_arr = np.empty(n, dtype=np.float64)
    cdef double[::1] out = out_arr
    with nogil:
        for i in range(n):
            out[i] = cdloss(&spec, z[i])
    return out_arr


def loss_right_derivatives(const double[::1] z, LossSpec loss):
    """Right derivatives at every z, as a new array."""
    cdef LossSpec spec = loss
    cdef Py_ssize_t i, n = z.shape[0]
    out_arr = np.empty(n, dtype=np.float64)
    cdef double[::1] out = out_arr
    with nogil:
        for i in range(n):
            out[i] = cdloss_right(&spec, z[i])
    return out_arr
