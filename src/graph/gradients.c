/* pdnn_graph_gradients: tf.gradients over the graph's nodes. Nodes are in
 * execution order, so one pass from the loss down to node 0 sees every
 * consumer of a node before the node itself. */
#include "core/half.h"
#include "graph/gradients.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef pdnn__grad_state grad_state;

static pdnn_status add_part(grad_state *s, int i, int grad)
{
    if (s->n_parts[i] == s->cap[i]) {
        int cap = s->cap[i] ? s->cap[i] * 2 : 4;
        int *p = realloc(s->parts[i], sizeof *p * (size_t)cap);
        if (!p)
            return pdnn__host_oom("pdnn_graph_gradients", "a gradient list", sizeof *p * (size_t)cap);
        s->parts[i] = p;
        s->cap[i] = cap;
    }
    s->parts[i][s->n_parts[i]++] = grad;
    return PDNN_SUCCESS;
}

/* A gradient node for forward node f, colocated with it. */
static pdnn_status emit(grad_state *s, int f, const char *type, pdnn__node_op op, const pdnn_tensor_desc *out,
                        const pdnn_node *in, int n_in, pdnn_node *res)
{
    pdnn__node nd;
    const pdnn__node *fw = &s->g->nodes[f];
    memset(&nd, 0, sizeof nd);
    nd.op = op;
    nd.out = *out;
    nd.conv = fw->conv;
    nd.conv.relu = 0;
    nd.conv.relu_cap = 0.0f;
    nd.pool = fw->pool;
    nd.colocate = f + 1;
    char name[160];
    snprintf(name, sizeof name, "%s/%.80s_grad/%s", s->prefix, fw->name, type);
    return pdnn__graph_add(s->g, name, &nd, in, n_in, res);
}

static pdnn_status emit_matmul(grad_state *s, int f, const char *tag, pdnn_node a, pdnn_node b, int ta, int tb,
                               pdnn_node *res)
{
    const pdnn_tensor_desc *da = &s->g->nodes[a].out, *db = &s->g->nodes[b].out;
    pdnn_tensor_desc o = {PDNN_FLOAT32, PDNN_NCHW,
                          {ta ? da->dims[1] : da->dims[0], tb ? db->dims[0] : db->dims[1], 1, 1}, 0};
    char why[512];
    if ((da->layout == PDNN_ND || db->layout == PDNN_ND) && !pdnn__matmul_nd_shape(da, db, ta, tb, &o, why, sizeof why))
        return pdnn__error(PDNN_ERR_INTERNAL, "pdnn_graph_gradients: a matmul gradient: %s", why);
    pdnn_node in[2] = {a, b};
    pdnn_status st = emit(s, f, tag, PDNN__OP_MATMUL, &o, in, 2, res);
    if (st == PDNN_SUCCESS) {
        s->g->nodes[*res].trans_a = ta;
        s->g->nodes[*res].trans_b = tb;
    }
    return st;
}

/* An elementwise node of forward node f: a (op) b, b broadcast where
 * bcast (pdnn__node's bcast: 2 b repeats). */
static pdnn_status emit_binary(grad_state *s, int f, const char *type, pdnn_binary_op op, pdnn_node a, pdnn_node b,
                               int bcast, pdnn_node *res)
{
    const pdnn_tensor_desc out = s->g->nodes[f].out;
    pdnn_node q[2] = {a, b};
    pdnn_status st = emit(s, f, type, PDNN__OP_ELTWISE, &out, q, 2, res);
    if (st == PDNN_SUCCESS) {
        s->g->nodes[*res].binop = op;
        s->g->nodes[*res].bcast = bcast;
    }
    return st;
}

/* Softmax node f (y) along axis a: dx = y (dy - sum_a(dy y)); log-softmax:
 * dx = dy - exp(y) sum_a(dy). The sums are reductions keeping a as 1,
 * broadcast back by the binary nodes (an image layout's per-dim 1s, or
 * an N-d tensor's numpy broadcast). */
