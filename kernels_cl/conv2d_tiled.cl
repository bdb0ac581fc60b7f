/* Register-tiled direct convolution ("tiled").
 *
 * A work-item computes KV = 16 output channels (one float16: a SIMD
 * register on AVX-512, a quarter-warp's worth on GPUs) for TQ = 8
 * consecutive output pixels of one image, in TQ vector accumulators.
 * Each step loads 16 contiguous filter values and TQ input values and does
 * 16 x TQ multiply-adds. The filter is first packed so that each
 * work-item's filter values are one contiguous stream (prefetch-friendly
 * even when C is large): wp[((kb*R + r)*S + s)*cpg + c][lane] for channel
 * k = kb*KV + lane, zero for k >= K (K padded to Kp, a multiple of KV).
 * A HWIO filter (TensorFlow's) whose K is a multiple of KV already has 16
 * contiguous channels at every (r, s, c) and is read in place: wst gives
 * the element strides of a channel block, an (r, s) step and a c step.
 * The 16 channels of a work-item share one group (the host only picks
 * this algorithm when K/groups is a multiple of 16 or groups == 1).
 * Layouts enter through element strides, as in conv2d_direct. */
/* Tunable (the autotuner builds one program per choice, -DTQ=.. -DKB=..):
 * TQ output pixels and KB float16 blocks of output channels per
 * work-item, so TQ * KB vector accumulators. KV is the channels a
 * work-item covers, the unit the filter is packed in. */
#ifndef TQ
#define TQ 8
#endif
#ifndef KB
#define KB 1
#endif
#define KV (16 * KB)

/* wp[(kb*R*S*cpg + (r*S + s)*cpg + c)*KV + lane] = w[k = kb*KV + lane]
 * in any filter layout, 0 for k >= K. */
__kernel void conv2d_pack_rsck(__global const float *w, long w_off, long4 ws,
                               __global float *wp, long wp_off,
                               int4 filt, /* R, S, C/groups, K */
                               int Kp, long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const int R = filt.s0, S = filt.s1, cpg = filt.s2, K = filt.s3;
    const int lane = (int)(i % KV);
    long t = i / KV;
    const long rsc = (long)R * S * cpg;
    const int k = (int)(t / rsc) * KV + lane;
    t %= rsc;
    const int c = (int)(t % cpg);
    t /= cpg;
    const int s = (int)(t % S), r = (int)(t / S);
    wp[wp_off + i] = k < K ? w[w_off + (long)k * ws.s0 + (long)c * ws.s1 + (long)r * ws.s2 + (long)s * ws.s3]
                           : 0.0f;
}

__kernel void conv2d_tiled(__global const float *x, long x_off,
                           __global const float *wp, long wp_off,
                           __global const float *bias, long b_off,
                           __global float *y, long y_off,
                           long4 xs, long4 ys,
                           int4 in_dims,  /* N, C, H, W */
                           int4 out_dims, /* K, P, Q, pixel blocks per image */
                           int4 filt,     /* R, S, C/groups, K/groups */
                           int4 geom,     /* stride h, w, dilation h, w */
                           int4 misc,     /* pad top, pad left, has bias, relu */
                           long4 wst)     /* filter element strides: k block, (r,s), c */
{
    const int k0 = (int)get_global_id(0) * KV;
    const long blk = (long)get_global_id(1);
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, PB = out_dims.s3;
    const long n = blk / PB;
    if (k0 >= K || n >= in_dims.s0) /* the grid is rounded up to whole work-groups */
        return;
    /* TQ consecutive output pixels of image n, in p*Q + q order: small
     * late-layer images (7x7) fill every accumulator too. */
    const int pix0 = (int)(blk % PB) * TQ;
    const int H = in_dims.s2, W = in_dims.s3;
    const int R = filt.s0, S = filt.s1, cpg = filt.s2, kpg = filt.s3;
    const long xbase = x_off + n * xs.s0 + (long)(k0 / kpg) * cpg * xs.s1;
    int ph[TQ], pw[TQ];
    for (int j = 0; j < TQ; j++) {
        const int pix = pix0 + j < P * Q ? pix0 + j : P * Q - 1;
        ph[j] = (pix / Q) * geom.s0 - misc.s0;
        pw[j] = (pix % Q) * geom.s1 - misc.s1;
    }
    float16 acc[KB][TQ];
    for (int b = 0; b < KB; b++)
        for (int j = 0; j < TQ; j++)
            acc[b][j] = (float16)(0.0f);
    for (int r = 0; r < R; r++) {
        for (int s = 0; s < S; s++) {
            /* Input offsets and in-image masks of the TQ pixels: the index
             * is clamped and the value scaled by 0 outside the image. */
            long xo[TQ];
            float m[TQ];
            int any = 0;
            for (int j = 0; j < TQ; j++) {
                const int ih = ph[j] + r * geom.s2, iw = pw[j] + s * geom.s3;
                const int in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                any |= in;
                m[j] = in ? 1.0f : 0.0f;
                xo[j] = xbase + (long)(in ? ih : 0) * xs.s2 + (long)(in ? iw : 0) * xs.s3;
            }
            if (!any)
                continue;
            __global const float *wrow = wp + wp_off + (long)(k0 / KV) * wst.s0 + (long)(r * S + s) * wst.s1;
            for (int c = 0; c < cpg; c++) {
                float16 wv[KB];
                for (int b = 0; b < KB; b++)
                    wv[b] = LOAD16(b, wrow + (long)c * wst.s2);
                const long xc = (long)c * xs.s1;
                for (int j = 0; j < TQ; j++) {
                    const float16 xv = (float16)(x[xo[j] + xc] * m[j]);
                    for (int b = 0; b < KB; b++)
                        acc[b][j] = FMA16(xv, wv[b], acc[b][j]);
                }
            }
        }
    }
    const long ybase = y_off + n * ys.s0;
    for (int b = 0; b < KB; b++) {
        const int kb0 = k0 + 16 * b;
        float16 bv = (float16)(0.0f);
        if (misc.s2) {
            float bb[16];
            for (int l = 0; l < 16; l++)
                bb[l] = kb0 + l < K ? bias[b_off + kb0 + l] : 0.0f;
            bv = LOAD16(0, bb);
        }
        for (int j = 0; j < TQ; j++) {
            const int pix = pix0 + j;
            if (pix >= P * Q)
                break;
            float16 v = acc[b][j] + bv;
            if (misc.s3)
                v = MAX16(v, (float16)(0.0f));
            float o[16];
            STORE16(v, 0, o);
            const long yq = ybase + (long)(pix / Q) * ys.s2 + (long)(pix % Q) * ys.s3;
            for (int l = 0; l < 16 && kb0 + l < K; l++)
                y[yq + (long)(kb0 + l) * ys.s1] = o[l];
        }
    }
}
