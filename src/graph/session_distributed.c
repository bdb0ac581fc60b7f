/* Distributed sessions (cfg.distributed): AllReduce nodes packed into
 * buckets that the communicator's thread all-reduces while the run goes
 * on, and the collectives a program calls between runs. */
#include "graph/session_internal.h"

#include <stdlib.h>
#include <string.h>

static int by_input(const void *a, const void *b, void *g_)
{
    const pdnn_graph *g = g_;
    int ia = g->nodes[*(const int *)a].inputs[0], ib = g->nodes[*(const int *)b].inputs[0];
    return ia != ib ? (ia > ib) - (ia < ib) : (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The AllReduce nodes in the order their inputs are computed, packed into
 * buckets of at most cap bytes (one larger tensor alone). A bucket also
 * closes where its next member's input comes after one of its AllReduce
 * nodes: that node waits for the bucket, which must then be complete. */
static pdnn_status plan_buckets(pdnn_session *s, int64_t cap)
{
    const pdnn_graph *g = s->g;
    size_t n = (size_t)(g->n ? g->n : 1);
    s->ar_bucket = calloc(n, sizeof *s->ar_bucket);
    s->ar_offset = calloc(n, sizeof *s->ar_offset);
    s->ar_order = calloc(n, sizeof *s->ar_order);
    s->bucket_first = calloc(n + 1, sizeof *s->bucket_first);
    s->bucket_ready = calloc(n, sizeof *s->bucket_ready);
    int64_t *floats = calloc(n, sizeof *floats);
    if (!s->ar_bucket || !s->ar_offset || !s->ar_order || !s->bucket_first || !s->bucket_ready || !floats) {
        free(floats);
        return pdnn__host_oom("pdnn_session_create", "the all-reduce tables", n * 40);
    }
    for (int i = 0; i < g->n; i++) {
        s->ar_bucket[i] = -1;
        if (g->nodes[i].op == PDNN__OP_ALLREDUCE)
            s->ar_order[s->n_ar++] = i;
    }
    /* qsort_r is a GNU extension; the graph is small: insertion sort. */
    for (int a = 1; a < s->n_ar; a++)
        for (int b = a; b > 0 && by_input(&s->ar_order[b - 1], &s->ar_order[b], s->g) > 0; b--) {
            int t = s->ar_order[b];
            s->ar_order[b] = s->ar_order[b - 1];
            s->ar_order[b - 1] = t;
        }
    int min_node = 0;
    for (int k = 0; k < s->n_ar; k++) {
        const int i = s->ar_order[k], in = g->nodes[i].inputs[0];
        const int64_t f = pdnn_tensor_desc_bytes(&g->nodes[i].out) / 4;
        int nb = s->n_buckets;
        if (nb == 0 || (floats[nb - 1] > 0 && (floats[nb - 1] + f) * 4 > cap) || in >= min_node) {
            s->bucket_first[nb] = k;
            s->n_buckets = ++nb;
            min_node = i;
        }
        s->ar_bucket[i] = nb - 1;
        s->ar_offset[i] = floats[nb - 1];
        floats[nb - 1] += f;
        s->bucket_ready[nb - 1] = in;
        min_node = i < min_node ? i : min_node;
    }
    s->bucket_first[s->n_buckets] = s->n_ar;
    pdnn_status st = pdnn__comm_set_buckets(s->comm, s->n_buckets, floats);
    free(floats);
    return st;
}

/* Distributed sessions: the communicator and the buckets; others refuse
 * AllReduce nodes. */
pdnn_status pdnn__session_distributed_setup(pdnn_session *s, const pdnn_session_config *cfg)
{
    if (cfg->distributed != PDNN_DISTRIBUTED_MPI) {
        if (cfg->distributed != PDNN_DISTRIBUTED_NONE)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_create: distributed is %d; expected "
                                                          "PDNN_DISTRIBUTED_NONE or PDNN_DISTRIBUTED_MPI",
                               cfg->distributed);
        for (int i = 0; i < s->g->n; i++)
            if (s->g->nodes[i].op == PDNN__OP_ALLREDUCE)
                return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                                   "node '%s' (AllReduce) needs a distributed session "
                                   "(pdnn_session_config.distributed = PDNN_DISTRIBUTED_MPI)",
                                   s->g->nodes[i].name);
        return PDNN_SUCCESS;
    }
    if (cfg->allreduce_bucket_bytes < 0 || !(cfg->collective_timeout >= 0))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_create: allreduce_bucket_bytes and "
                                                      "collective_timeout must not be negative");
    pdnn_status st = pdnn__comm_create(cfg->mpi_comm, cfg->collective_timeout, &s->comm);
    if (st != PDNN_SUCCESS)
        return st;
    s->task = pdnn__comm_rank(s->comm);
    s->overlap = cfg->allreduce_overlap;
    return plan_buckets(s, cfg->allreduce_bucket_bytes > 0 ? cfg->allreduce_bucket_bytes : (int64_t)4 << 20);
}

/* A needed AllReduce needs its whole bucket: every rank all-reduces the
 * same buckets. Returns whether it added nodes. */
int pdnn__session_whole_buckets(const pdnn_session *s, char *needed)
{
    int added = 0;
    for (int b = 0; b < s->n_buckets; b++) {
        int any = 0;
        for (int k = s->bucket_first[b]; k < s->bucket_first[b + 1]; k++)
            any |= needed[s->ar_order[k]];
        for (int k = s->bucket_first[b]; any && k < s->bucket_first[b + 1]; k++)
            if (!needed[s->ar_order[k]])
                needed[s->ar_order[k]] = added = 1;
    }
    return added;
}

/* Copies bucket b's gradients (computed by now, held until their
 * AllReduce runs) into its staging buffer and hands it to the thread. */
