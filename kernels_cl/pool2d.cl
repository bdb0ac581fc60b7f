/* 2-D pooling, one work-item per output element, PyTorch's window rules:
 * the include-padding divisor counts the window up to the end of the
 * padding; max and exclude-padding see only in-image elements (core
 * guarantees every window holds at least one). NaN propagates through max.
 * Layouts enter through element strides as in conv2d_direct. */
__kernel void pool2d_direct(__global const float *x, long x_off,
                            __global float *y, long y_off,
                            long4 xs, long4 ys,
                            int4 in_dims,   /* N, C, H, W                     */
                            int4 out_dims,  /* P, Q, mode, chan_fastest       */
                            int4 win,       /* window h, w, stride h, w       */
                            int4 pad,       /* top, left, bottom, right       */
                            long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
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
    long h0 = (long)p * win.s2 - pad.s0, w0 = (long)q * win.s3 - pad.s1;
    long h1 = min(h0 + win.s0, (long)H + pad.s2), w1 = min(w0 + win.s1, (long)W + pad.s3);
    const long padded = (h1 - h0) * (w1 - w0);
    h0 = max(h0, 0L);
    w0 = max(w0, 0L);
    h1 = min(h1, (long)H);
    w1 = min(w1, (long)W);
    const long base = x_off + n * xs.s0 + (long)c * xs.s1;
    float acc = 0.0f, mx = -INFINITY;
    int nan_seen = 0;
    for (long ih = h0; ih < h1; ih++)
        for (long iw = w0; iw < w1; iw++) {
            const float v = x[base + ih * xs.s2 + iw * xs.s3];
            acc += v;
            mx = fmax(mx, v);
            nan_seen |= isnan(v);
        }
    float out;
    if (mode == 0)
        out = nan_seen ? NAN : mx;
    else if (mode == 1)
        out = acc / (float)padded;
    else
        out = acc / (float)((h1 - h0) * (w1 - w0));
    y[y_off + n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3] = out;
}
