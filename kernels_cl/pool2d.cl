/* 2-D pooling, one work-item per output element, PyTorch's window rules:
 * the include-padding divisor counts the window up to the end of the
 * padding; max and exclude-padding see only in-image elements (core
 * guarantees every window holds at least one). NaN propagates through max.
 * Layouts enter through element strides as in conv2d_direct. */
/* One output from the in-image window rows [h0, h1) x columns [w0, w1)
 * of the plane at xb (element strides sh, sw): mode 0 max (NaN wins),
 * 1 the sum over `padded`, 2 the sum over the in-image count. Shared by
 * every kernel's scalar path. */
/* One axis of output o's window: the in-image range [*lo, *hi), and the
 * length the include-padding divisor counts (clipped at the end of the
 * padding, as PyTorch does). */
inline int pool_extent(int o, int stride, int pad_a, int pad_b, int win, int in, int *lo, int *hi)
{
    const int a = o * stride - pad_a, b = min(a + win, in + pad_b);
    *lo = max(a, 0);
    *hi = min(b, in);
    return b - a;
}

inline float pool_one(__global const float *xb, long sh, long sw, int h0, int h1, int w0, int w1, int padded,
                      int mode)
{
    float acc = 0.0f, mx = -INFINITY;
    int nan_seen = 0;
    for (int ih = h0; ih < h1; ih++)
        for (int iw = w0; iw < w1; iw++) {
            const float v = xb[(long)ih * sh + (long)iw * sw];
            acc += v;
            mx = fmax(mx, v);
            nan_seen |= isnan(v);
        }
    if (mode == 0)
        return nan_seen ? NAN : mx;
    return acc / (float)(mode == 1 ? padded : (h1 - h0) * (w1 - w0));
}

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
    const float out = pool_one(x + x_off + n * xs.s0 + (long)c * xs.s1, xs.s2, xs.s3, (int)h0, (int)h1, (int)w0,
                               (int)w1, (int)padded, mode);
    y[y_off + n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3] = out;
}

/* The same pooling over a 3-D range whose first axis is the input's
 * contiguous one (channels for NHWC, columns for NCHW), so neighbouring
 * work-items read neighbouring floats and CPU drivers (PoCL) vectorise
 * across them; indices come from the range, not from 64-bit divisions.
 * Axes: NHWC (c, q, n*P + p); NCHW (q, p, n*C + c). The host rounds the
 * first two up to whole work-groups and keeps every index within int. */
__kernel void pool2d_fast(__global const float *x, long x_off,
                          __global float *y, long y_off,
                          long4 xs, long4 ys,
                          int4 in_dims,   /* N, C, H, W                     */
                          int4 out_dims,  /* P, Q, mode, x is NHWC          */
                          int4 win,       /* window h, w, stride h, w       */
                          int4 pad)       /* top, left, bottom, right       */
{
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2;
    const int a = (int)get_global_id(0), b = (int)get_global_id(1), z = (int)get_global_id(2);
    int n, c, p, q;
    if (out_dims.s3) {
        c = a; q = b; n = z / P; p = z - n * P;
        if (c >= C || q >= Q)
            return;
    } else {
        q = a; p = b; n = z / C; c = z - n * C;
        if (q >= Q || p >= P)
            return;
    }
    int h0, h1, w0, w1;
    const int padded = pool_extent(p, win.s2, pad.s0, pad.s2, win.s0, H, &h0, &h1) *
                       pool_extent(q, win.s3, pad.s1, pad.s3, win.s1, W, &w0, &w1);
    const float out = pool_one(x + x_off + (long)n * xs.s0 + (long)c * xs.s1, xs.s2, xs.s3, h0, h1, w0, w1, padded,
                               mode);
    y[y_off + (long)n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3] = out;
}

/* NHWC input with contiguous channels: a work-item pools 8 channels of one
 * output pixel with float8 loads (one 256-bit vector; GPUs coalesce the
 * neighbouring work-items' loads). Range (ceil(C/8), Q, N*P); the last
 * channel block of an odd C falls back to scalars. */
