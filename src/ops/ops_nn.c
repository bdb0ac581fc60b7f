/* The ops around convolution (add, add_n, bias_add, relu, activations,
 * softmax, matmul, reshape, concat): validate in core, dispatch to the device holding the tensors. */
#include "core/context.h"
#include "ops/dispatch.h"
#include "core/half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int is_act(const pdnn_tensor *t) { return pdnn__act_layout(&t->desc) >= 0; }

pdnn_status pdnn__ops_need(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!ts[i])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, names[i]);
    for (int i = 0; i < n; i++) {
        if (ts[i]->dev != ts[0]->dev)
            return pdnn__device_mismatch(op, names[0], ts[0], names[i], ts[i]);
    }
    return pdnn__one_dtype(op, ts, names, n);
}

#define need pdnn__ops_need

static pdnn_status same_shape(const char *op, const pdnn_tensor *a, const char *an, const pdnn_tensor *b,
                              const char *bn)
{
    if (!a || !b)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, !a ? an : bn);
    if (memcmp(a->desc.dims, b->desc.dims, sizeof a->desc.dims) == 0 && a->desc.layout == b->desc.layout)
        return PDNN_SUCCESS;
    char da[96], db[96];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is %s but %s is %s; they must match in dims and layout",
                       op, an, pdnn__desc_string(&a->desc, da, sizeof da), bn,
                       pdnn__desc_string(&b->desc, db, sizeof db));
}

static pdnn_status no_kernel(const char *op, const pdnn_device *dev)
{
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: the %s backend of %s has no kernel for it", op, dev->backend->name,
                       dev->name);
}

static int64_t numel(const pdnn_tensor *t) { return pdnn_tensor_desc_elements(&t->desc); }

/* The ops through a backend slot (add, add_n, bias_add, relu, softmax)
 * and concat's row copies compute float32 only: a tensor of another
 * dtype is refused here, never handed to them. */
static pdnn_status slot_f32(const char *op, const pdnn_tensor *t)
{
    if (t->desc.dtype == PDNN_FLOAT32)
        return PDNN_SUCCESS;
    return pdnn__error(PDNN_ERR_UNSUPPORTED, "%s: the %s backend has no %s path for it (float32 only)", op,
                       t->dev->backend->name, pdnn__dtype_name(t->desc.dtype));
}

pdnn_status pdnn_add(const pdnn_tensor *a, const pdnn_tensor *b, pdnn_tensor *y)
{
    const pdnn_tensor *ts[] = {a, b, y};
    const char *names[] = {"a", "b", "y"};
    pdnn_status st = need("pdnn_add", ts, names, 3);
    if (st == PDNN_SUCCESS)
        st = same_shape("pdnn_add", a, "a", b, "b");
    if (st == PDNN_SUCCESS)
        st = same_shape("pdnn_add", a, "a", y, "y");
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias("pdnn_add", y, "y", a, "a", 1);
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias("pdnn_add", y, "y", b, "b", 1);
    if (st != PDNN_SUCCESS)
        return st;
    if ((st = slot_f32("pdnn_add", a)) != PDNN_SUCCESS)
        return st;
    pdnn_device *d = a->dev;
    if (!d->backend->add)
        return no_kernel("pdnn_add", d);
    return d->backend->add(d->handle, a->block.buf, b->block.buf, y->block.buf, numel(a));
}

pdnn_status pdnn_add_n(const pdnn_tensor *const *inputs, int n, pdnn_tensor *y)
{
    if (!inputs || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_add_n: %s", !inputs ? "inputs is NULL"
                                                                              : "n must be at least 1");
    const pdnn_tensor *pair[] = {inputs[0], y};
    const char *pn[] = {"inputs[0]", "y"};
    pdnn_status st = need("pdnn_add_n", pair, pn, 2);
    if (st == PDNN_SUCCESS)
        st = same_shape("pdnn_add_n", inputs[0], "inputs[0]", y, "y");
    for (int i = 1; i < n && st == PDNN_SUCCESS; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "inputs[%d]", i);
        const pdnn_tensor *ts[] = {inputs[0], inputs[i]};
        const char *names[] = {"inputs[0]", nm};
        st = need("pdnn_add_n", ts, names, 2);
        if (st == PDNN_SUCCESS)
            st = same_shape("pdnn_add_n", inputs[0], "inputs[0]", inputs[i], nm);
        if (st == PDNN_SUCCESS && inputs[i] == y)
            st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_add_n: %s is also the output", nm);
        if (st == PDNN_SUCCESS)
            st = pdnn__check_alias("pdnn_add_n", y, "y", inputs[i], nm, 0);
    }
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias("pdnn_add_n", y, "y", inputs[0], "inputs[0]", 1);
    if (st != PDNN_SUCCESS)
        return st;
    if ((st = slot_f32("pdnn_add_n", y)) != PDNN_SUCCESS)
        return st;
    pdnn_device *d = y->dev;
    if (!d->backend->add || !d->backend->copy)
        return no_kernel("pdnn_add_n", d);
    if (n == 1)
        return pdnn__same_storage(inputs[0], y) ? PDNN_SUCCESS
                              : d->backend->copy(d->handle, y->block.buf, inputs[0]->block.buf, (size_t)y->bytes);
    /* y = in0 + in1, then y += in_i: y may alias in0 only at the first step. */
    st = d->backend->add(d->handle, inputs[0]->block.buf, inputs[1]->block.buf, y->block.buf, numel(y));
    for (int i = 2; i < n && st == PDNN_SUCCESS; i++)
        st = d->backend->add(d->handle, y->block.buf, inputs[i]->block.buf, y->block.buf, numel(y));
    return st;
}

