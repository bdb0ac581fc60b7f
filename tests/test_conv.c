/* conv2d white-box checks: hand-computed values, what each algorithm
 * claims and refuses, AUTO's choices, Winograd's chunking. Parity of every
 * algorithm and configuration against the host reference over the grid of
 * shapes and layouts is the op-parity harness's (tests/parity.c). */
#include "helpers.h"
#include "backend.h"
#include "ops/dispatch.h"
#include "core/context.h"
#ifdef PDNN_HAVE_OPENCL
#include "backends/opencl/cl_hooks.h" /* pdnn__opencl_winograd_chunk_bytes */
#endif

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The configuration the last run_case ran (pdnn_conv2d_last_tuning). */
static char last_config[48];

typedef struct conv_case {
    int64_t n, c, h, w, k, r, s;
    int sh, sw, dh, dw, pt, pb, pl, pr, groups, bias, relu;
    pdnn_layout xl, wl, yl;
} conv_case;

static void case_name(const conv_case *k, char *buf, size_t len)
{
    snprintf(buf, len,
             "n%lld c%lld %lldx%lld k%lld %lldx%lld stride %d,%d dil %d,%d pad %d,%d,%d,%d g%d "
             "bias%d relu%d %s/%s->%s",
             (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w, (long long)k->k,
             (long long)k->r, (long long)k->s, k->sh, k->sw, k->dh, k->dw, k->pt, k->pb, k->pl,
             k->pr, k->groups, k->bias, k->relu, pdnn_layout_name(k->xl), pdnn_layout_name(k->wl),
             pdnn_layout_name(k->yl));
}

static void params_of(const conv_case *k, pdnn_conv2d_params *p)
{
    pdnn_conv2d_params_init(p);
    p->stride_h = k->sh;
    p->stride_w = k->sw;
    p->dilation_h = k->dh;
    p->dilation_w = k->dw;
    p->pad_top = k->pt;
    p->pad_bottom = k->pb;
    p->pad_left = k->pl;
    p->pad_right = k->pr;
    p->groups = k->groups;
    p->relu = k->relu;
}

/* Which algorithm run_case asks for (set per device run below). */
static pdnn_conv_algo run_algo = PDNN_CONV_ALGO_DIRECT;

/* Runs one case on dev with logical-order inputs; returns the output in
 * logical NKPQ order (malloc'd) and its dims. */
static float *run_case(pdnn_device *dev, const conv_case *k, const float *x, const float *w,
                       const float *b, int64_t od[4])
{
    pdnn_tensor_desc xd = th_desc(k->xl, k->n, k->c, k->h, k->w);
    pdnn_tensor_desc wd = th_desc(k->wl, k->k, k->c / k->groups, k->r, k->s);
    pdnn_tensor_desc bd = th_desc(PDNN_LAYOUT_X, k->k, 1, 1, 1);
    pdnn_conv2d_params p;
    params_of(k, &p);
    p.algorithm = run_algo;
    cr_assert_eq(pdnn_conv2d_output_dims(&xd, &wd, &p, od), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc yd = th_desc(k->yl, od[0], od[1], od[2], od[3]);

    float *xm = malloc(sizeof(float) * (size_t)pdnn_tensor_desc_elements(&xd));
    float *wm = malloc(sizeof(float) * (size_t)pdnn_tensor_desc_elements(&wd));
    th_to_layout(x, xm, k->xl, xd.dims);
    th_to_layout(w, wm, k->wl, wd.dims);
    pdnn_tensor *tx = th_upload(dev, &xd, xm);
    pdnn_tensor *tw = th_upload(dev, &wd, wm);
    pdnn_tensor *tb = k->bias ? th_upload(dev, &bd, b) : NULL;
    pdnn_tensor *ty = th_upload(dev, &yd, NULL);
    pdnn_status st = pdnn_conv2d_forward(&p, tx, tw, tb, ty);
    cr_assert_eq(st, PDNN_SUCCESS, "conv2d (%s): %s", pdnn_conv_algo_name(run_algo), pdnn_last_error());
    cr_assert_eq(pdnn_conv2d_last_algorithm(), run_algo, "ran %s, asked for %s",
                 pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()), pdnn_conv_algo_name(run_algo));
    pdnn_conv2d_tuning t;
    cr_assert_eq(pdnn_conv2d_last_tuning(&t), PDNN_SUCCESS);
    snprintf(last_config, sizeof last_config, "%s", t.config);
    float *ym = th_download(ty);
    float *y = malloc(sizeof(float) * (size_t)pdnn_tensor_desc_elements(&yd));
    th_from_layout(ym, y, k->yl, yd.dims);
    pdnn_tensor_release(tx);
    pdnn_tensor_release(tw);
    pdnn_tensor_release(tb);
    pdnn_tensor_release(ty);
    free(xm);
    free(wm);
    free(ym);
    return y;
}

/* float32 tolerance grows with the reduction length; a wrong element is
 * off by O(0.1..1) with inputs in [-1, 1). */
static void compare(const float *got, const float *want, int64_t n, int64_t red, const char *what,
                    const char *dev)
{
    const double tol = 1e-5 + 2e-6 * (double)red;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]);
        if (!(e <= tol)) /* catches NaN too */
            cr_assert_fail("%s on %s: element %lld is %.7g, expected %.7g (tolerance %.2g)", what,
                           dev, (long long)i, (double)got[i], (double)want[i], tol);
    }
}

/* ---- the oracle itself ------------------------------------------------ */

Test(conv_reference, hand_computed_values)
{
    pdnn_context *ctx = th_context();
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    /* 3x3 image 1..9, 2x2 filter of ones: sums of each 2x2 block. */
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const float w[4] = {1, 1, 1, 1};
    const float b[1] = {0.5f};
    conv_case k = {1, 1, 3, 3, 1, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW};
    int64_t od[4];
    float *y = run_case(host, &k, x, w, b, od);
    cr_assert_eq(od[2], 2);
    cr_assert_eq(od[3], 2);
    const float want[4] = {12.5f, 16.5f, 24.5f, 28.5f};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], want[i], 1e-6, "y[%d] = %g, expected %g", i, y[i], want[i]);
    free(y);
    /* Padding 1, stride 2: corners see 4, 4, 4, 4 elements of the image. */
    conv_case k2 = {1, 1, 3, 3, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW};
    float *y2 = run_case(host, &k2, x, w, b, od);
    cr_assert_eq(od[2], 2);
    const float want2[4] = {1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y2[i], want2[i], 1e-6, "padded y[%d] = %g, expected %g", i, y2[i], want2[i]);
    free(y2);
    /* ReLU clamps, bias adds: a filter of -1 gives -sum + bias <= 0. */
    const float wneg[4] = {-1, -1, -1, -1};
    conv_case k3 = k;
    k3.relu = 1;
    k3.bias = 1;
    float *y3 = run_case(host, &k3, x, wneg, b, od);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y3[i], 0.0f, 0, "relu y[%d] = %g", i, y3[i]);
    free(y3);
    pdnn_context_destroy(ctx);
}

/* The 3x3 image, 2x2 filter, bias and residual z of the hand-computed
 * fused-epilogue tests, on dev, and y {1,1,2,2} (NCHW). */
typedef struct tiny_conv {
    pdnn_tensor *x, *w, *b, *z, *y;
} tiny_conv;

static tiny_conv tiny_upload(pdnn_device *dev, const float x[9], const float w[4], const float b[1],
                             const float z[4])
{
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 1, 3, 3), wd = th_desc(PDNN_OIHW, 1, 1, 2, 2);
    pdnn_tensor_desc bd = th_desc(PDNN_LAYOUT_X, 1, 1, 1, 1), yd = th_desc(PDNN_NCHW, 1, 1, 2, 2);
    tiny_conv t = {th_upload(dev, &xd, x), th_upload(dev, &wd, w), th_upload(dev, &bd, b), th_upload(dev, &yd, z),
                   NULL};
    cr_assert_eq(pdnn_tensor_create(dev, &yd, &t.y), PDNN_SUCCESS);
    return t;
}

