/* The N-d ops' backward registry ops on OpenCL (kernels_cl/nd_grad.cl):
 * layer norm's, "direct": the rows' statistics into the workspace, then
 * dx one work-item per row, or dscale / dbias one per column. */
#include "backends/opencl/cl_internal.h"

static void ln_bwd_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    plan->workspace = (size_t)call->u.layer_norm_bwd.rows * 3 * sizeof(float);
}

static pdnn_status ln_bwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                              pdnn__run_report *rep)
{
    (void)plan, (void)rep;
    cl_dev *d = dev;
    const pdnn__layer_norm_bwd_call *c = &call->u.layer_norm_bwd;
    const char *name = c->which ? "ln_bwd_param" : "ln_bwd_dx";
    pthread_mutex_lock(&d->lock);
    cl_kernel ks = NULL, k = NULL;
    pdnn_status st = pdnn__cl_kernel(d, "nd_grad.cl", NULL, "ln_bwd_stats", &ks);
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_kernel(d, "nd_grad.cl", NULL, name, &k);
    if (st != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_mem xm = c->x_buf.region, dm = c->dy_buf.region, gm = c->scale_buf.region, sm = ws.region,
           ym = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), dyo = elem_off(c->dy_buf), go = elem_off(c->scale_buf), so = elem_off(ws),
            yo = elem_off(c->y_buf), rows = c->rows, cols = c->cols;
    cl_float eps = c->epsilon;
    cl_int which = c->which, err = CL_SUCCESS;
    SET_ARG(ks, 0, xm);
    SET_ARG(ks, 1, xo);
    SET_ARG(ks, 2, sm);
    SET_ARG(ks, 3, so);
    SET_ARG(ks, 4, rows);
    SET_ARG(ks, 5, cols);
    SET_ARG(ks, 6, eps);
    st = pdnn__cl_launch_checked(d, ks, "ln_bwd_stats", err, c->rows);
    int a = 0;
    SET_ARG(k, a++, xm);
    SET_ARG(k, a++, xo);
    SET_ARG(k, a++, dm);
    SET_ARG(k, a++, dyo);
    if (!c->which) {
        SET_ARG(k, a++, gm);
        SET_ARG(k, a++, go);
    }
    SET_ARG(k, a++, sm);
    SET_ARG(k, a++, so);
    SET_ARG(k, a++, ym);
    SET_ARG(k, a++, yo);
    SET_ARG(k, a++, rows);
    SET_ARG(k, a++, cols);
    if (c->which)
        SET_ARG(k, a++, which);
    if (st == PDNN_SUCCESS)
        st = pdnn__cl_launch_checked(d, k, name, err, c->which ? c->cols : c->rows);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_layer_norm_bwd_direct = {
    .op = PDNN__OP_ND_LAYER_NORM_BWD, .name = "direct", .rank = 100, .plan = ln_bwd_plan, .run = ln_bwd_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
