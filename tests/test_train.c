/* The training ops' public API (relu backward, softmax cross-entropy,
 * optimizers): hand-computed values on every device that has the op (the
 * parity harness covers the shape grid), and bad input refused with a
 * message naming what was wrong. */
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

/* CUDA has no kernel for the fused cross-entropy and Adam (neither cuDNN
 * nor cuBLAS expresses them): there they are refused, and soft placement
 * moves them. True when st is that refusal on a CUDA device. */
static int cuda_gap(pdnn_device *dev, pdnn_status st)
{
    pdnn_device_info info;
    cr_assert_eq(pdnn_device_get_info(dev, &info), PDNN_SUCCESS);
    if (strcmp(info.backend, "cuda") != 0 || st != PDNN_ERR_UNSUPPORTED)
        return 0;
    cr_assert(strstr(pdnn_last_error(), "has no") || strstr(pdnn_last_error(), "no algorithm"), "%s",
              pdnn_last_error());
    return 1;
}

static pdnn_tensor *labels_on(pdnn_device *dev, const int32_t *v, int64_t n)
{
    pdnn_tensor_desc d = th_desc(PDNN_LAYOUT_X, n, 1, 1, 1);
    d.dtype = PDNN_INT32;
    pdnn_tensor *t = NULL;
    cr_assert_eq(pdnn_tensor_create(dev, &d, &t), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_write(t, v, (size_t)n * sizeof *v), PDNN_SUCCESS, "%s", pdnn_last_error());
    return t;
}

/* Values at exactly 0 and NaN pass no gradient; dx may be dy. */
Test(train, relu_backward_by_hand_on_every_device)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[8];
    const int n = n_devices(ctx, devs);
    const float y[6] = {1.5f, 0.0f, -0.0f, -2.0f, NAN, 3e-38f}, dy[6] = {2, 3, 4, 5, 6, 7};
    const float want[6] = {2, 0, 0, 0, 0, 7};
    for (int i = 0; i < n; i++) {
        const pdnn_tensor_desc d = th_desc(PDNN_NHWC, 1, 3, 2, 1);
        pdnn_tensor *ty = th_upload(devs[i], &d, y), *tdy = th_upload(devs[i], &d, dy);
        pdnn_tensor *tdx = th_upload(devs[i], &d, NULL);
        cr_assert_eq(pdnn_relu_backward(ty, tdy, tdx), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *gx = th_download(tdx);
        for (int j = 0; j < 6; j++)
            cr_assert_eq(gx[j], want[j], "device %d dx[%d] = %g, want %g", i, j, (double)gx[j], (double)want[j]);
        free(gx);
        cr_assert_eq(pdnn_relu_backward(ty, tdy, tdy), PDNN_SUCCESS, "in place: %s", pdnn_last_error());
        gx = th_download(tdy);
        for (int j = 0; j < 6; j++)
            cr_assert_eq(gx[j], want[j], "device %d in place dx[%d] = %g", i, j, (double)gx[j]);
        free(gx);
        cr_assert_eq(pdnn_relu_backward(ty, tdy, ty), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(pdnn_last_error(), "dx and y"), "%s", pdnn_last_error());
        pdnn_tensor_release(ty);
        pdnn_tensor_release(tdy);
        pdnn_tensor_release(tdx);
    }
    pdnn_context_destroy(ctx);
}

/* Two rows of 3 classes; the second row's logits are huge (1e4 apart),
 * where a naive exp overflows. */
Test(train, softmax_cross_entropy_by_hand_on_every_device)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[8];
    const int n = n_devices(ctx, devs);
    const float x[6] = {1, 2, 3, 1e4f, 0, -1e4f};
    const int32_t lab[2] = {0, 1};
    /* Row 0: lse = 3 + log(1 + e^-1 + e^-2); loss0 = lse - 1. Row 1: loss1 = 1e4. */
    const double lse0 = 3.0 + log(1.0 + exp(-1.0) + exp(-2.0));
    const double want_loss = ((lse0 - 1.0) + 1e4) / 2.0;
    double want_dx[6];
    for (int j = 0; j < 3; j++)
        want_dx[j] = (exp((double)x[j] - lse0) - (j == 0)) / 2.0;
    want_dx[3] = 0.5, want_dx[4] = -0.5, want_dx[5] = 0.0;
    for (int i = 0; i < n; i++) {
        const pdnn_tensor_desc ld = th_desc(PDNN_NCHW, 2, 3, 1, 1), od = th_desc(PDNN_LAYOUT_X, 1, 1, 1, 1);
        pdnn_tensor *tx = th_upload(devs[i], &ld, x), *tl = labels_on(devs[i], lab, 2);
        pdnn_tensor *tloss = th_upload(devs[i], &od, NULL), *tdx = th_upload(devs[i], &ld, NULL);
        const pdnn_status st = pdnn_softmax_cross_entropy(tx, tl, tloss, tdx);
        if (cuda_gap(devs[i], st)) {
            pdnn_tensor *ts[] = {tx, tl, tloss, tdx};
            for (int j = 0; j < 4; j++)
                pdnn_tensor_release(ts[j]);
            continue;
        }
        cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
        float *loss = th_download(tloss), *gx = th_download(tdx);
        cr_assert(fabs(loss[0] - want_loss) <= 1e-6 * want_loss, "device %d loss %g, want %g", i, (double)loss[0],
                  want_loss);
        for (int j = 0; j < 6; j++)
            cr_assert(fabs(gx[j] - want_dx[j]) < 1e-6, "device %d dlogits[%d] = %g, want %g", i, j, (double)gx[j],
                      want_dx[j]);
        free(loss);
        free(gx);
        /* Without dlogits: the loss alone. */
        cr_assert_eq(pdnn_softmax_cross_entropy(tx, tl, tloss, NULL), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor_release(tx);
        pdnn_tensor_release(tl);
        pdnn_tensor_release(tloss);
        pdnn_tensor_release(tdx);
    }
    pdnn_context_destroy(ctx);
}

