/* conv2d: the host reference against an independent naive loop and hand
 * computed values, then every accelerator against the host reference over
 * a grid of shapes, strides, paddings, dilations, groups and layouts. */
#include "helpers.h"
#include "backend.h"
#include "dispatch.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The algorithm the accelerator runs; the host reference is always direct. */
static pdnn_conv_algo accel_algo = PDNN_CONV_ALGO_DIRECT;
/* Runs of each implicit_gemm configuration (as its registry entry lists
 * them) that asserted it was the one that ran. */
static int ig_cfg_runs[16];
/* The configuration the last run_case ran (pdnn_conv2d_last_tuning). */
static char last_config[48];

/* The tunable configurations of algorithm a on dev, by name, up to max;
 * 0 when a is not tunable there. */
static int configs_of(pdnn_device *dev, pdnn_conv_algo a, char (*names)[48], int max)
{
    const pdnn__algo *e = pdnn__algo_find(dev, PDNN__OP_CONV2D_FWD, pdnn_conv_algo_name(a));
    const int n = e ? e->n_configs : 0;
    for (int i = 0; i < n && i < max; i++)
        e->config_name(i, names[i], 48);
    return n < max ? n : max;
}

/* Output channels one work-item of a configuration covers: 16 * kb for
 * tiled ("tq=8 kb=2"), vw * kb for the GEMMs ("vw=16 kb=1 pt=6"). */
static int64_t channel_block(const char *config)
{
    int a = 0, b = 0, c = 0;
    if (sscanf(config, "vw=%d kb=%d pt=%d", &a, &b, &c) == 3 && a > 0 && b > 0)
        return (int64_t)a * b;
    if (sscanf(config, "tq=%d kb=%d", &a, &b) == 2 && b > 0)
        return 16 * (int64_t)b;
    return 1;
}

typedef struct conv_case {
    int64_t n, c, h, w, k, r, s;
    int sh, sw, dh, dw, pt, pb, pl, pr, groups, bias, relu;
    pdnn_layout xl, wl, yl;
} conv_case;

static const pdnn_layout act_layouts[] = {PDNN_NCHW, PDNN_NHWC};
static const pdnn_layout filt_layouts[] = {PDNN_OIHW, PDNN_OHWI, PDNN_HWIO};

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

/* Accelerator runs check_case compared, each one having run accel_algo
 * (run_case asserts pdnn_conv2d_last_algorithm()): a parity test of an
 * algorithm that claims few shapes must not pass by skipping them all. */
static int accel_runs;

static int winograd_claims(const conv_case *k)
{
    return k->r == 3 && k->s == 3 && k->sh == 1 && k->sw == 1 && k->dh == 1 && k->dw == 1 && k->groups == 1;
}

