/* The register-tiled direct convolution (kernels_cl/conv2d_tiled.cl): a
 * work-item computes TQ output pixels x KB float16 channel blocks, from a
 * filter packed into channel blocks (or read in place where HWIO already
 * is). Its tile is a tunable configuration. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>

extern const pdnn__algo pdnn__cl_algo_tiled;

/* The tunable choices (TQ pixels x KB float16 channel blocks per
 * work-item). Accumulators stay at or under 24 vectors so that they and
 * the filter vectors fit AVX-512's 32 registers; GPUs spill less with the
 * small ones. */
typedef struct tiled_cfg {
    int tq, kb;
} tiled_cfg;
static const tiled_cfg cands[] = {{8, 1}, {4, 1}, {12, 1}, {16, 1}, {4, 2}, {6, 2}, {8, 2}, {12, 2}, {6, 4}};
#define N_TILED ((int)(sizeof cands / sizeof cands[0]))

/* Output channels a work-item covers, the unit the filter is packed in. */
static int64_t kv_of(int i) { return 16 * (int64_t)cands[i].kb; }
static int64_t kp_of(const pdnn__conv2d_call *c, int i) { return (c->k + kv_of(i) - 1) / kv_of(i) * kv_of(i); }

/* A HWIO filter with whole channel blocks is read in place: no packing. */
static int in_place(const pdnn__conv2d_call *c, int i) { return c->w_layout == PDNN_HWIO && c->k % kv_of(i) == 0; }

/* The kernel's int indices stay in range. */
static int fits_int(const pdnn__conv2d_call *c, int i)
{
    const int64_t tq = cands[i].tq;
    return kp_of(c, i) <= INT32_MAX / 2 && c->p * c->q <= INT32_MAX / 2 &&
           c->n * ((c->p * c->q + tq - 1) / tq) <= INT32_MAX / 2;
}

/* Configuration i runs c where a work-item's channels share a group. */
static int applies(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return i >= 0 && i < N_TILED && (c->groups == 1 || (c->k / c->groups) % kv_of(i) == 0) && fits_int(c, i);
}

static size_t workspace(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return in_place(c, i) ? 0 : (size_t)(c->r * c->s * (c->c / c->groups) * kp_of(c, i)) * sizeof(float);
}

static void config_name(int i, char *buf, size_t len)
{
    if (i >= 0 && i < N_TILED)
        snprintf(buf, len, "tq=%d kb=%d", cands[i].tq, cands[i].kb);
    else
        snprintf(buf, len, "?");
}

