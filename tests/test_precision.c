/* float16 and bfloat16 through the ops (issue 43): pdnn_cast on every
 * device against src/core/half.c's rounding; the host reference's
 * contract (widen, compute in float32, round once) for the registry ops;
 * the guard: on every device an op either computes a reduced dtype (close
 * to the host's) or refuses it naming the op, the algorithm and the
 * dtype, never a wrong result; mixed dtypes and int32 refused. */
#include "core/half.h"
#include "ops/dispatch_internal.h"
#include "helpers.h"
#include "polydnn_dlpack.h"
#ifdef PDNN_HAVE_OPENCL
#include "backends/opencl/cl_hooks.h" /* pdnn__opencl_gpu_class_everywhere */
#endif

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pdnn_dtype reduced[] = {PDNN_FLOAT16, PDNN_BFLOAT16};

static pdnn_tensor *make(pdnn_device *dev, pdnn_tensor_desc d, pdnn_dtype t, const float *vals)
{
    d.dtype = t;
    pdnn_tensor *x = NULL;
    cr_assert_eq(pdnn_tensor_create(dev, &d, &x), PDNN_SUCCESS, "%s", pdnn_last_error());
    if (vals) {
        const size_t n = (size_t)pdnn_tensor_desc_elements(&d), es = pdnn__dtype_size(t);
        void *raw = malloc(n * es);
        pdnn__from_f32(t, vals, raw, n);
        cr_assert_eq(pdnn_tensor_write(x, raw, n * es), PDNN_SUCCESS, "%s", pdnn_last_error());
        free(raw);
    }
    return x;
}

/* x's elements widened to float32 (malloc'd). */
static float *fetch(const pdnn_tensor *x)
{
    pdnn_tensor_desc d;
    pdnn_tensor_get_desc(x, &d);
    const size_t n = (size_t)pdnn_tensor_desc_elements(&d), es = pdnn__dtype_size(d.dtype);
    void *raw = malloc(n * es);
    float *f = malloc(n * sizeof *f);
    cr_assert_eq(pdnn_tensor_read(x, raw, n * es), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn__to_f32(d.dtype, raw, f, n);
    free(raw);
    return f;
}

static const char *backend_of(pdnn_device *d)
{
    static _Thread_local pdnn_device_info info;
    pdnn_device_get_info(d, &info);
    return info.backend;
}

/* A context and its host device (index 0). */
static pdnn_context *host_context(pdnn_device **host)
{
    pdnn_context *ctx = th_context();
    cr_assert_eq(pdnn_device_get(ctx, 0, host), PDNN_SUCCESS, "%s", pdnn_last_error());
    return ctx;
}

Test(precision, cast_on_every_device_rounds_as_half_c)
{
    enum { N = 1031 };
    float v[N];
    th_fill(v, N, 43);
    const float edge[] = {65504.0f, 65519.99f, 65520.0f, 1e-8f, 0x1p-25f, 0x3p-25f, -0.0f, INFINITY, -INFINITY,
                          NAN, 3.0e38f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 1.00390625f, 1.01171875f};
    memcpy(v, edge, sizeof edge);
    for (int i = (int)(sizeof edge / sizeof edge[0]); i < N; i++)
        v[i] *= (float)(1 << (i % 20)); /* magnitudes past float16's range too */
    const pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_ND, {N}, 1};
    pdnn_context *ctx = th_context();
    for (int k = 0; k < pdnn_device_count(ctx); k++) {
        pdnn_device *dev = NULL;
        pdnn_device_get(ctx, k, &dev);
        pdnn_tensor *x = make(dev, d, PDNN_FLOAT32, v);
        for (int r = 0; r < 2; r++) {
            const pdnn_dtype t = reduced[r];
            pdnn_tensor *h = make(dev, d, t, NULL), *back = make(dev, d, PDNN_FLOAT32, NULL);
            pdnn_status st = pdnn_cast(x, h);
            cr_assert_eq(st, PDNN_SUCCESS, "cast to %s on %s: %s", pdnn__dtype_name(t), backend_of(dev),
                         pdnn_last_error());
            uint16_t raw[N];
            cr_assert_eq(pdnn_tensor_read(h, raw, sizeof raw), PDNN_SUCCESS);
            for (int i = 0; i < N; i++) {
                const uint16_t want = t == PDNN_FLOAT16 ? pdnn__f32_to_f16(v[i]) : pdnn__f32_to_bf16(v[i]);
                if (isnan(v[i]))
                    cr_assert(isnan(t == PDNN_FLOAT16 ? pdnn__f16_to_f32(raw[i]) : pdnn__bf16_to_f32(raw[i])),
                              "%s: NaN became 0x%04x", backend_of(dev), raw[i]);
                else
                    cr_assert_eq(raw[i], want, "%s to %s: element %d (%.9g) is 0x%04x, not 0x%04x", backend_of(dev),
                                 pdnn__dtype_name(t), i, (double)v[i], raw[i], want);
            }
            /* back to float32: exact */
            cr_assert_eq(pdnn_cast(h, back), PDNN_SUCCESS, "%s", pdnn_last_error());
            float *w = fetch(back);
            for (int i = 0; i < N; i++) {
                const float want = t == PDNN_FLOAT16 ? pdnn__f16_to_f32(raw[i]) : pdnn__bf16_to_f32(raw[i]);
                cr_assert(memcmp(&w[i], &want, 4) == 0 || (isnan(w[i]) && isnan(want)), "%s: widening %d",
                          backend_of(dev), i);
            }
            /* float16 <-> bfloat16: one rounding of the exact value */
            const pdnn_dtype o = reduced[1 - r];
            pdnn_tensor *h2 = make(dev, d, o, NULL);
            cr_assert_eq(pdnn_cast(h, h2), PDNN_SUCCESS, "%s", pdnn_last_error());
            float *w2 = fetch(h2);
            for (int i = 0; i < N; i++) {
                const float want = o == PDNN_FLOAT16 ? pdnn__f16_to_f32(pdnn__f32_to_f16(w[i]))
                                                      : pdnn__bf16_to_f32(pdnn__f32_to_bf16(w[i]));
                cr_assert(memcmp(&w2[i], &want, 4) == 0 || (isnan(w2[i]) && isnan(want)), "%s: %s to %s, %d",
                          backend_of(dev), pdnn__dtype_name(t), pdnn__dtype_name(o), i);
            }
            free(w);
            free(w2);
            pdnn_tensor_release(h);
            pdnn_tensor_release(h2);
            pdnn_tensor_release(back);
        }
        pdnn_tensor_release(x);
    }
    pdnn_context_destroy(ctx);
}