/* outer x C x inner view of an activation in memory order. */
static void channel_view(const pdnn_tensor *t, int64_t *outer, int64_t *c, int64_t *inner)
{
    const int64_t *d = t->desc.dims;
    *c = d[1];
    if (t->desc.layout == PDNN_NHWC) {
        *outer = d[0] * d[2] * d[3];
        *inner = 1;
    } else {
        *outer = d[0];
        *inner = d[2] * d[3];
    }
}

static pdnn_status check_act(const char *op, const pdnn_tensor *t, const char *name)
{
    if (is_act(t))
        return PDNN_SUCCESS;
    char dd[96];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                       "%s: %s is %s; it must be NCHW, NHWC or ND of rank 2 to 4 (a matrix is {rows,cols,1,1} or ND "
                       "{rows,cols})",
                       op, name, pdnn__desc_string(&t->desc, dd, sizeof dd));
}

pdnn_status pdnn_bias_add(const pdnn_tensor *x, const pdnn_tensor *bias, pdnn_tensor *y)
{
    const pdnn_tensor *ts[] = {x, bias, y};
    const char *names[] = {"x", "bias", "y"};
    pdnn_status st = need("pdnn_bias_add", ts, names, 3);
    if (st == PDNN_SUCCESS)
        st = check_act("pdnn_bias_add", x, "x");
    if (st == PDNN_SUCCESS)
        st = same_shape("pdnn_bias_add", x, "x", y, "y");
    if (st != PDNN_SUCCESS)
        return st;
    if (bias->desc.layout != PDNN_LAYOUT_X || bias->desc.dims[0] != x->desc.dims[1]) {
        char db[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_bias_add: bias is %s; it must be a layout-X vector of length C = %lld",
                           pdnn__desc_string(&bias->desc, db, sizeof db), (long long)x->desc.dims[1]);
    }
    if ((st = pdnn__check_alias("pdnn_bias_add", y, "y", x, "x", 1)) != PDNN_SUCCESS ||
        (st = pdnn__check_alias("pdnn_bias_add", y, "y", bias, "bias", 0)) != PDNN_SUCCESS)
        return st;
    if ((st = slot_f32("pdnn_bias_add", x)) != PDNN_SUCCESS)
        return st;
    pdnn_device *d = x->dev;
    if (!d->backend->bias_add)
        return no_kernel("pdnn_bias_add", d);
    int64_t outer, c, inner;
    channel_view(x, &outer, &c, &inner);
    return d->backend->bias_add(d->handle, x->block.buf, bias->block.buf, y->block.buf, numel(x), c, inner, 0);
}

pdnn_status pdnn_relu(const pdnn_tensor *x, pdnn_tensor *y)
{
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need("pdnn_relu", ts, names, 2);
    if (st == PDNN_SUCCESS)
        st = same_shape("pdnn_relu", x, "x", y, "y");
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias("pdnn_relu", y, "y", x, "x", 1);
    if (st != PDNN_SUCCESS)
        return st;
    if ((st = slot_f32("pdnn_relu", x)) != PDNN_SUCCESS)
        return st;
    pdnn_device *d = x->dev;
    if (!d->backend->relu)
        return no_kernel("pdnn_relu", d);
    return d->backend->relu(d->handle, x->block.buf, y->block.buf, numel(x));
}

const char *pdnn__activation_check(pdnn_activation mode, float alpha, float beta, char *buf, size_t len)
{
    switch (mode) {
    case PDNN_ACTIVATION_CLIP:
        if (isnan(alpha) || isnan(beta) || alpha > beta) {
            snprintf(buf, len, "clip bounds [%g, %g]; they must not be NaN and alpha (the lower) must not exceed beta",
                     (double)alpha, (double)beta);
            return buf;
        }
        return NULL;
    case PDNN_ACTIVATION_LEAKY_RELU:
        if (!isfinite(alpha)) {
            snprintf(buf, len, "leaky relu's alpha is %g; it must be finite", (double)alpha);
            return buf;
        }
        return NULL;
    case PDNN_ACTIVATION_HARD_SIGMOID:
        if (!isfinite(alpha) || !isfinite(beta)) {
            snprintf(buf, len, "hard sigmoid's alpha %g and beta %g must be finite", (double)alpha, (double)beta);
            return buf;
        }
        return NULL;
    case PDNN_ACTIVATION_POW:
        if (!isfinite(alpha)) {
            snprintf(buf, len, "pow's exponent alpha is %g; it must be finite", (double)alpha);
            return buf;
        }
        return NULL;
    case PDNN_ACTIVATION_SIGMOID:
    case PDNN_ACTIVATION_HARD_SWISH:
    case PDNN_ACTIVATION_SILU:
    case PDNN_ACTIVATION_ERF:
    case PDNN_ACTIVATION_GELU:
    case PDNN_ACTIVATION_GELU_TANH:
    case PDNN_ACTIVATION_TANH:
    case PDNN_ACTIVATION_SQRT:
    case PDNN_ACTIVATION_NEG:
    case PDNN_ACTIVATION_EXP:
    case PDNN_ACTIVATION_LOG:
    case PDNN_ACTIVATION_RECIPROCAL:
    case PDNN_ACTIVATION_ABS: return NULL;
    }
    snprintf(buf, len,
             "unknown mode %d (clip 0, leaky relu 1, sigmoid 2, hard sigmoid 3, hard swish 4, silu 5, erf 6, gelu 7, "
             "gelu tanh 8, tanh 9, sqrt 10, neg 11, exp 12, log 13, reciprocal 14, abs 15, pow 16)",
             (int)mode);
    return buf;
}

