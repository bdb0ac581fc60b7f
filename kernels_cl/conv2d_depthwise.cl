/* Depthwise convolution: groups == C, K = C * m, output channel k reads
 * input channel k / m through its own R x S filter. There is no reduction
 * over channels, so the work is memory-bound (2*R*S flops per output
 * element) and each kernel is written to read its input contiguously:
 *
 *   dw_nhwc: channels are contiguous in NHWC. A work-item computes DW_VW
 *            (8 or 16) consecutive output channels (one vector) for DW_TQ
 *            consecutive output columns of one row; a filter vector is
 *            loaded once per (r, s) and used for all DW_TQ columns (one
 *            vload8 with HWIO filters, which the ONNX import uses for
 *            depthwise layers in NHWC), and a filter column whose taps
 *            lie in the image for all the block's stored columns runs
 *            with no test per tap.
 *   dw_nchw: rows are contiguous in NCHW. A work-item sweeps whole output
 *            rows of one channel (a host-chosen number of them, DW_PB at
 *            a time as independent sums where the filter size is built
 *            in) in chunks of DW_QV (8 or 16) columns; a tap's inputs are
 *            one vector load
 *            (stride 1) or the even halves of two (stride 2), and the
 *            overlapping loads of neighbouring taps and rows hit the
 *            cache. Whether a chunk's taps lie in the image is decided
 *            once per chunk. At the left and right borders the same load
 *            reaches into the neighbouring rows and the padding lanes are
 *            masked (the masks worked out once per chunk when the filter
 *            width DW_S is built in), so small images (14x14, 7x7) stay on
 *            vector loads too.
 *   dw_plane: NCHW, stride 1, output as large as the input: a work-item
 *            sweeps a whole plane (or a block of it) as one flat row of
 *            DW_QV-element chunks (see the kernel).
 *
 * Layouts enter only through element strides (xs, ws, ys: the strides of
 * the logical axes n,c,h,w / k,c,r,s / n,k,p,q), as in conv2d_direct, so
 * each kernel is correct for every layout; the `fast` flags only say when
 * a vector load or store along the contiguous axis is valid. Lanes past
 * the end of an axis compute clamped values that are never stored. */
#ifndef DW_TQ
#define DW_TQ 8
#endif

/* dw_nchw's chunk: DW_QV output columns (8, or 16 where the host sees
 * 16-float vectors: one AVX-512 register per accumulator). */
#ifndef DW_QV
#define DW_QV 8
#endif
#if DW_QV == 16
typedef float16 qv_t;
typedef int16 qvi_t;
#define QV_LOAD(p) vload16(0, (p))
#define QV_LOAD_EVEN(p) ((float16)(vload16(0, (p)).even, vload16(0, (p) + 16).even)) /* stride 2 */
#define QV_STORE(v, p) vstore16((v), 0, (p))
#define QV_IOTA ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#elif DW_QV == 8
typedef float8 qv_t;
typedef int8 qvi_t;
#define QV_LOAD(p) vload8(0, (p))
#define QV_LOAD_EVEN(p) LOAD16(0, (p)).even
#define QV_STORE(v, p) vstore8((v), 0, (p))
#define QV_IOTA ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#else
#error "DW_QV must be 8 or 16"
#endif
/* dw_nchw's and dw_plane's tensors are REAL_T (float16 and bfloat16
 * storage under -DPDNN_REAL, issue 43): XQV_LOAD, XQV_LOAD_EVEN and
 * XQV_STORE move a chunk of them through the prelude's 8-wide
 * conversions, the sums stay float; QV_LOAD and QV_STORE move the private
 * arrays. */
#if DW_QV == 16
#define XQV_LOAD(p) LOADR16(0, (p))
#define XQV_LOAD_EVEN(p) ((float16)(LOADR16(0, (p)).even, LOADR16(0, (p) + 16).even))
#define XQV_STORE(v, p) STORER16((v), 0, (p))
#else
#define XQV_LOAD(p) LOADR8(0, (p))
#define XQV_LOAD_EVEN(p) LOADR16(0, (p)).even
#define XQV_STORE(v, p) STORER8((v), 0, (p))
#endif

/* One tap's DW_QV inputs, lane i at column b + i*sw, of the row at `row`,
 * read one by one (other strides, strided rows, the first and last rows
 * of x): lanes outside [0, W) add nothing. They are skipped, not
 * multiplied by zero, so that an infinite weight in the padding stays out
 * of the sum as in the reference. */