static pdnn_status softmax_backprop(grad_state *s, int f, pdnn_node dy, pdnn_node x)
{
    const pdnn__node fw = s->g->nodes[f];
    pdnn_tensor_desc sd = fw.out;
    sd.dims[fw.axis] = 1;
    pdnn_node p = dy, e = -1, sum = -1, t = -1, dx = -1, y = f;
    /* log-softmax: e = exp(y), the softmax, and the sum is dy's; else p = dy y */
    pdnn_status st = fw.nd_flag ? emit(s, f, "Exp", PDNN__OP_ACT, &fw.out, &y, 1, &e)
                                : emit_binary(s, f, "Mul", PDNN_BINARY_MUL, dy, f, 0, &p);
    if (st == PDNN_SUCCESS && fw.nd_flag)
        s->g->nodes[e].act = PDNN_ACTIVATION_EXP;
    if (st == PDNN_SUCCESS && (st = emit(s, f, "Sum", PDNN__OP_NDMATH, &sd, &p, 1, &sum)) == PDNN_SUCCESS) {
        s->g->nodes[sum].nd_kind = PDNN__ND_REDUCE;
        s->g->nodes[sum].axes_mask = 1u << fw.axis;
        s->g->nodes[sum].nd_flag = PDNN_REDUCTION_SUM;
    }
    if (st == PDNN_SUCCESS)
        st = fw.nd_flag ? emit_binary(s, f, "Mul", PDNN_BINARY_MUL, e, sum, 2, &t)
                        : emit_binary(s, f, "Sub", PDNN_BINARY_SUB, dy, sum, 2, &t);
    if (st == PDNN_SUCCESS)
        st = fw.nd_flag ? emit_binary(s, f, "Sub", PDNN_BINARY_SUB, dy, t, 0, &dx)
                        : emit_binary(s, f, "Mul", PDNN_BINARY_MUL, f, t, 0, &dx);
    return st == PDNN_SUCCESS ? add_part(s, x, dx) : st;
}

