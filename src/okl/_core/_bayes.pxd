# The Bayesian update of MultiKernelRegressor(learner="krls")'s weights by the learners'
# predictive densities, shared by the chunk (`_multikernel.bayes_mixture`) and the one-event
# step (`_krls.KRLSPoolEvents`); docs/krls.md, section 9.
from libc.math cimport INFINITY, M_PI, log


cdef inline double log_density(double r, double s2, double w, double logw) noexcept nogil:
    """logw plus w times the log of N(r; 0, s2); its limit +-inf when s2 = 0 (docs/krls.md,
    section 9)."""
    if w == 0.0:
        return logw
    if s2 > 0.0:
        return logw - 0.5 * w * (log(2.0 * M_PI * s2) + r * r / s2)
    return INFINITY if r == 0.0 else -INFINITY


cdef inline double limit_densities(double* work, const double* logw, Py_ssize_t n,
                                   double top) noexcept nogil:
    """The limits of `log_density`: with a learner certain and right (+inf) the weight goes
    to those (their logw, the others -inf); with every one -inf none moves (logw).  The
    largest of work[:n] after."""
    cdef Py_ssize_t k
    if top == INFINITY:
        for k in range(n):
            work[k] = logw[k] if work[k] == INFINITY else -INFINITY
    elif top == -INFINITY:
        for k in range(n):
            work[k] = logw[k]
    else:
        return top
    top = -INFINITY
    for k in range(n):
        if work[k] > top:
            top = work[k]
    return top