Test(precision, cast_refuses_bad_input)
{
    pdnn_device *host = NULL;
    pdnn_context *ctx = host_context(&host);
    const pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_ND, {4, 3}, 2}, d2 = {PDNN_FLOAT32, PDNN_ND, {3, 4}, 2};
    pdnn_tensor *x = make(host, d, PDNN_FLOAT32, NULL), *y = make(host, d2, PDNN_FLOAT16, NULL);
    pdnn_tensor *li = make(host, d, PDNN_INT32, NULL), *h = make(host, d, PDNN_FLOAT16, NULL);
    cr_assert_eq(pdnn_cast(x, y), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "dims"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_cast(li, h), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "int32"), "%s", pdnn_last_error());
    cr_assert_eq(pdnn_cast(h, h), PDNN_ERR_INVALID_ARGUMENT, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_cast(NULL, h), PDNN_ERR_INVALID_ARGUMENT);
    pdnn_tensor *ts[] = {x, y, li, h};
    for (int i = 0; i < 4; i++)
        pdnn_tensor_release(ts[i]);
    pdnn_context_destroy(ctx);
}

/* ---- the ops in reduced precision ------------------------------------------ */

/* One op run on tensors of one dtype: in[] inputs (float values), out[]
 * outputs. */
typedef struct op_case {
    const char *name;
    int n_in, n_out;
    pdnn_tensor_desc in[4], out[2];
    pdnn_status (*run)(pdnn_tensor *const *in, pdnn_tensor *const *out);
} op_case;

static pdnn_status run_conv(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    return pdnn_conv2d_forward(&p, in[0], in[1], NULL, out[0]);
}

/* bias, residual z and a capped relu: every buffer of the epilogue */
static pdnn_status run_conv_residual(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    p.relu = 1;
    p.relu_cap = 0.5f;
    return pdnn_conv2d_forward_residual(&p, in[0], in[1], in[2], in[3], out[0]);
}

static pdnn_status run_conv_bwd_filter(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    return pdnn_conv2d_backward_filter(&p, in[0], in[1], out[0]);
}

/* depthwise (5 channels), stride 2, padding 1: AUTO's grouped choices */
static pdnn_status run_dw_bwd(pdnn_tensor *const *in, pdnn_tensor *const *out, int filter)
{
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    p.stride_h = p.stride_w = 2;
    p.groups = 5;
    return filter ? pdnn_conv2d_backward_filter(&p, in[0], in[1], out[0])
                  : pdnn_conv2d_backward_data(&p, in[0], in[1], out[0]);
}
static pdnn_status run_dw_bwd_data(pdnn_tensor *const *in, pdnn_tensor *const *out) { return run_dw_bwd(in, out, 0); }
static pdnn_status run_dw_bwd_filter(pdnn_tensor *const *in, pdnn_tensor *const *out) { return run_dw_bwd(in, out, 1); }

static pdnn_status run_pool(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    p.mode = PDNN_POOL_AVG_EXCLUDE_PADDING;
    p.window_h = p.window_w = 3;
    p.stride_h = p.stride_w = 2;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
    return pdnn_pool2d_forward(&p, in[0], out[0]);
}

static pdnn_status run_pool_bwd(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    return pdnn_pool2d_backward(&p, in[0], in[1], out[0]);
}

static pdnn_status run_sigmoid(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    return pdnn_activation_forward(in[0], PDNN_ACTIVATION_SIGMOID, 0.0f, 0.0f, out[0]);
}

static pdnn_status run_mul(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    return pdnn_binary(in[0], in[1], PDNN_BINARY_MUL, out[0]);
}

static pdnn_status run_matmul(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    return pdnn_matmul(in[0], in[1], 0, 1, out[0]);
}

