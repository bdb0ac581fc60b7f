/* Depthwise convolution for GPUs (kernels_cl/conv2d_depthwise_wg.cl), the
 * GPU-class counterpart of `depthwise` (cl_depthwise.c, whose kernels are
 * written for CPUs): a work-group stages its input tile, halo included,
 * through local memory once and computes a tile of outputs from it. Its
 * configurations are the work-group's shape and each work-item's block,
 * one set per activation layout (the kernel whose loads are coalesced in
 * it). On CPUs it runs when asked for (and in the parity harness), but
 * AUTO passes over it there: PoCL keeps `depthwise`. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>

extern const pdnn__algo pdnn__cl_algo_depthwise_wg;

/* nhwc: dwg_nhwc, a = CB channels, b = PY work-items down the tile, each
 * rp rows x tq columns; else dwg_nchw, a = WX work-items across the tile's
 * columns, b = WY down it, each rp rows (tq unused). Every work-group is
 * a multiple of 32 work-items, 64 where the tile allows. Global loads per
 * output on a 3x3 at stride 1, inside the image: (th+2)(tw+2)/(th*tw) for
 * the input, plus in NHWC 9/(rp*tq) for the filter taps (each work-item
 * loads its channel's once): 1.9 + 0.6 for 8 x 4 pixels of 32 channels,
 * 1.3 for NCHW's 8 x 32 tile (bench/dw_intensity.py counts them). The
 * fifth NHWC entry, 4 x 4 pixels, fits where 8 x 4 does not (strides,
 * dilations and filters whose halo is wide); the last, 8 x 8 pixels
 * (1.6 + 0.3 at stride 1, 32 sums a work-item), is for the tuner. */
typedef struct dwg_cfg {
    int nhwc, a, b, rp, tq;
} dwg_cfg;
static const dwg_cfg dwg_cands[] = {
    {1, 32, 2, 4, 4}, {1, 64, 1, 4, 4}, {1, 8, 8, 1, 4}, {1, 32, 4, 2, 4}, {1, 32, 2, 2, 4},
    {0, 32, 2, 4, 0}, {0, 16, 4, 2, 0}, {0, 8, 8, 1, 0}, {0, 32, 4, 2, 0}, {1, 32, 2, 4, 8},
};
#define N_DWG ((int)(sizeof dwg_cands / sizeof dwg_cands[0]))

static size_t dwg_items(int i) { return (size_t)dwg_cands[i].a * (size_t)dwg_cands[i].b; }

static void dwg_name(int i, char *buf, size_t len)
{
    const dwg_cfg *g = &dwg_cands[i >= 0 && i < N_DWG ? i : 0];
    if (i < 0 || i >= N_DWG)
        snprintf(buf, len, "?");
    else if (g->nhwc)
        snprintf(buf, len, "nhwc cb=%d py=%d rp=%d tq=%d", g->a, g->b, g->rp, g->tq);
    else
        snprintf(buf, len, "nchw wx=%d wy=%d rp=%d", g->a, g->b, g->rp);
}

/* The kernel whose loads are coalesced for x's layout. */
static int x_nhwc(const pdnn__conv2d_call *c) { return c->x_layout == PDNN_NHWC; }

/* The output tile's rows and columns, the input tile's (th, tw: with
 * the halo) and the channels of it (ci) for configuration g on c. */
typedef struct dwg_tile {
    int64_t rows, cols, th, tw, ci;
} dwg_tile;

static dwg_tile dwg_tile_of(const dwg_cfg *g, const pdnn__conv2d_call *c)
{
    dwg_tile t;
    const int64_t m = c->c > 0 ? c->k / c->c : 1;
    t.rows = (int64_t)g->b * g->rp;
    t.cols = g->nhwc ? g->tq : g->a;
    t.th = (t.rows - 1) * c->stride_h + (c->r - 1) * c->dil_h + 1;
    t.tw = (t.cols - 1) * c->stride_w + (c->s - 1) * c->dil_w + 1;
    /* NHWC: a block of CB output channels reads at most this many input
     * channels (k / m over CB consecutive k); NCHW: one. */
    t.ci = g->nhwc ? (g->a + m - 2) / (m > 0 ? m : 1) + 1 : 1;
    if (g->nhwc && t.ci > c->c)
        t.ci = c->c > 0 ? c->c : 1;
    return t;
}

