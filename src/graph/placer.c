/* Op -> device: explicit (possibly partial) device specifications, the
 * default order (GPU-class devices first, lowest index first, then the
 * host), kernel availability and soft placement. */
#include "ops/dispatch.h"
#include "graph/graph.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *pdnn__full_device_name(const pdnn_device *d, char *buf, size_t len)
{
    snprintf(buf, len, "/job:localhost/replica:0/task:0/device:%s:%d", d->type == PDNN_DEVICE_GPU ? "GPU" : "CPU",
             d->index);
    return buf;
}

/* Whether some algorithm of dev's backend plans call (its op, sizes and
 * parameters; no buffers: plans look at shapes and parameters only). A
 * backend may register an op and refuse some of its kinds at plan time
 * (CUDA refuses Adam, leaky relu, clips not from 0), and the placer must
 * know before the run. */
int pdnn__some_algorithm_plans(const pdnn_device *dev, pdnn__op_call *call)
{
    const pdnn__algo *const *list = dev->backend->algos[call->op];
    if (!list)
        return 0;
    call->tuning = PDNN_TUNING_OFF;
    call->device_key = dev->tune_key;
    call->force_config = -1;
    for (int i = 0; list[i]; i++) {
        pdnn__plan plan;
        pdnn__plan_verdict((pdnn_device *)dev, list[i], call, &plan); /* the verdict is all it needs */
        if (plan.supported)
            return 1;
    }
    return 0;
}

static int optimizer_plans(const pdnn_device *dev, const pdnn__node *n)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_OPTIMIZER;
    pdnn__optim_call *o = &call.u.optim;
    o->n = pdnn_tensor_desc_elements(&n->out);
    o->kind = n->optim.kind;
    o->lr = n->optim.learning_rate;
    o->momentum = n->optim.momentum;
    o->weight_decay = n->optim.weight_decay;
    o->beta1 = n->optim.beta1;
    o->beta2 = n->optim.beta2;
    o->epsilon = n->optim.epsilon;
    o->step = 1;
    o->nesterov = n->optim.nesterov;
    return pdnn__some_algorithm_plans(dev, &call);
}

static int activation_plans(const pdnn_device *dev, const pdnn__node *n)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_ACTIVATION;
    call.u.act.n = pdnn_tensor_desc_elements(&n->out);
    call.u.act.mode = n->act;
    call.u.act.alpha = n->alpha;
    call.u.act.beta = n->beta;
    return pdnn__some_algorithm_plans(dev, &call);
}

/* CUDA pads with a constant only. */
static int pad_plans(const pdnn_device *dev, const pdnn__node *n)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_PAD;
    call.u.pad.mode = n->pad_mode;
    call.u.pad.value = n->alpha;
    for (int k = 0; k < 4; k++)
        call.u.pad.dims[k] = 1;
    return pdnn__some_algorithm_plans(dev, &call);
}

/* The plan sees the op and which sides repeat (CUDA refuses division and
 * a broadcast on both sides); a two-element y stands for the shape. */
static int binary_plans(const pdnn_device *dev, const pdnn__node *n)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_BINARY;
    pdnn__binary_call *c = &call.u.binary;
    for (int k = 0; k < PDNN_MAX_RANK; k++)
        c->dims[k] = 1;
    c->dims[PDNN_MAX_RANK - 1] = 2;
    c->as[PDNN_MAX_RANK - 1] = n->bcast & 1 ? 0 : 1;
    c->bs[PDNN_MAX_RANK - 1] = n->bcast & 2 ? 0 : 1;
    c->kind = n->binop;
    return pdnn__some_algorithm_plans(dev, &call);
}

