/* The training ops around the backward convolutions (relu backward, fused
 * softmax cross-entropy, optimizer steps): validate in core, build the op
 * call, dispatch (registry ops, see backend.h). */
#include "core/half.h"
#include "ops/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int same_desc(const pdnn_tensor *a, const pdnn_tensor *b)
{
    return a->desc.dtype == b->desc.dtype && a->desc.layout == b->desc.layout &&
           memcmp(a->desc.dims, b->desc.dims, sizeof a->desc.dims) == 0;
}

/* b must have a's desc; else an error naming both. */
static pdnn_status check_same_desc(const char *op, const pdnn_tensor *a, const char *an, const pdnn_tensor *b,
                                   const char *bn)
{
    if (same_desc(a, b))
        return PDNN_SUCCESS;
    char da[96], db[96];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is %s but %s is %s; they must match in dtype, dims and layout",
                       op, an, pdnn__desc_string(&a->desc, da, sizeof da), bn,
                       pdnn__desc_string(&b->desc, db, sizeof db));
}

pdnn_status pdnn_relu_backward(const pdnn_tensor *y, const pdnn_tensor *dy, pdnn_tensor *dx)
{
    static const char op[] = "relu_backward";
    if (!y || !dy || !dx)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_relu_backward: %s is NULL", !y ? "y" : !dy ? "dy" : "dx");
    const pdnn_tensor *ts[] = {y, dy, dx};
    const char *names[] = {"y", "dy", "dx"};
    pdnn_status st = pdnn__same_device(op, ts, names, 3);
    if (st == PDNN_SUCCESS)
        st = check_same_desc(op, y, "y", dy, "dy");
    if (st == PDNN_SUCCESS)
        st = check_same_desc(op, y, "y", dx, "dx");
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias(op, dx, "dx", dy, "dy", 1);
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias(op, dx, "dx", y, "y", 0);
    if (st != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_RELU_BWD;
    call.dtype = y->desc.dtype;
    call.u.relu_bwd.n = pdnn_tensor_desc_elements(&y->desc);
    call.u.relu_bwd.y_buf = y->block.buf;
    call.u.relu_bwd.dy_buf = dy->block.buf;
    call.u.relu_bwd.dx_buf = dx->block.buf;
    return pdnn__dispatch(y->dev, &call, NULL, NULL);
}

pdnn_status pdnn_scale(const pdnn_tensor *x, float alpha, pdnn_tensor *y)
{
    static const char op[] = "scale";
    if (!x || !y)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_scale: %s is NULL", !x ? "x" : "y");
    if (!isfinite(alpha))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_scale: alpha is %g; it must be finite", (double)alpha);
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = pdnn__same_device(op, ts, names, 2);
    if (st == PDNN_SUCCESS)
        st = check_same_desc(op, x, "x", y, "y");
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias(op, y, "y", x, "x", 1);
    if (st != PDNN_SUCCESS)
        return st;
    if (!pdnn__dtype_is_float(x->desc.dtype))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_scale: x is %s; it must be a float dtype",
                           pdnn__dtype_name(x->desc.dtype));
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_SCALE;
    call.dtype = x->desc.dtype; /* an algorithm without its path refuses by name (the registry's check) */
    call.u.scale.n = pdnn_tensor_desc_elements(&x->desc);
    call.u.scale.alpha = alpha;
    call.u.scale.x_buf = x->block.buf;
    call.u.scale.y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

pdnn_status pdnn_softmax_cross_entropy(const pdnn_tensor *logits, const pdnn_tensor *labels, pdnn_tensor *loss,
                                       pdnn_tensor *dlogits)
{
    static const char op[] = "softmax_cross_entropy";
    if (!logits || !labels || !loss)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_softmax_cross_entropy: %s is NULL",
                           !logits ? "logits" : !labels ? "labels" : "loss");
    char d1[96], d2[96];
    const pdnn_tensor *fl[] = {logits, loss, dlogits};
    const char *fn[] = {"logits", "loss", "dlogits"};
    pdnn_status st = pdnn__same_device(op, fl, fn, 3);
    if (st != PDNN_SUCCESS)
        return st;
    if (labels->dev != logits->dev)
        return pdnn__device_mismatch(op, "logits", logits, "labels", labels);
    const int64_t *ld = logits->desc.dims;
    if (pdnn__act_layout(&logits->desc) < 0 || ld[2] != 1 || ld[3] != 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: logits %s must be a matrix {N, K, 1, 1}, NCHW or NHWC, or ND {N, K}", op,
                           pdnn__desc_string(&logits->desc, d1, sizeof d1));
    const int64_t n = ld[0], k = ld[1];
    const int64_t *bd = labels->desc.dims;
    if (labels->desc.dtype != PDNN_INT32 || labels->desc.layout != PDNN_LAYOUT_X || bd[0] != n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: labels %s must be int32, layout X, {%lld, 1, 1, 1} (one per row of logits %s)", op,
                           pdnn__desc_string(&labels->desc, d1, sizeof d1), (long long)n,
                           pdnn__desc_string(&logits->desc, d2, sizeof d2));
    if (loss->desc.layout != PDNN_LAYOUT_X || loss->desc.dims[0] != 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: loss %s must be float32, layout X, {1, 1, 1, 1}", op,
                           pdnn__desc_string(&loss->desc, d1, sizeof d1));
    if (dlogits && (st = check_same_desc(op, logits, "logits", dlogits, "dlogits")) != PDNN_SUCCESS)
        return st;
    const pdnn_tensor *ins[] = {logits, labels};
    const char *in_names[] = {"logits", "labels"};
    for (int i = 0; i < 2 && st == PDNN_SUCCESS; i++) {
        st = pdnn__check_alias(op, loss, "loss", ins[i], in_names[i], 0);
        if (st == PDNN_SUCCESS && dlogits)
            st = pdnn__check_alias(op, dlogits, "dlogits", ins[i], in_names[i], 0);
    }
    if (st == PDNN_SUCCESS && dlogits)
        st = pdnn__check_alias(op, dlogits, "dlogits", loss, "loss", 0);
    if (st != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_SOFTMAX_XENT;
    call.dtype = logits->desc.dtype;
    pdnn__xent_call *c = &call.u.xent;
    c->n = n;
    c->k = k;
    c->logits_buf = logits->block.buf;
    c->labels_buf = labels->block.buf;
    c->loss_buf = loss->block.buf;
    if (dlogits)
        c->dlogits_buf = dlogits->block.buf;
    return pdnn__dispatch(logits->dev, &call, NULL, NULL);
}

void pdnn_optimizer_params_init(pdnn_optimizer_params *p, pdnn_optimizer_kind kind)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->kind = kind == PDNN_OPTIMIZER_ADAM || kind == PDNN_OPTIMIZER_ADAMW ? kind : PDNN_OPTIMIZER_SGD;
    p->beta1 = 0.9f;
    p->beta2 = 0.999f;
    p->epsilon = 1e-8f;
    p->learning_rate = p->kind == PDNN_OPTIMIZER_SGD ? 0.01f : 0.001f;
    p->weight_decay = p->kind == PDNN_OPTIMIZER_ADAMW ? 0.01f : 0.0f;
}

