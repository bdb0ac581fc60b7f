/* A graph's batch changed after import (pdnn_graph_set_batch). The ONNX
 * importer imports a model with a symbolic batch at two more batches and
 * fits every integer a node keeps (its output dims, a move node's
 * arguments, its pads) as a * batch + c; the import at the graph's own
 * batch checks the fit.
 * Changing the batch then rewrites those integers in place: no file is
 * read or parsed again. A constant whose size follows the batch is kept
 * when it is one value repeated (ConstantOfShape's fill) and refilled.
 * Anything else that differs between the imports refuses, naming the
 * node, since running it at another batch would need the import's
 * shape arithmetic again. */
#include "graph/graph.h"
#include "graph/graph_batch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The integers of a node that may follow the batch: its 8 output dims,
 * its 64 move arguments, its 4 pads. */
#define N_SLOTS (PDNN_MAX_RANK + PDNN__MOVE_ARGS + 4)

typedef struct batch_slot {
    int node, slot;
    int64_t a, c; /* value = a * batch + c */
} batch_slot;

typedef struct batch_fill {
    int node;
    float value;
} batch_fill;

struct pdnn__batch_plan {
    int n;            /* the import's node count */
    int64_t batch;    /* the graph's batch now */
    pdnn__node *tmpl; /* each node as at the fit's first batch; inputs and data NULL */
    batch_slot *slots;
    int n_slots, cap_slots;
    batch_fill *fills;
    int n_fills, cap_fills;
    char why[512]; /* not empty: pdnn_graph_set_batch refuses, saying this */
};

static int64_t *slot_of(pdnn__node *n, int s)
{
    if (s < PDNN_MAX_RANK)
        return &n->out.dims[s];
    if (s < PDNN_MAX_RANK + PDNN__MOVE_ARGS)
        return &n->move[s - PDNN_MAX_RANK];
    return &n->pads[s - PDNN_MAX_RANK - PDNN__MOVE_ARGS];
}

static int64_t slot_val(const pdnn__node *n, int s) { return *slot_of((pdnn__node *)n, s); }

static void slot_name(int s, char *buf, size_t len)
{
    if (s < PDNN_MAX_RANK)
        snprintf(buf, len, "output dim %d", s);
    else if (s < PDNN_MAX_RANK + PDNN__MOVE_ARGS)
        snprintf(buf, len, "argument %d", s - PDNN_MAX_RANK);
    else
        snprintf(buf, len, "pad %d", s - PDNN_MAX_RANK - PDNN__MOVE_ARGS);
}

/* n without what may differ between batches (pointers, the slots and the
 * broadcast flags, which follow the dims), for memcmp; loose: nor its
 * output's layout and rank (see check_plan). */
static void masked(const pdnn__node *n, pdnn__node *m, int loose)
{
    memcpy(m, n, sizeof *m);
    m->inputs = NULL;
    m->data = NULL;
    m->bcast = 0;
    for (int s = 0; s < N_SLOTS; s++)
        *slot_of(m, s) = 0;
    if (loose) {
        m->out.layout = PDNN_NCHW;
        m->out.rank = 0;
    }
}

static int same_shape(const pdnn__node *x, const pdnn__node *y, int loose)
{
    pdnn__node mx, my;
    masked(x, &mx, loose);
    masked(y, &my, loose);
    return memcmp(&mx, &my, sizeof mx) == 0 && x->n_inputs == y->n_inputs &&
           (!x->n_inputs || memcmp(x->inputs, y->inputs, sizeof *x->inputs * (size_t)x->n_inputs) == 0);
}

/* The one value every element of a constant holds, or 0 when they differ. */
static int one_value(const pdnn__node *n, float *v)
{
    const int64_t e = pdnn_tensor_desc_elements(&n->out);
    if (!n->data || e < 1)
        return 0;
    for (int64_t i = 1; i < e; i++)
        if (memcmp(&n->data[i], &n->data[0], sizeof *n->data))
            return 0;
    *v = n->data[0];
    return 1;
}

static void refuse(pdnn__batch_plan *p, const char *fmt, ...)
{
    if (p->why[0])
        return; /* the first reason found stays */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
}

static const char *name_of(const pdnn__node *n) { return n->name[0] ? n->name : "(unnamed)"; }

