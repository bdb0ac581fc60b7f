/* float16 and bfloat16 conversions (see half.h): bit manipulation only,
 * so the result does not depend on the compiler's or the CPU's rounding
 * mode or on _Float16 support. */
#include "core/half.h"

#include <string.h>

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float float_of(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* q, the value shifted right by shift bits, rounded to nearest even on
 * the bits shifted out. */
static uint32_t shift_rne(uint32_t v, unsigned shift)
{
    const uint32_t q = v >> shift, rem = v & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    return q + (rem > half || (rem == half && (q & 1u)));
}

uint16_t pdnn__f32_to_f16(float f)
{
    const uint32_t x = bits_of(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        /* NaN: numpy's rule, the payload's top 10 bits, kept a NaN where
         * they are all 0. */
        uint16_t h = (uint16_t)(0x7c00u | ((ax >> 13) & 0x3ffu));
        return (uint16_t)(sign | (h == 0x7c00u ? 0x7c01u : h));
    }
    if (ax >= 0x477ff000u) /* 65520 and up (ties to even go up): infinity */
        return (uint16_t)(sign | 0x7c00u);
    const uint32_t e = ax >> 23;
    if (e >= 113) /* a normal: rebias, round the 13 bits dropped; a carry
                     moves into the exponent as it should */
        return (uint16_t)(sign | shift_rne(((e - 112u) << 23) | (ax & 0x7fffffu), 13));
    if (e < 102) /* below 2^-25: rounds to 0 */
        return sign;
    /* A float16 subnormal: the value in units of 2^-24 (the significand
     * with its hidden bit, shifted by 126 - e, 14 to 24 bits). */
    return (uint16_t)(sign | shift_rne((ax & 0x7fffffu) | 0x800000u, 126u - e));
}

float pdnn__f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) { /* zero or subnormal: m units of 2^-24, exact in float */
        const float v = (float)m * 0x1p-24f;
        return float_of(bits_of(v) | sign);
    }
    if (e == 31)
        return float_of(sign | 0x7f800000u | (m << 13));
    return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t pdnn__f32_to_bf16(float f)
{
    const uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, sign and payload top kept */
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float pdnn__bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

const char *pdnn__dtype_name(pdnn_dtype t)
{
    switch (t) {
    case PDNN_FLOAT32: return "float32";
    case PDNN_FLOAT16: return "float16";
    case PDNN_BFLOAT16: return "bfloat16";
    case PDNN_INT32: return "int32";
    }
    return "unknown-dtype";
}

size_t pdnn__dtype_size(pdnn_dtype t)
{
    return t == PDNN_FLOAT16 || t == PDNN_BFLOAT16 ? 2 : t == PDNN_FLOAT32 || t == PDNN_INT32 ? 4 : 0;
}

int pdnn__dtype_is_float(pdnn_dtype t)
{
    return t == PDNN_FLOAT32 || t == PDNN_FLOAT16 || t == PDNN_BFLOAT16;
}

void pdnn__to_f32(pdnn_dtype t, const void *src, float *dst, size_t n)
{
    const uint16_t *s = src;
    if (t == PDNN_FLOAT16)
        for (size_t i = 0; i < n; i++)
            dst[i] = pdnn__f16_to_f32(s[i]);
    else if (t == PDNN_BFLOAT16)
        for (size_t i = 0; i < n; i++)
            dst[i] = pdnn__bf16_to_f32(s[i]);
    else if (dst != src)
        memmove(dst, src, n * sizeof *dst);
}

void pdnn__from_f32(pdnn_dtype t, const float *src, void *dst, size_t n)
{
    uint16_t *d = dst;
    if (t == PDNN_FLOAT16)
        for (size_t i = 0; i < n; i++)
            d[i] = pdnn__f32_to_f16(src[i]);
    else if (t == PDNN_BFLOAT16)
        for (size_t i = 0; i < n; i++)
            d[i] = pdnn__f32_to_bf16(src[i]);
    else if (dst != src)
        memmove(dst, src, n * sizeof *src);
}
