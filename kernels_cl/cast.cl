/* pdnn_cast (backends/opencl/cl_cast.c): y[i] = x[i] in another storage
 * dtype, one work-item per element, through float (exact for every value
 * of the three dtypes) and the prelude's storage macros: one rounding.
 * cast_<from>_<to>, f32 float, f16 half, bf16 bfloat16 (ushort bits). */

#define CAST_BODY(LOADX, STOREY)                                                                       \
    const long i = (long)get_global_id(0);                                                             \
    if (i < n) {                                                                                       \
        const float v = LOADX(x, x_off + i);                                                           \
        STOREY(v, y, y_off + i);                                                                       \
    }

__kernel void cast_f32_f32(__global const float *x, long x_off, __global float *y, long y_off, long n)
{
    CAST_BODY(F32_LOAD, F32_STORE)
}
__kernel void cast_f32_f16(__global const float *x, long x_off, __global half *y, long y_off, long n)
{
    CAST_BODY(F32_LOAD, F16_STORE)
}
__kernel void cast_f32_bf16(__global const float *x, long x_off, __global ushort *y, long y_off, long n)
{
    CAST_BODY(F32_LOAD, BF16_STORE)
}
__kernel void cast_f16_f32(__global const half *x, long x_off, __global float *y, long y_off, long n)
{
    CAST_BODY(F16_LOAD, F32_STORE)
}
__kernel void cast_f16_f16(__global const half *x, long x_off, __global half *y, long y_off, long n)
{
    CAST_BODY(F16_LOAD, F16_STORE)
}
__kernel void cast_f16_bf16(__global const half *x, long x_off, __global ushort *y, long y_off, long n)
{
    CAST_BODY(F16_LOAD, BF16_STORE)
}
__kernel void cast_bf16_f32(__global const ushort *x, long x_off, __global float *y, long y_off, long n)
{
    CAST_BODY(BF16_LOAD, F32_STORE)
}
__kernel void cast_bf16_f16(__global const ushort *x, long x_off, __global half *y, long y_off, long n)
{
    CAST_BODY(BF16_LOAD, F16_STORE)
}
__kernel void cast_bf16_bf16(__global const ushort *x, long x_off, __global ushort *y, long y_off, long n)
{
    CAST_BODY(BF16_LOAD, BF16_STORE)
}
