/* Every kernels_cl/ file builds warning-free with every option set the
 * OpenCL backend uses: each algorithm of each op is run at each of its
 * configurations (so the code itself chooses the -D options), with the
 * program binary cache off and a fresh cache directory, so that every
 * program is compiled from source here; then each build log the driver
 * returned (clGetProgramBuildInfo, recorded by the kernel cache) must be
 * empty. A warning is a kernel bug, and PoCL's clang also prints
 * "N warnings generated." straight to the user's terminal. */
#include "backend.h"
#include "core/context.h"
#include "ops/dispatch.h"
#include "helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PDNN_HAVE_OPENCL
#include "backends/opencl/cl_hooks.h"
#include "backends/opencl/cl_sources.h"

static char dir[64];

static pdnn_device *opencl_device(pdnn_context *ctx)
{
    for (int i = 0; i < pdnn_device_count(ctx); i++) {
        pdnn_device *d = NULL;
        pdnn_device_info info;
        if (pdnn_device_get(ctx, i, &d) == PDNN_SUCCESS && pdnn_device_get_info(d, &info) == PDNN_SUCCESS &&
            strcmp(info.backend, "opencl") == 0)
            return d;
    }
    return NULL;
}

/* One conv on dev, its tensors stored in t; a refusal (the algorithm or
 * configuration does not apply to this shape) is fine: another shape
 * covers it. */
