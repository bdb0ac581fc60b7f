/* Tensors and the argument checking of every public op function: bad
 * input gets a clear status and message, never a crash. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT_ERR(call, status, needle)                                                          \
    do {                                                                                          \
        pdnn_status st_ = (call);                                                                 \
        cr_assert_eq(st_, (status), "%s returned %s: %s", #call, pdnn_status_string(st_),         \
                     pdnn_last_error());                                                          \
        cr_assert(strstr(pdnn_last_error(), (needle)) != NULL, "%s: message '%s' lacks '%s'",     \
                  #call, pdnn_last_error(), (needle));                                            \
    } while (0)

Test(tensor, descriptor_validation)
{
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 2, 3, 4, 5);
    cr_assert_eq(pdnn_tensor_desc_validate(&d), PDNN_SUCCESS);
    cr_assert_eq(pdnn_tensor_desc_elements(&d), 120);
    cr_assert_eq(pdnn_tensor_desc_bytes(&d), 480);
    d.dims[2] = 0;
    EXPECT_ERR(pdnn_tensor_desc_validate(&d), PDNN_ERR_INVALID_ARGUMENT, ">= 1");
    cr_assert_eq(pdnn_tensor_desc_bytes(&d), 0);
    d.dims[2] = -4;
    EXPECT_ERR(pdnn_tensor_desc_validate(&d), PDNN_ERR_INVALID_ARGUMENT, "-4");
    d = th_desc(PDNN_NCHW, INT64_MAX / 2, 2, 2, 2);
    EXPECT_ERR(pdnn_tensor_desc_validate(&d), PDNN_ERR_INVALID_ARGUMENT, "overflow");
    cr_assert_eq(pdnn_tensor_desc_elements(&d), 0);
    d = th_desc(PDNN_NCHW, 1 << 20, 1 << 20, 1 << 20, 1 << 20);
    EXPECT_ERR(pdnn_tensor_desc_validate(&d), PDNN_ERR_INVALID_ARGUMENT, "overflow");
    d = th_desc((pdnn_layout)42, 1, 1, 1, 1);
    EXPECT_ERR(pdnn_tensor_desc_validate(&d), PDNN_ERR_INVALID_ARGUMENT, "layout");
    d = th_desc(PDNN_NCHW, 1, 1, 1, 1);
    d.dtype = (pdnn_dtype)9;
    EXPECT_ERR(pdnn_tensor_desc_validate(&d), PDNN_ERR_INVALID_ARGUMENT, "dtype");
    d = th_desc(PDNN_LAYOUT_X, 8, 2, 1, 1);
    EXPECT_ERR(pdnn_tensor_desc_validate(&d), PDNN_ERR_INVALID_ARGUMENT, "layout-X");
    EXPECT_ERR(pdnn_tensor_desc_validate(NULL), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    cr_assert_eq(pdnn_layout_parse("nhwc"), PDNN_NHWC);
    cr_assert_eq(pdnn_layout_parse("HWIO"), PDNN_HWIO);
    cr_assert_eq(pdnn_layout_parse("CHWN"), -1);
    cr_assert_eq(pdnn_layout_parse(NULL), -1);
    cr_assert_str_eq(pdnn_layout_name(PDNN_OHWI), "OHWI");
}

Test(tensor, create_write_read_round_trip_on_every_device)
{
    pdnn_context *ctx = th_context();
    for (int i = 0; i < pdnn_device_count(ctx); i++) {
        pdnn_device *dev = NULL;
        cr_assert_eq(pdnn_device_get(ctx, i, &dev), PDNN_SUCCESS);
        /* Several tensors so that some live at non-zero offsets. */
        pdnn_tensor_desc d = th_desc(PDNN_NHWC, 3, 5, 7, 11);
        int64_t n = pdnn_tensor_desc_elements(&d);
        float *v = malloc(sizeof(float) * (size_t)n);
        th_fill(v, n, (uint32_t)i);
        pdnn_tensor *a = th_upload(dev, &d, v), *b = th_upload(dev, &d, v);
        float *back = th_download(b);
        cr_assert(memcmp(back, v, sizeof(float) * (size_t)n) == 0);
        cr_assert_eq(pdnn_tensor_device(b), dev);
        pdnn_tensor_desc got;
        cr_assert_eq(pdnn_tensor_get_desc(b, &got), PDNN_SUCCESS);
        /* handed back canonical: the rank set, the dims past it 1 */
        pdnn_tensor_desc canon = d;
        canon.rank = 4;
        for (int k = 4; k < PDNN_MAX_RANK; k++)
            canon.dims[k] = 1;
        cr_assert(memcmp(&got, &canon, sizeof canon) == 0);
        EXPECT_ERR(pdnn_tensor_write(a, v, 4), PDNN_ERR_INVALID_ARGUMENT, "bytes");
        EXPECT_ERR(pdnn_tensor_read(a, v, (size_t)n * 4 + 4), PDNN_ERR_INVALID_ARGUMENT, "bytes");
        EXPECT_ERR(pdnn_tensor_write(a, NULL, (size_t)n * 4), PDNN_ERR_INVALID_ARGUMENT, "NULL");
        EXPECT_ERR(pdnn_tensor_read(NULL, v, (size_t)n * 4), PDNN_ERR_INVALID_ARGUMENT, "NULL");
        pdnn_tensor_release(a);
        pdnn_tensor_release(b);
        free(v);
        free(back);
    }
    pdnn_tensor *t = NULL;
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_get(ctx, 0, &host), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 0, 1, 1, 1);
    EXPECT_ERR(pdnn_tensor_create(host, &d, &t), PDNN_ERR_INVALID_ARGUMENT, ">= 1");
    cr_assert_null(t);
    EXPECT_ERR(pdnn_tensor_create(NULL, &d, &t), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    EXPECT_ERR(pdnn_tensor_create(host, NULL, &t), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    /* Valid but far larger than any memory: an out-of-memory status. */
    d = th_desc(PDNN_NCHW, 1 << 20, 1 << 20, 1 << 10, 1);
    cr_assert_eq(pdnn_tensor_create(host, &d, &t), PDNN_ERR_OUT_OF_MEMORY, "%s", pdnn_last_error());
    pdnn_tensor_release(NULL);
    pdnn_context_destroy(ctx);
}

Test(conv_args, same_and_valid_padding_match_tensorflow)
{
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    /* 224x224, 7x7 stride 2 SAME: out 112, total pad 5 -> 2 before, 3 after. */
    p.stride_h = p.stride_w = 2;
    cr_assert_eq(pdnn_conv2d_set_padding_same(&p, 224, 224, 7, 7), PDNN_SUCCESS);
    cr_assert(p.pad_top == 2 && p.pad_bottom == 3 && p.pad_left == 2 && p.pad_right == 3);
    pdnn_tensor_desc x = th_desc(PDNN_NHWC, 1, 3, 224, 224), w = th_desc(PDNN_HWIO, 64, 3, 7, 7);
    int64_t od[4];
    cr_assert_eq(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_SUCCESS);
    cr_assert(od[0] == 1 && od[1] == 64 && od[2] == 112 && od[3] == 112);
    /* 5x5, 3x3 stride 1 dilation 2 SAME: effective 5, pad 2 each side. */
    pdnn_conv2d_params_init(&p);
    p.dilation_h = p.dilation_w = 2;
    cr_assert_eq(pdnn_conv2d_set_padding_same(&p, 5, 5, 3, 3), PDNN_SUCCESS);
    cr_assert(p.pad_top == 2 && p.pad_bottom == 2);
    pdnn_conv2d_set_padding_valid(&p);
    cr_assert(p.pad_top == 0 && p.pad_right == 0);
    p.stride_h = 0;
    EXPECT_ERR(pdnn_conv2d_set_padding_same(&p, 5, 5, 3, 3), PDNN_ERR_INVALID_ARGUMENT, "stride");
    EXPECT_ERR(pdnn_conv2d_set_padding_same(NULL, 5, 5, 3, 3), PDNN_ERR_INVALID_ARGUMENT, "NULL");
}

Test(conv_args, bad_shapes_and_params)
{
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    pdnn_tensor_desc x = th_desc(PDNN_NCHW, 1, 4, 8, 8), w = th_desc(PDNN_OIHW, 6, 4, 3, 3);
    int64_t od[4];
    cr_assert_eq(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_SUCCESS);
    cr_assert(od[1] == 6 && od[2] == 6 && od[3] == 6);
    p.groups = 3;
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "groups 3");
    p.groups = 2;
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "needs 2");
    pdnn_conv2d_params_init(&p);
    p.stride_w = 0;
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "stride_w");
    pdnn_conv2d_params_init(&p);
    p.pad_left = -1;
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "pad_left");
    pdnn_conv2d_params_init(&p);
    p.dilation_h = 5;
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "larger than");
    pdnn_conv2d_params_init(&p);
    p.dilation_h = INT32_MAX;
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "dilation_h");
    pdnn_conv2d_params_init(&p);
    EXPECT_ERR(pdnn_conv2d_output_dims(&w, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "activation");
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &x, &p, od), PDNN_ERR_INVALID_ARGUMENT, "filter");
    EXPECT_ERR(pdnn_conv2d_output_dims(&x, &w, NULL, od), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    pdnn_tensor_desc huge = th_desc(PDNN_NCHW, 1, 4, (int64_t)1 << 40, 8);
    EXPECT_ERR(pdnn_conv2d_output_dims(&huge, &w, &p, od), PDNN_ERR_INVALID_ARGUMENT, "2^31");
}

