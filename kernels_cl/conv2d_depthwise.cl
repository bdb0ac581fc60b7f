/* Depthwise convolution: groups == C, K = C * m, output channel k reads
 * input channel k / m through its own R x S filter. There is no reduction
 * over channels, so the work is memory-bound (2*R*S flops per output
 * element) and each kernel is written to read its input contiguously:
 *
 *   dw_nhwc8: channels are contiguous in NHWC. A work-item computes 8
 *             consecutive output channels (one float8) for DW_TQ
 *             consecutive output columns of one row; a filter vector is
 *             loaded once per (r, s) and used for all DW_TQ columns.
 *   dw_nchw8: rows are contiguous in NCHW. A work-item computes 8
 *             consecutive output columns of DW_TP rows of one channel;
 *             the 8 inputs of a tap are one vload8 (stride 1) or the even
 *             half of one vload16 (stride 2), and the overlapping loads
 *             of neighbouring taps and rows hit the cache. At the left
 *             and right borders the same load reaches into the
 *             neighbouring rows and the padding lanes are masked, so
 *             small images (14x14, 7x7) stay on vector loads too.
 *
 * Layouts enter only through element strides (xs, ws, ys: the strides of
 * the logical axes n,c,h,w / k,c,r,s / n,k,p,q), as in conv2d_direct, so
 * each kernel is correct for every layout; the `fast` flags only say when
 * a vector load or store along the contiguous axis is valid. Lanes past
 * the end of an axis compute clamped values that are never stored. */
#ifndef DW_TQ
#define DW_TQ 8
#endif
#ifndef DW_TP
#define DW_TP 2
#endif

/* A float16 returned by vload16 crosses a call whose vector ABI differs
 * on x86 without AVX-512, and PoCL's clang warns so ("N warnings
 * generated." on the user's terminal). There it is loaded as float8
 * halves, as that target holds a float16 anyway. */
#if defined(__x86_64__) && !defined(__AVX512F__)
#define LOAD16(i, p) ((float16)(vload8(0, (p) + 16 * (long)(i)), vload8(0, (p) + 16 * (long)(i) + 8)))
#else
#define LOAD16 vload16
#endif

