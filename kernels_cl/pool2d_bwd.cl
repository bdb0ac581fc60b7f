/* Backward pooling, as a gather: one work-item per dx element sums the
 * gradients of the windows that hold it (average: divided by the
 * forward's divisor; max: only where it is the element the forward
 * returned, the first maximum in the window's row-major order or its last
 * NaN). Every dx element is written once, no atomics. */

/* The forward's window (p, q): in-image bounds and divisor. */
static void window_of(int p, int q, int4 win, int4 pad, int4 in_dims, int mode,
                      int *h0, int *h1, int *w0, int *w1, float *divisor)
{
    const int H = in_dims.s2, W = in_dims.s3;
    int a0 = p * win.s2 - pad.s0, b0 = q * win.s3 - pad.s2;
    int a1 = min(a0 + win.s0, H + pad.s1), b1 = min(b0 + win.s1, W + pad.s3);
    const int padded = (a1 - a0) * (b1 - b0);
    *h0 = max(a0, 0);
    *w0 = max(b0, 0);
    *h1 = min(a1, H);
    *w1 = min(b1, W);
    *divisor = (float)(mode == 1 ? padded : (*h1 - *h0) * (*w1 - *w0));
}

__kernel void pool2d_bwd(__global const float *x, long x_off, long4 xs,
                         __global const float *dy, long dy_off, long4 ys,
                         __global float *dx, long dx_off, long4 dxs,
                         int4 in_dims,  /* N, C, H, W                        */
                         int4 out_dims, /* P, Q, mode (0 max, 1 avg incl, 2 avg excl), chan_fastest(dx) */
                         int4 win,      /* window h, w, stride h, w          */
                         int4 pad,      /* top, bottom, left, right          */
                         long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2;
    long t = gid;
    int c, ih, iw;
    long n;
    if (out_dims.s3) {
        c = (int)(t % C); t /= C;
        iw = (int)(t % W); t /= W;
        ih = (int)(t % H); n = t / H;
    } else {
        iw = (int)(t % W); t /= W;
        ih = (int)(t % H); t /= H;
        c = (int)(t % C); n = t / C;
    }
    const int th = ih + pad.s0, tw = iw + pad.s2;
    const int p0 = th - win.s0 + 1 > 0 ? (th - win.s0 + win.s2) / win.s2 : 0;
    const int q0 = tw - win.s1 + 1 > 0 ? (tw - win.s1 + win.s3) / win.s3 : 0;
    const int p1 = min(th / win.s2, P - 1), q1 = min(tw / win.s3, Q - 1);
    const long xb = x_off + n * xs.s0 + (long)c * xs.s1;
    const long yb = dy_off + n * ys.s0 + (long)c * ys.s1;
    float acc = 0.0f;
    for (int p = p0; p <= p1; p++)
        for (int q = q0; q <= q1; q++) {
            int h0, h1, w0, w1;
            float divisor;
            window_of(p, q, win, pad, in_dims, mode, &h0, &h1, &w0, &w1, &divisor);
            const float g = dy[yb + (long)p * ys.s2 + (long)q * ys.s3];
            if (mode != 0) {
                acc += g / divisor;
                continue;
            }
            float mx = 0.0f;
            int ah = -1, aw = -1;
            for (int a = h0; a < h1; a++)
                for (int b = w0; b < w1; b++) {
                    const float v = x[xb + (long)a * xs.s2 + (long)b * xs.s3];
                    if (ah < 0 || v > mx || isnan(v)) {
                        mx = v;
                        ah = a;
                        aw = b;
                    }
                }
            if (ah == ih && aw == iw)
                acc += g;
        }
    dx[dx_off + n * dxs.s0 + (long)c * dxs.s1 + (long)ih * dxs.s2 + (long)iw * dxs.s3] = acc;
}

/* Backward pooling where windows do not overlap (stride >= window in both
 * axes): one work-item per dy element writes its whole window of dx, the
 * gradient at the forward's maximum (same rule as pool2d_bwd: the first
 * maximum in row-major order, or the last NaN) and 0 elsewhere, or the
 * average's share. dx elements in no window were zeroed before. */
__kernel void pool2d_bwd_window(__global const float *x, long x_off, long4 xs,
                                __global const float *dy, long dy_off, long4 ys,
                                __global float *dx, long dx_off, long4 dxs,
                                int4 in_dims,  /* N, C, H, W                        */
                                int4 out_dims, /* P, Q, mode, chan_fastest(dy)      */
                                int4 win,      /* window h, w, stride h, w          */
                                int4 pad,      /* top, bottom, left, right          */
                                long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2;
    long t = gid;
    int c, p, q;
    long n;
    if (out_dims.s3) {
        c = (int)(t % C); t /= C;
        q = (int)(t % Q); t /= Q;
        p = (int)(t % P); n = t / P;
    } else {
        q = (int)(t % Q); t /= Q;
        p = (int)(t % P); t /= P;
        c = (int)(t % C); n = t / C;
    }
    int h0, h1, w0, w1;
    float divisor;
    window_of(p, q, win, pad, in_dims, mode, &h0, &h1, &w0, &w1, &divisor);
    const float g = dy[dy_off + n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3];
    const long xb = x_off + n * xs.s0 + (long)c * xs.s1;
    const long db = dx_off + n * dxs.s0 + (long)c * dxs.s1;
    if (mode != 0) {
        const float v = g / divisor;
        for (int a = h0; a < h1; a++)
            for (int b = w0; b < w1; b++)
                dx[db + (long)a * dxs.s2 + (long)b * dxs.s3] = v;
        return;
    }
    float mx = 0.0f;
    int ah = -1, aw = -1;
    for (int a = h0; a < h1; a++)
        for (int b = w0; b < w1; b++) {
            const float v = x[xb + (long)a * xs.s2 + (long)b * xs.s3];
            if (ah < 0 || v > mx || isnan(v)) {
                mx = v;
                ah = a;
                aw = b;
            }
        }
    for (int a = h0; a < h1; a++)
        for (int b = w0; b < w1; b++)
            dx[db + (long)a * dxs.s2 + (long)b * dxs.s3] = (a == ah && b == aw) ? g : 0.0f;
}
