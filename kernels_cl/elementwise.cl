/* The ops around convolution: one work-item per output element (per
 * (outer, inner) pair for softmax). Buffers come with element offsets, as
 * in conv2d_direct, because a tensor is (region, offset). Elements are
 * addressed in memory order, so layouts never enter here. Outputs may alias
 * inputs where backend.h allows it, hence no restrict. */

/* max(v, 0) with NaN kept as NaN (fmax would drop it). */
static inline float relu1(float v)
{
    return v > 0.0f ? v : (isnan(v) ? v : 0.0f);
}

__kernel void ew_add(__global const float *a, long a_off,
                     __global const float *b, long b_off,
                     __global float *y, long y_off,
                     long n)
{
    const long i = (long)get_global_id(0);
    if (i >= n)
        return;
    y[y_off + i] = a[a_off + i] + b[b_off + i];
}

/* y[i] = relu?(x[i] + bias[(i / inner) % c]) */
__kernel void ew_bias_add(__global const float *x, long x_off,
                          __global const float *bias, long b_off,
                          __global float *y, long y_off,
                          long n, long c, long inner, int relu)
{
    const long i = (long)get_global_id(0);
    if (i >= n)
        return;
    const float v = x[x_off + i] + bias[b_off + (i / inner) % c];
    y[y_off + i] = relu ? relu1(v) : v;
}

__kernel void ew_relu(__global const float *x, long x_off,
                      __global float *y, long y_off,
                      long n)
{
    const long i = (long)get_global_id(0);
    if (i >= n)
        return;
    y[y_off + i] = relu1(x[x_off + i]);
}

/* Softmax over the middle axis of [outer][c][inner]. Neighbouring
 * work-items take neighbouring i, so each pass reads memory coalesced.
 * Subtracting the max keeps exp from overflowing; y (never aliasing x)
 * holds the exponentials between the sum and the scaling. */
__kernel void softmax_mid(__global const float *x, long x_off,
                          __global float *y, long y_off,
                          long c, long inner, long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const long o = gid / inner, i = gid % inner;
    const long xb = x_off + o * c * inner + i, yb = y_off + o * c * inner + i;
    /* fmax skips NaN, but a NaN input still makes sum, so every y, NaN. */
    float m = -INFINITY;
    for (long k = 0; k < c; k++)
        m = fmax(m, x[xb + k * inner]);
    float sum = 0.0f;
    for (long k = 0; k < c; k++) {
        const float e = exp(x[xb + k * inner] - m);
        y[yb + k * inner] = e;
        sum += e;
    }
    for (long k = 0; k < c; k++)
        y[yb + k * inner] /= sum;
}

/* Row-major C[m x n] = op(A) op(B); A is stored k x m when trans_a, B
 * n x k when trans_b. The fallback when CLBlast is absent. */
__kernel void matmul_naive(__global const float *a, long a_off,
                           __global const float *b, long b_off,
                           __global float *cm, long c_off,
                           long m, long n, long k, int2 trans)
{
    const long gid = (long)get_global_id(0);
    if (gid >= m * n)
        return;
    const long i = gid / n, j = gid % n;
    /* Element (i, p) of op(A) is at ai + p * as, (p, j) of op(B) at bj + p * bs. */
    const long ai = a_off + (trans.s0 ? i : i * k), as = trans.s0 ? m : 1;
    const long bj = b_off + (trans.s1 ? j * k : j), bs = trans.s1 ? 1 : n;
    float acc = 0.0f;
    for (long p = 0; p < k; p++)
        acc = fma(a[ai + p * as], b[bj + p * bs], acc);
    cm[c_off + gid] = acc;
}