void pdnn__batch_plan_free(pdnn__batch_plan *p)
{
    if (!p)
        return;
    free(p->tmpl);
    free(p->slots);
    free(p->fills);
    free(p);
}

static int grow(void **v, int *cap, int n, size_t size)
{
    if (n < *cap)
        return 1;
    const int c = *cap ? 2 * *cap : 16;
    void *q = realloc(*v, (size_t)c * size);
    if (!q)
        return 0;
    *v = q;
    *cap = c;
    return 1;
}

void pdnn__batch_plan_refuse(pdnn_graph *g, int64_t b0, const char *why)
{
    if (!g->batch_plan && (g->batch_plan = calloc(1, sizeof *g->batch_plan)))
        g->batch_plan->batch = b0;
    if (g->batch_plan)
        refuse(g->batch_plan, "%s", why);
}

static void check_plan(pdnn_graph *g0, const pdnn_graph *gk, int64_t bk);

pdnn_status pdnn__batch_plan_fit(pdnn_graph *g0, int64_t b0, const pdnn_graph *ga, int64_t ba, const pdnn_graph *gb,
                                 int64_t bb)
{
    pdnn__batch_plan *p = calloc(1, sizeof *p);
    if (!p)
        return pdnn__host_oom("pdnn_graph_import_onnx", "the batch plan", sizeof *p);
    pdnn__batch_plan_free(g0->batch_plan);
    g0->batch_plan = p;
    p->n = g0->n;
    p->batch = b0;
    if (ga->n != g0->n || gb->n != g0->n) {
        refuse(p, "the import makes %d nodes at batch %lld, %d at batch %lld and %d at batch %lld (another path "
                  "through the model's shape arithmetic)", g0->n, (long long)b0, ga->n, (long long)ba, gb->n,
               (long long)bb);
        return PDNN_SUCCESS;
    }
    p->tmpl = malloc(sizeof *p->tmpl * (size_t)(g0->n ? g0->n : 1));
    if (!p->tmpl)
        return pdnn__host_oom("pdnn_graph_import_onnx", "the batch plan", sizeof *p->tmpl * (size_t)g0->n);
    for (int i = 0; i < g0->n && !p->why[0]; i++) {
        const pdnn__node *x = &ga->nodes[i], *y = &gb->nodes[i];
        memcpy(&p->tmpl[i], x, sizeof *x); /* padding too: nodes are compared with memcmp */
        p->tmpl[i].inputs = NULL;
        p->tmpl[i].data = NULL;
        const pdnn__node *z = &g0->nodes[i];
        if (!same_shape(x, y, 0) || x->n_inputs != z->n_inputs ||
            (x->n_inputs && memcmp(x->inputs, z->inputs, sizeof *x->inputs * (size_t)x->n_inputs))) {
            refuse(p, "node '%s' (%s) differs between the imports at batches %lld, %lld and %lld in more than its "
                      "dims", name_of(x), pdnn__op_type(x), (long long)ba, (long long)bb, (long long)b0);
            break;
        }
        for (int s = 0; s < N_SLOTS; s++) {
            const int64_t va = slot_val(x, s), vb = slot_val(y, s);
            if (va == vb)
                continue;
            int64_t d, ab, c;
            if (__builtin_sub_overflow(vb, va, &d) || d % (bb - ba) || __builtin_mul_overflow(d / (bb - ba), ba, &ab) ||
                __builtin_sub_overflow(va, ab, &c)) {
                char sn[32];
                slot_name(s, sn, sizeof sn);
                refuse(p, "node '%s' (%s): its %s is %lld at batch %lld and %lld at batch %lld, not a * batch + c",
                       name_of(x), pdnn__op_type(x), sn, (long long)va, (long long)ba, (long long)vb, (long long)bb);
                break;
            }
            if (!grow((void **)&p->slots, &p->cap_slots, p->n_slots, sizeof *p->slots))
                return pdnn__host_oom("pdnn_graph_import_onnx", "the batch plan", sizeof *p->slots);
            p->slots[p->n_slots++] = (batch_slot){i, s, d / (bb - ba), c};
        }
        if (!x->data)
            continue;
        const int64_t ea = pdnn_tensor_desc_elements(&x->out), eb = pdnn_tensor_desc_elements(&y->out);
        float va, vb;
        if (ea == eb && !memcmp(x->data, y->data, sizeof *x->data * (size_t)ea))
            continue;
        if (ea == eb || !one_value(x, &va) || !one_value(y, &vb) || memcmp(&va, &vb, sizeof va)) {
            refuse(p, "constant '%s' holds values that depend on the batch (other than one value repeated over a "
                      "batch-sized shape)", name_of(x));
            break;
        }
        if (!grow((void **)&p->fills, &p->cap_fills, p->n_fills, sizeof *p->fills))
            return pdnn__host_oom("pdnn_graph_import_onnx", "the batch plan", sizeof *p->fills);
        p->fills[p->n_fills++] = (batch_fill){i, va};
    }
    check_plan(g0, g0, b0);
    return PDNN_SUCCESS;
}

