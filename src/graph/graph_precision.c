/* Mixed precision in the graph: Cast nodes, node dtypes, Keras's
 * precision policy (pdnn_graph_set_precision) and TensorFlow's dynamic
 * loss scaling (pdnn_graph_set_loss_scale). */
#include "core/half.h"
#include "graph/graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The inputs [*first, *end) of nd (n of them) that carry its data (and so share its
 * dtype): not batch norm's parameters, dropout's flag and step, the
 * labels, where's mask. */
static void data_inputs(const pdnn__node *nd, int n, int *first, int *end)
{
    *first = 0;
    *end = n;
    switch (nd->op) {
    case PDNN__OP_BN:
    case PDNN__OP_BN_TRAIN:
    case PDNN__OP_DROPOUT:
    case PDNN__OP_XENT:
    case PDNN__OP_XENT_GRAD: *end = n < 1 ? n : 1; break;
    /* x, dy (gamma and the statistics are float32); BatchNormStats: x */
    case PDNN__OP_G_BN_BWD: *end = n == 2 ? 1 : n < 2 ? n : 2; break;
    case PDNN__OP_MOVE: *first = nd->move_kind == PDNN__MOVE_WHERE; break;
    default: break;
    }
}

/* Ops whose value the graph makes itself, or whose dtype its builder
 * sets: no inference. */
static int own_dtype(const pdnn__node *nd)
{
    switch (nd->op) {
    case PDNN__OP_PLACEHOLDER:
    case PDNN__OP_CONST:
    case PDNN__OP_VARIABLE:
    case PDNN__OP_CAST_NODE:
    case PDNN__OP_APPLY:
    case PDNN__OP_TRAIN:
    case PDNN__OP_XENT:
    case PDNN__OP_LOSS_SCALE: return 1;
    default: return 0;
    }
}

pdnn_status pdnn__graph_dtypes(const pdnn_graph *g, pdnn__node *nd)
{
    if (own_dtype(nd) && nd->op != PDNN__OP_XENT)
        return PDNN_SUCCESS;
    int first, end, at = -1;
    data_inputs(nd, nd->n_inputs, &first, &end);
    for (int q = first; q < end; q++) {
        const int j = nd->inputs[q];
        if (j < 0 || !pdnn__dtype_is_float(g->nodes[j].out.dtype))
            continue;
        if (at < 0) {
            at = q;
            continue;
        }
        const pdnn_dtype a = g->nodes[nd->inputs[at]].out.dtype, b = g->nodes[j].out.dtype;
        if (a != b)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "node '%s' (%s): input %d ('%s') is %s but input %d "
                               "('%s') is %s; one node takes one dtype (pdnn_graph_cast converts)",
                               nd->name[0] ? nd->name : pdnn__op_type(nd), pdnn__op_type(nd), at,
                               g->nodes[nd->inputs[at]].name, pdnn__dtype_name(a), q, g->nodes[j].name,
                               pdnn__dtype_name(b));
    }
    if (at < 0)
        return PDNN_SUCCESS;
    const pdnn_dtype t = g->nodes[nd->inputs[at]].out.dtype;
    if (t != PDNN_FLOAT32 && (nd->op == PDNN__OP_ALLREDUCE || nd->op == PDNN__OP_XENT))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "node '%s' (%s): its input '%s' is %s; it takes float32 "
                           "(pdnn_graph_cast converts; the mixed precision policy does it for you)",
                           nd->name[0] ? nd->name : pdnn__op_type(nd), pdnn__op_type(nd),
                           g->nodes[nd->inputs[at]].name, pdnn__dtype_name(t));
    /* BatchNormStats (G_BN_BWD of 2 inputs) keeps its float32 {2C}: the
     * statistics are float32 whatever x is */
    if (!own_dtype(nd) && pdnn__dtype_is_float(nd->out.dtype) && !(nd->op == PDNN__OP_G_BN_BWD && nd->n_inputs == 2))
        nd->out.dtype = t;
    return PDNN_SUCCESS;
}

