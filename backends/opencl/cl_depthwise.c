/* Depthwise convolution on OpenCL (kernels_cl/conv2d_depthwise.cl): one
 * kernel per activation layout, each reading along that layout's
 * contiguous axis, no workspace. */
#include "backends/opencl/cl_internal.h"
#include "core/half.h"

#include <stdint.h>
#include <stdio.h>

extern const pdnn__algo pdnn__cl_algo_depthwise;

/* dw_nhwc's output columns per work-item: larger blocks amortise each
 * work-item's setup and filter loads; on PoCL 8 ran up to 1.5x faster than
 * 4. */
#define NHWC_TQ 8

/* dw_nchw's work-items: about the device's dw_nchw_items where the image
 * allows, as blocks of whole rows (N*K*P / items rows each, at least one)
 * and, where there are fewer rows than that, also blocks of column
 * chunks (cl_device_table.c says why). */

/* dw_plane (where the device's dw_plane_max_pixels allows: CPUs): whole
 * planes per work-item where there are this many planes, else blocks of
 * chunks to make about as many work-items, in work-groups of PLANE_WG.
 * On MobileNetV2's 3x3 layers (PoCL, AVX-512 EPYC, alternated runs) these
 * two were the fastest of 512 or 128 work-items in groups of 64, 8 or 1:
 * more, smaller blocks of chunks ran up to 1.6x slower at 14x14 and
 * 28x28. */
#define PLANE_ITEMS 128
#define PLANE_WG 8

enum { DW_NHWC, DW_NCHW, DW_PLANE, DW_KERNELS };

static const char *const dw_names[DW_KERNELS] = {"dw_nhwc", "dw_nchw", "dw_plane"};

/* groups == C is a depthwise convolution (K = C * m follows from core's
 * check that groups divide K). The launch grids index with int and have
 * to stay within what every device accepts per dimension. */
static void dw_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    const int64_t lim = INT32_MAX / 2;
    if (c->groups != c->c) {
        pdnn__plan_refuse(plan,
                          "depthwise runs only depthwise convolutions (groups == input channels); this one has "
                          "%lld input channels in %lld group(s)",
                          (long long)c->c, (long long)c->groups);
        return;
    }
    if (c->k > lim || c->q > lim || c->p > lim || c->w > lim || c->n * c->p > lim || c->n * c->k > lim) {
        pdnn__plan_refuse(plan, "depthwise: the tensors are too large for its launch grid");
        return;
    }
    plan->supported = 1;
    if (c->groups == 1)
        pdnn__plan_skip(plan, "one input channel is an ordinary convolution, which AUTO leaves to the others");
}

static size_t pow2_at_least(size_t v, size_t cap)
{
    size_t p = 1;
    while (p < v && p < cap)
        p *= 2;
    return p;
}

/* dw_nhwc's channels per work-item: the device's dw_nhwc_vw where K is
 * whole vectors of it, else 8 (a tail of 8 in 16 would take the per-lane
 * path). */
static int nhwc_vw(const cl_dev *d, const pdnn__conv2d_call *c)
{
    const int vw = d->cls.t.dw_nhwc_vw;
    return c->k % vw == 0 ? vw : 8;
}

/* dw_nchw's output columns per chunk: the device's dw_columns where the
 * output rows are dw_wide_min_q wide or more, else 8. */
static int nchw_qv(const cl_dev *d, const pdnn__conv2d_call *c)
{
    return c->q >= d->cls.t.dw_wide_min_q ? d->cls.t.dw_columns : 8;
}

/* dw_plane applies: NCHW planes contiguous in x and y, stride 1, an
 * output as large as the input ("same" padding), the filter size built
 * in (at most 8 x 8) and planes up to the device's dw_plane_max_pixels
 * (0 on GPUs, where it was not measured). */
static int use_plane(const cl_dev *d, const pdnn__conv2d_call *c)
{
    const int64_t max = d->cls.t.dw_plane_max_pixels;
    return max > 0 && c->x_layout == PDNN_NCHW && c->h * c->w <= max && c->r <= 8 && c->s <= 8 &&
           c->stride_h == 1 && c->stride_w == 1 && c->p == c->h && c->q == c->w && c->xs[3] == 1 &&
           c->xs[2] == c->w && c->ys[3] == 1 && c->ys[2] == c->q;
}

