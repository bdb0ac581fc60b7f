/* The builders of the other ops (elementwise: Add, Mul, the activations;
 * Gemm and MatMul; Flatten, Reshape, Concat; Softmax; Constant, Identity,
 * Dropout) and import_node, which hands each ONNX node to its builder. */
#include "io/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUPPORTED_OPS                                                                                  \
    "Add, AveragePool, BatchNormalization, Cast, Clip, Concat, Constant, ConstantOfShape, Conv, "     \
    "ConvTranspose, Div, Dropout, Expand, Flatten, Gather, Gemm, GlobalAveragePool, HardSigmoid, "    \
    "HardSwish, Identity, LeakyRelu, MatMul, MaxPool, Mul, Pad, Range, ReduceMax, ReduceMean, "       \
    "ReduceSum (over H and W), Reshape, Relu, Resize, Shape, Sigmoid, Slice, Softmax, Split, "        \
    "Squeeze, Sub, Unsqueeze, Upsample, Where; Transpose, Equal, Mod, Not and ScatterND of constants"

/* Output 0 of a node that maps onto a single graph call. */
static pdnn_status finish(importer *im, const Onnx__NodeProto *n, pdnn_status st, int y, int rank)
{
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, n->output[0], y, rank);
}

/* One input of a binary op as a graph node with dims d (the input's own,
 * aligned to the op's rank r from the right and stored as the importer
 * stores rank r: those r dims, then 1s; the caller's). A constant becomes a node laid
 * out like the activations; an activation must have rank r already. */
static pdnn_status binary_operand(importer *im, const Onnx__NodeProto *n, const value *v, int r,
                                  pdnn_layout layout, const int64_t d[4], int *node)
{
    if (v->node >= 0) {
        if (v->rank != r)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                         "input '%s' has rank %d and would broadcast to rank %d; only a constant "
                                         "of lower rank is supported",
                                         v->name, v->rank, r);
        *node = v->node;
        return PDNN_SUCCESS;
    }
    if (!v->data)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "constant '%s' is not float", v->name);
    float *data = malloc((size_t)(v->count ? v->count : 1) * sizeof *data);
    if (!data)
        return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
    pdnn__onnx_relayout(v->data, d, layout, data);
    pdnn_tensor_desc want = {PDNN_FLOAT32, layout, {d[0], d[1], d[2], d[3]}, 0};
    pdnn_status st = pdnn__graph_constant_adopt(im->graph, im->device, &want, data, node);
    return st == PDNN_SUCCESS ? st : pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
}

/* a (op) b for Add, Mul, Sub and Div beyond their fast paths, with ONNX's
 * (NumPy's) broadcasting within rank 4: dims aligned from the right, each
 * pair equal or one of them 1; either side may repeat. At least one input
 * is an activation; a constant is laid out like it (its NCHW data
 * permuted for NHWC). */
static pdnn_status import_binary(importer *im, const Onnx__NodeProto *n, pdnn_binary_op op)
{
    pdnn_status st;
    value *v[2];
    for (size_t i = 0; i < 2; i++)
        if (!(v[i] = pdnn__onnx_const_input(im, n, i)) && !(v[i] = pdnn__onnx_act_input(im, n, i, &st)))
            return st;
    if (v[0]->node < 0 && v[1]->node < 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "both inputs are constants (not folded at import)");
    const int r = v[0]->rank > v[1]->rank ? v[0]->rank : v[1]->rank;
    if (r > 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "results of rank %d are not supported (1 to 4)", r);
    pdnn_tensor_desc ad;
    const value *act = v[0]->node >= 0 ? v[0] : v[1];
    if ((st = pdnn_graph_node_desc(im->graph, act->node, &ad)) != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    int64_t d[2][4];
    int node[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 4; k++)
            d[i][k] = 1;
        for (int k = 0; k < v[i]->rank; k++)
            d[i][r - v[i]->rank + k] = v[i]->dims[k];
    }
    for (int k = 0; k < 4; k++)
        if (d[0][k] != d[1][k] && d[0][k] != 1 && d[1][k] != 1)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n,
                                         "inputs '%s' and '%s' do not broadcast: axis %d is %lld and %lld "
                                         "(they must be equal, or one of them 1)",
                                         v[0]->name, v[1]->name, k, (long long)d[0][k], (long long)d[1][k]);
    for (int i = 0; i < 2; i++)
        if ((st = binary_operand(im, n, v[i], r, ad.layout, d[i], &node[i])) != PDNN_SUCCESS)
            return st;
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    if (op == PDNN_BINARY_ADD && memcmp(d[0], d[1], sizeof d[0]) == 0)
        st = pdnn_graph_add(im->graph, n->output[0], im->device, node[0], node[1], &y);
    else
        st = pdnn_graph_binary(im->graph, n->output[0], im->device, node[0], node[1], op, &y);
    return finish(im, n, st, y, r);
}

