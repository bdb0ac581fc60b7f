/* The gradients of the N-d ops (pdnn_graph_gradients, gradients.c):
 * broadcast binary nodes, the activations, the reductions, layer norm,
 * data movement, concat and broadcast batched matmul. Each gradient is
 * built of forward nodes that every backend already runs (binary,
 * activation, reduce, reshape, expand, pad, slice, matmul), so it places
 * wherever its forward op does. A gradient that reaches a broadcast input
 * is summed over the repeated axes back to the input's shape. */
#include "graph/gradients.h"
#include "ops/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define R PDNN_MAX_RANK
#define PI 3.14159265358979323846

/* The node being differentiated, threaded through the emitters. */
typedef struct gctx {
    pdnn__grad_state *s;
    int f;
} gctx;

static const pdnn_tensor_desc *D(const gctx *c, pdnn_node n) { return &c->s->g->nodes[n].out; }

static pdnn_status refuse(const gctx *c, const char *why)
{
    const pdnn__node *fw = &c->s->g->nodes[c->f];
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_gradients: node '%s' (%s): %s", fw->name,
                       pdnn__op_type(fw), why);
}

static int same_desc(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b)
{
    return a->layout == b->layout && pdnn_tensor_desc_rank(a) == pdnn_tensor_desc_rank(b) &&
           memcmp(a->dims, b->dims, sizeof a->dims) == 0;
}

static pdnn_status emit(const gctx *c, const char *type, pdnn__node_op op, const pdnn_tensor_desc *out,
                        const pdnn_node *in, int n_in, pdnn_node *r)
{
    return pdnn__grad_emit(c->s, c->f, type, op, out, in, n_in, r);
}

/* pdnn_graph_binary's shape rule: numpy's where one is ND and the other
 * ND or X, else one layout with per-dim 1s. */
static int bin_desc(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, pdnn_tensor_desc *y, int *bcast)
{
    const int n_d = (a->layout == PDNN_ND || b->layout == PDNN_ND) &&
                    (a->layout == PDNN_ND || a->layout == PDNN_LAYOUT_X) &&
                    (b->layout == PDNN_ND || b->layout == PDNN_LAYOUT_X);
    if (n_d) {
        if (!pdnn__binary_nd_shape(a, b, y))
            return 0;
    } else {
        if (a->layout != b->layout)
            return 0;
        *y = *a;
        for (int k = 0; k < 4; k++) {
            if (a->dims[k] != b->dims[k] && a->dims[k] != 1 && b->dims[k] != 1)
                return 0;
            y->dims[k] = a->dims[k] > b->dims[k] ? a->dims[k] : b->dims[k];
        }
    }
    const int64_t ny = pdnn_tensor_desc_elements(y);
    *bcast = (pdnn_tensor_desc_elements(a) != ny) | (pdnn_tensor_desc_elements(b) != ny) << 1;
    return 1;
}

static pdnn_status bin(const gctx *c, const char *type, pdnn_binary_op op, pdnn_node a, pdnn_node b, pdnn_node *r)
{
    pdnn_tensor_desc y;
    int bcast = 0;
    if (!bin_desc(D(c, a), D(c, b), &y, &bcast))
        return pdnn__error(PDNN_ERR_INTERNAL, "pdnn_graph_gradients: node '%s': a gradient's %s does not broadcast",
                           c->s->g->nodes[c->f].name, type);
    const pdnn_node q[2] = {a, b};
    pdnn_status st = emit(c, type, PDNN__OP_ELTWISE, &y, q, 2, r);
    if (st == PDNN_SUCCESS) {
        c->s->g->nodes[*r].binop = op;
        c->s->g->nodes[*r].bcast = bcast;
    }
    return st;
}

static pdnn_status mul(const gctx *c, pdnn_node a, pdnn_node b, pdnn_node *r)
{
    return bin(c, "Mul", PDNN_BINARY_MUL, a, b, r);
}

static pdnn_status act(const gctx *c, const char *type, pdnn_activation mode, float alpha, float beta, pdnn_node x,
                       pdnn_node *r)
{
    pdnn_status st = emit(c, type, PDNN__OP_ACT, D(c, x), &x, 1, r);
    if (st == PDNN_SUCCESS) {
        c->s->g->nodes[*r].act = mode;
        c->s->g->nodes[*r].alpha = alpha;
        c->s->g->nodes[*r].beta = beta;
    }
    return st;
}

static pdnn_status scale(const gctx *c, pdnn_node x, float alpha, pdnn_node *r)
{
    pdnn_status st = emit(c, "Mul", PDNN__OP_MUL, D(c, x), &x, 1, r);
    if (st == PDNN_SUCCESS)
        c->s->g->nodes[*r].alpha = alpha;
    return st;
}

/* A constant like's layout and rank with every dim 1 and data, or
 * with like's dims where data holds them all (full). */
