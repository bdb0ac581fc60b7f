/*
 * The N-d cases of the op-parity harness (test mode): the registry ops
 * that take PDNN_ND tensors of any rank (binary with numpy broadcasting,
 * matmul with numpy's batch broadcasting and rank-1 operands, the
 * activations, the transform where it is a copy), at ranks 0 to 6, run on
 * every device by every algorithm of the op (forced by name) and compared
 * with naive loops in double written here over numpy's index rules:
 *   binary      |got - ref| / |ref| (one rounding);
 *   matmul      |got - ref| / (sum over p of |a b| + 1e-30) per element;
 *   activation  |got - ref| / max(|ref|, 1);
 *   transform   exact (a copy).
 * Each within its algorithm's tolerance (pdnn__algo.tol).
 * Under parity --dtype float16|bfloat16 (matmul only; issue 43) the
 * operands are stored in that dtype, rounded to it before the reference
 * sees them, and the reference is the host's contract (widen, sum, round
 * once to the dtype); the normaliser's floor is the dtype's smallest
 * normal, and the bound the algorithm's for the dtype.
 */
#include "core/context.h"
#include "core/half.h"
#include "ops/dispatch.h"
#include "helpers.h"
#include "parity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { R = PDNN_MAX_RANK };

typedef struct shape {
    pdnn_layout layout; /* PDNN_ND, or an image layout / X (dims as 4) */
    int rank;
    int64_t d[R];
} shape;

typedef struct nd_case {
    const char *set;
    pdnn__op op;
    int arg;    /* binary: pdnn_binary_op; matmul: 2 trans_a + trans_b; activation: pdnn_activation */
    shape a, b; /* binary, matmul: the operands; activation, transform: x (a), transform's y (b) */
} nd_case;

/* The operands' storage dtype (parity_nd_set_dtype). */
static pdnn_dtype nd_dtype = PDNN_FLOAT32;
static int nd_reduced(void) { return nd_dtype == PDNN_FLOAT16 || nd_dtype == PDNN_BFLOAT16; }

void parity_nd_set_dtype(pdnn_dtype t) { nd_dtype = t; }

/* v[0..n) rounded to nd_dtype, widened back (nearest, ties to even). */
static void round_nd(float *v, int64_t n)
{
    for (int64_t i = 0; nd_reduced() && i < n; i++)
        v[i] = nd_dtype == PDNN_FLOAT16 ? pdnn__f16_to_f32(pdnn__f32_to_f16(v[i]))
                                        : pdnn__bf16_to_f32(pdnn__f32_to_bf16(v[i]));
}

#define ND(r, ...) {PDNN_ND, r, {__VA_ARGS__}}
#define SC {PDNN_ND, 0, {0}}

