/* Direct 2-D convolution, one work-item per output element.
 *
 * Layouts enter only through element strides (xs, ws, ys: the strides of
 * the logical axes n,c,h,w / k,c,r,s / n,k,p,q), so this one kernel serves
 * every activation and filter layout. The flat index is decomposed with
 * the output's fastest axis first so that neighbouring work-items write
 * neighbouring memory: q for NCHW output, k for NHWC (chan_fastest = 1).
 * Buffers come with element offsets because a tensor is (region, offset).
 * Storage is the prelude's REAL_T (float32, or float16 and bfloat16 in a
 * program built with PDNN_REAL), the sums float. */
__kernel void conv2d_direct(__global const REAL_T *x, long x_off,
                            __global const REAL_T *w, long w_off,
                            __global const REAL_T *bias, long b_off,
                            __global REAL_T *y, long y_off,
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
    NCHW_OF_INDEX(gid, K, P, Q, out_dims.s3, n, k, p, q);
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
                acc = fma(LOAD_REAL(x, xo + c * xs.s1), LOAD_REAL(w, wo + c * ws.s1), acc);
        }
    }
    if (misc.s2)
        acc += LOAD_REAL(bias, b_off + k);
    if (misc.s3)
        acc = fmax(acc, 0.0f);
    STORE_REAL(acc, y, y_off + n * ys.s0 + (long)k * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3);
}

/* ---- im2col + GEMM ------------------------------------------------------
 * The baseline most OpenCL frameworks use: unfold the input into columns,
 * multiply by the filter with a GEMM library, then add bias, apply ReLU
 * and write the output in its layout. The workspace holds the repacked
 * filter (K x C/g*R*S, OIHW order), the columns of one image (C*R*S x P*Q)
 * and the GEMM result of one image (K x P*Q). */

/* Where packed element i (k, ci, r, s in OIHW order) of a filter with
 * dims filt (R, S, C/groups, K) lies in a filter of strides ws. */
static long filter_at(long i, int4 filt, long4 ws)
{
    const int R = filt.s0, S = filt.s1, cpg = filt.s2;
    const long per_k = (long)cpg * R * S;
    const long k = i / per_k;
    long t = i % per_k;
    const int ci = (int)(t / (R * S));
    t %= R * S;
    const int r = (int)(t / S), s = (int)(t % S);
    return k * ws.s0 + ci * ws.s1 + r * ws.s2 + s * ws.s3;
}

/* wpack[k][ci][r][s] = w in any filter layout. */
__kernel void conv2d_pack_filter(__global const float *w, long w_off, long4 ws,
                                 __global float *wpack, long wp_off,
                                 int4 filt, /* R, S, C/groups, K */
                                 long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    wpack[wp_off + i] = w[w_off + filter_at(i, filt, ws)];
}

/* col[c*R*S + r*S + s][p*Q + q] = x[n][c][p*sh - pt + r*dh][q*sw - pl + s*dw]
 * (zero outside the image) for one image n. */
__kernel void conv2d_im2col(__global const float *x, long x_off, long4 xs,
                            __global float *col, long col_off,
                            int4 in_dims,  /* n (this image), C, H, W */
                            int4 out_dims, /* P, Q, R, S */
                            int4 geom,     /* stride h, w, dilation h, w */
                            int2 pad,      /* top, left */
                            long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const int P = out_dims.s0, Q = out_dims.s1, R = out_dims.s2, S = out_dims.s3;
    const long PQ = (long)P * Q;
    const long row = i / PQ, pq = i % PQ;
    const int c = (int)(row / (R * S));
    const int rs = (int)(row % (R * S));
    const int r = rs / S, s = rs % S;
    const int p = (int)(pq / Q), q = (int)(pq % Q);
    const long ih = (long)p * geom.s0 - pad.s0 + (long)r * geom.s2;
    const long iw = (long)q * geom.s1 - pad.s1 + (long)s * geom.s3;
    float v = 0.0f;
    if (ih >= 0 && ih < in_dims.s2 && iw >= 0 && iw < in_dims.s3)
        v = x[x_off + (long)in_dims.s0 * xs.s0 + (long)c * xs.s1 + ih * xs.s2 + iw * xs.s3];
    col[col_off + i] = v;
}

/* y[n][k][p][q] = relu?(tmp[k][p*Q + q] + bias[k]) in y's layout. */
__kernel void conv2d_gemm_epilogue(__global const float *tmp, long tmp_off,
                                   __global const float *bias, long b_off,
                                   __global float *y, long y_off, long4 ys,
                                   int4 dims, /* n (this image), K, P, Q */
                                   int2 flags, /* has bias, relu */
                                   long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const int P = dims.s2, Q = dims.s3;
    const long PQ = (long)P * Q;
    const int k = (int)(i / PQ);
    const long pq = i % PQ;
    const int p = (int)(pq / Q), q = (int)(pq % Q);
    float v = tmp[tmp_off + i];
    if (flags.s0)
        v += bias[b_off + k];
    if (flags.s1)
        v = fmax(v, 0.0f);
    y[y_off + (long)dims.s0 * ys.s0 + (long)k * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3] = v;
}

/* ---- im2col + GEMM backward (cl_conv_bwd_im2col.c) -----------------------
 * Backward filter: dwpack (K x C/g*R*S) accumulates dy_n (K x P*Q) times
 * col_n transposed over the images; backward data: col_n = wpack^T dy_n,
 * then col2im sums each dx element's columns. */

/* w in any filter layout = wpack[k][ci][r][s] (conv2d_pack_filter's inverse). */
__kernel void conv2d_unpack_filter(__global const float *wpack, long wp_off,
                                   __global float *w, long w_off, long4 ws,
                                   int4 filt, /* R, S, C/groups, K */
                                   long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    w[w_off + filter_at(i, filt, ws)] = wpack[wp_off + i];
}

/* dx[n][c][ih][iw] = sum over the taps (r, s) whose output pixel (p, q)
 * reads it of col[c*R*S + r*S + s][p*Q + q], for one image n; a gather,
 * so every dx element is written once and needs no zeroing. */
__kernel void conv2d_col2im(__global const float *col, long col_off,
                            __global float *dx, long dx_off, long4 dxs,
                            int4 in_dims,  /* n (this image), C, H, W */
                            int4 out_dims, /* P, Q, R, S */
                            int4 geom,     /* stride h, w, dilation h, w */
                            int2 pad,      /* top, left */
                            long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const int H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s0, Q = out_dims.s1, R = out_dims.s2, S = out_dims.s3;
    const long HW = (long)H * W;
    const int c = (int)(i / HW);
    const int ih = (int)(i % HW / W), iw = (int)(i % W);
    const long PQ = (long)P * Q;
    float acc = 0.0f;
    for (int r = 0; r < R; r++) {
        const int th = ih + pad.s0 - r * geom.s2;
        if (th < 0 || th % geom.s0 != 0 || th / geom.s0 >= P)
            continue;
        const int p = th / geom.s0;
        for (int s = 0; s < S; s++) {
            const int tw = iw + pad.s1 - s * geom.s3;
            if (tw < 0 || tw % geom.s1 != 0 || tw / geom.s1 >= Q)
                continue;
            acc += col[col_off + ((long)c * R * S + r * S + s) * PQ + (long)p * Q + tw / geom.s1];
        }
    }
    dx[dx_off + (long)in_dims.s0 * dxs.s0 + (long)c * dxs.s1 + (long)ih * dxs.s2 + (long)iw * dxs.s3] = acc;
}