static pdnn_status konst(const gctx *c, const pdnn_tensor_desc *like, int full, float *data, pdnn_node *r)
{
    pdnn__node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = PDNN__OP_CONST;
    nd.out = *like;
    for (int k = 0; k < R && !full; k++)
        nd.out.dims[k] = 1;
    nd.data = data;
    nd.colocate = c->f + 1;
    char name[160];
    snprintf(name, sizeof name, "%s/%.80s_grad/Const", c->s->prefix, c->s->g->nodes[c->f].name);
    return pdnn__graph_add(c->s->g, name, &nd, NULL, 0, r);
}

/* a x + b */
static pdnn_status affine(const gctx *c, pdnn_node x, float a, float b, pdnn_node *r)
{
    pdnn_node t = x, k = -1;
    pdnn_status st = a != 1.0f ? scale(c, x, a, &t) : PDNN_SUCCESS;
    if (b == 0.0f || st != PDNN_SUCCESS) {
        *r = t;
        return st;
    }
    if ((st = konst(c, D(c, t), 0, &b, &k)) != PDNN_SUCCESS)
        return st;
    return bin(c, "AddV2", PDNN_BINARY_ADD, t, k, r);
}

static pdnn_status reshape(const gctx *c, pdnn_node x, const pdnn_tensor_desc *d, pdnn_node *r)
{
    if (same_desc(D(c, x), d)) {
        *r = x;
        return PDNN_SUCCESS;
    }
    return emit(c, "Reshape", PDNN__OP_RESHAPE, d, &x, 1, r);
}

static pdnn_tensor_desc nd2(int64_t rows, int64_t cols)
{
    return (pdnn_tensor_desc){PDNN_FLOAT32, PDNN_ND, {rows, cols, 1, 1, 1, 1, 1, 1}, 2};
}

/* x reduced over the axes in mask by op, the reduced dims kept as 1. */
static pdnn_status reduce_keep(const gctx *c, pdnn_node x, unsigned mask, pdnn_reduction op, pdnn_node *r)
{
    pdnn_tensor_desc o = *D(c, x);
    for (int k = 0; k < R; k++)
        if (mask >> k & 1u)
            o.dims[k] = 1;
    pdnn_status st = emit(c, op == PDNN_REDUCTION_SUM ? "Sum" : op == PDNN_REDUCTION_MEAN ? "Mean" : "Reduce",
                          PDNN__OP_NDMATH, &o, &x, 1, r);
    if (st == PDNN_SUCCESS) {
        c->s->g->nodes[*r].nd_kind = PDNN__ND_REDUCE;
        c->s->g->nodes[*r].axes_mask = mask;
        c->s->g->nodes[*r].nd_flag = (int)op;
    }
    return st;
}

/* g summed over the axes it repeats relative to t (numpy's broadcast,
 * ranks aligned from the right), then given t's desc. */
static pdnn_status sum_to(const gctx *c, pdnn_node g, const pdnn_tensor_desc *t, pdnn_node *r)
{
    const pdnn_tensor_desc *gd = D(c, g);
    const int rg = pdnn_tensor_desc_rank(gd), rt = pdnn_tensor_desc_rank(t);
    unsigned mask = 0;
    for (int k = 0; k < rg; k++) {
        const int tk = k - (rg - rt);
        if (gd->dims[k] != 1 && (tk < 0 || t->dims[tk] == 1))
            mask |= 1u << k;
    }
    pdnn_node s = g;
    pdnn_status st = mask ? reduce_keep(c, g, mask, PDNN_REDUCTION_SUM, &s) : PDNN_SUCCESS;
    return st == PDNN_SUCCESS ? reshape(c, s, t, r) : st;
}

/* x broadcast to t (x's rank at most t's, dims 1 or t's). */
static pdnn_status expand_to(const gctx *c, pdnn_node x, const pdnn_tensor_desc *t, pdnn_node *r)
{
    if (same_desc(D(c, x), t)) {
        *r = x;
        return PDNN_SUCCESS;
    }
    pdnn_status st = emit(c, "Expand", PDNN__OP_MOVE, t, &x, 1, r);
    if (st == PDNN_SUCCESS)
        c->s->g->nodes[*r].move_kind = PDNN__MOVE_EXPAND;
    return st;
}

static pdnn_status matmul(const gctx *c, pdnn_node a, pdnn_node b, int ta, int tb, pdnn_node *r)
{
    pdnn_tensor_desc o;
    char why[512];
    if (!pdnn__matmul_nd_shape(D(c, a), D(c, b), ta, tb, &o, why, sizeof why))
        return pdnn__error(PDNN_ERR_INTERNAL, "pdnn_graph_gradients: a matmul gradient: %s", why);
    const pdnn_node q[2] = {a, b};
    pdnn_status st = emit(c, "BatchMatMul", PDNN__OP_MATMUL, &o, q, 2, r);
    if (st == PDNN_SUCCESS) {
        c->s->g->nodes[*r].trans_a = ta;
        c->s->g->nodes[*r].trans_b = tb;
    }
    return st;
}