static void conv(pdnn_device *dev, pdnn_layout l, int64_t c, int64_t k, int64_t r, int groups, pdnn_dtype t)
{
    pdnn_tensor_desc xd = th_desc(l, 2, c, 9, 10);
    pdnn_tensor_desc wd = th_desc(l == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW, k, c / groups, r, r);
    xd.dtype = wd.dtype = t;
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    p.groups = groups;
    p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = (int)(r / 2);
    int64_t od[4];
    cr_assert_eq(pdnn_conv2d_output_dims(&xd, &wd, &p, od), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc yd = th_desc(l, od[0], od[1], od[2], od[3]);
    yd.dtype = t;
    pdnn_tensor *x = th_upload(dev, &xd, NULL), *w = th_upload(dev, &wd, NULL), *y = th_upload(dev, &yd, NULL);
    pdnn_conv2d_forward(&p, x, w, NULL, y);
    pdnn_tensor_release(x);
    pdnn_tensor_release(w);
    pdnn_tensor_release(y);
}

static void pool(pdnn_device *dev, pdnn_layout l, pdnn_pool_mode mode)
{
    pdnn_tensor_desc xd = th_desc(l, 2, 5, 9, 10);
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    p.mode = mode;
    p.window_h = p.window_w = 3;
    int64_t od[4];
    cr_assert_eq(pdnn_pool2d_output_dims(&xd, &p, od), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc yd = th_desc(l, od[0], od[1], od[2], od[3]);
    pdnn_tensor *x = th_upload(dev, &xd, NULL), *y = th_upload(dev, &yd, NULL);
    pdnn_pool2d_forward(&p, x, y);
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
}

/* The backward ops on one 3x3 convolution and one 3x3 pooling; 16 input
 * channels, so that every channel tile of a backward configuration runs. */
static void backward(pdnn_device *dev, pdnn__op op, pdnn_layout l, pdnn_dtype t)
{
    pdnn_tensor_desc xd = th_desc(l, 2, 16, 9, 10);
    pdnn_tensor_desc wd = th_desc(l == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW, 16, 16, 3, 3);
    pdnn_tensor_desc yd = th_desc(l, 2, 16, 7, 8), bd = th_desc(PDNN_LAYOUT_X, 16, 1, 1, 1);
    pdnn_tensor_desc pyd = th_desc(l, 2, 16, 7, 8);
    xd.dtype = wd.dtype = yd.dtype = bd.dtype = pyd.dtype = t;
    pdnn_tensor *x = th_upload(dev, &xd, NULL), *w = th_upload(dev, &wd, NULL), *dy = th_upload(dev, &yd, NULL);
    pdnn_tensor *dx = th_upload(dev, &xd, NULL), *dw = th_upload(dev, &wd, NULL), *db = th_upload(dev, &bd, NULL);
    pdnn_tensor *pdy = th_upload(dev, &pyd, NULL);
    pdnn_conv2d_params p;
    pdnn_conv2d_params_init(&p);
    pdnn_pool2d_params pp;
    pdnn_pool2d_params_init(&pp);
    pp.window_h = pp.window_w = 3;
    pp.stride_h = pp.stride_w = 1;
    if (op == PDNN__OP_CONV2D_BWD_DATA)
        pdnn_conv2d_backward_data(&p, dy, w, dx);
    else if (op == PDNN__OP_CONV2D_BWD_FILTER) {
        pdnn_conv2d_backward_filter(&p, x, dy, dw);
        /* and a 1x1 filter (gemm's NCHW kernel), dy of x's size */
        pdnn_tensor_desc w1 = th_desc(l == PDNN_NHWC ? PDNN_OHWI : PDNN_OIHW, 16, 16, 1, 1);
        w1.dtype = t;
        pdnn_tensor *dw1 = th_upload(dev, &w1, NULL);
        pdnn_conv2d_backward_filter(&p, x, dx, dw1);
        pdnn_tensor_release(dw1);
    }
    else if (op == PDNN__OP_CONV2D_BWD_BIAS)
        pdnn_conv2d_backward_bias(dy, db);
    else
        pdnn_pool2d_backward(&pp, x, pdy, dx);
    pdnn_tensor *ts[] = {x, w, dy, dx, dw, db, pdy};
    for (int i = 0; i < 7; i++)
        pdnn_tensor_release(ts[i]);
}

/* Batch normalization: training forward, inference, backward. */
static void batch_norm(pdnn_device *dev, pdnn_layout l)
{
    pdnn_tensor_desc xd = th_desc(l, 2, 8, 9, 10), vd = th_desc(PDNN_LAYOUT_X, 8, 1, 1, 1);
    pdnn_tensor *x = th_upload(dev, &xd, NULL), *y = th_upload(dev, &xd, NULL), *v[6];
    for (int i = 0; i < 6; i++)
        v[i] = th_upload(dev, &vd, NULL);
    pdnn_batch_norm_params p;
    pdnn_batch_norm_params_init(&p);
    cr_assert_eq(pdnn_batch_norm_forward(&p, x, v[0], v[1], v[2], v[3], v[4], v[5], y), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    cr_assert_eq(pdnn_batch_norm_backward(&p, x, x, v[0], v[4], v[5], y, v[1], v[2]), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    p.training = 0;
    cr_assert_eq(pdnn_batch_norm_forward(&p, x, v[0], v[1], v[2], v[3], NULL, NULL, y), PDNN_SUCCESS, "%s",
                 pdnn_last_error());
    pdnn_tensor_release(x);
    pdnn_tensor_release(y);
    for (int i = 0; i < 6; i++)
        pdnn_tensor_release(v[i]);
}

/* The ops without algorithm tables, and the peak probe. */
static void others(pdnn_device *dev)
{
    pdnn_tensor_desc md = th_desc(PDNN_NCHW, 4, 6, 1, 1), bd = th_desc(PDNN_LAYOUT_X, 6, 1, 1, 1);
    pdnn_tensor_desc sq = th_desc(PDNN_NCHW, 6, 6, 1, 1);
    pdnn_tensor *a = th_upload(dev, &md, NULL), *b = th_upload(dev, &md, NULL), *y = th_upload(dev, &md, NULL);
    pdnn_tensor *bias = th_upload(dev, &bd, NULL), *s = th_upload(dev, &sq, NULL);
    cr_assert_eq(pdnn_add(a, b, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_bias_add(a, bias, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_relu(a, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax(a, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_matmul(a, s, 0, 0, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    /* The training ops (train.cl). */
    cr_assert_eq(pdnn_relu_backward(a, b, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_desc ld = th_desc(PDNN_LAYOUT_X, 4, 1, 1, 1), od = th_desc(PDNN_LAYOUT_X, 1, 1, 1, 1);
    ld.dtype = PDNN_INT32;
    const int32_t labels[4] = {0, 1, 2, 5};
    pdnn_tensor *lab = NULL, *loss = th_upload(dev, &od, NULL);
    cr_assert_eq(pdnn_tensor_create(dev, &ld, &lab), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_tensor_write(lab, labels, sizeof labels), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax_cross_entropy(a, lab, loss, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_optimizer_params op;
    pdnn_tensor *v = th_upload(dev, &md, NULL);
    for (int kind = 0; kind < 2; kind++) {
        pdnn_optimizer_params_init(&op, (pdnn_optimizer_kind)kind);
        op.momentum = 0.9f;
        cr_assert_eq(pdnn_optimizer_update(&op, 1, y, a, b, v), PDNN_SUCCESS, "%s", pdnn_last_error());
    }
    pdnn_tensor_release(lab);
    pdnn_tensor_release(loss);
    pdnn_tensor_release(v);
    /* The N-d math (nd_math.cl): each kernel of the file once. */
    const int perm[4] = {1, 0, 2, 3}, axis[1] = {1};
    pdnn_tensor_desc td = th_desc(PDNN_NCHW, 6, 4, 1, 1), rd = th_desc(PDNN_NCHW, 4, 1, 1, 1);
    pdnn_tensor *t = th_upload(dev, &td, NULL), *r = th_upload(dev, &rd, NULL);
    cr_assert_eq(pdnn_transpose(a, perm, t), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax_axis(a, 1, 1, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_softmax_axis(a, 0, 0, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_layer_norm(a, 1, 1e-5f, bias, bias, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_reduce(a, axis, 1, PDNN_REDUCTION_MEAN, r), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_release(t);
    pdnn_tensor_release(r);
    /* The N-d ops' backward (nd_grad.cl): layer norm's dx, then dscale. */
    pdnn_tensor *col = th_upload(dev, &bd, NULL);
    cr_assert_eq(pdnn__layer_norm_backward(a, b, bias, 1, 1e-5f, 0, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn__layer_norm_backward(a, b, bias, 1, 1e-5f, 1, col), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_release(col);
    /* The data movement (index.cl): each kernel of the file once. */
    const int64_t st0[1] = {0}, en3[1] = {3}, ax1[1] = {1}, one[1] = {1};
    pdnn_tensor_desc sd = th_desc(PDNN_NCHW, 4, 3, 1, 1);
    pdnn_tensor *sl = th_upload(dev, &sd, NULL);
    cr_assert_eq(pdnn_slice(a, 1, st0, en3, ax1, one, sl), PDNN_SUCCESS, "%s", pdnn_last_error());
    cr_assert_eq(pdnn_where(a, a, b, y), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_release(sl);
    double gflops = 0, gbs = 0;
    cr_assert_eq(pdnn_device_measure_peak(dev, &gflops, &gbs), PDNN_SUCCESS, "%s", pdnn_last_error());
    pdnn_tensor_release(a);
    pdnn_tensor_release(b);
    pdnn_tensor_release(y);
    pdnn_tensor_release(bias);
    pdnn_tensor_release(s);
}

/* float16 and bfloat16 (issue 43): every cast, and the kernels built
 * over the prelude's REAL_T (-DPDNN_REAL=1, 2): activation, binary,
 * pooling (one program for every pooling kernel), direct convolution,
 * batch norm. */
static void reduced_precision(pdnn_device *dev)
{
    static const pdnn_dtype types[] = {PDNN_FLOAT32, PDNN_FLOAT16, PDNN_BFLOAT16};
    pdnn_tensor *t[3];
    for (int i = 0; i < 3; i++) {
        pdnn_tensor_desc d = th_desc(PDNN_NCHW, 2, 3, 9, 10);
        d.dtype = types[i];
        cr_assert_eq(pdnn_tensor_create(dev, &d, &t[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (i != j)
                cr_assert_eq(pdnn_cast(t[i], t[j]), PDNN_SUCCESS, "%s", pdnn_last_error());
    /* same-dtype casts: a second tensor of each */
    for (int i = 0; i < 3; i++) {
        pdnn_tensor_desc d = th_desc(PDNN_NCHW, 2, 3, 9, 10);
        d.dtype = types[i];
        pdnn_tensor *u = NULL;
        cr_assert_eq(pdnn_tensor_create(dev, &d, &u), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_cast(t[i], u), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor_release(u);
    }
    pdnn_pool2d_params p;
    pdnn_pool2d_params_init(&p);
    for (int i = 1; i < 3; i++) {
        pdnn_tensor_desc d = th_desc(PDNN_NCHW, 2, 3, 4, 5);
        d.dtype = types[i];
        pdnn_tensor *y = NULL;
        cr_assert_eq(pdnn_tensor_create(dev, &d, &y), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_activation_forward(t[i], PDNN_ACTIVATION_SIGMOID, 0, 0, t[i]), PDNN_SUCCESS, "%s",
                     pdnn_last_error());
        cr_assert_eq(pdnn_binary(t[i], t[i], PDNN_BINARY_MUL, t[i]), PDNN_SUCCESS, "%s", pdnn_last_error());
        static const char *const scalar[] = {"fast", "direct"};
        for (int a = 0; a < 2; a++) {
            pdnn__dispatch_force(PDNN__OP_POOL2D_FWD, scalar[a], -1);
            cr_assert_eq(pdnn_pool2d_forward(&p, t[i], y), PDNN_SUCCESS, "%s", pdnn_last_error());
        }
        pdnn__dispatch_force(PDNN__OP_POOL2D_FWD, NULL, -1);
        pdnn_tensor_release(y);
        /* conv2d_direct over REAL_T */
        pdnn_tensor_desc wd = th_desc(PDNN_OIHW, 3, 3, 3, 3);
        wd.dtype = types[i];
        pdnn_tensor *w = NULL;
        cr_assert_eq(pdnn_tensor_create(dev, &wd, &w), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_conv2d_params cp;
        pdnn_conv2d_params_init(&cp);
        cp.pad_top = cp.pad_bottom = cp.pad_left = cp.pad_right = 1;
        pdnn_tensor *u = NULL;
        pdnn_tensor_desc ud = th_desc(PDNN_NCHW, 2, 3, 9, 10);
        ud.dtype = types[i];
        cr_assert_eq(pdnn_tensor_create(dev, &ud, &u), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_conv2d_forward(&cp, t[i], w, NULL, u), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_tensor_release(u);
        pdnn_tensor_release(w);
        /* batch norm over REAL_T: training (statistics from the float32
         * workspace) and inference (the running ones, -DBN_STATS_REAL) */
        pdnn_tensor_desc vd = {types[i], PDNN_LAYOUT_X, {3, 1, 1, 1}, 1};
        pdnn_tensor *v[4];
        for (int k = 0; k < 4; k++)
            cr_assert_eq(pdnn_tensor_create(dev, &vd, &v[k]), PDNN_SUCCESS, "%s", pdnn_last_error());
        cr_assert_eq(pdnn_tensor_create(dev, &ud, &u), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn_batch_norm_params bp;
        pdnn_batch_norm_params_init(&bp);
        for (bp.training = 0; bp.training < 2; bp.training++)
            cr_assert_eq(pdnn_batch_norm_forward(&bp, t[i], v[0], v[1], v[2], v[3], NULL, NULL, u), PDNN_SUCCESS,
                         "%s", pdnn_last_error());
        pdnn_tensor_release(u);
        for (int k = 0; k < 4; k++)
            pdnn_tensor_release(v[k]);
        /* matmul over REAL_T, the reduced dtypes taking turns (each
         * kernel a PoCL code generation of about a second): float16
         * tiled's gemm_pack_b and gemm_nn and naive's kernel, bfloat16
         * gemm_nt and gemv_nt (one row of A) */
        pdnn_tensor_desc md = th_desc(PDNN_NCHW, 6, 6, 1, 1), rd = th_desc(PDNN_NCHW, 1, 6, 1, 1);
        md.dtype = rd.dtype = types[i];
        pdnn_tensor *mm[5]; /* A, B, C (6 x 6), a row of A and of C */
        for (int k = 0; k < 5; k++)
            cr_assert_eq(pdnn_tensor_create(dev, k < 3 ? &md : &rd, &mm[k]), PDNN_SUCCESS, "%s", pdnn_last_error());
        pdnn__dispatch_force(PDNN__OP_GEMM, "tiled", -1);
        if (i == 1) {
            cr_assert_eq(pdnn_matmul(mm[0], mm[1], 0, 0, mm[2]), PDNN_SUCCESS, "%s", pdnn_last_error());
            pdnn__dispatch_force(PDNN__OP_GEMM, "naive", -1);
            cr_assert_eq(pdnn_matmul(mm[0], mm[1], 0, 0, mm[2]), PDNN_SUCCESS, "%s", pdnn_last_error());
        } else {
            cr_assert_eq(pdnn_matmul(mm[0], mm[1], 0, 1, mm[2]), PDNN_SUCCESS, "%s", pdnn_last_error());
            cr_assert_eq(pdnn_matmul(mm[3], mm[1], 0, 1, mm[4]), PDNN_SUCCESS, "%s", pdnn_last_error());
        }
        pdnn__dispatch_force(PDNN__OP_GEMM, NULL, -1);
        for (int k = 0; k < 5; k++)
            pdnn_tensor_release(mm[k]);
    }
    for (int i = 0; i < 3; i++)
        pdnn_tensor_release(t[i]);
}

static void build_everything(pdnn_device *dev)
{
    const pdnn__algo *const *convs = pdnn__algos(dev, PDNN__OP_CONV2D_FWD);
    /* Each storage dtype an algorithm declares (-DPDNN_REAL=1, 2: issue 43). */
    static const pdnn_dtype types[] = {PDNN_FLOAT32, PDNN_FLOAT16, PDNN_BFLOAT16};
    for (int a = 0; convs[a]; a++)
        for (int ti = 0; ti < 3; ti++) {
            if (ti > 0 && !(convs[a]->dtypes & PDNN__DTYPE_BIT(types[ti])))
                continue;
            for (int cfg = -1; cfg < convs[a]->n_configs; cfg++) {
                /* The reduced dtypes take turns over the configurations
                 * (float16 the even ones, bfloat16 the odd; both the
                 * default): every configuration is built reduced, every
                 * reduced dtype with half of them, at a third less of
                 * this test's time, make check's longest. */
                if (ti > 0 && cfg >= 0 && cfg % 2 != ti - 1)
                    continue;
                pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, convs[a]->name, cfg);
                for (int l = 0; l < 2; l++) {
                    const pdnn_layout lay = l ? PDNN_NHWC : PDNN_NCHW;
                    const pdnn_dtype t = types[ti];
                    conv(dev, lay, 16, 64, 3, 1, t);  /* 3x3: direct, im2col, tiled, winograd, implicit_gemm */
                    conv(dev, lay, 16, 64, 1, 1, t);  /* 1x1: gemm_1x1 */
                    conv(dev, lay, 16, 32, 3, 16, t); /* depthwise, multiplier 2 */
                    conv(dev, lay, 64, 64, 3, 4, t);  /* groups of 16 channels */
                }
            }
        }
    /* gemm_1x1 and implicit_gemm with their filter packed in the reduced
     * dtype (-DTILE_WR), as on GPU-class devices: every configuration,
     * the dtypes taking turns as above. */
    pdnn__opencl_gpu_class_everywhere(1);
    for (int a = 0; convs[a]; a++) {
        if (strcmp(convs[a]->name, "gemm_1x1") != 0 && strcmp(convs[a]->name, "implicit_gemm") != 0)
            continue;
        for (int cfg = 0; cfg < convs[a]->n_configs; cfg++) {
            pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, convs[a]->name, cfg);
            conv(dev, PDNN_NHWC, 16, 64, convs[a]->name[0] == 'g' ? 1 : 3, 1, types[1 + cfg % 2]);
        }
    }
    pdnn__opencl_gpu_class_everywhere(0);
    pdnn__dispatch_force(PDNN__OP_CONV2D_FWD, NULL, -1);
    const pdnn__algo *const *pools = pdnn__algos(dev, PDNN__OP_POOL2D_FWD);
    for (int a = 0; pools[a]; a++) {
        pdnn__dispatch_force(PDNN__OP_POOL2D_FWD, pools[a]->name, -1);
        for (int l = 0; l < 2; l++) {
            pool(dev, l ? PDNN_NHWC : PDNN_NCHW, PDNN_POOL_MAX);
            pool(dev, l ? PDNN_NHWC : PDNN_NCHW, PDNN_POOL_AVG_EXCLUDE_PADDING);
        }
    }
    pdnn__dispatch_force(PDNN__OP_POOL2D_FWD, NULL, -1);
    static const pdnn__op bwd[] = {PDNN__OP_CONV2D_BWD_DATA, PDNN__OP_CONV2D_BWD_FILTER, PDNN__OP_CONV2D_BWD_BIAS,
                                   PDNN__OP_POOL2D_BWD};
    for (size_t o = 0; o < sizeof bwd / sizeof bwd[0]; o++) {
        const pdnn__algo *const *list = pdnn__algos(dev, bwd[o]);
        for (int a = 0; list[a]; a++)
            for (int ti = 0; ti < 3; ti++) {
                if (ti > 0 && !(list[a]->dtypes & PDNN__DTYPE_BIT(types[ti])))
                    continue;
                for (int cfg = -1; cfg < list[a]->n_configs; cfg++) {
                    if (ti > 0 && cfg >= 0 && cfg % 2 != ti - 1) /* taking turns, as the forward's */
                        continue;
                    pdnn__dispatch_force(bwd[o], list[a]->name, cfg);
                    backward(dev, bwd[o], PDNN_NCHW, types[ti]);
                    backward(dev, bwd[o], PDNN_NHWC, types[ti]);
                }
            }
        pdnn__dispatch_force(bwd[o], NULL, -1);
    }
    batch_norm(dev, PDNN_NCHW);
    batch_norm(dev, PDNN_NHWC);
    others(dev);
    reduced_precision(dev);
}

Test(kernel_build, every_kernel_file_and_option_set_builds_without_warnings, .timeout = 600)
{
    snprintf(dir, sizeof dir, "/tmp/polydnn-kbuild-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    setenv("POLYDNN_CACHE_DIR", dir, 1);
    setenv("POLYDNN_PROGRAM_CACHE", "off", 1);
    setenv("POLYDNN_TUNING", "off", 1);
    setenv("POCL_KERNEL_CACHE", "0", 1); /* PoCL's own cache: compile here too */
    unsetenv("POLYDNN_KERNEL_DIR");
    pdnn_context *ctx = th_context();
    pdnn_device *dev = opencl_device(ctx);
    if (!dev) {
        pdnn_context_destroy(ctx);
        rmdir(dir);
        cr_skip_test("no OpenCL device is present");
    }
    build_everything(dev);
    int configs = 0;
    const pdnn__algo *const *convs = pdnn__algos(dev, PDNN__OP_CONV2D_FWD);
    for (int a = 0; convs[a]; a++)
        configs += convs[a]->n_configs;
    pdnn_context_destroy(ctx);
    rmdir(dir);

    const pdnn__cl_build_record *r = NULL;
    const int n = pdnn__opencl_builds(&r);
    cr_assert_lt(n, PDNN__CL_MAX_BUILDS, "more builds than the record holds");
    /* Every file was built, and every tunable configuration: each has its
     * own options, so there are at least as many distinct builds. */
    for (size_t f = 0; f < pdnn__cl_source_count; f++) {
        int seen = 0;
        for (int i = 0; i < n; i++) {
            const char *pre = pdnn__cl_prelude_of(r[i].file); /* built as part of r[i]'s program */
            seen |= strcmp(r[i].file, pdnn__cl_sources[f].name) == 0 ||
                    (pre && strcmp(pre, pdnn__cl_sources[f].name) == 0);
        }
        cr_expect(seen, "%s was never built", pdnn__cl_sources[f].name);
    }
    cr_expect_geq(n, configs, "%d builds for %d tunable configurations", n, configs);
    /* The reduced-dtype packs' programs were among them. */
    static const char *const wr_files[] = {"conv2d_gemm_1x1.cl", "conv2d_implicit_gemm.cl"};
    for (int f = 0; f < 2; f++) {
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen += strcmp(r[i].file, wr_files[f]) == 0 && strstr(r[i].opts, "-DTILE_WR=1") != NULL;
        cr_expect_gt(seen, 0, "%s was never built with its filter packed in a reduced dtype", wr_files[f]);
    }
    int warned = 0;
    for (int i = 0; i < n; i++) {
        const char *w = strstr(r[i].opts, " -w");
        cr_assert(!w || (w[3] != '\0' && w[3] != ' '), "%s was built with -w ('%s'): warnings are hidden", r[i].file,
                  r[i].opts);
        if (r[i].log[0]) {
            warned++;
            cr_expect(0, "%s with '%s' built with a log:\n%s", r[i].file, r[i].opts, r[i].log);
        }
    }
    cr_assert_eq(warned, 0, "%d of %d builds have warnings", warned, n);
}

#else
Test(kernel_build, every_kernel_file_and_option_set_builds_without_warnings)
{
    cr_skip_test("built without OpenCL");
}
#endif
