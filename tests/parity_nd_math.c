/* The op-parity harness's N-d math cases (grad mode, with the training
 * ops): transpose, softmax / log-softmax along an axis, layer norm and
 * the reductions, over ranks 0 to 8 with odd sizes, batch 1 and 17, ND
 * and image layouts. Each runs on every device by every algorithm of its
 * op against naive loops in double written here over logical indices
 * (not the library's plain forms), and compares:
 *   transpose    exact (a copy);
 *   softmax      |got - ref| (the outputs lie in [0, 1]); log-softmax
 *                |got - ref| / max(|ref|, 1);
 *   layer_norm   |got - ref| / max(|ref|, 1);
 *   reduce       |got - ref| / the output's sum (mean: mean) of |x| over
 *                its reduced elements; max, min the same over max |x|;
 * within the algorithm's tolerance (exact: equal). */
#include "core/context.h"
#include "ops/dispatch.h"
#include "helpers.h"
#include "parity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct nd_case {
    const char *set; /* "transpose", "softmax", "layer_norm", "reduce" */
    pdnn__op op;
    pdnn_layout layout; /* x's */
    int rank;
    int64_t dims[PDNN_MAX_RANK];
    int perm[PDNN_MAX_RANK]; /* transpose */
    pdnn_layout y_layout;    /* transpose: y's (ND: x's dims permuted; else x's layout rules) */
    int axis;                /* softmax, layer_norm */
    int n_axes;              /* reduce (0: all) */
    int axes[PDNN_MAX_RANK];
    int flag;                /* softmax: log; layer_norm: bias; reduce: pdnn_reduction */
    int keep;                /* reduce: keepdims */
    float amp, offset;       /* x = offset + amp * U(-1, 1) */
} nd_case;

#define T PDNN__OP_ND_TRANSPOSE
#define S PDNN__OP_ND_SOFTMAX
#define L PDNN__OP_ND_LAYER_NORM
#define R PDNN__OP_ND_REDUCE
#define ND PDNN_ND