Test(conv_args, forward_rejects_mismatched_tensors)
{
    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL, *other = NULL;
    cr_assert_eq(pdnn_device_default(ctx, &dev), PDNN_SUCCESS);
    cr_assert_eq(pdnn_device_get(ctx, 0, &other), PDNN_SUCCESS);
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 4, 8, 8), wd = th_desc(PDNN_OIHW, 6, 4, 3, 3);
    pdnn_tensor_desc yd = th_desc(PDNN_NHWC, 1, 6, 6, 6), bd = th_desc(PDNN_LAYOUT_X, 6, 1, 1, 1);
    pdnn_tensor *x = th_upload(dev, &xd, NULL), *w = th_upload(dev, &wd, NULL);
    pdnn_tensor *y = th_upload(dev, &yd, NULL), *b = th_upload(dev, &bd, NULL);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    EXPECT_ERR(pdnn_conv2d_forward(NULL, x, w, b, y), PDNN_ERR_INVALID_ARGUMENT, "params");
    EXPECT_ERR(pdnn_conv2d_forward(&p, NULL, w, b, y), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    EXPECT_ERR(pdnn_conv2d_forward(&p, x, w, b, NULL), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    EXPECT_ERR(pdnn_conv2d_forward(&p, x, w, b, x), PDNN_ERR_INVALID_ARGUMENT, "own");
    /* Wrong output dims: the message gives the expected ones. */
    pdnn_tensor_desc yd2 = th_desc(PDNN_NCHW, 1, 6, 8, 8);
    pdnn_tensor *y2 = th_upload(dev, &yd2, NULL);
    EXPECT_ERR(pdnn_conv2d_forward(&p, x, w, b, y2), PDNN_ERR_INVALID_ARGUMENT, "[1,6,6,6]");
    /* Bias of the wrong length, or not a vector. */
    pdnn_tensor_desc bd2 = th_desc(PDNN_LAYOUT_X, 5, 1, 1, 1);
    pdnn_tensor *b2 = th_upload(dev, &bd2, NULL);
    EXPECT_ERR(pdnn_conv2d_forward(&p, x, w, b2, y), PDNN_ERR_INVALID_ARGUMENT, "length 6");
    EXPECT_ERR(pdnn_conv2d_forward(&p, x, w, x, y), PDNN_ERR_INVALID_ARGUMENT, "bias");
    /* A tensor on another device. */
    if (other != dev) {
        pdnn_tensor *wo = th_upload(other, &wd, NULL);
        EXPECT_ERR(pdnn_conv2d_forward(&p, x, wo, NULL, y), PDNN_ERR_INVALID_ARGUMENT, "one device");
        pdnn_tensor_release(wo);
    }
    /* A float16 input with float32 filter and output: mixed dtypes, named
     * (tests/test_precision.c has the dtypes themselves). */
    pdnn_tensor_desc hd = xd;
    hd.dtype = PDNN_FLOAT16;
    pdnn_tensor *xh = th_upload(dev, &hd, NULL);
    EXPECT_ERR(pdnn_conv2d_forward(&p, xh, w, NULL, y), PDNN_ERR_INVALID_ARGUMENT, "float16 but filter is float32");
    cr_assert_eq(pdnn_conv2d_forward(&p, x, w, b, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor *ts[] = {x, w, y, b, y2, b2, xh};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        pdnn_tensor_release(ts[i]);
    pdnn_context_destroy(ctx);
}

Test(pool_args, bad_params_and_tensors)
{
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    pdnn_tensor_desc x = th_desc(PDNN_NHWC, 2, 3, 7, 7);
    int64_t od[4];
    cr_assert_eq(pdnn_pool2d_output_dims(&x, &p, od), PDNN_SUCCESS);
    cr_assert(od[0] == 2 && od[1] == 3 && od[2] == 3 && od[3] == 3);
    p.ceil_mode = 1;
    cr_assert_eq(pdnn_pool2d_output_dims(&x, &p, od), PDNN_SUCCESS);
    cr_assert_eq(od[2], 4);
    pdnn_pool2d_params_init(&p);
    p.pad_top = 2;
    EXPECT_ERR(pdnn_pool2d_output_dims(&x, &p, od), PDNN_ERR_INVALID_ARGUMENT, "pad_top");
    pdnn_pool2d_params_init(&p);
    p.window_w = 0;
    EXPECT_ERR(pdnn_pool2d_output_dims(&x, &p, od), PDNN_ERR_INVALID_ARGUMENT, "window_w");
    pdnn_pool2d_params_init(&p);
    p.window_h = p.window_w = 9;
    EXPECT_ERR(pdnn_pool2d_output_dims(&x, &p, od), PDNN_ERR_INVALID_ARGUMENT, "larger than");
    pdnn_pool2d_params_init(&p);
    p.mode = (pdnn_pool_mode)7;
    EXPECT_ERR(pdnn_pool2d_output_dims(&x, &p, od), PDNN_ERR_INVALID_ARGUMENT, "mode");
    pdnn_pool2d_params_init(&p);
    pdnn_tensor_desc f = th_desc(PDNN_OIHW, 2, 3, 7, 7);
    EXPECT_ERR(pdnn_pool2d_output_dims(&f, &p, od), PDNN_ERR_INVALID_ARGUMENT, "NCHW or NHWC");

    pdnn_context *ctx = th_context();
    pdnn_device *dev = NULL;
    cr_assert_eq(pdnn_device_default(ctx, &dev), PDNN_SUCCESS);
    pdnn_tensor *tx = th_upload(dev, &x, NULL);
    pdnn_tensor_desc yd = th_desc(PDNN_NCHW, 2, 3, 4, 3);
    pdnn_tensor *ty = th_upload(dev, &yd, NULL);
    EXPECT_ERR(pdnn_pool2d_forward(&p, tx, ty), PDNN_ERR_INVALID_ARGUMENT, "[2,3,3,3]");
    EXPECT_ERR(pdnn_pool2d_forward(&p, tx, tx), PDNN_ERR_INVALID_ARGUMENT, "own");
    EXPECT_ERR(pdnn_pool2d_forward(&p, NULL, ty), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    EXPECT_ERR(pdnn_pool2d_forward(NULL, tx, ty), PDNN_ERR_INVALID_ARGUMENT, "NULL");
    pdnn_tensor_release(tx);
    pdnn_tensor_release(ty);
    pdnn_context_destroy(ctx);
}

/* A context is reference-counted: destroying it first (as a garbage
 * collector may) leaves its tensors and their devices working until the
 * last tensor goes, on every device and in both release orders. Under
 * ASan (CI's sanitizer build) any use after free or leak here fails. */
Test(tensor, context_destroyed_before_its_tensors)
{
    pdnn_context *probe = th_context();
    int n_dev = pdnn_device_count(probe);
    pdnn_context_destroy(probe);
    for (int i = 0; i < n_dev; i++) {
        for (int order = 0; order < 2; order++) {
            pdnn_context *ctx = th_context();
            pdnn_device *dev = NULL;
            cr_assert_eq(pdnn_device_get(ctx, i, &dev), PDNN_SUCCESS);
            pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 4, 4, 4); /* 256 bytes */
            float v[64], w[64];
            th_fill(v, 64, 5);
            pdnn_tensor *a = th_upload(dev, &d, v), *b = th_upload(dev, &d, NULL);
            pdnn_context_destroy(ctx);
            /* The devices are alive: copy, compute, read, account. */
            cr_assert_eq(pdnn_tensor_device(a), dev);
            cr_assert_eq(pdnn_relu(a, b), PDNN_SUCCESS, "%s", pdnn_last_error());
            float *got = th_download(b);
            for (int e = 0; e < 64; e++)
                cr_assert_eq(got[e], v[e] > 0.0f ? v[e] : 0.0f, "element %d", e);
            free(got);
            th_fill(w, 64, 6);
            cr_assert_eq(pdnn_tensor_write(a, w, sizeof w), PDNN_SUCCESS, "%s", pdnn_last_error());
            got = th_download(a);
            cr_assert_eq(memcmp(got, w, sizeof w), 0);
            free(got);
            pdnn_memory_stats s;
            cr_assert_eq(pdnn_device_get_memory_stats(dev, &s), PDNN_SUCCESS);
            cr_assert_eq(s.bytes_in_use, 2 * sizeof v, "%llu in use", (unsigned long long)s.bytes_in_use);
            pdnn_tensor *first = order ? b : a, *last = order ? a : b;
            pdnn_tensor_release(first);
            cr_assert_eq(pdnn_device_get_memory_stats(dev, &s), PDNN_SUCCESS);
            cr_assert_eq(s.bytes_in_use, sizeof v, "the first release gave its memory back");
            pdnn_tensor_release(last); /* frees the devices and the context */
        }
    }
}

Test(tensor, a_second_context_destroy_is_ignored)
{
    pdnn_context *ctx = th_context();
    pdnn_device *host = NULL;
    cr_assert_eq(pdnn_device_get(ctx, 0, &host), PDNN_SUCCESS);
    pdnn_tensor_desc d = th_desc(PDNN_NCHW, 1, 1, 2, 2);
    float v[4] = {1, -2, 3, -4};
    pdnn_tensor *t = th_upload(host, &d, v);
    pdnn_context_destroy(ctx);
    pdnn_context_destroy(ctx); /* would drop the tensor's reference: refused */
    float *got = th_download(t);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    free(got);
    pdnn_tensor_release(t);
}
