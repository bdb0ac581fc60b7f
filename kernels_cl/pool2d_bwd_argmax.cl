/* Max-pool backward in two passes, for windows that overlap (ResNet's
 * 3x3/2 stem pool): pool2d_bwd_argmax_find records each window's maximum
 * once (the first in row-major order, or the last NaN: pool2d_bwd's rule)
 * as its in-image offset h * W + w (-1: an empty window); then
 * pool2d_bwd_argmax_gather, one work-item per dx element, sums the
 * gradients of the windows that chose it in pool2d_bwd's (p, q) order, so
 * the result is that kernel's, bit for bit. pool2d_bwd finds every
 * window's maximum again for each of the up to 4 (3x3/2) elements it
 * covers: 9 x 4 loads an element where this does about 2.
 *
 * Both passes number windows in the order their work-items run (chan_last:
 * channel fastest, as an NHWC tensor's memory), which arg is stored in.
 * x, dy and dx are REAL_T (float16, bfloat16: widened as loaded, float32
 * sums, dx rounded once at its store). */

__kernel void pool2d_bwd_argmax_find(__global const REAL_T *x, long x_off, long4 xs,
                                     __global int *arg, long arg_off,
                                     int4 in_dims,  /* N, C, H, W */
                                     int4 out_dims, /* P, Q, unused, chan_last */
                                     int4 win,      /* window h, w, stride h, w */
                                     int4 pad,      /* top, bottom, left, right */
                                     long total)    /* N * C * P * Q */
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    NCHW_OF_INDEX(gid, C, out_dims.s0, out_dims.s1, out_dims.s3, n, c, p, q);
    const int a0 = p * win.s2 - pad.s0, b0 = q * win.s3 - pad.s2;
    const int h0 = max(a0, 0), w0 = max(b0, 0);
    const int h1 = min(min(a0 + win.s0, H + pad.s1), H), w1 = min(min(b0 + win.s1, W + pad.s3), W);
    __global const REAL_T *xb = x + x_off + n * xs.s0 + (long)c * xs.s1;
    float mx = 0.0f;
    int at = -1;
    for (int a = h0; a < h1; a++)
        for (int b = w0; b < w1; b++) {
            const float v = LOAD_REAL(xb, (long)a * xs.s2 + (long)b * xs.s3);
            if (at < 0 || v > mx || isnan(v)) {
                mx = v;
                at = a * W + b;
            }
        }
    arg[arg_off + gid] = at;
}

__kernel void pool2d_bwd_argmax_gather(__global const int *arg, long arg_off,
                                       __global const REAL_T *dy, long dy_off, long4 ys,
                                       __global REAL_T *dx, long dx_off, long4 dxs,
                                       int4 in_dims,  /* N, C, H, W */
                                       int4 out_dims, /* P, Q, unused, chan_last */
                                       int4 win, int4 pad,
                                       long total)    /* N * C * H * W */
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, last = out_dims.s3;
    NCHW_OF_INDEX(gid, C, H, W, last, n, c, ih, iw);
    const int th = ih + pad.s0, tw = iw + pad.s2;
    const int p0 = th - win.s0 + 1 > 0 ? (th - win.s0 + win.s2) / win.s2 : 0;
    const int q0 = tw - win.s1 + 1 > 0 ? (tw - win.s1 + win.s3) / win.s3 : 0;
    const int p1 = min(th / win.s2, P - 1), q1 = min(tw / win.s3, Q - 1);
    const int me = ih * W + iw;
    __global const REAL_T *yb = dy + dy_off + n * ys.s0 + (long)c * ys.s1;
    float acc = 0.0f;
    for (int p = p0; p <= p1; p++)
        for (int q = q0; q <= q1; q++) {
            const long w = last ? ((n * P + p) * Q + q) * C + c : ((n * C + c) * P + p) * (long)Q + q;
            if (arg[arg_off + w] == me)
                acc += LOAD_REAL(yb, (long)p * ys.s2 + (long)q * ys.s3);
        }
    STORE_REAL(acc, dx, dx_off + n * dxs.s0 + (long)c * dxs.s1 + (long)ih * dxs.s2 + (long)iw * dxs.s3);
}

