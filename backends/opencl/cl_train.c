/* The training ops on OpenCL (kernels_cl/train.cl): relu backward, the
 * fused softmax cross-entropy, SGD and Adam steps; one "direct" algorithm
 * each. */
#include "backends/opencl/cl_internal.h"

#include <limits.h>
#include <math.h>

static void no_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan) { (void)dev, (void)call, (void)plan; }

/* Gets kernel name of train.cl under d->lock (held on success). */
static pdnn_status lock_kernel(cl_dev *d, const char *name, cl_kernel *k)
{
    pthread_mutex_lock(&d->lock);
    pdnn_status st = pdnn__cl_kernel(d, "train.cl", NULL, name, k);
    if (st != PDNN_SUCCESS)
        pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status relu_bwd_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                                pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__relu_bwd_call *c = &call->u.relu_bwd;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "relu_bwd", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem y = c->y_buf.region, dy = c->dy_buf.region, dx = c->dx_buf.region;
    cl_long yo = elem_off(c->y_buf), dyo = elem_off(c->dy_buf), dxo = elem_off(c->dx_buf), n = c->n;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, y);
    SET_ARG(k, 1, yo);
    SET_ARG(k, 2, dy);
    SET_ARG(k, 3, dyo);
    SET_ARG(k, 4, dx);
    SET_ARG(k, 5, dxo);
    SET_ARG(k, 6, n);
    st = pdnn__cl_launch_checked(d, k, "relu_bwd", err, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

static pdnn_status scale_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__scale_call *c = &call->u.scale;
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, "scale", &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem x = c->x_buf.region, y = c->y_buf.region;
    cl_long xo = elem_off(c->x_buf), yo = elem_off(c->y_buf), n = c->n;
    cl_float alpha = c->alpha;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, x);
    SET_ARG(k, 1, xo);
    SET_ARG(k, 2, y);
    SET_ARG(k, 3, yo);
    SET_ARG(k, 4, alpha);
    SET_ARG(k, 5, n);
    st = pdnn__cl_launch_checked(d, k, "scale", err, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* The workspace: one loss per row, then the bad-row flag (an int). */
static void xent_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__xent_call *c = &call->u.xent;
    if (c->n >= INT_MAX) {
        pdnn__plan_refuse(plan, "the batch of %lld rows does not fit the kernel's int row flag", (long long)c->n);
        return;
    }
    plan->workspace = ((size_t)c->n + 1) * sizeof(float);
}

static pdnn_status xent_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                            pdnn__run_report *rep)
{
    (void)plan, (void)rep;
    cl_dev *d = dev;
    const pdnn__xent_call *c = &call->u.xent;
    cl_kernel rows = NULL, mean = NULL;
    pdnn_status st = lock_kernel(d, "xent_rows", &rows);
    if (st != PDNN_SUCCESS)
        return st;
    if ((st = pdnn__cl_kernel(d, "train.cl", NULL, "xent_mean", &mean)) != PDNN_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return st;
    }
    cl_mem wsm = ws.region, x = c->logits_buf.region, lab = c->labels_buf.region, loss = c->loss_buf.region;
    const int want_dx = c->dlogits_buf.region != NULL;
    cl_mem dx = want_dx ? (cl_mem)c->dlogits_buf.region : wsm; /* unused without want_dx */
    cl_long xo = elem_off(c->logits_buf), lo = elem_off(c->labels_buf), dxo = want_dx ? elem_off(c->dlogits_buf) : 0;
    cl_long ro = elem_off(ws), fo = ro + c->n, losso = elem_off(c->loss_buf), n = c->n, kk = c->k;
    cl_int wdx = want_dx, none = INT_MAX;
    cl_int err = clEnqueueWriteBuffer(d->queue, wsm, CL_TRUE, ws.offset + (size_t)c->n * sizeof(float), sizeof none,
                                      &none, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        pthread_mutex_unlock(&d->lock);
        return pdnn__cl_fail("clEnqueueWriteBuffer(softmax_xent flag)", err);
    }
    SET_ARG(rows, 0, x);
    SET_ARG(rows, 1, xo);
    SET_ARG(rows, 2, lab);
    SET_ARG(rows, 3, lo);
    SET_ARG(rows, 4, dx);
    SET_ARG(rows, 5, dxo);
    SET_ARG(rows, 6, wdx);
    SET_ARG(rows, 7, wsm);
    SET_ARG(rows, 8, ro);
    SET_ARG(rows, 9, wsm);
    SET_ARG(rows, 10, fo);
    SET_ARG(rows, 11, n);
    SET_ARG(rows, 12, kk);
    st = pdnn__cl_launch_checked(d, rows, "xent_rows", err, n);
    if (st == PDNN_SUCCESS) {
        SET_ARG(mean, 0, wsm);
        SET_ARG(mean, 1, ro);
        SET_ARG(mean, 2, loss);
        SET_ARG(mean, 3, losso);
        SET_ARG(mean, 4, n);
        st = pdnn__cl_launch_checked(d, mean, "xent_mean", err, 1);
    }
    /* The flag, then the first bad row's label, read after the kernels
     * (blocking reads on the in-order queue). */
    cl_int bad = INT_MAX, value = 0;
    if (st == PDNN_SUCCESS &&
        (err = clEnqueueReadBuffer(d->queue, wsm, CL_TRUE, ws.offset + (size_t)c->n * sizeof(float), sizeof bad, &bad,
                                   0, NULL, NULL)) != CL_SUCCESS)
        st = pdnn__cl_fail("clEnqueueReadBuffer(softmax_xent flag)", err);
    if (st == PDNN_SUCCESS && bad < c->n &&
        (err = clEnqueueReadBuffer(d->queue, lab, CL_TRUE, c->labels_buf.offset + (size_t)bad * sizeof(cl_int),
                                   sizeof value, &value, 0, NULL, NULL)) != CL_SUCCESS)
        st = pdnn__cl_fail("clEnqueueReadBuffer(softmax_xent label)", err);
    pthread_mutex_unlock(&d->lock);
    if (st == PDNN_SUCCESS && bad < c->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "softmax_cross_entropy: labels[%d] is %d, outside [0, %lld) (the logits have %lld classes)",
                           (int)bad, (int)value, (long long)c->k, (long long)c->k);
    return st;
}

