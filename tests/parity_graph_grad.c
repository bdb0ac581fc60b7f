/* The op-parity harness's graph-gradient cases (grad mode, sets gg_*):
 * pdnn_graph_gradients of the N-d ops (broadcast binary nodes, the
 * activations, reductions, layer norm, softmax, data movement, concat,
 * batched matmul with broadcast batch dims), ranks 1 to 5, odd sizes.
 * Each case builds x -> op -> y, the loss sum(y w) with a fixed random w,
 * and its gradients with respect to every float input, on each device;
 * the reference is central finite differences of the loss (step 1e-3,
 * in double from the host's y at x +- step, one input element at a
 * time). The error is max |got - fd| / (max |fd| + 1e-3) over the
 * input's elements: float32 forward rounding over the step keeps it
 * near 1e-4, a wrong term, sign or index puts it near 1. */
#include "core/context.h"
#include "graph/graph.h"
#include "ops/dispatch.h"
#include "parity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MR PDNN_MAX_RANK
#define TOL 5e-3
#define STEP 1e-3

typedef enum gg_kind { BIN, ACT, RED, LN, SOFTMAX, SLICE, CONCAT, EXPAND, GATHER, PAD, WHERE, MATMUL, RESHAPE,
                       RESIZE } gg_kind;

typedef struct gg_case {
    const char *set;
    gg_kind k;
    int ra;
    int64_t a[MR];
    int64_t rb;       /* b's rank (BIN, CONCAT, MATMUL, WHERE); EXPAND/RESHAPE: y's rank */
    int64_t b[MR];    /* b's dims; EXPAND/RESHAPE: y's */
    int p;            /* binary op, activation, reduction, axis, resize mode ... */
    float alpha, beta;
    int q;            /* RED: axes mask; MATMUL: 2 ta + tb; LN: axis; SLICE/PAD/GATHER: n args; RESIZE: coord */
    int64_t args[12]; /* SLICE: starts, ends, axes; PAD: 2 r pads; GATHER: indices; RED: keepdims, RESIZE:
                         the rounding in args[0] */
    int64_t nchw;     /* a's and b's rank-4 descs NCHW (as an imported CNN's), else ND */
} gg_case;

