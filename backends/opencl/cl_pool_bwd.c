/* Backward pooling on OpenCL (kernels_cl/pool2d_bwd.cl): one gather
 * kernel for max and both averages, any layout pair. */
#include "backends/opencl/cl_internal.h"

static void pool_bwd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    (void)call;
    (void)plan;
}

static pdnn_status pool_bwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                                pdnn__run_report *rep)
{
    (void)plan, (void)wsb, (void)rep;
    cl_dev *d = dev;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "pool2d_bwd.cl", NULL, "pool2d_bwd", &k);
    if (st == PDNN_SUCCESS) {
        cl_mem x = c->x_buf.region, dy = c->dy_buf.region, dx = c->dx_buf.region;
        cl_long xo = elem_off(c->x_buf), dyo = elem_off(c->dy_buf), dxo = elem_off(c->dx_buf);
        cl_long4 xs = strides4(c->xs), ys = strides4(c->ys), dxs = strides4(c->dxs);
        cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
        cl_int4 out_dims = int4_of((int)c->p, (int)c->q, (int)c->mode, c->dx_layout == PDNN_NHWC);
        cl_int4 win = int4_of(c->win_h, c->win_w, c->stride_h, c->stride_w);
        cl_int4 pad = int4_of(c->pad_top, c->pad_bottom, c->pad_left, c->pad_right);
        cl_long total = c->n * c->c * c->h * c->w;
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
        SET_ARG(k, 13, total);
        st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "pool2d_bwd", total)
                               : pdnn__cl_fail("clSetKernelArg(pool2d_bwd)", err);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_pool_bwd_direct = {
    .op = PDNN__OP_POOL2D_BWD, .name = "direct", .rank = 100, .plan = pool_bwd_plan, .run = pool_bwd_run};
