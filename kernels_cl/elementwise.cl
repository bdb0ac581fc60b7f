/* The ops around convolution: one work-item per output element (per
 * (outer, inner) pair for softmax). Buffers come with element offsets, as
 * in conv2d_direct, because a tensor is (region, offset). Elements are
 * addressed in memory order, so layouts never enter here. Outputs may alias
 * inputs where backend.h allows it, hence no restrict. */

/* max(v, 0) with NaN kept as NaN (fmax would drop it). */
static inline float relu1(float v)
{
    return v > 0.0f ? v : (isnan(v) ? v : 0.0f);
}

__kernel void ew_add(__global const float *a, long a_off,
                     __global const float *b, long b_off,
                     __global float *y, long y_off,
                     long n)
{
    const long i = (long)get_global_id(0);
    if (i >= n)
        return;
    y[y_off + i] = a[a_off + i] + b[b_off + i];
}

/* y[i] = relu?(x[i] + bias[(i / inner) % c]) */
__kernel void ew_bias_add(__global const float *x, long x_off,
                          __global const float *bias, long b_off,
                          __global float *y, long y_off,
                          long n, long c, long inner, int relu)
{
    const long i = (long)get_global_id(0);
    if (i >= n)
        return;
    const float v = x[x_off + i] + bias[b_off + (i / inner) % c];
    y[y_off + i] = relu ? relu1(v) : v;
}

__kernel void ew_relu(__global const float *x, long x_off,
                      __global float *y, long y_off,
                      long n)
{
    const long i = (long)get_global_id(0);
    if (i >= n)
        return;
    y[y_off + i] = relu1(x[x_off + i]);
}

/* rows x w 4-byte words, row r from src + r * sp to dst + r * dp (pdnn_concat's
 * blocks); bits are copied as they are. A work-item copies cw words of one
 * row (a multiple of 8, the host's choice; bpr blocks per row), as
 * eight-word vectors where the block is whole: one division per block,
 * not per word, so that the copy runs near the memory's bandwidth (one
 * work-item per word with a division each reached a fifth of it on PoCL). */
__kernel void ew_copy_rows(__global const uint *src, long s_off, long sp,
                           __global uint *dst, long d_off, long dp,
                           long w, long cw, long bpr, long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const long r = i / bpr, c0 = (i - r * bpr) * cw;
    __global const uint *s = src + s_off + r * sp + c0;
    __global uint *d = dst + d_off + r * dp + c0;
    const long n = w - c0 < cw ? w - c0 : cw;
    if (n == cw) {
        for (long j = 0; j < cw / 8; j++)
            vstore8(vload8(j, s), j, d);
    } else {
        for (long c = 0; c < n; c++)
            d[c] = s[c];
    }
}

/* y = x in another memory order. d: the logical dims; yo: y's axes from
 * outermost to innermost (a permutation of 0..3). A work-item writes the
 * rows of y along its `loop` innermost axes (2 or 1; the host's choice)
 * for one index of the outer ones, which it decomposes once: y is written
 * contiguously and x read through its strides, with no division per
 * element (one work-item per element with a division each reached 0.4
 * GB/s on PoCL). */
__kernel void ew_transform(__global const float *x, long x_off, long4 xs,
                           __global float *y, long y_off, long4 d, int4 yo, int loop, long items)
{
    const long g = (long)get_global_id(0);
    if (g >= items)
        return;
    const long dd[4] = {d.s0, d.s1, d.s2, d.s3};
    const long st[4] = {xs.s0, xs.s1, xs.s2, xs.s3};
    const int ord[4] = {yo.s0, yo.s1, yo.s2, yo.s3};
    /* The outer axes' index g, from the innermost outer axis out. */
    long rest = g, src = x_off;
    for (int k = 3 - loop; k >= 0; k--) {
        const long n = dd[ord[k]];
        src += (rest % n) * st[ord[k]];
        rest /= n;
    }
    const long n3 = dd[ord[3]], s3 = st[ord[3]];
    const long n2 = loop == 2 ? dd[ord[2]] : 1, s2 = loop == 2 ? st[ord[2]] : 0;
    __global float *yp = y + y_off + g * n2 * n3;
    for (long i2 = 0; i2 < n2; i2++) {
        __global const float *xp = x + src + i2 * s2;
        for (long i3 = 0; i3 < n3; i3++)
            yp[i3] = xp[i3 * s3];
        yp += n3;
    }
}

