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

/* x (REAL_T under -DPDNN_REAL: float16 or bfloat16) widened, exactly,
 * into y (float): the float32 copy of their input that the reduced-dtype
 * convolutions reduce over (backends/opencl/cl_cast.c,
 * pdnn__cl_widen_locked). A 4-d view: dims and each side's element
 * strides, axes ordered by the host so that axis 3 is x's innermost. A
 * work-item widens 8 along it, through one 8-wide load where x's stride
 * there is 1 (vload_half8, or a ushort8 widened by a swizzle: PoCL keeps
 * those vector, where a scalar vload_half is a software conversion) and
 * one vector store where y's is 1 too. */
__kernel void cast_widen(__global const REAL_T *x, long x_off, long4 xs, __global float *y, long y_off, long4 ys,
                         long4 dims, long items)
{
    const long i = (long)get_global_id(0);
    if (i >= items)
        return;
    const long nb = (dims.s3 + 7) / 8;
    long t = i / nb;
    const long a3 = i % nb * 8, a2 = t % dims.s2;
    t /= dims.s2;
    const long a1 = t % dims.s1, a0 = t / dims.s1;
    __global const REAL_T *xp = x + x_off + a0 * xs.s0 + a1 * xs.s1 + a2 * xs.s2 + a3 * xs.s3;
    __global float *yp = y + y_off + a0 * ys.s0 + a1 * ys.s1 + a2 * ys.s2 + a3 * ys.s3;
    if (a3 + 8 <= dims.s3 && xs.s3 == 1) {
        const float8 v = LOADR8(0, xp);
        if (ys.s3 == 1) {
            vstore8(v, 0, yp);
        } else {
            float o[8];
            vstore8(v, 0, o);
            for (int l = 0; l < 8; l++)
                yp[l * ys.s3] = o[l];
        }
        return;
    }
    for (int l = 0; l < 8 && a3 + l < dims.s3; l++)
        yp[l * ys.s3] = LOAD_REAL(xp, l * xs.s3);
}
