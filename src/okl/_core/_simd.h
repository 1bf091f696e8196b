/* Vectorisable loops over the centres: dot products and exponentials.
 *
 * okl_dots computes <centers[i], x> and okl_sqdists ||centers[i] - x||^2 with
 * SIMD reductions, four rows at a time, at the speed of a BLAS dgemv and with no
 * thread pool: a per-step loop never waits for BLAS threads.  okl_sqdists_norms
 * gives the squared distances from cached norms, at the cost of okl_dots, and
 * sums directly the few where that form would cancel (docs/algorithms.md,
 * section 0.4).
 *
 * libm's exp is a scalar call (about 6 ns here), so m exponentials per step
 * would cost more than the O(m d) pass over the centres that produced their
 * arguments.  okl_exp_nonpos is exp on (-inf, 0] in straight-line arithmetic
 * (Cody-Waite reduction, degree-11 minimax polynomial, exponent by bit
 * arithmetic): the compiler turns a loop of it into SIMD code.  Relative
 * error < 2^-52 (2.2e-16, 1.3 ulp) on [-708, 0]; below -708 it returns 0
 * instead of a subnormal (an absolute error below 3.3e-308), and a NaN stays
 * NaN (docs/algorithms.md, section 0.4).
 *
 * On x86-64 with GCC >= 12 or Clang >= 18 the loops are compiled three times
 * (OKL_LEVELS below), for the build's baseline, for x86-64-v3 (AVX2, FMA) and
 * for x86-64-v4 (AVX-512, where GCC gives a loop of exponentials eight lanes
 * and mask registers for its selects: 1.6x faster than AVX2).  Each module
 * picks its level once, when it is loaded: the highest the CPU supports, or a
 * lower one named by the environment variable OKL_SIMD ("baseline",
 * "x86-64-v3" or "x86-64-v4"), so that tests can run every compiled path on
 * one machine (docs/architecture.md, "SIMD levels").  GCC contracts a * b + c
 * into one fused multiply-add here (where the target has one), as Clang does
 * by default: one rounding instead of two, and half the latency of the sums'
 * add chains and of exp's polynomial.
 */
#ifndef OKL_SIMD_H
#define OKL_SIMD_H

#include <stddef.h>
#include <stdint.h>

/* Every module that cimports _kernels.pxd includes this header; most use only some loops. */
#if defined(__GNUC__) || defined(__clang__)
#define OKL_MAYBE_UNUSED __attribute__((unused))
#else
#define OKL_MAYBE_UNUSED
#endif

#if defined(__GNUC__) || defined(__clang__)
#define OKL_INLINE static inline __attribute__((always_inline))
#else
#define OKL_INLINE static inline
#endif

#if defined(__x86_64__) && defined(__ELF__) && \
    ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12) || \
     (defined(__clang__) && __clang_major__ >= 18))
#define OKL_HAVE_LEVELS 1
#else
#define OKL_HAVE_LEVELS 0
#endif

/* The SIMD level of this module's loops: 1 (the build's baseline), 3 (x86-64-v3) or 4
 * (x86-64-v4).  okl_simd_choose runs once, when the module is loaded (under Python's import
 * lock, before any loop): the highest level the CPU supports, lowered to the one OKL_SIMD
 * names.  Without levels (another compiler or machine) the one build is the baseline. */
#if OKL_HAVE_LEVELS
#include <stdlib.h>
#include <string.h>

static int okl_simd_chosen = 1;

__attribute__((constructor)) static void okl_simd_choose(void)
{
    __builtin_cpu_init();
    int level = __builtin_cpu_supports("x86-64-v4") ? 4 :
                __builtin_cpu_supports("x86-64-v3") ? 3 : 1;
    const char *asked = getenv("OKL_SIMD");
    int cap = !asked ? 4 : !strcmp(asked, "baseline") ? 1 : !strcmp(asked, "x86-64-v3") ? 3 : 4;
    okl_simd_chosen = level < cap ? level : cap;
}

OKL_INLINE int okl_simd_level(void)
{
    return okl_simd_chosen;
}

/* A loop compiled at each level: `name` calls name_v1, name_v3 or name_v4, each the body
 * name_at (an always-inline function defined before) compiled for its target. */
