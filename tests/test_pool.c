/* pool2d: the host reference against hand-computed values, then every
 * accelerator against it over modes, windows, strides, paddings, ceil mode
 * and both layouts. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pool_case {
    int64_t n, c, h, w;
    pdnn_pool_mode mode;
    int wh, ww, sh, sw, pt, pb, pl, pr, ceil;
    pdnn_layout xl, yl;
} pool_case;

static const char *mode_name(pdnn_pool_mode m)
{
    return m == PDNN_POOL_MAX ? "max" : m == PDNN_POOL_AVG_INCLUDE_PADDING ? "avg-incl" : "avg-excl";
}

static float *run_pool(pdnn_device *dev, const pool_case *k, const float *x, int64_t od[4])
{
    pdnn_tensor_desc xd = th_desc(k->xl, k->n, k->c, k->h, k->w);
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    p.mode = k->mode;
    p.window_h = k->wh;
    p.window_w = k->ww;
    p.stride_h = k->sh;
    p.stride_w = k->sw;
    p.pad_top = k->pt;
    p.pad_bottom = k->pb;
    p.pad_left = k->pl;
    p.pad_right = k->pr;
    p.ceil_mode = k->ceil;
    cr_assert_eq(pdnn_pool2d_output_dims(&xd, &p, od), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc yd = th_desc(k->yl, od[0], od[1], od[2], od[3]);
    float *xm = malloc(sizeof(float) * (size_t)pdnn_tensor_desc_elements(&xd));
    th_to_layout(x, xm, k->xl, xd.dims);
    pdnn_tensor *tx = th_upload(dev, &xd, xm);
    pdnn_tensor *ty = th_upload(dev, &yd, NULL);
    cr_assert_eq(pdnn_pool2d_forward(&p, tx, ty), PDNN_SUCCESS, "pool2d: %s", pdnn_last_error());
    float *ym = th_download(ty);
    float *y = malloc(sizeof(float) * (size_t)pdnn_tensor_desc_elements(&yd));
    th_from_layout(ym, y, k->yl, yd.dims);
    pdnn_tensor_release(tx);
    pdnn_tensor_release(ty);
    free(xm);
    free(ym);
    return y;
}

Test(pool_reference, hand_computed_values)
{
    pdnn_context *ctx = th_context();
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    /* 3x3 image 1..9, window 2, stride 2, padding 1 on every side:
     * windows cover {1}, {2,3}, {4,7}, {5,6,8,9}. */
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    pool_case k = {1, 1, 3, 3, PDNN_POOL_MAX, 2, 2, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW};
    int64_t od[4];
    float *y = run_pool(host, &k, x, od);
    cr_assert(od[2] == 2 && od[3] == 2);
    const float max_want[4] = {1, 3, 7, 9};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], max_want[i], 0, "max y[%d] = %g", i, y[i]);
    free(y);
    k.mode = PDNN_POOL_AVG_INCLUDE_PADDING;
    y = run_pool(host, &k, x, od);
    const float incl_want[4] = {1 / 4.f, 5 / 4.f, 11 / 4.f, 28 / 4.f};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], incl_want[i], 1e-6, "avg-incl y[%d] = %g", i, y[i]);
    free(y);
    k.mode = PDNN_POOL_AVG_EXCLUDE_PADDING;
    y = run_pool(host, &k, x, od);
    const float excl_want[4] = {1, 2.5f, 5.5f, 7};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], excl_want[i], 1e-6, "avg-excl y[%d] = %g", i, y[i]);
    free(y);
    /* Ceil mode, no padding, 3x3 image, window 2 stride 2: a second window
     * of one row/column; include-padding divides by the clipped size. */
    pool_case c = {1, 1, 3, 3, PDNN_POOL_AVG_INCLUDE_PADDING, 2, 2, 2, 2, 0, 0, 0, 0, 1, PDNN_NCHW, PDNN_NCHW};
    y = run_pool(host, &c, x, od);
    cr_assert(od[2] == 2 && od[3] == 2, "ceil mode output %lldx%lld", (long long)od[2], (long long)od[3]);
    const float ceil_want[4] = {12 / 4.f, 9 / 2.f, 15 / 2.f, 9};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], ceil_want[i], 1e-6, "ceil y[%d] = %g, expected %g", i, y[i], ceil_want[i]);
    free(y);
    /* PyTorch drops a ceil-mode window that would start in the padding:
     * 3 wide, window 2, stride 2, pad 1: ceil gives 3 windows, the third
     * starting at 3 = in + pad, so 2 remain. */
    pool_case d = {1, 1, 3, 3, PDNN_POOL_MAX, 2, 2, 2, 2, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_NCHW};
    y = run_pool(host, &d, x, od);
    cr_assert_eq(od[3], 2, "ceil-mode output width %lld, expected 2", (long long)od[3]);
    free(y);
    pdnn_context_destroy(ctx);
}