int pdnn__has_kernel(const pdnn_device *dev, const pdnn__node *n)
{
    const pdnn__backend *b = dev->backend;
    switch (n->op) {
    case PDNN__OP_PLACEHOLDER:
    case PDNN__OP_CONST: return 1;
    case PDNN__OP_CONV2D: return b->algos[PDNN__OP_CONV2D_FWD] != NULL;
    case PDNN__OP_POOL2D: return b->algos[PDNN__OP_POOL2D_FWD] != NULL;
    case PDNN__OP_MATMUL: return b->algos[PDNN__OP_GEMM] != NULL;
    case PDNN__OP_ADD:
    case PDNN__OP_ADD_N: return b->add != NULL && b->copy != NULL;
    case PDNN__OP_BIAS_ADD: return b->bias_add != NULL;
    case PDNN__OP_RELU: return b->relu != NULL;
    case PDNN__OP_MUL: return b->algos[PDNN__OP_SCALE] != NULL;
    case PDNN__OP_ACT: return activation_plans(dev, n);
    case PDNN__OP_ELTWISE: return binary_plans(dev, n);
    case PDNN__OP_BN: return b->algos[PDNN__OP_BN_FWD_INFER] != NULL;
    case PDNN__OP_PADDING: return pad_plans(dev, n);
    case PDNN__OP_NDMATH: return pdnn__nd_math_has_kernel(dev, n);
    case PDNN__OP_MOVE: {
        pdnn__op_call call;
        int64_t tbl[2];
        pdnn__move_probe(n, &call, tbl);
        return pdnn__some_algorithm_plans(dev, &call);
    }
    case PDNN__OP_CONCAT: return b->copy != NULL;
    case PDNN__OP_TRANSPOSE: return b->algos[PDNN__OP_TRANSFORM] != NULL;
    case PDNN__OP_SOFTMAX: return b->softmax != NULL;
    case PDNN__OP_RESHAPE: return b->copy != NULL;
    case PDNN__OP_VARIABLE: return 1;
    case PDNN__OP_XENT:
    case PDNN__OP_XENT_GRAD: return b->algos[PDNN__OP_SOFTMAX_XENT] != NULL;
    case PDNN__OP_G_CONV_BWD_DATA: return b->algos[PDNN__OP_CONV2D_BWD_DATA] != NULL;
    case PDNN__OP_G_CONV_BWD_FILTER: return b->algos[PDNN__OP_CONV2D_BWD_FILTER] != NULL;
    case PDNN__OP_G_CONV_BWD_BIAS: return b->algos[PDNN__OP_CONV2D_BWD_BIAS] != NULL;
    case PDNN__OP_G_POOL_BWD: return b->algos[PDNN__OP_POOL2D_BWD] != NULL;
    case PDNN__OP_G_RELU_BWD: return b->algos[PDNN__OP_RELU_BWD] != NULL;
    case PDNN__OP_APPLY: return optimizer_plans(dev, n);
    case PDNN__OP_TRAIN: return 1;
    case PDNN__OP_ALLREDUCE: return 1; /* the session's own, through host staging */
    case PDNN__OP_BN_TRAIN: return b->algos[PDNN__OP_BN_FWD_TRAIN] != NULL && b->algos[PDNN__OP_BN_FWD_INFER] != NULL;
    case PDNN__OP_G_BN_BWD: return b->algos[PDNN__OP_BN_FWD_TRAIN] != NULL && b->algos[PDNN__OP_BN_BWD] != NULL;
    case PDNN__OP_DROPOUT: return b->algos[PDNN__OP_BINARY] != NULL && b->copy != NULL;
    case PDNN__OP_G_CLIP_BWD: return b->algos[PDNN__OP_RELU_BWD] != NULL && b->algos[PDNN__OP_BINARY] != NULL;
    case PDNN__OP_CAST_NODE: return b->algos[PDNN__OP_CAST] != NULL;
    case PDNN__OP_LOSS_SCALE: return n->axis || b->algos[PDNN__OP_SCALE] != NULL;
    }
    return 0;
}

/* Devices in placement priority: GPU-class by index, then CPU-class by
 * index (the host is /device:CPU:0). */
