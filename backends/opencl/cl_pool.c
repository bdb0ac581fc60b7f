/* 2-D pooling (kernels_cl/pool2d.cl) as five algorithms of
 * PDNN__OP_POOL2D_FWD, fastest first where each applies: "global" (NCHW,
 * the window the whole image: a plane per work-item), "flat" (NCHW at
 * stride 1 with the output the input's size: 16 outputs of a plane taken
 * flat per load), "rows" (a run of outputs along the input's contiguous
 * axis per work-item), "fast" (one output per work-item on a 3-D grid,
 * int indices) and "direct" (one output per work-item, long indices, any
 * size). */
#include "backends/opencl/cl_internal.h"

extern const pdnn__algo pdnn__cl_algo_pool_direct, pdnn__cl_algo_pool_fast, pdnn__cl_algo_pool_rows,
    pdnn__cl_algo_pool_flat, pdnn__cl_algo_pool_global;

/* Every index the fast and rows kernels compute in int stays in range
 * (always, but for tensors of billions of elements). */
static int fits_int(const pdnn__pool2d_call *c)
{
    return c->n * c->p < INT32_MAX && c->n * c->c < INT32_MAX && c->c + 64 < INT32_MAX && c->q + 64 < INT32_MAX &&
           c->h < INT32_MAX / 4 && c->w < INT32_MAX / 4;
}

/* The row kernels need the contiguous axis (channels for NHWC, rows for
 * NCHW); the NCHW one also a horizontal stride of 1 or 2 and a window its
 * registers hold. */
static int rows_fit(const pdnn__pool2d_call *c)
{
    if (c->x_layout == PDNN_NHWC)
        return c->xs[1] == 1;
    return c->xs[3] == 1 && ((c->stride_w == 1 && c->win_w <= 9) || (c->stride_w == 2 && c->win_w <= 17));
}

/* The arguments every pool kernel starts with; out_dims differs. */
static cl_int set_common(cl_kernel k, const pdnn__pool2d_call *c, cl_int4 out_dims, pdnn_dtype t)
{
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_long xo = pdnn__cl_real_off(c->x_buf, t), yo = pdnn__cl_real_off(c->y_buf, t);
    cl_long4 xs = strides4(c->xs), ys = strides4(c->ys);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 win = int4_of(c->win_h, c->win_w, c->stride_h, c->stride_w);
    cl_int4 pad = int4_of(c->pad_top, c->pad_left, c->pad_bottom, c->pad_right);
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, y);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, xs);
    SET_ARG(k, 5, ys);
    SET_ARG(k, 6, in_dims);
    SET_ARG(k, 7, out_dims);
    SET_ARG(k, 8, win);
    SET_ARG(k, 9, pad);
    return err;
}

/* Enqueues k over items work-items (none: nothing) in work-groups of
 * local, the range rounded up to whole groups. */
static pdnn_status launch_1d(cl_dev *d, cl_kernel k, int64_t items, size_t local, const char *what)
{
    const size_t global = ((size_t)items + local - 1) / local * local;
    const cl_int err =
        items > 0 ? clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL) : CL_SUCCESS;
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail(what, err);
}

/* ---- rows ------------------------------------------------------------------ */

/* On GPU-class devices AUTO runs fast, whose neighbouring work-items read
 * neighbouring floats, before rows (NCHW) and flat, whose items each read
 * a vector 16 floats from the next item's. ResNet-50's first max pool at
 * batch 32 on an H200 (NVIDIA's OpenCL; copy 4,156 GB/s): NCHW rows 380
 * GB/s, fast 1,035 GB/s; NHWC rows (8 channels by 2 pixels per item)
 * 1,520 GB/s, fast 939 GB/s, so NHWC keeps rows (bench/results-gpu.md). */
static void skip_on_gpu(const void *dev, pdnn__plan *plan, const char *name)
{
    if (plan->supported && !pdnn__cl_is_cpu(dev))
        pdnn__plan_skip(plan, "AUTO runs fast before %s on GPU-class devices in NCHW: its neighbouring work-items "
                              "read neighbouring floats", name);
}

