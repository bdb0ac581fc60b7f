/* Batch normalization's public API: a small case worked by hand on every
 * device in both layouts (the parity harness's batch_norm set covers the
 * shape grid), and bad input refused with a message naming what was wrong. */
#include "core/context.h"
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int n_devices(pdnn_context *ctx, pdnn_device **devs)
{
    int n = 0;
    for (int i = 0; i < pdnn_device_count(ctx) && n < 8; i++)
        cr_assert_eq(pdnn_device_get(ctx, i, &devs[n++]), PDNN_SUCCESS);
    return n;
}

/* x {N=2, C=2, H=1, W=2} in logical NCHW order: channel 0 holds 1 3 5 7
 * (mean 4, biased variance 5, unbiased 20/3), channel 1 holds 0 4 0 4
 * (mean 2, variance 4, unbiased 16/3). */
static const float X[8] = {1, 3, 0, 4, 5, 7, 0, 4};
static const float GAMMA[2] = {2, -1}, BETA[2] = {0.5f, 1};
#define EPS 1e-5

static pdnn_tensor *vec(pdnn_device *dev, const float *v)
{
    const pdnn_tensor_desc d = th_desc(PDNN_LAYOUT_X, 2, 1, 1, 1);
    return th_upload(dev, &d, v);
}

static pdnn_tensor *act(pdnn_device *dev, pdnn_layout l, const float *logical)
{
    const pdnn_tensor_desc d = th_desc(l, 2, 2, 1, 2);
    float m[8];
    if (logical)
        th_to_layout(logical, m, l, d.dims);
    return th_upload(dev, &d, logical ? m : NULL);
}

static void download_logical(const pdnn_tensor *t, pdnn_layout l, float out[8])
{
    float *m = th_download(t);
    const pdnn_tensor_desc d = th_desc(l, 2, 2, 1, 2);
    th_from_layout(m, out, l, d.dims);
    free(m);
}

