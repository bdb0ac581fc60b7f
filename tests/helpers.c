#include "helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

pdnn_context *th_context(void)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    /* Tests compare float32 to float32 references: no TF32 on CUDA. */
    o.enable_tensor_float_32_execution = 0;
    pdnn_context *ctx = NULL;
    pdnn_status st = pdnn_context_create(&o, &ctx);
    cr_assert_eq(st, PDNN_SUCCESS, "context: %s", pdnn_last_error());
    return ctx;
}

pdnn_tensor *th_upload(pdnn_device *dev, const pdnn_tensor_desc *desc, const float *data)
{
    pdnn_tensor *t = NULL;
    cr_assert_eq(pdnn_tensor_create(dev, desc, &t), PDNN_SUCCESS, "create: %s", pdnn_last_error());
    if (data)
        cr_assert_eq(pdnn_tensor_write(t, data, (size_t)pdnn_tensor_desc_bytes(desc)), PDNN_SUCCESS,
                     "write: %s", pdnn_last_error());
    return t;
}

float *th_download(const pdnn_tensor *t)
{
    pdnn_tensor_desc d;
    cr_assert_eq(pdnn_tensor_get_desc(t, &d), PDNN_SUCCESS);
    size_t bytes = (size_t)pdnn_tensor_desc_bytes(&d);
    float *v = malloc(bytes);
    cr_assert_not_null(v);
    cr_assert_eq(pdnn_tensor_read(t, v, bytes), PDNN_SUCCESS, "read: %s", pdnn_last_error());
    return v;
}

int th_accelerators(pdnn_context *ctx, pdnn_device **out, int max)
{
    int n = 0;
    for (int i = 0; i < pdnn_device_count(ctx) && n < max; i++) {
        pdnn_device *d = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(ctx, i, &d), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
        if (strcmp(info.backend, "host") != 0)
            out[n++] = d;
    }
    return n;
}

/* ctx's accelerators into devs (at most 8); the test skips without any. */
static pdnn_context *keep_accelerators(pdnn_context *ctx, pdnn_device **devs, int *ndev)
{
    *ndev = th_accelerators(ctx, devs, 8);
    if (*ndev == 0) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no accelerator device (OpenCL or CUDA) is present");
    }
    return ctx;
}

pdnn_context *th_accel_context(pdnn_device **devs, int *ndev) { return keep_accelerators(th_context(), devs, ndev); }

pdnn_context *th_accel_context_opts(const pdnn_context_options *opts, pdnn_device **devs, int *ndev)
{
    pdnn_context *ctx = NULL;
    cr_assert_eq(pdnn_context_create(opts, &ctx), PDNN_SUCCESS, "context: %s", pdnn_last_error());
    return keep_accelerators(ctx, devs, ndev);
}

bool th_has_algo(pdnn_device *dev, pdnn_conv_algo algo)
{
    /* Any valid shape: only whether the backend has the algorithm matters. */
    pdnn_tensor_desc xd = th_desc(PDNN_NCHW, 1, 4, 4, 4), wd = th_desc(PDNN_OIHW, 4, 4, 1, 1);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    pdnn_conv_algo_info info;
    cr_assert_eq(pdnn_conv2d_query_algorithm(dev, &p, &xd, &wd, PDNN_NCHW, algo, &info), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    return info.available;
}

pdnn_context *th_accel_context_with(pdnn_conv_algo algo, pdnn_device **devs, int *ndev)
{
    pdnn_device *all[8];
    int n = 0;
    pdnn_context *ctx = th_accel_context(all, &n);
    *ndev = 0;
    for (int i = 0; i < n; i++)
        if (th_has_algo(all[i], algo))
            devs[(*ndev)++] = all[i];
    if (*ndev == 0) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no accelerator has algorithm %s", pdnn_conv_algo_name(algo));
    }
    return ctx;
}

pdnn_device *th_find_backend(pdnn_context *ctx, const char *backend)
{
    for (int i = 0; i < pdnn_device_count(ctx); i++) {
        pdnn_device *d = NULL;
        pdnn_device_info info;
        cr_assert_eq(pdnn_device_get(ctx, i, &d), PDNN_SUCCESS);
        cr_assert_eq(pdnn_device_get_info(d, &info), PDNN_SUCCESS);
        if (strcmp(info.backend, backend) == 0)
            return d;
    }
    return NULL;
}
