/* The builders of the other ops (elementwise: Add, Mul, the activations;
 * Gemm and MatMul; Flatten, Reshape, Concat; Softmax; Constant, Identity,
 * Dropout) and import_node, which hands each ONNX node to its builder. */
#include "io/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUPPORTED_OPS                                                                                  \
    "Abs, Add, AveragePool, BatchNormalization, Cast, Clip, Concat, Constant, ConstantOfShape, Conv, "       \
    "ConvTranspose, Div, Dropout, Einsum (two operands), Erf, Exp, Expand, Flatten, Gather, Gemm, "          \
    "GlobalAveragePool, HardSigmoid, HardSwish, Identity, LayerNormalization, LeakyRelu, Log, LogSoftmax, "  \
    "MatMul, MaxPool, Mul, Neg, Pad, Pow, Range, Reciprocal, ReduceMax, ReduceMean, ReduceMin, ReduceSum, " \
    "Reshape, Relu, Resize, Shape, Sigmoid, Slice, Softmax, Split, Sqrt, Squeeze, Sub, Tanh, "          \
    "Transpose, Unsqueeze, Upsample, Where; Equal, Mod, Not and ScatterND of constants"

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
    if (st == PDNN_SUCCESS) /* a weight when trainable */
        st = pdnn__onnx_train_weight(im, *node, v);
    return st == PDNN_SUCCESS ? st : pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
}

/* v's node as a PDNN_ND node of v's ONNX shape: itself when it is one; an
 * image-layout node (ranks 2 and 4) reshaped, after a transform to NCHW
 * where it is NHWC (ONNX's element order); a constant made an ND node. */
static pdnn_status nd_node(importer *im, const Onnx__NodeProto *n, value *v, int *node)
{
    pdnn_tensor_desc d;
    pdnn__onnx_value_desc(v, &d);
    d.layout = PDNN_ND;
    d.rank = v->rank;
    pdnn_status st = PDNN_SUCCESS;
    if (v->node < 0) {
        if (!v->data)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "constant '%s' is not float", v->name);
        st = pdnn_graph_constant(im->graph, NULL, im->device, &d, v->data, node);
        if (st == PDNN_SUCCESS) /* a weight when trainable */
            st = pdnn__onnx_train_weight(im, *node, v);
        return st == PDNN_SUCCESS ? st : pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    }
    pdnn_tensor_desc cur;
    int src = v->node;
    if ((st = pdnn_graph_node_desc(im->graph, src, &cur)) == PDNN_SUCCESS && cur.layout == PDNN_ND) {
        *node = src;
        return PDNN_SUCCESS;
    }
    if (st == PDNN_SUCCESS && cur.layout == PDNN_NHWC)
        st = pdnn_graph_transform(im->graph, NULL, im->device, src, PDNN_NCHW, &src);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_reshape_nd(im->graph, NULL, im->device, src, v->rank, v->dims, node);
    return st == PDNN_SUCCESS ? st : pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
}

pdnn_status pdnn__onnx_nd_node(importer *im, const Onnx__NodeProto *n, value *v, int *node)
{
    return nd_node(im, n, v, node);
}

/* a (op) b with N-d operands (a rank past 4, or a value held as ND):
 * both as ND nodes, numpy's broadcasting in pdnn_graph_binary. */
static pdnn_status import_binary_nd(importer *im, const Onnx__NodeProto *n, value *const v[2], pdnn_binary_op op)
{
    int node[2] = {-1, -1};
    pdnn_status st = PDNN_SUCCESS;
    for (int i = 0; i < 2 && st == PDNN_SUCCESS; i++)
        st = nd_node(im, n, v[i], &node[i]);
    if (st == PDNN_SUCCESS)
        st = pdnn__onnx_check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_binary(im->graph, n->output[0], im->device, node[0], node[1], op, &y);
    return finish(im, n, st, y, v[0]->rank > v[1]->rank ? v[0]->rank : v[1]->rank);
}

/* Whether v, an operand of a rank-r op, is held as an ND node (or would
 * be, as a constant: one of lower rank is laid out at r, a layer scale
 * {C, 1, 1} like the image it multiplies). */
