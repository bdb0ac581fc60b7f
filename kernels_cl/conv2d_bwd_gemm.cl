/* Backward filter as GEMMs that stream the pixels ("gemm" of the
 * backward filter op).
 *
 * dw[k][c][r][s] = sum over the N*P*Q output pixels m of dy[m][k] *
 * x[m's input pixel shifted by tap (r, s)][c]: per tap an outer-product
 * sum whose reduction (the pixels) is long and whose output (K x C) is
 * small. The implicit-GEMM forms tile output pixels and so run it with
 * short inner loops; these kernels tile the filter and stream the pixels.
 *
 * Two kernels, by which dimension is contiguous in memory:
 * - gemm_nt (pixels contiguous: NCHW, 1x1 at stride 1): a work-item
 *   holds KT filter rows x CT input channels of VW-lane accumulators
 *   along the pixels, and per VW pixels loads KT dy vectors and CT x
 *   vectors; the lanes are summed at the end.
 * - gemm_tn (channels contiguous: NHWC, any filter, stride, dilation,
 *   padding): a work-item holds KT filter rows x CT vectors of VW input
 *   channels of one tap, and per pixel loads CT x vectors and broadcasts
 *   KT dy values.
 *
 * The pixels are cut into chunks (grid dimension 2). Dimension 0 sweeps
 * the tiles of the smaller of K and C (the channel tiles where C <= K),
 * dimension 1 the other: consecutive work-items then share one strip of
 * the larger operand (in L1) and read all of the smaller one's chunk,
 * which the host keeps short enough to stay in L2. Each chunk writes its partial sums at out + chunk *
 * ochunk, which is dw itself when there is one chunk, else a workspace
 * that conv2d_bwd_filter_reduce (conv2d_bwd.cl) adds up in a fixed
 * order.
 *
 * x and dy may be stored in a reduced dtype (REAL_T, -DPDNN_REAL: issue
 * 43; the host runs bfloat16 so, float16 on float32 copies): loads widen
 * them, the sums and partials stay float32, and the host always takes the
 * workspace, so that the reduce rounds each element of dw once. */
#ifndef VW
#define VW 16
#endif
#ifndef KT
#define KT 4
#endif
#ifndef CT
#define CT 4
#endif

#if VW == 16
typedef float16 vec_t;
#define VLOAD LOAD16
#define VLOADR LOADR16
#define VSTORE STORE16
#define VFMA FMA16
static float lanes_sum(float16 v)
{
    const float8 a = v.lo + v.hi;
    const float4 b = a.lo + a.hi;
    return (b.s0 + b.s1) + (b.s2 + b.s3);
}
#elif VW == 8
typedef float8 vec_t;
#define VLOAD vload8
#define VLOADR LOADR8
#define VSTORE vstore8
#define VFMA fma
static float lanes_sum(float8 v)
{
    const float4 b = v.lo + v.hi;
    return (b.s0 + b.s1) + (b.s2 + b.s3);
}
#elif VW == 4
typedef float4 vec_t;
#define VLOAD vload4
#define VLOADR LOADR4
#define VSTORE vstore4
#define VFMA fma
static float lanes_sum(float4 b) { return (b.s0 + b.s1) + (b.s2 + b.s3); }
#else
#error "VW must be 4, 8 or 16"
#endif

/* dims: N, P*Q, K, C. chunk: pixels per chunk. xs, ys: element strides
 * (n, c, h, w) of x and (n, k, p, q) of dy, whose images are contiguous
 * rows of P*Q pixels. */
