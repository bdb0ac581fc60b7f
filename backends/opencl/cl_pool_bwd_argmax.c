/* Max-pool backward on OpenCL for overlapping windows
 * (kernels_cl/pool2d_bwd_argmax.cl), where the `direct` gather finds
 * every window's maximum again for each element it covers (ResNet-18's
 * 3x3/2 stem pool at batch 64 took 141 ms of PoCL's time there, a quarter
 * of the whole training step):
 *   argmax  (GPU-class) each window's maximum found once into the
 *           workspace, then a gather over dx, one work-item per element;
 *   plane   (CPUs) one work-item per (n, c) plane adds each window's
 *           gradient at its maximum, windows in order.
 * Both write what `direct` writes, bit for bit, in float16 and bfloat16
 * too (plane's sums then in a float32 workspace, dx rounded once). */
#include "backends/opencl/cl_internal.h"

#include <limits.h>

static void argmax_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    if (c->mode != PDNN_POOL_MAX) {
        pdnn__plan_refuse(plan, "argmax is for max pooling");
        return;
    }
    if (c->h * c->w > INT_MAX) {
        pdnn__plan_refuse(plan, "argmax keeps in-image offsets as int: %lld x %lld pixels are too many",
                          (long long)c->h, (long long)c->w);
        return;
    }
    plan->workspace = (size_t)(c->n * c->c * c->p * c->q) * sizeof(cl_int);
    if (pdnn__cl_gpu_class_passes(dev))
        pdnn__plan_skip(plan, "AUTO runs argmax on GPU-class devices; on CPUs plane runs");
}

static pdnn_status argmax_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                              pdnn__run_report *rep)
{
    (void)rep;
    cl_dev *d = dev;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    const int64_t windows = c->n * c->c * c->p * c->q, elems = c->n * c->c * c->h * c->w;
    if (elems == 0)
        return PDNN_SUCCESS;
    if ((size_t)windows * sizeof(cl_int) > plan->workspace)
        return pdnn__error(PDNN_ERR_INTERNAL, "pool2d_bwd argmax: workspace smaller than planned");
    pthread_mutex_lock(&d->lock);
    cl_kernel kf = NULL, kg = NULL;
    const pdnn_dtype t = call->dtype;
    pdnn_status st = pdnn__cl_kernel(d, "pool2d_bwd_argmax.cl", pdnn__cl_real_opts(t), "pool2d_bwd_argmax_find", &kf);
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_kernel(d, "pool2d_bwd_argmax.cl", pdnn__cl_real_opts(t), "pool2d_bwd_argmax_gather", &kg);
    if (st == PDNN_SUCCESS) {
        cl_mem x = c->x_buf.region, dy = c->dy_buf.region, dx = c->dx_buf.region, arg = wsb.region;
        cl_long xo = pdnn__cl_real_off(c->x_buf, t), dyo = pdnn__cl_real_off(c->dy_buf, t),
                dxo = pdnn__cl_real_off(c->dx_buf, t);
        cl_long ao = (cl_long)(wsb.offset / sizeof(cl_int));
        cl_long4 xs = strides4(c->xs), ys = strides4(c->ys), dxs = strides4(c->dxs);
        cl_int4 in_dims = int4_of((int)c->n, (int)c->c, (int)c->h, (int)c->w);
        /* Both passes run, and number the windows, in dx's memory order. */
        cl_int4 out_dims = int4_of((int)c->p, (int)c->q, 0, c->dx_layout == PDNN_NHWC);
        cl_int4 win = int4_of(c->win_h, c->win_w, c->stride_h, c->stride_w);
        cl_int4 pad = int4_of(c->pad_top, c->pad_bottom, c->pad_left, c->pad_right);
        cl_long nw = windows, ne = elems;
        cl_int err = CL_SUCCESS;
        SET_ARG(kf, 0, x);
        SET_ARG(kf, 1, xo);
        SET_ARG(kf, 2, xs);
        SET_ARG(kf, 3, arg);
        SET_ARG(kf, 4, ao);
        SET_ARG(kf, 5, in_dims);
        SET_ARG(kf, 6, out_dims);
        SET_ARG(kf, 7, win);
        SET_ARG(kf, 8, pad);
        SET_ARG(kf, 9, nw);
        SET_ARG(kg, 0, arg);
        SET_ARG(kg, 1, ao);
        SET_ARG(kg, 2, dy);
        SET_ARG(kg, 3, dyo);
        SET_ARG(kg, 4, ys);
        SET_ARG(kg, 5, dx);
        SET_ARG(kg, 6, dxo);
        SET_ARG(kg, 7, dxs);
        SET_ARG(kg, 8, in_dims);
        SET_ARG(kg, 9, out_dims);
        SET_ARG(kg, 10, win);
        SET_ARG(kg, 11, pad);
        SET_ARG(kg, 12, ne);
        st = err != CL_SUCCESS ? pdnn__cl_fail("clSetKernelArg(pool2d_bwd_argmax)", err)
                               : pdnn__cl_launch(d, kf, "pool2d_bwd_argmax_find", windows);
        if (st == PDNN_SUCCESS)
            st = pdnn__cl_launch(d, kg, "pool2d_bwd_argmax_gather", elems);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

static void plane_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    const pdnn__pool2d_call *c = &call->u.pool2d;
    if (c->mode != PDNN_POOL_MAX) {
        pdnn__plan_refuse(plan, "plane is for max pooling");
        return;
    }
    /* float16, bfloat16: each plane's x widened and its float32 sums, dx
     * rounded from them once. */
    if (call->dtype != PDNN_FLOAT32)
        plan->workspace = 2 * (size_t)(c->n * c->c * c->h * c->w) * sizeof(cl_float);
    if (!pdnn__cl_is_cpu(dev))
        pdnn__plan_skip(plan, "AUTO runs plane on CPU devices: a work-item a plane starves a GPU");
    else if (c->n * c->c < 8)
        pdnn__plan_skip(plan, "%lld planes are too few work-items for plane", (long long)(c->n * c->c));
}

static pdnn_status plane_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf wsb,
                             pdnn__run_report *rep)
{
    (void)rep;
    const pdnn__pool2d_call *c = &call->u.pool2d;
    const int64_t elems = c->n * c->c * c->h * c->w;
    if (elems == 0)
        return PDNN_SUCCESS;
    /* float32 adds in dx itself; the kernel leaves acc unused there. */
    const pdnn__buf acc = call->dtype == PDNN_FLOAT32 ? c->dx_buf : wsb;
    if (call->dtype != PDNN_FLOAT32 && 2 * (size_t)elems * sizeof(cl_float) > plan->workspace)
        return pdnn__error(PDNN_ERR_INTERNAL, "pool2d_bwd plane: workspace smaller than planned");
    return pdnn__cl_pool_bwd_launch(dev, c, call->dtype, "pool2d_bwd_argmax.cl", "pool2d_bwd_max_plane", c->n * c->c,
                                    0, &acc);
}

/* Before `direct` (100), after `window` (50), which needs no workspace
 * where windows do not overlap. */
const pdnn__algo pdnn__cl_algo_pool_bwd_argmax = {
    .op = PDNN__OP_POOL2D_BWD, .name = "argmax", .rank = 75, .gpu_class = 1, .plan = argmax_plan,
    .run = argmax_run, .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};

const pdnn__algo pdnn__cl_algo_pool_bwd_plane = {
    .op = PDNN__OP_POOL2D_BWD, .name = "plane", .rank = 76, .plan = plane_plan, .run = plane_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