/* TensorFlow's autocast lists: ops the policy computes in the reduced
 * dtype (ALLOW), in float32 (DENY: softmax, the loss, batch norm's
 * statistics, reductions, exp and log, the all-reduce), or in whatever
 * dtype their data comes in (the moves: one dtype among their inputs). */
enum { KEEP, ALLOW, DENY, FOLLOW };

static int policy_class(const pdnn__node *nd)
{
    switch (nd->op) {
    case PDNN__OP_CONV2D:
    case PDNN__OP_POOL2D:
    case PDNN__OP_MATMUL:
    case PDNN__OP_ADD:
    case PDNN__OP_ADD_N:
    case PDNN__OP_BIAS_ADD:
    case PDNN__OP_RELU:
    case PDNN__OP_MUL:
    case PDNN__OP_ELTWISE: return nd->binop == PDNN_BINARY_POW ? DENY : ALLOW;
    case PDNN__OP_ACT:
        return nd->act == PDNN_ACTIVATION_EXP || nd->act == PDNN_ACTIVATION_LOG || nd->act == PDNN_ACTIVATION_POW
                   ? DENY
                   : ALLOW;
    case PDNN__OP_SOFTMAX:
    case PDNN__OP_XENT:
    case PDNN__OP_BN:
    case PDNN__OP_BN_TRAIN:
    case PDNN__OP_NDMATH:
    case PDNN__OP_ALLREDUCE: return DENY;
    case PDNN__OP_PADDING:
    case PDNN__OP_CONCAT:
    case PDNN__OP_TRANSPOSE:
    case PDNN__OP_RESHAPE:
    case PDNN__OP_MOVE:
    case PDNN__OP_DROPOUT: return FOLLOW;
    default: return KEEP;
    }
}

/* Node src's value in dtype to: its one Cast node, made on first use. */
static pdnn_status cast_of(pdnn_graph *g, int src, pdnn_dtype to, int *out)
{
    int slot_val = to == PDNN_FLOAT32 ? g->nodes[src].cast32 : g->nodes[src].cast_of[to == PDNN_BFLOAT16];
    if (slot_val > 0) {
        *out = slot_val - 1;
        return PDNN_SUCCESS;
    }
    pdnn__node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = PDNN__OP_CAST_NODE;
    nd.out = g->nodes[src].out;
    nd.out.dtype = to;
    /* Beside its value: a variable read by several towers is cast once. */
    nd.colocate = src + 1;
    char name[200];
    snprintf(name, sizeof name, "%.120s/Cast_%s", g->nodes[src].name, pdnn__dtype_name(to));
    pdnn_status st = pdnn__graph_add(g, name, &nd, &src, 1, out);
    if (st != PDNN_SUCCESS)
        return st;
    if (to == PDNN_FLOAT32)
        g->nodes[src].cast32 = *out + 1;
    else
        g->nodes[src].cast_of[to == PDNN_BFLOAT16] = *out + 1;
    return PDNN_SUCCESS;
}

