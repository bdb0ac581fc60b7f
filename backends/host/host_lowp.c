/* Reduced precision on the host. The reference's contract for float16
 * and bfloat16 (docs/precision.md): widen every input to float32 (exact),
 * compute with the float32 algorithm, round each output once to nearest
 * even. One wrapper for every op (pdnn__backend.run_reduced): the op's
 * float buffers are listed below, each widened into a float32 copy, the
 * call pointed at the copies, the algorithm run, the outputs rounded
 * back. And Cast's host algorithm. */
#include "backends/host/host_internal.h"
#include "core/half.h"

#include <stdlib.h>
#include <string.h>

enum { IN = 1, OUT = 2 };

typedef struct lowp_buf {
    pdnn__buf *b;  /* in the call's copy */
    int64_t n;     /* elements */
    int role;      /* IN, OUT or both */
} lowp_buf;

#define MAX_BUFS 16

/* Elements a strided walk of dims reaches: the largest offset + 1. */
static int64_t extent(int rank, const int64_t *dims, const int64_t *st)
{
    int64_t e = 1;
    for (int k = 0; k < rank; k++)
        e += (dims[k] - 1) * st[k];
    return e;
}

static int64_t prod(int rank, const int64_t *dims)
{
    int64_t e = 1;
    for (int k = 0; k < rank; k++)
        e *= dims[k];
    return e;
}

/* Elements of x an index call reads: along each axis the largest index
 * it names (-1 is the constant, not a read). */
static int64_t index_x_extent(const pdnn__index_call *c)
{
    int64_t e = 1, off = 0;
    for (int k = 0; k < c->rank; k++) {
        int64_t hi = 0;
        for (int64_t i = 0; i < c->dims[k]; i++) {
            if (c->idx[off + i] > hi)
                hi = c->idx[off + i];
            if (c->lerp == k && c->idx1 && c->idx1[i] > hi)
                hi = c->idx1[i];
        }
        e += hi * c->xs[k];
        off += c->dims[k];
    }
    return e;
}

#define ADD(buf, count, r)                                                                                   \
    do {                                                                                                     \
        l[n].b = &(buf);                                                                                     \
        l[n].n = (count);                                                                                    \
        l[n++].role = (r);                                                                                   \
    } while (0)

/* The float buffers of call (a copy the caller owns), their sizes and
 * roles; 0 for an op the wrapper does not take. */
