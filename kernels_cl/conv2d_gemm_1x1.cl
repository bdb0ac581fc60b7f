/* 1x1 convolution as a GEMM on the tensors in place ("gemm_1x1").
 *
 * With R = S = 1 and no padding, output pixel g (over all N*P*Q pixels)
 * of channel k is sum_c W[k][c] * x[pixel g's input][c]: NCHW is
 * y[n] (K x PQ) = W (K x C) * x[n] (C x PQ), NHWC is
 * y (NPQ x K) = x (NPQ x C) * W^T (C x K). Both are one kernel: a
 * work-item holds a KT x PT register tile (KT = VW * KB output channels
 * in KB vectors of VW lanes, PT pixels) and per input channel does one
 * outer product: KB contiguous filter vectors times PT broadcast input
 * values. No local memory: on CPUs (PoCL) it is only cache, and the tile
 * of W a work-item reuses (KT x C) stays in L1/L2 by itself because the
 * work-item sweeps SPAN pixels (a host argument) with the same channels.
 * On GPUs the host makes SPAN one tile, so there are many work-items.
 *
 * The filter is packed once per call into wp[(kb*cpg + c)*KT + lane] for
 * channel k = kb*KT + lane (zero for k >= K), so each step's KT values are
 * contiguous; an HWIO filter whose K is a multiple of KT already is and is
 * read in place (wst: element strides of a channel block and of c).
 * Layouts and strided reads (stride > 1) go through element strides.
 *
 * Under -DPDNN_REAL (float16, bfloat16 storage; issue 43) the tensors are
 * REAL_T and the reduction float32's: the tiles kernel reads x in place
 * (NHWC) or widened by the host, and the packed filter in the storage
 * dtype (-DTILE_WR, conv2d_tile.cl) or float; the rows kernel below reads
 * x's pixel vectors in place (8-wide conversions) and the filter in place
 * or as a K x C relayout in the storage dtype (gemm1x1_rows_pack), or
 * widened by the host (-DG1_WF). Each rounds once at the store. */

/* PT, KB, VW, KT and vec_t's VLOAD, VFMA, ...: conv2d_tile.cl. */

/* The tiles kernel's x: REAL_T under PDNN_REAL, read in place where its
 * channels are contiguous (NHWC: 8 channels of a pixel one 8-wide
 * conversion, G1_X8), or float where the host widened it first (-DG1_XF:
 * other layouts, whose channel-by-channel scalars would each be a
 * conversion). */
#if defined(PDNN_REAL) && !defined(G1_XF)
#define TILE_X_T REAL_T
#define G1_XLOAD LOAD_REAL
#define G1_X8 1
#else
#define TILE_X_T float
#define G1_XLOAD F32_LOAD
#define G1_X8 0
#endif

/* STEP(V.s0) .. STEP(V.s7): a step per lane of 8 values converted at
 * once (V an expression of the step's index, j or r). */
#define LANES8(STEP, V) \
    do {                \
        STEP(V.s0);     \
        STEP(V.s1);     \
        STEP(V.s2);     \
        STEP(V.s3);     \
        STEP(V.s4);     \
        STEP(V.s5);     \
        STEP(V.s6);     \
        STEP(V.s7);     \
    } while (0)

/* One step of the reduction over channel c (conv2d_tile.cl's TILE_STEP
 * at wpc, then wpc one c on): each pixel j's input XV (an expression of
 * j). */
#define G1_STEP(XV)                 \
    do {                            \
        TILE_STEP(wpc, (XV));       \
        wpc += wc;                  \
    } while (0)

/* wp[(kb*cpg + c)*KT + lane] = w[k = kb*KT + lane][c] in any filter
 * layout (ws: the strides of k and c), 0 for k >= K. A work-item copies
 * PACK_RUN consecutive c of one k: sequential reads in OIHW/OHWI, and the
 * KT work-items of a work-group (one channel block) write whole rows of
 * wp together. Dimension 0 is k in [0, Kp), dimension 1 the runs of c. */
__kernel void gemm1x1_pack(__global const REAL_T *w, long w_off, long2 ws,
                           __global TILE_W_T *wp, long wp_off, int cpg, int K)
{
    const int k = (int)get_global_id(0);
    const int c0 = (int)get_global_id(1) * PACK_RUN;
    PACK_COPY(wp + wp_off + (long)(k / KT) * cpg * KT + k % KT, KT, w + w_off + (long)(k < K ? k : 0) * ws.s0,
              ws.s1, c0, cpg, k < K);
}