pdnn_status pdnn__graph_autocast(pdnn_graph *g, pdnn__node *nd, int *inputs, int n_inputs)
{
    const int cls = policy_class(nd);
    if (g->compute == PDNN_FLOAT32 || cls == KEEP || n_inputs < 1)
        return PDNN_SUCCESS;
    int first, end;
    data_inputs(nd, n_inputs, &first, &end);
    pdnn_dtype want = cls == ALLOW ? g->compute : PDNN_FLOAT32;
    if (cls == FOLLOW) { /* the first float input's dtype */
        int q = first;
        while (q < end && (inputs[q] < 0 || !pdnn__dtype_is_float(g->nodes[inputs[q]].out.dtype)))
            q++;
        if (q == end)
            return PDNN_SUCCESS;
        want = g->nodes[inputs[q]].out.dtype;
    }
    for (int q = first; q < end; q++) {
        const int j = inputs[q];
        if (j < 0 || !pdnn__dtype_is_float(g->nodes[j].out.dtype) || g->nodes[j].out.dtype == want)
            continue;
        pdnn_status st = cast_of(g, j, want, &inputs[q]);
        if (st != PDNN_SUCCESS)
            return st;
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_graph_cast(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_dtype dtype,
                            pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = pdnn__graph_begin(g, "pdnn_graph_cast", name, device, PDNN__OP_CAST_NODE, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn_tensor_desc *xd = &g->nodes[x].out;
    if (!pdnn__dtype_is_float(xd->dtype) || !pdnn__dtype_is_float(dtype))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_cast: node '%s': casts from %s to %s; a Cast "
                           "takes float32, float16 and bfloat16", g->nodes[x].name, pdnn__dtype_name(xd->dtype),
                           pdnn__dtype_is_float(dtype) ? pdnn__dtype_name(dtype) : "an unknown dtype");
    nd.out = *xd;
    nd.out.dtype = dtype;
    return pdnn__graph_finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_set_precision(pdnn_graph *g, pdnn_dtype compute)
{
    if (!g)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_precision: graph is NULL");
    if (!pdnn__dtype_is_float(compute))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_precision: the compute dtype must be "
                           "float32, float16 or bfloat16");
    g->compute = compute;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_graph_set_loss_scale(pdnn_graph *g, float initial_scale, int growth_interval)
{
    if (!g)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_loss_scale: graph is NULL");
    if (!(initial_scale >= 1.0f) || !isfinite(initial_scale) || growth_interval < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_loss_scale: the initial scale must be finite "
                           "and at least 1 (it is %g) and the growth interval at least 1 (it is %d)",
                           (double)initial_scale, growth_interval);
    if (g->ls_scale)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_loss_scale: the graph has a loss scale");
    const int n0 = g->n;
    const pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {1, 1, 1, 1}, 0};
    pdnn_node scale, good;
    pdnn_status st = pdnn_graph_variable(g, "loss_scale", "/cpu:0", &d, PDNN_INIT_DATA, 0, &initial_scale, &scale);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_variable(g, "loss_scale/good_steps", "/cpu:0", &d, PDNN_INIT_ZEROS, 0, NULL, &good);
    if (st != PDNN_SUCCESS) {
        pdnn__graph_truncate(g, n0);
        return st;
    }
    g->ls_scale = scale + 1;
    g->ls_good = good + 1;
    g->ls_interval = growth_interval;
    return PDNN_SUCCESS;
}

/* A LOSS_SCALE multiply: x times the one float of factor. */
static pdnn_status scale_by(pdnn_graph *g, const char *name, pdnn_node x, pdnn_node factor, pdnn_node *out)
{
    pdnn__node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = PDNN__OP_LOSS_SCALE;
    nd.out = g->nodes[x].out;
    nd.colocate = x + 1;
    pdnn_node in[2] = {x, factor};
    return pdnn__graph_add(g, name, &nd, in, 2, out);
}

pdnn_status pdnn__graph_scale_seed(pdnn_graph *g, const char *prefix, pdnn_node seed, pdnn_node *out)
{
    *out = seed;
    if (!g->ls_scale)
        return PDNN_SUCCESS;
    char name[160];
    snprintf(name, sizeof name, "%.100s/LossScaleMul", prefix);
    return scale_by(g, name, seed, g->ls_scale - 1, out);
}

pdnn_status pdnn__graph_unscale(pdnn_graph *g, const char *base, const pdnn_node *grads, int n, pdnn_node *unscaled,
                                pdnn_node *gate)
{
    *gate = -1;
    if (!g->ls_scale) {
        memcpy(unscaled, grads, sizeof *grads * (size_t)n);
        return PDNN_SUCCESS;
    }
    int *in = malloc(sizeof *in * (size_t)(n + 2));
    if (!in)
        return pdnn__host_oom("pdnn_graph_apply_gradients", "the loss scale's inputs", sizeof *in * (size_t)(n + 2));
    memcpy(in, grads, sizeof *grads * (size_t)n);
    in[n] = g->ls_scale - 1;
    in[n + 1] = g->ls_good - 1;
    pdnn__node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = PDNN__OP_LOSS_SCALE;
    nd.axis = 1;
    nd.ls_interval = g->ls_interval;
    nd.out = g->nodes[g->ls_scale - 1].out;
    nd.colocate = g->ls_scale; /* it updates the scale in place */
    char name[160];
    snprintf(name, sizeof name, "%.100s/LossScaleUpdate", base);
    pdnn_status st = pdnn__graph_add(g, name, &nd, in, n + 2, gate);
    free(in);
    for (int k = 0; k < n && st == PDNN_SUCCESS; k++) {
        snprintf(name, sizeof name, "%.60s/unscale_%.80s", base, g->nodes[grads[k]].name);
        st = scale_by(g, name, grads[k], *gate, &unscaled[k]);
    }
    return st;
}

/* The one float of a tensor. */
static pdnn_status read1(const pdnn_tensor *t, float *v)
{
    if (pdnn_tensor_desc_elements(&t->desc) != 1 || t->desc.dtype != PDNN_FLOAT32)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "a loss scale input must be one float32");
    return pdnn_tensor_read(t, v, sizeof *v);
}

/* Whether every element of t is finite (read on the host: a float32
 * gradient, or a reduced one widened). */
static pdnn_status all_finite(const pdnn_tensor *t, int *ok)
{
    const int64_t n = pdnn_tensor_desc_elements(&t->desc);
    const size_t es = pdnn__dtype_size(t->desc.dtype);
    unsigned char *buf = malloc((size_t)n * es + 1);
    float *v = malloc(sizeof *v * (size_t)n + 1);
    if (!buf || !v) {
        free(buf);
        free(v);
        return pdnn__host_oom("the loss scale's check", "a gradient's copy", (uint64_t)n * 4);
    }
    pdnn_status st = pdnn_tensor_read(t, buf, (size_t)n * es);
    if (st == PDNN_SUCCESS)
        pdnn__to_f32(t->desc.dtype, buf, v, (size_t)n);
    for (int64_t e = 0; st == PDNN_SUCCESS && e < n && *ok; e++)
        *ok = isfinite(v[e]);
    free(v);
    free(buf);
    return st;
}

pdnn_status pdnn__loss_scale_run(const pdnn__node *nd, const pdnn_tensor *const *in, pdnn_tensor *y)
{
    float s = 0;
    if (nd->axis == 0) {
        pdnn_status st = read1(in[1], &s);
        return st == PDNN_SUCCESS ? pdnn_scale(in[0], s, y) : st;
    }
    /* TensorFlow's DynamicLossScale: after growth_interval finite steps
     * the scale doubles; a step with an inf or NaN halves it (not below 1)
     * and is skipped (the value 0 gates the updates). */
    const int n = nd->n_inputs - 2;
    float good = 0;
    pdnn_status st = read1(in[n], &s);
    if (st == PDNN_SUCCESS)
        st = read1(in[n + 1], &good);
    int ok = 1;
    for (int k = 0; k < n && ok && st == PDNN_SUCCESS; k++)
        st = all_finite(in[k], &ok);
    if (st != PDNN_SUCCESS)
        return st;
    const float factor = ok ? 1.0f / s : 0.0f;
    if (ok && good + 1.0f >= (float)nd->ls_interval) {
        const float up = s * 2.0f;
        s = isfinite(up) ? up : s;
        good = 0.0f;
    } else if (ok) {
        good += 1.0f;
    } else {
        s = s / 2.0f < 1.0f ? 1.0f : s / 2.0f;
        good = 0.0f;
    }
    /* The variables are the session's own tensors: updated in place. */
    st = pdnn_tensor_write((pdnn_tensor *)in[n], &s, sizeof s);
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_write((pdnn_tensor *)in[n + 1], &good, sizeof good);
    return st == PDNN_SUCCESS ? pdnn_tensor_write(y, &factor, sizeof factor) : st;
}