/* Adds the gradients of node f's inputs, given dy (f's summed gradient). */
static pdnn_status backprop(grad_state *s, int f, int dy, const char *relevant, int loss)
{
    pdnn__node fw = s->g->nodes[f]; /* a copy: emitting may move the table */
    const int *in = fw.inputs;
    pdnn_node r = -1;
    pdnn_status st = PDNN_SUCCESS;
    int handled = 0;
    if ((st = pdnn__grad_nd(s, f, dy, relevant, &handled)) != PDNN_SUCCESS || handled)
        return st;
#define NEED(k) ((k) < fw.n_inputs && in[k] >= 0 && relevant[in[k]])
    switch (fw.op) {
    case PDNN__OP_CONV2D: {
        if (fw.conv.relu && fw.conv.relu_cap > 0.0f) { /* ReLU6: dy where 0 < y < cap */
            pdnn_node q[2] = {f, dy};
            st = emit(s, f, "ClipGrad", PDNN__OP_G_CLIP_BWD, &fw.out, q, 2, &r);
            if (st == PDNN_SUCCESS) {
                s->g->nodes[r].alpha = 0.0f;
                s->g->nodes[r].beta = fw.conv.relu_cap;
            }
            dy = r;
        } else if (fw.conv.relu) { /* the fused relu first: its gradient masks dy by the output */
            pdnn_node q[2] = {f, dy};
            st = emit(s, f, "ReluGrad", PDNN__OP_G_RELU_BWD, &fw.out, q, 2, &r);
            dy = r;
        }
        if (st == PDNN_SUCCESS && NEED(0)) {
            pdnn_node q[2] = {dy, in[1]};
            st = emit(s, f, "Conv2DBackpropInput", PDNN__OP_G_CONV_BWD_DATA, &s->g->nodes[in[0]].out, q, 2, &r);
            if (st == PDNN_SUCCESS)
                st = add_part(s, in[0], r);
        }
        if (st == PDNN_SUCCESS && NEED(1)) {
            pdnn_node q[2] = {in[0], dy};
            st = emit(s, f, "Conv2DBackpropFilter", PDNN__OP_G_CONV_BWD_FILTER, &s->g->nodes[in[1]].out, q, 2, &r);
            if (st == PDNN_SUCCESS)
                st = add_part(s, in[1], r);
        }
        /* The bias is input 2 when there is one; a residual z is last, and
         * its gradient is dy itself (past the relu's mask). */
        const int zi = fw.residual ? fw.n_inputs - 1 : -1, bi = fw.n_inputs - fw.residual > 2 ? 2 : -1;
        if (st == PDNN_SUCCESS && bi >= 0 && NEED(bi)) {
            st = emit(s, f, "BiasAddGrad", PDNN__OP_G_CONV_BWD_BIAS, &s->g->nodes[in[bi]].out, &dy, 1, &r);
            if (st == PDNN_SUCCESS)
                st = add_part(s, in[bi], r);
        }
        if (st == PDNN_SUCCESS && zi >= 0 && NEED(zi))
            st = add_part(s, in[zi], dy);
        return st;
    }
    case PDNN__OP_POOL2D: {
        if (!NEED(0))
            return PDNN_SUCCESS;
        pdnn_node q[2] = {in[0], dy};
        st = emit(s, f, fw.pool.mode == PDNN_POOL_MAX ? "MaxPoolGrad" : "AvgPoolGrad", PDNN__OP_G_POOL_BWD,
                  &s->g->nodes[in[0]].out, q, 2, &r);
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    }
    case PDNN__OP_MATMUL: {
        /* C = op(A) op(B): TensorFlow's _MatMulGrad for the four cases. */
        int ta = fw.trans_a, tb = fw.trans_b;
        pdnn_node a = in[0], b = in[1];
        const pdnn_tensor_desc *da = &s->g->nodes[a].out, *db = &s->g->nodes[b].out;
        if ((da->layout == PDNN_ND || db->layout == PDNN_ND) &&
            (da->layout != db->layout || da->rank != db->rank || da->rank < 2 ||
             memcmp(da->dims, db->dims, (size_t)(da->rank - 2) * sizeof da->dims[0]) != 0))
            return pdnn__error(PDNN_ERR_UNSUPPORTED,
                               "pdnn_graph_gradients: node '%s' (MatMul) multiplies %s operands of ranks %d and %d "
                               "whose batch dims differ (or a rank-1 operand); the gradient of a broadcast matmul "
                               "(a sum over the repeated batch) is not defined yet; both ND of one rank >= 2 and "
                               "equal batch dims are",
                               fw.name, da->layout == db->layout ? "ND" : "mixed ND and image",
                               pdnn_tensor_desc_rank(da), pdnn_tensor_desc_rank(db));
        if (NEED(0)) {
            if (!ta)
                st = tb ? emit_matmul(s, f, "MatMul", dy, b, 0, 0, &r) : emit_matmul(s, f, "MatMul", dy, b, 0, 1, &r);
            else
                st = tb ? emit_matmul(s, f, "MatMul", b, dy, 1, 1, &r) : emit_matmul(s, f, "MatMul", b, dy, 0, 1, &r);
            if (st == PDNN_SUCCESS)
                st = add_part(s, a, r);
        }
        if (st == PDNN_SUCCESS && NEED(1)) {
            if (!ta)
                st = tb ? emit_matmul(s, f, "MatMul_1", dy, a, 1, 0, &r)
                        : emit_matmul(s, f, "MatMul_1", a, dy, 1, 0, &r);
            else
                st = tb ? emit_matmul(s, f, "MatMul_1", dy, a, 1, 1, &r)
                        : emit_matmul(s, f, "MatMul_1", a, dy, 0, 0, &r);
            if (st == PDNN_SUCCESS)
                st = add_part(s, b, r);
        }
        return st;
    }
    case PDNN__OP_ADD:
    case PDNN__OP_ADD_N:
        for (int k = 0; k < fw.n_inputs && st == PDNN_SUCCESS; k++)
            if (NEED(k))
                st = add_part(s, in[k], dy);
        return st;
    case PDNN__OP_BIAS_ADD:
        if (NEED(0))
            st = add_part(s, in[0], dy);
        if (st == PDNN_SUCCESS && NEED(1)) {
            st = emit(s, f, "BiasAddGrad", PDNN__OP_G_CONV_BWD_BIAS, &s->g->nodes[in[1]].out, &dy, 1, &r);
            if (st == PDNN_SUCCESS)
                st = add_part(s, in[1], r);
        }
        return st;
    case PDNN__OP_RELU: {
        if (!NEED(0))
            return PDNN_SUCCESS;
        pdnn_node q[2] = {f, dy};
        st = emit(s, f, "ReluGrad", PDNN__OP_G_RELU_BWD, &fw.out, q, 2, &r);
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    }
    case PDNN__OP_MUL: { /* d(alpha x) = alpha dy */
        if (!NEED(0))
            return PDNN_SUCCESS;
        st = emit(s, f, "Mul", PDNN__OP_MUL, &fw.out, &dy, 1, &r);
        if (st == PDNN_SUCCESS)
            s->g->nodes[r].alpha = fw.alpha;
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    }
    case PDNN__OP_ELTWISE: { /* d(a + b) = dy, dy; d(a - b) = dy, -dy; d(a b) = dy b, dy a */
        for (int k = 0; k < 2; k++)
            if (NEED(k) && (fw.bcast >> k & 1))
                return pdnn__error(PDNN_ERR_UNSUPPORTED,
                                   "pdnn_graph_gradients: node '%s' (%s) broadcasts its input %c; the gradient "
                                   "with respect to a broadcast input (a sum over its repeated dims) is not "
                                   "defined yet", fw.name, pdnn__op_type(&fw), "ab"[k]);
        if ((fw.binop == PDNN_BINARY_DIV || fw.binop == PDNN_BINARY_POW) && (NEED(0) || NEED(1)))
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_gradients: node '%s' (%s): the gradient of a "
                               "%s is not defined yet", fw.name, pdnn__op_type(&fw),
                               fw.binop == PDNN_BINARY_DIV ? "division" : "power");
        for (int k = 0; k < 2 && st == PDNN_SUCCESS; k++) {
            if (!NEED(k))
                continue;
            if (fw.binop == PDNN_BINARY_ADD || (fw.binop == PDNN_BINARY_SUB && k == 0)) {
                st = add_part(s, in[k], dy);
                continue;
            }
            if (fw.binop == PDNN_BINARY_SUB) {
                st = emit(s, f, "Neg", PDNN__OP_MUL, &fw.out, &dy, 1, &r);
                if (st == PDNN_SUCCESS) {
                    s->g->nodes[r].alpha = -1.0f;
                    st = add_part(s, in[k], r);
                }
                continue;
            }
            pdnn_node q[2] = {dy, in[1 - k]};
            st = emit(s, f, "Mul", PDNN__OP_ELTWISE, &fw.out, q, 2, &r);
            if (st == PDNN_SUCCESS) {
                s->g->nodes[r].binop = PDNN_BINARY_MUL;
                s->g->nodes[r].bcast = fw.bcast >> (1 - k) & 1 ? 2 : 0;
                st = add_part(s, in[k], r);
            }
        }
        return st;
    }
    case PDNN__OP_TRANSPOSE: /* back into x's layout */
        if (!NEED(0))
            return PDNN_SUCCESS;
        st = emit(s, f, "Transpose", PDNN__OP_TRANSPOSE, &s->g->nodes[in[0]].out, &dy, 1, &r);
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    case PDNN__OP_NDMATH: /* a permutation's gradient: the inverse permutation */
        if (fw.nd_kind == PDNN__ND_SOFTMAX)
            return NEED(0) ? softmax_backprop(s, f, dy, in[0]) : PDNN_SUCCESS;
        if (fw.nd_kind != PDNN__ND_TRANSPOSE)
            break;
        if (!NEED(0))
            return PDNN_SUCCESS;
        st = emit(s, f, "TransposeNd", PDNN__OP_NDMATH, &s->g->nodes[in[0]].out, &dy, 1, &r);
        if (st == PDNN_SUCCESS) {
            s->g->nodes[r].nd_kind = PDNN__ND_TRANSPOSE;
            for (int k = 0; k < pdnn_tensor_desc_rank(&fw.out); k++)
                s->g->nodes[r].perm[fw.perm[k]] = k;
        }
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    case PDNN__OP_CAST_NODE: /* back into x's dtype */
        if (!NEED(0))
            return PDNN_SUCCESS;
        st = emit(s, f, "Cast", PDNN__OP_CAST_NODE, &s->g->nodes[in[0]].out, &dy, 1, &r);
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    case PDNN__OP_RESHAPE:
        if (!NEED(0))
            return PDNN_SUCCESS;
        st = emit(s, f, "Reshape", PDNN__OP_RESHAPE, &s->g->nodes[in[0]].out, &dy, 1, &r);
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    case PDNN__OP_XENT: {
        if (f != loss)
            return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_gradients: node '%s' (%s) is not the loss; its "
                                                     "gradient is only available as the loss itself",
                               fw.name, pdnn__op_type(&fw));
        if (!NEED(0))
            return PDNN_SUCCESS;
        pdnn_node q[2] = {in[0], in[1]};
        st = emit(s, f, "SparseSoftmaxCrossEntropyWithLogitsGrad", PDNN__OP_XENT_GRAD, &s->g->nodes[in[0]].out, q,
                  2, &r);
        if (st == PDNN_SUCCESS) /* the loss's gradient times the loss scale, where the graph has one */
            st = pdnn__graph_scale_seed(s->g, s->prefix, r, &r);
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    }
    case PDNN__OP_ACT: { /* Clip: dy where alpha < y < beta; other activations have none yet */
        if (!NEED(0))
            return PDNN_SUCCESS;
        if (fw.act != PDNN_ACTIVATION_CLIP)
            break;
        pdnn_node q[2] = {f, dy};
        st = emit(s, f, "ClipGrad", PDNN__OP_G_CLIP_BWD, &fw.out, q, 2, &r);
        if (st == PDNN_SUCCESS) {
            s->g->nodes[r].alpha = fw.alpha;
            s->g->nodes[r].beta = fw.beta;
        }
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    }
    case PDNN__OP_BN_TRAIN: { /* dx, dgamma from the batch statistics; dbeta = sum dy; none to the running stats */
        /* The batch's statistics once for dx and dgamma: a G_BN_BWD node of
         * axis 2 ({2C}: mean, then 1/sqrt(var + eps)). */
        pdnn_node stats = -1;
        if (NEED(0) || NEED(1)) {
            pdnn_tensor_desc sd = s->g->nodes[in[1]].out;
            sd.dims[0] *= 2;
            pdnn_node q[2] = {in[0], in[1]};
            st = emit(s, f, "BatchNormStats", PDNN__OP_G_BN_BWD, &sd, q, 2, &stats);
            if (st == PDNN_SUCCESS) {
                s->g->nodes[stats].alpha = fw.alpha;
                s->g->nodes[stats].axis = 2;
            }
        }
        for (int k = 0; k < 3 && st == PDNN_SUCCESS; k++) {
            if (!NEED(k))
                continue;
            pdnn_node q[4] = {in[0], dy, in[1], stats};
            const pdnn_tensor_desc pd = s->g->nodes[in[k]].out; /* x's, or the float32 parameter's */
            if (k == 2)
                st = emit(s, f, "BiasAddGrad", PDNN__OP_G_CONV_BWD_BIAS, &pd, &dy, 1, &r);
            else
                st = emit(s, f, "FusedBatchNormGradV3", PDNN__OP_G_BN_BWD, &pd, q, 4, &r);
            if (st == PDNN_SUCCESS) {
                s->g->nodes[r].alpha = fw.alpha;
                s->g->nodes[r].axis = k;
                if (k == 1) /* dgamma in gamma's dtype (float32 under a policy), summed in float32 */
                    s->g->nodes[r].out.dtype = pd.dtype;
                /* dbeta, a sum of a reduced dy, back to beta's dtype */
                if (k == 2 && s->g->nodes[r].out.dtype != pd.dtype)
                    st = emit(s, f, "Cast", PDNN__OP_CAST_NODE, &pd, &r, 1, &r);
            }
            if (st == PDNN_SUCCESS)
                st = add_part(s, in[k], r);
        }
        return st;
    }
    case PDNN__OP_DROPOUT: { /* the same mask on dy */
        if (!NEED(0))
            return PDNN_SUCCESS;
        pdnn_node q[3] = {dy, in[1], in[2]};
        st = emit(s, f, "Dropout", PDNN__OP_DROPOUT, &fw.out, q, 3, &r);
        if (st == PDNN_SUCCESS) {
            s->g->nodes[r].alpha = fw.alpha;
            s->g->nodes[r].seed = fw.seed;
        }
        return st == PDNN_SUCCESS ? add_part(s, in[0], r) : st;
    }
    case PDNN__OP_PLACEHOLDER:
    case PDNN__OP_CONST:
    case PDNN__OP_VARIABLE: return PDNN_SUCCESS;
    default: break;
    }