static pdnn_status check_params(const char *op, const pdnn_optimizer_params *p, int64_t step)
{
    if (p->kind != PDNN_OPTIMIZER_SGD && p->kind != PDNN_OPTIMIZER_ADAM && p->kind != PDNN_OPTIMIZER_ADAMW)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: optimizer kind %d is unknown; kinds are PDNN_OPTIMIZER_SGD (0), PDNN_OPTIMIZER_ADAM (1), "
                           "PDNN_OPTIMIZER_ADAMW (2)", op, (int)p->kind);
    if (p->nesterov && (p->kind != PDNN_OPTIMIZER_SGD || !(p->momentum > 0.0f)))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: nesterov needs SGD with momentum > 0 (kind %d, momentum %g)",
                           op, (int)p->kind, (double)p->momentum);
    if (step < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: step is %lld; it counts updates from 1", op, (long long)step);
    const struct {
        const char *name;
        float v;
    } nonneg[] = {{"learning_rate", p->learning_rate}, {"weight_decay", p->weight_decay}, {"momentum", p->momentum}};
    for (size_t i = 0; i < sizeof nonneg / sizeof nonneg[0]; i++)
        if (!isfinite(nonneg[i].v) || nonneg[i].v < 0.0f)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is %g; it must be finite and >= 0", op,
                               nonneg[i].name, (double)nonneg[i].v);
    if (p->kind != PDNN_OPTIMIZER_SGD) {
        if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f) || !(p->beta2 >= 0.0f && p->beta2 < 1.0f))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: Adam's beta1 %g and beta2 %g must be in [0, 1)", op,
                               (double)p->beta1, (double)p->beta2);
        if (!(p->epsilon > 0.0f) || !isfinite(p->epsilon))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: Adam's epsilon is %g; it must be finite and > 0", op,
                               (double)p->epsilon);
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_optimizer_update(const pdnn_optimizer_params *p, int64_t step, pdnn_tensor *w, const pdnn_tensor *g,
                                  pdnn_tensor *slot1, pdnn_tensor *slot2)
{
    static const char op[] = "optimizer_update";
    if (!p || !w || !g)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_optimizer_update: %s is NULL", !p ? "params" : !w ? "w" : "g");
    pdnn_status st = check_params(op, p, step);
    if (st != PDNN_SUCCESS)
        return st;
    const int adam = p->kind != PDNN_OPTIMIZER_SGD;
    if (adam && (!slot1 || !slot2))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: Adam needs slot1 (m) and slot2 (v); %s is NULL", op,
                           !slot1 ? "slot1" : "slot2");
    if (!adam && p->momentum != 0.0f && !slot1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: SGD with momentum %g needs slot1 (the velocity); slot1 is NULL", op,
                           (double)p->momentum);
    /* Slots SGD does not read are left alone. */
    if (!adam) {
        slot2 = NULL;
        if (p->momentum == 0.0f)
            slot1 = NULL;
    }
    const pdnn_tensor *ts[] = {w, g, slot1, slot2};
    const char *names[] = {"w", "g", "slot1", "slot2"};
    if ((st = pdnn__same_device(op, ts, names, 4)) != PDNN_SUCCESS)
        return st;
    for (int i = 1; i < 4; i++)
        if (ts[i] && (st = check_same_desc(op, w, "w", ts[i], names[i])) != PDNN_SUCCESS)
            return st;
    /* Every tensor is read and written element by element, but two that
     * share memory would make the update depend on the order. */
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (ts[i] && ts[j] && (st = pdnn__check_alias(op, ts[i], names[i], ts[j], names[j], 0)) != PDNN_SUCCESS)
                return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_OPTIMIZER;
    call.dtype = w->desc.dtype;
    pdnn__optim_call *c = &call.u.optim;
    c->n = pdnn_tensor_desc_elements(&w->desc);
    c->kind = p->kind;
    c->lr = p->learning_rate;
    c->momentum = p->momentum;
    c->weight_decay = p->weight_decay;
    c->beta1 = p->beta1;
    c->beta2 = p->beta2;
    c->epsilon = p->epsilon;
    c->step = step;
    c->nesterov = p->nesterov;
    c->w_buf = w->block.buf;
    c->g_buf = g->block.buf;
    if (slot1)
        c->s1_buf = slot1->block.buf;
    if (slot2)
        c->s2_buf = slot2->block.buf;
    return pdnn__dispatch(w->dev, &call, NULL, NULL);
}
