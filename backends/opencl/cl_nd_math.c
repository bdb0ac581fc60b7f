/* The N-d math ops on OpenCL (kernels_cl/nd_math.cl): transpose (direct,
 * and tiled through the layout transform's kernels where core's plain
 * form has at most 4 axes), softmax along an axis, layer norm and the
 * reductions. The row kernels (softmax of rows, layer norm) run one
 * item per row, a plain loop ("direct", for CPUs), or a work-group per
 * row reducing through local memory ("group", GPU-class: AUTO passes
 * over it on CPUs). */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>

/* Takes d->lock and gets the kernel named name; on success the caller
 * holds the lock. */
static pdnn_status lock_kernel(cl_dev *d, const char *name, cl_kernel *k)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = pdnn__cl_kernel(d, "nd_math.cl", NULL, name, k);
    if (st != PDNN_SUCCESS)
        pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status unlock_with(cl_dev *d, pdnn_status st)
{
    pthread_mutex_unlock(&d->lock);
    return st;
}

static cl_long8 long8_of(const int64_t *v, int n)
{
    cl_long8 r;
    for (int i = 0; i < 8; i++)
        r.s[i] = i < n ? v[i] : 1;
    return r;
}

static void nd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

/* The arguments nd_transpose and nd_reduce begin with: x, its offset, y,
 * its offset, rank, dims. */
static cl_int set_nd_args(cl_kernel k, pdnn__buf x, pdnn__buf y, int rank, const int64_t *d)
{
    cl_mem xm = x.region, ym = y.region;
    cl_long xo = elem_off(x), yo = elem_off(y);
    cl_int r = rank;
    cl_long8 dims = long8_of(d, rank);
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, r);
    SET_ARG(k, 5, dims);
    return err;
}

static pdnn_status transpose_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                 pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__transpose_call *c = &call->u.transpose;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "nd_transpose", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_long total = 1;
    for (int i = 0; i < c->rank; i++)
        total *= c->dims[i];
    cl_long8 xs = long8_of(c->xs, c->rank);
    cl_int err = set_nd_args(k, c->x_buf, c->y_buf, c->rank, c->dims);
    SET_ARG(k, 6, xs);
    SET_ARG(k, 7, total);
    return unlock_with(d, pdnn__cl_launch_checked(d, k, "nd_transpose", err, total));
}

/* tiled: the plain form as a layout transform of 4 axes (y's, leading
 * ones of size 1), whose kernels stage tiles where the inner axes swap. */
static void tiled_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    if (call->u.transpose.rank > 4)
        pdnn__plan_refuse(plan, "the layout transform's kernels take 4 axes; this transpose keeps %d",
                          call->u.transpose.rank);
}

static pdnn_status tiled_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__transpose_call *c = &call->u.transpose;
    pdnn__transform_call t;
    memset(&t, 0, sizeof t);
    const int lead = 4 - c->rank;
    int64_t s = 1;
    for (int a = 3; a >= 0; a--) {
        t.dims[a] = a < lead ? 1 : c->dims[a - lead];
        t.xs[a] = a < lead ? s : c->xs[a - lead];
        t.ys[a] = s;
        s *= t.dims[a];
    }
    t.x_buf = c->x_buf;
    t.y_buf = c->y_buf;
    pthread_mutex_lock(&d->lock);
    return unlock_with(d, pdnn__cl_transform_locked(d, &t));
}

/* A row kernel's work-group: "direct" 1 (each item loops over its row,
 * which suits CPUs); "group" up to 256, a power of two no longer than
 * the row needs, reducing through local memory (GPUs). */
static size_t row_group(const cl_dev *d, cl_kernel k, int64_t cols, int group)
{
    size_t want = 1;
    while (group && want < 256 && (int64_t)want < cols)
        want *= 2;
    return pdnn__cl_wg_cap(d, k, want);
}

/* "group": GPU-class; rows only for softmax (columns have their own
 * coalesced kernel in "direct"). */
static void group_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    if (call->op == PDNN__OP_ND_SOFTMAX && call->u.softmax.inner != 1) {
        pdnn__plan_refuse(plan, "group: softmax along the innermost axis only (this one has %lld after it)",
                          (long long)call->u.softmax.inner);
        return;
    }
    if (pdnn__cl_is_cpu((const cl_dev *)dev))
        pdnn__plan_skip(plan, "AUTO runs a work-group per row on GPU-class devices; on CPUs one work-item per row");
}

/* Launches rows work-groups of wg items (d->lock held). */
static pdnn_status launch_rows(cl_dev *d, cl_kernel k, const char *name, cl_int err, int64_t rows, size_t wg)
{
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clSetKernelArg(%s)", name);
        return pdnn__cl_fail(what, err);
    }
    size_t global = (size_t)rows * wg, local = wg;
    err = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", name);
        return pdnn__cl_fail(what, err);
    }
    return PDNN_SUCCESS;
}