static void tiny_release(tiny_conv *t)
{
    pdnn_tensor *all[] = {t->x, t->w, t->b, t->z, t->y};
    for (int i = 0; i < 5; i++)
        pdnn_tensor_release(all[i]);
}

/* relu_cap (ReLU6's form): hand-computed values on every device, under
 * AUTO, direct (OpenCL's has no cap: the dispatcher clips after it) and
 * depthwise (which clips in its epilogue), with and without a residual;
 * and the refusals: NaN, infinite, negative, a cap without the relu. */
Test(conv_reference, relu_cap_values_and_refusals)
{
    pdnn_context *ctx = th_context();
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, b[1] = {-13.0f};
    const float z[4] = {0, -2, 1, 0}; /* sums 12 16 24 28, less 13: -1 3 11 15 */
    const float want[2][4] = {{0, 3, 6, 6}, {0, 1, 6, 6}};
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.relu = 1;
    p.relu_cap = 6.0f;
    for (int d = 0; d < pdnn_device_count(ctx); d++) {
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_device_get(ctx, d, &dev), PDNN_SUCCESS);
        tiny_conv t = tiny_upload(dev, x, w, b, z);
        pdnn_tensor *xt = t.x, *wt = t.w, *bt = t.b, *zt = t.z, *yt = t.y;
        static const pdnn_conv_algo algos[] = {PDNN_CONV_ALGO_AUTO, PDNN_CONV_ALGO_DIRECT, PDNN_CONV_ALGO_DEPTHWISE};
        for (int a = 0; a < 3; a++)
            for (int r = 0; r < 2; r++) {
                p.algorithm = algos[a];
                pdnn_status st = r ? pdnn_conv2d_forward_residual(&p, xt, wt, bt, zt, yt)
                                   : pdnn_conv2d_forward(&p, xt, wt, bt, yt);
                if (st == PDNN_ERR_UNSUPPORTED && a == 2)
                    continue; /* no depthwise algorithm on this backend */
                cr_assert_eq(st, PDNN_SUCCESS, "%s algo %d residual %d: %s", dev->name, a, r, pdnn_last_error());
                float *y = th_download(yt);
                for (int i = 0; i < 4; i++)
                    cr_assert_float_eq(y[i], want[r][i], 1e-5, "%s algo %d residual %d: y[%d] = %g, expected %g",
                                       dev->name, a, r, i, (double)y[i], (double)want[r][i]);
                free(y);
            }
        p.algorithm = PDNN_CONV_ALGO_AUTO;
        const float bad[] = {NAN, INFINITY, -1.0f};
        for (int i = 0; i < 3; i++) {
            p.relu_cap = bad[i];
            cr_assert_eq(pdnn_conv2d_forward(&p, xt, wt, bt, yt), PDNN_ERR_INVALID_ARGUMENT, "cap %g", (double)bad[i]);
            cr_assert_not_null(strstr(pdnn_last_error(), "relu_cap"), "%s", pdnn_last_error());
        }
        p.relu_cap = 6.0f;
        p.relu = 0;
        cr_assert_eq(pdnn_conv2d_forward(&p, xt, wt, bt, yt), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_not_null(strstr(pdnn_last_error(), "relu is 0"), "%s", pdnn_last_error());
        p.relu = 1;
        tiny_release(&t);
    }
    pdnn_context_destroy(ctx);
}

/* pdnn_conv2d_forward_residual: hand-computed values on every device
 * (the residual before the relu: z = -30 zeroes the largest sums), and
 * the refusals: no z, z of another shape or layout, z over y's memory. */
Test(conv_reference, residual_values_and_refusals)
{
    pdnn_context *ctx = th_context();
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, b[1] = {0.5f};
    const float z[4] = {1, -30, 2, -30}; /* sums 12.5 16.5 24.5 28.5 */
    const float want[4] = {13.5f, 0, 26.5f, 0};
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.relu = 1;
    for (int d = 0; d < pdnn_device_count(ctx); d++) {
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_device_get(ctx, d, &dev), PDNN_SUCCESS);
        tiny_conv t = tiny_upload(dev, x, w, b, z);
        pdnn_tensor *xt = t.x, *wt = t.w, *bt = t.b, *zt = t.z, *yt = t.y;
        for (int a = 0; a < 2; a++) { /* AUTO, then direct (the unfused path on OpenCL) */
            p.algorithm = a ? PDNN_CONV_ALGO_DIRECT : PDNN_CONV_ALGO_AUTO;
            cr_assert_eq(pdnn_conv2d_forward_residual(&p, xt, wt, bt, zt, yt), PDNN_SUCCESS, "%s: %s", dev->name,
                         pdnn_last_error());
            float *y = th_download(yt);
            for (int i = 0; i < 4; i++)
                cr_assert_float_eq(y[i], want[i], 1e-5, "%s algo %d: y[%d] = %g, expected %g", dev->name, a, i,
                                   (double)y[i], (double)want[i]);
            free(y);
        }
        p.algorithm = PDNN_CONV_ALGO_AUTO;
        cr_assert_eq(pdnn_conv2d_forward_residual(&p, xt, wt, bt, NULL, yt), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_not_null(strstr(pdnn_last_error(), "z is NULL"));
        pdnn_tensor *zbad = NULL, *znhwc = NULL;
        pdnn_tensor_desc bad = th_desc(PDNN_NCHW, 1, 1, 2, 3), nhwc = th_desc(PDNN_NHWC, 1, 1, 2, 2);
        cr_assert_eq(pdnn_tensor_create(dev, &bad, &zbad), PDNN_SUCCESS);
        cr_assert_eq(pdnn_tensor_create(dev, &nhwc, &znhwc), PDNN_SUCCESS);
        cr_assert_eq(pdnn_conv2d_forward_residual(&p, xt, wt, bt, zbad, yt), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_not_null(strstr(pdnn_last_error(), "residual"), "%s", pdnn_last_error());
        cr_assert_eq(pdnn_conv2d_forward_residual(&p, xt, wt, bt, znhwc, yt), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_eq(pdnn_conv2d_forward_residual(&p, xt, wt, bt, yt, yt), PDNN_ERR_INVALID_ARGUMENT);
        pdnn_tensor_release(zbad);
        pdnn_tensor_release(znhwc);
        tiny_release(&t);
    }
    pdnn_context_destroy(ctx);
}

/* ---- parity on accelerators ------------------------------------------ */

/* implicit_gemm refuses groups whose output channels are not a multiple
 * of 4 with PDNN_ERR_UNSUPPORTED and a message saying why, and AUTO
 * still runs them. */
Test(conv_parity, implicit_gemm_refuses_narrow_groups)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context_with(PDNN_CONV_ALGO_IMPLICIT_GEMM, devs, &ndev);
    for (int i = 0; i < ndev; i++) {
        pdnn_device_info info;
        pdnn_device_get_info(devs[i], &info);
        pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 6, 5, 5), wd = th_desc(PDNN_OIHW, 6, 3, 3, 3);
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.groups = 2;
        p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
        pdnn_tensor_desc yd = th_desc(PDNN_NCHW, 1, 6, 5, 5);
        pdnn_tensor *x = th_upload(devs[i], &xd, NULL), *w = th_upload(devs[i], &wd, NULL);
        pdnn_tensor *y = th_upload(devs[i], &yd, NULL);
        p.algorithm = PDNN_CONV_ALGO_IMPLICIT_GEMM;
        cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_ERR_UNSUPPORTED, "groups of 3 ran");
        cr_assert(strstr(pdnn_last_error(), "implicit_gemm") && strstr(pdnn_last_error(), "groups"),
                  "unclear message: %s", pdnn_last_error());
        if (strcmp(info.backend, "opencl") == 0)
            cr_assert(strstr(pdnn_last_error(), "6 output channels in 2 groups"), "unclear message: %s",
                      pdnn_last_error());
        p.algorithm = PDNN_CONV_ALGO_AUTO;
        cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_neq(pdnn_conv2d_last_algorithm(), PDNN_CONV_ALGO_IMPLICIT_GEMM);
        pdnn_tensor_release(x);
        pdnn_tensor_release(w);
        pdnn_tensor_release(y);
    }
    pdnn_context_destroy(ctx);
}

