/* Backward pooling, as a gather: one work-item per dx element sums the
 * gradients of the windows that hold it (average: divided by the
 * forward's divisor; max: only where it is the element the forward
 * returned, the first maximum in the window's row-major order or its last
 * NaN). Every dx element is written once, no atomics. Each kernel stores
 * float16 and bfloat16 too (the prelude's REAL_T): x and dy widened as
 * loaded, so max pooling compares the values the dtype holds, float32
 * sums, dx rounded once at its store. */

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

__kernel void pool2d_bwd(__global const REAL_T *x, long x_off, long4 xs,
                         __global const REAL_T *dy, long dy_off, long4 ys,
                         __global REAL_T *dx, long dx_off, long4 dxs,
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
    NCHW_OF_INDEX(gid, C, H, W, out_dims.s3, n, c, ih, iw);
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
            const float g = LOAD_REAL(dy, yb + (long)p * ys.s2 + (long)q * ys.s3);
            if (mode != 0) {
                acc += g / divisor;
                continue;
            }
            float mx = 0.0f;
            int ah = -1, aw = -1;
            for (int a = h0; a < h1; a++)
                for (int b = w0; b < w1; b++) {
                    const float v = LOAD_REAL(x, xb + (long)a * xs.s2 + (long)b * xs.s3);
                    if (ah < 0 || v > mx || isnan(v)) {
                        mx = v;
                        ah = a;
                        aw = b;
                    }
                }
            if (ah == ih && aw == iw)
                acc += g;
        }
    STORE_REAL(acc, dx, dx_off + n * dxs.s0 + (long)c * dxs.s1 + (long)ih * dxs.s2 + (long)iw * dxs.s3);
}

/* Backward pooling where windows do not overlap (stride >= window in both
 * axes): one work-item per row of dy (n, c, p) writes the windows of its
 * outputs in dx, the gradient at the forward's maximum (same rule as
 * pool2d_bwd: the first maximum in row-major order, or the last NaN) and
 * 0 elsewhere, or the average's share. A row per item keeps the index
 * arithmetic out of the inner loop. dx elements in no window were zeroed
 * before. */
__kernel void pool2d_bwd_window(__global const REAL_T *x, long x_off, long4 xs,
                                __global const REAL_T *dy, long dy_off, long4 ys,
                                __global REAL_T *dx, long dx_off, long4 dxs,
                                int4 in_dims,  /* N, C, H, W                        */
                                int4 out_dims, /* P, Q, mode, unused                */
                                int4 win,      /* window h, w, stride h, w          */
                                int4 pad,      /* top, bottom, left, right          */
                                long total)    /* N * C * P                         */
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2;
    const int p = (int)(gid % P);
    const long nc = gid / P;
    const int c = (int)(nc % C);
    const long n = nc / C;
    const int a0 = p * win.s2 - pad.s0, a1 = min(a0 + win.s0, H + pad.s1);
    const int h0 = max(a0, 0), h1 = min(a1, H);
    __global const REAL_T *xr = x + x_off + n * xs.s0 + (long)c * xs.s1;
    __global const REAL_T *dyr = dy + dy_off + n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2;
    __global REAL_T *dxr = dx + dx_off + n * dxs.s0 + (long)c * dxs.s1;
    for (int q = 0; q < Q; q++) {
        const int b0 = q * win.s3 - pad.s2, b1 = min(b0 + win.s1, W + pad.s3);
        const int w0 = max(b0, 0), w1 = min(b1, W);
        const float g = LOAD_REAL(dyr, (long)q * ys.s3);
        if (mode != 0) {
            const float v = g / (float)(mode == 1 ? (a1 - a0) * (b1 - b0) : (h1 - h0) * (w1 - w0));
            for (int a = h0; a < h1; a++)
                for (int b = w0; b < w1; b++)
                    STORE_REAL(v, dxr, (long)a * dxs.s2 + (long)b * dxs.s3);
            continue;
        }
        float mx = 0.0f;
        int ah = -1, aw = -1;
        for (int a = h0; a < h1; a++)
            for (int b = w0; b < w1; b++) {
                const float v = LOAD_REAL(xr, (long)a * xs.s2 + (long)b * xs.s3);
                if (ah < 0 || v > mx || isnan(v)) {
                    mx = v;
                    ah = a;
                    aw = b;
                }
            }
        for (int a = h0; a < h1; a++)
            for (int b = w0; b < w1; b++)
                STORE_REAL((a == ah && b == aw) ? g : 0.0f, dxr, (long)a * dxs.s2 + (long)b * dxs.s3);
    }
}