static int held_nd(const importer *im, const value *v, int r)
{
    pdnn_tensor_desc d;
    if (v->node >= 0 && pdnn_graph_node_desc(im->graph, v->node, &d) == PDNN_SUCCESS)
        return d.layout == PDNN_ND;
    return r != 2 && r != 4 && r > 1;
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
    if (r > 4 || held_nd(im, v[0], r) || held_nd(im, v[1], r))
        return import_binary_nd(im, n, v, op);
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
    value *bv = cb ? cb : pdnn__onnx_find_value(im, n->input[1]);
    if (matmul && (a->rank != 2 || (bv && bv->rank != 2))) { /* numpy's matmul over N-d values */
        value *v[2] = {a, bv};
        int node[2] = {-1, -1};
        if (!bv)
            return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "input '%s' is computed by no earlier node",
                                         n->input[1]);
        for (int i = 0; i < 2; i++)
            if ((st = nd_node(im, n, v[i], &node[i])) != PDNN_SUCCESS)
                return st;
        if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
            return st;
        int y = -1;
        pdnn_tensor_desc yd;
        st = pdnn_graph_matmul(im->graph, n->output[0], im->device, node[0], node[1], 0, 0, &y);
        if (st == PDNN_SUCCESS)
            st = pdnn_graph_node_desc(im->graph, y, &yd);
        return finish(im, n, st, y, st == PDNN_SUCCESS ? yd.rank : 0);
    }
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
        if (st == PDNN_SUCCESS)
            st = pdnn__onnx_train_param(im, bnode, cb, alpha);
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
            st = pdnn__onnx_train_param(im, cnode, c, beta);
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

/* A reshape of x to rank r dims (NCHW memory order, so a plain copy):
 * NCHW at ranks 2 and 4, ND at the others. */
pdnn_status pdnn__onnx_reshape_to(importer *im, const Onnx__NodeProto *n, value *x, int r, const int64_t *dims)
{
    if (r < 0 || r > PDNN_MAX_RANK)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "results of rank %d are not supported (0 to %d)", r,
                                     PDNN_MAX_RANK);
    int src = x->node;
    pdnn_tensor_desc xd;
    pdnn_status ts = pdnn_graph_node_desc(im->graph, src, &xd);
    if (ts == PDNN_SUCCESS && xd.layout == PDNN_NHWC && xd.dims[2] * xd.dims[3] > 1)
        ts = pdnn_graph_transform(im->graph, NULL, im->device, src, PDNN_NCHW, &src); /* ONNX's element order */
    if (ts != PDNN_SUCCESS)
        return pdnn__onnx_node_error(ts, n, "%s", pdnn_last_error());
    value v = {.name = n->output[0], .rank = r};
    for (int i = 0; i < PDNN_MAX_RANK; i++)
        v.dims[i] = i < r ? dims[i] : 1;
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = r == 2 || r == 4 ? pdnn_graph_reshape(im->graph, n->output[0], im->device, src, v.dims, &y)
                          : pdnn_graph_reshape_nd(im->graph, n->output[0], im->device, src, r, v.dims, &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    v.node = y;
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
    if (sh->count > PDNN_MAX_RANK)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "results of rank %lld are not supported (0 to %d)",
                                     (long long)sh->count, PDNN_MAX_RANK);
    if (attr_int(n, "allowzero", 0) != 0)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "allowzero=1 is not supported");
    int64_t d[PDNN_MAX_RANK], total = 1, known = 1;
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

static pdnn_status import_softmax_nd(importer *im, const Onnx__NodeProto *n, const value *x, int log);

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
    if (!ok) /* any other axis: the N-d op */
        return import_softmax_nd(im, n, x, 0);
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

/* ---- the N-d math ops: Transpose, Softmax on any axis, LogSoftmax,
 * LayerNormalization, the unary math (Erf, Tanh, Sqrt, Exp, Log, Neg,
 * Reciprocal, Abs, Pow), reductions beyond pooling's H and W, and the
 * GELU that exporters write as x * 0.5 * (1 + Erf(x / sqrt 2)) fused into
 * one node. A value of rank r <= 4 is stored as its r dims then 1s, so
 * ONNX's axis a is the node's logical axis a in either layout. ---- */

/* The constant scalar named name, or NAN when it is none. */
static float scalar_of(importer *im, const char *name)
{
    const value *v = pdnn__onnx_find_value(im, name);
    return v && v->node < 0 && v->data && v->count == 1 ? v->data[0] : NAN;
}

/* The node before idx whose output 0 is name, or -1. */
static int producer_of(const importer *im, size_t idx, const char *name)
{
    for (size_t i = idx; i-- > 0;)
        if (im->g->node[i]->n_output >= 1 && strcmp(im->g->node[i]->output[0], name) == 0)
            return (int)i;
    return -1;
}

