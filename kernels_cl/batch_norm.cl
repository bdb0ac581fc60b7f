/* Batch normalization over N, H, W per channel (backends/opencl/cl_bn.c).
 *
 * The per-channel reductions split each channel's m = N*H*W values into
 * S slices, so that S * C work-items share the work; each sums its slice
 * into part[s * C + c], and a per-channel kernel then adds the S partial
 * sums in order. The slices follow the layout, so that neighbouring
 * work-items read neighbouring floats (vectorized by PoCL, coalesced on a
 * GPU): in NHWC work-item s * C + c takes a contiguous run of pixels of
 * channel c (neighbours: the next channel); in NCHW work-item c * S + s
 * takes pixels s, s + S, s + 2S, ... of each image of channel c
 * (neighbours: the next pixel). The variance is a second pass over
 * x - mean (a sum of squares: never negative, and free of the
 * cancellation that ruins E[x^2] - E[x]^2 in float for data far from
 * zero). Sizes fit in int (cl_bn.c refuses larger calls). */

/* Work-item gid's slice: channel c, slice s. */
static void bn_slice(int gid, int C, int S, int nhwc, int *c, int *s)
{
    if (nhwc) {
        *c = gid % C;
        *s = gid / C;
    } else {
        *s = gid % S;
        *c = gid / S;
    }
}

/* part[s * C + c] = the sum over slice s of channel c of x (what == 0), of
 * (x - mean[c])^2 (what == 1), or, for the backward (what == 2), of dy,
 * with the sum of dy * (x - mean) * inv at part[S * C + s * C + c]. NHWC
 * slices are runs of chunk pixels; NCHW ones stride by S within each of
 * the N images. */
__kernel void bn_partial(__global const float *x, long x_off,
                         __global const float *dy, long dy_off,
                         __global const float *mean, long mean_off,
                         __global const float *inv, long inv_off,
                         __global float *part, long part_off,
                         int N, int C, int hw, int S, int chunk, int nhwc, int what)
{
    const int gid = (int)get_global_id(0);
    if (gid >= S * C)
        return;
    int c, s;
    bn_slice(gid, C, S, nhwc, &c, &s);
    const float mu = what ? mean[mean_off + c] : 0.0f;
    const float k = what == 2 ? inv[inv_off + c] : 0.0f;
    float acc = 0.0f, acc2 = 0.0f;
    /* Each element e of the slice, in both layouts: rows of pixels
     * (i0 .. i1 step di) at base + i * stride. */
    const int m = N * hw;
    const int rows = nhwc ? 1 : N, i0 = nhwc ? s * chunk : s, i1 = nhwc ? min(s * chunk + chunk, m) : hw;
    const int di = nhwc ? 1 : S, stride = nhwc ? C : 1;
    for (int r = 0; r < rows; r++) {
        const int base = nhwc ? c : (r * C + c) * hw;
        for (int i = i0; i < i1; i += di) {
            const int e = base + i * stride;
            const float d = x[x_off + e] - mu;
            if (what == 2) {
                const float g = dy[dy_off + e];
                acc += g;
                acc2 += g * (d * k);
            } else {
                acc += what ? d * d : d;
            }
        }
    }
    if (what == 2)
        part[part_off + (long)S * C + (long)s * C + c] = acc2;
    part[part_off + (long)s * C + c] = acc;
}

/* After pass 1: mean[c] = the partial sums' total / m. */
__kernel void bn_mean(__global const float *part, long part_off, __global float *mean, long mean_off,
                      int C, int S, int m)
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
                        int C, int S, int m, float eps, float momentum)
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

/* The elementwise kernels run on a 2-D range over the tensor as rows x
 * cols in memory order (NCHW: N*C rows of H*W pixels; NHWC: N*H*W rows of
 * C channels), so that no work-item divides to find its channel. Returns
 * the element's index (-1: past the end) and sets *c. */
static int bn_element(int cols, int C, int nhwc, int *c)
{
    const int i = (int)get_global_id(0), row = (int)get_global_id(1);
    if (i >= cols)
        return -1;
    *c = nhwc ? i : row % C;
    return row * cols + i;
}

/* y = gamma * (x - mean) * k + beta, k = stat[c] (is_var 0: an inverse
 * standard deviation) or 1 / sqrt(stat[c] + eps) (is_var 1: a variance). */
__kernel void bn_normalize(__global const float *x, long x_off, __global float *y, long y_off,
                           __global const float *mean, long mean_off, __global const float *stat, long stat_off,
                           __global const float *gamma, long g_off, __global const float *beta, long b_off,
                           int C, int cols, int nhwc, int is_var, float eps)
{
    int c;
    const int e = bn_element(cols, C, nhwc, &c);
    if (e < 0)
        return;
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
                        int C, int cols, int nhwc, int m)
{
    int c;
    const int e = bn_element(cols, C, nhwc, &c);
    if (e < 0)
        return;
    const float k = inv[inv_off + c];
    const float xhat = (x[x_off + e] - mean[mean_off + c]) * k;
    const float fm = (float)m;
    dx[dx_off + e] = gamma[g_off + c] * k / fm *
                     (fm * dy[dy_off + e] - sums[sums_off + c] - xhat * sums[sums_off + C + c]);
}
