/* Data movement of any rank: pdnn_slice, pdnn_split, pdnn_expand,
 * pdnn_gather, pdnn_pad_nd and pdnn_resize, each turned here into per-axis
 * index tables for the one registry op PDNN__OP_INDEX (y reads x at
 * idx[axis][i] along every axis, -1 the fill value, one axis optionally
 * interpolated), and pdnn_where (PDNN__OP_WHERE). Validation is all here;
 * the backends only walk the tables. */
#include "core/context.h"
#include "ops/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define R PDNN_MAX_RANK

/* t's logical dims and element strides (an image layout's {N, C, H, W}
 * through its memory order; ND and X row-major); returns its rank. */
static int geom(const pdnn_tensor *t, int64_t d[R], int64_t st[R])
{
    const int r = pdnn_tensor_desc_rank(&t->desc);
    for (int k = 0; k < R; k++)
        d[k] = k < r ? t->desc.dims[k] : 1, st[k] = 0;
    if (t->desc.layout != PDNN_ND && t->desc.layout != PDNN_LAYOUT_X) {
        pdnn__layout_strides(t->desc.layout, d, st);
        return 4;
    }
    for (int k = r - 1, s = 1; k >= 0; k--)
        st[k] = s, s *= d[k];
    return r;
}

/* ops_nn.c's checks (non-NULL, one device, float32), then that the
 * output, last, overlaps no input. */
static pdnn_status need(const char *op, const pdnn_tensor *const *ts, const char *const *names, int n)
{
    pdnn_status st = pdnn__ops_need(op, ts, names, n);
    for (int j = 0; j + 1 < n && st == PDNN_SUCCESS; j++)
        st = pdnn__check_alias(op, ts[n - 1], names[n - 1], ts[j], names[j], 0);
    return st;
}

/* "[d0, d1, ...]" of r dims. */
static const char *dims_str(const int64_t *d, int r, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < r && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", k ? ", " : "", (long long)d[k]);
    if (at < len)
        snprintf(buf + at, len - at, "]");
    return buf;
}

/* y's logical dims must be want's (rank r). */
static pdnn_status check_y(const char *op, const pdnn_tensor *y, int yr, const int64_t *yd, int r,
                           const int64_t *want)
{
    if (yr == r && memcmp(yd, want, (size_t)r * sizeof *want) == 0)
        return PDNN_SUCCESS;
    char a[200], b[200];
    return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: y is %s; it must have dims %s", op,
                       pdnn__desc_string(&y->desc, a, sizeof a), dims_str(want, r, b, sizeof b));
}

/* One PDNN__OP_INDEX call: y (rank r, dims yd, strides ys) from x
 * (strides xs) by tables idx (sum of yd entries), and lerp's. */
static pdnn_status run_index(const pdnn_tensor *x, const int64_t *xs, const pdnn_tensor *y, int r, const int64_t *yd,
                             const int64_t *ys, const int64_t *idx, int lerp, const int64_t *idx1, const float *wt,
                             float value)
{
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_INDEX;
    call.dtype = x->desc.dtype;
    pdnn__index_call *c = &call.u.index;
    c->rank = r;
    c->lerp = lerp;
    for (int k = 0; k < R; k++) {
        c->dims[k] = k < r ? yd[k] : 1;
        c->xs[k] = k < r ? xs[k] : 0;
        c->ys[k] = k < r ? ys[k] : 0;
        c->n_idx += k < r ? yd[k] : 0;
    }
    c->idx = idx;
    c->idx1 = idx1;
    c->wt = wt;
    c->value = value;
    c->x_buf = x->block.buf;
    c->y_buf = y->block.buf;
    return pdnn__dispatch(x->dev, &call, NULL, NULL);
}

/* How y's index i along one axis maps to x's (-1: the fill value). */
typedef struct axis_rule {
    enum { AFFINE, LIST, PAD, NEAREST } kind;
    int64_t lo, step;               /* AFFINE: lo + i * step */
    const int64_t *list;            /* LIST: list[i], a negative one + d */
    int64_t before, d;              /* PAD (and LIST's d): x's dim */
    pdnn_pad_mode mode;
    int64_t out;                    /* NEAREST: in d, out, scale s */
    float s;
    pdnn_resize_coord coord;
    pdnn_resize_nearest how;
} axis_rule;

