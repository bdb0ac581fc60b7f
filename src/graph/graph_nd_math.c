/* The N-d math ops as graph nodes (one node op, PDNN__OP_NDMATH, whose
 * nd_kind says which): the builders with their shape inference, the op
 * type names, placement and the session's run of each. */
#include "core/half.h"
#include "graph/graph.h"
#include "ops/dispatch.h"

#include <stdio.h>
#include <string.h>

static pdnn_status node_error(const pdnn__node *nd, const char *fn, const char *msg, const pdnn_tensor_desc *x)
{
    char dx[96];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: node '%s': %s (x is %s)", fn, nd->name[0] ? nd->name : "?",
                       msg, pdnn__desc_string(x, dx, sizeof dx));
}

/* Begins an NDMATH node of kind on x: x's desc in *x (float32 checked). */
static pdnn_status begin_nd(pdnn_graph *g, const char *fn, const char *name, const char *device, pdnn_node x,
                            pdnn__nd_kind kind, pdnn_node *out, pdnn__node *nd, pdnn_tensor_desc *xd)
{
    pdnn_status st = pdnn__graph_begin(g, fn, name, device, PDNN__OP_NDMATH, &x, 1, out, nd);
    if (st != PDNN_SUCCESS)
        return st;
    nd->nd_kind = (int)kind;
    pdnn_graph_node_desc(g, x, xd);
    nd->out = *xd;
    if (!pdnn__dtype_is_float(xd->dtype))
        return node_error(nd, fn, "x must be a float", xd);
    return PDNN_SUCCESS;
}

static int axis_in(int axis, int rank) { return axis >= -rank && axis < rank ? (axis < 0 ? axis + rank : axis) : -1; }

pdnn_status pdnn_graph_transpose(pdnn_graph *g, const char *name, const char *device, pdnn_node x, const int *perm,
                                 pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_transpose";
    pdnn__node nd;
    pdnn_tensor_desc xd;
    pdnn_status st = begin_nd(g, fn, name, device, x, PDNN__ND_TRANSPOSE, out, &nd, &xd);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&xd);
    int seen[PDNN_MAX_RANK] = {0};
    for (int k = 0; k < r; k++) {
        nd.perm[k] = perm ? perm[k] : r - 1 - k;
        if (nd.perm[k] < 0 || nd.perm[k] >= r || seen[nd.perm[k]]++)
            return node_error(&nd, fn, "perm must hold each axis of x once", &xd);
    }
    /* y: x's dims permuted, in x's layout (an image layout keeps its
     * memory order for the permuted dims; X, a vector, stays one) */
    for (int k = 0; k < r; k++)
        nd.out.dims[k] = xd.dims[nd.perm[k]];
    return pdnn__graph_finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_softmax_axis(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int axis,
                                    int log, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_softmax_axis";
    pdnn__node nd;
    pdnn_tensor_desc xd;
    pdnn_status st = begin_nd(g, fn, name, device, x, PDNN__ND_SOFTMAX, out, &nd, &xd);
    if (st != PDNN_SUCCESS)
        return st;
    if ((nd.axis = axis_in(axis, pdnn_tensor_desc_rank(&xd))) < 0)
        return node_error(&nd, fn, "axis is outside [-rank, rank)", &xd);
    nd.nd_flag = log != 0;
    return pdnn__graph_finish(g, &nd, &x, 1, out);
}

pdnn_status pdnn_graph_layer_norm(pdnn_graph *g, const char *name, const char *device, pdnn_node x, int axis,
                                  float epsilon, pdnn_node scale, pdnn_node bias, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_layer_norm";
    pdnn__node nd;
    pdnn_tensor_desc xd;
    pdnn_status st = begin_nd(g, fn, name, device, x, PDNN__ND_LAYER_NORM, out, &nd, &xd);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&xd);
    if ((nd.axis = axis_in(axis, r)) < 0)
        return node_error(&nd, fn, "axis is outside [-rank, rank)", &xd);
    if (xd.layout == PDNN_NHWC || xd.layout == PDNN_OHWI || xd.layout == PDNN_HWIO)
        return node_error(&nd, fn, "x's layout must store its dims in order (ND, NCHW, OIHW or X)", &xd);
    if (!(epsilon >= 0.0f) || epsilon > 1e30f)
        return node_error(&nd, fn, "epsilon must be finite and >= 0", &xd);
    int64_t cols = 1;
    for (int k = nd.axis; k < r; k++)
        cols *= xd.dims[k];
    const pdnn_node in[3] = {x, scale, bias};
    const int n_in = bias >= 0 ? 3 : 2;
    for (int i = 1; i < n_in; i++) {
        pdnn_tensor_desc d;
        if ((st = pdnn_graph_node_desc(g, in[i], &d)) != PDNN_SUCCESS)
            return st;
        if (d.dtype != PDNN_FLOAT32 || pdnn_tensor_desc_elements(&d) != cols)
            return node_error(&nd, fn,
                              i == 1 ? "scale must be float32 with one element per element of a normalized row"
                                     : "bias must be float32 with one element per element of a normalized row",
                              &xd);
    }
    nd.alpha = epsilon;
    return pdnn__graph_finish(g, &nd, in, n_in, out);
}