/* For a commutative op of two inputs: a constant first input swaps with
 * the second; returns the second when it is a constant (NULL if not). */
static value *constant_second(importer *im, const Onnx__NodeProto *n)
{
    value *ca = pdnn__onnx_const_input(im, n, 0), *cb = pdnn__onnx_const_input(im, n, 1);
    if (ca && !cb) {
        char *t = n->input[0];
        n->input[0] = n->input[1];
        n->input[1] = t;
        cb = ca;
    }
    return cb;
}

static pdnn_status import_add(importer *im, const Onnx__NodeProto *n)
{
    if (n->n_input != 2)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "Add takes 2 inputs, %zu given", n->n_input);
    value *cb = constant_second(im, n), *a;
    pdnn_status st;
    int y = -1;
    if (!(a = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    if (cb && cb->data) {
        /* x + per-channel vector ({C}, {1,C}, {C,1,1}, {1,C,1,1}): bias_add. */
        int64_t C = a->dims[1];
        int per_channel = cb->count == C &&
                          ((a->rank == 2 && (cb->rank == 1 || (cb->rank == 2 && cb->dims[0] == 1))) ||
                           (a->rank == 4 && ((cb->rank == 3 && cb->dims[1] == 1 && cb->dims[2] == 1) ||
                                             (cb->rank == 4 && cb->dims[0] == 1 && cb->dims[2] == 1 &&
                                              cb->dims[3] == 1))));
        if (per_channel) {
            pdnn_tensor_desc bd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {C, 1, 1, 1}, 0};
            int bn = -1;
            if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
                return st;
            st = pdnn_graph_constant(im->graph, NULL, im->device, &bd, cb->data, &bn);
            if (st == PDNN_SUCCESS)
                st = pdnn_graph_bias_add(im->graph, n->output[0], im->device, a->node, bn, &y);
            return finish(im, n, st, y, a->rank);
        }
    }
    return import_binary(im, n, PDNN_BINARY_ADD);
}

/* Gemm: y = alpha * op(A) op(B) + beta * C, with B a constant when alpha
 * != 1 and C a per-column vector (bias_add) or absent. */
static pdnn_status import_gemm(importer *im, const Onnx__NodeProto *n, int matmul)
{
    value *a, *b;
    pdnn_status st;
    if (!(a = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    int ta = matmul ? 0 : attr_int(n, "transA", 0) != 0, tb = matmul ? 0 : attr_int(n, "transB", 0) != 0;
    float alpha = matmul ? 1.0f : attr_float(n, "alpha", 1.0f), beta = matmul ? 1.0f : attr_float(n, "beta", 1.0f);
    value *cb = pdnn__onnx_const_input(im, n, 1);
    if (n->n_input < 2)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "input B is missing");
    if (a->rank != 2)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D matrices are supported (A has rank %d)",
                                     a->rank);
    if (cb && cb->rank == 2 && cb->data) {
        float *scaled = malloc((size_t)cb->count * sizeof *scaled);
        if (!scaled)
            return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
        for (int64_t i = 0; i < cb->count; i++)
            scaled[i] = cb->data[i] * alpha;
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_NCHW, {cb->dims[0], cb->dims[1], 1, 1}, 0};
        int bnode = -1;
        st = pdnn_graph_constant(im->graph, NULL, im->device, &d, scaled, &bnode);
        free(scaled);
        if (st != PDNN_SUCCESS)
            return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
        int has_c = !matmul && n->n_input > 2 && n->input[2][0];
        int64_t N = tb ? cb->dims[0] : cb->dims[1];
        int y = -1, mm = -1;
        const char *out = n->output[0];
        if ((st = pdnn__onnx_check_name(n, out)) != PDNN_SUCCESS)
            return st;
        if (!has_c) {
            st = pdnn_graph_matmul(im->graph, out, im->device, a->node, bnode, ta, tb, &y);
            return finish(im, n, st, y, 2);
        }
        value *c = pdnn__onnx_const_input(im, n, 2);
        if (!c || !c->data || c->count != N || (c->rank != 1 && !(c->rank == 2 && c->dims[0] == 1)))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "C must be a constant vector of %lld values",
                                         (long long)N);
        float *cs = malloc((size_t)N * sizeof *cs);
        if (!cs)
            return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
        for (int64_t i = 0; i < N; i++)
            cs[i] = c->data[i] * beta;
        pdnn_tensor_desc cd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {N, 1, 1, 1}, 0};
        int cnode = -1;
        st = pdnn_graph_constant(im->graph, NULL, im->device, &cd, cs, &cnode);
        free(cs);
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_matmul(im->graph, NULL, im->device, a->node, bnode, ta, tb, &mm);
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_bias_add(im->graph, out, im->device, mm, cnode, &y);
        return finish(im, n, st, y, 2);
    }
    if (!(b = pdnn__onnx_act_input(im, n, 1, &st)))
        return st;
    if (b->rank != 2)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "only 2-D matrices are supported (B has rank %d)",
                                     b->rank);
    if (alpha != 1.0f)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "alpha != 1 needs a constant B");
    if (!matmul && n->n_input > 2 && n->input[2][0])
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "C needs a constant B");
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_matmul(im->graph, n->output[0], im->device, a->node, b->node, ta, tb, &y);
    return finish(im, n, st, y, 2);
}

