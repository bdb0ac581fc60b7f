/* Sessions: place a graph, log the placement, run what fetches need with
 * device-to-device copies, and free each intermediate tensor as soon as
 * its last consumer has run. */
#include "graph/comm.h"
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pdnn_session {
    pdnn_context *ctx;         /* a reference: the caller may destroy its context first */
    int owns_ctx;              /* created here: the creator's reference is ours */
    pdnn_graph *g;
    pdnn_device **placed;
    pdnn_tensor **consts;
    void (*log)(void *user, const char *line);
    void *log_user;
    int64_t *prof_runs; /* per node, with cfg.profile; else NULL */
    double *prof_sec;
    double *prof_first;
    const char **prof_algo; /* the algorithm of the node's last run (a static name), or NULL */
    double *prof_flops;     /* floating-point operations of one run (0: not counted) */
    int64_t *live_base;     /* per device: bytes of the constants and variables held there */
    int64_t *live_peak;     /* per device: the largest live set of any run so far */
    int64_t *pack_seen;     /* per node: its constant's packed copy's bytes, as counted in live_base */
    long evictions_seen;    /* the devices' pack_evictions summed, when count_packs last looked */
    /* Distributed (cfg.distributed): the MPI side, this rank's task number
     * for the logs (-1: not distributed), and the AllReduce nodes' buckets:
     * ar_order lists the AllReduce nodes by their input's index, bucket b
     * is ar_order[bucket_first[b] .. bucket_first[b + 1]), and
     * bucket_ready[b] is its last input's node. */
    pdnn__comm *comm;
    int task;
    int overlap;
    int n_ar, n_buckets;
    int *ar_order;
    int *ar_bucket;      /* per node: its bucket, -1 for other ops */
    int64_t *ar_offset;  /* per node: its first float in the bucket */
    int *bucket_first;
    int *bucket_ready;
    /* Concats without copies: absorb[i] is the Concat node whose output
     * node i writes in place (a view absorb_off[i] bytes in), -1 none;
     * absorbs[j] marks such a Concat (all of its inputs absorbed). */
    int *absorb;
    int64_t *absorb_off;
    char *absorbs;
    int *readers; /* per node: the graph's edges that read it */
};

static int dev_index(const pdnn_session *s, const pdnn_device *d) { return (int)(d - s->ctx->devices); }

void pdnn_session_config_init(pdnn_session_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    pdnn_context_options_init(&cfg->options);
    cfg->allreduce_overlap = 1;
}

/* Distributed sessions name devices the multi-worker way:
 * /job:worker/replica:0/task:RANK/... for /job:localhost/replica:0/task:0/. */
static void say(const pdnn_session *s, const char *line)
{
    static const char local[] = "/job:localhost/replica:0/task:0/";
    char buf[2048];
    if (s->task >= 0 && strstr(line, local)) {
        size_t used = 0;
        for (const char *p = line; *p && used + 1 < sizeof buf;) {
            const char *hit = strstr(p, local);
            size_t keep = hit ? (size_t)(hit - p) : strlen(p);
            int w = snprintf(buf + used, sizeof buf - used, "%.*s", (int)keep, p);
            used += w > 0 ? (size_t)w : 0;
            if (!hit || used + 1 >= sizeof buf)
                break;
            w = snprintf(buf + used, sizeof buf - used, "/job:worker/replica:0/task:%d/", s->task);
            used += w > 0 ? (size_t)w : 0;
            p = hit + sizeof local - 1;
        }
        line = buf;
    }
    if (s->log)
        s->log(s->log_user, line);
    else
        fprintf(stderr, "%s\n", line);
}

static void say_cb(void *user, const char *line) { say(user, line); }

static int is_host(const pdnn_device *d) { return d->backend == &pdnn__host_backend; }

/* The name a copy of node j's value onto dev gets in the placement log. */
static void copy_name(const pdnn__node *src, const pdnn_device *dev, char *buf, size_t len)
{
    snprintf(buf, len, "%s/_copy_to_%s_%d", src->name, dev->type == PDNN_DEVICE_GPU ? "GPU" : "CPU", dev->index);
}

static void log_placement(const pdnn_session *s)
{
    char line[640], full[96];
    say(s, "Device mapping:");
    for (int i = 0; i < s->ctx->n_devices; i++) {
        const pdnn_device *d = &s->ctx->devices[i];
        snprintf(line, sizeof line, "%s -> device: %d, name: %s, backend: %s",
                 pdnn__full_device_name(d, full, sizeof full), d->index, d->props.name, d->backend->name);
        say(s, line);
    }
    for (int i = 0; i < s->g->n; i++) {
        const pdnn__node *nd = &s->g->nodes[i];
        snprintf(line, sizeof line, "%s: (%s): %s", nd->name, pdnn__op_type(nd),
                 pdnn__full_device_name(s->placed[i], full, sizeof full));
        say(s, line);
        /* Copies this node's inputs need, once per (producer, device). */
        for (int k = 0; k < nd->n_inputs; k++) {
            int j = nd->inputs[k];
            if (j < 0 || s->placed[j] == s->placed[i])
                continue;
            int seen = 0;
            for (int e = 0; e < i && !seen; e++)
                for (int q = 0; q < s->g->nodes[e].n_inputs && !seen; q++)
                    seen = s->g->nodes[e].inputs[q] == j && s->placed[e] == s->placed[i];
            for (int q = 0; q < k && !seen; q++)
                seen = nd->inputs[q] == j;
            if (seen)
                continue;
            char cname[200];
            copy_name(&s->g->nodes[j], s->placed[i], cname, sizeof cname);
            snprintf(line, sizeof line, "%s: (_Copy): %s", cname,
                     pdnn__full_device_name(s->placed[i], full, sizeof full));
            say(s, line);
        }
    }
}

