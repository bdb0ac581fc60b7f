/* The session's memory plan: Concats whose producers write their output
 * in place (absorb), Reshapes that alias their input, copies freed after
 * their last reader, and the live-set accounting that bounds workspaces. */
#include "graph/session_internal.h"

#include <stdlib.h>

/* Concats whose inputs the producers write in place. In memory order a
 * Concat's output is its inputs one after another when nothing lies
 * outside the axis (NCHW along channels at batch 1, any layout along the
 * batch): each producer may then write a view of that output and the
 * copy goes (SqueezeNet's and GoogLeNet's NCHW branches; 8-10% of
 * SqueezeNet's batch-1 time was these copies on PoCL). Each input must be
 * a computed value (not a feed, constant or variable) on the Concat's
 * device that nothing else reads, taken once, at an offset a multiple of
 * 256 bytes (device allocations' alignment, which cuDNN's algorithms
 * may assume). A run that fetches such an input copies as before. */
pdnn_status pdnn__session_plan_absorb(pdnn_session *s)
{
    const pdnn_graph *g = s->g;
    size_t n = (size_t)(g->n ? g->n : 1);
    int *readers = s->readers = calloc(n, sizeof *readers);
    s->absorb = malloc(n * sizeof *s->absorb);
    s->absorb_off = calloc(n, sizeof *s->absorb_off);
    s->absorbs = calloc(n, 1);
    if (!readers || !s->absorb || !s->absorb_off || !s->absorbs)
        return pdnn__host_oom("pdnn_session_create", "the concat tables", n * (sizeof *readers + 13));
    for (int i = 0; i < g->n; i++) {
        s->absorb[i] = -1;
        for (int q = 0; q < g->nodes[i].n_inputs; q++)
            if (g->nodes[i].inputs[q] >= 0)
                readers[g->nodes[i].inputs[q]]++;
    }
    for (int j = 0; j < g->n; j++) {
        const pdnn__node *nd = &g->nodes[j];
        int64_t st[PDNN_MAX_RANK];
        if (nd->op != PDNN__OP_CONCAT || nd->axis < 0 || nd->axis >= pdnn__desc_strides(&nd->out, st) ||
            nd->out.dtype != PDNN_FLOAT32 || nd->n_inputs < 1)
            continue;
        const int64_t numel = pdnn_tensor_desc_elements(&nd->out);
        if (numel <= 0 || st[nd->axis] * nd->out.dims[nd->axis] != numel)
            continue; /* something lies outside the axis: the inputs interleave */
        int ok = 1;
        int64_t off = 0;
        for (int q = 0; q < nd->n_inputs && ok; q++) {
            const int i = nd->inputs[q];
            const pdnn__node *in = i >= 0 ? &g->nodes[i] : NULL;
            ok = in && readers[i] == 1 && s->placed[i] == s->placed[j] && off % 256 == 0 &&
                 in->op != PDNN__OP_PLACEHOLDER && in->op != PDNN__OP_CONST && in->op != PDNN__OP_VARIABLE &&
                 in->op != PDNN__OP_CONCAT && in->op != PDNN__OP_ALLREDUCE && !pdnn__no_value(in) &&
                 in->out.layout == nd->out.layout && in->out.dtype == PDNN_FLOAT32;
            off += ok ? pdnn_tensor_desc_bytes(&in->out) : 0;
        }
        if (!ok || off != pdnn_tensor_desc_bytes(&nd->out))
            continue;
        s->absorbs[j] = 1;
        off = 0;
        for (int q = 0; q < nd->n_inputs; q++) {
            s->absorb[nd->inputs[q]] = j;
            s->absorb_off[nd->inputs[q]] = off;
            off += pdnn_tensor_desc_bytes(&g->nodes[nd->inputs[q]].out);
        }
    }
    return PDNN_SUCCESS;
}

/* Whether a needed node after i on device d still reads node j. */
int pdnn__session_later_reader_on(const pdnn_session *s, const run_state *r, int i, int j, const pdnn_device *d)
{
    for (int e = i + 1; e < s->g->n; e++) {
        if (!r->needed[e] || s->placed[e] != d)
            continue;
        for (int q = 0; q < s->g->nodes[e].n_inputs; q++)
            if (s->g->nodes[e].inputs[q] == j)
                return 1;
    }
    return 0;
}

/* A producer's view of its Concat's output holds a reference on it. */
static void view_release(void *parent) { pdnn_tensor_release(parent); }

/* So does a Reshape's result over its input's bytes; unlike a Concat's
 * views it counts in the live set (the input may be freed first). */
