/* Pieces the register-tiled convolution kernels share
 * (conv2d_gemm_1x1.cl, conv2d_implicit_gemm.cl): the backend builds their
 * programs from prelude.cl, this file, then theirs (cl_common.c,
 * pdnn__cl_prelude_of), so each macro here is written once. Their PT and
 * VW (build options) pick what applies. */

/* The register tile: KT = VW * KB output channels (KB vectors of VW
 * lanes, vec_t) by PT pixels; the autotuner builds one program per
 * choice (-DVW=.. -DKB=.. -DPT=..). */
#ifndef PT
#define PT 6
#endif
#ifndef KB
#define KB 1
#endif
#ifndef VW
#define VW 16
#endif
#define KT (VW * KB)

#if VW == 16
typedef float16 vec_t;
#define VLOAD LOAD16
#define VSTORE STORE16
#define VLOADR LOADR16
#define VSTORER STORER16
#define VFMA FMA16
#define VMAX MAX16
#define VMIN MIN16
#elif VW == 8
typedef float8 vec_t;
#define VLOAD vload8
#define VSTORE vstore8
#define VLOADR LOADR8
#define VSTORER STORER8
#define VFMA fma
#define VMAX fmax
#define VMIN fmin
#elif VW == 4
typedef float4 vec_t;
#define VLOAD vload4
#define VSTORE vstore4
#define VLOADR LOADR4
#define VSTORER STORER4
#define VFMA fma
#define VMAX fmax
#define VMIN fmin
#else
#error "VW must be 4, 8 or 16"
#endif
/* VLOADR and VSTORER: a vec_t of the tensors' storage (REAL_T: float16
 * and bfloat16 under -DPDNN_REAL, issue 43) through the prelude's 8-wide
 * conversions; VLOAD and VSTORE stay float (private arrays, a float32
 * packed filter). Under PDNN_REAL the kernels read x as float where the
 * host widened it into the workspace first (cl_cast.c,
 * pdnn__cl_widen_locked): each of its values is broadcast once per filter
 * vector, and a scalar conversion per broadcast would cost more than the
 * FMA. */

/* The packed filter's element type, TILE_W_T: under -DTILE_WR (a float16
 * or bfloat16 call whose host packs in the storage dtype) REAL_T, a
 * relayout of the values the dtype holds (exact, half float32's bytes),
 * each step's filter vectors widened as they load (TILE_WLOAD: the 8-wide
 * conversions); else float. The sums are float32's either way. */
#if defined(PDNN_REAL) && defined(TILE_WR)
#define TILE_W_T REAL_T
#define TILE_WLOAD VLOADR
#else
#define TILE_W_T float
#define TILE_WLOAD VLOAD
#endif


/* One step of the reduction, the micro-kernel: the KB filter vectors at
 * WP times each pixel j's input XV (an expression of j), into acc. */
#define TILE_STEP(WP, XV)                                                          \
    do {                                                                           \
        vec_t wv[KB];                                                              \
        _Pragma("unroll") for (int b = 0; b < KB; b++) wv[b] = TILE_WLOAD(b, (WP)); \
        _Pragma("unroll") for (int j = 0; j < PT; j++)                             \
        {                                                                          \
            const vec_t xv = (vec_t)(XV);                                          \
            _Pragma("unroll") for (int b = 0; b < KB; b++) acc[b][j] = VFMA(xv, wv[b], acc[b][j]); \
        }                                                                          \
    } while (0)

/* The pixel cursor of a work-item's span: image CN, row COH, column COW
 * of an output of P x Q pixels, set from pixel G0 by one division and then
 * stepped to the next pixel (dividing for every pixel of every tile cost
 * as much as a 64-channel reduction). */
#define CURSOR_INIT(G0, PQ, Q, CN, COH, COW) \
    long CN = (G0) / (PQ);                 \
    int COH = (int)((G0) % (PQ)) / (Q), COW = (int)((G0) % (PQ)) % (Q)
#define CURSOR_STEP(P, Q, CN, COH, COW)                          \
    do {                                                         \
        COW = COW + 1 < (Q) ? COW + 1 : 0;                       \
        COH = COW == 0 ? (COH + 1 < (P) ? COH + 1 : 0) : COH;    \
        CN = COW == 0 && COH == 0 ? CN + 1 : CN;                 \
    } while (0)