void pdnn_session_destroy(pdnn_session *s)
{
    if (!s)
        return;
    if (s->consts && s->g)
        for (int i = 0; i < s->g->n; i++)
            pdnn_tensor_release(s->consts[i]);
    free(s->consts);
    free(s->placed);
    free(s->prof_runs);
    free(s->prof_sec);
    free(s->prof_algo);
    free(s->prof_flops);
    free(s->live_base);
    free(s->live_peak);
    free(s->pack_seen);
    free(s->prof_first);
    pdnn__comm_destroy(s->comm);
    free(s->ar_order);
    free(s->ar_bucket);
    free(s->ar_offset);
    free(s->bucket_first);
    free(s->bucket_ready);
    free(s->absorb);
    free(s->absorb_off);
    free(s->absorbs);
    free(s->readers);
    pdnn_graph_destroy(s->g);
    if (s->owns_ctx)
        pdnn_context_destroy(s->ctx);
    else if (s->ctx)
        pdnn__context_unref(s->ctx);
    free(s);
}

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
static pdnn_status distributed_setup(pdnn_session *s, const pdnn_session_config *cfg)
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
static pdnn_status plan_absorb(pdnn_session *s)
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
        if (nd->op != PDNN__OP_CONCAT || nd->axis < 0 || nd->axis > 3 || nd->out.dtype != PDNN_FLOAT32 ||
            nd->n_inputs < 1)
            continue;
        int64_t st[4];
        pdnn__layout_strides(nd->out.layout, nd->out.dims, st);
        const int64_t numel = nd->out.dims[0] * nd->out.dims[1] * nd->out.dims[2] * nd->out.dims[3];
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

pdnn_status pdnn_session_create(const pdnn_graph *g, const pdnn_session_config *cfg, pdnn_session **out)
{
    if (!g || !out)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_create: %s is NULL", !g ? "graph" : "out");
    *out = NULL;
    pdnn_session_config defaults;
    if (!cfg) {
        pdnn_session_config_init(&defaults);
        cfg = &defaults;
    }
    pdnn_session *s = calloc(1, sizeof *s);
    if (!s)
        return pdnn__host_oom("pdnn_session_create", "the session", sizeof *s);
    s->log = cfg->log;
    s->log_user = cfg->log_user;
    pdnn_status st = PDNN_SUCCESS;
    if (cfg->context) {
        s->ctx = cfg->context;
        pdnn__context_ref(s->ctx);
    } else {
        st = pdnn_context_create(&cfg->options, &s->ctx);
        s->owns_ctx = st == PDNN_SUCCESS;
    }
    if (st == PDNN_SUCCESS)
        st = pdnn__graph_clone(g, &s->g); /* without the data: it goes to the devices from g, below */
    if (st == PDNN_SUCCESS) {
        size_t n = (size_t)(g->n ? g->n : 1);
        s->placed = calloc(n, sizeof *s->placed);
        s->consts = calloc(n, sizeof *s->consts);
        if (cfg->profile) {
            s->prof_runs = calloc(n, sizeof *s->prof_runs);
            s->prof_sec = calloc(n, sizeof *s->prof_sec);
            s->prof_first = calloc(n, sizeof *s->prof_first);
            s->prof_algo = calloc(n, sizeof *s->prof_algo);
            s->prof_flops = calloc(n, sizeof *s->prof_flops);
        }
        s->live_base = calloc((size_t)s->ctx->n_devices, sizeof *s->live_base);
        s->live_peak = calloc((size_t)s->ctx->n_devices, sizeof *s->live_peak);
        s->pack_seen = calloc((size_t)s->g->n, sizeof *s->pack_seen);
        if (!s->placed || !s->consts || !s->live_base || !s->live_peak || !s->pack_seen ||
            (cfg->profile && (!s->prof_runs || !s->prof_sec || !s->prof_first || !s->prof_algo || !s->prof_flops))) {
            pdnn__host_oom("pdnn_session_create", "the placement tables", n * (sizeof *s->placed + sizeof *s->consts));
            st = PDNN_ERR_OUT_OF_MEMORY;
        }
    }
    s->task = -1;
    if (st == PDNN_SUCCESS)
        st = distributed_setup(s, cfg);
    if (st == PDNN_SUCCESS)
        st = pdnn__place(s->g, s->ctx, cfg->allow_soft_placement, say_cb, s, s->placed);
    if (st == PDNN_SUCCESS && (cfg->log_device_placement || s->ctx->opts.log_device_placement))
        log_placement(s);
    if (st == PDNN_SUCCESS)
        st = plan_absorb(s);
    for (int i = 0; st == PDNN_SUCCESS && i < s->g->n; i++) {
        const pdnn__node *nd = &s->g->nodes[i];
        if (nd->op != PDNN__OP_CONST && nd->op != PDNN__OP_VARIABLE)
            continue;
        st = pdnn_tensor_create(s->placed[i], &nd->out, &s->consts[i]);
        if (st == PDNN_SUCCESS)
            st = pdnn_tensor_write(s->consts[i], g->nodes[i].data, (size_t)pdnn_tensor_desc_bytes(&nd->out));
        if (st == PDNN_SUCCESS) {
            /* Nothing writes a constant again: algorithms may keep it packed. */
            if (nd->op == PDNN__OP_CONST)
                pdnn__tensor_freeze(s->consts[i]);
            const int d = dev_index(s, s->placed[i]);
            s->live_base[d] += pdnn_tensor_desc_bytes(&nd->out);
            s->live_peak[d] = s->live_base[d] > s->live_peak[d] ? s->live_base[d] : s->live_peak[d];
        }
    }
    if (st != PDNN_SUCCESS) {
        pdnn_session_destroy(s);
        return st;
    }
    *out = s;
    return PDNN_SUCCESS;
}