static void rows_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__pool2d_call *c = &call->u.pool2d;
    if (!fits_int(c))
        pdnn__plan_refuse(plan, "rows: the tensors are too large for its int indices");
    else if (!rows_fit(c))
        pdnn__plan_refuse(plan,
                          c->x_layout == PDNN_NHWC
                              ? "rows runs NHWC input with contiguous channels"
                              : "rows runs NCHW input with contiguous rows at horizontal stride 1 (windows up to 9 "
                                "wide) or 2 (up to 17 wide)");
    else
        plan->supported = 1;
    if (c->x_layout != PDNN_NHWC)
        skip_on_gpu(dev, plan, "rows");
}

/* Called with d->lock held. */
static pdnn_status rows_enqueue(cl_dev *d, const pdnn__pool2d_call *c, pdnn_dtype t)
{
    const int nhwc = c->x_layout == PDNN_NHWC;
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "pool2d.cl", pdnn__cl_real_opts(t), nhwc ? "pool2d_nhwc_rows" : "pool2d_nchw_rows", &k);
    if (st != PDNN_SUCCESS)
        return st;
    /* Where the device sweeps (pool_sweep: CPUs; cl_device_table.c says
     * why) a whole output row per run; else one 16-output chunk (NCHW) or
     * 2 pixels (NHWC), as GPUs need tens of thousands of items in
     * flight. */
    const int sweep = d->cls.t.pool_sweep;
    const int64_t run = nhwc ? (sweep ? c->q : 2) : (sweep ? (c->q + 15) / 16 * 16 : 16);
    const int64_t runs = (c->q + run - 1) / run;
    /* NHWC channels per item: all of them where the device sweeps, so an
     * item streams through whole pixels; else one vector's worth. */
    const cl_int cpi = sweep ? (cl_int)c->c : 8;
    /* NCHW output rows per item: where the device sweeps as many as leave
     * 8 items per compute unit (a whole plane where there are enough
     * planes); else one. */
    cl_int rpi = 1;
    if (!nhwc && sweep) {
        const int64_t want = pdnn__cl_balanced_items(d), planes = c->n * c->c;
        const int64_t per_plane = planes >= want ? 1 : (want + planes - 1) / planes;
        rpi = (cl_int)((c->p + per_plane - 1) / per_plane);
        if (rpi < 1)
            rpi = 1;
    }
    const int64_t blocks = (c->p + rpi - 1) / rpi;
    const int64_t items = nhwc ? c->n * c->p * runs * ((c->c + cpi - 1) / cpi) : c->n * c->c * blocks * runs;
    cl_int err = set_common(k, c, int4_of((int)c->p, (int)c->q, (int)c->mode, (int)run), t);
    if (nhwc)
        SET_ARG(k, 10, cpi);
    else
        SET_ARG(k, 10, rpi);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(pool2d rows)", err);
    return launch_1d(d, k, items, (size_t)d->cls.t.pool_wg, "clEnqueueNDRangeKernel(pool2d rows)");
}

/* ---- flat and global ------------------------------------------------------- */

/* x's planes (and with y_too y's) contiguous: NCHW with packed rows. */
static int planes_packed(const pdnn__pool2d_call *c, int y_too)
{
    return c->xs[3] == 1 && c->xs[2] == c->w && (!y_too || (c->ys[3] == 1 && c->ys[2] == c->q));
}

static void flat_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__pool2d_call *c = &call->u.pool2d;
    if (!fits_int(c) || c->h * c->w > INT32_MAX - 32)
        pdnn__plan_refuse(plan, "flat: the tensors are too large for its int indices");
    else if (!planes_packed(c, 1))
        pdnn__plan_refuse(plan, "flat runs NCHW input and output with contiguous planes");
    else if (c->stride_h != 1 || c->stride_w != 1 || c->p != c->h || c->q != c->w)
        pdnn__plan_refuse(plan, "flat runs stride 1 with the output the input's size (padding the window's size "
                                "less one)");
    else
        plan->supported = 1;
    skip_on_gpu(dev, plan, "flat");
}

