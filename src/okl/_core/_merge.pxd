# Budget maintenance by merging (BSGD): the helpers a kernel expansion calls
# when its budget overflows (docs/algorithms.md, section 7.3; the derivation
# is docs/budget.md, section 1).  Gaussian kernel, K(x, x) = 1.
#
# When B + 1 centres must become B, take m = argmin |c_i| and replace
# c_m K_m + c_n K_n by c_z K_z, z = h x_m + (1 - h) x_n, c_z the projection;
# the partner n (same sign as c_m) is the one of least weight degradation.
# With mu = |c_m| / (|c_m| + |c_n|) and k = K(x_m, x_n) the degradation is
# c_m^2 rho(mu, k): `cmerge_find` reads rho from a table to rule partners out,
# and solves h exactly (`cmerge_pair`: Newton on a scalar equation) for the
# few it cannot rule out.  The table lives in _merge.pyx, so these two are
# module functions (cimported), not inline ones.


cdef Py_ssize_t cmerge_find(const double* centers,   # IN (n, d) row-major
                            const double* coef,      # IN (n,) raw coefficients
                            Py_ssize_t n, Py_ssize_t d, double gamma,
                            double* work,            # WORK (n,)
                            bint row_ready,          # IN work[:n-1] = K(x_i, x_{n-1}) already
                            Py_ssize_t* m_out, double* h_out, double* cz_out,
                            double* loss_out,
                            bint refine=*            # IN solve every partner the table leaves in
                            ) noexcept nogil


cdef void cmerge_pair(double cm, double cn, double g,
                      double* h_out, double* cz_out, double* loss_out) noexcept nogil


cdef inline void cmerge_point(const double* xm, const double* xn, Py_ssize_t d, double h,
                              double* z_out) noexcept nogil:
    """z = h x_m + (1 - h) x_n (z_out may alias x_n, not x_m), as x_n + h (x_m - x_n): an ulp
    of h moves z by an ulp of h |x_m - x_n|, not of h |x_m| (the engines' h may differ by one)."""
    cdef Py_ssize_t j
    for j in range(d):
        z_out[j] = xn[j] + h * (xm[j] - xn[j])
