/* add, add_n, bias_add, relu, softmax, matmul, reshape, concat, binary and the
 * activations (validation; their values are parity cases) on every device
 * against loops written here, both layouts, odd sizes, bad input. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Every device of the context, host included. */
static int all_devices(pdnn_context *ctx, pdnn_device **out)
{
    int n = pdnn_device_count(ctx);
    for (int i = 0; i < n; i++)
        cr_assert_eq(pdnn_device_get(ctx, i, &out[i]), PDNN_SUCCESS);
    return n;
}

static void expect_close(const float *got, const double *want, int64_t n, double tol, const char *what,
                         const char *dev)
{
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]);
        cr_assert(err <= tol * (1.0 + fabs(want[i])), "%s on %s: element %lld is %.7g, want %.7g", what, dev,
                  (long long)i, (double)got[i], want[i]);
    }
}

static const char *dev_name(pdnn_device *d)
{
    static _Thread_local pdnn_device_info info;
    pdnn_device_get_info(d, &info);
    return info.name;
}

Test(ops, elementwise_on_every_device_both_layouts)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[16];
    int nd = all_devices(ctx, devs);
    const int64_t shapes[][4] = {{1, 1, 1, 1}, {2, 3, 5, 7}, {17, 4, 1, 1}, {1, 64, 3, 3}, {3, 5, 1, 9}};
    for (int di = 0; di < nd; di++) {
        for (int si = 0; si < 5; si++) {
            for (int li = 0; li < 2; li++) {
                pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
                const int64_t *d = shapes[si];
                int64_t n = d[0] * d[1] * d[2] * d[3];
                pdnn_tensor_desc desc = th_desc(l, d[0], d[1], d[2], d[3]);
                pdnn_tensor_desc bdesc = th_desc(PDNN_LAYOUT_X, d[1], 1, 1, 1);
                float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
                float *c = malloc(sizeof(float) * (size_t)n), bias[64];
                double *want = malloc(sizeof(double) * (size_t)n);
                th_fill(a, n, (uint32_t)(si * 7 + li));
                th_fill(b, n, (uint32_t)(si * 7 + li + 100));
                th_fill(c, n, (uint32_t)(si * 7 + li + 200));
                th_fill(bias, d[1], (uint32_t)si);
                if (si == 1)
                    a[0] = NAN; /* NaN must survive add and relu on one shape */
                pdnn_tensor *ta = th_upload(devs[di], &desc, a), *tb = th_upload(devs[di], &desc, b);
                pdnn_tensor *tc = th_upload(devs[di], &desc, c), *tbias = th_upload(devs[di], &bdesc, bias);
                pdnn_tensor *y = th_upload(devs[di], &desc, NULL);

                cr_assert_eq(pdnn_add(ta, tb, y), PDNN_SUCCESS, "%s", pdnn_last_error());
                float *got = th_download(y);
                for (int64_t i = 0; i < n; i++)
                    want[i] = (double)a[i] + b[i];
                if (si == 1)
                    cr_assert(isnan(got[0]), "add keeps NaN");
                expect_close(got + (si == 1), want + (si == 1), n - (si == 1), 1e-6, "add", dev_name(devs[di]));
                free(got);

                const pdnn_tensor *three[] = {ta, tb, tc};
                cr_assert_eq(pdnn_add_n(three, 3, y), PDNN_SUCCESS, "%s", pdnn_last_error());
                got = th_download(y);
                for (int64_t i = 0; i < n; i++)
                    want[i] = (double)a[i] + b[i] + c[i];
                expect_close(got + (si == 1), want + (si == 1), n - (si == 1), 1e-6, "add_n", dev_name(devs[di]));
                free(got);

                cr_assert_eq(pdnn_bias_add(tb, tbias, y), PDNN_SUCCESS, "%s", pdnn_last_error());
                got = th_download(y);
                for (int64_t i = 0; i < n; i++) {
                    /* channel of memory element i, from the layout's definition */
                    int64_t ch = l == PDNN_NHWC ? i % d[1] : (i / (d[2] * d[3])) % d[1];
                    want[i] = (double)b[i] + bias[ch];
                }
                expect_close(got, want, n, 1e-6, "bias_add", dev_name(devs[di]));
                free(got);

                cr_assert_eq(pdnn_relu(ta, y), PDNN_SUCCESS, "%s", pdnn_last_error());
                got = th_download(y);
                for (int64_t i = 0; i < n; i++)
                    want[i] = a[i] > 0 ? a[i] : 0;
                if (si == 1)
                    cr_assert(isnan(got[0]), "relu keeps NaN on %s", dev_name(devs[di]));
                expect_close(got + (si == 1), want + (si == 1), n - (si == 1), 0, "relu", dev_name(devs[di]));
                free(got);

                cr_assert_eq(pdnn_softmax(tb, y), PDNN_SUCCESS, "%s", pdnn_last_error());
                got = th_download(y);
                for (int64_t nn = 0; nn < d[0]; nn++)
                    for (int64_t hw = 0; hw < d[2] * d[3]; hw++) {
                        int64_t cs = l == PDNN_NHWC ? 1 : d[2] * d[3];
                        int64_t base = l == PDNN_NHWC ? (nn * d[2] * d[3] + hw) * d[1] : nn * d[1] * d[2] * d[3] + hw;
                        double mx = -INFINITY, sum = 0;
                        for (int64_t k = 0; k < d[1]; k++)
                            mx = fmax(mx, b[base + k * cs]);
                        for (int64_t k = 0; k < d[1]; k++)
                            sum += exp((double)b[base + k * cs] - mx);
                        for (int64_t k = 0; k < d[1]; k++)
                            want[base + k * cs] = exp((double)b[base + k * cs] - mx) / sum;
                    }
                expect_close(got, want, n, 1e-5, "softmax", dev_name(devs[di]));
                free(got);

                pdnn_tensor_release(ta);
                pdnn_tensor_release(tb);
                pdnn_tensor_release(tc);
                pdnn_tensor_release(tbias);
                pdnn_tensor_release(y);
                free(a);
                free(b);
                free(c);
                free(want);
            }
        }
    }
    pdnn_context_destroy(ctx);
}