/* ew_transform where y's innermost axis (ya) is not x's: a work-item
 * moves a TT x TT tile of axes ya and xa (x's axis of stride 1) for one
 * index of the other two, reading rows of x along xa and writing rows of
 * y along ya through a private tile. Read one element at a time along
 * stride C instead, an NHWC -> NCHW transpose of 56x56x256 ran at 1 GB/s
 * on PoCL: each work-item walked all of x for one channel. yo as above;
 * items: outer indices x tiles of xa x tiles of ya. */
#define TT 16
__kernel void ew_transform_tiles(__global const float *x, long x_off, long4 xs,
                                 __global float *y, long y_off, long4 d, int4 yo, int xa, long items)
{
    const long g = (long)get_global_id(0);
    if (g >= items)
        return;
    const long dd[4] = {d.s0, d.s1, d.s2, d.s3};
    const long st[4] = {xs.s0, xs.s1, xs.s2, xs.s3};
    const int ord[4] = {yo.s0, yo.s1, yo.s2, yo.s3};
    const int ya = ord[3];
    /* y's strides (y is packed in its memory order). */
    long ys[4];
    ys[ord[3]] = 1;
    ys[ord[2]] = dd[ord[3]];
    ys[ord[1]] = ys[ord[2]] * dd[ord[2]];
    ys[ord[0]] = ys[ord[1]] * dd[ord[1]];
    const long na = (dd[ya] + TT - 1) / TT, nb = (dd[xa] + TT - 1) / TT;
    long rest = g;
    const long a0 = (rest % na) * TT;
    rest /= na;
    const long b0 = (rest % nb) * TT;
    rest /= nb;
    /* The other two axes, the later in y's order fastest. */
    long src = x_off + a0 * st[ya] + b0 * st[xa], dst = y_off + a0 + b0 * ys[xa];
    for (int k = 2; k >= 0; k--) {
        const int ax = ord[k];
        if (ax == xa)
            continue;
        const long i = rest % dd[ax];
        rest /= dd[ax];
        src += i * st[ax];
        dst += i * ys[ax];
    }
    const int ta = dd[ya] - a0 < TT ? (int)(dd[ya] - a0) : TT, tb = dd[xa] - b0 < TT ? (int)(dd[xa] - b0) : TT;
    float t[TT][TT];
    for (int i = 0; i < ta; i++)
        for (int j = 0; j < tb; j++)
            t[j][i] = x[src + i * st[ya] + j];
    for (int j = 0; j < tb; j++)
        for (int i = 0; i < ta; i++)
            y[dst + j * ys[xa] + i] = t[j][i];
}

/* y = a (op: 0 +, 1 *, 2 -, 3 /) b over y packed with dims d in memory
 * order (8 axes, outermost first; the last `axes` of them count, the
 * others are 1); a's and b's elements at the strides as and bs (0 where
 * that side repeats). Each work-item reads its a and b before writing y,
 * so y may be a packed a (or b). */
__kernel void ew_binary(__global const REAL_T *a, long a_off, long8 as, __global const REAL_T *b, long b_off, long8 bs,
                        __global REAL_T *y, long y_off, long8 d, int op, long total, int axes)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const long dd[8] = {d.s0, d.s1, d.s2, d.s3, d.s4, d.s5, d.s6, d.s7};
    const long sa[8] = {as.s0, as.s1, as.s2, as.s3, as.s4, as.s5, as.s6, as.s7};
    const long sb[8] = {bs.s0, bs.s1, bs.s2, bs.s3, bs.s4, bs.s5, bs.s6, bs.s7};
    long r = i, ao = a_off, bo = b_off;
    for (int k = 7; k >= 8 - axes; k--) {
        const long ik = r % dd[k];
        r /= dd[k];
        ao += ik * sa[k];
        bo += ik * sb[k];
    }
    const float av = LOAD_REAL(a, ao), bv = LOAD_REAL(b, bo);
    const float res = op == 0 ? av + bv : op == 1 ? av * bv : op == 2 ? av - bv : op == 3 ? av / bv : pow(av, bv);
    STORE_REAL(res, y, y_off + i);
}

/* ew_binary where the call is one axis (core merges the axes of packed
 * tensors of one shape), a and b each packed along it (stride 1) or one
 * repeated element (stride 0): 8 elements a work-item through the vector
 * loads, in every dtype (the 8-axis walk above divides per element, and
 * over REAL_T PoCL left it scalar). */
