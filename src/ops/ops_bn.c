/* Batch normalization (training and inference forward, backward):
 * validate in core, build the op call (backend.h pdnn__bn_call), dispatch. */
#include "ops/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void pdnn_batch_norm_params_init(pdnn_batch_norm_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->training = 1;
    p->epsilon = 1e-5f;
    p->momentum = 0.1f;
}

static pdnn_status check_params(const char *op, const pdnn_batch_norm_params *p)
{
    if (p->training != 0 && p->training != 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: params training is %d; it must be 1 (batch statistics) "
                           "or 0 (running statistics)", op, p->training);
    if (!(p->epsilon > 0.0f) || !isfinite(p->epsilon))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: params epsilon is %g; it must be a finite number > 0 (default 1e-5)", op,
                           (double)p->epsilon);
    if (!(p->momentum >= 0.0f && p->momentum <= 1.0f))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: params momentum is %g; it must be in [0, 1] (default 0.1)",
                           op, (double)p->momentum);
    return PDNN_SUCCESS;
}

/* t (when given) is a layout-X vector of C floats. */
static pdnn_status check_vector(const char *op, const char *name, const pdnn_tensor *t, const pdnn_tensor *x)
{
    if (!t)
        return PDNN_SUCCESS;
    const int64_t *d = t->desc.dims;
    if (t->desc.layout != PDNN_LAYOUT_X || d[0] != x->desc.dims[1] || d[1] != 1 || d[2] != 1 || d[3] != 1) {
        char td[96], xd[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: %s %s must be a layout-X vector {%lld,1,1,1} (x %s has %lld channels)", op, name,
                           pdnn__desc_string(&t->desc, td, sizeof td), (long long)x->desc.dims[1],
                           pdnn__desc_string(&x->desc, xd, sizeof xd), (long long)x->desc.dims[1]);
    }
    return PDNN_SUCCESS;
}

/* t (when given) has x's dims and layout. */
static pdnn_status check_like_x(const char *op, const char *name, const pdnn_tensor *t, const pdnn_tensor *x)
{
    if (!t)
        return PDNN_SUCCESS;
    if (t->desc.layout != x->desc.layout || memcmp(t->desc.dims, x->desc.dims, sizeof x->desc.dims) != 0) {
        char td[96], xd[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s %s must have x's dims and layout (x %s)", op, name,
                           pdnn__desc_string(&t->desc, td, sizeof td), pdnn__desc_string(&x->desc, xd, sizeof xd));
    }
    return PDNN_SUCCESS;
}

/* Each output of outs shares no memory with any other argument of all
 * (inputs and the other outputs; its own entry there, the one of the same
 * name, is skipped: the same tensor passed twice is still refused). */
static pdnn_status check_no_alias(const char *op, const pdnn_tensor *const *outs, const char *const *out_names, int n_out,
                                  const pdnn_tensor *const *all, const char *const *all_names, int n_all)
{
    for (int i = 0; i < n_out; i++) {
        if (!outs[i])
            continue;
        for (int j = 0; j < n_all; j++) {
            if (!all[j] || strcmp(all_names[j], out_names[i]) == 0)
                continue;
            const pdnn_status st = pdnn__check_alias(op, outs[i], out_names[i], all[j], all_names[j], 0);
            if (st != PDNN_SUCCESS)
                return st;
        }
    }
    return PDNN_SUCCESS;
}

static pdnn__buf buf_of(const pdnn_tensor *t)
{
    if (t)
        return t->block.buf;
    const pdnn__buf none = {NULL, 0};
    return none;
}

static void call_from(const pdnn_batch_norm_params *p, const pdnn_tensor *x, pdnn__bn_call *c)
{
    c->n = x->desc.dims[0];
    c->c = x->desc.dims[1];
    c->h = x->desc.dims[2];
    c->w = x->desc.dims[3];
    c->layout = x->desc.layout;
    pdnn__layout_strides(x->desc.layout, x->desc.dims, c->xs);
    c->epsilon = p->epsilon;
    c->momentum = p->momentum;
    c->x_buf = x->block.buf;
}

