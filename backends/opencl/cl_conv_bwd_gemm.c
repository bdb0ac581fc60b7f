/* Backward filter as GEMMs that stream the pixels
 * (kernels_cl/conv2d_bwd_gemm.cl): 1x1 NCHW at stride 1 (gemm_nt) and
 * every channels-last convolution (gemm_tn, a GEMM per filter tap). Its
 * tile configurations, plan (which calls it claims, the pixel chunks and
 * their workspace) and launches; the chunks' partial sums are added by
 * conv2d_bwd.cl's reduce kernel.
 *
 * x and dy in float16 or bfloat16 storage (issue 43): bfloat16's the
 * kernels widen as they load (REAL_T), float16's are widened into the
 * workspace first (gb_widens); the sums stay float32, and even one chunk
 * writes them to the (float32) workspace, so that the reduce rounds each
 * element of dw once: the host reference's contract. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>

extern const pdnn__algo pdnn__cl_algo_bwd_filter_gemm;

/* Compile-time tiles: VW-lane vectors; KT filter rows by CT input
 * channels (gemm_nt) or CT vectors of VW input channels (gemm_tn).
 * {16, 4, 4} and {16, 8, 2} hold 16 of AVX-512's 32 registers in
 * accumulators, {16, 12, 2} 24; {8, 4, 2} and {8, 6, 2} fit AVX2's 16
 * (8 and 12 accumulators); the others trade tile size for work-items. */
typedef struct gb_tile {
    int vw, kt, ct;
} gb_tile;
static const gb_tile gb_tiles[] = {{16, 4, 4}, {16, 8, 2}, {8, 4, 2}, {8, 6, 2},
                                   {16, 4, 2}, {16, 12, 2}, {16, 2, 4}, {4, 4, 4}};
#define N_TILES ((int)(sizeof gb_tiles / sizeof gb_tiles[0]))
/* Each tile with either chunking (gb_chunk): configuration i is tile
 * i % N_TILES with chunking i / N_TILES. */
#define N_GB (2 * N_TILES)
static const char *const gb_chunking_names[] = {"cache", "few"};
static const gb_tile *gb_tile_of(int i) { return &gb_tiles[i % N_TILES]; }

/* A 1x1 filter at stride 1 without padding, each image's pixels
 * contiguous per channel (NCHW) in x and dy: gemm_nt. */
static int gb_nt(const pdnn__conv2d_call *c)
{
    return c->r == 1 && c->s == 1 && c->pad_top == 0 && c->pad_left == 0 && c->xs[3] == 1 && c->xs[2] == c->w &&
           c->ys[3] == 1 && c->ys[2] == c->q && c->stride_h == 1 && c->stride_w == 1 && c->p == c->h &&
           c->q == c->w;
}
/* The channels contiguous (NHWC) in x and dy: gemm_tn. */
static int gb_tn(const pdnn__conv2d_call *c) { return c->xs[1] == 1 && c->ys[1] == 1; }

/* The shapes it runs: one group, one of the two memory orders, sizes
 * that fit the kernels' ints. */
static int gb_shape_ok(const pdnn__conv2d_call *c)
{
    return c->groups == 1 && c->p > 0 && c->q > 0 && c->n > 0 && c->k > 0 && c->c > 0 && c->k <= INT32_MAX / 16 &&
           c->c <= INT32_MAX / 16 && c->h <= INT32_MAX / 4 && c->w <= INT32_MAX / 4 && c->r * c->s <= INT32_MAX / 4 &&
           c->p * c->q <= INT32_MAX / 4 && c->n <= INT32_MAX / (c->p * c->q) && (gb_nt(c) || gb_tn(c));
}

static int applies(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    return i >= 0 && i < N_GB && gb_shape_ok(&call->u.conv2d);
}

