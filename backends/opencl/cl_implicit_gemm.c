/* Implicit-GEMM convolution for any filter, stride, dilation and padding
 * (kernels_cl/conv2d_implicit_gemm.cl): which calls it claims, its tile
 * configurations, the filter packing and the launch. */
#include "backends/opencl/cl_internal.h"
#include "core/half.h"

#include <stdio.h>

extern const pdnn__algo pdnn__cl_algo_implicit_gemm;

/* The kernel's compile-time tiles: VW-lane vectors, KB of them (KT = VW *
 * KB output channels) by PT pixels per work-item. {16, 2, 6} fills
 * AVX-512's registers (12 zmm accumulators), {16, 1, 6} is AVX2's 6x16
 * micro-kernel, {16, 1, 12} and {8, 1, 12} trade channels for pixels
 * (layers with few output channels), {4, 1, 8} keeps GPU register use low,
 * {16, 2, 7} divides every ResNet output image (7x7 .. 112x112) into whole
 * tiles, {16, 2, 8} stores NCHW output as transposed rows (conv2d_tile.cl).
 * The default is the device's (cl_device_table.c), by y's layout; with tuning on
 * (POLYDNN_TUNING=search) the search measures them all per shape. */
typedef struct ig_cfg {
    int vw, kb, pt;
} ig_cfg;
static const ig_cfg ig_cands[] = {{16, 2, 6}, {16, 1, 6}, {16, 1, 12}, {8, 1, 12}, {4, 1, 8}, {16, 2, 7}, {16, 2, 12}, {16, 2, 8}};
#define N_IGEMM ((int)(sizeof ig_cands / sizeof ig_cands[0]))

static int64_t ig_kt(int i) { return (int64_t)ig_cands[i].vw * ig_cands[i].kb; }
static int64_t ig_kp(const pdnn__conv2d_call *c, int i) { return (c->k + ig_kt(i) - 1) / ig_kt(i) * ig_kt(i); }

/* Whether configuration i runs c: a work-item's channels share a group. */
static int ig_applies(const pdnn__conv2d_call *c, int i)
{
    return i >= 0 && i < N_IGEMM && !pdnn__cl_conv_int_why(c) && (c->groups == 1 || (c->k / c->groups) % ig_kt(i) == 0);
}

/* float16 and bfloat16 storage (issue 43): the kernel reduces over a
 * float32 copy of x in the workspace and an always packed filter (in the
 * storage dtype where pdnn__cl_pack_dtype says, widened as it loads,
 * else float32), then rounds once at the store. */
static int ig_reduced(const pdnn__op_call *call)
{
    return call->dtype == PDNN_FLOAT16 || call->dtype == PDNN_BFLOAT16;
}

/* A filter with k stride 1 and whole channel blocks (HWIO) is read in
 * place (float32 only), unless its c stride is 256 floats or more and packing it pays:
 * from 1 KiB on, the KT floats a step reads lie that far apart in a cache
 * that maps such strides onto few of its sets (HWIO in place ran 1.7x
 * slower than packed per call at K 256, batch 8, 14x14, on PoCL with
 * AVX-512). Packing pays where the filter is kept packed (frozen) or
 * read for 1024 pixels or more; at batch 1 on 7x7 the pack per call cost
 * what it saved. */
static int ig_in_place(const pdnn__op_call *call, int i)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return !ig_reduced(call) && c->ws[0] == 1 && c->k % ig_kt(i) == 0 &&
           (c->ws[1] < 256 || (!c->w_const && c->n * c->p * c->q < 1024));
}

/* An image of ig_relayout_floats or more (C*H*W floats; cl_device_table.c
 * says why) whose channels are not innermost (NCHW) is first copied
 * channels-last into the workspace, where the device has a threshold. */
static int ig_relayout(const void *dev, const pdnn__conv2d_call *c)
{
    const int64_t min = ((const cl_dev *)dev)->cls.t.ig_relayout_floats;
    return min > 0 && c->xs[1] != 1 && c->c * c->h * c->w >= min;
}

/* Floats of the channels-last copy (or, for float16 and bfloat16, the
 * float32 copy in either layout), rounded up to whole 64-byte lines. */
