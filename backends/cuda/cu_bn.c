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
    size_t vec_off; /* float16/bfloat16: BN_VECS float32 vectors of C from here */
} bn_plan;

/* In float16 and bfloat16, x, y, dy and dx are in the dtype, but cuDNN
 * takes bnScaleBiasMeanVarDesc (gamma, beta, the running and saved
 * statistics, dgamma, dbeta) in float for HALF x: that is the type
 * cudnnDeriveBNTensorDescriptor derives for HALF and BFLOAT16 x, and the
 * only one the legacy batch normalization calls take beside them. polydnn
 * stores those vectors in x's dtype (docs/precision.md), so each is
 * widened into a float32 slot of the workspace, and each one cuDNN writes
 * is rounded back once: the host reference's rounding (widen, compute in
 * float32, round each output once). The slots: */
enum { BV_GAMMA, BV_BETA, BV_RMEAN, BV_RVAR, BV_SMEAN, BV_SINV, BV_DGAMMA, BV_DBETA, BN_VECS };

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
        const size_t xbytes = (size_t)(c->n * c->c * c->h * c->w) * pdnn__dtype_size(call->dtype); /* dx: x's dtype */
        const size_t vbytes = align256((size_t)c->c * sizeof(float));
        pl.dx_off = 0;
        pl.dgamma_off = c->dx_buf.region ? 0 : align256(xbytes);
        pl.dbeta_off = pl.dgamma_off + (c->dgamma_buf.region ? 0 : vbytes);
        pl.total = pl.dbeta_off + (c->dbeta_buf.region ? 0 : vbytes);
    }
    if (cu_reduced(call->dtype)) {
        pl.vec_off = align256(pl.total);
        pl.total = pl.vec_off + BN_VECS * align256((size_t)c->c * sizeof(float));
    }
    plan->workspace = pl.total;
    memcpy(plan->state, &pl, sizeof pl);
}

/* The batch normalization's vectors as cuDNN reads and writes them:
 * the call's buffers in float32, or (float16, bfloat16) float32 slots of
 * the workspace, the inputs among them widened first. NULL where the call
 * has none. t[1] is the derived float vector descriptor, t[2] is set here
 * to the same vector in the call's dtype. */
typedef struct bn_vecs {
    void *v[BN_VECS];
} bn_vecs;

static pdnn_status bn_vectors(cu_dev *d, const pdnn__op_call *call, const bn_plan *pl, pdnn__buf ws, bn_vecs *out)
{
    const pdnn__bn_call *c = &call->u.bn;
    const pdnn__buf bufs[BN_VECS] = {c->gamma_buf,    c->beta_buf,        c->running_mean_buf, c->running_var_buf,
                                     c->saved_mean_buf, c->saved_inv_std_buf, c->dgamma_buf,     c->dbeta_buf};
    for (int i = 0; i < BN_VECS; i++)
        out->v[i] = bufs[i].region ? ptr(bufs[i]) : NULL;
    if (!cu_reduced(call->dtype))
        return PDNN_SUCCESS;
    const int64_t vdims[4] = {1, c->c, 1, 1};
    RETURN_IF_FAILED(pdnn__cu_set_packed_as(d->t[2], cu_dnn_type(call->dtype), PDNN_NCHW, vdims));
    const size_t slot = align256((size_t)c->c * sizeof(float));
    /* What each op reads: forward gamma, beta and the running statistics
     * (training updates those in place); backward gamma and the saved ones. */
    const int reads[BN_VECS] = {[BV_GAMMA] = 1,
                                [BV_BETA] = call->op != PDNN__OP_BN_BWD,
                                [BV_RMEAN] = call->op != PDNN__OP_BN_BWD,
                                [BV_RVAR] = call->op != PDNN__OP_BN_BWD,
                                [BV_SMEAN] = call->op == PDNN__OP_BN_BWD,
                                [BV_SINV] = call->op == PDNN__OP_BN_BWD};
    for (int i = 0; i < BN_VECS; i++) {
        if (!out->v[i] && i != BV_DGAMMA && i != BV_DBETA)
            continue;
        void *f = (char *)ptr(ws) + pl->vec_off + (size_t)i * slot;
        if (reads[i])
            RETURN_IF_FAILED(pdnn__cu_convert(d, d->t[2], out->v[i], d->t[1], f));
        out->v[i] = f;
    }
    return PDNN_SUCCESS;
}

