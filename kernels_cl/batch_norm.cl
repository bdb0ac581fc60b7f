/* Batch normalization over N, H, W per channel (backends/opencl/cl_bn.c).
 *
 * The per-channel reductions split each channel's m = N*H*W values into
 * S slices: work-item (c, s) sums slice s of channel c into part[s * C + c]
 * (channels fastest, so in NHWC neighbouring work-items read neighbouring
 * floats); a per-channel kernel then adds the S partial sums in order.
 * The variance is a second pass over x - mean (a sum of squares: never
 * negative, and exact cancellation-free for data far from zero, where
 * E[x^2] - E[x]^2 in float would lose every digit).
 *
 * Element (n, c, i) of an activation, i = h * W + w, is at
 * n * xs.s0 + c * xs.s1 + i * xs.s3 in both layouts (xs.s2 = W * xs.s3). */

static long bn_at(long4 xs, long m, long hw, int c)
{
    const long n = m / hw, i = m - n * hw;
    return n * xs.s0 + (long)c * xs.s1 + i * xs.s3;
}

/* Work-item s * C + c: part[s * C + c] = the sum over slice s of channel c
 * of x (what == 0), of (x - mean[c])^2 (what == 1), or, for the backward
 * (what == 2), of dy, with the sum of dy * (x - mean) * inv at
 * part[S * C + s * C + c]. */
__kernel void bn_partial(__global const float *x, long x_off, long4 xs,
                         __global const float *dy, long dy_off,
                         __global const float *mean, long mean_off,
                         __global const float *inv, long inv_off,
                         __global float *part, long part_off,
                         int C, long hw, long m, int S, long chunk, int what)
{
    const long gid = (long)get_global_id(0);
    if (gid >= (long)S * C)
        return;
    const int c = (int)(gid % C), s = (int)(gid / C);
    const long m0 = (long)s * chunk, m1 = min(m0 + chunk, m);
    const float mu = what ? mean[mean_off + c] : 0.0f;
    float acc = 0.0f, acc2 = 0.0f;
    if (what == 2) {
        const float k = inv[inv_off + c];
        for (long j = m0; j < m1; j++) {
            const long e = bn_at(xs, j, hw, c);
            const float g = dy[dy_off + e];
            acc += g;
            acc2 += g * ((x[x_off + e] - mu) * k);
        }
        part[part_off + (long)S * C + (long)s * C + c] = acc2;
    } else {
        for (long j = m0; j < m1; j++) {
            const float d = x[x_off + bn_at(xs, j, hw, c)] - mu;
            acc += what ? d * d : d;
        }
    }
    part[part_off + (long)s * C + c] = acc;
}

/* After pass 1: mean[c] = the partial sums' total / m. */
__kernel void bn_mean(__global const float *part, long part_off, __global float *mean, long mean_off,
                      int C, int S, long m)
{
    const int c = (int)get_global_id(0);
    if (c >= C)
        return;
    float acc = 0.0f;
    for (int s = 0; s < S; s++)
        acc += part[part_off + (long)s * C + c];
    mean[mean_off + c] = acc / (float)m;
}

/* After pass 2: inv[c] = 1 / sqrt(var + eps), the saved statistics (when
 * saved) and the running ones (when running), the latter with the
 * unbiased variance. */
__kernel void bn_finish(__global const float *part, long part_off,
                        __global const float *mean, long mean_off,
                        __global float *inv, long inv_off,
                        __global float *saved_mean, long sm_off, __global float *saved_inv, long si_off, int saved,
                        __global float *run_mean, long rm_off, __global float *run_var, long rv_off, int running,
                        int C, int S, long m, float eps, float momentum)
{
    const int c = (int)get_global_id(0);
    if (c >= C)
        return;
    float sq = 0.0f;
    for (int s = 0; s < S; s++)
        sq += part[part_off + (long)s * C + c];
    const float mu = mean[mean_off + c];
    const float k = 1.0f / sqrt(sq / (float)m + eps);
    inv[inv_off + c] = k;
    if (saved) {
        saved_mean[sm_off + c] = mu;
        saved_inv[si_off + c] = k;
    }
    if (running) {
        run_mean[rm_off + c] = (1.0f - momentum) * run_mean[rm_off + c] + momentum * mu;
        run_var[rv_off + c] = (1.0f - momentum) * run_var[rv_off + c] + momentum * (sq / (float)(m - 1));
    }
}

/* The channel of memory-order element e. */
static int bn_channel(long e, int C, long hw, int nhwc)
{
    return nhwc ? (int)(e % C) : (int)((e / hw) % C);
}

/* y = gamma * (x - mean) * k + beta, k = stat[c] (is_var 0: an inverse
 * standard deviation) or 1 / sqrt(stat[c] + eps) (is_var 1: a variance). */
__kernel void bn_normalize(__global const float *x, long x_off, __global float *y, long y_off,
                           __global const float *mean, long mean_off, __global const float *stat, long stat_off,
                           __global const float *gamma, long g_off, __global const float *beta, long b_off,
                           int C, long hw, int nhwc, int is_var, float eps, long total)
{
    const long e = (long)get_global_id(0);
    if (e >= total)
        return;
    const int c = bn_channel(e, C, hw, nhwc);
    const float v = stat[stat_off + c];
    const float k = is_var ? 1.0f / sqrt(v + eps) : v;
    y[y_off + e] = gamma[g_off + c] * ((x[x_off + e] - mean[mean_off + c]) * k) + beta[b_off + c];
}

/* The backward's channel sums: sums[c] = dbeta, sums[C + c] = dgamma,
 * copied to the outputs that are wanted. */
__kernel void bn_bwd_sums(__global const float *part, long part_off, __global float *sums, long sums_off,
                          __global float *dgamma, long dg_off, int want_dg,
                          __global float *dbeta, long db_off, int want_db, int C, int S)
{
    const int c = (int)get_global_id(0);
    if (c >= C)
        return;
    float a = 0.0f, b = 0.0f;
    for (int s = 0; s < S; s++) {
        a += part[part_off + (long)s * C + c];
        b += part[part_off + (long)S * C + (long)s * C + c];
    }
    sums[sums_off + c] = a;
    sums[sums_off + C + c] = b;
    if (want_dg)
        dgamma[dg_off + c] = b;
    if (want_db)
        dbeta[db_off + c] = a;
}

/* dx = gamma * inv / m * (m * dy - dbeta - xhat * dgamma). */
__kernel void bn_bwd_dx(__global const float *x, long x_off, __global const float *dy, long dy_off,
                        __global float *dx, long dx_off,
                        __global const float *mean, long mean_off, __global const float *inv, long inv_off,
                        __global const float *gamma, long g_off, __global const float *sums, long sums_off,
                        int C, long hw, int nhwc, long m, long total)
{
    const long e = (long)get_global_id(0);
    if (e >= total)
        return;
    const int c = bn_channel(e, C, hw, nhwc);
    const float k = inv[inv_off + c];
    const float xhat = (x[x_off + e] - mean[mean_off + c]) * k;
    const float fm = (float)m;
    dx[dx_off + e] = gamma[g_off + c] * k / fm *
                     (fm * dy[dy_off + e] - sums[sums_off + c] - xhat * sums[sums_off + C + c]);
}
