/* Einsum of two operands, lowered at import to a batched MatMul with the
 * transposes and reshapes around it that its equation needs (MaxViT's
 * attention: "BGHID,BGHJD->BGHIJ" is q @ k^T, "BGHIJ,BGHJD->BGHID" is
 * p @ v, neither needing more than the MatMul's trans_b). Each index of
 * the equation is one of: a batch index (both operands and the output),
 * a contracted one (both operands, not the output), a row index (the
 * first operand and the output) or a column index (the second and the
 * output). Refused by name: other operand counts, an ellipsis, an index
 * repeated within one term (a trace or diagonal), an index of one operand
 * alone that the output lacks (a sum over that operand), an output index
 * of no operand. */
#include "io/onnx_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

enum { BATCH, ROW, COL, SUM, CLASSES };

/* One term of the equation: its index letters (at most 8). */
typedef struct term {
    char ix[PDNN_MAX_RANK + 1];
    int rank;
} term;

static pdnn_status einsum_error(const Onnx__NodeProto *n, const char *eq, const char *why)
{
    return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "equation '%s': %s", eq, why);
}

/* Reads letters up to one of the stops (spaces skipped) into t; *p moves
 * past them. */
static int read_term(const char **p, const char *stops, term *t)
{
    t->rank = 0;
    for (; **p && !strchr(stops, **p); (*p)++) {
        if (**p == ' ')
            continue;
        if (!isalpha((unsigned char)**p) || t->rank == PDNN_MAX_RANK)
            return 0;
        t->ix[t->rank++] = **p;
    }
    t->ix[t->rank] = 0;
    return 1;
}

static int pos_in(const term *t, char c)
{
    const char *s = strchr(t->ix, c);
    return s && c ? (int)(s - t->ix) : -1;
}

/* The equation's terms; an implicit output (no "->") holds the indices
 * that appear once, in alphabetical order (ONNX's rule). */
static pdnn_status parse(const Onnx__NodeProto *n, const char *eq, term t[3])
{
    const char *p = eq;
    if (strstr(eq, "..."))
        return einsum_error(n, eq, "an ellipsis is not supported");
    if (!read_term(&p, ",-", &t[0]) || *p != ',')
        return einsum_error(n, eq, "only two operands of at most 8 letter indices each are supported");
    p++;
    if (!read_term(&p, ",-", &t[1]) || *p == ',')
        return einsum_error(n, eq, "only two operands of at most 8 letter indices each are supported");
    if (*p == '-') {
        if (p[1] != '>')
            return einsum_error(n, eq, "'-' must begin '->'");
        p += 2;
        if (!read_term(&p, "", &t[2]))
            return einsum_error(n, eq, "the output must be at most 8 letter indices");
    } else {
        t[2].rank = 0;
        for (int c = 0; c < 128; c++)
            if (isalpha(c) && (pos_in(&t[0], (char)c) >= 0) + (pos_in(&t[1], (char)c) >= 0) == 1 &&
                t[2].rank < PDNN_MAX_RANK)
                t[2].ix[t[2].rank++] = (char)c;
        t[2].ix[t[2].rank] = 0;
    }
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < t[k].rank; i++)
            if (strchr(t[k].ix + i + 1, t[k].ix[i]))
                return einsum_error(n, eq, "an index repeated within one term (a trace or diagonal) is not "
                                    "supported");
    return PDNN_SUCCESS;
}

/* A transpose of node *x by perm (nothing where perm keeps the order). */
static pdnn_status permute(importer *im, int r, const int *perm, int *x)
{
    int same = 1;
    for (int k = 0; k < r; k++)
        same &= perm[k] == k;
    return same ? PDNN_SUCCESS : pdnn_graph_transpose(im->graph, NULL, im->device, *x, perm, x);
}