static int64_t ig_xt_floats(const void *dev, const pdnn__op_call *call)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return ig_reduced(call) || ig_relayout(dev, c) ? (c->n * c->h * c->w * c->c + 15) / 16 * 16 : 0;
}

/* The workspace: IG_ZEROS zero floats, which pixels outside the image
 * read (64 bytes: what follows stays aligned), the channels-last copy of
 * x where ig_relayout, then the packed filter unless it is read in place
 * (or kept: it is the tail, which plan leaves out). */
#define IG_ZEROS 16
static size_t ig_packed(void *dev, const pdnn__op_call *call, int i)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    return ig_in_place(call, i) ? 0
                                : (size_t)(ig_kp(c, i) * c->r * c->s * (c->c / c->groups)) *
                                      pdnn__dtype_size(pdnn__cl_pack_dtype(dev, call->dtype));
}

static size_t ig_ws(void *dev, const pdnn__op_call *call, int i)
{
    return (size_t)(IG_ZEROS + ig_xt_floats(dev, call)) * sizeof(float) + ig_packed(dev, call, i);
}

static int applies(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    return ig_applies(&call->u.conv2d, i);
}

static void ig_name(int i, char *buf, size_t len)
{
    if (i >= 0 && i < N_IGEMM)
        snprintf(buf, len, "vw=%d kb=%d pt=%d", ig_cands[i].vw, ig_cands[i].kb, ig_cands[i].pt);
    else
        snprintf(buf, len, "?");
}

/* Pixels per work-item. Where the device sweeps tiles (sweep_tiles) a
 * work-item sweeps as many pixel tiles as it can with the same KT filter
 * rows (R*S*cpg*KT floats), which are then read from memory once: all of
 * the batch's pixels, halved while there are fewer than 8 work-items per
 * compute unit; else one tile. */
static int64_t ig_span(const cl_dev *d, const pdnn__conv2d_call *c, int i)
{
    const int64_t pt = ig_cands[i].pt, npix = c->n * c->p * c->q;
    const int64_t tiles = (npix + pt - 1) / pt;
    if (!d->cls.t.sweep_tiles)
        return pt;
    /* At most 2^20 pixels: the kernel takes the span as an int. */
    int64_t per = tiles < ((int64_t)1 << 20) / pt ? tiles : ((int64_t)1 << 20) / pt;
    const int64_t nkb = ig_kp(c, i) / ig_kt(i), want = pdnn__cl_balanced_items(d);
    while (per > 1 && nkb * ((tiles + per - 1) / per) < want)
        per = (per + 1) / 2;
    return per * pt;
}

/* Enqueues call with configuration i and workspace ws. Called with
 * d->lock held. */