#define A(...) {__VA_ARGS__}
static const gg_case cases[] = {
    /* binary: every op, broadcasting either side, ranks 1 to 5, a scalar-like side */
    {"gg_binary", BIN, 3, A(3, 5, 7), 3, A(3, 5, 7), PDNN_BINARY_ADD, 0, 0, 0, {0}, 0},
    {"gg_binary", BIN, 3, A(3, 5, 7), 1, A(7), PDNN_BINARY_ADD, 0, 0, 0, {0}, 0},
    {"gg_binary", BIN, 2, A(5, 1), 3, A(3, 1, 7), PDNN_BINARY_SUB, 0, 0, 0, {0}, 0},
    {"gg_binary", BIN, 4, A(2, 3, 1, 5), 4, A(1, 3, 7, 1), PDNN_BINARY_MUL, 0, 0, 0, {0}, 0},
    {"gg_binary", BIN, 5, A(2, 1, 3, 1, 5), 2, A(3, 1), PDNN_BINARY_DIV, 0, 0, 0, {0}, 0},
    {"gg_binary", BIN, 1, A(9), 1, A(1), PDNN_BINARY_DIV, 0, 0, 0, {0}, 0},
    {"gg_binary", BIN, 3, A(3, 1, 5), 2, A(7, 5), PDNN_BINARY_POW, 0, 0, 0, {0}, 0},
    {"gg_binary", BIN, 2, A(5, 3), 2, A(5, 3), PDNN_BINARY_POW, 0, 0, 0, {0}, 0},
    /* activations 1 to 16 (Clip has its own) */
    {"gg_act", ACT, 3, A(3, 5, 7), 0, {0}, PDNN_ACTIVATION_LEAKY_RELU, 0.1f, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(5, 7), 0, {0}, PDNN_ACTIVATION_SIGMOID, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 4, A(1, 3, 5, 7), 0, {0}, PDNN_ACTIVATION_HARD_SIGMOID, 0.2f, 0.5f, 0, {0}, 0},
    {"gg_act", ACT, 1, A(33), 0, {0}, PDNN_ACTIVATION_HARD_SWISH, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 5, A(2, 1, 3, 5, 3), 0, {0}, PDNN_ACTIVATION_SILU, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(7, 5), 0, {0}, PDNN_ACTIVATION_ERF, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 3, A(3, 5, 7), 0, {0}, PDNN_ACTIVATION_GELU, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 3, A(3, 5, 7), 0, {0}, PDNN_ACTIVATION_GELU_TANH, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(5, 7), 0, {0}, PDNN_ACTIVATION_TANH, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 1, A(17), 0, {0}, PDNN_ACTIVATION_SQRT, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 1, A(17), 0, {0}, PDNN_ACTIVATION_NEG, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(3, 7), 0, {0}, PDNN_ACTIVATION_EXP, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(3, 7), 0, {0}, PDNN_ACTIVATION_LOG, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(3, 7), 0, {0}, PDNN_ACTIVATION_RECIPROCAL, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 4, A(3, 1, 5, 3), 0, {0}, PDNN_ACTIVATION_ABS, 0, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(3, 7), 0, {0}, PDNN_ACTIVATION_POW, 2.5f, 0, 0, {0}, 0},
    {"gg_act", ACT, 2, A(3, 7), 0, {0}, PDNN_ACTIVATION_POW, 0.0f, 0, 0, {0}, 0},
    /* reductions: axes subsets, keepdims or not, every axis */
    {"gg_reduce", RED, 3, A(3, 5, 7), 0, {0}, PDNN_REDUCTION_SUM, 0, 0, 2, {1}, 0},
    {"gg_reduce", RED, 4, A(3, 5, 1, 7), 0, {0}, PDNN_REDUCTION_SUM, 0, 0, 9, {0}, 0},
    {"gg_reduce", RED, 2, A(5, 7), 0, {0}, PDNN_REDUCTION_MEAN, 0, 0, 3, {0}, 0},
    {"gg_reduce", RED, 5, A(2, 3, 1, 5, 3), 0, {0}, PDNN_REDUCTION_MEAN, 0, 0, 16 + 2, {1}, 0},
    {"gg_reduce", RED, 3, A(3, 5, 7), 0, {0}, PDNN_REDUCTION_MAX, 0, 0, 4, {1}, 0},
    {"gg_reduce", RED, 2, A(5, 7), 0, {0}, PDNN_REDUCTION_MIN, 0, 0, 1, {0}, 0},
    {"gg_reduce", RED, 1, A(9), 0, {0}, PDNN_REDUCTION_MAX, 0, 0, 1, {0}, 0},
    /* layer norm over the last axes (x, scale and bias), softmax on N-d */
    {"gg_layer_norm", LN, 3, A(3, 5, 7), 0, {0}, 0, 1e-5f, 0, 2, {0}, 0},
    {"gg_layer_norm", LN, 4, A(2, 3, 5, 3), 0, {0}, 0, 1e-3f, 0, 2, {0}, 0},
    {"gg_layer_norm", LN, 1, A(17), 0, {0}, 0, 1e-5f, 0, 0, {0}, 0},
    {"gg_layer_norm", LN, 3, A(4, 3, 33), 0, {0}, 0, 1e-5f, 0, 1, {0}, 0},
    {"gg_softmax", SOFTMAX, 3, A(3, 5, 7), 0, {0}, 2, 0, 0, 0, {0}, 0},
    {"gg_softmax", SOFTMAX, 4, A(2, 3, 5, 3), 0, {0}, 1, 0, 0, 1, {0}, 0},
    /* data movement */
    {"gg_move", SLICE, 3, A(3, 5, 7), 0, {0}, 0, 0, 0, 2, A(1, -6, 3, 6, 0, -1), 0},
    {"gg_move", SLICE, 1, A(9), 0, {0}, 0, 0, 0, 1, A(0, 5, 0), 0},
    /* strided and reversed slices (steps in args after the axes), reflect and edge pads (mode in p) */
    {"gg_move", SLICE, 3, A(3, 7, 5), 0, {0}, 0, 0, 0, 2, A(0, -1, 7, -9, 1, 2, 2, -2), 0},
    {"gg_move", SLICE, 1, A(9), 0, {0}, 0, 0, 0, 1, A(1, 9, 0, 3), 0},
    {"gg_move", PAD, 3, A(3, 5, 4), 0, {0}, PDNN_PAD_REFLECT, 0, 0, 6, A(1, 2, 0, 2, 1, 3), 0},
    {"gg_move", PAD, 2, A(5, 3), 0, {0}, PDNN_PAD_EDGE, 0, 0, 4, A(2, 0, 1, 3), 0},
    {"gg_move", CONCAT, 3, A(3, 2, 5), 3, A(3, 5, 5), 1, 0, 0, 0, {0}, 0},
    {"gg_move", CONCAT, 1, A(3), 1, A(5), 0, 0, 0, 0, {0}, 0},
    {"gg_move", EXPAND, 2, A(5, 1), 4, A(2, 3, 5, 7), 0, 0, 0, 0, {0}, 0},
    {"gg_move", GATHER, 3, A(3, 5, 7), 0, {0}, 1, 0, 0, 4, A(0, 4, -1, 2), 0},
    {"gg_move", GATHER, 2, A(7, 3), 0, {0}, 0, 0, 0, 2, A(6, 1), 0},
    {"gg_move", PAD, 3, A(3, 5, 2), 0, {0}, 0, 0, 0, 6, A(1, 0, 2, 0, 3, 1), 0},
    {"gg_move", WHERE, 3, A(3, 5, 7), 2, A(5, 1), 0, 0, 0, 0, {0}, 0},
    {"gg_move", RESHAPE, 3, A(3, 5, 7), 2, A(15, 7), 0, 0, 0, 0, {0}, 0},
    /* resize: nearest (floor, round) and linear (half pixel, align corners), up and down, an NCHW-like rank 4 */
    {"gg_move", RESIZE, 4, A(2, 3, 5, 4), 4, A(2, 3, 10, 12), PDNN_RESIZE_NEAREST, 0, 0, PDNN_RESIZE_ASYMMETRIC,
     A(PDNN_RESIZE_FLOOR), 0},
    {"gg_move", RESIZE, 3, A(3, 7, 5), 3, A(3, 3, 8), PDNN_RESIZE_NEAREST, 0, 0, PDNN_RESIZE_HALF_PIXEL,
     A(PDNN_RESIZE_ROUND_PREFER_FLOOR), 0},
    {"gg_move", RESIZE, 4, A(1, 3, 5, 4), 4, A(1, 3, 9, 7), PDNN_RESIZE_LINEAR, 0, 0, PDNN_RESIZE_HALF_PIXEL, {0}, 0},
    {"gg_move", RESIZE, 2, A(7, 5), 2, A(3, 11), PDNN_RESIZE_LINEAR, 0, 0, PDNN_RESIZE_ALIGN_CORNERS, {0}, 0},
    /* NCHW: squeeze-and-excitation's gate, hard swish, global average
     * pooling, a channel concat, an upsample, a pad, a crop */
    {"gg_nchw", BIN, 4, A(2, 3, 5, 4), 4, A(2, 3, 1, 1), PDNN_BINARY_MUL, 0, 0, 0, {0}, 1},
    {"gg_nchw", ACT, 4, A(2, 3, 5, 4), 0, {0}, PDNN_ACTIVATION_HARD_SWISH, 0, 0, 0, {0}, 1},
    {"gg_nchw", RED, 4, A(2, 3, 5, 4), 0, {0}, PDNN_REDUCTION_MEAN, 0, 0, 12, {1}, 1},
    {"gg_nchw", CONCAT, 4, A(2, 3, 5, 4), 4, A(2, 2, 5, 4), 1, 0, 0, 0, {0}, 1},
    {"gg_nchw", RESIZE, 4, A(2, 3, 3, 4), 4, A(2, 3, 6, 8), PDNN_RESIZE_NEAREST, 0, 0, PDNN_RESIZE_ASYMMETRIC,
     A(PDNN_RESIZE_FLOOR), 1},
    {"gg_nchw", PAD, 4, A(2, 3, 3, 4), 0, {0}, 0, 0, 0, 8, A(0, 0, 1, 2, 0, 0, 2, 1), 1},
    {"gg_nchw", SLICE, 4, A(2, 3, 5, 4), 0, {0}, 0, 0, 0, 2, A(1, 1, 4, 3, 2, 3), 1},
    /* batched matmul: equal, broadcast and missing batch dims, transposes */
    {"gg_matmul", MATMUL, 3, A(3, 5, 7), 2, A(7, 4), 0, 0, 0, 0, {0}, 0},
    {"gg_matmul", MATMUL, 4, A(2, 1, 5, 7), 3, A(3, 4, 7), 0, 0, 0, 1, {0}, 0},
    {"gg_matmul", MATMUL, 2, A(7, 5), 5, A(2, 1, 3, 7, 3), 0, 0, 0, 2, {0}, 0},
    {"gg_matmul", MATMUL, 3, A(1, 7, 5), 3, A(3, 4, 7), 0, 0, 0, 3, {0}, 0},
};
#undef A
#define N_CASES ((int)(sizeof cases / sizeof *cases))