static pdnn_status run_transpose(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    const int perm[] = {2, 0, 1};
    return pdnn_transpose(in[0], perm, out[0]);
}

static pdnn_status run_softmax(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    return pdnn_softmax_axis(in[0], 1, 0, out[0]);
}

static pdnn_status run_reduce(pdnn_tensor *const *in, pdnn_tensor *const *out)
{
    const int axes[] = {0, 2};
    return pdnn_reduce(in[0], axes, 2, PDNN_REDUCTION_MEAN, out[0]);
}

#define NCHW(n, c, h, w) {PDNN_FLOAT32, PDNN_NCHW, {n, c, h, w}, 4}
#define ND3(a, b, c) {PDNN_FLOAT32, PDNN_ND, {a, b, c}, 3}
static const op_case cases[] = {
    {"conv2d", 2, 1, {NCHW(2, 3, 7, 6), {PDNN_FLOAT32, PDNN_OIHW, {5, 3, 3, 3}, 4}}, {NCHW(2, 5, 7, 6)}, run_conv},
    {"conv2d", 4, 1,
     {{PDNN_FLOAT32, PDNN_NHWC, {2, 3, 7, 6}, 4}, {PDNN_FLOAT32, PDNN_OHWI, {5, 3, 3, 3}, 4},
      {PDNN_FLOAT32, PDNN_LAYOUT_X, {5, 1, 1, 1}, 1}, {PDNN_FLOAT32, PDNN_NHWC, {2, 5, 7, 6}, 4}},
     {{PDNN_FLOAT32, PDNN_NHWC, {2, 5, 7, 6}, 4}}, run_conv_residual},
    {"conv2d_bwd_filter", 2, 1, {NCHW(2, 3, 7, 6), NCHW(2, 5, 7, 6)}, {{PDNN_FLOAT32, PDNN_OIHW, {5, 3, 3, 3}, 4}},
     run_conv_bwd_filter},
    {"conv2d_bwd_data", 2, 1, {NCHW(2, 5, 4, 3), {PDNN_FLOAT32, PDNN_OIHW, {5, 1, 3, 3}, 4}}, {NCHW(2, 5, 7, 6)},
     run_dw_bwd_data},
    {"conv2d_bwd_filter", 2, 1, {NCHW(2, 5, 7, 6), NCHW(2, 5, 4, 3)}, {{PDNN_FLOAT32, PDNN_OIHW, {5, 1, 3, 3}, 4}},
     run_dw_bwd_filter},
    {"pool2d", 1, 1, {NCHW(2, 3, 7, 6)}, {NCHW(2, 3, 4, 3)}, run_pool},
    {"pool2d_bwd", 2, 1, {NCHW(1, 2, 6, 6), NCHW(1, 2, 3, 3)}, {NCHW(1, 2, 6, 6)}, run_pool_bwd},
    {"activation", 1, 1, {ND3(3, 5, 7)}, {ND3(3, 5, 7)}, run_sigmoid},
    {"binary", 2, 1, {ND3(3, 5, 7), ND3(1, 5, 1)}, {ND3(3, 5, 7)}, run_mul},
    {"matmul", 2, 1, {{PDNN_FLOAT32, PDNN_ND, {6, 9}, 2}, {PDNN_FLOAT32, PDNN_ND, {4, 9}, 2}},
     {{PDNN_FLOAT32, PDNN_ND, {6, 4}, 2}}, run_matmul},
    /* strided batches: b along the batch, a broadcast over it */
    {"matmul", 2, 1, {ND3(3, 6, 9), ND3(3, 4, 9)}, {ND3(3, 6, 4)}, run_matmul},
    {"matmul", 2, 1, {{PDNN_FLOAT32, PDNN_ND, {6, 9}, 2}, ND3(3, 4, 9)}, {ND3(3, 6, 4)}, run_matmul},
    {"transpose", 1, 1, {ND3(3, 5, 7)}, {ND3(7, 3, 5)}, run_transpose},
    {"softmax", 1, 1, {ND3(3, 5, 7)}, {ND3(3, 5, 7)}, run_softmax},
    {"reduce", 1, 1, {ND3(3, 5, 7)}, {ND3(1, 5, 1)}, run_reduce},
};

/* Runs c on dev in dtype t with inputs from seed; outputs widened into
 * got[] (malloc'd). */
static pdnn_status run_case(const op_case *c, pdnn_device *dev, pdnn_dtype t, float **got)
{
    pdnn_tensor *in[4] = {NULL}, *out[2] = {NULL};
    for (int i = 0; i < c->n_in; i++) {
        const int64_t n = pdnn_tensor_desc_elements(&c->in[i]);
        float *v = malloc((size_t)n * sizeof *v);
        th_fill(v, n, 7u + (uint32_t)i);
        in[i] = make(dev, c->in[i], t, v);
        free(v);
    }
    for (int i = 0; i < c->n_out; i++)
        out[i] = make(dev, c->out[i], t, NULL);
    const pdnn_status st = c->run(in, out);
    for (int i = 0; i < c->n_out; i++) {
        got[i] = st == PDNN_SUCCESS ? fetch(out[i]) : NULL;
        pdnn_tensor_release(out[i]);
    }
    for (int i = 0; i < c->n_in; i++)
        pdnn_tensor_release(in[i]);
    return st;
}

