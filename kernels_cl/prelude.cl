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

/* Storage element types (float16 and bfloat16, docs/precision.md). Loads
 * widen to float (exact), stores round once to nearest even; arithmetic
 * stays float. float16 through the core built-ins vload_half and
 * vstore_half_rte (every device, no cl_khr_fp16 needed: a half pointer is
 * only handed to them); bfloat16 through 16-bit integers and shifts, NaN
 * kept a quiet NaN, as src/core/half.c does. */
#define F32_LOAD(p, i) ((p)[i])
#define F32_STORE(v, p, i) ((p)[i] = (v))
#define F16_LOAD(p, i) vload_half((size_t)(i), (p))
#define F16_STORE(v, p, i) vstore_half_rte((v), (size_t)(i), (p))
#define BF16_LOAD(p, i) as_float((uint)(p)[i] << 16)
#define BF16_BITS(u)                                                                                   \
    ((ushort)((((u) & 0x7fffffffu) > 0x7f800000u) ? (((u) >> 16) | 0x40u)                              \
                                                    : (((u) + 0x7fffu + (((u) >> 16) & 1u)) >> 16)))
#define BF16_STORE(v, p, i) ((p)[i] = BF16_BITS(as_uint((float)(v))))
/* float16's widening inline, in integer operations: infinities and NaN
 * (payload kept), normals (exponent rebiased by 112 << 23), subnormals
 * through an exact int-to-float conversion (no float32 subnormal, which a
 * device may flush). A depthwise backward data's scalar loads through it
 * ran on PoCL at 0.94-0.97x float32's speed at 144 channels of 56x56,
 * through vload_half at 0.82-0.84x; at 32 of 112x112 0.88x either way
 * (bench/results-lowp.md). */
#define F16_WIDEN_BITS(h)                                                                           \
    (((h) & 0x7c00u) == 0x7c00u ? as_float(((h) & 0x8000u) << 16 | 0x7f800000u | ((h) & 0x3ffu) << 13) \
     : ((h) & 0x7c00u) == 0u    ? as_float(((h) & 0x8000u) << 16 | as_uint((float)((h) & 0x3ffu) * 0x1p-24f)) \
                                : as_float(((h) & 0x8000u) << 16 | ((((h) & 0x7fffu) << 13) + 0x38000000u)))
#define F16_LOAD_INLINE(p, i) F16_WIDEN_BITS((uint)((__global const ushort *)(p))[i])
/* A kernel written over REAL_T buffers, built with -DPDNN_REAL=1 (float16)
 * or 2 (bfloat16), else float32. LOAD_REAL_S: a scalar load whose
 * float16 widening is inline (F16_LOAD_INLINE), for loads in work-item
 * loops. */
#if defined(PDNN_REAL) && PDNN_REAL == 1
#define REAL_T half
#define LOAD_REAL F16_LOAD
#define LOAD_REAL_S F16_LOAD_INLINE
#define STORE_REAL F16_STORE
#elif defined(PDNN_REAL) && PDNN_REAL == 2
#define REAL_T ushort
#define LOAD_REAL BF16_LOAD
#define LOAD_REAL_S BF16_LOAD
#define STORE_REAL BF16_STORE
#else
#define REAL_T float
#define LOAD_REAL F32_LOAD
#define LOAD_REAL_S F32_LOAD
#define STORE_REAL F32_STORE
#endif

/* The vector kernels' loads and stores of N REAL_T at p + N*i as floatN
 * (vloadN's convention): float16 through vload_halfN/vstore_halfN_rte,
 * bfloat16 as ushortN widened and shifted lane-wise, so a reduced-dtype
 * program keeps the float32 one's vectors (a scalar load per element
 * scalarised PoCL's kernels). 16 lanes go as two 8s where SPLIT16. */
/* Loads put each 16-bit lane above a zero one by a swizzle (a convert
 * and shift measured a quarter of float16's speed on PoCL). */
#define BF16_WIDEN2(h) as_float2((ushort4)((ushort2)(0), (h)).s0213)
#define BF16_WIDEN4(h) as_float4((ushort8)((ushort4)(0), (h)).s04152637)
#define BF16_WIDEN8(h) as_float8((ushort16)((ushort8)(0), (h)).s08192a3b4c5d6e7f)
#define BF16_LOADN(n, p, i) BF16_WIDEN##n(vload##n((size_t)(i), (p)))
/* The high halves of the rounded words, taken by a swizzle of the 16-bit
 * lanes (little-endian: the odd ones) after adding the rounding bias. */
#define BF16_ROUNDN(u)                                                                                  \
    select((u) + 0x7fffu + (((u) >> 16) & 1u), (u) | 0x400000u, ((u) & 0x7fffffffu) > 0x7f800000u)
#define BF16_HI2(u) as_ushort4(u).odd
#define BF16_HI4(u) as_ushort8(u).odd
#define BF16_HI8(u) as_ushort16(u).odd
/* Stores write the ushortN as one vector at 2-byte alignment: PoCL's
 * vstoreN of a ushortN was N scalar stores (perf: most of a bfloat16
 * activation's time), where one of a floatN or vstore_halfN is one. */
#if defined(__clang__)
typedef ushort2 __attribute__((aligned(2))) pdnn_bf16x2;
typedef ushort4 __attribute__((aligned(2))) pdnn_bf16x4;
typedef ushort8 __attribute__((aligned(2))) pdnn_bf16x8;
#define BF16_PUTN(n, h, p, i) (*(__global pdnn_bf16x##n *)((p) + (n) * (size_t)(i)) = (h))
#else
#define BF16_PUTN(n, h, p, i) vstore##n((h), (size_t)(i), (p))
#endif
#define BF16_STOREN(n, v, p, i) BF16_PUTN(n, BF16_HI##n(BF16_ROUNDN(as_uint##n(v))), p, i)
#if defined(PDNN_REAL) && PDNN_REAL == 1
#define LOADR2(i, p) vload_half2((size_t)(i), (p))
#define LOADR4(i, p) vload_half4((size_t)(i), (p))
#define LOADR8(i, p) vload_half8((size_t)(i), (p))
#define STORER2(v, i, p) vstore_half2_rte((v), (size_t)(i), (p))
#define STORER4(v, i, p) vstore_half4_rte((v), (size_t)(i), (p))
#define STORER8(v, i, p) vstore_half8_rte((v), (size_t)(i), (p))
#elif defined(PDNN_REAL) && PDNN_REAL == 2
#define LOADR2(i, p) BF16_LOADN(2, p, i)
#define LOADR4(i, p) BF16_LOADN(4, p, i)
#define LOADR8(i, p) BF16_LOADN(8, p, i)
#define STORER2(v, i, p) BF16_STOREN(2, v, p, i)
#define STORER4(v, i, p) BF16_STOREN(4, v, p, i)
#define STORER8(v, i, p) BF16_STOREN(8, v, p, i)
#else
#define LOADR2 vload2
#define LOADR4 vload4
#define LOADR8 vload8
#define STORER2 vstore2
#define STORER4 vstore4
#define STORER8 vstore8
#endif
#if !defined(PDNN_REAL)
#define LOADR16 LOAD16
#define STORER16 STORE16
#else
#define LOADR16(i, p) ((float16)(LOADR8(2 * (long)(i), (p)), LOADR8(2 * (long)(i) + 1, (p))))
#define STORER16(v, i, p) (STORER8((v).lo, 2 * (long)(i), (p)), STORER8((v).hi, 2 * (long)(i) + 1, (p)))
#endif