inline __attribute__((always_inline)) float8 bin8(float8 a, float8 b, int op)
{
    return op == 0 ? a + b : op == 1 ? a * b : op == 2 ? a - b : op == 3 ? a / b : pow(a, b);
}

__kernel void ew_binary_flat(__global const REAL_T *a, long a_off, long sa, __global const REAL_T *b, long b_off,
                             long sb, __global REAL_T *y, long y_off, int op, long total)
{
    const long i = 8 * (long)get_global_id(0);
    if (i + 8 <= total) {
        const float8 av = sa ? LOADR8(0, a + a_off + i) : (float8)(LOAD_REAL(a, a_off));
        const float8 bv = sb ? LOADR8(0, b + b_off + i) : (float8)(LOAD_REAL(b, b_off));
        STORER8(bin8(av, bv, op), 0, y + y_off + i);
        return;
    }
    for (long k = i; k < total; k++)
        STORE_REAL(bin8((float8)(LOAD_REAL(a, a_off + k * sa)), (float8)(LOAD_REAL(b, b_off + k * sb)), op).s0, y,
                   y_off + k);
}

/* The element of x that padded coordinate o reads (of x's d; pads before
 * it), or -1 for the constant: mode 0 constant, 1 reflect (the edge not
 * repeated), 2 edge. */
static long pad_src(long o, long before, long d, int mode)
{
    const long i = o - before;
    if (i >= 0 && i < d)
        return i;
    if (mode == 0)
        return -1;
    if (mode == 2)
        return i < 0 ? 0 : d - 1;
    return i < 0 ? -i : 2 * (d - 1) - i;
}

/* y = x padded along H and W: one work-item per element of y in logical
 * (n, c, h, w) order, w fastest; both tensors through their strides.
 * d: x's dims; p: {top, left, bottom, right}. */
__kernel void ew_pad(__global const float *x, long x_off, long4 xs, __global float *y, long y_off, long4 ys,
                     long4 d, long4 p, int mode, float value, long total)
{
    const long i = (long)get_global_id(0);
    if (i >= total)
        return;
    const long pw = d.s3 + p.s1 + p.s3, ph = d.s2 + p.s0 + p.s2;
    long r = i / pw;
    const long w = i - r * pw, h = r % ph;
    r /= ph;
    const long c = r % d.s1, n = r / d.s1;
    const long sh = pad_src(h, p.s0, d.s2, mode), sw = pad_src(w, p.s1, d.s3, mode);
    y[y_off + n * ys.s0 + c * ys.s1 + h * ys.s2 + w * ys.s3] =
        sh < 0 || sw < 0 ? value : x[x_off + n * xs.s0 + c * xs.s1 + sh * xs.s2 + sw * xs.s3];
}

/* mode 0 clip: min(max(x, alpha), beta), NaN kept; 1 leaky relu; 2
 * sigmoid (exp of -x overflows to inf for x < -88, giving 0 as it should);
 * 3 hard sigmoid max(0, min(1, alpha x + beta)); 4 hard swish; 5 silu
 * x / (1 + exp(-x)) (x / inf = -0 below -88, as it should be); 6 on:
 * the unary math (pdnn_activation's values; 16 pow x^alpha). 8 elements
 * a work-item through the vector loads: PoCL left a one-element kernel
 * scalar when built over float16 or bfloat16 (REAL_T), at a tenth of
 * float32's speed. */