/* Every case with no op named; with layer_norm_bwd named, the layer-norm
 * cases' registry-op part only. */
static int selected(const gg_case *c, int op, const char *set)
{
    return (op < 0 || (op == PDNN__OP_ND_LAYER_NORM_BWD && c->k == LN)) && (!set || strcmp(set, c->set) == 0);
}

int parity_graph_grad_count(int op, const char *set)
{
    int n = 0;
    for (int i = 0; i < N_CASES; i++)
        n += selected(&cases[i], op, set);
    return n;
}

static pdnn_tensor_desc nd(int r, const int64_t *d)
{
    pdnn_tensor_desc t = {PDNN_FLOAT32, PDNN_ND, {1, 1, 1, 1, 1, 1, 1, 1}, r};
    for (int k = 0; k < r; k++)
        t.dims[k] = d[k];
    return t;
}

/* The case's graph on device dev: its float inputs (placeholders) in
 * xs, the op's output y, the loss and the inputs' gradients. */
typedef struct built {
    pdnn_graph *g;
    pdnn_node xs[3], y, loss, grads[3];
    int nx;
} built;

static pdnn_status build(const gg_case *c, const char *dev, const float *w, built *b)
{
    memset(b, 0, sizeof *b);
    pdnn_status st = pdnn_graph_create(&b->g);
    pdnn_graph *g = b->g;
    pdnn_tensor_desc da = nd(c->ra, c->a), db = nd((int)c->rb, c->b);
    if (c->nchw) {
        da.layout = PDNN_NCHW;
        db.layout = c->rb == 4 ? PDNN_NCHW : db.layout;
    }
    pdnn_node y = -1, wn = -1, p = -1;
#define DO(call) (st == PDNN_SUCCESS ? (st = (call)) : st)
    DO(pdnn_graph_placeholder(g, "a", dev, &da, &b->xs[0]));
    b->nx = 1;
    const pdnn_node a = b->xs[0];
    switch (c->k) {
    case BIN:
        DO(pdnn_graph_placeholder(g, "b", dev, &db, &b->xs[1]));
        b->nx = 2;
        DO(pdnn_graph_binary(g, "op", dev, a, b->xs[1], (pdnn_binary_op)c->p, &y));
        break;
    case ACT: DO(pdnn_graph_activation(g, "op", dev, a, (pdnn_activation)c->p, c->alpha, c->beta, &y)); break;
    case RED: {
        int axes[MR], n = 0;
        for (int k = 0; k < c->ra; k++)
            if (c->q >> k & 1)
                axes[n++] = k;
        DO(pdnn_graph_reduce(g, "op", dev, a, axes, n, (pdnn_reduction)c->p, (int)c->args[0], &y));
        break;
    }
    case LN: {
        int64_t cols = 1;
        for (int k = c->q; k < c->ra; k++)
            cols *= c->a[k];
        pdnn_tensor_desc sd = nd(1, &cols);
        DO(pdnn_graph_placeholder(g, "scale", dev, &sd, &b->xs[1]));
        DO(pdnn_graph_placeholder(g, "bias", dev, &sd, &b->xs[2]));
        b->nx = 3;
        DO(pdnn_graph_layer_norm(g, "op", dev, a, c->q, c->alpha, b->xs[1], b->xs[2], &y));
        break;
    }
    case SOFTMAX: DO(pdnn_graph_softmax_axis(g, "op", dev, a, c->p, c->q, &y)); break;
    case SLICE: { /* steps after the axes when args has room for them (3 n + n <= 12) and one is set */
        const int n = c->q;
        const int64_t *steps = 4 * n <= 12 && c->args[3 * n] != 0 ? c->args + 3 * n : NULL;
        DO(pdnn_graph_slice(g, "op", dev, a, n, c->args, c->args + n, c->args + 2 * n, steps, &y));
        break;
    }
    case CONCAT: {
        DO(pdnn_graph_placeholder(g, "b", dev, &db, &b->xs[1]));
        b->nx = 2;
        DO(pdnn_graph_concat(g, "op", dev, b->xs, 2, c->p, &y));
        break;
    }
    case EXPAND: DO(pdnn_graph_expand(g, "op", dev, a, (int)c->rb, c->b, &y)); break;
    case GATHER: DO(pdnn_graph_gather(g, "op", dev, a, c->p, c->args, c->q, &y)); break;
    case PAD: DO(pdnn_graph_pad_nd(g, "op", dev, a, c->args, (pdnn_pad_mode)c->p, 0.5f, &y)); break;
    case WHERE: {
        DO(pdnn_graph_placeholder(g, "b", dev, &db, &b->xs[1]));
        b->nx = 2;
        int64_t n = pdnn_tensor_desc_elements(&da);
        float *m = calloc((size_t)n, sizeof *m);
        for (int64_t i = 0; m && i < n; i++)
            m[i] = (float)((i * 7 + 3) % 5 < 2);
        DO(m ? pdnn_graph_constant(g, "mask", dev, &da, m, &p) : PDNN_ERR_OUT_OF_MEMORY);
        free(m);
        DO(pdnn_graph_where(g, "op", dev, p, a, b->xs[1], &y));
        break;
    }
    case RESHAPE: DO(pdnn_graph_reshape_nd(g, "op", dev, a, (int)c->rb, c->b, &y)); break;
    case RESIZE:
        DO(pdnn_graph_resize(g, "op", dev, a, (pdnn_resize_mode)c->p, (pdnn_resize_coord)c->q,
                             (pdnn_resize_nearest)c->args[0], NULL, c->b, &y));
        break;
    case MATMUL:
        DO(pdnn_graph_placeholder(g, "b", dev, &db, &b->xs[1]));
        b->nx = 2;
        DO(pdnn_graph_matmul(g, "op", dev, a, b->xs[1], c->q >> 1, c->q & 1, &y));
        break;
    }
    b->y = y;
    if (!w) /* a probe of the shapes */
        return st;
    pdnn_tensor_desc yd;
    DO(pdnn_graph_node_desc(g, y, &yd));
    DO(pdnn_graph_constant(g, "w", dev, &yd, w, &wn));
    DO(pdnn_graph_binary(g, "yw", dev, y, wn, PDNN_BINARY_MUL, &p));
    DO(pdnn_graph_reduce(g, "loss", dev, p, NULL, 0, PDNN_REDUCTION_SUM, 0, &b->loss));
    DO(pdnn_graph_gradients(g, b->loss, b->xs, b->nx, b->grads));
#undef DO
    return st;
}