static float resize_coord(int64_t i, int64_t in, int64_t out, float s, pdnn_resize_coord coord);
static int64_t resize_nearest(float c, int64_t in, pdnn_resize_nearest how);

static int64_t rule_src(const axis_rule *a, int64_t i)
{
    switch (a->kind) {
    case LIST: return a->list[i] + (a->list[i] < 0 ? a->d : 0);
    case PAD: return pdnn__pad_src(i, a->before, a->d, a->mode);
    case NEAREST: return resize_nearest(resize_coord(i, a->d, a->out, a->s, a->coord), a->d, a->how);
    case AFFINE:
    default: return a->lo + i * a->step;
    }
}

/* The index tables of rules over y's dims, and one PDNN__OP_INDEX call
 * (lerp's arrays as run_index takes them). */
static pdnn_status run_rules(const char *op, const pdnn_tensor *x, const int64_t *xs, const pdnn_tensor *y, int r,
                             const int64_t *yd, const int64_t *ys, const axis_rule *rules, int lerp,
                             const int64_t *idx1, const float *wt, float value)
{
    int64_t n = 0;
    for (int k = 0; k < r; k++)
        n += yd[k];
    int64_t *idx = malloc((size_t)(n ? n : 1) * sizeof *idx), *t = idx;
    if (!idx)
        return pdnn__host_oom(op, "the index tables", (uint64_t)n * sizeof *idx);
    for (int k = 0; k < r; k++)
        for (int64_t i = 0; i < yd[k]; i++)
            *t++ = rule_src(&rules[k], i);
    pdnn_status st = run_index(x, xs, y, r, yd, ys, idx, lerp, idx1, wt, value);
    free(idx);
    return st;
}

int64_t pdnn__slice_axis(int64_t d, int64_t b, int64_t e, int64_t s, int64_t *first)
{
    b += b < 0 ? d : 0;
    e += e < 0 ? d : 0;
    /* ONNX's clamps: [0, d] forward, [-1, d - 1] backward. */
    if (s > 0) {
        b = b < 0 ? 0 : b > d ? d : b;
        e = e < 0 ? 0 : e > d ? d : e;
    } else {
        b = b < 0 ? -1 : b > d - 1 ? d - 1 : b;
        e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
    }
    const int64_t span = s > 0 ? e - b : b - e, as = s > 0 ? s : -s;
    *first = b;
    return span > 0 ? (span + as - 1) / as : 0;
}

pdnn_status pdnn_slice(const pdnn_tensor *x, int n, const int64_t *starts, const int64_t *ends, const int64_t *axes,
                       const int64_t *steps, pdnn_tensor *y)
{
    static const char name[] = "pdnn_slice";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(name, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t xd[R], xs[R], yd[R], ys[R], lo[R] = {0}, step[R] = {0}, cnt[R] = {0};
    const int r = geom(x, xd, xs), yr = geom(y, yd, ys);
    if (n < 0 || n > r || (n > 0 && (!starts || !ends)))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: n = %d with starts %s and ends %s; x has rank %d", name, n,
                           starts ? "given" : "NULL", ends ? "given" : "NULL", r);
    int seen[R] = {0};
    for (int k = 0; k < r; k++)
        lo[k] = 0, step[k] = 1, cnt[k] = xd[k];
    for (int i = 0; i < n; i++) {
        int64_t a = axes ? axes[i] : i, s = steps ? steps[i] : 1;
        if (a < -r || a >= r || seen[a < 0 ? a + r : a])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: axes[%d] = %lld is out of range for rank %d or repeated",
                               name, i, (long long)a, r);
        a += a < 0 ? r : 0;
        seen[a] = 1;
        if (s == 0)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: steps[%d] is 0", name, i);
        const int64_t d = xd[a];
        int64_t b = 0;
        cnt[a] = pdnn__slice_axis(d, starts[i], ends[i], s, &b);
        if (cnt[a] == 0)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: the slice is empty along axis %lld (start %lld, end %lld, step %lld of %lld)",
                               name, (long long)a, (long long)starts[i], (long long)ends[i], (long long)s,
                               (long long)d);
        lo[a] = b, step[a] = s;
    }
    if ((st = check_y(name, y, yr, yd, r, cnt)) != PDNN_SUCCESS)
        return st;
    axis_rule rules[R];
    for (int k = 0; k < r; k++)
        rules[k] = (axis_rule){.kind = AFFINE, .lo = lo[k], .step = step[k]};
    return run_rules(name, x, xs, y, r, yd, ys, rules, -1, NULL, NULL, 0.0f);
}