pdnn_context *pdnn_session_context(pdnn_session *s) { return s ? s->ctx : NULL; }

pdnn_status pdnn_session_memory_live_peak(const pdnn_session *s, const pdnn_device *dev, int64_t *bytes)
{
    if (!s || !dev || !bytes)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_memory_live_peak: %s is NULL",
                           !s ? "session" : !dev ? "dev" : "bytes");
    if (dev < s->ctx->devices || dev >= s->ctx->devices + s->ctx->n_devices)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_memory_live_peak: %s is not a device of the "
                           "session's context", dev->name);
    *bytes = s->live_peak[dev_index(s, dev)];
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_node_work(const pdnn_session *s, pdnn_node n, const char **algorithm, double *flops)
{
    if (!s || !algorithm || !flops)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_work: %s is NULL",
                           !s ? "session" : !algorithm ? "algorithm" : "flops");
    if (n < 0 || n >= s->g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_work: node %d does not exist (the graph "
                                                      "has %d)", n, s->g->n);
    if (!s->prof_runs)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_work: the session was created without "
                                                      "profile (set pdnn_session_config.profile)");
    *algorithm = s->prof_algo[n] ? s->prof_algo[n] : "";
    *flops = s->prof_flops[n];
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_node_profile(const pdnn_session *s, pdnn_node n, int64_t *runs, double *seconds,
                                      double *first)
{
    if (!s || !runs || !seconds)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_profile: %s is NULL",
                           !s ? "session" : !runs ? "runs" : "seconds");
    if (n < 0 || n >= s->g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_profile: node %d does not exist (the graph "
                                                      "has %d)", n, s->g->n);
    if (!s->prof_runs)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_profile: the session was created without "
                                                      "profile (set pdnn_session_config.profile)");
    *runs = s->prof_runs[n];
    *seconds = s->prof_sec[n];
    if (first)
        *first = s->prof_first[n];
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_node_device(const pdnn_session *s, pdnn_node n, pdnn_device **out)
{
    if (!s || !out || n < 0 || n >= s->g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_device: %s",
                           !s || !out ? "an argument is NULL" : "no such node");
    *out = s->placed[n];
    return PDNN_SUCCESS;
}

/* A copy of src on dst, device to device where a direct path exists:
 * between the host and a device the device reads or writes the host
 * tensor's memory itself; between two devices of backends that share no
 * context, through a staging buffer on the host. */
static pdnn_status transfer(const pdnn_tensor *src, pdnn_device *dst, pdnn_tensor **out)
{
    pdnn_tensor *t = NULL;
    pdnn_status st = pdnn_tensor_create(dst, &src->desc, &t);
    if (st != PDNN_SUCCESS)
        return st;
    size_t bytes = (size_t)src->bytes;
    pdnn__buf sb = src->block.buf, db = t->block.buf;
    if (src->dev == dst) {
        st = dst->backend->copy(dst->handle, db, sb, bytes);
    } else if (is_host(src->dev)) {
        st = dst->backend->write(dst->handle, db, (const char *)sb.region + sb.offset, bytes);
    } else if (is_host(dst)) {
        st = src->dev->backend->read(src->dev->handle, sb, (char *)db.region + db.offset, bytes);
    } else {
        void *stage = malloc(bytes);
        pdnn__debug("copy %s -> %s goes through the host: the two devices share no context", src->dev->name,
                    dst->name);
        st = stage ? src->dev->backend->read(src->dev->handle, sb, stage, bytes)
                   : pdnn__host_oom("copying between devices", "the staging buffer", bytes);
        if (st == PDNN_SUCCESS)
            st = dst->backend->write(dst->handle, db, stage, bytes);
        free(stage);
    }
    if (st != PDNN_SUCCESS) {
        pdnn_tensor_release(t);
        return st;
    }
    *out = t;
    return PDNN_SUCCESS;
}

/* The floating-point operations of one run of nd (2 per multiply-add of
 * the convolutions and matmuls; 0 for the ops not counted), from its
 * inputs and output as they ran. */