/* The host's contract, through the public API: the op in t equals the op
 * in float32 on t's inputs widened, its outputs rounded to t once. */
Test(precision, host_reference_widens_computes_rounds_once)
{
    pdnn_device *host = NULL;
    pdnn_context *ctx = host_context(&host);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const op_case *c = &cases[k];
        for (int r = 0; r < 2; r++) {
            const pdnn_dtype t = reduced[r];
            float *got[2] = {NULL}, *ref[2] = {NULL};
            cr_assert_eq(run_case(c, host, t, got), PDNN_SUCCESS, "%s in %s: %s", c->name, pdnn__dtype_name(t),
                         pdnn_last_error());
            /* float32 on the widened inputs: make() rounds the inputs to t
             * first, so fill float32 tensors with the same rounded values */
            pdnn_tensor *in[4] = {NULL}, *out[2] = {NULL};
            for (int i = 0; i < c->n_in; i++) {
                const int64_t n = pdnn_tensor_desc_elements(&c->in[i]);
                float *v = malloc((size_t)n * sizeof *v);
                uint16_t *h = malloc((size_t)n * 2);
                th_fill(v, n, 7u + (uint32_t)i);
                pdnn__from_f32(t, v, h, (size_t)n);
                pdnn__to_f32(t, h, v, (size_t)n);
                in[i] = make(host, c->in[i], PDNN_FLOAT32, v);
                free(v);
                free(h);
            }
            for (int i = 0; i < c->n_out; i++)
                out[i] = make(host, c->out[i], PDNN_FLOAT32, NULL);
            cr_assert_eq(c->run(in, out), PDNN_SUCCESS, "%s", pdnn_last_error());
            for (int i = 0; i < c->n_out; i++) {
                ref[i] = fetch(out[i]);
                const size_t n = (size_t)pdnn_tensor_desc_elements(&c->out[i]);
                for (size_t j = 0; j < n; j++) {
                    const float want = t == PDNN_FLOAT16 ? pdnn__f16_to_f32(pdnn__f32_to_f16(ref[i][j]))
                                                          : pdnn__bf16_to_f32(pdnn__f32_to_bf16(ref[i][j]));
                    cr_assert(memcmp(&want, &got[i][j], 4) == 0, "%s in %s: element %zu is %.9g, not %.9g", c->name,
                              pdnn__dtype_name(t), j, (double)got[i][j], (double)want);
                }
                free(ref[i]);
                free(got[i]);
                pdnn_tensor_release(out[i]);
            }
            for (int i = 0; i < c->n_in; i++)
                pdnn_tensor_release(in[i]);
        }
    }
    pdnn_context_destroy(ctx);
}

/* Every device: a reduced dtype is computed within the dtype's rounding
 * of the host's result, or refused naming op, algorithm and dtype. */
Test(precision, every_device_computes_or_refuses_naming_the_dtype)
{
    pdnn_device *host = NULL;
    pdnn_context *ctx = host_context(&host);
    int refused = 0;
    for (int dv = 1; dv < pdnn_device_count(ctx); dv++) {
        pdnn_device *dev = NULL;
        pdnn_device_get(ctx, dv, &dev);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const op_case *c = &cases[k];
            for (int r = 0; r < 2; r++) {
                const pdnn_dtype t = reduced[r];
                float *got[2] = {NULL}, *ref[2] = {NULL};
                const pdnn_status st = run_case(c, dev, t, got);
                /* OpenCL stores these in both dtypes (kernels over REAL_T;
                 * convolution through direct, which has no residual
                 * epilogue: the residual case is refused, by name; the
                 * gradients, depthwise ones too, through AUTO's choice) */
                const int cl_has = strcmp(backend_of(dev), "opencl") == 0 &&
                                   (strcmp(c->name, "activation") == 0 || strcmp(c->name, "binary") == 0 ||
                                    strcmp(c->name, "pool2d") == 0 || strcmp(c->name, "pool2d_bwd") == 0 ||
                                    strncmp(c->name, "conv2d_bwd_", 11) == 0 ||
                                    (strcmp(c->name, "conv2d") == 0 && c->n_in == 2));
                cr_assert(st == PDNN_SUCCESS || !cl_has, "%s in %s on opencl: %s", c->name, pdnn__dtype_name(t),
                          pdnn_last_error());
                /* CUDA: cuDNN's half and bfloat16 paths (convolution without
                 * the capped relu the residual case asks for, pooling,
                 * activations, cudnnOpTensor's binary ops) and cuBLAS's
                 * GemmEx; transpose, softmax and reduce have none yet. */
                const int cu_has = strcmp(backend_of(dev), "cuda") == 0 &&
                                   (strcmp(c->name, "activation") == 0 || strcmp(c->name, "binary") == 0 ||
                                    strcmp(c->name, "pool2d") == 0 || strcmp(c->name, "pool2d_bwd") == 0 ||
                                    strcmp(c->name, "matmul") == 0 || strcmp(c->name, "conv2d_bwd_filter") == 0 ||
                                    (strcmp(c->name, "conv2d") == 0 && c->n_in == 2));
                cr_assert(st == PDNN_SUCCESS || !cu_has, "%s in %s on cuda: %s", c->name, pdnn__dtype_name(t),
                          pdnn_last_error());
                if (st != PDNN_SUCCESS) {
                    const char *e = pdnn_last_error();
                    cr_assert_eq(st, PDNN_ERR_UNSUPPORTED, "%s on %s: %s", c->name, backend_of(dev), e);
                    cr_assert(strstr(e, c->name) && strstr(e, pdnn__dtype_name(t)) && strstr(e, "algorithm"),
                              "%s on %s: the refusal names neither the op, the dtype nor an algorithm: %s", c->name,
                              backend_of(dev), e);
                    refused++;
                    continue;
                }
                cr_assert_eq(run_case(c, host, t, ref), PDNN_SUCCESS);
                if (!got[0] || !ref[0]) { /* run_case fetched both (said for the analyzer) */
                    cr_assert_fail("%s: no output", c->name);
                    continue;
                }
                const size_t n = (size_t)pdnn_tensor_desc_elements(&c->out[0]);
                /* two roundings of float32 results that differ by float32's
                 * summation order: a few units of t's last place */
                const double ulp = t == PDNN_FLOAT16 ? 0x1p-10 : 0x1p-7;
                for (size_t j = 0; j < n; j++)
                    cr_assert(fabs((double)got[0][j] - ref[0][j]) <= 2 * ulp * (1e-3 + fabs((double)ref[0][j])),
                              "%s in %s on %s: element %zu is %.7g, host %.7g", c->name, pdnn__dtype_name(t),
                              backend_of(dev), j, (double)got[0][j], (double)ref[0][j]);
                free(got[0]);
                free(ref[0]);
            }
        }
    }
    /* no OpenCL matmul, transpose, ... takes float16 yet: the guard spoke */
    if (pdnn_device_count(ctx) > 1)
        cr_assert_gt(refused, 0);
    pdnn_context_destroy(ctx);
}

