/* The N-d ops' backward kernels (cl_nd_grad.c). Layer norm's: each row's
 * statistics into st (3 floats a row: its first element x0, the mean of
 * x - x0, 1/sqrt(var + eps)), computed about x0 as nd_layer_norm does;
 * then dx, one work-item per row, or dscale / dbias, one per column
 * looping over the rows. */
__kernel void ln_bwd_stats(__global const float *x, long x_off, __global float *st, long st_off, long rows,
                           long cols, float eps)
{
    const long r = (long)get_global_id(0);
    if (r >= rows)
        return;
    __global const float *xr = x + x_off + r * cols;
    const float x0 = xr[0];
    float s = 0.0f;
    for (long j = 0; j < cols; j++)
        s += xr[j] - x0;
    const float mean = s / (float)cols;
    float v = 0.0f;
    for (long j = 0; j < cols; j++) {
        const float t = (xr[j] - x0) - mean;
        v += t * t;
    }
    st[st_off + 3 * r] = x0;
    st[st_off + 3 * r + 1] = mean;
    st[st_off + 3 * r + 2] = rsqrt(v / (float)cols + eps);
}

/* dx = inv (g - mean(g) - xhat mean(g xhat)), g = dy scale. */
__kernel void ln_bwd_dx(__global const float *x, long x_off, __global const float *dy, long dy_off,
                        __global const float *g, long g_off, __global const float *st, long st_off,
                        __global float *y, long y_off, long rows, long cols)
{
    const long r = (long)get_global_id(0);
    if (r >= rows)
        return;
    __global const float *xr = x + x_off + r * cols, *dr = dy + dy_off + r * cols;
    const float x0 = st[st_off + 3 * r], mean = st[st_off + 3 * r + 1], inv = st[st_off + 3 * r + 2];
    float mg = 0.0f, mgx = 0.0f;
    for (long j = 0; j < cols; j++) {
        const float gj = dr[j] * g[g_off + j];
        mg += gj;
        mgx += gj * (((xr[j] - x0) - mean) * inv);
    }
    mg /= (float)cols;
    mgx /= (float)cols;
    for (long j = 0; j < cols; j++)
        y[y_off + r * cols + j] = inv * (dr[j] * g[g_off + j] - mg - (((xr[j] - x0) - mean) * inv) * mgx);
}

/* which 1: dscale[j] = sum over rows of dy xhat; 2: dbias[j] = sum of dy. */
__kernel void ln_bwd_param(__global const float *x, long x_off, __global const float *dy, long dy_off,
                           __global const float *st, long st_off, __global float *y, long y_off, long rows,
                           long cols, int which)
{
    const long j = (long)get_global_id(0);
    if (j >= cols)
        return;
    float acc = 0.0f;
    for (long r = 0; r < rows; r++) {
        const float d = dy[dy_off + r * cols + j];
        acc += which == 1 ? d * (((x[x_off + r * cols + j] - st[st_off + 3 * r]) - st[st_off + 3 * r + 1]) *
                                 st[st_off + 3 * r + 2])
                          : d;
    }
    y[y_off + j] = acc;
}