static double node_flops(const pdnn__node *nd, const pdnn_tensor *const *in, const pdnn_tensor *y)
{
    if (!y)
        return 0;
    /* Every op counted below reads two inputs. */
    if (!in[0] || !in[1])
        return 0;
    const int64_t *o = y->desc.dims;
    switch (nd->op) {
    case PDNN__OP_CONV2D: /* y N,K,P,Q; w K,C/g,R,S */
        return 2.0 * (double)(o[0] * o[1] * o[2] * o[3]) * (double)(in[1]->desc.dims[1] * in[1]->desc.dims[2] *
                                                                    in[1]->desc.dims[3]);
    case PDNN__OP_G_CONV_BWD_DATA: { /* dy N,K,P,Q; w K,C/g,R,S */
        const int64_t *dy = in[0]->desc.dims, *w = in[1]->desc.dims;
        return 2.0 * (double)(dy[0] * dy[1] * dy[2] * dy[3]) * (double)(w[1] * w[2] * w[3]);
    }
    case PDNN__OP_G_CONV_BWD_FILTER: { /* dy N,K,P,Q; dw K,C/g,R,S */
        const int64_t *dy = in[1]->desc.dims;
        return 2.0 * (double)(dy[0] * dy[1] * dy[2] * dy[3]) * (double)(o[1] * o[2] * o[3]);
    }
    case PDNN__OP_MATMUL: { /* y M x N, a M x K (K x M transposed) */
        const int64_t *a = in[0]->desc.dims;
        return 2.0 * (double)(o[0] * o[1]) * (double)(nd->trans_a ? a[0] : a[1]);
    }
    default: return 0;
    }
}

/* Runs nd; a convolution's AUTO prefers at most ws_limit bytes of
 * workspace. */
static pdnn_status run_node(const pdnn__node *nd, const pdnn_tensor *const *in, pdnn_tensor *y, size_t ws_limit)
{
    switch (nd->op) {
    case PDNN__OP_CONV2D: {
        pdnn_conv2d_params p = nd->conv;
        p.workspace_limit = ws_limit;
        if (nd->residual)
            return pdnn_conv2d_forward_residual(&p, in[0], in[1], nd->n_inputs > 3 ? in[2] : NULL,
                                                in[nd->n_inputs - 1], y);
        return pdnn_conv2d_forward(&p, in[0], in[1], nd->n_inputs > 2 ? in[2] : NULL, y);
    }
    case PDNN__OP_POOL2D: return pdnn_pool2d_forward(&nd->pool, in[0], y);
    case PDNN__OP_MATMUL: return pdnn_matmul(in[0], in[1], nd->trans_a, nd->trans_b, y);
    case PDNN__OP_ADD: return pdnn_add(in[0], in[1], y);
    case PDNN__OP_ADD_N: return pdnn_add_n(in, nd->n_inputs, y);
    case PDNN__OP_BIAS_ADD: return pdnn_bias_add(in[0], in[1], y);
    case PDNN__OP_RELU: return pdnn_relu(in[0], y);
    case PDNN__OP_MUL: return pdnn_scale(in[0], nd->alpha, y);
    case PDNN__OP_ACT: return pdnn_activation_forward(in[0], nd->act, nd->alpha, nd->beta, y);
    case PDNN__OP_ELTWISE: return pdnn_binary(in[0], in[1], nd->binop, y);
    case PDNN__OP_CONCAT: return pdnn_concat(in, nd->n_inputs, nd->axis, y);
    case PDNN__OP_TRANSPOSE: return pdnn_transform(in[0], y);
    case PDNN__OP_SOFTMAX: return pdnn_softmax(in[0], y);
    case PDNN__OP_RESHAPE: return pdnn_reshape(in[0], y);
    case PDNN__OP_XENT: return pdnn_softmax_cross_entropy(in[0], in[1], y, NULL);
    case PDNN__OP_XENT_GRAD: {
        pdnn_tensor *loss = NULL;
        pdnn_tensor_desc d = {PDNN_FLOAT32, PDNN_LAYOUT_X, {1, 1, 1, 1}};
        if (!in[0])
            return pdnn__error(PDNN_ERR_INTERNAL, "run_node: no logits");
        pdnn_status st = pdnn_tensor_create(in[0]->dev, &d, &loss);
        if (st == PDNN_SUCCESS)
            st = pdnn_softmax_cross_entropy(in[0], in[1], loss, y);
        pdnn_tensor_release(loss);
        return st;
    }
    case PDNN__OP_G_CONV_BWD_DATA: return pdnn_conv2d_backward_data(&nd->conv, in[0], in[1], y);
    case PDNN__OP_G_CONV_BWD_FILTER: return pdnn_conv2d_backward_filter(&nd->conv, in[0], in[1], y);
    case PDNN__OP_G_CONV_BWD_BIAS: return pdnn_conv2d_backward_bias(in[0], y);
    case PDNN__OP_G_POOL_BWD: return pdnn_pool2d_backward(&nd->pool, in[0], in[1], y);
    case PDNN__OP_G_RELU_BWD: return pdnn_relu_backward(in[0], in[1], y);
    case PDNN__OP_PLACEHOLDER:
    case PDNN__OP_VARIABLE:
    case PDNN__OP_CONST:
    case PDNN__OP_APPLY:
    case PDNN__OP_TRAIN:
    case PDNN__OP_ALLREDUCE: break; /* the session's: run_update, run_allreduce */
    }
    return pdnn__error(PDNN_ERR_INTERNAL, "run_node: op %d has no runner", (int)nd->op);
}

