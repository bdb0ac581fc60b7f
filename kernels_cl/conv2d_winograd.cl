/* Winograd F(4x4, 3x3) convolution: 3x3 filters, stride 1, dilation 1,
 * groups 1 (Lavin & Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2015). Each 4x4 block of output pixels (a tile) comes from a
 * 6x6 block of input: Y = A^T [ sum_c (G g G^T) .* (B^T d B) ] A, which
 * takes 36 multiplies per tile, channel pair instead of 144.
 *
 * Four kernels, one pass each (cl_winograd.c enqueues them):
 *   wino_filter  U[e][c][k]  = (G g_kc G^T)[e]             once per call
 *   wino_input   V[e][c][t]  = (B^T d_ct B)[e]             per tile chunk
 *   wino_gemm    M[e][t][k]  = sum_c U[e][c][k] V[e][c][t] 36 GEMMs
 *   wino_output  y[n,k,p,q]  = relu?((A^T M_kt A) + bias)  through y's strides
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

/* A float16 passed to or returned by a built-in (vload16, vstore16, fma,
 * fmax) crosses a call whose vector ABI differs on x86 without AVX-512,
 * and PoCL's clang warns so ("N warnings generated." on the user's
 * terminal). There the built-ins take its float8 halves, as that target
 * holds a float16 anyway; elsewhere they take it whole. */
#if defined(__x86_64__) && !defined(__AVX512F__)
#define LOAD16(i, p) ((float16)(vload8(0, (p) + 16 * (long)(i)), vload8(0, (p) + 16 * (long)(i) + 8)))
#define STORE16(v, i, p) (vstore8((v).lo, 0, (p) + 16 * (long)(i)), vstore8((v).hi, 0, (p) + 16 * (long)(i) + 8))
#define FMA16(a, b, c) ((float16)(fma((a).lo, (b).lo, (c).lo), fma((a).hi, (b).hi, (c).hi)))
#define MAX16(a, b) ((float16)(fmax((a).lo, (b).lo), fmax((a).hi, (b).hi)))
#else
#define LOAD16 vload16
#define STORE16 vstore16
#define FMA16 fma
#define MAX16 fmax
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

/* A^T m for one column m0..m5 (4 values). */
#define WINO_AT(m0, m1, m2, m3, m4, m5, o)                                                                        \
    do {                                                                                                          \
        const float a_ = (m1) + (m2), b_ = (m1) - (m2), c_ = (m3) + (m4), d_ = (m3) - (m4);                       \
        (o)[0] = (m0) + a_ + c_;                                                                                  \
        (o)[1] = b_ + 2.0f * d_;                                                                                  \
        (o)[2] = a_ + 4.0f * c_;                                                                                  \
        (o)[3] = b_ + 8.0f * d_ + (m5);                                                                           \
    } while (0)

/* One work-item per (c, k), k fastest; zeros for k >= K so the GEMM's
 * padded channels produce zeros. ws: the filter's strides of K, C, R, S. */
__kernel void wino_filter(__global const float *w, long w_off, long4 ws,
                          __global float *U, long u_off,
                          int4 dims, /* C, K, Kp, - */
                          long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const int C = dims.s0, K = dims.s1, Kp = dims.s2;
    const int k = (int)(i % Kp), c = (int)(i / Kp);
    const long plane = (long)C * Kp + PLANE_PAD;
    __global float *u = U + u_off + (long)c * Kp + k;
    if (k >= K) {
        for (int e = 0; e < 36; e++)
            u[e * plane] = 0.0f;
        return;
    }
    float g[3][3];
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++)
            g[r][s] = w[w_off + (long)k * ws.s0 + (long)c * ws.s1 + (long)r * ws.s2 + (long)s * ws.s3];
    float t[6][3]; /* G g */
    for (int s = 0; s < 3; s++) {
        float col[6];
        WINO_G(g[0][s], g[1][s], g[2][s], col);
        for (int a = 0; a < 6; a++)
            t[a][s] = col[a];
    }
    for (int a = 0; a < 6; a++) { /* (G g) G^T, row a */
        float row[6];
        WINO_G(t[a][0], t[a][1], t[a][2], row);
        for (int b = 0; b < 6; b++)
            u[(a * 6 + b) * plane] = row[b];
    }
}

/* One work-item per (tile, channel) of the chunk; cfast swaps which of the
 * two is dimension 0 so that neighbouring work-items read neighbouring
 * memory in either activation layout (NHWC: channels; NCHW: tiles).
 * Tiles past the chunk's end (up to Tp) are written as zeros. */