__kernel void bwd_filter_gemm_nt(__global const REAL_T *x, long x_off,
                                 __global const REAL_T *dy, long dy_off,
                                 __global float *out, long out_off, long4 os, long ochunk,
                                 long4 xs, long4 ys, int4 dims, long chunk, int cfirst)
{
    const int N = dims.s0, PQ = dims.s1, K = dims.s2, C = dims.s3;
    /* (PoCL cannot take get_global_id of a computed dimension.) */
    const int g0 = (int)get_global_id(0), g1 = (int)get_global_id(1);
    const int k0 = (cfirst ? g1 : g0) * KT, c0 = (cfirst ? g0 : g1) * CT;
    if (k0 >= K || c0 >= C) /* the grid is rounded up */
        return;
    const long total = (long)N * PQ;
    const long m0 = (long)get_global_id(2) * chunk;
    const long m1 = m0 + chunk < total ? m0 + chunk : total;
    /* Rows past K or C read the last valid one; they are not stored. */
    long yb[KT], xb[CT];
#pragma unroll
    for (int i = 0; i < KT; i++)
        yb[i] = dy_off + (long)(k0 + i < K ? k0 + i : K - 1) * ys.s1;
#pragma unroll
    for (int j = 0; j < CT; j++)
        xb[j] = x_off + (long)(c0 + j < C ? c0 + j : C - 1) * xs.s1;
    vec_t acc[KT][CT];
    float tail[KT][CT];
#pragma unroll
    for (int i = 0; i < KT; i++)
#pragma unroll
        for (int j = 0; j < CT; j++) {
            acc[i][j] = (vec_t)0.0f;
            tail[i][j] = 0.0f;
        }
    for (long m = m0; m < m1;) {
        const int n = (int)(m / PQ);
        int l = (int)(m % PQ);
        const int le = m1 - m < (long)(PQ - l) ? l + (int)(m1 - m) : PQ;
        m += le - l;
        __global const REAL_T *yn = dy + (long)n * ys.s0;
        __global const REAL_T *xn = x + (long)n * xs.s0;
        for (; l + VW <= le; l += VW) {
            vec_t xv[CT];
#pragma unroll
            for (int j = 0; j < CT; j++)
                xv[j] = VLOADR(0, xn + xb[j] + l);
#pragma unroll
            for (int i = 0; i < KT; i++) {
                const vec_t dv = VLOADR(0, yn + yb[i] + l);
#pragma unroll
                for (int j = 0; j < CT; j++)
                    acc[i][j] = VFMA(dv, xv[j], acc[i][j]);
            }
        }
        for (; l < le; l++)
#pragma unroll
            for (int i = 0; i < KT; i++) {
                const float dv = LOAD_REAL(yn, yb[i] + l);
#pragma unroll
                for (int j = 0; j < CT; j++)
                    tail[i][j] = fma(dv, LOAD_REAL(xn, xb[j] + l), tail[i][j]);
            }
    }
    __global float *o = out + out_off + (long)get_global_id(2) * ochunk;
#pragma unroll
    for (int i = 0; i < KT; i++)
#pragma unroll
        for (int j = 0; j < CT; j++)
            if (k0 + i < K && c0 + j < C)
                o[(long)(k0 + i) * os.s0 + (long)(c0 + j) * os.s1] = lanes_sum(acc[i][j]) + tail[i][j];
}

/* dims: N, P, Q, K. cdim: C, H, W, 0. geom: stride h, w, dilation h, w.
 * fdim: R, S, padding top, left. chunk: pixels per chunk. xs, ys: element
 * strides (n, c, h, w) and (n, k, p, q), the channels contiguous (xs.s1 =
 * ys.s1 = 1). Grid dimension 2 is chunk * R * S + filter tap: a
 * work-item computes one tap (r, s), whose input pixels are the output
 * pixels' shifted by (r, s) (a GEMM per tap; pixels in the padding add
 * nothing). out element (k, c, r, s) of a chunk: k * os.s0 + c * os.s1 +
 * r * os.s2 + s * os.s3 + chunk * ochunk. */