/* gemm_1x1 refuses what it cannot run (a 3x3 filter, padding, groups of 2
 * output channels) with PDNN_ERR_UNSUPPORTED and a message saying why,
 * and AUTO still runs those shapes. */
Test(conv_parity, gemm_1x1_refuses_other_shapes)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context_with(PDNN_CONV_ALGO_GEMM_1X1, devs, &ndev);
    /* C, K, R, pad, groups */
    const int64_t shapes[][5] = {{8, 8, 3, 1, 1}, {8, 8, 3, 0, 1}, {8, 8, 1, 1, 1}, {8, 4, 1, 0, 2}};
    for (int i = 0; i < ndev; i++) {
        for (int si = 0; si < 4; si++) {
            const int64_t C = shapes[si][0], K = shapes[si][1], R = shapes[si][2], G = shapes[si][4];
            const int pad = (int)shapes[si][3];
            pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, C, 6, 6), wd = th_desc(PDNN_OIHW, K, C / G, R, R);
            pdnn_conv2d_params p;
            pdnn_conv2d_params_init(&p);
            p.groups = (int)G;
            p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
            int64_t od[4];
            cr_assert_eq(pdnn_conv2d_output_dims(&xd, &wd, &p, od), PDNN_SUCCESS);
            pdnn_tensor_desc yd = th_desc(PDNN_NCHW, od[0], od[1], od[2], od[3]);
            pdnn_tensor *x = th_upload(devs[i], &xd, NULL), *w = th_upload(devs[i], &wd, NULL);
            pdnn_tensor *y = th_upload(devs[i], &yd, NULL);
            p.algorithm = PDNN_CONV_ALGO_GEMM_1X1;
            cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_ERR_UNSUPPORTED, "shape %d ran", si);
            cr_assert(strstr(pdnn_last_error(), "gemm_1x1") && strstr(pdnn_last_error(), "1x1 filters"),
                      "unclear message: %s", pdnn_last_error());
            p.algorithm = PDNN_CONV_ALGO_AUTO;
            cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
            cr_assert_neq(pdnn_conv2d_last_algorithm(), PDNN_CONV_ALGO_GEMM_1X1);
            pdnn_tensor_release(x);
            pdnn_tensor_release(w);
            pdnn_tensor_release(y);
        }
    }
    pdnn_context_destroy(ctx);
}

static int is_opencl(pdnn_device *d)
{
    pdnn_device_info info;
    return pdnn_device_get_info(d, &info) == PDNN_SUCCESS && strcmp(info.backend, "opencl") == 0;
}

/* tiled on grouped convolutions: 16-channel groups run, others are
 * refused with PDNN_ERR_UNSUPPORTED, and AUTO still runs them. */
Test(conv_parity, tiled_claims_what_it_runs)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context_with(PDNN_CONV_ALGO_TILED, devs, &ndev);
    pdnn_device *host;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    const int64_t shapes[][3] = {{32, 64, 2}, {64, 64, 4}, {6, 12, 3}, {8, 8, 8}}; /* C, K, groups */
    for (int si = 0; si < 4; si++) {
        int64_t C = shapes[si][0], K = shapes[si][1], G = shapes[si][2];
        pdnn_tensor_desc xd = th_desc(PDNN_NHWC, 2, C, 9, 11), wd = th_desc(PDNN_OIHW, K, C / G, 3, 3);
        float *x = malloc(sizeof(float) * (size_t)(2 * C * 99)), *w = malloc(sizeof(float) * (size_t)(K * C / G * 9));
        th_fill(x, 2 * C * 99, 3);
        th_fill(w, K * C / G * 9, 4);
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.groups = (int)G;
        p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
        int64_t od[4];
        cr_assert_eq(pdnn_conv2d_output_dims(&xd, &wd, &p, od), PDNN_SUCCESS);
        pdnn_tensor_desc yd = th_desc(PDNN_NCHW, od[0], od[1], od[2], od[3]);
        pdnn_tensor *hx = th_upload(host, &xd, x), *hw = th_upload(host, &wd, w), *hy = th_upload(host, &yd, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, hx, hw, NULL, hy), PDNN_SUCCESS);
        float *want = th_download(hy);
        for (int i = 0; i < ndev; i++) {
            pdnn_tensor *dx = th_upload(devs[i], &xd, x), *dw = th_upload(devs[i], &wd, w);
            pdnn_tensor *dy = th_upload(devs[i], &yd, NULL);
            for (int auto_algo = 0; auto_algo < 2; auto_algo++) {
                p.algorithm = auto_algo ? PDNN_CONV_ALGO_AUTO : PDNN_CONV_ALGO_TILED;
                pdnn_status st = pdnn_conv2d_forward(&p, dx, dw, NULL, dy);
                if (!auto_algo && (K / G) % 16 != 0) {
                    cr_assert_eq(st, PDNN_ERR_UNSUPPORTED, "tiled must refuse %lld-channel groups", (long long)(K / G));
                    /* The refusal carries the algorithm's own reason. */
                    char why[160];
                    snprintf(why, sizeof why,
                             "tiled runs groups == 1 or groups of a multiple of 16 output channels; this one has "
                             "%lld output channels in %lld groups",
                             (long long)K, (long long)G);
                    if (is_opencl(devs[i]))
                        cr_assert(strstr(pdnn_last_error(), why), "%s", pdnn_last_error());
                    continue;
                }
                cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
                float *got = th_download(dy);
                compare(got, want, od[0] * od[1] * od[2] * od[3], (C / G) * 9, "grouped", pdnn_conv_algo_name(p.algorithm));
                free(got);
            }
            pdnn_tensor_release(dx);
            pdnn_tensor_release(dw);
            pdnn_tensor_release(dy);
        }
        free(want);
        free(x);
        free(w);
        pdnn_tensor_release(hx);
        pdnn_tensor_release(hw);
        pdnn_tensor_release(hy);
    }
    pdnn_context_destroy(ctx);
}

/* winograd runs 3x3, stride 1, dilation 1, ungrouped convolutions (and says
 * so: pdnn_conv2d_last_algorithm), refuses the others with
 * PDNN_ERR_UNSUPPORTED and the reason, and AUTO still runs those. */
