/* Direct 2-D convolution, one work-item per output element.
 *
 * Layouts enter only through element strides (xs, ws, ys: the strides of
 * the logical axes n,c,h,w / k,c,r,s / n,k,p,q), so this one kernel serves
 * every activation and filter layout. The flat index is decomposed with
 * the output's fastest axis first so that neighbouring work-items write
 * neighbouring memory: q for NCHW output, k for NHWC (chan_fastest = 1).
 * Buffers come with element offsets because a tensor is (region, offset). */
__kernel void conv2d_direct(__global const float *x, long x_off,
                            __global const float *w, long w_off,
                            __global const float *bias, long b_off,
                            __global float *y, long y_off,
                            long4 xs, long4 ws, long4 ys,
                            int4 in_dims,   /* N, C, H, W               */
                            int4 out_dims,  /* K, P, Q, chan_fastest    */
                            int4 filt,      /* R, S, C/groups, K/groups */
                            int4 geom,      /* stride h, w, dilation h, w */
                            int4 misc,      /* pad top, pad left, has bias, relu */
                            long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2;
    long t = gid;
    int k, p, q;
    long n;
    if (out_dims.s3) {
        k = (int)(t % K); t /= K;
        q = (int)(t % Q); t /= Q;
        p = (int)(t % P); n = t / P;
    } else {
        q = (int)(t % Q); t /= Q;
        p = (int)(t % P); t /= P;
        k = (int)(t % K); n = t / K;
    }
    const int H = in_dims.s2, W = in_dims.s3;
    const int R = filt.s0, S = filt.s1, cpg = filt.s2, kpg = filt.s3;
    const int g = k / kpg;
    const long xbase = x_off + n * xs.s0 + (long)g * cpg * xs.s1;
    const long wbase = w_off + (long)k * ws.s0;
    const long ih0 = (long)p * geom.s0 - misc.s0;
    const long iw0 = (long)q * geom.s1 - misc.s1;
    float acc = 0.0f;
    for (int r = 0; r < R; r++) {
        const long ih = ih0 + (long)r * geom.s2;
        if (ih < 0 || ih >= H)
            continue;
        for (int s = 0; s < S; s++) {
            const long iw = iw0 + (long)s * geom.s3;
            if (iw < 0 || iw >= W)
                continue;
            const long xo = xbase + ih * xs.s2 + iw * xs.s3;
            const long wo = wbase + (long)r * ws.s2 + (long)s * ws.s3;
            for (int c = 0; c < cpg; c++)
                acc = fma(x[xo + c * xs.s1], w[wo + c * ws.s1], acc);
        }
    }
    if (misc.s2)
        acc += bias[b_off + k];
    if (misc.s3)
        acc = fmax(acc, 0.0f);
    y[y_off + n * ys.s0 + (long)k * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3] = acc;
}