/* A reshape of node *x to dims d (rank r) where its dims differ. */
static pdnn_status reshape(importer *im, int r, const int64_t *d, int *x)
{
    pdnn_tensor_desc xd;
    pdnn_status st = pdnn_graph_node_desc(im->graph, *x, &xd);
    if (st != PDNN_SUCCESS || (xd.rank == r && memcmp(xd.dims, d, (size_t)r * sizeof *d) == 0))
        return st;
    return pdnn_graph_reshape_nd(im->graph, NULL, im->device, *x, r, d, x);
}

/* Operand v (term t) as [batch..., a, b], the batch indices in bat's order,
 * a and b the products of the indices of classes ca and cb (in the term's
 * order): the transposed form when it is already laid out as [batch...,
 * cb..., ca...] (*trans 1), else a transpose where needed. */
static pdnn_status operand(importer *im, const value *v, const term *t, const int *cls, const term *bat, int ca,
                           int cb, int node, int *out, int *trans)
{
    int perm[PDNN_MAX_RANK], r = 0, flipped[PDNN_MAX_RANK], rf = 0;
    for (int i = 0; i < bat->rank; i++)
        perm[r++] = flipped[rf++] = pos_in(t, bat->ix[i]);
    for (int want = 0; want < 2; want++) /* [.., ca, cb] and [.., cb, ca] */
        for (int i = 0; i < t->rank; i++) {
            if (cls[i] == (want ? cb : ca))
                perm[r++] = i;
            if (cls[i] == (want ? ca : cb))
                flipped[rf++] = i;
        }
    int64_t d[PDNN_MAX_RANK] = {0};
    int rd = 0;
    for (int i = 0; i < bat->rank; i++)
        d[rd++] = v->dims[perm[i]];
    int64_t a = 1, b = 1;
    for (int i = bat->rank; i < r; i++)
        *(cls[perm[i]] == ca ? &a : &b) *= v->dims[perm[i]];
    int same = 1;
    for (int k = 0; k < rf; k++)
        same &= flipped[k] == k;
    *trans = same && !(r == rf && memcmp(perm, flipped, sizeof(int) * (size_t)r) == 0);
    *out = node;
    pdnn_status st = *trans ? PDNN_SUCCESS : permute(im, r, perm, out);
    d[rd] = *trans ? b : a;
    d[rd + 1] = *trans ? a : b;
    return st == PDNN_SUCCESS ? reshape(im, rd + 2, d, out) : st;
}