static void global_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    if (!fits_int(c) || c->h * c->w > INT32_MAX - 32)
        pdnn__plan_refuse(plan, "global: the tensors are too large for its int indices");
    else if (!planes_packed(c, 0))
        pdnn__plan_refuse(plan, "global runs NCHW input with contiguous planes");
    else if (c->win_h != c->h || c->win_w != c->w || c->pad_top || c->pad_left || c->pad_bottom || c->pad_right)
        pdnn__plan_refuse(plan, "global runs a window the whole image, without padding");
    else
        plan->supported = 1;
}

/* A plane per item (global), or runs of 16-output chunks of one (flat):
 * the whole plane where the device sweeps (pool_sweep), else one chunk.
 * Called with d->lock held. */
static pdnn_status plane_enqueue(cl_dev *d, const pdnn__pool2d_call *c, int global_pool, pdnn_dtype t)
{
    cl_kernel k = NULL;
    const char *name = global_pool ? "pool2d_nchw_global" : "pool2d_nchw_flat";
    pdnn_status st = pdnn__cl_kernel(d, "pool2d.cl", pdnn__cl_real_opts(t), name, &k);
    if (st != PDNN_SUCCESS)
        return st;
    const int64_t chunks = (c->h * c->w + 15) / 16, run = global_pool || !d->cls.t.pool_sweep ? 1 : chunks;
    const int64_t items = c->n * c->c * (global_pool ? 1 : (chunks + run - 1) / run);
    cl_int err = set_common(k, c, int4_of((int)c->p, (int)c->q, (int)c->mode, (int)run), t);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(pool2d plane)", err);
    return launch_1d(d, k, items, (size_t)d->cls.t.pool_wg, "clEnqueueNDRangeKernel(pool2d plane)");
}

static pdnn_status flat_enqueue(cl_dev *d, const pdnn__pool2d_call *c, pdnn_dtype t)
{
    return plane_enqueue(d, c, 0, t);
}

static pdnn_status global_enqueue(cl_dev *d, const pdnn__pool2d_call *c, pdnn_dtype t)
{
    return plane_enqueue(d, c, 1, t);
}

/* ---- fast ------------------------------------------------------------------ */

static void fast_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    if (fits_int(&call->u.pool2d))
        plan->supported = 1;
    else
        pdnn__plan_refuse(plan, "fast: the tensors are too large for its int indices");
}

/* The scalar 3-D kernel, the first axis the input's contiguous one where
 * there is one. Called with d->lock held. */
static pdnn_status fast_enqueue(cl_dev *d, const pdnn__pool2d_call *c, pdnn_dtype t)
{
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "pool2d.cl", pdnn__cl_real_opts(t), "pool2d_fast", &k);
    if (st != PDNN_SUCCESS)
        return st;
    const int nhwc = c->x_layout == PDNN_NHWC;
    const int64_t a0 = nhwc ? c->c : c->q, a1 = nhwc ? c->q : c->p, a2 = c->n * (nhwc ? c->p : c->c);
    cl_int err = set_common(k, c, int4_of((int)c->p, (int)c->q, (int)c->mode, nhwc), t);
    if (err != CL_SUCCESS)
        return pdnn__cl_fail("clSetKernelArg(pool2d)", err);
    /* On CPUs 16 along the contiguous axis (one AVX-512 vector); on GPUs
     * up to 64 along it and work-groups of 256 (groups of 16 leave most of
     * a GPU core's threads idle: it holds only so many groups); fewer
     * when the axis is short. */
    const int cpu = pdnn__cl_is_cpu(d);
    const size_t g0 = (size_t)a0;
    size_t l0 = cpu ? 16 : 64;
    while (l0 > 1 && g0 <= l0 / 2)
        l0 /= 2;
    size_t l1 = cpu ? 1 : 256 / l0;
    while (l1 > 1 && (l0 * l1 > d->max_wg || (size_t)a1 <= l1 / 2))
        l1 /= 2;
    size_t local[3] = {l0, l1, 1};
    size_t global[3] = {(g0 + l0 - 1) / l0 * l0, ((size_t)a1 + l1 - 1) / l1 * l1, (size_t)a2};
    const int64_t total = c->n * c->c * c->p * c->q;
    err = total > 0 ? clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL) : CL_SUCCESS;
    return err == CL_SUCCESS ? PDNN_SUCCESS : pdnn__cl_fail("clEnqueueNDRangeKernel(pool2d)", err);
}