static int is_op(const importer *im, int i, const char *type)
{
    return i >= 0 && im->g->node[i]->op_type && strcmp(im->g->node[i]->op_type, type) == 0 &&
           im->g->node[i]->n_input == 2;
}

/* m (a two-input node) multiplies name by the scalar near c: the other
 * input's index (0 or 1) is the scalar's. */
static int times_scalar(importer *im, int m, const char *name, float c)
{
    const Onnx__NodeProto *n = im->g->node[m];
    for (int k = 0; k < 2; k++)
        if (strcmp(n->input[1 - k], name) == 0 && fabsf(scalar_of(im, n->input[k]) - c) < 1e-4f)
            return 1;
    return 0;
}

/* The GELU around Erf node idx: its input x / sqrt 2 (Div by 1.41421 or
 * Mul by 0.70711), read by Add(., 1) alone, read by a Mul alone whose
 * other input is x (then a Mul by 0.5 alone reads it) or x * 0.5. Returns
 * the pattern's last node (marked absorbed, with the Add and Muls) and
 * sets *x, or -1. */
static int gelu_fusion(importer *im, size_t idx, const Onnx__NodeProto *erf, const char **x)
{
    if (!im->fuse || erf->n_input != 1)
        return -1;
    const int p = producer_of(im, idx, erf->input[0]);
    if (!is_op(im, p, "Div") && !is_op(im, p, "Mul"))
        return -1;
    const Onnx__NodeProto *pn = im->g->node[p];
    *x = pn->input[0];
    if (!(is_op(im, p, "Div") ? fabsf(scalar_of(im, pn->input[1]) - 1.41421356f) < 1e-4f
                              : times_scalar(im, p, *x, 0.70710678f)))
        return -1;
    const int a = pdnn__onnx_sole_reader(im, idx + 1, erf->output[0]);
    if (!is_op(im, a, "Add"))
        return -1;
    const Onnx__NodeProto *an = im->g->node[a];
    const int ek = strcmp(an->input[0], erf->output[0]) == 0 ? 0 : 1;
    if (fabsf(scalar_of(im, an->input[1 - ek]) - 1.0f) > 1e-6f)
        return -1;
    const int m1 = pdnn__onnx_sole_reader(im, (size_t)a + 1, an->output[0]);
    if (!is_op(im, m1, "Mul"))
        return -1;
    const Onnx__NodeProto *mn = im->g->node[m1];
    const char *other = strcmp(mn->input[0], an->output[0]) == 0 ? mn->input[1] : mn->input[0];
    int last = -1;
    if (strcmp(other, *x) == 0) {
        const int m2 = pdnn__onnx_sole_reader(im, (size_t)m1 + 1, mn->output[0]);
        if (is_op(im, m2, "Mul") && times_scalar(im, m2, mn->output[0], 0.5f))
            last = m2;
    } else {
        const int h = producer_of(im, (size_t)m1, other);
        if (is_op(im, h, "Mul") && times_scalar(im, h, *x, 0.5f))
            last = m1;
    }
    const value *xv = pdnn__onnx_find_value(im, *x);
    if (last < 0 || !xv || xv->node < 0)
        return -1;
    im->absorbed[a] = im->absorbed[m1] = im->absorbed[last] = 1;
    return last;
}

/* One N-d math node on x (the node's output named out, rank r). */
static pdnn_status nd_output(importer *im, const Onnx__NodeProto *n, pdnn_status st, int y, const char *out, int r)
{
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, out, y, r);
}

/* The reductions pooling does not take (pdnn__onnx_import_reduce's
 * others): any axes of mask, keepdims or not; kind "Mean", "Sum", "Max",
 * "Min". */