Test(precision, forced_algorithm_without_the_dtype_is_refused_by_name)
{
    pdnn_context *ctx = th_context();
    for (int dv = 1; dv < pdnn_device_count(ctx); dv++) {
        pdnn_device *dev = NULL;
        pdnn_device_get(ctx, dv, &dev);
        if (strcmp(backend_of(dev), "opencl") != 0)
            continue;
        const pdnn_tensor_desc xd = NCHW(1, 4, 8, 8), wd = {PDNN_FLOAT32, PDNN_OIHW, {4, 4, 3, 3}, 4};
        pdnn_tensor *x = make(dev, xd, PDNN_FLOAT16, NULL), *w = make(dev, wd, PDNN_FLOAT16, NULL);
        pdnn_tensor *y = make(dev, (pdnn_tensor_desc)NCHW(1, 4, 6, 6), PDNN_FLOAT16, NULL);
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.algorithm = PDNN_CONV_ALGO_TILED;
        cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_ERR_UNSUPPORTED);
        const char *e = pdnn_last_error();
        cr_assert(strstr(e, "tiled") && strstr(e, "float16") && strstr(e, "conv2d"), "%s", e);
        pdnn_tensor_release(x);
        pdnn_tensor_release(w);
        pdnn_tensor_release(y);
    }
    pdnn_context_destroy(ctx);
}

Test(precision, mixed_and_integer_dtypes_are_refused)
{
    pdnn_device *host = NULL;
    pdnn_context *ctx = host_context(&host);
    const pdnn_tensor_desc d = ND3(2, 3, 4);
    pdnn_tensor *h = make(host, d, PDNN_FLOAT16, NULL), *b = make(host, d, PDNN_BFLOAT16, NULL);
    pdnn_tensor *f = make(host, d, PDNN_FLOAT32, NULL), *i = make(host, d, PDNN_INT32, NULL);
    cr_assert_eq(pdnn_binary(h, b, PDNN_BINARY_ADD, f), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "float16") && strstr(pdnn_last_error(), "bfloat16"), "%s",
              pdnn_last_error());
    cr_assert_eq(pdnn_activation_forward(h, PDNN_ACTIVATION_SIGMOID, 0, 0, f), PDNN_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(pdnn_last_error(), "float16") && strstr(pdnn_last_error(), "float32"), "%s",
              pdnn_last_error());
    cr_assert_eq(pdnn_activation_forward(i, PDNN_ACTIVATION_SIGMOID, 0, 0, i), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "int32"), "%s", pdnn_last_error());
    /* the ops through a backend slot have no reduced path anywhere */
    cr_assert_eq(pdnn_relu(h, h), PDNN_ERR_UNSUPPORTED);
    cr_assert(strstr(pdnn_last_error(), "pdnn_relu") && strstr(pdnn_last_error(), "float16"), "%s",
              pdnn_last_error());
    pdnn_tensor *ts[] = {h, b, f, i};
    for (int k = 0; k < 4; k++)
        pdnn_tensor_release(ts[k]);
    pdnn_context_destroy(ctx);
}

/* DLPack: float16 {kDLFloat, 16} and bfloat16 {kDLBfloat, 16}, exported
 * and imported back zero-copy (torch's side: tests/test_python_precision.py). */
