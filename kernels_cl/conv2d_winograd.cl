/* Winograd F(4x4, 3x3) convolution: 3x3 filters, stride 1, dilation 1,
 * groups 1 (Lavin & Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2015). Each 4x4 block of output pixels (a tile) comes from a
 * 6x6 block of input: Y = A^T [ sum_c (G g G^T) .* (B^T d B) ] A, which
 * takes 36 multiplies per tile, channel pair instead of 144.
 *
 * Four kernels, one pass each (cl_winograd.c enqueues them):
 *   wino_filter  U[e][c][k]  = (G g_kc G^T)[e]             once per call,
 *                                                         or once for a frozen filter
 *   wino_input   V[e][t][c]  = (B^T d_ct B)[e]             per tile chunk
 *   wino_gemm    M[e][t][k]  = sum_c U[e][c][k] V[e][t][c] 36 GEMMs
 *   wino_output  y[n,k,p,q]  = epilogue((A^T M_kt A))     through y's strides
 * The transforms run 16 channels per work-item, as 16-float vectors:
 * V and M hold channels contiguously, and so does x or y in NHWC (one
 * vector load or store per pixel; other layouts gather and scatter).
 * e = 0..35 is the transform element (row-major 6x6), t a tile of the
 * current chunk (tiles of the whole batch in n, tile-row, tile-column
 * order, chunked so the workspace stays bounded), k is padded to Kp, a
 * multiple of KV, and the chunk's tile count to Tp, a multiple of TT
 * (the GEMM's register tile), so the GEMM needs no bounds checks within
 * a work-item; planes are PLANE_PAD floats longer than their contents. */
#ifndef TT
#define TT 8
#endif
/* Floats between consecutive transform-element planes beyond their size:
 * the planes are often a power of two long, and a work-item's 36 reads or
 * writes one plane apart would then fall into one cache set. */
#ifndef PLANE_PAD
#define PLANE_PAD 16
#endif
#ifndef KB
#define KB 1
#endif
#define KV (16 * KB)

/* 16 floats s apart gathered into a vector, and a vector scattered to
 * 16 places s apart, lane by lane in registers: through a private array
 * each vector stalled on store forwarding, which made NCHW's transforms
 * (channels one plane apart) about twice NHWC's time. */
/* Each element through LD(p, i) or ST(v, p, i) (the prelude's F32_LOAD,
 * LOAD_REAL, ...: the tensors' storage, issue 43). */
#define GATHER16_BY(LD, p, s)                                                                                     \
    ((float16)(LD(p, 0), LD(p, (s)), LD(p, 2 * (s)), LD(p, 3 * (s)), LD(p, 4 * (s)), LD(p, 5 * (s)),           \
               LD(p, 6 * (s)), LD(p, 7 * (s)), LD(p, 8 * (s)), LD(p, 9 * (s)), LD(p, 10 * (s)), LD(p, 11 * (s)), \
               LD(p, 12 * (s)), LD(p, 13 * (s)), LD(p, 14 * (s)), LD(p, 15 * (s))))
#define SCATTER16_BY(ST, v, p, s)                                                                                 \
    do {                                                                                                          \
        ST((v).s0, p, 0), ST((v).s1, p, (s)), ST((v).s2, p, 2 * (s)), ST((v).s3, p, 3 * (s));                     \
        ST((v).s4, p, 4 * (s)), ST((v).s5, p, 5 * (s)), ST((v).s6, p, 6 * (s)), ST((v).s7, p, 7 * (s));           \
        ST((v).s8, p, 8 * (s)), ST((v).s9, p, 9 * (s)), ST((v).sa, p, 10 * (s)), ST((v).sb, p, 11 * (s));         \
        ST((v).sc, p, 12 * (s)), ST((v).sd, p, 13 * (s)), ST((v).se, p, 14 * (s)), ST((v).sf, p, 15 * (s));       \
    } while (0)

/* float16 and bfloat16 storage (-DPDNN_REAL, issue 43): the filter and
 * the transforms, the GEMM and M stay float32; wino_output reads the
 * bias and z and writes y as REAL_T, rounding once at the store; and
 * wino_input reads x as REAL_T (XIN_T: 16-channel vectors where x is
 * NHWC), or as float where the host widened it first (-DWINO_XF: other
 * layouts, whose per-channel gathers would each be a scalar conversion). */
