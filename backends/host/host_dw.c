/* The host's depthwise convolution in NCHW ("depthwise", ranked before
 * "onednn"): one channel's filter over its own plane, rows of W floats
 * read where they lie. oneDNN has no fast kernel for depthwise in plain
 * NCHW (its GEMM one ran 0.4-0.8 GFLOP/s), and its blocked one needs x and
 * y reordered around every call; MobileNetV2's depthwise layers were most
 * of its time on /cpu:0 in NCHW. NHWC is left to oneDNN, which runs it in
 * place.
 *
 * Each output row is the bias (and the residual z) plus every tap's
 * weight times the input it reads; taps whose input row lies in the
 * padding are left out, and with AVX-512 (chosen once, at the first
 * call) the columns run 16 at a time, the sums in registers, the left and
 * right padding through masked loads. Single-threaded: the layers are
 * small (MobileNetV2's are 1-7 MFLOP). */
#include "backends/host/host_internal.h"

#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

static float *fat(pdnn__buf b) { return (float *)(void *)((char *)b.region + b.offset); }

#define DW_MAX_TAPS 256 /* R x S held per channel; larger filters go to onednn */
#define DW_MAX_R 32

/* One output row: the input rows its taps read (those inside the image)
 * with the filter row each one takes, and the row's geometry. */
typedef struct dw_row {
    const float *xr[DW_MAX_R], *wr[DW_MAX_R];
    int nr;
    int64_t s, dil, stride, pad, w, q;
    float b;
    const float *z; /* the residual's row, or NULL */
    int relu;
    float cap;      /* > 0: relu's cap */
} dw_row;

/* Outputs [q0, q1) of the row, each tap checked against the image. */
static void row_plain(float *y, const dw_row *t, int64_t q0, int64_t q1)
{
    for (int64_t q = q0; q < q1; q++) {
        float acc = t->b + (t->z ? t->z[q] : 0.0f);
        for (int i = 0; i < t->nr; i++)
            for (int64_t s = 0; s < t->s; s++) {
                const int64_t iw = q * t->stride - t->pad + s * t->dil;
                if (iw >= 0 && iw < t->w)
                    acc += t->wr[i][s] * t->xr[i][iw];
            }
        if (t->relu)
            acc = acc < 0.0f ? 0.0f : t->cap > 0.0f && acc > t->cap ? t->cap : acc;
        y[q] = acc;
    }
}

typedef void dw_row_fn(float *y, const dw_row *t);

static void row_any(float *y, const dw_row *t) { row_plain(y, t, 0, t->q); }

#if defined(__x86_64__) && defined(__GNUC__)
/* The lanes j < n of a load from x[base] whose x[base + j] lies in the
 * row [0, w): the padding reads as 0, nothing outside the row is read. */
static unsigned lanes_in(int64_t base, int64_t n, int64_t w)
{
    const int64_t lo = base < 0 ? -base : 0, hi = w - base < n ? w - base : n;
    if (hi <= lo)
        return 0;
    return ((1u << hi) - 1u) & ~((1u << lo) - 1u);
}

/* 16 outputs at a time with AVX-512, the padding and the row's end
 * through masked loads (no scalar edges), the sums in registers, fused
 * multiply-adds; stride 2 takes the even lanes of two loads. */