static void check(pdnn_context *ctx, pdnn_device **devs, int ndev, const pool_case *k, uint32_t seed)
{
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    int64_t xn = k->n * k->c * k->h * k->w;
    float *x = malloc(sizeof(float) * (size_t)xn);
    th_fill(x, xn, seed);
    pool_case ref = *k;
    ref.xl = ref.yl = PDNN_NCHW;
    int64_t od[4];
    float *want = run_pool(host, &ref, x, od);
    int64_t yn = od[0] * od[1] * od[2] * od[3];
    for (int i = 0; i < ndev; i++) {
        pdnn_device_info info;
        pdnn_device_get_info(devs[i], &info);
        int64_t od2[4];
        float *got = run_pool(devs[i], k, x, od2);
        cr_assert(memcmp(od, od2, sizeof od) == 0);
        for (int64_t j = 0; j < yn; j++) {
            double e = fabs((double)got[j] - (double)want[j]);
            /* Max is exact; an average summed in float differs from the
             * double reference by about the window size times epsilon. */
            double tol = k->mode == PDNN_POOL_MAX ? 0.0 : 1e-6 * k->wh * k->ww + 1e-6 * fabs(want[j]);
            if (!(e <= tol))
                cr_assert_fail("pool n%lld c%lld %lldx%lld %s win %dx%d stride %d,%d pad %d,%d,%d,%d "
                               "ceil%d %s->%s on %s: element %lld is %.7g, expected %.7g",
                               (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w,
                               mode_name(k->mode), k->wh, k->ww, k->sh, k->sw, k->pt, k->pb, k->pl,
                               k->pr, k->ceil, pdnn_layout_name(k->xl), pdnn_layout_name(k->yl),
                               info.name, (long long)j, (double)got[j], (double)want[j]);
        }
        free(got);
    }
    free(want);
    free(x);
}

Test(pool_parity, modes_layouts_and_edges)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const pool_case shapes[] = {
        {1, 1, 1, 1, PDNN_POOL_MAX, 1, 1, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {17, 3, 7, 7, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 17, 9, 6, PDNN_POOL_MAX, 3, 2, 2, 3, 2, 0, 1, 1, 1, PDNN_NCHW, PDNN_NCHW},
        {1, 64, 112, 112, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {3, 5, 8, 8, PDNN_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 4, 10, 11, PDNN_POOL_MAX, 5, 4, 3, 1, 2, 4, 0, 3, 1, PDNN_NCHW, PDNN_NCHW},
        {17, 1, 2, 2, PDNN_POOL_MAX, 2, 2, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
    };
    const pdnn_layout L[] = {PDNN_NCHW, PDNN_NHWC};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int m = 0; m < 3; m++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    pool_case k = shapes[i];
                    k.mode = (pdnn_pool_mode)m;
                    k.xl = L[a];
                    k.yl = L[b];
                    check(ctx, devs, ndev, &k, (uint32_t)(i * 10 + (size_t)m));
                }
    pdnn_context_destroy(ctx);
}

Test(pool_parity, sampled_grid)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    static const int64_t batches[] = {1, 2, 17};
    static const int64_t chans[] = {1, 3, 4, 17, 64};
    static const int64_t sizes[] = {1, 2, 5, 8, 13, 28, 56};
    uint32_t s = 777;
#define NEXT() (s ^= s << 13, s ^= s >> 17, s ^= s << 5, s)
    int done = 0;
    for (int tries = 0; done < 60 && tries < 100000; tries++) {
        pool_case k;
        memset(&k, 0, sizeof k);
        k.n = batches[NEXT() % 3];
        k.c = chans[NEXT() % 5];
        k.h = sizes[NEXT() % 7];
        k.w = NEXT() % 2 ? k.h : sizes[NEXT() % 7];
        k.mode = (pdnn_pool_mode)(NEXT() % 3);
        k.wh = 1 + (int)(NEXT() % 4);
        k.ww = NEXT() % 2 ? k.wh : 1 + (int)(NEXT() % 4);
        k.sh = 1 + (int)(NEXT() % 3);
        k.sw = 1 + (int)(NEXT() % 3);
        k.pt = (int)(NEXT() % (uint32_t)k.wh);
        k.pb = (int)(NEXT() % (uint32_t)k.wh);
        k.pl = (int)(NEXT() % (uint32_t)k.ww);
        k.pr = (int)(NEXT() % (uint32_t)k.ww);
        k.ceil = (int)(NEXT() % 2);
        k.xl = NEXT() % 2 ? PDNN_NHWC : PDNN_NCHW;
        k.yl = NEXT() % 2 ? PDNN_NHWC : PDNN_NCHW;
        if (k.h + k.pt + k.pb < k.wh || k.w + k.pl + k.pr < k.ww)
            continue;
        if (k.n * k.c * k.h * k.w > 400000)
            continue;
        check(ctx, devs, ndev, &k, (uint32_t)(9000 + done));
        done++;
    }
#undef NEXT
    cr_assert_eq(done, 60);
    pdnn_context_destroy(ctx);
}

/* The OpenCL row kernels' branches: NCHW rows narrower than one 16-column
 * segment, widths off the segment grid, segments crossing either border
 * or wholly outside, strides 1 and 2 with the widest windows they hold
 * and one wider (the scalar fallback); NHWC channel counts mixing 16-,
 * 8-wide and scalar groups; padding on every side, ceil mode, batch 17
 * and 1x1 images. */
Test(pool_parity, row_kernel_paths)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    const pool_case shapes[] = {
        {2, 3, 5, 7, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 5, 9, 37, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 2, 1, 2, 1, PDNN_NCHW, PDNN_NCHW},
        {17, 3, 6, 19, PDNN_POOL_MAX, 2, 3, 1, 1, 1, 0, 2, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 50, PDNN_POOL_MAX, 2, 9, 2, 1, 0, 1, 4, 4, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 70, PDNN_POOL_MAX, 1, 17, 1, 2, 0, 0, 8, 8, 1, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 70, PDNN_POOL_MAX, 1, 18, 1, 2, 0, 0, 9, 9, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 4, 40, PDNN_POOL_MAX, 2, 10, 2, 1, 1, 1, 5, 5, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 12, 7, 9, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {3, 24, 5, 5, PDNN_POOL_MAX, 2, 2, 1, 1, 1, 1, 1, 1, 1, PDNN_NCHW, PDNN_NCHW},
        {1, 35, 6, 6, PDNN_POOL_MAX, 3, 2, 2, 3, 2, 1, 1, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 3, 16, PDNN_POOL_MAX, 2, 3, 1, 1, 0, 1, 0, 2, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 3, 32, PDNN_POOL_MAX, 2, 3, 1, 2, 0, 1, 0, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {17, 4, 1, 1, PDNN_POOL_MAX, 1, 1, 1, 1, 0, 0, 0, 0, 0, PDNN_NCHW, PDNN_NCHW},
        {5, 17, 1, 1, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
    };
    const pdnn_layout L[] = {PDNN_NCHW, PDNN_NHWC};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int m = 0; m < 3; m++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    pool_case k = shapes[i];
                    k.mode = (pdnn_pool_mode)m;
                    k.xl = L[a];
                    k.yl = L[b];
                    check(ctx, devs, ndev, &k, (uint32_t)(500 + i * 10 + (size_t)m));
                }
    pdnn_context_destroy(ctx);
}

/* NaN in a window makes the output NaN in every mode (as in PyTorch), on
 * the vector paths (contiguous rows or channels, strides 1 and 2) and the
 * scalar ones (edges, channel tails) alike. */
Test(pool_parity, nan_propagates_on_every_path)
{
    pdnn_device *devs[8];
    int ndev;
    pdnn_context *ctx = th_accel_context(devs, &ndev);
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    const pool_case shapes[] = {
        {2, 3, 9, 40, PDNN_POOL_MAX, 3, 3, 1, 1, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {1, 2, 12, 64, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
        {2, 19, 7, 9, PDNN_POOL_MAX, 2, 2, 2, 2, 0, 0, 0, 0, 0, PDNN_NHWC, PDNN_NHWC},
        {1, 16, 11, 11, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 1, PDNN_NHWC, PDNN_NCHW},
        {1, 27, 9, 9, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NHWC, PDNN_NHWC},
        {2, 3, 7, 11, PDNN_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 0, PDNN_NCHW, PDNN_NCHW},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int m = 0; m < 3; m++) {
            pool_case k = shapes[i];
            k.mode = (pdnn_pool_mode)m;
            int64_t xn = k.n * k.c * k.h * k.w;
            float *x = malloc(sizeof(float) * (size_t)xn);
            th_fill(x, xn, (uint32_t)(77 + i));
            for (int64_t j = 5; j < xn; j += 97) /* sparse NaNs: most windows stay finite */
                x[j] = NAN;
            pool_case ref = k;
            ref.xl = ref.yl = PDNN_NCHW;
            int64_t od[4];
            float *want = run_pool(host, &ref, x, od);
            int64_t yn = od[0] * od[1] * od[2] * od[3], nans = 0;
            for (int64_t j = 0; j < yn; j++)
                nans += isnan(want[j]) != 0;
            cr_assert(nans > 0 && nans < yn, "the case must mix NaN and finite outputs (%lld of %lld)",
                      (long long)nans, (long long)yn);
            for (int d = 0; d < ndev; d++) {
                int64_t od2[4];
                float *got = run_pool(devs[d], &k, x, od2);
                for (int64_t j = 0; j < yn; j++) {
                    int ok = isnan(want[j]) ? isnan(got[j]) != 0
                                            : fabsf(got[j] - want[j]) <= 1e-6f * (float)(k.wh * k.ww) + 1e-6f * fabsf(want[j]);
                    if (!ok)
                        cr_assert_fail("shape %zu %s %s: element %lld is %g, expected %g", i, mode_name(k.mode),
                                       pdnn_layout_name(k.xl), (long long)j, (double)got[j], (double)want[j]);
                }
                free(got);
            }
            free(want);
            free(x);
        }
    }
    pdnn_context_destroy(ctx);
}