#define OKL_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#define OKL_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define OKL_LEVELS(ret, name, params, args) \
    OKL_MAYBE_UNUSED static ret name##_v1 params { return name##_at args; } \
    OKL_MAYBE_UNUSED OKL_TARGET_V3 static ret name##_v3 params { return name##_at args; } \
    OKL_MAYBE_UNUSED OKL_TARGET_V4 static ret name##_v4 params { return name##_at args; } \
    OKL_MAYBE_UNUSED static ret name params \
    { \
        int level = okl_simd_level(); \
        return level == 4 ? name##_v4 args : level == 3 ? name##_v3 args : name##_v1 args; \
    }
#define OKL_LEVELS_VOID(name, params, args) \
    OKL_MAYBE_UNUSED static void name##_v1 params { name##_at args; } \
    OKL_MAYBE_UNUSED OKL_TARGET_V3 static void name##_v3 params { name##_at args; } \
    OKL_MAYBE_UNUSED OKL_TARGET_V4 static void name##_v4 params { name##_at args; } \
    OKL_MAYBE_UNUSED static void name params \
    { \
        int level = okl_simd_level(); \
        if (level == 4) \
            name##_v4 args; \
        else if (level == 3) \
            name##_v3 args; \
        else \
            name##_v1 args; \
    }
#else
OKL_INLINE int okl_simd_level(void)
{
    return 1;
}

