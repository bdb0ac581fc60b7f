/* Depthwise convolution for GPUs ("depthwise_wg"): groups == C, K = C * m,
 * output channel k reads input channel k / m through its own R x S
 * filter. conv2d_depthwise.cl's kernels are written for CPUs (each
 * work-item sweeps a register tile through the cache); here a work-group
 * stages the input tile it needs (its outputs' rows and columns plus the
 * filter's halo) through local memory once, with neighbouring work-items
 * reading neighbouring addresses, meets at one barrier, and each
 * work-item then computes a few outputs from local memory:
 *
 *   dwg_nchw:  one work-group, one 2-D output tile of one input channel's
 *              plane (all m output channels of it, one after the other):
 *              WX work-items across the tile's columns, WY down its rows,
 *              RP rows each. The tile is loaded row by row along the
 *              plane's contiguous axis; the channel's filters go to local
 *              memory too (every work-item reads every tap).
 *   dwg_nhwc:  one work-group, CB consecutive output channels of a tile of
 *              pixels: the work-items' fast axis is the channel, so each
 *              pixel's channels are loaded (and read from local memory)
 *              by consecutive work-items; PY work-items down the tile,
 *              each RP rows x TQ columns of its channel, whose filter taps
 *              it loads once.
 *
 * Layouts enter through element strides only (xs, ws, ys: the strides of
 * n,c,h,w / k,c,r,s / n,k,p,q; z has y's), as in the other convolution
 * kernels, so both kernels are right for every layout and merely
 * coalesced for their own. Taps outside the image are skipped, not
 * multiplied by a zero, so that an infinite weight in the padding stays
 * out of the sum as in the reference. The epilogue adds the bias and the
 * residual z and applies the relu capped at as_float(relu) (+inf: none).
 *
 * The tensors are REAL_T (float32 unless built with -DPDNN_REAL), the
 * local tiles and the sums float. Every work-item reaches the barrier:
 * those past the output's edge load, then store nothing. The work-group
 * sizes are build options (reqd_work_group_size), a multiple of 32 in
 * every configuration the host offers; no subgroup size is assumed. */

#ifndef WX
#define WX 32
#endif
#ifndef WY
#define WY 2
#endif
#ifndef RP
#define RP 4
#endif
#ifndef CB
#define CB 32
#endif
#ifndef PY
#define PY 2
#endif
#ifndef TQ
#define TQ 4
#endif

/* Both kernels' arguments (cl_depthwise_wg.c sets them): the tensors and
 * their offsets, the strides, in_dims N, C, H, W; out_dims K, P, Q, the
 * multiplier m; filt R, S, has bias, relu word; geom stride h, w,
 * dilation h, w; pad top, left, has residual; tdims the input tile's
 * rows IH, columns IW and (dwg_nhwc) channel room CI and column tiles;
 * and the local tile t. */
#define DWG_PARAMS                                                                                     \
    __global const REAL_T *x, long x_off, __global const REAL_T *w, long w_off,                       \
        __global const REAL_T *bias, long b_off, __global const REAL_T *z, long z_off, __global REAL_T *y, \
        long y_off, long4 xs, long4 ws, long4 ys, int4 in_dims, int4 out_dims, int4 filt, int4 geom, int4 pad, \
        int4 tdims, __local float *t

/* Bias (BK: its value for the channel, 0 without one), residual and relu
 * of the output element at y offset YO, stored. */
#define DWG_STORE(V, BK, YO)                                                                       \
    do {                                                                                           \
        float v_ = (V) + (BK);                                                                     \
        if (pad.s2)                                                                                \
            v_ += LOAD_REAL(z, z_off + (YO));                                                      \
        if (filt.s3)                                                                               \
            v_ = fmin(fmax(v_, 0.0f), as_float(filt.s3));                                          \
        STORE_REAL(v_, y, y_off + (YO));                                                           \
    } while (0)

/* dimension 0: column tiles x WX; 1: row tiles x WY; 2: n * C + c. The
 * tile's input rows ih0 .. ih0 + IH - 1 and columns iw0 .. iw0 + IW - 1
 * (IH, IW: tdims.s0, s1) go to t[IH][IW], the m filters and then the m
 * biases to f after it. */