pdnn_status pdnn__onnx_import_reduce_nd(importer *im, const Onnx__NodeProto *n, const value *x, unsigned mask,
                                        int keep, const char *kind)
{
    const pdnn_reduction op = kind[0] == 'S' ? PDNN_REDUCTION_SUM
                              : kind[1] == 'e' ? PDNN_REDUCTION_MEAN
                              : kind[1] == 'a' ? PDNN_REDUCTION_MAX
                                               : PDNN_REDUCTION_MIN;
    int axes[4], na = 0, kept = 0;
    for (int a = 0; a < x->rank; a++)
        if (mask >> a & 1u)
            axes[na++] = a;
        else
            kept++;
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    int y = -1;
    if (na == 0) /* noop_with_empty_axes: the input itself */
        return nd_output(im, n, pdnn_graph_activation(im->graph, n->output[0], im->device, x->node,
                                                      PDNN_ACTIVATION_CLIP, -INFINITY, INFINITY, &y),
                         y, n->output[0], x->rank);
    /* Without keepdims the kept dims move forward, which NHWC's memory
     * order may not allow: such an input is made NCHW first. */
    int xs = x->node;
    pdnn_tensor_desc d;
    st = pdnn_graph_node_desc(im->graph, xs, &d);
    if (st == PDNN_SUCCESS && !keep && d.layout == PDNN_NHWC)
        st = pdnn_graph_transform(im->graph, NULL, im->device, xs, PDNN_NCHW, &xs);
    if (st == PDNN_SUCCESS)
        st = pdnn_graph_reduce(im->graph, n->output[0], im->device, xs, axes, na, op, keep, &y);
    return nd_output(im, n, st, y, n->output[0], keep ? x->rank : kept);
}

/* Softmax along axis of x (also LogSoftmax): opset 13's one axis; before
 * it the input was coerced to 2-D at axis, the same where every dim after
 * axis is 1. */
static pdnn_status import_softmax_nd(importer *im, const Onnx__NodeProto *n, const value *x, int log)
{
    int64_t axis = attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    if (axis < -x->rank || axis >= x->rank)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is outside [-%d, %d)",
                                     (long long)axis, x->rank, x->rank);
    if (axis < 0)
        axis += x->rank;
    for (int k = (int)axis + 1; im->opset < 13 && k < x->rank; k++)
        if (x->dims[k] != 1)
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n,
                                         "before opset 13 %s runs over the flattened dims from axis %lld; only "
                                         "where those after it are 1 is supported",
                                         n->op_type, (long long)axis);
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_softmax_axis(im->graph, n->output[0], im->device, x->node, (int)axis, log, &y);
    return nd_output(im, n, st, y, n->output[0], x->rank);
}

/* A constant operand as an ND node of its count (scale, bias), or the
 * node itself. */
static pdnn_status operand_node(importer *im, const Onnx__NodeProto *n, const char *name, int *node)
{
    const value *v = pdnn__onnx_find_value(im, name);
    if (!v)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "input '%s' is not defined", name);
    if (v->node >= 0) {
        *node = v->node;
        return PDNN_SUCCESS;
    }
    if (!v->data)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "constant '%s' is not float", v->name);
    pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_ND, {v->count}, 1};
    pdnn_status st = pdnn_graph_constant(im->graph, NULL, im->device, &d, v->data, node);
    if (st == PDNN_SUCCESS) /* a weight when trainable */
        st = pdnn__onnx_train_weight(im, *node, v);
    return st == PDNN_SUCCESS ? st : pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
}

static pdnn_status layer_norm_node(importer *im, const Onnx__NodeProto *n, const value *x, int axis, float eps,
                                   const char *scale_name, const char *bias_name, const char *out);

static pdnn_status import_layer_norm(importer *im, const Onnx__NodeProto *n, const value *x)
{
    if (n->n_input < 2)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "LayerNormalization takes X and Scale (and B)");
    for (size_t k = 1; k < n->n_output; k++)
        if (n->output[k][0])
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the Mean and InvStdDev outputs are not supported");
    int64_t axis = attr_int(n, "axis", -1);
    if (axis < -x->rank || axis >= x->rank)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "axis %lld is outside [-%d, %d)",
                                     (long long)axis, x->rank, x->rank);
    return layer_norm_node(im, n, x, (int)(axis < 0 ? axis + x->rank : axis), attr_float(n, "epsilon", 1e-5f),
                           n->input[1], n->n_input > 2 && n->input[2][0] ? n->input[2] : NULL, n->output[0]);
}

/* The layer norm node named out of x from axis, scale and bias (NULL:
 * none) the values so named. */
