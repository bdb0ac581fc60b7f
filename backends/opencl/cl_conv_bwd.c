/* Backward convolution on OpenCL (kernels_cl/conv2d_bwd.cl): data by a
 * direct gather, filter by a direct reduction or a split one (partial
 * sums over slices of the batch, then a reduce), bias by a per-channel
 * sum. Each is one registry entry of its op.
 *
 * Every one also stores float16 and bfloat16 (issue 43), grouped and
 * depthwise convolutions included (these are the backward algorithms
 * that take groups, so AUTO's choice for those in every dtype): the
 * kernels read x, dy and w as REAL_T, widened as loaded, sum in float32
 * and round each output once at its store (split: float32 partials,
 * rounded by its reduce), the host reference's contract. Read in place,
 * as the float32 kernels read, but split's float16 x and dy, which are
 * widened into float32 copies first (split_widens: vload_half in its
 * inner loop ran at 0.4x float32's speed). */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>

static void always_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    (void)call;
    (void)plan;
}

/* ---- data ------------------------------------------------------------------ */

/* The arguments 0..13 both backward-data kernels take (dy, w, dx, their
 * strides, sizes, stride/dilation, padding); out_dims.s3 is
 * chan_fastest(dx) for the direct kernel, unused (0) by implicit_gemm. */
static cl_int set_bwd_data_args(cl_kernel k, const pdnn__op_call *call, int chan_fastest)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const pdnn_dtype t = call->dtype;
    cl_mem dy = c->y_buf.region, w = c->w_buf.region, dx = c->x_buf.region;
    cl_long dyo = pdnn__cl_real_off(c->y_buf, t), wo = pdnn__cl_real_off(c->w_buf, t),
            dxo = pdnn__cl_real_off(c->x_buf, t);
    cl_long4 ys = strides4(c->ys), ws = strides4(c->ws), xs = strides4(c->xs);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, chan_fastest);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)(c->c / c->groups), (int)(c->k / c->groups));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int2 pad = {{c->pad_top, c->pad_left}};
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, dy);
    SET_ARG(k, 1, dyo);
    SET_ARG(k, 2, w);
    SET_ARG(k, 3, wo);
    SET_ARG(k, 4, dx);
    SET_ARG(k, 5, dxo);
    SET_ARG(k, 6, ys);
    SET_ARG(k, 7, ws);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, in_dims);
    SET_ARG(k, 10, out_dims);
    SET_ARG(k, 11, filt);
    SET_ARG(k, 12, geom);
    SET_ARG(k, 13, pad);
    return err;
}


static pdnn_status bwd_data_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                                pdnn__run_report *rep)
{
    (void)plan, (void)wsb, (void)rep;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_bwd.cl", pdnn__cl_real_opts(call->dtype), "conv2d_bwd_data_direct", &k);
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_long total = c->n * c->c * c->h * c->w;
    cl_int err = set_bwd_data_args(k, call, c->x_layout == PDNN_NHWC);
    SET_ARG(k, 14, total);
    st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_bwd_data_direct", total)
                           : pdnn__cl_fail("clSetKernelArg(conv2d_bwd_data_direct)", err);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_bwd_data_direct = {
    .op = PDNN__OP_CONV2D_BWD_DATA, .name = "direct", .rank = 100, .plan = always_plan, .run = bwd_data_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT /* REAL_T, float32 sums */};

/* ---- filter ------------------------------------------------------------------ */

static int64_t filter_elems(const pdnn__conv2d_call *c) { return c->k * (c->c / c->groups) * c->r * c->s; }

/* Work-items that keep a device busy: the split form cuts the batch into
 * enough slices to reach about this many (partial sums) per launch. */
#define BUSY_ITEMS 65536
#define MAX_SLICES 512

static int64_t slices_for(const pdnn__conv2d_call *c)
{
    const int64_t e = filter_elems(c), rows = c->n * c->p;
    int64_t s = (BUSY_ITEMS + e - 1) / e;
    if (s > rows)
        s = rows;
    if (s > MAX_SLICES)
        s = MAX_SLICES;
    return s < 1 ? 1 : s;
}

static pdnn_status set_common_filter_args(cl_kernel k, int first, const pdnn__conv2d_call *c, int64_t slices)
{
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, (int)slices);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)(c->c / c->groups), (int)(c->k / c->groups));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int2 pad = {{c->pad_top, c->pad_left}};
    cl_int err = CL_SUCCESS;
    SET_ARG(k, first, in_dims);
    SET_ARG(k, first + 1, out_dims);
    SET_ARG(k, first + 2, filt);
    SET_ARG(k, first + 3, geom);
    SET_ARG(k, first + 4, pad);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clSetKernelArg(conv2d_bwd_filter)", err);
}