static int list_bufs(pdnn__op_call *call, lowp_buf *l)
{
    int n = 0;
    pdnn__op_call *k = call;
    if (pdnn__op_is_conv(k->op)) {
        pdnn__conv2d_call *c = &k->u.conv2d;
        const int64_t nx = c->n * c->c * c->h * c->w, nw = c->k * (c->c / c->groups) * c->r * c->s;
        const int64_t ny = c->n * c->k * c->p * c->q;
        const pdnn__op op = k->op;
        ADD(c->x_buf, nx, op == PDNN__OP_CONV2D_BWD_DATA ? OUT : IN);
        ADD(c->w_buf, nw, op == PDNN__OP_CONV2D_BWD_FILTER ? OUT : IN);
        ADD(c->y_buf, ny, op == PDNN__OP_CONV2D_FWD ? OUT : IN);
        ADD(c->bias_buf, c->k, op == PDNN__OP_CONV2D_BWD_BIAS ? OUT : IN);
        ADD(c->z_buf, ny, IN);
        /* the packed filter of a frozen tensor would be packed from the
         * copy: the copy is packed in the workspace instead */
        c->w_const = NULL;
        c->wpack = (pdnn__buf){NULL, 0};
        return n;
    }
    if (pdnn__op_is_bn(k->op)) {
        pdnn__bn_call *c = &k->u.bn;
        const int64_t nx = c->n * c->c * c->h * c->w;
        const int train = k->op == PDNN__OP_BN_FWD_TRAIN, bwd = k->op == PDNN__OP_BN_BWD;
        ADD(c->x_buf, nx, IN);
        ADD(c->y_buf, nx, bwd ? IN : OUT);
        ADD(c->gamma_buf, c->c, IN);
        ADD(c->beta_buf, c->c, IN);
        ADD(c->running_mean_buf, c->c, train ? IN | OUT : IN);
        ADD(c->running_var_buf, c->c, train ? IN | OUT : IN);
        ADD(c->saved_mean_buf, c->c, train ? OUT : IN);
        ADD(c->saved_inv_std_buf, c->c, train ? OUT : IN);
        ADD(c->dy_buf, nx, IN);
        ADD(c->dx_buf, nx, OUT);
        ADD(c->dgamma_buf, c->c, OUT);
        ADD(c->dbeta_buf, c->c, OUT);
        return n;
    }
    switch (k->op) {
    case PDNN__OP_POOL2D_FWD:
    case PDNN__OP_POOL2D_BWD: {
        pdnn__pool2d_call *c = &k->u.pool2d;
        const int64_t nx = c->n * c->c * c->h * c->w, ny = c->n * c->c * c->p * c->q;
        const int bwd = k->op == PDNN__OP_POOL2D_BWD;
        ADD(c->x_buf, nx, IN);
        ADD(c->y_buf, ny, bwd ? IN : OUT);
        ADD(c->dy_buf, ny, IN);
        ADD(c->dx_buf, nx, OUT);
        return n;
    }
    case PDNN__OP_RELU_BWD:
        ADD(k->u.relu_bwd.y_buf, k->u.relu_bwd.n, IN);
        ADD(k->u.relu_bwd.dy_buf, k->u.relu_bwd.n, IN);
        ADD(k->u.relu_bwd.dx_buf, k->u.relu_bwd.n, OUT);
        return n;
    case PDNN__OP_SOFTMAX_XENT: /* labels stay int32 */
        ADD(k->u.xent.logits_buf, k->u.xent.n * k->u.xent.k, IN);
        ADD(k->u.xent.loss_buf, 1, OUT);
        ADD(k->u.xent.dlogits_buf, k->u.xent.n * k->u.xent.k, OUT);
        return n;
    case PDNN__OP_OPTIMIZER:
        ADD(k->u.optim.w_buf, k->u.optim.n, IN | OUT);
        ADD(k->u.optim.g_buf, k->u.optim.n, IN);
        ADD(k->u.optim.s1_buf, k->u.optim.n, IN | OUT);
        ADD(k->u.optim.s2_buf, k->u.optim.n, IN | OUT);
        return n;
    case PDNN__OP_GEMM: {
        pdnn__matmul_call *c = &k->u.matmul;
        const int64_t nb = pdnn__matmul_batch(c) - 1; /* the last matrix's offsets (backend.h) */
        ADD(c->a_buf, nb * c->stride_a + c->m * c->k, IN);
        ADD(c->b_buf, nb * c->stride_b + c->k * c->n, IN);
        ADD(c->c_buf, (nb + 1) * c->m * c->n, OUT);
        return n;
    }
    case PDNN__OP_SCALE:
        ADD(k->u.scale.x_buf, k->u.scale.n, IN);
        ADD(k->u.scale.y_buf, k->u.scale.n, OUT);
        return n;
    case PDNN__OP_ACTIVATION:
        ADD(k->u.act.x_buf, k->u.act.n, IN);
        ADD(k->u.act.y_buf, k->u.act.n, OUT);
        return n;
    case PDNN__OP_TRANSFORM:
        ADD(k->u.transform.x_buf, prod(4, k->u.transform.dims), IN);
        ADD(k->u.transform.y_buf, prod(4, k->u.transform.dims), OUT);
        return n;
    case PDNN__OP_BINARY: {
        pdnn__binary_call *c = &k->u.binary;
        ADD(c->a_buf, extent(PDNN_MAX_RANK, c->dims, c->as), IN);
        ADD(c->b_buf, extent(PDNN_MAX_RANK, c->dims, c->bs), IN);
        ADD(c->y_buf, prod(PDNN_MAX_RANK, c->dims), OUT);
        return n;
    }
    case PDNN__OP_PAD: {
        pdnn__pad_call *c = &k->u.pad;
        const int64_t *d = c->dims, *p = c->pads;
        ADD(c->x_buf, prod(4, d), IN);
        ADD(c->y_buf, d[0] * d[1] * (d[2] + p[0] + p[2]) * (d[3] + p[1] + p[3]), OUT);
        return n;
    }
    case PDNN__OP_ND_TRANSPOSE:
        ADD(k->u.transpose.x_buf, prod(k->u.transpose.rank, k->u.transpose.dims), IN);
        ADD(k->u.transpose.y_buf, prod(k->u.transpose.rank, k->u.transpose.dims), OUT);
        return n;
    case PDNN__OP_ND_SOFTMAX: {
        const int64_t e = k->u.softmax.outer * k->u.softmax.n * k->u.softmax.inner;
        ADD(k->u.softmax.x_buf, e, IN);
        ADD(k->u.softmax.y_buf, e, OUT);
        return n;
    }
    case PDNN__OP_ND_LAYER_NORM: {
        pdnn__layer_norm_call *c = &k->u.layer_norm;
        ADD(c->x_buf, c->rows * c->cols, IN);
        ADD(c->scale_buf, c->cols, IN);
        ADD(c->bias_buf, c->cols, IN);
        ADD(c->y_buf, c->rows * c->cols, OUT);
        return n;
    }
    case PDNN__OP_ND_REDUCE: {
        pdnn__reduce_call *c = &k->u.reduce;
        int64_t ny = 1;
        for (int a = 0; a < c->rank; a++)
            ny *= (c->axes >> a & 1u) ? 1 : c->dims[a];
        ADD(c->x_buf, prod(c->rank, c->dims), IN);
        ADD(c->y_buf, ny, OUT);
        return n;
    }
    case PDNN__OP_INDEX: {
        pdnn__index_call *c = &k->u.index;
        ADD(c->x_buf, index_x_extent(c), IN);
        ADD(c->y_buf, extent(c->rank, c->dims, c->ys), OUT);
        return n;
    }
    case PDNN__OP_WHERE: {
        pdnn__where_call *c = &k->u.where;
        ADD(c->m_buf, extent(c->rank, c->dims, c->ms), IN);
        ADD(c->a_buf, extent(c->rank, c->dims, c->as), IN);
        ADD(c->b_buf, extent(c->rank, c->dims, c->bs), IN);
        ADD(c->y_buf, extent(c->rank, c->dims, c->ys), OUT);
        return n;
    }
    default:
        return 0;
    }
}

