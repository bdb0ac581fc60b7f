/* Convolution of any filter size, stride, dilation and padding as a GEMM
 * on the tensors in place ("implicit_gemm").
 *
 * The GEMM is y (K x N*P*Q) = W (K x R*S*C/groups) * X, where column g of
 * X (output pixel g over the whole batch) is the input patch that pixel
 * reads. X is never built (no im2col buffer): a work-item holds a KT x PT
 * register tile (KT = VW * KB output channels in KB vectors, PT pixels,
 * which may span image boundaries, as in conv2d_gemm_1x1.cl) and for each
 * filter tap (r, s) computes its PT pixels' input offsets and in-image
 * masks once, then runs the reduction over the group's input channels c:
 * KB contiguous filter vectors times PT broadcast input values. A pixel
 * outside the image reads a zero from the workspace instead (a pointer
 * and a step per pixel), so no tap pays for masking; taps where no pixel
 * is inside are skipped. No local memory: on CPUs (PoCL) a work-item sweeps SPAN pixels
 * (a host argument) with the same KT filter rows, so that those rows are
 * read from memory once and from cache afterwards; on GPUs SPAN is one
 * tile, for parallelism.
 *
 * The filter is packed once per call into
 * wp[((kb*R*S + r*S + s)*cpg + c)*KT + lane] for channel k = kb*KT + lane
 * (zero for k >= K): the order the kernel streams it. A filter whose k
 * stride is 1 and K a multiple of KT (HWIO) already has KT contiguous
 * channels at every (r, s, c) and is read in place: wst gives the element
 * strides of a channel block, r, s and c.
 *
 * Under -DPDNN_REAL (float16, bfloat16 storage; issue 43) w, bias, the
 * residual and y are REAL_T; x is float (the host widens it into the
 * workspace) and the filter is always packed, in the storage dtype under
 * -DTILE_WR (widened as each step loads it, conv2d_tile.cl), else in
 * float; the reduction is float32's, and the epilogue rounds once at the
 * store. */

/* PT, KB, VW, KT and vec_t's VLOAD, VFMA, ...: conv2d_tile.cl. x is
 * float in every dtype (widened by the host). */
#define TILE_X_T float

/* One step of the reduction, the micro-kernel (conv2d_tile.cl's
 * TILE_STEP). Every path below is a loop of it over its own way of
 * reaching the inputs. */
#define IG_STEP TILE_STEP

/* wp as above from w in any layout (ws: strides of k, c, r, s). A
 * work-item copies PACK_RUN consecutive c of one k at one (r, s):
 * sequential reads in OHWI, and the KT work-items of a work-group (one
 * channel block) write whole rows of wp together. Dimension 0 is k in
 * [0, Kp), dimension 1 runs over (r*S + s) * runs + run. */
__kernel void igemm_pack(__global const REAL_T *w, long w_off, long4 ws,
                         __global TILE_W_T *wp, long wp_off,
                         int4 filt) /* R, S, C/groups, K */
{
    const int k = (int)get_global_id(0);
    const int S = filt.s1, cpg = filt.s2, K = filt.s3;
    const int runs = (cpg + PACK_RUN - 1) / PACK_RUN;
    const int t = (int)get_global_id(1);
    const int rs = t / runs, c0 = (t % runs) * PACK_RUN;
    if (rs >= filt.s0 * S)
        return;
    const int r = rs / S, s = rs % S;
    PACK_COPY(wp + wp_off + ((long)(k / KT) * filt.s0 * S + rs) * cpg * KT + k % KT, KT,
              w + w_off + (long)(k < K ? k : 0) * ws.s0 + (long)r * ws.s2 + (long)s * ws.s3, ws.s1, c0, cpg,
              k < K);
}