/* A reshape of x to rank r dims (NCHW memory order, so a plain copy). */
pdnn_status pdnn__onnx_reshape_to(importer *im, const Onnx__NodeProto *n, value *x, int r, const int64_t *dims)
{
    if (r < 1 || r > 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "results of rank %d are not supported (1 to 4)", r);
    int src = x->node;
    pdnn_tensor_desc xd;
    pdnn_status ts = pdnn_graph_node_desc(im->graph, src, &xd);
    if (ts == PDNN_SUCCESS && xd.layout == PDNN_NHWC && xd.dims[2] * xd.dims[3] > 1)
        ts = pdnn_graph_transform(im->graph, NULL, im->device, src, PDNN_NCHW, &src); /* ONNX's element order */
    if (ts != PDNN_SUCCESS)
        return pdnn__onnx_node_error(ts, n, "%s", pdnn_last_error());
    int64_t d4[4] = {1, 1, 1, 1};
    for (int i = 0; i < r; i++)
        d4[i] = dims[i];
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_reshape(im->graph, n->output[0], im->device, src, d4, &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    value v = {.name = n->output[0], .node = y, .rank = r};
    memcpy(v.dims, d4, sizeof d4);
    return pdnn__onnx_add_value(im, &v);
}

static pdnn_status import_flatten(importer *im, const Onnx__NodeProto *n)
{
    value *x;
    pdnn_status st;
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is out of range for rank %d",
                                     (long long)attr_int(n, "axis", 1), x->rank);
    int64_t d[2] = {1, 1};
    for (int i = 0; i < x->rank; i++)
        d[i >= axis] *= x->dims[i];
    return pdnn__onnx_reshape_to(im, n, x, 2, d);
}

static pdnn_status import_reshape(importer *im, const Onnx__NodeProto *n)
{
    value *x, *sh = pdnn__onnx_const_input(im, n, 1);
    pdnn_status st;
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    if (!sh || !sh->i64 || sh->rank != 1)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the shape must be a constant int64 vector");
    if (sh->count < 1 || sh->count > 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "results of rank %lld are not supported (1 to 4)",
                                     (long long)sh->count);
    if (attr_int(n, "allowzero", 0) != 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "allowzero=1 is not supported");
    int64_t d[4], total = 1, known = 1;
    int infer = -1;
    for (int i = 0; i < x->rank; i++)
        total *= x->dims[i];
    for (int i = 0; i < (int)sh->count; i++) {
        d[i] = sh->i64[i];
        if (d[i] == 0) {
            if (i >= x->rank)
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "shape[%d] = 0 copies a dim the input lacks",
                                             i);
            d[i] = x->dims[i];
        }
        if (d[i] == -1) {
            if (infer >= 0)
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "the shape has two -1");
            infer = i;
            continue;
        }
        if (d[i] < 1 || d[i] > total || known > total / d[i])
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n,
                                         "shape[%d] = %lld does not fit the input's %lld elements", i,
                                         (long long)sh->i64[i], (long long)total);
        known *= d[i];
    }
    if (infer >= 0) {
        if (total % known)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n,
                                         "the shape does not divide the input's %lld elements", (long long)total);
        d[infer] = total / known;
    }
    return pdnn__onnx_reshape_to(im, n, x, (int)sh->count, d);
}

