/* Building a graph: nodes, TensorFlow-style names, shape inference. */
#include "core/half.h"
#include "graph/graph.h"
#include "graph/graph_batch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const base_names[] = {"Placeholder", "Const", "Conv2D", "Pool", "MatMul", "Add",
                                         "AddN", "BiasAdd", "Relu", "Softmax", "Reshape",
                                         "VariableV2", "SparseSoftmaxCrossEntropyWithLogits",
                                         "SparseSoftmaxCrossEntropyWithLogitsGrad", "Conv2DBackpropInput",
                                         "Conv2DBackpropFilter", "BiasAddGrad", "PoolGrad", "ReluGrad",
                                         "ApplyGradient", "NoOp", "Mul", "Activation", "ConcatV2",
                                         "Transpose", "AllReduce", "Binary", "FusedBatchNormV3", "Pad",
                                         "FusedBatchNormV3", "FusedBatchNormGradV3", "Dropout", "ClipGrad",
                                         "NdMath", "Move", "Cast", "LossScale"};

const char *pdnn__op_type(const pdnn__node *n)
{
    if (n->op == PDNN__OP_MOVE)
        return pdnn__move_type(n);
    if (n->op == PDNN__OP_POOL2D)
        return n->pool.mode == PDNN_POOL_MAX ? "MaxPool" : "AvgPool";
    if (n->op == PDNN__OP_G_POOL_BWD)
        return n->pool.mode == PDNN_POOL_MAX ? "MaxPoolGrad" : "AvgPoolGrad";
    if (n->op == PDNN__OP_G_BN_BWD && n->axis == 2)
        return "BatchNormStats"; /* the statistics both gradient nodes read (train_ops.c) */
    if (n->op == PDNN__OP_APPLY)
        return n->optim.kind == PDNN_OPTIMIZER_ADAM    ? "ApplyAdam"
               : n->optim.kind == PDNN_OPTIMIZER_ADAMW ? "ApplyAdamW"
                                                       : "ApplyMomentum";
    if (n->op == PDNN__OP_ELTWISE)
        return n->binop == PDNN_BINARY_MUL   ? "Mul"
               : n->binop == PDNN_BINARY_SUB ? "Sub"
               : n->binop == PDNN_BINARY_DIV ? "RealDiv"
               : n->binop == PDNN_BINARY_POW ? "Pow"
                                             : "AddV2";
    if (n->op == PDNN__OP_ACT) {
        static const char *const act_names[] = {"Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Silu",
                                                "Erf",  "Gelu",      "GeluTanh", "Tanh",     "Sqrt",      "Neg",
                                                "Exp",  "Log",       "Reciprocal", "Abs",    "Pow"};
        return (unsigned)n->act < sizeof act_names / sizeof *act_names ? act_names[n->act] : "Activation";
    }
    if (n->op == PDNN__OP_NDMATH)
        return pdnn__nd_math_op_type(n);
    if (n->op == PDNN__OP_LOSS_SCALE)
        return n->axis ? "LossScaleUpdate" : "LossScaleMul";
    return base_names[n->op];
}

pdnn_status pdnn_graph_create(pdnn_graph **out)
{
    if (!out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_create: out is NULL");
    *out = calloc(1, sizeof **out);
    return *out ? PDNN_SUCCESS : pdnn__host_oom("pdnn_graph_create", "the graph", sizeof **out);
}

void pdnn_graph_destroy(pdnn_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n; i++) {
        free(g->nodes[i].inputs);
        free(g->nodes[i].data);
    }
    free(g->nodes);
    pdnn__batch_plan_free(g->batch_plan);
    free(g);
}

int pdnn_graph_node_count(const pdnn_graph *g) { return g ? g->n : 0; }

void pdnn__graph_truncate(pdnn_graph *g, int n0)
{
    for (int i = n0; i < g->n; i++) {
        free(g->nodes[i].inputs);
        free(g->nodes[i].data);
    }
    g->n = n0;
    for (int i = 0; i < n0; i++) { /* the policy's casts removed with them */
        pdnn__node *nd = &g->nodes[i];
        for (int k = 0; k < 2; k++)
            nd->cast_of[k] = nd->cast_of[k] > n0 ? 0 : nd->cast_of[k];
        nd->cast32 = nd->cast32 > n0 ? 0 : nd->cast32;
    }
    if (g->ls_scale > n0 || g->ls_good > n0)
        g->ls_scale = g->ls_good = 0;
}

static const pdnn__node *node_at(const pdnn_graph *g, pdnn_node n)
{
    return g && n >= 0 && n < g->n ? &g->nodes[n] : NULL;
}

const char *pdnn_graph_node_name(const pdnn_graph *g, pdnn_node n)
{
    const pdnn__node *p = node_at(g, n);
    return p ? p->name : NULL;
}

const char *pdnn_graph_node_op(const pdnn_graph *g, pdnn_node n)
{
    const pdnn__node *p = node_at(g, n);
    return p ? pdnn__op_type(p) : NULL;
}

