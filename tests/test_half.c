/* src/core/half.c: float16 against numpy's astype(float16) (a table,
 * tests/half_cases.h) and against exact arithmetic over every float16;
 * bfloat16 against a reference written here from its definition (the top
 * 16 bits of float32, rounded to nearest even on the 16 dropped). */
#include "core/half.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half_cases.h"

static uint32_t bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

Test(half, float16_matches_numpy)
{
    const size_t n = sizeof half_cases / sizeof half_cases[0];
    cr_assert_gt(n, 2000);
    for (size_t i = 0; i < n; i++) {
        const uint16_t got = pdnn__f32_to_f16(from_bits(half_cases[i][0]));
        cr_assert_eq(got, half_cases[i][1], "float32 0x%08x (%.9g): got 0x%04x, numpy 0x%04x", half_cases[i][0],
                     (double)from_bits(half_cases[i][0]), got, half_cases[i][1]);
    }
}

/* Every float16 widens to the value its fields define, and narrows back
 * to itself (NaNs: to a NaN of the same sign). */
Test(half, float16_every_value_round_trips)
{
    for (uint32_t h = 0; h < 0x10000u; h++) {
        const float f = pdnn__f16_to_f32((uint16_t)h);
        const int e = (int)((h >> 10) & 0x1f), m = (int)(h & 0x3ff);
        const double sign = (h & 0x8000u) ? -1.0 : 1.0;
        if (e == 31) {
            cr_assert(m ? isnan(f) : isinf(f), "0x%04x", h);
            cr_assert_eq(signbit(f) != 0, (h & 0x8000u) != 0, "0x%04x", h);
            const uint16_t back = pdnn__f32_to_f16(f);
            cr_assert_eq(back, h, "0x%04x -> %g -> 0x%04x", h, (double)f, back);
            continue;
        }
        const double want = sign * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
        cr_assert_eq((double)f, want, "0x%04x: %.9g, not %.9g", h, (double)f, want);
        cr_assert_eq(pdnn__f32_to_f16(f), h, "0x%04x does not round-trip", h);
    }
}

/* The nearest float16 by exhaustive search over the positive values (ties
 * to the even one), for a finite x: the definition, not the algorithm. */
static uint16_t nearest_f16(float x)
{
    const double ax = fabs((double)x);
    uint16_t best = 0;
    double bd = INFINITY;
    for (uint16_t h = 0; h < 0x7c00u; h++) {
        const double d = fabs((double)pdnn__f16_to_f32(h) - ax);
        if (d < bd || (d == bd && !(h & 1u))) {
            bd = d;
            best = h;
        }
    }
    /* Past 65504 + half an ulp (65520, a tie going to the even infinity). */
    if (ax >= 65520.0)
        best = 0x7c00u;
    return (uint16_t)(best | (signbit(x) ? 0x8000u : 0));
}

Test(half, float16_rounds_to_nearest_even)
{
    /* a sweep of float32 bit patterns across the whole range, both signs */
    for (uint64_t x = 0; x < 0x100000000ull; x += 0x00fe1235ull) {
        const float f = from_bits((uint32_t)x);
        if (isnan(f))
            continue;
        cr_assert_eq(pdnn__f32_to_f16(f), nearest_f16(f), "float32 0x%08x (%.9g)", (unsigned)x, (double)f);
    }
    cr_assert_eq(pdnn__f32_to_f16(65519.99f), 0x7bffu);
    cr_assert_eq(pdnn__f32_to_f16(65520.0f), 0x7c00u);
    cr_assert_eq(pdnn__f32_to_f16(0x1p-25f), 0x0000u);          /* a tie: to the even 0 */
    cr_assert_eq(pdnn__f32_to_f16(0x1.000002p-25f), 0x0001u);
    cr_assert_eq(pdnn__f32_to_f16(0x3p-25f), 0x0002u);          /* 1.5 units: to the even 2 */
    cr_assert_eq(pdnn__f32_to_f16(-0.0f), 0x8000u);
    cr_assert_eq(pdnn__f32_to_f16(-INFINITY), 0xfc00u);
    const uint16_t qn = pdnn__f32_to_f16(from_bits(0xffc00001u)), sn = pdnn__f32_to_f16(from_bits(0x7f800001u));
    cr_assert((qn & 0x7c00u) == 0x7c00u && (qn & 0x3ffu) && (qn & 0x8000u), "0x%04x", qn);
    cr_assert((sn & 0x7c00u) == 0x7c00u && (sn & 0x3ffu), "a NaN whose payload is below float16's: 0x%04x", sn);
}

/* bfloat16 by its definition, in 64-bit arithmetic. */
static uint16_t ref_bf16(uint32_t x)
{
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    uint64_t hi = x >> 16, lo = x & 0xffffu;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u)))
        hi++;
    return (uint16_t)hi;
}

Test(half, bfloat16_matches_definition)
{
    for (uint64_t x = 0; x < 0x100000000ull; x += 0x0000fff1ull) {
        const uint16_t got = pdnn__f32_to_bf16(from_bits((uint32_t)x)), want = ref_bf16((uint32_t)x);
        cr_assert_eq(got, want, "float32 0x%08x: 0x%04x, not 0x%04x", (unsigned)x, got, want);
    }
    /* the edges: ties both ways, the largest finite rounding to infinity,
     * a subnormal, NaN kept a (quiet) NaN */
    const uint32_t edge[] = {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f7f8000u, 0x7f7fffffu, 0x00008000u,
                             0x00018000u, 0x7f800001u, 0xff800000u, 0x80000000u};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        cr_assert_eq(pdnn__f32_to_bf16(from_bits(edge[i])), ref_bf16(edge[i]), "0x%08x", edge[i]);
    cr_assert_eq(pdnn__f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80u);
    cr_assert(isnan(pdnn__bf16_to_f32(pdnn__f32_to_bf16(from_bits(0x7f800001u)))));
    for (uint32_t h = 0; h < 0x10000u; h++) {
        const float f = pdnn__bf16_to_f32((uint16_t)h);
        cr_assert_eq(bits(f), h << 16);
        if (!isnan(f))
            cr_assert_eq(pdnn__f32_to_bf16(f), h, "0x%04x does not round-trip", h);
    }
}

Test(half, arrays_convert_each_element)
{
    const float x[5] = {1.0f, -2.5f, 65504.0f, 1e-8f, 3.14159f};
    uint16_t h[5];
    float back[5];
    pdnn__from_f32(PDNN_FLOAT16, x, h, 5);
    pdnn__to_f32(PDNN_FLOAT16, h, back, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(bits(back[i]), bits(pdnn__f16_to_f32(pdnn__f32_to_f16(x[i]))));
    pdnn__from_f32(PDNN_BFLOAT16, x, h, 5);
    pdnn__to_f32(PDNN_BFLOAT16, h, back, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(bits(back[i]), (uint32_t)pdnn__f32_to_bf16(x[i]) << 16);
    cr_assert(pdnn__dtype_is_float(PDNN_BFLOAT16) && !pdnn__dtype_is_float(PDNN_INT32));
}