/* Local memory of configuration i on c: the input tile, and in NCHW the
 * channel's m filters and biases. */
static uint64_t dwg_local_bytes(int i, const pdnn__conv2d_call *c)
{
    const dwg_tile t = dwg_tile_of(&dwg_cands[i], c);
    const uint64_t filt =
        dwg_cands[i].nhwc ? 0 : (uint64_t)(c->k / (c->c > 0 ? c->c : 1)) * (uint64_t)(c->r * c->s + 1);
    return ((uint64_t)(t.th * t.tw * t.ci) + filt) * sizeof(float);
}

/* Why c is outside what the kernels run (NULL: inside). */
static const char *dwg_shape_why(const pdnn__conv2d_call *c)
{
    if (c->groups != c->c)
        return "it runs only depthwise convolutions (groups == input channels)";
    const char *why = pdnn__cl_conv_int_why(c);
    if (why)
        return why;
    if (c->n * c->c > INT32_MAX / 2 || c->n * ((c->q + 3) / 4) > INT32_MAX / 2)
        return "the tensors are too large for its launch grid";
    return NULL;
}

static int dwg_applies(void *dev, const pdnn__op_call *call, int i)
{
    const cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return i >= 0 && i < N_DWG && !dwg_shape_why(c) && dwg_cands[i].nhwc == x_nhwc(c) && dwg_items(i) <= d->max_wg &&
           dwg_local_bytes(i, c) <= d->local_mem;
}

static size_t dwg_ws(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev, (void)call, (void)i;
    return 0;
}

/* The untuned choice: in NHWC 32 channels a block where there are that
 * many (8 below, where 32 would leave most of the work-items idle); in
 * NCHW the tile about as wide as the output rows (32, 16 or 8 columns:
 * MobileNet's 112..28, 14 and 7). */
static int dwg_default(const pdnn__conv2d_call *c)
{
    if (x_nhwc(c))
        return c->k >= 32 ? 0 : 2;
    return c->q > 16 ? 5 : c->q > 8 ? 6 : 7;
}

/* Enqueues call with configuration i. Called with d->lock held. */
static pdnn_status dwg_enqueue(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws)
{
    (void)ws;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const dwg_cfg *g = &dwg_cands[i];
    const dwg_tile t = dwg_tile_of(g, c);
    const char *name = g->nhwc ? "dwg_nhwc" : "dwg_nchw";
    /* float16 and bfloat16 storage: the kernels' REAL_T (prelude.cl). */
    const pdnn_dtype dt = call->dtype;
    const char *real = pdnn__cl_real_opts(dt);
    char opts[128];
    if (g->nhwc)
        snprintf(opts, sizeof opts, "-DCB=%d -DPY=%d -DRP=%d -DTQ=%d%s%s", g->a, g->b, g->rp, g->tq, real ? " " : "",
                 real ? real : "");
    else
        snprintf(opts, sizeof opts, "-DWX=%d -DWY=%d -DRP=%d%s%s", g->a, g->b, g->rp, real ? " " : "",
                 real ? real : "");
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_depthwise_wg.cl", opts, name, &k);
    if (st != PDNN_SUCCESS)
        return st;
    size_t kwg = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL) == CL_SUCCESS &&
        kwg < dwg_items(i))
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "OpenCL: depthwise_wg's configuration %d needs work-groups of %zu work-items; its kernel "
                           "allows %zu on this device",
                           i, dwg_items(i), kwg);
    if (c->n * c->k * c->p * c->q == 0)
        return PDNN_SUCCESS; /* an empty launch is invalid in OpenCL */
    cl_mem x = c->x_buf.region, w = c->w_buf.region, y = c->y_buf.region;
    /* Without a bias or residual any valid buffer will do: not read. */
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : w;
    cl_mem z = c->z_buf.region ? (cl_mem)c->z_buf.region : x;
    cl_long xo = pdnn__cl_real_off(c->x_buf, dt), wo = pdnn__cl_real_off(c->w_buf, dt),
            yo = pdnn__cl_real_off(c->y_buf, dt);
    cl_long bo = c->bias_buf.region ? pdnn__cl_real_off(c->bias_buf, dt) : 0,
            zo = c->z_buf.region ? pdnn__cl_real_off(c->z_buf, dt) : 0;
    cl_long4 xs = strides4(c->xs), ws4 = strides4(c->ws), ys = strides4(c->ys);
    const int m = (int)(c->k / c->c);
    const int64_t qtiles = (c->q + t.cols - 1) / t.cols, ptiles = (c->p + t.rows - 1) / t.rows;
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, m);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, c->bias_buf.region != NULL, pdnn__cl_relu_word(c));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int4 pad = int4_of(c->pad_top, c->pad_left, c->z_buf.region != NULL, 0);
    cl_int4 tdims = int4_of((int)t.th, (int)t.tw, (int)t.ci, (int)qtiles);
    const size_t local_bytes = (size_t)dwg_local_bytes(i, c);
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, w);
    SET_ARG(k, 3, wo);
    SET_ARG(k, 4, b);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, z);
    SET_ARG(k, 7, zo);
    SET_ARG(k, 8, y);
    SET_ARG(k, 9, yo);
    SET_ARG(k, 10, xs);
    SET_ARG(k, 11, ws4);
    SET_ARG(k, 12, ys);
    SET_ARG(k, 13, in_dims);
    SET_ARG(k, 14, out_dims);
    SET_ARG(k, 15, filt);
    SET_ARG(k, 16, geom);
    SET_ARG(k, 17, pad);
    SET_ARG(k, 18, tdims);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 19, local_bytes, NULL);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail(g->nhwc ? "clSetKernelArg(dwg_nhwc)" : "clSetKernelArg(dwg_nchw)", err);
    size_t local[3] = {(size_t)g->a, (size_t)g->b, 1}, global[3];
    if (g->nhwc) {
        global[0] = (size_t)((c->k + g->a - 1) / g->a * g->a);
        global[1] = (size_t)ptiles * (size_t)g->b;
        global[2] = (size_t)(c->n * qtiles);
    } else {
        global[0] = (size_t)qtiles * (size_t)g->a;
        global[1] = (size_t)ptiles * (size_t)g->b;
        global[2] = (size_t)(c->n * c->c);
    }
    err = clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS
                             : pdnn__cl_fail(g->nhwc ? "clEnqueueNDRangeKernel(dwg_nhwc)" : "clEnqueueNDRangeKernel(dwg_nchw)",
                                             err);
}