static pdnn_status import_softmax(importer *im, const Onnx__NodeProto *n)
{
    value *x;
    pdnn_status st;
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    int64_t axis = attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    if (axis < 0)
        axis += x->rank;
    /* polydnn's softmax runs over C of {N, C, 1, 1}. Before opset 13 the
     * input is coerced to 2-D at axis, which is the same when the rest is 1. */
    int ok = axis == 1 && (x->rank == 2 || (x->dims[2] == 1 && x->dims[3] == 1));
    if (!ok)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                     "softmax over axis %lld of a rank-%d input; only over the columns "
                                     "of a matrix {N, C} (or {N, C, 1, 1}) is supported",
                                     (long long)attr_int(n, "axis", -1), x->rank);
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_softmax(im->graph, n->output[0], im->device, x->node, &y);
    return finish(im, n, st, y, x->rank);
}

/* The Mul that alone reads Sigmoid or HardSigmoid node n's output and
 * multiplies it by n's own input (x * sigmoid(x): SiLU; x *
 * hard_sigmoid(x) with alpha 1/6, beta 1/2: hard swish, as exporters
 * write them before opset 14), or -1. */
static int gate_mul(importer *im, size_t idx, const Onnx__NodeProto *n)
{
    if (!im->fuse || n->n_output != 1 || n->n_input != 1)
        return -1;
    const int r = pdnn__onnx_sole_reader(im, idx + 1, n->output[0]);
    if (r < 0)
        return -1;
    const Onnx__NodeProto *m = im->g->node[r];
    if (!m->op_type || strcmp(m->op_type, "Mul") != 0 || m->n_input != 2 || m->n_output != 1 || !m->output[0][0])
        return -1;
    const int mine = strcmp(m->input[0], n->output[0]) == 0 ? 0 : 1;
    return strcmp(m->input[1 - mine], n->input[0]) == 0 ? r : -1;
}

/* Clip (bounds as attributes before opset 11, as optional constant scalar
 * inputs since), LeakyRelu, Sigmoid, HardSigmoid, HardSwish: one
 * activation node; a Sigmoid or hard sigmoid gating its own input through
 * a Mul becomes SiLU or hard swish, one node instead of two. */
static pdnn_status import_activation(importer *im, size_t idx, const Onnx__NodeProto *n, pdnn_activation mode)
{
    value *x;
    pdnn_status st;
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    float alpha = 0.0f, beta = 0.0f;
    if (mode == PDNN_ACTIVATION_LEAKY_RELU)
        alpha = attr_float(n, "alpha", 0.01f);
    else if (mode == PDNN_ACTIVATION_HARD_SIGMOID)
        alpha = attr_float(n, "alpha", 0.2f), beta = attr_float(n, "beta", 0.5f);
    else if (mode == PDNN_ACTIVATION_CLIP && (st = pdnn__onnx_clip_bounds(im, n, 1, &alpha, &beta)) != PDNN_SUCCESS)
        return st;
    const char *out = n->output[0];
    const int hswish = mode == PDNN_ACTIVATION_HARD_SIGMOID && alpha == 1.0f / 6.0f && beta == 0.5f;
    const int gate = mode == PDNN_ACTIVATION_SIGMOID || hswish ? gate_mul(im, idx, n) : -1;
    if (gate >= 0) {
        mode = hswish ? PDNN_ACTIVATION_HARD_SWISH : PDNN_ACTIVATION_SILU;
        out = im->g->node[gate]->output[0];
        im->absorbed[gate] = 1;
    }
    if ((st = pdnn__onnx_check_name(n, out)) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_activation(im->graph, out, im->device, x->node, mode, alpha, beta, &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, out, y, x->rank);
}

/* Sub, and Div but by a constant scalar: x * (1 / c) (a scale node). */
static pdnn_status import_sub_div(importer *im, const Onnx__NodeProto *n, pdnn_binary_op op)
{
    if (n->n_input != 2)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "%s takes 2 inputs, %zu given", n->op_type, n->n_input);
    value *cb = pdnn__onnx_const_input(im, n, 1), *x;
    pdnn_status st;
    if (op != PDNN_BINARY_DIV || !cb || !cb->data || cb->count != 1 || !pdnn__onnx_find_value(im, n->input[0]) ||
        pdnn__onnx_find_value(im, n->input[0])->node < 0)
        return import_binary(im, n, op);
    const float inv = 1.0f / cb->data[0];
    if (!isfinite(inv) || inv == 0.0f)
        return import_binary(im, n, op); /* 1/c is not a finite scale: divide */
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_scale(im->graph, n->output[0], im->device, x->node, inv, &y);
    return finish(im, n, st, y, x->rank);
}