/* Pixels per chunk, by chunking: "cache" (0) keeps a chunk's input
 * (chunk x (C + K) floats) within 1 MiB, so that it stays in a core's L2
 * while every filter tile reads it; "few" (1) makes chunks long enough
 * that their partial sums (K x C x R x S floats each, written and read
 * again by the reduce) cost at most a quarter of their input. Both at
 * least 256 pixels, 1024 for gemm_nt (whose vector loops run along the
 * pixels: 1.2-1.5x on ResNet-50's res2 and res3 1x1 layers), and at most
 * 256 chunks. One chunk needs no workspace. On ResNet-50's layers (PoCL,
 * AVX-512, batch 8) "cache" won where a layer has 1568 pixels or more,
 * "few" on the 392-pixel res5 layers (1.5-2.2x), which the default
 * follows. */
static int64_t gb_chunk(const pdnn__conv2d_call *c, int chunking)
{
    const int64_t total = c->n * c->p * c->q, ck = c->c + c->k, least = gb_nt(c) ? 1024 : 256;
    int64_t chunk = 262144 / ck;
    const int64_t partial = 4 * c->k * c->c * c->r * c->s / ck;
    if (chunking == 1 && chunk < partial)
        chunk = partial;
    if (chunk < least)
        chunk = least;
    if ((total + chunk - 1) / chunk > 256)
        chunk = (total + 255) / 256;
    return chunk < total ? chunk : total;
}

static int64_t gb_chunks(const pdnn__conv2d_call *c, int chunking)
{
    const int64_t chunk = gb_chunk(c, chunking);
    return (c->n * c->p * c->q + chunk - 1) / chunk;
}

/* Whether the partial sums go to the workspace: more than one chunk, or
 * dw stored in a reduced dtype (the reduce rounds it). */
static int gb_via_ws(const pdnn__op_call *call, int64_t chunks)
{
    return chunks > 1 || call->dtype == PDNN_FLOAT16 || call->dtype == PDNN_BFLOAT16;
}

/* float16's x and dy are widened into float32 copies first (the
 * workspace after the partials, each whole 64-byte lines) and the float32
 * kernels run on them: read in place (vload_half), ResNet's 3x3 (NHWC,
 * batch 8, PoCL) ran at 0.40x float32's GFLOP/s, widened first at 0.87x.
 * bfloat16's shifts are cheap: in place 0.86-0.90x, widened 0.82x. */
static int gb_widens(const pdnn__op_call *call) { return call->dtype == PDNN_FLOAT16; }

static int64_t gb_partial_floats(const pdnn__op_call *call, int i)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t chunks = gb_chunks(c, i / N_TILES);
    return gb_via_ws(call, chunks) ? (chunks * c->k * c->c * c->r * c->s + 15) / 16 * 16 : 0;
}

static size_t gb_ws(void *dev, const pdnn__op_call *call, int i)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    int64_t floats = gb_partial_floats(call, i);
    if (gb_widens(call))
        floats += (c->n * c->c * c->h * c->w + 15) / 16 * 16 + c->n * c->k * c->p * c->q;
    return (size_t)floats * sizeof(float);
}

static void gb_name(int i, char *buf, size_t len)
{
    if (i >= 0 && i < N_GB)
        snprintf(buf, len, "vw=%d kt=%d ct=%d chunks=%s", gb_tile_of(i)->vw, gb_tile_of(i)->kt, gb_tile_of(i)->ct,
                 gb_chunking_names[i / N_TILES]);
    else
        snprintf(buf, len, "?");
}