__kernel void wino_input(__global const float *x, long x_off, long4 xs,
                         __global float *V, long v_off,
                         int4 in_dims, /* N, C, H, W */
                         int4 tiles,   /* tile rows, tile columns per image, pad top, pad left */
                         long t0,      /* first tile of the chunk */
                         int4 chunk)   /* tiles in the chunk, Tp, cfast, - */
{
    const int cfast = chunk.s2;
    const int t = (int)get_global_id(cfast ? 1 : 0), c = (int)get_global_id(cfast ? 0 : 1);
    const int C = in_dims.s1, H = in_dims.s2, W = in_dims.s3, Tp = chunk.s1;
    if (t >= Tp || c >= C)
        return;
    const long plane = (long)C * Tp + PLANE_PAD;
    __global float *v = V + v_off + (long)c * Tp + t;
    if (t >= chunk.s0) {
        for (int e = 0; e < 36; e++)
            v[e * plane] = 0.0f;
        return;
    }
    const long tg = t0 + t, per_image = (long)tiles.s0 * tiles.s1;
    const long n = tg / per_image;
    const int tr = (int)(tg % per_image);
    const int h0 = (tr / tiles.s1) * 4 - tiles.s2, w0 = (tr % tiles.s1) * 4 - tiles.s3;
    const long base = x_off + n * xs.s0 + (long)c * xs.s1;
    float d[6][6];
    for (int a = 0; a < 6; a++) {
        const int h = h0 + a;
        const int hin = h >= 0 && h < H;
        for (int b = 0; b < 6; b++) {
            const int wc = w0 + b;
            d[a][b] = hin && wc >= 0 && wc < W ? x[base + (long)h * xs.s2 + (long)wc * xs.s3] : 0.0f;
        }
    }
    float r[6][6]; /* B^T d */
    for (int b = 0; b < 6; b++) {
        float col[6];
        WINO_BT(d[0][b], d[1][b], d[2][b], d[3][b], d[4][b], d[5][b], col);
        for (int a = 0; a < 6; a++)
            r[a][b] = col[a];
    }
    for (int a = 0; a < 6; a++) { /* (B^T d) B, row a */
        float row[6];
        WINO_BT(r[a][0], r[a][1], r[a][2], r[a][3], r[a][4], r[a][5], row);
        for (int b = 0; b < 6; b++)
            v[(a * 6 + b) * plane] = row[b];
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
    __global const float *v = V + v_off + (long)e * ((long)C * Tp + PLANE_PAD) + (long)tb * TT;
    float16 acc[KB][TT];
    for (int b = 0; b < KB; b++)
        for (int j = 0; j < TT; j++)
            acc[b][j] = (float16)(0.0f);
    for (int c = 0; c < C; c++) {
        float16 wv[KB];
        for (int b = 0; b < KB; b++)
            wv[b] = LOAD16(b, u + (long)c * Kp);
        __global const float *vc = v + (long)c * Tp;
        for (int j = 0; j < TT; j++) {
            const float16 xv = (float16)(vc[j]);
            for (int b = 0; b < KB; b++)
                acc[b][j] = FMA16(xv, wv[b], acc[b][j]);
        }
    }
    __global float *m = M + m_off + (long)e * ((long)Tp * Kp + PLANE_PAD) + (long)tb * TT * Kp + (long)kb * KV;
    for (int j = 0; j < TT; j++)
        for (int b = 0; b < KB; b++)
            STORE16(acc[b][j], b, m + (long)j * Kp);
}

/* One work-item per (channel, tile) of the chunk; kfast swaps which is
 * dimension 0, as in wino_input (NHWC output: channels). Writes the
 * tile's in-image pixels with bias and ReLU through y's strides. */
__kernel void wino_output(__global const float *M, long m_off,
                          __global const float *bias, long b_off,
                          __global float *y, long y_off, long4 ys,
                          int4 out_dims, /* K, P, Q, Kp */
                          int4 tiles,    /* tile rows, tile columns per image, has bias, relu */
                          long t0,       /* first tile of the chunk */
                          int4 chunk)    /* tiles in the chunk, Tp, kfast, - */
{
    const int kfast = chunk.s2;
    const int k = (int)get_global_id(kfast ? 0 : 1), t = (int)get_global_id(kfast ? 1 : 0);
    const int K = out_dims.s0, P = out_dims.s1, Q = out_dims.s2, Kp = out_dims.s3, Tp = chunk.s1;
    if (k >= K || t >= chunk.s0)
        return;
    const long plane = (long)Tp * Kp + PLANE_PAD;
    __global const float *m = M + m_off + (long)t * Kp + k;
    float mm[6][6];
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++)
            mm[a][b] = m[(a * 6 + b) * plane];
    float r[4][6]; /* A^T M */
    for (int b = 0; b < 6; b++) {
        float col[4];
        WINO_AT(mm[0][b], mm[1][b], mm[2][b], mm[3][b], mm[4][b], mm[5][b], col);
        for (int a = 0; a < 4; a++)
            r[a][b] = col[a];
    }
    const long tg = t0 + t, per_image = (long)tiles.s0 * tiles.s1;
    const long n = tg / per_image;
    const int tr = (int)(tg % per_image);
    const int p0 = (tr / tiles.s1) * 4, q0 = (tr % tiles.s1) * 4;
    const float bv = tiles.s2 ? bias[b_off + k] : 0.0f;
    const long base = y_off + n * ys.s0 + (long)k * ys.s1;
    for (int a = 0; a < 4 && p0 + a < P; a++) { /* (A^T M) A, row a */
        float row[4];
        WINO_AT(r[a][0], r[a][1], r[a][2], r[a][3], r[a][4], r[a][5], row);
        for (int b = 0; b < 4 && q0 + b < Q; b++) {
            float o = row[b] + bv;
            if (tiles.s3)
                o = fmax(o, 0.0f);
            y[base + (long)(p0 + a) * ys.s2 + (long)(q0 + b) * ys.s3] = o;
        }
    }
}