Test(ops, matmul_on_every_device_all_transposes)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[16];
    int nd = all_devices(ctx, devs);
    const int64_t sizes[][3] = {{1, 1, 1}, {17, 5, 33}, {2, 2, 3}, {64, 40, 70}};
    for (int di = 0; di < nd; di++) {
        for (int si = 0; si < 4; si++) {
            for (int t = 0; t < 4; t++) {
                int ta = t & 1, tb = t >> 1;
                int64_t m = sizes[si][0], n = sizes[si][1], k = sizes[si][2];
                pdnn_tensor_desc da = ta ? th_desc(PDNN_NCHW, k, m, 1, 1) : th_desc(PDNN_NCHW, m, k, 1, 1);
                pdnn_tensor_desc db = tb ? th_desc(PDNN_NHWC, n, k, 1, 1) : th_desc(PDNN_NHWC, k, n, 1, 1);
                pdnn_tensor_desc dc = th_desc(PDNN_NCHW, m, n, 1, 1);
                float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
                double *want = calloc((size_t)(m * n), sizeof(double));
                th_fill(a, m * k, (uint32_t)(si + 10 * t));
                th_fill(b, k * n, (uint32_t)(si + 10 * t + 5));
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++)
                        for (int64_t p = 0; p < k; p++)
                            want[i * n + j] += (double)(ta ? a[p * m + i] : a[i * k + p]) *
                                               (tb ? b[j * k + p] : b[p * n + j]);
                pdnn_tensor *A = th_upload(devs[di], &da, a), *B = th_upload(devs[di], &db, b);
                pdnn_tensor *C = th_upload(devs[di], &dc, NULL);
                cr_assert_eq(pdnn_matmul(A, B, ta, tb, C), PDNN_SUCCESS, "%s", pdnn_last_error());
                float *got = th_download(C);
                expect_close(got, want, m * n, 1e-5, "matmul", dev_name(devs[di]));
                free(got);
                pdnn_tensor_release(A);
                pdnn_tensor_release(B);
                pdnn_tensor_release(C);
                free(a);
                free(b);
                free(want);
            }
        }
    }
    pdnn_context_destroy(ctx);
}

