/* 1x1 convolution as a register-blocked GEMM on the tensors in place
 * (kernels_cl/conv2d_gemm_1x1.cl): its tile configurations, plan (which
 * calls it claims; the default tile is its device's, cl_device_table.c), the filter
 * packing and the two kernels' launches. */
#include "backends/opencl/cl_internal.h"
#include "core/half.h"

#include <stdio.h>
#include <string.h>

extern const pdnn__algo pdnn__cl_algo_gemm_1x1;

/* The kernel's compile-time tiles: VW-lane vectors, KB of them (KT = VW *
 * KB output channels) by PT pixels per work-item. {16, 1, 6} is AVX2's
 * 6x16 micro-kernel (12 ymm accumulators, 2 for the filter, 1 for the
 * broadcast); {16, 2, 6} and {16, 1, 12} fill AVX-512's 32 registers;
 * {8, 1, 12} and {16, 1, 4} trade accumulators for more work-items; the
 * small {4, 1, 8} keeps GPU register use low; {16, 2, 7} divides every
 * ResNet image (7x7 .. 56x56) into whole tiles; {16, 2, 8}, like every
 * 16 x 8 tile, stores NCHW output as transposed rows (conv2d_tile.cl). */
typedef struct g1_cfg {
    int vw, kb, pt;
} g1_cfg;
static const g1_cfg g1_cands[] = {{16, 1, 6}, {8, 1, 12}, {16, 1, 4}, {16, 1, 8},
                                  {16, 2, 6}, {16, 1, 12}, {4, 1, 8}, {16, 2, 7}, {16, 2, 8}};
#define N_GEMM1X1 ((int)(sizeof g1_cands / sizeof g1_cands[0]))

static int64_t g1_kt(int i) { return (int64_t)g1_cands[i].vw * g1_cands[i].kb; }
static int64_t g1_kp(const pdnn__conv2d_call *c, int i) { return (c->k + g1_kt(i) - 1) / g1_kt(i) * g1_kt(i); }

/* The shapes gemm_1x1 runs at all: a 1x1 filter, no padding, every
 * output pixel reading an input pixel (no implied bottom/right padding),
 * and indices that fit the kernel's ints. */
static int g1_shape_ok(const pdnn__conv2d_call *c)
{
    return c->r == 1 && c->s == 1 && c->pad_top == 0 && c->pad_left == 0 && c->p > 0 && c->q > 0 &&
           (c->p - 1) * c->stride_h < c->h && (c->q - 1) * c->stride_w < c->w && c->k <= INT32_MAX / 4 &&
           c->c <= INT32_MAX / 4 && c->p * c->q <= INT32_MAX / 4 && c->n <= INT64_MAX / (c->p * c->q);
}

/* Whether configuration i runs c: a work-item's channels share a group. */
static int g1_applies(const pdnn__conv2d_call *c, int i)
{
    return i >= 0 && i < N_GEMM1X1 && g1_shape_ok(c) && (c->groups == 1 || (c->k / c->groups) % g1_kt(i) == 0);
}

static int applies(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    return g1_applies(&call->u.conv2d, i);
}

/* The transposed kernel (conv2d_gemm_1x1_rows) can run NCHW-contiguous
 * input and output images at stride 1 (input pixel = output pixel),
 * ungrouped, with at least one whole pixel tile per image. It is used
 * where it measured faster than the tiles kernel on ResNet-50's NCHW 1x1
 * layers: images of g1_rows_min_pixels or more with C at most
 * g1_rows_max_c (cl_device_table.c says why). */
static int g1_rows(const cl_dev *d, const pdnn__conv2d_call *c, int i)
{
    return c->xs[3] == 1 && c->xs[2] == c->w && c->ys[3] == 1 && c->ys[2] == c->q && c->stride_h == 1 &&
           c->stride_w == 1 && c->groups == 1 && c->p == c->h && c->q == c->w &&
           c->p * c->q >= (int64_t)g1_cands[i].vw * g1_cands[i].kb && c->p * c->q >= d->cls.t.g1_rows_min_pixels &&
           c->c <= d->cls.t.g1_rows_max_c;
}

/* float16 and bfloat16 storage (issue 43): both kernels reduce in
 * float32 and round once at the store; the tiles kernel over the packed
 * filter (in the storage dtype where pdnn__cl_pack_dtype says, widened
 * as it loads, else float32) and x in place where its channels are
 * contiguous (8 at a time), else a float32 copy of x in the workspace;
 * the rows kernel over x in place (its loads are vectors) and the filter
 * in place where its rows are contiguous (8 at a time), else a copy of it
 * with contiguous rows, in the pack's dtype. */