static const pdnn__cl_tunable tunable = {&pdnn__cl_algo_depthwise_wg, "conv2d_depthwise_wg", dwg_applies, dwg_ws,
                                         NULL, dwg_enqueue};

static void dwg_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const char *why = dwg_shape_why(c);
    if (why) {
        pdnn__plan_refuse(plan, "depthwise_wg: %s", why);
        return;
    }
    if (pdnn__cl_plan_tunable(&tunable, dev, call, dwg_default(c), plan) < 0) {
        /* The smallest tile of the layout's configurations, for the message. */
        uint64_t need = UINT64_MAX;
        for (int i = 0; i < N_DWG; i++)
            if (dwg_cands[i].nhwc == x_nhwc(c) && dwg_local_bytes(i, c) < need)
                need = dwg_local_bytes(i, c);
        pdnn__plan_refuse(plan,
                          "depthwise_wg: no configuration fits this device (its smallest tile needs %llu bytes of "
                          "local memory and 64 work-items per work-group; the device has %llu bytes and %zu "
                          "work-items at most)",
                          (unsigned long long)need, (unsigned long long)d->local_mem, d->max_wg);
        return;
    }
    if (c->groups == 1)
        pdnn__plan_skip(plan, "one input channel is an ordinary convolution, which AUTO leaves to the others");
    else if (pdnn__cl_gpu_class_passes(d))
        pdnn__plan_skip(plan, "AUTO runs depthwise_wg on GPU-class devices; on CPUs depthwise runs");
}

static pdnn_status dwg_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                           pdnn__run_report *rep)
{
    return pdnn__cl_run_tunable(&tunable, dev, call, plan, ws, rep);
}

const pdnn__algo pdnn__cl_algo_depthwise_wg = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "depthwise_wg",
    /* Before depthwise (10) where AUTO runs it: GPU-class devices. */
    .rank = 9,
    .gpu_class = 1,
    .n_configs = N_DWG,
    .config_name = dwg_name,
    .plan = dwg_plan,
    .run = dwg_run,
    .residual = 1, /* z added in the epilogue (pad.s2) */
    .relu_cap = 1, /* and the relu's cap applied (filt.s3) */
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* float16 and bfloat16 stored, float summed */
};