Test(bn, training_forward_and_backward_by_hand_on_every_device)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[8];
    const int n = n_devices(ctx, devs);
    const double mean[2] = {4, 2}, inv[2] = {1 / sqrt(5 + EPS), 1 / sqrt(4 + EPS)};
    /* running stats start at 0 and 1; momentum 0.1 */
    const double rm[2] = {0.4, 0.2}, rv[2] = {0.9 + 0.1 * 20 / 3.0, 0.9 + 0.1 * 16 / 3.0};
    const float dy[8] = {1, -2, 0.5f, 0, 3, 1, 0, -1};
    for (int i = 0; i < n; i++)
        for (int l = 0; l < 2; l++) {
            const pdnn_layout lay = l ? PDNN_NHWC : PDNN_NCHW;
            const float zero[2] = {0, 0}, one[2] = {1, 1};
            pdnn_tensor *x = act(devs[i], lay, X), *y = act(devs[i], lay, NULL);
            pdnn_tensor *g = vec(devs[i], GAMMA), *b = vec(devs[i], BETA);
            pdnn_tensor *trm = vec(devs[i], zero), *trv = vec(devs[i], one);
            pdnn_tensor *sm = vec(devs[i], NULL), *si = vec(devs[i], NULL);
            pdnn_batch_norm_params p;
            pdnn_batch_norm_params_init(&p);
            cr_assert_eq(p.training, 1);
            cr_assert_float_eq(p.epsilon, 1e-5f, 0);
            cr_assert_float_eq(p.momentum, 0.1f, 0);
            cr_assert_eq(pdnn_batch_norm_forward(&p, x, g, b, trm, trv, sm, si, y), PDNN_SUCCESS, "%s",
                         pdnn_last_error());
            float got[8];
            download_logical(y, lay, got);
            for (int e = 0; e < 8; e++) {
                const int c = (e / 2) % 2;
                const double want = GAMMA[c] * (X[e] - mean[c]) * inv[c] + BETA[c];
                cr_assert_float_eq(got[e], want, 1e-5, "device %d %s y[%d] = %g, want %g", i,
                                   pdnn_layout_name(lay), e, (double)got[e], want);
            }
            float *gsm = th_download(sm), *gsi = th_download(si), *grm = th_download(trm), *grv = th_download(trv);
            for (int c = 0; c < 2; c++) {
                cr_assert_float_eq(gsm[c], mean[c], 1e-6, "device %d saved_mean[%d] = %g", i, c, (double)gsm[c]);
                cr_assert_float_eq(gsi[c], inv[c], 1e-6, "device %d saved_inv_std[%d] = %g", i, c, (double)gsi[c]);
                cr_assert_float_eq(grm[c], rm[c], 1e-6, "device %d running_mean[%d] = %g", i, c, (double)grm[c]);
                cr_assert_float_eq(grv[c], rv[c], 1e-6, "device %d running_var[%d] = %g", i, c, (double)grv[c]);
            }
            free(gsm);
            free(gsi);
            free(grm);
            free(grv);

            /* backward: dbeta = sum dy, dgamma = sum dy * xhat,
             * dx = gamma * inv / 4 * (4 dy - dbeta - xhat dgamma) */
            pdnn_tensor *tdy = act(devs[i], lay, dy), *dx = act(devs[i], lay, NULL);
            pdnn_tensor *dg = vec(devs[i], NULL), *db = vec(devs[i], NULL);
            cr_assert_eq(pdnn_batch_norm_backward(&p, x, tdy, g, sm, si, dx, dg, db), PDNN_SUCCESS, "%s",
                         pdnn_last_error());
            double sdb[2] = {0, 0}, sdg[2] = {0, 0};
            for (int e = 0; e < 8; e++) {
                const int c = (e / 2) % 2;
                sdb[c] += dy[e];
                sdg[c] += dy[e] * (X[e] - mean[c]) * inv[c];
            }
            /* channel 0: dbeta 1 - 2 + 3 + 1 = 3; dgamma (-3 + 2 + 3 + 3) inv0 = 5 inv0 */
            cr_assert_float_eq(sdb[0], 3.0, 1e-12);
            cr_assert_float_eq(sdg[0], 5.0 * inv[0], 1e-12);
            float gdx[8];
            download_logical(dx, lay, gdx);
            float *gdg = th_download(dg), *gdb = th_download(db);
            for (int c = 0; c < 2; c++) {
                cr_assert_float_eq(gdb[c], sdb[c], 1e-5, "device %d dbeta[%d] = %g", i, c, (double)gdb[c]);
                cr_assert_float_eq(gdg[c], sdg[c], 1e-5, "device %d dgamma[%d] = %g", i, c, (double)gdg[c]);
            }
            for (int e = 0; e < 8; e++) {
                const int c = (e / 2) % 2;
                const double xh = (X[e] - mean[c]) * inv[c];
                const double want = GAMMA[c] * inv[c] / 4 * (4 * dy[e] - sdb[c] - xh * sdg[c]);
                cr_assert_float_eq(gdx[e], want, 1e-5, "device %d %s dx[%d] = %g, want %g", i,
                                   pdnn_layout_name(lay), e, (double)gdx[e], want);
            }
            free(gdg);
            free(gdb);
            /* only dgamma: dx and dbeta not computed */
            cr_assert_eq(pdnn_batch_norm_backward(&p, x, tdy, g, sm, si, NULL, dg, NULL), PDNN_SUCCESS, "%s",
                         pdnn_last_error());
            gdg = th_download(dg);
            cr_assert_float_eq(gdg[0], sdg[0], 1e-5);
            free(gdg);
            pdnn_tensor *ts[] = {x, y, g, b, trm, trv, sm, si, tdy, dx, dg, db};
            for (int j = 0; j < 12; j++)
                pdnn_tensor_release(ts[j]);
        }
    pdnn_context_destroy(ctx);
}