/* x's values: away from the kinks (0 for abs, leaky relu; +-3 for hard
 * swish; the clip of hard sigmoid) by more than the step, positive where
 * the op needs it, distinct by more than the step where a max picks. */
static void fill(const gg_case *c, int input, float *v, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = (double)(s >> 11) * 0x1.0p-53; /* [0, 1) */
        double x = 2.0 * u - 1.0;
        x = x < 0 ? x - 0.1 : x + 0.1; /* |x| in [0.1, 1.1) */
        if ((c->k == ACT && (c->p == PDNN_ACTIVATION_SQRT || c->p == PDNN_ACTIVATION_LOG ||
                             c->p == PDNN_ACTIVATION_POW)) ||
            (c->k == BIN && c->p == PDNN_BINARY_POW && input == 0))
            x = fabs(x) + 0.3;
        if (c->k == ACT && c->p == PDNN_ACTIVATION_HARD_SWISH)
            x *= 4.5; /* across -3 and 3, rarely within the step of them */
        if (c->k == RED && (c->p == PDNN_REDUCTION_MAX || c->p == PDNN_REDUCTION_MIN))
            x = (double)((i * 37) % n) / (double)n * 2.0 - 1.0 + 0.01 * u;
        v[i] = (float)x;
    }
}

static int64_t count_of(const built *b, int k)
{
    pdnn_tensor_desc d;
    pdnn_graph_node_desc(b->g, b->xs[k], &d);
    return pdnn_tensor_desc_elements(&d);
}