#if defined(PDNN_REAL) && !defined(WINO_XF)
#define XIN_T REAL_T
#define XLOAD LOAD_REAL
#define XLOAD16 LOADR16
#else
#define XIN_T float
#define XLOAD F32_LOAD
#define XLOAD16 LOAD16
#endif

/* G g for one column g0..g2 of a 3x3 filter (6 values). */
#define WINO_G(g0, g1, g2, u)                                                                                     \
    do {                                                                                                          \
        (u)[0] = (g0) * 0.25f;                                                                                    \
        (u)[1] = ((g0) + (g1) + (g2)) * (-1.0f / 6.0f);                                                           \
        (u)[2] = ((g0) - (g1) + (g2)) * (-1.0f / 6.0f);                                                           \
        (u)[3] = (g0) * (1.0f / 24.0f) + (g1) * (1.0f / 12.0f) + (g2) * (1.0f / 6.0f);                            \
        (u)[4] = (g0) * (1.0f / 24.0f) - (g1) * (1.0f / 12.0f) + (g2) * (1.0f / 6.0f);                            \
        (u)[5] = (g2);                                                                                            \
    } while (0)

/* B^T d for one column d0..d5 (6 values). */
#define WINO_BT(d0, d1, d2, d3, d4, d5, r)                                                                        \
    do {                                                                                                          \
        (r)[0] = 4.0f * (d0) - 5.0f * (d2) + (d4);                                                                \
        (r)[1] = -4.0f * ((d1) + (d2)) + (d3) + (d4);                                                             \
        (r)[2] = 4.0f * ((d1) - (d2)) - (d3) + (d4);                                                              \
        (r)[3] = 2.0f * ((d3) - (d1)) - (d2) + (d4);                                                              \
        (r)[4] = 2.0f * ((d1) - (d3)) - (d2) + (d4);                                                              \
        (r)[5] = 4.0f * (d1) - 5.0f * (d3) + (d5);                                                                \
    } while (0)

/* A^T m for one column m0..m5 (4 values of type T: float or float16). */
#define WINO_AT(T, m0, m1, m2, m3, m4, m5, o)                                                                     \
    do {                                                                                                          \
        const T a_ = (m1) + (m2), b_ = (m1) - (m2), c_ = (m3) + (m4), d_ = (m3) - (m4);                           \
        (o)[0] = (m0) + a_ + c_;                                                                                  \
        (o)[1] = b_ + 2.0f * d_;                                                                                  \
        (o)[2] = a_ + 4.0f * c_;                                                                                  \
        (o)[3] = b_ + 8.0f * d_ + (m5);                                                                           \
    } while (0)

/* One work-item per input channel and 16 output channels: dimension 0
 * the channel c (so that a work-group's reads share cache lines in every
 * filter layout), 1 the block of 16 k. The taps of 16 k are one vector
 * load where k is contiguous (HWIO), else gathered; k >= K reads the last
 * filter and is stored as zeros, so the GEMM's padded channels produce
 * zeros. ws: the filter's strides of K, C, R, S. */
__kernel void wino_filter(__global const float *w, long w_off, long4 ws,
                          __global float *U, long u_off,
                          int4 dims) /* C, K, Kp, - */
{
    const int c = (int)get_global_id(0), k = (int)get_global_id(1) * 16;
    const int C = dims.s0, K = dims.s1, Kp = dims.s2;
    if (c >= C || k >= Kp)
        return;
    const long plane = (long)C * Kp + PLANE_PAD;
    __global float *u = U + u_off + (long)c * Kp + k;
    const int vec = k + 16 <= K && ws.s0 == 1;
    __global const float *wc = w + w_off + (long)c * ws.s1 + (long)k * ws.s0;
    float16 g[3][3];
#pragma unroll
    for (int r = 0; r < 3; r++)
#pragma unroll
        for (int s = 0; s < 3; s++) {
            __global const float *pw = wc + (long)r * ws.s2 + (long)s * ws.s3;
            if (vec) {
                g[r][s] = LOAD16(0, pw);
            } else {
                float l[16];
                for (int i = 0; i < 16; i++)
                    l[i] = pw[(long)min(i, K - 1 - k) * ws.s0];
                g[r][s] = LOAD16(0, l);
            }
        }
    /* Lanes past K: zeros. */
    float l[16];
    for (int i = 0; i < 16; i++)
        l[i] = k + i < K ? 1.0f : 0.0f;
    const float16 live = LOAD16(0, l);
    float16 t[6][3]; /* G g */
#pragma unroll
    for (int s = 0; s < 3; s++) {
        float16 col[6];
        WINO_G(g[0][s], g[1][s], g[2][s], col);
#pragma unroll
        for (int a = 0; a < 6; a++)
            t[a][s] = col[a];
    }
#pragma unroll
    for (int a = 0; a < 6; a++) { /* (G g) G^T, row a */
        float16 row[6];
        WINO_G(t[a][0], t[a][1], t[a][2], row);
#pragma unroll
        for (int b = 0; b < 6; b++)
            STORE16(row[b] * live, 0, u + (a * 6 + b) * plane);
    }
}