__kernel __attribute__((reqd_work_group_size(WX, WY, 1))) void
dwg_nchw(DWG_PARAMS)
{
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3;
    const int P = out_dims.s1, Q = out_dims.s2, m = out_dims.s3;
    const int R = filt.s0, S = filt.s1, RS = R * S;
    const int sh = geom.s0, sw = geom.s1, dh = geom.s2, dw = geom.s3;
    const int IH = tdims.s0, IW = tdims.s1;
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1), lid = ly * WX + lx;
    const int q0 = (int)get_group_id(0) * WX, p0 = (int)get_group_id(1) * (WY * RP);
    const long nc = (long)get_global_id(2);
    const long n = nc / C;
    const int c = (int)(nc % C);
    const int ih0 = p0 * sh - pad.s0, iw0 = q0 * sw - pad.s1;
    __local float *f = t + IH * IW;
    /* The tile, row by row: consecutive work-items, consecutive columns. */
    const long xb = x_off + n * xs.s0 + (long)c * xs.s1;
    for (int i = lid; i < IH * IW; i += WX * WY) {
        const int ih = ih0 + i / IW, iw = iw0 + i % IW;
        t[i] = ih >= 0 && ih < H && iw >= 0 && iw < W ? LOAD_REAL(x, xb + ih * xs.s2 + iw * xs.s3) : 0.0f;
    }
    for (int i = lid; i < m * RS; i += WX * WY) {
        const int j = i / RS, rs = i % RS;
        f[i] = LOAD_REAL(w, w_off + (long)(c * m + j) * ws.s0 + (long)(rs / S) * ws.s2 + (long)(rs % S) * ws.s3);
    }
    /* and the m biases after them: one load per work-group, not one per
     * work-item (a work-item of an 8 x 8 tile stores a single output) */
    for (int j = lid; j < m; j += WX * WY)
        f[m * RS + j] = filt.s2 ? LOAD_REAL(bias, b_off + c * m + j) : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE); /* the tile's fill */
    const int q = q0 + lx, pr = ly * RP;
    for (int j = 0; j < m; j++) {
        float acc[RP];
        for (int i = 0; i < RP; i++)
            acc[i] = 0.0f;
        for (int r = 0; r < R; r++)
            for (int s = 0; s < S; s++) {
                const float fv = f[j * RS + r * S + s];
                const int lc = lx * sw + s * dw;
                if (iw0 + lc < 0 || iw0 + lc >= W)
                    continue;
#pragma unroll
                for (int i = 0; i < RP; i++) {
                    const int lr = (pr + i) * sh + r * dh;
                    if (ih0 + lr >= 0 && ih0 + lr < H)
                        acc[i] = fma(t[lr * IW + lc], fv, acc[i]);
                }
            }
        const int k = c * m + j;
        const float bk = f[m * RS + j];
#pragma unroll
        for (int i = 0; i < RP; i++) {
            const int p = p0 + pr + i;
            if (p < P && q < Q) {
                const long yo = n * ys.s0 + (long)k * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3;
                DWG_STORE(acc[i], bk, yo);
            }
        }
    }
}

/* dimension 0: channel blocks x CB; 1: row tiles x PY; 2: n * (column
 * tiles) + column tile. The block's input channels c_lo .. c_hi (its
 * output channels' k / m), pixel by pixel, go to t[IH][IW][CI] (CI:
 * tdims.s2, room for the most channels a block reads). */
__kernel __attribute__((reqd_work_group_size(CB, PY, 1))) void
dwg_nhwc(DWG_PARAMS)
{
    const int H = in_dims.s2, W = in_dims.s3;
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, m = out_dims.s3;
    const int R = filt.s0, S = filt.s1;
    const int sh = geom.s0, sw = geom.s1, dh = geom.s2, dw = geom.s3;
    const int IH = tdims.s0, IW = tdims.s1, CI = tdims.s2;
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1), lid = ly * CB + lx;
    const int k0 = (int)get_group_id(0) * CB, p0 = (int)get_group_id(1) * (PY * RP);
    const long nq = (long)get_group_id(2);
    const long n = nq / tdims.s3;
    const int q0 = (int)(nq % tdims.s3) * TQ;
    const int ih0 = p0 * sh - pad.s0, iw0 = q0 * sw - pad.s1;
    const int c_lo = k0 / m, nci = (min(k0 + CB, K) - 1) / m - c_lo + 1;
    /* The tile, pixel by pixel: consecutive work-items, consecutive
     * channels of a pixel. */
    const long xb = x_off + n * xs.s0 + (long)c_lo * xs.s1;
    for (int i = lid; i < IH * IW * nci; i += CB * PY) {
        const int pix = i / nci, cc = i % nci;
        const int ih = ih0 + pix / IW, iw = iw0 + pix % IW;
        t[pix * CI + cc] =
            ih >= 0 && ih < H && iw >= 0 && iw < W ? LOAD_REAL(x, xb + cc * xs.s1 + ih * xs.s2 + iw * xs.s3) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* the tile's fill */
    const int k = k0 + lx, kk = min(k, K - 1), ch = kk / m - c_lo, pr = ly * RP;
    float acc[RP * TQ];
#pragma unroll
    for (int i = 0; i < RP * TQ; i++)
        acc[i] = 0.0f;
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            /* Each tap once per work-item, for its RP x TQ outputs. */
            const float fv = LOAD_REAL(w, w_off + (long)kk * ws.s0 + (long)r * ws.s2 + (long)s * ws.s3);
#pragma unroll
            for (int i = 0; i < RP; i++) {
                const int lr = (pr + i) * sh + r * dh;
                if (ih0 + lr < 0 || ih0 + lr >= H)
                    continue;
#pragma unroll
                for (int u = 0; u < TQ; u++) {
                    const int lc = u * sw + s * dw;
                    if (iw0 + lc >= 0 && iw0 + lc < W)
                        acc[i * TQ + u] = fma(t[(lr * IW + lc) * CI + ch], fv, acc[i * TQ + u]);
                }
            }
        }
    if (k >= K)
        return;
    const float bk = filt.s2 ? LOAD_REAL(bias, b_off + k) : 0.0f; /* once per work-item */
#pragma unroll
    for (int i = 0; i < RP; i++)
#pragma unroll
        for (int u = 0; u < TQ; u++) {
            const int p = p0 + pr + i, q = q0 + u;
            if (p < P && q < Q) {
                const long yo = n * ys.s0 + (long)k * ys.s1 + (long)p * ys.s2 + (long)q * ys.s3;
                DWG_STORE(acc[i * TQ + u], bk, yo);
            }
        }
}
