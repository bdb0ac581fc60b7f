/* The direct convolution (kernels_cl/conv2d.cl: conv2d_direct): one
 * work-item per output element, any shape, no workspace. The slowest,
 * and the one that always runs. */
#include "backends/opencl/cl_internal.h"

static void direct_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    (void)call;
    plan->supported = 1;
}

static pdnn_status direct_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                              pdnn__run_report *rep)
{
    (void)plan;
    (void)wsb;
    (void)rep;
    cl_dev *d = dev;
    const pdnn__conv2d_call *c = &call->u.conv2d;
    pthread_mutex_lock(&d->lock);
    cl_kernel k = NULL;
    const pdnn_dtype t = call->dtype; /* float16, bfloat16: the kernel's REAL_T storage */
    pdnn_status st = pdnn__cl_kernel(d, "conv2d.cl", pdnn__cl_real_opts(t), "conv2d_direct", &k);
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_mem x = c->x_buf.region, w = c->w_buf.region, y = c->y_buf.region;
    /* Without a bias any valid buffer will do; the kernel does not read it. */
    cl_mem b = c->bias_buf.region ? (cl_mem)c->bias_buf.region : w;
    cl_long xo = pdnn__cl_real_off(c->x_buf, t), wo = pdnn__cl_real_off(c->w_buf, t),
            yo = pdnn__cl_real_off(c->y_buf, t);
    cl_long bo = c->bias_buf.region ? pdnn__cl_real_off(c->bias_buf, t) : 0;
    cl_long4 xs = strides4(c->xs), ws = strides4(c->ws), ys = strides4(c->ys);
    cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
    cl_int4 out_dims = int4_of((int)c->k, (int)c->p, (int)c->q, c->y_layout == PDNN_NHWC);
    cl_int4 filt = int4_of((int)c->r, (int)c->s, (int)(c->c / c->groups), (int)(c->k / c->groups));
    cl_int4 geom = int4_of(c->stride_h, c->stride_w, c->dil_h, c->dil_w);
    cl_int4 misc = int4_of(c->pad_top, c->pad_left, c->bias_buf.region != NULL, c->relu);
    cl_long total = c->n * c->k * c->p * c->q;
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
    SET_ARG(k, 15, misc);
    SET_ARG(k, 16, total);
    st = err == CL_SUCCESS ? pdnn__cl_launch(d, k, "conv2d_direct", total)
                           : pdnn__cl_fail("clSetKernelArg(conv2d_direct)", err);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_direct = {
    .op = PDNN__OP_CONV2D_FWD,
    .name = "direct",
    .id = PDNN_CONV_ALGO_DIRECT,
    /* Last: every other algorithm measured faster where it applies
     * (bench/results-conv.md); this one needs no workspace. */
    .rank = 100,
    .plan = direct_plan,
    .run = direct_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT),
    .dtypes = PDNN__DTYPES_FLOAT,
};
