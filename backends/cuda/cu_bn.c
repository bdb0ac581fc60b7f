/* Batch normalization through cuDNN: forward (training and inference) and
 * backward. */
#include "cu_internal.h"

#include <string.h>

/* cuDNN's spatial mode is ours: statistics per channel over N, H, W; its
 * exponentialAverageFactor is our momentum, its running variance takes
 * the unbiased batch variance and its saved inverse variance is
 * 1/sqrt(var + eps), our saved_inv_std. NHWC goes through the strides.
 * The backward always writes dx, dgamma and dbeta: the ones the caller
 * did not ask for go to the workspace (dx first, then 2 C floats). */
typedef struct bn_plan {
    size_t dx_off, dgamma_off, dbeta_off, total;
} bn_plan;

_Static_assert(sizeof(bn_plan) <= sizeof(((pdnn__plan *)0)->state), "bn_plan must fit in pdnn__plan.state");

static void cu_bn_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    const pdnn__bn_call *c = &call->u.bn;
    const int64_t dims[4] = {c->n, c->c, c->h, c->w};
    if (!dims_fit(dims, c->xs) || !fits_int(c->n * c->c * c->h * c->w)) {
        pdnn__plan_refuse(plan, "CUDA: a batch normalization of %lldx%lldx%lldx%lld is too large for cuDNN, whose "
                          "descriptors take int sizes and strides",
                          (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w);
        return;
    }
    if ((double)c->epsilon < CUDNN_BN_MIN_EPSILON) {
        pdnn__plan_refuse(plan, "CUDA: epsilon %g is below cuDNN's minimum %g", (double)c->epsilon,
                          (double)CUDNN_BN_MIN_EPSILON);
        return;
    }
    bn_plan pl;
    memset(&pl, 0, sizeof pl);
    if (call->op == PDNN__OP_BN_BWD) {
        const size_t xbytes = (size_t)(c->n * c->c * c->h * c->w) * sizeof(float);
        const size_t vbytes = align256((size_t)c->c * sizeof(float));
        pl.dx_off = 0;
        pl.dgamma_off = c->dx_buf.region ? 0 : align256(xbytes);
        pl.dbeta_off = pl.dgamma_off + (c->dgamma_buf.region ? 0 : vbytes);
        pl.total = pl.dbeta_off + (c->dbeta_buf.region ? 0 : vbytes);
    }
    plan->workspace = pl.total;
    memcpy(plan->state, &pl, sizeof pl);
}

static pdnn_status bn_run_locked(cu_dev *d, const pdnn__op_call *call, const void *state, pdnn__buf ws)
{
    const bn_plan *pl = state;
    const pdnn__bn_call *c = &call->u.bn;
    const int64_t dims[4] = {c->n, c->c, c->h, c->w};
    const float one = 1.0f, zero = 0.0f;
    RETURN_IF_FAILED(pdnn__cu_set_4d(d->t[0], dims, c->xs));
    DNN(cudnnDeriveBNTensorDescriptor, d->t[1], d->t[0], CUDNN_BATCHNORM_SPATIAL);
    void *rm = c->running_mean_buf.region ? ptr(c->running_mean_buf) : NULL;
    void *rv = c->running_var_buf.region ? ptr(c->running_var_buf) : NULL;
    switch (call->op) {
    case PDNN__OP_BN_FWD_TRAIN:
        DNN(cudnnBatchNormalizationForwardTraining, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->y_buf), d->t[1], ptr(c->gamma_buf), ptr(c->beta_buf),
            (double)c->momentum, rm, rv, (double)c->epsilon,
            c->saved_mean_buf.region ? ptr(c->saved_mean_buf) : NULL,
            c->saved_inv_std_buf.region ? ptr(c->saved_inv_std_buf) : NULL);
        return PDNN_SUCCESS;
    case PDNN__OP_BN_FWD_INFER:
        DNN(cudnnBatchNormalizationForwardInference, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->y_buf), d->t[1], ptr(c->gamma_buf), ptr(c->beta_buf), rm, rv,
            (double)c->epsilon);
        return PDNN_SUCCESS;
    case PDNN__OP_BN_BWD: {
        char *w = ws.region ? (char *)ptr(ws) : NULL;
        void *dx = c->dx_buf.region ? ptr(c->dx_buf) : w + pl->dx_off;
        void *dg = c->dgamma_buf.region ? ptr(c->dgamma_buf) : w + pl->dgamma_off;
        void *db = c->dbeta_buf.region ? ptr(c->dbeta_buf) : w + pl->dbeta_off;
        DNN(cudnnBatchNormalizationBackward, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->dy_buf), d->t[0], dx, d->t[1], ptr(c->gamma_buf), dg, db,
            (double)c->epsilon, ptr(c->saved_mean_buf), ptr(c->saved_inv_std_buf));
        return PDNN_SUCCESS;
    }
    default:
        return pdnn__error(PDNN_ERR_INTERNAL, "CUDA: batch normalization called for op %d", (int)call->op);
    }
}

static pdnn_status cu_bn_run(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)rep; /* batch normalization has never filled rep: NULL below keeps it so */
    bn_plan pl;
    return pdnn__cu_run(dev, bn_run_locked, call, plan, &pl, sizeof pl, ws, NULL);
}

const pdnn__algo pdnn__cu_algo_bn_fwd_train = {
    .op = PDNN__OP_BN_FWD_TRAIN, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run};
const pdnn__algo pdnn__cu_algo_bn_fwd_infer = {
    .op = PDNN__OP_BN_FWD_INFER, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run};
const pdnn__algo pdnn__cu_algo_bn_bwd = {
    .op = PDNN__OP_BN_BWD, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run};