static pdnn_status layer_norm_node(importer *im, const Onnx__NodeProto *n, const value *x, int axis, float eps,
                                   const char *scale_name, const char *bias_name, const char *out)
{
    int xs = x->node, scale = -1, bias = -1;
    pdnn_status st = operand_node(im, n, scale_name, &scale);
    if (st == PDNN_SUCCESS && bias_name)
        st = operand_node(im, n, bias_name, &bias);
    pdnn_tensor_desc d;
    if (st == PDNN_SUCCESS && (st = pdnn_graph_node_desc(im->graph, xs, &d)) == PDNN_SUCCESS && d.layout == PDNN_NHWC)
        st = pdnn_graph_transform(im->graph, NULL, im->device, xs, PDNN_NCHW, &xs); /* rows need NCHW's order */
    if (st == PDNN_SUCCESS)
        st = pdnn__onnx_check_name(n, out);
    if (st != PDNN_SUCCESS)
        return st == PDNN_ERR_INVALID_ARGUMENT || st == PDNN_ERR_UNSUPPORTED || st == PDNN_ERR_CORRUPT
                   ? st
                   : pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    int y = -1;
    st = pdnn_graph_layer_norm(im->graph, out, im->device, xs, axis, eps, scale, bias, &y);
    return nd_output(im, n, st, y, out, x->rank);
}

/* The reduced axes of ReduceMean node m (attribute, or constant input
 * from opset 18) of a rank-r input with keepdims 1, as a mask; 0 when
 * they are not that. */
static unsigned mean_axes(importer *im, const Onnx__NodeProto *m, int r)
{
    if (attr_int(m, "keepdims", 1) != 1)
        return 0;
    const Onnx__AttributeProto *a = attr(m, "axes");
    const value *ax = m->n_input > 1 && m->input[1][0] ? pdnn__onnx_find_value(im, m->input[1]) : NULL;
    const int64_t *v = a ? a->ints : ax && ax->i64 ? ax->i64 : NULL;
    const size_t count = a ? a->n_ints : ax && ax->i64 ? (size_t)ax->count : 0;
    unsigned mask = 0;
    for (size_t i = 0; v && i < count; i++) {
        const int64_t k = v[i] < 0 ? v[i] + r : v[i];
        if (k < 0 || k >= r)
            return 0;
        mask |= 1u << k;
    }
    return mask;
}

/* The layer norm that exporters before opset 17 write from ReduceMean
 * node idx of x: mean = ReduceMean(x), d = Sub(x, mean), ReduceMean(Pow(d,
 * 2)) + eps, Sqrt, Div(d, .), Mul by the scale, Add of the bias (either
 * operand order for the last two), over the same trailing axes. Returns
 * the status of the fused node's import with *fused 1, else *fused 0. */
static pdnn_status layer_norm_fusion(importer *im, size_t idx, const Onnx__NodeProto *n, int *fused)
{
    *fused = 0;
    const value *x = pdnn__onnx_find_value(im, n->input[0]);
    if (!im->fuse || !x || x->node < 0 || n->n_output != 1)
        return PDNN_SUCCESS;
    const unsigned mask = mean_axes(im, n, x->rank);
    int axis = x->rank;
    while (axis > 0 && (mask >> (axis - 1) & 1u))
        axis--;
    if (mask == 0 || mask != ((1u << x->rank) - 1u) - ((1u << axis) - 1u))
        return PDNN_SUCCESS; /* not the trailing axes */
    const Onnx__NodeProto *const *g = (const Onnx__NodeProto *const *)im->g->node;
    const int sub = pdnn__onnx_sole_reader(im, idx + 1, n->output[0]);
    if (!is_op(im, sub, "Sub") || strcmp(g[sub]->input[0], x->name) != 0)
        return PDNN_SUCCESS;
    const char *d = g[sub]->output[0];
    int pw = -1, dv = -1; /* d's two readers */
    for (size_t i = (size_t)sub + 1; i < im->g->n_node; i++)
        for (size_t j = 0; j < g[i]->n_input; j++)
            if (strcmp(g[i]->input[j], d) == 0) {
                if (is_op(im, (int)i, "Pow") && pw < 0 && j == 0 && fabsf(scalar_of(im, g[i]->input[1]) - 2.0f) < 1e-6f)
                    pw = (int)i;
                else if (is_op(im, (int)i, "Div") && dv < 0 && j == 0)
                    dv = (int)i;
                else
                    return PDNN_SUCCESS;
            }
    if (pw < 0 || dv < 0)
        return PDNN_SUCCESS;
    const int var = pdnn__onnx_sole_reader(im, (size_t)pw + 1, g[pw]->output[0]);
    if (var < 0 || !g[var]->op_type || strcmp(g[var]->op_type, "ReduceMean") != 0 || mean_axes(im, g[var], x->rank) != mask)
        return PDNN_SUCCESS;
    const int add = pdnn__onnx_sole_reader(im, (size_t)var + 1, g[var]->output[0]);
    if (!is_op(im, add, "Add"))
        return PDNN_SUCCESS;
    const int vk = strcmp(g[add]->input[0], g[var]->output[0]) == 0 ? 0 : 1;
    const float eps = scalar_of(im, g[add]->input[1 - vk]);
    const int sq = pdnn__onnx_sole_reader(im, (size_t)add + 1, g[add]->output[0]);
    if (!(eps >= 0.0f) || sq < 0 || !g[sq]->op_type || strcmp(g[sq]->op_type, "Sqrt") != 0 ||
        pdnn__onnx_sole_reader(im, (size_t)sq + 1, g[sq]->output[0]) != dv || strcmp(g[dv]->input[1], g[sq]->output[0]) != 0)
        return PDNN_SUCCESS;
    const int mul = pdnn__onnx_sole_reader(im, (size_t)dv + 1, g[dv]->output[0]);
    if (!is_op(im, mul, "Mul"))
        return PDNN_SUCCESS;
    const char *scale = strcmp(g[mul]->input[0], g[dv]->output[0]) == 0 ? g[mul]->input[1] : g[mul]->input[0];
    const value *sv = pdnn__onnx_find_value(im, scale);
    if (!sv || sv->node >= 0 || !sv->data)
        return PDNN_SUCCESS;
    int last = mul;
    const char *bias = NULL;
    const int ba = pdnn__onnx_sole_reader(im, (size_t)mul + 1, g[mul]->output[0]);
    if (is_op(im, ba, "Add")) {
        const char *b = strcmp(g[ba]->input[0], g[mul]->output[0]) == 0 ? g[ba]->input[1] : g[ba]->input[0];
        const value *bv = pdnn__onnx_find_value(im, b);
        if (bv && bv->node < 0 && bv->data)
            bias = b, last = ba;
    }
    *fused = 1;
    const int parts[] = {sub, pw, var, add, sq, dv, mul, last};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        im->absorbed[parts[i]] = 1;
    return layer_norm_node(im, n, x, axis, eps, scale, bias, g[last]->output[0]);
}