static inline qv_t dw_tap_scalar(__global const REAL_T *x, long row, long b, int sw, int W, long xcs, float f,
                                 qv_t acc)
{
    float v[DW_QV];
    int in[DW_QV];
    for (int i = 0; i < DW_QV; i++) {
        const long iw = b + (long)i * sw;
        in[i] = iw >= 0 && iw < W ? -1 : 0;
        v[i] = in[i] ? LOAD_REAL(x, row + iw * xcs) : 0.0f;
    }
    const qvi_t ok = QV_LOAD(in);
    return select(acc, fma(QV_LOAD(v), (qv_t)(f), acc), ok);
}

/* Which lanes of a tap whose lane 0 reads column b lie in the image. */
#define DW_LANES(b) (QV_IOTA * sw + (int)(b) >= 0 && QV_IOTA * sw + (int)(b) < W)

/* dw_nchw's rows per block (DW_PB): output rows computed together where
 * all their taps lie in the image. Their partial sums (one per filter row
 * and output row) are independent chains of FMAs, which is what keeps the
 * FMA units busy: one chain of R*S dependent FMAs per chunk waits on each
 * FMA's latency, and ran at a third of the speed on PoCL (AVX-512). With
 * stride 1 the rows' loads overlap and are shared. */
#ifndef DW_PB
#define DW_PB 1
#endif

/* The channel's filter taps: kept in private registers when the filter
 * size is built in (DW_R, DW_S), else read from w. */
#ifdef DW_S
#define DW_W(r, s) wt[(r) * DW_S + (s)]
#else
#define DW_W(r, s) LOAD_REAL(w, wbase + (long)(r) * ws.s2 + (long)(s) * ws.s3)
#endif

/* One chunk of DW_QV output columns from q0 of the output row whose first
 * input row is ih0, in every case (borders included): the taps inside
 * the image, the border chunks reaching into the neighbouring rows with
 * the padding lanes masked, or per lane. */
static inline __attribute__((always_inline)) qv_t
dw_chunk(__global const REAL_T *x, __global const REAL_T *w, const float *wt, long xbase, long wbase, long4 xs, long4 ws,
         int H, int W, int R, int S, int sw, int dw, int dh, long ih0, int q0, int pl, int q_lo, long q_hi, int xrow,
         long x_off, long x_end)
{
#ifndef DW_S
    (void)wt;
#endif
    const long b0 = (long)q0 * sw - pl;
    const int inside = q0 >= q_lo && (long)q0 * sw <= q_hi;
    qv_t acc = (qv_t)(0.0f);
    /* A chunk at the border loads as inside, reaching into the
     * neighbouring rows (still inside x), and skips the padding lanes.
     * Which lanes those are depends on the column only: with the filter
     * width built in, once for all filter rows. */
    const int reach = !inside && xrow && (sw == 1 || sw == 2);
    const long reach_hi = b0 + (long)(S - 1) * dw + DW_QV * sw;
#ifdef DW_S
    qvi_t msk[DW_S];
    for (int s = 0; s < S; s++)
        msk[s] = DW_LANES(b0 + (long)s * dw);
#define DW_MASK(s) msk[s]
#else
#define DW_MASK(s) DW_LANES(b0 + (long)(s) * dw)
#endif
    for (int r = 0; r < R; r++) {
        const long ih = ih0 + (long)r * dh;
        if (ih < 0 || ih >= H)
            continue;
        const long row = xbase + ih * xs.s2;
        /* xp is formed only where it points into x (b0 < 0 at the left
         * border). */
        if (inside && sw == 1) {
            __global const REAL_T *xp = x + row + b0;
            for (int s = 0; s < S; s++)
                acc = fma(XQV_LOAD(xp + (long)s * dw), (qv_t)(DW_W(r, s)), acc);
        } else if (inside) {
            __global const REAL_T *xp = x + row + b0;
            for (int s = 0; s < S; s++)
                acc = fma(XQV_LOAD_EVEN(xp + (long)s * dw), (qv_t)(DW_W(r, s)), acc);
        } else if (reach && row + b0 >= x_off && row + reach_hi <= x_end) {
            __global const REAL_T *xp = x + row + b0;
            for (int s = 0; s < S; s++) {
                const qv_t a = sw == 1 ? XQV_LOAD(xp + (long)s * dw) : XQV_LOAD_EVEN(xp + (long)s * dw);
                acc = select(acc, fma(a, (qv_t)(DW_W(r, s)), acc), DW_MASK(s));
            }
        } else {
            for (int s = 0; s < S; s++)
                acc = dw_tap_scalar(x, row, b0 + (long)s * dw, sw, W, xs.s3, DW_W(r, s), acc);
        }
    }
#undef DW_MASK
    return acc;
}

