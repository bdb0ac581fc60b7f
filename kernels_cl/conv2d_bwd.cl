/* Backward convolution, direct forms: one work-item per element of the
 * gradient it writes, gathering what flows into it, so that every
 * element is written once with no atomics. Sizes as the forward's
 * (cuDNN's letters): x N,C,H,W; w K,C/groups,R,S; y N,K,P,Q. Strides are
 * element strides of the logical axes, so any layout works. Every kernel
 * here stores REAL_T (float32, or float16/bfloat16 built with
 * -DPDNN_REAL: issue 43): loads widened, float32 sums, each output
 * rounded once at its store (split's partials stay float32 and its
 * reduce rounds). */

/* dx[n,c,h,w] = sum over k in c's group, r, s where h + pad - r*dil is a
 * multiple of the stride and lands on a row p < P (likewise w, q) of
 * dy[n,k,p,q] * w[k,c',r,s]. */
__kernel void conv2d_bwd_data_direct(__global const REAL_T *dy, long dy_off,
                                     __global const REAL_T *w, long w_off,
                                     __global REAL_T *dx, long dx_off,
                                     long4 ys, long4 ws, long4 xs,
                                     int4 in_dims,  /* N, C, H, W               */
                                     int4 out_dims, /* K, P, Q, chan_fastest(dx) */
                                     int4 filt,     /* R, S, C/groups, K/groups */
                                     int4 geom,     /* stride h, w, dilation h, w */
                                     int2 pad,      /* top, left                */
                                     long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s1, Q = out_dims.s2;
    NCHW_OF_INDEX(gid, C, H, W, out_dims.s3, n, c, ih, iw);
    const int R = filt.s0, S = filt.s1, cpg = filt.s2, kpg = filt.s3;
    const int g = c / cpg, ci = c % cpg;
    const long dybase = dy_off + n * ys.s0 + (long)g * kpg * ys.s1;
    const long wbase = w_off + (long)g * kpg * ws.s0 + (long)ci * ws.s1;
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
            const int q = tw / geom.s1;
            const long yo = dybase + (long)p * ys.s2 + (long)q * ys.s3;
            const long wo = wbase + (long)r * ws.s2 + (long)s * ws.s3;
            for (int k = 0; k < kpg; k++)
                acc = fma(LOAD_REAL_S(dy, yo + k * ys.s1), LOAD_REAL_S(w, wo + k * ws.s0), acc);
        }
    }
    STORE_REAL(acc, dx, dx_off + n * xs.s0 + (long)c * xs.s1 + (long)ih * xs.s2 + (long)iw * xs.s3);
}

/* Filter element e (in K, C/groups, R, S order) -> its indices. */
static void filter_element(long e, int R, int S, int cpg, int *k, int *ci, int *r, int *s)
{
    *s = (int)(e % S); e /= S;
    *r = (int)(e % R); e /= R;
    *ci = (int)(e % cpg);
    *k = (int)(e / cpg);
}

/* dw[k,c',r,s] = sum over n, p, q of dy[n,k,p,q] * x[n, c, p*stride -
 * pad + r*dil, q*stride - pad + s*dil], c = c' in k's group. One
 * work-item per filter element; the reduction runs over N*P*Q, so this
 * form suits small batches and images (the other filter algorithm splits
 * it). */
__kernel void conv2d_bwd_filter_direct(__global const REAL_T *x, long x_off,
                                       __global const REAL_T *dy, long dy_off,
                                       __global REAL_T *dw, long dw_off,
                                       long4 xs, long4 ys, long4 ws,
                                       int4 in_dims,  /* N, C, H, W               */
                                       int4 out_dims, /* K, P, Q, unused          */
                                       int4 filt,     /* R, S, C/groups, K/groups */
                                       int4 geom,     /* stride h, w, dilation h, w */
                                       int2 pad,      /* top, left                */
                                       long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const int N = in_dims.s0, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s1, Q = out_dims.s2;
    const int R = filt.s0, S = filt.s1, cpg = filt.s2, kpg = filt.s3;
    int k, ci, r, s;
    filter_element(gid, R, S, cpg, &k, &ci, &r, &s);
    const int g = k / kpg;
    const long xc = x_off + (long)(g * cpg + ci) * xs.s1;
    const long yk = dy_off + (long)k * ys.s1;
    /* Output rows p whose tap r lands in the image: 0 <= p*stride - pad +
     * r*dil < H. */
    const int oh = r * geom.s2 - pad.s0, ow = s * geom.s3 - pad.s1;
    const int p0 = oh >= 0 ? 0 : (-oh + geom.s0 - 1) / geom.s0;
    const int q0 = ow >= 0 ? 0 : (-ow + geom.s1 - 1) / geom.s1;
    int p1 = H - oh <= 0 ? 0 : (H - oh + geom.s0 - 1) / geom.s0;
    int q1 = W - ow <= 0 ? 0 : (W - ow + geom.s1 - 1) / geom.s1;
    p1 = min(p1, P);
    q1 = min(q1, Q);
    float acc = 0.0f;
    for (int n = 0; n < N; n++)
        for (int p = p0; p < p1; p++) {
            const long xrow = xc + n * xs.s0 + (long)(p * geom.s0 + oh) * xs.s2;
            const long yrow = yk + n * ys.s0 + (long)p * ys.s2;
            for (int q = q0; q < q1; q++)
                acc = fma(LOAD_REAL_S(dy, yrow + (long)q * ys.s3),
                          LOAD_REAL_S(x, xrow + (long)(q * geom.s1 + ow) * xs.s3), acc);
        }
    STORE_REAL(acc, dw, dw_off + (long)k * ws.s0 + (long)ci * ws.s1 + (long)r * ws.s2 + (long)s * ws.s3);
}