/* Mul by a constant scalar (either side): a scale node. */
static pdnn_status import_mul(importer *im, const Onnx__NodeProto *n)
{
    if (n->n_input != 2)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "Mul takes 2 inputs, %zu given", n->n_input);
    value *cb = constant_second(im, n), *x;
    pdnn_status st;
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    if (!(cb && cb->data && cb->count == 1)) /* not a scalar: elementwise, broadcast */
        return import_binary(im, n, PDNN_BINARY_MUL);
    const float alpha = cb->data[0];
    if (!isfinite(alpha))
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the scalar is %g; only a finite one is supported",
                                     (double)alpha);
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_scale(im->graph, n->output[0], im->device, x->node, alpha, &y);
    return finish(im, n, st, y, x->rank);
}

static pdnn_status import_concat(importer *im, const Onnx__NodeProto *n)
{
    if (n->n_input < 1)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "Concat has no input");
    if (!attr(n, "axis"))
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "Concat's axis is missing");
    if (n->n_input > 1024)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "%zu inputs; at most 1024 are supported", n->n_input);
    pdnn_status st;
    value *first = pdnn__onnx_act_input(im, n, 0, &st);
    if (!first)
        return st;
    const int rank = first->rank;
    int64_t axis = attr_int(n, "axis", 0);
    if (axis < -rank || axis >= rank)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is out of range for rank %d",
                                     (long long)axis, rank);
    if (axis < 0)
        axis += rank;
    pdnn_node *in = malloc(n->n_input * sizeof *in);
    if (!in)
        return pdnn__onnx_node_error(PDNN_ERR_OUT_OF_MEMORY, n, "out of host memory");
    for (size_t i = 0; i < n->n_input; i++) {
        value *v = pdnn__onnx_act_input(im, n, i, &st);
        if (!v)
            break;
        if (v->rank != rank) {
            st = pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "input '%s' has rank %d but input 0 has rank %d",
                                       v->name, v->rank, rank);
            break;
        }
        in[i] = v->node;
    }
    if (st == PDNN_SUCCESS)
        st = pdnn__onnx_check_name(n, n->output[0]);
    int y = -1;
    if (st == PDNN_SUCCESS) {
        /* Ranks 2 and 4 are stored as {d0, d1, 1, 1} and NCHW: axis is the dims' own. */
        st = pdnn_graph_concat(im->graph, n->output[0], im->device, in, (int)n->n_input, (int)axis, &y);
        if (st != PDNN_SUCCESS)
            st = pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    }
    free(in);
    return st == PDNN_SUCCESS ? pdnn__onnx_set_output(im, n, n->output[0], y, rank) : st;
}

static const char *const known_ops[] = {
    "Add", "AveragePool", "BatchNormalization", "Clip", "Concat", "Constant", "Conv", "Div", "Dropout",
    "Flatten", "Gemm", "GlobalAveragePool", "HardSigmoid", "HardSwish", "Identity", "LeakyRelu", "MatMul",
    "MaxPool", "Mul", "Pad", "ReduceMax", "ConvTranspose", "Shape", "Gather", "Unsqueeze", "Squeeze", "Slice",
    "Split", "Cast", "ConstantOfShape", "Range", "Expand", "Where", "Resize", "Upsample",
    "Transpose", "Equal", "Mod", "Not", "ScatterND" /* of constants: folded (onnx_move.c) */, "ReduceMean", "ReduceSum", "Relu", "Reshape", "Sigmoid", "Softmax",
    "Sub"};

static int known_op(const Onnx__NodeProto *n)
{
    if (!n->op_type || (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0))
        return 0;
    for (size_t i = 0; i < sizeof known_ops / sizeof *known_ops; i++)
        if (strcmp(n->op_type, known_ops[i]) == 0)
            return 1;
    return 0;
}