pdnn_status pdnn_activation_forward(const pdnn_tensor *x, pdnn_activation mode, float alpha, float beta,
                                    pdnn_tensor *y)
{
    static const char op[] = "pdnn_activation_forward";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(op, ts, names, 2);
    if (st == PDNN_SUCCESS)
        st = same_shape(op, x, "x", y, "y");
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias(op, y, "y", x, "x", 1);
    if (st != PDNN_SUCCESS)
        return st;
    char why[160];
    if (pdnn__activation_check(mode, alpha, beta, why, sizeof why))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s", op, why);
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_ACTIVATION;
    call.dtype = x->desc.dtype;
    call.u.act.n = numel(x);
    call.u.act.mode = mode;
    call.u.act.alpha = alpha;
    call.u.act.beta = beta;
    call.u.act.x_buf = x->block.buf;
    call.u.act.y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

/* d's dims in memory order (outermost first) without those of size 1;
 * returns how many. */
static int memory_shape(const pdnn_tensor_desc *d, int64_t out[PDNN_MAX_RANK])
{
    int64_t st[PDNN_MAX_RANK];
    int ord[4] = {0, 1, 2, 3}, n = 0;
    const int axes = pdnn__desc_strides(d, st);
    if (d->layout != PDNN_ND)
        pdnn__stride_order(st, ord);
    for (int i = 0; i < axes; i++) {
        const int64_t v = d->dims[d->layout != PDNN_ND ? ord[i] : i];
        if (v != 1)
            out[n++] = v;
    }
    return n;
}

/* pdnn_transform with an ND side: the elements keep their memory order
 * (ND {N, C, H, W} from NCHW, {N, H, W, C} from NHWC, ND to ND of the
 * same dims), so it is one copy; anything else is a transpose. */
static pdnn_status transform_nd(const pdnn_tensor *x, pdnn_tensor *y)
{
    int64_t xm[PDNN_MAX_RANK], ym[PDNN_MAX_RANK];
    const int nx = memory_shape(&x->desc, xm), ny = memory_shape(&y->desc, ym);
    if (nx != ny || memcmp(xm, ym, (size_t)nx * sizeof xm[0]) != 0) {
        char da[160], db[160];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_transform: x is %s but y is %s; with an ND side the transform is a copy, so the dims "
                           "in memory order must match (ND {N,C,H,W} for NCHW, {N,H,W,C} for NHWC)",
                           pdnn__desc_string(&x->desc, da, sizeof da), pdnn__desc_string(&y->desc, db, sizeof db));
    }
    pdnn_status st = pdnn__check_alias("pdnn_transform", y, "y", x, "x", 0);
    if (st != PDNN_SUCCESS)
        return st;
    pdnn_device *d = x->dev;
    return d->backend->copy(d->handle, y->block.buf, x->block.buf, (size_t)x->bytes);
}

