/* pool2d white-box checks: the host reference against hand-computed
 * values. Parity of every pooling algorithm against the host reference over
 * modes, windows, strides, paddings, ceil mode and both layouts is the
 * op-parity harness's (tests/parity.c). */
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





