/* The N-d math ops (transpose, softmax along an axis, layer norm,
 * reductions): validate in core, reduce each call to its plainest form
 * (axes of size 1 dropped, neighbours that stay together merged), then
 * dispatch as registry ops. */
#include "ops/dispatch_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A tensor's logical dims and each one's element stride. */
typedef struct view {
    int rank;
    int64_t dims[PDNN_MAX_RANK], st[PDNN_MAX_RANK];
} view;

static void view_of(const pdnn_tensor_desc *d, view *v)
{
    memset(v, 0, sizeof *v);
    v->rank = pdnn_tensor_desc_rank(d);
    if (d->layout == PDNN_ND || d->layout == PDNN_LAYOUT_X) {
        int64_t s = 1;
        for (int k = v->rank - 1; k >= 0; k--) {
            v->dims[k] = d->dims[k];
            v->st[k] = s;
            s *= d->dims[k];
        }
        return;
    }
    memcpy(v->dims, d->dims, 4 * sizeof v->dims[0]);
    pdnn__layout_strides(d->layout, v->dims, v->st);
}

/* Whether the layout stores the logical dims in order (row-major). */
static int in_order(const pdnn_tensor_desc *d)
{
    return d->layout == PDNN_ND || d->layout == PDNN_NCHW || d->layout == PDNN_OIHW || d->layout == PDNN_LAYOUT_X;
}

/* The logical axis at memory position p (0 outermost) of v, for the ops
 * that treat every other axis alike. ord[p] is that axis. */
static void mem_order(const view *v, int ord[PDNN_MAX_RANK])
{
    for (int i = 0; i < v->rank; i++)
        ord[i] = i;
    for (int i = 1; i < v->rank; i++) /* insertion sort, by decreasing stride; ties keep their order */
        for (int j = i; j > 0 && v->st[ord[j]] > v->st[ord[j - 1]]; j--) {
            const int t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
}

static pdnn_status need(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!ts[i])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, names[i]);
    return pdnn__same_device(op, ts, names, n);
}

/* axis in [-rank, rank) as 0..rank-1, else -1. */
static int axis_of(int axis, int rank) { return axis >= -rank && axis < rank ? (axis < 0 ? axis + rank : axis) : -1; }

static pdnn_status bad_axis(const char *op, const char *what, int axis, const pdnn_tensor *x)
{
    char dx[96];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s %d is outside [-%d, %d) for x %s", op, what, axis,
                       pdnn_tensor_desc_rank(&x->desc), pdnn_tensor_desc_rank(&x->desc),
                       pdnn__desc_string(&x->desc, dx, sizeof dx));
}

static pdnn_status shape_mismatch(const char *op, const pdnn_tensor *x, const pdnn_tensor *y, const char *want)
{
    char dx[96], dy[96];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: x is %s and y is %s; y must be %s", op,
                       pdnn__desc_string(&x->desc, dx, sizeof dx), pdnn__desc_string(&y->desc, dy, sizeof dy), want);
}

/* need(), then x's view and axis as 0..rank-1 (*a), for the ops along
 * one axis. */
static pdnn_status need_axis(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n, int axis,
                             view *v, int *a)
{
    pdnn_status st = need(op, ts, names, n);
    if (st != PDNN_SUCCESS)
        return st;
    view_of(&ts[0]->desc, v);
    *a = axis_of(axis, v->rank);
    return *a < 0 ? bad_axis(op, "axis", axis, ts[0]) : PDNN_SUCCESS;
}

/* ---- transpose ------------------------------------------------------------ */

/* c from y's dims yd and x's strides xs of y's logical axes, with y's own
 * strides ys: axes put in y's memory order (y packed), axes of size 1
 * dropped, and a neighbour merged into the axis outside it where x holds
 * the two as one run. */
static void transpose_plain(int rank, const int64_t *yd, const int64_t *xs, const int64_t *ys,
                            pdnn__transpose_call *c)
{
    view v = {.rank = rank};
    memcpy(v.dims, yd, (size_t)rank * sizeof *yd);
    memcpy(v.st, ys, (size_t)rank * sizeof *ys);
    int ord[PDNN_MAX_RANK];
    mem_order(&v, ord);
    c->rank = 0;
    for (int p = 0; p < rank; p++) {
        const int a = ord[p];
        if (yd[a] == 1)
            continue;
        if (c->rank > 0 && c->xs[c->rank - 1] == xs[a] * yd[a]) {
            c->dims[c->rank - 1] *= yd[a];
            c->xs[c->rank - 1] = xs[a];
            continue;
        }
        c->dims[c->rank] = yd[a];
        c->xs[c->rank] = xs[a];
        c->rank++;
    }
}

