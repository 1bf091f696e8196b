# The multiclass gradient (docs/multiclass.md, section 3), in a .pxd so that the multi-kernel
# step (_multikernel.pyx) takes the very rule of the multiclass step (_multiclass.pyx).
from libc.math cimport exp


cpdef enum MulticlassLoss:
    HINGE = 0       # Crammer-Singer
    LOGISTIC = 1    # softmax cross-entropy


cdef inline bint cgradient(int loss, const double* s, Py_ssize_t y, Py_ssize_t k, double w,
                           double* g) noexcept nogil:
    """g = w * (the loss gradient at the scores s, true class y); False when g = 0."""
    cdef Py_ssize_t j, r = -1
    cdef double top, total
    if loss == HINGE:
        for j in range(k):
            g[j] = 0.0
            if j != y and (r < 0 or s[j] > s[r]):
                r = j
        if not 1.0 - s[y] + s[r] > 0.0:
            return False
        g[y] = -w
        g[r] = w
        return True
    top = s[0]
    for j in range(1, k):
        if s[j] > top:
            top = s[j]
    total = 0.0
    for j in range(k):
        g[j] = exp(s[j] - top)
        total += g[j]
    for j in range(k):
        g[j] = w * (g[j] / total - (1.0 if j == y else 0.0))
    return True