/* Enqueues call with configuration i. Called with d->lock held. */
static pdnn_status gb_enqueue(void *dev, const pdnn__op_call *call, int i, pdnn__buf ws)
{
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int nt = gb_nt(c), rs = (int)(c->r * c->s);
    const char *name = nt ? "bwd_filter_gemm_nt" : "bwd_filter_gemm_tn";
    const pdnn_dtype dt = call->dtype;
    const int widen = gb_widens(call);
    const char *real = widen ? NULL : pdnn__cl_real_opts(dt);
    char opts[80];
    const gb_tile *t = gb_tile_of(i);
    snprintf(opts, sizeof opts, "-DVW=%d -DKT=%d -DCT=%d%s%s", t->vw, t->kt, t->ct, real ? " " : "", real ? real : "");
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_bwd_gemm.cl", opts, name, &k);
    if (st != PDNN_SUCCESS)
        return st;
    const int64_t chunks = gb_chunks(c, i / N_TILES);
    cl_long chunk = gb_chunk(c, i / N_TILES);
    cl_mem x = c->x_buf.region, dy = c->y_buf.region, out;
    cl_long xo = pdnn__cl_real_off(c->x_buf, dt), dyo = pdnn__cl_real_off(c->y_buf, dt), oo;
    cl_long4 os, xs = strides4(c->xs), ys = strides4(c->ys);
    cl_long ochunk = 0;
    if (widen) { /* x, then dy, after the partials; each in its own layout's dense order */
        const int64_t pf = gb_partial_floats(call, i);
        const pdnn__buf xw = {ws.region, ws.offset + (size_t)pf * sizeof(float)};
        const pdnn__buf yw = {ws.region, xw.offset + (size_t)((c->n * c->c * c->h * c->w + 15) / 16 * 16) * sizeof(float)};
        const int64_t yd[4] = {c->n, c->k, c->p, c->q};
        int64_t yws[4];
        pdnn__layout_strides(nt ? PDNN_NCHW : PDNN_NHWC, yd, yws);
        if ((st = pdnn__cl_widen_conv_x(d, call, !nt, xw, &x, &xo, &xs)) != PDNN_SUCCESS ||
            (st = pdnn__cl_widen_locked(d, dt, c->y_buf, yd, c->ys, yw, yws)) != PDNN_SUCCESS)
            return st;
        dy = yw.region;
        dyo = elem_off(yw);
        ys = strides4(yws);
    }
    const int via_ws = gb_via_ws(call, chunks);
    if (via_ws) { /* partials part[chunk][k][c][r][s], the reduce's order */
        out = ws.region;
        oo = elem_off(ws);
        const int64_t s[4] = {c->c * rs, rs, c->s, 1};
        os = strides4(s);
        ochunk = c->k * c->c * rs;
    } else {
        out = c->w_buf.region;
        oo = elem_off(c->w_buf);
        os = strides4(c->ws);
    }
    /* The tiles of the smaller of C and K sweep first (the kernel's
     * comment). */
    cl_int cfirst = c->c <= c->k;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, dy);
    SET_ARG(k, 3, dyo);
    SET_ARG(k, 4, out);
    SET_ARG(k, 5, oo);
    SET_ARG(k, 6, os);
    SET_ARG(k, 7, ochunk);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, ys);
    const int64_t ct = nt ? t->ct : (int64_t)t->ct * t->vw;
    if (nt) {
        cl_int4 dims = int4_of((int)c->n, (int)(c->p * c->q), (int)c->k, (int)c->c);
        SET_ARG(k, 10, dims);
        SET_ARG(k, 11, chunk);
        SET_ARG(k, 12, cfirst);
    } else {
        cl_int4 dims = int4_of((int)c->n, (int)c->p, (int)c->q, (int)c->k);
        cl_int4 cdim = int4_of((int)c->c, (int)c->h, (int)c->w, 0);
        cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
        cl_int4 fdim = int4_of((int)c->r, (int)c->s, c->pad_top, c->pad_left);
        SET_ARG(k, 10, dims);
        SET_ARG(k, 11, cdim);
        SET_ARG(k, 12, geom);
        SET_ARG(k, 13, fdim);
        SET_ARG(k, 14, chunk);
        SET_ARG(k, 15, cfirst);
    }
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(bwd_filter_gemm)", err);
    /* Dimension 0 the tiles of the smaller of K and C, 1 the other's, 2
     * chunks x taps: the tiles of one chunk run together, while its
     * pixels are in cache. */
    const size_t kts = (size_t)((c->k + t->kt - 1) / t->kt), cts = (size_t)((c->c + ct - 1) / ct);
    size_t global[3] = {cfirst ? cts : kts, cfirst ? kts : cts, (size_t)(chunks * rs)}; /* rs = 1 for nt */
    size_t local[3] = {1, 1, 1};
    err = clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clEnqueueNDRangeKernel(bwd_filter_gemm)", err);
    if (!via_ws)
        return PDNN_SUCCESS;
    cl_kernel kr = NULL;
    st = pdnn__cl_kernel(d, "conv2d_bwd.cl", pdnn__cl_real_opts(dt), "conv2d_bwd_filter_reduce", &kr);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem dw = c->w_buf.region;
    cl_long dwo = pdnn__cl_real_off(c->w_buf, dt), elems = c->k * c->c * rs;
    cl_long4 wst = strides4(c->ws);
    cl_int4 rfilt = int4_of((int)c->r, (int)c->s, (int)c->c, (int)chunks);
    SET_ARG(kr, 0, out);
    SET_ARG(kr, 1, oo);
    SET_ARG(kr, 2, dw);
    SET_ARG(kr, 3, dwo);
    SET_ARG(kr, 4, wst);
    SET_ARG(kr, 5, rfilt);
    SET_ARG(kr, 6, elems);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(conv2d_bwd_filter_reduce)", err);
    return pdnn__cl_launch(d, kr, "conv2d_bwd_filter_reduce", elems);
}