pdnn_status pdnn_transform(const pdnn_tensor *x, pdnn_tensor *y)
{
    static const char op[] = "pdnn_transform";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(op, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if (x->desc.layout == PDNN_ND || y->desc.layout == PDNN_ND)
        return transform_nd(x, y);
    if (memcmp(x->desc.dims, y->desc.dims, sizeof x->desc.dims) != 0) {
        char da[96], db[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: x is %s but y is %s; the dims must match", op,
                           pdnn__desc_string(&x->desc, da, sizeof da), pdnn__desc_string(&y->desc, db, sizeof db));
    }
    if ((st = pdnn__check_alias(op, y, "y", x, "x", 0)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_TRANSFORM;
    call.dtype = x->desc.dtype;
    pdnn__transform_call *c = &call.u.transform;
    memcpy(c->dims, x->desc.dims, sizeof c->dims);
    pdnn__layout_strides(x->desc.layout, c->dims, c->xs);
    pdnn__layout_strides(y->desc.layout, c->dims, c->ys);
    c->x_buf = x->block.buf;
    c->y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

/* Whether t is taken as a row-major N-d array by the ops that broadcast
 * as numpy does: ND, and X (a vector). */
static int nd_like(const pdnn_tensor *t) { return t->desc.layout == PDNN_ND || t->desc.layout == PDNN_LAYOUT_X; }

/* Fills c's axes from n axes in y's memory order (outermost first) with
 * a's and b's element strides (0 where they repeat): axes of size 1 are
 * dropped, neighbours that both sides step through alike are merged,
 * and the rest is right-aligned in PDNN_MAX_RANK (the front padded with
 * size-1 axes), so that a backend sees as few axes as the data needs. */
static void binary_axes(int n, const int64_t *d, const int64_t *as, const int64_t *bs, pdnn__binary_call *c)
{
    int64_t md[PDNN_MAX_RANK], ma[PDNN_MAX_RANK], mb[PDNN_MAX_RANK];
    int m = 0;
    for (int k = 0; k < n; k++) {
        if (d[k] == 1)
            continue;
        if (m > 0 && ma[m - 1] == as[k] * d[k] && mb[m - 1] == bs[k] * d[k]) {
            md[m - 1] *= d[k];
            ma[m - 1] = as[k];
            mb[m - 1] = bs[k];
            continue;
        }
        md[m] = d[k], ma[m] = as[k], mb[m] = bs[k];
        m++;
    }
    for (int k = 0; k < PDNN_MAX_RANK; k++) {
        const int j = k - (PDNN_MAX_RANK - m);
        c->dims[k] = j < 0 ? 1 : md[j];
        c->as[k] = j < 0 ? 0 : ma[j];
        c->bs[k] = j < 0 ? 0 : mb[j];
    }
}

int pdnn__binary_nd_shape(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, pdnn_tensor_desc *y)
{
    const int ra = pdnn_tensor_desc_rank(a), rb = pdnn_tensor_desc_rank(b), ry = ra > rb ? ra : rb;
    int fits = 1;
    memset(y, 0, sizeof *y);
    y->dtype = a->dtype;
    y->layout = PDNN_ND;
    y->rank = ry;
    for (int k = 0; k < PDNN_MAX_RANK; k++) {
        const int64_t x = k < ry - ra || k >= ry ? 1 : a->dims[k - (ry - ra)];
        const int64_t z = k < ry - rb || k >= ry ? 1 : b->dims[k - (ry - rb)];
        fits &= x == z || x == 1 || z == 1;
        y->dims[k] = x > z ? x : z;
    }
    return fits;
}

pdnn_status pdnn_binary(const pdnn_tensor *a, const pdnn_tensor *b, pdnn_binary_op op, pdnn_tensor *y)
{
    static const char name[] = "pdnn_binary";
    const pdnn_tensor *ts[] = {a, b, y};
    const char *names[] = {"a", "b", "y"};
    pdnn_status st = need(name, ts, names, 3);
    if (st != PDNN_SUCCESS)
        return st;
    if (op != PDNN_BINARY_ADD && op != PDNN_BINARY_MUL && op != PDNN_BINARY_SUB && op != PDNN_BINARY_DIV &&
        op != PDNN_BINARY_POW)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: op %d is not a pdnn_binary_op (ADD 0, MUL 1, SUB 2, DIV 3, POW 4)",
                           name, (int)op);
    char da[160], db[160], dy[160];
    const int nd = nd_like(a) && nd_like(b) && nd_like(y);
    /* Image layouts: the four logical axes, one layout for all three.
     * N-d: numpy's rule, the ranks aligned from the right. */
    const int ra = nd ? pdnn_tensor_desc_rank(&a->desc) : 4, rb = nd ? pdnn_tensor_desc_rank(&b->desc) : 4;
    const int ry = nd ? pdnn_tensor_desc_rank(&y->desc) : 4;
    pdnn_tensor_desc w;
    int a_full = 1, b_full = 1,
        fits = nd ? pdnn__binary_nd_shape(&a->desc, &b->desc, &w) && memcmp(w.dims, y->desc.dims, sizeof w.dims) == 0 &&
                        w.rank == ry
                  : a->desc.layout == b->desc.layout && a->desc.layout == y->desc.layout;
    int64_t ad[PDNN_MAX_RANK], bd[PDNN_MAX_RANK];
    for (int k = 0; k < ry && fits; k++) {
        ad[k] = k < ry - ra ? 1 : a->desc.dims[k - (ry - ra)];
        bd[k] = k < ry - rb ? 1 : b->desc.dims[k - (ry - rb)];
        const int64_t yk = y->desc.dims[k];
        fits &= (ad[k] == yk || ad[k] == 1) && (bd[k] == yk || bd[k] == 1) && yk == (ad[k] > bd[k] ? ad[k] : bd[k]);
        a_full &= ad[k] == yk;
        b_full &= bd[k] == yk;
    }
    if (!fits)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: a is %s, b is %s and y is %s; they need one layout (or all N-d: ND or X, y of the "
                           "larger rank), each of y's dims the larger of a's and b's, and each of a's and b's equal "
                           "to y's or 1 (broadcast; N-d ranks aligned from the right, as numpy does)",
                           name, pdnn__desc_string(&a->desc, da, sizeof da), pdnn__desc_string(&b->desc, db, sizeof db),
                           pdnn__desc_string(&y->desc, dy, sizeof dy));
    if ((st = pdnn__check_alias(name, y, "y", a, "a", a_full)) != PDNN_SUCCESS ||
        (st = pdnn__check_alias(name, y, "y", b, "b", b_full)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_BINARY;
    call.dtype = y->desc.dtype;
    pdnn__binary_call *c = &call.u.binary;
    int64_t d[PDNN_MAX_RANK], as[PDNN_MAX_RANK], bs[PDNN_MAX_RANK];
    if (nd) {
        /* Row-major: memory order is the logical order. */
        int64_t sa = 1, sb = 1;
        for (int k = ry - 1; k >= 0; k--) {
            d[k] = y->desc.dims[k];
            as[k] = ad[k] == 1 ? 0 : sa;
            bs[k] = bd[k] == 1 ? 0 : sb;
            sa *= ad[k];
            sb *= bd[k];
        }
    } else {
        /* y's axes in memory order (ties are axes of size 1, whose order
         * does not matter); a and b share its layout, so the same order. */
        int64_t ys[4], as4[4], bs4[4];
        int ax[4];
        pdnn__layout_strides(y->desc.layout, y->desc.dims, ys);
        pdnn__layout_strides(a->desc.layout, a->desc.dims, as4);
        pdnn__layout_strides(b->desc.layout, b->desc.dims, bs4);
        pdnn__stride_order(ys, ax);
        for (int k = 0; k < 4; k++) {
            d[k] = y->desc.dims[ax[k]];
            as[k] = a->desc.dims[ax[k]] == 1 ? 0 : as4[ax[k]];
            bs[k] = b->desc.dims[ax[k]] == 1 ? 0 : bs4[ax[k]];
        }
    }
    binary_axes(ry, d, as, bs, c);
    c->kind = op;
    c->a_buf = a->block.buf;
    c->b_buf = b->block.buf;
    c->y_buf = y->block.buf;
    return pdnn__dispatch(y->dev, &call, NULL, NULL);
}

pdnn_status pdnn_softmax(const pdnn_tensor *x, pdnn_tensor *y)
{
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need("pdnn_softmax", ts, names, 2);
    if (st == PDNN_SUCCESS)
        st = check_act("pdnn_softmax", x, "x");
    if (st == PDNN_SUCCESS)
        st = same_shape("pdnn_softmax", x, "x", y, "y");
    if (st == PDNN_SUCCESS && x == y)
        st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_softmax: x and y must be different tensors");
    if (st == PDNN_SUCCESS)
        st = pdnn__check_alias("pdnn_softmax", y, "y", x, "x", 0);
    if (st != PDNN_SUCCESS)
        return st;
    if ((st = slot_f32("pdnn_softmax", x)) != PDNN_SUCCESS)
        return st;
    pdnn_device *d = x->dev;
    if (!d->backend->softmax)
        return no_kernel("pdnn_softmax", d);
    int64_t outer, c, inner;
    channel_view(x, &outer, &c, &inner);
    return d->backend->softmax(d->handle, x->block.buf, y->block.buf, outer, c, inner);
}

static pdnn_status check_matrix(const pdnn_tensor *t, const char *name)
{
    if (is_act(t) && t->desc.dims[2] == 1 && t->desc.dims[3] == 1)
        return PDNN_SUCCESS;
    char dd[96];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_matmul: %s is %s; a matrix is {rows,cols,1,1} NCHW or NHWC",
                       name, pdnn__desc_string(&t->desc, dd, sizeof dd));
}

/* C = op(A) op(B) over buffers at element offsets from a, b, c, for a
 * batch of matrices sa and sb elements apart in a and b (0: broadcast),
 * m * n apart in c: one dispatch. */
static pdnn_status matmul_one(const pdnn_tensor *a, const pdnn_tensor *b, pdnn_tensor *c, int64_t m, int64_t n,
                              int64_t k, int trans_a, int trans_b, int64_t ao, int64_t bo, int64_t co, int64_t batch,
                              int64_t sa, int64_t sb)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_GEMM;
    call.dtype = a->desc.dtype;
    call.u.matmul = (pdnn__matmul_call){m,  n,           k,           trans_a != 0, trans_b != 0, a->block.buf,
                                        b->block.buf, c->block.buf, batch,       sa,           sb};
    const size_t es = pdnn__dtype_size(a->desc.dtype);
    call.u.matmul.a_buf.offset += (size_t)ao * es;
    call.u.matmul.b_buf.offset += (size_t)bo * es;
    call.u.matmul.c_buf.offset += (size_t)co * es;
    return pdnn__dispatch(a->dev, &call, NULL, NULL);
}

/* A matmul operand as numpy sees it: ND its rank and dims, X rank 1, an
 * NCHW or NHWC {R, C, 1, 1} matrix rank 2, any other NCHW tensor rank 4
 * (its bytes are ND {N, C, H, W}'s: a 4-d array from numpy or torch);
 * -1 for anything else. */
static int mat_rank(const pdnn_tensor_desc *t)
{
    if (t->layout == PDNN_ND)
        return t->rank;
    if (t->layout == PDNN_LAYOUT_X)
        return 1;
    if ((t->layout == PDNN_NCHW || t->layout == PDNN_NHWC) && t->dims[2] == 1 && t->dims[3] == 1)
        return 2;
    return t->layout == PDNN_NCHW ? 4 : -1;
}

/* The batch dim i (of nbatch, aligned from the right) of an operand with
 * n batch dims d. */
static int64_t batch_dim(const int64_t *d, int n, int nbatch, int i)
{
    return i < nbatch - n ? 1 : d[i - (nbatch - n)];
}

int pdnn__matmul_nd_shape(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, int trans_a, int trans_b,
                          pdnn_tensor_desc *c, char *why, size_t len)
{
    const int ra = mat_rank(a), rb = mat_rank(b);
    const int64_t *ad = a->dims, *bd = b->dims;
    char da[160], db[160];
    if (ra < 1 || rb < 1) {
        snprintf(why, len, "a is %s and b is %s; each must be ND of rank 1 or more, X, a {rows,cols,1,1} matrix or "
                 "NCHW (as ND {N,C,H,W})",
                 pdnn__desc_string(a, da, sizeof da), pdnn__desc_string(b, db, sizeof db));
        return 0;
    }
    /* The matrices, rank-1 operands promoted (a row, a column). */
    const int64_t ar = ra == 1 ? 1 : ad[ra - 2], ac = ad[ra - 1], br = rb == 1 ? bd[0] : bd[rb - 2],
                  bc = rb == 1 ? 1 : bd[rb - 1];
    const int64_t m = trans_a ? ac : ar, k = trans_a ? ar : ac, kb = trans_b ? bc : br, n = trans_b ? br : bc;
    const int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0, nbatch = na > nb ? na : nb;
    memset(c, 0, sizeof *c);
    c->dtype = PDNN_FLOAT32;
    c->layout = PDNN_ND;
    int fits = k == kb;
    for (int i = 0; i < nbatch; i++) {
        const int64_t x = batch_dim(ad, na, nbatch, i), y = batch_dim(bd, nb, nbatch, i);
        fits &= x == y || x == 1 || y == 1;
        c->dims[c->rank++] = x > y ? x : y;
    }
    if (ra > 1)
        c->dims[c->rank++] = m;
    if (rb > 1)
        c->dims[c->rank++] = n;
    for (int i = c->rank; i < PDNN_MAX_RANK; i++)
        c->dims[i] = 1;
    if (!fits)
        snprintf(why, len,
                 "a %s%s and b %s%s do not fit numpy's matmul: op(a) is %lld x %lld, op(b) %lld x %lld (the inner "
                 "dims must be equal, the dims before them broadcast)",
                 pdnn__desc_string(a, da, sizeof da), trans_a ? " (transposed)" : "",
                 pdnn__desc_string(b, db, sizeof db), trans_b ? " (transposed)" : "", (long long)m, (long long)k,
                 (long long)kb, (long long)n);
    return fits;
}

/* How matmul_nd runs numpy's matmul of a and b (want: its shape): the
 * GEMM's m, n, k, and either one GEMM of all the batch's rows (a Linear
 * layer over a sequence: linear) or the batch dims merged into runs that
 * one strided-batch dispatch covers, g[0] the innermost: a dim joins the
 * run inside it when each operand's stride is the run's stride times the
 * run's extent (both 0 where broadcast); c is dense, so it never splits
 * a run. ng 0: every batch dim is 1. */
typedef struct matmul_run {
    int64_t n, sa, sb, sc;
} matmul_run;

typedef struct matmul_split {
    int64_t m, n, k, total;
    int linear, ng;
    matmul_run g[PDNN_MAX_RANK];
} matmul_split;

static void split_matmul(const pdnn_tensor_desc *ad_, const pdnn_tensor_desc *bd_, int trans_a, int trans_b,
                         const pdnn_tensor_desc *want, matmul_split *s)
{
    const int ra = mat_rank(ad_), rb = mat_rank(bd_);
    const int64_t *ad = ad_->dims, *bd = bd_->dims;
    const int64_t ar = ra == 1 ? 1 : ad[ra - 2], ac = ad[ra - 1], br = rb == 1 ? bd[0] : bd[rb - 2],
                  bc = rb == 1 ? 1 : bd[rb - 1];
    const int64_t m = trans_a ? ac : ar, k = trans_a ? ar : ac, n = trans_b ? br : bc;
    const int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0, nbatch = na > nb ? na : nb;
    memset(s, 0, sizeof *s);
    s->m = m, s->n = n, s->k = k;
    /* Batch strides of a and b in elements (0 where broadcast). */
    int64_t as[PDNN_MAX_RANK], bs[PDNN_MAX_RANK], total = 1, a_total = 1, b_total = 1, sa = m * k, sb = k * n;
    for (int i = nbatch - 1; i >= 0; i--) {
        const int64_t x = batch_dim(ad, na, nbatch, i), y = batch_dim(bd, nb, nbatch, i);
        as[i] = x == 1 ? 0 : sa;
        bs[i] = y == 1 ? 0 : sb;
        sa *= x, sb *= y;
        total *= want->dims[i], a_total *= x, b_total *= y;
    }
    s->total = total;
    s->linear = b_total == 1 && a_total == total && !trans_a; /* the batch's rows are one op(A) */
    int64_t sc = m * n;
    for (int i = nbatch - 1; i >= 0 && !s->linear; i--) {
        if (want->dims[i] == 1)
            continue;
        matmul_run *r = s->ng ? &s->g[s->ng - 1] : NULL;
        if (r && as[i] == r->sa * r->n && bs[i] == r->sb * r->n)
            r->n *= want->dims[i];
        else
            s->g[s->ng++] = (matmul_run){want->dims[i], as[i], bs[i], sc};
        sc *= want->dims[i];
    }
}

int64_t pdnn__matmul_dispatches(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, int trans_a, int trans_b,
                                int64_t *batch)
{
    char why[512];
    pdnn_tensor_desc want;
    matmul_split s;
    *batch = 1;
    if (!pdnn__matmul_nd_shape(a, b, trans_a, trans_b, &want, why, sizeof why))
        return -1;
    split_matmul(a, b, trans_a, trans_b, &want, &s);
    if (s.linear || s.ng == 0)
        return 1;
    if (s.total == 0)
        return 0;
    *batch = s.g[0].n;
    return s.total / s.g[0].n;
}

/* numpy's matmul over N-d operands (any of a, b, c ND; pdnn_matmul's
 * comment): one strided-batch GEMM per element of the outer runs
 * (split_matmul: one in all where the batch dims collapse, as attention's
 * {B,H,S,D} @ {B,H,D,S} do), or one GEMM where b is a single matrix and
 * op(A) the rows of a's whole batch. */
static pdnn_status matmul_nd(const pdnn_tensor *a, const pdnn_tensor *b, int trans_a, int trans_b, pdnn_tensor *c)
{
    static const char op[] = "pdnn_matmul";
    char why[512], dc[160];
    pdnn_tensor_desc want;
    if (!pdnn__matmul_nd_shape(&a->desc, &b->desc, trans_a, trans_b, &want, why, sizeof why))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s", op, why);
    const int rc = mat_rank(&c->desc);
    if (rc != want.rank || memcmp(c->desc.dims, want.dims, (size_t)(rc < 0 ? 0 : rc) * sizeof want.dims[0]) != 0) {
        char dw[160];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: c is %s; numpy's matmul of a and b is %s", op,
                           pdnn__desc_string(&c->desc, dc, sizeof dc), pdnn__desc_string(&want, dw, sizeof dw));
    }
    pdnn_status st;
    if ((st = pdnn__check_alias(op, c, "c", a, "a", 0)) != PDNN_SUCCESS ||
        (st = pdnn__check_alias(op, c, "c", b, "b", 0)) != PDNN_SUCCESS)
        return st;
    matmul_split s;
    split_matmul(&a->desc, &b->desc, trans_a, trans_b, &want, &s);
    const int64_t m = s.m, n = s.n, k = s.k;
    if (s.linear)
        return matmul_one(a, b, c, m * s.total, n, k, 0, trans_b, 0, 0, 0, 1, 0, 0);
    if (s.total == 0) /* an empty batch: nothing to write */
        return PDNN_SUCCESS;
    if (s.ng == 0) /* every batch dim is 1 */
        return matmul_one(a, b, c, m, n, k, trans_a, trans_b, 0, 0, 0, 1, 0, 0);
    /* The outer runs' elements, in order (g[1] fastest). */
    const matmul_run *g = s.g;
    int64_t idx[PDNN_MAX_RANK] = {0}, ao = 0, bo = 0, co = 0;
    for (;;) {
        if ((st = matmul_one(a, b, c, m, n, k, trans_a, trans_b, ao, bo, co, g[0].n, g[0].sa, g[0].sb)) !=
            PDNN_SUCCESS)
            return st;
        int i = 1;
        for (; i < s.ng; i++) {
            ao += g[i].sa, bo += g[i].sb, co += g[i].sc;
            if (++idx[i] < g[i].n)
                break;
            ao -= g[i].sa * g[i].n, bo -= g[i].sb * g[i].n, co -= g[i].sc * g[i].n;
            idx[i] = 0;
        }
        if (i == s.ng)
            return PDNN_SUCCESS;
    }
}

pdnn_status pdnn_matmul(const pdnn_tensor *a, const pdnn_tensor *b, int trans_a, int trans_b, pdnn_tensor *c)
{
    const pdnn_tensor *ts[] = {a, b, c};
    const char *names[] = {"a", "b", "c"};
    pdnn_status st = need("pdnn_matmul", ts, names, 3);
    if (st != PDNN_SUCCESS)
        return st;
    if (c == a || c == b)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_matmul: c must differ from a and b");
    if (a->desc.layout == PDNN_ND || b->desc.layout == PDNN_ND || c->desc.layout == PDNN_ND)
        return matmul_nd(a, b, trans_a, trans_b, c);
    for (int i = 0; i < 3 && st == PDNN_SUCCESS; i++)
        st = check_matrix(ts[i], names[i]);
    if (st != PDNN_SUCCESS)
        return st;
    if ((st = pdnn__check_alias("pdnn_matmul", c, "c", a, "a", 0)) != PDNN_SUCCESS ||
        (st = pdnn__check_alias("pdnn_matmul", c, "c", b, "b", 0)) != PDNN_SUCCESS)
        return st;
    int64_t m = trans_a ? a->desc.dims[1] : a->desc.dims[0], k = trans_a ? a->desc.dims[0] : a->desc.dims[1];
    int64_t kb = trans_b ? b->desc.dims[1] : b->desc.dims[0], n = trans_b ? b->desc.dims[0] : b->desc.dims[1];
    if (k != kb)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_matmul: inner dimensions differ: op(a) is %lld x %lld, op(b) is %lld x %lld",
                           (long long)m, (long long)k, (long long)kb, (long long)n);
    if (c->desc.dims[0] != m || c->desc.dims[1] != n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_matmul: c is %lld x %lld; expected %lld x %lld",
                           (long long)c->desc.dims[0], (long long)c->desc.dims[1], (long long)m, (long long)n);
    return matmul_one(a, b, c, m, n, k, trans_a, trans_b, 0, 0, 0, 1, 0, 0);
}

pdnn_status pdnn_reshape(const pdnn_tensor *x, pdnn_tensor *y)
{
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need("pdnn_reshape", ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if (x->bytes != y->bytes) {
        char dx[96], dy[96];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_reshape: x %s and y %s hold different numbers of elements",
                           pdnn__desc_string(&x->desc, dx, sizeof dx), pdnn__desc_string(&y->desc, dy, sizeof dy));
    }
    if (x == y)
        return PDNN_SUCCESS;
    /* A copy between overlapping bytes is undefined (memcpy) or refused
     * (clEnqueueCopyBuffer); two views of the same bytes need no copy. */
    if (pdnn__same_storage(x, y))
        return PDNN_SUCCESS;
    if ((st = pdnn__check_alias("pdnn_reshape", y, "y", x, "x", 0)) != PDNN_SUCCESS)
        return st;
    pdnn_device *d = x->dev;
    return d->backend->copy(d->handle, y->block.buf, x->block.buf, (size_t)x->bytes);
}

int pdnn__concat_compatible(const pdnn_tensor_desc *a, const pdnn_tensor_desc *b, int axis)
{
    const int r = pdnn_tensor_desc_rank(a);
    int ok = a->layout == b->layout && a->dtype == b->dtype && r == pdnn_tensor_desc_rank(b) && axis >= 0 &&
             axis < (a->layout == PDNN_ND ? r : 4);
    for (int k = 0; k < PDNN_MAX_RANK; k++)
        ok = ok && (k == axis || a->dims[k] == b->dims[k]);
    return ok;
}

pdnn_status pdnn_concat(const pdnn_tensor *const *xs, int n, int axis, pdnn_tensor *y)
{
    static const char op[] = "pdnn_concat";
    if (!xs || !y || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s", op,
                           !xs ? "xs is NULL" : !y ? "y is NULL" : "n must be at least 1");
    int64_t ys[PDNN_MAX_RANK];
    const int axes = pdnn__desc_strides(&y->desc, ys);
    if (axis < 0 || axis >= axes)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: axis %d; it must be 0 to %d (a logical axis of y's dims)",
                           op, axis, axes - 1);
    int64_t sum = 0;
    char nm[32], da[160], db[160];
    for (int i = 0; i < n; i++) {
        snprintf(nm, sizeof nm, "xs[%d]", i);
        const pdnn_tensor *ts[] = {y, xs[i]};
        const char *names[] = {"y", nm};
        pdnn_status st = need(op, ts, names, 2);
        if (st != PDNN_SUCCESS)
            return st;
        const pdnn_tensor_desc *a = &xs[i]->desc;
        if (!pdnn__concat_compatible(a, &y->desc, axis))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is %s but y is %s; they must match in layout, rank "
                               "and every dim but axis %d", op, nm, pdnn__desc_string(a, da, sizeof da),
                               pdnn__desc_string(&y->desc, db, sizeof db), axis);
        sum += a->dims[axis];
        if ((st = pdnn__check_alias(op, y, "y", xs[i], nm, 0)) != PDNN_SUCCESS)
            return st;
    }
    if (sum != y->desc.dims[axis])
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the inputs' dims along axis %d add up to %lld but y has "
                           "%lld", op, axis, (long long)sum, (long long)y->desc.dims[axis]);
    /* In memory order, input i is (outer) blocks of stride[axis] * its dim
     * elements, each landing at an offset of the running sum in y's block
     * of the same outer index: the strides below the axis are common. */
    const pdnn_status fst = slot_f32(op, y);
    if (fst != PDNN_SUCCESS)
        return fst;
    const size_t esz = sizeof(float), inner = (size_t)ys[axis];
    const size_t outer = (size_t)(numel(y) / (int64_t)(inner * (size_t)y->desc.dims[axis]));
    const size_t ypitch = inner * (size_t)y->desc.dims[axis] * esz;
    pdnn_device *d = y->dev;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const size_t width = inner * (size_t)xs[i]->desc.dims[axis] * esz;
        pdnn__buf dst = y->block.buf;
        dst.offset += at;
        pdnn_status st = PDNN_SUCCESS;
        if (outer == 1)
            st = d->backend->copy(d->handle, dst, xs[i]->block.buf, width);
        else if (d->backend->copy_rows)
            st = d->backend->copy_rows(d->handle, dst, ypitch, xs[i]->block.buf, width, width, outer);
        else
            for (size_t r = 0; r < outer && st == PDNN_SUCCESS; r++) {
                pdnn__buf s = xs[i]->block.buf, t = dst;
                s.offset += r * width;
                t.offset += r * ypitch;
                st = d->backend->copy(d->handle, t, s, width);
            }
        if (st != PDNN_SUCCESS)
            return st;
        at += width;
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_pad(const pdnn_tensor *x, const int64_t pads[4], pdnn_pad_mode mode, float value, pdnn_tensor *y)
{
    static const char name[] = "pdnn_pad";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(name, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if (!pads || !x) /* (x: need checked it, out of the static analyzer's sight) */
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: pads is NULL", name);
    if (mode != PDNN_PAD_CONSTANT && mode != PDNN_PAD_REFLECT && mode != PDNN_PAD_EDGE)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: mode %d is not CONSTANT (0), REFLECT (1) or EDGE (2)", name,
                           (int)mode);
    const int64_t *d = x->desc.dims;
    char dx[96], dy[96];
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0 || pads[i] > (int64_t)1 << 30 ||
            (mode == PDNN_PAD_REFLECT && pads[i] >= d[2 + (i & 1)]) || (mode == PDNN_PAD_EDGE && d[2 + (i & 1)] < 1))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: pads[%d] = %lld; pads must be >= 0 (below the dim for REFLECT, of a dim of at "
                               "least 1 for EDGE), x is %s",
                               name, i, (long long)pads[i], pdnn__desc_string(&x->desc, dx, sizeof dx));
    if (!is_act(x) || y->desc.layout != x->desc.layout || y->desc.dims[0] != d[0] || y->desc.dims[1] != d[1] ||
        y->desc.dims[2] != d[2] + pads[0] + pads[2] || y->desc.dims[3] != d[3] + pads[1] + pads[3])
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: x is %s and y is %s; both NCHW or both NHWC, y {N, C, H + top + bottom, W + left + "
                           "right} for pads {%lld, %lld, %lld, %lld}",
                           name, pdnn__desc_string(&x->desc, dx, sizeof dx), pdnn__desc_string(&y->desc, dy, sizeof dy),
                           (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3]);
    if ((st = pdnn__check_alias(name, y, "y", x, "x", 0)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_PAD;
    call.dtype = x->desc.dtype;
    pdnn__pad_call *c = &call.u.pad;
    memcpy(c->dims, d, sizeof c->dims);
    memcpy(c->pads, pads, sizeof c->pads);
    pdnn__layout_strides(x->desc.layout, x->desc.dims, c->xs);
    pdnn__layout_strides(y->desc.layout, y->desc.dims, c->ys);
    c->mode = mode;
    c->value = value;
    c->x_buf = x->block.buf;
    c->y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}