static const nd_case cases[] = {
    /* Broadcasting corner cases: scalars, a rank-1 side, both sides
     * repeating, alternating repeats that merge to no fewer axes, all
     * ones, batch 17, odd sizes, X with ND. */
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_ADD, SC, SC},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_SUB, SC, ND(3, 2, 3, 5)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_DIV, ND(3, 2, 3, 5), SC},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_MUL, ND(1, 5), ND(2, 3, 1)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_SUB, ND(1, 7), ND(1, 7)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_DIV, ND(2, 17, 33), ND(1, 33)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_ADD, ND(3, 17, 1, 3), ND(2, 4, 1)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_MUL, ND(2, 3, 4), ND(4, 2, 1, 3, 4)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_ADD, ND(5, 2, 1, 3, 1, 5), ND(5, 1, 4, 1, 6, 1)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_SUB, ND(6, 2, 3, 1, 5, 1, 7), ND(5, 3, 4, 1, 6, 1)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_MUL, ND(6, 1, 1, 1, 1, 1, 1), SC},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_DIV, ND(6, 2, 3, 4, 5, 1, 3), ND(6, 2, 3, 4, 5, 2, 3)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_SUB, ND(4, 1, 3, 1, 1), ND(4, 2, 1, 5, 7)},
    {"nd_binary", PDNN__OP_BINARY, PDNN_BINARY_ADD, {PDNN_LAYOUT_X, 1, {37, 1, 1, 1}}, ND(2, 3, 37)},
    /* numpy's matmul: rank-1 operands (a row, a column, both: a scalar),
     * a batch against one matrix (folded into one GEMM), batches that
     * broadcast on both sides up to rank 6, transposes, an NCHW matrix
     * as an operand. */
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(1, 3), ND(1, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(1, 4), ND(2, 4, 5)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(2, 5, 4), ND(1, 4)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(2, 7, 4), ND(2, 4, 5)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(2, 7, 4), ND(2, 5, 4)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 2, 7, 4), ND(2, 4, 5)},
    {"nd_matmul", PDNN__OP_GEMM, 2, ND(3, 2, 4, 7), ND(2, 4, 5)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(3, 2, 7, 4), ND(3, 2, 5, 4)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 2, 7, 4), ND(3, 2, 4, 5)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(4, 17, 1, 3, 4), ND(3, 5, 4, 6)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(1, 4), ND(3, 2, 4, 5)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 2, 3, 4), ND(1, 4)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(5, 3, 1, 2, 7, 4), ND(5, 1, 5, 1, 4, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(6, 2, 1, 3, 1, 5, 4), ND(6, 1, 2, 1, 3, 3, 4)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 1, 1, 1), ND(2, 1, 1)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 2, 3, 4), {PDNN_NCHW, 2, {4, 5, 1, 1}}},
    /* Strided batches (one dispatch each): batch 1 and 17, m, n, k of 1,
     * 3 and 17, every transpose pair, a broadcast on either side, batch
     * dims that merge (attention's {B,H,S,D} @ {B,H,D,S}) and that do
     * not ({B,1} @ {1,H}: B dispatches of H). */
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 1, 3, 17), ND(3, 1, 17, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 17, 3, 17), ND(3, 17, 17, 1)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 17, 1, 3), ND(3, 17, 3, 17)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(3, 17, 1, 17), ND(3, 17, 3, 17)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(3, 17, 17, 3), ND(3, 17, 17, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 2, ND(3, 17, 17, 3), ND(3, 17, 17, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 3, ND(3, 17, 3, 1), ND(3, 17, 17, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 2, ND(3, 17, 17, 3), ND(2, 17, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 3, ND(4, 17, 1, 3, 17), ND(4, 1, 1, 3, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(2, 3, 17), ND(3, 17, 17, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(2, 1, 3), ND(3, 17, 17, 3)},
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(4, 2, 3, 17, 5), ND(4, 2, 3, 5, 17)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(4, 3, 1, 3, 5), ND(4, 1, 17, 17, 5)},
    {"nd_matmul", PDNN__OP_GEMM, 2, ND(5, 2, 1, 3, 5, 3), ND(4, 3, 1, 5, 17)},
    /* tiled's kernels past their vector loops (the reduced dtypes' 8-wide
     * loads and stores, parity --dtype): gemm_nn's full 6 x 16 tiles, a
     * sum of 8s and a tail, B broadcast; its transposed A; gemm_nt's
     * 3 x 4 tiles and column tail; gemv_nt's 8 columns and tail. */
    {"nd_matmul", PDNN__OP_GEMM, 0, ND(3, 2, 13, 27), ND(2, 27, 35)},
    {"nd_matmul", PDNN__OP_GEMM, 2, ND(3, 2, 19, 13), ND(3, 2, 19, 10)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(3, 2, 7, 19), ND(3, 2, 9, 19)},
    {"nd_matmul", PDNN__OP_GEMM, 1, ND(2, 1, 21), ND(3, 2, 11, 21)},
    /* Every activation at ranks 0 to 6. */
    {"nd_activation", PDNN__OP_ACTIVATION, PDNN_ACTIVATION_SIGMOID, SC, SC},
    {"nd_activation", PDNN__OP_ACTIVATION, PDNN_ACTIVATION_CLIP, ND(1, 4099), SC},
    {"nd_activation", PDNN__OP_ACTIVATION, PDNN_ACTIVATION_LEAKY_RELU, ND(2, 17, 5), SC},
    {"nd_activation", PDNN__OP_ACTIVATION, PDNN_ACTIVATION_HARD_SIGMOID, ND(3, 3, 5, 7), SC},
    {"nd_activation", PDNN__OP_ACTIVATION, PDNN_ACTIVATION_HARD_SWISH, ND(4, 1, 3, 5, 2), SC},
    {"nd_activation", PDNN__OP_ACTIVATION, PDNN_ACTIVATION_SILU, ND(5, 2, 1, 3, 2, 5), SC},
    {"nd_activation", PDNN__OP_ACTIVATION, PDNN_ACTIVATION_SIGMOID, ND(6, 2, 3, 1, 2, 3, 5), SC},
    /* The transform with an ND side is a copy in memory order. */
    {"nd_transform", PDNN__OP_TRANSFORM, 0, SC, SC},
    {"nd_transform", PDNN__OP_TRANSFORM, 0, ND(3, 3, 5, 7), ND(3, 3, 5, 7)},
    {"nd_transform", PDNN__OP_TRANSFORM, 0, {PDNN_NCHW, 4, {2, 3, 4, 5}}, ND(4, 2, 3, 4, 5)},
    {"nd_transform", PDNN__OP_TRANSFORM, 0, {PDNN_NHWC, 4, {2, 3, 4, 5}}, ND(4, 2, 4, 5, 3)},
    {"nd_transform", PDNN__OP_TRANSFORM, 0, ND(6, 17, 1, 2, 3, 1, 2), {PDNN_NCHW, 4, {17, 2, 3, 2}}},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static int selected(const nd_case *c, int op, const char *set)
{
    return (op < 0 || op == (int)c->op) && (!set || strcmp(set, c->set) == 0);
}

int parity_nd_count(int op, const char *set)
{
    int n = 0;
    for (int i = 0; i < N_CASES; i++)
        n += selected(&cases[i], op, set);
    return n;
}

static pdnn_tensor_desc desc_of(const shape *s)
{
    pdnn_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = nd_dtype;
    d.layout = s->layout;
    d.rank = s->layout == PDNN_ND ? s->rank : 4;
    for (int i = 0; i < R; i++)
        d.dims[i] = i < d.rank ? s->d[i] : 1;
    return d;
}

/* The shape numpy sees: ND as is, X rank 1, an image matrix {R,C,1,1} rank 2. */
static int np_shape(const shape *s, int64_t *d)
{
    const int r = s->layout == PDNN_ND ? s->rank : s->layout == PDNN_LAYOUT_X ? 1 : 2;
    for (int i = 0; i < r; i++)
        d[i] = s->d[i];
    return r;
}

static int64_t count(const int64_t *d, int r)
{
    int64_t n = 1;
    for (int i = 0; i < r; i++)
        n *= d[i];
    return n;
}

/* Flat row-major offset in an operand of rank r (dims d) of y's index
 * idx (rank ry), broadcast as numpy does (aligned from the right). */
static int64_t bcast_off(const int64_t *idx, int ry, const int64_t *d, int r)
{
    int64_t off = 0;
    for (int i = 0; i < r; i++)
        off = off * d[i] + (d[i] == 1 ? 0 : idx[i + ry - r]);
    return off;
}

static void step(int64_t *idx, const int64_t *d, int r)
{
    for (int i = r - 1; i >= 0; i--) {
        if (++idx[i] < d[i])
            return;
        idx[i] = 0;
    }
}

typedef struct ref_out {
    shape y;     /* the output's shape */
    double *v;   /* its values, row-major */
    double *mag; /* matmul: sum |a b| per element */
    int64_t n;
} ref_out;

static double act_ref(int mode, double x)
{
    switch (mode) {
    case PDNN_ACTIVATION_CLIP: return x < -0.5 ? -0.5 : x > 0.75 ? 0.75 : x;
    case PDNN_ACTIVATION_LEAKY_RELU: return x >= 0 ? x : 0.1 * x;
    case PDNN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PDNN_ACTIVATION_HARD_SIGMOID: return fmax(0.0, fmin(1.0, 0.2 * x + 0.5));
    case PDNN_ACTIVATION_HARD_SWISH: return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    default: return x / (1.0 + exp(-x));
    }
}

static const float act_alpha[] = {-0.5f, 0.1f, 0, 0.2f, 0, 0}, act_beta[] = {0.75f, 0, 0, 0.5f, 0, 0};

/* The reference output of c from a (and b). */
static void reference(const nd_case *c, const float *a, const float *b, ref_out *o)
{
    int64_t ad[R] = {0}, bd[R] = {0}, yd[R + 2], idx[R + 2];
    const int ra = np_shape(&c->a, ad), rb = np_shape(&c->b, bd);
    int ry = 0;
    memset(o, 0, sizeof *o);
    o->y.layout = PDNN_ND;
    if (c->op == PDNN__OP_BINARY) {
        ry = ra > rb ? ra : rb;
        for (int i = 0; i < ry; i++) {
            const int64_t x = i < ry - ra ? 1 : ad[i - (ry - ra)], y = i < ry - rb ? 1 : bd[i - (ry - rb)];
            yd[i] = x > y ? x : y;
        }
    } else if (c->op == PDNN__OP_GEMM) {
        const int ta = (c->arg & 2) != 0, tb = c->arg & 1;
        const int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0, nbt = na > nb ? na : nb;
        for (int i = 0; i < nbt; i++) {
            const int64_t x = i < nbt - na ? 1 : ad[i - (nbt - na)], y = i < nbt - nb ? 1 : bd[i - (nbt - nb)];
            yd[ry++] = x > y ? x : y;
        }
        const int64_t m = ra == 1 ? 1 : ad[ra - (ta ? 1 : 2)], n = rb == 1 ? 1 : bd[rb - (tb ? 2 : 1)];
        const int64_t k = ra == 1 ? ad[0] : ad[ra - (ta ? 2 : 1)];
        const int64_t batch = count(yd, ry);
        if (ra > 1)
            yd[ry++] = m;
        if (rb > 1)
            yd[ry++] = n;
        o->n = batch * m * n;
        o->v = parity_xcalloc((size_t)o->n, sizeof(double));
        o->mag = parity_xcalloc((size_t)o->n, sizeof(double));
        memset(idx, 0, sizeof idx);
        const int64_t am = ra == 1 ? 1 : ad[ra - 2], an = ad[ra - 1], bm = rb == 1 ? bd[0] : bd[rb - 2],
                      bn = rb == 1 ? 1 : bd[rb - 1];
        for (int64_t t = 0; t < batch; t++) {
            /* The batch index against each operand's batch dims. */
            int64_t abase = 0, bbase = 0;
            for (int i = 0; i < na; i++)
                abase = abase * ad[i] + (ad[i] == 1 ? 0 : idx[i + nbt - na]);
            for (int i = 0; i < nb; i++)
                bbase = bbase * bd[i] + (bd[i] == 1 ? 0 : idx[i + nbt - nb]);
            abase *= am * an, bbase *= bm * bn;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double s = 0, g = 0;
                    for (int64_t p = 0; p < k; p++) {
                        const double x = a[abase + (ta ? p * an + i : i * an + p)];
                        const double y = b[bbase + (tb ? j * bn + p : p * bn + j)];
                        s += x * y, g += fabs(x * y);
                    }
                    o->v[(t * m + i) * n + j] = s;
                    o->mag[(t * m + i) * n + j] = g;
                }
            step(idx, yd, nbt);
        }
        o->y.rank = ry;
        memcpy(o->y.d, yd, (size_t)ry * sizeof yd[0]);
        return;
    } else if (c->a.layout != PDNN_ND) { /* a transform from an image layout: its elements in memory order */
        const pdnn_tensor_desc d = desc_of(&c->a);
        ry = 1;
        yd[0] = pdnn_tensor_desc_elements(&d);
    } else {
        ry = ra;
        memcpy(yd, ad, (size_t)ra * sizeof ad[0]);
    }
    o->y.rank = ry;
    memcpy(o->y.d, yd, (size_t)ry * sizeof yd[0]);
    o->n = count(yd, ry);
    o->v = parity_xcalloc((size_t)o->n, sizeof(double));
    memset(idx, 0, sizeof idx);
    for (int64_t t = 0; t < o->n; t++) {
        const double x = a[c->op == PDNN__OP_BINARY ? bcast_off(idx, ry, ad, ra) : t];
        if (c->op == PDNN__OP_BINARY) {
            const double y = b[bcast_off(idx, ry, bd, rb)];
            o->v[t] = c->arg == PDNN_BINARY_ADD ? x + y : c->arg == PDNN_BINARY_MUL ? x * y
                      : c->arg == PDNN_BINARY_SUB ? x - y : x / y;
        } else if (c->op == PDNN__OP_ACTIVATION) {
            o->v[t] = act_ref(c->arg, x);
        } else {
            o->v[t] = x; /* transform: the same memory order */
        }
        step(idx, yd, ry);
    }
}

/* A tensor of d on dev holding v (float, stored in d's dtype). */
static pdnn_tensor *make_from(pdnn_device *dev, const pdnn_tensor_desc *d, const float *v)
{
    if (!nd_reduced())
        return parity_make(dev, d, v);
    const size_t n = (size_t)pdnn_tensor_desc_elements(d);
    void *raw = parity_xcalloc(n + 1, 2);
    pdnn__from_f32(d->dtype, v, raw, n);
    pdnn_tensor *t = parity_make(dev, d, raw);
    free(raw);
    return t;
}

static pdnn_status run_one(pdnn_device *dev, const nd_case *c, const ref_out *o, const float *a, const float *b,
                           float *got)
{
    const pdnn_tensor_desc ad = desc_of(&c->a), bd = desc_of(&c->b);
    const pdnn_tensor_desc yd = c->op == PDNN__OP_TRANSFORM ? bd : desc_of(&o->y);
    pdnn_tensor *x = make_from(dev, &ad, a), *w = NULL, *y = parity_make(dev, &yd, NULL);
    if (c->op == PDNN__OP_BINARY || c->op == PDNN__OP_GEMM)
        w = make_from(dev, &bd, b);
    pdnn_status st = !x || !y || ((c->op == PDNN__OP_BINARY || c->op == PDNN__OP_GEMM) && !w) ? PDNN_ERR_OUT_OF_MEMORY
                     : c->op == PDNN__OP_BINARY ? pdnn_binary(x, w, (pdnn_binary_op)c->arg, y)
                     : c->op == PDNN__OP_GEMM   ? pdnn_matmul(x, w, (c->arg & 2) != 0, c->arg & 1, y)
                     : c->op == PDNN__OP_ACTIVATION
                         ? pdnn_activation_forward(x, (pdnn_activation)c->arg, act_alpha[c->arg], act_beta[c->arg], y)
                         : pdnn_transform(x, y);
    if (st == PDNN_SUCCESS && nd_reduced()) { /* y's elements widened */
        void *raw = parity_xcalloc((size_t)o->n + 1, 2);
        st = pdnn_tensor_read(y, raw, (size_t)o->n * 2);
        pdnn__to_f32(nd_dtype, raw, got, (size_t)o->n);
        free(raw);
    } else if (st == PDNN_SUCCESS) {
        st = pdnn_tensor_read(y, got, (size_t)o->n * sizeof(float));
    }
    pdnn_tensor_release(x);
    pdnn_tensor_release(w);
    pdnn_tensor_release(y);
    return st;
}

static double compare(const nd_case *c, const ref_out *o, const float *got, int64_t *at)
{
    double worst = 0.0;
    *at = 0;
    /* Below its smallest normal a reduced dtype rounds in fixed steps. */
    const double tiny = nd_dtype == PDNN_FLOAT16 ? 0x1p-14 : nd_dtype == PDNN_BFLOAT16 ? 0x1p-126 : 1e-30;
    for (int64_t i = 0; i < o->n; i++) {
        const double d = fabs((double)got[i] - o->v[i]);
        const double e = c->op == PDNN__OP_TRANSFORM    ? (d == 0.0 ? 0.0 : INFINITY)
                         : c->op == PDNN__OP_GEMM       ? d / fmax(o->mag[i], tiny)
                         : c->op == PDNN__OP_ACTIVATION ? d / fmax(fabs(o->v[i]), 1.0)
                         : o->v[i] != 0.0               ? d / fabs(o->v[i])
                                                        : d;
        if (!(e <= worst)) {
            worst = isnan(e) ? INFINITY : e;
            *at = i;
        }
    }
    return worst;
}

static void shape_name(const shape *s, char *buf, size_t len)
{
    int64_t d[R];
    const int r = s->layout == PDNN_ND ? s->rank : 4;
    for (int i = 0; i < r; i++)
        d[i] = s->d[i];
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < r && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? "," : "", (long long)d[i]);
    if (at < len)
        snprintf(buf + at, len - at, "]%s%s", s->layout == PDNN_ND ? "" : " ",
                 s->layout == PDNN_ND ? "" : pdnn_layout_name(s->layout));
}

void parity_nd_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo)
{
    static const char *const bops[] = {"add", "mul", "sub", "div"};
    static const char *const acts[] = {"clip", "leaky_relu", "sigmoid", "hard_sigmoid", "hard_swish", "silu"};
    for (int ci = 0; ci < N_CASES; ci++) {
        const nd_case *c = &cases[ci];
        if (!selected(c, op, set) || (nd_reduced() && c->op != PDNN__OP_GEMM))
            continue;
        char sa[96], sb[96], cname[256];
        shape_name(&c->a, sa, sizeof sa);
        shape_name(&c->b, sb, sizeof sb);
        if (c->op == PDNN__OP_BINARY)
            snprintf(cname, sizeof cname, "%s %s a%s b%s", c->set, bops[c->arg], sa, sb);
        else if (c->op == PDNN__OP_GEMM)
            snprintf(cname, sizeof cname, "%s a%s%s b%s%s%s%s", c->set, sa, c->arg & 2 ? "^T" : "", sb,
                     c->arg & 1 ? "^T" : "", nd_reduced() ? " " : "", nd_reduced() ? pdnn__dtype_name(nd_dtype) : "");
        else if (c->op == PDNN__OP_ACTIVATION)
            snprintf(cname, sizeof cname, "%s %s x%s", c->set, acts[c->arg], sa);
        else
            snprintf(cname, sizeof cname, "%s x%s -> y%s", c->set, sa, sb);
        const pdnn_tensor_desc ad = desc_of(&c->a), bd = desc_of(&c->b);
        const int64_t na = pdnn_tensor_desc_elements(&ad), nb = pdnn_tensor_desc_elements(&bd);
        float *a = parity_xcalloc((size_t)na, sizeof(float)), *b = parity_xcalloc((size_t)nb, sizeof(float));
        th_fill(a, na, 2000u + (uint32_t)ci * 13u);
        th_fill(b, nb, 3000u + (uint32_t)ci * 13u);
        if (c->op == PDNN__OP_ACTIVATION)
            for (int64_t i = 0; i < na; i++)
                a[i] *= 6.0f; /* past every activation's corners */
        round_nd(a, na);
        round_nd(b, nb);
        ref_out o;
        reference(c, a, b, &o);
        for (int64_t i = 0; nd_reduced() && i < o.n; i++) { /* the contract's one rounding */
            float v = (float)o.v[i];
            round_nd(&v, 1);
            o.v[i] = v;
        }
        float *got = parity_xcalloc((size_t)o.n, sizeof(float));
        for (int di = 0; di < ndev; di++) {
            const pdnn__algo *const *list = pdnn__algos(devs[di], c->op);
            for (int ai = 0; list && list[ai]; ai++) {
                const pdnn__algo *al = list[ai];
                if (algo && strcasecmp(algo, al->name) != 0)
                    continue;
                for (int64_t i = 0; i < o.n; i++)
                    got[i] = NAN;
                pdnn__dispatch_force(c->op, al->name, -1);
                const pdnn_status st = run_one(devs[di], c, &o, a, b, got);
                pdnn__dispatch_force(c->op, NULL, -1);
                if (st == PDNN_ERR_UNSUPPORTED) {
                    parity_skip(devs[di], al, cname, pdnn_last_error());
                    continue;
                }
                if (st != PDNN_SUCCESS) {
                    parity_fail(devs[di], al, cname, "%s (%s)", pdnn_last_error(), pdnn_status_string(st));
                    continue;
                }
                int64_t at = 0;
                const double tol = pdnn__algo_tol(al, nd_dtype), err = compare(c, &o, got, &at);
                if (!(err <= tol)) {
                    parity_fail(devs[di], al, cname,
                                "y[%lld] (row-major) is %.9g, expected %.9g: normalised error %.3g, tolerance %.3g",
                                (long long)at, (double)got[at], o.v[at], err, tol);
                    continue;
                }
                parity_pass(devs[di], al, cname, err);
            }
        }
        free(got);
        free(o.v);
        free(o.mag);
        free(a);
        free(b);
    }
    fflush(stdout);
}