Test(conv_parity, winograd_claims_what_it_runs)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    pdnn_device *host;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    typedef struct {
        int r, stride, dil, groups;
        const char *why; /* NULL: winograd runs it */
    } claim;
    const claim claims[] = {{3, 1, 1, 1, NULL},
                            {5, 1, 1, 1, "3x3 filters only"},
                            {3, 2, 1, 1, "stride 1 only"},
                            {3, 1, 2, 1, "dilation 1 only"},
                            {3, 1, 1, 2, "groups 1"},
                            {1, 1, 1, 1, "3x3 filters only"}};
    for (size_t ci = 0; ci < sizeof claims / sizeof claims[0]; ci++) {
        const claim *cl = &claims[ci];
        const int64_t C = 6, K = 8, G = cl->groups;
        pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 2, C, 10, 9), wd = th_desc(PDNN_OIHW, K, C / G, cl->r, cl->r);
        float x[2 * 6 * 90], w[8 * 6 * 25];
        th_fill(x, 2 * C * 90, 5);
        th_fill(w, K * (C / G) * cl->r * cl->r, 6);
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.groups = (int)G;
        p.stride_h = p.stride_w = cl->stride;
        p.dilation_h = p.dilation_w = cl->dil;
        p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
        int64_t od[4];
        cr_assert_eq(pdnn_conv2d_output_dims(&xd, &wd, &p, od), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor_desc yd = th_desc(PDNN_NHWC, od[0], od[1], od[2], od[3]);
        pdnn_tensor *hx = th_upload(host, &xd, x), *hw = th_upload(host, &wd, w), *hy = th_upload(host, &yd, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, hx, hw, NULL, hy), PDNN_SUCCESS);
        float *want = th_download(hy);
        for (int i = 0; i < ndev; i++) {
            if (!is_opencl(devs[i]))
                continue; /* only the OpenCL backend has winograd */
            pdnn_tensor *dx = th_upload(devs[i], &xd, x), *dw = th_upload(devs[i], &wd, w);
            pdnn_tensor *dy = th_upload(devs[i], &yd, NULL);
            for (int auto_algo = 0; auto_algo < 2; auto_algo++) {
                p.algorithm = auto_algo ? PDNN_CONV_ALGO_AUTO : PDNN_CONV_ALGO_WINOGRAD;
                pdnn_status st = pdnn_conv2d_forward(&p, dx, dw, NULL, dy);
                if (!auto_algo && cl->why) {
                    cr_assert_eq(st, PDNN_ERR_UNSUPPORTED, "winograd must refuse %dx%d stride %d dilation %d groups %d",
                                 cl->r, cl->r, cl->stride, cl->dil, cl->groups);
                    cr_assert(strstr(pdnn_last_error(), "winograd") && strstr(pdnn_last_error(), cl->why),
                              "the message must name the algorithm and say '%s': %s", cl->why, pdnn_last_error());
                    continue;
                }
                cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
                if (!auto_algo)
                    cr_assert_eq(pdnn_conv2d_last_algorithm(), PDNN_CONV_ALGO_WINOGRAD, "ran %s",
                                 pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()));
                float *got = th_download(dy);
                compare(got, want, od[0] * od[1] * od[2] * od[3], (C / G) * cl->r * cl->r, "winograd claims",
                        pdnn_conv_algo_name(p.algorithm));
                free(got);
            }
            pdnn_tensor_release(dx);
            pdnn_tensor_release(dw);
            pdnn_tensor_release(dy);
        }
        free(want);
        pdnn_tensor_release(hx);
        pdnn_tensor_release(hw);
        pdnn_tensor_release(hy);
    }
    pdnn_context_destroy(ctx);
}

/* winograd on large values and odd sizes: 1x1, 2x3 and 9x11 images, C=3,
 * K=5, batch 17, padding 0/1/2, inputs up to 1000, filters up to 50, a
 * bias up to 1e4; and the same with the tiles made a few at a time (the
 * chunking that bounds the workspace on large batches).
 *
 * Tolerance. Winograd rounds in transformed space: an input tile's
 * transform B^T d B has entries up to 100 max|x| (rows of B^T sum to at
 * most 10 in absolute value) and the output transform A^T . A multiplies
 * by up to 8 per side, so its float32 error is a bound on the magnitudes,
 * not on each output's own sum as for the direct sum. Measured over random
 * tiles (C = 1..512, |x|, |w| <= 1) the worst error is 1.0e-6 x 9C x
 * max|x| x max|w|; the bound below allows 8x that, and 4 ulps of the
 * bias, which is added once. A wrong element is off by about the typical
 * output, sqrt(9C) x max|x| x max|w| / 3, some 200x the bound here. */
Test(conv_parity, winograd_large_values_odd_sizes)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    int nopencl = 0;
    for (int i = 0; i < ndev; i++)
        nopencl += is_opencl(devs[i]);
    if (nopencl == 0) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no OpenCL device"); /* winograd is OpenCL's alone */
    }
    pdnn_device *host;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    const int64_t sizes[][2] = {{1, 1}, {2, 3}, {9, 11}};
    const pdnn_layout lay[][3] = {{PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
                                  {PDNN_NHWC, PDNN_HWIO, PDNN_NHWC},
                                  {PDNN_NHWC, PDNN_OHWI, PDNN_NCHW}};
    const float xmax = 1000.0f, wmax = 50.0f, bmax = 1e4f;
    int runs = 0;
    for (int si = 0; si < 3; si++)
        for (int pad = 0; pad <= 2; pad++)
            for (int li = 0; li < 3; li++) {
                conv_case k = {17, 3, sizes[si][0], sizes[si][1], 5, 3, 3, 1, 1, 1, 1, pad, pad, pad, pad, 1, 1,
                               li != 1, lay[li][0], lay[li][1], lay[li][2]};
                if (k.h + 2 * pad < 3 || k.w + 2 * pad < 3)
                    continue; /* the filter does not fit */
                const int64_t xn = k.n * k.c * k.h * k.w, wn = k.k * k.c * 9;
                float *x = malloc(sizeof(float) * (size_t)xn), *w = malloc(sizeof(float) * (size_t)wn);
                float b[5];
                th_fill(x, xn, (uint32_t)(40 + si));
                th_fill(w, wn, (uint32_t)(50 + pad));
                th_fill(b, 5, 60);
                for (int64_t i = 0; i < xn; i++)
                    x[i] *= xmax;
                for (int64_t i = 0; i < wn; i++)
                    w[i] *= wmax;
                for (int i = 0; i < 5; i++)
                    b[i] *= bmax;
                conv_case ref = k;
                ref.xl = PDNN_NCHW;
                ref.wl = PDNN_OIHW;
                ref.yl = PDNN_NCHW;
                int64_t od[4];
                run_algo = PDNN_CONV_ALGO_DIRECT;
                float *want = run_case(host, &ref, x, w, b, od);
                const int64_t yn = od[0] * od[1] * od[2] * od[3];
                const double tol = 8.0e-6 * 9.0 * (double)k.c * xmax * wmax + 4.0 * 1.2e-7 * bmax;
                char name[256];
                case_name(&k, name, sizeof name);
                for (int i = 0; i < ndev; i++)
                    for (int chunked = 0; chunked < 2 && is_opencl(devs[i]); chunked++) {
#ifdef PDNN_HAVE_OPENCL
                        /* 1 byte: the smallest chunk, one GEMM work-group of tiles */
                        pdnn__opencl_winograd_chunk_bytes(chunked ? 1 : 0);
#endif
                        run_algo = PDNN_CONV_ALGO_WINOGRAD;
                        int64_t od2[4];
                        float *got = run_case(devs[i], &k, x, w, b, od2);
                        run_algo = PDNN_CONV_ALGO_DIRECT;
#ifdef PDNN_HAVE_OPENCL
                        pdnn__opencl_winograd_chunk_bytes(0);
#endif
                        for (int64_t j = 0; j < yn; j++)
                            if (!(fabs((double)got[j] - (double)want[j]) <= tol))
                                cr_assert_fail("%s%s: element %lld is %.9g, expected %.9g (tolerance %.3g)", name,
                                               chunked ? " (chunked)" : "", (long long)j, (double)got[j],
                                               (double)want[j], tol);
                        free(got);
                        runs++;
                    }
                free(want);
                free(x);
                free(w);
            }
    cr_assert_gt(runs, 0);
    pdnn_context_destroy(ctx);
}