/* Runs b's session with inputs vals, fetching n nodes into out (host
 * memory, each count[k] floats). */
static pdnn_status run(pdnn_session *s, pdnn_device *dev, const built *b, float *const *vals, const pdnn_node *f,
                       int n, float **out)
{
    pdnn_tensor *in[3] = {NULL, NULL, NULL}, *got[3] = {NULL, NULL, NULL};
    pdnn_status st = PDNN_SUCCESS;
    for (int k = 0; k < b->nx && k < 3 && st == PDNN_SUCCESS; k++) {
        pdnn_tensor_desc d;
        if ((st = pdnn_graph_node_desc(b->g, b->xs[k], &d)) != PDNN_SUCCESS)
            break;
        in[k] = parity_make(dev, &d, vals[k]);
        st = in[k] ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
    }
    if (st == PDNN_SUCCESS)
        st = pdnn_session_run(s, b->xs, in, b->nx, f, n, got);
    for (int k = 0; k < n && st == PDNN_SUCCESS; k++) {
        pdnn_tensor_desc d;
        pdnn_tensor_get_desc(got[k], &d);
        st = pdnn_tensor_read(got[k], out[k], (size_t)pdnn_tensor_desc_bytes(&d));
    }
    for (int k = 0; k < 3; k++) {
        pdnn_tensor_release(in[k]);
        pdnn_tensor_release(got[k]);
    }
    return st;
}