pdnn_status pdnn__onnx_import_einsum(importer *im, const Onnx__NodeProto *n)
{
    char eq[128];
    pdnn__onnx_attr_str(n, "equation", eq, sizeof eq);
    if (n->n_input != 2)
        return pdnn__onnx_node_error(PDNN_ERR_UNSUPPORTED, n, "Einsum of %zu operands (two are supported)",
                                     n->n_input);
    term t[3];
    memset(t, 0, sizeof t);
    pdnn_status st = parse(n, eq, t);
    if (st != PDNN_SUCCESS)
        return st;
    value *v[2];
    int node[2];
    for (int k = 0; k < 2; k++) {
        if (!(v[k] = pdnn__onnx_const_input(im, n, (size_t)k)) && !(v[k] = pdnn__onnx_act_input(im, n, (size_t)k, &st)))
            return st;
        if (v[k]->rank != t[k].rank)
            return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "equation '%s': operand %d has rank %d, "
                                         "its term %d indices", eq, k, v[k]->rank, t[k].rank);
        if ((st = pdnn__onnx_nd_node(im, n, v[k], &node[k])) != PDNN_SUCCESS)
            return st;
    }
    /* each operand index's class, the batch indices in the output's order,
     * and each output index's size */
    int cls[2][PDNN_MAX_RANK];
    term bat = {.rank = 0};
    int64_t od[PDNN_MAX_RANK];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < t[k].rank; i++) {
            const char c = t[k].ix[i];
            const int other = pos_in(&t[1 - k], c), inout = pos_in(&t[2], c) >= 0;
            if (other >= 0 && v[1 - k]->dims[other] != v[k]->dims[i])
                return pdnn__onnx_node_error(PDNN_ERR_INVALID_ARGUMENT, n, "equation '%s': index %c is %lld in one "
                                             "operand, %lld in the other", eq, c, (long long)v[k]->dims[i],
                                             (long long)v[1 - k]->dims[other]);
            if (other < 0 && !inout)
                return einsum_error(n, eq, "an index of one operand alone that the output lacks (a sum over it) is "
                                    "not supported");
            cls[k][i] = other >= 0 ? (inout ? BATCH : SUM) : k == 0 ? ROW : COL;
        }
    for (int i = 0; i < t[2].rank; i++) {
        const char c = t[2].ix[i];
        const int a = pos_in(&t[0], c), b = pos_in(&t[1], c);
        if (a < 0 && b < 0)
            return einsum_error(n, eq, "an output index of no operand");
        od[i] = a >= 0 ? v[0]->dims[a] : v[1]->dims[b];
        if (a >= 0 && b >= 0)
            bat.ix[bat.rank++] = c;
    }
    bat.ix[bat.rank] = 0;
    /* A as [batch, rows, sum], B as [batch, sum, cols] (either may come
     * transposed), their product [batch, rows, cols] */
    int x[2], trans[2];
    if ((st = operand(im, v[0], &t[0], cls[0], &bat, ROW, SUM, node[0], &x[0], &trans[0])) != PDNN_SUCCESS ||
        (st = operand(im, v[1], &t[1], cls[1], &bat, SUM, COL, node[1], &x[1], &trans[1])) != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    if ((st = pdnn__onnx_check_name(n, n->output[0])) != PDNN_SUCCESS)
        return st;
    /* the product's dims: the batch indices (the output's order), the
     * rows (A's order), the columns (B's order); the output index each
     * holds; whether rows and columns are one dim each (the MatMul's) */
    int64_t pd[PDNN_MAX_RANK];
    int perm[PDNN_MAX_RANK], r = 0, rows = 0, cols = 0;
    const term *from[3] = {&t[2], &t[0], &t[1]};
    for (int c = BATCH; c <= COL; c++)
        for (int i = 0; i < from[c]->rank; i++) {
            const char ch = from[c]->ix[i];
            const int a = pos_in(&t[0], ch), b = pos_in(&t[1], ch), o = pos_in(&t[2], ch);
            if (o >= 0 && (a >= 0 && b >= 0 ? BATCH : a >= 0 ? ROW : COL) == c)
                pd[r] = od[o], perm[r++] = o, rows += c == ROW, cols += c == COL;
        }
    int inv[PDNN_MAX_RANK], y = -1, in_order = 1;
    for (int k = 0; k < r; k++)
        inv[perm[k]] = k, in_order &= perm[k] == k;
    const int reshaped = rows != 1 || cols != 1;
    /* the output's name on the last node: the MatMul, its reshape or the
     * transpose into the output's order */
    char tmp[2][sizeof(((pdnn__node *)0)->name)];
    snprintf(tmp[0], sizeof tmp[0], "%.100s/matmul", n->output[0]);
    snprintf(tmp[1], sizeof tmp[1], "%.100s/unmerged", n->output[0]);
    st = pdnn_graph_matmul(im->graph, in_order && !reshaped ? n->output[0] : tmp[0], im->device, x[0], x[1],
                           trans[0], trans[1], &y);
    if (st == PDNN_SUCCESS && reshaped)
        st = pdnn_graph_reshape_nd(im->graph, in_order ? n->output[0] : tmp[1], im->device, y, r, pd, &y);
    if (st == PDNN_SUCCESS && !in_order)
        st = pdnn_graph_transpose(im->graph, n->output[0], im->device, y, inv, &y);
    if (st != PDNN_SUCCESS)
        return pdnn__onnx_node_error(st, n, "%s", pdnn_last_error());
    return pdnn__onnx_set_output(im, n, n->output[0], y, r);
}
