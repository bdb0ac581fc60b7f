/*
 * The data-movement ops' cases of the op-parity harness (test mode):
 * pdnn_slice, split, expand, gather, where, pad_nd and resize over ranks 0
 * to 6 with odd sizes (a batch of 1 and of 17), rank-4 cases in NCHW and
 * NHWC too, each run on every device by every algorithm of its registry
 * op (PDNN__OP_INDEX, PDNN__OP_WHERE; forced by name) and compared with a
 * naive loop written here on logical row-major arrays: each output
 * element's source found from the op's definition (numpy's slice rules,
 * broadcasting aligned at the end, the mirrored or clamped pad index,
 * ONNX's resize coordinates with all 2^k linear taps at once). Copies
 * must be exact; linear resize within the algorithm's tolerance of the
 * output's largest magnitude.
 */
#include "core/context.h"
#include "ops/dispatch.h"
#include "parity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define R PDNN_MAX_RANK

typedef enum ix_kind { SLICE, SPLIT, EXPAND, GATHER, WHERE, PADND, RESIZE } ix_kind;
static const char *const set_names[] = {"slice", "split", "expand", "gather", "where", "pad_nd", "resize"};

typedef struct ix_case {
    ix_kind k;
    int r, yr;
    int64_t xd[R], yd[R];
    pdnn_layout xl, yl;
    int n, axis;
    int64_t a[2 * R], b[R], c[R], s[R]; /* slice: starts, ends, axes, steps; gather: a the indices (n);
                                          pad: a the pads; split: a the sizes; where: b mask, c a's dims */
    int mr, ar;
    int mode, coord, nearest;
    float value;
} ix_case;

static ix_case *cases;
static int n_cases;

static ix_case *add(ix_kind k, int r, const int64_t *xd)
{
    ix_case *nc = realloc(cases, (size_t)(n_cases + 1) * sizeof *cases);
    if (!nc)
        abort();
    cases = nc;
    ix_case *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->k = k, c->r = c->yr = r, c->xl = c->yl = PDNN_ND;
    memcpy(c->xd, xd, sizeof c->xd);
    return c;
}

/* numpy's x[b:e:s] along an axis of d: the indices, how many. */
static int64_t slice_list(int64_t d, int64_t b, int64_t e, int64_t s, int64_t *out)
{
    if (b < 0 && (b += d) < 0)
        b = s < 0 ? -1 : 0;
    else if (b >= d)
        b = s < 0 ? d - 1 : d;
    if (e < 0 && (e += d) < 0)
        e = s < 0 ? -1 : 0;
    else if (e >= d)
        e = s < 0 ? d - 1 : d;
    int64_t n = 0;
    for (int64_t i = b; s > 0 ? i < e : i > e; i += s)
        out[n++] = i;
    return n;
}

/* Odd sizes per rank; the batch (axis 0) 1 or 17. */
static void dims_of(int r, int batch, int64_t *d)
{
    static const int64_t odd[] = {3, 5, 1, 7, 3, 5};
    for (int k = 0; k < R; k++)
        d[k] = k >= r ? 1 : k == 0 ? batch : odd[k];
}

