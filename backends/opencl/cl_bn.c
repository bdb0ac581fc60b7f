/* Batch normalization on OpenCL (kernels_cl/batch_norm.cl): per-channel
 * sums over slices of N*H*W (partial sums in the workspace, then a
 * per-channel reduce), two passes for the variance, then the elementwise
 * normalize; the backward sums dy and dy * xhat the same way, then dx. */
#include "backends/opencl/cl_internal.h"

#include <stdio.h>
#include <string.h>

/* Where the parts of the workspace lie (elements from its start). */
typedef struct bn_plan {
    int64_t slices, chunk;        /* S slices of chunk values per channel */
    int64_t part, mean, inv, sums; /* partial sums (2 S C), mean (C), inv (C), dbeta/dgamma (2 C) */
    int64_t total;
} bn_plan;

_Static_assert(sizeof(bn_plan) <= sizeof(((pdnn__plan *)0)->state), "bn_plan must fit in pdnn__plan.state");

static int64_t round64(int64_t v) { return (v + 63) & ~(int64_t)63; } /* 256 bytes */

/* The slices of each channel's m = N*H*W values (batch_norm.cl): enough
 * that C * S work-items fill a device (4096), each a short float sum. NHWC:
 * runs of 16 to 1024 pixels. NCHW: S interleaved pixels of each image, at
 * most H*W of them (neighbouring work-items read neighbouring pixels). */
static void bn_layout(const pdnn__bn_call *c, bn_plan *pl)
{
    const int64_t m = c->n * c->h * c->w, hw = c->h * c->w;
    memset(pl, 0, sizeof *pl);
    if (c->layout == PDNN_NHWC) {
        int64_t chunk = (m * c->c + 4095) / 4096;
        chunk = chunk < 16 ? 16 : chunk > 1024 ? 1024 : chunk;
        pl->chunk = chunk;
        pl->slices = (m + chunk - 1) / chunk;
    } else {
        int64_t s = (4096 + c->c - 1) / c->c;
        s = s < 16 ? 16 : s;
        pl->slices = s < hw ? s : hw;
        pl->chunk = 0;
    }
    pl->part = 0;
    pl->mean = round64(2 * pl->slices * c->c);
    pl->inv = pl->mean + round64(c->c);
    pl->sums = pl->inv + round64(c->c);
    pl->total = pl->sums + round64(2 * c->c);
}

static void bn_plan_fn(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__bn_call *c = &call->u.bn;
    if (c->n * c->c * c->h * c->w > INT32_MAX / 2) {
        pdnn__plan_refuse(plan, "a batch normalization of %lld elements is beyond the kernels' int channel "
                          "indexing", (long long)(c->n * c->c * c->h * c->w));
        return;
    }
    bn_plan pl;
    bn_layout(c, &pl);
    plan->workspace = call->op == PDNN__OP_BN_FWD_INFER ? 0 : (size_t)pl.total * sizeof(float);
    memcpy(plan->state, &pl, sizeof pl);
}

/* A buffer argument: the buffer, or x's where it is absent (the kernel
 * never reads it then; a valid cl_mem keeps every driver happy). */
static cl_mem mem_or(pdnn__buf b, pdnn__buf dflt) { return b.region ? (cl_mem)b.region : (cl_mem)dflt.region; }

typedef struct bn_args {
    cl_dev *d;
    const pdnn__bn_call *c;
    const bn_plan *pl;
    cl_mem ws;
    cl_long ws_off; /* elements */
    cl_int N, C, S, nhwc, hw, m, chunk;
    cl_int rows, cols; /* the elementwise kernels' range: memory order as rows x cols */
    pdnn_dtype t;      /* the tensors' dtype; the workspace is float32 */
} bn_args;

/* The build options for the call's dtype; stats: the kernel reads the
 * saved or running statistics (the tensors' dtype), not the workspace's
 * (batch_norm.cl's STAT_T). */
static const char *bn_opts(const bn_args *a, int stats)
{
    if (a->t == PDNN_FLOAT16)
        return stats ? "-DPDNN_REAL=1 -DBN_STATS_REAL=1" : "-DPDNN_REAL=1";
    if (a->t == PDNN_BFLOAT16)
        return stats ? "-DPDNN_REAL=2 -DBN_STATS_REAL=1" : "-DPDNN_REAL=2";
    return NULL;
}

/* A tensor's offset in elements of the call's dtype. */
static cl_long roff(const bn_args *a, pdnn__buf b) { return pdnn__cl_real_off(b, a->t); }