Test(precision, dlpack_carries_float16_and_bfloat16)
{
    pdnn_device *host = NULL;
    pdnn_context *ctx = host_context(&host);
    const pdnn_tensor_desc d = ND3(2, 3, 5);
    float v[30];
    th_fill(v, 30, 5);
    for (int r = 0; r < 2; r++) {
        const pdnn_dtype t = reduced[r];
        pdnn_tensor *x = make(host, d, t, v);
        DLManagedTensor *m = NULL;
        cr_assert_eq(pdnn_tensor_to_dlpack(x, &m), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(m->dl_tensor.dtype.code, t == PDNN_FLOAT16 ? kDLFloat : kDLBfloat);
        cr_assert_eq(m->dl_tensor.dtype.bits, 16);
        cr_assert_eq(m->dl_tensor.ndim, 3);
        const uint16_t *raw = m->dl_tensor.data;
        for (int i = 0; i < 30; i++)
            cr_assert_eq(raw[i], t == PDNN_FLOAT16 ? pdnn__f32_to_f16(v[i]) : pdnn__f32_to_bf16(v[i]));
        pdnn_tensor *back = NULL;
        cr_assert_eq(pdnn_tensor_from_dlpack(ctx, m, PDNN_DLPACK_ACTIVATION, &back), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        pdnn_tensor_desc bd;
        pdnn_tensor_get_desc(back, &bd);
        cr_assert_eq(bd.dtype, t);
        float *w = fetch(back), *want = fetch(x);
        cr_assert(memcmp(w, want, sizeof v) == 0);
        free(w);
        free(want);
        pdnn_tensor_release(back);
        pdnn_tensor_release(x);
    }
    pdnn_context_destroy(ctx);
}

/* A frozen float16 filter (pdnn_tensor_freeze: algorithms may keep a
 * packed copy on it) gives the unfrozen result on every device, call
 * after call: the host computes through float32 copies, and no algorithm
 * packs the float16 bytes as float32. */
Test(precision, frozen_filter_in_float16)
{
    pdnn_device *host = NULL;
    pdnn_context *ctx = host_context(&host);
    const pdnn_tensor_desc xd = NCHW(2, 16, 9, 9), wd = {PDNN_FLOAT32, PDNN_OIHW, {32, 16, 3, 3}, 4},
                           yd = NCHW(2, 32, 9, 9);
    float xv[2 * 16 * 81], wv[32 * 16 * 9];
    th_fill(xv, 2 * 16 * 81, 11);
    th_fill(wv, 32 * 16 * 9, 12);
    for (int dv = 0; dv < pdnn_device_count(ctx); dv++) {
        pdnn_device *dev = NULL;
        pdnn_device_get(ctx, dv, &dev);
        pdnn_tensor *x = make(dev, xd, PDNN_FLOAT16, xv), *w = make(dev, wd, PDNN_FLOAT16, wv);
        pdnn_tensor *wf = make(dev, wd, PDNN_FLOAT16, wv), *y = make(dev, yd, PDNN_FLOAT16, NULL);
        pdnn_tensor *yf = make(dev, yd, PDNN_FLOAT16, NULL);
        cr_assert_eq(pdnn_tensor_freeze(wf), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_conv2d_params p;
        pdnn_conv2d_params_init(&p);
        p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
        const pdnn_status st = pdnn_conv2d_forward(&p, x, w, NULL, y);
        if (st == PDNN_SUCCESS) {
            float *want = fetch(y);
            for (int rep = 0; rep < 2; rep++) {
                cr_assert_eq(pdnn_conv2d_forward(&p, x, wf, NULL, yf), PDNN_SUCCESS, "%s", pdnn_last_error());
                float *got = fetch(yf);
                cr_assert(memcmp(got, want, sizeof(float) * 2 * 32 * 81) == 0, "%s: the frozen filter's run %d differs",
                          backend_of(dev), rep);
                free(got);
            }
            free(want);
        } else {
            cr_assert_eq(st, PDNN_ERR_UNSUPPORTED, "%s", pdnn_last_error());
        }
        pdnn_tensor *ts[] = {x, w, wf, y, yf};
        for (int i = 0; i < 5; i++)
            pdnn_tensor_release(ts[i]);
    }
    pdnn_context_destroy(ctx);
}

/* White-box: through run_reduced an algorithm never keeps a packed copy
 * on a frozen float16 filter (it sees a float32 copy), so its plan must
 * size the workspace for the packing: wpack 0 in float16, where float32's
 * plan of the same call keeps one (oneDNN's blocked filter). */
Test(precision, reduced_plan_keeps_no_packed_filter)
{
    pdnn_device *host = NULL;
    pdnn_context *ctx = host_context(&host);
    const pdnn__algo *a = pdnn__algo_find(host, PDNN__OP_CONV2D_FWD, "onednn");
    if (!a) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no oneDNN in this build");
    }
    /* 2 x 32 x 24 x 24 outputs of 16 x 3 x 3: big enough (2^23 FLOPs) for
     * float32 to take oneDNN's blocked layouts. */
    const pdnn_tensor_desc xd = NCHW(2, 16, 24, 24), wd = {PDNN_FLOAT32, PDNN_OIHW, {32, 16, 3, 3}, 4};
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
    const int64_t od[4] = {2, 32, 24, 24};
    size_t wpack[2] = {0, 0};
    for (int r = 0; r < 2; r++) {
        const pdnn_dtype t = r ? PDNN_FLOAT16 : PDNN_FLOAT32;
        pdnn_tensor *w = make(host, wd, t, NULL);
        cr_assert_eq(pdnn_tensor_freeze(w), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn__op_call call;
        memset(&call, 0, sizeof call);
        call.op = PDNN__OP_CONV2D_FWD;
        call.dtype = t;
        pdnn_tensor_desc xt = xd, wt = wd;
        xt.dtype = wt.dtype = t;
        pdnn__conv_call_from(&p, &xt, &wt, PDNN_NCHW, od, &call.u.conv2d);
        call.u.conv2d.w_const = w;
        pdnn__plan plan;
        pdnn__plan_for(host, a, &call, &plan);
        cr_assert(plan.supported, "%s", plan.why);
        wpack[r] = plan.wpack;
        pdnn_tensor_release(w);
    }
    cr_assert_gt(wpack[0], 0, "float32 keeps no packed filter here: the case shows nothing");
    cr_assert_eq(wpack[1], 0, "float16's plan keeps %zu bytes on a tensor its run never sees", wpack[1]);
    pdnn_context_destroy(ctx);
}

/* OpenCL's grouped backward kernels widen each element as loaded (float16
 * through the prelude's F16_LOAD_INLINE, integer operations): a depthwise
 * 1x1 backward data with a filter of ones gives dx = dy, and backward
 * filter over one pixel dw = x, so every pattern of the dtype must come
 * back as itself from each algorithm that reads it in place: normals,
 * subnormals, infinities; a NaN as a NaN, -0 as a zero (the float32 sum
 * starts at +0). */
Test(precision, grouped_gradients_widen_every_value_exactly)
{
    enum { N = 65536 };
    pdnn_context *ctx = th_context();
    static const char *const data_algos[] = {"direct", "implicit_gemm"};
    for (int dv = 1; dv < pdnn_device_count(ctx); dv++) {
        pdnn_device *dev = NULL;
        pdnn_device_get(ctx, dv, &dev);
        if (strcmp(backend_of(dev), "opencl") != 0)
            continue;
        for (int r = 0; r < 2; r++) {
            const pdnn_dtype t = reduced[r];
            const pdnn_tensor_desc xd = NCHW(1, N, 1, 1), wd = {PDNN_FLOAT32, PDNN_OIHW, {N, 1, 1, 1}, 4};
            uint16_t *bits = malloc(N * sizeof *bits);
            float *one = malloc(N * sizeof *one), *want = malloc(N * sizeof *want);
            for (int i = 0; i < N; i++) {
                bits[i] = (uint16_t)i;
                one[i] = 1.0f;
                want[i] = t == PDNN_FLOAT16 ? pdnn__f16_to_f32(bits[i]) : pdnn__bf16_to_f32(bits[i]);
            }
            pdnn_tensor *v = make(dev, xd, t, NULL), *w = make(dev, wd, t, one), *out = make(dev, xd, t, NULL);
            pdnn_tensor *ones = make(dev, xd, t, one), *dw = make(dev, wd, t, NULL);
            cr_assert_eq(pdnn_tensor_write(v, bits, N * sizeof *bits), PDNN_SUCCESS, "%s", pdnn_last_error());
            pdnn_conv2d_params p;
            pdnn_conv2d_params_init(&p);
            p.groups = N;
            for (int a = 0; a < 3; a++) {
                const int filter = a == 2;
                const pdnn__op op = filter ? PDNN__OP_CONV2D_BWD_FILTER : PDNN__OP_CONV2D_BWD_DATA;
                pdnn__dispatch_force(op, filter ? "direct" : data_algos[a], -1);
                const pdnn_status st = filter ? pdnn_conv2d_backward_filter(&p, v, ones, dw)
                                              : pdnn_conv2d_backward_data(&p, v, w, out);
                pdnn__dispatch_force(op, NULL, -1);
                cr_assert_eq(st, PDNN_SUCCESS, "%s %s in %s: %s", pdnn__op_name(op), filter ? "direct" : data_algos[a],
                             pdnn__dtype_name(t), pdnn_last_error());
                float *got = fetch(filter ? dw : out);
                for (int i = 0; i < N; i++)
                    cr_assert(isnan(want[i]) ? isnan(got[i]) != 0 : got[i] == want[i],
                              "%s %s in %s: 0x%04x (%.9g) came back as %.9g", pdnn__op_name(op),
                              filter ? "direct" : data_algos[a], pdnn__dtype_name(t), (unsigned)i, (double)want[i],
                              (double)got[i]);
                free(got);
            }
            pdnn_tensor_release(v);
            pdnn_tensor_release(w);
            pdnn_tensor_release(out);
            pdnn_tensor_release(ones);
            pdnn_tensor_release(dw);
            free(bits);
            free(one);
            free(want);
        }
    }
    pdnn_context_destroy(ctx);
}

#ifdef PDNN_HAVE_OPENCL
/* One OpenCL run of case cs (below) in dtype t by algo, its filter frozen
 * (its packed copy kept on it, read back from it on the second call) or
 * not (packed into the workspace): y's raw bytes (malloc'd), the kept
 * copy's bytes in *kept. */
typedef struct pack_case {
    const char *algo;
    pdnn_layout xl, wl;
    int64_t c, h, w, k, r;
} pack_case;
static void *pack_run(pdnn_device *dev, const pack_case *cs, pdnn_dtype t, int frozen, size_t *kept)
{
    const pdnn_tensor_desc xd = {PDNN_FLOAT32, cs->xl, {2, cs->c, cs->h, cs->w}, 4},
                           wd = {PDNN_FLOAT32, cs->wl, {cs->k, cs->c, cs->r, cs->r}, 4},
                           yd = {PDNN_FLOAT32, cs->xl, {2, cs->k, cs->h, cs->w}, 4};
    const size_t nx = (size_t)(2 * cs->c * cs->h * cs->w), nw = (size_t)(cs->k * cs->c * cs->r * cs->r),
                 ny = (size_t)(2 * cs->k * cs->h * cs->w);
    float *xv = malloc(nx * sizeof *xv), *wv = malloc(nw * sizeof *wv);
    th_fill(xv, nx, 21);
    th_fill(wv, nw, 22);
    pdnn_tensor *x = make(dev, xd, t, xv), *w = make(dev, wd, t, wv), *y = make(dev, yd, t, NULL);
    free(xv);
    free(wv);
    if (frozen)
        cr_assert_eq(pdnn_tensor_freeze(w), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.algorithm = (pdnn_conv_algo)pdnn_conv_algo_parse(cs->algo);
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = (int)(cs->r / 2);
    for (int rep = 0; rep < 2; rep++)
        cr_assert_eq(pdnn_conv2d_forward(&p, x, w, NULL, y), PDNN_SUCCESS, "%s: %s", cs->algo, pdnn_last_error());
    *kept = w->pack.bytes;
    void *raw = malloc(ny * 2);
    cr_assert_eq(pdnn_tensor_read(y, raw, ny * 2), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_release(x);
    pdnn_tensor_release(w);
    pdnn_tensor_release(y);
    return raw;
}
#endif

/* White-box: gemm_1x1 and implicit_gemm on OpenCL keep a float16 or
 * bfloat16 call's packed filter in that dtype where the device packs so
 * (GPU-class devices; PoCL under the --gpu-class hook), half float32's
 * bytes, and the result is bit for bit the float32 pack's (each kernel
 * widens the same values and sums in the same order), kept (frozen) or
 * packed per call: gemm_1x1's tiles kernel (NHWC), its rows kernel over
 * an HWIO filter's K x C copy (NCHW, 28x29), implicit_gemm (3x3). */
Test(precision, opencl_packs_reduced_filters_in_their_dtype)
{
#ifndef PDNN_HAVE_OPENCL
    cr_skip_test("no OpenCL in this build");
#else
    pdnn_device *host = NULL, *dev = NULL;
    pdnn_context *ctx = host_context(&host);
    for (int dv = 0; dv < pdnn_device_count(ctx) && !dev; dv++) {
        pdnn_device *d = NULL;
        pdnn_device_get(ctx, dv, &d);
        if (strcmp(backend_of(d), "opencl") == 0)
            dev = d;
    }
    if (!dev) {
        pdnn_context_destroy(ctx);
        cr_skip_test("no OpenCL device");
    }
    static const pack_case cases[] = {{"gemm_1x1", PDNN_NHWC, PDNN_OHWI, 24, 5, 7, 40, 1},
                                      {"gemm_1x1", PDNN_NCHW, PDNN_HWIO, 5, 28, 29, 6, 1},
                                      {"implicit_gemm", PDNN_NCHW, PDNN_OIHW, 12, 6, 7, 20, 3}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int ti = 0; ti < 2; ti++) {
            const pack_case *cs = &cases[ci];
            const size_t ny = (size_t)(2 * cs->k * cs->h * cs->w) * 2;
            size_t kept[2] = {0, 0}, unused = 0;
            void *got[3];
            for (int gpu = 0; gpu < 2; gpu++) {
                pdnn__opencl_gpu_class_everywhere(gpu);
                got[gpu] = pack_run(dev, cs, reduced[ti], 1, &kept[gpu]);
            }
            got[2] = pack_run(dev, cs, reduced[ti], 0, &unused); /* packed per call, --gpu-class still on */
            pdnn__opencl_gpu_class_everywhere(0);
            cr_assert_gt(kept[0], 0, "%s (case %zu) kept no packed filter: the case shows nothing", cs->algo, ci);
            cr_assert_eq(kept[1] * 2, kept[0], "%s (case %zu) in %s: the kept pack is %zu bytes, float32's %zu",
                         cs->algo, ci, pdnn__dtype_name(reduced[ti]), kept[1], kept[0]);
            for (int g = 1; g < 3; g++)
                cr_assert(memcmp(got[g], got[0], ny) == 0, "%s (case %zu) in %s: the %s differs from float32's pack's",
                          cs->algo, ci, pdnn__dtype_name(reduced[ti]),
                          g == 1 ? "kept reduced pack's result" : "per-call reduced pack's result");
            for (int g = 0; g < 3; g++)
                free(got[g]);
        }
    pdnn_context_destroy(ctx);
#endif
}
