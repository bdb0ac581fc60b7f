/* Convolution as an implicit GEMM tiled for GPUs ("wg_gemm"): a
 * work-group computes a TM x TN tile of y (output channels x output
 * pixels over the whole batch) with the filter and input slices of each
 * TK-long step of the reduction staged through local memory, and each
 * work-item holds an RM x RN register block of it.
 *
 * The GEMM per group g: y (kpg x N*P*Q) = W (kpg x E) * X (E x N*P*Q),
 * E = cpg*R*S. Step e of the reduction is one (c, r, s), in the order that
 * makes the input loads coalesced: c fastest where x's channels are
 * contiguous (NHWC: neighbouring work-items read neighbouring channels of
 * one pixel), else (r, s) fastest with the pixels the work-items' fast
 * axis (NCHW: neighbouring work-items read neighbouring columns). A
 * table (wgg_table, built once per shape and kept by the host) gives each
 * e its row and column offsets and its element offset in x, so the
 * reduction divides nothing (cuDNN's "precomputed" implicit GEMM does the
 * same); it is staged through local memory a chunk at a time. The filter is
 * packed once per call (or once per frozen filter) as wp[e*K + k]: a
 * step's TM channels are contiguous.
 *
 * Where each work-item's RM x RN block lies: rows tm + i*WM, columns
 * tn + j*WN (WM = TM/RM, WN = TN/RN work-items across): reading its
 * operands from local memory, neighbouring work-items read neighbouring
 * words, which no bank serves twice. The store: y's contiguous axis is
 * the work-items' fast one (mode.s1: channels, NHWC; else pixels,
 * NCHW). The layouts are arguments, not build options: one program per
 * configuration, and every branch on them is uniform.
 *
 * DB: the local tiles double-buffered (the next step's tile is written
 * into the other buffer while this one is read: one barrier per step);
 * else one buffer and two barriers. Either way the next step's global
 * loads are issued before this step's multiply-adds, into registers.
 *
 * mode.s2 (split): the reduction is cut into parts of red.s1 steps
 * (dimension 2 of the grid, with the group), each writing its raw partial
 * tile to the workspace; wgg_reduce sums them and applies the epilogue. For calls
 * whose output has too few tiles to fill the device (small filters'
 * gradients, late layers at small batch).
 *
 * The element type is REAL (float unless the build says otherwise); the
 * sums are float. Nothing here is vendor-specific: no subgroup size is
 * assumed, and every barrier is reached by the whole work-group. */

#ifndef REAL
#define REAL float
#endif
#ifndef TM
#define TM 64
#endif
#ifndef TN
#define TN 64
#endif
#ifndef TK
#define TK 16
#endif
#ifndef RM
#define RM 4
#endif
#ifndef RN
#define RN 4
#endif
#ifndef LPAD
#define LPAD 1
#endif
#ifndef DB
#define DB 1
#endif

#define WM (TM / RM)
#define WN (TN / RN)
#define WG (WM * WN)
/* Loads per work-item and step: filter and input. */
#define LA (TK * TM / WG)
#define LB (TK * TN / WG)
#define NBUF (DB ? 2 : 1)

#if TM % RM || TN % RN || (TK * TM) % WG || (TK * TN) % WG
#error "wg_gemm: TM/RM, TN/RN and the loads per work-item must be whole"
#endif
/* The table's chunks in local memory (WGG_TFILL): TC entries each, half a
 * work-group's worth, which keeps 128 x 64 tiles within 32 KiB. */
#define TC (WG / 2)
#if TC % TK || TC < 2 * TK
#error "wg_gemm: a table chunk (TC entries) must hold two or more whole steps"
#endif

/* Step e of the reduction as (c, r*S + s), in the reduction's order:
 * (r, s) fastest where x's pixels are contiguous (xpix), else c. */
static inline int2 wgg_crs(int e, int xpix, int RS, int cpg)
{
    return xpix ? (int2)(e / RS, e % RS) : (int2)(e % cpg, e / cpg);
}

/* The reduction's table: for each e, its row and column offsets (r*dh,
 * s*dw) and its offset in x (c*xs1 + r*dh*xs2 + s*dw*xs3); one work-item
 * per e. It depends on the shape and x's strides only: the host keeps it
 * per device (cl_wg_gemm.c) and builds it once. */