pdnn_status pdnn_graph_node_desc(const pdnn_graph *g, pdnn_node n, pdnn_tensor_desc *out)
{
    const pdnn__node *p = node_at(g, n);
    if (!p || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_node_desc: %s",
                           !out ? "out is NULL" : "no such node");
    *out = p->out;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_graph_find(const pdnn_graph *g, const char *name, pdnn_node *out)
{
    if (!g || !name || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_find: an argument is NULL");
    for (int i = 0; i < g->n; i++) {
        if (strcmp(g->nodes[i].name, name) == 0) {
            *out = i;
            return PDNN_SUCCESS;
        }
    }
    return pdnn__error(PDNN_ERR_NOT_FOUND, "the graph has no node named '%s'", name);
}

static int name_taken(const pdnn_graph *g, const char *name)
{
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return 1;
    return 0;
}

/* A node's name for messages: its own, or its op type while unnamed. */
static const char *label(const pdnn__node *nd) { return nd->name[0] ? nd->name : pdnn__op_type(nd); }

/* Names nd base, or base_1, base_2, ... where the graph has that name. */
static void unique_name(const pdnn_graph *g, pdnn__node *nd, const char *base)
{
    snprintf(nd->name, sizeof nd->name, "%s", base);
    for (int k = 1; name_taken(g, nd->name); k++)
        snprintf(nd->name, sizeof nd->name, "%.100s_%d", base, k);
}

/* Starts a node: checks the graph, the name given (if any) and the inputs.
 * The node is committed, and named if it was not, by finish() only once
 * its shape checks pass. */

static pdnn_status begin(pdnn_graph *g, const char *fn, const char *name, const char *device, pdnn__node_op op,
                         const pdnn_node *inputs, int n_inputs, pdnn_node *out, pdnn__node *nd)
{
    memset(nd, 0, sizeof *nd);
    nd->op = op;
    if (!g || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !g ? "graph" : "out");
    if (name && *name) {
        if (strlen(name) >= sizeof nd->name)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: node name '%.40s...' is longer than %zu bytes", fn,
                               name, sizeof nd->name - 1);
        if (name_taken(g, name))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the graph already has a node named '%s'", fn, name);
        snprintf(nd->name, sizeof nd->name, "%s", name);
    } /* else finish() names it after the op type, once every field that
       * the type depends on (pool mode, activation) is set */
    if (device && *device) {
        pdnn_device_spec spec;
        if (strlen(device) >= sizeof nd->device)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: node '%s': device name is too long", fn, label(nd));
        if (pdnn__device_spec_parse(device, 1, &spec) != PDNN_SUCCESS)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: node '%s': %s", fn, label(nd), pdnn_last_error());
        snprintf(nd->device, sizeof nd->device, "%s", device);
    }
    for (int i = 0; i < n_inputs; i++) {
        if (inputs[i] < 0 || inputs[i] >= g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: node '%s': input %d is node %d, but the graph has "
                                                          "nodes 0..%d",
                               fn, label(nd), i, inputs[i], g->n - 1);
    }
    return PDNN_SUCCESS;
}

static pdnn_status commit(pdnn_graph *g, pdnn__node *nd, const pdnn_node *inputs, int n_inputs, pdnn_node *out,
                          int policy);

/* A public builder's node: the graph's precision policy applies. */
static pdnn_status finish(pdnn_graph *g, pdnn__node *nd, const pdnn_node *inputs, int n_inputs, pdnn_node *out)
{
    return commit(g, nd, inputs, n_inputs, out, 1);
}

static pdnn_status commit(pdnn_graph *g, pdnn__node *nd, const pdnn_node *inputs, int n_inputs, pdnn_node *out,
                          int policy)
{
    const int n0 = g->n;
    if (n_inputs > 0) {
        nd->inputs = malloc(sizeof *nd->inputs * (size_t)n_inputs);
        if (!nd->inputs)
            return pdnn__host_oom("graph", "a node's inputs", sizeof *nd->inputs * (size_t)n_inputs);
        memcpy(nd->inputs, inputs, sizeof *nd->inputs * (size_t)n_inputs);
    }
    nd->n_inputs = n_inputs;
    pdnn_status st = policy ? pdnn__graph_autocast(g, nd, nd->inputs, n_inputs) : PDNN_SUCCESS;
    if (st == PDNN_SUCCESS)
        st = pdnn__graph_dtypes(g, nd);
    if (st != PDNN_SUCCESS) {
        free(nd->inputs);
        nd->inputs = NULL;
        pdnn__graph_truncate(g, n0);
        return st;
    }
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 16;
        pdnn__node *nn = realloc(g->nodes, sizeof *nn * (size_t)cap);
        if (!nn) {
            free(nd->inputs);
            nd->inputs = NULL;
            pdnn__graph_truncate(g, n0);
            return pdnn__host_oom("graph", "the node table", sizeof *nn * (size_t)cap);
        }
        g->nodes = nn;
        g->cap = cap;
    }
    pdnn__desc_canon(&nd->out, &nd->out); /* compared with tensors' by memcmp */
    if (!nd->name[0]) /* the default name: the op type, numbered after the first */
        unique_name(g, nd, pdnn__op_type(nd));
    g->nodes[g->n] = *nd;
    *out = g->n++;
    return PDNN_SUCCESS;
}

