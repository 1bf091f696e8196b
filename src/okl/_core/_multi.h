/* The loop of the multi-output expansion's scores (_multiexpansion.pyx), written for the
 * compiler's vectoriser and compiled, like _simd.h, for the baseline and for x86-64-v3 (AVX2).
 */
#ifndef OKL_MULTI_H
#define OKL_MULTI_H

#include "_simd.h"

/* out[c] = sum_i w[i] A[i * k + c] for c < k: the k scores from one kernel row w (A row-major,
 * n rows of k coefficients); the rows are added in order, each as one k-wide axpy. */
OKL_SIMD_CLONES OKL_MAYBE_UNUSED
static void okl_rows_axpy(ptrdiff_t n, ptrdiff_t k, const double *A, const double *w, double *out)
{
    for (ptrdiff_t c = 0; c < k; c++)
        out[c] = 0.0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double wi = w[i], *row = A + i * k;
        #pragma omp simd
        for (ptrdiff_t c = 0; c < k; c++)
            out[c] += wi * row[c];
    }
}

#endif
