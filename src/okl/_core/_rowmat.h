/* okl_row_times: z <- x W for one row x (n,) and a matrix W (n, D) packed in blocks of
 * columns, the products of a Nystroem feature map of one row (x L^T, then z = k_L(x) C).
 *
 * n dot products of length D in a row (okl_dots on W^T) are latency-bound: each
 * is one chain of dependent adds.  Here the columns go in blocks of
 * OKL_ROW_BLOCK accumulators, and each i adds x[i] W[i, block]: independent
 * chains the compiler keeps in SIMD registers (as okl_fourier_rows in _cos.h).
 * W is stored block after block, each block's n rows of OKL_ROW_BLOCK columns
 * (fewer in the last block) contiguous: the loop reads memory in order, as the
 * hardware prefetcher likes it.  In row-major order each row of a block is a
 * jump of D doubles, and a one-row product at n = D = 200 (320 kB, from L2)
 * took 4.4 us against 3.4 us packed.
 * Compiled for the baseline, x86-64-v3 (AVX2) and x86-64-v4 (AVX-512); the loader
 * picks the clone the CPU supports.
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

/* z[0:len] <- x Wb for one packed block Wb (n, len), len <= OKL_ROW_BLOCK accumulators.
 * Inlined: with len = OKL_ROW_BLOCK, a constant, the accumulators stay in registers. */
OKL_ROW_INLINE void okl_row_block(ptrdiff_t n, const double *x, const double *Wb, ptrdiff_t len,
                                  double *z)
{
    double acc[OKL_ROW_BLOCK];
    #pragma omp simd
    for (ptrdiff_t j = 0; j < len; j++)
        acc[j] = 0.0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const double xi = x[i];
        const double *w = Wb + i * len;
        #pragma omp simd
        for (ptrdiff_t j = 0; j < len; j++)
            acc[j] += xi * w[j];
    }
    #pragma omp simd
    for (ptrdiff_t j = 0; j < len; j++)
        z[j] = acc[j];
}

/* z <- x W, W (n, D) packed: the block of columns j0 ... starts at W + n j0. */
OKL_ROWMAT_CLONES
static void okl_row_times(ptrdiff_t n, ptrdiff_t D, const double *x, const double *W,
                          double *z)
{
    ptrdiff_t j0 = 0;
    for (; j0 + OKL_ROW_BLOCK <= D; j0 += OKL_ROW_BLOCK)
        okl_row_block(n, x, W + n * j0, OKL_ROW_BLOCK, z + j0);
    if (j0 < D)
        okl_row_block(n, x, W + n * j0, D - j0, z + j0);
}

/* z <- x W for W (n, D) lower-trapezoidal (W[i, j] = 0 for i < j), packed as above: the
 * block of columns j0 ... reads its rows from j0 on, about half of W when n = D; the rows
 * skipped add exact zeros. */
OKL_ROWMAT_CLONES
static void okl_row_times_lower(ptrdiff_t n, ptrdiff_t D, const double *x, const double *W,
                                double *z)
{
    ptrdiff_t j0 = 0;
    for (; j0 + OKL_ROW_BLOCK <= D; j0 += OKL_ROW_BLOCK)
        okl_row_block(n - j0, x + j0, W + n * j0 + j0 * OKL_ROW_BLOCK, OKL_ROW_BLOCK, z + j0);
    if (j0 < D)
        okl_row_block(n - j0, x + j0, W + n * j0 + j0 * (D - j0), D - j0, z + j0);
}

#endif