/* The forward's inputs and dy, and which inputs need a gradient. */
typedef struct fwd {
    pdnn__node n; /* a copy: emitting may move the node table */
    int dy;
    const char *relevant;
} fwd;

static int need(const fwd *w, int k)
{
    return k < w->n.n_inputs && w->n.inputs[k] >= 0 && w->relevant[w->n.inputs[k]];
}

/* g, summed to input k's shape, added to its gradient. */
static pdnn_status give(const gctx *c, const fwd *w, int k, pdnn_node g)
{
    pdnn_node r = -1;
    pdnn_status st = sum_to(c, g, D(c, w->n.inputs[k]), &r);
    return st == PDNN_SUCCESS ? pdnn__grad_part(c->s, w->n.inputs[k], r) : st;
}

/* y = a (op) b with broadcasting (TensorFlow's _AddGrad ... _PowGrad,
 * each followed by the sum over the broadcast axes). */
static pdnn_status binary_grad(const gctx *c, const fwd *w)
{
    const pdnn_node a = w->n.inputs[0], b = w->n.inputs[1], dy = w->dy, y = c->f;
    pdnn_node ga = dy, gb = dy, t = -1, u = -1, k = -1;
    pdnn_status st = PDNN_SUCCESS;
    switch (w->n.binop) {
    case PDNN_BINARY_ADD: break;
    case PDNN_BINARY_SUB: st = need(w, 1) ? scale(c, dy, -1.0f, &gb) : st; break;
    case PDNN_BINARY_MUL:
        st = need(w, 0) ? mul(c, dy, b, &ga) : st;
        if (st == PDNN_SUCCESS && need(w, 1))
            st = mul(c, dy, a, &gb);
        break;
    case PDNN_BINARY_DIV: /* da = dy / b; db = -dy y / b */
        st = need(w, 0) ? bin(c, "RealDiv", PDNN_BINARY_DIV, dy, b, &ga) : st;
        if (st == PDNN_SUCCESS && need(w, 1) && (st = bin(c, "RealDiv", PDNN_BINARY_DIV, y, b, &t)) == PDNN_SUCCESS &&
            (st = mul(c, dy, t, &u)) == PDNN_SUCCESS)
            st = scale(c, u, -1.0f, &gb);
        break;
    case PDNN_BINARY_POW: { /* da = dy b a^(b - 1); db = dy y log(a) */
        float one = 1.0f;
        if (need(w, 0) && (st = konst(c, D(c, b), 0, &one, &k)) == PDNN_SUCCESS &&
            (st = bin(c, "Sub", PDNN_BINARY_SUB, b, k, &t)) == PDNN_SUCCESS &&
            (st = bin(c, "Pow", PDNN_BINARY_POW, a, t, &u)) == PDNN_SUCCESS &&
            (st = mul(c, u, b, &t)) == PDNN_SUCCESS)
            st = mul(c, dy, t, &ga);
        if (st == PDNN_SUCCESS && need(w, 1) && (st = act(c, "Log", PDNN_ACTIVATION_LOG, 0, 0, a, &t)) == PDNN_SUCCESS &&
            (st = mul(c, y, t, &u)) == PDNN_SUCCESS)
            st = mul(c, dy, u, &gb);
        break;
    }
    default: return refuse(c, "an unknown binary op");
    }
    if (st == PDNN_SUCCESS && need(w, 0))
        st = give(c, w, 0, ga);
    if (st == PDNN_SUCCESS && need(w, 1))
        st = give(c, w, 1, gb);
    return st;
}

/* The mask of where |x| > 0 as 1 and x == 0 as 0, signed (sign(x)) or
 * not: x scaled by 2^100 and clipped, exact for |x| >= 2^-100. */
static pdnn_status sign_of(const gctx *c, pdnn_node x, float lo, pdnn_node *r)
{
    pdnn_node t = -1;
    pdnn_status st = scale(c, x, 0x1p100f, &t);
    return st == PDNN_SUCCESS ? act(c, "Sign", PDNN_ACTIVATION_CLIP, lo, 1.0f, t, r) : st;
}