/* AUTO under a workspace limit (pdnn_conv2d_params.workspace_limit) runs
 * the first candidate of its fixed order whose workspace is within it, as
 * pdnn_conv2d_query_algorithm reports them, with the same result as its
 * pick without one. The limit is the least workspace of any candidate
 * (at least 1 byte); on OpenCL the unlimited pick, implicit_gemm, needs
 * more, so the limit must change the choice there. */
Test(conv_dispatch, auto_prefers_the_workspace_limit)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    o.tuning = PDNN_TUNING_OFF; /* the fixed order, not a measured choice */
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context_opts(&o, devs, &ndev);
    const pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 16, 14, 14), wd = th_desc(PDNN_OIHW, 32, 16, 3, 3);
    const pdnn_tensor_desc yd = th_desc(PDNN_NCHW, 1, 32, 14, 14);
    float *xv = malloc(16 * 14 * 14 * sizeof(float)), *wv = malloc(32 * 16 * 9 * sizeof(float));
    cr_assert(xv && wv);
    th_fill(xv, 16 * 14 * 14, 11);
    th_fill(wv, 32 * 16 * 9, 12);
    for (int i = 0; i < ndev; i++) {
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
        pdnn_tensor *x = th_upload(devs[i], &xd, xv), *w = th_upload(devs[i], &wd, wv);
        pdnn_tensor *y = th_upload(devs[i], &yd, NULL);
        cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        const pdnn_conv_algo free_pick = pdnn_conv2d_last_algorithm();
        float *want = th_download(y);
        uint64_t least = UINT64_MAX;
        for (int a = 1; a < pdnn_conv_algo_count(); a++) {
            pdnn_conv_algo_info info;
            cr_assert_eq(pdnn_conv2d_query_algorithm(devs[i], &p, &xd, &wd, PDNN_NCHW, (pdnn_conv_algo)a, &info),
                         PDNN_SUCCESS, "%s", pdnn_last_error());
            if (info.applies && info.auto_candidate && info.workspace_bytes < least)
                least = info.workspace_bytes;
        }
        cr_assert_neq(least, UINT64_MAX, "no candidate");
        p.workspace_limit = least > 0 ? (size_t)least : 1;
        /* The first candidate within the limit, as the query reports it. */
        int first = 0, first_rank = 0;
        for (int a = 1; a < pdnn_conv_algo_count(); a++) {
            pdnn_conv_algo_info info;
            cr_assert_eq(pdnn_conv2d_query_algorithm(devs[i], &p, &xd, &wd, PDNN_NCHW, (pdnn_conv_algo)a, &info),
                         PDNN_SUCCESS, "%s", pdnn_last_error());
            if (info.applies && info.auto_candidate && info.workspace_bytes <= p.workspace_limit &&
                (!first || info.rank < first_rank)) {
                first = a;
                first_rank = info.rank;
            }
        }
        cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        const pdnn_conv_algo pick = pdnn_conv2d_last_algorithm();
        pdnn_device_info dinfo;
        pdnn_device_get_info(devs[i], &dinfo);
        cr_assert_eq((int)pick, first, "%s: with a limit of %zu bytes AUTO ran %s, not %s", dinfo.name,
                     p.workspace_limit, pdnn_conv_algo_name(pick), pdnn_conv_algo_name((pdnn_conv_algo)first));
        if (is_opencl(devs[i]))
            cr_assert_neq(pick, free_pick, "%s: the limit of %zu bytes did not change AUTO's %s", dinfo.name,
                          p.workspace_limit, pdnn_conv_algo_name(free_pick));
        float *got = th_download(y);
        for (int j = 0; j < 32 * 14 * 14; j++)
            cr_assert(fabsf(got[j] - want[j]) <= 1e-4f * (1.0f + fabsf(want[j])), "%s: y[%d] is %g, not %g",
                      dinfo.name, j, (double)got[j], (double)want[j]);
        free(got);
        free(want);
        pdnn_tensor_release(x);
        pdnn_tensor_release(w);
        pdnn_tensor_release(y);
    }
    free(xv);
    free(wv);
    pdnn_context_destroy(ctx);
}

/* AUTO's fixed order on OpenCL: implicit_gemm for ungrouped non-1x1
 * convolutions, where it measured faster than winograd and tiled (3x3
 * layers with many output tiles, where winograd used to be picked, and
 * with few, where tiled was); tiled for groups of 16 channels, which
 * implicit_gemm is not picked for. */
Test(conv_parity, auto_picks_implicit_gemm_where_faster)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const struct {
        int64_t n, hw, groups;
        pdnn_conv_algo want;
    } cases[] = {{2, 16, 1, PDNN_CONV_ALGO_IMPLICIT_GEMM},
                 {1, 7, 1, PDNN_CONV_ALGO_IMPLICIT_GEMM},
                 {1, 7, 4, PDNN_CONV_ALGO_TILED}};
    int checked = 0;
    for (int i = 0; i < ndev; i++) {
        if (!is_opencl(devs[i]))
            continue;
        for (int ci = 0; ci < 3; ci++) {
            const int64_t n = cases[ci].n, hw = cases[ci].hw, g = cases[ci].groups;
            pdnn_tensor_desc xd = th_desc(PDNN_NHWC, n, 64, hw, hw), wd = th_desc(PDNN_HWIO, 64, 64 / g, 3, 3);
            float *zeros = calloc((size_t)(n * 64 * hw * hw + 64 * 64 * 9), sizeof(float));
            pdnn_tensor *x = th_upload(devs[i], &xd, zeros), *w = th_upload(devs[i], &wd, zeros);
            pdnn_tensor *y = th_upload(devs[i], &xd, NULL);
            free(zeros);
            pdnn_conv2d_params p;
            pdnn_conv2d_params_init(&p);
            p.groups = (int)g;
            p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
            cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
            cr_assert_eq(pdnn_conv2d_last_algorithm(), cases[ci].want, "n%lld %lldx%lld g%lld: AUTO ran %s, expected %s",
                         (long long)n, (long long)hw, (long long)hw, (long long)g, pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()),
                         pdnn_conv_algo_name(cases[ci].want));
            pdnn_tensor_release(x);
            pdnn_tensor_release(w);
            pdnn_tensor_release(y);
            checked++;
        }
    }
    pdnn_context_destroy(ctx);
    if (checked == 0)
        cr_skip_test("no OpenCL device");
}

/* depthwise runs groups == C (multipliers 1 and 2) without writing past
 * its output and is what AUTO picks there; other grouped convolutions are
 * refused with PDNN_ERR_UNSUPPORTED and a message saying why. */