static const pdnn_tensor_desc *in_desc(const pdnn_graph *g, pdnn_node n) { return &g->nodes[n].out; }

pdnn_status pdnn__graph_begin(pdnn_graph *g, const char *fn, const char *name, const char *device,
                              pdnn__node_op op, const pdnn_node *inputs, int n_inputs, pdnn_node *out, pdnn__node *nd)
{
    return begin(g, fn, name, device, op, inputs, n_inputs, out, nd);
}

pdnn_status pdnn__graph_finish(pdnn_graph *g, pdnn__node *nd, const pdnn_node *inputs, int n_inputs, pdnn_node *out)
{
    return finish(g, nd, inputs, n_inputs, out);
}

static pdnn_status shape_error(const pdnn__node *nd, const char *msg)
{
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "node '%s' (%s): %s", label(nd), pdnn__op_type(nd), msg);
}

pdnn_status pdnn_graph_placeholder(pdnn_graph *g, const char *name, const char *device, const pdnn_tensor_desc *desc,
                                   pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_placeholder", name, device, PDNN__OP_PLACEHOLDER, NULL, 0, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (pdnn_tensor_desc_validate(desc) != PDNN_SUCCESS)
        return shape_error(&nd, pdnn_last_error());
    nd.out = *desc;
    return finish(g, &nd, NULL, 0, out);
}

/* A constant node of data: a copy, or owned itself (freed on failure). */
static pdnn_status constant(pdnn_graph *g, const char *name, const char *device, const pdnn_tensor_desc *desc,
                            const float *data, float *owned, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_constant", name, device, PDNN__OP_CONST, NULL, 0, out, &nd);
    if (st == PDNN_SUCCESS && !data && !owned)
        st = shape_error(&nd, "data is NULL");
    if (st == PDNN_SUCCESS && pdnn_tensor_desc_validate(desc) != PDNN_SUCCESS)
        st = shape_error(&nd, pdnn_last_error());
    if (st == PDNN_SUCCESS && desc->dtype != PDNN_FLOAT32)
        st = shape_error(&nd, "only float32 constants are supported");
    if (st != PDNN_SUCCESS) {
        free(owned);
        return st;
    }
    int64_t bytes = pdnn_tensor_desc_bytes(desc);
    nd.data = owned ? owned : malloc((size_t)bytes);
    if (!nd.data)
        return pdnn__host_oom(label(&nd), "the constant's data", (uint64_t)bytes);
    if (data) /* not adopted */
        memcpy(nd.data, data, (size_t)bytes);
    nd.out = *desc;
    st = finish(g, &nd, NULL, 0, out);
    if (st != PDNN_SUCCESS)
        free(nd.data);
    return st;
}

pdnn_status pdnn_graph_constant(pdnn_graph *g, const char *name, const char *device, const pdnn_tensor_desc *desc,
                                const float *data, pdnn_node *out)
{
    return constant(g, name, device, desc, data, NULL, out);
}

pdnn_status pdnn__graph_constant_adopt(pdnn_graph *g, const char *device, const pdnn_tensor_desc *desc, float *data,
                                       pdnn_node *out)
{
    return constant(g, NULL, device, desc, NULL, data, out);
}