/* The optimizer's update of one variable in place (its slots and the
 * variable are the session's own tensors, on the variable's device), or
 * the step count's increment. */
static pdnn_status run_update(pdnn_session *s, const pdnn__node *nd, const pdnn_tensor *const *in)
{
    float stepf = 0;
    pdnn_status st = pdnn_tensor_read(s->consts[nd->step], &stepf, sizeof stepf);
    if (st != PDNN_SUCCESS)
        return st;
    if (nd->op == PDNN__OP_TRAIN) {
        stepf += 1.0f;
        return pdnn_tensor_write(s->consts[nd->step], &stepf, sizeof stepf);
    }
    int var = nd->inputs[0];
    pdnn_tensor *w = s->consts[var];
    pdnn_tensor *s1 = nd->n_inputs > 2 ? s->consts[nd->inputs[2]] : NULL;
    pdnn_tensor *s2 = nd->n_inputs > 3 ? s->consts[nd->inputs[3]] : NULL;
    if (in[0] != w || (s1 && s1->dev != w->dev) || (s2 && s2->dev != w->dev))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "variable '%s', its update and its slots must be on one device "
                                                      "(do not give them different devices)",
                           s->g->nodes[var].name);
    return pdnn_optimizer_update(&nd->optim, (int64_t)stepf + 1, w, in[1], s1, s2);
}

/* Per-run state. values[i] is node i's output; owned[i] says whether the
 * run created it (and so releases it). copies[i * n_dev + d] is node i's
 * value copied onto device d. */
typedef struct run_state {
    int n, n_dev;
    int64_t *live;      /* per device: bytes of the tensors the run holds now, with the session's */
    pdnn_tensor **values;
    char *owned;
    char *needed;
    int *uses;          /* consumers still to run, plus fetches */
    pdnn_tensor **copies;
    char *started;      /* per bucket: handed to the all-reduce thread this run */
    char *absorb_on;    /* per node: a Concat of s->absorbs whose inputs are views this run */
} run_state;


/* Where node j's value copied onto device dev is kept this run. */
static pdnn_tensor **copy_slot(const pdnn_session *s, run_state *r, int j, const pdnn_device *dev)
{
    return &r->copies[(size_t)j * (size_t)r->n_dev + (size_t)dev_index(s, dev)];
}

/* Whether a needed node after i on device d still reads node j. */
static int later_reader_on(const pdnn_session *s, const run_state *r, int i, int j, const pdnn_device *d)
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

static void run_free(run_state *r)
{
    for (int i = 0; i < r->n; i++) {
        if (r->owned && r->owned[i])
            pdnn_tensor_release(r->values[i]);
        for (int d = 0; r->copies && d < r->n_dev; d++)
            pdnn_tensor_release(r->copies[(size_t)i * (size_t)r->n_dev + (size_t)d]);
    }
    free(r->live);
    free(r->values);
    free(r->owned);
    free(r->needed);
    free(r->uses);
    free(r->copies);
    free(r->started);
    free(r->absorb_on);
}

/* A producer's view of its Concat's output holds a reference on it. */
static void view_release(void *parent) { pdnn_tensor_release(parent); }

/* So does a Reshape's result over its input's bytes; unlike a Concat's
 * views it counts in the live set (the input may be freed first). */
static void alias_release(void *x) { pdnn_tensor_release(x); }

/* The live-set count: t (NULL: nothing) enters (+1) or leaves (-1) the
 * tensors held on its device; the session keeps the largest sum. */
static void live(pdnn_session *s, run_state *r, const pdnn_tensor *t, int sign)
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
static size_t workspace_room(const pdnn_session *s, const run_state *r, const pdnn_device *dev)
{
    const int d = dev_index(s, dev);
    const int64_t room = s->live_peak[d] + s->live_peak[d] / 5 - r->live[d];
    return room > 0 ? (size_t)room : 1;
}

/* Counts the packed copies node i's run made of the constants it read
 * (kept on them for later runs) in their devices' live sets; all of them
 * again where an allocation since made some give way (evictions). */
