/* What the session's files share: the session, a run's state, and the
 * functions one file calls in another (pdnn__session_*, hidden).
 *
 *   session.c              create, destroy, placement log, variables
 *   session_run.c          pdnn_session_run, node by node
 *   session_memory.c       the memory plan and the live-set accounting
 *   session_distributed.c  AllReduce buckets, the collectives
 *   session_profile.c      per-node profile, live-set peaks */
#ifndef POLYDNN_SESSION_INTERNAL_H
#define POLYDNN_SESSION_INTERNAL_H

#include "graph/comm.h"
#include "graph/graph.h"

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
    /* Casts of constants into float16/bfloat16, computed once at creation
     * and held in consts[] as constants are (folded[i] = 1); a constant
     * that only such casts read keeps no float32 copy on its device
     * (dropped[i] = 1): a model run under a precision policy holds its
     * weights once, in the reduced dtype. */
    char *folded;
    char *dropped;
};

/* Whether node j's value is the session's own (a constant, a variable, a
 * folded cast), held across runs, never the run's to release or alias. */
static inline int pdnn__session_holds(const pdnn_session *s, int j)
{
    const pdnn__node_op op = s->g->nodes[j].op;
    return op == PDNN__OP_CONST || op == PDNN__OP_VARIABLE || s->folded[j];
}

static inline int dev_index(const pdnn_session *s, const pdnn_device *d) { return (int)(d - s->ctx->devices); }

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
static inline pdnn_tensor **copy_slot(const pdnn_session *s, run_state *r, int j, const pdnn_device *dev)
{
    return &r->copies[(size_t)j * (size_t)r->n_dev + (size_t)dev_index(s, dev)];
}

/* session_memory.c */
pdnn_status pdnn__session_plan_absorb(pdnn_session *s);
int pdnn__session_later_reader_on(const pdnn_session *s, const run_state *r, int i, int j, const pdnn_device *d);
void pdnn__session_alias_release(void *x);
void pdnn__session_live(pdnn_session *s, run_state *r, const pdnn_tensor *t, int sign);
size_t pdnn__session_workspace_room(const pdnn_session *s, const run_state *r, const pdnn_device *dev);
void pdnn__session_count_packs(pdnn_session *s, run_state *r, int i);
pdnn_status pdnn__session_alias_of(pdnn_tensor *t, size_t offset, const pdnn_tensor_desc *desc,
                                   void (*release)(void *), pdnn_tensor **out);
int pdnn__session_reshape_alias(const pdnn_session *s, const run_state *r, int i, const pdnn_tensor *x);
pdnn_status pdnn__session_absorb_view(pdnn_session *s, run_state *r, int i, int j, pdnn_tensor **y);

/* session_distributed.c */
pdnn_status pdnn__session_distributed_setup(pdnn_session *s, const pdnn_session_config *cfg);
int pdnn__session_whole_buckets(const pdnn_session *s, char *needed);
pdnn_status pdnn__session_start_buckets(const pdnn_session *s, run_state *r, int i);
pdnn_status pdnn__session_run_allreduce(const pdnn_session *s, run_state *r, int i, pdnn_tensor *y);

/* session_profile.c */
double pdnn__session_node_flops(const pdnn__node *nd, const pdnn_tensor *const *in, const pdnn_tensor *y);

#endif
