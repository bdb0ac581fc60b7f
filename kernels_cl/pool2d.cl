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

inline float pool_one(__global const REAL_T *xb, long sh, long sw, int h0, int h1, int w0, int w1, int padded,
                      int mode)
{
    float acc = 0.0f, mx = -INFINITY;
    int nan_seen = 0;
    for (int ih = h0; ih < h1; ih++)
        for (int iw = w0; iw < w1; iw++) {
            const float v = LOAD_REAL(xb, (long)ih * sh + (long)iw * sw);
            acc += v;
            mx = fmax(mx, v);
            nan_seen |= isnan(v);
        }
    if (mode == 0)
        return nan_seen ? NAN : mx;
    return acc / (float)(mode == 1 ? padded : (h1 - h0) * (w1 - w0));
}

__kernel void pool2d_direct(__global const REAL_T *x, long x_off,
                            __global REAL_T *y, long y_off,
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
    NCHW_OF_INDEX(gid, C, P, Q, out_dims.s3, n, c, p, q);
    long h0 = (long)p * win.s2 - pad.s0, w0 = (long)q * win.s3 - pad.s1;
    long h1 = min(h0 + win.s0, (long)H + pad.s2), w1 = min(w0 + win.s1, (long)W + pad.s3);
    const long padded = (h1 - h0) * (w1 - w0);
    h0 = max(h0, 0L);
    w0 = max(w0, 0L);
    h1 = min(h1, (long)H);
    w1 = min(w1, (long)W);
    const float out = pool_one(x + x_off + n * xs.s0 + (long)c * xs.s1, xs.s2, xs.s3, (int)h0, (int)h1, (int)w0,
                               (int)w1, (int)padded, mode);
    STORE_REAL(out, y, y_off + n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3);
}

/* The same pooling over a 3-D range whose first axis is the input's
 * contiguous one (channels for NHWC, columns for NCHW), so neighbouring
 * work-items read neighbouring floats and CPU drivers (PoCL) vectorise
 * across them; indices come from the range, not from 64-bit divisions.
 * Axes: NHWC (c, q, n*P + p); NCHW (q, p, n*C + c). The host rounds the
 * first two up to whole work-groups and keeps every index within int. */
__kernel void pool2d_fast(__global const REAL_T *x, long x_off,
                          __global REAL_T *y, long y_off,
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
    STORE_REAL(out, y, y_off + (long)n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3);
}


/* ---- the row kernels: contiguous rows (NCHW) or channels (NHWC) ---------
 * A work-item pools a run of one output row, out_dims.s3 outputs long (the
 * whole row on CPUs, where PoCL's per-work-group cost dominates short
 * items; a few outputs on GPUs, which need many items), in NCHW for each
 * of a block of output rows (a plane's on CPUs). op 0 is max with
 * NaN winning, op 1 a sum; callers pass it as a literal so the inlined
 * copies lose the branch. */

/* Helpers are forced inline: PoCL otherwise keeps one out-of-line copy
 * (runtime op and stride, vectors passed through memory), which measured
 * about half the speed. */
inline __attribute__((always_inline)) float8 red8(float8 a, float8 b, int op)
{
    return op == 0 ? select(select(b, a, isgreater(a, b)), a, isnan(a)) : a + b;
}

/* The 16-lane helpers pass vectors by pointer: a float16 argument or
 * result is a call with the ABI note above, even always inlined. */
inline __attribute__((always_inline)) void red16(float16 *acc, const float16 *v, int op)
{
    const float16 a = *acc, b = *v;
#ifdef SPLIT16
    *acc = (float16)(red8(a.lo, b.lo, op), red8(a.hi, b.hi, op));
#else
    *acc = op == 0 ? select(select(b, a, isgreater(a, b)), a, isnan(a)) : a + b;
#endif
}

/* Columns [a, a+16) of a row, lanes outside [0, W) set to id: one vector
 * load inside the row, the identity wholly outside it. Where the segment
 * crosses a border but its 16 floats lie inside the tensor [lo, hi) (every
 * row but the tensor's first and last), one load reaching into the
 * neighbouring row and a lane mask; else lane by lane (a runtime lane
 * shift scalarises on PoCL). */