__kernel void wgg_table(__global int *tab, long tab_off, int4 filt, /* R, S, cpg, E */
                        int4 geom, /* dilation h, w, x's pixels contiguous (xpix) */
                        long4 xs)
{
    const int e = (int)get_global_id(0);
    const int S = filt.s1;
    if (e >= filt.s3)
        return;
    const int2 crs = wgg_crs(e, geom.s2, filt.s0 * S, filt.s2);
    const int dr = crs.y / S * geom.s0, ds = crs.y % S * geom.s1;
    vstore4((int4)(dr, ds, (int)(crs.x * xs.s1 + dr * xs.s2 + ds * xs.s3), 0), 0, tab + tab_off + 4 * (long)e);
}

/* wp[e*K + k] = w[k, c(e), r(e), s(e)] (ws: strides of k, c, r, s); one
 * work-item per element, k fastest (the writes are contiguous). */
__kernel void wgg_pack(__global const REAL *w, long w_off, long4 ws, __global REAL *wp, long wp_off,
                       int4 filt, /* R, S, cpg, E */
                       int K, int xpix)
{
    const int k = (int)get_global_id(0), e = (int)get_global_id(1);
    if (k >= K || e >= filt.s3)
        return;
    const int S = filt.s1;
    const int2 crs = wgg_crs(e, xpix, filt.s0 * S, filt.s2);
    wp[wp_off + (long)e * K + k] = w[w_off + k * ws.s0 + crs.x * ws.s1 + (crs.y / S) * ws.s2 + (crs.y % S) * ws.s3];
}

/* Bias, residual and relu (capped at as_float(RELU); 0: none) of output
 * element (k, at y offset YO), stored. */
#define WGG_STORE(V, K_, YO)                                                                     \
    do {                                                                                         \
        float v_ = (V);                                                                          \
        if (flags.s0)                                                                            \
            v_ += (float)bias[b_off + (K_)];                                                     \
        if (flags.s1)                                                                            \
            v_ += (float)res[res_off + (YO)];                                                    \
        if (flags.s2)                                                                            \
            v_ = fmin(fmax(v_, 0.0f), as_float(flags.s2));                                       \
        y[y_off + (YO)] = (REAL)v_;                                                              \
    } while (0)