static pdnn_status bwd_filter_direct_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                                         pdnn__run_report *rep)
{
    (void)plan, (void)wsb, (void)rep;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    const pdnn_dtype t = call->dtype;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_bwd.cl", pdnn__cl_real_opts(t), "conv2d_bwd_filter_direct", &k);
    if (st == PDNN_SUCCESS) {
        cl_mem x = c->x_buf.region, dy = c->y_buf.region, dw = c->w_buf.region;
        cl_long xo = pdnn__cl_real_off(c->x_buf, t), dyo = pdnn__cl_real_off(c->y_buf, t),
                dwo = pdnn__cl_real_off(c->w_buf, t);
        cl_long4 xs = strides4(c->xs), ys = strides4(c->ys), ws = strides4(c->ws);
        cl_long total = filter_elems(c);
        cl_int err = CL_SUCCESS;
        SET_ARG(k, 0, x);
        SET_ARG(k, 1, xo);
        SET_ARG(k, 2, dy);
        SET_ARG(k, 3, dyo);
        SET_ARG(k, 4, dw);
        SET_ARG(k, 5, dwo);
        SET_ARG(k, 6, xs);
        SET_ARG(k, 7, ys);
        SET_ARG(k, 8, ws);
        SET_ARG(k, 14, total);
        st = err == CL_SUCCESS ? set_common_filter_args(k, 9, c, 1)
                               : pdnn__cl_fail("clSetKernelArg(conv2d_bwd_filter_direct)", err);
        if (st == PDNN_SUCCESS)
            st = pdnn__cl_launch(d, k, "conv2d_bwd_filter_direct", total);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_bwd_filter_direct = {
    .op = PDNN__OP_CONV2D_BWD_FILTER, .name = "direct", .rank = 100, .plan = always_plan,
    .run = bwd_filter_direct_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT /* REAL_T, float32 sums */};

/* float16's x and dy are widened into float32 copies (after the
 * partials in the workspace, each whole 64-byte lines) that the float32
 * split kernel reads; bfloat16's are read in place (a shift each). A
 * depthwise 3x3's backward filter (batch 8, 32 channels at 112x112, PoCL)
 * read float16 in place (vload_half) at 0.38-0.41x float32's elements per
 * second, on the copies at 0.88-0.98x (144 channels at 56x56 too);
 * bfloat16 in place at 0.97-1.04x. */
static int split_widens(const pdnn__op_call *call) { return call->dtype == PDNN_FLOAT16; }

/* Floats of n elements in whole 64-byte lines. */
static int64_t split_lines(int64_t n) { return (n + 15) / 16 * 16; }

/* The workspace's floats: the partials, then x's and dy's copies where
 * split_widens. */
static int64_t split_floats(const pdnn__op_call *call, int64_t slices)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t part = split_lines(slices * filter_elems(c));
    return part + (split_widens(call) ? split_lines(c->n * c->c * c->h * c->w) + c->n * c->k * c->p * c->q : 0);
}

static void bwd_filter_split_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t slices = slices_for(c);
    if (c->n * c->p < 2) {
        pdnn__plan_refuse(plan, "one output row (N*P = 1) leaves nothing to split");
        return;
    }
    if (slices < 2)
        pdnn__plan_skip(plan, "the filter's %lld elements keep the device busy without splitting the batch",
                        (long long)filter_elems(c));
    plan->workspace = (size_t)split_floats(call, slices < 2 ? 2 : slices) * sizeof(float);
}