static void check_case(pdnn_context *ctx, pdnn_device **devs, int ndev, const conv_case *k,
                       uint32_t seed)
{
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    int64_t xn = k->n * k->c * k->h * k->w, wn = k->k * (k->c / k->groups) * k->r * k->s;
    float *x = malloc(sizeof(float) * (size_t)xn), *w = malloc(sizeof(float) * (size_t)wn);
    float *b = malloc(sizeof(float) * (size_t)k->k);
    th_fill(x, xn, seed);
    th_fill(w, wn, seed + 1);
    th_fill(b, k->k, seed + 2);
    char name[256];
    case_name(k, name, sizeof name);
    /* Reference always in the plainest layouts. */
    conv_case ref = *k;
    ref.xl = PDNN_NCHW;
    ref.wl = PDNN_OIHW;
    ref.yl = PDNN_NCHW;
    int64_t od[4];
    run_algo = PDNN_CONV_ALGO_DIRECT;
    float *want = run_case(host, &ref, x, w, b, od);
    int64_t yn = od[0] * od[1] * od[2] * od[3];
    /* tiled claims ungrouped convolutions and grouped ones whose groups
     * have a multiple of 16 output channels; it reports others
     * unsupported (checked in tiled_claims_what_it_runs). */
    if (accel_algo == PDNN_CONV_ALGO_TILED && k->groups != 1 && (k->k / k->groups) % 16 != 0)
        ndev = 0;
    /* winograd claims 3x3 filters at stride 1, dilation 1, groups 1 and
     * reports others unsupported (checked in winograd_claims_what_it_runs). */
    if (accel_algo == PDNN_CONV_ALGO_WINOGRAD && !winograd_claims(k))
        ndev = 0;
    /* gemm_1x1 claims 1x1 filters that read no padding, ungrouped or with
     * a multiple of 4 output channels per group (its narrowest channel
     * block); it reports others unsupported (gemm_1x1_refuses_...). */
    if (accel_algo == PDNN_CONV_ALGO_GEMM_1X1 &&
        (k->r != 1 || k->s != 1 || k->pt != 0 || k->pl != 0 || (od[2] - 1) * k->sh >= k->h ||
         (od[3] - 1) * k->sw >= k->w || (k->groups != 1 && (k->k / k->groups) % 4 != 0)))
        ndev = 0;
    /* depthwise claims groups == C (checked in depthwise_claims_what_it_runs). */
    if (accel_algo == PDNN_CONV_ALGO_DEPTHWISE && k->groups != k->c)
        ndev = 0;
    /* implicit_gemm claims every shape that is ungrouped or has a
     * multiple of 4 output channels per group (its narrowest channel
     * block); it reports others unsupported (implicit_gemm_refuses_...). */
    if (accel_algo == PDNN_CONV_ALGO_IMPLICIT_GEMM && k->groups != 1 && (k->k / k->groups) % 4 != 0)
        ndev = 0;
    for (int i = 0; i < ndev; i++) {
        pdnn_device_info info;
        pdnn_device_get_info(devs[i], &info);
        if ((accel_algo == PDNN_CONV_ALGO_WINOGRAD || accel_algo == PDNN_CONV_ALGO_GEMM_1X1 ||
             accel_algo == PDNN_CONV_ALGO_DEPTHWISE || accel_algo == PDNN_CONV_ALGO_IMPLICIT_GEMM) &&
            strcmp(info.backend, "opencl") != 0)
            continue; /* only the OpenCL backend has these */
        /* Tunable algorithms (tiled, gemm_1x1, implicit_gemm) run every
         * configuration the tuner may pick. */
        char cfg[16][48];
        const int ncfg = configs_of(devs[i], accel_algo, cfg, 16);
        for (int ci = 0; ci < (ncfg > 0 ? ncfg : 1); ci++) {
            char where[160];
            snprintf(where, sizeof where, "%s with %s (%s)", info.name, pdnn_conv_algo_name(accel_algo),
                     ncfg > 0 ? cfg[ci] : "untuned");
            int64_t od2[4];
            run_algo = accel_algo;
            if (ncfg > 0)
                pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, pdnn_conv_algo_name(accel_algo), ci);
            float *got = run_case(devs[i], k, x, w, b, od2);
            pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, NULL, -1);
            /* A configuration runs wherever its channel block fits a group. */
            const int64_t block = ncfg > 0 ? channel_block(cfg[ci]) : 0;
            if (ncfg > 0 && (k->groups == 1 || (k->k / k->groups) % block == 0)) {
                cr_assert_str_eq(last_config, cfg[ci], "%s: ran %s", name, last_config);
                if (accel_algo == PDNN_CONV_ALGO_IMPLICIT_GEMM)
                    ig_cfg_runs[ci]++;
            }
            run_algo = PDNN_CONV_ALGO_DIRECT;
            accel_runs++; /* run_case asserted that accel_algo ran */
            compare(got, want, yn, (k->c / k->groups) * k->r * k->s, name, where);
            free(got);
        }
    }
    free(want);
    free(x);
    free(w);
    free(b);
}

/* ---- the oracle itself ------------------------------------------------ */

/* A second, independent reference: NCHW/OIHW only, written without the
 * library's stride helpers, single precision accumulation in a different
 * loop order. */
static void naive_conv(const conv_case *k, const float *x, const float *w, const float *b,
                       float *y, const int64_t od[4])
{
    int64_t cpg = k->c / k->groups, kpg = k->k / k->groups;
    for (int64_t i = 0; i < od[0] * od[1] * od[2] * od[3]; i++)
        y[i] = 0.0f;
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->k; o++)
            for (int64_t ci = 0; ci < cpg; ci++)
                for (int64_t r = 0; r < k->r; r++)
                    for (int64_t s = 0; s < k->s; s++)
                        for (int64_t p = 0; p < od[2]; p++)
                            for (int64_t q = 0; q < od[3]; q++) {
                                int64_t ih = p * k->sh - k->pt + r * k->dh;
                                int64_t iw = q * k->sw - k->pl + s * k->dw;
                                if (ih < 0 || iw < 0 || ih >= k->h || iw >= k->w)
                                    continue;
                                int64_t cx = (o / kpg) * cpg + ci;
                                y[((n * k->k + o) * od[2] + p) * od[3] + q] +=
                                    x[((n * k->c + cx) * k->h + ih) * k->w + iw] *
                                    w[((o * cpg + ci) * k->r + r) * k->s + s];
                            }
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t o = 0; o < k->k; o++)
            for (int64_t i = 0; i < od[2] * od[3]; i++) {
                float *v = &y[(n * k->k + o) * od[2] * od[3] + i];
                if (k->bias)
                    *v += b[o];
                if (k->relu && *v < 0.0f)
                    *v = 0.0f;
            }
}

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