__kernel void conv2d_implicit_gemm(TILE_PARAMS, /* x, wp, bias, y, xs, ys, dims (conv2d_tile.cl) */
                                   int4 inp,  /* H, W, C/groups, K/groups */
                                   int4 filt, /* R, S, has bias, relu word (pdnn__cl_relu_word) */
                                   int4 geom, /* stride h, w, dilation h, w */
                                   int4 pad,  /* pad top, pad left, span (pixels per work-item), residual */
                                   long4 wst, /* filter element strides: channel block, r, s, c */
                                   __global const float *zbuf, long z_off, /* a float 0 (the workspace's) */
                                   __global const REAL_T *res, long res_off, /* pad.s3: z, y's layout, added */
                                   int merge) /* whole filter rows: 0 never, 1 one run (NHWC), 2 by channel */
{
    __global const float *zero = zbuf + z_off;
    /* k0, K, P, Q, PQ, npix, span, g0; past the grid, returns (conv2d_tile.cl). */
    TILE_GRID(dims, pad.s2);
    const int H = inp.s0, W = inp.s1, cpg = inp.s2, kpg = inp.s3;
    const int R = filt.s0, S = filt.s1;
    /* xgrp, wblk, wc, xc, bv, ycontig, gend and the pixel cursor cn, coh,
     * cow (image, row, column of pixel gt; conv2d_tile.cl). */
    TILE_SETUP(filt.s2, wst.s3);

    for (long gt = g0; gt < gend; gt += PT) {
        /* Each pixel's image base, top-left input corner and output
         * offset; pixels past the span's end repeat the last one
         * (computed, not stored). */
        long xb[PT], yoff[PT];
        int ih0[PT], iw0[PT];
#pragma unroll
        for (int j = 0; j < PT; j++) {
            xb[j] = xgrp + cn * xs.s0;
            ih0[j] = coh * geom.s0 - pad.s0;
            iw0[j] = cow * geom.s1 - pad.s1;
            yoff[j] = cn * ys.s0 + (long)coh * ys.s2 + (long)cow * ys.s3;
            if (gt + j + 1 < gend) /* the last step reaches the next tile */
                CURSOR_STEP(P, Q, cn, coh, cow);
        }
        TILE_ACC(acc);
        for (int r = 0; r < R; r++) {
            /* merge (the host's: x's column stride is cpg channels, the
             * filter's s stride cpg of its c stride, dilation 1 across):
             * where all PT pixels read the whole filter row inside the
             * image, its S taps of cpg channels are one run of S * cpg
             * in both, reduced in one loop instead of S (what a 7x7
             * convolution of 3 channels spends most of its time around). */
            if (merge) {
                int full = 1;
#pragma unroll
                for (int j = 0; j < PT; j++) {
                    const int ih = ih0[j] + r * geom.s2;
                    full &= ih >= 0 && ih < H && iw0[j] >= 0 && iw0[j] + (S - 1) * geom.s3 < W;
                }
                if (full) {
                    /* Each pixel's first input of the row, set up once. */
                    __global const float *xp[PT];
#pragma unroll
                    for (int j = 0; j < PT; j++)
                        xp[j] = x + xb[j] + (long)(ih0[j] + r * geom.s2) * xs.s2 + (long)iw0[j] * xs.s3;
                    if (merge == 2) {
                        /* Other layouts (NCHW): channel by channel, the
                         * row's S taps from each pixel's pointer. */
                        __global const TILE_W_T *wpr = wblk + (long)r * wst.s1;
                        const long xsw = (long)geom.s3 * xs.s3;
                        for (int c = 0; c < cpg; c++) {
                            for (int s = 0; s < S; s++)
                                IG_STEP(wpr + (long)s * wst.s2, xp[j][(long)s * xsw]);
                            wpr += wc;
#pragma unroll
                            for (int j = 0; j < PT; j++)
                                xp[j] += xc;
                        }
                    } else {
                        __global const TILE_W_T *wpc = wblk + (long)r * wst.s1;
                        const int run = S * cpg;
                        /* One index for every pixel (all step by xc): no
                         * pointer update per pixel and step. */
                        for (int c = 0; c < run; c++, wpc += wc)
                            IG_STEP(wpc, xp[j][(long)c * xc]);
                    }
                    continue;
                }
            }
            for (int s = 0; s < S; s++) {
                /* A pixel outside the image for this tap reads the one
                 * zero (zero) with step 0 instead of x: no mask multiply
                 * in the reduction, which is the same for every tap. */
                __global const float *xp[PT];
                long st[PT];
                int any = 0, all = 1;
#pragma unroll
                for (int j = 0; j < PT; j++) {
                    const int ih = ih0[j] + r * geom.s2, iw = iw0[j] + s * geom.s3;
                    const int in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                    any |= in;
                    all &= in;
                    xp[j] = in ? x + xb[j] + (long)ih * xs.s2 + (long)iw * xs.s3 : zero;
                    st[j] = in ? xc : 0;
                }
                if (!any)
                    continue;
                __global const TILE_W_T *wpc = wblk + (long)r * wst.s1 + (long)s * wst.s2;
                if (all) {
                    /* Every pixel inside: one index for all (no pointer
                     * update per pixel and step; NCHW's 3x3 layers of 64
                     * to 128 channels ran 1.05-1.1x faster). */
                    for (int c = 0; c < cpg; c++, wpc += wc)
                        IG_STEP(wpc, xp[j][c * xc]);
                    continue;
                }
                for (int c = 0; c < cpg; c++, wpc += wc) {
                    IG_STEP(wpc, *xp[j]);
#pragma unroll
                    for (int j = 0; j < PT; j++)
                        xp[j] += st[j];
                }
            }
        }
        /* Bias, residual, relu and the store (conv2d_tile.cl). */
        TILE_EPILOGUE(y + y_off, res + res_off, pad.s3, filt.s3);
    }
}