#undef NEED
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_gradients: no gradient is defined for node '%s' (%s)",
                       fw.name, pdnn__op_type(&fw));
}

pdnn_status pdnn_graph_gradients(pdnn_graph *g, pdnn_node loss, const pdnn_node *xs, int n, pdnn_node *grads)
{
    if (!g || !xs || !grads || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_gradients: %s",
                           !g ? "graph is NULL" : n < 1 ? "n must be at least 1" : "xs or grads is NULL");
    if (loss < 0 || loss >= g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_gradients: loss is node %d, but the graph has "
                                                      "nodes 0..%d", loss, g->n - 1);
    if (!pdnn__dtype_is_float(g->nodes[loss].out.dtype))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_gradients: loss '%s' is %s, not a float",
                           g->nodes[loss].name, pdnn__dtype_name(g->nodes[loss].out.dtype));
    for (int k = 0; k < n; k++) {
        grads[k] = -1;
        if (xs[k] < 0 || xs[k] >= g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_gradients: xs[%d] is node %d, but the graph "
                                                          "has nodes 0..%d", k, xs[k], g->n - 1);
        if (!pdnn__dtype_is_float(g->nodes[xs[k]].out.dtype))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_gradients: xs[%d] '%s' is %s, not a float", k,
                               g->nodes[xs[k]].name, pdnn__dtype_name(g->nodes[xs[k]].out.dtype));
    }
    int n0 = g->n;
    grad_state s = {g, calloc((size_t)n0, sizeof(int *)), calloc((size_t)n0, sizeof(int)),
                    calloc((size_t)n0, sizeof(int)), "gradients"};
    char *relevant = calloc((size_t)n0, 1), *from_x = calloc((size_t)n0, 1), *to_loss = calloc((size_t)n0, 1);
    pdnn_status st = PDNN_SUCCESS;
    if (!s.parts || !s.n_parts || !s.cap || !relevant || !from_x || !to_loss) {
        free(s.parts);
        free(s.n_parts);
        free(s.cap);
        free(relevant);
        free(from_x);
        free(to_loss);
        return pdnn__host_oom("pdnn_graph_gradients", "its tables",
                              (size_t)n0 * (2 * sizeof(int) + sizeof(int *) + 3));
    }
    /* TensorFlow's name scope: "gradients", then "gradients_1", ... */
    for (int k = 1; st == PDNN_SUCCESS; k++) {
        size_t len = strlen(s.prefix);
        int taken = 0;
        for (int i = 0; i < n0 && !taken; i++)
            taken = strncmp(g->nodes[i].name, s.prefix, len) == 0 && g->nodes[i].name[len] == '/';
        if (!taken)
            break;
        snprintf(s.prefix, sizeof s.prefix, "gradients_%d", k);
    }
    /* The nodes between the xs and the loss are the ones to differentiate. */
    for (int k = 0; st == PDNN_SUCCESS && k < n; k++)
        from_x[xs[k]] = 1;
    for (int i = 0; st == PDNN_SUCCESS && i < n0; i++)
        for (int q = 0; q < g->nodes[i].n_inputs && !from_x[i]; q++)
            if (g->nodes[i].inputs[q] >= 0 && from_x[g->nodes[i].inputs[q]])
                from_x[i] = 1;
    if (st == PDNN_SUCCESS)
        to_loss[loss] = 1;
    for (int i = loss; st == PDNN_SUCCESS && i >= 0; i--)
        if (to_loss[i])
            for (int q = 0; q < g->nodes[i].n_inputs; q++)
                if (g->nodes[i].inputs[q] >= 0 && pdnn__dtype_is_float(g->nodes[i].out.dtype))
                    to_loss[g->nodes[i].inputs[q]] = 1;
    for (int i = 0; st == PDNN_SUCCESS && i < n0; i++)
        relevant[i] = from_x[i] && to_loss[i] && pdnn__dtype_is_float(g->nodes[i].out.dtype);
    /* The seed: ones shaped like the loss (none for a cross-entropy loss,
     * whose gradient node computes d(mean loss)/d logits itself). */
    if (st == PDNN_SUCCESS && relevant[loss]) {
        int seed = -1;
        if (g->nodes[loss].op != PDNN__OP_XENT) {
            pdnn__node nd;
            memset(&nd, 0, sizeof nd);
            nd.op = PDNN__OP_CONST;
            nd.out = g->nodes[loss].out;
            nd.colocate = loss + 1;
            int64_t count = pdnn_tensor_desc_elements(&nd.out);
            nd.data = malloc(sizeof *nd.data * (size_t)count);
            if (!nd.data) {
                st = pdnn__host_oom("pdnn_graph_gradients", "the seed of ones", sizeof *nd.data * (size_t)count);
            } else {
                for (int64_t e = 0; e < count; e++)
                    nd.data[e] = 1.0f;
                char name[96];
                snprintf(name, sizeof name, "%s/Fill", s.prefix);
                st = pdnn__graph_add(g, name, &nd, NULL, 0, &seed);
                if (st == PDNN_SUCCESS) /* times the loss scale, where the graph has one */
                    st = pdnn__graph_scale_seed(g, s.prefix, seed, &seed);
            }
            free(nd.data);
        }
        if (st == PDNN_SUCCESS)
            st = add_part(&s, loss, seed);
    }
    for (int i = loss; st == PDNN_SUCCESS && i >= 0; i--) {
        if (!relevant[i] || s.n_parts[i] == 0)
            continue;
        int dy = s.parts[i][0];
        if (s.n_parts[i] > 1) {
            pdnn__node nd;
            memset(&nd, 0, sizeof nd);
            nd.op = PDNN__OP_ADD_N;
            nd.out = g->nodes[i].out;
            nd.colocate = i + 1;
            char name[160];
            snprintf(name, sizeof name, "%s/%.80s_grad/AddN", s.prefix, g->nodes[i].name);
            for (int k = 0; k < s.n_parts[i] && st == PDNN_SUCCESS; k++) {
                const pdnn_tensor_desc *a = &g->nodes[s.parts[i][k]].out;
                if (a->layout != nd.out.layout || memcmp(a->dims, nd.out.dims, sizeof a->dims) != 0)
                    st = pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_gradients: the gradients reaching node '%s' "
                                                           "differ in layout (an NHWC matrix into MatMul?)",
                                     g->nodes[i].name);
            }
            if (st == PDNN_SUCCESS)
                st = pdnn__graph_add(g, name, &nd, s.parts[i], s.n_parts[i], &dy);
            if (st != PDNN_SUCCESS)
                break;
        }
        s.parts[i][0] = dy;
        s.n_parts[i] = 1;
        if (dy >= 0 || g->nodes[i].op == PDNN__OP_XENT)
            st = backprop(&s, i, dy, relevant, loss);
    }
    for (int k = 0; st == PDNN_SUCCESS && k < n; k++)
        if (relevant[xs[k]] && s.n_parts[xs[k]] > 0)
            grads[k] = s.parts[xs[k]][0];
    for (int i = 0; s.parts && i < n0; i++)
        free(s.parts[i]);
    free(s.parts);
    free(s.n_parts);
    free(s.cap);
    free(relevant);
    free(from_x);
    free(to_loss);
    if (st != PDNN_SUCCESS) {
        pdnn__graph_truncate(g, n0); /* leave the graph as it was */
        for (int k = 0; k < n; k++)
            grads[k] = -1;
    }
    return st;
}