Test(conv_reference, host_matches_independent_loop_in_every_layout)
{
    pdnn_context *ctx = th_context();
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    const conv_case shapes[] = {
        {2, 6, 7, 9, 4, 3, 2, 2, 1, 1, 2, 1, 0, 2, 1, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 4, 5, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {3, 3, 6, 4, 5, 1, 1, 1, 2, 1, 1, 0, 0, 0, 0, 1, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        conv_case k = shapes[si];
        int64_t xn = k.n * k.c * k.h * k.w, wn = k.k * (k.c / k.groups) * k.r * k.s;
        float *x = malloc(sizeof(float) * (size_t)xn), *w = malloc(sizeof(float) * (size_t)wn);
        float b[8];
        th_fill(x, xn, 11);
        th_fill(w, wn, 12);
        th_fill(b, k.k, 13);
        for (int a = 0; a < 2; a++)
            for (int f = 0; f < 3; f++)
                for (int o = 0; o < 2; o++) {
                    k.xl = act_layouts[a];
                    k.wl = filt_layouts[f];
                    k.yl = act_layouts[o];
                    int64_t od[4];
                    float *got = run_case(host, &k, x, w, b, od);
                    float *want = malloc(sizeof(float) * (size_t)(od[0] * od[1] * od[2] * od[3]));
                    naive_conv(&k, x, w, b, want, od);
                    char name[256];
                    case_name(&k, name, sizeof name);
                    compare(got, want, od[0] * od[1] * od[2] * od[3], (k.c / k.groups) * k.r * k.s,
                            name, "/device:CPU:0 vs naive loop");
                    free(got);
                    free(want);
                }
        free(x);
        free(w);
    }
    pdnn_context_destroy(ctx);
}

/* ---- parity on accelerators ------------------------------------------ */

/* Every activation/filter/output layout combination on shapes that
 * exercise groups, depthwise, stride, dilation and asymmetric padding. */
static void every_layout_combination(void)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const conv_case shapes[] = {
        /* n  c   h   w   k  r  s  sh sw dh dw pt pb pl pr g  bias relu */
        {2, 6, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 5, 7, 7, 10, 3, 3, 2, 2, 2, 2, 2, 1, 0, 2, 5, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {3, 17, 6, 5, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {17, 7, 6, 11, 7, 3, 3, 1, 2, 1, 1, 1, 0, 1, 1, 7, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 5, 7, 6, 9, 3, 3, 1, 1, 1, 1, 1, 2, 0, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int a = 0; a < 2; a++)
            for (int f = 0; f < 3; f++)
                for (int o = 0; o < 2; o++) {
                    conv_case k = shapes[si];
                    k.xl = act_layouts[a];
                    k.wl = filt_layouts[f];
                    k.yl = act_layouts[o];
                    check_case(ctx, devs, ndev, &k, (uint32_t)(si * 100 + (size_t)a * 10 + (size_t)f));
                }
    pdnn_context_destroy(ctx);
}

/* The odd sizes the issue names: 1x1 images, channels not a multiple of 4,
 * batch 1 and 17, filters 1/3/5/7, the largest spatial size. */
static void edge_shapes(void)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const conv_case cases[] = {
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {17, 3, 1, 1, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC},
        {1, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, PDNN_NHWC, PDNN_OHWI, PDNN_NCHW},
        {17, 4, 8, 8, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NHWC, PDNN_OHWI, PDNN_NHWC},
        {17, 17, 5, 6, 4, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 3, 23, 23, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC},
        {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 64, 56, 56, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NHWC, PDNN_OHWI, PDNN_NHWC},
        {1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 64, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC},
        {1, 17, 9, 9, 34, 3, 3, 3, 3, 2, 2, 2, 0, 1, 2, 17, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NHWC},
        {2, 4, 4, 4, 4, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, 2, 1, 0, PDNN_NCHW, PDNN_OHWI, PDNN_NCHW},
        {1, 3, 2, 9, 2, 1, 5, 1, 3, 1, 2, 0, 0, 4, 3, 1, 1, 0, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW},
        /* depthwise: a 1x1 image with padding, multiplier 2, batch 17 */
        {17, 3, 1, 1, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, PDNN_NHWC, PDNN_OIHW, PDNN_NCHW},
        /* depthwise rows long enough for the vector loads of stride 1 and
         * 2 with borders on both sides (NCHW), and whole 8-channel blocks
         * beside a tail (NHWC, HWIO) */
        {2, 5, 20, 37, 5, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 5, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 8, 30, 45, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 8, 0, 1, PDNN_NCHW, PDNN_HWIO, PDNN_NCHW},
        {2, 20, 11, 13, 20, 3, 3, 2, 1, 1, 2, 1, 1, 2, 2, 20, 1, 1, PDNN_NHWC, PDNN_HWIO, PDNN_NHWC},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(ctx, devs, ndev, &cases[i], (uint32_t)(1000 + i));
    pdnn_context_destroy(ctx);
}

/* A seeded sample of the full grid (batch, channels, image size, kernel,
 * stride, dilation, padding, groups, layouts), bounded in cost. */
static void sampled_grid(void)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    static const int64_t batches[] = {1, 2, 17};
    static const int64_t chans[] = {1, 3, 4, 17, 64};
    static const int64_t sizes[] = {1, 2, 5, 8, 13, 28, 56};
    static const int64_t kernels[] = {1, 3, 5, 7};
    uint32_t s = 12345;
#define NEXT() (s ^= s << 13, s ^= s >> 17, s ^= s << 5, s)
    int done = 0;
    for (int tries = 0; done < 80 && tries < 100000; tries++) {
        conv_case k;
        memset(&k, 0, sizeof k);
        k.n = batches[NEXT() % 3];
        k.c = chans[NEXT() % 5];
        k.h = sizes[NEXT() % 7];
        k.w = NEXT() % 2 ? k.h : sizes[NEXT() % 7];
        k.r = kernels[NEXT() % 4];
        k.s = NEXT() % 3 ? k.r : kernels[NEXT() % 4];
        k.sh = 1 + (int)(NEXT() % 3);
        k.sw = NEXT() % 2 ? k.sh : 1 + (int)(NEXT() % 3);
        k.dh = 1 + (int)(NEXT() % 2);
        k.dw = 1 + (int)(NEXT() % 2);
        k.pt = (int)(NEXT() % (uint32_t)k.r);
        k.pb = (int)(NEXT() % (uint32_t)k.r);
        k.pl = (int)(NEXT() % (uint32_t)k.s);
        k.pr = (int)(NEXT() % (uint32_t)k.s);
        uint32_t g = NEXT() % 3;
        k.groups = g == 0 ? 1 : g == 1 ? (k.c % 2 == 0 ? 2 : 1) : (int)k.c;
        k.k = k.groups * (int64_t)(1 + NEXT() % 3) * (k.groups == 1 ? 5 : 1);
        k.bias = (int)(NEXT() % 2);
        k.relu = (int)(NEXT() % 2);
        k.xl = act_layouts[NEXT() % 2];
        k.wl = filt_layouts[NEXT() % 3];
        k.yl = act_layouts[NEXT() % 2];
        if (accel_algo == PDNN_CONV_ALGO_WINOGRAD) {
            /* The few shapes winograd claims are rare in the grid: draw
             * only those (sizes, channels, padding, layouts stay random). */
            k.r = k.s = 3;
            k.sh = k.sw = k.dh = k.dw = 1;
            k.groups = 1;
            k.k = 1 + (int64_t)(NEXT() % 20);
            k.pt = (int)(NEXT() % 3);
            k.pb = (int)(NEXT() % 3);
            k.pl = (int)(NEXT() % 3);
            k.pr = (int)(NEXT() % 3);
        }
        if ((k.r - 1) * k.dh + 1 > k.h + k.pt + k.pb || (k.s - 1) * k.dw + 1 > k.w + k.pl + k.pr)
            continue;
        int64_t oh = (k.h + k.pt + k.pb - (k.r - 1) * k.dh - 1) / k.sh + 1;
        int64_t ow = (k.w + k.pl + k.pr - (k.s - 1) * k.dw - 1) / k.sw + 1;
        int64_t macs = k.n * k.k * oh * ow * (k.c / k.groups) * k.r * k.s;
        if (macs > 3000000) /* keep the sample cheap under the sanitizers */
            continue;
        check_case(ctx, devs, ndev, &k, (uint32_t)(5000 + done));
        done++;
    }
#undef NEXT
    cr_assert_eq(done, 80, "the sampler found only %d valid cases", done);
    pdnn_context_destroy(ctx);
}

/* Every parity test runs once per accelerator algorithm. im2col_gemm needs
 * CLBlast; where it is not built the algorithm reports itself unavailable
 * and those runs skip. */
static void with_algo(pdnn_conv_algo algo, void (*body)(void))
{
    accel_algo = algo;
    accel_runs = 0;
    if (algo == PDNN_CONV_ALGO_IM2COL_GEMM) {
        pdnn_device *devs[8];
        int ndev;
        pdnn_context *ctx = th_accel_context(devs, &ndev);
        pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 1, 1, 1), wd = th_desc(PDNN_OIHW, 1, 1, 1, 1);
        pdnn_tensor *x = th_upload(devs[0], &xd, NULL), *w = th_upload(devs[0], &wd, NULL);
        pdnn_tensor *y = th_upload(devs[0], &xd, NULL);
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.algorithm = algo;
        pdnn_status st = pdnn_conv2d_forward(&p, x, w, NULL, y);
        pdnn_tensor_release(x);
        pdnn_tensor_release(w);
        pdnn_tensor_release(y);
        pdnn_context_destroy(ctx);
        if (st == PDNN_ERR_UNSUPPORTED)
            cr_skip_test("im2col_gemm is not built here (no CLBlast)");
        cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
    }
    accel_runs = 0;
    body();
    /* body skips when there is no accelerator, so it ran on one here. */
    cr_assert_gt(accel_runs, 0, "%s ran on no shape of this suite", pdnn_conv_algo_name(algo));
    /* Every suite holds depthwise shapes (groups == C, multipliers 1 to 3). */
    if (algo == PDNN_CONV_ALGO_DEPTHWISE)
        cr_assert_geq(accel_runs, 4, "depthwise ran on only %d case(s)", accel_runs);
}

/* 1x1 convolutions for gemm_1x1's tiles and tails: K and C of 1, 3, 5,
 * 17 and 33 (not multiples of any channel block), 1x1 images, batch 1
 * and 17, pixel counts that are not multiples of any tile, stride 2 and
 * implied bottom/right padding that stride 2 leaves unread, groups, an
 * image large enough for the NCHW rows kernel, every layout. */
static void gemm_1x1_shapes(void)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const conv_case shapes[] = {
        /* n  c   h   w   k  r  s  sh sw dh dw pt pb pl pr g  bias relu */
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {17, 3, 1, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 33, 7, 7, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {17, 5, 3, 5, 33, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 17, 13, 11, 64, 1, 1, 1, 1, 3, 2, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {3, 64, 9, 9, 3, 1, 1, 2, 2, 1, 1, 0, 1, 0, 0, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 32, 6, 7, 64, 1, 1, 2, 3, 1, 1, 0, 0, 0, 0, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 12, 5, 5, 12, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 96, 14, 14, 48, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        /* 899 pixels, not a multiple of any pixel tile: the rows kernel's
         * overlapping last tile, over two images. */
        {2, 33, 29, 31, 17, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int a = 0; a < 2; a++)
            for (int f = 0; f < 3; f++)
                for (int o = 0; o < 2; o++) {
                    conv_case k = shapes[si];
                    k.xl = act_layouts[a];
                    k.wl = filt_layouts[f];
                    k.yl = act_layouts[o];
                    check_case(ctx, devs, ndev, &k, (uint32_t)(7000 + si * 100 + (size_t)a * 10 + (size_t)f));
                }
    pdnn_context_destroy(ctx);
}

Test(conv_parity, every_layout_combination_direct) { with_algo(PDNN_CONV_ALGO_DIRECT, every_layout_combination); }
Test(conv_parity, every_layout_combination_im2col_gemm) { with_algo(PDNN_CONV_ALGO_IM2COL_GEMM, every_layout_combination); }
Test(conv_parity, edge_shapes_direct) { with_algo(PDNN_CONV_ALGO_DIRECT, edge_shapes); }
Test(conv_parity, edge_shapes_im2col_gemm) { with_algo(PDNN_CONV_ALGO_IM2COL_GEMM, edge_shapes); }
Test(conv_parity, sampled_grid_direct) { with_algo(PDNN_CONV_ALGO_DIRECT, sampled_grid); }
Test(conv_parity, sampled_grid_im2col_gemm) { with_algo(PDNN_CONV_ALGO_IM2COL_GEMM, sampled_grid); }
Test(conv_parity, every_layout_combination_tiled) { with_algo(PDNN_CONV_ALGO_TILED, every_layout_combination); }
Test(conv_parity, edge_shapes_tiled) { with_algo(PDNN_CONV_ALGO_TILED, edge_shapes); }
Test(conv_parity, sampled_grid_tiled) { with_algo(PDNN_CONV_ALGO_TILED, sampled_grid); }
Test(conv_parity, every_layout_combination_winograd) { with_algo(PDNN_CONV_ALGO_WINOGRAD, every_layout_combination); }
Test(conv_parity, edge_shapes_winograd) { with_algo(PDNN_CONV_ALGO_WINOGRAD, edge_shapes); }
Test(conv_parity, sampled_grid_winograd) { with_algo(PDNN_CONV_ALGO_WINOGRAD, sampled_grid); }
Test(conv_parity, every_layout_combination_gemm_1x1) { with_algo(PDNN_CONV_ALGO_GEMM_1X1, every_layout_combination); }
Test(conv_parity, edge_shapes_gemm_1x1) { with_algo(PDNN_CONV_ALGO_GEMM_1X1, edge_shapes); }
Test(conv_parity, sampled_grid_gemm_1x1) { with_algo(PDNN_CONV_ALGO_GEMM_1X1, sampled_grid); }
/* Covers both of gemm_1x1's kernels (rows: NCHW, stride 1, >= 784
 * pixels, C <= 256; tiles: the rest); POLYDNN_DEBUG=1 says which ran. */
Test(conv_parity, gemm_1x1_shapes_gemm_1x1) { with_algo(PDNN_CONV_ALGO_GEMM_1X1, gemm_1x1_shapes); }
Test(conv_parity, gemm_1x1_shapes_direct) { with_algo(PDNN_CONV_ALGO_DIRECT, gemm_1x1_shapes); }

/* implicit_gemm's tiles, masks and tails: C and K of 1, 3, 5, 17 and 33
 * (not multiples of any channel block), 1x1 images, batch 1 and 17, pixel
 * tiles that span images, padding larger than the filter's reach (whole
 * taps and whole output rows outside the image), dilation 2, stride 3,
 * asymmetric padding, 1xN and Nx1 filters, groups of 16 and 32 output
 * channels, ResNet-50's conv1 and a strided 3x3 at reduced size. */
static void implicit_gemm_shapes(void)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const conv_case shapes[] = {
        /* n  c   h   w   k  r  s  sh sw dh dw pt pb pl pr g  bias relu */
        {1, 1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {17, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 33, 7, 7, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {17, 5, 3, 5, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 3, 4, 5, 7, 2, 2, 1, 1, 1, 1, 4, 4, 5, 3, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 17, 13, 11, 19, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {3, 8, 11, 10, 9, 3, 3, 3, 3, 1, 1, 1, 0, 0, 2, 1, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 6, 9, 9, 20, 1, 5, 1, 2, 1, 2, 0, 0, 3, 1, 1, 0, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 32, 6, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 12, 8, 8, 48, 3, 1, 2, 1, 1, 1, 1, 0, 0, 0, 3, 1, 0, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {1, 3, 23, 23, 64, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
        {2, 40, 10, 10, 36, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_OIHW, PDNN_NCHW},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int a = 0; a < 2; a++)
            for (int f = 0; f < 3; f++)
                for (int o = 0; o < 2; o++) {
                    conv_case k = shapes[si];
                    k.xl = act_layouts[a];
                    k.wl = filt_layouts[f];
                    k.yl = act_layouts[o];
                    check_case(ctx, devs, ndev, &k, (uint32_t)(9000 + si * 100 + (size_t)a * 10 + (size_t)f));
                }
    pdnn_context_destroy(ctx);
}

Test(conv_parity, every_layout_combination_implicit_gemm)
{
    with_algo(PDNN_CONV_ALGO_IMPLICIT_GEMM, every_layout_combination);
}
Test(conv_parity, edge_shapes_implicit_gemm) { with_algo(PDNN_CONV_ALGO_IMPLICIT_GEMM, edge_shapes); }
Test(conv_parity, sampled_grid_implicit_gemm) { with_algo(PDNN_CONV_ALGO_IMPLICIT_GEMM, sampled_grid); }
Test(conv_parity, implicit_gemm_shapes_implicit_gemm)
{
    memset(ig_cfg_runs, 0, sizeof ig_cfg_runs);
    with_algo(PDNN_CONV_ALGO_IMPLICIT_GEMM, implicit_gemm_shapes);
    pdnn_device *devs[8];
    int ndev = 0;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    for (int i = 0; i < ndev; i++) {
        pdnn_device_info info;
        pdnn_device_get_info(devs[i], &info);
        if (strcmp(info.backend, "opencl") != 0)
            continue;
        /* Every configuration ran (and was checked) on most of the shapes. */
        char cfg[16][48];
        const int n = configs_of(devs[i], PDNN_CONV_ALGO_IMPLICIT_GEMM, cfg, 16);
        for (int ci = 0; ci < n; ci++)
            cr_assert_geq(ig_cfg_runs[ci], 12 * 10, "implicit_gemm %s ran on %d shapes only", cfg[ci],
                          ig_cfg_runs[ci]);
    }
    pdnn_context_destroy(ctx);
}
Test(conv_parity, implicit_gemm_shapes_direct) { with_algo(PDNN_CONV_ALGO_DIRECT, implicit_gemm_shapes); }

/* implicit_gemm refuses groups whose output channels are not a multiple
 * of 4 with PDNN_ERR_UNSUPPORTED and a message saying why, and AUTO
 * still runs them. */
Test(conv_parity, implicit_gemm_refuses_narrow_groups)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
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
    pdnn_context *ctx = th_accel_context(devs, &ndev);
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

/* tiled on grouped convolutions: 16-channel groups run, others are
 * refused with PDNN_ERR_UNSUPPORTED, and AUTO still runs them. */
Test(conv_parity, tiled_claims_what_it_runs)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
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

/* No algorithm writes past its output: a guard tensor allocated right
 * after y (the allocator places it there) keeps its values. Odd sizes make
 * the launch grids overhang the problem. */
Test(conv_parity, writes_stay_inside_the_output)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const pdnn_conv_algo algos[] = {PDNN_CONV_ALGO_DIRECT, PDNN_CONV_ALGO_IM2COL_GEMM, PDNN_CONV_ALGO_TILED,
                                    PDNN_CONV_ALGO_AUTO};
    for (int i = 0; i < ndev; i++) {
        for (int a = 0; a < 4; a++) {
            for (int li = 0; li < 2; li++) {
                pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
                pdnn_tensor_desc xd = th_desc(l, 3, 5, 9, 13), wd = th_desc(PDNN_HWIO, 20, 5, 3, 3);
                pdnn_tensor_desc yd = th_desc(l, 3, 20, 9, 13), gd = th_desc(PDNN_NCHW, 1, 1, 64, 64);
                float xv[3 * 5 * 9 * 13], wv[20 * 5 * 9], gv[4096];
                th_fill(xv, 3 * 5 * 9 * 13, 1);
                th_fill(wv, 20 * 5 * 9, 2);
                for (int g = 0; g < 4096; g++)
                    gv[g] = 7.0f;
                pdnn_tensor *x = th_upload(devs[i], &xd, xv), *w = th_upload(devs[i], &wd, wv);
                pdnn_tensor *y = th_upload(devs[i], &yd, NULL), *guard = th_upload(devs[i], &gd, gv);
                pdnn_conv2d_params p;
                pdnn_conv2d_params_init(&p);
                p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
                p.relu = 1;
                p.algorithm = algos[a];
                pdnn_status st = pdnn_conv2d_forward(&p, x, w, NULL, y);
                cr_assert(st == PDNN_SUCCESS || st == PDNN_ERR_UNSUPPORTED, "%s", pdnn_last_error());
                float *after = th_download(guard);
                for (int g = 0; g < 4096; g++)
                    cr_assert_eq(after[g], 7.0f, "%s %s: guard element %d overwritten", pdnn_conv_algo_name(algos[a]),
                                 pdnn_layout_name(l), g);
                free(after);
                pdnn_tensor_release(x);
                pdnn_tensor_release(w);
                pdnn_tensor_release(y);
                pdnn_tensor_release(guard);
            }
        }
    }
    pdnn_context_destroy(ctx);
}

static int is_opencl(pdnn_device *d)
{
    pdnn_device_info info;
    return pdnn_device_get_info(d, &info) == PDNN_SUCCESS && strcmp(info.backend, "opencl") == 0;
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

/* gemm_1x1 writes nothing past its output in any configuration or
 * layout: partial pixel tiles and channel blocks (K = 20, 3 x 9 x 13
 * pixels) are where its stores are masked. */
Test(conv_parity, gemm_1x1_writes_stay_inside_the_output)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    char cfg[16][48];
    int ran = 0;
    for (int i = 0; i < ndev; i++) {
        int ncfg = configs_of(devs[i], PDNN_CONV_ALGO_GEMM_1X1, cfg, 16);
        for (int ci = 0; ci < (ncfg > 0 ? ncfg : 1); ci++) {
            for (int li = 0; li < 2; li++) {
                pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
                pdnn_tensor_desc xd = th_desc(l, 3, 5, 9, 13), wd = th_desc(li ? PDNN_HWIO : PDNN_OIHW, 20, 5, 1, 1);
                pdnn_tensor_desc yd = th_desc(l, 3, 20, 9, 13), gd = th_desc(PDNN_NCHW, 1, 1, 64, 64);
                float xv[3 * 5 * 9 * 13], wv[20 * 5], gv[4096];
                th_fill(xv, 3 * 5 * 9 * 13, 1);
                th_fill(wv, 20 * 5, 2);
                for (int g = 0; g < 4096; g++)
                    gv[g] = 7.0f;
                pdnn_tensor *x = th_upload(devs[i], &xd, xv), *w = th_upload(devs[i], &wd, wv);
                pdnn_tensor *y = th_upload(devs[i], &yd, NULL), *guard = th_upload(devs[i], &gd, gv);
                pdnn_conv2d_params p;
                pdnn_conv2d_params_init(&p);
                p.relu = 1;
                p.algorithm = PDNN_CONV_ALGO_GEMM_1X1;
                if (ncfg > 0)
                    pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, "gemm_1x1", ci);
                pdnn_status st = pdnn_conv2d_forward(&p, x, w, NULL, y);
                pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, NULL, -1);
                cr_assert(st == PDNN_SUCCESS || st == PDNN_ERR_UNSUPPORTED, "%s", pdnn_last_error());
                ran += st == PDNN_SUCCESS;
                float *after = th_download(guard);
                for (int g = 0; g < 4096; g++)
                    cr_assert_eq(after[g], 7.0f, "gemm_1x1 config %d %s: guard element %d overwritten", ci,
                                 pdnn_layout_name(l), g);
                free(after);
                pdnn_tensor_release(x);
                pdnn_tensor_release(w);
                pdnn_tensor_release(y);
                pdnn_tensor_release(guard);
            }
        }
    }
    /* Wherever an OpenCL device exists, gemm_1x1 runs this shape. */
    for (int i = 0; i < ndev; i++) {
        pdnn_device_info info;
        pdnn_device_get_info(devs[i], &info);
        if (strcmp(info.backend, "opencl") == 0)
            cr_assert_gt(ran, 0, "gemm_1x1 ran none of the guard cases");
    }
    pdnn_context_destroy(ctx);
}

Test(conv_parity, every_layout_combination_depthwise) { with_algo(PDNN_CONV_ALGO_DEPTHWISE, every_layout_combination); }
Test(conv_parity, edge_shapes_depthwise) { with_algo(PDNN_CONV_ALGO_DEPTHWISE, edge_shapes); }
Test(conv_parity, sampled_grid_depthwise) { with_algo(PDNN_CONV_ALGO_DEPTHWISE, sampled_grid); }

/* depthwise runs groups == C (multipliers 1 and 2) without writing past
 * its output and is what AUTO picks there; other grouped convolutions are
 * refused with PDNN_ERR_UNSUPPORTED and a message saying why. */
Test(conv_parity, depthwise_claims_what_it_runs)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
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

/* implicit_gemm writes nothing past its output in any configuration,
 * layout or filter packing (K = 20 is a partial channel block for every
 * configuration; HWIO with K = 32 is read in place where the block
 * divides it): a guard tensor right after y keeps its values. Stride 2
 * with padding leaves partial pixel tiles at the end of every image. */
Test(conv_parity, implicit_gemm_writes_stay_inside_the_output)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    char cfg[16][48];
    int ran = 0;
    for (int i = 0; i < ndev; i++) {
        int ncfg = configs_of(devs[i], PDNN_CONV_ALGO_IMPLICIT_GEMM, cfg, 16);
        for (int ci = 0; ci < (ncfg > 0 ? ncfg : 1); ci++) {
            for (int li = 0; li < 4; li++) {
                const pdnn_layout l = li & 1 ? PDNN_NHWC : PDNN_NCHW;
                const int64_t K = li & 2 ? 32 : 20;
                pdnn_tensor_desc xd = th_desc(l, 3, 5, 9, 13), wd = th_desc(li & 1 ? PDNN_HWIO : PDNN_OIHW, K, 5, 3, 3);
                pdnn_tensor_desc yd = th_desc(l, 3, K, 5, 7), gd = th_desc(PDNN_NCHW, 1, 1, 64, 64);
                float xv[3 * 5 * 9 * 13], wv[32 * 5 * 9], gv[4096];
                th_fill(xv, 3 * 5 * 9 * 13, 1);
                th_fill(wv, 32 * 5 * 9, 2);
                for (int g = 0; g < 4096; g++)
                    gv[g] = 7.0f;
                pdnn_tensor *x = th_upload(devs[i], &xd, xv), *w = th_upload(devs[i], &wd, wv);
                pdnn_tensor *y = th_upload(devs[i], &yd, NULL), *guard = th_upload(devs[i], &gd, gv);
                pdnn_conv2d_params p;
                pdnn_conv2d_params_init(&p);
                p.stride_h = p.stride_w = 2;
                p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
                p.relu = 1;
                p.algorithm = PDNN_CONV_ALGO_IMPLICIT_GEMM;
                if (ncfg > 0)
                    pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, "implicit_gemm", ci);
                pdnn_status st = pdnn_conv2d_forward(&p, x, w, NULL, y);
                pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, NULL, -1);
                cr_assert(st == PDNN_SUCCESS || st == PDNN_ERR_UNSUPPORTED, "%s", pdnn_last_error());
                ran += st == PDNN_SUCCESS;
                float *after = th_download(guard);
                for (int g = 0; g < 4096; g++)
                    cr_assert_eq(after[g], 7.0f, "implicit_gemm config %d %s K %lld: guard element %d overwritten",
                                 ci, pdnn_layout_name(l), (long long)K, g);
                free(after);
                pdnn_tensor_release(x);
                pdnn_tensor_release(w);
                pdnn_tensor_release(y);
                pdnn_tensor_release(guard);
            }
        }
    }
    /* Wherever an OpenCL device exists, implicit_gemm ran every case. */
    for (int i = 0; i < ndev; i++) {
        pdnn_device_info info;
        pdnn_device_get_info(devs[i], &info);
        const int ncfg = configs_of(devs[i], PDNN_CONV_ALGO_IMPLICIT_GEMM, cfg, 16);
        if (strcmp(info.backend, "opencl") == 0)
            cr_assert_geq(ran, ncfg * 4, "implicit_gemm ran %d of the %d guard cases", ran, ncfg * 4);
    }
    pdnn_context_destroy(ctx);
}
