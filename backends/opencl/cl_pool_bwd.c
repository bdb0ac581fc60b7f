/* Backward pooling on OpenCL (kernels_cl/pool2d_bwd.cl), any layout pair,
 * max and both averages:
 *   direct  a gather, one work-item per dx element over every window that
 *           holds it (each finds its window's maximum again): any call;
 *   window  one work-item per row of dy writing its windows of dx, for
 *           windows that do not overlap (stride >= window), the common
 *           2x2/2 case: each window's maximum is found once, not once per
 *           element, and one work-item runs a row of dy.
 * Both in float16 and bfloat16 too (the kernels over REAL_T: float32
 * sums, dx rounded once). */
#include "backends/opencl/cl_internal.h"
#include "core/half.h"

static void pool_bwd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    (void)call;
    (void)plan;
}

/* Whether the non-overlapping windows leave dx elements outside every
 * window (a stride above the window, or rows/columns past the last
 * window): those must be zeroed first. */
static int window_gaps(const pdnn__pool2d_call *c)
{
    return c->stride_h > c->win_h || c->stride_w > c->win_w ||
           (c->p - 1) * c->stride_h - c->pad_top + c->win_h < c->h ||
           (c->q - 1) * c->stride_w - c->pad_left + c->win_w < c->w;
}

/* Launches kernel name of file (pool2d_bwd.cl's, pool2d_bwd_max_plane)
 * over total work-items; they share their arguments. */
pdnn_status pdnn__cl_pool_bwd_launch(void *dev, const pdnn__pool2d_call *c, pdnn_dtype t, const char *file,
                                     const char *name, int64_t total, int zero_first, const pdnn__buf *acc)
{
    cl_dev *d = dev;
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, file, pdnn__cl_real_opts(t), name, &k);
    if (st == PDNN_SUCCESS && zero_first) {
        /* Zero is all-zero bits in each dtype: a pattern of the element's size. */
        const cl_uint zero = 0;
        const size_t es = pdnn__dtype_size(t);
        cl_int err = clEnqueueFillBuffer(d->queue, (cl_mem)c->dx_buf.region, &zero, es, c->dx_buf.offset,
                                         (size_t)(c->n * c->c * c->h * c->w) * es, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = pdnn__cl_fail("clEnqueueFillBuffer(pool2d_bwd_window dx)", err);
    }
    if (st == PDNN_SUCCESS) {
        cl_mem x = c->x_buf.region, dy = c->dy_buf.region, dx = c->dx_buf.region;
        cl_long xo = pdnn__cl_real_off(c->x_buf, t), dyo = pdnn__cl_real_off(c->dy_buf, t),
                dxo = pdnn__cl_real_off(c->dx_buf, t);
        cl_long4 xs = strides4(c->xs), ys = strides4(c->ys), dxs = strides4(c->dxs);
        cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
        /* The gather's decode order: dx's, channel fastest for NHWC. */
        cl_int4 out_dims = int4_of((int)c->p, (int)c->q, (int)c->mode, c->dx_layout == PDNN_NHWC);
        cl_int4 win = int4_of(c->win_h, c->win_w, c->stride_h, c->stride_w);
        cl_int4 pad = int4_of(c->pad_top, c->pad_bottom, c->pad_left, c->pad_right);
        cl_long total_arg = total;
        cl_int err = CL_SUCCESS;
        SET_ARG(k, 0, x);
        SET_ARG(k, 1, xo);
        SET_ARG(k, 2, xs);
        SET_ARG(k, 3, dy);
        SET_ARG(k, 4, dyo);
        SET_ARG(k, 5, ys);
        SET_ARG(k, 6, dx);
        SET_ARG(k, 7, dxo);
        SET_ARG(k, 8, dxs);
        SET_ARG(k, 9, in_dims);
        SET_ARG(k, 10, out_dims);
        SET_ARG(k, 11, win);
        SET_ARG(k, 12, pad);
        SET_ARG(k, 13, total_arg);
        if (acc) {
            cl_mem am = acc->region;
            cl_long ao = (cl_long)(acc->offset / sizeof(float));
            SET_ARG(k, 14, am);
            SET_ARG(k, 15, ao);
        }
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, name, total) : pdnn__cl_fail("clSetKernelArg(pool2d_bwd)", err);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status pool_bwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                                pdnn__run_report *rep)
{
    (void)plan, (void)wsb, (void)rep;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    return pdnn__cl_pool_bwd_launch(dev, c, call->dtype, "pool2d_bwd.cl", "pool2d_bwd", c->n * c->c * c->h * c->w, 0,
                                    NULL);
}

static void window_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    if (c->stride_h < c->win_h || c->stride_w < c->win_w)
        pdnn__plan_refuse(plan, "window needs windows that do not overlap (stride >= window); this is %dx%d "
                                "stride %d,%d", c->win_h, c->win_w, c->stride_h, c->stride_w);
}

static pdnn_status window_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                              pdnn__run_report *rep)
{
    (void)plan, (void)wsb, (void)rep;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    if (c->n * c->c * c->h * c->w == 0)
        return PDNN_SUCCESS;
    /* 2x2/2 pooling without padding, windows inside the image: the
     * vector kernels, over contiguous rows (NCHW) or channels (NHWC). */
    const int two = c->win_h == 2 && c->win_w == 2 && c->stride_h == 2 &&
                    c->stride_w == 2 && c->pad_top == 0 && c->pad_left == 0 && 2 * c->p <= c->h &&
                    2 * c->q <= c->w;
    const pdnn_dtype t = call->dtype;
    if (two && c->xs[3] == 1 && c->ys[3] == 1 && c->dxs[3] == 1)
        return pdnn__cl_pool_bwd_launch(dev, c, t, "pool2d_bwd.cl", "pool2d_bwd_2x2", c->n * c->c * c->p,
                                        window_gaps(c), NULL);
    if (two && c->xs[1] == 1 && c->ys[1] == 1 && c->dxs[1] == 1)
        return pdnn__cl_pool_bwd_launch(dev, c, t, "pool2d_bwd.cl", "pool2d_bwd_2x2_nhwc", c->n * c->p * c->q,
                                        window_gaps(c), NULL);
    return pdnn__cl_pool_bwd_launch(dev, c, t, "pool2d_bwd.cl", "pool2d_bwd_window", c->n * c->c * c->p,
                                    window_gaps(c), NULL);
}

const pdnn__algo pdnn__cl_algo_pool_bwd_window = {
    .op = PDNN__OP_POOL2D_BWD, .name = "window", .rank = 50, .plan = window_plan, .run = window_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};

const pdnn__algo pdnn__cl_algo_pool_bwd_direct = {
    .op = PDNN__OP_POOL2D_BWD, .name = "direct", .rank = 100, .plan = pool_bwd_plan, .run = pool_bwd_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