static pdnn_session *session_on(pdnn_device *dev, const built *b)
{
    pdnn_session_config cfg;
    pdnn_session_config_init(&cfg);
    cfg.context = dev->ctx;
    pdnn_session *s = NULL;
    return pdnn_session_create(b->g, &cfg, &s) == PDNN_SUCCESS ? s : NULL;
}

static void case_name(const gg_case *c, char *buf, size_t len)
{
    static const char *const kinds[] = {"binary", "activation", "reduce", "layer_norm", "softmax", "slice", "concat",
                                        "expand", "gather", "pad", "where", "matmul", "reshape",
                                        "resize"};
    size_t u = (size_t)snprintf(buf, len, "%s %s %d [", c->set, kinds[c->k], c->p);
    for (int k = 0; k < c->ra && u < len; k++)
        u += (size_t)snprintf(buf + u, len - u, "%s%lld", k ? "," : "", (long long)c->a[k]);
    if (u < len && c->rb)
        u += (size_t)snprintf(buf + u, len - u, "] [");
    for (int k = 0; k < c->rb && u < len; k++)
        u += (size_t)snprintf(buf + u, len - u, "%s%lld", k ? "," : "", (long long)c->b[k]);
    if (u < len)
        snprintf(buf + u, len - u, "] %d", c->q);
}

/* The finite differences of every input element's loss, from the host. */
static int reference(pdnn_device *host, const gg_case *c, float *const *vals, const float *w, double **fd,
                     char *msg, size_t len)
{
    built b;
    pdnn_session *s = NULL;
    if (build(c, host->name, w, &b) != PDNN_SUCCESS || !(s = session_on(host, &b))) {
        snprintf(msg, len, "the host reference: %s", pdnn_last_error());
        pdnn_graph_destroy(b.g);
        return 0;
    }
    pdnn_tensor_desc yd;
    pdnn_graph_node_desc(b.g, b.y, &yd);
    const int64_t ny = pdnn_tensor_desc_elements(&yd);
    float *yp = parity_xcalloc((size_t)ny, sizeof *yp), *ym = parity_xcalloc((size_t)ny, sizeof *ym);
    int ok = 1;
    for (int k = 0; k < b.nx && ok; k++) {
        const int64_t n = count_of(&b, k);
        if (!(ok = vals[k] != NULL))
            break;
        fd[k] = parity_xcalloc((size_t)n, sizeof **fd);
        for (int64_t i = 0; i < n && ok; i++) {
            const float x0 = vals[k][i];
            vals[k][i] = x0 + (float)STEP;
            const double hp = (double)vals[k][i] - x0;
            ok = run(s, host, &b, vals, &b.y, 1, &yp) == PDNN_SUCCESS;
            vals[k][i] = x0 - (float)STEP;
            const double hm = x0 - (double)vals[k][i];
            ok = ok && run(s, host, &b, vals, &b.y, 1, &ym) == PDNN_SUCCESS;
            vals[k][i] = x0;
            double d = 0;
            for (int64_t j = 0; j < ny; j++)
                d += (double)w[j] * ((double)yp[j] - (double)ym[j]);
            fd[k][i] = d / (hp + hm);
        }
    }
    if (!ok)
        snprintf(msg, len, "the host reference's run: %s", pdnn_last_error());
    free(yp);
    free(ym);
    pdnn_session_destroy(s);
    pdnn_graph_destroy(b.g);
    return ok;
}

/* The graph-level cases' stand-in algorithm (no registry op: counted apart). */
static const pdnn__algo graph_algo = {.op = PDNN__OP_COUNT, .name = "graph_gradients"};