static const nd_case cases[] = {
    /* transpose: scalars and vectors (copies), matrices and batched ones
     * (tiled where both inner axes are 8 or more), NCHW <-> NHWC through
     * an ND view, attention's head swap, ShuffleNet's channel shuffle,
     * reversals up to rank 8 */
    {"transpose", T, ND, 0, {0}, {0}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 1, {7}, {0}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 2, {17, 33}, {1, 0}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 2, {1, 9}, {1, 0}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 3, {17, 9, 33}, {0, 2, 1}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 3, {3, 5, 7}, {2, 0, 1}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, PDNN_NCHW, 4, {17, 5, 3, 7}, {0, 2, 3, 1}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 4, {1, 9, 11, 13}, {0, 3, 1, 2}, PDNN_NCHW, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, PDNN_NHWC, 4, {3, 9, 5, 7}, {0, 1, 2, 3}, PDNN_NCHW, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 4, {3, 5, 7, 9}, {0, 2, 1, 3}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 4, {1, 3, 5, 7}, {3, 2, 1, 0}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 5, {1, 2, 29, 7, 7}, {0, 2, 1, 3, 4}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 5, {3, 1, 5, 7, 2}, {4, 0, 3, 1, 2}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 6, {2, 3, 1, 5, 3, 7}, {5, 4, 3, 2, 1, 0}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 6, {17, 3, 5, 1, 3, 3}, {0, 3, 1, 4, 2, 5}, ND, 0, 0, {0}, 0, 0, 1, 0},
    {"transpose", T, ND, 8, {2, 3, 2, 3, 2, 3, 2, 3}, {1, 3, 5, 7, 0, 2, 4, 6}, ND, 0, 0, {0}, 0, 0, 1, 0},
    /* softmax: rows (inner 1) and columns, log-softmax, values of 80
     * (exp overflows float unless the max is taken off), image layouts */
    {"softmax", S, ND, 1, {7}, {0}, ND, 0, 0, {0}, 0, 0, 4, 0},
    {"softmax", S, ND, 2, {17, 33}, {0}, ND, -1, 0, {0}, 0, 0, 4, 0},
    {"softmax", S, ND, 2, {17, 33}, {0}, ND, 0, 0, {0}, 1, 0, 4, 0},
    {"softmax", S, ND, 3, {3, 5, 1001}, {0}, ND, 2, 0, {0}, 0, 0, 80, 0},
    {"softmax", S, ND, 3, {3, 5, 1001}, {0}, ND, -1, 0, {0}, 1, 0, 80, 0},
    {"softmax", S, PDNN_NCHW, 4, {17, 5, 3, 3}, {0}, ND, 1, 0, {0}, 0, 0, 4, 0},
    {"softmax", S, PDNN_NHWC, 4, {1, 5, 3, 7}, {0}, ND, 1, 0, {0}, 1, 0, 4, 0},
    {"softmax", S, PDNN_NHWC, 4, {1, 5, 3, 7}, {0}, ND, 2, 0, {0}, 0, 0, 4, 0},
    {"softmax", S, ND, 5, {3, 1, 5, 7, 3}, {0}, ND, 2, 0, {0}, 1, 0, 4, 0},
    {"softmax", S, ND, 6, {1, 3, 5, 3, 3, 7}, {0}, ND, -1, 0, {0}, 1, 0, 4, 0},
    {"softmax", S, ND, 6, {1, 3, 5, 3, 3, 7}, {0}, ND, 0, 0, {0}, 0, 0, 4, 0},
    /* layer norm: ViT's rows, every dim, a large mean (one-pass variance
     * in float would lose it), without bias */
    {"layer_norm", L, ND, 1, {7}, {0}, ND, 0, 0, {0}, 1, 0, 2, 0},
    {"layer_norm", L, ND, 2, {17, 33}, {0}, ND, 1, 0, {0}, 1, 0, 2, 0},
    {"layer_norm", L, ND, 2, {17, 33}, {0}, ND, 0, 0, {0}, 0, 0, 2, 0},
    {"layer_norm", L, ND, 3, {1, 197, 65}, {0}, ND, -1, 0, {0}, 1, 0, 2, 0},
    {"layer_norm", L, ND, 3, {3, 5, 1001}, {0}, ND, -1, 0, {0}, 1, 0, 1, 1000},
    {"layer_norm", L, PDNN_NCHW, 4, {17, 5, 3, 3}, {0}, ND, 1, 0, {0}, 1, 0, 2, 0},
    {"layer_norm", L, ND, 5, {3, 1, 5, 7, 3}, {0}, ND, 3, 0, {0}, 1, 0, 2, 0},
    {"layer_norm", L, ND, 6, {1, 3, 5, 3, 3, 7}, {0}, ND, 4, 0, {0}, 0, 0, 2, 0},
    /* reductions: a scalar (a copy), all axes, the inner or outer ones,
     * alternating sets, keepdims or not, image layouts (global average
     * pooling over H and W, NHWC's C) */
    {"reduce", R, ND, 0, {0}, {0}, ND, 0, 0, {0}, PDNN_REDUCTION_SUM, 1, 1, 0},
    {"reduce", R, ND, 1, {7}, {0}, ND, 0, 0, {0}, PDNN_REDUCTION_MEAN, 0, 1, 0},
    {"reduce", R, ND, 2, {17, 33}, {0}, ND, 0, 1, {1}, PDNN_REDUCTION_MEAN, 1, 1, 0},
    {"reduce", R, ND, 2, {17, 33}, {0}, ND, 0, 1, {0}, PDNN_REDUCTION_SUM, 0, 1, 0},
    {"reduce", R, ND, 3, {3, 5, 7}, {0}, ND, 0, 2, {0, 2}, PDNN_REDUCTION_MAX, 1, 1, 0},
    {"reduce", R, ND, 3, {3, 5, 1001}, {0}, ND, 0, 1, {-1}, PDNN_REDUCTION_SUM, 1, 1, 0.5f},
    {"reduce", R, PDNN_NCHW, 4, {17, 5, 3, 3}, {0}, ND, 0, 2, {2, 3}, PDNN_REDUCTION_MEAN, 1, 1, 0},
    {"reduce", R, PDNN_NHWC, 4, {1, 5, 3, 7}, {0}, ND, 0, 2, {2, 3}, PDNN_REDUCTION_MEAN, 1, 1, 0},
    {"reduce", R, PDNN_NHWC, 4, {1, 5, 3, 7}, {0}, ND, 0, 1, {1}, PDNN_REDUCTION_MIN, 1, 1, 0},
    {"reduce", R, ND, 5, {3, 1, 5, 7, 3}, {0}, ND, 0, 2, {1, 3}, PDNN_REDUCTION_SUM, 0, 1, 0},
    {"reduce", R, ND, 6, {1, 3, 5, 3, 3, 7}, {0}, ND, 0, 3, {0, 2, 4}, PDNN_REDUCTION_MAX, 0, 1, 0},
    {"reduce", R, ND, 6, {1, 3, 5, 3, 3, 7}, {0}, ND, 0, 0, {0}, PDNN_REDUCTION_MIN, 1, 1, 0},
    {"reduce", R, ND, 6, {17, 3, 5, 3, 3, 7}, {0}, ND, 0, 3, {5, 1, 3}, PDNN_REDUCTION_MEAN, 1, 1, 0},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* x's desc. */
static pdnn_tensor_desc x_desc(const nd_case *c)
{
    pdnn_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = PDNN_FLOAT32;
    d.layout = c->layout;
    d.rank = c->rank;
    for (int k = 0; k < PDNN_MAX_RANK; k++)
        d.dims[k] = k < c->rank ? c->dims[k] : 1;
    return d;
}

/* The element stride of each logical axis of d: row-major for ND, the
 * image layouts written out (N C H W memory orders), independently of
 * the library's helpers. */
static void strides_of(const pdnn_tensor_desc *d, int64_t st[PDNN_MAX_RANK])
{
    const int r = d->layout == PDNN_ND ? d->rank : 4;
    const int64_t *D = d->dims;
    if (d->layout == PDNN_NHWC) { /* N H W C */
        st[1] = 1, st[3] = D[1], st[2] = D[1] * D[3], st[0] = D[1] * D[2] * D[3];
        return;
    }
    int64_t s = 1;
    for (int k = r - 1; k >= 0; k--) {
        st[k] = s;
        s *= D[k];
    }
}

static int rank_of(const pdnn_tensor_desc *d) { return d->layout == PDNN_ND ? d->rank : 4; }

/* y's desc. */
static pdnn_tensor_desc y_desc(const nd_case *c)
{
    pdnn_tensor_desc x = x_desc(c), y = x;
    if (c->op == T) {
        y.layout = c->y_layout;
        for (int k = 0; k < c->rank; k++)
            y.dims[k] = x.dims[c->perm[k]];
        y.rank = c->rank;
    } else if (c->op == R) {
        unsigned m = 0;
        for (int i = 0; i < c->n_axes; i++)
            m |= 1u << (c->axes[i] < 0 ? c->axes[i] + c->rank : c->axes[i]);
        if (c->n_axes == 0)
            m = (1u << c->rank) - 1u;
        int j = 0;
        for (int k = 0; k < c->rank; k++) {
            if (!(m >> k & 1u))
                y.dims[j++] = x.dims[k];
            else if (c->keep)
                y.dims[j++] = 1;
        }
        y.rank = j;
        for (; j < PDNN_MAX_RANK; j++)
            y.dims[j] = 1;
        if (!c->keep)
            y.layout = PDNN_ND;
    }
    return y;
}

/* Unravels i over dims[r] (last fastest) into idx. */
static void unravel(int64_t i, int r, const int64_t *dims, int64_t *idx)
{
    for (int k = r - 1; k >= 0; k--) {
        idx[k] = i % dims[k];
        i /= dims[k];
    }
}

static int64_t at(int r, const int64_t *idx, const int64_t *st)
{
    int64_t o = 0;
    for (int k = 0; k < r; k++)
        o += idx[k] * st[k];
    return o;
}

/* The reference (ref, y's memory order) and each output's error scale. */
static void naive(const nd_case *c, const float *x, double *ref, double *scale)
{
    const pdnn_tensor_desc xd = x_desc(c), yd = y_desc(c);
    const int r = rank_of(&xd);
    int64_t xs[PDNN_MAX_RANK], ys[PDNN_MAX_RANK], xi[PDNN_MAX_RANK], yi[PDNN_MAX_RANK];
    strides_of(&xd, xs);
    strides_of(&yd, ys);
    const int64_t n = pdnn_tensor_desc_elements(&xd), ny = pdnn_tensor_desc_elements(&yd);
    if (c->op == T) {
        for (int64_t i = 0; i < ny; i++) {
            unravel(i, r, yd.dims, yi);
            for (int k = 0; k < r; k++)
                xi[c->perm[k]] = yi[k];
            ref[at(r, yi, ys)] = x[at(r, xi, xs)];
            scale[at(r, yi, ys)] = 1.0;
        }
        return;
    }
    if (c->op == S || c->op == L) {
        const int a = c->axis < 0 ? c->axis + r : c->axis;
        /* Every element whose index is i's outside the normalized axes
         * (softmax: a; layer norm: a..r-1) is one group; loop over each
         * element's group. Quadratic, on small cases. */
        for (int64_t i = 0; i < n; i++) {
            unravel(i, r, xd.dims, xi);
            int64_t gi[PDNN_MAX_RANK];
            memcpy(gi, xi, sizeof gi);
            double m = -INFINITY, sum = 0.0, mean = 0.0, var = 0.0;
            int64_t cnt = 1;
            for (int k = a; k < (c->op == S ? a + 1 : r); k++)
                cnt *= xd.dims[k];
            int64_t sub[PDNN_MAX_RANK] = {0};
            for (int pass = 0; pass < 3; pass++)
                for (int64_t j = 0; j < cnt; j++) {
                    unravel(j, (c->op == S ? 1 : r - a), xd.dims + a, sub);
                    for (int k = a; k < (c->op == S ? a + 1 : r); k++)
                        gi[k] = sub[k - a];
                    const double v = x[at(r, gi, xs)];
                    if (c->op == S) {
                        if (pass == 0)
                            m = fmax(m, v);
                        else if (pass == 1)
                            sum += exp(v - m);
                    } else if (pass == 0) {
                        mean += v / (double)cnt;
                    } else if (pass == 1) {
                        var += (v - mean) * (v - mean) / (double)cnt;
                    }
                }
            const double v = x[at(r, xi, xs)];
            double y;
            if (c->op == S) {
                y = c->flag ? v - m - log(sum) : exp(v - m) / sum;
                scale[at(r, xi, ys)] = c->flag ? fmax(fabs(y), 1.0) : 1.0;
            } else {
                int64_t j = 0;
                for (int k = a; k < r; k++)
                    j = j * xd.dims[k] + xi[k];
                /* scale and bias: the element's index in the row, values set in run() */
                const double g = 0.5 + 0.01 * (double)(j % 97), b = c->flag ? -0.25 + 0.003 * (double)(j % 89) : 0.0;
                y = (v - mean) / sqrt(var + 1e-5) * g + b;
                scale[at(r, xi, ys)] = fmax(fabs(y), 1.0);
            }
            ref[at(r, xi, ys)] = y;
        }
        return;
    }
    /* reduce: y's element from x's with the reduced axes collapsed */
    unsigned m = 0;
    for (int i = 0; i < c->n_axes; i++)
        m |= 1u << (c->axes[i] < 0 ? c->axes[i] + r : c->axes[i]);
    if (c->n_axes == 0)
        m = (1u << r) - 1u;
    int64_t kd[PDNN_MAX_RANK], ks[PDNN_MAX_RANK], count = 1;
    pdnn_tensor_desc keep = xd; /* x's desc with the reduced dims 1, stored like y */
    for (int k = 0; k < r; k++) {
        kd[k] = m >> k & 1u ? 1 : xd.dims[k];
        count *= m >> k & 1u ? xd.dims[k] : 1;
        keep.dims[k] = kd[k];
    }
    strides_of(&keep, ks);
    for (int64_t j = 0; j < ny; j++) {
        ref[j] = c->flag == PDNN_REDUCTION_MAX ? -INFINITY : c->flag == PDNN_REDUCTION_MIN ? INFINITY : 0.0;
        scale[j] = 0.0;
    }
    for (int64_t i = 0; i < n; i++) {
        unravel(i, r, xd.dims, xi);
        for (int k = 0; k < r; k++)
            yi[k] = m >> k & 1u ? 0 : xi[k];
        const int64_t o = at(r, yi, ks);
        const double v = x[at(r, xi, xs)];
        if (c->flag == PDNN_REDUCTION_MAX || c->flag == PDNN_REDUCTION_MIN) {
            ref[o] = c->flag == PDNN_REDUCTION_MAX ? fmax(ref[o], v) : fmin(ref[o], v);
            scale[o] = fmax(scale[o], fabs(v));
        } else {
            ref[o] += c->flag == PDNN_REDUCTION_MEAN ? v / (double)count : v;
            scale[o] += c->flag == PDNN_REDUCTION_MEAN ? fabs(v) / (double)count : fabs(v);
        }
    }
    for (int64_t j = 0; j < ny; j++)
        scale[j] = fmax(scale[j], 1e-30);
}

/* Runs c on dev into got (y's memory order). */
static pdnn_status run(pdnn_device *dev, const nd_case *c, const float *x, float *got)
{
    const pdnn_tensor_desc xd = x_desc(c), yd = y_desc(c);
    pdnn_tensor *tx = parity_make(dev, &xd, x), *ty = parity_make(dev, &yd, NULL), *tg = NULL, *tb = NULL;
    pdnn_status st = tx && ty ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS && c->op == L) {
        const int r = rank_of(&xd), a = c->axis < 0 ? c->axis + r : c->axis;
        pdnn_tensor_desc sd = {PDNN_FLOAT32, PDNN_ND, {1}, r - a};
        for (int k = a; k < r; k++)
            sd.dims[k - a] = xd.dims[k];
        const int64_t cols = pdnn_tensor_desc_elements(&sd);
        float *g = parity_xcalloc((size_t)cols, sizeof(float)), *b = parity_xcalloc((size_t)cols, sizeof(float));
        for (int64_t j = 0; j < cols; j++) {
            g[j] = (float)(0.5 + 0.01 * (double)(j % 97));
            b[j] = (float)(-0.25 + 0.003 * (double)(j % 89));
        }
        tg = parity_make(dev, &sd, g);
        tb = c->flag ? parity_make(dev, &sd, b) : NULL;
        free(g);
        free(b);
        st = tg && (tb || !c->flag) ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
    }
    if (st == PDNN_SUCCESS)
        st = c->op == T   ? pdnn_transpose(tx, c->perm, ty)
             : c->op == S ? pdnn_softmax_axis(tx, c->axis, c->flag, ty)
             : c->op == L ? pdnn_layer_norm(tx, c->axis, 1e-5f, tg, tb, ty)
                          : pdnn_reduce(tx, c->axes, c->n_axes, (pdnn_reduction)c->flag, ty);
    if (st == PDNN_SUCCESS)
        st = pdnn_tensor_read(ty, got, (size_t)pdnn_tensor_desc_bytes(&yd));
    pdnn_tensor_release(tx);
    pdnn_tensor_release(ty);
    pdnn_tensor_release(tg);
    pdnn_tensor_release(tb);
    return st;
}