static pdnn_status bwd_filter_split_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                                        pdnn__run_report *rep)
{
    (void)rep;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const cl_long elems = filter_elems(c);
    int64_t slices = slices_for(c);
    if (slices < 2)
        slices = 2;
    if ((size_t)split_floats(call, slices) * sizeof(float) > plan->workspace)
        return pdnn__error(PDNN_ERR_INTERNAL, "conv2d_bwd_filter split: workspace smaller than planned");
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL, kr = NULL;
    const pdnn_dtype t = call->dtype; /* x, dy and dw REAL_T (x and dy float32 copies where widened) */
    const int widen = split_widens(call);
    pdnn_status st =
        pdnn__cl_kernel(d, "conv2d_bwd.cl", widen ? NULL : pdnn__cl_real_opts(t), "conv2d_bwd_filter_split", &k);
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_kernel(d, "conv2d_bwd.cl", pdnn__cl_real_opts(t), "conv2d_bwd_filter_reduce", &kr);
    cl_mem x = c->x_buf.region, dy = c->y_buf.region;
    cl_long xo = pdnn__cl_real_off(c->x_buf, t), dyo = pdnn__cl_real_off(c->y_buf, t);
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    if (st == PDNN_SUCCESS && widen) { /* each copy dense in its own layout */
        const pdnn__buf xw = {wsb.region, wsb.offset + (size_t)split_lines(slices * elems) * sizeof(float)};
        const pdnn__buf yw = {wsb.region, xw.offset + (size_t)split_lines(c->n * c->c * c->h * c->w) * sizeof(float)};
        const int64_t yd[4] = {c->n, c->k, c->p, c->q};
        int64_t yws[4];
        pdnn__layout_strides(c->ys[1] == 1 ? PDNN_NHWC : PDNN_NCHW, yd, yws);
        st = pdnn__cl_widen_conv_x(d, call, c->xs[1] == 1, xw, &x, &xo, &xs);
        if (st == PDNN_SUCCESS)
            st = pdnn__cl_widen_locked(d, t, c->y_buf, yd, c->ys, yw, yws);
        dy = yw.region;
        dyo = elem_off(yw);
        ys = strides4(yws);
    }
    if (st == PDNN_SUCCESS) {
        cl_mem dw = c->w_buf.region, part = wsb.region;
        cl_long dwo = pdnn__cl_real_off(c->w_buf, t), po = elem_off(wsb);
        cl_long4 ws = strides4(c->ws);
        cl_int4 rfilt = int4_of((int)c->r, (int)c->s, (int)(c->c / c->groups), (int)slices);
        cl_int err = CL_SUCCESS;
        SET_ARG(k, 0, x);
        SET_ARG(k, 1, xo);
        SET_ARG(k, 2, dy);
        SET_ARG(k, 3, dyo);
        SET_ARG(k, 4, part);
        SET_ARG(k, 5, po);
        SET_ARG(k, 6, xs);
        SET_ARG(k, 7, ys);
        SET_ARG(k, 13, elems);
        SET_ARG(kr, 0, part);
        SET_ARG(kr, 1, po);
        SET_ARG(kr, 2, dw);
        SET_ARG(kr, 3, dwo);
        SET_ARG(kr, 4, ws);
        SET_ARG(kr, 5, rfilt);
        SET_ARG(kr, 6, elems);
        st = err == CL_SUCCESS ? set_common_filter_args(k, 8, c, slices)
                               : pdnn__cl_fail("clSetKernelArg(conv2d_bwd_filter_split)", err);
        if (st == PDNN_SUCCESS)
            st = pdnn__cl_launch(d, k, "conv2d_bwd_filter_split", elems * slices);
        if (st == PDNN_SUCCESS)
            st = pdnn__cl_launch(d, kr, "conv2d_bwd_filter_reduce", elems);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_bwd_filter_split = {
    .op = PDNN__OP_CONV2D_BWD_FILTER, .name = "split", .rank = 50, .plan = bwd_filter_split_plan,
    .run = bwd_filter_split_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT /* REAL_T, float32 partials */};

/* ---- bias --------------------------------------------------------------------- */

static pdnn_status bwd_bias_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                                pdnn__run_report *rep)
{
    (void)plan, (void)wsb, (void)rep;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    const pdnn_dtype t = call->dtype; /* float16, bfloat16: REAL_T, the sum float32 */
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_bwd.cl", pdnn__cl_real_opts(t), "conv2d_bwd_bias", &k);
    if (st == PDNN_SUCCESS) {
        cl_mem dy = c->y_buf.region, db = c->bias_buf.region;
        cl_long dyo = pdnn__cl_real_off(c->y_buf, t), dbo = pdnn__cl_real_off(c->bias_buf, t);
        cl_long4 ys = strides4(c->ys);
        cl_int4 dims = int4_of((int)c->n, (int)c->k, (int)c->p, (int)c->q);
        cl_long total = c->k;
        cl_int err = CL_SUCCESS;
        SET_ARG(k, 0, dy);
        SET_ARG(k, 1, dyo);
        SET_ARG(k, 2, ys);
        SET_ARG(k, 3, db);
        SET_ARG(k, 4, dbo);
        SET_ARG(k, 5, dims);
        SET_ARG(k, 6, total);
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_bwd_bias", total)
                               : pdnn__cl_fail("clSetKernelArg(conv2d_bwd_bias)", err);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_bwd_bias_direct = {
    .op = PDNN__OP_CONV2D_BWD_BIAS, .name = "direct", .rank = 100, .plan = always_plan, .run = bwd_bias_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};

/* ---- data as an implicit GEMM ------------------------------------------------ */

/* Register tiles (channels x pixels of a row) of conv2d_bwd_data_igemm;
 * the tuning search measures them all per shape. CT 1 runs every call. */
typedef struct bd_cfg {
    int ct, pt;
} bd_cfg;
static const bd_cfg bd_cands[] = {{8, 4}, {4, 4}, {16, 4}, {8, 8}, {4, 8}, {16, 2}, {1, 8}};
#define N_BD ((int)(sizeof bd_cands / sizeof bd_cands[0]))

static int bd_applies(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return i >= 0 && i < N_BD && (c->c / c->groups) % bd_cands[i].ct == 0;
}

static size_t bd_ws(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    (void)call, (void)i;
    return 0;
}

static void bd_name(int i, char *buf, size_t len)
{
    if (i >= 0 && i < N_BD)
        snprintf(buf, len, "ct=%d pt=%d", bd_cands[i].ct, bd_cands[i].pt);
    else
        snprintf(buf, len, "?");
}

/* Enqueues call with configuration i. Called with d->lock held. */
static pdnn_status bd_enqueue(void *dev, const pdnn__op_call *call, int i, pdnn__buf wsb)
{
    (void)wsb;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int ct = bd_cands[i].ct, pt = bd_cands[i].pt;
    const int64_t spans = c->n * c->h * ((c->w + pt - 1) / pt);
    if (spans == 0 || c->c == 0)
        return PDNN_SUCCESS;
    char opts[48];
    const char *real = pdnn__cl_real_opts(call->dtype);
    snprintf(opts, sizeof opts, "-DCT=%d -DPT=%d%s%s", ct, pt, real ? " " : "", real ? real : "");
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_bwd.cl", opts, "conv2d_bwd_data_igemm", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = set_bwd_data_args(k, call, 0);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_bwd_data_igemm)", err);
    /* Dimension 0: channel blocks (neighbours share their dy loads in
     * cache); dimension 1: pixel spans. */
    size_t global[2] = {(size_t)(c->c / ct), (size_t)spans};
    err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, NULL, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_bwd_data_igemm)", err);
}

extern const pdnn__algo pdnn__cl_algo_bwd_data_igemm;
static const pdnn__cl_tunable bd_tunable = {&pdnn__cl_algo_bwd_data_igemm, "conv2d_bwd_data_igemm", bd_applies,
                                            bd_ws, NULL, bd_enqueue};

static void bd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    if (pdnn__cl_plan_tunable(&bd_tunable, dev, call, pdnn__cl_default_config(dev, &bd_tunable, NULL), plan) < 0)
        pdnn__plan_refuse(plan, "implicit_gemm: no configuration applies (%lld channels per group)",
                          (long long)(call->u.conv2d.c / call->u.conv2d.groups));
}

static pdnn_status bd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    return pdnn__cl_run_tunable(&bd_tunable, dev, call, plan, ws, rep);
}

/* Before direct: its register tile reuses each dy load for CT channels.
 * Measured on PoCL (this shared 2-core machine, batch 8, NCHW, default
 * ct=8 pt=4, untuned): 1.1-1.4x direct on ResNet-50's 3x3 layers at
 * 56/28/14/7, 0.8-1.3x on two 1x1 layers; both far from the FMA peak. */
const pdnn__algo pdnn__cl_algo_bwd_data_igemm = {
    .op = PDNN__OP_CONV2D_BWD_DATA,
    .name = "implicit_gemm",
    .id = PDNN_CONV_ALGO_IMPLICIT_GEMM,
    .rank = 50,
    .n_configs = N_BD,
    .config_name = bd_name,
    .plan = bd_plan,
    .run = bd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* REAL_T loads, float32 tiles, dx rounded once */
};