pdnn_status pdnn_transpose(const pdnn_tensor *x, const int *perm, pdnn_tensor *y)
{
    static const char op[] = "pdnn_transpose";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(op, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    view xv, yv;
    view_of(&x->desc, &xv);
    view_of(&y->desc, &yv);
    const int r = xv.rank;
    int p[PDNN_MAX_RANK], seen[PDNN_MAX_RANK] = {0};
    for (int k = 0; k < r; k++) {
        p[k] = perm ? perm[k] : r - 1 - k;
        if (p[k] < 0 || p[k] >= r || seen[p[k]]++) {
            char dx[96];
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: perm[%d] = %d; perm must hold each of 0..%d once for x %s", op, k, p[k], r - 1,
                               pdnn__desc_string(&x->desc, dx, sizeof dx));
        }
    }
    int same = yv.rank == r;
    for (int k = 0; k < r && same; k++)
        same = yv.dims[k] == xv.dims[p[k]];
    if (!same)
        return shape_mismatch(op, x, y, "x's rank with x's dims in perm's order");
    if ((st = pdnn__check_alias(op, y, "y", x, "x", 0)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_ND_TRANSPOSE;
    call.dtype = x->desc.dtype;
    int64_t xs[PDNN_MAX_RANK];
    for (int k = 0; k < r; k++)
        xs[k] = xv.st[p[k]];
    transpose_plain(r, yv.dims, xs, yv.st, &call.u.transpose);
    call.u.transpose.x_buf = x->block.buf;
    call.u.transpose.y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

/* ---- softmax ---------------------------------------------------------------- */

pdnn_status pdnn_softmax_axis(const pdnn_tensor *x, int axis, int log, pdnn_tensor *y)
{
    static const char op[] = "pdnn_softmax_axis";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    view v;
    int a;
    pdnn_status st = need_axis(op, ts, names, 2, axis, &v, &a);
    if (st != PDNN_SUCCESS)
        return st;
    if (memcmp(&x->desc, &y->desc, sizeof x->desc) != 0)
        return shape_mismatch(op, x, y, "x's desc");
    if ((st = pdnn__check_alias(op, y, "y", x, "x", 0)) != PDNN_SUCCESS)
        return st;
    int ord[PDNN_MAX_RANK];
    mem_order(&v, ord);
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_ND_SOFTMAX;
    call.dtype = x->desc.dtype;
    pdnn__softmax_call *c = &call.u.softmax;
    c->outer = c->inner = 1;
    int before = 1;
    for (int p = 0; p < v.rank; p++) {
        if (ord[p] == a) {
            before = 0;
            continue;
        }
        *(before ? &c->outer : &c->inner) *= v.dims[ord[p]];
    }
    c->n = v.dims[a];
    c->log = log != 0;
    c->x_buf = x->block.buf;
    c->y_buf = y->block.buf;
    if (c->outer * c->n * c->inner == 0)
        return PDNN_SUCCESS;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

/* ---- layer norm -------------------------------------------------------------- */

pdnn_status pdnn_layer_norm(const pdnn_tensor *x, int axis, float epsilon, const pdnn_tensor *scale,
                            const pdnn_tensor *bias, pdnn_tensor *y)
{
    static const char op[] = "pdnn_layer_norm";
    const pdnn_tensor *ts[] = {x, y, scale, bias};
    const char *names[] = {"x", "y", "scale", "bias"};
    view v;
    int a;
    pdnn_status st = need_axis(op, ts, names, bias ? 4 : 3, axis, &v, &a);
    if (st != PDNN_SUCCESS)
        return st;
    char dx[96], ds[96];
    if (!in_order(&x->desc))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "%s: x is %s; its layout must store the dims in order (ND, NCHW, OIHW or X), so that "
                           "the normalized dims are the innermost",
                           op, pdnn__desc_string(&x->desc, dx, sizeof dx));
    if (!(epsilon >= 0.0f) || isinf(epsilon))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: epsilon is %g; it must be finite and >= 0", op,
                           (double)epsilon);
    if (memcmp(&x->desc, &y->desc, sizeof x->desc) != 0)
        return shape_mismatch(op, x, y, "x's desc");
    int64_t cols = 1;
    for (int k = a; k < v.rank; k++)
        cols *= v.dims[k];
    const pdnn_tensor *sb[] = {scale, bias};
    for (int i = 0; i < 2; i++)
        if (sb[i] && pdnn_tensor_desc_elements(&sb[i]->desc) != cols)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: %s is %s; it must have one element per element of a normalized row (%lld: x %s "
                               "from axis %d)",
                               op, names[2 + i], pdnn__desc_string(&sb[i]->desc, ds, sizeof ds), (long long)cols,
                               pdnn__desc_string(&x->desc, dx, sizeof dx), a);
    for (int i = 0; i < 4; i++)
        if (i != 1 && ts[i] && (st = pdnn__check_alias(op, y, "y", ts[i], names[i], 0)) != PDNN_SUCCESS)
            return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_ND_LAYER_NORM;
    call.dtype = x->desc.dtype;
    pdnn__layer_norm_call *c = &call.u.layer_norm;
    c->cols = cols;
    c->rows = cols ? pdnn_tensor_desc_elements(&x->desc) / cols : 0;
    c->epsilon = epsilon;
    c->x_buf = x->block.buf;
    c->scale_buf = scale->block.buf;
    if (bias)
        c->bias_buf = bias->block.buf;
    c->y_buf = y->block.buf;
    if (c->rows * c->cols == 0)
        return PDNN_SUCCESS;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

/* ---- reductions ----------------------------------------------------------------- */

/* Whether y is x reduced over the axes in mask: x's layout and dims
 * with those dims 1 (keepdims), or anything holding x's kept dims in x's
 * memory order (ND without them; an image layout whose memory order
 * keeps them in order). */
int pdnn__reduce_shape_ok(const pdnn_tensor_desc *x, unsigned mask, const pdnn_tensor_desc *y)
{
    view xv, yv;
    view_of(x, &xv);
    view_of(y, &yv);
    if (y->layout == x->layout && yv.rank == xv.rank) {
        int ok = 1;
        for (int k = 0; k < xv.rank; k++)
            ok &= yv.dims[k] == (mask >> k & 1u ? 1 : xv.dims[k]);
        if (ok)
            return 1;
    }
    int xo[PDNN_MAX_RANK], yo[PDNN_MAX_RANK], j = 0;
    mem_order(&xv, xo);
    mem_order(&yv, yo);
    for (int p = 0; p < xv.rank; p++) {
        const int a = xo[p];
        if ((mask >> a & 1u) || xv.dims[a] == 1)
            continue;
        while (j < yv.rank && yv.dims[yo[j]] == 1)
            j++;
        if (j == yv.rank || yv.dims[yo[j++]] != xv.dims[a])
            return 0;
    }
    while (j < yv.rank && yv.dims[yo[j]] == 1)
        j++;
    return j == yv.rank;
}

pdnn_status pdnn_reduce(const pdnn_tensor *x, const int *axes, int n_axes, pdnn_reduction kind, pdnn_tensor *y)
{
    static const char op[] = "pdnn_reduce";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(op, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if (kind != PDNN_REDUCTION_SUM && kind != PDNN_REDUCTION_MEAN && kind != PDNN_REDUCTION_MAX && kind != PDNN_REDUCTION_MIN)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: op %d is not SUM (0), MEAN (1), MAX (2) or MIN (3)", op,
                           (int)kind);
    view v;
    view_of(&x->desc, &v);
    if (n_axes < 0 || n_axes > v.rank || (n_axes > 0 && !axes))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: n_axes is %d%s; it must be 0 (every axis) to x's rank %d",
                           op, n_axes, n_axes > 0 && !axes ? " and axes is NULL" : "", v.rank);
    unsigned mask = n_axes == 0 ? (1u << v.rank) - 1u : 0u;
    for (int i = 0; i < n_axes; i++) {
        const int a = axis_of(axes[i], v.rank);
        if (a < 0)
            return bad_axis(op, "an axis", axes[i], x);
        if (mask >> a & 1u)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: axis %d is named twice", op, axes[i]);
        mask |= 1u << a;
    }
    if (!pdnn__reduce_shape_ok(&x->desc, mask, &y->desc))
        return shape_mismatch(op, x, y, "x's desc with the reduced dims 1, or x's other dims in x's memory order");
    if ((st = pdnn__check_alias(op, y, "y", x, "x", 0)) != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_ND_REDUCE;
    call.dtype = x->desc.dtype;
    pdnn__reduce_call *c = &call.u.reduce;
    c->kind = kind;
    c->x_buf = x->block.buf;
    c->y_buf = y->block.buf;
    /* In memory order, size-1 axes dropped (reduced or not, they change
     * nothing), neighbours of one kind merged. */
    int ord[PDNN_MAX_RANK];
    mem_order(&v, ord);
    int64_t reduced = 1;
    for (int p = 0; p < v.rank; p++) {
        const int a = ord[p];
        const unsigned red = mask >> a & 1u;
        reduced *= red ? v.dims[a] : 1;
        if (v.dims[a] == 1)
            continue;
        if (c->rank > 0 && (c->axes >> (c->rank - 1) & 1u) == red) {
            c->dims[c->rank - 1] *= v.dims[a];
            continue;
        }
        c->dims[c->rank] = v.dims[a];
        c->axes |= red << c->rank;
        c->rank++;
    }
    const int64_t y_elems = pdnn_tensor_desc_elements(&y->desc);
    if (y_elems == 0)
        return PDNN_SUCCESS;
    if (reduced == 0) { /* every output the empty reduction's value: y's elements as a kept axis, then 0 reduced */
        c->rank = 2;
        c->dims[0] = y_elems;
        c->dims[1] = 0;
        c->axes = 2u;
    } else if (c->rank == 0) { /* one element: a copy */
        c->rank = 1;
        c->dims[0] = 1;
        c->axes = 0u;
    }
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

/* ---- what op_key.c needs ----------------------------------------------------------- */

static int64_t prod(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= d[i];
    return p;
}

int pdnn__nd_math_describe(const pdnn__op_call *call, char *key, size_t len, double *flops, pdnn__buf *out,
                           size_t *n)
{
    char dims[PDNN_MAX_RANK * 24] = "";
    size_t used = 0;
    int64_t x_elems = 0, y_elems = 0;
    pdnn__buf y = {0};
    switch (call->op) {
    case PDNN__OP_ND_TRANSPOSE: {
        const pdnn__transpose_call *c = &call->u.transpose;
        for (int k = 0; k < c->rank && used < sizeof dims; k++)
            used += (size_t)snprintf(dims + used, sizeof dims - used, "%s%lld:%lld", k ? "," : "",
                                     (long long)c->dims[k], (long long)c->xs[k]);
        if (key)
            snprintf(key, len, "transpose f32 r%d %s", c->rank, dims);
        x_elems = y_elems = prod(c->dims, c->rank);
        y = c->y_buf;
        break;
    }
    case PDNN__OP_ND_SOFTMAX: {
        const pdnn__softmax_call *c = &call->u.softmax;
        if (key)
            snprintf(key, len, "softmax f32 %lldx%lldx%lld log%d", (long long)c->outer, (long long)c->n,
                     (long long)c->inner, c->log);
        x_elems = y_elems = c->outer * c->n * c->inner;
        y = c->y_buf;
        break;
    }
    case PDNN__OP_ND_LAYER_NORM: {
        const pdnn__layer_norm_call *c = &call->u.layer_norm;
        if (key)
            snprintf(key, len, "layer_norm f32 %lldx%lld b%d", (long long)c->rows, (long long)c->cols,
                     c->bias_buf.region != NULL);
        x_elems = y_elems = c->rows * c->cols;
        y = c->y_buf;
        break;
    }
    case PDNN__OP_ND_REDUCE: {
        const pdnn__reduce_call *c = &call->u.reduce;
        y_elems = 1;
        for (int k = 0; k < c->rank && used < sizeof dims; k++) {
            used += (size_t)snprintf(dims + used, sizeof dims - used, "%s%lld%s", k ? "," : "", (long long)c->dims[k],
                                     c->axes >> k & 1u ? "r" : "");
            y_elems *= c->axes >> k & 1u ? 1 : c->dims[k];
        }
        if (key)
            snprintf(key, len, "reduce f32 op%d %s", (int)c->kind, dims);
        x_elems = prod(c->dims, c->rank);
        y = c->y_buf;
        break;
    }
    default: return 0;
    }
    if (flops) /* elements touched */
        *flops = (double)x_elems + (double)y_elems;
    if (out) {
        *out = y;
        *n = (size_t)y_elems;
    }
    return 1;
}