__kernel void pool2d_nhwc8(__global const float *x, long x_off,
                           __global float *y, long y_off,
                           long4 xs, long4 ys,
                           int4 in_dims,   /* N, C, H, W                     */
                           int4 out_dims,  /* P, Q, mode, unused             */
                           int4 win,       /* window h, w, stride h, w       */
                           int4 pad)       /* top, left, bottom, right       */
{
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2;
    const int c0 = (int)get_global_id(0) * 8, q = (int)get_global_id(1), z = (int)get_global_id(2);
    if (c0 >= C || q >= Q)
        return;
    const int n = z / P, p = z - n * P;
    int h0, h1, w0, w1;
    const int padded = pool_extent(p, win.s2, pad.s0, pad.s2, win.s0, H, &h0, &h1) *
                       pool_extent(q, win.s3, pad.s1, pad.s3, win.s1, W, &w0, &w1);
    const float div = mode == 1 ? (float)padded : (float)((h1 - h0) * (w1 - w0));
    __global const float *xb = x + x_off + (long)n * xs.s0 + c0;
    const long yb = y_off + (long)n * ys.s0 + (long)p * ys.s2 + (long)q * ys.s3;
    if (c0 + 8 <= C) {
        float8 acc = (float8)(0.0f), mx = (float8)(-INFINITY);
        int8 nan_seen = (int8)(0);
        for (int ih = h0; ih < h1; ih++)
            for (int iw = w0; iw < w1; iw++) {
                const float8 v = vload8(0, xb + (long)ih * xs.s2 + (long)iw * xs.s3);
                acc += v;
                mx = fmax(mx, v);
                nan_seen |= isnan(v);
            }
        const float8 out = mode == 0 ? select(mx, (float8)(NAN), nan_seen) : acc / div;
        if (ys.s1 == 1) {
            vstore8(out, 0, y + yb + c0);
        } else {
            float o[8];
            vstore8(out, 0, o);
            for (int l = 0; l < 8; l++)
                y[yb + (long)(c0 + l) * ys.s1] = o[l];
        }
        return;
    }
    for (int c = c0; c < C; c++)
        y[yb + (long)c * ys.s1] = pool_one(xb + (c - c0), xs.s2, xs.s3, h0, h1, w0, w1, padded, mode);
}

/* NCHW input with contiguous rows: a work-item pools 8 consecutive output
 * columns of one (n, c, p) row. Away from the image's left and right
 * edges, for strides 1 and 2, each window column is one vector load (for
 * stride 2, the even lanes of 16 floats); chunks at the edges, other
 * strides and the tail of Q go through scalars. Range (ceil(Q/8), P, N*C). */
__kernel void pool2d_nchw8(__global const float *x, long x_off,
                           __global float *y, long y_off,
                           long4 xs, long4 ys,
                           int4 in_dims,   /* N, C, H, W                     */
                           int4 out_dims,  /* P, Q, mode, unused             */
                           int4 win,       /* window h, w, stride h, w       */
                           int4 pad)       /* top, left, bottom, right       */
{
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2;
    const int q0 = (int)get_global_id(0) * 8, p = (int)get_global_id(1), z = (int)get_global_id(2);
    if (q0 >= Q || p >= P)
        return;
    const int n = z / C, c = z - n * C;
    int h0, h1;
    const int hp = pool_extent(p, win.s2, pad.s0, pad.s2, win.s0, H, &h0, &h1); /* rows the divisor counts */
    __global const float *xb = x + x_off + (long)n * xs.s0 + (long)c * xs.s1;
    const long yb = y_off + (long)n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2;
    const int sw = win.s3, ww = win.s1;
    const int first = q0 * sw - pad.s1;                 /* first column read */
    const int span = sw == 1 ? 8 : 16;                  /* floats per load   */
    if ((sw == 1 || sw == 2) && q0 + 8 <= Q && first >= 0 && first + ww - 1 + span <= W) {
        float8 acc = (float8)(0.0f), mx = (float8)(-INFINITY);
        int8 nan_seen = (int8)(0);
        for (int ih = h0; ih < h1; ih++) {
            __global const float *row = xb + (long)ih * xs.s2 + first;
            for (int s = 0; s < ww; s++) {
                const float8 v = sw == 1 ? vload8(0, row + s) : vload16(0, row + s).even;
                acc += v;
                mx = fmax(mx, v);
                nan_seen |= isnan(v);
            }
        }
        /* Whole windows in W: the divisor is the same for all 8. */
        const float div = (float)((mode == 1 ? hp : h1 - h0) * ww);
        const float8 out = mode == 0 ? select(mx, (float8)(NAN), nan_seen) : acc / div;
        if (ys.s3 == 1) {
            vstore8(out, 0, y + yb + q0);
        } else {
            float o[8];
            vstore8(out, 0, o);
            for (int l = 0; l < 8; l++)
                y[yb + (long)(q0 + l) * ys.s3] = o[l];
        }
        return;
    }
    for (int q = q0; q < q0 + 8 && q < Q; q++) {
        int w0, w1;
        const int padded = hp * pool_extent(q, sw, pad.s1, pad.s3, ww, W, &w0, &w1);
        y[yb + (long)q * ys.s3] = pool_one(xb, xs.s2, xs.s3, h0, h1, w0, w1, padded, mode);
    }
}