static void build(void)
{
    if (n_cases)
        return;
    for (int r = 0; r <= 6; r++)
        for (int bi = 0; bi < 2; bi++) {
            int64_t d[R];
            dims_of(r, bi ? 17 : 1, d);
            if (r >= 1) {
                /* slice: every axis, steps 1, 2, -1, -2; starts and ends negative, past the ends */
                ix_case *c = add(SLICE, r, d);
                c->n = r;
                for (int k = 0; k < r; k++) {
                    c->c[k] = k % 2 ? k - r : k; /* axes, some negative */
                    const int64_t step[] = {1, 2, -1, -2};
                    c->s[k] = step[(k + bi) % 4];
                    c->a[k] = c->s[k] > 0 ? (k % 3 == 0 ? -100 : d[k] / 2) : (k % 3 == 0 ? 100 : -1);
                    c->b[k] = c->s[k] > 0 ? (k % 3 == 1 ? 1000 : -1) : -1000;
                    int64_t tmp[64];
                    if (slice_list(d[k], c->a[k], c->b[k], c->s[k], tmp) == 0) /* keep it non-empty */
                        c->a[k] = c->s[k] > 0 ? 0 : 1000, c->b[k] = c->s[k] > 0 ? 1000 : -1000;
                }
                /* split: the last axis in parts 1 and the rest, or equal */
                c = add(SPLIT, r, d);
                c->axis = r - 1;
                c->n = d[r - 1] > 1 ? 2 : 1;
                c->a[0] = d[r - 1] > 1 ? 1 : d[r - 1];
                c->a[1] = d[r - 1] - 1;
                /* gather: repeated and negative indices along the middle axis */
                c = add(GATHER, r, d);
                c->axis = r / 2;
                const int64_t da = d[c->axis];
                c->n = 4;
                c->a[0] = da - 1, c->a[1] = 0, c->a[2] = -1, c->a[3] = -da;
                /* resize: nearest and linear over the last axes */
                for (int m = 0; m < 6; m++) {
                    c = add(RESIZE, r, d);
                    memcpy(c->yd, d, sizeof c->yd);
                    c->yd[r - 1] = d[r - 1] * 2 + 1;
                    if (r >= 2)
                        c->yd[r - 2] = d[r - 2] > 2 ? d[r - 2] - 2 : 3;
                    static const int modes[6][3] = {{0, PDNN_RESIZE_ASYMMETRIC, PDNN_RESIZE_FLOOR},
                                                    {0, PDNN_RESIZE_HALF_PIXEL, PDNN_RESIZE_ROUND_PREFER_FLOOR},
                                                    {0, PDNN_RESIZE_ALIGN_CORNERS, PDNN_RESIZE_ROUND_PREFER_CEIL},
                                                    {1, PDNN_RESIZE_HALF_PIXEL, 0},
                                                    {1, PDNN_RESIZE_ALIGN_CORNERS, 0},
                                                    {1, PDNN_RESIZE_PYTORCH_HALF_PIXEL, 0}};
                    c->mode = modes[m][0], c->coord = modes[m][1], c->nearest = modes[m][2];
                }
            }
            /* expand to one rank more (and rank 0 to 1): 1s repeat */
            ix_case *c = add(EXPAND, r, d);
            c->yr = r + 1;
            c->yd[0] = 3;
            for (int k = 0; k < r; k++)
                c->yd[k + 1] = d[k] == 1 ? 5 : d[k];
            for (int k = r + 1; k < R; k++)
                c->yd[k] = 1;
            if (r >= 1) { /* x's ones at the broadcast positions */
                c->xd[r - 1] = 1;
                c->yd[r] = 4;
            }
            /* where: mask broadcast over the first axis, a of lower rank */
            c = add(WHERE, r, d);
            memcpy(c->yd, d, sizeof c->yd);
            c->mr = r, c->ar = r > 0 ? r - 1 : 0;
            for (int k = 0; k < R; k++)
                c->b[k] = k == 0 ? 1 : d[k], c->c[k] = k + 1 < r ? d[k + 1] : 1;
            /* pad: each mode */
            for (int m = 0; m < 3; m++) {
                c = add(PADND, r, d);
                c->mode = m;
                c->value = m ? 0.0f : -2.5f;
                for (int k = 0; k < r; k++) {
                    c->a[k] = m == 1 ? (d[k] > 1 ? d[k] - 1 : 0) : (k % 3);
                    c->a[r + k] = m == 1 ? (d[k] > 2 ? 1 : 0) : (k % 2) * 2;
                }
            }
        }
    /* rank 4 through the image layouts */
    const int64_t d4[R] = {2, 3, 5, 7, 1, 1, 1, 1};
    for (int li = 0; li < 2; li++) {
        const pdnn_layout l = li ? PDNN_NHWC : PDNN_NCHW;
        ix_case *c = add(SLICE, 4, d4);
        c->xl = c->yl = l, c->n = 2, c->c[0] = 2, c->c[1] = 3, c->a[0] = 1, c->b[0] = 5, c->s[0] = 2, c->a[1] = -1,
        c->b[1] = -100, c->s[1] = -3;
        for (int m = 0; m < 6; m++) {
            c = add(RESIZE, 4, d4);
            c->xl = l, c->yl = m % 2 ? PDNN_NCHW : l;
            memcpy(c->yd, d4, sizeof c->yd);
            c->yd[2] = 11, c->yd[3] = 3;
            c->mode = m >= 3, c->coord = m % 3 == 0 ? PDNN_RESIZE_HALF_PIXEL : m % 3 == 1 ? PDNN_RESIZE_ASYMMETRIC
                                                                                        : PDNN_RESIZE_ALIGN_CORNERS;
            c->nearest = m % 3 == 1 ? PDNN_RESIZE_FLOOR : PDNN_RESIZE_ROUND_PREFER_FLOOR;
        }
        c = add(PADND, 4, d4);
        c->xl = c->yl = l, c->mode = PDNN_PAD_REFLECT;
        const int64_t p[8] = {0, 1, 4, 2, 1, 0, 3, 6};
        memcpy(c->a, p, sizeof p);
        c = add(GATHER, 4, d4);
        c->xl = c->yl = l, c->axis = 1, c->n = 3, c->a[0] = 2, c->a[1] = -3, c->a[2] = 2;
    }
}

