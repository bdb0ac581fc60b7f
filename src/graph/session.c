/* Sessions: creation (placement, its log, the constants and variables
 * put on their devices), teardown, and the variables' host access. Runs
 * are in session_run.c, the memory plan in session_memory.c, the MPI side
 * in session_distributed.c, the profile in session_profile.c. */
#include "core/half.h"
#include "graph/session_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    pdnn__place_host_first(s->g, s->ctx, line, sizeof line);
    if (line[0])
        say(s, line);
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
    free(s->folded);
    free(s->dropped);
    pdnn_graph_destroy(s->g);
    if (s->owns_ctx)
        pdnn_context_destroy(s->ctx);
    else if (s->ctx)
        pdnn__context_unref(s->ctx);
    free(s);
}

/* The casts to fold (see folded in session_internal.h): a Cast of a
 * float32 constant into float16 or bfloat16. A constant whose every
 * reader is one is dropped. The rounding is pdnn_cast's on every device
 * (round to nearest even), so folding on the host changes no value. */
static pdnn_status plan_folds(pdnn_session *s, const pdnn_graph *g)
{
    const size_t n = (size_t)(g->n ? g->n : 1);
    int *folds = calloc(n, sizeof *folds);
    s->folded = calloc(n, 1);
    s->dropped = calloc(n, 1);
    if (!folds || !s->folded || !s->dropped) {
        free(folds);
        return pdnn__host_oom("pdnn_session_create", "the folding tables", n * (sizeof *folds + 2));
    }
    for (int i = 0; i < g->n; i++) {
        const pdnn__node *nd = &g->nodes[i];
        const int j = nd->n_inputs == 1 ? nd->inputs[0] : -1;
        if (nd->op != PDNN__OP_CAST_NODE || j < 0 || g->nodes[j].op != PDNN__OP_CONST || !g->nodes[j].data ||
            g->nodes[j].out.dtype != PDNN_FLOAT32 ||
            (nd->out.dtype != PDNN_FLOAT16 && nd->out.dtype != PDNN_BFLOAT16))
            continue;
        s->folded[i] = 1;
        folds[j]++;
    }
    for (int j = 0; j < g->n; j++)
        s->dropped[j] = folds[j] > 0 && folds[j] == s->readers[j];
    free(folds);
    return PDNN_SUCCESS;
}

/* A folded cast's value: src (float32) rounded on the host into t. */
static pdnn_status write_folded(pdnn_tensor *t, const float *src)
{
    const size_t count = (size_t)pdnn_tensor_desc_elements(&t->desc), bytes = count * pdnn__dtype_size(t->desc.dtype);
    void *h = malloc(bytes ? bytes : 1);
    if (!h)
        return pdnn__host_oom("pdnn_session_create", "a constant's reduced copy", bytes);
    pdnn__from_f32(t->desc.dtype, src, h, count);
    pdnn_status st = pdnn_tensor_write(t, h, bytes);
    free(h);
    return st;
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
        st = pdnn__session_distributed_setup(s, cfg);
    if (st == PDNN_SUCCESS)
        st = pdnn__place(s->g, s->ctx, cfg->allow_soft_placement, say_cb, s, s->placed);
    if (st == PDNN_SUCCESS && (cfg->log_device_placement || s->ctx->opts.log_device_placement))
        log_placement(s);
    if (st == PDNN_SUCCESS)
        st = pdnn__session_plan_absorb(s);
    if (st == PDNN_SUCCESS)
        st = plan_folds(s, g);
    for (int i = 0; st == PDNN_SUCCESS && i < s->g->n; i++) {
        const pdnn__node *nd = &s->g->nodes[i];
        if ((nd->op != PDNN__OP_CONST && nd->op != PDNN__OP_VARIABLE && !s->folded[i]) || s->dropped[i])
            continue;
        st = pdnn_tensor_create(s->placed[i], &nd->out, &s->consts[i]);
        if (st == PDNN_SUCCESS)
            st = s->folded[i] ? write_folded(s->consts[i], g->nodes[nd->inputs[0]].data)
                              : pdnn_tensor_write(s->consts[i], g->nodes[i].data,
                                                  (size_t)pdnn_tensor_desc_bytes(&nd->out));
        if (st == PDNN_SUCCESS) {
            /* Nothing writes a constant again: algorithms may keep it packed. */
            if (nd->op != PDNN__OP_VARIABLE)
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

pdnn_status pdnn_session_node_device(const pdnn_session *s, pdnn_node n, pdnn_device **out)
{
    if (!s || !out || n < 0 || n >= s->g->n)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_session_node_device: %s",
                           !s || !out ? "an argument is NULL" : "no such node");
    *out = s->placed[n];
    return PDNN_SUCCESS;
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