/* bn_normalize's elements of a row a work-item. On CPUs long runs: PoCL
 * kept float16 and bfloat16 at 0.3-0.5x float32's speed with runs of 32
 * (100 MB NCHW tensors), at about 2x with 128, float32 unchanged. */
static cl_int bn_run_len(const cl_dev *d) { return pdnn__cl_is_cpu(d) ? 128 : 32; }

/* Enqueues k on the elementwise kernels' 2-D range: a->rows x a->cols
 * (batch_norm.cl bn_element), run elements of a row a work-item (1, or
 * bn_normalize's bn_run_len), work-groups of up to 64 along a row. */
static pdnn_status launch_rows(const bn_args *a, cl_kernel k, const char *name, cl_int run)
{
    const size_t cols = ((size_t)a->cols + (size_t)run - 1) / (size_t)run;
    size_t local = pdnn__cl_wg_cap(a->d, k, 64);
    while (local > 1 && local / 2 >= cols)
        local /= 2;
    const size_t global[2] = {(cols + local - 1) / local * local, (size_t)a->rows};
    const size_t lsize[2] = {local, 1};
    const cl_int err = clEnqueueNDRangeKernel(a->d->queue, k, 2, NULL, global, lsize, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clEnqueueNDRangeKernel(%s)", name);
        return pdnn__cl_fail(call, err);
    }
    return PDNN_SUCCESS;
}

static pdnn_status run_partial(const bn_args *a, cl_int what)
{
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(a->d, "batch_norm.cl", bn_opts(a, what == 2), "bn_partial", &k);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn__bn_call *c = a->c;
    cl_mem x = c->x_buf.region, dy = mem_or(c->dy_buf, c->x_buf);
    cl_long xo = roff(a, c->x_buf), dyo = c->dy_buf.region ? roff(a, c->dy_buf) : 0;
    cl_mem mean = a->ws, inv = a->ws;
    cl_long mo = a->ws_off + a->pl->mean, io = a->ws_off + a->pl->inv, po = a->ws_off + a->pl->part;
    if (what == 2) { /* the backward: the forward's saved statistics */
        mean = c->saved_mean_buf.region;
        mo = roff(a, c->saved_mean_buf);
        inv = c->saved_inv_std_buf.region;
        io = roff(a, c->saved_inv_std_buf);
    }
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, dy);
    SET_ARG(k, 3, dyo);
    SET_ARG(k, 4, mean);
    SET_ARG(k, 5, mo);
    SET_ARG(k, 6, inv);
    SET_ARG(k, 7, io);
    SET_ARG(k, 8, a->ws);
    SET_ARG(k, 9, po);
    SET_ARG(k, 10, a->N);
    SET_ARG(k, 11, a->C);
    SET_ARG(k, 12, a->hw);
    SET_ARG(k, 13, a->S);
    SET_ARG(k, 14, a->chunk);
    SET_ARG(k, 15, a->nhwc);
    SET_ARG(k, 16, what);
    return err == CL_SUCCESS ? pdnn__cl_launch(a->d, k, "bn_partial", (int64_t)a->S * a->C)
                             : pdnn__cl_fail("clSetKernelArg(bn_partial)", err);
}

/* The normalize: mean and stat (an inverse std from the workspace, or
 * the running variance when is_var). */
static pdnn_status run_normalize(const bn_args *a, cl_mem mean, cl_long mo, cl_mem stat, cl_long so, cl_int is_var)
{
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(a->d, "batch_norm.cl", bn_opts(a, is_var), "bn_normalize", &k);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn__bn_call *c = a->c;
    cl_mem x = c->x_buf.region, y = c->y_buf.region, g = c->gamma_buf.region, b = c->beta_buf.region;
    cl_long xo = roff(a, c->x_buf), yo = roff(a, c->y_buf), go = roff(a, c->gamma_buf), bo = roff(a, c->beta_buf);
    cl_float eps = c->epsilon;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, y);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, mean);
    SET_ARG(k, 5, mo);
    SET_ARG(k, 6, stat);
    SET_ARG(k, 7, so);
    SET_ARG(k, 8, g);
    SET_ARG(k, 9, go);
    SET_ARG(k, 10, b);
    SET_ARG(k, 11, bo);
    SET_ARG(k, 12, a->C);
    SET_ARG(k, 13, a->cols);
    SET_ARG(k, 14, a->nhwc);
    SET_ARG(k, 15, is_var);
    SET_ARG(k, 16, eps);
    const cl_int run = bn_run_len(a->d);
    SET_ARG(k, 17, run);
    return err == CL_SUCCESS ? launch_rows(a, k, "bn_normalize", run)
                             : pdnn__cl_fail("clSetKernelArg(bn_normalize)", err);
}