static int g1_reduced(const pdnn__op_call *call)
{
    return call->dtype == PDNN_FLOAT16 || call->dtype == PDNN_BFLOAT16;
}

/* A filter already contiguous over whole channel blocks (HWIO, or any
 * layout with one input channel per group... whose k stride is 1) is read
 * in place (float32 only). */
static int g1_in_place(const pdnn__op_call *call, int i)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return !g1_reduced(call) && c->ws[0] == 1 && c->k % g1_kt(i) == 0;
}

/* The rows kernel in a reduced dtype reads a K x C copy of the filter
 * where its rows are not contiguous (HWIO). */
static int g1_rows_wide_w(const pdnn__op_call *call) { return g1_reduced(call) && call->u.conv2d.ws[1] != 1; }

/* The dtype of the filter's packed copy (float32 in float32 calls). */
static pdnn_dtype g1_pack_dtype(const cl_dev *d, const pdnn__op_call *call)
{
    return pdnn__cl_pack_dtype(d, call->dtype);
}

/* The filter's packed (or, for rows, K x C) copy: the workspace's tail,
 * or kept on a frozen filter. */
static size_t g1_packed(void *dev, const pdnn__op_call *call, int i)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const size_t es = pdnn__dtype_size(g1_pack_dtype(dev, call));
    if (g1_rows(dev, c, i))
        return g1_rows_wide_w(call) ? (size_t)(c->k * c->c) * es : 0;
    return g1_in_place(call, i) ? 0 : (size_t)(g1_kp(c, i) * (c->c / c->groups)) * es;
}

/* Floats of x's float32 copy (the tiles kernel in a reduced dtype, x's
 * channels not contiguous), whole 64-byte lines: the workspace's head. */
static int64_t g1_x_floats(void *dev, const pdnn__op_call *call, int i)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return g1_reduced(call) && !g1_rows(dev, c, i) && c->xs[1] != 1 ? (c->n * c->c * c->h * c->w + 15) / 16 * 16
                                                                     : 0;
}

/* The workspace: x's copy where g1_x_floats, then g1_packed. */
static size_t g1_ws(void *dev, const pdnn__op_call *call, int i)
{
    return (size_t)g1_x_floats(dev, call, i) * sizeof(float) + g1_packed(dev, call, i);
}

static void g1_name(int i, char *buf, size_t len)
{
    if (i >= 0 && i < N_GEMM1X1)
        snprintf(buf, len, "vw=%d kb=%d pt=%d", g1_cands[i].vw, g1_cands[i].kb, g1_cands[i].pt);
    else
        snprintf(buf, len, "?");
}

/* The kernels of configuration i for dtype t, reading x (xf) or, in the
 * rows kernel, the filter (wf) widened into float32 copies or as stored,
 * and a packed filter in dtype t (wr) or float32. Called with d->lock
 * held. */
static pdnn_status g1_kernel(cl_dev *d, int i, pdnn_dtype t, int xf, int wf, int wr, const char *name, cl_kernel *k)
{
    const char *real = pdnn__cl_real_opts(t);
    char opts[128];
    snprintf(opts, sizeof opts, "-DVW=%d -DKB=%d -DPT=%d%s%s%s%s%s", g1_cands[i].vw, g1_cands[i].kb,
             g1_cands[i].pt, real ? " " : "", real ? real : "", xf ? " -DG1_XF=1" : "", wf ? " -DG1_WF=1" : "",
             wr ? " -DTILE_WR=1" : "");
    return pdnn__cl_kernel(d, "conv2d_gemm_1x1.cl", opts, name, k);
}

/* Pixels per work-item. Where the device sweeps tiles (sweep_tiles) a
 * work-item sweeps several pixel tiles with the same filter rows so that
 * they are read from memory once and then from cache: as many as keep
 * that span's input (span x C floats) within sweep_floats, while leaving
 * at least 8 work-items per compute unit for balance; else one tile. */
static int64_t g1_span(const cl_dev *d, const pdnn__conv2d_call *c, int i)
{
    const int64_t pt = g1_cands[i].pt, npix = c->n * c->p * c->q;
    const int64_t tiles = (npix + pt - 1) / pt;
    if (!d->cls.t.sweep_tiles)
        return pt;
    const int64_t cpg = c->c / c->groups > 0 ? c->c / c->groups : 1;
    int64_t per = (d->cls.t.sweep_floats / cpg) / pt; /* tiles per work-item */
    if (per < 1)
        per = 1;
    const int64_t nkb = g1_kp(c, i) / g1_kt(i), want = pdnn__cl_balanced_items(d);
    while (per > 1 && nkb * ((tiles + per - 1) / per) < want)
        per /= 2;
    if (per > tiles)
        per = tiles;
    return per * pt;
}

