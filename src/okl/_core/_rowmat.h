/* okl_row_times: z <- x W for one row x (n,) and a row-major W (n, D), the second half
 * of a Nystroem feature map of one row (z = k_L(x) C).
 *
 * n dot products of length D in a row (okl_dots on W^T) are latency-bound: each
 * is one chain of dependent adds.  Here the columns go in blocks of
 * OKL_ROW_BLOCK accumulators, and each i adds x[i] W[i, block]: independent
 * chains the compiler keeps in SIMD registers (as okl_fourier_rows in _cos.h).
 * Compiled for the baseline and for x86-64-v3 (AVX2); the loader picks the
 * clone the CPU supports.
 */
#ifndef OKL_ROWMAT_H
#define OKL_ROWMAT_H

#include <stddef.h>

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define OKL_ROWMAT_CLONES \
    __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define OKL_ROWMAT_CLONES
#endif

#define OKL_ROW_BLOCK 32

#if defined(__GNUC__) || defined(__clang__)
#define OKL_ROW_INLINE static inline __attribute__((always_inline))
#else
#define OKL_ROW_INLINE static inline
#endif

/* z[j0:j0 + len] <- x W[:, j0:j0 + len], len <= OKL_ROW_BLOCK accumulators.  Inlined: with
 * len = OKL_ROW_BLOCK, a constant, the accumulators stay in registers. */
OKL_ROW_INLINE void okl_row_block(ptrdiff_t n, ptrdiff_t D, const double *x, const double *W,
                                  ptrdiff_t j0, ptrdiff_t len, double *z)
{
    double acc[OKL_ROW_BLOCK];
    #pragma omp simd
    for (ptrdiff_t j = 0; j < len; j++)
        acc[j] = 0.0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double xi = x[i];
        const double *w = W + i * D + j0;
        #pragma omp simd
        for (ptrdiff_t j = 0; j < len; j++)
            acc[j] += xi * w[j];
    }
    #pragma omp simd
    for (ptrdiff_t j = 0; j < len; j++)
        z[j0 + j] = acc[j];
}

OKL_ROWMAT_CLONES
static void okl_row_times(ptrdiff_t n, ptrdiff_t D, const double *x, const double *W,
                          double *z)
{
    ptrdiff_t j0 = 0;
    for (; j0 + OKL_ROW_BLOCK <= D; j0 += OKL_ROW_BLOCK)
        okl_row_block(n, D, x, W, j0, OKL_ROW_BLOCK, z);
    if (j0 < D)
        okl_row_block(n, D, x, W, j0, D - j0, z);
}

#endif
