/* The arithmetic of the CUDA backend's padded pooling (src/ops/pool_math.h),
 * checked on the host: the decomposition it drives cuDNN with (padded
 * copy, unpadded floor-mode pooling with the whole window as divisor, a
 * per-position scale) is emulated in plain C and compared with the host
 * reference, so the math holds even where no GPU can run the cuDNN side. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "helpers.h"
#include "ops/pool_math.h"
#ifdef PDNN_HAVE_CUDA
#include "backend.h" /* white-box: the CUDA backend's registry and plans */
#endif

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

Test(pool_math, divisor_extents_by_hand)
{
    /* 3 wide, window 2, stride 2, no padding, ceil mode: windows [0,2) and
     * [2,3); the second counts 1 in both average modes. */
    pdnn__pool_axis a = {3, 2, 2, 2, 0, 0};
    cr_assert_eq(pdnn__pool_divisor_extent(&a, PDNN_POOL_AVG_INCLUDE_PADDING, 0), 2);
    cr_assert_eq(pdnn__pool_divisor_extent(&a, PDNN_POOL_AVG_INCLUDE_PADDING, 1), 1);
    cr_assert_eq(pdnn__pool_divisor_extent(&a, PDNN_POOL_AVG_EXCLUDE_PADDING, 1), 1);
    int64_t copied = 0;
    cr_assert_eq(pdnn__pool_padded_length(&a, &copied), 4);
    cr_assert_eq(copied, 3);
    /* Padding 1 both sides: windows [-1,1) and [1,3); include-padding
     * counts the pad, exclude-padding does not. */
    pdnn__pool_axis b = {3, 2, 2, 2, 1, 1};
    cr_assert_eq(pdnn__pool_divisor_extent(&b, PDNN_POOL_AVG_INCLUDE_PADDING, 0), 2);
    cr_assert_eq(pdnn__pool_divisor_extent(&b, PDNN_POOL_AVG_EXCLUDE_PADDING, 0), 1);
    cr_assert_eq(pdnn__pool_divisor_extent(&b, PDNN_POOL_AVG_EXCLUDE_PADDING, 1), 2);
    /* TF SAME, 4 wide, window 3, stride 2, pad 0 before, 1 after: windows
     * [0,3) and [2,5); the second ends on the pad: 3 with it, 2 without. */
    pdnn__pool_axis s = {4, 2, 3, 2, 0, 1};
    cr_assert_eq(pdnn__pool_divisor_extent(&s, PDNN_POOL_AVG_INCLUDE_PADDING, 1), 3);
    cr_assert_eq(pdnn__pool_divisor_extent(&s, PDNN_POOL_AVG_EXCLUDE_PADDING, 1), 2);
    /* Floor mode, 8 tall, window 3, stride 3, pad 2 before: windows end at
     * 7 in padded rows, so only 5 of the 8 input rows are ever read. */
    pdnn__pool_axis f = {8, 3, 3, 3, 2, 0};
    cr_assert_eq(pdnn__pool_padded_length(&f, &copied), 9);
    cr_assert_eq(copied, 7);
    /* The scale turns a 2x2 average into the clipped one: 4 / (2 * 1). */
    float scale[4];
    pdnn__pool_avg_scale(&a, &a, PDNN_POOL_AVG_INCLUDE_PADDING, scale);
    const float want[4] = {1.0f, 2.0f, 2.0f, 4.0f};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(scale[i], want[i], 0, "scale[%d] = %g", i, (double)scale[i]);
}

/* What cuDNN is asked to do, in plain C: x is stored with strides c->xs;
 * y (logical NCHW order) receives the result. Returns 1 if the copy of
 * the input had to be clipped (rows or columns no window reads). */
