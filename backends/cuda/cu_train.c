/* The training ops through cuDNN: relu backward and the SGD optimizer. */
#include "cu_internal.h"

/* ---- the training ops ------------------------------------------------------
 * Relu backward is cudnnActivationBackward; SGD is cudnnOpTensor (v =
 * momentum v + g + wd w) and cudnnAddTensor (w -= lr v, or w = (1 - lr wd)
 * w - lr g without a velocity). Adam (a division and a square root per
 * element) and the fused cross-entropy have no cuDNN or cuBLAS form: Adam
 * is refused here, the cross-entropy has no entry, and soft placement
 * moves those nodes. */

static void cu_train_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    if (call->op == PDNN__OP_OPTIMIZER && call->u.optim.kind != PDNN_OPTIMIZER_SGD)
        pdnn__plan_refuse(plan, "Adam and AdamW need an elementwise division and square root, which neither cuDNN "
                                "nor cuBLAS has; place it on another device");
    else if (call->op == PDNN__OP_OPTIMIZER && call->u.optim.nesterov)
        pdnn__plan_refuse(plan, "Nesterov momentum needs w -= lr (g' + momentum v) after the velocity, a third "
                                "cudnnOpTensor pass; not written yet: place it on another device");
}

static pdnn_status relu_bwd_run(cu_dev *d, const pdnn__relu_bwd_call *c)
{
    const float one = 1.0f, zero = 0.0f;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        const size_t off = (size_t)i * sizeof(float);
        char *y = (char *)ptr(c->y_buf) + off;
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
        /* y stands for x too: relu's output and input are positive at the same elements. */
        DNN(cudnnActivationBackward, d->dnn, d->relu, &one, d->t[0], y, d->t[0], (char *)ptr(c->dy_buf) + off,
            d->t[0], y, &zero, d->t[0], (char *)ptr(c->dx_buf) + off);
    }
    return PDNN_SUCCESS;
}

static pdnn_status sgd_run(cu_dev *d, const pdnn__optim_call *c)
{
    const float one = 1.0f, mlr = -c->lr, wd = c->weight_decay, mom = c->momentum;
    const float keep = 1.0f - c->lr * c->weight_decay;
    for (int64_t i = 0; i < c->n; i += EW_CHUNK) {
        const int64_t len = c->n - i < EW_CHUNK ? c->n - i : EW_CHUNK;
        const size_t off = (size_t)i * sizeof(float);
        char *w = (char *)ptr(c->w_buf) + off, *g = (char *)ptr(c->g_buf) + off;
        RETURN_IF_FAILED(pdnn__cu_set_vec(d->t[0], len));
        if (c->s1_buf.region) {
            char *v = (char *)ptr(c->s1_buf) + off;
            DNN(cudnnOpTensor, d->dnn, d->add, &one, d->t[0], g, &wd, d->t[0], w, &mom, d->t[0], v);
            DNN(cudnnAddTensor, d->dnn, &mlr, d->t[0], v, &one, d->t[0], w);
        } else {
            DNN(cudnnAddTensor, d->dnn, &mlr, d->t[0], g, &keep, d->t[0], w);
        }
    }
    return PDNN_SUCCESS;
}

static pdnn_status train_body(cu_dev *d, const pdnn__op_call *call, const void *unused, pdnn__buf ws)
{
    (void)unused, (void)ws;
    return call->op == PDNN__OP_RELU_BWD ? relu_bwd_run(d, &call->u.relu_bwd) : sgd_run(d, &call->u.optim);
}

CU_DEFINE_RUN_NO_STATE(cu_train_run, train_body)

const pdnn__algo pdnn__cu_algo_relu_bwd_cudnn = {
    .op = PDNN__OP_RELU_BWD, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run,
    .tol = PDNN__TOL_F32(PDNN__TOL_EXACT)};
const pdnn__algo pdnn__cu_algo_optimizer_cudnn = {
    .op = PDNN__OP_OPTIMIZER, .name = "cudnn", .rank = 0, .plan = cu_train_plan, .run = cu_train_run};