static int selected(const nd_case *c, int op, const char *set)
{
    return (op < 0 || (int)c->op == op) && (!set || strcmp(set, c->set) == 0);
}

int parity_nd_math_count(int op, const char *set)
{
    int n = 0;
    for (int i = 0; i < N_CASES; i++)
        n += selected(&cases[i], op, set);
    return n;
}

static void case_name(const nd_case *c, char *buf, size_t len)
{
    size_t u = (size_t)snprintf(buf, len, "%s %s [", c->set, pdnn_layout_name(c->layout));
    for (int k = 0; k < c->rank && u < len; k++)
        u += (size_t)snprintf(buf + u, len - u, "%s%lld", k ? "," : "", (long long)c->dims[k]);
    if (u >= len)
        return;
    if (c->op == T) {
        u += (size_t)snprintf(buf + u, len - u, "] perm");
        for (int k = 0; k < c->rank && u < len; k++)
            u += (size_t)snprintf(buf + u, len - u, "%s%d", k ? "," : " ", c->perm[k]);
        if (u < len)
            snprintf(buf + u, len - u, " -> %s", pdnn_layout_name(c->y_layout));
    } else if (c->op == R) {
        static const char *const kinds[] = {"sum", "mean", "max", "min"};
        u += (size_t)snprintf(buf + u, len - u, "] %s axes", kinds[c->flag]);
        for (int k = 0; k < c->n_axes && u < len; k++)
            u += (size_t)snprintf(buf + u, len - u, "%s%d", k ? "," : " ", c->axes[k]);
        if (u < len)
            snprintf(buf + u, len - u, "%s%s", c->n_axes ? "" : " all", c->keep ? " keepdims" : "");
    } else {
        snprintf(buf + u, len - u, "] axis %d%s", c->axis,
                 c->op == S ? (c->flag ? " log" : "") : (c->flag ? " bias" : ""));
    }
}