pdnn_status pdnn_split(const pdnn_tensor *x, int axis, int n, const int64_t *sizes, pdnn_tensor *const *ys)
{
    static const char name[] = "pdnn_split";
    if (!x || !ys || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: x or ys is NULL, or n = %d < 1", name, n);
    const int r = pdnn_tensor_desc_rank(&x->desc);
    if (axis < -r || axis >= r)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: axis %d is out of range for rank %d", name, axis, r);
    axis += axis < 0 ? r : 0;
    const int64_t d = x->desc.dims[axis];
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const int64_t s = sizes ? sizes[i] : d / n;
        if (s < 1 || s > d - total)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: part %d of size %lld does not fit axis %d's %lld", name,
                               i, (long long)s, axis, (long long)d);
        total += s;
    }
    if (total != d)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: the parts add up to %lld, not axis %d's %lld", name,
                           (long long)total, axis, (long long)d);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        const int64_t s = sizes ? sizes[i] : d / n, e = at + s, a = axis;
        pdnn_status st = pdnn_slice(x, 1, &at, &e, &a, NULL, ys[i]);
        if (st != PDNN_SUCCESS)
            return st;
        at = e;
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_expand(const pdnn_tensor *x, pdnn_tensor *y)
{
    static const char name[] = "pdnn_expand";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(name, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t xd[R], xs[R], yd[R], ys[R], bs[R];
    const int r = geom(x, xd, xs), yr = geom(y, yd, ys);
    for (int k = 0; k < yr; k++) {
        const int xk = k - (yr - r);
        bs[k] = xk < 0 || xd[xk] == 1 ? 0 : xs[xk];
        if (xk >= 0 && xd[xk] != 1 && xd[xk] != yd[k]) {
            char a[200], b[200];
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: x is %s and y %s; each of x's dims (aligned at the end) must be 1 or y's", name,
                               pdnn__desc_string(&x->desc, a, sizeof a), pdnn__desc_string(&y->desc, b, sizeof b));
        }
    }
    if (yr < r)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: y's rank %d is below x's %d", name, yr, r);
    axis_rule rules[R];
    for (int k = 0; k < yr; k++)
        rules[k] = (axis_rule){.kind = AFFINE, .step = bs[k] != 0};
    return run_rules(name, x, bs, y, yr, yd, ys, rules, -1, NULL, NULL, 0.0f);
}

pdnn_status pdnn_gather(const pdnn_tensor *x, int axis, const int64_t *indices, int64_t n, pdnn_tensor *y)
{
    static const char name[] = "pdnn_gather";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(name, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    int64_t xd[R], xs[R], yd[R], ys[R], want[R] = {0};
    const int r = geom(x, xd, xs), yr = geom(y, yd, ys);
    if (axis < -r || axis >= r || r == 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: axis %d is out of range for rank %d", name, axis, r);
    axis += axis < 0 ? r : 0;
    if (!indices || n < 1)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %lld indices%s", name, (long long)n,
                           indices ? "" : " (NULL)");
    for (int64_t i = 0; i < n; i++)
        if (indices[i] < -xd[axis] || indices[i] >= xd[axis])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: indices[%lld] = %lld is out of range for axis %d of %lld",
                               name, (long long)i, (long long)indices[i], axis, (long long)xd[axis]);
    memcpy(want, xd, sizeof want);
    want[axis] = n;
    /* y as given, or any rank whose row-major elements are the gather's:
     * x's dims before and after axis at its ends, the indices' shape between. */
    int64_t gs[R];
    if (yr == r && memcmp(yd, want, (size_t)r * sizeof *yd) == 0) {
        memcpy(gs, ys, sizeof gs);
    } else {
        int64_t mid = 1;
        const int tail = r - axis - 1;
        int ok = y->desc.layout == PDNN_ND && yr >= axis + tail;
        for (int k = 0; ok && k < axis; k++)
            ok = yd[k] == xd[k];
        for (int k = 0; ok && k < tail; k++)
            ok = yd[yr - 1 - k] == xd[r - 1 - k];
        for (int k = axis; ok && k < yr - tail; k++)
            mid *= yd[k];
        if (!ok || mid != n)
            return check_y(name, y, yr, yd, r, want);
        for (int k = r - 1, s = 1; k >= 0; k--)
            gs[k] = s, s *= want[k];
    }
    axis_rule rules[R];
    for (int k = 0; k < r; k++)
        rules[k] = k != axis ? (axis_rule){.kind = AFFINE, .step = 1}
                             : (axis_rule){.kind = LIST, .list = indices, .d = xd[axis]};
    return run_rules(name, x, xs, y, r, want, gs, rules, -1, NULL, NULL, 0.0f);
}