Test(train, softmax_cross_entropy_label_out_of_range_names_row_and_value)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[8];
    const int n = n_devices(ctx, devs);
    const float x[6] = {1, 2, 3, 4, 5, 6};
    const int32_t cases[][3] = {{0, 2, 3}, {-1, 0, 0}, {1, 7, -5}};
    const char *want[] = {"labels[1] is 2", "labels[0] is -1", "labels[1] is 7"};
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            const pdnn_tensor_desc ld = th_desc(PDNN_NHWC, 3, 2, 1, 1), od = th_desc(PDNN_LAYOUT_X, 1, 1, 1, 1);
            pdnn_tensor *tx = th_upload(devs[i], &ld, x), *tl = labels_on(devs[i], cases[c], 3);
            pdnn_tensor *tloss = th_upload(devs[i], &od, NULL), *tdx = th_upload(devs[i], &ld, NULL);
            const pdnn_status st = pdnn_softmax_cross_entropy(tx, tl, tloss, tdx);
            if (!cuda_gap(devs[i], st)) {
                cr_assert_eq(st, PDNN_ERR_INVALID_ARGUMENT, "device %d case %d", i, c);
                cr_assert(strstr(pdnn_last_error(), want[c]), "device %d: %s", i, pdnn_last_error());
            }
            pdnn_tensor_release(tx);
            pdnn_tensor_release(tl);
            pdnn_tensor_release(tloss);
            pdnn_tensor_release(tdx);
        }
    pdnn_context_destroy(ctx);
}

Test(train, softmax_cross_entropy_refuses_bad_descriptors)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_get(ctx, 0, &dev), PDNN_SUCCESS);
    const int32_t lab[2] = {0, 0};
    const pdnn_tensor_desc ld = th_desc(PDNN_NCHW, 2, 3, 1, 1), od = th_desc(PDNN_LAYOUT_X, 1, 1, 1, 1);
    const pdnn_tensor_desc bad = th_desc(PDNN_NCHW, 2, 3, 2, 1), fl = th_desc(PDNN_LAYOUT_X, 2, 1, 1, 1);
    pdnn_tensor *tx = th_upload(dev, &ld, NULL), *tl = labels_on(dev, lab, 2), *tloss = th_upload(dev, &od, NULL);
    pdnn_tensor *tbad = th_upload(dev, &bad, NULL), *tfl = th_upload(dev, &fl, NULL);
    cr_assert_eq(pdnn_softmax_cross_entropy(tbad, tl, tloss, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "must be a matrix"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax_cross_entropy(tx, tfl, tloss, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "labels") && strstr(pdnn_last_error(), "int32"), "%s", pdnn_last_error());
    /* int32 where float32 is wanted. */
    cr_assert_eq(pdnn_softmax_cross_entropy(tx, tl, tl, NULL), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "loss is not float32"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax_cross_entropy(tx, tl, tloss, tx), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "dlogits and logits"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax_cross_entropy(tx, NULL, tloss, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "labels is NULL"), "%s", pdnn_last_error());
    pdnn_tensor *ts[] = {tx, tl, tloss, tbad, tfl};
    for (int j = 0; j < 5; j++)
        pdnn_tensor_release(ts[j]);
    pdnn_context_destroy(ctx);
}

/* Two SGD steps with momentum 0.5 and weight decay 0.1, and two Adam
 * steps, against the formulas in double. */