static int emulate_padded_pooling(const pdnn__pool2d_call *c, const float *x, float *y)
{
    pdnn__pool_axis ah, aw;
    pdnn__pool_axes(c, &ah, &aw);
    int64_t hc = 0, wc = 0;
    const int64_t hp = pdnn__pool_padded_length(&ah, &hc), wp = pdnn__pool_padded_length(&aw, &wc);
    /* cuDNN's floor formula on the padded copy must give exactly P x Q,
     * and the copied image must lie inside it. */
    cr_assert_eq((hp - c->win_h) / c->stride_h + 1, c->p);
    cr_assert_eq((wp - c->win_w) / c->stride_w + 1, c->q);
    cr_assert(hc >= 1 && hc <= c->h && c->pad_top + hc <= hp);
    cr_assert(wc >= 1 && wc <= c->w && c->pad_left + wc <= wp);
    const int64_t pdims[4] = {c->n, c->c, hp, wp};
    int64_t pst[4];
    pdnn__layout_strides(c->x_layout, pdims, pst);
    const int64_t pn = c->n * c->c * hp * wp;
    float *pad = malloc(sizeof(float) * (size_t)pn);
    cr_assert_not_null(pad);
    const int avg = c->mode != PDNN_POOL_MAX;
    for (int64_t i = 0; i < pn; i++)
        pad[i] = avg ? 0.0f : -INFINITY;
    float *origin = pad + c->pad_top * pst[2] + c->pad_left * pst[3];
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t ch = 0; ch < c->c; ch++)
            for (int64_t i = 0; i < hc; i++)
                for (int64_t j = 0; j < wc; j++)
                    origin[n * pst[0] + ch * pst[1] + i * pst[2] + j * pst[3]] =
                        x[n * c->xs[0] + ch * c->xs[1] + i * c->xs[2] + j * c->xs[3]];
    float *scale = NULL;
    if (avg) {
        scale = malloc(sizeof(float) * (size_t)(c->p * c->q));
        cr_assert_not_null(scale);
        pdnn__pool_avg_scale(&ah, &aw, c->mode, scale);
    }
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t ch = 0; ch < c->c; ch++)
            for (int64_t p = 0; p < c->p; p++)
                for (int64_t q = 0; q < c->q; q++) {
                    double sum = 0.0;
                    float mx = -INFINITY;
                    for (int64_t i = p * c->stride_h; i < p * c->stride_h + c->win_h; i++)
                        for (int64_t j = q * c->stride_w; j < q * c->stride_w + c->win_w; j++) {
                            const float v = pad[n * pst[0] + ch * pst[1] + i * pst[2] + j * pst[3]];
                            sum += v;
                            if (v > mx)
                                mx = v;
                        }
                    float out = mx;
                    if (avg) /* cuDNN's full-window average in float, then the scale */
                        out = (float)(sum / (double)(c->win_h * c->win_w)) * scale[p * c->q + q];
                    y[((n * c->c + ch) * c->p + p) * c->q + q] = out;
                }
    free(scale);
    free(pad);
    return hc < c->h || wc < c->w;
}

/* One spatial axis of the grid: input length, window, stride, pads. */
typedef struct axis_case {
    int in, win, stride, pa, pb;
} axis_case;

static int axis_grid(axis_case *out, int max)
{
    static const int ins[] = {1, 2, 3, 5, 8};
    int n = 0;
    for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
        for (int win = 1; win <= 4; win++)
            for (int stride = 1; stride <= 3; stride++)
                for (int pa = 0; pa < win; pa++)
                    for (int pb = 0; pb < win; pb++)
                        if (ins[i] + pa + pb >= win && n < max)
                            out[n++] = (axis_case){ins[i], win, stride, pa, pb};
    return n;
}