static pdnn_status start_bucket(const pdnn_session *s, run_state *r, int b)
{
    float *buf = pdnn__comm_bucket(s->comm, b);
    for (int k = s->bucket_first[b]; k < s->bucket_first[b + 1]; k++) {
        const int i = s->ar_order[k], j = s->g->nodes[i].inputs[0];
        const pdnn_tensor *t = r->values[j];
        pdnn_status st = t ? pdnn_tensor_read(t, buf + s->ar_offset[i], (size_t)pdnn_tensor_desc_bytes(&t->desc))
                           : pdnn__error(PDNN_ERR_INTERNAL, "AllReduce '%s': its input has no value",
                                         s->g->nodes[i].name);
        if (st != PDNN_SUCCESS)
            return st;
    }
    r->started[b] = 1;
    return pdnn__comm_start(s->comm, b);
}

/* Before node i: with overlap, every needed bucket whose inputs all exist
 * starts; without, all of them start at the first AllReduce. */
pdnn_status pdnn__session_start_buckets(const pdnn_session *s, run_state *r, int i)
{
    const int is_ar = s->g->nodes[i].op == PDNN__OP_ALLREDUCE;
    for (int b = 0; b < s->n_buckets; b++) {
        if (r->started[b] || !r->needed[s->ar_order[s->bucket_first[b]]])
            continue;
        if (s->overlap ? s->bucket_ready[b] < i : is_ar) {
            pdnn_status st = start_bucket(s, r, b);
            if (st != PDNN_SUCCESS)
                return st;
        }
    }
    return PDNN_SUCCESS;
}

/* An AllReduce node's value: its slice of the bucket, once all-reduced. */
pdnn_status pdnn__session_run_allreduce(const pdnn_session *s, run_state *r, int i, pdnn_tensor *y)
{
    const int b = s->ar_bucket[i];
    if (r->started[b] == 1) {
        pdnn_status st = pdnn__comm_wait(s->comm, b);
        r->started[b] = 2;
        if (st != PDNN_SUCCESS)
            return st;
    }
    return pdnn_tensor_write(y, pdnn__comm_bucket(s->comm, b) + s->ar_offset[i],
                             (size_t)pdnn_tensor_desc_bytes(&y->desc));
}

pdnn_status pdnn_session_rank(const pdnn_session *s, int *rank, int *size)
{
    if (!s || !rank || !size)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_rank: %s is NULL",
                           !s ? "session" : !rank ? "rank" : "size");
    *rank = s->comm ? pdnn__comm_rank(s->comm) : 0;
    *size = s->comm ? pdnn__comm_size(s->comm) : 1;
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_broadcast_variables(pdnn_session *s, int root)
{
    if (!s || !s->comm)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_broadcast_variables: %s",
                           !s ? "session is NULL" : "the session is not distributed");
    if (root < 0 || root >= pdnn__comm_size(s->comm))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_broadcast_variables: root %d is not a rank "
                                                      "(size %d)", root, pdnn__comm_size(s->comm));
    int64_t total = 0;
    for (int i = 0; i < s->g->n; i++)
        if (s->g->nodes[i].op == PDNN__OP_VARIABLE)
            total += pdnn_tensor_desc_bytes(&s->g->nodes[i].out);
    char *buf = malloc((size_t)(total ? total : 1));
    if (!buf)
        return pdnn__host_oom("pdnn_session_broadcast_variables", "the variables' staging buffer", (uint64_t)total);
    const int me = pdnn__comm_rank(s->comm);
    pdnn_status st = PDNN_SUCCESS;
    int64_t off = 0;
    for (int i = 0; i < s->g->n && st == PDNN_SUCCESS && me == root; i++)
        if (s->g->nodes[i].op == PDNN__OP_VARIABLE) {
            const int64_t bytes = pdnn_tensor_desc_bytes(&s->g->nodes[i].out);
            st = pdnn_tensor_read(s->consts[i], buf + off, (size_t)bytes);
            off += bytes;
        }
    /* A root that failed to read still joins the broadcast (with garbage
     * it will not assign) so that no rank waits for it; it then fails. */
    pdnn_status bst = pdnn__comm_bcast(s->comm, buf, total, root);
    st = st == PDNN_SUCCESS ? bst : st;
    off = 0;
    for (int i = 0; i < s->g->n && st == PDNN_SUCCESS; i++)
        if (s->g->nodes[i].op == PDNN__OP_VARIABLE) {
            const int64_t bytes = pdnn_tensor_desc_bytes(&s->g->nodes[i].out);
            if (me != root)
                st = pdnn_tensor_write(s->consts[i], buf + off, (size_t)bytes);
            off += bytes;
        }
    free(buf);
    return st;
}

pdnn_status pdnn_session_allreduce_values(pdnn_session *s, double *values, int n, pdnn_reduce_op op)
{
    if (!s || (!values && n > 0))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_allreduce_values: %s is NULL",
                           !s ? "session" : "values");
    if (n < 0 || (op != PDNN_REDUCE_SUM && op != PDNN_REDUCE_MIN && op != PDNN_REDUCE_MAX))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_allreduce_values: %s",
                           n < 0 ? "n is negative" : "op is not a pdnn_reduce_op");
    if (!s->comm || n == 0)
        return PDNN_SUCCESS;
    return pdnn__comm_allreduce_values(s->comm, values, n, op);
}

pdnn_status pdnn_session_allreduce_stats(const pdnn_session *s, pdnn_allreduce_stats *out)
{
    if (!s || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_allreduce_stats: %s is NULL",
                           !s ? "session" : "out");
    memset(out, 0, sizeof *out);
    if (s->comm)
        pdnn__comm_stats(s->comm, out);
    return PDNN_SUCCESS;
}
