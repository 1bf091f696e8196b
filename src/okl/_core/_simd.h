/* Vectorisable loops over the centres: dot products and exponentials.
 *
 * okl_dots computes <centers[i], x> and okl_sqdists ||centers[i] - x||^2 row by
 * row with SIMD reductions, at the speed of a BLAS dgemv and with no thread
 * pool: a per-step loop never waits for BLAS threads.
 *
 * libm's exp is a scalar call (about 6 ns here), so m exponentials per step
 * would cost more than the O(m d) pass over the centres that produced their
 * arguments.  okl_exp_nonpos is exp on (-inf, 0] in straight-line arithmetic
 * (Cody-Waite reduction, degree-13 Taylor polynomial, exponent by bit
 * arithmetic): the compiler turns a loop of it into SIMD code.  Relative
 * error <= 2.3e-16 on [-708, 0]; below -708 it returns 0 instead of a
 * subnormal (an absolute error below 3.3e-308), and a NaN stays NaN.
 *
 * On x86-64 with GCC/Clang the loops are compiled twice, for the baseline and
 * for x86-64-v3 (AVX2), and the loader picks the clone the CPU supports.
 */
#ifndef OKL_SIMD_H
#define OKL_SIMD_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define OKL_SIMD_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define OKL_SIMD_CLONES
#endif

/* Every module that cimports _kernels.pxd includes this header; most use only some loops. */
#if defined(__GNUC__) || defined(__clang__)
#define OKL_MAYBE_UNUSED __attribute__((unused))
#else
#define OKL_MAYBE_UNUSED
#endif

typedef union { double d; uint64_t u; } okl_bits;

static inline double okl_exp_nonpos(double x)
{
    const double magic = 6755399441055744.0;        /* 1.5 * 2^52: round to integer */
    const double log2e = 1.4426950408889634;
    const double ln2_hi = 0.6931471803691238;        /* ln 2 = ln2_hi + ln2_lo */
    const double ln2_lo = 1.9082149292705877e-10;
    double xc = x > -708.0 ? x : -708.0;
    okl_bits k, scale;
    k.d = xc * log2e + magic;                        /* low bits hold k = round(x / ln 2) */
    double kd = k.d - magic;
    double r = (xc - kd * ln2_hi) - kd * ln2_lo;     /* |r| <= ln(2) / 2 */
    double p = 1.0 / 6227020800.0;                   /* sum_{j <= 13} r^j / j! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    scale.u = (k.u + 1023) << 52;                    /* 2^k */
    /* exp(x) < 3.3e-308 below -708: 0 (an absolute error below 3.3e-308); NaN stays NaN */
    return x >= -708.0 ? p * scale.d : (x < -708.0 ? 0.0 : x);
}

/* <x, u>, with a SIMD reduction (a plain loop is bound by the latency of one add chain). */
OKL_SIMD_CLONES OKL_MAYBE_UNUSED
static double okl_dot(ptrdiff_t d, const double *x, const double *u)
{
    double a = 0.0;
    #pragma omp simd reduction(+:a)
    for (ptrdiff_t j = 0; j < d; j++)
        a += x[j] * u[j];
    return a;
}

/* out[i] <- <C[i], x> for the rows of the row-major (n, d) matrix C. */
OKL_SIMD_CLONES OKL_MAYBE_UNUSED
static void okl_dots(ptrdiff_t n, ptrdiff_t d, const double *C, const double *x, double *out)
{
    for (ptrdiff_t i = 0; i < n; i++)
        out[i] = okl_dot(d, C + i * d, x);
}

/* out[i] <- ||C[i] - x||_2^2, summed directly: exact where |x|^2 + |u|^2 - 2<x, u> would cancel
 * (nearby points far from 0) or overflow (norms past 1e154); NaN stays NaN. */
OKL_SIMD_CLONES OKL_MAYBE_UNUSED
static void okl_sqdists(ptrdiff_t n, ptrdiff_t d, const double *C, const double *x, double *out)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        const double *c = C + i * d;
        double a = 0.0;
        #pragma omp simd reduction(+:a)
        for (ptrdiff_t j = 0; j < d; j++) {
            double e = c[j] - x[j];
            a += e * e;
        }
        out[i] = a;
    }
}

/* out[i] <- ||C[i] - x||_1. */
OKL_SIMD_CLONES OKL_MAYBE_UNUSED
static void okl_l1dists(ptrdiff_t n, ptrdiff_t d, const double *C, const double *x, double *out)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        const double *c = C + i * d;
        double a = 0.0;
        #pragma omp simd reduction(+:a)
        for (ptrdiff_t j = 0; j < d; j++)
            a += __builtin_fabs(c[j] - x[j]);
        out[i] = a;
    }
}

/* kb[i] <- exp(-gamma kb[i]) for distances kb[i] >= 0, NaN kept: Gaussian and Laplacian values
 * from squared or L1 distances. */
OKL_SIMD_CLONES OKL_MAYBE_UNUSED
static void okl_exp_scaled(ptrdiff_t n, double gamma, double *kb)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        double v = kb[i];
        kb[i] = v == v ? okl_exp_nonpos(-gamma * v) : v;
    }
}

#endif