/* dx = dy f'(x), f' from x or y = f(x) (TensorFlow's math_grad.py). */
static pdnn_status act_grad(const gctx *c, const fwd *w)
{
    const pdnn_node x = w->n.inputs[0], y = c->f, dy = w->dy;
    const float al = w->n.alpha;
    pdnn_node d = -1, t = -1, u = -1, v = -1, e = -1, dx = -1;
    pdnn_status st = PDNN_SUCCESS;
#define DO(call) (st == PDNN_SUCCESS ? (st = (call)) : st)
    switch (w->n.act) {
    case PDNN_ACTIVATION_LEAKY_RELU: { /* alpha dy + (1 - alpha) (dy where x > 0) */
        const pdnn_node q[2] = {x, dy};
        DO(emit(c, "ReluGrad", PDNN__OP_G_RELU_BWD, D(c, x), q, 2, &t));
        DO(scale(c, t, 1.0f - al, &u));
        DO(scale(c, dy, al, &v));
        DO(bin(c, "AddV2", PDNN_BINARY_ADD, u, v, &dx));
        break;
    }
    case PDNN_ACTIVATION_SIGMOID: /* dy (y - y^2) */
        DO(mul(c, y, y, &t));
        DO(bin(c, "Sub", PDNN_BINARY_SUB, y, t, &d));
        break;
    case PDNN_ACTIVATION_HARD_SIGMOID: { /* alpha dy where 0 < y < 1 */
        const pdnn_node q[2] = {y, dy};
        DO(emit(c, "ClipGrad", PDNN__OP_G_CLIP_BWD, D(c, x), q, 2, &t));
        if (st == PDNN_SUCCESS)
            c->s->g->nodes[t].alpha = 0.0f, c->s->g->nodes[t].beta = 1.0f;
        DO(scale(c, t, al, &dx));
        break;
    }
    case PDNN_ACTIVATION_HARD_SWISH: { /* y = x h(x): dy h + dy x / 6 where 0 < h < 1 */
        DO(act(c, "HardSigmoid", PDNN_ACTIVATION_HARD_SIGMOID, 1.0f / 6.0f, 0.5f, x, &e));
        DO(mul(c, dy, e, &t));
        DO(mul(c, dy, x, &u));
        const pdnn_node q[2] = {e, u};
        DO(emit(c, "ClipGrad", PDNN__OP_G_CLIP_BWD, D(c, x), q, 2, &v));
        if (st == PDNN_SUCCESS)
            c->s->g->nodes[v].alpha = 0.0f, c->s->g->nodes[v].beta = 1.0f;
        DO(scale(c, v, 1.0f / 6.0f, &u));
        DO(bin(c, "AddV2", PDNN_BINARY_ADD, t, u, &dx));
        break;
    }
    case PDNN_ACTIVATION_SILU: /* s + y (1 - s), s = sigmoid(x) */
        DO(act(c, "Sigmoid", PDNN_ACTIVATION_SIGMOID, 0, 0, x, &e));
        DO(mul(c, y, e, &t));
        DO(bin(c, "Sub", PDNN_BINARY_SUB, y, t, &u));
        DO(bin(c, "AddV2", PDNN_BINARY_ADD, e, u, &d));
        break;
    case PDNN_ACTIVATION_ERF: /* 2 / sqrt(pi) exp(-x^2) */
        DO(mul(c, x, x, &t));
        DO(scale(c, t, -1.0f, &u));
        DO(act(c, "Exp", PDNN_ACTIVATION_EXP, 0, 0, u, &e));
        DO(scale(c, e, (float)(2.0 / sqrt(PI)), &d));
        break;
    case PDNN_ACTIVATION_GELU: /* Phi(x) + x phi(x): (1 + erf(x / sqrt 2)) / 2 + x exp(-x^2 / 2) / sqrt(2 pi) */
        DO(scale(c, x, (float)0.70710678118654752440, &t));
        DO(act(c, "Erf", PDNN_ACTIVATION_ERF, 0, 0, t, &u));
        DO(affine(c, u, 0.5f, 0.5f, &v));
        DO(mul(c, x, x, &t));
        DO(scale(c, t, -0.5f, &u));
        DO(act(c, "Exp", PDNN_ACTIVATION_EXP, 0, 0, u, &e));
        DO(mul(c, x, e, &t));
        DO(scale(c, t, (float)(1.0 / sqrt(2.0 * PI)), &u));
        DO(bin(c, "AddV2", PDNN_BINARY_ADD, v, u, &d));
        break;
    case PDNN_ACTIVATION_GELU_TANH: { /* (1 + t) / 2 + x (1 - t^2) k (1 + 3 b x^2) / 2, t = tanh(k (x + b x^3)) */
        const float k = (float)sqrt(2.0 / PI), b = 0.044715f;
        pdnn_node x2 = -1, in = -1;
        DO(mul(c, x, x, &x2));
        DO(affine(c, x2, k * b, k, &in));
        DO(mul(c, x, in, &t));
        DO(act(c, "Tanh", PDNN_ACTIVATION_TANH, 0, 0, t, &e));
        DO(affine(c, e, 0.5f, 0.5f, &v));
        DO(mul(c, e, e, &t));
        DO(affine(c, t, -0.5f, 0.5f, &u)); /* (1 - t^2) / 2 */
        DO(affine(c, x2, 3.0f * k * b, k, &t));
        DO(mul(c, u, t, &in));
        DO(mul(c, x, in, &t));
        DO(bin(c, "AddV2", PDNN_BINARY_ADD, v, t, &d));
        break;
    }
    case PDNN_ACTIVATION_TANH: /* 1 - y^2 */
        DO(mul(c, y, y, &t));
        DO(affine(c, t, -1.0f, 1.0f, &d));
        break;
    case PDNN_ACTIVATION_SQRT: /* dy / (2 y) */
        DO(bin(c, "RealDiv", PDNN_BINARY_DIV, dy, y, &t));
        DO(scale(c, t, 0.5f, &dx));
        break;
    case PDNN_ACTIVATION_NEG: DO(scale(c, dy, -1.0f, &dx)); break;
    case PDNN_ACTIVATION_EXP: d = y; break;
    case PDNN_ACTIVATION_LOG: DO(bin(c, "RealDiv", PDNN_BINARY_DIV, dy, x, &dx)); break;
    case PDNN_ACTIVATION_RECIPROCAL: /* -dy y^2 */
        DO(mul(c, y, y, &t));
        DO(scale(c, t, -1.0f, &d));
        break;
    case PDNN_ACTIVATION_ABS: DO(sign_of(c, x, -1.0f, &d)); break;
    case PDNN_ACTIVATION_POW: /* alpha x^(alpha - 1) */
        if (al == 0.0f) {
            DO(scale(c, dy, 0.0f, &dx));
            break;
        }
        DO(act(c, "Pow", PDNN_ACTIVATION_POW, al - 1.0f, 0, x, &t));
        DO(scale(c, t, al, &d));
        break;
    default: return refuse(c, "no gradient is defined for this activation");
    }
    if (dx < 0)
        DO(mul(c, dy, d, &dx));
#undef DO
    return st == PDNN_SUCCESS ? pdnn__grad_part(c->s, x, dx) : st;
}