inline __attribute__((always_inline)) float8 act8(float8 v, int mode, float alpha, float beta)
{
    const float8 a = (float8)(alpha), zero = (float8)(0.0f), one = (float8)(1.0f);
    if (mode == 0)
        return select(select(v, (float8)(beta), v > beta), a, v < alpha);
    if (mode == 1)
        return select(a * v, v, v >= zero);
    if (mode == 2)
        return one / (one + exp(-v));
    if (mode == 3 || mode == 4) {
        const float8 t = mode == 3 ? a * v + (float8)(beta) : v / 6.0f + 0.5f;
        const float8 h = select(select(t, one, t > one), zero, t < zero);
        return mode == 3 ? h : v * h;
    }
    if (mode == 5)
        return v / (one + exp(-v));
    if (mode == 6)
        return erf(v);
    if (mode == 7)
        return 0.5f * v * (one + erf(v * 0.70710678118654752f));
    if (mode == 8)
        return 0.5f * v * (one + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    if (mode == 9)
        return tanh(v);
    if (mode == 10)
        return sqrt(v);
    if (mode == 11)
        return -v;
    if (mode == 12)
        return exp(v);
    if (mode == 13)
        return log(v);
    if (mode == 14)
        return one / v;
    if (mode == 15)
        return fabs(v);
    return pow(v, a);
}

/* Elements [8 i, 8 i + 8) (a last partial group lane by lane). */
__kernel void ew_activation(__global const REAL_T *x, long x_off,
                            __global REAL_T *y, long y_off,
                            long n, int mode, float alpha, float beta)
{
    const long i = 8 * (long)get_global_id(0);
    if (i + 8 <= n) {
        STORER8(act8(LOADR8(0, x + x_off + i), mode, alpha, beta), 0, y + y_off + i);
        return;
    }
    for (long k = i; k < n; k++)
        STORE_REAL(act8((float8)(LOAD_REAL(x, x_off + k)), mode, alpha, beta).s0, y, y_off + k);
}

/* Softmax over the middle axis of [outer][c][inner]. Neighbouring
 * work-items take neighbouring i, so each pass reads memory coalesced.
 * Subtracting the max keeps exp from overflowing; y (never aliasing x)
 * holds the exponentials between the sum and the scaling. */
__kernel void softmax_mid(__global const float *x, long x_off,
                          __global float *y, long y_off,
                          long c, long inner, long total)
{
    const long gid = (long)get_global_id(0);
    if (gid >= total)
        return;
    const long o = gid / inner, i = gid % inner;
    const long xb = x_off + o * c * inner + i, yb = y_off + o * c * inner + i;
    /* fmax skips NaN, but a NaN input still makes sum, so every y, NaN. */
    float m = -INFINITY;
    for (long k = 0; k < c; k++)
        m = fmax(m, x[xb + k * inner]);
    float sum = 0.0f;
    for (long k = 0; k < c; k++) {
        const float e = exp(x[xb + k * inner] - m);
        y[yb + k * inner] = e;
        sum += e;
    }
    for (long k = 0; k < c; k++)
        y[yb + k * inner] /= sum;
}

/* Row-major C[m x n] = op(A) op(B); A is stored k x m when trans_a, B
 * n x k when trans_b. The fallback when CLBlast is absent. The matmul
 * kernels below take a batch as the NDRange's second dimension: matrix t
 * reads A t * sa and B t * sb elements on (0: broadcast) and writes C
 * t * m * n on (pdnn__matmul_call).
 * A, B and C are REAL_T (float16, bfloat16 storage under -DPDNN_REAL;
 * issue 43): loads widen, sums are float32's, C is rounded once at the
 * store, the host reference's contract. */
__kernel void matmul_naive(__global const REAL_T *a, long a_off,
                           __global const REAL_T *b, long b_off,
                           __global REAL_T *cm, long c_off,
                           long m, long n, long k, int2 trans, long sa, long sb)
{
    const long gid = (long)get_global_id(0), t = (long)get_global_id(1);
    if (gid >= m * n)
        return;
    a_off += t * sa, b_off += t * sb, c_off += t * m * n;
    const long i = gid / n, j = gid % n;
    /* Element (i, p) of op(A) is at ai + p * as, (p, j) of op(B) at bj + p * bs. */
    const long ai = a_off + (trans.s0 ? i : i * k), as = trans.s0 ? m : 1;
    const long bj = b_off + (trans.s1 ? j * k : j), bs = trans.s1 ? 1 : n;
    float acc = 0.0f;
    for (long p = 0; p < k; p++)
        acc = fma(LOAD_REAL(a, ai + p * as), LOAD_REAL(b, bj + p * bs), acc);
    STORE_REAL(acc, cm, c_off + gid);
}

/* Row-major C[m x n] = op(A) op(B) for CPU-class devices, two register
 * kernels (float8 halves only: 16-lane vectors through built-ins change
 * the call ABI on x86 without AVX-512):
 *
 * gemm_nn: B (not transposed) packed by gemm_pack_b. One work-item
 *   computes 6 rows x 16 columns in 12 float8 accumulators, each step a
 *   row of the panel (two vector loads) times 6 broadcast elements of A,
 *   which any strides address (as_i, as_p: A or its transpose). Items run
 *   row tiles fastest, so a work-group reuses one panel from cache.
 * gemm_nt: A's rows and B's columns contiguous along the sum (A m x k,
 *   B stored n x k): 3 rows x 4 columns of dot products in 12 float8
 *   partial sums, added across lanes at the end.
 * gemm_nt's last panel narrower than 4 columns and a sum not a multiple of
 * 8 take scalar loops; gemm_nn's panels are zero-padded.
 * Under -DPDNN_REAL A, B and C are REAL_T, loaded 8 wide (LOADR8) where
 * the float32 kernels load vectors; the packed B is float (widened once
 * by gemm_pack_b) and the sums float32's, rounded once at C's store. */
/* gemm_nn's B, packed panel by panel: panel cp holds columns [16 cp,
 * 16 cp + 16) of every row p as 16 consecutive floats (zeros past n), so
 * the kernel streams it; rows of B 4 KB apart would alias in the caches. */
__kernel void gemm_pack_b(__global const REAL_T *b, long b_off, long ldb, __global float *bp, long bp_off, int k,
                          int n, long sb, long sbp)
{
    const long t = (long)get_global_id(0);
    b_off += (long)get_global_id(1) * sb, bp_off += (long)get_global_id(1) * sbp;
    const int panels = (n + 15) / 16;
    if (t >= (long)k * panels)
        return;
    const int cp = (int)(t % panels), p = (int)(t / panels);
    __global const REAL_T *src = b + b_off + (long)p * ldb + 16 * cp;
    __global float *dst = bp + bp_off + ((long)cp * k + p) * 16;
    if (16 * cp + 16 <= n) {
        vstore8(LOADR8(0, src), 0, dst);
        vstore8(LOADR8(1, src), 1, dst);
    } else {
        for (int j = 0; j < 16; j++)
            dst[j] = 16 * cp + j < n ? LOAD_REAL(src, j) : 0.0f;
    }
}

/* One step p of gemm_nn: the panel's row times A's six elements X0..X5. */
#define GEMM_NN_STEP(X0, X1, X2, X3, X4, X5)                         \
    do {                                                             \
        const float8 b0 = vload8(0, b), b1 = vload8(1, b);           \
        float8 x = (float8)(X0);                                     \
        c00 = fma(x, b0, c00), c01 = fma(x, b1, c01);                \
        x = (float8)(X1);                                            \
        c10 = fma(x, b0, c10), c11 = fma(x, b1, c11);                \
        x = (float8)(X2);                                            \
        c20 = fma(x, b0, c20), c21 = fma(x, b1, c21);                \
        x = (float8)(X3);                                            \
        c30 = fma(x, b0, c30), c31 = fma(x, b1, c31);                \
        x = (float8)(X4);                                            \
        c40 = fma(x, b0, c40), c41 = fma(x, b1, c41);                \
        x = (float8)(X5);                                            \
        c50 = fma(x, b0, c50), c51 = fma(x, b1, c51);                \
    } while (0)

__kernel void gemm_nn(__global const REAL_T *a, long a_off, long as_i, long as_p,
                      __global const float *bp, long bp_off,
                      __global REAL_T *cm, long c_off, long ldc,
                      int m, int n, int k, int n_rt, long sa, long sbp, long sc)
{
    const int t = (int)get_global_id(0);
    const int rt = t % n_rt, cp = t / n_rt;
    const int i0 = rt * 6, j0 = cp * 16;
    a_off += (long)get_global_id(1) * sa, bp_off += (long)get_global_id(1) * sbp, c_off += (long)get_global_id(1) * sc;
    if (j0 >= n || i0 >= m)
        return;
    long ar[6];
    for (int r = 0; r < 6; r++)
        ar[r] = a_off + (long)min(i0 + r, m - 1) * as_i;
    float8 c00 = (float8)(0.0f), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    float8 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    __global const float *b = bp + bp_off + (long)cp * k * 16;
    long ap = 0;
    int p = 0;
#ifdef PDNN_REAL
    /* A's rows contiguous along the sum: 8 of each row's elements widened
     * by one vector load, where a scalar vload_half per broadcast is a
     * software conversion on PoCL. */
    if (as_p == 1) {
        for (; p + 8 <= k; p += 8, ap += 8) {
            const float8 x0 = LOADR8(0, a + ar[0] + ap), x1 = LOADR8(0, a + ar[1] + ap),
                         x2 = LOADR8(0, a + ar[2] + ap), x3 = LOADR8(0, a + ar[3] + ap),
                         x4 = LOADR8(0, a + ar[4] + ap), x5 = LOADR8(0, a + ar[5] + ap);
#define GEMM_NN_LANE(L) GEMM_NN_STEP(x0.L, x1.L, x2.L, x3.L, x4.L, x5.L); b += 16
            GEMM_NN_LANE(s0);
            GEMM_NN_LANE(s1);
            GEMM_NN_LANE(s2);
            GEMM_NN_LANE(s3);
            GEMM_NN_LANE(s4);
            GEMM_NN_LANE(s5);
            GEMM_NN_LANE(s6);
            GEMM_NN_LANE(s7);
#undef GEMM_NN_LANE
        }
    }
#endif
    for (; p < k; p++, b += 16, ap += as_p)
        GEMM_NN_STEP(LOAD_REAL(a, ar[0] + ap), LOAD_REAL(a, ar[1] + ap), LOAD_REAL(a, ar[2] + ap),
                     LOAD_REAL(a, ar[3] + ap), LOAD_REAL(a, ar[4] + ap), LOAD_REAL(a, ar[5] + ap));
    const float8 rows[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
    for (int r = 0; r < 6 && i0 + r < m; r++) {
        __global REAL_T *cr = cm + c_off + (long)(i0 + r) * ldc + j0;
        if (j0 + 16 <= n) {
            STORER8(rows[2 * r], 0, cr);
            STORER8(rows[2 * r + 1], 1, cr);
        } else {
            float o[16];
            vstore8(rows[2 * r], 0, o);
            vstore8(rows[2 * r + 1], 1, o);
            for (int j = 0; j < n - j0; j++)
                STORE_REAL(o[j], cr, j);
        }
    }
}

inline float hsum8(float8 v)
{
    const float4 s = v.lo + v.hi;
    const float2 u = s.lo + s.hi;
    return u.s0 + u.s1;
}

/* gemm_nt at m == 1 (a fully connected layer at batch 1): C's 8 columns
 * per work-item, 8 rows of B streamed at once (memory-bound: gemm_nt's
 * three A rows were copies of one). Columns past n read row n - 1 and are
 * not stored. */
__kernel void gemv_nt(__global const REAL_T *a, long a_off,
                      __global const REAL_T *b, long b_off, long ldb,
                      __global REAL_T *cm, long c_off, int n, int k, long sa, long sb, long sc)
{
    const int j0 = (int)get_global_id(0) * 8;
    a_off += (long)get_global_id(1) * sa, b_off += (long)get_global_id(1) * sb, c_off += (long)get_global_id(1) * sc;
    if (j0 >= n)
        return;
    __global const REAL_T *x = a + a_off;
    __global const REAL_T *br[8];
    for (int j = 0; j < 8; j++)
        br[j] = b + b_off + (long)min(j0 + j, n - 1) * ldb;
    float8 s0 = (float8)(0.0f), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    int p = 0;
    for (; p + 8 <= k; p += 8) {
        const float8 v = LOADR8(0, x + p);
        s0 = fma(v, LOADR8(0, br[0] + p), s0);
        s1 = fma(v, LOADR8(0, br[1] + p), s1);
        s2 = fma(v, LOADR8(0, br[2] + p), s2);
        s3 = fma(v, LOADR8(0, br[3] + p), s3);
        s4 = fma(v, LOADR8(0, br[4] + p), s4);
        s5 = fma(v, LOADR8(0, br[5] + p), s5);
        s6 = fma(v, LOADR8(0, br[6] + p), s6);
        s7 = fma(v, LOADR8(0, br[7] + p), s7);
    }
    float r[8] = {hsum8(s0), hsum8(s1), hsum8(s2), hsum8(s3), hsum8(s4), hsum8(s5), hsum8(s6), hsum8(s7)};
    for (; p < k; p++)
        for (int j = 0; j < 8; j++)
            r[j] = fma(LOAD_REAL(x, p), LOAD_REAL(br[j], p), r[j]);
    for (int j = 0; j < 8 && j0 + j < n; j++)
        STORE_REAL(r[j], cm, c_off + j0 + j);
}

/* gemm_nt's B: REAL_T, except bfloat16's, which the host widens into
 * float first (cl_matmul.c): its widening is three shuffles a vector on
 * x86 where float16's is one conversion, and the 3 x 4 tile widens seven
 * vectors for twelve FMAs (0.74x float32's speed read in place, PoCL). */
#if defined(PDNN_REAL) && PDNN_REAL == 2
#define NT_B_T float
#define NT_LOADB8 vload8
#define NT_LOADB F32_LOAD
#else
#define NT_B_T REAL_T
#define NT_LOADB8 LOADR8
#define NT_LOADB LOAD_REAL
#endif
__kernel void gemm_nt(__global const REAL_T *a, long a_off, long lda,
                      __global const NT_B_T *b, long b_off, long ldb,
                      __global REAL_T *cm, long c_off, long ldc,
                      int m, int n, int k, int n_rt, long sa, long sb, long sc)
{
    const int t = (int)get_global_id(0);
    const int rt = t % n_rt, cp = t / n_rt;
    const int i0 = rt * 3, j0 = cp * 4;
    a_off += (long)get_global_id(1) * sa, b_off += (long)get_global_id(1) * sb, c_off += (long)get_global_id(1) * sc;
    if (j0 >= n || i0 >= m)
        return;
    __global const REAL_T *a0 = a + a_off + (long)i0 * lda;
    __global const REAL_T *a1 = a + a_off + (long)min(i0 + 1, m - 1) * lda;
    __global const REAL_T *a2 = a + a_off + (long)min(i0 + 2, m - 1) * lda;
    if (j0 + 4 <= n) {
        __global const NT_B_T *b0 = b + b_off + (long)j0 * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        float8 s00 = (float8)(0.0f), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00, s13 = s00;
        float8 s20 = s00, s21 = s00, s22 = s00, s23 = s00;
        int p = 0;
        for (; p + 8 <= k; p += 8) {
            const float8 x0 = LOADR8(0, a0 + p), x1 = LOADR8(0, a1 + p), x2 = LOADR8(0, a2 + p);
            float8 w = NT_LOADB8(0, b0 + p);
            s00 = fma(x0, w, s00), s10 = fma(x1, w, s10), s20 = fma(x2, w, s20);
            w = NT_LOADB8(0, b1 + p);
            s01 = fma(x0, w, s01), s11 = fma(x1, w, s11), s21 = fma(x2, w, s21);
            w = NT_LOADB8(0, b2 + p);
            s02 = fma(x0, w, s02), s12 = fma(x1, w, s12), s22 = fma(x2, w, s22);
            w = NT_LOADB8(0, b3 + p);
            s03 = fma(x0, w, s03), s13 = fma(x1, w, s13), s23 = fma(x2, w, s23);
        }
        float r[3][4] = {{hsum8(s00), hsum8(s01), hsum8(s02), hsum8(s03)},
                         {hsum8(s10), hsum8(s11), hsum8(s12), hsum8(s13)},
                         {hsum8(s20), hsum8(s21), hsum8(s22), hsum8(s23)}};
        for (; p < k; p++) {
            const float w0 = NT_LOADB(b0, p), w1 = NT_LOADB(b1, p), w2 = NT_LOADB(b2, p), w3 = NT_LOADB(b3, p);
            const float x[3] = {LOAD_REAL(a0, p), LOAD_REAL(a1, p), LOAD_REAL(a2, p)};
            for (int i = 0; i < 3; i++) {
                r[i][0] = fma(x[i], w0, r[i][0]);
                r[i][1] = fma(x[i], w1, r[i][1]);
                r[i][2] = fma(x[i], w2, r[i][2]);
                r[i][3] = fma(x[i], w3, r[i][3]);
            }
        }
        for (int i = 0; i < 3 && i0 + i < m; i++)
            STORER4((float4)(r[i][0], r[i][1], r[i][2], r[i][3]), 0, cm + c_off + (long)(i0 + i) * ldc + j0);
        return;
    }
    __global const REAL_T *ar[3] = {a0, a1, a2};
    for (int i = 0; i < 3 && i0 + i < m; i++)
        for (int j = j0; j < n; j++) {
            __global const NT_B_T *bj = b + b_off + (long)j * ldb;
            float acc = 0.0f;
            for (int p = 0; p < k; p++)
                acc = fma(LOAD_REAL(ar[i], p), NT_LOADB(bj, p), acc);
            STORE_REAL(acc, cm, c_off + (long)(i0 + i) * ldc + j);
        }
}