/* The rows kernel's filter as wp[k*C + c] = w[k][c] (ws: the strides of
 * k and c), in the storage dtype under -DTILE_WR: an HWIO filter's rows
 * made contiguous for its 8-wide loads. Dimension 0 is k in [0, K),
 * dimension 1 the runs of c. */
__kernel void gemm1x1_rows_pack(__global const REAL_T *w, long w_off, long2 ws,
                                __global TILE_W_T *wp, long wp_off, int C, int K)
{
    const int k = (int)get_global_id(0);
    if (k >= K)
        return;
    PACK_COPY(wp + wp_off + (long)k * C, 1, w + w_off + (long)k * ws.s0, ws.s1, (int)get_global_id(1) * PACK_RUN,
              C, 1);
}

__kernel void conv2d_gemm_1x1(TILE_PARAMS, /* x, wp, bias, y, xs, ys, dims (conv2d_tile.cl) */
                              int4 misc, /* C/groups, K/groups, has bias, relu word (pdnn__cl_relu_word) */
                              int4 geom, /* stride h, stride w, span (pixels per work-item), residual */
                              long2 wst, /* filter element strides: channel block, c */
                              __global const REAL_T *res, long res_off) /* geom.s3: z, y's layout, added */
{
    /* k0, K, P, Q, PQ, npix, span, g0; past the grid, returns (conv2d_tile.cl). */
    TILE_GRID(dims, geom.s2);
    const int cpg = misc.s0, kpg = misc.s1;
    /* xgrp, wblk, wc, xc, bv, ycontig, gend and the pixel cursor cn, coh,
     * cow (image, row, column of pixel gt; conv2d_tile.cl). */
    TILE_SETUP(misc.s2, wst.s1);

    for (long gt = g0; gt < gend; gt += PT) {
        /* Each pixel's input and output offsets; pixels past the span's
         * end repeat the last one (computed on, not stored). */
        long xo[PT], yoff[PT];
#pragma unroll
        for (int j = 0; j < PT; j++) {
            xo[j] = xgrp + cn * xs.s0 + (long)coh * geom.s0 * xs.s2 + (long)cow * geom.s1 * xs.s3;
            yoff[j] = cn * ys.s0 + (long)coh * ys.s2 + (long)cow * ys.s3;
            if (gt + j + 1 < gend) /* the last step reaches the next tile */
                CURSOR_STEP(P, Q, cn, coh, cow);
        }
        TILE_ACC(acc);
        __global const TILE_W_T *wpc = wblk;
        int c = 0;
#if G1_X8
        /* Contiguous channels: each pixel's next 8 widened at once, then
         * 8 steps from their lanes. */
        for (; xc == 1 && c + 8 <= cpg; c += 8) {
            float8 x8[PT];
#pragma unroll
            for (int j = 0; j < PT; j++) {
                x8[j] = LOADR8(0, x + xo[j]);
                xo[j] += 8;
            }
            LANES8(G1_STEP, x8[j]);
        }
#endif
        for (; c < cpg; c++) {
            G1_STEP(G1_XLOAD(x, xo[j]));
#pragma unroll
            for (int j = 0; j < PT; j++)
                xo[j] += xc;
        }
        /* Bias, residual, relu and the store (conv2d_tile.cl). */
        TILE_EPILOGUE(y + y_off, res + res_off, geom.s3, misc.s3);
    }
}

/* The same GEMM with the register tile transposed, for NCHW input and
 * output (pixels contiguous, stride 1, groups 1): a work-item holds PT
 * output channels (rows of y) by KB vectors of VW pixels of one image.
 * Per input channel it loads KB pixel vectors and broadcasts PT filter
 * values read in place (any filter layout: no packing, no workspace), and
 * its output rows are whole vector stores, where the kernel above would
 * scatter KT channels per pixel into KT pages. A partial last tile of an
 * image is moved back to end at the image's end (the host requires
 * P*Q >= KB*VW): it recomputes and rewrites a few pixels with the same
 * values instead of masking. Work-items sweep SPAN tiles with the same
 * filter rows, as above. */
#define TW (KB * VW)
/* The rows kernel's filter: REAL_T under PDNN_REAL, read in place where
 * its c stride is 1 (OIHW, OHWI: 8 values of a row one conversion,
 * ROWS_W8), or float where the host widened it first (-DG1_WF: HWIO). */
#if defined(PDNN_REAL) && !defined(G1_WF)
#define ROWS_W_T REAL_T
#define ROWS_WLOAD LOAD_REAL
#define ROWS_W8 1
#else
#define ROWS_W_T float
#define ROWS_WLOAD F32_LOAD
#define ROWS_W8 0
#endif
/* One step of the rows kernel's reduction over c: KB pixel vectors of x
 * (xp, then one c on) times each row r's filter value WV (an expression
 * of r). */