static pdnn_status ig_enqueue(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws)
{
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t cpg = c->c / c->groups, kt = ig_kt(i), kp = ig_kp(c, i);
    const int64_t npix = c->n * c->p * c->q;
    if (npix == 0 || c->k == 0)
        return PDNN_SUCCESS;
    const pdnn_dtype t = call->dtype; /* float16, bfloat16: REAL_T storage */
    /* The packed filter's dtype: t's under -DTILE_WR (conv2d_tile.cl). */
    const pdnn_dtype pt = ig_in_place(call, i) ? PDNN_FLOAT32 : pdnn__cl_pack_dtype(d, t);
    const char *real = pdnn__cl_real_opts(t);
    char opts[112];
    snprintf(opts, sizeof opts, "-DVW=%d -DKB=%d -DPT=%d%s%s%s", ig_cands[i].vw, ig_cands[i].kb, ig_cands[i].pt,
             real ? " " : "", real ? real : "", pt != PDNN_FLOAT32 ? " -DTILE_WR=1" : "");
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_implicit_gemm.cl", opts, "conv2d_implicit_gemm", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_int err = CL_SUCCESS;
    cl_mem wsb, zb = ws.region;
    cl_long wp_off, z_off = elem_off(ws);
    cl_long4 wstr;
    const cl_float zero = 0.0f;
    err = clEnqueueFillBuffer(d->queue, zb, &zero, sizeof zero, ws.offset, IG_ZEROS * sizeof(float), 0,
                              NULL, NULL);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clEnqueueFillBuffer(implicit_gemm zeros)", err);
    if (ig_in_place(call, i)) {
        wsb = c->w_buf.region;
        wp_off = elem_off(c->w_buf);
        wstr.s[0] = kt;
        wstr.s[1] = c->ws[2];
        wstr.s[2] = c->ws[3];
        wstr.s[3] = c->ws[1];
    } else {
        /* The frozen filter's kept copy (packed by its first call) or the
         * workspace's tail. */
        const int kept = c->wpack.region != NULL;
        const pdnn__buf wpb =
            kept ? c->wpack
                 : (pdnn__buf){ws.region, ws.offset + (size_t)(IG_ZEROS + ig_xt_floats(d, call)) * sizeof(float)};
        wsb = wpb.region;
        wp_off = pdnn__cl_real_off(wpb, pt);
        wstr.s[3] = kt;
        wstr.s[2] = cpg * kt;
        wstr.s[1] = c->s * cpg * kt;
        wstr.s[0] = c->r * c->s * cpg * kt;
        if (cpg > 0 && c->r * c->s > 0 && (!kept || c->wpack_fill)) {
            cl_kernel pk = NULL;
            st = pdnn__cl_kernel(d, "conv2d_implicit_gemm.cl", opts, "igemm_pack", &pk);
            if (st != PDNN_SUCCESS)
                return st;
            cl_mem w = c->w_buf.region;
            cl_long wo = pdnn__cl_real_off(c->w_buf, t);
            cl_long4 wst = strides4(c->ws);
            cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)cpg, (int)c->k);
            SET_ARG(pk, 0, w);
            SET_ARG(pk, 1, wo);
            SET_ARG(pk, 2, wst);
            SET_ARG(pk, 3, wsb);
            SET_ARG(pk, 4, wp_off);
            SET_ARG(pk, 5, filt);
            if (err != CL_SUCCESS)
                return pdnn__cl_fail("clSetKernelArg(igemm_pack)", err);
            /* One channel block per work-group; runs of 32 c (PACK_RUN) per tap. */
            size_t plocal[2] = {(size_t)kt, 1};
            size_t pglobal[2] = {(size_t)kp, (size_t)(c->r * c->s * ((cpg + 31) / 32))};
            err = clEnqueueNDRangeKernel(d->queue, pk, 2, NULL, pglobal, plocal, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                return pdnn__cl_fail("clEnqueueNDRangeKernel(igemm_pack)", err);
        }
    }
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : x;
    cl_long xo = elem_off(c->x_buf), yo = pdnn__cl_real_off(c->y_buf, t);
    cl_long bo = c->bias_buf.region ? pdnn__cl_real_off(c->bias_buf, t) : 0;
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    if (ig_reduced(call)) {
        /* x widened after the zeros, channels-last where ig_relayout
         * (as below) or x is, else channel-major; the kernel reads that. */
        const pdnn__buf xt = {ws.region, ws.offset + IG_ZEROS * sizeof(float)};
        st = pdnn__cl_widen_conv_x(d, call, ig_relayout(d, c) || c->xs[1] == 1, xt, &x, &xo, &xs);
        if (st != PDNN_SUCCESS)
            return st;
    } else if (ig_relayout(d, c)) {
        /* x channels-last (NHWC) after the zeros; the kernel reads that. */
        const pdnn__buf xt = {ws.region, ws.offset + IG_ZEROS * sizeof(float)};
        pdnn__transform_call tc = {.dims = {c->n, c->c, c->h, c->w},
                                   .xs = {c->xs[0], c->xs[1], c->xs[2], c->xs[3]},
                                   .x_buf = c->x_buf,
                                   .y_buf = xt};
        pdnn__layout_strides(PDNN_NHWC, tc.dims, tc.ys);
        st = pdnn__cl_transform_locked(d, &tc);
        if (st != PDNN_SUCCESS)
            return st;
        x = ws.region;
        xo = elem_off(xt);
        for (int a = 0; a < 4; a++)
            xs.s[a] = tc.ys[a];
    }
    const int64_t span = ig_span(d, c, i);
    cl_int4 dims = int4_of((int)c->n, (int)c->p, (int)c->q, (int)c->k);
    cl_int4 inp = int4_of((int)c->h, (int)c->w, (int)cpg, (int)(c->k / c->groups));
    cl_int4 filt = int4_of((int)c->r, (int)c->s, c->bias_buf.region != NULL, pdnn__cl_relu_word(c));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int4 pad = int4_of(c->pad_top, c->pad_left, (int)span, c->z_buf.region != NULL);
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
    SET_ARG(k, 11, inp);
    SET_ARG(k, 12, filt);
    SET_ARG(k, 13, geom);
    SET_ARG(k, 14, pad);
    SET_ARG(k, 15, wstr);
    SET_ARG(k, 16, zb);
    SET_ARG(k, 17, z_off);
    SET_ARG(k, 18, res);
    SET_ARG(k, 19, res_off);
    /* 1: a filter row's S taps of cpg channels are one run in x (NHWC,
     * ungrouped: a column is cpg channels) and in the filter (packed, or
     * HWIO in place), with dilation 1 across; 2: otherwise, with few
     * channels, a row's taps channel by channel from pointers set up once
     * per row (7x7/2 of 3 channels in NCHW: 1.35x; no gain measured at 64
     * channels and more, where the setup per tap is spread over them). */
    cl_int merge = c->dil_w == 1 && xs.s[3] == cpg * xs.s[1] && wstr.s[2] == cpg * wstr.s[3];
    if (!merge && cpg <= 16)
        merge = 2;
    SET_ARG(k, 20, merge);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_implicit_gemm)", err);
    /* Dimension 0: channel blocks (neighbouring work-items share the input
     * span, which stays in cache); dimension 1: pixel spans. */
    const size_t l1 = (size_t)d->cls.t.gemm_wg_pixels;
    size_t local[2] = {1, l1};
    const size_t gy = (size_t)((npix + span - 1) / span);
    size_t global[2] = {(size_t)(kp / kt), (gy + l1 - 1) / l1 * l1};
    err = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(conv2d_implicit_gemm)", err);
}