static void run_case(pdnn_device *host, pdnn_device *const *devs, int ndev, const gg_case *c, int ci, int verbose)
{
    char cname[256], msg[512];
    case_name(c, cname, sizeof cname);
    built probe;
    pdnn_status st = build(c, host->name, NULL, &probe);
    if (st != PDNN_SUCCESS) {
        for (int di = 0; di < ndev; di++)
            parity_fail(devs[di], &graph_algo, cname, "the graph: %s", pdnn_last_error());
        pdnn_graph_destroy(probe.g);
        return;
    }
    (void)verbose;
    pdnn_tensor_desc yd;
    pdnn_graph_node_desc(probe.g, probe.y, &yd);
    const int64_t ny = pdnn_tensor_desc_elements(&yd);
    const int nx = probe.nx;
    int64_t nxe[3] = {0, 0, 0};
    float *vals[3] = {NULL, NULL, NULL}, *got[3] = {NULL, NULL, NULL};
    double *fd[3] = {NULL, NULL, NULL};
    for (int k = 0; k < nx; k++) {
        nxe[k] = count_of(&probe, k);
        vals[k] = parity_xcalloc((size_t)nxe[k], sizeof *vals[k]);
        got[k] = parity_xcalloc((size_t)nxe[k], sizeof *got[k]);
        fill(c, k, vals[k], nxe[k], (uint64_t)(ci * 3 + k + 1));
    }
    pdnn_graph_destroy(probe.g);
    float *w = parity_xcalloc((size_t)ny, sizeof *w);
    fill(&(gg_case){.k = BIN}, 1, w, ny, (uint64_t)ci + 1000u);
    msg[0] = '\0';
    const int have_ref = reference(host, c, vals, w, fd, msg, sizeof msg);
    for (int di = 0; di < ndev; di++) {
        pdnn_device *dev = devs[di];
        if (!have_ref) {
            parity_fail(dev, &graph_algo, cname, "%s", msg);
            continue;
        }
        built b;
        pdnn_session *s = NULL;
        if (build(c, dev->name, w, &b) != PDNN_SUCCESS || !(s = session_on(dev, &b)) ||
            run(s, dev, &b, vals, b.grads, nx, got) != PDNN_SUCCESS) {
            parity_fail(dev, &graph_algo, cname, "%s", pdnn_last_error());
            pdnn_session_destroy(s);
            pdnn_graph_destroy(b.g);
            continue;
        }
        double worst = 0;
        char where[160] = "";
        for (int k = 0; k < nx && got[k] && fd[k]; k++) {
            double m = 0;
            for (int64_t i = 0; i < nxe[k]; i++)
                m = fmax(m, fabs(fd[k][i]));
            for (int64_t i = 0; i < nxe[k]; i++) {
                const double e = fabs((double)got[k][i] - fd[k][i]) / (m + 1e-3);
                if (e > worst || isnan(e)) {
                    worst = isnan(e) ? INFINITY : e;
                    snprintf(where, sizeof where, "input %d element %lld: gradient %.9g, finite difference %.9g", k,
                             (long long)i, (double)got[k][i], fd[k][i]);
                }
            }
        }
        if (worst <= TOL)
            parity_pass(dev, &graph_algo, cname, worst);
        else
            parity_fail(dev, &graph_algo, cname, "%s (error %.3g)", where, worst);
        pdnn_session_destroy(s);
        pdnn_graph_destroy(b.g);
    }
    for (int k = 0; k < 3; k++) {
        free(vals[k]);
        free(got[k]);
        free(fd[k]);
    }
    free(w);
}

/* Layer norm's backward registry op (PDNN__OP_ND_LAYER_NORM_BWD) by each
 * algorithm, forced by name, on a layer-norm case: dx, dscale and dbias
 * against a naive loop in double, |got - ref| / max |ref| within the
 * algorithm's tolerance. */
static void naive_ln_bwd(const float *x, const float *dy, const float *g, int64_t rows, int64_t cols, double eps,
                         double *dx, double *dg, double *db)
{
    for (int64_t j = 0; j < cols; j++)
        dg[j] = db[j] = 0.0;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols, *d = dy + r * cols;
        double mean = 0, var = 0, mg = 0, mgx = 0;
        for (int64_t j = 0; j < cols; j++)
            mean += xr[j] / (double)cols;
        for (int64_t j = 0; j < cols; j++)
            var += (xr[j] - mean) * (xr[j] - mean) / (double)cols;
        const double inv = 1.0 / sqrt(var + eps);
        for (int64_t j = 0; j < cols; j++) {
            const double xh = (xr[j] - mean) * inv;
            mg += d[j] * (double)g[j] / (double)cols;
            mgx += d[j] * (double)g[j] * xh / (double)cols;
            dg[j] += d[j] * xh;
            db[j] += d[j];
        }
        for (int64_t j = 0; j < cols; j++)
            dx[r * cols + j] = inv * (d[j] * (double)g[j] - mg - (xr[j] - mean) * inv * mgx);
    }
}