pdnn_status pdnn_pad_nd(const pdnn_tensor *x, const int64_t *pads, pdnn_pad_mode mode, float value, pdnn_tensor *y)
{
    static const char name[] = "pdnn_pad_nd";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(name, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if (mode != PDNN_PAD_CONSTANT && mode != PDNN_PAD_REFLECT && mode != PDNN_PAD_EDGE)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: mode %d is not CONSTANT (0), REFLECT (1) or EDGE (2)", name,
                           (int)mode);
    int64_t xd[R], xs[R], yd[R], ys[R], want[R] = {0};
    const int r = geom(x, xd, xs), yr = geom(y, yd, ys);
    static const int64_t no_pads[2 * R] = {0};
    if (!pads && r > 0)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: pads is NULL", name);
    pads = pads ? pads : no_pads; /* rank 0 pads nothing */
    for (int k = 0; k < 2 * r; k++) {
        const int64_t d = xd[k % r];
        if (pads[k] < 0 || pads[k] > (int64_t)1 << 30 || (mode == PDNN_PAD_REFLECT && pads[k] >= d))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                               "%s: pads[%d] = %lld; pads must be >= 0 (below the dim, %lld, for REFLECT)", name, k,
                               (long long)pads[k], (long long)d);
    }
    for (int k = 0; k < r; k++)
        want[k] = xd[k] + pads[k] + pads[r + k];
    if ((st = check_y(name, y, yr, yd, r, want)) != PDNN_SUCCESS)
        return st;
    axis_rule rules[R];
    for (int k = 0; k < r; k++)
        rules[k] = (axis_rule){.kind = PAD, .before = pads[k], .d = xd[k], .mode = mode};
    return run_rules(name, x, xs, y, r, yd, ys, rules, -1, NULL, NULL, value);
}

/* x's coordinate of y's index i along an axis (in -> out, scale s), in
 * float as ONNX Runtime computes it. */
static float resize_coord(int64_t i, int64_t in, int64_t out, float s, pdnn_resize_coord coord)
{
    switch (coord) {
    case PDNN_RESIZE_ASYMMETRIC: return (float)i / s;
    case PDNN_RESIZE_ALIGN_CORNERS: return out == 1 ? 0.0f : (float)i * (float)(in - 1) / (float)(out - 1);
    case PDNN_RESIZE_PYTORCH_HALF_PIXEL: if (out == 1) return 0.0f; /* fall through */
    case PDNN_RESIZE_HALF_PIXEL:
    default: return ((float)i + 0.5f) / s - 0.5f;
    }
}

static int64_t resize_nearest(float c, int64_t in, pdnn_resize_nearest how)
{
    const float f = floorf(c);
    const int half = c - f == 0.5f;
    const float v = how == PDNN_RESIZE_FLOOR              ? f
                    : how == PDNN_RESIZE_CEIL             ? ceilf(c)
                    : how == PDNN_RESIZE_ROUND_PREFER_CEIL ? (half ? f + 1.0f : roundf(c))
                                                          : (half ? f : roundf(c));
    const int64_t k = (int64_t)v;
    return k < 0 ? 0 : k >= in ? in - 1 : k;
}