/* ReduceSum/Mean: dy spread over the reduced axes (divided by their
 * count); ReduceMax/Min: to the elements equal to the result, shared
 * among ties (PyTorch's amax/amin). */
static pdnn_status reduce_grad(const gctx *c, const fwd *w)
{
    const pdnn_node x = w->n.inputs[0];
    const pdnn_tensor_desc xd = *D(c, x);
    pdnn_tensor_desc kd = xd;
    int64_t count = 1;
    for (int k = 0; k < R; k++)
        if (w->n.axes_mask >> k & 1u)
            count *= kd.dims[k], kd.dims[k] = 1;
    pdnn_node g = -1, t = -1, u = -1, m = -1, n = -1, dx = -1;
    pdnn_status st = reshape(c, w->dy, &kd, &g);
#define DO(call) (st == PDNN_SUCCESS ? (st = (call)) : st)
    switch ((pdnn_reduction)w->n.nd_flag) {
    case PDNN_REDUCTION_SUM: DO(expand_to(c, g, &xd, &dx)); break;
    case PDNN_REDUCTION_MEAN:
        DO(scale(c, g, (float)(1.0 / (double)count), &t));
        DO(expand_to(c, t, &xd, &dx));
        break;
    case PDNN_REDUCTION_MAX:
    case PDNN_REDUCTION_MIN:
        DO(reshape(c, c->f, &kd, &t));
        DO(bin(c, "Sub", PDNN_BINARY_SUB, x, t, &u));
        DO(sign_of(c, u, -1.0f, &t));
        DO(act(c, "Abs", PDNN_ACTIVATION_ABS, 0, 0, t, &u));
        DO(affine(c, u, -1.0f, 1.0f, &m)); /* 1 where x is the result */
        DO(reduce_keep(c, m, w->n.axes_mask, PDNN_REDUCTION_SUM, &n));
        DO(bin(c, "RealDiv", PDNN_BINARY_DIV, g, n, &t));
        DO(mul(c, m, t, &dx));
        break;
    default: return refuse(c, "an unknown reduction");
    }
#undef DO
    return st == PDNN_SUCCESS ? pdnn__grad_part(c->s, x, dx) : st;
}

/* Layer norm: LayerNormalizationGrad nodes (pdnn__layer_norm_backward, a
 * registry op), one per input wanted: dx, dscale, dbias, each from x, dy
 * and scale with the forward's axis and epsilon. */
static pdnn_status layer_norm_grad(const gctx *c, const fwd *w)
{
    pdnn_status st = PDNN_SUCCESS;
    for (int k = 0; k < 3 && st == PDNN_SUCCESS; k++) {
        if (!need(w, k))
            continue;
        const pdnn_node q[3] = {w->n.inputs[0], w->dy, w->n.inputs[1]};
        pdnn_node r = -1;
        st = emit(c, "LayerNormalizationGrad", PDNN__OP_NDMATH, D(c, w->n.inputs[k]), q, 3, &r);
        if (st == PDNN_SUCCESS) {
            pdnn__node *nd = &c->s->g->nodes[r];
            nd->nd_kind = PDNN__ND_LAYER_NORM_BWD;
            nd->nd_flag = k;
            nd->axis = w->n.axis;
            nd->alpha = w->n.alpha;
            st = pdnn__grad_part(c->s, w->n.inputs[k], r);
        }
    }
    return st;
}

