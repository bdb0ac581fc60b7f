/* What every OpenCL program of polydnn shares: the backend builds each
 * program from this file first (cl_common.c, pdnn__cl_prelude_of: OpenCL
 * C has no include path for embedded sources), so each helper here is
 * written once. Only macros: an unused one costs nothing and warns about
 * nothing, where an unused static function warns under -Wunused-function.
 * Element-type helpers (half, bfloat16) belong here too. */

/* A float16 or int16 passed to or returned by a built-in (vload16,
 * vstore16, fma, fmax, select, min, max, convert_float16) crosses a call
 * whose vector ABI differs on x86 without AVX-512, and PoCL's clang warns
 * so ("N warnings generated." on the user's terminal). There the
 * built-ins take 8-lane halves, which is also how that target holds a
 * 16-lane vector (SPLIT16 says so); elsewhere they take it whole. */
#if defined(__x86_64__) && !defined(__AVX512F__)
#define LOAD16(i, p) ((float16)(vload8(0, (p) + 16 * (long)(i)), vload8(0, (p) + 16 * (long)(i) + 8)))
#define STORE16(v, i, p) (vstore8((v).lo, 0, (p) + 16 * (long)(i)), vstore8((v).hi, 0, (p) + 16 * (long)(i) + 8))
#define FMA16(a, b, c) ((float16)(fma((a).lo, (b).lo, (c).lo), fma((a).hi, (b).hi, (c).hi)))
#define MAX16(a, b) ((float16)(fmax((a).lo, (b).lo), fmax((a).hi, (b).hi)))
#define MIN16(a, b) ((float16)(fmin((a).lo, (b).lo), fmin((a).hi, (b).hi)))
#define SELECT16(a, b, m) ((float16)(select((a).lo, (b).lo, (m).lo), select((a).hi, (b).hi, (m).hi)))
#define SELECT16I(a, b, m) ((int16)(select((a).lo, (b).lo, (m).lo), select((a).hi, (b).hi, (m).hi)))
#define MIN16I(v, s) ((int16)(min((v).lo, (int8)(s)), min((v).hi, (int8)(s))))
#define MAX16I(v, s) ((int16)(max((v).lo, (int8)(s)), max((v).hi, (int8)(s))))
#define TO_FLOAT16(v) ((float16)(convert_float8((v).lo), convert_float8((v).hi)))
#define SPLIT16 1
#else
#define LOAD16 vload16
#define STORE16 vstore16
#define FMA16 fma
#define MAX16 fmax
#define MIN16 fmin
#define SELECT16 select
#define SELECT16I select
/* The scalar broadcast by hand: Oclgrind's min and max of an int vector
 * and a scalar got lanes past the first wrong (average pooling's divisors
 * in pool2d_nchw_rows and pool2d_nchw_flat: inf and -3x the average). */
#define MIN16I(v, s) min((v), (int16)(s))
#define MAX16I(v, s) max((v), (int16)(s))
#define TO_FLOAT16 convert_float16
#endif

/* The flat index I of a walk over the elements of an N x C x H x W
 * tensor, one work-item each, as n (long) and c, h, w (int), declared
 * here. The fastest axis comes first, w or, where CLAST, c (the NHWC
 * order), so that neighbouring work-items write neighbouring memory of
 * a tensor in that layout. */
#define NCHW_OF_INDEX(I, C, H, W, CLAST, n, c, h, w) \
    int c, h, w;                                     \
    long n;                                          \
    do {                                             \
        long t_ = (I);                               \
        if (CLAST) {                                 \
            c = (int)(t_ % (C));                     \
            t_ /= (C);                               \
            w = (int)(t_ % (W));                     \
            t_ /= (W);                               \
            h = (int)(t_ % (H));                     \
            n = t_ / (H);                            \
        } else {                                     \
            w = (int)(t_ % (W));                     \
            t_ /= (W);                               \
            h = (int)(t_ % (H));                     \
            t_ /= (H);                               \
            c = (int)(t_ % (C));                     \
            n = t_ / (C);                            \
        }                                            \
    } while (0)