/* Adds the bias, applies the relu (capped at as_float(relu): +inf is
 * none) and stores one chunk of an output row. */
static inline __attribute__((always_inline)) void dw_store(__global REAL_T *y, long yrowp, int q0, int Q, long ycs,
                                                          int yrow, qv_t acc, float bk, int relu)
{
    acc += (qv_t)(bk);
    if (relu)
        acc = fmin(fmax(acc, (qv_t)(0.0f)), (qv_t)(as_float(relu)));
    if (yrow && q0 + DW_QV <= Q) {
        XQV_STORE(acc, y + yrowp + q0);
    } else if (yrow) {
        /* The row's last Q - q0 columns, in halves held in registers: a
         * round trip through a private array stalled on the store
         * forwarding and took a fifth of the time at 14x14. */
        __global REAL_T *yp = y + yrowp + q0;
        int n = Q - q0;
#if DW_QV == 16
        float8 h = acc.lo;
        if (n >= 8) {
            STORER8(h, 0, yp);
            h = acc.hi;
            yp += 8;
            n -= 8;
        }
#else
        float8 h = acc;
#endif
        float4 f = h.lo;
        if (n >= 4) {
            STORER4(f, 0, yp);
            f = h.hi;
            yp += 4;
            n -= 4;
        }
        float2 t = f.lo;
        if (n >= 2) {
            STORER2(t, 0, yp);
            t = f.hi;
            yp += 2;
            n -= 2;
        }
        if (n)
            STORE_REAL(t.x, yp, 0);
    } else {
        float v[DW_QV];
        QV_STORE(acc, v);
        for (int i = 0; i < DW_QV && q0 + i < Q; i++)
            STORE_REAL(v[i], y, yrowp + (long)(q0 + i) * ycs);
    }
}

#ifdef DW_S
/* A block of DW_PB output rows for one chunk, straight-line: DW_PB * DW_R
 * independent partial sums, added at the end into o[]. LOAD reads a
 * tap's DW_QV inputs (the row's element xb0 is column 0 of the chunk's
 * first tap); TAP adds one (DW_TAP_MASKED keeps a padding lane's sum: see
 * dw_tap_scalar). A filter row in the top or bottom padding reads a row
 * of the image (clamped) and its partial sum is dropped. */
#define DW_TAP(v, f, a, s) fma((v), (qv_t)(f), (a))
#define DW_TAP_MASKED(v, f, a, s) select((a), fma((v), (qv_t)(f), (a)), msk[s])
#define DW_BLOCK(LOAD, TAP)                                                                                   \
    do {                                                                                                     \
        qv_t part[DW_PB][DW_R];                                                                              \
        _Pragma("unroll") for (int i = 0; i < DW_PB; i++)                                                     \
        _Pragma("unroll") for (int r = 0; r < DW_R; r++)                                                      \
        {                                                                                                    \
            const long ih = ih0 + (long)i * sh + (long)r * dh;                                               \
            __global const REAL_T *xr = x + (xb0 + clamp(ih, 0L, (long)H - 1) * xs.s2);                      \
            qv_t a = (qv_t)(0.0f);                                                                           \
            _Pragma("unroll") for (int s = 0; s < DW_S; s++) a = TAP(LOAD(xr + (long)s * dw), DW_W(r, s), a, s); \
            part[i][r] = ih >= 0 && ih < H ? a : (qv_t)(0.0f);                                               \
        }                                                                                                    \
        _Pragma("unroll") for (int i = 0; i < DW_PB; i++)                                                     \
        {                                                                                                    \
            o[i] = part[i][0];                                                                               \
            _Pragma("unroll") for (int r = 1; r < DW_R; r++) o[i] += part[i][r];                              \
        }                                                                                                    \
    } while (0)
#endif