static void count_packs(pdnn_session *s, run_state *r, int i)
{
    const pdnn__node *nd = &s->g->nodes[i];
    long ev = 0;
    for (int d = 0; d < s->ctx->n_devices; d++)
        ev += atomic_load(&s->ctx->devices[d].pack_evictions);
    const int all = ev != s->evictions_seen;
    s->evictions_seen = ev;
    for (int q = 0; q < (all ? s->g->n : nd->n_inputs); q++) {
        const int j = all ? q : nd->inputs[q];
        if (j < 0 || s->g->nodes[j].op != PDNN__OP_CONST || !s->consts[j])
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

/* Marks what the needed nodes read, transitively (inputs precede their
 * readers). */
static void mark_inputs(const pdnn_graph *g, char *needed)
{
    for (int i = g->n - 1; i >= 0; i--)
        if (needed[i])
            for (int q = 0; q < g->nodes[i].n_inputs; q++)
                if (g->nodes[i].inputs[q] >= 0)
                    needed[g->nodes[i].inputs[q]] = 1;
}

/* A needed AllReduce needs its whole bucket: every rank all-reduces the
 * same buckets. Returns whether it added nodes. */
static int whole_buckets(const pdnn_session *s, char *needed)
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
static pdnn_status start_buckets(const pdnn_session *s, run_state *r, int i)
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
static pdnn_status run_allreduce(const pdnn_session *s, run_state *r, int i, pdnn_tensor *y)
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

/* desc's bytes of t from offset bytes in, holding a reference on t. */
static pdnn_status alias_of(pdnn_tensor *t, size_t offset, const pdnn_tensor_desc *desc, void (*release)(void *),
                            pdnn_tensor **out)
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
static int reshape_alias(const pdnn_session *s, const run_state *r, int i, const pdnn_tensor *x)
{
    const pdnn__node *nd = &s->g->nodes[i];
    if (nd->op != PDNN__OP_RESHAPE || !x || x->bytes != pdnn_tensor_desc_bytes(&nd->out))
        return 0;
    const int j = nd->inputs[0];
    const pdnn__node_op src = s->g->nodes[j].op;
    return s->readers[j] == 1 && r->uses[j] == 1 && src != PDNN__OP_PLACEHOLDER && src != PDNN__OP_CONST &&
           src != PDNN__OP_VARIABLE;
}

/* Node i's output as a view of Concat j's (allocated by j's first
 * producer to run). */
static pdnn_status absorb_view(pdnn_session *s, run_state *r, int i, int j, pdnn_tensor **y)
{
    pdnn_device *dev = s->placed[j];
    if (!r->values[j]) {
        const pdnn_status st = pdnn_tensor_create(dev, &s->g->nodes[j].out, &r->values[j]);
        if (st != PDNN_SUCCESS)
            return st;
        r->owned[j] = 1;
        live(s, r, r->values[j], +1);
    }
    return alias_of(r->values[j], (size_t)s->absorb_off[i], &s->g->nodes[i].out, view_release, y);
}

static pdnn_status check_feeds(const pdnn_session *s, const pdnn_node *feeds, pdnn_tensor *const *vals, int n)
{
    for (int k = 0; k < n; k++) {
        int f = feeds[k];
        if (f < 0 || f >= s->g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: feed %d names node %d, which does not exist",
                               k, f);
        const pdnn__node *nd = &s->g->nodes[f];
        if (nd->op != PDNN__OP_PLACEHOLDER)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: feed %d: node '%s' is a %s, not a "
                                                          "Placeholder", k, nd->name, pdnn__op_type(nd));
        if (!vals[k])
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: the value fed to '%s' is NULL", nd->name);
        if (memcmp(vals[k]->desc.dims, nd->out.dims, sizeof nd->out.dims) != 0 ||
            vals[k]->desc.layout != nd->out.layout || vals[k]->desc.dtype != nd->out.dtype) {
            char a[96], b[96];
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: placeholder '%s' is %s but was fed %s",
                               nd->name, pdnn__desc_string(&nd->out, a, sizeof a),
                               pdnn__desc_string(&vals[k]->desc, b, sizeof b));
        }
        for (int q = 0; q < k; q++)
            if (feeds[q] == f)
                return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: placeholder '%s' is fed twice",
                                   nd->name);
    }
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_run(pdnn_session *s, const pdnn_node *feeds, pdnn_tensor *const *feed_values, int n_feeds,
                             const pdnn_node *fetches, int n_fetches, pdnn_tensor **fetch_values)
{
    if (!s || n_feeds < 0 || n_fetches < 1 || !fetches || !fetch_values || (n_feeds > 0 && (!feeds || !feed_values)))
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                           "pdnn_session_run: needs a session, at least one fetch with an output array, and feeds "
                           "with values when n_feeds > 0");
    for (int k = 0; k < n_fetches; k++) {
        fetch_values[k] = NULL;
        if (fetches[k] < 0 || fetches[k] >= s->g->n)
            return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_run: fetch %d names node %d, which does not "
                                                          "exist", k, fetches[k]);
    }
    pdnn_status st = check_feeds(s, feeds, feed_values, n_feeds);
    if (st != PDNN_SUCCESS)
        return st;
    const pdnn_graph *g = s->g;
    run_state r = {g->n, s->ctx->n_devices, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = (size_t)g->n;
    r.live = calloc((size_t)r.n_dev, sizeof *r.live);
    r.values = calloc(n, sizeof *r.values);
    r.owned = calloc(n, 1);
    r.needed = calloc(n, 1);
    r.uses = calloc(n, sizeof *r.uses);
    r.copies = calloc(n * (size_t)r.n_dev, sizeof *r.copies);
    r.started = calloc((size_t)s->n_buckets + 1, 1);
    r.absorb_on = calloc(n, 1);
    if (!r.live || !r.values || !r.owned || !r.needed || !r.uses || !r.copies || !r.started || !r.absorb_on) {
        run_free(&r);
        return pdnn__host_oom("pdnn_session_run", "the run's tables",
                              n * (sizeof *r.values + 2 + sizeof *r.uses + (size_t)r.n_dev * sizeof *r.copies));
    }
    for (int d = 0; d < r.n_dev; d++)
        r.live[d] = s->live_base[d];
    for (int k = 0; k < n_fetches; k++) {
        r.needed[fetches[k]] = 1;
        r.uses[fetches[k]]++;
    }
    mark_inputs(g, r.needed);
    if (whole_buckets(s, r.needed))
        mark_inputs(g, r.needed);
    for (int i = 0; i < g->n; i++)
        if (r.needed[i])
            for (int q = 0; q < g->nodes[i].n_inputs; q++)
                if (g->nodes[i].inputs[q] >= 0)
                    r.uses[g->nodes[i].inputs[q]]++;
    /* A Concat's inputs are views of its output unless the run fetches one. */
    for (int j = 0; j < g->n; j++)
        if (s->absorbs[j] && r.needed[j]) {
            r.absorb_on[j] = 1;
            for (int q = 0; q < g->nodes[j].n_inputs; q++)
                r.absorb_on[j] &= r.uses[g->nodes[j].inputs[q]] == 1;
        }

    for (int i = 0; i < g->n && st == PDNN_SUCCESS; i++) {
        if (!r.needed[i])
            continue;
        const pdnn__node *nd = &g->nodes[i];
        pdnn_device *dev = s->placed[i];
        if (s->n_buckets && (st = start_buckets(s, &r, i)) != PDNN_SUCCESS)
            break;
        if (nd->op == PDNN__OP_PLACEHOLDER) {
            int k = 0;
            while (k < n_feeds && feeds[k] != i)
                k++;
            if (k == n_feeds) {
                char d[96];
                st = pdnn__error(PDNN_ERR_INVALID_ARGUMENT,
                                 "You must feed a value for placeholder tensor '%s' with %s", nd->name,
                                 pdnn__desc_string(&nd->out, d, sizeof d));
            } else if (feed_values[k]->dev == dev) {
                r.values[i] = feed_values[k];
                live(s, &r, r.values[i], +1); /* the caller's, held through the run */
            } else {
                st = transfer(feed_values[k], dev, &r.values[i]);
                r.owned[i] = st == PDNN_SUCCESS;
                if (st == PDNN_SUCCESS)
                    live(s, &r, r.values[i], +1);
            }
            continue;
        }
        if (nd->op == PDNN__OP_CONST || nd->op == PDNN__OP_VARIABLE) {
            r.values[i] = s->consts[i];
            continue;
        }
        const double t0 = s->prof_runs ? pdnn__now() : 0.0;
        const pdnn_tensor *in[64] = {0};
        if (nd->n_inputs > 64) {
            st = pdnn__error(PDNN_ERR_UNSUPPORTED, "node '%s' has %d inputs; at most 64 are supported", nd->name,
                             nd->n_inputs);
            break;
        }
        for (int q = 0; q < nd->n_inputs && st == PDNN_SUCCESS; q++) {
            int j = nd->inputs[q];
            if (pdnn__no_value(&g->nodes[j]) || nd->op == PDNN__OP_ALLREDUCE)
                continue; /* ordering only: an update before the step count; AllReduce stages its input */
            if (r.values[j]->dev == dev) {
                in[q] = r.values[j];
                continue;
            }
            pdnn_tensor **slot = copy_slot(s, &r, j, dev);
            if (!*slot) {
                st = transfer(r.values[j], dev, slot);
                if (st == PDNN_SUCCESS)
                    live(s, &r, *slot, +1);
            }
            in[q] = *slot;
        }
        pdnn_tensor *y = NULL;
        int aliased = 0;
        if (st == PDNN_SUCCESS && pdnn__no_value(nd)) {
            st = run_update(s, nd, in);
            if (st != PDNN_SUCCESS) {
                char why[1024];
                snprintf(why, sizeof why, "%s", pdnn_last_error());
                st = pdnn__error(st, "node '%s' (%s) on %s: %s", nd->name, pdnn__op_type(nd), dev->name, why);
                break;
            }
        } else if (st == PDNN_SUCCESS) {
            const int j = s->absorb[i];
            if (r.absorb_on[i]) {
                y = r.values[i]; /* written in place by its inputs' nodes */
                if (!y)          /* cannot happen: its first input's node made it */
                    st = pdnn__error(PDNN_ERR_INTERNAL, "concat node '%s' has no output", nd->name);
            } else if (j >= 0 && r.absorb_on[j]) {
                st = absorb_view(s, &r, i, j, &y);
            } else if ((aliased = reshape_alias(s, &r, i, in[0])) != 0) {
                /* Flatten after a global pool: no copy kernel (about 20 us
                 * a run on PoCL) */
                /* in[0] as the run holds it: its value here, or its copy */
                const int x0 = nd->inputs[0];
                pdnn_tensor *xt = r.values[x0]->dev == dev ? r.values[x0] : *copy_slot(s, &r, x0, dev);
                st = alias_of(xt, 0, &nd->out, alias_release, &y);
                if (st == PDNN_SUCCESS)
                    live(s, &r, y, +1);
            } else {
                st = pdnn_tensor_create(dev, &nd->out, &y);
                if (st == PDNN_SUCCESS)
                    live(s, &r, y, +1);
            }
            if (st != PDNN_SUCCESS) {
                char why[1024], d[96];
                snprintf(why, sizeof why, "%s", pdnn_last_error());
                st = pdnn__error(st, "node '%s' (%s) on %s: allocating its output %s: %s", nd->name,
                                 pdnn__op_type(nd), dev->name, pdnn__desc_string(&nd->out, d, sizeof d), why);
            }
        }
        if (st == PDNN_SUCCESS && !pdnn__no_value(nd)) {
            if (!r.absorb_on[i] && !aliased) /* else its inputs' nodes wrote it, or it is its input */
                st = nd->op == PDNN__OP_ALLREDUCE ? run_allreduce(s, &r, i, y)
                                                  : run_node(nd, in, y, workspace_room(s, &r, dev));
            if (st != PDNN_SUCCESS) {
                char why[1024];
                snprintf(why, sizeof why, "%s", pdnn_last_error());
                pdnn_tensor_release(y);
                st = pdnn__error(st, "node '%s' (%s) on %s: %s", nd->name, pdnn__op_type(nd), dev->name, why);
                break;
            }
            r.values[i] = y;
            r.owned[i] = 1;
            count_packs(s, &r, i);
        }
        if (st == PDNN_SUCCESS && s->prof_runs) {
            st = pdnn_device_synchronize(dev);
            const double dt = pdnn__now() - t0;
            if (s->prof_runs[i]++ == 0)
                s->prof_first[i] = dt;
            s->prof_sec[i] += dt;
            if (!pdnn__no_value(nd)) {
                s->prof_flops[i] = node_flops(nd, in, y);
                s->prof_algo[i] = nd->op == PDNN__OP_CONV2D ? pdnn_conv_algo_name(pdnn_conv2d_last_algorithm()) : NULL;
            }
        }
        /* Free what no later node needs: inputs whose last use this was,
         * and copies onto this device no later node here reads. */
        for (int q = 0; q < nd->n_inputs && st == PDNN_SUCCESS; q++) {
            int j = nd->inputs[q];
            if (--r.uses[j] == 0 && r.owned[j]) {
                live(s, &r, r.values[j], -1);
                pdnn_tensor_release(r.values[j]);
                r.values[j] = NULL;
                r.owned[j] = 0;
            }
            pdnn_tensor **slot = copy_slot(s, &r, j, dev);
            if (*slot && !later_reader_on(s, &r, i, j, dev)) {
                live(s, &r, *slot, -1);
                pdnn_tensor_release(*slot);
                *slot = NULL;
            }
        }
    }
    /* Buckets started and not waited for (a failed run): the thread must
     * be done with them before the next run refills them. */
    for (int b = 0; b < s->n_buckets; b++)
        if (r.started[b] == 1) {
            pdnn_status wst = pdnn__comm_wait(s->comm, b);
            st = st == PDNN_SUCCESS ? wst : st;
        }
    /* Hand the fetched values over: the run's own tensor once, a copy for a
     * repeated fetch or a value the run does not own (a feed, a constant). */
    for (int k = 0; k < n_fetches && st == PDNN_SUCCESS; k++) {
        int f = fetches[k];
        if (pdnn__no_value(&g->nodes[f])) {
            fetch_values[k] = NULL; /* it ran; it has no value */
        } else if (r.owned[f]) {
            fetch_values[k] = r.values[f];
            r.owned[f] = 0;
        } else if (r.values[f]) {
            st = transfer(r.values[f], r.values[f]->dev, &fetch_values[k]);
        } else { /* cannot happen: a fetched value is never freed during the run */
            st = pdnn__error(PDNN_ERR_INTERNAL, "pdnn_session_run: fetched node %d has no value", f);
        }
    }
    if (st != PDNN_SUCCESS) {
        /* Values handed over already are no longer the run's: give them back. */
        for (int k = 0; k < n_fetches; k++) {
            pdnn_tensor_release(fetch_values[k]);
            fetch_values[k] = NULL;
        }
    }
    run_free(&r);
    return st;
}

