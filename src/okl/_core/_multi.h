/* The loop of the multi-output expansion's scores (_multiexpansion.pyx), written for the
 * compiler's vectoriser and compiled, like _simd.h, at each SIMD level (OKL_LEVELS).
 */
#ifndef OKL_MULTI_H
#define OKL_MULTI_H

#include "_simd.h"

/* out[c] = sum_i w[i] A[i * k + c] for c < k: the k scores from one kernel row w (A row-major,
 * n rows of k coefficients).  Up to OKL_ROWS_K classes the rows go to four accumulators in turn
 * (i mod 4), added at the end: four independent chains of adds instead of one through out[],
 * whose every add waited for the previous row's store. */
#define OKL_ROWS_K 32

OKL_INLINE void okl_rows_axpy_at(ptrdiff_t n, ptrdiff_t k, const double *restrict A,
                                 const double *restrict w, double *restrict out)
{
    if (k > OKL_ROWS_K) {
        for (ptrdiff_t c = 0; c < k; c++)
            out[c] = 0.0;
        for (ptrdiff_t i = 0; i < n; i++) {
            const double wi = w[i], *row = A + i * k;
            #pragma omp simd
            for (ptrdiff_t c = 0; c < k; c++)
                out[c] += wi * row[c];
        }
        return;
    }
    double acc[4][OKL_ROWS_K];
    for (int j = 0; j < 4; j++)
        for (ptrdiff_t c = 0; c < k; c++)
            acc[j][c] = 0.0;
    ptrdiff_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++) {
            const double wi = w[i + j], *row = A + (i + j) * k;
            #pragma omp simd
            for (ptrdiff_t c = 0; c < k; c++)
                acc[j][c] += wi * row[c];
        }
    for (; i < n; i++) {
        const double wi = w[i], *row = A + i * k;
        #pragma omp simd
        for (ptrdiff_t c = 0; c < k; c++)
            acc[0][c] += wi * row[c];
    }
    for (ptrdiff_t c = 0; c < k; c++)
        out[c] = (acc[0][c] + acc[1][c]) + (acc[2][c] + acc[3][c]);
}
OKL_LEVELS_VOID(okl_rows_axpy, (ptrdiff_t n, ptrdiff_t k, const double *restrict A,
                                const double *restrict w, double *restrict out),
                (n, k, A, w, out))

#endif