static pdnn_status optim_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)plan, (void)ws, (void)rep;
    cl_dev *d = dev;
    const pdnn__optim_call *c = &call->u.optim;
    const int adam = c->kind != PDNN_OPTIMIZER_SGD;
    const char *name = adam ? "adam_step" : "sgd_step";
    cl_kernel k = NULL;
    pdnn_status st = lock_kernel(d, name, &k);
    if (st != PDNN_SUCCESS)
        return st;
    cl_mem w = c->w_buf.region, g = c->g_buf.region;
    cl_mem s1 = c->s1_buf.region ? (cl_mem)c->s1_buf.region : w; /* unused without a slot */
    cl_long wo = elem_off(c->w_buf), go = elem_off(c->g_buf), s1o = c->s1_buf.region ? elem_off(c->s1_buf) : 0;
    cl_long n = c->n;
    cl_float lr = c->lr, wd = c->weight_decay;
    cl_int err = CL_SUCCESS;
    SET_ARG(k, 0, w);
    SET_ARG(k, 1, wo);
    SET_ARG(k, 2, g);
    SET_ARG(k, 3, go);
    SET_ARG(k, 4, s1);
    SET_ARG(k, 5, s1o);
    if (!adam) {
        cl_int has_v = c->s1_buf.region != NULL;
        cl_float mom = c->momentum;
        cl_int nesterov = c->nesterov;
        SET_ARG(k, 6, has_v);
        SET_ARG(k, 7, lr);
        SET_ARG(k, 8, mom);
        SET_ARG(k, 9, wd);
        SET_ARG(k, 10, n);
        SET_ARG(k, 11, nesterov);
    } else {
        cl_mem s2 = c->s2_buf.region;
        cl_long s2o = elem_off(c->s2_buf);
        cl_float b1 = c->beta1, b2 = c->beta2, eps = c->epsilon;
        cl_float bc1 = (cl_float)(1.0 - pow(c->beta1, (double)c->step));
        cl_float bc2 = (cl_float)(1.0 - pow(c->beta2, (double)c->step));
        SET_ARG(k, 6, s2);
        SET_ARG(k, 7, s2o);
        SET_ARG(k, 8, lr);
        SET_ARG(k, 9, b1);
        SET_ARG(k, 10, b2);
        SET_ARG(k, 11, eps);
        SET_ARG(k, 12, bc1);
        SET_ARG(k, 13, bc2);
        cl_int decoupled = c->kind == PDNN_OPTIMIZER_ADAMW;
        SET_ARG(k, 14, wd);
        SET_ARG(k, 15, n);
        SET_ARG(k, 16, decoupled);
    }
    st = pdnn__cl_launch_checked(d, k, name, err, n);
    pthread_mutex_unlock(&d->lock);
    return st;
}

const pdnn__algo pdnn__cl_algo_scale_direct = {
    .op = PDNN__OP_SCALE, .name = "direct", .rank = 100, .plan = no_plan, .run = scale_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__cl_algo_relu_bwd_direct = {
    .op = PDNN__OP_RELU_BWD, .name = "direct", .rank = 100, .plan = no_plan, .run = relu_bwd_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cl_algo_softmax_xent_direct = {
    .op = PDNN__OP_SOFTMAX_XENT, .name = "direct", .rank = 100, .plan = xent_plan, .run = xent_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
const pdnn__algo pdnn__cl_algo_optimizer_direct = {
    .op = PDNN__OP_OPTIMIZER, .name = "direct", .rank = 100, .plan = no_plan, .run = optim_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_DEFAULT)};