#define ROWS_STEP(WV)                                                                            \
    do {                                                                                         \
        vec_t xv[KB];                                                                            \
        _Pragma("unroll") for (int b = 0; b < KB; b++) xv[b] = VLOADR(b, xp);                    \
        xp += xc;                                                                                \
        _Pragma("unroll") for (int r = 0; r < PT; r++)                                           \
        {                                                                                        \
            const vec_t wv = (vec_t)(WV);                                                        \
            _Pragma("unroll") for (int b = 0; b < KB; b++) acc[r][b] = VFMA(wv, xv[b], acc[r][b]); \
        }                                                                                        \
    } while (0)
__kernel void conv2d_gemm_1x1_rows(__global const REAL_T *x, long x_off,
                                   __global const ROWS_W_T *w, long w_off,
                                   __global const REAL_T *bias, long b_off,
                                   __global REAL_T *y, long y_off,
                                   long4 xs, long4 ys,
                                   int4 dims, /* N, P*Q, tiles per image, K */
                                   int4 misc, /* C, span (tiles per work-item), has bias, relu word */
                                   long2 ws,  /* filter element strides of k and c */
                                   __global const REAL_T *res, long res_off) /* z (y's layout); res_off < 0: none */
{
    const int k0 = (int)get_global_id(0) * PT;
    const int K = dims.s3, PQ = dims.s1, TPI = dims.s2, C = misc.s0;
    const long ntiles = (long)dims.s0 * TPI;
    const long t0 = (long)get_global_id(1) * misc.s1;
    if (k0 >= K || t0 >= ntiles)
        return;
    const long tend = t0 + misc.s1 < ntiles ? t0 + misc.s1 : ntiles;
    const long wc = ws.s1, xc = xs.s1;
    float bb[PT];
#pragma unroll
    for (int r = 0; r < PT; r++)
        bb[r] = misc.s2 && k0 + r < K ? LOAD_REAL(bias, b_off + k0 + r) : 0.0f;
    for (long t = t0; t < tend; t++) {
        const long n = t / TPI;
        int pix0 = (int)(t % TPI) * TW;
        if (pix0 + TW > PQ)
            pix0 = PQ - TW;
        __global const REAL_T *xp = x + x_off + n * xs.s0 + pix0;
        /* Rows past K read row K-1 and are not stored. */
        __global const ROWS_W_T *wr[PT];
#pragma unroll
        for (int r = 0; r < PT; r++)
            wr[r] = w + w_off + (long)(k0 + r < K ? k0 + r : K - 1) * ws.s0;
        vec_t acc[PT][KB];
#pragma unroll
        for (int r = 0; r < PT; r++)
#pragma unroll
            for (int b = 0; b < KB; b++)
                acc[r][b] = (vec_t)(0.0f);
        int c = 0;
#if ROWS_W8
        /* Contiguous filter rows: each row's next 8 values widened at
         * once, then 8 steps from their lanes. */
        for (; wc == 1 && c + 8 <= C; c += 8) {
            float8 w8[PT];
#pragma unroll
            for (int r = 0; r < PT; r++) {
                w8[r] = LOADR8(0, wr[r]);
                wr[r] += 8;
            }
            LANES8(ROWS_STEP, w8[r]);
        }
#endif
        for (; c < C; c++) {
            ROWS_STEP(ROWS_WLOAD(wr[r], 0));
#pragma unroll
            for (int r = 0; r < PT; r++)
                wr[r] += wc;
        }
        __global REAL_T *yp = y + y_off + n * ys.s0 + pix0;
        __global const REAL_T *rp = res + (res_off < 0 ? 0 : res_off) + n * ys.s0 + pix0;
#pragma unroll
        for (int r = 0; r < PT; r++) {
            if (k0 + r >= K)
                continue;
#pragma unroll
            for (int b = 0; b < KB; b++) {
                vec_t v = acc[r][b] + (vec_t)(bb[r]);
                if (res_off >= 0) /* the residual, before the relu */
                    v += VLOADR(b, rp + (long)(k0 + r) * ys.s1);
                if (misc.s3) /* the relu, capped at as_float(misc.s3) (+inf: none) */
                    v = VMIN(VMAX(v, (vec_t)(0.0f)), (vec_t)(as_float(misc.s3)));
                VSTORER(v, b, yp + (long)(k0 + r) * ys.s1);
            }
        }
    }
}
