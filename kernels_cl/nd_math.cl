/* The N-d math ops (backends/opencl/cl_nd_math.c): transpose, softmax
 * along an axis, layer norm, reductions. Shapes come in core's plainest
 * form (src/backend.h): at most 8 axes, as long8 dims and strides. */

/* Element k of a long8 (k < 8). */
static long pick8(long8 v, int k)
{
    switch (k) {
    case 0: return v.s0;
    case 1: return v.s1;
    case 2: return v.s2;
    case 3: return v.s3;
    case 4: return v.s4;
    case 5: return v.s5;
    case 6: return v.s6;
    default: return v.s7;
    }
}

/* y (packed, dims d) from x through strides xs: one work-item per element
 * of y in memory order, so neighbouring items write neighbouring floats. */
__kernel void nd_transpose(__global const float *x, long x_off, __global float *y, long y_off, int rank, long8 d,
                           long8 xs, long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    long r = i, off = x_off;
    for (int k = rank - 1; k >= 0; k--) {
        const long n = pick8(d, k), c = r % n;
        r /= n;
        off += c * pick8(xs, k);
    }
    y[y_off + i] = x[off];
}

/* Softmax along the middle axis of [outer][n][inner] with inner > 1: one
 * work-item per (outer, inner) column, neighbours on neighbouring
 * columns (coalesced). y (never x) holds the exponentials between the
 * passes. */
__kernel void nd_softmax_cols(__global const float *x, long x_off, __global float *y, long y_off, long n, long inner,
                              long total, int lg)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const long o = gid / inner, i = gid - o * inner;
    const long xb = x_off + o * n * inner + i, yb = y_off + o * n * inner + i;
    float m = -INFINITY;
    int nan = 0;
    for (long k = 0; k < n; k++) {
        const float v = x[xb + k * inner];
        nan |= isnan(v);
        m = fmax(m, v);
    }
    float sum = 0.0f;
    for (long k = 0; k < n; k++)
        sum += exp(x[xb + k * inner] - m);
    const float lse = nan ? NAN : m + log(sum);
    for (long k = 0; k < n; k++) {
        const float v = x[xb + k * inner] - lse;
        y[yb + k * inner] = lg ? v : exp(v);
    }
}

/* The work-group's max (op 0) or sum (op 1) of v, through red (one float
 * per item; the group's size a power of two); every item gets it. With
 * a group of one, as on CPUs, it is v. */
static float group_reduce(float v, __local float *red, int op)
{
    const size_t lid = get_local_id(0), n = get_local_size(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s /= 2) {
        if (lid < s)
            red[lid] = op == 0 ? fmax(red[lid], red[lid + s]) : red[lid] + red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Softmax of rows (inner 1): one work-group per row, its items striding
 * along it (a plain loop where the group is one item). */
__kernel void nd_softmax_rows(__global const float *x, long x_off, __global float *y, long y_off, long n, int lg,
                              __local float *red)
{
    const long row = (long)get_group_id(0), lid = (long)get_local_id(0), ls = (long)get_local_size(0);
    __global const float *xr = x + x_off + row * n;
    __global float *yr = y + y_off + row * n;
    float m = -INFINITY, nan = 0.0f;
    for (long k = lid; k < n; k += ls) {
        nan = isnan(xr[k]) ? 1.0f : nan;
        m = fmax(m, xr[k]);
    }
    m = group_reduce(m, red, 0);
    nan = group_reduce(nan, red, 0);
    float sum = 0.0f;
    for (long k = lid; k < n; k += ls)
        sum += exp(xr[k] - m);
    sum = group_reduce(sum, red, 1);
    const float lse = nan != 0.0f ? NAN : m + log(sum);
    for (long k = lid; k < n; k += ls) {
        const float v = xr[k] - lse;
        yr[k] = lg ? v : exp(v);
    }
}

/* Layer norm: one work-group per row of cols, mean then the biased
 * variance about it (two passes, in float), then y; has_bias 0: no b. */
__kernel void nd_layer_norm(__global const float *x, long x_off, __global const float *g, long g_off,
                            __global const float *b, long b_off, int has_bias, __global float *y, long y_off,
                            long cols, float eps, __local float *red)
{
    const long row = (long)get_group_id(0), lid = (long)get_local_id(0), ls = (long)get_local_size(0);
    __global const float *xr = x + x_off + row * cols;
    __global float *yr = y + y_off + row * cols;
    /* Statistics about the row's first element x0: with a mean far from
     * 0 (1000 +- 1) neither the float sum nor a float mean keeps the
     * digits that x - mean needs, while x - x0 is exact there. */
    const float x0 = xr[0];
    float s = 0.0f;
    for (long j = lid; j < cols; j += ls)
        s += xr[j] - x0;
    const float mean = group_reduce(s, red, 1) / (float)cols; /* of x - x0 */
    float v = 0.0f;
    for (long j = lid; j < cols; j += ls) {
        const float t = (xr[j] - x0) - mean;
        v += t * t;
    }
    const float inv = rsqrt(group_reduce(v, red, 1) / (float)cols + eps);
    for (long j = lid; j < cols; j += ls)
        yr[j] = ((xr[j] - x0) - mean) * inv * g[g_off + j] + (has_bias ? b[b_off + j] : 0.0f);
}

/* Reduction: one work-item per element of y (packed, y's dims: x's with
 * the reduced axes 1), so neighbours read neighbouring x where x's inner
 * axis is kept; each loops over its reduced elements with an odometer.
 * kind: 0 sum, 1 mean, 2 max, 3 min (NaN wins); count: elements reduced. */
__kernel void nd_reduce(__global const float *x, long x_off, __global float *y, long y_off, int rank, long8 d,
                        int axes, int kind, long count, long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    long xs[8], base = 0, r = i, s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        const long n = pick8(d, k);
        xs[k] = s;
        s *= n;
        if (!(axes >> k & 1)) {
            base += (r % n) * xs[k];
            r /= n;
        }
    }
    long idx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float acc = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : 0.0f;
    long off = base;
    for (long j = 0; j < count; j++) {
        const float v = x[x_off + off];
        if (kind >= 2)
            acc = isnan(v) || isnan(acc) ? NAN : kind == 2 ? fmax(acc, v) : fmin(acc, v);
        else
            acc += v;
        for (int k = rank - 1; k >= 0; k--) { /* the next reduced element */
            if (!(axes >> k & 1))
                continue;
            if (++idx[k] < pick8(d, k)) {
                off += xs[k];
                break;
            }
            off -= (idx[k] - 1) * xs[k];
            idx[k] = 0;
        }
    }
    y[y_off + i] = kind == 1 ? acc / (float)count : acc;
}