/* Transpose n (perm (0, 3, 1, 2)) of x, whose dims {N, H, W, C} are in
 * row-major order, as an image {N, C, H, W} in the importer's layout, so
 * the image ops after it take it as it is: NHWC holds those bytes already
 * (a reshape, which shares them); NCHW needs the transpose, then a
 * reshape. */
static pdnn_status to_image(importer *im, const Onnx__NodeProto *n, const value *x, const pdnn_tensor_desc *xd,
                            const int *perm)
{
    pdnn__node proto;
    memset(&proto, 0, sizeof proto);
    proto.op = PDNN__OP_RESHAPE;
    proto.out = *xd;
    proto.out.layout = im->layout;
    proto.out.rank = 4;
    for (int k = 0; k < 4; k++)
        proto.out.dims[k] = x->dims[perm[k]];
    if (im->device)
        snprintf(proto.device, sizeof proto.device, "%s", im->device);
    char tmp[sizeof proto.name];
    snprintf(tmp, sizeof tmp, "%.100s/nd", n->output[0]);
    int src = x->node, y = -1;
    pdnn_status st = PDNN_SUCCESS;
    if (im->layout != PDNN_NHWC)
        st = pdnn_graph_transpose(im->graph, tmp, im->device, src, perm, &src);
    if (st == PDNN_SUCCESS)
        st = pdnn__graph_add(im->graph, n->output[0], &proto, &src, 1, &y);
    return nd_output(im, n, st, y, n->output[0], 4);
}