static pdnn_status variable_check(const pdnn_session *s, const char *fn, pdnn_node var, const void *p, size_t bytes)
{
    if (!s || !p)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !s ? "session" : "the buffer");
    if (var < 0 || var >= s->g->n || s->g->nodes[var].op != PDNN__OP_VARIABLE)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: node %d is not a variable%s%s", fn, var,
                           var >= 0 && var < s->g->n ? ": it is " : "",
                           var >= 0 && var < s->g->n ? s->g->nodes[var].name : "");
    size_t want = (size_t)pdnn_tensor_desc_bytes(&s->g->nodes[var].out);
    if (bytes != want)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "%s: variable '%s' holds %zu bytes, not %zu", fn,
                           s->g->nodes[var].name, want, bytes);
    return PDNN_SUCCESS;
}

pdnn_status pdnn_session_variable_read(pdnn_session *s, pdnn_node var, float *dst, size_t bytes)
{
    pdnn_status st = variable_check(s, "pdnn_session_variable_read", var, dst, bytes);
    return st == PDNN_SUCCESS ? pdnn_tensor_read(s->consts[var], dst, bytes) : st;
}

pdnn_status pdnn_session_variable_assign(pdnn_session *s, pdnn_node var, const float *src, size_t bytes)
{
    pdnn_status st = variable_check(s, "pdnn_session_variable_assign", var, src, bytes);
    return st == PDNN_SUCCESS ? pdnn_tensor_write(s->consts[var], src, bytes) : st;
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