__kernel void bwd_filter_gemm_tn(__global const REAL_T *x, long x_off,
                                 __global const REAL_T *dy, long dy_off,
                                 __global float *out, long out_off, long4 os, long ochunk,
                                 long4 xs, long4 ys, int4 dims, int4 cdim, int4 geom, int4 fdim, long chunk,
                                 int cfirst)
{
    const int P = dims.s1, Q = dims.s2, K = dims.s3, C = cdim.s0, H = cdim.s1, W = cdim.s2;
    const int g0 = (int)get_global_id(0), g1 = (int)get_global_id(1);
    const int k0 = (cfirst ? g1 : g0) * KT, c0 = (cfirst ? g0 : g1) * (CT * VW);
    const int R = fdim.s0, S = fdim.s1;
    if (k0 >= K || c0 >= C)
        return;
    const int tap = (int)(get_global_id(2) % (R * S)), ch = (int)(get_global_id(2) / (R * S));
    const int r = tap / S, s = tap % S;
    const int roff = r * geom.s2 - fdim.s2, soff = s * geom.s3 - fdim.s3;
    const int sh = geom.s0, sw = geom.s1;
    /* The output columns whose input column is inside the image. */
    const int qlo = soff >= 0 ? 0 : (-soff + sw - 1) / sw;
    const int qhi = W - soff <= 0 ? 0 : min(Q, (W - 1 - soff) / sw + 1);
    const long total = (long)dims.s0 * P * Q;
    const long m0 = (long)ch * chunk;
    const long m1 = m0 + chunk < total ? m0 + chunk : total;
    const int full = c0 + CT * VW <= C;
    int kk[KT];
#pragma unroll
    for (int i = 0; i < KT; i++)
        kk[i] = k0 + i < K ? k0 + i : K - 1;
    vec_t acc[KT][CT];
#pragma unroll
    for (int i = 0; i < KT; i++)
#pragma unroll
        for (int j = 0; j < CT; j++)
            acc[i][j] = (vec_t)0.0f;
    /* Row segments: the pixels of output row (n, p) within the chunk. */
    for (long m = m0; m < m1;) {
        const long row = m / Q;
        const int q0 = (int)(m % Q);
        const int qe = m1 - m < (long)(Q - q0) ? q0 + (int)(m1 - m) : Q;
        m += qe - q0;
        const int n = (int)(row / P), p = (int)(row % P);
        const int ih = p * sh + roff;
        if (ih < 0 || ih >= H)
            continue;
        const int qa = max(q0, qlo), qb = min(qe, qhi);
        __global const REAL_T *xr = x + x_off + (long)n * xs.s0 + (long)ih * xs.s2 +
                                   (long)(qa * sw + soff) * xs.s3 + c0;
        __global const REAL_T *yr = dy + dy_off + (long)n * ys.s0 + (long)p * ys.s2 + (long)qa * ys.s3;
        const long xstep = (long)sw * xs.s3;
        for (int q = qa; q < qb; q++, xr += xstep, yr += ys.s3) {
            vec_t xv[CT];
            if (full) {
#pragma unroll
                for (int j = 0; j < CT; j++)
                    xv[j] = VLOADR(j, xr);
            } else {
                float part[CT * VW];
                for (int e = 0; e < CT * VW; e++)
                    part[e] = c0 + e < C ? LOAD_REAL(xr, e) : 0.0f;
#pragma unroll
                for (int j = 0; j < CT; j++)
                    xv[j] = VLOAD(j, part);
            }
#pragma unroll
            for (int i = 0; i < KT; i++) {
                const vec_t dv = (vec_t)LOAD_REAL(yr, kk[i]);
#pragma unroll
                for (int j = 0; j < CT; j++)
                    acc[i][j] = VFMA(dv, xv[j], acc[i][j]);
            }
        }
    }
    __global float *o = out + out_off + (long)ch * ochunk + (long)r * os.s2 + (long)s * os.s3;
#pragma unroll
    for (int i = 0; i < KT; i++) {
        if (k0 + i >= K)
            break;
        __global float *orow = o + (long)(k0 + i) * os.s0;
#pragma unroll
        for (int j = 0; j < CT; j++) {
            const int cj = c0 + j * VW;
            if (os.s1 == 1 && cj + VW <= C) {
                VSTORE(acc[i][j], 0, orow + cj);
            } else {
                float v[VW];
                VSTORE(acc[i][j], 0, v);
                for (int e = 0; e < VW && cj + e < C; e++)
                    orow[(long)(cj + e) * os.s1] = v[e];
            }
        }
    }
}