static pdnn_status import_transpose(importer *im, const Onnx__NodeProto *n, const value *x)
{
    int perm[PDNN_MAX_RANK] = {0, 1, 2, 3, 4, 5, 6, 7};
    const Onnx__AttributeProto *a = attr(n, "perm");
    if (a && a->n_ints != (size_t)x->rank)
        return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "perm has %zu entries for a rank-%d input",
                                     a->n_ints, x->rank);
    for (int k = 0; k < x->rank; k++) {
        const int64_t p = a ? a->ints[k] : x->rank - 1 - k;
        if (p < 0 || p >= x->rank)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "perm[%d] = %lld is not an axis of a rank-%d "
                                         "input", k, (long long)p, x->rank);
        perm[k] = (int)p;
    }
    pdnn_status st = pdnn__onnx_check_name(n, n->output[0]);
    if (st != PDNN_SUCCESS)
        return st;
    int y = -1;
    pdnn_tensor_desc xd;
    if ((st = pdnn_graph_node_desc(im->graph, x->node, &xd)) != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    const int to_last = x->rank == 4 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1 && perm[0] == 0;
    const int to_first = x->rank == 4 && perm[1] == 3 && perm[2] == 1 && perm[3] == 2 && perm[0] == 0;
    const int rowmajor = xd.layout == PDNN_ND || xd.layout == PDNN_NCHW;
    if (to_last && xd.layout == PDNN_NHWC) { /* torch's permute(0, 2, 3, 1) of an NHWC image: its bytes as ND */
        const int64_t d[4] = {x->dims[0], x->dims[2], x->dims[3], x->dims[1]};
        st = pdnn_graph_reshape_nd(im->graph, n->output[0], im->device, x->node, 4, d, &y);
        return nd_output(im, n, st, y, n->output[0], 4);
    }
    if (to_first && rowmajor) /* permute(0, 3, 1, 2): back to an image (ConvNeXt, Swin), held as one */
        return to_image(im, n, x, &xd, perm);
    st = pdnn_graph_transpose(im->graph, n->output[0], im->device, x->node, perm, &y);
    return nd_output(im, n, st, y, n->output[0], x->rank);
}

/* The ops of this block: *mine 1 when op is one (its status returned). */
static pdnn_status import_nd_math(importer *im, size_t idx, const Onnx__NodeProto *n, const char *op, int *mine)
{
    static const struct {
        const char *name;
        pdnn_activation mode;
    } unary[] = {{"Erf", PDNN_ACTIVATION_ERF},   {"Tanh", PDNN_ACTIVATION_TANH}, {"Sqrt", PDNN_ACTIVATION_SQRT},
                 {"Exp", PDNN_ACTIVATION_EXP},   {"Log", PDNN_ACTIVATION_LOG},   {"Neg", PDNN_ACTIVATION_NEG},
                 {"Abs", PDNN_ACTIVATION_ABS},   {"Reciprocal", PDNN_ACTIVATION_RECIPROCAL}};
    int which = -1;
    for (int i = 0; i < (int)(sizeof unary / sizeof *unary); i++)
        if (strcmp(op, unary[i].name) == 0)
            which = i;
    pdnn_status st;
    if (strcmp(op, "ReduceMean") == 0) /* mine where it begins a decomposed layer norm */
        return layer_norm_fusion(im, idx, n, mine);
    *mine = which >= 0 || strcmp(op, "Pow") == 0 || strcmp(op, "Transpose") == 0 || strcmp(op, "LogSoftmax") == 0 ||
            strcmp(op, "LayerNormalization") == 0;
    if (!*mine)
        return PDNN_SUCCESS;
    value *x = pdnn__onnx_act_input(im, n, 0, &st);
    if (!x)
        return st;
    if (strcmp(op, "Transpose") == 0)
        return import_transpose(im, n, x);
    if (strcmp(op, "LogSoftmax") == 0)
        return import_softmax_nd(im, n, x, 1);
    if (strcmp(op, "LayerNormalization") == 0)
        return import_layer_norm(im, n, x);
    pdnn_activation mode = which >= 0 ? unary[which].mode : PDNN_ACTIVATION_POW;
    float alpha = 0.0f;
    const char *out = n->output[0];
    if (mode == PDNN_ACTIVATION_POW) { /* a tensor exponent: the binary op */
        if (n->n_input != 2)
            return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "Pow takes 2 inputs, %zu given", n->n_input);
        alpha = scalar_of(im, n->input[1]);
        if (isnan(alpha))
            return import_binary(im, n, PDNN_BINARY_POW);
    }
    const char *gx = NULL;
    const int last = mode == PDNN_ACTIVATION_ERF ? gelu_fusion(im, idx, n, &gx) : -1;
    if (last >= 0) {
        x = pdnn__onnx_find_value(im, gx);
        mode = PDNN_ACTIVATION_GELU;
        out = im->g->node[last]->output[0];
    }
    if ((st = pdnn__onnx_check_name(n, out)) != PDNN_SUCCESS)
        return st;
    int y = -1;
    st = pdnn_graph_activation(im->graph, out, im->device, x->node, mode, alpha, 0.0f, &y);
    return nd_output(im, n, st, y, out, x->rank);
}