static pdnn_status fwd_train(const bn_args *a)
{
    const pdnn__bn_call *c = a->c;
    pdnn_status st = run_partial(a, 0);
    cl_kernel k = NULL;
    cl_long po = a->ws_off + a->pl->part, mo = a->ws_off + a->pl->mean, io = a->ws_off + a->pl->inv;
    cl_int err = CL_SUCCESS;
    if (st == PDNN_SUCCESS && (st = pdnn__cl_kernel(a->d, "batch_norm.cl", bn_opts(a, 0), "bn_mean", &k)) == PDNN_SUCCESS) {
        SET_ARG(k, 0, a->ws);
        SET_ARG(k, 1, po);
        SET_ARG(k, 2, a->ws);
        SET_ARG(k, 3, mo);
        SET_ARG(k, 4, a->C);
        SET_ARG(k, 5, a->S);
        SET_ARG(k, 6, a->m);
        st = err == CL_SUCCESS ? pdnn__cl_launch(a->d, k, "bn_mean", a->C) : pdnn__cl_fail("clSetKernelArg(bn_mean)", err);
    }
    if (st == PDNN_SUCCESS)
        st = run_partial(a, 1);
    if (st == PDNN_SUCCESS && (st = pdnn__cl_kernel(a->d, "batch_norm.cl", bn_opts(a, 0), "bn_finish", &k)) == PDNN_SUCCESS) {
        cl_mem sm = mem_or(c->saved_mean_buf, c->x_buf), si = mem_or(c->saved_inv_std_buf, c->x_buf);
        cl_mem rm = mem_or(c->running_mean_buf, c->x_buf), rv = mem_or(c->running_var_buf, c->x_buf);
        cl_long smo = roff(a, c->saved_mean_buf), sio = roff(a, c->saved_inv_std_buf);
        cl_long rmo = roff(a, c->running_mean_buf), rvo = roff(a, c->running_var_buf);
        cl_int saved = c->saved_mean_buf.region != NULL, running = c->running_mean_buf.region != NULL;
        cl_float eps = c->epsilon, mom = c->momentum;
        SET_ARG(k, 0, a->ws);
        SET_ARG(k, 1, po);
        SET_ARG(k, 2, a->ws);
        SET_ARG(k, 3, mo);
        SET_ARG(k, 4, a->ws);
        SET_ARG(k, 5, io);
        SET_ARG(k, 6, sm);
        SET_ARG(k, 7, smo);
        SET_ARG(k, 8, si);
        SET_ARG(k, 9, sio);
        SET_ARG(k, 10, saved);
        SET_ARG(k, 11, rm);
        SET_ARG(k, 12, rmo);
        SET_ARG(k, 13, rv);
        SET_ARG(k, 14, rvo);
        SET_ARG(k, 15, running);
        SET_ARG(k, 16, a->C);
        SET_ARG(k, 17, a->S);
        SET_ARG(k, 18, a->m);
        SET_ARG(k, 19, eps);
        SET_ARG(k, 20, mom);
        st = err == CL_SUCCESS ? pdnn__cl_launch(a->d, k, "bn_finish", a->C)
                               : pdnn__cl_fail("clSetKernelArg(bn_finish)", err);
    }
    if (st == PDNN_SUCCESS)
        st = run_normalize(a, a->ws, mo, a->ws, io, 0);
    return st;
}