inline __attribute__((always_inline)) void seg16(float16 *out, __global const REAL_T *row, int a, int W, float id,
                                                  __global const REAL_T *lo, __global const REAL_T *hi)
{
    if (a >= 0 && a + 16 <= W)
        *out = LOADR16(0, row + a);
    else if (a >= W || a + 16 <= 0)
        *out = (float16)(id);
    else if (row + a >= lo && row + a + 16 <= hi) {
        const int16 col = (int16)(a) + (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        *out = SELECT16((float16)(id), LOADR16(0, row + a), col >= 0 && col < W);
    } else {
        float t[16];
        for (int l = 0; l < 16; l++)
            t[l] = a + l >= 0 && a + l < W ? LOAD_REAL(row, a + l) : id;
        *out = LOAD16(0, t);
    }
}

/* Lanes k..k+15 of the 32 lanes a:b (k in 0..8), with literal swizzles
 * so every driver emits a constant shuffle. */
inline __attribute__((always_inline)) void shift16(float16 *out, const float16 *pa, const float16 *pb, int k)
{
    const float16 a = *pa, b = *pb;
    switch (k) {
    case 0: *out = a; break;
    case 1: *out = (float16)(a.s123, a.s4567, a.s89ab, a.scdef, b.s0); break;
    case 2: *out = (float16)(a.s23, a.s4567, a.s89ab, a.scdef, b.s01); break;
    case 3: *out = (float16)(a.s3, a.s4567, a.s89ab, a.scdef, b.s012); break;
    case 4: *out = (float16)(a.s4567, a.s89ab, a.scdef, b.s0123); break;
    case 5: *out = (float16)(a.s567, a.s89ab, a.scdef, b.s0123, b.s4); break;
    case 6: *out = (float16)(a.s67, a.s89ab, a.scdef, b.s0123, b.s45); break;
    case 7: *out = (float16)(a.s7, a.s89ab, a.scdef, b.s0123, b.s456); break;
    default: *out = (float16)(a.s89abcdef, b.s01234567); break;
    }
}

/* The first n (< 16) lanes of *v to p, in halves held in registers: a
 * round trip through a private array stalled on the store forwarding and
 * took a seventh of the time at 14x14, where every row is one part. */
inline __attribute__((always_inline)) void store_part(const float16 *v, __global REAL_T *p, int n)
{
    float8 h = (*v).lo;
    if (n >= 8) {
        STORER8(h, 0, p);
        h = (*v).hi;
        p += 8;
        n -= 8;
    }
    float4 f = h.lo;
    if (n >= 4) {
        STORER4(f, 0, p);
        f = h.hi;
        p += 4;
        n -= 4;
    }
    float2 t = f.lo;
    if (n >= 2) {
        STORER2(t, 0, p);
        t = f.hi;
        p += 2;
        n -= 2;
    }
    if (n)
        STORE_REAL(t.x, p, 0);
}

/* Columns [a, a + 16*sw) of the window rows [h0, h1), reduced vertically:
 * sw 2 splits them into even (*e) and odd (*o) columns, sw 1 leaves the
 * 16 in *e. */
inline __attribute__((always_inline)) void nchw_vseg(__global const REAL_T *xb, long sh, int h0, int h1, int a, int W, int sw, int op, float16 *e,
                      float16 *o, __global const REAL_T *lo, __global const REAL_T *hi)
{
    const float id = op == 0 ? -INFINITY : 0.0f;
    float16 v = (float16)(id), u = (float16)(id);
    for (int ih = h0; ih < h1; ih++) {
        __global const REAL_T *row = xb + (long)ih * sh;
        float16 s;
        seg16(&s, row, a, W, id, lo, hi);
        red16(&v, &s, op);
        if (sw == 2) {
            seg16(&s, row, a + 16, W, id, lo, hi);
            red16(&u, &s, op);
        }
    }
    if (sw == 2) {
        *e = (float16)(v.even, u.even);
        *o = (float16)(v.odd, u.odd);
    } else {
        *e = v;
        *o = v;
    }
}

/* Outputs [qa, qe) of one NCHW row, 16 at a time. Every input column is
 * loaded once per output row: it is reduced over the window rows into a
 * segment of 16*sw columns, the segment serves this chunk and (as `next`)
 * the window columns that spill over from the previous one, and each
 * window column is then one shift of those registers. Padding columns are
 * the reduction's identity, so borders take the same path. */
inline __attribute__((always_inline)) void nchw_row(__global const REAL_T *xb, long sh, __global REAL_T *yr, long sq, int h0, int h1, int hcount,
                     int W, int qa, int qe, int sw, int ww, int pl, int pr, int op, int mode,
                     __global const REAL_T *lo, __global const REAL_T *hi)
{
    float16 ec, oc, en, on;
    int a = qa * sw - pl;
    nchw_vseg(xb, sh, h0, h1, a, W, sw, op, &ec, &oc, lo, hi);
    for (int q0 = qa; q0 < qe; q0 += 16, a += 16 * sw) {
        nchw_vseg(xb, sh, h0, h1, a + 16 * sw, W, sw, op, &en, &on, lo, hi);
        float16 acc = ec;
        for (int s = 1; s < ww; s++) {
            float16 t;
            if (sw == 2 && (s & 1))
                shift16(&t, &oc, &on, s >> 1);
            else
                shift16(&t, &ec, &en, sw == 2 ? s >> 1 : s);
            red16(&acc, &t, op);
        }
        if (op != 0) {
            const int16 lo = (int16)(a) + sw * (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                        hi = lo + ww;
            const int16 cnt = mode == 1 ? MIN16I(hi, W + pr) - lo : MIN16I(hi, W) - MAX16I(lo, 0);
            acc /= TO_FLOAT16(cnt * hcount);
        }
        if (q0 + 16 <= qe && sq == 1) {
            STORER16(acc, 0, yr + q0);
        } else if (sq == 1) {
            store_part(&acc, yr + q0, qe - q0);
        } else {
            float o[16];
            STORE16(acc, 0, o);
            for (int l = 0; l < 16 && q0 + l < qe; l++)
                STORE_REAL(o[l], yr, (long)(q0 + l) * sq);
        }
        ec = en;
        oc = on;
    }
}

/* NCHW input with contiguous rows, horizontal stride 1 or 2 and a window
 * at most 9 (stride 1) or 17 (stride 2) wide. 1-D range over (n, c, block
 * of rpi output rows, run of out_dims.s3 outputs, a multiple of 16), run
 * fastest. */
__kernel void pool2d_nchw_rows(__global const REAL_T *x, long x_off,
                               __global REAL_T *y, long y_off,
                               long4 xs, long4 ys,
                               int4 in_dims,   /* N, C, H, W                     */
                               int4 out_dims,  /* P, Q, mode, outputs per item   */
                               int4 win,       /* window h, w, stride h, w       */
                               int4 pad,       /* top, left, bottom, right       */
                               int rpi)        /* output rows per item           */
{
    const int N = in_dims.s0, C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2, run = out_dims.s3;
    const int runs = (Q + run - 1) / run, blocks = (P + rpi - 1) / rpi;
    long t = (long)get_global_id(0);
    if (t >= (long)N * C * blocks * runs)
        return;
    const int r = (int)(t % runs);
    t /= runs;
    const int pb = (int)(t % blocks);
    t /= blocks;
    const int c = (int)(t % C), n = (int)(t / C);
    __global const REAL_T *xb = x + x_off + (long)n * xs.s0 + (long)c * xs.s1;
    const int qa = r * run, qe = min(qa + run, Q);
    /* The tensor's extent: loads that stay inside it are always safe. */
    __global const REAL_T *lo = x + x_off;
    __global const REAL_T *hi = lo + (long)(N - 1) * xs.s0 + (long)(C - 1) * xs.s1 + (long)(H - 1) * xs.s2 + W;
    const int pe = min(pb * rpi + rpi, P);
    for (int p = pb * rpi; p < pe; p++) {
        int h0, h1;
        const int hp = pool_extent(p, win.s2, pad.s0, pad.s2, win.s0, H, &h0, &h1);
        const int hcount = mode == 1 ? hp : h1 - h0;
        __global REAL_T *yr = y + y_off + (long)n * ys.s0 + (long)c * ys.s1 + (long)p * ys.s2;
        if (win.s3 == 2 && win.s1 == 3 && mode == 0) {
            /* ResNet's 3x3/2 max pool with the window width a literal:
             * the tap loop unrolls and every shift is a constant shuffle. */
            nchw_row(xb, xs.s2, yr, ys.s3, h0, h1, hcount, W, qa, qe, 2, 3, pad.s1, pad.s3, 0, 0, lo, hi);
        } else if (win.s3 == 2 && win.s1 == 2 && mode == 0) {
            /* and VGG's 2x2/2 */
            nchw_row(xb, xs.s2, yr, ys.s3, h0, h1, hcount, W, qa, qe, 2, 2, pad.s1, pad.s3, 0, 0, lo, hi);
        } else if (win.s3 == 2) {
            if (mode == 0)
                nchw_row(xb, xs.s2, yr, ys.s3, h0, h1, hcount, W, qa, qe, 2, win.s1, pad.s1, pad.s3, 0, 0, lo, hi);
            else
                nchw_row(xb, xs.s2, yr, ys.s3, h0, h1, hcount, W, qa, qe, 2, win.s1, pad.s1, pad.s3, 1, mode, lo, hi);
        } else {
            if (mode == 0)
                nchw_row(xb, xs.s2, yr, ys.s3, h0, h1, hcount, W, qa, qe, 1, win.s1, pad.s1, pad.s3, 0, 0, lo, hi);
            else
                nchw_row(xb, xs.s2, yr, ys.s3, h0, h1, hcount, W, qa, qe, 1, win.s1, pad.s1, pad.s3, 1, mode, lo, hi);
        }
    }
}

/* Outputs [qa, qe) of one NHWC row for channels [0, cn) of xb/yr, 8 at a
 * time with one vector load per window element; rows outer so a window
 * row's pixels are neighbours in memory, and all of a pixel's channels
 * before the next output so one item streams through whole pixels. A
 * last group of fewer than 8 channels goes through scalars. */
inline __attribute__((always_inline)) void nhwc_row(__global const REAL_T *xb, long sh, long sw_el, __global REAL_T *yr, long sq, long sc, int h0,
                     int h1, int hp, int W, int qa, int qe, int cn, int stride, int ww, int pl, int pr, int op,
                     int mode)
{
    for (int q = qa; q < qe; q++) {
        const int lo = q * stride - pl, w0 = max(lo, 0), w1 = min(lo + ww, W);
        const float div = (float)(mode == 1 ? hp * (min(lo + ww, W + pr) - lo) : (h1 - h0) * (w1 - w0));
        int c0 = 0;
        for (; c0 + 16 <= cn; c0 += 16) { /* one AVX-512 vector */
            float16 acc = (float16)(op == 0 ? -INFINITY : 0.0f);
            for (int ih = h0; ih < h1; ih++)
                for (int iw = w0; iw < w1; iw++) {
                    const float16 t = LOADR16(0, xb + (long)ih * sh + (long)iw * sw_el + c0);
                    red16(&acc, &t, op);
                }
            if (op != 0)
                acc /= div;
            if (sc == 1) {
                STORER16(acc, 0, yr + (long)q * sq + c0);
            } else {
                float o[16];
                STORE16(acc, 0, o);
                for (int l = 0; l < 16; l++)
                    STORE_REAL(o[l], yr, (long)q * sq + (long)(c0 + l) * sc);
            }
        }
        for (; c0 + 8 <= cn; c0 += 8) {
            float8 acc = (float8)(op == 0 ? -INFINITY : 0.0f);
            for (int ih = h0; ih < h1; ih++)
                for (int iw = w0; iw < w1; iw++)
                    acc = red8(acc, LOADR8(0, xb + (long)ih * sh + (long)iw * sw_el + c0), op);
            if (op != 0)
                acc /= div;
            if (sc == 1) {
                STORER8(acc, 0, yr + (long)q * sq + c0);
            } else {
                float o[8];
                vstore8(acc, 0, o);
                for (int l = 0; l < 8; l++)
                    STORE_REAL(o[l], yr, (long)q * sq + (long)(c0 + l) * sc);
            }
        }
        for (; c0 < cn; c0++) {
            float acc = op == 0 ? -INFINITY : 0.0f;
            int nan_seen = 0;
            for (int ih = h0; ih < h1; ih++)
                for (int iw = w0; iw < w1; iw++) {
                    const float v = LOAD_REAL(xb, (long)ih * sh + (long)iw * sw_el + c0);
                    acc = op == 0 ? fmax(acc, v) : acc + v;
                    nan_seen |= isnan(v);
                }
            STORE_REAL(op == 0 && nan_seen ? NAN : op == 0 ? acc : acc / div, yr, (long)q * sq + (long)c0 * sc);
        }
    }
}

/* NHWC input with contiguous channels. 1-D range over (n, p, run of
 * out_dims.s3 outputs, group of `cpi` channels), channels fastest; cpi is
 * a multiple of 8 (GPUs: 8, one vector per item) or all of C (CPUs). */
__kernel void pool2d_nhwc_rows(__global const REAL_T *x, long x_off,
                               __global REAL_T *y, long y_off,
                               long4 xs, long4 ys,
                               int4 in_dims,   /* N, C, H, W                     */
                               int4 out_dims,  /* P, Q, mode, outputs per item   */
                               int4 win,       /* window h, w, stride h, w       */
                               int4 pad,       /* top, left, bottom, right       */
                               int cpi)
{
    const int N = in_dims.s0, C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, mode = out_dims.s2, run = out_dims.s3;
    const int runs = (Q + run - 1) / run, groups = (C + cpi - 1) / cpi;
    long t = (long)get_global_id(0);
    if (t >= (long)N * P * runs * groups)
        return;
    const int c0 = (int)(t % groups) * cpi, cn = min(cpi, C - c0);
    t /= groups;
    const int r = (int)(t % runs);
    t /= runs;
    const int p = (int)(t % P), n = (int)(t / P);
    int h0, h1;
    const int hp = pool_extent(p, win.s2, pad.s0, pad.s2, win.s0, H, &h0, &h1);
    __global const REAL_T *xb = x + x_off + (long)n * xs.s0 + c0;
    __global REAL_T *yr = y + y_off + (long)n * ys.s0 + (long)c0 * ys.s1 + (long)p * ys.s2;
    const int qa = r * run, qe = min(qa + run, Q);
    if (mode == 0)
        nhwc_row(xb, xs.s2, xs.s3, yr, ys.s3, ys.s1, h0, h1, hp, W, qa, qe, cn, win.s3, win.s1, pad.s1, pad.s3, 0, 0);
    else
        nhwc_row(xb, xs.s2, xs.s3, yr, ys.s3, ys.s1, h0, h1, hp, W, qa, qe, cn, win.s3, win.s1, pad.s1, pad.s3, 1,
                 mode);
}

/* ---- the flat kernel: NCHW at stride 1, output the input's size ---------
 * With stride 1 and P == H, Q == W (the window's padding adds up to its
 * size less one: GoogLeNet's 3x3 max pools), output o of a plane taken
 * flat and its tap (dh, dw) lie a constant distance apart:
 * (dh - pt) * W + dw - pl. So 16 consecutive outputs, whatever rows they
 * span, take one vector load per tap. A lane's tap is in the image when
 * its column is (a mask per window column) and its flat index lies in the
 * plane (a mask per window row). At 14x14 and 7x7 the row kernel spent its
 * time on the borders of rows shorter than a vector; here a plane is a few
 * vectors. */

/* Which of outputs o (columns q) read an image element at the tap d
 * elements of rows and dc of columns away: its column is in the image and
 * its flat index in the plane. */
inline __attribute__((always_inline)) void flat_mask(int16 *m, const int16 *o, const int16 *q, int d, int dc, int W,
                                                      int HW)
{
    const int16 f = *o + d, c = *q + dc;
    *m = (f >= 0 && f < HW) & (c >= 0 && c < W);
}

/* Columns q below W + 16 (so rows p) moved into the image's rows: at
 * most 16 / W + 1 wraps. */
inline __attribute__((always_inline)) void flat_wrap(int16 *p, int16 *q, int W)
{
    for (int k = 0; k < 16 / W + 1; k++) {
        const int16 wrap = *q >= W;
        *q = SELECT16I(*q, *q - W, wrap);
        *p = SELECT16I(*p, *p + 1, wrap);
    }
}

/* Tap (dh, dw) of flat_run's 16 outputs into acc, one vector load. */
#define FLAT_TAP(acc, dh, dw)                                                                            \
    do {                                                                                                 \
        int16 m_;                                                                                        \
        flat_mask(&m_, &o, &q, ((dh) - pt) * W, (dw) - pl, W, HW);                                       \
        const float16 v_ = SELECT16((float16)(id), LOADR16(0, xb + o0 + ((dh) - pt) * W + (dw) - pl), m_); \
        red16(&(acc), &v_, op);                                                                          \
    } while (0)

/* Outputs [oa, oe) of the plane xb -> yb, 16 at a time. op and mode as in
 * nchw_row; wh and ww are literals in the common case. */
inline __attribute__((always_inline)) void flat_run(__global const REAL_T *xb, __global REAL_T *yb, int H, int W, int oa,
                                                     int oe, int wh, int ww, int pt, int pl, int op, int mode,
                                                     __global const REAL_T *lo, __global const REAL_T *hi)
{
    const float id = op == 0 ? -INFINITY : 0.0f;
    const int HW = H * W;
    const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    /* Lane l's output row p and column q, kept up to date as o moves on
     * by 16 (a vector division per chunk would scalarise). */
    int16 p = (int16)(oa / W), q = (int16)(oa % W) + lane;
    flat_wrap(&p, &q, W);
    for (int o0 = oa; o0 < oe; o0 += 16) {
        const int16 o = (int16)(o0) + lane;
        /* Whether every tap's 16 floats lie inside the tensor: then one
         * load each, else the tensor's first or last plane, lane by lane. */
        __global const REAL_T *first = xb + o0 - pt * W - pl, *last = xb + o0 + (wh - 1 - pt) * W + ww - 1 - pl;
        const int inside = first >= lo && last + 16 <= hi;
        float16 acc = (float16)(id);
        if (inside && wh == 3 && ww == 3) {
            /* A partial result per window row: independent chains the
             * core overlaps, where one chain of 9 dependent steps stalled;
             * unrolled (PoCL left even literal 3-step loops rolled). */
#pragma unroll
            for (int dh = 0; dh < 3; dh++) {
                float16 racc = (float16)(id);
#pragma unroll
                for (int dw = 0; dw < 3; dw++)
                    FLAT_TAP(racc, dh, dw);
                red16(&acc, &racc, op);
            }
        } else if (inside) {
            for (int dh = 0; dh < wh; dh++) {
                float16 racc = (float16)(id);
                for (int dw = 0; dw < ww; dw++)
                    FLAT_TAP(racc, dh, dw);
                red16(&acc, &racc, op);
            }
        } else {
            /* The tensor's first or last plane: lane by lane. */
            for (int dh = 0; dh < wh; dh++)
                for (int dw = 0; dw < ww; dw++) {
                    int16 m;
                    flat_mask(&m, &o, &q, (dh - pt) * W, dw - pl, W, HW);
                    __global const REAL_T *src = xb + o0 + (dh - pt) * W + dw - pl;
                    int mk[16];
                    float t[16];
                    vstore8(m.lo, 0, mk);
                    vstore8(m.hi, 0, mk + 8);
                    for (int l = 0; l < 16; l++)
                        t[l] = mk[l] ? LOAD_REAL(src, l) : id;
                    const float16 v = LOAD16(0, t);
                    red16(&acc, &v, op);
                }
        }
        if (op != 0) {
            /* Include-padding windows all hold wh * ww: at stride 1 with
             * P == H a window never passes the end of the padding. */
            if (mode == 1) {
                acc /= (float)(wh * ww);
            } else {
                const int16 rows = MIN16I(p - pt + wh, H) - MAX16I(p - pt, 0),
                            cols = MIN16I(q - pl + ww, W) - MAX16I(q - pl, 0);
                acc /= TO_FLOAT16(rows * cols);
            }
        }
        if (o0 + 16 <= oe)
            STORER16(acc, 0, yb + o0);
        else
            store_part(&acc, yb + o0, oe - o0);
        q += 16;
        flat_wrap(&p, &q, W);
    }
}

/* NCHW with contiguous planes in and out, stride 1, P == H and Q == W.
 * 1-D range over (n, c, run of out_dims.s3 chunks of 16 outputs). */
__kernel void pool2d_nchw_flat(__global const REAL_T *x, long x_off,
                               __global REAL_T *y, long y_off,
                               long4 xs, long4 ys,
                               int4 in_dims,   /* N, C, H, W                     */
                               int4 out_dims,  /* P, Q, mode, chunks per item    */
                               int4 win,       /* window h, w, stride h, w       */
                               int4 pad)       /* top, left, bottom, right       */
{
    const int N = in_dims.s0, C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int mode = out_dims.s2, run = out_dims.s3;
    const int HW = H * W, runs = ((HW + 15) / 16 + run - 1) / run;
    long t = (long)get_global_id(0);
    if (t >= (long)N * C * runs)
        return;
    const int r = (int)(t % runs);
    t /= runs;
    const int c = (int)(t % C), n = (int)(t / C);
    __global const REAL_T *xb = x + x_off + (long)n * xs.s0 + (long)c * xs.s1;
    __global REAL_T *yb = y + y_off + (long)n * ys.s0 + (long)c * ys.s1;
    __global const REAL_T *lo = x + x_off;
    __global const REAL_T *hi = lo + (long)(N - 1) * xs.s0 + (long)(C - 1) * xs.s1 + HW;
    const int oa = r * run * 16, oe = min(oa + run * 16, HW);
    if (win.s0 == 3 && win.s1 == 3 && mode == 0)
        flat_run(xb, yb, H, W, oa, oe, 3, 3, pad.s0, pad.s1, 0, 0, lo, hi);
    else if (mode == 0)
        flat_run(xb, yb, H, W, oa, oe, win.s0, win.s1, pad.s0, pad.s1, 0, 0, lo, hi);
    else
        flat_run(xb, yb, H, W, oa, oe, win.s0, win.s1, pad.s0, pad.s1, 1, mode, lo, hi);
}

/* ---- global pooling: NCHW, the window the whole image -------------------
 * One work-item reduces one contiguous plane, 16 floats a load (the fast
 * kernel ran one scalar item per plane: 0.2 ms for SqueezeNet's
 * 1000x13x13). */
__kernel void pool2d_nchw_global(__global const REAL_T *x, long x_off,
                                 __global REAL_T *y, long y_off,
                                 long4 xs, long4 ys,
                                 int4 in_dims,   /* N, C, H, W                     */
                                 int4 out_dims,  /* P, Q, mode, unused            */
                                 int4 win,       /* unused: the whole image       */
                                 int4 pad)       /* unused: none                  */
{
    (void)win;
    (void)pad;
    const int N = in_dims.s0, C = in_dims.s1, HW = in_dims.s2 * in_dims.s3, op = out_dims.s2 == 0 ? 0 : 1;
    const long t = (long)get_global_id(0);
    if (t >= (long)N * C)
        return;
    const int c = (int)(t % C), n = (int)(t / C);
    __global const REAL_T *xb = x + x_off + (long)n * xs.s0 + (long)c * xs.s1;
    float16 acc = (float16)(op == 0 ? -INFINITY : 0.0f);
    int i = 0;
    if (op == 0)
        for (; i + 16 <= HW; i += 16) {
            const float16 v = LOADR16(0, xb + i);
            red16(&acc, &v, 0);
        }
    else
        for (; i + 16 <= HW; i += 16) {
            const float16 v = LOADR16(0, xb + i);
            red16(&acc, &v, 1);
        }
    float l[16];
    STORE16(acc, 0, l);
    float s = op == 0 ? -INFINITY : 0.0f;
    int nan_seen = 0;
    for (int k = 0; k < 16; k++) {
        s = op == 0 ? fmax(s, l[k]) : s + l[k];
        nan_seen |= isnan(l[k]);
    }
    for (; i < HW; i++) {
        const float v = LOAD_REAL(xb, i);
        s = op == 0 ? fmax(s, v) : s + v;
        nan_seen |= isnan(v);
    }
    STORE_REAL(op == 0 ? (nan_seen ? NAN : s) : s / (float)HW, y, y_off + (long)n * ys.s0 + (long)c * ys.s1);
}