pdnn_status pdnn__onnx_check_ops(const importer *im)
{
    enum { MAX_KINDS = 32 };
    const Onnx__NodeProto *first[MAX_KINDS];
    size_t count[MAX_KINDS], kinds = 0, more = 0;
    for (size_t i = 0; i < im->g->n_node; i++) {
        const Onnx__NodeProto *n = im->g->node[i];
        if (known_op(n))
            continue;
        const char *op = n->op_type ? n->op_type : "", *dom = n->domain ? n->domain : "";
        size_t k = 0;
        while (k < kinds && (strcmp(first[k]->op_type ? first[k]->op_type : "", op) != 0 ||
                             strcmp(first[k]->domain ? first[k]->domain : "", dom) != 0))
            k++;
        if (k == kinds && kinds == MAX_KINDS) {
            more++;
            continue;
        }
        if (k == kinds)
            first[kinds] = n, count[kinds++] = 0;
        count[k]++;
    }
    if (!kinds)
        return PDNN_SUCCESS;
    char list[1024];
    size_t len = 0;
    for (size_t k = 0; k < kinds && len < sizeof list; k++) {
        const char *dom = first[k]->domain && first[k]->domain[0] ? first[k]->domain : NULL;
        int w = snprintf(list + len, sizeof list - len, "%s%s%s%s x%zu", k ? ", " : "", dom ? dom : "",
                         dom ? "." : "", first[k]->op_type ? first[k]->op_type : "(no op_type)", count[k]);
        len += w > 0 ? (size_t)w : 0;
    }
    if (more && len < sizeof list)
        snprintf(list + len, sizeof list - len, " and %zu nodes of other operators", more);
    return FAIL(PDNN_ERR_UNSUPPORTED,
                "pdnn_graph_import_onnx: unsupported operators: %s (the first at node '%s'); supported: %s", list,
                node_name(first[0]), SUPPORTED_OPS);
}

/* A BatchNormalization that no Conv absorbed (it follows a Concat, or
 * another reader shares the Conv's output): an inference node over its
 * constant parameters. */
static pdnn_status import_batch_norm(importer *im, const Onnx__NodeProto *n)
{
    value *x;
    pdnn_status st;
    if (n->n_input != 5)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "BatchNormalization takes 5 inputs, %zu given", n->n_input);
    if (!(x = pdnn__onnx_act_input(im, n, 0, &st)))
        return st;
    if (attr_int(n, "training_mode", 0) != 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "training_mode 1 is not supported (inference only)");
    for (size_t j = 1; j < n->n_output; j++)
        if (n->output[j][0])
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the running statistics outputs are not supported");
    if (x->rank < 2 || x->rank > 4)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "an input of rank %d (2 to 4 are supported)", x->rank);
    const int64_t C = x->dims[1];
    pdnn_node p[4];
    pdnn_tensor_desc pd = {PDNN_FLOAT32, PDNN_LAYOUT_X, {C, 1, 1, 1}, 0};
    for (size_t i = 0; i < 4; i++) {
        const value *c = pdnn__onnx_const_input(im, n, i + 1);
        if (!c || !c->data || c->count != C)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                         "input %zu must be a float constant of C = %lld values", i + 1,
                                         (long long)C);
        if ((st = pdnn_graph_constant(im->graph, NULL, im->device, &pd, c->data, &p[i])) != PDNN_SUCCESS)
            return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    }
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_batch_norm(im->graph, n->output[0], im->device, x->node, p, attr_float(n, "epsilon", 1e-5f), &y);
    return finish(im, n, st, y, x->rank);
}