/* float16, bfloat16: the vectors cuDNN wrote, rounded once into the call's
 * buffers (those it has: dgamma and dbeta may be absent). */
static pdnn_status bn_round_back(cu_dev *d, const pdnn__op_call *call, const bn_vecs *v)
{
    const pdnn__bn_call *c = &call->u.bn;
    const int train = call->op == PDNN__OP_BN_FWD_TRAIN, bwd = call->op == PDNN__OP_BN_BWD;
    const struct {
        int i, wrote;
        pdnn__buf to;
    } outs[] = {{BV_RMEAN, train, c->running_mean_buf},  {BV_RVAR, train, c->running_var_buf},
                {BV_SMEAN, train, c->saved_mean_buf},    {BV_SINV, train, c->saved_inv_std_buf},
                {BV_DGAMMA, bwd, c->dgamma_buf},         {BV_DBETA, bwd, c->dbeta_buf}};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++)
        if (outs[k].wrote && outs[k].to.region)
            RETURN_IF_FAILED(pdnn__cu_convert(d, d->t[1], v->v[outs[k].i], d->t[2], ptr(outs[k].to)));
    return PDNN_SUCCESS;
}

static pdnn_status bn_run_locked(cu_dev *d, const pdnn__op_call *call, const void *state, pdnn__buf ws)
{
    const bn_plan *pl = state;
    const pdnn__bn_call *c = &call->u.bn;
    const int64_t dims[4] = {c->n, c->c, c->h, c->w};
    const float one = 1.0f, zero = 0.0f;
    if (cu_reduced(call->dtype) && !ws.region)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "CUDA: batch normalization in %s needs workspace for its "
                                                 "float32 vectors but got none",
                           pdnn__dtype_name(call->dtype));
    RETURN_IF_FAILED(pdnn__cu_set_4d_as(d->t[0], cu_dnn_type(call->dtype), dims, c->xs));
    DNN(cudnnDeriveBNTensorDescriptor, d->t[1], d->t[0], CUDNN_BATCHNORM_SPATIAL);
    bn_vecs v;
    RETURN_IF_FAILED(bn_vectors(d, call, pl, ws, &v));
    switch (call->op) {
    case PDNN__OP_BN_FWD_TRAIN:
        DNN(cudnnBatchNormalizationForwardTraining, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->y_buf), d->t[1], v.v[BV_GAMMA], v.v[BV_BETA], (double)c->momentum,
            v.v[BV_RMEAN], v.v[BV_RVAR], (double)c->epsilon, v.v[BV_SMEAN], v.v[BV_SINV]);
        return bn_round_back(d, call, &v);
    case PDNN__OP_BN_FWD_INFER:
        DNN(cudnnBatchNormalizationForwardInference, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->y_buf), d->t[1], v.v[BV_GAMMA], v.v[BV_BETA], v.v[BV_RMEAN],
            v.v[BV_RVAR], (double)c->epsilon);
        return PDNN_SUCCESS;
    case PDNN__OP_BN_BWD: {
        char *w = ws.region ? (char *)ptr(ws) : NULL;
        void *dx = c->dx_buf.region ? ptr(c->dx_buf) : w + pl->dx_off;
        void *dg = v.v[BV_DGAMMA] ? v.v[BV_DGAMMA] : w + pl->dgamma_off;
        void *db = v.v[BV_DBETA] ? v.v[BV_DBETA] : w + pl->dbeta_off;
        DNN(cudnnBatchNormalizationBackward, d->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d->t[0],
            ptr(c->x_buf), d->t[0], ptr(c->dy_buf), d->t[0], dx, d->t[1], v.v[BV_GAMMA], dg, db,
            (double)c->epsilon, v.v[BV_SMEAN], v.v[BV_SINV]);
        return bn_round_back(d, call, &v);
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
    .op = PDNN__OP_BN_FWD_TRAIN, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
const pdnn__algo pdnn__cu_algo_bn_fwd_infer = {
    .op = PDNN__OP_BN_FWD_INFER, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
const pdnn__algo pdnn__cu_algo_bn_bwd = {
    .op = PDNN__OP_BN_BWD, .name = "vendor", .rank = 0, .plan = cu_bn_plan, .run = cu_bn_run,
    .tol = PDNN__TOL_REDUCED(PDNN__TOL_DEFAULT), .dtypes = PDNN__DTYPES_FLOAT};