/* The filter gradient split over the batch and output rows: work-group
 * wg computes partial sums of every filter element of one slice of
 * (n, p) pairs into part[slice][element]; conv2d_bwd_filter_reduce adds
 * the slices. Two passes, no atomics, a fixed summation order. */
__kernel void conv2d_bwd_filter_split(__global const REAL_T *x, long x_off,
                                      __global const REAL_T *dy, long dy_off,
                                      __global float *part, long part_off,
                                      long4 xs, long4 ys,
                                      int4 in_dims,  /* N, C, H, W               */
                                      int4 out_dims, /* K, P, Q, slices          */
                                      int4 filt,     /* R, S, C/groups, K/groups */
                                      int4 geom,     /* stride h, w, dilation h, w */
                                      int2 pad,      /* top, left                */
                                      long elems)    /* K * C/groups * R * S     */
{
    const long gid = (long)get_global_id(0);
    const int slices = out_dims.s3;
    if (gid >= elems * slices)
        return;
    const long e = gid % elems;
    const int slice = (int)(gid / elems);
    const int N = in_dims.s0, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s1, Q = out_dims.s2;
    const int R = filt.s0, S = filt.s1, cpg = filt.s2, kpg = filt.s3;
    int k, ci, r, s;
    filter_element(e, R, S, cpg, &k, &ci, &r, &s);
    const int g = k / kpg;
    const long xc = x_off + (long)(g * cpg + ci) * xs.s1;
    const long yk = dy_off + (long)k * ys.s1;
    const int oh = r * geom.s2 - pad.s0, ow = s * geom.s3 - pad.s1;
    const int q0 = ow >= 0 ? 0 : (-ow + geom.s1 - 1) / geom.s1;
    int q1 = W - ow <= 0 ? 0 : (W - ow + geom.s1 - 1) / geom.s1;
    q1 = min(q1, Q);
    /* Rows (n, p) of this slice: an even share of N * P. */
    const long rows = (long)N * P;
    const long r0 = rows * slice / slices, r1 = rows * (slice + 1) / slices;
    float acc = 0.0f;
    for (long np = r0; np < r1; np++) {
        const int n = (int)(np / P), p = (int)(np % P);
        const int ih = p * geom.s0 + oh;
        if (ih < 0 || ih >= H)
            continue;
        const long xrow = xc + n * xs.s0 + (long)ih * xs.s2;
        const long yrow = yk + n * ys.s0 + (long)p * ys.s2;
        for (int q = q0; q < q1; q++)
            acc = fma(LOAD_REAL_S(dy, yrow + (long)q * ys.s3), LOAD_REAL_S(x, xrow + (long)(q * geom.s1 + ow) * xs.s3),
                      acc);
    }
    part[part_off + (long)slice * elems + e] = acc;
}

/* dw[element] = sum over slices of part[slice][element], written in dw's
 * layout (elements in K, C/groups, R, S order), rounded once where dw is
 * stored in float16 or bfloat16 (REAL_T: gemm's reduced path). */
__kernel void conv2d_bwd_filter_reduce(__global const float *part, long part_off,
                                       __global REAL_T *dw, long dw_off, long4 ws,
                                       int4 filt, /* R, S, C/groups, slices */
                                       long elems)
{
    const long e = (long)get_global_id(0);
    if (e >= elems)
        return;
    float acc = 0.0f;
    for (int i = 0; i < filt.s3; i++)
        acc += part[part_off + (long)i * elems + e];
    int k, ci, r, s;
    filter_element(e, filt.s0, filt.s1, filt.s2, &k, &ci, &r, &s);
    STORE_REAL(acc, dw, dw_off + (long)k * ws.s0 + (long)ci * ws.s1 + (long)r * ws.s2 + (long)s * ws.s3);
}