pdnn_status pdnn_batch_norm_forward(const pdnn_batch_norm_params *p, const pdnn_tensor *x, const pdnn_tensor *gamma,
                                    const pdnn_tensor *beta, pdnn_tensor *running_mean, pdnn_tensor *running_var,
                                    pdnn_tensor *saved_mean, pdnn_tensor *saved_inv_std, pdnn_tensor *y)
{
    static const char op[] = "batch_norm_forward";
    if (!p || !x || !gamma || !beta || !y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_batch_norm_forward: %s is NULL",
                           !p ? "params" : !x ? "x" : !gamma ? "gamma" : !beta ? "beta" : "y");
    pdnn_status st = check_params(op, p);
    if (st != PDNN_SUCCESS)
        return st;
    const int train = p->training;
    if (!train && (!running_mean || !running_var))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: inference (params training 0) normalizes with the running statistics, but %s is NULL",
                           op, !running_mean ? "running_mean" : "running_var");
    if (train && (!running_mean) != (!running_var))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: running_mean is %s but running_var is %s; give both (updated) or neither", op,
                           running_mean ? "given" : "NULL", running_var ? "given" : "NULL");
    if (train && (!saved_mean) != (!saved_inv_std))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: saved_mean is %s but saved_inv_std is %s; give both (for the backward) or neither",
                           op, saved_mean ? "given" : "NULL", saved_inv_std ? "given" : "NULL");
    if (!train)
        saved_mean = saved_inv_std = NULL; /* ignored */
    const pdnn_tensor *ts[] = {x, gamma, beta, running_mean, running_var, saved_mean, saved_inv_std, y};
    const char *names[] = {"x", "gamma", "beta", "running_mean", "running_var", "saved_mean", "saved_inv_std", "y"};
    if ((st = pdnn__same_device(op, ts, names, 8)) != PDNN_SUCCESS)
        return st;
    if ((st = pdnn__check_output(op, "x", x, x->desc.dims)) != PDNN_SUCCESS ||
        (st = check_like_x(op, "y", y, x)) != PDNN_SUCCESS)
        return st;
    for (int i = 1; i < 7; i++)
        if ((st = check_vector(op, names[i], ts[i], x)) != PDNN_SUCCESS)
            return st;
    /* Outputs: y always; the running statistics (read, then written in
     * place) and the saved ones in training. */
    const pdnn_tensor *outs[] = {y, train ? running_mean : NULL, train ? running_var : NULL, saved_mean,
                                 saved_inv_std};
    const char *out_names[] = {"y", "running_mean", "running_var", "saved_mean", "saved_inv_std"};
    if ((st = check_no_alias(op, outs, out_names, 5, ts, names, 8)) != PDNN_SUCCESS)
        return st;
    const int64_t m = x->desc.dims[0] * x->desc.dims[2] * x->desc.dims[3];
    if (train && running_var && m < 2) {
        char xd[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: x %s has one value per channel (N*H*W = %lld); the running variance takes the "
                           "unbiased batch variance, which needs at least 2 (pass running_mean/var NULL to "
                           "normalize without updating them)",
                           op, pdnn__desc_string(&x->desc, xd, sizeof xd), (long long)m);
    }
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = train ? PDNN__OP_BN_FWD_TRAIN : PDNN__OP_BN_FWD_INFER;
    call.dtype = x->desc.dtype;
    pdnn__bn_call *c = &call.u.bn;
    call_from(p, x, c);
    c->y_buf = y->block.buf;
    c->gamma_buf = gamma->block.buf;
    c->beta_buf = beta->block.buf;
    c->running_mean_buf = buf_of(running_mean);
    c->running_var_buf = buf_of(running_var);
    c->saved_mean_buf = buf_of(saved_mean);
    c->saved_inv_std_buf = buf_of(saved_inv_std);
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

pdnn_status pdnn_batch_norm_backward(const pdnn_batch_norm_params *p, const pdnn_tensor *x, const pdnn_tensor *dy,
                                     const pdnn_tensor *gamma, const pdnn_tensor *saved_mean,
                                     const pdnn_tensor *saved_inv_std, pdnn_tensor *dx, pdnn_tensor *dgamma,
                                     pdnn_tensor *dbeta)
{
    static const char op[] = "batch_norm_backward";
    if (!p || !x || !dy || !gamma || !saved_mean || !saved_inv_std)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_batch_norm_backward: %s is NULL",
                           !p ? "params" : !x ? "x" : !dy ? "dy" : !gamma ? "gamma" : !saved_mean ? "saved_mean"
                                                                                     : "saved_inv_std");
    if (!dx && !dgamma && !dbeta)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_batch_norm_backward: dx, dgamma and dbeta are all NULL; ask for one at least");
    pdnn_status st = check_params(op, p);
    if (st != PDNN_SUCCESS)
        return st;
    if (!p->training)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: params training is 0; the backward is the training-mode gradient (from the batch "
                           "statistics the forward saved)",
                           op);
    const pdnn_tensor *ts[] = {x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma, dbeta};
    const char *names[] = {"x", "dy", "gamma", "saved_mean", "saved_inv_std", "dx", "dgamma", "dbeta"};
    if ((st = pdnn__same_device(op, ts, names, 8)) != PDNN_SUCCESS)
        return st;
    if ((st = pdnn__check_output(op, "x", x, x->desc.dims)) != PDNN_SUCCESS ||
        (st = check_like_x(op, "dy", dy, x)) != PDNN_SUCCESS || (st = check_like_x(op, "dx", dx, x)) != PDNN_SUCCESS)
        return st;
    for (int i = 2; i < 8; i++)
        if (i != 5 && (st = check_vector(op, names[i], ts[i], x)) != PDNN_SUCCESS)
            return st;
    const pdnn_tensor *outs[] = {dx, dgamma, dbeta};
    const char *out_names[] = {"dx", "dgamma", "dbeta"};
    if ((st = check_no_alias(op, outs, out_names, 3, ts, names, 8)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_BN_BWD;
    call.dtype = x->desc.dtype;
    pdnn__bn_call *c = &call.u.bn;
    call_from(p, x, c);
    c->dy_buf = dy->block.buf;
    c->gamma_buf = gamma->block.buf;
    c->saved_mean_buf = saved_mean->block.buf;
    c->saved_inv_std_buf = saved_inv_std->block.buf;
    c->dx_buf = buf_of(dx);
    c->dgamma_buf = buf_of(dgamma);
    c->dbeta_buf = buf_of(dbeta);
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}