static pdnn_status softmax_launch(cl_dev *d, const pdnn__op_call *call, int group)
{
    const pdnn__softmax_call *c = &call->u.softmax;
    const int rows = c->inner == 1;
    const char *name = rows ? "nd_softmax_rows" : "nd_softmax_cols";
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, name, &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem xm = c->x_buf.region, ym = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf), n = c->n, inner = c->inner,
            total = c->outer * c->inner;
    cl_int lg = c->log;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, ym);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, n);
    if (!rows) {
        SET_ARG(k, 5, inner);
        SET_ARG(k, 6, total);
        SET_ARG(k, 7, lg);
        return unlock_with(d, pdnn__cl_launch_checked(d, k, name, err, total));
    }
    const size_t wg = row_group(d, k, c->n, group);
    SET_ARG(k, 5, lg);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 6, wg * sizeof(float), NULL);
    return unlock_with(d, launch_rows(d, k, name, err, c->outer, wg));
}

static pdnn_status layer_norm_launch(cl_dev *d, const pdnn__op_call *call, int group)
{
    const pdnn__layer_norm_call *c = &call->u.layer_norm;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "nd_layer_norm", &k);
    if (st != PDNN_SUCCESS)
        return st;
    const int has_bias = c->bias_buf.region != NULL;
    /* Without a bias the scale stands in for it (never read). */
    cl_mem xm = c->x_buf.region, gm = c->scale_buf.region, bm = has_bias ? c->bias_buf.region : c->scale_buf.region,
           ym = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), go = elem_off(c->scale_buf), bo = has_bias ? elem_off(c->bias_buf) : go,
            yo = elem_off(c->y_buf), cols = c->cols;
    cl_int hb = has_bias;
    cl_float eps = c->epsilon;
    const size_t wg = row_group(d, k, c->cols, group);
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, xm);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, gm);
    SET_ARG(k, 3, go);
    SET_ARG(k, 4, bm);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, hb);
    SET_ARG(k, 7, ym);
    SET_ARG(k, 8, yo);
    SET_ARG(k, 9, cols);
    SET_ARG(k, 10, eps);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 11, wg * sizeof(float), NULL);
    return unlock_with(d, launch_rows(d, k, "nd_layer_norm", err, c->rows, wg));
}

#define ROW_RUNS(name, launch, group)                                                                 \
    static pdnn_status name(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,          \
                            pdnn__run_report *rep)                                                               \
    {                                                                                                            \
        (void)plan, (void)ws, (void)rep;                                                                         \
        return launch(dev, call, group);                                                                         \
    }
ROW_RUNS(softmax_run, softmax_launch, 0)
ROW_RUNS(softmax_group_run, softmax_launch, 1)
ROW_RUNS(layer_norm_run, layer_norm_launch, 0)
ROW_RUNS(layer_norm_group_run, layer_norm_launch, 1)

static pdnn_status reduce_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__reduce_call *c = &call->u.reduce;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "nd_reduce", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_long count = 1, total = 1;
    for (int i = 0; i < c->rank; i++)
        *(c->axes >> i & 1u ? &count : &total) *= c->dims[i];
    cl_int axes = (cl_int)c->axes, kind = (cl_int)c->kind; /* the kernel's codes are pdnn_reduction's */
    cl_int err = set_nd_args(k, c->x_buf, c->y_buf, c->rank, c->dims);
    SET_ARG(k, 6, axes);
    SET_ARG(k, 7, kind);
    SET_ARG(k, 8, count);
    SET_ARG(k, 9, total);
    return unlock_with(d, pdnn__cl_launch_checked(d, k, "nd_reduce", err, total));
}

const pdnn__algo pdnn__cl_algo_transpose_direct = {
    .op = PDNN__OP_ND_TRANSPOSE, .name = "direct", .rank = 100, .plan = nd_plan, .run = transpose_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cl_algo_transpose_tiled = {
    .op = PDNN__OP_ND_TRANSPOSE, .name = "tiled", .rank = 50, .plan = tiled_plan, .run = tiled_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cl_algo_softmax_direct = {
    .op = PDNN__OP_ND_SOFTMAX, .name = "direct", .rank = 100, .plan = nd_plan, .run = softmax_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__cl_algo_layer_norm_direct = {
    .op = PDNN__OP_ND_LAYER_NORM, .name = "direct", .rank = 100, .plan = nd_plan, .run = layer_norm_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__cl_algo_softmax_group = {
    .op = PDNN__OP_ND_SOFTMAX, .name = "group", .rank = 50, .gpu_class = 1, .plan = group_plan,
    .run = softmax_group_run, .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__cl_algo_layer_norm_group = {
    .op = PDNN__OP_ND_LAYER_NORM, .name = "group", .rank = 50, .gpu_class = 1, .plan = group_plan,
    .run = layer_norm_group_run, .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__cl_algo_reduce_direct = {
    .op = PDNN__OP_ND_REDUCE, .name = "direct", .rank = 100, .plan = nd_plan, .run = reduce_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