/* db[k] = sum over n, p, q of dy[n,k,p,q]: one work-item per channel;
 * dy and db may be REAL_T (float16, bfloat16), the sum float32, rounded
 * once. */
__kernel void conv2d_bwd_bias(__global const REAL_T *dy, long dy_off, long4 ys,
                              __global REAL_T *db, long db_off,
                              int4 dims, /* N, K, P, Q */
                              long total)
{
    const long k = (long)get_global_id(0);
    if (k >= total)
        return;
    float acc = 0.0f;
    for (int n = 0; n < dims.s0; n++)
        for (int p = 0; p < dims.s2; p++) {
            const long row = dy_off + n * ys.s0 + k * ys.s1 + (long)p * ys.s2;
            for (int q = 0; q < dims.s3; q++)
                acc += LOAD_REAL(dy, row + (long)q * ys.s3);
        }
    STORE_REAL(acc, db, db_off + k);
}

/* Backward data as an implicit GEMM (the transposed convolution): dx's
 * [C x N*H*W] = w^T [C x K*R*S] times dy gathered in place. A work-item
 * holds a register tile of CT channels (one group) x PT neighbouring
 * pixels of a row: each dy value loaded serves CT channels and each
 * filter value PT pixels. Per (r, s) only the pixels the stride reaches
 * accumulate (the others' tap is between output positions). CT and PT
 * come from the build options (cl_conv_bwd.c's configurations). */
#ifndef CT
#define CT 1
#endif
#ifndef PT
#define PT 1
#endif
__kernel void conv2d_bwd_data_igemm(__global const REAL_T *dy, long dy_off,
                                    __global const REAL_T *w, long w_off,
                                    __global REAL_T *dx, long dx_off,
                                    long4 ys, long4 ws, long4 xs,
                                    int4 in_dims,  /* N, C, H, W               */
                                    int4 out_dims, /* K, P, Q, unused          */
                                    int4 filt,     /* R, S, C/groups, K/groups */
                                    int4 geom,     /* stride h, w, dilation h, w */
                                    int2 pad)      /* top, left                */
{
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s1, Q = out_dims.s2;
    const int R = filt.s0, S = filt.s1, cpg = filt.s2, kpg = filt.s3;
    const int WB = (W + PT - 1) / PT;
    const int c0 = (int)get_global_id(0) * CT;
    const long sp = (long)get_global_id(1);
    if (c0 >= C || sp >= (long)in_dims.s0 * H * WB)
        return;
    const int w0 = (int)(sp % WB) * PT;
    const long t = sp / WB;
    const int ih = (int)(t % H);
    const long n = t / H;
    const int g = c0 / cpg, ci0 = c0 % cpg;
    const long dybase = dy_off + n * ys.s0 + (long)g * kpg * ys.s1;
    const long wbase = w_off + (long)g * kpg * ws.s0 + (long)ci0 * ws.s1;
    float acc[CT][PT];
    for (int i = 0; i < CT; i++)
        for (int j = 0; j < PT; j++)
            acc[i][j] = 0.0f;
    for (int r = 0; r < R; r++) {
        const int th = ih + pad.s0 - r * geom.s2;
        if (th < 0 || th % geom.s0 != 0 || th / geom.s0 >= P)
            continue;
        const long yrow = dybase + (long)(th / geom.s0) * ys.s2;
        for (int s = 0; s < S; s++) {
            long yo[PT];
            int hit[PT], any = 0;
            for (int j = 0; j < PT; j++) {
                const int tw = w0 + j + pad.s1 - s * geom.s3;
                hit[j] = w0 + j < W && tw >= 0 && tw % geom.s1 == 0 && tw / geom.s1 < Q;
                yo[j] = hit[j] ? yrow + (long)(tw / geom.s1) * ys.s3 : yrow;
                any |= hit[j];
            }
            if (!any)
                continue;
            const long wo = wbase + (long)r * ws.s2 + (long)s * ws.s3;
            for (int k = 0; k < kpg; k++) {
                float wv[CT];
                for (int i = 0; i < CT; i++)
                    wv[i] = LOAD_REAL_S(w, wo + k * ws.s0 + i * ws.s1);
                for (int j = 0; j < PT; j++) {
                    if (!hit[j]) /* skipped, not multiplied by 0: w may hold inf */
                        continue;
                    const float dv = LOAD_REAL_S(dy, yo[j] + k * ys.s1);
                    for (int i = 0; i < CT; i++)
                        acc[i][j] = fma(dv, wv[i], acc[i][j]);
                }
            }
        }
    }
    const long xbase = dx_off + n * xs.s0 + (long)ih * xs.s2;
    for (int i = 0; i < CT; i++)
        for (int j = 0; j < PT; j++)
            if (w0 + j < W)
                STORE_REAL(acc[i][j], dx, xbase + (long)(c0 + i) * xs.s1 + (long)(w0 + j) * xs.s3);
}