/* The 36 GEMMs, register-tiled as in conv2d_tiled.cl: a work-item holds
 * KB float16 blocks of output channels for TT tiles of one transform
 * element, TT * KB vector accumulators; each step over c loads KB x 16
 * contiguous values of U and TT contiguous values of V and does
 * 16 x KB x TT multiply-adds. Dimension 0: channel blocks, 1: tile blocks,
 * 2: transform element. */
__kernel void wino_gemm(__global const float *U, long u_off,
                        __global const float *V, long v_off,
                        __global float *M, long m_off,
                        int4 dims) /* C, Kp, Tp, - */
{
    const int kb = (int)get_global_id(0), tb = (int)get_global_id(1), e = (int)get_global_id(2);
    const int C = dims.s0, Kp = dims.s1, Tp = dims.s2;
    if (kb * KV >= Kp || tb * TT >= Tp) /* the grid is rounded up to whole work-groups */
        return;
    __global const float *u = U + u_off + (long)e * ((long)C * Kp + PLANE_PAD) + (long)kb * KV;
    __global const float *v = V + v_off + (long)e * ((long)C * Tp + PLANE_PAD) + (long)tb * TT * C;
    float16 acc[KB][TT];
#pragma unroll
    for (int b = 0; b < KB; b++)
#pragma unroll
        for (int j = 0; j < TT; j++)
            acc[b][j] = (float16)(0.0f);
    for (int c = 0; c < C; c++) {
        float16 wv[KB];
#pragma unroll
        for (int b = 0; b < KB; b++)
            wv[b] = LOAD16(b, u + (long)c * Kp);
        __global const float *vc = v + c;
#pragma unroll
        for (int j = 0; j < TT; j++) {
            const float16 xv = (float16)(vc[(long)j * C]);
#pragma unroll
            for (int b = 0; b < KB; b++)
                acc[b][j] = FMA16(xv, wv[b], acc[b][j]);
        }
    }
    __global float *m = M + m_off + (long)e * ((long)Tp * Kp + PLANE_PAD) + (long)tb * TT * Kp + (long)kb * KV;
#pragma unroll
    for (int j = 0; j < TT; j++)
#pragma unroll
        for (int b = 0; b < KB; b++)
            STORE16(acc[b][j], b, m + (long)j * Kp);
}

/* One work-item per 16 channels of a tile: dimension 0 the channel
 * block, 1 the tile of the chunk. A pixel's 16 channels are one vector
 * load where x's channels are contiguous (NHWC) and C is whole blocks,
 * else gathered lane by lane (channels past C read the last one; their
 * lanes are not stored). Tiles past the chunk's end (up to Tp) are
 * written as zeros. */