/* Both kernels' first arguments (0 to 10 of the host's), the names the
 * macros below read: x (TILE_X_T, the kernel's: float, or REAL_T where it
 * reads a reduced x in place), the packed filter wp (TILE_W_T), bias and y
 * (REAL_T), each with its element offset; x's and y's element strides
 * (n, c, h, w); dims (N, P, Q, K). */
#define TILE_PARAMS                                                                              \
    __global const TILE_X_T *x, long x_off, __global const TILE_W_T *wp, long wp_off,              \
        __global const REAL_T *bias, long b_off, __global REAL_T *y, long y_off, long4 xs, long4 ys, \
        int4 dims

/* The filter packs' copy: a work-item's PACK_RUN consecutive c from C0
 * (below CPG) of one channel, from IN on (REAL_T, element stride INC) to
 * OUT on (TILE_W_T, stride OUTC), zeros where the channel is not LIVE
 * (k >= K). PACK_PUT moves one value: widened into a float pack, copied
 * as it is into a REAL_T one (float16 through vload_half/vstore_half:
 * a half pointer is only handed to them; exact both ways). */
#define PACK_RUN 32
#if defined(PDNN_REAL) && defined(TILE_WR) && PDNN_REAL == 1
#define PACK_PUT(OUT, O, IN, I, LIVE) vstore_half((LIVE) ? vload_half((size_t)(I), (IN)) : 0.0f, (size_t)(O), (OUT))
#elif defined(PDNN_REAL) && defined(TILE_WR)
#define PACK_PUT(OUT, O, IN, I, LIVE) ((OUT)[O] = (LIVE) ? (IN)[I] : (REAL_T)0)
#else
#define PACK_PUT(OUT, O, IN, I, LIVE) ((OUT)[O] = (LIVE) ? LOAD_REAL((IN), (I)) : 0.0f)
#endif
#define PACK_COPY(OUT, OUTC, IN, INC, C0, CPG, LIVE)                                             \
    do {                                                                                         \
        const int c1_ = (C0) + PACK_RUN < (CPG) ? (C0) + PACK_RUN : (CPG);                       \
        __global TILE_W_T *out_ = (OUT);                                                         \
        __global const REAL_T *in_ = (IN);                                                       \
        for (int c_ = (C0); c_ < c1_; c_++)                                                      \
            PACK_PUT(out_, (long)c_ * (OUTC), in_, (long)c_ * (INC), (LIVE));                    \
    } while (0)

/* The steps both kernels' tile loops share, in the names both give it.
 * TILE_GRID: the work-item's KT channels from k0 of K and its span of
 * SPAN pixels from g0 of npix (all N * P * Q of DIMS = N, P, Q, K); one
 * past either returns (the grid is rounded up to whole work-groups).
 * TILE_SETUP (after the kernel's cpg and kpg): xgrp, the offset of x's
 * channel group; wblk, the channel block's filter in wp (blocks wst.s0
 * apart), with the element stride WC of its c and xc that of x; the bias of the KT
 * channels as KB vectors bv (0 where HAS_BIAS is 0 and from K on);
 * ycontig (y's channels contiguous and all KT below K: whole vector
 * stores), the span's end gend and the pixel cursor at g0. TILE_ACC: the
 * KB x PT accumulators ACC, zero. */
#define TILE_GRID(DIMS, SPAN)                                                                    \
    const int k0 = (int)get_global_id(0) * KT;                                                   \
    const int K = (DIMS).s3, P = (DIMS).s1, Q = (DIMS).s2, PQ = P * Q;                           \
    const long npix = (long)(DIMS).s0 * PQ;                                                      \
    const int span = (SPAN);                                                                     \
    const long g0 = (long)get_global_id(1) * span;                                               \
    if (k0 >= K || g0 >= npix)                                                                   \
        return
#define TILE_SETUP(HAS_BIAS, WC)                                                                 \
    const long xgrp = x_off + (long)(k0 / kpg) * cpg * xs.s1;                                    \
    __global const TILE_W_T *wblk = wp + wp_off + (long)(k0 / KT) * wst.s0;                      \
    const long wc = (WC), xc = xs.s1;                                                            \
    vec_t bv[KB];                                                                                \
    for (int b_ = 0; b_ < KB; b_++) {                                                            \
        float bb_[VW];                                                                           \
        for (int l_ = 0; l_ < VW; l_++)                                                          \
            bb_[l_] = (HAS_BIAS) && k0 + b_ * VW + l_ < K ? LOAD_REAL(bias, b_off + k0 + b_ * VW + l_) : 0.0f; \
        bv[b_] = VLOAD(0, bb_);                                                                  \
    }                                                                                            \
    const int ycontig = ys.s1 == 1 && k0 + KT <= K;                                              \
    const long gend = g0 + span < npix ? g0 + span : npix;                                       \
    CURSOR_INIT(g0, PQ, Q, cn, coh, cow)