__attribute__((target("avx512f"))) static void row_avx512(float *y, const dw_row *t)
{
    if (t->stride > 2) {
        row_plain(y, t, 0, t->q);
        return;
    }
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t q0 = 0; q0 < t->q; q0 += 16) {
        const int64_t nq = t->q - q0 < 16 ? t->q - q0 : 16;
        const __mmask16 out = (__mmask16)((1u << nq) - 1u);
        __m512 acc = _mm512_set1_ps(t->b);
        if (t->z)
            acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(out, t->z + q0));
        for (int64_t s = 0; s < t->s; s++) {
            const int64_t base = q0 * t->stride - t->pad + s * t->dil; /* x of lane 0 */
            if (t->stride == 1) {
                const __mmask16 m = (__mmask16)lanes_in(base, nq, t->w);
                for (int i = 0; i < t->nr; i++)
                    acc = _mm512_fmadd_ps(_mm512_set1_ps(t->wr[i][s]), _mm512_maskz_loadu_ps(m, t->xr[i] + base), acc);
            } else {
                const int64_t pair = 2 * nq - 1; /* x[base .. base + pair) is read */
                const __mmask16 ml = (__mmask16)lanes_in(base, pair < 16 ? pair : 16, t->w);
                const __mmask16 mh = (__mmask16)lanes_in(base + 16, pair > 16 ? pair - 16 : 0, t->w);
                for (int i = 0; i < t->nr; i++) {
                    const __m512 lo = _mm512_maskz_loadu_ps(ml, t->xr[i] + base);
                    const __m512 hi = _mm512_maskz_loadu_ps(mh, t->xr[i] + base + 16);
                    acc = _mm512_fmadd_ps(_mm512_set1_ps(t->wr[i][s]), _mm512_permutex2var_ps(lo, even, hi), acc);
                }
            }
        }
        /* max and min return their second operand where one is NaN:
         * NaN stays NaN, as the reference's compares leave it */
        if (t->relu)
            acc = _mm512_max_ps(_mm512_setzero_ps(), acc);
        if (t->cap > 0.0f)
            acc = _mm512_min_ps(_mm512_set1_ps(t->cap), acc);
        _mm512_mask_storeu_ps(y + q0, out, acc);
    }
}
#endif

static dw_row_fn *pick_row(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return row_avx512;
#endif
    return row_any;
}

/* Depthwise: one input and one output channel per group; x and y with W
 * innermost (NCHW); a filter of at most DW_MAX_R rows and DW_MAX_TAPS
 * taps. */
static void dw_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    if (c->groups != c->c || c->k != c->c)
        pdnn__plan_refuse(plan, "depthwise: not a depthwise convolution (groups = C = K)");
    else if (c->xs[3] != 1 || c->ys[3] != 1)
        pdnn__plan_refuse(plan, "depthwise: the host's runs NCHW only (NHWC goes to onednn, in place)");
    else if (c->r > DW_MAX_R || c->r * c->s > DW_MAX_TAPS)
        pdnn__plan_refuse(plan, "depthwise: a %lldx%lld filter is beyond the host's %d rows and %d taps",
                          (long long)c->r, (long long)c->s, DW_MAX_R, DW_MAX_TAPS);
}

static pdnn_status dw_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    (void)dev, (void)plan, (void)ws, (void)rep;
    static dw_row_fn *volatile row_cached;
    dw_row_fn *row = row_cached;
    if (!row)
        row_cached = row = pick_row();
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const float *x = fat(c->x_buf), *w = fat(c->w_buf);
    const float *bias = c->bias_buf.region ? fat(c->bias_buf) : NULL;
    const float *z = c->z_buf.region ? fat(c->z_buf) : NULL;
    float *y = fat(c->y_buf);
    float wk[DW_MAX_TAPS];
    dw_row t = {.s = c->s, .dil = c->dil_w, .stride = c->stride_w, .pad = c->pad_left, .w = c->w, .q = c->q,
                .relu = c->relu, .cap = c->relu && c->relu_cap > 0.0f ? c->relu_cap : 0.0f};
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t k = 0; k < c->k; k++) {
            const float *xp = x + n * c->xs[0] + k * c->xs[1];
            for (int64_t r = 0; r < c->r; r++)
                for (int64_t s = 0; s < c->s; s++)
                    wk[r * c->s + s] = w[k * c->ws[0] + r * c->ws[2] + s * c->ws[3]];
            t.b = bias ? bias[k] : 0.0f;
            for (int64_t p = 0; p < c->p; p++) {
                const int64_t yo = n * c->ys[0] + k * c->ys[1] + p * c->ys[2];
                t.nr = 0;
                for (int64_t r = 0; r < c->r; r++) {
                    const int64_t ih = p * c->stride_h - c->pad_top + r * c->dil_h;
                    if (ih >= 0 && ih < c->h) {
                        t.xr[t.nr] = xp + ih * c->xs[2];
                        t.wr[t.nr++] = wk + r * c->s;
                    }
                }
                t.z = z ? z + yo : NULL;
                row(y + yo, &t);
            }
        }
    return PDNN_SUCCESS;
}

/* Float32 sums in tap order: plain sums, the default tolerance. */
const pdnn__algo pdnn__host_dw_nchw = {
    .op = PDNN__OP_CONV2D_FWD, .name = "depthwise", .rank = 5, .plan = dw_plan, .run = dw_run, .residual = 1,
    .relu_cap = 1, .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