/* pool2d_bwd_window's common case, Deep MNIST's and VGG's 2x2/2 pools
 * without padding, rows contiguous in x, dy and dx: eight windows at a
 * time with vector loads, the first maximum (or the last NaN) chosen by
 * selects in the scalar kernel's order: (0,0), (0,1), (1,0), (1,1). And
 * averages (out_dims.s2, the mode): the windows are whole, so both
 * averages give each element a quarter, exactly the scalar kernel's
 * g / 4 (7x its speed on PoCL in float32, 16x in float16). */
__kernel void pool2d_bwd_2x2(__global const REAL_T *x, long x_off, long4 xs,
                             __global const REAL_T *dy, long dy_off, long4 ys,
                             __global REAL_T *dx, long dx_off, long4 dxs,
                             int4 in_dims, int4 out_dims, int4 win, int4 pad, long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1;
    const int P = out_dims.s0, Q = out_dims.s1;
    const int p = (int)(gid % P);
    const long nc = gid / P;
    const int c = (int)(nc % C);
    const long n = nc / C;
    __global const REAL_T *x0 = x + x_off + n * xs.s0 + (long)c * xs.s1 + (long)(2 * p) * xs.s2;
    __global const REAL_T *x1 = x0 + xs.s2;
    __global const REAL_T *g = dy + dy_off + n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2;
    __global REAL_T *d0 = dx + dx_off + n * dxs.s0 + (long)c * dxs.s1 + (long)(2 * p) * dxs.s2;
    __global REAL_T *d1 = d0 + dxs.s2;
    int q = 0;
    if (out_dims.s2 != 0) { /* an average: a quarter of the window's gradient each */
        for (; q + 8 <= Q; q += 8) {
            const float8 v = LOADR8(0, g + q) * 0.25f, lo = v.s00112233, hi = v.s44556677;
            STORER8(lo, 0, d0 + 2 * q);
            STORER8(hi, 0, d0 + 2 * q + 8);
            STORER8(lo, 0, d1 + 2 * q);
            STORER8(hi, 0, d1 + 2 * q + 8);
        }
        for (; q < Q; q++) {
            const float v = LOAD_REAL(g, q) * 0.25f;
            STORE_REAL(v, d0, 2 * q);
            STORE_REAL(v, d0, 2 * q + 1);
            STORE_REAL(v, d1, 2 * q);
            STORE_REAL(v, d1, 2 * q + 1);
        }
        return;
    }
    for (; q + 8 <= Q; q += 8) {
        /* float8 halves only: 16-lane vectors through built-ins change the
         * call ABI on x86 without AVX-512 (see pool2d.cl). */
        const float8 a0 = LOADR8(0, x0 + 2 * q), b0 = LOADR8(0, x0 + 2 * q + 8);
        const float8 a1 = LOADR8(0, x1 + 2 * q), b1 = LOADR8(0, x1 + 2 * q + 8);
        const float8 gv = LOADR8(0, g + q);
        const float8 v00 = (float8)(a0.even, b0.even), v01 = (float8)(a0.odd, b0.odd);
        const float8 v10 = (float8)(a1.even, b1.even), v11 = (float8)(a1.odd, b1.odd);
        float8 m = v00;
        int8 sel = (int8)(0);
        int8 t = isgreater(v01, m) | isnan(v01);
        m = select(m, v01, t);
        sel = select(sel, (int8)(1), t);
        t = isgreater(v10, m) | isnan(v10);
        m = select(m, v10, t);
        sel = select(sel, (int8)(2), t);
        t = isgreater(v11, m) | isnan(v11);
        sel = select(sel, (int8)(3), t);
        const float8 z = (float8)(0.0f);
        const float8 e0 = select(z, gv, sel == (int8)(0)), e1 = select(z, gv, sel == (int8)(1));
        const float8 f0 = select(z, gv, sel == (int8)(2)), f1 = select(z, gv, sel == (int8)(3));
        STORER8((float8)(e0.s0, e1.s0, e0.s1, e1.s1, e0.s2, e1.s2, e0.s3, e1.s3), 0, d0 + 2 * q);
        STORER8((float8)(e0.s4, e1.s4, e0.s5, e1.s5, e0.s6, e1.s6, e0.s7, e1.s7), 0, d0 + 2 * q + 8);
        STORER8((float8)(f0.s0, f1.s0, f0.s1, f1.s1, f0.s2, f1.s2, f0.s3, f1.s3), 0, d1 + 2 * q);
        STORER8((float8)(f0.s4, f1.s4, f0.s5, f1.s5, f0.s6, f1.s6, f0.s7, f1.s7), 0, d1 + 2 * q + 8);
    }
    for (; q < Q; q++) {
        const float v[4] = {LOAD_REAL(x0, 2 * q), LOAD_REAL(x0, 2 * q + 1), LOAD_REAL(x1, 2 * q), LOAD_REAL(x1, 2 * q + 1)};
        float m = v[0];
        int s = 0;
        for (int k = 1; k < 4; k++)
            if (v[k] > m || isnan(v[k])) {
                m = v[k];
                s = k;
            }
        const float gq = LOAD_REAL(g, q);
        STORE_REAL(s == 0 ? gq : 0.0f, d0, 2 * q);
        STORE_REAL(s == 1 ? gq : 0.0f, d0, 2 * q + 1);
        STORE_REAL(s == 2 ? gq : 0.0f, d1, 2 * q);
        STORE_REAL(s == 3 ? gq : 0.0f, d1, 2 * q + 1);
    }
}

