/* The O(m^2) loops of a KRLS step (_krls.pyx): the posterior's rank-one update fused with
 * forgetting (either mode), and the Givens rotations that remove a centre.  Rows are
 * contiguous (stride cap), every loop runs along a row, and `restrict` lets the compiler
 * vectorise them; like _simd.h they are compiled at each SIMD level (OKL_LEVELS).  The
 * NumPy twin (okl/_numpy/krls.py) takes the same operations in the same order.
 */
#ifndef OKL_KRLS_H
#define OKL_KRLS_H

#include <math.h>
#include <stddef.h>

#include "_simd.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
#endif

/* cov[:n, :n] <- a (cov - c g g^T) + shift I (a = 1: cov - c g g^T), row by row: forgetting
 * back to the prior is a = lam, shift = 1 - lam;
 * (g_i g_j) c is formed the same way for (i, j) and (j, i), so a symmetric cov stays so. */
OKL_INLINE void okl_krls_update_at(ptrdiff_t n, ptrdiff_t cap, double *restrict cov,
                                   const double *restrict g, double c, double a, double shift)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        double *restrict row = cov + i * cap;
        const double gi = g[i];
        if (a == 1.0) {
            for (ptrdiff_t j = 0; j < n; j++)
                row[j] -= (gi * g[j]) * c;
        } else {
            for (ptrdiff_t j = 0; j < n; j++)
                row[j] = (row[j] - (gi * g[j]) * c) * a;
            if (shift != 0.0)
                row[i] += shift;
        }
    }
}
OKL_LEVELS_VOID(okl_krls_update, (ptrdiff_t n, ptrdiff_t cap, double *restrict cov,
                                  const double *restrict g, double c, double a, double shift),
                (n, cap, cov, g, c, a, shift))

/* Uncertainty injection bounded by the prior (docs/krls.md, section 11), fused with the
 * rank-one update: cov[:n, :n] <- D (cov - c g g^T) D (g NULL: D cov D), D = diag(d),
 * d_i = 1 / sqrt(min(max(s_i, lam), 1)) with s_i the diagonal of cov - c g g^T (written into
 * d[:n]), so that a variance grows by 1 / lam up to the prior's, 1, and no further, and one
 * above 1 (a width move's, a removal's) is left as it is.  A congruence by
 * a positive diagonal: a symmetric positive definite cov stays so, (d_i d_j) formed the same
 * way for (i, j) and (j, i). */
OKL_INLINE void okl_krls_inflate_at(ptrdiff_t n, ptrdiff_t cap, double *restrict cov,
                                    const double *restrict g, double c, double lam,
                                    double *restrict d)
{
    const double top = 1.0 / sqrt(lam);
    for (ptrdiff_t i = 0; i < n; i++) {
        const double s = g ? cov[i * cap + i] - (g[i] * g[i]) * c : cov[i * cap + i];
        d[i] = s > lam ? 1.0 / sqrt(s < 1.0 ? s : 1.0) : top;  /* a rounded s <= 0: 1 / lam */
    }
    for (ptrdiff_t i = 0; i < n; i++) {
        double *restrict row = cov + i * cap;
        const double di = d[i];
        if (g) {
            const double gi = g[i];
            for (ptrdiff_t j = 0; j < n; j++)
                row[j] = (row[j] - (gi * g[j]) * c) * (di * d[j]);
        } else {
            for (ptrdiff_t j = 0; j < n; j++)
                row[j] *= di * d[j];
        }
    }
}
OKL_LEVELS_VOID(okl_krls_inflate, (ptrdiff_t n, ptrdiff_t cap, double *restrict cov,
                                   const double *restrict g, double c, double lam,
                                   double *restrict d),
                (n, cap, cov, g, c, lam, d))

/* y[:n] += a x[:n] */
OKL_INLINE void okl_axpy_at(ptrdiff_t n, double a, const double *restrict x, double *restrict y)
{
    for (ptrdiff_t j = 0; j < n; j++)
        y[j] += a * x[j];
}
OKL_LEVELS_VOID(okl_axpy, (ptrdiff_t n, double a, const double *restrict x, double *restrict y),
                (n, a, x, y))

/* (u, v) <- (c u - s v, s u + c v) over n entries: two rows rotated */
OKL_INLINE void okl_rotate_rows_at(ptrdiff_t n, double *restrict u, double *restrict v,
                                   double c, double s)
{
    for (ptrdiff_t k = 0; k < n; k++) {
        const double a = u[k], b = v[k];
        u[k] = c * a - s * b;
        v[k] = s * a + c * b;
    }
}
OKL_LEVELS_VOID(okl_rotate_rows, (ptrdiff_t n, double *restrict u, double *restrict v, double c,
                                  double s),
                (n, u, v, c, s))

/* Columns (i, i + 1) of rows 0..n-1 rotated by (cs[i], sn[i]) for i = r..m-2 in turn, one row
 * at a time (each row's entries in order: the rotations of the columns, along the row). */
OKL_MAYBE_UNUSED
static void okl_rotate_columns(ptrdiff_t n, ptrdiff_t cap, double *cov, ptrdiff_t r,
                               ptrdiff_t m, const double *cs, const double *sn)
{
    for (ptrdiff_t k = 0; k < n; k++) {
        double *row = cov + k * cap;
        double a = row[r];
        for (ptrdiff_t i = r; i < m - 1; i++) {
            const double b = row[i + 1];
            row[i] = cs[i] * a - sn[i] * b;
            a = sn[i] * a + cs[i] * b;
        }
        row[m - 1] = a;
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