Test(pool_math, padded_decomposition_matches_host)
{
    pdnn_context *ctx = th_context();
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    axis_case axes[600];
    const int na = axis_grid(axes, 600);
    cr_assert(na > 300 && na < 600, "%d axis cases", na);
    int cases = 0, clipped = 0, asymmetric = 0, ceil_grew = 0;
    const int64_t nb = 2, nc = 3;
    for (int hi = 0; hi < na; hi++)
        for (int ceil_mode = 0; ceil_mode < 2; ceil_mode++)
            for (int m = 0; m < 3; m++) {
                /* The width axis takes another grid point, so that the two
                 * axes differ without a full cross product. */
                const axis_case *ah = &axes[hi], *aw = &axes[(hi * 37 + m * 101 + ceil_mode * 7 + 11) % na];
                const int variant = hi + m + ceil_mode;
                pdnn_pool2d_params prm;
                pdnn_pool2d_params_init(&prm);
                prm.mode = (pdnn_pool_mode)m;
                prm.window_h = ah->win;
                prm.window_w = aw->win;
                prm.stride_h = ah->stride;
                prm.stride_w = aw->stride;
                prm.pad_top = ah->pa;
                prm.pad_bottom = ah->pb;
                prm.pad_left = aw->pa;
                prm.pad_right = aw->pb;
                prm.ceil_mode = ceil_mode;
                const pdnn_layout xl = variant & 1 ? PDNN_NHWC : PDNN_NCHW;
                const pdnn_layout yl = variant & 2 ? PDNN_NHWC : PDNN_NCHW;
                pdnn_tensor_desc xd = th_desc(xl, nb, nc, ah->in, aw->in);
                int64_t od[4];
                cr_assert_eq(pdnn_pool2d_output_dims(&xd, &prm, od), PDNN_SUCCESS, "%s", pdnn_last_error());
                pdnn_tensor_desc yd = th_desc(yl, od[0], od[1], od[2], od[3]);

                const int64_t xn = pdnn_tensor_desc_elements(&xd), yn = pdnn_tensor_desc_elements(&yd);
                float *xl_data = malloc(sizeof(float) * (size_t)xn), *xm = malloc(sizeof(float) * (size_t)xn);
                float *emu = malloc(sizeof(float) * (size_t)yn), *want = malloc(sizeof(float) * (size_t)yn);
                cr_assert(xl_data && xm && emu && want);
                th_fill(xl_data, xn, (uint32_t)(cases + 1));
                th_to_layout(xl_data, xm, xl, xd.dims);

                pdnn_tensor *tx = th_upload(host, &xd, xm), *ty = th_upload(host, &yd, NULL);
                cr_assert_eq(pdnn_pool2d_forward(&prm, tx, ty), PDNN_SUCCESS, "%s", pdnn_last_error());
                float *ym = th_download(ty);
                th_from_layout(ym, want, yl, yd.dims);

                pdnn__pool2d_call c = {
                    .n = nb, .c = nc, .h = ah->in, .w = aw->in, .p = od[2], .q = od[3],
                    .mode = prm.mode,
                    .win_h = ah->win, .win_w = aw->win, .stride_h = ah->stride, .stride_w = aw->stride,
                    .pad_top = ah->pa, .pad_left = aw->pa, .pad_bottom = ah->pb, .pad_right = aw->pb,
                    .x_layout = xl, .y_layout = yl,
                };
                pdnn__layout_strides(xl, xd.dims, c.xs);
                pdnn__layout_strides(yl, yd.dims, c.ys);
                clipped += emulate_padded_pooling(&c, xm, emu);
                asymmetric += ah->pa != ah->pb || aw->pa != aw->pb;
                ceil_grew += od[2] > (ah->in + ah->pa + ah->pb - ah->win) / ah->stride + 1 ||
                             od[3] > (aw->in + aw->pa + aw->pb - aw->win) / aw->stride + 1;

                for (int64_t j = 0; j < yn; j++) {
                    const double e = fabs((double)emu[j] - (double)want[j]);
                    if (!(e <= (m == PDNN_POOL_MAX ? 0.0 : 1e-6)))
                        cr_assert_fail("pool %s win %dx%d stride %d,%d pad %d,%d,%d,%d ceil %d, input %dx%d %s: "
                                       "element %lld of the decomposition is %.9g, the host says %.9g",
                                       m == 0 ? "max" : m == 1 ? "avg-incl" : "avg-excl", ah->win, aw->win,
                                       ah->stride, aw->stride, ah->pa, ah->pb, aw->pa, aw->pb, ceil_mode, ah->in,
                                       aw->in, pdnn_layout_name(xl), (long long)j, (double)emu[j],
                                       (double)want[j]);
                }
                pdnn_tensor_release(tx);
                pdnn_tensor_release(ty);
                free(ym);
                free(xl_data);
                free(xm);
                free(emu);
                free(want);
                cases++;
            }
    /* The grid reaches every reason cuDNN alone falls short. */
    cr_assert(clipped > 0 && asymmetric > 0 && ceil_grew > 0, "clipped %d, asymmetric %d, ceil %d", clipped,
              asymmetric, ceil_grew);
    cr_log_info("%d poolings: %d with a clipped copy, %d with asymmetric padding, %d where ceil mode adds a "
                "window",
                cases, clipped, asymmetric, ceil_grew);
    pdnn_context_destroy(ctx);
}