__kernel void wino_input(__global const XIN_T *x, long x_off, long4 xs,
                         __global float *V, long v_off,
                         int4 in_dims, /* N, C, H, W */
                         int4 tiles,   /* tile rows, tile columns per image, pad top, pad left */
                         long t0,      /* first tile of the chunk */
                         int4 chunk)   /* tiles in the chunk, Tp, -, - */
{
    const int c = (int)get_global_id(0) * 16, t = (int)get_global_id(1);
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3, Tp = chunk.s1;
    if (t >= Tp || c >= C)
        return;
    const long plane = (long)C * Tp + PLANE_PAD;
    const int full = c + 16 <= C, vec = full && xs.s1 == 1;
    __global float *v = V + v_off + (long)t * C + c;
    float16 r[6][6]; /* B^T d, a column at a time; then (B^T d) B */
    if (t >= chunk.s0) {
#pragma unroll
        for (int a = 0; a < 6; a++)
#pragma unroll
            for (int b = 0; b < 6; b++)
                r[a][b] = (float16)(0.0f);
    } else {
        const long tg = t0 + t, per_image = (long)tiles.s0 * tiles.s1;
        const long n = tg / per_image;
        const int tr = (int)(tg % per_image);
        const int h0 = (tr / tiles.s1) * 4 - tiles.s2, w0 = (tr % tiles.s1) * 4 - tiles.s3;
        __global const XIN_T *xb = x + x_off + n * xs.s0 + (long)c * xs.s1;
#pragma unroll
        for (int b = 0; b < 6; b++) {
            const int wc = w0 + b, win = wc >= 0 && wc < W;
            float16 d[6];
#pragma unroll
            for (int a = 0; a < 6; a++) {
                const int h = h0 + a;
                __global const XIN_T *px = xb + (long)h * xs.s2 + (long)wc * xs.s3;
                if (!win || h < 0 || h >= H) {
                    d[a] = (float16)(0.0f);
                } else if (vec) {
                    d[a] = XLOAD16(0, px);
                } else if (full) {
                    d[a] = GATHER16_BY(XLOAD, px, xs.s1);
                } else {
                    float l[16];
                    for (int i = 0; i < 16; i++)
                        l[i] = XLOAD(px, (long)min(i, C - 1 - c) * xs.s1);
                    d[a] = LOAD16(0, l);
                }
            }
            float16 col[6];
            WINO_BT(d[0], d[1], d[2], d[3], d[4], d[5], col);
#pragma unroll
            for (int a = 0; a < 6; a++)
                r[a][b] = col[a];
        }
#pragma unroll
        for (int a = 0; a < 6; a++) {
            float16 row[6];
            WINO_BT(r[a][0], r[a][1], r[a][2], r[a][3], r[a][4], r[a][5], row);
#pragma unroll
            for (int b = 0; b < 6; b++)
                r[a][b] = row[b];
        }
    }
#pragma unroll
    for (int a = 0; a < 6; a++)
#pragma unroll
        for (int b = 0; b < 6; b++) {
            __global float *pv = v + (a * 6 + b) * plane;
            if (full) {
                STORE16(r[a][b], 0, pv);
            } else {
                float l[16];
                STORE16(r[a][b], 0, l);
                for (int i = 0; c + i < C; i++)
                    pv[i] = l[i];
            }
        }
}

/* One work-item per 16 output channels of a tile: dimension 0 the
 * channel block, 1 the tile of the chunk. M[e][t][k] is read as 16-float
 * vectors (Kp is whole blocks); a pixel's 16 channels are one vector
 * store where y's channels are contiguous (NHWC) and K is whole blocks,
 * else stored lane by lane, with the bias, the residual z (y's strides)
 * and the relu, capped at as_float(relu word) (+inf: no cap). */