/* dimension 0: blocks of pad_fast.s3 output rows; 1: n * K + k; 2: blocks
 * of cw DW_QV-column chunks. A work-item sweeps its rows of one channel in
 * chunks of DW_QV columns (whole rows on CPUs), DW_PB rows at a time where
 * all their filter rows lie in the image. Whether a chunk's taps all lie
 * inside the image is decided once per chunk, so the chunks inside (all
 * but one or two per row) run on plain vector loads with no per-tap test,
 * and the per-work-item setup is spread over whole rows.
 * fast: s0 x rows are contiguous (w stride 1), s2 y rows likewise. */
__kernel void dw_nchw(__global const REAL_T *x, long x_off,
                      __global const REAL_T *w, long w_off,
                      __global const REAL_T *bias, long b_off,
                      __global REAL_T *y, long y_off,
                      long4 xs, long4 ws, long4 ys,
                      int4 in_dims,  /* N, C, H, W               */
                      int4 out_dims, /* K, P, Q, multiplier m    */
                      int4 filt,     /* R, S, has bias, relu word */
                      int4 geom,     /* stride h, w, dilation h, w */
                      int4 pad_fast, /* pad top, pad left, fast flags, rows per work-item */
                      long x_end,    /* x_off + elements of x */
                      int cw)        /* DW_QV-column chunks per work-item */
{
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, m = out_dims.s3, TP = pad_fast.s3;
    const int p0 = (int)get_global_id(0) * TP;
    const long nk = (long)get_global_id(1);
    const int qb = (int)get_global_id(2) * cw * DW_QV;
    const int qe = Q - qb < cw * DW_QV ? Q : qb + cw * DW_QV;
    if (p0 >= P || nk >= (long)in_dims.s0 * K || qb >= Q)
        return;
    const long n = nk / K;
    const int k = (int)(nk % K);
#ifdef DW_S /* the filter size, known when the program was built: the tap loops unroll */
    const int H = in_dims.s2, W = in_dims.s3, R = DW_R, S = DW_S;
#else
    const int H = in_dims.s2, W = in_dims.s3, R = filt.s0, S = filt.s1;
#endif
    const int sh = geom.s0, sw = geom.s1, dh = geom.s2, dw = geom.s3;
    const int xrow = pad_fast.s2 & 1, yrow = pad_fast.s2 & 4;
    const long xbase = x_off + n * xs.s0 + (long)(k / m) * xs.s1;
    const long wbase = w_off + (long)k * ws.s0;
    const long ybase = y_off + n * ys.s0 + (long)k * ys.s1;
    const float bk = filt.s2 ? LOAD_REAL(bias, b_off + k) : 0.0f;
#ifdef DW_S
    float wt[DW_R * DW_S];
    for (int r = 0; r < DW_R; r++)
        for (int s = 0; s < DW_S; s++)
            wt[r * DW_S + s] = LOAD_REAL(w, wbase + (long)r * ws.s2 + (long)s * ws.s3);
#else
    const float *wt = NULL;
#endif
    /* Chunks whose every tap reads inside the row: lane 0's first input
     * column b0 = q0*sw - pad >= 0 and the last load's end
     * b0 + (S-1)*dw + DW_QV*sw <= W, i.e. q0 in [q_lo, q_hi]. */
    const int pl = pad_fast.s1;
    const int q_lo = (pl + sw - 1) / sw;
    const long q_hi = xrow && (sw == 1 || sw == 2) ? (long)W - (long)(S - 1) * dw - DW_QV * sw + pl : -1;
    const int pe = P - p0 < TP ? P : p0 + TP;
    for (int p = p0; p < pe;) {
        const long ih0 = (long)p * sh - pad_fast.s0;
#ifdef DW_S
        {
            /* A block of DW_PB rows from p; rows from pe on (a work-item's
             * last block) are computed and not stored. The first and last
             * image rows it reads (clamped, as its loads are). */
            const long ih_lo = clamp(ih0, 0L, (long)H - 1);
            const long ih_hi = clamp(ih0 + (long)(DW_PB - 1) * sh + (long)(DW_R - 1) * dh, 0L, (long)H - 1);
            for (int q0 = qb; q0 < qe; q0 += DW_QV) {
                qv_t o[DW_PB];
                const long b0 = (long)q0 * sw - pl, xb0 = xbase + b0;
                if (q0 >= q_lo && (long)q0 * sw <= q_hi) {
                    /* Every tap inside the image's rows (sw is 1 or 2 here:
                     * see q_hi). */
                    if (sw == 1)
                        DW_BLOCK(XQV_LOAD, DW_TAP);
                    else
                        DW_BLOCK(XQV_LOAD_EVEN, DW_TAP);
                } else if (xrow && (sw == 1 || sw == 2) && xb0 + ih_lo * xs.s2 >= x_off &&
                           xb0 + ih_hi * xs.s2 + (long)(DW_S - 1) * dw + DW_QV * sw <= x_end) {
                    /* A border chunk: the loads reach into the neighbouring
                     * rows (inside x) and the padding lanes are masked. */
                    qvi_t msk[DW_S];
#pragma unroll
                    for (int s = 0; s < DW_S; s++)
                        msk[s] = DW_LANES(b0 + (long)s * dw);
                    if (sw == 1)
                        DW_BLOCK(XQV_LOAD, DW_TAP_MASKED);
                    else
                        DW_BLOCK(XQV_LOAD_EVEN, DW_TAP_MASKED);
                } else {
#pragma unroll
                    for (int i = 0; i < DW_PB; i++)
                        o[i] = dw_chunk(x, w, wt, xbase, wbase, xs, ws, H, W, R, S, sw, dw, dh, ih0 + (long)i * sh,
                                        q0, pl, q_lo, q_hi, xrow, x_off, x_end);
                }
#pragma unroll
                for (int i = 0; i < DW_PB; i++)
                    if (p + i < pe)
                        dw_store(y, ybase + (long)(p + i) * ys.s2, q0, Q, ys.s3, yrow, o[i], bk, filt.s3);
            }
            p += DW_PB;
        }
#else
        for (int q0 = qb; q0 < qe; q0 += DW_QV)
            dw_store(y, ybase + (long)p * ys.s2, q0, Q, ys.s3, yrow,
                     dw_chunk(x, w, wt, xbase, wbase, xs, ws, H, W, R, S, sw, dw, dh, ih0, q0, pl, q_lo, q_hi, xrow,
                              x_off, x_end),
                     bk, filt.s3);
        p++;
#endif
    }
}