Test(ops, reshape_keeps_memory_order)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[16];
    int nd = all_devices(ctx, devs);
    for (int di = 0; di < nd; di++) {
        pdnn_tensor_desc dx = th_desc(PDNN_NHWC, 2, 3, 4, 5), dy = th_desc(PDNN_NCHW, 2, 60, 1, 1);
        float v[120];
        th_fill(v, 120, 9);
        pdnn_tensor *x = th_upload(devs[di], &dx, v), *y = th_upload(devs[di], &dy, NULL);
        cr_assert_eq(pdnn_reshape(x, y), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *got = th_download(y);
        cr_assert_eq(memcmp(got, v, sizeof v), 0);
        free(got);
        pdnn_tensor_desc bad = th_desc(PDNN_NCHW, 2, 61, 1, 1);
        pdnn_tensor *z = th_upload(devs[di], &bad, NULL);
        cr_assert_eq(pdnn_reshape(x, z), PDNN_ERR_INVALID_ARGUMENT);
        cr_assert_not_null(strstr(pdnn_last_error(), "different numbers of elements"));
        pdnn_tensor_release(x);
        pdnn_tensor_release(y);
        pdnn_tensor_release(z);
    }
    pdnn_context_destroy(ctx);
}

Test(ops, bad_input_is_refused)
{
    pdnn_context *ctx = th_context();
    pdnn_device *h;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &h), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 2, 3, 1, 1), d2 = th_desc(PDNN_NHWC, 2, 3, 1, 1);
    pdnn_tensor_desc big = th_desc(PDNN_NCHW, 3, 3, 1, 1), bx = th_desc(PDNN_LAYOUT_X, 4, 1, 1, 1);
    pdnn_tensor *a = th_upload(h, &d, NULL), *b = th_upload(h, &d2, NULL), *c = th_upload(h, &big, NULL);
    pdnn_tensor *bias = th_upload(h, &bx, NULL), *y = th_upload(h, &d, NULL);
    cr_assert_eq(pdnn_add(a, NULL, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "b is NULL"));
    cr_assert_eq(pdnn_add(a, b, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "must match in dims and layout"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_add_n(NULL, 2, y), PDNN_ERR_INVALID_ARGUMENT);
    const pdnn_tensor *ins[] = {a, y};
    cr_assert_eq(pdnn_add_n(ins, 0, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_add_n(ins, 2, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "also the output"));
    cr_assert_eq(pdnn_bias_add(a, bias, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "length C = 3"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax(a, a), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_matmul(a, c, 0, 0, y), PDNN_SUCCESS, "2x3 by 3x3 is 2x3: %s", pdnn_last_error());
    cr_assert_eq(pdnn_matmul(a, c, 0, 0, c), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_tensor *y33 = th_upload(h, &d, NULL);
    cr_assert_eq(pdnn_matmul(a, a, 0, 0, y33), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "inner dimensions differ"), "%s", pdnn_last_error());
    pdnn_tensor_desc img = th_desc(PDNN_NCHW, 1, 2, 3, 3);
    pdnn_tensor *im = th_upload(h, &img, NULL);
    cr_assert_eq(pdnn_matmul(im, a, 0, 0, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "a matrix is {rows,cols,1,1}"), "%s", pdnn_last_error());
    pdnn_tensor_release(a);
    pdnn_tensor_release(b);
    pdnn_tensor_release(c);
    pdnn_tensor_release(bias);
    pdnn_tensor_release(y);
    pdnn_tensor_release(y33);
    pdnn_tensor_release(im);
    /* Tensors of two contexts: both devices are "/device:CPU:0", so the
     * message names the contexts (it read "a is on /device:CPU:0 but b is
     * on /device:CPU:0"). */
    pdnn_context *ctx2 = th_context();
    pdnn_device *h2;
    cr_assert_eq(pdnn_device_find(ctx2, "/cpu:0", &h2), PDNN_SUCCESS);
    pdnn_tensor *a1 = th_upload(h, &d, NULL), *b2 = th_upload(h2, &d, NULL), *y1 = th_upload(h, &d, NULL);
    char want[160];
    snprintf(want, sizeof want, "a is on /device:CPU:0 of context %p but b is on /device:CPU:0 of context %p",
             (void *)ctx, (void *)ctx2);
    cr_assert_eq(pdnn_add(a1, b2, y1), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), want), "%s", pdnn_last_error());
    pdnn_tensor_release(a1);
    pdnn_tensor_release(b2);
    pdnn_tensor_release(y1);
    pdnn_context_destroy(ctx2);
    pdnn_context_destroy(ctx);
}