static void ln_bwd_op_case(pdnn_device *const *devs, int ndev, const gg_case *c, int ci, const char *algo)
{
    const pdnn_tensor_desc xd = nd(c->ra, c->a);
    const int64_t n = pdnn_tensor_desc_elements(&xd);
    int64_t cols = 1;
    for (int k = c->q; k < c->ra; k++)
        cols *= c->a[k];
    const pdnn_tensor_desc gd = nd(1, &cols);
    float *x = parity_xcalloc((size_t)n, sizeof *x), *dy = parity_xcalloc((size_t)n, sizeof *dy);
    float *g = parity_xcalloc((size_t)cols, sizeof *g), *got = parity_xcalloc((size_t)n, sizeof *got);
    double *ref[3] = {parity_xcalloc((size_t)n, sizeof(double)), parity_xcalloc((size_t)cols, sizeof(double)),
                      parity_xcalloc((size_t)cols, sizeof(double))};
    fill(c, 0, x, n, (uint64_t)ci + 77u);
    fill(c, 1, dy, n, (uint64_t)ci + 78u);
    fill(c, 2, g, cols, (uint64_t)ci + 79u);
    naive_ln_bwd(x, dy, g, n / cols, cols, (double)c->alpha, ref[0], ref[1], ref[2]);
    for (int di = 0; di < ndev; di++) {
        const pdnn__algo *const *list = pdnn__algos(devs[di], PDNN__OP_ND_LAYER_NORM_BWD);
        for (int ai = 0; list && list[ai]; ai++)
            for (int which = 0; which < 3 && (!algo || strcasecmp(algo, list[ai]->name) == 0); which++) {
                const pdnn__algo *a = list[ai];
                char cname[300];
                case_name(c, cname, sizeof cname);
                snprintf(cname + strlen(cname), sizeof cname - strlen(cname), " layer_norm_bwd %s",
                         which == 0 ? "dx" : which == 1 ? "dscale" : "dbias");
                pdnn_tensor *tx = parity_make(devs[di], &xd, x), *td = parity_make(devs[di], &xd, dy),
                            *tg = parity_make(devs[di], &gd, g), *ty = parity_make(devs[di], which ? &gd : &xd, NULL);
                pdnn__dispatch_force(PDNN__OP_ND_LAYER_NORM_BWD, a->name, -1);
                pdnn_status st = tx && td && tg && ty ? pdnn__layer_norm_backward(tx, td, tg, c->q, c->alpha, which, ty)
                                                      : PDNN_ERR_OUT_OF_MEMORY;
                pdnn__dispatch_force(PDNN__OP_ND_LAYER_NORM_BWD, NULL, -1);
                const int64_t ny = which ? cols : n;
                if (st == PDNN_SUCCESS)
                    st = pdnn_tensor_read(ty, got, (size_t)ny * sizeof *got);
                pdnn_tensor_release(tx);
                pdnn_tensor_release(td);
                pdnn_tensor_release(tg);
                pdnn_tensor_release(ty);
                if (st == PDNN_ERR_UNSUPPORTED) {
                    parity_skip(devs[di], a, cname, pdnn_last_error());
                    continue;
                }
                if (st != PDNN_SUCCESS) {
                    parity_fail(devs[di], a, cname, "%s", pdnn_last_error());
                    continue;
                }
                double m = 1e-30, worst = 0;
                int64_t at = 0;
                for (int64_t i = 0; i < ny; i++)
                    m = fmax(m, fabs(ref[which][i]));
                for (int64_t i = 0; i < ny; i++) {
                    const double e = fabs((double)got[i] - ref[which][i]) / m;
                    if (!(e <= worst))
                        worst = isnan(e) ? INFINITY : e, at = i;
                }
                const double tol = pdnn__algo_tol(a, PDNN_FLOAT32);
                if (worst <= tol)
                    parity_pass(devs[di], a, cname, worst);
                else
                    parity_fail(devs[di], a, cname, "y[%lld] is %.9g, expected %.9g: error %.3g, tolerance %.3g",
                                (long long)at, (double)got[at], ref[which][at], worst, tol);
            }
    }
    free(x);
    free(dy);
    free(g);
    free(got);
    for (int k = 0; k < 3; k++)
        free(ref[k]);
}

void parity_graph_grad_run(pdnn_device *host, pdnn_device *const *devs, int ndev, int op, const char *set,
                           const char *algo, int verbose)
{
    for (int i = 0; i < N_CASES; i++)
        if (selected(&cases[i], op, set)) {
            if (op < 0 && !algo)
                run_case(host, devs, ndev, &cases[i], i, verbose);
            if (cases[i].k == LN)
                ln_bwd_op_case(devs, ndev, &cases[i], i, algo);
            fflush(stdout);
        }
}