/* A Slice node of x: n axes' starts, ends, axes, steps 1; out its desc. */
static pdnn_status slice(const gctx *c, pdnn_node x, int n, const int64_t *starts, const int64_t *ends,
                         const int64_t *axes, const pdnn_tensor_desc *out, pdnn_node *r)
{
    pdnn_status st = emit(c, "Slice", PDNN__OP_MOVE, out, &x, 1, r);
    if (st != PDNN_SUCCESS)
        return st;
    pdnn__node *nd = &c->s->g->nodes[*r];
    nd->move_kind = PDNN__MOVE_SLICE;
    nd->move_n = n;
    for (int i = 0; i < n; i++)
        nd->move[i] = starts[i], nd->move[n + i] = ends[i], nd->move[2 * n + i] = axes[i], nd->move[3 * n + i] = 1;
    return PDNN_SUCCESS;
}

/* Concat: each input's part of dy, sliced along the axis. */
static pdnn_status concat_grad(const gctx *c, const fwd *w)
{
    int64_t at = 0, ax = w->n.axis;
    pdnn_status st = PDNN_SUCCESS;
    for (int k = 0; k < w->n.n_inputs && st == PDNN_SUCCESS; k++) {
        const pdnn_tensor_desc d = *D(c, w->n.inputs[k]);
        const int64_t end = at + d.dims[ax];
        pdnn_node r = -1;
        if (need(w, k) && (st = slice(c, w->dy, 1, &at, &end, &ax, &d, &r)) == PDNN_SUCCESS)
            st = pdnn__grad_part(c->s, w->n.inputs[k], r);
        at = end;
    }
    return st;
}

/* Row i of axis k's {out, in} selection or interpolation matrix m, for
 * a move node that maps each axis on its own: a resize's interpolation,
 * a strided slice's or a pad's source element (constant pads: none). */
static void axis_matrix(const pdnn__node *fw, int r, int k, int64_t in, int64_t out, float *m)
{
    memset(m, 0, (size_t)(in * out) * sizeof *m);
    if (fw->move_kind == PDNN__MOVE_RESIZE) {
        float s = (float)out / (float)in;
        if (fw->move[3]) {
            const uint32_t bits = (uint32_t)fw->move[4 + k];
            memcpy(&s, &bits, sizeof s);
        }
        pdnn__resize_matrix((pdnn_resize_mode)fw->move[0], (pdnn_resize_coord)fw->move[1],
                            (pdnn_resize_nearest)fw->move[2], in, out, s, m);
        return;
    }
    int64_t first = 0, step = 1;
    const int n = fw->move_n;
    for (int q = 0; fw->move_kind == PDNN__MOVE_SLICE && q < n; q++)
        if ((fw->move[2 * n + q] < 0 ? fw->move[2 * n + q] + r : fw->move[2 * n + q]) == k) {
            step = fw->move[3 * n + q];
            (void)pdnn__slice_axis(in, fw->move[q], fw->move[n + q], step, &first);
        }
    for (int64_t i = 0; i < out; i++) {
        const int64_t src = fw->move_kind == PDNN__MOVE_PAD ? pdnn__pad_src(i, fw->move[k], in, fw->pad_mode)
                                                            : first + i * step;
        if (src >= 0)
            m[i * in + src] = 1.0f;
    }
}

/* The adjoint of a move node that maps each axis on its own (resize, a
 * strided slice, a reflect or edge pad), one axis at a time: the axis's
 * matrix M {out, in}, transposed, times dy viewed as {before, out,
 * after}, a matmul broadcast over before (an identity M skipped). */
static pdnn_status axes_adjoint(const gctx *c, const fwd *w, pdnn_node *dx)
{
    const pdnn__node *fw = &w->n;
    const pdnn_tensor_desc xd = *D(c, fw->inputs[0]);
    if (xd.layout != PDNN_ND && xd.layout != PDNN_LAYOUT_X && xd.layout != PDNN_NCHW)
        return refuse(c, "this gradient takes ND and NCHW tensors only (not NHWC)");
    const int r = pdnn_tensor_desc_rank(&xd);
    int64_t cur[R];
    memcpy(cur, fw->out.dims, sizeof cur);
    pdnn_node g = w->dy;
    pdnn_status st = PDNN_SUCCESS;
    for (int k = 0; k < r && st == PDNN_SUCCESS; k++) {
        const int64_t in = xd.dims[k], out = cur[k];
        float *m = malloc((size_t)(in * out) * sizeof *m), *mt = malloc((size_t)(in * out) * sizeof *mt);
        if (!m || !mt) {
            free(m);
            free(mt);
            return pdnn__host_oom("pdnn_graph_gradients", "an axis's matrix", (uint64_t)(2 * in * out) * sizeof *m);
        }
        axis_matrix(fw, r, k, in, out, m);
        int identity = in == out;
        for (int64_t i = 0; i < out; i++)
            for (int64_t j = 0; j < in; j++) {
                mt[j * out + i] = m[i * in + j];
                identity &= m[i * in + j] == (i == j ? 1.0f : 0.0f);
            }
        free(m);
        if (identity) {
            free(mt);
            continue;
        }
        int64_t before = 1, after = 1;
        for (int q = 0; q < r; q++)
            if (q != k)
                *(q < k ? &before : &after) *= cur[q];
        const pdnn_tensor_desc md = nd2(in, out);
        const pdnn_tensor_desc v3 = {PDNN_FLOAT32, PDNN_ND, {before, out, after, 1, 1, 1, 1, 1}, 3};
        pdnn_node mn = -1, t = -1;
        st = konst(c, &md, 1, mt, &mn);
        free(mt);
        if (st == PDNN_SUCCESS)
            st = reshape(c, g, &v3, &t);
        if (st == PDNN_SUCCESS)
            st = matmul(c, mn, t, 0, 0, &g);
        cur[k] = in;
    }
    return st == PDNN_SUCCESS ? reshape(c, g, &xd, dx) : st;
}