#ifdef DW_S
/* dw_plane: NCHW, stride 1, output as large as the input (P == H, Q == W:
 * "same" padding) and whole planes contiguous. Output element o = p*W + q
 * of a plane then reads input element o + (r*dh - pad top)*W + (s*dw -
 * pad left) for tap (r, s), wherever the tap's column lies in the image;
 * and then that flat index lies in the plane exactly when the tap's row
 * lies in the image. So the plane is swept as one flat row in chunks of
 * DW_QV: a tap is one vector load, rows of 7 or 14 columns leave no lanes
 * idle and cost no partial store each, and only the column masks (from
 * the lanes' columns, worked out per chunk from its first element)
 * and, near the top and bottom, the row masks change from chunk to chunk.
 * On MobileNetV2's 14x14 and 7x7 layers dw_nchw's per-row work took
 * about three times ONNX Runtime's time.
 *
 * dimension 1: n * K + k; 2: blocks of cw chunks of the plane. */
__kernel void dw_plane(__global const REAL_T *x, long x_off,
                       __global const REAL_T *w, long w_off,
                       __global const REAL_T *bias, long b_off,
                       __global REAL_T *y, long y_off,
                       long4 xs, long4 ws, long4 ys,
                       int4 in_dims,  /* N, C, H, W               */
                       int4 out_dims, /* K, P, Q, multiplier m    */
                       int4 filt,     /* R, S, has bias, relu word */
                       int4 geom,     /* stride h, w (1), dilation h, w */
                       int4 pad_fast, /* pad top, pad left, fast flags, unused */
                       long x_end,    /* x_off + elements of x */
                       int cw)        /* DW_QV-element chunks per work-item */
{
    const int K = out_dims.s0, m = out_dims.s3, H = in_dims.s2, W = in_dims.s3, HW = H * W;
    const long nk = (long)get_global_id(1);
    const int ob = (int)get_global_id(2) * cw * DW_QV;
    if (nk >= (long)in_dims.s0 * K || ob >= HW)
        return;
    const int oe = HW - ob < cw * DW_QV ? HW : ob + cw * DW_QV;
    const long n = nk / K;
    const int k = (int)(nk % K);
    const int dh = geom.s2, dw = geom.s3, pt = pad_fast.s0, pl = pad_fast.s1;
    const long xbase = x_off + n * xs.s0 + (long)(k / m) * xs.s1;
    const long wbase = w_off + (long)k * ws.s0;
    const long ybase = y_off + n * ys.s0 + (long)k * ys.s1;
    const float bk = filt.s2 ? LOAD_REAL(bias, b_off + k) : 0.0f;
    float wt[DW_R * DW_S];
    for (int r = 0; r < DW_R; r++)
        for (int s = 0; s < DW_S; s++)
            wt[r * DW_S + s] = LOAD_REAL(w, wbase + (long)r * ws.s2 + (long)s * ws.s3);
    /* The flat offsets of the first and last taps: the extremes any
     * chunk's loads reach. */
    const int off_lo = -pt * W - pl, off_hi = ((DW_R - 1) * dh - pt) * W + (DW_S - 1) * dw - pl;
    for (int o0 = ob; o0 < oe; o0 += DW_QV) {
        /* Each lane's row and column, from the chunk's first element. Not
         * carried from the previous chunk (q += DW_QV % W, one wrap): under
         * Oclgrind that carry left lanes with a wrong row and column from a
         * work-item's second chunk on (20x37 planes, 2 chunks an item:
         * output (19,0) never stored), where this form is right. */
        qvi_t j = (qvi_t)(o0 / W), q = QV_IOTA + o0 % W;
        for (qvi_t wrap = q >= W; any(wrap); wrap = q >= W) {
            q = select(q, q - W, wrap);
            j -= wrap; /* a true comparison is -1 */
        }
        qvi_t col[DW_S];
        _Pragma("unroll") for (int s = 0; s < DW_S; s++)
        {
            const qvi_t c = q + (s * dw - pl);
            col[s] = c >= 0 && c < W;
        }
        __global const REAL_T *xp = x + (xbase + o0);
        const qv_t zero = (qv_t)(0.0f);
        qv_t part[DW_R];
        if (o0 + off_lo >= 0 && o0 + (DW_QV - 1) + off_hi < HW) {
            /* Every tap's load inside the plane: only the columns masked. */
            _Pragma("unroll") for (int r = 0; r < DW_R; r++)
            {
                qv_t a = zero;
                _Pragma("unroll") for (int s = 0; s < DW_S; s++) a =
                    select(a, fma(XQV_LOAD(xp + ((r * dh - pt) * W + s * dw - pl)), (qv_t)(DW_W(r, s)), a), col[s]);
                part[r] = a;
            }
        } else if (xbase + o0 + off_lo >= x_off && xbase + o0 + (DW_QV - 1) + off_hi < x_end) {
            /* Near the top or bottom: the loads reach into the neighbouring
             * planes (inside x) and the rows outside the image are masked. */
            _Pragma("unroll") for (int r = 0; r < DW_R; r++)
            {
                const qvi_t row = j + (r * dh - pt);
                const qvi_t in = row >= 0 && row < H;
                qv_t a = zero;
                _Pragma("unroll") for (int s = 0; s < DW_S; s++) a =
                    select(a, fma(XQV_LOAD(xp + ((r * dh - pt) * W + s * dw - pl)), (qv_t)(DW_W(r, s)), a),
                           in & col[s]);
                part[r] = a;
            }
        } else {
            /* At the ends of x: lane by lane, each load only where its tap
             * lies in the image (and so in the plane). */
            _Pragma("unroll") for (int r = 0; r < DW_R; r++)
            {
                const qvi_t row = j + (r * dh - pt);
                const qvi_t in = row >= 0 && row < H;
                qv_t a = zero;
                for (int s = 0; s < DW_S; s++) {
                    const qvi_t ok = in & col[s];
                    const long off = (long)(r * dh - pt) * W + s * dw - pl;
                    int okl[DW_QV];
                    float v[DW_QV];
                    QV_STORE(ok, okl);
                    for (int i = 0; i < DW_QV; i++)
                        v[i] = okl[i] ? LOAD_REAL(x, xbase + o0 + i + off) : 0.0f;
                    a = select(a, fma(QV_LOAD(v), (qv_t)(DW_W(r, s)), a), ok);
                }
                part[r] = a;
            }
        }
        qv_t acc = part[0];
        _Pragma("unroll") for (int r = 1; r < DW_R; r++) acc += part[r];
        dw_store(y, ybase, o0, oe, 1, 1, acc, bk, filt.s3);
    }
}
#endif