static const char *const known_ops[] = {
    "Add", "AveragePool", "BatchNormalization", "Clip", "Concat", "Constant", "Conv", "Div", "Dropout",
    "Flatten", "Gemm", "GlobalAveragePool", "HardSigmoid", "HardSwish", "Identity", "LeakyRelu", "MatMul",
    "MaxPool", "Mul", "Pad", "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Sigmoid", "Softmax",
    "Sub", "Transpose", "LogSoftmax", "LayerNormalization", "Erf", "Tanh", "Sqrt", "Exp", "Log", "Neg", "Reciprocal",
    "Abs", "Pow", "ReduceMin",
    "ConvTranspose", "Shape", "Gather", "Unsqueeze", "Squeeze", "Slice", "Split", "Cast", "ConstantOfShape", "Range",
    "Expand", "Where", "Resize", "Upsample",
    "Equal", "Mod", "Not", "ScatterND" /* of constants: folded (onnx_move.c) */, "Einsum"};

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
    if (im->train)
        return pdnn__onnx_train_batch_norm(im, n);
    if (n->n_input != 5)
        return pdnn__onnx_node_error(PDNN_ERR_CORRUPT, n, "BatchNormalization takes 5 inputs, %zu given", n->n_input);
    value xi;
    if (!(x = pdnn__onnx_image_input(im, n, 0, &xi, &st)))
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

/* Whether value name is a constant scalar 0 (false). */
static int const_zero(importer *im, const char *name)
{
    const value *v = pdnn__onnx_find_value(im, name);
    return v && v->node < 0 && v->count == 1 && (v->i64 ? v->i64[0] == 0 : v->data && v->data[0] == 0.0f);
}

/* Whether no node after idx reads value name, nor is it a graph output. */
static int unread(const importer *im, size_t idx, const char *name)
{
    for (size_t i = 0; i < im->g->n_output; i++)
        if (im->g->output[i]->name && strcmp(im->g->output[i]->name, name) == 0)
            return 0;
    for (size_t i = idx + 1; i < im->g->n_node; i++)
        for (size_t j = 0; j < im->g->node[i]->n_input; j++)
            if (strcmp(im->g->node[i]->input[j], name) == 0)
                return 0;
    return 1;
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
    /* Constants first: a Transpose of torch's int64 pad arithmetic folds;
     * one of an activation is an N-d math node. */
    int folded = 0;
    pdnn_status fst = pdnn__onnx_train_unfolded(im, n) ? PDNN_SUCCESS : pdnn__onnx_fold(im, n, &folded);
    if (folded || fst != PDNN_SUCCESS)
        return fst;
    int nd_math = 0;
    const pdnn_status nd_st = import_nd_math(im, idx, n, op, &nd_math);
    if (nd_math)
        return nd_st;
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
    if (strcmp(op, "Dropout") == 0 && im->train)
        return pdnn__onnx_train_dropout(im, n);
    const int float_cast = strcmp(op, "Cast") == 0 && (attr_int(n, "to", 0) == ONNX_FLOAT ||
                                                       pdnn__onnx_reduced_type(attr_int(n, "to", 0)) != PDNN_FLOAT32);
    /* A Cast between float types of a computed value: the precision policy
     * decides each op's dtype (a float16 model computes under float16's). */
    if (strcmp(op, "Dropout") == 0 || strcmp(op, "Identity") == 0 || float_cast) {
        /* Inference: the output is the input; a Dropout mask that anything
         * reads is refused (torch's export names one that nothing reads:
         * Swin), and so is a training_mode not known to be false unless
         * the ratio is a constant 0 (Swin's attention: true, ratio 0). */
        if (n->n_output > 1 && n->output[1][0] && !unread(im, idx, n->output[1]))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "the Dropout mask output is not supported");
        if (n->n_input > 2 && n->input[2][0] && !(const_zero(im, n->input[2]) || const_zero(im, n->input[1])))
            return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "training_mode must be a constant false, or the "
                                         "ratio a constant 0 (inference)");
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
    if (strcmp(op, "Einsum") == 0)
        return pdnn__onnx_import_einsum(im, n);
    if (strcmp(op, "Pad") == 0)
        return pdnn__onnx_import_pad(im, idx, n);
    if (strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceMax") == 0 || strcmp(op, "ReduceSum") == 0 ||
        strcmp(op, "ReduceMin") == 0)
        return pdnn__onnx_import_reduce(im, n, op + 6);
    return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "operator '%s' is not supported; supported: %s", op,
                                 SUPPORTED_OPS);
}