/* Enqueues call with configuration i. Called with d->lock held. */
static pdnn_status run_config(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws)
{
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t cpg = c->c / c->groups, kv = kv_of(i), tq = cands[i].tq;
    char opts[64];
    snprintf(opts, sizeof opts, "-DTQ=%d -DKB=%d", cands[i].tq, cands[i].kb);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_tiled.cl", opts, "conv2d_tiled", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    cl_mem wsb;
    cl_long wp_off;
    cl_long4 wstr;
    if (in_place(c, i)) {
        wsb = c->w_buf.region;
        wp_off = elem_off(c->w_buf);
        wstr.s[0] = kv;
        wstr.s[1] = c->ws[3]; /* (r, s) is one step of s; r steps are S of them */
        wstr.s[2] = c->ws[1];
        wstr.s[3] = 0;
    } else {
        const int64_t kp = kp_of(c, i);
        wsb = ws.region;
        wp_off = elem_off(ws);
        wstr.s[0] = c->r * c->s * cpg * kv;
        wstr.s[1] = cpg * kv;
        wstr.s[2] = kv;
        wstr.s[3] = 0;
        cl_kernel pk = NULL;
        st = pdnn__cl_kernel(d, "conv2d_tiled.cl", opts, "conv2d_pack_rsck", &pk);
        if (st != PDNN_SUCCESS)
            return st;
        cl_mem w = c->w_buf.region;
        cl_long wo = elem_off(c->w_buf);
        cl_long4 wst = strides4(c->ws);
        cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)c->k);
        cl_int kpi = (cl_int)kp;
        cl_long total = c->r * c->s * cpg * kp;
        SET_ARG(pk, 0, w);
        SET_ARG(pk, 1, wo);
        SET_ARG(pk, 2, wst);
        SET_ARG(pk, 3, wsb);
        SET_ARG(pk, 4, wp_off);
        SET_ARG(pk, 5, filt);
        SET_ARG(pk, 6, kpi);
        SET_ARG(pk, 7, total);
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, pk, "conv2d_pack_rsck", total)
                               : pdnn__cl_fail("clSetKernelArg(conv2d_pack_rsck)", err);
        if (st != PDNN_SUCCESS)
            return st;
    }
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf);
    cl_long bo = c->bias_buf.region ? elem_off(c->bias_buf) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    const int pb = (int)((c->p * c->q + tq - 1) / tq);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, pb);
    cl_int4 tf = int4_of((int)c->r, (int)c->s, (int)cpg, (int)(c->k / c->groups));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int4 misc = int4_of(c->pad_top, c->pad_left, c->bias_buf.region != NULL, c->relu);
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, wsb);
    SET_ARG(k, 3, wp_off);
    SET_ARG(k, 4, b);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, y);
    SET_ARG(k, 7, yo);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, ys);
    SET_ARG(k, 10, in_dims);
    SET_ARG(k, 11, out_dims);
    SET_ARG(k, 12, tf);
    SET_ARG(k, 13, geom);
    SET_ARG(k, 14, misc);
    SET_ARG(k, 15, wstr);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_tiled)", err);
    /* Dimension 0: channel blocks; dimension 1: pixel blocks. Each
     * work-item already fills the SIMD width itself, so work-groups are one
     * channel block by a few pixel blocks. */
    size_t local[2] = {1, 4};
    size_t gy = (size_t)(c->n * pb);
    size_t global[2] = {(size_t)(kp_of(c, i) / kv), (gy + 3) / 4 * 4};
    err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_tiled)", err);
}

static const pdnn__cl_tunable tunable = {&pdnn__cl_algo_tiled, "conv2d_tiled", applies, workspace, NULL,
                                         run_config};

static void tiled_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    /* Where the device's default does not run c, the first that does is
     * one of 16 channels: a larger tile runs no call a 16-channel one
     * does not (whole groups of more channels, fewer pixels per item). */
    const int dflt = pdnn__cl_default_config(dev, &tunable, pdnn__cl_y_channel_major(c) ? "nchw" : NULL);
    if (pdnn__cl_plan_tunable(&tunable, dev, call, dflt, plan) >= 0)
        return;
    if (c->groups != 1 && (c->k / c->groups) % 16 != 0)
        pdnn__plan_refuse(plan,
                          "tiled runs groups == 1 or groups of a multiple of 16 output channels; this one has %lld "
                          "output channels in %lld groups",
                          (long long)c->k, (long long)c->groups);
    else
        pdnn__plan_refuse(plan, "tiled: the tensors are too large for its int indices");
}

static pdnn_status tiled_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    return pdnn__cl_run_tunable(&tunable, dev, call, plan, ws, rep);
}

const pdnn__algo pdnn__cl_algo_tiled = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "tiled",
    .id = PDNN_CONV_ALGO_TILED,
    /* After the specialised ones; 3-4x im2col + CLBlast (which is 3-4x
     * direct) on ResNet-50's layers on PoCL (bench/results-conv.md), and
     * the one AUTO runs for grouped convolutions (not measured with the
     * GEMM-based algorithms). */
    .rank = 50,
    .n_configs = N_TILED,
    .config_name = config_name,
    .plan = tiled_plan,
    .run = tiled_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT),
};