/* y's offset of pixel G (n, p, q of P x Q). */
#define WGG_YPIX(G) ((G) / PQ * ys.s0 + (long)((int)((G) % PQ) / Q) * ys.s2 + (long)((int)((G) % PQ) % Q) * ys.s3)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
conv2d_wg_gemm(__global const REAL *x, long x_off, __global const REAL *wp, long wp_off, __global const int *tab,
               long tab_off, __global const REAL *bias, long b_off, __global const REAL *res, long res_off,
               __global REAL *y, long y_off, __global float *part, long part_off, /* mode.s2: partial tiles */
               long4 xs, long4 ys,
               int4 dims,  /* N, P, Q, K */
               int4 inp,   /* H, W, cpg, kpg */
               int4 geom,  /* stride h, w, pad top, left */
               int4 red,   /* E, steps per split part, groups, 0 */
               int4 flags, /* has bias, has residual, relu word, 0 */
               int4 mode)  /* x's pixels contiguous (xpix), y's channels contiguous, split, 0 */
{
    __local REAL As[NBUF][TK][TM + LPAD];
    __local REAL Bs[NBUF][TK][TN + LPAD];
    /* The table's entries of the reduction's next WG steps' elements, in
     * two chunks (see WGG_TFILL). */
    __local int4 Ts[2][TC];

    const int lid = (int)get_local_id(0);
    const int P = dims.s1, Q = dims.s2, K = dims.s3, PQ = P * Q;
    const long npix = (long)dims.s0 * PQ;
    const int H = inp.s0, W = inp.s1, cpg = inp.s2, kpg = inp.s3;
    const int E = red.s0, groups = red.s2;
    const long g0 = (long)get_group_id(0) * TN; /* the tile's first pixel */
    const int kt0 = (int)get_group_id(1) * TM;  /* first channel within the group */
    const int gz = (int)get_group_id(2), grp = gz % groups, part_i = gz / groups;
    const int kbase = grp * kpg;
    /* This split part's steps of the reduction. */
    const int e_begin = part_i * red.s1 * TK;
    const int e_end = min(E, e_begin + red.s1 * TK);

    /* The block's place: the fast axis of the work-items is y's
     * contiguous one. */
    const int xpix = mode.s0;
    const int tm = mode.s1 ? lid % WM : lid / WN, tn = mode.s1 ? lid / WM : lid % WN;

    /* The input slots: the LB elements this work-item loads per step,
     * each a (row, pixel) of the TK x TN tile, fixed across the steps
     * but for the row's e. The pixel's base offset and top-left corner
     * are computed once; a pixel past the batch gets a corner no row
     * reaches. */
    int brow[LB], bcol[LB], bih[LB], biw[LB];
    long bbase[LB];
#pragma unroll
    for (int l = 0; l < LB; l++) {
        const int idx = lid + l * WG;
        const int col = xpix ? idx % TN : idx / TK, row = xpix ? idx / TN : idx % TK;
        brow[l] = row;
        bcol[l] = col;
        const long g = g0 + col;
        if (g < npix) {
            const int pq = (int)(g % PQ), oh = pq / Q, ow = pq % Q;
            bih[l] = oh * geom.s0 - geom.s2;
            biw[l] = ow * geom.s1 - geom.s3;
            bbase[l] = x_off + g / PQ * xs.s0 + (long)grp * cpg * xs.s1 + (long)bih[l] * xs.s2 +
                       (long)biw[l] * xs.s3;
        } else {
            bih[l] = -0x40000000;
            biw[l] = 0;
            bbase[l] = 0;
        }
    }
    /* The filter slots: row (e) and channel of the TK x TM tile. */
    int arow[LA], acol[LA];
#pragma unroll
    for (int l = 0; l < LA; l++) {
        const int idx = lid + l * WG;
        acol[l] = idx % TM;
        arow[l] = idx / TM;
    }

    REAL ra[LA], rb[LB];
    /* Loads step E0's tiles into the registers ra, rb (zeros past the
     * reduction, the group's channels or the image). */
#define WGG_LOAD(E0)                                                                             \
    do {                                                                                         \
        _Pragma("unroll") for (int l = 0; l < LA; l++)                                           \
        {                                                                                        \
            const int e_ = (E0) + arow[l], k_ = kt0 + acol[l];                                   \
            ra[l] = e_ < e_end && k_ < kpg ? wp[wp_off + (long)e_ * K + kbase + k_] : (REAL)0;   \
        }                                                                                        \
        _Pragma("unroll") for (int l = 0; l < LB; l++)                                           \
        {                                                                                        \
            const int e_ = (E0) + brow[l];                                                       \
            REAL v_ = (REAL)0;                                                                   \
            if (e_ < e_end) {                                                                    \
                const int4 t_ = Ts[((uint)(e_ - e_begin) / TC) & 1][(uint)(e_ - e_begin) % TC];          \
                const int ih_ = bih[l] + t_.s0, iw_ = biw[l] + t_.s1;                            \
                if (ih_ >= 0 && ih_ < H && iw_ >= 0 && iw_ < W)                                  \
                    v_ = x[bbase[l] + t_.s2];                                                    \
            }                                                                                    \
            rb[l] = v_;                                                                          \
        }                                                                                        \
    } while (0)
/* The table through local memory: chunk j (elements e_begin + j*TC on)
 * in Ts[j & 1], an entry per work-item of the first TC. Chunk j + 1 is
 * written in the step whose WGG_LOAD reads chunk j's last row: that
 * step's closing barrier publishes it before its first read, and the
 * buffer it overwrites (chunk j - 1) was last read a barrier before.
 * Each table word is read from global memory once per work-group, not
 * once per work-item that needs it. */
#define WGG_TFILL(EC)                                                                            \
    do {                                                                                         \
        const int e_ = (EC) + lid;                                                               \
        if (lid < TC && e_ < e_end)                                                              \
            Ts[((uint)((EC) - e_begin) / TC) & 1][lid] = vload4(0, tab + tab_off + 4 * (long)e_);  \
    } while (0)
/* After WGG_LOAD(E0 + TK): the next chunk, where E0 + 2 TK starts one. */
#define WGG_TNEXT(E0)                                                                            \
    do {                                                                                         \
        if ((E0) + 2 * TK < e_end && ((E0) + 2 * TK - e_begin) % TC == 0)                        \
            WGG_TFILL((E0) + 2 * TK);                                                            \
    } while (0)
#define WGG_STORE_LOCAL(BUF)                                                                     \
    do {                                                                                         \
        _Pragma("unroll") for (int l = 0; l < LA; l++) As[BUF][arow[l]][acol[l]] = ra[l];        \
        _Pragma("unroll") for (int l = 0; l < LB; l++) Bs[BUF][brow[l]][bcol[l]] = rb[l];        \
    } while (0)

    float acc[RM][RN];
#pragma unroll
    for (int i = 0; i < RM; i++)
#pragma unroll
        for (int j = 0; j < RN; j++)
            acc[i][j] = 0.0f;

    /* The multiply-adds of the tile in buffer BUF. */
#define WGG_MAC(BUF)                                                                             \
    do {                                                                                         \
        _Pragma("unroll") for (int kk = 0; kk < TK; kk++)                                        \
        {                                                                                        \
            float a_[RM], b_[RN];                                                                \
            _Pragma("unroll") for (int i = 0; i < RM; i++) a_[i] = (float)As[BUF][kk][tm + i * WM]; \
            _Pragma("unroll") for (int j = 0; j < RN; j++) b_[j] = (float)Bs[BUF][kk][tn + j * WN]; \
            _Pragma("unroll") for (int i = 0; i < RM; i++)                                       \
                _Pragma("unroll") for (int j = 0; j < RN; j++) acc[i][j] = fma(a_[i], b_[j], acc[i][j]); \
        }                                                                                        \
    } while (0)

    if (e_begin < e_end) {
        /* TC >= 2 TK: the first chunk covers the first two steps'
         * loads. */
        WGG_TFILL(e_begin);
        barrier(CLK_LOCAL_MEM_FENCE);
        WGG_LOAD(e_begin);
#if DB
        WGG_STORE_LOCAL(0);
        barrier(CLK_LOCAL_MEM_FENCE);
        int buf = 0;
        for (int e0 = e_begin; e0 < e_end; e0 += TK) {
            const int more = e0 + TK < e_end;
            if (more)
                WGG_LOAD(e0 + TK);
            WGG_TNEXT(e0);
            WGG_MAC(buf);
            /* The other buffer was last read before the previous step's
             * barrier: writing it now races with no one. */
            if (more)
                WGG_STORE_LOCAL(buf ^ 1);
            barrier(CLK_LOCAL_MEM_FENCE); /* the step's end */
            buf ^= 1;
        }
#else
        for (int e0 = e_begin; e0 < e_end; e0 += TK) {
            WGG_STORE_LOCAL(0);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (e0 + TK < e_end)
                WGG_LOAD(e0 + TK);
            WGG_TNEXT(e0);
            WGG_MAC(0);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
#endif
    }

    if (mode.s2) {
        /* The raw partial tile, dense: part[(part_i * K + k) * npix + g]. */
#pragma unroll
        for (int j = 0; j < RN; j++) {
            const long g = g0 + tn + j * WN;
            if (g >= npix)
                continue;
#pragma unroll
            for (int i = 0; i < RM; i++) {
                const int kg = kt0 + tm + i * WM;
                if (kg < kpg)
                    part[part_off + ((long)part_i * K + kbase + kg) * npix + g] = acc[i][j];
            }
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < RN; j++) {
        const long g = g0 + tn + j * WN;
        if (g >= npix)
            continue;
        const long yp = WGG_YPIX(g);
#pragma unroll
        for (int i = 0; i < RM; i++) {
            const int k = kbase + kt0 + tm + i * WM;
            if (kt0 + tm + i * WM < kpg)
                WGG_STORE(acc[i][j], k, yp + (long)k * ys.s1);
        }
    }
}

/* mode.s2: y = the sum of the parts, then the epilogue; one work-item
 * per output element, pixels fastest (the parts' dense rows). */
__kernel void wgg_reduce(__global const float *part, long part_off, __global const REAL *bias, long b_off,
                         __global const REAL *res, long res_off, __global REAL *y, long y_off, long4 ys,
                         int4 dims,  /* N, P, Q, K */
                         int nparts, int4 flags)
{
    const long g = get_global_id(0);
    const int k = (int)get_global_id(1);
    const int P = dims.s1, Q = dims.s2, K = dims.s3, PQ = P * Q;
    const long npix = (long)dims.s0 * PQ;
    if (g >= npix || k >= K)
        return;
    (void)P;
    float s = 0.0f;
    for (int i = 0; i < nparts; i++)
        s += part[part_off + ((long)i * K + k) * npix + g];
    WGG_STORE(s, k, WGG_YPIX(g) + (long)k * ys.s1);
}