/* ---- direct ---------------------------------------------------------------- */

static void direct_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    (void)call;
    plan->supported = 1;
}

/* Called with d->lock held. */
static pdnn_status direct_enqueue(cl_dev *d, const pdnn__pool2d_call *c, pdnn_dtype t)
{
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "pool2d.cl", pdnn__cl_real_opts(t), "pool2d_direct", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_long total = c->n * c->c * c->p * c->q;
    cl_int err = set_common(k, c, int4_of((int)c->p, (int)c->q, (int)c->mode, c->y_layout == PDNN_NHWC), t);
    SET_ARG(k, 10, total);
    return err == CL_SUCCESS ? pdnn__cl_launch(d, k, "pool2d_direct", total)
                             : pdnn__cl_fail("clSetKernelArg(pool2d_direct)", err);
}

/* ---- the entries ------------------------------------------------------------ */

/* Takes d->lock around one of the enqueues above; each kernel stores
 * float16 and bfloat16 too (the prelude's REAL_T, built with the call's
 * dtype). */
static pdnn_status locked_typed(void *dev, const pdnn__op_call *call,
                                pdnn_status (*enqueue)(cl_dev *, const pdnn__pool2d_call *, pdnn_dtype))
{
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    pdnn_status st = enqueue(d, &call->u.pool2d, call->dtype);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status rows_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)plan;
    (void)ws;
    (void)rep;
    return locked_typed(dev, call, rows_enqueue);
}

static pdnn_status flat_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)plan;
    (void)ws;
    (void)rep;
    return locked_typed(dev, call, flat_enqueue);
}

static pdnn_status global_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)plan;
    (void)ws;
    (void)rep;
    return locked_typed(dev, call, global_enqueue);
}

static pdnn_status fast_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)plan;
    (void)ws;
    (void)rep;
    return locked_typed(dev, call, fast_enqueue);
}

static pdnn_status direct_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)plan;
    (void)ws;
    (void)rep;
    return locked_typed(dev, call, direct_enqueue);
}

/* global and flat first where they apply (NCHW; 5-6x the rows kernel's
 * speed on GoogLeNet's and SqueezeNet's shapes, bench/results-pool.md),
 * then as the single pool entry point chose before: rows where it fits,
 * else fast, else direct. */
const pdnn__algo pdnn__cl_algo_pool_global = {
    .op = PDNN__OP_POOL2D_FWD,
    .name = "global",
    .rank = 4,
    .plan = global_plan,
    .run = global_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};

const pdnn__algo pdnn__cl_algo_pool_flat = {
    .op = PDNN__OP_POOL2D_FWD,
    .name = "flat",
    .rank = 5,
    .plan = flat_plan,
    .run = flat_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};

const pdnn__algo pdnn__cl_algo_pool_rows = {
    .op = PDNN__OP_POOL2D_FWD,
    .name = "rows",
    .rank = 10,
    .plan = rows_plan,
    .run = rows_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};

const pdnn__algo pdnn__cl_algo_pool_fast = {
    .op = PDNN__OP_POOL2D_FWD,
    .name = "fast",
    .rank = 20,
    .plan = fast_plan,
    .run = fast_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};

const pdnn__algo pdnn__cl_algo_pool_direct = {
    .op = PDNN__OP_POOL2D_FWD,
    .name = "direct",
    .rank = 30,
    .plan = direct_plan,
    .run = direct_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};