/* The logical element (n, c, h, w) of a tensor of dims d in layout l. */
static int64_t at_logical(pdnn_layout l, const int64_t d[4], int64_t n, int64_t c, int64_t h, int64_t w)
{
    return l == PDNN_NHWC ? ((n * d[2] + h) * d[3] + w) * d[1] + c : ((n * d[1] + c) * d[2] + h) * d[3] + w;
}

Test(ops, concat_every_axis_both_layouts_every_device)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[16];
    int nd = all_devices(ctx, devs);
    /* Three inputs of 1, 3 and 2 along the axis (1x1 images, batch 1 and
     * 17, channels not a multiple of 4), and rows long enough for several
     * of OpenCL's 64-word copy blocks and a tail. */
    const int64_t base[][4] = {{2, 3, 5, 7}, {1, 1, 1, 1}, {17, 5, 1, 3}, {3, 4, 9, 31}};
    const int64_t parts[3] = {1, 3, 2};
    for (int di = 0; di < nd; di++)
        for (int bi = 0; bi < 4; bi++)
            for (int axis = 0; axis < 4; axis++)
                for (int li = 0; li < 2; li++) {
                    const pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
                    int64_t yd[4], xd[3][4], off = 0;
                    memcpy(yd, base[bi], sizeof yd);
                    yd[axis] = 6;
                    pdnn_tensor *xs[3];
                    float *xv[3];
                    for (int i = 0; i < 3; i++) {
                        memcpy(xd[i], base[bi], sizeof xd[i]);
                        xd[i][axis] = parts[i];
                        pdnn_tensor_desc d = th_desc(l, xd[i][0], xd[i][1], xd[i][2], xd[i][3]);
                        const int64_t n = pdnn_tensor_desc_elements(&d);
                        xv[i] = malloc(sizeof(float) * (size_t)n);
                        th_fill(xv[i], n, (uint32_t)(bi * 100 + axis * 10 + li * 3 + i));
                        xs[i] = th_upload(devs[di], &d, xv[i]);
                    }
                    pdnn_tensor_desc ydesc = th_desc(l, yd[0], yd[1], yd[2], yd[3]);
                    pdnn_tensor *y = th_upload(devs[di], &ydesc, NULL);
                    cr_assert_eq(pdnn_concat((const pdnn_tensor *const *)xs, 3, axis, y), PDNN_SUCCESS, "%s",
                                 pdnn_last_error());
                    float *got = th_download(y);
                    for (int i = 0; i < 3; i++) {
                        const int64_t *d = xd[i];
                        for (int64_t n = 0; n < d[0]; n++)
                            for (int64_t c = 0; c < d[1]; c++)
                                for (int64_t h = 0; h < d[2]; h++)
                                    for (int64_t w = 0; w < d[3]; w++) {
                                        int64_t p[4] = {n, c, h, w};
                                        p[axis] += off;
                                        const float want = xv[i][at_logical(l, d, n, c, h, w)];
                                        const float have = got[at_logical(l, yd, p[0], p[1], p[2], p[3])];
                                        cr_assert_eq(have, want, "%s %s axis %d input %d (%lld,%lld,%lld,%lld)",
                                                     dev_name(devs[di]), pdnn_layout_name(l), axis, i,
                                                     (long long)n, (long long)c, (long long)h, (long long)w);
                                    }
                        off += parts[i];
                        free(xv[i]);
                        pdnn_tensor_release(xs[i]);
                    }
                    free(got);
                    pdnn_tensor_release(y);
                }
    pdnn_context_destroy(ctx);
}

