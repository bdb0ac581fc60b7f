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
 * zero). Sizes fit in int (cl_bn.c refuses larger calls).
 *
 * float16 and bfloat16 (built with PDNN_REAL): x, y, dy, dx and the
 * per-channel tensors are REAL_T, the partial sums and the statistics in
 * the workspace float32 (statistics in float32, docs/precision.md); the
 * mean and inverse std or variance a kernel reads are the workspace's
 * (STAT_T float) or, built with BN_STATS_REAL, the saved or running
 * tensors (REAL_T). */
#ifdef BN_STATS_REAL
#define STAT_T REAL_T
#define LOAD_STAT LOAD_REAL
#define LOAD_STAT8(p) LOADR8(0, p)
#else
#define STAT_T float
#define LOAD_STAT F32_LOAD
#define LOAD_STAT8(p) vload8(0, p)
#endif

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
__kernel void bn_partial(__global const REAL_T *x, long x_off,
                         __global const REAL_T *dy, long dy_off,
                         __global const STAT_T *mean, long mean_off,
                         __global const STAT_T *inv, long inv_off,
                         __global float *part, long part_off,
                         int N, int C, int hw, int S, int chunk, int nhwc, int what)
{
    const int gid = (int)get_global_id(0);
    if (gid >= S * C)
        return;
    int c, s;
    bn_slice(gid, C, S, nhwc, &c, &s);
    const float mu = what ? LOAD_STAT(mean, mean_off + c) : 0.0f;
    const float k = what == 2 ? LOAD_STAT(inv, inv_off + c) : 0.0f;
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
            const float d = LOAD_REAL(x, x_off + e) - mu;
            if (what == 2) {
                const float g = LOAD_REAL(dy, dy_off + e);
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
                        __global REAL_T *saved_mean, long sm_off, __global REAL_T *saved_inv, long si_off, int saved,
                        __global REAL_T *run_mean, long rm_off, __global REAL_T *run_var, long rv_off, int running,
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
        STORE_REAL(mu, saved_mean, sm_off + c);
        STORE_REAL(k, saved_inv, si_off + c);
    }
    if (running) {
        STORE_REAL((1.0f - momentum) * LOAD_REAL(run_mean, rm_off + c) + momentum * mu, run_mean, rm_off + c);
        STORE_REAL((1.0f - momentum) * LOAD_REAL(run_var, rv_off + c) + momentum * (sq / (float)(m - 1)), run_var,
                   rv_off + c);
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
 * standard deviation) or 1 / sqrt(stat[c] + eps) (is_var 1: a variance).
 * run neighbouring elements of a row a work-item (cl_bn.c's bn_run_len), 8 at
 * a time through the vector loads (one element an item over float16 or
 * bfloat16 stayed scalar on PoCL): in NHWC 8 channels each, in NCHW
 * pixels of one channel, whose statistics and affine are then read once
 * for the run (the layouts' loops apart: one loop with the branch inside
 * kept PoCL's reduced kernels slow). */
__kernel void bn_normalize(__global const REAL_T *x, long x_off, __global REAL_T *y, long y_off,
                           __global const STAT_T *mean, long mean_off, __global const STAT_T *stat, long stat_off,
                           __global const REAL_T *gamma, long g_off, __global const REAL_T *beta, long b_off,
                           int C, int cols, int nhwc, int is_var, float eps, int run)
{
    const int i0 = run * (int)get_global_id(0), row = (int)get_global_id(1), i1 = min(i0 + run, cols);
    if (i0 >= cols)
        return;
    const long e0 = (long)row * cols;
    const int c0 = row % C;
    const float m0 = LOAD_STAT(mean, mean_off + c0), v0 = LOAD_STAT(stat, stat_off + c0);
    const float g0 = LOAD_REAL(gamma, g_off + c0), b0 = LOAD_REAL(beta, b_off + c0);
    int i = i0;
    if (nhwc) {
        for (; i + 8 <= i1; i += 8) {
            const float8 mu = LOAD_STAT8(mean + mean_off + i), v = LOAD_STAT8(stat + stat_off + i);
            const float8 g = LOADR8(0, gamma + g_off + i), b = LOADR8(0, beta + b_off + i);
            const float8 k = is_var ? 1.0f / sqrt(v + eps) : v;
            STORER8(g * ((LOADR8(0, x + x_off + e0 + i) - mu) * k) + b, 0, y + y_off + e0 + i);
        }
    } else {
        const float k0 = is_var ? 1.0f / sqrt(v0 + eps) : v0;
        for (; i + 8 <= i1; i += 8)
            STORER8(g0 * ((LOADR8(0, x + x_off + e0 + i) - m0) * k0) + b0, 0, y + y_off + e0 + i);
    }
    for (; i < i1; i++) {
        const int c = nhwc ? i : c0;
        const float v = LOAD_STAT(stat, stat_off + c);
        const float k = is_var ? 1.0f / sqrt(v + eps) : v;
        STORE_REAL(LOAD_REAL(gamma, g_off + c) * ((LOAD_REAL(x, x_off + e0 + i) - LOAD_STAT(mean, mean_off + c)) * k) +
                       LOAD_REAL(beta, b_off + c),
                   y, y_off + e0 + i);
    }
}

/* The backward's channel sums: sums[c] = dbeta, sums[C + c] = dgamma,
 * copied to the outputs that are wanted. */
__kernel void bn_bwd_sums(__global const float *part, long part_off, __global float *sums, long sums_off,
                          __global REAL_T *dgamma, long dg_off, int want_dg,
                          __global REAL_T *dbeta, long db_off, int want_db, int C, int S)
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
        STORE_REAL(b, dgamma, dg_off + c);
    if (want_db)
        STORE_REAL(a, dbeta, db_off + c);
}

/* dx = gamma * inv / m * (m * dy - dbeta - xhat * dgamma). */
__kernel void bn_bwd_dx(__global const REAL_T *x, long x_off, __global const REAL_T *dy, long dy_off,
                        __global REAL_T *dx, long dx_off,
                        __global const REAL_T *mean, long mean_off, __global const REAL_T *inv, long inv_off,
                        __global const REAL_T *gamma, long g_off, __global const float *sums, long sums_off,
                        int C, int cols, int nhwc, int m)
{
    int c;
    const int e = bn_element(cols, C, nhwc, &c);
    if (e < 0)
        return;
    const float k = LOAD_REAL(inv, inv_off + c);
    const float xhat = (LOAD_REAL(x, x_off + e) - LOAD_REAL(mean, mean_off + c)) * k;
    const float fm = (float)m;
    STORE_REAL(LOAD_REAL(gamma, g_off + c) * k / fm *
                   (fm * LOAD_REAL(dy, dy_off + e) - sums[sums_off + c] - xhat * sums[sums_off + C + c]),
               dx, dx_off + e);
}