static pdnn_status bwd(const bn_args *a)
{
    const pdnn__bn_call *c = a->c;
    pdnn_status st = run_partial(a, 2);
    cl_kernel k = NULL;
    cl_long po = a->ws_off + a->pl->part, so = a->ws_off + a->pl->sums;
    cl_int err = CL_SUCCESS;
    if (st == PDNN_SUCCESS && (st = pdnn__cl_kernel(a->d, "batch_norm.cl", bn_opts(a, 0), "bn_bwd_sums", &k)) == PDNN_SUCCESS) {
        cl_mem dg = mem_or(c->dgamma_buf, c->x_buf), db = mem_or(c->dbeta_buf, c->x_buf);
        cl_long dgo = roff(a, c->dgamma_buf), dbo = roff(a, c->dbeta_buf);
        cl_int want_dg = c->dgamma_buf.region != NULL, want_db = c->dbeta_buf.region != NULL;
        SET_ARG(k, 0, a->ws);
        SET_ARG(k, 1, po);
        SET_ARG(k, 2, a->ws);
        SET_ARG(k, 3, so);
        SET_ARG(k, 4, dg);
        SET_ARG(k, 5, dgo);
        SET_ARG(k, 6, want_dg);
        SET_ARG(k, 7, db);
        SET_ARG(k, 8, dbo);
        SET_ARG(k, 9, want_db);
        SET_ARG(k, 10, a->C);
        SET_ARG(k, 11, a->S);
        st = err == CL_SUCCESS ? pdnn__cl_launch(a->d, k, "bn_bwd_sums", a->C)
                               : pdnn__cl_fail("clSetKernelArg(bn_bwd_sums)", err);
    }
    if (st != PDNN_SUCCESS || !c->dx_buf.region)
        return st;
    if ((st = pdnn__cl_kernel(a->d, "batch_norm.cl", bn_opts(a, 0), "bn_bwd_dx", &k)) != PDNN_SUCCESS)
        return st;
    cl_mem x = c->x_buf.region, dy = c->dy_buf.region, dx = c->dx_buf.region, mean = c->saved_mean_buf.region,
           inv = c->saved_inv_std_buf.region, g = c->gamma_buf.region;
    cl_long xo = roff(a, c->x_buf), dyo = roff(a, c->dy_buf), dxo = roff(a, c->dx_buf),
            mo = roff(a, c->saved_mean_buf), io = roff(a, c->saved_inv_std_buf), go = roff(a, c->gamma_buf);
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, dy);
    SET_ARG(k, 3, dyo);
    SET_ARG(k, 4, dx);
    SET_ARG(k, 5, dxo);
    SET_ARG(k, 6, mean);
    SET_ARG(k, 7, mo);
    SET_ARG(k, 8, inv);
    SET_ARG(k, 9, io);
    SET_ARG(k, 10, g);
    SET_ARG(k, 11, go);
    SET_ARG(k, 12, a->ws);
    SET_ARG(k, 13, so);
    SET_ARG(k, 14, a->C);
    SET_ARG(k, 15, a->cols);
    SET_ARG(k, 16, a->nhwc);
    SET_ARG(k, 17, a->m);
    return err == CL_SUCCESS ? launch_rows(a, k, "bn_bwd_dx", 1) : pdnn__cl_fail("clSetKernelArg(bn_bwd_dx)", err);
}

static pdnn_status bn_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    (void)rep;
    cl_dev *d = dev;
    const pdnn__bn_call *c = &call->u.bn;
    bn_plan pl;
    memcpy(&pl, plan->state, sizeof pl);
    bn_args a;
    memset(&a, 0, sizeof a);
    a.d = d;
    a.c = c;
    a.pl = &pl;
    a.ws = ws.region;
    a.ws_off = ws.region ? elem_off(ws) : 0;
    /* packed NCHW or NHWC (core's calls): the kernels index from the sizes */
    a.N = (cl_int)c->n;
    a.C = (cl_int)c->c;
    a.S = (cl_int)pl.slices;
    a.nhwc = c->layout == PDNN_NHWC;
    a.hw = (cl_int)(c->h * c->w);
    a.m = (cl_int)(c->n * c->h * c->w);
    a.chunk = (cl_int)pl.chunk;
    a.t = call->dtype;
    a.rows = a.nhwc ? a.m : (cl_int)(c->n * c->c);
    a.cols = a.nhwc ? a.C : a.hw;
    pthread_mutex_lock(&d->lock);
    pdnn_status st;
    if (call->op == PDNN__OP_BN_FWD_TRAIN)
        st = fwd_train(&a);
    else if (call->op == PDNN__OP_BN_BWD)
        st = bwd(&a);
    else
        st = run_normalize(&a, c->running_mean_buf.region, roff(&a, c->running_mean_buf), c->running_var_buf.region,
                           roff(&a, c->running_var_buf), 1);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_bn_fwd_train = {
    .op = PDNN__OP_BN_FWD_TRAIN, .name = "direct", .rank = 100, .plan = bn_plan_fn, .run = bn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
const pdnn__algo pdnn__cl_algo_bn_fwd_infer = {
    .op = PDNN__OP_BN_FWD_INFER, .name = "direct", .rank = 100, .plan = bn_plan_fn, .run = bn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
const pdnn__algo pdnn__cl_algo_bn_bwd = {
    .op = PDNN__OP_BN_BWD, .name = "direct", .rank = 100, .plan = bn_plan_fn, .run = bn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
