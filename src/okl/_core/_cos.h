/* okl_cos_rows: in-place c * cos(Z[i, j] + b[j]) over a row-major (n, D) block,
 * the second half of a random Fourier feature map (the first is Z = X W).
 *
 * libm's cos is a scalar call (~20 ns here, more than the matrix product that
 * produced its argument), so a million samples of 1000 features would spend
 * twenty seconds in it.  okl_cos is cos in straight-line arithmetic: the
 * quadrant q = round(x 2/pi) by the 1.5 * 2^52 trick, r = x - q pi/2 with a
 * three-part pi/2 (exact products for |q| < 2^24), then the degree-18 Taylor
 * polynomials of cos r and sin r on |r| <= pi/4 and a select on q mod 4; the
 * compiler turns a loop of it into SIMD code.  Absolute error ~2e-16 for
 * |x| < 1e7 (the arguments of a feature map are O(sqrt(gamma d)) in practice);
 * past OKL_COS_REDUCED (and for NaN / inf) the loops below call libm's cos,
 * since the quadrant trick is meaningless once |x 2/pi| nears 2^51.
 */
#ifndef OKL_COS_H
#define OKL_COS_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define OKL_COS_CLONES \
    __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define OKL_COS_CLONES
#endif

typedef union { double d; uint64_t u; } okl_cos_bits;

#define OKL_COS_REDUCED 1e7

/* 1 if some |a[j] + (b ? b[j] : 0)| is not below OKL_COS_REDUCED (or is NaN): a cheap
 * vector pass that lets the cos loops keep their SIMD body for every ordinary row. */
static inline int okl_cos_far(ptrdiff_t n, const double *a, const double *b)
{
    int far = 0;
    #pragma omp simd reduction(|:far)
    for (ptrdiff_t j = 0; j < n; j++)
        far |= !(fabs(a[j] + (b ? b[j] : 0.0)) < OKL_COS_REDUCED);
    return far;
}

static inline double okl_cos(double x)
{
    const double magic = 6755399441055744.0;         /* 1.5 * 2^52 */
    const double two_over_pi = 0.6366197723675814;
    const double p1 = 1.5707962512969971;             /* pi/2 = p1 + p2 + p3 */
    const double p2 = 7.549789415861596e-08;
    const double p3 = 5.390302858158119e-15;
    okl_cos_bits k;
    k.d = x * two_over_pi + magic;
    double q = k.d - magic;
    double r = ((x - q * p1) - q * p2) - q * p3;     /* |r| <= pi/4 (+ rounding) */
    double r2 = r * r;
    double c = -1.0 / 6402373705728000.0;            /* sum (-1)^j r^2j / (2j)!, j <= 9 */
    c = 1.0 / 20922789888000.0 + r2 * c;
    c = -1.0 / 87178291200.0 + r2 * c;
    c = 1.0 / 479001600.0 + r2 * c;
    c = -1.0 / 3628800.0 + r2 * c;
    c = 1.0 / 40320.0 + r2 * c;
    c = -1.0 / 720.0 + r2 * c;
    c = 1.0 / 24.0 + r2 * c;
    c = -0.5 + r2 * c;
    c = 1.0 + r2 * c;
    double s = 1.0 / 355687428096000.0;               /* sum (-1)^j r^(2j+1) / (2j+1)!, j <= 8 */
    s = -1.0 / 1307674368000.0 + r2 * s;
    s = 1.0 / 6227020800.0 + r2 * s;
    s = -1.0 / 39916800.0 + r2 * s;
    s = 1.0 / 362880.0 + r2 * s;
    s = -1.0 / 5040.0 + r2 * s;
    s = 1.0 / 120.0 + r2 * s;
    s = -1.0 / 6.0 + r2 * s;
    s = r + r * r2 * s;
    double quadrant = q - 4.0 * floor(0.25 * q);      /* q mod 4, exactly, in {0, 1, 2, 3} */
    /* cos(r + q pi/2) = cos r, -sin r, -cos r, sin r */
    double v = (quadrant == 1.0 || quadrant == 3.0) ? s : c;
    return (quadrant == 1.0 || quadrant == 2.0) ? -v : v;
}

OKL_COS_CLONES
static void okl_cos_rows(ptrdiff_t n, ptrdiff_t D, double *Z, const double *b, double c)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        double *z = Z + i * D;
        if (okl_cos_far(D, z, b)) {
            for (ptrdiff_t j = 0; j < D; j++)
                z[j] = c * cos(z[j] + b[j]);
            continue;
        }
        #pragma omp simd
        for (ptrdiff_t j = 0; j < D; j++)
            z[j] = c * okl_cos(z[j] + b[j]);
    }
}

/* Z[i, :] <- c cos(X[i, :] W + b) for the rows of X (n, d) and W (d, D), row-major:
 * the whole random Fourier map of a block, with no BLAS (whose thread pool
 * stalled tenfold on a loaded 2-core machine) and Z written once.  Columns go
 * in blocks of OKL_COS_BLOCK accumulators; each k adds x[k] W[k, block]. */
#define OKL_COS_BLOCK 64
OKL_COS_CLONES
static void okl_fourier_rows(ptrdiff_t n, ptrdiff_t d, ptrdiff_t D, const double *X,
                             const double *W, const double *b, double c, double *Z)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        const double *x = X + i * d;
        double *z = Z + i * D;
        for (ptrdiff_t j0 = 0; j0 < D; j0 += OKL_COS_BLOCK) {
            ptrdiff_t len = D - j0 < OKL_COS_BLOCK ? D - j0 : OKL_COS_BLOCK;
            double acc[OKL_COS_BLOCK];
            #pragma omp simd
            for (ptrdiff_t j = 0; j < len; j++)
                acc[j] = b[j0 + j];
            for (ptrdiff_t k = 0; k < d; k++) {
                const double xk = x[k];
                const double *w = W + k * D + j0;
                #pragma omp simd
                for (ptrdiff_t j = 0; j < len; j++)
                    acc[j] += xk * w[j];
            }
            if (okl_cos_far(len, acc, NULL)) {
                for (ptrdiff_t j = 0; j < len; j++)
                    z[j0 + j] = c * cos(acc[j]);
                continue;
            }
            #pragma omp simd
            for (ptrdiff_t j = 0; j < len; j++)
                z[j0 + j] = c * okl_cos(acc[j]);
        }
    }
}

#endif