__kernel void wino_output(__global const float *M, long m_off,
                          __global const REAL_T *bias, long b_off,
                          __global REAL_T *y, long y_off, long4 ys,
                          __global const REAL_T *z, long z_off,
                          int4 out_dims, /* K, P, Q, Kp */
                          int4 tiles,    /* tile rows, tile columns per image, has bias, relu word */
                          long t0,       /* first tile of the chunk */
                          int4 chunk)    /* tiles in the chunk, Tp, -, has z */
{
    const int k = (int)get_global_id(0) * 16, t = (int)get_global_id(1);
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, Kp = out_dims.s3, Tp = chunk.s1;
    if (k >= K || t >= chunk.s0)
        return;
    const long plane = (long)Tp * Kp + PLANE_PAD;
    __global const float *m = M + m_off + (long)t * Kp + k;
    float16 r[4][6]; /* A^T M, a column at a time */
#pragma unroll
    for (int b = 0; b < 6; b++) {
        float16 mm[6], col[4];
#pragma unroll
        for (int a = 0; a < 6; a++)
            mm[a] = LOAD16(0, m + (a * 6 + b) * plane);
        WINO_AT(float16, mm[0], mm[1], mm[2], mm[3], mm[4], mm[5], col);
#pragma unroll
        for (int a = 0; a < 4; a++)
            r[a][b] = col[a];
    }
    const long tg = t0 + t, per_image = (long)tiles.s0 * tiles.s1;
    const long n = tg / per_image;
    const int tr = (int)(tg % per_image);
    const int p0 = (tr / tiles.s1) * 4, q0 = (tr % tiles.s1) * 4;
    const int vec = k + 16 <= K && ys.s1 == 1, relu = tiles.s3;
    float16 bv = (float16)(0.0f);
    if (tiles.s2) {
        float l[16];
        for (int i = 0; i < 16; i++)
            l[i] = LOAD_REAL(bias, b_off + min(k + i, K - 1));
        bv = LOAD16(0, l);
    }
    const long base = n * ys.s0 + (long)k * ys.s1;
    /* Output rows contiguous (NCHW) and a whole tile of 16 channels: each
     * channel's 4 columns of a row are one float4 store, where a pixel's
     * 16 channels would be 16 stores a plane apart. */
    const int rows4 = ys.s3 == 1 && k + 16 <= K && q0 + 4 <= Q;
#pragma unroll
    for (int a = 0; a < 4; a++) { /* (A^T M) A, row a */
        if (p0 + a >= P)
            break;
        float16 row[4];
        WINO_AT(float16, r[a][0], r[a][1], r[a][2], r[a][3], r[a][4], r[a][5], row);
        if (rows4) {
            __global REAL_T *yp = y + y_off + base + (long)(p0 + a) * ys.s2 + q0;
            __global const REAL_T *zp = z + z_off + base + (long)(p0 + a) * ys.s2 + q0;
#define WINO_OUT4(sx, i)                                                                                          \
    do {                                                                                                          \
        float4 v_ = (float4)(row[0].sx, row[1].sx, row[2].sx, row[3].sx) + bv.sx;                                 \
        if (chunk.s3)                                                                                             \
            v_ += LOADR4(0, zp + (long)(i) * ys.s1);                                                              \
        if (relu)                                                                                                 \
            v_ = fmin(fmax(v_, (float4)(0.0f)), (float4)(as_float(relu)));                                        \
        STORER4(v_, 0, yp + (long)(i) * ys.s1);                                                                   \
    } while (0)
            WINO_OUT4(s0, 0);
            WINO_OUT4(s1, 1);
            WINO_OUT4(s2, 2);
            WINO_OUT4(s3, 3);
            WINO_OUT4(s4, 4);
            WINO_OUT4(s5, 5);
            WINO_OUT4(s6, 6);
            WINO_OUT4(s7, 7);
            WINO_OUT4(s8, 8);
            WINO_OUT4(s9, 9);
            WINO_OUT4(sa, 10);
            WINO_OUT4(sb, 11);
            WINO_OUT4(sc, 12);
            WINO_OUT4(sd, 13);
            WINO_OUT4(se, 14);
            WINO_OUT4(sf, 15);
#undef WINO_OUT4
            continue;
        }
#pragma unroll
        for (int b = 0; b < 4; b++) {
            if (q0 + b >= Q)
                break;
            const long at = base + (long)(p0 + a) * ys.s2 + (long)(q0 + b) * ys.s3;
            float16 o = row[b] + bv;
            if (vec) {
                if (chunk.s3)
                    o += LOADR16(0, z + z_off + at);
                if (relu)
                    o = MIN16(MAX16(o, (float16)(0.0f)), (float16)(as_float(relu)));
                STORER16(o, 0, y + y_off + at);
            } else if (k + 16 <= K) {
                if (chunk.s3)
                    o += GATHER16_BY(LOAD_REAL, z + z_off + at, ys.s1);
                if (relu)
                    o = MIN16(MAX16(o, (float16)(0.0f)), (float16)(as_float(relu)));
                SCATTER16_BY(STORE_REAL, o, y + y_off + at, ys.s1);
            } else {
                float l[16];
                STORE16(o, 0, l);
                for (int i = 0; i < 16 && k + i < K; i++) {
                    const long ati = at + (long)i * ys.s1;
                    float e = l[i] + (chunk.s3 ? LOAD_REAL(z, z_off + ati) : 0.0f);
                    if (relu)
                        e = fmin(fmax(e, 0.0f), as_float(relu));
                    STORE_REAL(e, y, y_off + ati);
                }
            }
        }
    }
}