Test(ops, concat_and_activation_refuse_bad_input)
{
    pdnn_context *ctx = th_context();
    pdnn_device *h;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &h), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 2, 3, 4, 4), dn = th_desc(PDNN_NHWC, 2, 3, 4, 4);
    pdnn_tensor_desc dy = th_desc(PDNN_NCHW, 2, 6, 4, 4), dw = th_desc(PDNN_NCHW, 2, 6, 4, 5);
    pdnn_tensor *a = th_upload(h, &d, NULL), *b = th_upload(h, &dn, NULL), *y = th_upload(h, &dy, NULL);
    pdnn_tensor *w = th_upload(h, &dw, NULL);
    const pdnn_tensor *two[] = {a, a}, *mixed[] = {a, b}, *withnull[] = {a, NULL}, *self[] = {a, y};
    cr_assert_eq(pdnn_concat(NULL, 2, 1, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_concat(two, 0, 1, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_concat(two, 2, 4, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "axis 4"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_concat(withnull, 2, 1, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "xs[1] is NULL"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_concat(mixed, 2, 1, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "xs[1]"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_concat(two, 2, 1, w), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_tensor_desc d7 = th_desc(PDNN_NCHW, 2, 7, 4, 4);
    pdnn_tensor *y7 = th_upload(h, &d7, NULL);
    cr_assert_eq(pdnn_concat(two, 2, 1, y7), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "add up to 6 but y has 7"), "%s", pdnn_last_error());
    pdnn_tensor_release(y7);
    cr_assert_eq(pdnn_concat(self, 2, 1, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_concat(two, 2, 1, y), PDNN_SUCCESS, "%s", pdnn_last_error());

    cr_assert_eq(pdnn_transform(a, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "the dims must match"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_transform(a, a), PDNN_ERR_INVALID_ARGUMENT, "in place is refused");
    cr_assert_eq(pdnn_transform(NULL, b), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_transform(a, b), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_activation_forward(a, PDNN_ACTIVATION_CLIP, 1.0f, 0.0f, a), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "must not exceed"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_activation_forward(a, PDNN_ACTIVATION_CLIP, NAN, 0.0f, a), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_activation_forward(a, PDNN_ACTIVATION_LEAKY_RELU, INFINITY, 0.0f, a),
                 PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_activation_forward(a, (pdnn_activation)99, 0.0f, 0.0f, a), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "unknown mode 99"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_activation_forward(a, PDNN_ACTIVATION_SIGMOID, 0.0f, 0.0f, b), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_activation_forward(NULL, PDNN_ACTIVATION_SIGMOID, 0.0f, 0.0f, b), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_activation_forward(a, PDNN_ACTIVATION_CLIP, -INFINITY, INFINITY, a), PDNN_SUCCESS);
    cr_assert_eq(pdnn_activation_forward(a, PDNN_ACTIVATION_SIGMOID, 0.0f, 0.0f, a), PDNN_SUCCESS, "in place");
    pdnn_tensor_release(a);
    pdnn_tensor_release(b);
    pdnn_tensor_release(y);
    pdnn_tensor_release(w);
    pdnn_context_destroy(ctx);
}

/* pdnn_binary's checks, and in place (y = a) with a broadcast b on every
 * device against a loop here (the parity harness covers the grid). */
Test(ops, binary_in_place_and_refusals)
{
    pdnn_context *ctx = th_context();
    pdnn_device *devs[16];
    const int n = all_devices(ctx, devs);
    pdnn_tensor_desc d = th_desc(PDNN_NHWC, 2, 3, 4, 5), dc = th_desc(PDNN_NHWC, 2, 3, 1, 1);
    float av[120], bv[6];
    th_fill(av, 120, 51);
    th_fill(bv, 6, 52);
    for (int i = 0; i < n; i++) {
        pdnn_tensor *a = th_upload(devs[i], &d, av), *b = th_upload(devs[i], &dc, bv);
        cr_assert_eq(pdnn_binary(a, b, PDNN_BINARY_MUL, a), PDNN_SUCCESS, "%s", pdnn_last_error());
        float *got = th_download(a);
        for (int k = 0; k < 120; k++) { /* NHWC: channel k % 3 of image k / 60 */
            const float want = av[k] * bv[(k / 60) * 3 + k % 3];
            cr_assert_float_eq(got[k], want, 1e-6f * (1.0f + fabsf(want)), "%s: y[%d] = %g, want %g",
                               dev_name(devs[i]), k, (double)got[k], (double)want);
        }
        free(got);
        pdnn_tensor_release(a);
        pdnn_tensor_release(b);
    }
    pdnn_device *h = NULL;
    cr_assert_eq(pdnn_device_find(ctx, "/cpu:0", &h), PDNN_SUCCESS);
    pdnn_tensor_desc dn = th_desc(PDNN_NCHW, 2, 3, 1, 1), dw = th_desc(PDNN_NHWC, 2, 3, 4, 4);
    pdnn_tensor *a = th_upload(h, &d, av), *b = th_upload(h, &dc, bv), *bn = th_upload(h, &dn, bv);
    pdnn_tensor *wrong = th_upload(h, &dw, NULL), *y = th_upload(h, &d, NULL), *same = th_upload(h, &d, av);
    cr_assert_eq(pdnn_binary(NULL, b, PDNN_BINARY_ADD, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_binary(a, NULL, PDNN_BINARY_ADD, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_binary(a, b, PDNN_BINARY_ADD, NULL), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_eq(pdnn_binary(a, b, (pdnn_binary_op)7, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "op 7"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_binary(a, b, PDNN_BINARY_ADD, wrong), PDNN_ERR_INVALID_ARGUMENT, "y's dims differ from a's");
    cr_assert_eq(pdnn_binary(a, wrong, PDNN_BINARY_ADD, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "equal to y's or 1"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_binary(a, bn, PDNN_BINARY_ADD, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(pdnn_last_error(), "one layout"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_binary(a, same, PDNN_BINARY_ADD, same), PDNN_SUCCESS, "y = b of a's shape: %s",
                 pdnn_last_error());
    float *got = th_download(same);
    cr_assert_float_eq(got[7], av[7] + av[7], 1e-6f, "a + b in place over b");
    free(got);
    /* a broadcast instead: y may be b (y's shape), not the smaller a */
    cr_assert_eq(pdnn_binary(b, same, PDNN_BINARY_SUB, same), PDNN_SUCCESS, "%s", pdnn_last_error());
    got = th_download(same);
    cr_assert_float_eq(got[7], bv[7 % 3] - 2.0f * av[7], 1e-6f, "a - b in place over b, a broadcast");
    free(got);
    cr_assert_eq(pdnn_binary(b, same, PDNN_BINARY_ADD, b), PDNN_ERR_INVALID_ARGUMENT, "y of the smaller a's dims");
    cr_assert_eq(pdnn_binary(a, b, PDNN_BINARY_ADD, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_release(a);
    pdnn_tensor_release(b);
    pdnn_tensor_release(bn);
    pdnn_tensor_release(wrong);
    pdnn_tensor_release(y);
    pdnn_tensor_release(same);
    pdnn_context_destroy(ctx);
}