#define OKL_LEVELS(ret, name, params, args) \
    OKL_MAYBE_UNUSED static ret name params { return name##_at args; }
#define OKL_LEVELS_VOID(name, params, args) \
    OKL_MAYBE_UNUSED static void name params { name##_at args; }
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
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
    /* degree-11 minimax polynomial for exp on |r| <= ln(2) / 2 (relative error 3.1e-18; 2.3e-17
     * with the coefficients rounded to double): two multiply-adds fewer than the Taylor
     * polynomial of the same accuracy, degree 13 (docs/algorithms.md, section 0.4) */
    double p = 2.4994304016107807e-08;
    p = p * r + 2.7632293297497174e-07;
    p = p * r + 2.7557622533559225e-06;
    p = p * r + 2.4801486521375963e-05;
    p = p * r + 1.984126943267626e-04;
    p = p * r + 1.3888888951224037e-03;
    p = p * r + 8.333333333559272e-03;
    p = p * r + 4.166666666649277e-02;
    p = p * r + 0.1666666666666617;
    p = p * r + 0.5000000000000018;
    p = p * r + 1.0;
    p = p * r + 1.0;
    scale.u = (k.u + 1023) << 52;                    /* 2^k */
    /* exp(x) < 3.3e-308 below -708: 0 (an absolute error below 3.3e-308); NaN stays NaN */
    return x >= -708.0 ? p * scale.d : (x < -708.0 ? 0.0 : x);
}

/* The loops over the centres take them four rows at a time: four independent SIMD sums share
 * each load of x, where one row at a time waits on the latency of its one add chain.  GCC/Clang
 * vector types compile them to plainer loops than `omp simd` reductions do: as fast as a
 * one-thread OpenBLAS dgemv, in cache or not.  The last block repeats its first row for the
 * rows past n (their sums are dropped), so every row goes through the same four-row loop and
 * its value never depends on where it sits in C. */
OKL_INLINE void okl_block(ptrdiff_t i, ptrdiff_t n, ptrdiff_t d, const double *C,
                          const double **c)
{
    c[0] = C + i * d;
    c[1] = i + 1 < n ? c[0] + d : c[0];
    c[2] = i + 2 < n ? c[0] + 2 * d : c[0];
    c[3] = i + 3 < n ? c[0] + 3 * d : c[0];
}

OKL_INLINE void okl_store(ptrdiff_t i, ptrdiff_t n, const double *a, double *out)
{
    for (ptrdiff_t r = 0; r < 4 && i + r < n; r++)
        out[i + r] = a[r];
}

/* Rows of OKL_PREFETCH_MIN_D to OKL_PREFETCH_MAX_D coordinates (512 B to 2 KB): a block reads
 * four rows at once, four short streams that jump ahead by 4 d at every block, and the
 * hardware prefetchers lose them; each block asks for the next block's lines as it reads its
 * own (one prefetch per row and cache line).  Measured on the centre buffers of an expansion
 * past the L2 cache: 14% faster at d = 64 to 200, 6% at 256; longer rows are one stream the
 * hardware follows, shorter blocks are one contiguous run, and there prefetching costs more
 * than it saves.  okl_ahead(d) is the distance in doubles (0: no prefetch). */
#define OKL_PREFETCH_MIN_D 64
#define OKL_PREFETCH_MAX_D 256

OKL_INLINE ptrdiff_t okl_ahead(ptrdiff_t d)
{
    return d >= OKL_PREFETCH_MIN_D && d <= OKL_PREFETCH_MAX_D ? 4 * d : 0;
}

#if defined(__GNUC__) || defined(__clang__)
/* (integer arithmetic: the last block's addresses run past the buffer, which a prefetch
 * never reads) */
#define OKL_PREFETCH(p, k) \
    __builtin_prefetch((const void *)((uintptr_t)(p) + (uintptr_t)(k) * sizeof(double)))
#else
#define OKL_PREFETCH(p, k) ((void)0)
#endif

#if defined(__GNUC__) || defined(__clang__)
/* Four doubles in one SIMD register (two on the baseline x86-64 target): each row sums its
 * coordinates j = 0, 1, 2, 3 (mod 4) in the four lanes, then adds the lanes and the tail. */
typedef double okl_v4 __attribute__((vector_size(32), aligned(8)));

/* (macros: a vector argument or result would change the ABI of the baseline clone) */
#define OKL_LOAD4(v, p) __builtin_memcpy(&(v), (p), sizeof(okl_v4))
#define OKL_LANES(v) (((v)[0] + (v)[1]) + ((v)[2] + (v)[3]))

/* <x, u> in four SIMD sums (one sum, or an `omp simd` reduction, is bound by the latency of its
 * add chain: half the speed on AVX2 at d = 1000 to 10000, as the model's prediction dots are). */
OKL_INLINE double okl_dot_at(ptrdiff_t d, const double *x, const double *u)
{
    okl_v4 s0 = {0.0, 0.0, 0.0, 0.0}, s1 = s0, s2 = s0, s3 = s0, a0, a1, a2, a3, b0, b1, b2, b3;
    ptrdiff_t j = 0;
    for (; j + 16 <= d; j += 16) {
        OKL_LOAD4(a0, x + j);
        OKL_LOAD4(b0, u + j);
        OKL_LOAD4(a1, x + j + 4);
        OKL_LOAD4(b1, u + j + 4);
        OKL_LOAD4(a2, x + j + 8);
        OKL_LOAD4(b2, u + j + 8);
        OKL_LOAD4(a3, x + j + 12);
        OKL_LOAD4(b3, u + j + 12);
        s0 += a0 * b0;
        s1 += a1 * b1;
        s2 += a2 * b2;
        s3 += a3 * b3;
    }
    for (; j + 4 <= d; j += 4) {
        OKL_LOAD4(a0, x + j);
        OKL_LOAD4(b0, u + j);
        s0 += a0 * b0;
    }
    s0 = (s0 + s1) + (s2 + s3);
    double a = OKL_LANES(s0);
    for (; j < d; j++)
        a += x[j] * u[j];
    return a;
}

/* Prefetch the lines at j + ahead of the block's four rows, once per cache line. */
#define OKL_PREFETCH4(ahead, j) \
    if ((ahead) && ((j) & 7) == 0) { \
        OKL_PREFETCH(c0 + (j), (ahead)); \
        OKL_PREFETCH(c1 + (j), (ahead)); \
        OKL_PREFETCH(c2 + (j), (ahead)); \
        OKL_PREFETCH(c3 + (j), (ahead)); \
    }

/* a[r] <- <c[r], x> for the four rows of a block, prefetching `ahead` doubles further. */
OKL_INLINE void okl_dots4(ptrdiff_t d, const double **c, const double *x, double *a,
                          ptrdiff_t ahead)
{
    const double *c0 = c[0], *c1 = c[1], *c2 = c[2], *c3 = c[3];
    okl_v4 s0 = {0.0, 0.0, 0.0, 0.0}, s1 = s0, s2 = s0, s3 = s0, xj, v0, v1, v2, v3;
    ptrdiff_t j = 0;
    for (; j + 4 <= d; j += 4) {
        OKL_LOAD4(xj, x + j);
        OKL_LOAD4(v0, c0 + j);
        OKL_LOAD4(v1, c1 + j);
        OKL_LOAD4(v2, c2 + j);
        OKL_LOAD4(v3, c3 + j);
        OKL_PREFETCH4(ahead, j)
        s0 += v0 * xj;
        s1 += v1 * xj;
        s2 += v2 * xj;
        s3 += v3 * xj;
    }
    double a0 = OKL_LANES(s0), a1 = OKL_LANES(s1), a2 = OKL_LANES(s2), a3 = OKL_LANES(s3);
    for (; j < d; j++) {
        double xj = x[j];
        a0 += c0[j] * xj;
        a1 += c1[j] * xj;
        a2 += c2[j] * xj;
        a3 += c3[j] * xj;
    }
    a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3;
}

/* a[r] <- ||c[r] - x||_2^2, summed directly, for the four rows of a block (as okl_dots4). */
OKL_INLINE void okl_sqdists4(ptrdiff_t d, const double **c, const double *x, double *a,
                             ptrdiff_t ahead)
{
    const double *c0 = c[0], *c1 = c[1], *c2 = c[2], *c3 = c[3];
    okl_v4 s0 = {0.0, 0.0, 0.0, 0.0}, s1 = s0, s2 = s0, s3 = s0, xj, v0, v1, v2, v3;
    ptrdiff_t j = 0;
    for (; j + 4 <= d; j += 4) {
        OKL_LOAD4(xj, x + j);
        OKL_LOAD4(v0, c0 + j);
        OKL_LOAD4(v1, c1 + j);
        OKL_LOAD4(v2, c2 + j);
        OKL_LOAD4(v3, c3 + j);
        OKL_PREFETCH4(ahead, j)
        v0 -= xj;
        v1 -= xj;
        v2 -= xj;
        v3 -= xj;
        s0 += v0 * v0;
        s1 += v1 * v1;
        s2 += v2 * v2;
        s3 += v3 * v3;
    }
    double a0 = OKL_LANES(s0), a1 = OKL_LANES(s1), a2 = OKL_LANES(s2), a3 = OKL_LANES(s3);
    for (; j < d; j++) {
        double xj = x[j], e0 = c0[j] - xj, e1 = c1[j] - xj, e2 = c2[j] - xj, e3 = c3[j] - xj;
        a0 += e0 * e0;
        a1 += e1 * e1;
        a2 += e2 * e2;
        a3 += e3 * e3;
    }
    a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3;
}
#else
/* <x, u>, with a SIMD reduction (a plain loop is bound by the latency of one add chain). */
OKL_INLINE double okl_dot_at(ptrdiff_t d, const double *x, const double *u)
{
    double a = 0.0;
    #pragma omp simd reduction(+:a)
    for (ptrdiff_t j = 0; j < d; j++)
        a += x[j] * u[j];
    return a;
}

OKL_INLINE void okl_dots4(ptrdiff_t d, const double **c, const double *x, double *a,
                          ptrdiff_t ahead)
{
    (void)ahead;
    for (int r = 0; r < 4; r++)
        a[r] = okl_dot_at(d, c[r], x);
}

OKL_INLINE void okl_sqdists4(ptrdiff_t d, const double **c, const double *x, double *a,
                             ptrdiff_t ahead)
{
    (void)ahead;
    for (int r = 0; r < 4; r++) {
        double s = 0.0;
        for (ptrdiff_t j = 0; j < d; j++) {
            double e = c[r][j] - x[j];
            s += e * e;
        }
        a[r] = s;
    }
}
#endif
OKL_LEVELS(double, okl_dot, (ptrdiff_t d, const double *x, const double *u), (d, x, u))

/* The loop over the rows of C, four at a time through `block4` (okl_dots4, okl_sqdists4), into
 * out; compiled twice, with and without the prefetches (okl_ahead). */
#define OKL_FOR_BLOCKS(block4) \
    do { \
        const double *c[4]; \
        double a[4]; \
        ptrdiff_t ahead = n > 4 ? okl_ahead(d) : 0; \
        if (ahead) \
            for (ptrdiff_t i = 0; i < n; i += 4) { \
                okl_block(i, n, d, C, c); \
                block4(d, c, x, a, ahead); \
                okl_store(i, n, a, out); \
            } \
        else \
            for (ptrdiff_t i = 0; i < n; i += 4) { \
                okl_block(i, n, d, C, c); \
                block4(d, c, x, a, 0); \
                okl_store(i, n, a, out); \
            } \
    } while (0)

/* out[i] <- <C[i], x> for the rows of the row-major (n, d) matrix C. */
OKL_INLINE void okl_dots_at(ptrdiff_t n, ptrdiff_t d, const double *C, const double *x,
                            double *out)
{
    OKL_FOR_BLOCKS(okl_dots4);
}
OKL_LEVELS_VOID(okl_dots, (ptrdiff_t n, ptrdiff_t d, const double *C, const double *x,
                           double *out),
                (n, d, C, x, out))

/* out[i] <- ||C[i] - x||_2^2, summed directly: exact where |x|^2 + |u|^2 - 2<x, u> would cancel
 * (nearby points far from 0) or overflow (norms past 1e154); NaN stays NaN. */
OKL_INLINE void okl_sqdists_at(ptrdiff_t n, ptrdiff_t d, const double *C, const double *x,
                               double *out)
{
    OKL_FOR_BLOCKS(okl_sqdists4);
}
OKL_LEVELS_VOID(okl_sqdists, (ptrdiff_t n, ptrdiff_t d, const double *C, const double *x,
                              double *out),
                (n, d, C, x, out))

/* The distance rule of okl_sqdists_norms (docs/algorithms.md, section 0.4): with at least
 * OKL_EXPAND_MIN_D coordinates, the expanded form D = (xx + cc) - 2 <c, x> is kept when
 * D >= OKL_CANCEL_TAU (xx + cc), with xx + cc finite; otherwise D is summed directly. */
#define OKL_EXPAND_MIN_D 64
#define OKL_CANCEL_TAU 0.25
#define OKL_DBL_MAX 1.7976931348623157e308

/* out[i] <- ||C[i] - x||_2^2 from the squared norms cc[i] = ||C[i]||^2 and xx = ||x||^2:
 * (xx + cc[i]) - 2 <C[i], x>, one multiply-add per coordinate as a dot product, where that keeps
 * its digits; summed directly (okl_sqdists) where the expanded form cancels
 * (D < OKL_CANCEL_TAU (xx + cc[i]): nearby points far from 0), overflows, or is NaN.  Below
 * OKL_EXPAND_MIN_D coordinates the direct sum costs no more (measured): every row is summed
 * directly.  The value of a row depends on that row, x and d only. */
OKL_INLINE int okl_expanded_ok(double dist, double s)
{
    return (dist >= OKL_CANCEL_TAU * s) & (s <= OKL_DBL_MAX);      /* false for NaN */
}

OKL_INLINE void okl_sqdists_norms_at(ptrdiff_t n, ptrdiff_t d, const double *C,
                                     const double *cc, const double *x, double xx, double *out)
{
    if (d < OKL_EXPAND_MIN_D) {
        okl_sqdists_at(n, d, C, x, out);
        return;
    }
    okl_dots_at(n, d, C, x, out);
    for (ptrdiff_t i0 = 0; i0 < n; i0 += 256) {
        ptrdiff_t end = n - i0 < 256 ? n : i0 + 256;
        int ok = 1;
        for (ptrdiff_t i = i0; i < end; i++) {
            double s = xx + cc[i];
            out[i] = s - 2.0 * out[i];
            ok &= okl_expanded_ok(out[i], s);
        }
        if (!ok)            /* rare: sum directly the rows where the expanded form cancels */
            for (ptrdiff_t i = i0; i < end; i++)
                if (!okl_expanded_ok(out[i], xx + cc[i]))
                    okl_sqdists_at(1, d, C + i * d, x, out + i);
    }
}
OKL_LEVELS_VOID(okl_sqdists_norms, (ptrdiff_t n, ptrdiff_t d, const double *C, const double *cc,
                                    const double *x, double xx, double *out),
                (n, d, C, cc, x, xx, out))

/* out[i] <- ||C[i] - x||_1. */
OKL_INLINE void okl_l1dists_at(ptrdiff_t n, ptrdiff_t d, const double *C, const double *x,
                               double *out)
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
OKL_LEVELS_VOID(okl_l1dists, (ptrdiff_t n, ptrdiff_t d, const double *C, const double *x,
                              double *out),
                (n, d, C, x, out))

/* kb[i] <- exp(-gamma kb[i]) for distances kb[i] >= 0, NaN kept: Gaussian and Laplacian values
 * from squared or L1 distances. */
OKL_INLINE void okl_exp_scaled_at(ptrdiff_t n, double gamma, double *kb)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        double v = kb[i];
        kb[i] = v == v ? okl_exp_nonpos(-gamma * v) : v;
    }
}
OKL_LEVELS_VOID(okl_exp_scaled, (ptrdiff_t n, double gamma, double *kb), (n, gamma, kb))

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