pdnn_status pdnn_graph_reduce(pdnn_graph *g, const char *name, const char *device, pdnn_node x, const int *axes,
                              int n_axes, pdnn_reduction op, int keepdims, pdnn_node *out)
{
    static const char fn[] = "pdnn_graph_reduce";
    pdnn__node nd;
    pdnn_tensor_desc xd;
    pdnn_status st = begin_nd(g, fn, name, device, x, PDNN__ND_REDUCE, out, &nd, &xd);
    if (st != PDNN_SUCCESS)
        return st;
    const int r = pdnn_tensor_desc_rank(&xd);
    if (op != PDNN_REDUCTION_SUM && op != PDNN_REDUCTION_MEAN && op != PDNN_REDUCTION_MAX && op != PDNN_REDUCTION_MIN)
        return node_error(&nd, fn, "op is not a pdnn_reduction", &xd);
    if (n_axes < 0 || n_axes > r || (n_axes > 0 && !axes))
        return node_error(&nd, fn, "n_axes must be 0 (every axis) to x's rank, with axes given", &xd);
    nd.axes_mask = n_axes == 0 ? (1u << r) - 1u : 0u;
    for (int i = 0; i < n_axes; i++) {
        const int a = axis_in(axes[i], r);
        if (a < 0 || (nd.axes_mask >> a & 1u))
            return node_error(&nd, fn, "each axis must lie in [-rank, rank) and be named once", &xd);
        nd.axes_mask |= 1u << a;
    }
    nd.nd_flag = (int)op;
    /* keepdims: x's desc with the reduced dims 1; else the kept dims in
     * order, in x's layout where it stores them so (ND, NCHW: the rank
     * drops, an image layout pads with 1s), else refused */
    int j = 0;
    for (int k = 0; k < r; k++)
        if (keepdims || !(nd.axes_mask >> k & 1u))
            nd.out.dims[j++] = nd.axes_mask >> k & 1u ? 1 : xd.dims[k];
    if (xd.layout == PDNN_ND)
        nd.out.rank = j;
    for (; j < PDNN_MAX_RANK; j++)
        nd.out.dims[j] = 1;
    if (xd.layout == PDNN_LAYOUT_X && !keepdims) /* a vector reduced to a scalar */
        nd.out = (pdnn_tensor_desc){PDNN_FLOAT32, PDNN_ND, {1, 1, 1, 1, 1, 1, 1, 1}, 0};
    if (!pdnn__reduce_shape_ok(&xd, nd.axes_mask, &nd.out))
        return node_error(&nd, fn, "without keepdims, x's layout must keep the other dims in their order", &xd);
    return pdnn__graph_finish(g, &nd, &x, 1, out);
}

const char *pdnn__nd_math_op_type(const pdnn__node *n)
{
    static const char *const reductions[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"};
    switch ((pdnn__nd_kind)n->nd_kind) {
    case PDNN__ND_TRANSPOSE: return "TransposeNd";
    case PDNN__ND_SOFTMAX: return n->nd_flag ? "LogSoftmax" : "SoftmaxNd";
    case PDNN__ND_LAYER_NORM: return "LayerNormalization";
    case PDNN__ND_REDUCE: return (unsigned)n->nd_flag < 4 ? reductions[n->nd_flag] : "Reduce";
    case PDNN__ND_LAYER_NORM_BWD: return "LayerNormalizationGrad";
    }
    return "NdMath";
}

/* Whether some algorithm of dev's backend plans a call of the node's
 * kind (CUDA refuses every layer norm); a one-element call stands for
 * the shape, except a reduction's, which plans on the shapes. */
int pdnn__nd_math_has_kernel(const pdnn_device *dev, const pdnn__node *n)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    switch ((pdnn__nd_kind)n->nd_kind) {
    case PDNN__ND_TRANSPOSE: call.op = PDNN__OP_ND_TRANSPOSE; break;
    case PDNN__ND_SOFTMAX:
        call.op = PDNN__OP_ND_SOFTMAX;
        call.u.softmax.outer = call.u.softmax.n = call.u.softmax.inner = 1;
        break;
    case PDNN__ND_LAYER_NORM:
        call.op = PDNN__OP_ND_LAYER_NORM;
        call.u.layer_norm.rows = call.u.layer_norm.cols = 1;
        break;
    case PDNN__ND_REDUCE: return dev->backend->algos[PDNN__OP_ND_REDUCE] != NULL;
    case PDNN__ND_LAYER_NORM_BWD:
        call.op = PDNN__OP_ND_LAYER_NORM_BWD;
        call.u.layer_norm_bwd.rows = call.u.layer_norm_bwd.cols = 1;
        break;
    }
    return pdnn__some_algorithm_plans(dev, &call);
}

pdnn_status pdnn__nd_math_run_node(const pdnn__node *n, const pdnn_tensor *const *in, pdnn_tensor *y)
{
    switch ((pdnn__nd_kind)n->nd_kind) {
    case PDNN__ND_TRANSPOSE: return pdnn_transpose(in[0], n->perm, y);
    case PDNN__ND_SOFTMAX: return pdnn_softmax_axis(in[0], n->axis, n->nd_flag, y);
    case PDNN__ND_LAYER_NORM: return pdnn_layer_norm(in[0], n->axis, n->alpha, in[1], n->n_inputs > 2 ? in[2] : NULL, y);
    case PDNN__ND_REDUCE: {
        int axes[PDNN_MAX_RANK], k = 0;
        for (int a = 0; a < PDNN_MAX_RANK; a++)
            if (n->axes_mask >> a & 1u)
                axes[k++] = a;
        /* every axis of a rank-0 x is none: reduce it as "all" */
        return pdnn_reduce(in[0], axes, k, (pdnn_reduction)n->nd_flag, y);
    }
    case PDNN__ND_LAYER_NORM_BWD: return pdnn__layer_norm_backward(in[0], in[1], in[2], n->axis, n->alpha, n->nd_flag, y);
    }
    return pdnn__error(PDNN_ERR_INTERNAL, "node '%s': unknown N-d math kind %d", n->name, n->nd_kind);
}