/* One linear pass along axis a: y (dims yd) from x, the other axes as they are. */
static pdnn_status lerp_pass(const pdnn_tensor *x, const int64_t *xs, const pdnn_tensor *y, int r, const int64_t *yd,
                             const int64_t *ys, int a, int64_t in, float s, pdnn_resize_coord coord)
{
    int64_t *idx0 = malloc((size_t)yd[a] * sizeof *idx0), *idx1 = malloc((size_t)yd[a] * sizeof *idx1);
    float *wt = malloc((size_t)yd[a] * sizeof *wt);
    pdnn_status st = PDNN_ERR_OUT_OF_MEMORY;
    if (idx0 && idx1 && wt) {
        axis_rule rules[R];
        for (int k = 0; k < r; k++)
            rules[k] = (axis_rule){.kind = AFFINE, .step = 1};
        for (int64_t i = 0; i < yd[a]; i++) {
            float c = resize_coord(i, in, yd[a], s, coord);
            c = c < 0.0f ? 0.0f : c > (float)(in - 1) ? (float)(in - 1) : c;
            idx0[i] = (int64_t)floorf(c);
            idx1[i] = idx0[i] + 1 < in ? idx0[i] + 1 : in - 1;
            wt[i] = c - (float)idx0[i];
        }
        rules[a] = (axis_rule){.kind = LIST, .list = idx0, .d = in};
        st = run_rules("pdnn_resize", x, xs, y, r, yd, ys, rules, a, idx1, wt, 0.0f);
    } else {
        pdnn__host_oom("pdnn_resize", "the interpolation tables", (uint64_t)yd[a] * 20);
    }
    free(idx0);
    free(idx1);
    free(wt);
    return st;
}

pdnn_status pdnn_resize(const pdnn_tensor *x, pdnn_resize_mode mode, pdnn_resize_coord coord,
                        pdnn_resize_nearest nearest, const float *scales, pdnn_tensor *y)
{
    static const char name[] = "pdnn_resize";
    const pdnn_tensor *ts[] = {x, y};
    const char *names[] = {"x", "y"};
    pdnn_status st = need(name, ts, names, 2);
    if (st != PDNN_SUCCESS)
        return st;
    if ((unsigned)mode > PDNN_RESIZE_LINEAR || (unsigned)coord > PDNN_RESIZE_PYTORCH_HALF_PIXEL ||
        (unsigned)nearest > PDNN_RESIZE_CEIL)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: mode %d, coordinates %d or rounding %d is unknown", name,
                           (int)mode, (int)coord, (int)nearest);
    int64_t xd[R], xs[R], yd[R], ys[R];
    float s[R];
    const int r = geom(x, xd, xs), yr = geom(y, yd, ys);
    if (yr != r) {
        char a[200], b[200];
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: x is %s and y %s; they must have one rank", name,
                           pdnn__desc_string(&x->desc, a, sizeof a), pdnn__desc_string(&y->desc, b, sizeof b));
    }
    for (int k = 0; k < r; k++) {
        s[k] = scales ? scales[k] : (float)yd[k] / (float)xd[k];
        if (!(s[k] > 0.0f) || !isfinite(s[k]))
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: scales[%d] = %g; scales must be positive", name, k,
                               (double)s[k]);
    }
    if (mode == PDNN_RESIZE_NEAREST) {
        axis_rule rules[R];
        for (int k = 0; k < r; k++)
            rules[k] = (axis_rule){.kind = NEAREST, .d = xd[k], .out = yd[k], .s = s[k], .coord = coord,
                                   .how = nearest};
        return run_rules(name, x, xs, y, r, yd, ys, rules, -1, NULL, NULL, 0.0f);
    }
    /* Linear: one pass per axis that changes, through ND temporaries. */
    int axes[R], na = 0;
    for (int k = 0; k < r; k++)
        if (yd[k] != xd[k] || s[k] != 1.0f)
            axes[na++] = k;
    if (na == 0) {
        const pdnn_resize_nearest f = PDNN_RESIZE_FLOOR;
        return pdnn_resize(x, PDNN_RESIZE_NEAREST, PDNN_RESIZE_ASYMMETRIC, f, NULL, y);
    }
    const pdnn_tensor *src = x;
    pdnn_tensor *tmp[2] = {NULL, NULL};
    int64_t cur[R], cs[R];
    memcpy(cur, xd, sizeof cur);
    memcpy(cs, xs, sizeof cs);
    st = PDNN_SUCCESS;
    for (int p = 0; p < na && st == PDNN_SUCCESS; p++) {
        const int a = axes[p];
        const int64_t in = cur[a];
        cur[a] = yd[a];
        const pdnn_tensor *dst = y;
        int64_t ds[R];
        memcpy(ds, ys, sizeof ds);
        if (p + 1 < na) {
            pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_ND, {0}, r};
            memcpy(d.dims, cur, (size_t)r * sizeof *cur);
            pdnn_tensor_release(tmp[p & 1]);
            tmp[p & 1] = NULL;
            if ((st = pdnn_tensor_create(x->dev, &d, &tmp[p & 1])) != PDNN_SUCCESS)
                break;
            dst = tmp[p & 1];
            for (int k = r - 1, m = 1; k >= 0; k--)
                ds[k] = m, m *= cur[k];
        }
        st = lerp_pass(src, cs, dst, r, cur, ds, a, in, s[a], coord);
        src = dst;
        memcpy(cs, ds, sizeof cs);
    }
    pdnn_tensor_release(tmp[0]);
    pdnn_tensor_release(tmp[1]);
    return st;
}