static const pdnn__cl_tunable tunable = {&pdnn__cl_algo_implicit_gemm, "conv2d_implicit_gemm", applies, ig_ws,
                                         ig_packed, ig_enqueue};

static void ig_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int dflt = pdnn__cl_default_config(dev, &tunable, pdnn__cl_y_channel_major(c) ? "nchw" : NULL);
    if (pdnn__cl_plan_tunable(&tunable, dev, call, dflt, plan) < 0) {
        const char *why = pdnn__cl_conv_int_why(c);
        if (why)
            pdnn__plan_refuse(plan, "implicit_gemm: %s", why);
        else
            pdnn__plan_refuse(plan,
                              "implicit_gemm runs groups == 1 or groups of a multiple of 4 output channels; this "
                              "one has %lld output channels in %lld groups",
                              (long long)c->k, (long long)c->groups);
        return;
    }
    if (plan->workspace > SIZE_MAX / 2) {
        pdnn__plan_refuse(plan, "implicit_gemm: its workspace is larger than this machine addresses");
        return;
    }
    /* Grouped convolutions were not measured against tiled. */
    if (c->groups != 1)
        pdnn__plan_skip(plan, "AUTO runs implicit_gemm on ungrouped convolutions only; this one has %lld groups",
                        (long long)c->groups);
}

static pdnn_status ig_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    return pdnn__cl_run_tunable(&tunable, dev, call, plan, ws, rep);
}

const pdnn__algo pdnn__cl_algo_implicit_gemm = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "implicit_gemm",
    .id = PDNN_CONV_ALGO_IMPLICIT_GEMM,
    /* Before winograd and tiled for every ungrouped convolution: on all
     * 16 of ResNet-50's non-1x1 layer shapes (conv1 7x7/2, 3x3 at
     * 56/28/14/7 incl. the /2 ones; batch 1 and 8, NCHW and NHWC) it
     * measured 1.9-9.3x tiled and 1.4-9.3x winograd (geomean 4.3x tiled,
     * 3.2x winograd on its stride-1 rows; 107-502 GFLOP/s where tiled had
     * 22-106; bench/results-conv.md). After gemm_1x1, which is
     * specialised for 1x1 layers. */
    .rank = 30,
    .n_configs = N_IGEMM,
    .config_name = ig_name,
    .plan = ig_plan,
    .run = ig_run,
    .residual = 1, /* z added in the epilogue (pad.s3) */
    .relu_cap = 1, /* and the relu's cap applied (filt.s3) */
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* float16, bfloat16: reduced in float32 (ig_reduced) */
};
