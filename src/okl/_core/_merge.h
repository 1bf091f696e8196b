/* The loops of the BSGD partner search (_merge.pyx), written for the compiler's
 * vectoriser: branch-free bodies, min reductions, the table read by gathers.
 * Compiled, like _simd.h, at each SIMD level (OKL_LEVELS).
 */
#ifndef OKL_MERGE_H
#define OKL_MERGE_H

#include <math.h>
#include "_simd.h"

/* The first i with |c[i]| = min_j |c[j]| (NaNs are passed over; 0 when all are NaN). */
OKL_INLINE ptrdiff_t okl_merge_argmin_abs_at(ptrdiff_t n, const double *c)
{
    double v = INFINITY;
    #pragma omp simd reduction(min:v)
    for (ptrdiff_t i = 0; i < n; i++) {
        double a = fabs(c[i]);
        v = a < v ? a : v;
    }
    for (ptrdiff_t i = 0; i < n; i++)
        if (fabs(c[i]) == v)
            return i;
    return 0;
}
OKL_LEVELS(ptrdiff_t, okl_merge_argmin_abs, (ptrdiff_t n, const double *c), (n, c))

/* The first i with w[i] = min_j w[j] (w >= -0 or +inf), -1 when every w[i] is +inf. */
OKL_INLINE ptrdiff_t okl_merge_argmin_at(ptrdiff_t n, const double *w)
{
    double v = INFINITY;
    #pragma omp simd reduction(min:v)
    for (ptrdiff_t i = 0; i < n; i++)
        v = w[i] < v ? w[i] : v;
    if (v == INFINITY)
        return -1;
    for (ptrdiff_t i = 0; i < n; i++)
        if (w[i] == v)
            return i;
    return -1;
}
OKL_LEVELS(ptrdiff_t, okl_merge_argmin, (ptrdiff_t n, const double *w), (n, w))

/* w[i] <- rho(mu_i, k_i) interpolated in the (nm + 1, nk + 1) table T, with w[i] = k_i on
 * entry and mu_i = am / (am + |c[i]|), for every i with cm c[i] > 0; +inf for the others.
 * mu and k are clamped to the table (a NaN to its lower edge) before the look-up. */
OKL_INLINE void okl_merge_rho_at(ptrdiff_t n, double cm, const double *c, const double *T,
                                 int nm, int nk, double *w)
{
    double am = fabs(cm), xmax = 2.0 * nm, ymax = nk;
    #pragma omp simd
    for (ptrdiff_t i = 0; i < n; i++) {
        double x = am / (am + fabs(c[i])) * xmax, y = w[i] * ymax;
        x = x >= 0.0 ? (x <= xmax ? x : xmax) : 0.0;
        y = y >= 0.0 ? (y <= ymax ? y : ymax) : 0.0;
        int ii = (int)x, jj = (int)y;
        ii = ii < nm - 1 ? ii : nm - 1;
        jj = jj < nk - 1 ? jj : nk - 1;
        double fx = x - ii, fy = y - jj;
        int at = ii * (nk + 1) + jj;
        double r = (1.0 - fx) * ((1.0 - fy) * T[at] + fy * T[at + 1])
                   + fx * ((1.0 - fy) * T[at + nk + 1] + fy * T[at + nk + 2]);
        w[i] = cm * c[i] > 0.0 ? r : INFINITY;
    }
}
OKL_LEVELS_VOID(okl_merge_rho, (ptrdiff_t n, double cm, const double *c, const double *T,
                                int nm, int nk, double *w),
                (n, cm, c, T, nm, nk, w))

#endif