/* Checks g0's plan against the model imported at bk (gk). */
static void check_plan(pdnn_graph *g0, const pdnn_graph *gk, int64_t bk)
{
    pdnn__batch_plan *p = g0->batch_plan;
    if (!p || p->why[0])
        return;
    if (gk->n != p->n) {
        refuse(p, "the import makes %d nodes at batch %lld and %d at batch %lld (another path through the model's "
                  "shape arithmetic)", p->n, (long long)p->batch, gk->n, (long long)bk);
        return;
    }
    /* what the plan gives at bk, slot by slot, against the import at bk */
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        const pdnn__node *t = &p->tmpl[i], *y = &gk->nodes[i];
        pdnn__node want;
        memcpy(&want, t, sizeof want);
        want.inputs = g0->nodes[i].inputs;
        want.n_inputs = g0->nodes[i].n_inputs;
        for (; k < p->n_slots && p->slots[k].node == i; k++)
            if (__builtin_mul_overflow(p->slots[k].a, bk, slot_of(&want, p->slots[k].slot)) ||
                __builtin_add_overflow(slot_val(&want, p->slots[k].slot), p->slots[k].c,
                                       slot_of(&want, p->slots[k].slot)))
                *slot_of(&want, p->slots[k].slot) = -1; /* no value the import can hold: a mismatch */
        /* An import at batch 1 may keep a value in another form (a
         * constant {1, K} as NCHW, not N-d; an Add of it as a bias): its
         * elements must agree, or, where the op differs, its inputs. The
         * graph at batch 1 then runs the other batches' form. */
        const int strict = same_shape(&want, y, 0);
        const int loose = strict || (same_shape(&want, y, 1) &&
                                     pdnn_tensor_desc_elements(&want.out) == pdnn_tensor_desc_elements(&y->out));
        if (!loose && bk == 1 && want.n_inputs == y->n_inputs &&
            (!y->n_inputs || !memcmp(want.inputs, y->inputs, sizeof *y->inputs * (size_t)y->n_inputs)))
            continue;
        if (!loose) {
            refuse(p, "node '%s' (%s) differs at batch %lld in more than its dims", name_of(t), pdnn__op_type(t),
                   (long long)bk);
            return;
        }
        for (int s = strict ? 0 : PDNN_MAX_RANK; s < N_SLOTS; s++)
            if (slot_val(&want, s) != slot_val(y, s)) {
                char sn[32];
                slot_name(s, sn, sizeof sn);
                refuse(p, "node '%s' (%s): its %s is %lld at batch %lld where a * batch + c fitted to the other "
                          "batches gives %lld: the model's shape arithmetic is not affine in the batch",
                       name_of(t), pdnn__op_type(t), sn, (long long)slot_val(y, s), (long long)bk,
                       (long long)slot_val(&want, s));
                return;
            }
        if (!y->data)
            continue;
        const pdnn__node *x = &g0->nodes[i];
        float v;
        int f = 0;
        while (f < p->n_fills && p->fills[f].node != i)
            f++;
        const int ok = f < p->n_fills
                           ? one_value(y, &v) && !memcmp(&v, &p->fills[f].value, sizeof v)
                           : x->data && pdnn_tensor_desc_elements(&x->out) == pdnn_tensor_desc_elements(&y->out) &&
                                 !memcmp(x->data, y->data, sizeof *x->data * (size_t)pdnn_tensor_desc_elements(&x->out));
        if (!ok) {
            refuse(p, "constant '%s' holds other values at batch %lld (values that depend on the batch)", name_of(t),
                   (long long)bk);
            return;
        }
    }
}