/* Inference normalizes with the running statistics and leaves them be. */
Test(bn, inference_uses_running_statistics_on_every_device)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[8];
    const int n = n_devices(ctx, devs);
    const float rm[2] = {1, 2}, rv[2] = {3, 0.25f};
    for (int i = 0; i < n; i++)
        for (int l = 0; l < 2; l++) {
            const pdnn_layout lay = l ? PDNN_NHWC : PDNN_NCHW;
            pdnn_tensor *x = act(devs[i], lay, X), *y = act(devs[i], lay, NULL);
            pdnn_tensor *g = vec(devs[i], GAMMA), *b = vec(devs[i], BETA), *trm = vec(devs[i], rm),
                        *trv = vec(devs[i], rv);
            pdnn_batch_norm_params p;
            pdnn_batch_norm_params_init(&p);
            p.training = 0;
            cr_assert_eq(pdnn_batch_norm_forward(&p, x, g, b, trm, trv, NULL, NULL, y), PDNN_SUCCESS, "%s",
                         pdnn_last_error());
            float got[8];
            download_logical(y, lay, got);
            for (int e = 0; e < 8; e++) {
                const int c = (e / 2) % 2;
                const double want = GAMMA[c] * (X[e] - rm[c]) / sqrt(rv[c] + EPS) + BETA[c];
                cr_assert_float_eq(got[e], want, 1e-5, "device %d y[%d] = %g, want %g", i, e, (double)got[e], want);
            }
            float *grm = th_download(trm), *grv = th_download(trv);
            cr_assert(grm[0] == rm[0] && grm[1] == rm[1] && grv[0] == rv[0] && grv[1] == rv[1],
                      "inference changed the running statistics");
            free(grm);
            free(grv);
            pdnn_tensor *ts[] = {x, y, g, b, trm, trv};
            for (int j = 0; j < 6; j++)
                pdnn_tensor_release(ts[j]);
        }
    pdnn_context_destroy(ctx);
}

/* One value per channel (N = H = W = 1): zero variance, so y = beta and
 * the saved inverse std is 1/sqrt(eps); with running statistics it is
 * refused (their unbiased variance is undefined). */
Test(bn, one_value_per_channel_normalizes_to_beta)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[8];
    const int n = n_devices(ctx, devs);
    const float x[2] = {3, -7};
    for (int i = 0; i < n; i++) {
        const pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 2, 1, 1);
        pdnn_tensor *tx = th_upload(devs[i], &xd, x), *y = th_upload(devs[i], &xd, NULL);
        pdnn_tensor *g = vec(devs[i], GAMMA), *b = vec(devs[i], BETA), *sm = vec(devs[i], NULL),
                    *si = vec(devs[i], NULL), *rm = vec(devs[i], NULL), *rv = vec(devs[i], NULL);
        pdnn_batch_norm_params p;
        pdnn_batch_norm_params_init(&p);
        p.epsilon = 0.25f;
        cr_assert_eq(pdnn_batch_norm_forward(&p, tx, g, b, NULL, NULL, sm, si, y), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        float *gy = th_download(y), *gsi = th_download(si);
        for (int c = 0; c < 2; c++) {
            cr_assert_float_eq(gy[c], BETA[c], 1e-6, "device %d y[%d] = %g", i, c, (double)gy[c]);
            cr_assert_float_eq(gsi[c], 2.0f, 1e-6, "device %d saved_inv_std[%d] = %g", i, c, (double)gsi[c]);
        }
        free(gy);
        free(gsi);
        cr_assert_eq(pdnn_batch_norm_forward(&p, tx, g, b, rm, rv, sm, si, y), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(pdnn_last_error(), "one value per channel") != NULL, "%s", pdnn_last_error());
        pdnn_tensor *ts[] = {tx, y, g, b, sm, si, rm, rv};
        for (int j = 0; j < 8; j++)
            pdnn_tensor_release(ts[j]);
    }
    pdnn_context_destroy(ctx);
}

static void expect_error(pdnn_status st, const char *needle)
{
    cr_assert_neq(st, PDNN_SUCCESS, "accepted; expected an error mentioning '%s'", needle);
    cr_assert(strstr(pdnn_last_error(), needle) != NULL, "message '%s' lacks '%s'", pdnn_last_error(), needle);
}