#ifdef PDNN_HAVE_CUDA
static pdnn__plan fresh_plan(void)
{
    pdnn__plan p;
    memset(&p, 0, sizeof p);
    p.supported = 1;
    p.config = -1;
    return p;
}

/* Needs no device: every backward op has CUDA algorithms, and pooling's
 * plan (arithmetic only) sizes y's recomputation and the dx copy, and
 * refuses the padding cuDNN cannot express instead of pooling wrongly. */
Test(cuda, backward_ops_are_registered_and_pool_backward_plans)
{
    static const pdnn__op ops[] = {PDNN__OP_CONV2D_BWD_DATA, PDNN__OP_CONV2D_BWD_FILTER, PDNN__OP_CONV2D_BWD_BIAS,
                                   PDNN__OP_POOL2D_BWD};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        cr_assert_not_null(pdnn__cuda_backend.algos[ops[i]], "op %d has no CUDA algorithm list", (int)ops[i]);
        cr_assert_not_null(pdnn__cuda_backend.algos[ops[i]][0], "op %d has no CUDA algorithm", (int)ops[i]);
        for (int a = 0; pdnn__cuda_backend.algos[ops[i]][a]; a++)
            cr_assert_eq(pdnn__cuda_backend.algos[ops[i]][a]->op, ops[i]);
    }
    const pdnn__algo *pb = pdnn__cuda_backend.algos[PDNN__OP_POOL2D_BWD][0];
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_POOL2D_BWD;
    pdnn__pool2d_call *c = &call.u.pool2d;
    c->n = 2, c->c = 3, c->h = 8, c->w = 8, c->p = 4, c->q = 4;
    c->mode = PDNN_POOL_MAX;
    c->win_h = c->win_w = c->stride_h = c->stride_w = 2;
    c->x_layout = c->y_layout = PDNN_NCHW;
    c->dx_layout = PDNN_NHWC;
    const int64_t xd[4] = {2, 3, 8, 8}, yd[4] = {2, 3, 4, 4};
    pdnn__layout_strides(PDNN_NCHW, xd, c->xs);
    pdnn__layout_strides(PDNN_NCHW, yd, c->ys);
    pdnn__layout_strides(PDNN_NHWC, xd, c->dxs);
    pdnn__plan plan = fresh_plan();
    pb->plan(NULL, &call, &plan);
    cr_assert(plan.supported, "%s", plan.why);
    /* y: 96 floats (384 B, 512 aligned); dx in x's strides: 384 floats */
    cr_assert_eq(plan.workspace, (size_t)512 + 1536);
    c->dx_layout = PDNN_NCHW;
    memcpy(c->dxs, c->xs, sizeof c->xs);
    plan = fresh_plan();
    pb->plan(NULL, &call, &plan);
    cr_assert(plan.supported, "%s", plan.why);
    cr_assert_eq(plan.workspace, (size_t)512, "no dx copy when dx is stored like x");
    /* 7 rows, window 2 stride 2, pad bottom 1: 4 rows out, which cuDNN's
     * symmetric padding (top 0) gives as 3. */
    c->h = 7;
    c->pad_bottom = 1;
    const int64_t xd7[4] = {2, 3, 7, 8};
    pdnn__layout_strides(PDNN_NCHW, xd7, c->xs);
    memcpy(c->dxs, c->xs, sizeof c->xs);
    plan = fresh_plan();
    pb->plan(NULL, &call, &plan);
    cr_assert(!plan.supported);
    cr_assert(strstr(plan.why, "asymmetric padding") != NULL, "why: %s", plan.why);
}
#endif