pdnn_status pdnn_graph_set_batch(pdnn_graph *g, int64_t batch)
{
    if (!g)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_batch: graph is NULL");
    const pdnn__batch_plan *p = g->batch_plan;
    if (batch < 1 || batch > INT32_MAX)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_batch: batch %lld is not in [1, %d]",
                           (long long)batch, INT32_MAX);
    if (!p)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_set_batch: the graph was not imported from an ONNX "
                                                 "model with a symbolic batch dim, or was imported trainable (import "
                                                 "it with options.batch = %lld instead)", (long long)batch);
    if (batch == p->batch)
        return PDNN_SUCCESS;
    if (p->why[0])
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_set_batch: cannot run this model at batch %lld without "
                                                 "importing it again (options.batch = %lld): %s",
                           (long long)batch, (long long)batch, p->why);
    if (g->n != p->n)
        return pdnn__error(PDNN_ERR_UNSUPPORTED, "pdnn_graph_set_batch: %d nodes were added to the graph after the "
                                                 "import; only the imported graph changes its batch", g->n - p->n);
    pdnn__node *nn = malloc(sizeof *nn * (size_t)(p->n ? p->n : 1));
    float **fd = calloc((size_t)(p->n_fills ? p->n_fills : 1), sizeof *fd);
    if (!nn || !fd) {
        free(nn);
        free((void *)fd);
        return pdnn__host_oom("pdnn_graph_set_batch", "the new nodes", sizeof *nn * (size_t)p->n);
    }
    pdnn_status st = PDNN_SUCCESS;
    for (int i = 0; i < p->n; i++) {
        nn[i] = p->tmpl[i];
        nn[i].inputs = g->nodes[i].inputs;
        nn[i].data = g->nodes[i].data;
    }
    for (int k = 0; k < p->n_slots && st == PDNN_SUCCESS; k++) {
        const batch_slot *s = &p->slots[k];
        int64_t v;
        if (__builtin_mul_overflow(s->a, batch, &v) || __builtin_add_overflow(v, s->c, &v))
            v = -1;
        *slot_of(&nn[s->node], s->slot) = v;
    }
    for (int i = 0; i < p->n && st == PDNN_SUCCESS; i++) {
        if (pdnn__no_value(&nn[i]) || pdnn_tensor_desc_validate(&nn[i].out) == PDNN_SUCCESS)
            continue;
        char d[160];
        st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_graph_set_batch: at batch %lld node '%s' (%s) would be %s, "
                                                    "not a valid shape", (long long)batch, name_of(&nn[i]),
                         pdnn__op_type(&nn[i]), pdnn__desc_string(&nn[i].out, d, sizeof d));
    }
    for (int i = 0; i < p->n && st == PDNN_SUCCESS; i++)
        if (nn[i].op == PDNN__OP_ELTWISE) { /* the broadcast flags follow the new dims */
            const int64_t ny = pdnn_tensor_desc_elements(&nn[i].out);
            nn[i].bcast = (pdnn_tensor_desc_elements(&nn[nn[i].inputs[0]].out) != ny) |
                          (pdnn_tensor_desc_elements(&nn[nn[i].inputs[1]].out) != ny) << 1;
        }
    for (int k = 0; k < p->n_fills && st == PDNN_SUCCESS; k++) {
        const int64_t e = pdnn_tensor_desc_elements(&nn[p->fills[k].node].out);
        if (!(fd[k] = malloc(sizeof **fd * (size_t)e))) {
            st = pdnn__host_oom("pdnn_graph_set_batch", "a batch-sized constant", sizeof **fd * (size_t)e);
            break;
        }
        for (int64_t j = 0; j < e; j++)
            fd[k][j] = p->fills[k].value;
    }
    if (st == PDNN_SUCCESS) {
        for (int k = 0; k < p->n_fills; k++) {
            free(g->nodes[p->fills[k].node].data);
            nn[p->fills[k].node].data = fd[k];
            fd[k] = NULL;
        }
        memcpy(g->nodes, nn, sizeof *nn * (size_t)p->n);
        g->batch_plan->batch = batch;
    }
    for (int k = 0; k < p->n_fills; k++)
        free(fd[k]);
    free((void *)fd);
    free(nn);
    return st;
}