Test(bn, bad_input_is_refused_with_a_clear_message)
{
    pdnn_context *ctx = th_context();
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &host), PDNN_SUCCESS);
    pdnn_tensor *x = act(host, PDNN_NCHW, X), *y = act(host, PDNN_NCHW, NULL), *g = vec(host, GAMMA),
                *b = vec(host, BETA), *rm = vec(host, NULL), *rv = vec(host, NULL), *sm = vec(host, NULL),
                *si = vec(host, NULL);
    const pdnn_tensor_desc d3 = th_desc(PDNN_LAYOUT_X, 3, 1, 1, 1);
    pdnn_tensor *g3 = th_upload(host, &d3, NULL);
    pdnn_batch_norm_params p;
    pdnn_batch_norm_params_init(&p);

    expect_error(pdnn_batch_norm_forward(&p, NULL, g, b, rm, rv, sm, si, y), "x is NULL");
    expect_error(pdnn_batch_norm_forward(NULL, x, g, b, rm, rv, sm, si, y), "params is NULL");
    expect_error(pdnn_batch_norm_forward(&p, x, g3, b, rm, rv, sm, si, y), "gamma");
    cr_assert(strstr(pdnn_last_error(), "2 channels") != NULL, "%s", pdnn_last_error());
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, g3, sm, si, y), "running_var");
    expect_error(pdnn_batch_norm_backward(&p, x, y, g3, sm, si, y, NULL, NULL), "gamma");
    /* the output over the input, as the same tensor or a second one over its bytes */
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, si, x), "same memory");
    pdnn_tensor *alias = NULL;
    cr_assert_eq(pdnn__tensor_wrap(host, &x->desc, x->block.buf, NULL, NULL, &alias), PDNN_SUCCESS);
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, si, alias), "y and x are the same memory");
    expect_error(pdnn_batch_norm_backward(&p, x, y, g, sm, si, alias, NULL, NULL), "dx and x");
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, sm, y), "saved_mean");
    /* parameters */
    p.epsilon = 0.0f;
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, si, y), "epsilon is 0");
    p.epsilon = -1e-5f;
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, si, y), "epsilon");
    p.epsilon = 1e-5f;
    p.momentum = 1.5f;
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, si, y), "momentum is 1.5");
    p.momentum = -0.1f;
    expect_error(pdnn_batch_norm_backward(&p, x, y, g, sm, si, NULL, rm, NULL), "momentum");
    p.momentum = NAN;
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, si, y), "momentum");
    p.momentum = 0.1f;
    p.training = 0;
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, NULL, rv, NULL, NULL, y), "running_mean");
    expect_error(pdnn_batch_norm_backward(&p, x, y, g, sm, si, NULL, rm, NULL), "training is 0");
    p.training = 1;
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, NULL, sm, si, y), "give both");
    expect_error(pdnn_batch_norm_backward(&p, x, y, g, sm, si, NULL, NULL, NULL), "all NULL");
    /* another layout for y than x's */
    pdnn_tensor *ynhwc = act(host, PDNN_NHWC, NULL);
    expect_error(pdnn_batch_norm_forward(&p, x, g, b, rm, rv, sm, si, ynhwc), "x's dims and layout");
    /* a non-float32 input */
    pdnn_tensor_desc hd = x->desc;
    hd.dtype = PDNN_FLOAT16;
    pdnn_tensor *xh = NULL;
    if (pdnn_tensor_create(host, &hd, &xh) == PDNN_SUCCESS) {
        expect_error(pdnn_batch_norm_forward(&p, xh, g, b, rm, rv, sm, si, y), "float32");
        pdnn_tensor_release(xh);
    }
    pdnn_tensor *ts[] = {x, y, g, b, rm, rv, sm, si, g3, alias, ynhwc};
    for (int j = 0; j < 11; j++)
        pdnn_tensor_release(ts[j]);
    pdnn_context_destroy(ctx);
}