/* pool2d_bwd_2x2 for channel-contiguous x, dy and dx (NHWC): one
 * work-item per output pixel (n, p, q) over its channels, eight at a
 * time, the same selects on the window's four pixels. */
__kernel void pool2d_bwd_2x2_nhwc(__global const REAL_T *x, long x_off, long4 xs,
                                  __global const REAL_T *dy, long dy_off, long4 ys,
                                  __global REAL_T *dx, long dx_off, long4 dxs,
                                  int4 in_dims, int4 out_dims, int4 win, int4 pad, long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1;
    const int P = out_dims.s0, Q = out_dims.s1;
    const int q = (int)(gid % Q);
    const long np = gid / Q;
    const int p = (int)(np % P);
    const long n = np / P;
    __global const REAL_T *x00 = x + x_off + n * xs.s0 + (long)(2 * p) * xs.s2 + (long)(2 * q) * xs.s3;
    __global const REAL_T *x01 = x00 + xs.s3, *x10 = x00 + xs.s2, *x11 = x10 + xs.s3;
    __global const REAL_T *g = dy + dy_off + n * ys.s0 + (long)p * ys.s2 + (long)q * ys.s3;
    __global REAL_T *d00 = dx + dx_off + n * dxs.s0 + (long)(2 * p) * dxs.s2 + (long)(2 * q) * dxs.s3;
    __global REAL_T *d01 = d00 + dxs.s3, *d10 = d00 + dxs.s2, *d11 = d10 + dxs.s3;
    int c = 0;
    if (out_dims.s2 != 0) { /* an average, as pool2d_bwd_2x2's */
        for (; c + 8 <= C; c += 8) {
            const float8 v = LOADR8(0, g + c) * 0.25f;
            STORER8(v, 0, d00 + c);
            STORER8(v, 0, d01 + c);
            STORER8(v, 0, d10 + c);
            STORER8(v, 0, d11 + c);
        }
        for (; c < C; c++) {
            const float v = LOAD_REAL(g, c) * 0.25f;
            STORE_REAL(v, d00, c);
            STORE_REAL(v, d01, c);
            STORE_REAL(v, d10, c);
            STORE_REAL(v, d11, c);
        }
        return;
    }
    for (; c + 8 <= C; c += 8) {
        const float8 v00 = LOADR8(0, x00 + c), v01 = LOADR8(0, x01 + c), v10 = LOADR8(0, x10 + c),
                     v11 = LOADR8(0, x11 + c), gv = LOADR8(0, g + c);
        float8 m = v00;
        int8 sel = (int8)(0);
        int8 t = isgreater(v01, m) | isnan(v01);
        m = select(m, v01, t);
        sel = select(sel, (int8)(1), t);
        t = isgreater(v10, m) | isnan(v10);
        m = select(m, v10, t);
        sel = select(sel, (int8)(2), t);
        t = isgreater(v11, m) | isnan(v11);
        sel = select(sel, (int8)(3), t);
        const float8 z = (float8)(0.0f);
        STORER8(select(z, gv, sel == (int8)(0)), 0, d00 + c);
        STORER8(select(z, gv, sel == (int8)(1)), 0, d01 + c);
        STORER8(select(z, gv, sel == (int8)(2)), 0, d10 + c);
        STORER8(select(z, gv, sel == (int8)(3)), 0, d11 + c);
    }
    for (; c < C; c++) {
        const float v[4] = {LOAD_REAL(x00, c), LOAD_REAL(x01, c), LOAD_REAL(x10, c), LOAD_REAL(x11, c)};
        float m = v[0];
        int s = 0;
        for (int k = 1; k < 4; k++)
            if (v[k] > m || isnan(v[k])) {
                m = v[k];
                s = k;
            }
        const float gc = LOAD_REAL(g, c);
        STORE_REAL(s == 0 ? gc : 0.0f, d00, c);
        STORE_REAL(s == 1 ? gc : 0.0f, d01, c);
        STORE_REAL(s == 2 ? gc : 0.0f, d10, c);
        STORE_REAL(s == 3 ? gc : 0.0f, d11, c);
    }
}