static int selected(const ix_case *c, int op, const char *set)
{
    const int cop = c->k == WHERE ? PDNN__OP_WHERE : PDNN__OP_INDEX;
    return (op < 0 || op == cop) && (!set || strcmp(set, set_names[c->k]) == 0);
}

int parity_index_count(int op, const char *set)
{
    build();
    int n = 0;
    for (int i = 0; i < n_cases; i++)
        n += selected(&cases[i], op, set);
    return n;
}

static int64_t count(const int64_t *d, int r)
{
    int64_t n = 1;
    for (int k = 0; k < r; k++)
        n *= d[k];
    return n;
}

/* Logical row-major offsets -> memory of layout l (rank-4 image layouts
 * through their strides; ND row-major). */
static int64_t mem_of(int64_t i, const int64_t *d, int r, pdnn_layout l)
{
    if (l == PDNN_ND)
        return i;
    int64_t st[4], at[4];
    pdnn__layout_strides(l, d, st);
    for (int k = 3; k >= 0; k--)
        at[k] = i % d[k], i /= d[k];
    (void)r;
    return at[0] * st[0] + at[1] * st[1] + at[2] * st[2] + at[3] * st[3];
}

static pdnn_tensor *make(pdnn_device *dev, const int64_t *d, int r, pdnn_layout l, const float *logical)
{
    pdnn_tensor_desc desc = {PDNN_FLOAT32, l, {1, 1, 1, 1, 1, 1, 1, 1}, l == PDNN_ND ? r : 4};
    memcpy(desc.dims, d, (size_t)r * sizeof *d);
    pdnn_tensor *t = NULL;
    if (pdnn_tensor_create(dev, &desc, &t) != PDNN_SUCCESS)
        return NULL;
    if (logical) {
        const int64_t n = count(d, r);
        float *m = malloc((size_t)n * sizeof *m);
        for (int64_t i = 0; m && i < n; i++)
            m[mem_of(i, d, r, l)] = logical[i];
        if (!m || pdnn_tensor_write(t, m, (size_t)n * sizeof *m) != PDNN_SUCCESS) {
            free(m);
            pdnn_tensor_release(t);
            return NULL;
        }
        free(m);
    }
    return t;
}

static pdnn_status fetch(const pdnn_tensor *t, const int64_t *d, int r, pdnn_layout l, float *logical)
{
    const int64_t n = count(d, r);
    float *m = malloc((size_t)n * sizeof *m);
    if (!m)
        return PDNN_ERR_OUT_OF_MEMORY;
    pdnn_status st = pdnn_tensor_read(t, m, (size_t)n * sizeof *m);
    for (int64_t i = 0; st == PDNN_SUCCESS && i < n; i++)
        logical[i] = m[mem_of(i, d, r, l)];
    free(m);
    return st;
}

static float coord_of(int64_t i, int64_t in, int64_t out, int coord)
{
    const float sc = (float)out / (float)in;
    if (coord == PDNN_RESIZE_ALIGN_CORNERS)
        return out == 1 ? 0.0f : (float)i * (float)(in - 1) / (float)(out - 1);
    if (coord == PDNN_RESIZE_ASYMMETRIC)
        return (float)i / sc;
    if (coord == PDNN_RESIZE_PYTORCH_HALF_PIXEL && out == 1)
        return 0.0f;
    return ((float)i + 0.5f) / sc - 0.5f;
}