/* dw_nhwc's channel vectors: DW_VW lanes (8, or 16 where the host sees
 * 16-float vectors and K is whole vectors of 16). The float16 operations
 * go through float8 halves on x86 without AVX-512, as in LOAD16. */
#ifndef DW_VW
#define DW_VW 8
#endif
#if DW_VW == 16
typedef float16 dwv_t;
#if defined(__x86_64__) && !defined(__AVX512F__)
#define DW_STORE(v, p) (vstore8((v).lo, 0, (p)), vstore8((v).hi, 0, (p) + 8))
#define DW_FMA(a, b, c) ((float16)(fma((a).lo, (b).lo, (c).lo), fma((a).hi, (b).hi, (c).hi)))
#define DW_CAP(v, cap) ((float16)(fmin(fmax((v).lo, (float8)(0.0f)), (float8)(cap)), fmin(fmax((v).hi, (float8)(0.0f)), (float8)(cap))))
#else
#define DW_STORE(v, p) vstore16((v), 0, (p))
#define DW_FMA fma
#define DW_CAP(v, cap) fmin(fmax((v), (float16)(0.0f)), (float16)(cap))
#endif
#define DW_LOAD(p) LOAD16(0, (p))
#define DW_GLOAD(p) LOADR16(0, (p))
#define DW_GSTORE(v, p) STORER16((v), 0, (p))
#elif DW_VW == 8
typedef float8 dwv_t;
#define DW_LOAD(p) vload8(0, (p))
#define DW_STORE(v, p) vstore8((v), 0, (p))
#define DW_GLOAD(p) LOADR8(0, (p))
#define DW_GSTORE(v, p) STORER8((v), 0, (p))
#define DW_FMA fma
#define DW_CAP(v, cap) fmin(fmax((v), (float8)(0.0f)), (float8)(cap))
#else
#error "DW_VW must be 8 or 16"
#endif