static int priority_order(pdnn_context *ctx, pdnn_device **order)
{
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        pdnn_device_type want = pass == 0 ? PDNN_DEVICE_GPU : PDNN_DEVICE_CPU;
        for (int idx = 0; idx < ctx->n_devices; idx++)
            for (int i = 0; i < ctx->n_devices; i++)
                if (ctx->devices[i].type == want && ctx->devices[i].index == idx)
                    order[n++] = &ctx->devices[i];
    }
    return n;
}

static int matches(const pdnn_device *d, const pdnn_device_spec *s)
{
    if (s->job[0] && strcasecmp(s->job, "localhost") != 0)
        return 0;
    if (s->replica > 0 || s->task > 0)
        return 0;
    if (s->type >= 0 && (int)d->type != s->type)
        return 0;
    return s->index < 0 || d->index == s->index;
}

static void say(void (*log)(void *, const char *), void *user, const char *line)
{
    if (log)
        log(user, line);
    else
        fprintf(stderr, "%s\n", line);
}

static pdnn_status place_one(const pdnn__node *nd, pdnn_device **order, int n_dev, const char *avail,
                             int allow_soft, void (*log)(void *, const char *), void *log_user, pdnn_device **out)
{
    if (!nd->device[0]) {
        for (int i = 0; i < n_dev; i++) {
            if (pdnn__has_kernel(order[i], nd)) {
                *out = order[i];
                return PDNN_SUCCESS;
            }
        }
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "Cannot assign a device for operation %s: no device has a %s kernel",
                           nd->name, pdnn__op_type(nd));
    }
    pdnn_device_spec spec;
    if (pdnn__device_spec_parse(nd->device, 1, &spec) != PDNN_SUCCESS)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "operation %s: %s", nd->name, pdnn_last_error());
    int exists = 0;
    for (int i = 0; i < n_dev; i++) {
        if (!matches(order[i], &spec))
            continue;
        exists = 1;
        if (pdnn__has_kernel(order[i], nd)) {
            *out = order[i];
            return PDNN_SUCCESS;
        }
    }
    if (!allow_soft) {
        if (exists)
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "Cannot assign a device for operation %s: Could not satisfy explicit device "
                               "specification '%s' because no supported kernel for %s is available there. "
                               "Available devices: [%s]. Set allow_soft_placement to let polydnn choose.",
                               nd->name, nd->device, pdnn__op_type(nd), avail);
        return pdnn__error(PDNN_ERR_NOT_FOUND,
                           "Cannot assign a device for operation %s: Operation was explicitly assigned to %s but "
                           "available devices are [%s]. Make sure the device specification refers to a valid "
                           "device, or set allow_soft_placement.",
                           nd->name, nd->device, avail);
    }
    /* Soft placement: the same type first, then any device. */
    pdnn_device *pick = NULL;
    for (int i = 0; i < n_dev && !pick; i++)
        if ((spec.type < 0 || (int)order[i]->type == spec.type) && pdnn__has_kernel(order[i], nd))
            pick = order[i];
    for (int i = 0; i < n_dev && !pick; i++)
        if (pdnn__has_kernel(order[i], nd))
            pick = order[i];
    if (!pick)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "Cannot assign a device for operation %s: no device has a %s kernel",
                           nd->name, pdnn__op_type(nd));
    char line[512], full[96];
    snprintf(line, sizeof line, "Soft placement: %s (%s): requested %s, which %s; placed on %s", nd->name,
             pdnn__op_type(nd), nd->device, exists ? "has no kernel for it" : "does not exist",
             pdnn__full_device_name(pick, full, sizeof full));
    say(log, log_user, line);
    *out = pick;
    return PDNN_SUCCESS;
}

/* An optimizer update runs in place: its variable and slots must be on
 * its device. When the update could not go on the variable's device (a
 * backend that refuses the optimizer, e.g. CUDA's Adam), the variable and
 * its slots follow it there, as TensorFlow places a colocation group
 * where all its ops have kernels: silently for a variable placed by
 * default, with a log line under soft placement for one pinned by name,
 * and an error naming both without soft placement. */