#define TILE_ACC(ACC)                                                                            \
    vec_t ACC[KB][PT];                                                                           \
    _Pragma("unroll") for (int b_ = 0; b_ < KB; b_++)                                            \
        _Pragma("unroll") for (int j_ = 0; j_ < PT; j_++)                                        \
            ACC[b_][j_] = (vec_t)(0.0f)

#if PT == 8 && VW == 16
/* The 16 x 8 tile (8 float16 of 16 channels, one per pixel) transposed
 * in three rounds of two-vector shuffles: I2 pairs pixels, P2 then P4
 * merge pairs and quads; R[h] ends up holding channels 2h and 2h+1, each
 * as its 8 pixels (.lo and .hi). */
#define I2LO(a, b) ((float16)((a).s0, (b).s0, (a).s1, (b).s1, (a).s2, (b).s2, (a).s3, (b).s3, \
                              (a).s4, (b).s4, (a).s5, (b).s5, (a).s6, (b).s6, (a).s7, (b).s7))
#define I2HI(a, b) ((float16)((a).s8, (b).s8, (a).s9, (b).s9, (a).sa, (b).sa, (a).sb, (b).sb, \
                              (a).sc, (b).sc, (a).sd, (b).sd, (a).se, (b).se, (a).sf, (b).sf))
#define P2LO(u, w) ((float16)((u).s01, (w).s01, (u).s23, (w).s23, (u).s45, (w).s45, (u).s67, (w).s67))
#define P2HI(u, w) ((float16)((u).s89, (w).s89, (u).sab, (w).sab, (u).scd, (w).scd, (u).sef, (w).sef))
#define P4LO(v, w) ((float16)((v).s0123, (w).s0123, (v).s4567, (w).s4567))
#define P4HI(v, w) ((float16)((v).s89ab, (w).s89ab, (v).scdef, (w).scdef))
#define T16X8(A, R)                                                                              \
    do {                                                                                         \
        const float16 u0 = I2LO(A[0], A[1]), u1 = I2HI(A[0], A[1]), u2 = I2LO(A[2], A[3]),       \
                      u3 = I2HI(A[2], A[3]), u4 = I2LO(A[4], A[5]), u5 = I2HI(A[4], A[5]),       \
                      u6 = I2LO(A[6], A[7]), u7 = I2HI(A[6], A[7]);                              \
        const float16 v0 = P2LO(u0, u2), v1 = P2HI(u0, u2), v2 = P2LO(u1, u3), v3 = P2HI(u1, u3); \
        const float16 w0 = P2LO(u4, u6), w1 = P2HI(u4, u6), w2 = P2LO(u5, u7), w3 = P2HI(u5, u7); \
        R[0] = P4LO(v0, w0);                                                                     \
        R[1] = P4HI(v0, w0);                                                                     \
        R[2] = P4LO(v1, w1);                                                                     \
        R[3] = P4HI(v1, w1);                                                                     \
        R[4] = P4LO(v2, w2);                                                                     \
        R[5] = P4HI(v2, w2);                                                                     \
        R[6] = P4LO(v3, w3);                                                                     \
        R[7] = P4HI(v3, w3);                                                                     \
    } while (0)

/* The epilogue where y is channel-major (NCHW) and the tile's 8 pixels
 * are neighbours in it: each of the KB blocks of ACC (plus bias BV)
 * transposed and stored as rows of 8 floats at YP + channel * YS1 (the
 * residual RP added first where HAS_RES, then the relu capped at
 * as_float(RELU) where RELU is not 0), where the per-pixel path scatters
 * 128 single floats per block. Channels from K on are not stored. */