void pdnn__session_alias_release(void *x) { pdnn_tensor_release(x); }

/* The live-set count: t (NULL: nothing) enters (+1) or leaves (-1) the
 * tensors held on its device; the session keeps the largest sum. */
void pdnn__session_live(pdnn_session *s, run_state *r, const pdnn_tensor *t, int sign)
{
    if (!t || t->foreign_free == view_release)
        return; /* a view: its Concat's output counts its bytes */
    const int d = dev_index(s, t->dev);
    r->live[d] += sign * pdnn_tensor_desc_bytes(&t->desc);
    if (r->live[d] > s->live_peak[d])
        s->live_peak[d] = r->live[d];
}

/* The workspace a node on dev may take without raising the device's
 * memory in use above 1.2x the largest live set measured (the memory
 * plan's bound), now that its inputs and output are live; at least 1
 * byte, so that a limit stays set (0 would be none). */
size_t pdnn__session_workspace_room(const pdnn_session *s, const run_state *r, const pdnn_device *dev)
{
    const int d = dev_index(s, dev);
    const int64_t room = s->live_peak[d] + s->live_peak[d] / 5 - r->live[d];
    return room > 0 ? (size_t)room : 1;
}

/* Counts the packed copies node i's run made of the constants it read
 * (kept on them for later runs) in their devices' live sets; all of them
 * again where an allocation since made some give way (evictions). */
void pdnn__session_count_packs(pdnn_session *s, run_state *r, int i)
{
    const pdnn__node *nd = &s->g->nodes[i];
    long ev = 0;
    for (int d = 0; d < s->ctx->n_devices; d++)
        ev += atomic_load(&s->ctx->devices[d].pack_evictions);
    const int all = ev != s->evictions_seen;
    s->evictions_seen = ev;
    for (int q = 0; q < (all ? s->g->n : nd->n_inputs); q++) {
        const int j = all ? q : nd->inputs[q];
        if (j < 0 || (s->g->nodes[j].op != PDNN__OP_CONST && !s->folded[j]) || !s->consts[j])
            continue;
        const int64_t now = (int64_t)pdnn__tensor_pack_bytes(s->consts[j]), delta = now - s->pack_seen[j];
        if (delta == 0)
            continue;
        s->pack_seen[j] = now;
        const int d = dev_index(s, s->consts[j]->dev);
        s->live_base[d] += delta;
        r->live[d] += delta;
        if (r->live[d] > s->live_peak[d])
            s->live_peak[d] = r->live[d];
    }
}

/* desc's bytes of t from offset bytes in, holding a reference on t. */
pdnn_status pdnn__session_alias_of(pdnn_tensor *t, size_t offset, const pdnn_tensor_desc *desc,
                                   void (*release)(void *), pdnn_tensor **out)
{
    pdnn__buf b = t->block.buf;
    b.offset += offset;
    pdnn__tensor_ref(t);
    pdnn_status st = pdnn__tensor_wrap(t->dev, desc, b, release, t, out);
    if (st != PDNN_SUCCESS)
        pdnn_tensor_release(t);
    return st;
}

/* Whether node i is a Reshape whose result may be its input's bytes
 * (pdnn_reshape copies them in memory order): an input the run computed,
 * which nothing writes again, read by this node alone and not fetched
 * (so no two tensors the caller gets share bytes). */
int pdnn__session_reshape_alias(const pdnn_session *s, const run_state *r, int i, const pdnn_tensor *x)
{
    const pdnn__node *nd = &s->g->nodes[i];
    if (nd->op != PDNN__OP_RESHAPE || !x || x->bytes != pdnn_tensor_desc_bytes(&nd->out))
        return 0;
    const int j = nd->inputs[0];
    const pdnn__node_op src = s->g->nodes[j].op;
    return s->readers[j] == 1 && r->uses[j] == 1 && src != PDNN__OP_PLACEHOLDER && !pdnn__session_holds(s, j);
}

/* Node i's output as a view of Concat j's (allocated by j's first
 * producer to run). */
pdnn_status pdnn__session_absorb_view(pdnn_session *s, run_state *r, int i, int j, pdnn_tensor **y)
{
    pdnn_device *dev = s->placed[j];
    if (!r->values[j]) {
        const pdnn_status st = pdnn_tensor_create(dev, &s->g->nodes[j].out, &r->values[j]);
        if (st != PDNN_SUCCESS)
            return st;
        r->owned[j] = 1;
        pdnn__session_live(s, r, r->values[j], +1);
    }
    return pdnn__session_alias_of(r->values[j], (size_t)s->absorb_off[i], &s->g->nodes[i].out, view_release, y);
}