/* dimension 0: blocks of DW_VW output channels; 1: blocks of DW_TQ output
 * columns; 2: n * P + p. fast: s0 x reads DW_VW channels with one vector
 * load (m == 1, channel stride 1), s1 likewise for the filter (k stride 1:
 * HWIO), s2 for y (channel stride 1: NHWC). The accumulators are indexed
 * by constants only (unrolled column loops; a tap outside the image keeps
 * the old sum by a select, it does not skip), so that they stay in
 * registers: with a skip per column they lived on the stack and the
 * kernel ran at a third of ONNX Runtime's speed. The tensors are REAL_T
 * (float16 and bfloat16 storage: DW_GLOAD and DW_GSTORE widen and round;
 * DW_LOAD and DW_STORE move the private float arrays). */
__kernel void dw_nhwc(__global const REAL_T *x, long x_off,
                      __global const REAL_T *w, long w_off,
                      __global const REAL_T *bias, long b_off,
                      __global REAL_T *y, long y_off,
                      long4 xs, long4 ws, long4 ys,
                      int4 in_dims,  /* N, C, H, W               */
                      int4 out_dims, /* K, P, Q, multiplier m    */
                      int4 filt,     /* R, S, has bias, relu word */
                      int4 geom,     /* stride h, w, dilation h, w */
                      int4 pad_fast, /* pad top, pad left, fast flags (bits 0..2) */
                      long x_end)    /* x_off + elements of x */
{
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, m = out_dims.s3;
    const int k0 = (int)get_global_id(0) * DW_VW, q0 = (int)get_global_id(1) * DW_TQ;
    const long np = (long)get_global_id(2);
    if (k0 >= K || q0 >= Q || np >= (long)in_dims.s0 * P)
        return;
    const long n = np / P;
    const int p = (int)(np % P);
    const int H = in_dims.s2, W = in_dims.s3, R = filt.s0, S = filt.s1;
    const int full = k0 + DW_VW <= K;
    const int xv = full && (pad_fast.s2 & 1), wv = full && (pad_fast.s2 & 2), yv = full && (pad_fast.s2 & 4);
    /* Element offsets of each lane's input channel and filter, clamped to
     * the last channel so that tail lanes read inside the tensors; only for
     * the per-lane paths (a division per lane). */
    long xc[DW_VW], wk[DW_VW];
    if (!xv || !wv)
        for (int i = 0; i < DW_VW; i++) {
            const int k = min(k0 + i, K - 1);
            xc[i] = (long)(k / m) * xs.s1;
            wk[i] = (long)k * ws.s0;
        }
    dwv_t acc[DW_TQ];
#pragma unroll
    for (int t = 0; t < DW_TQ; t++)
        acc[t] = (dwv_t)(0.0f);
    const long ih0 = (long)p * geom.s0 - pad_fast.s0;
    const long iw0 = (long)q0 * geom.s1 - pad_fast.s1;
    /* The columns stored: a last block past Q computes the rest and
     * drops them. */
    const int nv = Q - q0 < DW_TQ ? Q - q0 : DW_TQ;
    for (int r = 0; r < R; r++) {
        const long ih = ih0 + (long)r * geom.s2;
        if (ih < 0 || ih >= H)
            continue;
        const long row = x_off + n * xs.s0 + ih * xs.s2;
        for (int s = 0; s < S; s++) {
            const long wrs = w_off + (long)r * ws.s2 + (long)s * ws.s3;
            dwv_t f;
            if (wv) {
                f = DW_GLOAD(w + wrs + k0);
            } else {
                float v[DW_VW];
                for (int i = 0; i < DW_VW; i++)
                    v[i] = LOAD_REAL(w, wrs + wk[i]);
                f = DW_LOAD(v);
            }
            /* A filter column whose taps all lie in the image for the
             * stored columns runs with no test per tap, as one index: the
             * columns dropped may read past the row (the next one's
             * pixels, inside x). At 14x14 and 7x7 every block has a
             * border, and the per-tap path made it 1.6-2x ONNX Runtime's
             * time. */
            const long iws = iw0 + (long)s * geom.s3;
            if (xv && iws >= 0 && iws + (long)(nv - 1) * geom.s1 < W &&
                row + (iws + (long)(DW_TQ - 1) * geom.s1) * xs.s3 + k0 + DW_VW <= x_end) {
                __global const REAL_T *xp = x + row + iws * xs.s3 + k0;
                const long step = (long)geom.s1 * xs.s3;
#pragma unroll
                for (int t = 0; t < DW_TQ; t++)
                    acc[t] = DW_FMA(DW_GLOAD(xp + t * step), f, acc[t]);
                continue;
            }
#pragma unroll
            for (int t = 0; t < DW_TQ; t++) {
                /* A column outside the image reads column 0 (valid
                 * memory) and keeps acc[t]: it adds nothing, not a zero
                 * times the weight, so that an infinite weight in the
                 * padding stays out of the sum as in the reference. */
                const long iw = iw0 + (long)t * geom.s1 + (long)s * geom.s3;
                const int in = iw >= 0 && iw < W;
                const long pix = row + (in ? iw : 0) * xs.s3;
                dwv_t a;
                if (xv) {
                    a = DW_GLOAD(x + pix + k0);
                } else {
                    float v[DW_VW];
                    for (int i = 0; i < DW_VW; i++)
                        v[i] = LOAD_REAL(x, pix + xc[i]);
                    a = DW_LOAD(v);
                }
                const dwv_t sum = DW_FMA(a, f, acc[t]);
                acc[t] = in ? sum : acc[t];
            }
        }
    }
    dwv_t b = (dwv_t)(0.0f);
    if (filt.s2) {
        float v[DW_VW];
        for (int i = 0; i < DW_VW; i++)
            v[i] = LOAD_REAL(bias, b_off + min(k0 + i, K - 1));
        b = DW_LOAD(v);
    }
    const long ybase = y_off + n * ys.s0 + (long)p * ys.s2;
#pragma unroll
    for (int t = 0; t < DW_TQ; t++) {
        if (q0 + t < Q) {
            dwv_t o = acc[t] + b;
            if (filt.s3) /* the relu, capped at as_float(filt.s3) (+inf: none) */
                o = DW_CAP(o, as_float(filt.s3));
            const long yq = ybase + (long)(q0 + t) * ys.s3;
            if (yv) {
                DW_GSTORE(o, y + yq + k0);
            } else {
                float v[DW_VW];
                DW_STORE(o, v);
                for (int i = 0; i < DW_VW && k0 + i < K; i++)
                    STORE_REAL(v[i], y, yq + (long)(k0 + i) * ys.s1);
            }
        }
    }
}