/* The adjoints of the data-movement nodes. */
static pdnn_status move_grad(const gctx *c, const fwd *w)
{
    const pdnn__node *fw = &w->n;
    const pdnn_node x = fw->inputs[fw->move_kind == PDNN__MOVE_WHERE ? 1 : 0];
    const pdnn_tensor_desc xd = *D(c, x);
    const int r = pdnn_tensor_desc_rank(&xd), n = fw->move_n;
    pdnn_node dx = -1, t = -1;
    pdnn_status st = PDNN_SUCCESS;
    switch (fw->move_kind) {
    case PDNN__MOVE_SLICE: { /* dy padded with zeros back to x's dims; strided or reversed: selection matrices */
        int64_t pads[2 * R];
        int strided = 0;
        for (int k = 0; k < r; k++)
            pads[k] = 0, pads[r + k] = 0;
        for (int i = 0; i < n; i++)
            strided |= fw->move[3 * n + i] != 1;
        if (strided) {
            st = axes_adjoint(c, w, &dx);
            break;
        }
        for (int i = 0; i < n; i++) {
            const int64_t ax = fw->move[2 * n + i] < 0 ? fw->move[2 * n + i] + r : fw->move[2 * n + i];
            int64_t first = 0;
            const int64_t len = pdnn__slice_axis(xd.dims[ax], fw->move[i], fw->move[n + i], 1, &first);
            pads[ax] = first;
            pads[r + ax] = xd.dims[ax] - first - len;
        }
        if ((st = emit(c, "Pad", PDNN__OP_MOVE, &xd, &w->dy, 1, &dx)) == PDNN_SUCCESS) {
            pdnn__node *nd = &c->s->g->nodes[dx];
            nd->move_kind = PDNN__MOVE_PAD;
            nd->move_n = 2 * r;
            memcpy(nd->move, pads, 2 * (size_t)r * sizeof *pads);
            nd->pad_mode = PDNN_PAD_CONSTANT;
        }
        break;
    }
    case PDNN__MOVE_PAD: { /* constant: the middle of dy; reflect, edge: selection matrices (sums) */
        if (fw->pad_mode != PDNN_PAD_CONSTANT) {
            st = axes_adjoint(c, w, &dx);
            break;
        }
        int64_t s[R], e[R], a[R];
        for (int k = 0; k < r; k++)
            s[k] = fw->move[k], e[k] = fw->move[k] + xd.dims[k], a[k] = k;
        st = r ? slice(c, w->dy, r, s, e, a, &xd, &dx) : reshape(c, w->dy, &xd, &dx);
        break;
    }
    case PDNN__MOVE_EXPAND: st = sum_to(c, w->dy, &xd, &dx); break;
    case PDNN__MOVE_GATHER: { /* scatter-add: a one-hot {D, n} matrix times dy as {outer, n, inner} */
        const int ax = fw->axis;
        int64_t outer = 1, inner = 1, d = xd.dims[ax];
        for (int k = 0; k < r; k++)
            if (k != ax)
                *(k < ax ? &outer : &inner) *= xd.dims[k];
        float *p = calloc((size_t)(d * n), sizeof *p);
        if (!p)
            return pdnn__host_oom("pdnn_graph_gradients", "a gather's one-hot matrix", (uint64_t)(d * n) * sizeof *p);
        for (int i = 0; i < n; i++)
            p[(fw->move[i] + (fw->move[i] < 0 ? d : 0)) * n + i] = 1.0f;
        const pdnn_tensor_desc pd = nd2(d, n);
        pdnn_tensor_desc yd = {PDNN_FLOAT32, PDNN_ND, {outer, n, inner, 1, 1, 1, 1, 1}, 3};
        pdnn_node oh = -1;
        st = konst(c, &pd, 1, p, &oh);
        free(p);
        if (st == PDNN_SUCCESS)
            st = reshape(c, w->dy, &yd, &t);
        if (st == PDNN_SUCCESS)
            st = matmul(c, oh, t, 0, 0, &dx);
        if (st == PDNN_SUCCESS)
            st = reshape(c, dx, &xd, &dx);
        break;
    }
    case PDNN__MOVE_WHERE: { /* a: dy where the mask holds, b: where not; each summed to its shape */
        float zero = 0.0f;
        pdnn_node z = -1;
        st = konst(c, D(c, w->dy), 0, &zero, &z);
        for (int k = 1; k < 3 && st == PDNN_SUCCESS; k++) {
            if (!need(w, k))
                continue;
            const pdnn_node q[3] = {fw->inputs[0], k == 1 ? w->dy : z, k == 1 ? z : w->dy};
            if ((st = emit(c, "Where", PDNN__OP_MOVE, D(c, w->dy), q, 3, &t)) == PDNN_SUCCESS) {
                c->s->g->nodes[t].move_kind = PDNN__MOVE_WHERE;
                st = give(c, w, k, t);
            }
        }
        return st;
    }
    case PDNN__MOVE_RESIZE: st = axes_adjoint(c, w, &dx); break;
    default: return refuse(c, "an unknown data-movement node");
    }
    return st == PDNN_SUCCESS ? pdnn__grad_part(c->s, x, dx) : st;
}