Test(conv_parity, depthwise_claims_what_it_runs)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context_with(PDNN_CONV_ALGO_DEPTHWISE, devs, &ndev);
    pdnn_device *host;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    const int64_t shapes[][3] = {{24, 24, 24}, {6, 12, 6}, {6, 12, 3}, {32, 64, 2}}; /* C, K, groups */
    for (int si = 0; si < 4; si++) {
        const int64_t C = shapes[si][0], K = shapes[si][1], G = shapes[si][2];
        for (int li = 0; li < 2; li++) {
            const pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
            pdnn_tensor_desc xd = th_desc(l, 3, C, 10, 19), wd = th_desc(li ? PDNN_HWIO : PDNN_OIHW, K, C / G, 3, 3);
            pdnn_tensor_desc bd = th_desc(PDNN_LAYOUT_X, K, 1, 1, 1), gd = th_desc(PDNN_NCHW, 1, 1, 64, 64);
            float *x = malloc(sizeof(float) * (size_t)(3 * C * 190));
            float *w = malloc(sizeof(float) * (size_t)(K * C / G * 9)), *b = malloc(sizeof(float) * (size_t)K);
            float gv[4096];
            th_fill(x, 3 * C * 190, 5);
            th_fill(w, K * C / G * 9, 6);
            th_fill(b, K, 7);
            for (int g = 0; g < 4096; g++)
                gv[g] = 7.0f;
            pdnn_conv2d_params p;
            pdnn_conv2d_params_init(&p);
            p.groups = (int)G;
            p.stride_w = 2;
            p.pad_top = p.pad_bottom = p.pad_left = 1;
            p.relu = 1;
            int64_t od[4];
            cr_assert_eq(pdnn_conv2d_output_dims(&xd, &wd, &p, od), PDNN_SUCCESS);
            pdnn_tensor_desc yd = th_desc(l, od[0], od[1], od[2], od[3]);
            pdnn_tensor *hx = th_upload(host, &xd, x), *hw = th_upload(host, &wd, w), *hb = th_upload(host, &bd, b);
            pdnn_tensor *hy = th_upload(host, &yd, NULL);
            cr_assert_eq(pdnn_conv2d_forward(&p, hx, hw, hb, hy), PDNN_SUCCESS);
            float *want = th_download(hy);
            for (int i = 0; i < ndev; i++) {
                pdnn_tensor *dx = th_upload(devs[i], &xd, x), *dw = th_upload(devs[i], &wd, w);
                pdnn_tensor *db = th_upload(devs[i], &bd, b), *dy = th_upload(devs[i], &yd, NULL);
                pdnn_tensor *guard = th_upload(devs[i], &gd, gv);
                for (int auto_algo = 0; auto_algo < 2; auto_algo++) {
                    p.algorithm = auto_algo ? PDNN_CONV_ALGO_AUTO : PDNN_CONV_ALGO_DEPTHWISE;
                    pdnn_status st = pdnn_conv2d_forward(&p, dx, dw, db, dy);
                    if (G != C) {
                        if (!auto_algo) {
                            cr_assert_eq(st, PDNN_ERR_UNSUPPORTED, "depthwise must refuse C %lld in %lld groups",
                                         (long long)C, (long long)G);
                            cr_assert(strstr(pdnn_last_error(), "groups == input channels") != NULL,
                                      "unclear message: %s", pdnn_last_error());
                        } else {
                            cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
                            cr_assert_neq(pdnn_conv2d_last_algorithm(), PDNN_CONV_ALGO_DEPTHWISE);
                        }
                        continue;
                    }
                    cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
                    cr_assert_eq(pdnn_conv2d_last_algorithm(), PDNN_CONV_ALGO_DEPTHWISE, "%s ran %s",
                                 auto_algo ? "auto" : "depthwise", pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()));
                    float *got = th_download(dy);
                    compare(got, want, od[0] * od[1] * od[2] * od[3], 9, "depthwise", pdnn_layout_name(l));
                    free(got);
                    float *after = th_download(guard);
                    for (int g = 0; g < 4096; g++)
                        cr_assert_eq(after[g], 7.0f, "depthwise %s: guard element %d overwritten", pdnn_layout_name(l), g);
                    free(after);
                }
                pdnn_tensor_release(dx);
                pdnn_tensor_release(dw);
                pdnn_tensor_release(db);
                pdnn_tensor_release(dy);
                pdnn_tensor_release(guard);
            }
            free(want);
            free(x);
            free(w);
            free(b);
            pdnn_tensor_release(hx);
            pdnn_tensor_release(hw);
            pdnn_tensor_release(hb);
            pdnn_tensor_release(hy);
        }
    }
    pdnn_context_destroy(ctx);
}


/* The largest |a - b| over n elements. */
static float max_diff(const float *a, const float *b, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}

/* A frozen filter (a session's constant, pdnn__tensor_freeze): the
 * algorithms that pack it keep the packed copy on the tensor after the
 * first call, later calls read that copy (what is written into it shows in
 * their output), and pdnn_tensor_write drops it, so that the next call
 * packs the new values. */
/* pdnn_tensor_freeze, the public form of what a session does with its
 * constants: NULL is refused; on /cpu:0 with oneDNN (NHWC/OHWI, which its
 * blocked kernels reorder), a frozen filter is packed by its first call,
 * kept, and gives the plain filter's output. */