/* Eight values of private storage as one vector. */
static inline float8 dw_vec8(const float v[8])
{
    return (float8)(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
}

/* dimension 0: blocks of 8 output channels; 1: blocks of DW_TQ output
 * columns; 2: n * P + p. fast: s0 x reads 8 channels with vload8 (m == 1,
 * channel stride 1), s1 likewise for the filter (k stride 1: HWIO), s2 for
 * y (channel stride 1: NHWC), s3 unused. */
__kernel void dw_nhwc8(__global const float *x, long x_off,
                       __global const float *w, long w_off,
                       __global const float *bias, long b_off,
                       __global float *y, long y_off,
                       long4 xs, long4 ws, long4 ys,
                       int4 in_dims,  /* N, C, H, W               */
                       int4 out_dims, /* K, P, Q, multiplier m    */
                       int4 filt,     /* R, S, has bias, relu word */
                       int4 geom,     /* stride h, w, dilation h, w */
                       int4 pad_fast) /* pad top, pad left, fast flags (bits 0..2) */
{
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, m = out_dims.s3;
    const int k0 = (int)get_global_id(0) * 8, q0 = (int)get_global_id(1) * DW_TQ;
    const long np = (long)get_global_id(2);
    if (k0 >= K || q0 >= Q || np >= (long)in_dims.s0 * P)
        return;
    const long n = np / P;
    const int p = (int)(np % P);
    const int H = in_dims.s2, W = in_dims.s3, R = filt.s0, S = filt.s1;
    const int full = k0 + 8 <= K;
    const int xv = full && (pad_fast.s2 & 1), wv = full && (pad_fast.s2 & 2), yv = full && (pad_fast.s2 & 4);
    /* Element offsets of each lane's input channel and filter, clamped to
     * the last channel so that tail lanes read inside the tensors. */
    long xc[8], wk[8];
    for (int i = 0; i < 8; i++) {
        const int k = min(k0 + i, K - 1);
        xc[i] = (long)(k / m) * xs.s1;
        wk[i] = (long)k * ws.s0;
    }
    float8 acc[DW_TQ];
    for (int t = 0; t < DW_TQ; t++)
        acc[t] = (float8)(0.0f);
    const long ih0 = (long)p * geom.s0 - pad_fast.s0;
    const long iw0 = (long)q0 * geom.s1 - pad_fast.s1;
    for (int r = 0; r < R; r++) {
        const long ih = ih0 + (long)r * geom.s2;
        if (ih < 0 || ih >= H)
            continue;
        const long row = x_off + n * xs.s0 + ih * xs.s2;
        for (int s = 0; s < S; s++) {
            const long wrs = w_off + (long)r * ws.s2 + (long)s * ws.s3;
            float8 f;
            if (wv) {
                f = vload8(0, w + wrs + k0);
            } else {
                float v[8];
                for (int i = 0; i < 8; i++)
                    v[i] = w[wrs + wk[i]];
                f = dw_vec8(v);
            }
            for (int t = 0; t < DW_TQ; t++) {
                const long iw = iw0 + (long)t * geom.s1 + (long)s * geom.s3;
                if (iw < 0 || iw >= W)
                    continue;
                const long pix = row + iw * xs.s3;
                float8 a;
                if (xv) {
                    a = vload8(0, x + pix + k0);
                } else {
                    float v[8];
                    for (int i = 0; i < 8; i++)
                        v[i] = x[pix + xc[i]];
                    a = dw_vec8(v);
                }
                acc[t] = fma(a, f, acc[t]);
            }
        }
    }
    float8 b = (float8)(0.0f);
    if (filt.s2) {
        float v[8];
        for (int i = 0; i < 8; i++)
            v[i] = bias[b_off + min(k0 + i, K - 1)];
        b = dw_vec8(v);
    }
    const long ybase = y_off + n * ys.s0 + (long)p * ys.s2;
    for (int t = 0; t < DW_TQ && q0 + t < Q; t++) {
        float8 o = acc[t] + b;
        if (filt.s3) /* the relu, capped at as_float(filt.s3) (+inf: none) */
            o = fmin(fmax(o, (float8)(0.0f)), (float8)(as_float(filt.s3)));
        const long yq = ybase + (long)(q0 + t) * ys.s3;
        if (yv) {
            vstore8(o, 0, y + yq + k0);
        } else {
            float v[8];
            vstore8(o, 0, v);
            for (int i = 0; i < 8 && k0 + i < K; i++)
                y[yq + (long)(k0 + i) * ys.s1] = v[i];
        }
    }
}

/* dimension 0: blocks of 8 output columns; 1: blocks of DW_TP output
 * rows; 2: n * K + k.
 * fast: s0 x rows are contiguous (w stride 1), s1 unused, s2 y rows are
 * contiguous (q stride 1). */
__kernel void dw_nchw8(__global const float *x, long x_off,
                       __global const float *w, long w_off,
                       __global const float *bias, long b_off,
                       __global float *y, long y_off,
                       long4 xs, long4 ws, long4 ys,
                       int4 in_dims,  /* N, C, H, W               */
                       int4 out_dims, /* K, P, Q, multiplier m    */
                       int4 filt,     /* R, S, has bias, relu word */
                       int4 geom,     /* stride h, w, dilation h, w */
                       int4 pad_fast, /* pad top, pad left, fast flags */
                       long x_end)    /* x_off + elements of x */
{
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, m = out_dims.s3;
    const int q0 = (int)get_global_id(0) * 8, p0 = (int)get_global_id(1) * DW_TP;
    const long nk = (long)get_global_id(2);
    if (q0 >= Q || p0 >= P || nk >= (long)in_dims.s0 * K)
        return;
    const long n = nk / K;
    const int k = (int)(nk % K);
    const int H = in_dims.s2, W = in_dims.s3, R = filt.s0, S = filt.s1;
    const int sw = geom.s1, dw = geom.s3;
    const int xrow = pad_fast.s2 & 1;
    const long xbase = x_off + n * xs.s0 + (long)(k / m) * xs.s1;
    const long wbase = w_off + (long)k * ws.s0;
    const long ybase = y_off + n * ys.s0 + (long)k * ys.s1;
    for (int p = p0; p < p0 + DW_TP && p < P; p++) {
        const long ih0 = (long)p * geom.s0 - pad_fast.s0;
        const long iw0 = (long)q0 * sw - pad_fast.s1;
        float8 acc = (float8)(0.0f);
        for (int r = 0; r < R; r++) {
            const long ih = ih0 + (long)r * geom.s2;
            if (ih < 0 || ih >= H)
                continue;
            const long row = xbase + ih * xs.s2;
            for (int s = 0; s < S; s++) {
                const float f = w[wbase + (long)r * ws.s2 + (long)s * ws.s3];
                const long b = iw0 + (long)s * dw; /* input column of lane 0 */
                float8 a;
                if (xrow && sw == 1 && b >= 0 && b + 8 <= W) {
                    a = vload8(0, x + row + b);
                } else if (xrow && sw == 2 && b >= 0 && b + 16 <= W) {
                    a = LOAD16(0, x + row + b).even;
                } else if (xrow && (sw == 1 || sw == 2) && row + b >= x_off && row + b + 8 * sw <= x_end) {
                    /* At a border: the same load, reaching into the
                     * neighbouring rows (still inside x); the lanes it gives
                     * from outside the image are padding and are skipped. */
                    a = sw == 1 ? vload8(0, x + row + b) : LOAD16(0, x + row + b).even;
                    const int8 col = (int8)(0, 1, 2, 3, 4, 5, 6, 7) * sw + (int)b;
                    acc = select(acc, fma(a, (float8)(f), acc), col >= 0 && col < W);
                    continue;
                } else {
                    /* Image borders, other strides, strided rows. Taps in the
                     * padding are skipped, not multiplied by zero, so that an
                     * infinite weight there stays out of the sum as in the
                     * reference. */
                    float v[8];
                    int in[8];
                    for (int i = 0; i < 8; i++) {
                        const long iw = b + (long)i * sw;
                        in[i] = iw >= 0 && iw < W ? -1 : 0;
                        v[i] = in[i] ? x[row + iw * xs.s3] : 0.0f;
                    }
                    const int8 ok = (int8)(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]);
                    acc = select(acc, fma(dw_vec8(v), (float8)(f), acc), ok);
                    continue;
                }
                acc = fma(a, (float8)(f), acc);
            }
        }
        if (filt.s2)
            acc += (float8)(bias[b_off + k]);
        if (filt.s3) /* the relu, capped at as_float(filt.s3) (+inf: none) */
            acc = fmin(fmax(acc, (float8)(0.0f)), (float8)(as_float(filt.s3)));
        const long yrow = ybase + (long)p * ys.s2;
        if ((pad_fast.s2 & 4) && q0 + 8 <= Q) {
            vstore8(acc, 0, y + yrow + q0);
        } else {
            float v[8];
            vstore8(acc, 0, v);
            for (int i = 0; i < 8 && q0 + i < Q; i++)
                y[yrow + (long)(q0 + i) * ys.s3] = v[i];
        }
    }
}