/* Max-pool backward for CPUs: one work-item per (n, c) plane zeroes its dx
 * plane, then adds each window's gradient at the window's maximum, windows
 * in row-major order. Each dx element receives its windows' gradients in
 * the order pool2d_bwd sums them, from 0: the same float sums. Neighbouring
 * work-items are neighbouring channels (adjacent in NHWC memory). In
 * float16 and bfloat16 the item has two dense float32 planes of acc (the
 * workspace): its x plane widened once (8 at a time along contiguous
 * rows; the windows read each element about twice, and a scalar
 * vload_half is slow on PoCL) and the sums, from which its dx plane is
 * rounded once at the end (adding in place would round each sum).
 * float32 leaves acc unused. */
__kernel void pool2d_bwd_max_plane(__global const REAL_T *x, long x_off, long4 xs,
                                   __global const REAL_T *dy, long dy_off, long4 ys,
                                   __global REAL_T *dx, long dx_off, long4 dxs,
                                   int4 in_dims,  /* N, C, H, W */
                                   int4 out_dims, /* P, Q, unused, unused */
                                   int4 win, int4 pad,
                                   long total,    /* N * C */
                                   __global float *acc, long acc_off)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1;
    const int c = (int)(gid % C);
    const long n = gid / C;
    __global const REAL_T *xb = x + x_off + n * xs.s0 + (long)c * xs.s1;
    __global const REAL_T *yb = dy + dy_off + n * ys.s0 + (long)c * ys.s1;
    __global REAL_T *db = dx + dx_off + n * dxs.s0 + (long)c * dxs.s1;
#if defined(PDNN_REAL)
    __global float *ab = acc + acc_off + gid * 2 * (long)H * W, *xw = ab + (long)H * W;
    const long as2 = W, as3 = 1;
    for (int a = 0; a < H; a++) {
        int b = 0;
        if (xs.s3 == 1)
            for (; b + 8 <= W; b += 8)
                vstore8(LOADR8(0, xb + (long)a * xs.s2 + b), 0, xw + (long)a * W + b);
        for (; b < W; b++)
            xw[(long)a * W + b] = LOAD_REAL(xb, (long)a * xs.s2 + (long)b * xs.s3);
    }
#define PLANE_X(a, b) xw[(long)(a) * W + (b)]
#else
    __global float *ab = db;
    const long as2 = dxs.s2, as3 = dxs.s3;
#define PLANE_X(a, b) xb[(long)(a) * xs.s2 + (long)(b) * xs.s3]
#endif
    for (int a = 0; a < H; a++)
        for (int b = 0; b < W; b++)
            ab[(long)a * as2 + (long)b * as3] = 0.0f;
    for (int p = 0; p < P; p++) {
        const int a0 = p * win.s2 - pad.s0;
        const int h0 = max(a0, 0), h1 = min(min(a0 + win.s0, H + pad.s1), H);
        for (int q = 0; q < Q; q++) {
            const int b0 = q * win.s3 - pad.s2;
            const int w0 = max(b0, 0), w1 = min(min(b0 + win.s1, W + pad.s3), W);
            float mx = 0.0f;
            int ah = -1, aw = 0;
            for (int a = h0; a < h1; a++)
                for (int b = w0; b < w1; b++) {
                    const float v = PLANE_X(a, b);
                    if (ah < 0 || v > mx || isnan(v)) {
                        mx = v;
                        ah = a;
                        aw = b;
                    }
                }
            if (ah >= 0)
                ab[(long)ah * as2 + (long)aw * as3] += LOAD_REAL(yb, (long)p * ys.s2 + (long)q * ys.s3);
        }
    }
#if defined(PDNN_REAL)
    for (int a = 0; a < H; a++) {
        int b = 0;
        if (dxs.s3 == 1)
            for (; b + 8 <= W; b += 8)
                STORER8(vload8(0, ab + (long)a * W + b), 0, db + (long)a * dxs.s2 + b);
        for (; b < W; b++)
            STORE_REAL(ab[(long)a * W + b], db, (long)a * dxs.s2 + (long)b * dxs.s3);
    }
#endif
#undef PLANE_X
}