/* Enqueues pack kernel name of configuration i for dtype t (packing in
 * t where pdnn__cl_pack_dtype says: both pack kernels write the pack's
 * dtype), from the program of the kernel that reads the pack (xf as
 * there), from filter w (strides ws of k and c) into wp: arguments cpg
 * (or C) and K, work-groups of l0 x 1 over g0 x g1. Called with d->lock
 * held. */
static pdnn_status g1_pack_launch(cl_dev *d, int i, pdnn_dtype t, int xf, const char *name, pdnn__buf w,
                                  cl_long2 ws, pdnn__buf wp, cl_int cpg, cl_int kk, size_t l0, size_t g0, size_t g1)
{
    cl_kernel pk = NULL;
    const pdnn_dtype pt = pdnn__cl_pack_dtype(d, t);
    pdnn_status st = g1_kernel(d, i, t, xf, 0, pt != PDNN_FLOAT32, name, &pk);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    cl_mem wm = w.region, wpm = wp.region;
    cl_long wo = pdnn__cl_real_off(w, t), wpo = pdnn__cl_real_off(wp, pt);
    SET_ARG(pk, 0, wm);
    SET_ARG(pk, 1, wo);
    SET_ARG(pk, 2, ws);
    SET_ARG(pk, 3, wpm);
    SET_ARG(pk, 4, wpo);
    SET_ARG(pk, 5, cpg);
    SET_ARG(pk, 6, kk);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(gemm_1x1's pack)", err);
    size_t local[2] = {l0, 1}, global[2] = {g0, g1};
    err = clEnqueueNDRangeKernel(d->queue, pk, 2, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(gemm_1x1's pack)", err);
}

/* Enqueues c on the transposed kernel with configuration i (built):
 * PT channel rows by KB*VW pixels per work-item, the filter read in
 * place. Where the device sweeps tiles a work-item sweeps as many pixel
 * tiles as keep their input within sweep_floats, leaving at least 8
 * work-items per compute unit. */
static pdnn_status g1_enqueue_rows(cl_dev *d, const pdnn__op_call *call, int i, pdnn__buf ws)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const pdnn_dtype t = call->dtype;
    const int64_t pt = g1_cands[i].pt, tw = (int64_t)g1_cands[i].vw * g1_cands[i].kb;
    const int64_t pq = c->p * c->q, tpi = (pq + tw - 1) / tw, ntiles = c->n * tpi;
    const int64_t nrb = (c->k + pt - 1) / pt;
    int64_t span = 1;
    if (d->cls.t.sweep_tiles) {
        span = d->cls.t.sweep_floats / ((c->c > 0 ? c->c : 1) * tw);
        if (span < 1)
            span = 1;
        const int64_t want = pdnn__cl_balanced_items(d);
        while (span > 1 && nrb * ((ntiles + span - 1) / span) < want)
            span /= 2;
    }
    cl_kernel k = NULL;
    const pdnn_dtype pt_ = g1_pack_dtype(d, call);
    const int wide = g1_rows_wide_w(call), wr = pt_ != PDNN_FLOAT32;
    pdnn_status st = g1_kernel(d, i, t, 0, wide && !wr, wide && wr, "conv2d_gemm_1x1_rows", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    cl_mem x = c->x_buf.region, w = c->w_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = pdnn__cl_real_off(c->x_buf, t), wo = pdnn__cl_real_off(c->w_buf, t), yo = pdnn__cl_real_off(c->y_buf, t);
    cl_long bo = c->bias_buf.region ? pdnn__cl_real_off(c->bias_buf, t) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    cl_int4 dims = int4_of((int)c->n, (int)pq, (int)tpi, (int)c->k);
    cl_int4 misc = int4_of((int)c->c, (int)span, c->bias_buf.region != NULL, pdnn__cl_relu_word(c));
    cl_long2 wst;
    wst.s[0] = c->ws[0];
    wst.s[1] = c->ws[1];
    if (wide) {
        /* The filter as K x C (in its dtype where wr, else widened): the
         * frozen filter's kept copy (made by its first call) or the
         * workspace. */
        const int kept = c->wpack.region != NULL;
        const pdnn__buf wf = kept ? c->wpack : ws;
        if ((!kept || c->wpack_fill) && wr) {
            st = g1_pack_launch(d, i, t, 0, "gemm1x1_rows_pack", c->w_buf, wst, wf, (cl_int)c->c, (cl_int)c->k, 1,
                                (size_t)c->k, (size_t)((c->c + 31) / 32));
        } else if (!kept || c->wpack_fill) {
            const int64_t dims4[4] = {c->k, c->c, 1, 1}, ss[4] = {c->ws[0], c->ws[1], 1, 1},
                          ds[4] = {c->c, 1, 1, 1};
            st = pdnn__cl_widen_locked(d, t, c->w_buf, dims4, ss, wf, ds);
        }
        if (st != PDNN_SUCCESS)
            return st;
        w = wf.region;
        wo = pdnn__cl_real_off(wf, pt_);
        wst.s[0] = c->c;
        wst.s[1] = 1;
    }
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, w);
    SET_ARG(k, 3, wo);
    SET_ARG(k, 4, b);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, y);
    SET_ARG(k, 7, yo);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, ys);
    SET_ARG(k, 10, dims);
    SET_ARG(k, 11, misc);
    SET_ARG(k, 12, wst);
    cl_mem res = c->z_buf.region ? (cl_mem)c->z_buf.region : x;
    cl_long res_off = c->z_buf.region ? pdnn__cl_real_off(c->z_buf, t) : -1;
    SET_ARG(k, 13, res);
    SET_ARG(k, 14, res_off);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_gemm_1x1_rows)", err);
    const size_t l1 = (size_t)d->cls.t.gemm_wg_pixels;
    size_t local[2] = {1, l1};
    const size_t gy = (size_t)((ntiles + span - 1) / span);
    size_t global[2] = {(size_t)nrb, (gy + l1 - 1) / l1 * l1};
    err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_gemm_1x1_rows)", err);
}