static void *host_at(pdnn__buf b) { return (char *)b.region + b.offset; }

pdnn_status pdnn__host_run_reduced(void *dev, const pdnn__algo *a, const pdnn__op_call *call, const pdnn__plan *plan,
                                   pdnn__buf ws, pdnn__run_report *rep)
{
    pdnn__op_call c32 = *call;
    c32.dtype = PDNN_FLOAT32;
    lowp_buf l[MAX_BUFS];
    const int n = list_bufs(&c32, l);
    if (n == 0)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "host: no reduced-precision path for op %d", (int)call->op);
    float *copy[MAX_BUFS] = {NULL};
    pdnn__buf orig[MAX_BUFS];
    int owner[MAX_BUFS]; /* the earlier entry whose copy an alias shares; -1: its own */
    pdnn_status st = PDNN_SUCCESS;
    for (int i = 0; i < n && st == PDNN_SUCCESS; i++) {
        orig[i] = *l[i].b;
        owner[i] = -1;
        if (!orig[i].region)
            continue;
        /* A buffer given twice (y may be x) is one copy, so an in-place
         * call stays in place. */
        for (int j = 0; j < i && owner[i] < 0; j++)
            if (orig[j].region == orig[i].region && orig[j].offset == orig[i].offset && l[j].n >= l[i].n)
                owner[i] = owner[j] >= 0 ? owner[j] : j;
        if (owner[i] >= 0) {
            l[owner[i]].role |= l[i].role;
            *l[i].b = (pdnn__buf){copy[owner[i]], 0};
            continue;
        }
        copy[i] = malloc((size_t)l[i].n * sizeof(float));
        if (!copy[i]) {
            st = pdnn__error(PDNN_ERR_OUT_OF_MEMORY, "host: %lld floats for a reduced-precision copy",
                             (long long)l[i].n);
            break;
        }
        /* outputs too: an op may leave part of one as it was */
        pdnn__to_f32(call->dtype, host_at(orig[i]), copy[i], (size_t)l[i].n);
        *l[i].b = (pdnn__buf){copy[i], 0};
    }
    if (st == PDNN_SUCCESS)
        st = a->run(dev, &c32, plan, ws, rep);
    /* The outputs are rounded back only when run succeeded: a failed
     * run leaves them unspecified, as in float32. */
    for (int i = 0; i < n; i++) {
        if (copy[i] && st == PDNN_SUCCESS && (l[i].role & OUT))
            pdnn__from_f32(call->dtype, copy[i], host_at(orig[i]), (size_t)l[i].n);
        free(copy[i]);
    }
    return st;
}

/* ---- Cast ----------------------------------------------------------------- */

static void host_cast_plan(void *dev, const pdnn__op_call *call, pdnn__plan *plan)
{
    (void)dev;
    (void)call;
    (void)plan;
}

static pdnn_status host_cast(void *dev, const pdnn__op_call *call, const pdnn__plan *plan, pdnn__buf ws,
                             pdnn__run_report *rep)
{
    (void)dev;
    (void)plan;
    (void)ws;
    (void)rep;
    const pdnn__cast_call *c = &call->u.cast;
    const char *x = host_at(c->x_buf);
    char *y = host_at(c->y_buf);
    const size_t n = (size_t)c->n, xs = pdnn__dtype_size(c->from), ys = pdnn__dtype_size(c->to);
    if (c->from == c->to) {
        memcpy(y, x, n * xs);
    } else if (c->from == PDNN_FLOAT32) {
        pdnn__from_f32(c->to, (const float *)(const void *)x, y, n);
    } else if (c->to == PDNN_FLOAT32) {
        pdnn__to_f32(c->from, x, (float *)(void *)y, n);
    } else { /* float16 <-> bfloat16 through float32, a block at a time */
        float t[1024];
        for (size_t i = 0; i < n; i += 1024) {
            const size_t m = n - i < 1024 ? n - i : 1024;
            pdnn__to_f32(c->from, x + i * xs, t, m);
            pdnn__from_f32(c->to, t, y + i * ys, m);
        }
    }
    return PDNN_SUCCESS;
}

const pdnn__algo pdnn__host_cast_direct = {
    .op = PDNN__OP_CAST, .name = "direct", .rank = 100, .plan = host_cast_plan, .run = host_cast,
    .tol = {.of = {PDNN__TOL_EXACT, PDNN__TOL_EXACT, PDNN__TOL_EXACT}}, .dtypes = PDNN__DTYPES_FLOAT,
};