Test(conv_parity, public_freeze_keeps_the_host_filter_packed)
{
    cr_assert_eq(pdnn_tensor_freeze(NULL), PDNN_ERR_INVALID_ARGUMENT);
    const int onednn = pdnn_conv_algo_parse("onednn");
    if (onednn < 0)
        cr_skip_test("this build has no oneDNN algorithm on the host");
    pdnn_context *ctx = th_context();
    pdnn_device *host = th_find_backend(ctx, "host");
    cr_assert_not_null(host);
    const int64_t xn = 2 * 32 * 7 * 7, wn = 64 * 32 * 3 * 3, yn = 2 * 64 * 7 * 7;
    pdnn_tensor_desc xd = th_desc(PDNN_NHWC, 2, 32, 7, 7), wd = th_desc(PDNN_OHWI, 64, 32, 3, 3);
    pdnn_tensor_desc yd = th_desc(PDNN_NHWC, 2, 64, 7, 7);
    float *xv = malloc((size_t)xn * sizeof *xv), *wv = malloc((size_t)wn * sizeof *wv);
    th_fill(xv, xn, 21);
    th_fill(wv, wn, 22);
    pdnn_tensor *x = th_upload(host, &xd, xv), *wp = th_upload(host, &wd, wv), *wf = th_upload(host, &wd, wv);
    pdnn_tensor *y = th_upload(host, &yd, NULL);
    cr_assert_eq(pdnn_tensor_freeze(wf), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    p.algorithm = (pdnn_conv_algo)onednn;
    cr_assert_eq(pdnn_conv2d_forward(&p, x, wp, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    float *ref = th_download(y);
    cr_assert_eq(pdnn__tensor_pack_bytes(wp), 0, "a filter that is not frozen was kept packed");
    for (int call = 1; call <= 2; call++) {
        cr_assert_eq(pdnn_conv2d_forward(&p, x, wf, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *got = th_download(y);
        cr_assert_leq(max_diff(got, ref, yn), 1e-5f, "frozen filter, call %d: differs by %g", call,
                      (double)max_diff(got, ref, yn));
        cr_assert_gt(pdnn__tensor_pack_bytes(wf), 0, "no packed copy after call %d", call);
        free(got);
    }
    free(ref);
    free(xv);
    free(wv);
    pdnn_tensor_release(x);
    pdnn_tensor_release(wp);
    pdnn_tensor_release(wf);
    pdnn_tensor_release(y);
    pdnn_context_destroy(ctx);
}

Test(conv_parity, frozen_filter_keeps_its_packed_copy)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const struct {
        pdnn_conv_algo algo;
        int64_t r;
    } algos[] = {{PDNN_CONV_ALGO_IMPLICIT_GEMM, 3}, {PDNN_CONV_ALGO_GEMM_1X1, 1}, {PDNN_CONV_ALGO_WINOGRAD, 3}};
    int checked = 0;
    for (int i = 0; i < ndev; i++) {
        if (!is_opencl(devs[i]))
            continue;
        for (int ai = 0; ai < (int)(sizeof algos / sizeof algos[0]); ai++) {
            const int64_t r = algos[ai].r, xn = 2 * 20 * 6 * 6, wn = 24 * 20 * r * r, yn = 2 * 24 * 6 * 6;
            pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 2, 20, 6, 6), wd = th_desc(PDNN_OIHW, 24, 20, r, r);
            pdnn_tensor_desc yd = th_desc(PDNN_NCHW, 2, 24, 6, 6);
            float *xv = malloc((size_t)xn * sizeof *xv), *w1 = malloc((size_t)wn * sizeof *w1);
            float *w2 = malloc((size_t)wn * sizeof *w2);
            th_fill(xv, xn, 11);
            th_fill(w1, wn, 12);
            th_fill(w2, wn, 13);
            pdnn_tensor *x = th_upload(devs[i], &xd, xv), *wp = th_upload(devs[i], &wd, w1);
            pdnn_tensor *wf = th_upload(devs[i], &wd, w1), *y = th_upload(devs[i], &yd, NULL);
            pdnn__tensor_freeze(wf);
            pdnn_conv2d_params p;
            pdnn_conv2d_params_init(&p);
            p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = (int)(r / 2);
            p.algorithm = algos[ai].algo;
            const char *name = pdnn_conv_algo_name(p.algorithm);
            /* The reference: the same algorithm with the plain filter. */
            cr_assert_eq(pdnn_conv2d_forward(&p, x, wp, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
            float *ref1 = th_download(y);
            cr_assert_eq(pdnn__tensor_pack_bytes(wp), 0, "%s kept a copy of a filter that is not frozen", name);
            for (int call = 1; call <= 2; call++) {
                cr_assert_eq(pdnn_conv2d_forward(&p, x, wf, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
                float *got = th_download(y);
                cr_assert_leq(max_diff(got, ref1, yn), 0.0f, "%s, frozen filter, call %d: differs by %g", name, call,
                              (double)max_diff(got, ref1, yn));
                free(got);
                cr_assert_gt(pdnn__tensor_pack_bytes(wf), 0, "%s kept no packed copy after call %d", name, call);
            }
            /* Garbage in the kept copy is what the next call reads. */
            const size_t pb = pdnn__tensor_pack_bytes(wf);
            float *junk = malloc(pb);
            for (size_t e = 0; e < pb / sizeof *junk; e++)
                junk[e] = 1000.0f;
            pdnn_tensor *pack = NULL;
            const pdnn_tensor_desc pd = th_desc(PDNN_LAYOUT_X, (int64_t)(pb / sizeof *junk), 1, 1, 1);
            cr_assert_eq(pdnn__tensor_wrap(devs[i], &pd, wf->pack.block.buf, NULL, NULL, &pack), PDNN_SUCCESS);
            cr_assert_eq(pdnn_tensor_write(pack, junk, pb), PDNN_SUCCESS);
            pdnn_tensor_release(pack);
            free(junk);
            cr_assert_eq(pdnn_conv2d_forward(&p, x, wf, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
            float *got = th_download(y);
            cr_assert_gt(max_diff(got, ref1, yn), 100.0f, "%s: the call after the first did not read the kept copy",
                         name);
            free(got);
            /* New values: the copy goes, and the next call packs them. */
            cr_assert_eq(pdnn_tensor_write(wf, w2, (size_t)wn * sizeof *w2), PDNN_SUCCESS);
            cr_assert_eq(pdnn__tensor_pack_bytes(wf), 0, "%s: pdnn_tensor_write left the packed copy", name);
            cr_assert_eq(pdnn_tensor_write(wp, w2, (size_t)wn * sizeof *w2), PDNN_SUCCESS);
            cr_assert_eq(pdnn_conv2d_forward(&p, x, wp, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
            float *ref2 = th_download(y);
            cr_assert_eq(pdnn_conv2d_forward(&p, x, wf, NULL, y), PDNN_SUCCESS, "%s", pdnn_last_error());
            got = th_download(y);
            cr_assert_leq(max_diff(got, ref2, yn), 0.0f, "%s: after new values the output differs by %g", name,
                          (double)max_diff(got, ref2, yn));
            cr_assert_gt(max_diff(ref1, ref2, yn), 0.1f, "the two filters gave the same output");
            free(got);
            free(ref1);
            free(ref2);
            free(xv);
            free(w1);
            free(w2);
            pdnn_tensor_release(x);
            pdnn_tensor_release(wp);
            pdnn_tensor_release(wf);
            pdnn_tensor_release(y);
            checked++;
        }
    }
    pdnn_context_destroy(ctx);
    if (checked == 0)
        cr_skip_test("no OpenCL device");
}

/* ---- AUTO's unworded plans --------------------------------------------- */

/* Checks that pdnn__plan_verdict decides what pdnn__plan_for decides for
 * algo and call, leaving why empty where pdnn__plan_for words it; counts
 * refusals and acceptances. */
static void check_verdict(pdnn_device *dev, const pdnn__algo *a, const pdnn__op_call *call, const char *what,
                          int *refused, int *accepted)
{
    pdnn__plan worded, verdict;
    pdnn__plan_for(dev, a, call, &worded);
    pdnn__plan_verdict(dev, a, call, &verdict);
    cr_assert_eq(verdict.supported, worded.supported, "%s %s: verdict %d, worded %d (%s)", a->name, what,
                 verdict.supported, worded.supported, worded.why);
    cr_assert_eq(verdict.auto_skip, worded.auto_skip, "%s %s: auto_skip differs", a->name, what);
    cr_assert_eq(verdict.rank, worded.rank, "%s %s: rank differs", a->name, what);
    cr_assert_eq(verdict.workspace, worded.workspace, "%s %s: workspace differs", a->name, what);
    cr_assert_eq(verdict.config, worded.config, "%s %s: configuration differs", a->name, what);
    cr_assert_str_eq(verdict.config_name, worded.config_name, "%s %s", a->name, what);
    cr_assert_eq(verdict.search, worded.search, "%s %s: search differs", a->name, what);
    cr_assert_eq(verdict.wpack, worded.wpack, "%s %s: wpack differs", a->name, what);
    cr_assert_eq(verdict.why[0], '\0', "%s %s: the verdict was worded: %s", a->name, what, verdict.why);
    if (!worded.supported || worded.auto_skip)
        cr_assert_neq(worded.why[0], '\0', "%s %s: refused or skipped without a reason", a->name, what);
    if (worded.supported)
        (*accepted)++;
    else
        (*refused)++;
}

/* AUTO plans every algorithm on every call without wording refusals
 * (pdnn__plan_verdict); the verdicts must be pdnn__plan_for's, on every
 * backend, for convolutions and pools across the cases that each entry
 * refuses. */
Test(conv_dispatch, verdicts_match_worded_plans)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[9];
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &devs[0]), PDNN_SUCCESS);
    const int ndev = 1 + th_accelerators(ctx, devs + 1, 8);
    /* n c h w k r s stride pad dil groups */
    static const int convs[][11] = {
        {1, 16, 14, 14, 32, 1, 1, 1, 0, 1, 1}, {2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1},  {1, 3, 17, 17, 8, 3, 3, 2, 1, 1, 1},
        {1, 12, 8, 8, 12, 3, 3, 1, 1, 1, 12},  {1, 12, 8, 8, 6, 3, 3, 1, 1, 1, 3}, {1, 4, 11, 11, 4, 3, 3, 1, 2, 2, 1},
        {1, 5, 6, 6, 7, 5, 5, 1, 2, 1, 1},     {3, 6, 7, 7, 10, 1, 1, 2, 0, 1, 1},
    };
    static const pdnn_layout layouts[][3] = {{PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
                                             {PDNN_NHWC, PDNN_OHWI, PDNN_NHWC},
                                             {PDNN_NHWC, PDNN_HWIO, PDNN_NHWC}};
    for (int d = 0; d < ndev; d++) {
        int refused = 0, accepted = 0;
        const pdnn__algo *const *list = pdnn__algos(devs[d], PDNN__OP_CONV2D_FWD);
        for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
            for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
                const int *k = convs[i];
                pdnn_conv2d_params p;
                pdnn_conv2d_params_init(&p);
                p.stride_h = p.stride_w = k[7];
                p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = k[8];
                p.dilation_h = p.dilation_w = k[9];
                p.groups = k[10];
                const pdnn_tensor_desc xd = th_desc(layouts[l][0], k[0], k[1], k[2], k[3]);
                const pdnn_tensor_desc wd = th_desc(layouts[l][1], k[4], k[1] / k[10], k[5], k[6]);
                int64_t od[4];
                cr_assert_eq(pdnn_conv2d_output_dims(&xd, &wd, &p, od), PDNN_SUCCESS, "%s", pdnn_last_error());
                pdnn__op_call call;
                memset(&call, 0, sizeof call);
                call.op = PDNN__OP_CONV2D_FWD;
                pdnn__conv_call_from(&p, &xd, &wd, layouts[l][2], od, &call.u.conv2d);
                pdnn__call_prepare(devs[d], &call);
                char what[64];
                snprintf(what, sizeof what, "conv case %zu layout %zu", i, l);
                for (int a = 0; list[a]; a++)
                    check_verdict(devs[d], list[a], &call, what, &refused, &accepted);
            }
        /* win stride pad mode, over 1x5x9x9 */
        static const int pools[][4] = {{3, 2, 1, PDNN_POOL_MAX},
                                       {3, 1, 1, PDNN_POOL_MAX},
                                       {9, 1, 0, PDNN_POOL_AVG_INCLUDE_PADDING},
                                       {2, 2, 0, PDNN_POOL_AVG_INCLUDE_PADDING},
                                       {3, 1, 1, PDNN_POOL_AVG_EXCLUDE_PADDING}};
        list = pdnn__algos(devs[d], PDNN__OP_POOL2D_FWD);
        for (size_t i = 0; i < sizeof pools / sizeof pools[0]; i++)
            for (int l = 0; l < 2; l++) {
                const pdnn_layout lay = l ? PDNN_NHWC : PDNN_NCHW;
                pdnn_pool2d_params p;
                pdnn_pool2d_params_init(&p);
                p.mode = (pdnn_pool_mode)pools[i][3];
                p.window_h = p.window_w = pools[i][0];
                p.stride_h = p.stride_w = pools[i][1];
                p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pools[i][2];
                const pdnn_tensor_desc xd = th_desc(lay, 1, 5, 9, 9);
                int64_t od[4];
                cr_assert_eq(pdnn_pool2d_output_dims(&xd, &p, od), PDNN_SUCCESS, "%s", pdnn_last_error());
                pdnn__op_call call;
                memset(&call, 0, sizeof call);
                call.op = PDNN__OP_POOL2D_FWD;
                pdnn__pool_call_from(&p, &xd, lay, od, &call.u.pool2d);
                pdnn__call_prepare(devs[d], &call);
                char what[64];
                snprintf(what, sizeof what, "pool case %zu layout %d", i, l);
                for (int a = 0; list[a]; a++)
                    check_verdict(devs[d], list[a], &call, what, &refused, &accepted);
            }
        pdnn_device_info info;
        pdnn_device_get_info(devs[d], &info);
        cr_assert_gt(accepted, 0, "%s: no plan accepted", info.name);
        /* The host runs everything with one algorithm per op, and CUDA's
         * cuDNN-backed entries take every case here (as all of the parity
         * harness's); OpenCL's kernels each refuse some of them. */
        if (is_opencl(devs[d]))
            cr_assert_gt(refused, 0, "%s: no plan refused, so no refusal was compared", info.name);
    }
    pdnn_context_destroy(ctx);
}

#ifdef PDNN_HAVE_CLBLAST
/* The entry named name of op in dev's backend. */
static const pdnn__algo *entry_named(const pdnn_device *dev, pdnn__op op, const char *name)
{
    for (int a = 0; dev->backend->algos[op] && dev->backend->algos[op][a]; a++)
        if (strcmp(dev->backend->algos[op][a]->name, name) == 0)
            return dev->backend->algos[op][a];
    return NULL;
}

/* CLBlast's SGEMM aborted the process (an uncaught C++ exception) on a
 * 1 x 2^28 x 1 matmul, which pads to 2^35-float temporaries: its plans,
 * matmul's and im2col_gemm's, refuse what it cannot take, saying why. */
Test(conv_parity, clblast_plans_refuse_what_clblast_cannot_take)
{
    pdnn_context *ctx = th_context();
    int checked = 0;
    for (int d = 0; d < pdnn_device_count(ctx); d++) {
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_device_get(ctx, d, &dev), PDNN_SUCCESS);
        const pdnn__algo *mm = entry_named(dev, PDNN__OP_GEMM, "clblast");
        const pdnn__algo *ic = entry_named(dev, PDNN__OP_CONV2D_FWD, "im2col_gemm");
        if (!mm || !ic)
            continue;
        pdnn__op_call call;
        memset(&call, 0, sizeof call);
        call.op = PDNN__OP_GEMM;
        call.u.matmul.m = 64, call.u.matmul.n = 64, call.u.matmul.k = 64;
        pdnn__plan plan = {.supported = 1, .config = -1};
        mm->plan(dev->handle, &call, &plan);
        cr_assert(plan.supported, "64^3: %s", plan.why);
        call.u.matmul.m = 1, call.u.matmul.n = 1, call.u.matmul.k = (int64_t)1 << 28;
        plan = (pdnn__plan){.supported = 1, .config = -1};
        mm->plan(dev->handle, &call, &plan);
        cr_assert(!plan.supported && strstr(plan.why, "CLBlast pads a 1 x 1 x 268435456 product"), "%s", plan.why);
        call.u.matmul.m = (int64_t)1 << 31, call.u.matmul.k = 1;
        plan = (pdnn__plan){.supported = 1, .config = -1};
        mm->plan(dev->handle, &call, &plan);
        cr_assert(!plan.supported && strstr(plan.why, "CLBlast indexes in int"), "%s", plan.why);
        /* A strided batch of 64^3 products, both operands broadcast: C
         * ends below 2^31 floats, but 2^18 padded temporaries do not. */
        call.u.matmul.m = 64, call.u.matmul.n = 64, call.u.matmul.k = 64, call.u.matmul.batch = (int64_t)1 << 18;
        plan = (pdnn__plan){.supported = 1, .config = -1};
        mm->plan(dev->handle, &call, &plan);
        cr_assert(!plan.supported && strstr(plan.why, "(262144 of them)"), "%s", plan.why);
        /* A 1x1 convolution of one channel over 2^24 pixels: its GEMM is
         * 1 x 2^24 x 1, 2^31 floats once padded. */
        memset(&call, 0, sizeof call);
        call.op = PDNN__OP_CONV2D_FWD;
        pdnn__conv2d_call *c = &call.u.conv2d;
        c->n = 1, c->c = 1, c->h = 1, c->w = (int64_t)1 << 24, c->k = 1, c->r = 1, c->s = 1;
        c->p = 1, c->q = c->w, c->groups = 1, c->stride_h = c->stride_w = c->dil_h = c->dil_w = 1;
        plan = (pdnn__plan){.supported = 1, .config = -1};
        ic->plan(dev->handle, &call, &plan);
        cr_assert(!plan.supported && strstr(plan.why, "CLBlast pads a 1 x 16777216 x 1 product"), "%s", plan.why);
        c->w = c->q = 4096;
        plan = (pdnn__plan){.supported = 1, .config = -1};
        ic->plan(dev->handle, &call, &plan);
        cr_assert(plan.supported, "1 x 4096 x 1: %s", plan.why);
        checked++;
    }
    if (!checked)
        cr_skip_test("no device with CLBlast");
}
#endif