/* The case's output shape (split: the parts laid one after another). */
static void out_shape(ix_case *c)
{
    if (c->k == SLICE) {
        int64_t tmp[64];
        memcpy(c->yd, c->xd, sizeof c->yd);
        for (int i = 0; i < c->n; i++) {
            const int a = (int)(c->c[i] < 0 ? c->c[i] + c->r : c->c[i]);
            c->yd[a] = slice_list(c->xd[a], c->a[i], c->b[i], c->s[i], tmp);
        }
    } else if (c->k == GATHER || c->k == SPLIT) {
        memcpy(c->yd, c->xd, sizeof c->yd);
        if (c->k == GATHER)
            c->yd[c->axis] = c->n;
    } else if (c->k == PADND) {
        for (int k = 0; k < R; k++)
            c->yd[k] = k < c->r ? c->xd[k] + c->a[k] + c->a[c->r + k] : 1;
    }
}

/* The naive result (logical row-major over y's dims) from x, a and m. */
static void naive(const ix_case *c, const float *x, const float *av, const float *mv, double *ref)
{
    const int64_t ny = count(c->yd, c->yr);
    int64_t lists[R][64] = {{0}};
    if (c->k == SLICE) {
        for (int k = 0; k < c->r; k++)
            for (int64_t i = 0; i < c->xd[k]; i++)
                lists[k][i] = i;
        for (int i = 0; i < c->n; i++) {
            const int a = (int)(c->c[i] < 0 ? c->c[i] + c->r : c->c[i]);
            slice_list(c->xd[a], c->a[i], c->b[i], c->s[i], lists[a]);
        }
    }
    int64_t split_at = 0; /* split: which part, laid out part after part */
    for (int64_t e = 0; e < ny; e++) {
        int64_t at[R] = {0}, rest = e, src = 0;
        int part = 0;
        if (c->k == SPLIT) { /* e runs over part 0's elements, then part 1's */
            int64_t n0 = count(c->xd, c->r) / c->xd[c->axis] * c->a[0];
            part = e >= n0 && c->n > 1;
            rest = part ? e - n0 : e;
            split_at = part ? c->a[0] : 0;
        }
        int64_t pd[R] = {0};
        memcpy(pd, c->yd, sizeof pd);
        if (c->k == SPLIT)
            pd[c->axis] = c->a[part];
        for (int k = c->yr - 1; k >= 0; k--)
            at[k] = rest % pd[k], rest /= pd[k];
        double v = 0.0;
        int fill = 0;
        if (c->k == RESIZE && c->mode == PDNN_RESIZE_LINEAR) {
            /* every corner of the cell at once: the product of the axes' weights */
            int64_t lo[R] = {0}, hi[R] = {0};
            double w[R] = {0};
            for (int k = 0; k < c->r; k++) {
                float f = coord_of(at[k], c->xd[k], c->yd[k], c->coord);
                f = f < 0.0f ? 0.0f : f > (float)(c->xd[k] - 1) ? (float)(c->xd[k] - 1) : f;
                lo[k] = (int64_t)floor((double)f);
                hi[k] = lo[k] + 1 < c->xd[k] ? lo[k] + 1 : lo[k];
                w[k] = (double)f - (double)lo[k];
            }
            for (int corner = 0; corner < 1 << c->r; corner++) {
                double wt = 1.0;
                int64_t off = 0;
                for (int k = 0; k < c->r; k++) {
                    const int up = corner >> k & 1;
                    wt *= up ? w[k] : 1.0 - w[k];
                    off = off * c->xd[k] + (up ? hi[k] : lo[k]);
                }
                v += wt * x[off];
            }
            ref[e] = v;
            continue;
        }
        if (c->k == WHERE) {
            int64_t mo = 0, ao = 0, xo = 0;
            for (int k = 0; k < c->r; k++) {
                mo = mo * c->b[k] + (c->b[k] == 1 ? 0 : at[k]);
                xo = xo * c->xd[k] + at[k];
            }
            for (int k = 0; k < c->ar; k++) { /* a aligned at the end */
                const int yk = k + (c->r - c->ar);
                ao = ao * c->c[k] + (c->c[k] == 1 ? 0 : at[yk]);
            }
            ref[e] = mv[mo] != 0.0f ? av[ao] : x[xo];
            continue;
        }
        for (int k = 0; k < c->r; k++) {
            int64_t j;
            const int yk = c->k == EXPAND ? k + (c->yr - c->r) : k;
            switch (c->k) {
            case SLICE: j = lists[k][at[k]]; break;
            case SPLIT: j = at[k] + (k == c->axis ? split_at : 0); break;
            case EXPAND: j = c->xd[k] == 1 ? 0 : at[yk]; break;
            case GATHER: j = k == c->axis ? (c->a[at[k]] + (c->a[at[k]] < 0 ? c->xd[k] : 0)) : at[k]; break;
            case PADND: {
                const int64_t d = c->xd[k];
                j = at[k] - c->a[k];
                if (j < 0 || j >= d) {
                    if (c->mode == PDNN_PAD_CONSTANT)
                        fill = 1;
                    else if (c->mode == PDNN_PAD_EDGE)
                        j = j < 0 ? 0 : d - 1;
                    else /* reflect about the edge, the edge once */
                        j = j < 0 ? -j : 2 * d - 2 - j;
                }
                break;
            }
            default: { /* nearest */
                const float f = coord_of(at[k], c->xd[k], c->yd[k], c->coord);
                const double fl = floor((double)f), fr = (double)f - fl;
                double t = c->nearest == PDNN_RESIZE_FLOOR                ? fl
                           : c->nearest == PDNN_RESIZE_CEIL               ? ceil((double)f)
                           : fr == 0.5                                    ? (c->nearest == PDNN_RESIZE_ROUND_PREFER_CEIL ? fl + 1 : fl)
                           : fr > 0.5                                     ? fl + 1
                                                                          : fl;
                j = t < 0 ? 0 : t >= (double)c->xd[k] ? c->xd[k] - 1 : (int64_t)t;
            }
            }
            src = src * c->xd[k] + j;
        }
        ref[e] = fill ? (double)c->value : x[src];
    }
}