#define TILE_ROWS8 1
#define STORE_ROWS8(ACC, BV, K0, K, YP, YS1, HAS_RES, RP, RELU)                                  \
    do {                                                                                         \
        _Pragma("unroll") for (int b_ = 0; b_ < KB; b_++)                                        \
        {                                                                                        \
            float16 a8_[8], r8_[8];                                                              \
            _Pragma("unroll") for (int j_ = 0; j_ < 8; j_++) a8_[j_] = ACC[b_][j_] + BV[b_];     \
            T16X8(a8_, r8_);                                                                     \
            const int kb_ = (K0) + b_ * 16;                                                      \
            _Pragma("unroll") for (int l_ = 0; l_ < 16; l_++)                                    \
            {                                                                                    \
                if (kb_ + l_ < (K)) {                                                            \
                    const long o_ = (long)(kb_ + l_) * (YS1);                                    \
                    float8 v_ = (l_ & 1) ? r8_[l_ >> 1].hi : r8_[l_ >> 1].lo;                     \
                    if (HAS_RES)                                                                 \
                        v_ += LOADR8(0, (RP) + o_);                                              \
                    if (RELU)                                                                    \
                        v_ = fmin(fmax(v_, (float8)(0.0f)), (float8)(as_float(RELU)));           \
                    STORER8(v_, 0, (YP) + o_);                                                   \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)
#endif

/* The epilogue of one tile in either kernel's pixel loop (gt from g0 by
 * PT while below gend; the caller's acc, bv, k0, K, ys, ycontig, gt, gend
 * and yoff): acc[b][j] plus the bias bv[b], the residual at RES (y's
 * layout) added where HAS_RES, then the relu capped at as_float(RELU)
 * (+inf: none) where RELU is not 0, stored at Y + yoff[j] in y's layout:
 * one vector per block where ycontig (channels contiguous, the KT of the
 * tile all below K), else lane by lane at channel stride ys.s1, channels
 * from K on neither read nor stored. Under TILE_ROWS8 a tile whose 8
 * pixels are neighbours in channel-major y (offsets rising by 1 each:
 * every step is at least 1) goes through STORE_ROWS8 instead (its break
 * leaves the do-while). The accumulators are indexed by constants only
 * (unrolled loops, no early exit) so that they stay in registers. yo_ is
 * a variable of its own, as it was in both kernels: without one,
 * gemm_1x1's IR came out reordered. */
#ifdef TILE_ROWS8
#define TILE_ROWS8_BRANCH(Y, RES, HAS_RES, RELU)                                                 \
    if (!ycontig && gt + PT <= gend && yoff[PT - 1] == yoff[0] + PT - 1) {                       \
        STORE_ROWS8(acc, bv, k0, K, (Y) + yoff[0], ys.s1, HAS_RES, (RES) + yoff[0], RELU);       \
        break;                                                                                   \
    }
#else
#define TILE_ROWS8_BRANCH(Y, RES, HAS_RES, RELU)
#endif
#define TILE_EPILOGUE(Y, RES, HAS_RES, RELU)                                                     \
    do {                                                                                         \
        TILE_ROWS8_BRANCH(Y, RES, HAS_RES, RELU)                                                 \
        _Pragma("unroll") for (int j_ = 0; j_ < PT; j_++)                                        \
        {                                                                                        \
            if (gt + j_ >= gend)                                                                 \
                continue;                                                                        \
            const long yo_ = yoff[j_];                                                           \
            __global REAL_T *yp_ = (Y) + yo_;                                                    \
            __global const REAL_T *rp_ = (RES) + yo_;                                            \
            _Pragma("unroll") for (int b_ = 0; b_ < KB; b_++)                                    \
            {                                                                                    \
                vec_t v_ = acc[b_][j_] + bv[b_];                                                 \
                const int kb_ = k0 + b_ * VW;                                                    \
                if (HAS_RES) {                                                                   \
                    if (ycontig) {                                                               \
                        v_ += VLOADR(0, rp_ + kb_);                                              \
                    } else {                                                                     \
                        float t_[VW];                                                            \
                        for (int l_ = 0; l_ < VW; l_++)                                          \
                            t_[l_] = kb_ + l_ < K ? LOAD_REAL(rp_, (long)(kb_ + l_) * ys.s1) : 0.0f; \
                        v_ += VLOAD(0, t_);                                                      \
                    }                                                                            \
                }                                                                                \
                if (RELU)                                                                        \
                    v_ = VMIN(VMAX(v_, (vec_t)(0.0f)), (vec_t)(as_float(RELU)));                 \
                if (ycontig) {                                                                   \
                    VSTORER(v_, 0, yp_ + kb_);                                                   \
                } else {                                                                         \
                    float o_[VW];                                                                \
                    VSTORE(v_, 0, o_);                                                           \
                    for (int l_ = 0; l_ < VW && kb_ + l_ < K; l_++)                              \
                        STORE_REAL(o_[l_], yp_, (long)(kb_ + l_) * ys.s1);                       \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)