Test(train, optimizer_steps_by_hand_on_every_device)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[8];
    const int n = n_devices(ctx, devs);
    const float w0[3] = {1, -2, 0.5f}, g[3] = {0.25f, 1, -3};
    for (int i = 0; i < n; i++)
        for (int kind = 0; kind < 2; kind++) {
            pdnn_optimizer_params p;
            pdnn_optimizer_params_init(&p, (pdnn_optimizer_kind)kind);
            p.weight_decay = 0.1f;
            if (kind == PDNN_OPTIMIZER_SGD)
                p.momentum = 0.5f;
            const pdnn_tensor_desc d = th_desc(PDNN_LAYOUT_X, 3, 1, 1, 1);
            const float zero[3] = {0, 0, 0};
            pdnn_tensor *tw = th_upload(devs[i], &d, w0), *tg = th_upload(devs[i], &d, g);
            pdnn_tensor *s1 = th_upload(devs[i], &d, zero), *s2 = th_upload(devs[i], &d, zero);
            double w[3], m[3] = {0}, v[3] = {0};
            for (int j = 0; j < 3; j++)
                w[j] = w0[j];
            int gap = 0;
            for (int step = 1; step <= 2 && !gap; step++) {
                const pdnn_status st = pdnn_optimizer_update(&p, step, tw, tg, s1, s2);
                if ((gap = cuda_gap(devs[i], st)) != 0)
                    break;
                cr_assert_eq(st, PDNN_SUCCESS, "%s", pdnn_last_error());
                for (int j = 0; j < 3; j++) {
                    const double d2 = g[j] + 0.1 * w[j];
                    if (kind == PDNN_OPTIMIZER_SGD) {
                        m[j] = 0.5 * m[j] + d2;
                        w[j] -= 0.01 * m[j];
                    } else {
                        m[j] = 0.9 * m[j] + 0.1 * d2;
                        v[j] = 0.999 * v[j] + 0.001 * d2 * d2;
                        w[j] -= 0.001 * (m[j] / (1 - pow(0.9, step))) / (sqrt(v[j] / (1 - pow(0.999, step))) + 1e-8);
                    }
                }
            }
            float *got = th_download(tw);
            for (int j = 0; j < 3 && !gap; j++)
                cr_assert(fabs(got[j] - w[j]) < 1e-6, "device %d kind %d w[%d] = %.9g, want %.9g", i, kind, j,
                          (double)got[j], w[j]);
            free(got);
            pdnn_tensor_release(tw);
            pdnn_tensor_release(tg);
            pdnn_tensor_release(s1);
            pdnn_tensor_release(s2);
        }
    pdnn_context_destroy(ctx);
}

Test(train, optimizer_refuses_bad_parameters_and_missing_slots)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_get(ctx, 0, &dev), PDNN_SUCCESS);
    const pdnn_tensor_desc d = th_desc(PDNN_LAYOUT_X, 3, 1, 1, 1), d4 = th_desc(PDNN_LAYOUT_X, 4, 1, 1, 1);
    pdnn_tensor *w = th_upload(dev, &d, NULL), *g = th_upload(dev, &d, NULL), *s = th_upload(dev, &d, NULL);
    pdnn_tensor *g4 = th_upload(dev, &d4, NULL);
    pdnn_optimizer_params p;
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_SGD);
    cr_assert_float_eq(p.learning_rate, 0.01f, 1e-9);
    p.momentum = 0.9f;
    cr_assert_eq(pdnn_optimizer_update(&p, 1, w, g, NULL, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "slot1 is NULL"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_optimizer_update(&p, 0, w, g, s, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "step is 0"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_optimizer_update(&p, 1, w, g4, s, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "g is"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_optimizer_update(&p, 1, w, g, g, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "same memory"), "%s", pdnn_last_error());
    p.learning_rate = NAN;
    cr_assert_eq(pdnn_optimizer_update(&p, 1, w, g, s, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "learning_rate is nan"), "%s", pdnn_last_error());
    pdnn_optimizer_params_init(&p, PDNN_OPTIMIZER_ADAM);
    cr_assert_float_eq(p.learning_rate, 0.001f, 1e-9);
    cr_assert_eq(pdnn_optimizer_update(&p, 1, w, g, s, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "slot2 is NULL"), "%s", pdnn_last_error());
    p.beta2 = 1.0f;
    cr_assert_eq(pdnn_optimizer_update(&p, 1, w, g, s, g4), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "beta2 1"), "%s", pdnn_last_error());
    p.kind = (pdnn_optimizer_kind)7;
    cr_assert_eq(pdnn_optimizer_update(&p, 1, w, g, s, g4), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "kind 7"), "%s", pdnn_last_error());
    pdnn_tensor *ts[] = {w, g, s, g4};
    for (int j = 0; j < 4; j++)
        pdnn_tensor_release(ts[j]);
    pdnn_context_destroy(ctx);
}