static pdnn_status run_op(pdnn_device *dev, const ix_case *c, const float *x, const float *av, const float *mv,
                          float *got)
{
    pdnn_tensor *tx = make(dev, c->xd, c->r, c->xl, x), *ty = NULL, *ta = NULL, *tm = NULL, *parts[2] = {NULL, NULL};
    pdnn_status st = tx ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS && c->k == SPLIT) {
        int64_t off = 0;
        for (int i = 0; i < c->n && st == PDNN_SUCCESS; i++) {
            int64_t pd[R];
            memcpy(pd, c->xd, sizeof pd);
            pd[c->axis] = c->a[i];
            parts[i] = make(dev, pd, c->r, c->yl, NULL);
            st = parts[i] ? PDNN_SUCCESS : PDNN_ERR_OUT_OF_MEMORY;
        }
        if (st == PDNN_SUCCESS)
            st = pdnn_split(tx, c->axis - c->r, c->n, c->a, parts);
        for (int i = 0; i < c->n && st == PDNN_SUCCESS; i++) {
            int64_t pd[R];
            memcpy(pd, c->xd, sizeof pd);
            pd[c->axis] = c->a[i];
            st = fetch(parts[i], pd, c->r, c->yl, got + off);
            off += count(pd, c->r);
        }
        pdnn_tensor_release(parts[0]);
        pdnn_tensor_release(parts[1]);
        pdnn_tensor_release(tx);
        return st;
    }
    if (st == PDNN_SUCCESS && !(ty = make(dev, c->yd, c->yr, c->yl, NULL)))
        st = PDNN_ERR_OUT_OF_MEMORY;
    if (st == PDNN_SUCCESS) {
        switch (c->k) {
        case SLICE: st = pdnn_slice(tx, c->n, c->a, c->b, c->c, c->s, ty); break;
        case EXPAND: st = pdnn_expand(tx, ty); break;
        case GATHER: st = pdnn_gather(tx, c->axis, c->a, c->n, ty); break;
        case PADND: st = pdnn_pad_nd(tx, c->a, (pdnn_pad_mode)c->mode, c->value, ty); break;
        case RESIZE:
            st = pdnn_resize(tx, (pdnn_resize_mode)c->mode, (pdnn_resize_coord)c->coord,
                             (pdnn_resize_nearest)c->nearest, NULL, ty);
            break;
        case WHERE:
            ta = make(dev, c->c, c->ar, PDNN_ND, av);
            tm = make(dev, c->b, c->mr, PDNN_ND, mv);
            st = ta && tm ? pdnn_where(tm, ta, tx, ty) : PDNN_ERR_OUT_OF_MEMORY;
            break;
        default: break;
        }
    }
    if (st == PDNN_SUCCESS)
        st = fetch(ty, c->yd, c->yr, c->yl, got);
    pdnn_tensor_release(tx);
    pdnn_tensor_release(ty);
    pdnn_tensor_release(ta);
    pdnn_tensor_release(tm);
    return st;
}