static const pdnn__cl_tunable tunable = {&pdnn__cl_algo_bwd_filter_gemm, "conv2d_bwd_filter_gemm", applies, gb_ws,
                                         NULL, gb_enqueue};

/* The untuned configuration: the device's tile for gemm_nt or gemm_tn
 * (cl_device_table.c), with chunks "few" where "cache" would cut the
 * pixels into fewer than 4 chunks (gb_chunk). */
static int gb_default(const cl_dev *d, const pdnn__conv2d_call *c)
{
    const int i = pdnn__cl_default_config(d, &tunable, gb_nt(c) ? "nt" : "tn");
    return i < 0 ? -1 : i % N_TILES + (gb_chunks(c, 0) < 4 ? N_TILES : 0);
}

static void gb_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int dflt = gb_default(dev, c);
    if (!applies(dev, call, dflt) || pdnn__cl_plan_tunable(&tunable, dev, call, dflt, plan) < 0) {
        pdnn__plan_refuse(plan,
                          "gemm runs ungrouped filter gradients with x and dy channels-last, or 1x1 ones at "
                          "stride 1 unpadded with x and dy channels-first; this one: %lldx%lld, stride %d,%d, "
                          "padding %d,%d, groups %lld, x %s, dy %s",
                          (long long)c->r, (long long)c->s, c->stride_h, c->stride_w, c->pad_top, c->pad_left,
                          (long long)c->groups, c->xs[1] == 1 ? "channels-last" : "channels-first",
                          c->ys[1] == 1 ? "channels-last" : "channels-first");
        return;
    }
    /* Measured on CPUs (PoCL) only: bwd_filter_gemm_auto. Where most of
     * a tile's vector lanes would idle (few channels channels-last: Deep
     * MNIST's first layer has one; few pixels channels-first) the fixed
     * order passes it over; a search still measures it. */
    const gb_tile *t = gb_tile_of(plan->config);
    if (!((const cl_dev *)dev)->cls.t.bwd_filter_gemm_auto)
        pdnn__plan_skip(plan, "AUTO runs gemm on CPU devices only (not measured on GPUs)");
    else if (!gb_nt(c) && c->c * 2 < (int64_t)t->ct * t->vw)
        pdnn__plan_skip(plan, "%lld input channels fill less than half of gemm's %d-channel tile", (long long)c->c,
                        t->ct * t->vw);
    else if (gb_nt(c) && c->p * c->q < 2 * (int64_t)t->vw)
        pdnn__plan_skip(plan, "%lld pixels per image are fewer than two of gemm's %d-lane vectors",
                        (long long)(c->p * c->q), t->vw);
}

static pdnn_status gb_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    return pdnn__cl_run_tunable(&tunable, dev, call, plan, ws, rep);
}

const pdnn__algo pdnn__cl_algo_bwd_filter_gemm = {
    .op = PDNN__OP_CONV2D_BWD_FILTER,
    .name = "gemm",
    /* Before the general algorithms (bench/results-conv-bwd.md). */
    .rank = 10,
    .n_configs = N_GB,
    .config_name = gb_name,
    .plan = gb_plan,
    .run = gb_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* REAL_T loads, float32 sums, the reduce's one rounding */
};