static pdnn_status graph_conv2d(pdnn_graph *g, const char *fn, const char *name, const char *device, pdnn_node x,
                                pdnn_node w, pdnn_node bias, pdnn_node z, const pdnn_conv2d_params *p, pdnn_node *out)
{
    pdnn_node in[4] = {x, w, bias, z};
    int n_in = bias >= 0 ? 3 : 2;
    if (z >= 0) /* z last, after the bias if any */
        in[n_in++] = z;
    pdnn__node nd;
    pdnn_status st = begin(g, fn, name, device, PDNN__OP_CONV2D, in, n_in, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (!p)
        return shape_error(&nd, "params is NULL");
    int64_t od[4];
    if (pdnn_conv2d_output_dims(in_desc(g, x), in_desc(g, w), p, od) != PDNN_SUCCESS)
        return shape_error(&nd, pdnn_last_error());
    if (bias >= 0) {
        const pdnn_tensor_desc *b = in_desc(g, bias);
        if (b->layout != PDNN_LAYOUT_X || b->dims[0] != od[1])
            return shape_error(&nd, "bias must be a layout-X vector with one value per output channel");
    }
    nd.conv = *p;
    nd.out.dtype = PDNN_FLOAT32;
    nd.out.layout = in_desc(g, x)->layout;
    memcpy(nd.out.dims, od, sizeof od);
    if (z >= 0) {
        const pdnn_tensor_desc *zd = in_desc(g, z);
        if (!pdnn__dtype_is_float(zd->dtype) || zd->layout != nd.out.layout || memcmp(zd->dims, od, sizeof od) != 0)
            return shape_error(&nd, "z must be a float with the output's dims and layout");
        nd.residual = 1;
    }
    return finish(g, &nd, in, n_in, out);
}

pdnn_status pdnn_graph_conv2d(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_node w,
                              pdnn_node bias, const pdnn_conv2d_params *p, pdnn_node *out)
{
    return graph_conv2d(g, "pdnn_graph_conv2d", name, device, x, w, bias, -1, p, out);
}

pdnn_status pdnn_graph_conv2d_residual(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_node w,
                                       pdnn_node bias, pdnn_node z, const pdnn_conv2d_params *p, pdnn_node *out)
{
    if (z < 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_conv2d_residual: z is %d (use pdnn_graph_conv2d)",
                           z);
    return graph_conv2d(g, "pdnn_graph_conv2d_residual", name, device, x, w, bias, z, p, out);
}

pdnn_status pdnn_graph_pool2d(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                              const pdnn_pool2d_params *p, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_pool2d", name, device, PDNN__OP_POOL2D, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (!p)
        return shape_error(&nd, "params is NULL");
    nd.pool = *p;
    int64_t od[4];
    if (pdnn_pool2d_output_dims(in_desc(g, x), p, od) != PDNN_SUCCESS)
        return shape_error(&nd, pdnn_last_error());
    nd.out.dtype = PDNN_FLOAT32;
    nd.out.layout = in_desc(g, x)->layout;
    memcpy(nd.out.dims, od, sizeof od);
    return finish(g, &nd, &x, 1, out);
}

static int is_matrix(const pdnn_tensor_desc *d)
{
    return pdnn__act_layout(d) >= 0 && d->dims[2] == 1 && d->dims[3] == 1;
}

pdnn_status pdnn_graph_matmul(pdnn_graph *g, const char *name, const char *device, pdnn_node a, pdnn_node b,
                              int trans_a, int trans_b, pdnn_node *out)
{
    pdnn_node in[2] = {a, b};
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_matmul", name, device, PDNN__OP_MATMUL, in, 2, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn_tensor_desc *da = in_desc(g, a), *db = in_desc(g, b);
    nd.trans_a = trans_a != 0;
    nd.trans_b = trans_b != 0;
    if (da->layout == PDNN_ND || db->layout == PDNN_ND) { /* numpy's matmul, see pdnn_matmul */
        char why[512];
        if (!pdnn__matmul_nd_shape(da, db, trans_a, trans_b, &nd.out, why, sizeof why))
            return shape_error(&nd, why);
        return finish(g, &nd, in, 2, out);
    }
    if (!is_matrix(da) || !is_matrix(db))
        return shape_error(&nd, "both inputs must be matrices ({rows,cols,1,1}) or ND; flatten images first");
    int64_t m = trans_a ? da->dims[1] : da->dims[0], k = trans_a ? da->dims[0] : da->dims[1];
    int64_t kb = trans_b ? db->dims[1] : db->dims[0], n = trans_b ? db->dims[0] : db->dims[1];
    if (k != kb) {
        char msg[160];
        snprintf(msg, sizeof msg, "inner dimensions differ: op(a) is %lld x %lld, op(b) is %lld x %lld",
                 (long long)m, (long long)k, (long long)kb, (long long)n);
        return shape_error(&nd, msg);
    }
    nd.out = (pdnn_tensor_desc){PDNN_FLOAT32, PDNN_NCHW, {m, n, 1, 1}, 0};
    return finish(g, &nd, in, 2, out);
}

static pdnn_status same_as_first(const pdnn_graph *g, const pdnn__node *nd, const pdnn_node *in, int n)
{
    for (int i = 1; i < n; i++) {
        const pdnn_tensor_desc *a = in_desc(g, in[0]), *b = in_desc(g, in[i]);
        if (memcmp(a->dims, b->dims, sizeof a->dims) != 0 || a->layout != b->layout) {
            char msg[256], da[96], dbuf[96];
            snprintf(msg, sizeof msg, "input 0 is %s but input %d is %s; they must match", pdnn__desc_string(a, da, sizeof da),
                     i, pdnn__desc_string(b, dbuf, sizeof dbuf));
            return shape_error(nd, msg);
        }
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_graph_add(pdnn_graph *g, const char *name, const char *device, pdnn_node a, pdnn_node b,
                           pdnn_node *out)
{
    pdnn_node in[2] = {a, b};
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_add", name, device, PDNN__OP_ADD, in, 2, out, &nd);
    if (st == PDNN_SUCCESS)
        st = same_as_first(g, &nd, in, 2);
    if (st != PDNN_SUCCESS)
        return st;
    nd.out = *in_desc(g, a);
    return finish(g, &nd, in, 2, out);
}

pdnn_status pdnn_graph_add_n(pdnn_graph *g, const char *name, const char *device, const pdnn_node *inputs, int n,
                             pdnn_node *out)
{
    if (!inputs || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_add_n: %s",
                           !inputs ? "inputs is NULL" : "n must be at least 1");
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_add_n", name, device, PDNN__OP_ADD_N, inputs, n, out, &nd);
    if (st == PDNN_SUCCESS)
        st = same_as_first(g, &nd, inputs, n);
    if (st != PDNN_SUCCESS)
        return st;
    nd.out = *in_desc(g, inputs[0]);
    return finish(g, &nd, inputs, n, out);
}

pdnn_status pdnn_graph_bias_add(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_node bias,
                                pdnn_node *out)
{
    pdnn_node in[2] = {x, bias};
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_bias_add", name, device, PDNN__OP_BIAS_ADD, in, 2, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn_tensor_desc *dx = in_desc(g, x), *db = in_desc(g, bias);
    if (pdnn__act_layout(dx) < 0)
        return shape_error(&nd, "x must be NCHW, NHWC or ND of rank 2 to 4");
    if (db->layout != PDNN_LAYOUT_X || db->dims[0] != dx->dims[1])
        return shape_error(&nd, "bias must be a layout-X vector of length C");
    nd.out = *dx;
    return finish(g, &nd, in, 2, out);
}

static pdnn_status unary(pdnn_graph *g, const char *fn, const char *name, const char *device, pdnn__node_op op,
                         pdnn_node x, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, fn, name, device, op, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    nd.out = *in_desc(g, x);
    if (op == PDNN__OP_SOFTMAX && pdnn__act_layout(&nd.out) < 0)
        return shape_error(&nd, "x must be NCHW, NHWC or ND of rank 2 to 4");
    return finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_relu(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_node *out)
{
    return unary(g, "pdnn_graph_relu", name, device, PDNN__OP_RELU, x, out);
}

pdnn_status pdnn_graph_allreduce(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_allreduce", name, device, PDNN__OP_ALLREDUCE, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    nd.out = *in_desc(g, x);
    if (!pdnn__dtype_is_float(nd.out.dtype))
        return shape_error(&nd, "x must be a float (float32, float16 or bfloat16)");
    if (pdnn__no_value(&g->nodes[x]))
        return shape_error(&nd, "x has no value (an optimizer update)");
    return finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_scale(pdnn_graph *g, const char *name, const char *device, pdnn_node x, float alpha,
                             pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_scale", name, device, PDNN__OP_MUL, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (!isfinite(alpha))
        return shape_error(&nd, "alpha must be finite");
    nd.out = *in_desc(g, x);
    if (!pdnn__dtype_is_float(nd.out.dtype))
        return shape_error(&nd, "x must be a float (float32, float16 or bfloat16)");
    nd.alpha = alpha;
    return finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_activation(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                  pdnn_activation mode, float alpha, float beta, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_activation", name, device, PDNN__OP_ACT, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    nd.act = mode;
    char why[160];
    if (pdnn__activation_check(mode, alpha, beta, why, sizeof why))
        return shape_error(&nd, why);
    nd.out = *in_desc(g, x);
    if (!pdnn__dtype_is_float(nd.out.dtype))
        return shape_error(&nd, "x must be a float (float32, float16 or bfloat16)");
    nd.alpha = alpha;
    nd.beta = beta;
    return finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_binary(pdnn_graph *g, const char *name, const char *device, pdnn_node a, pdnn_node b,
                              pdnn_binary_op op, pdnn_node *out)
{
    pdnn_node in[2] = {a, b};
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_binary", name, device, PDNN__OP_ELTWISE, in, 2, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (op != PDNN_BINARY_ADD && op != PDNN_BINARY_MUL && op != PDNN_BINARY_SUB && op != PDNN_BINARY_DIV &&
        op != PDNN_BINARY_POW)
        return shape_error(&nd, "op is not a pdnn_binary_op (ADD, MUL, SUB, DIV, POW)");
    nd.binop = op;
    const pdnn_tensor_desc *da = in_desc(g, a), *db = in_desc(g, b);
    if (!pdnn__dtype_is_float(da->dtype) || !pdnn__dtype_is_float(db->dtype))
        return shape_error(&nd, "a and b must be floats (float32, float16 or bfloat16)");
    const int n_d = (da->layout == PDNN_ND || db->layout == PDNN_ND) &&
                    (da->layout == PDNN_ND || da->layout == PDNN_LAYOUT_X) &&
                    (db->layout == PDNN_ND || db->layout == PDNN_LAYOUT_X);
    if (n_d) { /* numpy's broadcasting, see pdnn_binary */
        const int fits = pdnn__binary_nd_shape(da, db, &nd.out);
        const int64_t ny = pdnn_tensor_desc_elements(&nd.out);
        nd.bcast = (pdnn_tensor_desc_elements(da) != ny) | (pdnn_tensor_desc_elements(db) != ny) << 1;
        if (fits)
            return finish(g, &nd, in, 2, out);
    }
    int fits = da->layout == db->layout && !n_d;
    nd.out = *da;
    for (int k = 0; k < 4; k++) {
        const int64_t ak = da->dims[k], bk = db->dims[k];
        fits &= ak == bk || ak == 1 || bk == 1;
        nd.out.dims[k] = ak > bk ? ak : bk;
        nd.bcast |= (ak != nd.out.dims[k]) | (bk != nd.out.dims[k]) << 1;
    }
    if (!fits) {
        char msg[400], sa[160], sb[160];
        snprintf(msg, sizeof msg, "a is %s and b is %s; they need one layout (or both N-d: ND or X, ranks aligned "
                 "from the right) and, per dim, equal sizes or a 1",
                 pdnn__desc_string(da, sa, sizeof sa), pdnn__desc_string(db, sb, sizeof sb));
        return shape_error(&nd, msg);
    }
    return finish(g, &nd, in, 2, out);
}

pdnn_status pdnn_graph_batch_norm(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                  const pdnn_node params[4], float epsilon, pdnn_node *out)
{
    if (!params)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_batch_norm: params is NULL");
    pdnn_node in[5] = {x, params[0], params[1], params[2], params[3]};
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_batch_norm", name, device, PDNN__OP_BN, in, 5, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (!(epsilon > 0.0f) || !isfinite(epsilon))
        return shape_error(&nd, "epsilon must be positive and finite");
    nd.out = *in_desc(g, x);
    if (!pdnn__dtype_is_float(nd.out.dtype) || (nd.out.layout != PDNN_NCHW && nd.out.layout != PDNN_NHWC))
        return shape_error(&nd, "x must be a float NCHW or NHWC activation");
    for (int i = 1; i < 5; i++) {
        const pdnn_tensor_desc *d = in_desc(g, in[i]);
        if (d->dtype != PDNN_FLOAT32 || d->layout != PDNN_LAYOUT_X || d->dims[0] != nd.out.dims[1] ||
            d->dims[1] * d->dims[2] * d->dims[3] != 1) {
            char msg[160];
            snprintf(msg, sizeof msg, "gamma, beta, mean and var must be float32 layout-X vectors of C = %lld",
                     (long long)nd.out.dims[1]);
            return shape_error(&nd, msg);
        }
    }
    nd.alpha = epsilon;
    return finish(g, &nd, in, 5, out);
}

pdnn_status pdnn_graph_pad(pdnn_graph *g, const char *name, const char *device, pdnn_node x, const int64_t pads[4],
                           pdnn_pad_mode mode, float value, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_pad", name, device, PDNN__OP_PADDING, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (!pads)
        return shape_error(&nd, "pads is NULL");
    nd.out = *in_desc(g, x);
    if (!pdnn__dtype_is_float(nd.out.dtype) || (nd.out.layout != PDNN_NCHW && nd.out.layout != PDNN_NHWC))
        return shape_error(&nd, "x must be a float NCHW or NHWC activation");
    if (mode != PDNN_PAD_CONSTANT && mode != PDNN_PAD_REFLECT && mode != PDNN_PAD_EDGE)
        return shape_error(&nd, "mode is not CONSTANT, REFLECT or EDGE");
    for (int i = 0; i < 4; i++) {
        const int64_t dim = nd.out.dims[2 + (i & 1)];
        if (pads[i] < 0 || pads[i] > (int64_t)1 << 30 || (mode == PDNN_PAD_REFLECT && pads[i] >= dim) ||
            (mode == PDNN_PAD_EDGE && dim < 1))
            return shape_error(&nd, "pads must be >= 0 (below the dim for REFLECT)");
    }
    nd.out.dims[2] += pads[0] + pads[2];
    nd.out.dims[3] += pads[1] + pads[3];
    memcpy(nd.pads, pads, sizeof nd.pads);
    nd.pad_mode = mode;
    nd.alpha = value;
    return finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_transform(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                                 pdnn_layout layout, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_transform", name, device, PDNN__OP_TRANSPOSE, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    nd.out = *in_desc(g, x);
    if (!pdnn__dtype_is_float(nd.out.dtype))
        return shape_error(&nd, "x must be a float (float32, float16 or bfloat16)");
    nd.out.layout = layout;
    if (pdnn_tensor_desc_validate(&nd.out) != PDNN_SUCCESS)
        return shape_error(&nd, pdnn_last_error());
    return finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_concat(pdnn_graph *g, const char *name, const char *device, const pdnn_node *inputs, int n,
                              int axis, pdnn_node *out)
{
    if (!inputs || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_concat: %s",
                           !inputs ? "inputs is NULL" : "n must be at least 1");
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_concat", name, device, PDNN__OP_CONCAT, inputs, n, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    nd.axis = axis;
    nd.out = *in_desc(g, inputs[0]);
    int64_t st0[PDNN_MAX_RANK];
    if (axis < 0 || axis >= pdnn__desc_strides(&nd.out, st0))
        return shape_error(&nd, "axis must be a logical axis of the dims (0 to 3, or below an ND input's rank)");
    if (!pdnn__dtype_is_float(nd.out.dtype))
        return shape_error(&nd, "the inputs must be floats");
    for (int i = 1; i < n; i++) {
        const pdnn_tensor_desc *a = in_desc(g, inputs[i]);
        if (!pdnn__concat_compatible(a, &nd.out, axis)) {
            char msg[256], da[96], db[96];
            snprintf(msg, sizeof msg, "input 0 is %s but input %d is %s; they must match in layout and in every "
                     "dim but axis %d", pdnn__desc_string(&nd.out, da, sizeof da), i,
                     pdnn__desc_string(a, db, sizeof db), axis);
            return shape_error(&nd, msg);
        }
        if (a->dims[axis] > INT64_MAX / 4 - nd.out.dims[axis])
            return shape_error(&nd, "the concatenated dim overflows");
        nd.out.dims[axis] += a->dims[axis];
    }
    if (pdnn_tensor_desc_validate(&nd.out) != PDNN_SUCCESS)
        return shape_error(&nd, pdnn_last_error());
    return finish(g, &nd, inputs, n, out);
}

pdnn_status pdnn_graph_softmax(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_node *out)
{
    return unary(g, "pdnn_graph_softmax", name, device, PDNN__OP_SOFTMAX, x, out);
}

/* A Reshape node of x to d (any layout and rank). */
static pdnn_status reshape_to(pdnn_graph *g, const char *fn, const char *name, const char *device, pdnn_node x,
                              const pdnn_tensor_desc *d, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, fn, name, device, PDNN__OP_RESHAPE, &x, 1, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (!d)
        return shape_error(&nd, "dims is NULL");
    if (pdnn_tensor_desc_validate(d) != PDNN_SUCCESS)
        return shape_error(&nd, pdnn_last_error());
    if (pdnn_tensor_desc_elements(d) != pdnn_tensor_desc_elements(in_desc(g, x)))
        return shape_error(&nd, "the new dims hold a different number of elements");
    nd.out = *d;
    return finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_reshape(pdnn_graph *g, const char *name, const char *device, pdnn_node x,
                               const int64_t dims[4], pdnn_node *out)
{
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_NCHW, {0}, 4};
    for (int i = 0; dims && i < 4; i++)
        d.dims[i] = dims[i];
    return reshape_to(g, "pdnn_graph_reshape", name, device, x, dims ? &d : NULL, out);
}

pdnn_status pdnn_graph_reshape_nd(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int rank,
                                  const int64_t *dims, pdnn_node *out)
{
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_ND, {0}, rank};
    for (int i = 0; dims && i < rank && i < PDNN_MAX_RANK; i++)
        d.dims[i] = dims[i];
    return reshape_to(g, "pdnn_graph_reshape_nd", name, device, x, dims || rank == 0 ? &d : NULL, out);
}

pdnn_status pdnn_graph_flatten(pdnn_graph *g, const char *name, const char *device, pdnn_node x, pdnn_node *out)
{
    if (!g || x < 0 || x >= g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_flatten: %s", !g ? "graph is NULL" : "no such input node");
    const int64_t *d = g->nodes[x].out.dims;
    int64_t dims[4] = {d[0], d[1] * d[2] * d[3], 1, 1};
    return pdnn_graph_reshape(g, name, device, x, dims, out);
}

pdnn_status pdnn__graph_clone(const pdnn_graph *g, pdnn_graph **out)
{
    pdnn_graph *c = calloc(1, sizeof *c);
    if (!c)
        return pdnn__host_oom("copying a graph", "the graph", sizeof *c);
    c->nodes = calloc((size_t)(g->n ? g->n : 1), sizeof *c->nodes);
    if (!c->nodes) {
        free(c);
        return pdnn__host_oom("copying a graph", "the node table", sizeof *c->nodes * (size_t)(g->n ? g->n : 1));
    }
    c->cap = g->n ? g->n : 1;
    int ok = 1;
    size_t failed_bytes = 0; /* the copy that failed, for the message */
    for (int i = 0; i < g->n && ok; i++) {
        const pdnn__node *s = &g->nodes[i];
        pdnn__node *d = &c->nodes[i];
        *d = *s;
        d->inputs = NULL;
        d->data = NULL;
        c->n = i + 1; /* so that destroy frees what was copied so far */
        if (s->n_inputs) {
            failed_bytes = sizeof *d->inputs * (size_t)s->n_inputs;
            d->inputs = malloc(failed_bytes);
            if (!(ok = d->inputs != NULL))
                break;
            memcpy(d->inputs, s->inputs, sizeof *d->inputs * (size_t)s->n_inputs);
        }
    }
    if (!ok) {
        pdnn_graph_destroy(c);
        return pdnn__host_oom("copying a graph", "a node's inputs", failed_bytes);
    }
    *out = c;
    return PDNN_SUCCESS;
}

/* splitmix64 (Steele, Lea and Flood's finaliser) over a counter: the
 * k-th draw of a seed is independent of how many were drawn before. */
static double draw(uint64_t seed, uint64_t k)
{
    uint64_t z = seed + k * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static void fans(const pdnn_tensor_desc *d, double *fan_in, double *fan_out)
{
    const int64_t *x = d->dims;
    if (d->layout == PDNN_OIHW || d->layout == PDNN_OHWI || d->layout == PDNN_HWIO) {
        *fan_in = (double)(x[1] * x[2] * x[3]);
        *fan_out = (double)(x[0] * x[2] * x[3]);
    } else if (d->layout == PDNN_LAYOUT_X || (d->layout == PDNN_ND && d->rank < 2)) {
        *fan_in = *fan_out = (double)x[0];
    } else if (d->layout == PDNN_ND && d->rank > 2) { /* a batch of matmul operands {..., in, out} */
        *fan_in = (double)x[d->rank - 2];
        *fan_out = (double)x[d->rank - 1];
    } else if (x[2] == 1 && x[3] == 1) { /* a matrix {in, out}: ND rank 2 or {rows, cols, 1, 1} */
        *fan_in = (double)x[0];
        *fan_out = (double)x[1];
    } else {
        *fan_in = (double)(x[1] * x[2] * x[3]);
        *fan_out = (double)(x[0] * x[2] * x[3]);
    }
}

pdnn_status pdnn_graph_variable(pdnn_graph *g, const char *name, const char *device, const pdnn_tensor_desc *desc,
                                pdnn_initializer init, uint64_t seed, const float *data, pdnn_node *out)
{
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_variable", name, device, PDNN__OP_VARIABLE, NULL, 0, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    if (pdnn_tensor_desc_validate(desc) != PDNN_SUCCESS)
        return shape_error(&nd, pdnn_last_error());
    if (desc->dtype != PDNN_FLOAT32)
        return shape_error(&nd, "variables are float32");
    if (init == PDNN_INIT_DATA && !data)
        return shape_error(&nd, "PDNN_INIT_DATA needs data");
    if (init < PDNN_INIT_ZEROS || init > PDNN_INIT_GLOROT_UNIFORM)
        return shape_error(&nd, "unknown initializer");
    int64_t count = pdnn_tensor_desc_elements(desc);
    nd.data = calloc((size_t)count, sizeof *nd.data);
    if (!nd.data)
        return pdnn__host_oom(label(&nd), "the variable's initial value", (uint64_t)count * sizeof *nd.data);
    double fan_in, fan_out;
    fans(desc, &fan_in, &fan_out);
    const double two_pi = 6.283185307179586476925286766559;
    for (int64_t e = 0; e < count; e++) {
        double u = draw(seed, 2 * (uint64_t)e), v = draw(seed, 2 * (uint64_t)e + 1);
        if (init == PDNN_INIT_DATA)
            nd.data[e] = data[e];
        else if (init == PDNN_INIT_HE_NORMAL)
            nd.data[e] = (float)(sqrt(2.0 / fan_in) * sqrt(-2.0 * log(1.0 - u)) * cos(two_pi * v));
        else if (init == PDNN_INIT_GLOROT_UNIFORM) {
            double lim = sqrt(6.0 / (fan_in + fan_out));
            nd.data[e] = (float)(-lim + 2.0 * lim * u);
        }
    }
    nd.out = *desc;
    st = finish(g, &nd, NULL, 0, out);
    if (st != PDNN_SUCCESS)
        free(nd.data);
    return st;
}

pdnn_status pdnn_graph_softmax_cross_entropy(pdnn_graph *g, const char *name, const char *device, pdnn_node logits,
                                             pdnn_node labels, pdnn_node *out)
{
    pdnn_node in[2] = {logits, labels};
    pdnn__node nd;
    pdnn_status st = begin(g, "pdnn_graph_softmax_cross_entropy", name, device, PDNN__OP_XENT, in, 2, out, &nd);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn_tensor_desc *dl = in_desc(g, logits), *dlab = in_desc(g, labels);
    if (!is_matrix(dl) || !pdnn__dtype_is_float(dl->dtype))
        return shape_error(&nd, "logits must be a float matrix {N, K, 1, 1} or ND {N, K}");
    if (dlab->dtype != PDNN_INT32 || dlab->layout != PDNN_LAYOUT_X || dlab->dims[0] != dl->dims[0])
        return shape_error(&nd, "labels must be int32, layout X, {N, 1, 1, 1} with N the logits' rows");
    nd.out = (pdnn_tensor_desc){PDNN_FLOAT32, PDNN_LAYOUT_X, {1, 1, 1, 1}, 0};
    return finish(g, &nd, in, 2, out);
}

pdnn_status pdnn__graph_add(pdnn_graph *g, const char *name, const pdnn__node *proto, const pdnn_node *inputs,
                            int n_inputs, pdnn_node *out)
{
    pdnn__node nd = *proto;
    nd.inputs = NULL;
    nd.data = NULL;
    unique_name(g, &nd, name);
    pdnn_status st = commit(g, &nd, inputs, n_inputs, out, 0); /* gradients, updates: no policy of their own */
    if (st != PDNN_SUCCESS || !proto->data)
        return st;
    /* The data goes to the committed node; a failed copy takes it back out. */
    pdnn__node *added = &g->nodes[*out];
    size_t bytes = (size_t)pdnn_tensor_desc_bytes(&proto->out);
    added->data = malloc(bytes);
    if (!added->data) {
        free(added->inputs);
        g->n--;
        return pdnn__host_oom(nd.name, "the node's data", bytes);
    }
    memcpy(added->data, proto->data, bytes);
    return PDNN_SUCCESS;
}