pdnn_status pdnn__onnx_import_node(importer *im, size_t idx)
{
    Onnx__NodeProto *n = im->g->node[idx];
    const char *op = n->op_type;
    if (!op)
        return FAIL(PDNN_ERR_CORRUPT, "pdnn_graph_import_onnx: node '%s' has no op_type", node_name(n));
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "operator domain '%s' is not supported; supported: %s",
                                     n->domain, SUPPORTED_OPS);
    if (im->absorbed[idx])
        return PDNN_SUCCESS;
    if (n->n_output < 1 || !n->output[0][0])
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "the node has no output");
    for (size_t i = 0; i < n->n_input; i++)
        if (!n->input[i])
            return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "input %zu has no name", i);
    int folded = 0;
    pdnn_status fst = pdnn__onnx_fold(im, n, &folded);
    if (folded || fst != PDNN_SUCCESS)
        return fst;
    if (strcmp(op, "Conv") == 0)
        return pdnn__onnx_import_conv(im, idx, n);
    if (strcmp(op, "ConvTranspose") == 0)
        return pdnn__onnx_import_conv_transpose(im, n);
    if (strcmp(op, "Slice") == 0 || strcmp(op, "Split") == 0 || strcmp(op, "Gather") == 0 ||
        strcmp(op, "Expand") == 0 || strcmp(op, "Where") == 0 || strcmp(op, "Resize") == 0 ||
        strcmp(op, "Upsample") == 0 || strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0 ||
        strcmp(op, "Transpose") == 0)
        return pdnn__onnx_import_move(im, n);
    if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0)
        return pdnn__onnx_import_pool(im, n, op[0] == 'M', 0);
    if (strcmp(op, "GlobalAveragePool") == 0)
        return pdnn__onnx_import_pool(im, n, 0, 1);
    if (strcmp(op, "Relu") == 0) {
        pdnn_status st;
        value *x = pdnn__onnx_act_input(im, n, 0, &st);
        if (!x)
            return st;
        if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
            return st;
        int y = -1;
        st = pdnn_graph_relu(im->graph, n->output[0], im->device, x->node, &y);
        return finish(im, n, st, y, x->rank);
    }
    if (strcmp(op, "Clip") == 0)
        return import_activation(im, idx, n, PDNN_ACTIVATION_CLIP);
    if (strcmp(op, "LeakyRelu") == 0)
        return import_activation(im, idx, n, PDNN_ACTIVATION_LEAKY_RELU);
    if (strcmp(op, "Sigmoid") == 0)
        return import_activation(im, idx, n, PDNN_ACTIVATION_SIGMOID);
    if (strcmp(op, "HardSigmoid") == 0)
        return import_activation(im, idx, n, PDNN_ACTIVATION_HARD_SIGMOID);
    if (strcmp(op, "HardSwish") == 0)
        return import_activation(im, idx, n, PDNN_ACTIVATION_HARD_SWISH);
    if (strcmp(op, "Sub") == 0)
        return import_sub_div(im, n, PDNN_BINARY_SUB);
    if (strcmp(op, "Div") == 0)
        return import_sub_div(im, n, PDNN_BINARY_DIV);
    if (strcmp(op, "Mul") == 0)
        return import_mul(im, n);
    if (strcmp(op, "Concat") == 0)
        return import_concat(im, n);
    if (strcmp(op, "Add") == 0)
        return import_add(im, n);
    if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0)
        return import_gemm(im, n, op[0] == 'M');
    if (strcmp(op, "Flatten") == 0)
        return import_flatten(im, n);
    if (strcmp(op, "Reshape") == 0)
        return import_reshape(im, n);
    if (strcmp(op, "Softmax") == 0)
        return import_softmax(im, n);
    if (strcmp(op, "Dropout") == 0 || strcmp(op, "Identity") == 0) {
        /* Inference: the output is the input; a Dropout mask is refused. */
        if (n->n_output > 1 && n->output[1][0])
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the Dropout mask output is not supported");
        /* A constant stays a host constant (exporters put Identity on
         * shared initializers), so it can still fold or be a weight. */
        value *c = pdnn__onnx_const_input(im, n, 0), *x = c;
        pdnn_status st;
        if (!c && !(x = pdnn__onnx_act_input(im, n, 0, &st)))
            return st;
        value v = *x;
        v.name = n->output[0];
        v.alias = 1; /* the original owns any host data */
        return pdnn__onnx_add_value(im, &v);
    }
    if (strcmp(op, "Constant") == 0) {
        const Onnx__AttributeProto *a = attr(n, "value");
        if (!a || !a->t)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "only a Constant with a tensor 'value' is supported");
        return pdnn__onnx_tensor_value(im, a->t, n->output[0]);
    }
    if (strcmp(op, "BatchNormalization") == 0)
        return import_batch_norm(im, n);
    if (strcmp(op, "Pad") == 0)
        return pdnn__onnx_import_pad(im, idx, n);
    if (strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceMax") == 0 || strcmp(op, "ReduceSum") == 0)
        return pdnn__onnx_import_reduce(im, n, op + 6);
    return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "operator '%s' is not supported; supported: %s", op,
                                 SUPPORTED_OPS);
}