pdnn_status pdnn_where(const pdnn_tensor *mask, const pdnn_tensor *a, const pdnn_tensor *b, pdnn_tensor *y)
{
    static const char name[] = "pdnn_where";
    const pdnn_tensor *ts[] = {mask, a, b, y};
    const char *names[] = {"mask", "a", "b", "y"};
    pdnn_status st = need(name, ts, names, 4);
    if (st != PDNN_SUCCESS)
        return st;
    pdnn__op_call call;
    memset(&call, 0, sizeof call);
    call.op = PDNN__OP_WHERE;
    call.dtype = y->desc.dtype;
    pdnn__where_call *c = &call.u.where;
    int64_t yd[R];
    const int yr = geom(y, yd, c->ys);
    int64_t *out[] = {c->ms, c->as, c->bs};
    for (int i = 0; i < 3; i++) {
        int64_t d[R], s[R];
        const int r = geom(ts[i], d, s);
        for (int k = 0; k < yr; k++) {
            const int j = k - (yr - r);
            out[i][k] = j < 0 || d[j] == 1 ? 0 : s[j];
            if (r > yr || (j >= 0 && d[j] != 1 && d[j] != yd[k])) {
                char da[200], db[200];
                return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                                   "%s: %s is %s and y %s; each dim (aligned at the end) must be 1 or y's", name,
                                   names[i], pdnn__desc_string(&ts[i]->desc, da, sizeof da),
                                   pdnn__desc_string(&y->desc, db, sizeof db));
            }
        }
    }
    c->rank = yr;
    for (int k = 0; k < R; k++)
        c->dims[k] = k < yr ? yd[k] : 1;
    c->m_buf = mask->block.buf;
    c->a_buf = a->block.buf;
    c->b_buf = b->block.buf;
    c->y_buf = y->block.buf;
    return pdnn__dispatch(y->dev, &call, NULL, NULL);
}

void pdnn__resize_matrix(pdnn_resize_mode mode, pdnn_resize_coord coord, pdnn_resize_nearest how, int64_t in,
                         int64_t out, float s, float *m)
{
    memset(m, 0, (size_t)(in * out) * sizeof *m);
    for (int64_t i = 0; i < out; i++) {
        float c = resize_coord(i, in, out, s, coord);
        if (mode == PDNN_RESIZE_NEAREST) {
            m[i * in + resize_nearest(c, in, how)] = 1.0f;
            continue;
        }
        /* lerp_pass's taps and weight */
        c = c < 0.0f ? 0.0f : c > (float)(in - 1) ? (float)(in - 1) : c;
        const int64_t i0 = (int64_t)floorf(c), i1 = i0 + 1 < in ? i0 + 1 : in - 1;
        const float w = c - (float)i0;
        m[i * in + i0] += 1.0f - w;
        m[i * in + i1] += w;
    }
}