pdnn_status pdnn__grad_part(pdnn__grad_state *s, int i, int grad) { return add_part(s, i, grad); }

pdnn_status pdnn__grad_emit(pdnn__grad_state *s, int f, const char *type, pdnn__node_op op,
                            const pdnn_tensor_desc *out, const pdnn_node *in, int n_in, pdnn_node *res)
{
    return emit(s, f, type, op, out, in, n_in, res);
}

/* A zero-initialised variable colocated with var (an optimizer slot). */
static pdnn_status slot(pdnn_graph *g, int var, const char *suffix, pdnn_node *out)
{
    char name[160];
    snprintf(name, sizeof name, "%.120s/%s", g->nodes[var].name, suffix);
    pdnn__node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = PDNN__OP_VARIABLE;
    nd.out = g->nodes[var].out;
    snprintf(nd.device, sizeof nd.device, "%s", g->nodes[var].device);
    nd.colocate = var + 1;
    int64_t count = pdnn_tensor_desc_elements(&nd.out);
    nd.data = calloc((size_t)count, sizeof *nd.data);
    if (!nd.data)
        return pdnn__host_oom("pdnn_graph_apply_gradients", name, (uint64_t)count * sizeof *nd.data);
    pdnn_status st = pdnn__graph_add(g, name, &nd, NULL, 0, out);
    free(nd.data);
    return st;
}