/* Chunks per work-item, so that `units` (rows or planes) split into blocks
 * of `chunks` chunks make about `want` work-items: all of a unit's chunks
 * where there are that many units already. */
static int chunks_per_item(int64_t units, int64_t chunks, int64_t want)
{
    const int64_t groups = units >= want ? 1 : (want + units - 1) / units;
    return (int)(groups >= chunks ? 1 : (chunks + groups - 1) / groups);
}

/* The OpenCL call that failed with err, for kernel `which`. */
static pdnn_status dw_fail(const char *call, int which, cl_int err)
{
    char what[64];
    snprintf(what, sizeof what, "%s(%s)", call, dw_names[which]);
    return pdnn__cl_fail(what, err);
}

/* Called with d->lock held; t: the tensors' dtype (every kernel stores
 * REAL_T and sums in float32). */
static pdnn_status dw_enqueue(cl_dev *d, const pdnn__conv2d_call *c, pdnn_dtype t)
{
    char opts[128];
    const int nhwc = c->x_layout == PDNN_NHWC, plane = !nhwc && use_plane(d, c);
    const int vw = nhwc ? nhwc_vw(d, c) : 8, qv = nhwc ? 8 : plane ? d->cls.t.dw_columns : nchw_qv(d, c);
    const int which = nhwc ? DW_NHWC : plane ? DW_PLANE : DW_NCHW;
    /* dw_nchw's output rows per block (DW_PB; filter rows in the padding
     * read a clamped row and are dropped). The rows per work-item are
     * whole blocks where the image allows: a block past a work-item's
     * rows computes rows it does not store. */
    const int pb = d->cls.t.dw_nchw_rows;
    /* NCHW: the filter size built in up to 8 x 8, so that the tap loops
     * unroll, the taps stay in registers, the border masks are worked out
     * once per chunk and rows go in blocks of DW_PB. */
    if (nhwc)
        snprintf(opts, sizeof opts, "-DDW_TQ=%d -DDW_VW=%d%s%s", NHWC_TQ, vw, t != PDNN_FLOAT32 ? " " : "",
                 t != PDNN_FLOAT32 ? pdnn__cl_real_opts(t) : "");
    else if (c->s <= 8 && c->r <= 8)
        snprintf(opts, sizeof opts, "-DDW_R=%d -DDW_S=%d -DDW_QV=%d -DDW_PB=%d%s%s", (int)c->r, (int)c->s, qv, pb,
                 t != PDNN_FLOAT32 ? " " : "", t != PDNN_FLOAT32 ? pdnn__cl_real_opts(t) : "");
    else
        snprintf(opts, sizeof opts, "-DDW_QV=%d%s%s", qv, t != PDNN_FLOAT32 ? " " : "",
                 t != PDNN_FLOAT32 ? pdnn__cl_real_opts(t) : "");
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "conv2d_depthwise.cl", opts, dw_names[which], &k);
    if (st != PDNN_SUCCESS)
        return st;
    if (c->n * c->k * c->p * c->q == 0)
        return PDNN_SUCCESS; /* an empty launch is invalid in OpenCL */

    cl_mem x = c->x_buf.region, w = c->w_buf.region, y = c->y_buf.region;
    /* Without a bias any valid buffer will do; the kernels do not read it. */
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : w;
    cl_long xo = pdnn__cl_real_off(c->x_buf, t), wo = pdnn__cl_real_off(c->w_buf, t),
            yo = pdnn__cl_real_off(c->y_buf, t);
    cl_long bo = c->bias_buf.region ? pdnn__cl_real_off(c->bias_buf, t) : 0;
    cl_long4 xs = strides4(c->xs), ws = strides4(c->ws), ys = strides4(c->ys);
    const int m = (int)(c->k / c->c);
    /* Which vector loads and stores are valid: see the kernels. */
    int fast;
    if (nhwc)
        fast = (m == 1 && c->xs[1] == 1) | (c->ws[0] == 1) << 1 | (c->ys[1] == 1) << 2;
    else
        fast = (c->xs[3] == 1) | (c->ys[3] == 1) << 2;
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, m);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, c->bias_buf.region != NULL, pdnn__cl_relu_word(c));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    /* dw_nchw's output rows and DW_QV-column chunks per work-item. */
    int tp = 1, cw = 1;
    const int64_t chunks = (c->q + qv - 1) / qv, rows = c->n * c->k * c->p;
    const int64_t plane_chunks = (c->h * c->w + qv - 1) / qv, planes = c->n * c->k;
    if (plane) {
        cw = chunks_per_item(planes, plane_chunks, PLANE_ITEMS);
    } else if (!nhwc) {
        const int64_t want = d->cls.t.dw_nchw_items;
        const int64_t t = rows / want;
        tp = (int)(t < 1 ? 1 : t > c->p ? c->p : t);
        const int64_t whole = (tp + pb - 1) / pb * pb; /* whole blocks of DW_PB rows */
        tp = (int)(whole > c->p ? c->p : whole);
        cw = chunks_per_item(rows, chunks, want);
    }
    cl_int4 pad_fast = int4_of(c->pad_top, c->pad_left, fast, tp);
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, w);
    SET_ARG(k, 3, wo);
    SET_ARG(k, 4, b);
    SET_ARG(k, 5, bo);
    SET_ARG(k, 6, y);
    SET_ARG(k, 7, yo);
    SET_ARG(k, 8, xs);
    SET_ARG(k, 9, ws);
    SET_ARG(k, 10, ys);
    SET_ARG(k, 11, in_dims);
    SET_ARG(k, 12, out_dims);
    SET_ARG(k, 13, filt);
    SET_ARG(k, 14, geom);
    SET_ARG(k, 15, pad_fast);
    cl_long x_end = xo + c->n * c->c * c->h * c->w;
    SET_ARG(k, 16, x_end);
    if (!nhwc) {
        cl_int cwa = cw;
        SET_ARG(k, 17, cwa);
    }
    if (err != CL_SUCCESS)
        return dw_fail("clSetKernelArg", which, err);

    /* NHWC: channel blocks x column blocks x image rows; NCHW: blocks of
     * tp rows x image channels x blocks of cw column chunks. A work-group spans the first two axes (up
     * to 64 work-items, the leading axis first), so that its work-items
     * read neighbouring memory. */
    size_t g[3];
    if (plane) {
        g[0] = 1;
        g[1] = (size_t)planes;
        g[2] = (size_t)((plane_chunks + cw - 1) / cw);
    } else if (nhwc) {
        g[0] = (size_t)((c->k + vw - 1) / vw);
        g[1] = (size_t)((c->q + NHWC_TQ - 1) / NHWC_TQ);
        g[2] = (size_t)(c->n * c->p);
    } else {
        g[0] = (size_t)((c->p + tp - 1) / tp);
        g[1] = (size_t)(c->n * c->k);
        g[2] = (size_t)((chunks + cw - 1) / cw);
    }
    const size_t cap = pdnn__cl_wg_cap(d, k, 64);
    size_t local[3];
    local[0] = pow2_at_least(g[0], cap < 16 ? cap : 16);
    local[1] = pow2_at_least(g[1], plane ? (cap < PLANE_WG ? cap : PLANE_WG) : cap / local[0]);
    local[2] = 1;
    size_t global[3];
    for (int i = 0; i < 3; i++)
        global[i] = (g[i] + local[i] - 1) / local[i] * local[i];
    err = clEnqueueNDRangeKernel(d->queue, k, 3, NULL, global, local, 0, NULL, NULL);
    return err == CL_SUCCESS ? PDNN_SUCCESS : dw_fail("clEnqueueNDRangeKernel", which, err);
}

static pdnn_status dw_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                          pdnn__run_report *rep)
{
    (void)plan;
    (void)ws;
    (void)rep;
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    pdnn_status st = dw_enqueue(d, &call->u.conv2d, call->dtype);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_depthwise = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "depthwise",
    .id = PDNN_CONV_ALGO_DEPTHWISE,
    /* First where it applies: 3-16x direct (what ran before it) on
     * MobileNet v1's depthwise layers (bench/results-depthwise.md); the
     * others are not specialised for one input channel per group. */
    .rank = 10,
    .plan = dw_plan,
    .run = dw_run,
    .relu_cap = 1, /* min(max(y, 0), cap) in both kernels (filt.s3) */
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT, /* every layout: REAL_T storage, float32 sums */
};