static pdnn_status follow_update(const pdnn_graph *g, int i, int allow_soft, void (*log)(void *, const char *),
                                 void *log_user, pdnn_device **placed)
{
    const pdnn__node *nd = &g->nodes[i];
    const int var = nd->inputs[0];
    if (placed[var] == placed[i])
        return PDNN_SUCCESS;
    char from[96], to[96];
    pdnn__full_device_name(placed[var], from, sizeof from);
    pdnn__full_device_name(placed[i], to, sizeof to);
    if (g->nodes[var].device[0] && !allow_soft)
        return pdnn__error(PDNN_ERR_UNSUPPORTED,
                           "Cannot assign a device for operation %s: its variable %s is on %s, which has no %s "
                           "kernel for this update; set allow_soft_placement to move the variable and its slots "
                           "with it",
                           nd->name, g->nodes[var].name, from, pdnn__op_type(nd));
    for (int q = 0; q < nd->n_inputs; q++) {
        const int j = nd->inputs[q];
        if (q == 1 || j < 0 || g->nodes[j].op != PDNN__OP_VARIABLE) /* q 1: the gradient */
            continue;
        if (g->nodes[j].device[0]) {
            char line[1024];
            snprintf(line, sizeof line, "Soft placement: %s (VariableV2): requested %s; placed on %s with its "
                                        "update %s, which %s has no kernel for", g->nodes[j].name,
                     g->nodes[j].device, to, nd->name, from);
            say(log, log_user, line);
        }
        placed[j] = placed[i];
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn__place(const pdnn_graph *g, pdnn_context *ctx, int allow_soft,
                        void (*log)(void *user, const char *line), void *log_user, pdnn_device **placed)
{
    pdnn_device *order[64];
    int n_dev = ctx->n_devices <= 64 ? priority_order(ctx, order) : 0;
    if (n_dev == 0)
        return pdnn__error(PDNN_ERR_INTERNAL, "placement: the context has no devices (or too many)");
    if (pdnn__place_host_first(g, ctx, NULL, 0)) /* the host ahead of PoCL (placer_auto.c) */
        for (int i = n_dev - 1; i > 0; i--)
            if (order[i]->props.kind == PDNN__KIND_HOST) {
                pdnn_device *h = order[i];
                memmove(order + 1, order, (size_t)i * sizeof *order);
                order[0] = h;
                break;
            }
    /* For messages, in the context's (TensorFlow's) order: CPU:0 first. */
    char avail[1024];
    size_t used = 0;
    avail[0] = '\0';
    for (int i = 0; i < ctx->n_devices && used < sizeof avail; i++) {
        char full[96];
        int w = snprintf(avail + used, sizeof avail - used, "%s%s", i ? ", " : "",
                         pdnn__full_device_name(&ctx->devices[i], full, sizeof full));
        if (w < 0)
            break;
        used += (size_t)w;
    }
    for (int i = 0; i < g->n; i++) {
        /* Colocation (gradients with their forward op): the forward's device
         * when the node names none and that device has the kernel; else the
         * ordinary rules. */
        const pdnn__node *nd = &g->nodes[i];
        if (!nd->device[0] && nd->colocate > 0 && nd->colocate - 1 < i &&
            pdnn__has_kernel(placed[nd->colocate - 1], nd)) {
            placed[i] = placed[nd->colocate - 1];
            continue;
        }
        pdnn_status st = place_one(&g->nodes[i], order, n_dev, avail, allow_soft, log, log_user, &placed[i]);
        if (st != PDNN_SUCCESS)
            return st;
        if (nd->op == PDNN__OP_APPLY && (st = follow_update(g, i, allow_soft, log, log_user, placed)) != PDNN_SUCCESS)
            return st;
    }
    return PDNN_SUCCESS;
}