/* Enqueues call with configuration i and workspace ws. Called with
 * d->lock held. */
static pdnn_status g1_enqueue(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws)
{
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t cpg = c->c / c->groups, kt = g1_kt(i), kp = g1_kp(c, i);
    const int64_t npix = c->n * c->p * c->q;
    if (npix == 0 || c->k == 0)
        return PDNN_SUCCESS;
    if (g1_rows(d, c, i))
        return g1_enqueue_rows(d, call, i, ws);
    const pdnn_dtype t = call->dtype, pt_ = g1_pack_dtype(d, call);
    const int xf = g1_x_floats(d, call, i) > 0, wr = pt_ != PDNN_FLOAT32 && !g1_in_place(call, i);
    cl_kernel k = NULL;
    pdnn_status st = g1_kernel(d, i, t, xf, 0, wr, "conv2d_gemm_1x1", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    cl_mem wsb;
    cl_long wp_off;
    cl_long2 wstr;
    if (g1_in_place(call, i)) {
        wsb = c->w_buf.region;
        wp_off = elem_off(c->w_buf);
        wstr.s[0] = kt;
        wstr.s[1] = c->ws[1];
    } else {
        /* The frozen filter's kept copy (packed by its first call) or the
         * workspace, after x's copy. */
        const int kept = c->wpack.region != NULL;
        const pdnn__buf wpb = kept ? c->wpack
                                   : (pdnn__buf){ws.region, ws.offset + (size_t)g1_x_floats(d, call, i) * sizeof(float)};
        wsb = wpb.region;
        wp_off = pdnn__cl_real_off(wpb, pt_);
        wstr.s[0] = cpg * kt;
        wstr.s[1] = kt;
        if (cpg > 0 && (!kept || c->wpack_fill)) {
            cl_long2 wst;
            wst.s[0] = c->ws[0];
            wst.s[1] = c->ws[1];
            /* One channel block per work-group, runs of 32 c (PACK_RUN). */
            st = g1_pack_launch(d, i, t, xf, "gemm1x1_pack", c->w_buf, wst, wpb, (cl_int)cpg, (cl_int)c->k, (size_t)kt,
                                (size_t)kp, (size_t)((cpg + 31) / 32));
            if (st != PDNN_SUCCESS)
                return st;
        }
    }
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = pdnn__cl_real_off(c->x_buf, t), yo = pdnn__cl_real_off(c->y_buf, t);
    cl_long bo = c->bias_buf.region ? pdnn__cl_real_off(c->bias_buf, t) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    /* x widened at the workspace's head (channel-major: xf is for the
     * other layouts); the kernel reads that. */
    if (xf && (st = pdnn__cl_widen_conv_x(d, call, 0, ws, &x, &xo, &xs)) != PDNN_SUCCESS)
        return st;
    const int64_t span = g1_span(d, c, i);
    cl_int4 dims = int4_of((int)c->n, (int)c->p, (int)c->q, (int)c->k);
    cl_int4 misc = int4_of((int)cpg, (int)(c->k / c->groups), c->bias_buf.region != NULL, pdnn__cl_relu_word(c));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, (int)span, c->z_buf.region != NULL);
    cl_mem res = c->z_buf.region ? (cl_mem)c->z_buf.region : x;
    cl_long res_off = c->z_buf.region ? pdnn__cl_real_off(c->z_buf, t) : 0;
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
    SET_ARG(k, 10, dims);
    SET_ARG(k, 11, misc);
    SET_ARG(k, 12, geom);
    SET_ARG(k, 13, wstr);
    SET_ARG(k, 14, res);
    SET_ARG(k, 15, res_off);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_gemm_1x1)", err);
    /* Dimension 0: channel blocks (neighbouring work-items share the input
     * span, which stays in cache); dimension 1: pixel spans. Each
     * work-item fills the SIMD width itself. */
    const size_t l1 = (size_t)d->cls.t.gemm_wg_pixels;
    size_t local[2] = {1, l1};
    const size_t gy = (size_t)((npix + span - 1) / span);
    size_t global[2] = {(size_t)(kp / kt), (gy + l1 - 1) / l1 * l1};
    err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_gemm_1x1)", err);
}