/* C = op(A) op(B) over broadcast batch dims: TensorFlow's four cases,
 * each summed back over the batch dims its operand repeats. */
static pdnn_status matmul_grad(const gctx *c, const fwd *w)
{
    const pdnn_node a = w->n.inputs[0], b = w->n.inputs[1], dy = w->dy;
    const int ta = w->n.trans_a, tb = w->n.trans_b;
    if (pdnn_tensor_desc_rank(D(c, a)) < 2 || pdnn_tensor_desc_rank(D(c, b)) < 2)
        return refuse(c, "the gradient of a matmul with a rank-1 operand is not defined yet");
    pdnn_node r = -1;
    pdnn_status st = PDNN_SUCCESS;
    if (need(w, 0)) {
        st = !ta ? (tb ? matmul(c, dy, b, 0, 0, &r) : matmul(c, dy, b, 0, 1, &r))
                 : (tb ? matmul(c, b, dy, 1, 1, &r) : matmul(c, b, dy, 0, 1, &r));
        if (st == PDNN_SUCCESS)
            st = give(c, w, 0, r);
    }
    if (st == PDNN_SUCCESS && need(w, 1)) {
        st = !ta ? (tb ? matmul(c, dy, a, 1, 0, &r) : matmul(c, a, dy, 1, 0, &r))
                 : (tb ? matmul(c, dy, a, 1, 1, &r) : matmul(c, a, dy, 0, 0, &r));
        if (st == PDNN_SUCCESS)
            st = give(c, w, 1, r);
    }
    return st;
}

/* Whether matmul node n's operands are both ND with unequal batch dims
 * (gradients.c's own case takes equal ones). */
static int batch_broadcast(const pdnn_graph *g, const pdnn__node *n)
{
    const pdnn_tensor_desc *da = &g->nodes[n->inputs[0]].out, *db = &g->nodes[n->inputs[1]].out;
    if (da->layout != PDNN_ND || db->layout != PDNN_ND)
        return 0;
    return da->rank != db->rank || da->rank < 2 ||
           memcmp(da->dims, db->dims, (size_t)(da->rank - 2) * sizeof da->dims[0]) != 0;
}

pdnn_status pdnn__grad_nd(pdnn__grad_state *s, int f, int dy, const char *relevant, int *handled)
{
    const gctx c = {s, f};
    const fwd w = {s->g->nodes[f], dy, relevant};
    const pdnn__node *n = &w.n;
    *handled = 1;
    int any = 0;
    for (int k = 0; k < n->n_inputs; k++)
        any |= need(&w, k);
    switch (n->op) {
    case PDNN__OP_ELTWISE:
        if (!n->bcast && n->binop != PDNN_BINARY_DIV && n->binop != PDNN_BINARY_POW)
            break; /* gradients.c's elementwise case */
        return any ? binary_grad(&c, &w) : PDNN_SUCCESS;
    case PDNN__OP_ACT:
        if (n->act == PDNN_ACTIVATION_CLIP)
            break;
        return any ? act_grad(&c, &w) : PDNN_SUCCESS;
    case PDNN__OP_NDMATH:
        if (n->nd_kind == PDNN__ND_REDUCE)
            return any ? reduce_grad(&c, &w) : PDNN_SUCCESS;
        if (n->nd_kind == PDNN__ND_LAYER_NORM)
            return any ? layer_norm_grad(&c, &w) : PDNN_SUCCESS;
        break;
    case PDNN__OP_MOVE: return any ? move_grad(&c, &w) : PDNN_SUCCESS;
    case PDNN__OP_CONCAT: return any ? concat_grad(&c, &w) : PDNN_SUCCESS;
    case PDNN__OP_MATMUL:
        if (!batch_broadcast(s->g, n))
            break;
        return any ? matmul_grad(&c, &w) : PDNN_SUCCESS;
    default: break;
    }
    *handled = 0;
    return PDNN_SUCCESS;
}