void parity_nd_math_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo, int verbose)
{
    (void)verbose;
    for (int ci = 0; ci < N_CASES; ci++) {
        const nd_case *c = &cases[ci];
        if (!selected(c, op, set))
            continue;
        char cname[160];
        case_name(c, cname, sizeof cname);
        const pdnn_tensor_desc xd = x_desc(c), yd = y_desc(c);
        const int64_t n = pdnn_tensor_desc_elements(&xd), ny = pdnn_tensor_desc_elements(&yd);
        float *x = parity_xcalloc((size_t)n, sizeof(float)), *got = parity_xcalloc((size_t)ny, sizeof(float));
        double *ref = parity_xcalloc((size_t)ny, sizeof(double)), *scale = parity_xcalloc((size_t)ny, sizeof(double));
        th_fill(x, n, 4000u + (uint32_t)ci * 31u);
        for (int64_t i = 0; i < n; i++)
            x[i] = c->offset + c->amp * x[i];
        naive(c, x, ref, scale);
        for (int di = 0; di < ndev; di++) {
            const pdnn__algo *const *list = pdnn__algos(devs[di], c->op);
            for (int ai = 0; list[ai]; ai++) {
                const pdnn__algo *a = list[ai];
                if (algo && strcasecmp(algo, a->name) != 0)
                    continue;
                for (int64_t i = 0; i < ny; i++)
                    got[i] = NAN;
                pdnn__dispatch_force(c->op, a->name, -1);
                const pdnn_status st = run(devs[di], c, x, got);
                pdnn__dispatch_force(c->op, NULL, -1);
                if (st == PDNN_ERR_UNSUPPORTED) {
                    parity_skip(devs[di], a, cname, pdnn_last_error());
                    continue;
                }
                if (st != PDNN_SUCCESS) {
                    parity_fail(devs[di], a, cname, "%s (%s)", pdnn_last_error(), pdnn_status_string(st));
                    continue;
                }
                const double tol = pdnn__algo_tol(a, PDNN_FLOAT32);
                double worst = 0.0;
                int64_t where = 0;
                for (int64_t i = 0; i < ny; i++) {
                    const double e = tol < 0 ? ((double)got[i] == ref[i] ? 0.0 : INFINITY)
                                             : fabs((double)got[i] - ref[i]) / scale[i];
                    if (!(e <= worst)) {
                        worst = isnan(e) ? INFINITY : e;
                        where = i;
                    }
                }
                if (!(worst <= (tol < 0 ? 0.0 : tol))) {
                    parity_fail(devs[di], a, cname,
                                "y[%lld] (memory order) is %.9g, expected %.9g: normalised error %.3g, tolerance %.3g",
                                (long long)where, (double)got[where], ref[where], worst, tol);
                    continue;
                }
                parity_pass(devs[di], a, cname, worst);
            }
        }
        free(x);
        free(got);
        free(ref);
        free(scale);
    }
    fflush(stdout);
}