static void name_of(const ix_case *c, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "%s r%d %s x[", set_names[c->k], c->r, pdnn_layout_name(c->xl));
    for (int k = 0; k < c->r && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", k ? "," : "", (long long)c->xd[k]);
    if (at < len)
        at += (size_t)snprintf(buf + at, len - at, "] y%d[", c->yr);
    for (int k = 0; k < c->yr && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", k ? "," : "", (long long)c->yd[k]);
    if (at < len)
        snprintf(buf + at, len - at, "] mode %d/%d/%d", c->mode, c->coord, c->nearest);
}

void parity_index_run(pdnn_device *const *devs, int ndev, int op, const char *set, const char *algo)
{
    build();
    unsigned seed = 12345;
    for (int ci = 0; ci < n_cases; ci++) {
        ix_case *c = &cases[ci];
        if (!selected(c, op, set))
            continue;
        out_shape(c);
        const int64_t nx = count(c->xd, c->r), ny = count(c->yd, c->yr);
        const size_t na = (size_t)(nx > 64 ? nx : 64);
        float *x = malloc((size_t)nx * sizeof *x), *av = malloc(na * sizeof *av), *mv = malloc(na * sizeof *mv);
        float *got = malloc((size_t)ny * sizeof *got);
        double *ref = malloc((size_t)ny * sizeof *ref);
        if (!x || !av || !mv || !got || !ref)
            abort();
        for (int64_t i = 0; i < nx; i++)
            x[i] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0x7fff) / 4096.0f - 4.0f;
        for (size_t i = 0; i < na; i++) {
            av[i] = 100.0f + (float)i;
            mv[i] = (float)((i * 7 + i / 5) % 3 == 0);
        }
        naive(c, x, av, mv, ref);
        char cname[256];
        name_of(c, cname, sizeof cname);
        const pdnn__op pop = c->k == WHERE ? PDNN__OP_WHERE : PDNN__OP_INDEX;
        for (int di = 0; di < ndev; di++) {
            const pdnn__algo *const *list = pdnn__algos(devs[di], pop);
            for (int ai = 0; list && list[ai]; ai++) {
                const pdnn__algo *a = list[ai];
                if (algo && strcasecmp(algo, a->name) != 0)
                    continue;
                for (int64_t i = 0; i < ny; i++)
                    got[i] = NAN;
                pdnn__dispatch_force(pop, a->name, -1);
                const pdnn_status st = run_op(devs[di], c, x, av, mv, got);
                pdnn__dispatch_force(pop, NULL, -1);
                if (st == PDNN_ERR_UNSUPPORTED) {
                    parity_skip(devs[di], a, cname, pdnn_last_error());
                    continue;
                }
                if (st != PDNN_SUCCESS) {
                    parity_fail(devs[di], a, cname, "%s (%s)", pdnn_last_error(), pdnn_status_string(st));
                    continue;
                }
                double big = 0.0, worst = 0.0;
                int64_t at = 0;
                for (int64_t i = 0; i < ny; i++)
                    big = fabs(ref[i]) > big ? fabs(ref[i]) : big;
                for (int64_t i = 0; i < ny; i++) {
                    const double e = fabs((double)got[i] - ref[i]) / (big > 0.0 ? big : 1.0);
                    if (!(e <= worst))
                        worst = e, at = i;
                }
                const int linear = c->k == RESIZE && c->mode == PDNN_RESIZE_LINEAR;
                const double tol = linear ? pdnn__algo_tol(a, PDNN_FLOAT32) : 0.0;
                if (!(worst <= tol))
                    parity_fail(devs[di], a, cname, "y[%lld] is %.9g, expected %.9g: normalised error %.3g, tolerance %.3g",
                                (long long)at, (double)got[at], ref[at], worst, tol);
                else
                    parity_pass(devs[di], a, cname, worst);
            }
        }
        free(x);
        free(av);
        free(mv);
        free(got);
        free(ref);
    }
    fflush(stdout);
}