static const pdnn__cl_tunable tunable = {&pdnn__cl_algo_gemm_1x1, "conv2d_gemm_1x1", applies, g1_ws, g1_packed,
                                         g1_enqueue};

static void g1_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    /* The device's default; its "/nchw" one where the tiles kernel writes
     * a channel-major y (the rows kernel stores rows itself). */
    int dflt = pdnn__cl_default_config(dev, &tunable, NULL);
    if (dflt >= 0 && pdnn__cl_y_channel_major(c) && !g1_rows(dev, c, dflt))
        dflt = pdnn__cl_default_config(dev, &tunable, "nchw");
    if (pdnn__cl_plan_tunable(&tunable, dev, call, dflt, plan) < 0) {
        pdnn__plan_refuse(plan,
                          "gemm_1x1 runs only 1x1 filters without padding (every output pixel on an input pixel) "
                          "and with groups == 1 or a multiple of 4 output channels per group; this one has a "
                          "%lldx%lld filter, padding top/left %d,%d, %lldx%lld input to %lldx%lld output with "
                          "stride %d,%d, groups %lld",
                          (long long)c->r, (long long)c->s, c->pad_top, c->pad_left, (long long)c->h,
                          (long long)c->w, (long long)c->p, (long long)c->q, c->stride_h, c->stride_w,
                          (long long)c->groups);
        return;
    }
    /* Grouped 1x1 convolutions were not measured against tiled. */
    if (c->groups != 1)
        pdnn__plan_skip(plan, "AUTO runs gemm_1x1 on ungrouped convolutions only; this one has %lld groups",
                        (long long)c->groups);
}

static pdnn_status g1_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    pdnn__run_report r;
    pdnn_status st = pdnn__cl_run_tunable(&tunable, dev, call, plan, ws, &r);
    if (st != PDNN_SUCCESS)
        return st;
    /* Which kernel ran is the shape's, not a configuration of its own. */
    pdnn__debug("gemm_1x1: %s with the %s kernel", r.config_name,
                g1_rows(dev, &call->u.conv2d, r.config) ? "rows" : "tiles");
    if (rep)
        *rep = r;
    return st;
}

const pdnn__algo pdnn__cl_algo_gemm_1x1 = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "gemm_1x1",
    .id = PDNN_CONV_ALGO_GEMM_1X1,
    /* Before the general algorithms: 2-7x tiled on every 1x1 layer of
     * ResNet-50 (batch 1 and 8, NCHW and NHWC; bench/results-conv.md);
     * 1x1 layers are what it is specialised for. */
    .rank = 20,
    .n_configs = N_GEMM1X1,
    .config_name = g1_name,
    .plan = g1_plan,
    .run = g1_run,
    .residual = 1, /* z added in both kernels' epilogues */
    .relu_cap = 1, /* and the relu's cap applied (misc.s3) */
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* float16, bfloat16: reduced in float32 (g1_reduced) */
};
