# The lazily scaled vector v = scale * raw, shared by every model whose update
# shrinks all of its coefficients at once (kernel expansions, PA weights,
# Tian-Sheng's coefficients): a shrink multiplies one number, O(1).
from libc.string cimport memset


cdef enum Rescale:
    KEPT = 0          # only `scale` changed
    RENORMALISED = 1  # raw was multiplied by the old scale, which became 1
    ZEROED = 2        # factor <= 0: v = 0 exactly


cdef inline Rescale cshrink_lazy(double* raw, Py_ssize_t n, double* scale,
                                 double factor) noexcept nogil:
    """v <- factor v.  The scale stays in [1e-9, 1e9] (raw absorbs it when it
    would leave); factor <= 0 sets v = 0 exactly, as no shrink can go past 0."""
    cdef Py_ssize_t i
    if factor <= 0.0:
        memset(raw, 0, n * sizeof(double))
        scale[0] = 1.0
        return ZEROED
    scale[0] *= factor
    if scale[0] < 1e-9 or scale[0] > 1e9:
        for i in range(n):
            raw[i] *= scale[0]
        scale[0] = 1.0
        return RENORMALISED
    return KEPT