pdnn_status pdnn_graph_apply_gradients(pdnn_graph *g, const char *name, const pdnn_optimizer_params *p,
                                       const pdnn_node *vars, const pdnn_node *grads, int n, pdnn_node *train_op)
{
    if (!g || !p || !vars || !grads || !train_op || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: %s",
                           n < 1 ? "n must be at least 1" : "an argument is NULL");
    if (p->kind != PDNN_OPTIMIZER_SGD && p->kind != PDNN_OPTIMIZER_ADAM && p->kind != PDNN_OPTIMIZER_ADAMW)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: unknown optimizer kind %d",
                           (int)p->kind);
    const char *base = name && *name                   ? name
                       : p->kind == PDNN_OPTIMIZER_ADAM  ? "Adam"
                       : p->kind == PDNN_OPTIMIZER_ADAMW ? "AdamW"
                                                         : "Momentum";
    for (int k = 0; k < n; k++) {
        if (vars[k] < 0 || vars[k] >= g->n || g->nodes[vars[k]].op != PDNN__OP_VARIABLE)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: vars[%d] (node %d%s%s) is not "
                                                          "a variable", k, vars[k],
                               vars[k] >= 0 && vars[k] < g->n ? ", " : "",
                               vars[k] >= 0 && vars[k] < g->n ? g->nodes[vars[k]].name : "");
        if (grads[k] < 0 || grads[k] >= g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: grads[%d] is node %d, which "
                                                          "does not exist (no gradient: leave the variable out)",
                               k, grads[k]);
        const pdnn_tensor_desc *a = &g->nodes[vars[k]].out, *b = &g->nodes[grads[k]].out;
        if (a->layout != b->layout || a->dtype != b->dtype || memcmp(a->dims, b->dims, sizeof a->dims) != 0)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: gradient '%s' does not match "
                                                          "variable '%s'",
                               g->nodes[grads[k]].name, g->nodes[vars[k]].name);
        for (int q = 0; q < k; q++)
            if (vars[q] == vars[k])
                return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: variable '%s' is listed "
                                                              "twice", g->nodes[vars[k]].name);
    }
    int n0 = g->n;
    pdnn_status st = PDNN_SUCCESS;
    pdnn_node step = -1;
    if (pdnn_graph_find(g, "global_step", &step) != PDNN_SUCCESS) {
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {1, 1, 1, 1}, 0};
        st = pdnn_graph_variable(g, "global_step", "/cpu:0", &d, PDNN_INIT_ZEROS, 0, NULL, &step);
    } else if (g->nodes[step].op != PDNN__OP_VARIABLE || pdnn_tensor_desc_elements(&g->nodes[step].out) != 1) {
        st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: the node named global_step is not a "
                                                    "one-element variable");
    }
    /* A one-element variable named learning_rate, where the caller made
     * one, is the rate each step reads (a schedule assigns it). */
    pdnn_node lr = -1;
    if (pdnn_graph_find(g, "learning_rate", &lr) != PDNN_SUCCESS)
        lr = -1;
    else if (st == PDNN_SUCCESS &&
        (g->nodes[lr].op != PDNN__OP_VARIABLE || pdnn_tensor_desc_elements(&g->nodes[lr].out) != 1))
        st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_apply_gradients: the node named learning_rate is not "
                                                    "a one-element variable");
    pdnn_node *updates = calloc((size_t)n, sizeof *updates), *unscaled = calloc((size_t)n, sizeof *unscaled);
    pdnn_node gate = -1;
    if (st == PDNN_SUCCESS && (!updates || !unscaled))
        st = pdnn__host_oom("pdnn_graph_apply_gradients", "the update list", sizeof *updates * (size_t)n * 2);
    /* With a loss scale: the gradients over it, and each update skipped
     * on a step whose gradients are not all finite. */
    if (st == PDNN_SUCCESS && unscaled)
        st = pdnn__graph_unscale(g, base, grads, n, unscaled, &gate);
    for (int k = 0; k < n && st == PDNN_SUCCESS && unscaled; k++) {
        pdnn_node in[5] = {vars[k], unscaled[k], -1, -1, -1};
        int n_in = 2;
        if (p->kind != PDNN_OPTIMIZER_SGD) {
            st = slot(g, vars[k], "Adam", &in[2]);
            if (st == PDNN_SUCCESS)
                st = slot(g, vars[k], "Adam_1", &in[3]);
            n_in = 4;
        } else if (p->momentum != 0.0f) {
            st = slot(g, vars[k], "Momentum", &in[2]);
            n_in = 3;
        }
        if (st != PDNN_SUCCESS)
            break;
        pdnn__node nd;
        memset(&nd, 0, sizeof nd);
        nd.op = PDNN__OP_APPLY;
        nd.optim = *p;
        nd.lr_var = lr >= 0 ? lr + 1 : 0;
        nd.step = step;
        nd.out = g->nodes[vars[k]].out;
        snprintf(nd.device, sizeof nd.device, "%s", g->nodes[vars[k]].device);
        nd.colocate = vars[k] + 1;
        if (gate >= 0) { /* the gate last: the slots keep their places */
            nd.gate = gate + 1;
            in[n_in++] = gate;
        }
        char nm[200];
        snprintf(nm, sizeof nm, "%.60s/update_%.120s", base, g->nodes[vars[k]].name);
        st = pdnn__graph_add(g, nm, &nd, in, n_in, &updates[k]);
    }
    if (st == PDNN_SUCCESS) {
        pdnn__node nd;
        memset(&nd, 0, sizeof nd);
        nd.op = PDNN__OP_TRAIN;
        nd.step = step;
        nd.out = g->nodes[step].out;
        nd.colocate = step + 1;
        st = pdnn__graph_add(g, base, &nd, updates, n, train_op);
    }
    free(updates);
    free(unscaled);
    if (st != PDNN_SUCCESS) {
        pdnn__graph_truncate(g, n0);
    }
    return st;
}
