#include "helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

pdnn_context *th_context(void)
{
    pdnn_context_options o;
    pdnn_context_options_init(&o);
    o.allow_growth = 1;
    pdnn_context *ctx = NULL;
    pdnn_status st = pdnn_context_create(&o, &ctx);
    cr_assert_eq(st, PDNN_SUCCESS, "context: %s", pdnn_last_error());
    return ctx;
}

void th_fill(float *v, int64_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        v[i] = (float)((double)s / 2147483648.0 - 1.0);
    }
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

pdnn_context *th_accel_context(pdnn_device **devs, int *ndev)
{
    pdnn_context *ctx = th_context();
    *ndev = th_accelerators(ctx, devs, 8);
    if (*ndev == 0) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no accelerator device (OpenCL or CUDA) is present");
    }
    return ctx;
}

/* Memory position of logical element (a,b,c,d), written out per layout
 * rather than through the library's stride helper. */
static int64_t pos(pdnn_layout l, const int64_t D[4], int64_t a, int64_t b, int64_t c, int64_t d)
{
    switch (l) {
    case PDNN_NHWC:
    case PDNN_OHWI: return ((a * D[2] + c) * D[3] + d) * D[1] + b;
    case PDNN_HWIO: return ((c * D[3] + d) * D[1] + b) * D[0] + a;
    default: return ((a * D[1] + b) * D[2] + c) * D[3] + d;
    }
}

void th_to_layout(const float *logical, float *out, pdnn_layout l, const int64_t D[4])
{
    int64_t i = 0;
    for (int64_t a = 0; a < D[0]; a++)
        for (int64_t b = 0; b < D[1]; b++)
            for (int64_t c = 0; c < D[2]; c++)
                for (int64_t d = 0; d < D[3]; d++)
                    out[pos(l, D, a, b, c, d)] = logical[i++];
}

void th_from_layout(const float *in, float *logical, pdnn_layout l, const int64_t D[4])
{
    int64_t i = 0;
    for (int64_t a = 0; a < D[0]; a++)
        for (int64_t b = 0; b < D[1]; b++)
            for (int64_t c = 0; c < D[2]; c++)
                for (int64_t d = 0; d < D[3]; d++)
                    logical[i++] = in[pos(l, D, a, b, c, d)];
}

pdnn_tensor_desc th_desc(pdnn_layout l, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    pdnn_tensor_desc d = {PDNN_FLOAT32, l, {d0, d1, d2, d3}};
    return d;
}
