/* Peak-rate probes for `polydnn bench --peak` (backends/opencl/cl_peak.c),
 * built as a program of their own, never into the main one.
 *
 * peak_fma*: NACC independent chains of fused multiply-adds per
 * work-item, each a vector of floats, so that neither FMA latency nor
 * the loop bound the rate: a CPU keeps the chains in its vector
 * registers (float8 = one AVX ymm, float16 = one AVX-512 zmm), a GPU
 * gets instruction-level parallelism on top of its many work-items. The
 * chains converge to b / (1 - a) = 1, so nothing overflows or turns
 * denormal; the sum is stored so the compiler cannot drop the work.
 * Each iteration does 4 * NACC vector FMAs. */

#define STEP4(x) x = fma(x, a, b); x = fma(x, a, b); x = fma(x, a, b); x = fma(x, a, b)

/* A float16 passed to fma crosses a call whose vector ABI differs on x86
 * without AVX-512, and PoCL's clang warns so ("N warnings generated." on
 * the user's terminal). There the float16 chains take fma in float8
 * halves, which is also how that target holds them. FMA16_AB(x) is
 * x = a x + b with scalars a, b (prelude.cl's FMA16 takes vectors). */
#if defined(__x86_64__) && !defined(__AVX512F__)
#define FMA16_AB(x) x = (float16)(fma((x).lo, (float8)(a), (float8)(b)), fma((x).hi, (float8)(a), (float8)(b)))
#else
#define FMA16_AB(x) x = fma(x, a, b)
#endif
#define STEP4_16(x) FMA16_AB(x); FMA16_AB(x); FMA16_AB(x); FMA16_AB(x)

__kernel void peak_fma4(__global float *out, int iters, float a, float b)
{
    const float s = (float)get_global_id(0) * 1e-9f;
    float4 x0 = (float4)(s), x1 = x0 + 0.01f, x2 = x0 + 0.02f, x3 = x0 + 0.03f;
    float4 x4 = x0 + 0.04f, x5 = x0 + 0.05f, x6 = x0 + 0.06f, x7 = x0 + 0.07f;
    float4 x8 = x0 + 0.08f, x9 = x0 + 0.09f, x10 = x0 + 0.10f, x11 = x0 + 0.11f;
    float4 x12 = x0 + 0.12f, x13 = x0 + 0.13f, x14 = x0 + 0.14f, x15 = x0 + 0.15f;
    for (int i = 0; i < iters; i++) {
        STEP4(x0); STEP4(x1); STEP4(x2); STEP4(x3); STEP4(x4); STEP4(x5); STEP4(x6); STEP4(x7);
        STEP4(x8); STEP4(x9); STEP4(x10); STEP4(x11); STEP4(x12); STEP4(x13); STEP4(x14); STEP4(x15);
    }
    float4 t = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)) + ((x8 + x9) + (x10 + x11)) +
               ((x12 + x13) + (x14 + x15));
    out[get_global_id(0)] = t.s0 + t.s1 + t.s2 + t.s3;
}

__kernel void peak_fma8(__global float *out, int iters, float a, float b)
{
    const float s = (float)get_global_id(0) * 1e-9f;
    float8 x0 = (float8)(s), x1 = x0 + 0.01f, x2 = x0 + 0.02f, x3 = x0 + 0.03f;
    float8 x4 = x0 + 0.04f, x5 = x0 + 0.05f, x6 = x0 + 0.06f, x7 = x0 + 0.07f;
    float8 x8 = x0 + 0.08f, x9 = x0 + 0.09f, x10 = x0 + 0.10f, x11 = x0 + 0.11f;
    for (int i = 0; i < iters; i++) {
        STEP4(x0); STEP4(x1); STEP4(x2); STEP4(x3); STEP4(x4); STEP4(x5);
        STEP4(x6); STEP4(x7); STEP4(x8); STEP4(x9); STEP4(x10); STEP4(x11);
    }
    float8 t = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)) + ((x8 + x9) + (x10 + x11));
    float4 u = t.lo + t.hi;
    out[get_global_id(0)] = u.s0 + u.s1 + u.s2 + u.s3;
}

__kernel void peak_fma16(__global float *out, int iters, float a, float b)
{
    const float s = (float)get_global_id(0) * 1e-9f;
    float16 x0 = (float16)(s), x1 = x0 + 0.01f, x2 = x0 + 0.02f, x3 = x0 + 0.03f;
    float16 x4 = x0 + 0.04f, x5 = x0 + 0.05f, x6 = x0 + 0.06f, x7 = x0 + 0.07f;
    for (int i = 0; i < iters; i++) {
        STEP4_16(x0); STEP4_16(x1); STEP4_16(x2); STEP4_16(x3); STEP4_16(x4); STEP4_16(x5); STEP4_16(x6); STEP4_16(x7);
    }
    float16 t = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    float8 u = t.lo + t.hi;
    float4 v = u.lo + u.hi;
    out[get_global_id(0)] = v.s0 + v.s1 + v.s2 + v.s3;
}

/* dst = src, one float4 per work-item: the streaming bandwidth a
 * memory-bound kernel such as pooling can hope for. */
__kernel void peak_copy(__global const float4 *src, __global float4 *dst)
{
    const size_t i = get_global_id(0);
    dst[i] = src[i];
}
